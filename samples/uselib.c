/* samples/uselib.c — a program whose work is in its own shared libraries
 * (shlib.c, shlib_init.c; tests/libs.sh): prints what they computed and
 * exits with a status of its own, so that a copy that differs shows. */
#include <stdio.h>
#include <stdlib.h>

long shlib_work(long *v, int n, int rounds);
long shlib_fib(int n);
long shlib_init_value(void);

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 1000;
    long *v = malloc((size_t)n * sizeof *v);
    for (int i = 0; i < n; i++)
        v[i] = (i * 7919) % 1009;
    long w = shlib_work(v, n, 20);
    printf("work %ld fib %ld init %ld\n", w, shlib_fib(18), shlib_init_value());
    free(v);
    return 3;
}
