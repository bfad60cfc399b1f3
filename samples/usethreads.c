/* samples/usethreads.c — a program whose threads and child process are
 * started by its shared library (shlib_threads.c; tests/libthreads.sh),
 * never by itself: `usethreads NTHREADS ITERS FORK_ITERS [c11]` (FORK_ITERS
 * 0: no child; c11: started with thrd_create and _Fork, not pthread_create
 * and fork) prints what they computed and exits with a status of its own,
 * so that a copy that differs shows. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

long mtthreads_run(int nthreads, long iters);
long mtthreads_fork(long iters);
long mtthreads_run_c11(int nthreads, long iters);
long mtthreads_fork_c11(long iters);

int main(int argc, char **argv)
{
    int nthreads = argc > 1 ? atoi(argv[1]) : 4;
    long iters = argc > 2 ? atol(argv[2]) : 100000;
    long fork_iters = argc > 3 ? atol(argv[3]) : iters;
    int c11 = argc > 4 && strcmp(argv[4], "c11") == 0;
    printf("threads %d high %ld", nthreads,
           c11 ? mtthreads_run_c11(nthreads, iters) : mtthreads_run(nthreads, iters));
    if (fork_iters > 0)
        printf(" fork %ld", c11 ? mtthreads_fork_c11(fork_iters) : mtthreads_fork(fork_iters));
    printf("\n");
    return 4;
}
