#!/bin/sh
# tests/mempolicy.sh — the program's own placement (docs/SIMULATOR.md, "The
# program's placement"): a hand-written din trace with placement lines, one
# reference per transition, where each was served worked out by hand;
# malformed placement lines refused; samples/mempolicy.c (set_mempolicy,
# mbind and move_pages through syscall(), and through libnuma when built)
# traced on two nodes, its output and exit status the uninstrumented run's,
# its array's pages where the calls asked (counted by hand in the sample);
# samples/handoff.c's true-sharing misses against its own count of the
# times its counter changed hands (the threads' merge order).
#
#   MTOOL=build/asan/mtool SAMPLES_SIM=build/samples-sim sh tests/mempolicy.sh
set -u
MTOOL=${MTOOL:-build/asan/mtool}
SAMPLES_SIM=${SAMPLES_SIM:-build/samples-sim}
TESTS=$(dirname "$0")
HERE=$TESTS/mempolicy
TWO=$TESTS/numa/two.txt
OUT=$(mktemp -d "${TMPDIR:-/tmp}/mtool-mempolicy.XXXXXX")
trap 'rm -rf "$OUT"' EXIT INT TERM
export XDG_CONFIG_HOME="$OUT/config" MTOOL_HISTORY="$OUT/history.db"

. "$(dirname "$0")/lib.sh"

# tests/numa/two.txt: thread k on CPU k, CPU k on node k; every reference of
# transitions.din is to a line never referenced before, so it is served by
# the memory of its page's home: local or remote.  Thread 0 (node 0):
#   bind {1}, 0x1000 first touched: node 1, remote;  default, 0x2000: local;
#   0x2000 moved to node 1, 0x2040 (same page): remote;  0x9000 moved before
#   its first touch (nothing moves), then touched: local;  0x1000's page
#   bound to {0} with move: node 0, 0x1040 local;  0xa000 bound to
#   interleave {1}: remote;  bind {2} (no node 2 of 2): ignored, 0xb000 local.
# Thread 1 (node 1): interleave {0,1}: its pages by turns from node 0:
#   0x3000 remote, 0x4000 local, 0x5000 remote;  preferred {} (local):
#   0x6000 local;  0x7000-0x9000 bound to {0}: 0x7000 remote;  0x8000's page
#   back to default: the thread's policy, local.
if "$MTOOL" sim --machine "$TWO" --trace "$HERE/transitions.din" --no-store --json \
    -o "$OUT/t.json" 2> "$OUT/err" &&
    python3 "$TESTS/coherence_check.py" "$OUT/t.json" cpu0.served.local=4 \
        cpu0.served.remote=3 cpu1.served.local=3 cpu1.served.remote=3 cpu0.refs=7 \
        cpu1.refs=6 > "$OUT/diff"; then
    ok "mempolicy: every transition of transitions.din where worked out by hand"
else
    not_ok "mempolicy: transitions.din: $(head -1 "$OUT/diff" "$OUT/err" 2> /dev/null | tr '\n' ' ')"
fi

# Malformed placement lines: a one-line error naming the file and line, no report.
refuse() {
    name=$1 line=$2 want=$3
    printf '0 1000 8 0\n%s\n' "$line" > "$OUT/bad.din"
    refused "mempolicy: $name" "bad.din:2: $want" "$OUT/none.json" "$MTOOL" sim --machine "$TWO" \
        --trace "$OUT/bad.din" --no-store --json -o "$OUT/none.json"
}
refuse "an unknown mode" "mempolicy often 1" "expected a mode"
refuse "a mask of no hex digit" "mempolicy bind x" "expected a hexadecimal node mask"
refuse "text after mbind" "mbind 1000 1000 bind 1 moved" "unexpected text after mbind"
refuse "move_pages without a node" "move_pages 1000" "expected a decimal node"
refuse "a thread of no number" "mempolicy local 0 t" "expected a decimal thread"

# samples/mempolicy.c on two nodes: its array's 8 pages x 64 lines, each
# line written once then read once, every reference a miss (two.txt's D1
# and L2 hold 20 lines); homes 1 1 0 1 1 0 0 0 when written (pages 5 and 6
# moved to node 1 afterwards), 1 1 0 1 1 1 1 0 when read: written 256
# local, 256 remote; read 128 local, 384 remote.  Then a thread (the
# second: node 1) created under main's set_mempolicy(PREFERRED, {0}) writes
# the 2 pages of `spawned`: it inherits the policy, 128 remote (merged as
# the frames arrive, main's later set_mempolicy(DEFAULT) came first: 128
# local; and so it was with glibc traced, whose records inside
# pthread_create kept main's frame open past it, until the runtime sent
# that frame after the call too: frame_cut).
sample() {
    name=$1 bin=$SAMPLES_SIM/$2
    if [ ! -x "$bin" ]; then
        if [ "$3" = optional ]; then
            ok "mempolicy: $name # SKIP $bin not built (libnuma-dev missing)"
        else
            not_ok "mempolicy: $name: $bin not built (make samples)"
        fi
        return
    fi
    "$bin" > "$OUT/plain.out" 2> "$OUT/plain.err"
    plain=$?
    "$MTOOL" sim --machine "$TWO" --no-store --json -o "$OUT/s.json" -- "$bin" \
        > "$OUT/traced.out" 2> "$OUT/err"
    traced=$?
    if [ $plain -ne $traced ] || ! cmp -s "$OUT/plain.out" "$OUT/traced.out"; then
        not_ok "mempolicy: $name: the traced run differs (exit $plain, $traced): $(head -1 "$OUT/err")"
        return
    fi
    ok "mempolicy: $name: output, return values, errno and exit status unchanged"
    if python3 -c 'import json, sys
p = json.load(open(sys.argv[1]))["processors"]
rows = {r["name"]: r for r in p["served_data_objects"]}
want = {"array": {"local": 384, "remote": 640, "L1": 0, "private": 0, "node": 0},
        "spawned": {"local": 0, "remote": 128, "L1": 0, "private": 0, "node": 0}}
bad = {(o, k): (rows[o]["served"][k], v) for o in want for k, v in want[o].items()
       if rows[o]["served"][k] != v}
print(bad)
sys.exit(bool(bad))' "$OUT/s.json" > "$OUT/diff" 2>&1; then
        ok "mempolicy: $name: the pages on the nodes asked (array 384 local, 640 remote; spawned 128 remote)"
    else
        not_ok "mempolicy: $name: (got, want) $(head -c 300 "$OUT/diff")"
    fi
}
sample "syscall()" mempolicy-gcc-O2 required
sample "libnuma" mempolicy-gcc-O2-libnuma optional

# The threads' merge against the program's own account (docs/SIMULATOR.md,
# "The order of a traced run's threads"): samples/handoff.c counts the times
# its shared counter changed hands in this very run; merged in the order
# the threads ran, the simulation's true-sharing misses on `counter` are
# that count (one per change of hands).  Allowed: 5 + a quarter (a frame
# whose thread stopped in it is ordered at the frame's grain); merged as
# the frames arrive, a run of 183 changes gave 3.
HANDOFF=$SAMPLES_SIM/handoff-gcc-O2
if [ ! -x "$HANDOFF" ]; then
    not_ok "mempolicy: $HANDOFF not built (make samples)"
    exit 0
fi
# A thread stopped by the scheduler inside a frame is placed at its fastest
# pace, so a run on a busy machine may interleave the frames too finely
# (CI, a parallel build: 2 changes of hands, 80 simulated): up to three
# runs, one must agree; an order that ignores the stamps agrees in none.
handoff_once() {
    "$MTOOL" sim --set cpus=2 --no-store --json -o "$OUT/h.json" -- "$HANDOFF" \
        > "$OUT/h.out" 2> "$OUT/err" && python3 -c 'import json, re, sys
p = json.load(open(sys.argv[1]))["processors"]
rows = {r["name"]: r for r in p["data_objects"]}
sim = rows.get("counter", {}).get("true_sharing", 0)
real = int(re.search(r"changed hands (\d+) times", open(sys.argv[2]).read()).group(1))
print("program %d, simulated %d" % (real, sim))
sys.exit(abs(sim - real) > 5 + real / 4)' "$OUT/h.json" "$OUT/h.out" >> "$OUT/diff" 2>&1
}
: > "$OUT/diff"
if handoff_once || handoff_once || handoff_once; then
    ok "mempolicy: handoff: true sharing on counter as often as it changed hands ($(tr '\n' ';' < "$OUT/diff"))"
else
    not_ok "mempolicy: handoff: $(tr '\n' ';' < "$OUT/diff") $(head -1 "$OUT/err")"
fi
print_totals
