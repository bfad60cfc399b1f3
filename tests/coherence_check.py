#!/usr/bin/env python3
"""tests/coherence_check.py — figures of `mtool sim --json` with cpus > 1
(docs/SIMULATOR.md, "Processors"), for tests/coherence.sh.

  coherence_check.py REPORT.json KEY=VALUE...

KEY is cpuN.FIELD (a field of processors.per_cpu[N], dotted into objects:
cpu0.misses.D1.coherence), line0.FIELD (the shared line with the most
coherence misses; line0.written_words.1 = CPU 1's mask), threadN.FIELD
(processors.per_thread[N], threads in order of their first reference),
codeN.FIELD or
dataN.FIELD (processors.code_objects[N], data_objects[N]: coherence misses
and events per object, most misses first), or level.NAME.FIELD (the
machine's totals).  Prints one line per figure that differs; exit 1 if
any does."""
import json
import sys


def lookup(report, key):
    head, *path = key.split(".")
    if head.startswith("cpu"):
        value = report["processors"]["per_cpu"][int(head[3:])]
    elif head.startswith("line"):
        value = report["processors"]["shared_lines"][int(head[4:])]
    elif head.startswith("thread"):
        value = report["processors"]["per_thread"][int(head[6:])]
    elif head.startswith("code"):
        value = report["processors"]["code_objects"][int(head[4:])]
    elif head.startswith("data"):
        value = report["processors"]["data_objects"][int(head[4:])]
    elif head == "level":
        value = next(l for l in report["levels"] if l["name"] == path[0])
        path = path[1:]
    else:
        raise SystemExit(f"coherence_check: {key}: unknown figure")
    for p in path:
        value = value[int(p)] if isinstance(value, list) else value[p]
    return value


def main():
    report = json.load(open(sys.argv[1]))
    bad = 0
    for spec in sys.argv[2:]:
        key, want = spec.split("=")
        got = lookup(report, key)
        if str(got) != want:
            print(f"{key} is {got}, expected {want}")
            bad = 1
    return bad


if __name__ == "__main__":
    sys.exit(main())
