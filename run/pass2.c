/* run/pass2.c — pass 2 on top of a pass-1 run directory: the analysis
 * refined once with what pass 1 measured, the m-objects selected
 * (correlate/), timed in a copy without counters, the copy run N times, and
 * each object's least time correlated against its prediction. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* What the timed runs share: the copy, its counter map, where it writes. */
typedef struct {
    mt_instrumented ins;
    mt_counter_map map;
    char *profiles;
    profile_merge *merges;
    mt_timer_totals **totals;
    int nmerged;
} timed_runs;

static void timed_runs_free(timed_runs *t)
{
    for (int k = 0; k < t->nmerged; k++)
        mt_profile_merge_free(&t->merges[k]);
    free(t->merges);
    free(t->totals);
    mt_counter_map_free(&t->map);
    mt_instrumented_free(&t->ins);
    free(t->profiles);
}

/* Runs the timed copy o->runs times: the program's figures are its least
 * loaded run's, the clock ratio the runs' mean, the share of time off the
 * CPU the least any run had. */
static int run_timed(const mt_pass2_options *o, mt_pass2_result *r, timed_runs *t, mt_error *err)
{
    t->merges = mt_xcalloc((size_t)o->runs, sizeof *t->merges);
    t->totals = mt_xcalloc((size_t)o->runs, sizeof *t->totals);
    double ratio_sum = 0;
    for (int k = 0; k < o->runs; k++) {
        mt_run_result one;
        if (o->log)
            fprintf(o->log, "mtool time: running the timed copy (%d of %d)\n", k + 1, o->runs);
        if (mt_clear_profiles(t->profiles, err) != 0 ||
            mt_run_program(t->ins.path, r->pass1.argv, t->profiles, &one, err) != 0 ||
            mt_profile_merge(t->profiles, &t->map, &t->merges[k], err) != 0)
            return -1;
        rn_warn_damaged_profiles(o->log, t->profiles, &t->merges[k]);
        t->nmerged++;
        t->totals[k] = t->merges[k].timers;
        ratio_sum += one.tsc_per_cycle;
        if (k == 0 || one.user + one.sys < r->run.user + r->run.sys)
            r->run = one; /* the program's figures: its least loaded run */
        /* A single-threaded program off the CPU: timers count that time too. */
        double off = t->merges[k].nthreads == 1 && one.wall > 0
                         ? 1 - (one.user + one.sys) / one.wall : 0;
        if (k == 0 || off < r->off_cpu)
            r->off_cpu = off;
    }
    r->run.tsc_per_cycle = ratio_sum / o->runs;
    return 0;
}

/* The timers' bias: as given, else the least any timed run measured. */
static int choose_bias(const mt_pass2_options *o, const timed_runs *t, double *bias,
                       mt_error *err)
{
    *bias = o->timer_bias;
    for (int k = 0; isnan(o->timer_bias) && k < o->runs; k++)
        if (isnan(*bias) || t->merges[k].timer_bias < *bias)
            *bias = t->merges[k].timer_bias;
    if (isnan(*bias) && t->map.ntimers == 0)
        *bias = 0; /* nothing timed: no bias to subtract */
    if (isnan(*bias)) {
        mt_error_set(err, "%s: the timed runs measured no timer bias (give --timer-bias)",
                     t->ins.path);
        return -1;
    }
    return 0;
}

static void summarize(mt_pass2_result *r)
{
    for (size_t i = 0; i < r->nrows; i++)
        if (r->rows[i].outermost) {
            r->objects_overhead += r->rows[i].overhead;
            r->objects_outside += r->rows[i].outside;
            r->memops_in_objects += r->rows[i].cand->memops;
        }
}

/* Selects the m-objects, times them and correlates. */
static int time_objects(const mt_pass2_options *o, mt_pass2_result *r, const uint64_t *counts,
                        mt_error *err)
{
    mt_select_options so;
    mt_select_options_init(&so);
    so.coverage = o->coverage;
    so.inner_first = o->inner_first;
    so.max_regions = o->max_regions;
    mt_select(r->prog, &r->costs, counts, &so, &r->sel);
    if (o->log)
        fprintf(o->log, "mtool time: %zu of %zu candidate m-objects timable and estimable; "
                        "instrumenting them\n", r->sel.ntimed, r->sel.ncands);
    mt_timed_object *timed = mt_xcalloc(r->sel.ntimed + 1, sizeof *timed);
    for (size_t i = 0; i < r->sel.ntimed; i++)
        timed[i] = mt_candidate_object(&r->sel.cands[i]);
    timed_runs t = {.profiles = mt_xasprintf("%s/profiles-time", o->rundir)};
    double bias = NAN;
    int rc = mt_instrument_cached(r->prog, r->pass1.binary, timed, (uint32_t)r->sel.ntimed, false, &t.ins,
                                  err) != 0 ||
                     mt_counter_map_read(t.ins.path, &t.map, err) != 0 ||
                     mt_make_dirs(t.profiles, err) != 0 || run_timed(o, r, &t, err) != 0
                 ? -1 : 0;
    if (rc == 0 && t.map.ntimers != r->sel.ntimed) {
        mt_error_set(err, "%s: %u objects timed, %zu selected: rewriter and selection disagree",
                     t.ins.path, t.map.ntimers, r->sel.ntimed);
        rc = -1;
    }
    if (rc == 0 && (rc = choose_bias(o, &t, &bias, err)) == 0) {
        mt_correlate_clock clk = {.tsc_per_cycle = r->run.tsc_per_cycle, .timer_bias_ticks = bias};
        r->rows = mt_correlate(r->prog, &r->sel, t.totals, (size_t)o->runs, &clk, &r->nrows);
        r->timer_bias = bias;
    }
    timed_runs_free(&t);
    free(timed);
    return rc;
}

int mt_run_pass2(const mt_pass2_options *o, mt_pass2_result *r, mt_error *err)
{
    memset(r, 0, sizeof *r);
    r->runs = o->runs;
    r->inner_first = o->inner_first;
    r->bias_given = !isnan(o->timer_bias);
    r->program_measured = -1;
    uint64_t *counts = NULL;
    bool calibrated;
    mt_analyze_options opt;
    mt_analyze_options_init(&opt);
    int rc = mt_mpi_check_not_job(o->rundir, err) != 0 ||
                     mt_rundir_read_pass1(o->rundir, &r->pass1, err) != 0 ||
                     mt_rundir_check_binary(&r->pass1, err) != 0 ||
                     !(r->prog = mt_analyze(r->pass1.binary, &opt, err)) ||
                     /* every file of the run directory read before a
                      * calibration can take seconds: bad input fails first */
                     mt_rundir_refine(o->rundir, r->prog, &counts, err) != 0 ||
                     mt_run_load_machine(&r->machine, &calibrated, o->log, err) != 0 ||
                     mt_predict_program(&r->machine, r->prog, false, &r->costs, err) != 0 ||
                     time_objects(o, r, counts, err) != 0
                 ? -1 : 0;
    free(counts);
    if (rc != 0)
        return -1;
    r->program_predicted = r->sel.predicted_total;
    r->tsc_per_cycle = r->run.tsc_per_cycle;
    r->tsc_hz = r->machine.tsc_hz;
    /* The program's measured time on the timers' own basis: this run
     * (timers only, close to the program's speed), user and system time,
     * as timers count the kernel's work inside an object too (page faults). */
    r->program_measured = (r->run.user + r->run.sys) * r->machine.tsc_hz / r->run.tsc_per_cycle;
    r->measured_from = "user + system time of the timed run";
    summarize(r);
    return mt_rundir_write_pass2(o->rundir, r, err) != 0 ||
                   mt_rundir_write_machine(o->rundir, &r->machine, err) != 0
               ? -1 : 0;
}

void mt_pass2_result_free(mt_pass2_result *r)
{
    free(r->rows);
    mt_selection_free(&r->sel);
    mt_program_costs_free(&r->costs);
    mt_program_free(r->prog);
    mt_pass1_free(&r->pass1);
    memset(r, 0, sizeof *r);
}
