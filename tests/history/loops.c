/* A loop entered N times (argv[1]) that runs M iterations (argv[2]) each
 * time, inside a loop entered once: the oracle of tests/history.sh for the
 * entries the history stores (the source knows them: 1 and N). */
#include <stdlib.h>

static volatile unsigned long sink;

__attribute__((noinline)) static void work(long n, long m)
{
    for (long i = 0; i < n; i++)
        for (long j = 0; j < m; j++)
            sink += (unsigned long)(i ^ j);
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 7, m = argc > 2 ? atol(argv[2]) : 1000;
    work(n, m);
    return 0;
}
