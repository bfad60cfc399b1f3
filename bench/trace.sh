#!/bin/sh
# bench/trace.sh — tracing's speed (docs/SIMULATOR.md, "Traced runs"): the
# fastest of 3 wall-clock runs of a sample natively, of its tracing copy
# alone (records written, frames dropped: no $MTOOL_TRACE_FD), of `mtool
# sim --cachegrind -- BIN` (records sent and simulated on the other core),
# and of Cachegrind with the same geometry; slowdowns against the native
# run and references simulated per second.
#
#   MTOOL=build/mtool SAMPLES2=build/samples-pass2 BENCH_DIR=build/bench sh bench/trace.sh
set -u
MTOOL=${MTOOL:-build/mtool}
SAMPLES2=${SAMPLES2:-build/samples-pass2}
BENCH_DIR=${BENCH_DIR:-build/bench}
mkdir -p "$BENCH_DIR"
export XDG_CONFIG_HOME="$BENCH_DIR/config" XDG_CACHE_HOME="$BENCH_DIR/trace-cache"
GEOMETRY="--I1=32768,8,64 --D1=32768,8,64 --LL=8388608,16,64"

# best CMD...: the fastest of 3 runs' wall seconds.
best() {
    for run in 1 2 3; do
        /usr/bin/time -f '%e' -o "$BENCH_DIR/trace.time.$run" "$@" > /dev/null 2>&1
    done
    cat "$BENCH_DIR"/trace.time.[123] | awk '{ if (!n++ || $1 < m) m = $1 } END { print m }'
}

cpu=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')
echo "== trace: mtool sim -- BIN against Cachegrind ($GEOMETRY), on $cpu"
for prog in phases-gcc-O2 phases-clang-O2; do
    bin=$SAMPLES2/$prog
    # shellcheck disable=SC2086
    "$MTOOL" sim --no-store --cachegrind $GEOMETRY -o "$BENCH_DIR/trace.report" -- "$bin" 4000 > /dev/null \
        2> "$BENCH_DIR/trace.err" || { echo "trace: $prog: mtool sim failed"; continue; }
    records=$(sed -n 's/.* \([0-9]*\) records (.*/\1/p' "$BENCH_DIR/trace.err")
    copy=$(ls "$XDG_CACHE_HOME"/mtool/instrumented/*-trace/"$prog" | head -1)
    native=$(best "$bin" 4000)
    alone=$(MTOOL_OUT="$BENCH_DIR/trace-profiles" best "$copy" 4000)
    # shellcheck disable=SC2086
    traced=$(best "$MTOOL" sim --no-store --cachegrind $GEOMETRY -o "$BENCH_DIR/trace.report" -- "$bin" 4000)
    # shellcheck disable=SC2086
    cg=$(best valgrind --tool=cachegrind --cache-sim=yes $GEOMETRY \
        --cachegrind-out-file="$BENCH_DIR/trace.cg" "$bin" 4000)
    rm -rf "$BENCH_DIR/trace-profiles"
    awk -v p="$prog" -v n="$records" -v b="$native" -v a="$alone" -v t="$traced" -v c="$cg" 'BEGIN {
        if (b < 0.01) b = 0.01
        printf "trace: %-16s %d refs: native %.2f s, copy alone %.2fx, mtool sim %.2fx (%.1f M refs/s), cachegrind %.2fx; mtool sim / cachegrind %.2f\n",
            p, n, b, a / b, t / b, n / t / 1e6, c / b, t / c
    }'
done
