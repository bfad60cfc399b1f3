#!/usr/bin/env python3
"""tests/cachegrind_check.py — mtool sim's misses per procedure against
Cachegrind's (tests/sim.sh on lackey traces, tests/trace.sh on traced runs).

    cachegrind_check.py [--data [--totals] [--min N] [--library LIB=SOURCE]] NAME
                        CACHEGRIND_OUT MTOOL_SIM_JSON

Prints one "ok - ..." or "not ok - ..." line.  Figures: I1, D1 and LL misses
per function (LL unified: instruction and data misses); with --data, D1 and
LL data misses only (a traced run has no instruction fetches) and no total
(the trace covers the binary's procedures, not the libraries'), unless
--totals (a static executable, libc's procedures traced too: then a
"# NAME: ..." line gives the totals, references and the procedure furthest
from Cachegrind's).  With --library, the procedures of one shared library
traced with the program (tests/trace_libs.sh): mtool's code objects of
library LIB (their "library" field) against Cachegrind's functions of its
source file SOURCE (the path Cachegrind's fl= line ends with: Cachegrind
3.19 names no object file).  Every procedure with at least 1000 misses (N with
--min) at a level (Cachegrind's or mtool's) must agree within 1% there,
and so must the totals.  The misses of a procedure's loops (code objects of
their own) count as its."""
import json
import sys


def cachegrind(path, data, source=None):
    """Misses per function (of file `source` only, when given), and the data
    references (Dr + Dw) in all."""
    events, fn, rows, refs, fl = None, None, {}, 0, ""
    for line in open(path):
        if line.startswith("events:"):
            events = line.split()[1:]
        elif line.startswith("fl="):
            fl = line[3:].strip()
        elif line.startswith("fn=") and source and not fl.endswith(source):
            fn = None
        elif line.startswith("fn="):
            fn = line[3:].strip()
        elif line[:1].isdigit() and fn is not None:
            v = dict(zip(events, map(int, line.split()[1:])))
            r = rows.setdefault(fn, [0, 0, 0])
            r[0] += v.get("I1mr", 0)
            r[1] += v.get("D1mr", 0) + v.get("D1mw", 0)
            r[2] += (0 if data else v.get("ILmr", 0)) + v.get("DLmr", 0) + v.get("DLmw", 0)
            refs += v.get("Dr", 0) + v.get("Dw", 0)
    return rows, refs


def mtool(path, library=None):
    """Misses per procedure (of `library` only, when given), and the
    references (a modify counts two)."""
    d = json.load(open(path))
    names = [lv["name"] for lv in d["levels"]]
    names = names if names[0] == "I1" else [None] + names
    rows = {}
    for c in d["code_objects"]:  # a procedure's loops are summed into it
        if library and c.get("library") != library:
            continue
        r = rows.setdefault(c.get("procedure", c["name"]), [0, 0, 0])
        for i, n in enumerate(names[:3]):
            if n:  # by cause, or a --misses-only report's plain counts
                r[i] += sum(c["misses"][n].values()) if "misses" in c else c["level_misses"][n]
    return rows, sum(c.get("refs", 0) for c in d["code_objects"])


def relative(c, s):
    return (s - c) / max(c, 1)


def summary(name, cg, sim, refs, compared):
    """The figures a report quotes: totals both ways, the worst procedure."""
    worst = max(compared, key=lambda t: abs(relative(t[2], t[3])), default=None)
    line = "# %s: data references: cachegrind %d, mtool %d; " % (name, *refs)
    line += "; ".join("%s misses: cachegrind %d, mtool %d (%+.3f%%)" %
                      (lv, cg["TOTAL"][i], sim["TOTAL"][i],
                       100 * relative(cg["TOTAL"][i], sim["TOTAL"][i])) for i, lv in ((1, "D1"), (2, "LL")))
    if worst:
        line += "; furthest: %s %s %d vs %d (%+.2f%%)" % (worst[0], worst[1], worst[2], worst[3],
                                                         100 * relative(worst[2], worst[3]))
    print(line)


def main():
    args = sys.argv[1:]
    data = args[:1] == ["--data"]
    totals, least = False, 1000
    if data:
        args = args[1:]
        totals = args[:1] == ["--totals"]
        args = args[totals:]
        if args[:1] == ["--min"]:
            least, args = int(args[1]), args[2:]
    library = source = None
    if args[:1] == ["--library"]:
        library, source = args[1].split("=", 1)
        args = args[2:]
    name, cg_path, sim_path = args
    (cg, cg_refs), (sim, sim_refs) = cachegrind(cg_path, data, source), mtool(sim_path, library)
    levels = ["I1", "D1", "LL"]
    if not data or totals:
        for rows in (cg, sim):
            rows["TOTAL"] = [sum(r[i] for r in rows.values()) for i in range(3)]
    bad, checked, compared = [], 0, []
    for fn, s in sim.items():
        if fn.startswith("("):
            continue
        c = cg.get(fn, [0, 0, 0])
        for i, level in enumerate(levels):
            if data and level == "I1":
                continue
            if max(c[i], s[i]) >= least or fn == "TOTAL":
                checked += 1
                if fn != "TOTAL":
                    compared.append((fn, level, c[i], s[i]))
                if abs(c[i] - s[i]) > 0.01 * max(c[i], 1):
                    bad.append("%s %s: cachegrind %d, mtool %d" % (fn, level, c[i], s[i]))
    what = "D1, LL data misses per procedure" if data else "I1, D1, LL misses (totals, procedures)"
    what += " (%d misses or more)" % least if least != 1000 else ""
    what += " and in total" if totals else ""
    what += " of %s" % library if library else ""
    print("# %s: %d figures checked" % (name, checked))
    if totals:
        summary(name, cg, sim, (cg_refs, sim_refs), compared)
    if bad:
        print("not ok - %s vs cachegrind: %s" % (name, "; ".join(bad[:4])))
    elif checked < 3:
        print("not ok - %s vs cachegrind: too few figures to compare" % name)
    else:
        print("ok - %s vs cachegrind: %s within 1%%" % (name, what))


main()
