#!/bin/sh
# tests/run-full.sh — the longer suite (`make test-full`): every ELF file in
# /usr/bin and every shared object in /usr/lib/x86_64-linux-gnu through the
# ASan+UBSan build of mtool, within a time budget (FULL_BUDGET_SECONDS,
# default 600), then node instrumented (tests/node/run.sh, when node is
# installed) and valgrind's memcheck and cachegrind instrumented
# (tests/valgrind_smoke.sh), each run exactly like the originals, the cache
# simulator against Cachegrind on every -O2-nopie sample (tests/sim.sh), pass 2
# on the memory sample's clang build (tests/pass2.sh), then the
# libFuzzer target for FUZZ_TIME seconds (default 180) when clang can build it.
#
# Each binary must give a clean exit, or a clean one-line error; a crash, a
# timeout or a sanitizer report is a failure.  The share of procedures whose
# control flow was fully resolved is reported (not judged).
#
#   ASAN_BUILD=build/asan sh tests/run-full.sh
set -u
cd "$(dirname "$0")/.."
MTOOL=${ASAN_BUILD:-build/asan}/mtool
BUDGET=${FULL_BUDGET_SECONDS:-600}
FUZZ_TIME=${FUZZ_TIME:-180}
PER_FILE=${PER_FILE_TIMEOUT:-120}
OUT=$(mktemp -d "${TMPDIR:-/tmp}/mtool-full.XXXXXX")
trap 'rm -rf "$OUT"' EXIT INT TERM
quiet_ok=1 # the failures only, and the totals
. tests/lib.sh

if [ ! -x "$MTOOL" ]; then
    echo "not ok - $MTOOL not built: run 'make test-full'"
    echo "0 passed, 1 failed"
    exit 1
fi
export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

# ELF files only, each real file once (the .so* glob meets symlink chains),
# executables and libraries interleaved so that both kinds get their share
# of the budget.
is_elf() { [ -f "$1" ] && [ "$(head -c 4 "$1" 2>/dev/null | od -An -c | tr -d ' \n')" = '177ELF' ]; }
list_elves() { for f in "$@"; do is_elf "$f" && readlink -f "$f"; done | awk '!seen[$0]++'; }
list_elves /usr/bin/* > "$OUT/bins"
list_elves /usr/lib/x86_64-linux-gnu/*.so* > "$OUT/libs"
paste -d '\n' "$OUT/bins" "$OUT/libs" | grep -v '^$' > "$OUT/all"

start=$(date +%s)
files=0 procs=0 resolved=0 errors=0
while read -r f; do
    if [ $(( $(date +%s) - start )) -ge "$BUDGET" ]; then
        echo "# time budget of ${BUDGET}s reached after $files of $(wc -l < "$OUT/all") files"
        break
    fi
    files=$((files + 1))
    timeout "$PER_FILE" "$MTOOL" analyze "$f" > "$OUT/text" 2> "$OUT/err"
    rc=$?
    if [ ! -f "$OUT/err" ]; then
        not_ok "$f: no result (work directory $OUT is gone)"
        break
    elif grep -q -e Sanitizer -e 'runtime error' "$OUT/err"; then
        not_ok "$f: sanitizer report: $(grep -m1 -e Sanitizer -e 'runtime error' "$OUT/err")"
    elif [ $rc -eq 124 ]; then
        not_ok "$f: no result within ${PER_FILE}s"
    elif [ $rc -gt 124 ]; then
        not_ok "$f: crashed (status $rc)"
    elif [ $rc -ne 0 ] && [ "$(grep -vc 'warning:' "$OUT/err")" -ne 1 ]; then
        not_ok "$f: failed without a one-line error (status $rc)"
    else
        ok
        if [ $rc -ne 0 ]; then
            errors=$((errors + 1))
            echo "# $f: $(grep -v warning: "$OUT/err")"
        fi
        # "procedures      13 (3 PLT stubs), 84.6% with fully resolved control flow"
        set -- $(awk '$1 == "procedures" && $2 ~ /^[0-9]+$/ { for (i = 3; i <= NF; i++) if ($i ~ /%$/) { sub("%", "", $i); printf "%d %d\n", $2, $2 * $i / 100 + 0.5; exit } }' "$OUT/text") 0 0
        procs=$((procs + $1)); resolved=$((resolved + $2))
    fi
done < "$OUT/all"
echo "# distribution ELF files: $files analyzed ($errors refused with a one-line error), $procs procedures," \
    "$(awk -v r=$resolved -v p=$procs 'BEGIN { printf "%.1f", p ? 100 * r / p : 0 }')% with resolved control flow"

# valgrind's own tools instrumented and run (tests/valgrind_smoke.sh).
bash tests/valgrind_smoke.sh "$MTOOL" > "$OUT/vg" 2>&1
while read -r line; do
    case $line in
    "ok "*) ok; echo "# $line" ;;
    "not ok - "*) not_ok "${line#not ok - }" ;;
    *) echo "$line" ;;
    esac
done < "$OUT/vg"

# node instrumented (V8's embedded builtins are code used as data): its
# scripts' output compared with the original node's, the profiles counted.
bash tests/node/run.sh "$MTOOL" > "$OUT/node" 2>&1
grep -e '^not ok' -e '^#' "$OUT/node"
tally "$OUT/node"
grep -q -e '^ok ' -e '^not ok' -e 'skipped' "$OUT/node" || not_ok "node smoke test printed no verdict: $(tail -1 "$OUT/node")"

# The cache simulator against Cachegrind on more samples than `make test`,
# at this machine's L1 and L2 geometry (tests/sim.sh).
SAMPLES=${SAMPLES:-build/samples}
SIM_GEOMETRY="--I1=32768,8,64 --D1=49152,12,64 --LL=2097152,16,64" MTOOL="$MTOOL" \
    SAMPLES="$SAMPLES" sh tests/sim.sh $(ls "$SAMPLES"/*-O2-nopie | grep -v -e openmp -e threads) \
    > "$OUT/sim" 2>&1
grep -e '^not ok' -e '^#' "$OUT/sim"
passed=$((passed + $(grep -c '^ok ' "$OUT/sim"))) failed=$((failed + $(grep -c '^not ok' "$OUT/sim")))

# tests/pass2.sh on the memory sample's clang build (tests/run.sh checks
# gcc's): the report's ranking of its kernels, a second report within 5
# points (the suite's other checks run again).
MTOOL="$MTOOL" MTOOL_SIM="${BUILD:-build}/mtool" SAMPLES="$SAMPLES" \
    SAMPLES2="${SAMPLES2:-$(dirname "$SAMPLES")/samples-pass2}" MEMORY_BUILDS='memory-clang-*' FORTRAN_LIBS=all \
    sh tests/pass2.sh > "$OUT/pass2" 2>&1
grep -e '^not ok' -e '^#' "$OUT/pass2"
passed=$((passed + $(grep -c '^ok ' "$OUT/pass2"))) failed=$((failed + $(grep -c '^not ok' "$OUT/pass2")))

if ! command -v clang > /dev/null 2>&1; then
    echo "# fuzzing: skipped, clang is not installed"
elif make -s fuzz > "$OUT/fuzzbuild" 2>&1; then
    if make -s -C tests/fuzz run FUZZ_TIME="$FUZZ_TIME" > "$OUT/fuzz" 2>&1; then
        ok
        echo "# fuzzing: $(grep -o 'Done [0-9]* runs in [0-9]* second(s)' "$OUT/fuzz" | tail -1), no crash"
    else
        not_ok "fuzzing found a crash: $(grep -m1 -e 'ERROR' -e 'SUMMARY' "$OUT/fuzz")"
        tail -30 "$OUT/fuzz"
    fi
else
    not_ok "fuzz target does not build: $(tail -3 "$OUT/fuzzbuild")"
fi

print_totals
