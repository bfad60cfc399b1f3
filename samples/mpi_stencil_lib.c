/* samples/mpi_stencil_lib.c — libmtstencil.so: the Jacobi sweep of
 * mpi_stencil.c built as mpi_libstencil, in a shared library of its own (tests/mpi.sh counts and
 * times it in every rank through the launcher, `--libs libmtstencil`).
 * Each call updates rows 1..rows of a slab `cols` wide: its inner loop runs
 * cols - 2 times per row, its outer loop rows times. */
__attribute__((noinline)) void mtstencil_sweep(const double *restrict in, double *restrict out,
                                               int rows, int cols)
{
    for (int i = 1; i <= rows; i++)
        for (int j = 1; j < cols - 1; j++)
            out[i * cols + j] = 0.25 * (in[(i - 1) * cols + j] + in[(i + 1) * cols + j] +
                                        in[i * cols + j - 1] + in[i * cols + j + 1]);
}
