/* tests/mpi/test_mpi_reshard.c - a checkpoint written by 4 ranks, read on
 * other rank counts (CTest orders the runs with a fixture):
 *   write DIR           (4 ranks; also 1) a sync save at step 5 (seed 5)
 *                       and an async one at step 6 (seed 6)
 *   read DIR            (1, 2, 3 ranks) restore the latest and step 5 with
 *                       identical values; on 1 rank, from 4 writers, also
 *                       read it with the single-process saver and LevelDB's
 *                       table reader
 *   read-grow DIR       (2, 3 ranks, from 1 writer) rng optional: the
 *                       rest restores everywhere, rng on rank 0 only
 *   read-missing DIR    (5 ranks) rank 4 has no "rng/rank-4": every rank
 *                       fails, naming it (restore_latest CKPT_EINVAL,
 *                       restore of the prefix CKPT_ENOTFOUND)
 *   read-optional DIR   (5 ranks) the same with rng optional: rank 4's
 *                       value is left as it was, the others restored */
#include "mpi_model.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *g_dir;

static ckpt_mpi_saver *open_saver(void)
{
    ckpt_mpi_saver_options o = test_mpi_options();
    ckpt_mpi_saver *s = NULL;
    assert_ckpt_ok(ckpt_mpi_saver_open(&s, MPI_COMM_WORLD, g_dir, &o));
    return s;
}

static void test_write(void **state)
{
    ckpt_mpi_saver *s;
    model m;
    (void)state;
    fresh_dir(g_dir);
    s = open_saver();
    model_fill(&m, test_rank(), test_size(), 5);
    model_register(s, &m, 0);
    assert_ckpt_ok(ckpt_mpi_saver_save(s, 5, NULL));
    model_fill(&m, test_rank(), test_size(), 6);
    assert_ckpt_ok(ckpt_mpi_saver_save_async(s, 6, NULL));
    model_zero(&m); /* the snapshot was taken */
    assert_ckpt_ok(ckpt_mpi_saver_close(s));
    ckpt_mpi_saver_free(s);
}

/* The single-process saver restores the 4-rank checkpoint: whole
 * partitioned tensors, one rank's per-rank value. */
static void single_process_restore(const char *prefix)
{
    ckpt_saver *s = NULL;
    float w[37], p[MODEL_P_ROWS * MODEL_P_COLS];
    int32_t q[MODEL_Q_ROWS * MODEL_Q_COLS];
    uint64_t rng[2];
    static const int64_t w_dims[] = {37}, rng_dims[] = {2};
    static const int64_t p_dims[] = {MODEL_P_ROWS, MODEL_P_COLS};
    static const int64_t q_dims[] = {MODEL_Q_ROWS, MODEL_Q_COLS};
    ckpt_var v[4];
    v[0] = model_var("w", CKPT_DT_FLOAT, 1, w_dims, w);
    v[1] = model_var("p", CKPT_DT_FLOAT, 2, p_dims, p);
    v[2] = model_var("q", CKPT_DT_INT32, 2, q_dims, q);
    v[3] = model_var("rng/rank-3", CKPT_DT_UINT64, 1, rng_dims, rng);
    assert_ckpt_ok(ckpt_saver_open(&s, g_dir, NULL));
    for (int i = 0; i < 4; i++)
        assert_ckpt_ok(ckpt_saver_add_var(s, &v[i]));
    assert_ckpt_ok(ckpt_saver_restore(s, prefix));
    for (int i = 0; i < 37; i++)
        assert_true(w[i] == model_w(6, i));
    for (int i = 0; i < MODEL_P_ROWS; i++)
        for (int j = 0; j < MODEL_P_COLS; j++)
            assert_true(p[i * MODEL_P_COLS + j] == model_p(6, i, j));
    for (int i = 0; i < MODEL_Q_ROWS; i++)
        for (int j = 0; j < MODEL_Q_COLS; j++)
            assert_int_equal(q[i * MODEL_Q_COLS + j], model_q(6, i, j));
    assert_true(rng[0] == model_rng(6, 3, 0));
    ckpt_saver_free(s);
}

/* LevelDB's own table reader opens the merged index; its keys are the
 * checkpoint's (header, slice keys, names), in order. */
static void leveldb_reads_index(const char *prefix)
{
#ifdef CKPT_LEVELDB_DUMP
    char cmd[8400];
    char line[4096];
    int lines = 0, have_w = 0, have_rng3 = 0, status;
    FILE *p;
    snprintf(cmd, sizeof(cmd), "'%s' '%s.index' 2>&1", CKPT_LEVELDB_DUMP,
             prefix);
    p = popen(cmd, "r");
    assert_non_null(p);
    while (fgets(line, sizeof(line), p)) {
        lines++;
        /* keys in hex: "w" = 77, "rng/rank-3" = 726e672f72616e6b2d33 */
        have_w |= strncmp(line, "77 ", 3) == 0;
        have_rng3 |= strncmp(line, "726e672f72616e6b2d33 ", 21) == 0;
    }
    status = pclose(p);
    assert_int_equal(status, 0);
    /* header + w, emb/table, step, p, q (full entries) + 4 + 4 slice
     * keys + 4 rng values */
    assert_int_equal(lines, 1 + 5 + 8 + 4);
    assert_true(have_w);
    assert_true(have_rng3);
#else
    (void)prefix;
    fprintf(stderr, "LevelDB not found: index cross-check skipped\n");
#endif
}

/* How many ranks wrote the checkpoint (one data file each). */
static int writers(const char *prefix)
{
    ckpt_bundle_reader *r = NULL;
    int n;
    assert_ckpt_ok(ckpt_bundle_reader_open(&r, prefix, NULL));
    n = ckpt_bundle_reader_num_shards(r);
    ckpt_bundle_reader_free(r);
    return n;
}

static void test_read(void **state)
{
    ckpt_mpi_saver_options o = test_mpi_options();
    ckpt_mpi_saver *s = NULL;
    ckpt_buf latest = CKPT_BUF_INIT;
    static char warnings[WARNINGS_SIZE];
    char want[4200];
    model m;
    int n;
    (void)state;
    o.base.log = keep_warnings;
    o.base.log_payload = warnings;
    assert_ckpt_ok(ckpt_mpi_saver_open(&s, MPI_COMM_WORLD, g_dir, &o));
    model_fill(&m, test_rank(), test_size(), 0);
    model_zero(&m);
    model_register(s, &m, 0);
    assert_ckpt_ok(ckpt_mpi_saver_restore_latest(s, &latest));
    snprintf(want, sizeof(want), "%s/model.ckpt-6", g_dir);
    assert_string_equal(latest.ptr, want);
    model_assert(&m, 6);
    /* Fewer ranks than wrote it: rank 0 says whose rng is not restored. */
    n = writers(latest.ptr);
    if (test_rank() == 0 && n > test_size()) {
        if (n - 1 > test_size())
            snprintf(want, sizeof(want),
                     "per-rank variable 'rng' has values for ranks %d to %d "
                     "that this %d-rank job does not restore",
                     test_size(), n - 1, test_size());
        else
            snprintf(want, sizeof(want),
                     "per-rank variable 'rng' has a value for rank %d that "
                     "this %d-rank job does not restore",
                     n - 1, test_size());
        if (!strstr(warnings, want))
            fail_msg("no warning '%s' in '%s'", want, warnings);
    } else {
        assert_null(strstr(warnings, "per-rank"));
    }
    snprintf(want, sizeof(want), "%s/model.ckpt-5", g_dir);
    assert_ckpt_ok(ckpt_mpi_saver_restore(s, want));
    model_assert(&m, 5);
    ckpt_mpi_saver_free(s);
    if (test_size() == 1 && writers(latest.ptr) == 4) {
        single_process_restore(latest.ptr);
        leveldb_reads_index(latest.ptr);
    }
    ckpt_buf_dispose(&latest);
}

/* More ranks than writers, rng optional: the shared state restores on
 * every rank (pieces cut from the one stored whole tensor), rng only where
 * the checkpoint has it. */
static void test_read_grow(void **state)
{
    ckpt_mpi_saver *s = open_saver();
    ckpt_buf latest = CKPT_BUF_INIT;
    model m;
    int n;
    (void)state;
    model_fill(&m, test_rank(), test_size(), 0);
    model_zero(&m);
    model_register(s, &m, MODEL_RNG_OPTIONAL);
    m.rng[0] = 77;
    assert_ckpt_ok(ckpt_mpi_saver_restore_latest(s, &latest));
    n = writers(latest.ptr);
    if (test_rank() >= n) {
        assert_true(m.rng[0] == 77);
        m.rng[0] = model_rng(6, test_rank(), 0);
        m.rng[1] = model_rng(6, test_rank(), 1);
    }
    model_assert(&m, 6);
    ckpt_mpi_saver_free(s);
    ckpt_buf_dispose(&latest);
}

static void test_read_missing(void **state)
{
    ckpt_mpi_saver *s = open_saver();
    ckpt_buf latest = CKPT_BUF_INIT;
    model m;
    (void)state;
    model_fill(&m, test_rank(), test_size(), 0);
    model_register(s, &m, 0);
    /* restore_latest: a mismatch (CKPT_EINVAL), not "no checkpoint", so
     * a program does not start afresh beside the checkpoint... */
    assert_ckpt_error(ckpt_mpi_saver_restore_latest(s, &latest), CKPT_EINVAL,
                      "rank 4: ");
    assert_ckpt_error(CKPT_EINVAL, CKPT_EINVAL,
                      "per-rank variable 'rng' has no value for rank 4 "
                      "('rng/rank-4' is missing; the checkpoint was written "
                      "by 4 rank(s), this job has 5)");
    /* ...while restore of that prefix names the missing tensor (B78). */
    assert_ckpt_ok(ckpt_latest_checkpoint(&latest, NULL, g_dir));
    assert_ckpt_error(ckpt_mpi_saver_restore(s, latest.ptr), CKPT_ENOTFOUND,
                      "'rng/rank-4' is missing");
    /* Nothing was written: the check comes before any read. */
    assert_true(m.w[0] == model_w(0, 0));
    ckpt_buf_dispose(&latest);
    ckpt_mpi_saver_free(s);
}

/* How a program tells which ranks got their optional value (docs/mpi.md,
 * Restore): the write callback runs only where the checkpoint holds one. */
static void test_read_optional(void **state)
{
    ckpt_mpi_saver *s = open_saver();
    model m;
    (void)state;
    model_fill(&m, test_rank(), test_size(), 0);
    model_register(s, &m, MODEL_RNG_OPTIONAL | MODEL_RNG_CALLBACKS);
    m.rng[0] = 77;
    m.rng_writes = 0;
    assert_ckpt_ok(ckpt_mpi_saver_restore_latest(s, NULL));
    if (test_rank() < 4) {
        assert_true(m.rng_writes > 0);
        model_assert(&m, 6);
    } else {
        assert_int_equal(m.rng_writes, 0);
        assert_true(m.rng[0] == 77);
        assert_true(m.w[3] == model_w(6, 3));
    }
    ckpt_mpi_saver_free(s);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest write[] = {cmocka_unit_test(test_write)};
    const struct CMUnitTest read[] = {cmocka_unit_test(test_read)};
    const struct CMUnitTest grow[] = {cmocka_unit_test(test_read_grow)};
    const struct CMUnitTest missing[] = {cmocka_unit_test(test_read_missing)};
    const struct CMUnitTest optional[] = {cmocka_unit_test(test_read_optional)};
    const mpi_test_group groups[] = {
        MPI_TEST_GROUP("write", write),
        MPI_TEST_GROUP("read", read),
        MPI_TEST_GROUP("read-grow", grow),
        MPI_TEST_GROUP("read-missing", missing),
        MPI_TEST_GROUP("read-optional", optional),
    };
    int provided, failed = 1;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    if (argc == 3) {
        g_dir = argv[2];
        failed =
            mpi_run_group(argv[1], groups, sizeof(groups) / sizeof(groups[0]));
    }
    if (argc != 3)
        fprintf(stderr,
                "usage: %s write|read|read-grow|read-missing|read-optional "
                "DIR\n",
                argv[0]);
    return mpi_tests_end(failed);
}
