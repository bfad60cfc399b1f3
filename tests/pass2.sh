#!/bin/sh
# tests/pass2.sh — pass 2 end to end (`mtool run`, `mtool time`): on the
# memory sample (samples/memory.c, kernels of known behavior) the report
# must rank them as their memory behavior says, and so must `mtool sim
# RUNDIR`'s stall estimates; a second `mtool time` on
# the same pass 1 must agree; outer-first and inner-first both work; the
# Fortran and threads samples run end to end; bad run directories get one
# line.  Checks on the JSON report are in tests/pass2_check.py.
#
# MEMORY_BUILDS, a pattern of the memory sample's builds in SAMPLES2
# (default memory-*: gcc's and clang's), chooses the builds checked:
# tests/run.sh checks gcc's, tests/run-full.sh clang's.
#
#   MTOOL=build/asan/mtool SAMPLES=build/samples SAMPLES2=build/samples-pass2 sh tests/pass2.sh
set -u
MTOOL=${MTOOL:-build/asan/mtool}
# The memory sample's simulation (199 M references) with MTOOL_SIM when
# given: tests/run.sh gives the build without ASan, under which it takes 2
# minutes of CPU less; the simulator runs under ASan in sim.sh, trace.sh and
# the other simulator suites, on smaller programs.
MTOOL_SIM=${MTOOL_SIM:-$MTOOL}
SAMPLES=${SAMPLES:-build/samples}
SAMPLES2=${SAMPLES2:-build/samples-pass2}
MEMORY_BUILDS=${MEMORY_BUILDS:-memory-*}
HERE=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d "${TMPDIR:-/tmp}/mtool-pass2.XXXXXX")
trap 'rm -rf "$W"' EXIT INT TERM
export XDG_CACHE_HOME="$W/cache" XDG_CONFIG_HOME="$W/config" MTOOL_HISTORY="$W/history.db"
. "$(dirname "$0")/lib.sh"
pycheck() {
    python3 "$HERE/pass2_check.py" "$@" > "$W/py.out" 2>&1 || echo "not ok - pass2_check.py $1 failed" >> "$W/py.out"
    cat "$W/py.out"
    tally "$W/py.out"
}

# The cost model needs this machine's profile to predict within 10%:
# tests/run.sh's (calibrated alone on the machine, as these runs are), else
# one made here (20 s of wall time under ASan, Xeon family 6 model 85).
have_machine_profile || "$MTOOL" calibrate > "$W/calibrate.log" 2>&1 ||
    not_ok "calibrate: $(tail -1 "$W/calibrate.log")"

for bin in "$SAMPLES2"/$MEMORY_BUILDS; do
    name=$(basename "$bin")
    "$bin" > "$W/$name.native" 2>&1
    # Five timed runs each time: an object's least time over them is what a
    # second report must reproduce within 5 points on this shared machine.
    # --libs none here and for phases: the checks rank the executable's
    # kernels and regions, and its figure 2 against them (glibc's objects,
    # counted by default, are tests/glibc.sh's and libs_report.sh's; the
    # Fortran and threads runs below keep the default).
    "$MTOOL" run --runs 5 --libs none -o "$W/$name" -- "$bin" > "$W/$name.out" 2> "$W/$name.err"
    rc=$?
    check "$name: run exits with the program's status (0, got $rc)" "[ $rc = 0 ]"
    check "$name: the program's output, the same in every run (native, counted, 5 timed)" \
        "[ \"\$(grep -c -F -x -f '$W/$name.native' '$W/$name.out')\" = 7 ]"
    pycheck memory "$W/$name/report.json" "$name"
    # The stall estimate beside this pass 2's overheads (docs/SIMULATOR.md,
    # "The stall estimate"): ranked as pass 2 ranks the kernels, within the
    # stated factor on the memory-bound ones, near zero for compute_poly.
    # On one build only (gcc's, where there is one): its 199 M references
    # take 2 min of CPU under ASan (5 min on the loaded Xeon family 6 model
    # 207), and the other build's kernels are the same source; MTOOL_SIM above.
    # Exact, not sampled: set sampling 1/8 took 23 s against 79 s, but
    # dispatch_chunks' share of references in loops chasing no pointer,
    # 0.949 exact, came out 0.926 and 0.860 (its chasing loop's references
    # fall in few sets; Xeon family 6 model 85).
    if [ "$bin" = "$( (ls "$SAMPLES2"/memory-gcc-*; ls "$SAMPLES2"/$MEMORY_BUILDS) 2> /dev/null | head -1)" ]; then
        "$MTOOL_SIM" sim --json -o "$W/$name.sim.json" "$W/$name" > /dev/null 2> "$W/$name.sim.err"
        rc=$?
        check "$name: mtool sim RUNDIR exits 0: $(tail -1 "$W/$name.sim.err")" "[ $rc = 0 ]"
        pycheck stall "$W/$name.sim.json" "$W/$name/report.json" "$name"
    fi
    cp "$W/$name/report.json" "$W/$name.first.json"
    "$MTOOL" time --runs 5 --no-store "$W/$name" > /dev/null 2> "$W/$name.time.err"
    check "$name: mtool time again on the same pass 1 (exit 0)" "[ $? = 0 ]"
    cp "$W/$name/report.json" "$W/$name.second.json"
    python3 "$HERE/pass2_check.py" repeat "$W/$name.first.json" "$W/$name.second.json" "$name" \
        > "$W/repeat.out" 2>&1 || echo "not ok - pass2_check.py repeat failed" >> "$W/repeat.out"
    if grep -q '^not ok' "$W/repeat.out"; then
        # Other tenants' use of this machine's shared caches can move a
        # memory-bound kernel for minutes, past both reports' spreads: a
        # third report decides, kernel by kernel (pass2_check.py repeat).
        echo "# $name: the two reports disagree; a third decides:"
        sed -n 's/^not ok - /#   /p' "$W/repeat.out"
        "$MTOOL" time --runs 5 --no-store "$W/$name" > /dev/null 2>&1
        cp "$W/$name/report.json" "$W/$name.third.json"
        python3 "$HERE/pass2_check.py" repeat "$W/$name.first.json" "$W/$name.second.json" \
            "$W/$name.third.json" "$name" > "$W/repeat.out" 2>&1 ||
            echo "not ok - pass2_check.py repeat failed" >> "$W/repeat.out"
    fi
    cat "$W/repeat.out"
    tally "$W/repeat.out"
    "$MTOOL" time --no-store --inner-first --json "$W/$name" > "$W/$name.inner.out" 2>/dev/null
    pycheck inner "$W/$name/report.json" "$name"
    check "$name: --json prints the report after the program's output" \
        "tail -1 '$W/$name.inner.out' | cmp -s - '$W/$name/report.json'"
    # The dynamic call graph is what makes dispatch_chunks estimable.
    mv "$W/$name/call_targets.tsv" "$W/$name.targets"
    "$MTOOL" time --no-store "$W/$name" > /dev/null 2>&1
    pycheck no-targets "$W/$name/report.json" "$name"
    mv "$W/$name.targets" "$W/$name/call_targets.tsv"
done

# A large loop-free procedure timed in regions (samples/phases.c), gcc and
# clang; the history keeps its regions, matched across a rebuild.
for bin in "$SAMPLES2"/phases-*; do
    name=$(basename "$bin")
    "$MTOOL" run --runs 3 --libs none -o "$W/$name" -- "$bin" 1500 > "$W/$name.out" 2> "$W/$name.err"
    check "$name: run exits 0 ($?)" "[ $? = 0 ]"
    pycheck regions "$W/$name/report.json" "$name" 1500
done
if [ -x "$SAMPLES2/phases-gcc-O2" ]; then
    check "history: trend of phases/r1, a region" \
        "\"$MTOOL\" history trend phases/r1 --program phases-gcc-O2 2>&1 | grep -q '(region, object'"
    # Rebuilt with its lines moved: region 1 stays the same object.
    mkdir -p "$W/rebuilt"
    { printf '\n\n'; cat "$HERE/../samples/phases.c"; } > "$W/rebuilt/phases.c"
    if gcc -O2 -g "$W/rebuilt/phases.c" -o "$W/rebuilt/phases-gcc-O2" 2> /dev/null; then
        "$MTOOL" run --runs 1 --libs none -o "$W/rebuilt/run" -- "$W/rebuilt/phases-gcc-O2" 300 > /dev/null 2>&1
        check "history: region 1 of phases followed across a rebuild (2 runs in its trend)" \
            "[ \"\$(\"$MTOOL\" history trend phases/r1 --program phases-gcc-O2 2>/dev/null | grep -c '^ *[0-9]')\" -ge 2 ]"
    fi
fi

# Fortran and threads: the whole workflow, the program's status kept.  The
# Fortran run's libraries: FORTRAN_LIBS, none unless given (`make test`:
# libgfortran's, libquadmath's and libc's analyses and copies under ASan
# took 54 s of this suite's 198, Xeon family 6 model 85); `all`, the
# default, in `make test-full`, which runs this suite again.
for bin in "$SAMPLES"/doloop-gfortran-O2 "$SAMPLES"/threads-gcc-O2; do
    name=$(basename "$bin")
    libs= # the default
    case $name in doloop-*) [ "${FORTRAN_LIBS:-none}" = all ] || libs="--libs ${FORTRAN_LIBS:-none}" ;; esac
    "$bin" > /dev/null 2>&1
    want=$?
    # shellcheck disable=SC2086
    "$MTOOL" run --no-store $libs -o "$W/$name" -- "$bin" > "$W/$name.out" 2> "$W/$name.err"
    rc=$?
    check "$name: run exits with the program's status ($want, got $rc)" "[ $rc = $want ]"
    pycheck any "$W/$name/report.json" "$name"
done

# The history holds the run with measured and predicted cycles.
check "history: the run stored with measured and predicted cycles per object" \
    "\"$MTOOL\" history sql \"SELECT count(*) FROM figures f JOIN runs r ON r.id = f.run_id WHERE r.tool = 'run' AND f.measured_cycles > 0 AND f.predicted_cycles > 0\" | tail -1 | grep -qv '^0\$'"

# The run directory's version (docs/REPORT.md, "The run directory"): pass 1
# writes `format` ("mtool-run 2"); without it (the layout before versions,
# version 1) the same files are read as before: the same m-objects are
# selected; a version this mtool does not know, or a line that is no
# version, is refused in one line naming the file, with no report.
fmt_bin="$SAMPLES/callgraph-gcc-O2"
# --libs none: each `time` below would make glibc's timed copies again
# under ASan (8-10 s each); the format is the run directory's.
"$MTOOL" count --no-store --libs none -o "$W/fmt" -- "$fmt_bin" > /dev/null 2> "$W/fmt.err"
check "count writes the run directory's format first line: mtool-run 2" \
    "[ \"\$(head -n 1 '$W/fmt/format')\" = 'mtool-run 2' ] && [ \$(wc -l < '$W/fmt/format') = 1 ]"
for v in v1 v3 bad; do cp -r "$W/fmt" "$W/fmt-$v"; done
rm "$W/fmt-v1/format"
echo "mtool-run 3" > "$W/fmt-v3/format"
echo "mtool-run two" > "$W/fmt-bad/format"
specs() { python3 -c 'import json,sys; print(sorted(o["time_spec"] for o in json.load(open(sys.argv[1]))["objects"]))' "$1"; }
"$MTOOL" time --no-store "$W/fmt" > /dev/null 2>&1
rc2=$?
"$MTOOL" time --no-store "$W/fmt-v1" > /dev/null 2> "$W/fmt-v1.err"
check "time on a version-1 run directory (no format file): read, the same m-objects as version 2" \
    "[ $? = 0 ] && [ $rc2 = 0 ] && [ \"\$(specs '$W/fmt-v1/report.json')\" = \"\$(specs '$W/fmt/report.json')\" ]"
for v in v3 bad; do
    "$MTOOL" time --no-store "$W/fmt-$v" > /dev/null 2> "$W/fmt-$v.err"
    rc=$? # before the substitution below sets $? (bash does, dash does not)
    check "time on a run directory of format '$(cat "$W/fmt-$v/format")': refused in one line naming RUNDIR/format, no report" \
        "[ $rc = 1 ] && [ \$(wc -l < '$W/fmt-$v.err') = 1 ] && grep -q -F 'mtool: $W/fmt-$v/format: ' '$W/fmt-$v.err' && [ ! -e '$W/fmt-$v/report.json' ]"
done
"$MTOOL" analyze --costs --counts "$W/fmt-v3/counts.tsv" "$fmt_bin" > /dev/null 2> "$W/fmt-costs.err"
check "analyze --costs --counts from a run directory of an unknown format: refused, naming RUNDIR/format" \
    "[ $? = 1 ] && grep -q -F '$W/fmt-v3/format: ' '$W/fmt-costs.err'"

# Bad input: one line naming the directory, no report.
"$MTOOL" time "$W/nosuch" > "$W/bad.out" 2> "$W/bad.err"
check "time on a missing run directory: non-zero, one line naming it" \
    "[ $? -ne 0 ] && [ \$(wc -l < '$W/bad.err') = 1 ] && grep -q nosuch '$W/bad.err'"
mkdir -p "$W/empty"
"$MTOOL" time "$W/empty" > /dev/null 2> "$W/bad2.err"
check "time on a directory without pass 1: non-zero, one line" \
    "[ $? -ne 0 ] && [ \$(wc -l < '$W/bad2.err') = 1 ] && [ ! -e '$W/empty/report.json' ]"
name=$(basename "$(ls "$SAMPLES2"/$MEMORY_BUILDS | head -1)")
cp "$SAMPLES/matmul-gcc-O2" "$W/changed"
sed -i "s|^binary\t.*|binary\t$W/changed|" "$W/$name/pass1.txt"
"$MTOOL" time "$W/$name" > /dev/null 2> "$W/bad3.err"
check "time when the binary changed since pass 1: refused in one line" \
    "[ $? -ne 0 ] && grep -q 'changed since pass 1' '$W/bad3.err'"

print_totals
