/* tests/mpi/test_mpi_usage.c - docs/mpi.md's Usage excerpt, compiled as
 * printed and run. CMake copies the excerpt into mpi_usage_excerpt.inc
 * (its directory replaced by the test's); this file supplies what the
 * excerpt says stands for the user's code (weights, a partitioned
 * embedding, a per-rank RNG, the step's functions) and then checks what a
 * reader of the page expects: the run resumed at the step given, trained
 * only the steps after it, and left the checkpoint of the last step,
 * named by it and holding it as global_step.
 *
 *   test_mpi_usage DIR LAST RESUMED   (under mpiexec, any rank count) */
#include "ckpt.h"
#include "ckpt/mpi.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define EMB_ROWS 12
#define EMB_COLS 4

static float weights_data[256];
static float emb_data[EMB_ROWS * EMB_COLS];
static uint64_t rng_value;
static int64_t updates;
static ckpt_var weights = {
    "dense/kernel", CKPT_DT_FLOAT, {1, {256}}, weights_data, NULL, NULL, NULL};
static ckpt_var rng_state = {"rng", CKPT_DT_UINT64, {0, {0}}, &rng_value,
                             NULL,  NULL,           NULL};
static ckpt_var embedding_var = {
    "embedding", CKPT_DT_FLOAT, {2, {EMB_ROWS, EMB_COLS}}, NULL, NULL,
    NULL,        NULL};

static int64_t rank_rows(int upper)
{
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    return (int64_t)EMB_ROWS * (rank + upper) / size;
}

/* The excerpt's lo, hi and embedding: this rank's rows, known once MPI is
 * initialised (the excerpt uses them after its MPI_Init_thread). */
#define lo rank_rows(0)
#define hi rank_rows(1)
#define embedding (*embedding_piece())

static ckpt_var *embedding_piece(void)
{
    embedding_var.data = emb_data + lo * EMB_COLS;
    return &embedding_var;
}

static void forward_backward_allreduce(void)
{
    float g = weights_data[0];
    MPI_Allreduce(MPI_IN_PLACE, &g, 1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}

static void apply_update(void)
{
    for (size_t i = 0; i < sizeof(weights_data) / sizeof(weights_data[0]); i++)
        weights_data[i] += 1.f;
    for (int64_t i = lo * EMB_COLS; i < hi * EMB_COLS; i++)
        emb_data[i] += 1.f;
    rng_value++;
    updates++;
}

/* What the page promises, checked on every rank; 0 or 1. */
static int check_run(const char *usage_dir, int64_t last, int64_t resumed,
                     int64_t step, int close_err)
{
    char want[4096];
    ckpt_buf latest = CKPT_BUF_INIT;
    ckpt_bundle_reader *r = NULL;
    int64_t saved_step = -1;
    int bad = 0;
    if (close_err != 0) {
        fprintf(stderr, "close: %s\n", ckpt_error_last()->message);
        bad = 1;
    }
    if (step != last || updates != last - resumed ||
        weights_data[0] != (float)last) {
        fprintf(stderr,
                "step %" PRId64 ", %" PRId64 " updates, weight %g: want "
                "step %" PRId64 " after %" PRId64 " updates from %" PRId64 "\n",
                step, updates, (double)weights_data[0], last, last - resumed,
                resumed);
        bad = 1;
    }
    snprintf(want, sizeof(want), "%s/model.ckpt-%" PRId64, usage_dir, last);
    if (ckpt_latest_checkpoint(&latest, NULL, usage_dir) != 0 ||
        strcmp(latest.ptr, want) != 0 ||
        ckpt_bundle_reader_open(&r, latest.ptr, NULL) != 0 ||
        ckpt_bundle_reader_read(r, "global_step", &saved_step,
                                sizeof(saved_step)) != 0 ||
        saved_step != last) {
        fprintf(stderr, "latest %s (want %s), global_step %" PRId64 ": %s\n",
                latest.ptr ? latest.ptr : "(none)", want, saved_step,
                ckpt_error_last()->message);
        bad = 1;
    }
    ckpt_bundle_reader_free(r);
    ckpt_buf_dispose(&latest);
    return bad;
}

int main(int argc, char **argv)
{
    const char *usage_dir;
    int64_t last, resumed;
    int provided = 0, bad, any_bad = 0;
    if (argc != 4) {
        fprintf(stderr, "usage: test_mpi_usage DIR LAST RESUMED\n");
        return 2;
    }
    usage_dir = argv[1];
    last = strtoll(argv[2], NULL, 10);
    resumed = strtoll(argv[3], NULL, 10);
    if (mkdir(usage_dir, 0755) != 0 && errno != EEXIST) {
        perror(usage_dir);
        return 2;
    }
    {
#include "mpi_usage_excerpt.inc"
        bad = check_run(usage_dir, last, resumed, step, err);
    }
    MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    if (!any_bad)
        printf("PASS\n");
    return any_bad;
}
