/* correlate/figures.c — the report's rows: each timed m-object's measured
 * cycles (timers, compensated) against its predicted cycles (counts x cost
 * model), and which rows may be summed without counting time twice. */
#include <stdlib.h>
#include <string.h>

#include "correlate.h"

static void reachable(const mt_candidate *y, const bool *yin, bool *reach);

/* Whether the code of object y (procedure `yproc`'s blocks `yin`, and
 * the procedures `reach` marks) makes call across objects `oc`: calls its
 * stub, or calls its cross callee through a pointer. */
static bool makes_call(const mt_object_call *oc, uint32_t yproc, const bool *yin, const bool *reach)
{
    if (!oc->cross_callee)
        return reach[oc->stub];
    for (uint32_t p = 0; p < oc->from->nprocs; p++) {
        const mt_procedure *proc = &oc->from->procs[p];
        for (uint32_t k = 0; (reach[p] || p == yproc) && k < proc->ncalls; k++) {
            const mt_call_site *c = &proc->calls[k];
            if (c->cross_callee == oc->cross_callee &&
                (reach[p] || (c->block != MT_NONE && yin[c->block])))
                return true;
        }
    }
    return false;
}

/* Whether object x of another object's code runs inside the calls across
 * objects that are known work made from object `from`'s procedure `yproc`
 * (blocks `yin`) and the procedures `reach` marks (a stub or a call
 * through a pointer among them; the procedure it leads to is x's or
 * reaches x's, in its own object or, at most `depth` calls further, across
 * that object's known imports: a library calling another).  Other calls
 * into a library go through the PLT as outside time for y, library objects
 * included (timer/runtime.c, mt_timer_outside_resumed). */
static bool inside_across(const mt_selection *sel, const mt_candidate *x, const mt_program *from,
                          uint32_t yproc, const bool *yin, const bool *reach, size_t depth)
{
    for (size_t k = 0; depth > 0 && k < sel->nobject_calls; k++) {
        const mt_object_call *oc = &sel->object_calls[k];
        if (oc->from != from || !makes_call(oc, yproc, yin, reach))
            continue;
        if (oc->to == x->prog && oc->proc == x->proc)
            return true;
        mt_candidate callee = {.proc = oc->proc, .loop = MT_NONE, .prog = oc->to};
        bool *all = mt_xcalloc(oc->to->procs[oc->proc].nblocks + 1, sizeof *all);
        bool *there = mt_xcalloc(oc->to->nprocs + 1, sizeof *there);
        memset(all, 1, oc->to->procs[oc->proc].nblocks * sizeof *all);
        reachable(&callee, all, there);
        bool in = (oc->to == x->prog && there[x->proc]) ||
                  inside_across(sel, x, oc->to, oc->proc, all, there, depth - 1);
        free(all);
        free(there);
        if (in)
            return true;
    }
    return false;
}

/* Whether timed object x lies inside timed object y: a loop inside a loop,
 * a region or its own procedure, a region in its own procedure (or, by
 * hand, in a larger region), or a procedure that y's code calls (an
 * estimable y's callees work only on its behalf: all of their time is
 * inside y), in its own code or across objects as known work.  `yin`: y's
 * blocks. */
static bool inside(const mt_selection *sel, const mt_candidate *x, const mt_candidate *y,
                   const bool *yin, const bool *reach)
{
    const mt_program *prog = y->prog;
    if (x == y)
        return false;
    if (x->prog != prog)
        return inside_across(sel, x, y->prog, y->proc, yin, reach, sel->nobject_calls);
    if (x->proc == y->proc && (x->loop != MT_NONE || x->region.n)) {
        if (y->loop == MT_NONE && !y->region.n)
            return true;
        const mt_procedure *p = &prog->procs[x->proc];
        if (y->region.n) {
            bool *xin = mt_candidate_blocks(prog, x), sub = true, smaller = false;
            for (uint32_t b = 0; b < p->nblocks; b++) {
                sub &= !xin[b] || yin[b];
                smaller |= yin[b] && !xin[b];
            }
            free(xin);
            return sub && smaller;
        }
        if (x->region.n)
            return false; /* a region lies in no loop: its cut points are on no cycle */
        for (uint32_t up = p->loops[x->loop].parent; up != MT_NONE; up = p->loops[up].parent)
            if (up == y->loop)
                return true;
        return false;
    }
    return x->proc != y->proc && reach[x->proc];
}

/* Procedures reachable by calls from object y (blocks `yin`): its calls,
 * then any call of the procedures they reach. */
static void reachable(const mt_candidate *y, const bool *yin, bool *reach)
{
    const mt_program *prog = y->prog;
    memset(reach, 0, prog->nprocs * sizeof *reach);
    uint32_t *stack = mt_xcalloc(prog->nprocs + 1, sizeof *stack);
    size_t n = 0;
    stack[n++] = y->proc;
    while (n > 0) {
        const mt_procedure *p = &prog->procs[stack[--n]];
        for (uint32_t k = 0; k < p->ncalls; k++) {
            uint32_t q = p->calls[k].callee;
            if (q == MT_NONE || reach[q])
                continue;
            if (p == &prog->procs[y->proc] &&
                (p->calls[k].block == MT_NONE || !yin[p->calls[k].block]))
                continue; /* a call outside the loop or region */
            reach[q] = true;
            stack[n++] = q;
        }
    }
    free(stack);
}

static int by_overhead_desc(const void *a, const void *b)
{
    const mt_mobject_figures *x = a, *y = b;
    return x->overhead < y->overhead ? 1 : x->overhead > y->overhead ? -1 : 0;
}

/* TSC ticks per core cycle while run k timed the object: its threads' own
 * clock, measured in the program as it ran (its inclusive ticks over their
 * cycles), else the clock measured around the run. */
static double object_clock(const mt_timer_totals *t, const mt_correlate_clock *clk, size_t k)
{
    return t->cycles && t->inclusive ? (double)t->inclusive / (double)t->cycles
                                     : clk->tsc_per_cycle[k];
}

/* Core cycles of run k's totals: inclusive, less time outside
 * instrumented code and the timer's bias per entry. */
static double net_cycles(const mt_timer_totals *t, const mt_correlate_clock *clk, size_t k)
{
    double ticks = (double)t->inclusive - (double)t->outside -
                   clk->timer_bias_ticks * (double)t->entries;
    return (ticks > 0 ? ticks : 0) / object_clock(t, clk, k);
}

/* Object i's net cycles in run k, and its outside cycles: the sums of the
 * run's parts, each at its own clock, else of its totals whole. */
static double run_cycles(mt_timer_totals *const *runs, const mt_correlate_clock *clk, size_t k,
                         size_t i, double *outside)
{
    size_t n = clk->nparts ? clk->nparts : 1;
    double net = 0;
    *outside = 0;
    for (size_t p = 0; p < n; p++) {
        const mt_timer_totals *t = clk->nparts ? &clk->parts[k * n + p][i] : &runs[k][i];
        net += net_cycles(t, clk, k);
        *outside += (double)t->outside / object_clock(t, clk, k);
    }
    return net;
}

mt_mobject_figures *mt_correlate(const mt_selection *sel, mt_timer_totals *const *runs,
                                 size_t nruns, const mt_correlate_clock *clk, size_t *nrows)
{
    mt_mobject_figures *rows = mt_xcalloc(sel->ntimed + 1, sizeof *rows);
    uint32_t most_procs = 0;
    for (size_t j = 0; j < sel->ntimed; j++)
        if (sel->cands[j].prog->nprocs > most_procs)
            most_procs = sel->cands[j].prog->nprocs;
    bool *reach = mt_xcalloc((size_t)most_procs + 1, sizeof *reach);
    for (size_t i = 0; i < sel->ntimed; i++) {
        size_t best = 0;
        double outside, least = run_cycles(runs, clk, 0, i, &outside), most = least;
        for (size_t k = 1; k < nruns; k++) {
            double out, c = run_cycles(runs, clk, k, i, &out);
            if (c < least) {
                least = c;
                best = k;
                outside = out;
            }
            most = c > most ? c : most;
        }
        const mt_timer_totals *t = &runs[best][i];
        mt_mobject_figures *r = &rows[i];
        r->cand = &sel->cands[i];
        r->entries = t->entries;
        r->recursive = t->recursive;
        r->nonlocal_exits = t->nonlocal_exits;
        r->open = t->open;
        r->measured = least;
        r->measured_max = most;
        r->tsc_per_cycle = object_clock(t, clk, best);
        r->clock_in_program = t->cycles && t->inclusive;
        r->outside = outside;
        r->overhead = r->measured - r->cand->predicted;
        r->outermost = true;
    }
    for (size_t j = 0; j < sel->ntimed; j++) {
        bool *yin = mt_candidate_blocks(sel->cands[j].prog, &sel->cands[j]);
        reachable(&sel->cands[j], yin, reach);
        for (size_t i = 0; i < sel->ntimed; i++)
            if (inside(sel, &sel->cands[i], &sel->cands[j], yin, reach))
                rows[i].outermost = false;
        free(yin);
    }
    free(reach);
    qsort(rows, sel->ntimed, sizeof *rows, by_overhead_desc);
    *nrows = sel->ntimed;
    return rows;
}
