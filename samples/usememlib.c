/* samples/usememlib.c — a program whose memory-bound loop is in its shared
 * library libmtmem.so (memlib.c; tests/libs_pass2.sh): `rounds` rounds of
 * its own work over the ring's first entries, each followed by a chase in
 * the library (a call through the PLT).  Prints the sum and exits with a
 * status of its own, so that a copy that differs shows.
 *
 * With a fourth argument `lib` the library allocates the ring itself
 * (memlib_make) and walks a block and a frame of its own (memlib_scratch):
 * tests/trace_libs.sh names them by their sites in the library.  With
 * `statics` it only makes ROUNDS rounds over the library's own globals and
 * thread-locals (memlib_statics), which tests/trace_libs.sh names; with
 * `statics2` a second thread makes them again once this one has (its own
 * thread-locals).
 *
 *   usememlib [ENTRIES [STEPS [ROUNDS [lib|statics|statics2]]]]   (ENTRIES a power of two) */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void memlib_ring(long *next, long n);
long memlib_chase(const long *next, long steps);
long *memlib_make(long n);
long memlib_scratch(long n, long rounds);
long memlib_statics(long rounds);

static void *statics_again(void *rounds) { return (void *)memlib_statics((long)rounds); }

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1L << 20, steps = argc > 2 ? atol(argv[2]) : 2 * n;
    long rounds = argc > 3 ? atol(argv[3]) : 1, own = n < 4096 ? n : 4096;
    int in_lib = argc > 4 && !strcmp(argv[4], "lib");
    if (argc > 4 && !strncmp(argv[4], "statics", 7)) {
        long sum = memlib_statics(rounds);
        void *again = NULL;
        pthread_t t;
        if (!strcmp(argv[4], "statics2") &&
            (pthread_create(&t, NULL, statics_again, (void *)rounds) || pthread_join(t, &again)))
            return 1;
        printf("statics %ld %ld\n", sum, (long)again);
        return 5;
    }
    int valid = n >= 2 && (n & (n - 1)) == 0 && rounds > 0;
    long *next = !valid ? NULL : in_lib ? memlib_make(n) : malloc((size_t)n * sizeof *next);
    if (!next)
        return 1;
    if (!in_lib)
        memlib_ring(next, n);
    long sum = in_lib ? memlib_scratch(own, 4) : 0;
    for (long r = 0; r < rounds; r++) {
        for (long i = 0; i < own; i++)
            sum += next[i] ^ r;
        sum += memlib_chase(next, steps / rounds);
    }
    printf("chase %ld\n", sum);
    free(next);
    return 5;
}
