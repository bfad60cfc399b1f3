/* walks.c — matrix walks whose D1 misses and their causes follow from the
 * source, for the cache simulator's samples (docs/SIMULATOR.md, "Samples of
 * known behaviour").  Sized against a simulated D1 of 8 KiB, 4 ways, 64-byte
 * lines (32 sets, 128 lines), not against any real cache:
 *
 *   walk_rows        a 512 x 200 matrix of doubles (800 KiB) row by row:
 *                    one miss per line (12800 of 102400 loads), cold (the
 *                    first walk over it)
 *   walk_cols        the same matrix column by column: a column spans 512
 *                    lines, more than D1 holds, so every load misses, and a
 *                    fully associative D1 misses too: capacity.  A row is
 *                    25 lines, an odd number: a column covers every set
 *   walk_cols_pow2   a 64 x 256 matrix (leading dimension 256 doubles = 32
 *                    lines = the number of sets) by columns: a column's 64
 *                    lines fall in ONE set of 4 ways and every load misses,
 *                    though a fully associative D1 would hold them for the
 *                    next 7 columns: 7 of 8 misses are conflicts
 *   walk_cols_padded the same walk with a leading dimension of 264 (33
 *                    lines): a column covers every set, two lines each, and
 *                    only the first touch of a line misses (cold)
 *
 * The matrices are never written: their loads read zero pages, and the walks'
 * first touches are cold misses.  They have external linkage so that the
 * compiler cannot fold the loads of a never-written array to zero. */
#include <stdio.h>

#define NOINLINE __attribute__((noinline))

enum { ROWS = 512, COLS = 200 };     /* 800 KiB, 12800 lines */
enum { CROWS = 64, CCOLS = 256 };    /* the conflict walks' matrix */
enum { PADDED = CCOLS + 8 };         /* one line more per row */

_Alignas(64) double matrix[ROWS][COLS];
_Alignas(64) double pow2[CROWS][CCOLS];
_Alignas(64) double padded[CROWS][PADDED];
volatile double sink;

NOINLINE static double walk_rows(void)
{
    double sum = 0;
    for (int i = 0; i < ROWS; i++)
        for (int j = 0; j < COLS; j++)
            sum += matrix[i][j];
    return sum;
}

NOINLINE static double walk_cols(void)
{
    double sum = 0;
    for (int j = 0; j < COLS; j++)
        for (int i = 0; i < ROWS; i++)
            sum += matrix[i][j];
    return sum;
}

NOINLINE static double walk_cols_pow2(void)
{
    double sum = 0;
    for (int j = 0; j < CCOLS; j++)
        for (int i = 0; i < CROWS; i++)
            sum += pow2[i][j];
    return sum;
}

NOINLINE static double walk_cols_padded(void)
{
    double sum = 0;
    for (int j = 0; j < CCOLS; j++)
        for (int i = 0; i < CROWS; i++)
            sum += padded[i][j];
    return sum;
}

int main(void)
{
    sink = walk_rows();
    sink = walk_cols();
    sink = walk_cols_pow2();
    sink = walk_cols_padded();
    printf("%g\n", sink);
    return 0;
}
