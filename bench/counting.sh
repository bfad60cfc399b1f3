#!/bin/sh
# bench/counting.sh — pass-1 counting overhead, measured side by side in one
# run: every workload natively, instrumented by mtool (block counters),
# built with gcc's own arc counters (-fprofile-arcs, when we have its
# source) and under valgrind --tool=callgrind (on a smaller scale: the
# slowdown is a ratio).  Times are user+system seconds, medians of 3.
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

cc -O2 -g -o "$B/kernels" bench/kernels.c
cc -O2 -g -fprofile-arcs -o "$B/kernels-gcov" bench/kernels.c
"$MTOOL" instrument --counts "$B/kernels" -o "$B/kernels-mtool" > /dev/null 2>&1

# seconds CMD...: user+system seconds of one run (median of 3).
seconds() {
    for i in 1 2 3; do
        /usr/bin/env time -f '%U %S' -o "$B/time" "$@" > /dev/null 2>&1 || true
        awk '{print $1 + $2}' "$B/time"
    done | sort -n | sed -n 2p
}

echo "user+system seconds natively, then slowdowns (median of 3 runs each):"
printf '%-26s %8s %8s %8s %9s\n' workload native mtool gcov callgrind
: > "$B/ratios"
row() { # NAME NATIVE MTOOL GCOV CALLGRIND_RATIO
    awk -v n="$1" -v a="$2" -v m="$3" -v g="$4" -v c="$5" 'BEGIN {
        gs = g == "-" ? "-" : sprintf("%.2fx", g / a)
        printf "%-26s %7.2fs %7.2fx %8s %8s\n", n, a, m / a, gs, c
    }'
    echo "$(echo "$1" | tr ' ' _) $2 $3 $4" >> "$B/ratios"
}

for k in "matmul 300 30" "sort 8 1" "hash 600 60" "list 150 15" "fib 15 5" "sieve 60 6"; do
    set -- $k
    native=$(seconds "$B/kernels" "$1" "$2")
    mtool=$(seconds "$B/kernels-mtool" "$1" "$2")
    gcov=$(seconds "$B/kernels-gcov" "$1" "$2")
    small=$(seconds "$B/kernels" "$1" "$3")
    cg=$(seconds valgrind --tool=callgrind --callgrind-out-file=/dev/null "$B/kernels" "$1" "$3")
    row "kernels $1" "$native" "$mtool" "$gcov" "$(awk -v c="$cg" -v s="$small" 'BEGIN { printf "%.0fx", c / (s > 0.005 ? s : 0.005) }')"
done

# Real programs built by tests/realprog/run.sh, when present.
if [ -x "$REAL/bzip2/src/bzip2-1.0.8/bzip2.mtool-orig" ]; then
    bz=$REAL/bzip2/src/bzip2-1.0.8/bzip2.mtool-orig
    head -c 30000000 /dev/urandom | od -An -tx1 | head -c 20000000 > "$B/input.txt"
    "$MTOOL" instrument --counts "$bz" -o "$B/bzip2-mtool" > /dev/null 2>&1
    native=$(seconds "$bz" -9 -k -c "$B/input.txt")
    mtool=$(seconds "$B/bzip2-mtool" -9 -k -c "$B/input.txt")
    row "bzip2 -9 (20 MB)" "$native" "$mtool" - -
fi

awk '$2 > 0 { m += log($3 / $2); n++; if ($4 != "-" && $4 > 0) { ng++; r += log($3 / $4) } }
     END {
        gm = exp(m / n); printf "geometric-mean counting slowdown: %.3fx over %d workloads (goal <= 1.25): %s\n", gm, n, gm <= 1.25 ? "PASS" : "MISS"
        if (ng) { gr = exp(r / ng); printf "mtool slowdown relative to gcov -fprofile-arcs: %.3f (goal <= 1.20): %s\n", gr, gr <= 1.2 ? "PASS" : "MISS" }
     }' "$B/ratios"

# Rewriting speed: the largest executable at hand.
TARGET=${BENCH_REWRITE_TARGET:-/usr/bin/gdb}
if [ -f "$TARGET" ]; then
    insns=$(objdump -d --no-show-raw-insn "$TARGET" | grep -c '^ *[0-9a-f]*:	')
    /usr/bin/env time -f '%e' -o "$B/time" "$MTOOL" instrument --counts "$TARGET" -o "$B/rewritten" > /dev/null 2>&1
    awk -v s="$(cat "$B/time")" -v n="$insns" 'BEGIN {
        printf "rewriting %s: %d instructions in %.2f s (analysis included; goal < 2 s per million): %s\n",
            "'"$TARGET"'", n, s, s / (n / 1e6) < 2 ? "PASS" : "MISS" }'
fi
