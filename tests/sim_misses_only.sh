#!/bin/sh
# tests/sim_misses_only.sh — `mtool sim --misses-only` (docs/SIMULATOR.md,
# "Speed"): the same references and misses per level and per code object
# as the full simulator on the same references (tests/misses_only_check.py),
# and Cachegrind's within 1% where tests/sim.sh and tests/trace.sh compare:
#   - hand traces with the counts of tests/sim.sh (LRU, write-allocate or
#     not, a straddling reference under both rules);
#   - a random din trace (sizes 1-64 bytes, a third straddling lines;
#     reads, writes, fetches, a flush) on three machines: Cachegrind's
#     model; four levels with sets no power of two and a 128-byte L2 line;
#     the same without write-allocate and with straddle=line;
#   - a lackey trace of linked (code objects by procedure), and Cachegrind;
#   - traced runs (-- BIN, address space randomization off so both runs see
#     the same addresses): matmul, linked (PIE), kernels' addressing modes
#     (rep movsb among them), AVX2 gathers where the CPU has them; matmul
#     and kernels (rep movsb/stosq, %fs, threads) against Cachegrind;
#   - several CPUs (sim/fast_mp.c): tests/coherence.sh's hand traces with
#     and without an I1, bench/mp_trace.py's 3 threads under five
#     configurations and the random trace on threads, each CPU's coherence
#     figures against the full simulator's too;
#   - what the report omits (absent, not zero), options it refuses with one
#     line (nodes > 1 among them), and that it is not stored in the history.
#
#   MTOOL=build/asan/mtool SAMPLES=build/samples sh tests/sim_misses_only.sh
set -u
MTOOL=${MTOOL:-build/asan/mtool}
SAMPLES=${SAMPLES:-build/samples}
HERE=$(dirname "$0")
OUT=$(mktemp -d "${TMPDIR:-/tmp}/mtool-misses-only.XXXXXX")
trap 'rm -rf "$OUT"' EXIT INT TERM
export XDG_CONFIG_HOME="$OUT/config" XDG_CACHE_HOME="$OUT/cache" MTOOL_HISTORY="$OUT/history.db"
. "$HERE/lib.sh"

# compare NAME SIM_ARGS...: the full simulator and --misses-only on the same
# input; misses_only_check.py's verdicts.
compare() {
    name=$1
    shift
    if ! "$MTOOL" sim --no-store "$@" --json -o "$OUT/full.json" 2> "$OUT/err" ||
        ! "$MTOOL" sim --no-store --misses-only "$@" --json -o "$OUT/lean.json" 2>> "$OUT/err"; then
        not_ok "misses-only: $name: $(head -1 "$OUT/err")"
        return 1
    fi
    python3 "$HERE/misses_only_check.py" "misses-only: $name" "$OUT/full.json" "$OUT/lean.json" \
        > "$OUT/check" 2>&1 || echo "not ok - misses-only: $name: the check stopped" >> "$OUT/check"
    cat "$OUT/check"
    tally "$OUT/check"
}

# field JSON LEVEL KEY
field() {
    python3 -c 'import json, sys
print([l for l in json.load(open(sys.argv[1]))["levels"] if l["name"] == sys.argv[2]][0][sys.argv[3]])' \
        "$1" "$2" "$3"
}

# --- hand traces: tests/sim.sh's counts, then the full simulator's ---
D1ONLY="--I1=none --L2=none"
printf '0 0\n0 40\n0 80\n0 c0\n0 100\n0 0\n0 40\n0 80\n0 c0\n' > "$OUT/repl.din"
printf '1 0\n0 0\n' > "$OUT/write.din"
printf '0 3c 8\n0 0 4\n0 40 4\n' > "$OUT/straddle.din"
# hand TRACE "LEVEL KEY VALUE..." FLAGS...
hand() {
    trace=$1 want=$2
    shift 2
    if ! "$MTOOL" sim --misses-only --trace "$OUT/$trace" $D1ONLY "$@" --json -o "$OUT/r.json" \
        2> "$OUT/err"; then
        not_ok "misses-only: $trace $*: $(head -1 "$OUT/err")"
        return
    fi
    got=$(set -- $want; while [ $# -ge 3 ]; do printf '%s %s %s ' "$1" "$2" "$(field "$OUT/r.json" "$1" "$2")"; shift 3; done)
    check "misses-only: $trace $*: $want (got $got)" "[ '$got' = '$want ' ]"
    compare "$trace $*" --trace "$OUT/$trace" $D1ONLY "$@"
}
hand repl.din "D1 misses 9" --D1=256,4,64
hand write.din "D1 misses 1 D1 write_misses 1" --D1=128,2,64
hand write.din "D1 misses 2 D1 write_misses 1 D1 read_misses 1" --D1=128,2,64 --write-allocate=no
hand straddle.din "D1 refs 3 D1 misses 1" --D1=256,4,64
hand straddle.din "D1 refs 4 D1 misses 2" --D1=256,4,64 --straddle=line

# --- a random trace on three machines ---
python3 - "$OUT/random.din" << 'EOF'
import random, sys
r = random.Random(15)
with open(sys.argv[1], "w") as f:
    hot = [r.randrange(0, 1 << 22) for _ in range(64)]
    for i in range(60000):
        if i == 30000:
            f.write("4 0\n")  # a flush
        label = r.choice("0001112")
        if r.random() < 0.6:  # a walk near one of a few places: hits and conflicts
            k = r.randrange(len(hot))
            hot[k] = (hot[k] + r.choice((4, 8, 64, 4096, 16384))) % (1 << 22)
            addr = hot[k]
        else:
            addr = r.randrange(0, 1 << 22)
        size = r.choice((1, 2, 4, 8, 16, 32, 64))
        if r.random() < 0.3:  # straddling
            addr = (addr | 63) - r.randrange(0, min(size, 32))
        f.write("%s %x %d\n" % (label, addr, size))
EOF
compare "random trace, Cachegrind's model" --trace "$OUT/random.din" --cachegrind \
    --I1=8K,4,64 --D1=8K,4,64 --LL=64K,8,64
FOUR="--I1=6K,2,64 --D1=12K,4,64 --L2=160K,10,128 --L3=3M,16,64"
compare "random trace, 4 levels, sets no power of two, 128-byte L2 lines" \
    --trace "$OUT/random.din" $FOUR
compare "random trace, 4 levels, no write-allocate, straddle=line" --trace "$OUT/random.din" \
    $FOUR --write-allocate=no --straddle=line

# --- several CPUs (sim/fast_mp.c): the full simulator's per-CPU figures too ---
# tests/coherence.sh's hand traces (each protocol transition, true and false
# sharing, a silent eviction, threads on two CPUs), on its machine (no I1:
# every reference through the directory) and with an I1 (a read of D1's MRU
# line skips it).
CO="$HERE/coherence"
for t in "$CO"/*.din; do
    compare "2 CPUs: $(basename "$t")" --trace "$t" --machine "$CO/machine.txt"
    compare "2 CPUs, an I1: $(basename "$t")" --trace "$t" --machine "$CO/machine.txt" \
        --I1=256,2,64
done
# bench/mp_trace.py's 3 threads (adjacent counters and a queue written by all,
# own arrays, random references, fetches, stacks, straddling references)
# under the configurations of bench/mp_same.sh the misses-only simulator
# takes; and a random trace with a flush, its references on threads 0-2.
python3 "$HERE/../bench/mp_trace.py" 60000 > "$OUT/threads.din"
awk 'NF == 3 { $4 = NR % 3 } { print }' "$OUT/random.din" > "$OUT/random_threads.din"
while read -r cfg; do
    # shellcheck disable=SC2086
    compare "3 threads: $cfg" --trace "$OUT/threads.din" $cfg
done <<END
--I1=32768,8,64 --D1=32768,8,64 --LL=8388608,16,64 --set cpus=2
--I1=4K,4,64 --D1=4K,4,64 --L2=32K,8,64 --L3=256K,16,64 --set cpus=3
--I1=4K,4,64 --D1=4K,4,64 --L2=32K,8,64 --L3=256K,16,64 --set cpus=4 --set shared=none
--I1=4K,4,64 --D1=4K,4,64 --L2=32K,8,64 --L3=256K,16,64 --set cpus=2 --set shared=L2
--D1=4K,4,64 --L2=32K,8,64 --L3=256K,16,64 --set cpus=2 --cpu-map=0,0,1 --write-allocate=no
END
compare "random trace with a flush, 3 threads on 2 CPUs" --trace "$OUT/random_threads.din" \
    $FOUR --L2=160K,10,64 --set cpus=2
"$MTOOL" sim --misses-only --trace "$OUT/threads.din" --set cpus=2 > "$OUT/r.txt" 2>&1
check "misses-only: 2 CPUs: the text report gives each CPU's coherence and says what it omits" \
    "grep -q '^processors: 2 CPUs, MESI .*not computed: per-thread' '$OUT/r.txt' && grep -q 'inval.sent' '$OUT/r.txt'"

# --- options it cannot honour: one line, no output ---
refuse() {
    what=$1
    shift
    refused "misses-only: refuses $what in one line" "--misses-only" "$OUT/none.json" \
        "$MTOOL" sim --misses-only --trace "$OUT/repl.din" "$@" -o "$OUT/none.json"
}
refuse "a prefetcher" --D1=8K,4,64 --prefetch=next-line
refuse "pseudo-LRU" --D1=8K,4,64 --replacement=plru
refuse "random replacement" --D1=8K,4,64 --replacement=random
refuse "an inclusive level" --D1=8K,4,64 --L2=64K,8,64 --inclusion=inclusive
refuse "an exclusive level" --D1=8K,4,64 --L2=64K,8,64 --inclusion=exclusive
refuse "set sampling" --D1=8K,4,64 --sample-sets 1/2
refuse "time sampling" --D1=8K,4,64 --sample-time 10/101
refuse "nodes = 2" --D1=8K,4,64 --L2=64K,8,64 --set cpus=2 --set nodes=2
refused "misses-only: refuses 2 CPUs under straddle=line in one line (as the full one)" \
    "straddle = access" "$OUT/none.json" "$MTOOL" sim --misses-only --trace "$OUT/repl.din" \
    --D1=8K,4,64 --L2=64K,8,64 --set cpus=2 --straddle=line -o "$OUT/none.json"
mkdir -p "$OUT/rundir"
rm -f "$OUT/none.json"
"$MTOOL" sim --misses-only "$OUT/rundir" -o "$OUT/none.json" > /dev/null 2> "$OUT/err"
check "misses-only: refuses RUNDIR (the stall estimate) in one line" \
    "[ $? -ne 0 ] && [ \$(grep -c . '$OUT/err') -eq 1 ] && grep -q RUNDIR '$OUT/err' && [ ! -e '$OUT/none.json' ]"

# The text report says what it leaves out.
"$MTOOL" sim --misses-only --trace "$OUT/repl.din" --D1=256,4,64 $D1ONLY > "$OUT/r.txt" 2>&1
check "misses-only: the text report says what it omits" \
    "grep -q '^MISSES ONLY (--misses-only): .*not computed: miss causes' '$OUT/r.txt' && ! grep -q '^line use\\|cold.*capacity' '$OUT/r.txt'"

if ! command -v valgrind > /dev/null 2>&1; then
    not_ok "misses-only: valgrind is not installed (the Cachegrind oracle needs it)"
    print_totals
    exit
fi
GEOMETRY="--I1=16384,4,64 --D1=16384,4,64 --LL=262144,8,64"

# --- a lackey trace: code objects by procedure; and Cachegrind ---
bin="$SAMPLES/linked-gcc-O2-nopie"
valgrind --tool=lackey --trace-mem=yes --log-file="$OUT/linked.lackey" "$bin" > /dev/null 2>&1
valgrind --tool=cachegrind --cache-sim=yes $GEOMETRY --cachegrind-out-file="$OUT/linked.cg" \
    "$bin" > /dev/null 2>&1
compare "lackey trace of linked" --trace "$OUT/linked.lackey" --format lackey --binary "$bin" \
    --cachegrind $GEOMETRY
python3 "$HERE/cachegrind_check.py" "misses-only: linked (lackey)" "$OUT/linked.cg" \
    "$OUT/lean.json" > "$OUT/check"
cat "$OUT/check"
tally "$OUT/check"

# The history: a run with --binary is stored by the full simulator, not by
# this one, which says so.
"$MTOOL" sim --misses-only --trace "$OUT/linked.lackey" --format lackey --binary "$bin" \
    --cachegrind $GEOMETRY -o "$OUT/r.txt" 2> "$OUT/err"
check "misses-only: not stored in the history, and says so" \
    "grep -q 'misses-only run is not stored in the history' '$OUT/err' && [ ! -e '$OUT/history.db' ]"
"$MTOOL" sim --trace "$OUT/linked.lackey" --format lackey --binary "$bin" --cachegrind \
    $GEOMETRY -o "$OUT/r.txt" 2> "$OUT/err"
check "misses-only: (the full simulator's run of the same is stored)" "[ -s '$OUT/history.db' ]"

# --- traced runs ---
cc -O2 -pthread -o "$OUT/kernels" "$HERE/trace/kernels.c" ||
    not_ok "misses-only: tests/trace/kernels.c does not build"
# Both runs at the same addresses (heap, stack, a PIE's base).
NORAND=
setarch "$(uname -m)" -R true 2> /dev/null && NORAND="setarch $(uname -m) -R"
# (setarch runs the program: `mtool sim -- setarch ...` would trace setarch;
# the personality is inherited instead.)
# TRACED_MACHINE: the machine of both runs (default: Cachegrind's, $GEOMETRY).
traced_compare() {
    name=$1
    shift
    machine=${TRACED_MACHINE:-"--cachegrind $GEOMETRY"}
    if [ -z "$NORAND" ]; then
        not_ok "misses-only: $name: setarch -R does not work here (randomized addresses)"
        return
    fi
    # lean: the filter as it comes (timer.h: while mtool is behind);
    # filtered: on every frame (MTOOL_TRACE_FILTER=all), its stderr kept.
    for mode in full lean filtered; do
        flag=; [ $mode != full ] && flag=--misses-only
        filter=; [ $mode = filtered ] && filter=all
        # shellcheck disable=SC2086
        MTOOL_TRACE_FILTER=$filter $NORAND "$MTOOL" sim --no-store $flag $machine --json \
            -o "$OUT/$mode.json" -- "$@" > "$OUT/$mode.out" 2> "$OUT/$mode.err"
    done
    for mode in lean filtered; do
        python3 "$HERE/misses_only_check.py" "misses-only ($mode): traced $name" "$OUT/full.json" \
            "$OUT/$mode.json" > "$OUT/check" 2>&1 ||
            echo "not ok - misses-only ($mode): traced $name: the check stopped" >> "$OUT/check"
        cat "$OUT/check"
        tally "$OUT/check"
    done
}
traced_compare matmul "$SAMPLES/matmul-gcc-O2-nopie"
cp "$OUT/lean.json" "$OUT/matmul.json"
check "misses-only: the filter counted matmul's sure D1 hits in the program, no frame interrupted" \
    "grep -q 'D1 hits the program counted itself' '$OUT/filtered.err' &&
     ! grep -q 'interrupted' '$OUT/filtered.err'"
traced_compare "linked (PIE)" "$SAMPLES/linked-gcc-O2"
traced_compare "kernels' addressing modes" "$OUT/kernels" modes
if grep -qw avx2 /proc/cpuinfo && cc -O2 -o "$OUT/gathers" "$HERE/trace/gathers.c"; then
    traced_compare "AVX2 gathers" "$OUT/gathers"
fi
# The feed's batch of plain references (sim/fast.c, sim_fast_records) on
# other machines: straddling references split per line, writes that do not
# allocate (D1's sets a power of two: the batch takes them); D1's sets no
# power of two (the batch hands every record back to the feed).
TRACED_MACHINE="--D1=8K,4,64 --L2=48K,6,128 --LL=256K,8,64 --write-allocate=no --straddle=line" \
    traced_compare "matmul, straddle=line, no write-allocate" "$SAMPLES/matmul-gcc-O2-nopie"
TRACED_MACHINE="--D1=8K,4,64 --L2=48K,6,128 --LL=256K,8,64 --write-allocate=no --straddle=line" \
    traced_compare "linked (PIE), straddle=line, no write-allocate" "$SAMPLES/linked-gcc-O2"
TRACED_MACHINE="--D1=12K,4,64 --L2=160K,10,128 --L3=3M,16,64" \
    traced_compare "kernels' addressing modes, sets no power of two" "$OUT/kernels" modes
# Against Cachegrind: matmul; kernels (rep movsb/stosq, %fs, four threads).
# against_cachegrind NAME JSON BIN ARGS...: the data misses per procedure.
against_cachegrind() {
    name=$1 json=$2
    shift 2
    valgrind --tool=cachegrind --cache-sim=yes $GEOMETRY --cachegrind-out-file="$OUT/$name.cg" \
        "$@" > /dev/null 2>&1
    python3 "$HERE/cachegrind_check.py" --data "misses-only: traced $name" "$OUT/$name.cg" \
        "$json" > "$OUT/check"
    cat "$OUT/check"
    tally "$OUT/check"
}
against_cachegrind matmul "$OUT/matmul.json" "$SAMPLES/matmul-gcc-O2-nopie"
"$OUT/kernels" > "$OUT/kernels.want"
"$MTOOL" sim --no-store --misses-only --cachegrind $GEOMETRY --json -o "$OUT/kernels.json" -- \
    "$OUT/kernels" > "$OUT/kernels.got" 2> "$OUT/err"
check "misses-only: traced kernels: exit status 3 and the output kept" \
    "[ $? -eq 3 ] && cmp -s '$OUT/kernels.want' '$OUT/kernels.got'"
# Threads: the filter stops when the first one is created (timer.h), so no
# frame it filtered is interleaved with another thread's records.
MTOOL_TRACE_FILTER=all "$MTOOL" sim --no-store --misses-only --cachegrind $GEOMETRY -o "$OUT/r.txt" \
    -- "$OUT/kernels" > /dev/null 2> "$OUT/err"
check "misses-only: four threads under the filter on every frame: no frame it filtered interrupted" \
    "[ $? -eq 3 ] && grep -q 'records' '$OUT/err' && ! grep -q 'interrupted' '$OUT/err'"
against_cachegrind kernels "$OUT/kernels.json" "$OUT/kernels"
print_totals
