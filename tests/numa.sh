#!/bin/sh
# tests/numa.sh — nodes and home memory (`mtool sim --nodes=N`;
# docs/SIMULATOR.md, "Nodes"): hand-written din traces (4th column: the
# thread, thread k on CPU k) through tests/numa/two.txt (two CPUs, one per
# node), three.txt (three nodes) and four.txt (two CPUs per node), each
# with where every reference was served worked out by hand (the comments of
# each case); the invariants against one node on a random trace; the shipped
# descriptions read; what is refused; samples/firsttouch.c traced on the
# 2-socket description under first touch, interleave and parallel first
# touch.
#
#   MTOOL=build/asan/mtool SAMPLES_SIM=build/samples-sim sh tests/numa.sh
set -u
MTOOL=${MTOOL:-build/asan/mtool}
SAMPLES_SIM=${SAMPLES_SIM:-build/samples-sim}
TESTS=$(dirname "$0")
HERE=$TESTS/numa
MACHINES=$TESTS/../sim/machines
OUT=$(mktemp -d "${TMPDIR:-/tmp}/mtool-numa.XXXXXX")
trap 'rm -rf "$OUT"' EXIT INT TERM
export XDG_CONFIG_HOME="$OUT/config" MTOOL_HISTORY="$OUT/history.db"

. "$(dirname "$0")/lib.sh"

# expect NAME MACHINE TRACE KEY=VALUE...: the figures (coherence_check.py
# keys: cpuN.served.CLASS, cpuN.FIELD), with $FLAGS added.
FLAGS=
expect() {
    name=$1 machine=$2 trace=$3
    shift 3
    # shellcheck disable=SC2086 # FLAGS: words of their own
    if ! "$MTOOL" sim --machine "$HERE/$machine" --trace "$HERE/$trace" --no-store --json \
        $FLAGS -o "$OUT/r.json" 2> "$OUT/err"; then
        not_ok "numa: $name: $(head -1 "$OUT/err")"
        return
    fi
    if python3 "$TESTS/coherence_check.py" "$OUT/r.json" "$@" > "$OUT/diff"; then
        ok "numa: $name"
    else
        not_ok "numa: $name: $(head -1 "$OUT/diff")"
    fi
}

# C0 writes two lines of page 0x1000 (cold misses: it touches the page
# first, node 0 is its home: local); C1 (node 1) reads two other lines of
# it (never cached: remote memory) and one line of page 0x2000, which it
# touches first (local).  Stall: C0 2 x (200 - 4), C1 2 x (340 - 4) + 196.
expect "local and remote misses under first touch" two.txt placement.din \
    cpu0.served.local=2 cpu0.served.remote=0 cpu1.served.remote=2 cpu1.served.local=1 \
    cpu0.served_stall_cycles=392 cpu1.served_stall_cycles=868 cpu0.node=0 cpu1.node=1

# The same under interleave: page 1 (0x1000) is node 1's, page 2 node 0's,
# whoever touches them first.
FLAGS=--placement=interleave
expect "the same trace under interleave" two.txt placement.din \
    cpu0.served.local=0 cpu0.served.remote=2 cpu1.served.local=2 cpu1.served.remote=1

# Page 0x1000 placed on node 1 by hand, page 0x2000 by first touch.
FLAGS=--place=0x1000-0x2000=1
expect "an explicit placement (--place)" two.txt placement.din \
    cpu0.served.remote=2 cpu0.served.local=0 cpu1.served.local=3 cpu1.served.remote=0
FLAGS=

# C0 writes 0x1000 (local, Modified); C1 on node 1 reads it: C0's cache
# supplies it (an intervention) from the home node, node 0: remote dirty,
# two hops.
expect "remote dirty (an intervention at the home node)" two.txt remote_dirty.din \
    cpu0.served.local=1 cpu1.served.remote_dirty=1 cpu1.served.remote=0 \
    cpu1.interventions=1 cpu0.interventions_served=1 cpu1.served_stall_cycles=396

# Three nodes: C0 reads 0x1000 (home node 0, local, E); C1 writes it (a
# write miss: C0's clean copy invalidated, no intervention; the line from
# node 0's memory: remote); C2 reads it: C1's Modified copy supplies it,
# neither C2's node nor C1's the home: three hops.
expect "three-hop miss" three.txt three_hop.din \
    cpu0.served.local=1 cpu1.served.remote=1 cpu2.served.three_hop=1 \
    cpu2.served.remote_dirty=0 cpu2.interventions=1 cpu1.interventions_served=1 \
    cpu2.served_stall_cycles=496

# C0 reads 0x1000 (local, E); C1 reads it (clean elsewhere: from memory,
# remote; both S); C1 writes it (a hit in its L1: an upgrade, C0's copy and
# node 0's L2 copy invalidated); C0 reads it again: C1's Modified copy,
# with C0's node the home: remote dirty.
expect "upgrade, then the writer's copy read back" two.txt upgrade.din \
    cpu0.served.local=1 cpu0.served.remote_dirty=1 cpu1.served.remote=1 cpu1.served.L1=1 \
    cpu1.upgrades=1 cpu0.invalidations_received.D1=1 cpu0.true_sharing=1

# Two CPUs per node: C0 writes 0x1000 (local); C1, same node, reads it
# (C0's Modified copy, in the node: node); C0 reads 0x2000 (local, into
# node 0's L2); C1 reads it (clean, E at C0: node 0's L2 has it: node); C2
# on node 1 reads 0x1040, a line never cached of node 0's page (remote).
expect "served in the node (its L2, or a cache of the node)" four.txt node.din \
    cpu0.served.local=2 cpu1.served.node=2 cpu1.served.local=0 cpu2.served.remote=1 \
    cpu1.interventions=1 cpu1.node=0 cpu2.node=1 cpu3.node=1

# C0 reads 0x1000 (local, into node 0's L2) then two lines of its D1 set
# (it leaves C0's D1); C1 writes 0x1000 (remote, node 0's L2 copy
# invalidated) and two lines of its set (remote; the Modified line leaves,
# written back); C0 reads 0x1000: not from node 0's stale L2 copy: local.
expect "a write invalidates the other node's shared copy" two.txt stale_write.din \
    cpu0.served.local=4 cpu0.served.node=0 cpu1.served.remote=3

# C1 reads 0x1000 (first touch: node 1's) and two lines of its set; C0
# reads the three (remote; 0x1000 into node 0's L2, then out of C0's D1);
# C1 reads 0x1000 (its node's L2: node; E, no other holder) and writes it
# (silently, E to M: node 0's L2 copy invalidated all the same), then reads
# two lines of its set (node) and the Modified line leaves; C0 reads
# 0x1000: remote memory, not node 0's stale copy.
expect "a silent write (E to M) invalidates the other node's copy" two.txt stale_silent.din \
    cpu0.served.remote=4 cpu0.served.node=0 cpu1.served.local=3 cpu1.served.node=3 \
    cpu1.served.L1=1

# Invariants on a random trace of two threads: per CPU the classes sum to
# its references; the private levels' classes (L1, private) and the sum of
# the others do not depend on the nodes; one node has no remote class.
python3 -c 'import random
r = random.Random(17)
for _ in range(20000):
    print(r.choice("01"), hex(0x10000 + r.randrange(40000)), r.choice("1248"), r.choice("01"))' \
    > "$OUT/random.din"
"$MTOOL" sim --machine "$HERE/two.txt" --trace "$OUT/random.din" --no-store --json \
    -o "$OUT/two.json" 2> "$OUT/err"
"$MTOOL" sim --machine "$HERE/two.txt" --nodes=1 --trace "$OUT/random.din" --no-store --json \
    -o "$OUT/one.json" 2>> "$OUT/err"
if python3 -c 'import json, sys
two, one = (json.load(open(p))["processors"]["per_cpu"] for p in sys.argv[1:])
bad = []
for a, b in zip(two, one):
    for c in (a, b):
        if sum(c["served"].values()) != c["refs"]:
            bad.append("cpu %d: classes sum to %d of %d refs" % (c["cpu"], sum(c["served"].values()), c["refs"]))
    for k in ("L1", "private"):
        if a["served"][k] != b["served"][k]:
            bad.append("cpu %d: %s %d with two nodes, %d with one" % (a["cpu"], k, a["served"][k], b["served"][k]))
    beyond = lambda c: sum(v for k, v in c["served"].items() if k not in ("L1", "private"))
    if beyond(a) != beyond(b):
        bad.append("cpu %d: beyond the private levels %d against %d" % (a["cpu"], beyond(a), beyond(b)))
    if b["served"]["remote"] + b["served"]["remote_dirty"] + b["served"]["three_hop"]:
        bad.append("cpu %d: remote classes on one node" % b["cpu"])
    if not a["served"]["remote"]:
        bad.append("cpu %d: no remote reference with two nodes" % a["cpu"])
print("; ".join(bad))
sys.exit(bool(bad))' "$OUT/two.json" "$OUT/one.json" > "$OUT/diff" 2>&1; then
    ok "numa: classes sum to the references; the private levels do not depend on the nodes"
else
    not_ok "numa: random trace: $(head -1 "$OUT/diff") $(head -1 "$OUT/err")"
fi

# --print-machine writes the node settings; the description read back is the same.
"$MTOOL" sim --machine "$HERE/two.txt" --place=0x1000-0x2000=1 --placement=interleave \
    --print-machine > "$OUT/printed.txt" 2> "$OUT/err"
"$MTOOL" sim --machine "$OUT/printed.txt" --print-machine > "$OUT/again.txt" 2>> "$OUT/err"
if cmp -s "$OUT/printed.txt" "$OUT/again.txt" &&
    grep -q '^place = 0x1000-0x2000=1$' "$OUT/printed.txt" &&
    grep -q '^placement = interleave$' "$OUT/printed.txt" &&
    grep -q '^latency.three_hop = 500$' "$OUT/printed.txt"; then
    ok "numa: the node settings printed and read back"
else
    not_ok "numa: --print-machine: $(head -1 "$OUT/err")"
fi

# The shipped descriptions are read and run (the 2-socket's ratio of remote
# to local memory, the DSM's three-hop above its remote dirty).
for m in this-machine two-socket dsm; do
    if "$MTOOL" sim --machine "$MACHINES/$m.txt" --trace "$HERE/three_hop.din" --no-store \
        --json -o "$OUT/$m.json" 2> "$OUT/err"; then
        ok "numa: sim/machines/$m.txt runs"
    else
        not_ok "numa: sim/machines/$m.txt: $(head -1 "$OUT/err")"
    fi
done
if python3 -c 'import json, sys
l = lambda m: json.load(open(sys.argv[1] + "/" + m + ".json"))["processors"]["latency_cycles"]
t, d = l("two-socket"), l("dsm")
ok = 1.4 <= t["remote"] / t["local"] <= 2.2 and d["three_hop"] > d["remote_dirty"] > d["remote"] > d["local"]
sys.exit(not ok)' "$OUT"; then
    ok "numa: the shipped latencies: remote 1.4-2.2x local (2-socket); three-hop > remote dirty > remote > local (DSM)"
else
    not_ok "numa: the shipped latencies"
fi

# What is refused, with a one-line error and no report.
refuse() {
    name=$1 want=$2
    shift 2
    refused "numa: $name" "$want" "$OUT/none.txt" "$MTOOL" sim --machine "$HERE/two.txt" \
        --trace "$HERE/placement.din" --no-store -o "$OUT/none.txt" "$@"
}
refuse "more nodes than CPUs" "more nodes than cpus" --nodes=3
refuse "nodes = 0" "nodes: expected" --nodes=0
refuse "a page of no power of two" "page: expected" --set page=3000
refuse "a page below the line" "less than D1's line" --set page=32
refuse "an unknown placement" "placement: expected" --placement=random
refuse "a range upside down" "place: expected" --place=0x2000-0x1000=1
refuse "a range on no node" "place: node 5, of nodes = 2" --place=0x1000-0x2000=5
refuse "an unknown latency class" "latency.memory: expected" --set latency.memory=100
refuse "a latency of no number" "latency.local: expected" --set latency.local=fast
printf 'version = 1\nD1 = 256,2,64\ncpus = 2\nnodes = two\n' > "$OUT/bad.txt"
refuse "a description's bad line" "bad.txt:4: nodes: expected" --machine "$OUT/bad.txt"

# samples/firsttouch.c traced on the 2-socket description, main and the two
# workers on CPUs 0, 1 (node 0) and 2 (node 1); its L3 cut to 2 MiB per
# socket so that the 16 MiB array does not stay in main's socket (the
# real 27.5 MiB would hold it: then a 64 MiB array, four times the
# references, would show the same).  The array's references per CPU
# (by_cpu of the data object `array`), in lines (131072 per slice):
#  - serial, first touch: every page node 0's: the node-1 worker's first
#    reference to each line of its slice is remote (or remote dirty: the
#    lines main's L2 still holds Modified), the node-0 worker's none;
#  - serial, interleave: every thread's memory references half local, half
#    remote (pages alternate; main's own writes too);
#  - parallel first touch: each worker's pages its own node's: no remote.
# Threads' frames are merged as they arrive (up to 4095 references each):
# main's last frame of writes may come after a worker's first reads, so a
# page may be touched "first" by a worker: every figure within one frame.
FT=$SAMPLES_SIM/firsttouch-gcc-O2
if [ ! -x "$FT" ]; then
    not_ok "numa: $FT not built (make samples)"
    exit 0
fi
firsttouch() {
    name=$1 mode=$2 check=$3
    shift 3
    "$FT" "$mode" > "$OUT/plain.out"
    if ! "$MTOOL" sim --machine "$MACHINES/two-socket.txt" --cpu-map=0,1,2 --L3=2M,16,64 \
        "$@" --no-store --json -o "$OUT/ft.json" -- "$FT" "$mode" > "$OUT/traced.out" \
        2> "$OUT/err" || ! cmp -s "$OUT/plain.out" "$OUT/traced.out"; then
        not_ok "numa: firsttouch $name: $(head -1 "$OUT/err")"
        return
    fi
    if python3 -c 'import json, sys
p = json.load(open(sys.argv[1]))["processors"]
row = next(r for r in p["served_data_objects"] if r["name"] == "array")
cpu = {c["cpu"]: c["served"] for c in row["by_cpu"]}
FRAME, SLICE = 4095, 131072
far = lambda c: cpu[c]["remote"] + cpu[c]["remote_dirty"] + cpu[c]["three_hop"]
half = lambda c: abs(cpu[c]["remote"] - cpu[c]["local"]) <= FRAME and cpu[c]["remote"] > 0
checks = {
    "first-touch": lambda: [("node-0 worker remote", far(1) <= FRAME),
                            ("node-1 worker remote", abs(far(2) - SLICE) <= FRAME),
                            ("main local", abs(cpu[0]["local"] - 2 * SLICE) <= FRAME)],
    "interleave": lambda: [("cpu %d half remote" % c, half(c)) for c in (0, 1, 2)],
    "parallel": lambda: [("cpu %d remote" % c, far(c) == 0) for c in (1, 2)]
                        + [("cpu %d local" % c, cpu[c]["local"] == 2 * SLICE) for c in (1, 2)]
                        + [("main no reference", 0 not in cpu)],
}[sys.argv[2]]()
bad = [n for n, good in checks if not good]
print("; ".join(bad), {c: cpu[c] for c in cpu})
sys.exit(bool(bad))' "$OUT/ft.json" "$check" > "$OUT/diff" 2>&1; then
        ok "numa: firsttouch $name"
    else
        not_ok "numa: firsttouch $name: $(head -c 600 "$OUT/diff")"
    fi
}
firsttouch "serial, first touch: the node-1 worker's slice remote" serial first-touch
firsttouch "serial, interleave: half of every thread's misses remote" serial interleave \
    --placement=interleave
firsttouch "parallel first touch: no remote reference" parallel parallel
print_totals
