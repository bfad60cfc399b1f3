/* rewriter/timers.c — pass 2: timer events inserted on CFG edges of
 * relocated procedures (runtime side in timer/probes.S).
 *
 * A timed m-object is a procedure or a natural loop.  Its start events go
 * on its entry edges (a procedure's entry: the copy's first bytes, which
 * external callers reach and the procedure's own branches skip; a loop:
 * its entry edges, plus the procedure's entry when the header is block 0),
 * its stop events on its exit edges (returns and tail calls, also those of
 * its split parts such as foo.cold, which run as part of it; for loops
 * every edge leaving the body, except into a split part, which may jump
 * back).  Frames left by unwinding further out are closed by the runtime
 * (probes.S).
 *
 * Where an edge's code goes:
 *   fall-through, conditional fall-through, call return  after the source's
 *       last instruction (before its jump to a non-adjacent successor);
 *   unconditional jump, return, tail call  before the last instruction;
 *   conditional taken edge (also a conditional tail call)  a trampoline:
 *       the branch goes to it, it ends with `jmp` to the target's copy;
 *   jump-table edge  a trampoline per target, the cloned table's entries
 *       lead to it;
 *   exception edge leaving a loop  a trampoline the call site's landing
 *       pad is moved to in the rewritten LSDA (unwind.c); not when the pad
 *       leads back into the loop (through foo.cold, typically).
 * On one edge, stops run innermost first, then starts outermost first.
 *
 * Calls to PLT stubs in procedures reachable from a timed object (or, in a
 * pass-2 copy, from a known_export: a procedure another object's timed code
 * calls as known work) are bracketed with outside_enter/exit: their time is
 * accounted separately.  Calls to a known_import stub are not: the
 * library's procedure they reach is predicted as the caller's work.
 *
 * Each start or stop event is a copy of the runtime's code for its kind
 * (timer/probes.S, EVENT: an inline fast path, a call to a runtime routine
 * on its rare paths), with the object's record offset patched in: the
 * *_flags kind where liveness says a flag is live at the edge's destination
 * (never at entries, returns, tail calls: the ABI).  A procedure's start
 * (at its entry) and the stops where the procedure is left (returns, tail
 * calls) are the kinds that do not step over the red zone: none is in use
 * there, and the two `lea` cost 4.5 TSC ticks of a 86-tick start/stop pair
 * on an Emerald Rapids core.  Outside brackets are a bare `call` (5 bytes):
 * a call site has dead flags and a free red zone. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "rewriter.h"

#define CALL_LEN 5

static bool is_bracket(const rw_event *ev)
{
    return ev->kind == RW_EV_OUTSIDE_ENTER || ev->kind == RW_EV_OUTSIDE_EXIT;
}

/* The runtime's code for a start or stop event (mt_rt_header.event_code). */
static int event_kind(const rw_event *ev)
{
    if (ev->kind == RW_EV_START_PROC)
        return MT_RT_EVENT_START_PROC; /* only at entries */
    if (ev->kind == RW_EV_START_LOOP)
        return ev->save_flags ? MT_RT_EVENT_START_LOOP_FLAGS : MT_RT_EVENT_START_LOOP;
    if (ev->no_red_zone) /* where the procedure is left: flags dead */
        return MT_RT_EVENT_STOP_LEAVE;
    return ev->save_flags ? MT_RT_EVENT_STOP_FLAGS : MT_RT_EVENT_STOP;
}

static const mt_rt_event_code *event_code(const rw_code *c, const rw_event *ev)
{
    return &((const mt_rt_header *)(const void *)c->blob)->event_code[event_kind(ev)];
}

static size_t event_len(const rw_code *c, const rw_event *ev)
{
    return is_bracket(ev) ? CALL_LEN : event_code(c, ev)->len;
}

/* Appends a snip of events ev[0..n), returns its index (0 when n == 0). */
static uint32_t add_snip(rw_code *c, const rw_event *ev, uint32_t n)
{
    if (n == 0)
        return 0;
    if (c->nsnips == 0) {
        rw_snip none = {0};
        MT_PUSH(c->snips, c->nsnips, c->cap_snips, none);
    }
    rw_snip s = {.first = (uint32_t)c->nevents, .n = n};
    for (uint32_t k = 0; k < n; k++) {
        MT_PUSH(c->events, c->nevents, c->cap_events, ev[k]);
        s.len += (uint32_t)event_len(c, &ev[k]);
    }
    MT_PUSH(c->snips, c->nsnips, c->cap_snips, s);
    return (uint32_t)c->nsnips - 1;
}

/* One event waiting for its edge; `order` sorts an edge's events. */
typedef struct {
    uint32_t edge;
    uint32_t order;
    rw_event ev;
} pending;

static int cmp_pending(const void *a, const void *b)
{
    const pending *x = a, *y = b;
    if (x->edge != y->edge)
        return x->edge < y->edge ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* Stops innermost first, then starts outermost first.  Nesting rank: 0 for
 * the procedure; then its regions (a region holds whole loops or none of
 * them: its cut points lie on no cycle), 1 + first + (ncuts - end) for
 * region [first, end) in cut point numbers (end = ncuts: to the returns), so
 * that of two nested regions (by hand) the enclosing one ranks lower; then
 * its loops, LOOP_RANK + depth. */
#define LOOP_RANK 500000u
static uint32_t loop_rank(const mt_loop *l) { return LOOP_RANK + l->depth; }
static uint32_t event_order(uint8_t kind, uint32_t rank)
{
    return kind == RW_EV_STOP ? 1000000u - rank : 2000000u + rank;
}

static uint32_t region_rank(const uint32_t *cuts, uint32_t ncuts, const mt_timed_object *t)
{
    uint32_t first = 0, end = ncuts;
    for (uint32_t k = 0; k < ncuts; k++) {
        first = cuts[k] == t->region_first ? k : first;
        end = cuts[k] == t->region_end ? k : end;
    }
    uint32_t rank = 1 + first + (ncuts - end);
    return rank < LOOP_RANK ? rank : LOOP_RANK - 1;
}

/* The procedure a split part (foo.cold) belongs to, or the procedure itself. */
static uint32_t family(const mt_program *prog, uint32_t pi)
{
    return prog->procs[pi].parent != MT_NONE ? prog->procs[pi].parent : pi;
}

/* An edge that leaves procedure `pi` for good: not a call's return, not an
 * exception, and not a jump between foo and foo.cold, which run as one
 * procedure (a cold landing pad often jumps back into foo's loop). */
static bool leaves_procedure(const mt_program *prog, uint32_t pi, const mt_edge *e)
{
    if (e->dst != MT_NONE || e->kind == MT_EDGE_EXCEPTION || e->kind == MT_EDGE_CALL_RETURN)
        return false;
    if (e->kind == MT_EDGE_RETURN || e->target == 0)
        return true;
    uint32_t q = mt_procedure_at(prog, e->target);
    return q == MT_NONE || family(prog, q) != family(prog, pi) ||
           (e->kind == MT_EDGE_TAIL_CALL && prog->procs[q].entry == e->target &&
            prog->procs[q].parent == MT_NONE);
}

/* Block of procedure q starting at `addr`, or MT_NONE. */
static uint32_t block_at(const mt_procedure *q, uint64_t addr)
{
    size_t lo = mt_lower_bound_u64(q->blocks, q->nblocks, sizeof *q->blocks,
                                   offsetof(mt_block, start), addr);
    return lo < q->nblocks && q->blocks[lo].start == addr ? (uint32_t)lo : MT_NONE;
}

/* Whether control can come back into the blocks `in` (a loop's or a
 * region's) of procedure `pi` from its block `from` (a landing pad outside
 * them), following edges through the procedure and its split parts: gcc's
 * landing pads often jump to foo.cold, which may jump back into the loop.
 * Unknown targets count as coming back (the object then stays active:
 * closed later, as non-local). */
static bool comes_back(const mt_program *prog, uint32_t pi, const bool *in, uint32_t from)
{
    typedef struct { uint32_t proc, block; } at;
    at *stack = NULL;
    size_t n = 0, cap = 0, nseen = 0, cap_seen = 0;
    at *seen = NULL;
    at start = {pi, from};
    MT_PUSH(stack, n, cap, start);
    bool back = from == MT_NONE;
    while (n && !back) {
        at cur = stack[--n];
        bool dup = false;
        for (size_t k = 0; k < nseen && !dup; k++)
            dup = seen[k].proc == cur.proc && seen[k].block == cur.block;
        if (dup)
            continue;
        MT_PUSH(seen, nseen, cap_seen, cur);
        back = cur.proc == pi && in[cur.block];
        if (back)
            break;
        const mt_procedure *q = &prog->procs[cur.proc];
        const mt_block *b = &q->blocks[cur.block];
        for (uint32_t e = b->first_succ; e < b->first_succ + b->nsucc; e++) {
            const mt_edge *edge = &q->edges[e];
            if (edge->kind == MT_EDGE_EXCEPTION || edge->kind == MT_EDGE_RETURN)
                continue;
            at next = {cur.proc, edge->dst};
            if (edge->dst == MT_NONE) {
                uint32_t r = edge->target ? mt_procedure_at(prog, edge->target) : MT_NONE;
                if (r == MT_NONE) {
                    back = true;
                    break;
                }
                if (family(prog, r) != family(prog, pi))
                    continue; /* a tail call: the procedure is left */
                next = (at){r, block_at(&prog->procs[r], edge->target)};
                if (next.block == MT_NONE) {
                    back = true;
                    break;
                }
            }
            MT_PUSH(stack, n, cap, next);
        }
    }
    free(stack);
    free(seen);
    return back;
}

/* Flags are live where the edge's code runs (never at a landing pad: the
 * unwinder leaves them undefined).  CF counts: the timer routines change it
 * (a `jb` after the edge reads nothing else), and lahf/sahf keep it. */
static bool flags_live(const rw_live *bl, const mt_edge *e)
{
    return e->dst != MT_NONE && e->kind != MT_EDGE_EXCEPTION &&
           (bl[e->dst].live_in & (RW_LIVE_FLAGS | RW_LIVE_CF));
}

static void push_pending(pending **v, size_t *n, size_t *cap, uint32_t edge, uint8_t kind,
                         uint32_t depth, uint32_t obj, bool flags)
{
    pending p = {.edge = edge, .order = event_order(kind, depth),
                 .ev = {.kind = kind, .save_flags = flags, .obj = obj}};
    MT_PUSH(*v, *n, *cap, p);
}

/* Events of region t (record o) in procedure `pi`, or in its split part
 * `pi` (`part`): starts on the edges into its first block (the procedure's
 * entry when that is block 0), stops on the edges from its blocks to
 * others, returns and tail calls included (a split part's too, for the
 * last region: mt_region_cuts keeps the jumps into a part that returns in
 * the last region), exception edges when the landing pad does not lead
 * back into it.  Jumps into split parts are no exits. */
static void collect_region(const rw_code *c, uint32_t pi, const mt_timed_object *t, uint32_t o,
                           bool part, const rw_live *bl, pending **v, size_t *n, size_t *cap)
{
    const mt_procedure *p = &c->prog->procs[pi];
    uint32_t *cuts;
    uint32_t ncuts = mt_region_cuts(c->prog, t->proc, &cuts);
    uint32_t rank = region_rank(cuts, ncuts, t);
    free(cuts);
    if (part) {
        if (t->region_end == MT_NONE)
            for (uint32_t e = 0; e < p->nedges; e++)
                if (leaves_procedure(c->prog, pi, &p->edges[e]))
                    push_pending(v, n, cap, e, RW_EV_STOP, rank, o, false);
        return;
    }
    bool *in = mt_xcalloc(p->nblocks + 1, sizeof *in);
    mt_region_blocks(p, t->region_first, t->region_end, in);
    if (t->region_first == 0)
        push_pending(v, n, cap, MT_NONE, RW_EV_START_LOOP, rank, o, false);
    for (uint32_t k = 0; k < p->nedges; k++) {
        const mt_edge *e = &p->edges[k];
        if (e->src >= p->nblocks)
            continue;
        if (e->dst == t->region_first && !in[e->src] && e->kind != MT_EDGE_EXCEPTION)
            push_pending(v, n, cap, k, RW_EV_START_LOOP, rank, o, flags_live(bl, e));
        if (!in[e->src])
            continue;
        bool stop = e->kind == MT_EDGE_EXCEPTION
                        ? e->dst != MT_NONE && !in[e->dst] && !comes_back(c->prog, pi, in, e->dst)
                        : e->dst != MT_NONE ? !in[e->dst] : leaves_procedure(c->prog, pi, e);
        if (stop)
            push_pending(v, n, cap, k, RW_EV_STOP, rank, o, flags_live(bl, e));
    }
    free(in);
}

/* Events of every timed object of procedure `pi` on its edges, sorted by
 * edge; the procedure entry's events come last, under edge MT_NONE. */
static pending *collect(const rw_code *c, uint32_t pi, const rw_live *bl, size_t *n)
{
    const mt_procedure *p = &c->prog->procs[pi];
    pending *v = NULL;
    size_t cap = 0;
    *n = 0;
    for (uint32_t o = 0; o < c->ntimed; o++) {
        const mt_timed_object *t = &c->timed[o];
        bool part = t->loop == MT_NONE && t->proc != pi && t->proc == family(c->prog, pi);
        if (t->proc != pi && !part)
            continue;
        if (t->region) {
            collect_region(c, pi, t, o, part, bl, &v, n, &cap);
            continue;
        }
        if (t->loop == MT_NONE) {
            if (!part)
                push_pending(&v, n, &cap, MT_NONE, RW_EV_START_PROC, 0, o, false);
            for (uint32_t e = 0; e < p->nedges; e++)
                if (leaves_procedure(c->prog, pi, &p->edges[e]))
                    push_pending(&v, n, &cap, e, RW_EV_STOP, 0, o, false);
            continue;
        }
        const mt_loop *l = &p->loops[t->loop];
        uint32_t rank = loop_rank(l);
        if (l->header == 0)
            push_pending(&v, n, &cap, MT_NONE, RW_EV_START_LOOP, rank, o, false);
        for (uint32_t k = 0; k < l->nentry_edges; k++) {
            const mt_edge *e = &p->edges[l->entry_edges[k]];
            if (e->kind != MT_EDGE_EXCEPTION)
                push_pending(&v, n, &cap, l->entry_edges[k], RW_EV_START_LOOP, rank, o,
                             flags_live(bl, e));
        }
        bool *in = NULL;
        for (uint32_t k = 0; k < l->nexit_edges; k++) {
            const mt_edge *e = &p->edges[l->exit_edges[k]];
            if (e->kind == MT_EDGE_EXCEPTION && !in) {
                in = mt_xcalloc(p->nblocks + 1, sizeof *in);
                for (uint32_t b = 0; b < l->nblocks; b++)
                    in[l->blocks[b]] = true;
            }
            if (e->kind == MT_EDGE_EXCEPTION ? !comes_back(c->prog, pi, in, e->dst)
                                             : e->dst != MT_NONE || leaves_procedure(c->prog, pi, e))
                push_pending(&v, n, &cap, l->exit_edges[k], RW_EV_STOP, rank, o,
                             flags_live(bl, e));
        }
        free(in);
    }
    if (*n)
        qsort(v, *n, sizeof *v, cmp_pending);
    return v;
}

/* Per instruction of the procedure being planned: events before / after it. */
typedef struct {
    rw_event *ev;
    uint32_t n, cap;
} ev_list;

static void list_add(ev_list *l, const rw_event *ev, uint32_t n)
{
    for (uint32_t k = 0; k < n; k++) {
        if (l->n == l->cap) {
            l->cap = l->cap ? 2 * l->cap : 4;
            l->ev = mt_xrealloc(l->ev, l->cap * sizeof *l->ev);
        }
        l->ev[l->n++] = ev[k];
    }
}

static void add_tramp(rw_code *c, rw_proc *rp, uint32_t snip, uint64_t dst, uint64_t table,
                      uint64_t call)
{
    rw_tramp t = {.snip = snip, .dst = dst, .table = table, .call = call};
    MT_PUSH(c->tramps, c->ntramps, c->cap_tramps, t);
    rp->ntramps++;
}

/* Places the events of one edge of block b (last instruction `last`). */
static bool place_edge(rw_code *c, rw_proc *rp, const mt_procedure *p, const mt_edge *e,
                       uint32_t last, const rw_event *ev, uint32_t n, ev_list *before,
                       ev_list *after, char **why)
{
    rw_insn *li = &rp->insns[last];
    switch (e->kind) {
    case MT_EDGE_FALLTHROUGH:
    case MT_EDGE_COND_FALLTHROUGH:
    case MT_EDGE_CALL_RETURN:
        list_add(&after[last], ev, n);
        return true;
    case MT_EDGE_RETURN:
        list_add(&before[last], ev, n);
        return true;
    case MT_EDGE_JUMP:
    case MT_EDGE_TAIL_CALL:
    case MT_EDGE_COND_TAKEN:
        if (li->kind == RW_JCC || li->kind == RW_JCX) {
            if (li->tramp) {
                *why = mt_xasprintf("two edges with timer code leave the branch at 0x%llx",
                                    (unsigned long long)li->old);
                return false;
            }
            add_tramp(c, rp, add_snip(c, ev, n), li->target, 0, 0);
            li->tramp = (uint32_t)c->ntramps;
        } else {
            list_add(&before[last], ev, n);
        }
        return true;
    case MT_EDGE_INDIRECT: {
        const mt_jump_table *jt = NULL;
        for (uint32_t t = 0; t < p->ntables; t++)
            if (p->tables[t].jump == li->old)
                jt = &p->tables[t];
        if (!jt || e->target == 0) {
            *why = mt_xasprintf("no jump table for the edge at 0x%llx", (unsigned long long)li->old);
            return false;
        }
        /* Entries of one table share a trampoline per target: fine when
         * they carry the same events (several entries to one case). */
        for (size_t t = 0; t < c->ntramps; t++)
            if (c->tramps[t].table == jt->table && c->tramps[t].dst == e->target) {
                const rw_snip *sn = &c->snips[c->tramps[t].snip];
                if (sn->n == n && !memcmp(&c->events[sn->first], ev, n * sizeof *ev))
                    return true;
                *why = mt_xasprintf("jump table 0x%llx: two jumps share it with different timer code",
                                    (unsigned long long)jt->table);
                return false;
            }
        add_tramp(c, rp, add_snip(c, ev, n), e->target, jt->table, 0);
        return true;
    }
    case MT_EDGE_EXCEPTION: /* a loop left by an exception caught in its procedure */
        if (e->target == 0) {
            *why = mt_xasprintf("no landing pad for the call at 0x%llx", (unsigned long long)li->old);
            return false;
        }
        add_tramp(c, rp, add_snip(c, ev, n), e->target, 0, li->old);
        return true;
    default:
        *why = mt_xasprintf("cannot place timer code on a %s edge at 0x%llx",
                            mt_edge_kind_name((mt_edge_kind)e->kind), (unsigned long long)li->old);
        return false;
    }
}

/* Whether a direct call goes to a PLT stub whose import is outside time
 * (code no copy of the set predicts: not a known_import, nor a procedure
 * of this object the loader binds it to). */
static bool calls_outside(const rw_code *c, const rw_insn *ri)
{
    if (ri->kind != RW_CALL)
        return false;
    uint32_t callee = mt_procedure_at(c->prog, ri->target);
    return callee != MT_NONE && c->prog->procs[callee].is_plt && !c->prog->procs[callee].known_import &&
           !c->prog->procs[callee].binds_own &&
           c->prog->procs[callee].entry == ri->target;
}

bool rw_timers_plan(rw_code *c, uint32_t pi, rw_proc *rp, const rw_live *bl,
                    const uint32_t *block_first, char **why)
{
    if (!c->outside_calls)
        return true; /* nothing timed, no bracket */
    const mt_procedure *p = &c->prog->procs[pi];
    size_t npend;
    pending *pend = collect(c, pi, bl, &npend);
    rw_event *ev = mt_xmalloc((npend + 1) * sizeof *ev);
    uint32_t entry_snip = 0;
    ev_list *before = mt_xcalloc(rp->ninsns, sizeof *before);
    ev_list *after = mt_xcalloc(rp->ninsns, sizeof *after);
    size_t first_tramp = c->ntramps;
    rp->first_tramp = (uint32_t)first_tramp;
    rp->ntramps = 0;
    if (c->outside_calls && c->outside_calls[pi])
        for (uint32_t k = 0; k < rp->ninsns; k++)
            if (calls_outside(c, &rp->insns[k])) {
                rw_event in = {.kind = RW_EV_OUTSIDE_ENTER}, out = {.kind = RW_EV_OUTSIDE_EXIT};
                list_add(&before[k], &in, 1);
                list_add(&after[k], &out, 1);
            }
    bool ok = true;
    for (size_t i = 0; i < npend && ok;) {
        size_t j = i;
        uint32_t n = 0;
        for (; j < npend && pend[j].edge == pend[i].edge; j++)
            ev[n++] = pend[j].ev;
        if (pend[i].edge == MT_NONE) { /* the procedure's entry (sorted last) */
            for (uint32_t k = 0; k < n; k++) /* START_PROC runs only here */
                ev[k].no_red_zone = ev[k].kind == RW_EV_START_PROC;
            entry_snip = add_snip(c, ev, n);
        } else {
            const mt_edge *e = &p->edges[pend[i].edge];
            for (uint32_t k = 0; k < n; k++)
                ev[k].no_red_zone = ev[k].kind == RW_EV_STOP && leaves_procedure(c->prog, pi, e);
            uint32_t last = (e->src + 1 < p->nblocks ? block_first[e->src + 1] : rp->ninsns) - 1;
            ok = place_edge(c, rp, p, e, last, ev, n, before, after, why);
        }
        i = j;
    }
    uint32_t pre_len = entry_snip ? c->snips[entry_snip].len : 0;
    if (ok && pre_len > UINT16_MAX) { /* branches skip it with a 16-bit count */
        *why = mt_xasprintf("%u bytes of timer events at its entry (at most %u)", pre_len,
                            UINT16_MAX);
        ok = false;
    }
    if (ok) {
        rp->insns[0].pre = entry_snip;
        for (uint32_t k = 0; k < rp->ninsns; k++) {
            rw_insn *ri = &rp->insns[k];
            ri->before = add_snip(c, before[k].ev, before[k].n);
            ri->after = add_snip(c, after[k].ev, after[k].n);
            /* A branch inside the procedure to its entry is not a new entry. */
            if ((ri->kind == RW_JMP || ri->kind == RW_JCC || ri->kind == RW_JCX) &&
                ri->target == p->entry)
                ri->target_skip = (uint16_t)pre_len;
        }
        for (size_t t = first_tramp; t < c->ntramps; t++)
            if (c->tramps[t].dst == p->entry)
                c->tramps[t].dst_skip = (uint16_t)pre_len;
        c->nevents_placed += (uint32_t)npend;
        for (size_t i = 0; i < npend; i++)
            c->nevents_saving_flags += pend[i].ev.save_flags;
    } else {
        c->ntramps = first_tramp;
        rp->ntramps = 0;
    }
    for (uint32_t k = 0; k < rp->ninsns; k++) {
        free(before[k].ev);
        free(after[k].ev);
    }
    free(before);
    free(after);
    free(pend);
    free(ev);
    return ok;
}

size_t rw_timers_insn_len(const rw_code *c, const rw_insn *ri)
{
    if (!c->nsnips)
        return 0;
    return (size_t)c->snips[ri->pre].len + c->snips[ri->before].len + c->snips[ri->after].len;
}

uint64_t rw_timers_assign(rw_code *c, rw_proc *rp, uint64_t at)
{
    for (uint32_t t = rp->first_tramp; t < rp->first_tramp + rp->ntramps; t++) {
        c->tramps[t].new_addr = at;
        at += c->snips[c->tramps[t].snip].len + 5;
    }
    return at;
}

static bool call_rel32(rw_buf *out, uint64_t at, uint64_t target)
{
    int64_t d = (int64_t)(target - (at + 5));
    if (d < INT32_MIN || d > INT32_MAX)
        return false;
    rw_buf_u8(out, 0xe8);
    rw_buf_u32(out, (uint32_t)(int32_t)d);
    return true;
}

/* Copies the runtime's code of event `ev` to the end of `out` (byte 0 at
 * `vaddr`): its record offset in both imm32 fields, its call aimed at the
 * routine in the output.  Record offsets lie below 2 GiB (`push imm32`
 * sign-extends). */
static bool emit_event(const rw_code *c, const rw_event *ev, uint64_t vaddr, rw_buf *out)
{
    const mt_rt_event_code *ec = event_code(c, ev);
    uint64_t at = vaddr + out->len;
    int64_t d = (int64_t)(c->event_routine[event_kind(ev)] - (at + ec->call + 4));
    if (d < INT32_MIN || d > INT32_MAX)
        return false;
    size_t start = out->len;
    uint32_t slot_ncounters = c->slot_ncounters ? c->slot_ncounters : c->ncounters;
    uint32_t record = (uint32_t)(MT_SLOT_RECORDS_OFFSET(slot_ncounters) +
                                 ((uint64_t)c->timer_base + ev->obj) * MT_REC_SIZE);
    rw_buf_put(out, c->blob + ec->offset, ec->len);
    rw_buf_patch_u32(out, start + ec->record, record);
    rw_buf_patch_u32(out, start + ec->push, record);
    rw_buf_patch_u32(out, start + ec->call, (uint32_t)(int32_t)d);
    return true;
}

bool rw_timers_emit_snip(const rw_code *c, uint32_t s, uint64_t vaddr, rw_buf *out, mt_error *err)
{
    if (!s)
        return true;
    const rw_snip *sn = &c->snips[s];
    for (uint32_t k = 0; k < sn->n; k++) {
        const rw_event *ev = &c->events[sn->first + k];
        bool ok = !is_bracket(ev) ? emit_event(c, ev, vaddr, out)
                  : call_rel32(out, vaddr + out->len,
                               c->timer_entry[ev->kind == RW_EV_OUTSIDE_ENTER
                                                  ? MT_RT_TIMER_OUTSIDE_ENTER
                                                  : MT_RT_TIMER_OUTSIDE_EXIT]);
        if (!ok) {
            mt_error_set(err, "%s: the runtime's timer code is out of rel32 range", c->in->path);
            return false;
        }
    }
    return true;
}

bool rw_timers_emit_tramps(const rw_code *c, const rw_proc *rp, uint64_t vaddr, rw_buf *out,
                           uint64_t (*target)(const rw_code *, uint64_t), mt_error *err)
{
    for (uint32_t t = rp->first_tramp; t < rp->first_tramp + rp->ntramps; t++) {
        const rw_tramp *tr = &c->tramps[t];
        if (!rw_timers_emit_snip(c, tr->snip, vaddr, out, err))
            return false;
        uint64_t to = target(c, tr->dst) + tr->dst_skip;
        int64_t d = (int64_t)(to - (vaddr + out->len + 5));
        if (d < INT32_MIN || d > INT32_MAX) {
            mt_error_set(err, "%s: trampoline to 0x%llx out of rel32 range", c->in->path,
                         (unsigned long long)tr->dst);
            return false;
        }
        rw_buf_u8(out, 0xe9);
        rw_buf_u32(out, (uint32_t)(int32_t)d);
    }
    return true;
}

uint64_t rw_timers_table_tramp(const rw_code *c, uint64_t table, uint64_t old)
{
    for (size_t t = 0; t < c->ntramps; t++)
        if (table && c->tramps[t].table == table && c->tramps[t].dst == old)
            return c->tramps[t].new_addr;
    return 0;
}

void rw_timers_moved(const rw_code *c, const rw_proc *rp, rw_moved *m)
{
    for (uint32_t t = rp->first_tramp; t < rp->first_tramp + rp->ntramps; t++)
        if (c->tramps[t].call) {
            m->lp_call = mt_xrealloc(m->lp_call, (m->nlp + 1) * sizeof *m->lp_call);
            m->lp_pad = mt_xrealloc(m->lp_pad, (m->nlp + 1) * sizeof *m->lp_pad);
            m->lp_new = mt_xrealloc(m->lp_new, (m->nlp + 1) * sizeof *m->lp_new);
            m->lp_call[m->nlp] = c->tramps[t].call;
            m->lp_pad[m->nlp] = c->tramps[t].dst;
            m->lp_new[m->nlp++] = c->tramps[t].new_addr;
        }
}

void rw_timers_free(rw_code *c)
{
    free(c->events);
    free(c->snips);
    free(c->tramps);
    free(c->outside_calls);
}

/* Whether procedure p's PLT calls are timed as outside time before any
 * reachability: a timed object's, or (pass 2) a known export's. */
static bool outside_root(const rw_code *c, uint32_t p, const mt_timed_object *timed, uint32_t ntimed)
{
    if (c->timers_only && c->prog->procs[p].known_export)
        return true;
    for (uint32_t o = 0; o < ntimed; o++)
        if (timed[o].proc == p)
            return true;
    return false;
}

void rw_timers_init(rw_code *c, const uint8_t *blob, const mt_timed_object *timed,
                    uint32_t ntimed)
{
    c->blob = blob;
    c->timed = timed;
    c->ntimed = ntimed;
    /* Procedures reachable in the call graph from a root: their PLT calls
     * happen while an object is active. */
    const mt_program *prog = c->prog;
    uint32_t *queue = mt_xmalloc((prog->nprocs + 1) * sizeof *queue);
    size_t head = 0, tail = 0;
    c->outside_calls = mt_xcalloc(prog->nprocs + 1, sizeof *c->outside_calls);
    for (uint32_t p = 0; p < prog->nprocs; p++)
        if (outside_root(c, p, timed, ntimed)) {
            c->outside_calls[p] = true;
            queue[tail++] = p;
        }
    if (tail == 0) { /* nothing timed, no known export: no bracket */
        free(c->outside_calls);
        c->outside_calls = NULL;
    }
    while (head < tail) {
        uint32_t p = queue[head++];
        for (uint32_t e = 0; e < prog->ncg_edges; e++) {
            uint32_t q = prog->cg_edges[e].callee;
            if (prog->cg_edges[e].caller == p && q < prog->nprocs && !c->outside_calls[q]) {
                c->outside_calls[q] = true;
                queue[tail++] = q;
            }
        }
        /* Its split parts (foo.cold) run on its behalf. */
        for (uint32_t q = 0; q < prog->nprocs; q++)
            if (prog->procs[q].parent == p && !c->outside_calls[q]) {
                c->outside_calls[q] = true;
                queue[tail++] = q;
            }
    }
    free(queue);
}

/* ---- naming objects on the command line ------------------------------------ */

uint64_t mt_timed_object_key(const mt_program *prog, const mt_timed_object *t)
{
    const mt_procedure *p = &prog->procs[t->proc];
    if (t->region) {
        uint64_t first = p->blocks[t->region_first].start - p->entry;
        uint64_t end = t->region_end == MT_NONE ? 0 : p->blocks[t->region_end].start - p->entry;
        return MT_TIMER_REGION | (end & 0x7fffffffull) << 32 | (first & 0xffffffffull);
    }
    return t->loop == MT_NONE ? 0 : p->blocks[p->loops[t->loop].header].start;
}

/* The position of a loop suffix ("@0x..." or ":K") at the end of `spec`,
 * or NULL: the last '@' or ':' followed by a number (names such as
 * "ns::f" keep theirs). */
static const char *loop_suffix(const char *spec)
{
    const char *sep = NULL;
    for (const char *s = spec; *s; s++)
        if (*s == '@' || *s == ':')
            sep = s;
    if (!sep || sep == spec || !sep[1])
        return NULL;
    char *end;
    strtoull(sep + 1, &end, 0);
    return *end ? NULL : sep;
}

/* A region suffix "#A", "#A-" or "#A-B" at the end of `spec`, or NULL. */
static const char *region_suffix(const char *spec)
{
    const char *sep = strrchr(spec, '#');
    if (!sep || sep == spec || !sep[1])
        return NULL;
    char *end;
    strtoull(sep + 1, &end, 0);
    if (end == sep + 1)
        return NULL;
    if (*end == '-' && end[1]) {
        const char *b = end + 1;
        strtoull(b, &end, 0);
        if (end == b)
            return NULL;
    } else if (*end == '-') {
        end++;
    }
    return *end ? NULL : sep;
}

/* Cut point number `text` (decimal) or the cut point starting at `text`
 * (0x...), as an index in cuts[], or MT_NONE. */
static uint32_t cut_named(const mt_procedure *p, const uint32_t *cuts, uint32_t ncuts,
                          const char *text, char **rest)
{
    unsigned long long v = strtoull(text, rest, 0);
    bool address = text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
    for (uint32_t k = 0; k < ncuts; k++)
        if (address ? p->blocks[cuts[k]].start == v : k == v)
            return k;
    return MT_NONE;
}

static int parse_region(const mt_program *prog, uint32_t pi, const char *spec, const char *sep,
                        mt_timed_object *out, mt_error *err)
{
    const mt_procedure *p = &prog->procs[pi];
    uint32_t *cuts;
    uint32_t ncuts = mt_region_cuts(prog, pi, &cuts);
    int rc = -1;
    char *rest;
    uint32_t a = cut_named(p, cuts, ncuts, sep + 1, &rest), b = MT_NONE;
    bool b_given = rest[0] == '-' && rest[1];
    if (b_given)
        b = cut_named(p, cuts, ncuts, rest + 1, &rest);
    else if (!rest[0] && a != MT_NONE)
        b = a + 1 < ncuts ? a + 1 : MT_NONE; /* "#A": to the next cut point */
    bool b_missing = b_given && b == MT_NONE;
    if (ncuts == 0) {
        mt_error_set(err, "%s: %s cannot be cut into regions (unresolved, its entry in a loop, "
                          "or it never returns)", spec, p->name);
    } else if (a == MT_NONE || b_missing || (b != MT_NONE && b <= a)) {
        mt_error_set(err, "%s: %s has %u region cut points (numbers 0-%u, or their block "
                          "addresses: 'mtool analyze --function %s'); expected NAME#A, NAME#A- or "
                          "NAME#A-B with A before B", spec, p->name, ncuts, ncuts - 1, p->name);
    } else {
        out->region = true;
        out->region_first = cuts[a];
        out->region_end = b == MT_NONE ? MT_NONE : cuts[b];
        rc = 0;
    }
    free(cuts);
    return rc;
}

void mt_timed_object_format(const mt_program *prog, const mt_timed_object *o, char *buf,
                            size_t n)
{
    const mt_procedure *p = &prog->procs[o->proc];
    if (o->region && o->region_end != MT_NONE)
        snprintf(buf, n, "%s#0x%" PRIx64 "-0x%" PRIx64, p->name, p->blocks[o->region_first].start,
                 p->blocks[o->region_end].start);
    else if (o->region)
        snprintf(buf, n, "%s#0x%" PRIx64 "-", p->name, p->blocks[o->region_first].start);
    else if (o->loop != MT_NONE)
        snprintf(buf, n, "%s@0x%" PRIx64, p->name, p->blocks[p->loops[o->loop].header].start);
    else
        snprintf(buf, n, "%s", p->name);
}

int mt_timed_object_parse(const mt_program *prog, const char *spec, mt_timed_object *out,
                          mt_error *err)
{
    memset(out, 0, sizeof *out);
    const char *rsep = region_suffix(spec);
    const char *sep = rsep ? NULL : loop_suffix(spec);
    const char *cut = rsep ? rsep : sep;
    char *name = cut ? mt_xasprintf("%.*s", (int)(cut - spec), spec) : mt_xstrdup(spec);
    uint32_t pi = mt_find_procedure(prog, name);
    int rc = -1;
    if (pi == MT_NONE) {
        mt_error_set(err, "%s: no procedure named '%s' in %s (expected NAME, NAME@0xHEADER, "
                          "NAME:LOOP or NAME#REGION)", spec, name, prog->path);
        goto out;
    }
    out->proc = pi;
    out->loop = MT_NONE;
    out->region_first = out->region_end = MT_NONE;
    const mt_procedure *p = &prog->procs[pi];
    if (rsep) {
        rc = parse_region(prog, pi, spec, rsep, out, err);
        goto out;
    }
    if (sep) {
        unsigned long long v = strtoull(sep + 1, NULL, 0);
        for (uint32_t l = 0; l < p->nloops && out->loop == MT_NONE; l++)
            if (*sep == ':' ? l == v : p->blocks[p->loops[l].header].start == v)
                out->loop = l;
        if (out->loop == MT_NONE) {
            mt_error_set(err, "%s: %s has no such loop (%u loops)", spec, name, p->nloops);
            goto out;
        }
        if (p->loops[out->loop].irreducible) {
            mt_error_set(err, "%s: an irreducible region is not an m-object", spec);
            goto out;
        }
    }
    rc = 0;
out:
    free(name);
    return rc;
}
