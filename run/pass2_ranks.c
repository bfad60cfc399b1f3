/* run/pass2_ranks.c — pass 2 of an MPI job (docs/REPORT.md, "MPI jobs"):
 * each timed run is the launcher running the timed copy in every rank
 * through the `_rank` wrapper (mpi.c), and besides the job's figures (every
 * rank's timers merged, as any program's) each rank gets its own: the
 * job's timed objects predicted with that rank's pass-1 counts
 * (mpi/rank-N.counts.tsv, a library's objects with the rank's counts of
 * that library, mpi/rank-N.LIB.counts.tsv) and measured by that rank's
 * timers alone.  Conventions: ranks in rank order, objects in the timed
 * list's order; a rank's object that its own selection does not hold (it
 * executed none of it, or its regions were cut elsewhere) is predicted NAN. */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int rn_job_run_timed(mt_mpi_job *job, const char *timed_copy, const char *profiles,
                     char *const *env, const mt_counter_map *map, FILE *log, mt_run_result *run,
                     mt_error *err)
{
    char **argv;
    if (mt_mpi_clear(profiles, err) != 0 ||
        !(argv = mt_mpi_wrapped_argv(job, timed_copy, profiles, env, err)) ||
        mt_run_program_env(job->launcher, argv, profiles, NULL, run, err) != 0 ||
        mt_mpi_collect_step(profiles, err) != 0)
        return -1;
    return mt_mpi_collect(job, profiles, map, log, err);
}

static bool same_object(const mt_candidate *a, const mt_candidate *b)
{
    return a->prog == b->prog && a->proc == b->proc && a->loop == b->loop && a->region.n == b->region.n &&
           (a->region.n == 0 ||
            (a->region.first == b->region.first && a->region.end == b->region.end));
}

/* The job's timed objects, each predicted as this rank's counts predict it
 * (own: the rank's selection of each object, nown of them). */
static mt_candidate *rank_candidates(const mt_selection *job_sel, const mt_selection *own,
                                     size_t nown)
{
    mt_candidate *cands = mt_xcalloc(job_sel->ntimed + 1, sizeof *cands);
    for (size_t i = 0; i < job_sel->ntimed; i++) {
        cands[i] = job_sel->cands[i];
        cands[i].predicted = NAN;
        bool found = false;
        for (size_t k = 0; k < nown && !found; k++)
            for (size_t j = 0; j < own[k].ncands && !found; j++)
                if ((found = same_object(&cands[i], &own[k].cands[j]))) {
                    cands[i].predicted = own[k].cands[j].predicted;
                    cands[i].memops = own[k].cands[j].memops;
                }
        if (isnan(cands[i].predicted))
            cands[i].memops = 0;
    }
    return cands;
}

/* Every run found the same ranks in the same order (a rank that wrote no
 * profile in one run would pair another rank's timers with its counts). */
static int check_same_ranks(const mt_mpi_job *jobs, int runs, mt_error *err)
{
    for (int k = 1; k < runs; k++) {
        bool same = jobs[k].nranks == jobs[0].nranks;
        for (uint32_t i = 0; same && i < jobs[0].nranks; i++)
            same = jobs[k].ranks[i].rank == jobs[0].ranks[i].rank;
        if (!same) {
            mt_error_set(err, "%s: timed run %d found %u ranks, run 1 %u: the job's ranks changed",
                         jobs[k].argv[0], k + 1, jobs[k].nranks, jobs[0].nranks);
            return -1;
        }
    }
    return 0;
}

/* Whether the job timed some object of library `name`. */
static bool times_library(const mt_pass2_result *r, const char *name)
{
    for (size_t i = 0; i < r->sel.ntimed; i++)
        if (r->sel.cands[i].object == name)
            return true;
    return false;
}

/* The rank's own selection of one object, with the rank's counts of it:
 * the executable's (lib NULL) on the job's costs, a library's on costs
 * predicted from the job's counts of it, as pass 2 selected the job's. */
static int rank_selection(const char *rundir, const mt_pass2_result *r, const mt_select_options *so,
                          int rank, const mt_pass1_library *lib, mt_selection *out, mt_error *err)
{
    memset(out, 0, sizeof *out);
    const mt_program *prog = lib ? lib->prog : r->prog;
    uint64_t *counts = mt_rundir_read_rank_counts(rundir, rank, lib ? lib->name : NULL, prog, err);
    if (!counts)
        return -1;
    mt_program_costs costs;
    int rc = 0;
    if (!lib)
        mt_select(r->prog, &r->costs, counts, so, out);
    else if ((rc = mt_predict_program(&r->machine, lib->prog, false, lib->counts, &costs, err)) == 0) {
        mt_select(lib->prog, &costs, counts, so, out);
        mt_program_costs_free(&costs);
    }
    free(counts);
    return rc;
}

/* out->cands: the rank's own selections of the executable and of each
 * library the job timed objects of. */
static int rank_predictions(const mt_pass2_options *o, const mt_pass2_result *r,
                            const mt_select_options *so, mt_pass2_rank *out, mt_error *err)
{
    size_t nlibs = r->libs.nlibs, n = 0;
    mt_selection *own = mt_xcalloc(nlibs + 1, sizeof *own);
    int rc = rank_selection(o->rundir, r, so, out->rank, NULL, &own[n++], err);
    for (size_t k = 0; rc == 0 && k < nlibs; k++) {
        const mt_pass1_library *lib = &r->libs.libs[k];
        if (!lib->note && times_library(r, lib->name))
            rc = rank_selection(o->rundir, r, so, out->rank, lib, &own[n++], err);
    }
    if (rc == 0)
        out->cands = rank_candidates(&r->sel, own, n);
    for (size_t k = 0; k < n; k++)
        mt_selection_free(&own[k]);
    free(own);
    return rc;
}

static int correlate_rank(const mt_pass2_options *o, const mt_pass2_result *r,
                          const mt_select_options *so, const mt_mpi_job *jobs, uint32_t i,
                          const mt_correlate_clock *clk, mt_pass2_rank *out, mt_error *err)
{
    out->rank = jobs[0].ranks[i].rank;
    out->host = jobs[0].ranks[i].host ? mt_xstrdup(jobs[0].ranks[i].host) : NULL;
    if (rank_predictions(o, r, so, out, err) != 0)
        return -1;
    mt_selection timed = {.cands = out->cands, .ncands = r->sel.ntimed, .ntimed = r->sel.ntimed};
    mt_timer_totals **runs = mt_xcalloc((size_t)o->runs, sizeof *runs);
    for (int k = 0; k < o->runs; k++)
        runs[k] = jobs[k].ranks[i].merge.timers;
    size_t nrows;
    mt_mobject_figures *rows = mt_correlate(&timed, runs, (size_t)o->runs, clk, &nrows);
    free(runs);
    /* back into the timed list's order */
    out->objects = mt_xcalloc(r->sel.ntimed + 1, sizeof *out->objects);
    for (size_t j = 0; j < nrows; j++)
        out->objects[rows[j].cand - out->cands] = rows[j];
    free(rows);
    return 0;
}

int rn_job_parts(const mt_pass2_options *o, const mt_mpi_job *jobs, mt_timer_totals ***parts,
                 size_t *nparts, mt_error *err)
{
    if (check_same_ranks(jobs, o->runs, err) != 0)
        return -1;
    size_t n = jobs[0].nranks;
    *parts = mt_xcalloc((size_t)o->runs * n + 1, sizeof **parts);
    for (int k = 0; k < o->runs; k++)
        for (size_t p = 0; p < n; p++)
            (*parts)[(size_t)k * n + p] = jobs[k].ranks[p].merge.timers;
    *nparts = n;
    return 0;
}

int rn_job_correlate_ranks(const mt_pass2_options *o, mt_pass2_result *r,
                           const mt_select_options *so, const mt_mpi_job *jobs,
                           const mt_correlate_clock *clk, mt_error *err)
{
    r->ranks = mt_xcalloc(jobs[0].nranks, sizeof *r->ranks);
    for (uint32_t i = 0; i < jobs[0].nranks; i++) {
        r->nranks++;
        if (correlate_rank(o, r, so, jobs, i, clk, &r->ranks[i], err) != 0)
            return -1;
    }
    return 0;
}

void rn_pass2_ranks_free(mt_pass2_result *r)
{
    for (uint32_t i = 0; i < r->nranks; i++) {
        free(r->ranks[i].host);
        free(r->ranks[i].cands);
        free(r->ranks[i].objects);
    }
    free(r->ranks);
    free(r->launcher_argv);
    free(r->launcher_buf);
}

void mt_job_pass2_of(const mt_pass2_result *r, mt_job_pass2 *out)
{
    memset(out, 0, sizeof *out);
    if (!r->nranks)
        return;
    out->nranks = r->nranks;
    out->ranks = mt_xcalloc(r->nranks, sizeof *out->ranks);
    for (uint32_t k = 0; k < r->nranks; k++)
        out->ranks[k] = (mt_job_rank){r->ranks[k].rank,
                                      r->ranks[k].host ? mt_xstrdup(r->ranks[k].host) : NULL};
    out->figures = mt_xcalloc(r->nrows * r->nranks + 1, sizeof *out->figures);
    for (size_t i = 0; i < r->nrows; i++) {
        const mt_candidate *c = r->rows[i].cand;
        mt_timed_object o = mt_candidate_object(c);
        char spec[1024];
        mt_timed_object_format(c->prog, &o, spec, sizeof spec);
        size_t t = (size_t)(c - r->sel.cands);
        for (uint32_t k = 0; k < r->nranks; k++)
            out->figures[out->nfigures++] = (mt_job_figures){
                .spec = mt_xstrdup(spec), .library = c->object ? mt_xstrdup(c->object) : NULL,
                .rank = r->ranks[k].rank,
                .entries = r->ranks[k].objects[t].entries,
                .predicted = r->ranks[k].cands[t].predicted,
                .measured = r->ranks[k].objects[t].measured,
                .memops = r->ranks[k].cands[t].memops};
    }
}

mt_imbalance mt_imbalance_of(const double *per_rank, uint32_t n)
{
    mt_imbalance im = {NAN, 0};
    double total = 0;
    uint32_t counted = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (isnan(per_rank[i]))
            continue;
        total += per_rank[i];
        counted++;
        if (isnan(per_rank[im.max_rank]) || per_rank[i] > per_rank[im.max_rank])
            im.max_rank = i;
    }
    if (total > 0)
        im.imbalance = per_rank[im.max_rank] * counted / total;
    return im;
}
