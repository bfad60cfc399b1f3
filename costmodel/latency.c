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
 * estimate charges it to the misses it judges regular.
 *
 * The TLB apart (profile version 6): a random chase over an L3- or
 * memory-sized set lands on a new 4 KiB page nearly every hop, past the
 * last-level TLB's reach, and under a hypervisor each walk is nested (2D):
 * on the AMD EPYC Zen 3 (family 25 model 1, 2-vCPU KVM guest) "L3" read
 * 530-610 cycles a hop, a walk included (with walks apart, loaded by other
 * sessions: L3 464-543, memory 558-696, a walk 558-679: docs/COST-MODEL.md).  So each level's chase runs on
 * a mapping advised huge (madvise MADV_HUGEPAGE: 2 MiB pages, a few dozen
 * of which the TLB holds), and /proc/self/smaps's AnonHugePages says
 * whether the kernel granted them; where it did not, the chase visits the
 * lines of a 4 KiB page (in random order) before moving to another page
 * (in random order), and a set of more pages than the last TLB level
 * holds has the walk's share, walk / lines a page, taken off each hop.
 * The walk itself: a chase through one line in each of pages_walked()
 * 4 KiB pages (advised not huge), more than the TLB holds, against the
 * same chase on huge pages (or, without them, as many lines packed
 * together): the difference is what a walk adds to a load.  A walk chase
 * that reads no slower than its control is re-measured, then refused. */
#define _GNU_SOURCE
#include <cpuid.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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

/* a[0..n) in a random order (Fisher-Yates). */
static void shuffle(uint32_t *a, size_t n, uint64_t *seed)
{
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)(xorshift(seed) % i);
        uint32_t t = a[i - 1];
        a[i - 1] = a[j];
        a[j] = t;
    }
}

/* The lines of buf at offsets order[0..n) * stride linked in that order,
 * the last back to the first: one cycle through all of them. */
static void link_cycle(char *buf, const uint32_t *order, size_t n, size_t stride)
{
    for (size_t i = 0; i < n; i++)
        *(void **)(buf + (size_t)order[i] * stride) = buf + (size_t)order[(i + 1) % n] * stride;
}

#define PAGE 4096u
#define LINES_A_PAGE (PAGE / LINE)
#define HUGE_PAGE (2u << 20)

/* A chase's memory: an anonymous mapping aligned to 2 MiB, advised huge or
 * not; huge: the kernel granted huge pages for most of it. */
typedef struct {
    char *map, *buf;
    size_t map_len;
    bool huge;
} chase_mem;

/* The kB of AnonHugePages of the mapping holding addr (/proc/self/smaps), or 0. */
static uint64_t huge_kib_at(const void *addr)
{
    FILE *fp = fopen("/proc/self/smaps", "r");
    if (!fp)
        return 0;
    char line[512];
    bool inside = false;
    uint64_t kib = 0;
    while (fgets(line, sizeof line, fp)) {
        unsigned long lo, hi, v;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
            inside = (uintptr_t)addr >= lo && (uintptr_t)addr < hi;
        else if (inside && sscanf(line, "AnonHugePages: %lu kB", &v) == 1) {
            kib = v;
            break;
        }
    }
    fclose(fp);
    return kib;
}

/* bytes of memory for a chase, every page written (faulted in: a huge page
 * is granted, if at all, at the first touch). */
static int chase_map(chase_mem *cm, size_t bytes, bool huge)
{
    size_t advised = (bytes + HUGE_PAGE - 1) & ~(size_t)(HUGE_PAGE - 1);
    cm->map_len = advised + HUGE_PAGE; /* room to align: every advised huge page inside */
    cm->map = mmap(NULL, cm->map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (cm->map == MAP_FAILED)
        return -1;
    cm->buf = (char *)(((uintptr_t)cm->map + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
    madvise(cm->buf, advised, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE); /* advice only */
    memset(cm->buf, 1, bytes);
    cm->huge = huge && huge_kib_at(cm->buf) * 1024 >= bytes / 2;
    return 0;
}

static void chase_unmap(chase_mem *cm) { munmap(cm->map, cm->map_len); }

/* The `lines` lines of buf in one random cycle (every hop to any line), or,
 * by_page, the lines of each 4 KiB page in a random order, the pages in a
 * random order (`lines` a multiple of a page's). */
static int build_chase(char *buf, size_t lines, bool by_page)
{
    uint32_t *order = malloc(lines * sizeof *order);
    if (!order)
        return -1;
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    size_t group = by_page ? LINES_A_PAGE : lines;
    uint32_t *pages = malloc(lines / group * sizeof *pages);
    if (!pages) {
        free(order);
        return -1;
    }
    for (size_t g = 0; g < lines / group; g++)
        pages[g] = (uint32_t)g;
    shuffle(pages, lines / group, &seed);
    for (size_t g = 0; g < lines / group; g++) {
        for (size_t i = 0; i < group; i++)
            order[g * group + i] = (uint32_t)(pages[g] * group + i);
        shuffle(order + g * group, group, &seed);
    }
    link_cycle(buf, order, lines, LINE);
    free(pages);
    free(order);
    return 0;
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

/* `lines` lines (a multiple of a page's) on memory advised huge, linked in
 * one random cycle, or page by page when huge pages were not granted. */
static int map_chase(chase_mem *cm, size_t lines)
{
    if (lines < LINES_A_PAGE || lines > UINT32_MAX || chase_map(cm, lines * LINE, true) != 0)
        return -1;
    if (build_chase(cm->buf, lines, !cm->huge) != 0) {
        chase_unmap(cm);
        return -1;
    }
    return 0;
}

/* TLB entries taken for the last level's when cpuid tells none: fewer
 * than any x86 core of the last decade holds (Skylake and Zen 1 1536, Zen 3
 * and Golden Cove 2048), so a walk's share is subtracted whenever it may be
 * paid. */
#define TLB_REACH_UNKNOWN 1024u

static uint32_t tlb_reach(const mt_machine *m)
{
    uint32_t n = m->tlb[1].entries ? m->tlb[1].entries : m->tlb[0].entries;
    return n ? n : TLB_REACH_UNKNOWN;
}

/* Ticks per hop of `runs` chases from *p (the fastest) into *best, and the
 * slowest into *worst; one warming pass of at most HOPS hops first. */
static void chase_runs(void ***p, size_t lines, int runs, double *best, double *worst)
{
    chase_ticks(p, (long)fmin((double)lines, HOPS));
    *best = INFINITY;
    *worst = 0;
    for (int r = 0; r < runs; r++) {
        double t = chase_ticks(p, HOPS);
        *best = fmin(*best, t);
        *worst = fmax(*worst, t);
    }
}

/* One level: its working set chased `runs` times after one pass that
 * brings it into the level (at most HOPS hops: the memory level's set is
 * never all cached anyway), on huge pages or page by page (the walk's
 * share subtracted when the set's pages are more than the TLB holds),
 * then walked `runs` times after one walk that leaves its lines in the
 * level (every line written by build_chase: the walk reads memory, not the
 * kernel's zero page).  *huge: whether its pages were huge. */
static int measure_level(mt_mem_latency *lat, uint64_t bytes, int runs, const mt_machine *m,
                         bool *huge, mt_error *err)
{
    size_t lines = (size_t)(bytes / LINE) / LINES_A_PAGE * LINES_A_PAGE;
    chase_mem cm;
    if (map_chase(&cm, lines) != 0) {
        mt_error_set(err, "calibrate: cannot allocate a %llu-byte pointer chase",
                     (unsigned long long)bytes);
        return -1;
    }
    *huge = cm.huge;
    void **p = (void **)cm.buf;
    double best, worst;
    chase_runs(&p, lines, runs, &best, &worst);
    best /= m->tsc_per_cycle;
    worst /= m->tsc_per_cycle;
    double walk_share = !cm.huge && lines / LINES_A_PAGE > tlb_reach(m)
                            ? m->tlb_walk_cycles / LINES_A_PAGE : 0;
    lat->bytes = (double)bytes;
    lat->cycles = fmax(1, best - walk_share);
    lat->spread_pct = 100 * (worst - best) / best;
    stream_ticks(cm.buf, lines);
    double stream = INFINITY;
    for (int r = 0; r < runs; r++)
        stream = fmin(stream, stream_ticks(cm.buf, lines) / m->tsc_per_cycle);
    lat->stream_cycles = fmin(stream, lat->cycles); /* a walk never waits longer than a chase */
    chase_unmap(&cm);
    return 0;
}

/* Pages the walk chase goes through: eight times the last TLB level's
 * entries, at least 8192 (32 MiB of address space, 512 KiB of lines). */
static size_t pages_walked(const mt_machine *m)
{
    size_t n = 8 * (size_t)tlb_reach(m);
    return n < 8192 ? 8192 : n;
}

/* The walk chase's lines: one in each of `pages` 4 KiB pages, at an offset
 * that moves with the page (the lines spread over the caches' sets), in a
 * random order of the pages. */
static void link_one_line_a_page(char *buf, uint32_t *order, size_t pages)
{
    uint64_t seed = 0x2545f4914f6cdd1dull;
    for (size_t i = 0; i < pages; i++)
        order[i] = (uint32_t)(i * LINES_A_PAGE + (i * 37) % LINES_A_PAGE);
    shuffle(order, pages, &seed);
    link_cycle(buf, order, pages, LINE);
}

/* Ticks a hop of the walk chase (one line a 4 KiB page, on 4 KiB pages)
 * and of its control, the fastest of `runs` each.  The control is the same
 * lines on huge pages, which the TLB holds: all that differs is the walk.
 * Where huge pages are not granted it is as many lines packed together
 * (the nearest set without walks; but lines one a page come slower than
 * packed ones even without walks: on the AMD EPYC Zen 3, family 25 model 1,
 * loaded, 524-622 cycles of difference against huge pages, 714-1223
 * against packed lines, and 398-456 between a 128 MiB random chase on 4 KiB
 * pages and on huge pages). */
static int walk_ticks_pair(size_t pages, int runs, double *walked, double *control)
{
    chase_mem wm, cm;
    if (chase_map(&wm, pages * PAGE, false) != 0)
        return -1;
    if (chase_map(&cm, pages * PAGE, true) != 0) {
        chase_unmap(&wm);
        return -1;
    }
    uint32_t *order = malloc(pages * sizeof *order);
    if (!order) {
        chase_unmap(&wm);
        chase_unmap(&cm);
        return -1;
    }
    link_one_line_a_page(wm.buf, order, pages);
    if (cm.huge) {
        link_one_line_a_page(cm.buf, order, pages);
    } else {
        uint64_t seed = 0x9e3779b97f4a7c15ull;
        for (size_t i = 0; i < pages; i++)
            order[i] = (uint32_t)i;
        shuffle(order, pages, &seed);
        link_cycle(cm.buf, order, pages, LINE);
    }
    free(order);
    double worst;
    void **p = (void **)wm.buf; /* page 0 holds its line at offset 0 */
    chase_runs(&p, pages, runs, walked, &worst);
    p = (void **)cm.buf;
    chase_runs(&p, pages, runs, control, &worst);
    chase_unmap(&wm);
    chase_unmap(&cm);
    return 0;
}

/* The cycles a page walk adds to a load: the walk chase against its control
 * (the same lines without walks), re-measured while it reads no slower (a burst), up
 * to LEVEL_TRIES times. */
static int measure_walk(mt_machine *m, int runs, int tries, mt_error *err)
{
    size_t pages = pages_walked(m);
    double walked = 0, control = 0;
    for (int t = 0; t < tries; t++) {
        if (walk_ticks_pair(pages, runs, &walked, &control) != 0) {
            mt_error_set(err, "calibrate: cannot allocate the page-walk chase (%zu pages)", pages);
            return -1;
        }
        if (walked > control) {
            m->tlb_walk_cycles = (walked - control) / m->tsc_per_cycle;
            return 0;
        }
    }
    mt_error_set(err, "calibrate: page walk: a chase through one line in each of %zu pages read "
                      "%.1f cycles a hop, no slower than %.1f without walks, in %d tries: "
                      "something else ran on this core; run 'mtool calibrate' again on an idle "
                      "machine", pages, walked / m->tsc_per_cycle, control / m->tsc_per_cycle,
                 tries);
    return -1;
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
    size_t lines = (size_t)(bytes / LINE) / LINES_A_PAGE * LINES_A_PAGE;
    chase_mem cm;
    if (lines < 2 * PARALLEL * LINES_A_PAGE || map_chase(&cm, lines) != 0) {
        mt_error_set(err, "calibrate: cannot allocate a %llu-byte pointer chase",
                     (unsigned long long)bytes);
        return -1;
    }
    char *start = cm.buf;
    void **q[PARALLEL];
    for (int k = 0; k < PARALLEL; k++)
        q[k] = (void **)(start + (size_t)k * (lines / PARALLEL) * LINE);
    double best = INFINITY;
    for (int r = 0; r < runs; r++)
        best = fmin(best, parallel_ticks(q, HOPS / PARALLEL) / m->tsc_per_cycle);
    m->mem_parallelism = fmax(1, m->mem_latency[MT_MEM_MEMORY].cycles / best);
    chase_unmap(&cm);
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

/* Every level; m->latency_huge_pages: every chase ran on huge pages. */
static int measure_levels(mt_machine *m, const uint64_t working_set[MT_MEM_LEVELS], int runs,
                          mt_error *err)
{
    m->latency_huge_pages = true;
    for (int l = 0; l < MT_MEM_LEVELS; l++) {
        memset(&m->mem_latency[l], 0, sizeof m->mem_latency[l]);
        bool huge = true;
        if (working_set[l] &&
            measure_level(&m->mem_latency[l], working_set[l], runs, m, &huge, err) != 0)
            return -1;
        m->latency_huge_pages &= !working_set[l] || huge;
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
    memset(m->tlb, 0, sizeof m->tlb);
    mt_tlb_from_cpuid(m->tlb, MT_TLB_LEVELS);
    if (measure_walk(m, runs, LEVEL_TRIES, err) != 0)
        return -1;
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
    if (report)
        fprintf(report, "  page walk %8.1f cycles added to a load (%zu pages, one line each, "
                        "against the same on huge pages); TLB %" PRIu32 " + %" PRIu32
                        " entries (cpuid); levels chased %s\n", m->tlb_walk_cycles,
                pages_walked(m), m->tlb[0].entries, m->tlb[1].entries,
                m->latency_huge_pages ? "on huge pages" : "page by page, a walk's share taken off");
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

/* AMD's code for an L2 TLB's associativity (leaf 0x80000006): ways, or 0
 * for disabled or reserved codes; 0xF fully associative. */
static uint32_t amd_ways(uint32_t code, uint32_t entries)
{
    static const uint32_t ways[16] = {0, 1, 2, 3, 4, 0, 8, 0, 16, 0, 32, 48, 64, 96, 128, 0};
    return code == 0xF ? entries : code == 5 ? 6 : ways[code];
}

static int tlb_amd(mt_tlb_level *out, int max)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(0x80000000, &a, &b, &c, &d) || a < 0x80000006)
        return 0;
    int n = 0;
    __cpuid(0x80000005, a, b, c, d);
    uint32_t entries = (b >> 16) & 0xff, code = b >> 24;
    if (entries && code && n < max)
        out[n++] = (mt_tlb_level){entries, code == 0xff ? entries : code};
    __cpuid(0x80000006, a, b, c, d);
    entries = (b >> 16) & 0xfff;
    uint32_t ways = amd_ways(b >> 28, entries);
    if (n == 1 && entries && ways && entries % ways == 0 && n < max)
        out[n++] = (mt_tlb_level){entries, ways};
    return n;
}

/* Intel's leaf 0x18 TLB types (its EDX bits 4:0). */
#define INTEL_DATA_TLBS (1u << 1 | 1u << 3 | 1u << 4) /* data, unified, load-only */
#define INTEL_INSTRUCTION_TLBS (1u << 2 | 1u << 3)    /* instruction, unified */

/* Intel's leaf 0x18: the TLBs of 4 KiB pages of the types `types` marks,
 * by level. */
static int tlb_intel(mt_tlb_level *out, int max, unsigned types)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(0, &a, &b, &c, &d) || a < 0x18)
        return 0;
    __cpuid_count(0x18, 0, a, b, c, d);
    unsigned subleaves = a;
    mt_tlb_level found[MT_TLB_LEVELS + 1] = {{0, 0}};
    for (unsigned i = 0; i <= subleaves && i < 64; i++) {
        __cpuid_count(0x18, i, a, b, c, d);
        unsigned type = d & 0x1f, level = (d >> 5) & 7;
        if (!(b & 1) || type > 31 || !(types >> type & 1) || level < 1 ||
            level > MT_TLB_LEVELS || found[level].entries)
            continue;
        uint32_t ways = b >> 16, entries = ways * c;
        if (entries)
            found[level] = (mt_tlb_level){entries, d & 0x100 ? entries : ways};
    }
    int n = 0;
    for (int l = 1; l <= MT_TLB_LEVELS && n < max && found[l].entries; l++)
        out[n++] = found[l];
    return n;
}

/* Intel's leaf 2 descriptor bytes that describe a TLB of 4 KiB pages (the
 * SDM's "Encoding of CPUID Leaf 2 Descriptors"), typed as leaf 0x18 types
 * them (data 1, instruction 2, unified 3); ways 0: fully associative.  A
 * "TLB1" or "shared 2nd-level" descriptor is level 2, every other level 1.
 * Cores before leaf 0x18 (Skylake and Cascade Lake servers among them)
 * tell their TLBs only here: a Xeon family 6 model 85 says 0x03 (data, 64
 * entries, 4-way), 0xb5 (instruction, 64, 8-way) and 0xc3 (shared, 1536,
 * 6-way). */
static const struct {
    uint8_t code, type, level;
    uint16_t entries;
    uint8_t ways;
} leaf2_tlbs[] = {
    {0x01, 2, 1, 32, 4},   {0x03, 1, 1, 64, 4},   {0x4f, 2, 1, 32, 0},   {0x50, 2, 1, 64, 0},
    {0x51, 2, 1, 128, 0},  {0x52, 2, 1, 256, 0},  {0x57, 1, 1, 16, 4},   {0x59, 1, 1, 16, 0},
    {0x5b, 1, 1, 64, 0},   {0x5c, 1, 1, 128, 0},  {0x5d, 1, 1, 256, 0},  {0x61, 2, 1, 48, 0},
    {0x64, 1, 1, 512, 4},  {0x6a, 1, 1, 64, 8},   {0x6b, 1, 2, 256, 8},  {0xa0, 1, 1, 32, 0},
    {0xb0, 2, 1, 128, 4},  {0xb2, 2, 1, 64, 4},   {0xb3, 1, 1, 128, 4},  {0xb4, 1, 2, 256, 4},
    {0xb5, 2, 1, 64, 8},   {0xb6, 2, 1, 128, 8},  {0xba, 1, 2, 64, 4},   {0xc0, 1, 1, 8, 4},
    {0xc1, 3, 2, 1024, 8}, {0xc2, 1, 1, 16, 4},   {0xc3, 3, 2, 1536, 6}, {0xca, 3, 2, 512, 4},
};

int mt_tlb_from_leaf2(const uint32_t regs[4], bool instruction, mt_tlb_level *out, int max)
{
    unsigned types = instruction ? INTEL_INSTRUCTION_TLBS : INTEL_DATA_TLBS;
    mt_tlb_level found[MT_TLB_LEVELS + 1] = {{0, 0}};
    for (int r = 0; r < 4; r++) {
        if (regs[r] >> 31) /* bit 31: the register holds no descriptors */
            continue;
        for (int byte = r == 0 ? 1 : 0; byte < 4; byte++) { /* AL: an iteration count */
            unsigned code = regs[r] >> 8 * byte & 0xff;
            for (size_t i = 0; i < MT_ARRAY_LEN(leaf2_tlbs); i++) {
                if (leaf2_tlbs[i].code != code || !(types >> leaf2_tlbs[i].type & 1) ||
                    found[leaf2_tlbs[i].level].entries)
                    continue;
                uint32_t entries = leaf2_tlbs[i].entries;
                found[leaf2_tlbs[i].level] =
                    (mt_tlb_level){entries, leaf2_tlbs[i].ways ? leaf2_tlbs[i].ways : entries};
            }
        }
    }
    int n = 0;
    for (int l = 1; l <= MT_TLB_LEVELS && n < max && found[l].entries; l++)
        out[n++] = found[l];
    return n;
}

/* Intel: leaf 0x18 where the core has it, else leaf 2's descriptors. */
static int tlb_intel_any(mt_tlb_level *out, int max, bool instruction)
{
    int n = tlb_intel(out, max, instruction ? INTEL_INSTRUCTION_TLBS : INTEL_DATA_TLBS);
    unsigned a, b, c, d;
    if (n || !__get_cpuid(2, &a, &b, &c, &d))
        return n;
    const uint32_t regs[4] = {a, b, c, d};
    return mt_tlb_from_leaf2(regs, instruction, out, max);
}

int mt_tlb_from_cpuid(mt_tlb_level *out, int max)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(0, &a, &b, &c, &d))
        return 0;
    bool intel = b == 0x756e6547; /* "Genu" */
    return intel ? tlb_intel_any(out, max, false) : tlb_amd(out, max);
}

int mt_itlb_from_cpuid(mt_tlb_level *out)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(0, &a, &b, &c, &d))
        return 0;
    if (b == 0x756e6547) /* "Genu" */
        return tlb_intel_any(out, 1, true);
    if (!__get_cpuid(0x80000000, &a, &b, &c, &d) || a < 0x80000005)
        return 0;
    /* AMD's leaf 0x80000005 EBX: the L1 instruction TLB of 4 KiB pages,
     * entries in bits 7:0, ways in 15:8 (0xff: fully associative). */
    __cpuid(0x80000005, a, b, c, d);
    uint32_t entries = b & 0xff, code = (b >> 8) & 0xff;
    if (!entries || !code)
        return 0;
    *out = (mt_tlb_level){entries, code == 0xff ? entries : code};
    return entries % out->ways == 0;
}

const char *mt_mem_level_name(int level)
{
    static const char *const names[MT_MEM_LEVELS] = {"L1", "L2", "L3", "L4", "memory"};
    return level >= 0 && level < MT_MEM_LEVELS ? names[level] : "?";
}
