/* linked.c — memory-bound and compute-bound kernels with known structure
 * (later passes time them and compare with their predicted cost):
 *   walk:      a linked-list traversal (one loop, one load chain); run once
 *              over a list laid out in order and once over a shuffled one
 *   triad:     a streaming kernel a[i] = b[i] + s * c[i] (one loop)
 *   polynomial: a compute-bound loop with no memory access in its body
 * Each is a leaf called from main, so every one is estimable. */
#include <stdio.h>

#define NODES 8192
#define STREAM 16384
#define NOINLINE __attribute__((noinline))

struct node {
    struct node *next;
    long value;
};

static struct node pool[NODES];
static double xa[STREAM], xb[STREAM], xc[STREAM];
volatile double fsink;

/* A deterministic pseudo-random permutation (LCG + Fisher–Yates). */
static void shuffle(unsigned *order, unsigned n)
{
    unsigned long long state = 12345;
    for (unsigned i = 0; i < n; i++)
        order[i] = i;
    for (unsigned i = n - 1; i > 0; i--) {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        unsigned j = (unsigned)(state >> 33) % (i + 1);
        unsigned t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

/* Links the pool in the given order and returns the head. */
static struct node *link_nodes(const unsigned *order, unsigned n)
{
    for (unsigned i = 0; i + 1 < n; i++)
        pool[order[i]].next = &pool[order[i + 1]];
    pool[order[n - 1]].next = NULL;
    for (unsigned i = 0; i < n; i++)
        pool[i].value = i;
    return &pool[order[0]];
}

NOINLINE long walk(const struct node *p)
{
    long sum = 0;
    while (p) {
        sum += p->value;
        p = p->next;
    }
    return sum;
}

NOINLINE void triad(double *a, const double *b, const double *c, double s, int n)
{
    for (int i = 0; i < n; i++)
        a[i] = b[i] + s * c[i];
}

NOINLINE double polynomial(double x, int n)
{
    double acc = 0;
    for (int i = 0; i < n; i++)
        acc = acc * x + 1.0 / (i + 1);
    return acc;
}

int main(int argc, char **argv)
{
    (void)argv;
    static unsigned order[NODES];
    for (unsigned i = 0; i < NODES; i++)
        order[i] = i;
    long sequential = walk(link_nodes(order, NODES));
    shuffle(order, NODES);
    long random = walk(link_nodes(order, NODES));
    for (int i = 0; i < STREAM; i++) {
        xb[i] = i;
        xc[i] = STREAM - i;
    }
    triad(xa, xb, xc, 0.5 * argc, STREAM);
    fsink = polynomial(0.999, 20000 * argc);
    double s = 0;
    for (int i = 0; i < STREAM; i += 64)
        s += xa[i];
    printf("checksum %ld %ld %.3f %.6f\n", sequential, random, s, fsink);
    return 0;
}
