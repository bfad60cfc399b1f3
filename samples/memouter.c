/* samples/memouter.c — a shared library that calls another one
 * (libmtmemouter.so, needing libmtmem.so: memlib.c; tests/libs_pass2.sh):
 * `rounds` rounds of its own work over the ring's first entries, each
 * followed by a chase in libmtmem.so, a call through this library's own
 * PLT: known work for its loop when both libraries are counted; and
 * `passes` passes of those rounds, each a call of this library's own
 * exported memouter_rounds, which -fPIC code makes through its own PLT
 * (interposable): the loader binds it to this library's procedure, so
 * pass 2 takes it as a direct call. */
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

long memouter_passes(const long *next, long n, long steps, long rounds, long passes)
{
    long sum = 0;
    for (long p = 0; p < passes; p++)
        sum += memouter_rounds(next, n, steps / passes, rounds) ^ p;
    return sum;
}
