#!/usr/bin/env python3
"""tests/misses_only_check.py — `mtool sim --misses-only` against the full
simulator on the same references (tests/sim_misses_only.sh).

    misses_only_check.py NAME FULL_JSON MISSES_ONLY_JSON

Prints "ok - ..." or "not ok - ..." lines: every level's references and
misses, by kind, equal; every code object's references and misses per level
equal (the full report's misses by cause summed), the same code objects;
the misses-only report says it is one and leaves the fields it does not
compute out (docs/SIMULATOR.md, "mtool sim output").  With several CPUs,
every CPU's figures both compute equal too: threads, references, misses per
level, coherence misses per private level, true and false sharing,
invalidations sent and received, interventions made and served, upgrades."""
import json
import sys

LEVEL_COUNTS = ["refs", "misses", "reads", "read_misses", "writes", "write_misses",
                "fetches", "fetch_misses"]
OMITTED = ["causes", "evictions", "writebacks", "back_invalidations", "prefetches",
           "lines_used", "spatial_use", "temporal_use"]
OMITTED_TOP = ["pairs", "replacements", "object_use", "data_objects"]


CPU_COUNTS = ["threads", "refs", "true_sharing", "false_sharing", "invalidations_sent",
              "invalidations_received", "interventions", "interventions_served", "upgrades"]


def cpu_figures(cpu, private):
    """The figures of a per_cpu entry that both reports compute."""
    got = {k: cpu[k] for k in CPU_COUNTS}
    for level, m in cpu["misses"].items():
        got[level] = m["misses"]
        if level in private:
            got[level + " coherence"] = m["coherence"]
    return got


def compare_cpus(name, full, lean):
    """ok/not ok lines for the processors' figures, when there are any."""
    if "processors" not in full:
        return
    fp, lp = full["processors"], lean.get("processors", {})
    bad = []
    for k in ("cpus", "private", "shared"):
        if fp[k] != lp.get(k):
            bad.append("%s: full %s, misses-only %s" % (k, fp[k], lp.get(k)))
    for f, l in zip(fp["per_cpu"], lp.get("per_cpu", [])):
        want, got = cpu_figures(f, fp["private"]), cpu_figures(l, fp["private"])
        bad += ["cpu %d %s: full %s, misses-only %s" % (f["cpu"], k, want[k], got[k])
                for k in want if want[k] != got.get(k)]
    events = sum(c["invalidations_sent"] + c["interventions"] + c["upgrades"]
                 for c in fp["per_cpu"])
    print("# %s: %d CPUs, %d coherence events compared" % (name, fp["cpus"], events))
    if bad or len(lp.get("per_cpu", [])) != fp["cpus"]:
        print("not ok - %s: misses-only's processors differ from the full simulator's: %s"
              % (name, "; ".join(bad[:4])))
    else:
        print("ok - %s: misses-only gives the full simulator's figures per CPU (misses per "
              "level, coherence misses, sharing, invalidations, interventions, upgrades)" % name)


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
    compare_cpus(name, full, lean)
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
