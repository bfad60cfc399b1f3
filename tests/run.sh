#!/bin/sh
# tests/run.sh — the default test suite (`make test`): unit tests, structure
# tests over the samples, the callgrind block oracle, bad input, and JSON
# validity.  All C tests run under ASan+UBSan.  Prints one line per check
# and a final "N passed, M failed".
set -u
cd "$(dirname "$0")/.."
ASAN=build/asan
T=$ASAN/tests
SAMPLES=build/samples
OUT=$(mktemp -d "${TMPDIR:-/tmp}/mtool-tests.XXXXXX")
trap 'rm -rf "$OUT"' EXIT INT TERM
passed=0 failed=0

# count LOG: add the ok / not ok lines of LOG to the totals and show failures.
count() {
    p=$(grep -c '^ok ' "$1") f=$(grep -c '^not ok ' "$1")
    passed=$((passed + p)); failed=$((failed + f))
    grep -e '^not ok' -e '^#' "$1" | head -20
    echo "$2: $p passed, $f failed"
}

# run NAME CMD...: a test program; a crash or non-zero exit without a
# "not ok" line also counts as a failure.
run() {
    name=$1; shift
    "$@" > "$OUT/log" 2>&1
    rc=$?
    if [ $rc -ne 0 ] && ! grep -q '^not ok' "$OUT/log"; then
        echo "not ok - $name exited with status $rc" >> "$OUT/log"
        tail -5 "$OUT/log"
    fi
    count "$OUT/log" "$name"
}

export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

run loops $T/test_loops
run estimability $T/test_estimability
run structure $T/test_structure $SAMPLES samples

# Block oracle: callgrind on every sample that keeps its symbols.
: > "$OUT/oracle"
for bin in $SAMPLES/*; do
    case $bin in *-stripped) continue ;; esac
    valgrind --tool=callgrind --dump-instr=yes --collect-jumps=yes --compress-pos=no \
        --compress-strings=no --callgrind-out-file="$OUT/cg.out" "$bin" > /dev/null 2>&1
    $T/check_blocks "$bin" "$OUT/cg.out" >> "$OUT/oracle" 2>&1 ||
        grep -q "not ok" "$OUT/oracle" || echo "not ok - check_blocks $bin crashed" >> "$OUT/oracle"
done
count "$OUT/oracle" "callgrind oracle"

MTOOL=$ASAN/mtool sh tests/bad_input.sh > "$OUT/bad" 2>&1
count "$OUT/bad" "bad input"

: > "$OUT/json"
for bin in $SAMPLES/*; do
    if $ASAN/mtool analyze --json "$bin" -o "$OUT/a.json" 2> "$OUT/err" &&
        python3 -m json.tool "$OUT/a.json" > /dev/null 2>&1; then
        echo "ok - $(basename "$bin"): valid JSON" >> "$OUT/json"
    else
        echo "not ok - $(basename "$bin"): analyze --json failed or invalid: $(head -1 "$OUT/err")" >> "$OUT/json"
    fi
done
count "$OUT/json" "json"

# The command line itself.
: > "$OUT/cli"
check_cli() { if eval "$2" > /dev/null 2>&1; then echo "ok - cli: $1"; else echo "not ok - cli: $1"; fi >> "$OUT/cli"; }
check_cli "--version" "$ASAN/mtool --version | grep -q '^mtool [0-9]'"
check_cli "help lists analyze" "$ASAN/mtool help | grep -q analyze"
check_cli "help analyze" "$ASAN/mtool help analyze | grep -q -- --callgraph"
check_cli "unknown command exits 2" "$ASAN/mtool frobnicate; test \$? -eq 2"
check_cli "no argument exits 2" "$ASAN/mtool; test \$? -eq 2"
check_cli "unknown function is one error line" \
    "$ASAN/mtool analyze --function nosuch $SAMPLES/matmul-gcc-O2 2>&1 >/dev/null | grep -c . | grep -qx 1"
check_cli "-o leaves no file on failure" \
    "! $ASAN/mtool analyze /nonexistent -o $OUT/none.json && test ! -e $OUT/none.json"
check_cli "--loops shows a depth-3 loop" \
    "$ASAN/mtool analyze --loops $SAMPLES/matmul-gcc-O2 | grep -q 'depth 3'"
count "$OUT/cli" "cli"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
