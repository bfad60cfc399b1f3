#!/bin/sh
# tests/run.sh — the default test suite (`make test`): unit tests, structure
# tests over the samples, the callgrind block oracle over every sample, pass 1
# (instrumented runs and their counts against callgrind), the runtime
# (threads, fork, exec, signals), unwinding through relocated code, code used as
# data, pass 2, count --json, the cache simulator,
# the history, the HTML report (in chromium), bad input, JSON validity and the command line.  All C tests run under
# ASan+UBSan.  Prints one summary line per test group (and every failure),
# then a final "N passed, M failed"; exits 1 when M > 0.
#
# The suites that measure no time run $JOBS at a time (spawn: most keep one
# core busy, CI has two), each with its own history, all with the one
# cache (its files are written to a temporary name and renamed); those that
# measure time, and those that already run $JOBS checks at once, run alone
# (run, each_sample).  Each group's line gives its own wall and CPU seconds.
#
#   BUILD=build ASAN_BUILD=build/asan SAMPLES=build/samples sh tests/run.sh
set -u
cd "$(dirname "$0")/.."
ASAN=${ASAN_BUILD:-build/asan}
T=$ASAN/tests
SAMPLES=${SAMPLES:-build/samples}
JOBS=${JOBS:-2}
OUT=$(mktemp -d "${TMPDIR:-/tmp}/mtool-tests.XXXXXX")
# Every `mtool count` stores its run: not in the user's history.
export MTOOL_HISTORY="$OUT/history.db"
trap 'rm -rf "$OUT"' EXIT
# Stopped: out (the EXIT trap cleans up), not on to the next suite.
trap 'exit 1' INT TERM
passed=0 failed=0
# cpu_now [FILE]: $cpu, the user+sys CPU seconds of the processes this
# shell has waited for (`times`' second line, run in this shell: a
# subshell's would be its own), which the machine's other load does not
# inflate as it does the wall time; FILE, $OUT/times unless given, holds
# `times`' lines (a spawned suite's subshell has its own).
cpu_now() {
    times > "${1:-$OUT/times}"
    cpu=$(awk 'NR == 2 { split($1, u, "m"); split($2, s, "m"); printf "%d", u[1] * 60 + u[2] + s[1] * 60 + s[2] }' "${1:-$OUT/times}")
}
start=$(date +%s)
group_start=$start
cpu_now
group_cpu=$cpu

# count LOG NAME [WALL CPU]: add the ok / not ok lines of LOG to the
# totals, show the failures (with their "#" details) and one summary line
# with the group's wall and CPU seconds: WALL and CPU when given (a suite
# that ran beside another, timed by itself), else those since the last group.
count() {
    p=$(grep -c '^ok ' "$1") f=$(grep -c '^not ok ' "$1")
    passed=$((passed + p)); failed=$((failed + f))
    grep -e '^not ok' -e '^#' "$1" | head -40
    now=$(date +%s)
    cpu_now
    echo "== $2: $p ok, $f not ok (${3:-$((now - group_start))} s, ${4:-$((cpu - group_cpu))} s of CPU)"
    group_start=$now group_cpu=$cpu
}

# verdict LOG RC NAME [WALL CPU]: count a test program's LOG; a crash or
# non-zero exit RC without a "not ok" line also counts as a failure.
verdict() {
    if [ "$2" -ne 0 ] && ! grep -q '^not ok' "$1"; then
        tail -5 "$1"
        echo "not ok - $3 exited with status $2" >> "$1"
    fi
    count "$1" "$3" ${4:-} ${5:-}
}

# run NAME CMD...: a test program, alone on the machine (the suites that
# measure time: pass 2, timers, the model check, ...).
run() {
    name=$1; shift
    drain
    "$@" > "$OUT/log" 2>&1
    verdict "$OUT/log" $? "$name"
}

# spawn NAME CMD...: a test program that measures no time, in the
# background beside at most $JOBS - 1 others (CI has 2 cores; most suites
# keep one busy), into its own log, with its own history; the cache is
# everyone's (a cache of its own made each suite analyse and rewrite libc
# again, under ASan: data objects 11 -> 126 s of CPU in CI, AMD EPYC Zen 3);
# reported, in the order spawned, when it and the ones before it are done
# (drain).  Its figures are its own wall time and its processes' CPU time.
spawned=0 reported=0
spawn() {
    report_finished
    while [ "$(running)" -ge "$JOBS" ]; do
        sleep 0.2
        report_finished
    done
    spawned=$((spawned + 1))
    job=$OUT/job-$spawned
    mkdir -p "$job"
    echo "$1" > "$job/name"
    shift
    (
        begun=$(date +%s)
        MTOOL_HISTORY="$job/history.db" "$@" > "$job/log" 2>&1
        rc=$?
        cpu_now "$job/times"
        echo "$rc $(($(date +%s) - begun)) $cpu" > "$job/done.tmp" && mv "$job/done.tmp" "$job/done"
    ) &
}

# running: how many spawned programs are not done (one that finished
# before an earlier one still running waits to be reported, not to run).
running() {
    r_n=0 r_i=$((reported + 1))
    while [ "$r_i" -le "$spawned" ]; do
        [ -e "$OUT/job-$r_i/done" ] || r_n=$((r_n + 1))
        r_i=$((r_i + 1))
    done
    echo "$r_n"
}

# report_finished: count the spawned programs that are done, in order,
# up to the first still running.
report_finished() {
    while [ "$reported" -lt "$spawned" ] && [ -e "$OUT/job-$((reported + 1))/done" ]; do
        reported=$((reported + 1))
        job=$OUT/job-$reported
        read -r rc wall jobcpu < "$job/done"
        verdict "$job/log" "$rc" "$(cat "$job/name")" "$wall" "$jobcpu"
    done
}

# drain: wait for every spawned program and count them.
drain() {
    wait
    report_finished
    now=$(date +%s)
    cpu_now
    group_start=$now group_cpu=$cpu
}

export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

# each_sample LOG CHECK ARGS...: `bash CHECK ARGS... SAMPLE` for every sample,
# $JOBS at a time, each into its own file; LOG gets them in sample order.  A
# check that printed no verdict is a failure, never a line quietly missing.
each_sample() {
    log=$1; shift
    drain
    mkdir -p "$OUT/each"
    rm -f "$OUT/each"/*
    ls "$SAMPLES" | xargs -P "$JOBS" -I{} sh -c 'bash "$@" > "$0/{}.out" 2>&1' \
        "$OUT/each" "$@" "$SAMPLES/{}"
    for name in $(ls "$SAMPLES"); do
        cat "$OUT/each/$name.out" 2>/dev/null
        grep -qE '^(ok|not ok) ' "$OUT/each/$name.out" 2>/dev/null ||
            echo "not ok - $name: its check printed no verdict"
    done > "$log"
}

if [ ! -x "$ASAN/mtool" ] || [ ! -d "$T" ] || [ -z "$(ls "$SAMPLES" 2>/dev/null)" ]; then
    echo "not ok - missing $ASAN/mtool, $T or $SAMPLES: run 'make test'"
    echo "0 passed, 1 failed"
    exit 1
fi

# One calibration for every suite.  A predicting command without a profile
# calibrates by itself, a few seconds, in every suite's private
# configuration; and before a busy machine's calibration was kept, in
# every count, run and time: 6 s of wall time each (AMD EPYC Zen 3, load 5).
# Suites with a configuration of their own get a copy (tests/lib.sh); those
# about calibration make their own.
export XDG_CONFIG_HOME="$OUT/config"
if "${BUILD:-build}/mtool" calibrate -r 3 > "$OUT/calibrate.log" 2>&1; then
    MTOOL_TEST_MACHINE=$(ls "$OUT/config/mtool"/machine-*.txt)
    export MTOOL_TEST_MACHINE
else
    echo "# calibrate: $(tail -1 "$OUT/calibrate.log"): each suite calibrates by itself"
fi

for t in "$T"/test_*; do
    name=$(basename "$t")
    case $name in
    test_structure) spawn "unit: $name" "$t" "$SAMPLES" samples ;;
    *) spawn "unit: $name" "$t" ;;
    esac
done

# Block oracle: callgrind on every sample, stripped and static ones included.
mkdir -p "$OUT/cg"
each_sample "$OUT/oracle" tests/oracle/callgrind_check.sh "$T/check_blocks" "$OUT/cg"
count "$OUT/oracle" "callgrind block oracle ($(ls "$SAMPLES" | wc -l) samples)"

# Pass 1 end to end: every sample instrumented, run, compared with the
# original and its block counts with callgrind's; the behavior sample in each
# of its modes (fork, exec, _exit, abort, fatal signal).
mkdir -p "$OUT/cc"
each_sample "$OUT/counts" tests/oracle/count_check.sh "$ASAN/mtool" "$T/check_counts" "$OUT/cc"
# The behavior modes, $JOBS checks at a time, each into its own file, kept in order.
for b in "$SAMPLES"/behavior-*; do
    for mode in _exit abort segv fork exec; do
        echo "$b $mode"
    done
done | awk '{print NR, $0}' | xargs -P "$JOBS" -L 1 sh -c '
    case $5 in
    fork) export NO_ORACLE="callgrind'"'"'s fork child inherits the parent'"'"'s counts" ;;
    exec) export NO_ORACLE="callgrind drops the counts of a process that execs" ;;
    esac
    bash tests/oracle/count_check.sh "$0" "$1" "$2" "$4" "$5" > "$2/mode-$3.out" 2>&1
' "$ASAN/mtool" "$T/check_counts" "$OUT/cc"
nmodes=$(( $(ls -d "$SAMPLES"/behavior-* | wc -l) * 5 ))
for i in $(seq 1 "$nmodes"); do
    cat "$OUT/cc/mode-$i.out" 2>/dev/null
    grep -qE '^(ok|not ok) ' "$OUT/cc/mode-$i.out" 2>/dev/null ||
        echo "not ok - behavior mode check $i printed no verdict"
done >> "$OUT/counts" 2>&1
grep '^# coverage' "$OUT/counts" | awk '{c += $3; e += $5} END {if (e) printf "# coverage over all samples: %d of %d executed blocks counted (%.2f%%)\n", c, e, 100 * c / e}'
sed -i '/^# coverage/d' "$OUT/counts"
count "$OUT/counts" "pass-1 counts: instrumented behavior and callgrind oracle"

# The runtime (threads, fork, exec, signals, profiles that cannot be
# written) and unwinding through relocated code, dynamic and static.
# Pass 1 through a program's own shared libraries (count --libs): output,
# counts against callgrind, --libs none, a library left original.
spawn "shared libraries" env MTOOL="$ASAN/mtool" CHECKER="$T/check_counts" \
    SAMPLES_LIBS="${SAMPLES_LIBS:-build/samples-libs}" bash tests/libs.sh

# Threads and processes a library starts itself: a slot and a profile each,
# exact counts (against callgrind, and the loops' known trip counts).
spawn "threads of shared libraries" env MTOOL="$ASAN/mtool" CHECKER="$T/check_counts" \
    SAMPLES_LIBS="${SAMPLES_LIBS:-build/samples-libs}" bash tests/libthreads.sh

# A counting copy with its libraries' copies for a harness to run
# (instrument --libs, the environment in OUT.env): counts against callgrind.
spawn "instrument --libs" env MTOOL="$ASAN/mtool" CHECKER="$T/check_counts" \
    SAMPLES_LIBS="${SAMPLES_LIBS:-build/samples-libs}" bash tests/instrument_libs.sh

# glibc's own libraries counted (Debian's sed, gzip, mawk; behavior's modes):
# output, libm's and libc's counts against callgrind, coverage.
spawn "glibc's libraries" env MTOOL="$ASAN/mtool" CHECKER="$T/check_counts" SAMPLES="$SAMPLES" \
    SAMPLES2="${SAMPLES2:-$(dirname "$SAMPLES")/samples-pass2}" \
    bash tests/glibc.sh

# Library objects in pass2.tsv, report.json, the page and the history, on
# Debian's sqlite3 and a Python extension module opened by dlopen.
spawn "shared libraries, reports and history" env MTOOL="$ASAN/mtool" bash tests/libs_report.sh

spawn "runtime" bash tests/runtime/run.sh "$ASAN/mtool"

spawn "unwind" bash tests/unwind/run.sh "$ASAN/mtool"

# Code the program copies and runs elsewhere (V8's embedded builtins) left as it is.
spawn "code used as data" bash tests/codedata/run.sh "$ASAN/mtool"

# Jump tables: one reached under two guards (counts against callgrind), and
# the safety net for an index beyond what the analysis bounded.
spawn "jump tables" bash tests/jumptable/run.sh "$ASAN/mtool" "$T/check_counts"

# Pass 1's JSON (count --json, count.json): the text summary's figures,
# counts.tsv x the analysis, the program's status, names that need escaping.
spawn "count --json" env MTOOL="$ASAN/mtool" SAMPLES="$SAMPLES" sh tests/count_json.sh

# What reaches the terminal: a procedure and a source file named with
# escape sequences through analyze, run, sim and history, shown escaped;
# colour only on a terminal that wants it.
spawn "terminal" env MTOOL="$ASAN/mtool" sh tests/terminal.sh

# The cache simulator on hand traces (counts worked out by hand), bad input,
# against Cachegrind on lackey traces of samples, the miss causes of the
# samples of known behaviour, a PIE's load base (docs/SIMULATOR.md).
spawn "simulator" env MTOOL="$ASAN/mtool" SAMPLES="$SAMPLES" \
    SAMPLES_SIM="${SAMPLES_SIM:-$(dirname "$SAMPLES")/samples-sim}" sh tests/sim.sh

# Sampled modes (mtool sim --sample-sets, --sample-time): estimates against
# the exact run on the samples of known behaviour, within the docs' bounds.
spawn "sampled simulation" env MTOOL="$ASAN/mtool" \
    SAMPLES_SIM="${SAMPLES_SIM:-$(dirname "$SAMPLES")/samples-sim}" sh tests/sim_sampled.sh

# The misses-only simulator (mtool sim --misses-only): the full simulator's
# misses per level and per code object exactly, on hand and random traces, a
# lackey trace and traced runs, and on several CPUs each CPU's coherence
# figures too; Cachegrind's within 1%; what it refuses.
spawn "misses-only simulation" env MTOOL="$ASAN/mtool" SAMPLES="$SAMPLES" \
    sh tests/sim_misses_only.sh

# Processors (mtool sim --set cpus=N): MESI transitions, invalidations,
# interventions, upgrades, true and false sharing on hand traces with counts
# worked out by hand; one CPU unchanged; what is refused (docs/SIMULATOR.md).
spawn "processors and coherence" env MTOOL="$ASAN/mtool" \
    SAMPLES_SIM="${SAMPLES_SIM:-$(dirname "$SAMPLES")/samples-sim}" sh tests/coherence.sh

# Nodes (mtool sim --nodes=N): where each reference is served (local,
# remote, remote dirty, three-hop, ...) on hand traces counted by hand, the
# placements, the shipped descriptions, samples/firsttouch.c (docs/SIMULATOR.md).
spawn "nodes and home memory" env MTOOL="$ASAN/mtool" \
    SAMPLES_SIM="${SAMPLES_SIM:-$(dirname "$SAMPLES")/samples-sim}" sh tests/numa.sh

spawn "the program's placement and the threads' merge" env MTOOL="$ASAN/mtool" SAMPLES_SIM="${SAMPLES_SIM:-$(dirname "$SAMPLES")/samples-sim}" sh tests/mempolicy.sh

# What-if remedies (mtool sim --what-if): padding, line size, placement and
# mapping simulated on the same references, savings counted by hand; the
# false-sharing sample's proposed padding against its padded rebuild.
spawn "what-if remedies" env MTOOL="$ASAN/mtool" \
    SAMPLES_SIM="${SAMPLES_SIM:-$(dirname "$SAMPLES")/samples-sim}" sh tests/whatif.sh

# Traced runs (mtool sim -- BIN): misses per procedure against Cachegrind on
# matmul, linked and tests/trace/kernels.c, the program unchanged, a killed
# process's unsent records read from its profile (docs/SIMULATOR.md).
spawn "traced runs" env MTOOL="$ASAN/mtool" SAMPLES="$SAMPLES" sh tests/trace.sh

# Traced runs through shared libraries (mtool sim -- BIN, --libs; sim
# RUNDIR on a library m-object): libmtmem.so's misses per procedure against
# Cachegrind, its heap blocks, frames, globals and thread-locals as data
# objects, xz -T2's workers in liblzma on two CPUs (docs/SIMULATOR.md,
# "Libraries").
spawn "traced runs through libraries" env MTOOL="$ASAN/mtool" \
    SAMPLES_LIBS="${SAMPLES_LIBS:-build/samples-libs}" sh tests/trace_libs.sh

# AVX-512 code capstone 4 rejects, decoded by Zydis (common/x86_decode): libc
# with no procedure left on an invalid instruction, on any CPU; where the CPU
# has AVX-512, glibc's evex string functions counted and traced by hand count.
spawn "AVX-512 decoding" env MTOOL="$ASAN/mtool" sh tests/avx512.sh

# Data objects of traced runs: struct fields through DWARF (chase, aos),
# heap blocks by allocation site with a freed address reused, a caller's
# frame, TLS; damaged DWARF never crashes.
spawn "data objects" env MTOOL="$ASAN/mtool" \
    SAMPLES_SIM="${SAMPLES_SIM:-$(dirname "$SAMPLES")/samples-sim}" sh tests/dataobj.sh

# The run history: every command, rebuilt samples, concurrent writers, damage.
spawn "history" env MTOOL="$ASAN/mtool" \
    SAMPLES_SIM="${SAMPLES_SIM:-$(dirname "$SAMPLES")/samples-sim}" sh tests/history.sh

# Simulated multiprocessor runs in the history: coherence and where served per
# object as diff/regressions/trend metrics (false sharing fixed by padding),
# --what-if's remedies and proposals stored and shown.
spawn "history of multiprocessor runs" env MTOOL="$ASAN/mtool" \
    SAMPLES_SIM="${SAMPLES_SIM:-$(dirname "$SAMPLES")/samples-sim}" sh tests/history_mp.sh

spawn "bad input" env MTOOL="$ASAN/mtool" sh tests/bad_input.sh

# The suites that measure time (pass 2, timers, the model check, the
# stall estimate, the report's regression, the MPI imbalance, a library's
# loop measured above predicted, the coherence stall beside the overhead),
# each alone on the machine: no suite beside them.
# Pass 2 through them: a library's memory-bound loop timed and named LIB:PROC.
run "shared libraries, pass 2" env MTOOL="$ASAN/mtool" CHECKER="$T/check_counts" \
    SAMPLES_LIBS="${SAMPLES_LIBS:-build/samples-libs}" bash tests/libs_pass2.sh

# Pass-2 timers: every relocatable object of a few samples timed at once
# (behavior, entries against callgrind's edge counts, nesting), longjmp,
# exceptions, recursion, live flags, jump tables.
run "timers" bash tests/timers/run.sh "$ASAN/mtool" "$T/dump_timers" "$SAMPLES" \
    "${SAMPLES2:-$(dirname "$SAMPLES")/samples-pass2}"

# Pass 2 end to end: selection, timed copies without counters, the report's
# ranking of kernels with known memory behavior, repeated runs, Fortran and
# threads, bad run directories.  The memory sample's gcc build only: its
# clang build's same 29 checks (a run --runs 5 and three time runs of the
# sample) are tests/run-full.sh's; clang's code is timed here in
# phases-clang-O2 and in tests/timers (matmul, control, exceptions, phases).
run "pass 2" env MTOOL="$ASAN/mtool" MTOOL_SIM="${BUILD:-build}/mtool" SAMPLES="$SAMPLES" \
    MEMORY_BUILDS='memory-gcc-*' \
    SAMPLES2="${SAMPLES2:-$(dirname "$SAMPLES")/samples-pass2}" sh tests/pass2.sh

# The HTML report and the Callgrind export: self-contained, callgrind_annotate's
# per-line totals, a hostile symbol, bad input, and the page in chromium.
run "report" env MTOOL="$ASAN/mtool" MTOOL_SIM="${BUILD:-build}/mtool" \
    SAMPLES2="${SAMPLES2:-$(dirname "$SAMPLES")/samples-pass2}" sh tests/report.sh

# The cost model's self-check: made at calibration, kept in the profile,
# stated (and warned about) by every report that predicts.
run "model check" env MTOOL="$ASAN/mtool" KERNELS="${BUILD:-build}/selfcheck/kernels" \
    SAMPLES="$SAMPLES" sh tests/modelcheck.sh

# The stall estimate (mtool sim RUNDIR) on hand-written pass-2 objects: what
# is traced, the estimate's arithmetic, bad input (the memory sample's
# estimates against a real pass 2 are in pass 2's tests).
run "stall estimate" env MTOOL="$ASAN/mtool" SAMPLES="$SAMPLES" sh tests/stall.sh

# MPI jobs through their launcher (2 and 4 ranks): the job unchanged, each
# rank's counts against callgrind's of that rank, per-rank figures and the
# stencil's load imbalance; a library of the program's counted and timed in
# every rank (--libs, 3 ranks; skipped without mpirun).
run "MPI jobs" env MTOOL="$ASAN/mtool" SAMPLES="$SAMPLES" \
    SAMPLES_MPI="${SAMPLES_MPI:-$(dirname "$SAMPLES")/samples-mpi}" CHECKER="$T/check_counts" \
    sh tests/mpi.sh

# Multi-threaded programs end to end (run, then sim --set cpus=2 RUNDIR): every
# thread's trace merged, the coherence stall beside pass 2's overhead.
run "multi-threaded programs" env MTOOL="$ASAN/mtool" SAMPLES="$SAMPLES" \
    SAMPLES_SIM="${SAMPLES_SIM:-$(dirname "$SAMPLES")/samples-sim}" sh tests/mp_programs.sh


if command -v python3 > /dev/null 2>&1; then
    each_sample "$OUT/json" tests/analyze_json_check.sh "$ASAN/mtool"
    count "$OUT/json" "analyze --json"
else
    echo "# analyze --json: skipped, python3 is not installed (nothing to validate the JSON with)"
fi

# The command line itself.
drain
: > "$OUT/cli"
check_cli() { if eval "$2" > /dev/null 2>&1; then echo "ok - cli: $1"; else echo "not ok - cli: $1"; fi >> "$OUT/cli"; }
check_cli "--version" "$ASAN/mtool --version | grep -q '^mtool [0-9]'"
check_cli "help lists analyze" "$ASAN/mtool help | grep -q analyze"
check_cli "help analyze" "$ASAN/mtool help analyze | grep -q -- --callgraph"
check_cli "unknown command exits 2" "$ASAN/mtool frobnicate; test \$? -eq 2"
check_cli "no argument exits 2" "$ASAN/mtool; test \$? -eq 2"
check_cli "unknown function is one error line" \
    "$ASAN/mtool analyze --function nosuch $SAMPLES/matmul-gcc-O2 2>&1 >/dev/null | grep -c . | grep -qx 1"
check_cli "-o leaves no file on failure" \
    "! $ASAN/mtool analyze /nonexistent -o $OUT/none.json && test ! -e $OUT/none.json"
check_cli "--loops shows a depth-3 loop" \
    "$ASAN/mtool analyze --loops $SAMPLES/matmul-gcc-O2 | grep -q 'depth 3'"
check_cli "--callgraph shows main -> a" \
    "$ASAN/mtool analyze --callgraph $SAMPLES/callgraph-gcc-O2 | grep -q 'main -> a '"
check_cli "--function dispatch shows the jump table" \
    "$ASAN/mtool analyze --function dispatch $SAMPLES/control-gcc-O2 | grep -qi 'table'"
check_cli "--stats reports instructions" \
    "$ASAN/mtool analyze --stats $SAMPLES/matmul-gcc-O2 2>&1 >/dev/null | grep -q 'instructions'"
check_cli "count -o RUNDIR twice merges only the second run's profiles" \
    "$ASAN/mtool count -o $OUT/rd -- $SAMPLES/matmul-gcc-O2 && $ASAN/mtool count -o $OUT/rd -- $SAMPLES/matmul-gcc-O2 2>&1 >/dev/null | grep -q ': 1 process, 1 thread'"
check_cli "analyze --costs --counts: procedures inclusive of estimable callees (a calls shared)" \
    "$ASAN/mtool count -o $OUT/rc -- $SAMPLES/callgraph-gcc-O2 && $ASAN/mtool analyze --costs --counts $OUT/rc/counts.tsv $SAMPLES/callgraph-gcc-O2 | awk -F '\t' '\$1 == \"proc\" && \$2 == \"a\" && \$6 > \$3 { ok = 1 } END { exit !ok }'"
check_cli "instrument --skip of no procedure is one error line, no file" \
    "! $ASAN/mtool instrument --counts --skip nosuch $SAMPLES/matmul-gcc-O2 -o $OUT/skip.inst 2> $OUT/skip.err && grep -c . $OUT/skip.err | grep -qx 1 && test ! -e $OUT/skip.inst"
check_cli "instrument --skip leaves the procedure out, with the reason" \
    "$ASAN/mtool instrument -v --counts --skip main $SAMPLES/matmul-gcc-O2 -o $OUT/skip.inst 2>&1 | grep -q 'not instrumented: main: left as it is on request'"
count "$OUT/cli" "cli"

drain
# The CPU last, beside the result: CI keeps only the end of this output, and
# the machine's CPU changes from run to run.
echo "# tests took $(( $(date +%s) - start )) s, $cpu s of CPU, on $(awk -F': ' '
    /^model name/ && !n { n = $2 } /^cpu family/ && !f { f = $2 } /^model\t/ && !m { m = $2 }
    END { printf "\"%s\" (family %s, model %s)", n, f, m }' /proc/cpuinfo)"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
