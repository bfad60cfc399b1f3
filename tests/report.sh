#!/bin/sh
# tests/report.sh — `mtool report` (docs/REPORT.md, "HTML report"): on the
# memory sample after `mtool run`, the page is one self-contained file that
# `run` wrote too; the Callgrind export reads in callgrind_annotate with the
# page's per-line totals and pass 1's memory operations (tests/report_check.py);
# a symbol made of markup, quotes and terminal escapes stays data in the page
# and on the terminal; `mtool sim RUNDIR` keeps sim.json and the page embeds it
# (tests/report_sim_check.py), a damaged one is refused, a new pass 2 removes
# it, and a threaded sample simulated with --set cpus=2 gets the coherence
# view; bad run directories get one line and no output; and the page works in
# Debian's chromium (tests/browser/report.mjs: skipped when chromium or
# playwright-core is not installed, except in CI).
#
#   MTOOL=build/asan/mtool SAMPLES2=build/samples-pass2 SAMPLES_SIM=build/samples-sim \
#       sh tests/report.sh
set -u
MTOOL=${MTOOL:-build/asan/mtool}
# The memory sample's simulation with MTOOL_SIM when given (as tests/pass2.sh).
MTOOL_SIM=${MTOOL_SIM:-$MTOOL}
SAMPLES2=${SAMPLES2:-build/samples-pass2}
SAMPLES_SIM=${SAMPLES_SIM:-$(dirname "$SAMPLES2")/samples-sim}
HERE=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d "${TMPDIR:-/tmp}/mtool-report.XXXXXX")
[ -n "${KEEP:-}" ] || trap 'rm -rf "$W"' EXIT INT TERM
export XDG_CACHE_HOME="$W/cache" XDG_CONFIG_HOME="$W/config" MTOOL_HISTORY="$W/history.db"
. "$(dirname "$0")/lib.sh"

# A page's markup outside the run's JSON (which holds the program's text),
# without the script's URL.createObjectURL( and revokeObjectURL( calls: the
# CSV downloads' blob: URLs, made in the page from its own data, load nothing.
markup() { python3 -c 'import re,sys; print(re.sub(r"URL\.(create|revoke)ObjectURL\(", "", re.sub(r"<script type=\"application/json\" id=\"mtool-data\">.*?</script>", "", open(sys.argv[1], encoding="utf-8").read(), flags=re.S)))' "$1"; }

# Every run and count is of the program alone (--libs none): the pages and
# exports checked are the samples' own objects, and glibc's counted and
# timed copies cost each program two rewrites of libc under ASan (the
# suite 115 -> 186 s in CI).
bin=$(ls "$SAMPLES2"/memory-gcc-* 2> /dev/null | head -1)
[ -n "$bin" ] || bin=$(ls "$SAMPLES2"/memory-* | head -1)
"$MTOOL" run --libs none -o "$W/mem" -- "$bin" > "$W/run.out" 2> "$W/run.err"
rc=$?
check "run exits 0 on $(basename "$bin"): $(tail -1 "$W/run.err")" "[ $rc = 0 ]"
check "run writes report.html beside report.json" "[ -s '$W/mem/report.html' ] && grep -q 'report.html' '$W/run.err'"
inode=$(stat -c %i "$W/mem/report.html")
"$MTOOL" time --no-html --no-store "$W/mem" > /dev/null 2> "$W/time.err"
check "time --no-html leaves the page of the run before (same file)" \
    "[ \$(stat -c %i '$W/mem/report.html') = $inode ] && ! grep -q 'report.html' '$W/time.err'"

"$MTOOL" report "$W/mem" -o "$W/page.html" --callgrind "$W/cg.out" > "$W/report.out" 2> "$W/report.err"
rc=$?
check "report exits 0: $(tail -1 "$W/report.err")" "[ $rc = 0 ] && [ -s '$W/page.html' ] && [ -s '$W/cg.out' ]"
markup "$W/page.html" > "$W/markup"
check "the page loads nothing: no src, href, url() or @import outside its data" \
    "! grep -Eiq 'src=|href=|url\\(|@import' '$W/markup'"
check "the page forbids every request (Content-Security-Policy default-src 'none')" \
    "grep -q \"default-src 'none'\" '$W/markup'"
check "the page embeds the sample's source" "grep -q 'list_walk_random(const node' '$W/page.html'"

callgrind_annotate --auto=yes "$W/cg.out" > "$W/annotated" 2> "$W/annotate.err"
rc=$?
check "callgrind_annotate reads the export: $(tail -1 "$W/annotate.err")" "[ $rc = 0 ]"
"$MTOOL" analyze --json --blocks "$bin" > "$W/analysis.json" 2> /dev/null
python3 "$HERE/report_check.py" "$W/annotated" "$W/page.html" "$W/analysis.json" \
    "$W/mem/counts.tsv" "$W/mem/count.json" memory.c > "$W/check.out" 2>&1 ||
    echo "not ok - report_check.py failed: $(tail -1 "$W/check.out")" >> "$W/check.out"
cat "$W/check.out"
tally "$W/check.out"

# The history view (report/history.c): three stored timed runs of the
# sample, the third with its list walks three times as long (argument 3):
# the page of the third has a trend point per run for each object and the
# diff against the second, its regressions those `mtool history regressions`
# finds (the walk's loop among them).  Checked in chromium below too.
"$MTOOL" time "$W/mem" > /dev/null 2> "$W/time2.err" &&
    "$MTOOL" run --libs none -o "$W/mem3" -- "$bin" 3 > /dev/null 2> "$W/run3.err"
rc=$?
check "a second (time) and a third (run, scale 3) stored run: $(tail -1 "$W/run3.err")" \
    "[ $rc = 0 ] && grep -q 'run 3 stored' '$W/run3.err'"
"$MTOOL" history trend main --program "$(basename "$bin")" > "$W/trend.out" 2>&1
"$MTOOL" history regressions 3 2 > "$W/regressions.out" 2>&1
check "history regressions 3 2 finds the provoked regressions (exit 1)" "[ $? = 1 ]"
"$MTOOL" report "$W/mem3" -o "$W/mem3.html" > /dev/null 2> "$W/hist.err"
rc=$?
check "report of the third run exits 0: $(tail -1 "$W/hist.err")" "[ $rc = 0 ]"
"$MTOOL" report "$W/mem3" --baseline 1 -o "$W/mem3-base1.html" > /dev/null 2> "$W/hist.err"
rc=$?
check "report --baseline 1 exits 0: $(tail -1 "$W/hist.err")" "[ $rc = 0 ]"
"$MTOOL" report "$W/mem3" --baseline 99 -o "$W/mem3-bad.html" > /dev/null 2> "$W/hist.err"
check "report --baseline of no run: exit 1, one line naming it, no page" \
    "[ $? = 1 ] && [ \$(wc -l < '$W/hist.err') = 1 ] && grep -q 'baseline 99' '$W/hist.err' && [ ! -e '$W/mem3-bad.html' ]"
python3 - "$W/mem3.html" "$W/mem3-base1.html" "$W/trend.out" "$W/regressions.out" \
    "$W/mem/report.html" "$W/hist-oracle.json" > "$W/histcheck.out" 2>&1 <<'EOF2' ||
import json, re, sys
sys.path.insert(0, "tests")
def page(path):
    html = open(path, encoding="utf-8").read()
    return json.loads(re.search(r'id="mtool-data">(.*?)</script>', html, re.S).group(1))
def check(cond, what, detail=""):
    print(("ok - " if cond else "not ok - ") + what + ("" if cond else ": " + str(detail)))
p, p1 = page(sys.argv[1]), page(sys.argv[2])
h = p["history"]
check(h["run"] == 3 and h["baseline"] == 2, "the page of the third run: run 3 of the history, "
      "baseline the previous run of its program (2)", (h["run"], h.get("baseline")))
check(p1["history"]["baseline"] == 1, "--baseline 1: the diff is against run 1",
      p1["history"].get("baseline"))
# `history trend main`: its runs, by id (the rows after the header).
runs = [int(l.split()[0]) for l in open(sys.argv[3]) if re.match(r"\s+\d+\s", l)]
main = [i for i, o in enumerate(p["objects"]) if o["spec"] == "main"]
got = [pt[0] for pt in h["trend"][main[0]]] if main else None
check(runs == [1, 2, 3] and got == runs, "main's trend has one point per stored run, "
      "history trend's runs", (runs, got))
# `history regressions 3 2`: "  #ID  NAME  PLACE  BEFORE -> AFTER  CHANGE"
cli = sorted(l.split()[1] for l in open(sys.argv[4]) if re.match(r"\s+#\d+\s", l))
marked = sorted(d["name"] for d in h["diff"] if d["regressed"])
check(cli and marked == cli, "the regressions marked are history regressions' (%d)" % len(cli),
      (marked, cli))
check("list_walk_random/1" in marked, "the random walk's loop (three times as long) regressed",
      marked)
check(page(sys.argv[5])["history"]["run"] == 0, "the page mtool time wrote before it stored "
      "the run says the run is not in the history")
json.dump({"trend_runs": runs, "regressed": cli}, open(sys.argv[6], "w"))
EOF2
    echo "not ok - the history page check failed: $(tail -1 "$W/histcheck.out")" >> "$W/histcheck.out"
cat "$W/histcheck.out"
tally "$W/histcheck.out"

# `mtool report RUN` (report/history.c): the history records each timed
# run's directory and a stamp of its pass2.tsv.  "last" is run 3, read from
# its directory (mem3); mem holds run 2 (`time` rewrote its pass2.tsv after
# run 1), so run 1's page is built from the history alone, and so is run 3's
# once mem3 is removed; run 4, a count, has no run directory.  Oracles: the
# run directories' report.json (written by pass 2) and the history's tables
# read with python's sqlite3 (tests/report_run_check.py).
cp "$W/mem3/report.json" "$W/mem3-report.json"
"$MTOOL" report last -o "$W/last.html" > /dev/null 2> "$W/last.err"
rc=$?
check "report last: exit 0, a page, no note on stderr: $(tail -1 "$W/last.err")" \
    "[ $rc = 0 ] && [ -s '$W/last.html' ] && ! grep -q '^report: ' '$W/last.err'"
mtool_abs=$(cd "$(dirname "$MTOOL")" && pwd)/$(basename "$MTOOL")
(cd "$W" && "$mtool_abs" report 2 > /dev/null 2> "$W/run2.err")
check "report 2: exit 0, the page at ./mtool-run-2.html" "[ $? = 0 ] && [ -s '$W/mtool-run-2.html' ]"
"$MTOOL" report 1 -o "$W/run1.html" > /dev/null 2> "$W/run1.err"
check "report 1: exit 0, one line saying its run directory holds another run and what the page lacks" \
    "[ $? = 0 ] && [ \$(grep -c '^report: ' '$W/run1.err') = 1 ] && grep -q '^report: run 1.s run directory .*/mem holds another run now.*built from the history alone: no figures per source line' '$W/run1.err'"
rm -r "$W/mem3"
"$MTOOL" report 3 -o "$W/gone.html" > /dev/null 2> "$W/gone.err"
check "report 3, its run directory removed: exit 0, one line saying it is gone" \
    "[ $? = 0 ] && [ \$(grep -c '^report: ' '$W/gone.err') = 1 ] && grep -q '^report: run 3.s run directory is gone' '$W/gone.err'"
"$MTOOL" count --libs none -o "$W/counted" -- "$bin" > /dev/null 2> "$W/count.err"
"$MTOOL" report last -o "$W/count.html" > /dev/null 2> "$W/countrep.err"
rc=$?
check "report last after a stored count (run 4): exit 0, its page from the history: $(tail -1 "$W/countrep.err")" \
    "[ $rc = 0 ] && grep -q '^report: run 4 (.mtool count.) recorded no run directory.*no cycles' '$W/countrep.err'"
"$MTOOL" report 3 --callgrind "$W/gone.cg" -o "$W/gone2.html" 2> "$W/bad.err"
check "--callgrind of a page from the history alone: exit 1, one line, neither file" \
    "[ $? = 1 ] && [ \$(wc -l < '$W/bad.err') = 1 ] && [ ! -e '$W/gone.cg' ] && [ ! -e '$W/gone2.html' ]"
"$MTOOL" report 99 -o "$W/bad-run.html" 2> "$W/bad.err"
check "report of no such run: exit 1, one line naming it, no page" \
    "[ $? = 1 ] && [ \$(wc -l < '$W/bad.err') = 1 ] && grep -q \"no run '99'\" '$W/bad.err' && [ ! -e '$W/bad-run.html' ]"
MTOOL_HISTORY="$W/none.db" "$MTOOL" report last -o "$W/bad-run.html" 2> "$W/bad.err"
check "report RUN without a history: exit 1, one line naming it, no page, no history made" \
    "[ $? = 1 ] && [ \$(wc -l < '$W/bad.err') = 1 ] && grep -q 'no history at $W/none.db' '$W/bad.err' && [ ! -e '$W/bad-run.html' ] && [ ! -e '$W/none.db' ]"
mkdir "$W/last"
(cd "$W" && "$mtool_abs" report last 2> "$W/bad.err")
check "an argument both a RUN and a directory: exit 2, one line saying to write ./last" \
    "[ $? = 2 ] && [ \$(wc -l < '$W/bad.err') = 1 ] && grep -q './last' '$W/bad.err'"
rmdir "$W/last"
python3 "$HERE/report_run_check.py" "$MTOOL_HISTORY" "$W/last.html" "$W/mem3-report.json" \
    "$W/mtool-run-2.html" "$W/mem/report.json" "$W/run1.html" "$W/gone.html" "$W/count.html" \
    > "$W/runcheck.out" 2>&1 || grep -q '^not ok' "$W/runcheck.out" ||
    echo "not ok - report_run_check.py failed: $(tail -1 "$W/runcheck.out")" >> "$W/runcheck.out"
cat "$W/runcheck.out"
tally "$W/runcheck.out"

# A stripped copy of the sample (no symbols, no DWARF): the page shows the
# timed procedures' disassembly; the oracle is the analysis' blocks
# (mtool analyze --json --blocks) and their counts in counts.tsv (pass 1,
# what mtool count counts), checked per instruction in chromium below.
strip -o "$W/memory-stripped" "$bin"
"$MTOOL" run --libs none --no-store -o "$W/stripped" -- "$W/memory-stripped" > /dev/null 2> "$W/strip.err"
rc=$?
check "run of the stripped sample exits 0: $(tail -1 "$W/strip.err")" "[ $rc = 0 ]"
"$MTOOL" analyze --json --blocks "$W/memory-stripped" > "$W/stripped.json" 2> /dev/null
python3 - "$W/stripped.json" "$W/stripped/counts.tsv" "$W/strip-oracle.json" <<'EOF2'
import json, sys
counts = {}
for row in open(sys.argv[2]):
    if not row.startswith("#"):
        block, count, _ = row.rstrip("\n").split("\t", 2)
        counts[int(block, 16)] = int(count)
blocks = [[int(b["start"], 16), int(b["end"], 16), counts.get(int(b["start"], 16), 0),
           b["mem_reads"], b["mem_writes"]]
          for p in json.load(open(sys.argv[1]))["procedures"] for b in p["blocks"]]
json.dump(blocks, open(sys.argv[3], "w"))
EOF2
check "the stripped page has disassembly and no source file" \
    "grep -q '\"files\":\[\]' '$W/stripped/report.html' && grep -q '\"disasm\":\[{\"procedure\"' '$W/stripped/report.html'"

# The simulation: `mtool sim RUNDIR` keeps its JSON report as sim.json and
# makes the page again with it (tests/report_sim_check.py); the page's views
# of it are checked in chromium below, against sim.json.  One set in 8
# simulated (--sample-sets 1/8: 29 s of CPU instead of 120 s, AMD EPYC Zen 3,
# loaded 2-vCPU guest): the page shows whatever figures sim.json holds, and
# the full simulation's own figures are checked in tests/pass2.sh.
"$MTOOL_SIM" sim --no-store --sample-sets 1/8 --json -o "$W/sim.out" "$W/mem" > /dev/null 2> "$W/sim.err"
rc=$?
check "sim RUNDIR exits 0 and says it kept sim.json and made report.html: $(tail -1 "$W/sim.err")" \
    "[ $rc = 0 ] && grep -q 'kept in .*/sim.json; report written to .*/report.html' '$W/sim.err'"
# A stored simulated run (`sim -- BIN`, of a small sample, after a count of
# it: runs 5 and 6): its page from the history has its code objects'
# last-level misses as the history's tables hold them, and their trends the
# count's memory operations and the simulation's misses.
walks="$SAMPLES_SIM/walks-gcc-O2"
"$MTOOL" count --libs none -o "$W/walks" -- "$walks" > /dev/null 2> "$W/walks.err" &&
    "$MTOOL" sim --D1=8K,4,64 --LL=256K,8,64 -- "$walks" > /dev/null 2>> "$W/walks.err" &&
    "$MTOOL" report last -o "$W/simrun.html" > /dev/null 2> "$W/simrun.err"
rc=$?
check "report last after a stored sim: its page from the history: $(tail -1 "$W/walks.err")" \
    "[ $rc = 0 ] && grep -q '^report: run 6 (.mtool sim.) recorded no run directory.*last-level misses shown' '$W/simrun.err'"
python3 "$HERE/report_run_check.py" --sim "$MTOOL_HISTORY" "$W/simrun.html" > "$W/simruncheck.out" 2>&1 ||
    grep -q '^not ok' "$W/simruncheck.out" ||
    echo "not ok - report_run_check.py --sim failed: $(tail -1 "$W/simruncheck.out")" >> "$W/simruncheck.out"
cat "$W/simruncheck.out"
tally "$W/simruncheck.out"
python3 "$HERE/report_sim_check.py" "$W/mem" "$W/sim.out" > "$W/simcheck.out" 2>&1 ||
    grep -q '^not ok' "$W/simcheck.out" ||
    echo "not ok - report_sim_check.py failed: $(tail -1 "$W/simcheck.out")" >> "$W/simcheck.out"
cat "$W/simcheck.out"
tally "$W/simcheck.out"
markup "$W/mem/report.html" > "$W/markup"
check "the page with the simulation still loads nothing" \
    "! grep -Eiq 'src=|href=|url\\(|@import' '$W/markup'"

# A damaged sim.json is refused by name, the page left as it was; a new
# pass 2 removes it (its stall estimates were set beside the old one's).
cp -r "$W/mem" "$W/simbad"
cp "$W/simbad/report.html" "$W/simbad.before"
head -c 5000 "$W/mem/sim.json" > "$W/simbad/sim.json"
"$MTOOL" report "$W/simbad" 2> "$W/bad.err"
check "a truncated sim.json: exit 1, one line naming it, the page before untouched" \
    "[ $? = 1 ] && [ \$(wc -l < '$W/bad.err') = 1 ] && grep -q 'sim.json: not a JSON object' '$W/bad.err' && cmp -s '$W/simbad/report.html' '$W/simbad.before'"
printf '{"a": "\001"}' > "$W/simbad/sim.json"
"$MTOOL" report "$W/simbad" 2> "$W/bad.err"
check "a sim.json with a raw control byte in a string: refused" \
    "[ $? = 1 ] && grep -q 'sim.json' '$W/bad.err'"
# RFC 8259's grammar, the reader's check: what it refuses, what it takes.
deep="$(printf '%070d' 0 | tr 0 '[')1$(printf '%070d' 0 | tr 0 ']')" # nested past 64
for bad in '[1]' '{"a": 1} x' "{\"a\": $deep}" '{"a": 01}' '{"a": "\q"}' '{"a": tru}' '{"a" 1}'; do
    printf '%s' "$bad" > "$W/simbad/sim.json"
    "$MTOOL" report "$W/simbad" -o "$W/simbad.html" 2> "$W/bad.err"
    rc=$? # before the substitution below sets $? (bash does, dash does not)
    check "sim.json '$(printf '%.30s' "$bad")': refused in one line naming it" \
        "[ $rc = 1 ] && [ \$(wc -l < '$W/bad.err') = 1 ] && grep -q 'sim.json' '$W/bad.err'"
done
printf '{"a": [1.5e-3, -0, "\\u00e9\\n<"], "b": {"c": null, "d": true}}' > "$W/simbad/sim.json"
"$MTOOL" report "$W/simbad" -o "$W/simbad.html" 2> "$W/bad.err"
check "a sim.json of another shape is taken (the page then shows no simulation views)" \
    "[ $? = 0 ] && grep -qF '\"sim\":{\"a\": [1.5e-3, -0, \"\\u00e9\\n\\u003c\"]' '$W/simbad.html'"
"$MTOOL" time --no-store --no-html "$W/simbad" > /dev/null 2> "$W/time.err"
rc=$?
check "a new pass 2 removes sim.json: $(tail -1 "$W/time.err")" \
    "[ $rc = 0 ] && [ ! -e '$W/simbad/sim.json' ]"
"$MTOOL" report "$W/simbad" -o "$W/nosim.html" 2> "$W/bad.err"
check "its page then has no simulation" \
    "[ $? = 0 ] && grep -q '\"sim\":null' '$W/nosim.html'"

# A threaded sample simulated on two CPUs: its page shows coherence misses
# (checked in chromium below).
"$MTOOL" run --libs none --no-store -o "$W/sharing" -- "$SAMPLES_SIM/sharing-gcc-O2" > /dev/null 2> "$W/sharing.err" &&
    "$MTOOL" sim --no-store --set cpus=2 --what-if "$W/sharing" > /dev/null 2>> "$W/sharing.err"
rc=$?
check "run and sim --set cpus=2 --what-if of the threaded sample exit 0: $(tail -1 "$W/sharing.err")" "[ $rc = 0 ]"

# A procedure named with markup, quotes and terminal escapes (the symbol
# renamed in the object file: no assembler takes it in a call).
cat > "$W/hostile.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
__attribute__((noinline)) long hostile_walk(const long *a, long n)
{
    long s = 0;
    for (int r = 0; r < 40; r++)
        for (long i = 0; i < n; i++)
            s += a[(i * 4099) % n];
    return s;
}
int main(void)
{
    long n = 1 << 18; /* 10 M references: the sim of the run below, under ASan, 5 s (1 << 20: 20 s) */
    long *a = malloc(n * sizeof *a);
    for (long i = 0; i < n; i++)
        a[i] = i;
    printf("%ld\n", hostile_walk(a, n));
    free(a);
    return 0;
}
EOF
esc=$(printf '\033') bel=$(printf '\007')
hostile="ev<script>alert(\"x\")</script>$esc]0;pwned$bel$esc[31mRED&amp;"
cc -O2 -g -c -o "$W/hostile.o" "$W/hostile.c" &&
    objcopy --redefine-sym "hostile_walk=$hostile" "$W/hostile.o" &&
    cc -o "$W/hostile" "$W/hostile.o"
check "the hostile sample builds with its symbol" "nm '$W/hostile' | grep -qF 'ev<script>'"
"$MTOOL" run --libs none --no-store -o "$W/hostile.run" -- "$W/hostile" > "$W/hostile.out" 2>&1
rm "$W/hostile.c" # the page then says the source is missing, with its lines' figures
# One set in 8 simulated: the symbol takes the same way through sim's output
# and the page, for 29 s of CPU under ASan instead of 195 s (AMD EPYC Zen 3,
# loaded 2-vCPU guest).
"$MTOOL" sim --no-store --sample-sets 1/8 "$W/hostile.run" > "$W/hostile.sim" 2>&1
rc=$?
check "sim of the hostile run exits 0: $(tail -1 "$W/hostile.sim")" "[ $rc = 0 ]"
"$MTOOL" report "$W/hostile.run" > "$W/hostile.report" 2>&1
rc=$?
check "report of the hostile symbol exits 0: $(tail -1 "$W/hostile.report")" "[ $rc = 0 ]"
check "no escape byte reaches the terminal from run, sim or report" \
    "! grep -q '$esc' '$W/hostile.out' '$W/hostile.sim' '$W/hostile.report'"
python3 - "$W/hostile.run/report.html" "$hostile" <<'EOF'
import json, re, sys
page = open(sys.argv[1], encoding="utf-8").read()
sim = json.loads(re.search(r'id="mtool-data">(.*?)</script>', page, re.S).group(1))["sim"]
named = lambda rows, key: any(r[key].startswith(sys.argv[2]) for r in rows)
sys.exit(0 if named(sim["code_objects"], "name") and named(sim["code_data"], "code_name") else 1)
EOF
check "the symbol is in the page's simulation data (code objects, code x data pairs)" "[ $? = 0 ]"
check "the symbol is in the page's data, escaped" \
    "grep -qF 'ev\\u003cscript\\u003ealert(\\\"x\\\")\\u003c/script\\u003e\\u001b]0;pwned' '$W/hostile.run/report.html'"
check "the page names the missing source and why" \
    "grep -qF '\"name\":\"$W/hostile.c\",\"text\":null,\"missing\":\"$W/hostile.c: No such file or directory\"' '$W/hostile.run/report.html'"
check "the symbol is nowhere in the page as markup or raw bytes" \
    "! grep -qF -e '<script>alert' -e '$esc' -e '$bel' '$W/hostile.run/report.html'"

# The hostile symbol in the history: two stored timed runs of a copy of its
# run directory; the page's diff names it as text (checked in chromium, with
# its CSV), never as markup.
cp -r "$W/hostile.run" "$W/hostile.hist"
"$MTOOL" time --no-html "$W/hostile.hist" > /dev/null 2>&1 &&
    "$MTOOL" time --no-html "$W/hostile.hist" > /dev/null 2> "$W/hostile.time" &&
    "$MTOOL" report "$W/hostile.hist" > "$W/hostile.report" 2>&1
rc=$?
check "two stored runs of the hostile sample and their page: $(tail -1 "$W/hostile.report")" \
    "[ $rc = 0 ] && ! grep -q '$esc' '$W/hostile.time' '$W/hostile.report'"
check "the symbol is in the history's diff, escaped, and nowhere as markup" \
    "grep -qF '\"diff\":[{\"name\":\"ev\\u003cscript\\u003ealert(\\\"x\\\")' '$W/hostile.hist/report.html' && ! grep -qF -e '<script>alert' -e '$esc' '$W/hostile.hist/report.html'"

# Its run directory moved away, `mtool report last` builds the page of the
# hostile run from the history: the symbol is data there too.
mv "$W/hostile.hist" "$W/hostile.moved"
"$MTOOL" report last -o "$W/hostile-stored.html" > "$W/hostile.report" 2>&1
check "report last of the hostile run from the history: exit 0, no escape on the terminal" \
    "[ $? = 0 ] && grep -q 'is gone' '$W/hostile.report' && ! grep -q '$esc' '$W/hostile.report'"
check "the symbol is in its objects, escaped, and nowhere as markup" \
    "grep -qF '{\"spec\":\"ev\\u003cscript\\u003ealert(\\\"x\\\")' '$W/hostile-stored.html' && ! grep -qF -e '<script>alert' -e '$esc' -e '$bel' '$W/hostile-stored.html'"

# Bad input: one line naming the file, exit 1 (2 for usage), no page.
"$MTOOL" report > /dev/null 2> "$W/bad.err"
rc=$?
check "report without a run directory: usage, exit 2" "[ $rc = 2 ] && [ \$(wc -l < '$W/bad.err') = 1 ]"
"$MTOOL" report "$W/none" 2> "$W/bad.err"
check "a missing run directory: exit 1, one line naming it" \
    "[ $? = 1 ] && [ \$(wc -l < '$W/bad.err') = 1 ] && grep -q '$W/none' '$W/bad.err'"
"$MTOOL" count --libs none -o "$W/count-only" --no-store -- "$bin" > /dev/null 2>&1
"$MTOOL" report "$W/count-only" 2> "$W/bad.err"
check "a run directory without pass 2: exit 1, one line naming pass2.tsv, no page" \
    "[ $? = 1 ] && [ \$(wc -l < '$W/bad.err') = 1 ] && grep -q 'pass2.tsv' '$W/bad.err' && [ ! -e '$W/count-only/report.html' ]"
cp -r "$W/mem" "$W/damaged"
cp "$W/damaged/report.html" "$W/damaged.before"
printf 'object\tno_such_procedure\t1\t2\t3\t1\n' >> "$W/damaged/pass2.tsv"
"$MTOOL" report "$W/damaged" 2> "$W/bad.err"
check "a damaged pass2.tsv: exit 1, one line naming it, the page before untouched" \
    "[ $? = 1 ] && [ \$(wc -l < '$W/bad.err') = 1 ] && grep -q 'pass2.tsv' '$W/bad.err' && cmp -s '$W/damaged/report.html' '$W/damaged.before'"
inode=$(stat -c %i "$W/page.html")
"$MTOOL" report "$W/mem" -o "$W/page.html" --callgrind "$W/no/such/dir/cg.out" 2> "$W/bad.err"
check "an export that cannot be made: exit 1, one line, the page not replaced either" \
    "[ $? = 1 ] && [ \$(wc -l < '$W/bad.err') = 1 ] && [ \$(stat -c %i '$W/page.html') = $inode ] && [ -z \"\$(ls '$W' | grep '^page.html.')\" ]"

# The page in a browser.
mkdir -p "$W/shots"
export HISTORY_PAGE="$W/mem3.html" HISTORY_ORACLE="$W/hist-oracle.json" \
    HOSTILE_HISTORY_PAGE="$W/hostile.moved/report.html" \
    HOSTILE_STORED_PAGE="$W/hostile-stored.html" STRIPPED_RUNDIR="$W/stripped" \
    STORED_PAGE="$W/gone.html" STORED_ORACLE_PAGE="$W/last.html" COUNT_PAGE="$W/count.html" \
    SIM_RUN_PAGE="$W/simrun.html" STRIPPED_ORACLE="$W/strip-oracle.json"
# shellcheck disable=SC2086
browser_test "$HERE/browser/report.mjs" "$W/mem" "$W/hostile.run" "$W/sharing" ${REPORT_SCREENSHOTS:-}
print_totals
