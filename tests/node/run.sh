#!/bin/bash
# tests/node/run.sh MTOOL [NODE] — node (V8 and its embedded builtins linked
# in, 98 MB) instrumented: every script here prints exactly what it prints
# with the original node (stdout, stderr, exit status: uncaught exceptions,
# process.exit, death by a signal included); V8's embedded builtins are left
# out as code used as data; `mtool count` merges the profiles of every node
# process and thread, and node's main ran once per node process started.
# Skipped, with a message, when node is not installed.  Part of
# `make test-full` (tests/run-full.sh): instrumenting node takes a minute.
set -u
here=$(cd "$(dirname "$0")" && pwd)
mtool=$1
node=${2:-$(command -v node)}
if [ -z "$node" ] || [ ! -x "$node" ]; then
    echo "# node smoke test: skipped, node is not installed"
    exit 0
fi
node=$(readlink -f "$node")
work=$(mktemp -d /tmp/mtool-node.XXXXXX)
export MTOOL_HISTORY=${MTOOL_HISTORY:-$work/history.db} # not the user's history
trap 'rm -rf "$work"' EXIT
. "$here/../lib.sh"

inst=$work/node
start=$(date +%s)
if ! "$mtool" instrument --counts -v "$node" -o "$inst" > "$work/inst.log" 2>&1; then
    not_ok "node: instrument failed: $(grep -v 'not instrumented' "$work/inst.log" | tail -1)"
    exit 1
fi
echo "# node $("$node" --version): instrumented in $(( $(date +%s) - start )) s: $(head -1 "$work/inst.log")"

# V8's embedded blob, when node links V8 in: every Builtins_* procedure left
# out as code used as data, and nothing else for that reason.
if grep -q 'v8_Default_embedded_blob_code_' "$node"; then
    blob=$(grep -c '^  not instrumented: Builtins_[^:]*: code used as data: inside object v8_Default_embedded_blob_code_' "$work/inst.log")
    builtins=$(grep -c '^  not instrumented: Builtins_' "$work/inst.log")
    other=$(grep 'code used as data' "$work/inst.log" | grep -vc '^  not instrumented: Builtins_')
    if [ "$blob" -gt 0 ] && [ "$blob" = "$builtins" ] && [ "$other" = 0 ]; then
        ok "node: its $blob Builtins_* procedures are left out as code used as data, nothing else is"
    else
        not_ok "node: Builtins_ left out as code used as data: $blob of $builtins; other code used as data: $other"
    fi
else
    echo "# node links V8 as a shared library: no embedded blob in $node"
fi

mkdir -p "$work/prof"
scripts=0
# Each case: node's options and a script.  --jitless runs V8's interpreter
# alone (bytecode handlers are builtins); --use-largepages=on copies node's
# text to huge pages at start-up (entry jumps included: they stay valid).
while read -r opts js; do
    [ "$opts" = - ] && opts= # none
    scripts=$((scripts + 1))
    # (stderr of the braces to /dev/null: bash's own "Terminated" line after signal.js)
    { (cd "$here" && exec timeout 120 "$node" $opts "$js.js") < /dev/null > "$work/o.out" 2> "$work/o.err"; } 2> /dev/null
    so=$?
    { (cd "$here" && MTOOL_OUT=$work/prof exec timeout 120 "$inst" $opts "$js.js") < /dev/null > "$work/i.out" 2> "$work/i.err"; } 2> /dev/null
    si=$?
    what="node${opts:+ $opts} $js.js"
    if [ $so -eq $si ] && cmp -s "$work/o.out" "$work/i.out" && cmp -s "$work/o.err" "$work/i.err"; then
        ok "$what: identical stdout, stderr and exit status ($so)"
    else
        not_ok "$what: exit $so vs $si: $(diff "$work/o.out" "$work/i.out" | grep '^[<>]' | head -2 | tr '\n' ' ') $(diff "$work/o.err" "$work/i.err" | grep '^[<>]' | head -2 | tr '\n' ' ')"
    fi
done << 'EOF'
- json
- regex
- async
- worker
- child
- uncaught
- exit
- reject
- signal
- fs
--jitless regex
--jitless async
--jitless uncaught
--use-largepages=on json
EOF
(MTOOL_OUT=$work/prof exec "$inst" -e 'console.log(1+1)') > "$work/i.out" 2>&1
[ "$(cat "$work/i.out")" = 2 ] && ok "node -e: prints 2" || not_ok "node -e: $(head -2 "$work/i.out")"

# Node processes started: one per case, the -e, and child.js's two node
# children (the shell it spawns is no node; its fork before exec runs no main).
nodes=$((scripts + 1 + 2))
if ! "$mtool" count --no-store --profiles "$work/prof" -o "$work/run" -- "$node" > "$work/count.log" 2>&1; then
    not_ok "node: count --profiles failed: $(tail -1 "$work/count.log")"
else
    main=$(awk -F'\t' '$3 == "main" && !seen++ { m = $2 } END { print m + 0 }' "$work/run/counts.tsv")
    threads=$(sed -n 's/^mtool count: .*process[es]*, \([0-9]*\) thread.*/\1/p' "$work/count.log")
    if [ "$main" = "$nodes" ] && [ "${threads:-0}" -gt "$nodes" ]; then
        ok "node: count merges $nodes node processes (main's entry ran $main times), ${threads} threads"
    else
        not_ok "node: main's entry count $main, expected $nodes; threads ${threads:-?}: $(grep '^mtool count' "$work/count.log")"
    fi
fi
print_totals
