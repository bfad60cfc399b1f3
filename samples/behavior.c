/* behavior.c — the process behaviors an instrumented program must keep:
 * deep recursion, function pointers called back from libc (qsort),
 * setjmp/longjmp, signal handlers, fork, exec, _exit, abort and a fatal
 * signal.  `behavior MODE` runs one mode; with no argument it runs every
 * mode that returns normally.  Output is deterministic, so the original and
 * the instrumented program can be compared byte for byte. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static volatile sig_atomic_t handled;
static jmp_buf env;

NOINLINE static long depth_sum(long n)
{
    if (n == 0)
        return 0;
    return n + depth_sum(n - 1) * 1; /* not a tail call: the frames stay */
}

static int by_value(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

NOINLINE static int twice(int x) { return 2 * x; }
NOINLINE static int square(int x) { return x * x; }

static void recurse(void)
{
    printf("recurse: %ld\n", depth_sum(50000));
}

static void fnptr(void)
{
    int v[1000];
    for (int i = 0; i < 1000; i++)
        v[i] = (i * 7919) % 1000;
    qsort(v, 1000, sizeof v[0], by_value); /* libc calls back into the program */
    int (*ops[2])(int) = {twice, square};
    long s = 0;
    for (int i = 0; i < 1000; i++)
        s += ops[i & 1](v[i]);
    printf("fnptr: %d %d %ld\n", v[0], v[999], s);
}

NOINLINE static void jump_back(int i)
{
    if (i % 3 == 0)
        longjmp(env, i);
}

static void setjmp_longjmp(void)
{
    int jumps = 0;
    for (int i = 0; i < 100; i++) {
        int r = setjmp(env);
        if (r == 0)
            jump_back(i);
        else
            jumps++;
    }
    printf("setjmp: %d longjmps\n", jumps);
}

static void on_signal(int sig)
{
    handled += sig == SIGUSR1;
}

static void signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGUSR1, &sa, NULL);
    for (int i = 0; i < 50; i++)
        raise(SIGUSR1);
    printf("signals: %d handled\n", (int)handled);
}

static int forked(void)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0) {
        printf("fork: child %ld\n", depth_sum(100));
        exit(3);
    }
    int status;
    waitpid(pid, &status, 0);
    printf("fork: child exited %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return 0;
}

static int exec_self(void)
{
    printf("exec: replacing the process\n");
    fflush(stdout);
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return 1;
    self[n] = '\0';
    char *args[] = {"behavior", "recurse", NULL};
    execv(self, args);
    perror("execv");
    return 1;
}

static void quick_exit_now(void)
{
    recurse();
    fflush(stdout);
    (void)!write(1, "_exit: 7\n", 9);
    _exit(7);
}

/* Killed by a signal it does not handle (raised, so every block the
 * program entered also completed, as callgrind counts them). */
static void fatal_signal(void)
{
    recurse();
    fflush(stdout);
    raise(SIGSEGV);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "all";
    if (!strcmp(mode, "all")) {
        recurse();
        fnptr();
        setjmp_longjmp();
        signals();
        return 0;
    }
    if (!strcmp(mode, "recurse"))
        recurse();
    else if (!strcmp(mode, "fnptr"))
        fnptr();
    else if (!strcmp(mode, "setjmp"))
        setjmp_longjmp();
    else if (!strcmp(mode, "signals"))
        signals();
    else if (!strcmp(mode, "fork"))
        return forked();
    else if (!strcmp(mode, "exec"))
        return exec_self();
    else if (!strcmp(mode, "_exit"))
        quick_exit_now();
    else if (!strcmp(mode, "abort")) {
        recurse();
        fflush(stdout);
        abort();
    } else if (!strcmp(mode, "segv"))
        fatal_signal();
    else {
        fprintf(stderr, "behavior: unknown mode %s\n", mode);
        return 2;
    }
    return 0;
}
