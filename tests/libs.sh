#!/bin/bash
# tests/libs.sh — pass 1 through a program's shared libraries (`mtool count
# --libs`, docs/ARCHITECTURE.md "Shared libraries"), on uselib-gcc-O2 and its
# own libmtshlib.so and libmtinit.so (samples/):
#   - the program's output and exit status are the original's;
#   - libmtshlib.so's block counts equal callgrind's on the original, the
#     procedures its constructors run before the program's entry included
#     (frame_dummy, register_tm_clones: the runtime starts when the loader
#     has relocated every object, before their constructors);
#   - libmtinit.so, whose constructor runs a loop, a thread and a child
#     process of its own: all counted (its loop's 6010 iterations in 4 calls,
#     3 tasks);
#   - the libraries' files are unchanged (checksums before and after);
#   - --libs none counts the executable exactly as a run without --libs, and
#     --libs NAME,... only the libraries named (a name of none is warned about);
#   - a library mtool cannot rewrite (one already instrumented by mtool) is
#     left original with a one-line note, and the program still runs the same;
#   - without --libs, the program's own libraries are counted and named as the
#     ones it ran code in, and libc with them (glibc's too, by default);
#   - a pass 1 leaves no libs/*.counts.tsv of libraries an earlier one counted;
#   - dlopen-gcc-O2 (samples/dlopen.c), which opens libmtdl.so (needing
#     libmtdldep.so), calls it from two threads, closes and opens it again:
#     output and status as the original's; a first count says both libraries
#     not counted yet, the next counts them, their counts equal callgrind's,
#     and the constructor counts once per dlopen.
#
#   MTOOL=build/mtool CHECKER=build/tests/check_counts SAMPLES_LIBS=build/samples-libs bash tests/libs.sh
set -u
mtool=${MTOOL:-build/mtool} checker=${CHECKER:-build/tests/check_counts}
dir=${SAMPLES_LIBS:-build/samples-libs}
bin=$dir/uselib-gcc-O2 lib=$dir/libmtshlib.so
work=$(mktemp -d "${TMPDIR:-/tmp}/mtool-libs.XXXXXX")
trap 'rm -rf "$work"' EXIT
export XDG_CACHE_HOME=$work/cache XDG_CONFIG_HOME=$work/config MTOOL_HISTORY=$work/history.db
. "$(dirname "$0")/lib.sh"

sums_before=$(sha256sum "$dir"/*.so)
"$bin" 500 > "$work/orig.out" 2> "$work/orig.err"
orig=$?
"$mtool" count --no-store --no-baseline --libs all -o "$work/all" -- "$bin" 500 \
    > "$work/all.out" 2> "$work/all.err"
status=$?
if [ $status -eq $orig ] && cmp -s "$work/orig.out" "$work/all.out"; then
    ok "--libs all: output and exit status ($status) identical to the original's"
else
    not_ok "--libs all: exit $status (original $orig), output $(cmp "$work/orig.out" "$work/all.out" 2>&1); $(tail -2 "$work/all.err")"
fi
for name in libmtshlib.so libmtinit.so; do
    if grep -q "^library $name (.*): [0-9]* of [0-9]* procedures instrumented" "$work/all.err" &&
        [ -s "$work/all/libs/$name.counts.tsv" ]; then
        ok "--libs all: $name counted"
    else
        not_ok "--libs all: $name not counted: $(grep "$name" "$work/all.err")"
    fi
done
grep -q "^library libc.so.6 (.*): [0-9]* of [0-9]* procedures instrumented" "$work/all.err" &&
    ok "--libs all: libc.so.6 counted" ||
    not_ok "--libs all: libc.so.6 not counted: $(grep 'libc.so.6' "$work/all.err")"
grep -qE '^ +[0-9.]+% .* libmtshlib.so:shlib_work, ' "$work/all.err" &&
    ok "the summary names library procedures LIB:PROCEDURE" ||
    not_ok "no libmtshlib.so:shlib_work row in the summary"
python3 - "$work/all/count.json" <<'PY' && ok "count.json lists the libraries and each row's object" || not_ok "count.json: libraries or objects missing"
import json, sys
d = json.load(open(sys.argv[1]))
libs = {l["name"]: l for l in d["libraries"]}
assert libs["libmtshlib.so"]["copy"] and libs["libmtshlib.so"]["instructions"] > 0
assert libs["libc.so.6"]["copy"] and libs["libc.so.6"]["instructions"] > 0
rows = {(r["object"], r["name"]) for r in d["procedures"]}
assert ("libmtshlib.so", "shlib_fib") in rows and (None, "main") in rows
PY

# The oracle: callgrind on the original program, in libmtshlib.so.
valgrind --tool=callgrind --dump-instr=yes --compress-pos=no --compress-strings=no --skip-plt=no \
    --callgrind-out-file="$work/cg.%p" "$bin" 500 > /dev/null 2> "$work/vg.log"
"$checker" "$lib" "$work/all/libs/libmtshlib.so.counts.tsv" "$work"/cg.* > "$work/check" 2>&1
grep -E '^(ok|not ok)' "$work/check" | sed 's/^\(ok\|not ok\) - /&--libs all: /'
grep '^#' "$work/check" | head -5
grep -qE '^(ok|not ok)' "$work/check" || not_ok "check_counts gave no verdict: $(tail -1 "$work/check")"
# What the library's constructors ran before the program's entry is in the
# comparison above; that it ran at all, apart (callgrind: once each).
awk -F'\t' '$3 == "frame_dummy" || $3 == "register_tm_clones" { n[$3] += $2 }
    END { exit !(n["frame_dummy"] > 0 && n["register_tm_clones"] > 0) }' \
    "$work/all/libs/libmtshlib.so.counts.tsv" &&
    ok "the procedures the library's constructors ran before the entry are counted" ||
    not_ok "constructor-time procedures not counted: $(grep -P '\t(frame_dummy|register_tm_clones)$' "$work/all/libs/libmtshlib.so.counts.tsv" | tr '\n' ' ')"

# libmtinit.so's constructor: steps(1000) there, steps(2000) in its thread,
# steps(3000) in its child process, steps(10) from main (samples/shlib_init.c).
awk -F'\t' '$3 == "steps" { if (!n++ || $2 < least) least = $2; if ($2 > most) most = $2 }
    END { exit !(least == 4 && most == 6010) }' "$work/all/libs/libmtinit.so.counts.tsv" &&
    grep -q '2 processes, 3 threads' "$work/all.err" &&
    ok "a constructor's loop, thread and child process counted: 4 calls, 6010 iterations, 3 tasks" ||
    not_ok "libmtinit.so's constructor: $(grep -P '\tsteps$' "$work/all/libs/libmtinit.so.counts.tsv" | tr '\n' ' ') $(grep -o '[0-9]* process[a-z]*, [0-9]* thread[a-z]*' "$work/all.err")"

[ "$sums_before" = "$(sha256sum "$dir"/*.so)" ] && ok "the libraries' files are unchanged" ||
    not_ok "a library file changed"

# With --libs none the copy of the executable runs from the cache, where its
# $ORIGIN runpath would find no library: each is pinned to the original's
# all the same (it failed to start here, "cannot open shared object file").
"$mtool" count --no-store --no-baseline --libs none -o "$work/none" -- "$bin" 500 > /dev/null 2>&1
"$mtool" count --no-store --no-baseline -o "$work/plain" -- "$bin" 500 > /dev/null 2>&1
if [ -s "$work/plain/counts.tsv" ] && cmp -s "$work/none/counts.tsv" "$work/plain/counts.tsv" &&
    [ ! -e "$work/none/libs" ]; then
    ok "--libs none counts the executable exactly as the default run, which counts its libraries too"
else
    not_ok "--libs none differs from the default run in the executable's counts"
fi
cmp -s "$work/all/counts.tsv" "$work/plain/counts.tsv" &&
    ok "the executable's own counts are the same with its libraries counted" ||
    not_ok "the executable's counts differ with --libs all: $(diff "$work/all/counts.tsv" "$work/plain/counts.tsv" | head -3)"

# A name that is no library of the program is said.
"$mtool" count --no-store --no-baseline --libs libmtshlib,libnosuch -o "$work/nosuch" -- "$bin" 500 \
    > /dev/null 2> "$work/nosuch.err"
grep -q "^mtool: warning: --libs: libnosuch is no shared library the program needs$" "$work/nosuch.err" &&
    grep -q "^library libmtshlib.so (.*): [0-9]* of [0-9]* procedures instrumented" "$work/nosuch.err" &&
    ! grep -q "^library libmtinit.so" "$work/nosuch.err" &&
    ok "--libs NAME,...: only the libraries named, a name of no library said in a warning" ||
    not_ok "--libs NAME,...: $(grep -E 'warning|^library' "$work/nosuch.err" | head -3)"

# A library mtool refuses: an mtool copy in place of the original.
mkdir -p "$work/refused"
cp "$bin" "$dir/libmtinit.so" "$work/refused/"
cp "$(python3 -c 'import json,sys; print([l["copy"] for l in json.load(open(sys.argv[1]))["libraries"] if l["name"]=="libmtshlib.so"][0])' "$work/all/count.json")" \
    "$work/refused/libmtshlib.so"
"$mtool" count --no-store --no-baseline --libs libmtshlib -o "$work/ref" -- "$work/refused/uselib-gcc-O2" 500 \
    > "$work/ref.out" 2> "$work/ref.err"
status=$?
if [ $status -eq $orig ] && cmp -s "$work/orig.out" "$work/ref.out" &&
    [ "$(grep -c '^library libmtshlib.so (.*): left original: .*already instrumented by mtool' "$work/ref.err")" = 1 ] &&
    ! grep -q libmtinit "$work/ref.err"; then
    ok "a library that cannot be rewritten is left original with a one-line note; output identical"
else
    not_ok "refused library: exit $status, $(grep -E 'libmtshlib|rror' "$work/ref.err" | head -3)"
fi

# The default (no --libs): the program's own libraries counted and glibc's
# (libc, which it runs code in), said on the choice line.
"$mtool" count --no-store --no-baseline -o "$work/default" -- "$bin" 500 > "$work/default.out" 2> "$work/default.err"
status=$?
choice=$(grep "^libraries (default --libs all: every library it loads, glibc's included): " "$work/default.err")
if [ $status -eq $orig ] && cmp -s "$work/orig.out" "$work/default.out" &&
    echo "$choice" | grep -q 'ran code in libmtshlib.so, libmtinit.so, libc.so.6;' &&
    grep -q "^library libmtshlib.so (.*): [0-9]* of [0-9]* procedures instrumented" "$work/default.err" &&
    grep -q "^library libc.so.6 (.*): [0-9]* of [0-9]* procedures instrumented" "$work/default.err" &&
    python3 -c 'import json,sys; d = json.load(open(sys.argv[1])); assert d["libs"] == {"asked": "all", "default": True}' "$work/default/count.json"; then
    ok "default --libs: the program's libraries and libc counted and named as the ones it ran code in"
else
    not_ok "default --libs: exit $status; ${choice:-no choice line}; $(grep -E '^library' "$work/default.err" | head -4)"
fi

# A pass 1 that counts fewer libraries leaves no stale libs/*.counts.tsv
# nor libs/*.call_targets.tsv.
stale=()
for libs in all libmtshlib none; do
    LD_LIBRARY_PATH=$dir "$mtool" count --no-store --no-baseline --libs $libs -o "$work/stale" -- "$bin" 500 \
        > /dev/null 2>&1
    stale[${#stale[@]}]=$(ls "$work/stale/libs" 2>&1 | tr '\n' ' ')
done
if [ "${stale[0]}" = "libc.so.6.call_targets.tsv libc.so.6.counts.tsv libmtinit.so.call_targets.tsv libmtinit.so.counts.tsv libmtshlib.so.call_targets.tsv libmtshlib.so.counts.tsv " ] &&
    [ "${stale[1]}" = "libmtshlib.so.call_targets.tsv libmtshlib.so.counts.tsv " ] && [ -s "$work/stale/counts.tsv" ] && [ ! -e "$work/stale/libs" ]; then
    ok "a later pass 1 removes the library counts an earlier one left (--libs all, NAME, none)"
else
    not_ok "stale library counts: after all, libmtshlib, none: ${stale[*]}"
fi

# dlopen: dlopen-gcc-O2 opens libmtdl.so (which needs libmtdldep.so), calls
# it from two threads, closes it and opens it again.  The first count sees
# both opened and says them not counted; the next counts them.
dl=$dir/dlopen-gcc-O2
"$dl" > "$work/dl.orig.out" 2>&1
dl_orig=$?
for k in 1 2; do
    "$mtool" count --no-store --no-baseline -o "$work/dl$k" -- "$dl" > "$work/dl$k.out" 2> "$work/dl$k.err"
    dl_status[k]=$?
done
if [ "${dl_status[1]}" -eq $dl_orig ] && [ "${dl_status[2]}" -eq $dl_orig ] && [ $dl_orig -eq 5 ] &&
    cmp -s "$work/dl.orig.out" "$work/dl1.out" && cmp -s "$work/dl.orig.out" "$work/dl2.out"; then
    ok "dlopen: output and exit status ($dl_orig) identical to the original's, first and second count"
else
    not_ok "dlopen: exit ${dl_status[1]}, ${dl_status[2]} (original $dl_orig); $(tail -2 "$work/dl1.err")"
fi
if [ "$(grep -c "^library libmtdl\(dep\)\?.so (/.*/libmtdl\(dep\)\?.so, opened by dlopen): left original: opened by dlopen, not known before the run .*: counted from the next count" "$work/dl1.err")" = 2 ]; then
    ok "dlopen: a library first seen opened by dlopen, and its own DT_NEEDED, said not counted yet"
else
    not_ok "dlopen, first count: $(grep '^library libmtdl' "$work/dl1.err" | head -2)"
fi
if [ "$(grep -c "^library libmtdl\(dep\)\?.so (.*, opened by dlopen): [0-9]* of [0-9]* procedures instrumented" "$work/dl2.err")" = 2 ] &&
    grep -q '^mtool count: .*: 1 process, 5 threads' "$work/dl2.err"; then
    ok "dlopen: the next count counts both, in the 5 threads that called them"
else
    not_ok "dlopen, second count: $(grep -E '^library libmtdl|^mtool count' "$work/dl2.err" | head -3)"
fi
# The oracle: callgrind on the original, both rounds and all threads.
mkdir -p "$work/dlcg"
valgrind --tool=callgrind --dump-instr=yes --compress-pos=no --compress-strings=no --skip-plt=no \
    --callgrind-out-file="$work/dlcg/cg.%p" "$dl" > /dev/null 2> "$work/dlcg/vg.log"
for name in libmtdl.so libmtdldep.so; do
    "$checker" "$dir/$name" "$work/dl2/libs/$name.counts.tsv" "$work/dlcg"/cg.* > "$work/dlcheck" 2>&1
    grep -E '^(ok|not ok)' "$work/dlcheck" | sed 's/^\(ok\|not ok\) - /&dlopen: /'
    grep -qE '^(ok|not ok)' "$work/dlcheck" || not_ok "dlopen: check_counts gave no verdict on $name: $(tail -1 "$work/dlcheck")"
done
# Opened twice: the copy mapped afresh by the second dlopen was activated
# too, before its constructor ran (fill_table: once per dlopen).
awk -F'\t' '$3 == "fill_table" && !seen { n = $2; seen = 1 } END { exit n != 2 }' "$work/dl2/libs/libmtdl.so.counts.tsv" &&
    ok "dlopen, dlclose, dlopen: the constructor counted at each of the two opens" ||
    not_ok "dlopen: fill_table's entry counted $(awk -F'\t' '$3 == "fill_table"' "$work/dl2/libs/libmtdl.so.counts.tsv" | head -1)"

# A library that starts a thread itself in a way the runtime does not wrap
# (clone: the new thread runs a function of the library's on a stack of
# its own, past any wrapper; tests/libthreads.sh: pthread_create,
# thrd_create, fork and _Fork are wrapped, and clone's task is exact with
# libc counted, whose copy hooks the system call): with libc left
# original the thread counts into its creator's counters.  The report
# says so under the library, and count.json names the call; counted by
# default (libc too), or a library that starts nothing (libmtshlib.so),
# has no such note.
cat > "$work/spawn.c" <<'C'
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
static int work(void *p) { long *n = p; for (int i = 0; i < 1000; i++) *n += i; return 0; }
long spawn_sum(void)
{
    long n = 0;
    char *stack = malloc(1 << 16);
    int status, pid = stack ? clone(work, stack + (1 << 16), CLONE_VM | SIGCHLD, &n) : -1;
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        n = -1;
    free(stack);
    return n;
}
C
printf 'long spawn_sum(void);\nint main(void) { return spawn_sum() == 499500 ? 3 : 1; }\n' > "$work/spawnmain.c"
if cc -O1 -shared -fPIC -o "$work/libmtspawn.so" "$work/spawn.c" &&
    cc -O1 -o "$work/spawnmain" "$work/spawnmain.c" -L"$work" -lmtspawn -Wl,-rpath,"$work"; then
    "$mtool" count --no-store --libs libmtspawn -o "$work/spawn" -- "$work/spawnmain" \
        > "$work/spawn.out" 2>&1
    spawn_status=$?
    "$mtool" count --no-store -o "$work/spawnall" -- "$work/spawnmain" > "$work/spawnall.out" 2>&1
    spawnall_status=$?
    if [ "$spawn_status" = 3 ] && [ "$spawnall_status" = 3 ] &&
        grep -A1 '^library libmtspawn.so ' "$work/spawn.out" |
        grep -q 'warning: it can call clone itself, which mtool hooks only in a counted libc' &&
        [ "$(starts_with "$work/spawn/count.json" libmtspawn.so)" = '"clone"' ] &&
        ! grep -q 'warning: it can call' "$work/spawnall.out" &&
        [ "$(starts_with "$work/spawnall/count.json" libmtspawn.so)" = null ] &&
        [ "$(starts_with "$work/all/count.json" libmtshlib.so)" = null ]; then
        ok "a library that starts a thread with clone: counted, exit status kept; with libc original the report and count.json say it is not wrapped, with libc counted nothing"
    else
        not_ok "a library that starts a thread with clone: exit $spawn_status; $(grep -A1 '^library libmtspawn' "$work/spawn.out" | tail -1)"
    fi
else
    not_ok "a library that starts a thread with clone: cannot build it"
fi
# The analyzer's import of each PLT stub (analyze --json's `import`, which
# pass 2 joins to the libraries' .dynsym) against objdump's names of the
# stubs, "<NAME@plt>" at each stub's address (binutils reads the same
# relocations on its own): the executable's and, when installed, xz's.
imports_match() {
    "$mtool" analyze --json "$1" -o "$work/imports.json" 2> /dev/null &&
        objdump -d --no-show-raw-insn "$1" > "$work/imports.objdump" &&
        python3 - "$work/imports.json" "$work/imports.objdump" <<'PY'
import json, re, sys
procs = json.load(open(sys.argv[1]))["procedures"]
want = {int(a, 16): n for a, n in re.findall(r"^([0-9a-f]+) <(.+)@plt>:$", open(sys.argv[2]).read(), re.M)
        if not n.startswith("*ABS*")}
got = {int(p["entry"], 16) if isinstance(p["entry"], str) else p["entry"]: p["import"]
       for p in procs if p["plt"] and p["import"] is not None}
extra = [p["name"] for p in procs if not p["plt"] and p["import"] is not None]
if not want or got != want or extra:
    print("imports: %d named, objdump %d; differ at %s; not stubs: %s" % (
        len(got), len(want), sorted(set(got.items()) ^ set(want.items()))[:3], extra[:3]))
    sys.exit(1)
PY
}
for exe in "$bin" /usr/bin/xz; do
    [ -x "$exe" ] || continue
    if imports_match "$exe" > "$work/imports.why" 2>&1; then
        ok "analyze --json: every PLT stub's import of $(basename "$exe") is objdump's NAME@plt, other procedures have none"
    else
        not_ok "analyze --json: $(basename "$exe"): $(tail -1 "$work/imports.why")"
    fi
done
print_totals
