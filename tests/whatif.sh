#!/bin/sh
# tests/whatif.sh — what-if remedies (`mtool sim --what-if`;
# docs/SIMULATOR.md, "What-if remedies"): hand-written din traces in
# tests/whatif/ (4th column: the thread, thread k on CPU k), each remedy's
# saving worked out by hand in the comments; what is refused;
# samples/sharing.c traced, its proposed padding checked against the sample
# rebuilt with that padding (-DPAD_ADJACENT) and traced again.
#
#   MTOOL=build/asan/mtool SAMPLES_SIM=build/samples-sim sh tests/whatif.sh
set -u
MTOOL=${MTOOL:-build/asan/mtool}
SAMPLES_SIM=${SAMPLES_SIM:-build/samples-sim}
TESTS=$(dirname "$0")
HERE=$TESTS/whatif
OUT=$(mktemp -d "${TMPDIR:-/tmp}/mtool-whatif.XXXXXX")
trap 'rm -rf "$OUT"' EXIT INT TERM
export XDG_CONFIG_HOME="$OUT/config" MTOOL_HISTORY="$OUT/history.db"

. "$TESTS/lib.sh"

# expect NAME MACHINE TRACE KEY=VALUE...: whatif_check.py's figures.
expect() {
    name=$1 machine=$2 trace=$3
    shift 3
    if ! "$MTOOL" sim --machine "$HERE/$machine" --trace "$HERE/$trace" --no-store --json \
        --what-if -o "$OUT/r.json" 2> "$OUT/err"; then
        not_ok "whatif: $name: $(head -1 "$OUT/err")"
        return
    fi
    if python3 "$TESTS/whatif_check.py" "$OUT/r.json" exact=true "$@" > "$OUT/diff"; then
        ok "whatif: $name"
    else
        not_ok "whatif: $name: $(head -1 "$OUT/diff")"
    fi
}

# False sharing (mp.txt: two CPUs, private D1 of 2 sets x 2 ways and L2,
# a shared L3; latencies L1 4, private 14, node 40, local 200): C0 writes
# 0x5000, C1 0x5008 (one line), four times each.  The run: the first two
# writes cold at D1 and L2 (C0's from memory, local; C1's from C0's
# Modified copy, an intervention in the node), the next six coherence
# misses at D1 and L2, false sharing, each an intervention (node): D1 8, L2
# 8, L3 1; stall 1 x (200-4) + 7 x (40-4) = 448.  Padded (each word on a
# line of its own): two cold misses at every level, both from memory, then
# hits: D1 2, L2 2, L3 2, stall 2 x 196 = 392.  Saved: D1 6, L2 6, L3 -1,
# coherence 6 + 6, false sharing 6, 56 cycles; the padding is proposed.
# A line of 32 or 128 bytes keeps both words on one line: nothing saved.
expect "false sharing: padding saves the 6 coherence misses" mp.txt false_sharing.din \
    run.misses.D1.total=8 run.misses.D1.coherence=6 run.false_sharing=6 run.cycles=448 \
    remedy:pad_words.figures.misses.D1.total=2 remedy:pad_words.figures.misses.L3.total=2 \
    remedy:pad_words.saved.misses.D1.coherence=6 remedy:pad_words.saved.misses.L2.coherence=6 \
    remedy:pad_words.saved.misses.L3.total=-1 remedy:pad_words.saved.false_sharing=6 \
    remedy:pad_words.saved.cycles=56 remedy:line32.saved.cycles=0 \
    remedy:line128.saved.misses.D1.total=0 \
    problem0.figures.false_sharing=6 best0.kind=pad_words best0.saved.cycles=56

# True sharing: both CPUs write 0x5000, four times each: D1 8 (2 cold, 6
# coherence, true).  Padding moves the one word to a line of its own, still
# one line for both: the same 8 misses, nothing saved, nothing proposed.
expect "true sharing: padding saves nothing and is not proposed" mp.txt true_sharing.din \
    run.true_sharing=6 run.false_sharing=0 remedy:pad_words.saved.misses.D1.total=0 \
    remedy:pad_words.saved.true_sharing=0 remedy:pad_words.saved.cycles=0 best0=null

# Conflicts at a power-of-two stride (uni.txt: one CPU, D1 256 bytes, 2
# ways: 2 sets, a way 128 bytes; L2 4 sets x 4 ways, L3 16 x 4): rows at
# 0x10000, 0x10100, 0x10200 (stride 256, two ways' worth) read three times
# round.  Their lines 0x400, 0x404, 0x408 all fall in D1's set 0: LRU over
# 2 ways misses all 9 (3 cold, 6 conflict: a fully associative D1 of 4
# lines holds the 3); L2 (set 0, 4 ways) and L3 (sets 0, 4, 8) take the 3
# cold ones.  Stall: 6 served by L2 x (14-4) + 3 from memory x (200-4) =
# 648.  The stride the rows moved by most is 256 (6 times; 512 twice): a
# line after every 256 bytes puts them at 0, 320, 640 past a line-aligned
# base, lines +0, +5, +10: D1 sets 0, 1, 0, no conflict: D1 3 cold, L2 and
# L3 3 cold; stall 3 x 196 = 588: saved 6 conflict misses, 60 cycles,
# proposed.  Each word on its own line puts them 32 lines apart: set 0
# still, nothing saved.  Lines of 32 bytes: D1's 4 sets, lines 0x800,
# 0x808, 0x810 all set 0: the same 9 misses.  Lines of 128 bytes: D1 is
# one set: the 6 conflict misses become capacity misses, none saved.
expect "conflicts at a power-of-two stride: padding the rows removes them" uni.txt conflict.din \
    run.misses.D1.total=9 run.misses.D1.conflict=6 run.cycles=648 \
    remedy:pad_rows.row=256 remedy:pad_rows.saved.misses.D1.conflict=6 \
    remedy:pad_rows.figures.misses.D1.total=3 remedy:pad_rows.saved.cycles=60 \
    remedy:pad_words.saved.misses.D1.total=0 remedy:line32.saved.misses.D1.total=0 \
    remedy:line128.saved.misses.D1.conflict=6 remedy:line128.saved.misses.D1.capacity=-6 \
    remedy:line128.saved.cycles=0 best0.kind=pad_rows best0.saved.misses.D1.conflict=6

# Remote references (nodes.txt: two CPUs, one per node, D1 private, an L2
# per node; local 200, remote 340): C0 writes the first line of pages
# 0x10000..0x13000 (it touches them first: all node 0's under first touch)
# and reads a line of pages 0x10000 and 0x11000; C1 (node 1) reads two
# lines of pages 0x12000 and 0x13000.  Every reference is a line's first:
# from memory.  First touch: C0 6 local, C1 4 remote: stall 6 x 196 + 4 x
# 336 = 2520.  Owner-computes homes pages 0x12000 and 0x13000 on node 1 (2
# references from it, 1 from node 0), the others on node 0: C0's two writes
# there are remote, C1's four reads local: 2 remote, 2240 cycles, saves 2
# remote references and 280 cycles (proposed).  Interleave homes pages 0x10
# and 0x12 on node 0, 0x11 and 0x13 on node 1: C0 3 remote (0x11000 twice,
# 0x13000), C1 2 (0x12000's lines): 5 remote, 2660 cycles: -1 and -140.
# Threads share no line: no mapping is tried.
expect "remote placement: owner-computes saves 2 remote references, interleave -1" \
    nodes.txt placement.din \
    run.remote=4 run.cycles=2520 remedy:owner-computes.saved.remote=2 \
    remedy:owner-computes.figures.remote=2 remedy:owner-computes.saved.cycles=280 \
    remedy:interleave.saved.remote=-1 remedy:interleave.saved.cycles=-140 \
    remedy:mapping=absent best0.placement=owner-computes best0.saved.remote=2

# Thread mapping (four.txt: four CPUs, CPUs 0 and 1 on node 0, 2 and 3 on
# node 1; thread k on CPU k): threads 0 and 2 write 0x5000 in turn, threads
# 1 and 3 0x6000, twice each.  As run, each pair straddles the nodes: per
# line one cold write from local memory (node 0 touched both pages first)
# then 3 interventions by the other node's Modified copy with node 0 the
# home: remote dirty (two hops): 6 remote, stall 2 x 196 + 6 x 396 = 2768.
# The mapping puts the threads that share a line on one node (0 and 2 on
# node 0's CPUs 0 and 1, then 1 and 3 on CPUs 2 and 3): the interventions
# are in the node (40), thread 1 touches 0x6000's page first from node 1
# (local): 0 remote, 2 x 196 + 6 x 36 = 608: saves 6 remote references and
# 2160 cycles (proposed).  Owner-computes: each page referenced twice from
# each node, node 1 last: both pages homed there, thread 0's and thread 1's
# first writes remote (2 x 336) and the interventions still remote dirty (6
# x 396): 8 remote, 3048 cycles: -2 and -280.
expect "thread mapping: the sharing threads on one node" four.txt mapping.din \
    run.remote=6 run.cycles=2768 remedy:mapping.cpu_map.0=0 remedy:mapping.cpu_map.1=2 \
    remedy:mapping.cpu_map.2=1 remedy:mapping.cpu_map.3=3 remedy:mapping.saved.remote=6 \
    remedy:mapping.saved.cycles=2160 remedy:owner-computes.saved.remote=-2 \
    remedy:owner-computes.saved.cycles=-280 best0.kind=mapping

# The text report names the proposal under each problem.
if "$MTOOL" sim --machine "$HERE/mp.txt" --trace "$HERE/false_sharing.din" --no-store --what-if \
    > "$OUT/r.txt" 2> "$OUT/err" &&
    grep -q "^    proposed: pad data object 0: each 8-byte word" "$OUT/r.txt"; then
    ok "whatif: the text report proposes the padding"
else
    not_ok "whatif: text report: $(head -1 "$OUT/err")"
fi

# What is refused, with a one-line error and no report.
refuse() {
    name=$1 want=$2
    shift 2
    refused "whatif: $name" "$want" "$OUT/none.txt" "$MTOOL" sim --machine "$HERE/mp.txt" \
        --trace "$HERE/false_sharing.din" --no-store --what-if -o "$OUT/none.txt" "$@"
}
refuse "--what-if with --misses-only" "without --misses-only and sampling" --misses-only
refuse "--what-if with set sampling" "without --misses-only and sampling" --sample-sets 1/2

# samples/sharing.c traced on two CPUs (this machine's levels and latencies,
# sim/machines/this-machine.txt): its adjacent counters falsely shared, the
# padding of adjacent.a or adjacent.b proposed for them and predicted to
# leave no coherence miss; the shared `total` (true sharing) gets no padding.
# Then the sample rebuilt with adjacent's fields a line apart
# (-DPAD_ADJACENT) and traced: its misses on adjacent.a and .b are the
# predicted ones within 2 per level (threads are merged frame by frame as
# they arrive: a frame boundary more or less moves a miss or two; the
# predicted and the rebuilt both measured 2 at D1, L2 and L3 on the Xeon
# family 6 model 207).
SHARING=$SAMPLES_SIM/sharing-gcc-O2
if [ ! -x "$SHARING" ] || [ ! -x "$SHARING-padded" ]; then
    not_ok "whatif: $SHARING and $SHARING-padded not built (make samples)"
    print_totals
    exit
fi
MACHINE="$TESTS/../sim/machines/this-machine.txt"
"$SHARING" > "$OUT/plain.out"
# The threads' frames are merged as they arrive: on a loaded machine one
# thread can end a phase before the other sends a frame, and then nothing is
# shared in that run; up to three runs until adjacent is falsely shared.
falsely_shared() {
    python3 -c 'import json, sys
w = json.load(open(sys.argv[1]))["what_if"]
sys.exit(not any(p["data_name"].startswith("adjacent.") and p["figures"]["false_sharing"]
                 for p in w["problems"]))' "$OUT/sharing.json"
}
traced_sharing() {
    "$MTOOL" sim --machine "$MACHINE" --no-store --json --what-if -o "$OUT/sharing.json" \
        -- "$SHARING" > "$OUT/traced.out" 2> "$OUT/err" && cmp -s "$OUT/plain.out" "$OUT/traced.out"
}
for _ in 1 2 3; do
    traced=false
    traced_sharing || break
    traced=true
    falsely_shared && break
done
if $traced && "$MTOOL" sim --machine "$MACHINE" --no-store --json -o "$OUT/padded.json" \
        -- "$SHARING-padded" > "$OUT/traced.out" 2> "$OUT/err" &&
    cmp -s "$OUT/plain.out" "$OUT/traced.out"; then
    ok "whatif: sharing and its padded build traced, their output unchanged"
else
    not_ok "whatif: sharing traced: $(head -1 "$OUT/err")"
fi
if python3 - "$OUT/sharing.json" "$OUT/padded.json" > "$OUT/diff" 2>&1 <<'EOF'; then
import json, sys
w = json.load(open(sys.argv[1]))["what_if"]
rebuilt = json.load(open(sys.argv[2]))
problems = []
adjacent = [i for i, p in enumerate(w["problems"]) if p["data_name"].startswith("adjacent.")]
total = [i for i, p in enumerate(w["problems"]) if p["data_name"] == "total"]
if not w["exact"]:
    problems.append("the unchanged replay differs from the run")
if not adjacent or any(w["problems"][i]["figures"]["false_sharing"] == 0 for i in adjacent):
    problems.append("no false sharing on adjacent.a/b among the problems")
for i in total:
    best = w["problems"][i]["best"]
    if best is not None and w["remedies"][best]["kind"].startswith("pad"):
        problems.append(f"a padding proposed for total: {w['remedies'][best]['text']}")
levels = [l for l in w["run"]["misses"]]
if adjacent:
    best = w["problems"][adjacent[0]]["best"]
    remedy = w["remedies"][best] if best is not None else None
    if not remedy or remedy["kind"] != "pad_words" or not remedy["data_name"].startswith("adjacent."):
        problems.append(f"adjacent's proposal is {remedy and remedy['text']}")
    else:
        predicted = {l: 0 for l in levels}
        for i in adjacent:
            base, saved = w["problems"][i]["figures"], w["problems"][i]["saved"][best]
            if base["false_sharing"] - saved["false_sharing"] + base["true_sharing"] - saved["true_sharing"]:
                problems.append(f"{w['problems'][i]['data_name']}: coherence misses left after padding")
            for l in levels:
                predicted[l] += base["misses"][l]["total"] - saved["misses"][l]["total"]
        measured = {l: 0 for l in levels}
        for c in rebuilt["code_data"]:
            if c["data_name"] in ("adjacent.a", "adjacent.b"):
                for l in levels:
                    measured[l] += sum(c["misses"][l].values())
        for l in levels:
            if abs(predicted[l] - measured[l]) > 2:
                problems.append(f"{l}: predicted {predicted[l]}, rebuilt {measured[l]}")
        print(f"predicted {predicted}, rebuilt {measured}")
print("; ".join(problems))
sys.exit(bool(problems))
EOF
    ok "whatif: sharing: padding adjacent predicted as the rebuilt program misses ($(head -1 "$OUT/diff"))"
else
    not_ok "whatif: sharing: $(tail -1 "$OUT/diff")"
fi
print_totals
