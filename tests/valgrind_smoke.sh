#!/bin/bash
# tests/valgrind_smoke.sh MTOOL — valgrind's own tools instrumented (in
# `make test-full`): memcheck and cachegrind are large static programs full
# of jump tables (memcheck's 0x58190530 reaches one table under two guards).
# Each tool is instrumented and put in a copy of valgrind's library
# directory; `valgrind --tool=T` with VALGRIND_LIB pointing there must give
# exactly the output and exit status of the original on a few programs (one
# with a memory error), and the instrumented tool must write its profiles.
#
# valgrind's guest executes the tool's own trampolines (m_trampoline.S,
# from `mov $15,%rax; syscall; ud2` up to a run of ud2) from their original
# bytes: those procedures are left as they are (--skip).
set -u
mtool=$1
if ! command -v valgrind > /dev/null 2>&1; then
    echo "# valgrind smoke test: skipped, valgrind is not installed (.ci/install-deps.sh installs it)"
    exit 0
fi
libdir=
for d in /usr/libexec/valgrind /usr/lib/valgrind /usr/lib/x86_64-linux-gnu/valgrind; do
    [ -x "$d/memcheck-amd64-linux" ] && libdir=$d && break
done
if [ -z "$libdir" ]; then
    echo "# valgrind smoke test: skipped, no memcheck-amd64-linux in valgrind's usual directories"
    exit 0
fi
work=$(mktemp -d /tmp/mtool-vgsmoke.XXXXXX)
trap 'rm -rf "$work"' EXIT
export XDG_CACHE_HOME=$work/cache XDG_CONFIG_HOME=$work/config

cat > "$work/bad.c" << 'C'
#include <stdio.h>
#include <stdlib.h>
int main(void)
{
    int *p = malloc(4 * sizeof *p);
    p[0] = 1;
    printf("%d\n", p[4] > 0); /* reads past the block */
    return 3; /* and leaks it */
}
C
if ! gcc -g -O0 "$work/bad.c" -o "$work/bad" 2> "$work/cc.err"; then
    echo "not ok - valgrind smoke test: cannot build its program: $(head -1 "$work/cc.err")"
    exit 0
fi

# The entries of the procedures inside the trampoline area of TOOL, as --skip options.
trampoline_skips() {
    "$mtool" analyze --json --no-lines "$1" -o "$work/a.json" 2> /dev/null || return
    python3 - "$1" "$work/a.json" << 'PY'
import json, struct, sys
data = open(sys.argv[1], "rb").read()
start = data.find(bytes.fromhex("48c7c00f0000000f050f0b"))
end = data.find(bytes.fromhex("0f0b" * 16), start)
if start < 0 or end < 0:
    sys.exit(0)
phoff, = struct.unpack_from("<Q", data, 32)
phentsize, phnum = struct.unpack_from("<HH", data, 54)
for k in range(phnum):
    ptype, _, off, vaddr, _, filesz = struct.unpack_from("<IIQQQQ", data, phoff + k * phentsize)
    if ptype == 1 and off <= start < off + filesz:
        lo, hi = start - off + vaddr, end - off + vaddr
for p in json.load(open(sys.argv[2]))["procedures"]:
    entry = int(p["entry"], 16) if isinstance(p["entry"], str) else p["entry"]
    if lo <= entry < hi:
        print("--skip 0x%x" % entry)
PY
}

for tool in memcheck cachegrind; do
    orig=$libdir/$tool-amd64-linux
    copy=$work/lib-$tool
    cp -r "$libdir" "$copy"
    skips=$(trampoline_skips "$orig")
    if [ -z "$skips" ]; then
        echo "not ok - $tool: its trampolines were not found (another valgrind version?)"
        continue
    fi
    # shellcheck disable=SC2086
    if ! "$mtool" instrument --counts $skips "$orig" -o "$copy/$tool-amd64-linux" > "$work/inst.log" 2>&1; then
        echo "not ok - $tool: instrument failed: $(tail -1 "$work/inst.log")"
        continue
    fi
    mkdir -p "$work/profiles-$tool"
    same=0 runs=0
    for prog in /bin/true "$work/bad" "/bin/ls /"; do
        runs=$((runs + 1))
        opts=(--tool=$tool -q)
        [ $tool = cachegrind ] && opts+=(--cachegrind-out-file=/dev/null)
        # shellcheck disable=SC2086
        VALGRIND_LIB=$libdir valgrind "${opts[@]}" $prog > "$work/o.out" 2> "$work/o.err"
        local_o=$?
        # shellcheck disable=SC2086
        MTOOL_OUT=$work/profiles-$tool VALGRIND_LIB=$copy valgrind "${opts[@]}" $prog > "$work/i.out" 2> "$work/i.err"
        local_i=$?
        # Process ids and the library directory differ by design.
        sed -i -e 's/==[0-9]*==/==PID==/' -e 's/--[0-9]*--/--PID--/' -e "s|$libdir/|LIBDIR/|g" "$work/o.err"
        sed -i -e 's/==[0-9]*==/==PID==/' -e 's/--[0-9]*--/--PID--/' -e "s|$copy/|LIBDIR/|g" "$work/i.err"
        if [ $local_o -ne $local_i ] || ! cmp -s "$work/o.out" "$work/i.out" || ! cmp -s "$work/o.err" "$work/i.err"; then
            echo "not ok - $tool on $prog: exit $local_o vs $local_i: $(diff "$work/o.err" "$work/i.err" | head -3 | tr '\n' ' ')"
        else
            same=$((same + 1))
        fi
    done
    profiles=$(ls "$work/profiles-$tool" | wc -l)
    if [ $same -eq $runs ] && [ "$profiles" -ge $runs ]; then
        echo "ok - $tool instrumented ($(head -1 "$work/inst.log" | cut -d, -f1)): $runs programs run exactly as under the original, $profiles profiles"
    elif [ $same -eq $runs ]; then
        echo "not ok - $tool: runs identical, but only $profiles profiles were written"
    fi
done
