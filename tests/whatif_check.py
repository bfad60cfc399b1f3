#!/usr/bin/env python3
"""tests/whatif_check.py — figures of `mtool sim --what-if --json`
(docs/SIMULATOR.md, "What-if remedies"), for tests/whatif.sh.

  whatif_check.py REPORT.json KEY=VALUE...

KEY is a dotted path into the report's "what_if" object, starting with:
  run                    the run's own figures
  remedy:SEL             the remedy SEL names: pad_words or pad_rows (of the
                         only padded object, or pad_words@NAME), line32,
                         line128, first-touch, interleave, owner-computes,
                         mapping (absent: the value is "absent")
  problemN               the Nth top problem (its "figures", "best", ...)
  bestN                  the remedy proposed for problem N (null: "null")
  count                  the number of remedies
  exact                  whether the unchanged replay gave the run's misses
Numbers compare as numbers.  Prints one line per figure that differs; exit
1 if any does."""
import json
import sys


def select(remedies, sel):
    kind, _, name = sel.partition("@")
    for r in remedies:
        if kind in ("pad_words", "pad_rows") and r["kind"] == kind:
            if not name or r["data_name"] == name:
                return r
        elif kind.startswith("line") and r["kind"] == "line" and str(r["line"]) == kind[4:]:
            return r
        elif r["kind"] == "placement" and r["placement"] == kind:
            return r
        elif r["kind"] == "mapping" == kind:
            return r
    return None


def lookup(w, key):
    head, *path = key.split(".")
    if head == "count":
        return len(w["remedies"])
    if head == "exact":
        return w["exact"]
    if head == "run":
        value = w["run"]
    elif head.startswith("remedy:"):
        value = select(w["remedies"], head[7:])
        if value is None:
            return "absent"
    elif head.startswith("problem"):
        value = w["problems"][int(head[7:])]
    elif head.startswith("best"):
        best = w["problems"][int(head[4:])]["best"]
        value = None if best is None else w["remedies"][best]
    else:
        raise SystemExit(f"whatif_check: {key}: unknown figure")
    for p in path:
        if value is None:
            return "absent"
        value = value[int(p)] if isinstance(value, list) else value[p]
    return "null" if value is None else value


def same(got, want):
    try:
        return float(got) == float(want)
    except (TypeError, ValueError):
        return str(got).lower() == want.lower()


def main():
    w = json.load(open(sys.argv[1]))["what_if"]
    bad = 0
    for spec in sys.argv[2:]:
        key, want = spec.split("=", 1)
        got = lookup(w, key)
        if not same(got, want):
            print(f"{key} is {got}, expected {want}")
            bad = 1
    return bad


if __name__ == "__main__":
    sys.exit(main())
