#!/bin/sh
# tests/sim_filter.sh — the tracing copy's D1 filter (timer/timer.h, "The D1
# filter"; docs/SIMULATOR.md, "Misses only"): with --misses-only the copy
# counts the references that hit their D1 set's most recent line instead of
# sending them, and every count stays the one the full simulator, sent every
# reference, gives (tests/misses_only_check.py; both runs at the same
# addresses, setarch -R):
#   - tests/trace/filter.c, whose references a filter that missed a
#     straddling reference's second line, a rep group, or another thread's
#     frame in between would miscount: on D1s of 64 sets, 8 ways and of 256
#     sets, 2 ways each of those three mistakes, made on purpose, changed
#     the D1 misses (by 78 to 880); on a D1 of 128-byte lines, the rep one;
#   - matmul, where the filter takes most references: fewer frames sent;
#   - a D1 the filter cannot follow (no write-allocate): filter off, as
#     many frames as the full simulator's.
#
#   MTOOL=build/asan/mtool SAMPLES=build/samples sh tests/sim_filter.sh
set -u
MTOOL=${MTOOL:-build/asan/mtool}
SAMPLES=${SAMPLES:-build/samples}
HERE=$(dirname "$0")
OUT=$(mktemp -d "${TMPDIR:-/tmp}/mtool-filter.XXXXXX")
trap 'rm -rf "$OUT"' EXIT INT TERM
export XDG_CONFIG_HOME="$OUT/config" XDG_CACHE_HOME="$OUT/cache"
. "$HERE/lib.sh"

NORAND=
setarch "$(uname -m)" -R true 2> /dev/null && NORAND="setarch $(uname -m) -R"
if [ -z "$NORAND" ]; then
    not_ok "filter: setarch -R does not work here (randomized addresses)"
    print_totals
    exit
fi
cc -O2 -pthread -o "$OUT/filter" "$HERE/trace/filter.c" ||
    not_ok "filter: tests/trace/filter.c does not build"
"$OUT/filter" > "$OUT/want"

# frames ERR: the frames mtool says were sent while the program ran.
frames() { sed -n 's/.*records (\([0-9]*\) frames sent.*/\1/p' "$1"; }

# compare NAME MACHINE BIN ARGS...: the full simulator and --misses-only
# (filtered) at the same addresses; the program's output kept.
compare() {
    name=$1 machine=$2
    shift 2
    for mode in full lean; do
        flag=; [ $mode = lean ] && flag=--misses-only
        # shellcheck disable=SC2086
        $NORAND "$MTOOL" sim --no-store $flag $machine --json -o "$OUT/$mode.json" \
            -- "$@" > "$OUT/$mode.out" 2> "$OUT/$mode.err"
    done
    python3 "$HERE/misses_only_check.py" "filter: $name" "$OUT/full.json" "$OUT/lean.json" \
        > "$OUT/check" 2>&1 || echo "not ok - filter: $name: the check stopped" >> "$OUT/check"
    grep -v 'says what it omits' "$OUT/check" > "$OUT/check.kept"
    cat "$OUT/check.kept"
    tally "$OUT/check.kept"
}

compare "filter.c, Cachegrind's machine (D1 64 sets)" "--cachegrind --D1=32K,8,64 --LL=8M,16,64" \
    "$OUT/filter"
check "filter: filter.c: the program's output kept" "cmp -s '$OUT/want' '$OUT/lean.out'"
compare "filter.c, D1 of 256 sets, 2 ways" "--D1=32K,2,64 --L2=256K,8,64" "$OUT/filter"
compare "filter.c, D1 of 128-byte lines" "--D1=64K,4,128 --L2=1M,8,64" "$OUT/filter"

compare "matmul" "--cachegrind --D1=32K,8,64 --LL=8M,16,64" "$SAMPLES/matmul-gcc-O2-nopie"
full=$(frames "$OUT/full.err") lean=$(frames "$OUT/lean.err")
check "filter: matmul: fewer frames sent with the filter ($lean against $full)" \
    "[ -n '$lean' ] && [ '$lean' -lt '$full' ]"

compare "matmul, no write-allocate (filter off)" "--D1=32K,8,64 --L2=1M,8,64 --write-allocate=no" \
    "$SAMPLES/matmul-gcc-O2-nopie"
full=$(frames "$OUT/full.err") lean=$(frames "$OUT/lean.err")
check "filter: matmul, no write-allocate: as many frames as the full simulator ($lean, $full)" \
    "[ -n '$lean' ] && [ '$lean' -eq '$full' ]"
print_totals
