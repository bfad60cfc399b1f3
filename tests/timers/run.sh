#!/bin/bash
# tests/timers/run.sh MTOOL DUMP_TIMERS SAMPLES — pass-2 timers end to end.
#   1. Samples (matmul: nested loops; control: setjmp/longjmp, recursion, a
#      jump table; exceptions: C++ throws; threads; Fortran), each
#      with EVERY procedure and loop the rewriter can relocate timed at once:
#      the timed copy behaves exactly like the original (stdout, stderr,
#      exit status); every object's entries equal callgrind's executions of
#      its entry edges (tests/timers/check_timers.py), none is left open,
#      exclusive <= inclusive, nested inclusive <= enclosing inclusive.
#   2. Programs with known non-local exits (nonlocal.c, throw.cpp): the same,
#      plus the expected outermost entries, recursive entries and non-local
#      exits, and main's inclusive time against main's own TSC reads.
set -u
mtool=$1 dump=$2 samples=$3 samples2=${4:-$3/../samples-pass2}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/mtool-timers.XXXXXX)
trap 'rm -rf "$work"' EXIT

# timed NAME BIN [OBJECTS...]: instrument BIN with OBJECTS timed (default:
# all), run both, compare, check against callgrind; leaves $d/dump.
timed() {
    local name=$1 bin=$2
    shift 2
    d=$work/$name
    mkdir -p "$d/orig" "$d/inst" "$d/prof"
    cp -p "$bin" "$d/orig/"
    bin=$d/orig/$(basename "$bin")
    local inst=$d/inst/$(basename "$bin")
    "$mtool" analyze --json "$bin" -o "$d/a.json" 2> /dev/null
    local objs=("$@")
    if [ ${#objs[@]} -eq 0 ]; then
        "$mtool" instrument --counts -v "$bin" -o "$inst" > "$d/pass1.log" 2>&1
        mapfile -t objs < <(python3 "$here/check_timers.py" objects "$d/a.json" "$d/pass1.log" ${SOURCE:-})
    fi
    if ! "$mtool" instrument --counts "${objs[@]}" "$bin" -o "$inst" > "$d/inst.log" 2>&1; then
        echo "not ok - $name: instrument failed: $(tail -1 "$d/inst.log")"
        return 1
    fi
    "$bin" ${ARGS:-} > "$d/orig.out" 2> "$d/orig.err"
    local so=$?
    MTOOL_OUT=$d/prof "$inst" ${ARGS:-} > "$d/inst.out" 2> "$d/inst.err"
    local si=$?
    if [ "${SAME_STDERR:-1}" = 1 ] && ! cmp -s "$d/orig.err" "$d/inst.err"; then so=-1; fi
    if [ $so -ne $si ] || ! cmp -s "$d/orig.out" "$d/inst.out"; then
        echo "not ok - $name: timed run differs (exit $so vs $si; kept in $d)"
        trap - EXIT
        return 1
    fi
    echo "ok - $name: timed run identical ($(grep -o 'timed [0-9]* m-objects: .*' "$d/inst.log"))"
    valgrind --tool=callgrind --dump-instr=yes --collect-jumps=yes --compress-pos=no --skip-plt=no \
        --compress-strings=no --callgrind-out-file="$d/cg.out" "$bin" ${ARGS:-} > /dev/null 2>&1
    if ! "$dump" "$inst" "$d/prof" > "$d/dump" 2> "$d/dump.err"; then
        echo "not ok - $name: cannot read the timers: $(cat "$d/dump.err")"
        return 1
    fi
    python3 "$here/check_timers.py" check "$d/a.json" "$d/dump" "$d/cg.out" | tee "$d/check" | grep -v '^ok'
    echo "# $name: $(grep -c '^ok' "$d/check") timer checks passed"
    sed -i '/^ok/d' "$d/check"
}

# field NAME COLUMN: a column of the dump row of procedure NAME (loop at
# hex header HDR when given as NAME@HDR), from the last `timed` run.
field() {
    local proc=${1%@*} loop=0 entry
    [ "$proc" != "$1" ] && loop=${1#*@}
    entry=$(python3 -c "import json,sys; print([p['entry'] for p in json.load(open('$d/a.json'))['procedures'] if p['name']=='$proc'][0][2:])")
    awk -v e="$entry" -v l="${loop#0x}" -v c="$2" '$2 == e && $3 == l { print $c }' "$d/dump"
}

expect() { # WHAT ACTUAL EXPECTED
    if [ "$2" = "$3" ]; then echo "ok - $1 = $3"; else echo "not ok - $1 = $2, expected $3"; fi
}

for s in matmul-gcc-O2 matmul-clang-O0 control-gcc-O2 control-clang-O2 control-gcc-O0 \
    exceptions-gxx-O2 exceptions-clangxx-O2 threads-gcc-O2 doloop-gfortran-O2; do
    [ -x "$samples/$s" ] && timed "$s" "$samples/$s"
done
# Static: libc's own start-up takes other paths under valgrind; the
# program's procedures only.
[ -x "$samples/control-gcc-O2-static" ] &&
    SOURCE=control.c timed control-gcc-O2-static "$samples/control-gcc-O2-static"

# Regions of a large loop-free procedure (every cut point, nested regions),
# with gcc and clang: the pass-2 sample, on a small table.
for s in phases-gcc-O2 phases-clang-O2; do
    bin=$samples2/$s
    [ -x "$bin" ] || continue
    ARGS="20 12" timed "$s" "$bin" || continue
    nregions=$(awk 'length($3) == 16 && $3 ~ /^[89a-f]/' "$d/dump" | wc -l)
    # 65 cut points: 65 finest regions, #0- and #1-3.
    [ "$nregions" -ge 60 ] && echo "ok - $s: $nregions regions timed and checked" ||
        echo "not ok - $s: $nregions regions timed, expected one per cut point and more"
done

# Edge shapes: flags live on loop edges, a jump table into a loop, a tail
# call, every register and flag kept.
mkdir -p "$work/bin"
gcc -O2 -g "$here/edges.c" -o "$work/bin/edges"
timed edges "$work/bin/edges"
grep -q '([1-9][0-9]* save flags), [1-9][0-9]* trampolines' "$d/inst.log" &&
    echo "ok - edges: events that preserve live flags and trampolines were placed" ||
    echo "not ok - edges: expected flag-saving events and trampolines: $(grep timed "$d/inst.log")"
# keep_regs: nothing lost across its events (the copy's output is the
# original's, checked by `timed`; and the original's says nothing was
# lost), its loops left with flags live, each run timed.
[ "$(grep -c 'flags 0x45 0x884 (OF SF ZF AF PF CF), lost:$' "$d/inst.out")" = 3 ] &&
    echo "ok - edges: keep_regs kept every register, the red zone and the flags in 3 runs" ||
    echo "not ok - edges: keep_regs lost something: $(grep keep_regs "$d/inst.out")"
loops=$(python3 -c "import json; p=[p for p in json.load(open('$d/a.json'))['procedures'] if p['name']=='keep_regs'][0]; print(' '.join(p['blocks'][l['header']]['start'] for l in p['loops']))")
expect "edges: keep_regs entries" "$(field keep_regs 4)" 3
for l in $loops; do expect "edges: keep_regs's loop at $l entries" "$(field keep_regs@$l 4)" 3; done
# qsort's time is outside time of sort_some, minus the time of its timed
# comparator (a callback pauses the outside call).
python3 - "$(field sort_some 6)" "$(field sort_some 8)" "$(field by_value 6)" <<'PY'
import sys
incl, outside, callback = (int(x) for x in sys.argv[1:])
ok = outside > 0 and callback > 0 and outside + callback <= incl
print('%s - edges: sort_some outside %d + its callbacks %d <= inclusive %d' %
      ('ok' if ok else 'not ok', outside, callback, incl))
PY

# Known non-local exits and recursion.
gcc -O2 -g "$here/nonlocal.c" -o "$work/bin/nonlocal"
SAME_STDERR=0 timed nonlocal "$work/bin/nonlocal" --time main --time leave_by_longjmp \
    --time leave_by_longjmp:0 --time maybe_jump --time fib --time spin --time spin:0
expect "nonlocal: leave_by_longjmp entries" "$(field leave_by_longjmp 4)" 5
expect "nonlocal: leave_by_longjmp non-local exits" "$(field leave_by_longjmp 9)" 5
loop=$(python3 -c "import json; p=[p for p in json.load(open('$d/a.json'))['procedures'] if p['name']=='leave_by_longjmp'][0]; print(p['blocks'][p['loops'][0]['header']]['start'])")
expect "nonlocal: leave_by_longjmp's loop entries" "$(field leave_by_longjmp@$loop 4)" 5
expect "nonlocal: leave_by_longjmp's loop non-local exits" "$(field leave_by_longjmp@$loop 9)" 5
expect "nonlocal: maybe_jump non-local exits" "$(field maybe_jump 9)" 5
expect "nonlocal: fib outermost entries" "$(field fib 4)" 3
expect "nonlocal: main non-local exits" "$(field main 9)" 0
# main's inclusive time covers main's own TSC interval [t0, t1] (its
# printed main-ticks); the excess is what lies outside that interval but
# inside main: the prologue, the fprintf to stderr (an outside call,
# measured in main's outside time) and the epilogue.  Allowed excess beyond
# the measured outside time: 20000 ticks (8 us at 2.6 GHz), far above the
# prologue and epilogue, far below the 20 ms of the run.
python3 - "$(field main 6)" "$(field main 8)" "$(sed -n 's/^main-ticks //p' "$d/inst.err")" <<'PY'
import sys
incl, outside, ticks = (int(x) for x in sys.argv[1:])
excess = incl - ticks
ok = 0 <= excess <= outside + 20000
print('%s - nonlocal: main inclusive %d ticks covers its own TSC interval %d (excess %d, of which outside calls %d)' %
      ('ok' if ok else 'not ok', incl, ticks, excess, outside))
PY

g++ -O2 -g "$here/throw.cpp" -o "$work/bin/throw"
timed throw "$work/bin/throw" --time main --time main:1 --time _Z12catch_insidei \
    --time _Z12catch_insidei:0 --time _Z7throweri --time _Z7recursei
hdr() { python3 -c "import json; p=[p for p in json.load(open('$d/a.json'))['procedures'] if p['name']=='$1'][0]; print(p['blocks'][p['loops'][$2]['header']]['start'])"; }
expect "throw: catch_inside loop non-local exits" "$(field _Z12catch_insidei@$(hdr _Z12catch_insidei 0) 9)" 0
expect "throw: main's try loop non-local exits" "$(field main@$(hdr main 1) 9)" 0
expect "throw: catch_inside non-local exits" "$(field _Z12catch_insidei 9)" 0
expect "throw: thrower non-local exits" "$(field _Z7throweri 9)" 4
expect "throw: recurse outermost entries" "$(field _Z7recursei 4)" 3
expect "throw: recurse recursive entries" "$(field _Z7recursei 5)" 30
expect "throw: recurse non-local exits" "$(field _Z7recursei 9)" 3

# Every timed process measures its timers' bias at start-up (the runtime's
# own record): tens of TSC ticks on any machine, never zero.
bias=$("$dump" "$d/inst/throw" "$d/prof" bias)
if awk -v b="$bias" 'BEGIN { exit !(b >= 2 && b <= 500) }'; then
    echo "ok - throw: timer bias measured at start-up: $bias ticks"
else
    echo "not ok - throw: timer bias measured at start-up: '$bias' ticks, expected 2..500"
fi

# The reader on damaged timer data (last run: throw): one error line naming
# the file, exit status 1.  Offsets: mt_profile_header.ntimers at 3156, slot
# 0's timer_top at 4096 + 8 (timer.h).
good=$(ls "$d/prof"/*.mtp | head -1)
damaged() { # NAME PATTERN OFFSET BYTES
    rm -rf "$work/bad" && mkdir -p "$work/bad" && cp "$good" "$work/bad/x.mtp"
    printf "$4" | dd of="$work/bad/x.mtp" bs=1 seek="$3" conv=notrunc status=none
    "$dump" "$d/inst/throw" "$work/bad" > /dev/null 2> "$work/err"
    local s=$?
    if [ $s = 1 ] && [ "$(wc -l < "$work/err")" = 1 ] && grep -q "x.mtp: $2" "$work/err"; then
        echo "ok - reader: $1: $(cat "$work/err")"
    else
        echo "not ok - reader: $1: exit $s, expected one line 'x.mtp: $2': $(cat "$work/err")"
    fi
}
damaged "huge timer count" "truncated" 3156 '\377\377\377\177'
damaged "timer stack pointer out of its slot" "corrupt timer stack" 4104 '\377\377\377\177'
# Version 1 profiles (no timers) stay readable: a pass-1 copy's profile
# marked version 1 merges.
"$mtool" instrument --counts "$d/orig/throw" -o "$work/p1" > /dev/null 2>&1
rm -rf "$work/v1" && MTOOL_OUT=$work/v1 "$work/p1" > /dev/null
printf '\001' | dd of="$(ls "$work/v1"/*.mtp)" bs=1 seek=8 conv=notrunc status=none
if "$mtool" count --no-store --profiles "$work/v1" -o "$work/v1run" -- "$d/orig/throw" > /dev/null 2>&1; then
    echo "ok - reader: a version 1 profile still merges"
else
    echo "not ok - reader: a version 1 profile does not merge"
fi
exit 0
