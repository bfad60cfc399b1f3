#!/usr/bin/env python3
"""tests/callgrind_objects.py — instructions executed per object (callgrind's Ir
summed by `ob=`), the oracle of the coverage figure: the share of a run's
executed instructions that fall in the objects mtool counted
(docs/ARCHITECTURE.md, "glibc's own objects").

Reads callgrind outputs written with --dump-instr=yes --compress-pos=no
--compress-strings=no (every cost line "ADDR [LINE] IR", the positions as the
file's `positions:` says; the line after `calls=` is the call's inclusive
cost, charged to the callee already, and is skipped).

usage: callgrind_objects.py [--counted COUNT_JSON | --exe BIN] CALLGRIND_OUT...
  alone: one line per object, "IR<TAB>PATH", most first;
  --counted: "COUNTED_IR TOTAL_IR PERCENT", COUNTED_IR the Ir of the objects
  the run of COUNT_JSON (`mtool count`'s) counted: its binary and the
  libraries it made a copy of; --exe: of BIN alone.  Objects are the same
  file when their real paths are (callgrind names liblzma.so.5.4.1 where
  the loader says liblzma.so.5).
"""
import json
import os
import sys


def ir_per_object(paths):
    per = {}
    for path in paths:
        obj, skip, npos = None, False, 1
        with open(path, errors="replace") as f:
            for line in f:
                if skip:
                    skip = False
                    continue
                if line.startswith("positions:"):
                    npos = len(line.split()) - 1
                elif line.startswith("ob="):
                    obj = line[3:].strip()
                elif line.startswith("calls="):
                    skip = True
                elif line[:2] == "0x" and obj is not None:
                    fields = line.split()
                    if len(fields) > npos:
                        per[obj] = per.get(obj, 0) + int(fields[npos])
    return per


def counted_files(option, value):
    if option == "--exe":
        paths = [value]
    else:
        run = json.load(open(value))
        paths = [run["binary"]] + [lib["path"] for lib in run["libraries"] or [] if lib["copy"]]
    return {os.path.realpath(p) for p in paths}


def main(argv):
    counted = None
    if len(argv) > 2 and argv[1] in ("--counted", "--exe"):
        counted = counted_files(argv[1], argv[2])
        argv = argv[2:]
    per = ir_per_object(argv[1:])
    if counted is None:
        for obj, ir in sorted(per.items(), key=lambda kv: -kv[1]):
            print(f"{ir}\t{obj}")
        return 0
    total = sum(per.values())
    inside = sum(ir for obj, ir in per.items() if os.path.realpath(obj) in counted)
    print(f"{inside} {total} {100.0 * inside / total if total else 0:.2f}")
    return 0 if total else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
