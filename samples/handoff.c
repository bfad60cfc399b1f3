/* handoff.c — how often a shared counter changed hands, as the program saw
 * it (docs/SIMULATOR.md, "Threads": the oracle of the threads' merge
 * order): two threads increment one counter (atomic), each noting which
 * thread made each value (both start at a barrier); main counts the values made by another thread
 * than the value before: the times the counter's line went from one CPU
 * to the other in this very run.  A traced run's merge of the threads'
 * frames is as close to the real order as its coherence misses on
 * `counter` are to this count (each change of hands is one miss: the line
 * Modified in the other CPU). */
#include <pthread.h>
#include <stdio.h>

#define ROUNDS 100000

static _Alignas(64) long counter;
static _Alignas(64) unsigned char maker[2 * ROUNDS + 1]; /* maker[v]: the thread that made v */
static pthread_barrier_t start;

static void *worker(void *arg)
{
    unsigned char t = (unsigned char)(long)arg;
    pthread_barrier_wait(&start); /* the two start together */
    for (int i = 0; i < ROUNDS; i++)
        maker[__atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED) + 1] = t;
    return NULL;
}

int main(void)
{
    pthread_t tid[2];
    pthread_barrier_init(&start, NULL, 2);
    for (long t = 0; t < 2; t++)
        if (pthread_create(&tid[t], NULL, worker, (void *)t) != 0)
            return 1;
    for (int t = 0; t < 2; t++)
        pthread_join(tid[t], NULL);
    long changes = 0;
    for (long v = 2; v <= 2 * ROUNDS; v++)
        changes += maker[v] != maker[v - 1];
    printf("counter %ld, changed hands %ld times\n", counter, changes);
    return 0;
}
