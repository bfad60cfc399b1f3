#!/bin/sh
# bench/history.sh — `make bench`: the run history with 10,000 stored runs.
# Goals (issue 6): `history trend` and `history diff` answer in under 100 ms;
# storing one run adds under 50 ms to `mtool count`.  Every figure is a
# median of 11 wall-clock runs of the real command line in this run, with
# the min-max spread; the store cost is the difference of the medians of
# `mtool count --profiles` with and without --no-store, interleaved.  CPU
# (user + system) medians are printed too: the machine is shared.
#
#   MTOOL=build/mtool BENCH_DIR=build/bench sh bench/history.sh
set -eu
cd "$(dirname "$0")/.."
MTOOL=${MTOOL:-build/mtool}
B=${BENCH_DIR:-build/bench}
BUILD=$(dirname "$MTOOL")
NRUNS=${NRUNS:-10000}
mkdir -p "$B"
cc -std=c11 -O2 -Wall -Wextra -I. -I/usr/include/libdwarf -o "$B/history_fill" bench/history_fill.c \
    "$BUILD/libmtool.a" -lcapstone -lZydis -ldwarf -lelf -lnettle -lsqlite3 -lz -lm

# The stored program is mtool itself (hundreds of procedures and loops).
PROG=$B/hist-prog
cp "$MTOOL" "$PROG"
DB=$B/history-bench.db
rm -f "$DB" "$DB-wal" "$DB-shm"
echo "bench: history with $NRUNS runs of $PROG"
"$B/history_fill" "$DB" "$PROG" "$NRUNS"
export XDG_CACHE_HOME="$B/hist-cache"
rm -rf "$B/hist-run"
"$MTOOL" count --no-store --no-baseline -o "$B/hist-run" -- "$PROG" --version > /dev/null 2>&1

# median_ms CMD...: 11 runs; prints "MEDIAN MIN MAX" in milliseconds.
# times_ms CMD...: 11 runs, "WALL_MS CPU_MS" each (CPU = user + system: the
# machine is shared, so wall time includes waiting for other processes).
times_ms() { for i in 1 2 3 4 5 6 7 8 9 10 11; do
    /usr/bin/time -f '%e %U %S' -o "$B/hist-time" "$@" > /dev/null 2>&1
    awk '{printf "%.1f %.1f\n", $1 * 1000, ($2 + $3) * 1000}' "$B/hist-time"; done; }
stats() { awk '{print $1 > "'"$B"'/hist-w"; print $2 > "'"$B"'/hist-c"}'
    w=$(sort -n "$B/hist-w" | awk '{v[NR] = $1} END {printf "%.1f %.1f %.1f", v[6], v[1], v[11]}')
    c=$(sort -n "$B/hist-c" | awk '{v[NR] = $1} END {printf "%.1f", v[6]}')
    echo "$w $c"; }

trend=$(times_ms "$MTOOL" history --db "$DB" trend main | stats)
rows=$("$MTOOL" history --db "$DB" trend main | grep -c '^ *[0-9]')
diff_far=$(times_ms "$MTOOL" history --db "$DB" diff 1 "$NRUNS" | stats)
diff_near=$(times_ms "$MTOOL" history --db "$DB" diff last~1 last | stats)

# Storing: the same `mtool count --profiles` with and without the history,
# interleaved so both see the same load.
: > "$B/hist-store"; : > "$B/hist-nostore"
once() { /usr/bin/time -f '%e %U %S' -o "$B/hist-time" "$@" > /dev/null 2>&1
    awk '{printf "%.1f %.1f\n", $1 * 1000, ($2 + $3) * 1000}' "$B/hist-time"; }
for i in 1 2 3 4 5 6 7 8 9 10 11; do
    MTOOL_HISTORY="$DB" once "$MTOOL" count --no-baseline --profiles "$B/hist-run/profiles" -- "$PROG" >> "$B/hist-store"
    MTOOL_HISTORY="$DB" once "$MTOOL" count --no-store --no-baseline --profiles "$B/hist-run/profiles" -- "$PROG" >> "$B/hist-nostore"
done
store=$(stats < "$B/hist-store")
nostore=$(stats < "$B/hist-nostore")
stored=$("$MTOOL" history --db "$DB" sql 'SELECT count(*) FROM runs' | tail -1)
[ "$stored" -eq $((NRUNS + 11)) ] || { echo "bench: expected $((NRUNS + 11)) runs, found $stored"; exit 1; }

echo "$trend|$rows|$diff_far|$diff_near|$store|$nostore" | awk -F'|' -v n="$NRUNS" '
function row(name, s, goal,   f) { split(s, f, " "); printf "  %-44s wall %7.1f ms (min %.1f, max %.1f), cpu %6.1f ms; goal < %d ms: %.2fx %s\n", name, f[1], f[2], f[3], f[4], goal, f[1] / goal, (f[1] < goal ? "PASS" : "MISS") }
{
    printf "  (medians of 11 wall-clock runs of the command line, with %d runs stored)\n", n
    row("history trend main (" $2 " runs shown)", $1, 100)
    row("history diff 1 " n " (first build vs last build)", $3, 100)
    row("history diff last~1 last", $4, 100)
    split($5, s, " "); split($6, o, " ")
    printf "  %-44s wall %7.1f ms (min %.1f, max %.1f), cpu %6.1f ms\n", "count --profiles, stored", s[1], s[2], s[3], s[4]
    printf "  %-44s wall %7.1f ms (min %.1f, max %.1f), cpu %6.1f ms\n", "count --profiles --no-store", o[1], o[2], o[3], o[4]
    d = s[1] - o[1]; dc = s[4] - o[4]
    printf "  storing one run adds %.1f ms wall, %.1f ms cpu (difference of medians; goal < 50 ms): %.2fx %s\n", d, dc, d / 50, (d < 50 ? "PASS" : "MISS")
}'
