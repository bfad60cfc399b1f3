/* threads.c — a pthreads program: main starts THREADS workers through
 * pthread_create (so `worker` is reached only through a pointer: its
 * address is taken, no direct call edge leads to it), each sums its slice
 * of an array in one loop, and main joins them. */
#include <pthread.h>
#include <stdio.h>

#define THREADS 2
#define SLICE 20000
#define NOINLINE __attribute__((noinline))

struct slice {
    const int *data;
    int n;
    long sum;
};

static int data[THREADS * SLICE];

NOINLINE void *worker(void *arg)
{
    struct slice *s = arg;
    long sum = 0;
    for (int i = 0; i < s->n; i++)
        sum += s->data[i] * (long)(i & 7);
    s->sum = sum;
    return NULL;
}

int main(void)
{
    for (int i = 0; i < THREADS * SLICE; i++)
        data[i] = i % 1000;
    pthread_t tid[THREADS];
    struct slice slices[THREADS];
    for (int t = 0; t < THREADS; t++) {
        slices[t] = (struct slice){.data = data + t * SLICE, .n = SLICE, .sum = 0};
        if (pthread_create(&tid[t], NULL, worker, &slices[t]) != 0)
            return 1;
    }
    long total = 0;
    for (int t = 0; t < THREADS; t++) {
        pthread_join(tid[t], NULL);
        total += slices[t].sum;
    }
    printf("checksum %ld\n", total);
    return 0;
}
