/* correlate/select.c — m-object selection (MTOOL's Figure 1, steps 2-4):
 * the procedures holding most memory operations, their loops, then
 * themselves, each kept when timable and estimable. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "correlate.h"

void mt_select_options_init(mt_select_options *o)
{
    *o = (mt_select_options){.coverage = 0.95, .inner_first = false, .timer_cycles = 70,
.min_cost_ratio = 50, .min_memops_ratio = 50, .timer_memops = 12,
                             .loops_cover = 0.9};
}

const char *mt_candidate_status_name(uint8_t status)
{
    static const char *const names[] = {"timed", "not timable", "not estimable", "irreducible",
                                        "not run", "covered by a timed loop"};
    return status <= MT_CAND_COVERED ? names[status] : "?";
}

typedef struct {
    mt_program *prog;
    const mt_program_costs *costs;
    const uint64_t *counts;
    const mt_select_options *o;
    mt_inclusive inclusive;   /* per procedure, estimable callees included */
    uint64_t *own_memops;     /* per procedure: its own blocks */
    uint32_t *seen;           /* per procedure: visit stamp of the descendant walk */
    uint32_t stamp;
} selector;

static uint64_t count_of(const selector *s, uint32_t p, uint32_t b)
{
    return s->counts[s->costs->first[p] + b];
}

static uint64_t block_memops(const selector *s, uint32_t p, uint32_t b)
{
    const mt_block *blk = &s->prog->procs[p].blocks[b];
    return count_of(s, p, b) * (blk->mem_reads + blk->mem_writes);
}

/* Pushes the callees of procedure p's executed call sites (those in `in`
 * when not NULL) not yet seen in this walk. */
static void push_callees(selector *s, uint32_t p, const bool *in, uint32_t *stack, size_t *n)
{
    const mt_procedure *proc = &s->prog->procs[p];
    for (uint32_t k = 0; k < proc->ncalls; k++) {
        const mt_call_site *c = &proc->calls[k];
        if (c->callee == MT_NONE || c->block == MT_NONE || (in && !in[c->block]) ||
            count_of(s, p, c->block) == 0 || s->seen[c->callee] == s->stamp)
            continue;
        s->seen[c->callee] = s->stamp;
        stack[(*n)++] = c->callee;
    }
}

/* Memory operations of every procedure reachable by executed calls from
 * procedure p's call sites (restricted to `in` when not NULL), once each.
 * An estimable object's descendants work only on its behalf, so this is
 * exactly what it causes. */
static uint64_t descendant_memops(selector *s, uint32_t p, const bool *in)
{
    uint32_t *stack = mt_xcalloc(s->prog->nprocs + 1, sizeof *stack);
    size_t n = 0;
    uint64_t sum = 0;
    s->stamp++;
    s->seen[p] = s->stamp;
    push_callees(s, p, in, stack, &n);
    while (n > 0) {
        uint32_t q = stack[--n];
        sum += s->own_memops[q];
        push_callees(s, q, NULL, stack, &n);
    }
    free(stack);
    return sum;
}

/* Entries of a loop from block counts: the entry edges' sources that can
 * only go into the loop count exactly; a branching source counts at most
 * the header's executions (pass 2 measures the exact figure). */
static uint64_t loop_entries(const selector *s, uint32_t p, const mt_loop *lp)
{
    const mt_procedure *proc = &s->prog->procs[p];
    uint64_t n = 0, header = count_of(s, p, lp->header);
    for (uint32_t k = 0; k < lp->nentry_edges; k++) {
        const mt_edge *e = &proc->edges[lp->entry_edges[k]];
        uint64_t src = count_of(s, p, e->src);
        n += proc->blocks[e->src].nsucc == 1 ? src : (src < header ? src : header);
    }
    if (lp->header == 0) /* the procedure's entry heads it: calls enter it too */
        return header;
    return n < header ? n : header;
}

static mt_candidate procedure_candidate(selector *s, uint32_t p)
{
    const mt_procedure *proc = &s->prog->procs[p];
    mt_candidate c = {.proc = p, .loop = MT_NONE, .entries = count_of(s, p, 0)};
    for (uint32_t b = 0; b < proc->nblocks; b++)
        c.insns += count_of(s, p, b) * proc->blocks[b].ninsns;
    c.memops = s->own_memops[p] + descendant_memops(s, p, NULL);
    c.predicted = s->inclusive.total[p] > 0 ? s->inclusive.total[p] : 0;
    return c;
}

static mt_candidate loop_candidate(selector *s, uint32_t p, uint32_t l)
{
    const mt_procedure *proc = &s->prog->procs[p];
    const mt_loop *lp = &proc->loops[l];
    mt_candidate c = {.proc = p, .loop = l, .entries = loop_entries(s, p, lp)};
    bool *in = mt_xcalloc(proc->nblocks + 1, sizeof *in);
    for (uint32_t k = 0; k < lp->nblocks; k++) {
        uint32_t b = lp->blocks[k];
        in[b] = true;
        c.memops += block_memops(s, p, b);
        c.insns += count_of(s, p, b) * proc->blocks[b].ninsns;
    }
    c.memops += descendant_memops(s, p, in);
    free(in);
    c.predicted = mt_predicted_cycles_loop(s->prog, s->costs, s->counts, p, l, &s->inclusive);
    return c;
}

/* Timable and estimable, or why not. */
static uint8_t judge(const selector *s, const mt_candidate *c)
{
    const mt_procedure *proc = &s->prog->procs[c->proc];
    if (c->entries == 0)
        return MT_CAND_NOT_RUN;
    if (c->loop != MT_NONE && proc->loops[c->loop].irreducible)
        return MT_CAND_IRREDUCIBLE;
    double per_entry = c->predicted / (double)c->entries;
    double memops_per_entry = (double)c->memops / (double)c->entries;
    if (per_entry < s->o->min_cost_ratio * s->o->timer_cycles ||
        memops_per_entry < s->o->min_memops_ratio * s->o->timer_memops)
        return MT_CAND_NOT_TIMABLE;
    bool estimable = c->loop == MT_NONE ? proc->estimable : proc->loops[c->loop].estimable;
    return estimable ? MT_CAND_TIMED : MT_CAND_NOT_ESTIMABLE;
}

static int by_own_memops_desc(const void *a, const void *b, void *arg)
{
    const uint64_t *m = arg;
    uint64_t x = m[*(const uint32_t *)a], y = m[*(const uint32_t *)b];
    return x < y ? 1 : x > y ? -1 : 0;
}

/* Pass-1 call counts per call site (the block ending with the call runs it
 * once per execution), laid out as mt_compute_estimability wants. */
static uint64_t *site_counts(const selector *s)
{
    size_t n = 0;
    for (uint32_t p = 0; p < s->prog->nprocs; p++)
        n += s->prog->procs[p].ncalls;
    uint64_t *sc = mt_xcalloc(n + 1, sizeof *sc);
    n = 0;
    for (uint32_t p = 0; p < s->prog->nprocs; p++)
        for (uint32_t k = 0; k < s->prog->procs[p].ncalls; k++) {
            uint32_t b = s->prog->procs[p].calls[k].block;
            sc[n++] = b == MT_NONE ? 0 : count_of(s, p, b);
        }
    return sc;
}

/* The loops of procedure p in the order tried: parents before children
 * (the analyzer's order) for outer-first, the reverse for inner-first.  A
 * loop inside a timed loop is not tried outer-first (the enclosing timer
 * already localizes it); inner-first, a loop enclosing a timed one is still
 * tried (it may hold more than its timed child). */
static uint64_t add_loops(selector *s, uint32_t p, mt_candidate **out, size_t *n, size_t *cap)
{
    const mt_procedure *proc = &s->prog->procs[p];
    bool *timed = mt_xcalloc(proc->nloops + 1, sizeof *timed);
    uint64_t *memops = mt_xcalloc(proc->nloops + 1, sizeof *memops);
    for (uint32_t k = 0; k < proc->nloops; k++) {
        uint32_t l = s->o->inner_first ? proc->nloops - 1 - k : k;
        mt_candidate c = loop_candidate(s, p, l);
        uint32_t up = proc->loops[l].parent;
        bool inside_timed = false;
        for (; !s->o->inner_first && up != MT_NONE; up = proc->loops[up].parent)
            inside_timed |= timed[up];
        c.status = inside_timed ? MT_CAND_COVERED : judge(s, &c);
        timed[l] = c.status == MT_CAND_TIMED;
        memops[l] = c.memops;
        if (c.entries > 0)
            MT_PUSH(*out, *n, *cap, c);
    }
    uint64_t timed_memops = 0; /* of the outermost timed loops */
    for (uint32_t l = 0; l < proc->nloops; l++) {
        bool outermost_timed = timed[l];
        for (uint32_t up = proc->loops[l].parent; up != MT_NONE; up = proc->loops[up].parent)
            outermost_timed &= !timed[up];
        timed_memops += outermost_timed ? memops[l] : 0;
    }
    free(timed);
    free(memops);
    return timed_memops;
}

void mt_select(mt_program *prog, const mt_program_costs *costs, const uint64_t *counts,
               const mt_select_options *o, mt_selection *out)
{
    memset(out, 0, sizeof *out);
    selector s = {.prog = prog, .costs = costs, .counts = counts, .o = o,
                  .own_memops = mt_xcalloc(prog->nprocs + 1, sizeof(uint64_t)),
                  .seen = mt_xcalloc(prog->nprocs + 1, sizeof(uint32_t))};
    uint64_t *sc = site_counts(&s);
    mt_compute_estimability(prog, sc);
    free(sc);
    mt_predicted_inclusive(prog, costs, counts, &s.inclusive);
    uint32_t *order = mt_xcalloc(prog->nprocs + 1, sizeof *order);
    for (uint32_t p = 0; p < prog->nprocs; p++) {
        order[p] = p;
        for (uint32_t b = 0; b < prog->procs[p].nblocks; b++)
            s.own_memops[p] += block_memops(&s, p, b);
        out->memops_total += s.own_memops[p];
        out->predicted_total += mt_predicted_cycles_proc(prog, costs, counts, p);
    }
    qsort_r(order, prog->nprocs, sizeof *order, by_own_memops_desc, s.own_memops);
    size_t cap = 0;
    for (uint32_t i = 0; i < prog->nprocs; i++) {
        uint32_t p = order[i];
        if (s.own_memops[p] == 0 ||
            (double)out->memops_selected >= o->coverage * (double)out->memops_total)
            break;
        out->memops_selected += s.own_memops[p];
        uint64_t in_loops = add_loops(&s, p, &out->cands, &out->ncands, &cap);
        mt_candidate c = procedure_candidate(&s, p);
        /* Timed too only when its timed loops leave a share worth knowing. */
        c.status = (double)in_loops >= o->loops_cover * (double)c.memops ? MT_CAND_COVERED
                                                                          : judge(&s, &c);
        MT_PUSH(out->cands, out->ncands, cap, c);
    }
    /* Stable: timed objects keep the order they were chosen in. */
    mt_candidate *sorted = mt_xcalloc(out->ncands + 1, sizeof *sorted);
    size_t k = 0;
    for (int pass = 0; pass < 2; pass++)
        for (size_t j = 0; j < out->ncands; j++)
            if ((out->cands[j].status == MT_CAND_TIMED) == (pass == 0))
                sorted[k++] = out->cands[j];
    free(out->cands);
    out->cands = sorted;
    for (size_t j = 0; j < out->ncands && out->cands[j].status == MT_CAND_TIMED; j++)
        out->ntimed++;
    free(order);
    mt_inclusive_free(&s.inclusive);
    free(s.own_memops);
    free(s.seen);
}

void mt_selection_free(mt_selection *s)
{
    free(s->cands);
    memset(s, 0, sizeof *s);
}
