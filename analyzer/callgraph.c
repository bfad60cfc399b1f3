/* analyzer/callgraph.c — the call graph: one edge per (caller, callee)
 * pair aggregating its call sites, and the strongly connected components
 * that mark recursion; static from the code, then (mt_add_dynamic_calls)
 * with the targets pass 1 saw at calls through pointers. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static int cmp_cg_edge(const void *a, const void *b)
{
    const mt_cg_edge *x = a, *y = b;
    if (x->caller != y->caller)
        return x->caller < y->caller ? -1 : 1;
    if (x->callee != y->callee)
        return x->callee < y->callee ? -1 : 1;
    return 0;
}

static void collect_edges(mt_program *prog)
{
    mt_cg_edge *edges = NULL;
    size_t n = 0, cap = 0;
    for (uint32_t p = 0; p < prog->nprocs; p++) {
        const mt_procedure *proc = &prog->procs[p];
        for (uint32_t c = 0; c < proc->ncalls; c++) {
            const mt_call_site *site = &proc->calls[c];
            if (site->callee == MT_NONE || site->callee >= prog->nprocs)
                continue;
            mt_cg_edge e = {.caller = p, .callee = site->callee, .nsites = 1, .kind = site->kind};
            MT_PUSH(edges, n, cap, e);
        }
    }
    /* qsort is not stable: the kind kept is the smallest one of the pair's
     * sites, which is deterministic (direct < plt < tail < indirect). */
    if (n > 1)
        qsort(edges, n, sizeof *edges, cmp_cg_edge);
    size_t out = 0;
    for (size_t i = 0; i < n; i++) {
        if (out && cmp_cg_edge(&edges[out - 1], &edges[i]) == 0) {
            edges[out - 1].nsites++;
            if (edges[i].kind < edges[out - 1].kind)
                edges[out - 1].kind = edges[i].kind;
        } else {
            edges[out++] = edges[i];
        }
    }
    free(prog->cg_edges);
    prog->cg_edges = edges;
    prog->ncg_edges = (uint32_t)out;
}

void mt_build_callgraph(mt_program *prog)
{
    collect_edges(prog);
    uint32_t n = prog->nprocs;
    uint32_t *from = mt_xmalloc(((size_t)prog->ncg_edges + 1) * sizeof *from);
    uint32_t *to = mt_xmalloc(((size_t)prog->ncg_edges + 1) * sizeof *to);
    for (uint32_t i = 0; i < prog->ncg_edges; i++) {
        from[i] = prog->cg_edges[i].caller;
        to[i] = prog->cg_edges[i].callee;
    }
    mt_csr succ;
    mt_csr_build(&succ, n, from, to, prog->ncg_edges);
    uint32_t *comp = mt_xmalloc(((size_t)n + 1) * sizeof *comp);
    prog->nsccs = n ? mt_graph_sccs(&succ, comp) : 0;
    uint32_t *size = mt_xcalloc((size_t)prog->nsccs + 1, sizeof *size);
    for (uint32_t p = 0; p < n; p++)
        size[comp[p]]++;
    for (uint32_t p = 0; p < n; p++) {
        prog->procs[p].scc = comp[p];
        prog->procs[p].recursive = size[comp[p]] > 1;
    }
    for (uint32_t i = 0; i < prog->ncg_edges; i++)
        if (from[i] == to[i])
            prog->procs[from[i]].recursive = true;
    free(size);
    free(comp);
    free(from);
    free(to);
    mt_csr_free(&succ);
}

/* ---- the dynamic call graph (pass 1's call targets) ----------------------- */

static int cmp_target_by_site(const void *a, const void *b)
{
    const mt_call_target_count *x = a, *y = b;
    if (x->site != y->site)
        return x->site < y->site ? -1 : 1;
    if (x->target != y->target)
        return x->target < y->target ? -1 : 1;
    return !x->object || !y->object ? !!x->object - !!y->object : strcmp(x->object, y->object);
}

/* The targets recorded at `site`: [*first, return) of the sorted list. */
static size_t targets_at(const mt_call_target_count *t, size_t n, uint64_t site, size_t *first)
{
    size_t hi = mt_lower_bound_u64(t, n, sizeof *t, offsetof(mt_call_target_count, site), site);
    *first = hi;
    while (hi < n && t[hi].site == site)
        hi++;
    return hi;
}

/* The entry of prog->cross_callees for `object`'s procedure at `target`
 * (added when new): 1 + its index, as mt_call_site.cross_callee. */
static uint32_t cross_callee_of(mt_program *prog, const char *object, uint64_t target)
{
    for (uint32_t j = 0; j < prog->ncross_callees; j++)
        if (prog->cross_callees[j].target == target && strcmp(prog->cross_callees[j].object, object) == 0)
            return j + 1;
    prog->cross_callees = mt_xrealloc(prog->cross_callees,
                                      (prog->ncross_callees + 1) * sizeof *prog->cross_callees);
    prog->cross_callees[prog->ncross_callees] = (mt_cross_callee){mt_xstrdup(object), target, false};
    return ++prog->ncross_callees;
}

/* Replaces the indirect call site `c` by one site per procedure it reached
 * (in this object, or in another named by cross_callee), and itself
 * (callee unknown) for the calls that went elsewhere. */
static void expand_site(mt_program *prog, const mt_call_site *c, const mt_call_target_count *t,
                        size_t first, size_t end, mt_call_site **out, size_t *n, size_t *cap)
{
    uint64_t total = 0, elsewhere = 0;
    for (size_t k = first; k < end; k++)
        total += t[k].calls;
    for (size_t k = first; k < end && total; k++) {
        bool own = !t[k].object;
        uint32_t q = own && t[k].target ? mt_procedure_with_entry(prog, t[k].target) : MT_NONE;
        /* A PLT stub reached through a pointer is library time the timers
         * do not set apart (only direct PLT calls are bracketed). */
        if (own && (q == MT_NONE || prog->procs[q].is_plt)) {
            elsewhere += t[k].calls;
            continue;
        }
        mt_call_site d = *c;
        d.target = own ? t[k].target : 0; /* no address of this object */
        d.callee = q;
        d.cross_callee = own ? 0 : cross_callee_of(prog, t[k].object, t[k].target);
        d.share = (double)t[k].calls / (double)total;
        MT_PUSH(*out, *n, *cap, d);
    }
    if (!total || elsewhere) {
        mt_call_site d = *c;
        d.share = total ? (double)elsewhere / (double)total : c->share;
        MT_PUSH(*out, *n, *cap, d);
    }
}

void mt_add_dynamic_calls(mt_program *prog, const mt_call_target_count *targets, size_t n)
{
    mt_call_target_count *t = mt_xmalloc((n + 1) * sizeof *t);
    if (n)
        memcpy(t, targets, n * sizeof *t);
    qsort(t, n, sizeof *t, cmp_target_by_site);
    for (uint32_t p = 0; p < prog->nprocs; p++) {
        mt_procedure *proc = &prog->procs[p];
        mt_call_site *calls = NULL;
        size_t ncalls = 0, cap = 0;
        bool changed = false;
        for (uint32_t k = 0; k < proc->ncalls; k++) {
            const mt_call_site *c = &proc->calls[k];
            size_t first = 0, end = c->kind == MT_CALL_INDIRECT && c->callee == MT_NONE
                                        ? targets_at(t, n, c->addr, &first) : 0;
            if (first == end) {
                MT_PUSH(calls, ncalls, cap, *c);
                continue;
            }
            expand_site(prog, c, t, first, end, &calls, &ncalls, &cap);
            changed = true;
        }
        if (changed) {
            free(proc->calls);
            proc->calls = calls;
            proc->ncalls = (uint32_t)ncalls;
        } else {
            free(calls);
        }
    }
    free(t);
    mt_build_callgraph(prog);
}

void mt_bind_stubs(mt_program *prog, const uint32_t *stubs, const uint32_t *procs, size_t n)
{
    uint32_t *to = mt_xmalloc(((size_t)prog->nprocs + 1) * sizeof *to);
    for (uint32_t p = 0; p < prog->nprocs; p++)
        to[p] = MT_NONE;
    for (size_t k = 0; k < n; k++) {
        to[stubs[k]] = procs[k];
        prog->procs[stubs[k]].binds_own = true;
    }
    for (uint32_t p = 0; p < prog->nprocs; p++)
        for (uint32_t c = 0; c < prog->procs[p].ncalls; c++) {
            mt_call_site *site = &prog->procs[p].calls[c];
            if (site->callee < prog->nprocs && to[site->callee] != MT_NONE)
                site->callee = to[site->callee];
        }
    free(to);
    mt_build_callgraph(prog);
}

void mt_object_blocks(const mt_procedure *p, uint32_t loop, bool region, uint32_t first,
                      uint32_t end, bool *in)
{
    if (region) {
        mt_region_blocks(p, first, end, in);
        return;
    }
    for (uint32_t b = 0; b < p->nblocks; b++)
        in[b] = loop == MT_NONE;
    if (loop != MT_NONE)
        for (uint32_t k = 0; k < p->loops[loop].nblocks; k++)
            in[p->loops[loop].blocks[k]] = true;
}

/* Marks q and, once, everything it calls. */
static void mark_callees_of(const mt_program *prog, uint32_t q, bool *called)
{
    uint32_t *stack = mt_xmalloc(((size_t)prog->nprocs + 1) * sizeof *stack);
    size_t n = 0;
    if (!called[q]) {
        called[q] = true;
        stack[n++] = q;
    }
    while (n) {
        const mt_procedure *p = &prog->procs[stack[--n]];
        for (uint32_t i = 0; i < p->ncalls; i++) {
            uint32_t c = p->calls[i].callee;
            if (c != MT_NONE && c < prog->nprocs && !called[c]) {
                called[c] = true;
                stack[n++] = c;
            }
        }
    }
    free(stack);
}

void mt_blocks_callees(const mt_program *prog, uint32_t p, const bool *in, bool *called)
{
    const mt_procedure *proc = &prog->procs[p];
    for (uint32_t i = 0; i < proc->ncalls; i++) {
        const mt_call_site *s = &proc->calls[i];
        if (s->callee != MT_NONE && s->callee < prog->nprocs && s->block < proc->nblocks &&
            in[s->block])
            mark_callees_of(prog, s->callee, called);
    }
}
