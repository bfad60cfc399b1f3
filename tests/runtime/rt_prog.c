/* tests/runtime/rt_prog.c — a program that exercises the runtime inside
 * instrumented programs (tests/runtime/run.sh).  Every mode runs `spin`'s
 * loop an exact, known number of times in total, so the merged counts of
 * `spin` show whether any thread's or process's counts were lost:
 *   threads N T   T pthreads, N iterations each
 *   refused N T   the same from a procedure with an indirect jump no
 *                 analysis can resolve (it stays uninstrumented, but its
 *                 calls to pthread_create must still reach the runtime)
 *   churn N K     K threads created and joined one after another
 *   omp N T R     R OpenMP parallel regions of T threads, N iterations each
 *   fork N        N in the parent, 2N in a fork child
 *   _exit|abort|kill N   N, then ends that way
 *   exec N PROG   N, then execs PROG (no arguments)
 * Its output must not depend on being instrumented: it prints the number of
 * open descriptors, and whether the process has few mappings. */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile long sink;

__attribute__((noinline)) static void spin(long n)
{
    for (long i = 0; i < n; i++)
        sink += i;
}

static long iterations;

static void *thread_main(void *arg)
{
    spin(iterations);
    return arg;
}

static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    return n - 1; /* the directory's own */
}

static int mappings(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    int n = 0;
    for (int c; (c = fgetc(f)) != EOF;)
        n += c == '\n';
    fclose(f);
    return n;
}

/* Starts with a call, not a test of n: a procedure whose first block is
 * shorter than an entry jump is not instrumented, and neither would be its
 * call to pthread_create. */
static void threads(int n)
{
    pthread_t *t = calloc((size_t)n + 1, sizeof *t);
    for (int i = 0; i < n; i++)
        if (pthread_create(&t[i], NULL, thread_main, NULL) != 0)
            abort();
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    free(t);
}

/* `goto *` through a pointer the compiler cannot see: an unresolved jump. */
__attribute__((noinline)) static void threads_unresolved(int n)
{
    static void *volatile targets[2];
    targets[0] = &&create;
    targets[1] = &&none;
    goto *targets[n <= 0];
none:
    return;
create:;
    pthread_t *t = calloc((size_t)n + 1, sizeof *t);
    for (int i = 0; i < n; i++)
        if (pthread_create(&t[i], NULL, thread_main, NULL) != 0)
            abort();
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    free(t);
}

static void churn(int k)
{
    for (int i = 0; i < k; i++)
        threads(1);
    /* Each live slot is one mapping: exited threads' slots must be reused. */
    printf("few mappings: %s\n", mappings() < 500 ? "yes" : "no");
}

#ifdef _OPENMP
static void omp(int t, int r)
{
    for (int i = 0; i < r; i++) {
#pragma omp parallel num_threads(t)
        spin(iterations);
    }
}
#else
static void omp(int t, int r)
{
    (void)t, (void)r;
    fputs("not built with OpenMP\n", stderr);
    exit(2);
}
#endif

static int forked(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        spin(2 * iterations);
        _exit(7);
    }
    int st;
    waitpid(pid, &st, 0);
    spin(iterations);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    const char *mode = argv[1];
    iterations = atol(argv[2]);
    int a = argc > 3 ? atoi(argv[3]) : 1, b = argc > 4 ? atoi(argv[4]) : 1;
    if (strcmp(mode, "threads") == 0)
        threads(a);
    else if (strcmp(mode, "refused") == 0)
        threads_unresolved(a);
    else if (strcmp(mode, "churn") == 0)
        churn(a);
    else if (strcmp(mode, "omp") == 0)
        omp(a, b);
    else if (strcmp(mode, "fork") == 0)
        printf("child exit %d\n", forked());
    else
        spin(iterations);
    printf("%s: %d open descriptors\n", mode, open_fds());
    fflush(stdout);
    if (strcmp(mode, "_exit") == 0)
        _exit(3);
    if (strcmp(mode, "abort") == 0)
        abort();
    if (strcmp(mode, "kill") == 0)
        kill(getpid(), SIGKILL);
    if (strcmp(mode, "exec") == 0 && argc > 3)
        execl(argv[3], argv[3], (char *)NULL);
    return 0;
}
