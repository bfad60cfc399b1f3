#!/usr/bin/env python3
"""tests/report_sim_check.py — what `mtool sim RUNDIR` keeps and what the
page it makes again holds (tests/report.sh):

  report_sim_check.py RUNDIR SIM_OUT

RUNDIR/sim.json must be the document `mtool sim --json -o SIM_OUT RUNDIR`
printed, and RUNDIR/report.html must embed it unchanged (the page's views
are drawn from it).  The page's call tree against pass 2's own figures in
report.json: the objects with no parent are exactly pass 2's outermost
ones, parents form no cycle, and each object's pass-1 entries are
report.json's pass1_entries.  One "ok - ..." / "not ok - ..." line per
assertion."""
import json
import os
import re
import sys

import tap

rundir, sim_out = sys.argv[1:3]
kept = json.load(open(os.path.join(rundir, "sim.json"), encoding="utf-8"))
printed = json.load(open(sim_out, encoding="utf-8"))
tap.check(kept == printed, "sim.json is the JSON report sim printed")
tap.check(bool(kept.get("stall", {}).get("objects")) and bool(kept.get("code_data")),
          "sim.json has the stall estimates and the code x data pairs")

html = open(os.path.join(rundir, "report.html"), encoding="utf-8").read()
m = re.search(r'<script type="application/json" id="mtool-data">(.*?)</script>', html, re.S)
page = json.loads(m.group(1))
tap.check(page.get("sim") == kept, "the page sim made again embeds sim.json unchanged")

report = json.load(open(os.path.join(rundir, "report.json"), encoding="utf-8"))
by_spec = {o["time_spec"]: o for o in report["objects"]}
objects = page["objects"]
tap.check(sorted(o["spec"] for o in objects) == sorted(by_spec),
          "the page has report.json's objects", [o["spec"] for o in objects])
roots = sorted(o["spec"] for o in objects if o["parent"] < 0)
outermost = sorted(s for s, o in by_spec.items() if o["outermost"])
tap.check(roots == outermost, "the call tree's roots are pass 2's outermost objects",
          f"{roots} vs {outermost}")
cycles = []
for i, o in enumerate(objects):
    seen, k = set(), i
    while k >= 0 and k not in seen:
        seen.add(k)
        k = objects[k]["parent"]
    if k >= 0:
        cycles.append(o["spec"])
tap.check(not cycles, "no chain of parents loops", cycles)
nested = [o["spec"] for o in objects if o["parent"] >= 0]
tap.check(len(nested) >= 3, f"the memory sample has nested objects in its tree ({len(nested)})")
wrong = [(o["spec"], o["entries"], by_spec[o["spec"]]["pass1_entries"]) for o in objects
         if o["spec"] in by_spec and o["entries"] != by_spec[o["spec"]]["pass1_entries"]]
tap.check(not wrong, "each frame's entries are report.json's pass1_entries", wrong)
sys.exit(1 if tap.failed else 0)
