/* analyzer/callgraph.c — the static call graph: one edge per (caller,
 * callee) pair aggregating its call sites, and the strongly connected
 * components that mark recursion. */
#include <stdlib.h>

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
