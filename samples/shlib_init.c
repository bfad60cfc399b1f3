/* samples/shlib_init.c — a shared library whose constructor runs its own
 * code before the program's entry (tests/libs.sh): a loop, a thread and a
 * child process of its own.  The runtime starts before the constructors
 * (docs/ARCHITECTURE.md, "Init order"), so all of it counts: `steps` runs
 * STEPS_TOTAL iterations in all, in three tasks. */
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile long started;

static __attribute__((noinline)) long steps(int n)
{
    long s = 0;
    for (int i = 0; i < n; i++)
        s += i % 7;
    return s;
}

static void *in_thread(void *arg)
{
    (void)arg;
    started += steps(2000);
    return 0;
}

/* 1000 here, 2000 in the thread, 3000 in the child, 10 at each
 * shlib_init_value: tests/libs.sh's STEPS_TOTAL with one call. */
__attribute__((constructor)) static void at_load(void)
{
    started = steps(1000);
    pthread_t t;
    if (pthread_create(&t, 0, in_thread, 0) == 0)
        pthread_join(t, 0);
    pid_t child = fork();
    if (child == 0)
        _exit(steps(3000) == 0);
    if (child > 0)
        waitpid(child, 0, 0);
}

long shlib_init_value(void) { return started + steps(10); }
