/* report/stored.c — the page of a run built from the history alone
 * (`mtool report RUN` when the run's directory is gone, holds a later run,
 * or was never recorded): what the history holds per object stands in for
 * the run directory's figures.
 *
 * Conventions: cycles are core cycles; a figure the run does not have is
 * null on the page (a counted run stores no cycles, a simulated run no
 * cycles and no memory operations but references and misses per level).
 * There are no figures per source line: each object's go to the line of
 * its header (entry or loop header, as the history recorded it), the first
 * shown object on a line keeping it.  Source text is read now, through the
 * file names the history recorded (the binary's DWARF paths). */
#define _GNU_SOURCE
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static bool is_timed(const mt_store_run_row *run)
{
    return !strcmp(run->tool, "time") || !strcmp(run->tool, "run");
}

/* The objects a page shows: a timed run's timed objects (those with
 * measured cycles), another run's code objects. */
static bool shown(const mt_store_run_row *run, const mt_store_object_row *o)
{
    return !o->data_kind && (!is_timed(run) || !isnan(o->measured_cycles));
}

static int by_overhead(const void *a, const void *b)
{
    const mt_store_object_row *x = a, *y = b;
    return x->overhead_cycles == y->overhead_cycles ? 0
           : x->overhead_cycles > y->overhead_cycles ? -1 : 1;
}

/* The shown objects first, in the history's order (memory operations, a
 * simulated run's references), a timed run's by overhead; how many. */
static size_t put_shown_first(const mt_store_run_row *run, mt_store_object_row *rows, size_t n)
{
    size_t nshown = 0;
    for (size_t i = 0; i < n; i++)
        if (shown(run, &rows[i])) {
            mt_store_object_row o = rows[i];
            memmove(rows + nshown + 1, rows + nshown, (i - nshown) * sizeof *rows);
            rows[nshown++] = o;
        }
    if (is_timed(run))
        qsort(rows, nshown, sizeof *rows, by_overhead);
    return nshown;
}

/* What a page from the history lacks, for the run's kind. */
static char *lacks(const mt_store_run_row *run, size_t nshown)
{
    const char *kind = is_timed(run) ? ""
                       : run->sim_machine ? "; no cycles or memory operations (a simulated "
                                            "run's are references and misses: last-level "
                                            "misses shown)"
                                          : "; no cycles (a counted run measures none)";
    char *capped = nshown > MT_REPORT_MAX_STORED
                       ? mt_xasprintf("; the first %d of %zu objects", MT_REPORT_MAX_STORED, nshown)
                       : mt_xstrdup("");
    char *text = mt_xasprintf("no figures per source line (each object's at its first line), "
                              "no call tree, no simulation views, no cost-model check%s%s", kind,
                              capped);
    free(capped);
    return text;
}

int mt_report_load_stored(mt_store *s, mt_store_run_row *row, const char *why, mt_report *r,
                          mt_error *err)
{
    mt_report_stored *st = r->stored = mt_xcalloc(1, sizeof *st);
    st->run = row;
    if (mt_store_run_objects(s, row->id, &st->objects, &st->nrows, err) != 0)
        return -1;
    size_t nshown = put_shown_first(row, st->objects, st->nrows);
    st->nobjects = nshown < MT_REPORT_MAX_STORED ? nshown : MT_REPORT_MAX_STORED;
    char *what = lacks(row, nshown);
    st->missing = mt_xasprintf("%s: the page is built from the history alone: %s", why, what);
    free(what);
    return 0;
}

void mt_report_stored_free(mt_report_stored *st)
{
    if (!st)
        return;
    mt_store_run_rows_free(st->run, 1);
    mt_store_object_rows_free(st->objects, st->nrows);
    free(st->missing);
    free(st);
}

static double count_or_nan(uint64_t v) { return v == MT_STORE_NO_COUNT ? NAN : (double)v; }

/* The program's figures: a timed run's as pass 2 stored them. */
static void write_program(FILE *fp, const mt_store_run_row *run)
{
    const mt_store_program_time *t = &run->program_time;
    double none = NAN, overhead = run->timed ? t->measured - t->predicted : none;
    fputs(",\"program\":{\"predicted\":", fp);
    mt_json_number(fp, run->timed ? t->predicted : none);
    mt_report_json_key_count(fp, "memops", run->sim_machine ? none : (double)run->memory_ops);
    mt_report_json_key_count(fp, "memops_in_objects",
                             run->timed ? (double)t->memory_ops_in_objects : none);
    mt_report_json_key_number(fp, "measured", run->timed ? t->measured : none);
    mt_report_json_key_number(fp, "overhead", overhead);
    mt_report_json_key_number(fp, "objects_overhead", run->timed ? t->objects_overhead : none);
    mt_report_json_key_number(fp, "unexplained", run->timed ? overhead - t->objects_overhead : none);
    fputs("},\"check\":{\"kernels\":0,\"profile\":\"not in the history\"}", fp);
}

/* The files the shown objects' headers are in: files[k]'s name, file_of[i]
 * object i's index among them (-1: none). */
static size_t shown_files(const mt_report_stored *st, const char **files, int *file_of)
{
    size_t n = 0;
    for (size_t i = 0; i < st->nobjects; i++) {
        const mt_store_object_row *o = &st->objects[i];
        file_of[i] = -1;
        if (!o->file || !o->line)
            continue;
        size_t k = 0;
        while (k < n && strcmp(files[k], o->file) != 0)
            k++;
        if (k == n)
            files[n++] = o->file;
        file_of[i] = (int)k;
    }
    return n;
}

static void write_objects(FILE *fp, const mt_report_stored *st, const int *file_of)
{
    fputs(",\"objects\":[", fp);
    for (size_t i = 0; i < st->nobjects; i++) {
        const mt_store_object_row *o = &st->objects[i];
        char *name = mt_report_stored_name(o);
        double memops = count_or_nan(o->memory_ops);
        fputs(i ? ",{\"spec\":" : "{\"spec\":", fp);
        mt_report_json_text(fp, name);
        fputs(",\"procedure\":", fp);
        mt_report_json_text(fp, o->procedure);
        fprintf(fp, ",\"kind\":\"%s\",\"address\":\"0x%" PRIx64 "\"",
                o->is_region ? "region" : o->is_loop ? "loop" : "procedure", o->address);
        mt_report_json_key_count(fp, "memops", memops);
        fputs(",\"memops_own\":null,\"memops_in_loops\":null,\"loops\":null,\"calls\":null,"
              "\"outermost\":true,\"parent\":-1", fp);
        mt_report_json_key_count(fp, "entries", count_or_nan(o->entries));
        mt_report_json_key_number(fp, "predicted", o->predicted_cycles);
        mt_report_json_key_number(fp, "measured", o->measured_cycles);
        mt_report_json_key_number(fp, "overhead", o->overhead_cycles);
        mt_report_json_key_number(fp, "extra", memops > 0 ? o->overhead_cycles / memops : NAN);
        mt_report_json_key_count(fp, "ll_misses", mt_store_sim_misses(o, MT_STORE_SIM_LL, -1));
        for (unsigned k = 0; k < MT_STORE_NTLB; k++) /* tlb1_misses ... itlb_misses */
            mt_report_json_key_count(fp, mt_store_tlb_name(k),
                                     mt_store_metric_value(o, (mt_store_metric){MT_METRIC_SIM_TLB,
                                                                                 k, -1}));
        mt_report_json_key_number(fp, mt_store_tlb_name(MT_STORE_WALK_CYCLES),
                                  mt_store_metric_value(o, (mt_store_metric){
                                                               MT_METRIC_SIM_TLB,
                                                               MT_STORE_WALK_CYCLES, -1}));
        fprintf(fp, ",\"file\":%d,\"first\":%u,\"last\":%u,\"hot\":%u,\"disasm\":-1}", file_of[i],
                o->line, o->line, o->line);
        free(name);
    }
    fputc(']', fp);
}

static double or_zero(double v) { return isnan(v) ? 0 : v; }

/* The files' text and each object's figures at its header line:
 * [file, line, executions, memops, predicted, overhead, object]. */
static void write_files(FILE *fp, const mt_report_stored *st, const char **files, size_t nfiles,
                        const int *file_of)
{
    fputs(",\"files\":[", fp);
    for (size_t k = 0; k < nfiles; k++) {
        fputs(k ? ",{\"name\":" : "{\"name\":", fp);
        mt_report_json_text(fp, files[k]);
        mt_report_write_source(fp, files[k]);
        fputc('}', fp);
    }
    fputs("],\"lines\":[", fp);
    bool first = true;
    for (size_t i = 0; i < st->nobjects; i++) {
        const mt_store_object_row *o = &st->objects[i];
        bool taken = false;
        for (size_t j = 0; j < i && !taken; j++)
            taken = file_of[j] == file_of[i] && st->objects[j].line == o->line;
        if (file_of[i] < 0 || taken)
            continue;
        fprintf(fp, "%s[%d,%u,%.0f,%.0f,%.0f,%.0f,%zu]", first ? "" : ",", file_of[i], o->line,
                or_zero(count_or_nan(o->entries)), or_zero(count_or_nan(o->memory_ops)),
                or_zero(o->predicted_cycles), fmax(or_zero(o->overhead_cycles), 0), i);
        first = false;
    }
    fputc(']', fp);
}

void mt_report_write_stored(FILE *fp, const mt_report *r)
{
    const mt_report_stored *st = r->stored;
    const mt_store_run_row *run = st->run;
    fputs("\"binary\":", fp);
    mt_report_json_text(fp, run->path);
    fputs(",\"argv\":[", fp);
    mt_report_json_text(fp, run->command_line);
    fputc(']', fp);
    write_program(fp, run);
    const char **files = mt_xcalloc(st->nobjects + 1, sizeof *files);
    int *file_of = mt_xcalloc(st->nobjects + 1, sizeof *file_of);
    size_t nfiles = shown_files(st, files, file_of);
    write_objects(fp, st, file_of);
    write_files(fp, st, files, nfiles, file_of);
    fprintf(fp, ",\"disasm\":[],\"stored\":{\"run\":%" PRId64 ",\"tool\":", run->id);
    mt_report_json_text(fp, run->tool);
    fputs(",\"rundir\":", fp);
    if (run->rundir)
        mt_report_json_text(fp, run->rundir);
    else
        fputs("null", fp);
    fputs(",\"missing\":", fp);
    mt_report_json_text(fp, st->missing);
    fputc('}', fp);
    free(files);
    free(file_of);
}
