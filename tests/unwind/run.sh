#!/bin/bash
# tests/unwind/run.sh [MTOOL] — unwinding through relocated code: glibc
# backtrace() (synchronous, and from a profiling signal at arbitrary
# instructions) and C++ exceptions, each built dynamic and static (static
# binaries without .eh_frame_hdr get one from the rewriter).  The
# instrumented program must print exactly what the original prints, and the
# .eh_frame_hdr it carries must be well formed (check_hdr.py).
set -u
here=$(cd "$(dirname "$0")" && pwd)
mtool=${1:-$here/../../build/mtool}
work=$(mktemp -d /tmp/mtool-unwind.XXXXXX)
trap 'rm -rf "$work"' EXIT
. "$here/../lib.sh"

check() { # NAME COMPILER FLAGS... -- SOURCE
    local name=$1 cc=$2
    shift 2
    local flags=()
    while [ "$1" != -- ]; do flags+=("$1"); shift; done
    local src=$here/$2 bin=$work/$name
    if ! "$cc" "${flags[@]}" "$src" -o "$bin" 2> "$bin.cc.err"; then
        not_ok "$name: cannot compile: $(grep -m1 error "$bin.cc.err")"; return
    fi
    if ! "$mtool" instrument --counts "$bin" -o "$bin.inst" > "$bin.inst.log" 2>&1; then
        not_ok "$name: instrument failed: $(tail -1 "$bin.inst.log")"; return
    fi
    "$bin" > "$bin.o.out" 2>&1; local so=$?
    MTOOL_OUT=$work "$bin.inst" > "$bin.i.out" 2>&1; local si=$?
    local hdr
    if [ $so -ne 0 ] || [ $so -ne $si ] || ! cmp -s "$bin.o.out" "$bin.i.out"; then
        not_ok "$name: exit $so vs $si: $(diff "$bin.o.out" "$bin.i.out" | head -4 | tr '\n' ' ')"
    elif ! hdr=$(python3 "$here/check_hdr.py" "$bin.inst" 2>&1); then
        not_ok "$name: .eh_frame_hdr: $(echo "$hdr" | tail -1)"
    else
        ok "$name: same output ($(head -1 "$bin.o.out")); $(echo "$hdr" | tail -1)"
    fi
}

checks() { # LINK: every program linked so
    local link=$1 s=
    [ "$link" = static ] && s=-static
    check "backtrace-$link" gcc -O2 -rdynamic $s -- backtrace.c
    check "backtrace-O0-$link" gcc -O0 -rdynamic $s -- backtrace.c
    check "sigprof-$link" gcc -O2 $s -- sigprof.c
    check "cxx-throw-$link" g++ -O2 -std=gnu++14 -Wno-deprecated $s -- cxx_throw.cpp
    check "cxx-throw-O0-$link" g++ -O0 -std=gnu++14 -Wno-deprecated $s -- cxx_throw.cpp
}

# The static programs on the other CPU (half the suite's time): their lines
# kept in a file, counted after.
checks static > "$work/static.out" 2>&1 &
checks dynamic
wait
cat "$work/static.out"
tally "$work/static.out"
print_totals
