/* analyzer/loops.c — dominator tree, natural loops and irreducible regions
 * of one procedure's CFG.
 *
 * A natural loop is found from each back edge u→h where h dominates u; back
 * edges sharing a header make one loop.  Removing every natural back edge
 * leaves an acyclic graph exactly when the CFG is reducible; each cycle that
 * remains (a non-trivial SCC) is an irreducible region: entered at several
 * blocks, it has no single place to start a timer, so it is reported as a
 * loop with `irreducible` set but never becomes an m-object. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Edges with a destination inside the procedure, as CSR successor and
 * predecessor lists (eid gives the mt_edge index). */
typedef struct {
    mt_csr succ, pred;
} cfg_graph;

static void cfg_graph_build(cfg_graph *g, const mt_procedure *proc)
{
    uint32_t *from = mt_xmalloc(((size_t)proc->nedges + 1) * sizeof *from);
    uint32_t *to = mt_xmalloc(((size_t)proc->nedges + 1) * sizeof *to);
    uint32_t *ids = mt_xmalloc(((size_t)proc->nedges + 1) * sizeof *ids);
    size_t m = 0;
    for (uint32_t e = 0; e < proc->nedges; e++) {
        const mt_edge *edge = &proc->edges[e];
        if (edge->dst == MT_NONE || edge->src >= proc->nblocks || edge->dst >= proc->nblocks)
            continue;
        from[m] = edge->src;
        to[m] = edge->dst;
        ids[m] = e;
        m++;
    }
    mt_csr_build(&g->succ, proc->nblocks, from, to, m);
    mt_csr_build(&g->pred, proc->nblocks, to, from, m);
    /* Map the CSR's input-edge numbers back to mt_edge indices. */
    for (size_t k = 0; k < m; k++) {
        g->succ.eid[k] = ids[g->succ.eid[k]];
        g->pred.eid[k] = ids[g->pred.eid[k]];
    }
    free(from);
    free(to);
    free(ids);
}

static void cfg_graph_free(cfg_graph *g)
{
    mt_csr_free(&g->succ);
    mt_csr_free(&g->pred);
}

void mt_compute_dominators(mt_procedure *proc)
{
    if (proc->nblocks == 0)
        return;
    cfg_graph g;
    cfg_graph_build(&g, proc);
    uint32_t *idom = mt_xmalloc((size_t)proc->nblocks * sizeof *idom);
    mt_graph_dominators(&g.succ, &g.pred, 0, idom);
    for (uint32_t b = 0; b < proc->nblocks; b++)
        proc->blocks[b].idom = idom[b];
    free(idom);
    cfg_graph_free(&g);
}

/* A loop under construction: its body as a sorted block list. */
typedef struct {
    uint32_t header;
    bool irreducible;
    uint32_t *blocks;
    uint32_t nblocks;
    uint32_t parent;
} loop_draft;

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Body of the natural loop with header h: h plus every block that reaches
 * a back-edge tail without passing through h. */
static void natural_loop_body(const cfg_graph *g, const mt_domtree *dt, uint32_t h, uint32_t *mark,
                              uint32_t stamp, loop_draft *out)
{
    uint32_t n = g->succ.n, count = 0;
    uint32_t *stack = mt_xmalloc((size_t)n * sizeof *stack);
    uint32_t sp = 0;
    mark[h] = stamp;
    count++;
    for (uint32_t k = g->pred.off[h]; k < g->pred.off[h + 1]; k++) {
        uint32_t u = g->pred.adj[k];
        if (mt_domtree_dominates(dt, h, u) && mark[u] != stamp) {
            mark[u] = stamp;
            count++;
            stack[sp++] = u;
        }
    }
    while (sp) {
        uint32_t v = stack[--sp];
        for (uint32_t k = g->pred.off[v]; k < g->pred.off[v + 1]; k++) {
            uint32_t u = g->pred.adj[k];
            /* Unreachable predecessors are not part of any loop. */
            if (mark[u] != stamp && dt->pre[u] != MT_NONE && mt_domtree_dominates(dt, 0, u)) {
                mark[u] = stamp;
                count++;
                stack[sp++] = u;
            }
        }
    }
    free(stack);
    out->header = h;
    out->irreducible = false;
    out->blocks = mt_xmalloc((size_t)count * sizeof *out->blocks);
    out->nblocks = 0;
    for (uint32_t b = 0; b < n; b++)
        if (mark[b] == stamp)
            out->blocks[out->nblocks++] = b;
}

static bool is_back_edge(const mt_domtree *dt, uint32_t u, uint32_t h)
{
    return dt->pre[u] != MT_NONE && mt_domtree_dominates(dt, h, u);
}

/* Cycles left after removing natural back edges: irreducible regions. */
static void find_irreducible(const cfg_graph *g, const mt_domtree *dt, loop_draft **drafts,
                             size_t *ndrafts, size_t *cap)
{
    uint32_t n = g->succ.n;
    uint32_t *from = mt_xmalloc(((size_t)g->succ.off[n] + 1) * sizeof *from);
    uint32_t *to = mt_xmalloc(((size_t)g->succ.off[n] + 1) * sizeof *to);
    size_t m = 0;
    for (uint32_t u = 0; u < n; u++)
        for (uint32_t k = g->succ.off[u]; k < g->succ.off[u + 1]; k++) {
            uint32_t v = g->succ.adj[k];
            if (dt->pre[u] == MT_NONE || is_back_edge(dt, u, v))
                continue;
            from[m] = u;
            to[m] = v;
            m++;
        }
    mt_csr forward;
    mt_csr_build(&forward, n, from, to, m);
    free(from);
    free(to);
    uint32_t *comp = mt_xmalloc((size_t)n * sizeof *comp);
    uint32_t ncomp = mt_graph_sccs(&forward, comp);
    uint32_t *size = mt_xcalloc(ncomp, sizeof *size);
    for (uint32_t b = 0; b < n; b++)
        size[comp[b]]++;
    for (uint32_t c = 0; c < ncomp; c++) {
        if (size[c] < 2)
            continue; /* self-loops are natural back edges, already removed */
        loop_draft d = {.irreducible = true, .header = MT_NONE, .parent = MT_NONE};
        d.blocks = mt_xmalloc((size_t)size[c] * sizeof *d.blocks);
        for (uint32_t b = 0; b < n; b++) {
            if (comp[b] != c)
                continue;
            d.blocks[d.nblocks++] = b;
            bool entered_from_outside = b == 0;
            for (uint32_t k = g->pred.off[b]; k < g->pred.off[b + 1]; k++)
                if (comp[g->pred.adj[k]] != c)
                    entered_from_outside = true;
            if (entered_from_outside && d.header == MT_NONE)
                d.header = b; /* blocks are visited in address order */
        }
        if (d.header == MT_NONE)
            d.header = d.blocks[0];
        MT_PUSH(*drafts, *ndrafts, *cap, d);
    }
    free(size);
    free(comp);
    mt_csr_free(&forward);
}

/* Nesting by containment: process loops from largest to smallest; a loop's
 * parent is the innermost already-placed loop that contains its header. */
static void nest_loops(loop_draft *drafts, size_t n, uint32_t nblocks, uint32_t *innermost)
{
    uint32_t *by_size = mt_xmalloc((n ? n : 1) * sizeof *by_size);
    for (size_t i = 0; i < n; i++)
        by_size[i] = (uint32_t)i;
    /* Insertion sort by decreasing size, ties by header: n is small per procedure. */
    for (size_t i = 1; i < n; i++) {
        uint32_t x = by_size[i];
        size_t j = i;
        while (j > 0 && (drafts[by_size[j - 1]].nblocks < drafts[x].nblocks ||
                         (drafts[by_size[j - 1]].nblocks == drafts[x].nblocks &&
                          drafts[by_size[j - 1]].header > drafts[x].header))) {
            by_size[j] = by_size[j - 1];
            j--;
        }
        by_size[j] = x;
    }
    for (uint32_t b = 0; b < nblocks; b++)
        innermost[b] = MT_NONE;
    for (size_t i = 0; i < n; i++) {
        loop_draft *d = &drafts[by_size[i]];
        d->parent = innermost[d->header];
        for (uint32_t k = 0; k < d->nblocks; k++)
            innermost[d->blocks[k]] = by_size[i];
    }
    free(by_size);
}

/* Order drafts parents-before-children (preorder, siblings by header). */
static uint32_t *preorder_of_forest(const loop_draft *drafts, size_t n)
{
    uint32_t *order = mt_xmalloc((n ? n : 1) * sizeof *order);
    uint32_t *stack = mt_xmalloc((n ? n : 1) * sizeof *stack);
    uint8_t *placed = mt_xcalloc(n ? n : 1, 1);
    size_t count = 0, sp = 0;
    /* Children of `parent` pushed in decreasing header order so the
     * lowest-address sibling is popped first. */
    for (uint32_t parent = MT_NONE;;) {
        for (;;) {
            size_t best = n;
            for (size_t i = 0; i < n; i++)
                if (!placed[i] && drafts[i].parent == parent &&
                    (best == n || drafts[i].header > drafts[best].header))
                    best = i;
            if (best == n)
                break;
            placed[best] = 1;
            stack[sp++] = (uint32_t)best;
        }
        if (!sp)
            break;
        parent = stack[--sp];
        order[count++] = parent;
    }
    free(stack);
    free(placed);
    return order;
}

/* An irreducible region's entry: a body block with a predecessor outside. */
static bool is_entry_block(const mt_procedure *proc, const cfg_graph *g, uint32_t b, const uint32_t *mark,
                           uint32_t stamp)
{
    (void)proc;
    if (b == 0)
        return true;
    for (uint32_t j = g->pred.off[b]; j < g->pred.off[b + 1]; j++)
        if (mark[g->pred.adj[j]] != stamp)
            return true;
    return false;
}

static void collect_loop_edges(mt_procedure *proc, const cfg_graph *g, mt_loop *loop, uint32_t *mark,
                               uint32_t stamp)
{
    size_t ne = 0, ce = 0, nx = 0, cx = 0, nb = 0, cb = 0;
    for (uint32_t k = 0; k < loop->nblocks; k++)
        mark[loop->blocks[k]] = stamp;
    for (uint32_t k = 0; k < loop->nblocks; k++) {
        uint32_t b = loop->blocks[k];
        for (uint32_t j = g->pred.off[b]; j < g->pred.off[b + 1]; j++)
            if (mark[g->pred.adj[j]] != stamp)
                MT_PUSH(loop->entry_edges, ne, ce, g->pred.eid[j]);
        const mt_block *blk = &proc->blocks[b];
        for (uint32_t e = blk->first_succ; e < blk->first_succ + blk->nsucc && e < proc->nedges; e++) {
            uint32_t dst = proc->edges[e].dst;
            if (dst == MT_NONE || mark[dst] != stamp)
                MT_PUSH(loop->exit_edges, nx, cx, e);
            else if (dst == loop->header || (loop->irreducible && is_entry_block(proc, g, dst, mark, stamp)))
                MT_PUSH(loop->back_edges, nb, cb, e);
        }
    }
    if (ne > 1)
        qsort(loop->entry_edges, ne, sizeof *loop->entry_edges, cmp_u32);
    loop->nentry_edges = (uint32_t)ne;
    loop->nexit_edges = (uint32_t)nx;
    loop->nback_edges = (uint32_t)nb;
}

void mt_find_loops(mt_procedure *proc)
{
    uint32_t n = proc->nblocks;
    for (uint32_t b = 0; b < n; b++)
        proc->blocks[b].loop = MT_NONE;
    for (uint32_t c = 0; c < proc->ncalls; c++)
        proc->calls[c].loop = MT_NONE;
    if (n == 0)
        return;
    cfg_graph g;
    cfg_graph_build(&g, proc);
    uint32_t *idom = mt_xmalloc((size_t)n * sizeof *idom);
    for (uint32_t b = 0; b < n; b++)
        idom[b] = proc->blocks[b].idom;
    mt_domtree dt;
    mt_domtree_build(&dt, idom, n);
    free(idom);
    /* Only blocks reachable from the entry belong to the dominator tree
     * rooted at block 0; other roots of the forest are unreachable blocks. */
    for (uint32_t b = 1; b < n; b++)
        if (!mt_domtree_dominates(&dt, 0, b))
            dt.pre[b] = MT_NONE;

    uint32_t *mark = mt_xcalloc(n, sizeof *mark);
    uint32_t stamp = 0;
    loop_draft *drafts = NULL;
    size_t ndrafts = 0, cap = 0;
    for (uint32_t h = 0; h < n; h++) {
        if (dt.pre[h] == MT_NONE)
            continue;
        bool header = false;
        for (uint32_t k = g.pred.off[h]; k < g.pred.off[h + 1] && !header; k++)
            header = is_back_edge(&dt, g.pred.adj[k], h);
        if (!header)
            continue;
        loop_draft d = {.parent = MT_NONE};
        natural_loop_body(&g, &dt, h, mark, ++stamp, &d);
        MT_PUSH(drafts, ndrafts, cap, d);
    }
    find_irreducible(&g, &dt, &drafts, &ndrafts, &cap);

    uint32_t *innermost = mt_xmalloc((size_t)n * sizeof *innermost);
    nest_loops(drafts, ndrafts, n, innermost);
    uint32_t *order = preorder_of_forest(drafts, ndrafts);
    uint32_t *new_index = mt_xmalloc((ndrafts ? ndrafts : 1) * sizeof *new_index);
    for (size_t i = 0; i < ndrafts; i++)
        new_index[order[i]] = (uint32_t)i;

    proc->loops = mt_xcalloc(ndrafts ? ndrafts : 1, sizeof *proc->loops);
    proc->nloops = (uint32_t)ndrafts;
    for (size_t i = 0; i < ndrafts; i++) {
        loop_draft *d = &drafts[order[i]];
        mt_loop *l = &proc->loops[i];
        l->header = d->header;
        l->irreducible = d->irreducible;
        l->parent = d->parent == MT_NONE ? MT_NONE : new_index[d->parent];
        l->depth = l->parent == MT_NONE ? 1 : proc->loops[l->parent].depth + 1;
        l->blocks = d->blocks;
        l->nblocks = d->nblocks;
        l->estimable = false;
        l->tot = 0;
        l->tdes = -1;
        collect_loop_edges(proc, &g, l, mark, ++stamp);
    }
    for (uint32_t b = 0; b < n; b++)
        proc->blocks[b].loop = innermost[b] == MT_NONE ? MT_NONE : new_index[innermost[b]];
    for (uint32_t c = 0; c < proc->ncalls; c++)
        if (proc->calls[c].block < n)
            proc->calls[c].loop = proc->blocks[proc->calls[c].block].loop;

    free(new_index);
    free(order);
    free(innermost);
    free(drafts);
    free(mark);
    mt_domtree_free(&dt);
    cfg_graph_free(&g);
}
