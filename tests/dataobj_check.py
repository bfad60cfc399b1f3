#!/usr/bin/env python3
"""tests/dataobj_check.py — the data objects of traced runs of the samples
of known behaviour (docs/SIMULATOR.md, "Data objects"), against what their
sources imply.  Called by tests/dataobj.sh; prints ok / not ok lines.

  SAMPLE JSON SOURCE [OUTPUT]   SAMPLE: chase, aos or heap; JSON: `mtool sim
                                --json --cachegrind -- SAMPLE` with the
                                samples' geometry (D1 8 KiB 4-way, LL 64 KiB
                                8-way, 64-byte lines); SOURCE: the sample's
                                C file; OUTPUT: what the program printed

Expected figures come from the sources' constants and the geometry, never
from a run; counts within 2% (each kernel adds a miss or two of its own).
"""
import json
import re
import sys

import tap

LINE = 64


def check(cond, what, detail=""):
    tap.check(cond, f"data objects: {what}", detail)


def near(got, want, slack=0.02):
    return abs(got - want) <= max(4, slack * want)


def misses(obj, level="D1"):
    return sum(obj["misses"][level].values())


def by_name(d):
    return {o["name"]: o for o in d["data_objects"]}


def check_field(sample, d, variable, field, missing_field, touched_fields, nodes, rounds):
    """The pointer chase and the array of structs: the misses land on the
    field the loop reads first in each element, the struct's other bytes
    never count, every index folded into one object per field."""
    objs = by_name(d)
    name = f"{variable}.{field}"
    o = objs.get(name)
    check(o is not None and o["kind"] == "field",
          f"{sample}: a field object {name}", f"objects: {sorted(objs)[:12]}")
    if not o:
        return
    want = nodes * (rounds + 1)  # one miss per element per pass (the first writes)
    check(near(misses(o), want), f"{sample}: {name} takes the D1 misses",
          f"{misses(o)} against {want}")
    check(o["refs"] == nodes * (rounds + 1), f"{sample}: {name} refs",
          f"{o['refs']} against {nodes * (rounds + 1)}")
    whole = objs.get(variable)
    check(whole is None or whole["refs"] == 0,
          f"{sample}: no reference is left to the whole of {variable} (every byte read is a field's)",
          f"{whole and whole['refs']}")
    for f in touched_fields:
        other = objs.get(f"{variable}.{f}")
        check(other is not None and other["refs"] == nodes * (rounds + 1) and misses(other) <= 4,
              f"{sample}: {variable}.{f} referenced as often, hitting the line {field} brought",
              f"{other and (other['refs'], misses(other))}")
    for f in missing_field:
        check(f"{variable}.{f}" not in objs, f"{sample}: {variable}.{f} never referenced")
    use = o["use"]["D1"]["spatial_use"]
    want_use = (16 if sample == "chase" else 8) / LINE
    check(abs(use - want_use) < 0.03, f"{sample}: {name}'s lines used {want_use:.0%} in D1",
          f"{use:.3f}")


def check_code_use(sample, d, loops, want_use):
    """Line use per code object: each loop (its procedure's name, then
    @HEADER) brought in one D1 line per element it read (it misses on
    each) and used want_use of each line's bytes, as its data object."""
    for proc, lines in loops:
        c = next((c for c in d["code_objects"] if c["name"].startswith(proc + "@")), None)
        use = c and c["use"].get("D1")
        check(use is not None and near(use["lines"], lines) and
              abs(use["spatial_use"] - want_use) < 0.01,
              f"{sample}: {proc}'s loop brought {lines} lines into D1, {want_use:.1%} of each used",
              f"{use}")


def source_line(source, needle, after):
    """The line numbers of `after` (a procedure's definition) and of the
    first `needle` after it."""
    lines = open(source).read().split("\n")
    start = next(i for i, l in enumerate(lines) if after in l)
    at = next(i for i in range(start, len(lines)) if needle in lines[i])
    return start + 1, at + 1


def check_heap(d, source, output):
    longs, rounds_a = 4096, 4
    block_lines = longs * 8 // LINE
    # The program's own: a traced libc (the default) allocates stdio's buffer
    # itself, named by its site in libc.
    objs = [o for o in d["data_objects"] if o["kind"] == "heap" and "@libc.so.6:" not in o["name"]]
    check(len(objs) == 2, "heap: two heap objects of the program's", f"{[o['name'] for o in objs]}")
    check(output.strip() == "reused", "heap: the second block is at the first's freed address",
          output.strip())
    for proc, rounds in (("fill_first", rounds_a), ("fill_second", 1)):
        first, call = source_line(source, "malloc(", f"static uintptr_t {proc}(")
        o = next((o for o in objs if o["name"].startswith(f"malloc@{proc}:")), None)
        check(o is not None, f"heap: an object malloc@{proc}:LINE",
              f"{[x['name'] for x in objs]}")
        if not o:
            continue
        line = int(re.match(r"malloc@\w+:(\d+)$", o["name"]).group(1))
        check(line == call, f"heap: {o['name']}: the line of {proc}'s malloc call",
              f"{line}, not {call} (the function starts at {first})")
        # main's callers: _start, or libc's start-up when libc is traced
        check(o["path"].split(" <- ")[0] == "main" and
              o["path"].split(" <- ")[-1] in ("_start", "libc.so.6:__libc_start_main"),
              f"heap: {o['name']} called from main", o["path"])
        check(o["blocks"] == 1 and o["size"] == longs * 8, f"heap: {o['name']}: one block of 32 KiB",
              f"{o['blocks']} blocks, {o['size']} bytes")
        want_refs = longs * (1 + rounds)
        check(o["refs"] == want_refs, f"heap: {o['name']}: every reference to its block, none to the other's",
              f"{o['refs']} against {want_refs}")
        # a block not aligned on a line touches one line more
        want = (block_lines + 1) * (1 + rounds)
        check(near(misses(o), want), f"heap: {o['name']}: D1 misses",
              f"{misses(o)} against {want}")


def main():
    sample, path, source = sys.argv[1:4]
    output = open(sys.argv[4]).read() if len(sys.argv) > 4 else ""
    d = json.load(open(path))
    names = [o["name"] for o in d["data_objects"]]
    check(len(names) == len(set(o["id"] for o in d["data_objects"])),
          f"{sample}: one entry per data object id")
    pairs = sum(p["refs"] for p in d["pairs"])
    check(sum(o["refs"] for o in d["data_objects"]) == pairs,
          f"{sample}: data objects' references sum to every reference",
          f"{sum(o['refs'] for o in d['data_objects'])} against {pairs}")
    if sample == "chase":
        check_field(sample, d, "pool", "node.value", [], ["node.next"], 8192, 4)
    elif sample == "aos":
        check_field(sample, d, "records", "key", ["weight", "price", "name"], [], 8192, 4)
        check_code_use(sample, d, [("set_keys", 8192), ("sum_keys", 8192 * 4)], 8 / LINE)
    elif sample == "heap":
        check_heap(d, source, output)
    sys.exit(1 if tap.failed else 0)


if __name__ == "__main__":
    main()
