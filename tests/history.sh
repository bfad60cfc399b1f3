#!/bin/sh
# tests/history.sh — `mtool history` end to end with real `mtool count` runs:
# every command; a sample rebuilt with its lines shifted (and, separately, a
# procedure renamed) keeps its procedures' and loops' identities; several
# processes storing at once lose nothing; a damaged database gives one error
# line and is left untouched.  Oracles: the counts `mtool count` printed
# (counts.tsv), sqlite3's own integrity_check, cmp of the file.
#
#   MTOOL=build/asan/mtool sh tests/history.sh
set -u
cd "$(dirname "$0")/.."
MTOOL=${MTOOL:-build/mtool}
W=$(mktemp -d "${TMPDIR:-/tmp}/mtool-history.XXXXXX")
trap 'rm -rf "$W"' EXIT INT TERM
export XDG_CACHE_HOME="$W/cache" XDG_CONFIG_HOME="$W/config" MTOOL_HISTORY="$W/h.db"
. tests/lib.sh
# A machine profile of this mtool's version, tests/run.sh's or made once
# here (a command without one calibrates by itself and says so on stderr,
# which the concurrent writers' check below reads); measured again when a
# loaded machine made the clock references disagree.
have_machine_profile ||
    for attempt in 1 2 3; do "$MTOOL" calibrate -r 3 > "$W/calibrate.log" 2>&1 && break; done
# check WHAT CMD, with CMD's first lines of output shown when it fails.
check() {
    if eval "$2" > "$W/check.out" 2>&1; then
        ok "history: $1"
    else
        not_ok "history: $1"
        sed 's/^/# /' "$W/check.out" | head -5
    fi
}
sql() { "$MTOOL" history sql "$1" | tail -n +2; }

# A sample built twice into the same name: the second time with blank lines
# and comments inserted above and inside the procedures, so every line moves.
mkdir -p "$W/v1" "$W/v2" "$W/v3"
cp samples/matmul.c "$W/v1/matmul.c"
awk '/^NOINLINE void matmul_rows/ { print "/* inserted\n   comment */\n" } { print } /double sum = 0;/ { print "" }' \
    samples/matmul.c > "$W/v2/matmul.c"
sed 's/matmul_cols/matmul_columns/g' samples/matmul.c > "$W/v3/matmul.c"
for v in v1 v2 v3; do
    (cd "$W/$v" && cc -g -O2 -o matmul matmul.c) || { not_ok "history: cannot build the sample"; exit 1; }
done
check "the rebuilt sample's lines really moved" \
    "! cmp -s $W/v1/matmul $W/v2/matmul && objdump -d $W/v1/matmul | grep -A30 '<matmul_rows>:' | sed 's/^ *[0-9a-f]*://' > $W/d1 && objdump -d $W/v2/matmul | grep -A30 '<matmul_rows>:' | sed 's/^ *[0-9a-f]*://' > $W/d2 && test \"\$(grep -c . $W/d1)\" -gt 5"

# ---- count stores; --no-store does not --------------------------------------
# --libs none in every count: the checks are the programs' own figures
# and the history's, and glibc's copies, counted by default, cost a rewrite
# of libc per program (7 here) under ASan: 42 s of CPU for this suite
# against 21 s without them, loaded AMD EPYC Zen 3.  The concurrent writers
# below merge r1's profiles 24 times (a default count's merge too, without
# --libs: glibc.sh).
"$MTOOL" count --libs none -o "$W/r1" -- "$W/v1/matmul" > /dev/null 2> "$W/count1.err"
check "count stores run 1 and says where" "grep -q 'run 1 stored in $W/h.db' $W/count1.err"
"$MTOOL" count --libs none --no-store -o "$W/r0" -- "$W/v1/matmul" > /dev/null 2> "$W/count0.err"
check "--no-store stores nothing" "! grep -q stored $W/count0.err && test \"\$(sql 'SELECT count(*) FROM runs')\" = 1"
"$MTOOL" count --libs none -o "$W/r2" -- "$W/v2/matmul" > /dev/null 2>&1
"$MTOOL" count --libs none -o "$W/r3" -- "$W/v2/matmul" 7 > /dev/null 2>&1
"$MTOOL" count --libs none -o "$W/r4" -- "$W/v3/matmul" > /dev/null 2>&1

# Oracle for the stored figures: counts.tsv of run 1 and the analyzer's
# block sizes, summed here independently for matmul_rows.
rows_memops=$("$MTOOL" analyze --function matmul_rows "$W/v1/matmul" 2>/dev/null |
    awk '/^    0x/ { split($0, f, " "); r = f[4]; w = f[5]; sub(/r/, "", r); sub(/w/, "", w); m[f[1]] = r + w }
         END { for (a in m) print a, m[a] }' > "$W/blocks"
    awk 'NR == FNR { m[$1] = $2; next } ($1 in m) { s += $2 * m[$1] } END { print s }' "$W/blocks" "$W/r1/counts.tsv")
check "stored memory operations of matmul_rows equal counts.tsv x analyzer ($rows_memops)" \
    "test \"\$(sql \"SELECT f.memory_ops FROM figures f JOIN sites s ON s.id = f.site_id WHERE f.run_id = 1 AND s.procedure = 'matmul_rows' AND s.loop_path IS NULL\")\" = '$rows_memops'"

# Oracle for the number of objects a run of v1 stores: the procedures and
# the loops (headers from the analyzer) that ran, from counts.tsv.
nobj=$( { "$MTOOL" analyze --loops "$W/v1/matmul" | sed -n 's/^ *loop [0-9]* at \(0x[0-9a-f]*\):.*/H \1/p'; cat "$W/r1/counts.tsv"; } |
    awk '$1 == "H" { h[$2] = 1; next } /^#/ { next } $2 > 0 { p[$3] = 1; if ($1 in h) l++ }
         END { n = 0; for (x in p) n++; print n + l }')
check "run 1 stores one object per procedure and loop that ran ($nobj)" \
    "test \"\$(sql 'SELECT nobjects FROM runs WHERE id = 1')\" = '$nobj'"

# ---- list ----------------------------------------------------------------------
"$MTOOL" history list > "$W/list" 2>&1
check "list shows 4 runs with their command lines" \
    "test \$(grep -c 'mtool count' $W/list) = 4 && grep -q 'v2/matmul 7' $W/list"
check "list --limit 1 shows the last run only" \
    "\"$MTOOL\" history list --limit 1 | tail -1 | grep -q '^ *4 '"
check "list --since tomorrow shows none" \
    "\"$MTOOL\" history list --since $(date -d tomorrow +%Y-%m-%d) | grep -q '(no run'"
check "list --program other shows none" "\"$MTOOL\" history list --program nosuch | grep -q '(no run of nosuch)'"
check "list with a bad date is a usage error" "\"$MTOOL\" history list --since yesterday; test \$? -eq 2"

# ---- show ------------------------------------------------------------------------
"$MTOOL" history show 3 > "$W/show" 2>&1
check "show: arguments, directory, build, exit status, loops" \
    "grep -q 'arguments: \\[\"7\"\\]' $W/show && grep -q 'directory: ' $W/show && grep -q 'sha256: [0-9a-f]\\{64\\}' $W/show && grep -q 'exit status 0' $W/show && grep -q 'matmul_rows/1.1.1' $W/show"
check "show last~3 is run 1" "\"$MTOOL\" history show last~3 | grep -q '^run 1:'"
check "show of a missing run is one error line, exit 1" \
    "\"$MTOOL\" history show 99 2> $W/e; test \$? -eq 1 && test \$(grep -c . $W/e) = 1"

# ---- identities across rebuilds ----------------------------------------------------
check "rebuilt sample is a new build (2 builds of matmul before the rename)" \
    "test \"\$(sql 'SELECT count(*) FROM programs WHERE id IN (SELECT program_id FROM runs WHERE id <= 3)')\" = 2"
check "every line of matmul_rows moved in the rebuild" \
    "test \"\$(sql \"SELECT count(*) FROM sites a JOIN sites b ON a.object_id = b.object_id AND a.program_id < b.program_id WHERE a.procedure = 'matmul_rows' AND a.program_id = 1 AND b.program_id = 2 AND a.line = b.line\")\" = 0"
check "the innermost loop of matmul_rows keeps its object across the rebuild, matched as moved" \
    "test \"\$(sql \"SELECT count(DISTINCT object_id) || ' ' || group_concat(matched) FROM sites WHERE procedure = 'matmul_rows' AND loop_path = '1.1.1' AND program_id <= 2\")\" = '1 new,moved'"
check "every procedure and loop of matmul_rows and matmul_cols matched across the rebuild" \
    "test \"\$(sql \"SELECT count(*) FROM sites s JOIN programs p ON p.id = s.program_id WHERE p.id = 2 AND s.procedure IN ('matmul_rows', 'matmul_cols') AND s.matched = 'moved'\")\" = 8"
"$MTOOL" history trend matmul_rows/1.1.1 > "$W/trend" 2>&1
check "trend follows the moved loop over runs 1-4 (line 17, then 20)" \
    "grep -Eq '^ +1 +matmul_rows/1.1.1 +matmul.c:17 ' $W/trend && grep -Eq '^ +2 +matmul_rows/1.1.1 +matmul.c:2[0-9] ' $W/trend && grep -Eq '^ +4 ' $W/trend"
check "trend by FILE:LINE names the same object" \
    "\"$MTOOL\" history trend matmul.c:17 | head -1 | grep -q 'matmul_rows/1.1.1'"
check "trend of an unknown object is one error line" \
    "\"$MTOOL\" history trend nosuch 2> $W/e; test \$? -eq 1 && test \$(grep -c . $W/e) = 1"
check "renamed procedure matmul_cols -> matmul_columns matched by file and shape" \
    "test \"\$(sql \"SELECT matched FROM sites WHERE procedure = 'matmul_columns' AND loop_path IS NULL\")\" = renamed"
"$MTOOL" history diff 1 2 > "$W/diff12" 2>&1
check "diff of the line-shifted rebuild: nothing new or gone, loops marked as moved" \
    "grep -q 'new (executed in the second run only) (0)' $W/diff12 && grep -q 'gone (executed in the first run only) (0)' $W/diff12 && grep -q 'unchanged within 5%: $nobj' $W/diff12"
"$MTOOL" history diff 3 4 --threshold 1 > "$W/diff34" 2>&1
check "diff 3 -> 4 (an argument, then none): every matmul loop improved, renamed one says so" \
    "grep -q '^improved' $W/diff34 && grep -q 'renamed (was matmul_cols)' $W/diff34 && grep -Eq 'matmul_rows/1.1.1 .*-' $W/diff34"

# ---- regressions: a CI gate ---------------------------------------------------------
check "regressions: run 3 (an argument: 65x65 matrices, +4.7% work) against run 2 exits 1" \
    "\"$MTOOL\" history regressions 3 2 --threshold 3 > $W/reg; test \$? -eq 1 && grep -q 'matmul_rows/1.1.1' $W/reg"
check "regressions: last (run 4) against run 3 exits 0" \
    "\"$MTOOL\" history regressions > $W/reg; test \$? -eq 0 && grep -q 'no object regressed' $W/reg"
check "regressions: the default 5% threshold lets run 3 pass" \
    "\"$MTOOL\" history regressions 3 2"
check "regressions: error is exit 2" "\"$MTOOL\" history regressions 99 2>/dev/null; test \$? -eq 2"

# ---- sql is read-only --------------------------------------------------------------------
check "sql answers with a header" "\"$MTOOL\" history sql 'SELECT count(*) AS n FROM runs' | tr '\\n' ' ' | grep -q '^n 4 $'"
cp "$W/h.db" "$W/before.db"
for bad in "DELETE FROM runs" "SELECT 1; DROP TABLE runs" "PRAGMA user_version=7" \
    "ATTACH '$W/x.db' AS x" "CREATE TABLE t(x)"; do
    check "sql refuses '$bad' in one line and changes nothing" \
        "! \"$MTOOL\" history sql \"$bad\" > $W/o 2> $W/e && test \$(grep -c . $W/e) = 1 && ! test -s $W/o && test \"\$(sql 'SELECT count(*) FROM runs')\" = 4 && test ! -e $W/x.db"
done
check "sql: the database is unchanged" "cmp -s $W/h.db $W/before.db"

# ---- export -------------------------------------------------------------------------------
"$MTOOL" history export --json -o "$W/e.json"
check "export --json is valid JSON with 4 runs and their objects" \
    "python3 -c 'import json,sys; d = json.load(open(sys.argv[1])); assert len(d) == 4 and all(len(r[\"objects\"]) == $nobj for r in d) and d[2][\"arguments\"] == [\"7\"]' $W/e.json"
"$MTOOL" history export --csv --program matmul -o "$W/e.csv"
check "export --csv: one row per run and object (4 x $nobj + header)" \
    "test \$(wc -l < $W/e.csv) = $((4 * nobj + 1)) && python3 -c 'import csv,sys; r = list(csv.DictReader(open(sys.argv[1]))); assert len(r) == $((4 * nobj)) and r[0][\"kind\"] in (\"loop\", \"procedure\")' $W/e.csv"
check "export without a format is a usage error" "\"$MTOOL\" history export 2>/dev/null; test \$? -eq 2"

# ---- loop entries: times control entered the loop from outside it -------------------------
# tests/history/loops.c enters its inner loop N times for M iterations each,
# inside an outer loop entered once: the source is the oracle (1 and N); a
# loop's header runs once per iteration, once more if the compiler left the
# test at the top.  count stores the entries from pass-1 counts, time the same.
cc -g -O2 -o "$W/loops" tests/history/loops.c || not_ok "history: cannot build tests/history/loops.c"
lsql() { "$MTOOL" history --db "$W/loops.db" sql "$1" | tail -n +2; }
figures_of() { # RUN: "PATH ENTRIES ITERATIONS" of work's loops, outer first
    lsql "SELECT s.loop_path || ' ' || ifnull(f.entries, '-') || ' ' || ifnull(f.iterations, '-') FROM figures f JOIN sites s ON s.id = f.site_id WHERE f.run_id = $1 AND s.procedure = 'work' AND s.loop_path IS NOT NULL ORDER BY s.loop_path" | tr '\n' ' '
}
run=0
for nm in "7 1000" "3 5000"; do
    set -- $nm
    run=$((run + 1))
    MTOOL_HISTORY="$W/loops.db" "$MTOOL" count --libs none -o "$W/rl$run" -- "$W/loops" $1 $2 > /dev/null 2>&1
    got=$(figures_of $run)
    check "count of loops $1 $2: the outer loop entered 1 time, the inner $1 times; iterations N and N x M (stored: $got)" \
        "echo '$got' | awk -v n=$1 -v m=$2 '\$1 == \"1\" && \$2 == 1 && \$3 >= n && \$3 <= n + 1 && \$4 == \"1.1\" && \$5 == n && \$6 >= n * m && \$6 <= n * (m + 1) { ok = 1 } END { exit !ok }'"
done
MTOOL_HISTORY="$W/loops.db" "$MTOOL" count --libs none -o "$W/rlt" -- "$W/loops" 50 20000 > /dev/null 2>&1
MTOOL_HISTORY="$W/loops.db" "$MTOOL" time --inner-first "$W/rlt" > /dev/null 2>&1
got=$(figures_of 4)
check "time stores the same entries for the loops it timed (1 and 50: $got)" \
    "test \"\$(lsql \"SELECT tool FROM runs WHERE id = 4\")\" = time && echo '$got' | awk '\$1 == \"1\" && \$2 == 1 && \$4 == \"1.1\" && \$5 == 50 { ok = 1 } END { exit !ok }'"
check "time's own timers entered the inner loop 50 times too (report.json)" \
    "python3 -c 'import json,sys; r = json.load(open(sys.argv[1])); assert 50 in [o[\"entries\"] for o in r[\"objects\"]], r[\"objects\"]' $W/rlt/report.json"

# ---- a version-3 history migrated ------------------------------------------------------------
# tests/history/v3.sql: made by the mtool before version 4, whose count runs
# stored a loop's header executions as its entries.  The file's own rows are
# the oracle: those move to iterations, entries become unknown; nothing else
# changes.
python3 -c 'import sqlite3,sys; c = sqlite3.connect(sys.argv[2]); c.executescript(open(sys.argv[1]).read()); c.close()' \
    tests/history/v3.sql "$W/v3.db"
old_rows() { python3 -c 'import sqlite3,sys
c = sqlite3.connect(sys.argv[1])
for r in c.execute(sys.argv[2]): print(*r)' "$W/v3.db" "SELECT f.run_id, f.site_id, r.tool, o.kind, f.entries, f.instructions, f.memory_ops, f.measured_cycles, f.predicted_cycles, f.overhead_cycles FROM figures f JOIN runs r ON r.id = f.run_id JOIN objects o ON o.id = f.object_id ORDER BY 1, 2"; }
old_rows | awk '{ loop = $3 == "count" && $4 == "loop"; e = loop ? "None" : $5; i = loop ? $5 : "None"; print $1, $2, e, i, $6, $7, $8, $9, $10 }' > "$W/v3.expected"
v3_version=$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("PRAGMA user_version").fetchone()[0])' "$W/v3.db")
check "the version-3 file as made: version 3 ($v3_version), 25 figures, count runs' loops with header counts" \
    "test '$v3_version' = 3 && test \$(grep -c . $W/v3.expected) = 25 && grep -q '^1 [0-9]* None 7000 ' $W/v3.expected"
"$MTOOL" history --db "$W/v3.db" list > /dev/null 2> "$W/e"
python3 -c 'import sqlite3,sys
c = sqlite3.connect(sys.argv[1])
for r in c.execute("SELECT run_id, site_id, entries, iterations, instructions, memory_ops, measured_cycles, predicted_cycles, overhead_cycles FROM figures ORDER BY 1, 2"): print(*r)' "$W/v3.db" > "$W/v3.migrated"
check "migrated (to version 10): entries of count runs' loops unknown, their header counts as iterations, every other figure kept" \
    "! test -s $W/e && test \"\$(\"$MTOOL\" history --db $W/v3.db sql 'PRAGMA user_version' | tail -1)\" = 10 && diff $W/v3.expected $W/v3.migrated"
check "migrated: integrity ok, figures still indexed by run" \
    "test \"\$(\"$MTOOL\" history --db $W/v3.db sql \"PRAGMA integrity_check; SELECT count(*) FROM sqlite_master WHERE name = 'figures_by_run'\" | grep -v -e '^integrity' -e '^count' | tr '\\n' ' ')\" = 'ok 1 '"
"$MTOOL" history --db "$W/v3.db" show 1 > "$W/v3.show"
check "show of a migrated count run: the loops' entries are '-', the procedures' kept" \
    "grep -Eq '^ +#[0-9]+ +work/1.1 .* - +56000 ' $W/v3.show && grep -Eq '^ +#[0-9]+ +work +[^ ]+ +1 +56042 ' $W/v3.show"
MTOOL_HISTORY="$W/v3.db" "$MTOOL" count --libs none -o "$W/rl5" -- "$W/loops" 7 1000 > /dev/null 2>&1
"$MTOOL" history --db "$W/v3.db" diff 1 5 --metric entries > "$W/v3.diff" 2>&1
check "diff of entries from a migrated count run to a new one leaves the loops uncompared" \
    "! grep -q 'work/1' $W/v3.diff && grep -q 'unchanged within' $W/v3.diff"
"$MTOOL" history --db "$W/v3.db" trend work/1.1 > "$W/v3.trend"
check "trend of the inner loop: entries '-' in the migrated count runs, 7 in the new one" \
    "grep -Eq '^ +1 +work/1.1 .* - +56000 ' $W/v3.trend && grep -Eq '^ +5 +work/1.1 +[^ ]+ +7 +56000 ' $W/v3.trend"

# ---- simulated runs (mtool sim) ---------------------------------------------------------
# walks' column walk (a 512 x 200 matrix of doubles: a column is 512 lines)
# fits a D1 of 1024 lines and misses once per line; in one of 128 lines it
# misses at every load, capacity misses (docs/SIMULATOR.md, samples of known
# behaviour).  Two traced runs, D1 64K then 8K, the rest of the machine the
# same (LL 256K: unchanged misses): diff and regressions must flag walk_cols
# by D1 misses and nothing by LL misses.  The report each run printed is the
# oracle of what it stored (tests/history_sim_check.py).
SAMPLES_SIM=${SAMPLES_SIM:-build/samples-sim}
walks="$SAMPLES_SIM/walks-gcc-O2"
# --libs none in every traced run below: each new executable had glibc's
# tracing copy made again under ASan (6-8 s a run, 60 of this suite's 89 s;
# Xeon family 6 model 85); the history's figures are the programs' own.
SIM_GEOMETRY="--I1=8K,4,64 --L2=none --LL=256K,8,64 --libs none"
ssql() { "$MTOOL" history --db "$W/sim.db" sql "$1" | tail -n +2; }
shist() { "$MTOOL" history --db "$W/sim.db" "$@"; }
n=0
for d1 in 64K,8,64 8K,4,64; do
    n=$((n + 1))
    # shellcheck disable=SC2086
    MTOOL_HISTORY="$W/sim.db" "$MTOOL" sim $SIM_GEOMETRY --D1=$d1 --json -o "$W/sim$n.json" \
        -- "$walks" > "$W/sim$n.out" 2> "$W/sim$n.err"
    echo $? > "$W/sim$n.rc"
done
# shellcheck disable=SC2086
MTOOL_HISTORY="$W/sim.db" "$MTOOL" sim --no-store $SIM_GEOMETRY --D1=8K,4,64 -o "$W/sim3.txt" \
    -- "$walks" > /dev/null 2> "$W/sim3.err"
check "sim -- BIN stores runs 1 and 2, says where, exits as the program; --no-store stores nothing" \
    "test \"\$(cat $W/sim1.rc $W/sim2.rc)\" = '0
0' && grep -q 'run 2 stored in $W/sim.db' $W/sim2.err && ! grep -q stored $W/sim3.err && test \"\$(ssql 'SELECT group_concat(tool) FROM runs')\" = 'sim,sim'"
shist export --json -o "$W/sim.json"
for n in 1 2; do
    check "sim run $n stored as its report has it: levels, every procedure and loop (inclusive), every cause" \
        "python3 tests/history_sim_check.py $W/sim$n.json $W/sim.json $n"
done
check "the oracle can fail: run 1 against run 2's report" \
    "! python3 tests/history_sim_check.py $W/sim2.json $W/sim.json 1"
machine2=$(ssql "SELECT last_level || ' ' || machine FROM sim_runs WHERE run_id = 2")
check "the machine summarised as settings, the last level named ($machine2)" \
    "echo '$machine2' | grep -q '^L2 I1=8K,4,64 D1=8K,4,64 L2=256K,8,64 (.*flags)\$'"
d1_cols=$(ssql "SELECT f.d1_capacity || ' ' || f.d1_cold || ' ' || f.refs FROM sim_figures f JOIN sites s ON s.id = f.site_id WHERE f.run_id = 2 AND s.procedure = 'walk_cols' AND s.loop_path IS NULL")
check "walk_cols in D1 8K: each of its 102400 loads a capacity miss (stored: $d1_cols)" \
    "echo '$d1_cols' | awk '\$1 >= 0.95 * 102400 && \$1 <= 102402 && \$3 >= 102400 { ok = 1 } END { exit !ok }'"
shist diff 1 2 --metric d1_misses > "$W/sdiff" 2>&1
check "diff by d1_misses: walk_cols and its loops regressed (x8), walk_rows unchanged" \
    "sed -n '/^regressed/,/^improved/p' $W/sdiff | grep -Eq '^ +#[0-9]+ +walk_cols +walks.c' && test \$(sed -n '/^regressed/,/^improved/p' $W/sdiff | grep -c 'walk_cols') = 3 && ! sed -n '/^regressed/,/^unchanged/p' $W/sdiff | grep -q 'walk_rows' && grep -q 'by D1 misses (simulated)' $W/sdiff"
check "regressions 2 1 by d1_capacity_misses, threshold 50%: exit 1, walk_cols/1.1 listed" \
    "shist regressions 2 1 --metric d1_capacity_misses --threshold 50 > $W/sreg; test \$? -eq 1 && grep -q 'walk_cols/1.1' $W/sreg && ! grep -q walk_rows $W/sreg"
check "regressions 1 2 (the D1 grew back): exit 0" \
    "shist regressions 1 2 --metric d1_misses > $W/sreg; test \$? -eq 0 && grep -q 'no object regressed' $W/sreg"
check "regressions by default compare simulated runs by LL misses: the LL did not change, exit 0" \
    "shist regressions > $W/sreg; test \$? -eq 0 && grep -q 'by LL misses (simulated)' $W/sreg"
check "a metric naming no level is a usage error" \
    "shist diff 1 2 --metric x1_misses 2> $W/e; test \$? -eq 2 && test \$(grep -c . $W/e) = 1"
MTOOL_HISTORY="$W/sim.db" "$MTOOL" count --libs none -o "$W/sc" -- "$walks" > /dev/null 2>&1
shist trend walk_cols/1.1 > "$W/strend"
check "trend of walk_cols/1.1 lists the counted run and both simulated runs (102400 D1 misses in run 2)" \
    "grep -Eq '^ +3 +walk_cols/1.1 .* 102400 +' $W/strend && grep -Eq '^ +1 +walk_cols/1.1 ' $W/strend && grep -Eq '^ +2 +walk_cols/1.1 +[^ ]+ +102400 +102400 ' $W/strend"
check "diff of a counted and a simulated run compares nothing (no figure in common)" \
    "shist diff 2 3 > $W/e && grep -q 'unchanged within 5%: 0' $W/e"
shist show 2 > "$W/sshow"
check "show of a simulated run: the machine, per level totals, objects with D1 misses by cause" \
    "grep -q 'simulated machine: .*D1=8K,4,64' $W/sshow && grep -Eq '^  D1 +8192 +4 +64 +[0-9]+ ' $W/sshow && grep -q 'D1 misses' $W/sshow && grep -Eq 'walk_cols/1.1 +walks.c:[0-9]+ +102400 ' $W/sshow"
shist export --csv -o "$W/sim.csv"
check "export --csv: a simulated run's rows carry the miss causes, a counted run's its counts" \
    "python3 -c 'import csv,sys
r = [x for x in csv.DictReader(open(sys.argv[1])) if x[\"procedure\"] == \"walk_cols\" and not x[\"loop_path\"]]
assert [x[\"tool\"] for x in r] == [\"sim\", \"sim\", \"count\"], r
assert int(r[1][\"d1_capacity_misses\"]) >= 97280 and r[1][\"memory_ops\"] == \"\" and r[2][\"d1_capacity_misses\"] == \"\" and int(r[2][\"memory_ops\"]) > 0, r' $W/sim.csv"

# Data objects in trend, diff, regressions and the CSV, on the same two runs:
# walk_cols reads `matrix` by columns, so its D1 misses grow with the 8K D1.
# Each run's report (simN.json) is the oracle of `matrix`'s figures.
matrix_d1() { python3 -c 'import json,sys
o = [x for x in json.load(open(sys.argv[1]))["data_objects"] if x["name"] == "matrix"][0]
print(sum(o["misses"]["D1"].values()), o["use"]["D1"]["lines"], o["use"]["D1"]["bytes_used"])' "$1"; }
m1=$(matrix_d1 "$W/sim1.json") m2=$(matrix_d1 "$W/sim2.json")
shist trend matrix > "$W/dtrend"
check "trend of the data object matrix: runs 1 and 2 with the D1 misses each report gave ($m1 / $m2)" \
    "grep -q '^trend of matrix (data object, global, ' $W/dtrend && grep -q '2 runs' $W/dtrend && grep -Eq \"^ +1 +matrix +global 0x[0-9a-f]+ +[0-9]+ +${m1%% *} \" $W/dtrend && grep -Eq \"^ +2 +matrix +global 0x[0-9a-f]+ +[0-9]+ +${m2%% *} \" $W/dtrend"
check "the oracle moved: matrix's D1 misses grew from run 1 to run 2 by more than 5%" \
    "test ${m2%% *} -gt \$(( ${m1%% *} * 105 / 100 ))"
shist diff 1 2 --metric d1_misses > "$W/ddiff"
check "diff by d1_misses pairs the data objects: matrix regressed, ${m1%% *} -> ${m2%% *}" \
    "sed -n '/^regressed/,/^improved/p' $W/ddiff | grep -Eq \"^ +#[0-9]+ +matrix +global 0x[0-9a-f]+ +${m1%% *} -> ${m2%% *} \""
check "regressions 2 1 by d1_misses: exit 1, matrix listed among the data objects" \
    "shist regressions 2 1 --metric d1_misses > $W/dreg; test \$? -eq 1 && grep -Eq '^ +#[0-9]+ +matrix +global ' $W/dreg"
check "regressions 2 1 by d1_misses, threshold 1000%: exit 0, nothing flagged" \
    "shist regressions 2 1 --metric d1_misses --threshold 1000 > $W/dreg; test \$? -eq 0 && ! grep -q matrix $W/dreg"
check "diff by d1_spatial_use: a percentage per object, no object 'new' or 'gone'" \
    "shist diff 1 2 --metric d1_spatial_use > $W/ddiff2 && grep -q 'by D1 spatial use' $W/ddiff2 && grep -q '^new .*(0):' $W/ddiff2 && grep -q '^gone .*(0):' $W/ddiff2"
check "export --csv: matrix's rows of runs 1 and 2, kind data, with the reports' D1 misses and line use" \
    "python3 -c 'import csv,sys
r = [x for x in csv.DictReader(open(sys.argv[1])) if x[\"data_name\"] == \"matrix\"]
got = [(x[\"run\"], x[\"kind\"], x[\"data_kind\"], \" \".join(str(v) for v in (sum(int(x[\"d1_\" + c + \"_misses\"]) for c in (\"cold\", \"capacity\", \"conflict\")), int(x[\"d1_lines\"]), int(x[\"d1_bytes_used\"])))) for x in r]
want = [(\"1\", \"data\", \"global\", sys.argv[2]), (\"2\", \"data\", \"global\", sys.argv[3])]
assert got == want, (got, want)' $W/sim.csv '$m1' '$m2'"
check "show lists the data objects once, under the levels, not among the code objects" \
    "test \$(shist show 2 | grep -c '^  matrix ') = 1"

# A data object named with an escape sequence (a global's symbol, no DWARF
# to name it otherwise): every line and the CSV print it escaped.
printf 'long t[4096] __asm__("\\"ta\\033[31mble\\"");\nint main(void) { long s = 0; for (int i = 0; i < 4096; i += 8) s += t[i]; return (int)s; }\n' \
    > "$W/hostile.c" && cc -O2 -o "$W/hostile" "$W/hostile.c"
for d1 in 64K,8,64 8K,4,64; do
    MTOOL_HISTORY="$W/hostile.db" "$MTOOL" sim --libs none --D1=$d1 --L2=none -o "$W/hostile.txt" -- "$W/hostile" \
        > /dev/null 2>&1
done
esc=$(printf '\033')
hostile_name=$(printf 'ta\033[31mble')
{ "$MTOOL" history --db "$W/hostile.db" trend "$hostile_name"; "$MTOOL" history --db "$W/hostile.db" show 2
  "$MTOOL" history --db "$W/hostile.db" diff 1 2 --metric d1_misses; "$MTOOL" history --db "$W/hostile.db" export --csv; } \
    > "$W/hostile.out" 2>&1
check "a data object named with an escape byte: trend, show, diff and CSV print it escaped" \
    "! grep -q \"\$esc\" $W/hostile.out && test \$(grep -c 'ta\\\\x1b\\[31mble' $W/hostile.out) -ge 5 && grep -q '^trend of ta.x1b.31mble (data object, global' $W/hostile.out"

# A data object a spreadsheet would take for a formula: the CSV gives its
# name after a ' (and numbers, negative ones too, as they are).
printf 'long t[4096] __asm__("\\"=1+2\\"");\nint main(void) { long s = 0; for (int i = 0; i < 4096; i += 8) s += t[i]; return (int)s; }\n' \
    > "$W/formula.c" && cc -O2 -o "$W/formula" "$W/formula.c"
MTOOL_HISTORY="$W/formula.db" "$MTOOL" sim --libs none --L2=none -o "$W/formula.txt" -- "$W/formula" > /dev/null 2>&1
"$MTOOL" history --db "$W/formula.db" export --csv -o "$W/formula.csv"
check "export --csv: a name starting with = is written after a ' (no formula), numbers as numbers" \
    "python3 -c 'import csv,sys
r = [x for x in csv.DictReader(open(sys.argv[1])) if x[\"data_kind\"] == \"global\"]
assert [x[\"data_name\"] for x in r if \"1+2\" in x[\"data_name\"]] == [\"\x27=1+2\"], r
assert all(not x[\"sim_refs\"] or float(x[\"sim_refs\"]) >= 0 for x in r)' $W/formula.csv"

# Data objects: heap's, traced, then the same source rebuilt at -O1 under the
# same file name: the history matches the builds, and each data object of
# the same name (heap sites with their call paths, globals, frames) is the
# same object in both.
heap_bin="$SAMPLES_SIM/heap-gcc-O2"
mkdir -p "$W/rebuilt"
cc -O1 -g -o "$W/rebuilt/heap-gcc-O2" samples/heap.c
for b in "$heap_bin" "$W/rebuilt/heap-gcc-O2"; do
    MTOOL_HISTORY="$W/data.db" "$MTOOL" sim --libs none --json -o "$W/data.json" -- "$b" > /dev/null 2>&1
done
dsql() { "$MTOOL" history --db "$W/data.db" sql "$1" | tail -n +2; }
check "data objects stored per run; a rebuild's of the same name are the same objects (heap sites, globals, frames)" \
    "test \"\$(dsql \"SELECT count(*) FROM data_sites a JOIN data_sites b ON a.name = b.name AND a.program_id < b.program_id WHERE a.object_id = b.object_id AND (a.kind = 'heap' OR a.kind = 'global' OR a.kind = 'stack')\")\" -ge 4 &&
     test \"\$(dsql \"SELECT count(*) FROM data_sites a JOIN data_sites b ON a.name = b.name AND a.program_id < b.program_id WHERE a.object_id <> b.object_id\")\" = 0 &&
     test \"\$(dsql \"SELECT count(DISTINCT run_id) FROM sim_figures WHERE data_site_id IS NOT NULL\")\" = 2"
"$MTOOL" history --db "$W/data.db" show last > "$W/dshow"
check "show of a traced run lists its data objects, the heap site that misses first, with its call path" \
    "sed -n '/data objects/,/^\$/p' $W/dshow | sed -n 3p | grep -Eq '^  malloc@fill_first:[0-9]+ <- main.* heap +[0-9]+ '"

# --trace FILE --binary BIN: a din trace by hand, at walk_rows' entry (link-
# time address: din traces are not relocated): a fetch there, then reads of
# lines 0x10000, 0x10040, 0x10000 again: I1 1 cold miss, D1 2 cold misses.
rows_at=$(nm "$walks" | awk '$3 == "walk_rows" { print $1 }')
printf '2 %s 4\n0 10000 8\n0 10040 8\n0 10000 8\n' "$rows_at" > "$W/hand.din"
MTOOL_HISTORY="$W/sim.db" "$MTOOL" sim --trace "$W/hand.din" --binary "$walks" --I1=8K,4,64 \
    --D1=8K,4,64 --L2=none -o "$W/sx.txt" 2> "$W/hand.err"
check "a din trace with --binary is stored: walk_rows 4 references, I1 1 cold, D1 2 cold misses, 2 lines of which 16 bytes used" \
    "test \"\$(ssql \"SELECT f.refs || ' ' || f.i1_cold || ' ' || f.d1_cold || ' ' || (f.d1_capacity + f.d1_conflict) || ' ' || ifnull(f.l2_cold, '-') || ' ' || r.ran || ' ' || f.d1_lines || ' ' || f.d1_bytes_used FROM sim_figures f JOIN sites s ON s.id = f.site_id JOIN runs r ON r.id = f.run_id WHERE r.id = 4 AND s.procedure = 'walk_rows' AND s.loop_path IS NULL\")\" = '4 1 2 0 - 0 2 16'"
check "trend of walk_rows shows the hand trace's D1 spatial use: 16 of 128 bytes, 12.5%" \
    "shist trend walk_rows | grep -Eq '^ +4 +walk_rows .* 12.5% '"
check "show of a trace run: nothing ran" "shist show 4 | grep -q 'a trace file simulated, nothing ran'"
MTOOL_HISTORY="$W/trace-first.db" "$MTOOL" sim --trace "$W/hand.din" --binary "$walks" \
    --D1=8K,4,64 -o "$W/sx.txt" 2> /dev/null
check "a build first stored by a trace run has its sites' source lines (walk_rows at walks.c)" \
    "\"$MTOOL\" history --db $W/trace-first.db show 1 | grep -Eq ' walk_rows +walks.c:[0-9]+ +4 '"
MTOOL_HISTORY="$W/sim.db" "$MTOOL" sim --trace "$W/hand.din" --D1=8K,4,64 -o "$W/sx.txt" 2> "$W/e"
check "a trace without --binary is not stored (no program to file it under)" \
    "! grep -q stored $W/e && test \"\$(ssql 'SELECT count(*) FROM runs')\" = 4"

# The simulated TLBs stored (schema 10), a hand trace: a fetch at walk_rows,
# reads of pages 0x10 0x11 0x12 0x10; a fetch outside the binary (0x900000),
# one at walk_cols (walk_rows' page), reads of pages 0x10 and 0x13.  TLB1 of
# 2 entries (LRU), no TLB2: walk_rows 4 misses (page 0x12 evicts 0x10),
# walk_cols 1 (0x10 still held, 0x13 new); each a page walk.  ITLB of 1:
# every fetch misses (walk_rows 1, walk_cols 1).  Run 2: TLB1 of 4 entries,
# walk_rows 3 walks.
cols_at=$(nm "$walks" | awk '$3 == "walk_cols" { print $1 }')
printf '2 %s 4\n0 10000 8\n0 11000 8\n0 12000 8\n0 10000 8\n2 900000 4\n2 %s 4\n0 10008 8\n0 13000 8\n' \
    "$rows_at" "$cols_at" > "$W/tlb.din"
for tlb1 in 2,2 4,4; do
    MTOOL_HISTORY="$W/tlb.db" "$MTOOL" sim --trace "$W/tlb.din" --binary "$walks" --I1=8K,4,64 \
        --D1=8K,4,64 --L2=none --TLB1=$tlb1 --TLB2=none --ITLB=1,1 -o "$W/sx.txt" 2> "$W/tlb.err"
done
tsql() { "$MTOOL" history --db "$W/tlb.db" sql "$1" | tail -n +2; }
tlb_of() { tsql "SELECT f.tlb1_misses || ' ' || ifnull(f.tlb2_misses, '-') || ' ' || f.page_walks || ' ' || f.itlb_misses || ' ' || ifnull(f.walk_cycles, '-') FROM sim_figures f JOIN sites s ON s.id = f.site_id WHERE f.run_id = $1 AND s.procedure = '$2' AND s.loop_path IS NULL"; }
check "TLB figures stored per code object: walk_rows 4 TLB1 misses, no TLB2, 4 walks, 1 ITLB miss; walk_cols 1 1 (no profile: no walk cycles)" \
    "test \"\$(tlb_of 1 walk_rows)\" = '4 - 4 1 -' && test \"\$(tlb_of 1 walk_cols)\" = '1 - 1 1 -' && test \"\$(tlb_of 2 walk_rows)\" = '3 - 3 1 -'"
check "the run's TLB levels stored: TLB1 6 translations 5 misses, ITLB 3 fetches 3 misses" \
    "test \"\$(tsql \"SELECT group_concat(level || ' ' || entries || ' ' || ways || ' ' || page || ' ' || refs || ' ' || misses, ', ') FROM sim_tlb_levels WHERE run_id = 1\")\" = 'TLB1 2 2 4096 6 5, ITLB 1 1 4096 3 3'"
check "the data objects' walks add up to the run's (5), no ITLB misses of data" \
    "test \"\$(tsql 'SELECT sum(page_walks) || \" \" || count(itlb_misses) FROM sim_figures WHERE run_id = 1 AND data_site_id IS NOT NULL')\" = '5 0'"
"$MTOOL" history --db "$W/tlb.db" diff 1 2 --metric page_walks > "$W/tdiff" 2>&1
check "diff 1 2 by page_walks: walk_rows improved (4 -> 3), walk_cols unchanged" \
    "grep -q 'by page_walks (simulated TLB)' $W/tdiff && sed -n '/^improved/,/^unchanged/p' $W/tdiff | grep -Eq '^ +#[0-9]+ +walk_rows +walks.c:[0-9]+ +4 -> 3 ' && ! sed -n '/^regressed/,/^unchanged/p' $W/tdiff | grep -q walk_cols"
check "regressions 1 2 by page_walks: exit 1, walk_rows; by itlb_misses: exit 0" \
    "\"$MTOOL\" history --db $W/tlb.db regressions 1 2 --metric page_walks > $W/treg; test \$? -eq 1 && grep -q 'walk_rows ' $W/treg && \"$MTOOL\" history --db $W/tlb.db regressions 1 2 --metric itlb_misses > /dev/null"
"$MTOOL" history --db "$W/tlb.db" show 1 > "$W/tshow"
"$MTOOL" history --db "$W/tlb.db" export --json -o "$W/tlb.json"
check "show lists the TLB levels; export has each object's TLB figures" \
    "grep -Eq '^  TLB1 +2 +2 +4K +6 +5\$' $W/tshow && grep -Eq '^  ITLB +1 +1 +4K +3 +3\$' $W/tshow && python3 -c 'import json,sys
r = json.load(open(sys.argv[1]))[0]
t = {o[\"procedure\"]: o[\"simulated\"][\"tlb\"] for o in r[\"objects\"] if o[\"kind\"] == \"procedure\"}
sys.exit(t[\"walk_rows\"] != {\"tlb1_misses\": 4, \"page_walks\": 4, \"itlb_misses\": 1} or len(r[\"simulated\"][\"tlb_levels\"]) != 2)' $W/tlb.json"

# A history that cannot be written: sim says so on its own line, keeps its
# report and exits with the program's status (3), as count does.
mkdir "$W/simdir.db"
printf 'int main(void) { return 3; }\n' > "$W/sim_exit3.c" && cc -O1 -o "$W/sim_exit3" "$W/sim_exit3.c"
MTOOL_HISTORY="$W/simdir.db" "$MTOOL" sim --libs none --D1=8K,4,64 -o "$W/sim_exit3.txt" -- "$W/sim_exit3" \
    > /dev/null 2> "$W/e"
check "sim into a directory as the history: exit 3 as the program, 'run not stored', report kept" \
    "test $? -eq 3 && grep -q '^mtool: history: .*simdir.db: is a directory.*run not stored' $W/e && grep -q '^D1 ' $W/sim_exit3.txt"

# A program whose file name holds an escape byte: every line mtool prints
# about it has \x1b instead.
cp "$walks" "$W/wa${esc}lks" && printf x >> "$W/wa${esc}lks" # another build: its own name
MTOOL_HISTORY="$W/sim.db" "$MTOOL" sim --libs none --D1=8K,4,64 -o "$W/sx.txt" -- "$W/wa${esc}lks" > /dev/null 2>&1
{ shist list; shist show last; shist trend --program "wa${esc}lks" walk_cols; shist diff 2 last; } > "$W/esc.out" 2>&1
check "a program named with an escape byte: list, show, trend and diff print it escaped" \
    "! grep -q \"\$esc\" $W/esc.out && grep -q 'wa\\\\x1blks' $W/esc.out && grep -Eq '^ +5 +walk_cols ' $W/esc.out"

# ---- a version-4 history migrated ------------------------------------------------------------
# tests/history/v4.sql: made by the mtool before version 5 (count and time
# runs of tests/history/loops.c).  Its own rows are the oracle: every figure
# and object kept; a simulated run then joins the counted and timed ones in
# the loop's trend.
python3 -c 'import sqlite3,sys; c = sqlite3.connect(sys.argv[2]); c.executescript(open(sys.argv[1]).read()); c.close()' \
    tests/history/v4.sql "$W/v4.db"
# Version 7 added columns to runs (NULL in the migrated rows, checked below):
# its rows are compared on version 4's columns.
v4_rows() { python3 -c 'import sqlite3,sys
c = sqlite3.connect(sys.argv[1])
runs = "id, program_id, tool, finished, command_line, arguments, cwd, machine, mtool_version, " \
       "ran, exit_status, user_s, sys_s, wall_s, base_user_s, base_sys_s, base_wall_s, " \
       "memory_ops, instructions, nobjects"
for t in ("* FROM figures ORDER BY run_id, site_id", "* FROM objects ORDER BY id",
          "* FROM sites ORDER BY id", runs + " FROM runs ORDER BY id"):
    for r in c.execute("SELECT " + t): print(t.split(" FROM ")[1].split()[0], *r)' "$W/v4.db"; }
v4_version() { python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("PRAGMA user_version").fetchone()[0])' "$W/v4.db"; }
v4_rows > "$W/v4.before"
before_version=$(v4_version)
"$MTOOL" history --db "$W/v4.db" list > "$W/v4.list" 2> "$W/e"
v4_rows > "$W/v4.after"
check "the version-4 file as made: version 4 ($before_version), 3 runs (count, count, time), 24 figures" \
    "test '$before_version' = 4 && test \$(grep -c '^figures ' $W/v4.before) = 24 && test \$(grep -c '^runs ' $W/v4.before) = 3 && test \$(grep -c 'mtool count\\|mtool time' $W/v4.list) = 3"
check "migrated to version 10: every figure, object, site and run kept as it was, no run with a run directory" \
    "! test -s $W/e && test \$(v4_version) = 10 && cmp -s $W/v4.before $W/v4.after && test \"\$(\"$MTOOL\" history --db $W/v4.db sql 'SELECT count(*) FROM runs WHERE rundir IS NOT NULL OR rundir_stamp IS NOT NULL OR predicted_cycles IS NOT NULL' | tail -1)\" = 0"
check "migrated: integrity ok, the simulated tables there and empty" \
    "test \"\$(\"$MTOOL\" history --db $W/v4.db sql \"PRAGMA integrity_check; SELECT count(*) FROM sim_figures; SELECT count(*) FROM sim_runs; SELECT count(*) FROM data_sites\" | grep -v -e '^integrity' -e '^count' | tr '\\n' ' ')\" = 'ok 0 0 0 '"
MTOOL_HISTORY="$W/v4.db" "$MTOOL" sim --libs none --D1=8K,4,64 -o "$W/sx.txt" -- "$W/loops" 7 1000 > /dev/null 2>&1
"$MTOOL" history --db "$W/v4.db" trend work/1.1 > "$W/v4.trend"
check "trend of work/1.1 after the migration: the two counted runs, the timed one, then the simulated one (14000 references: a load and a store of sink per iteration)" \
    "grep -Eq '^ +1 +work/1.1 ' $W/v4.trend && grep -Eq '^ +3 +work/1.1 ' $W/v4.trend && grep -Eq '^ +4 +work/1.1 +[^ ]+ +14000 ' $W/v4.trend && grep -q 'D1 misses' $W/v4.trend"

# ---- gc ------------------------------------------------------------------------------------
cp "$W/h.db" "$W/gc.db"
check "gc --keep 2 removes 2 runs" "\"$MTOOL\" history --db $W/gc.db gc --keep 2 | grep -q 'removed 2 runs'"
check "gc: 2 runs left, orphans gone, integrity ok" \
    "test \"\$(\"$MTOOL\" history --db $W/gc.db sql 'SELECT count(*) FROM runs; SELECT count(*) FROM programs WHERE id NOT IN (SELECT program_id FROM runs); PRAGMA integrity_check' | grep -v -e '^count' -e '^integrity' | tr '\\n' ' ')\" = '2 0 ok '"
check "gc: trend still follows the loop over the runs left" \
    "test \$(\"$MTOOL\" history --db $W/gc.db trend matmul_rows/1.1.1 | grep -c '^ *[34] ') = 2"
check "gc of a missing database is an error and creates nothing" \
    "! \"$MTOOL\" history --db $W/none.db gc 2>/dev/null && test ! -e $W/none.db"

# ---- concurrent writers --------------------------------------------------------------------
# 8 processes, 3 runs each, all starting on a database that does not exist yet.
export MTOOL_HISTORY="$W/conc.db"
for p in 1 2 3 4 5 6 7 8; do
    (for k in 1 2 3; do "$MTOOL" count --no-baseline --profiles "$W/r1/profiles" -- "$W/v1/matmul" > /dev/null 2>> "$W/conc.$p" || echo "FAILED $p $k" >> "$W/conc.$p"; done) &
done
wait
check "concurrent writers: all 24 runs stored, no writer failed" \
    "! grep -h -e FAILED -e 'mtool:' $W/conc.* && test \"\$(sql 'SELECT count(*) FROM runs')\" = 24"
check "concurrent writers: every run complete, one build, integrity ok" \
    "test \"\$(sql 'SELECT count(*) FROM runs r WHERE nobjects <> (SELECT count(*) FROM figures f WHERE f.run_id = r.id) OR nobjects <> $nobj; SELECT count(*) FROM programs; PRAGMA integrity_check' | grep -v -e '^count' -e '^integrity' | tr '\\n' ' ')\" = '0 1 ok '"
check "concurrent writers: run ids 1-24 each stored once" \
    "test \"\$(sql 'SELECT min(id) || \" \" || max(id) || \" \" || count(DISTINCT id) FROM runs')\" = '1 24 24'"

# ---- damaged and foreign files ---------------------------------------------------------------
export MTOOL_HISTORY="$W/h.db"
cp "$W/h.db" "$W/damaged.db"
size=$(stat -c %s "$W/damaged.db")
# Overwrite every page after the first two with garbage (the header stays valid).
dd if=/dev/urandom of="$W/damaged.db" bs=4096 seek=2 count=$((size / 4096 - 2)) conv=notrunc 2>/dev/null
cp "$W/damaged.db" "$W/damaged.orig"
damaged_case() {
    "$MTOOL" history --db "$W/damaged.db" "$@" > "$W/o" 2> "$W/e"
    rc=$?
    if [ $rc -ne 0 ] && [ "$(grep -c . "$W/e")" = 1 ] && grep -q 'damaged.db: damaged history database' "$W/e" &&
        ! [ -s "$W/o" ]; then
        ok "history: damaged database: 'history $*' fails in one line naming the file"
    else
        not_ok "history: damaged database: 'history $*' fails in one line naming the file (exit $rc)"
        head -3 "$W/e" "$W/o" | sed 's/^/# /'
    fi
}
damaged_case list
damaged_case show 1
damaged_case trend matmul_rows
damaged_case sql 'SELECT sum(memory_ops) FROM figures'
damaged_case export --csv
check "damaged database: no -wal or -shm left beside it by the read-only commands refusing it" \
    "test ! -e $W/damaged.db-wal && test ! -e $W/damaged.db-shm"
MTOOL_HISTORY="$W/damaged.db" "$MTOOL" count --libs none -o "$W/rd" -- "$W/v1/matmul" > /dev/null 2> "$W/e"
check "damaged database: count reports it in one line, keeps its own output, exits 0 as the program" \
    "test $? -eq 0 && grep -c 'damaged' $W/e | grep -qx 1 && grep -q 'run not stored' $W/e && test -s $W/rd/counts.tsv"
# A program exiting with 3: count's status is the program's even when
# storing fails (README, "Exit status").
printf 'int main(void) { return 3; }\n' > "$W/exit3.c" && cc -O1 -o "$W/exit3" "$W/exit3.c"
MTOOL_HISTORY="$W/damaged.db" "$MTOOL" count --libs none -o "$W/rd2" -- "$W/exit3" > /dev/null 2> "$W/e"
check "damaged database: count exits with the program's status (3), says 'run not stored' apart" \
    "test $? -eq 3 && grep -q '^mtool: history: .*damaged.db: damaged history database.*run not stored' $W/e"
check "damaged database: never overwritten" "cmp -s $W/damaged.db $W/damaged.orig"

# One damaged page that a store would not read: the quick_check before
# writing finds it (oracle: SQLite's own quick_check through Python).
quick_check() { python3 -c 'import sqlite3, sys; c = sqlite3.connect("file:" + sys.argv[1] + "?immutable=1", uri=True); print(c.execute("PRAGMA quick_check").fetchone()[0])' "$1" 2>&1; }
npages=$(($(stat -c %s "$W/h.db") / 4096))
page=$((npages / 2))
while [ "$page" -lt "$npages" ]; do
    cp "$W/h.db" "$W/onepage.db"
    dd if=/dev/urandom of="$W/onepage.db" bs=4096 seek="$page" count=1 conv=notrunc 2>/dev/null
    [ "$(quick_check "$W/onepage.db")" != ok ] && break
    page=$((page + 1))
done
cp "$W/onepage.db" "$W/onepage.orig"
MTOOL_HISTORY="$W/onepage.db" "$MTOOL" count --libs none -o "$W/rd3" -- "$W/exit3" > /dev/null 2> "$W/e"
check "one damaged page (page $page of $npages, SQLite's quick_check fails): count refuses to store, names the file, exits 3" \
    "test $? -eq 3 && test \"\$(quick_check $W/onepage.orig)\" != ok && grep -q 'onepage.db: damaged history database (quick_check: ' $W/e && test \$(grep -c . $W/e) -ge 1 && cmp -s $W/onepage.db $W/onepage.orig"

# A header no SQLite writes (max payload fraction 7, read version 3): the
# same wording as any other damage.
for poke in "21 007" "19 003"; do
    cp "$W/h.db" "$W/header.db"
    printf "\\${poke#* }" | dd of="$W/header.db" bs=1 seek="${poke% *}" conv=notrunc 2>/dev/null
    check "header byte ${poke% *} garbled: 'damaged history database' in one line, no -wal/-shm" \
        "! \"$MTOOL\" history --db $W/header.db list 2> $W/e && test \$(grep -c . $W/e) = 1 && grep -q 'header.db: damaged history database' $W/e && test ! -e $W/header.db-wal && test ! -e $W/header.db-shm"
done

# A directory as the database.
mkdir "$W/dir.db"
MTOOL_HISTORY="$W/dir.db" "$MTOOL" count --libs none -o "$W/rd4" -- "$W/exit3" > /dev/null 2> "$W/e"
check "a directory as the history: 'is a directory', count exits 3" \
    "test $? -eq 3 && grep -q 'dir.db: is a directory' $W/e"

# A history in a read-only directory (as root, only a read-only mount
# refuses writes: a bind mount in a user and mount namespace, else a
# non-root user in a directory it cannot write).
mkdir "$W/ro" "$W/pub"
cp "$W/h.db" "$W/ro/h.db"
chmod 1777 "$W/pub"
RO_LIST="\"$MTOOL\" history --db $W/ro/h.db list > $W/pub/list 2> $W/pub/list.err; echo \$? > $W/pub/list.rc; XDG_CACHE_HOME=$W/pub/cache MTOOL_HISTORY=$W/ro/h.db \"$MTOOL\" count --no-baseline -o $W/pub/run -- $W/exit3 > /dev/null 2> $W/pub/count.err; echo \$? > $W/pub/count.rc"
RO_MOUNT="mount --bind $W/ro $W/ro && mount -o remount,bind,ro $W/ro && ! touch $W/ro/x 2> /dev/null"
if unshare -rm sh -c "$RO_MOUNT" 2> /dev/null; then
    ro_how="read-only bind mount"
    unshare -rm sh -c "$RO_MOUNT && $RO_LIST"
elif command -v setpriv > /dev/null && [ "$(id -u)" -eq 0 ]; then
    ro_how="user nobody"
    chmod 755 "$W" && chmod 555 "$W/ro" && chmod 644 "$W/ro/h.db" && chmod -R a+rX "$W/config"
    setpriv --reuid=nobody --regid=nogroup --clear-groups sh -c "$RO_LIST"
else
    ro_how="user $(id -un)"
    chmod 555 "$W/ro"
    sh -c "$RO_LIST"
fi
chmod 755 "$W/ro"
check "read-only directory ($ro_how): history list reads every run, leaves no -wal/-shm" \
    "test \$(cat $W/pub/list.rc) = 0 && test \$(grep -c 'mtool count' $W/pub/list) = 4 && test ! -e $W/ro/h.db-wal && test ! -e $W/ro/h.db-shm"
check "read-only directory ($ro_how): count exits 3 and says it cannot store" \
    "test \$(cat $W/pub/count.rc) = 3 && grep -q 'ro/h.db: cannot store: ' $W/pub/count.err && cmp -s $W/ro/h.db $W/h.db"
printf 'not a database at all\n' > "$W/text.db"
MTOOL_HISTORY="$W/text.db" "$MTOOL" count --libs none -o "$W/rt" -- "$W/v1/matmul" > /dev/null 2> "$W/e"
check "text file as history: one error line, untouched" \
    "grep -q 'text.db: damaged history database' $W/e && test \"\$(cat $W/text.db)\" = 'not a database at all'"
sqlite3 "$W/other.db" 'CREATE TABLE notes(x); INSERT INTO notes VALUES (1);' 2>/dev/null ||
    python3 -c 'import sqlite3,sys; c = sqlite3.connect(sys.argv[1]); c.execute("CREATE TABLE notes(x)"); c.commit()' "$W/other.db"
cp "$W/other.db" "$W/other.orig"
check "another application's database: refused in one line, untouched" \
    "\"$MTOOL\" history --db $W/other.db list 2> $W/e; test \$? -eq 1 && grep -q 'not an mtool history' $W/e && cmp -s $W/other.db $W/other.orig"
check "missing database: one line, nothing created" \
    "\"$MTOOL\" history --db $W/missing.db list 2> $W/e; test \$? -eq 1 && grep -q 'no history yet' $W/e && test ! -e $W/missing.db"
check "help history documents every command" \
    "for c in list show trend diff regressions sql export gc; do \"$MTOOL\" help history | grep -q \"^  \$c\" || exit 1; done"
print_totals
