#!/usr/bin/env python3
"""tests/history_sim_check.py REPORT.json EXPORT.json RUN — a simulated run
as `mtool history export --json` has it, against the report `mtool sim
--json` printed for the same run (docs/SIMULATOR.md, docs/HISTORY.md):

  - the machine's levels, in order, with the report's totals;
  - every procedure (a library's named LIB:PROC, as the history names it):
    references, misses per level by cause and line use
    per level (lines brought in, bytes of them used) equal to the sum of
    the report's code objects of that procedure (its own and its loops':
    the history stores them as `count` does, inclusive);
  - every loop: its own code object's figures (the report names a loop by
    its header address, the history's site address) plus those of the loops
    directly inside it (stored paths P.k), so an innermost loop equals its
    code object;
  - every data object: its kind, references, misses and line use per level;
  - with a simulated TLB, each procedure's and loop's TLB misses per level,
    page walks (the report's last TLB level's misses) and ITLB misses,
    summed as the misses are (the report gives data objects none).

Prints one line per failed check and exits 1, else a summary."""
import json
import sys

CAUSES = ("cold", "capacity", "conflict")


def reported_tlb(obj):
    """An object of the report's TLB figures by the history's names."""
    tm = obj.get("tlb_misses", {})
    tlb = {"tlb1_misses": tm.get("TLB1"), "tlb2_misses": tm.get("TLB2"),
           "page_walks": tm[list(tm)[-1]] if tm else None,
           "itlb_misses": obj.get("itlb_misses")}
    return {k: v for k, v in tlb.items() if v is not None}


def stored_tlb(simulated):
    """A stored object's TLB counts (walk cycles aside: the report has none)."""
    return {k: v for k, v in (simulated.get("tlb") or {}).items() if k != "walk_cycles"}


def figures(refs, misses, use, tlb):
    """(refs, {(level, cause or line use figure): n}) of one object, its TLB
    figures as ("tlb", name)."""
    counts = {(lv, c): by[c] for lv, by in misses.items() for c in CAUSES}
    counts.update({(lv, k): u[k] for lv, u in use.items() for k in ("lines", "bytes_used")})
    counts.update({("tlb", k): v for k, v in tlb.items()})
    return refs, counts


def add(a, b):
    keys = set(a[1]) | set(b[1])
    return a[0] + b[0], {k: a[1].get(k, 0) + b[1].get(k, 0) for k in keys}


def check_data_objects(report, run, failures):
    """Every data object of the report (a heap site's named with its call
    path), stored with its kind, references, misses per level by cause and
    line use per level; nothing else stored.  Returns how many."""
    want = {}
    for d in report.get("data_objects", []):
        name = d["name"] + (" <- " + d["path"] if d.get("path") else "")
        want[name] = (d["kind"], d["refs"], {lv: dict(by) for lv, by in d["misses"].items()},
                      {lv: (u["lines"], u["bytes_used"]) for lv, u in d["use"].items()})
    got = {}
    for d in run["simulated"]["data_objects"]:
        use = {lv: (u["lines"], u["bytes_used"]) for lv, u in d["use"].items()
               if u["lines"] or lv in want.get(d["name"], ((), 0, {}, {}))[3]}
        got[d["name"]] = (d["kind"], d["refs"], d["misses"], use)
    if not want:
        failures.append("the report has no data object to compare with")
    for name in sorted(set(want) | set(got)):
        if want.get(name) != got.get(name):
            failures.append(f"data object {name}: stored {got.get(name)}, reported {want.get(name)}")
    return len(got)


def main():
    report = json.load(open(sys.argv[1]))
    runs = [r for r in json.load(open(sys.argv[2])) if r["id"] == int(sys.argv[3])]
    failures = []
    if len(runs) != 1 or not runs[0]["simulated"]:
        print(f"no simulated run {sys.argv[3]} in the export")
        return 1
    run = runs[0]
    stored_levels = run["simulated"]["levels"]
    want = [(lv["name"], lv["size"], lv["ways"], lv["line"], lv["refs"], lv["misses"],
             lv["causes"]["cold"], lv["causes"]["capacity"], lv["causes"]["conflict"],
             lv["evictions"], lv["writebacks"]) for lv in report["levels"]]
    got = [(lv["level"], lv["size"], lv["ways"], lv["line"], lv["refs"], lv["misses"],
            lv["cold"], lv["capacity"], lv["conflict"], lv["evictions"], lv["writebacks"])
           for lv in stored_levels]
    if got != want:
        failures.append(f"levels: stored {got}, reported {want}")
    if run["simulated"]["last_level"] != report["levels"][-1]["name"]:
        failures.append(f"last level {run['simulated']['last_level']}")

    empty = (0, {})
    per_proc, per_loop = {}, {}
    for co in report["code_objects"]:
        if "procedure" not in co:
            continue  # outside the binary's procedures: in the totals only
        # a library's procedure is stored as LIB:PROC (glibc's, traced by default)
        proc = co["library"] + ":" + co["procedure"] if co.get("library") else co["procedure"]
        f = figures(co["refs"], co["misses"], co["use"], reported_tlb(co))
        per_proc[proc] = add(per_proc.get(proc, empty), f)
        if co["loop"]:
            key = (proc, int(co["loop"], 16))
            per_loop[key] = add(per_loop.get(key, empty), f)

    objects = run["objects"]
    loops = {(o["procedure"], o["loop_path"]): o for o in objects if o["kind"] == "loop"}
    checked = 0
    for o in objects:
        s = o["simulated"]
        stored = figures(s["refs"], s["misses"], s["use"], stored_tlb(s))
        if set(s["misses"]) != {lv["name"] for lv in report["levels"]}:
            failures.append(f"{o['procedure']}/{o['loop_path']}: levels {sorted(s['misses'])}")
        if o["kind"] == "procedure":
            expected = per_proc.get(o["procedure"], empty)
        else:
            expected = per_loop.get((o["procedure"], o["address"]), empty)
            for (proc, path), inner in loops.items():
                if proc == o["procedure"] and path.startswith(o["loop_path"] + ".") and \
                        "." not in path[len(o["loop_path"]) + 1:]:
                    expected = add(expected, figures(inner["simulated"]["refs"],
                                                     inner["simulated"]["misses"],
                                                     inner["simulated"]["use"],
                                                     stored_tlb(inner["simulated"])))
        nonzero = {k: v for k, v in expected[1].items() if v}
        if stored[0] != expected[0] or {k: v for k, v in stored[1].items() if v} != nonzero:
            failures.append(f"{o['procedure']}/{o['loop_path']}: stored {stored}, "
                            f"expected {expected}")
        checked += 1
    missing = set(per_proc) - {o["procedure"] for o in objects if o["kind"] == "procedure"}
    if missing:
        failures.append(f"procedures of the report not stored: {sorted(missing)}")
    ndata = check_data_objects(report, run, failures)
    for f in failures:
        print(f)
    if not failures:
        print(f"{checked} objects, {ndata} data objects and {len(got)} levels as the report "
              f"has them")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
