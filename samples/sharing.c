/* sharing.c — two threads on shared data, three ways (issue 16's sample of
 * `mtool sim --set cpus=2`): each increments its own counter of one struct
 * (`adjacent.a`, `adjacent.b`: one cache line, false sharing), then its own
 * counter of a struct whose fields are a line apart (`padded.a`,
 * `padded.b`: nothing shared), then one counter both increment (`total`:
 * true sharing).  Atomic increments (relaxed): no data race, and every
 * increment is a read and a write of memory the compiler cannot merge.
 * Each shared object has lines of its own (nothing else falsely shares
 * them), the threads start each phase together (barriers), and main reads
 * none of them (the workers return what they counted): main is thread 0,
 * on CPU 0 with the second worker when there are two CPUs. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

/* Increments per counter per thread: ROUNDS, or the first argument (bench/trace.sh
 * gives more, for a simulation long enough to time). */
#define ROUNDS 200000
static long rounds = ROUNDS;
#define LINE 64

/* -DPAD_ADJACENT: the padding `mtool sim --what-if` proposes for it, applied
 * (tests/whatif.sh compares the prediction with this build). */
static struct {
    _Alignas(LINE) long a;
#ifdef PAD_ADJACENT
    _Alignas(LINE)
#endif
    long b;
} adjacent;

static struct {
    _Alignas(LINE) long a;
    _Alignas(LINE) long b;
} padded;

static _Alignas(LINE) long total;
static pthread_barrier_t phase;

/* The counter's value after this thread's increments. */
static long bump(long *counter)
{
    pthread_barrier_wait(&phase);
    long last = 0, n = rounds; /* read once: no reference to `rounds` in the loop */
    for (long i = 0; i < n; i++)
        last = __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED) + 1;
    return last;
}

static void *worker(void *arg)
{
    int t = (int)(long)arg;
    long own = bump(t ? &adjacent.b : &adjacent.a);
    own += bump(t ? &padded.b : &padded.a);
    bump(&total);
    return (void *)own; /* 2 x rounds: its two counters */
}

int main(int argc, char **argv)
{
    if (argc > 1)
        rounds = atol(argv[1]);
    pthread_t tid[2];
    pthread_barrier_init(&phase, NULL, 2);
    for (long t = 0; t < 2; t++)
        if (pthread_create(&tid[t], NULL, worker, (void *)t) != 0)
            return 1;
    for (int t = 0; t < 2; t++) {
        void *own;
        pthread_join(tid[t], &own);
        printf("thread %d: %ld\n", t, (long)own);
    }
    return 0;
}
