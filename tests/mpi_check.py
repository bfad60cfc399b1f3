#!/usr/bin/env python3
"""tests/mpi_check.py — checks on an MPI job's count.json ("mpi", docs/REPORT.md), called by
tests/mpi.sh.  Prints ok / not ok lines.

  job JSON PROGRAM_STDOUT REPORT_MD NRANKS NAME RANK_JSON...
      every field typed and documented (count_json_check's schema); one rank each 0..N-1 on
      this host; each rank's figures, and each procedure's and loop's memory operations per
      rank, equal to the count.json of that rank's profiles merged alone (RANK_JSON, rank
      order), which tests/mpi.sh checks against callgrind; the job's totals the sum of the
      ranks'; the stencil's sweep loop imbalanced as the slabs the program printed
      ("rank R rows N"): max / mean of the rows, the most on the rank with the most rows
  pass2 REPORT_JSON COUNT_JSON PROGRAM_STDOUT HISTORY_DB NRANKS STEPS NAME [HOSTS]
      (HISTORY_DB - : none; HOSTS: each rank's host, comma-separated, else this host's)
      an MPI job's pass 2 (report.json's "mpi"): one rank each 0..N-1 on its host (as
      count.json names it too); per
      object, each rank's figures, its imbalance the max / mean of the ranks' measured and
      slowest_rank the rank with the most; with one timed run (report.json's runs), the
      ranks' measured summing to the job's (the job's timers are every rank's merged; over
      several runs each figure is its own least); sweep's loop entered STEPS
      times in every rank, its memory operations per rank those count.json has for it,
      its predicted cycles per rank in the ratio of the slabs' rows the program printed;
      the history's last run holds the same figures per rank (rank_figures, run_ranks)
  libs REPORT_JSON RUNDIR PROGRAM_STDOUT HISTORY_DB NRANKS STEPS COLS NAME
      a job of mpi_libstencil counted and timed with --libs libmtstencil: in every rank
      (RUNDIR/mpi/rank-N.libmtstencil.so.counts.tsv) the library's sweep entered STEPS
      times, its row loop run STEPS x rows and its inner body STEPS x rows x (COLS - 2)
      times (rows as the program printed them: the known trip counts), the ranks summing
      to the job's libs/libmtstencil.so.counts.tsv; count.json's per-rank procedures hold
      the library's sweep, imbalanced as the rows; report.json's "mpi" holds the
      library's loop ("library": "libmtstencil.so") with its per-rank rows (entered STEPS
      times, predicted in the ratio of the rows), and every object's figures per rank,
      imbalance and slowest rank as in pass2, in the history too
  plain JSON NAME
      a program run without a launcher: "mpi" is null
"""
import json
import re
import socket
import sys

import count_json_check as cj
import tap
from tap import check


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def slab_rows(stdout_path):
    rows = {}
    for line in open(stdout_path, encoding="utf-8"):
        m = re.match(r"rank (\d+) rows (\d+)$", line.strip())
        if m:
            rows[int(m[1])] = int(m[2])
    return [rows[r] for r in sorted(rows)]


def same_objects(job_rows, rank_jsons, key, name, what):
    """Every job row's memory operations per rank are those of the rank's own count.json."""
    wrong = []
    for row in job_rows:
        for r, rj in enumerate(rank_jsons):
            own = {key(x): x["memory_ops"] for x in rj[what]}
            if row["memory_ops_per_rank"][r] != own.get(key(row), 0):
                wrong.append(f"{key(row)} rank {r}: {row['memory_ops_per_rank'][r]} vs "
                             f"{own.get(key(row), 0)}")
        if sum(row["memory_ops_per_rank"]) != row["memory_ops"]:
            wrong.append(f"{key(row)}: per rank sums to {sum(row['memory_ops_per_rank'])}, "
                         f"not {row['memory_ops']}")
    check(job_rows and not wrong, f"{name}: every {what[:-1]}'s memory operations per rank are "
          f"those of the rank merged alone ({len(job_rows)} rows)", "; ".join(wrong[:4]))


def cmd_job(js_path, stdout_path, report_md, nranks, name, *rank_paths):
    d = load(js_path)
    errors, names = [], set()
    cj.type_errors(d, cj.SCHEMA, "$", errors, names)
    check(not errors, f"{name}: every field present with its type", "; ".join(errors[:5]))
    undocumented = sorted(names - cj.documented_fields(report_md))
    check(not undocumented, f"{name}: every field is documented in docs/REPORT.md",
          ", ".join(undocumented))
    mpi = d.get("mpi")
    if errors or not mpi:
        check(False, f"{name}: count.json has the job's ranks", "mpi is null")
        return
    ranks = mpi["ranks"]
    check([r["rank"] for r in ranks] == list(range(int(nranks))),
          f"{name}: ranks 0..{int(nranks) - 1}, one entry each", str([r["rank"] for r in ranks]))
    host = socket.gethostname()
    check(all(r["host"] == host for r in ranks), f"{name}: every rank recorded this host ({host})",
          str([r["host"] for r in ranks]))
    rank_jsons = [load(p) for p in rank_paths]
    fields = [("blocks", "blocks"), ("instructions", "instructions"), ("memory_ops", "memory_ops"),
              ("memory_reads", "memory_reads"), ("memory_writes", "memory_writes")]
    wrong = [f"rank {r['rank']} {f}: {r[f]} vs {rj['executed'][g]}"
             for r, rj in zip(ranks, rank_jsons) for f, g in fields if r[f] != rj["executed"][g]]
    check(len(rank_jsons) == len(ranks) and not wrong,
          f"{name}: each rank's blocks, instructions, reads and writes are its profiles' merged "
          "alone", "; ".join(wrong[:4]))
    sums = {f: sum(r[f] for r in ranks) for f, _ in fields}
    check(all(sums[f] == d["executed"][g] for f, g in fields) and
          sum(r["processes"] for r in ranks) == d["processes"],
          f"{name}: the job's totals (executed, processes) are the sum of its ranks'",
          f"{sums} vs {d['executed']}")
    same_objects(mpi["procedures"], rank_jsons, lambda x: x["name"], name, "procedures")
    same_objects(mpi["loops"], rank_jsons, lambda x: (x["procedure"], x["loop"]), name, "loops")

    rows = slab_rows(stdout_path)
    sweep = [lp for lp in mpi["loops"] if lp["procedure"] == "sweep" and lp["depth"] == 1]
    if len(rows) != int(nranks) or len(sweep) != 1:
        check(False, f"{name}: the program's slabs and sweep's outer loop are found",
              f"{rows}, {len(sweep)} loops")
        return
    want = max(rows) * len(rows) / sum(rows)
    got = sweep[0]["imbalance"]
    check(abs(got - want) <= 0.01 * want,
          f"{name}: sweep's loop imbalance {got:.4f} is the slabs' max / mean {want:.4f} (1%)")
    check(sweep[0]["max_rank"] == rows.index(max(rows)),
          f"{name}: the most on rank {sweep[0]['max_rank']}, the one with the most rows")
    per_row = [m / n for m, n in zip(sweep[0]["memory_ops_per_rank"], rows)]
    check(max(per_row) <= 1.01 * min(per_row),
          f"{name}: sweep's memory operations per rank are in the ratio of the rows (1%)",
          str(per_row))


def rel_close(a, b, tol):
    return a is not None and b is not None and abs(a - b) <= tol * max(abs(a), abs(b), 1e-300)


def check_rank_figures(mpi, objects, nranks, runs, name):
    wrong = []
    for o in mpi["objects"]:
        ranks = [r["rank"] for r in o["per_rank"]]
        if ranks != list(range(nranks)):
            wrong.append(f"{o['name']}: ranks {ranks}")
            continue
        measured = [r["measured_cycles"] for r in o["per_rank"]]
        want = max(measured) * nranks / sum(measured)
        if not rel_close(o["imbalance"], want, 1e-4):
            wrong.append(f"{o['name']}: imbalance {o['imbalance']} vs {want}")
        if o["slowest_rank"] != measured.index(max(measured)):
            wrong.append(f"{o['name']}: slowest {o['slowest_rank']} vs {measured.index(max(measured))}")
        # the figures are written with 6 significant digits: within that of the larger
        bad = [r for r in o["per_rank"]
               if abs(r["overhead_cycles"] - (r["measured_cycles"] - r["predicted_cycles"])) >
               1e-5 * max(r["measured_cycles"], r["predicted_cycles"])]
        if bad:
            wrong.append(f"{o['name']}: overhead is not measured - predicted in rank {bad[0]['rank']}")
        job = objects[o["name"]]
        if runs == 1 and not rel_close(sum(measured), job["measured_cycles"], 1e-4):
            wrong.append(f"{o['name']}: ranks' measured sum to {sum(measured)}, the job's is "
                         f"{job['measured_cycles']}")
    summed = "; the ranks' measured sum to the job's" if runs == 1 else ""
    check(mpi["objects"] and not wrong and len(mpi["objects"]) == len(objects),
          f"{name}: every object's figures per rank, imbalance, slowest rank{summed} "
          f"({len(mpi['objects'])} objects)", "; ".join(wrong[:4]))


def check_sweep(mpi, objects, count, rows, steps, name):
    sweep = [o for o in mpi["objects"]
             if objects[o["name"]]["procedure"] == "sweep" and objects[o["name"]]["kind"] == "loop"]
    counted = [lp for lp in count["mpi"]["loops"] if lp["procedure"] == "sweep" and lp["depth"] == 1]
    if len(sweep) != 1 or len(counted) != 1 or len(rows) != len(mpi["ranks"]):
        check(False, f"{name}: sweep's loop timed, counted and the slabs printed",
              f"{len(sweep)} timed, {len(counted)} counted, rows {rows}")
        return None
    per_rank = sweep[0]["per_rank"]
    check(all(r["entries"] == steps for r in per_rank),
          f"{name}: sweep's loop entered {steps} times in every rank", str([r["entries"] for r in per_rank]))
    check([r["memory_ops"] for r in per_rank] == counted[0]["memory_ops_per_rank"],
          f"{name}: sweep's memory operations per rank are pass 1's per-rank counts",
          f"{[r['memory_ops'] for r in per_rank]} vs {counted[0]['memory_ops_per_rank']}")
    per_row = [r["predicted_cycles"] / n for r, n in zip(per_rank, rows)]
    check(max(per_row) <= 1.01 * min(per_row),
          f"{name}: sweep's predicted cycles per rank are in the ratio of the rows {rows} (1%)",
          str(per_row))
    return sweep[0]


def check_history(db, mpi, nranks, name):
    import sqlite3
    c = sqlite3.connect(db)
    run = c.execute("SELECT max(id) FROM runs").fetchone()[0]
    hosts = c.execute("SELECT rank, host FROM run_ranks WHERE run_id = ? ORDER BY rank", (run,)).fetchall()
    check(hosts == [(r["rank"], r["host"]) for r in mpi["ranks"]],
          f"{name}: the history's run names each rank and its host", str(hosts))
    stored = c.execute("SELECT rank, measured_cycles, predicted_cycles FROM rank_figures "
                       "WHERE run_id = ? ORDER BY rank", (run,)).fetchall()
    want = sorted((r["rank"], r["measured_cycles"], r["predicted_cycles"])
                  for o in mpi["objects"] for r in o["per_rank"])
    got = sorted(stored)
    same = len(got) == len(want) == nranks * len(mpi["objects"]) and all(
        g[0] == w[0] and rel_close(g[1], w[1], 1e-5) and rel_close(g[2], w[2], 1e-5)
        for g, w in zip(got, want))
    check(same, f"{name}: the history holds every object's figures in every rank ({len(got)} rows)",
          f"{got[:2]} vs {want[:2]}")


def cmd_pass2(report_path, count_path, stdout_path, db, nranks, steps, name, hosts=None):
    d, count, nranks, steps = load(report_path), load(count_path), int(nranks), int(steps)
    mpi = d.get("mpi")
    if not mpi:
        check(False, f"{name}: report.json has the job's ranks", "mpi is null")
        return
    hosts = hosts.split(",") if hosts else [socket.gethostname()] * nranks
    check([r["rank"] for r in mpi["ranks"]] == list(range(nranks)) and
          [r["host"] for r in mpi["ranks"]] == hosts and
          [r["host"] for r in count["mpi"]["ranks"]] == hosts,
          f"{name}: ranks 0..{nranks - 1} on hosts {','.join(sorted(set(hosts)))}, in report.json "
          "and count.json", f"{mpi['ranks']}, count.json {count['mpi']['ranks']}")
    objects = {o["name"]: o for o in d["objects"]}
    check_rank_figures(mpi, objects, nranks, d["runs"], name)
    sweep = check_sweep(mpi, objects, count, slab_rows(stdout_path), steps, name)
    if sweep:
        print(f"# {name}: sweep's loop: imbalance {sweep['imbalance']:.3f}, slowest rank "
              f"{sweep['slowest_rank']}")
    if db != "-":
        check_history(db, mpi, nranks, name)


def cmd_sweep(report_path, low, high, rank, name):
    """sweep's loop measured imbalance within [low, high], slowest on `rank` (- for any)."""
    d = load(report_path)
    objects = {o["name"]: o for o in d["objects"]}
    sweep = [o for o in d["mpi"]["objects"] if objects[o["name"]]["procedure"] == "sweep"]
    im = sweep[0]["imbalance"] if sweep else None
    check(sweep and float(low) <= im <= float(high) and
          (rank == "-" or sweep[0]["slowest_rank"] == int(rank)),
          f"{name}: sweep's measured imbalance {im} in [{low}, {high}], slowest rank "
          f"{sweep[0]['slowest_rank'] if sweep else None} (want {rank})")


def read_counts(path):
    """A counts.tsv: (block address, count, procedure) rows."""
    rows = []
    for line in open(path, encoding="utf-8"):
        if not line.startswith("#"):
            addr, count, proc = line.rstrip("\n").split("\t")[:3]
            rows.append((int(addr, 16), int(count), proc))
    return rows


def check_library_counts(rundir, rows, steps, cols, name):
    lib = "libmtstencil.so"
    per_rank = [read_counts(f"{rundir}/mpi/rank-{r}.{lib}.counts.tsv") for r in range(len(rows))]
    for r, (counts, n) in enumerate(zip(per_rank, rows)):
        sweep = sorted((a, c) for a, c, p in counts if p == "mtstencil_sweep")
        have = {c for _, c in sweep}
        want = {steps, steps * n, steps * n * (cols - 2)}
        check(sweep and sweep[0][1] == steps and want <= have and
              max(have) == steps * n * (cols - 2),
              f"{name}: rank {r}'s {lib} sweep entered {steps} times, its rows {steps * n} and "
              f"its inner body {steps * n * (cols - 2)} times ({n} rows)",
              f"entry {sweep[0][1] if sweep else None}, counts {sorted(have)}")
    job = read_counts(f"{rundir}/libs/{lib}.counts.tsv")
    summed = [sum(c[i][1] for c in per_rank) for i in range(len(job))]
    check(rows and all(len(c) == len(job) for c in per_rank) and summed == [c for _, c, _ in job],
          f"{name}: the ranks' {lib} counts sum to the job's ({len(job)} blocks)")


def check_library_rows(count, rows, name):
    """count.json's mpi.procedures has the library's sweep: its imbalance as the rows' (1%)."""
    errors, names = [], set()
    cj.type_errors(count, cj.SCHEMA, "$", errors, names)
    check(not errors, f"{name}: count.json's every field present with its type", "; ".join(errors[:5]))
    sweep = [p for p in count["mpi"]["procedures"]
             if p["object"] == "libmtstencil.so" and p["name"] == "mtstencil_sweep"]
    want = max(rows) * len(rows) / sum(rows) if rows else None
    check(len(sweep) == 1 and want and rel_close(sweep[0]["imbalance"], want, 0.01) and
          sweep[0]["max_rank"] == rows.index(max(rows)),
          f"{name}: count.json's per-rank rows hold the library's sweep, its imbalance the rows' "
          f"max / mean {want:.3f} (1%)", str(sweep)[:200])


def cmd_libs(report_path, rundir, stdout_path, db, nranks, steps, cols, name):
    d, nranks, steps, cols = load(report_path), int(nranks), int(steps), int(cols)
    rows = slab_rows(stdout_path)
    check_library_counts(rundir, rows, steps, cols, name)
    check_library_rows(load(f"{rundir}/count.json"), rows, name)
    mpi = d.get("mpi")
    if not mpi:
        check(False, f"{name}: report.json has the job's ranks", "mpi is null")
        return
    objects = {o["name"]: o for o in d["objects"]}
    check_rank_figures(mpi, objects, nranks, d["runs"], name)
    lib = [o for o in mpi["objects"] if o["library"] == "libmtstencil.so" and
           objects[o["name"]]["procedure"] == "mtstencil_sweep" and
           objects[o["name"]]["kind"] == "loop"]
    if not lib:
        check(False, f"{name}: the library's loop is among the job's objects per rank",
              str([o["name"] for o in mpi["objects"]]))
    else:
        per_rank = lib[0]["per_rank"]
        check([r["entries"] for r in per_rank] == [steps] * nranks,
              f"{name}: the library's loop entered {steps} times in every rank",
              str([r["entries"] for r in per_rank]))
        per_row = [r["predicted_cycles"] / n for r, n in zip(per_rank, rows)]
        check(len(rows) == nranks and max(per_row) <= 1.01 * min(per_row),
              f"{name}: the library's loop predicted per rank in the ratio of the rows {rows} (1%)",
              str(per_row))
        print(f"# {name}: {lib[0]['name']}: imbalance {lib[0]['imbalance']:.3f}, slowest rank "
              f"{lib[0]['slowest_rank']}")
    if db != "-":
        check_history(db, mpi, nranks, name)


def cmd_plain(js_path, name):
    d = load(js_path)
    check("mpi" in d and d["mpi"] is None, f"{name}: no launcher, \"mpi\" is null",
          str(d.get("mpi"))[:80])


def main(argv):
    cmd, args = argv[1], argv[2:]
    {"job": cmd_job, "plain": cmd_plain, "pass2": cmd_pass2, "sweep": cmd_sweep,
     "libs": cmd_libs}[cmd](*args)
    return 0 if tap.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
