/* tests/trace/bare.c — code around the records a tracing copy makes in
 * registers it finds dead (rewriter/trace.c, "bare"): carry chains (the
 * flags live from an add to its adc, which capstone 4 does not list as a
 * flag reader), calls through a table of pointers (the call reads its
 * operand's registers), values kept in callee-saved registers across
 * calls.  Its output must not change under `mtool sim` (tests/trace.sh). */
#include <stdio.h>
#include <stdlib.h>

typedef unsigned __int128 u128;

/* The carry chain in asm, %rcx read after it and %r9 and %r10 written
 * (dead before the adc), so that a record before the adc is made in %r9
 * and %r10 with `add` and `jnz`, where it must leave CF as the add set it. */
__attribute__((noinline)) static u128 sum128(const u128 *a, int n, unsigned long keep)
{
    unsigned long lo = 0, hi = 0, mix = 0;
    for (int i = 0; i < n; i++)
        __asm__("add (%[p]), %[lo]\n\tadc 8(%[p]), %[hi]\n\txor %%rcx, %[mix]\n\t"
                "mov $1, %%r9d\n\tmov $2, %%r10d"
                : [lo] "+r"(lo), [hi] "+r"(hi), [mix] "+r"(mix)
                : [p] "r"(a + i), "c"(keep)
                : "cc", "r9", "r10");
    return ((u128)hi << 64 | lo) ^ mix;
}

__attribute__((noinline)) static long f0(long x) { return x * 3 + 1; }
__attribute__((noinline)) static long f1(long x) { return x ^ (x >> 7); }
__attribute__((noinline)) static long f2(long x) { return x + 0x9e3779b9; }
__attribute__((noinline)) static long f3(long x) { return x * 5 - 3; }
static long (*const table[4])(long) = {f0, f1, f2, f3};

__attribute__((noinline)) static long dispatch(const int *idx, int n, long x)
{
    for (int i = 0; i < n; i++)
        x = table[idx[i] & 3](x) ^ i;
    return x;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 100000;
    u128 *a = malloc((size_t)n * sizeof *a);
    int *idx = malloc((size_t)n * sizeof *idx);
    if (!a || !idx)
        return 1;
    for (int i = 0; i < n; i++) {
        a[i] = ((u128)(0xffffffffffffffffull - (unsigned)i) << 1) | (unsigned)(i & 1);
        idx[i] = (i * 7) >> 2;
    }
    u128 s = sum128(a, n, (unsigned long)n);
    long d = dispatch(idx, n, 1);
    printf("%016llx%016llx %ld\n", (unsigned long long)(s >> 64), (unsigned long long)s, d);
    free(a);
    free(idx);
    return 0;
}
