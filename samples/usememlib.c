/* samples/usememlib.c — a program whose memory-bound loop is in its shared
 * library libmtmem.so (memlib.c; tests/libs_pass2.sh): prints the chase's
 * sum and exits with a status of its own, so that a copy that differs shows. */
#include <stdio.h>
#include <stdlib.h>

void memlib_ring(long *next, long n);
long memlib_chase(const long *next, long steps);

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1L << 20, steps = argc > 2 ? atol(argv[2]) : 2 * n;
    long *next = n >= 2 && (n & (n - 1)) == 0 ? malloc((size_t)n * sizeof *next) : NULL;
    if (!next)
        return 1; /* n: a power of two */
    memlib_ring(next, n);
    printf("chase %ld\n", memlib_chase(next, steps));
    free(next);
    return 5;
}
