#!/bin/sh
# bench/mp_same.sh — the multiprocessor simulator's speed tricks change no
# count (docs/SIMULATOR.md, "Speed"): bench/mp_trace.py's din trace of 3
# threads (adjacent counters and a queue written by all: true and false
# sharing; each thread's own array; random references over 16 MiB; fetches;
# stack traffic; 1 to 32 bytes, some over two lines; runs of 1 to 300
# records a thread) simulated by two mtool binaries under eight configurations
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
python3 "$(dirname "$0")/mp_trace.py" "$RECORDS" > "$D/threads.din"
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
