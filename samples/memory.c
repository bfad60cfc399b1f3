/* memory.c — kernels whose memory behavior is known, for pass 2 (`mtool
 * run`): each is its own procedure with one loop nest, so a report must
 * rank them; each holds a similar share of the memory operations, so
 * that MTOOL's selection (95% of them) takes them all.  Sizes are for
 * machines with caches of a few MB:
 *
 *   list_sequential  a linked list laid out in traversal order (prefetchable)
 *   list_random      the same nodes linked in a random order over 64 MB:
 *                    nearly every step a cache (and TLB) miss: overhead > 100%
 *   matmul_rows      C += A B in i-k-j order: unit-stride inner loop
 *   matmul_cols      the same product in j-k-i order: inner loop down C's
 *                    columns (stride 2 KB), a new cache line every access
 *   stream_triad     a[i] = b[i] + s c[i] over 3 x 16 MB: bandwidth-bound
 *   compute_poly     Horner's rule, coefficients from L1: |overhead| small
 *   sum_rows         row sums through a helper it shares with main (98% rule)
 *   scaled_sum       a constant-time leaf and a negligible product (the other rules)
 *   dispatch_chunks  kernels called through pointers (the dynamic call graph):
 *                    a random gather over 64 MB and an L1-resident scaling
 *
 * usage: memory [SCALE]   (work grows linearly with SCALE, default 1) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

typedef struct node {
    struct node *next;
    long value;
    char pad[48]; /* one node per 64-byte line */
} node;

#define NODES (1L << 20) /* 64 MB of nodes */
#define MATRIX 256 /* C is MATRIX x MATRIX (512 KB), A and B have DEPTH columns/rows */
#define DEPTH 32
#define STREAM (2L << 20) /* doubles per array: 16 MB each */

static uint64_t rng = 88172645463325252ull;
static uint64_t next_random(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

NOINLINE long list_walk_sequential(const node *head, int times)
{
    long sum = 0;
    for (int t = 0; t < times; t++)
        for (const node *n = head; n; n = n->next)
            sum += n->value;
    return sum;
}

/* Not the same code as list_walk_sequential: gcc would fold the two. */
NOINLINE long list_walk_random(const node *head, int times)
{
    long sum = 0;
    for (int t = 0; t < times; t++)
        for (const node *n = head; n; n = n->next)
            sum ^= n->value;
    return sum;
}

NOINLINE void matmul_rows(double *c, const double *a, const double *b, int n, int m)
{
    for (int i = 0; i < n; i++)
        for (int k = 0; k < m; k++) {
            double aik = a[i * m + k];
            for (int j = 0; j < n; j++)
                c[i * n + j] += aik * b[k * n + j];
        }
}

NOINLINE void matmul_cols(double *c, const double *a, const double *b, int n, int m)
{
    for (int j = 0; j < n; j++)
        for (int k = 0; k < m; k++) {
            double bkj = b[k * n + j];
            for (int i = 0; i < n; i++)
                c[i * n + j] += a[i * m + k] * bkj;
        }
}

NOINLINE void stream_triad(double *a, const double *b, const double *c, double s, long n, int times)
{
    for (int t = 0; t < times; t++)
        for (long i = 0; i < n; i++)
            a[i] = b[i] + s * c[i];
}

/* Coefficients from a 2 KB table: loads that always hit L1. */
NOINLINE double compute_poly(const double *coef, double x, long n)
{
    double acc = 0;
    for (long i = 0; i < n; i++)
        acc = acc * x + coef[i & 255];
    return acc;
}

/* A helper shared by two callers: sum_rows makes nearly all its calls, so
 * sum_rows is estimated with MTOOL's 98%-caller rule (and a warning). */
NOINLINE double row_sum(const double *row, long n)
{
    double s = 0;
    for (long i = 0; i < n; i++)
        s += row[i];
    return s;
}

NOINLINE double sum_rows(const double *m, long rows, long n, int times)
{
    double t = 0;
    for (int k = 0; k < times; k++)
        for (long r = 0; r < rows; r++)
            t += row_sum(m + r * n, n);
    return t;
}

/* MTOOL's other two rules.  scale_value ran no loop and no call (its
 * error path never runs) and takes the same time on every call (a
 * constant-time leaf: no warning), though main makes a third of its calls;
 * progress is a loop main calls far more often than scaled_sum does, but
 * scaled_sum's few calls are a negligible product (estimated, with a
 * warning). */
volatile long progress_sink;
NOINLINE void bad_value(double v)
{
    fprintf(stderr, "memory: bad value %g\n", v);
    exit(2);
}

NOINLINE double scale_value(double v)
{
    if (v < -1e300)
        bad_value(v);
    return v * 0.5 + 1.0;
}

NOINLINE void progress(long step)
{
    for (long i = 0; i < 64; i++)
        progress_sink += step ^ i;
}

NOINLINE double scaled_sum(const double *a, long n, int times)
{
    double t = 0;
    for (int k = 0; k < times; k++)
        for (long i = 0; i < n; i++) {
            t += scale_value(a[i]);
            if ((i & 0xfffff) == 0)
                progress(i);
        }
    return t;
}

/* Calls through pointers, as interpreters and codecs make them (gzip's
 * deflate, xz's encoders): the kernels are too short per call to time, so
 * they are timed from their caller, dispatch_chunks, whose loop is
 * estimable only because pass 1 recorded where its calls go (both kernels,
 * called from nowhere else). */
#define CHUNK 16
#define GATHER_STRIDE 8
typedef double (*chunk_kernel)(const double *a, const long *idx, long n);
static chunk_kernel kernels[2];

NOINLINE double gather_chunk(const double *a, const long *idx, long n)
{
    double s = 0;
    for (long i = 0; i < n; i++)
        s += a[GATHER_STRIDE * idx[i]]; /* a new line every load */
    return s;
}

NOINLINE double scale_chunk(const double *a, const long *idx, long n)
{
    (void)idx;
    double s = 0;
    for (long i = 0; i < n; i++)
        s += a[i] * 0.5;
    return s;
}

NOINLINE double dispatch_chunks(const double *a, const long *idx, long n, int times)
{
    double t = 0;
    for (int k = 0; k < times; k++)
        for (long c = 0; c + CHUNK <= n; c += CHUNK)
            t += kernels[(c / CHUNK) & 1](a, idx + c, CHUNK);
    return t;
}

/* Links nodes[order[0]] -> nodes[order[1]] -> ... */
static node *link_nodes(node *nodes, const long *order)
{
    for (long i = 0; i < NODES; i++) {
        nodes[order[i]].value = order[i];
        nodes[order[i]].next = i + 1 < NODES ? &nodes[order[i + 1]] : NULL;
    }
    return &nodes[order[0]];
}

int main(int argc, char **argv)
{
    int scale = argc > 1 ? atoi(argv[1]) : 1;
    if (scale < 1)
        scale = 1;
    node *seq = malloc(NODES * sizeof *seq), *rnd = malloc(NODES * sizeof *rnd);
    long *order = malloc(NODES * sizeof *order);
    double *ma = calloc(MATRIX * MATRIX, sizeof *ma), *mb = calloc(MATRIX * MATRIX, sizeof *mb);
    double *mc = malloc(MATRIX * MATRIX * sizeof *mc), *mc2 = malloc(MATRIX * MATRIX * sizeof *mc2);
    double *sa = malloc(STREAM * sizeof *sa), *sb = malloc(STREAM * sizeof *sb);
    double *sc = malloc(STREAM * sizeof *sc);
    if (!seq || !rnd || !order || !ma || !mb || !mc || !mc2 || !sa || !sb || !sc)
        return 1;
    for (long i = 0; i < NODES; i++)
        order[i] = i;
    node *seq_head = link_nodes(seq, order);
    for (long i = NODES - 1; i > 0; i--) { /* Fisher-Yates */
        long j = (long)(next_random() % (uint64_t)(i + 1)), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    node *rnd_head = link_nodes(rnd, order);
    /* Every page written once before the kernels run: first-touch page
     * faults are kernel time the timers would count inside matmul_rows. */
    for (long i = 0; i < MATRIX * MATRIX; i++) {
        ma[i] = (double)(i % 7) / 7;
        mb[i] = (double)(i % 5) / 5;
        mc[i] = mc2[i] = 0;
    }
    for (long i = 0; i < STREAM; i++) {
        sb[i] = (double)i;
        sc[i] = (double)(STREAM - i);
    }
    long s1 = list_walk_sequential(seq_head, 4 * scale);
    long s2 = list_walk_random(rnd_head, 4 * scale);
    /* The row-order product is short: eight calls, so that a burst of
     * other load on the machine weighs less in its figure. */
    for (int t = 0; t < 8 * scale; t++) {
        matmul_rows(mc, ma, mb, MATRIX, DEPTH);
        if (t % 4 == 0)
            matmul_cols(mc2, ma, mb, MATRIX, DEPTH);
    }
    stream_triad(sa, sb, sc, 0.5, STREAM, 2 * scale);
    static double coef[256];
    for (int i = 0; i < 256; i++)
        coef[i] = 1.0 / (i + 1);
    double p = compute_poly(coef, 0.999, 8000000L * scale);
    double rows = sum_rows(sb, STREAM / 512, 512, 3 * scale) + row_sum(sc, 16);
    double scaled = scaled_sum(sc, STREAM, 2 * scale);
    for (long i = 0; i < STREAM; i++) /* a third of scale_value's calls */
        scaled += scale_value((double)i);
    for (long i = 0; i < 20000; i++) /* nearly all of progress's calls */
        progress(i);
    kernels[0] = gather_chunk;
    kernels[1] = scale_chunk;
    /* The gather's table: 64 MB, past any L3, every element written (a
     * calloc'd page never written reads as the one zero page, from cache). */
    double *wide = malloc(GATHER_STRIDE * NODES * sizeof *wide);
    if (!wide)
        return 1;
    for (long i = 0; i < GATHER_STRIDE * NODES; i++)
        wide[i] = (double)(i & 1023);
    double chunks = dispatch_chunks(wide, order, NODES, 8 * scale);
    free(wide);
    printf("lists %ld %ld matmul %.3f %.3f triad %.1f poly %.6f rows %.1f scaled %.1f chunks %.1f\n",
           s1, s2, mc[12345], mc2[12345], sa[STREAM / 3], p, rows, scaled, chunks);
    free(seq);
    free(rnd);
    free(order);
    free(ma);
    free(mb);
    free(mc);
    free(mc2);
    free(sa);
    free(sb);
    free(sc);
    return 0;
}
