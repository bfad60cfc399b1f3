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


def cmd_plain(js_path, name):
    d = load(js_path)
    check("mpi" in d and d["mpi"] is None, f"{name}: no launcher, \"mpi\" is null",
          str(d.get("mpi"))[:80])


def main(argv):
    cmd, args = argv[1], argv[2:]
    {"job": cmd_job, "plain": cmd_plain}[cmd](*args)
    return 0 if tap.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
