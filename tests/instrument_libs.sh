#!/bin/bash
# tests/instrument_libs.sh — `mtool instrument --counts --libs SPEC BIN -o OUT`
# (docs/ARCHITECTURE.md, "Shared libraries": a suite's harness runs the
# copies itself, tests/realprog's library suites), on uselib-gcc-O2 and its
# libmtshlib.so (samples/):
#   - OUT and OUT.env are written; BIN named without a slash (run from its
#     directory) is listed by its loader as ./BIN;
#   - OUT run by a plain shell with OUT.env's entries has the original's
#     output and exit status, and its profiles, merged with `mtool count
#     --profiles DIR --libs SPEC`, give libmtshlib.so's block counts equal
#     to callgrind's (but for what its constructors run before the entry,
#     frame_dummy and register_tm_clones, original code: left out) and
#     equal to `mtool count --libs`'s own run;
#   - two runs merge into twice one run's counts, in every library block;
#   - OUT run without OUT.env (the original libraries found through
#     LD_LIBRARY_PATH: its $ORIGIN, the copy's directory, has none) counts
#     its executable but no library block;
#   - --libs with --time, and --libs naming no library the program loads,
#     are refused with one line and no OUT.
#
#   MTOOL=build/mtool CHECKER=build/tests/check_counts SAMPLES_LIBS=build/samples-libs bash tests/instrument_libs.sh
set -u
mtool=$(realpath "${MTOOL:-build/mtool}") checker=$(realpath "${CHECKER:-build/tests/check_counts}")
dir=$(realpath "${SAMPLES_LIBS:-build/samples-libs}")
name=uselib-gcc-O2 lib=libmtshlib.so
bin=$dir/$name
work=$(mktemp -d "${TMPDIR:-/tmp}/mtool-instrument-libs.XXXXXX")
trap 'rm -rf "$work"' EXIT
export XDG_CACHE_HOME=$work/cache XDG_CONFIG_HOME=$work/config MTOOL_HISTORY=$work/history.db
. "$(dirname "$0")/lib.sh"
mkdir -p "$work/inst" "$work/one" "$work/two" "$work/bare"

# --- writing OUT and OUT.env, BIN named without a slash
if (cd "$dir" && "$mtool" instrument --counts --libs "$lib" "$name" -o "$work/inst/$name") > /dev/null 2> "$work/inst.err" &&
    [ -x "$work/inst/$name" ] && [ -s "$work/inst/$name.env" ]; then
    ok "instrument --libs $lib $name (no slash): OUT and OUT.env written"
else
    not_ok "instrument --libs: $(tail -1 "$work/inst.err")"
fi
mapfile -d '' -t vars < "$work/inst/$name.env"
printf '%s\n' "${vars[@]}" | grep -q '^LD_AUDIT=/' &&
    printf '%s\n' "${vars[@]}" | grep -qP "^(MTOOL_LIBS=)?\Q$dir\E/(\./)?\Q$lib\E\t\Q$XDG_CACHE_HOME\E/.*/$lib\$" &&
    ok "OUT.env: LD_AUDIT and $lib's copy in MTOOL_LIBS" || not_ok "OUT.env lacks LD_AUDIT or $lib's line: ${vars[*]}"

# --- runs from a plain shell, as a harness does
"$bin" 500 > "$work/orig.out" 2>&1
orig=$?
run_inst() { # PROFILE_DIR [no-env]
    local -a e=("${vars[@]}")
    [ $# -gt 1 ] && e=(LD_LIBRARY_PATH="$dir")
    env "${e[@]}" MTOOL_OUT="$1" "$work/inst/$name" 500
}
run_inst "$work/one" > "$work/inst.out" 2>&1
status=$?
[ $status -eq $orig ] && cmp -s "$work/orig.out" "$work/inst.out" &&
    ok "OUT with OUT.env: output and exit status ($status) the original's" ||
    not_ok "OUT with OUT.env: exit $status (original $orig), $(cmp "$work/orig.out" "$work/inst.out" 2>&1)"
run_inst "$work/two" > /dev/null 2>&1
run_inst "$work/two" > /dev/null 2>&1
run_inst "$work/bare" no-env > /dev/null 2>&1
for d in one two bare; do
    "$mtool" count --no-store --profiles "$work/$d" --libs "$lib" -o "$work/m-$d" -- "$bin" > "$work/m-$d.log" 2>&1 ||
        not_ok "merging the $d profiles: $(tail -1 "$work/m-$d.log")"
done
counts=$work/m-one/libs/$lib.counts.tsv

# --- the oracles: callgrind, and mtool count --libs's own run
valgrind --tool=callgrind --dump-instr=yes --compress-pos=no --compress-strings=no --skip-plt=no \
    --callgrind-out-file="$work/cg.%p" "$bin" 500 > /dev/null 2> "$work/vg.log"
"$checker" "$dir/$lib" "$counts" "$work"/cg.* > "$work/check" 2>&1
grep -E '^(ok|not ok)' "$work/check" | sed 's/^\(ok\|not ok\) - /&OUT with OUT.env: /'
tally "$work/check"
grep -qE '^(ok|not ok)' "$work/check" || not_ok "check_counts gave no verdict: $(tail -1 "$work/check")"
"$mtool" count --no-store --no-baseline --libs "$lib" -o "$work/count" -- "$bin" 500 > /dev/null 2>&1
cmp -s "$counts" "$work/count/libs/$lib.counts.tsv" &&
    ok "$lib's counts equal mtool count --libs's run" ||
    not_ok "$lib's counts differ from mtool count --libs's: $(diff "$counts" "$work/count/libs/$lib.counts.tsv" | head -3 | tr '\n' ' ')"

# --- two runs, and a run without the environment
awk -F'\t' 'NR == FNR { if (!/^#/) one[$1] = $2; next } !/^#/ { n++; if ($2 != 2 * one[$1]) bad++ }
    END { exit !(n > 0 && !bad) }' "$counts" "$work/m-two/libs/$lib.counts.tsv" &&
    grep -q ': 2 processes,' "$work/m-two.log" &&
    ok "two runs: 2 processes, every $lib block counted twice one run's" ||
    not_ok "two runs: $(grep -m1 '^mtool count' "$work/m-two.log")"
awk -F'\t' '!/^#/ { s += $2 } END { exit !(NR > 1 && s == 0) }' "$work/m-bare/libs/$lib.counts.tsv" &&
    awk -F'\t' '!/^#/ && $3 == "main" { s += $2 } END { exit !(s > 0) }' "$work/m-bare/counts.tsv" &&
    ok "OUT without OUT.env: its executable counted, no $lib block" ||
    not_ok "OUT without OUT.env: $(grep -m1 "^library $lib" "$work/m-bare.log")"

# --- refusals
refused "--libs with --time" "--libs takes none of" "$work/x" \
    "$mtool" instrument --counts --libs "$lib" --time main "$bin" -o "$work/x"
refused "--libs naming no library of BIN" "no library to count" "$work/y" \
    "$mtool" instrument --counts --libs libnothere.so "$bin" -o "$work/y"
[ ! -e "$work/y.env" ] && ok "no OUT.env after a refusal" || not_ok "OUT.env written after a refusal"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
