#!/bin/sh
# bench/run.sh — `make bench`: analysis speed and memory on the largest
# binary at hand, side by side with objdump's plain disassembly of the same
# file in the same run.  Figures are medians of 3 runs; ratios compare the two.
#
#   MTOOL=build/mtool BENCH_DIR=build/bench BENCH_TARGET=/path/to/elf sh bench/run.sh
set -eu
cd "$(dirname "$0")/.."
MTOOL=${MTOOL:-build/mtool}
B=${BENCH_DIR:-build/bench}
mkdir -p "$B"
cc -O2 -Wall -Wextra -o "$B/rusage" bench/rusage.c

TARGET=${BENCH_TARGET:-}
if [ -z "$TARGET" ]; then
    TARGET=/usr/lib/x86_64-linux-gnu/libLLVM-14.so.1
    [ -f "$TARGET" ] || TARGET=$(ls -S /usr/bin/* /usr/lib/x86_64-linux-gnu/*.so* 2>/dev/null |
        while read -r f; do head -c 4 "$f" 2>/dev/null | grep -q ELF && { echo "$f"; break; }; done)
fi
echo "bench: analysis of $TARGET ($(du -h "$TARGET" | cut -f1))"

median() { sort -n | sed -n 2p; }

: > "$B/mtool.txt"
: > "$B/objdump.txt"
: > "$B/stats.txt"
for i in 1 2 3; do
    if ! "$B/rusage" "$MTOOL" analyze --stats "$TARGET" 2>> "$B/stats.txt" >> "$B/mtool.txt"; then
        echo "bench: $MTOOL analyze $TARGET failed: $(grep -v -e warning: -e '^stats:' "$B/stats.txt" | head -1)"
        exit 1
    fi
    "$B/rusage" objdump -d --no-show-raw-insn "$TARGET" >> "$B/objdump.txt"
done
insns=$(grep -o '[0-9]* instructions,' "$B/stats.txt" | tail -1 | cut -d' ' -f1)
objdump_insns=$(objdump -d --no-show-raw-insn "$TARGET" | grep -c '^ *[0-9a-f]*:	')
m_wall=$(awk '{print $2}' "$B/mtool.txt" | median)
m_rss=$(awk '{print $4}' "$B/mtool.txt" | median)
o_wall=$(awk '{print $2}' "$B/objdump.txt" | median)
o_rss=$(awk '{print $4}' "$B/objdump.txt" | median)
rm -f "$B/stats.txt"

awk -v mi="$insns" -v oi="$objdump_insns" -v mw="$m_wall" -v ow="$o_wall" -v mr="$m_rss" -v orss="$o_rss" 'BEGIN {
    ms = mi / mw / 1e6; os = oi / ow / 1e6; ratio = ms / os; bpi = mr * 1024 / mi
    printf "  %-44s %12s %12s\n", "", "mtool", "objdump -d"
    printf "  %-44s %12d %12d\n", "instructions", mi, oi
    printf "  %-44s %12.2f %12.2f\n", "wall time, s (median of 3)", mw, ow
    printf "  %-44s %12.2f %12.2f\n", "M instructions/s", ms, os
    printf "  %-44s %12.0f %12.0f\n", "peak RSS, MiB", mr / 1024, orss / 1024
    printf "speed ratio mtool/objdump: %.2fx (goal >= 1.00): %s\n", ratio, (ratio >= 1 ? "PASS" : "MISS")
    printf "mtool peak memory: %.1f bytes/instruction (goal < 200): %s\n", bpi, (bpi < 200 ? "PASS" : "MISS")
}'
