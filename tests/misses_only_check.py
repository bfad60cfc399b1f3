#!/usr/bin/env python3
"""tests/misses_only_check.py — `mtool sim --misses-only` against the full
simulator on the same references (tests/sim_misses_only.sh).

    misses_only_check.py NAME FULL_JSON MISSES_ONLY_JSON

Prints "ok - ..." or "not ok - ..." lines: every level's references and
misses, by kind, equal; every code object's references and misses per level
equal (the full report's misses by cause summed), the same code objects;
the misses-only report says it is one and leaves the fields it does not
compute out (docs/SIMULATOR.md, "mtool sim output")."""
import json
import sys

LEVEL_COUNTS = ["refs", "misses", "reads", "read_misses", "writes", "write_misses",
                "fetches", "fetch_misses"]
OMITTED = ["causes", "evictions", "writebacks", "back_invalidations", "prefetches",
           "lines_used", "spatial_use", "temporal_use"]
OMITTED_TOP = ["pairs", "replacements", "object_use", "data_objects"]


def main():
    name, full_path, lean_path = sys.argv[1:]
    full, lean = json.load(open(full_path)), json.load(open(lean_path))
    bad = []
    fl, ll = full["levels"], lean["levels"]
    if [l["name"] for l in fl] != [l["name"] for l in ll]:
        bad.append("levels %s against %s" % ([l["name"] for l in fl], [l["name"] for l in ll]))
    for f, l in zip(fl, ll):
        for k in LEVEL_COUNTS:
            if f[k] != l[k]:
                bad.append("%s %s: full %d, misses-only %d" % (f["name"], k, f[k], l[k]))
    names = [l["name"] for l in fl]
    fc = {c["id"]: c for c in full["code_objects"]}
    lc = {c["id"]: c for c in lean["code_objects"]}
    if set(fc) != set(lc):
        bad.append("code objects %d against %d" % (len(fc), len(lc)))
    for i in sorted(set(fc) & set(lc)):
        want = [c["refs"] for c in [fc[i]]] + [sum(fc[i]["misses"][n].values()) for n in names]
        got = [lc[i]["refs"]] + [lc[i]["level_misses"][n] for n in names]
        if want != got:
            bad.append("code object %s: full %s, misses-only %s" % (fc[i]["name"], want, got))
    misses = sum(l["misses"] for l in fl)
    print("# %s: %d levels, %d code objects, %d misses compared" % (name, len(fl), len(fc), misses))
    if bad:
        print("not ok - %s: misses-only differs from the full simulator: %s"
              % (name, "; ".join(bad[:4])))
    else:
        print("ok - %s: misses-only gives the full simulator's references and misses per level "
              "and per code object" % name)
    kept = [k for k in OMITTED if any(k in l for l in ll)] + [k for k in OMITTED_TOP if k in lean]
    kept += [k for c in lean["code_objects"] for k in ("misses",) if k in c][:1]
    if lean.get("misses_only") is not True or kept or \
            not set(OMITTED + OMITTED_TOP) <= set(lean.get("omitted", [])):
        print("not ok - %s: the misses-only report says what it omits and has none of it "
              "(present: %s)" % (name, kept))
    else:
        print("ok - %s: the misses-only report says what it omits and has none of it" % name)


main()
