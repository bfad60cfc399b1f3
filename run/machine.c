/* run/machine.c — the machine profile a run predicts with: the one
 * calibrated for this CPU, else a calibration made now (and its self-check),
 * kept where `mtool calibrate` writes it. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "run.h"

/* Runs of each microbenchmark when a command calibrates by itself: about 3 s
 * (`mtool calibrate` makes 9). */
#define AUTO_CALIBRATION_RUNS 3
/* The longest a command calibrating by itself waits for quiet moments, in
 * all (`mtool calibrate`: MT_CALIBRATE_WAIT_SECONDS and half as long again):
 * it delays the command the user asked for, but the calibration is kept
 * and paid once, and a figure quiet samples did not confirm in that time
 * falls back to one a shared core may have given (on the AMD EPYC Zen 3,
 * family 25 model 1, at load 2.5: 2 s for the benchmarks left every
 * calibration of three with such figures, 4 s one of three). */
#define AUTO_WAIT_SECONDS 6.0

/* The working set each latency chase takes (costmodel/latency.c), from the
 * data caches sysfs describes: a cache level's is half its size, and at
 * least twice the level above's (a set that fits that level tells nothing
 * of this one); memory's four times the last level's.  Levels of 64 MiB and
 * more are chased over 32 MiB, and memory over at most 256 MiB, to keep
 * calibrate within a second of what it took without them: on the Xeon
 * family 6 model 207 (a 300 MiB L3 that other tenants share) that makes
 * "memory" a set the L3 could hold, and its figure what a load costs at
 * that size there (page walks apart: costmodel/latency.c).  Without sysfs's
 * caches, none. */
static void latency_working_sets(uint64_t ws[MT_MEM_LEVELS])
{
    enum { MIB = 1 << 20 };
    memset(ws, 0, MT_MEM_LEVELS * sizeof *ws);
    mt_sim_machine sm;
    mt_error ignored;
    if (mt_sim_machine_from_sysfs(&sm, NULL, &ignored) != 0 || !sm.d1.present)
        return;
    uint64_t above = sm.d1.size, last = sm.d1.size;
    ws[0] = sm.d1.size / 2;
    for (unsigned k = 0; k < sm.nlower && k + 1 < MT_MEM_MEMORY; k++) {
        uint64_t size = sm.lower[k].size;
        uint64_t set = size / 2 > 2 * above ? size / 2 : 2 * above;
        ws[k + 1] = size >= 64 * MIB && set > 32 * MIB ? 32 * MIB : set;
        above = size;
        last = size;
    }
    uint64_t memory = 4 * last;
    ws[MT_MEM_MEMORY] = memory > 256 * MIB ? 256 * MIB : memory < 64 * MIB ? 64 * MIB : memory;
}

int mt_run_measure_latencies(mt_machine *m, FILE *log, mt_error *err)
{
    if (log)
        fprintf(log, "mtool: the machine profile (%s) has no memory latencies, streaming "
                     "costs or page-walk cost: measuring them now, for this run ('mtool "
                     "calibrate' keeps them)\n", m->source);
    uint64_t ws[MT_MEM_LEVELS];
    latency_working_sets(ws);
    double kept = m->tsc_per_cycle; /* the clock now, not the profile's */
    m->tsc_per_cycle = mt_measure_tsc_per_cycle(400);
    int rc = mt_calibrate_latencies(m, ws, 3, NULL, err);
    m->tsc_per_cycle = kept;
    return rc;
}

int mt_run_calibrate(mt_machine *m, int runs, bool check, double wait_seconds, FILE *report,
                     FILE *log, mt_error *err)
{
    uint64_t ws[MT_MEM_LEVELS];
    latency_working_sets(ws);
    if (mt_calibrate(m, runs, wait_seconds, report, err) != 0 ||
        mt_calibrate_latencies(m, ws, runs, report, err) != 0 || mt_machine_check(m, err) != 0)
        return -1;
    if (!check)
        return 0;
    mt_error cerr;
    if (mt_run_selfcheck(m, MT_SELFCHECK_PASSES(runs), wait_seconds / 2, report, &cerr) != 0) {
        if (log)
            fprintf(log, "mtool: warning: the model's self-check could not be made (%s): reports "
                         "will say the model is not checked on this CPU\n", cerr.msg);
    } else if (!report && log) {
        mt_model_check mc;
        mt_model_check_of(&mc, m);
        mt_model_check_print(log, &mc, "mtool: ");
    }
    return 0;
}

/* No profile calibrated for this CPU: measure it now rather than predict
 * with another core's figures (the Zen 5 profile predicted a compute-bound
 * loop on the Xeon family 6 model 207 at +563% "memory overhead").  The
 * profile is cached where `mtool calibrate` writes it, also when other CPUs
 * were busy: a figure is one that samples with this core to itself
 * repeated (the probes around each sample), or, none confirming it within
 * the wait, a fallback the profile names (costmodel.h, mt_fallback_figure);
 * not keeping a busy calibration made every command on a busy machine
 * calibrate again.  The calibration waits for quiet moments
 * AUTO_WAIT_SECONDS in all (the self-check a third of it) and is not tried
 * again: it is refused only when its clock references disagree or a figure
 * is out of range, measured again within it.  Refused: the shipped profile
 * of this very CPU model, if there is one, else no prediction; and the
 * same, without measuring, for the rest of the process. */
static int calibrate_now(mt_machine *m, const char *model, bool *calibrated, FILE *log,
                         mt_error *err)
{
    /* A refusal holds for the rest of this process: `mtool run` loads the
     * machine for pass 1 and again for pass 2, minutes apart at most, and
     * measuring the busy machine again would delay pass 2 as long. */
    static bool refused;
    static mt_error refusal;
    char *path = mt_machine_profile_path(model);
    mt_error cerr = refusal;
    int rc = -1;
    if (!refused) {
        if (log)
            fprintf(log, "mtool: no machine profile calibrated for '%s': calibrating this machine "
                         "now (a few seconds; 'mtool calibrate' measures more runs)\n", model);
        rc = mt_run_calibrate(m, AUTO_CALIBRATION_RUNS, true, AUTO_WAIT_SECONDS * 2 / 3, NULL, log,
                              &cerr);
        refused = rc != 0;
        refusal = cerr;
    }
    *calibrated = rc == 0;
    if (rc == 0 && m->calibration_busy_pct > MT_CALIBRATION_BUSY_PCT && log)
        fprintf(log, "mtool: warning: other CPUs were busy %.0f%% of the time while this machine "
                     "was calibrated: its figures are those that samples with this core to itself "
                     "repeated, but memory latencies were measured with the caches and memory "
                     "shared; the profile says so ('mtool calibrate' on an idle machine measures "
                     "them again)\n", m->calibration_busy_pct);
    if (rc == 0 && m->calibration_fallbacks > 0 && log)
        fprintf(log, "mtool: warning: %.0f of the calibration's %.0f figures were not confirmed by "
                     "samples with this core to itself (another thread shared it): they fell back "
                     "to the fastest values repeated, and the profile names them ('mtool "
                     "calibrate' on a quieter machine measures them again)\n",
                m->calibration_fallbacks, m->calibration_fallbacks + m->calibration_confirmed);
    if (rc == 0) {
        mt_error serr;
        if (mt_machine_save(m, path, &serr) == 0) {
            if (log)
                fprintf(log, "mtool: machine profile written to %s\n", path);
        } else if (log)
            fprintf(log, "mtool: warning: the calibration is used but not kept: %s\n", serr.msg);
    } else if (mt_machine_shipped_for_this_cpu(m)) {
        if (log)
            fprintf(log, "mtool: warning: %s; predicting with the %s profile\n", cerr.msg,
                    m->source);
        rc = 0;
    } else {
        mt_error_set(err, "no prediction: %s, and mtool ships no profile for this CPU (run 'mtool "
                          "calibrate' when the machine is quieter)", cerr.msg);
    }
    free(path);
    return rc;
}

int mt_run_load_machine(mt_machine *m, bool *calibrated, FILE *log, mt_error *err)
{
    if (mt_machine_load(m, calibrated, err) != 0)
        return -1;
    if (!*calibrated) {
        char model[128];
        mt_machine_cpu_model(model, sizeof model);
        return calibrate_now(m, model, calibrated, log, err);
    }
    if (m->version < MT_MACHINE_PROFILE_VERSION && log)
        fprintf(log, "mtool: warning: the machine profile (%s) was written by an older mtool "
                     "that measured less (version %d of %d): predictions miss what it lacks; "
                     "run 'mtool calibrate' again\n", m->source, m->version,
                MT_MACHINE_PROFILE_VERSION);
    return 0;
}
