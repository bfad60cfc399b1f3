#!/bin/sh
# tests/mpi.sh — MPI jobs through their launcher (`mtool count -- mpirun -n N
# PROG`, docs/REPORT.md "MPI jobs") on samples/mpi_stencil.c, 2 and 4 ranks
# on this machine (shared-memory transport):
#   - the job's stdout and exit status are those of the same job run without
#     mtool (an exit status of 3 included);
#   - each rank's block counts (its profiles, PROFILES/rank-N, merged alone
#     by `count --profiles`) equal callgrind's of that rank of the original
#     program, run under the same launcher (valgrind per rank); the job's
#     counts.tsv equals the sum of all ranks' callgrind counts.  Callgrind is
#     the oracle because it counts the original binary, independently of the
#     rewriter and the runtime; running the ranks one by one instead is not
#     possible (a rank needs its peers to get past its first MPI_Sendrecv);
#   - count.json's per-rank figures and per-object memory operations per
#     rank are those merges' (tests/mpi_check.py), and the stencil loop's
#     imbalance is its slabs' max / mean as the program printed them;
#   - a program given without a launcher is counted as before ("mpi": null,
#     no rank directories); a launcher without a program is one error line;
#   - pass 2 through the launcher (`mtool time RUN` after a count of the job,
#     `mtool run -- mpirun ...`): report.json's per-rank figures and
#     imbalance per m-object (tests/mpi_check.py pass2: the imbalance from
#     the per-rank figures, their sum the job's, sweep's loop entered STEPS
#     times per rank, its memory operations per rank pass 1's per-rank
#     counts, its predictions per rank in the ratio of the rows printed),
#     the history's run with the same figures per rank; the stencil
#     unbalanced on purpose (rank 0 four units of rows) is found imbalanced
#     with rank 0 the slowest, balanced (one unit each) predicted balanced;
#     its report.html's per-rank view in chromium (tests/browser/mpi.mjs);
#   - `--libs` through the launcher (samples/mpi_stencil.c built with its
#     sweep in libmtstencil.so, 3 ranks): the job's output as without mtool;
#     each rank's library counts (mpi/rank-N.libmtstencil.so.counts.tsv)
#     against the sweep's known trip counts from the rows the program
#     printed, summing to the job's; the library's loop among the job's
#     objects per rank in report.json, report.html and the history
#     (tests/mpi_check.py libs, tests/browser/mpi.mjs);
#   - several hosts: ranks 2 and 3 simulated on hostB (their directories
#     moved off RUN, tagged hostB) come back through the collect step
#     ($MTOOL_MPI_COLLECT): one report with each rank's host; a collect step
#     that fails is one error line.
# Skipped, with a message, when mpirun or the MPI sample is missing.
#
#   MTOOL=build/asan/mtool SAMPLES=build/samples SAMPLES_MPI=build/samples-mpi \
#     CHECKER=build/asan/tests/check_counts sh tests/mpi.sh
set -u
MTOOL=${MTOOL:-build/asan/mtool}
SAMPLES=${SAMPLES:-build/samples}
SAMPLES_MPI=${SAMPLES_MPI:-$(dirname "$SAMPLES")/samples-mpi}
CHECKER=${CHECKER:-$(dirname "$MTOOL")/tests/check_counts}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
STENCIL=$SAMPLES_MPI/mpi_stencil-mpicc-O2
if ! command -v mpirun > /dev/null 2>&1; then
    echo "# mpi: skipped: mpirun is not installed (Debian: openmpi-bin libopenmpi-dev, make deps)"
    print_totals
    exit
fi
if [ ! -x "$STENCIL" ]; then
    echo "# mpi: skipped: $STENCIL is not built (mpicc missing when the samples were built?)"
    print_totals
    exit
fi
W=$(mktemp -d "${TMPDIR:-/tmp}/mtool-mpi.XXXXXX")
trap 'rm -rf "$W"' EXIT INT TERM
export XDG_CACHE_HOME="$W/cache" XDG_CONFIG_HOME="$W/config" MTOOL_HISTORY="$W/history.db"
# More ranks than CPUs, and root in a container: OpenMPI refuses both unless told.
MPIRUN="mpirun --oversubscribe"
[ "$(id -u)" -eq 0 ] && MPIRUN="$MPIRUN --allow-run-as-root"
STEPS=6
# Both jobs run the program under the same path: the copy instrumented is this one.
cp "$STENCIL" "$W/mpi_stencil"
PROG=$W/mpi_stencil

pycheck() {
    python3 "$HERE/mpi_check.py" "$@" > "$W/py.out" 2>&1 ||
        grep -q '^not ok' "$W/py.out" || echo "not ok - mpi_check.py $1 failed: $(tail -1 "$W/py.out")" >> "$W/py.out"
    cat "$W/py.out"
    tally "$W/py.out"
}

# check_counts NAME COUNTS_TSV CALLGRIND_OUT...: the counts against callgrind's.
check_counts() {
    cc_name=$1
    shift
    "$CHECKER" "$PROG" "$@" > "$W/cc.out" 2>&1
    cc_rc=$?
    sed "s/^\(not \)\{0,1\}ok - /&$cc_name: /" "$W/cc.out" | grep -E '^(ok|not ok)'
    tally "$W/cc.out"
    [ $cc_rc -eq 0 ] || grep -q '^not ok' "$W/cc.out" ||
        not_ok "$cc_name: check_counts exited with status $cc_rc: $(tail -1 "$W/cc.out")"
}

job() { # N: the job with and without mtool, against callgrind rank by rank
    n=$1 d=$W/n$1
    mkdir -p "$d"
    $MPIRUN -n "$n" "$PROG" $STEPS > "$d/orig.out" 2> "$d/orig.err"
    orig=$?
    "$MTOOL" count -o "$d/run" -- $MPIRUN -n "$n" "$PROG" $STEPS > "$d/inst.out" 2> "$d/inst.err"
    status=$?
    check "$n ranks: count exits with the job's status ($orig)" "[ $status -eq $orig ]"
    # count runs the job twice, uninstrumented then counted, as it does any program.
    cat "$d/orig.out" "$d/orig.out" > "$d/orig2.out"
    check "$n ranks: the job's stdout is the uninstrumented job's, in both runs" \
        "cmp -s '$d/orig2.out' '$d/inst.out'"
    check "$n ranks: the summary lists $n ranks with their imbalance" \
        "grep -q 'MPI job (mpirun): $n ranks' '$d/inst.err' && grep -q 'imbalance .*x (max / mean over ranks)' '$d/inst.err'"
    check "$n ranks: one profile directory per rank" \
        "[ \$(ls -d '$d/run/profiles'/rank-* | grep -c '/rank-[0-9]*\$') -eq $n ]"
    $MPIRUN -n "$n" valgrind -q --tool=callgrind --dump-instr=yes --compress-pos=no \
        --compress-strings=no --skip-plt=no --callgrind-out-file="$d/cg.%q{OMPI_COMM_WORLD_RANK}" \
        "$PROG" $STEPS > /dev/null 2> "$d/vg.err"
    ranks_json=""
    r=0
    while [ $r -lt "$n" ]; do
        if "$MTOOL" count --no-store --profiles "$d/run/profiles/rank-$r" -o "$d/rank-$r" -- "$PROG" \
            > /dev/null 2> "$d/rank-$r.err"; then
            check_counts "$n ranks, rank $r" "$d/rank-$r/counts.tsv" "$d/cg.$r"
        else
            not_ok "$n ranks: rank $r's profiles merge: $(tail -1 "$d/rank-$r.err")"
        fi
        ranks_json="$ranks_json $d/rank-$r/count.json"
        r=$((r + 1))
    done
    check_counts "$n ranks, the job" "$d/run/counts.tsv" "$d"/cg.[0-9]*
    # shellcheck disable=SC2086
    pycheck job "$d/run/count.json" "$d/orig.out" "$HERE/../docs/REPORT.md" "$n" "$n ranks" $ranks_json
}

job 2
job 4

# The job's exit status is the launcher's: rank 0 exits 3.
$MPIRUN -n 2 "$PROG" 2 3 > "$W/exit.orig" 2> /dev/null
orig=$?
"$MTOOL" count --no-store --no-baseline -o "$W/exit" -- $MPIRUN -n 2 "$PROG" 2 3 > "$W/exit.inst" 2> /dev/null
status=$?
check "a rank's exit status 3: count exits as mpirun does ($orig)" "[ $orig -ne 0 ] && [ $status -eq $orig ]"
check "a rank's exit status 3: the same stdout" "cmp -s '$W/exit.orig' '$W/exit.inst'"

# Pass 2 of the 2-rank job counted above: its launcher runs again, each rank timed.
"$MTOOL" time "$W/n2/run" > "$W/time.out" 2> "$W/time.err"
status=$?
$MPIRUN -n 2 "$PROG" $STEPS > "$W/time.orig" 2> /dev/null
check "time on a job's run directory: exit 0, the report lists 2 ranks" \
    "[ $status -eq 0 ] && grep -q 'MPI job (mpirun): 2 ranks' '$W/time.out'"
pycheck pass2 "$W/n2/run/report.json" "$W/n2/run/count.json" "$W/time.orig" "$MTOOL_HISTORY" 2 $STEPS \
    "time, 2 ranks"

# run through the launcher, rank 0 given four units of rows: found imbalanced.
run_job() { # NAME RANK0_UNITS: `mtool run` of the 4-rank job, then its checks
    rd=$W/run-$1
    $MPIRUN -n 4 "$PROG" $STEPS 0 "$2" > "$rd.orig" 2> /dev/null
    # three timed runs: each rank's least time, a preemption (4 ranks on fewer CPUs) in one left out
    "$MTOOL" run --runs 3 -o "$rd" -- $MPIRUN -n 4 "$PROG" $STEPS 0 "$2" > "$rd.out" 2> "$rd.err"
    status=$?
    check "run, 4 ranks, rank 0 $2 units: exit 0, the report lists 4 ranks" \
        "[ $status -eq 0 ] && grep -q 'MPI job (mpirun): 4 ranks' '$rd.out' && grep -q 'MPI job (mpirun): 4 ranks' '$rd/report.txt'"
    pycheck pass2 "$rd/report.json" "$rd/count.json" "$rd.orig" "$MTOOL_HISTORY" 4 $STEPS \
        "run, 4 ranks, rank 0 $2 units"
    "$MTOOL" history show last > "$rd.show" 2>&1
    check "run, 4 ranks, rank 0 $2 units: history show gives each object's imbalance and 4 ranks" \
        "grep -q '^MPI job: per object' '$rd.show' && grep -q 'sweep loop 1: imbalance' '$rd.show' && [ \$(grep -c '^ *[0-3] .* $(hostname)\$' '$rd.show') -ge 4 ]"
}
run_job unbalanced 4
# Rows 4:1:1:1, max / mean 16/7 = 2.29; balanced, 1: measured time follows the
# work (a rank's timers count its own loop, not its waits), 1.75 between the two
# leaving room for a loaded machine (2.28 unbalanced, 1.28 balanced under ASan
# with 4 ranks on 2 vCPUs).
pycheck sweep "$W/run-unbalanced/report.json" 1.75 4 0 "run, rank 0 4 units"
run_job balanced 1
pycheck sweep "$W/run-balanced/report.json" 1 1.75 - "run, one unit each"

# The unbalanced job's report.html in a browser: its per-rank view against report.json.
browser_test "$HERE/browser/mpi.mjs" "$W/run-unbalanced"

# Several hosts without a shared RUN: the collect step ($MTOOL_MPI_COLLECT, run
# after each launch) brings the other hosts' rank directories into RUN/profiles.
# Simulated: ranks 2 and 3 "ran on hostB", whose disk is $W/hostB (their
# directories moved there, their host file hostB's name), then collected.
cat > "$W/collect.sh" << EOF
mkdir -p "$W/hostB"
for r in 2 3; do
    rm -rf "$W/hostB/rank-\$r"
    mv "\$MTOOL_PROFILES/rank-\$r" "$W/hostB/" && echo hostB > "$W/hostB/rank-\$r/host"
done
# the collect step proper; on real hosts: rsync -a hostB:"\$MTOOL_PROFILES"/ "\$MTOOL_PROFILES"/
cp -a "$W/hostB"/rank-* "\$MTOOL_PROFILES"/
EOF
rd=$W/hosts
$MPIRUN -n 4 "$PROG" $STEPS 0 4 > "$rd.orig" 2> /dev/null
MTOOL_MPI_COLLECT="sh $W/collect.sh" "$MTOOL" run -o "$rd" -- $MPIRUN -n 4 "$PROG" $STEPS 0 4 \
    > "$rd.out" 2> "$rd.err"
status=$?
check "two hosts, collected: run exits 0, hostB's ranks in the report" \
    "[ $status -eq 0 ] && [ \$(grep -c ' hostB\$' '$rd/report.txt') -ge 2 ]"
h=$(hostname)
pycheck pass2 "$rd/report.json" "$rd/count.json" "$rd.orig" "$MTOOL_HISTORY" 4 $STEPS \
    "two hosts, collected" "$h,$h,hostB,hostB"
MTOOL_MPI_COLLECT="exit 3" "$MTOOL" count --no-store -o "$W/nocollect" -- $MPIRUN -n 2 "$PROG" 2 \
    > /dev/null 2> "$W/nocollect.err"
status=$?
check "a collect step that fails: exit 1, one line naming MTOOL_MPI_COLLECT, no count.json" \
    "[ $status -eq 1 ] && [ \$(wc -l < '$W/nocollect.err') -eq 1 ] && grep -q 'MTOOL_MPI_COLLECT: the collect step failed' '$W/nocollect.err' && [ ! -e '$W/nocollect/count.json' ]"

# The history keeps the job as one run of the program.
check "the history holds each job as one run of the program (2 counts, 1 time, 3 runs)" \
    "[ \$('$MTOOL' history list 2> /dev/null | grep -c mpi_stencil) -eq 6 ]"

# --libs through the launcher: the sweep in a library of the program's own,
# counted and timed in every rank (3 ranks, rank 0 two units of rows).
mkdir -p "$W/lib"
cp "$SAMPLES_MPI/mpi_libstencil-mpicc-O2" "$SAMPLES_MPI/libmtstencil.so" "$W/lib/"
LIBPROG=$W/lib/mpi_libstencil-mpicc-O2
rd=$W/libs
$MPIRUN -n 3 "$LIBPROG" $STEPS 0 2 > "$rd.orig" 2> /dev/null
"$MTOOL" run --libs libmtstencil -o "$rd" -- $MPIRUN -n 3 "$LIBPROG" $STEPS 0 2 > "$rd.out" 2> "$rd.err"
status=$?
check "--libs libmtstencil, 3 ranks: run exits 0, libmtstencil.so instrumented, the report lists 3 ranks" \
    "[ $status -eq 0 ] && grep -q '^mtool: instrumenting libmtstencil.so' '$rd.err' && grep -q 'MPI job (mpirun): 3 ranks' '$rd/report.txt'"
check "--libs libmtstencil, 3 ranks: the job's checksum as without mtool" \
    "grep -qxF '$(tail -1 "$rd.orig")' '$rd.out'"
pycheck libs "$rd/report.json" "$rd" "$rd.orig" "$MTOOL_HISTORY" 3 $STEPS 256 "--libs libmtstencil, 3 ranks"
# its report.html: the library's object among the per-rank views, named LIB:SPEC
browser_test "$HERE/browser/mpi.mjs" "$rd"

# No launcher: as before.
plain=$SAMPLES/matmul-gcc-O2
if "$MTOOL" count --no-store --no-baseline -o "$W/plain" -- "$plain" > /dev/null 2> "$W/plain.err"; then
    pycheck plain "$W/plain/count.json" "a program without a launcher"
    check "a program without a launcher: no rank directories, no MPI lines" \
        "! ls -d '$W/plain/profiles'/rank-* > /dev/null 2>&1 && ! grep -q 'MPI job' '$W/plain.err'"
else
    not_ok "a program without a launcher: count failed: $(tail -1 "$W/plain.err")"
fi

# A launcher without a program to profile: one error line, no count.json.
"$MTOOL" count --no-store -o "$W/none" -- $MPIRUN -n 2 /no/such/program > "$W/none.out" 2> "$W/none.err"
status=$?
check "a launcher without a program: exit 1, one line naming the launcher" \
    "[ $status -eq 1 ] && [ \$(wc -l < '$W/none.err') -eq 1 ] && grep -q '^mtool: mpirun: no program to profile' '$W/none.err'"
check "a launcher without a program: no count.json" "[ ! -e '$W/none/count.json' ]"
print_totals
