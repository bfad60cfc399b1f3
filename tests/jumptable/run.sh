#!/bin/bash
# tests/jumptable/run.sh MTOOL CHECKER — jump tables in the instrumented copy.
#   guards: one table reached under two guards (`cmp $0x31; ja TABLE` with
#     the index above 0x31, and paths with it at most 0x31; the shape of
#     valgrind's memcheck): the analysis must bound it by the index's byte
#     (all 256 entries, 6 targets), the copy must run exactly like the
#     original, and its counts must equal callgrind's (count_check.sh).
#   hidden: a table whose index a signal handler moves beyond the checked
#     bound between check and read: the copy must still run exactly like the
#     original (its safety net goes on in the original code), and `mtool
#     count` must report each of those HIDDEN_HITS fallbacks.
set -u
here=$(cd "$(dirname "$0")" && pwd)
mtool=$1 checker=$2
work=$(mktemp -d /tmp/mtool-jumptable.XXXXXX)
trap 'rm -rf "$work"' EXIT
export XDG_CACHE_HOME=$work/cache XDG_CONFIG_HOME=$work/config

for prog in guards hidden; do
    if ! gcc -O1 "$here/${prog}_main.c" "$here/$prog.S" -o "$work/$prog" 2> "$work/cc.err"; then
        echo "not ok - $prog: cannot build: $(head -1 "$work/cc.err")"
        exit 0
    fi
done

# guards: the bound the analysis finds, then behaviour and the oracle.
"$mtool" analyze --function classify "$work/guards" > "$work/guards.analysis" 2>&1
table=$(grep -A1 '^  jump tables:' "$work/guards.analysis" | tail -1)
if echo "$table" | grep -q ' 6 targets:'; then
    echo "ok - guards: the table under two guards has all 6 targets of its 256 entries"
else
    echo "not ok - guards: jump table as analyzed: ${table:-none}"
fi
mkdir -p "$work/cc"
bash "$here/../oracle/count_check.sh" "$mtool" "$checker" "$work/cc" "$work/guards"

# hidden: behaviour and the fallbacks counted.
"$work/hidden" > "$work/orig.out" 2>&1
orig=$?
if ! "$mtool" instrument --counts "$work/hidden" -o "$work/hidden.inst" > "$work/inst.log" 2>&1; then
    echo "not ok - hidden: instrument failed: $(tail -1 "$work/inst.log")"
    exit 0
fi
if grep -q 'not instrumented: hidden_dispatch' "$work/inst.log"; then
    echo "not ok - hidden: hidden_dispatch was not instrumented: $(grep -m1 hidden_dispatch "$work/inst.log")"
    exit 0
fi
mkdir -p "$work/profiles"
MTOOL_OUT=$work/profiles "$work/hidden.inst" > "$work/inst.out" 2>&1
inst=$?
hits=$(sed -n 's/^#define HIDDEN_HITS \([0-9]*\)$/\1/p' "$here/hidden_main.c")
if [ $orig -ne "$hits" ] || [ $inst -ne $orig ] || ! cmp -s "$work/orig.out" "$work/inst.out"; then
    echo "not ok - hidden: exit $orig vs $inst (want $hits): $(diff "$work/orig.out" "$work/inst.out" | head -3 | tr '\n' ' ')"
    exit 0
fi
echo "ok - hidden: the instrumented copy took the unforeseen entry $hits times, exactly as the original"
"$mtool" count --no-store --profiles "$work/profiles" -o "$work/run" -- "$work/hidden" > "$work/count.log" 2>&1
counted=$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(sum(f["count"] for f in d["executed"]["table_fallbacks"] if f["procedure"] == "hidden_dispatch"))
' "$work/run/count.json" 2>&1)
if [ "$counted" = "$hits" ] && grep -q "^warning: hidden_dispatch: counts incomplete: $hits " "$work/count.log"; then
    echo "ok - hidden: count reports the $hits fallbacks (count.json and a warning)"
else
    echo "not ok - hidden: fallbacks counted: $counted (want $hits); $(grep -m1 warning "$work/count.log")"
fi
