#!/bin/bash
# tests/codedata/run.sh [MTOOL] — code a program copies and runs elsewhere
# (codedata_prog.c, blob.S; V8's embedded builtins are the real case) is left
# as it is, built PIE, non-PIE and static:
#   - the program checks itself (copies compute the same, return addresses
#     lie in the range of the code called) and the instrumented copy prints
#     exactly what the original prints, with the same exit status;
#   - `mtool analyze` names the procedures inside the ranges as code used as
#     data with the object that marks them (a sized data symbol, a label
#     without size), and only those: an ordinary function pointer (qsort's
#     comparator) and the code with unwind info after the label's range are
#     not; the object's name is escaped in text;
#   - `mtool count` counts the code after the range, not the range.
set -u
here=$(cd "$(dirname "$0")" && pwd)
mtool=${1:-$here/../../build/mtool}
work=$(mktemp -d /tmp/mtool-codedata.XXXXXX)
export MTOOL_HISTORY=${MTOOL_HISTORY:-$work/history.db} # not the user's history
trap 'rm -rf "$work"' EXIT
. "$here/../lib.sh"

# A data symbol whose name holds an escape sequence, over one function.
printf '.text\n.type "odd\033[31mblob", @object\n"odd\033[31mblob":\n.globl oddf\n.type oddf, @function\noddf:\n    leaq 3(%%rdi), %%rax\n    ret\n.size oddf, .-oddf\n.size "odd\033[31mblob", .-"odd\033[31mblob"\n.section .note.GNU-stack, "", @progbits\n' > "$work/odd.S"

# code_as_data of every procedure in the analysis: "NAME<TAB>REASON or -".
reasons() {
    python3 -c 'import json, sys
for p in json.load(open(sys.argv[1]))["procedures"]:
    print(p["name"] + "\t" + (p["code_as_data"] or "-"))' "$1"
}

check_analysis() { # VARIANT BIN
    local v=$1 bin=$2
    if ! "$mtool" analyze --json "$bin" -o "$work/a.json" 2> "$work/a.err"; then
        not_ok "$v: analyze --json failed: $(head -1 "$work/a.err")"; return
    fi
    reasons "$work/a.json" > "$work/reasons"
    local expect="blob_square	code used as data: inside object sized_blob
blob_callback	code used as data: inside object sized_blob
lb_twice	code used as data: inside object label_blob (a label without a size: up to the next code with unwind info)
lb_callback	code used as data: inside object label_blob (a label without a size: up to the next code with unwind info)
oddf	code used as data: inside object odd"$'\033'"[31mblob
after_blob	-
by_value	-
where_from	-
main	-"
    local got
    got=$(while IFS='	' read -r name _; do grep -m1 "^$name	" "$work/reasons"; done <<< "$expect")
    if [ "$got" = "$expect" ]; then
        ok "$v: analyze --json: the 5 procedures of the 3 ranges are code used as data, the others not"
    else
        not_ok "$v: analyze --json code_as_data: $(diff <(echo "$expect") <(echo "$got") | grep '^[<>]' | head -4 | tr '\n\t' '  ')"
    fi
    local others
    others=$(grep -v -e '	-$' -e '^blob_' -e '^lb_' -e '^oddf	' "$work/reasons" | head -3 | tr '\n' ' ')
    [ -z "$others" ] && ok "$v: nothing else is code used as data" ||
        not_ok "$v: also code used as data: $others"
    "$mtool" analyze --function oddf "$bin" > "$work/t.txt" 2>&1
    if grep -q 'left out: code used as data: inside object odd\\x1b\[31mblob$' "$work/t.txt" &&
        ! grep -q $'\033' "$work/t.txt"; then
        ok "$v: analyze --function oddf: left out, the object's name escaped"
    else
        not_ok "$v: analyze --function oddf: $(grep -a 'left out' "$work/t.txt" | cat -v)"
    fi
}

check_variant() { # VARIANT CFLAGS...
    local v=$1
    shift
    local bin=$work/$v
    if ! gcc -O2 "$@" "$here/codedata_prog.c" "$here/blob.S" "$work/odd.S" -o "$bin" 2> "$work/cc.err"; then
        not_ok "$v: cannot compile: $(grep -m1 error "$work/cc.err")"; return
    fi
    "$bin" 6 > "$work/o.out" 2> "$work/o.err"
    local so=$?
    if [ $so -ne 0 ]; then
        not_ok "$v: the original fails its own checks (status $so): $(grep -m1 NO "$work/o.out")"; return
    fi
    check_analysis "$v" "$bin"
    if ! "$mtool" instrument --counts -v "$bin" -o "$bin.inst" > "$work/inst.log" 2>&1; then
        not_ok "$v: instrument failed: $(tail -1 "$work/inst.log")"; return
    fi
    if grep -q '^  not instrumented: blob_square: code used as data: inside object sized_blob$' "$work/inst.log" &&
        grep -q '^  not instrumented: oddf: code used as data: inside object odd\\x1b' "$work/inst.log" &&
        ! grep -q '^  not instrumented: after_blob' "$work/inst.log"; then
        ok "$v: instrument leaves the ranges out, names escaped, and instruments after_blob"
    else
        not_ok "$v: instrument's report: $(grep -a -e blob -e oddf "$work/inst.log" | head -3 | cat -v | tr '\n' ' ')"
    fi
    mkdir -p "$work/prof.$v"
    MTOOL_OUT=$work/prof.$v "$bin.inst" 6 > "$work/i.out" 2> "$work/i.err"
    local si=$?
    if [ $si -eq $so ] && cmp -s "$work/o.out" "$work/i.out" && cmp -s "$work/o.err" "$work/i.err"; then
        ok "$v: instrumented run identical ($(grep -c ': yes$' "$work/i.out") self-checks passed)"
    else
        not_ok "$v: instrumented run differs (exit $so vs $si): $(diff "$work/o.out" "$work/i.out" | grep '^[<>]' | head -3 | tr '\n' ' ')"
    fi
    if ! "$mtool" count --no-store --profiles "$work/prof.$v" -o "$work/run.$v" -- "$bin" > "$work/count.log" 2>&1; then
        not_ok "$v: count --profiles failed: $(tail -1 "$work/count.log")"; return
    fi
    local counted
    counted=$(awk -F'\t' '$3 == "after_blob" { a += $2 } $3 ~ /^(blob_|lb_|oddf)/ { n++ }
        END { printf "%d %d", a, n }' "$work/run.$v/counts.tsv")
    [ "$counted" = "1 0" ] && ok "$v: count: after_blob ran once, no counter in the ranges" ||
        not_ok "$v: count: after_blob's count and blocks counted in the ranges: $counted, expected 1 0"
}

check_variant pie -fPIE -pie
check_variant nopie -fno-pie -no-pie
check_variant static -static
print_totals
