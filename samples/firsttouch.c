/* firsttouch.c — home memory by first touch (issue 16's NUMA sample of
 * `mtool sim --cpus=4 --nodes=2`, docs/SIMULATOR.md, "Nodes"): an array of
 * 16 MiB, page-aligned, cut in two slices, one per worker thread, each
 * worker summing its slice once.
 *
 *   firsttouch serial    main initialises the whole array, then the two
 *                        workers sum their slices: under first touch every
 *                        page is main's node's, remote for a worker on the
 *                        other node;
 *   firsttouch parallel  each worker initialises its own slice, then sums it:
 *                        every page is its own node's.
 *
 * Main is thread 0 (the first to reference memory), the workers threads 1
 * and 2; main joins both before it prints the sums (nothing else reads the
 * array).  Stores of computed values, not constants: no memset call. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define ELEMENTS (2 * 1024 * 1024) /* doubles: 16 MiB */
#define WORKERS 2
#define SLICE (ELEMENTS / WORKERS)

static _Alignas(4096) double array[ELEMENTS];
static int parallel_init;

static void init(double *a, long n, long first)
{
    for (long i = 0; i < n; i++)
        a[i] = (double)(first + i) * 0.5;
}

static void *worker(void *arg)
{
    long w = (long)arg;
    double *slice = array + w * SLICE;
    if (parallel_init)
        init(slice, SLICE, w * SLICE);
    double sum = 0;
    for (long i = 0; i < SLICE; i++)
        sum += slice[i];
    static double sums[WORKERS];
    sums[w] = sum;
    return &sums[w];
}

int main(int argc, char **argv)
{
    if (argc != 2 || (strcmp(argv[1], "serial") && strcmp(argv[1], "parallel"))) {
        fprintf(stderr, "usage: firsttouch serial|parallel\n");
        return 2;
    }
    parallel_init = !strcmp(argv[1], "parallel");
    if (!parallel_init)
        init(array, ELEMENTS, 0);
    pthread_t tid[WORKERS];
    for (long w = 0; w < WORKERS; w++)
        if (pthread_create(&tid[w], NULL, worker, (void *)w) != 0)
            return 1;
    for (int w = 0; w < WORKERS; w++) {
        void *sum;
        pthread_join(tid[w], &sum);
        printf("slice %d: %.1f\n", w, *(double *)sum);
    }
    return 0;
}
