#!/bin/sh
# tests/sim.sh — `mtool sim --trace` (docs/SIMULATOR.md): hand-written din
# traces with counts worked out by hand, bad input, and the simulator against
# Cachegrind on samples: each sample traced by valgrind's lackey
# (--trace-mem=yes) and run under cachegrind with the same geometry; mtool
# sim --cachegrind on the lackey trace must give the same I1, D1 and LL
# misses, in total and per procedure, within 1%.
#
# Then the samples of known behaviour (samples/walks.c, chase.c, aos.c,
# reuse.c, PIE): the same cross-check, and the miss causes, spatial and
# temporal use their sources imply (tests/sim_samples_check.py); and the
# load base of a PIE.
#
#   MTOOL=build/asan/mtool SAMPLES=build/samples SAMPLES_SIM=build/samples-sim \
#       [SIM_GEOMETRY="--I1=... --D1=... --LL=..."] sh tests/sim.sh [SAMPLE...]
# (SAMPLE...: only those against Cachegrind; by default the matrix walks and
# the linked-list chase, non-PIE, then the known-behaviour samples; traces of
# a few million references).
set -u
MTOOL=${MTOOL:-build/asan/mtool}
SAMPLES=${SAMPLES:-build/samples}
SAMPLES_SIM=${SAMPLES_SIM:-$(dirname "$SAMPLES")/samples-sim}
OUT=$(mktemp -d "${TMPDIR:-/tmp}/mtool-sim.XXXXXX")
trap 'rm -rf "$OUT"' EXIT INT TERM
export XDG_CONFIG_HOME="$OUT/config" MTOOL_HISTORY="$OUT/history.db"

ok() { echo "ok - $*"; }
fail() { echo "not ok - $*"; }

# field JSON LEVEL KEY: a level's figure from `mtool sim --json`.
field() {
    python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
l = [x for x in d["levels"] if x["name"] == sys.argv[2]][0]
v = l
for k in sys.argv[3].split("."):
    v = v[k]
print(v)' "$1" "$2" "$3"
}

# expect NAME TRACE "LEVEL KEY VALUE..." FLAGS...: the figures of a hand
# trace through a D1-only machine (plus FLAGS).
expect() {
    name=$1 trace=$2 want=$3
    shift 3
    if ! "$MTOOL" sim --trace "$OUT/$trace" --json -o "$OUT/r.json" --I1=none --L2=none "$@" \
        2> "$OUT/err"; then
        fail "sim: $name: $(head -1 "$OUT/err")"
        return
    fi
    set -- $want
    while [ $# -ge 3 ]; do
        got=$(field "$OUT/r.json" "$1" "$2")
        if [ "$got" != "$3" ]; then
            fail "sim: $name: $1 $2 is $got, expected $3"
            return
        fi
        shift 3
    done
    ok "sim: $name"
}

# --- hand traces (din: label 0 read, 1 write; addresses in hex) ---
# Cold: lines 0 1 2 then 0 1 again in a 4-line cache: 3 cold misses.
printf '0 0\n0 40\n0 80\n0 0\n0 40\n' > "$OUT/cold.din"
expect "cold" cold.din "D1 misses 3 D1 causes.cold 3 D1 causes.conflict 0" --D1=256,2,64
# Capacity: A B C A, fully associative 2 lines: the second A misses in the
# fully associative shadow too.
printf '0 0\n0 40\n0 80\n0 0\n' > "$OUT/capacity.din"
expect "capacity" capacity.din "D1 misses 4 D1 causes.cold 3 D1 causes.capacity 1" --D1=128,2,64
# Conflict: lines 0 2 4 0 all in set 0 of a 2-way, 2-set cache; a fully
# associative 4-line cache holds line 0: conflict.
printf '0 0\n0 80\n0 100\n0 0\n' > "$OUT/conflict.din"
expect "conflict" conflict.din "D1 misses 4 D1 causes.conflict 1" --D1=256,2,64
# Replacement: A B C D E A B C D in one 4-way set: LRU 9 misses, tree PLRU 8
# (tests/unit/test_sim.c works the tree bits out for the first 8: 7 misses,
# C taking D's way; D then misses), random from seed 1 over
# the same: draws 1206177355 2882512552 3117485455 1303648416 241277360
# (xorshift64*, high 32 bits x 4 >> 32: ways 1 2 2 1 0): E -> w1 (B out),
# A hit, B -> w2 (C out), C -> w2 (B out), D hit: 7 misses.
printf '0 0\n0 40\n0 80\n0 c0\n0 100\n0 0\n0 40\n0 80\n0 c0\n' > "$OUT/repl.din"
expect "replacement lru" repl.din "D1 misses 9" --D1=256,4,64 --replacement=lru
expect "replacement plru" repl.din "D1 misses 8" --D1=256,4,64 --replacement=plru
expect "replacement random, seed 1" repl.din "D1 misses 7" --D1=256,4,64 --replacement=random \
    --seed=1
# Write policies: write A, read A: write-allocate 1 miss, no-allocate 2.
printf '1 0\n0 0\n' > "$OUT/write.din"
expect "write-allocate" write.din "D1 misses 1 D1 write_misses 1" --D1=128,2,64
expect "no-write-allocate" write.din "D1 misses 2 D1 write_misses 1 D1 read_misses 1" \
    --D1=128,2,64 --write-allocate=no
# Inclusion: D1 2 lines fully associative, L2 2 lines direct-mapped; 0 80 0:
# L2 evicts line 0 while D1 holds it.
printf '0 0\n0 80\n0 0\n' > "$OUT/incl.din"
expect "non-inclusive L2" incl.din "D1 misses 2 L2 back_invalidations 0" --D1=128,2,64 \
    --L2=128,1,64
expect "inclusive L2" incl.din "D1 misses 3 L2 back_invalidations 2" --D1=128,2,64 \
    --L2=128,1,64 --inclusion=inclusive
# Exclusive: D1 and L2 one line each, A B A B: L2 gets D1's victims, 2 misses.
printf '0 0\n0 40\n0 0\n0 40\n' > "$OUT/excl.din"
expect "exclusive L2" excl.din "D1 misses 4 L2 refs 4 L2 misses 2" --D1=64,1,64 --L2=64,1,64 \
    --inclusion=exclusive
# Straddling: 8 bytes at 0x3c then reads of lines 0 and 1.
printf '0 3c 8\n0 0 4\n0 40 4\n' > "$OUT/straddle.din"
expect "straddle=access" straddle.din "D1 refs 3 D1 misses 1" --D1=256,4,64
expect "straddle=line" straddle.din "D1 refs 4 D1 misses 2" --D1=256,4,64 --straddle=line

# Tagged next-line prefetch: lines 0-7 in order in 4 lines: 1 miss, 7 hits
# on prefetched lines, 8 prefetches (tests/unit/test_sim.c).
printf '0 0\n0 40\n0 80\n0 c0\n0 100\n0 140\n0 180\n0 1c0\n' > "$OUT/seq.din"
expect "next-line prefetch" seq.din "D1 misses 1 D1 prefetch_hits 7 D1 prefetches 8" \
    --D1=256,4,64 --prefetch=next-line
expect "no prefetch" seq.din "D1 misses 8 D1 prefetches 0" --D1=256,4,64
# Stride prefetch (din has no instruction addresses: one entry for all):
# every 4th line, 0 to 0x500: 3 misses, then the prefetched lines hit.
printf '0 0\n0 100\n0 200\n0 300\n0 400\n0 500\n' > "$OUT/stride.din"
expect "stride prefetch" stride.din "D1 misses 3 D1 prefetch_hits 3 D1 prefetches 4 \
D1 prefetch_unused 1" --D1=256,4,64 --prefetch=stride

# --- the data TLB (docs/SIMULATOR.md, "The TLB"): translations of 4 KiB pages ---
# tlb_expect NAME TRACE "LEVEL MISSES..." WALK_PAIR FLAGS...: each TLB level's
# misses, and the one (code, data) pair's misses at the last TLB level.
tlb_expect() {
    name=$1 trace=$2 want=$3 pair=$4
    shift 4
    if ! "$MTOOL" sim --trace "$OUT/$trace" --json -o "$OUT/r.json" --I1=none --L2=none \
        --D1=256,4,64 "$@" 2> "$OUT/err"; then
        fail "sim: TLB $name: $(head -1 "$OUT/err")"
        return
    fi
    got=$(python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
levels = " ".join("%s %d" % (l["name"], l["misses"]) for l in d["tlb"]["levels"])
last = d["tlb"]["levels"][-1]["name"]
print(levels + " / " + " ".join(str(p["tlb_misses"][last]) for p in d["pairs"]))' "$OUT/r.json")
    if [ "$got" = "$want / $pair" ]; then
        ok "sim: TLB $name"
    else
        fail "sim: TLB $name: got '$got', expected '$want / $pair'"
    fi
}
# Hit: a read, a read at the end of the same page, a write in it: 1 miss.
printf '0 0\n0 ff8 8\n1 10 4\n' > "$OUT/tlb_hit.din"
tlb_expect "hit" tlb_hit.din "TLB1 1" 1 --TLB1=4,4 --TLB2=none
# Capacity: pages 0-4 then 0 in 4 entries fully associative (LRU): 6 misses.
printf '0 0\n0 1000\n0 2000\n0 3000\n0 4000\n0 0\n' > "$OUT/tlb_cap.din"
tlb_expect "capacity" tlb_cap.din "TLB1 6" 6 --TLB1=4,4 --TLB2=none
# Conflict: pages 0 2 4 0 all in set 0 of 2 sets x 2 ways: 4 misses; the
# same 4 entries fully associative keep page 0: 3.
printf '0 0\n0 2000\n0 4000\n0 0\n' > "$OUT/tlb_conf.din"
tlb_expect "conflict, 2-way" tlb_conf.din "TLB1 4" 4 --TLB1=4,2 --TLB2=none
tlb_expect "no conflict, fully associative" tlb_conf.din "TLB1 3" 3 --TLB1=4,4 --TLB2=none
# Page crossing: 8 bytes at 0xffc translate pages 0 and 1 (2 misses), then
# page 1 hits.
printf '0 ffc 8\n0 1000 4\n' > "$OUT/tlb_cross.din"
tlb_expect "a straddling access crosses a page" tlb_cross.din "TLB1 2" 2 --TLB1=4,4 --TLB2=none
# Two levels: pages 0 1 2 0 through TLB1 of 2 entries and TLB2 of 8: TLB1
# misses all 4, TLB2 holds page 0 (3 walks).
tlb_expect "two levels" tlb_conf.din "TLB1 4 TLB2 3" 3 --TLB1=2,2 --TLB2=8,8
# 2 MiB pages: pages 0-4 of 4 KiB are one.
tlb_expect "2 MiB pages" tlb_cap.din "TLB1 1" 1 --TLB1=4,4 --TLB2=none --tlb-page=2M
# Cachegrind's model has no TLB: no "tlb" in the report.
"$MTOOL" sim --trace "$OUT/tlb_cap.din" --json -o "$OUT/r.json" --cachegrind --D1=256,4,64 \
    --LL=1K,4,64 --I1=none > /dev/null 2>&1
if python3 -c 'import json,sys; sys.exit("tlb" in json.load(open(sys.argv[1])))' "$OUT/r.json"; then
    ok "sim: --cachegrind simulates no TLB"
else
    fail "sim: --cachegrind simulates no TLB"
fi

# --- the instruction TLB (docs/SIMULATOR.md, "The TLB"): fetches' pages ---
# itlb_expect NAME TRACE "REFS MISSES / PAIR MISSES... / TLB1 MISSES" FLAGS...: the
# ITLB's translations and misses, each (code, data) pair's ITLB misses, the
# data TLB's misses (fetches never reach it).
itlb_expect() {
    name=$1 trace=$2 want=$3
    shift 3
    if ! "$MTOOL" sim --trace "$OUT/$trace" --json -o "$OUT/r.json" --I1=none --L2=none \
        --D1=256,4,64 --TLB2=none "$@" 2> "$OUT/err"; then
        fail "sim: ITLB $name: $(head -1 "$OUT/err")"
        return
    fi
    got=$(python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
i = d.get("itlb", {"refs": "-", "misses": "-"})
print(i["refs"], i["misses"], "/", " ".join(str(p.get("itlb_misses", "-")) for p in d["pairs"]),
      "/", d["tlb"]["levels"][0]["misses"])' "$OUT/r.json")
    if [ "$got" = "$want" ]; then
        ok "sim: ITLB $name"
    else
        fail "sim: ITLB $name: got '$got', expected '$want'"
    fi
}
# Pages 0 1 2 fetched through 2 entries (LRU): 3 misses, page 2 evicts 0;
# 4 bytes at 0xffe are pages 0 (a miss, evicting 1) and 1 (a miss); page 0
# again hits: 6 translations, 5 misses.  A read of page 5 goes to TLB1 only.
printf '2 0 4\n2 1000 4\n2 2000 4\n2 ffe 4\n2 0 4\n0 5000 8\n' > "$OUT/itlb.din"
itlb_expect "fetches over pages, a straddling fetch" itlb.din "6 5 / 5 / 1" --ITLB=2,2 --TLB1=4,4
# Conflict: pages 0 2 4 0 in set 0 of 2 sets x 2 ways: 4 misses; fully
# associative: 3.  The data TLB sees none of them.
printf '2 0\n2 2000\n2 4000\n2 0\n' > "$OUT/itlb_conf.din"
itlb_expect "conflict, 2-way" itlb_conf.din "4 4 / 4 / 0" --ITLB=4,2 --TLB1=4,4
itlb_expect "no conflict, fully associative" itlb_conf.din "4 3 / 3 / 0" --ITLB=4,4 --TLB1=4,4
# 2 MiB pages: 0, 0x2000, 0x4000 are one page.
itlb_expect "2 MiB pages" itlb_conf.din "4 1 / 1 / 0" --ITLB=4,2 --TLB1=4,4 --tlb-page=2M
# No ITLB: no "itlb" in the report, no ITLB misses in a pair.
itlb_expect "ITLB=none" itlb_conf.din "- - / - / 0" --ITLB=none --TLB1=4,4
"$MTOOL" sim --trace "$OUT/itlb.din" --json -o "$OUT/r.json" --cachegrind --D1=256,4,64 \
    --LL=1K,4,64 --I1=1K,4,64 > /dev/null 2>&1
if python3 -c 'import json,sys; sys.exit("itlb" in json.load(open(sys.argv[1])))' "$OUT/r.json"; then
    ok "sim: --cachegrind simulates no ITLB"
else
    fail "sim: --cachegrind simulates no ITLB"
fi
# Per code object: walks' walk_rows and walk_cols share a 4 KiB page; a
# fetch outside the binary (code object 0) at 0x900000 in between evicts it
# from a 1-entry ITLB: rows, outside, cols, outside, rows: 2 + 2 + 1 misses.
walks_bin="$SAMPLES_SIM/walks-gcc-O2"
rows_at=$(nm "$walks_bin" | awk '$3 == "walk_rows" { print $1 }')
cols_at=$(nm "$walks_bin" | awk '$3 == "walk_cols" { print $1 }')
printf '2 %s 4\n2 900000 4\n2 %s 4\n2 900000 4\n2 %s 4\n' "$rows_at" "$cols_at" "$rows_at" \
    > "$OUT/itlb_code.din"
if "$MTOOL" sim --trace "$OUT/itlb_code.din" --binary "$walks_bin" --no-store --I1=8K,4,64 \
        --D1=512,2,64 --L2=none --ITLB=1,1 --json -o "$OUT/ic.json" 2> "$OUT/err" &&
    "$MTOOL" sim --trace "$OUT/itlb_code.din" --binary "$walks_bin" --no-store --I1=8K,4,64 \
        --D1=512,2,64 --L2=none --ITLB=1,1 -o "$OUT/ic.txt" 2>> "$OUT/err" &&
    [ $((0x$rows_at >> 12)) -eq $((0x$cols_at >> 12)) ] &&
    python3 -c 'import json, sys
d = {c["name"]: c["itlb_misses"] for c in json.load(open(sys.argv[1]))["code_objects"]}
want = {"walk_rows": 2, "walk_cols": 1, "(outside the binary\x27s procedures)": 2}
sys.exit(d != want and "ITLB misses per code object: %s" % d)' "$OUT/ic.json" &&
    grep -Eq '^walk_rows .* 2$' "$OUT/ic.txt" && grep -Eq '^walk_cols .* 1$' "$OUT/ic.txt" &&
    grep -q '^ITLB  *5  *5 ' "$OUT/ic.txt"; then
    ok "sim: ITLB misses per code object: walk_rows 2, walk_cols 1, outside 2"
else
    fail "sim: ITLB misses per code object: $(head -1 "$OUT/err") $(grep -h 'ITLB misses' "$OUT/err")"
fi

# --- line use per code object (--binary: code objects are its procedures) ---
# walks' walk_rows reads the first 8 bytes of 16 lines (12.5% of each used),
# then walk_cols reads 8 lines whole, 8 bytes at a time (100%, 7 reuses a
# line): a fetch at a procedure's entry (link-time address: din traces are
# not relocated) makes the reads after it that procedure's.  A D1 of 8
# lines: the rows' lines leave as the columns' come in, the columns' are
# still there at the end and count as they are then.
{
    printf '2 %s 4\n' "$(nm "$walks_bin" | awk '$3 == "walk_rows" { print $1 }')"
    for k in $(seq 0 15); do printf '0 %x 8\n' $((0x10000 + k * 64)); done
    printf '2 %s 4\n' "$(nm "$walks_bin" | awk '$3 == "walk_cols" { print $1 }')"
    for k in $(seq 0 7); do
        for b in 0 8 16 24 32 40 48 56; do printf '0 %x 8\n' $((0x20000 + k * 64 + b)); done
    done
} > "$OUT/use.din"
if "$MTOOL" sim --trace "$OUT/use.din" --binary "$walks_bin" --no-store --I1=8K,4,64 \
        --D1=512,2,64 --L2=none --json -o "$OUT/use.json" 2> "$OUT/err" &&
    "$MTOOL" sim --trace "$OUT/use.din" --binary "$walks_bin" --no-store --I1=8K,4,64 \
        --D1=512,2,64 --L2=none -o "$OUT/use.txt" 2>> "$OUT/err" &&
    python3 -c 'import json, sys
d = {c["name"]: c["use"]["D1"] for c in json.load(open(sys.argv[1]))["code_objects"] if "D1" in c["use"]}
want = {"walk_rows": {"lines": 16, "bytes_used": 128, "reuses": 0, "spatial_use": 0.125},
        "walk_cols": {"lines": 8, "bytes_used": 512, "reuses": 56, "spatial_use": 1}}
sys.exit(d != want and "code objects D1 use: %s" % d)' "$OUT/use.json" &&
    grep -Eq '^walk_rows +[0-9]+ +[0-9.]+% +[0-9]+ +16 +12.5% +0$' "$OUT/use.txt" &&
    grep -Eq '^walk_cols +[0-9]+ +[0-9.]+% +[0-9]+ +8 +100.0% +56$' "$OUT/use.txt"; then
    ok "sim: line use per code object: walk_rows 16 lines 12.5% used, walk_cols 8 lines 100%, 56 reuses"
else
    fail "sim: line use per code object: $(head -1 "$OUT/err")"
fi

# --- bad input: one line naming the file (and line), exit 1, no output ---
printf '0 0\n0 zz\n' > "$OUT/bad.din"
bad() {
    name=$1 pattern=$2
    shift 2
    rm -f "$OUT/none.json"
    "$MTOOL" sim "$@" -o "$OUT/none.json" > /dev/null 2> "$OUT/err"
    rc=$?
    if [ $rc -ne 0 ] && [ $rc -ne 139 ] && [ "$(grep -c . "$OUT/err")" -eq 1 ] &&
        grep -q -- "$pattern" "$OUT/err" && [ ! -e "$OUT/none.json" ]; then
        ok "sim: $name"
    else
        fail "sim: $name (status $rc: $(head -2 "$OUT/err"))"
    fi
}
bad "a malformed din line is named with its file and line" "bad.din:2: expected a hexadecimal" \
    --trace "$OUT/bad.din" --D1=32K,8,64
printf 'I  401000,3\n' > "$OUT/lackey.txt"
bad "a lackey trace read as din says so at line 1" "lackey.txt:1:" --trace "$OUT/lackey.txt" \
    --D1=32K,8,64
bad "a din trace read as lackey is refused" "cold.din:1:" --trace "$OUT/cold.din" \
    --format lackey --D1=32K,8,64
bad "a directory is no trace" "is a directory" --trace "$OUT" --D1=32K,8,64
bad "a missing trace" "No such file" --trace "$OUT/nothing" --D1=32K,8,64
bad "an unknown format" "expected din or lackey" --trace "$OUT/cold.din" --format dinero
bad "a geometry that is no whole number of sets" "whole number of sets" \
    --trace "$OUT/cold.din" --D1=1000,3,64
bad "an unknown replacement" "replacement" --trace "$OUT/cold.din" --replacement=fifo
bad "a TLB whose entries are no multiple of its ways" "TLB1: expected ENTRIES,WAYS" \
    --trace "$OUT/cold.din" --D1=32K,8,64 --TLB1=6,4
bad "TLB2 before TLB1" "TLB2: TLB1 comes first" --trace "$OUT/cold.din" --D1=32K,8,64 \
    --TLB1=none --TLB2=64,4
bad "an ITLB whose entries are no multiple of its ways" "ITLB: expected ENTRIES,WAYS" \
    --trace "$OUT/cold.din" --D1=32K,8,64 --ITLB=6,4
printf 'version = 2\nD1 = 32K,8,64\n' > "$OUT/machine.txt"
bad "a machine file of another version" "machine.txt:1: version" --trace "$OUT/cold.din" \
    --machine "$OUT/machine.txt"
nl=$(printf 'x\ny')
printf '0 0\n0 zz\n' > "$OUT/a${nl}b.din"
bad "a file name with a newline stays on one line" 'ax\\x0ayb.din:2:' --trace "$OUT/a${nl}b.din" \
    --D1=32K,8,64

# --print-machine writes a description --machine reads back.
if "$MTOOL" sim --print-machine --D1=32K,8,64 --L2=none --LL=1M,16,64 --I1=none \
        --replacement=plru --TLB1=64,4 --TLB2=1024,8 --ITLB=32,4 --tlb-page=2M > "$OUT/m.txt" \
        2> "$OUT/err" &&
    "$MTOOL" sim --machine "$OUT/m.txt" --print-machine > "$OUT/m2.txt" 2>> "$OUT/err" &&
    cmp -s "$OUT/m.txt" "$OUT/m2.txt" && grep -q '^L2 = 1048576,16,64$' "$OUT/m.txt" &&
    grep -q '^D1.replacement = plru$' "$OUT/m.txt" && grep -q '^TLB2 = 1024,8$' "$OUT/m.txt" &&
    grep -q '^ITLB = 32,4$' "$OUT/m.txt" && grep -q '^tlb_page = 2097152$' "$OUT/m.txt"; then
    ok "sim: --print-machine round-trips through --machine"
else
    fail "sim: --print-machine round trip: $(head -1 "$OUT/err")"
fi

# --- against Cachegrind ---
if ! command -v valgrind > /dev/null 2>&1; then
    fail "sim: valgrind is not installed (the Cachegrind oracle needs it)"
    exit 0
fi
GEOMETRY=${SIM_GEOMETRY:-"--I1=16384,4,64 --D1=16384,4,64 --LL=262144,8,64"}

# cross_check BIN GEOMETRY...: BIN traced by lackey and run under cachegrind
# with GEOMETRY; `mtool sim --cachegrind` on the trace must agree.  Leaves
# the trace in $OUT/NAME.lackey and mtool's figures in $OUT/NAME.json.
cross_check() {
    bin=$1
    shift
    name=$(basename "$bin")
    valgrind --tool=lackey --trace-mem=yes --log-file="$OUT/$name.lackey" "$bin" \
        > /dev/null 2>&1 &&
    valgrind --tool=cachegrind --cache-sim=yes "$@" --cachegrind-out-file="$OUT/$name.cg" \
        "$bin" > /dev/null 2>&1
    if [ $? -ne 0 ]; then
        fail "sim vs cachegrind: $name: valgrind failed"
        return 1
    fi
    if ! "$MTOOL" sim --trace "$OUT/$name.lackey" --format lackey --binary "$bin" --cachegrind \
        "$@" --json -o "$OUT/$name.json" 2> "$OUT/err"; then
        fail "sim vs cachegrind: $name: $(head -1 "$OUT/err")"
        return 1
    fi
    python3 "$(dirname "$0")/cachegrind_check.py" "sim: $name" "$OUT/$name.cg" "$OUT/$name.json"
}

if [ $# -gt 0 ]; then
    for bin in "$@"; do
        cross_check "$bin" $GEOMETRY
    done
    exit 0
fi
for bin in "$SAMPLES/matmul-gcc-O2-nopie" "$SAMPLES/linked-gcc-O2-nopie"; do
    cross_check "$bin" $GEOMETRY
done

# The ITLB on a real program's fetches: matmul's lackey trace (the loader,
# libc and the binary, whose code spans many pages) through 4 entries of 2
# ways, against an independent replay (tests/itlb_oracle.py); every miss
# lands on a code object.
lackey="$OUT/matmul-gcc-O2-nopie.lackey"
if [ -s "$lackey" ] &&
    "$MTOOL" sim --trace "$lackey" --format lackey --binary "$SAMPLES/matmul-gcc-O2-nopie" \
        --no-store --ITLB=4,2 --json -o "$OUT/itlb.json" 2> "$OUT/err"; then
    want=$(python3 "$(dirname "$0")/itlb_oracle.py" "$lackey" 4 2)
    got=$(python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(d["itlb"]["refs"], d["itlb"]["misses"], sum(c["itlb_misses"] for c in d["code_objects"]))' \
        "$OUT/itlb.json")
    if [ "$got" = "$want ${want#* }" ]; then
        ok "sim: ITLB on matmul's lackey trace: translations and misses ($want) as replayed apart"
    else
        fail "sim: ITLB on matmul's lackey trace: got '$got', replayed '$want'"
    fi
else
    fail "sim: ITLB on matmul's lackey trace: $(head -1 "$OUT/err")"
fi

# --- samples of known behaviour (samples/walks.c, chase.c, aos.c, reuse.c) ---
# PIE builds, sized for this simulated geometry (not this machine's caches):
# their Cachegrind cross-check, then the miss causes, spatial and temporal
# use their sources imply, per procedure (tests/sim_samples_check.py).
SAMPLE_GEOMETRY="--I1=8192,4,64 --D1=8192,4,64 --LL=65536,8,64"
for sample in walks chase aos reuse; do
    bin="$SAMPLES_SIM/$sample-gcc-O2"
    cross_check "$bin" $SAMPLE_GEOMETRY || continue
    # a checker that stops without a verdict is a failure, not silence
    python3 "$(dirname "$0")/sim_samples_check.py" "$sample" "$OUT/$(basename "$bin").json" \
        > "$OUT/check.out" 2>&1 || grep -q '^not ok' "$OUT/check.out" ||
        echo "not ok - sim sample: $sample: the check stopped: $(tail -1 "$OUT/check.out")" \
            >> "$OUT/check.out"
    cat "$OUT/check.out"
done

# --- the load base of a PIE (--binary, --load-base) ---
# Valgrind maps a PIE main executable's link-time 0 at 0x108000: the
# trace holds a fetch of the ELF entry point (_start) there, and mtool uses
# that base by default.
bin="$SAMPLES_SIM/walks-gcc-O2"
name=$(basename "$bin")
entry=$(python3 -c 'import struct, sys
h = open(sys.argv[1], "rb").read(64)
e_type, = struct.unpack_from("<H", h, 16)
e_entry, = struct.unpack_from("<Q", h, 24)
print("%x" % (0x108000 + e_entry) if e_type == 3 else "not a PIE")' "$bin")
if grep -q -m1 "^I  0*$entry," "$OUT/$name.lackey" 2> /dev/null &&
    [ "$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["load_base"])' \
        "$OUT/$name.json")" = 1081344 ]; then
    ok "sim: a PIE's lackey trace runs _start at 0x108000 + its entry, mtool's default base"
else
    fail "sim: no fetch of the PIE's entry at 0x108000 + entry ($entry), or another default"
fi
# An explicit base: the right one names the same procedures; a wrong one
# (where nothing runs: Valgrind puts ld.so at 0x4000000) names none, with a
# warning.
if "$MTOOL" sim --trace "$OUT/$name.lackey" --format lackey --binary "$bin" --cachegrind \
        $SAMPLE_GEOMETRY --load-base 0x108000 --json -o "$OUT/base.json" 2> "$OUT/err" &&
    cmp -s "$OUT/base.json" "$OUT/$name.json"; then
    ok "sim: --load-base 0x108000 is the default for a lackey trace"
else
    fail "sim: --load-base 0x108000 differs from the default: $(head -1 "$OUT/err")"
fi
if "$MTOOL" sim --trace "$OUT/$name.lackey" --format lackey --binary "$bin" --cachegrind \
        $SAMPLE_GEOMETRY --load-base 0x10000000000 --json -o "$OUT/base.json" 2> "$OUT/err" &&
    grep -q "no reference of the trace is in a procedure of" "$OUT/err" &&
    python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(any(c["id"] for c in d["code_objects"]))' "$OUT/base.json"; then
    ok "sim: a wrong --load-base names no procedure, and says so"
else
    fail "sim: a wrong --load-base: $(head -1 "$OUT/err")"
fi
bad "--load-base on a non-PIE is refused" "is not a PIE" --trace "$OUT/$name.lackey" \
    --format lackey --binary "$SAMPLES/matmul-gcc-O2-nopie" --load-base 0x108000 \
    $SAMPLE_GEOMETRY
bad "--load-base must be page-aligned" "page-aligned" --trace "$OUT/$name.lackey" \
    --format lackey --binary "$bin" --load-base 0x108001 $SAMPLE_GEOMETRY
bad "--load-base needs --binary" "needs --binary" --trace "$OUT/$name.lackey" \
    --format lackey --load-base 0x108000 $SAMPLE_GEOMETRY
