/* report/job.c — an MPI job's figures per rank as JSON, one format for
 * report.json's "mpi" (ui/time_ranks.c, from the job's pass 2) and the
 * HTML page's (from mpi/pass2.tsv, which holds the same figures): docs/
 * REPORT.md, report.json's `mpi`.  Cycles are core cycles; strings are
 * written as the page embeds them (\u003c for `<`...), valid JSON anywhere.
 * Objects in the job's order (pass2.tsv's, largest overhead first), each
 * with its ranks in the job's rank order. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void mt_report_json_launcher(FILE *fp, char **argv)
{
    fputs("\"launcher\":", fp);
    mt_report_json_text(fp, argv[0]);
    fputs(",\"launcher_arguments\":[", fp);
    for (int i = 1; argv[i]; i++) {
        if (i > 1)
            fputc(',', fp);
        mt_report_json_text(fp, argv[i]);
    }
    fputc(']', fp);
}

static void write_ranks(FILE *fp, const mt_job_pass2 *job)
{
    fputs(",\"ranks\":[", fp);
    for (size_t k = 0; k < job->nranks; k++) {
        fprintf(fp, "%s{\"rank\":%d,\"host\":", k ? "," : "", job->ranks[k].rank);
        mt_report_json_text(fp, job->ranks[k].host);
        fputc('}', fp);
    }
    fputc(']', fp);
}

static void write_rank_figures(FILE *fp, const mt_job_figures *f)
{
    fprintf(fp, "{\"rank\":%d,\"entries\":%" PRIu64, f->rank, f->entries);
    mt_report_json_key_number(fp, "measured_cycles", f->measured);
    mt_report_json_key_number(fp, "predicted_cycles", f->predicted);
    mt_report_json_key_number(fp, "overhead_cycles", f->measured - f->predicted);
    fprintf(fp, ",\"memory_ops\":%" PRIu64 "}", f->memops);
}

/* One object: its figures are job->figures[first .. first + n); named
 * `name`, else LIBRARY:SPEC (a library's) or SPEC. */
static void write_object(FILE *fp, const mt_job_figures *f, size_t n, const char *name)
{
    double *measured = mt_xcalloc(n + 1, sizeof *measured);
    for (size_t k = 0; k < n; k++)
        measured[k] = f[k].measured;
    mt_imbalance im = mt_imbalance_of(measured, (uint32_t)n);
    free(measured);
    char *own = f->library ? mt_xasprintf("%s:%s", f->library, f->spec) : NULL;
    fputs("{\"name\":", fp);
    mt_report_json_text(fp, name ? name : own ? own : f->spec);
    free(own);
    fputs(",\"library\":", fp);
    mt_report_json_text(fp, f->library);
    fputs(",\"time_spec\":", fp);
    mt_report_json_text(fp, f->spec);
    mt_report_json_key_number(fp, "imbalance", im.imbalance);
    fprintf(fp, ",\"slowest_rank\":%d,\"per_rank\":[", f[im.max_rank].rank);
    for (size_t k = 0; k < n; k++) {
        fputs(k ? "," : "", fp);
        write_rank_figures(fp, &f[k]);
    }
    fputs("]}", fp);
}

/* Two figures of one object (an object's are consecutive, one per rank). */
static bool same_object(const mt_job_figures *a, const mt_job_figures *b)
{
    return !strcmp(a->spec, b->spec) && !a->library == !b->library &&
           (!a->library || !strcmp(a->library, b->library));
}

void mt_report_write_job(FILE *fp, char **launcher, const mt_job_pass2 *job,
                         const char *const *names)
{
    fputs(",\"mpi\":", fp);
    if (!job->nranks) {
        fputs("null", fp);
        return;
    }
    fputc('{', fp);
    if (launcher)
        mt_report_json_launcher(fp, launcher);
    else
        fputs("\"launcher\":null,\"launcher_arguments\":null", fp);
    write_ranks(fp, job);
    fputs(",\"objects\":[", fp);
    size_t object = 0;
    for (size_t i = 0; i < job->nfigures; object++) {
        size_t n = 1;
        while (i + n < job->nfigures && same_object(&job->figures[i + n], &job->figures[i]))
            n++;
        fputs(object ? "," : "", fp);
        write_object(fp, &job->figures[i], n, names ? names[object] : NULL);
        i += n;
    }
    fputs("]}", fp);
}
