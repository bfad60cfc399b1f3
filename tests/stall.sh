#!/bin/sh
# tests/stall.sh — `mtool sim RUNDIR` (docs/SIMULATOR.md, "The stall
# estimate") on the small matmul sample, with pass2.tsv written by hand so
# that what is traced is known (the memory sample's estimates against a
# real pass 2 are in tests/pass2.sh):
#   - only the objects pass2.tsv lists (and what they call) are traced: with
#     matmul_cols's loop alone, every reference simulated is matmul_cols's,
#     and --all brings matmul_rows and main back; the loop's D1 misses are
#     the same either way (the cheap mode's error is in the levels below);
#   - each estimate recomputed from the JSON's own misses, walks and latencies;
#   - a profile without latencies (older, or shipped), or without the page
#     walk's cost (version 5): they are measured for the run, not kept;
#   - bad input: no pass 2 yet, a damaged or foreign pass2.tsv, a profile
#     with a latency out of range, --all without RUNDIR: one line each, exit
#     1 (2 for usage), no report; a new pass 1 removes the old pass2.tsv.
#
#   MTOOL=build/asan/mtool SAMPLES=build/samples sh tests/stall.sh
set -u
MTOOL=${MTOOL:-build/asan/mtool}
SAMPLES=${SAMPLES:-build/samples}
HERE=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d "${TMPDIR:-/tmp}/mtool-stall.XXXXXX")
trap 'rm -rf "$W"' EXIT INT TERM
export XDG_CACHE_HOME="$W/cache" XDG_CONFIG_HOME="$W/config" MTOOL_HISTORY="$W/history.db"
. "$(dirname "$0")/lib.sh"

bin=$SAMPLES/matmul-gcc-O2
# tests/run.sh's profile, else one made here.  A calibration refuses to
# measure when its clock references disagree (a neighbour's burst on a
# shared machine): tried up to three times.
have_machine_profile || for attempt in 1 2 3; do
    "$MTOOL" calibrate > /dev/null 2> "$W/cal.err" && break
    echo "# calibrate: attempt $attempt: $(tail -1 "$W/cal.err")"
done
# --libs none: the pass2.tsv written below lists the executable's objects,
# and the checks count the executable's references and walks alone
# (glibc's, counted and traced by default, are tests/glibc.sh's).
"$MTOOL" count --libs none -o "$W/run" -- "$bin" > /dev/null 2> "$W/count.err" ||
    not_ok "count: $(tail -1 "$W/count.err")"

# one_line_error NAME RC WANT CMD...: CMD exits RC with one stderr line
# matching WANT and leaves no report.
one_line_error() {
    what=$1 want_rc=$2 want=$3
    shift 3
    rm -f "$W/report"
    "$@" -o "$W/report" > /dev/null 2> "$W/err"
    rc=$?
    check "$what: exit $want_rc, one line ($(head -1 "$W/err")), no report" \
        "[ $rc = $want_rc ] && [ \$(wc -l < '$W/err') = 1 ] && grep -q -- '$want' '$W/err' && [ ! -e '$W/report' ]"
}

one_line_error "a run directory without pass 2" 1 "pass2.tsv: no pass 2 in this run directory" \
    "$MTOOL" sim "$W/run"
one_line_error "--all without RUNDIR" 2 "--all goes with RUNDIR" \
    "$MTOOL" sim --all --trace /dev/null

# pass2.tsv by hand: matmul_cols's loop, its figures made up (the estimate
# does not depend on them; the agreement is computed from them).
printf '# written by tests/stall.sh\nprogram\t2000000\t9000000\t5000000\nobject\tmatmul_cols:0\t532480\t1000000\t6000000\t1\n' \
    > "$W/run/pass2.tsv"
"$MTOOL" sim --json -o "$W/cols.json" "$W/run" > /dev/null 2> "$W/cols.err"
rc=$?
check "sim RUNDIR exits 0: $(tail -1 "$W/cols.err")" "[ $rc = 0 ]"
"$MTOOL" sim --all --json -o "$W/all.json" "$W/run" > /dev/null 2> "$W/all.err"
rc=$?
check "sim --all RUNDIR exits 0: $(tail -1 "$W/all.err")" "[ $rc = 0 ]"
"$MTOOL" sim "$W/run" > "$W/cols.txt" 2> /dev/null
check "the text report sets the estimate beside the overhead, and says how they agree" \
    "grep -q '^stall estimate per m-object' '$W/cols.txt' && grep -q '^  matmul_cols@0x' '$W/cols.txt' &&
     grep -q '^agreement: ' '$W/cols.txt' && grep -q 'not traced (--all traces it)' '$W/cols.txt'"
python3 - "$W/cols.json" "$W/all.json" > "$W/py.out" 2>&1 <<'EOF' || echo "not ok - stall checks failed" >> "$W/py.out"
import json, sys
def say(ok, text): print(("ok - " if ok else "not ok - ") + text)
cols, every = (json.load(open(p)) for p in sys.argv[1:3])
def procs(r): return {o["procedure"] for o in r["code_objects"] if o["refs"] and "procedure" in o}
say(procs(cols) == {"matmul_cols"},
    f"only matmul_cols's loop traced: references of {sorted(procs(cols))}")
say({"matmul_cols", "matmul_rows", "main"} <= procs(every),
    f"--all traces everything: references of {sorted(procs(every))}")
def loop_misses(r, level):
    return sum(sum(o["misses"][level].values()) for o in r["code_objects"]
               if o.get("procedure") == "matmul_cols" and o.get("loop"))
a, b = loop_misses(cols, "D1"), loop_misses(every, "D1")
say(a > 0 and abs(a - b) <= 0.02 * b,
    f"the loop's D1 misses traced alone ({a}) within 2% of --all's ({b})")
st = cols["stall"]
o = st["objects"][0]
names = [l["name"] for l in cols["levels"]]
lat = st["latency_cycles"]
cycles = [lat["L1" if n == "D1" else n] for n in names if n != "I1"] + [lat["memory"]]
misses = [m for n, m in zip(names, o["stall"]["misses"]) if n != "I1"]
walking = o["stall"]["walks"] * st["walk_cycles"]
tlb = cols.get("tlb")
walks = sum(c["tlb_misses"][tlb["levels"][-1]["name"]] for c in cols["code_objects"]
            if c.get("procedure") == "matmul_cols" and c.get("loop")) if tlb else 0
say(st["walk_cycles"] > 0 and abs(walking - o["stall"]["walk_cycles"]) <= 1e-4 * max(walking, 1)
    and o["stall"]["walks"] == walks and (walks > 0) == bool(tlb),
    f"walks = the simulated TLB's last-level misses ({walks}), each at the walk's cost "
    f"({st['walk_cycles']:.1f} cycles)")
cache = sum(m * max(0, cycles[i + 1] - cycles[i]) for i, m in enumerate(misses))
serial = cache + walking
say(abs(serial - o["stall"]["serial_cycles"]) <= 1e-4 * serial and cache > 0,
    f"serial stall = misses per level x the latency the level below adds, + walks ({serial:.6g})")
stream = st["stream_cycles"]
scycles = [stream["L1" if n == "D1" else n] for n in names if n != "I1"] + [stream["memory"]]
cstreamed = sum(m * min(max(0, scycles[i + 1] - scycles[i]), cycles[i + 1] - cycles[i])
                for i, m in enumerate(misses))
streamed = cstreamed + walking
say(abs(streamed - o["stall"]["streamed_cycles"]) <= 1e-4 * max(streamed, 1) and
    0 < streamed < serial, f"streamed stall = misses per level x the streaming cost the level "
    f"below adds, + walks ({streamed:.6g}), below the serial one")
say(abs(o["stall"]["overlapped_cycles"] - min(cstreamed + walking / st["parallelism"],
                                                serial / st["parallelism"])) <= 1e-4 * serial,
    "overlapped = the less of the streamed stall (its walks overlapped) and the serial one / "
    "the parallelism")
share = o["stall"]["regular"] / o["stall"]["new_lines"]
written = o["stall"]["written"] / o["stall"]["new_lines"]
say(o["stall"]["independent_refs"] == o["stall"]["refs"] > 0,
    "matmul_cols's loop chases no pointer: all its references independent")
past = sum(m * max(0, cycles[i + 1] - cycles[i]) for i, m in enumerate(misses) if i > 0)
overlapped = past * (1 - 1 / st["parallelism"])
want = ((cache - overlapped) * (1 - share) + min(cache, cstreamed * (1 + written)) * share +
        walking / st["parallelism"])  # the loop chases no pointer: its walks overlap too
# within 1%: the estimate is summed per code object (the loop nest's three),
# each with its own regular share; the object's share is their weighted mean
say(abs(want - o["stall"]["estimate_cycles"]) <= 1e-2 * want,
    f"estimate = the regular share ({share:.2f}) streamed, its written lines ({written:.2f}) "
    f"twice, the rest serial but for the misses past L2, overlapped "
    f"{st['parallelism']:.1f}-fold, + walks as much overlapped ({want:.6g} against {o['stall']['estimate_cycles']:.6g}; misses {misses})")
say(o["overhead_cycles"] == 5000000 and o["name"].startswith("matmul_cols@0x") and
    o["kind"] == "loop", "the object and its overhead as pass2.tsv has them")
say(not st["outside_traced"] and every["stall"]["outside_traced"],
    "the code outside the objects is estimated with --all only")
EOF
cat "$W/py.out"
tally "$W/py.out"

# The --all run stored in the history (schema 10): each procedure's page
# walks as the report's code objects of it have them (the last TLB level's
# misses), their cycles at the walk's cost the stall estimate charged (the
# matrices' pages walked by matmul_rows first: matmul_cols finds them in
# TLB2).
"$MTOOL" history sql "SELECT s.procedure, f.page_walks, f.walk_cycles FROM sim_figures f JOIN sites s ON s.id = f.site_id WHERE s.loop_path IS NULL" \
    > "$W/walks.tsv" 2> "$W/walks.err"
check "the history has each procedure's page walks and walk cycles as sim --all RUNDIR found them" \
    "python3 - '$W/all.json' '$W/walks.tsv' <<'EOF2'
import json, sys
every = json.load(open(sys.argv[1]))
last = every['tlb']['levels'][-1]['name']
cost = every['stall']['walk_cycles']
want = {}
for c in every['code_objects']:
    if 'procedure' in c:
        want[c['procedure']] = want.get(c['procedure'], 0) + c['tlb_misses'][last]
rows = [l.rstrip('\\n').split('\\t') for l in open(sys.argv[2])][1:]
got = {p: (int(w), float(c)) for p, w, c in rows}
bad = [p for p in want if p not in got or got[p][0] != want[p] or
       abs(got[p][1] - want[p] * cost) > 1e-6 * max(1, want[p] * cost)]
sys.exit(bad and 'stored %s, reported %s at %s cycles' % (got, want, cost) or
         (not sum(want.values()) and 'no procedure walks a page'))
EOF2"

# Damaged and foreign pass2.tsv.
printf 'program\t1\t2\t3\nobject\tmatmul_cols:0\tmany\t1\t2\t1\n' > "$W/run/pass2.tsv"
one_line_error "a pass2.tsv figure that is no number" 1 "pass2.tsv:2: not a pass-2 line" \
    "$MTOOL" sim "$W/run"
printf 'program\t1\t2\t3\nobject\tno_such_procedure\t1\t1\t2\t1\n' > "$W/run/pass2.tsv"
one_line_error "a pass2.tsv object that is not the binary's" 1 "pass2.tsv:2: .*another binary" \
    "$MTOOL" sim "$W/run"

# Machine profiles: without latencies (an older calibration), a latency out of range.
printf 'program\t2000000\t9000000\t5000000\nobject\tmatmul_cols:0\t532480\t1000000\t6000000\t1\n' \
    > "$W/run/pass2.tsv"
prof=$(ls "$W"/config/mtool/machine-*.txt 2> /dev/null)
if [ -z "$prof" ]; then
    # no profile kept (calibrate refused three times: its clock references disagreed)
    ok "profiles without latencies or with one out of range # SKIP no calibrated profile: $(tail -1 "$W/cal.err")"
else
cp "$prof" "$W/profile.good"
# older_profile SED WHAT KEY: the profile edited by SED (an older calibration's)
# is measured for the run, said in one line, and left as it is; the
# report's stall KEY figures ordered L1 below memory.
older_profile() {
    sed "$1" "$W/profile.good" > "$prof"
    cp "$prof" "$W/profile.old"
    "$MTOOL" sim --json -o "$W/old.json" "$W/run" > /dev/null 2> "$W/old.err"
    check "$2: measured for the run, said in one line, not kept" \
        "[ $? = 0 ] && grep -q 'has no memory latencies, streaming costs or page-walk cost: measuring them now' '$W/old.err' &&
         python3 -c 'import json,sys; l = json.load(open(sys.argv[1]))[\"stall\"][sys.argv[2]]; sys.exit(not 0 < l[\"L1\"] < l[\"memory\"])' '$W/old.json' $3 &&
         cmp -s '$prof' '$W/profile.old'"
}
older_profile '/^latency /d' "a profile without latencies (older, or shipped)" latency_cycles
older_profile 's/^\(latency [^ ]* [^ ]* [^ ]* [^ ]*\) [^ ]*$/\1/' \
    "a profile with latencies and no streaming costs (calibrated before them)" stream_cycles
older_profile '/^tlb_walk_cycles /d' \
    "a profile without a page walk's cost (version 5: latencies with walks)" latency_cycles
sed 's/^\(latency L2 \([^ ]*\) [^ ]* [^ ]*\) [^ ]*$/\1 9\2/' "$W/profile.good" > "$prof"
one_line_error "a profile with a streaming cost above its latency" 1 "machine profile key .latency. value .L2 .*stream cycles outside" \
    "$MTOOL" sim "$W/run"
sed 's/^latency L2 [0-9.]*/latency L2 0.2/' "$W/profile.good" > "$prof"
one_line_error "a profile with a latency out of range" 1 "machine profile key .latency. value .L2 0.2 .*cycles outside" \
    "$MTOOL" sim "$W/run"
sed 's/^latency L1 [0-9.]*/latency L1 4999/' "$W/profile.good" > "$prof"
one_line_error "a profile whose L1 latency is above L2's" 1 "machine profile key .latency. value .L2 .*a deeper level is never faster" \
    "$MTOOL" sim "$W/run"
sed 's/^tlb_walk_cycles .*/tlb_walk_cycles 7000/' "$W/profile.good" > "$prof"
one_line_error "a profile with a page walk's cost out of range" 1 "machine profile key .tlb_walk_cycles. value .7000.: outside" \
    "$MTOOL" sim "$W/run"
cp "$W/profile.good" "$prof"
fi

"$MTOOL" count --libs none -o "$W/run" -- "$bin" > /dev/null 2>&1
check "a new pass 1 in the run directory removes the old pass2.tsv" "[ ! -e '$W/run/pass2.tsv' ]"

print_totals
