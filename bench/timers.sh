#!/bin/sh
# bench/timers.sh — the cost of one pass-2 timer start/stop pair against its
# physical floor, measured in one run (bench/timer_pair.c): a loop calling a
# small procedure, instrumented with block counters and then also timed; the
# difference per call is one pair (the inline events, two TSC
# reads).  Floors: two plain `rdtsc` (what the runtime uses) and two
# `lfence; rdtsc`.  Ticks become core cycles through a chain of dependent
# `imul %reg,%reg` (3 cycles each) timed in the same run, checked against a
# chain of dependent `add %reg,%reg` (1 cycle; never `add $1,%reg`, which
# Intel's Golden Cove family folds at rename).  Each figure: median of 5
# processes, each the minimum of 15 repetitions (timer_pair.c); the spread is
# min-max over the 5.
# Every figure comes from the timed copy except the counted call loop, and
# the processes alternate, so a burst of load on the machine hits both.
#
#   MTOOL=build/mtool BENCH_DIR=build/bench DUMP_TIMERS=build/tests/dump_timers sh bench/timers.sh
set -eu
cd "$(dirname "$0")/.."
MTOOL=${MTOOL:-build/mtool}
DUMP=${DUMP_TIMERS:-build/tests/dump_timers}
B=${BENCH_DIR:-build/bench}/timers
rm -rf "$B"
mkdir -p "$B/profiles"
export MTOOL_OUT="$B/profiles"
cc -O2 -g -o "$B/tp" bench/timer_pair.c
"$MTOOL" instrument --counts "$B/tp" -o "$B/tp-counts" > /dev/null 2>&1
"$MTOOL" instrument --counts --time timed "$B/tp" -o "$B/tp-timed" > /dev/null 2>&1

for i in 1 2 3 4 5; do
    "$B/tp" call | sed 's/^/native-/'
    MTOOL_OUT=$B/counts-profiles "$B/tp-counts" call | sed 's/^/counted-/'
    "$B/tp-timed" | sed 's/^/timed-/'
done > "$B/runs"
# stat NAME: "median min max" over the 5 processes.
stat() {
    awk -v n="$1" '$1 == n {print $2}' "$B/runs" | sort -n |
        awk '{v[NR] = $1} END {printf "%s %s %s\n", v[3], v[1], v[5]}'
}
native=$(stat native-call)
counts=$(stat counted-call)
timed=$(stat timed-call)
floor=$(stat timed-rdtsc2)
lfence=$(stat timed-lfence2)
cycle=$(stat timed-cycle)
cycleadd=$(stat timed-cycleadd)
# What the timers themselves report for `timed` (all its calls, 5 processes):
# inclusive ticks per entry, the residual bias a report must subtract.
bias=$("$DUMP" "$B/tp-timed" "$B/profiles" | awk '{printf "%.1f", $6 / $4}')
# ... and what the runtime measured at start-up (the bias reports subtract).
calibrated=$("$DUMP" "$B/tp-timed" "$B/profiles" bias)
echo "timer start/stop pair (TSC ticks per pair; median [min-max] of 5 runs):"
echo "$native $counts $timed $floor $lfence $cycle $bias $calibrated $cycleadd" | awk '{
    pair = $7 - $4; lo = $8 - $6; hi = $9 - $5; r = $16
    printf "  call loop: native %.1f, counted %.1f, counted+timed %.1f ticks per call\n", $1, $4, $7
    printf "  pair: %.1f ticks [%.1f-%.1f] = %.1f core cycles (%.3f ticks per cycle in this run)\n", pair, lo, hi, pair / r, r
    printf "  clock: %.3f ticks per cycle from dependent imul chains, %.3f from dependent add %%reg,%%reg chains (ratio %.3f%s)\n", r, $21, r / $21, (r / $21 > 1.05 || r / $21 < 0.95) ? ": they disagree, cycle figures are doubtful" : ""
    printf "  floor, two rdtsc: %.1f ticks [%.1f-%.1f] = %.1f cycles; two lfence;rdtsc: %.1f ticks = %.1f cycles\n", $10, $11, $12, $10 / r, $13, $13 / r
    printf "  bookkeeping beyond the floor: %.1f cycles (goal: at most 15)\n", (pair - $10) / r
    printf "  measured inclusive time per entry of the 1-line procedure: %.1f ticks; the runtime'"'"'s own start-up calibration (empty objects, what reports subtract): %.1f ticks\n", $19, $20
}'
