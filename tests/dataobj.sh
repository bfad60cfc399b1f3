#!/bin/sh
# tests/dataobj.sh — data objects of traced runs (`mtool sim -- BIN`,
# docs/SIMULATOR.md "Data objects"):
#   - chase and aos (samples/): the misses land on the struct field the
#     loop reads, every array index folded ("pool.node.value",
#     "records.key"), with the field's spatial use, and aos' two loops'
#     own line use as code objects: a line per element, 12.5% of it used
#     (tests/dataobj_check.py);
#   - heap (samples/heap.c): two allocation sites named malloc@PROC:LINE
#     with their references and misses, the second block at the first's
#     freed address taking every reference made after the free;
#   - tests/trace/kernels.c: a callee's stores into its caller's frame
#     land on "stack:CALLER"; TLS reached through a computed pointer is
#     the __thread variable, by its TLS symbol;
#   - calloc's zeroing inside a traced libc lands on the calloc'd block:
#     as many references as libc's memset of the same chunk by the program;
#   - DWARF damaged in many ways (truncated, overwritten) never crashes:
#     the run goes on, with at most one warning, or one error line naming
#     the file when the ELF itself is cut.
#
#   MTOOL=build/asan/mtool SAMPLES_SIM=build/samples-sim sh tests/dataobj.sh
set -u
MTOOL=${MTOOL:-build/asan/mtool}
SAMPLES_SIM=${SAMPLES_SIM:-build/samples-sim}
HERE=$(dirname "$0")
OUT=$(mktemp -d "${TMPDIR:-/tmp}/mtool-dataobj.XXXXXX")
trap 'rm -rf "$OUT"' EXIT INT TERM
export XDG_CONFIG_HOME="$OUT/config"
GEOMETRY="--I1=8K,4,64 --D1=8K,4,64 --LL=64K,8,64 --cachegrind"

ok() { echo "ok - $*"; }
fail() { echo "not ok - $*"; }

# --libs none but for calloc's zeroing below: the objects checked are the
# programs' own, and glibc traced (sim's default) cost this suite 126 s of
# CPU against 11 under ASan (CI, AMD EPYC Zen 3), a tracing copy of libc a
# program and its references.
for s in chase aos heap; do
    bin="$SAMPLES_SIM/$s-gcc-O2"
    # shellcheck disable=SC2086
    if "$MTOOL" sim $GEOMETRY --libs none --json -o "$OUT/$s.json" -- "$bin" > "$OUT/$s.out" 2> "$OUT/$s.err"; then
        python3 "$HERE/dataobj_check.py" "$s" "$OUT/$s.json" "$HERE/../samples/$s.c" "$OUT/$s.out"
    else
        fail "data objects: $s: mtool sim failed: $(head -1 "$OUT/$s.err")"
    fi
done

# pair CODE_PREFIX DATA: the references of code objects named CODE_PREFIX...
# to data object DATA, from $OUT/k.json.
pair() {
    python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
print(sum(p["refs"] for p in d["code_data"]
          if p["code_name"].split("@")[0] == sys.argv[2] and p["data_name"] == sys.argv[3]))' \
        "$OUT/k.json" "$1" "$2"
}

if ! cc -O2 -pthread -g -o "$OUT/kernels" "$HERE/trace/kernels.c"; then
    fail "data objects: tests/trace/kernels.c does not build"
else
    "$MTOOL" sim --D1=16K,4,64 --L2=none --libs none --json -o "$OUT/k.json" -- "$OUT/kernels" frames \
        > "$OUT/k.out" 2> "$OUT/k.err"
    n=$(pair fill_frame.constprop.0 stack:own_frame)
    [ "$n" = 0 ] && n=$(pair fill_frame stack:own_frame)
    [ "$n" = 256 ] && ok "data objects: a callee's 256 stores into its caller's frame are stack:own_frame" ||
        fail "data objects: fill_frame's stores into own_frame's frame: $n, not 256"
    n=$(pair own_frame stack:own_frame)
    [ "$n" -ge 256 ] && ok "data objects: own_frame's 256 loads of its frame are its own" ||
        fail "data objects: own_frame's loads of its own frame: $n, not 256 or more"
    "$MTOOL" sim --D1=16K,4,64 --L2=none --libs none --json -o "$OUT/k.json" -- "$OUT/kernels" \
        > "$OUT/k.out" 2> "$OUT/k.err"
    n=$(pair tls_walk tls)
    # 512 iterations of a store and a load of a __thread array, through a
    # pointer: the variable by its TLS symbol (kernels.c names it "tls"), its
    # kind and 32 KiB size what the symbol says
    var=$(python3 -c 'import json,sys
print(" ".join("%s:%s" % (o["kind"], o["size"]) for o in json.load(open(sys.argv[1]))["data_objects"] if o["name"] == "tls"))' "$OUT/k.json")
    [ "$n" -ge 1024 ] && [ "$var" = "tls:32768" ] &&
        ok "data objects: tls_walk's 1024 references are the __thread variable tls (kind:size $var)" ||
        fail "data objects: tls_walk's references to tls: $n, not 1024 or more, or not the variable ($var)"
fi

# calloc's zeroing, inside libc (traced by default): its stores are the
# block's, not "(other)" (the runtime puts the block's ALLOC events before
# the records calloc made: timer/runtime.c, heap_made_before_here).  The
# oracle is the same zeroing done by the program: the same chunk (freed
# into a bin, then taken again: the program prints that the addresses are
# equal) malloc'd and set to 0 over malloc_usable_size bytes by libc's own
# memset, the variant calloc calls on this CPU, at the same address: libc's
# references to both blocks are equal, whatever that variant's stores;
# and the program's own loads of the calloc'd block are its 512 words.
cat > "$OUT/cz.c" <<'C'
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static void *(*volatile set)(void *, int, size_t) = memset; /* libc's, never inlined */
int main(void)
{
    size_t n = 4096;
    char *a = malloc(n), *guard = malloc(64); /* a's chunk does not go back to the top */
    set(a, 1, n);
    free(a);
    long *b = calloc(n / sizeof(long), sizeof(long)); /* a's chunk: calloc zeroes all of it */
    long s = 0;
    for (size_t i = 0; i < n / sizeof(long); i++)
        s += b[i];
    free(b);
    char *c = malloc(n);
    set(c, 0, malloc_usable_size(c));
    printf("%ld %d %d\n", s, (void *)b == (void *)a, (void *)c == (void *)b);
    free(c);
    free(guard);
    return 0;
}
C
if cc -O1 -g -o "$OUT/cz" "$OUT/cz.c"; then
    "$MTOOL" sim --no-store --json -o "$OUT/cz.json" -- "$OUT/cz" > "$OUT/cz.out" 2> "$OUT/cz.err"
    got=$(python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
refs = lambda lib, data: sum(p["refs"] for p in d["code_data"]
                             if p["code_name"].startswith("libc.so.6:") == lib and
                             p["data_name"].startswith(data))
print(refs(True, "calloc@main:"), refs(True, "malloc@main:17"), refs(False, "calloc@main:"))'         "$OUT/cz.json" 2> /dev/null)
    set -- $got
    if grep -qx '0 1 1' "$OUT/cz.out" && [ "${1:-0}" -gt 0 ] && [ "$1" = "${2:-}" ] && [ "${3:-}" = 512 ]; then
        ok "data objects: calloc's zeroing inside libc lands on its block ($1 references, as libc's memset of the same chunk), the program's 512 loads too"
    else
        fail "data objects: calloc's zeroing: libc's references to the calloc'd block, to the memset one and the program's: ${got:-none} ($(cat "$OUT/cz.out"); $(head -1 "$OUT/cz.err"))"
    fi
else
    fail "data objects: the calloc sample does not build"
fi

# Damaged DWARF: the chase sample with its .debug_info, .debug_abbrev or
# .debug_str overwritten or cut short (section sizes shrunk), or the file
# itself truncated.  Never a crash: the program runs and prints its sum
# (or mtool refuses the file in one line naming it), no sanitizer report.
python3 - "$SAMPLES_SIM/chase-gcc-O2" "$OUT" <<'EOF'
import random, struct, sys
src, out = sys.argv[1], sys.argv[2]
data = bytearray(open(src, "rb").read())
shoff, = struct.unpack_from("<Q", data, 0x28)
shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3a)
def header(i):
    return shoff + i * shentsize
stroff, = struct.unpack_from("<Q", data, header(shstrndx) + 0x18)
sections = {}
for i in range(shnum):
    h = header(i)
    name, = struct.unpack_from("<I", data, h)
    end = data.index(0, stroff + name)
    off, size = struct.unpack_from("<QQ", data, h + 0x18)
    sections[data[stroff + name:end].decode()] = (h, off, size)
rng = random.Random(15)
cases = []
for sec in (".debug_info", ".debug_abbrev", ".debug_str"):
    h, off, size = sections[sec]
    for cut in (1, size // 3, size // 2, size - 1):
        d = bytearray(data)
        struct.pack_into("<Q", d, h + 0x20, cut)
        cases.append((f"{sec}-cut{cut}", d))
    for seed in range(6):
        d = bytearray(data)
        for _ in range(1 + seed * 8):
            at = off + rng.randrange(size)
            d[at] = rng.randrange(256)
        cases.append((f"{sec}-noise{seed}", d))
    d = bytearray(data)
    d[off:off + size] = b"\xff" * size
    cases.append((f"{sec}-ff", d))
cases.append(("file-cut", bytearray(data[:sections[".debug_info"][1] + 40])))
for name, d in cases:
    open(f"{out}/bad-{name}", "wb").write(d)
print("\n".join(name for name, _ in cases), file=open(f"{out}/bad.list", "w"))
EOF
bad=0 total=0
while read -r name; do
    f="$OUT/bad-$name"
    chmod +x "$f"
    total=$((total + 1))
    # --libs none: each damaged file is a new executable, for which glibc's
    # tracing copy was made anew (its set names the executable): 6 s each
    # under ASan, 190 s of this suite's 192 with an empty cache (Xeon
    # family 6 model 85); the DWARF read is the executable's.
    "$MTOOL" sim --D1=8K,4,64 --L2=none --libs none -o "$OUT/bad.txt" -- "$f" > "$OUT/bad.out" 2> "$OUT/bad.err"
    rc=$?
    if grep -q -e AddressSanitizer -e 'runtime error' -e LeakSanitizer "$OUT/bad.err" ||
        [ $rc -gt 1 ] || { [ $rc -eq 0 ] && ! grep -qx 134201344 "$OUT/bad.out"; } ||
        { [ $rc -eq 1 ] && { [ "$(wc -l < "$OUT/bad.err")" != 1 ] ||
                             ! grep -q "bad-$name" "$OUT/bad.err"; }; }; then
        bad=$((bad + 1))
        echo "# $name: exit $rc: $(head -3 "$OUT/bad.err")"
    fi
done < "$OUT/bad.list"
[ "$total" -gt 30 ] && [ $bad = 0 ] &&
    ok "data objects: $total damaged DWARF files: no crash, the program runs (or one error line)" ||
    fail "data objects: $bad of $total damaged DWARF files crashed or misbehaved"

# A trace file with --binary (aos, a PIE placed at a load base by hand): its
# globals and their fields are named, everything else is "other" (a trace
# says nothing of the heap or the stack).  records[i].key for 64 records
# (64 lines, a miss each), a write of sink, records[0].weight (the line
# records[0].key brought in: a hit), and an address in no object.
aos="$SAMPLES_SIM/aos-gcc-O2"
base=0x555555554000
records=$(nm "$aos" | awk '$3 == "records" { print $1 }')
sink=$(nm "$aos" | awk '$3 == "sink" { print $1 }')
python3 - "$base" "$records" "$sink" > "$OUT/aos.din" <<'PY'
import sys
base, records, sink = (int(x, 16) for x in sys.argv[1:4])
for i in range(64):
    print(f"0 {base + records + 64 * i:x} 8")
print(f"1 {base + sink:x} 8")
print(f"0 {base + records + 8:x} 8")
print("0 7ffffffde000 8")
PY
"$MTOOL" sim --trace "$OUT/aos.din" --binary "$aos" --load-base "$base" --no-store \
    $GEOMETRY --json -o "$OUT/aos-trace.json" > /dev/null 2> "$OUT/aos-trace.err"
python3 - "$OUT/aos-trace.json" <<'PY' && ok "data objects: a din trace with --binary names globals and fields (records.key 64 refs 64 D1 misses, sink, records.weight a hit, one other)" || fail "data objects: a din trace with --binary: $(cat "$OUT/aos-trace.err" | head -2)"
import json, sys
d = {o["name"]: (o["kind"], o["refs"], sum(o["misses"]["D1"].values()))
     for o in json.load(open(sys.argv[1]))["data_objects"]}
want = {"records.key": ("field", 64, 64), "sink": ("global", 1, 1),
        "records.weight": ("field", 1, 0), "(other)": ("other", 1, 1)}
if d != want:
    print(f"# got {d}")
    sys.exit(1)
PY
