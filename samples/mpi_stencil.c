/* samples/mpi_stencil.c — a 2D Jacobi stencil split into slabs of rows, one
 * per MPI rank, with a halo exchange (MPI_Sendrecv) between neighbours at
 * every step.  The split is deliberately unbalanced: rank 0 gets RANK0_UNITS
 * units of rows (2 by default), every other rank one, so the sweep's memory
 * operations and time per rank are in the ratio of the slabs (tests/mpi.sh
 * checks mtool's load imbalance against the rows printed here).
 *
 *   mpirun -n RANKS mpi_stencil [STEPS [EXIT_STATUS [RANK0_UNITS]]]
 *
 * Rank 0 prints the rows of every slab and a checksum of the grid, the same
 * for every run with the same ranks; with EXIT_STATUS, rank 0 exits with it
 * after MPI_Finalize (for the launcher's exit status).  Built with
 * -DSWEEP_IN_LIBRARY (mpi_libstencil), the sweep is in a shared library of
 * its own, libmtstencil.so (tests/mpi.sh: `--libs` through the launcher). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

enum { COLS = 256, UNIT_ROWS = 48 };

/* Rows of rank r: rank 0 rank0_units units, the others one each. */
static int slab_rows(int r, int rank0_units) { return r == 0 ? rank0_units * UNIT_ROWS : UNIT_ROWS; }

#ifdef SWEEP_IN_LIBRARY
/* Built as mpi_libstencil: the sweep is libmtstencil.so's (mpi_stencil_lib.c). */
void mtstencil_sweep(const double *restrict in, double *restrict out, int rows, int cols);
#define sweep(in, out, rows) mtstencil_sweep(in, out, rows, COLS)
#else
/* One Jacobi step over the slab's own rows (1..rows); rows 0 and rows+1
 * are the neighbours' halo. */
__attribute__((noinline)) static void sweep(const double *restrict in, double *restrict out,
                                            int rows)
{
    for (int i = 1; i <= rows; i++)
        for (int j = 1; j < COLS - 1; j++)
            out[i * COLS + j] = 0.25 * (in[(i - 1) * COLS + j] + in[(i + 1) * COLS + j] +
                                        in[i * COLS + j - 1] + in[i * COLS + j + 1]);
}
#endif

/* The first and last own rows go to the neighbours, their rows come into
 * the halo (MPI_PROC_NULL at the grid's edges: nothing moves). */
static void exchange_halo(double *g, int rows, int rank, int size)
{
    int up = rank > 0 ? rank - 1 : MPI_PROC_NULL, down = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;
    MPI_Sendrecv(g + 1 * COLS, COLS, MPI_DOUBLE, up, 0, g + (rows + 1) * COLS, COLS, MPI_DOUBLE,
                 down, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Sendrecv(g + rows * COLS, COLS, MPI_DOUBLE, down, 1, g, COLS, MPI_DOUBLE, up, 1,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int steps = argc > 1 ? atoi(argv[1]) : 20;
    int rank0_units = argc > 3 && atoi(argv[3]) > 0 ? atoi(argv[3]) : 2;
    int rows = slab_rows(rank, rank0_units);
    double *a = calloc((size_t)(rows + 2) * COLS, sizeof *a);
    double *b = calloc((size_t)(rows + 2) * COLS, sizeof *b);
    if (!a || !b)
        MPI_Abort(MPI_COMM_WORLD, 1);
    for (int i = 1; i <= rows; i++) /* a hot left edge, a different value per rank */
        a[i * COLS] = b[i * COLS] = 100.0 + rank;
    for (int s = 0; s < steps; s++) {
        exchange_halo(a, rows, rank, size);
        sweep(a, b, rows);
        double *t = a;
        a = b;
        b = t;
    }
    double local = 0, total = 0;
    for (int i = 1; i <= rows; i++)
        for (int j = 0; j < COLS; j++)
            local += a[i * COLS + j];
    MPI_Reduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    int *all_rows = rank == 0 ? malloc((size_t)size * sizeof *all_rows) : NULL;
    MPI_Gather(&rows, 1, MPI_INT, all_rows, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        for (int r = 0; r < size; r++)
            printf("rank %d rows %d\n", r, all_rows[r]);
        printf("checksum %.6f\n", total);
    }
    free(all_rows);
    free(a);
    free(b);
    MPI_Finalize();
    return rank == 0 && argc > 2 ? atoi(argv[2]) : 0;
}
