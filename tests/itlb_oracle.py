#!/usr/bin/env python3
"""tests/itlb_oracle.py LACKEY ENTRIES WAYS: the instruction TLB replayed
independently of mtool on a lackey trace's fetches ("I  ADDR,SIZE" lines):
each 4 KiB page a fetch touches translated once through ENTRIES entries in
sets of WAYS (set = page modulo the sets), LRU.  Prints "REFS MISSES"."""
import sys
from collections import OrderedDict

entries, ways = int(sys.argv[2]), int(sys.argv[3])
nsets = entries // ways
sets = [OrderedDict() for _ in range(nsets)]
refs = misses = 0
with open(sys.argv[1]) as f:
    for line in f:
        if not line.startswith("I"):
            continue
        addr, size = line[1:].strip().split(",")
        first = int(addr, 16)
        for page in range(first >> 12, ((first + int(size) - 1) >> 12) + 1):
            refs += 1
            s = sets[page % nsets]
            if page in s:
                s.move_to_end(page)
                continue
            misses += 1
            if len(s) == ways:
                s.popitem(last=False)
            s[page] = True
print(refs, misses)
