#!/usr/bin/env python3
"""tests/history_mp_page.py — the processors' figures of the page `mtool
report RUN` wrote for a simulated run of two CPUs (tests/history_mp.sh),
against the history read here with sqlite3 (not through mtool):

  history_mp_page.py HISTORY_DB RUN PAGE ORACLE_OUT

Checks the page's data (history.processors: per code and data object its
nine processors' figures; the diff against the baseline run the page names;
the what-if remedies and the problems' proposals; its threads; the trend
points of its code objects), then writes ORACLE_OUT, the same figures from the history,
for tests/browser/mp.mjs to check the rendered page against.  One
"ok - ..." / "not ok - ..." line per assertion."""
import json
import re
import sqlite3
import sys

import tap

FIGURES = ["true_sharing", "false_sharing", "invalidations", "interventions", "upgrades",
           "local_refs", "remote_refs", "remote_dirty_refs", "three_hop_refs"]
COLUMNS = ", ".join("f." + f for f in FIGURES)


def page_data(path):
    html = open(path, encoding="utf-8").read()
    m = re.search(r'<script type="application/json" id="mtool-data">(.*?)</script>', html, re.S)
    return json.loads(m.group(1))


def code_name(procedure, loop_path):
    return procedure + ("/" + loop_path if loop_path else "")


def objects_of(con, run):
    """{(kind, name): figures} of the run's objects with processors' figures."""
    got = {}
    for row in con.execute(
            f"SELECT s.procedure, s.loop_path, {COLUMNS} FROM sim_figures f JOIN sites s "
            "ON s.id = f.site_id WHERE f.run_id = ? AND f.true_sharing IS NOT NULL", (run,)):
        kind = "loop" if row[1] else "procedure"
        got[(kind, code_name(row[0], row[1]))] = dict(zip(FIGURES, row[2:]))
    for row in con.execute(
            f"SELECT d.name, {COLUMNS} FROM sim_figures f JOIN data_sites d "
            "ON d.id = f.data_site_id WHERE f.run_id = ? AND f.true_sharing IS NOT NULL", (run,)):
        got[("data", row[0])] = dict(zip(FIGURES, row[1:]))
    return got


def what_if_of(con, run):
    remedies = [{"text": t, "kind": k, "cycles": c} for t, k, c in con.execute(
        "SELECT remedy, kind, cycles_saved FROM sim_remedies WHERE run_id = ? ORDER BY position",
        (run,))]
    problems = [{"code": c, "data": d, "proposed": None if r is None else remedies[r]["text"],
                 "sharing_saved": s} for c, d, r, s in con.execute(
        "SELECT code, data, remedy, sharing_saved FROM sim_problems WHERE run_id = ? "
        "ORDER BY position", (run,))]
    return {"remedies": remedies, "problems": problems}


def threads_of(con, run):
    return [{"thread": t, "cpu": c, "refs": r, "stall_cycles": st,
             "figures": dict(zip(FIGURES, rest))} for t, c, r, st, *rest in con.execute(
        f"SELECT thread, cpu, refs, stall_cycles, {', '.join(FIGURES)} FROM sim_threads "
        "WHERE run_id = ? ORDER BY position", (run,))]


def trends_of(con, run, names):
    """Per code object name: [run, figures...] of every run up to `run` holding it."""
    trends = {}
    for name in names:
        proc, _, loop = name.partition("/")
        rows = con.execute(
            f"SELECT f.run_id, {COLUMNS} FROM sim_figures f JOIN sites s ON s.id = f.site_id "
            "WHERE s.object_id = (SELECT s2.object_id FROM sim_figures f2 JOIN sites s2 ON "
            "s2.id = f2.site_id WHERE f2.run_id = ? AND s2.procedure = ? AND "
            "coalesce(s2.loop_path, '') = ?) AND f.run_id <= ? ORDER BY f.run_id",
            (run, proc, loop, run, )).fetchall()
        trends[name] = [list(r) for r in rows]
    return trends


def main():
    db, run, page_path, oracle_path = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    con = sqlite3.connect(db)
    history = page_data(page_path)["history"]
    pr = history.get("processors")
    tap.check(history["run"] == run and pr is not None,
              f"the page of run {run} has the history view's processors' figures")
    if pr is None:
        return
    want = objects_of(con, run)
    got = {(o["kind"], o["name"]): o["figures"] for o in pr["objects"]}
    tap.check(got == want, f"its {len(got)} objects' nine figures are the history's "
              f"(sim_figures of run {run})",
              [k for k in set(got) | set(want) if got.get(k) != want.get(k)][:3])
    baseline = history["baseline"]
    before = objects_of(con, baseline) if baseline else {}
    want_diff = {k: (before[k], want[k]) for k in want if k in before and
                 (any(before[k].values()) or any(want[k].values()))}
    got_diff = {(d["kind"], d["name"]): (d["before"], d["after"]) for d in pr["diff"]}
    tap.check(got_diff == want_diff, f"its diff against run {baseline}: {len(got_diff)} objects "
              "before and after as the history holds them",
              [k for k in set(got_diff) | set(want_diff) if got_diff.get(k) != want_diff.get(k)][:3])
    w = what_if_of(con, run)
    if pr["what_if"] is None:
        tap.check(not w["remedies"], "no what-if on the page: none in the history")
    else:
        got_w = pr["what_if"]
        tap.check([(r["text"], r["kind"], r["saved"]["cycles"]) for r in got_w["remedies"]] ==
                  [(r["text"], r["kind"], r["cycles"]) for r in w["remedies"]],
                  f"its {len(w['remedies'])} remedies and their cycles saved are sim_remedies'")
        tap.check([(p["code"], p["data"], None if p["proposed"] is None else
                    got_w["remedies"][p["proposed"]]["text"]) for p in got_w["problems"]] ==
                  [(p["code"], p["data"], p["proposed"]) for p in w["problems"]],
                  f"its {len(w['problems'])} problems propose sim_problems' remedies")
    threads = threads_of(con, run)
    tap.check(len(threads) >= 2 and
              [{k: t[k] for k in ("thread", "cpu", "refs", "stall_cycles", "figures")}
               for t in pr["threads"]] == threads,
              f"its {len(threads)} threads: CPU, references, stall and the nine figures are "
              "sim_threads'", pr["threads"][:1])
    codes = [name for kind, name in want if kind != "data"]
    trends = trends_of(con, run, codes)
    shown = {o["spec"] if "spec" in o else o["name"]: i
             for i, o in enumerate(page_data(page_path)["objects"])}
    bad = [n for n in codes if n in shown and
           [[p[0]] + p[6:15] for p in history["trend"][shown[n]] if p[6] is not None] != trends[n]]
    tap.check(not bad, f"the trend points of its code objects ({len([n for n in codes if n in shown])}"
              " shown) carry the history's figures of every run", bad[:3])
    json.dump({"run": run, "baseline": baseline,
               "objects": [{"kind": k, "name": n, "figures": f} for (k, n), f in want.items()],
               "diff": [{"kind": k, "name": n, "before": b, "after": a}
                        for (k, n), (b, a) in want_diff.items()],
               "what_if": w if w["remedies"] else None, "trends": trends, "threads": threads},
              open(oracle_path, "w"))


if __name__ == "__main__":
    main()
    sys.exit(1 if tap.failed else 0)
