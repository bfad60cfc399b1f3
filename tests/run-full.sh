#!/bin/sh
# tests/run-full.sh — the longer suite (`make test-full`, run by CI after
# `make test` when time allows): every ELF executable in /usr/bin through
# the ASan+UBSan build (no crash, no sanitizer report, clean exit or a
# one-line error), then the libFuzzer target for a bounded time.
set -u
cd "$(dirname "$0")/.."
MTOOL=build/asan/mtool
BUDGET=${FULL_BUDGET_SECONDS:-480}
FUZZ_TIME=${FUZZ_TIME:-180}
OUT=$(mktemp -d "${TMPDIR:-/tmp}/mtool-full.XXXXXX")
trap 'rm -rf "$OUT"' EXIT INT TERM
passed=0 failed=0
ok() { passed=$((passed + 1)); }
not_ok() { failed=$((failed + 1)); echo "not ok - $1"; }

start=$(date +%s)
binaries=0 procs=0 resolved=0
for f in /usr/bin/*; do
    [ $(( $(date +%s) - start )) -lt "$BUDGET" ] || { echo "# time budget reached after $binaries binaries"; break; }
    [ -f "$f" ] && head -c 4 "$f" 2>/dev/null | grep -q ELF || continue
    binaries=$((binaries + 1))
    timeout 120 $MTOOL analyze --json "$f" -o "$OUT/a.json" 2> "$OUT/err"
    rc=$?
    if [ ! -f "$OUT/err" ]; then
        not_ok "$f: no result (work directory $OUT is gone)"
        break
    elif grep -q -e Sanitizer -e 'runtime error' "$OUT/err"; then
        not_ok "$f: sanitizer report: $(grep -m1 -e Sanitizer -e 'runtime error' "$OUT/err")"
    elif [ $rc -ge 124 ]; then
        not_ok "$f: crashed or timed out (status $rc)"
    elif [ $rc -ne 0 ] && [ "$(grep -vc 'warning:' "$OUT/err")" -ne 1 ]; then
        not_ok "$f: failed without a one-line error"
    else
        ok
        if [ $rc -eq 0 ]; then
            n=$(grep -o '"resolved":[a-z]*' "$OUT/a.json" | sort | uniq -c | awk '{split($2,a,":"); c[a[2]]=$1} END {print c["true"]+0, c["false"]+0}')
            resolved=$((resolved + ${n%% *})); procs=$((procs + ${n%% *} + ${n##* }))
        fi
    fi
done
echo "distribution binaries: $binaries analyzed, $procs procedures, $(awk -v r=$resolved -v p=$procs 'BEGIN{printf "%.1f", p ? 100*r/p : 0}')% with resolved control flow"

if command -v clang >/dev/null 2>&1 && make -s fuzz > "$OUT/fuzzbuild" 2>&1; then
    if make -s -C tests/fuzz run FUZZ_TIME="$FUZZ_TIME" > "$OUT/fuzz" 2>&1; then
        ok
        echo "fuzzing: $(grep -o 'Done [0-9]* runs in [0-9]* second(s)' "$OUT/fuzz" | tail -1), no crash"
    else
        not_ok "fuzzing found a crash: $(grep -m1 -e 'ERROR' -e 'SUMMARY' "$OUT/fuzz")"
        tail -30 "$OUT/fuzz"
    fi
else
    not_ok "fuzz target does not build: $(tail -3 "$OUT/fuzzbuild")"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
