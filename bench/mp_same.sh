#!/bin/sh
# bench/mp_same.sh — the multiprocessor simulator's speed tricks change no
# count (docs/SIMULATOR.md, "Speed"): a generated din trace of 3 threads
# (adjacent counters and a queue written by all: true and false sharing;
# each thread's own array; random references over 16 MiB; fetches; stack
# traffic; 1 to 32 bytes, some over two lines; runs of 1 to 300 records a
# thread) simulated by two mtool binaries under eight configurations
# (processors, nodes and placement, shared boundary, replacement,
# inclusion, prefetch, thread mapping); their JSON reports must be equal
# byte for byte.  BASE is the mtool before the change (e.g. main's build).
#
#   BASE=/work/main/build/mtool MTOOL=build/mtool BENCH_DIR=build/bench sh bench/mp_same.sh
set -u
MTOOL=${MTOOL:-build/mtool}
BENCH_DIR=${BENCH_DIR:-build/bench}
RECORDS=${RECORDS:-400000}
: "${BASE:?BASE=the mtool binary to compare with}"
mkdir -p "$BENCH_DIR/mp_same"
D=$BENCH_DIR/mp_same
python3 - "$RECORDS" > "$D/threads.din" <<'PY'
import random, sys
random.seed(16)
n, nthreads = int(sys.argv[1]), 3
out, t, left = [], 0, 0
arr = [0x10000000 + k * 0x400000 for k in range(nthreads)]
pos = [0] * nthreads
while len(out) < n:
    if left == 0:  # the next thread's run, its first record naming it
        t, left = random.randrange(nthreads), random.choice([1, 1, 2, 3, 8, 40, 300])
        out.append("0 %x 8 %d" % (arr[t] + pos[t], t))
        left -= 1
        continue
    r, size = random.random(), random.choice([1, 2, 4, 8, 8, 8, 16, 32])
    if r < 0.25:
        a = 0x601000 + 8 * random.randrange(24)
    elif r < 0.55:
        pos[t] = (pos[t] + 8) % (1 << 20)
        a = arr[t] + pos[t]
    elif r < 0.75:
        a = 0x20000000 + random.randrange(1 << 24)
    elif r < 0.85:
        a = arr[random.randrange(nthreads)] + random.randrange(1 << 20)
    elif r < 0.92:
        out.append("2 %x 4" % (0x401000 + random.randrange(4096)))
        left -= 1
        continue
    else:
        a = 0x7ff000000 + t * 0x10000 + random.randrange(512)
    out.append("%d %x %d" % (1 if random.random() < 0.35 else 0, a, size))
    left -= 1
print("\n".join(out))
PY
status=0 i=0
while read -r cfg; do
    i=$((i + 1))
    for m in base new; do
        bin=$MTOOL
        [ $m = base ] && bin=$BASE
        # shellcheck disable=SC2086
        "$bin" sim --trace "$D/threads.din" $cfg --json -o "$D/$m.$i.json" ||
            { echo "mp_same: $m failed on: $cfg"; status=1; }
    done
    if cmp -s "$D/base.$i.json" "$D/new.$i.json"; then
        echo "mp_same: equal: $cfg"
    else
        echo "mp_same: DIFFERENT: $cfg"
        status=1
    fi
done <<END
--I1=32768,8,64 --D1=32768,8,64 --LL=8388608,16,64 --set cpus=2
--set cpus=2
--set cpus=3 --set nodes=3 --placement=interleave
--set cpus=4 --set nodes=2
--set cpus=2 --set shared=none
--set cpus=2 --set shared=L2 --replacement=plru
--set cpus=2 --cpu-map=0,0,1 --D1=32768,4,64 --set L2.inclusion=inclusive
--set cpus=2 --set shared=L3 --prefetch=next-line
END
exit $status
