#!/bin/bash
# tests/runtime/run.sh [MTOOL] — the runtime inside instrumented programs
# (timer/) and the profile reader (profile/), end to end on rt_prog.c built
# as PIE, non-PIE, static and -fno-plt (calls through the GOT):
#   - the instrumented program behaves exactly like the original (stdout,
#     stderr, exit status, open descriptors);
#   - merged counts are exact across pthreads (also created from a procedure
#     left uninstrumented), thread churn (slot reuse),
#     OpenMP regions, fork, _exit, abort, SIGKILL and exec;
#   - an unwritable $MTOOL_OUT costs one line on stderr and nothing else;
#   - truncated, corrupt, incomplete and foreign profiles are reported or
#     skipped, never a crash.
# Prints "ok"/"not ok" lines; exits non-zero if any test failed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
mtool=${1:-$here/../../build/mtool}
work=$(mktemp -d /tmp/mtool-runtime.XXXXXX)
export MTOOL_HISTORY=${MTOOL_HISTORY:-$work/history.db} # not the user's history
trap 'rm -rf "$work"' EXIT
. "$here/../lib.sh"

# "PROCESSES THREADS SPIN" of the merge of DIR: SPIN is the largest count of
# a block of `spin` (its loop body).
merged() { # BIN DIR
    "$mtool" count --no-store --profiles "$2" -o "$work/run" -- "$1" > "$work/count.log" 2>&1 || {
        echo "merge failed: $(tail -1 "$work/count.log")"
        return
    }
    local pt
    pt=$(sed -n 's/^mtool count: .*: \([0-9]*\) process.*, \([0-9]*\) thread.*/\1 \2/p' "$work/count.log")
    echo "$pt $(awk -F'\t' '$3 == "spin" && $2 > m { m = $2 } END { print m + 0 }' "$work/run/counts.tsv")"
}

# One run of BIN and its instrumented copy INST compared, and the merge
# checked against EXPECT, "PROCESSES THREADS SPIN" (see merged).
check() { # VARIANT EXPECT ARGS...
    local v=$1 expect=$2
    shift 2
    local bin=$work/$v/rt_prog inst=$work/$v/rt_prog.inst d=$work/$v/prof.$RANDOM
    mkdir -p "$d"
    (cd "$work/$v" && exec "$bin" "$@") > "$work/o.out" 2> "$work/o.err"
    local so=$?
    (cd "$work/$v" && MTOOL_OUT=$d exec "$inst" "$@") > "$work/i.out" 2> "$work/i.err"
    local si=$?
    if [ $so -ne $si ] || ! cmp -s "$work/o.out" "$work/i.out" || ! cmp -s "$work/o.err" "$work/i.err"; then
        not_ok "$v $*: instrumented run differs (exit $so vs $si): $(diff "$work/o.out" "$work/i.out" | head -3) $(head -2 "$work/i.err")"
        return
    fi
    local got
    got=$(merged "$bin" "$d")
    if [ "$got" = "$expect" ]; then
        ok "$v $*: identical run; processes, threads, spin count: $got"
    else
        not_ok "$v $*: processes, threads, spin count: $got, expected $expect"
    fi
    last=$d
}

# The flags word of a profile header (timer.h: offset 28).
flags_of() { od -An -t u4 -j 28 -N 4 "$1" | tr -d ' '; }

run_variant() { # VARIANT CFLAGS...
    local v=$1
    shift
    mkdir -p "$work/$v"
    if ! gcc -O2 -pthread -fopenmp "$@" "$here/rt_prog.c" -o "$work/$v/rt_prog" 2> "$work/cc.err"; then
        not_ok "$v: cannot compile: $(head -1 "$work/cc.err")"
        return
    fi
    if ! "$mtool" instrument --counts "$work/$v/rt_prog" -o "$work/$v/rt_prog.inst" > "$work/inst.log" 2>&1; then
        not_ok "$v: instrument failed: $(tail -1 "$work/inst.log")"
        return
    fi
    # Every call to thread and process creation must be redirected to the
    # runtime, so the procedures that make them must be instrumented.
    "$mtool" instrument --counts -v "$work/$v/rt_prog" -o "$work/$v/rt_prog.inst" > "$work/inst.log" 2>&1
    local skipped
    skipped=$(grep -E '^  not instrumented: (main|threads|churn|omp|forked|spin|thread_main):' "$work/inst.log")
    [ -z "$skipped" ] && ok "$v: every procedure of the test is instrumented" ||
        not_ok "$v: $skipped"
    check "$v" "1 41 40000" threads 1000 40
    grep -q '^  not instrumented: threads_unresolved: unresolved' "$work/inst.log" &&
        ok "$v: threads_unresolved is refused (unresolved jump)" ||
        not_ok "$v: threads_unresolved should be refused: $(grep threads_unresolved "$work/inst.log")"
    check "$v" "1 9 8000" refused 1000 8
    check "$v" "1 3001 300000" churn 100 3000
    check "$v" "1 4 48000" omp 1000 4 12
    check "$v" "1 15 15000" omp 1000 15 1
    check "$v" "2 2 3000" fork 1000
    local forked=0 f
    for f in "$last"/*.mtp; do
        [ "$(flags_of "$f")" = 1 ] && forked=$((forked + 1))
    done
    [ "$(ls "$last" | wc -l)" = 2 ] && [ $forked = 1 ] && ok "$v fork: the child has a profile of its own" ||
        not_ok "$v fork: expected 2 profiles, 1 forked: $(ls "$last")"
    check "$v" "1 1 1234" _exit 1234
    check "$v" "1 1 1234" abort 1234
    check "$v" "1 1 1234" kill 1234
    check "$v" "1 1 1234" exec 1234 /bin/true
    check_unwritable "$v"
    check_default_dir "$v"
    check_code_images "$v"
}

# The entry jumps: mapped from the file's images of the patched pages (no
# page written, none copied); when the program is started through the
# dynamic loader, /proc/self/exe is the loader, so the runtime writes the
# jumps itself.  Both ways count the same.
check_code_images() { # VARIANT
    local v=$1 inst=$work/$1/rt_prog.inst d=$work/$1/prof.ldso
    if command -v strace > /dev/null 2>&1; then
        MTOOL_OUT=$work/$v/prof.strace strace -o "$work/strace.txt" -e trace=open,mmap,mprotect "$inst" _exit 5 > /dev/null 2>&1
        if grep -q '^open("/proc/self/exe", O_RDONLY|O_CLOEXEC) = [0-9]' "$work/strace.txt" &&
            grep -q 'MAP_PRIVATE|MAP_FIXED, [0-9]*, 0x[0-9a-f]*) = 0x' "$work/strace.txt" &&
            ! grep -q 'mprotect(.*PROT_READ|PROT_WRITE)' "$work/strace.txt"; then
            ok "$v: the entry jumps come mapped from the file, no code page written"
        else
            not_ok "$v: the code images were not mapped: $(grep -e self/exe -e PROT_WRITE "$work/strace.txt" | head -3)"
        fi
    fi
    local ldso
    ldso=$(sed -n 's/.*\[Requesting program interpreter: \(.*\)\]/\1/p' < <(readelf -lW "$inst" 2> /dev/null))
    [ -n "$ldso" ] || return 0 # static: no loader to start it through
    mkdir -p "$d"
    (cd "$work/$v" && MTOOL_OUT=$d "$ldso" "$inst" threads 1000 40) > /dev/null 2>&1
    local got
    got=$(merged "$work/$v/rt_prog" "$d")
    [ "$got" = "1 41 40000" ] && ok "$v started by $ldso (jumps written, not mapped): $got" ||
        not_ok "$v started by $ldso: processes, threads, spin count: $got, expected 1 41 40000"
}

# Counts that cannot be written: one line on stderr, the run otherwise
# unchanged, with threads and a fork child.
check_unwritable() { # VARIANT
    local bin=$work/$1/rt_prog
    "$bin" fork 100 > "$work/o.out" 2> "$work/o.err"
    local so=$?
    MTOOL_OUT=/proc/mtool-nonexistent/x "$bin.inst" fork 100 > "$work/i.out" 2> "$work/i.err"
    local si=$?
    local lines
    lines=$(grep -c '^mtool: cannot write profile to /proc/mtool-nonexistent/x: .*; the counts of this process are lost$' "$work/i.err")
    if [ $so -eq $si ] && cmp -s "$work/o.out" "$work/i.out" && [ "$lines" = 1 ] &&
        [ "$(grep -cv '^mtool: ' "$work/i.err")" = "$(wc -l < "$work/o.err")" ]; then
        ok "$1 unwritable MTOOL_OUT: one line on stderr, run unchanged: $(grep '^mtool' "$work/i.err")"
    else
        not_ok "$1 unwritable MTOOL_OUT: exit $so vs $si, stderr: $(cat "$work/i.err")"
    fi
}

# An empty $MTOOL_OUT means the directory chosen at instrumentation time.
check_default_dir() { # VARIANT
    local inst=$work/$1/rt_prog.inst
    rm -rf "$inst.profiles"
    MTOOL_OUT= "$inst" threads 10 2 > /dev/null 2>&1
    if [ "$(ls "$inst.profiles"/rt_prog.*.mtp 2> /dev/null | wc -l)" = 1 ]; then
        ok "$1 empty MTOOL_OUT: profile in the default directory"
    else
        not_ok "$1 empty MTOOL_OUT: no profile in $inst.profiles: $(ls "$work/$1")"
    fi
}

# The reader on damaged directories: an error naming the file (exit status
# 1, no crash), or the file skipped.
check_reader() {
    local bin=$work/pie/rt_prog good
    good=$(ls "$last"/*.mtp | head -1)
    [ -n "$good" ] || { not_ok "reader: no profile to start from"; return; }
    expect_error() { # NAME PATTERN — the damaged copy is in $work/bad/x.mtp
        "$mtool" count --no-store --profiles "$work/bad" -o "$work/run" -- "$bin" > /dev/null 2> "$work/err"
        local s=$?
        if [ $s = 1 ] && grep -q "$2" "$work/err"; then
            ok "reader: $1: $(tail -1 "$work/err")"
        else
            not_ok "reader: $1: exit $s, expected an error matching '$2': $(tail -1 "$work/err")"
        fi
    }
    damaged() { # DD-ARGS... — a fresh copy of $good in $work/bad, patched
        rm -rf "$work/bad" && mkdir -p "$work/bad" && cp "$good" "$work/bad/x.mtp"
        [ $# = 0 ] || dd of="$work/bad/x.mtp" conv=notrunc status=none "$@"
    }
    damaged && truncate -s 100 "$work/bad/x.mtp"
    expect_error "file shorter than a header" "x.mtp: too short"
    damaged && truncate -s 4200 "$work/bad/x.mtp"
    expect_error "file shorter than its slot" "x.mtp: truncated"
    damaged bs=1 seek=20 < <(printf '\377\377\377\177\377\377\377\177')
    expect_error "huge slot count and capacity" "x.mtp: truncated"
    damaged bs=1 seek=0 < <(printf 'garbage!')
    expect_error "bad magic" "x.mtp: not an mtool profile"
    damaged bs=1 seek=8 < <(printf '\011')
    expect_error "unknown version" "x.mtp: profile format version"
    damaged bs=1 seek=4096 < <(printf 'XXXX')
    expect_error "corrupt slot header" "x.mtp: corrupt slot header"
    damaged bs=1 seek=48 < <(printf 'X')
    expect_error "only another binary's profile" "no profile of this binary (1 of other"
    damaged bs=1 seek=48 < <(printf 'X')
    cp "$good" "$work/bad/good.mtp"
    head -c 4096 /dev/zero > "$work/bad/incomplete.mtp"
    echo "not a profile" > "$work/bad/notes.txt"
    if "$mtool" count --no-store --profiles "$work/bad" -o "$work/run" -- "$bin" > /dev/null 2> "$work/err"; then
        if grep -q "skipped: 1 profile of other binaries or builds, 1 of processes that died" "$work/err"; then
            ok "reader: another binary's profile, an incomplete one and other files skipped, and said so"
        else
            not_ok "reader: the summary does not say what was skipped: $(sed -n 2p "$work/err")"
        fi
    else
        not_ok "reader: skipping failed: $(tail -1 "$work/err")"
    fi
    # Damaged files beside a good one: the good one merged (its counts
    # exactly those of the good file alone), the others named on one
    # warning line, escaped.
    local alone with
    rm -rf "$work/bad" && mkdir -p "$work/bad" && cp "$good" "$work/bad/good.mtp"
    alone=$(merged "$bin" "$work/bad")
    skipped_with() { # NAME FILE WARNING-PATTERN — FILE is already in $work/bad
        with=$(timeout 20 "$mtool" count --no-store --profiles "$work/bad" -o "$work/run" -- "$bin" 2>&1 > /dev/null)
        local s=$? got
        got=$(merged "$bin" "$work/bad")
        if [ $s = 0 ] && [ "$got" = "$alone" ] &&
            [ "$(grep -c 'warning: .*skipped 1 damaged profile' <<< "$with")" = 1 ] &&
            grep -q -- "$3" <<< "$with" && grep -q ', 1 damaged$' <<< "$with"; then
            ok "reader: $1 skipped, the good profile merged ($got), one warning: $(grep warning: <<< "$with")"
        else
            not_ok "reader: $1: exit $s, merged '$got' (alone '$alone'), stderr: $(grep -e warning -e skipped -e 'mtool:' <<< "$with" | head -3)"
        fi
        rm -f "$2"
    }
    : > "$work/bad/empty.mtp"
    skipped_with "an empty profile (process killed while starting)" "$work/bad/empty.mtp" "empty.mtp: empty"
    head -c 6000 "$good" > "$work/bad/short.mtp"
    skipped_with "a truncated profile" "$work/bad/short.mtp" "short.mtp: truncated"
    mkfifo "$work/bad/x.mtp"
    skipped_with "a FIFO named x.mtp (must not hang)" "$work/bad/x.mtp" "x.mtp: not a regular file"
    cp "$good" "$work/bad/$(printf 'nl\nesc\033.mtp')" && head -c 100 "$good" > "$work/bad/$(printf 'nl\nesc\033.mtp')"
    skipped_with "a damaged profile whose name has a newline and ESC" "$work/bad/$(printf 'nl\nesc\033.mtp')" 'nl\\x0aesc\\x1b.mtp: too short'
}

[ -x "$mtool" ] || { echo "not ok - no mtool at $mtool"; exit 1; }
run_variant pie
check_reader
run_variant nopie -no-pie
run_variant static -static
# Calls through the GOT instead of PLT stubs (-fno-plt, as Arch Linux builds).
run_variant fno-plt -fno-plt
print_totals
