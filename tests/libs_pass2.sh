#!/bin/bash
# tests/libs_pass2.sh — pass 2 through a program's shared libraries
# (docs/ARCHITECTURE.md "Shared libraries"), on usememlib-gcc-O2, whose
# memory-bound pointer chase is in its own libmtmem.so (samples/memlib.c):
#   - `mtool run` (libraries counted by default): the program's output and
#     exit status are the original's in every pass;
#   - the library's chase loop is timed as an m-object named
#     libmtmem.so:memlib_chase (report.txt and report.json, whose row says its
#     object), measured above predicted: every step is a dependent load that
#     misses L1, which the prediction assumes it hits;
#   - the executable's loop of rounds, which calls the chase through the PLT
#     in each round, counts the library loop's time as outside time (its
#     calls into libraries are measured apart, not predicted), not as its own;
#   - pass2.tsv (for sim, the HTML report and the history) names the chase
#     loop in its library column, and `mtool report` reads it back: report.html
#     has the row libmtmem.so:memlib_chase, said to be in the library;
#   - damaged library counts, and a pass2.tsv naming a library pass 1 did
#     not count, are refused in one line naming the file;
#   - with `mtool run --libs none`, pass 2 times the executable alone: no row names a
#     library, and its objects are the ones the run with libraries timed in
#     the executable (each object's selection is its own).
#
#   MTOOL=build/mtool SAMPLES_LIBS=build/samples-libs bash tests/libs_pass2.sh
set -u
mtool=${MTOOL:-build/mtool}
dir=${SAMPLES_LIBS:-build/samples-libs}
bin=$dir/usememlib-gcc-O2
args="524288 1048576 8" # a 4 MB ring (far beyond L2) twice around, in 8 rounds
work=$(mktemp -d "${TMPDIR:-/tmp}/mtool-libs2.XXXXXX")
trap 'rm -rf "$work"' EXIT
export XDG_CACHE_HOME=$work/cache XDG_CONFIG_HOME=$work/config MTOOL_HISTORY=$work/history.db
ok() { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; }

"$bin" $args > "$work/orig.out"
orig=$?
"$mtool" run --no-store --no-html -o "$work/all" -- "$bin" $args > "$work/all.out" 2> "$work/all.err"
status=$?
# stdout: the program's output of each run (baseline, counted, timed), then the report
runs=$(grep -c '^chase ' "$work/all.out")
if [ $status -eq $orig ] && [ "$runs" -ge 3 ] &&
    [ "$(grep '^chase ' "$work/all.out" | sort -u)" = "$(cat "$work/orig.out")" ]; then
    ok "mtool run: output of its $runs runs and exit status ($status) identical to the original's"
else
    not_ok "mtool run: exit $status (original $orig), $runs runs' output $(grep '^chase ' "$work/all.out" | sort -u | tr '\n' ' '); $(tail -2 "$work/all.err")"
fi

python3 - "$work/all/report.json" <<'PY' && ok "report.json: libmtmem.so:memlib_chase's loop timed, measured above predicted" || not_ok "report.json: no library loop measured above predicted"
import json, sys
rows = json.load(open(sys.argv[1]))["objects"]
chase = [r for r in rows if r.get("object") == "libmtmem.so" and r["kind"] == "loop"
         and r["procedure"] == "memlib_chase" and r["name"].startswith("libmtmem.so:memlib_chase: loop")]
for r in chase:
    print("# %s: entries %d, measured %.4g, predicted %.4g cycles" % (r["name"], r["entries"], r["measured_cycles"], r["predicted_cycles"]))
sys.exit(0 if len(chase) == 1 and chase[0]["entries"] == 8 and
         chase[0]["measured_cycles"] > chase[0]["predicted_cycles"] > 0 else 1)
PY
python3 - "$work/all/report.json" <<'PY' && ok "the executable's rounds loop counts the library loop it calls through the PLT as outside time, not its own" || not_ok "the executable's loop took the library loop's time as its own"
import json, sys
rows = json.load(open(sys.argv[1]))["objects"]
chase = [r for r in rows if r.get("object") == "libmtmem.so" and r["procedure"] == "memlib_chase"]
rounds = [r for r in rows if "object" not in r and r["procedure"] == "main" and r["kind"] == "loop"]
for r in rounds:
    print("# %s: measured %.4g, outside %.4g cycles" % (r["name"], r["measured_cycles"], r["outside_cycles"]))
# the chase's time lies inside the calls the rounds loop makes through the PLT
sys.exit(0 if len(chase) == 1 and len(rounds) == 1 and rounds[0]["entries"] == 1 and
         rounds[0]["outside_cycles"] >= chase[0]["measured_cycles"] > rounds[0]["measured_cycles"]
         else 1)
PY
grep -qE '^  loop +8 .* libmtmem\.so:memlib_chase: loop at 0x[0-9a-f]+ \(depth 1\), memlib\.c:' "$work/all/report.txt" &&
    ok "report.txt names the loop libmtmem.so:memlib_chase with its source" ||
    not_ok "report.txt: no libmtmem.so:memlib_chase row"
grep -q 'mtool time: [1-9][0-9]* of them in shared libraries' "$work/all.err" &&
    ok "pass 2 says how many of its objects are in libraries" || not_ok "pass 2 did not time library objects"
if [ "$(awk -F'\t' '$1 == "object" && $2 ~ /^memlib_chase[:@]/ && $7 == "libmtmem.so"' "$work/all/pass2.tsv" | wc -l)" = 1 ]; then
    ok "pass2.tsv names the library's chase loop, its library in the last column"
else
    not_ok "pass2.tsv: $(grep memlib "$work/all/pass2.tsv" 2>&1 | head -1)"
fi
"$mtool" report -o "$work/all.html" "$work/all" > /dev/null 2> "$work/report.err"
if grep -q '"spec":"libmtmem.so:memlib_chase@0x[0-9a-f]*","procedure":"libmtmem.so:memlib_chase","library":"libmtmem.so","kind":"loop"' "$work/all.html"; then
    ok "mtool report: report.html has the library's loop, named by its library"
else
    not_ok "mtool report: no libmtmem.so row in report.html; $(tail -1 "$work/report.err")"
fi

# A library object of a library pass 1 did not count: refused, one line
# naming the file and its line.
cp -r "$work/all" "$work/badlib"
sed -i 's/\tlibmtmem\.so$/\tlibother.so/' "$work/badlib/pass2.tsv"
"$mtool" report -o "$work/badlib.html" "$work/badlib" > /dev/null 2> "$work/badlib.err"
status=$?
if [ $status = 1 ] && [ "$(wc -l < "$work/badlib.err")" = 1 ] && [ ! -e "$work/badlib.html" ] &&
    grep -qE "^mtool: report: $work/badlib/pass2\.tsv:[0-9]+: an object of libother\.so, a library this run directory's pass 1 did not count$" "$work/badlib.err"; then
    ok "pass2.tsv naming a library pass 1 did not count: refused in one line naming the file"
else
    not_ok "pass2.tsv with another library: exit $status, $(head -2 "$work/badlib.err")"
fi

# The copy of the executable alone runs from the cache, where its $ORIGIN
# rpath finds no libmtmem.so (tests/libs.sh).
export LD_LIBRARY_PATH=$dir
"$mtool" run --no-store --no-html --libs none -o "$work/none" -- "$bin" $args > "$work/none.out" 2> "$work/none.time.err"
status=$? # the program's
objects() { awk -F'\t' '$1 == "object" && NF == 6 { print $2 }' "$1" | sort; } # the executable's
if [ $status -eq $orig ] && [ -s "$work/none/report.json" ] && ! grep -q 'libmtmem' "$work/none/report.txt" "$work/none/report.json" &&
    ! grep -q 'in shared libraries$' "$work/none.time.err" &&
    [ "$(objects "$work/none/pass2.tsv")" = "$(objects "$work/all/pass2.tsv")" ] &&
    [ "$(grep '^chase ' "$work/none.out" | sort -u)" = "$(cat "$work/orig.out")" ]; then
    ok "--libs none: the executable alone timed, its objects those of the run with libraries"
else
    not_ok "--libs none: exit $status; $(grep -h 'libmtmem' "$work/none/report.txt" | head -1); $(tail -1 "$work/none.time.err")"
fi

# A library's counts that are no counts: pass 2 refused, one line naming the file.
cp -r "$work/all" "$work/bad"
echo "garbage line" >> "$work/bad/libs/libmtmem.so.counts.tsv"
"$mtool" time --no-store --no-html "$work/bad" > /dev/null 2> "$work/bad.err"
status=$?
if [ $status = 1 ] && [ "$(wc -l < "$work/bad.err")" = 1 ] &&
    grep -q -F "mtool: $work/bad/libs/libmtmem.so.counts.tsv:" "$work/bad.err"; then
    ok "damaged library counts: refused in one line naming the file"
else
    not_ok "damaged library counts: exit $status, $(head -2 "$work/bad.err")"
fi
