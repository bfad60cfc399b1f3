/* ui/cmd_time.c — pass 2's command line.  `mtool time RUNDIR` runs pass 2
 * on a pass-1 run (run/pass2.c) and reports measured against predicted
 * cycles per loop and procedure; `mtool run -- BIN ARGS` is pass 1
 * (`count`) and pass 2 in one command. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ui.h"

#define TIME_OPTIONS                                                                           \
    "  --inner-first    try innermost loops first (finer localization) instead of\n"          \
    "                   outermost first (MTOOL's order)\n"                                     \
    "  --coverage F     procedures holding this share of memory operations (0.95)\n"           \
    "  --max-regions N  time a large loop-free procedure in up to N regions too\n"             \
    "                   (default 8; 0: never)\n"                                              \
    "  --json           the report as JSON on stdout (docs/REPORT.md); the program's\n"        \
    "                   own stdout still goes there too: redirect it, or read\n"               \
    "                   RUNDIR/report.json\n"                                                  \
    "  --timer-bias T   TSC ticks a timer adds to each entry's measured time\n"                 \
    "                   (default: what the timed program measured at start-up)\n"           \
    "  --runs N         run the timed copy N times: each object's least time is\n"            \
    "                   reported (other load only adds time), the most as its spread\n"      \
    "  --top N          rows to print (default 20; JSON has all)\n"                            \
    "  --no-store       do not record the run in the history\n"                                 \
    "  --no-html        do not write RUNDIR/report.html ('mtool report RUNDIR' writes\n"       \
    "                   it later)\n"

const char mt_time_usage[] =
    "usage: mtool time [options] RUNDIR\n"
    "\n"
    "Pass 2 on top of a pass-1 run directory ('mtool count -o RUNDIR'): chooses the\n"
    "loops and procedures holding most memory operations that are timable (far\n"
    "longer per entry than a timer) and estimable (all their callees' work done on\n"
    "their behalf), times them with TSC timers in a copy of the program without\n"
    "counters, runs it with the same arguments, and reports per m-object measured\n"
    "against predicted core cycles (every memory access an L1 hit): the overhead\n"
    "the memory hierarchy costs.  The report also goes to RUNDIR/report.txt,\n"
    "RUNDIR/report.json and RUNDIR/report.html (as 'mtool report' writes it).\n"
    "Exits with the program's exit status.\n"
    "\n"
    "After a count of an MPI job ('mtool count -- mpirun ... PROG'), each timed run\n"
    "is the launcher's, and the report adds each m-object's figures per rank and\n"
    "its load imbalance (docs/REPORT.md, \"MPI jobs\").\n"
    "\n"
    "options:\n" TIME_OPTIONS;

const char mt_run_usage[] =
    "usage: mtool run [options] -- BIN [ARGS...]\n"
    "\n"
    "The whole two-pass workflow: 'mtool count' (pass 1: block counts, predicted\n"
    "time, MTOOL's figure 2), then 'mtool time' (pass 2: timed m-objects, the\n"
    "report).  Progress goes to stderr, the report to stdout.  With an MPI launcher\n"
    "as the command ('mtool run -- mpirun -n 4 ./app ARGS'), both passes run the job\n"
    "through it, with per-rank figures (docs/REPORT.md, \"MPI jobs\").\n"
    "\n"
    "options:\n"
    "  -o RUNDIR        where to keep both passes (default: a new directory under\n"
    "                   $XDG_CACHE_HOME/mtool/runs)\n"
    "  --confirm        after pass 1's estimate, ask whether to go on (MTOOL's\n"
    "                   'proceed?'), on the terminal\n"
    "  --libs all|none|NAME,...  the shared libraries counted and timed with BIN\n"
    "                   (as 'mtool count --libs'; default: all, glibc's too, none\n"
    "                   for an MPI launcher's program)\n"
    TIME_OPTIONS;

typedef struct {
    const char *rundir;
    char *libs;       /* run: pass 1's --libs (NULL: its default) */
    bool inner_first, json, no_store, no_html, confirm;
    double coverage, timer_bias;
    int top, runs, max_regions;
    char **argv; /* run: BIN ARGS... */
} time_args;

static int parse_args(int argc, char **argv, bool is_run, time_args *a)
{
    memset(a, 0, sizeof *a);
    a->coverage = 0.95;
    a->timer_bias = NAN; /* calibrated by the timed runs */
    a->top = 20;
    a->runs = 1;
    a->max_regions = 8;
    const char *cmd = is_run ? "run" : "time";
    int i = 1;
    for (; i < argc; i++) {
        const char *s = argv[i];
        char *end = NULL;
        if (strcmp(s, "--") == 0 && is_run) {
            i++;
            break;
        }
        if (strcmp(s, "--inner-first") == 0)
            a->inner_first = true;
        else if (strcmp(s, "--json") == 0)
            a->json = true;
        else if (strcmp(s, "--no-store") == 0)
            a->no_store = true;
        else if (strcmp(s, "--no-html") == 0)
            a->no_html = true;
        else if (strcmp(s, "--confirm") == 0 && is_run)
            a->confirm = true;
        else if (strcmp(s, "-o") == 0 && is_run && i + 1 < argc)
            a->rundir = argv[++i];
        else if (strcmp(s, "--libs") == 0 && is_run && i + 1 < argc && argv[i + 1][0])
            a->libs = argv[++i];
        else if (strcmp(s, "--coverage") == 0 && i + 1 < argc &&
                 (a->coverage = strtod(argv[++i], &end)) > 0 && a->coverage <= 1 && !*end)
            ;
        else if (strcmp(s, "--timer-bias") == 0 && i + 1 < argc &&
                 (a->timer_bias = strtod(argv[++i], &end)) >= 0 && !*end)
            ;
        else if (strcmp(s, "--top") == 0 && i + 1 < argc && (a->top = atoi(argv[++i])) > 0)
            ;
        else if (strcmp(s, "--runs") == 0 && i + 1 < argc && (a->runs = atoi(argv[++i])) > 0)
            ;
        else if (strcmp(s, "--max-regions") == 0 && i + 1 < argc &&
                 (a->max_regions = (int)strtol(argv[++i], &end, 10)) >= 0 && !*end)
            ;
        else if (s[0] == '-') {
            mt_ui_error("%s: unknown, incomplete or invalid option '%s'; see 'mtool help %s'", cmd,
                        s, cmd);
            return 2;
        } else if (!is_run && !a->rundir)
            a->rundir = s;
        else if (is_run)
            break; /* BIN without "--" */
        else {
            mt_ui_error("time: more than one run directory ('%s', '%s')", a->rundir, s);
            return 2;
        }
    }
    if (is_run) {
        if (i >= argc) {
            mt_ui_error("run: no program given; usage: mtool run [options] -- BIN [ARGS...]");
            return 2;
        }
        a->argv = argv + i;
    } else if (!a->rundir) {
        mt_ui_error("time: no run directory given; usage: mtool time [options] RUNDIR");
        return 2;
    }
    return 0;
}

/* ---- the report ------------------------------------------------------------ */

static const char *kind_of(const mt_candidate *c)
{
    return c->region.n ? "region" : c->loop == MT_NONE ? "procedure" : "loop";
}

/* The object's first block: entry, loop header or region start. */
static uint32_t first_block(const mt_candidate *c)
{
    return c->region.n ? c->region.first
           : c->loop == MT_NONE ? 0 : c->prog->procs[c->proc].loops[c->loop].header;
}

/* "file:first-last" over the object's blocks (its address without DWARF). */
void mt_time_source_range(const mt_candidate *c, char *buf, size_t n)
{
    const mt_procedure *p = &c->prog->procs[c->proc];
    bool *in = mt_candidate_blocks(c->prog, c);
    uint32_t *blocks = mt_xcalloc(p->nblocks + 1, sizeof *blocks), nb = 0;
    for (uint32_t b = 0; b < p->nblocks; b++)
        if (in[b])
            blocks[nb++] = b;
    mt_ui_source_range(c->prog, p, blocks, nb, buf, n);
    if (!buf[0])
        snprintf(buf, n, "0x%" PRIx64, p->blocks[first_block(c)].start);
    free(blocks);
    free(in);
}

/* Its procedure, LIB:PROCEDURE in a shared library (docs/REPORT.md). */
void mt_time_object_name(const mt_candidate *c, char *buf, size_t n)
{
    const mt_procedure *p = &c->prog->procs[c->proc];
    char proc[384];
    snprintf(proc, sizeof proc, "%s%s%s", c->object ? c->object : "", c->object ? ":" : "",
             p->name);
    if (c->region.n)
        snprintf(buf, n, "%s: region %u of %u at 0x%" PRIx64, proc, c->region.k, c->region.n,
                 p->blocks[c->region.first].start);
    else if (c->loop == MT_NONE)
        snprintf(buf, n, "%s", proc);
    else
        snprintf(buf, n, "%s: loop at 0x%" PRIx64 " (depth %u)", proc,
                 p->blocks[p->loops[c->loop].header].start, p->loops[c->loop].depth);
}

static double pct(double part, double whole) { return whole != 0 ? 100 * part / whole : NAN; }

/* What a row's figures need said beside them. */
static void row_warnings(const mt_mobject_figures *r, char *buf, size_t n)
{
    buf[0] = '\0';
    size_t at = 0;
#define WARN(...) at += (size_t)snprintf(buf + at, at < n ? n - at : 0, __VA_ARGS__)
    if (r->cand->warning[0])
        WARN("%s", r->cand->warning);
    if (r->entries != r->cand->entries && r->cand->loop == MT_NONE)
        WARN("%sentries %" PRIu64 " in pass 2, %" PRIu64 " in pass 1 (the input or the run "
             "differs?)", at ? "; " : "", r->entries, r->cand->entries);
    if (r->recursive)
        WARN("%s%" PRIu64 " recursive entries (timed from the outermost)", at ? "; " : "",
             r->recursive);
    if (r->nonlocal_exits)
        WARN("%s%" PRIu64 " left by longjmp or an exception", at ? "; " : "", r->nonlocal_exits);
    if (r->open)
        WARN("%s%" PRIu64 " still running at exit (time lost)", at ? "; " : "", r->open);
    if (r->outside > 0.01 * r->measured)
        WARN("%s%.3g cycles in shared libraries or system calls, not counted", at ? "; " : "",
             r->outside);
    /* Memory never makes code faster than every access hitting L1: a time
     * well below the prediction is the cost model's error. */
    if (r->overhead < -0.1 * r->cand->predicted)
        WARN("%smeasured %.0f%% below the prediction: the cost model over-predicts it (calls "
             "overlapping a loop's work, or a schedule it does not see), not a memory effect",
             at ? "; " : "", -100 * r->overhead / r->cand->predicted);
#undef WARN
}

/* The clock moved around the runs by more than the two clock references
 * of a calibration may disagree (costmodel/calibrate.c, CLOCK_AGREE). */
#define CLOCK_MOVED 0.03

static void print_text(FILE *fp, const mt_pass2_result *rp, int top)
{
    const mt_selection *sel = &rp->sel;
    char st[128];
    mt_describe_status(st, sizeof st, rp->run.status);
    char *bin = mt_ui_escape(rp->pass1.binary);
    fprintf(fp, "mtool time: %s: %zu m-objects timed (%s first), %d run%s, %s\n", bin,
            sel->ntimed, rp->inner_first ? "inner loops" : "outer loops", rp->runs,
            rp->runs == 1 ? "" : "s (least time per object; spread in brackets)", st);
    free(bin);
    double sec = rp->tsc_per_cycle / rp->tsc_hz;
    fprintf(fp, "MTOOL figure 2 (whole program; core cycles at %.4f TSC ticks/cycle, %s):\n",
            rp->tsc_per_cycle, rp->clock_in_program ? "the clock the program measured as it ran"
                                                    : "the clock measured around its run");
    fprintf(fp, "  predicted   %14.4g cycles  %9.3f s  (pass-1 counts x cost model, every access an "
                "L1 hit)\n", rp->program_predicted, rp->program_predicted * sec);
    if (rp->program_measured >= 0) {
        double over = rp->program_measured - rp->program_predicted;
        fprintf(fp, "  measured    %14.4g cycles  %9.3f s  (%s)\n", rp->program_measured,
                rp->program_measured * sec, rp->measured_from);
        double percent = pct(over, rp->program_predicted);
        fprintf(fp, "  overhead    %14.4g cycles  %9.3f s  (%s%+.1f%%%s of predicted)\n", over,
                over * sec, mt_ui_style(fp, mt_ui_overhead_style(percent)), percent,
                mt_ui_style(fp, MT_UI_PLAIN));
    }
    mt_model_check mc;
    mt_model_check_of(&mc, &rp->machine);
    mt_model_check_print(fp, &mc, "  ");
    if (rp->off_cpu > 0.05)
        fprintf(fp, "warning: the program was off the CPU for %.0f%% of its wall time even in its "
                    "least loaded run (other load on the machine, or waiting for I/O): timers count "
                    "that time, so "
                    "overheads are inflated; rerun on a quiet machine or with more --runs\n",
                100 * rp->off_cpu);
    size_t around = 0;
    for (size_t i = 0; i < rp->nrows; i++)
        around += !rp->rows[i].clock_in_program;
    double moved = rp->clock_hi / rp->clock_lo - 1;
    if (moved > CLOCK_MOVED && (around || !rp->clock_in_program))
        fprintf(fp, "warning: the core clock moved by %.0f%% around the timed runs (%.4f to %.4f "
                    "TSC ticks a cycle, measured before and after each) and %zu object%s%s no "
                    "clock measured as they ran: they are in cycles at the clock measured around "
                    "their run, off by the difference if they ran at another (docs/REPORT.md)\n",
                100 * moved, rp->clock_lo, rp->clock_hi, around, around == 1 ? "" : "s",
                !rp->clock_in_program ? " and figure 2 have" : around == 1 ? " has" : " have");
    fprintf(fp, "\n%sm-objects by overhead%s (measured: timers minus time in shared libraries and "
                "system calls, minus %.1f ticks of timer bias per entry, %s):\n",
            mt_ui_style(fp, MT_UI_BOLD), mt_ui_style(fp, MT_UI_PLAIN), rp->timer_bias,
            rp->bias_given ? "given" : "measured by the timed program at start-up");
    fprintf(fp, "  %-9s %12s %14s %14s %9s %7s %10s  %s\n", "kind", "entries", "measured", "predicted",
            "overhead", "share", "extra/mop", "name, source");
    double program_over = rp->program_measured >= 0 ? rp->program_measured - rp->program_predicted
                                                    : rp->objects_overhead;
    for (size_t i = 0; i < rp->nrows && (int)i < top; i++) {
        const mt_mobject_figures *r = &rp->rows[i];
        char raw[512], *name, *src, *warn;
        mt_time_object_name(r->cand, raw, sizeof raw);
        name = mt_ui_escape(raw);
        mt_time_source_range(r->cand, raw, sizeof raw);
        src = mt_ui_escape(raw);
        row_warnings(r, raw, sizeof raw);
        warn = mt_ui_escape(raw);
        double over = pct(r->overhead, r->cand->predicted);
        const char *style = mt_ui_style(fp, mt_ui_overhead_style(over)),
                   *plain = mt_ui_style(fp, MT_UI_PLAIN);
        int column = fprintf(fp, "  %-9s %12" PRIu64 " %14.4g %14.4g %s%+8.1f%%%s %6.1f%% %10.2f  ",
                             kind_of(r->cand), r->entries, r->measured, r->cand->predicted, style,
                             over, plain, pct(r->overhead, program_over),
                             r->cand->memops ? r->overhead / (double)r->cand->memops : 0);
        char *last = mt_xasprintf("%s%s, %s", r->outermost ? "" : "  ", name, src);
        mt_ui_last_column(fp, column > 0 ? (size_t)column - strlen(style) - strlen(plain) : 0, last);
        free(last);
        if (rp->runs > 1)
            fprintf(fp, "  %-9s   [overhead %+.1f%% .. %+.1f%% over %d runs]\n", "",
                    pct(r->overhead, r->cand->predicted),
                    pct(r->measured_max - r->cand->predicted, r->cand->predicted), rp->runs);
        if (warn[0])
            fprintf(fp, "  %-9s   %s! %s%s\n", "", mt_ui_style(fp, MT_UI_YELLOW), warn,
                    mt_ui_style(fp, MT_UI_PLAIN));
        free(name);
        free(src);
        free(warn);
    }
    if (rp->nrows == 0)
        fprintf(fp, "  (none: no candidate was both timable and estimable; see below)\n");
    fprintf(fp, "  (indented names are nested in another timed object; share = of the program's "
                "overhead)\n");
    fprintf(fp, "\ntotals: %.1f%% of the counted memory operations run inside timed objects",
            pct((double)rp->memops_in_objects, (double)sel->memops_total));
    if (rp->program_measured >= 0)
        fprintf(fp, "; unexplained overhead %.4g cycles (%.1f%% of the program's overhead, outside "
                    "the timed objects)", program_over - rp->objects_overhead,
                pct(program_over - rp->objects_overhead, program_over));
    fputc('\n', fp);
    if (rp->program_measured > 0 && rp->objects_outside > 0.01 * rp->program_measured)
        fprintf(fp, "note: %.4g cycles (%.1f%% of the measured time) ran in shared libraries or the "
                    "kernel from inside timed objects: measured, never overhead of an object; the "
                    "program's own figure counts that time as unexplained\n",
                rp->objects_outside, pct(rp->objects_outside, rp->program_measured));
    size_t shown = 0;
    for (size_t j = sel->ntimed; j < sel->ncands; j++) {
        const mt_candidate *c = &sel->cands[j];
        if (c->status == MT_CAND_COVERED || c->status == MT_CAND_NOT_RUN)
            continue;
        if (shown++ == 0)
            fprintf(fp, "\nnot timed (%s):\n", "candidates of the selected procedures");
        if ((int)shown > top)
            continue;
        char raw[512], *name, *src, *warn = mt_ui_escape(c->warning);
        mt_time_object_name(c, raw, sizeof raw);
        name = mt_ui_escape(raw);
        mt_time_source_range(c, raw, sizeof raw);
        src = mt_ui_escape(raw);
        int column = fprintf(fp, "  %-15s %-9s %12" PRIu64 " entries %14.4g predicted  ",
                             mt_candidate_status_name(c->status), kind_of(c), c->entries,
                             c->predicted);
        char *last = mt_xasprintf("%s, %s%s%s", name, src, c->warning[0] ? " — " : "", warn);
        mt_ui_last_column(fp, column > 0 ? (size_t)column : 0, last);
        free(last);
        free(name);
        free(src);
        free(warn);
    }
    if ((int)shown > top)
        fprintf(fp, "  ... %zu more (report.json has all)\n", shown - (size_t)top);
    mt_time_print_ranks(fp, rp);
}

static void json_candidate(FILE *fp, const mt_candidate *c)
{
    char name[512], src[512];
    mt_time_object_name(c, name, sizeof name);
    mt_time_source_range(c, src, sizeof src);
    const mt_procedure *p = &c->prog->procs[c->proc];
    fprintf(fp, "\"kind\":\"%s\",\"name\":", kind_of(c));
    mt_json_string(fp, name);
    if (c->object) { /* a shared library's (absent: the executable's) */
        fputs(",\"object\":", fp);
        mt_json_string(fp, c->object);
    }
    fputs(",\"procedure\":", fp);
    mt_json_string(fp, p->name);
    fprintf(fp, ",\"address\":\"0x%" PRIx64 "\",\"source\":",
            p->blocks[first_block(c)].start);
    mt_json_string(fp, src);
    if (c->region.n) {
        fprintf(fp, ",\"region\":%u,\"regions\":%u,\"region_end\":", c->region.k, c->region.n);
        if (c->region.end != MT_NONE)
            fprintf(fp, "\"0x%" PRIx64 "\"", p->blocks[c->region.end].start);
        else
            fputs("null", fp);
    }
    char spec[600];
    mt_timed_object o = mt_candidate_object(c);
    mt_timed_object_format(c->prog, &o, spec, sizeof spec);
    fputs(",\"time_spec\":", fp);
    mt_json_string(fp, spec);
    fputs(",\"note\":", fp);
    mt_json_string(fp, c->warning);
    fprintf(fp, ",\"status\":\"%s\",\"pass1_entries\":%" PRIu64 ",\"memory_ops\":%" PRIu64
                ",\"instructions\":%" PRIu64 ",\"predicted_cycles\":",
            mt_candidate_status_name(c->status), c->entries, c->memops, c->insns);
    mt_json_number(fp, c->predicted);
}

static void print_json(FILE *fp, const mt_pass2_result *rp)
{
    const mt_selection *sel = &rp->sel;
    double program_over = rp->program_measured >= 0 ? rp->program_measured - rp->program_predicted
                                                    : NAN;
    fputs("{\"schema\":\"mtool.report\",\"version\":1,\"binary\":", fp);
    mt_json_string(fp, rp->pass1.binary);
    fprintf(fp, ",\"exit_status\":%d,\"order\":\"%s\",\"runs\":%d,\"tsc_per_cycle\":",
            mt_exit_code(rp->run.status), rp->inner_first ? "inner-first" : "outer-first", rp->runs);
    mt_json_number(fp, rp->tsc_per_cycle);
    fprintf(fp, ",\"clock_from\":\"%s\"", rp->clock_in_program ? "program" : "around the run");
    fputs(",\"tsc_per_cycle_min\":", fp);
    mt_json_number(fp, rp->clock_lo);
    fputs(",\"tsc_per_cycle_max\":", fp);
    mt_json_number(fp, rp->clock_hi);
    fputs(",\"off_cpu_share\":", fp);
    mt_json_number(fp, rp->off_cpu);
    fputs(",\"timer_bias_ticks\":", fp);
    mt_json_number(fp, rp->timer_bias);
    mt_model_check mc;
    mt_model_check_of(&mc, &rp->machine);
    fputs(",\"model_check\":", fp);
    mt_model_check_json(fp, &mc);
    fputs(",\"program\":{\"predicted_cycles\":", fp);
    mt_json_number(fp, rp->program_predicted);
    fputs(",\"measured_cycles\":", fp);
    mt_json_number(fp, rp->program_measured >= 0 ? rp->program_measured : NAN);
    fputs(",\"measured_from\":", fp);
    mt_json_string(fp, rp->measured_from);
    fputs(",\"overhead_cycles\":", fp);
    mt_json_number(fp, program_over);
    fputs(",\"overhead_percent\":", fp);
    mt_json_number(fp, pct(program_over, rp->program_predicted));
    fprintf(fp, ",\"memory_ops\":%" PRIu64 ",\"memory_ops_in_objects\":%" PRIu64
                ",\"objects_overhead_cycles\":",
            sel->memops_total, rp->memops_in_objects);
    mt_json_number(fp, rp->objects_overhead);
    fputs(",\"objects_outside_cycles\":", fp);
    mt_json_number(fp, rp->objects_outside);
    fputs(",\"unexplained_overhead_cycles\":", fp);
    mt_json_number(fp, program_over - rp->objects_overhead);
    fputs("},\"objects\":[", fp);
    for (size_t i = 0; i < rp->nrows; i++) {
        const mt_mobject_figures *r = &rp->rows[i];
        char warn[512];
        row_warnings(r, warn, sizeof warn);
        fputs(i ? ",{" : "{", fp);
        json_candidate(fp, r->cand);
        fprintf(fp, ",\"entries\":%" PRIu64 ",\"recursive_entries\":%" PRIu64
                    ",\"nonlocal_exits\":%" PRIu64 ",\"open_at_exit\":%" PRIu64 ",\"measured_cycles\":",
                r->entries, r->recursive, r->nonlocal_exits, r->open);
        mt_json_number(fp, r->measured);
        fputs(",\"measured_cycles_max\":", fp);
        mt_json_number(fp, r->measured_max);
        fputs(",\"overhead_percent_max\":", fp);
        mt_json_number(fp, pct(r->measured_max - r->cand->predicted, r->cand->predicted));
        fputs(",\"outside_cycles\":", fp);
        mt_json_number(fp, r->outside);
        fputs(",\"tsc_per_cycle\":", fp);
        mt_json_number(fp, r->tsc_per_cycle);
        fprintf(fp, ",\"clock_from\":\"%s\"", r->clock_in_program ? "program" : "around the run");
        fputs(",\"overhead_cycles\":", fp);
        mt_json_number(fp, r->overhead);
        fputs(",\"overhead_percent\":", fp);
        mt_json_number(fp, pct(r->overhead, r->cand->predicted));
        fputs(",\"share_of_program_overhead\":", fp);
        mt_json_number(fp, pct(r->overhead, program_over));
        fputs(",\"extra_cycles_per_memory_op\":", fp);
        mt_json_number(fp, r->cand->memops ? r->overhead / (double)r->cand->memops : NAN);
        fprintf(fp, ",\"outermost\":%s,\"warnings\":", r->outermost ? "true" : "false");
        mt_json_string(fp, warn);
        fputc('}', fp);
    }
    fputs("],\"not_timed\":[", fp);
    bool first = true;
    for (size_t j = sel->ntimed; j < sel->ncands; j++) {
        fputs(first ? "{" : ",{", fp);
        first = false;
        json_candidate(fp, &sel->cands[j]);
        fputc('}', fp);
    }
    fputc(']', fp);
    mt_time_json_ranks(fp, rp);
    fputs("}\n", fp);
}

static int save_report(const char *rundir, const mt_pass2_result *rp, mt_error *err)
{
    mt_outfile out;
    char *path = mt_xasprintf("%s/report.txt", rundir);
    int rc = mt_outfile_open(&out, path, err);
    if (rc == 0) {
        print_text(out.fp, rp, INT32_MAX);
        rc = mt_outfile_commit(&out, err);
    }
    free(path);
    path = mt_xasprintf("%s/report.json", rundir);
    if (rc == 0 && (rc = mt_outfile_open(&out, path, err)) == 0) {
        print_json(out.fp, rp);
        rc = mt_outfile_commit(&out, err);
    }
    free(path);
    return rc;
}

/* ---- pass 2 ------------------------------------------------------------------ */

/* The history of the object of candidate c: h, or its library's (made
 * the first time one of its objects comes). */
static mt_history *history_of_object(mt_history *h, mt_history **of_lib,
                                     const mt_pass1_libraries *libs, const mt_candidate *c)
{
    for (size_t i = 0; c->object && i < libs->nlibs; i++)
        if (libs->libs[i].name == c->object)
            return of_lib[i] ? of_lib[i]
                             : (of_lib[i] = mt_history_library(h, c->prog, libs->libs[i].name,
                                                               libs->libs[i].path));
    return h;
}

static int record_history(const char *rundir, const mt_pass2_result *rp, int argc, char **argv,
                          const char *tool)
{
    const mt_pass1 *p1 = &rp->pass1;
    const mt_run_result *run = &rp->run;
    mt_history *exe = mt_history_begin(rp->prog, p1->binary);
    for (uint32_t k = 0; k < rp->nranks; k++)
        mt_history_add_rank(exe, rp->ranks[k].rank, rp->ranks[k].host);
    mt_history **of_lib = mt_xcalloc(rp->libs.nlibs + 1, sizeof *of_lib);
    for (size_t i = 0; i < rp->nrows; i++) {
        const mt_mobject_figures *r = &rp->rows[i];
        mt_history *h = history_of_object(exe, of_lib, &rp->libs, r->cand);
        if (r->cand->region.n)
            mt_history_add_region(h, r->cand->proc, r->cand->region.first, r->cand->region.end,
                                  r->cand->region.k, r->entries, r->cand->insns, r->cand->memops,
                                  r->measured, r->cand->predicted);
        else /* a loop's entries as count stores them (mt_loop_entries), not its timer's */
            mt_history_add(h, r->cand->proc, r->cand->loop,
                           r->cand->loop == MT_NONE ? r->entries : r->cand->entries,
                           r->cand->iterations, r->cand->insns, r->cand->memops, r->measured,
                           r->cand->predicted);
        mt_time_history_ranks(h, rp, r);
    }
    mt_history_run hr = {.tool = tool, .argc = argc, .argv = argv, .prog_argv = p1->argv,
                         .ran = true, .exit_status = mt_exit_code(run->status),
                         .user_s = run->user, .sys_s = run->sys, .wall_s = run->wall,
                         .base_user_s = p1->base_user, .base_sys_s = p1->base_sys,
                         .base_wall_s = p1->base_wall, .rundir = rundir,
                         .timed = &(mt_store_program_time){rp->program_predicted,
                                                           rp->program_measured >= 0
                                                               ? rp->program_measured : NAN,
                                                           rp->objects_overhead,
                                                           rp->memops_in_objects}};
    free(of_lib);
    return mt_history_finish(exe, &hr);
}

static int pass2(const char *rundir, const time_args *a, int argc, char **argv, const char *tool)
{
    mt_error err;
    mt_pass2_options o = {.rundir = rundir, .coverage = a->coverage,
                          .inner_first = a->inner_first, .max_regions = a->max_regions,
                          .runs = a->runs, .timer_bias = a->timer_bias, .log = stderr};
    mt_pass2_result rp;
    int rc = 1;
    if (mt_run_pass2(&o, &rp, &err) != 0) {
        mt_ui_error("%s", err.msg);
        goto out;
    }
    if (a->json)
        print_json(stdout, &rp);
    else
        print_text(stdout, &rp, a->top);
    if (save_report(rundir, &rp, &err) != 0) {
        mt_ui_error("%s", err.msg);
        goto out;
    }
    char *html = a->no_html ? NULL : mt_xasprintf("%s/report.html", rundir);
    bool html_failed = html && mt_ui_write_report(rundir, &rp, html, NULL) != 0;
    free(html);
    if (html_failed)
        goto out;
    char *shown = mt_ui_escape(rundir);
    fprintf(stderr, "report kept in %s/report.txt, report.json%s\n", shown,
            a->no_html ? "" : " and report.html");
    free(shown);
    rc = mt_exit_code(rp.run.status);
    /* Failing to store is said on its own line; the exit status stays the
     * program's. */
    if (!a->no_store)
        record_history(rundir, &rp, argc, argv, tool);
out:
    mt_pass2_result_free(&rp);
    return rc;
}

int mt_cmd_time(int argc, char **argv)
{
    time_args a;
    int rc = parse_args(argc, argv, false, &a);
    if (rc)
        return rc;
    char *rundir = mt_absolute(a.rundir);
    if (!rundir) {
        mt_ui_error("%s: %s", a.rundir, strerror(errno));
        return 1;
    }
    rc = pass2(rundir, &a, argc, argv, "time");
    free(rundir);
    return rc;
}

/* MTOOL's "proceed?": on the terminal, so that pipes stay untouched. */
static bool confirmed(void)
{
    FILE *tty = fopen("/dev/tty", "r+");
    if (!tty) {
        mt_ui_error("run: --confirm needs a terminal");
        return false;
    }
    fputs("mtool run: proceed with pass 2 (timers)? [Y/n] ", tty);
    fflush(tty);
    char line[64] = "";
    bool yes = fgets(line, sizeof line, tty) && (line[0] == '\n' || line[0] == 'y' || line[0] == 'Y');
    fclose(tty);
    return yes;
}

int mt_cmd_run(int argc, char **argv)
{
    time_args a;
    int rc = parse_args(argc, argv, true, &a);
    if (rc)
        return rc;
    char *rundir = a.rundir ? mt_xstrdup(a.rundir) : mt_default_rundir(a.argv[0]);
    /* Pass 1 is `mtool count -o RUNDIR --no-store [--libs SPEC] -- BIN ARGS`: the history
     * gets one run, pass 2's, with both passes' figures. */
    size_t nprog = 0;
    while (a.argv[nprog])
        nprog++;
    char **cargv = mt_xcalloc(nprog + 8, sizeof *cargv);
    size_t k = 0;
    cargv[k++] = "count";
    cargv[k++] = "-o";
    cargv[k++] = rundir;
    cargv[k++] = "--no-store";
    if (a.libs) { /* pass 2 times what pass 1 counted */
        cargv[k++] = "--libs";
        cargv[k++] = a.libs;
    }
    cargv[k++] = "--";
    for (size_t i = 0; i < nprog; i++)
        cargv[k++] = a.argv[i];
    fprintf(stderr, "mtool run: pass 1 (block counts)\n");
    mt_rundir_forget_pass1(rundir); /* kept again when pass 1 succeeds, whatever the program's exit status */
    rc = mt_cmd_count((int)k, cargv);
    free(cargv);
    if (mt_rundir_has_pass1(rundir)) {
        char *abs = mt_absolute(rundir);
        if (a.confirm && !confirmed())
            rc = 0;
        else if (abs) {
            fprintf(stderr, "\nmtool run: pass 2 (timers)\n");
            rc = pass2(abs, &a, argc, argv, "run");
        }
        free(abs);
    }
    free(rundir);
    return rc;
}
