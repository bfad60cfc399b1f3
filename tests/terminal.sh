#!/bin/sh
# tests/terminal.sh — what mtool writes to a terminal (issue 18).
# Program-derived text is data: a binary whose procedure and source file
# are named with terminal escape sequences (an OSC that retitles the
# window, a colour, a screen clear: the symbol renamed with objcopy, the
# source file so named) goes through every command that prints text:
# analyze (every view), run (count and time), the run directory's
# reports, sim (a traced run and RUNDIR), history (list, show, trend,
# diff, regressions, export, sql).  Each command's stdout and stderr
# together must hold no control byte but newline and tab, and the escaped
# form of the name must be there, so that the check cannot pass by
# printing nothing.  JSON keeps the name's bytes (\u001b) and parses.
# Colour: on a pseudo-terminal (script(1)) time's report colours its
# overhead column; NO_COLOR, --no-color, TERM=dumb and a pipe turn it off,
# and report.txt never has it.
# Progress: instrumenting draws a progress line on a terminal's stderr
# (MTOOL_PROGRESS_DELAY=0 so that a small binary shows it), erased before
# the report; none after the default delay of a second on a small binary,
# none on TERM=dumb, none into a file.  Width: on a narrow terminal the
# rows' last column (name, source) is cut with "...", never in report.txt.
#
#   MTOOL=build/asan/mtool sh tests/terminal.sh
set -u
MTOOL=${MTOOL:-build/asan/mtool}
W=$(mktemp -d "${TMPDIR:-/tmp}/mtool-terminal.XXXXXX")
trap '[ -n "${KEEP:-}" ] || rm -rf "$W"' EXIT INT TERM
export XDG_CACHE_HOME="$W/cache" XDG_CONFIG_HOME="$W/config" MTOOL_HISTORY="$W/history.db"
. "$(dirname "$0")/lib.sh"

esc=$(printf '\033')
proc=$(printf 'ev\033]0;pwned\007\033[31mRED\033[2J')
src="$W/ho${esc}[2Jst.c"
cat > "$src" << 'EOF'
#include <stdio.h>
#include <stdlib.h>
long table[1 << 16];
__attribute__((noinline)) long walk(long n)
{
    long s = 0;
    for (long r = 0; r < n; r++)
        for (long i = 0; i < (1 << 16); i += 8)
            s += table[(i * 97) & 0xffff];
    return s;
}
int main(int argc, char **argv)
{
    printf("%d arguments, %ld\n", argc - 1, walk(argc > 1 ? atol(argv[1]) : 200));
    return 0;
}
EOF
bin="$W/hostile"
if ! (cd "$W" && cc -O2 -g -c "$src" -o h.o &&
      objcopy --redefine-sym "walk=$proc" h.o && cc -o "$bin" h.o); then
    not_ok "the hostile sample builds (cc, objcopy)"
    print_totals
    exit
fi

# shown NAME FILE [ESCAPED]: FILE (a command's stdout and stderr) holds no
# control byte but newline and tab, and holds ESCAPED (default: the
# procedure's name as \xHH text).
escaped='ev\\x1b]0;pwned\\x07\\x1b\[31mRED\\x1b\[2J'
shown() {
    bad=$(tr -d '\n\t' < "$2" | tr -cd '\000-\037\177' | wc -c)
    check "$1: no control byte reaches the terminal ($bad), the name shown escaped" \
        "[ $bad = 0 ] && grep -q '${3:-$escaped}' '$2'"
}
# cmd NAME ARGS...: runs mtool ARGS, its stdout and stderr into $W/NAME.
cmd() {
    name=$1
    shift
    "$MTOOL" "$@" > "$W/$name" 2>&1
}

cmd analyze analyze "$bin" && shown "analyze" "$W/analyze"
cmd loops analyze --loops "$bin" && shown "analyze --loops" "$W/loops"
cmd callgraph analyze --callgraph "$bin" && shown "analyze --callgraph" "$W/callgraph"
cmd costs analyze --costs "$bin" && shown "analyze --costs" "$W/costs"
cmd function analyze --function "$proc" "$bin" && shown "analyze --function" "$W/function"
check "analyze --function shows the source file's name escaped" "grep -q 'ho\\\\x1b\[2Jst.c' '$W/function'"
cmd json analyze --json -o "$W/a.json" "$bin"
check "analyze --json keeps the name's bytes" "python3 '$(dirname "$0")/terminal_json.py' '$W/a.json' '$proc'"

# --libs none in the run and in sim: the names checked are the program's
# own (a library's are escaped as a whole, tests/libs_report.sh), and
# glibc's copies, counted, timed and traced by default, cost this suite
# timed and tracing rewrites of libc under ASan (111 s of CPU against 43
# without them, loaded AMD EPYC Zen 3), and their data objects would fill
# sim's first 20 ahead of the procedure's stack frame.
cmd run run --runs 2 --libs none -o "$W/rd" -- "$bin" 40
check "run exits 0" "[ $? = 0 ]"
shown "run (count and time)" "$W/run"
shown "report.txt" "$W/rd/report.txt"
cmd sim sim --libs none -- "$bin" 2 && shown "sim -- BIN" "$W/sim"
check "sim names the procedure's stack frame (a data object) escaped" "grep -q 'stack:$escaped' '$W/sim'"
cmd simrd sim "$W/rd" && shown "sim RUNDIR" "$W/simrd"

cmd list history list && shown "history list" "$W/list" 'hostile'
cmd show history show 1 && shown "history show" "$W/show"
cmd showsim history show last && shown "history show (a simulated run)" "$W/showsim"
cmd trend history trend "$proc" && shown "history trend" "$W/trend"
cmd diff history diff 1 2 && shown "history diff" "$W/diff"
# A second simulated run with a smaller L2 regresses the procedure (its
# 512 KiB table read twice: the second pass misses in 64 KiB).
cmd sim2 sim --L2=64K,4,64 -- "$bin" 2
cmd regressions history regressions --metric l2_misses
check "history regressions flags the procedure (exit 1)" "[ $? = 1 ]"
shown "history regressions" "$W/regressions"
cmd csv history export --csv && shown "history export --csv" "$W/csv"
cmd hjson history export --json -o "$W/h.json"
check "history export --json parses and keeps the name's bytes" \
    "python3 '$(dirname "$0")/terminal_json.py' '$W/h.json' '$proc'"
cmd sql history sql "SELECT procedure FROM sites" && shown "history sql" "$W/sql"

# ---- colour --------------------------------------------------------------------------------
# tty NAME [ENV...] -- ARGS: mtool ARGS on a pseudo-terminal (TERM=xterm
# unless ENV says otherwise), what it printed into $W/NAME.
tty() {
    name=$1
    shift
    envs=""
    while [ "$1" != "--" ]; do envs="$envs $1"; shift; done
    shift
    env TERM=xterm $envs script -qec "$MTOOL $*" /dev/null > "$W/$name" 2>&1
}
sgr="$(printf '\033')\[[0-9;]*m"
if command -v script > /dev/null 2>&1; then
    tty color -- time --runs 1 --no-store "$W/rd"
    check "time on a terminal colours the report (SGR escapes)" "grep -q '$sgr' '$W/color'"
    check "report.txt has no colour" "! grep -q '$sgr' '$W/rd/report.txt'"
    tty nocolor NO_COLOR=1 -- time --runs 1 --no-store "$W/rd"
    check "NO_COLOR=1 turns colour off" "grep -q 'm-objects by overhead' '$W/nocolor' && ! grep -q '$sgr' '$W/nocolor'"
    tty nocolor2 NO_COLOR= -- --no-color time --runs 1 --no-store "$W/rd"
    check "--no-color before the command turns colour off (NO_COLOR empty does not)" \
        "grep -q 'm-objects by overhead' '$W/nocolor2' && ! grep -q '$sgr' '$W/nocolor2'"
    tty nocolor3 -- time --runs 1 --no-store --no-color "$W/rd"
    check "--no-color after the command turns colour off" \
        "grep -q 'm-objects by overhead' '$W/nocolor3' && ! grep -q '$sgr' '$W/nocolor3'"
    tty dumb TERM=dumb -- time --runs 1 --no-store "$W/rd"
    check "TERM=dumb gets no colour" "grep -q 'm-objects by overhead' '$W/dumb' && ! grep -q '$sgr' '$W/dumb'"
    tty error -- analyze "$W/nonexistent"
    check "an error's 'mtool:' is coloured on a terminal" "grep -q \"$sgr.*mtool:\" '$W/error'"
    erase=$(printf '\r\033\\[K')
    tty progress MTOOL_PROGRESS_DELAY=0 -- instrument --counts "$bin" -o "$W/inst"
    check "instrumenting on a terminal draws a progress line" \
        "grep -q \"${erase}mtool: analyzing: control-flow graphs of procedures: [0-9]* of [0-9]*\" '$W/progress' &&
         grep -q \"${erase}mtool: instrumenting: decoding procedures: \" '$W/progress'"
    check "the progress line is erased before the report" "grep -q \"${erase}instrumented [0-9]\" '$W/progress'"
    tty noprogress -- instrument --counts "$bin" -o "$W/inst"
    check "no progress line for work under a second" \
        "grep -q '^instrumented' '$W/noprogress' && ! grep -q 'analyzing:' '$W/noprogress'"
    TERM=xterm script -qec "stty cols 120; $MTOOL time --runs 1 --no-store '$W/rd'" /dev/null > "$W/narrow" 2>&1
    sed "s/$sgr//g" "$W/narrow" | tr -d '\r' > "$W/narrow.txt"
    check "time on a 120-column terminal: the m-object row fits, its name cut with '...'" \
        "grep 'ev.x1b.0;pwned' '$W/narrow.txt' | grep -q '\.\.\.\$' &&
         ! grep 'ev.x1b.0;pwned' '$W/narrow.txt' | awk 'length > 120' | grep -q ."
    check "report.txt keeps the whole name and source" "grep -q '$escaped.*st\.c:[0-9]' '$W/rd/report.txt'"
    tty dumbprogress TERM=dumb MTOOL_PROGRESS_DELAY=0 -- instrument --counts "$bin" -o "$W/inst"
    check "TERM=dumb gets no progress line" \
        "grep -q '^instrumented' '$W/dumbprogress' && ! grep -q 'analyzing:' '$W/dumbprogress'"
else
    echo "# colour: skipped, script(1) is not installed (no pseudo-terminal to test with)"
fi
cmd pipe time --runs 1 --no-store "$W/rd"
MTOOL_PROGRESS_DELAY=0 cmd progress-file instrument --counts "$bin" -o "$W/inst"
check "no progress line into a file" \
    "grep -q '^instrumented' '$W/progress-file' && ! grep -q 'analyzing:' '$W/progress-file'"
check "time into a pipe: no colour" "grep -q 'm-objects by overhead' '$W/pipe' && ! grep -q '$sgr' '$W/pipe'"
cmd run2 run --runs 1 -o "$W/rd2" -- "$bin" 1 --no-color
check "--no-color after -- is the program's argument, not mtool's" \
    "grep -qx '2 arguments, 0' '$W/run2'"
print_totals
