/* tests/mpi/test_mpi_restore_memory.c - what a restore allocates per
 * stored piece. A checkpoint holds one partitioned tensor stored as
 * PIECES pieces of one element each (as a job of PIECES ranks would write
 * it); every rank of this job restores its block of it. The library's
 * allocations are counted through the allocator hook (ckpt_set_allocator,
 * installed before anything else; tests/support/count_alloc.h). The restore's
 * peak of live bytes, less what was live before it and less the peak of opening
 * the bundle reader it opens (measured alone: the reader's index of entries,
 * the single-process reader's cost), is what the distributed restore adds: its
 * index of the slice keys, its per-piece marks. Divided by PIECES it must stay
 * below PER_PIECE_LIMIT bytes. The restored values are checked.
 *
 *   test_mpi_restore_memory   (under mpiexec, 1 or 2 ranks) */
#include "mpi_model.h"
#include "test_util.h"

#include "ckpt/sys/alloc.h"
#include "support/count_alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PIECES 65536
/* Bytes per stored piece the restore may add to its reader's. Its index
 * of slice keys took about 540 (every piece's extents widened to
 * CKPT_MAX_RANK dimensions, and its name copied) before it kept only the
 * extents a piece has and one copy of each name: 35 to 45 here. */
#define PER_PIECE_LIMIT 100

/* ---- the test ------------------------------------------------------------ */

/* Rank 0 writes `prefix`: "t", float[PIECES], one piece per element,
 * element i = i + 0.5. */
static void write_pieces(const char *prefix)
{
    ckpt_bundle_writer *w = NULL;
    ckpt_shape shape = {1, {PIECES}};
    assert_ckpt_ok(ckpt_bundle_writer_open(&w, prefix, NULL));
    for (int64_t i = 0; i < PIECES; i++) {
        ckpt_slice_extent ext = {i, 1};
        float v = (float)i + 0.5f;
        assert_ckpt_ok(ckpt_bundle_writer_add_slice(
            w, "t", CKPT_DT_FLOAT, &shape, &ext, &v, sizeof(v)));
    }
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);
}

static void test_restore_peak_per_piece(void **state)
{
    char *dir = shared_dir_make();
    char *prefix = test_path(dir, "pieces");
    ckpt_mpi_saver_options o = test_mpi_options();
    ckpt_mpi_saver *s = NULL;
    int64_t n = PIECES / test_size(), lo = test_rank() * n;
    int64_t dims[1] = {PIECES};
    ckpt_slice_extent ext = {lo, n};
    float *mine = calloc((size_t)n, sizeof(float));
    ckpt_bundle_reader *r = NULL;
    long long before, reader, peak, worst = 0;
    ckpt_var v;
    (void)state;
    assert_non_null(mine);
    if (test_rank() == 0)
        write_pieces(prefix);
    MPI_Barrier(MPI_COMM_WORLD);
    assert_ckpt_ok(ckpt_mpi_saver_open(&s, MPI_COMM_WORLD, dir, &o));
    v = model_var("t", CKPT_DT_FLOAT, 1, dims, mine);
    assert_ckpt_ok(ckpt_mpi_saver_add_partitioned(s, &v, &ext));
    assert_ckpt_ok(ckpt_mpi_saver_check(s));
    /* the reader alone */
    before = count_alloc_live();
    count_alloc_reset_peak();
    assert_ckpt_ok(ckpt_bundle_reader_open(&r, prefix, NULL));
    reader = count_alloc_peak() - before;
    ckpt_bundle_reader_free(r);
    before = count_alloc_live();
    count_alloc_reset_peak();
    assert_ckpt_ok(ckpt_mpi_saver_restore(s, prefix));
    peak = count_alloc_peak() - before - reader;
    for (int64_t i = 0; i < n; i++)
        assert_true(mine[i] == (float)(lo + i) + 0.5f);
    MPI_Allreduce(&peak, &worst, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    if (test_rank() == 0)
        print_message("restore of %d pieces on %d rank(s): the reader's "
                      "peak %.1f bytes per piece, the restore's %.1f more "
                      "(worst rank)\n",
                      PIECES, test_size(), (double)reader / PIECES,
                      (double)worst / PIECES);
    if (worst > (long long)PER_PIECE_LIMIT * PIECES)
        fail_msg("the restore's peak is %.1f bytes per stored piece beyond "
                 "its reader's, more than %d",
                 (double)worst / PIECES, PER_PIECE_LIMIT);
    ckpt_mpi_saver_free(s);
    free(mine);
    free(prefix);
    shared_dir_remove(dir);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_restore_peak_per_piece)};
    int provided, failed;
    /* before any allocation of the library */
    if (ckpt_set_allocator(&count_alloc) != 0)
        return 1;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    failed = cmocka_run_group_tests(tests, NULL, NULL);
    return mpi_tests_end(failed);
}
