/* ui/costs.c — cost-model reports shared by `mtool analyze --costs` and
 * `mtool count`: the machine profile in use, pass-1 counts read back from
 * counts.tsv, per-block predictions and count x cycles totals. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ui.h"

/* Runs of each microbenchmark when a command calibrates by itself: about 3 s
 * (`mtool calibrate` makes 9). */
#define AUTO_CALIBRATION_RUNS 3

/* No profile calibrated for this CPU: measure it now rather than predict
 * with another core's figures (the Zen 5 profile predicted a compute-bound
 * loop on the Xeon family 6 model 207 at +563% "memory overhead").  The
 * profile is cached where `mtool calibrate` writes it.  A calibration that
 * fails (its clock references disagree on a noisy machine) is tried once
 * more; then the shipped profile of this very CPU model, if there is one,
 * else no prediction at all. */
static int calibrate_now(mt_machine *m, const char *model, bool *calibrated)
{
    char *path = mt_machine_profile_path(model);
    fprintf(stderr, "mtool: no machine profile calibrated for '%s': calibrating this machine now "
                    "(a few seconds; 'mtool calibrate' measures more runs)\n", model);
    mt_error err;
    int rc = -1;
    for (int attempt = 0; attempt < 2 && rc != 0; attempt++)
        rc = mt_ui_calibrate(m, AUTO_CALIBRATION_RUNS, NULL, &err);
    *calibrated = rc == 0;
    if (rc == 0) {
        if (mt_machine_save(m, path, &err) == 0)
            fprintf(stderr, "mtool: machine profile written to %s\n", path);
        else
            fprintf(stderr, "mtool: warning: the calibration is used but not kept: %s\n", err.msg);
    } else if (mt_machine_shipped_for_this_cpu(m)) {
        fprintf(stderr, "mtool: warning: %s; predicting with the %s profile\n", err.msg, m->source);
        rc = 0;
    } else {
        mt_ui_error("no prediction: %s, and mtool ships no profile for this CPU (run 'mtool "
                    "calibrate' when the machine is quieter)", err.msg);
    }
    free(path);
    return rc;
}

/* The machine profile to predict with; *calibrated: a calibration of this
 * machine (kept in the config, or made now), not a shipped profile. */
static int load_machine(mt_machine *m, bool *calibrated)
{
    mt_error err;
    if (mt_machine_load(m, calibrated, &err) != 0) {
        mt_ui_error("%s", err.msg);
        return -1;
    }
    if (!*calibrated) {
        char model[128];
        mt_machine_cpu_model(model, sizeof model);
        return calibrate_now(m, model, calibrated);
    }
    if (m->version < MT_MACHINE_PROFILE_VERSION)
        fprintf(stderr, "mtool: warning: the machine profile (%s) was written by an older mtool "
                        "that measured less (version %d of %d): predictions miss what it lacks; "
                        "run 'mtool calibrate' again\n", m->source, m->version,
                MT_MACHINE_PROFILE_VERSION);
    return 0;
}

int mt_ui_load_machine(mt_machine *m)
{
    bool calibrated;
    return load_machine(m, &calibrated);
}

static void print_block_rows(FILE *fp, const mt_program *prog, const mt_program_costs *c,
                             const uint64_t *counts, uint32_t p)
{
    const mt_procedure *proc = &prog->procs[p];
    for (uint32_t b = 0; b < proc->nblocks; b++) {
        const mt_block_cost *bc = &c->costs[c->first[p] + b];
        const mt_block *blk = &proc->blocks[b];
        fprintf(fp, "0x%" PRIx64 "\t", blk->start);
        mt_tsv_field(fp, proc->name);
        fprintf(fp, "\t%u\t%s\t%.2f\t%s", bc->ninsns, blk->loop == MT_NONE ? "-" : "loop",
                bc->cycles, mt_bound_name(bc->limit));
        if (counts) {
            uint64_t n = counts[c->first[p] + b];
            fprintf(fp, "\t%" PRIu64 "\t%.0f", n, (double)n * bc->cycles);
        }
        fputc('\n', fp);
    }
}

int mt_print_costs(FILE *fp, const mt_program *prog, const char *counts_path,
                   const char *only_function, mt_error *err)
{
    /* Refused before the machine profile, which may take seconds to calibrate. */
    FILE *probe = counts_path ? mt_fopen_regular(counts_path, err) : NULL;
    if (counts_path && !probe)
        return -1;
    if (probe)
        fclose(probe);
    mt_machine m;
    if (mt_ui_load_machine(&m) != 0) {
        mt_error_set(err, "no usable machine profile");
        return -1;
    }
    mt_program_costs c;
    if (mt_predict_program(&m, prog, false, &c, err) != 0)
        return -1;
    uint64_t *counts = NULL;
    if (counts_path && !(counts = mt_ui_read_counts(counts_path, prog, err))) {
        mt_program_costs_free(&c);
        return -1;
    }
    fprintf(fp, "# predicted core cycles per execution, every memory access an L1 hit\n"
                "# machine profile: %s, %s\n", m.cpu_model, m.source);
    mt_model_check mc;
    mt_model_check_of(&mc, &m);
    mt_ui_print_model_check(fp, &mc, "# ");
    fprintf(fp, "# block\tprocedure\tinsns\tin\tcycles\tbound%s\n",
            counts ? "\tcount\tpredicted_cycles" : "");
    for (uint32_t p = 0; p < prog->nprocs; p++)
        if (!only_function || strcmp(prog->procs[p].name, only_function) == 0)
            print_block_rows(fp, prog, &c, counts, p);
    if (counts) {
        mt_inclusive inc;
        mt_predicted_inclusive(prog, &c, counts, &inc);
        fprintf(fp, "# procedure totals (own blocks, then inclusive of estimable callees; seconds "
                    "at the profile's TSC ratio): proc\tNAME\tpredicted_cycles\tentries\t"
                    "predicted_seconds\tinclusive_cycles\tinclusive_seconds\n");
        for (uint32_t p = 0; p < prog->nprocs; p++) {
            const mt_procedure *proc = &prog->procs[p];
            double cyc = mt_predicted_cycles_proc(prog, &c, counts, p);
            double incl = inc.total[p];
            if ((cyc == 0 && incl == 0) || (only_function && strcmp(proc->name, only_function) != 0))
                continue;
            fputs("proc\t", fp);
            mt_tsv_field(fp, proc->name);
            fprintf(fp, "\t%.0f\t%" PRIu64 "\t%.6f\t%.0f\t%.6f\n", cyc,
                    proc->nblocks ? counts[c.first[p]] : 0, cyc * m.tsc_per_cycle / m.tsc_hz, incl,
                    incl * m.tsc_per_cycle / m.tsc_hz);
        }
        fprintf(fp, "# loop totals (own and nested blocks, and estimable callees): loop\tPROCEDURE\t"
                    "HEADER\tpredicted_cycles\theader_executions\n");
        for (uint32_t p = 0; p < prog->nprocs; p++) {
            const mt_procedure *proc = &prog->procs[p];
            if (only_function && strcmp(proc->name, only_function) != 0)
                continue;
            for (uint32_t l = 0; l < proc->nloops; l++) {
                double cyc = mt_predicted_cycles_loop(prog, &c, counts, p, l, &inc);
                uint32_t h = proc->loops[l].header;
                if (cyc <= 0)
                    continue;
                fputs("loop\t", fp);
                mt_tsv_field(fp, proc->name);
                fprintf(fp, "\t0x%" PRIx64 "\t%.0f\t%" PRIu64 "\n", proc->blocks[h].start, cyc,
                        counts[c.first[p] + h]);
            }
        }
        mt_inclusive_free(&inc);
    }
    free(counts);
    mt_program_costs_free(&c);
    return 0;
}

void mt_figure2_compute(mt_figure2 *f, const mt_program *prog, const uint64_t *block_counts,
                        uint64_t probes, const mt_run_times *base, const mt_run_times *run)
{
    memset(f, 0, sizeof *f);
    f->compensated_s = f->measured_s = f->overhead_s = f->overhead_percent = NAN;
    f->probes = probes;
    f->has_base = base != NULL;
    f->has_run = run != NULL;
    f->base_user_s = base ? base->user : NAN;
    f->base_sys_s = base ? base->sys : NAN;
    f->run_user_s = run ? run->user : NAN;
    f->run_sys_s = run ? run->sys : NAN;
    mt_machine_cpu_model(f->cpu_model, sizeof f->cpu_model);
    mt_machine m;
    mt_program_costs c;
    mt_error err;
    if (load_machine(&m, &f->calibrated) != 0) {
        snprintf(f->error, sizeof f->error, "no machine profile for this CPU");
        return;
    }
    mt_model_check_of(&f->check, &m);
    snprintf(f->profile_cpu_model, sizeof f->profile_cpu_model, "%s", m.cpu_model);
    snprintf(f->profile_source, sizeof f->profile_source, "%s", m.source);
    f->profile_version = m.version;
    f->tsc_hz = m.tsc_hz;
    if (mt_predict_executed(&m, prog, run != NULL, block_counts, &c, &err) != 0) {
        snprintf(f->error, sizeof f->error, "%s", err.msg);
        return;
    }
    f->predicted = true;
    for (uint32_t p = 0; p < c.nprocs; p++) /* blocks, loop exits and chains */
        f->cycles += mt_predicted_cycles_proc(prog, &c, block_counts, p);
    for (uint64_t i = 0; i < c.first[c.nprocs]; i++)
        f->probe_cycles += (double)block_counts[i] * c.costs[i].probe_cycles;
    mt_program_costs_free(&c);
    /* Core cycles become seconds at the clock the measured run saw. */
    const mt_run_times *timed = base ? base : run;
    if (timed && timed->tsc_per_cycle > 0) {
        f->tsc_per_cycle = timed->tsc_per_cycle;
        f->tsc_per_cycle_from = base ? "uninstrumented run" : "instrumented run";
    } else {
        f->tsc_per_cycle = mt_measure_tsc_per_cycle(9);
        f->tsc_per_cycle_from = "now (no run)";
    }
    double sec_per_cycle = f->tsc_per_cycle / m.tsc_hz;
    /* The counters' cost is predicted like the program's: each block again
     * with its counter, the difference (a counter's own chain through
     * memory sets a loop's pace; elsewhere it mostly hides in the block's). */
    f->predicted_s = f->cycles * sec_per_cycle;
    f->probe_s = f->probe_cycles * sec_per_cycle;
    if (run)
        f->compensated_s = run->user - f->probe_s;
    if (base) {
        f->measured_s = base->user;
        f->measured_from = "user time of the uninstrumented run";
    } else if (run) {
        f->measured_s = f->compensated_s;
        f->measured_from = "user time of the instrumented run minus the probes' predicted cost";
    }
    if (f->measured_s >= 0 && f->predicted_s > 0) { /* a compensated time below 0: no estimate */
        f->overhead_s = f->measured_s - f->predicted_s;
        f->overhead_percent = 100 * f->overhead_s / f->predicted_s;
    }
}

void mt_print_figure2(FILE *fp, const mt_figure2 *f)
{
    if (!f->predicted) {
        fprintf(fp, "(no prediction: %s)\n", f->error);
        return;
    }
    fprintf(fp, "MTOOL figure 2 (predicted: every memory access an L1 hit, counted blocks only):\n");
    fprintf(fp, "  predicted user time        %9.3f s  (%.4g core cycles x %.4f TSC ticks/cycle measured "
                "around the run / %.3f GHz TSC)\n", f->predicted_s, f->cycles, f->tsc_per_cycle,
            f->tsc_hz / 1e9);
    if (f->has_base)
        fprintf(fp, "  measured user time         %9.3f s  (uninstrumented run; system %.3f s)\n",
                f->base_user_s, f->base_sys_s);
    if (f->has_run)
        fprintf(fp, "  instrumented, compensated  %9.3f s  (user %.3f s - predicted cost of %" PRIu64
                    " probes, %.4g cycles; system %.3f s)\n", f->compensated_s, f->run_user_s,
                f->probes, f->probe_cycles, f->run_sys_s);
    if (!isnan(f->overhead_s))
        fprintf(fp, "  overhead estimate          %9.3f s  (measured - predicted: %+.1f%% of predicted)\n",
                f->overhead_s, f->overhead_percent);
    mt_ui_print_model_check(fp, &f->check, "  ");
    fprintf(fp, "  (time in code that was not counted, e.g. shared libraries or procedures the\n"
                "   rewriter left out, is not predicted and shows up as overhead)\n");
}
