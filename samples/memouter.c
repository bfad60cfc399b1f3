/* samples/memouter.c — a shared library that calls another one
 * (libmtmemouter.so, needing libmtmem.so: memlib.c; tests/libs_pass2.sh):
 * `rounds` rounds of its own work over the ring's first entries, each
 * followed by a chase in libmtmem.so, a call through this library's own
 * PLT: known work for its loop when both libraries are counted. */
long memlib_chase(const long *next, long steps);

long memouter_rounds(const long *next, long n, long steps, long rounds)
{
    long own = n < 4096 ? n : 4096, sum = 0;
    for (long r = 0; r < rounds; r++) {
        for (long i = 0; i < own; i++)
            sum += next[i] ^ r;
        sum += memlib_chase(next, steps / rounds);
    }
    return sum;
}
