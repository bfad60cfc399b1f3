/* nonlocal.c — known timer behavior for tests/timers/run.sh:
 *   leave_by_longjmp: a procedure whose loop is left by longjmp from a
 *       callee (maybe_jump, called on every iteration), 5 times: the
 *       procedure, its loop and maybe_jump each 5 outermost entries and 5
 *       non-local exits, none left open;
 *   fib: 3 outermost calls, the rest recursive entries;
 *   spin: a busy loop of about 20 ms.
 * main reads the TSC right after its entry and right before its last
 * statement and prints the difference on stderr as "main-ticks N": main's
 * measured inclusive time must cover it. */
#include <setjmp.h>
#include <stdio.h>
#include <x86intrin.h>

#define NOINLINE __attribute__((noinline))

static jmp_buf env;
volatile long sink = 1;

NOINLINE long maybe_jump(int i, int n)
{
    if (i == n / 2)
        longjmp(env, 1);
    return i * sink;
}

NOINLINE long leave_by_longjmp(int n)
{
    long s = sink * 3; /* an entry block long enough for the entry jump */
    for (int i = 0; i < n; i++)
        s += maybe_jump(i, n);
    return s;
}

NOINLINE int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

NOINLINE long spin(long n)
{
    long s = 0;
    for (long i = 0; i < n; i++)
        s += i ^ sink;
    return s;
}

int main(int argc, char **argv)
{
    (void)argv;
    unsigned long long t0 = __rdtsc();
    volatile long total = 0;
    for (int k = 0; k < 5; k++)
        if (setjmp(env) == 0)
            total += leave_by_longjmp(100 + argc);
    for (int k = 0; k < 3; k++)
        total += fib(18 + k);
    total += spin(40000000);
    printf("total %ld\n", (long)total);
    unsigned long long t1 = __rdtsc();
    fprintf(stderr, "main-ticks %llu\n", t1 - t0);
    return 0;
}
