/* rewriter/counters.c — which blocks need a probe: counts derived from flow.
 *
 * A block's count can often be computed from its neighbours' instead of
 * counted (Knuth's and Ball & Larus' observation that flow is conserved;
 * gcov counts a spanning tree's complement of edges).  mtool keeps one
 * counter slot per block but gives a *derived* block no probe: the counter
 * map carries its flow equation (rewriter.h, mt_counter_map_derive), and
 * every reader of merged counts sees the same block counts as before.
 *
 * Notes:
 * - Two rules, both sums of block counts (no edge counters, so no
 *   trampolines on taken edges):
 *     out-rule at A: every successor S of A is entered only from A, so
 *       count(A) = sum of count(S);
 *     in-rule at J: every predecessor P of J leaves only to J, so
 *       count(J) = sum of count(P).
 *   The block derived is the hub (A or J), the hottest of its group.
 * - A block that can be left other than by its CFG edges never serves as
 *   A or P: one ending in a call (the callee may not return: exit, longjmp,
 *   an exception), a return, a tail call, an unresolved jump, hlt/ud2; one
 *   holding a syscall or int (exit_group, a fatal tgkill); one whose
 *   jump-table read is checked (beyond the clone it goes on in the original
 *   code, relocate.c).  A block entered from outside its procedure's CFG (a
 *   foreign entry's hop) is never S or J.  The entry block can be A.
 * - What stays inexact: a block left in its middle by a fault (a fatal
 *   signal, or a handler that siglongjmps out of it).  Its own probe counts
 *   the entry, a derived sum over its successors does not: derived counts
 *   may then differ by the number of such exits, as a counted block's
 *   successors already did.
 * - Equations are made greedily in block order: a hub must not be a member
 *   of an earlier equation, members may be hubs of earlier ones, so
 *   evaluating them in order is enough (no cycles).
 *
 * Measured gain (Xeon family 6 model 207): gawk 5.2.1's word count on 5 MB
 * (the bench's workload), 18.5% of the probe executions gone, its run time
 * 1.65x -> 1.41x the original's (docs/ARCHITECTURE.md, "Derived blocks"). */
#include <stdlib.h>

#include "internal.h"

/* Whether the instruction enters the kernel (syscall, sysenter, int N). */
static bool enters_kernel(const rw_insn *ri)
{
    uint8_t k = rw_opcode_offset(ri);
    if (k >= ri->len)
        return false;
    uint8_t op = ri->bytes[k];
    if (op == 0xcd || op == 0xcc || op == 0xf1)
        return true;
    return op == 0x0f && k + 1 < ri->len && (ri->bytes[k + 1] == 0x05 || ri->bytes[k + 1] == 0x34);
}

static bool normal_edge(const mt_edge *e)
{
    return e->dst != MT_NONE &&
           (e->kind == MT_EDGE_FALLTHROUGH || e->kind == MT_EDGE_JUMP ||
            e->kind == MT_EDGE_COND_TAKEN || e->kind == MT_EDGE_COND_FALLTHROUGH ||
            e->kind == MT_EDGE_INDIRECT);
}

/* Whether every entry of block b leaves by one of its CFG edges, to a
 * block of the procedure other than itself. */
static bool leaves_by_edges(const mt_procedure *p, const rw_insn *insns, const uint32_t *block_first,
                            uint32_t ninsns, uint32_t b)
{
    const mt_block *blk = &p->blocks[b];
    if (blk->term != MT_TERM_FALLTHROUGH && blk->term != MT_TERM_JUMP &&
        blk->term != MT_TERM_COND && blk->term != MT_TERM_TABLE_JUMP)
        return false;
    if (blk->nsucc == 0)
        return false;
    for (uint32_t k = 0; k < blk->nsucc; k++) {
        const mt_edge *e = &p->edges[blk->first_succ + k];
        if (!normal_edge(e) || e->dst == b)
            return false;
    }
    uint32_t end = b + 1 < p->nblocks ? block_first[b + 1] : ninsns;
    for (uint32_t k = block_first[b]; k < end; k++)
        if (insns[k].table_check || enters_kernel(&insns[k]))
            return false;
    return true;
}

/* The procedure's blocks' predecessors, distinct, over every edge. */
typedef struct {
    uint32_t *first, *list; /* preds of b: list[first[b] .. first[b + 1]) */
} preds;

static void preds_build(const mt_procedure *p, preds *out)
{
    out->first = mt_xcalloc((size_t)p->nblocks + 1, sizeof *out->first);
    out->list = mt_xmalloc(((size_t)p->nedges + 1) * sizeof *out->list);
    for (uint32_t i = 0; i < p->nedges; i++)
        if (p->edges[i].dst != MT_NONE)
            out->first[p->edges[i].dst + 1]++;
    for (uint32_t b = 0; b < p->nblocks; b++)
        out->first[b + 1] += out->first[b];
    uint32_t *fill = mt_xmalloc(((size_t)p->nblocks + 1) * sizeof *fill);
    for (uint32_t b = 0; b < p->nblocks; b++)
        fill[b] = out->first[b];
    for (uint32_t i = 0; i < p->nedges; i++) { /* edges are grouped by source, in order */
        uint32_t d = p->edges[i].dst;
        if (d == MT_NONE)
            continue;
        uint32_t s = p->edges[i].src;
        if (fill[d] == out->first[d] || out->list[fill[d] - 1] != s)
            out->list[fill[d]++] = s;
    }
    /* Compact: duplicates shortened some lists. */
    uint32_t at = 0;
    for (uint32_t b = 0; b < p->nblocks; b++) {
        uint32_t from = out->first[b], n = fill[b] - from;
        out->first[b] = at;
        for (uint32_t k = 0; k < n; k++)
            out->list[at + k] = out->list[from + k];
        at += n;
    }
    out->first[p->nblocks] = at;
    free(fill);
}

static bool foreign_entry(const mt_procedure *p, uint32_t b)
{
    for (uint32_t k = 0; k < p->nforeign_entries; k++)
        if (p->foreign_entries[k] == p->blocks[b].start)
            return true;
    return false;
}

/* Whether block s is entered only from block a (and from outside never). */
static bool entered_only_from(const mt_procedure *p, const preds *pr, uint32_t s, uint32_t a)
{
    return s != 0 && pr->first[s + 1] - pr->first[s] == 1 && pr->list[pr->first[s]] == a &&
           !foreign_entry(p, s);
}

typedef struct {
    bool *derived, *member, *leaves;
    rw_flow_plan *plan;
} choice;

/* Records "count(hub) = sum of count(members)" when the hub is free. */
static void add_equation(choice *ch, uint32_t hub, const uint32_t *members, uint32_t n)
{
    if (ch->derived[hub] || ch->member[hub])
        return;
    for (uint32_t k = 0; k < n; k++)
        if (members[k] == hub)
            return;
    ch->derived[hub] = true;
    MT_PUSH(ch->plan->words, ch->plan->n, ch->plan->cap, hub);
    MT_PUSH(ch->plan->words, ch->plan->n, ch->plan->cap, n);
    for (uint32_t k = 0; k < n; k++) {
        ch->member[members[k]] = true;
        MT_PUSH(ch->plan->words, ch->plan->n, ch->plan->cap, members[k]);
    }
}

/* The out-rule at a: its distinct successors, when each is entered only
 * from a.  Returns their number, 0 when the rule does not hold. */
static uint32_t out_rule(const mt_procedure *p, const preds *pr, const choice *ch, uint32_t a,
                         uint32_t *members)
{
    if (!ch->leaves[a])
        return 0;
    const mt_block *blk = &p->blocks[a];
    uint32_t n = 0;
    for (uint32_t k = 0; k < blk->nsucc; k++) {
        uint32_t s = p->edges[blk->first_succ + k].dst;
        if (!entered_only_from(p, pr, s, a))
            return 0;
        bool seen = false;
        for (uint32_t j = 0; j < n; j++)
            seen |= members[j] == s;
        if (!seen)
            members[n++] = s;
    }
    return n;
}

/* The in-rule at j: its distinct predecessors, when each leaves only to j. */
static uint32_t in_rule(const mt_procedure *p, const preds *pr, const choice *ch, uint32_t j,
                        uint32_t *members)
{
    if (j == 0 || foreign_entry(p, j) || pr->first[j + 1] == pr->first[j])
        return 0;
    uint32_t n = 0;
    for (uint32_t k = pr->first[j]; k < pr->first[j + 1]; k++) {
        uint32_t q = pr->list[k];
        if (!ch->leaves[q])
            return 0;
        const mt_block *blk = &p->blocks[q];
        for (uint32_t e = 0; e < blk->nsucc; e++)
            if (p->edges[blk->first_succ + e].dst != j)
                return 0;
        members[n++] = q;
    }
    return n;
}

void rw_flow_plan_proc(const mt_procedure *p, const rw_insn *insns, const uint32_t *block_first,
                       uint32_t ninsns, bool *derived, rw_flow_plan *plan)
{
    plan->n = 0;
    preds pr;
    preds_build(p, &pr);
    choice ch = {.derived = derived, .plan = plan};
    ch.member = mt_xcalloc((size_t)p->nblocks + 1, sizeof *ch.member);
    ch.leaves = mt_xcalloc((size_t)p->nblocks + 1, sizeof *ch.leaves);
    uint32_t *members = mt_xmalloc(((size_t)p->nedges + 1) * sizeof *members);
    for (uint32_t b = 0; b < p->nblocks; b++)
        ch.leaves[b] = leaves_by_edges(p, insns, block_first, ninsns, b);
    for (uint32_t b = 0; b < p->nblocks; b++) {
        uint32_t n = out_rule(p, &pr, &ch, b, members);
        if (!n)
            n = in_rule(p, &pr, &ch, b, members);
        if (n)
            add_equation(&ch, b, members, n);
    }
    free(members);
    free(ch.member);
    free(ch.leaves);
    free(pr.first);
    free(pr.list);
}

void rw_flow_plan_commit(rw_code *c, const rw_flow_plan *plan, const rw_insn *insns,
                         const uint32_t *block_first)
{
    for (size_t k = 0; k < plan->n;) {
        uint32_t hub = plan->words[k], n = plan->words[k + 1];
        MT_PUSH(c->equations, c->nequation_words, c->cap_equations,
                (uint64_t)n << 32 | insns[block_first[hub]].counter);
        for (uint32_t j = 0; j < n; j++)
            MT_PUSH(c->equations, c->nequation_words, c->cap_equations,
                    (uint64_t)insns[block_first[plan->words[k + 2 + j]]].counter);
        c->nderived++;
        k += 2 + n;
    }
}
