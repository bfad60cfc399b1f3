/* bench/costmodel/membound.c — memory-bound kernels for the cost-model
 * benchmark: the model assumes every access hits L1, so its prediction must
 * fall far below the measured time here.
 *
 *   membound NAME|all SAMPLES   prints, per kernel, "NAME calls kept tries
 *                               median p25 p75" (core cycles per call)
 *
 *   chase      random pointer chasing around one cycle over 256 MiB
 *   stride     a walk touching one word per 4 KiB page over 256 MiB
 *   matmul_col matrix multiply reading B down its columns (n = 1024) */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <x86intrin.h>

#include "clock.h"

#define NOINLINE __attribute__((noinline))
#define CHASE_N (32u << 20) /* 32 Mi pointers of 8 bytes: 256 MiB */
#define MAT_N 1024

static uint64_t *chase_next;
static double *ma, *mb, *mc;
static volatile uint64_t sink;

NOINLINE uint64_t k_chase(const uint64_t *next, long hops)
{
    uint64_t i = 0;
    for (long k = 0; k < hops; k++)
        i = next[i];
    return i;
}

NOINLINE uint64_t k_stride(const uint64_t *a, size_t n, size_t stride)
{
    uint64_t s = 0;
    for (size_t i = 0; i < n; i += stride)
        s += a[i];
    return s;
}

/* c[i][j] += a[i][k] * b[k][j] with k innermost: b is read down a column. */
NOINLINE void k_matmul_col(double *c, const double *a, const double *b, int n, int rows)
{
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < n; j++) {
            double s = c[i * n + j];
            for (int k = 0; k < n; k++)
                s += a[i * n + k] * b[k * n + j];
            c[i * n + j] = s;
        }
}

static void run_chase(void) { sink = k_chase(chase_next, 1 << 18); }
static void run_stride(void) { sink = k_stride(chase_next, CHASE_N, 512); }
static void run_matmul_col(void) { k_matmul_col(mc, ma, mb, MAT_N, 4); }

static const struct {
    const char *name;
    void (*run)(void);
} kernels[] = {{"chase", run_chase}, {"stride", run_stride}, {"matmul_col", run_matmul_col}};

static void init(void)
{
    chase_next = malloc(sizeof(uint64_t) * CHASE_N);
    for (uint32_t i = 0; i < CHASE_N; i++)
        chase_next[i] = i;
    uint64_t x = 88172645463325252ull;
    for (uint32_t i = CHASE_N - 1; i > 0; i--) { /* Sattolo: one cycle through all */
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint32_t j = (uint32_t)(x % i);
        uint64_t t = chase_next[i];
        chase_next[i] = chase_next[j];
        chase_next[j] = t;
    }
    ma = malloc(sizeof(double) * MAT_N * MAT_N);
    mb = malloc(sizeof(double) * MAT_N * MAT_N);
    mc = calloc((size_t)MAT_N * MAT_N, sizeof(double));
    for (int i = 0; i < MAT_N * MAT_N; i++)
        ma[i] = mb[i] = (double)(i % 7);
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One call per sample (each is long); ratio bracketing as in kernels.c but
 * with a 5% tolerance, since a sample lasts long enough for the clock to
 * move a little. */
static void measure(int k, int samples)
{
    kernels[k].run();
    double *cyc = malloc(sizeof(double) * (size_t)samples);
    int kept = 0, tries = 0;
    while (kept < samples && tries < 10 * samples) {
        tries++;
        double r0 = tsc_per_cycle();
        uint64_t t0 = __rdtsc();
        kernels[k].run();
        uint64_t t1 = __rdtsc();
        double r1 = tsc_per_cycle();
        /* after 2 x samples tries, take what comes: a few percent of clock
         * error does not matter against the memory overhead measured here */
        if (fabs(r0 - r1) > 0.05 * (r0 < r1 ? r0 : r1) && tries <= 2 * samples)
            continue;
        cyc[kept++] = (double)(t1 - t0) / ((r0 + r1) / 2);
    }
    if (kept == 0)
        printf("%s 1 0 %d nan nan nan\n", kernels[k].name, tries);
    else {
        qsort(cyc, (size_t)kept, sizeof *cyc, by_value);
        printf("%s 1 %d %d %.0f %.0f %.0f\n", kernels[k].name, kept, tries, cyc[kept / 2],
               cyc[kept / 4], cyc[(3 * kept) / 4]);
    }
    free(cyc);
}

int main(int argc, char **argv)
{
    if (argc != 3 || atoi(argv[2]) <= 0) {
        fprintf(stderr, "usage: membound NAME|all SAMPLES\n");
        return 2;
    }
    init();
    int found = 0;
    for (int k = 0; k < (int)(sizeof kernels / sizeof kernels[0]); k++)
        if (!strcmp(argv[1], "all") || !strcmp(argv[1], kernels[k].name)) {
            measure(k, atoi(argv[2]));
            found = 1;
        }
    if (!found) {
        fprintf(stderr, "membound: no kernel named '%s'\n", argv[1]);
        return 2;
    }
    return 0;
}
