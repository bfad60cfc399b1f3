/* samples/shlib_threads.c — a shared library that starts threads and a
 * process itself (tests/libthreads.sh): each runs a loop of a known number
 * of iterations on data of its own, so its block counts are exact (each
 * thread's loop header runs ITERS times), and the threads run the same
 * blocks at once.  Counted into one slot, two threads' increments of one
 * counter could be lost; with a slot each, the counts are callgrind's.
 * The _c11 entry points start the same jobs with C11's thrd_create and
 * glibc's _Fork (which runs no atfork handlers). */
#define _GNU_SOURCE /* _Fork */
#include <pthread.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <threads.h>
#include <unistd.h>

typedef struct {
    unsigned long seed;
    long iters;
    long high;  /* iterations whose draw had its top bit set */
} job;

/* Not inlined: every thread's and child's iterations are its loop's. */
__attribute__((noinline)) static void *run_job(void *p)
{
    job *j = p;
    unsigned long x = j->seed;
    long high = 0;
    for (long i = 0; i < j->iters; i++) {
        x = x * 6364136223846793005ul + 1442695040888963407ul;
        if (x >> 63) {
            __asm__ volatile(""); /* a block of its own: no conditional move */
            high++;
        }
    }
    j->high = high;
    return NULL;
}

static int run_c11_job(void *p)
{
    run_job(p);
    return 0;
}

/* Runs `nthreads` threads of `iters` iterations each, started by
 * thrd_create when c11, else by pthread_create (direct calls, through the
 * PLT); their total of high draws, or -1 when a thread cannot be started. */
static long threaded_jobs(int c11, int nthreads, long iters)
{
    pthread_t *t = calloc((size_t)nthreads, sizeof *t);
    thrd_t *c = calloc((size_t)nthreads, sizeof *c);
    job *jobs = calloc((size_t)nthreads, sizeof *jobs);
    int started = 0;
    for (; t && c && jobs && started < nthreads; started++) {
        jobs[started] = (job){.seed = (unsigned long)started + 1, .iters = iters};
        if (c11 ? thrd_create(&c[started], run_c11_job, &jobs[started]) != thrd_success
                : pthread_create(&t[started], NULL, run_job, &jobs[started]) != 0)
            break;
    }
    long total = started == nthreads ? 0 : -1;
    for (int k = 0; k < started; k++) {
        if (c11)
            thrd_join(c[k], NULL);
        else
            pthread_join(t[k], NULL);
        total += total < 0 ? 0 : jobs[k].high;
    }
    free(t);
    free(c);
    free(jobs);
    return total;
}

long mtthreads_run(int nthreads, long iters) { return threaded_jobs(0, nthreads, iters); }
long mtthreads_run_c11(int nthreads, long iters) { return threaded_jobs(1, nthreads, iters); }

/* Runs one job of `iters` iterations in a child process (of _Fork when
 * c11, else of fork: direct calls, through the PLT); the child's count of
 * high draws modulo 128 (its exit status), or -1. */
static long forked_job(int c11, long iters)
{
    pid_t pid = c11 ? _Fork() : fork();
    if (pid == 0) {
        job j = {.seed = 99, .iters = iters};
        run_job(&j);
        _exit((int)(j.high % 128));
    }
    int status;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
        return -1;
    return WEXITSTATUS(status);
}

long mtthreads_fork(long iters) { return forked_job(0, iters); }
long mtthreads_fork_c11(long iters) { return forked_job(1, iters); }
