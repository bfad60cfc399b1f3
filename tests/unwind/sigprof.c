/* tests/unwind/sigprof.c — asynchronous unwinding: a timer's SIGPROF
 * interrupts a loop of calls at arbitrary instructions (prologues,
 * epilogues, probes) and the handler unwinds with backtrace().  Every
 * sample taken while outer() runs must have frames leading back to main's
 * call of outer(), whose return address outer() records.  Prints how many samples did not, with the
 * interrupted addresses (inside the flags-saving probes of an instrumented
 * program %rsp is moved, so a few there are expected). */
#define _GNU_SOURCE
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>

#define NOINLINE __attribute__((noinline))
#define MAXBAD 16
#define SAMPLES 3000 /* taken, then printed: the same in both runs */

static void *volatile main_ra;
static volatile sig_atomic_t in_outer; /* samples in main itself do not count */
static volatile sig_atomic_t samples, bad;
static void *bad_pc[MAXBAD];
static volatile long sink;

static void on_prof(int sig, siginfo_t *si, void *ctx)
{
    (void)sig;
    (void)si;
    if (!in_outer || samples >= SAMPLES) /* the last outer() may take more: not printed */
        return;
    void *frames[64];
    int n = backtrace(frames, 64);
    samples++;
    for (int i = 0; i < n; i++)
        if (frames[i] == main_ra)
            return;
    if (bad < MAXBAD)
        bad_pc[bad] = (void *)((ucontext_t *)ctx)->uc_mcontext.gregs[REG_RIP];
    bad++;
}

NOINLINE long inner(long i)
{
    /* Several callee-saved registers: a prologue and an epilogue with pushes. */
    long a = i * 3 + sink, b = i ^ sink, c = i * 7 - sink, d = i + 11 * sink;
    for (long k = 0; k < (i & 7); k++) {
        a += b * k;
        b ^= c + k;
        c -= d;
        d += a >> 3;
    }
    sink = a;
    return a + b + c + d;
}

NOINLINE long outer(long n)
{
    main_ra = __builtin_return_address(0);
    in_outer = 1;
    long t = 0;
    for (long i = 0; i < n; i++)
        t += inner(i) & 0xff;
    in_outer = 0;
    return t + sink;
}

int main(void)
{
    void *warm[4];
    backtrace(warm, 4); /* loads the unwinder before any signal */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_prof;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigaction(SIGPROF, &sa, NULL);
    /* A POSIX timer on CLOCK_MONOTONIC, not ITIMER_PROF: the kernel keeps
     * the profiling clock by scheduler ticks (4 ms at HZ=250), so 3000
     * samples took 12 s of CPU a run; this clock is a high-resolution timer
     * and fires every 200 us.  Where it fires while the process is off the
     * CPU, the signal arrives as it resumes, at the instruction it was
     * preempted at: still an arbitrary one. */
    struct sigevent ev;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_SIGNAL;
    ev.sigev_signo = SIGPROF;
    timer_t timer;
    if (timer_create(CLOCK_MONOTONIC, &ev, &timer) != 0) {
        perror("timer_create");
        return 2;
    }
    struct itimerspec every = {{0, 200000}, {0, 200000}}, off = {{0, 0}, {0, 0}};
    timer_settime(timer, 0, &every, NULL);
    long r = 0;
    while (samples < SAMPLES)
        r += outer(200000);
    timer_settime(timer, 0, &off, NULL);
    timer_delete(timer);
    printf("samples %d, %d did not reach main\n", (int)samples, (int)bad);
    for (int i = 0; i < bad && i < MAXBAD; i++)
        printf("  at %p\n", bad_pc[i]);
    return r == 0;
}
