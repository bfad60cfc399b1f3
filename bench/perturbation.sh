#!/bin/sh
# bench/perturbation.sh — `make bench`: how much pass 2's timers slow the
# program they measure.  For each pass-2 sample: `mtool run` builds the timed
# copy (the m-objects it selects, timers only, no counters); then the
# original and the timed copy run alternately, 11 times each, and the median
# wall times are compared (the least is shown too): a lucky run (the
# physical pages a memory-bound program gets can move its time by several
# percent) should not decide.  Goal: the timed copy within 2% of the
# original.
#
#   MTOOL=build/mtool BENCH_DIR=build/bench SAMPLES2=build/samples-pass2 sh bench/perturbation.sh
set -eu
cd "$(dirname "$0")/.."
MTOOL=${MTOOL:-build/mtool}
B=${BENCH_DIR:-build/bench}/perturbation
SAMPLES2=${SAMPLES2:-build/samples-pass2}
rm -rf "$B"
mkdir -p "$B"
B=$(cd "$B" && pwd)
export XDG_CACHE_HOME="$B/cache" MTOOL_HISTORY="$B/history.db"

wall() { # least wall seconds of one run of "$@", from /usr/bin/time-free shell timing
    python3 -c 'import subprocess, sys, time
t = time.perf_counter(); subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL); print(time.perf_counter() - t)' "$@"
}

echo "bench: pass-2 perturbation (median wall time of 11 alternating runs, least in brackets; goal: timed within 2%)"
printf '  %-20s %18s %18s %8s %8s\n' sample original timed ratio objects
worst=0
for bin in "$SAMPLES2"/*; do
    name=$(basename "$bin")
    "$MTOOL" run --no-store -o "$B/$name" -- "$bin" > "$B/$name.out" 2> "$B/$name.err"
    timed=$(find "$B/cache/mtool/instrumented" -path '*-t*' -name "$name" | head -1)
    nobj=$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["objects"]))' "$B/$name/report.json")
    : > "$B/$name.orig" ; : > "$B/$name.timed"
    for i in 1 2 3 4 5 6 7 8 9 10 11; do
        wall "$bin" >> "$B/$name.orig"
        MTOOL_OUT="$B/$name.profiles" wall "$timed" >> "$B/$name.timed"
        rm -rf "$B/$name.profiles"
    done
    o=$(sort -g "$B/$name.orig" | sed -n 6p) ol=$(sort -g "$B/$name.orig" | head -1)
    t=$(sort -g "$B/$name.timed" | sed -n 6p) tl=$(sort -g "$B/$name.timed" | head -1)
    r=$(awk -v o="$o" -v t="$t" 'BEGIN { printf "%.3f", t / o }')
    printf '  %-20s %8.3fs [%.3fs] %8.3fs [%.3fs] %7sx %8s\n' "$name" "$o" "$ol" "$t" "$tl" "$r" "$nobj"
    worst=$(awk -v w="$worst" -v r="$r" 'BEGIN { print (r > w ? r : w) }')
done
awk -v w="$worst" 'BEGIN { printf "  worst ratio %.3f: %s (goal <= 1.02)\n", w, w <= 1.02 ? "PASS" : "MISSED" }'
