/* tests/mempolicy/test_merge_order.c — the merge of the threads' trace
 * frames (sim/trace.c, docs/SIMULATOR.md "Threads"), on frames made up
 * here: three threads at different rates, each frame starting with its
 * STAMP (timer.h: the TSC at its start, the ticks to its sending), sent as
 * a real run sends them (in the order of their sending), the time of every
 * record known to the test.  Asserted on what comes out: by stamps, every
 * record once, each thread's in program order, the times never going
 * back; a frame left in the file (no ticks) placed at its thread's pace;
 * with a window too small to hold a late frame, program order still; by
 * frames, whole frames by their STAMP; by arrival, the arrival order. */
#include <stdlib.h>
#include <string.h>

#include "../../sim/sim.h"
#include "../unit/unit.h"

#define THREADS 3
#define FRAMES 40  /* per thread */
#define RECORDS 9  /* per frame, its STAMP first */

/* A record out of the merge: the address says whose and which it is
 * (thread << 32 | sequence number in the thread, from 1). */
typedef struct {
    int32_t tid;
    uint64_t addr;
} out_record;

typedef struct {
    out_record *r;
    size_t n, cap;
    size_t runs;
} sink_log;

static void sink(void *ctx, int32_t tid, const mt_trace_record *r, uint32_t n)
{
    sink_log *log = ctx;
    log->runs++;
    for (uint32_t i = 0; i < n; i++)
        if (r[i].kind != MT_TRACE_STAMP)
            MT_PUSH(log->r, log->n, log->cap, ((out_record){tid, r[i].addr}));
}

typedef struct {
    int32_t tid;
    uint64_t start, ticks, sent; /* sent = start + ticks */
    mt_trace_record rec[RECORDS];
} made_frame;

/* Frames of thread t: `gap` ticks between records (the time of record k of
 * the thread is its first frame's start + gap x k: the frames follow one
 * another without a pause). */
static void make_frames(made_frame *f, int32_t tid, uint64_t first, uint64_t gap)
{
    uint64_t seq = 1;
    for (int k = 0; k < FRAMES; k++, f++) {
        f->tid = tid;
        f->start = first + (uint64_t)k * (RECORDS - 1) * gap;
        f->ticks = (RECORDS - 1) * gap;
        f->sent = f->start + f->ticks;
        f->rec[0] = (mt_trace_record){.addr = f->start, .code = (uint32_t)f->ticks,
                                      .size = (uint16_t)(f->ticks >> 32), .kind = MT_TRACE_STAMP};
        for (int i = 1; i < RECORDS; i++)
            f->rec[i] = (mt_trace_record){.addr = (uint64_t)tid << 32 | seq++, .size = 8,
                                          .kind = MT_TRACE_READ};
    }
}

static int by_sending(const void *a, const void *b)
{
    const made_frame *x = a, *y = b;
    return x->sent < y->sent ? -1 : x->sent > y->sent;
}

/* The time of a record out, from the thread's rate (the test's own
 * figure): first + gap x (its place in the thread, counting the STAMPs). */
static const uint64_t first_of[THREADS] = {1000, 1003, 1500}, gap_of[THREADS] = {10, 7, 55};

static uint64_t time_of(uint64_t addr)
{
    uint32_t t = (uint32_t)(addr >> 32);
    uint64_t seq = (addr & 0xffffffffu) - 1;  /* from 0 */
    uint64_t place = seq / (RECORDS - 1) * (RECORDS - 1) + seq % (RECORDS - 1) + 1;
    return first_of[t] + gap_of[t] * place;
}

static sink_log merged(mt_trace_order order, uint32_t window, made_frame *f, size_t n)
{
    sink_log log = {0};
    mt_trace_merge *m = mt_trace_merge_new(order, window, sink, &log);
    for (size_t k = 0; k < n; k++)
        mt_trace_merge_frame(m, f[k].tid, f[k].rec, RECORDS);
    mt_trace_merge_drain(m);
    mt_trace_merge_free(m);
    return log;
}

/* Each thread's records once each, in program order. */
static bool program_order(const sink_log *log)
{
    uint64_t next[THREADS] = {1, 1, 1};
    for (size_t i = 0; i < log->n; i++) {
        uint32_t t = (uint32_t)(log->r[i].addr >> 32);
        if (t >= THREADS || log->r[i].tid != (int32_t)t ||
            (log->r[i].addr & 0xffffffffu) != next[t]++)
            return false;
    }
    return log->n == THREADS * FRAMES * (RECORDS - 1);
}

static size_t times_back(const sink_log *log)
{
    size_t back = 0;
    for (size_t i = 1; i < log->n; i++)
        back += time_of(log->r[i].addr) < time_of(log->r[i - 1].addr);
    return back;
}

int main(void)
{
    made_frame *f = calloc(THREADS * FRAMES, sizeof *f);
    for (int t = 0; t < THREADS; t++)
        make_frames(f + t * FRAMES, t, first_of[t], gap_of[t]);
    qsort(f, THREADS * FRAMES, sizeof *f, by_sending);

    sink_log a = merged(MT_TRACE_BY_ARRIVAL, 256 * RECORDS, f, THREADS * FRAMES);
    bool arrival = a.runs == THREADS * FRAMES;
    for (size_t i = 0; arrival && i < a.n; i++)
        arrival = a.r[i].addr == f[i / (RECORDS - 1)].rec[i % (RECORDS - 1) + 1].addr;
    CHECK(arrival, "by arrival: the frames whole, as they came");
    CHECK(times_back(&a) > 0, "by arrival: the times go back (%zu times; the test's frames "
                              "overlap)", times_back(&a));

    sink_log s = merged(MT_TRACE_BY_STAMPS, 256 * RECORDS, f, THREADS * FRAMES);
    CHECK(program_order(&s), "by stamps: every record once, each thread's in program order");
    CHECK(times_back(&s) == 0, "by stamps: the times never go back (%zu do)", times_back(&s));
    CHECK(s.runs > 2 * THREADS * FRAMES, "by stamps: the threads interleaved within frames "
                                         "(%zu runs of %d frames)", s.runs, THREADS * FRAMES);

    /* Thread 2's frames (the slowest) held back past a window of 4
     * frames: the others' later records went out before them. */
    made_frame *late = calloc(THREADS * FRAMES, sizeof *late);
    size_t n = 0;
    for (size_t k = 0; k < THREADS * FRAMES; k++)
        if (f[k].tid != 2)
            late[n++] = f[k];
    for (size_t k = 0; k < THREADS * FRAMES; k++)
        if (f[k].tid == 2)
            late[n++] = f[k];
    sink_log w = merged(MT_TRACE_BY_STAMPS, 4 * RECORDS, late, n);
    CHECK(program_order(&w), "window of 4 frames, a thread's frames late: program order kept");
    CHECK(times_back(&w) > 0, "window of 4 frames, a thread's frames late: they come out late");

    sink_log fr = merged(MT_TRACE_BY_FRAMES, 256 * RECORDS, f, THREADS * FRAMES);
    bool whole = program_order(&fr) && fr.runs == THREADS * FRAMES;
    for (size_t i = RECORDS - 1; whole && i < fr.n; i += RECORDS - 1) {
        uint64_t prev = fr.r[i - 1].addr, here = fr.r[i].addr;
        uint64_t start_prev = time_of(prev) - gap_of[prev >> 32] * (RECORDS - 1);
        uint64_t start_here = time_of(here) - gap_of[here >> 32];
        whole = start_here >= start_prev;
    }
    CHECK(whole, "by frames: whole frames, by their STAMP");

    /* A frame left in the file: its STAMP without ticks, after a sent frame
     * of 101 records (its STAMP too; frames of 64 or more set the pace)
     * over 1000 ticks: its 100 records at 10 ticks each.  Another thread's
     * record 45 ticks after its start goes out after 4 of them. */
    enum { LONG = 101 };
    mt_trace_record one[LONG], two[LONG], other[2];
    for (int i = 0; i < LONG; i++)
        one[i] = two[i] = (mt_trace_record){.addr = (uint64_t)i, .size = 8,
                                            .kind = MT_TRACE_READ};
    one[0] = (mt_trace_record){.addr = 5000, .code = 1000, .kind = MT_TRACE_STAMP};
    two[0] = (mt_trace_record){.addr = 6000, .kind = MT_TRACE_STAMP};
    other[0] = (mt_trace_record){.addr = 6035, .code = 10, .kind = MT_TRACE_STAMP};
    other[1] = (mt_trace_record){.addr = 7ull << 32, .size = 8, .kind = MT_TRACE_READ};
    sink_log l = {0};
    mt_trace_merge *m = mt_trace_merge_new(MT_TRACE_BY_STAMPS, 256, sink, &l);
    mt_trace_merge_frame(m, 0, one, LONG);
    mt_trace_merge_frame(m, 7, other, 2);
    mt_trace_merge_frame(m, 0, two, LONG);
    mt_trace_merge_drain(m);
    mt_trace_merge_free(m);
    size_t at = 0;
    while (at < l.n && l.r[at].tid != 7)
        at++;
    CHECK(at == LONG - 1 + 4 && l.n == 2 * (LONG - 1) + 1,
          "a frame left in the file: at its thread's pace (the other thread's record after "
          "its record %zu of %zu)", at - (LONG - 1), l.n);

    /* Frames lent (mt_trace_merge_lend: records in a trace ring, which the
     * caller reuses as soon as the call returns).  A lone thread's long
     * frame goes out during the call, after the short one it holds; once
     * a second thread has sent a frame, a long one is held like any other,
     * copied: what comes out is what was lent, not what the buffer holds
     * after. */
    enum { LENT = MT_TRACE_SHARED_RECORDS + 2 };
    mt_trace_record *lent = calloc(LENT, sizeof *lent);
    sink_log g = {0};
    m = mt_trace_merge_new(MT_TRACE_BY_STAMPS, 1u << 20, sink, &g);
    uint64_t seq = 1;
    for (int frame = 0; frame < 4; frame++) {
        uint32_t n = frame == 0 ? 3 : LENT; /* a short frame first (an early send) */
        lent[0] = (mt_trace_record){.addr = 100000u * (uint64_t)(frame + 1), .code = 1000,
                                    .kind = MT_TRACE_STAMP};
        for (uint32_t i = 1; i < n; i++)
            lent[i] = (mt_trace_record){.addr = 1ull << 32 | seq++, .size = 8,
                                        .kind = MT_TRACE_READ};
        if (frame == 3) /* a second thread's frame came before this one */
            mt_trace_merge_frame(m, 2, other, 2);
        size_t before = g.n;
        mt_trace_merge_lend(m, 1, lent, n);
        if (frame == 1)
            CHECK(g.n == before + 2 + LENT - 1,
                  "a lone thread's long frame lent: out at once, after its held short frame "
                  "(%zu records out, %d expected)", g.n - before, 2 + LENT - 1);
        if (frame == 3)
            CHECK(g.n == before, "a long frame lent after a second thread's: held (%zu out)",
                  g.n - before);
        memset(lent, 0xff, LENT * sizeof *lent); /* the ring's next frame */
    }
    mt_trace_merge_drain(m);
    mt_trace_merge_free(m);
    bool in_order = g.n == seq - 1 + 1;
    for (size_t i = 0, k = 1; i < g.n && in_order; i++)
        if (g.r[i].tid == 1)
            in_order = g.r[i].addr == (1ull << 32 | k++);
    CHECK(in_order, "frames lent: every record once, in program order, as lent (%zu out)", g.n);
    free(lent);
    free(g.r);

    free(a.r);
    free(s.r);
    free(w.r);
    free(fr.r);
    free(l.r);
    free(late);
    free(f);
    return unit_finish();
}
