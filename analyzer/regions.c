/* analyzer/regions.c — single-entry regions of a procedure, so that a large
 * procedure can be timed in pieces (MTOOL's conclusion: "large loop-free
 * procedures partitioned into several m-objects").
 *
 * Cut points.  The exit blocks are those with an edge that leaves the
 * procedure (a return, a tail call).  The blocks that every path from the
 * entry to an exit passes through are the dominators of all exit blocks:
 * the chain of the dominator tree from the entry down to the exit blocks'
 * nearest common dominator.  Each block of the chain dominates the next one
 * and is post-dominated by it.  A cut point is such a block that lies in no
 * cycle (no loop, natural or irreducible), is no landing pad, and is not
 * re-entered from a split part (foo.cold).
 *
 * Regions.  For consecutive chosen cut points s and t, the region [s, t) is
 * every block dominated by s and not by t; the last region, [s, -), every
 * block dominated by s.  Because s and t lie on no cycle and t
 * post-dominates s, a region is entered only at s (every edge into t comes
 * from [s, t), and no edge goes back), and it is left only by edges into t,
 * by leaving the procedure (the last region only), or into a block that
 * cannot reach an exit (abort paths that a later region shares: the timer
 * is stopped on that edge, and the process dies there).  Timers thus start
 * on the edges into s and stop on the edges leaving the region, as a loop's.
 *
 * Split parts.  A jump into foo.cold and the blocks foo.cold jumps back to
 * must lie in one region (the part runs inside it), and in the last one
 * when foo.cold itself leaves the procedure: cut points that would separate
 * them are dropped.
 *
 * Calls that return twice (setjmp, vfork, ...): the block after one is
 * entered again by longjmp, never through its edge: it is no cut point.
 *
 * Stack depth.  The timer runtime takes a frame whose %rsp lies below a new
 * start's (a loop's, an outside call's, a callee's entry) for one left by
 * longjmp or an exception, and closes it.  A region's frame records %rsp at
 * its cut point, so everything nested in it must start at least as deep:
 * a cut point is kept only when the stack height (bytes below the entry
 * %rsp, from the blocks' net pushes) is known there and at every loop
 * header, call site and cut point it dominates, and none of those is
 * shallower (`call f; add $N,%rsp; call g` cannot be cut after f).
 *
 * A procedure that never returns, or whose entry lies in a loop, has no
 * cut points; one with a single cut point has one region, itself. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Whether edge e of procedure pi leaves it for good: a return, a tail call,
 * a jump to another procedure's code (not into its own split part). */
static bool leaves(const mt_program *prog, uint32_t pi, const mt_edge *e, uint32_t *part)
{
    *part = MT_NONE;
    if (e->dst != MT_NONE || e->kind == MT_EDGE_EXCEPTION || e->kind == MT_EDGE_CALL_RETURN)
        return false;
    if (e->kind == MT_EDGE_RETURN || e->target == 0)
        return true;
    uint32_t q = mt_procedure_at(prog, e->target);
    if (q != MT_NONE && q != pi && prog->procs[q].parent == pi &&
        !(e->kind == MT_EDGE_TAIL_CALL && prog->procs[q].entry == e->target)) {
        *part = q;
        return false;
    }
    return true;
}

/* Block of procedure p starting at addr, or MT_NONE. */
static uint32_t block_starting(const mt_procedure *p, uint64_t addr)
{
    uint32_t b = mt_block_at(p, addr);
    return b != MT_NONE && p->blocks[b].start == addr ? b : MT_NONE;
}

/* What split part q does from procedure pi's point of view: the blocks of
 * pi it jumps back to (appended to *back) and whether it leaves pi
 * (returns, tail calls, anything unknown). */
static bool part_behaviour(const mt_program *prog, uint32_t pi, uint32_t q, uint32_t **back,
                           size_t *nback, size_t *cap)
{
    const mt_procedure *part = &prog->procs[q], *p = &prog->procs[pi];
    bool leaves_pi = !part->resolved;
    for (uint32_t e = 0; e < part->nedges; e++) {
        const mt_edge *edge = &part->edges[e];
        if (edge->dst != MT_NONE || edge->kind == MT_EDGE_CALL_RETURN ||
            edge->kind == MT_EDGE_EXCEPTION)
            continue;
        uint32_t r = edge->target ? mt_procedure_at(prog, edge->target) : MT_NONE;
        uint32_t b = r == pi && edge->kind != MT_EDGE_RETURN ? block_starting(p, edge->target)
                                                             : MT_NONE;
        if (b == MT_NONE || b == 0)
            leaves_pi = true; /* returns, tail calls, other parts, pi's entry */
        else
            MT_PUSH(*back, *nback, *cap, b);
    }
    return leaves_pi;
}

/* setjmp and its kin, as GCC's returns_twice list has them. */
static bool returns_twice(const char *name)
{
    static const char *const names[] = {"setjmp", "_setjmp", "__setjmp", "sigsetjmp",
                                        "__sigsetjmp", "savectx", "vfork", "getcontext",
                                        "qsetjmp"};
    size_t len = strcspn(name, "@");
    for (size_t k = 0; k < sizeof names / sizeof *names; k++)
        if (strlen(names[k]) == len && strncmp(name, names[k], len) == 0)
            return true;
    return false;
}

#define HEIGHT_UNSET INT32_MAX   /* not reached */
#define HEIGHT_UNKNOWN INT32_MIN /* paths disagree, or %rsp set otherwise: below any height */

/* Stack height at each block's start (HEIGHT_UNKNOWN when paths disagree
 * or a block sets %rsp otherwise; HEIGHT_UNSET when unreachable). */
static void stack_heights(const mt_procedure *p, int32_t *h)
{
    uint32_t n = p->nblocks, *work = mt_xmalloc(((size_t)n + 1) * sizeof *work), nwork = 0;
    bool *queued = mt_xcalloc(n + 1, sizeof *queued);
    for (uint32_t b = 0; b < n; b++)
        h[b] = HEIGHT_UNSET;
    h[0] = 0;
    work[nwork++] = 0;
    queued[0] = true;
    while (nwork) {
        uint32_t b = work[--nwork];
        queued[b] = false;
        const mt_block *blk = &p->blocks[b];
        int64_t out = h[b] == HEIGHT_UNKNOWN || blk->rsp_delta == MT_RSP_UNKNOWN
                          ? HEIGHT_UNKNOWN : (int64_t)h[b] + blk->rsp_delta;
        if (out != HEIGHT_UNKNOWN && (out < -65536 || out > 65536))
            out = HEIGHT_UNKNOWN;
        for (uint32_t e = blk->first_succ; e < blk->first_succ + blk->nsucc; e++) {
            uint32_t d = p->edges[e].dst;
            if (d >= n || h[d] == HEIGHT_UNKNOWN || h[d] == out)
                continue;
            h[d] = h[d] == HEIGHT_UNSET ? (int32_t)out : HEIGHT_UNKNOWN;
            if (!queued[d]) {
                queued[d] = true;
                work[nwork++] = d;
            }
        }
    }
    free(work);
    free(queued);
}

/* For every block, the least stack height at which something nested in a
 * region may start in its dominator subtree: loop entries (the header's
 * height), call sites, cut points (chain[] marks them); HEIGHT_UNKNOWN
 * when one of them is not known, HEIGHT_UNSET when there is none. */
static void least_nested_height(const mt_procedure *p, const mt_domtree *dt, const int32_t *h,
                                const bool *chain, int32_t *least)
{
    uint32_t n = p->nblocks;
    bool *header = mt_xcalloc(n + 1, sizeof *header);
    for (uint32_t l = 0; l < p->nloops; l++)
        header[p->loops[l].header] = true;
    for (uint32_t b = 0; b < n; b++) {
        const mt_block *blk = &p->blocks[b];
        int32_t v = HEIGHT_UNSET;
        if (header[b] || chain[b])
            v = h[b];
        if (h[b] != HEIGHT_UNSET && (blk->term == MT_TERM_CALL || blk->term == MT_TERM_ICALL ||
                                     blk->term == MT_TERM_NORETURN_CALL)) { /* unreachable: none */
            int32_t at_call = h[b] == HEIGHT_UNKNOWN || blk->rsp_delta == MT_RSP_UNKNOWN
                                  ? HEIGHT_UNKNOWN : h[b] + blk->rsp_delta;
            v = at_call < v ? at_call : v;
        }
        least[b] = v;
    }
    for (uint32_t i = n; i-- > 0;) { /* children before parents */
        uint32_t v = dt->order[i];
        uint32_t up = p->blocks[v].idom;
        if (up != MT_NONE && least[v] < least[up])
            least[up] = least[v];
    }
    free(header);
}

uint32_t mt_region_cuts(const mt_program *prog, uint32_t pi, uint32_t **cuts)
{
    *cuts = NULL;
    const mt_procedure *p = &prog->procs[pi];
    if (p->is_plt || !p->resolved || p->parent != MT_NONE || p->nblocks == 0 ||
        p->blocks[0].loop != MT_NONE)
        return 0;
    uint32_t n = p->nblocks;
    uint32_t *idom = mt_xmalloc((size_t)n * sizeof *idom);
    for (uint32_t b = 0; b < n; b++)
        idom[b] = p->blocks[b].idom;
    mt_domtree dt;
    mt_domtree_build(&dt, idom, n);
    bool *excluded = mt_xcalloc(n, sizeof *excluded);
    uint32_t *split = NULL, *back = NULL; /* sources of jumps into split parts, their targets */
    size_t nsplit = 0, cap_split = 0, nback = 0, cap_back = 0;
    bool split_leaves = false;
    uint32_t lca = MT_NONE;
    for (uint32_t e = 0; e < p->nedges; e++) {
        const mt_edge *edge = &p->edges[e];
        uint32_t u = edge->src, part;
        if (u >= n || (u != 0 && idom[u] == MT_NONE))
            continue; /* unreachable */
        if (edge->kind == MT_EDGE_EXCEPTION && edge->dst != MT_NONE)
            excluded[edge->dst] = true; /* landing pads */
        bool exit = leaves(prog, pi, edge, &part);
        if (part != MT_NONE) {
            MT_PUSH(split, nsplit, cap_split, u);
            if (part_behaviour(prog, pi, part, &back, &nback, &cap_back)) {
                split_leaves = true;
                exit = true; /* the part returns on the procedure's behalf */
            }
        }
        if (!exit)
            continue;
        if (lca == MT_NONE)
            lca = u;
        while (!mt_domtree_dominates(&dt, lca, u))
            lca = idom[lca];
    }
    for (uint32_t k = 0; k < p->ncalls; k++) {
        const mt_call_site *c = &p->calls[k];
        if (c->block == MT_NONE || c->callee == MT_NONE || !returns_twice(prog->procs[c->callee].name))
            continue;
        const mt_block *blk = &p->blocks[c->block];
        for (uint32_t e = blk->first_succ; e < blk->first_succ + blk->nsucc; e++)
            if (p->edges[e].kind == MT_EDGE_CALL_RETURN && p->edges[e].dst < n)
                excluded[p->edges[e].dst] = true;
    }
    for (size_t k = 0; k < nback; k++) {
        excluded[back[k]] = true;
        MT_PUSH(split, nsplit, cap_split, back[k]);
    }
    uint32_t ncuts = 0;
    if (lca != MT_NONE) {
        uint32_t depth = 0;
        for (uint32_t b = lca; b != MT_NONE; b = idom[b])
            depth++;
        uint32_t *chain = mt_xmalloc((size_t)depth * sizeof *chain);
        for (uint32_t b = lca, k = depth; b != MT_NONE; b = idom[b])
            chain[--k] = b;
        bool *on_chain = mt_xcalloc(n + 1, sizeof *on_chain);
        for (uint32_t k = 0; k < depth; k++)
            on_chain[chain[k]] = true;
        int32_t *h = mt_xmalloc((size_t)n * sizeof *h), *least = mt_xmalloc((size_t)n * sizeof *least);
        stack_heights(p, h);
        least_nested_height(p, &dt, h, on_chain, least);
        *cuts = mt_xmalloc((size_t)depth * sizeof **cuts);
        for (uint32_t k = 0; k < depth; k++) {
            uint32_t s = chain[k];
            if (p->blocks[s].loop != MT_NONE || (k > 0 && excluded[s]))
                continue;
            if (k > 0 && (h[s] == HEIGHT_UNKNOWN || least[s] < h[s]))
                continue; /* something nested would start shallower (or unknown) */
            /* Split parts: their sources and targets on one side of s; all
             * dominated by the last cut when the part leaves the procedure. */
            size_t dominated = 0;
            for (size_t m = 0; m < nsplit; m++)
                dominated += mt_domtree_dominates(&dt, s, split[m]);
            if (k > 0 && dominated != nsplit && (dominated != 0 || split_leaves))
                continue;
            (*cuts)[ncuts++] = s;
        }
        free(chain);
        free(on_chain);
        free(h);
        free(least);
    }
    if (ncuts == 0) {
        free(*cuts);
        *cuts = NULL;
    }
    free(split);
    free(back);
    free(excluded);
    free(idom);
    mt_domtree_free(&dt);
    return ncuts;
}

void mt_region_of_blocks(const mt_procedure *p, const uint32_t *cuts, uint32_t ncuts,
                         uint32_t *region)
{
    enum { UNKNOWN = MT_NONE - 1 };
    uint32_t *stack = mt_xmalloc(((size_t)p->nblocks + 1) * sizeof *stack);
    for (uint32_t b = 0; b < p->nblocks; b++)
        region[b] = UNKNOWN;
    for (uint32_t k = 0; k < ncuts; k++)
        if (cuts[k] < p->nblocks)
            region[cuts[k]] = k;
    for (uint32_t b = 0; b < p->nblocks; b++) {
        /* Up the dominator tree to a block whose answer is known. */
        size_t sp = 0;
        uint32_t v = b;
        while (region[v] == UNKNOWN && p->blocks[v].idom != MT_NONE && sp < p->nblocks) {
            stack[sp++] = v;
            v = p->blocks[v].idom;
        }
        if (region[v] == UNKNOWN)
            region[v] = MT_NONE; /* the entry (not a cut), or an unreachable root */
        while (sp)
            region[stack[--sp]] = region[v];
    }
    free(stack);
}

void mt_region_blocks(const mt_procedure *p, uint32_t first, uint32_t end, bool *in)
{
    uint32_t cuts[2] = {first, end}, n = end == MT_NONE || end == first ? 1 : 2;
    uint32_t *region = mt_xmalloc(((size_t)p->nblocks + 1) * sizeof *region);
    mt_region_of_blocks(p, cuts, n, region);
    for (uint32_t b = 0; b < p->nblocks; b++)
        in[b] = region[b] == 0;
    free(region);
}
