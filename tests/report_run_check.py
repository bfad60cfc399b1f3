#!/usr/bin/env python3
"""tests/report_run_check.py — the pages `mtool report RUN` wrote
(tests/report.sh):

  report_run_check.py HISTORY_DB LAST_PAGE LAST_REPORT_JSON RUN2_PAGE RUN2_REPORT_JSON
                      RUN1_PAGE GONE_PAGE COUNT_PAGE
  report_run_check.py --sim HISTORY_DB SIM_PAGE

LAST_PAGE (`report last`, run 3) and RUN2_PAGE (`report 2`) are read from
their run directories: their objects' measured cycles are those the run
directories' report.json (written by pass 2) holds.  RUN1_PAGE (run 1,
whose directory holds run 2 since) and GONE_PAGE (run 3, its directory
removed) are built from the history alone, COUNT_PAGE (run 4, a count) too:
their figures are the history's, read here with sqlite3 (not through
mtool), and GONE_PAGE's measured cycles are again LAST_REPORT_JSON's.
SIM_PAGE (`report last` after a stored `mtool sim -- BIN`) has the code
objects' last-level misses the history's sim_figures hold, at the level
sim_runs names the last.  One "ok - ..." / "not ok - ..." line per
assertion."""
import json
import re
import sqlite3
import sys

import tap

def page(path):
    html = open(path, encoding="utf-8").read()
    m = re.search(r'<script type="application/json" id="mtool-data">(.*?)</script>', html, re.S)
    return json.loads(m.group(1))


def near(a, b):
    return a is not None and b is not None and abs(a - b) <= 1e-5 * max(abs(a), abs(b), 1)


def same_figures(got, want):
    got, want = sorted(got), sorted(want)
    return len(got) == len(want) and all(near(a, b) for a, b in zip(got, want))


def check_simulated(db, path):
    con = sqlite3.connect(db)
    run, last = con.execute("SELECT run_id, lower(last_level) FROM sim_runs "
                            "ORDER BY run_id DESC LIMIT 1").fetchone()
    rows = dict(con.execute(
        f"SELECT s.procedure || coalesce('/' || s.loop_path, ''), "
        f"f.{last}_cold + f.{last}_capacity + f.{last}_conflict FROM sim_figures f "
        "JOIN sites s ON s.id = f.site_id WHERE f.run_id = ?", (run,)).fetchall())
    p = page(path)
    tap.check(p["stored"] and p["stored"]["tool"] == "sim" and p["history"]["run"] == run,
              f"report last after a stored sim: run {run}, from the history", p["stored"])
    wrong = [o["spec"] for o in p["objects"] if rows.get(o["spec"]) != o["ll_misses"]]
    tap.check(p["objects"] and not wrong and
              all(o["measured"] is None and o["memops"] is None for o in p["objects"]),
              f"its {len(p['objects'])} objects have the history's {last.upper()} misses, "
              "no cycles or memory operations", wrong[:3])
    top = p["objects"][0]["spec"] if p["objects"] else None
    trend = p["history"]["trend"][0] if p["objects"] else []
    counted = con.execute("SELECT f.run_id, f.memory_ops FROM figures f JOIN sites s ON "
                          "s.id = f.site_id JOIN runs r ON r.id = f.run_id WHERE r.tool = 'count' "
                          "AND s.procedure || coalesce('/' || s.loop_path, '') = ? "
                          "ORDER BY f.run_id DESC LIMIT 1", (top,)).fetchone()
    tap.check(len(trend) >= 2 and trend[-1][0] == run and trend[-1][5] == rows.get(top) and
              counted and [counted[0], counted[1]] == [trend[-2][0], trend[-2][4]],
              f"{top}'s trend: the count's memory operations, then the simulated run's "
              "last-level misses", trend[-2:])
    sys.exit(1 if tap.failed else 0)


if sys.argv[1] == "--sim":
    check_simulated(sys.argv[2], sys.argv[3])
db, last, last_json, run2, run2_json, run1, gone, counted = sys.argv[1:9]
con = sqlite3.connect(db)


def stored_objects(run):
    """The history's rows of a run: name as `mtool history` writes it, line, figures."""
    return con.execute(
        "SELECT s.procedure || coalesce('/' || s.loop_path, ''), s.file, s.line, "
        "f.measured_cycles, f.predicted_cycles, f.memory_ops FROM figures f "
        "JOIN sites s ON s.id = f.site_id WHERE f.run_id = ?", (run,)).fetchall()


def program_row(run):
    return con.execute("SELECT predicted_cycles, measured_cycles, memory_ops FROM runs "
                       "WHERE id = ?", (run,)).fetchone()


# Pages read from a run directory: the run's own measured figures.
for path, report_json, run in ((last, last_json, 3), (run2, run2_json, 2)):
    p, rj = page(path), json.load(open(report_json, encoding="utf-8"))
    tap.check(p["history"]["run"] == run and p["stored"] is None,
              f"report {'last' if run == 3 else run}: run {run}, read from its run directory",
              (p["history"]["run"], p["stored"]))
    tap.check(same_figures([o["measured"] for o in p["objects"]],
                           [o["measured_cycles"] for o in rj["objects"]]) and
              near(p["program"]["measured"], rj["program"]["measured_cycles"]),
              f"run {run}'s page has its report.json's measured cycles "
              f"(program {rj['program']['measured_cycles']:.4g})")

# Pages from the history alone.
for path, run, why in ((run1, 1, "holds another run now"), (gone, 3, "is gone")):
    p = page(path)
    rows = [r for r in stored_objects(run) if r[3] is not None]
    tap.check(p["stored"] is not None and p["stored"]["run"] == run and
              p["history"]["run"] == run and why in p["stored"]["missing"],
              f"report {run}: built from the history, saying its run directory {why}",
              p["stored"])
    tap.check(same_figures([o["measured"] for o in p["objects"]], [r[3] for r in rows]) and
              same_figures([o["predicted"] for o in p["objects"]], [r[4] for r in rows]),
              f"run {run}'s page has the history's measured and predicted cycles of its "
              f"{len(rows)} timed objects")
    pred, meas, memops = program_row(run)
    tap.check(near(p["program"]["predicted"], pred) and near(p["program"]["measured"], meas) and
              p["program"]["memops"] == memops, f"run {run}'s overview is the history's "
              "program figures", (p["program"], pred, meas, memops))
    by_name = {r[0]: r for r in rows}
    files = [f["name"] for f in p["files"]]
    bad = [o["spec"] for o in p["objects"] if o["spec"] not in by_name or
           (o["file"] >= 0 and (files[o["file"]] != by_name[o["spec"]][1] or
                                o["hot"] != by_name[o["spec"]][2]))]
    tap.check(not bad and any(f["text"] for f in p["files"]),
              f"run {run}'s objects are at their stored source lines, the source embedded", bad)
    tap.check(p["disasm"] == [] and p["lines"] and
              all(0 <= line[6] < len(p["objects"]) for line in p["lines"]),
              f"run {run}'s lines are its objects' first lines")
# Run 3 from the history and from its run directory: the same objects.
tap.check(same_figures([o["measured"] for o in page(gone)["objects"]],
                       [o["measured_cycles"] for o in json.load(open(last_json))["objects"]]),
          "run 3 from the history has the measured cycles its report.json had")

# A counted run: memory operations, no cycles; trends of the timed runs
# before it and its own count.
p = page(counted)
rows = stored_objects(4)
tap.check(p["stored"] and p["stored"]["tool"] == "count" and p["history"]["run"] == 4,
          "report last after a count: run 4, from the history", p["stored"])
tap.check(all(o["measured"] is None and o["predicted"] is None for o in p["objects"]) and
          sorted(o["memops"] for o in p["objects"]) ==
          sorted(r[5] for r in rows)[-len(p["objects"]):],
          f"its objects are the history's most memory operations, without cycles "
          f"({len(p['objects'])} of {len(rows)})")
main = [i for i, o in enumerate(p["objects"]) if o["spec"] == "main"]
trend = p["history"]["trend"][main[0]] if main else []
tap.check([t[0] for t in trend] == [1, 2, 3, 4] and trend[-1][1] is None and
          trend[-1][4] == [r[5] for r in rows if r[0] == "main"][0] and
          all(t[1] is not None for t in trend[:3]),
          "main's trend: cycles of the timed runs 1-3, the count's memory operations", trend)
sys.exit(1 if tap.failed else 0)
