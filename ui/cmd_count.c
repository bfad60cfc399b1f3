/* ui/cmd_count.c — `mtool count -- BIN ARGS...`: pass 1 (run/pass1.c)
 * and its summary, as text on stderr and as count.json. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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
    "With an MPI launcher as the command (mpirun, mpiexec, orterun, srun:\n"
    "`mtool count -- mpirun -n 4 ./app ARGS`), the program among its arguments is\n"
    "instrumented, each rank counts into RUNDIR/profiles/rank-N, and the summary\n"
    "adds per-rank figures and the load imbalance (max / mean over ranks) of the\n"
    "top procedures and loops (docs/REPORT.md, \"MPI jobs\").  With --libs, each\n"
    "rank loads the libraries' counting copies (the launcher never does).\n"
    "\n"
    "With --profiles, nothing runs: the profiles an instrumented copy of BIN wrote\n"
    "into DIR (for instance during a test suite, with $MTOOL_OUT=DIR) are merged\n"
    "and summarized instead.\n"
    "\n"
    "The summary goes to stderr; the same figures, machine-readable, go to\n"
    "RUNDIR/count.json (docs/REPORT.md).\n"
    "\n"
    "options:\n"
    "  -o RUNDIR        where to keep the run: profiles/, counts.tsv, call_targets.tsv,\n"
    "                   count.json (default: $XDG_CACHE_HOME/mtool/runs/NAME-TIME-PID)\n"
    "  --json           also print count.json on stdout (after whatever the program\n"
    "                   itself printed there: redirect it, or read RUNDIR/count.json)\n"
    "  --no-baseline    skip the uninstrumented run (no slowdown figure)\n"
    "  --no-store       do not record the run in the history (see 'mtool help history')\n"
    "  --baseline-runs N  run it N times and keep the run with the least user time\n"
    "                   (other processes only ever add time; default 1)\n"
    "  --profiles DIR   merge the profiles already in DIR instead of running BIN\n"
    "  --top N          procedures and loops to list (default 10; JSON has all)\n"
    "  --libs all|none|NAME,...  count the blocks of the shared libraries BIN loads too:\n"
    "                   the ones it needs (transitively) and the ones earlier counts saw it\n"
    "                   open with dlopen (NAME as liblzma.so.5 or liblzma), rewritten copies\n"
    "                   loaded for this run only, glibc's (libc, libm) included; the loader\n"
    "                   stays original.  Default: all, glibc's too, among them the ones the\n"
    "                   program spends time in, which the summary names (none with an\n"
    "                   MPI launcher; with --profiles, none, or all when the profiles\n"
    "                   were written with the libraries, as a count's own profiles/ are).\n"
    "                   A library first seen opened by\n"
    "                   dlopen is said not counted, and counted from the next count.  Their\n"
    "                   procedures are named LIB:PROCEDURE\n"
    "  -v, --verbose    list every procedure left uninstrumented\n";

typedef struct {
    const char *rundir;
    const char *profiles; /* --profiles: merge these instead of running */
    const char *libs;     /* --libs */
    char **argv; /* BIN ARGS... */
    bool no_baseline, verbose, no_store, json;
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
        else if (strcmp(s, "--json") == 0)
            a->json = true;
        else if (strcmp(s, "--baseline-runs") == 0 && i + 1 < argc && atoi(argv[i + 1]) > 0)
            a->baseline_runs = atoi(argv[++i]);
        else if (strcmp(s, "-v") == 0 || strcmp(s, "--verbose") == 0)
            a->verbose = true;
        else if (strcmp(s, "-o") == 0 && i + 1 < argc)
            a->rundir = argv[++i];
        else if (strcmp(s, "--profiles") == 0 && i + 1 < argc)
            a->profiles = argv[++i];
        else if (strcmp(s, "--libs") == 0 && i + 1 < argc && argv[i + 1][0])
            a->libs = argv[++i];
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

/* The executable (name NULL) or a shared library counted with it. */
typedef struct {
    const char *name;
    const mt_program *prog;
    const mt_pass1_totals *t;
} counted_object;

typedef struct {
    uint32_t object;        /* in the summary's counted_object list */
    uint32_t proc, loop;    /* loop == MT_NONE for a procedure row */
    uint64_t memops, insns, entries, iterations; /* iterations: a loop's header executions */
} object_row;

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

/* The executed procedures (or loops) of object `o` onto rows. */
static void object_rows(const counted_object *objs, uint32_t o, bool loops, object_row **rows,
                        size_t *nrows, size_t *cap)
{
    const mt_program *prog = objs[o].prog;
    const mt_pass1_totals *t = objs[o].t;
    for (uint32_t p = 0; p < prog->nprocs; p++) {
        const mt_procedure *proc = &prog->procs[p];
        const uint64_t *c = t->block_counts + t->proc_first[p];
        if (!loops) {
            object_row row = {.object = o, .proc = p, .loop = MT_NONE,
                              .entries = proc->nblocks ? c[0] : 0};
            for (uint32_t b = 0; b < proc->nblocks; b++)
                add_block(&row, &proc->blocks[b], c[b]);
            if (row.insns)
                MT_PUSH(*rows, *nrows, *cap, row);
            continue;
        }
        for (uint32_t l = 0; l < proc->nloops; l++) {
            const mt_loop *lp = &proc->loops[l];
            object_row row = {.object = o, .proc = p, .loop = l, .iterations = c[lp->header],
                              .entries = mt_loop_entries(prog, t->proc_first, t->block_counts, p, l)};
            for (uint32_t k = 0; k < lp->nblocks; k++)
                add_block(&row, &proc->blocks[lp->blocks[k]], c[lp->blocks[k]]);
            if (row.insns)
                MT_PUSH(*rows, *nrows, *cap, row);
        }
    }
}

/* Every counted object's rows in one ranking, most memory operations first. */
static object_row *collect_rows(const counted_object *objs, size_t nobjs, bool loops, size_t *n)
{
    object_row *rows = NULL;
    size_t nrows = 0, cap = 0;
    for (uint32_t o = 0; o < nobjs; o++)
        object_rows(objs, o, loops, &rows, &nrows, &cap);
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

/* A procedure's name as reports show it: LIB:NAME in a shared library. */
static char *qualified_name(const counted_object *o, const mt_procedure *p)
{
    return o->name ? mt_xasprintf("%s:%s", o->name, p->name) : mt_xstrdup(p->name);
}

static void print_rows(FILE *fp, const counted_object *objs, const object_row *rows, size_t n,
                       int top, uint64_t total_memops, bool loops)
{
    fprintf(fp, "\ntop %s by memory operations (measured counts):\n", loops ? "loops" : "procedures");
    fprintf(fp, "  %6s %16s %16s %14s  %s\n", "%mem", "memory ops", "instructions",
            loops ? "header execs" : "entries", loops ? "loop (depth) in procedure, at" : "procedure, at");
    for (size_t i = 0; i < n && (int)i < top; i++) {
        const object_row *r = &rows[i];
        const mt_program *prog = objs[r->object].prog;
        const mt_procedure *p = &prog->procs[r->proc];
        char src[512];
        double pct = total_memops ? 100.0 * (double)r->memops / (double)total_memops : 0;
        char *full = qualified_name(&objs[r->object], p);
        char *name = mt_ui_escape(full),
             *at = mt_ui_escape(source_of(prog, p, loops ? p->loops[r->loop].header : 0, src,
                                          sizeof src));
        int column = fprintf(fp, "  %5.1f%% %16" PRIu64 " %16" PRIu64 " %14" PRIu64 "  ", pct,
                             r->memops, r->insns, loops ? r->iterations : r->entries);
        char *last = loops ? mt_xasprintf("loop (%u) in %s, %s", p->loops[r->loop].depth, name, at)
                           : mt_xasprintf("%s, %s", name, at);
        mt_ui_last_column(fp, column > 0 ? (size_t)column : 0, last);
        free(last);
        free(full);
        free(name);
        free(at);
    }
    if (n == 0)
        fprintf(fp, "  (none executed)\n");
}

/* Everything the summary reports, as text (stderr) or JSON (count.json). */
typedef struct {
    const mt_program *prog;
    const count_args *a;
    const char *rundir;
    const mt_instrumented *ins;
    const profile_merge *m;
    const mt_pass1_totals *t;
    const mt_run_result *base, *run; /* NULL: not run */
    const mt_figure2 *fig;
    const mt_counter_map *map;
    const mt_pass1_libraries *libs;
    counted_object *objs;   /* the executable, then each counted library */
    size_t nobjs;
    uint64_t memops;        /* of them all */
    const mt_mpi_job *job;  /* an MPI job's ranks (NULL: none) */
} summary;

static void describe_status(const summary *s, char *buf, size_t n)
{
    if (s->run)
        mt_describe_status(buf, n, s->run->status);
    else
        snprintf(buf, n, "profiles merged from %s", s->a->profiles);
}

/* The counting slowdown in user + system time; NAN when the uninstrumented
 * run was too short to say. */
static double slowdown(const summary *s)
{
    const mt_run_result *b = s->base, *r = s->run;
    return b && r && b->user + b->sys > 0.05 ? (r->user + r->sys) / (b->user + b->sys) : NAN;
}

/* A jump-table index the analysis did not bound sent a copy back to the
 * original code: the rest of that call ran uncounted. */
static void print_fallbacks(FILE *fp, const mt_program *prog, const mt_counter_map *map,
                            const uint64_t *counts, const mt_pass1_totals *t)
{
    for (size_t k = 0; k < t->nfallbacks; k++) {
        uint32_t i = t->fallbacks[k];
        uint64_t at = map->addrs[i] & ~MT_COUNTER_FALLBACK;
        uint32_t p = mt_procedure_at(prog, at);
        char name[256];
        mt_escape_text(name, sizeof name, p == MT_NONE ? "?" : prog->procs[p].name);
        fprintf(fp, "warning: %s: counts incomplete: %" PRIu64 " jump-table index%s at 0x%" PRIx64
                    " beyond what the analysis bounded; those calls went on uncounted in the "
                    "original code\n",
                name, counts[i], counts[i] == 1 ? "" : "es", at);
    }
}

/* The counted libraries the program ran code in (ran) or did not. */
static void print_library_names(FILE *fp, const mt_pass1_libraries *l, bool ran)
{
    size_t shown = 0;
    for (size_t i = 0; i < l->nlibs; i++) {
        const mt_pass1_library *lib = &l->libs[i];
        if (lib->note || (lib->totals.insns > 0) != ran)
            continue;
        char *name = mt_ui_escape(lib->name);
        fprintf(fp, "%s%s", shown++ ? ", " : " ", name);
        free(name);
    }
    if (!shown)
        fputs(" none", fp);
}

/* What --libs chose, and the counted libraries the program spent time in
 * (ran code in): by default every library it loads, glibc's included, is
 * counted, and the ones it spends time in are among them. */
static void print_library_choice(FILE *fp, const mt_pass1_libraries *l)
{
    if (!l->set)
        return;
    char *spec = mt_ui_escape(l->spec);
    fprintf(fp, "libraries (%s--libs %s%s): the program ran code in", l->by_default ? "default " : "",
            spec, l->by_default ? ": every library it loads, glibc's included" : "");
    print_library_names(fp, l, true);
    fputs("; counted, no code ran in", fp);
    print_library_names(fp, l, false);
    fputc('\n', fp);
    free(spec);
}

/* One line per shared library asked for: counted (what ran), or left
 * original and why. */
static void print_libraries(FILE *fp, const mt_pass1_libraries *l)
{
    print_library_choice(fp, l);
    for (size_t i = 0; i < l->nlibs; i++) {
        const mt_pass1_library *lib = &l->libs[i];
        if (!lib->asked)
            continue;
        char *name = mt_ui_escape(lib->name), *path = mt_ui_escape(lib->path);
        const char *how = lib->dlopened ? ", opened by dlopen" : "";
        if (lib->note) {
            char *note = mt_ui_escape(lib->note);
            fprintf(fp, "library %s (%s%s): left original: %s\n", name, path, how, note);
            free(note);
        } else {
            const mt_rewrite_report *rw = &lib->ins.rewrite;
            const mt_pass1_totals *t = &lib->totals;
            fprintf(fp, "library %s (%s%s): %u of %u procedures instrumented; executed %" PRIu64
                        " blocks, %" PRIu64 " instructions, %" PRIu64 " memory operations\n",
                    name, path, how, rw->nprocs_instrumented, rw->nprocs_candidates, t->blocks,
                    t->insns, t->reads + t->writes);
            if (lib->starts)
                fprintf(fp, "  warning: it can call %s itself, which mtool hooks only in a "
                            "counted libc: a thread or process it starts that way counts into "
                            "its creator's counters, and threads running at once may then lose "
                            "counts of this library (what pthread_create and fork start counts "
                            "apart)\n",
                        lib->starts);
        }
        free(name);
        free(path);
    }
}

static void print_summary(FILE *fp, const summary *s)
{
    const count_args *a = s->a;
    const profile_merge *m = s->m;
    const mt_pass1_totals *t = s->t;
    const mt_run_result *base = s->base, *run = s->run;
    char st[PATH_MAX + 64];
    describe_status(s, st, sizeof st);
    char *bin = mt_ui_escape(a->argv[0]);
    fprintf(fp, "mtool count: %s: %u process%s, %u thread%s, %s\n", bin, m->nprocesses,
            m->nprocesses == 1 ? "" : "es", m->nthreads, m->nthreads == 1 ? "" : "s", st);
    free(bin);
    if (m->nother || m->nincomplete || m->ndamaged)
        fprintf(fp, "  skipped: %u profile%s of other binaries or builds, %u of processes that "
                    "died before writing a header (no counts), %u damaged\n",
                m->nother, m->nother == 1 ? "" : "s", m->nincomplete, m->ndamaged);
    mt_print_rewrite_report(fp, s->prog, &s->ins->rewrite, a->verbose);
    print_fallbacks(fp, s->prog, s->map, m->counts, t);
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
        if (!isnan(slowdown(s)))
            fprintf(fp, " (counting slowdown %.2fx in user+system time)", slowdown(s));
        fputc('\n', fp);
    }
    mt_print_figure2(fp, s->fig);
    print_libraries(fp, s->libs);
    for (int loops = 0; loops < 2; loops++) {
        size_t n;
        object_row *rows = collect_rows(s->objs, s->nobjs, loops, &n);
        print_rows(fp, s->objs, rows, n, a->top, s->memops, loops);
        free(rows);
    }
    if (s->job)
        mt_count_print_ranks(fp, s->prog, s->libs, s->job, a->top);
}

/* ---- count.json (schema mtool.count, docs/REPORT.md) ---------------------- */

static void json_u64_field(FILE *fp, const char *name, uint64_t v)
{
    fprintf(fp, ",\"%s\":%" PRIu64, name, v);
}

static void json_num_field(FILE *fp, const char *name, double v)
{
    fprintf(fp, ",\"%s\":", name);
    mt_json_number(fp, v);
}

/* The first field of an object: a string, or null. */
static void json_str_field_first(FILE *fp, const char *name, const char *v)
{
    fprintf(fp, "\"%s\":", name);
    if (v)
        mt_json_string(fp, v);
    else
        fputs("null", fp);
}

/* A string field, or null. */
static void json_str_field(FILE *fp, const char *name, const char *v)
{
    fputc(',', fp);
    json_str_field_first(fp, name, v);
}

/* "source" as the text shows it, and its file and line apart (null without DWARF). */
static void json_source(FILE *fp, const mt_program *prog, const mt_procedure *p, uint32_t block)
{
    char src[PATH_MAX + 32];
    const mt_block *b = &p->blocks[block];
    bool known = b->file && b->file < prog->nfiles;
    fprintf(fp, ",\"address\":\"0x%" PRIx64 "\"", b->start);
    json_str_field(fp, "source", source_of(prog, p, block, src, sizeof src));
    json_str_field(fp, "file", known ? prog->files[b->file] : NULL);
    if (known)
        fprintf(fp, ",\"line\":%u", b->line);
    else
        fputs(",\"line\":null", fp);
}

static void json_rows(FILE *fp, const summary *s, bool loops)
{
    size_t n;
    object_row *rows = collect_rows(s->objs, s->nobjs, loops, &n);
    uint64_t total = s->memops;
    fprintf(fp, ",\"%s\":[", loops ? "loops" : "procedures");
    for (size_t i = 0; i < n; i++) {
        const object_row *r = &rows[i];
        const mt_program *prog = s->objs[r->object].prog;
        const mt_procedure *p = &prog->procs[r->proc];
        fputs(i ? ",{" : "{", fp);
        json_str_field_first(fp, "object", s->objs[r->object].name);
        if (loops) {
            const mt_loop *lp = &p->loops[r->loop];
            fputs(",\"procedure\":", fp);
            mt_json_string(fp, p->name);
            fprintf(fp, ",\"loop\":%u,\"depth\":%u", r->loop, lp->depth);
            json_source(fp, prog, p, lp->header);
        } else {
            fputs(",\"name\":", fp);
            mt_json_string(fp, p->name);
            json_source(fp, prog, p, 0);
        }
        json_u64_field(fp, "memory_ops", r->memops);
        json_num_field(fp, "memory_ops_percent",
                       total ? 100.0 * (double)r->memops / (double)total : NAN);
        json_u64_field(fp, "instructions", r->insns);
        json_u64_field(fp, loops ? "header_executions" : "entries", loops ? r->iterations : r->entries);
        fputc('}', fp);
    }
    fputc(']', fp);
    free(rows);
}

static void json_run(FILE *fp, const char *name, const mt_run_result *r, int runs, double slow)
{
    fprintf(fp, ",\"%s\":", name);
    if (!r) {
        fputs("null", fp);
        return;
    }
    fputs("{\"user_seconds\":", fp);
    mt_json_number(fp, r->user);
    json_num_field(fp, "system_seconds", r->sys);
    json_num_field(fp, "wall_seconds", r->wall);
    json_num_field(fp, "tsc_per_cycle", r->tsc_per_cycle);
    if (runs)
        fprintf(fp, ",\"runs\":%d", runs);
    else
        json_num_field(fp, "slowdown", slow);
    fputc('}', fp);
}

static void json_libraries(FILE *fp, const mt_pass1_libraries *l)
{
    fputs(",\"libs\":{", fp);
    json_str_field_first(fp, "asked", l->spec);
    fprintf(fp, ",\"default\":%s}", l->by_default ? "true" : "false");
    fputs(",\"libraries\":[", fp);
    for (size_t i = 0, shown = 0; i < l->nlibs; i++) {
        const mt_pass1_library *lib = &l->libs[i];
        if (!lib->asked)
            continue;
        fputs(shown++ ? ",{" : "{", fp);
        json_str_field_first(fp, "name", lib->name);
        json_str_field(fp, "path", lib->path);
        json_str_field(fp, "copy", lib->note ? NULL : lib->ins.path);
        json_str_field(fp, "left_original", lib->note);
        fprintf(fp, ",\"dlopened\":%s", lib->dlopened ? "true" : "false");
        json_str_field(fp, "starts_with", lib->starts);
        if (!lib->note) {
            const mt_pass1_totals *t = &lib->totals;
            fprintf(fp, ",\"procedures\":%u,\"procedures_candidates\":%u",
                    lib->ins.rewrite.nprocs_instrumented, lib->ins.rewrite.nprocs_candidates);
            json_u64_field(fp, "blocks", t->blocks);
            json_u64_field(fp, "instructions", t->insns);
            json_u64_field(fp, "memory_ops", t->reads + t->writes);
        } else {
            fputs(",\"procedures\":null,\"procedures_candidates\":null,\"blocks\":null,"
                  "\"instructions\":null,\"memory_ops\":null", fp);
        }
        fputc('}', fp);
    }
    fputc(']', fp);
}

static void print_json(FILE *fp, const summary *s)
{
    const count_args *a = s->a;
    const mt_rewrite_report *rw = &s->ins->rewrite;
    const mt_figure2 *f = s->fig;
    const mt_pass1_totals *t = s->t;
    char st[PATH_MAX + 64];
    describe_status(s, st, sizeof st);
    fputs("{\"schema\":\"mtool.count\",\"version\":1", fp);
    json_str_field(fp, "binary", a->argv[0]);
    fputs(",\"arguments\":[", fp);
    for (char **arg = a->argv + 1; *arg; arg++) {
        if (arg > a->argv + 1)
            fputc(',', fp);
        mt_json_string(fp, *arg);
    }
    fputc(']', fp);
    json_str_field(fp, "run_directory", s->rundir);
    fprintf(fp, ",\"ran\":%s", s->run ? "true" : "false");
    json_str_field(fp, "profiles_merged_from", s->run ? NULL : a->profiles);
    if (s->run)
        fprintf(fp, ",\"exit_status\":%d", mt_exit_code(s->run->status));
    else
        fputs(",\"exit_status\":null", fp);
    json_str_field(fp, "status", st);
    fprintf(fp, ",\"processes\":%u,\"threads\":%u,\"profiles_skipped_other\":%u,"
                "\"profiles_skipped_incomplete\":%u,\"profiles_skipped_damaged\":%u",
            s->m->nprocesses, s->m->nthreads, s->m->nother, s->m->nincomplete, s->m->ndamaged);

    fprintf(fp, ",\"instrumentation\":{\"procedures\":%u,\"procedures_candidates\":%u",
            rw->nprocs_instrumented, rw->nprocs_candidates);
    json_u64_field(fp, "blocks", rw->nblocks_instrumented);
    json_u64_field(fp, "blocks_candidates", rw->nblocks_candidates);
    json_u64_field(fp, "relocated_code_bytes", rw->code_bytes);
    fprintf(fp, ",\"derived_blocks\":%u,\"probes_saving_flags\":%u,\"self_loops_in_registers\":%u,"
                "\"wrapped_calls\":%u,\"task_hooks\":%u,\"recorded_call_sites\":%u,"
                "\"table_checks\":%u,\"unwind_entries\":%u,\"not_instrumented\":[",
            rw->nderived, rw->nprobes_saving_flags, rw->nloop_registers, rw->nwrapped_calls,
            rw->ntask_hooks, rw->ncall_sites, rw->ntable_checks, rw->nfdes);
    for (uint32_t i = 0; i < rw->nskipped; i++) {
        const mt_procedure *p = &s->prog->procs[rw->skipped[i].proc];
        fputs(i ? ",{\"procedure\":" : "{\"procedure\":", fp);
        mt_json_string(fp, p->name);
        fprintf(fp, ",\"address\":\"0x%" PRIx64 "\"", p->entry);
        json_str_field(fp, "reason", rw->skipped[i].reason);
        fputc('}', fp);
    }
    fputs("]}", fp);

    fputs(",\"executed\":{\"blocks\":", fp);
    fprintf(fp, "%" PRIu64, t->blocks);
    json_u64_field(fp, "instructions", t->insns);
    json_u64_field(fp, "memory_ops", t->reads + t->writes);
    json_u64_field(fp, "memory_reads", t->reads);
    json_u64_field(fp, "memory_writes", t->writes);
    json_u64_field(fp, "counted_blocks", t->counted_blocks);
    json_u64_field(fp, "counted_blocks_run", t->executed_blocks);
    fputs(",\"table_fallbacks\":[", fp);
    for (size_t k = 0; k < t->nfallbacks; k++) {
        uint64_t at = s->map->addrs[t->fallbacks[k]] & ~MT_COUNTER_FALLBACK;
        uint32_t p = mt_procedure_at(s->prog, at);
        fputs(k ? ",{\"procedure\":" : "{\"procedure\":", fp);
        mt_json_string(fp, p == MT_NONE ? "?" : s->prog->procs[p].name);
        fprintf(fp, ",\"address\":\"0x%" PRIx64 "\",\"count\":%" PRIu64 "}", at,
                s->m->counts[t->fallbacks[k]]);
    }
    fputs("]}", fp);

    json_run(fp, "uninstrumented_run", s->base, a->baseline_runs, NAN);
    json_run(fp, "instrumented_run", s->run, 0, slowdown(s));

    fputs(",\"machine\":{\"cpu_model\":", fp);
    mt_json_string(fp, f->cpu_model);
    json_str_field(fp, "profile_source", f->profile_source[0] ? f->profile_source : NULL);
    json_str_field(fp, "profile_cpu_model", f->profile_cpu_model[0] ? f->profile_cpu_model : NULL);
    if (f->profile_source[0])
        fprintf(fp, ",\"profile_version\":%d", f->profile_version);
    else
        fputs(",\"profile_version\":null", fp);
    fprintf(fp, ",\"calibrated\":%s", f->calibrated ? "true" : "false");
    json_num_field(fp, "tsc_hz", f->profile_source[0] ? f->tsc_hz : NAN);
    fputc('}', fp);

    fprintf(fp, ",\"figure2\":{\"predicted\":%s", f->predicted ? "true" : "false");
    json_str_field(fp, "error", f->predicted ? NULL : f->error);
#define PREDICTED(v) (f->predicted ? (v) : NAN)
    json_num_field(fp, "predicted_cycles", PREDICTED(f->cycles));
    json_num_field(fp, "tsc_per_cycle", PREDICTED(f->tsc_per_cycle));
    json_str_field(fp, "tsc_per_cycle_from", f->predicted ? f->tsc_per_cycle_from : NULL);
    json_num_field(fp, "predicted_seconds", PREDICTED(f->predicted_s));
    json_u64_field(fp, "probes", f->probes);
    json_num_field(fp, "probe_cycles", PREDICTED(f->probe_cycles));
    json_num_field(fp, "probe_seconds", PREDICTED(f->probe_s));
    json_num_field(fp, "compensated_user_seconds", PREDICTED(f->compensated_s));
    json_num_field(fp, "measured_seconds", PREDICTED(f->measured_s));
    json_str_field(fp, "measured_from", f->predicted ? f->measured_from : NULL);
    json_num_field(fp, "overhead_seconds", PREDICTED(f->overhead_s));
    json_num_field(fp, "overhead_percent", PREDICTED(f->overhead_percent));
#undef PREDICTED
    fputc('}', fp);
    fputs(",\"model_check\":", fp);
    mt_model_check_json(fp, &f->check);

    json_libraries(fp, s->libs);
    json_rows(fp, s, false);
    json_rows(fp, s, true);
    mt_count_json_ranks(fp, s->prog, s->libs, s->job);
    fputs("}\n", fp);
}

static int write_json(const summary *s, mt_error *err)
{
    char *path = mt_xasprintf("%s/count.json", s->rundir);
    mt_outfile out;
    int rc = mt_outfile_open(&out, path, err);
    free(path);
    if (rc != 0)
        return -1;
    print_json(out.fp, s);
    return mt_outfile_commit(&out, err);
}

/* Every executed procedure and loop (the rows of the summary, all of them)
 * goes to the history. */
static int record_history(const mt_program *prog, const mt_pass1_totals *t, int argc, char **argv,
                          const count_args *a, const mt_run_result *base, const mt_run_result *run)
{
    mt_history *h = mt_history_begin(prog, a->argv[0]);
    counted_object exe = {.prog = prog, .t = t}; /* libraries are not kept in the history yet */
    for (int loops = 0; loops < 2; loops++) {
        size_t n;
        object_row *rows = collect_rows(&exe, 1, loops, &n);
        for (size_t i = 0; i < n; i++)
            mt_history_add(h, rows[i].proc, rows[i].loop, rows[i].entries, rows[i].iterations,
                           rows[i].insns, rows[i].memops, NAN, NAN);
        free(rows);
    }
    mt_history_run r = {.tool = "count", .argc = argc, .argv = argv, .prog_argv = a->argv,
                        .ran = run != NULL, .exit_status = run ? mt_exit_code(run->status) : 0,
                        .user_s = run ? run->user : NAN, .sys_s = run ? run->sys : NAN,
                        .wall_s = run ? run->wall : NAN, .base_user_s = base ? base->user : NAN,
                        .base_sys_s = base ? base->sys : NAN, .base_wall_s = base ? base->wall : NAN};
    return mt_history_finish(h, &r);
}

static void counted_objects(summary *s, const mt_pass1_result *r)
{
    s->objs = mt_xcalloc(r->libs.nlibs + 1, sizeof *s->objs);
    s->objs[s->nobjs++] = (counted_object){.prog = r->prog, .t = &r->totals};
    for (size_t i = 0; i < r->libs.nlibs; i++)
        if (!r->libs.libs[i].note)
            s->objs[s->nobjs++] = (counted_object){.name = r->libs.libs[i].name,
                                                   .prog = r->libs.libs[i].prog,
                                                   .t = &r->libs.libs[i].totals};
    for (size_t o = 0; o < s->nobjs; o++)
        s->memops += s->objs[o].t->reads + s->objs[o].t->writes;
}

int mt_cmd_count(int argc, char **argv)
{
    count_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc;
    mt_error err;
    mt_pass1_options o = {.rundir = a.rundir, .profiles = a.profiles, .argv = a.argv,
                          .no_baseline = a.no_baseline, .baseline_runs = a.baseline_runs,
                          .log = stderr, .libs = a.libs};
    mt_pass1_result r;
    if (mt_run_pass1(&o, &r, &err) != 0) {
        mt_ui_error("%s", err.msg);
        mt_pass1_result_free(&r);
        return 1;
    }
    if (r.fig.machine_error[0])
        mt_ui_error("%s", r.fig.machine_error);
    a.argv = r.argv; /* an MPI job's program, not its launcher */
    summary s = {.prog = r.prog, .a = &a, .rundir = r.rundir, .ins = &r.ins, .m = &r.merge,
                 .t = &r.totals, .base = r.baseline ? &r.base : NULL, .run = r.ran ? &r.run : NULL,
                 .fig = &r.fig, .map = &r.map, .libs = &r.libs, .job = r.job};
    counted_objects(&s, &r);
    print_summary(stderr, &s);
    rc = 1;
    if (write_json(&s, &err) != 0 || mt_run_pass1_keep(&r, &err) != 0) {
        mt_ui_error("%s", err.msg);
        goto out;
    }
    if (a.json) {
        print_json(stdout, &s);
        fflush(stdout);
    }
    char *shown = mt_ui_escape(r.rundir);
    fprintf(stderr, "\nrun kept in %s (%scounts.tsv, count.json)\n", shown,
            r.ran ? "profiles/, " : "");
    free(shown);
    rc = r.ran ? mt_exit_code(r.run.status) : 0;
    /* A history that cannot be written is said on its own line; the exit
     * status stays the program's, which scripts wrapping it rely on. */
    if (!a.no_store)
        record_history(r.prog, &r.totals, argc, argv, &a, s.base, s.run);
out:
    free(s.objs);
    mt_pass1_result_free(&r);
    return rc;
}
