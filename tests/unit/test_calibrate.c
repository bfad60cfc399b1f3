/* tests/unit/test_calibrate.c — the calibration's robust estimator
 * (costmodel/calibrate.c): the figure a benchmark's quiet samples repeat,
 * on synthetic sample sets whose true figure the test sets, and the
 * fallback a figure takes when no quiet samples confirm one (the
 * calibration then writes a profile naming it rather than refusing), and
 * the front-end check that makes no sample quiet when the one-branch loop
 * never ran alone.  No machine's figures: the values are made up, the oracle is
 * the value each set was generated around. */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>

#include "costmodel/costmodel.h"
#include "tests/unit/unit.h"

enum { MAXS = 512 };
static mt_cal_sample set[MAXS];
static int n;

static void add(double value, int pass, bool quiet)
{
    set[n++] = (mt_cal_sample){value, pass, quiet};
}

static void test_tight_cluster_with_slow_samples(void)
{
    n = 0;
    for (int pass = 0; pass < 3; pass++) {
        add(1.000, pass, true);
        add(1.003, pass, true);
        add(1.31, pass, true);  /* a burst the probes missed */
        add(1.95, pass, false); /* a neighbour on the core */
        add(1.40, pass, false);
    }
    mt_repeat r;
    CHECK(mt_repeated_figure(set, n, &r) == 0 && fabs(r.figure - 1.0) < 0.005 && r.agree == 6 &&
              r.passes == 3 && r.quiet == 9,
          "quiet samples at 1.000-1.003 among slower ones: %.3f (%d agree, %d passes, %d quiet)",
          r.figure, r.agree, r.passes, r.quiet);
}

static void test_fast_outliers_need_confirmation(void)
{
    n = 0;
    add(0.90, 0, true); /* the clock moved in step with both references */
    add(0.905, 1, true);
    for (int pass = 0; pass < 3; pass++)
        add(1.0, pass, true);
    mt_repeat r;
    CHECK(mt_repeated_figure(set, n, &r) == 0 && fabs(r.figure - 1.0) < 1e-9,
          "two fast samples that agree are not a figure; three at 1.0 are: %.3f", r.figure);
    n = 0;
    for (int k = 0; k < 3; k++)
        add(1.46, 0, true); /* a neighbour between quiet probes, three samples in a row */
    add(1.17, 1, true);
    add(1.171, 2, true);
    CHECK(mt_repeated_figure(set, n, &r) != 0,
          "a value three quiet samples of one pass repeat is not taken when other passes exist "
          "(measured again)");
    add(1.17, 3, true);
    CHECK(mt_repeated_figure(set, n, &r) == 0 && fabs(r.figure - 1.17) < 1e-9 && r.passes == 3,
          "and one more quiet sample makes the faster value the figure: %.3f", r.figure);
    n = 0;
    for (int k = 0; k < 5; k++)
        add(2.0 + 0.001 * k, 0, true);
    CHECK(mt_repeated_figure(set, n, &r) == 0 && fabs(r.figure - 2.002) < 1e-9 && r.passes == 1,
          "one pass: its repeated value, the middle of those that agree: %.4f",
          r.figure);
}

/* A latency chain runs as fast with a neighbour on the core: its quiet
 * samples are few, but they agree with what every sample repeats. */
static void test_unslowed_benchmark_confirmed_by_quiet(void)
{
    n = 0;
    add(4.001, 2, true);
    add(4.000, 7, true);
    for (int k = 0; k < 60; k++)
        add(4.0 + 0.0005 * (k % 7), k % 9, false);
    add(4.6, 3, false);
    mt_repeat r;
    CHECK(mt_repeated_figure(set, n, &r) == 0 && fabs(r.figure - 4.0) < 0.005 && r.quiet == 2 &&
              r.quiet_agree == 2 && r.agree == 62,
          "2 quiet samples at 4.00 confirm the 4.00 that 60 others repeat: %.4f (%d agree, %d "
          "of them quiet)", r.figure, r.agree, r.quiet_agree);
}

static void test_slow_repeated_value_refused(void)
{
    n = 0;
    add(1.00, 0, true);
    add(1.00, 3, true);
    for (int k = 0; k < 22; k++)
        add(1.52, k % 2, false); /* a loop slowed the same way for two passes */
    mt_repeat r;
    CHECK(mt_repeated_figure(set, n, &r) != 0 && fabs(r.figure - 1.0) < 1e-9 && r.quiet == 2,
          "a slow value repeated by samples that were not quiet is refused, not kept (fastest "
          "quiet %.3f, %d quiet)", r.figure, r.quiet);
    n = 0;
    add(1.00, 0, true);
    for (int k = 0; k < 22; k++)
        add(1.52 + 0.001 * (k % 3), k % 2, false);
    add(1.53, 3, true); /* a quiet sample the neighbour slowed in its middle */
    CHECK(mt_repeated_figure(set, n, &r) != 0,
          "nor when one quiet sample agrees with it but another is faster");
    n = 0;
    for (int k = 0; k < 20; k++)
        add(1.52 + 0.001 * (k % 3), k % 2, false);
    CHECK(mt_repeated_figure(set, n, &r) != 0 && isnan(r.figure),
          "nor without a quiet sample at all");
    n = 0;
    add(1.0, 0, true);
    add(1.1, 1, true);
    add(1.2, 2, true);
    add(1.3, 3, true);
    CHECK(mt_repeated_figure(set, n, &r) != 0,
          "quiet samples 10%% apart each repeat nothing");
    n = 0;
    CHECK(mt_repeated_figure(set, 0, &r) != 0 && isnan(r.figure) && r.quiet == 0,
          "no samples: no figure");
}

/* Random sets around a known figure (0.1 .. 100 cycles), 2 to 9 passes
 * of 15 samples: 30% within 0.5% of it, the others 5% to 2x slower, and
 * two lone fast samples (5% and 10%) in different passes.  With
 * `quiet_probes` the unslowed samples and a fifth of the slow ones are
 * quiet (a burst the probes missed), else none is.  How many of 400 sets
 * `estimate` gives no figure, another fallback than `how`, or one more
 * than `tol` off; *worst: the largest error. */
typedef int (*estimator)(const mt_cal_sample *s, int n, mt_repeat *out);
static int random_sets(unsigned seed, bool quiet_probes, estimator estimate, mt_confirm how,
                       double tol, double *worst)
{
    srand(seed);
    int bad = 0;
    *worst = 0;
    for (int t = 0; t < 400; t++) {
        double truth = 0.1 * pow(10, 3.0 * rand() / RAND_MAX);
        int passes = 2 + rand() % 8;
        n = 0;
        for (int pass = 0; pass < passes; pass++)
            for (int k = 0; k < 15 && n < MAXS; k++) {
                int kind = rand() % 10;
                double noise = (double)rand() / RAND_MAX;
                if (kind < 3)
                    add(truth * (1 + 0.005 * noise), pass, quiet_probes);
                else
                    add(truth * (1.05 + noise), pass, quiet_probes && kind < 5);
            }
        add(truth * 0.95, 0, quiet_probes);
        add(truth * 0.90, 1, quiet_probes);
        mt_repeat r = {0};
        if (estimate(set, n, &r) != 0 || r.how != how) {
            bad++;
            continue;
        }
        double e = fabs(r.figure / truth - 1);
        *worst = fmax(*worst, e);
        bad += e > tol;
    }
    return bad;
}

static void test_random_sets(void)
{
    double worst;
    int bad = random_sets(12, true, mt_repeated_figure, MT_CONFIRMED, 0.006, &worst);
    CHECK(bad == 0, "400 random sets: every figure within 0.6%% of the true one (%d off or "
                    "refused, worst %.2f%%)", bad, 100 * worst);
}

static void test_front_end_whole(void)
{
    static const double whole[] = {1.0, 1.03, 0.97, 2.0, 0.5, 3.05};
    static const double shared[] = {1.149, 1.285, 1.604, 1.25, 0.3, 0.0, 2.2};
    for (size_t i = 0; i < sizeof whole / sizeof *whole; i++)
        CHECK(mt_front_end_whole(whole[i]), "a one-branch loop at %.3f cycles ran alone",
              whole[i]);
    for (size_t i = 0; i < sizeof shared / sizeof *shared; i++)
        CHECK(!mt_front_end_whole(shared[i]),
              "a one-branch loop at %.3f cycles at its fastest: the core was shared throughout",
              shared[i]);
}

/* A noisy probe: no sample quiet.  The figure must still come, from what
 * the samples repeat, and say it fell back; a calibration that refused
 * here (no figure) fails the test. */
static void test_noisy_probe_falls_back(void)
{
    n = 0;
    for (int pass = 0; pass < 3; pass++) {
        add(1.52, pass, false); /* a neighbour slowed these... */
        add(1.90, pass, false);
        add(1.004, pass, false); /* ...not these, but no probe said so */
        add(1.000, pass, false);
    }
    mt_repeat r = {0};
    CHECK(mt_repeated_figure(set, n, &r) != 0, "no quiet sample: no confirmed figure");
    CHECK(mt_fallback_figure(set, n, &r) == 0 && r.how == MT_FELL_BACK_REPEATED &&
              fabs(r.figure - 1.004) < 1e-9 && r.agree == 6 && r.passes == 3,
          "falls back to the fastest value six samples of three passes repeat: %.3f (%s, %d "
          "agree, %d passes)", r.figure, mt_confirm_name(r.how), r.agree, r.passes);
    n = 0;
    add(0.70, 0, false); /* one fast sample: the clock moved in step with its references */
    add(1.00, 1, false);
    add(1.30, 2, false);
    add(1.60, 3, true);
    CHECK(mt_repeated_figure(set, n, &r) != 0 && mt_fallback_figure(set, n, &r) == 0 &&
              r.how == MT_FELL_BACK_FASTEST && fabs(r.figure - 1.00) < 1e-9,
          "nothing repeats: the second-fastest sample, not a lone fast one: %.3f (%s)", r.figure,
          mt_confirm_name(r.how));
    n = 0;
    add(2.5, 0, true);
    CHECK(mt_fallback_figure(set, n, &r) == 0 && r.how == MT_FELL_BACK_FASTEST && r.figure == 2.5,
          "one sample: itself: %.3f", r.figure);
    CHECK(mt_fallback_figure(set, 0, &r) != 0, "no samples: no figure at all");
}

/* The same random sets with a noisy probe, no sample quiet: a fallback
 * for every one, a repeated value, within 2% of the truth (the unslowed
 * samples are there, no probe said so). */
static void test_random_noisy_sets_fall_back(void)
{
    double worst;
    int bad = random_sets(21, false, mt_fallback_figure, MT_FELL_BACK_REPEATED, 0.02, &worst);
    CHECK(bad == 0, "400 noisy sets, none quiet: each falls back to a repeated figure within 2%% "
                    "of the true one (%d not, worst %.2f%%)", bad, 100 * worst);
}

/* Every benchmark has a name the profile's fallback lines can name it by,
 * and the name finds it again. */
static void test_bench_names(void)
{
    size_t total = mt_calibration_benches(), bad = 0;
    for (size_t i = 0; i < total; i++) {
        const char *name = mt_calibration_bench_name(i);
        bad += !name || !*name || mt_calibration_bench_index(name) != (int)i;
    }
    CHECK(total > 100 && total <= MT_CALIBRATION_BENCHES_MAX && bad == 0 &&
              !mt_calibration_bench_name(total) && mt_calibration_bench_index("no such") < 0,
          "%zu benchmarks, each named once (%zu not)", total, bad);
}

int main(void)
{
    test_tight_cluster_with_slow_samples();
    test_fast_outliers_need_confirmation();
    test_slow_repeated_value_refused();
    test_unslowed_benchmark_confirmed_by_quiet();
    test_random_sets();
    test_front_end_whole();
    test_noisy_probe_falls_back();
    test_random_noisy_sets_fall_back();
    test_bench_names();
    return unit_finish();
}
