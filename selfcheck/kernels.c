/* selfcheck/kernels.c — the compute-bound kernels the cost model checks
 * itself on (ui/selfcheck.c, at the end of every calibration).
 *
 * Built at mtool's build time with the system cc at fixed flags (-O2, no
 * -march: the same code on every machine; selfcheck/Makefile) and embedded
 * in mtool as data; the check writes it to a temporary file, counts its
 * blocks with mtool's own pass 1 and times it uninstrumented:
 *
 *   kernels count               call every kernel once (the pass-1 run)
 *   kernels measure PASSES OUT  PASSES passes over the kernels, one timed call of
 *                               each per pass; OUT gets a line per kernel:
 *                               "NAME KEPT TRIES BEST_CYCLES MEDIAN_CYCLES RATIO"
 *                               (core cycles per call, the fastest and the
 *                               median kept sample; TSC ticks per core cycle
 *                               during the fastest)
 *   kernels list                the kernel names
 *
 * Every kernel is a procedure k_NAME (noinline) repeating an L1-resident
 * loop (at most 12 KiB of data) REPS times, about 2.5 million core cycles a
 * call (1 ms at 2.5 GHz), with data that keeps branches predictable.  A
 * sample is one call bracketed by two measurements of the core clock (a
 * dependent imul chain, 3 cycles an imul on every x86-64 core of the last
 * decade, as `mtool calibrate`'s reference; a dependent `add $1` is no clock
 * on Intel's Golden Cove family, which folds it at rename), kept when both
 * agree within 1.5%, and when the process was not switched out meanwhile (a
 * machine with more runnable threads than CPUs preempts some samples; the
 * references around them do not see it).  Other tenants' threads on the
 * same physical core only ever slow a sample down: the fastest kept one is
 * the kernel alone. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <x86intrin.h>

#if defined(__clang__)
#define KERNEL __attribute__((noinline, used))
#else
#define KERNEL __attribute__((noinline, noclone, used))
#endif

#define N 1024

static uint32_t ua[N], ub[N], uc[64];
static int32_t ia[N];
static float fx[N], fy[N], fa[N], fb[N];
static double da[N];
static uint8_t bytes[N];
static volatile uint64_t sink;
static volatile double sink_d;

/* Between repetitions: the compiler may not hoist a repetition's work out
 * of the REPS loop (the arrays may have changed). */
#define BARRIER() __asm__ volatile("" ::: "memory")

/* ---- integer ------------------------------------------------------------ */

/* A scalar add and xor reduction (the xor of running sums: no compiler
 * vectorizes it). */
KERNEL uint64_t k_add_xor(int reps)
{
    uint64_t s = 0, x = 0;
    for (int r = 0; r < reps; r++) {
        BARRIER();
        for (int i = 0; i < N; i++) {
            s += ua[i];
            x ^= s >> 3;
        }
    }
    return s ^ x;
}

/* A linear congruential generator: one dependent 64-bit multiply and add
 * per step. */
KERNEL uint64_t k_lcg_chain(uint64_t x, int reps)
{
    for (int r = 0; r < reps; r++)
        for (int i = 0; i < N; i++)
            x = x * 6364136223846793005ull + 1442695040888963407ull;
    return x;
}

/* Population count by shifts and masks (no popcnt: baseline x86-64). */
KERNEL uint64_t k_popcount_swar(int reps)
{
    uint64_t s = 0;
    for (int r = 0; r < reps; r++) {
        BARRIER();
        for (int i = 0; i < N; i++) {
            uint32_t v = ua[i];
            v = v - ((v >> 1) & 0x55555555u);
            v = (v & 0x33333333u) + ((v >> 2) & 0x33333333u);
            v = (v + (v >> 4)) & 0x0F0F0F0Fu;
            s += (v * 0x01010101u) >> 24;
        }
    }
    return s;
}

/* A bit loop: CRC-32 one bit at a time (an inner loop of 8 per byte). */
KERNEL uint32_t k_crc32_bits(int reps)
{
    uint32_t crc = ~0u;
    for (int r = 0; r < reps; r++) {
        BARRIER();
        for (int i = 0; i < 256; i++) {
            crc ^= bytes[i];
            for (int k = 0; k < 8; k++)
                crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
        }
    }
    return ~crc;
}

/* Branches on the data, in a period-8 pattern the predictor learns; one
 * side stores, so that compilers keep the branch (no if-conversion to
 * cmov). */
KERNEL int64_t k_branchy(int reps)
{
    int64_t c = 0, d = 0;
    for (int r = 0; r < reps; r++) {
        BARRIER();
        for (int i = 0; i < N; i++) {
            int32_t v = ia[i];
            if (v & 4) {
                c += v;
                d ^= c >> 3;
                uc[i & 63] = (uint32_t)d;
            } else {
                c -= 3;
            }
        }
    }
    return c ^ d;
}

/* A small procedure called on every iteration (not inlined). */
KERNEL uint32_t leaf_mix(uint32_t v, uint32_t k)
{
    v ^= v >> 15;
    v *= 0x2c1b3c6du;
    return (v ^ (v >> 12)) + k;
}

KERNEL uint64_t k_call_leaf(int reps)
{
    uint64_t s = 0;
    for (int r = 0; r < reps; r++) {
        BARRIER();
        for (int i = 0; i < N; i++)
            s += leaf_mix(ua[i], (uint32_t)i);
    }
    return s;
}

/* Unsigned 32-bit division, independent divides. */
KERNEL uint32_t k_div_u32(int reps)
{
    uint32_t s = 0;
    for (int r = 0; r < reps; r++) {
        BARRIER();
        for (int i = 0; i < N; i++)
            s += ua[i] / ub[i];
    }
    return s;
}

/* A long body: one round of a hash mixing four lanes (shifts, xors, adds,
 * two multiplies). */
KERNEL uint64_t k_mix_long(int reps)
{
    uint64_t h0 = 1, h1 = 2, h2 = 3, h3 = 4;
    for (int r = 0; r < reps; r++) {
        BARRIER();
        for (int i = 0; i < N; i += 4) {
            h0 = (h0 ^ ua[i]) * 0x9E3779B97F4A7C15ull;
            h1 = (h1 + ua[i + 1]) ^ (h1 >> 29);
            h2 = (h2 ^ ((uint64_t)ua[i + 2] << 7)) + (h2 << 3);
            h3 = (h3 * 31 + ua[i + 3]) ^ (h0 >> 17);
            h1 += h2 >> 11;
            h2 ^= h3 << 5;
        }
    }
    return h0 ^ h1 ^ h2 ^ h3;
}

/* ---- floating point ----------------------------------------------------- */

/* A sum: one dependent FP add per element (no reassociation at -O2). */
KERNEL double k_sum_f64(int reps)
{
    double s = 0;
    for (int r = 0; r < reps; r++) {
        BARRIER();
        for (int i = 0; i < N; i++)
            s += da[i];
    }
    return s;
}

/* A dot product with four independent accumulators: multiplies and adds,
 * bound by their throughput rather than a chain. */
KERNEL float k_dot4_f32(int reps)
{
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (int r = 0; r < reps; r++) {
        BARRIER();
        for (int i = 0; i < N; i += 4) {
            s0 += fa[i] * fb[i];
            s1 += fa[i + 1] * fb[i + 1];
            s2 += fa[i + 2] * fb[i + 2];
            s3 += fa[i + 3] * fb[i + 3];
        }
    }
    return (s0 + s1) + (s2 + s3);
}

/* y = y/2 + x, a loop compilers vectorize (the values stay normal). */
KERNEL void k_saxpy_f32(int reps)
{
    for (int r = 0; r < reps; r++) {
        BARRIER();
        for (int i = 0; i < N; i++)
            fy[i] = 0.5f * fy[i] + fx[i];
    }
}

/* A polynomial by Horner's rule: a chain of dependent multiplies and adds. */
KERNEL double k_horner_f64(double x, int reps)
{
    double p = 0;
    for (int r = 0; r < reps; r++) {
        BARRIER();
        p = 0;
        for (int i = 0; i < N; i++)
            p = p * x + da[i];
    }
    return p;
}

/* ---- the table and the driver ------------------------------------------- */

static void run_add_xor(void) { sink = k_add_xor(1700); }
static void run_lcg_chain(void) { sink = k_lcg_chain(sink | 1, 600); }
static void run_popcount_swar(void) { sink = k_popcount_swar(1300); }
static void run_crc32_bits(void) { sink = k_crc32_bits(290); }
static void run_branchy(void) { sink = (uint64_t)k_branchy(1000) + uc[5]; }
static void run_call_leaf(void) { sink = k_call_leaf(600); }
static void run_div_u32(void) { sink = k_div_u32(400); }
static void run_mix_long(void) { sink = k_mix_long(1450); }
static void run_sum_f64(void) { sink_d = k_sum_f64(1200); }
static void run_dot4_f32(void) { sink_d = k_dot4_f32(4800); }
static void run_saxpy_f32(void) { k_saxpy_f32(7500); }
static void run_horner_f64(void) { sink_d = k_horner_f64(0.999, 360); }

static const struct {
    const char *name;
    void (*run)(void);
} kernels[] = {
    {"add_xor", run_add_xor},     {"lcg_chain", run_lcg_chain}, {"popcount_swar", run_popcount_swar},
    {"crc32_bits", run_crc32_bits}, {"branchy", run_branchy},   {"call_leaf", run_call_leaf},
    {"div_u32", run_div_u32},     {"mix_long", run_mix_long},   {"sum_f64", run_sum_f64},     {"dot4_f32", run_dot4_f32},
    {"saxpy_f32", run_saxpy_f32}, {"horner_f64", run_horner_f64},
};
#define NKERNELS (sizeof kernels / sizeof kernels[0])

static void init_data(void)
{
    uint32_t x = 12345;
    for (int i = 0; i < N; i++) {
        x = x * 1103515245u + 12345u;
        ua[i] = x;
        ub[i] = (x >> 20) | 1;
        ia[i] = (int32_t)((x >> 8) & 0xfff8) | (i & 4); /* branchy: period 8 */
        fx[i] = (float)(i % 17) * 0.25f;
        fy[i] = 1.0f;
        fa[i] = (float)(i % 13) * 0.5f;
        fb[i] = (float)(i % 7) * 0.125f;
        da[i] = 1.0 + (double)(i % 29) * 1e-3;
        bytes[i] = (uint8_t)(i * 7 % 251);
    }
}

/* TSC ticks per core cycle: the fastest of three chains of 4000 dependent
 * imuls (3 cycles each; about 4 us a chain). */
static double tsc_per_cycle(void)
{
    double best = 0;
    for (int k = 0; k < 3; k++) {
        uint64_t r = 3, t0 = __rdtsc();
        for (int i = 0; i < 100; i++)
            __asm__ volatile(".rept 40\n\timul %0, %0\n\t.endr" : "+r"(r));
        uint64_t t1 = __rdtsc();
        double v = (double)(t1 - t0) / (3 * 4000.0);
        best = k == 0 || v < best ? v : best;
    }
    return best;
}

/* Context switches of this thread so far, voluntary or not. */
static long switches(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_THREAD, &ru) != 0)
        return 0;
    return ru.ru_nvcsw + ru.ru_nivcsw;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int measure(int passes, const char *out_path)
{
    enum { MAX_PASSES = 200 };
    if (passes < 1 || passes > MAX_PASSES)
        return 2;
    static double cyc[NKERNELS][MAX_PASSES], best_ratio[NKERNELS];
    int kept[NKERNELS] = {0}, tries[NKERNELS] = {0};
    for (size_t k = 0; k < NKERNELS; k++)
        kernels[k].run(); /* warm the caches and the predictors */
    /* Passes over all kernels, so that one kernel's samples are spread in
     * time (a neighbour's burst slows a few of each, not all of one); a
     * sample whose clock moved or that was switched out is tried again, at
     * most four times. */
    for (int p = 0; p < passes; p++)
        for (size_t k = 0; k < NKERNELS; k++)
            for (int attempt = 0; attempt < 5; attempt++) {
                tries[k]++;
                long s0 = switches();
                double r0 = tsc_per_cycle();
                uint64_t t0 = __rdtsc();
                kernels[k].run();
                uint64_t t1 = __rdtsc();
                double r1 = tsc_per_cycle();
                if ((r0 > r1 ? r0 - r1 : r1 - r0) > 0.015 * (r0 < r1 ? r0 : r1) ||
                    switches() != s0)
                    continue;
                double c = (double)(t1 - t0) / ((r0 + r1) / 2);
                if (kept[k] == 0 || c < cyc[k][0]) {
                    best_ratio[k] = (r0 + r1) / 2;
                    cyc[k][kept[k]] = cyc[k][0];
                    cyc[k][0] = c;
                } else {
                    cyc[k][kept[k]] = c;
                }
                kept[k]++;
                break;
            }
    FILE *fp = fopen(out_path, "w");
    if (!fp) {
        perror(out_path);
        return 1;
    }
    for (size_t k = 0; k < NKERNELS; k++) {
        if (kept[k] == 0) {
            fprintf(fp, "%s 0 %d nan nan nan\n", kernels[k].name, tries[k]);
            continue;
        }
        double best = cyc[k][0];
        qsort(cyc[k], (size_t)kept[k], sizeof(double), by_value);
        fprintf(fp, "%s %d %d %.1f %.1f %.5f\n", kernels[k].name, kept[k], tries[k], best,
                cyc[k][kept[k] / 2], best_ratio[k]);
    }
    return fclose(fp) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "list") == 0) {
        for (size_t k = 0; k < NKERNELS; k++)
            printf("%s\n", kernels[k].name);
        return 0;
    }
    init_data();
    if (argc == 2 && strcmp(argv[1], "count") == 0) {
        for (size_t k = 0; k < NKERNELS; k++)
            kernels[k].run();
        return 0;
    }
    if (argc == 4 && strcmp(argv[1], "measure") == 0)
        return measure(atoi(argv[2]), argv[3]);
    fprintf(stderr, "usage: kernels count | kernels measure PASSES OUT | kernels list\n");
    return 2;
}
