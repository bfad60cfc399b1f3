/* samples/memlib.c — a shared library whose work is memory-bound (pass 2
 * through libraries, tests/libs_pass2.sh): a pointer chase around one
 * cycle of `n` scattered entries, each step a dependent load that misses the
 * caches once the ring is far larger than them.  It can allocate the ring
 * itself, walk a block and a frame of its own (memlib_make,
 * memlib_scratch) and its own globals and thread-locals (memlib_statics):
 * data objects of a traced library, tests/trace_libs.sh. */
#include <stdlib.h>

/* calloc through its GOT slot (`call *calloc@GOTPCREL(%rip)`, as -fno-plt
 * builds call every function); malloc goes through the PLT. */
extern void *calloc(size_t nmemb, size_t size) __attribute__((noplt));

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

/* A ring of n entries allocated here (malloc, through the PLT) and made by
 * memlib_ring; the caller frees it. */
long *memlib_make(long n)
{
    long *next = malloc((size_t)n * sizeof *next);
    if (next)
        memlib_ring(next, n);
    return next;
}

/* `rounds` walks over a zeroed block of n entries (calloc, through its GOT
 * slot), each followed by 256 stores into an array of this procedure's own
 * frame and one load from it: n * rounds loads of the block, 257 * rounds
 * references to the frame's array (volatile: each one made). */
long memlib_scratch(long n, long rounds)
{
    volatile long frame[256];
    volatile long *block = calloc((size_t)n, sizeof *block);
    long sum = 0;
    if (!block)
        return -1;
    for (long r = 0; r < rounds; r++) {
        for (long i = 0; i < n; i++)
            sum += block[i] + r;
        for (int i = 0; i < 256; i++)
            frame[i] = sum + i;
        sum += frame[(r * 7) & 255];
    }
    free((void *)block);
    return sum;
}

/* A library's own variables (memlib_statics): a global array of 64-byte
 * records, of which only `key` is read; a static array; a thread-local
 * array (static: its accesses find the block through the module's id, as
 * a library's local-dynamic TLS does).  Each aligned to a cache line, so
 * that a walk of n bytes touches n / 64 lines. */
struct memlib_record {
    long key;
    long value[7];
};
volatile struct memlib_record memlib_table[512] __attribute__((aligned(64)));
static volatile long memlib_hist[1024] __attribute__((aligned(64)));
static __thread volatile long memlib_tls[256] __attribute__((aligned(64)));

/* `rounds` rounds of 1024 stores into memlib_hist, 512 loads of
 * memlib_table[i].key and 256 stores into memlib_tls: 8 KiB, 512 lines
 * and 2 KiB, each a whole number of lines. */
long memlib_statics(long rounds)
{
    long sum = 0;
    for (long r = 0; r < rounds; r++) {
        for (int i = 0; i < 1024; i++)
            memlib_hist[i] = r + i;
        for (int i = 0; i < 512; i++)
            sum += memlib_table[i].key;
        for (int i = 0; i < 256; i++)
            memlib_tls[i] = sum + i;
    }
    return sum;
}
