/* report/html.c — the report as one HTML file: a fixed page (page.css,
 * page.js) and the run's figures as one JSON document the script reads.
 *
 * Program-derived text (symbols, file names, source lines) only ever goes
 * into that JSON, with `<`, `>` and `&` written as \u003c, \u003e, \u0026
 * so that nothing in it can end the script element; the script puts it in
 * the page as text (textContent), never as markup.  The page's Content
 * Security Policy forbids every network request. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Source files larger than this are named but not embedded. */
#define MAX_SOURCE_BYTES (4u << 20)

/* JSON text, safe inside a <script> element: `<`, `>` and `&` can only be
 * in its strings, where \u escapes stand for them. */
static void json_embedded(FILE *fp, const char *buf, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (buf[i] == '<')
            fputs("\\u003c", fp);
        else if (buf[i] == '>')
            fputs("\\u003e", fp);
        else if (buf[i] == '&')
            fputs("\\u0026", fp);
        else
            fputc(buf[i], fp);
    }
}

void mt_report_json_text(FILE *fp, const char *s)
{
    if (!s) {
        fputs("null", fp);
        return;
    }
    char *buf = NULL;
    size_t n = 0;
    FILE *mem = open_memstream(&buf, &n);
    if (!mem)
        abort(); /* out of memory: the process ends, as mt_xmalloc's callers' does */
    mt_json_string(mem, s);
    fclose(mem);
    json_embedded(fp, buf, n);
    free(buf);
}

/* The same for the <title>: HTML-escaped. */
static void html_text(FILE *fp, const char *s)
{
    char line[1024];
    mt_escape_text(line, sizeof line, s);
    for (const char *p = line; *p; p++) {
        switch (*p) {
        case '<': fputs("&lt;", fp); break;
        case '>': fputs("&gt;", fp); break;
        case '&': fputs("&amp;", fp); break;
        case '"': fputs("&quot;", fp); break;
        case '\'': fputs("&#39;", fp); break;
        default: fputc(*p, fp);
        }
    }
}

/* Where mt_json_number's 6 digits would round a count. */
void mt_report_json_count(FILE *fp, double v)
{
    if (isfinite(v))
        fprintf(fp, "%.0f", v);
    else
        fputs("null", fp);
}

void mt_report_json_key_count(FILE *fp, const char *key, double v)
{
    fprintf(fp, ",\"%s\":", key);
    mt_report_json_count(fp, v);
}

void mt_report_json_key_number(FILE *fp, const char *key, double v)
{
    fprintf(fp, ",\"%s\":", key);
    mt_json_number(fp, v);
}

static void write_program(FILE *fp, const mt_report *r)
{
    const mt_pass2_record *p = &r->pass2;
    double overhead = p->program_measured - p->program_predicted;
    fputs("\"binary\":", fp);
    mt_report_json_text(fp, r->pass1->binary);
    fputs(",\"argv\":[", fp);
    for (char **a = r->pass1->argv; *a; a++) {
        if (a != r->pass1->argv)
            fputc(',', fp);
        mt_report_json_text(fp, *a);
    }
    fputs("],\"program\":{\"memops\":", fp);
    fprintf(fp, "%" PRIu64 ",\"memops_in_objects\":%" PRIu64, r->memops_total,
            r->memops_in_objects);
    mt_report_json_key_number(fp, "predicted", p->program_predicted);
    mt_report_json_key_number(fp, "measured", p->program_measured);
    mt_report_json_key_number(fp, "overhead", overhead);
    mt_report_json_key_number(fp, "objects_overhead", p->objects_overhead);
    mt_report_json_key_number(fp, "unexplained", overhead - p->objects_overhead);
    fputs("},\"check\":{\"kernels\":", fp);
    mt_json_number(fp, r->check.kernels);
    mt_report_json_key_number(fp, "median", r->check.median_pct);
    mt_report_json_key_number(fp, "worst", r->check.worst_pct);
    fputs(",\"worst_kernel\":", fp);
    mt_report_json_text(fp, r->check.worst_kernel);
    fputs(",\"profile\":", fp);
    mt_report_json_text(fp, r->check.source);
    mt_report_json_key_number(fp, "fallbacks", r->check.fallbacks);
    mt_report_json_key_number(fp, "figures", r->check.fallbacks + r->check.confirmed);
    fputc('}', fp);
}

/* Procedure proc's index among the disassembled ones (write_disassembly's
 * order), -1 when it is not one. */
static int disassembly_slot(const mt_report *r, uint32_t proc)
{
    int slot = -1;
    for (size_t k = 0; k < r->ninsns; k++) {
        slot += k == 0 || r->insns[k - 1].proc != r->insns[k].proc;
        if (r->insns[k].proc == proc)
            return slot;
    }
    return -1;
}

static void write_objects(FILE *fp, const mt_report *r, const uint32_t *file_slot)
{
    fputs(",\"objects\":[", fp);
    for (size_t i = 0; i < r->nobjects; i++) {
        const mt_report_object *o = &r->objects[i];
        fputs(i ? ",{\"spec\":" : "{\"spec\":", fp);
        mt_report_json_text(fp, o->spec);
        const char *proc = r->pass2.objects[i].prog->procs[o->proc].name;
        char *named = o->library ? mt_xasprintf("%s:%s", o->library, proc) : NULL;
        fputs(",\"procedure\":", fp);
        mt_report_json_text(fp, named ? named : proc);
        free(named);
        fputs(",\"library\":", fp);
        mt_report_json_text(fp, o->library);
        fprintf(fp, ",\"kind\":\"%s\",\"address\":\"0x%" PRIx64 "\",\"memops\":%" PRIu64
                    ",\"memops_own\":%" PRIu64 ",\"memops_in_loops\":%" PRIu64
                    ",\"loops\":%u,\"calls\":%u,\"outermost\":%s,\"entries\":%" PRIu64
                    ",\"parent\":%d",
                o->kind, o->address, o->memops, o->memops_own, o->memops_in_loops, o->nloops,
                o->ncalls, o->outermost ? "true" : "false", o->entries,
                o->parent == MT_NONE ? -1 : (int)o->parent);
        mt_report_json_key_number(fp, "predicted", o->predicted);
        mt_report_json_key_number(fp, "measured", o->measured);
        mt_report_json_key_number(fp, "overhead", o->overhead);
        mt_report_json_key_number(fp, "extra", o->extra_per_memop);
        fprintf(fp, ",\"file\":%d,\"first\":%u,\"last\":%u,\"hot\":%u,\"disasm\":%d}",
                o->file ? (int)file_slot[o->file] : -1, o->first_line, o->last_line, o->hot_line,
                o->library ? -1 : disassembly_slot(r, o->proc));
    }
    fputc(']', fp);
}

/* A source file's lines as a JSON array, or null (with why) when it cannot
 * be read now: the report still shows its figures per line. */
void mt_report_write_source(FILE *fp, const char *path)
{
    mt_error err;
    FILE *in = mt_fopen_regular(path, &err);
    char *text = NULL;
    size_t n = 0;
    if (in) {
        text = mt_xmalloc(MAX_SOURCE_BYTES + 1);
        n = fread(text, 1, MAX_SOURCE_BYTES + 1, in);
        fclose(in);
    }
    if (!in || n > MAX_SOURCE_BYTES) {
        fputs(",\"text\":null,\"missing\":", fp);
        mt_report_json_text(fp, in ? "larger than 4 MiB: not embedded" : err.msg);
        free(text);
        return;
    }
    text[n] = '\0';
    fputs(",\"text\":[", fp);
    char *line = text, *end = text + n;
    bool first = true;
    while (line < end) {
        char *nl = memchr(line, '\n', (size_t)(end - line));
        if (nl)
            *nl = '\0';
        if (!first)
            fputc(',', fp);
        first = false;
        mt_report_json_text(fp, line); /* a NUL byte in the file ends the line's text early */
        line = nl ? nl + 1 : end;
    }
    fputs("],\"missing\":null", fp);
    free(text);
}

/* The files the page shows: those the objects' lines come from.
 * file_slot[f]: prog file f's index among them, MT_NONE when not shown. */
static uint32_t *shown_files(const mt_report *r, uint32_t *nshown_out)
{
    uint32_t *file_slot = mt_xmalloc((r->prog->nfiles + 1) * sizeof *file_slot);
    for (uint32_t f = 0; f <= r->prog->nfiles; f++)
        file_slot[f] = MT_NONE;
    uint32_t nshown = 0;
    for (size_t i = 0; i < r->nlines; i++) {
        const mt_report_line *l = &r->lines[i];
        if (l->object != MT_NONE && l->file && file_slot[l->file] == MT_NONE)
            file_slot[l->file] = nshown++;
    }
    for (size_t i = 0; i < r->nobjects; i++)
        if (r->objects[i].file && file_slot[r->objects[i].file] == MT_NONE)
            file_slot[r->objects[i].file] = nshown++;
    *nshown_out = nshown;
    return file_slot;
}

/* The shown files, with their text, and their lines' figures. */
static void write_files(FILE *fp, const mt_report *r, const uint32_t *file_slot, uint32_t nshown)
{
    fputs(",\"files\":[", fp);
    uint32_t *file_of = mt_xcalloc(nshown + 1, sizeof *file_of);
    for (uint32_t f = 1; f < r->prog->nfiles; f++)
        if (file_slot[f] != MT_NONE)
            file_of[file_slot[f]] = f;
    for (uint32_t k = 0; k < nshown; k++) {
        fputs(k ? ",{\"name\":" : "{\"name\":", fp);
        mt_report_json_text(fp, r->prog->files[file_of[k]]);
        mt_report_write_source(fp, r->prog->files[file_of[k]]);
        fputc('}', fp);
    }
    free(file_of);
    /* [file, line, executions, memops, predicted, overhead, object] */
    fputs("],\"lines\":[", fp);
    bool first = true;
    for (size_t i = 0; i < r->nlines; i++) {
        const mt_report_line *l = &r->lines[i];
        if (!l->file || file_slot[l->file] == MT_NONE)
            continue;
        fprintf(fp, "%s[%u,%u,%" PRIu64 ",%" PRIu64 ",%.0f,%.0f,%d]", first ? "" : ",",
                file_slot[l->file], l->line, l->executions, l->memops, l->predicted, l->overhead,
                l->object == MT_NONE ? -1 : (int)l->object);
        first = false;
    }
    fputc(']', fp);
}

/* The procedures of objects without source lines, instruction by
 * instruction: {"procedure", "entry", "insns": [[address, text,
 * executions, reads, writes, memops, overhead, object], ...]}. */
static void write_disassembly(FILE *fp, const mt_report *r)
{
    fputs(",\"disasm\":[", fp);
    for (size_t k = 0; k < r->ninsns; k++) {
        const mt_report_insn *in = &r->insns[k];
        bool first = k == 0 || r->insns[k - 1].proc != in->proc;
        if (first) {
            const mt_procedure *p = &r->prog->procs[in->proc];
            fputs(k ? "]},{\"procedure\":" : "{\"procedure\":", fp);
            mt_report_json_text(fp, p->name);
            fprintf(fp, ",\"entry\":\"0x%" PRIx64 "\",\"insns\":[", p->entry);
        }
        fprintf(fp, "%s[\"0x%" PRIx64 "\",", first ? "" : ",", in->insn.address);
        mt_report_json_text(fp, in->insn.text);
        fprintf(fp, ",%" PRIu64 ",%u,%u,%" PRIu64 ",%.0f,%d]", in->executions, in->insn.reads,
                in->insn.writes, in->memops, in->overhead,
                in->object == MT_NONE ? -1 : (int)in->object);
    }
    fputs(r->ninsns ? "]}]" : "]", fp);
}

char *mt_report_stored_name(const mt_store_object_row *o)
{
    return o->loop_path ? mt_xasprintf("%s/%s", o->procedure, o->loop_path)
                        : mt_xstrdup(o->procedure);
}

void mt_report_write_stored_object(FILE *fp, const mt_store_object_row *o)
{
    char *name = mt_report_stored_name(o);
    char *place = o->data_kind ? mt_xstrdup(o->data_kind)
                  : o->file    ? mt_xasprintf("%s:%u", o->file, o->line)
                               : mt_xasprintf("0x%" PRIx64, o->address);
    fputs("{\"name\":", fp);
    mt_report_json_text(fp, name);
    fprintf(fp, ",\"kind\":\"%s\",\"place\":", o->data_kind ? "data" : o->is_region ? "region"
                                                     : o->is_loop ? "loop" : "procedure");
    mt_report_json_text(fp, place);
    free(name);
    free(place);
}

static const char *metric_key(mt_store_metric m)
{
    switch (m.kind) {
    case MT_METRIC_OVERHEAD: return "overhead";
    case MT_METRIC_MEASURED: return "measured";
    case MT_METRIC_SIM_MISSES: return "ll_misses";
    default: return "memops";
    }
}

/* Per object, per run: [run, measured, predicted, overhead, memops,
 * ll_misses, then the processors' figures in store.h's order (true_sharing
 * ... three_hop_refs), page_walks, itlb_misses], null where the run has no
 * such figure. */
static void write_trends(FILE *fp, const mt_report_history *h)
{
    fputs(",\"trend\":[", fp);
    for (size_t i = 0; i < h->nobjects; i++) {
        fputs(i ? ",[" : "[", fp);
        for (size_t k = 0; k < h->ntrend[i]; k++) {
            const mt_report_point *p = &h->trend[i][k];
            const double cycles[] = {p->measured, p->predicted, p->overhead};
            fprintf(fp, "%s[%" PRId64, k ? "," : "", p->run);
            for (size_t f = 0; f < MT_ARRAY_LEN(cycles); f++) {
                fputc(',', fp);
                mt_json_number(fp, cycles[f]);
            }
            fputc(',', fp);
            mt_report_json_count(fp, p->memops);
            fputc(',', fp);
            mt_report_json_count(fp, p->ll_misses);
            for (unsigned f = 0; f < MT_STORE_NMP; f++) {
                fputc(',', fp);
                mt_report_json_count(fp, p->mp[f]);
            }
            fputc(',', fp);
            mt_report_json_count(fp, p->page_walks);
            fputc(',', fp);
            mt_report_json_count(fp, p->itlb_misses);
            fputc(']', fp);
        }
        fputc(']', fp);
    }
    fputc(']', fp);
}

/* Pairs (changed or not), then the objects only one run executed. */
static void write_diff(FILE *fp, const mt_report_history *h)
{
    const mt_store_diff *d = &h->diff;
    fputs(",\"diff\":[", fp);
    for (size_t k = 0; k < h->ncompared; k++) {
        const mt_store_compared *c = &h->compared[k];
        fputs(k ? "," : "", fp);
        mt_report_write_stored_object(fp, &d->b[c->row]);
        mt_report_json_key_number(fp, "before", c->before);
        mt_report_json_key_number(fp, "after", c->after);
        mt_report_json_key_number(fp, "change", c->change); /* null: from zero */
        mt_report_json_key_number(fp, "share", c->share);
        fprintf(fp, ",\"regressed\":%s,\"improved\":%s}", h->regressed[k] ? "true" : "false",
                c->worse < -MT_STORE_REGRESSION_PCT ? "true" : "false");
    }
    fputs("],\"new\":[", fp);
    bool first = true;
    for (size_t j = 0; j < d->nb; j++)
        if (d->b_to_a[j] == MT_NONE) {
            fputs(first ? "" : ",", fp);
            mt_report_write_stored_object(fp, &d->b[j]);
            fputc('}', fp);
            first = false;
        }
    fputs("],\"gone\":[", fp);
    first = true;
    for (size_t i = 0; i < d->na; i++)
        if (!d->a_paired[i]) {
            fputs(first ? "" : ",", fp);
            mt_report_write_stored_object(fp, &d->a[i]);
            fputc('}', fp);
            first = false;
        }
    fputc(']', fp);
}

/* The history view's figures (report/history.c): {"run": 0, "why"} when
 * the run is not in the history. */
static void write_history(FILE *fp, const mt_report_history *h)
{
    fprintf(fp, ",\"history\":{\"run\":%" PRId64, h->run);
    if (!h->run) {
        fputs(",\"why\":", fp);
        mt_report_json_text(fp, h->why ? h->why : "no history was read");
        fputc('}', fp);
        return;
    }
    fprintf(fp, ",\"baseline\":%" PRId64, h->baseline);
    write_trends(fp, h);
    if (h->baseline) {
        fprintf(fp, ",\"metric\":\"%s\",\"threshold\":%g,\"min_share\":%g",
                metric_key(h->metric), MT_STORE_REGRESSION_PCT, MT_STORE_MIN_SHARE_PCT);
        write_diff(fp, h);
    }
    mt_report_write_processors(fp, h);
    fputc('}', fp);
}

/* The figures of the page read from a run directory (binary ... disasm). */
static void write_rundir(FILE *fp, const mt_report *r)
{
    uint32_t nshown;
    uint32_t *file_slot = shown_files(r, &nshown);
    write_program(fp, r);
    write_objects(fp, r, file_slot);
    write_files(fp, r, file_slot, nshown);
    write_disassembly(fp, r);
    mt_report_write_job(fp, r->job_launcher, &r->job, NULL);
    fputs(",\"stored\":null", fp);
    free(file_slot);
}

/* The page's fixed elements, which the script fills. */
static const char page_body[] =
    "<h1>mtool report</h1><div class=\"sub\" id=\"binary\"></div>\n"
    "<p id=\"stored-note\" class=\"warn\" hidden></p>\n"
    "<h2>Overview: predicted, measured and overhead time (MTOOL figure 2)</h2>\n"
    "<div id=\"overview\"></div>\n"
    "<h2>M-objects: predicted time and overhead</h2>\n"
    "<div class=\"legend\"><span class=\"pred\"></span>predicted<span class=\"over\"></span>"
    "overhead (measured &minus; predicted)</div>\n"
    "<svg id=\"histogram\" role=\"img\" aria-label=\"m-objects\"></svg>\n"
    "<div class=\"toolbar\"><button id=\"objects-csv\">Download CSV</button></div>\n"
    "<table class=\"objects\" id=\"objects-table\"></table>\n"
    "<h2>Call tree of measured time (flame graph)</h2>\n"
    "<div class=\"legend\">width: measured time, the program at the bottom, each timed object "
    "on the one holding it; colour: overhead share of its measured time, "
    "<span class=\"swatch\" style=\"background:hsl(48,85%,72%)\"></span>none to "
    "<span class=\"swatch\" style=\"background:hsl(0,85%,52%)\"></span>all, "
    "<span class=\"swatch\" style=\"background:hsl(210,30%,78%)\"></span>over-predicted</div>\n"
    "<svg id=\"flame\" role=\"img\" aria-label=\"call tree\"></svg>\n"
    "<div id=\"flame-info\" class=\"panel\">Click a frame for its figures.</div>\n"
    "<h2 id=\"source\">Source</h2>\n"
    "<div class=\"toolbar\"><select id=\"file-select\"></select>"
    "<button id=\"prev\">&#9664; PREV</button><button id=\"next\">NEXT &#9654;</button>"
    "<span id=\"position\">bottlenecks by overhead: NEXT starts at the largest</span></div>\n"
    "<div id=\"source-view\"><div id=\"code\"></div><div id=\"info\"></div></div>\n"
    "<section id=\"mpi\" hidden><h2>MPI job: each rank's time per m-object</h2>\n"
    "<p id=\"mpi-note\"></p>\n"
    "<div class=\"legend\"><span class=\"pred\"></span>predicted<span class=\"over\"></span>"
    "overhead (measured &minus; predicted), per rank; imbalance: the most measured over the "
    "ranks' mean</div>\n<div id=\"mpi-objects\"></div></section>\n"
    "<h2 id=\"history-head\">History: this run among the runs of its program</h2>\n"
    "<p id=\"history-note\"></p>\n"
    "<section id=\"history\" hidden>\n"
    "<h3>Trend per m-object over the runs up to this one</h3>\n"
    "<div class=\"legend\"><span class=\"meas\"></span>measured<span class=\"pred\"></span>"
    "predicted<span class=\"over\"></span>overhead (core cycles, timed runs)"
    "<span class=\"memops\"></span>memory operations (counted runs)<span class=\"misses\">"
    "</span>last-level misses (simulated runs); this run ringed</div>\n"
    "<div id=\"trends\"></div>\n"
    "<h3>Diff against the baseline run</h3><p id=\"diff-note\"></p>\n"
    "<div class=\"toolbar\"><button id=\"diff-csv\">Download CSV</button></div>\n"
    "<table class=\"objects\" id=\"diff-table\"></table>\n"
    "<div id=\"mp-history\" hidden><h3>Processors: coherence and NUMA figures per object, "
    "this run</h3><table class=\"objects\" id=\"mp-table\"></table>\n"
    "<h3>Processors: against the baseline run</h3><p id=\"mp-diff-note\"></p>"
    "<table class=\"objects\" id=\"mp-diff-table\"></table>\n"
    "<h3>Processors: per thread</h3><table class=\"objects\" id=\"mp-thread-table\"></table>\n"
    "<div id=\"mp-whatif\" hidden></div></div></section>\n"
    "<h2 id=\"simulation-head\">Simulation: misses, their causes and the stall they cost</h2>\n"
    "<p id=\"no-simulation\">No simulation in this run directory: <code>mtool sim RUNDIR</code> "
    "traces the timed objects through the cache simulator, keeps its result in the run "
    "directory and makes this page again with it.</p>\n"
    "<section id=\"simulation\" hidden><div id=\"sim-summary\"></div>\n"
    "<h3>Simulated stall beside pass 2's measured overhead, per m-object</h3>\n"
    "<table class=\"objects\" id=\"stall-table\"></table><p id=\"agreement\"></p>\n"
    "<h3>Miss causes per code object</h3>\n"
    "<div class=\"legend\"><span class=\"cold\"></span>cold<span class=\"capacity\"></span>"
    "capacity<span class=\"conflict\"></span>conflict (Hill's 3C)</div>\n"
    "<svg id=\"miss-causes\" role=\"img\" aria-label=\"miss causes\"></svg>\n"
    "<h3>Code &times; data: share of the simulated stall</h3><p id=\"heat-note\"></p>\n"
    "<div class=\"heat\"><svg id=\"heatmap\" role=\"img\" aria-label=\"code x data\"></svg>"
    "<div id=\"heat-info\" class=\"panel\"></div></div>\n"
    "<h3>Line use per object: bytes used before a line left, reuses while it stayed</h3>\n"
    "<table class=\"objects\" id=\"use-table\"></table>\n"
    "<div id=\"coherence\" hidden><h3>Coherence misses per object</h3><p id=\"coherence-note\">"
    "</p><div class=\"legend\"><span class=\"true-sharing\"></span>true sharing"
    "<span class=\"false-sharing\"></span>false sharing</div>\n"
    "<table class=\"objects\" id=\"coherence-table\"></table>\n"
    "<h3>Per CPU</h3><table class=\"objects\" id=\"cpu-table\"></table>\n"
    "<h3>Per thread</h3><table class=\"objects\" id=\"thread-table\"></table></div>\n"
    "<div id=\"whatif\" hidden></div></section>\n";

void mt_report_write_html(FILE *fp, const mt_report *r)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
          "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
          "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n"
          "<title>mtool report: ", fp);
    html_text(fp, r->stored ? r->stored->run->path : r->pass1->binary);
    fprintf(fp, "</title>\n<style>\n%s</style></head>\n<body>\n%s"
                "<script type=\"application/json\" id=\"mtool-data\">{", mt_report_page_css,
            page_body);
    if (r->stored)
        mt_report_write_stored(fp, r);
    else
        write_rundir(fp, r);
    fputs(",\"version\":\"" MTOOL_VERSION "\"", fp);
    write_history(fp, &r->history);
    fprintf(fp, ",\"stall_thresholds\":{\"model_error_pct\":%g,\"memory_bound_pct\":%g}",
            MT_STALL_MODEL_ERROR_PCT, MT_STALL_MEMORY_BOUND_PCT);
    fputs(",\"sim\":", fp); /* checked JSON (run/rundir.c's reader) */
    if (r->sim_json)
        json_embedded(fp, r->sim_json, strlen(r->sim_json));
    else
        fputs("null", fp);
    fprintf(fp, "}</script>\n<script>\n%s</script>\n</body></html>\n", mt_report_page_js);
}
