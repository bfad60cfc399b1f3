/* reuse.c — a small table read over and over, for the cache simulator's
 * samples (docs/SIMULATOR.md, "Samples of known behaviour").  256 ints (1
 * KiB, 16 lines: far less than the simulated D1 of 8 KiB):
 *
 *   fill_table  writes the table: 16 cold misses
 *   sum_table   reads it 4000 times: no miss; each of the 16 lines is
 *               reused at least 4000 times (once per pass, more when the
 *               compiler reads an int at a time) */
#include <stdio.h>

#define NOINLINE __attribute__((noinline))
/* Memory may change between rounds: every round reads the array again (GCC
 * 12 -O2 otherwise vectorizes the outer loop, two rounds per load). */
#define ROUND_BARRIER() __asm__ __volatile__("" ::: "memory")

enum { ENTRIES = 256, PASSES = 4000 };

_Alignas(64) int table[ENTRIES];
volatile long sink;

NOINLINE static void fill_table(void)
{
    for (int i = 0; i < ENTRIES; i++)
        table[i] = i;
}

NOINLINE static long sum_table(void)
{
    long sum = 0;
    for (int p = 0; p < PASSES; p++) {
        for (int i = 0; i < ENTRIES; i++)
            sum += table[i];
        ROUND_BARRIER();
    }
    return sum;
}

int main(void)
{
    fill_table();
    sink = sum_table();
    printf("%ld\n", sink);
    return 0;
}
