/* correlate/regions.c — large loop-free procedures partitioned into several
 * regions, each timed on its own (the paper's conclusion: its worst case,
 * fpppp, lost most of its time in one 700-line loop-free procedure, which
 * "the whole procedure" does not localize).
 *
 * A selected procedure that is worth timing (not covered by its loops, run
 * in pass 1) and mostly loop-free (at least half of its own memory
 * operations outside loops) is cut at cut points (analyzer/regions.c:
 * blocks every path from the entry to a return passes through, on no
 * cycle).  The stretch between two consecutive cut points is a segment;
 * its pass-1 figures are its blocks' count x cycles and memory operations,
 * plus its calls' counts x the callees' averages per call.  Regions are
 * runs of consecutive segments: as many as possible up to max_regions,
 * each timable by the selection's rule (predicted cycles and memory
 * operations per entry of its first cut point far above a timer's), with
 * the largest predicted time as small as possible, so regions take nearly
 * equal shares of the procedure's time.  Each region is then judged like
 * any m-object (estimability by the callee rules of select.c, timability
 * on its exact figures); a partition is kept when at least two of its
 * regions are timed, else fewer regions are tried.  Regions are nested in
 * their procedure (which stays timed when it was): its row gives the
 * total, theirs say where in it the time goes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The DP runs over at most this many groups of consecutive segments (a
 * procedure with more cut points has them grouped by equal shares of its
 * predicted cycles first). */
#define MAX_GROUPS 256

uint32_t mt_partition_segments(const double *cycles, const double *memops,
                               const double *entries, uint32_t nsegments, double min_cycles,
                               double min_memops, uint32_t max_regions, uint32_t *starts)
{
    if (nsegments < 2 || max_regions < 2)
        return 0;
    uint32_t K = nsegments;
    double *pc = mt_xcalloc(K + 1, sizeof *pc), *pm = mt_xcalloc(K + 1, sizeof *pm);
    for (uint32_t k = 0; k < K; k++) {
        pc[k + 1] = pc[k] + cycles[k];
        pm[k + 1] = pm[k] + memops[k];
    }
    /* Group boundaries: segment indices bound[0] = 0 < ... < bound[G] = K. */
    uint32_t *bound = mt_xcalloc((K < MAX_GROUPS ? K : MAX_GROUPS) + 2, sizeof *bound);
    uint32_t G = 0;
    for (uint32_t k = 1; k < K; k++) {
        double share = K <= MAX_GROUPS ? 0 : pc[K] * (G + 1) / MAX_GROUPS;
        if (K <= MAX_GROUPS || (pc[k] >= share && G + 1 < MAX_GROUPS))
            bound[++G] = k;
    }
    bound[++G] = K;
    uint32_t nmax = max_regions < G ? max_regions : G;
    /* best[j][g]: the least largest region over partitions of groups [0, g)
     * into j timable regions (INFINITY: none); from[j][g]: its last start. */
    size_t w = (size_t)G + 1;
    double *best = mt_xmalloc((nmax + 1) * w * sizeof *best);
    uint32_t *from = mt_xmalloc((nmax + 1) * w * sizeof *from);
    for (size_t i = 0; i < (nmax + 1) * w; i++) {
        best[i] = INFINITY;
        from[i] = MT_NONE;
    }
    best[0] = 0;
    for (uint32_t j = 1; j <= nmax; j++)
        for (uint32_t g = j; g <= G; g++)
            for (uint32_t h = j - 1; h < g; h++) {
                double prev = best[(j - 1) * w + h];
                if (!isfinite(prev))
                    continue;
                double e = entries[bound[h]], c = pc[bound[g]] - pc[bound[h]],
                       m = pm[bound[g]] - pm[bound[h]];
                if (!(e > 0) || c < min_cycles * e || m < min_memops * e)
                    continue;
                double worst = prev > c ? prev : c;
                if (worst < best[j * w + g]) {
                    best[j * w + g] = worst;
                    from[j * w + g] = h;
                }
            }
    uint32_t n = 0;
    for (uint32_t j = nmax; j >= 2 && !n; j--)
        if (isfinite(best[j * w + G]))
            n = j;
    for (uint32_t j = n, g = G; j > 0; j--) {
        g = from[j * w + g];
        starts[j - 1] = bound[g];
    }
    free(best);
    free(from);
    free(bound);
    free(pc);
    free(pm);
    return n;
}

bool *mt_candidate_blocks(const mt_program *prog, const mt_candidate *c)
{
    const mt_procedure *p = &prog->procs[c->proc];
    bool *in = mt_xcalloc(p->nblocks + 1, sizeof *in);
    if (c->region.n) {
        mt_region_blocks(p, c->region.first, c->region.end, in);
    } else if (c->loop != MT_NONE) {
        for (uint32_t k = 0; k < p->loops[c->loop].nblocks; k++)
            in[p->loops[c->loop].blocks[k]] = true;
    } else {
        for (uint32_t b = 0; b < p->nblocks; b++)
            in[b] = true;
    }
    return in;
}

static uint64_t count_of(const mt_region_context *ctx, uint32_t p, uint32_t b)
{
    return ctx->counts[ctx->costs->first[p] + b];
}

/* Worth partitioning: run, not left to its loops, and at least half of its
 * own memory operations outside loops. */
static bool mostly_loop_free(const mt_region_context *ctx, const mt_candidate *pc)
{
    if (pc->status == MT_CAND_COVERED || pc->status == MT_CAND_NOT_RUN || pc->entries == 0)
        return false;
    const mt_procedure *p = &ctx->prog->procs[pc->proc];
    uint64_t all = 0, outside = 0;
    for (uint32_t b = 0; b < p->nblocks; b++) {
        uint64_t m = count_of(ctx, pc->proc, b) * (p->blocks[b].mem_reads + p->blocks[b].mem_writes);
        all += m;
        outside += p->blocks[b].loop == MT_NONE ? m : 0;
    }
    return all > 0 && 2 * outside >= all;
}

/* Pass-1 figures of the segments between consecutive cut points. */
static void segment_figures(const mt_region_context *ctx, uint32_t p, const uint32_t *cuts,
                            uint32_t ncuts, double *cycles, double *memops, double *entries)
{
    const mt_procedure *proc = &ctx->prog->procs[p];
    uint32_t *seg = mt_xmalloc(((size_t)proc->nblocks + 1) * sizeof *seg);
    mt_region_of_blocks(proc, cuts, ncuts, seg);
    for (uint32_t b = 0; b < proc->nblocks; b++) {
        if (seg[b] == MT_NONE)
            continue;
        uint64_t i = ctx->costs->first[p] + b;
        cycles[seg[b]] += (double)ctx->counts[i] * ctx->costs->costs[i].cycles;
        memops[seg[b]] += (double)ctx->counts[i] * (proc->blocks[b].mem_reads + proc->blocks[b].mem_writes);
    }
    for (uint32_t k = 0; k < proc->ncalls; k++) {
        const mt_call_site *c = &proc->calls[k];
        if (c->block == MT_NONE || c->callee == MT_NONE || c->callee == p ||
            seg[c->block] == MT_NONE || ctx->prog->procs[c->callee].is_plt)
            continue;
        double n = mt_site_calls(c, count_of(ctx, p, c->block));
        cycles[seg[c->block]] += n * ctx->cycles_per_call(ctx->sel, c->callee);
        memops[seg[c->block]] += n * ctx->memops_per_call(ctx->sel, c->callee);
    }
    for (uint32_t k = 0; k < ncuts; k++)
        entries[k] = (double)count_of(ctx, p, cuts[k]);
    free(seg);
}

/* Region k of n: from cut point first up to end; judged. */
static mt_candidate region_candidate(const mt_region_context *ctx, uint32_t p, uint32_t first,
                                     uint32_t end, uint32_t k, uint32_t n)
{
    const mt_procedure *proc = &ctx->prog->procs[p];
    mt_candidate c = {.proc = p, .loop = MT_NONE, .entries = count_of(ctx, p, first),
                      .region = {.first = first, .end = end, .k = (uint16_t)k, .n = (uint16_t)n}};
    bool *in = mt_candidate_blocks(ctx->prog, &c);
    for (uint32_t b = 0; b < proc->nblocks; b++)
        if (in[b]) {
            uint64_t i = ctx->costs->first[p] + b, cnt = ctx->counts[i];
            c.insns += cnt * proc->blocks[b].ninsns;
            c.memops += cnt * (proc->blocks[b].mem_reads + proc->blocks[b].mem_writes);
            c.predicted += (double)cnt * ctx->costs->costs[i].cycles;
        }
    for (uint32_t j = 0; j < proc->ncalls; j++) {
        const mt_call_site *cs = &proc->calls[j];
        if (cs->block != MT_NONE && in[cs->block] && cs->callee != MT_NONE && cs->callee != p &&
            !ctx->prog->procs[cs->callee].is_plt)
            c.predicted += mt_site_calls(cs, count_of(ctx, p, cs->block)) *
                           ctx->cycles_per_call(ctx->sel, cs->callee);
    }
    c.memops += ctx->callee_memops(ctx->sel, p, in);
    free(in);
    c.status = ctx->judge(ctx->sel, &c);
    return c;
}

void mt_select_regions(const mt_region_context *ctx, size_t at, mt_candidate **cands, size_t *n,
                       size_t *cap)
{
    const mt_candidate pc = (*cands)[at];
    if (ctx->o->max_regions < 2 || !mostly_loop_free(ctx, &pc))
        return;
    uint32_t p = pc.proc, *cuts;
    uint32_t ncuts = mt_region_cuts(ctx->prog, p, &cuts);
    if (ncuts < 2) {
        free(cuts);
        return;
    }
    double *cycles = mt_xcalloc(ncuts, sizeof *cycles), *memops = mt_xcalloc(ncuts, sizeof *memops);
    double *entries = mt_xcalloc(ncuts, sizeof *entries);
    segment_figures(ctx, p, cuts, ncuts, cycles, memops, entries);
    uint32_t *starts = mt_xcalloc(ncuts, sizeof *starts);
    mt_candidate *regions = mt_xcalloc(ncuts, sizeof *regions);
    const mt_select_options *o = ctx->o;
    uint32_t limit = (uint32_t)o->max_regions;
    while (limit >= 2) {
        uint32_t nreg = mt_partition_segments(cycles, memops, entries, ncuts,
                                              o->min_cost_ratio * o->timer_cycles,
                                              o->min_memops_ratio * o->timer_memops, limit, starts);
        if (nreg < 2)
            break;
        uint32_t timed = 0;
        for (uint32_t k = 0; k < nreg; k++) {
            uint32_t end = k + 1 < nreg ? cuts[starts[k + 1]] : MT_NONE;
            regions[k] = region_candidate(ctx, p, cuts[starts[k]], end, k + 1, nreg);
            timed += regions[k].status == MT_CAND_TIMED;
        }
        if (timed >= 2) {
            for (uint32_t k = 0; k < nreg; k++)
                MT_PUSH(*cands, *n, *cap, regions[k]);
            break;
        }
        limit = nreg - 1; /* a coarser partition may put what failed with timable code */
    }
    free(regions);
    free(starts);
    free(cycles);
    free(memops);
    free(entries);
    free(cuts);
}
