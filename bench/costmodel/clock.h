/* bench/costmodel/clock.h — the TSC-to-core-clock ratio of the bench's
 * kernel programs (kernels.c, membound.c): the same measurement as
 * `mtool calibrate`'s reference, in a header both programs include. */
#ifndef MTOOL_BENCH_CLOCK_H
#define MTOOL_BENCH_CLOCK_H

#include <stdint.h>
#include <x86intrin.h>

/* TSC ticks per core cycle: the fastest of five chains of 100 x 134
 * dependent imuls (three cycles each, on every x86-64 core of the last
 * decade: `mtool calibrate`'s reference): a neighbour's integer work on the
 * physical core delays some chains, which would read as a slower clock
 * (median 7% on a Zen 5).  Not `add $1,%reg`: Intel's Golden Cove family
 * folds immediate adds at rename (0.2-0.5 cycles each on the Xeon family 6
 * model 207), which made every kernel read 2-5x too slow there. */
static inline double tsc_per_cycle(void)
{
    double best = 0;
    for (int k = 0; k < 5; k++) {
        const long iters = 134;
        uint64_t t0 = __rdtsc();
        long r = 1;
        for (long i = 0; i < iters; i++)
            __asm__ volatile(".rept 100\n\timul %0, %0\n\t.endr" : "+r"(r));
        uint64_t t1 = __rdtsc();
        __asm__ volatile("" : : "r"(r)); /* the chain is used */
        double v = (double)(t1 - t0) / (300.0 * (double)iters);
        best = k == 0 || v < best ? v : best;
    }
    return best;
}

#endif
