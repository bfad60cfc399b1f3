/* openmp.c — OpenMP parallel regions through libgomp's GOMP_parallel, with
 * static schedules only: each thread's share of the iterations is fixed, so
 * the block counts summed over threads do not depend on how the threads
 * were scheduled (a dynamic schedule's chunk loop would). */
#include <omp.h>
#include <stdio.h>

#define N 100000
#define THREADS 4

static double a[N], b[N];

int main(void)
{
    for (int i = 0; i < N; i++)
        a[i] = i % 97;
    double sum = 0;
#pragma omp parallel for schedule(static) reduction(+ : sum) num_threads(THREADS)
    for (int i = 0; i < N; i++)
        sum += a[i] * 0.5;
#pragma omp parallel for schedule(static, 1000) num_threads(THREADS)
    for (int i = 0; i < N; i++)
        b[i] = a[i] * a[i];
    long parts[THREADS] = {0};
#pragma omp parallel num_threads(THREADS)
    {
        int t = omp_get_thread_num(), n = omp_get_num_threads();
        for (int i = t; i < N; i += n)
            parts[t] += (long)b[i];
    }
    long total = 0;
    for (int t = 0; t < THREADS; t++)
        total += parts[t];
    printf("sum %.1f total %ld\n", sum, total);
    return 0;
}
