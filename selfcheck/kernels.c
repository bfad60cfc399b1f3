/* selfcheck/kernels.c — the compute-bound kernels the cost model checks
 * itself on (run/selfcheck.c, at the end of every calibration).
 *
 * Built at mtool's build time with the system cc at fixed flags (-O2, no
 * -march: the same code on every machine; selfcheck/Makefile) and embedded
 * in mtool as data; the check writes it to a temporary file, counts its
 * blocks with mtool's own pass 1 and times it uninstrumented:
 *
 *   kernels count               call every kernel once (the pass-1 run)
 *   kernels measure PASSES OUT [ALU FRONT [WAIT]]
 *                               PASSES passes over the kernels, one timed call of
 *                               each per pass (and more while quiet samples
 *                               are missing); OUT gets a line per kernel:
 *                               "NAME KEPT TRIES BEST_CYCLES MEDIAN_CYCLES RATIO QUIET"
 *                               (core cycles per call: the fastest quiet sample,
 *                               else the fastest, and the median kept sample;
 *                               TSC ticks per core cycle during the first;
 *                               quiet samples), then "#probe QMIN QUIET_SHARE
 *                               EXTRA_PASSES FMIN"; ALU and FRONT: the probes'
 *                               quiet readings calibrate measured (cycles an
 *                               add, cycles a one-branch loop iteration);
 *                               WAIT: the longest the extra samples wait
 *                               for quiet moments, in all (3 s)
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
 * same physical core only ever slow a sample down, so the fastest sample is
 * the kernel alone, and the fastest among the quiet ones (alu_probe,
 * front_probe) when a neighbour kept the core busy for most of the run. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <x86intrin.h>

/* Each kernel starts a 64-byte line: its loops sit where they sit whatever
 * comes before it in the program (a kernel's speed depends on how its loops
 * fall in lines; the front-end rules of the model look at that too). */
#if defined(__clang__)
#define KERNEL __attribute__((noinline, used, aligned(64)))
#else
#define KERNEL __attribute__((noinline, noclone, used, aligned(64)))
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

/* The probes' quiet readings are the figures calibrate measured (argv),
 * on long loops, and a probe's own fixed cost (the two rdtsc, the loop's
 * exit) reads as a slower core in a short one: so each probe runs about
 * 25000 cycles.  On the AMD EPYC Zen 3 (family 25 model 1), loaded 2-vCPU
 * guest, 3000 readings each: the one-branch loop of 2000 iterations 1.021
 * cycles in the median reading against 1.003 for 20000 (calibrate's
 * figure 1.003), 10000 adds 0.2552 cycles each against 0.2520 for 100000
 * (calibrate's 0.251): half of the 4% a quiet sample may be off its
 * floor went to the probes' own cost. */

/* Core cycles per add of ten independent register-register add chains,
 * 100000 adds.  It runs at the core's ALU throughput when this thread
 * has the physical core to itself, and slower while a thread on its SMT
 * sibling (another tenant's vCPU) takes ALU slots, which the imul chain of
 * the clock reference, a latency, does not notice. */
static double alu_probe(double ratio)
{
    uint64_t t0 = __rdtsc();
    for (int i = 0; i < 250; i++)
        __asm__ volatile(".rept 40\n\tadd %%r8,%%r8\n\tadd %%r9,%%r9\n\tadd %%r10,%%r10\n\t"
                         "add %%r11,%%r11\n\tadd %%r12,%%r12\n\tadd %%r13,%%r13\n\t"
                         "add %%r14,%%r14\n\tadd %%r15,%%r15\n\tadd %%rsi,%%rsi\n\t"
                         "add %%rbx,%%rbx\n\t.endr"
                         ::: "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "rsi", "rbx");
    return (double)(__rdtsc() - t0) / ratio / 100000.0;
}

/* Core cycles an iteration of the one-branch loop, 20000 iterations: one
 * a cycle on every x86-64 core measured when this thread has the core's
 * front end to itself; a thread on the SMT sibling (another process
 * compiling) makes it 2.0-2.2 on the AMD EPYC Zen 3 (family 25 model 1),
 * and slows a loop-bound kernel by up to 2x (saxpy_f32: 4.0 to 8.7 million
 * cycles a call in checks under a load of 5), which the ALU probe, whose
 * adds the sibling leaves room for, saw as quiet. */
static double front_probe(double ratio)
{
    long n = 20000;
    uint64_t t0 = __rdtsc();
    __asm__ volatile("jmp 2f\n\t.p2align 6\n2:\n\tdec %0\n\tjnz 2b" : "+r"(n) : : "cc");
    return (double)(__rdtsc() - t0) / ratio / 20000.0;
}

enum { MAX_SAMPLES = 400 };

typedef struct {
    double cycles[MAX_SAMPLES], probe[MAX_SAMPLES], front[MAX_SAMPLES], ratio[MAX_SAMPLES];
    int kept, tries;
} samples;

/* One sample of kernel k, tried again (at most four times) while the
 * clock moved or the thread was switched out meanwhile. */
static void sample(size_t k, samples *s)
{
    for (int attempt = 0; attempt < 5 && s->kept < MAX_SAMPLES; attempt++) {
        s->tries++;
        long s0 = switches();
        double r0 = tsc_per_cycle(), q0 = alu_probe(r0), f0 = front_probe(r0);
        uint64_t t0 = __rdtsc();
        kernels[k].run();
        uint64_t t1 = __rdtsc();
        double r1 = tsc_per_cycle(), q1 = alu_probe(r1), f1 = front_probe(r1);
        if ((r0 > r1 ? r0 - r1 : r1 - r0) > 0.015 * (r0 < r1 ? r0 : r1) || switches() != s0)
            continue;
        s->ratio[s->kept] = (r0 + r1) / 2;
        s->cycles[s->kept] = (double)(t1 - t0) / s->ratio[s->kept];
        s->probe[s->kept] = q0 > q1 ? q0 : q1;
        s->front[s->kept] = f0 > f1 ? f0 : f1;
        s->kept++;
        return;
    }
}

/* A sample is quiet when both probes on either side of it ran within 4%
 * of their fastest of the whole run: the physical core was not shared
 * then (a neighbour may still come and go in the middle). */
#define QUIET 1.04
#define MIN_QUIET 3

typedef struct {
    double alu, front; /* the fastest probes of the run */
} probe_floor;

static int is_quiet(double alu, double front, probe_floor f)
{
    return alu <= QUIET * f.alu && front <= QUIET * f.front;
}

static int quiet_samples(const samples *s, probe_floor f)
{
    int n = 0;
    for (int i = 0; i < s->kept; i++)
        n += is_quiet(s->probe[i], s->front[i], f);
    return n;
}

static double now_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Waits, polling every 2 ms until `deadline` (CLOCK_MONOTONIC seconds),
 * until both probes are quiet: the extra samples are then taken when a
 * neighbour has left the core rather than whenever. */
static void wait_quiet(probe_floor f, double deadline)
{
    const struct timespec pause = {0, 2000000L};
    while (now_seconds() < deadline) {
        double r = tsc_per_cycle();
        if (is_quiet(alu_probe(r), front_probe(r), f))
            return;
        nanosleep(&pause, NULL);
    }
}

/* floor: the probes' readings with the core to itself as the calibration
 * measured them (0: not known): a check run while a neighbour kept the
 * core busy throughout never sees them itself. */
static int measure(int passes, const char *out_path, probe_floor floor, double wait_seconds)
{
    if (passes < 1 || passes > MAX_SAMPLES / 2)
        return 2;
    static samples smp[NKERNELS];
    for (size_t k = 0; k < NKERNELS; k++)
        kernels[k].run(); /* warm the caches and the predictors */
    /* Passes over all kernels, so that one kernel's samples are spread in
     * time (a neighbour's burst slows a few of each, not all of one); then,
     * for three times as many passes at most, each when both probes are
     * quiet (waiting wait_seconds in all at most), more samples of the kernels with
     * fewer than three quiet ones (a neighbour busy for seconds). */
    for (int p = 0; p < passes; p++)
        for (size_t k = 0; k < NKERNELS; k++)
            sample(k, &smp[k]);
    probe_floor f = {0, 0};
    for (size_t k = 0; k < NKERNELS; k++)
        for (int i = 0; i < smp[k].kept; i++) {
            f.alu = f.alu == 0 || smp[k].probe[i] < f.alu ? smp[k].probe[i] : f.alu;
            f.front = f.front == 0 || smp[k].front[i] < f.front ? smp[k].front[i] : f.front;
        }
    if (floor.alu > 0 && floor.alu < f.alu)
        f.alu = floor.alu;
    if (floor.front > 0 && floor.front < f.front)
        f.front = floor.front;
    int extra = 0;
    double deadline = now_seconds() + wait_seconds;
    for (; extra < 3 * passes; extra++) {
        int more = 0;
        wait_quiet(f, deadline);
        for (size_t k = 0; k < NKERNELS; k++)
            if (quiet_samples(&smp[k], f) < MIN_QUIET) {
                sample(k, &smp[k]);
                more = 1;
            }
        if (!more)
            break;
    }
    FILE *fp = fopen(out_path, "w");
    if (!fp) {
        perror(out_path);
        return 1;
    }
    /* A kernel's figure: its fastest quiet sample, else its fastest. */
    int nquiet = 0, nall = 0;
    for (size_t k = 0; k < NKERNELS; k++) {
        samples *s = &smp[k];
        int best = -1, quiet = quiet_samples(s, f);
        for (int i = 0; i < s->kept; i++)
            if ((!quiet || is_quiet(s->probe[i], s->front[i], f)) &&
                (best < 0 || s->cycles[i] < s->cycles[best]))
                best = i;
        nquiet += quiet;
        nall += s->kept;
        if (best < 0) {
            fprintf(fp, "%s 0 %d nan nan nan 0\n", kernels[k].name, s->tries);
            continue;
        }
        double fastest = s->cycles[best], ratio = s->ratio[best];
        qsort(s->cycles, (size_t)s->kept, sizeof(double), by_value);
        fprintf(fp, "%s %d %d %.1f %.1f %.5f %d\n", kernels[k].name, s->kept, s->tries, fastest,
                s->cycles[s->kept / 2], ratio, quiet);
    }
    /* The probes: the ALU's fastest (cycles per add), the share of the
     * kept samples that were quiet, the extra passes made, the front
     * end's fastest (cycles per iteration). */
    fprintf(fp, "#probe %.4f %.3f %d %.4f\n", f.alu, nall ? (double)nquiet / nall : 0, extra,
            f.front);
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
    if (argc >= 4 && argc <= 7 && argc != 5 && strcmp(argv[1], "measure") == 0) {
        probe_floor floor = {argc >= 6 ? atof(argv[4]) : 0, argc >= 6 ? atof(argv[5]) : 0};
        return measure(atoi(argv[2]), argv[3], floor, argc == 7 ? atof(argv[6]) : 3.0);
    }
    fprintf(stderr, "usage: kernels count | kernels measure PASSES OUT [ALU_FLOOR FRONT_FLOOR "
                    "[WAIT_SECONDS]] | kernels list\n");
    return 2;
}
