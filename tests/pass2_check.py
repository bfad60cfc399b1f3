#!/usr/bin/env python3
"""tests/pass2_check.py — checks of pass-2 reports (report.json, schema
docs/REPORT.md) for tests/pass2.sh; prints TAP lines ("ok - ..." or
"not ok - ...").

  pass2_check.py memory REPORT NAME     the memory sample's kernels ranked
  pass2_check.py repeat FIRST SECOND NAME  two timed runs of one pass 1 agree
  pass2_check.py inner REPORT NAME      an inner-first report
  pass2_check.py no-targets REPORT NAME the memory sample without pass 1's call targets
  pass2_check.py any REPORT NAME        any program: a well-formed report
  pass2_check.py regions REPORT NAME CALLS  the phases sample: its loop-free
                                        procedure timed in regions
  pass2_check.py stall SIM REPORT NAME  `mtool sim --json RUNDIR` on the memory
                                        sample: stall estimates beside REPORT's overheads
"""
import json
import sys


def say(ok, text):
    print(("ok - " if ok else "not ok - ") + text)


def load(path, name):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        say(False, f"{name}: report {path} unreadable: {e}")
        return None


def well_formed(r, name):
    keys = {"kind", "name", "procedure", "address", "source", "entries", "measured_cycles",
            "predicted_cycles", "overhead_cycles", "overhead_percent",
            "share_of_program_overhead", "extra_cycles_per_memory_op", "warnings", "outermost"}
    good = (r.get("schema") == "mtool.report" and r.get("version") == 1 and
            all(keys <= set(o) for o in r["objects"]) and
            {"predicted_cycles", "measured_cycles", "overhead_cycles", "memory_ops",
             "memory_ops_in_objects", "unexplained_overhead_cycles"} <= set(r["program"]))
    say(good, f"{name}: report has the documented fields")
    lo, mid, hi = (r.get(k) for k in ("tsc_per_cycle_min", "tsc_per_cycle", "tsc_per_cycle_max"))
    src = r.get("clock_from")
    say(all(isinstance(v, (int, float)) for v in (lo, mid, hi)) and 0 < lo <= hi and
        (lo <= mid <= hi if src == "around the run" else src == "program" and 0.1 <= mid <= 5),
        f"{name}: figure 2's clock, {src}, lies within the least and the most measured around "
        f"the runs, or is the program's own, a TSC of 0.6..6 GHz against a core of 0.5..6.5 GHz "
        f"({lo} <= {mid} <= {hi})")
    rows = [o["overhead_cycles"] for o in r["objects"]]
    say(rows == sorted(rows, reverse=True), f"{name}: rows sorted by overhead, largest first")
    return good


def kernel(r, proc):
    """The timed loop of the kernel procedure `proc` (or the procedure)."""
    rows = [o for o in r["objects"] if o["procedure"] == proc]
    return rows[0] if rows else None


def clock_moved(r, o):
    """How far, in %, the core clock moved around the report's timed runs
    (tsc_per_cycle_min/max), for object `o` in cycles at the clock measured
    around its run, which it is off by if it ran at another; 0 for one in
    cycles at the clock its threads measured as it ran."""
    lo, hi = r.get("tsc_per_cycle_min"), r.get("tsc_per_cycle_max")
    return 100 * (hi / lo - 1) if lo and hi and o.get("clock_from") != "program" else 0.0


def compute_allowance(r, o):
    """How far a compute-bound loop's measured time may be from its prediction:
    the model's error -- 10%, or, where the model's self-check on this CPU
    found a larger median error over its compute-bound kernels, three times
    that (a fixed 10% would hold on the CPUs the model was tuned on only),
    never more than 30%: a model that far off fails here -- plus, for an
    object without a clock measured as it ran, how far the core clock moved
    around the runs, which the report states (CI's compute_poly at -16.3%
    against 15.9% allowed; the Xeon family 6 model 85's clock moved between
    0.807 and 0.927 ticks a cycle within ms, and by 32% over one report's
    runs when the host was busy).  Never more than 50% in all: a
    compute-bound loop reported that far from its prediction is an error in
    the timers, not noise."""
    mc = r.get("model_check") or {}
    median = mc.get("median_error_percent") if mc.get("checked") else None
    model = min(30.0, max(10.0, 3 * median)) if median is not None else 10.0
    return min(50.0, model + clock_moved(r, o))


def memory(path, name):
    r = load(path, name)
    if not r or not well_formed(r, name):
        return
    k = {p: kernel(r, p) for p in KERNELS}
    missing = [p for p, o in k.items() if o is None]
    say(not missing, f"{name}: every kernel timed (missing: {missing or 'none'})")
    if missing:
        return
    pct = {p: o["overhead_percent"] for p, o in k.items()}
    summary = ", ".join(f"{p} {v:+.1f}%" for p, v in pct.items())
    say(pct["list_walk_random"] > 100,
        f"{name}: random list traversal misses the cache: overhead > 100% ({summary})")
    say(pct["list_walk_random"] > pct["list_walk_sequential"],
        f"{name}: random traversal above sequential")
    say(pct["matmul_cols"] > pct["matmul_rows"], f"{name}: column-order matmul above row order")
    allow = compute_allowance(r, k["compute_poly"])
    say(abs(pct["compute_poly"]) <= allow,
        f"{name}: compute-bound loop within {allow:.1f}% ({pct['compute_poly']:+.1f}%; the "
        f"allowance: 10%, or three times the model's checked median error on this CPU, plus "
        f"the {clock_moved(r, k['compute_poly']):.1f}% the clock moved around the runs where the "
        f"loop has no clock of its own, at most 50%)")
    clocks = {p: (o.get("clock_from"), o.get("tsc_per_cycle")) for p, o in k.items()}
    say(all(c == "program" and isinstance(t, (int, float)) and 0.1 <= t <= 5
            for c, t in clocks.values()),
        f"{name}: every kernel in cycles at the clock its thread measured as it ran, a TSC of "
        f"0.6..6 GHz against a core of 0.5..6.5 GHz ({clocks})")
    say(pct["stream_triad"] > pct["compute_poly"] + 20,
        f"{name}: streaming kernel above the compute-bound one")
    want = {p: {"matmul_rows": 8, "matmul_cols": 2}.get(p, 1) for p in k}  # main's calls
    got = {p: o["entries"] for p, o in k.items()}
    say(got == want, f"{name}: pass-2 entries of the kernel loops as main calls them ({got})")
    rows = kernel(r, "sum_rows")
    say(rows is not None and "98% caller rule (row_sum)" in rows["warnings"],
        f"{name}: sum_rows timed through MTOOL's 98% caller rule, with the warning "
        f"({rows['warnings'] if rows else 'not timed'})")
    scaled = kernel(r, "scaled_sum")
    warn = scaled["warnings"] if scaled else "not timed"
    say(scaled is not None and "negligible product rule (progress)" in warn and
        "scale_value" not in warn,
        f"{name}: scaled_sum timed through the constant-time-leaf rule (scale_value, silent) and "
        f"the negligible-product rule (progress, with the warning) ({warn})")
    # Its loop calls scale_value, whose error path never runs: the leaf's
    # calls overlap the loop's iterations (its throughput, not its critical
    # path: costmodel/program.c, straight_path).  Predicted with the critical
    # path, it measured 64% below (AMD EPYC Zen 3).  Load only adds to the
    # measured side, so this bound holds on a busy machine too.
    say(scaled is not None and scaled["overhead_percent"] >= -allow,
        f"{name}: scaled_sum, a loop calling a leaf that runs straight through, not more than "
        f"{allow:.1f}% below its prediction ({scaled['overhead_percent'] if scaled else 'not timed'}%)")
    chunks = kernel(r, "dispatch_chunks")
    say(chunks is not None and not chunks["warnings"] and chunks["overhead_percent"] > 50,
        f"{name}: dispatch_chunks, whose kernels are called through pointers, timed from the "
        f"dynamic call graph without a warning, overhead > 50% (the gather) "
        f"({chunks['overhead_percent'] if chunks else 'not timed'}%)")
    over = [o["name"] for o in r["objects"] if (o["overhead_percent"] < -10) !=
            ("over-predicts" in o["warnings"])]
    say(not over, f"{name}: every row more than 10% below its prediction, and only those, says "
        f"the cost model over-predicts it (wrong: {over or 'none'})")
    p = r["program"]
    share = p["memory_ops_in_objects"] / p["memory_ops"] if p["memory_ops"] else 0
    say(share >= 0.9, f"{name}: {100 * share:.1f}% of memory operations inside timed objects")
    un = p["unexplained_overhead_cycles"] / p["overhead_cycles"] if p["overhead_cycles"] else 1
    say(abs(un) <= 0.25, f"{name}: unexplained overhead {100 * un:+.1f}% of the program's (|.| <= 25%)")


# The stated factor within which the stall estimate agrees with pass 2's
# measured overhead on the memory-bound kernels (docs/SIMULATOR.md, "The
# stall estimate": 0.41 to 0.96 on the Xeon family 6 model 207, quiet; the
# measured side moves up to 2x with other tenants' use of the shared L3).
STALL_FACTOR = 4.0
# Kernels the sample makes memory-bound, judged when pass 2 measured them so
# (overhead at least 100% of the prediction).
MEMORY_BOUND = ("list_walk_random", "list_walk_sequential", "matmul_cols", "stream_triad")


def stall(sim_path, report_path, name):
    s, r = load(sim_path, name), load(report_path, name)
    if not s or not r:
        return
    st = s.get("stall") or {}
    keys = {"run_directory", "latency_cycles", "stream_cycles", "parallelism", "profile",
            "objects", "outside",
            "outside_traced", "program", "agreement"}
    say(keys <= set(st), f"{name}: sim RUNDIR's stall has the documented fields")
    if not keys <= set(st):
        return
    objs = st["objects"]
    say([o["name"] for o in objs] == [o["time_spec"] for o in r["objects"]],
        f"{name}: a stall estimate beside every object pass 2 timed, in its order")
    same = all(abs(o["overhead_cycles"] - p["overhead_cycles"]) <=
               1e-5 * max(1.0, abs(p["overhead_cycles"])) for o, p in zip(objs, r["objects"]))
    say(same, f"{name}: the overheads set beside the estimates are report.json's")
    lat = st["latency_cycles"]
    levels = [lat[k] for k in ("L1", "L2", "L3", "L4", "memory") if k in lat]
    say(len(levels) >= 3 and levels == sorted(levels) and 1 <= levels[0] and
        st["parallelism"] >= 1, f"{name}: latencies ordered by level ({lat}), "
        f"parallelism {st['parallelism']}")
    stream = st["stream_cycles"]
    say(set(stream) == set(lat) and all(0 < stream[k] <= lat[k] for k in lat) and
        stream["memory"] > stream["L1"], f"{name}: a streaming cost per level, none above its "
        f"latency, memory's above L1's ({stream})")
    bounded = [o["name"] for o in objs if not (o["stall"]["overlapped_cycles"] <= 1.0001 *
               o["stall"]["estimate_cycles"] and o["stall"]["estimate_cycles"] <= 1.0001 *
               o["stall"]["serial_cycles"])]
    say(not bounded, f"{name}: every estimate between its overlapped and serial bounds "
        f"(not: {bounded or 'none'})")
    k = {}
    for o in objs:
        k.setdefault(o["procedure"], o)
    missing = [p for p in KERNELS if p not in k]
    say(not missing, f"{name}: every kernel has an estimate (missing: {missing or 'none'})")
    if missing:
        return
    indep = {p: k[p]["stall"]["independent_refs"] / max(1, k[p]["stall"]["refs"])
             for p in KERNELS + ("dispatch_chunks",) if p in k}
    say(indep.get("list_walk_random") == 0 and indep.get("list_walk_sequential") == 0 and
        all(indep.get(p, 0) >= 0.9 for p in ("matmul_cols", "stream_triad", "dispatch_chunks")),
        f"{name}: the list walks chase pointers, the column walk, the triad and the gather do not "
        f"(share of references in loops chasing none: {indep})")
    est = {p: 100 * k[p]["stall"]["estimate_cycles"] / k[p]["predicted_cycles"] for p in KERNELS}
    meas = {p: 100 * k[p]["overhead_cycles"] / k[p]["predicted_cycles"] for p in KERNELS}
    summary = ", ".join(f"{p} {est[p]:+.1f}% (measured {meas[p]:+.1f}%)" for p in KERNELS)
    for a, b, margin in (("list_walk_random", "list_walk_sequential", 0),
                         ("matmul_cols", "matmul_rows", 0),
                         ("stream_triad", "compute_poly", 20)):
        say(est[a] > est[b] + margin and meas[a] > meas[b] + margin,
            f"{name}: the stall estimate ranks {a} above {b}{' + 20%' if margin else ''}, as "
            f"pass 2's overhead does ({summary})")
    bound = [p for p in MEMORY_BOUND if meas[p] >= 100]
    off = [f"{p} {est[p] / meas[p]:.2f}" for p in bound
           if not 1 / STALL_FACTOR <= est[p] / meas[p] <= STALL_FACTOR]
    say(len(bound) >= 2 and not off,
        f"{name}: on the memory-bound kernels ({', '.join(bound)}) the stall estimate is within "
        f"a factor {STALL_FACTOR:g} of the measured overhead (off: {off or 'none'})")
    poly = k["compute_poly"]["stall"]
    say(poly["estimate_cycles"] <= 0.02 * k["compute_poly"]["predicted_cycles"],
        f"{name}: compute_poly's stall estimate is near zero ({est['compute_poly']:.2f}% of its "
        f"prediction, at most 2%)")
    ag = st["agreement"]
    say(0 <= ag["same_order"] <= ag["pairs"] and ag["memory_bound"] >= len(bound),
        f"{name}: the agreement counts pairs ({ag['same_order']} of {ag['pairs']} in the same "
        f"order) and the memory-bound objects ({ag['memory_bound']})")


KERNELS = ("list_walk_random", "list_walk_sequential", "matmul_rows", "matmul_cols",
           "stream_triad", "compute_poly")


def ranking(r):
    """The pairs of kernels whose order the memory sample asserts."""
    k = {p: kernel(r, p) for p in KERNELS}
    if any(o is None for o in k.values()):
        return None
    pct = {p: o["overhead_percent"] for p, o in k.items()}
    return (pct["list_walk_random"] > pct["list_walk_sequential"],
            pct["matmul_cols"] > pct["matmul_rows"],
            pct["stream_triad"] > pct["compute_poly"] + 20), pct["compute_poly"]


def compute_agrees(ca, cb):
    """The compute-bound loop's overhead in two reports: within 5 points, or
    the two reports' spreads over their runs meet (the core clock moves by
    a few % within seconds on the Xeon family 6 model 207: +5.5% and +0.1%
    in two reports of a quiet machine)."""
    lo = [o["overhead_percent"] for o in (ca, cb)]
    hi = [100 * (o["measured_cycles_max"] - o["predicted_cycles"]) / o["predicted_cycles"]
          for o in (ca, cb)]
    return abs(lo[0] - lo[1]) <= 5 or max(lo) <= min(hi) + 5


# Every kernel's figure agrees within 5 points, on the scale where it is
# bounded: a positive overhead as the share of the measured time lost to
# memory, a negative one as % of predicted -- or the two reports' spreads
# over their runs meet (within 5 points).  On the share scale 5 points
# are a change of 5%/(1 - share) in the measured time: 5% for a
# compute-bound loop, 8% for matmul_rows at +70% (CI's reports +70.2 and
# +78.2% of predicted, 41.2 and 43.8% of measured, on the Xeon family 6
# model 207), 2% of a random walk at +13,000%, whose % of predicted moves
# by hundreds of points when its time moves by 2%.
def scale(o, cycles):
    pct = 100 * (cycles - o["predicted_cycles"]) / o["predicted_cycles"]
    return pct if pct < 0 else 100 * (cycles - o["predicted_cycles"]) / cycles


def kernel_agrees(ka, kb):
    """(agrees, within-spread-only) for one kernel's object in two reports."""
    x, y = scale(ka, ka["measured_cycles"]), scale(kb, kb["measured_cycles"])
    if abs(x - y) <= 5:
        return True, False
    hx, hy = scale(ka, ka["measured_cycles_max"]), scale(kb, kb["measured_cycles_max"])
    return max(x, y) <= min(hx, hy) + 5, True


def repeat(paths, name):
    """Two reports of the same pass 1 (or three, when the first two
    disagree): every figure must agree in some pair of them.  Load no timer
    sees (a busy SMT sibling, other tenants) can slow a throughput-bound
    kernel for seconds, and other tenants' use of a shared L3 or of the
    core's L2 moves a memory-bound one for minutes (matmul_rows, whose B
    streams from L2: least of 5 runs +50.9% in one report, +21.5% in the
    next; +32.2% and +82.6% in CI's two reports, a third agreeing with neither, on the
    Xeon family 6 model 207), so a third report decides per kernel: a
    timer that measured noise would agree in no pair."""
    reports = [load(p, name) for p in paths]
    if not all(reports):
        return
    pct = [{o["name"]: o["overhead_percent"] for o in r["objects"]} for r in reports]
    say(all(set(p) == set(pct[0]) for p in pct), f"{name}: the same objects timed each time")
    ranks = [ranking(r) for r in reports]
    ranked = sum(1 for rk in ranks if rk is not None and all(rk[0]))
    say(ranked >= len(reports) - (len(reports) - 1) // 2,
        f"{name}: the reports rank the kernels as expected ({ranked} of {len(reports)})")
    pairs = [(i, j) for i in range(len(reports)) for j in range(i + 1, len(reports))]
    kernels = {k: [kernel(r, k) for r in reports] for k in KERNELS + ("dispatch_chunks",)}
    if all(kernels["compute_poly"]):
        ca = kernels["compute_poly"]
        figs = ", ".join(f"{o['overhead_percent']:+.1f}%" for o in ca)
        say(any(compute_agrees(ca[i], ca[j]) for i, j in pairs),
            f"{name}: the compute-bound loop's overhead agrees within 5 points in some pair of "
            f"reports, or their spreads over their runs meet ({figs})")
    apart, spread = [], []
    for k, objs in kernels.items():
        if not all(objs):
            apart.append(f"{k} not timed in every report")
            continue
        verdicts = [kernel_agrees(objs[i], objs[j]) for i, j in pairs]
        if not any(ok for ok, _ in verdicts):
            apart.append(k + " " + "/".join(f"{scale(o, o['measured_cycles']):+.1f}" for o in objs))
        elif not any(ok and not by_spread for ok, by_spread in verdicts):
            spread.append(k + " " + "/".join(
                f"[{scale(o, o['measured_cycles']):+.1f}, {scale(o, o['measured_cycles_max']):+.1f}]"
                for o in objs))
    say(not apart,
        f"{name}: every kernel's overhead agrees within 5 points in some pair of reports, or "
        f"their spreads over their runs meet ({', '.join(apart) or 'all'})")
    if spread:
        print(f"# {name}: within the reports' spreads, not 5 points: {'; '.join(spread)}")
    diffs = ", ".join(f"{n.split(':')[0]} " + "/".join(f"{p[n]:+.0f}" for p in pct)
                      for n in pct[0] if all(n in p for p in pct))
    print(f"# {name}: overhead % in the {len(reports)} runs: {diffs}")


def inner(path, name):
    r = load(path, name)
    if not r or not well_formed(r, name):
        return
    say(r["order"] == "inner-first", f"{name}: inner-first report says so")
    say(len(r["objects"]) > 0, f"{name}: inner-first times objects ({len(r['objects'])})")


def no_targets(path, name):
    """Without call_targets.tsv the kernels' callers are unknown: nothing
    times dispatch_chunks (its calls would be unknown work anyway)."""
    r = load(path, name)
    if not r:
        return
    timed = [o for o in r["objects"] if o["procedure"] == "dispatch_chunks"]
    kernels = [o for o in r["not_timed"] if o["procedure"] == "gather_chunk"]
    say(not timed and kernels,
        f"{name}: without pass 1's call targets gather_chunk is not timed from its caller "
        f"({'dispatch_chunks timed' if timed else 'not a candidate' if not kernels else 'as expected'})")


def any_report(path, name):
    r = load(path, name)
    if r:
        well_formed(r, name)


def regions(path, name, calls):
    """phases (samples/phases.c): one loop-free procedure, a memory phase
    (scattered dependent loads) then a compute phase (L1 hits), timed whole
    and in regions of nearly equal predicted time."""
    r = load(path, name)
    if not r or not well_formed(r, name):
        return
    regs = sorted((o for o in r["objects"] if o["kind"] == "region" and o["procedure"] == "phases"),
                  key=lambda o: o["region"])
    whole = [o for o in r["objects"] if o["kind"] == "procedure" and o["procedure"] == "phases"]
    n = len(regs)
    say(n >= 2, f"{name}: phases timed in {n} regions (>= 2)")
    if n < 2:
        return
    say(all(o["regions"] == n for o in regs) and [o["region"] for o in regs] == list(range(1, n + 1)),
        f"{name}: regions numbered 1..{n} of {n}")
    fields = all({"region", "regions", "region_end", "time_spec"} <= set(o) for o in regs)
    ends = [o["region_end"] for o in regs]
    chained = ends[-1] is None and all(ends[k] == regs[k + 1]["address"] for k in range(n - 1))
    say(fields and chained, f"{name}: each region ends where the next starts, the last at the returns")
    say(regs[0]["address"] == (whole[0]["address"] if whole else None),
        f"{name}: region 1 starts at the procedure's entry")
    ent = [o["entries"] for o in regs]
    say(all(e == calls for e in ent), f"{name}: every region entered once per call ({ent}, {calls} calls)")
    pred = [o["predicted_cycles"] for o in regs]
    say(max(pred) <= 2 * min(pred), f"{name}: regions of nearly equal predicted time "
        f"({', '.join(f'{p:.3g}' for p in pred)})")
    first, last = regs[0], regs[-1]
    rank = {id(o): i for i, o in enumerate(r["objects"])}
    say(first["overhead_percent"] > last["overhead_percent"] + 100 and rank[id(first)] < rank[id(last)],
        f"{name}: the memory phase's region (1: {first['overhead_percent']:+.0f}%) ranks above the "
        f"compute phase's ({n}: {last['overhead_percent']:+.0f}%)")
    top = max(regs, key=lambda o: o["overhead_cycles"])
    say(top["region"] < n, f"{name}: the region with most overhead is not the compute one "
        f"(region {top['region']} of {n})")
    # (the cost model's own over-prediction note aside: a compute region may sit near -10%)
    notes = [o["warnings"] for o in regs if o["warnings"] and "over-predicts" not in o["warnings"]]
    say(not notes, f"{name}: no warnings on the regions "
        f"({'; '.join(notes) or 'none'})")
    if whole:
        total = sum(o["measured_cycles"] for o in regs)
        w = whole[0]["measured_cycles"]
        say(abs(total - w) <= 0.1 * w and not any(o["outermost"] for o in regs),
            f"{name}: the regions' measured time adds up to the procedure's within 10% "
            f"({total:.4g} vs {w:.4g}), nested in it")
    else:
        say(False, f"{name}: the procedure itself is timed too")


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "memory":
        memory(sys.argv[2], sys.argv[3])
    elif mode == "repeat":
        repeat(sys.argv[2:-1], sys.argv[-1])
    elif mode == "inner":
        inner(sys.argv[2], sys.argv[3])
    elif mode == "no-targets":
        no_targets(sys.argv[2], sys.argv[3])
    elif mode == "regions":
        regions(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif mode == "stall":
        stall(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        any_report(sys.argv[2], sys.argv[3])
