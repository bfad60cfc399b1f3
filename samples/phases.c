/* phases.c — a large loop-free procedure, for pass 2's regions (MTOOL:
 * "large loop-free procedures partitioned into several m-objects").
 * `phases` runs two phases of straight-line code, unrolled by macros:
 *
 *   memory   2048 dependent loads through a random cyclic permutation of a
 *            4 MB table: past L2 (1 MB), every load waits for L3, so its
 *            measured time is far above its prediction (a table the size of
 *            L3 or more makes the run time vary by 20% with the physical
 *            pages a run gets: too much for make bench's perturbation);
 *   compute  2048 steps of a multiply-add chain on a 1 KB table: every load
 *            an L1 hit, measured close to predicted.
 *
 * A call to a tiny constant-time `checkpoint` after every 64 steps ends a
 * block there: those blocks are where the procedure can be cut into
 * regions.  Timed as a whole, `phases` only says that it misses the cache;
 * its regions must say that the memory phase does and the compute phase
 * does not.
 *
 * usage: phases [CALLS [LOG2_WORDS]]   (defaults 16000 and 19: 4 MB) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

volatile long marks;

/* Loop-free, call-free, the same time on every call (MTOOL's constant-time
 * leaf: the regions that share it stay estimable). */
NOINLINE void checkpoint(long v)
{
    marks += v & 1;
}

#define LOAD1 x = t[x];
#define LOAD8 LOAD1 LOAD1 LOAD1 LOAD1 LOAD1 LOAD1 LOAD1 LOAD1
#define LOADS LOAD8 LOAD8 LOAD8 LOAD8 LOAD8 LOAD8 LOAD8 LOAD8 checkpoint(x);
#define LOADS4 LOADS LOADS LOADS LOADS

#define STEP1(k) y = y * c[k] + c[(k) + 64];
#define STEP8(k) STEP1(k) STEP1(k + 1) STEP1(k + 2) STEP1(k + 3) STEP1(k + 4) STEP1(k + 5) \
    STEP1(k + 6) STEP1(k + 7)
#define STEPS STEP8(0) STEP8(8) STEP8(16) STEP8(24) STEP8(32) STEP8(40) STEP8(48) STEP8(56) \
    checkpoint((long)y);
#define STEPS4 STEPS STEPS STEPS STEPS

/* One call: the memory phase, then the compute phase; x is where the walk
 * through t goes on from, y the chain's value. */
NOINLINE long phases(const long *t, long x, const double *c, double *y_io)
{
    /* memory phase: 32 blocks of 64 dependent scattered loads */
    LOADS4 LOADS4 LOADS4 LOADS4
    LOADS4 LOADS4 LOADS4 LOADS4
    /* compute phase: 32 blocks of 64 multiply-adds on L1-resident coefficients */
    double y = *y_io;
    STEPS4 STEPS4 STEPS4 STEPS4
    STEPS4 STEPS4 STEPS4 STEPS4
    *y_io = y;
    return x;
}

int main(int argc, char **argv)
{
    long calls = argc > 1 ? atol(argv[1]) : 16000;
    int log2_words = argc > 2 ? atoi(argv[2]) : 19;
    if (calls < 1 || log2_words < 4 || log2_words > 30)
        return 2;
    long n = 1L << log2_words;
    long *t = malloc((size_t)n * sizeof *t);
    static double c[128];
    if (!t)
        return 1;
    /* Sattolo's algorithm: one cycle through every word, in random order. */
    for (long i = 0; i < n; i++)
        t[i] = i;
    uint64_t rng = 88172645463325252ull;
    for (long i = n - 1; i > 0; i--) {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        long j = (long)(rng % (uint64_t)i), v = t[i];
        t[i] = t[j];
        t[j] = v;
    }
    for (int k = 0; k < 64; k++) {
        c[k] = 0.99 - k / 6400.0;
        c[k + 64] = 1.0 / (k + 100);
    }
    long x = 0;
    double y = 1;
    for (long i = 0; i < calls; i++)
        x = phases(t, x, c, &y);
    printf("phases: x %ld y %.6f marks %ld\n", x, y, marks);
    free(t);
    return 0;
}
