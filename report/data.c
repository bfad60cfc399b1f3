/* report/data.c — a run directory's figures per m-object and per source
 * line, for the HTML report and the Callgrind export.
 *
 * Pass 2 measures whole objects, not lines.  A line's overhead is its
 * executed memory operations times the extra cycles per memory operation of
 * the innermost timed object holding its blocks: the object's overhead
 * spread over its own memory operations, which is where the cost model
 * says the extra time goes (every access predicted an L1 hit). */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static const char *kind_of(const mt_timed_object *o)
{
    return o->region ? "region" : o->loop != MT_NONE ? "loop" : "procedure";
}

/* The figures of one object's own blocks (in[] of its procedure). */
static void describe_blocks(const mt_program *prog, const uint64_t *counts, const uint64_t *first,
                            mt_report_object *o, const bool *in)
{
    const mt_procedure *p = &prog->procs[o->proc];
    const uint64_t *c = counts + first[o->proc];
    o->first_line = UINT32_MAX;
    for (uint32_t b = 0; b < p->nblocks; b++) {
        if (!in[b])
            continue;
        const mt_block *bl = &p->blocks[b];
        uint64_t memops = c[b] * (uint64_t)(bl->mem_reads + bl->mem_writes);
        o->memops_own += memops;
        if (bl->loop != MT_NONE)
            o->memops_in_loops += memops;
        if (bl->file && !o->file)
            o->file = bl->file;
        if (bl->file == o->file && bl->line) {
            o->first_line = bl->line < o->first_line ? bl->line : o->first_line;
            o->last_line = bl->line > o->last_line ? bl->line : o->last_line;
        }
    }
    if (o->first_line == UINT32_MAX)
        o->first_line = 0;
    for (uint32_t l = 0; l < p->nloops; l++)
        o->nloops += in[p->loops[l].header];
    for (uint32_t s = 0; s < p->ncalls; s++)
        o->ncalls += in[p->calls[s].block] && c[p->calls[s].block] > 0;
}

/* What an object holds: its own blocks (in[] of its procedure) and every
 * block of the procedures they call (its time is theirs too). */
typedef struct {
    bool *in, *called;
    uint32_t size; /* blocks held, at most MT_NONE - 1 */
} held_blocks;

static held_blocks blocks_held(const mt_program *prog, const mt_timed_object *t)
{
    const mt_procedure *p = &prog->procs[t->proc];
    held_blocks h = {.in = mt_xcalloc(p->nblocks + 1, sizeof *h.in),
                     .called = mt_xcalloc(prog->nprocs + 1, sizeof *h.called)};
    mt_object_blocks(p, t->loop, t->region, t->region_first, t->region_end, h.in);
    mt_blocks_callees(prog, t->proc, h.in, h.called);
    h.called[t->proc] = false; /* recursion: the procedure's own blocks are in[]'s */
    uint64_t size = 0;
    for (uint32_t b = 0; b < p->nblocks; b++)
        size += h.in[b];
    for (uint32_t q = 0; q < prog->nprocs; q++)
        size += h.called[q] ? prog->procs[q].nblocks : 0;
    h.size = size < MT_NONE ? (uint32_t)size : MT_NONE - 1;
    return h;
}

/* Whether h, an object of procedure `proc`, holds block `block` of `q`. */
static bool holds(const held_blocks *h, uint32_t proc, uint32_t q, uint32_t block)
{
    return q == proc ? h->in[block] : h->called[q];
}

/* Object `index` becomes the owner of the blocks it holds where no object
 * holding fewer blocks already is. */
static void claim_blocks(const mt_program *prog, const uint64_t *first, uint32_t proc,
                         const held_blocks *h, uint32_t index, uint32_t *owner,
                         uint32_t *owner_size)
{
    for (uint32_t q = 0; q < prog->nprocs; q++) {
        if (q != proc && !h->called[q])
            continue;
        for (uint32_t b = 0; b < prog->procs[q].nblocks; b++) {
            uint64_t k = first[q] + b;
            if (holds(h, proc, q, b) && h->size < owner_size[k]) {
                owner[k] = index;
                owner_size[k] = h->size;
            }
        }
    }
}

/* Each object's parent in the tree of measured time: of the objects holding
 * its first block (in their own blocks or their callees'), the one holding
 * the fewest blocks more than it — a loop's enclosing loop or procedure, a
 * procedure's calling loop or procedure.  Ties go by index, so that no
 * chain of parents loops (two procedures calling each other hold each
 * other's blocks). */
static void find_parents(mt_report *r, const held_blocks *held, const uint32_t *head)
{
    for (size_t i = 0; i < r->nobjects; i++) {
        mt_report_object *o = &r->objects[i];
        o->parent = MT_NONE;
        for (size_t j = 0; j < r->nobjects; j++) {
            bool larger = held[j].size > held[i].size || (held[j].size == held[i].size && j > i);
            bool tighter = o->parent == MT_NONE || held[j].size < held[o->parent].size;
            bool same_program = r->pass2.objects[j].prog == r->pass2.objects[i].prog;
            if (j != i && larger && tighter && same_program &&
                holds(&held[j], r->objects[j].proc, o->proc, head[i]))
                o->parent = (uint32_t)j;
        }
    }
}

/* Pass 1's entries of an object: its procedure's calls, its loop's entries
 * from outside (mt_loop_entries), its region's first block's executions. */
static uint64_t object_entries(const mt_program *prog, const uint64_t *counts,
                               const uint64_t *first, const mt_timed_object *t, uint32_t head)
{
    if (t->loop != MT_NONE && !t->region)
        return mt_loop_entries(prog, first, counts, t->proc, t->loop);
    return counts[first[t->proc] + head];
}

/* A shared library's object: its figures from the library's own analysis
 * and counts; its lines are not the executable's (file 0: the page shows
 * neither source nor disassembly of libraries), it owns none of them. */
static void library_object(const mt_pass2_object *src, mt_report_object *o, held_blocks *held,
                           uint32_t *head)
{
    const mt_program *prog = src->prog;
    const mt_timed_object *t = &src->object;
    const mt_procedure *p = &prog->procs[t->proc];
    uint64_t *first = mt_block_offsets(prog);
    o->library = src->lib->name;
    free(o->spec);
    o->spec = mt_xasprintf("%s:%s", src->lib->name, src->spec);
    *head = t->region ? t->region_first : t->loop != MT_NONE ? p->loops[t->loop].header : 0;
    o->address = p->blocks[*head].start;
    o->entries = object_entries(prog, src->lib->counts, first, t, *head);
    *held = blocks_held(prog, t);
    describe_blocks(prog, src->lib->counts, first, o, held->in);
    o->file = o->first_line = o->last_line = 0;
    free(first);
}

/* Objects from pass2.tsv, with their parents, and owner[] (laid out as the
 * executable's counts): the index of the innermost object holding each
 * block (in its own blocks or its callees'), the one holding the fewest
 * blocks, or MT_NONE. */
static void build_objects(mt_report *r, const uint64_t *counts, const uint64_t *first,
                          uint32_t *owner, uint32_t *owner_size)
{
    r->nobjects = r->pass2.nobjects;
    r->objects = mt_xcalloc(r->nobjects + 1, sizeof *r->objects);
    held_blocks *held = mt_xcalloc(r->nobjects + 1, sizeof *held);
    uint32_t *head = mt_xcalloc(r->nobjects + 1, sizeof *head);
    for (size_t i = 0; i < r->nobjects; i++) {
        const mt_pass2_object *src = &r->pass2.objects[i];
        const mt_timed_object *t = &src->object;
        mt_report_object *o = &r->objects[i];
        o->spec = mt_xstrdup(src->spec);
        o->kind = kind_of(t);
        o->proc = t->proc;
        o->memops = src->memops;
        o->predicted = src->predicted;
        o->measured = src->measured;
        o->overhead = src->measured - src->predicted;
        o->extra_per_memop = src->memops ? o->overhead / (double)src->memops : 0;
        o->outermost = src->outermost;
        if (src->lib) { /* its memory operations are not among the executable's */
            library_object(src, o, &held[i], &head[i]);
            continue;
        }
        if (o->outermost)
            r->memops_in_objects += o->memops;
        const mt_procedure *p = &r->prog->procs[t->proc];
        head[i] = t->region ? t->region_first : t->loop != MT_NONE ? p->loops[t->loop].header : 0;
        o->address = p->blocks[head[i]].start;
        o->entries = object_entries(r->prog, counts, first, t, head[i]);
        held[i] = blocks_held(r->prog, t);
        describe_blocks(r->prog, counts, first, o, held[i].in);
        claim_blocks(r->prog, first, t->proc, &held[i], (uint32_t)i, owner, owner_size);
    }
    find_parents(r, held, head);
    for (size_t i = 0; i < r->nobjects; i++) {
        free(held[i].in);
        free(held[i].called);
    }
    free(held);
    free(head);
}

static int compare_lines(const void *a, const void *b)
{
    const mt_report_line *x = a, *y = b;
    if (x->proc != y->proc)
        return x->proc < y->proc ? -1 : 1;
    if (x->file != y->file)
        return x->file < y->file ? -1 : 1;
    if (x->line != y->line)
        return x->line < y->line ? -1 : 1;
    return 0;
}

/* One row per executed block, then the rows of a line merged (in place). */
static void build_lines(mt_report *r, const uint64_t *counts, const uint64_t *first,
                        const mt_program_costs *costs, const uint32_t *owner)
{
    size_t cap = 0;
    for (uint32_t p = 0; p < r->prog->nprocs; p++) {
        const mt_procedure *proc = &r->prog->procs[p];
        for (uint32_t b = 0; b < proc->nblocks; b++) {
            uint64_t k = first[p] + b, n = counts[k];
            if (!n)
                continue;
            const mt_block *bl = &proc->blocks[b];
            mt_report_line row = {.proc = p, .file = bl->file, .line = bl->line, .executions = n,
                                  .memops = n * (uint64_t)(bl->mem_reads + bl->mem_writes),
                                  .predicted = (double)n * costs->costs[k].cycles,
                                  .object = owner[k]};
            /* An object measured below its prediction (the cost model's error)
             * gives its lines none: the Callgrind format's costs are not negative. */
            if (row.object != MT_NONE && r->objects[row.object].extra_per_memop > 0)
                row.overhead = (double)row.memops * r->objects[row.object].extra_per_memop;
            r->memops_total += row.memops;
            MT_PUSH(r->lines, r->nlines, cap, row);
        }
    }
    if (!r->nlines)
        return;
    qsort(r->lines, r->nlines, sizeof *r->lines, compare_lines);
    size_t out = 0;
    for (size_t i = 1; i < r->nlines; i++) {
        mt_report_line *last = &r->lines[out], *row = &r->lines[i];
        if (compare_lines(last, row) != 0) {
            r->lines[++out] = *row;
            continue;
        }
        last->executions = row->executions > last->executions ? row->executions : last->executions;
        last->memops += row->memops;
        last->predicted += row->predicted;
        last->overhead += row->overhead;
        if (last->object == MT_NONE)
            last->object = row->object;
    }
    r->nlines = out + 1;
}

/* Each object's hot line: the line of its source range (in its procedure)
 * with the most overhead, nested objects' lines included: they are its
 * lines too. */
static void find_hot_lines(mt_report *r)
{
    for (size_t i = 0; i < r->nobjects; i++) {
        mt_report_object *o = &r->objects[i];
        double best = -1;
        for (size_t k = 0; k < r->nlines; k++) {
            const mt_report_line *l = &r->lines[k];
            if (!o->library && l->proc == o->proc && l->file == o->file &&
                l->line >= o->first_line && l->line <= o->last_line && l->overhead > best) {
                o->hot_line = l->line;
                best = l->overhead;
            }
        }
    }
}

/* Whether procedure p is the procedure of a timed object without source
 * lines, whose view is then its disassembly. */
static bool shown_as_disassembly(const mt_report *r, uint32_t p)
{
    for (size_t i = 0; i < r->nobjects; i++)
        if (!r->objects[i].library && r->objects[i].proc == p && !r->objects[i].file)
            return true;
    return false;
}

/* Every instruction of those procedures, with its block's figures. */
static int build_insns(mt_report *r, const uint64_t *counts, const uint64_t *first,
                       const uint32_t *owner, mt_error *err)
{
    size_t cap = 0;
    for (uint32_t p = 0; p < r->prog->nprocs; p++) {
        if (!shown_as_disassembly(r, p))
            continue;
        mt_insn_text *insns;
        size_t n;
        if (mt_procedure_listing(r->prog, p, &insns, &n, err) != 0)
            return -1;
        for (size_t k = 0; k < n; k++) {
            uint64_t b = first[p] + insns[k].block;
            uint64_t accesses = (uint64_t)insns[k].reads + insns[k].writes;
            mt_report_insn row = {.proc = p, .insn = insns[k], .executions = counts[b],
                                  .memops = counts[b] * accesses, .object = owner[b]};
            if (row.object != MT_NONE && r->objects[row.object].extra_per_memop > 0)
                row.overhead = (double)row.memops * r->objects[row.object].extra_per_memop;
            MT_PUSH(r->insns, r->ninsns, cap, row);
        }
        free(insns);
    }
    return 0;
}

/* The lines and objects of r (its program and pass2 set), from pass 1's
 * counts (freed here) and the machine profile pass 2 predicted with. */
static int build(mt_report *r, const mt_machine *machine, uint64_t *counts, mt_error *err)
{
    mt_program_costs costs = {0};
    if (mt_predict_executed(machine, r->prog, false, NULL, counts, &costs, err) != 0) {
        free(counts);
        return -1;
    }
    mt_model_check_of(&r->check, machine);
    uint64_t *first = mt_block_offsets(r->prog);
    uint64_t nblocks = first[r->prog->nprocs];
    uint32_t *owner = mt_xmalloc((nblocks + 1) * sizeof *owner);
    uint32_t *owner_size = mt_xmalloc((nblocks + 1) * sizeof *owner_size);
    for (uint64_t k = 0; k <= nblocks; k++)
        owner[k] = owner_size[k] = MT_NONE;
    build_objects(r, counts, first, owner, owner_size);
    build_lines(r, counts, first, &costs, owner);
    find_hot_lines(r);
    int rc = build_insns(r, counts, first, owner, err);
    free(owner);
    free(owner_size);
    free(first);
    free(counts);
    mt_program_costs_free(&costs);
    return rc;
}

/* An MPI job's figures per rank and its launcher, as report.json has them. */
static int read_job(const char *rundir, mt_report *r, mt_error *err)
{
    if (mt_rundir_read_job_pass2(rundir, &r->job, err) != 0)
        return -1;
    return r->job.nranks ? mt_rundir_read_job(rundir, &r->job_launcher_buf, &r->job_launcher, err)
                         : 0;
}

int mt_report_load(const char *rundir, FILE *log, mt_report *r, mt_error *err)
{
    memset(r, 0, sizeof *r);
    r->pass1 = &r->own_pass1;
    mt_analyze_options opt;
    mt_analyze_options_init(&opt);
    mt_machine machine;
    bool kept, calibrated;
    uint64_t *counts = NULL;
    /* The profile pass 2 predicted with, else (a run directory of an older
     * mtool) this machine's, as pass 2 would load it now. */
    if (mt_rundir_read_pass1(rundir, &r->own_pass1, err) != 0 ||
        mt_rundir_check_binary(&r->own_pass1, err) != 0 ||
        !(r->prog = r->own_prog = mt_analyze(r->own_pass1.binary, &opt, err)) ||
        mt_rundir_refine(rundir, r->own_prog, &counts, err) != 0 ||
        mt_pass2_libraries_prepare(rundir, r->own_pass1.binary, &r->own_libs, err) != 0 ||
        mt_rundir_read_pass2(rundir, r->prog, &r->own_libs, &r->pass2, err) != 0 ||
        mt_rundir_read_sim(rundir, &r->sim_json, err) != 0 ||
        read_job(rundir, r, err) != 0 ||
        mt_rundir_read_machine(rundir, &machine, &kept, err) != 0 ||
        (!kept && mt_run_load_machine(&machine, &calibrated, log, err) != 0)) {
        free(counts);
        return -1;
    }
    return build(r, &machine, counts, err);
}

int mt_report_of_pass2(const char *rundir, const mt_pass2_result *p, mt_report *r, mt_error *err)
{
    memset(r, 0, sizeof *r);
    r->pass1 = &p->pass1;
    r->prog = p->prog;
    char *path = mt_xasprintf("%s/counts.tsv", rundir);
    uint64_t *counts = mt_rundir_read_counts(path, r->prog, err);
    free(path);
    if (!counts || mt_rundir_read_pass2(rundir, r->prog, &p->libs, &r->pass2, err) != 0 ||
        mt_rundir_read_sim(rundir, &r->sim_json, err) != 0 ||
        read_job(rundir, r, err) != 0) {
        free(counts);
        return -1;
    }
    return build(r, &p->machine, counts, err);
}

void mt_report_free(mt_report *r)
{
    for (size_t i = 0; i < r->nobjects; i++)
        free(r->objects[i].spec);
    free(r->objects);
    free(r->lines);
    free(r->sim_json);
    mt_job_pass2_free(&r->job);
    free(r->job_launcher);
    free(r->job_launcher_buf);
    free(r->insns);
    mt_report_history_free(&r->history);
    mt_report_stored_free(r->stored);
    mt_pass2_record_free(&r->pass2);
    mt_pass1_libraries_free(&r->own_libs);
    mt_program_free(r->own_prog);
    mt_pass1_free(&r->own_pass1);
    memset(r, 0, sizeof *r);
}
