/* costmodel/latency.c — the load-to-use latency of each level of the memory
 * hierarchy, for the simulator's stall estimate (docs/SIMULATOR.md, "The
 * stall estimate"): a pointer chase per level, over a working set the
 * caller sizes from the machine's caches (run/ reads them from sysfs).
 *
 * A chase is a random cyclic permutation of 64-byte lines (Sattolo's
 * algorithm), one pointer at the start of each line: every hop is one load
 * whose address is the previous load's value, so the core can overlap
 * nothing and a hop takes exactly one access's latency; the random order
 * defeats the stride and next-line prefetchers (a sequential chain would
 * measure the prefetcher, not the level).  The TSC ticks of a chase are
 * turned into core cycles with the calibration's clock ratio.  Each level is
 * chased `runs` times, short chases (a few ms), and the fastest kept:
 * another tenant's traffic only ever slows a chase.  A chase is timed in
 * segments and reads as its median segment: on a loaded guest the chase is
 * preempted now and then, and the ticks of a preemption (another process's
 * time slice, milliseconds) land in one segment of dozens.  Timed whole,
 * the best of 3 chases read 4457 cycles a hop at L3 and 3107 at memory
 * (AMD EPYC Zen 3, family 25 model 1, both vCPUs busy with builds); the
 * reader of the profile accepted both.
 *
 * The same working set is then walked in address order, one load a line,
 * the loads independent of each other: the cost of a line when the
 * hardware sees the stream coming (its prefetchers fetch ahead, the misses
 * overlap as far as the level's bandwidth lets them).  That, not the chase,
 * is what a sequential sweep pays: on the Xeon family 6 model 207 a line of
 * a 256 MiB chase took 535 cycles, of a 256 MiB walk ~20; the stall
 * estimate charges it to the misses it judges regular. */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <x86intrin.h>

#include "internal.h"

#define LINE 64u

/* Hops a measurement makes: enough to make the timing overhead nothing
 * (a few ms at memory latency), few enough to keep calibrate quick. */
#define HOPS 200000L

static uint64_t xorshift(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* `lines` lines linked in one random cycle (Sattolo: every permutation
 * it makes is a single cycle, so a chase visits every line). */
static void **build_chase(size_t lines)
{
    char *buf = aligned_alloc(LINE, lines * LINE);
    uint32_t *order = malloc(lines * sizeof *order);
    if (!buf || !order) {
        free(buf);
        free(order);
        return NULL;
    }
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < lines; i++)
        order[i] = (uint32_t)i;
    for (size_t i = lines - 1; i > 0; i--) {
        size_t j = (size_t)(xorshift(&seed) % i);
        uint32_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (size_t i = 0; i < lines; i++)
        *(void **)(buf + (size_t)order[i] * LINE) = buf + (size_t)order[(i + 1) % lines] * LINE;
    free(order);
    return (void **)buf;
}

/* Hops (or lines walked) a timed segment covers: at memory latency 4096
 * hops take ~0.1-0.5 ms, well inside a time slice, and the two TSC reads
 * around a segment cost nothing against them. */
#define SEGMENT 4096L
#define MAX_SEGMENTS (HOPS / SEGMENT + 2)

/* TSC ticks per hop of `hops` dependent loads from p, the median of its
 * segments; *p is where it ended (the next chase goes on from there, and
 * the compiler cannot drop it). */
static double chase_ticks(void ***p, long hops)
{
    double per_hop[MAX_SEGMENTS];
    int n = 0;
    void **q = *p;
    for (long done = 0; done < hops && n < MAX_SEGMENTS; n++) {
        long len = hops - done < SEGMENT ? hops - done : SEGMENT;
        uint64_t t0 = __rdtsc();
        for (long i = 0; i < len; i++)
            q = (void **)*q;
        uint64_t t1 = __rdtsc();
        per_hop[n] = (double)(t1 - t0) / (double)len;
        done += len;
    }
    __asm__ volatile("" : : "r"(q)); /* the chase's end is used: its loads stay */
    *p = q;
    return cm_median(per_hop, n);
}

/* TSC ticks of one walk over `lines` lines (a multiple of 4) from p in
 * address order.  Four independent loads per round, written in assembly:
 * the walk waits for the level, not for an add chain, and a sanitizer's
 * checks (the tests' ASan build) add nothing to it. */
static uint64_t walk_ticks(const char *p, size_t lines)
{
    size_t rounds = lines / 4;
    uint64_t t0 = __rdtsc();
    __asm__ volatile("1:\n\t"
                     "mov (%[p]), %%r8\n\t"
                     "mov 64(%[p]), %%r9\n\t"
                     "mov 128(%[p]), %%r10\n\t"
                     "mov 192(%[p]), %%r11\n\t"
                     "add $256, %[p]\n\t"
                     "dec %[n]\n\t"
                     "jnz 1b"
                     : [p] "+r"(p), [n] "+r"(rounds)
                     :
                     : "r8", "r9", "r10", "r11", "cc", "memory");
    return __rdtsc() - t0;
}

/* TSC ticks per line of one walk over buf's `lines` lines (a multiple of
 * 4), the median of its segments (the walk goes on across them: the
 * prefetchers see one stream). */
static double stream_ticks(const char *buf, size_t lines)
{
    double per_line[MAX_SEGMENTS];
    size_t step = lines / MAX_SEGMENTS + 1;
    step = step < SEGMENT ? SEGMENT : (step + 3) / 4 * 4;
    int n = 0;
    for (size_t done = 0; done < lines && n < MAX_SEGMENTS; n++) {
        size_t len = lines - done < step ? lines - done : step;
        per_line[n] = (double)walk_ticks(buf + done * LINE, len) / (double)len;
        done += len;
    }
    return cm_median(per_line, n);
}

/* One level: its working set chased `runs` times after one pass that
 * brings it into the level (at most HOPS hops: the memory level's set is
 * never all cached anyway), then walked `runs` times after one walk that
 * leaves its lines in the level (every line written by build_chase: the
 * walk reads memory, not the kernel's zero page). */
static int measure_level(mt_mem_latency *lat, uint64_t bytes, int runs, double tsc_per_cycle,
                         mt_error *err)
{
    size_t lines = (size_t)(bytes / LINE);
    void **start = lines >= 4 && lines <= UINT32_MAX ? build_chase(lines) : NULL;
    if (!start) {
        mt_error_set(err, "calibrate: cannot allocate a %llu-byte pointer chase",
                     (unsigned long long)bytes);
        return -1;
    }
    void **p = start;
    chase_ticks(&p, (long)fmin((double)lines, HOPS));
    double best = INFINITY, worst = 0;
    for (int r = 0; r < runs; r++) {
        double t = chase_ticks(&p, HOPS) / tsc_per_cycle;
        best = fmin(best, t);
        worst = fmax(worst, t);
    }
    lat->bytes = (double)bytes;
    lat->cycles = best;
    lat->spread_pct = 100 * (worst - best) / best;
    stream_ticks((const char *)start, lines);
    double stream = INFINITY;
    for (int r = 0; r < runs; r++)
        stream = fmin(stream, stream_ticks((const char *)start, lines) / tsc_per_cycle);
    lat->stream_cycles = fmin(stream, best); /* a walk never waits longer than a chase */
    free(start);
    return 0;
}

/* Misses the core keeps in flight (memory-level parallelism): PARALLEL
 * chases through the memory level's working set at once, each hop of each
 * independent of the others; their hops per cycle against one chase's.
 * (Intel's Golden Cove has 16 L1 fill buffers: up to 16 lines missing at
 * once.) */
#define PARALLEL 16

static double parallel_ticks(void **q[PARALLEL], long rounds)
{
    double per_hop[MAX_SEGMENTS];
    int n = 0;
    for (long done = 0; done < rounds && n < MAX_SEGMENTS; n++) {
        long len = rounds - done < SEGMENT / PARALLEL ? rounds - done : SEGMENT / PARALLEL;
        uint64_t t0 = __rdtsc();
        for (long i = 0; i < len; i++)
            for (int k = 0; k < PARALLEL; k++)
                q[k] = (void **)*q[k];
        uint64_t t1 = __rdtsc();
        per_hop[n] = (double)(t1 - t0) / ((double)len * PARALLEL);
        done += len;
    }
    for (int k = 0; k < PARALLEL; k++)
        __asm__ volatile("" : : "r"(q[k]));
    return cm_median(per_hop, n);
}

/* The memory level's chase again, PARALLEL pointers spread over it. */
static int measure_parallelism(mt_machine *m, uint64_t bytes, int runs, mt_error *err)
{
    size_t lines = (size_t)(bytes / LINE);
    char *start = lines >= 2 * PARALLEL && lines <= UINT32_MAX ? (char *)build_chase(lines) : NULL;
    if (!start) {
        mt_error_set(err, "calibrate: cannot allocate a %llu-byte pointer chase",
                     (unsigned long long)bytes);
        return -1;
    }
    void **q[PARALLEL];
    for (int k = 0; k < PARALLEL; k++)
        q[k] = (void **)(start + (size_t)k * (lines / PARALLEL) * LINE);
    double best = INFINITY;
    for (int r = 0; r < runs; r++)
        best = fmin(best, parallel_ticks(q, HOPS / PARALLEL) / m->tsc_per_cycle);
    m->mem_parallelism = fmax(1, m->mem_latency[MT_MEM_MEMORY].cycles / best);
    free(start);
    return 0;
}

/* The first level measured slower than a deeper one (a dependent load of a
 * deeper level is never faster), or -1. */
static int out_of_order_level(const mt_machine *m)
{
    for (int l = 0; l < MT_MEM_LEVELS; l++)
        for (int d = l + 1; d < MT_MEM_LEVELS; d++)
            if (m->mem_latency[l].cycles > 0 && m->mem_latency[d].cycles > 0 &&
                m->mem_latency[l].cycles > m->mem_latency[d].cycles)
                return l;
    return -1;
}

static int measure_levels(mt_machine *m, const uint64_t working_set[MT_MEM_LEVELS], int runs,
                          mt_error *err)
{
    for (int l = 0; l < MT_MEM_LEVELS; l++) {
        memset(&m->mem_latency[l], 0, sizeof m->mem_latency[l]);
        if (working_set[l] &&
            measure_level(&m->mem_latency[l], working_set[l], runs, m->tsc_per_cycle, err) != 0)
            return -1;
    }
    return 0;
}

/* Tries at the levels before calibrate gives up: a level that reads slower
 * than a deeper one was slowed by something else (another tenant's burst
 * longer than half a chase), and the next try usually is not. */
#define LEVEL_TRIES 3

int mt_calibrate_latencies(mt_machine *m, const uint64_t working_set[MT_MEM_LEVELS], int runs,
                           FILE *report, mt_error *err)
{
    if (!(m->tsc_per_cycle > 0)) {
        mt_error_set(err, "calibrate: latencies need the clock ratio, which was not measured");
        return -1;
    }
    runs = runs < 3 ? 3 : runs > 5 ? 5 : runs; /* short chases, the fastest of a few */
    int bad = -1;
    for (int try = 0; try < LEVEL_TRIES; try++) {
        if (measure_levels(m, working_set, runs, err) != 0)
            return -1;
        if ((bad = out_of_order_level(m)) < 0)
            break;
    }
    if (bad >= 0) {
        int deeper = bad + 1;
        while (m->mem_latency[deeper].cycles <= 0 ||
               m->mem_latency[deeper].cycles >= m->mem_latency[bad].cycles)
            deeper++;
        mt_error_set(err, "calibrate: latency %s: a dependent load read %.1f cycles, slower than "
                          "%s's %.1f, in %d tries: something else ran on this core; run "
                          "'mtool calibrate' again on an idle machine",
                     mt_mem_level_name(bad), m->mem_latency[bad].cycles, mt_mem_level_name(deeper),
                     m->mem_latency[deeper].cycles, LEVEL_TRIES);
        return -1;
    }
    for (int l = 0; l < MT_MEM_LEVELS && report; l++)
        if (m->mem_latency[l].cycles > 0)
            fprintf(report, "  latency %-6s %8.1f cycles a dependent load (spread %.1f%%), %.2f "
                            "a line walked in order, over %.0f KiB\n", mt_mem_level_name(l),
                    m->mem_latency[l].cycles, m->mem_latency[l].spread_pct,
                    m->mem_latency[l].stream_cycles, m->mem_latency[l].bytes / 1024);
    m->mem_parallelism = 0;
    if (working_set[MT_MEM_MEMORY] &&
        measure_parallelism(m, working_set[MT_MEM_MEMORY], runs, err) != 0)
        return -1;
    if (report && m->mem_parallelism > 0)
        fprintf(report, "  memory-level parallelism: %.1f misses in flight (%d independent "
                        "chases at once against one)\n", m->mem_parallelism, PARALLEL);
    return 0;
}

const char *mt_mem_level_name(int level)
{
    static const char *const names[MT_MEM_LEVELS] = {"L1", "L2", "L3", "L4", "memory"};
    return level >= 0 && level < MT_MEM_LEVELS ? names[level] : "?";
}
