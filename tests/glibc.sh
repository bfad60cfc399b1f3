#!/bin/bash
# tests/glibc.sh — glibc's own libraries (libc.so.6, libm.so.6) counted as
# any library, by default (docs/ARCHITECTURE.md, "glibc's own objects"), on
# Debian's own sed (regex in libc), gzip and mawk (libm), and on
# samples/behavior.c, samples/threads.c and samples/copies.c:
#   - output and exit status are the original's, for every mode of
#     behavior-gcc-O2 (signals, fork, exec, _exit, abort, a fatal signal)
#     and for threads-gcc-O2;
#   - libc.so.6 (and libm.so.6 for mawk) is counted without --libs; libm's
#     block counts equal callgrind's on the original, and libc's in its
#     procedures named in .dynsym, for every block either ran 10 times or
#     more (named_libc says why these);
#   - the share of callgrind's instructions that falls in counted objects
#     is 95% or more with glibc counted (tests/callgrind_objects.py);
#   - libc's analysis is saved once (by content) and read back by the
#     counts of other programs, not made again;
#   - copies-gcc-O2's loop, which calls strlen and memcpy (IFUNCs: glibc
#     chooses a variant by CPU) is priced with the variants' work by
#     default (known work, their memory operations in the loop's), without
#     it with --libs none (unknown work).
#
#   MTOOL=build/mtool CHECKER=build/tests/check_counts SAMPLES=build/samples \
#     SAMPLES2=build/samples-pass2 bash tests/glibc.sh
set -u
mtool=${MTOOL:-build/mtool} checker=${CHECKER:-build/tests/check_counts}
samples=${SAMPLES:-build/samples} samples2=${SAMPLES2:-$(dirname "${SAMPLES:-build/samples}")/samples-pass2}
here=$(dirname "$0")
work=$(mktemp -d "${TMPDIR:-/tmp}/mtool-glibc.XXXXXX")
trap 'rm -rf "$work"' EXIT
export XDG_CACHE_HOME=$work/cache XDG_CONFIG_HOME=$work/config MTOOL_HISTORY=$work/history.db
. "$here/lib.sh"
libdir=$(dirname "$(ldd /usr/bin/sed | awk '$1 == "libc.so.6" { print $3 }')")
seq 1 20000 > "$work/in.txt"

# same_run NAME CMD...: the original and `mtool count` (the default: every
# library, glibc's included) of CMD give the same output and status; the
# run is kept in $work/NAME.
same_run() {
    local name=$1
    shift
    "$@" > "$work/$name.orig" 2>&1
    local want=$?
    "$mtool" count --no-store --no-baseline -o "$work/$name" -- "$@" > "$work/$name.out" 2> "$work/$name.err"
    local got=$?
    if [ $got -eq $want ] && cmp -s "$work/$name.orig" "$work/$name.out"; then
        ok "$name: output and exit status ($got) identical to the original's, glibc counted"
    else
        not_ok "$name: exit $got (original $want), output $(cmp "$work/$name.orig" "$work/$name.out" 2>&1); $(grep -v '^ ' "$work/$name.err" | tail -2)"
    fi
}

# callgrind_run NAME CMD...: callgrind on the original, outputs $work/NAME.cg.*.
callgrind_run() {
    local name=$1
    shift
    valgrind --tool=callgrind --dump-instr=yes --compress-pos=no --compress-strings=no --skip-plt=no \
        --callgrind-out-file="$work/$name.cg.%p" "$@" > "$work/$name.vg.out" 2> "$work/$name.vg.log"
}

# same_counts NAME LIB [CHECKER OPTIONS]: LIB counted in run NAME, its block
# counts (the lines of libs/LIB.counts.tsv on stdin) equal callgrind's.
same_counts() {
    local name=$1 lib=$2
    shift 2
    if ! grep -q "^library $lib (.*): [0-9]* of [0-9]* procedures instrumented" "$work/$name.err"; then
        not_ok "$name: $lib not counted: $(grep "^library $lib" "$work/$name.err")"
        return
    fi
    cat > "$work/$name.$lib.tsv"
    "$checker" "$@" "$libdir/$lib" "$work/$name.$lib.tsv" "$work/$name".cg.* > "$work/$name.$lib.check" 2>&1
    grep -E '^(ok|not ok) .*counted blocks equal' "$work/$name.$lib.check" > "$work/$name.$lib.verdict"
    sed "s/^\(ok\|not ok\) - /&$name: /" "$work/$name.$lib.verdict"
    grep '^# block' "$work/$name.$lib.check" | head -3
    if [ -s "$work/$name.$lib.verdict" ]; then
        tally "$work/$name.$lib.verdict"
    else
        not_ok "$name: check_counts gave no verdict on $lib: $(tail -1 "$work/$name.$lib.check")"
    fi
}

# libc's procedures named in its .dynsym, but getenv (the counted run has
# mtool's variables in its environment, valgrind its own), run 10 times or
# more: its local procedures (sub_*) hold the string functions glibc's
# ifuncs choose by CPUID, which valgrind answers otherwise (other variants,
# other cache sizes and thresholds), and what runs fewer times is start-up
# and exit (check_counts --at-least).
named_libc() {
    awk -F'\t' '/^#/ || ($3 !~ /^sub_/ && $3 != "getenv")' "$work/$1/libs/libc.so.6.counts.tsv" |
        same_counts "$1" libc.so.6 --at-least 10
}

# coverage NAME BIN: the share of callgrind's instructions in the objects
# run NAME counted, 95% or more; BIN's own share said beside it.
coverage() {
    local name=$1 before after
    read -r _ _ before < <(python3 "$here/callgrind_objects.py" --exe "$2" "$work/$name".cg.*)
    read -r _ _ after < <(python3 "$here/callgrind_objects.py" --counted "$work/$name/count.json" "$work/$name".cg.*)
    python3 -c 'import sys; sys.exit(not float(sys.argv[1]) >= 95.0)' "$after" &&
        ok "$name: $after% of the executed instructions in counted objects (the executable alone: $before%)" ||
        not_ok "$name: $after% of the executed instructions in counted objects, below 95% (the executable alone: $before%)"
}

# sed: its regex runs in libc.  Its libc counts are not compared:
# libselinux's constructor reads /proc with getline before the entry,
# uncounted (the original code runs then).
sedprog='s/([0-9])([0-9]*)/\2\1/g'
same_run sed /usr/bin/sed -E "$sedprog" "$work/in.txt"
libc_analysis=$(ls "$XDG_CACHE_HOME"/mtool/libs/analysis-"$(sha256sum "$libdir/libc.so.6" | cut -c1-64)"-* 2> /dev/null)
saved=$(stat -c '%i %Y %s' $libc_analysis 2> /dev/null)
callgrind_run sed /usr/bin/sed -E "$sedprog" "$work/in.txt"
coverage sed /usr/bin/sed
same_run gzip /usr/bin/gzip -c "$work/in.txt"
# Its profiles merged again without --libs: they name no set, and none's
# copy (mtool instrument's default) has other counters; all's, the
# count's, has theirs.  The same counts, the executable's and libc's.
"$mtool" count --no-store --no-baseline --profiles "$work/gzip/profiles" -o "$work/gzipm" \
    -- /usr/bin/gzip > /dev/null 2> "$work/gzipm.err"
if cmp -s "$work/gzip/counts.tsv" "$work/gzipm/counts.tsv" &&
    cmp -s "$work/gzip/libs/libc.so.6.counts.tsv" "$work/gzipm/libs/libc.so.6.counts.tsv"; then
    ok "count --profiles of a default count's profiles, no --libs: the count's counts, libc's too"
else
    not_ok "count --profiles of gzip's default count: $(grep -v '^ ' "$work/gzipm.err" | head -2)"
fi
callgrind_run gzip /usr/bin/gzip -c "$work/in.txt"
named_libc gzip
coverage gzip /usr/bin/gzip
# mawk: libm's sin, exp and log, libc's sprintf; libm's counts are exact.
awkprog='BEGIN { for (i = 1; i < 20000; i++) { s += sin(i) + exp(-i / 1e6) + log(i)
    t = sprintf("%d %.3f", i, s); n += length(t) }; printf("%.6f %d\n", s, n) }'
same_run mawk /usr/bin/mawk "$awkprog"
callgrind_run mawk /usr/bin/mawk "$awkprog"
same_counts mawk libm.so.6 < "$work/mawk/libs/libm.so.6.counts.tsv"
named_libc mawk
coverage mawk /usr/bin/mawk

# What the process does, with libc's copy active: every mode of behavior.
for mode in all signals fork exec _exit abort segv; do
    same_run "behavior-$mode" "$samples/behavior-gcc-O2" "$mode"
done
same_run threads "$samples/threads-gcc-O2"

# The later counts read libc's saved analysis: the one file sed's count
# wrote, not written again.
if [ -n "$saved" ] && [ "$(echo "$libc_analysis" | wc -l)" = 1 ] &&
    [ "$(stat -c '%i %Y %s' $libc_analysis 2> /dev/null)" = "$saved" ] &&
    grep -q "^library libc.so.6 (.*): [0-9]* of [0-9]* procedures instrumented" "$work/threads.err"; then
    ok "libc's analysis saved once by its content, read back by $(ls "$work"/*.err | wc -l) counts of other programs"
else
    not_ok "libc's analysis: saved ${libc_analysis:-nowhere} (${saved:-none}), now $(stat -c '%i %Y %s' $libc_analysis 2>&1)"
fi

# copies-gcc-O2: strlen and memcpy in copy_pages' loop.  Their variants, as
# the loader chooses them on this CPU (python's ctypes: its libc is the
# same file), are priced into the loop by default as known work (their
# memory operations in the loop's, at least strlen's: its variant is a
# leaf); with --libs none the calls are unknown work, the loop holds its
# own memory operations alone.
copies=$samples2/copies-gcc-O2
loop_memops() { awk -F'\t' '$1 == "object" && $2 ~ /^copy_pages@/ { print $3 }' "$work/$1/pass2.tsv"; }
"$mtool" run --no-store -o "$work/copies-none" --libs none -- "$copies" 50 > "$work/copies-none.out" 2>&1
"$mtool" run --no-store -o "$work/copies" -- "$copies" 50 > "$work/copies.out" 2>&1
read -r strlen_at memcpy_at < <(python3 -c '
import ctypes
libc = ctypes.CDLL("libc.so.6")
base = min(int(l.split("-")[0], 16) for l in open("/proc/self/maps") if l.rstrip().endswith("/libc.so.6"))
print(*(hex(ctypes.cast(getattr(libc, f), ctypes.c_void_p).value - base) for f in ("strlen", "memcpy")))')
read -r strlen_ops memcpy_ops < <(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
ops = {p["address"]: p["memory_ops"] for p in d["procedures"] if p["object"] == "libc.so.6"}
print(ops.get(sys.argv[2], 0), ops.get(sys.argv[3], 0))' "$work/copies/count.json" "$strlen_at" "$memcpy_at")
own=$(loop_memops copies-none) with=$(loop_memops copies)
if [ -n "$own" ] && [ -n "$with" ] && [ "$strlen_ops" -gt 0 ] &&
    [ "$with" -ge $((own + strlen_ops)) ] && [ "$with" -le $((own + strlen_ops + memcpy_ops)) ] &&
    grep -q "^mtool time: [1-9][0-9]* of the executable's imports are known work" "$work/copies.out" &&
    ! grep -q "imports are known work" "$work/copies-none.out"; then
    ok "copy_pages' loop: $with memory operations by default, its own and its known callees' (strlen's variant at $strlen_at: $strlen_ops; memcpy's at $memcpy_at: $memcpy_ops when its figure holds), $own of its own with --libs none"
else
    not_ok "copy_pages' loop: ${with:-not timed} memory operations by default, ${own:-not timed} with --libs none, strlen ($strlen_at) $strlen_ops, memcpy ($memcpy_at) $memcpy_ops; $(grep 'known work' "$work/copies.out")"
fi

print_totals
