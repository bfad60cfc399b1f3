/* analyzer/estimability.c — MTOOL's estimability test (section 4).
 *
 * An m-object (procedure or loop) is estimable when all the work of its
 * callees is done on its behalf, so block counts predict its inclusive time.
 * MTOOL's labels are Tot(v) = 1 + Σ Tot(w)·calls(v→w)/calls(→w) and
 * TDES(v) = 1 + |descendants(v)|, with v estimable iff Tot(v) = TDES(v).
 * That equality holds exactly when every node reachable from v is reached
 * only through v, i.e. v dominates all its descendants.  We decide it that
 * way, on a graph that extends the call graph:
 *
 *   nodes  procedures (PLT stubs excluded), one virtual node per reducible
 *          loop, and a root standing for every caller we cannot see;
 *   edges  procedure → its outermost loops, loop → its child loops, and a
 *          call site's innermost loop (or procedure) → callee;
 *          root → procedures whose address is taken or exported, the entry
 *          point's procedure, and procedures nothing calls.
 *
 * x is estimable iff its dominator subtree is closed under successors.  This
 * stays exact with recursion (a self-recursive procedure entered only through
 * itself dominates its cycle; a cycle entered from two places is estimable
 * nowhere inside it), which lifts MTOOL's restriction to non-recursive code.
 *
 * Calls to PLT stubs are left out: time spent in shared libraries is measured
 * separately by the timing pass and never predicted.  A node containing an
 * indirect call (unknown callee) or an unresolved procedure has unknown work:
 * it and every dominator-tree ancestor of it are not estimable.
 *
 * Tot and TDES are reported too (over procedures; a loop counts as one virtual
 * node).  On cycles the Tot recurrence has no solution, so both are computed
 * on the graph's strongly connected components: a recursive procedure reports
 * the figures of its whole component, its members counted once each. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Work budget for TDES of non-estimable nodes (one DFS each). */
#define TDES_VISIT_BUDGET 200000000ull

typedef struct {
    uint32_t from, to;
    double weight;   /* calls along the edge; 1 for structural edges */
    bool is_call;    /* false: procedure → loop or loop → child loop */
} ext_edge;

typedef struct {
    uint32_t nprocs, nnodes, root;
    uint32_t *loop_base;   /* node of procs[p].loops[0] */
    ext_edge *edges;
    size_t nedges, cap;
    uint8_t *unknown;      /* node has work we cannot see */
    uint8_t *is_proc;
} ext_graph;

static void add_edge(ext_graph *g, uint32_t u, uint32_t w, double weight, bool is_call)
{
    ext_edge e = {u, w, weight, is_call};
    MT_PUSH(g->edges, g->nedges, g->cap, e);
}

/* Edge endpoints as CSR successor (or, reversed, predecessor) lists. */
static void build_adjacency(const ext_graph *g, mt_csr *out, bool reversed)
{
    uint32_t *from = mt_xmalloc((g->nedges + 1) * sizeof *from);
    uint32_t *to = mt_xmalloc((g->nedges + 1) * sizeof *to);
    for (size_t e = 0; e < g->nedges; e++) {
        from[e] = reversed ? g->edges[e].to : g->edges[e].from;
        to[e] = reversed ? g->edges[e].from : g->edges[e].to;
    }
    mt_csr_build(out, g->nnodes, from, to, g->nedges);
    free(from);
    free(to);
}

/* The node that owns something inside loop `l` of procedure p: the nearest
 * reducible loop containing it, else the procedure. */
static uint32_t owner_node(const ext_graph *g, const mt_procedure *proc, uint32_t p, uint32_t l)
{
    while (l != MT_NONE && l < proc->nloops && proc->loops[l].irreducible)
        l = proc->loops[l].parent;
    return l == MT_NONE || l >= proc->nloops ? p : g->loop_base[p] + l;
}

static void build_nodes(ext_graph *g, const mt_program *prog)
{
    g->nprocs = prog->nprocs;
    g->loop_base = mt_xmalloc(((size_t)prog->nprocs + 1) * sizeof *g->loop_base);
    uint32_t next = prog->nprocs;
    for (uint32_t p = 0; p < prog->nprocs; p++) {
        g->loop_base[p] = next;
        next += prog->procs[p].nloops;
    }
    g->root = next;
    g->nnodes = next + 1;
    g->unknown = mt_xcalloc(g->nnodes, 1);
    g->is_proc = mt_xcalloc(g->nnodes, 1);
    for (uint32_t p = 0; p < prog->nprocs; p++)
        g->is_proc[p] = !prog->procs[p].is_plt;
}

static void build_edges(ext_graph *g, const mt_program *prog, const uint64_t *site_counts)
{
    size_t site = 0;
    for (uint32_t p = 0; p < prog->nprocs; p++) {
        const mt_procedure *proc = &prog->procs[p];
        if (proc->is_plt) {
            site += proc->ncalls;
            continue;
        }
        for (uint32_t l = 0; l < proc->nloops; l++)
            if (!proc->loops[l].irreducible)
                add_edge(g, owner_node(g, proc, p, proc->loops[l].parent), g->loop_base[p] + l, 1, false);
        if (!proc->resolved) {
            g->unknown[p] = 1;
            for (uint32_t l = 0; l < proc->nloops; l++)
                g->unknown[g->loop_base[p] + l] = 1;
        }
        for (uint32_t c = 0; c < proc->ncalls; c++, site++) {
            const mt_call_site *s = &proc->calls[c];
            double w = site_counts ? (double)site_counts[site] : 1.0;
            if (w == 0)
                continue;
            uint32_t from = owner_node(g, proc, p, s->loop);
            if (s->callee == MT_NONE || s->callee >= prog->nprocs) {
                if (s->kind == MT_CALL_INDIRECT)
                    g->unknown[from] = 1;
                continue;
            }
            if (prog->procs[s->callee].is_plt)
                continue;
            add_edge(g, from, s->callee, w, true);
        }
    }
}

/* Root edges: callers we cannot see.  Besides exported, address-taken and
 * uncalled procedures, a cycle that nothing outside it calls (dead code, or
 * reached only through a path we missed) also gets one, so every node is
 * reachable from the root. */
static void add_root_edges(ext_graph *g, const mt_program *prog, const uint32_t *comp, uint32_t ncomp)
{
    uint8_t *has_caller = mt_xcalloc(g->nnodes, 1);
    uint8_t *comp_entered = mt_xcalloc(ncomp ? ncomp : 1, 1);
    for (size_t e = 0; e < g->nedges; e++) {
        const ext_edge *edge = &g->edges[e];
        has_caller[edge->to] = 1;
        if (comp[edge->from] != comp[edge->to])
            comp_entered[comp[edge->to]] = 1;
    }
    uint32_t entry_proc = prog->entry ? mt_procedure_at(prog, prog->entry) : MT_NONE;
    for (uint32_t p = 0; p < prog->nprocs; p++) {
        if (!g->is_proc[p])
            continue;
        if (prog->procs[p].address_taken || p == entry_proc || !has_caller[p] || !comp_entered[comp[p]])
            add_edge(g, g->root, p, 1, true);
    }
    free(has_caller);
    free(comp_entered);
}

/* For every edge u→w, the nodes on the dominator-tree path from u up to
 * (excluding) the lowest common dominator of u and w reach w without
 * dominating it: +1 at u, −1 at that ancestor, and a subtree sum > 0 marks a
 * node not estimable.  Unknown work adds +1 at its node only. */
static void mark_not_estimable(const ext_graph *g, const uint32_t *idom, const mt_domtree *dt,
                               uint8_t *estimable)
{
    int64_t *sum = mt_xcalloc(g->nnodes, sizeof *sum);
    for (size_t e = 0; e < g->nedges; e++) {
        uint32_t u = g->edges[e].from, w = g->edges[e].to;
        if (u == g->root)
            continue;
        uint32_t a = u;
        while (a != MT_NONE && !mt_domtree_dominates(dt, a, w))
            a = idom[a];
        sum[u]++;
        if (a != MT_NONE)
            sum[a]--;
    }
    for (uint32_t v = 0; v < g->nnodes; v++)
        if (g->unknown[v])
            sum[v]++;
    /* Children before parents: reverse preorder. */
    for (uint32_t i = g->nnodes; i-- > 0;) {
        uint32_t v = dt->order[i];
        if (idom[v] != MT_NONE)
            sum[idom[v]] += sum[v];
    }
    for (uint32_t v = 0; v < g->nnodes; v++)
        estimable[v] = idom[v] != MT_NONE && sum[v] == 0; /* reachable, not the root */
    free(sum);
}

/* Tot over the condensation, sinks first (components are numbered in reverse
 * topological order, so increasing numbers visit callees first). */
static void compute_tot(const ext_graph *g, const uint32_t *comp, uint32_t ncomp, double *tot_of_comp)
{
    double *in_ext = mt_xcalloc(g->nnodes, sizeof *in_ext);
    for (size_t e = 0; e < g->nedges; e++) {
        const ext_edge *edge = &g->edges[e];
        if (edge->is_call && comp[edge->from] != comp[edge->to])
            in_ext[edge->to] += edge->weight;
    }
    mt_csr by_comp; /* edges grouped by their source component */
    uint32_t *src = mt_xmalloc((g->nedges + 1) * sizeof *src);
    uint32_t *ids = mt_xmalloc((g->nedges + 1) * sizeof *ids);
    for (size_t e = 0; e < g->nedges; e++) {
        src[e] = comp[g->edges[e].from];
        ids[e] = (uint32_t)e;
    }
    mt_csr_build(&by_comp, ncomp, src, ids, g->nedges);
    for (uint32_t c = 0; c < ncomp; c++)
        tot_of_comp[c] = 0;
    for (uint32_t v = 0; v < g->nnodes; v++)
        if (g->is_proc[v])
            tot_of_comp[comp[v]] += 1;
    for (uint32_t c = 0; c < ncomp; c++) {
        for (uint32_t k = by_comp.off[c]; k < by_comp.off[c + 1]; k++) {
            const ext_edge *edge = &g->edges[by_comp.adj[k]];
            uint32_t w = edge->to;
            if (comp[w] == c || edge->from == g->root)
                continue;
            double share = edge->is_call ? (in_ext[w] > 0 ? edge->weight / in_ext[w] : 0) : 1.0;
            tot_of_comp[c] += share * tot_of_comp[comp[w]];
        }
    }
    mt_csr_free(&by_comp);
    free(src);
    free(ids);
    free(in_ext);
}

/* TDES(x) = (1 if x is a loop) + distinct procedures reachable from x,
 * x included.  Estimable nodes reach exactly their dominator subtree. */
static void compute_tdes(const ext_graph *g, const mt_csr *succ, const uint32_t *idom, const mt_domtree *dt,
                         const uint8_t *estimable, double *tdes)
{
    uint32_t n = g->nnodes;
    double *procs_below = mt_xcalloc(n, sizeof *procs_below);
    for (uint32_t i = n; i-- > 0;) {
        uint32_t v = dt->order[i];
        procs_below[v] += g->is_proc[v];
        if (idom[v] != MT_NONE)
            procs_below[idom[v]] += procs_below[v];
    }
    uint32_t *stamp = mt_xcalloc(n, sizeof *stamp);
    uint32_t *stack = mt_xmalloc((size_t)n * sizeof *stack);
    uint64_t budget = TDES_VISIT_BUDGET;
    for (uint32_t x = 0; x < n; x++) {
        double self = g->is_proc[x] ? 0 : 1;
        tdes[x] = -1;
        if (x == g->root)
            continue;
        if (estimable[x]) {
            tdes[x] = self + procs_below[x];
            continue;
        }
        uint32_t sp = 0, reached = 0;
        stack[sp++] = x;
        stamp[x] = x + 1;
        while (sp && budget) {
            uint32_t v = stack[--sp];
            budget--;
            reached += g->is_proc[v];
            for (uint32_t k = succ->off[v]; k < succ->off[v + 1]; k++) {
                uint32_t w = succ->adj[k];
                if (stamp[w] != x + 1) {
                    stamp[w] = x + 1;
                    stack[sp++] = w;
                }
            }
        }
        if (!sp)
            tdes[x] = self + reached;
    }
    free(stamp);
    free(stack);
    free(procs_below);
}

static void store_results(mt_program *prog, const ext_graph *g, const uint8_t *estimable, const uint32_t *comp,
                          const double *tot_of_comp, const double *tdes)
{
    for (uint32_t p = 0; p < prog->nprocs; p++) {
        mt_procedure *proc = &prog->procs[p];
        bool plt = proc->is_plt;
        proc->estimable = !plt && estimable[p];
        proc->tot = plt ? 0 : tot_of_comp[comp[p]];
        proc->tdes = plt ? -1 : tdes[p];
        for (uint32_t l = 0; l < proc->nloops; l++) {
            mt_loop *loop = &proc->loops[l];
            uint32_t v = g->loop_base[p] + l;
            bool real = !plt && !loop->irreducible;
            loop->estimable = real && estimable[v];
            loop->tot = real ? 1 + tot_of_comp[comp[v]] : 0;
            loop->tdes = real ? tdes[v] : -1;
        }
    }
}

static void ext_graph_free(ext_graph *g)
{
    free(g->loop_base);
    free(g->edges);
    free(g->unknown);
    free(g->is_proc);
}

void mt_compute_estimability(mt_program *prog, const uint64_t *site_counts)
{
    ext_graph g;
    memset(&g, 0, sizeof g);
    build_nodes(&g, prog);
    build_edges(&g, prog, site_counts);

    uint32_t n = g.nnodes;
    uint32_t *comp = mt_xmalloc((size_t)n * sizeof *comp);
    mt_csr succ, pred;
    build_adjacency(&g, &succ, false);
    uint32_t ncomp = mt_graph_sccs(&succ, comp);
    mt_csr_free(&succ);
    add_root_edges(&g, prog, comp, ncomp); /* root edges never change components */

    build_adjacency(&g, &succ, false);
    build_adjacency(&g, &pred, true);
    uint32_t *idom = mt_xmalloc((size_t)n * sizeof *idom);
    mt_graph_dominators(&succ, &pred, g.root, idom);
    mt_domtree dt;
    mt_domtree_build(&dt, idom, n);

    uint8_t *estimable = mt_xcalloc(n, 1);
    double *tot_of_comp = mt_xmalloc(((size_t)ncomp + 1) * sizeof *tot_of_comp);
    double *tdes = mt_xmalloc((size_t)n * sizeof *tdes);
    mark_not_estimable(&g, idom, &dt, estimable);
    compute_tot(&g, comp, ncomp, tot_of_comp);
    compute_tdes(&g, &succ, idom, &dt, estimable, tdes);
    store_results(prog, &g, estimable, comp, tot_of_comp, tdes);

    free(estimable);
    free(tot_of_comp);
    free(tdes);
    free(idom);
    free(comp);
    mt_domtree_free(&dt);
    mt_csr_free(&succ);
    mt_csr_free(&pred);
    ext_graph_free(&g);
}
