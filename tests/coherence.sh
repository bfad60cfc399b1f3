#!/bin/sh
# tests/coherence.sh — processors and coherence (`mtool sim --set cpus=N`;
# docs/SIMULATOR.md, "Processors"): hand-written din traces whose 4th column
# names the thread, through tests/coherence/machine.txt (two CPUs, private
# D1 and L2, shared L3), each with the MESI transitions, invalidations,
# interventions, upgrades and true/false sharing misses worked out by hand
# (the comments of each case); one CPU unchanged by the thread column; two
# CPUs with one thread giving the uniprocessor's misses; what is refused;
# samples/sharing.c traced on two CPUs (glibc with it by default: the
# program's own code objects make the same references as with --libs none).
#
#   MTOOL=build/asan/mtool SAMPLES_SIM=build/samples-sim sh tests/coherence.sh
set -u
MTOOL=${MTOOL:-build/asan/mtool}
SAMPLES_SIM=${SAMPLES_SIM:-build/samples-sim}
HERE=$(dirname "$0")/coherence
OUT=$(mktemp -d "${TMPDIR:-/tmp}/mtool-coherence.XXXXXX")
trap 'rm -rf "$OUT"' EXIT INT TERM
export XDG_CONFIG_HOME="$OUT/config" MTOOL_HISTORY="$OUT/history.db"

. "$(dirname "$0")/lib.sh"

# expect NAME TRACE KEY=VALUE...: the trace's figures (coherence_check.py
# keys), with $FLAGS added to the command line.
FLAGS=
expect() {
    name=$1 trace=$2
    shift 2
    # shellcheck disable=SC2086 # FLAGS: words of their own
    if ! "$MTOOL" sim --machine "$HERE/machine.txt" --trace "$HERE/$trace" --no-store --json $FLAGS \
        -o "$OUT/r.json" 2> "$OUT/err"; then
        not_ok "coherence: $name: $(head -1 "$OUT/err")"
        return
    fi
    if python3 "$(dirname "$0")/coherence_check.py" "$OUT/r.json" "$@" > "$OUT/diff"; then
        ok "coherence: $name"
    else
        not_ok "coherence: $name: $(head -1 "$OUT/diff")"
    fi
}

# C0 writes word 0 (cold, M); C1 reads it (cold; C0's M supplies it: an
# intervention, both S); C1 writes word 1 (an upgrade: C0's copy invalidated
# in D1 and L2); C0 reads word 0 (a coherence miss, false: only word 1 was
# written; C1's M supplies it); C0 writes word 0 (an upgrade, C1
# invalidated); C1 reads word 0 (coherence, true: C0 wrote it; intervention).
# Per object (the trace names none: code and data object 0) the same events,
# each counted against the reference that caused it.
expect "intervention, upgrade, false then true sharing" protocol.din \
    cpu0.misses.D1.cold=1 cpu0.misses.D1.coherence=1 cpu0.misses.L2.coherence=1 \
    cpu1.misses.D1.cold=1 cpu1.misses.D1.coherence=1 \
    cpu0.false_sharing=1 cpu0.true_sharing=0 cpu1.true_sharing=1 cpu1.false_sharing=0 \
    cpu0.interventions=1 cpu0.interventions_served=2 cpu1.interventions=2 \
    cpu1.interventions_served=1 cpu0.upgrades=1 cpu1.upgrades=1 \
    cpu0.invalidations_sent=1 cpu1.invalidations_sent=1 \
    cpu0.invalidations_received.D1=1 cpu0.invalidations_received.L2=1 \
    level.D1.misses=4 level.D1.causes.cold=2 level.D1.causes.conflict=0 \
    line0.true_sharing=1 line0.false_sharing=1 line0.invalidations=2 line0.interventions=3 \
    line0.upgrades=2 line0.read_words.1=1 line0.written_words.1=2 line0.written_words.0=1 \
    code0.invalidations=2 code0.interventions=3 code0.upgrades=2 code0.false_sharing=1 \
    data0.invalidations=2 data0.interventions=3 data0.upgrades=2 data0.true_sharing=1

# Reads only: Exclusive then Shared, nothing sent, no coherence miss; words
# are watched from the second CPU's first reference on (C0's word 0 before it
# is not in the picture, its word 1 after it is).
expect "read sharing" read_sharing.din \
    cpu0.misses.D1.cold=1 cpu1.misses.D1.cold=1 cpu0.interventions=0 cpu1.interventions=0 \
    cpu0.invalidations_sent=0 cpu1.invalidations_sent=0 cpu0.upgrades=0 cpu1.upgrades=0 \
    line0.true_sharing=0 line0.false_sharing=0 line0.read_words.0=2 line0.read_words.1=5

# C0 reads (E), C1 writes (a write miss: C0's clean copy invalidated, no
# intervention), C0 writes (a write miss on a line lost: coherence, true;
# C1's M supplies it and is invalidated).
expect "write miss (read for ownership)" write_miss.din \
    cpu0.misses.D1.coherence=1 cpu0.true_sharing=1 cpu0.interventions=1 \
    cpu1.interventions_served=1 cpu0.invalidations_sent=1 cpu1.invalidations_sent=1 \
    cpu0.invalidations_received.D1=1 cpu1.invalidations_received.L2=1 \
    cpu0.upgrades=0 cpu1.upgrades=0

# Both read (E, then S without an intervention: the line was clean); C1
# writes (an upgrade); C0 reads again (coherence, true; intervention).
expect "upgrade of a Shared line" upgrade.din \
    cpu1.upgrades=1 cpu1.invalidations_sent=1 cpu0.invalidations_received.D1=1 \
    cpu0.invalidations_received.L2=1 cpu0.true_sharing=1 cpu0.interventions=1 \
    cpu1.interventions_served=1

# C0 writes 0x4000 then four more lines of its L2 set (4 ways): the first
# leaves D1 and L2 written back; C1's read finds no copy to intervene on.
expect "silent eviction, no intervention" silent_eviction.din \
    cpu1.misses.D1.cold=1 cpu1.interventions=0 cpu0.interventions_served=0 \
    cpu0.invalidations_sent=0 cpu1.invalidations_sent=0 level.L2.writebacks=1

# Four rounds of C0 writing word 0 and C1 word 1 of one line: after the two
# cold misses every write misses (6 coherence misses, all false), each one an
# intervention (7 with C1's first) and an invalidation of the other.
expect "false sharing ping-pong" false_sharing.din \
    cpu0.false_sharing=3 cpu1.false_sharing=3 cpu0.true_sharing=0 cpu1.true_sharing=0 \
    cpu0.misses.D1.coherence=3 cpu1.misses.D1.coherence=3 \
    cpu0.interventions=3 cpu1.interventions=4 cpu0.invalidations_sent=3 \
    cpu1.invalidations_sent=4 cpu0.invalidations_received.D1=4 \
    line0.false_sharing=6 line0.written_words.0=1 line0.written_words.1=2

# The same writes on two lines (the counters padded apart): nothing shared.
expect "padded counters" padded.din \
    cpu0.misses.D1.cold=1 cpu1.misses.D1.cold=1 cpu0.misses.D1.coherence=0 \
    cpu1.misses.D1.coherence=0 cpu0.invalidations_sent=0 cpu1.invalidations_sent=0 \
    cpu0.interventions=0 cpu1.interventions=0

# A shared counter: each CPU reads and writes word 0 twice, alternately
# (R W by C0, R W by C1, twice): C1's first read an intervention, then every
# write an upgrade and every other read a true sharing miss.
expect "true sharing counter" true_sharing.din \
    cpu0.true_sharing=1 cpu1.true_sharing=1 cpu0.false_sharing=0 cpu1.false_sharing=0 \
    cpu0.upgrades=1 cpu1.upgrades=2 cpu0.interventions=1 cpu1.interventions=2 \
    cpu0.interventions_served=2 cpu1.interventions_served=1 cpu0.invalidations_sent=1 \
    cpu1.invalidations_sent=2 cpu0.invalidations_received.D1=2 cpu1.invalidations_received.D1=1

# Threads 0 and 2 on CPU 0, 1 and 3 on CPU 1: a line threads 0 and 2 share
# is one CPU's, no coherence.
# Per thread (in order of first reference: 0, 2, 1, 3): thread 0 writes
# 8000 (cold) and reads it (a hit), thread 2 reads and writes it (hits),
# thread 1 reads 9000 (cold), thread 3 reads it (a hit).
expect "threads on CPUs (k mod N)" threads.din \
    cpu0.threads=2 cpu1.threads=2 cpu0.refs=4 cpu1.refs=2 cpu0.misses.D1.cold=1 \
    cpu1.misses.D1.cold=1 cpu0.invalidations_sent=0 cpu0.upgrades=0 \
    thread0.thread=0 thread0.cpu=0 thread0.refs=2 thread0.misses.D1.misses=1 \
    thread1.thread=2 thread1.cpu=0 thread1.refs=2 thread1.misses.D1.misses=0 \
    thread2.thread=1 thread2.cpu=1 thread2.refs=1 thread2.misses.D1.cold=1 \
    thread3.thread=3 thread3.cpu=1 thread3.refs=1 thread3.misses.D1.misses=0

# The same threads placed by --cpu-map: 0 and 1 on CPU 0, 2 and 3 on CPU 1.
# Thread 2 reads thread 0's written line (an intervention), writes it (an
# upgrade), thread 0 reads it again (coherence, true; an intervention).
# Per thread: thread 0 a cold write and a true-sharing read (an
# intervention); thread 2 a cold read (an intervention) and an upgrade
# sending one invalidation; threads 1 and 3 a cold read each (CPU 0 and 1),
# thread 1's from memory (local), thread 3's from the shared L3 (node).
FLAGS=--cpu-map=0,0,1,1
expect "threads placed by --cpu-map" threads.din \
    cpu0.threads=2 cpu1.threads=2 cpu0.refs=3 cpu1.refs=3 cpu1.interventions=1 \
    cpu1.upgrades=1 cpu0.true_sharing=1 cpu0.interventions=1 cpu0.invalidations_received.D1=1 \
    thread0.thread=0 thread0.cpu=0 thread0.refs=2 thread0.misses.D1.cold=1 \
    thread0.misses.D1.coherence=1 thread0.true_sharing=1 thread0.interventions=1 \
    thread0.upgrades=0 thread0.invalidations_sent=0 \
    thread1.thread=2 thread1.cpu=1 thread1.refs=2 thread1.misses.D1.cold=1 \
    thread1.interventions=1 thread1.upgrades=1 thread1.invalidations_sent=1 \
    thread1.true_sharing=0 \
    thread2.thread=1 thread2.cpu=0 thread2.misses.D1.cold=1 thread2.served.local=1 \
    thread3.thread=3 thread3.cpu=1 thread3.misses.D1.cold=1 thread3.served.node=1
FLAGS=

# The word picture of the false-sharing line, text.
"$MTOOL" sim --machine "$HERE/machine.txt" --trace "$HERE/false_sharing.din" --no-store \
    > "$OUT/fs.txt" 2>&1
if grep -q '^    cpu 0   W\.\.\.\.\.\.\.$' "$OUT/fs.txt" &&
    grep -q '^    cpu 1   \.W\.\.\.\.\.\.$' "$OUT/fs.txt"; then
    ok "coherence: the false-sharing line's words, one per CPU"
else
    not_ok "coherence: the false-sharing line's words: $(grep -A2 '^  0x5000' "$OUT/fs.txt" | tr '\n' '|')"
fi

# One CPU: the thread column changes nothing (the machine without cpus).
grep -v '^cpus' "$HERE/machine.txt" > "$OUT/uni.txt"
mkdir -p "$OUT/a" "$OUT/b"
cp "$HERE/protocol.din" "$OUT/a/t.din"
cut -d' ' -f1-3 "$HERE/protocol.din" > "$OUT/b/t.din"
"$MTOOL" sim --machine "$OUT/uni.txt" --trace "$OUT/a/t.din" --no-store 2>&1 | sed 1d > "$OUT/a.txt"
"$MTOOL" sim --machine "$OUT/uni.txt" --trace "$OUT/b/t.din" --no-store 2>&1 | sed 1d > "$OUT/b.txt"
if cmp -s "$OUT/a.txt" "$OUT/b.txt" && ! grep -q processors "$OUT/a.txt"; then
    ok "coherence: one CPU, the thread column changes nothing"
else
    not_ok "coherence: one CPU, the thread column changed the report"
fi

# Two CPUs, one thread: every level's references, misses and causes, and the
# evictions, are the uniprocessor's (a random trace over 3 times L3).
python3 -c 'import random
r = random.Random(16)
for _ in range(20000):
    print(r.choice("01"), hex(0x10000 + r.randrange(12288)), r.choice("1248"))' > "$OUT/random.din"
"$MTOOL" sim --machine "$OUT/uni.txt" --trace "$OUT/random.din" --no-store --json \
    -o "$OUT/uni.json" 2> "$OUT/err"
"$MTOOL" sim --machine "$HERE/machine.txt" --trace "$OUT/random.din" --no-store --json \
    -o "$OUT/mp.json" 2>> "$OUT/err"
if python3 -c 'import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
keep = ("name", "refs", "misses", "causes", "evictions")
pick = lambda d: [{k: l[k] for k in keep} for l in d["levels"]]
sys.exit(pick(a) != pick(b))' "$OUT/uni.json" "$OUT/mp.json"; then
    ok "coherence: two CPUs with one thread miss as one CPU"
else
    not_ok "coherence: two CPUs with one thread differ from one CPU: $(head -1 "$OUT/err")"
fi

# What is refused, with a one-line error and no report.
refuse() {
    name=$1 want=$2
    shift 2
    refused "coherence: $name" "$want" "$OUT/none.txt" "$MTOOL" sim --machine "$HERE/machine.txt" \
        --trace "$HERE/protocol.din" --no-store -o "$OUT/none.txt" "$@"
}
refuse "cpus = 0" "cpus: expected" --set cpus=0
refuse "cpus = 17" "cpus: expected" --set cpus=17
refuse "shared = L4 without an L4" "shared: L4: no such level" --set shared=L4
refuse "shared = L9" "shared: expected" --set shared=L9
refuse "straddle = line" "straddle = access" --straddle=line
refuse "a private level of another line" "L2 has not D1's line" --set L2=1K,4,128
refuse "an I1 of another line" "I1 has not D1's line" --set I1=1K,2,32
refuse "an inclusive shared level" "non-inclusive" --set L3.inclusion=inclusive
refuse "misses-only on 2 nodes" "one node" --misses-only --set cpus=2 --set nodes=2
refuse "a CPU map beyond cpus" "cpu_map: thread 1 on CPU 2" --cpu-map=0,2
refuse "a CPU map of no numbers" "cpu_map: expected" --cpu-map=0,x
refuse "sampled sets" "one CPU" --sample-sets 1/2
printf '0 1000 8 x\n' > "$OUT/bad.din"
refuse "a thread that is no number" "bad.din:1: expected a decimal thread" --trace "$OUT/bad.din"
printf '0 1000 8 0\n0 1000 8 4294967296\n' > "$OUT/bad.din"
refuse "a thread of 2^32" "bad.din:2: expected a decimal thread" --trace "$OUT/bad.din"

# samples/sharing.c traced on two CPUs: false sharing on the adjacent
# counters (struct fields named by DWARF), none on the padded ones, true
# sharing on the shared counter, and the program's output unchanged.  (The
# threads' records are merged in the order they ran (TSC stamps): on a
# loaded machine the two workers may run a phase one after the other, so
# the adjacent counters may change hands once only: false sharing on one of
# the two at least.)
SHARING=$SAMPLES_SIM/sharing-gcc-O2
if [ ! -x "$SHARING" ]; then
    not_ok "coherence: $SHARING not built (make samples)"
    exit 0
fi
"$SHARING" > "$OUT/plain.out"
if "$MTOOL" sim --set cpus=2 --no-store --json -o "$OUT/sharing.json" -- "$SHARING" \
    > "$OUT/traced.out" 2> "$OUT/err" && cmp -s "$OUT/plain.out" "$OUT/traced.out"; then
    ok "coherence: sharing traced on two CPUs, its output unchanged"
else
    not_ok "coherence: sharing traced: $(head -1 "$OUT/err")"
fi
# Once a process has had a second thread its frames are short (1023
# records, timer.h), so that the merge orders the threads finely: as many
# frames as the records sent while it ran, in 1023s, or more.
frames=$(frames_sent "$OUT/err")
check "coherence: sharing's frames are short (records, frames sent, records after, through rings: ${frames:-none})" \
    "echo '${frames:-0 0 0 0}' | awk '{ exit !(\$2 > 1000 && \$2 * 1023 >= \$1 - \$3) }'"
# Each thread's through its own slot's ring; in their messages
# ($MTOOL_TRACE_RING=0) the same references per code object (the threads'
# interleaving, and so the misses, differ from run to run either way).
check "coherence: sharing's frames all came through the threads' trace rings (${frames:-none})" \
    "echo '${frames:-0 0 0 0}' | awk '{ exit !(\$4 == \$2) }'"
for ring in 0 1; do
    MTOOL_TRACE_RING=$ring "$MTOOL" sim --set cpus=2 --no-store --json -o "$OUT/ring$ring.json" \
        -- "$SHARING" 20000 > /dev/null 2> "$OUT/ring$ring.err"
done
check "coherence: sharing, frames in their messages: none through the rings ($(frames_sent "$OUT/ring0.err"))" \
    "frames_sent '$OUT/ring0.err' | awk '{ exit !(\$2 > 0 && \$4 == 0) }'"
# (The program's code objects: libc's, traced by default, waits and spins
# on its locks as long as the threads' timing says.)
check "coherence: sharing, frames through the rings or in their messages: the same references of the program's code" \
    "python3 -c 'import json, sys
refs = lambda f: sorted((c[\"name\"], c[\"refs\"]) for c in f[\"code_objects\"] if not c.get(\"library\"))
a, b = (json.load(open(p)) for p in sys.argv[1:])
sys.exit(refs(a) != refs(b) or not refs(a) or not a[\"records\"])' '$OUT/ring0.json' '$OUT/ring1.json'"
# glibc traced by default (its threads' start and the program's calls into
# it on the threads' own frames from their clone on: docs/ARCHITECTURE.md,
# "Tasks a counted object creates") or left out (--libs none): the
# program's own code objects make the same references, and libc's appear
# only when it is traced.
"$MTOOL" sim --set cpus=2 --libs none --no-store --json -o "$OUT/nolibs.json" -- "$SHARING" 20000 \
    > /dev/null 2> "$OUT/nolibs.err"
check "coherence: sharing with libc traced (default) and with --libs none: the program's code objects make the same references, libc's only when traced" \
    "python3 -c 'import json, sys
own = lambda d: sorted((c[\"name\"], c[\"refs\"]) for c in d[\"code_objects\"] if not c.get(\"library\"))
libc = lambda d: sum(c[\"refs\"] for c in d[\"code_objects\"] if c.get(\"library\") == \"libc.so.6\")
a, b = (json.load(open(p)) for p in sys.argv[1:])
sys.exit(own(a) != own(b) or not own(a) or libc(a) == 0 or libc(b) != 0)' '$OUT/ring1.json' '$OUT/nolibs.json'"
if python3 -c 'import json, sys
p = json.load(open(sys.argv[1]))["processors"]
rows = {r["name"]: r for r in p["data_objects"]}
get = lambda n, k: rows.get(n, {}).get(k, 0)
problems = [f"{n}: {k} is {get(n, k)}" for n, k, ok in [
    ("adjacent.a+b", "false_sharing",
     get("adjacent.a", "false_sharing") + get("adjacent.b", "false_sharing") > 0),
    ("adjacent.a", "true_sharing", get("adjacent.a", "true_sharing") == 0),
    ("adjacent.b", "true_sharing", get("adjacent.b", "true_sharing") == 0),
    ("padded.a", "false_sharing", get("padded.a", "false_sharing") + get("padded.a", "true_sharing") == 0),
    ("padded.b", "false_sharing", get("padded.b", "false_sharing") + get("padded.b", "true_sharing") == 0),
    ("total", "true_sharing", get("total", "true_sharing") > 0),
    ("total", "false_sharing", get("total", "false_sharing") == 0)] if not ok]
# Each CPU figures are those of its threads summed (the per-thread oracle).
def tally(st):
    return [st["refs"], st["true_sharing"], st["false_sharing"], st["invalidations_sent"],
            st["interventions"], st["upgrades"], st["served"]] + [
            st["misses"][l][k] for l in st["misses"] for k in st["misses"][l]]
for c in p["per_cpu"]:
    mine = [tally(t) for t in p["per_thread"] if t["cpu"] == c["cpu"]]
    summed = [sum(x[i] for x in mine) if not isinstance(mine[0][i], dict) else
              {k: sum(x[i][k] for x in mine) for k in mine[0][i]} for i in range(len(mine[0]))] \
        if mine else None
    if summed != tally(c):
        problems.append("cpu %d: the figures of its threads do not sum to its own" % c["cpu"])
print("; ".join(problems))
sys.exit(bool(problems))' "$OUT/sharing.json" > "$OUT/diff" 2>&1; then
    ok "coherence: sharing: false on adjacent.a/b, none on padded.a/b, true on total; each CPU's figures its threads' summed"
else
    not_ok "coherence: sharing: $(head -1 "$OUT/diff")"
fi
print_totals
