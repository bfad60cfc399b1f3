/* sim/stall.c — the stall estimate (docs/SIMULATOR.md, "The stall
 * estimate"): what the simulated misses of an m-object cost at the
 * latencies `mtool calibrate` measured, set beside what pass 2 measured.
 *
 * A reference that level k served (it missed every level above k) costs
 * latency(k) - latency(L1) cycles more than the L1 hit the cost model
 * predicted it at: with m_i misses at simulated level i, the serial stall
 * is sum_i m_i * (latency(i + 1) - latency(i)), the level below the last
 * being memory.  Misses overlap when the core can issue the next before the
 * last has come back, and a stream's lines come before they are asked for:
 * the estimate charges the share of misses that hardware sees coming what a
 * line costs in a walk in address order (calibrate's streaming cost: the
 * same sum with stream(i) for latency(i), each step at most the latency's),
 * and keeps the rest serial; a line such a stream writes costs twice (in,
 * and out again as a writeback).  Which misses those are is judged on the
 * stream of references (per code object: a reference to a line other than the code
 * object's previous one, in a 4 KiB page where that code object went to a
 * new line among its last STREAM_PAGES such references, is "regular": the
 * hardware prefetchers work within a page, and a walk within a page does
 * not wait for a pointer it loads; a pointer chase over a large set lands
 * in a new page nearly every time).  The irregular misses of a loop that
 * chases no pointer (mt_chasing_loops) are independent: what L3 and memory
 * add is overlapped by the memory-level parallelism, what L2 adds stays
 * serial.  It stands in for what the TLB's walks leave out: the column walk
 * of matmul_cols crosses a page every second miss, TLB1 misses that TLB2
 * holds (not charged); overlapping it too took matmul_cols's estimate from
 * 0.94 to 0.15 of its overhead on the Xeon family 6 model 207, and from
 * 0.72 to 0.40 on the AMD EPYC Zen 3 family 25 model 1 with the TLB
 * simulated (its matrix within TLB2's reach: 129 walks).  Both ends are
 * reported: the serial sum (no overlap) and every miss overlapped (the
 * less of the streamed sum and the serial sum divided by the memory-level
 * parallelism).
 *
 * The TLB (profile version 6, a simulator with a data TLB): the levels'
 * latencies are measured without page walks (costmodel/latency.c), and
 * every page walk the simulated TLB counts (its last level's misses) adds
 * the calibrated walk cost W: to the serial and streamed sums whole (a
 * hardware prefetcher stops at the page's end, and the first load in the
 * next page waits for its walk), to the estimate whole too, but overlapped
 * like the misses past L2 in a loop that chases no pointer (a core has
 * several walkers).  On the memory sample (AMD EPYC Zen 3, family 25 model
 * 1, loaded: overheads corrected by compute_poly's inflation), walks
 * charged serial everywhere took dispatch_chunks's gather to 6.1 times
 * its overhead and link_nodes's to 1.5; overlapped there, 1.10 and 0.35
 * (before the TLB: 0.59 and 0.21; docs/SIMULATOR.md has the others).
 * A miss in TLB1 that TLB2 holds costs a few cycles and is not charged;
 * nor is an ITLB miss: the simulated ITLB is one level, what its misses go
 * to (a unified STLB on Intel, an L2 ITLB on AMD's Zen) is not modelled and
 * holds most of them, and W is a load's walk, not a fetch's.
 *
 * Why the streaming cost and not the parallelism for regular misses: the
 * prefetchers bring a stream's lines ahead, from memory at the bandwidth's
 * pace, and a chase's random lines miss the TLB besides; on the Xeon family
 * 6 model 207 a 256 MiB chase took 535 cycles a line and 16 chases at once
 * 48, a walk in order ~20, and stream_triad's estimate by the parallelism
 * was 1.9 to 5.6 times its measured overhead. */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Pages remembered per code object: a few streams (matrix rows, arrays of
 * a triad) each advancing within its page. */
#define STREAM_PAGES 16
#define PAGE_SHIFT 12
#define LINE_SHIFT 6

typedef struct {
    uint64_t last_line;
    uint64_t pages[STREAM_PAGES];
    unsigned next;
    uint64_t new_lines, regular, written;
    bool independent; /* a loop that chases no pointer: its misses overlap */
} code_stream;

struct mt_stall_streams {
    code_stream *codes;
    uint32_t ncodes;
};

mt_stall_streams *mt_stall_streams_new(uint32_t ncodes, const bool *independent)
{
    mt_stall_streams *st = mt_xcalloc(1, sizeof *st);
    st->ncodes = ncodes + 1;
    st->codes = mt_xcalloc(st->ncodes, sizeof *st->codes);
    for (uint32_t c = 0; c < st->ncodes; c++) {
        st->codes[c].independent = independent && independent[c];
        st->codes[c].last_line = UINT64_MAX;
        for (int k = 0; k < STREAM_PAGES; k++)
            st->codes[c].pages[k] = UINT64_MAX;
    }
    return st;
}

void mt_stall_streams_free(mt_stall_streams *st)
{
    if (!st)
        return;
    free(st->codes);
    free(st);
}

static void stream_reference(code_stream *s, uint64_t addr, bool write)
{
    uint64_t line = addr >> LINE_SHIFT, page = addr >> PAGE_SHIFT;
    if (line == s->last_line)
        return;
    s->last_line = line;
    s->new_lines++;
    s->written += write;
    for (int k = 0; k < STREAM_PAGES; k++)
        if (s->pages[k] == page) {
            s->regular++;
            return;
        }
    s->pages[s->next] = page;
    s->next = (s->next + 1) % STREAM_PAGES;
}

void mt_stall_streams_add(mt_stall_streams *st, const mt_trace_record *r, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        if (r[i].kind != MT_TRACE_READ && r[i].kind != MT_TRACE_WRITE &&
            r[i].kind != MT_TRACE_MODIFY)
            continue; /* rep operands: a string's elements are regular by nature */
        uint32_t c = r[i].code < st->ncodes ? r[i].code : 0;
        stream_reference(&st->codes[c], r[i].addr, r[i].kind != MT_TRACE_READ);
    }
}

/* ---- latencies onto the simulated levels ---- */

/* The profile's level (MT_MEM_* index) of a simulated level; -1 for I1. */
static int profile_level(const char *name)
{
    static const char *const names[] = {"D1", "L2", "L3", "L4"};
    for (int k = 0; k < (int)MT_ARRAY_LEN(names); k++)
        if (!strcmp(name, names[k]))
            return k;
    return -1;
}

int mt_stall_latencies_of(const mt_sim *s, const mt_machine *m, mt_stall_latencies *out,
                          mt_error *err)
{
    memset(out, 0, sizeof *out);
    unsigned n = mt_sim_level_count(s);
    for (unsigned i = 0; i <= n; i++) {
        int k = i == n ? MT_MEM_MEMORY : profile_level(mt_sim_level(s, i)->desc->name);
        if (k < 0)
            continue; /* I1: instruction fetches, none traced */
        if (!(m->mem_latency[k].cycles > 0)) {
            mt_error_set(err, "the machine profile (%s) has no latency of %s: run 'mtool "
                              "calibrate'", m->source, mt_mem_level_name(k));
            return -1;
        }
        if (!(m->mem_latency[k].stream_cycles > 0)) {
            mt_error_set(err, "the machine profile (%s) has no streaming cost of %s: run 'mtool "
                              "calibrate'", m->source, mt_mem_level_name(k));
            return -1;
        }
        out->cycles[i] = m->mem_latency[k].cycles;
        out->stream[i] = m->mem_latency[k].stream_cycles;
    }
    if (!(m->mem_parallelism >= 1)) {
        mt_error_set(err, "the machine profile (%s) has no memory-level parallelism: run 'mtool "
                          "calibrate'", m->source);
        return -1;
    }
    if (!(m->tlb_walk_cycles > 0)) {
        mt_error_set(err, "the machine profile (%s) has no page-walk cost (its latencies include "
                          "walks): run 'mtool calibrate'", m->source);
        return -1;
    }
    out->parallelism = m->mem_parallelism;
    out->walk = m->tlb_walk_cycles;
    out->walk_level = mt_sim_tlb_count(s);
    return 0;
}

/* ---- per m-object ---- */

/* codes[id] for every code object of o's blocks and of every procedure
 * they call, directly or not. */
static void object_codes(const mt_program *prog, const mt_timed_object *o, bool *codes)
{
    const mt_procedure *p = &prog->procs[o->proc];
    bool *in = mt_xcalloc(p->nblocks + 1, sizeof *in);
    bool *called = mt_xcalloc(prog->nprocs + 1, sizeof *called);
    mt_object_blocks(p, o->loop, o->region, o->region_first, o->region_end, in);
    mt_blocks_callees(prog, o->proc, in, called);
    uint32_t loops = mt_code_object_loops(prog, o->proc);
    for (uint32_t b = 0; b < p->nblocks; b++)
        if (in[b])
            codes[mt_code_object_of_block(prog, o->proc, b, loops)] = true;
    for (uint32_t q = 0; q < prog->nprocs; q++) {
        if (!called[q])
            continue;
        codes[1 + q] = true;
        uint32_t first = mt_code_object_loops(prog, q);
        for (uint32_t l = 0; l < prog->procs[q].nloops; l++)
            codes[first + l] = true;
    }
    free(called);
    free(in);
}

static double share(uint64_t part, uint64_t whole)
{
    return whole ? (double)part / (double)whole : 0;
}

/* The stall of one (code object, data object) pair's misses into out:
 * each miss at level l costs what the level below adds over l, alone or in
 * a stream (never more than alone); the estimate takes the code object's
 * regular share at the streaming cost, a line it writes twice (in,
 * write-allocate, and, the stream being larger than the level it missed,
 * out again as a writeback), and the rest serial, or overlapped
 * `parallelism`-fold when the code object is a loop that chases no
 * pointer (its misses do not wait for each other). */
static void stall_of_pair(const mt_sim_pair *pair, unsigned nlevels, const code_stream *cs,
                          const mt_stall_latencies *lat, mt_stall *out)
{
    double serial = 0, streamed = 0, past_l2 = 0;
    bool first = true; /* the first data level: its misses are served by L2 */
    for (unsigned l = 0; l < nlevels; l++) {
        uint64_t misses = 0;
        for (int c = 0; c < MT_SIM_NCAUSES; c++)
            misses += pair->misses[l][c];
        out->misses[l] += misses;
        if (lat->cycles[l] > 0 && lat->cycles[l + 1] > lat->cycles[l]) {
            double alone = lat->cycles[l + 1] - lat->cycles[l];
            serial += (double)misses * alone;
            past_l2 += first ? 0 : (double)misses * alone;
            streamed += (double)misses * fmin(fmax(0, lat->stream[l + 1] - lat->stream[l]), alone);
        }
        first = first && !(lat->cycles[l] > 0);
    }
    uint64_t walks = lat->walk_level ? pair->tlb_misses[lat->walk_level - 1] : 0;
    double walking = (double)walks * lat->walk;
    out->walks += walks;
    out->walk_cycles += walking;
    out->refs += pair->refs;
    out->serial += serial + walking;
    out->streamed += streamed + walking;
    double regular = cs ? share(cs->regular, cs->new_lines) : 0;
    double written = cs ? share(cs->written, cs->new_lines) : 0;
    bool independent = cs && cs->independent;
    out->independent_refs += independent ? pair->refs : 0;
    double overlapped = independent ? past_l2 * (1 - 1 / lat->parallelism) : 0;
    out->estimate += (serial - overlapped) * (1 - regular) +
                     fmin(serial, streamed * (1 + written)) * regular +
                     (independent ? walking / lat->parallelism : walking);
}

/* The coherence misses of the code objects codes[] marks and their stall:
 * each what the last level adds over an L1 hit (the first level with a
 * latency: D1), alone. */
static void coherence_of_codes(mt_sim *s, const mt_stall_latencies *lat, const bool *codes,
                               uint32_t ncodes, mt_stall *out)
{
    unsigned nlevels = mt_sim_level_count(s), l1 = 0;
    while (l1 < nlevels && !(lat->cycles[l1] > 0))
        l1++;
    double each = l1 < nlevels ? fmax(0, lat->cycles[nlevels - 1] - lat->cycles[l1]) : 0;
    size_t n;
    const mt_sim_coherence_pair *pairs = mt_sim_coherence_pairs(s, &n);
    for (size_t i = 0; i < n; i++)
        if (pairs[i].code < ncodes && codes[pairs[i].code])
            out->coherence_misses += pairs[i].true_sharing + pairs[i].false_sharing;
    out->coherence = (double)out->coherence_misses * each;
}

/* The stall of the code objects codes[] marks. */
static void stall_of_codes(mt_sim *s, const mt_stall_streams *st, const mt_stall_latencies *lat,
                           const bool *codes, uint32_t ncodes, mt_stall *out)
{
    memset(out, 0, sizeof *out);
    size_t np;
    const mt_sim_pair *pairs = mt_sim_pairs(s, &np);
    unsigned nlevels = mt_sim_level_count(s);
    for (size_t i = 0; i < np; i++) {
        uint32_t c = pairs[i].code;
        if (c >= ncodes || !codes[c])
            continue;
        stall_of_pair(&pairs[i], nlevels, st && c < st->ncodes ? &st->codes[c] : NULL, lat, out);
    }
    for (uint32_t c = 0; st && c < ncodes && c < st->ncodes; c++)
        if (codes[c]) {
            out->new_lines += st->codes[c].new_lines;
            out->regular += st->codes[c].regular;
            out->written += st->codes[c].written;
        }
    out->regular_share = share(out->regular, out->new_lines);
    /* every miss overlapped: walks too, P-fold */
    out->lower = fmin(out->streamed - out->walk_cycles * (1 - 1 / lat->parallelism),
                      out->serial / lat->parallelism);
    coherence_of_codes(s, lat, codes, ncodes, out);
}

void mt_stall_of_object(mt_sim *s, const mt_stall_streams *st, const mt_stall_latencies *lat,
                        const mt_program *prog, uint32_t code_base, const mt_timed_object *o,
                        mt_stall *out)
{
    uint32_t ncodes = code_base + mt_code_object_loops(prog, prog->nprocs);
    bool *codes = mt_xcalloc(ncodes + 1, sizeof *codes);
    object_codes(prog, o, codes + code_base);
    stall_of_codes(s, st, lat, codes, ncodes, out);
    free(codes);
}

void mt_stall_outside(mt_sim *s, const mt_stall_streams *st, const mt_stall_latencies *lat,
                      const mt_program *prog, const mt_timed_object *objs, size_t n,
                      mt_stall *out)
{
    uint32_t ncodes = mt_code_object_loops(prog, prog->nprocs);
    bool *inside = mt_xcalloc(ncodes + 1, sizeof *inside);
    for (size_t i = 0; i < n; i++)
        object_codes(prog, &objs[i], inside);
    for (uint32_t c = 0; c < ncodes; c++)
        inside[c] = !inside[c];
    stall_of_codes(s, st, lat, inside, ncodes, out);
    free(inside);
}

void mt_stall_agree(const double *measured_pct, const double *estimate_pct, size_t n,
                    mt_stall_agreement *out)
{
    memset(out, 0, sizeof *out);
    out->ratio_min = out->ratio_max = NAN;
    for (size_t i = 0; i < n; i++) {
        if (measured_pct[i] < -MT_STALL_MODEL_ERROR_PCT)
            continue;
        for (size_t j = i + 1; j < n; j++) {
            double dm = measured_pct[i] - measured_pct[j], de = estimate_pct[i] - estimate_pct[j];
            if (measured_pct[j] < -MT_STALL_MODEL_ERROR_PCT || dm == 0 || de == 0)
                continue;
            out->pairs++;
            out->concordant += (dm > 0) == (de > 0);
        }
        if (measured_pct[i] >= MT_STALL_MEMORY_BOUND_PCT) {
            double ratio = estimate_pct[i] / measured_pct[i];
            out->ratio_min = out->memory_bound ? fmin(out->ratio_min, ratio) : ratio;
            out->ratio_max = out->memory_bound ? fmax(out->ratio_max, ratio) : ratio;
            out->memory_bound++;
        }
    }
}
