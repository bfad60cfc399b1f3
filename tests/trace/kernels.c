/* tests/trace/kernels.c — references of every kind tests/trace.sh checks
 * mtool sim -- BIN on: rep movsb and rep stosq, a thread-local array (%fs
 * operands), SSE2 vector loads, threads writing arrays of their own, and
 * (argument "kill") a process killed by SIGKILL before its last trace frame
 * was sent, (argument "modes") every addressing mode, or (argument "churn") 32 rounds of 8 short threads, whose slots
 * the runtime reuses while other new threads look for one.  Exits with
 * status 3 so that the status is seen to be kept. */
#include <emmintrin.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))
#define THREADS 4

static char src[1 << 16] __attribute__((aligned(64)));
static char dst[1 << 16] __attribute__((aligned(64)));
static double vec[1 << 13] __attribute__((aligned(64)));
static double per_thread[THREADS][1 << 12] __attribute__((aligned(64)));
static char lines[100 * 64] __attribute__((aligned(64)));
static __thread char tls[1 << 15] __attribute__((aligned(64)));
static char modes[16 * 64] __attribute__((aligned(64), used));
static __thread char tmodes[2 * 64] __attribute__((aligned(64), used));

/* Addressing modes (argument "modes"): 12 lines stored to plainly (10 of
 * modes, 2 thread-local), then the same lines through every other form:
 * disp8 0 on %r13, %r12 as base (a SIB), index and scale, a negative
 * index, rip-relative, %fs with no base and with an index, a 16-byte store
 * and load, a read-modify-write, rep movsb from line 7 to line 8.  If
 * every address is right: 12 D1 misses (cold), and 154 references (12 +
 * 141 + the ret; rep movsb: 64 reads and 64 writes; the add: a read and a
 * write; `test $imm, %al/%eax`, a8 and a9 among the string opcodes a4-af,
 * none).  No stack traffic but the ret: %r12 and %r13 are kept in xmm
 * registers. */
NOINLINE void addressing(void)
{
    __asm__ volatile(
        "lea modes(%%rip), %%r8\n\t"
        "movb $1, (%%r8)\n\t"
        "movb $1, 64(%%r8)\n\t"
        "movb $1, 128(%%r8)\n\t"
        "movb $1, 192(%%r8)\n\t"
        "movb $1, 256(%%r8)\n\t"
        "movb $1, 320(%%r8)\n\t"
        "movb $1, 384(%%r8)\n\t"
        "movb $1, 448(%%r8)\n\t"
        "movb $1, 512(%%r8)\n\t"
        "movb $1, 576(%%r8)\n\t"
        "movb $1, %%fs:tmodes@tpoff\n\t"
        "movb $1, %%fs:tmodes@tpoff+64\n\t"
        "movq %%r12, %%xmm1\n\t"
        "movq %%r13, %%xmm2\n\t"
        "mov %%r8, %%r13\n\t"
        "movb $2, (%%r13)\n\t"
        "mov $2, %%r9\n\t"
        "movb $2, 60(%%r13,%%r9,2)\n\t"
        "mov %%r8, %%r12\n\t"
        "movb $2, 128(%%r12)\n\t"
        "movb $2, 128(%%r12,%%r9,8)\n\t"
        "movb $2, modes+192(%%rip)\n\t"
        "mov $8, %%r9\n\t"
        "movb $2, 192(%%r8,%%r9,8)\n\t"
        "movdqu %%xmm0, 320(%%r8)\n\t"
        "movdqa 384(%%r8), %%xmm0\n\t"
        "lea 448(%%r8), %%rsi\n\t"
        "lea 512(%%r8), %%rdi\n\t"
        "mov $64, %%rcx\n\t"
        "rep movsb\n\t"
        "mov $-1, %%r9\n\t"
        "movb $2, 577(%%r8,%%r9,1)\n\t"
        "movb $2, %%fs:tmodes@tpoff+1\n\t"
        "mov $8, %%r9\n\t"
        "movb $2, %%fs:tmodes@tpoff(,%%r9,8)\n\t"
        "addb $1, 64(%%r8)\n\t"
        "test $1, %%al\n\t"          /* a8 and a9, among the string opcodes: no access */
        "test $0x100, %%eax\n\t"
        "movq %%xmm1, %%r12\n\t"
        "movq %%xmm2, %%r13\n\t"
        :
        :
        : "r8", "r9", "rsi", "rdi", "rcx", "xmm0", "xmm1", "xmm2", "memory", "cc");
}

NOINLINE void copy_rep(void)
{
    void *d = dst;
    const void *s = src;
    size_t n = sizeof src;
    __asm__ volatile("rep movsb" : "+D"(d), "+S"(s), "+c"(n) : : "memory");
}

NOINLINE void fill_rep(void)
{
    void *d = dst;
    size_t n = sizeof dst / 8;
    __asm__ volatile("rep stosq" : "+D"(d), "+c"(n) : "a"(0x0101010101010101ul) : "memory");
}

NOINLINE long tls_walk(void)
{
    long sum = 0;
    for (size_t i = 0; i < sizeof tls; i += 64) {
        tls[i] = (char)i;
        sum += tls[i + 1];
    }
    return sum;
}

NOINLINE double vector_sum(void)
{
    __m128d acc = _mm_setzero_pd();
    for (size_t i = 0; i < sizeof vec / sizeof *vec; i += 2)
        acc = _mm_add_pd(acc, _mm_load_pd(&vec[i]));
    double out[2];
    _mm_storeu_pd(out, acc);
    return out[0] + out[1];
}

/* Fills a row of per_thread, or of churn's rows (64 doubles: it is the
 * thread's argument that says which). */
NOINLINE void *worker(void *arg)
{
    double *a = arg;
    size_t n = a >= per_thread[0] && a < per_thread[THREADS] ? sizeof per_thread[0] / sizeof **per_thread : 64;
    for (size_t i = 0; i < n; i++)
        a[i] = (double)i;
    return NULL;
}

/* One store to each of 100 lines, then SIGKILL: the records are still in
 * the thread's slot. */
NOINLINE void touch_lines(void)
{
    for (size_t i = 0; i < sizeof lines; i += 64)
        *(volatile char *)&lines[i] = 1;
}

/* The arrays filled here, not by memset: libraries are not traced, and
 * their references would be missing from the caches mtool simulates. */
NOINLINE void init(void)
{
    for (size_t i = 0; i < sizeof src; i++)
        src[i] = (char)(i * 7);
    for (size_t i = 0; i < sizeof vec / sizeof *vec; i++)
        vec[i] = (double)i;
}

/* Rounds of short threads: each new thread may claim a dead one's slot. */
static int churn(void)
{
    enum { ROUNDS = 32, AT_ONCE = 8 };
    double rows[AT_ONCE][64];
    for (int r = 0; r < ROUNDS; r++) {
        pthread_t th[AT_ONCE];
        for (int k = 0; k < AT_ONCE; k++)
            pthread_create(&th[k], NULL, worker, rows[k]);
        for (int k = 0; k < AT_ONCE; k++)
            pthread_join(th[k], NULL);
    }
    printf("churn %.1f\n", rows[AT_ONCE - 1][63]);
    return 3;
}

/* A frame written by its callee (tests/dataobj.sh): fill_frame's 256
 * stores through a pointer land in own_frame's frame, "stack:own_frame". */
NOINLINE static void fill_frame(volatile long *a, int n)
{
    for (int i = 0; i < n; i++)
        a[i] = i;
}

NOINLINE static long own_frame(void)
{
    volatile long a[256];
    fill_frame(a, 256);
    long s = 0;
    for (int i = 0; i < 256; i++)
        s += a[i];
    return s;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "frames")) {
        printf("frames %ld\n", own_frame());
        return 3;
    }
    if (argc > 1 && !strcmp(argv[1], "churn"))
        return churn();
    if (argc > 1 && !strcmp(argv[1], "modes")) {
        addressing();
        return 3;
    }
    if (argc > 1 && !strcmp(argv[1], "kill")) {
        touch_lines();
        raise(SIGKILL);
    }
    init();
    copy_rep();
    fill_rep();
    long t = tls_walk();
    double v = vector_sum();
    pthread_t th[THREADS];
    for (int k = 0; k < THREADS; k++)
        pthread_create(&th[k], NULL, worker, per_thread[k]);
    double w = 0;
    for (int k = 0; k < THREADS; k++) {
        pthread_join(th[k], NULL);
        w += per_thread[k][100];
    }
    printf("dst %d %d tls %ld vector %.1f threads %.1f\n", dst[0], dst[sizeof dst - 1], t, v, w);
    return 3;
}
