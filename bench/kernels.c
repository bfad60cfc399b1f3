/* bench/kernels.c — workloads for the counting-overhead benchmark
 * (bench/counting.sh): `kernels NAME SCALE`.  Each does SCALE units of
 * work with a different block structure: tight loops (matmul, sieve), calls
 * back from libc (sort), branchy code (hash), pointer chasing (list),
 * recursion (fib). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

static unsigned long long seed = 88172645463325252ull;
static unsigned long long next_random(void)
{
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    return seed;
}

NOINLINE static double matmul(int scale)
{
    int n = 120;
    double *a = malloc(sizeof(double) * n * n), *b = malloc(sizeof(double) * n * n),
           *c = calloc((size_t)n * n, sizeof(double));
    for (int i = 0; i < n * n; i++) {
        a[i] = (double)(i % 7);
        b[i] = (double)(i % 5);
    }
    for (int r = 0; r < scale; r++)
        for (int i = 0; i < n; i++)
            for (int k = 0; k < n; k++)
                for (int j = 0; j < n; j++)
                    c[i * n + j] += a[i * n + k] * b[k * n + j];
    double s = c[n * n / 2];
    free(a);
    free(b);
    free(c);
    return s;
}

static int by_value(const void *x, const void *y)
{
    int a = *(const int *)x, b = *(const int *)y;
    return (a > b) - (a < b);
}

NOINLINE static double sort(int scale)
{
    int n = 200000;
    int *v = malloc(sizeof(int) * n);
    long s = 0;
    for (int r = 0; r < scale; r++) {
        for (int i = 0; i < n; i++)
            v[i] = (int)(next_random() % 1000000);
        qsort(v, (size_t)n, sizeof(int), by_value);
        s += v[n / 2];
    }
    free(v);
    return (double)s;
}

NOINLINE static double hash(int scale)
{
    enum { SIZE = 1 << 16 };
    unsigned *keys = calloc(SIZE, sizeof(unsigned));
    long hits = 0;
    for (int r = 0; r < scale * 100000; r++) {
        unsigned k = (unsigned)(next_random() % 50000) + 1, h = (k * 2654435761u) & (SIZE - 1);
        while (keys[h] && keys[h] != k)
            h = (h + 1) & (SIZE - 1);
        if (keys[h] == k)
            hits++;
        else
            keys[h] = k;
    }
    free(keys);
    return (double)hits;
}

struct node {
    struct node *next;
    long value;
};

NOINLINE static double list(int scale)
{
    int n = 100000;
    struct node *nodes = malloc(sizeof(struct node) * n);
    int *perm = malloc(sizeof(int) * n);
    for (int i = 0; i < n; i++)
        perm[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(next_random() % (unsigned)(i + 1)), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    for (int i = 0; i < n; i++) {
        nodes[perm[i]].next = &nodes[perm[(i + 1) % n]];
        nodes[perm[i]].value = i;
    }
    long s = 0;
    struct node *p = &nodes[perm[0]];
    for (long r = 0; r < (long)scale * n; r++) {
        s += p->value;
        p = p->next;
    }
    free(nodes);
    free(perm);
    return (double)s;
}

NOINLINE static long fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

NOINLINE static double sieve(int scale)
{
    int n = 2000000;
    char *composite = malloc((size_t)n);
    long count = 0;
    for (int r = 0; r < scale; r++) {
        memset(composite, 0, (size_t)n);
        for (int i = 2; (long)i * i < n; i++)
            if (!composite[i])
                for (int j = i * i; j < n; j += i)
                    composite[j] = 1;
        for (int i = 2; i < n; i++)
            count += !composite[i];
    }
    free(composite);
    return (double)count;
}

int main(int argc, char **argv)
{
    const char *name = argc > 1 ? argv[1] : "matmul";
    int scale = argc > 2 ? atoi(argv[2]) : 1;
    double r;
    if (!strcmp(name, "matmul"))
        r = matmul(scale);
    else if (!strcmp(name, "sort"))
        r = sort(scale);
    else if (!strcmp(name, "hash"))
        r = hash(scale);
    else if (!strcmp(name, "list"))
        r = list(scale);
    else if (!strcmp(name, "fib"))
        r = (double)fib(20 + scale);
    else if (!strcmp(name, "sieve"))
        r = sieve(scale);
    else {
        fprintf(stderr, "kernels: unknown kernel %s\n", name);
        return 2;
    }
    printf("%s %d: %.0f\n", name, scale, r);
    return 0;
}
