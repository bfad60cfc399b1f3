/* samples/usethreads.c — a program whose threads and child process are
 * started by its shared library (shlib_threads.c; tests/libthreads.sh),
 * never by itself: `usethreads NTHREADS ITERS FORK_ITERS` (FORK_ITERS 0:
 * no child) prints what they computed and exits with a status of its own,
 * so that a copy that differs shows. */
#include <stdio.h>
#include <stdlib.h>

long mtthreads_run(int nthreads, long iters);
long mtthreads_fork(long iters);

int main(int argc, char **argv)
{
    int nthreads = argc > 1 ? atoi(argv[1]) : 4;
    long iters = argc > 2 ? atol(argv[2]) : 100000;
    long fork_iters = argc > 3 ? atol(argv[3]) : iters;
    printf("threads %d high %ld", nthreads, mtthreads_run(nthreads, iters));
    if (fork_iters > 0)
        printf(" fork %ld", mtthreads_fork(fork_iters));
    printf("\n");
    return 4;
}
