#!/bin/sh
# tests/history_mp.sh — simulated multiprocessor runs in the history
# (docs/HISTORY.md, "Processors and what-if remedies"): per data and code
# object its coherence misses and events and where its references were
# served, as metrics of `history diff`, `regressions` and `trend`; a
# --what-if run's remedies and proposals stored and shown by `history show`;
# its per-thread view (schema 8's sim_threads) too, and in the JSON export.
#
# Hand din traces on samples/sharing.c's binary first (exact counts, worked
# out in the comments), then the sample itself traced on two CPUs, built
# adjacent and then rebuilt with -DPAD_ADJACENT into the same path (a
# rebuild: its objects keep their identities).
#
# The pages `mtool report RUN` makes of these runs (their history view: the
# processors' figures, their diff, the what-if, the trend charts) are
# checked against the history read with python's sqlite3
# (tests/history_mp_page.py), then in chromium (tests/browser/mp.mjs:
# skipped when chromium or playwright-core is missing).
#
#   MTOOL=build/asan/mtool SAMPLES_SIM=build/samples-sim sh tests/history_mp.sh
set -u
MTOOL=${MTOOL:-build/asan/mtool}
SAMPLES_SIM=${SAMPLES_SIM:-build/samples-sim}
TESTS=$(dirname "$0")
W=$(mktemp -d "${TMPDIR:-/tmp}/mtool-history-mp.XXXXXX")
trap 'rm -rf "$W"' EXIT INT TERM
export XDG_CONFIG_HOME="$W/config" MTOOL_HISTORY="$W/h.db"

. "$TESTS/lib.sh"
sql() { "$MTOOL" history sql "$1" | tail -n +2 | tr '\t\n' '  ' | sed 's/ $//'; }
# is WHAT GOT WANT
is() {
    if [ "$2" = "$3" ]; then ok "history_mp: $1"; else not_ok "history_mp: $1: got '$2', expected '$3'"; fi
}

# page RUN: `mtool report RUN`'s page of $MTOOL_HISTORY, its data checked
# against the history (the oracle for the browser written beside it); the
# browser's arguments gathered in $pages.
pages=
page() {
    p=$W/page-$(basename "$MTOOL_HISTORY" .db)-$1
    "$MTOOL" report "$1" -o "$p.html" > /dev/null 2> "$W/err" ||
        not_ok "history_mp: report $1: $(head -1 "$W/err")"
    python3 "$TESTS/history_mp_page.py" "$MTOOL_HISTORY" "$1" "$p.html" "$p.json" \
        > "$W/page.out" 2>&1 || grep -q '^not ok' "$W/page.out" ||
        echo "not ok - history_mp_page.py $1 failed: $(tail -1 "$W/page.out")" >> "$W/page.out"
    sed 's/^\(not \)\{0,1\}ok - /&history_mp: page: /' "$W/page.out"
    tally "$W/page.out"
    pages="$pages $p.html $p.json"
}
# browser: the pages gathered in chromium.
browser() {
    chromium=${CHROMIUM:-/usr/bin/chromium}
    if [ ! -x "$chromium" ] || [ ! -d "$TESTS/browser/node_modules/playwright-core" ] ||
        ! command -v node > /dev/null; then
        echo "# history_mp: chromium, node or playwright-core missing: the pages not opened"
        return
    fi
    # shellcheck disable=SC2086 # $pages: paths without spaces (mktemp's)
    CHROMIUM=$chromium node "$TESTS/browser/mp.mjs" $pages > "$W/browser.out" 2>&1 ||
        grep -q '^not ok' "$W/browser.out" ||
        echo "not ok - tests/browser/mp.mjs failed: $(tail -3 "$W/browser.out" | tr '\n' ' ')" >> "$W/browser.out"
    sed 's/^\(not \)\{0,1\}ok - /&history_mp: browser: /' "$W/browser.out"
    tally "$W/browser.out"
}

SHARING=$SAMPLES_SIM/sharing-gcc-O2
if [ ! -x "$SHARING" ] || [ ! -x "$SHARING-padded" ]; then
    not_ok "history_mp: $SHARING and $SHARING-padded not built (make samples)"
    print_totals
    exit
fi
MP=$TESTS/whatif/mp.txt # two CPUs, private D1 (2 sets x 2 ways) and L2, shared L3, latencies

# ---- hand traces on the sample's binary ------------------------------------------------
# `adjacent` is at the same link-time address A in both builds (a din trace
# with --binary is at link-time addresses; nm's, as the sample's layout moves
# with its globals): .a at A, .b at A + 8, and in the padded build .b a line
# further, at A + 64.
mkdir -p "$W/bin"
adjacent=$(nm "$SHARING" | awk '$3 == "adjacent" { print $1 }')
[ -n "$adjacent" ] && [ "$(nm "$SHARING-padded" | awk '$3 == "adjacent" { print $1 }')" = "$adjacent" ] ||
    not_ok "history_mp: adjacent is not at one address in sharing-gcc-O2 and its padded build (the traces below assume it)"
A=$(printf '%x' $((0x${adjacent:-0}))) A8=$(printf '%x' $((0x${adjacent:-0} + 8)))
A64=$(printf '%x' $((0x${adjacent:-0} + 64)))
# Four rounds of thread 0 writing adjacent.a and thread 1 adjacent.b (one
# line): 2 cold misses, then every write misses, a coherence miss, false
# sharing (only the other word was written since the line was lost), each
# write after the first an intervention (the other CPU's Modified copy) and
# one invalidation of the other's copy, no upgrade.  Against the reference
# that caused them: adjacent.a (thread 0: writes 1-4) false 3, interventions
# 3, invalidations 3; adjacent.b (thread 1) false 3, interventions 4,
# invalidations 4.  Memory (one node: local) served the first write only:
# local 1 on adjacent.a.
i=0
while [ $i -lt 4 ]; do
    printf '1 %s 8 0\n1 %s 8 1\n' "$A" "$A8" >> "$W/adjacent.din"
    printf '1 %s 8 0\n1 %s 8 1\n' "$A" "$A64" >> "$W/padded.din"
    i=$((i + 1))
done
cp "$SHARING" "$W/bin/sharing"
"$MTOOL" sim --machine "$MP" --trace "$W/adjacent.din" --binary "$W/bin/sharing" --what-if \
    --json -o "$W/adjacent.json" 2> "$W/err" || not_ok "history_mp: adjacent.din: $(head -1 "$W/err")"
cp "$SHARING-padded" "$W/bin/sharing"
# The padded build: each CPU writes its own line: 2 cold misses, no coherence.
"$MTOOL" sim --machine "$MP" --trace "$W/padded.din" --binary "$W/bin/sharing" \
    -o "$W/padded.txt" 2> "$W/err" || not_ok "history_mp: padded.din: $(head -1 "$W/err")"

FIGS="true_sharing, false_sharing, invalidations, interventions, upgrades, local_refs, remote_refs, remote_dirty_refs, three_hop_refs"
data_figures() {
    sql "SELECT $FIGS FROM sim_figures f JOIN data_sites d ON d.id = f.data_site_id WHERE f.run_id = $1 AND d.name = '$2'"
}
is "adjacent.a stored: false 3, invalidations 3, interventions 3, local 1" \
    "$(data_figures 1 adjacent.a)" "0 3 3 3 0 1 0 0 0"
is "adjacent.b stored: false 3, invalidations 4, interventions 4" \
    "$(data_figures 1 adjacent.b)" "0 3 4 4 0 0 0 0 0"
is "padded build: no coherence on adjacent.a" "$(data_figures 2 adjacent.a)" "0 0 0 0 0 1 0 0 0"
is "padded build: no coherence on adjacent.b, its line from memory" \
    "$(data_figures 2 adjacent.b)" "0 0 0 0 0 1 0 0 0"
# The same sums as the report's per-CPU view (an independent tally: per CPU,
# not per object).
per_cpu=$(python3 -c 'import json, sys
p = json.load(open(sys.argv[1]))["processors"]["per_cpu"]
print(sum(c["invalidations_sent"] for c in p), sum(c["interventions"] for c in p),
      sum(c["false_sharing"] for c in p))' "$W/adjacent.json")
is "the data objects' events sum to the per-CPU view's" \
    "$(sql "SELECT sum(invalidations), sum(interventions), sum(false_sharing) FROM sim_figures WHERE run_id = 1 AND data_site_id IS NOT NULL")" \
    "$per_cpu"
# The per-thread view stored as the report gave it (its JSON's per_thread:
# thread 0 on CPU 0 wrote adjacent.a, 3 false sharing misses, the line's
# one cold miss from memory; thread 1 on CPU 1 its 4 interventions).
is "the threads stored as the report's per-thread view" \
    "$(sql "SELECT thread, cpu, refs, d1_misses, l2_misses, l3_misses, true_sharing, false_sharing, invalidations, interventions, upgrades, local_refs, remote_refs, stall_cycles FROM sim_threads WHERE run_id = 1 ORDER BY position")" \
    "$(python3 -c 'import json, sys
p = json.load(open(sys.argv[1]))["processors"]["per_thread"]
print(" ".join("%d %d %d %d %d %d %d %d %d %d %d %d %d %.1f" % (t["thread"], t["cpu"], t["refs"],
      t["misses"]["D1"]["misses"], t["misses"]["L2"]["misses"], t["misses"]["L3"]["misses"],
      t["true_sharing"], t["false_sharing"], t["invalidations_sent"], t["interventions"],
      t["upgrades"], t["served"]["local"], t["served"]["remote"], t["served_stall_cycles"])
      for t in p))' "$W/adjacent.json")"
is "thread 1 of the hand trace: 4 interventions, 4 invalidations sent" \
    "$(sql "SELECT interventions, invalidations FROM sim_threads WHERE run_id = 1 AND thread = 1")" "4 4"
# The padded build's trace again on one CPU (run 3): its objects have no
# processors' figures (NULL, never compared), not zeros.
"$MTOOL" sim --D1=256,2,64 --trace "$W/padded.din" --binary "$W/bin/sharing" -o "$W/uni.txt" \
    2> "$W/err" || not_ok "history_mp: one CPU: $(head -1 "$W/err")"
is "a uniprocessor run's processors' figures are NULL, not 0" \
    "$(sql "SELECT count(*) > 0, count(true_sharing) + count(remote_refs) FROM sim_figures WHERE run_id = 3 AND data_site_id IS NOT NULL")" \
    "1 0"

"$MTOOL" history diff 1 2 --metric false_sharing > "$W/diff.txt" 2>&1
if sed -n '/^improved/,/^unchanged/p' "$W/diff.txt" | grep -Eq 'adjacent\.a .* 3 -> 0 ' &&
    sed -n '/^improved/,/^unchanged/p' "$W/diff.txt" | grep -Eq 'adjacent\.b .* 3 -> 0 ' &&
    grep -q '^regressed (0)' "$W/diff.txt"; then
    ok "history_mp: diff by false_sharing: adjacent.a and .b improved, 3 -> 0, nothing regressed"
else
    not_ok "history_mp: diff by false_sharing: $(tr '\n' '|' < "$W/diff.txt" | cut -c1-300)"
fi
"$MTOOL" history regressions 2 1 --metric false_sharing > "$W/reg.txt" 2>&1
is "regressions of the padded build against the adjacent one: none (exit 0)" "$?" 0
"$MTOOL" history regressions 1 2 --metric interventions > "$W/reg.txt" 2>&1
rc=$?
if [ $rc -eq 1 ] && grep -Eq 'adjacent\.a .* 0 -> 3 ' "$W/reg.txt" &&
    grep -Eq 'adjacent\.b .* 0 -> 4 ' "$W/reg.txt"; then
    ok "history_mp: regressions in the reverse order flag adjacent.a and .b by interventions (exit 1)"
else
    not_ok "history_mp: reverse regressions: exit $rc: $(tr '\n' '|' < "$W/reg.txt" | cut -c1-300)"
fi
"$MTOOL" history trend adjacent.b > "$W/trend.txt" 2>&1
if grep -Eq '^ +1 +adjacent\.b +0 +3 +4 +4 +0 ' "$W/trend.txt" &&
    grep -Eq '^ +2 +adjacent\.b +0 +0 +0 +0 +0 ' "$W/trend.txt"; then
    ok "history_mp: trend of adjacent.b lists its processors' figures in both runs"
else
    not_ok "history_mp: trend adjacent.b: $(tr '\n' '|' < "$W/trend.txt" | cut -c1-300)"
fi

# What-if, run 1: padding adjacent.a (or .b) puts each CPU on a line of its
# own: D1 and L2 each save the 6 coherence misses (12 over the levels), the
# L3 takes one more cold miss (two lines), 6 sharing misses saved; the
# stall, at mp.txt's latencies, 56 cycles less (tests/whatif.sh's case).
# Stored as the report gave it (its JSON the oracle of every remedy).
is "the padding of adjacent.a stored with its predicted saving" \
    "$(sql "SELECT kind, d1_saved, l2_saved, l3_saved, coherence_saved, sharing_saved, remote_saved, cycles_saved FROM sim_remedies WHERE run_id = 1 AND remedy LIKE 'pad adjacent.a:%'")" \
    "pad_words 6 6 -1 12 6 0 56.0"
stored_remedies=$(sql "SELECT kind, remedy, d1_saved, l2_saved, l3_saved, sharing_saved, cycles_saved FROM sim_remedies WHERE run_id = 1 ORDER BY position")
reported=$(python3 -c 'import json, sys
w = json.load(open(sys.argv[1]))["what_if"]
def cyc(v): return "" if v is None else "%.1f" % v
print(" ".join("%s %s %d %d %d %d %s" % (r["kind"], r["text"], r["saved"]["misses"]["D1"]["total"],
      r["saved"]["misses"]["L2"]["total"], r["saved"]["misses"]["L3"]["total"],
      r["saved"]["true_sharing"] + r["saved"]["false_sharing"], cyc(r["saved"]["cycles"]))
      for r in w["remedies"]))' "$W/adjacent.json")
is "every remedy stored as the report gave it" "$stored_remedies" "$reported"
# The problems: adjacent.a's cell (3 false sharing misses) gets the padding
# of adjacent.a (3 sharing misses saved in the cell, the run's 56 cycles);
# adjacent.b's cell none: padding either object moves the L3's one cold
# miss of the line into b's cell (b's line is then brought in by b alone),
# so the cell's stall grows by 52 cycles though its 3 misses go, and the
# what-if proposes by cycles saved (sim/whatif.c).  As the report said.
is "two problems stored, the first with the padding proposed, the second with none" \
    "$(sql "SELECT p.data, coalesce(r.kind, 'none'), p.false_sharing, coalesce(p.sharing_saved, '-') FROM sim_problems p LEFT JOIN sim_remedies r ON r.run_id = p.run_id AND r.position = p.remedy WHERE p.run_id = 1 ORDER BY p.position")" \
    "adjacent.a pad_words 3 3 adjacent.b none 3 -"
is "the problems' proposals as the report gave them" \
    "$(sql "SELECT p.data, coalesce(r.remedy, 'none') FROM sim_problems p LEFT JOIN sim_remedies r ON r.run_id = p.run_id AND r.position = p.remedy WHERE p.run_id = 1 ORDER BY p.position")" \
    "$(python3 -c 'import json, sys
w = json.load(open(sys.argv[1]))["what_if"]
print(" ".join("%s %s" % (p["data_name"], "none" if p["best"] is None else w["remedies"][p["best"]]["text"])
               for p in w["problems"]))' "$W/adjacent.json")"
"$MTOOL" history show 1 > "$W/show.txt" 2>&1
if grep -q '^  what-if remedies' "$W/show.txt" &&
    grep -Eq '^  pad adjacent\.a: each 8-byte word on a 64-byte line of its own +0? *6 +6 +-1 ' "$W/show.txt" &&
    grep -Eq '^    proposed: pad adjacent\.[ab]: ' "$W/show.txt" &&
    grep -Eq '^  adjacent\.b +0 +3 +4 +4 +0 ' "$W/show.txt"; then
    ok "history_mp: show lists the remedies, the proposals and the data objects' processors' figures"
else
    not_ok "history_mp: show: $(grep -A3 'what-if' "$W/show.txt" | tr '\n' '|' | cut -c1-300)"
fi
check "history_mp: show lists the threads: thread 1 on CPU 1, 4 references, false 3, inval. 4" \
    "sed -n '/^  per thread/,\$p' '$W/show.txt' | grep -Eq '^ +1 +1 +4 +4 +4 +0 +144 +0 +3 +4 +4 +0 '"
"$MTOOL" history show 2 > "$W/show2.txt" 2>&1
check "history_mp: show of a run without --what-if lists no remedy" \
    "! grep -q 'what-if' '$W/show2.txt'"
check "history_mp: the machine summary names the processors" \
    "grep -q '^  simulated machine: .* cpus=2 ' '$W/show.txt'"
# Both exports: the processors' figures per object (the CSV's columns named
# as the metrics), the JSON's what_if as stored.
"$MTOOL" history export --csv -o "$W/h.csv" 2> "$W/err"
is "CSV: adjacent.b's processors' figures in run 1 and 2, none in the one-CPU run 3" \
    "$(python3 -c 'import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["data_name"] == "adjacent.b"]
print(" ".join("%s:%s/%s/%s" % (r["run"], r["false_sharing"], r["interventions"], r["local_refs"])
               for r in rows))' "$W/h.csv")" "1:3/4/0 2:0/0/1 3://"
"$MTOOL" history export --json -o "$W/h.json" 2> "$W/err"
is "JSON: run 1's what_if as stored (remedies, the first problem's proposal), none in run 2" \
    "$(python3 -c 'import json, sys
runs = json.load(open(sys.argv[1]))
w = runs[0]["simulated"]["what_if"]
pad = [r for r in w["remedies"] if r["text"].startswith("pad adjacent.a:")][0]
b = [d for d in runs[0]["simulated"]["data_objects"] if d["name"] == "adjacent.b"][0]
print(len(w["remedies"]), pad["saved"]["misses"]["D1"], pad["saved"]["cycles"],
      w["remedies"][w["problems"][0]["proposed"]]["kind"], w["problems"][1]["proposed"],
      b["processors"]["invalidations"], runs[1]["simulated"]["what_if"])' "$W/h.json")" \
    "$(sql "SELECT count(*) FROM sim_remedies WHERE run_id = 1") 6 56.0 pad_words None 4 None"
is "JSON: run 1's threads as stored, none in the one-CPU run 3" \
    "$(python3 -c 'import json, sys
runs = json.load(open(sys.argv[1]))
print(" ".join("%d:%d:%d:%d" % (t["thread"], t["cpu"], t["false_sharing"], t["interventions"])
               for t in runs[0]["simulated"]["threads"]), len(runs[2]["simulated"]["threads"]))' "$W/h.json")" \
    "$(sql "SELECT group_concat(thread || ':' || cpu || ':' || false_sharing || ':' || interventions, ' ') FROM (SELECT * FROM sim_threads WHERE run_id = 1 ORDER BY position)") 0"

# The pages of run 1 (the what-if's remedies and proposals) and run 2
# (against run 1: false sharing 3 -> 0 on both fields).
page 1
page 2
check "history_mp: page 2's diff has two objects (adjacent.a and .b)" \
    "grep -q '^ok - its diff against run 1: 2 objects' '$W/page.out'"

# ---- the sample traced on two CPUs -------------------------------------------------------
# Its threads share a line only when their frames interleave: on a loaded
# machine one thread may finish before the other starts, and then the run
# has no false sharing; up to three runs until adjacent is falsely shared.
# --libs none: the sample's own objects are what is compared; glibc traced
# (sim's default) adds objects of its own whose few coherence misses come
# and go with the threads' interleaving (a libc procedure's false sharing
# 0 -> 1 flagged as a regression of the padded build, 1 run in 4).
export MTOOL_HISTORY="$W/sample.db"
cp "$SHARING" "$W/bin/sharing"
for attempt in 1 2 3; do
    "$MTOOL" sim --libs none --set cpus=2 -o "$W/s.txt" -- "$W/bin/sharing" > /dev/null 2> "$W/err" ||
        not_ok "history_mp: sharing traced: $(head -1 "$W/err")"
    adjacent_run=$(sql "SELECT max(id) FROM runs")
    falsely=$(sql "SELECT sum(f.false_sharing) FROM sim_figures f JOIN data_sites d ON d.id = f.data_site_id WHERE f.run_id = $adjacent_run AND d.name LIKE 'adjacent.%'")
    [ "${falsely:-0}" -gt 0 ] && break
done
cp "$SHARING-padded" "$W/bin/sharing"
"$MTOOL" sim --libs none --set cpus=2 -o "$W/p.txt" -- "$W/bin/sharing" > /dev/null 2> "$W/err" ||
    not_ok "history_mp: sharing-padded traced: $(head -1 "$W/err")"
padded_run=$(sql "SELECT max(id) FROM runs")
is "sample: false sharing on adjacent.a/.b in the adjacent build (3 tries)" \
    "$([ "${falsely:-0}" -gt 0 ] && echo yes)" yes
is "sample: none in the padded build" \
    "$(sql "SELECT sum(f.false_sharing + f.true_sharing) FROM sim_figures f JOIN data_sites d ON d.id = f.data_site_id WHERE f.run_id = $padded_run AND d.name LIKE 'adjacent.%'")" 0
"$MTOOL" history diff "$adjacent_run" "$padded_run" --metric false_sharing > "$W/sdiff.txt" 2>&1
if sed -n '/^improved/,/^unchanged/p' "$W/sdiff.txt" | grep -Eq 'adjacent\.[ab] .* -> 0 ' &&
    ! sed -n '/^regressed/,/^improved/p' "$W/sdiff.txt" | grep -q 'adjacent\.'; then
    ok "history_mp: sample diff: adjacent's false sharing improved to 0, not a regression"
else
    not_ok "history_mp: sample diff: $(tr '\n' '|' < "$W/sdiff.txt" | cut -c1-300)"
fi
"$MTOOL" history regressions "$adjacent_run" "$padded_run" --metric false_sharing > "$W/sreg.txt" 2>&1
rc=$?
if [ $rc -eq 1 ] && grep -Eq 'adjacent\.[ab] .* 0 -> [1-9]' "$W/sreg.txt"; then
    ok "history_mp: sample regressions in the reverse order flag adjacent (exit 1)"
else
    not_ok "history_mp: sample reverse regressions: exit $rc: $(tr '\n' '|' < "$W/sreg.txt" | cut -c1-300)"
fi
"$MTOOL" history regressions "$padded_run" "$adjacent_run" --metric false_sharing > /dev/null 2>&1
is "sample: regressions of the padded build by false_sharing: none (exit 0)" "$?" 0
# The padded run's page: its code objects' trend charts with a false-sharing
# point per run of the sample (the adjacent ones above it), the diff.
page "$padded_run"
check "history_mp: the padded run's page has its code objects' trends" \
    "grep -Eq '^ok - the trend points of its code objects \([1-9][0-9]* shown\)' '$W/page.out'"
browser
print_totals
