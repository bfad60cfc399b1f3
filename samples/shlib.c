/* samples/shlib.c — a shared library of known structure for pass 1
 * through libraries (tests/libs.sh): loops, a switch, recursion, a
 * callback that libc's qsort calls, and an exported and a hidden procedure
 * (built stripped too: names then come from .dynsym).  No calls through
 * pointers of its own: the library's copy records none. */
#include <stdlib.h>

#define HIDDEN __attribute__((visibility("hidden")))

HIDDEN long mix(long x, int k)
{
    switch (k & 3) {
    case 0: return x * 3 + 1;
    case 1: return x ^ (x >> 3);
    case 2: return x + k;
    default: return x - 7;
    }
}

static int by_value(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return x < y ? -1 : x > y;
}

long shlib_fib(int n) { return n < 2 ? n : shlib_fib(n - 1) + shlib_fib(n - 2); }

long shlib_work(long *v, int n, int rounds)
{
    long sum = 0;
    for (int r = 0; r < rounds; r++)
        for (int i = 0; i < n; i++) {
            v[i] = mix(v[i] + r, i);
            sum += v[i] & 0xff;
        }
    qsort(v, (size_t)n, sizeof *v, by_value);
    return sum + v[0];
}
