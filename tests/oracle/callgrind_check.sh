#!/bin/sh
# tests/oracle/callgrind_check.sh CHECKER WORKDIR BINARY — runs BINARY under
# callgrind (instruction-level, with jumps), then CHECKER (check_blocks)
# on its output.  Prints check_blocks' "ok"/"not ok" lines; a run that
# fails before checking prints one "not ok" line itself.
#
# LD_SHOW_AUXV=1 makes the dynamic loader print AT_ENTRY, the entry point's
# run-time address: check_blocks uses it to find the load bias when the
# callgrind output holds run-time addresses.
set -u
checker=$1 work=$2 bin=$3
name=$(basename "$bin")
out=$work/$name.cg stdout=$work/$name.stdout
if ! LD_SHOW_AUXV=1 valgrind --tool=callgrind --dump-instr=yes --collect-jumps=yes --compress-pos=no \
    --compress-strings=no --callgrind-out-file="$out" "$bin" > "$stdout" 2> "$work/$name.vg"; then
    echo "not ok - $name: does not run under callgrind: $(tail -1 "$work/$name.vg")"
    exit 0
fi
"$checker" "$bin" "$out" "$stdout" > "$work/$name.check" 2>&1
rc=$?
cat "$work/$name.check"
if [ $rc -ne 0 ] && ! grep -q '^not ok' "$work/$name.check"; then
    echo "not ok - $name: check_blocks exited with status $rc"
fi
rm -f "$out" "$stdout" "$work/$name.vg" "$work/$name.check"
