#!/bin/sh
# tests/sim_sampled.sh — the sampled modes of `mtool sim` (docs/SIMULATOR.md,
# "Sampled modes"): each of the samples of known behaviour (walks, chase,
# aos, reuse) is traced exactly, then with set sampling (1/4, 1/8) and time
# sampling (1000/10007), on the samples' geometry (I1/D1 8 KiB 4-way, LL 64
# KiB 8-way).  The oracle is the exact run: every level with 1000 misses or
# more must be within the error the docs state for the mode (sets: 2%; time:
# 15%), and the exact count must lie inside the report's own stated interval
# (its two standard errors, widened downwards by its cold-start share).  The
# report must say it is sampled (text and JSON), and bad specifications are
# refused in one line.
#
#   MTOOL=build/asan/mtool SAMPLES_SIM=build/samples-sim sh tests/sim_sampled.sh
set -u
MTOOL=${MTOOL:-build/asan/mtool}
SAMPLES_SIM=${SAMPLES_SIM:-build/samples-sim}
OUT=$(mktemp -d "${TMPDIR:-/tmp}/mtool-sampled.XXXXXX")
trap 'rm -rf "$OUT"' EXIT INT TERM
export XDG_CONFIG_HOME="$OUT/config" XDG_CACHE_HOME="$OUT/cache"
GEOMETRY="--cachegrind --I1=8K,4,64 --D1=8K,4,64 --LL=64K,8,64"

ok() { echo "ok - $*"; }
fail() { echo "not ok - $*"; }

# compare EXACT SAMPLED BOUND LABEL: the check above, one line per level.
compare() {
    python3 - "$@" <<'PY'
import json, sys
exact, sampled = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
bound, label = float(sys.argv[3]), sys.argv[4]
smp = sampled.get("sampling")
if not smp:
    print("not ok - %s: the JSON does not say it is sampled" % label)
    sys.exit()
checked = 0
for le, ls in zip(exact["levels"], sampled["levels"]):
    name, x, est = le["name"], le["misses"], ls["misses"]
    if x < 1000:
        continue
    checked += 1
    off = (est - x) / x
    err, cold = smp["miss_error"][name], smp["cold_start"][name]
    inside = err is not None and est * (1 - cold - err) <= x <= est * (1 + err)
    verdict = "ok" if abs(off) <= bound and inside else "not ok"
    print("%s - %s %s: %d misses estimated, %d exact (%+.2f%%, docs: within %.0f%%; "
          "stated +-%s, cold-start %.0f%%)" % (verdict, label, name, est, x, 100 * off,
          100 * bound, "?" if err is None else "%.1f%%" % (100 * err), 100 * cold))
if not checked:
    print("not ok - %s: no level with 1000 misses to compare" % label)
PY
}

for sample in walks chase aos reuse; do
    bin=$SAMPLES_SIM/$sample-gcc-O2
    [ -x "$bin" ] || { fail "$sample: $bin missing"; continue; }
    # shellcheck disable=SC2086
    "$MTOOL" sim $GEOMETRY --json -o "$OUT/exact.json" -- "$bin" > /dev/null 2> "$OUT/err" ||
        { fail "$sample: exact run: $(head -1 "$OUT/err")"; continue; }
    for mode in "--sample-sets 1/4|0.02" "--sample-sets 1/8|0.02" "--sample-time 1000/10007|0.15"; do
        flags=${mode%|*}
        # shellcheck disable=SC2086
        "$MTOOL" sim $GEOMETRY $flags --json -o "$OUT/sampled.json" -- "$bin" > /dev/null \
            2> "$OUT/err" || { fail "$sample $flags: $(head -1 "$OUT/err")"; continue; }
        [ "$sample" = reuse ] && continue # 30 misses or so: nothing to estimate
        compare "$OUT/exact.json" "$OUT/sampled.json" "${mode#*|}" "$sample $flags"
    done
done

# The text report says it is sampled, how, and the error.
bin=$SAMPLES_SIM/chase-gcc-O2
# shellcheck disable=SC2086
"$MTOOL" sim $GEOMETRY --sample-time 1000/10007 -- "$bin" > "$OUT/text" 2>/dev/null
if grep -q '^SAMPLED: 1000 of every 10007 references after 1000 warming ones (time sampling): .* estimate.*+-.*cold-start' "$OUT/text"; then
    ok "text: the SAMPLED line states the mode, the estimate and its error"
else
    fail "text: no SAMPLED line: $(head -3 "$OUT/text")"
fi

# Bad specifications: one line naming the problem, status 1 or 2, no report.
for bad in "--sample-sets 1/1" "--sample-sets 2/8" "--sample-sets 1/3" "--sample-sets 1/64" \
    "--sample-sets x" "--sample-time 10/10" "--sample-time 5/10/5" "--sample-time 0/10" \
    "--sample-time 1000/10007 --sample-sets 1/4" "--sample-sets 1/4 --prefetch=next-line"; do
    # shellcheck disable=SC2086
    "$MTOOL" sim $GEOMETRY $bad -o "$OUT/bad.txt" -- "$bin" > /dev/null 2> "$OUT/err"
    rc=$?
    if [ $rc -ne 0 ] && [ "$(wc -l < "$OUT/err")" -eq 1 ] && [ ! -e "$OUT/bad.txt" ]; then
        ok "refused: $bad ($(cat "$OUT/err"))"
    else
        fail "not refused in one line: $bad (status $rc: $(head -2 "$OUT/err"))"
    fi
done
