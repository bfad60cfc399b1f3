/* analyzer/pass1.c — what pass 1's measurements teach the analysis, applied
 * once (mt_refine_with_pass1): the calls through pointers it saw become call
 * edges (mt_add_dynamic_calls), and estimability is decided again with the
 * call sites that ran and the procedures' entries.  Everything after it
 * (the cost model, m-object selection) reads the refined program and
 * changes it no more.  Also the entries of procedures and loops from the
 * same counts (mt_procedure_calls, mt_loop_entries), the one definition
 * every later stage uses. */
#include <math.h>
#include <stdlib.h>

#include "internal.h"

uint64_t *mt_block_offsets(const mt_program *prog)
{
    uint64_t *first = mt_xcalloc(prog->nprocs + 1, sizeof *first);
    for (uint32_t p = 0; p < prog->nprocs; p++)
        first[p + 1] = first[p] + prog->procs[p].nblocks;
    return first;
}

/* Pass-1 calls per call site (the block ending with the call runs it once
 * per execution; a target of a call through a pointer its recorded share),
 * laid out as mt_compute_estimability wants. */
static uint64_t *site_counts(const mt_program *prog, const uint64_t *counts,
                             const uint64_t *first)
{
    size_t n = 0;
    for (uint32_t p = 0; p < prog->nprocs; p++)
        n += prog->procs[p].ncalls;
    uint64_t *sc = mt_xcalloc(n + 1, sizeof *sc);
    n = 0;
    for (uint32_t p = 0; p < prog->nprocs; p++)
        for (uint32_t k = 0; k < prog->procs[p].ncalls; k++) {
            const mt_call_site *c = &prog->procs[p].calls[k];
            double calls = c->block == MT_NONE ? 0 : mt_site_calls(c, counts[first[p] + c->block]);
            sc[n++] = (uint64_t)llround(calls);
        }
    return sc;
}

/* Pass-1 entries of each procedure: its entry block's count, unless a
 * branch inside it leads back there (the count then mixes both). */
static uint64_t *procedure_entries(const mt_program *prog, const uint64_t *counts,
                                   const uint64_t *first)
{
    uint64_t *entries = mt_xcalloc(prog->nprocs + 1, sizeof *entries);
    for (uint32_t p = 0; p < prog->nprocs; p++) {
        const mt_procedure *proc = &prog->procs[p];
        entries[p] = proc->nblocks ? counts[first[p]] : 0;
        for (uint32_t e = 0; e < proc->nedges; e++)
            if (proc->edges[e].dst == 0)
                entries[p] = MT_UNKNOWN_ENTRIES;
    }
    return entries;
}

double mt_procedure_calls(const mt_program *prog, const uint64_t *first, const uint64_t *counts,
                          uint32_t q)
{
    const mt_procedure *proc = &prog->procs[q];
    if (!proc->nblocks)
        return 0;
    if (proc->blocks[0].loop == MT_NONE || proc->loops[proc->blocks[0].loop].header != 0)
        return (double)counts[first[q]];
    double n = 0;
    for (uint32_t p = 0; p < prog->nprocs; p++)
        for (uint32_t k = 0; k < prog->procs[p].ncalls; k++) {
            const mt_call_site *s = &prog->procs[p].calls[k];
            if (s->callee == q && s->block != MT_NONE)
                n += mt_site_calls(s, counts[first[p] + s->block]);
        }
    return n;
}

uint64_t mt_loop_entries(const mt_program *prog, const uint64_t *first, const uint64_t *counts,
                         uint32_t p, uint32_t l)
{
    const mt_procedure *proc = &prog->procs[p];
    const mt_loop *lp = &proc->loops[l];
    uint64_t header = counts[first[p] + lp->header], n = 0;
    if (lp->header == 0) {
        /* calls through pointers are shares of their sites' counts */
        uint64_t calls = (uint64_t)llround(mt_procedure_calls(prog, first, counts, p));
        return calls > 0 && calls < header ? calls : header;
    }
    for (uint32_t k = 0; k < lp->nentry_edges; k++) {
        const mt_edge *e = &proc->edges[lp->entry_edges[k]];
        uint64_t src = counts[first[p] + e->src];
        n += proc->blocks[e->src].nsucc == 1 || src < header ? src : header;
    }
    return n < header ? n : header;
}

void mt_refine_with_pass1(mt_program *prog, const uint64_t *counts,
                          const mt_call_target_count *targets, size_t ntargets)
{
    mt_add_dynamic_calls(prog, targets, ntargets);
    mt_estimate_with_pass1(prog, counts);
}

void mt_estimate_with_pass1(mt_program *prog, const uint64_t *counts)
{
    uint64_t *first = mt_block_offsets(prog);
    uint64_t *sc = site_counts(prog, counts, first), *entries = procedure_entries(prog, counts, first);
    mt_compute_estimability(prog, sc, entries);
    free(sc);
    free(entries);
    free(first);
}
