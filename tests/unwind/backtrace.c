/* tests/unwind/backtrace.c — glibc backtrace() from a deep chain of frames
 * of different shapes (frame pointer or not, alloca, many callee-saved
 * registers, a call through a pointer, recursion).  Every callee records
 * its return address; the unwinder's frames must be exactly those, so the
 * check holds whether or not the code was relocated.  Prints the frame
 * count and the names of the outermost frames (-rdynamic). */
#define _GNU_SOURCE
#include <alloca.h>
#include <execinfo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))
#define MAXDEPTH 64

static void *expected[MAXDEPTH];
static int nexpected;
static volatile int sink;

static void record(void *ra) { expected[nexpected++] = ra; }

NOINLINE static int check(void)
{
    void *frames[MAXDEPTH];
    int n = backtrace(frames, MAXDEPTH);
    int bad = 0;
    /* frames[0] is inside check(), frames[1] inside leaf(); the next ones
     * must be the recorded return addresses, innermost first. */
    for (int i = 0; i < nexpected; i++)
        if (i + 2 >= n || frames[i + 2] != expected[nexpected - 1 - i]) {
            printf("frame %d: got %p, expected %p\n", i + 2, i + 2 < n ? frames[i + 2] : NULL,
                   expected[nexpected - 1 - i]);
            bad = 1;
        }
    char **names = backtrace_symbols(frames, n);
    printf("%d frames, %d checked, %s\n", n, nexpected, bad ? "MISMATCH" : "ok");
    /* The frame below _start is libc's and keeps its name. */
    const char *open = names && n >= 2 ? strchr(names[n - 2], '(') : NULL;
    const char *plus = open ? strchr(open, '+') : NULL;
    if (plus)
        printf("called from %.*s\n", (int)(plus - open - 1), open + 1);
    free(names);
    return bad;
}

NOINLINE int leaf(int x)
{
    record(__builtin_return_address(0));
    return check() + x;
}

NOINLINE int many_regs(int a, int b, int c, int d)
{
    record(__builtin_return_address(0));
    /* Keeps values live across the call in callee-saved registers. */
    int p = a * 3 + sink, q = b * 5 + sink, r = c * 7 + sink, s = d * 11 + sink, t = a ^ d;
    int v = leaf(p + q);
    return v + p + q + r + s + t + (p * q) + (r * s) + (t * p);
}

NOINLINE int with_alloca(int n)
{
    record(__builtin_return_address(0));
    char *buf = alloca((size_t)n + 16);
    memset(buf, n, (size_t)n + 16);
    sink = buf[n / 2];
    return many_regs(n, n + 1, n + 2, n + 3) + buf[3];
}

static int (*volatile indirect)(int) = with_alloca;

NOINLINE int big_frame(int n)
{
    record(__builtin_return_address(0));
    volatile char big[5000];
    big[n] = (char)n;
    return indirect(n + 10) + big[n];
}

NOINLINE int recurse(int depth)
{
    record(__builtin_return_address(0));
    if (depth == 0)
        return big_frame(7) + sink; /* not a tail call: the frame stays */
    int r = recurse(depth - 1);
    sink = r; /* a use after the call: no tail-recursion elimination */
    return r + sink;
}

int main(void)
{
    int r = recurse(5);
    printf("result %d\n", r);
    return nexpected > 0 && r >= 0 ? 0 : 1;
}
