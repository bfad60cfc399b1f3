#!/usr/bin/env python3
"""tests/count_json_check.py — checks on `mtool count --json` (count.json,
schema mtool.count), called by tests/count_json.sh.  Prints ok / not ok lines.

  summary JSON STDERR COUNTS_TSV ANALYSIS_JSON NM_NAMES REPORT_MD NAME
      the JSON against the text summary the same run printed on stderr,
      against totals recomputed from counts.tsv and the static analysis
      (`mtool analyze --json`: each block's instructions and memory
      operations, each loop's blocks), procedure names against the binary's
      symbols (nm), types of every field, every field documented
  same-instrumentation A B NAME   two runs of one binary (the second from the cache)
  profiles RUN MERGED NAME        --profiles on RUN's profiles: same counts, nothing ran
  odd JSON NAME_HEX FILE_HEX BIN_HEX ARG_HEX... NAME
      names with quotes, backslashes, control characters and bytes that are
      not UTF-8: decoded as docs/REPORT.md says
"""
import json
import re
import sys

import tap
from tap import check



def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def close(a, b, rel=1e-4, absolute=1e-9):
    return a is not None and b is not None and abs(a - b) <= max(absolute, rel * max(abs(a), abs(b)))


# ---- the schema: every field, its type ----------------------------------------

INT, NUM, STR, BOOL = "int", "num", "str", "bool"
OPT = "?"  # suffix: may be null

RUN = {"user_seconds": NUM, "system_seconds": NUM, "wall_seconds": NUM, "tsc_per_cycle": NUM}
SCHEMA = {
    "schema": STR, "version": INT, "binary": STR, "arguments": [STR], "run_directory": STR,
    "ran": BOOL, "profiles_merged_from": STR + OPT, "exit_status": INT + OPT, "status": STR,
    "processes": INT, "threads": INT, "profiles_skipped_other": INT,
    "profiles_skipped_incomplete": INT, "profiles_skipped_damaged": INT,
    "instrumentation": {
        "procedures": INT, "procedures_candidates": INT, "blocks": INT, "blocks_candidates": INT,
        "relocated_code_bytes": INT, "derived_blocks": INT, "probes_saving_flags": INT,
        "self_loops_in_registers": INT,
        "wrapped_calls": INT, "task_hooks": INT, "recorded_call_sites": INT, "table_checks": INT, "unwind_entries": INT,
        "not_instrumented": [{"procedure": STR, "address": STR, "reason": STR}],
    },
    "executed": {"blocks": INT, "instructions": INT, "memory_ops": INT, "memory_reads": INT,
                 "memory_writes": INT, "counted_blocks": INT, "counted_blocks_run": INT,
                 "table_fallbacks": [{"procedure": STR, "address": STR, "count": INT}]},
    "uninstrumented_run": (dict(RUN, runs=INT), OPT),
    "instrumented_run": (dict(RUN, slowdown=NUM + OPT), OPT),
    "machine": {"cpu_model": STR, "profile_source": STR + OPT, "profile_cpu_model": STR + OPT,
                "profile_version": INT + OPT, "calibrated": BOOL, "tsc_hz": NUM + OPT},
    "figure2": {"predicted": BOOL, "error": STR + OPT, "predicted_cycles": NUM + OPT,
                "tsc_per_cycle": NUM + OPT, "tsc_per_cycle_from": STR + OPT,
                "predicted_seconds": NUM + OPT, "probes": INT, "probe_cycles": NUM + OPT,
                "probe_seconds": NUM + OPT, "compensated_user_seconds": NUM + OPT,
                "measured_seconds": NUM + OPT, "measured_from": STR + OPT,
                "overhead_seconds": NUM + OPT, "overhead_percent": NUM + OPT},
    "model_check": {"checked": BOOL, "kernels": INT + OPT, "median_error_percent": NUM + OPT,
                    "worst_error_percent": NUM + OPT, "worst_kernel": STR + OPT,
                    "threshold_percent": NUM, "warning": STR + OPT,
                    "calibration_busy_percent": NUM, "busy_warning": STR + OPT,
                    "calibration_confirmed": NUM + OPT,
                    "fallbacks": [{"benchmark": STR, "how": STR}], "fallback_warning": STR + OPT,
                    "profile": STR + OPT},
    "libs": {"asked": STR, "default": BOOL},
    "libraries": [{"name": STR, "path": STR, "copy": STR + OPT, "left_original": STR + OPT,
                   "dlopened": BOOL, "starts_with": STR + OPT, "procedures": INT + OPT, "procedures_candidates": INT + OPT,
                   "blocks": INT + OPT, "instructions": INT + OPT, "memory_ops": INT + OPT}],
    "procedures": [{"object": STR + OPT, "name": STR, "address": STR, "source": STR, "file": STR + OPT,
                    "line": INT + OPT, "memory_ops": INT, "memory_ops_percent": NUM + OPT,
                    "instructions": INT, "entries": INT}],
    "loops": [{"object": STR + OPT, "procedure": STR, "loop": INT, "depth": INT, "address": STR, "source": STR,
               "file": STR + OPT, "line": INT + OPT, "memory_ops": INT,
               "memory_ops_percent": NUM + OPT, "instructions": INT, "header_executions": INT}],
    "mpi": ({"launcher": STR, "launcher_arguments": [STR],
             "ranks": [{"rank": INT, "host": STR + OPT, "processes": INT, "threads": INT,
                        "blocks": INT, "instructions": INT, "memory_ops": INT,
                        "memory_reads": INT, "memory_writes": INT}],
             "imbalance": NUM + OPT, "max_rank": INT,
             "procedures": [{"object": STR + OPT, "name": STR, "source": STR, "memory_ops": INT,
                             "memory_ops_per_rank": [INT], "imbalance": NUM + OPT, "max_rank": INT}],
             "loops": [{"object": STR + OPT, "procedure": STR, "loop": INT, "depth": INT, "source": STR,
                        "memory_ops": INT, "memory_ops_per_rank": [INT], "imbalance": NUM + OPT,
                        "max_rank": INT}]}, OPT),
}


def type_errors(v, t, path, out, names):
    """Appends to out every place where v does not have type t."""
    optional = False
    if isinstance(t, tuple):
        t, optional = t[0], True
    elif isinstance(t, str) and t.endswith(OPT):
        t, optional = t[:-1], True
    if v is None:
        if not optional:
            out.append(f"{path} is null")
        return
    if isinstance(t, dict):
        if not isinstance(v, dict):
            out.append(f"{path} is not an object")
            return
        for k in set(t) | set(v):
            names.add(k)
            if k not in t:
                out.append(f"{path}.{k}: not in the schema the test knows")
            elif k not in v:
                out.append(f"{path}.{k}: missing")
            else:
                type_errors(v[k], t[k], f"{path}.{k}", out, names)
    elif isinstance(t, list):
        if not isinstance(v, list):
            out.append(f"{path} is not an array")
            return
        for i, e in enumerate(v):
            type_errors(e, t[0], f"{path}[{i}]", out, names)
    elif t == INT:
        if not isinstance(v, int) or isinstance(v, bool):
            out.append(f"{path} = {v!r}: not an integer")
    elif t == NUM:
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            out.append(f"{path} = {v!r}: not a number")
    elif t == STR:
        if not isinstance(v, str):
            out.append(f"{path} = {v!r}: not a string")
    elif t == BOOL:
        if not isinstance(v, bool):
            out.append(f"{path} = {v!r}: not a boolean")


def documented_fields(report_md):
    """The `names` in docs/REPORT.md's count.json section."""
    text = open(report_md, encoding="utf-8").read()
    m = re.search(r"^## `count\.json`.*?(?=^## |\Z)", text, re.S | re.M)
    return set(re.findall(r"`([a-z_0-9]+)(?:\[\])?`", m.group(0))) if m else set()


# ---- the text summary (stderr of the same run) -----------------------------------

def parse_text(path):
    t = {"procedures": [], "loops": [], "not_instrumented": []}
    rows = None
    for line in open(path, encoding="utf-8", errors="replace").read().split("\n"):
        m = re.match(r"mtool count: (.*): (\d+) process(?:es)?, (\d+) threads?, (.*)$", line)
        if m:
            t["processes"], t["threads"], t["status"] = int(m[2]), int(m[3]), m[4]
        m = re.match(r"instrumented (\d+) of (\d+) procedures \(.*\), (\d+) of (\d+) blocks", line)
        if m:
            t["instrumentation"] = [int(x) for x in m.groups()]
        m = re.match(r"  (\d+) bytes of relocated code; (\d+) block counts derived from others' "
                     r"\(no probe\); (\d+) probes save flags; (\d+) self-loops "
                     r"count in a register; (\d+) calls to thread and process creation wrapped; "
                     r"(\d+) system calls that may create a task hooked; (\d+) calls through pointers record their targets; (\d+) jump-table reads "
                     r"check their index; (\d+) unwind entries",
                     line)
        if m:
            t["rewriter"] = [int(x) for x in m.groups()]
        m = re.match(r"  not instrumented: (.*?): (.*)$", line)
        if m:
            t["not_instrumented"].append((m[1], m[2]))
        m = re.match(r"executed \(.*\): (\d+) blocks, (\d+) instructions, (\d+) memory operations "
                     r"\((\d+) reads, (\d+) writes\); (\d+) of (\d+) counted blocks ran", line)
        if m:
            t["executed"] = [int(x) for x in m.groups()]
        m = re.match(r"measured, (uninstrumented|instrumented) run: +user ([\d.]+) s, system "
                     r"([\d.]+) s, wall ([\d.]+) s", line)
        if m:
            t[m[1]] = [float(x) for x in m.groups()[1:]]
        m = re.match(r"  predicted user time +([\d.]+) s +\((\S+) core cycles x ([\d.]+) TSC", line)
        if m:
            t["predicted"] = [float(x) for x in m.groups()]
        m = re.match(r"  instrumented, compensated +(-?[\d.]+) s +\(user [\d.]+ s - predicted cost "
                     r"of (\d+) probes", line)
        if m:
            t["compensated"], t["probes"] = float(m[1]), int(m[2])
        m = re.match(r"  overhead estimate +(-?[\d.]+) s +\(measured - predicted: ([-+\d.]+)%", line)
        if m:
            t["overhead"] = [float(m[1]), float(m[2])]
        if line.startswith("top procedures by memory operations"):
            rows = t["procedures"]
        elif line.startswith("top loops by memory operations"):
            rows = t["loops"]
        elif rows is not None:
            m = re.match(r" +[\d.]+% +(\d+) +(\d+) +(\d+)  (.*)$", line)
            if m:
                rows.append((int(m[1]), int(m[2]), int(m[3]), m[4]))
            elif not line.startswith("    %mem"):
                rows = None
    return t


# ---- independent totals: counts.tsv x the static analysis -----------------------

def recompute(counts_tsv, analysis):
    """Totals, procedure rows and loop rows as count x per-block figures."""
    at = {}
    for p in analysis["procedures"]:
        for b in p.get("blocks", []):
            at.setdefault(int(b["start"], 16), (p, b))
    count = {}
    tot = dict(blocks=0, instructions=0, memory_reads=0, memory_writes=0, counted_blocks=0,
               counted_blocks_run=0)
    for line in open(counts_tsv):
        if line.startswith("#"):
            continue
        addr, n = line.split("\t")[:2]
        addr, n = int(addr, 16), int(n)
        if addr not in at:
            continue
        p, b = at[addr]
        count[(p["index"], b["index"])] = n
        tot["counted_blocks"] += 1
        tot["counted_blocks_run"] += n > 0
        tot["blocks"] += n
        tot["instructions"] += n * b["instructions"]
        tot["memory_reads"] += n * b["mem_reads"]
        tot["memory_writes"] += n * b["mem_writes"]
    tot["memory_ops"] = tot["memory_reads"] + tot["memory_writes"]

    def figures(p, blocks):
        mops = insns = 0
        for bi in blocks:
            n = count.get((p["index"], bi), 0)
            b = p["blocks"][bi]
            mops += n * (b["mem_reads"] + b["mem_writes"])
            insns += n * b["instructions"]
        return mops, insns

    procs, loops = {}, {}
    for p in analysis["procedures"]:
        if not p.get("blocks"):
            continue
        mops, insns = figures(p, range(len(p["blocks"])))
        if insns:
            procs[p["blocks"][0]["start"]] = (p["name"], mops, insns, count.get((p["index"], 0), 0))
        for lp in p.get("loops", []):
            mops, insns = figures(p, lp["blocks"])
            if insns:
                h = lp["header"]
                loops[(p["name"], lp["index"])] = (p["blocks"][h]["start"], lp["depth"], mops, insns,
                                                   count.get((p["index"], h), 0))
    return tot, procs, loops


def cmd_summary(js_path, err_path, counts_tsv, analysis_path, nm_path, report_md, name):
    try:
        d = load(js_path)
    except (OSError, ValueError) as e:
        check(False, f"{name}: count.json is valid JSON", str(e))
        return
    check(d.get("schema") == "mtool.count" and d.get("version") == 1,
          f"{name}: schema mtool.count, version 1")
    errors, names = [], set()
    type_errors(d, SCHEMA, "$", errors, names)
    check(not errors, f"{name}: every field present with its type (numbers as numbers)",
          "; ".join(errors[:5]))
    undocumented = sorted(names - documented_fields(report_md))
    check(not undocumented, f"{name}: every field is documented in docs/REPORT.md",
          ", ".join(undocumented))
    if errors:
        return

    # The text summary of the same run.
    t = parse_text(err_path)
    ex, ins = d["executed"], d["instrumentation"]
    check(t.get("processes") == d["processes"] and t.get("threads") == d["threads"] and
          t.get("status") == d["status"],
          f"{name}: processes, threads and status as the text says",
          f"text {t.get('processes')}, {t.get('threads')}, {t.get('status')!r}")
    want = [ex[k] for k in ("blocks", "instructions", "memory_ops", "memory_reads", "memory_writes",
                            "counted_blocks_run", "counted_blocks")]
    check(t.get("executed") == want, f"{name}: executed blocks, instructions, memory operations as "
          "the text summary says", f"text {t.get('executed')}, json {want}")
    want = [ins[k] for k in ("procedures", "procedures_candidates", "blocks", "blocks_candidates")]
    want2 = [ins[k] for k in ("relocated_code_bytes", "derived_blocks", "probes_saving_flags",
                              "self_loops_in_registers", "wrapped_calls", "task_hooks",
                              "recorded_call_sites",
                              "table_checks", "unwind_entries")]
    shown = [(x["procedure"], x["reason"]) for x in ins["not_instrumented"]][:10]
    check(t.get("instrumentation") == want and t.get("rewriter") == want2 and
          t["not_instrumented"] == shown,
          f"{name}: the rewriter's figures and the procedures left out as the text says",
          f"text {t.get('instrumentation')} {t.get('rewriter')}, json {want} {want2}")
    for key in ("uninstrumented", "instrumented"):
        r = d[key + "_run"]
        tr = t.get(key)
        check((r is None and tr is None) or
              (r is not None and tr is not None and
               all(abs(a - b) <= 0.0005 + 1e-9 for a, b in
                   zip(tr, (r["user_seconds"], r["system_seconds"], r["wall_seconds"])))),
              f"{name}: {key} run's times as the text says", f"text {tr}, json {r}")
    f = d["figure2"]
    if f["predicted"] and "predicted" in t:
        tp = t["predicted"]
        check(abs(tp[0] - f["predicted_seconds"]) <= 0.0005 + 1e-9 and
              close(tp[1], f["predicted_cycles"], 1e-3) and abs(tp[2] - f["tsc_per_cycle"]) <= 5e-5,
              f"{name}: figure 2's prediction as the text says", f"text {tp}, json {f}")
    # Derived blocks (docs/ARCHITECTURE.md) ran no probe: the probes are the
    # executed blocks less theirs, all of them when none is derived.
    check(t.get("probes", f["probes"]) == f["probes"] <= ex["blocks"] and
          (ins["derived_blocks"] > 0 or f["probes"] == ex["blocks"]),
          f"{name}: probes = the text's, at most the executed blocks (all of them when no block "
          f"is derived: {ins['derived_blocks']} derived)", f"{f['probes']} of {ex['blocks']}")

    # Figure 2 is consistent in itself and with the runs.
    m = d["machine"]
    if f["predicted"]:
        base, run = d["uninstrumented_run"], d["instrumented_run"]
        ok = close(f["predicted_seconds"], f["predicted_cycles"] * f["tsc_per_cycle"] / m["tsc_hz"])
        ok = ok and close(f["probe_seconds"], f["probe_cycles"] * f["tsc_per_cycle"] / m["tsc_hz"])
        if base:
            ok = ok and f["measured_seconds"] == base["user_seconds"]
            ok = ok and f["tsc_per_cycle_from"] == "uninstrumented run"
            ok = ok and f["tsc_per_cycle"] == base["tsc_per_cycle"]
        if run:
            ok = ok and close(f["compensated_user_seconds"], run["user_seconds"] - f["probe_seconds"],
                              1e-4, 1e-8)
        if f["measured_seconds"] is not None and f["predicted_seconds"] > 0 and f["measured_seconds"] >= 0:
            ok = ok and close(f["overhead_seconds"], f["measured_seconds"] - f["predicted_seconds"],
                              1e-4, 1e-8)
            ok = ok and close(f["overhead_percent"], 100 * f["overhead_seconds"] / f["predicted_seconds"],
                              1e-3)
        check(ok, f"{name}: figure 2: seconds = cycles x TSC ratio / TSC rate, overhead = measured - "
              "predicted", json.dumps(f))
    # This machine and the profile in use: a calibration of this CPU (the
    # one tests/run.sh made, or the first count's),
    # else, when calibrating failed, the shipped profile of this very CPU, else none.
    try:
        model = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                     if line.startswith("model name"))
    except (OSError, StopIteration):
        model = ""
    if m["calibrated"]:
        ok = (m["profile_source"] or "").startswith("calibrated ") and \
            m["profile_cpu_model"] == m["cpu_model"]
    elif m["profile_source"]:
        ok = m["profile_source"].startswith("default (shipped") and bool(m["profile_cpu_model"])
    else:
        ok = not f["predicted"] and bool(f["error"])
    check(ok and m["cpu_model"].startswith(model) and isinstance(m["profile_version"] or 0, int),
          f"{name}: machine: this CPU and the profile in use ({m['profile_source']})", json.dumps(m))

    # Every row against counts.tsv x the static analysis.
    tot, procs, loops = recompute(counts_tsv, load(analysis_path))
    check(all(ex[k] == v for k, v in tot.items()),
          f"{name}: executed totals = counts.tsv x the analysis' blocks", f"{tot} vs {ex}")
    got = {r["address"]: (r["name"], r["memory_ops"], r["instructions"], r["entries"])
           for r in d["procedures"]}
    check(got == procs and len(d["procedures"]) == len(procs),
          f"{name}: all {len(procs)} executed procedures' memory operations, instructions, entries "
          "= counts.tsv x the analysis",
          str(sorted(set(got.items()) ^ set(procs.items()))[:4]))
    got = {(r["procedure"], r["loop"]): (r["address"], r["depth"], r["memory_ops"], r["instructions"],
                                         r["header_executions"]) for r in d["loops"]}
    check(got == loops and len(d["loops"]) == len(loops),
          f"{name}: all {len(loops)} executed loops' figures = counts.tsv x the analysis",
          str(sorted(set(got.items()) ^ set(loops.items()))[:4]))
    total = ex["memory_ops"]
    for key in ("procedures", "loops"):
        rows = d[key]
        check(all(rows[i]["memory_ops"] >= rows[i + 1]["memory_ops"] for i in range(len(rows) - 1)) and
              all(close(r["memory_ops_percent"], 100 * r["memory_ops"] / total, 1e-4, 1e-6)
                  if total else r["memory_ops_percent"] is None for r in rows),
              f"{name}: {key} sorted by memory operations, percent of all")
        # The text's top rows are the JSON's first ones.
        def text_of(r):
            s = r["source"]
            if key == "loops":
                return f"loop ({r['depth']}) in {r['procedure']}, {s}"
            return f"{r['name']}, {s}"
        want = [(r["memory_ops"], r["instructions"],
                 r["header_executions" if key == "loops" else "entries"], text_of(r))
                for r in rows[:len(t[key])]]
        check(t[key] and want == t[key], f"{name}: the text's top {len(t[key])} {key} are the JSON's "
              "first", f"text {t[key][:2]}, json {want[:2]}")
    # Names the binary has.
    if nm_path != "-":
        syms = {line.split()[0] for line in open(nm_path, encoding="utf-8", errors="replace")
                if line.split()}
        missing = [r["name"] for r in d["procedures"] if r["name"] not in syms]
        check(d["procedures"] and not missing,
              f"{name}: every procedure named is a symbol of the binary (nm)", str(missing[:5]))


def cmd_same_instrumentation(a, b, name):
    a, b = load(a), load(b)
    check(a["instrumentation"] == b["instrumentation"] and a["executed"] == b["executed"],
          f"{name}: a second count (instrumented copy and report from the cache) reports the same "
          "instrumentation and counts",
          f"{a['instrumentation']} vs {b['instrumentation']}")


def cmd_profiles(run, merged, name):
    a, b = load(run), load(merged)
    check(b["ran"] is False and b["exit_status"] is None and b["profiles_merged_from"] and
          b["uninstrumented_run"] is None and b["instrumented_run"] is None and
          b["status"].startswith("profiles merged from"),
          f"{name}: --profiles: nothing ran, no exit status, no run times")
    check(a["executed"] == b["executed"] and a["procedures"] == b["procedures"] and
          a["loops"] == b["loops"],
          f"{name}: --profiles on the run's profiles: the same counts and rows")
    f = b["figure2"]
    check(f["predicted"] and f["measured_seconds"] is None and f["overhead_seconds"] is None and
          f["tsc_per_cycle_from"] == "now (no run)",
          f"{name}: --profiles: a prediction, nothing measured", json.dumps(f))


def decode(hexbytes):
    """What docs/REPORT.md promises for a name's bytes: well-formed UTF-8 kept,
    every other byte the character of that value."""
    out, raw, i = [], bytes.fromhex(hexbytes), 0
    while i < len(raw):
        for n in (4, 3, 2, 1):
            try:
                ch = raw[i:i + n].decode("utf-8")
            except UnicodeDecodeError:
                continue
            if len(ch) == 1:
                out.append(ch)
                i += n
                break
        else:
            out.append(chr(raw[i]))
            i += 1
    return "".join(out)


def cmd_odd(js, name_hex, file_hex, bin_hex, *rest):
    *arg_hex, name = rest
    try:
        d = load(js)
    except (OSError, ValueError) as e:
        check(False, f"{name}: count.json with odd names is valid JSON", str(e))
        return
    check(True, f"{name}: count.json with odd names is valid JSON")
    want_name, want_file = decode(name_hex), decode(file_hex)
    top = d["procedures"][0] if d["procedures"] else {}
    check(top.get("name") == want_name, f"{name}: the top procedure's name (quote, backslash, "
          "newline, tab, control bytes, DEL, a byte that is not UTF-8, UTF-8) decodes to its bytes",
          f"{top.get('name')!r} vs {want_name!r}")
    check(top.get("file", "").endswith(want_file) and
          top.get("source") == f"{top.get('file')}:{top.get('line')}",
          f"{name}: its source file (quote, backslash, newline, tab) decodes to its bytes",
          f"{top.get('file')!r} vs {want_file!r}")
    loop = next((lp for lp in d["loops"] if lp["procedure"] == want_name), None)
    check(loop is not None and loop["file"] == top.get("file"),
          f"{name}: its loops name it and its file")
    check(d["binary"] == decode(bin_hex) and d["arguments"] == [decode(a) for a in arg_hex],
          f"{name}: the binary's path and the arguments decode to their bytes",
          f"{d['binary']!r} {d['arguments']!r}")


def main(argv):
    cmd, args = argv[1], argv[2:]
    {"summary": cmd_summary, "same-instrumentation": cmd_same_instrumentation,
     "profiles": cmd_profiles, "odd": cmd_odd}[cmd](*args)
    return 0 if tap.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
