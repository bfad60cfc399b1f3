#!/bin/sh
# tests/count_json.sh — `mtool count --json` (RUNDIR/count.json, schema
# mtool.count, docs/REPORT.md) on bundled samples: valid JSON with every
# field documented and typed; the same figures as the text summary of the
# same run; executed totals and every procedure and loop row equal to
# counts.tsv x the static analysis; procedure names the binary's symbols;
# the program's own stdout untouched before the JSON, nothing of the
# summary there; count's exit status and the JSON's the program's (an exit
# code, a fatal signal); a second count from the cache reports the same;
# --profiles; and names with quotes, backslashes, newlines, control bytes
# and bytes that are not UTF-8 (a procedure, its source file, the binary's
# path, arguments).  Checks on the JSON are in tests/count_json_check.py.
#
#   MTOOL=build/asan/mtool SAMPLES=build/samples sh tests/count_json.sh
set -u
MTOOL=${MTOOL:-build/asan/mtool}
SAMPLES=${SAMPLES:-build/samples}
HERE=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d "${TMPDIR:-/tmp}/mtool-count-json.XXXXXX")
trap 'rm -rf "$W"' EXIT INT TERM
# A private cache and configuration: the profile tests/run.sh calibrated
# (tests/lib.sh), else the first count calibrates this machine into it (a
# few seconds) and the others use that profile.
export XDG_CACHE_HOME="$W/cache" XDG_CONFIG_HOME="$W/config" MTOOL_HISTORY="$W/history.db"
. "$(dirname "$0")/lib.sh"
pycheck() {
    python3 "$HERE/count_json_check.py" "$@" > "$W/py.out" 2>&1 ||
        grep -q '^not ok' "$W/py.out" || echo "not ok - count_json_check.py $1 failed: $(tail -1 "$W/py.out")" >> "$W/py.out"
    cat "$W/py.out"
    tally "$W/py.out"
}
if ! command -v python3 > /dev/null 2>&1; then
    echo "not ok - python3 is needed to check the JSON"
    exit 1
fi

# count_json NAME BIN ARGS...: `count --json` beside the program run alone;
# checks the exit status and stdout, leaves $W/NAME/count.json, $W/NAME.err.
# --libs none in every count here: the checks are of the executable's own
# rows (counts.tsv x its analysis, its symbols; glibc's, counted by
# default, are tests/glibc.sh's and tests/libs.sh's).
count_json() {
    cj_name=$1
    shift
    "$@" > "$W/$cj_name.native" 2> /dev/null
    cj_want=$?
    "$MTOOL" count --json --no-store --libs none -o "$W/$cj_name" -- "$@" > "$W/$cj_name.out" 2> "$W/$cj_name.err"
    cj_rc=$?
    check "$cj_name: count exits with the program's status ($cj_want, got $cj_rc)" "[ $cj_rc = $cj_want ]"
    check "$cj_name: the JSON's exit_status is the program's" \
        "python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1]))[\"exit_status\"] != $cj_want)' '$W/$cj_name/count.json' 2> /dev/null"
    # stdout: the program's own output (twice: uninstrumented and counted runs), then the JSON.
    cj_lines=$(($(wc -l < "$W/$cj_name.out") - 1))
    { cat "$W/$cj_name.native" "$W/$cj_name.native"; } > "$W/$cj_name.native2"
    check "$cj_name: stdout is the program's output, then count.json on one line, nothing of the summary" \
        "head -n $cj_lines '$W/$cj_name.out' | cmp -s - '$W/$cj_name.native2' && tail -n 1 '$W/$cj_name.out' | cmp -s - '$W/$cj_name/count.json' && ! grep -q -e '^mtool count:' -e 'MTOOL figure 2' -e '^top procedures' '$W/$cj_name.out'"
    check "$cj_name: the text summary still goes to stderr" \
        "grep -q '^mtool count: ' '$W/$cj_name.err' && grep -q '^top loops by memory operations' '$W/$cj_name.err'"
}

# summary NAME BIN: the JSON against the text, counts.tsv x the analysis, nm.
summary() {
    if "$MTOOL" analyze --json "$2" -o "$W/$1.analysis.json" 2> /dev/null; then
        nm --defined-only "$2" 2> /dev/null | awk '{ print $3 }' > "$W/$1.nm"
        nm_file=$W/$1.nm
        [ -s "$nm_file" ] || nm_file=- # no symbols (stripped), or no nm
        pycheck summary "$W/$1/count.json" "$W/$1.err" "$W/$1/counts.tsv" "$W/$1.analysis.json" \
            "$nm_file" "$HERE/../docs/REPORT.md" "$1"
    else
        not_ok "$1: mtool analyze --json failed"
    fi
}

for s in matmul-gcc-O2 indirect-gcc-O2 threads-gcc-O2 callgraph-clang-O2; do
    [ -x "$SAMPLES/$s" ] || { not_ok "$s: missing sample $SAMPLES/$s"; continue; }
    count_json "$s" "$SAMPLES/$s"
    summary "$s" "$SAMPLES/$s"
done
if [ -x "$SAMPLES/threads-gcc-O2" ]; then
    check "threads-gcc-O2: the JSON counts every thread (more than 1)" \
        "python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1]))[\"threads\"] < 2)' '$W/threads-gcc-O2/count.json'"
fi
if [ -x "$SAMPLES/indirect-gcc-O2" ]; then
    check "indirect-gcc-O2: the procedures left out are listed (it has unresolved jumps)" \
        "python3 -c 'import json,sys; d = json.load(open(sys.argv[1]))[\"instrumentation\"]; sys.exit(not d[\"not_instrumented\"] or d[\"procedures\"] + len(d[\"not_instrumented\"]) != d[\"procedures_candidates\"])' '$W/indirect-gcc-O2/count.json'"
    # The same binary again: the instrumented copy and its report come from the cache.
    "$MTOOL" count --no-store --libs none -o "$W/indirect-again" -- "$SAMPLES/indirect-gcc-O2" > /dev/null 2>&1
    pycheck same-instrumentation "$W/indirect-gcc-O2/count.json" "$W/indirect-again/count.json" indirect-gcc-O2
    check "count without --json writes count.json and nothing but the program's output on stdout" \
        "\"$MTOOL\" count --no-store --libs none -o '$W/indirect-plain' -- '$SAMPLES/indirect-gcc-O2' 2> /dev/null | cmp -s - '$W/indirect-gcc-O2.native2' && [ -s '$W/indirect-plain/count.json' ]"
    "$MTOOL" count --json --no-store --profiles "$W/indirect-gcc-O2/profiles" -o "$W/indirect-merged" \
        -- "$SAMPLES/indirect-gcc-O2" > "$W/merged.out" 2> /dev/null
    check "--profiles --json: exit 0, the JSON on stdout" \
        "[ $? = 0 ] && cmp -s '$W/merged.out' '$W/indirect-merged/count.json'"
    pycheck profiles "$W/indirect-gcc-O2/count.json" "$W/indirect-merged/count.json" indirect-gcc-O2
fi

# The program's status: an exit code, a fatal signal, several processes.
for b in "$SAMPLES"/behavior-gcc-O2; do
    [ -x "$b" ] || { not_ok "missing sample $b"; continue; }
    count_json behavior-_exit "$b" _exit
    count_json behavior-segv "$b" segv
    check "behavior segv: the JSON's status names the signal" \
        "grep -q '\"status\":\"killed by signal 11 ' '$W/behavior-segv/count.json'"
    count_json behavior-fork "$b" fork
    check "behavior fork: the JSON counts both processes" \
        "grep -q '\"processes\":2,' '$W/behavior-fork/count.json'"
done

# odd_round_trip BIN ARG2: the odd names through the run directory, pass 2
# and the history.  counts.tsv and pass1.txt, unescaped as docs/REPORT.md
# says, give back the symbol's and the path's bytes; `time RUNDIR`, `run`
# and `history` work on them, exit with the program's status, and print
# the names escaped (mt_escape_text: printable ASCII kept, any other byte
# and the backslash as \xHH), never a raw control byte.
odd_round_trip() {
    odd_hist="$W/odd/history.db"
    python3 - "$W/odd/run" "$(cat "$W/odd/name.hex")" "$1" > "$W/odd/rt.out" 2>&1 <<'EOF'
import os, sys
run, name, binary = sys.argv[1], bytes.fromhex(sys.argv[2]), os.fsencode(sys.argv[3])
def unescape(field):
    out, i = bytearray(), 0
    while i < len(field):
        if field[i:i + 2] == b"\\x":
            out.append(int(field[i + 2:i + 4], 16))
            i += 4
        elif field[i:i + 1] == b"\\":
            out += {b"\\": b"\\", b"t": b"\t", b"n": b"\n", b"r": b"\r"}[field[i + 1:i + 2]]
            i += 2
        else:
            out += field[i:i + 1]
            i += 1
    return bytes(out)
names = {unescape(l.split(b"\t")[2]) for l in open(run + "/counts.tsv", "rb").read().split(b"\n")
         if l and not l.startswith(b"#")}
print("ok - odd names: counts.tsv gives back the symbol's bytes" if name in names else
      "not ok - odd names: counts.tsv lacks the symbol: %r" % sorted(names))
pass1 = dict(l.split(b"\t", 1) for l in open(run + "/pass1.txt", "rb").read().split(b"\n")
             if b"\t" in l and not l.startswith(b"#"))
path = unescape(pass1.get(b"binary", b""))
print("ok - odd names: pass1.txt gives back the binary's path" if path == os.path.realpath(binary)
      else "not ok - odd names: pass1.txt binary %r" % path)
EOF
    [ $? -eq 0 ] || grep -q '^not ok' "$W/odd/rt.out" ||
        echo "not ok - odd names: counts.tsv or pass1.txt unreadable: $(tail -1 "$W/odd/rt.out")" >> "$W/odd/rt.out"
    cat "$W/odd/rt.out"
    tally "$W/odd/rt.out"
    shown='odd"q\x5cb\x0an\x09t\x01\x7f\xff\xc3\xa9'
    no_raw() { ! LC_ALL=C grep -q "$(printf '[\001\177]')" "$@"; }
    check "odd names: count's summary shows the symbol escaped, no raw control byte" \
        "grep -qF '$shown' '$W/odd/err' && no_raw '$W/odd/err'"
    MTOOL_HISTORY="$odd_hist" "$MTOOL" time "$W/odd/run" > "$W/odd/time.out" 2> "$W/odd/time.err"
    rc=$?
    check "odd names: time RUNDIR exits with the program's status (5, got $rc)" "[ $rc = 5 ]"
    check "odd names: time's report names the symbol and the path escaped" \
        "grep -qF '$shown' '$W/odd/time.out' && grep -qF 'o\"d\x5cd\x0ab in' '$W/odd/time.out' && no_raw '$W/odd/time.out' '$W/odd/run/report.txt'"
    MTOOL_HISTORY="$odd_hist" "$MTOOL" run --libs none -o "$W/odd/run2" -- "$1" 5 "$2" > "$W/odd/run.out" 2> "$W/odd/run.err"
    rc=$?
    check "odd names: run exits with the program's status (5, got $rc), its report escaped" \
        "[ $rc = 5 ] && grep -qF '$shown' '$W/odd/run.out' && no_raw '$W/odd/run.out'"
    MTOOL_HISTORY="$odd_hist" "$MTOOL" history show last > "$W/odd/show" 2>&1
    MTOOL_HISTORY="$odd_hist" "$MTOOL" history list > "$W/odd/list" 2>&1
    check "odd names: history holds both runs, shows names and paths escaped, one line each" \
        "[ \$(grep -cF ' o\"d\x5cd\x0ab in ' '$W/odd/list') = 2 ] && grep -qF '$shown' '$W/odd/show' && grep -qF 'program: $W/odd/o\"d\x5cd\x0ab in' '$W/odd/show' && no_raw '$W/odd/show' '$W/odd/list'"
}

# Odd names: a procedure whose symbol holds a quote, a backslash, a newline,
# a tab, \001, DEL, a byte that is not UTF-8 and UTF-8 (patched into the
# symbol table, same length), in a source file whose name holds a quote, a
# backslash, a newline and a tab, run by a path (with a space too) and with arguments like them.
if command -v gcc > /dev/null 2>&1; then
    mkdir -p "$W/odd"
    src=$(printf 'we"ird\\dir\nname\tx.c')
    cat > "$W/odd/$src" <<'EOF'
#include <stdlib.h>
volatile long sink;
__attribute__((noinline)) long mt_odd_symbol_name_placeholder(long *a, long n)
{
    long s = 0;
    for (long r = 0; r < 50; r++)
        for (long i = 0; i < n; i++)
            s += a[i] ^ r;
    return s;
}
int main(int argc, char **argv)
{
    long n = 4096, *a = calloc(n, sizeof *a);
    for (long i = 0; i < n; i++)
        a[i] = i;
    sink = mt_odd_symbol_name_placeholder(a, n);
    free(a);
    return argc > 1 ? atoi(argv[1]) : 0;
}
EOF
    bin=$(printf '%s/odd/o"d\\d\nb in' "$W")
    if (cd "$W/odd" && gcc -O2 -g "$src" -o plain) 2> "$W/odd/gcc.err" &&
        python3 - "$W/odd/plain" "$bin" > "$W/odd/name.hex" <<'EOF'
import sys
old = b"mt_odd_symbol_name_placeholder"
new = b'odd"q\\b\nn\tt\x01\x7f\xff\xc3\xa9'
new += b"_" * (len(old) - len(new))
data = open(sys.argv[1], "rb").read()
assert data.count(old) >= 1
with open(sys.argv[2], "wb") as f:
    f.write(data.replace(old, new))
print(new.hex())
EOF
    then
        chmod +x "$bin"
        arg2=$(printf 'c\nd"\\')
        "$MTOOL" count --json --no-store --libs none -o "$W/odd/run" -- "$bin" 5 "$arg2" > "$W/odd/out" 2> "$W/odd/err"
        rc=$?
        check "odd names: count exits with the program's status (5, got $rc)" "[ $rc = 5 ]"
        check "odd names: stdout is the JSON (the program prints nothing)" \
            "cmp -s '$W/odd/out' '$W/odd/run/count.json'"
        hex() { printf '%s' "$1" | od -An -v -tx1 | tr -d ' \n'; }
        pycheck odd "$W/odd/run/count.json" "$(cat "$W/odd/name.hex")" "$(hex "$src")" "$(hex "$bin")" \
            "$(hex 5)" "$(hex "$arg2")" "odd names"
        odd_round_trip "$bin" "$arg2"
    else
        not_ok "odd names: could not build the sample: $(head -1 "$W/odd/gcc.err")"
    fi
else
    echo "# odd names: skipped, no gcc"
fi

# Bad use: --json changes nothing about failures (one line, no JSON).
"$MTOOL" count --json --no-store -o "$W/none" -- "$W/nosuch" > "$W/none.out" 2> "$W/none.err"
check "count --json on a missing program: non-zero, nothing on stdout, no count.json" \
    "[ $? -ne 0 ] && [ ! -s '$W/none.out' ] && [ ! -e '$W/none/count.json' ]"

print_totals
