/* tests/install/consumer_mpi/main.c - saves and restores one replicated
 * variable with the installed ckpt_mpi on every rank, in the directory
 * given as argv[1], and prints what it read back. */
#include <ckpt.h>
#include <ckpt/mpi.h>

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    ckpt_mpi_saver *s = NULL;
    float w[4] = {1.5f, 2.5f, 3.5f, 4.5f};
    ckpt_var v;
    int provided, rank, err;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    memset(&v, 0, sizeof(v));
    v.name = "w";
    v.dtype = CKPT_DT_FLOAT;
    v.shape.rank = 1;
    v.shape.dims[0] = 4;
    v.data = w;
    err = argc > 1 ? ckpt_mpi_saver_open(&s, MPI_COMM_WORLD, argv[1], NULL)
                   : CKPT_EINVAL;
    if (err == 0)
        err = ckpt_mpi_saver_add_replicated(s, &v);
    if (err == 0)
        err = ckpt_mpi_saver_save(s, 7, NULL);
    if (err == 0) {
        memset(w, 0, sizeof(w));
        err = ckpt_mpi_saver_restore_latest(s, NULL);
    }
    if (err != 0)
        fprintf(stderr, "rank %d: %s\n", rank, ckpt_error_last()->message);
    else if (rank == 0)
        printf("restored=%g,%g,%g,%g\n", w[0], w[1], w[2], w[3]);
    ckpt_mpi_saver_free(s);
    MPI_Finalize();
    return err != 0;
}
