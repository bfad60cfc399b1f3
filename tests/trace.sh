#!/bin/sh
# tests/trace.sh — `mtool sim -- BIN ARGS` (docs/SIMULATOR.md, "Traced
# runs"): the traced copy's references through the simulator against
# Cachegrind with the same geometry, and the program unchanged.
#   - matmul and linked (gcc -O2, non-PIE and PIE) and tests/trace/kernels.c
#     (rep movsb, rep stosq, %fs operands, SSE2 loads, four threads), and
#     matmul built with AVX2 where the CPU has it: D1 and LL data misses per
#     procedure within 1% of Cachegrind's;
#   - the program's stdout and exit status (kernels: 3) are the original's;
#     tests/trace/bare.c's too, whose records are made in dead registers;
#   - gathers and scatters, element by element: AVX2 ones against
#     Cachegrind, AVX-512 ones (tests/trace/gathers.c) by hand count;
#   - glibc's mem* functions in a static build, whose __mempcpy_* jump
#     into __memmove_* under its entry jump: traced, output unchanged;
#   - every addressing mode (%r12/%r13 bases, index and scale, a negative
#     index, rip-relative, %fs with no base and with an index, 16-byte
#     operands, read-modify-write, rep movsb): hand-counted misses and
#     references;
#   - 256 short threads whose slots are reused: no frame damaged;
#   - a process killed by SIGKILL: the records its thread had not sent yet
#     are read from its profile: touch_lines' 100 stores to 100 lines give
#     100 D1 misses (hand count), and the report says records came after
#     the end.
#
#   MTOOL=build/asan/mtool SAMPLES=build/samples sh tests/trace.sh
set -u
MTOOL=${MTOOL:-build/asan/mtool}
SAMPLES=${SAMPLES:-build/samples}
OUT=$(mktemp -d "${TMPDIR:-/tmp}/mtool-trace.XXXXXX")
trap 'rm -rf "$OUT"' EXIT INT TERM
export XDG_CONFIG_HOME="$OUT/config" XDG_CACHE_HOME="$OUT/cache" MTOOL_HISTORY="$OUT/history.db"
. "$(dirname "$0")/lib.sh"

if ! command -v valgrind > /dev/null 2>&1; then
    not_ok "trace: valgrind is not installed (the Cachegrind oracle needs it)"
    print_totals
    exit
fi
GEOMETRY="--I1=16384,4,64 --D1=16384,4,64 --LL=262144,8,64"
cc -O2 -pthread -o "$OUT/kernels" "$(dirname "$0")/trace/kernels.c" ||
    not_ok "trace: tests/trace/kernels.c does not build"

# traced BIN ARGS...: the program's output and status under mtool sim
# against the original's, then its misses against Cachegrind's.
traced() {
    bin=$1 name=$(basename "$1")
    "$@" > "$OUT/$name.want" 2>&1
    want=$?
    "$MTOOL" sim --cachegrind $GEOMETRY --json -o "$OUT/$name.json" -- "$@" \
        > "$OUT/$name.got" 2> "$OUT/$name.err"
    got=$?
    check "trace: $name: exit status $want kept" "[ $got -eq $want ]"
    check "trace: $name: the program's output unchanged" "cmp -s '$OUT/$name.want' '$OUT/$name.got'"
    check "trace: $name: no damaged trace frame" "! grep -q damaged '$OUT/$name.err'"
    if [ ! -s "$OUT/$name.json" ]; then
        not_ok "trace: $name: no report ($(head -1 "$OUT/$name.err"))"
        return
    fi
    valgrind --tool=cachegrind --cache-sim=yes $GEOMETRY --cachegrind-out-file="$OUT/$name.cg" \
        "$@" > /dev/null 2>&1
    python3 "$(dirname "$0")/cachegrind_check.py" --data "trace: $name" "$OUT/$name.cg" \
        "$OUT/$name.json" > "$OUT/$name.check"
    cat "$OUT/$name.check"
    tally "$OUT/$name.check"
}

for s in matmul-gcc-O2-nopie matmul-gcc-O2 linked-gcc-O2-nopie linked-gcc-O2; do
    traced "$SAMPLES/$s"
done
# A process that has had one thread only sends long frames (8191 records,
# timer.h): fewer than one a 1023 records sent while it ran.
frames=$(frames_sent "$OUT/matmul-gcc-O2.err")
check "trace: matmul's frames are long (records, frames sent, records after, through rings: ${frames:-none})" \
    "echo '${frames:-0 0 0 0}' | awk '{ exit !(\$2 > 10 && \$2 * 4096 < \$1 - \$3) }'"
# ... and all came through its trace ring (timer.h), none in a message.
check "trace: matmul's frames all came through the trace ring (${frames:-none})" \
    "echo '${frames:-0 0 0 0}' | awk '{ exit !(\$2 > 0 && \$4 == \$2) }'"
# The same run with the frames in their messages ($MTOOL_TRACE_RING=0, the
# transport of a slot in anonymous memory): the same report byte for byte
# (at the same addresses: setarch -R, and environments of one length).
if setarch "$(uname -m)" -R true 2> /dev/null; then
    for ring in 0 1; do
        MTOOL_TRACE_RING=$ring setarch "$(uname -m)" -R "$MTOOL" sim --no-store $GEOMETRY --json \
            -o "$OUT/ring$ring.json" -- "$SAMPLES/matmul-gcc-O2" > /dev/null 2> "$OUT/ring$ring.err"
    done
    check "trace: matmul, frames in their messages: none through the ring ($(frames_sent "$OUT/ring0.err"))" \
        "frames_sent '$OUT/ring0.err' | awk '{ exit !(\$2 > 0 && \$4 == 0) }'"
    check "trace: matmul, frames through the ring or in their messages: the same report" \
        "[ -s '$OUT/ring1.json' ] && cmp -s '$OUT/ring0.json' '$OUT/ring1.json'"
fi
traced "$OUT/kernels"
# Records made in dead registers (rewriter/trace.c, bare): a carry chain
# whose adc a record made with `add` and `jnz` precedes (capstone 4 does not
# list adc as a flag reader: the sum changed before liveness.c said so),
# calls through a table of pointers.
if cc -O2 -o "$OUT/bare" "$(dirname "$0")/trace/bare.c"; then
    traced "$OUT/bare"
    check "trace: bare: records made without saving registers ($(grep -o '([0-9]* without saving registers)' "$OUT/bare.err"))" \
        "grep -q '([1-9][0-9]* without saving registers)' '$OUT/bare.err'"
else
    not_ok "trace: tests/trace/bare.c does not build"
fi
# 32-byte vector operands, where the CPU has them (Valgrind 3.19 has no AVX-512).
if grep -qw avx2 /proc/cpuinfo && cc -O3 -mavx2 -mfma -fno-pie -no-pie -o "$OUT/matmul-avx2" \
    "$(dirname "$0")/../samples/matmul.c" 2> /dev/null; then
    traced "$OUT/matmul-avx2"
fi
# Gathers, element by element (tests/trace/gathers.c): AVX2 ones against
# Cachegrind; AVX-512 gathers and a scatter by hand count: vector_kernel's
# 24 references touch 19 lines nothing touched since a sweep, and
# touch_expected, loading exactly those lines, misses none.
if grep -qw avx2 /proc/cpuinfo && cc -O2 -o "$OUT/gathers" "$(dirname "$0")/trace/gathers.c"; then
    traced "$OUT/gathers"
    if grep -qw avx512f /proc/cpuinfo; then
        "$OUT/gathers" 512 > "$OUT/gathers512.want"
        "$MTOOL" sim --D1=16K,4,64 --L2=none --json -o "$OUT/gathers512.json" -- "$OUT/gathers" 512 \
            > "$OUT/gathers512.got" 2> "$OUT/gathers512.err"
        check "trace: AVX-512 gathers: the program's output unchanged" \
            "cmp -s '$OUT/gathers512.want' '$OUT/gathers512.got'"
        got=$(python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
def tally(proc):
    rows = [c for c in d["code_objects"] if c.get("procedure", "").startswith(proc)]
    return sum(c["refs"] for c in rows), sum(sum(c["misses"]["D1"].values()) for c in rows)
print(*tally("vector_kernel"), tally("touch_expected")[1])' "$OUT/gathers512.json" 2> /dev/null)
        check "trace: AVX-512 gathers and scatter: 24 references, 19 D1 misses, then 0 on the lines they touched (got ${got:-none})" \
            "[ '${got:-}' = '24 19 0' ]"
    fi
fi

# glibc's __mempcpy_* jump into __memmove_* under its entry jump
# (tests/trace/hops.c, static): every variant relocated and traced, with
# glibc's choice on this CPU and with AVX-512 masked (AVX2 variants).
if cc -O2 -static -o "$OUT/hops" "$(dirname "$0")/trace/hops.c" 2> /dev/null; then
    want=$("$OUT/hops")
    for tunables in "" "glibc.cpu.hwcaps=-AVX512F,-AVX512VL,-AVX512BW,-AVX512DQ,-AVX512CD,-EVEX"; do
        got=$(GLIBC_TUNABLES=$tunables "$MTOOL" sim --D1=16K,4,64 --json -o "$OUT/hops.json" -- \
            "$OUT/hops" 2> "$OUT/hops.err")
        check "trace: memcpy/mempcpy/memmove in a static build (GLIBC_TUNABLES='$tunables'): output unchanged" \
            "[ '$got' = '$want' ]"
        refs=$(python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(sum(o["refs"] for o in d["code_objects"] if "_unaligned" in (o.get("procedure") or "")))' \
            "$OUT/hops.json" 2> /dev/null)
        check "trace: ... the copies' references traced in glibc's __memmove_*_unaligned* (${refs:-none})" \
            "[ '${refs:-0}' -gt 100000 ]"
    done
    check "trace: no procedure left out for a block under its entry jump" \
        "! grep -qh 'inside the entry jump' '$OUT'/cache/mtool/instrumented/*/report.tsv"
fi

# Every addressing mode (tests/trace/kernels.c, addressing): 12 lines stored
# to plainly, then again through the other forms: hand counts, 12 D1 misses
# and 154 references, if every address computed is the instruction's.
"$MTOOL" sim --D1=16K,4,64 --L2=none --json -o "$OUT/modes.json" -- "$OUT/kernels" modes \
    > /dev/null 2> "$OUT/modes.err"
got=$(python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
rows = [c for c in d["code_objects"] if c.get("procedure") == "addressing"]
print(sum(sum(c["misses"]["D1"].values()) for c in rows), sum(c["refs"] for c in rows))' \
    "$OUT/modes.json" 2> /dev/null)
check "trace: addressing modes: 12 D1 misses, 154 references (got ${got:-none})" \
    "[ '${got:-}' = '12 154' ]"

# Threads by the hundred, their slots reused: every frame whole (a slot
# claimed by two threads mixes their records).
for round in 1 2 3; do
    "$MTOOL" sim --D1=16K,4,64 --L2=none -o "$OUT/churn.txt" -- "$OUT/kernels" churn \
        > /dev/null 2> "$OUT/churn.err"
    check "trace: 256 short threads (round $round): status 3, no damaged frame" \
        "[ $? -eq 3 ] && ! grep -q damaged '$OUT/churn.err'"
done

# Killed: nothing was sent but the start-up's frames (the runtime's
# LOAD_BIAS and TLS_BASE events, and one per traced library's LIBRARY_BASE:
# libc's by default); the 100 records fit one frame, all come from the slot.
"$MTOOL" sim --D1=16K,4,64 --L2=none --json -o "$OUT/kill.json" -- "$OUT/kernels" kill \
    > /dev/null 2> "$OUT/kill.err"
check "trace: SIGKILL: mtool sim exits 137 as the program did" "[ $? -eq 137 ]"
misses=$(python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(sum(sum(c["misses"]["D1"].values()) for c in d["code_objects"]
          if c.get("procedure") == "touch_lines"))' \
    "$OUT/kill.json" 2> /dev/null)
check "trace: SIGKILL: touch_lines' 100 lines are 100 D1 misses (got ${misses:-none})" \
    "[ '${misses:-}' = 100 ]"
sent=$(($(grep -c '^mtool: instrumenting ' "$OUT/kill.err") + 1))
check "trace: SIGKILL: records read after the end ($sent frames sent while it ran: the start-up's)" \
    "grep -q '($sent frames sent while it ran, [1-9][0-9]* records after the program ended)' '$OUT/kill.err'"
print_totals
