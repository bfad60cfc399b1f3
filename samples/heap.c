/* heap.c — two heap blocks from two allocation sites, the second at the
 * address the first was freed from, for the simulator's data objects
 * (docs/SIMULATOR.md, "Data objects").  Blocks of 32 KiB (512 lines of 64
 * bytes: four times the simulated D1 of 8 KiB, half its LL of 64 KiB):
 *
 *   fill_first    mallocs block A, writes its 4096 longs, then reads them
 *                 ROUNDS_A times: 4096 * (1 + ROUNDS_A) references, one D1
 *                 miss per line each pass: 512 * (1 + ROUNDS_A); then frees A
 *   fill_second   mallocs block B of the same size (glibc gives A's chunk
 *                 back: the program says whether it did), writes it and
 *                 reads it once: 8192 references, 1024 D1 misses, all of them
 *                 B's although the addresses were A's
 *
 * Prints "reused" when B is at A's address. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))
#define ROUND_BARRIER() __asm__ __volatile__("" ::: "memory")

enum { LONGS = 4096, ROUNDS_A = 4 };

volatile long sink;

NOINLINE static long walk(long *block, int rounds)
{
    long sum = 0;
    for (long i = 0; i < LONGS; i++)
        block[i] = i;
    ROUND_BARRIER();
    for (int r = 0; r < rounds; r++) {
        for (long i = 0; i < LONGS; i++)
            sum += block[i];
        ROUND_BARRIER();
    }
    return sum;
}

/* The block's address, as a number: the block is gone. */
NOINLINE static uintptr_t fill_first(void)
{
    long *a = malloc(LONGS * sizeof *a);
    if (!a)
        exit(1);
    sink = walk(a, ROUNDS_A);
    uintptr_t at = (uintptr_t)a; /* the number, kept before the block goes */
    free(a);
    return at;
}

NOINLINE static uintptr_t fill_second(void)
{
    long *b = malloc(LONGS * sizeof *b);
    if (!b)
        exit(1);
    sink = walk(b, 1);
    uintptr_t at = (uintptr_t)b; /* the number, kept before the block goes */
    free(b);
    return at;
}

int main(void)
{
    uintptr_t a = fill_first();
    uintptr_t b = fill_second();
    printf("%s\n", a == b ? "reused" : "not reused");
    return 0;
}
