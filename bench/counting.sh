#!/bin/sh
# bench/counting.sh — pass-1 counting overhead, measured side by side in one
# run: every workload natively, instrumented by mtool (block counters),
# built with gcc's own arc counters (-fprofile-arcs, when we have its
# source) and under valgrind --tool=callgrind (on a smaller scale: the
# slowdown is a ratio).  Times are user+system seconds; the variants of a
# workload run in turn, 5 rounds, and each keeps its fastest run (the
# machines are shared: a burst of load hits the variants alike, and the
# least disturbed run is the best estimate of the undisturbed one).
# "memory-only": mtool with every counter in memory (--no-loop-registers).
# Also: rewriting speed on the largest executable at hand.
#
#   MTOOL=build/mtool BENCH_DIR=build/bench sh bench/counting.sh
set -eu
cd "$(dirname "$0")/.."
MTOOL=${MTOOL:-build/mtool}
B=${BENCH_DIR:-build/bench}/counting
REAL=${MTOOL_REALPROG_DIR:-/var/tmp/mtool-realprog}
rm -rf "$B"
mkdir -p "$B/profiles" "$B/gcov"
export MTOOL_OUT="$B/profiles" GCOV_PREFIX="$B/gcov" GCOV_PREFIX_STRIP=20

cc -O2 -Wall -Wextra -o "$B/rusage" bench/rusage.c
cc -O2 -g -o "$B/kernels" bench/kernels.c
cc -O2 -g -fprofile-arcs -o "$B/kernels-gcov" bench/kernels.c
"$MTOOL" instrument --counts "$B/kernels" -o "$B/kernels-mtool" > /dev/null 2>&1
# The same without counting self-loops in registers: what that choice buys.
"$MTOOL" instrument --counts --no-loop-registers "$B/kernels" -o "$B/kernels-mtool-mem" > /dev/null 2>&1

# once CMD...: user+system seconds of one run.
once() {
    "$B/rusage" "$@" 2> /dev/null | awk '{print $6}'
}
# seconds CMD...: user+system seconds of one run (median of 3).
seconds() {
    for i in 1 2 3; do
        once "$@"
    done | sort -n | sed -n 2p
}
# fastest NAME: the least of variant NAME's runs recorded in $B/runs.
fastest() {
    awk -v n="$1" '$1 == n {print $2}' "$B/runs" | sort -n | head -1
}

echo "user+system seconds natively, then slowdowns (fastest of 5 alternating runs each):"
printf '%-26s %8s %8s %8s %9s %12s\n' workload native mtool gcov callgrind "memory-only"
: > "$B/ratios"
row() { # NAME NATIVE MTOOL GCOV CALLGRIND_RATIO [MTOOL_MEMORY_PROBES]
    awk -v n="$1" -v a="$2" -v m="$3" -v g="$4" -v c="$5" -v p="${6:--}" 'BEGIN {
        gs = g == "-" ? "-" : sprintf("%.2fx", g / a)
        ps = p == "-" ? "-" : sprintf("%.2fx", p / a)
        printf "%-26s %7.2fs %7.2fx %8s %9s %12s\n", n, a, m / a, gs, c, ps
    }'
    echo "$(echo "$1" | tr ' ' _) $2 $3 $4" >> "$B/ratios"
}

for k in "matmul 900 30" "sort 24 1" "hash 1800 60" "list 450 15" "fib 18 5" "sieve 180 6"; do
    set -- $k
    for round in 1 2 3 4 5; do
        echo "native $(once "$B/kernels" "$1" "$2")"
        echo "mtool $(once "$B/kernels-mtool" "$1" "$2")"
        echo "gcov $(once "$B/kernels-gcov" "$1" "$2")"
        echo "memory $(once "$B/kernels-mtool-mem" "$1" "$2")"
    done > "$B/runs"
    native=$(fastest native)
    mtool=$(fastest mtool)
    gcov=$(fastest gcov)
    memory=$(fastest memory)
    small=$(seconds "$B/kernels" "$1" "$3")
    cg=$(seconds valgrind --tool=callgrind --callgrind-out-file=/dev/null "$B/kernels" "$1" "$3")
    row "kernels $1" "$native" "$mtool" "$gcov" "$(awk -v c="$cg" -v s="$small" 'BEGIN { printf "%.0fx", c / (s > 0.005 ? s : 0.005) }')" "$memory"
done

# Real programs built by tests/realprog/run.sh, when present (the
# harness keeps each original executable as EXE.mtool-orig).
head -c 30000000 /dev/urandom | od -An -tx1 | head -c 20000000 > "$B/input.txt"
real_row() { # NAME EXE ARGS...
    local name=$1 exe=$2
    shift 2
    [ -x "$exe.mtool-orig" ] && exe=$exe.mtool-orig
    [ -x "$exe" ] || return 0
    "$MTOOL" instrument --counts "$exe" -o "$B/real-mtool" > /dev/null 2>&1 || {
        echo "$name: instrument failed"; return 0; }
    for round in 1 2 3 4 5; do
        echo "native $(once "$exe" "$@")"
        echo "mtool $(once "$B/real-mtool" "$@")"
    done > "$B/runs"
    row "$name" "$(fastest native)" "$(fastest mtool)" - -
}
real_row "bzip2 -9 (20 MB)" "$REAL/bzip2/src/bzip2-1.0.8/bzip2" -9 -k -c "$B/input.txt"
real_row "gzip -9 (20 MB)" "$REAL/gzip/src/gzip-1.12/gzip" -9 -c "$B/input.txt"
real_row "xz -6 (20 MB)" "$REAL/xz-utils/src/xz-utils-5.4.1/src/xz/xz" -6 -T1 -c "$B/input.txt"
real_row "gawk word count (20 MB)" "$REAL/gawk/src/gawk-5.2.1/gawk" \
    '{ for (i = 1; i <= NF; i++) n[$i]++ } END { for (w in n) s += n[w]; print s }' "$B/input.txt"
real_row "sed substitutions (20 MB)" "$REAL/sed/src/sed-4.9/sed/sed" \
    -e 's/\([0-9a-f]\)\([0-9]\)/\2\1/g' -e '/ff/d' "$B/input.txt"

awk '$2 > 0 { m += log($3 / $2); n++; if ($4 != "-" && $4 > 0) { ng++; r += log($3 / $4) } }
     END {
        gm = exp(m / n); printf "geometric-mean counting slowdown: %.3fx over %d workloads (goal <= 1.25): %s\n", gm, n, gm <= 1.25 ? "PASS" : "MISS"
        if (ng) { gr = exp(r / ng); printf "mtool slowdown relative to gcov -fprofile-arcs: %.3f (goal <= 1.20): %s\n", gr, gr <= 1.2 ? "PASS" : "MISS" }
     }' "$B/ratios"

# Rewriting speed: the largest executable at hand, wall time (mtool uses
# two threads), fastest of 3 runs; CPU time (user+system) beside it.
TARGET=${BENCH_REWRITE_TARGET:-/usr/bin/gdb}
if [ -f "$TARGET" ]; then
    insns=$(objdump -d --no-show-raw-insn "$TARGET" | grep -c '^ *[0-9a-f]*:	')
    for i in 1 2 3; do
        "$B/rusage" "$MTOOL" instrument --counts "$TARGET" -o "$B/rewritten" 2> /dev/null
    done | sort -n -k2 | head -1 > "$B/time"
    awk -v n="$insns" '{
        printf "rewriting %s: %d instructions in %.2f s, %.2f s of CPU (analysis included; fastest of 3; goal < 2 s per million): %s\n",
            "'"$TARGET"'", n, $2, $6, $2 / (n / 1e6) < 2 ? "PASS" : "MISS" }' "$B/time"
fi
