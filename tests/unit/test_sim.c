/* tests/unit/test_sim.c — the cache simulator (sim/) on hand-written
 * reference streams whose counts are worked out by hand below, one per miss
 * cause, replacement policy, inclusion policy, write policy and straddling
 * rule; the tallies (code x data, causes of replacement, line use); the
 * machine description (sysfs, file, settings) and the trace readers,
 * including damaged traces; the sampled modes on streams whose samples are
 * all alike (estimates exact, error bound a count's Poisson spread) and their refusals; the
 * misses-only simulator's code tallies against the full one's, and its
 * batch of a tracing copy's records against the full simulator's feed.
 *
 * Oracles: the hand computations in the comments (no figure here comes from
 * running the simulator); for random replacement, xorshift64* from seed 1
 * computed apart (python, the numbers are listed). */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim/sim.h"
#include "unit.h"

/* Line n of 64 bytes. */
#define LINE(n) ((uint64_t)(n) * 64)

/* A machine with D1 only (no I1, nothing below), or with one level below. */
static mt_sim_machine machine(const char *d1, const char *l2, const char *replacement)
{
    mt_sim_machine m;
    mt_error err;
    mt_sim_machine_init(&m);
    mt_sim_machine_set(&m, "D1", d1, &err);
    if (l2)
        mt_sim_machine_set(&m, "L2", l2, &err);
    if (replacement)
        mt_sim_machine_set(&m, "replacement", replacement, &err);
    return m;
}

static void reads(mt_sim *s, const uint64_t *lines, size_t n)
{
    for (size_t i = 0; i < n; i++)
        mt_sim_access(s, LINE(lines[i]), 8, MT_SIM_READ, 0, 0, 0);
}

static const mt_sim_level_stats *d1_of(mt_sim *s) { return mt_sim_level(s, 0); }

static void test_cold(void)
{
    /* 4 lines, 2 ways, 2 sets: lines 0, 1, 2 fit; 0 and 1 again hit. */
    mt_sim_machine m = machine("256,2,64", NULL, NULL);
    mt_sim *s = mt_sim_new(&m);
    reads(s, (uint64_t[]){0, 1, 2, 0, 1}, 5);
    const mt_sim_level_stats *d = d1_of(s);
    CHECK(d->refs == 5 && d->misses == 3 && d->cause[MT_SIM_COLD] == 3,
          "3C cold: 5 references, 3 misses, all cold (%llu, %llu, %llu)",
          (unsigned long long)d->refs, (unsigned long long)d->misses,
          (unsigned long long)d->cause[MT_SIM_COLD]);
    mt_sim_free(s);
}

static void test_capacity(void)
{
    /* Fully associative, 2 lines: A B C evicts A (LRU), A again misses; the
     * shadow of 2 lines misses too: capacity. */
    mt_sim_machine m = machine("128,2,64", NULL, NULL);
    mt_sim *s = mt_sim_new(&m);
    reads(s, (uint64_t[]){0, 1, 2, 0}, 4);
    const mt_sim_level_stats *d = d1_of(s);
    CHECK(d->misses == 4 && d->cause[MT_SIM_COLD] == 3 && d->cause[MT_SIM_CAPACITY] == 1 &&
              d->cause[MT_SIM_CONFLICT] == 0,
          "3C capacity: A B C A in a 2-line cache: 3 cold, 1 capacity");
    mt_sim_free(s);
}

static void test_conflict(void)
{
    /* 2 ways, 2 sets: lines 0, 2, 4 all map to set 0; 4 evicts 0, which
     * misses again, though a fully associative cache of 4 lines holds it. */
    mt_sim_machine m = machine("256,2,64", NULL, NULL);
    mt_sim *s = mt_sim_new(&m);
    reads(s, (uint64_t[]){0, 2, 4, 0}, 4);
    const mt_sim_level_stats *d = d1_of(s);
    CHECK(d->misses == 4 && d->cause[MT_SIM_COLD] == 3 && d->cause[MT_SIM_CONFLICT] == 1,
          "3C conflict: lines 0 2 4 0 in one 2-way set of a 4-line cache: 3 cold, 1 conflict");
    mt_sim_free(s);
}

/* A B C D E A B C in one 4-way set (lines 0-4).
 * LRU: E evicts A, A evicts B, B evicts C, C evicts D: 8 misses (5 cold, 3
 *   capacity: the shadow is LRU with the same 4 lines).
 * Tree PLRU (bit 0 = victim on the left): after A B C D the root points
 *   left (D was right), node 2 to way 0 (B was way 1), node 3 to way 2.
 *   E -> way 0 (A out); root now right, node 2 to way 1.  A -> root right,
 *   node 3 -> way 2 (C out); root left, node 3 to way 3.  B: hit in way 1;
 *   root right, node 2 to way 0.  C -> root right, node 3 -> way 3 (D out).
 *   7 misses: 5 cold, and A, C missing in the shadow too: 2 capacity. */
static void test_replacement_lru_plru(void)
{
    const uint64_t trace[] = {0, 1, 2, 3, 4, 0, 1, 2};
    mt_sim_machine m = machine("256,4,64", NULL, "lru");
    mt_sim *s = mt_sim_new(&m);
    reads(s, trace, 8);
    CHECK(d1_of(s)->misses == 8 && d1_of(s)->cause[MT_SIM_CAPACITY] == 3,
          "LRU: A B C D E A B C in 4 ways: 8 misses, 3 capacity (%llu)",
          (unsigned long long)d1_of(s)->misses);
    mt_sim_free(s);
    m = machine("256,4,64", NULL, "plru");
    s = mt_sim_new(&m);
    reads(s, trace, 8);
    CHECK(d1_of(s)->misses == 7 && d1_of(s)->cause[MT_SIM_CAPACITY] == 2 &&
              d1_of(s)->cause[MT_SIM_COLD] == 5,
          "tree PLRU: A B C D E A B C in 4 ways: 7 misses (B survives), 5 cold, 2 capacity "
          "(%llu)", (unsigned long long)d1_of(s)->misses);
    mt_sim_free(s);
}

/* Tree PLRU over 12 ways (this machine's D1): victims stay among the 12
 * (ASan would see a 13th), and 12 lines cycled through a 12-way set after
 * the first round always hit. */
static void test_plru_not_power_of_two(void)
{
    mt_sim_machine m = machine("768,12,64", NULL, "plru");
    mt_sim *s = mt_sim_new(&m);
    for (int round = 0; round < 3; round++)
        for (uint64_t l = 0; l < 12; l++)
            mt_sim_access(s, LINE(l), 8, MT_SIM_READ, 0, 0, 0);
    CHECK(d1_of(s)->misses == 12, "tree PLRU, 12 ways: 12 lines cycled 3 times miss 12 times");
    for (uint64_t l = 0; l < 1000; l++)
        mt_sim_access(s, LINE((l * 7) % 29), 8, MT_SIM_READ, 0, 0, 0);
    CHECK(d1_of(s)->refs == 1036, "tree PLRU, 12 ways: 29 lines over 12 ways, no way out of range");
    mt_sim_free(s);
}

/* Random, seed 1, 2 ways, one set; xorshift64* draws (high 32 bits x
 * ways >> 32): 1206177355 -> way 0, 2882512552 -> 1, 3117485455 -> 1,
 * 1303648416 -> 0.  A B C A B C A B:
 *   A w0, B w1 (empty ways first), C -> w0 (A out), A -> w1 (B out),
 *   B -> w1 (A out), C hit (w0), A -> w0 (C out), B hit: 6 misses. */
static void test_replacement_random(void)
{
    mt_sim_machine m = machine("128,2,64", NULL, "random");
    mt_sim *s = mt_sim_new(&m);
    reads(s, (uint64_t[]){0, 1, 2, 0, 1, 2, 0, 1}, 8);
    CHECK(d1_of(s)->misses == 6, "random, seed 1: A B C A B C A B in 2 ways: 6 misses (%llu)",
          (unsigned long long)d1_of(s)->misses);
    mt_sim_free(s);
    /* Seed 2 draws otherwise; the count may differ, the references not. */
    mt_error err;
    mt_sim_machine_set(&m, "seed", "2", &err);
    s = mt_sim_new(&m);
    reads(s, (uint64_t[]){0, 1, 2, 0, 1, 2, 0, 1}, 8);
    CHECK(d1_of(s)->refs == 8 && d1_of(s)->misses >= 4,
          "random, seed 2: 8 references, at least the 3 cold and one more");
    mt_sim_free(s);
}

static void test_write_policies(void)
{
    /* Write A then read A: with write-allocate the read hits (1 miss);
     * without, it misses too, and L2 (allocating) takes the write's miss
     * and the read's hit. */
    mt_sim_machine m = machine("128,2,64", "1024,2,64", NULL);
    mt_sim *s = mt_sim_new(&m);
    mt_sim_access(s, 0, 8, MT_SIM_WRITE, 0, 0, 0);
    mt_sim_access(s, 0, 8, MT_SIM_READ, 0, 0, 0);
    CHECK(d1_of(s)->misses == 1 && d1_of(s)->write_misses == 1,
          "write-allocate: write A, read A: one miss, the write's");
    mt_sim_free(s);
    mt_error err;
    mt_sim_machine_set(&m, "D1.write_allocate", "no", &err);
    s = mt_sim_new(&m);
    mt_sim_access(s, 0, 8, MT_SIM_WRITE, 0, 0, 0);
    mt_sim_access(s, 0, 8, MT_SIM_READ, 0, 0, 0);
    const mt_sim_level_stats *l2 = mt_sim_level(s, 1);
    CHECK(d1_of(s)->misses == 2 && l2->refs == 2 && l2->misses == 1,
          "no-write-allocate: write A, read A: D1 misses both, L2 misses the write only");
    mt_sim_free(s);
    /* Write-back: one line; write A, read B evicts dirty A (1 writeback),
     * read A evicts clean B (none). */
    m = machine("64,1,64", NULL, NULL);
    s = mt_sim_new(&m);
    mt_sim_access(s, LINE(0), 8, MT_SIM_WRITE, 0, 0, 0);
    mt_sim_access(s, LINE(1), 8, MT_SIM_READ, 0, 0, 0);
    mt_sim_access(s, LINE(0), 8, MT_SIM_READ, 0, 0, 0);
    CHECK(d1_of(s)->evictions == 2 && d1_of(s)->writebacks == 1,
          "write-back: a dirty eviction writes back, a clean one does not");
    mt_sim_free(s);
}

/* D1: 2 lines fully associative; L2: 2 lines direct-mapped, lines 0 and 2
 * both in its set 0.  Read 0, 2, 0: 2 evicts 0 from L2; inclusive, that
 * invalidates 0 in D1, which misses again, and its L2 miss evicts 2, which
 * leaves D1 too (3 D1 misses, 2 back invalidations); non-inclusive, D1
 * still holds 0 (2 misses). */
static void test_inclusive(void)
{
    const uint64_t trace[] = {0, 2, 0};
    mt_sim_machine m = machine("128,2,64", "128,1,64", NULL);
    mt_sim *s = mt_sim_new(&m);
    reads(s, trace, 3);
    CHECK(d1_of(s)->misses == 2 && mt_sim_level(s, 1)->back_invalidations == 0,
          "non-inclusive: L2's eviction leaves D1 alone (2 D1 misses)");
    mt_sim_free(s);
    mt_error err;
    mt_sim_machine_set(&m, "L2.inclusion", "inclusive", &err);
    s = mt_sim_new(&m);
    reads(s, trace, 3);
    CHECK(d1_of(s)->misses == 3 && mt_sim_level(s, 1)->back_invalidations == 2,
          "inclusive: L2's evictions invalidate D1's copies (3 D1 misses, 2 back invalidations)");
    mt_sim_free(s);
}

/* D1 and L2 one line each; read A B A B.  Exclusive: A fills D1 only; B
 * evicts A into L2 (victim fill); A hits L2 (moves up, B goes down); B
 * hits L2: L2 4 references, 2 misses.  Non-inclusive: L2 holds the last
 * line only: 4 misses. */
static void test_exclusive(void)
{
    const uint64_t trace[] = {0, 1, 0, 1};
    mt_sim_machine m = machine("64,1,64", "64,1,64", NULL);
    mt_sim *s = mt_sim_new(&m);
    reads(s, trace, 4);
    CHECK(mt_sim_level(s, 1)->misses == 4, "non-inclusive 1-line L2: A B A B misses 4 times");
    mt_sim_free(s);
    mt_error err;
    mt_sim_machine_set(&m, "L2.inclusion", "exclusive", &err);
    s = mt_sim_new(&m);
    reads(s, trace, 4);
    CHECK(d1_of(s)->misses == 4 && mt_sim_level(s, 1)->refs == 4 &&
              mt_sim_level(s, 1)->misses == 2,
          "exclusive 1-line L2: D1's victims land in L2, A B A B misses there twice (%llu)",
          (unsigned long long)mt_sim_level(s, 1)->misses);
    mt_sim_free(s);
    /* A victim keeps the code object that brought it into D1: code 1's
     * line 0 lands in L2 when code 2's line 1 evicts it, and is there at
     * the end, recorded for code 1 (no byte used in L2: nothing referenced
     * it there). */
    s = mt_sim_new(&m);
    mt_sim_access(s, LINE(0), 8, MT_SIM_READ, 1, 0, 0);
    mt_sim_access(s, LINE(1), 8, MT_SIM_READ, 2, 0, 0);
    mt_sim_finish(s);
    size_t n;
    const mt_sim_object_use *u = mt_sim_code_uses(s, &n);
    CHECK(n == 3 && u[0].level == 0 && u[0].object == 1 && u[0].bytes_used == 8 &&
              u[1].level == 0 && u[1].object == 2 && u[2].level == 1 && u[2].object == 1 &&
              u[2].lines == 1 && u[2].bytes_used == 0,
          "exclusive L2: the victim's line use goes to the code that brought it into D1");
    mt_sim_free(s);
}

/* 8 bytes at 0x3c cover lines 0 and 1.  straddle=access (Cachegrind): one
 * reference, one miss, both lines filled (reads of 0x0 and 0x40 hit), the
 * whole reference goes to L2 once.  straddle=line: two references, two
 * misses, L2 two references. */
static void test_straddle(void)
{
    mt_sim_machine m = machine("256,4,64", "1024,4,64", NULL);
    mt_sim *s = mt_sim_new(&m);
    mt_sim_access(s, 0x3c, 8, MT_SIM_READ, 0, 0, 0);
    mt_sim_access(s, 0x0, 4, MT_SIM_READ, 0, 0, 0);
    mt_sim_access(s, 0x40, 4, MT_SIM_READ, 0, 0, 0);
    CHECK(d1_of(s)->refs == 3 && d1_of(s)->misses == 1 && mt_sim_level(s, 1)->refs == 1 &&
              mt_sim_level(s, 1)->misses == 1,
          "straddle=access: a reference over two lines is one reference, one miss, at each level");
    mt_sim_free(s);
    /* One line of the two already there: still one miss (Cachegrind counts
     * the reference a miss if either line misses). */
    s = mt_sim_new(&m);
    mt_sim_access(s, 0x0, 4, MT_SIM_READ, 0, 0, 0);
    mt_sim_access(s, 0x3c, 8, MT_SIM_READ, 0, 0, 0);
    CHECK(d1_of(s)->refs == 2 && d1_of(s)->misses == 2 && mt_sim_level(s, 1)->refs == 2,
          "straddle=access: the second line missing makes the reference a miss");
    mt_sim_free(s);
    mt_error err;
    mt_sim_machine_set(&m, "straddle", "line", &err);
    s = mt_sim_new(&m);
    mt_sim_access(s, 0x3c, 8, MT_SIM_READ, 0, 0, 0);
    mt_sim_access(s, 0x0, 4, MT_SIM_READ, 0, 0, 0);
    mt_sim_access(s, 0x40, 4, MT_SIM_READ, 0, 0, 0);
    CHECK(d1_of(s)->refs == 4 && d1_of(s)->misses == 2 && mt_sim_level(s, 1)->refs == 2,
          "straddle=line: a reference over two lines is two references, two misses");
    mt_sim_free(s);
}

/* Tagged next-line prefetch, 4 lines fully associative: lines 0-7 read in
 * order.  0 misses and brings 1; each of 1-7 is a first reference to a
 * prefetched line (a hit) and brings the next: 1 miss, 7 prefetch hits, 8
 * prefetches; line 8 is never read: 1 unused at the end.  Without the
 * prefetcher, 8 misses. */
static void test_prefetch(void)
{
    mt_sim_machine m = machine("256,4,64", NULL, NULL);
    mt_error err;
    mt_sim_machine_set(&m, "prefetch", "next-line", &err);
    mt_sim *s = mt_sim_new(&m);
    for (uint64_t l = 0; l < 8; l++)
        mt_sim_access(s, LINE(l), 8, MT_SIM_READ, 0, 0, 0);
    mt_sim_finish(s);
    const mt_sim_level_stats *d = d1_of(s);
    CHECK(d->refs == 8 && d->misses == 1 && d->prefetch_hits == 7 && d->prefetches == 8 &&
              d->prefetch_unused == 1 && d->temporal[0] == 9,
          "next-line prefetch: 8 lines in order miss once, 7 prefetch hits, 8 prefetches, "
          "1 unused; no line counts a reuse (%llu misses)", (unsigned long long)d->misses);
    mt_sim_free(s);
    mt_sim_machine_set(&m, "L2", "1024,4,64", &err);
    mt_sim_machine_set(&m, "L2.inclusion", "exclusive", &err);
    mt_sim_machine_set(&m, "L2.prefetch", "next-line", &err);
    CHECK(mt_sim_machine_check(&m, &err) != 0 && strstr(err.msg, "no prefetcher"),
          "an exclusive level with a prefetcher is refused (%s)", err.msg);
}

/* Stride prefetch, 4 lines fully associative, one instruction reading
 * every 256 bytes (4 lines): 0 starts its entry, 0x100 sets the stride,
 * 0x200 repeats it (prefetch 0x300), then 0x300, 0x400, 0x500 hit what was
 * prefetched and each brings the next: 3 misses, 3 prefetch hits, 4
 * prefetches, 0x600 unused.  Another instruction's references in between
 * use another entry and change nothing. */
static void test_prefetch_stride(void)
{
    mt_sim_machine m = machine("256,4,64", NULL, NULL);
    mt_error err;
    mt_sim_machine_set(&m, "prefetch", "stride", &err);
    mt_sim *s = mt_sim_new(&m);
    for (uint64_t a = 0; a <= 0x500; a += 0x100) {
        mt_sim_access(s, a, 8, MT_SIM_READ, 0, 0, 0x401000);
        mt_sim_access(s, 0x9000, 8, MT_SIM_READ, 0, 0, 0x401008);
    }
    mt_sim_finish(s);
    const mt_sim_level_stats *d = d1_of(s);
    CHECK(d->misses == 4 && d->prefetch_hits == 3 && d->prefetches == 4 &&
              d->prefetch_unused == 1,
          "stride prefetch: every 4th line read by one instruction: 3 misses (and 1 for the "
          "other instruction's line), 3 prefetch hits, 4 prefetches, 1 unused (%llu misses)",
          (unsigned long long)d->misses);
    mt_sim_free(s);
}

/* Instruction fetches go to I1 when there is one, else to D1. */
static void test_fetches(void)
{
    mt_sim_machine m = machine("128,2,64", NULL, NULL);
    mt_error err;
    mt_sim_machine_set(&m, "I1", "128,2,64", &err);
    mt_sim *s = mt_sim_new(&m);
    mt_sim_access(s, 0x1000, 4, MT_SIM_IFETCH, 0, 0, 0);
    mt_sim_access(s, 0x1000, 4, MT_SIM_READ, 0, 0, 0);
    CHECK(mt_sim_level_count(s) == 2 && mt_sim_level(s, 0)->fetch_misses == 1 &&
              mt_sim_level(s, 1)->read_misses == 1,
          "I1 apart from D1: a fetch and a read of one line miss once each");
    mt_sim_free(s);
}

/* Code 7 reads object 1 at line 0; code 8 reads object 2 at line 1 in a
 * one-line D1: object 2 evicts object 1 once; each pair 1 reference, 1
 * cold miss.  Line use: 8 then 8 more then 16 bytes of line 0 (32 of 64
 * bytes: bucket 4/8), 2 reuses (bucket 2: 2-3). */
static void test_tallies(void)
{
    mt_sim_machine m = machine("64,1,64", NULL, NULL);
    mt_sim *s = mt_sim_new(&m);
    mt_sim_access(s, 0x0, 8, MT_SIM_READ, 7, 1, 0);
    mt_sim_access(s, 0x8, 8, MT_SIM_READ, 7, 1, 0);
    mt_sim_access(s, 0x10, 16, MT_SIM_WRITE, 7, 1, 0);
    mt_sim_access(s, 0x40, 16, MT_SIM_READ, 8, 2, 0);
    mt_sim_finish(s);
    size_t n;
    const mt_sim_pair *p = mt_sim_pairs(s, &n);
    CHECK(n == 2 && p[0].code == 7 && p[0].data == 1 && p[0].refs == 3 &&
              p[0].misses[0][MT_SIM_COLD] == 1 && p[1].code == 8 && p[1].refs == 1 &&
              p[1].misses[0][MT_SIM_COLD] == 1,
          "code x data: (7, 1) 3 references 1 cold miss, (8, 2) 1 and 1");
    const mt_sim_eviction *e = mt_sim_evictions(s, &n);
    CHECK(n == 1 && e[0].evictor == 2 && e[0].victim == 1 && e[0].count == 1,
          "causes of replacement: object 2 evicted object 1 once");
    const mt_sim_object_use *u = mt_sim_object_uses(s, &n);
    CHECK(n == 2 && u[0].object == 1 && u[0].bytes_used == 32 && u[0].reuses == 2 &&
              u[1].object == 2 && u[1].bytes_used == 16 && u[1].reuses == 0,
          "line use per object: object 1 32 bytes and 2 reuses, object 2 16 bytes");
    u = mt_sim_code_uses(s, &n);
    CHECK(n == 2 && u[0].object == 7 && u[0].lines == 1 && u[0].bytes_used == 32 &&
              u[0].reuses == 2 && u[1].object == 8 && u[1].lines == 1 && u[1].bytes_used == 16 &&
              u[1].reuses == 0,
          "line use per code object: code 7 1 line, 32 bytes, 2 reuses; code 8 1 line, 16 bytes");
    const mt_sim_level_stats *d = d1_of(s);
    CHECK(d->spatial[4] == 1 && d->spatial[2] == 1 && d->temporal[2] == 1 && d->temporal[0] == 1,
          "line use: 32/64 bytes in bucket 4/8, 16/64 in 2/8; 2 reuses in bucket 2-3, none in 0");
    CHECK(d->writebacks == 1, "the written line evicted dirty: 1 writeback");
    mt_sim_free(s);
}

/* A pointer chase's 16-byte nodes, one per 64-byte line, each read once
 * into a 1-line cache: every line 25% used. */
static void test_spatial_quarter(void)
{
    mt_sim_machine m = machine("64,1,64", NULL, NULL);
    mt_sim *s = mt_sim_new(&m);
    for (uint64_t i = 0; i < 100; i++)
        mt_sim_access(s, LINE((i * 37) % 101), 16, MT_SIM_READ, 0, 0, 0);
    mt_sim_finish(s);
    CHECK(d1_of(s)->spatial[2] == 100 && d1_of(s)->lines_used == 100,
          "16 bytes of each 64-byte line used: all 100 lines in the 2/8 bucket");
    mt_sim_free(s);
}

static char *temp_dir(void)
{
    char *dir = mt_xstrdup("/tmp/mtool-test-sim.XXXXXX");
    if (!mkdtemp(dir))
        abort();
    return dir;
}

static void write_bytes(const char *path, const char *text, size_t len)
{
    FILE *fp = fopen(path, "w");
    fwrite(text, 1, len, fp);
    fclose(fp);
}

static void write_file(const char *path, const char *text)
{
    write_bytes(path, text, strlen(text));
}

static void fake_index(const char *root, int i, const char *level, const char *type,
                       const char *size, const char *ways)
{
    char *dir = mt_xasprintf("%s/index%d", root, i);
    mkdir(dir, 0700);
    const char *names[] = {"level", "type", "size", "ways_of_associativity",
                           "coherency_line_size"};
    const char *values[] = {level, type, size, ways, "64"};
    for (int k = 0; k < 5; k++) {
        char *path = mt_xasprintf("%s/%s", dir, names[k]);
        char *text = mt_xasprintf("%s\n", values[k]);
        write_file(path, text);
        free(path);
        free(text);
    }
    free(dir);
}

static void test_machine(void)
{
    char *root = temp_dir();
    fake_index(root, 0, "1", "Data", "48K", "12");
    fake_index(root, 1, "1", "Instruction", "32K", "8");
    fake_index(root, 2, "2", "Unified", "2048K", "16");
    fake_index(root, 3, "3", "Unified", "307200K", "20");
    mt_sim_machine m;
    mt_error err;
    CHECK(mt_sim_machine_from_sysfs(&m, root, &err) == 0 && m.d1.size == 49152 &&
              m.d1.ways == 12 && m.i1.size == 32768 && m.nlower == 2 &&
              m.lower[1].size == 314572800 && m.lower[1].ways == 20 &&
              mt_sim_machine_check(&m, &err) == 0,
          "sysfs: 48K 12-way D1, 32K I1, L2, 300M 20-way L3 (245760 sets, not a power of two)");
    /* The description written reads back the same. */
    char *path = mt_xasprintf("%s/machine.txt", root);
    FILE *fp = fopen(path, "w");
    mt_sim_machine_write(fp, &m);
    fclose(fp);
    mt_sim_machine back;
    CHECK(mt_sim_machine_read(&back, path, &err) == 0 && back.nlower == 2 &&
              back.lower[1].size == m.lower[1].size && back.d1.ways == 12 && back.i1.present,
          "the machine file written reads back (%s)", err.msg);
    /* LL and none. */
    CHECK(mt_sim_machine_set(&m, "L2", "none", &err) == 0 && m.nlower == 0 &&
              mt_sim_machine_set(&m, "LL", "1M,16,64", &err) == 0 && m.nlower == 1 &&
              m.lower[0].size == 1 << 20,
          "L2=none drops the levels below L1; LL= then adds the last level");
    write_file(path, "version = 1\nD1 = 32K,8,64\nD1.replacement = fifo\n");
    CHECK(mt_sim_machine_read(&back, path, &err) != 0 && strstr(err.msg, "machine.txt:3:"),
          "a bad value is refused with the file and line (%s)", err.msg);
    write_file(path, "D1 = 32K,8,64\n");
    CHECK(mt_sim_machine_read(&back, path, &err) != 0 && strstr(err.msg, ":1: expected 'version"),
          "a file without its version line first is refused (%s)", err.msg);
    write_file(path, "version = 1\nD1 = 1000,3,64\n");
    CHECK(mt_sim_machine_read(&back, path, &err) != 0 && strstr(err.msg, "whole number of sets"),
          "a size that is no whole number of sets is refused (%s)", err.msg);
    write_file(path, "version = 1\nD1 = 32K,8,48\n");
    CHECK(mt_sim_machine_read(&back, path, &err) != 0 && strstr(err.msg, "power of two"),
          "a line that is not a power of two is refused (%s)", err.msg);
    mt_sim_machine nest = machine("32K,8,128", "1M,8,64", NULL);
    mt_sim_machine_set(&nest, "L3", "8M,16,64", &err);
    mt_sim_machine_set(&nest, "L3.inclusion", "exclusive", &err);
    CHECK(mt_sim_machine_check(&nest, &err) != 0 && strstr(err.msg, "L3: exclusive needs lines"),
          "an exclusive L3 under a D1 of longer lines is refused, even with L2 between (%s)",
          err.msg);
    char *none = mt_xasprintf("%s/nothing", root);
    CHECK(mt_sim_machine_from_sysfs(&m, none, &err) != 0 && strstr(err.msg, none),
          "no sysfs cache information: one error naming the directory (%s)", err.msg);
    free(none);
    free(path);
    char *rm = mt_xasprintf("rm -rf %s", root);
    CHECK(system(rm) == 0, "cleanup");
    free(rm);
    free(root);
}

/* A trace file's counts through the simulator, or -1 with err. */
static uint64_t capacity; /* D1's capacity misses in the last run_trace */

static int run_trace_bytes(const char *text, size_t len, mt_trace_format f, mt_trace_counts *c,
                           uint64_t *d1_misses, mt_error *err)
{
    char *dir = temp_dir();
    char *path = mt_xasprintf("%s/trace", dir);
    write_bytes(path, text, len);
    mt_sim_machine m = machine("128,2,64", NULL, NULL);
    mt_sim_machine_set(&m, "I1", "128,2,64", err);
    mt_sim *s = mt_sim_new(&m);
    int rc = mt_trace_read(s, path, f, NULL, NULL, NULL, c, err);
    *d1_misses = mt_sim_level(s, 1)->misses;
    capacity = mt_sim_level(s, 1)->cause[MT_SIM_CAPACITY];
    mt_sim_free(s);
    unlink(path);
    rmdir(dir);
    free(path);
    free(dir);
    return rc;
}

static int run_trace(const char *text, mt_trace_format f, mt_trace_counts *c,
                     uint64_t *d1_misses, mt_error *err)
{
    return run_trace_bytes(text, strlen(text), f, c, d1_misses, err);
}

static void test_traces(void)
{
    mt_trace_counts c;
    mt_error err;
    uint64_t misses;
    /* The last read is of line 2, which the 2-line shadow held before the
     * flush: a conflict miss if the flush left the shadow alone. */
    CHECK(run_trace("0 0\n1 0x40 8\n\n2 1000 4\n3 80\n4 0\n0 80\n", MT_TRACE_DIN, &c, &misses,
                    &err) == 0 &&
              c.records == 6 && c.reads == 3 && c.writes == 1 && c.fetches == 1 &&
              c.flushes == 1 && misses == 4 && capacity == 1,
          "din: read, write, fetch, other (a read), flush, read: the flush makes the last "
          "read miss (4 D1 misses), a capacity miss (the shadow is flushed too)");
    CHECK(run_trace("==1== Lackey\n### unhandled dwarf2 abbrev form code 0x25\nI  0401000,3\n L 1ffefffd58,8\n S 0000000000601040,4\n"
                    " M 601040,4\n",
                    MT_TRACE_LACKEY, &c, &misses, &err) == 0 &&
              c.records == 4 && c.fetches == 1 && c.reads == 2 && c.writes == 2 &&
              c.modifies == 1 && misses == 2,
          "lackey: I, L, S, M (a load and a store): 2 D1 misses");
    static const char *const bad_din[] = {"0 zz\n", "5 0\n", "0\n", "0 12345678901234567\n",
                                          "0 10 0\n", "0 10 5000\n", "0 10 4 x\n", "00 1\n"};
    for (size_t i = 0; i < MT_ARRAY_LEN(bad_din); i++) {
        char *text = mt_xasprintf("0 0\n%s", bad_din[i]);
        int rc = run_trace(text, MT_TRACE_DIN, &c, &misses, &err);
        CHECK(rc != 0 && strstr(err.msg, "/trace:2: "), "din: bad line %zu refused at line 2 (%s)",
              i, err.msg);
        free(text);
    }
    static const char *const bad_lackey[] = {"I 401000,3\n", " L 401000\n", " X 10,4\n",
                                             " L 10,0\n", "L  10,4\n", " S 10,4 junk\n"};
    for (size_t i = 0; i < MT_ARRAY_LEN(bad_lackey); i++) {
        char *text = mt_xasprintf("I  10,4\n%s", bad_lackey[i]);
        int rc = run_trace(text, MT_TRACE_LACKEY, &c, &misses, &err);
        CHECK(rc != 0 && strstr(err.msg, "/trace:2: "),
              "lackey: bad line %zu refused at line 2 (%s)", i, err.msg);
        free(text);
    }
    CHECK(run_trace("", MT_TRACE_DIN, &c, &misses, &err) != 0 && strstr(err.msg, "no din record"),
          "an empty trace is refused (%s)", err.msg);
    CHECK(run_trace_bytes("0 0\n0 4\0 8\n", 10, MT_TRACE_DIN, &c, &misses, &err) != 0 &&
              strstr(err.msg, ":2: a NUL byte"),
          "a NUL byte in a line is refused (%s)", err.msg);
}

/* Fuzz-ish: a valid trace of each format with one byte changed at every
 * position to each of a few bytes: every variant reads or is refused with
 * its file and line; nothing crashes (ASan, UBSan). */
static void fuzz_trace(const char *good, mt_trace_format f, const char *what)
{
    const char subst[] = {'\0', '\n', ' ', ',', 'f', '9', 'I', 'M', '0', '\xff'};
    size_t len = strlen(good);
    unsigned refused_well = 0, read = 0, total = 0;
    char *text = mt_xmalloc(len);
    for (size_t pos = 0; pos < len; pos++)
        for (size_t k = 0; k < sizeof subst; k++) {
            memcpy(text, good, len);
            text[pos] = subst[k];
            mt_trace_counts c;
            mt_error err;
            uint64_t misses;
            int rc = run_trace_bytes(text, len, f, &c, &misses, &err);
            total++;
            if (rc == 0)
                read++;
            else if (strstr(err.msg, "/trace:"))
                refused_well++;
        }
    free(text);
    CHECK(read && refused_well && read + refused_well == total,
          "damaged %s traces: %u variants, %u read, %u refused with file:line", what, total, read,
          refused_well);
}

static void test_damaged_traces(void)
{
    fuzz_trace("I  0401000,3\n L 1ffefffd58,8\n S 601040,4\n M 601048,16\n", MT_TRACE_LACKEY,
               "lackey");
    fuzz_trace("2 401000 3\n0 1ffefffd58 8\n1 601040\n4 0\n3 0x601048 16\n", MT_TRACE_DIN,
               "din");
}

/* Sampled modes (sim.h, sample.c) on streams whose every sample behaves
 * alike, so that the estimates must be exact; their error bound is then a
 * count's own (Poisson) spread, variance = mean, never 0. */
static void test_sample_sets(void)
{
    /* D1 4 KiB 4-way: 16 sets, 64 lines.  Lines 0..127 swept 3 times, LRU:
     * every reference misses (128 cold, 256 capacity: the sweep is twice the
     * fully associative cache too).  1/4 of the 16 residues sampled: 8 of
     * each residue's lines per sweep, 96 references, all misses (the
     * shadow's 16 lines against 32 swept); x 4 = the exact counts. */
    mt_sim_machine m = machine("4096,4,64", NULL, NULL);
    mt_sim_sample smp;
    mt_error err;
    CHECK(mt_sim_sample_parse(&smp, MT_SIM_SAMPLE_SETS, "1/4", &err) == 0 &&
              mt_sim_sample_check(&smp, &m, &err) == 0,
          "sample: 1/4 of 16 sets is accepted");
    mt_sim *s = mt_sim_new(&m);
    mt_sim_set_sample(s, &smp);
    for (int sweep = 0; sweep < 3; sweep++)
        for (uint64_t l = 0; l < 128; l++)
            reads(s, &l, 1);
    mt_sim_finish(s);
    const mt_sim_estimate *e = mt_sim_estimate_counts(s);
    const mt_sim_level_stats *d = d1_of(s);
    CHECK(e && e->offered == 384 && e->counted == 96 && e->scale == 4,
          "sample sets: 96 of 384 references counted, scale 4");
    CHECK(d->refs == 384 && d->misses == 384 && d->cause[MT_SIM_COLD] == 128 &&
              d->cause[MT_SIM_CAPACITY] == 256,
          "sample sets: the estimates are the exact counts (%llu refs, %llu misses, %llu cold)",
          (unsigned long long)d->refs, (unsigned long long)d->misses,
          (unsigned long long)d->cause[MT_SIM_COLD]);
    /* 4 of 16 residues, 24 misses each: 2 x 16 x sqrt((1 - 4/16) x 24 / 4) / 384 */
    CHECK(fabs(e->error[0] - 2 * 16 * sqrt(0.75 * 24 / 4) / 384) < 1e-9,
          "sample sets: residues alike, error bound their Poisson spread, 17.7%% (%g)",
          e->error[0]);
    mt_sim_free(s);
    /* The levels' sets in common: 16 (D1) and 128 (L2 24 KiB 3-way) -> 16. */
    m = machine("4096,4,64", "24K,3,64", NULL);
    CHECK(mt_sim_sample_parse(&smp, MT_SIM_SAMPLE_SETS, "1/8", &err) == 0 &&
              mt_sim_sample_check(&smp, &m, &err) == 0,
          "sample: 1/8 of 16 sets in common is accepted");
    CHECK(mt_sim_sample_parse(&smp, MT_SIM_SAMPLE_SETS, "1/16", &err) == 0 &&
              mt_sim_sample_check(&smp, &m, &err) != 0,
          "sample: 1/16 leaves one set: no error bound, refused (%s)", err.msg);
    CHECK(mt_sim_sample_parse(&smp, MT_SIM_SAMPLE_SETS, "1/3", &err) == 0 &&
              mt_sim_sample_check(&smp, &m, &err) != 0,
          "sample: 1/3 does not divide 16, refused");
}

static void test_sample_time(void)
{
    /* 2/10/3: of every 10 references 3 warm, 2 counted, 5 skipped.  100
     * references to new lines: all cold misses; 20 counted, scale 5, the
     * estimate exact, every miss a first reference (cold-start share 1),
     * every on-period alike (error bound the Poisson spread: 10 of 50
     * slices, 2 misses each, 2 x 50 x sqrt((1 - 10/50) x 2 / 10) / 100 =
     * 0.4).  Were the warm-ups counted, the references would come to 5 x 50. */
    mt_sim_machine m = machine("256,4,64", NULL, NULL);
    mt_sim_sample smp;
    mt_error err;
    CHECK(mt_sim_sample_parse(&smp, MT_SIM_SAMPLE_TIME, "2/10/3", &err) == 0 && smp.on == 2 &&
              smp.period == 10 && smp.warm == 3,
          "sample: 2/10/3 parsed");
    mt_sim *s = mt_sim_new(&m);
    mt_sim_set_sample(s, &smp);
    for (uint64_t l = 0; l < 100; l++)
        reads(s, &l, 1);
    mt_sim_finish(s);
    const mt_sim_estimate *e = mt_sim_estimate_counts(s);
    const mt_sim_level_stats *d = d1_of(s);
    CHECK(e->counted == 20 && e->scale == 5 && d->refs == 100 && d->misses == 100 &&
              e->cold_start[0] == 1 && fabs(e->error[0] - 0.4) < 1e-9,
          "sample time: 20 counted x 5 = 100 references, 100 misses, cold-start 1, error 0.4 "
          "(%llu, %llu, %g, %g)",
          (unsigned long long)d->refs, (unsigned long long)d->misses, e->cold_start[0],
          e->error[0]);
    mt_sim_free(s);
    /* Lines 0 1 0 1 ... in a 4-line cache: the 2 misses fall in the first
     * warm-up and are dropped: no miss estimated, and no bound claimed. */
    s = mt_sim_new(&m);
    mt_sim_set_sample(s, &smp);
    for (uint64_t i = 0; i < 100; i++) {
        uint64_t l = i % 2;
        reads(s, &l, 1);
    }
    mt_sim_finish(s);
    e = mt_sim_estimate_counts(s);
    d = d1_of(s);
    CHECK(d->refs == 100 && d->misses == 0 && e->error[0] < 0,
          "sample time: a warm-up takes the cold misses; no miss, no bound");
    mt_sim_free(s);
    CHECK(mt_sim_sample_parse(&smp, MT_SIM_SAMPLE_TIME, "3/10/7", &err) != 0 &&
              mt_sim_sample_parse(&smp, MT_SIM_SAMPLE_TIME, "3/10/x", &err) != 0,
          "sample: ON + WARM >= PERIOD or trailing text refused");
    m = machine("4096,4,64", NULL, NULL);
    s = mt_sim_new(&m);
    CHECK(mt_sim_estimate_counts(s) == NULL, "an exact simulator has no estimate");
    mt_sim_free(s);
}

static mt_trace_record record(uint64_t addr, unsigned size, unsigned kind)
{
    return (mt_trace_record){.addr = addr, .code = 1, .size = (uint16_t)size, .kind = (uint8_t)kind};
}

/* A gather's group of records, as the tracing copy writes it: 4 dword
 * indices {3, -1, 10, 20} x scale 64 from base LINE(100), mask 0b1011
 * (element 2 off): reads of lines 103, 99 and 120.  Split across two
 * frames with another thread's read between; then a scatter of 2 qword
 * indices {1, 2} x 8 from LINE(200): one line written twice.  And
 * damaged groups: an index with no base before it, a mask of 17 elements. */
static void test_vector_feed(void)
{
    mt_sim_machine m = machine("4K,4,64", NULL, NULL);
    mt_sim *s = mt_sim_new(&m);
    mt_trace_feed *f = mt_trace_feed_new(s);
    int32_t idx[4] = {3, -1, 10, 20};
    uint64_t words[2];
    memcpy(words, idx, sizeof words);
    mt_trace_record first[] = {record(LINE(100), 4, MT_TRACE_GATHER),
                               record(0xb, 4 | 4 << 8 | ((64 << 12) & 0xf000), MT_TRACE_VECTOR_MASK)};
    /* a scale of 64 does not fit the 4 bits: the mask record is damaged */
    mt_trace_feed_records(f, 7, first, 2);
    CHECK(mt_trace_feed_counts_of(f)->damaged == 1, "a scale that does not fit: damaged");
    first[1] = record(0xb, 4 | 4 << 8 | 8 << 12, MT_TRACE_VECTOR_MASK);
    idx[0] = 3 * 8, idx[1] = -8, idx[2] = 10 * 8, idx[3] = 20 * 8; /* x 8 = lines 103, 99, (110), 120 */
    memcpy(words, idx, sizeof words);
    mt_trace_feed_records(f, 7, first, 2);
    mt_trace_record other = record(LINE(500), 8, MT_TRACE_READ);
    mt_trace_feed_records(f, 8, &other, 1);
    mt_trace_record rest[] = {record(words[0], 8, MT_TRACE_VECTOR_INDEX),
                              record(words[1], 8, MT_TRACE_VECTOR_INDEX)};
    mt_trace_feed_records(f, 7, rest, 2);
    const mt_trace_feed_counts *c = mt_trace_feed_counts_of(f);
    CHECK(c->vector_elements == 3 && c->reads == 4 && d1_of(s)->misses == 4,
          "gather across two frames: 3 elements read (got %llu), 4 misses with the other "
          "thread's (got %llu)", (unsigned long long)c->vector_elements,
          (unsigned long long)d1_of(s)->misses);
    /* lines 103, 99 and 120 now hit; 110 was masked off: it misses */
    uint64_t lines[] = {103, 99, 120, 110};
    reads(s, lines, 4);
    CHECK(d1_of(s)->misses == 5, "the gathered lines hit, the masked-off one misses (%llu)",
          (unsigned long long)d1_of(s)->misses);
    int64_t q[2] = {1, 2};
    mt_trace_record scatter[] = {record(LINE(200), 8, MT_TRACE_SCATTER),
                                 record(0x3, 2 | 8 << 8 | 8 << 12, MT_TRACE_VECTOR_MASK),
                                 record((uint64_t)q[0], 8, MT_TRACE_VECTOR_INDEX),
                                 record((uint64_t)q[1], 8, MT_TRACE_VECTOR_INDEX)};
    mt_trace_feed_records(f, 7, scatter, 4);
    CHECK(c->writes == 2 && d1_of(s)->write_misses == 1, "scatter: 2 writes, 1 line missed");
    mt_trace_record stray[] = {record(5, 8, MT_TRACE_VECTOR_INDEX),
                               record(LINE(300), 4, MT_TRACE_GATHER),
                               record(0xffff, 17 | 4 << 8 | 1 << 12, MT_TRACE_VECTOR_MASK),
                               record(5, 8, MT_TRACE_VECTOR_INDEX)};
    mt_trace_feed_records(f, 9, stray, 4);
    CHECK(c->damaged == 4 && c->vector_elements == 5,
          "a stray index, a 17-element mask and the index after it: damaged (%llu)",
          (unsigned long long)c->damaged);
    mt_trace_feed_free(f);
    mt_sim_free(s);
}

/* A random stream of a tracing copy's records (plain reads, writes and
 * modifies of 1-64 bytes over 96 lines, a third of them straddling; now and
 * then a rep movs group, an event, a damaged record, a reference that would
 * wrap the address space, a code object beyond the direct table), in
 * frames of random length (now and then longer than sim/fast.c's filter
 * chunk, nearly all within one line), fed to the full simulator and to the misses-only
 * one, whose feed decodes plain references in a batch (sim/fast.c,
 * sim_fast_records).  Oracle: the full simulator through the feed's
 * record-by-record path; every level's counts by kind, every code tally
 * and the feed's counts must be the same, on machines the batch takes
 * (straddle=access and =line, write-allocate or not) and one it hands back
 * (D1's sets no power of two); and on two and three CPUs (sim/fast_mp.c),
 * the frames' threads 1, 2, 3 taking turns on them, with and without an
 * I1 (with one, a read of D1's MRU line skips the directory), each CPU's
 * figures the same too. */
static uint64_t xorshift(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static mt_trace_record random_record(uint64_t *rng)
{
    uint64_t v = xorshift(rng);
    unsigned pick = v % 100, size = 1 + (unsigned)(v >> 8) % 64;
    uint64_t addr = 0x10000 + (v >> 16) % ((pick & 1 ? 20 : 96) * 64); /* MRU hits too */
    mt_trace_record r = record(addr, size, pick < 60 ? MT_TRACE_READ
                                           : pick < 85 ? MT_TRACE_WRITE
                                                       : MT_TRACE_MODIFY);
    r.code = (uint32_t)(v >> 40) % 5 == 0 ? 0xfffffff0u : 1 + (uint32_t)(v >> 44) % 7;
    if (pick == 90)
        r = record(UINT64_MAX - 3, 8, MT_TRACE_READ); /* wraps: clamped to 4 bytes */
    else if (pick == 91)
        r = record(addr, 0, MT_TRACE_WRITE);         /* damaged: no size */
    else if (pick == 92)
        r = record(addr, 8, MT_TRACE_KINDS);         /* damaged: no such kind */
    else if (pick == 93)
        r = record(addr, 1, MT_TRACE_ALLOC);         /* an event */
    return r;
}

/* The figures per CPU both simulators compute (sim/fast_mp.c's Notes). */
static bool same_cpus(const mt_sim *a, const mt_sim *b)
{
    bool same = mt_sim_cpus(a) == mt_sim_cpus(b);
    for (unsigned c = 0; same && mt_sim_cpus(a) > 1 && c < mt_sim_cpus(a); c++) {
        const mt_sim_cpu_stats *x = mt_sim_cpu(a, c), *y = mt_sim_cpu(b, c);
        same = x->refs == y->refs && x->threads == y->threads &&
               !memcmp(x->misses, y->misses, sizeof x->misses) &&
               !memcmp(x->coherence, y->coherence, sizeof x->coherence) &&
               x->true_sharing == y->true_sharing && x->false_sharing == y->false_sharing &&
               x->invalidations_sent == y->invalidations_sent &&
               !memcmp(x->invalidations_received, y->invalidations_received,
                       sizeof x->invalidations_received) &&
               x->interventions == y->interventions &&
               x->interventions_served == y->interventions_served && x->upgrades == y->upgrades;
    }
    return same;
}

/* Whether two simulators counted the same per level and kind, and per
 * code object (`ncodes` of them). */
static bool same_counts(mt_sim *a, mt_sim *b, size_t ncodes)
{
    bool same = true;
    for (unsigned l = 0; l < mt_sim_level_count(a); l++) {
        const mt_sim_level_stats *x = mt_sim_level(a, l), *y = mt_sim_level(b, l);
        same = same && x->refs == y->refs && x->misses == y->misses && x->reads == y->reads &&
               x->read_misses == y->read_misses && x->writes == y->writes &&
               x->write_misses == y->write_misses;
    }
    size_t na, nb;
    const mt_sim_code_tally *ta = mt_sim_code_tallies(a, &na);
    const mt_sim_code_tally *tb = mt_sim_code_tallies(b, &nb);
    same = same && na == ncodes && na == nb;
    for (size_t i = 0; same && i < na; i++)
        same = ta[i].code == tb[i].code && ta[i].refs == tb[i].refs &&
               !memcmp(ta[i].misses, tb[i].misses, sizeof ta[i].misses);
    return same;
}

static void test_feed_batch(void)
{
    const char *machines[][6] = {{"1K,4,64", "4K,8,64", NULL, NULL, NULL, NULL},
                                 {"1K,4,64", "4K,8,64", "straddle", "line", NULL, NULL},
                                 {"1K,4,64", "6K,3,128", "write_allocate", "no", NULL, NULL},
                                 {"768,4,64", "4K,8,64", "straddle", "line", NULL, NULL},
                                 /* fast.c's scans unrolled for 8, 12 and 16 ways,
                                    their sets overflowing on the 96 lines */
                                 {"1K,8,64", "4K,16,64", NULL, NULL, NULL, NULL},
                                 {"2K,16,64", "3K,12,64", NULL, NULL, NULL, NULL},
                                 {"1K,4,64", "4K,8,64", "cpus", "2", NULL, NULL},
                                 {"512,2,64", "4K,8,64", "cpus", "3", "I1", "1K,4,64"},
                                 {"1K,4,64", "2K,4,64", "cpus", "2", "shared", "none"}};
    for (size_t k = 0; k < sizeof machines / sizeof machines[0]; k++) {
        mt_sim_machine m = machine(machines[k][0], machines[k][1], NULL);
        mt_error err;
        for (int j = 2; j < 6 && machines[k][j]; j += 2)
            mt_sim_machine_set(&m, machines[k][j], machines[k][j + 1], &err);
        mt_sim *sims[2] = {mt_sim_new(&m), mt_sim_new_misses_only(&m, &err)};
        mt_trace_feed *feeds[2] = {mt_trace_feed_new(sims[0]), mt_trace_feed_new(sims[1])};
        uint64_t rng = 88172645463325252ull;
        mt_trace_record frame[1400];
        for (int round = 0; round < 3000; round++) {
            /* now and then a frame longer than the filter's chunk of 512
               (sim/fast.c), mostly one line's references so that it is
               taken whole */
            uint32_t n = (uint32_t)(xorshift(&rng) % (round % 97 ? 64 : 1400));
            for (uint32_t i = 0; i < n; i++)
                frame[i] = random_record(&rng);
            for (uint32_t i = 0; n > 64 && i < n; i++)
                if (frame[i].size && frame[i].kind <= MT_TRACE_MODIFY && i % 300)
                    frame[i].addr = 0x10000 + (frame[i].addr - 0x10000) / 64 * 64, frame[i].size = 8;
            if (n > 3 && round % 7 == 0) { /* a rep movsq of 5 elements */
                frame[n - 3] = record(0x10008, 8, MT_TRACE_REP_SOURCE);
                frame[n - 2] = record(0x10800, 8, MT_TRACE_REP_DEST);
                frame[n - 1] = record(5, 3, MT_TRACE_REP_COUNT);
            }
            for (int j = 0; j < 2; j++)
                mt_trace_feed_records(feeds[j], 1 + round % 3, frame, n);
        }
        bool same = !memcmp(mt_trace_feed_counts_of(feeds[0]), mt_trace_feed_counts_of(feeds[1]),
                            sizeof(mt_trace_feed_counts));
        for (int j = 0; j < 2; j++)
            mt_sim_finish(sims[j]);
        unsigned d1 = machines[k][4] && !strcmp(machines[k][4], "I1"); /* no fetches to I1 */
        same = same && mt_sim_level(sims[0], d1)->misses && same_cpus(sims[0], sims[1]) &&
               (mt_sim_cpus(sims[0]) == 1 || mt_sim_cpu(sims[0], 0)->invalidations_sent);
        same = same && same_counts(sims[0], sims[1], 8);
        CHECK(same, "records fed in a batch (D1 %s, L2 %s, %s=%s%s%s%s%s): the full simulator's "
                    "counts per level, kind, code object and CPU (D1 %llu refs, %llu misses; "
                    "misses-only %llu, %llu)",
              machines[k][0], machines[k][1], machines[k][2] ? machines[k][2] : "straddle",
              machines[k][3] ? machines[k][3] : "access", machines[k][4] ? ", " : "",
              machines[k][4] ? machines[k][4] : "", machines[k][4] ? "=" : "",
              machines[k][5] ? machines[k][5] : "",
              (unsigned long long)mt_sim_level(sims[0], d1)->refs,
              (unsigned long long)mt_sim_level(sims[0], d1)->misses,
              (unsigned long long)mt_sim_level(sims[1], d1)->refs,
              (unsigned long long)mt_sim_level(sims[1], d1)->misses);
        for (int j = 0; j < 2; j++) {
            mt_trace_feed_free(feeds[j]);
            mt_sim_free(sims[j]);
        }
    }
}

/* The misses-only simulator: code tallies by id, ids far beyond the direct
 * table (a damaged record's) included, as the full simulator's; a flush;
 * the machines it refuses.  Hand counts: a 1-line D1, so every change of
 * line misses: 0x0 (miss), 0x8 (hit), 0x40 (miss), 0x0 (miss), flush, 0x0
 * (miss). */
static void test_misses_only(void)
{
    mt_sim_machine m = machine("64,1,64", NULL, NULL);
    mt_error err;
    mt_sim *sims[2] = {mt_sim_new(&m), mt_sim_new_misses_only(&m, &err)};
    uint32_t far = 0xfffffff0u;
    for (int k = 0; k < 2; k++) {
        mt_sim *s = sims[k];
        mt_sim_access(s, 0x0, 8, MT_SIM_READ, far, 1, 0);
        mt_sim_access(s, 0x8, 8, MT_SIM_WRITE, 3, 1, 0);
        mt_sim_access(s, 0x40, 8, MT_SIM_READ, far, 2, 0);
        mt_sim_access(s, 0x0, 8, MT_SIM_READ, 3, 1, 0);
        mt_sim_flush(s);
        mt_sim_access(s, 0x0, 8, MT_SIM_WRITE, 70000, 1, 0);
        mt_sim_finish(s);
        size_t n;
        const mt_sim_code_tally *t = mt_sim_code_tallies(s, &n);
        const mt_sim_level_stats *d = d1_of(s);
        CHECK(n == 3 && t[0].code == 3 && t[0].refs == 2 && t[0].misses[0] == 1 &&
                  t[1].code == 70000 && t[1].refs == 1 && t[1].misses[0] == 1 &&
                  t[2].code == far && t[2].refs == 2 && t[2].misses[0] == 2 && d->refs == 5 &&
                  d->misses == 4 && d->write_misses == 1 && d->read_misses == 3,
              "%s: code tallies 3 (2 refs, 1 miss), 70000 (1, 1), 0xfffffff0 (2, 2); D1 5 "
              "references, 4 misses, 1 of them a write",
              k ? "misses-only" : "full");
        CHECK(mt_sim_is_misses_only(s) == (k == 1), "mt_sim_is_misses_only says which");
    }
    size_t n;
    mt_sim_pairs(sims[1], &n);
    CHECK(n == 0, "misses-only: no code x data pairs");
    mt_sim_free(sims[0]);
    mt_sim_free(sims[1]);
    const char *refused[][2] = {{"prefetch", "next-line"}, {"replacement", "plru"},
                                {"replacement", "random"}};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        mt_sim_machine r = machine("4K,4,64", NULL, NULL);
        mt_sim_machine_set(&r, refused[i][0], refused[i][1], &err);
        CHECK(!mt_sim_new_misses_only(&r, &err) && strstr(err.msg, "D1: "),
              "misses-only refuses %s=%s (%s)", refused[i][0], refused[i][1], err.msg);
    }
    mt_sim_machine r = machine("4K,4,64", "64K,8,64", NULL);
    mt_sim_machine_set(&r, "inclusion", "inclusive", &err);
    CHECK(!mt_sim_new_misses_only(&r, &err) && strstr(err.msg, "L2: "),
          "misses-only refuses an inclusive L2 (%s)", err.msg);
    r = machine("4K,4,64", "64K,8,64", NULL);
    mt_sim_machine_set(&r, "cpus", "2", &err);
    mt_sim_machine_set(&r, "nodes", "2", &err);
    CHECK(!mt_sim_new_misses_only(&r, &err) && strstr(err.msg, "nodes = 2"),
          "misses-only refuses nodes = 2 (%s)", err.msg);
    r = machine("4K,4,64", "64K,8,64", NULL);
    mt_sim_machine_set(&r, "cpus", "2", &err);
    mt_sim_machine_set(&r, "straddle", "line", &err);
    CHECK(!mt_sim_new_misses_only(&r, &err) && strstr(err.msg, "straddle"),
          "misses-only with cpus = 2 refuses what the processors do (%s)", err.msg);
}

/* The data TLB (sim.h, "the data TLB"): per pair and per level, fetches
 * not translated, each CPU its own TLB, none when sampled or misses-only. */
static void test_tlb(void)
{
    mt_sim_machine m = machine("4K,4,64", NULL, NULL);
    mt_error err;
    CHECK(mt_sim_machine_set(&m, "TLB1", "2,2", &err) == 0 &&
              mt_sim_machine_set(&m, "TLB2", "4,4", &err) == 0 && m.ntlb == 2,
          "TLB1 and TLB2 set");
    mt_sim *s = mt_sim_new(&m);
    /* pages 0, 1 by code 1 on object 7; page 2 by code 2 on object 8 (TLB1
     * drops page 0); page 0 by code 1 again: TLB1 misses, TLB2 holds it;
     * a fetch of page 9 translates nothing. */
    mt_sim_access(s, 0x0000, 8, MT_SIM_READ, 1, 7, 0);
    mt_sim_access(s, 0x1000, 8, MT_SIM_WRITE, 1, 7, 0);
    mt_sim_access(s, 0x2000, 8, MT_SIM_READ, 2, 8, 0);
    mt_sim_access(s, 0x0008, 8, MT_SIM_READ, 1, 7, 0);
    mt_sim_access(s, 0x9000, 4, MT_SIM_IFETCH, 1, 0, 0);
    mt_sim_finish(s);
    size_t n;
    const mt_sim_pair *p = mt_sim_pairs(s, &n);
    CHECK(mt_sim_tlb_count(s) == 2 && mt_sim_tlb(s, 0)->refs == 4 &&
              mt_sim_tlb(s, 0)->misses == 4 && mt_sim_tlb(s, 1)->refs == 4 &&
              mt_sim_tlb(s, 1)->misses == 3 && mt_sim_tlb_page(s) == 4096,
          "TLB1 4 translations, 4 misses; TLB2 4, 3 (walks)");
    CHECK(n == 3 && p[1].code == 1 && p[1].data == 7 && p[1].tlb_misses[0] == 3 &&
              p[1].tlb_misses[1] == 2 && p[2].code == 2 && p[2].tlb_misses[0] == 1 &&
              p[2].tlb_misses[1] == 1 && p[0].tlb_misses[0] == 0,
          "per pair: (1, 7) 3 TLB1 misses and 2 walks, (2, 8) 1 and 1, the fetch's none");
    mt_sim_free(s);
    /* Two CPUs: threads 0 and 1 each translate page 0 once: a walk each. */
    mt_sim_machine_set(&m, "cpus", "2", &err);
    mt_sim_machine_set(&m, "L2", "64K,8,64", &err);
    s = mt_sim_new(&m);
    for (uint32_t t = 0; t < 2; t++) {
        mt_sim_set_thread(s, t);
        mt_sim_access(s, 0x0, 8, MT_SIM_READ, 1, 7, 0);
        mt_sim_access(s, 0x8, 8, MT_SIM_READ, 1, 7, 0);
    }
    mt_sim_finish(s);
    p = mt_sim_pairs(s, &n);
    CHECK(mt_sim_tlb(s, 1)->refs == 2 && mt_sim_tlb(s, 1)->misses == 2 && mt_sim_tlb(s, 0)->refs == 4 &&
              n == 1 && p[0].tlb_misses[1] == 2,
          "two CPUs: a TLB each (2 walks, summed in the level and the pair)");
    mt_sim_free(s);
    mt_sim_machine one = machine("4K,4,64", NULL, NULL);
    mt_sim_machine_set(&one, "TLB1", "4,4", &err);
    s = mt_sim_new_misses_only(&one, &err);
    CHECK(s && mt_sim_tlb_count(s) == 0, "the misses-only simulator simulates no TLB");
    mt_sim_free(s);
    s = mt_sim_new(&one);
    mt_sim_sample smp;
    mt_sim_sample_parse(&smp, MT_SIM_SAMPLE_TIME, "1/2", &err);
    mt_sim_set_sample(s, &smp);
    CHECK(mt_sim_tlb_count(s) == 0, "a sampled simulator simulates no TLB");
    mt_sim_free(s);
    CHECK(mt_sim_machine_set(&one, "TLB1", "6,4", &err) != 0 && strstr(err.msg, "TLB1: ") &&
              mt_sim_machine_set(&one, "tlb_page", "1K", &err) != 0 &&
              strstr(err.msg, "tlb_page: ") && mt_sim_machine_set(&one, "TLB1", "none", &err) == 0 &&
              one.ntlb == 0,
          "bad TLB settings refused, naming the key; 'none' drops the TLB");
}

/* timer.h's filter, written plainly (the runtime's is branch-free): a
 * reference within one line whose line is the last its partition (line
 * modulo `parts`) saw in the frame is left out and counted, one HITS
 * record per code object's run; a reference across lines forgets its two
 * partitions, a rep or gather record all of them. */
static uint32_t filter_plainly(const mt_trace_record *in, uint32_t n, mt_trace_record *out,
                               uint32_t parts)
{
    uint64_t last[64] = {0}, counted[3] = {0, 0, 0};
    uint32_t k = 0, code = 0;
    for (uint32_t i = 0; i <= n; i++) {
        const mt_trace_record *r = &in[i < n ? i : 0];
        bool plain = i < n && r->kind <= MT_TRACE_MODIFY && r->size;
        uint64_t first = r->addr / 64, end = (r->addr + r->size - 1) / 64;
        if (i == n || (plain && first == end && r->code != code)) {
            if (counted[0] + counted[1] + counted[2])
                out[k++] = (mt_trace_record){.addr = counted[0] | counted[1] << 21 |
                                                     counted[2] << 42,
                                             .code = code, .kind = MT_TRACE_HITS};
            memset(counted, 0, sizeof counted);
            code = r->code;
        }
        if (i == n)
            break;
        if (plain && first == end) {
            if (last[first % parts] == first + 1) {
                counted[r->kind]++;
                continue;
            }
            last[first % parts] = first + 1;
        } else if (plain) {
            last[first % parts] = last[end % parts] = 0;
        } else if (r->kind < MT_TRACE_LOAD_BIAS) {
            memset(last, 0, sizeof last);
        }
        out[k++] = *r;
    }
    return k;
}

/* The consumer's side of the filter: frames of one thread fed whole and
 * fed filtered give the misses-only simulator the same counts per level,
 * kind and code object, and the feed the same records, reads, writes and
 * modifies; when mtool may ask for the filter; a HITS record the rule does
 * not hold for is damaged; one from a frame another thread interrupted is
 * counted apart. */
static void test_feed_hits(void)
{
    const char *machines[][2] = {{"1K,4,64", "4K,8,64"}, {"8K,2,64", "64K,16,64"},
                                 {"2K,16,64", "3K,12,64"}};
    for (size_t k = 0; k < sizeof machines / sizeof machines[0]; k++) {
        mt_sim_machine m = machine(machines[k][0], machines[k][1], NULL);
        mt_error err;
        mt_sim *sims[3] = {mt_sim_new(&m), mt_sim_new_misses_only(&m, &err),
                           mt_sim_new_misses_only(&m, &err)};
        unsigned shift = 0;
        uint32_t sets = 0;
        CHECK(mt_sim_program_filter(sims[1], &shift, &sets) && shift == 6 &&
                  sets == m.d1.size / 64 / m.d1.ways && !mt_sim_program_filter(sims[0], &shift, &sets),
              "filter: the misses-only simulator of D1 %s asks for it (lines of 2^%u bytes, "
              "%u sets); the full one does not", machines[k][0], shift, sets);
        uint32_t parts = sets < MT_TRACE_FILTER_LINES ? sets : MT_TRACE_FILTER_LINES;
        mt_trace_feed *feeds[3];
        for (int j = 0; j < 3; j++)
            feeds[j] = mt_trace_feed_new(sims[j]);
        uint64_t rng = 2463534242ull, hits = 0;
        mt_trace_record frame[1401], filtered[1401];
        for (int round = 0; round < 2000; round++) {
            uint32_t n = 1 + (uint32_t)(xorshift(&rng) % (round % 37 ? 64 : 1400));
            frame[0] = record(round, 0, MT_TRACE_STAMP);
            for (uint32_t i = 1; i < n; i++) {
                frame[i] = random_record(&rng);
                if (i % 3 && frame[i].size && frame[i].kind <= MT_TRACE_MODIFY) /* one line */
                    frame[i].addr = 0x10000 + (frame[i].addr - 0x10000) / 8 * 8, frame[i].size = 8;
            }
            if (n > 4 && round % 5 == 0) { /* a rep movsq of 5 elements */
                frame[n - 3] = record(0x10008, 8, MT_TRACE_REP_SOURCE);
                frame[n - 2] = record(0x10800, 8, MT_TRACE_REP_DEST);
                frame[n - 1] = record(5, 3, MT_TRACE_REP_COUNT);
            }
            uint32_t kept = filter_plainly(frame, n, filtered, parts);
            mt_trace_feed_records(feeds[0], 1, frame, n);
            mt_trace_feed_records(feeds[1], 1, frame, n);
            mt_trace_feed_records(feeds[2], 1, filtered, kept);
            hits += n - kept;
        }
        const mt_trace_feed_counts *a = mt_trace_feed_counts_of(feeds[1]),
                                   *b = mt_trace_feed_counts_of(feeds[2]);
        bool same = a->records == b->records && a->reads == b->reads &&
                    a->writes == b->writes && a->modifies == b->modifies &&
                    a->damaged == b->damaged && b->hits > hits / 2 && !b->hits_interleaved;
        for (int j = 0; j < 3; j++)
            mt_sim_finish(sims[j]);
        same = same && same_counts(sims[0], sims[1], 8) && same_counts(sims[0], sims[2], 8);
        CHECK(same, "filter: frames fed filtered (D1 %s, L2 %s; %llu of %llu references counted "
                    "in HITS records): the counts of the frames fed whole, per level, kind and "
                    "code object (D1 %llu misses; filtered %llu)",
              machines[k][0], machines[k][1], (unsigned long long)b->hits,
              (unsigned long long)b->records, (unsigned long long)mt_sim_level(sims[0], 0)->misses,
              (unsigned long long)mt_sim_level(sims[2], 0)->misses);
        for (int j = 0; j < 3; j++) {
            mt_trace_feed_free(feeds[j]);
            mt_sim_free(sims[j]);
        }
    }
    /* The rule's limits: no write-allocate, two CPUs; a HITS record where
     * it does not hold, and one of a frame another thread interrupted. */
    mt_sim_machine m = machine("1K,4,64", "4K,8,64", NULL);
    mt_error err;
    unsigned shift;
    uint32_t sets;
    mt_sim_machine_set(&m, "write_allocate", "no", &err);
    mt_sim *s = mt_sim_new_misses_only(&m, &err);
    CHECK(!mt_sim_program_filter(s, &shift, &sets), "filter: not without write-allocate");
    mt_trace_feed *f = mt_trace_feed_new(s);
    mt_trace_record hit = {.addr = 3 | 1ull << 21, .code = 1, .kind = MT_TRACE_HITS};
    mt_trace_feed_records(f, 1, &hit, 1);
    CHECK(mt_trace_feed_counts_of(f)->damaged == 1 && !mt_trace_feed_counts_of(f)->hits,
          "filter: a HITS record where the rule does not hold is damaged");
    mt_trace_feed_free(f);
    mt_sim_free(s);
    m = machine("1K,4,64", "4K,8,64", NULL);
    mt_sim_machine_set(&m, "cpus", "2", &err);
    s = mt_sim_new_misses_only(&m, &err);
    CHECK(!mt_sim_program_filter(s, &shift, &sets), "filter: not on two CPUs (coherence)");
    mt_sim_free(s);
    m = machine("1K,4,64", "4K,8,64", NULL);
    s = mt_sim_new_misses_only(&m, &err);
    f = mt_trace_feed_new(s);
    mt_trace_record first[2] = {record(1, 0, MT_TRACE_STAMP), record(0x10000, 8, MT_TRACE_READ)},
                    other = record(0x10040, 8, MT_TRACE_WRITE);
    mt_trace_feed_records(f, 1, first, 2);
    mt_trace_feed_records(f, 1, &hit, 1);
    mt_trace_feed_records(f, 2, &other, 1);
    mt_trace_feed_records(f, 1, &hit, 1);
    const mt_trace_feed_counts *c = mt_trace_feed_counts_of(f);
    CHECK(c->hits == 8 && c->hits_interleaved == 4 && c->records == 11 && c->reads == 7 &&
              c->writes == 3 && !c->damaged,
          "filter: HITS counted as references (%llu), those after another thread's apart (%llu)",
          (unsigned long long)c->hits, (unsigned long long)c->hits_interleaved);
    mt_trace_feed_free(f);
    mt_sim_free(s);
}

int main(void)
{
    test_cold();
    test_capacity();
    test_conflict();
    test_replacement_lru_plru();
    test_plru_not_power_of_two();
    test_replacement_random();
    test_write_policies();
    test_inclusive();
    test_exclusive();
    test_straddle();
    test_prefetch();
    test_prefetch_stride();
    test_fetches();
    test_tallies();
    test_spatial_quarter();
    test_machine();
    test_traces();
    test_damaged_traces();
    test_vector_feed();
    test_sample_sets();
    test_sample_time();
    test_misses_only();
    test_feed_batch();
    test_feed_hits();
    test_tlb();
    return unit_finish();
}
