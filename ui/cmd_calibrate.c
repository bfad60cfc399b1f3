/* ui/cmd_calibrate.c — `mtool calibrate`: measure this machine's latencies,
 * throughputs and widths (costmodel/calibrate.c) and store the profile the
 * cost model predicts with. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "ui.h"

const char mt_calibrate_usage[] =
    "usage: mtool calibrate [options]\n"
    "\n"
    "Measures, with the TSC only, the TSC-to-core-clock ratio and the latency and\n"
    "reciprocal throughput of the instruction classes the cost model uses (integer,\n"
    "multiply, divide, branches, L1 loads and stores, store-to-load forwarding into GPRs\n"
    "and vectors, FP add/mul/FMA/div/sqrt at 128/256/512 bits, conversions, shuffles,\n"
    "gathers), the bypass delays between FP add, multiply, FMA, vector integer and\n"
    "shuffle units, the loop front end (fetch windows, or the op-cache limits of small\n"
    "loops across a 64-byte line and of loops crowding one line), what loops add: the\n"
    "ALU time of a taken back edge and of a GPR store's data, the trip count past which\n"
    "a loop's exit mispredicts and what that costs, how far the core runs ahead of a\n"
    "chain through memory into the next independent one; and writes the machine\n"
    "profile for this CPU model to\n"
    "$XDG_CONFIG_HOME/mtool/machine-MODEL.txt.  Every sample is bracketed by an ALU\n"
    "probe and a one-branch loop probe; it is quiet when both run as fast as their\n"
    "fastest (no other thread on the core).  A figure is the fastest value three quiet\n"
    "samples agree on within 2%; a benchmark without one is measured again in quiet\n"
    "moments for up to 6 s, and still without one (or with a one-branch loop never at\n"
    "a whole number of cycles: the core shared throughout) falls back to the fastest\n"
    "value any three samples repeat, else its second-fastest sample; the report and\n"
    "the profile ('fallback' lines) name every figure that fell back.  Calibrate\n"
    "refuses only when its clock references disagree or a figure is out of range.\n"
    "Takes well under a minute.\n"
    "\n"
    "The core clock is a dependent imul chain (3 cycles an imul on every x86-64 core of\n"
    "the last decade), checked first against a register-register add chain (1 cycle)\n"
    "and an FP multiply chain (a whole number of cycles): when they disagree, or a\n"
    "figure is outside what a real core can take, calibrate says which and writes no\n"
    "profile.  Commands that predict calibrate by themselves (3 runs) when this CPU\n"
    "has no profile yet.\n"
    "\n"
    "Then the model checks itself: a dozen compute-bound, L1-resident kernels built\n"
    "into mtool (integer, vector, FP chains, branches, calls, division) are counted by\n"
    "pass 1, predicted with the new profile and timed; their median and worst error are\n"
    "printed and stored in the profile, and every report that predicts states them\n"
    "(and warns above 10%).\n"
    "\n"
    "options:\n"
    "  -r, --runs N     repeat every measurement N times (default 9)\n"
    "  -o FILE          write the profile to FILE instead\n"
    "  -n, --dry-run    print the profile, write nothing\n"
    "  --no-check       skip the model's self-check (the profile says \"not checked\")\n"
    "  --check-only     measure nothing but the self-check, with the profile already\n"
    "                   calibrated for this CPU (or -o FILE's), and store it there\n";

int mt_cmd_calibrate(int argc, char **argv)
{
    int runs = 9;
    const char *out = NULL;
    bool dry = false, check_only = false, check = true;
    for (int i = 1; i < argc; i++) {
        if ((!strcmp(argv[i], "-r") || !strcmp(argv[i], "--runs")) && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-o") && i + 1 < argc)
            out = argv[++i];
        else if (!strcmp(argv[i], "-n") || !strcmp(argv[i], "--dry-run"))
            dry = true;
        else if (!strcmp(argv[i], "--no-check"))
            check = false;
        else if (!strcmp(argv[i], "--check-only"))
            check_only = true;
        else {
            mt_ui_error("calibrate: unknown or incomplete option '%s'; see 'mtool help calibrate'",
                        argv[i]);
            return 2;
        }
    }
    if (runs < 1 || runs > 50) {
        mt_ui_error("calibrate: runs must be 1..50");
        return 2;
    }
    mt_machine m;
    mt_error err;
    double t0 = mt_now_seconds();
    if (check_only) {
        char model[128];
        mt_machine_cpu_model(model, sizeof model);
        char *path = out ? mt_xstrdup(out) : mt_machine_profile_path(model);
        int rc = mt_machine_read(path, &m, &err);
        if (rc == 0 && mt_run_selfcheck(&m, MT_SELFCHECK_PASSES(runs), MT_CALIBRATE_WAIT_SECONDS / 2,
                                         stderr, &err) == 0) {
            if (dry)
                mt_machine_write(stdout, &m);
            else if ((rc = mt_machine_save(&m, path, &err)) == 0)
                fprintf(stderr, "the check is stored in %s\n", path);
        } else {
            rc = -1;
        }
        if (rc != 0)
            mt_ui_error("%s", err.msg);
        free(path);
        return rc ? 1 : 0;
    }
    fprintf(stderr, "mtool calibrate: %d run%s of each microbenchmark (a figure: the fastest value "
                    "three quiet samples agree on)\n", runs, runs == 1 ? "" : "s");
    if (mt_run_calibrate(&m, runs, check, MT_CALIBRATE_WAIT_SECONDS, stderr, stderr, &err) != 0) {
        mt_ui_error("%s", err.msg);
        return 1;
    }
    fprintf(stderr, "TSC %.3f GHz, %.4f TSC ticks per core cycle (core ~%.2f GHz); %.1f s\n",
            m.tsc_hz / 1e9, m.tsc_per_cycle, m.tsc_hz / m.tsc_per_cycle / 1e9,
            mt_now_seconds() - t0);
    if (m.calibration_busy_pct > MT_CALIBRATION_BUSY_PCT)
        fprintf(stderr, "mtool: warning: other CPUs were busy %.0f%% of the time while calibrate "
                        "measured: the compute figures are those samples with the core to itself "
                        "repeated, the memory latencies were measured with the caches and memory "
                        "shared; the profile says so, and so will every report that predicts with "
                        "it: run 'mtool calibrate' again on an idle machine\n",
                m.calibration_busy_pct);
    if (m.calibration_fallbacks > 0)
        fprintf(stderr, "mtool: warning: %.0f of %.0f figures fell back (no quiet samples confirmed "
                        "them within the wait: another thread shared this core); the profile names "
                        "them: run 'mtool calibrate' again on a quieter machine\n",
                m.calibration_fallbacks, m.calibration_fallbacks + m.calibration_confirmed);
    if (dry) {
        mt_machine_write(stdout, &m);
        return 0;
    }
    char *path = out ? mt_xstrdup(out) : mt_machine_profile_path(m.cpu_model);
    int rc = mt_machine_save(&m, path, &err);
    if (rc == 0)
        fprintf(stderr, "machine profile written to %s\n", path);
    else
        mt_ui_error("%s", err.msg);
    free(path);
    return rc ? 1 : 0;
}
