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
 *          loop (irreducible regions are not m-objects: their calls belong
 *          to the nearest enclosing reducible loop, or the procedure), and a
 *          root standing for every caller we cannot see;
 *   edges  procedure → its outermost loops, loop → its child loops;
 *          a call site's innermost loop (or procedure) → callee;
 *          a jump from foo (or one of its loops) into its split part
 *          foo.cold → foo.cold, since the cold part runs on foo's behalf;
 *          root → procedures whose address is taken (or that are exported),
 *          the entry point's procedure, procedures nothing calls, and any
 *          cycle nothing outside it calls (so every node is reachable); with
 *          pass-1 counts, a procedure whose address is taken keeps its root
 *          edge only when the calls seen (direct, and through pointers as
 *          recorded) do not account for all its entries.
 *   weight number of call sites (static), or the sum of the sites' execution
 *          counts (dynamic: a site that never ran is no edge); root edges
 *          and jumps into split parts weigh 1.
 *
 * Calls to PLT stubs are left out: time spent in shared libraries is measured
 * separately by the timing pass and never predicted — except calls to a
 * stub marked known_import (pass 2 joined a counted library's analysis: the
 * stub's import is one of its estimable procedures), which is a leaf node
 * standing for that procedure's work, predicted per call like any callee's;
 * so is a procedure of another object that calls through pointers reached
 * (prog->cross_callees, one node each) once pass 2 marks it known_import,
 * unknown work until then.
 *
 * x is estimable iff its dominator subtree is closed under successors.  For an
 * edge u→w the deepest common dominator of u and w is w when w dominates u,
 * else idom(w) (which dominates every predecessor of w); the nodes from u up
 * to, excluding, that ancestor reach w without dominating it.  Counting +1 at
 * u and −1 at the ancestor, a node is not estimable iff its subtree sum is
 * > 0 — all nodes at once in O(V + E).  This stays exact with recursion: a
 * self-recursive procedure entered only through itself dominates its cycle;
 * a cycle entered from two places is estimable nowhere inside it.
 *
 * Unknown work: a node holding a call whose callee is unknown (an indirect
 * call, or a direct call to an address where no procedure starts), that ran
 * at least once when counts are given, or a procedure with unresolved
 * control flow (and all its loops), has work we cannot see.  It adds +1 at
 * its node only, so it and every node that dominates it are not estimable;
 * nodes that reach it without dominating it already are not.
 *
 * Tot and TDES are reported for every node, counting procedures (a loop is
 * one virtual node, counted in its own figures only):
 *   TDES(x) = 1 + distinct procedures reachable from x, x itself excluded;
 *   Tot(x)  = 1 + Σ_{edges x→w} Tot(w)·weight(x→w)/calls(→w), where child
 *             loops count in full and calls(→w) sums every call edge into w
 *             (into w's component, for a recursive w), the root's included.
 * On a cycle the Tot recurrence has no solution, so Tot is computed on the
 * strongly connected components of the graph: a component counts as its
 * number of procedures, calls into it from outside share its Tot, and edges
 * inside it are ignored.  Every procedure of a recursive component therefore
 * reports the component's figures: Tot is the component's size plus the
 * shares of what the component calls, TDES is the number of distinct
 * procedures the component reaches, itself included (for a recursive
 * procedure, "1 + others reachable" counts itself once).  A loop of a
 * recursive procedure that calls back into it is in the same component and
 * reports 1 + the component's figures.  For non-recursive nodes without
 * unknown work, estimable ⇔ Tot = TDES (up to rounding); a node with unknown
 * work has figures over what is visible, and is not estimable whatever they
 * say.
 *
 * TDES of a non-estimable node needs a search of what it reaches: one search
 * per component (members share it), callees first, within a global work
 * budget; past it tdes = -1 ("not computed") and a warning says so.  An estimable node reaches
 * exactly its dominator subtree, so its TDES is a subtree count. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Work budget for TDES searches (nodes and edges visited). */
#define TDES_WORK_BUDGET 200000000ull

typedef struct {
    uint32_t from, to;
    double weight;   /* calls along the edge; 1 for structural edges */
    bool is_call;    /* false: procedure → loop or loop → child loop; true for
                        calls, root edges and jumps into split parts */
} ext_edge;

typedef struct {
    uint32_t nprocs, nnodes, root;
    uint32_t *loop_base;   /* node of procs[p].loops[0] */
    uint32_t cross_base;   /* node of prog->cross_callees[0] */
    ext_edge *edges;
    size_t nedges, cap;
    uint8_t *unknown;      /* node has work we cannot see */
    uint8_t *is_proc;      /* node is a procedure other than a PLT stub (but a known
                              import's, the leaf of its library procedure's work) */
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
 * reducible loop containing it, else the procedure.  Bounded by the number
 * of loops so that a malformed parent chain cannot loop forever. */
static uint32_t owner_node(const ext_graph *g, const mt_procedure *proc, uint32_t p, uint32_t l)
{
    for (uint32_t steps = 0; l < proc->nloops && proc->loops[l].irreducible && steps < proc->nloops; steps++)
        l = proc->loops[l].parent;
    return l >= proc->nloops || proc->loops[l].irreducible ? p : g->loop_base[p] + l;
}

/* Node numbers are uint32_t with MT_NONE reserved: false when procedures
 * and loops together do not fit. */
static bool fits_node_numbers(const mt_program *prog)
{
    uint64_t total = (uint64_t)prog->nprocs + prog->ncross_callees;
    for (uint32_t p = 0; p < prog->nprocs; p++)
        total += prog->procs[p].nloops;
    return total < MT_NONE - 1;
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
    g->cross_base = next;
    g->root = next + prog->ncross_callees;
    g->nnodes = g->root + 1;
    g->unknown = mt_xcalloc(g->nnodes, 1);
    g->is_proc = mt_xcalloc(g->nnodes, 1);
    for (uint32_t p = 0; p < prog->nprocs; p++)
        g->is_proc[p] = !prog->procs[p].is_plt || prog->procs[p].known_import;
    for (uint32_t j = 0; j < prog->ncross_callees; j++)
        g->is_proc[g->cross_base + j] = prog->cross_callees[j].known_import;
}

/* Loop structure and unresolved control flow of procedure p. */
static void add_structure(ext_graph *g, const mt_procedure *proc, uint32_t p)
{
    for (uint32_t l = 0; l < proc->nloops; l++)
        if (!proc->loops[l].irreducible)
            add_edge(g, owner_node(g, proc, p, proc->loops[l].parent), g->loop_base[p] + l, 1, false);
    if (!proc->resolved) {
        g->unknown[p] = 1;
        for (uint32_t l = 0; l < proc->nloops; l++)
            g->unknown[g->loop_base[p] + l] = 1;
    }
}

/* Jumps from p into one of its split parts (foo → foo.cold): the part runs
 * within p's activation, on behalf of the loop the jump leaves from. */
static void add_split_part_edges(ext_graph *g, const mt_program *prog, uint32_t p)
{
    const mt_procedure *proc = &prog->procs[p];
    for (uint32_t e = 0; e < proc->nedges; e++) {
        const mt_edge *edge = &proc->edges[e];
        if (edge->dst != MT_NONE || edge->target == 0 || edge->src >= proc->nblocks ||
            (edge->kind != MT_EDGE_JUMP && edge->kind != MT_EDGE_COND_TAKEN))
            continue;
        uint32_t q = mt_procedure_at(prog, edge->target);
        if (q == MT_NONE || q == p || prog->procs[q].parent != p || prog->procs[q].is_plt)
            continue;
        add_edge(g, owner_node(g, proc, p, proc->blocks[edge->src].loop), q, 1, true);
    }
}

/* Call sites of p; `site` indexes the flat count array across procedures. */
static void add_call_edges(ext_graph *g, const mt_program *prog, uint32_t p, const uint64_t *site_counts,
                           size_t site)
{
    const mt_procedure *proc = &prog->procs[p];
    for (uint32_t c = 0; c < proc->ncalls; c++) {
        const mt_call_site *s = &proc->calls[c];
        double w = site_counts ? (double)site_counts[site + c] : 1.0;
        if (w == 0)
            continue; /* never executed: not part of the dynamic call graph */
        uint32_t from = owner_node(g, proc, p, s->loop);
        uint32_t cross = s->cross_callee - 1; /* MT_NONE for none */
        if (cross < prog->ncross_callees && prog->cross_callees[cross].known_import) {
            add_edge(g, from, g->cross_base + cross, w, true);
            continue;
        }
        if (s->callee >= prog->nprocs) {
            g->unknown[from] = 1; /* the callee's work is invisible */
            continue;
        }
        if (prog->procs[s->callee].is_plt && !prog->procs[s->callee].known_import)
            continue; /* library time is measured, never predicted */
        add_edge(g, from, s->callee, w, true);
    }
}

static void build_edges(ext_graph *g, const mt_program *prog, const uint64_t *site_counts)
{
    size_t site = 0;
    for (uint32_t p = 0; p < prog->nprocs; p++) {
        const mt_procedure *proc = &prog->procs[p];
        if (!proc->is_plt) {
            add_structure(g, proc, p);
            add_split_part_edges(g, prog, p);
            add_call_edges(g, prog, p, site_counts, site);
        }
        site += proc->ncalls;
    }
}

/* Root edges: callers we cannot see.  Besides exported, address-taken and
 * uncalled procedures, a cycle that nothing outside it calls (dead code, or
 * reached only through a path we missed) also gets one, so every node is
 * reachable from the root. */
static void add_root_edges(ext_graph *g, const mt_program *prog, const uint32_t *comp, uint32_t ncomp,
                           const uint64_t *entries)
{
    uint8_t *has_caller = mt_xcalloc(g->nnodes, 1);
    uint8_t *comp_entered = mt_xcalloc(ncomp ? ncomp : 1, 1);
    double *calls_in = mt_xcalloc(g->nnodes, sizeof *calls_in);
    for (size_t e = 0; e < g->nedges; e++) {
        const ext_edge *edge = &g->edges[e];
        has_caller[edge->to] = 1;
        if (edge->is_call)
            calls_in[edge->to] += edge->weight;
        if (comp[edge->from] != comp[edge->to])
            comp_entered[comp[edge->to]] = 1;
    }
    uint32_t entry_proc = prog->entry ? mt_procedure_at(prog, prog->entry) : MT_NONE;
    for (uint32_t p = 0; p < prog->nprocs; p++) {
        if (!g->is_proc[p])
            continue;
        bool known = entries && entries[p] != MT_UNKNOWN_ENTRIES;
        double unseen = known ? (double)entries[p] - calls_in[p] : 1;
        bool unseen_callers = prog->procs[p].address_taken && unseen > 0;
        /* Weighted by the entries no visible call explains, when known. */
        if (unseen_callers || p == entry_proc || !has_caller[p] || !comp_entered[comp[p]])
            add_edge(g, g->root, p, known && unseen >= 1 ? unseen : 1, true);
    }
    free(has_caller);
    free(comp_entered);
    free(calls_in);
}

/* Subtree sums over the dominator tree (see the top of the file). */
static void mark_not_estimable(const ext_graph *g, const uint32_t *idom, const mt_domtree *dt,
                               uint8_t *estimable)
{
    int64_t *sum = mt_xcalloc(g->nnodes, sizeof *sum);
    for (size_t e = 0; e < g->nedges; e++) {
        uint32_t u = g->edges[e].from, w = g->edges[e].to;
        if (u == g->root || idom[u] == MT_NONE)
            continue; /* the root, or a node the root does not reach */
        uint32_t lca = mt_domtree_dominates(dt, w, u) ? w : idom[w];
        sum[u]++;
        sum[lca]--;
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

/* Edges grouped by the component of their source. */
static void edges_by_component(const ext_graph *g, const uint32_t *comp, uint32_t ncomp, mt_csr *out)
{
    uint32_t *src = mt_xmalloc((g->nedges + 1) * sizeof *src);
    uint32_t *ids = mt_xmalloc((g->nedges + 1) * sizeof *ids);
    for (size_t e = 0; e < g->nedges; e++) {
        src[e] = comp[g->edges[e].from];
        ids[e] = (uint32_t)e;
    }
    mt_csr_build(out, ncomp, src, ids, g->nedges);
    free(src);
    free(ids);
}

/* Tot over the condensation, sinks first (components are numbered in reverse
 * topological order, so increasing numbers visit callees first). */
static void compute_tot(const ext_graph *g, const uint32_t *comp, const mt_csr *by_comp, double *tot_of_comp)
{
    uint32_t ncomp = by_comp->n;
    /* calls(→w) of the condensation: every call entering w's component, so
     * that a cycle entered at two members shares its Tot between callers. */
    double *calls_in = mt_xcalloc(ncomp, sizeof *calls_in);
    for (size_t e = 0; e < g->nedges; e++) {
        const ext_edge *edge = &g->edges[e];
        if (edge->is_call && comp[edge->from] != comp[edge->to])
            calls_in[comp[edge->to]] += edge->weight;
    }
    for (uint32_t c = 0; c < ncomp; c++)
        tot_of_comp[c] = 0;
    for (uint32_t v = 0; v < g->nnodes; v++)
        if (g->is_proc[v])
            tot_of_comp[comp[v]] += 1;
    for (uint32_t c = 0; c < ncomp; c++) {
        for (uint32_t k = by_comp->off[c]; k < by_comp->off[c + 1]; k++) {
            const ext_edge *edge = &g->edges[by_comp->adj[k]];
            uint32_t w = edge->to;
            if (comp[w] == c || edge->from == g->root)
                continue;
            double in = calls_in[comp[w]];
            double share = edge->is_call ? (in > 0 ? edge->weight / in : 0) : 1.0;
            tot_of_comp[c] += share * tot_of_comp[comp[w]];
        }
    }
    free(calls_in);
}

/* Distinct procedures reachable from component c (its own included), by a
 * search over the condensation; returns -1 when the budget runs out. */
static double procs_reached_from(const ext_graph *g, const uint32_t *comp, const mt_csr *by_comp,
                                 const uint32_t *procs_in_comp, uint32_t c, uint32_t *stamp, uint32_t *stack,
                                 uint64_t *budget)
{
    uint32_t sp = 0;
    double reached = 0;
    stack[sp++] = c;
    stamp[c] = c + 1;
    while (sp) {
        if (*budget == 0)
            return -1;
        uint32_t d = stack[--sp];
        reached += procs_in_comp[d];
        uint32_t span = by_comp->off[d + 1] - by_comp->off[d];
        *budget -= *budget > span ? span + 1 : *budget;
        for (uint32_t k = by_comp->off[d]; k < by_comp->off[d + 1]; k++) {
            uint32_t e = comp[g->edges[by_comp->adj[k]].to];
            if (stamp[e] != c + 1) {
                stamp[e] = c + 1;
                stack[sp++] = e;
            }
        }
    }
    return reached;
}

/* TDES for every node; returns how many were left uncomputed. */
static uint32_t compute_tdes(const ext_graph *g, const uint32_t *comp, const mt_csr *by_comp, const uint32_t *idom,
                             const mt_domtree *dt, const uint8_t *estimable, double *tdes)
{
    uint32_t n = g->nnodes, ncomp = by_comp->n, skipped = 0;
    /* Estimable nodes: procedures in the dominator subtree. */
    uint32_t *procs_below = mt_xcalloc(n, sizeof *procs_below);
    for (uint32_t i = n; i-- > 0;) {
        uint32_t v = dt->order[i];
        procs_below[v] += g->is_proc[v];
        if (idom[v] != MT_NONE)
            procs_below[idom[v]] += procs_below[v];
    }
    uint32_t *procs_in_comp = mt_xcalloc(ncomp, sizeof *procs_in_comp);
    for (uint32_t v = 0; v < n; v++)
        procs_in_comp[comp[v]] += g->is_proc[v];
    /* Components whose reach must be searched: those of non-estimable
     * nodes.  Searched callees-first (increasing component number), so a
     * budget spent on a huge graph leaves the figures of the many small
     * subgraphs computed and only those of the top-level nodes missing. */
    enum { NOT_NEEDED = -3, NOT_SEARCHED = -2 };
    double *reached = mt_xmalloc(((size_t)ncomp + 1) * sizeof *reached);
    for (uint32_t c = 0; c < ncomp; c++)
        reached[c] = NOT_NEEDED;
    for (uint32_t x = 0; x < n; x++)
        if (x != g->root && idom[x] != MT_NONE && !estimable[x])
            reached[comp[x]] = NOT_SEARCHED;
    uint32_t *stamp = mt_xcalloc(ncomp, sizeof *stamp);
    uint32_t *stack = mt_xmalloc(((size_t)ncomp + 1) * sizeof *stack);
    uint64_t budget = TDES_WORK_BUDGET;
    for (uint32_t c = 0; c < ncomp; c++)
        if (reached[c] == NOT_SEARCHED)
            reached[c] = procs_reached_from(g, comp, by_comp, procs_in_comp, c, stamp, stack, &budget);
    for (uint32_t x = 0; x < n; x++) {
        double self = g->is_proc[x] ? 0 : 1; /* a procedure is among what it reaches */
        tdes[x] = -1;
        if (x == g->root || idom[x] == MT_NONE)
            continue;
        if (estimable[x])
            tdes[x] = self + procs_below[x];
        else if (reached[comp[x]] >= 0)
            tdes[x] = self + reached[comp[x]];
        else
            skipped++;
    }
    free(procs_below);
    free(procs_in_comp);
    free(reached);
    free(stamp);
    free(stack);
    return skipped;
}

static void store_results(mt_program *prog, const ext_graph *g, const uint8_t *estimable, const uint32_t *comp,
                          const double *tot_of_comp, const double *tdes)
{
    for (uint32_t p = 0; p < prog->nprocs; p++) {
        mt_procedure *proc = &prog->procs[p];
        bool plt = proc->is_plt && !proc->known_import;
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

/* Nothing is estimable and no figure is known (the graph could not be built). */
static void store_unknown(mt_program *prog)
{
    for (uint32_t p = 0; p < prog->nprocs; p++) {
        mt_procedure *proc = &prog->procs[p];
        proc->estimable = false;
        proc->tot = 0;
        proc->tdes = -1;
        for (uint32_t l = 0; l < proc->nloops; l++) {
            proc->loops[l].estimable = false;
            proc->loops[l].tot = 0;
            proc->loops[l].tdes = -1;
        }
    }
}

void mt_compute_estimability(mt_program *prog, const uint64_t *site_counts, const uint64_t *entries)
{
    if (!fits_node_numbers(prog)) {
        mt_warn(prog, "estimability: too many procedures and loops, not computed");
        store_unknown(prog);
        return;
    }
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
    add_root_edges(&g, prog, comp, ncomp, site_counts ? entries : NULL); /* the root has no
                                                                           callers: components stay */

    build_adjacency(&g, &succ, false);
    build_adjacency(&g, &pred, true);
    uint32_t *idom = mt_xmalloc((size_t)n * sizeof *idom);
    mt_graph_dominators(&succ, &pred, g.root, idom);
    mt_csr_free(&succ);
    mt_csr_free(&pred);
    mt_domtree dt;
    mt_domtree_build(&dt, idom, n);

    uint8_t *estimable = mt_xcalloc(n, 1);
    double *tot_of_comp = mt_xmalloc(((size_t)ncomp + 1) * sizeof *tot_of_comp);
    double *tdes = mt_xmalloc((size_t)n * sizeof *tdes);
    mt_csr by_comp;
    edges_by_component(&g, comp, ncomp, &by_comp);
    mark_not_estimable(&g, idom, &dt, estimable);
    compute_tot(&g, comp, &by_comp, tot_of_comp);
    uint32_t skipped = compute_tdes(&g, comp, &by_comp, idom, &dt, estimable, tdes);
    if (skipped)
        mt_warn(prog, "estimability: TDES not computed for %u procedures and loops (work budget)", skipped);
    store_results(prog, &g, estimable, comp, tot_of_comp, tdes);

    free(estimable);
    free(tot_of_comp);
    free(tdes);
    free(idom);
    free(comp);
    mt_csr_free(&by_comp);
    mt_domtree_free(&dt);
    ext_graph_free(&g);
}
