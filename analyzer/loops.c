/* analyzer/loops.c — dominator tree, natural loops and irreducible regions
 * of one procedure's CFG.
 *
 * A natural loop is found from each back edge u→h where h dominates u; back
 * edges sharing a header make one loop, whose body is h plus every block that
 * reaches a back-edge tail without passing through h.
 *
 * Removing every natural back edge leaves an acyclic graph exactly when the
 * CFG is reducible; each cycle that remains (a non-trivial strongly connected
 * component) is an irreducible region: entered at several blocks, it has no
 * single place to start a timer, so it is reported as a loop with
 * `irreducible` set but never becomes an m-object.  A natural loop whose
 * header lies in such a component runs inside the region (the region's cycle
 * passes through that header), so the region's body also holds the blocks of
 * those loops; with that, loops of both kinds are nested or disjoint, and the
 * loop forest comes from containment alone.
 *
 * Blocks unreachable from the entry belong to no loop.  Everything is
 * iterative and near-linear per nesting level: procedures can have 100k
 * blocks and thousands of loops. */
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

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Everything mt_find_loops works with for one procedure. */
typedef struct {
    const mt_procedure *proc;
    uint32_t n;        /* blocks */
    cfg_graph g;
    mt_domtree dt;     /* over proc->blocks[].idom */
    uint8_t *reachable;/* from the entry block */
    uint32_t *mark;    /* per-block stamps, one fresh stamp per use */
    uint32_t stamp;
    uint32_t *stack;   /* n slots, scratch for walks */
} loop_ctx;

/* A loop under construction: its body as a sorted block list. */
typedef struct {
    uint32_t header;
    bool irreducible;
    uint32_t *blocks;
    uint32_t nblocks;
    uint32_t parent;   /* draft index */
} loop_draft;

typedef struct {
    loop_draft *items;
    size_t n, cap;
} draft_list;

static uint32_t next_stamp(loop_ctx *c)
{
    if (++c->stamp == 0) { /* wrapped: old stamps could collide */
        memset(c->mark, 0, (size_t)c->n * sizeof *c->mark);
        c->stamp = 1;
    }
    return c->stamp;
}

static void loop_ctx_init(loop_ctx *c, const mt_procedure *proc)
{
    memset(c, 0, sizeof *c);
    c->proc = proc;
    c->n = proc->nblocks;
    uint32_t n = c->n;
    uint32_t *idom = mt_xmalloc((size_t)n * sizeof *idom);
    for (uint32_t b = 0; b < n; b++)
        idom[b] = proc->blocks[b].idom < n ? proc->blocks[b].idom : MT_NONE;
    idom[0] = MT_NONE;
    mt_domtree_build(&c->dt, idom, n);
    /* Reachable = in the dominator tree rooted at the entry block; the other
     * roots of the forest are unreachable blocks (or stale idoms). */
    c->reachable = mt_xcalloc(n, 1);
    for (uint32_t b = 0; b < n; b++)
        c->reachable[b] = mt_domtree_dominates(&c->dt, 0, b);
    free(idom);
    cfg_graph_build(&c->g, proc);
    c->mark = mt_xcalloc(n, sizeof *c->mark);
    c->stack = mt_xmalloc((size_t)n * sizeof *c->stack);
}

static void loop_ctx_free(loop_ctx *c)
{
    mt_domtree_free(&c->dt);
    cfg_graph_free(&c->g);
    free(c->reachable);
    free(c->mark);
    free(c->stack);
}

/* u→h is a natural back edge: h dominates u (both reachable). */
static bool is_back_edge(const loop_ctx *c, uint32_t u, uint32_t h)
{
    return c->reachable[u] && c->reachable[h] && mt_domtree_dominates(&c->dt, h, u);
}

/* Body of the natural loop with header h: h plus every reachable block that
 * reaches a back-edge tail without passing through h.  The walk only visits
 * the body (and its predecessors' lists), so all loops cost
 * O(Σ body sizes), not O(blocks × loops). */
static loop_draft natural_loop(loop_ctx *c, uint32_t h)
{
    const mt_csr *pred = &c->g.pred;
    uint32_t stamp = next_stamp(c), sp = 0;
    uint32_t *body = NULL;
    size_t nbody = 0, cap = 0;
    c->mark[h] = stamp;
    MT_PUSH(body, nbody, cap, h);
    for (uint32_t k = pred->off[h]; k < pred->off[h + 1]; k++) {
        uint32_t u = pred->adj[k];
        if (c->mark[u] != stamp && is_back_edge(c, u, h)) {
            c->mark[u] = stamp;
            MT_PUSH(body, nbody, cap, u);
            c->stack[sp++] = u;
        }
    }
    while (sp) {
        uint32_t v = c->stack[--sp];
        for (uint32_t k = pred->off[v]; k < pred->off[v + 1]; k++) {
            uint32_t u = pred->adj[k];
            if (c->mark[u] != stamp && c->reachable[u]) {
                c->mark[u] = stamp;
                MT_PUSH(body, nbody, cap, u);
                c->stack[sp++] = u;
            }
        }
    }
    qsort(body, nbody, sizeof *body, cmp_u32);
    return (loop_draft){.header = h, .irreducible = false, .blocks = body, .nblocks = (uint32_t)nbody,
                        .parent = MT_NONE};
}

static void find_natural_loops(loop_ctx *c, draft_list *out, uint32_t *loop_of_header)
{
    const mt_csr *pred = &c->g.pred;
    for (uint32_t h = 0; h < c->n; h++) {
        loop_of_header[h] = MT_NONE;
        bool header = false;
        for (uint32_t k = pred->off[h]; k < pred->off[h + 1] && !header; k++)
            header = is_back_edge(c, pred->adj[k], h);
        if (!header)
            continue;
        loop_of_header[h] = (uint32_t)out->n;
        MT_PUSH(out->items, out->n, out->cap, natural_loop(c, h));
    }
}

/* The region's header: its lowest-address block entered from a reachable
 * block outside it (its blocks are sorted by address).  Only unreachable
 * blocks entering it would be odd CFGs; fall back to those, then to the first
 * block. */
static uint32_t region_header(loop_ctx *c, const loop_draft *d, uint32_t stamp)
{
    uint32_t fallback = MT_NONE;
    for (uint32_t i = 0; i < d->nblocks; i++) {
        uint32_t b = d->blocks[i];
        for (uint32_t k = c->g.pred.off[b]; k < c->g.pred.off[b + 1]; k++) {
            uint32_t u = c->g.pred.adj[k];
            if (c->mark[u] == stamp)
                continue;
            if (c->reachable[u])
                return b;
            if (fallback == MT_NONE)
                fallback = b;
        }
    }
    return fallback != MT_NONE ? fallback : d->blocks[0];
}

/* One irreducible region from the members of a component: those blocks plus
 * the bodies of the natural loops headed inside it. */
static loop_draft irreducible_region(loop_ctx *c, const uint32_t *members, uint32_t nmembers,
                                     const draft_list *natural, const uint32_t *loop_of_header)
{
    uint32_t stamp = next_stamp(c);
    uint32_t *body = NULL;
    size_t nbody = 0, cap = 0;
    for (uint32_t i = 0; i < nmembers; i++) {
        uint32_t b = members[i];
        if (c->mark[b] != stamp) {
            c->mark[b] = stamp;
            MT_PUSH(body, nbody, cap, b);
        }
    }
    for (uint32_t i = 0; i < nmembers; i++) {
        uint32_t l = loop_of_header[members[i]];
        if (l == MT_NONE)
            continue;
        const loop_draft *nat = &natural->items[l];
        for (uint32_t k = 0; k < nat->nblocks; k++)
            if (c->mark[nat->blocks[k]] != stamp) {
                c->mark[nat->blocks[k]] = stamp;
                MT_PUSH(body, nbody, cap, nat->blocks[k]);
            }
    }
    qsort(body, nbody, sizeof *body, cmp_u32);
    loop_draft d = {.irreducible = true, .blocks = body, .nblocks = (uint32_t)nbody, .parent = MT_NONE};
    d.header = region_header(c, &d, stamp);
    return d;
}

/* Cycles left after removing natural back edges: irreducible regions.
 * Edges out of unreachable blocks are dropped so those stay out of every
 * region. */
static void find_irreducible_regions(loop_ctx *c, draft_list *out, const uint32_t *loop_of_header)
{
    const mt_csr *succ = &c->g.succ;
    uint32_t n = c->n;
    size_t m = succ->off[n];
    uint32_t *from = mt_xmalloc((m + 1) * sizeof *from);
    uint32_t *to = mt_xmalloc((m + 1) * sizeof *to);
    size_t kept = 0;
    for (uint32_t u = 0; u < n; u++)
        for (uint32_t k = succ->off[u]; k < succ->off[u + 1]; k++) {
            uint32_t v = succ->adj[k];
            if (!c->reachable[u] || is_back_edge(c, u, v))
                continue;
            from[kept] = u;
            to[kept] = v;
            kept++;
        }
    mt_csr forward;
    mt_csr_build(&forward, n, from, to, kept);
    free(from);
    free(to);
    uint32_t *comp = mt_xmalloc((size_t)n * sizeof *comp);
    uint32_t ncomp = mt_graph_sccs(&forward, comp);
    mt_csr_free(&forward);

    /* Members of each component, in address order (CSR keeps input order). */
    uint32_t *ids = mt_xmalloc((size_t)n * sizeof *ids);
    for (uint32_t b = 0; b < n; b++)
        ids[b] = b;
    mt_csr members;
    mt_csr_build(&members, ncomp, comp, ids, n);
    free(ids);
    free(comp);
    /* Natural drafts are only read while regions are appended to `out`, so
     * regions go to a separate list first (MT_PUSH may move out->items). */
    draft_list regions = {0};
    for (uint32_t k = 0; k < ncomp; k++) {
        uint32_t size = members.off[k + 1] - members.off[k];
        if (size < 2)
            continue; /* a self-loop is a natural loop, its edge already removed */
        loop_draft d = irreducible_region(c, &members.adj[members.off[k]], size, out, loop_of_header);
        MT_PUSH(regions.items, regions.n, regions.cap, d);
    }
    mt_csr_free(&members);
    for (size_t i = 0; i < regions.n; i++)
        MT_PUSH(out->items, out->n, out->cap, regions.items[i]);
    free(regions.items);
}

/* Sort keys: nesting places larger bodies first (an enclosing loop is
 * strictly larger than what it contains); the forest's preorder takes
 * siblings by header.  Ties fall back to the draft index, for determinism. */
typedef struct {
    uint32_t primary, header, index;
} draft_key;

static int cmp_draft_key(const void *a, const void *b)
{
    const draft_key *x = a, *y = b;
    if (x->primary != y->primary)
        return x->primary < y->primary ? -1 : 1;
    if (x->header != y->header)
        return x->header < y->header ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Draft indices sorted by decreasing size (by_size) or by header. */
static uint32_t *sorted_drafts(const loop_draft *drafts, size_t n, bool by_size)
{
    draft_key *keys = mt_xmalloc((n ? n : 1) * sizeof *keys);
    for (size_t i = 0; i < n; i++)
        keys[i] = (draft_key){by_size ? UINT32_MAX - drafts[i].nblocks : 0, drafts[i].header, (uint32_t)i};
    qsort(keys, n, sizeof *keys, cmp_draft_key);
    uint32_t *out = mt_xmalloc((n ? n : 1) * sizeof *out);
    for (size_t i = 0; i < n; i++)
        out[i] = keys[i].index;
    free(keys);
    return out;
}

/* Nesting by containment: loops are nested or disjoint, so placing them
 * from largest to smallest, a loop's parent is the innermost loop placed so
 * far that contains its header.  `innermost` ends as each block's innermost
 * loop (draft index). */
static void nest_loops(loop_draft *drafts, size_t n, uint32_t nblocks, uint32_t *innermost)
{
    uint32_t *by_size = sorted_drafts(drafts, n, true);
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

/* Drafts parents-before-children: a preorder of the loop forest, siblings
 * (and outermost loops) by header address. */
static uint32_t *preorder_of_forest(const loop_draft *drafts, size_t n)
{
    size_t slots = n ? n : 1;
    uint32_t *by_header = sorted_drafts(drafts, n, false);
    /* Children lists, node n standing for "no parent"; the CSR keeps the
     * header order of its input. */
    uint32_t *from = mt_xmalloc(slots * sizeof *from);
    for (size_t i = 0; i < n; i++) {
        uint32_t p = drafts[by_header[i]].parent;
        from[i] = p == MT_NONE ? (uint32_t)n : p;
    }
    mt_csr children;
    mt_csr_build(&children, (uint32_t)n + 1, from, by_header, n);
    free(from);
    free(by_header);

    uint32_t *order = mt_xmalloc(slots * sizeof *order);
    uint32_t *stack = mt_xmalloc(slots * sizeof *stack);
    size_t count = 0, sp = 0;
    /* Push children in reverse so the lowest header pops first. */
    for (uint32_t k = children.off[n + 1]; k-- > children.off[n];)
        stack[sp++] = children.adj[k];
    while (sp) {
        uint32_t v = stack[--sp];
        order[count++] = v;
        for (uint32_t k = children.off[v + 1]; k-- > children.off[v];)
            stack[sp++] = children.adj[k];
    }
    free(stack);
    mt_csr_free(&children);
    return order;
}

/* Entry, exit and back edges of a finished loop.  Entry edges come from
 * outside the body (for a natural loop reachable ones all go to the header;
 * an irreducible region has several targets); exit edges include those that
 * leave the procedure (return, tail call, jump to foo.cold).  A back edge goes
 * from the body to the header, or for a region to any of its entry blocks. */
static void collect_loop_edges(loop_ctx *c, mt_loop *loop)
{
    const mt_procedure *proc = c->proc;
    const mt_csr *pred = &c->g.pred;
    uint32_t body = next_stamp(c);
    for (uint32_t k = 0; k < loop->nblocks; k++)
        c->mark[loop->blocks[k]] = body;
    uint32_t *entry = NULL, *exit = NULL, *back = NULL;
    size_t ne = 0, ce = 0, nx = 0, cx = 0, nb = 0, cb = 0;
    /* Entry blocks are flagged in `stack` (free scratch here), to
     * recognize a region's back edges. */
    uint32_t *entered = c->stack;
    for (uint32_t k = 0; k < loop->nblocks; k++) {
        uint32_t b = loop->blocks[k];
        entered[b] = 0;
        for (uint32_t j = pred->off[b]; j < pred->off[b + 1]; j++)
            if (c->mark[pred->adj[j]] != body) {
                MT_PUSH(entry, ne, ce, pred->eid[j]);
                entered[b] = 1;
            }
    }
    for (uint32_t k = 0; k < loop->nblocks; k++) {
        const mt_block *blk = &proc->blocks[loop->blocks[k]];
        uint64_t end = (uint64_t)blk->first_succ + blk->nsucc;
        for (uint64_t e = blk->first_succ; e < end && e < proc->nedges; e++) {
            uint32_t dst = proc->edges[e].dst;
            if (dst >= c->n || c->mark[dst] != body)
                MT_PUSH(exit, nx, cx, (uint32_t)e);
            else if (dst == loop->header || (loop->irreducible && entered[dst]))
                MT_PUSH(back, nb, cb, (uint32_t)e);
        }
    }
    if (ne > 1)
        qsort(entry, ne, sizeof *entry, cmp_u32);
    loop->entry_edges = entry;
    loop->nentry_edges = (uint32_t)ne;
    loop->exit_edges = exit;
    loop->nexit_edges = (uint32_t)nx;
    loop->back_edges = back;
    loop->nback_edges = (uint32_t)nb;
}

void mt_free_loops(mt_procedure *proc)
{
    for (uint32_t i = 0; i < proc->nloops; i++) {
        mt_loop *l = &proc->loops[i];
        free(l->blocks);
        free(l->entry_edges);
        free(l->exit_edges);
        free(l->back_edges);
    }
    free(proc->loops);
    proc->loops = NULL;
    proc->nloops = 0;
}

/* Turn the nested drafts into proc->loops (preorder) and set each block's
 * and call site's innermost loop. */
static void store_loops(loop_ctx *c, mt_procedure *proc, loop_draft *drafts, size_t n, const uint32_t *innermost)
{
    uint32_t *order = preorder_of_forest(drafts, n);
    uint32_t *new_index = mt_xmalloc((n ? n : 1) * sizeof *new_index);
    for (size_t i = 0; i < n; i++)
        new_index[order[i]] = (uint32_t)i;
    proc->loops = mt_xcalloc(n ? n : 1, sizeof *proc->loops);
    proc->nloops = (uint32_t)n;
    for (size_t i = 0; i < n; i++) {
        loop_draft *d = &drafts[order[i]];
        mt_loop *l = &proc->loops[i];
        l->header = d->header;
        l->irreducible = d->irreducible;
        l->parent = d->parent == MT_NONE ? MT_NONE : new_index[d->parent];
        l->depth = l->parent == MT_NONE ? 1 : proc->loops[l->parent].depth + 1; /* parent stored first */
        l->blocks = d->blocks;
        l->nblocks = d->nblocks;
        l->estimable = false;
        l->tot = 0;
        l->tdes = -1;
        collect_loop_edges(c, l);
    }
    for (uint32_t b = 0; b < proc->nblocks; b++)
        proc->blocks[b].loop = innermost[b] == MT_NONE ? MT_NONE : new_index[innermost[b]];
    for (uint32_t k = 0; k < proc->ncalls; k++)
        if (proc->calls[k].block < proc->nblocks)
            proc->calls[k].loop = proc->blocks[proc->calls[k].block].loop;
    free(new_index);
    free(order);
}

void mt_find_loops(mt_procedure *proc)
{
    mt_free_loops(proc); /* recomputing must not leak the previous forest */
    for (uint32_t b = 0; b < proc->nblocks; b++)
        proc->blocks[b].loop = MT_NONE;
    for (uint32_t k = 0; k < proc->ncalls; k++)
        proc->calls[k].loop = MT_NONE;
    if (proc->nblocks == 0)
        return;
    loop_ctx c;
    loop_ctx_init(&c, proc);
    draft_list drafts = {0};
    uint32_t *loop_of_header = mt_xmalloc((size_t)c.n * sizeof *loop_of_header);
    find_natural_loops(&c, &drafts, loop_of_header);
    find_irreducible_regions(&c, &drafts, loop_of_header);
    free(loop_of_header);

    uint32_t *innermost = mt_xmalloc((size_t)c.n * sizeof *innermost);
    nest_loops(drafts.items, drafts.n, c.n, innermost);
    store_loops(&c, proc, drafts.items, drafts.n, innermost);
    free(innermost);
    free(drafts.items); /* block lists now belong to proc->loops */
    loop_ctx_free(&c);
}
