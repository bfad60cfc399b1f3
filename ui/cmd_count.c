/* ui/cmd_count.c — `mtool count -- BIN ARGS...`: pass 1.  Instrument BIN
 * (cached by content), run it once uninstrumented and once instrumented,
 * merge the block counts of every process, and summarize. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "rewriter/rewriter.h"
#include "ui.h"

const char mt_count_usage[] =
    "usage: mtool count [options] -- BIN [ARGS...]\n"
    "       mtool count --profiles DIR [options] -- BIN\n"
    "\n"
    "Pass 1: instruments BIN with a counter on every block (cached by the binary's\n"
    "content), runs it uninstrumented and then instrumented with ARGS, merges the\n"
    "counts of every process and thread it created, and prints the blocks,\n"
    "instructions and memory operations executed, the measured user and system\n"
    "times of both runs, and the procedures and loops with the most memory\n"
    "operations.  Exits with the program's exit status.\n"
    "\n"
    "With --profiles, nothing runs: the profiles an instrumented copy of BIN wrote\n"
    "into DIR (for instance during a test suite, with $MTOOL_OUT=DIR) are merged\n"
    "and summarized instead.\n"
    "\n"
    "options:\n"
    "  -o RUNDIR        where to keep the run: profiles/, counts.tsv, summary.txt\n"
    "                   (default: $XDG_CACHE_HOME/mtool/runs/NAME-TIME-PID)\n"
    "  --no-baseline    skip the uninstrumented run (no slowdown figure)\n"
    "  --no-store       do not record the run in the history (see 'mtool help history')\n"
    "  --baseline-runs N  run it N times and keep the run with the least user time\n"
    "                   (other processes only ever add time; default 1)\n"
    "  --profiles DIR   merge the profiles already in DIR instead of running BIN\n"
    "  --top N          procedures and loops to list (default 10)\n"
    "  -v, --verbose    list every procedure left uninstrumented\n";

typedef struct {
    const char *rundir;
    const char *profiles; /* --profiles: merge these instead of running */
    char **argv; /* BIN ARGS... */
    bool no_baseline, verbose, no_store;
    int top, baseline_runs;
} count_args;

static int parse_args(int argc, char **argv, count_args *a)
{
    memset(a, 0, sizeof *a);
    a->top = 10;
    a->baseline_runs = 1;
    int i = 1;
    for (; i < argc; i++) {
        const char *s = argv[i];
        if (strcmp(s, "--") == 0) {
            i++;
            break;
        }
        if (strcmp(s, "--no-baseline") == 0)
            a->no_baseline = true;
        else if (strcmp(s, "--no-store") == 0)
            a->no_store = true;
        else if (strcmp(s, "--baseline-runs") == 0 && i + 1 < argc && atoi(argv[i + 1]) > 0)
            a->baseline_runs = atoi(argv[++i]);
        else if (strcmp(s, "-v") == 0 || strcmp(s, "--verbose") == 0)
            a->verbose = true;
        else if (strcmp(s, "-o") == 0 && i + 1 < argc)
            a->rundir = argv[++i];
        else if (strcmp(s, "--profiles") == 0 && i + 1 < argc)
            a->profiles = argv[++i];
        else if (strcmp(s, "--top") == 0 && i + 1 < argc)
            a->top = atoi(argv[++i]);
        else if (s[0] == '-') {
            mt_ui_error("count: unknown or incomplete option '%s'; see 'mtool help count'", s);
            return 2;
        } else
            break; /* BIN without "--" */
    }
    if (i >= argc) {
        mt_ui_error("count: no program given; usage: mtool count [options] -- BIN [ARGS...]");
        return 2;
    }
    a->argv = argv + i;
    return 0;
}

/* ---- the summary ---------------------------------------------------------- */

typedef struct {
    uint32_t proc, loop;    /* loop == MT_NONE for a procedure row */
    uint64_t memops, insns, entries;
} object_row;

typedef struct {
    uint64_t *block_counts; /* per procedure: offset into one array */
    uint64_t *proc_first;   /* first block count index of each procedure */
    uint64_t blocks, insns, reads, writes;
    uint64_t executed_blocks, counted_blocks;
} totals;

static void accumulate(const mt_program *prog, const mt_counter_map *map, const uint64_t *counts,
                       totals *t)
{
    t->proc_first = mt_xcalloc(prog->nprocs + 1, sizeof *t->proc_first);
    for (uint32_t p = 0; p < prog->nprocs; p++)
        t->proc_first[p + 1] = t->proc_first[p] + prog->procs[p].nblocks;
    t->block_counts = mt_xcalloc(t->proc_first[prog->nprocs] + 1, sizeof *t->block_counts);
    for (uint32_t i = 0; i < map->ncounters; i++) {
        uint32_t p = mt_procedure_at(prog, map->addrs[i]);
        if (p == MT_NONE)
            continue;
        uint32_t b = mt_block_at(&prog->procs[p], map->addrs[i]);
        if (b == MT_NONE || prog->procs[p].blocks[b].start != map->addrs[i])
            continue;
        const mt_block *blk = &prog->procs[p].blocks[b];
        t->block_counts[t->proc_first[p] + b] = counts[i];
        t->counted_blocks++;
        t->executed_blocks += counts[i] != 0;
        t->blocks += counts[i];
        t->insns += counts[i] * blk->ninsns;
        t->reads += counts[i] * blk->mem_reads;
        t->writes += counts[i] * blk->mem_writes;
    }
}

static void add_block(object_row *row, const mt_block *blk, uint64_t n)
{
    row->memops += n * (blk->mem_reads + blk->mem_writes);
    row->insns += n * blk->ninsns;
}

static int by_memops_desc(const void *a, const void *b)
{
    const object_row *x = a, *y = b;
    return x->memops < y->memops ? 1 : x->memops > y->memops ? -1 : 0;
}

static object_row *collect_rows(const mt_program *prog, const totals *t, bool loops, size_t *n)
{
    object_row *rows = NULL;
    size_t nrows = 0, cap = 0;
    for (uint32_t p = 0; p < prog->nprocs; p++) {
        const mt_procedure *proc = &prog->procs[p];
        const uint64_t *c = t->block_counts + t->proc_first[p];
        if (!loops) {
            object_row row = {.proc = p, .loop = MT_NONE, .entries = proc->nblocks ? c[0] : 0};
            for (uint32_t b = 0; b < proc->nblocks; b++)
                add_block(&row, &proc->blocks[b], c[b]);
            if (row.insns)
                MT_PUSH(rows, nrows, cap, row);
            continue;
        }
        for (uint32_t l = 0; l < proc->nloops; l++) {
            const mt_loop *lp = &proc->loops[l];
            object_row row = {.proc = p, .loop = l, .entries = c[lp->header]};
            for (uint32_t k = 0; k < lp->nblocks; k++)
                add_block(&row, &proc->blocks[lp->blocks[k]], c[lp->blocks[k]]);
            if (row.insns)
                MT_PUSH(rows, nrows, cap, row);
        }
    }
    if (nrows > 1)
        qsort(rows, nrows, sizeof *rows, by_memops_desc);
    *n = nrows;
    return rows;
}

static const char *source_of(const mt_program *prog, const mt_procedure *p, uint32_t block,
                             char *buf, size_t n)
{
    const mt_block *b = &p->blocks[block];
    if (b->file && b->file < prog->nfiles)
        snprintf(buf, n, "%s:%u", prog->files[b->file], b->line);
    else
        snprintf(buf, n, "0x%" PRIx64, b->start);
    return buf;
}

static void print_rows(FILE *fp, const mt_program *prog, const object_row *rows, size_t n,
                       int top, uint64_t total_memops, bool loops)
{
    fprintf(fp, "\ntop %s by memory operations (measured counts):\n", loops ? "loops" : "procedures");
    fprintf(fp, "  %6s %16s %16s %14s  %s\n", "%mem", "memory ops", "instructions",
            loops ? "header execs" : "entries", loops ? "loop (depth) in procedure, at" : "procedure, at");
    for (size_t i = 0; i < n && (int)i < top; i++) {
        const object_row *r = &rows[i];
        const mt_procedure *p = &prog->procs[r->proc];
        char src[512];
        double pct = total_memops ? 100.0 * (double)r->memops / (double)total_memops : 0;
        if (loops) {
            const mt_loop *lp = &p->loops[r->loop];
            fprintf(fp, "  %5.1f%% %16" PRIu64 " %16" PRIu64 " %14" PRIu64 "  loop (%u) in %s, %s\n",
                    pct, r->memops, r->insns, r->entries, lp->depth, p->name,
                    source_of(prog, p, lp->header, src, sizeof src));
        } else {
            fprintf(fp, "  %5.1f%% %16" PRIu64 " %16" PRIu64 " %14" PRIu64 "  %s, %s\n", pct,
                    r->memops, r->insns, r->entries, p->name, source_of(prog, p, 0, src, sizeof src));
        }
    }
    if (n == 0)
        fprintf(fp, "  (none executed)\n");
}

static void print_summary(FILE *fp, const mt_program *prog, const count_args *a,
                          const mt_instrumented *ins, const profile_merge *m, const totals *t,
                          const mt_run_result *base, const mt_run_result *run)
{
    char st[PATH_MAX + 64];
    if (run)
        mt_describe_status(st, sizeof st, run->status);
    else
        snprintf(st, sizeof st, "profiles merged from %s", a->profiles);
    fprintf(fp, "mtool count: %s: %u process%s, %u thread%s, %s\n", a->argv[0], m->nprocesses,
            m->nprocesses == 1 ? "" : "es", m->nthreads, m->nthreads == 1 ? "" : "s", st);
    if (m->nother || m->nincomplete)
        fprintf(fp, "  skipped: %u profile%s of other binaries or builds, %u of processes that "
                    "died before writing a header (no counts)\n",
                m->nother, m->nother == 1 ? "" : "s", m->nincomplete);
    fputs(ins->report, fp);
    fprintf(fp, "executed (measured, instrumented procedures only): %" PRIu64 " blocks, %" PRIu64
                " instructions, %" PRIu64 " memory operations (%" PRIu64 " reads, %" PRIu64
                " writes); %" PRIu64 " of %" PRIu64 " counted blocks ran\n",
            t->blocks, t->insns, t->reads + t->writes, t->reads, t->writes, t->executed_blocks,
            t->counted_blocks);
    if (base)
        fprintf(fp, "measured, uninstrumented run: user %.3f s, system %.3f s, wall %.3f s%s\n",
                base->user, base->sys, base->wall,
                a->baseline_runs > 1 ? " (the least user time of --baseline-runs)" : "");
    if (run) {
        fprintf(fp, "measured, instrumented run:   user %.3f s, system %.3f s, wall %.3f s",
                run->user, run->sys, run->wall);
        if (base && base->user + base->sys > 0.05)
            fprintf(fp, " (counting slowdown %.2fx in user+system time)",
                    (run->user + run->sys) / (base->user + base->sys));
        fputc('\n', fp);
    }
    mt_run_times bt = {base ? base->user : 0, base ? base->sys : 0, base ? base->tsc_per_cycle : 0};
    mt_run_times rt = {run ? run->user : 0, run ? run->sys : 0, run ? run->tsc_per_cycle : 0};
    mt_print_predicted_summary(fp, prog, t->block_counts, t->blocks, base ? &bt : NULL,
                               run ? &rt : NULL);
    for (int loops = 0; loops < 2; loops++) {
        size_t n;
        object_row *rows = collect_rows(prog, t, loops, &n);
        print_rows(fp, prog, rows, n, a->top, t->reads + t->writes, loops);
        free(rows);
    }
}

static int write_counts(const char *rundir, const mt_program *prog, const mt_counter_map *map,
                        const uint64_t *counts, mt_error *err)
{
    char *path = mt_xasprintf("%s/counts.tsv", rundir);
    mt_outfile out;
    int rc = mt_outfile_open(&out, path, err);
    free(path);
    if (rc != 0)
        return -1;
    fprintf(out.fp, "# block\tcount\tprocedure\n");
    for (uint32_t i = 0; i < map->ncounters; i++) {
        uint32_t p = mt_procedure_at(prog, map->addrs[i]);
        fprintf(out.fp, "0x%" PRIx64 "\t%" PRIu64 "\t%s\n", map->addrs[i], counts[i],
                p == MT_NONE ? "?" : prog->procs[p].name);
    }
    return mt_outfile_commit(&out, err);
}

/* The dynamic call graph of calls through pointers: per recorded site, its
 * targets (link-time addresses; one in a shared library lands far outside
 * the executable) with their calls, and the calls to targets past a
 * thread's record ("overflow"). */
static int write_call_targets(const char *rundir, const mt_program *prog, const mt_counter_map *map,
                              const profile_merge *merge, mt_error *err)
{
    char *path = mt_xasprintf("%s/call_targets.tsv", rundir);
    mt_outfile out;
    int rc = mt_outfile_open(&out, path, err);
    free(path);
    if (rc != 0)
        return -1;
    fprintf(out.fp, "# site\ttarget\tcalls\tcallee\n");
    for (uint32_t i = 0; i < map->ncall_sites; i++) {
        const mt_call_site_totals *t = &merge->call_sites[i];
        for (uint32_t k = 0; k < t->ntargets; k++) {
            uint32_t q = mt_procedure_with_entry(prog, t->targets[k].target);
            fprintf(out.fp, "0x%" PRIx64 "\t0x%" PRIx64 "\t%" PRIu64 "\t%s\n", map->call_sites[i],
                    t->targets[k].target, t->targets[k].calls,
                    q == MT_NONE ? "?" : prog->procs[q].name);
        }
        if (t->overflow)
            fprintf(out.fp, "0x%" PRIx64 "\toverflow\t%" PRIu64 "\t?\n", map->call_sites[i],
                    t->overflow);
    }
    return mt_outfile_commit(&out, err);
}

/* What `mtool time RUNDIR` builds on: the program's command line
 * (NUL-separated, in `argv`) and, in pass1.txt, the binary's path and
 * content hash and the uninstrumented run's times. */
static int write_pass1(const char *rundir, char **argv, const mt_run_result *base, mt_error *err)
{
    char *bin = mt_absolute(argv[0]), *path = mt_xasprintf("%s/argv", rundir);
    uint8_t sha[32];
    mt_outfile out;
    int rc = !bin ? (mt_error_set(err, "%s: cannot resolve its path", argv[0]), -1)
                  : mt_file_sha256(bin, sha, err);
    if (rc == 0 && (rc = mt_outfile_open(&out, path, err)) == 0) {
        for (char **a = argv; *a; a++)
            fwrite(*a, 1, strlen(*a) + 1, out.fp);
        rc = mt_outfile_commit(&out, err);
    }
    free(path);
    path = mt_xasprintf("%s/pass1.txt", rundir);
    if (rc == 0 && (rc = mt_outfile_open(&out, path, err)) == 0) {
        fprintf(out.fp, "# the pass-1 run 'mtool time' builds on\nbinary\t%s\nsha256\t", bin);
        for (int i = 0; i < 32; i++)
            fprintf(out.fp, "%02x", sha[i]);
        fputc('\n', out.fp);
        if (base)
            fprintf(out.fp, "base_user\t%.6f\nbase_sys\t%.6f\nbase_wall\t%.6f\n"
                            "base_tsc_per_cycle\t%.6f\n",
                    base->user, base->sys, base->wall, base->tsc_per_cycle);
        rc = mt_outfile_commit(&out, err);
    }
    free(path);
    free(bin);
    return rc;
}

/* Every executed procedure and loop (the rows of the summary, all of them)
 * goes to the history. */
static int record_history(const mt_program *prog, const totals *t, int argc, char **argv,
                          const count_args *a, const mt_run_result *base, const mt_run_result *run)
{
    mt_history *h = mt_history_begin(prog, a->argv[0]);
    for (int loops = 0; loops < 2; loops++) {
        size_t n;
        object_row *rows = collect_rows(prog, t, loops, &n);
        for (size_t i = 0; i < n; i++)
            mt_history_add(h, rows[i].proc, rows[i].loop, rows[i].entries, rows[i].insns,
                           rows[i].memops, NAN, NAN);
        free(rows);
    }
    mt_history_run r = {.tool = "count", .argc = argc, .argv = argv, .prog_argv = a->argv,
                        .ran = run != NULL, .exit_status = run ? mt_exit_code(run->status) : 0,
                        .user_s = run ? run->user : NAN, .sys_s = run ? run->sys : NAN,
                        .wall_s = run ? run->wall : NAN, .base_user_s = base ? base->user : NAN,
                        .base_sys_s = base ? base->sys : NAN, .base_wall_s = base ? base->wall : NAN};
    return mt_history_finish(h, &r);
}

int mt_cmd_count(int argc, char **argv)
{
    count_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc;
    const char *bin = a.argv[0];
    mt_error err;
    char *rundir = a.rundir ? mt_xstrdup(a.rundir) : mt_default_rundir(bin);
    char *profiles = NULL, *abs_rundir = NULL;
    mt_instrumented ins = {0};
    mt_program *prog = NULL;
    mt_counter_map map = {0};
    profile_merge merge = {0};
    totals t = {0};
    rc = 1;
    mt_analyze_options opt;
    mt_analyze_options_init(&opt);
    if (mt_make_dirs(rundir, &err) != 0 || !(abs_rundir = mt_absolute(rundir))) {
        mt_ui_error("%s", err.msg);
        goto out;
    }
    profiles = a.profiles ? mt_absolute(a.profiles) : mt_xasprintf("%s/profiles", abs_rundir);
    if (!profiles) {
        mt_ui_error("%s: %s", a.profiles, strerror(errno));
        goto out;
    }
    if (mt_make_dirs(profiles, &err) != 0 || (!a.profiles && mt_clear_profiles(profiles, &err) != 0) ||
        !(prog = mt_analyze(bin, &opt, &err)) ||
        mt_instrument_cached(prog, bin, NULL, 0, a.verbose, &ins, &err) != 0 ||
        mt_counter_map_read(ins.path, &map, &err) != 0) {
        mt_ui_error("%s", err.msg);
        goto out;
    }
    mt_run_result base, run;
    bool ran = !a.profiles, baseline = ran && !a.no_baseline;
    for (int r = 0; baseline && r < a.baseline_runs; r++) {
        mt_run_result one;
        if (mt_run_program(bin, a.argv, NULL, &one, &err) != 0) {
            mt_ui_error("%s", err.msg);
            goto out;
        }
        if (r == 0 || one.user < base.user)
            base = one;
    }
    if ((ran && mt_run_program(ins.path, a.argv, profiles, &run, &err) != 0) ||
        mt_profile_merge(profiles, &map, &merge, &err) != 0) {
        mt_ui_error("%s", err.msg);
        goto out;
    }
    accumulate(prog, &map, merge.counts, &t);
    print_summary(stderr, prog, &a, &ins, &merge, &t, baseline ? &base : NULL, ran ? &run : NULL);
    if (write_counts(abs_rundir, prog, &map, merge.counts, &err) != 0 ||
        write_call_targets(abs_rundir, prog, &map, &merge, &err) != 0 ||
        write_pass1(abs_rundir, a.argv, baseline ? &base : NULL, &err) != 0) {
        mt_ui_error("%s", err.msg);
        goto out;
    }
    fprintf(stderr, "\nrun kept in %s (%scounts.tsv)\n", abs_rundir, ran ? "profiles/, " : "");
    rc = ran ? mt_exit_code(run.status) : 0;
    if (!a.no_store && record_history(prog, &t, argc, argv, &a, baseline ? &base : NULL,
                                      ran ? &run : NULL) != 0 && rc == 0)
        rc = 1;
out:
    free(t.block_counts);
    free(t.proc_first);
    mt_profile_merge_free(&merge);
    mt_counter_map_free(&map);
    mt_instrumented_free(&ins);
    mt_program_free(prog);
    free(profiles);
    free(abs_rundir);
    free(rundir);
    return rc;
}
