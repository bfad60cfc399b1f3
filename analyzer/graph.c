/* analyzer/graph.c — directed-graph algorithms shared by the CFG stage
 * (dominators, loops) and the call-graph stage (SCCs, estimability).
 * All traversals are iterative: procedures can have 100k blocks and call
 * chains can be deep, so recursion could overflow the stack. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void mt_csr_build(mt_csr *g, uint32_t n, const uint32_t *from, const uint32_t *to, size_t m)
{
    g->n = n;
    g->off = mt_xcalloc((size_t)n + 1, sizeof *g->off);
    g->adj = mt_xmalloc((m ? m : 1) * sizeof *g->adj);
    g->eid = mt_xmalloc((m ? m : 1) * sizeof *g->eid);
    for (size_t i = 0; i < m; i++)
        g->off[from[i] + 1]++;
    for (uint32_t v = 0; v < n; v++)
        g->off[v + 1] += g->off[v];
    uint32_t *fill = mt_xmalloc(((size_t)n + 1) * sizeof *fill);
    memcpy(fill, g->off, ((size_t)n + 1) * sizeof *fill);
    for (size_t i = 0; i < m; i++) {
        uint32_t slot = fill[from[i]]++;
        g->adj[slot] = to[i];
        g->eid[slot] = (uint32_t)i;
    }
    free(fill);
}

void mt_csr_free(mt_csr *g)
{
    free(g->off);
    free(g->adj);
    free(g->eid);
    memset(g, 0, sizeof *g);
}

/* Reverse postorder of the nodes reachable from `root`; returns their count. */
static uint32_t reverse_postorder(const mt_csr *succ, uint32_t root, uint32_t *order)
{
    uint32_t n = succ->n;
    uint8_t *seen = mt_xcalloc(n, 1);
    uint32_t *stack = mt_xmalloc((size_t)n * sizeof *stack);
    uint32_t *next = mt_xmalloc((size_t)n * sizeof *next); /* next successor to visit */
    uint32_t sp = 0, post = 0;
    stack[sp++] = root;
    seen[root] = 1;
    next[root] = succ->off[root];
    while (sp) {
        uint32_t v = stack[sp - 1];
        if (next[v] < succ->off[v + 1]) {
            uint32_t w = succ->adj[next[v]++];
            if (!seen[w]) {
                seen[w] = 1;
                next[w] = succ->off[w];
                stack[sp++] = w;
            }
        } else {
            order[post++] = v;
            sp--;
        }
    }
    for (uint32_t i = 0; i < post / 2; i++) {
        uint32_t t = order[i];
        order[i] = order[post - 1 - i];
        order[post - 1 - i] = t;
    }
    free(seen);
    free(stack);
    free(next);
    return post;
}

/* Cooper, Harvey & Kennedy, "A Simple, Fast Dominance Algorithm" (2001):
 * iterate idom over reverse postorder until stable, intersecting along the
 * partial dominator tree by reverse-postorder number. */
void mt_graph_dominators(const mt_csr *succ, const mt_csr *pred, uint32_t root, uint32_t *idom)
{
    uint32_t n = succ->n;
    uint32_t *order = mt_xmalloc((size_t)n * sizeof *order);
    uint32_t *rpo = mt_xmalloc((size_t)n * sizeof *rpo);
    uint32_t count = reverse_postorder(succ, root, order);
    for (uint32_t v = 0; v < n; v++) {
        idom[v] = MT_NONE;
        rpo[v] = MT_NONE;
    }
    for (uint32_t i = 0; i < count; i++)
        rpo[order[i]] = i;
    idom[root] = root;
    for (bool changed = true; changed;) {
        changed = false;
        for (uint32_t i = 1; i < count; i++) {
            uint32_t v = order[i], new_idom = MT_NONE;
            for (uint32_t k = pred->off[v]; k < pred->off[v + 1]; k++) {
                uint32_t p = pred->adj[k];
                if (idom[p] == MT_NONE)
                    continue;
                if (new_idom == MT_NONE) {
                    new_idom = p;
                    continue;
                }
                uint32_t a = p, b = new_idom;
                while (a != b) {
                    while (rpo[a] > rpo[b])
                        a = idom[a];
                    while (rpo[b] > rpo[a])
                        b = idom[b];
                }
                new_idom = a;
            }
            if (new_idom != idom[v]) {
                idom[v] = new_idom;
                changed = true;
            }
        }
    }
    idom[root] = MT_NONE;
    free(order);
    free(rpo);
}

/* Tarjan's algorithm, iterative.  Components are numbered in the order
 * Tarjan completes them, which is a reverse topological order: every edge
 * between components goes from a higher number to a lower one. */
uint32_t mt_graph_sccs(const mt_csr *succ, uint32_t *comp)
{
    uint32_t n = succ->n;
    uint32_t *index = mt_xmalloc((size_t)n * sizeof *index);
    uint32_t *low = mt_xmalloc((size_t)n * sizeof *low);
    uint32_t *next = mt_xmalloc((size_t)n * sizeof *next);
    uint32_t *call = mt_xmalloc((size_t)n * sizeof *call);  /* DFS stack */
    uint32_t *stack = mt_xmalloc((size_t)n * sizeof *stack); /* Tarjan stack */
    uint8_t *on_stack = mt_xcalloc(n, 1);
    uint32_t counter = 0, ncomp = 0, sp = 0;
    for (uint32_t v = 0; v < n; v++)
        index[v] = MT_NONE;
    for (uint32_t start = 0; start < n; start++) {
        if (index[start] != MT_NONE)
            continue;
        uint32_t csp = 0;
        call[csp++] = start;
        index[start] = low[start] = counter++;
        next[start] = succ->off[start];
        stack[sp++] = start;
        on_stack[start] = 1;
        while (csp) {
            uint32_t v = call[csp - 1];
            if (next[v] < succ->off[v + 1]) {
                uint32_t w = succ->adj[next[v]++];
                if (index[w] == MT_NONE) {
                    index[w] = low[w] = counter++;
                    next[w] = succ->off[w];
                    stack[sp++] = w;
                    on_stack[w] = 1;
                    call[csp++] = w;
                } else if (on_stack[w] && index[w] < low[v]) {
                    low[v] = index[w];
                }
                continue;
            }
            csp--;
            if (csp && low[v] < low[call[csp - 1]])
                low[call[csp - 1]] = low[v];
            if (low[v] == index[v]) {
                uint32_t w;
                do {
                    w = stack[--sp];
                    on_stack[w] = 0;
                    comp[w] = ncomp;
                } while (w != v);
                ncomp++;
            }
        }
    }
    free(index);
    free(low);
    free(next);
    free(call);
    free(stack);
    free(on_stack);
    return ncomp;
}

void mt_domtree_build(mt_domtree *t, const uint32_t *idom, uint32_t n)
{
    uint32_t *parent = mt_xmalloc(((size_t)n ? n : 1) * sizeof *parent);
    uint32_t *child = mt_xmalloc(((size_t)n ? n : 1) * sizeof *child);
    size_t m = 0;
    for (uint32_t v = 0; v < n; v++)
        if (idom[v] != MT_NONE) {
            parent[m] = idom[v];
            child[m] = v;
            m++;
        }
    mt_csr_build(&t->children, n, parent, child, m);
    free(parent);
    free(child);
    t->pre = mt_xmalloc(((size_t)n ? n : 1) * sizeof *t->pre);
    t->post = mt_xmalloc(((size_t)n ? n : 1) * sizeof *t->post);
    t->order = mt_xmalloc(((size_t)n ? n : 1) * sizeof *t->order);
    for (uint32_t v = 0; v < n; v++)
        t->pre[v] = t->post[v] = MT_NONE;
    uint32_t *stack = mt_xmalloc(((size_t)n ? n : 1) * sizeof *stack);
    uint32_t *next = mt_xmalloc(((size_t)n ? n : 1) * sizeof *next);
    uint32_t pre = 0, post = 0;
    for (uint32_t r = 0; r < n; r++) {
        if (idom[r] != MT_NONE || t->pre[r] != MT_NONE)
            continue;
        uint32_t sp = 0;
        stack[sp++] = r;
        next[r] = t->children.off[r];
        t->order[pre] = r;
        t->pre[r] = pre++;
        while (sp) {
            uint32_t v = stack[sp - 1];
            if (next[v] < t->children.off[v + 1]) {
                uint32_t c = t->children.adj[next[v]++];
                next[c] = t->children.off[c];
                t->order[pre] = c;
                t->pre[c] = pre++;
                stack[sp++] = c;
            } else {
                t->post[v] = post++;
                sp--;
            }
        }
    }
    free(stack);
    free(next);
}

void mt_domtree_free(mt_domtree *t)
{
    mt_csr_free(&t->children);
    free(t->pre);
    free(t->post);
    free(t->order);
}

bool mt_domtree_dominates(const mt_domtree *t, uint32_t a, uint32_t b)
{
    return t->pre[a] <= t->pre[b] && t->post[b] <= t->post[a];
}
