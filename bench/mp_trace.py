#!/usr/bin/env python3
"""bench/mp_trace.py — a din trace of 3 threads for the multiprocessor
simulators (bench/mp_same.sh, tests/sim_misses_only.sh): adjacent counters
and a queue written by all (true and false sharing), each thread's own
array, random references over 16 MiB, fetches, stack traffic, 1 to 32
bytes, some over two lines, runs of 1 to 300 records a thread.

    mp_trace.py RECORDS > FILE"""
import random, sys
random.seed(16)
n, nthreads = int(sys.argv[1]), 3
out, t, left = [], 0, 0
arr = [0x10000000 + k * 0x400000 for k in range(nthreads)]
pos = [0] * nthreads
while len(out) < n:
    if left == 0:  # the next thread's run, its first record naming it
        t, left = random.randrange(nthreads), random.choice([1, 1, 2, 3, 8, 40, 300])
        out.append("0 %x 8 %d" % (arr[t] + pos[t], t))
        left -= 1
        continue
    r, size = random.random(), random.choice([1, 2, 4, 8, 8, 8, 16, 32])
    if r < 0.25:
        a = 0x601000 + 8 * random.randrange(24)
    elif r < 0.55:
        pos[t] = (pos[t] + 8) % (1 << 20)
        a = arr[t] + pos[t]
    elif r < 0.75:
        a = 0x20000000 + random.randrange(1 << 24)
    elif r < 0.85:
        a = arr[random.randrange(nthreads)] + random.randrange(1 << 20)
    elif r < 0.92:
        out.append("2 %x 4" % (0x401000 + random.randrange(4096)))
        left -= 1
        continue
    else:
        a = 0x7ff000000 + t * 0x10000 + random.randrange(512)
    out.append("%d %x %d" % (1 if random.random() < 0.35 else 0, a, size))
    left -= 1
print("\n".join(out))
