/* samples/memlib.c — a shared library whose work is memory-bound (pass 2
 * through libraries, tests/libs_pass2.sh): a pointer chase around one
 * cycle of `n` scattered entries, each step a dependent load that misses the
 * caches once the ring is far larger than them. */

/* next[] becomes one cycle through all n entries (n a power of two): i
 * goes to a*i + c mod n, a full-period generator (c odd, a - 1 a multiple
 * of 4), so consecutive steps land far apart; writing it is one streaming
 * store per entry. */
static long successor(long i, long n)
{
    return (long)((6364136223846793005ul * (unsigned long)i + 1442695040888963407ul) &
                  (unsigned long)(n - 1));
}

/* Called through a pointer, once per entry: the library's calls through
 * pointers are recorded in pass 1 (tests/libs_pass2.sh: n calls from the
 * `call *` in memlib_ring to successor). */
long (*volatile memlib_successor)(long, long) = successor;

void memlib_ring(long *next, long n)
{
    for (long i = 0; i < n; i++)
        next[i] = memlib_successor(i, n);
}

/* Follows the ring for `steps` steps from entry 0; the sum of the entries
 * visited, which the caller prints. */
long memlib_chase(const long *next, long steps)
{
    long at = 0, sum = 0;
    for (long s = 0; s < steps; s++) {
        at = next[at];
        sum += at;
    }
    return sum;
}
