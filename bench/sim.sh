#!/bin/sh
# bench/sim.sh — the cache simulator's speed (docs/SIMULATOR.md): references
# simulated per second and nanoseconds per reference on a generated din
# trace, reading included, the fastest of 3 runs (user + system time: other
# tenants only slow a run down), on this machine's levels (sysfs) and on
# Cachegrind's three.
#
# The trace, 10 million references: per step a sequential read over 64 MiB,
# a read in a 512-byte stack frame, a write somewhere in 256 MiB (an LCG), an
# instruction fetch in a 4 KiB loop, and a second sequential read 4 KiB ahead.
#
#   MTOOL=build/mtool BENCH_DIR=build/bench sh bench/sim.sh
set -u
MTOOL=${MTOOL:-build/mtool}
BENCH_DIR=${BENCH_DIR:-build/bench}
mkdir -p "$BENCH_DIR"
TRACE=$BENCH_DIR/sim.din
REFS=10000000
export XDG_CONFIG_HOME="$BENCH_DIR/config"

if [ ! -s "$TRACE" ]; then
    awk -v steps=$((REFS / 5)) 'BEGIN {
        x = 12345
        for (i = 0; i < steps; i++) {
            s = (i * 8) % 67108864
            x = (x * 1103515245 + 12345) % 2147483648
            printf "0 %x 8\n0 %x 8\n1 %x 8\n2 %x 4\n0 %x 8\n",
                268435456 + s, 140668768878592 + (i % 64) * 8,
                536870912 + (x % 268435456) - (x % 8), 4194304 + (i * 4) % 4096,
                268435456 + s + 4096
        }
    }' > "$TRACE.tmp" && mv "$TRACE.tmp" "$TRACE"
fi

# best SECONDS-FILE FLAGS...: the fastest of 3 runs' user + system seconds.
best() {
    out=$1
    shift
    for run in 1 2 3; do
        /usr/bin/time -f '%U %S' -o "$out.$run" "$MTOOL" sim --trace "$TRACE" "$@" > /dev/null ||
            return 1
    done
    cat "$out".1 "$out".2 "$out".3 | awk '{ t = $1 + $2; if (!n++ || t < m) m = t } END { print m }'
}

cpu=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')
echo "== sim: $REFS references of a generated din trace, on $cpu"
for config in "this machine (sysfs)|" \
    "cachegrind I1/D1 32K 8-way, LL 8M 16-way|--cachegrind --I1=32K,8,64 --D1=32K,8,64 --LL=8M,16,64"; do
    name=${config%%|*}
    flags=${config#*|}
    # shellcheck disable=SC2086
    s=$(best "$BENCH_DIR/sim.time" $flags) || { echo "sim: $name: mtool sim failed"; continue; }
    awk -v s="$s" -v n=$REFS -v name="$name" 'BEGIN {
        printf "sim: %-45s %6.2f s  %5.2f M refs/s  %6.0f ns/ref\n", name, s, n / s / 1e6, s * 1e9 / n
    }'
done

# The sampled modes on Cachegrind's three levels: speed-up over the exact
# run (reading included, so below the simulator's own) and the error of
# the D1 and LL miss estimates against it, beside the error each states.
CG="--cachegrind --I1=32K,8,64 --D1=32K,8,64 --LL=8M,16,64"
# shellcheck disable=SC2086
"$MTOOL" sim --no-store --trace "$TRACE" $CG --json -o "$BENCH_DIR/sim-exact.json" || exit 1
exact=$(best "$BENCH_DIR/sim.time" $CG)
for mode in "--sample-sets 1/8" "--sample-time 1000/10007"; do
    # shellcheck disable=SC2086
    "$MTOOL" sim --no-store --trace "$TRACE" $CG $mode --json -o "$BENCH_DIR/sim-sampled.json" || continue
    # shellcheck disable=SC2086
    s=$(best "$BENCH_DIR/sim.time" $CG $mode) || continue
    python3 - "$BENCH_DIR/sim-exact.json" "$BENCH_DIR/sim-sampled.json" "$mode" "$exact" "$s" <<'PY'
import json, sys
e, s = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
line = "sim: %-24s %.2fx faster than exact;" % (sys.argv[3], float(sys.argv[4]) / float(sys.argv[5]))
for le, ls in zip(e["levels"], s["levels"]):
    if le["name"] == "I1":
        continue
    err, cold = s["sampling"]["miss_error"][le["name"]], s["sampling"]["cold_start"][le["name"]]
    line += " %s misses %+.1f%% (stated +-%s, cold-start %.0f%%)" % (
        le["name"], 100 * (ls["misses"] - le["misses"]) / max(le["misses"], 1),
        "?" if err is None else "%.1f%%" % (100 * err), 100 * cold)
print(line)
PY
done
