#!/bin/sh
# bench/startup.sh — what an instrumented program costs per process, for
# test suites that start thousands of short ones: N runs (default 1000) of
# a short command, original and instrumented in turn, 3 rounds, each keeping
# its least wall, user and system time (other tenants only ever add time);
# the extra milliseconds per process and the ratio to the original, measured
# in the same run.  Also the size of one profile: its length (ls) and the
# disk it takes (du: the file is sparse, only touched pages are stored).
# The commands: `git --version` (a large executable: 630 pages of entry
# jumps) when git is installed, and a small C program.  Creating the
# profile file is part of the cost, and it is the file system's: PROFILES
# puts them elsewhere (ext4 on the Xeon family 6 model 207's virtual disk
# took 0.9 ms per file created, tmpfs 3 us).
#
#   MTOOL=build/mtool BENCH_DIR=build/bench N=1000 [PROFILES=DIR] sh bench/startup.sh
set -eu
cd "$(dirname "$0")/.."
MTOOL=${MTOOL:-build/mtool}
B=${BENCH_DIR:-build/bench}/startup
N=${N:-1000}
P=${PROFILES:-$B/profiles}
rm -rf "$B"
mkdir -p "$B" "$P"
export MTOOL_OUT="$P"
cc -O2 -Wall -Wextra -o "$B/spawn" bench/spawn.c
printf '#include <stdio.h>\nint main(int c, char **v) { printf("%%d %%s\\n", c, v[0]); return 0; }\n' > "$B/small.c"
cc -O2 -o "$B/small" "$B/small.c"

# least FILE FIELD: the least value of "FIELD VALUE" over FILE's lines.
least() { awk -v f="$2" '{ for (i = 1; i < NF; i++) if ($i == f) print $(i + 1) }' "$1" | sort -g | head -1; }

bench_one() { # NAME BIN ARGS...
    name=$1 bin=$2
    shift 2
    if ! "$MTOOL" instrument --counts "$bin" -o "$B/$name.inst" > "$B/$name.log" 2>&1; then
        echo "bench: cannot instrument $bin: $(tail -1 "$B/$name.log")"
        return
    fi
    : > "$B/$name.orig.txt"
    : > "$B/$name.inst.txt"
    for round in 1 2 3; do
        "$B/spawn" "$N" "$bin" "$@" >> "$B/$name.orig.txt"
        rm -f "$P"/*.mtp
        "$B/spawn" "$N" "$B/$name.inst" "$@" >> "$B/$name.inst.txt"
    done
    one=$(ls "$P"/*.mtp | head -1)
    printf '  %-28s' "$name ($N processes)"
    for f in wall user sys; do
        o=$(least "$B/$name.orig.txt" $f) i=$(least "$B/$name.inst.txt" $f)
        awk -v f=$f -v o="$o" -v i="$i" -v n="$N" 'BEGIN {
            printf " %s %.3f -> %.3f s (+%.2f ms/process, %.2fx)", f, o, i, (i - o) * 1000 / n, (o > 0 ? i / o : 0) }'
    done
    echo
    echo "  $(printf '%-28s' '') one profile: $(stat -c %s "$one") bytes long, $(du -k "$one" | cut -f1) KiB on disk"
    rm -f "$P"/*.mtp
}

echo "bench: per-process start-up of instrumented programs (least of 3 rounds; profiles in $P)"
if command -v git > /dev/null 2>&1; then
    bench_one git "$(command -v git)" --version
fi
bench_one small "$B/small" x
