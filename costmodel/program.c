/* costmodel/program.c — predictions for every block of an analyzed program,
 * and count x cycles sums over procedures and loops.
 *
 * The analysis keeps no instruction bytes (analyzer/ARCHITECTURE: blocks
 * only), so the executable segments are mapped again here. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "../common/elf_file.h"
#include "costmodel.h"

/* A block ends with a taken branch when its conditional branch jumps
 * backwards inside a loop containing it: a loop's back edge, or the bottom
 * test of a rotated loop (static backward-taken prediction). */
static bool ends_with_taken_branch(const mt_procedure *proc, uint32_t b)
{
    const mt_block *blk = &proc->blocks[b];
    for (uint32_t e = blk->first_succ; e < blk->first_succ + blk->nsucc; e++) {
        const mt_edge *ed = &proc->edges[e];
        if (ed->kind != MT_EDGE_COND_TAKEN || ed->dst == MT_NONE ||
            proc->blocks[ed->dst].start > blk->start)
            continue;
        for (uint32_t l = blk->loop; l != MT_NONE; l = proc->loops[l].parent) {
            const mt_loop *lp = &proc->loops[l];
            for (uint32_t k = 0; k < lp->nblocks; k++)
                if (lp->blocks[k] == ed->dst)
                    return true;
        }
    }
    return false;
}

/* Which blocks carry pass 1's counter: none (!on), or every block but those
 * whose count is derived from others' (rewriter/counters.c), by the
 * program-wide block index (first[procedure] + block). */
typedef struct {
    bool on;
    const bool *derived;       /* NULL: none derived */
    const uint64_t *first;
    const mt_program *prog;
} probe_set;

/* The counter pass 1 puts at block b (rewriter/relocate.c): a block that
 * loops on itself counts in a register. */
static uint8_t probe_of(const mt_procedure *proc, uint32_t b, const probe_set *probes)
{
    if (!probes->on ||
        (probes->derived && probes->derived[probes->first[proc - probes->prog->procs] + b]))
        return MT_PROBE_NONE;
    const mt_block *blk = &proc->blocks[b];
    for (uint32_t e = blk->first_succ; e < blk->first_succ + blk->nsucc; e++)
        if (proc->edges[e].dst == b)
            return MT_PROBE_REGISTER;
    return MT_PROBE_MEMORY;
}

/* A block's cycles when its executions overlap with the code around them:
 * its throughput bounds, not its critical path.  A loop's blocks already
 * are (their recurrence is the loop's). */
static double overlapped_cycles(const mt_procedure *proc, uint32_t b, const mt_block_cost *bc)
{
    if (proc->blocks[b].loop != MT_NONE)
        return bc->cycles;
    double t = 0;
    for (int k = 0; k < MT_BOUND_COUNT; k++)
        if (k != MT_BOUND_LATENCY && k != MT_BOUND_RECURRENCE && bc->bounds[k] > t)
            t = bc->bounds[k];
    return t;
}

enum { MAX_SPLICED_BLOCKS = 16 };

/* Pass 1's counts where the prediction has them (counts NULL: a static
 * prediction, every block taken as run), by the program-wide block index. */
typedef struct {
    const uint64_t *counts;
    const uint64_t *first;
} run_counts;

static bool block_ran(const run_counts *rc, uint32_t q, uint32_t b)
{
    return !rc->counts || rc->counts[rc->first[q] + b] > 0;
}

/* A callee whose calls from inside a loop overlap the loop's other
 * iterations, as its code would inlined: a leaf that runs straight through
 * (no loops, no calls, one successor a block) in this run, whose code the
 * caller's loop recurrence is traced through (evaluate_path).  Its cost per
 * call there is its throughput, not its critical path: a loop calling a
 * 9-instruction leaf (an 8-cycle chain) ran 3.2 cycles an iteration on the
 * Xeon family 6 model 207 and was predicted at 10 with the critical path.
 * With counts, blocks that never ran are left out: a leaf whose error path
 * (a compare, a call to a reporting procedure) never runs still runs
 * straight through (samples/memory.c's scale_value: scaled_sum's loop
 * calling it ran 12.9 cycles an iteration on AMD EPYC Zen 3, family 25
 * model 1, and was predicted at 35.1 with the leaf's 23-cycle critical
 * path, at 12.0 with its throughput).  Returns how many blocks one call
 * runs, listed in `path` in the order it runs them, or 0. */
static uint32_t straight_path(const mt_program *prog, uint32_t q, const run_counts *rc,
                              uint32_t path[MAX_SPLICED_BLOCKS])
{
    const mt_procedure *proc = &prog->procs[q];
    if (!proc->nblocks || !block_ran(rc, q, 0))
        return 0;
    for (uint32_t k = 0; k < proc->ncalls; k++)
        if (proc->calls[k].block == MT_NONE || block_ran(rc, q, proc->calls[k].block))
            return 0;
    uint32_t n = 0, ran = 0;
    for (uint32_t b = 0; b < proc->nblocks; b++)
        ran += block_ran(rc, q, b);
    for (uint32_t b = 0; b != MT_NONE;) {
        const mt_block *blk = &proc->blocks[b];
        if (n == MAX_SPLICED_BLOCKS || blk->loop != MT_NONE)
            return 0;
        path[n++] = b;
        uint32_t next = MT_NONE;
        for (uint32_t e = blk->first_succ; e < blk->first_succ + blk->nsucc; e++) {
            uint32_t d = proc->edges[e].dst;
            if (proc->edges[e].kind == MT_EDGE_RETURN)
                continue;
            if (d == MT_NONE)
                return 0; /* leaves by a jump: a tail call, a target not followed */
            if (!block_ran(rc, q, d))
                continue;
            if (next != MT_NONE)
                return 0; /* two successors ran: a branch the calls take both ways */
            next = d;
        }
        b = next;
    }
    return n == ran ? n : 0; /* every block that ran is on the path */
}

static bool overlaps_in_loops(const mt_program *prog, uint32_t q, const run_counts *rc)
{
    uint32_t path[MAX_SPLICED_BLOCKS];
    return straight_path(prog, q, rc, path) > 0;
}

bool mt_call_overlaps_loop(const mt_program *prog, const mt_program_costs *c,
                           const uint64_t *counts, uint32_t q)
{
    const run_counts rc = {counts, c->first};
    return overlaps_in_loops(prog, q, &rc);
}

/* The blocks of loop l's body as laid out: the run of its blocks that are
 * adjacent in address order around the header.  Loop blocks placed apart,
 * past blocks outside the loop, are out-of-line paths the compiler expected
 * to be cold.  The header may sit anywhere in the run (a loop entered in
 * the middle has its back edge at the top).  Blocks of nested loops are
 * in: a path of one iteration may pass through them once (clang's
 * unrolled loops put an iteration's hot path in a "nested loop" whose own
 * back edge is the cold one). */
static void mark_body(const mt_procedure *proc, uint32_t l, bool *in_body)
{
    const mt_loop *lp = &proc->loops[l];
    bool *in_loop = mt_xcalloc(proc->nblocks + 1, sizeof *in_loop);
    for (uint32_t k = 0; k < lp->nblocks; k++)
        in_loop[lp->blocks[k]] = true;
    uint32_t lo = lp->header, hi = lp->header; /* blocks are sorted by address */
    while (lo > 0 && in_loop[lo - 1])
        lo--;
    while (hi + 1 < proc->nblocks && in_loop[hi + 1])
        hi++;
    for (uint32_t b = lo; b <= hi; b++)
        in_body[b] = true;
    free(in_loop);
}

/* Enumerating the paths of one iteration, header to back edge. */
typedef struct {
    mt_predictor *p;
    const mt_elf_file *im;
    const mt_program *prog;
    const mt_procedure *proc;
    const mt_block_cost *costs;
    const bool *in_body;
    const bool *core;  /* runs on every iteration: predicted with the header */
    const probe_set *probes; /* with pass 1's counters, where they are */
    run_counts rc;     /* which blocks of a called leaf ran (straight_path) */
    uint32_t header;
    uint32_t *path;
    bool *on_path;
    mt_code_range *ranges;
    size_t *range_of; /* the range of the path's k-th block (a leaf's code may follow it) */
    unsigned npaths;
    unsigned visits; /* blocks entered by the walk: bounded, as paths can be exponential */
    double need; /* max over paths of recurrence - throughput of its other blocks */
    double best; /* max over paths of max(joint throughput, recurrence) - its other blocks */
    bool any;    /* a path not through nested loops was evaluated */
    uint32_t loop;
    double *forwarded; /* per block of a path: loads fed by store forwarding */
    mt_loop_cost chain; /* paths through nested loops: the largest recurrence */
} path_walk;

enum { MAX_PATHS = 64, MAX_VISITS = 4096 };

/* A path of one iteration: its recurrence beyond its other blocks' costs
 * goes to the header.  A path through nested loops runs their blocks many
 * times per iteration, which only the counts tell: its recurrence is kept
 * for the sums (mt_loop_cost.chain), and whether a load on it is fed by
 * store forwarding (a chain through memory, which restarts when the
 * addresses move with each entry). */
/* The leaf that block b of the walk's procedure calls and whose code an
 * iteration's recurrence is traced through, or NULL; its blocks as one
 * call runs them in `path` (*n of them). */
static const mt_procedure *spliced_callee(const path_walk *w, uint32_t b,
                                          uint32_t path[MAX_SPLICED_BLOCKS], uint32_t *n)
{
    for (uint32_t k = 0; k < w->proc->ncalls; k++) {
        const mt_call_site *s = &w->proc->calls[k];
        if (s->block == b && s->callee != MT_NONE && s->share >= 1 &&
            (*n = straight_path(w->prog, s->callee, &w->rc, path)) > 0)
            return &w->prog->procs[s->callee];
    }
    return NULL;
}

/* Appends the blocks of the path's block k, and of the leaf it calls, to
 * the ranges (n so far); adds the leaf's overlapped cycles to *others.
 * False when code is missing. */
static bool add_ranges(path_walk *w, uint32_t k, mt_code_range *ranges, size_t *n, double *others)
{
    const mt_block *b = &w->proc->blocks[w->path[k]];
    ranges[*n] = (mt_code_range){mt_elf_file_bytes(w->im, b->start, b->end - b->start),
                                 b->end - b->start, b->start, false,
                                 probe_of(w->proc, w->path[k], w->probes)};
    if (!ranges[(*n)++].code)
        return false;
    uint32_t leaf[MAX_SPLICED_BLOCKS], nleaf = 0;
    const mt_procedure *q = spliced_callee(w, w->path[k], leaf, &nleaf);
    for (uint32_t j = 0; q && j < nleaf; j++) {
        const mt_block *qb = &q->blocks[leaf[j]];
        mt_code_range *r = &ranges[(*n)++];
        *r = (mt_code_range){mt_elf_file_bytes(w->im, qb->start, qb->end - qb->start),
                             qb->end - qb->start, qb->start, false, probe_of(q, leaf[j], w->probes)};
        if (!r->code)
            return false;
        mt_block_context ctx = {.throughput_only = true, .probe = r->probe};
        mt_block_cost bc;
        mt_predict_block(w->p, r->code, r->len, r->addr, &ctx, &bc);
        *others += bc.cycles;
    }
    return true;
}

/* A path of one iteration: its recurrence beyond its other blocks' costs
 * goes to the header.  A path through nested loops runs their blocks many
 * times per iteration, which only the counts tell: its recurrence is kept
 * for the sums (mt_loop_cost.chain), and whether a load on it is fed by
 * store forwarding (a chain through memory, which restarts when the
 * addresses move with each entry).  The code of a leaf called on the path
 * is part of the iteration (overlaps_in_loops). */
static void evaluate_path(path_walk *w, size_t n)
{
    double others = 0;
    bool nested = false;
    size_t nr = 0;
    for (size_t k = 0; k < n; k++) {
        const mt_block *b = &w->proc->blocks[w->path[k]];
        w->range_of[k] = nr;
        if (!add_ranges(w, (uint32_t)k, w->ranges, &nr, &others))
            return;
        if (!w->core[w->path[k]])
            others += w->costs[w->path[k]].cycles;
        nested = nested || b->loop != w->loop;
    }
    double rec = mt_predict_recurrence(w->p, w->ranges, nr, w->forwarded);
    if (!nested) {
        if (rec - others > w->need)
            w->need = rec - others;
        /* The path's blocks share the core: its iteration takes their joint
         * throughput (or its recurrence), not the sum of each block's own
         * (sqrt_f64 gcc -O2: a conditional sqrtsd block of 6.0 cycles beside
         * 1.3 cycles of loads, compare and loop control in the blocks every
         * iteration runs ran 5.9 an iteration on the Xeon family 6 model
         * 207, the sum 7.3).  The header carries what the worst path needs
         * beyond its conditional blocks' own costs. */
        for (size_t k = 0; k < n; k++) {
            const mt_block *b = &w->proc->blocks[w->path[k]];
            uint64_t next = w->proc->blocks[k + 1 < n ? w->path[k + 1] : w->header].start;
            w->ranges[w->range_of[k]].taken_exit = next != b->end;
        }
        mt_block_cost tp;
        mt_predict_throughput(w->p, w->ranges, nr, &tp);
        double cost = (tp.cycles > rec ? tp.cycles : rec) - others;
        if (!w->any || cost > w->best)
            w->best = cost;
        w->any = true;
        return;
    }
    if (rec <= w->chain.chain)
        return;
    w->chain.chain = rec;
    w->chain.through_memory = false;
    for (size_t k = 0; k < nr; k++)
        w->chain.through_memory = w->chain.through_memory || w->forwarded[k] > 0;
}

static void walk_paths(path_walk *w, uint32_t b, size_t depth)
{
    if (++w->visits > MAX_VISITS)
        return;
    w->path[depth] = b;
    w->on_path[b] = true;
    const mt_block *blk = &w->proc->blocks[b];
    for (uint32_t e = blk->first_succ; e < blk->first_succ + blk->nsucc && w->npaths < MAX_PATHS; e++) {
        uint32_t d = w->proc->edges[e].dst;
        if (d == w->header) {
            w->npaths++;
            evaluate_path(w, depth + 1);
        } else if (d != MT_NONE && w->in_body[d] && !w->on_path[d]) {
            walk_paths(w, d, depth + 1);
        }
    }
    w->on_path[b] = false;
}

/* The blocks every iteration runs: with a single back edge, its source and
 * its dominators up to the header.  Returns how many, listed in `list`. */
static size_t mark_core(const mt_procedure *proc, uint32_t l, bool *core, uint32_t *list)
{
    const mt_loop *lp = &proc->loops[l];
    size_t n = 0;
    core[lp->header] = true;
    list[n++] = lp->header;
    if (lp->nback_edges != 1)
        return n;
    for (uint32_t b = proc->edges[lp->back_edges[0]].src; b != lp->header && b != MT_NONE;
         b = proc->blocks[b].idom) {
        if (proc->blocks[b].loop != l)
            break;
        core[b] = true;
        list[n++] = b;
    }
    return n;
}

/* One iteration: the core blocks' joint throughput, and the recurrence of
 * every path beyond its conditional blocks, both on the header; paths
 * through nested loops into lc->chain. */
static void predict_loop(path_walk *w, mt_block_cost *costs, uint32_t l, uint32_t *list,
                         mt_loop_cost *lc)
{
    const mt_procedure *proc = w->proc;
    memset((void *)w->in_body, 0, proc->nblocks * sizeof *w->in_body);
    memset((void *)w->core, 0, proc->nblocks * sizeof *w->core);
    mark_body(proc, l, (bool *)w->in_body);
    size_t ncore = mark_core(proc, l, (bool *)w->core, list);
    for (size_t k = 0; k < ncore; k++) {
        const mt_block *b = &proc->blocks[list[k]];
        w->ranges[k] = (mt_code_range){mt_elf_file_bytes(w->im, b->start, b->end - b->start),
                                       b->end - b->start, b->start,
                                       ends_with_taken_branch(proc, list[k]),
                                       probe_of(proc, list[k], w->probes)};
        if (!w->ranges[k].code)
            return;
    }
    w->header = proc->loops[l].header;
    mt_block_cost *hc = &costs[w->header], joint;
    mt_predict_throughput(w->p, w->ranges, ncore, &joint);
    w->npaths = 0;
    w->visits = 0;
    w->need = 0;
    w->best = 0;
    w->any = false;
    w->loop = l;
    memset(&w->chain, 0, sizeof w->chain);
    walk_paths(w, w->header, 0);
    for (size_t k = 1; k < ncore; k++) {
        costs[list[k]].cycles = 0;
        costs[list[k]].limit = MT_BOUND_IN_HEADER;
    }
    uint32_t header_insns = hc->ninsns;
    *hc = joint;
    hc->ninsns = header_insns;
    hc->bounds[MT_BOUND_RECURRENCE] = w->need;
    double throughput = hc->cycles;
    if (w->need > hc->cycles) {
        hc->cycles = w->need;
        hc->limit = MT_BOUND_RECURRENCE;
    }
    /* with conditional blocks on every path, what the worst path needs
     * beyond them (never below none) */
    if (w->any && w->best < hc->cycles)
        hc->cycles = w->best > 0 ? w->best : 0;
    *lc = w->chain;
    lc->slack = w->need > throughput ? w->need - throughput : 0;
}

static void predict_procedure(mt_predictor *p, const mt_elf_file *im, const mt_program *prog,
                              const mt_procedure *proc, const probe_set *probes, const run_counts *rc,
                              mt_block_cost *costs, mt_loop_cost *loops)
{
    for (uint32_t b = 0; b < proc->nblocks; b++) {
        const mt_block *blk = &proc->blocks[b];
        const uint8_t *code = mt_elf_file_bytes(im, blk->start, blk->end - blk->start);
        mt_block_context ctx = {.throughput_only = blk->loop != MT_NONE,
                                .taken_exit = ends_with_taken_branch(proc, b),
                                .probe = probe_of(proc, b, probes)};
        if (code)
            mt_predict_block(p, code, blk->end - blk->start, blk->start, &ctx, &costs[b]);
    }
    if (!proc->nloops)
        return;
    path_walk w = {.p = p, .im = im, .prog = prog, .proc = proc, .costs = costs, .probes = probes,
                   .rc = *rc};
    /* a path's blocks, each with the blocks of a leaf it may call */
    size_t nranges = (proc->nblocks + 1) * (MAX_SPLICED_BLOCKS + 1);
    w.in_body = mt_xcalloc(proc->nblocks, sizeof *w.in_body);
    w.core = mt_xcalloc(proc->nblocks, sizeof *w.core);
    uint32_t *list = mt_xcalloc(proc->nblocks + 1, sizeof *list);
    w.on_path = mt_xcalloc(proc->nblocks, sizeof *w.on_path);
    w.path = mt_xcalloc(proc->nblocks + 1, sizeof *w.path);
    w.ranges = mt_xcalloc(nranges, sizeof *w.ranges);
    w.range_of = mt_xcalloc(proc->nblocks + 1, sizeof *w.range_of);
    w.forwarded = mt_xcalloc(nranges, sizeof *w.forwarded);
    for (uint32_t l = 0; l < proc->nloops; l++)
        if (!proc->loops[l].irreducible)
            predict_loop(&w, costs, l, list, &loops[l]);
    free(w.forwarded);
    free((void *)w.in_body);
    free((void *)w.core);
    free(list);
    free(w.on_path);
    free(w.path);
    free(w.ranges);
    free(w.range_of);
}

/* Whether any block of procedure `proc` ran (counts parallel to the costs). */
static bool executed(const mt_program_costs *c, const uint64_t *counts, uint32_t proc)
{
    for (uint64_t i = c->first[proc]; i < c->first[proc + 1]; i++)
        if (counts[i])
            return true;
    return false;
}

bool *mt_chasing_loops(const mt_machine *m, const mt_program *prog, mt_error *err)
{
    mt_elf_file im;
    if (mt_elf_file_open(&im, prog->path, err) != 0)
        return NULL;
    mt_predictor *p = mt_predictor_new(m, err);
    if (!p) {
        mt_elf_file_close(&im);
        return NULL;
    }
    bool *chases = mt_xcalloc(mt_code_object_loops(prog, prog->nprocs) + 1, sizeof *chases);
    mt_code_range *ranges = NULL;
    size_t cap = 0;
    for (uint32_t q = 0; q < prog->nprocs; q++) {
        const mt_procedure *proc = &prog->procs[q];
        uint32_t first = mt_code_object_loops(prog, q);
        for (uint32_t l = 0; l < proc->nloops; l++) {
            size_t n = 0;
            for (uint32_t k = 0; k < proc->loops[l].nblocks; k++) {
                uint32_t b = proc->loops[l].blocks[k];
                const mt_block *blk = &proc->blocks[b];
                if (mt_code_object_of_block(prog, q, b, first) != first + l)
                    continue; /* a nested loop's: its own code object */
                mt_code_range r = {mt_elf_file_bytes(&im, blk->start, blk->end - blk->start),
                                   blk->end - blk->start, blk->start, false, MT_PROBE_NONE};
                if (r.code)
                    MT_PUSH(ranges, n, cap, r);
            }
            chases[first + l] = n && mt_predict_chases(p, ranges, n);
        }
    }
    free(ranges);
    mt_predictor_free(p);
    mt_elf_file_close(&im);
    return chases;
}

/* Every procedure, or only those with an executed block (`only_executed`,
 * with counts). */
static int predict(const mt_machine *m, const mt_program *prog, bool with_probes,
                   const bool *derived, const uint64_t *counts, bool only_executed,
                   mt_program_costs *out, mt_error *err)
{
    memset(out, 0, sizeof *out);
    mt_elf_file im;
    if (mt_elf_file_open(&im, prog->path, err) != 0)
        return -1;
    mt_predictor *p = mt_predictor_new(m, err);
    if (!p) {
        mt_elf_file_close(&im);
        return -1;
    }
    out->nprocs = prog->nprocs;
    out->first = mt_block_offsets(prog);
    out->costs = mt_xcalloc(out->first[prog->nprocs] + 1, sizeof *out->costs);
    out->loop_first = mt_xcalloc(prog->nprocs + 1, sizeof *out->loop_first);
    for (uint32_t i = 0; i < prog->nprocs; i++)
        out->loop_first[i + 1] = out->loop_first[i] + prog->procs[i].nloops;
    out->loops = mt_xcalloc(out->loop_first[prog->nprocs] + 1, sizeof *out->loops);
    out->exit_trips = m->exit_trips;
    out->exit_cycles = m->exit_cycles;
    out->chain_loads = m->chain_loads;
    mt_block_cost *probed = NULL;
    mt_loop_cost *probed_loops = NULL;
    const probe_set none = {0}, counters = {true, derived, out->first, prog};
    const run_counts rc = {counts, out->first};
    for (uint32_t i = 0; i < prog->nprocs; i++) {
        mt_block_cost *c = &out->costs[out->first[i]];
        if (only_executed && !executed(out, counts, i))
            continue;
        predict_procedure(p, &im, prog, &prog->procs[i], &none, &rc, c, &out->loops[out->loop_first[i]]);
        if (!with_probes || !prog->procs[i].nblocks)
            continue;
        probed = mt_xrealloc(probed, prog->procs[i].nblocks * sizeof *probed);
        memset(probed, 0, prog->procs[i].nblocks * sizeof *probed);
        probed_loops = mt_xrealloc(probed_loops, (prog->procs[i].nloops + 1) * sizeof *probed_loops);
        predict_procedure(p, &im, prog, &prog->procs[i], &counters, &rc, probed, probed_loops);
        for (uint32_t b = 0; b < prog->procs[i].nblocks; b++)
            c[b].probe_cycles = probed[b].cycles > c[b].cycles ? probed[b].cycles - c[b].cycles : 0;
    }
    free(probed);
    free(probed_loops);
    mt_predictor_free(p);
    mt_elf_file_close(&im);
    return 0;
}

int mt_predict_program(const mt_machine *m, const mt_program *prog, bool with_probes,
                       const uint64_t *counts, mt_program_costs *out, mt_error *err)
{
    return predict(m, prog, with_probes, NULL, counts, false, out, err);
}

int mt_predict_executed(const mt_machine *m, const mt_program *prog, bool with_probes,
                        const bool *derived, const uint64_t *counts, mt_program_costs *out,
                        mt_error *err)
{
    return predict(m, prog, with_probes, derived, counts, true, out, err);
}

void mt_program_costs_free(mt_program_costs *c)
{
    free(c->costs);
    free(c->first);
    free(c->loops);
    free(c->loop_first);
    free(c->imports);
    free(c->cross_imports);
    memset(c, 0, sizeof *c);
}

const mt_import_work *mt_site_cross_import(const mt_program *prog, const mt_program_costs *c,
                                           const mt_call_site *s)
{
    uint32_t j = s->cross_callee - 1; /* MT_NONE for none */
    return c->cross_imports && j < prog->ncross_callees && prog->cross_callees[j].known_import
               ? &c->cross_imports[j] : NULL;
}

double mt_loop_exit_cycles(const mt_program_costs *c, double trips, double slack)
{
    if (c->exit_cycles <= 0 || trips <= c->exit_trips)
        return 0;
    double hidden = trips * slack;
    return hidden < c->exit_cycles ? c->exit_cycles - hidden : 0;
}

double mt_chain_cycles(const mt_program_costs *c, double chain, double loads, double trips)
{
    if (c->chain_loads <= 0 || loads <= 0 || trips <= 0)
        return chain;
    return chain / (1 + c->chain_loads / loads / trips);
}

/* Whether loop `inner` lies inside loop `outer` (or is it). */
static bool loop_within(const mt_procedure *proc, uint32_t inner, uint32_t outer)
{
    for (uint32_t l = inner; l != MT_NONE; l = proc->loops[l].parent)
        if (l == outer)
            return true;
    return false;
}

/* What each loop of procedure p costs beyond its blocks' count x cycles
 * (extra[l], for loop l alone): the chain of an iteration through nested
 * loops where it outlasts their work, and the exit.  Inner loops first
 * (the analysis lists parents before children). */
static void loop_extras(const mt_program *prog, const mt_program_costs *c, const uint64_t *counts,
                        uint32_t p, double *extra)
{
    const mt_procedure *proc = &prog->procs[p];
    for (uint32_t l = proc->nloops; l-- > 0;) {
        const mt_loop *lp = &proc->loops[l];
        const mt_loop_cost *lc = &c->loops[c->loop_first[p] + l];
        extra[l] = 0;
        double iters = (double)counts[c->first[p] + lp->header];
        if (lp->irreducible || iters <= 0)
            continue;
        double own = 0, loads = 0;
        for (uint32_t k = 0; k < lp->nblocks; k++) {
            double n = (double)counts[c->first[p] + lp->blocks[k]];
            own += n * c->costs[c->first[p] + lp->blocks[k]].cycles;
            loads += n * proc->blocks[lp->blocks[k]].mem_reads;
        }
        for (uint32_t k = l + 1; k < proc->nloops; k++)
            if (loop_within(proc, k, l))
                own += extra[k];
        double ent = (double)mt_loop_entries(prog, c->first, counts, p, l);
        double trips = ent > 0 ? iters / ent : iters, slack = lc->slack;
        if (lc->chain > 0) {
            /* a chain through memory restarts with each entry (the addresses
             * move): the core overlaps the next entry's */
            double floor = iters * (lc->through_memory ? mt_chain_cycles(c, lc->chain, loads / iters, trips)
                                                       : lc->chain);
            if (floor > own) {
                extra[l] += floor - own;
                slack = (floor - own) / iters;
            }
        }
        if (ent > 0)
            extra[l] += ent * mt_loop_exit_cycles(c, trips, slack);
    }
}

double mt_predicted_cycles_proc(const mt_program *prog, const mt_program_costs *c,
                                const uint64_t *counts, uint32_t proc)
{
    double sum = 0;
    for (uint64_t i = c->first[proc]; i < c->first[proc] + prog->procs[proc].nblocks; i++)
        sum += (double)counts[i] * c->costs[i].cycles;
    uint32_t nloops = prog->procs[proc].nloops;
    if (nloops && c->loops) {
        double *extra = mt_xcalloc(nloops, sizeof *extra);
        loop_extras(prog, c, counts, proc, extra);
        for (uint32_t l = 0; l < nloops; l++)
            sum += extra[l];
        free(extra);
    }
    return sum;
}

/* count x cycles of what the call sites among the given blocks (all when
 * NULL) run in estimable callees, at the callees' inclusive cycles per call
 * (procedures still in progress have none yet: recursion). */
static double callee_cycles(const mt_program *prog, const mt_program_costs *c,
                            const uint64_t *counts, uint32_t p, const mt_inclusive *inc,
                            const bool *in_blocks)
{
    const mt_procedure *proc = &prog->procs[p];
    double sum = 0;
    for (uint32_t k = 0; k < proc->ncalls; k++) {
        const mt_call_site *s = &proc->calls[k];
        const mt_import_work *cross = mt_site_cross_import(prog, c, s);
        if (cross && s->block != MT_NONE && (!in_blocks || in_blocks[s->block])) {
            sum += mt_site_calls(s, counts[c->first[p] + s->block]) * cross->cycles;
            continue; /* its library procedure's figure, as a known_import stub's */
        }
        if (s->callee == MT_NONE || s->block == MT_NONE || s->callee == p ||
            !prog->procs[s->callee].estimable || (in_blocks && !in_blocks[s->block]))
            continue;
        bool overlapped = s->loop != MT_NONE && mt_call_overlaps_loop(prog, c, counts, s->callee);
        sum += mt_site_calls(s, counts[c->first[p] + s->block]) *
               (overlapped ? inc->per_call_in_loop[s->callee] : inc->per_call[s->callee]);
    }
    return sum;
}

static void inclusive_of(const mt_program *prog, const mt_program_costs *c, const uint64_t *counts,
                         uint32_t p, mt_inclusive *inc, uint8_t *state)
{
    state[p] = 1; /* in progress: a call back into it is recursion, left out */
    const mt_procedure *proc = &prog->procs[p];
    if (proc->known_import && c->imports) { /* its library procedure's figure */
        double n = mt_procedure_calls(prog, c->first, counts, p);
        inc->per_call[p] = inc->per_call_in_loop[p] = c->imports[p].cycles;
        inc->total[p] = n * c->imports[p].cycles;
        state[p] = 2;
        return;
    }
    for (uint32_t k = 0; k < proc->ncalls; k++) {
        uint32_t q = proc->calls[k].callee;
        if (q != MT_NONE && state[q] == 0)
            inclusive_of(prog, c, counts, q, inc, state);
    }
    inc->total[p] = mt_predicted_cycles_proc(prog, c, counts, p) +
                    callee_cycles(prog, c, counts, p, inc, NULL);
    double n = mt_procedure_calls(prog, c->first, counts, p), overlapped = 0;
    for (uint32_t b = 0; b < proc->nblocks; b++)
        overlapped += (double)counts[c->first[p] + b] * overlapped_cycles(proc, b, &c->costs[c->first[p] + b]);
    inc->per_call[p] = n > 0 ? inc->total[p] / n : 0;
    inc->per_call_in_loop[p] = n > 0 && mt_call_overlaps_loop(prog, c, counts, p) ? overlapped / n
                                                                              : inc->per_call[p];
    state[p] = 2;
}

void mt_predicted_inclusive(const mt_program *prog, const mt_program_costs *c,
                            const uint64_t *counts, mt_inclusive *out)
{
    out->total = mt_xcalloc(prog->nprocs + 1, sizeof *out->total);
    out->per_call = mt_xcalloc(prog->nprocs + 1, sizeof *out->per_call);
    out->per_call_in_loop = mt_xcalloc(prog->nprocs + 1, sizeof *out->per_call_in_loop);
    uint8_t *state = mt_xcalloc(prog->nprocs + 1, 1);
    for (uint32_t p = 0; p < prog->nprocs; p++)
        if (state[p] == 0)
            inclusive_of(prog, c, counts, p, out, state);
    free(state);
}

void mt_inclusive_free(mt_inclusive *inc)
{
    free(inc->total);
    free(inc->per_call);
    free(inc->per_call_in_loop);
    memset(inc, 0, sizeof *inc);
}

double mt_predicted_cycles_loop(const mt_program *prog, const mt_program_costs *c,
                                const uint64_t *counts, uint32_t proc, uint32_t loop,
                                const mt_inclusive *inc)
{
    const mt_procedure *pr = &prog->procs[proc];
    const mt_loop *l = &pr->loops[loop];
    double sum = 0;
    bool *in = inc ? mt_xcalloc(pr->nblocks + 1, sizeof *in) : NULL;
    for (uint32_t k = 0; k < l->nblocks; k++) {
        uint64_t i = c->first[proc] + l->blocks[k];
        sum += (double)counts[i] * c->costs[i].cycles;
        if (in)
            in[l->blocks[k]] = true;
    }
    if (c->loops) {
        double *extra = mt_xcalloc(pr->nloops, sizeof *extra);
        loop_extras(prog, c, counts, proc, extra);
        for (uint32_t k = loop; k < pr->nloops; k++)
            if (loop_within(pr, k, loop))
                sum += extra[k];
        free(extra);
    }
    if (inc) {
        sum += callee_cycles(prog, c, counts, proc, inc, in);
        free(in);
    }
    return sum;
}
