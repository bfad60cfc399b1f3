/* samples/usememouter.c — calls into libraries across objects
 * (tests/libs_pass2.sh): libmtmemouter.so's rounds, which call libmtmem.so's
 * chase through that library's PLT (memouter.c), then `rounds` chases called
 * through a function pointer from this program's own loop.  With PASSES,
 * libmtmemouter.so's memouter_passes makes the rounds PASSES times, each
 * a call through that library's PLT into itself.  Prints the sums and exits
 * with a status of its own, so that a copy that differs shows.
 *
 *   usememouter [ENTRIES [STEPS [ROUNDS [PASSES]]]]   (ENTRIES a power of two) */
#include <stdio.h>
#include <stdlib.h>

void memlib_ring(long *next, long n);
long memlib_chase(const long *next, long steps);
long memouter_rounds(const long *next, long n, long steps, long rounds);
long memouter_passes(const long *next, long n, long steps, long rounds, long passes);

/* volatile: the compiler cannot call memlib_chase directly */
long (*volatile chase)(const long *, long) = memlib_chase;

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1L << 20, steps = argc > 2 ? atol(argv[2]) : 2 * n;
    long rounds = argc > 3 ? atol(argv[3]) : 1, passes = argc > 4 ? atol(argv[4]) : 0;
    long *next = n >= 2 && (n & (n - 1)) == 0 && rounds > 0 ? malloc((size_t)n * sizeof *next)
                                                            : NULL;
    if (!next)
        return 1;
    memlib_ring(next, n);
    long outer = passes > 0 ? memouter_passes(next, n, steps, rounds, passes)
                            : memouter_rounds(next, n, steps, rounds), sum = 0;
    for (long r = 0; r < rounds; r++)
        sum += chase(next, steps / rounds) ^ r;
    printf("outer %ld pointer %ld\n", outer, sum);
    free(next);
    return 6;
}
