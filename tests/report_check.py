#!/usr/bin/env python3
"""tests/report_check.py — `mtool report`'s per-line figures against
independent readers (tests/report.sh):

  report_check.py ANNOTATED HTML ANALYSIS_JSON COUNTS_TSV COUNT_JSON SOURCE

ANNOTATED is `callgrind_annotate --auto=yes` of the Callgrind export: its
per-line totals of SOURCE must be the page's (the JSON the page embeds), its
memory operations per line those of pass 1's counts.tsv x `mtool analyze
--json --blocks` (each block's reads and writes on the line of its first
instruction), and its program total count.json's executed memory operations.
One "ok - ..." / "not ok - ..." line per assertion."""
import collections
import json
import os
import re
import sys

failed = 0


def check(what, cond, detail=""):
    global failed
    if cond:
        print("ok - " + what)
    else:
        failed += 1
        print("not ok - " + what + (": " + str(detail) if detail != "" else ""))


COST = r"(\.|-?[\d,]+(?: \(\s*-?[\d.]+%\))?)"
ROW = re.compile(r"^\s*" + r"\s+".join([COST] * 4) + r"(?:  |$)")


def number(field):
    return 0 if field == "." else int(field.split(" ")[0].replace(",", ""))


def annotated_lines(text, source):
    """{line: [predicted, measured, overhead, memops]} of SOURCE's annotation."""
    lines, line, inside, seen = {}, None, False, False
    for row in text.splitlines():
        if row.startswith("-- Auto-annotated source:"):
            inside = os.path.basename(row.split(":", 1)[1].strip()) == os.path.basename(source)
            line, seen = 1, False
            continue
        if not inside:
            continue
        if seen and re.match(r"^-{20,}$", row):
            inside = False  # the file's annotation ends; its summary row follows
            continue
        m = re.match(r"^-- line (\d+) -+$", row)
        if m:
            line = int(m.group(1))
            continue
        m = ROW.match(row)
        if not m or line is None:
            continue
        seen = True
        costs = [number(m.group(k)) for k in range(1, 5)]
        if any(costs):
            lines[line] = costs
        line += 1
    return lines


def totals(text):
    for row in text.splitlines():
        if row.rstrip().endswith("PROGRAM TOTALS (calculated)"):
            return [number(f) for f in ROW.match(row).groups()]
    return None


def page_lines(html, source):
    """{line: [predicted, overhead, memops, rows]} of SOURCE in the page's data."""
    m = re.search(r'<script type="application/json" id="mtool-data">(.*?)</script>', html, re.S)
    data = json.loads(m.group(1))
    files = [i for i, f in enumerate(data["files"])
             if os.path.basename(f["name"]) == os.path.basename(source)]
    out = collections.defaultdict(lambda: [0, 0, 0, 0])
    for file, line, _executions, memops, predicted, overhead, _object in data["lines"]:
        if file in files:
            row = out[line]
            row[0] += predicted
            row[1] += overhead
            row[2] += memops
            row[3] += 1
    return out


def oracle_memops(analysis, counts_tsv, source):
    """{line: memory operations} from counts.tsv and the analysis' blocks."""
    counts = {}
    with open(counts_tsv) as f:
        for row in f:
            if not row.startswith("#"):
                block, count, _proc = row.rstrip("\n").split("\t", 2)
                counts[int(block, 16)] = int(count)
    out = collections.Counter()
    files = analysis["files"]
    for p in analysis["procedures"]:
        for b in p["blocks"]:
            name = files[b["file"]] if b["file"] is not None else ""
            if os.path.basename(name) == os.path.basename(source) and b["line"]:
                n = counts.get(int(b["start"], 16), 0)
                if n:
                    out[b["line"]] += n * (b["mem_reads"] + b["mem_writes"])
    return out


def main():
    annotated_path, html_path, analysis_path, counts_tsv, count_json, source = sys.argv[1:7]
    text = open(annotated_path).read()
    ann = annotated_lines(text, source)
    page = page_lines(open(html_path, encoding="utf-8").read(), source)
    check("callgrind_annotate annotates %s (%d lines with a cost)" % (source, len(ann)),
          len(ann) > 10, len(ann))
    # Each (procedure, line) row is rounded once on either side.
    bad = [(line, ann.get(line), p) for line, p in page.items()
           if line not in ann and (p[0] or p[1] or p[2]) or line in ann and (
               abs(ann[line][0] - p[0]) > p[3] or abs(ann[line][2] - p[1]) > p[3]
               or ann[line][3] != p[2] or abs(ann[line][1] - ann[line][0] - ann[line][2]) > p[3])]
    check("callgrind_annotate's per-line predicted, overhead and memops are the page's "
          "(measured = predicted + overhead), over %d lines" % len(page), not bad, bad[:5])
    missing = sorted(set(ann) - set(page))
    check("every line callgrind_annotate shows a cost on is in the page", not missing, missing[:10])
    memops = oracle_memops(json.load(open(analysis_path)), counts_tsv, source)
    wrong = [(line, ann.get(line, [0] * 4)[3], n) for line, n in memops.items()
             if ann.get(line, [0] * 4)[3] != n]
    check("memory operations per line are counts.tsv x the analysis' blocks (%d lines)"
          % len(memops), not wrong and memops, wrong[:5])
    total = totals(text)
    executed = json.load(open(count_json))["executed"]["memory_ops"]
    check("the export's memops total is count.json's executed memory_ops (%d)" % executed,
          total is not None and total[3] == executed, total)
    print("%d failed" % failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
