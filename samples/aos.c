/* aos.c — an array of 64-byte structs of which a loop reads one 8-byte
 * field, for the cache simulator's samples (docs/SIMULATOR.md, "Samples of
 * known behaviour").  8192 records (512 KiB, more than the simulated D1 of 8
 * KiB and LL of 64 KiB hold), one per line:
 *
 *   set_keys   writes each record's key: one cold miss per record
 *   sum_keys   sums the keys 4 times over: one miss per record read,
 *              capacity; a line leaves D1 with 8 of its 64 bytes used:
 *              spatial use 12.5% */
#include <stdio.h>

#define NOINLINE __attribute__((noinline))
/* Memory may change between rounds: every round reads the array again (GCC
 * 12 -O2 otherwise vectorizes the outer loop, two rounds per load). */
#define ROUND_BARRIER() __asm__ __volatile__("" ::: "memory")

enum { RECORDS = 8192, ROUNDS = 4 };

struct record {
    _Alignas(64) long key;
    double weight, price; /* never touched: the bytes a struct of arrays would save */
    char name[40];
};

struct record records[RECORDS];
volatile long sink;

NOINLINE static void set_keys(void)
{
    for (long i = 0; i < RECORDS; i++)
        records[i].key = i;
}

NOINLINE static long sum_keys(void)
{
    long sum = 0;
    for (int r = 0; r < ROUNDS; r++) {
        for (int i = 0; i < RECORDS; i++)
            sum += records[i].key;
        ROUND_BARRIER();
    }
    return sum;
}

int main(void)
{
    set_keys();
    sink = sum_keys();
    printf("%ld\n", sink);
    return 0;
}
