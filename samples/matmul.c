/* matmul.c — triple-nested matrix multiply, row order and column order.
 * Known structure: `matmul_rows` and `matmul_cols` each hold a loop nest of
 * depth 3 (i, j, k). */
#include <stdio.h>

#define N 64
#define NOINLINE __attribute__((noinline))

static double a[N][N], b[N][N], c[N][N];

NOINLINE void matmul_rows(int n)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double sum = 0;
            for (int k = 0; k < n; k++)
                sum += a[i][k] * b[k][j];
            c[i][j] = sum;
        }
}

NOINLINE void matmul_cols(int n)
{
    for (int j = 0; j < n; j++)
        for (int i = 0; i < n; i++) {
            double sum = 0;
            for (int k = 0; k < n; k++)
                sum += a[i][k] * b[k][j];
            c[i][j] += sum;
        }
}

int main(int argc, char **argv)
{
    (void)argv;
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            a[i][j] = (double)(i + j) / N;
            b[i][j] = (double)(i - j) / N;
        }
    matmul_rows(N + argc - 1);
    matmul_cols(N + argc - 1);
    double sum = 0;
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            sum += c[i][j];
    printf("checksum %.6f\n", sum);
    return 0;
}
