#!/usr/bin/env python3
"""tests/sim_samples_check.py — the simulator's samples of known behaviour
(samples/walks.c, chase.c, aos.c, reuse.c; docs/SIMULATOR.md): the miss
causes, spatial and temporal use that `mtool sim --json` reports for each,
against what the sample's source implies, per code object (procedure).
Called by tests/sim.sh; prints ok / not ok lines.

  SAMPLE JSON     SAMPLE: walks, chase, aos or reuse; JSON: `mtool sim
                  --json --cachegrind` on its lackey trace with the geometry
                  the samples are sized for (below)

The expected figures come from the sources' constants and the simulated
geometry, never from a run: D1 of 8 KiB, 4 ways, 64-byte lines (32 sets, 128
lines).  Each kernel adds a miss or two of its own (its stack frame), so
counts are checked within 2% (4 misses for small counts), shares within a
band.
"""
import json
import sys

import tap

LINE, D1_SETS, D1_WAYS = 64, 32, 4
DOUBLE = 8


def check(cond, what, detail=""):
    """tap.check, the line naming the samples."""
    tap.check(cond, f"sim sample: {what}", detail)


def level(d, name):
    return [x for x in d["levels"] if x["name"] == name][0]


def d1_causes(d, proc):
    """The D1 misses by cause of procedure `proc` (a code object)."""
    rows = [c for c in d["code_objects"] if c["name"] == proc]
    if not rows:
        return None
    return rows[0]["misses"]["D1"]


def near(got, want):
    """Within 2%, or 4 misses for the small counts (a kernel's own frame)."""
    return abs(got - want) <= max(0.02 * want, 4)


def expect_misses(d, proc, want, cause, share=0.95):
    """`proc` misses about `want` times in D1, `share` of them by `cause`."""
    c = d1_causes(d, proc)
    if c is None:
        check(False, f"{proc} is a code object", "not in code_objects (load base?)")
        return None
    total = sum(c.values())
    check(near(total, want), f"{proc}: {want} D1 misses", f"{total} ({c})")
    check(total and c[cause] >= share * total, f"{proc}: at least {share:.0%} of them {cause}",
          f"{c}")
    return c


def spatial_use(d, lo, hi, bucket, what):
    """Bytes used per D1 line brought in, over every line, in [lo, hi]; and
    most lines in the spatial bucket `bucket` (k: (k-1)/8 < share <= k/8)."""
    d1 = level(d, "D1")
    use = [u for u in d["object_use"] if u["level"] == "D1"]
    lines = sum(u["lines"] for u in use)
    used = sum(u["bytes_used"] for u in use)
    mean = used / (lines * d1["line"]) if lines else 0
    check(lo <= mean <= hi, f"{what}: D1 spatial use {lo:.0%} to {hi:.0%}", f"{mean:.3f}")
    in_bucket = d1["spatial_use"][bucket] / max(d1["lines_used"], 1)
    check(in_bucket >= 0.85, f"{what}: 85% of D1 lines in spatial bucket <= {bucket}/8",
          f"{in_bucket:.3f}")


def walks(d):
    rows, cols = 512, 200
    elements = rows * cols
    # Row by row: one miss per line, the matrix's first touch.
    expect_misses(d, "walk_rows", elements * DOUBLE // LINE, "cold")
    # Column by column: a column is `rows` lines, 4 times D1's: every load
    # misses, and so does a fully associative D1 (capacity).
    assert rows > D1_SETS * D1_WAYS
    expect_misses(d, "walk_cols", elements, "capacity")
    # Leading dimension 256 doubles = 32 lines = D1's sets: a column of 64
    # lines in one 4-way set; a fully associative D1 keeps them for the next
    # 7 columns of the line: 7 of 8 misses conflicts.
    crows, ccols = 64, 256
    assert ccols * DOUBLE // LINE % D1_SETS == 0 and crows <= D1_SETS * D1_WAYS
    pow2 = expect_misses(d, "walk_cols_pow2", crows * ccols, "conflict", share=0.85)
    # Padded to 264: a column covers every set twice: only first touches miss.
    padded = expect_misses(d, "walk_cols_padded", crows * ccols * DOUBLE // LINE, "cold")
    if pow2 and padded:
        check(padded["conflict"] <= 0.01 * pow2["conflict"],
              "padding the leading dimension removes the conflict misses",
              f"{pow2['conflict']} -> {padded['conflict']}")


def chase(d):
    nodes, rounds = 8192, 4
    expect_misses(d, "link_nodes", nodes, "cold")
    expect_misses(d, "chase", nodes * rounds, "capacity")
    # 16-byte nodes (next, value) alone in 64-byte lines: 25%.
    spatial_use(d, 0.20, 0.30, 2, "chase (16 of 64 bytes)")


def aos(d):
    records, rounds = 8192, 4
    expect_misses(d, "set_keys", records, "cold")
    expect_misses(d, "sum_keys", records * rounds, "capacity")
    # One 8-byte key in each 64-byte record: 12.5%.
    spatial_use(d, 0.10, 0.16, 1, "aos (8 of 64 bytes)")


def reuse(d):
    entries, passes = 256, 4000
    lines = entries * 4 // LINE
    expect_misses(d, "fill_table", lines, "cold", share=0.9)
    c = d1_causes(d, "sum_table")
    check(c is not None and sum(c.values()) <= 2, "sum_table: no D1 miss (the table stays)",
          f"{c}")
    # Each table line is read at least once per pass: >= passes - 1 reuses,
    # temporal bucket k holds 2^(k-1) .. 2^k - 1 reuses.
    bucket = (passes - 1).bit_length()
    heavy = sum(level(d, "D1")["temporal_use"][bucket:])
    check(heavy >= lines, f"reuse: the table's {lines} lines reused {1 << (bucket - 1)}+ times",
          f"{heavy} lines")


def main():
    sample, path = sys.argv[1], sys.argv[2]
    d = json.load(open(path))
    {"walks": walks, "chase": chase, "aos": aos, "reuse": reuse}[sample](d)
    sys.exit(1 if tap.failed else 0)


if __name__ == "__main__":
    main()
