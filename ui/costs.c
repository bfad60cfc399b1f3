/* ui/costs.c — cost-model reports: `mtool analyze --costs` (per-block
 * predictions, with pass-1 counts from counts.tsv count x cycles totals)
 * and `mtool count`'s figure 2. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ui.h"

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
    bool calibrated;
    mt_error merr;
    if (mt_run_load_machine(&m, &calibrated, stderr, &merr) != 0) {
        mt_ui_error("%s", merr.msg);
        mt_error_set(err, "no usable machine profile");
        return -1;
    }
    uint64_t *counts = NULL;
    if (counts_path && !(counts = mt_rundir_read_counts(counts_path, prog, err)))
        return -1;
    mt_program_costs c;
    if (mt_predict_program(&m, prog, false, counts, &c, err) != 0) {
        free(counts);
        return -1;
    }
    fprintf(fp, "# predicted core cycles per execution, every memory access an L1 hit\n"
                "# machine profile: %s, %s\n", m.cpu_model, m.source);
    mt_model_check mc;
    mt_model_check_of(&mc, &m);
    mt_model_check_print(fp, &mc, "# ");
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
    mt_model_check_print(fp, &f->check, "  ");
    fprintf(fp, "  (time in code that was not counted, e.g. shared libraries or procedures the\n"
                "   rewriter left out, is not predicted and shows up as overhead)\n");
}
