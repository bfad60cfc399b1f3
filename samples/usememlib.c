/* samples/usememlib.c — a program whose memory-bound loop is in its shared
 * library libmtmem.so (memlib.c; tests/libs_pass2.sh): `rounds` rounds of
 * its own work over the ring's first entries, each followed by a chase in
 * the library (a call through the PLT).  Prints the sum and exits with a
 * status of its own, so that a copy that differs shows.
 *
 *   usememlib [ENTRIES [STEPS [ROUNDS]]]   (ENTRIES a power of two) */
#include <stdio.h>
#include <stdlib.h>

void memlib_ring(long *next, long n);
long memlib_chase(const long *next, long steps);

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1L << 20, steps = argc > 2 ? atol(argv[2]) : 2 * n;
    long rounds = argc > 3 ? atol(argv[3]) : 1, own = n < 4096 ? n : 4096;
    long *next = n >= 2 && (n & (n - 1)) == 0 && rounds > 0 ? malloc((size_t)n * sizeof *next)
                                                            : NULL;
    if (!next)
        return 1;
    memlib_ring(next, n);
    long sum = 0;
    for (long r = 0; r < rounds; r++) {
        for (long i = 0; i < own; i++)
            sum += next[i] ^ r;
        sum += memlib_chase(next, steps / rounds);
    }
    printf("chase %ld\n", sum);
    free(next);
    return 5;
}
