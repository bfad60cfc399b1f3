/* ui/time_ranks.c — MPI jobs in `mtool time` and `mtool run` (docs/REPORT.md,
 * "MPI jobs"): per m-object, each rank's measured, predicted and overhead
 * (core cycles, run/pass2_ranks.c) and the load imbalance of measured time
 * (max / mean over the ranks, and the slowest rank), in the text report and
 * report.json's "mpi" (written by report/job.c, as the page's).  Objects in
 * the job's order (largest overhead first). */
#define _GNU_SOURCE
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../report/report.h"
#include "ui.h"

/* Each rank's measured time of the job's row `row` (its timed index). */
static double *measured_per_rank(const mt_pass2_result *rp, size_t timed)
{
    double *v = mt_xcalloc(rp->nranks + 1, sizeof *v);
    for (uint32_t k = 0; k < rp->nranks; k++)
        v[k] = rp->ranks[k].objects[timed].measured;
    return v;
}

static mt_imbalance object_imbalance(const mt_pass2_result *rp, size_t timed)
{
    double *v = measured_per_rank(rp, timed);
    mt_imbalance im = mt_imbalance_of(v, rp->nranks);
    free(v);
    return im;
}

static size_t timed_index(const mt_pass2_result *rp, const mt_mobject_figures *row)
{
    return (size_t)(row->cand - rp->sel.cands);
}

void mt_time_print_ranks(FILE *fp, const mt_pass2_result *rp)
{
    if (!rp->nranks)
        return;
    char *launcher = mt_ui_escape(rp->launcher_argv[0]);
    fprintf(fp, "\nMPI job (%s): %u rank%s; per m-object, each rank's figures (core cycles; "
                "imbalance: max / mean of measured over ranks):\n",
            launcher, rp->nranks, rp->nranks == 1 ? "" : "s");
    free(launcher);
    for (size_t i = 0; i < rp->nrows; i++) {
        size_t t = timed_index(rp, &rp->rows[i]);
        mt_imbalance im = object_imbalance(rp, t);
        char raw[512];
        mt_time_object_name(rp->rows[i].cand, raw, sizeof raw);
        char *name = mt_ui_escape(raw);
        mt_time_source_range(rp->rows[i].cand, raw, sizeof raw);
        char *src = mt_ui_escape(raw);
        int column = fprintf(fp, "  imbalance %5.2fx, slowest rank %d:  ", im.imbalance,
                             rp->ranks[im.max_rank].rank);
        char *last = mt_xasprintf("%s, %s", name, src);
        mt_ui_last_column(fp, column > 0 ? (size_t)column : 0, last);
        fprintf(fp, "    %6s %10s %13s %13s %9s  %s\n", "rank", "entries", "measured",
                "predicted", "overhead", "host");
        for (uint32_t k = 0; k < rp->nranks; k++) {
            const mt_pass2_rank *r = &rp->ranks[k];
            const mt_mobject_figures *f = &r->objects[t];
            char *host = mt_ui_escape(r->host ? r->host : "?");
            double over = 100 * f->overhead / r->cands[t].predicted;
            fprintf(fp, "    %6d %10" PRIu64 " %13.4g %13.4g %+8.1f%%  %s\n", r->rank, f->entries,
                    f->measured, r->cands[t].predicted, over, host);
            free(host);
        }
        free(last);
        free(name);
        free(src);
    }
}

/* report.json's "mpi": report/job.c's format, the page's too, from the
 * figures mpi/pass2.tsv keeps; the objects named as report.json's objects[]. */
void mt_time_json_ranks(FILE *fp, const mt_pass2_result *rp)
{
    mt_job_pass2 job;
    mt_job_pass2_of(rp, &job);
    char **names = mt_xcalloc(rp->nrows + 1, sizeof *names);
    for (size_t i = 0; i < rp->nrows; i++) {
        char name[512];
        mt_time_object_name(rp->rows[i].cand, name, sizeof name);
        names[i] = mt_xstrdup(name);
    }
    mt_report_write_job(fp, rp->launcher_argv, &job, (const char *const *)names);
    for (size_t i = 0; i < rp->nrows; i++)
        free(names[i]);
    free(names);
    mt_job_pass2_free(&job);
}

void mt_time_history_ranks(mt_history *h, const mt_pass2_result *rp, const mt_mobject_figures *row)
{
    size_t t = timed_index(rp, row);
    for (uint32_t k = 0; k < rp->nranks; k++) {
        const mt_pass2_rank *r = &rp->ranks[k];
        mt_history_add_rank_figures(h, r->rank, r->objects[t].entries, r->cands[t].memops,
                                    r->objects[t].measured, r->cands[t].predicted);
    }
}
