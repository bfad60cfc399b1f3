#!/bin/sh
# tests/bad_input.sh — `mtool analyze` on files it cannot (fully) analyze,
# and `mtool instrument` on files it must refuse (its own output, shared
# libraries) or accept (PIE and static PIE executables).
#
# Each case must either fail cleanly (non-zero exit, exactly one stderr line
# "mtool: <path>: reason") or succeed with warnings (exit 0); it must never
# crash (signal, exit >= 128, sanitizer report) nor run longer than 10 s.
#
#   MTOOL=build/asan/mtool sh tests/bad_input.sh
#   REAL=/usr/bin/true     the real binary the corrupted copies are made from
set -u

MTOOL=${MTOOL:-build/mtool}
REAL=${REAL:-}
TIMEOUT=${TIMEOUT:-10}

if [ ! -x "$MTOOL" ]; then
    echo "not ok - mtool binary not found: $MTOOL (set MTOOL)"
    echo "0 passed, 1 failed"
    exit 1
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/mtool-bad-input.XXXXXX") || exit 1
trap 'chmod -R u+rwx "$WORK" 2>/dev/null; rm -rf "$WORK"' EXIT INT TERM

. "$(dirname "$0")/lib.sh"

# check NAME PATH: run the analyzer and judge its exit status and stderr.
check() { check_cmd "$1" "$2" analyze "$2"; }

# check_cmd NAME PATH ARGS...: the same for `mtool ARGS...`, which reads PATH.
check_cmd() {
    name=$1 path=$2
    shift 2
    timeout "$TIMEOUT" "$MTOOL" "$@" >/dev/null 2>"$WORK/stderr" </dev/null
    rc=$?
    if grep -q -e 'Sanitizer' -e 'runtime error' "$WORK/stderr"; then
        not_ok "$name: sanitizer report: $(grep -m1 -e Sanitizer -e 'runtime error' "$WORK/stderr")"
    elif [ "$rc" -eq 124 ]; then
        not_ok "$name: took more than ${TIMEOUT}s"
    elif [ "$rc" -ge 128 ]; then
        not_ok "$name: crashed (exit $rc)"
    elif [ "$rc" -eq 0 ]; then
        ok "$name (analyzed, $(grep -c . "$WORK/stderr") warning lines)"
    else
        lines=$(grep -c '' "$WORK/stderr")
        first=$(head -n 1 "$WORK/stderr")
        case "$first" in
        "mtool: $path: "?*)
            if [ "$lines" -eq 1 ]; then
                ok "$name (${first#mtool: $path: })"
            else
                not_ok "$name: $lines stderr lines, expected 1"
            fi ;;
        *) not_ok "$name: stderr does not start with 'mtool: $path:': $first" ;;
        esac
    fi
}

# poke FILE OFFSET BYTES...: overwrite bytes (given in octal) at OFFSET.
# (POSIX sh has no local variables: poke's own names are prefixed.)
poke() {
    poke_file=$1 poke_off=$2
    shift 2
    poke_bytes=
    for poke_b in "$@"; do poke_bytes="$poke_bytes\\$poke_b"; done
    # shellcheck disable=SC2059
    printf "$poke_bytes" | dd of="$poke_file" bs=1 seek="$poke_off" conv=notrunc 2>/dev/null
}

# u64 FILE OFFSET / u16 FILE OFFSET: read a little-endian integer.
u64() { od -An -t u8 -j "$2" -N 8 "$1" | tr -d ' '; }
u16() { od -An -t u2 -j "$2" -N 2 "$1" | tr -d ' '; }

copy() { cp "$SRC" "$WORK/$1" && chmod u+w "$WORK/$1" && echo "$WORK/$1"; }

# ---- the real binary the corrupted copies come from ------------------------
SRC=$WORK/real
if [ -n "$REAL" ]; then
    cp "$REAL" "$SRC"
elif command -v cc >/dev/null 2>&1 &&
     printf '#include <stdio.h>\nint main(int c, char **v) { for (int i = 0; i < c; i++) puts(v[i]); return 0; }\n' >"$WORK/real.c" &&
     cc -O2 -g -o "$SRC" "$WORK/real.c" 2>/dev/null; then
    :
else
    cp /bin/true "$SRC"
fi
chmod u+w "$SRC"
size=$(wc -c <"$SRC")

check "real binary itself" "$SRC"

# ---- not ELF files ------------------------------------------------------------
check "nonexistent file" "$WORK/does-not-exist"
mkdir "$WORK/a-directory"
check "directory" "$WORK/a-directory"
: >"$WORK/empty"
check "empty file" "$WORK/empty"
printf 'hello, this is not an ELF file\n' >"$WORK/text"
check "text file" "$WORK/text"
printf '\177ELF' >"$WORK/magic-only"
check "ELF magic only" "$WORK/magic-only"
if [ "$(id -u)" -ne 0 ]; then
    cp "$SRC" "$WORK/unreadable" && chmod 000 "$WORK/unreadable"
    check "unreadable file" "$WORK/unreadable"
fi

# ---- ELF files of the wrong kind ----------------------------------------------
f=$(copy class32); poke "$f" 4 001
check "32-bit ELF (patched EI_CLASS)" "$f"
if command -v gcc >/dev/null 2>&1 &&
   gcc -m32 -o "$WORK/elf32" "$WORK/real.c" 2>/dev/null; then
    check "32-bit ELF (gcc -m32)" "$WORK/elf32"
fi
f=$(copy bigendian); poke "$f" 5 002
check "big-endian ELF" "$f"
f=$(copy aarch64); poke "$f" 18 267 000   # EM_AARCH64 = 183
check "aarch64 ELF (patched e_machine)" "$f"
f=$(copy arm); poke "$f" 18 050 000       # EM_ARM = 40
check "ARM ELF (patched e_machine)" "$f"
f=$(copy reltype); poke "$f" 16 001 000   # ET_REL
check "relocatable (patched e_type)" "$f"
f=$(copy coretype); poke "$f" 16 004 000  # ET_CORE
check "core file (patched e_type)" "$f"
if command -v cc >/dev/null 2>&1 && [ -f "$WORK/real.c" ] &&
   cc -c -o "$WORK/object.o" "$WORK/real.c" 2>/dev/null; then
    check "relocatable .o" "$WORK/object.o"
fi

# ---- truncated copies ---------------------------------------------------------
for len in 1 4 16 20 63 64 100 200 1000 4096 $((size / 3)) $((size / 2)) $((size - 64)) $((size - 1)); do
    [ "$len" -gt 0 ] && [ "$len" -lt "$size" ] || continue
    head -c "$len" "$SRC" >"$WORK/trunc-$len"
    check "truncated to $len bytes" "$WORK/trunc-$len"
done

# ---- corrupted headers -----------------------------------------------------------
ff="377 377 377 377 377 377 377 377"
# le64 VALUE: the 8 little-endian bytes of VALUE, in octal, for poke.
le64() {
    le_v=$1 le_i=0 le_out=
    while [ "$le_i" -lt 8 ]; do
        le_out="$le_out $(printf '%03o' $((le_v & 255)))"
        le_v=$((le_v >> 8))
        le_i=$((le_i + 1))
    done
    echo $le_out
}
f=$(copy shoff-huge); poke "$f" 40 000 377 377 377 377 377 377 377
check "e_shoff near 2^64" "$f"
# shellcheck disable=SC2046
f=$(copy shoff-end); poke "$f" 40 $(le64 $((size - 10)))
check "e_shoff at end of file" "$f"
f=$(copy phoff-huge); poke "$f" 32 000 377 377 377 377 377 377 177
check "e_phoff huge" "$f"
f=$(copy shnum-60000); poke "$f" 60 140 352           # 60000 = 0xea60
check "e_shnum 60000" "$f"
f=$(copy shnum-zero); poke "$f" 60 000 000
check "e_shnum 0 (extended numbering)" "$f"
f=$(copy phnum-xnum); poke "$f" 56 377 377
check "e_phnum 0xffff" "$f"
f=$(copy phnum-big); poke "$f" 56 000 001
check "e_phnum 256" "$f"
f=$(copy shstrndx-bad); poke "$f" 62 376 377
check "e_shstrndx 0xfffe" "$f"
f=$(copy shentsize-bad); poke "$f" 58 020 000
check "e_shentsize 16" "$f"
f=$(copy phentsize-bad); poke "$f" 54 001 000
check "e_phentsize 1" "$f"
f=$(copy entry-bad); poke "$f" 24 $ff
check "e_entry 0xffffffffffffffff" "$f"

# Every section header's fields in turn: offsets, sizes, links, names.
shoff=$(u64 "$SRC" 40)
shnum=$(u16 "$SRC" 60)
if [ "$shoff" -gt 0 ] && [ "$shnum" -gt 0 ] && [ $((shoff + shnum * 64)) -le "$size" ]; then
    for field in "sh_name:0:377 377 377 177" "sh_offset:24:$ff" "sh_size:32:$ff" \
                 "sh_size-large:32:000 000 000 001" "sh_link:40:377 377 000 000" \
                 "sh_entsize:56:001 000 000 000 000 000 000 000" "sh_type-nobits:4:010 000 000 000"; do
        label=${field%%:*}
        rest=${field#*:}
        off=${rest%%:*}
        bytes=${rest#*:}
        f=$(copy "all-$label")
        i=0
        while [ "$i" -lt "$shnum" ]; do
            # shellcheck disable=SC2086
            poke "$f" $((shoff + i * 64 + off)) $bytes
            i=$((i + 1))
        done
        check "every section's $label corrupted" "$f"
        # One section at a time only for the fields that locate data, to
        # keep the run short.
        case $label in sh_offset|sh_size|sh_link) ;; *) continue ;; esac
        i=1
        while [ "$i" -lt "$shnum" ] && [ "$i" -le 40 ]; do
            f=$WORK/one-$label-$i
            cp "$SRC" "$f"
            # shellcheck disable=SC2086
            poke "$f" $((shoff + i * 64 + off)) $bytes
            check "section $i $label corrupted" "$f"
            rm -f "$f"
            i=$((i + 1))
        done
    done
fi

# Every program header's offset and size.
phoff=$(u64 "$SRC" 32)
phnum=$(u16 "$SRC" 56)
if [ "$phoff" -gt 0 ] && [ $((phoff + phnum * 56)) -le "$size" ]; then
    for field in "p_offset:8:$ff" "p_vaddr:16:$ff" "p_filesz:32:$ff" "p_memsz:40:000 000 000 000 000 000 000 000"; do
        label=${field%%:*}
        rest=${field#*:}
        off=${rest%%:*}
        bytes=${rest#*:}
        i=0
        while [ "$i" -lt "$phnum" ]; do
            f=$WORK/ph-$label-$i
            cp "$SRC" "$f"
            # shellcheck disable=SC2086
            poke "$f" $((phoff + i * 56 + off)) $bytes
            check "program header $i $label corrupted" "$f"
            rm -f "$f"
            i=$((i + 1))
        done
    done
fi

# Garbage over the middle of the file (code, .eh_frame, symbols, DWARF).
for third in 1 2; do
    for fill in zero ones; do
        f=$(copy "garbage-$fill-$third")
        [ -f "$WORK/ones" ] || head -c 4096 /dev/zero | tr '\000' '\377' >"$WORK/ones"
        if [ "$fill" = zero ]; then src=/dev/zero; else src=$WORK/ones; fi
        dd if="$src" of="$f" bs=1 seek=$((size * third / 3)) count=2048 conv=notrunc 2>/dev/null
        check "2 KB of $fill bytes at $third/3 of the file" "$f"
    done
done

# ---- files that are not regular: refused before opening them can block -----
# (a FIFO's open waits for a writer forever; the timeout above catches it).
export XDG_CACHE_HOME="$WORK/cache" XDG_CONFIG_HOME="$WORK/config" MTOOL_HISTORY="$WORK/h.db"
mkfifo "$WORK/fifo"
check "FIFO" "$WORK/fifo"
check "character device" /dev/null
check_cmd "instrument --counts of a FIFO" "$WORK/fifo" instrument --counts "$WORK/fifo" -o "$WORK/out"
check_cmd "count -- FIFO" "$WORK/fifo" count -- "$WORK/fifo"
check_cmd "analyze --costs --counts FIFO" "$WORK/fifo" analyze --costs --counts "$WORK/fifo" "$SRC"
check_cmd "history --db FIFO" "$WORK/fifo" history --db "$WORK/fifo" list
check_cmd "history --db DIRECTORY" "$WORK/a-directory" history --db "$WORK/a-directory" list
check_cmd "calibrate --check-only -o FIFO (machine profile)" "$WORK/fifo" calibrate --check-only -o "$WORK/fifo"
# A pass-1 run directory whose files are FIFOs, one at a time.
if "$MTOOL" count --no-store -o "$WORK/run" -- "$SRC" >/dev/null 2>&1; then
    for f in format pass1.txt argv counts.tsv call_targets.tsv; do
        cp -r "$WORK/run" "$WORK/run-$f" && rm "$WORK/run-$f/$f" && mkfifo "$WORK/run-$f/$f"
        check_cmd "time RUNDIR with $f a FIFO" "$WORK/run-$f/$f" time --no-store "$WORK/run-$f"
    done
else
    not_ok "count of the real binary failed: no run directory to corrupt"
fi
# No output file left behind by any of them.
if [ -e "$WORK/out" ]; then not_ok "instrument left $WORK/out"; else ok "no partial output"; fi

# ---- a cached copy whose flow equations are damaged ------------------------
# The MTOOLMAP4 trailer ("MTOLMAP4" in the file's last 8 bytes) is 72 bytes:
# the numbers of equation words, of timers and of call sites, then the
# version 1 trailer.  The word before it is the last equation's last term:
# a counter past the map's end must be refused by name, never summed.
# (--libs none: the copy `count --profiles` uses, whose set has no libraries.)
cat > "$WORK/diamonds.c" <<'C'
int pick(int x) { int y; if (x & 1) y = 3 * x; else y = x / 2; return y + 1; }
int main(int argc, char **argv) { (void)argv; return pick(argc) == 4 ? 0 : 1; }
C
if cc -O0 -o "$WORK/diamonds" "$WORK/diamonds.c" 2>/dev/null &&
    "$MTOOL" count --no-store --libs none -o "$WORK/drun" -- "$WORK/diamonds" >/dev/null 2>&1; then
    copy=$(ls "$WORK"/cache/mtool/instrumented/*/diamonds)
    size=$(wc -c < "$copy")
    if tail -c 8 "$copy" | grep -q "MTOLMAP4"; then
        poke "$copy" $((size - 80)) 377 377 377 377
        check_cmd "count --profiles with a cached copy's flow equation out of range" "$copy" \
            count --no-store --profiles "$WORK/drun/profiles" -- "$WORK/diamonds"
        grep -q "corrupt mtool counter map (flow equations)" "$WORK/stderr" &&
            ok "the damaged equations named as such" ||
            not_ok "the damaged equations not named: $(head -1 "$WORK/stderr")"
    else
        not_ok "the copy of a program with an if-else has no flow equations (MTOOLMAP4)"
    fi
else
    not_ok "count of the if-else program failed: no cached copy to damage"
fi

# ---- instrument: what it refuses, and what it must not -----------------------
# check_instrument NAME PATH [PATTERN]: with PATTERN, a refusal (exit 1,
# one stderr line "mtool: PATH: ..." matching PATTERN, no output file);
# without, an instrumented copy that runs like the original.
check_instrument() {
    name=$1 path=$2 pattern=${3:-}
    rm -f "$WORK/instrumented"
    timeout "$TIMEOUT" "$MTOOL" instrument --counts "$path" -o "$WORK/instrumented" >/dev/null 2>"$WORK/stderr" </dev/null
    rc=$?
    first=$(head -n 1 "$WORK/stderr")
    if grep -q -e 'Sanitizer' -e 'runtime error' "$WORK/stderr" || [ "$rc" -ge 124 ]; then
        not_ok "instrument $name: crashed or hung (exit $rc): $first"
    elif [ -z "$pattern" ]; then
        if [ "$rc" -eq 0 ] && [ "$(MTOOL_OUT=$WORK/profiles "$WORK/instrumented" x y)" = "$("$path" x y | sed "1s|.*|$WORK/instrumented|")" ]; then
            ok "instrument $name: accepted, runs like the original"
        else
            not_ok "instrument $name: exit $rc, or the copy runs differently: $first"
        fi
    elif [ "$rc" -eq 1 ] && [ "$(grep -c '' "$WORK/stderr")" -eq 1 ] &&
         [ ! -e "$WORK/instrumented" ] && case "$first" in "mtool: $path: "*) true ;; *) false ;; esac &&
         echo "$first" | grep -q -- "$pattern"; then
        ok "instrument $name: refused (${first#mtool: $path: })"
    else
        not_ok "instrument $name: exit $rc, $(grep -c '' "$WORK/stderr") stderr lines, expected one matching '$pattern': $first"
    fi
}
if [ -f "$WORK/real.c" ]; then
    check_instrument "a PIE executable" "$SRC"
    if cc -O2 -static-pie -o "$WORK/static-pie" "$WORK/real.c" 2>/dev/null; then
        # No interpreter, like a library: DF_1_PIE tells it apart.
        check_instrument "a static PIE executable" "$WORK/static-pie"
    fi
    if "$MTOOL" instrument --counts "$SRC" -o "$WORK/once" >/dev/null 2>&1; then
        check_instrument "its own output (instrumented twice)" "$WORK/once" "already instrumented by mtool"
    else
        not_ok "instrument: the real binary could not be instrumented"
    fi
    printf 'int twice(int x) { return 2 * x; }\n' >"$WORK/lib.c"
    if cc -O2 -shared -fPIC -o "$WORK/lib.so" "$WORK/lib.c" 2>/dev/null; then
        check_instrument "a shared library" "$WORK/lib.so" "a shared library"
    fi
fi

print_totals
