/* timer_pair.c — the cost of one pass-2 timer start/stop pair, for
 * bench/timers.sh.  `timer_pair [NAME...]` (default: all) prints, per line,
 * "NAME TICKS_PER_ITERATION" (minimum of 15 repetitions of N iterations, TSC
 * ticks; the repetitions of the runs asked for alternate):
 *   call      a loop calling `timed`, a small procedure: run natively, with
 *             block counters, and with `timed` also timed, the difference
 *             between the last two is one start/stop pair;
 *   rdtsc2    two dependent-free `rdtsc` per iteration: the floor of a pair
 *             of plain reads (what the runtime uses);
 *   lfence2   two `lfence; rdtsc`: the floor of serialized reads;
 *   cycle     ticks per core cycle in this very run, to convert ticks to
 *             cycles: a chain of dependent `imul %reg,%reg` (3 cycles each on
 *             every x86-64 core of the last ten years);
 *   cycleadd  the same from a chain of dependent `add %reg,%reg` (1 cycle),
 *             to check the first.  Not `add $1,%reg`: Intel's Golden Cove
 *             family folds immediate adds at rename (a dependent chain of
 *             them runs 2 to 6 per cycle), which made this clock read 0.2-0.3
 *             ticks per cycle on a Xeon family 6 model 207 instead of about
 *             0.76. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <x86intrin.h>

#define NOINLINE __attribute__((noinline))
#ifndef N
#define N 2000000L
#endif
#ifndef REPS
#define REPS 15
#endif

volatile long sink;

NOINLINE void timed(long i)
{
    sink += i; /* an entry block long enough for the entry jump */
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double minimum(double *v)
{
    qsort(v, REPS, sizeof *v, cmp_double);
    return v[0];
}

NOINLINE static double calls(void)
{
    unsigned long long t0 = __rdtsc();
    for (long i = 0; i < N; i++)
        timed(i);
    return (double)(__rdtsc() - t0) / N;
}

NOINLINE static double rdtsc2(void)
{
    unsigned long long t0 = __rdtsc(), s = 0;
    for (long i = 0; i < N; i++) {
        s += __rdtsc();
        s += __rdtsc();
    }
    sink = (long)s;
    return (double)(__rdtsc() - t0) / N;
}

NOINLINE static double lfence2(void)
{
    unsigned long long t0 = __rdtsc(), s = 0;
    for (long i = 0; i < N; i++) {
        _mm_lfence();
        s += __rdtsc();
        _mm_lfence();
        s += __rdtsc();
    }
    sink = (long)s;
    return (double)(__rdtsc() - t0) / N;
}

/* Eight dependent instructions per iteration (the loop's own add and
 * branch run beside the chain): ticks per iteration / (8 x cycles each). */
NOINLINE static double cycle(void)
{
    unsigned long long t0 = __rdtsc();
    long x = 3;
    for (long i = 0; i < N; i++)
        __asm__ volatile("imul %0, %0\n\timul %0, %0\n\timul %0, %0\n\timul %0, %0\n\t"
                         "imul %0, %0\n\timul %0, %0\n\timul %0, %0\n\timul %0, %0"
                         : "+r"(x));
    sink = x;
    return (double)(__rdtsc() - t0) / (8.0 * 3.0 * N);
}

NOINLINE static double cycleadd(void)
{
    unsigned long long t0 = __rdtsc();
    long x = 1;
    for (long i = 0; i < N; i++)
        __asm__ volatile("add %0, %0\n\tadd %0, %0\n\tadd %0, %0\n\tadd %0, %0\n\t"
                         "add %0, %0\n\tadd %0, %0\n\tadd %0, %0\n\tadd %0, %0"
                         : "+r"(x));
    sink = x;
    return (double)(__rdtsc() - t0) / (8.0 * N);
}

int main(int argc, char **argv)
{
    static const struct { const char *name; double (*fn)(void); } runs[] = {
        {"call", calls}, {"rdtsc2", rdtsc2}, {"lfence2", lfence2}, {"cycle", cycle},
        {"cycleadd", cycleadd}};
    enum { NRUNS = sizeof runs / sizeof *runs };
    double v[NRUNS][REPS];
    bool on[NRUNS];
    for (size_t r = 0; r < NRUNS; r++) {
        on[r] = argc <= 1;
        for (int a = 1; a < argc; a++)
            on[r] |= strcmp(argv[a], runs[r].name) == 0;
    }
    /* Repetitions alternate between the runs asked for, so the two clock
     * chains see the same core frequency (it drifts by several percent). */
    for (int k = 0; k < REPS; k++)
        for (size_t r = 0; r < NRUNS; r++)
            if (on[r])
                v[r][k] = runs[r].fn();
    for (size_t r = 0; r < NRUNS; r++)
        if (on[r])
            printf("%s %.3f\n", runs[r].name, minimum(v[r]));
    return 0;
}
