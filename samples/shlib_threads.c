/* samples/shlib_threads.c — a shared library that starts threads and a
 * process itself (tests/libthreads.sh): each runs a loop of a known number
 * of iterations on data of its own, so its block counts are exact (each
 * thread's loop header runs ITERS times), and the threads run the same
 * blocks at once.  Counted into one slot, two threads' increments of one
 * counter could be lost; with a slot each, the counts are callgrind's. */
#include <pthread.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct {
    unsigned long seed;
    long iters;
    long high;  /* iterations whose draw had its top bit set */
} job;

static void *run_job(void *p)
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

/* Runs `nthreads` threads of `iters` iterations each; their total of
 * high draws, or -1 when a thread cannot be started. */
long mtthreads_run(int nthreads, long iters)
{
    pthread_t *t = calloc((size_t)nthreads, sizeof *t);
    job *jobs = calloc((size_t)nthreads, sizeof *jobs);
    int started = 0;
    for (; t && jobs && started < nthreads; started++) {
        jobs[started] = (job){.seed = (unsigned long)started + 1, .iters = iters};
        if (pthread_create(&t[started], NULL, run_job, &jobs[started]) != 0)
            break;
    }
    long total = started == nthreads ? 0 : -1;
    for (int k = 0; k < started; k++) {
        pthread_join(t[k], NULL);
        total += total < 0 ? 0 : jobs[k].high;
    }
    free(t);
    free(jobs);
    return total;
}

/* Runs one job of `iters` iterations in a child process; the child's
 * count of high draws modulo 128 (its exit status), or -1. */
long mtthreads_fork(long iters)
{
    pid_t pid = fork();
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
