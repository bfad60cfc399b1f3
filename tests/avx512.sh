#!/bin/sh
# tests/avx512.sh — code capstone 4 cannot decode (AVX-512 mask registers,
# byte/word EVEX forms, rdpkru), decoded by Zydis through common/x86_decode:
#   1. libc (when /lib/x86_64-linux-gnu/libc.so.6 exists; decoding is static,
#      so this holds on any CPU): no procedure left unresolved for an
#      "invalid instruction" (capstone alone left 40 in Debian's glibc 2.36),
#      and every block that starts where objdump's linear sweep starts an
#      instruction holds as many instructions as objdump reads there;
#   2. where the CPU has AVX-512 (VL, BW) and BMI2, so that glibc's ifuncs
#      pick the evex string functions: a static program calling strlen,
#      memchr, strcmp and memcmp (tests/evex/strfuncs.c)
#      - under `mtool count` and `mtool sim --`: output and exit status the
#        original's;
#      - __strlen_evex, __memchr_evex, __strcmp_evex and __memcmp_evex_movbe
#        counted, each entered exactly N more times in a run of 2N iterations
#        than in a run of N (startup's own calls cancel out);
#      - one memchr of a 64-byte buffer whose byte 40 matches: __memchr_evex
#        makes 3 memory references, by hand count (its two 32-byte loads,
#        bytes 0-31 and 32-63, then the ret), both counted (memory ops per
#        entry) and traced (mtool sim's references).
#   Valgrind cannot be the oracle here: its CPUID hides AVX-512, so under it
#   glibc picks the avx2 or sse2 variants and none of this code runs.
#   On a CPU without AVX-512 (AMD Zen 3) part 2 is skipped with a message.
#
#   MTOOL=build/asan/mtool sh tests/avx512.sh
set -u
MTOOL=${MTOOL:-build/asan/mtool}
OUT=$(mktemp -d "${TMPDIR:-/tmp}/mtool-avx512.XXXXXX")
trap 'rm -rf "$OUT"' EXIT INT TERM
export XDG_CONFIG_HOME="$OUT/config" XDG_CACHE_HOME="$OUT/cache" MTOOL_HISTORY="$OUT/history.db"
. "$(dirname "$0")/lib.sh"

LIBC=/lib/x86_64-linux-gnu/libc.so.6
if [ -f "$LIBC" ]; then
    "$MTOOL" analyze --json "$LIBC" > "$OUT/libc.json" 2> /dev/null ||
        not_ok "avx512: mtool analyze $LIBC failed"
    objdump -d --no-show-raw-insn "$LIBC" > "$OUT/libc.objdump" ||
        not_ok "avx512: objdump -d $LIBC failed"
    got=$(python3 - "$OUT/libc.json" "$OUT/libc.objdump" << 'EOF'
import bisect, json, re, sys
procs = json.load(open(sys.argv[1]))["procedures"]
invalid = sum("invalid instruction" in (p.get("unresolved_reason") or "") for p in procs)
starts = sorted(int(m.group(1), 16) for m in
                (re.match(r"\s+([0-9a-f]+):", line) for line in open(sys.argv[2])) if m)
known = set(starts)
wrong = 0
for p in procs:
    for b in p["blocks"]:
        s, e = int(b["start"], 16), int(b["end"], 16)
        if s in known:
            n = bisect.bisect_left(starts, e) - bisect.bisect_left(starts, s)
            wrong += n != b["instructions"]
print(invalid, wrong)
EOF
)
    check "avx512: libc: no procedure unresolved for an invalid instruction (got ${got%% *})" \
        "[ '${got%% *}' = 0 ]"
    check "avx512: libc: blocks hold as many instructions as objdump reads (${got#* } differ)" \
        "[ '${got#* }' = 0 ]"
else
    ok "avx512: libc part skipped: no $LIBC"
fi

has_flag() { grep -qw "$1" /proc/cpuinfo; }
if ! has_flag avx512vl || ! has_flag avx512bw || ! has_flag bmi2; then
    ok "avx512: end-to-end part skipped: this CPU lacks AVX-512 VL/BW or BMI2, glibc runs no evex code here"
    print_totals
    exit
fi
if ! cc -O2 -static -o "$OUT/strfuncs" "$(dirname "$0")/evex/strfuncs.c" 2> "$OUT/cc.err"; then
    ok "avx512: end-to-end part skipped: no static glibc to link with ($(head -1 "$OUT/cc.err"))"
    print_totals
    exit
fi

# counted N: the original's output and status, then `mtool count` of N iterations.
counted() {
    "$OUT/strfuncs" "$@" > "$OUT/want.$1" 2>&1
    want=$?
    "$MTOOL" count --no-store --no-baseline -o "$OUT/run.$1" -- "$OUT/strfuncs" "$@" \
        > "$OUT/got.$1" 2> "$OUT/err.$1"
    got=$?
    check "avx512: count $*: exit status $want kept" "[ $got -eq $want ]"
    check "avx512: count $*: the program's output unchanged" "cmp -s '$OUT/want.$1' '$OUT/got.$1'"
}
counted 1000
counted 2000
entries=$(python3 - "$OUT/run.1000/count.json" "$OUT/run.2000/count.json" << 'EOF'
import json, sys
def entries(path):
    return {p["name"]: p["entries"] for p in json.load(open(path))["procedures"]}
a, b = entries(sys.argv[1]), entries(sys.argv[2])
for f in ("__strlen_evex", "__memchr_evex", "__strcmp_evex", "__memcmp_evex_movbe"):
    print(f, b.get(f, 0) - a.get(f, 0), a.get(f, 0))
EOF
)
echo "$entries" | while read -r name diff first; do
    [ "$diff" = 1000 ] && [ "$first" -ge 1000 ] && echo "ok - avx512: $name entered 1000 more times in 2000 iterations than in 1000 ($first in 1000)" ||
        echo "not ok - avx512: $name entered $diff more times in 2000 iterations than in 1000 (want 1000; $first in 1000)"
done > "$OUT/entries"
cat "$OUT/entries"
tally "$OUT/entries"
check "avx512: the four evex procedures are there" "[ \$(grep -c . '$OUT/entries') -eq 4 ]"

"$OUT/strfuncs" 1 memchr > "$OUT/want.memchr" 2>&1
"$MTOOL" count --no-store --no-baseline -o "$OUT/run.memchr" -- "$OUT/strfuncs" 1 memchr \
    > "$OUT/got.memchr" 2> "$OUT/err.memchr"
check "avx512: count, one memchr: output unchanged" "cmp -s '$OUT/want.memchr' '$OUT/got.memchr'"
ops=$(python3 -c 'import json, sys
p = [p for p in json.load(open(sys.argv[1]))["procedures"] if p["name"] == "__memchr_evex"]
print("%d/%d" % (p[0]["memory_ops"], p[0]["entries"]) if p else "none")' "$OUT/run.memchr/count.json")
check "avx512: count: one memchr of 64 bytes matching at 40 makes 3 memory operations in __memchr_evex (got $ops)" \
    "[ '$ops' = 3/1 ]"

"$MTOOL" sim --no-store --json -o "$OUT/sim.json" -- "$OUT/strfuncs" 1 memchr \
    > "$OUT/sim.out" 2> "$OUT/sim.err"
check "avx512: sim, one memchr: output unchanged" "cmp -s '$OUT/want.memchr' '$OUT/sim.out'"
refs=$(python3 -c 'import json, sys
print(sum(o["refs"] for o in json.load(open(sys.argv[1]))["code_objects"]
          if o.get("procedure") == "__memchr_evex"))' "$OUT/sim.json" 2> /dev/null)
check "avx512: sim: one memchr of 64 bytes matching at 40 traces 3 references in __memchr_evex (got ${refs:-none})" \
    "[ '${refs:-0}' = 3 ]"

"$OUT/strfuncs" 300 > "$OUT/want.300" 2>&1
want=$?
"$MTOOL" sim --no-store -o "$OUT/sim300.txt" -- "$OUT/strfuncs" 300 > "$OUT/sim300.out" 2> "$OUT/sim300.err"
got=$?
check "avx512: sim 300: exit status $want kept" "[ $got -eq $want ]"
check "avx512: sim 300: the program's output unchanged" "cmp -s '$OUT/want.300' '$OUT/sim300.out'"
print_totals
