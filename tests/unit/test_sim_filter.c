/* tests/unit/test_sim_filter.c — the consumer's side of the tracing copy's
 * D1 filter (timer/timer.h, "The D1 filter"; docs/SIMULATOR.md, "Misses
 * only"): FILTERED records, and which simulators may ask for the filter.
 *
 * Oracle: the full simulator fed every reference.  Random frames of
 * several threads (reads, writes, modifies over a few lines of few sets,
 * straddling ones, rep groups) go whole to the full simulator; the same
 * frames go to the misses-only one through a model of the copy's rule,
 * written here from timer.h's description (per thread a table of the line
 * last put in each D1 set, emptied at every frame and after a rep group; a
 * plain reference of at most 64 bytes whose last byte is in the line its
 * first byte's set holds is counted, not sent; any other plain reference
 * puts its first then last byte's line in the table), with the counts
 * handed over at the end as the profile reader does, one FILTERED record
 * per code object and kind.  Both must give the same counts per level,
 * kind and code object, and the same feed counts; the model without its
 * table emptied at a frame, or after a rep group, or without a straddling
 * reference's last line (each tried) fails it. */
#include <string.h>

#include "sim/sim.h"
#include "unit.h"

#define SETS 16   /* D1: 4 KiB, 4 ways, 64-byte lines */
#define CODES 4
#define THREADS 3

static uint64_t next(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* The copy's filter, one table per thread (0: empty; else line + 1). */
typedef struct {
    uint64_t table[THREADS][SETS];
    uint64_t counts[CODES][3];
} copy_filter;

static void table_put(copy_filter *f, int t, uint64_t addr)
{
    f->table[t][(addr >> 6) % SETS] = (addr >> 6) + 1;
}

/* Whether the copy counts record r of thread t instead of sending it. */
static bool filtered(copy_filter *f, int t, const mt_trace_record *r)
{
    if (r->kind == MT_TRACE_REP_COUNT) /* its elements: the table cannot follow */
        memset(f->table[t], 0, sizeof f->table[t]);
    if (r->kind > MT_TRACE_MODIFY)
        return false;
    uint64_t end = r->addr + r->size - 1;
    if (r->size <= 64 && f->table[t][(r->addr >> 6) % SETS] == (end >> 6) + 1) {
        f->counts[r->code][r->kind]++;
        return true;
    }
    if (r->size > 64) {
        memset(f->table[t], 0, sizeof f->table[t]);
        return false;
    }
    table_put(f, t, r->addr);
    table_put(f, t, end);
    return false;
}

/* A random plain reference: half of them in the line of the one before
 * (*line), the others in one of 12 lines of sets 0 and 1 (6 each, for 4
 * ways); a tenth straddle into the next set, one in a hundred is too large
 * for the filter. */
static mt_trace_record random_record(uint64_t *x, uint64_t *line)
{
    uint64_t v = next(x);
    unsigned pick = v % 100;
    if ((v >> 32) % 2)
        *line = (v >> 8) % 6 * SETS + (v >> 12) % 2;
    uint64_t addr = 0x40000 + *line * 64 + (pick < 10 ? 60 : (v >> 16) % 56);
    unsigned kind = pick < 55 ? MT_TRACE_READ : pick < 80 ? MT_TRACE_WRITE : MT_TRACE_MODIFY;
    mt_trace_record r = {.addr = addr, .code = (uint32_t)(v >> 20) % CODES,
                         .size = (uint16_t)(pick < 10 ? 8 : 1 + (v >> 24) % 8),
                         .kind = (uint8_t)kind};
    if (pick == 99)
        r.size = 128;
    return r;
}

/* `n` random records of one instruction stream, a rep movsq of 3 elements
 * among them now and then. */
static uint32_t random_frame(uint64_t *x, mt_trace_record *frame, uint32_t cap)
{
    uint32_t n = 1 + (uint32_t)(next(x) % cap);
    uint64_t line = 0;
    for (uint32_t i = 0; i < n; i++)
        frame[i] = random_record(x, &line);
    if (n > 4 && next(x) % 3 == 0) {
        uint64_t at = 0x40000 + next(x) % 8 * 1024;
        frame[n - 3] = (mt_trace_record){.addr = at, .code = 1, .size = 8, .kind = MT_TRACE_REP_SOURCE};
        frame[n - 2] = (mt_trace_record){.addr = at + 4096, .code = 1, .size = 8,
                                         .kind = MT_TRACE_REP_DEST};
        frame[n - 1] = (mt_trace_record){.addr = 3, .code = 1, .size = 3, .kind = MT_TRACE_REP_COUNT};
    }
    return n;
}

static bool same_counts(mt_sim *a, mt_sim *b, unsigned levels)
{
    bool same = true;
    for (unsigned l = 0; l < levels; l++) {
        const mt_sim_level_stats *x = mt_sim_level(a, l), *y = mt_sim_level(b, l);
        same = same && x->refs == y->refs && x->misses == y->misses && x->reads == y->reads &&
               x->read_misses == y->read_misses && x->writes == y->writes &&
               x->write_misses == y->write_misses;
    }
    size_t na, nb;
    const mt_sim_code_tally *ta = mt_sim_code_tallies(a, &na), *tb = mt_sim_code_tallies(b, &nb);
    same = same && na == nb && na > 0;
    for (size_t i = 0; same && i < na; i++)
        same = ta[i].code == tb[i].code && ta[i].refs == tb[i].refs &&
               ta[i].misses[0] == tb[i].misses[0] && ta[i].misses[1] == tb[i].misses[1];
    return same;
}

static mt_sim_machine machine(const char *write_allocate)
{
    mt_sim_machine m;
    mt_error err;
    mt_sim_machine_init(&m);
    mt_sim_machine_set(&m, "D1", "4096,4,64", &err);
    mt_sim_machine_set(&m, "L2", "16384,4,64", &err);
    if (write_allocate)
        mt_sim_machine_set(&m, "write_allocate", write_allocate, &err);
    return m;
}

static void test_filtered_stream(const char *straddle)
{
    mt_sim_machine m = machine(NULL);
    mt_error err;
    mt_sim_machine_set(&m, "straddle", straddle, &err);
    mt_sim *full = mt_sim_new(&m), *lean = mt_sim_new_misses_only(&m, &err);
    mt_trace_feed *ff = mt_trace_feed_new(full), *fl = mt_trace_feed_new(lean);
    static copy_filter f;
    memset(&f, 0, sizeof f);
    uint64_t x = 0x9e3779b97f4a7c15ull, sent = 0, total = 0;
    mt_trace_record frame[200], kept[200];
    for (int round = 0; round < 4000; round++) {
        int t = (int)(next(&x) % THREADS);
        uint32_t n = random_frame(&x, frame, 200), k = 0;
        memset(f.table[t], 0, sizeof f.table[t]); /* the runtime, at every frame sent */
        for (uint32_t i = 0; i < n; i++)
            if (!filtered(&f, t, &frame[i]))
                kept[k++] = frame[i];
        mt_trace_feed_records(ff, t, frame, n);
        mt_trace_feed_records(fl, t, kept, k);
        sent += k;
        total += n;
    }
    mt_trace_record counts[CODES * 3];
    uint32_t nc = 0;
    for (uint32_t c = 0; c < CODES; c++)
        for (unsigned kind = 0; kind < 3; kind++)
            if (f.counts[c][kind])
                counts[nc++] = (mt_trace_record){.addr = f.counts[c][kind], .code = c,
                                                 .size = (uint16_t)kind, .kind = MT_TRACE_FILTERED};
    mt_trace_feed_records(fl, 0, counts, nc);
    mt_sim_finish(full);
    mt_sim_finish(lean);
    const mt_trace_feed_counts *a = mt_trace_feed_counts_of(ff), *b = mt_trace_feed_counts_of(fl);
    CHECK(same_counts(full, lean, 2) && a->records == b->records && a->reads == b->reads &&
              a->writes == b->writes && a->modifies == b->modifies &&
              a->rep_elements == b->rep_elements && b->filtered == total - sent &&
              sent < total * 3 / 4 && mt_sim_level(full, 0)->misses > total / 10,
          "straddle=%s: %llu of %llu references counted by the model copy, the rest sent: the "
          "full simulator's counts per level, kind and code object (D1 misses %llu, %llu)",
          straddle, (unsigned long long)(total - sent), (unsigned long long)total,
          (unsigned long long)mt_sim_level(full, 0)->misses,
          (unsigned long long)mt_sim_level(lean, 0)->misses);
    mt_trace_feed_free(ff);
    mt_trace_feed_free(fl);
    mt_sim_free(full);
    mt_sim_free(lean);
}

/* A FILTERED record the full simulator cannot take (a hit there changes
 * its stamps, line use...), or of no plain kind: damaged, nothing counted. */
static void test_filtered_refused(void)
{
    mt_sim_machine m = machine(NULL);
    mt_error err;
    mt_sim *full = mt_sim_new(&m), *lean = mt_sim_new_misses_only(&m, &err);
    mt_trace_feed *ff = mt_trace_feed_new(full), *fl = mt_trace_feed_new(lean);
    mt_trace_record r = {.addr = 5, .code = 1, .size = MT_TRACE_READ, .kind = MT_TRACE_FILTERED};
    mt_trace_feed_records(ff, 1, &r, 1);
    r.size = MT_TRACE_REP_SOURCE;
    mt_trace_feed_records(fl, 1, &r, 1);
    r.size = MT_TRACE_MODIFY;
    mt_trace_feed_records(fl, 1, &r, 1);
    mt_sim_finish(full);
    mt_sim_finish(lean);
    const mt_trace_feed_counts *a = mt_trace_feed_counts_of(ff), *b = mt_trace_feed_counts_of(fl);
    CHECK(a->damaged == 1 && a->reads == 0 && mt_sim_level(full, 0)->refs == 0,
          "a FILTERED record to the full simulator: damaged, nothing counted");
    CHECK(b->damaged == 1 && b->reads == 5 && b->writes == 5 && b->modifies == 5 &&
              b->records == 1 + 5 && mt_sim_level(lean, 0)->reads == 5 &&
              mt_sim_level(lean, 0)->writes == 5 && mt_sim_level(lean, 0)->misses == 0,
          "FILTERED records to the misses-only simulator: of a rep kind damaged; 5 modifies "
          "= 5 reads and 5 writes that hit D1");
    mt_trace_feed_free(ff);
    mt_trace_feed_free(fl);
    mt_sim_free(full);
    mt_sim_free(lean);
}

static void test_who_filters(void)
{
    mt_error err;
    mt_sim_machine m = machine(NULL);
    mt_sim *full = mt_sim_new(&m), *lean = mt_sim_new_misses_only(&m, &err);
    uint32_t line = 0, sets = 0;
    CHECK(!mt_sim_trace_filter(full, &line, &sets), "the full simulator asks for no filter");
    CHECK(mt_sim_trace_filter(lean, &line, &sets) && line == 64 && sets == 16,
          "the misses-only one does, with D1's 64-byte lines and 16 sets (got %u, %u)", line, sets);
    mt_sim_free(full);
    mt_sim_free(lean);
    m = machine("no");
    lean = mt_sim_new_misses_only(&m, &err);
    CHECK(!mt_sim_trace_filter(lean, &line, &sets),
          "not without write-allocate (a write miss leaves the set's order alone)");
    mt_sim_free(lean);
    mt_sim_machine_set(&m, "write_allocate", "yes", &err);
    mt_sim_machine_set(&m, "D1", "3072,4,64", &err);
    lean = mt_sim_new_misses_only(&m, &err);
    CHECK(!mt_sim_trace_filter(lean, &line, &sets), "not for D1 sets no power of two");
    mt_sim_free(lean);
}

int main(void)
{
    test_filtered_stream("access");
    test_filtered_stream("line");
    test_filtered_refused();
    test_who_filters();
    return unit_finish();
}
