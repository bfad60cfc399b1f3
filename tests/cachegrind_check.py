#!/usr/bin/env python3
"""tests/cachegrind_check.py — mtool sim's misses per procedure against
Cachegrind's (tests/sim.sh on lackey traces, tests/trace.sh on traced runs).

    cachegrind_check.py [--data] NAME CACHEGRIND_OUT MTOOL_SIM_JSON

Prints one "ok - ..." or "not ok - ..." line.  Figures: I1, D1 and LL misses
per function (LL unified: instruction and data misses); with --data, D1 and
LL data misses only (a traced run has no instruction fetches) and no total
(the trace covers the binary's procedures, not the libraries').  Every
procedure with at least 1000 misses at a level (Cachegrind's or mtool's)
must agree within 1% there, and so must the totals without --data.  The
misses of a procedure's loops (code objects of their own) count as its."""
import json
import sys


def cachegrind(path, data):
    events, fn, rows = None, None, {}
    for line in open(path):
        if line.startswith("events:"):
            events = line.split()[1:]
        elif line.startswith("fn="):
            fn = line[3:].strip()
        elif line[:1].isdigit() and fn is not None:
            v = dict(zip(events, map(int, line.split()[1:])))
            r = rows.setdefault(fn, [0, 0, 0])
            r[0] += v.get("I1mr", 0)
            r[1] += v.get("D1mr", 0) + v.get("D1mw", 0)
            r[2] += (0 if data else v.get("ILmr", 0)) + v.get("DLmr", 0) + v.get("DLmw", 0)
    return rows


def mtool(path):
    d = json.load(open(path))
    names = [lv["name"] for lv in d["levels"]]
    names = names if names[0] == "I1" else [None] + names
    rows = {}
    for c in d["code_objects"]:  # a procedure's loops are summed into it
        r = rows.setdefault(c.get("procedure", c["name"]), [0, 0, 0])
        for i, n in enumerate(names[:3]):
            if n:  # by cause, or a --misses-only report's plain counts
                r[i] += sum(c["misses"][n].values()) if "misses" in c else c["level_misses"][n]
    return rows


def main():
    args = sys.argv[1:]
    data = args[0] == "--data"
    name, cg_path, sim_path = args[1:] if data else args
    cg, sim = cachegrind(cg_path, data), mtool(sim_path)
    levels = ["I1", "D1", "LL"]
    if not data:
        for rows in (cg, sim):
            rows["TOTAL"] = [sum(r[i] for r in rows.values()) for i in range(3)]
    bad, checked = [], 0
    for fn, s in sim.items():
        if fn.startswith("("):
            continue
        c = cg.get(fn, [0, 0, 0])
        for i, level in enumerate(levels):
            if data and level == "I1":
                continue
            if max(c[i], s[i]) >= 1000 or fn == "TOTAL":
                checked += 1
                if abs(c[i] - s[i]) > 0.01 * max(c[i], 1):
                    bad.append("%s %s: cachegrind %d, mtool %d" % (fn, level, c[i], s[i]))
    what = "D1, LL data misses per procedure" if data else "I1, D1, LL misses (totals, procedures)"
    print("# %s: %d figures checked" % (name, checked))
    if bad:
        print("not ok - %s vs cachegrind: %s" % (name, "; ".join(bad[:4])))
    elif checked < 3:
        print("not ok - %s vs cachegrind: too few figures to compare" % name)
    else:
        print("ok - %s vs cachegrind: %s within 1%%" % (name, what))


main()
