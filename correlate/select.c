/* correlate/select.c — m-object selection (MTOOL's Figure 1, steps 2-4):
 * the procedures holding most memory operations, their loops, then
 * themselves, each kept when timable and estimable. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void mt_select_options_init(mt_select_options *o)
{
    *o = (mt_select_options){.coverage = 0.95, .inner_first = false, .timer_cycles = 70,
.min_cost_ratio = 50, .min_memops_ratio = 50, .timer_memops = 12,
                             .loops_cover = 0.9, .caller_levels = 8, .max_regions = 8};
}

const char *mt_candidate_status_name(uint8_t status)
{
    static const char *const names[] = {"timed", "not timable", "not estimable", "irreducible",
                                        "not run", "covered by a timed loop"};
    return status <= MT_CAND_COVERED ? names[status] : "?";
}

typedef struct {
    const mt_program *prog;
    const mt_program_costs *costs;
    const uint64_t *counts;
    const mt_select_options *o;
    mt_inclusive inclusive;   /* per procedure, estimable callees included */
    uint64_t *own_memops;     /* per procedure: its own blocks */
    uint32_t *seen;           /* per procedure: visit stamp of the descendant walk */
    uint32_t stamp;
    double *calls;            /* per procedure: calls into it (pass 1) */
    double *average;          /* per procedure: predicted cycles per call, every
                                 callee averaged over all its calls */
    double *cross_calls;      /* per prog->cross_callees entry: calls into it (pass 1) */
    mt_csr callers;           /* per procedure, the procedures with a call site into it,
                                 ascending (index_callers; off NULL until made) */
} selector;

static uint64_t count_of(const selector *s, uint32_t p, uint32_t b)
{
    return s->counts[s->costs->first[p] + b];
}

/* Calls site c of procedure p made in pass 1. */
static double site_calls(const selector *s, uint32_t p, const mt_call_site *c)
{
    return c->block == MT_NONE ? 0 : mt_site_calls(c, count_of(s, p, c->block));
}

static uint64_t block_memops(const selector *s, uint32_t p, uint32_t b)
{
    const mt_block *blk = &s->prog->procs[p].blocks[b];
    return count_of(s, p, b) * (blk->mem_reads + blk->mem_writes);
}

/* Pushes the callees of procedure p's executed call sites (those in `in`
 * when not NULL) not yet seen in this walk. */
static void push_callees(selector *s, uint32_t p, const bool *in, uint32_t *stack, size_t *n)
{
    const mt_procedure *proc = &s->prog->procs[p];
    for (uint32_t k = 0; k < proc->ncalls; k++) {
        const mt_call_site *c = &proc->calls[k];
        if (c->callee == MT_NONE || c->block == MT_NONE || (in && !in[c->block]) ||
            site_calls(s, p, c) == 0 || s->seen[c->callee] == s->stamp)
            continue;
        s->seen[c->callee] = s->stamp;
        stack[(*n)++] = c->callee;
    }
}

/* The library work of procedure q's calls when q is a known_import stub
 * (its library procedure's memory operations per call, every call of the
 * program's), else 0: the stub's own jump is among its own_memops. */
static uint64_t import_memops(const selector *s, uint32_t q)
{
    if (!s->prog->procs[q].known_import || !s->costs->imports)
        return 0;
    return (uint64_t)llround(s->calls[q] * s->costs->imports[q].memops);
}

/* The library work of procedure p's calls (those in `in` when not NULL)
 * through pointers into known imports of another object: each site's
 * calls x its callee's memory operations per call. */
static uint64_t cross_import_memops(const selector *s, uint32_t p, const bool *in)
{
    const mt_procedure *proc = &s->prog->procs[p];
    double sum = 0;
    for (uint32_t k = 0; k < proc->ncalls; k++) {
        const mt_call_site *c = &proc->calls[k];
        const mt_import_work *cross = mt_site_cross_import(s->prog, s->costs, c);
        if (cross && c->block != MT_NONE && (!in || in[c->block]))
            sum += site_calls(s, p, c) * cross->memops;
    }
    return (uint64_t)llround(sum);
}

/* Memory operations of every procedure reachable by executed calls from
 * procedure p's call sites (restricted to `in` when not NULL), once each,
 * with the library work of known imports.  An estimable object's
 * descendants work only on its behalf, so this is exactly what it causes. */
static uint64_t descendant_memops(selector *s, uint32_t p, const bool *in)
{
    uint32_t *stack = mt_xcalloc(s->prog->nprocs + 1, sizeof *stack);
    size_t n = 0;
    uint64_t sum = 0;
    s->stamp++;
    s->seen[p] = s->stamp;
    push_callees(s, p, in, stack, &n);
    sum += cross_import_memops(s, p, in);
    while (n > 0) {
        uint32_t q = stack[--n];
        sum += s->own_memops[q] + import_memops(s, q) + cross_import_memops(s, q, NULL);
        push_callees(s, q, NULL, stack, &n);
    }
    free(stack);
    return sum;
}

static mt_candidate procedure_candidate(selector *s, uint32_t p)
{
    const mt_procedure *proc = &s->prog->procs[p];
    mt_candidate c = {.proc = p, .loop = MT_NONE, .entries = count_of(s, p, 0)};
    for (uint32_t b = 0; b < proc->nblocks; b++)
        c.insns += count_of(s, p, b) * proc->blocks[b].ninsns;
    c.memops = s->own_memops[p] + descendant_memops(s, p, NULL);
    c.predicted = s->inclusive.total[p] > 0 ? s->inclusive.total[p] : 0;
    return c;
}

static mt_candidate loop_candidate(selector *s, uint32_t p, uint32_t l)
{
    const mt_procedure *proc = &s->prog->procs[p];
    const mt_loop *lp = &proc->loops[l];
    mt_candidate c = {.proc = p, .loop = l,
                      .entries = mt_loop_entries(s->prog, s->costs->first, s->counts, p, l),
                      .iterations = count_of(s, p, lp->header)};
    bool *in = mt_xcalloc(proc->nblocks + 1, sizeof *in);
    for (uint32_t k = 0; k < lp->nblocks; k++) {
        uint32_t b = lp->blocks[k];
        in[b] = true;
        c.memops += block_memops(s, p, b);
        c.insns += count_of(s, p, b) * proc->blocks[b].ninsns;
    }
    c.memops += descendant_memops(s, p, in);
    free(in);
    c.predicted = mt_predicted_cycles_loop(s->prog, s->costs, s->counts, p, l, &s->inclusive);
    return c;
}

/* ---- MTOOL's estimability rules for shared callees ------------------------ */

/* Calls into each procedure, and each one's predicted cycles per call with
 * its callees' cycles averaged over all their calls: exact for an estimable
 * object, the estimate the three rules below vouch for otherwise. */
static void average_calls(selector *s)
{
    uint32_t n = s->prog->nprocs;
    s->calls = mt_xcalloc(n + 1, sizeof *s->calls);
    s->average = mt_xcalloc(n + 1, sizeof *s->average);
    s->cross_calls = mt_xcalloc(s->prog->ncross_callees + 1, sizeof *s->cross_calls);
    for (uint32_t p = 0; p < n; p++)
        for (uint32_t k = 0; k < s->prog->procs[p].ncalls; k++) {
            const mt_call_site *c = &s->prog->procs[p].calls[k];
            if (c->callee != MT_NONE)
                s->calls[c->callee] += site_calls(s, p, c);
            else if (c->cross_callee)
                s->cross_calls[c->cross_callee - 1] += site_calls(s, p, c);
        }
    for (uint32_t p = 0; p < n; p++)
        if (s->calls[p] == 0 && s->prog->procs[p].nblocks) /* main, callbacks */
            s->calls[p] = (double)count_of(s, p, 0);
    uint8_t *state = mt_xcalloc(n + 1, 1);
    uint32_t *stack = mt_xcalloc(n + 1, sizeof *stack), *next = mt_xcalloc(n + 1, sizeof *next);
    for (uint32_t root = 0; root < n; root++) {
        if (state[root])
            continue;
        /* Iterative post-order: a procedure's average after its callees';
         * a call back into one in progress (recursion) is left out. */
        size_t depth = 0;
        stack[depth++] = root;
        state[root] = 1;
        next[root] = 0;
        while (depth) {
            uint32_t p = stack[depth - 1];
            const mt_procedure *proc = &s->prog->procs[p];
            if (next[p] < proc->ncalls) {
                uint32_t q = proc->calls[next[p]++].callee;
                if (q != MT_NONE && !state[q]) {
                    state[q] = 1;
                    next[q] = 0;
                    stack[depth++] = q;
                }
                continue;
            }
            if (proc->known_import && s->costs->imports) { /* its library procedure's */
                s->average[p] = s->costs->imports[p].cycles;
                state[p] = 2;
                depth--;
                continue;
            }
            double total = mt_predicted_cycles_proc(s->prog, s->costs, s->counts, p);
            for (uint32_t k = 0; k < proc->ncalls; k++) {
                const mt_call_site *c = &proc->calls[k];
                const mt_import_work *cross = mt_site_cross_import(s->prog, s->costs, c);
                if (cross)
                    total += site_calls(s, p, c) * cross->cycles;
                else if (c->callee != MT_NONE && state[c->callee] == 2)
                    total += site_calls(s, p, c) * s->average[c->callee];
            }
            s->average[p] = s->calls[p] > 0 ? total / s->calls[p] : 0;
            state[p] = 2;
            depth--;
        }
    }
    free(state);
    free(stack);
    free(next);
}

/* Predicted cycles of one path pass 1 saw run from block b to an exit of a
 * procedure whose executed blocks are loop-free: the shortest (longest =
 * false) or the longest.  Blocks that never ran are no path. */
static double path_cycles(const selector *s, uint32_t p, uint32_t b, double *memo, bool longest)
{
    if (memo[b] >= 0)
        return memo[b];
    const mt_procedure *proc = &s->prog->procs[p];
    double best = -1;
    for (uint32_t e = proc->blocks[b].first_succ; e < proc->blocks[b].first_succ + proc->blocks[b].nsucc; e++) {
        uint32_t d = proc->edges[e].dst;
        if (d == MT_NONE || d <= b || count_of(s, p, d) == 0) /* leaves, a back edge, never ran */
            continue;
        double c = path_cycles(s, p, d, memo, longest);
        if (best < 0 || (longest ? c > best : c < best))
            best = c;
    }
    memo[b] = s->costs->costs[s->costs->first[p] + b].cycles + (best < 0 ? 0 : best);
    return memo[b];
}

/* Whether procedure q ran a loop or a call in pass 1 (code that never ran
 * is not part of what its calls cost). */
static bool ran_loop_or_call(const selector *s, uint32_t q)
{
    const mt_procedure *proc = &s->prog->procs[q];
    for (uint32_t l = 0; l < proc->nloops; l++)
        if (count_of(s, q, proc->loops[l].header) > 0)
            return true;
    for (uint32_t k = 0; k < proc->ncalls; k++)
        if (site_calls(s, q, &proc->calls[k]) > 0)
            return true;
    return false;
}

/* Rule 1: a procedure that ran no loop and no call, whose average time per
 * call equals its shortest or its longest executed path, takes that time
 * on every call. */
static bool constant_time_leaf(const selector *s, uint32_t q)
{
    const mt_procedure *proc = &s->prog->procs[q];
    if (!proc->nblocks || s->calls[q] == 0 || ran_loop_or_call(s, q))
        return false;
    double *memo = mt_xcalloc(proc->nblocks + 1, sizeof *memo);
    bool constant = false;
    for (int longest = 0; longest < 2 && !constant; longest++) {
        for (uint32_t b = 0; b < proc->nblocks; b++)
            memo[b] = -1;
        double path = path_cycles(s, q, 0, memo, longest);
        constant = path > 0 && s->average[q] >= 0.99 * path && s->average[q] <= 1.01 * path;
    }
    free(memo);
    return constant;
}

typedef struct {
    const char *rule;     /* the last warning-worthy rule used, or NULL */
    const char *failed;   /* why the object stays not estimable */
    uint32_t callee;
    const mt_cross_callee *cross; /* the callee, in another object, when callee is MT_NONE */
} rescue_note;

static bool callee_estimable(selector *s, uint32_t q, double whole, uint8_t *visiting, rescue_note *why);

/* Whether the calls through pointers from here into known imports of
 * another object (`from_here` per prog->cross_callees entry) are this
 * object's work: as for a known_import stub, nearly all of the callee's
 * calls come from here, or their product is negligible beside `whole`. */
static bool cross_calls_estimable(const selector *s, const double *from_here, double whole,
                                  rescue_note *why)
{
    for (uint32_t j = 0; j < s->prog->ncross_callees; j++) {
        const mt_import_work *work = s->costs->cross_imports ? &s->costs->cross_imports[j] : NULL;
        if (from_here[j] == 0 || !work)
            continue;
        if (from_here[j] >= 0.98 * s->cross_calls[j]) {
            if (from_here[j] < s->cross_calls[j])
                why->rule = "98% caller", why->callee = MT_NONE, why->cross = &s->prog->cross_callees[j];
            continue;
        }
        if (from_here[j] * work->cycles >= 0.01 * whole) {
            why->failed = "shares a callee with other callers";
            why->callee = MT_NONE, why->cross = &s->prog->cross_callees[j];
            return false;
        }
        why->rule = "negligible product";
        why->callee = MT_NONE, why->cross = &s->prog->cross_callees[j];
    }
    return true;
}

/* Whether the calls of procedure p's call sites (those in `in`, when not
 * NULL) can be predicted per call.  `whole`: the object's predicted cycles,
 * its calls included, for the negligible-product rule. */
static bool calls_estimable(selector *s, uint32_t p, const bool *in, double whole,
                            uint8_t *visiting, rescue_note *why)
{
    const mt_procedure *proc = &s->prog->procs[p];
    double *from_here = mt_xcalloc(s->prog->nprocs + 1, sizeof *from_here);
    double *cross_here = mt_xcalloc(s->prog->ncross_callees + 1, sizeof *cross_here);
    bool ok = true;
    for (uint32_t k = 0; k < proc->ncalls; k++) {
        const mt_call_site *c = &proc->calls[k];
        if (c->block == MT_NONE || (in && !in[c->block]) || site_calls(s, p, c) == 0)
            continue;
        if (mt_site_cross_import(s->prog, s->costs, c)) {
            cross_here[c->cross_callee - 1] += site_calls(s, p, c);
            continue;
        }
        if (c->callee == MT_NONE) {
            why->failed = c->kind == MT_CALL_INDIRECT
                              ? "calls through a pointer to code mtool does not count (a shared "
                                "library, or a call site not recorded)"
                              : "calls code mtool does not count";
            why->callee = MT_NONE, why->cross = NULL;
            ok = false;
            break;
        }
        from_here[c->callee] += site_calls(s, p, c);
    }
    ok = ok && cross_calls_estimable(s, cross_here, whole, why);
    for (uint32_t q = 0; ok && q < s->prog->nprocs; q++) {
        if (from_here[q] == 0 || q == p || (s->prog->procs[q].is_plt && !s->prog->procs[q].known_import))
            continue; /* PLT calls are measured (outside time), recursion timed by depth */
        double share = from_here[q] / s->calls[q];
        if (share >= 0.98) {
            if (share < 1)
                why->rule = "98% caller", why->callee = q, why->cross = NULL;
        } else if (constant_time_leaf(s, q)) {
            continue; /* exact whoever calls it: no warning */
        } else if (from_here[q] * s->average[q] < 0.01 * whole) {
            why->rule = "negligible product", why->callee = q, why->cross = NULL;
            continue; /* its error cannot matter, whatever it does */
        } else {
            why->failed = "shares a callee with other callers", why->callee = q, why->cross = NULL;
            ok = false;
            break;
        }
        ok = callee_estimable(s, q, whole, visiting, why); /* its per-call figure must be whole */
    }
    free(from_here);
    free(cross_here);
    return ok;
}

/* Whether callee q's cycles per call hold for the object being estimated
 * (predicted cycles `whole`): a product negligible beside that object's
 * time is negligible however deep the callee sharing it. */
static bool callee_estimable(selector *s, uint32_t q, double whole, uint8_t *visiting, rescue_note *why)
{
    if (s->prog->procs[q].estimable || visiting[q])
        return true;
    visiting[q] = 1;
    return calls_estimable(s, q, NULL, whole, visiting, why);
}

/* An object that failed Tot = TDES, estimated through the rules: its
 * prediction becomes its own blocks plus every call's averaged cycles. */
/* What one call at site cs costs the candidate: the callee's average per
 * call, or its throughput where a leaf's calls overlap the loop around the
 * site (mt_predicted_inclusive's rule, so a rescued object and an
 * estimable one are predicted alike). */
static double callee_per_call(const selector *s, const mt_call_site *cs)
{
    if (cs->loop != MT_NONE && mt_call_overlaps_loop(s->prog, s->costs, s->counts, cs->callee))
        return s->inclusive.per_call_in_loop[cs->callee];
    return s->average[cs->callee];
}

static bool rescue(selector *s, mt_candidate *c)
{
    const mt_procedure *proc = &s->prog->procs[c->proc];
    bool *in = NULL;
    double own = 0;
    if (c->loop != MT_NONE || c->region.n) {
        in = mt_candidate_blocks(s->prog, c);
        for (uint32_t b = 0; b < proc->nblocks; b++)
            if (in[b])
                own += (double)count_of(s, c->proc, b) *
                       s->costs->costs[s->costs->first[c->proc] + b].cycles;
    } else {
        own = mt_predicted_cycles_proc(s->prog, s->costs, s->counts, c->proc);
    }
    /* Its prediction if the rules vouch for its calls: the whole that a
     * negligible product is judged against, at any depth. */
    for (uint32_t k = 0; k < proc->ncalls; k++) {
        const mt_call_site *cs = &proc->calls[k];
        const mt_import_work *cross = mt_site_cross_import(s->prog, s->costs, cs);
        if (cs->block == MT_NONE || (in && !in[cs->block]))
            continue;
        if (cross)
            own += site_calls(s, c->proc, cs) * cross->cycles;
        else if (cs->callee != MT_NONE && cs->callee != c->proc)
            own += site_calls(s, c->proc, cs) * callee_per_call(s, cs);
    }
    uint8_t *visiting = mt_xcalloc(s->prog->nprocs + 1, 1);
    rescue_note why = {.callee = MT_NONE};
    bool ok = calls_estimable(s, c->proc, in, own, visiting, &why);
    free(visiting);
    char callee[96] = "?";
    if (why.callee < s->prog->nprocs)
        snprintf(callee, sizeof callee, "%s", s->prog->procs[why.callee].name);
    else if (why.cross) /* as call_targets.tsv names it */
        snprintf(callee, sizeof callee, "%s:0x%" PRIx64, why.cross->object, why.cross->target);
    if (ok) {
        c->predicted = own;
        if (why.rule)
            snprintf(c->warning, sizeof c->warning, "estimated with the %s rule (%s): its time "
                     "per call may vary", why.rule, callee);
    } else {
        bool named = why.failed && (why.callee != MT_NONE || why.cross);
        snprintf(c->warning, sizeof c->warning, "%s%s%s", why.failed ? why.failed : "not estimable",
                 named ? ": " : "", named ? callee : "");
    }
    free(in);
    return ok;
}

/* Timable and estimable, or why not. */
static uint8_t judge(selector *s, mt_candidate *c)
{
    const mt_procedure *proc = &s->prog->procs[c->proc];
    if (c->entries == 0)
        return MT_CAND_NOT_RUN;
    if (c->loop != MT_NONE && proc->loops[c->loop].irreducible)
        return MT_CAND_IRREDUCIBLE;
    /* Estimability first: without it the prediction misses callees' work,
     * and timability judged on it would be wrong too. */
    bool estimable = c->region.n ? false /* no call-graph node: the callee rules decide */
                     : c->loop == MT_NONE ? proc->estimable : proc->loops[c->loop].estimable;
    if (!estimable && !rescue(s, c))
        return MT_CAND_NOT_ESTIMABLE;
    double per_entry = c->predicted / (double)c->entries;
    double memops_per_entry = (double)c->memops / (double)c->entries;
    if (per_entry < s->o->min_cost_ratio * s->o->timer_cycles ||
        memops_per_entry < s->o->min_memops_ratio * s->o->timer_memops)
        return MT_CAND_NOT_TIMABLE;
    return MT_CAND_TIMED;
}

static int by_own_memops_desc(const void *a, const void *b, void *arg)
{
    const uint64_t *m = arg;
    uint64_t x = m[*(const uint32_t *)a], y = m[*(const uint32_t *)b];
    return x < y ? 1 : x > y ? -1 : 0;
}

/* Index of the candidate for (proc, loop) in cands, or -1. */
static long find_candidate(const mt_candidate *cands, size_t n, uint32_t proc, uint32_t loop)
{
    for (size_t i = 0; i < n; i++)
        if (cands[i].proc == proc && cands[i].loop == loop && !cands[i].region.n)
            return (long)i;
    return -1;
}

/* The loops of procedure p in the order tried: parents before children
 * (the analyzer's order) for outer-first, the reverse for inner-first.  A
 * loop inside a timed loop is not tried outer-first (the enclosing timer
 * already localizes it); inner-first, a loop enclosing a timed one is still
 * tried (it may hold more than its timed child). */
static uint64_t add_loops(selector *s, uint32_t p, mt_candidate **out, size_t *n, size_t *cap)
{
    const mt_procedure *proc = &s->prog->procs[p];
    bool *timed = mt_xcalloc(proc->nloops + 1, sizeof *timed);
    uint64_t *memops = mt_xcalloc(proc->nloops + 1, sizeof *memops);
    for (uint32_t k = 0; k < proc->nloops; k++) {
        uint32_t l = s->o->inner_first ? proc->nloops - 1 - k : k;
        long known = find_candidate(*out, *n, p, l); /* tried from a callee already */
        if (known >= 0) {
            timed[l] = (*out)[known].status == MT_CAND_TIMED;
            memops[l] = (*out)[known].memops;
            continue;
        }
        mt_candidate c = loop_candidate(s, p, l);
        uint32_t up = proc->loops[l].parent;
        bool inside_timed = false;
        for (; !s->o->inner_first && up != MT_NONE; up = proc->loops[up].parent)
            inside_timed |= timed[up];
        c.status = inside_timed ? MT_CAND_COVERED : judge(s, &c);
        timed[l] = c.status == MT_CAND_TIMED;
        memops[l] = c.memops;
        if (c.entries > 0)
            MT_PUSH(*out, *n, *cap, c);
    }
    uint64_t timed_memops = 0; /* of the outermost timed loops */
    for (uint32_t l = 0; l < proc->nloops; l++) {
        bool outermost_timed = timed[l];
        for (uint32_t up = proc->loops[l].parent; up != MT_NONE; up = proc->loops[up].parent)
            outermost_timed &= !timed[up];
        timed_memops += outermost_timed ? memops[l] : 0;
    }
    free(timed);
    free(memops);
    return timed_memops;
}

/* Tries object (proc, loop) as a candidate (once); true when it is timed. */
static bool try_object(selector *s, uint32_t proc, uint32_t loop, mt_selection *out, size_t *cap)
{
    long at = find_candidate(out->cands, out->ncands, proc, loop);
    if (at >= 0)
        return out->cands[at].status == MT_CAND_TIMED;
    mt_candidate c = loop == MT_NONE ? procedure_candidate(s, proc) : loop_candidate(s, proc, loop);
    c.status = judge(s, &c);
    MT_PUSH(out->cands, out->ncands, *cap, c);
    return c.status == MT_CAND_TIMED;
}

/* The distinct callers of every procedure, ascending, once: the call
 * graph's edges (one per caller and callee, sorted by caller) read
 * backwards.  The search from callers looked for them among every
 * procedure's call sites for each procedure it reached, 34% of `mtool
 * time`'s CPU on Debian's python3 (10,220 procedures, 1,381 candidates;
 * Xeon family 6 model 85). */
static void index_callers(selector *s)
{
    const mt_program *prog = s->prog;
    uint32_t m = prog->ncg_edges;
    uint32_t *callee = mt_xmalloc(((size_t)m + 1) * sizeof *callee);
    uint32_t *caller = mt_xmalloc(((size_t)m + 1) * sizeof *caller);
    for (uint32_t e = 0; e < m; e++) {
        callee[e] = prog->cg_edges[e].callee;
        caller[e] = prog->cg_edges[e].caller;
    }
    mt_csr_build(&s->callers, prog->nprocs, callee, caller, m);
    free(callee);
    free(caller);
}

/* MTOOL: a procedure whose time per call is too short to time is measured
 * from its callers.  For each caller, the loops around its call sites are
 * tried innermost first, then the caller; a caller with nothing timable
 * passes the search on to its own callers, up to `levels` levels. */
static void time_from_callers(selector *s, uint32_t p0, mt_selection *out, size_t *cap,
                              int levels)
{
    uint32_t nprocs = s->prog->nprocs;
    uint8_t *state = mt_xcalloc(nprocs + 1, 1); /* 1: in the frontier, 2: done */
    state[p0] = 1;
    if (!s->callers.off)
        index_callers(s);
    for (int level = 0; level < levels; level++) {
        bool any = false;
        for (uint32_t x = 0; x < nprocs; x++) {
            if (state[x] != 1)
                continue;
            state[x] = 2;
            for (uint32_t i = s->callers.off[x]; i < s->callers.off[x + 1]; i++) {
                uint32_t q = s->callers.adj[i];
                const mt_procedure *qp = &s->prog->procs[q];
                bool timed = false, calls = false;
                for (uint32_t k = 0; k < qp->ncalls && !timed; k++) {
                    const mt_call_site *c = &qp->calls[k];
                    if (c->callee != x || site_calls(s, q, c) == 0)
                        continue;
                    calls = true;
                    for (uint32_t l = c->loop; l != MT_NONE && !timed; l = qp->loops[l].parent)
                        timed = try_object(s, q, l, out, cap);
                }
                if (calls && !timed && !try_object(s, q, MT_NONE, out, cap) && state[q] == 0) {
                    state[q] = 1; /* nothing in q: up to its callers */
                    any = true;
                }
            }
        }
        if (!any)
            break;
    }
    free(state);
}

/* Whether procedure p or one of its loops is timed. */
static bool timed_in(const mt_selection *out, uint32_t p)
{
    for (size_t i = 0; i < out->ncands; i++)
        if (out->cands[i].proc == p && out->cands[i].status == MT_CAND_TIMED)
            return true;
    return false;
}

/* ---- regions of large loop-free procedures (regions.c) -------------------- */

typedef struct {
    selector *s;
    double *memops_per_call; /* per procedure, once computed (< 0: not yet) */
} region_hooks;

static double hook_cycles_per_call(void *h, uint32_t q)
{
    return ((region_hooks *)h)->s->average[q];
}

static double hook_memops_per_call(void *h, uint32_t q)
{
    region_hooks *rh = h;
    selector *s = rh->s;
    if (rh->memops_per_call[q] < 0)
        rh->memops_per_call[q] = s->calls[q] > 0 ? (double)(s->own_memops[q] +
                                                            descendant_memops(s, q, NULL)) / s->calls[q]
                                                 : 0;
    return rh->memops_per_call[q];
}

static uint64_t hook_callee_memops(void *h, uint32_t p, const bool *in)
{
    return descendant_memops(((region_hooks *)h)->s, p, in);
}

static uint8_t hook_judge(void *h, mt_candidate *c)
{
    return judge(((region_hooks *)h)->s, c);
}

/* The regions of the procedure candidate just pushed (the last one). */
static void select_regions(selector *s, mt_selection *out, size_t *cap)
{
    region_hooks rh = {.s = s, .memops_per_call = mt_xcalloc(s->prog->nprocs + 1, sizeof(double))};
    for (uint32_t q = 0; q < s->prog->nprocs; q++)
        rh.memops_per_call[q] = -1;
    mt_region_context ctx = {.prog = s->prog, .costs = s->costs, .counts = s->counts, .o = s->o,
                             .sel = &rh, .cycles_per_call = hook_cycles_per_call,
                             .memops_per_call = hook_memops_per_call,
                             .callee_memops = hook_callee_memops, .judge = hook_judge};
    mt_select_regions(&ctx, out->ncands - 1, &out->cands, &out->ncands, cap);
    free(rh.memops_per_call);
}

mt_timed_object mt_candidate_object(const mt_candidate *c)
{
    return (mt_timed_object){.proc = c->proc, .loop = c->loop, .region = c->region.n > 0,
                             .region_first = c->region.first, .region_end = c->region.end};
}

void mt_select(const mt_program *prog, const mt_program_costs *costs, const uint64_t *counts,
               const mt_select_options *o, mt_selection *out)
{
    memset(out, 0, sizeof *out);
    selector s = {.prog = prog, .costs = costs, .counts = counts, .o = o,
                  .own_memops = mt_xcalloc(prog->nprocs + 1, sizeof(uint64_t)),
                  .seen = mt_xcalloc(prog->nprocs + 1, sizeof(uint32_t))};
    mt_predicted_inclusive(prog, costs, counts, &s.inclusive);
    average_calls(&s);
    uint32_t *order = mt_xcalloc(prog->nprocs + 1, sizeof *order);
    for (uint32_t p = 0; p < prog->nprocs; p++) {
        order[p] = p;
        for (uint32_t b = 0; b < prog->procs[p].nblocks; b++)
            s.own_memops[p] += block_memops(&s, p, b);
        out->memops_total += s.own_memops[p];
        out->predicted_total += mt_predicted_cycles_proc(prog, costs, counts, p);
    }
    qsort_r(order, prog->nprocs, sizeof *order, by_own_memops_desc, s.own_memops);
    size_t cap = 0;
    for (uint32_t i = 0; i < prog->nprocs; i++) {
        uint32_t p = order[i];
        if (s.own_memops[p] == 0 ||
            (double)out->memops_selected >= o->coverage * (double)out->memops_total)
            break;
        out->memops_selected += s.own_memops[p];
        uint64_t in_loops = add_loops(&s, p, &out->cands, &out->ncands, &cap);
        if (find_candidate(out->cands, out->ncands, p, MT_NONE) >= 0)
            continue; /* tried from a callee already */
        mt_candidate c = procedure_candidate(&s, p);
        /* Timed too only when its timed loops leave a share worth knowing. */
        c.status = (double)in_loops >= o->loops_cover * (double)c.memops ? MT_CAND_COVERED
                                                                          : judge(&s, &c);
        MT_PUSH(out->cands, out->ncands, cap, c);
        select_regions(&s, out, &cap);
        if (!timed_in(out, p))
            time_from_callers(&s, p, out, &cap, o->caller_levels);
    }
    /* Stable: timed objects keep the order they were chosen in. */
    mt_candidate *sorted = mt_xcalloc(out->ncands + 1, sizeof *sorted);
    size_t k = 0;
    for (int pass = 0; pass < 2; pass++)
        for (size_t j = 0; j < out->ncands; j++)
            if ((out->cands[j].status == MT_CAND_TIMED) == (pass == 0))
                sorted[k++] = out->cands[j];
    free(out->cands);
    out->cands = sorted;
    for (size_t j = 0; j < out->ncands; j++) {
        out->cands[j].prog = prog;
        out->ntimed += out->cands[j].status == MT_CAND_TIMED;
    }
    free(order);
    mt_inclusive_free(&s.inclusive);
    free(s.calls);
    free(s.average);
    free(s.cross_calls);
    mt_csr_free(&s.callers);
    free(s.own_memops);
    free(s.seen);
}

void mt_procedures_work(const mt_program *prog, const mt_program_costs *costs, const uint64_t *counts,
                        const uint32_t *procs, size_t n, mt_import_work *out, bool *known)
{
    selector s = {.prog = prog, .costs = costs, .counts = counts,
                  .own_memops = mt_xcalloc(prog->nprocs + 1, sizeof(uint64_t)),
                  .seen = mt_xcalloc(prog->nprocs + 1, sizeof(uint32_t))};
    mt_predicted_inclusive(prog, costs, counts, &s.inclusive);
    average_calls(&s);
    for (uint32_t p = 0; p < prog->nprocs; p++)
        for (uint32_t b = 0; b < prog->procs[p].nblocks; b++)
            s.own_memops[p] += block_memops(&s, p, b);
    uint8_t *visiting = mt_xcalloc(prog->nprocs + 1, 1);
    for (size_t k = 0; k < n; k++) {
        uint32_t q = procs[k];
        bool estimable = prog->procs[q].estimable;
        rescue_note why = {.callee = MT_NONE};
        memset(visiting, 0, prog->nprocs + 1);
        known[k] = s.calls[q] > 0 &&
                   (estimable || callee_estimable(&s, q, s.average[q] * s.calls[q], visiting, &why));
        double memops = (double)(s.own_memops[q] + descendant_memops(&s, q, NULL));
        out[k] = (mt_import_work){.cycles = estimable ? s.inclusive.per_call[q] : s.average[q],
                                  .memops = s.calls[q] > 0 ? memops / s.calls[q] : 0};
    }
    free(visiting);
    mt_inclusive_free(&s.inclusive);
    free(s.calls);
    free(s.average);
    free(s.cross_calls);
    free(s.own_memops);
    free(s.seen);
}

void mt_selection_free(mt_selection *s)
{
    free(s->cands);
    free(s->object_calls);
    memset(s, 0, sizeof *s);
}

static void name_object(mt_candidate *to, const mt_candidate *from, const char *object)
{
    *to = *from;
    to->object = object;
}

void mt_selection_join(const mt_selection *parts, const char *const *objects, size_t nparts,
                       mt_selection *out)
{
    memset(out, 0, sizeof *out);
    for (size_t k = 0; k < nparts; k++) {
        out->ncands += parts[k].ncands;
        out->ntimed += parts[k].ntimed;
        out->memops_total += parts[k].memops_total;
        out->memops_selected += parts[k].memops_selected;
        out->predicted_total += parts[k].predicted_total;
    }
    out->cands = mt_xcalloc(out->ncands + 1, sizeof *out->cands);
    size_t at = 0;
    for (size_t k = 0; k < nparts; k++) /* the timed ones, in record order */
        for (size_t j = 0; j < parts[k].ntimed; j++)
            name_object(&out->cands[at++], &parts[k].cands[j], objects[k]);
    for (size_t k = 0; k < nparts; k++)
        for (size_t j = parts[k].ntimed; j < parts[k].ncands; j++)
            name_object(&out->cands[at++], &parts[k].cands[j], objects[k]);
}
