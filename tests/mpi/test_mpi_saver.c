/* tests/mpi/test_mpi_saver.c - the distributed saver on however many ranks
 * mpiexec starts (CTest runs it on 1, 2, 3 and 4): sync and async saves
 * that read back as one ordinary checkpoint (one data file per rank, one
 * index, partitioned tensors whole), restores, a write failing on one rank
 * only, registrations every rank must reject (overlapping or missing
 * pieces, mismatched variable lists), each rank's write path (direct_io)
 * and snapshots of several pieces checksummed either way. Every test is
 * collective. */
#include "mpi_model.h"
#include "test_util.h"

#include "format/bundle_slices.h"
#include "format/bundle_test_helpers.h"
#include "io/fs_internal.h"
#include "mpi/mpi_internal.h"
#include "support/fs_fault.h"
#include "support/fs_forward.h"
#include "support/fs_gated_remove.h"
#include "util/crc32c.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef struct fixture {
    char *dir;
    model m;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof(*f));
    f->dir = shared_dir_make();
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    shared_dir_remove(f->dir);
    free(f);
    return 0;
}

static ckpt_mpi_saver *open_saver(const char *dir, const ckpt_fs *fs)
{
    ckpt_mpi_saver_options o = test_mpi_options();
    ckpt_mpi_saver *s = NULL;
    o.base.fs = fs;
    assert_ckpt_ok(ckpt_mpi_saver_open(&s, MPI_COMM_WORLD, dir, &o));
    return s;
}

/* Rank 0 reads the checkpoint with the single-process bundle reader. */
static void assert_ordinary_checkpoint(const char *prefix, int seed)
{
    ckpt_bundle_reader *r = NULL;
    const ckpt_tensor_entry *e;
    float p[MODEL_P_ROWS * MODEL_P_COLS];
    int32_t q[MODEL_Q_ROWS * MODEL_Q_COLS];
    float w[37];
    int ranks = test_size();
    assert_ckpt_ok(ckpt_bundle_reader_open(&r, prefix, NULL));
    assert_int_equal(ckpt_bundle_reader_num_shards(r), ranks);
    assert_ckpt_ok(ckpt_bundle_reader_verify(r));
    assert_ckpt_ok(ckpt_bundle_reader_read(r, "w", w, sizeof(w)));
    for (int i = 0; i < 37; i++)
        assert_true(w[i] == model_w(seed, i));
    assert_ckpt_ok(ckpt_bundle_reader_find(&e, r, "p"));
    assert_int_equal(e->num_slices, ranks > 1 ? ranks : 0);
    assert_ckpt_ok(ckpt_bundle_reader_read(r, "p", p, sizeof(p)));
    for (int i = 0; i < MODEL_P_ROWS; i++)
        for (int j = 0; j < MODEL_P_COLS; j++)
            assert_true(p[i * MODEL_P_COLS + j] == model_p(seed, i, j));
    assert_ckpt_ok(ckpt_bundle_reader_read(r, "q", q, sizeof(q)));
    for (int i = 0; i < MODEL_Q_ROWS; i++)
        for (int j = 0; j < MODEL_Q_COLS; j++)
            assert_int_equal(q[i * MODEL_Q_COLS + j], model_q(seed, i, j));
    for (int k = 0; k < ranks; k++) {
        char name[64];
        uint64_t rng[2];
        snprintf(name, sizeof(name), "rng/rank-%d", k);
        assert_ckpt_ok(ckpt_bundle_reader_read(r, name, rng, sizeof(rng)));
        assert_true(rng[0] == model_rng(seed, k, 0));
        assert_true(rng[1] == model_rng(seed, k, 1));
    }
    ckpt_bundle_reader_free(r);
}

static void test_sync_save_restore(void **state)
{
    fixture *f = *state;
    ckpt_mpi_saver *s = open_saver(f->dir, NULL);
    ckpt_buf prefix = CKPT_BUF_INIT, latest = CKPT_BUF_INIT;
    char want[4096];
    model_fill(&f->m, test_rank(), test_size(), 1);
    model_register(s, &f->m, 0);
    assert_ckpt_ok(ckpt_mpi_saver_save(s, 10, &prefix));
    snprintf(want, sizeof(want), "%s/model.ckpt-10", f->dir);
    assert_string_equal(prefix.ptr, want);
    if (test_rank() == 0) {
        char data[4200];
        assert_ordinary_checkpoint(prefix.ptr, 1);
        for (int r = 0; r < test_size(); r++) {
            snprintf(data, sizeof(data), "%s.data-%05d-of-%05d", prefix.ptr, r,
                     test_size());
            size_t n;
            uint8_t *bytes = test_read_file(data, &n);
            assert_non_null(bytes);
            free(bytes);
        }
        assert_int_equal(count_files_in(f->dir, "tempstate"), 0);
    }
    model_zero(&f->m);
    assert_ckpt_ok(ckpt_mpi_saver_restore_latest(s, &latest));
    assert_string_equal(latest.ptr, want);
    model_assert(&f->m, 1);
    ckpt_mpi_saver_free(s);
    ckpt_buf_dispose(&prefix);
    ckpt_buf_dispose(&latest);
}

static void test_async_save_is_a_snapshot(void **state)
{
    fixture *f = *state;
    ckpt_mpi_saver *s = open_saver(f->dir, NULL);
    ckpt_saver_metrics mt;
    uint64_t ticket = 0;
    int busy = 1;
    char want[4200];
    model_fill(&f->m, test_rank(), test_size(), 2);
    model_register(s, &f->m, 0);
    assert_ckpt_ok(ckpt_mpi_saver_save_async(s, 20, &ticket));
    assert_true(ticket > 0);
    /* The values change at once: the save must hold the snapshot. */
    model_fill(&f->m, test_rank(), test_size(), 3);
    assert_ckpt_ok(ckpt_mpi_saver_wait(s, -1));
    assert_ckpt_ok(ckpt_mpi_saver_poll(s, &busy));
    assert_int_equal(busy, 0);
    ckpt_mpi_saver_get_metrics(s, &mt);
    assert_int_equal(mt.saves_started, 1);
    assert_int_equal(mt.saves_completed, 1);
    assert_int_equal(mt.last_saved_step, 20);
    assert_ckpt_ok(ckpt_mpi_saver_restore_latest(s, NULL));
    model_assert(&f->m, 2);
    if (test_rank() == 0) {
        char prefix[4200];
        snprintf(prefix, sizeof(prefix), "%s/model.ckpt-20", f->dir);
        assert_ordinary_checkpoint(prefix, 2);
    }
    assert_ckpt_ok(ckpt_mpi_saver_close(s));
    /* a second close is refused, as the single-process saver's (it
     * returned 0) */
    snprintf(want, sizeof(want), "mpi saver %s: close: already closed", f->dir);
    assert_ckpt_error(ckpt_mpi_saver_close(s), CKPT_ESTATE, want);
    snprintf(want, sizeof(want), "mpi saver %s: save after close", f->dir);
    assert_ckpt_error(ckpt_mpi_saver_save(s, 30, NULL), CKPT_ESTATE, want);
    ckpt_mpi_saver_free(s);
}

/* The last rank's file system fails its first write-open: the save fails
 * on every rank with that rank's message, nothing of it is left, and the
 * earlier checkpoint stays the latest. */
/* After failed saves: the latest is still step 1, holding seed 4's model. */
static void expect_step1_latest(fixture *f, ckpt_mpi_saver *s)
{
    ckpt_buf latest = CKPT_BUF_INIT;
    char want[4096];
    model_zero(&f->m);
    assert_ckpt_ok(ckpt_mpi_saver_restore_latest(s, &latest));
    snprintf(want, sizeof(want), "%s/model.ckpt-1", f->dir);
    assert_string_equal(latest.ptr, want);
    model_assert(&f->m, 4);
    ckpt_buf_dispose(&latest);
}

static void test_write_fails_on_one_rank(void **state)
{
    fixture *f = *state;
    int victim = test_size() - 1;
    ckpt_fs_fault *ff = NULL;
    ckpt_mpi_saver *s;
    char needle[64];
    int rc;
    assert_ckpt_ok(ckpt_fs_fault_new(&ff, NULL));
    s = open_saver(f->dir, ckpt_fs_fault_fs(ff));
    model_fill(&f->m, test_rank(), test_size(), 4);
    model_register(s, &f->m, 0);
    assert_ckpt_ok(ckpt_mpi_saver_save(s, 1, NULL));
    if (test_rank() == victim)
        ckpt_fs_fault_fail(ff, 1, CKPT_FS_OP_BIT(CKPT_FS_OP_OPEN_WRITE), EIO, 0,
                           0);
    model_fill(&f->m, test_rank(), test_size(), 5);
    rc = ckpt_mpi_saver_save(s, 2, NULL);
    snprintf(needle, sizeof(needle), "rank %d: ", victim);
    assert_ckpt_error(rc, CKPT_EIO, needle);
    MPI_Barrier(MPI_COMM_WORLD);
    if (test_rank() == 0)
        assert_int_equal(count_files_in(f->dir, "model.ckpt-2"), 0);

    /* Asynchronous: the failure is returned once, by the next wait. */
    if (test_rank() == victim)
        ckpt_fs_fault_fail(ff, 1, CKPT_FS_OP_BIT(CKPT_FS_OP_OPEN_WRITE), EIO, 0,
                           0);
    assert_ckpt_ok(ckpt_mpi_saver_save_async(s, 3, NULL));
    assert_ckpt_error(ckpt_mpi_saver_wait(s, -1), CKPT_EIO, needle);
    assert_ckpt_ok(ckpt_mpi_saver_wait(s, -1));
    assert_ckpt_ok(ckpt_mpi_saver_poll(s, NULL));
    MPI_Barrier(MPI_COMM_WORLD);
    if (test_rank() == 0)
        assert_int_equal(count_files_in(f->dir, "model.ckpt-3"), 0);

    expect_step1_latest(f, s);
    ckpt_mpi_saver_free(s);
    ckpt_fs_fault_free(ff);
}

/* ---- a snapshot failing on one rank ------------------------------------ */

static int sensor_down; /* this rank's read callback fails while set */

static int sensor_read(void *dst, uint64_t offset, size_t n, void *payload)
{
    (void)offset;
    (void)payload;
    if (sensor_down)
        return ckpt_error_set(CKPT_EIO, "sensor offline");
    memset(dst, 7, n);
    return 0;
}

static int sensor_write(const void *src, uint64_t offset, size_t n,
                        void *payload)
{
    (void)src;
    (void)offset;
    (void)n;
    (void)payload;
    return 0;
}

static char done_prefix[512]; /* on_save_done's prefix, "(none)" if NULL */

static void note_done(const ckpt_save_result *r, void *payload)
{
    (void)payload;
    snprintf(done_prefix, sizeof(done_prefix), "%s",
             r->prefix ? r->prefix : "(none)");
}

/* A read callback failing on one rank: every rank's error and report name
 * the save that failed. The failing rank named none ("(null)") on its
 * first save, and the previous save's checkpoint after one had
 * succeeded; sync and async alike. */
static void test_snapshot_failure_names_the_save(void **state)
{
    fixture *f = *state;
    int victim = test_size() - 1;
    ckpt_mpi_saver_options o = test_mpi_options();
    ckpt_mpi_saver *s = NULL;
    ckpt_var v = {"sensor",    CKPT_DT_FLOAT, {1, {4}}, NULL,
                  sensor_read, sensor_write,  NULL};
    char want[4400], prefix[4200];
    o.base.on_save_done = note_done;
    assert_ckpt_ok(ckpt_mpi_saver_open(&s, MPI_COMM_WORLD, f->dir, &o));
    assert_ckpt_ok(ckpt_mpi_saver_add_per_rank(s, &v, 0));
    for (int round = 0; round < 3; round++) {
        int64_t step = 10 + round;
        int rc;
        sensor_down = test_rank() == victim && round != 1;
        done_prefix[0] = '\0';
        snprintf(prefix, sizeof(prefix), "%s/model.ckpt-%d", f->dir, (int)step);
        if (round < 2) {
            rc = ckpt_mpi_saver_save(s, step, NULL);
        } else {
            assert_ckpt_ok(ckpt_mpi_saver_save_async(s, step, NULL));
            rc = ckpt_mpi_saver_wait(s, -1);
        }
        assert_string_equal(done_prefix, prefix);
        if (round == 1) {
            assert_ckpt_ok(rc);
            continue;
        }
        snprintf(want, sizeof(want),
                 "rank %d: variable 'sensor': read callback failed: sensor "
                 "offline",
                 victim);
        assert_ckpt_error(rc, CKPT_EUSER, want);
        /* an async failure is returned later: it says which save it was */
        snprintf(want, sizeof(want), "save of step %d to %s failed: rank %d",
                 (int)step, prefix, victim);
        if (round == 2)
            assert_non_null(strstr(ckpt_error_last()->message, want));
    }
    sensor_down = 0;
    ckpt_mpi_saver_free(s);
}

/* Every rank must open the directory rank 0 opens (rank 0 renames every
 * rank's data file into its own): another directory on one rank was
 * accepted, and its saves "succeeded" with a prefix that rank could not
 * read. Now CKPT_EINVAL on every rank naming the rank and both paths; the
 * same directory by another path is fine; nothing is left behind. */
static void test_other_directory_refused(void **state)
{
    fixture *f = *state;
    int victim = test_size() - 1;
    char *other = test_path(f->dir, "elsewhere");
    char *same = test_path(other, "..");
    ckpt_mpi_saver_options o = test_mpi_options();
    ckpt_mpi_saver *s = NULL;
    char want[4400];
    if (test_size() == 1) {
        free(other);
        free(same);
        return; /* one rank: nothing to compare */
    }
    if (test_rank() == 0)
        assert_int_equal(mkdir(other, 0755), 0);
    MPI_Barrier(MPI_COMM_WORLD);
    snprintf(want, sizeof(want),
             "rank %d: mpi saver %s: this is not rank 0's checkpoint "
             "directory (%s): model.ckpt.ranks.tempstate",
             victim, other, f->dir);
    assert_ckpt_error(
        ckpt_mpi_saver_open(&s, MPI_COMM_WORLD,
                            test_rank() == victim ? other : f->dir, &o),
        CKPT_EINVAL, want);
    assert_null(s);
    /* a directory that does not exist there: said so */
    snprintf(want, sizeof(want),
             "rank %d: mpi saver %s/none: no such directory on this rank "
             "(rank 0 opened %s)",
             victim, other, f->dir);
    {
        char *none = test_path(other, "none");
        assert_ckpt_error(
            ckpt_mpi_saver_open(&s, MPI_COMM_WORLD,
                                test_rank() == victim ? none : f->dir, &o),
            CKPT_ENOTFOUND, want);
        free(none);
    }
    assert_null(s);
    assert_ckpt_ok(ckpt_mpi_saver_open(
        &s, MPI_COMM_WORLD, test_rank() == victim ? same : f->dir, &o));
    ckpt_mpi_saver_free(s);
    MPI_Barrier(MPI_COMM_WORLD);
    if (test_rank() == 0) {
        assert_int_equal(count_files_in(f->dir, "tempstate"), 0);
        assert_int_equal(count_files_in(other, ""), 2); /* . and .. */
    }
    free(other);
    free(same);
}

/* Ranks that reach the directory by different paths (each its own
 * working directory and a relative path, as docs/mpi.md allows): open and
 * save worked, but restore_latest sent rank 0's path of the checkpoint,
 * which the other ranks resolved against their own working directory
 * ("no such checkpoint", said as a missing variable). Each rank now joins
 * the checkpoint's name to its own path; prefix_out is that path. */
static void test_restore_latest_by_each_ranks_path(void **state)
{
    fixture *f = *state;
    char cwd[4096], own[4200], want[4300];
    char *a = test_path(f->dir, "a"), *b = test_path(f->dir, "b");
    const char *mine = test_rank() == 0 ? "ck" : "../a/ck";
    ckpt_mpi_saver *s = NULL;
    ckpt_mpi_saver_options o = test_mpi_options();
    ckpt_buf prefix = CKPT_BUF_INIT;
    assert_non_null(getcwd(cwd, sizeof(cwd)));
    if (test_rank() == 0) {
        char *ck = test_path(a, "ck");
        assert_int_equal(mkdir(a, 0755), 0);
        assert_int_equal(mkdir(b, 0755), 0);
        assert_int_equal(mkdir(ck, 0755), 0);
        free(ck);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    assert_int_equal(chdir(test_rank() == 0 ? a : b), 0);
    assert_ckpt_ok(ckpt_mpi_saver_open(&s, MPI_COMM_WORLD, mine, &o));
    model_fill(&f->m, test_rank(), test_size(), 4);
    model_register(s, &f->m, 0);
    assert_ckpt_ok(ckpt_mpi_saver_save(s, 2, NULL));
    model_zero(&f->m);
    assert_ckpt_ok(ckpt_mpi_saver_restore_latest(s, &prefix));
    model_assert(&f->m, 4);
    snprintf(own, sizeof(own), "%s/model.ckpt-2", mine);
    assert_string_equal(prefix.ptr, own);
    ckpt_mpi_saver_free(s);
    /* and with absolute paths in the state file, rank 0's */
    o.base.absolute_paths = 1;
    assert_ckpt_ok(ckpt_mpi_saver_open(&s, MPI_COMM_WORLD, mine, &o));
    model_register(s, &f->m, 0);
    assert_ckpt_ok(ckpt_mpi_saver_save(s, 3, NULL));
    model_zero(&f->m);
    assert_ckpt_ok(ckpt_mpi_saver_restore_latest(s, &prefix));
    model_assert(&f->m, 4);
    /* rank 0's as the state file has it; the others' by their own path */
    snprintf(want, sizeof(want), "%s/ck/model.ckpt-3", a);
    if (test_rank() == 0)
        assert_string_equal(prefix.ptr, want);
    else
        assert_string_equal(prefix.ptr, "../a/ck/model.ckpt-3");
    ckpt_mpi_saver_free(s);
    assert_int_equal(chdir(cwd), 0);
    ckpt_buf_dispose(&prefix);
    free(a);
    free(b);
}

/* No state file beside numbered checkpoints (it was lost): restore_latest
 * said only "no checkpoint to restore", and a program (ckpt-train
 * --distributed) started afresh beside them, saying nothing, its saves
 * then evicting them. The message now counts them and names the newest,
 * on every rank, as the single-process saver's does. */
static void test_restore_latest_names_unlisted_checkpoints(void **state)
{
    fixture *f = *state;
    ckpt_mpi_saver *s = open_saver(f->dir, NULL);
    char *state_path = test_path(f->dir, "checkpoint");
    model_fill(&f->m, test_rank(), test_size(), 5);
    model_register(s, &f->m, 0);
    assert_ckpt_ok(ckpt_mpi_saver_save(s, 1, NULL));
    assert_ckpt_ok(ckpt_mpi_saver_save(s, 2, NULL));
    MPI_Barrier(MPI_COMM_WORLD);
    if (test_rank() == 0)
        assert_int_equal(unlink(state_path), 0);
    MPI_Barrier(MPI_COMM_WORLD);
    assert_ckpt_error(ckpt_mpi_saver_restore_latest(s, NULL), CKPT_ENOTFOUND,
                      "no checkpoint to restore");
    assert_non_null(strstr(ckpt_error_last()->message,
                           "; 2 checkpoints of this saver's naming are in the "
                           "directory, the newest model.ckpt-2, not named by "
                           "a state file and so not restored "
                           "(ckpt_mpi_saver_restore restores one"));
    ckpt_mpi_saver_free(s);
    free(state_path);
}

/* A regular file where rank 0 has its directory: "this is not rank 0's
 * checkpoint directory" once, with CKPT_EINVAL; the header promises
 * CKPT_ENOTFOUND for a directory that is not one, and says so. */
static void test_file_for_directory_on_one_rank(void **state)
{
    fixture *f = *state;
    int victim = test_size() - 1;
    char *file = test_path(f->dir, "a-file");
    ckpt_mpi_saver_options o = test_mpi_options();
    ckpt_mpi_saver *s = NULL;
    char want[4400];
    if (test_size() == 1) {
        free(file);
        return;
    }
    if (test_rank() == 0) {
        FILE *fp = fopen(file, "w");
        assert_non_null(fp);
        fclose(fp);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    snprintf(want, sizeof(want),
             "rank %d: mpi saver %s: not a directory on this rank (rank 0 "
             "opened %s)",
             victim, file, f->dir);
    assert_ckpt_error(ckpt_mpi_saver_open(&s, MPI_COMM_WORLD,
                                          test_rank() == victim ? file : f->dir,
                                          &o),
                      CKPT_ENOTFOUND, want);
    assert_null(s);
    MPI_Barrier(MPI_COMM_WORLD);
    if (test_rank() == 0)
        assert_int_equal(count_files_in(f->dir, "tempstate"), 0);
    free(file);
}

/* Options that decide what every rank does, different on one rank: a
 * busy_policy of WAIT against SKIP left the ranks in different collectives
 * at the next busy trigger until the collective timeout aborted the job,
 * and a basename or pad_step_number told that rank a prefix no file has.
 * Now the open fails on every rank, naming the option, both values and
 * the rank; the same options (max_to_keep 0 is the default 5) open. */
static void test_options_that_differ_refused(void **state)
{
    fixture *f = *state;
    int victim = test_size() - 1;
    static const char *const wants[] = {
        "basename is 'other.ckpt' on this rank but 'model.ckpt' on rank 0",
        "pad_step_number is 1 on this rank but 0 on rank 0",
        "absolute_paths is 1 on this rank but 0 on rank 0",
        "max_to_keep is 3 on this rank but 5 on rank 0",
        "keep_checkpoint_every_n_hours is 0.5 on this rank but 0 on rank 0",
        "busy_policy is CKPT_BUSY_WAIT on this rank but CKPT_BUSY_SKIP on "
        "rank 0",
    };
    ckpt_mpi_saver *s = NULL;
    if (test_size() == 1)
        return;
    for (int c = 0; c < 6; c++) {
        ckpt_mpi_saver_options o = test_mpi_options();
        char want[4400];
        if (test_rank() == victim) {
            if (c == 0)
                o.base.basename = "other.ckpt";
            else if (c == 1)
                o.base.pad_step_number = 1;
            else if (c == 2)
                o.base.absolute_paths = 1;
            else if (c == 3)
                o.base.max_to_keep = 3;
            else if (c == 4)
                o.base.keep_checkpoint_every_n_hours = 0.5;
            else
                o.base.busy_policy = CKPT_BUSY_WAIT;
        }
        snprintf(want, sizeof(want), "rank %d: mpi saver %s: %s", victim,
                 f->dir, wants[c]);
        assert_ckpt_error(ckpt_mpi_saver_open(&s, MPI_COMM_WORLD, f->dir, &o),
                          CKPT_EINVAL, want);
        assert_null(s);
    }
    {
        ckpt_mpi_saver_options o = test_mpi_options();
        if (test_rank() == victim)
            o.base.max_to_keep = 5; /* rank 0 leaves it 0: the default */
        assert_ckpt_ok(ckpt_mpi_saver_open(&s, MPI_COMM_WORLD, f->dir, &o));
        ckpt_mpi_saver_free(s);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (test_rank() == 0)
        assert_int_equal(count_files_in(f->dir, "tempstate"), 0);
}

/* A bad argument on one rank only (options that do not validate, a NULL
 * directory, a NULL out): that rank returned at once while the others
 * waited for it in open's agreement until their timeout aborted the job
 * (and a retry paired its open with their next call). Now every rank gets
 * CKPT_EINVAL naming the rank, and the next open on every rank works. */
static void test_bad_argument_on_one_rank(void **state)
{
    fixture *f = *state;
    int victim = test_size() - 1;
    ckpt_mpi_saver *s = NULL;
    char want[4400];
    for (int c = 0; c < 3; c++) {
        ckpt_mpi_saver_options o = test_mpi_options();
        ckpt_mpi_saver **out = &s;
        const char *dir = f->dir;
        o.collective_timeout_s = 60;
        if (test_rank() == victim && c == 0)
            o.collective_timeout_s = -1;
        if (test_rank() == victim && c == 1)
            dir = NULL;
        if (test_rank() == victim && c == 2)
            out = NULL;
        if (c == 0)
            snprintf(want, sizeof(want),
                     "rank %d: mpi saver %s: options: collective_timeout_s "
                     "is negative",
                     victim, f->dir);
        else if (c == 1)
            snprintf(want, sizeof(want),
                     "rank %d: mpi saver: no checkpoint directory given",
                     victim);
        else
            snprintf(want, sizeof(want),
                     "rank %d: ckpt_mpi_saver_open: out is NULL", victim);
        assert_ckpt_error(ckpt_mpi_saver_open(out, MPI_COMM_WORLD, dir, &o),
                          CKPT_EINVAL, want);
        assert_null(s);
        o = test_mpi_options();
        assert_ckpt_ok(ckpt_mpi_saver_open(&s, MPI_COMM_WORLD, f->dir, &o));
        ckpt_mpi_saver_free(s);
        s = NULL;
    }
}

/* A negative step fails the save on every rank alike: the sync save at
 * once, save_async as a failed save reported by the next wait (every rank
 * takes part, so a negative step on one rank only ends no rank early and
 * leaves none waiting); the saves after it succeed. */
static void test_negative_step_fails_on_every_rank(void **state)
{
    fixture *f = *state;
    ckpt_mpi_saver *s = open_saver(f->dir, NULL);
    char want[4400];
    int busy = -1;
    model_fill(&f->m, test_rank(), test_size(), 4);
    model_register(s, &f->m, 0);
    assert_ckpt_error(ckpt_mpi_saver_save(s, -5, NULL), CKPT_EINVAL,
                      "save: step -5 is negative");
    for (int c = 0; c < 2; c++) {
        /* every rank, then the last rank only */
        int neg = c == 0 || test_rank() == test_size() - 1;
        assert_ckpt_ok(ckpt_mpi_saver_save_async(s, neg ? -5 : 3, NULL));
        snprintf(want, sizeof(want), "rank %d: save: step -5 is negative",
                 c == 0 ? 0 : test_size() - 1);
        assert_ckpt_error(ckpt_mpi_saver_wait(s, -1), CKPT_EINVAL, want);
        if (neg) /* no checkpoint was named: none is ("to (unnamed)") */
            assert_non_null(strstr(ckpt_error_last()->message,
                                   "save of step -5 failed: rank "));
        assert_ckpt_ok(ckpt_mpi_saver_poll(s, &busy));
        assert_int_equal(busy, 0);
    }
    assert_ckpt_ok(ckpt_mpi_saver_save_async(s, 5, NULL));
    assert_ckpt_ok(ckpt_mpi_saver_wait(s, -1));
    assert_ckpt_ok(ckpt_mpi_saver_close(s));
    if (test_rank() == 0) {
        snprintf(want, sizeof(want), "%s/model.ckpt-5", f->dir);
        assert_ordinary_checkpoint(want, 4);
    }
    ckpt_mpi_saver_free(s);
}

/* A rank reaching the directory by a path relative to its own working
 * directory, which means another directory on rank 0: the saves failed on
 * every rank, as rank 0 renamed each rank's temporary file by the path
 * that rank wrote it under ("rename ../model.ckpt-3.data-00001-of-00002
 * .tempstate...: No such file"). Rank 0 now joins the file's name to its
 * own path; the checkpoint saves, reads whole and restores. */
static void test_relative_path_on_one_rank_saves(void **state)
{
    fixture *f = *state;
    int victim = test_size() - 1;
    char *sub = test_path(f->dir, "sub");
    ckpt_mpi_saver *s = NULL;
    ckpt_buf prefix = CKPT_BUF_INIT;
    int cwd;
    if (test_size() == 1) {
        free(sub);
        return; /* the one rank is rank 0 */
    }
    cwd = open(".", O_RDONLY | O_DIRECTORY);
    assert_true(cwd >= 0);
    if (test_rank() == 0)
        assert_int_equal(mkdir(sub, 0755), 0);
    MPI_Barrier(MPI_COMM_WORLD);
    if (test_rank() == victim)
        assert_int_equal(chdir(sub), 0);
    s = open_saver(test_rank() == victim ? ".." : f->dir, NULL);
    model_fill(&f->m, test_rank(), test_size(), 3);
    model_register(s, &f->m, 0);
    assert_ckpt_ok(ckpt_mpi_saver_save(s, 3, &prefix));
    if (test_rank() == 0) {
        char want[4200];
        snprintf(want, sizeof(want), "%s/model.ckpt-3", f->dir);
        assert_string_equal(prefix.ptr, want);
        assert_ordinary_checkpoint(prefix.ptr, 3);
        assert_int_equal(count_files_in(f->dir, "tempstate"), 0);
    }
    model_zero(&f->m);
    assert_ckpt_ok(ckpt_mpi_saver_restore_latest(s, NULL));
    model_assert(&f->m, 3);
    ckpt_mpi_saver_free(s);
    assert_int_equal(fchdir(cwd), 0);
    close(cwd);
    ckpt_buf_dispose(&prefix);
    free(sub);
}

/* Ranks passing different steps to one collective save: every rank gets
 * CKPT_EINVAL naming the ranks and steps, sync and async, and nothing is
 * committed (each rank named its file by its own step: the checkpoint
 * would have taken rank 0's name with another step's values). */
static void test_step_mismatch_rejected(void **state)
{
    fixture *f = *state;
    int odd = test_size() - 1;
    ckpt_mpi_saver *s;
    char needle[128];
    if (test_size() < 2)
        return; /* one rank cannot disagree */
    s = open_saver(f->dir, NULL);
    model_fill(&f->m, test_rank(), test_size(), 4);
    model_register(s, &f->m, 0);
    assert_ckpt_ok(ckpt_mpi_saver_save(s, 1, NULL));
    snprintf(needle, sizeof(needle),
             "rank %d saves step %d but rank 0 step 100: a collective save "
             "takes the same step on every rank",
             odd, 101);
    model_fill(&f->m, test_rank(), test_size(), 5);
    assert_ckpt_error(
        ckpt_mpi_saver_save(s, test_rank() == odd ? 101 : 100, NULL),
        CKPT_EINVAL, needle);
    assert_ckpt_ok(
        ckpt_mpi_saver_save_async(s, test_rank() == odd ? 101 : 100, NULL));
    assert_ckpt_error(ckpt_mpi_saver_wait(s, -1), CKPT_EINVAL, needle);
    assert_ckpt_ok(ckpt_mpi_saver_wait(s, -1));
    /* A failed async save, then a sync save (which does not return it):
     * poll never returns it (ranks learn it at different calls); the next
     * save_async returns it on every rank, once, and dispatches nothing. */
    assert_ckpt_ok(
        ckpt_mpi_saver_save_async(s, test_rank() == odd ? 101 : 100, NULL));
    model_fill(&f->m, test_rank(), test_size(), 4); /* step 1's values */
    assert_ckpt_ok(ckpt_mpi_saver_save(s, 1, NULL));
    assert_ckpt_ok(ckpt_mpi_saver_poll(s, NULL));
    assert_ckpt_error(ckpt_mpi_saver_save_async(s, 102, NULL), CKPT_EINVAL,
                      needle);
    assert_ckpt_ok(ckpt_mpi_saver_wait(s, -1));
    assert_ckpt_ok(ckpt_mpi_saver_poll(s, NULL));
    MPI_Barrier(MPI_COMM_WORLD);
    if (test_rank() == 0) {
        assert_int_equal(count_files_in(f->dir, "model.ckpt-100"), 0);
        assert_int_equal(count_files_in(f->dir, "model.ckpt-101"), 0);
        assert_int_equal(count_files_in(f->dir, "model.ckpt-102"), 0);
        assert_int_equal(count_files_in(f->dir, "tempstate"), 0);
    }
    expect_step1_latest(f, s);
    ckpt_mpi_saver_free(s);
}

/* A checkpoint whose tensor has another shape than the variable: every
 * rank fails before anything is written. */
static void test_restore_shape_mismatch(void **state)
{
    fixture *f = *state;
    ckpt_mpi_saver *s = open_saver(f->dir, NULL);
    float w[8], w2[8], w3[8];
    ckpt_var v;
    model_fill(&f->m, test_rank(), test_size(), 1);
    model_register(s, &f->m, 0);
    assert_ckpt_ok(ckpt_mpi_saver_save(s, 1, NULL));
    ckpt_mpi_saver_free(s);
    s = open_saver(f->dir, NULL);
    for (int i = 0; i < 8; i++)
        w[i] = -1.0f;
    v = test_float_var("w", w, 8);
    assert_ckpt_ok(ckpt_mpi_saver_add_replicated(s, &v));
    assert_ckpt_error(ckpt_mpi_saver_restore_latest(s, NULL), CKPT_EINVAL,
                      "tensor 'w' is float32 [37] in the checkpoint, the "
                      "variable is float32 [8]");
    assert_true(w[0] == -1.0f);
    ckpt_mpi_saver_free(s);

    /* Several mismatches: the first in full, the others named with it. */
    s = open_saver(f->dir, NULL);
    assert_ckpt_ok(ckpt_mpi_saver_add_replicated(s, &v));
    v.name = "not/there";
    v.data = w2;
    assert_ckpt_ok(ckpt_mpi_saver_add_replicated(s, &v));
    v.name = "also/gone";
    v.data = w3;
    assert_ckpt_ok(ckpt_mpi_saver_add_per_rank(s, &v, 0));
    assert_ckpt_error(ckpt_mpi_saver_restore_latest(s, NULL), CKPT_EINVAL,
                      "variable is float32 [8] (and 2 more variables do not "
                      "match the checkpoint: 'not/there', 'also/gone')");
    assert_true(w[0] == -1.0f);
    ckpt_mpi_saver_free(s);
}

/* A damaged byte in every data file: every rank's restore fails with
 * CKPT_ECORRUPT (pieces read straight into place are checked too). */
static void test_restore_detects_damage(void **state)
{
    fixture *f = *state;
    ckpt_mpi_saver *s = open_saver(f->dir, NULL);
    ckpt_buf prefix = CKPT_BUF_INIT;
    model_fill(&f->m, test_rank(), test_size(), 1);
    model_register(s, &f->m, 0);
    assert_ckpt_ok(ckpt_mpi_saver_save(s, 1, &prefix));
    MPI_Barrier(MPI_COMM_WORLD);
    if (test_rank() == 0) {
        for (int r = 0; r < test_size(); r++) {
            char path[4200];
            size_t n;
            uint8_t *bytes;
            snprintf(path, sizeof(path), "%s.data-%05d-of-%05d", prefix.ptr, r,
                     test_size());
            bytes = test_read_file(path, &n);
            assert_non_null(bytes);
            bytes[n / 2] ^= 0x40;
            test_write_file(path, bytes, n);
            free(bytes);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    assert_ckpt_error(ckpt_mpi_saver_restore(s, prefix.ptr), CKPT_ECORRUPT,
                      "rank ");
    ckpt_mpi_saver_free(s);
    ckpt_buf_dispose(&prefix);
}

/* Fault loop: rank `victim`'s N-th mutating file operation fails, for
 * every N until a save succeeds. Each failure fails the save on every rank
 * with the victim's message and leaves the previous checkpoint the latest
 * (restored values checked); reopening leaves no temporary or orphan
 * file. */
static void fault_loop(fixture *f, int victim)
{
    ckpt_fs_fault *ff = NULL;
    ckpt_mpi_saver *s;
    char needle[64];
    int n, rc = -1;
    assert_ckpt_ok(ckpt_fs_fault_new(&ff, NULL));
    s = open_saver(f->dir, ckpt_fs_fault_fs(ff));
    model_fill(&f->m, test_rank(), test_size(), 6);
    model_register(s, &f->m, 0);
    assert_ckpt_ok(ckpt_mpi_saver_save(s, 1, NULL));
    snprintf(needle, sizeof(needle), "rank %d: ", victim);
    for (n = 1; n < 200 && rc != 0; n++) {
        if (test_rank() == victim)
            ckpt_fs_fault_fail(ff, (uint64_t)n, CKPT_FS_OP_MUTATING, EIO, 0, 0);
        model_fill(&f->m, test_rank(), test_size(), 7);
        rc = ckpt_mpi_saver_save(s, 2, NULL);
        ckpt_fs_fault_clear(ff);
        if (rc == 0)
            break;
        assert_ckpt_error(rc, CKPT_EIO, needle);
        model_zero(&f->m);
        assert_ckpt_ok(ckpt_mpi_saver_restore_latest(s, NULL));
        model_assert(&f->m, 6);
    }
    assert_int_equal(rc, 0);
    assert_true(n > 3); /* the loop met failures before succeeding */
    model_zero(&f->m);
    assert_ckpt_ok(ckpt_mpi_saver_restore_latest(s, NULL));
    model_assert(&f->m, 7);
    ckpt_mpi_saver_free(s);
    s = open_saver(f->dir, NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    if (test_rank() == 0) {
        assert_int_equal(count_files_in(f->dir, "tempstate"), 0);
        assert_int_equal(count_files_in(f->dir, ".index"), 2);
        assert_int_equal(count_files_in(f->dir, ".data-"), 2 * test_size());
    }
    ckpt_mpi_saver_free(s);
    ckpt_fs_fault_free(ff);
}

static void test_fault_loop_on_rank0(void **state)
{
    fault_loop(*state, 0);
}

static void test_fault_loop_on_last_rank(void **state)
{
    fault_loop(*state, test_size() - 1);
}

/* Pieces of "t" [2 * ranks, 2]: rank r holds rows [2r, 2r + len_r). */
static int register_rows(ckpt_mpi_saver *s, float *buf, int64_t start,
                         int64_t len)
{
    ckpt_var v;
    ckpt_slice_extent e[2] = {{start, len}, {0, CKPT_SLICE_FULL}};
    memset(&v, 0, sizeof(v));
    v.name = "t";
    v.dtype = CKPT_DT_FLOAT;
    v.shape.rank = 2;
    v.shape.dims[0] = 2 * test_size();
    v.shape.dims[1] = 2;
    v.data = buf;
    return ckpt_mpi_saver_add_partitioned(s, &v, e);
}

static void test_overlapping_pieces_rejected(void **state)
{
    fixture *f = *state;
    float buf[16] = {0};
    ckpt_mpi_saver *s;
    int r = test_rank();
    if (test_size() < 2)
        skip();
    s = open_saver(f->dir, NULL);
    /* Rank 0 takes three rows: its piece overlaps rank 1's. */
    assert_ckpt_ok(register_rows(s, buf, 2 * r, r == 0 ? 3 : 2));
    assert_ckpt_error(
        ckpt_mpi_saver_check(s), CKPT_EINVAL,
        "'t': the pieces of rank 0 (0,3:0,2) and rank 1 (2,2:0,2) "
        "overlap");
    assert_ckpt_error(ckpt_mpi_saver_save(s, 1, NULL), CKPT_EINVAL, "overlap");
    ckpt_mpi_saver_free(s);
    MPI_Barrier(MPI_COMM_WORLD);
    if (r == 0)
        assert_int_equal(count_files_in(f->dir, "model.ckpt"), 0);
}

static void test_hole_rejected(void **state)
{
    fixture *f = *state;
    float buf[16] = {0};
    ckpt_mpi_saver *s = open_saver(f->dir, NULL);
    char needle[128];
    int r = test_rank();
    /* The last rank holds one row of its two. */
    assert_ckpt_ok(register_rows(s, buf, 2 * r, r == test_size() - 1 ? 1 : 2));
    snprintf(needle, sizeof(needle), "cover %d of its %d elements (a hole)",
             (2 * test_size() - 1) * 2, 4 * test_size());
    assert_ckpt_error(ckpt_mpi_saver_check(s), CKPT_EINVAL, needle);
    assert_ckpt_error(ckpt_mpi_saver_check(s), CKPT_EINVAL, "'t'");
    ckpt_mpi_saver_free(s);
}

/* A checkpoint whose partitioned tensor "m" [240, 2] is stored in 120
 * pieces of two rows (more than are checked pairwise for overlaps: the
 * restore then marks the elements each piece covers), written by one
 * process; `skip` >= 0 leaves that piece out (a hole). */
static void write_many_pieces(const char *prefix, int skip)
{
    ckpt_bundle_writer *w = NULL;
    ckpt_shape full = {.rank = 2, .dims = {240, 2}};
    float v[4];
    assert_ckpt_ok(ckpt_bundle_writer_open(&w, prefix, NULL));
    for (int p = 0; p < 120; p++) {
        ckpt_slice_extent e[2] = {{2 * p, 2}, {0, CKPT_SLICE_FULL}};
        if (p == skip)
            continue;
        for (int k = 0; k < 4; k++)
            v[k] = (float)(4 * p + k);
        assert_ckpt_ok(ckpt_bundle_writer_add_slice(w, "m", CKPT_DT_FLOAT,
                                                    &full, e, v, sizeof(v)));
    }
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);
}

/* Rows [lo, hi) of "m" on this rank (240 rows split over the ranks). */
static ckpt_mpi_saver *open_many(const char *dir, float *buf, int64_t *lo,
                                 int64_t *hi)
{
    ckpt_mpi_saver *s = open_saver(dir, NULL);
    ckpt_var v;
    ckpt_slice_extent e[2];
    *lo = 240 * test_rank() / test_size();
    *hi = 240 * (test_rank() + 1) / test_size();
    e[0].start = *lo;
    e[0].length = *hi - *lo;
    e[1].start = 0;
    e[1].length = CKPT_SLICE_FULL;
    memset(&v, 0, sizeof(v));
    v.name = "m";
    v.dtype = CKPT_DT_FLOAT;
    v.shape.rank = 2;
    v.shape.dims[0] = 240;
    v.shape.dims[1] = 2;
    v.data = buf;
    assert_ckpt_ok(ckpt_mpi_saver_add_partitioned(s, &v, e));
    return s;
}

/* Restores from many pieces, and a layout fault found before anything is
 * written. */
static void test_restore_from_many_pieces(void **state)
{
    fixture *f = *state;
    static float buf[480];
    char good[4200], holed[4200];
    int64_t lo, hi;
    ckpt_mpi_saver *s;
    snprintf(good, sizeof(good), "%s/many", f->dir);
    snprintf(holed, sizeof(holed), "%s/holed", f->dir);
    if (test_rank() == 0) {
        write_many_pieces(good, -1);
        write_many_pieces(holed, 119);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    s = open_many(f->dir, buf, &lo, &hi);
    memset(buf, 0, sizeof(buf));
    assert_ckpt_ok(ckpt_mpi_saver_restore(s, good));
    for (int64_t i = 0; i < 2 * (hi - lo); i++)
        assert_true(buf[i] == (float)(2 * lo + i));
    /* The hole fails the restore on every rank before any variable is
     * written: no rank's piece changes, not even those the hole is not
     * in (nor the rows of the hole's rank before it). */
    for (int i = 0; i < 480; i++)
        buf[i] = -7.0f;
    assert_ckpt_error(ckpt_mpi_saver_restore(s, holed), CKPT_ECORRUPT,
                      "tensor 'm'");
    assert_non_null(strstr(ckpt_error_last()->message, " cover "));
    for (int i = 0; i < 480; i++)
        assert_true(buf[i] == -7.0f);
    ckpt_mpi_saver_free(s);
}

/* "m" [240, 2] (element i holds i) stored in two pieces of 120 rows, each
 * under its slice key, the full entry listing the first `listed` of them;
 * with `big_endian` the header says so and each float's bytes are
 * reversed, as a big-endian machine's TensorFlow stores them; with
 * `nested` the first piece's entry lists a slice too (a partitioned
 * tensor's entry, which has no record of its own). */
static void write_pieces(const char *prefix, int listed, int big_endian,
                         int nested)
{
    static float v[480];
    static uint8_t stored[1920];
    ckpt__tensor_slice sl[2];
    ckpt__bundle_entry full, piece[2];
    ckpt_buf header = CKPT_BUF_INIT, fullv = CKPT_BUF_INIT;
    ckpt_buf key[2] = {CKPT_BUF_INIT, CKPT_BUF_INIT};
    ckpt_buf pv[2] = {CKPT_BUF_INIT, CKPT_BUF_INIT};
    ckpt_buf path = CKPT_BUF_INIT;
    bt_kv kvs[4];
    for (int i = 0; i < 480; i++)
        v[i] = (float)i;
    memcpy(stored, v, sizeof(stored));
    for (size_t i = 0; big_endian && i < sizeof(stored); i += 4)
        for (int j = 0; j < 2; j++) {
            uint8_t t = stored[i + j];
            stored[i + j] = stored[i + 3 - j];
            stored[i + 3 - j] = t;
        }
    for (int k = 0; k < 2; k++) {
        memset(&sl[k], 0, sizeof(sl[k]));
        sl[k].rank = 2;
        sl[k].start[0] = 120 * k;
        sl[k].length[0] = 120;
        sl[k].length[1] = -1;
        assert_ckpt_ok(ckpt__slice_key_encode(&key[k], "m", 1, &sl[k]));
        memset(&piece[k], 0, sizeof(piece[k]));
        piece[k].dtype = CKPT_DT_FLOAT;
        piece[k].shape.rank = 2;
        piece[k].shape.dims[0] = 120;
        piece[k].shape.dims[1] = 2;
        piece[k].offset = 960 * k;
        piece[k].size = 960;
        piece[k].crc32c =
            ckpt__crc32c_mask(ckpt__crc32c(stored + 960 * k, 960));
        if (k == 0 && nested) {
            piece[k].num_slices = 1;
            piece[k].slices = &sl[0];
        }
        bt_entry(&pv[k], &piece[k]);
    }
    memset(&full, 0, sizeof(full));
    full.dtype = CKPT_DT_FLOAT;
    full.shape.rank = 2;
    full.shape.dims[0] = 240;
    full.shape.dims[1] = 2;
    full.num_slices = listed;
    full.slices = &sl[0];
    bt_entry(&fullv, &full);
    bt_header(&header, 1, big_endian);
    kvs[0] = (bt_kv){"", 0, header.ptr, header.size};
    kvs[1] = (bt_kv){key[0].ptr, key[0].size, pv[0].ptr, pv[0].size};
    kvs[2] = (bt_kv){key[1].ptr, key[1].size, pv[1].ptr, pv[1].size};
    kvs[3] = (bt_kv){"m", 1, fullv.ptr, fullv.size};
    assert_ckpt_ok(ckpt_bundle_index_path(&path, prefix));
    bt_write_table(path.ptr, kvs, 4);
    assert_ckpt_ok(ckpt_bundle_data_path(&path, prefix, 0, 1));
    test_write_file(path.ptr, stored, sizeof(stored));
    ckpt_buf_dispose(&path);
    ckpt_buf_dispose(&header);
    ckpt_buf_dispose(&fullv);
    for (int k = 0; k < 2; k++) {
        ckpt_buf_dispose(&key[k]);
        ckpt_buf_dispose(&pv[k]);
    }
}

/* A stored piece its entry does not list is not read, on any number of
 * ranks (it used to fill the rows of whichever rank it overlapped, so the
 * restore succeeded on 2 or 3 ranks and failed on 1). */
static void test_restore_ignores_unlisted_piece(void **state)
{
    fixture *f = *state;
    static float buf[480];
    char prefix[4200];
    int64_t lo, hi;
    ckpt_mpi_saver *s;
    snprintf(prefix, sizeof(prefix), "%s/unlisted", f->dir);
    if (test_rank() == 0) /* the second piece is not part of the tensor */
        write_pieces(prefix, 1, 0, 0);
    MPI_Barrier(MPI_COMM_WORLD);
    s = open_many(f->dir, buf, &lo, &hi);
    assert_ckpt_error(ckpt_mpi_saver_restore(s, prefix), CKPT_ECORRUPT,
                      "tensor 'm'");
    assert_non_null(strstr(ckpt_error_last()->message, " cover "));
    ckpt_mpi_saver_free(s);
}

/* A big-endian checkpoint's pieces are brought to the host's byte order,
 * as the single-process reader brings them, whether a piece is read
 * straight into the rank's value (1 and 2 ranks: each rank's rows hold
 * whole pieces) or through a buffer (3 and 4 ranks). They were copied as
 * stored: every float byte-swapped, silently. */
static void test_restore_big_endian_pieces(void **state)
{
    fixture *f = *state;
    static float buf[480];
    char prefix[4200];
    int64_t lo, hi;
    ckpt_mpi_saver *s;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    skip(); /* the pieces are written reversed from a little-endian host */
#endif
    snprintf(prefix, sizeof(prefix), "%s/big", f->dir);
    if (test_rank() == 0)
        write_pieces(prefix, 2, 1, 0);
    MPI_Barrier(MPI_COMM_WORLD);
    s = open_many(f->dir, buf, &lo, &hi);
    memset(buf, 0, sizeof(buf));
    assert_ckpt_ok(ckpt_mpi_saver_restore(s, prefix));
    for (int64_t i = 0; i < 2 * (hi - lo); i++)
        assert_true(buf[i] == (float)(2 * lo + i));
    ckpt_mpi_saver_free(s);
}

/* A stored piece whose entry is itself partitioned is damage, found by the
 * layout check on every rank count before any variable is written (as the
 * single-process reader finds it): on 2 ranks its offset and size were
 * read as if they were a record's, unchecked, and the restore succeeded;
 * on 3 and 4 it failed while reading, with CKPT_ENOTSUP. */
static void test_nested_piece_rejected(void **state)
{
    fixture *f = *state;
    static float buf[480];
    char prefix[4200];
    int64_t lo, hi;
    ckpt_mpi_saver *s;
    snprintf(prefix, sizeof(prefix), "%s/nested", f->dir);
    if (test_rank() == 0)
        write_pieces(prefix, 2, 0, 1);
    MPI_Barrier(MPI_COMM_WORLD);
    s = open_many(f->dir, buf, &lo, &hi);
    for (int i = 0; i < 480; i++)
        buf[i] = -7.0f;
    assert_ckpt_error(ckpt_mpi_saver_restore(s, prefix), CKPT_ECORRUPT,
                      "tensor 'm'");
    assert_non_null(strstr(ckpt_error_last()->message, "itself partitioned"));
    for (int i = 0; i < 480; i++)
        assert_true(buf[i] == -7.0f);
    ckpt_mpi_saver_free(s);
}

/* A saver on f->dir with the model registered on every rank and, on the
 * last rank only, `n` replicated float32 [4] variables `names` (their
 * values in `extra`). */
static ckpt_mpi_saver *open_with_last_rank_extras(fixture *f,
                                                  const char *const *names,
                                                  float (*extra)[4], int n)
{
    ckpt_mpi_saver *s = open_saver(f->dir, NULL);
    model_fill(&f->m, test_rank(), test_size(), 1);
    model_register(s, &f->m, 0);
    for (int i = 0; test_rank() == test_size() - 1 && i < n; i++) {
        ckpt_var v = test_float_var(names[i], extra[i], 4);
        assert_ckpt_ok(ckpt_mpi_saver_add_replicated(s, &v));
    }
    return s;
}

static void test_mismatched_lists_rejected(void **state)
{
    fixture *f = *state;
    static const char *const names[] = {"extra"};
    static float extra[1][4];
    ckpt_mpi_saver *s;
    char needle[4400];
    if (test_size() < 2)
        skip();
    s = open_with_last_rank_extras(f, names, extra, 1);
    /* the variable, rank 0's registration and the differing rank's, every
     * rank that differs, the saver's directory and what to do */
    snprintf(needle, sizeof(needle),
             "mpi saver %s: checking variables: mismatched variable lists: "
             "variable 'extra': rank 0 did not register it, rank %d "
             "registered it as replicated float32 [4] (ranks that differ "
             "from rank 0 on it: %d); register the same variables on every "
             "rank (name, kind, dtype and shape; order does not matter)",
             f->dir, test_size() - 1, test_size() - 1);
    /* restore_latest checks the lists first, also with no checkpoint to
     * restore (it once answered "none" and the mismatch surfaced only at
     * the first save, after training had started) */
    assert_ckpt_error(ckpt_mpi_saver_restore_latest(s, NULL), CKPT_EINVAL,
                      needle);
    assert_ckpt_error(ckpt_mpi_saver_save(s, 1, NULL), CKPT_EINVAL, needle);
    ckpt_mpi_saver_free(s);
}

/* Six variables only the last rank registers: the first is described,
 * the other five counted and the first four of them named, so a caller
 * who forgot several registrations learns of them at once. */
static void test_mismatch_names_other_variables(void **state)
{
    fixture *f = *state;
    static const char *const names[] = {"x0", "x1", "x2", "x3", "x4", "x5"};
    static float extra[6][4];
    ckpt_mpi_saver *s;
    char needle[512];
    if (test_size() < 2)
        skip();
    s = open_with_last_rank_extras(f, names, extra, 6);
    snprintf(needle, sizeof(needle),
             "variable 'x0': rank 0 did not register it, rank %d registered "
             "it as replicated float32 [4] (ranks that differ from rank 0 on "
             "it: %d); 5 other variables differ between rank 0 and rank %d "
             "too: 'x1', 'x2', 'x3', 'x4' and 1 more; register the same "
             "variables on every rank",
             test_size() - 1, test_size() - 1, test_size() - 1);
    assert_ckpt_error(ckpt_mpi_saver_check(s), CKPT_EINVAL, needle);
    ckpt_mpi_saver_free(s);
}

static void test_shape_mismatch_rejected(void **state)
{
    fixture *f = *state;
    ckpt_mpi_saver *s;
    float w[8] = {0};
    ckpt_var v;
    if (test_size() < 2)
        skip();
    s = open_saver(f->dir, NULL);
    v = test_float_var("w", w, test_rank() == 1 ? 8 : 4);
    assert_ckpt_ok(ckpt_mpi_saver_add_replicated(s, &v));
    assert_ckpt_error(ckpt_mpi_saver_check(s), CKPT_EINVAL,
                      "variable 'w': rank 0 registered it as replicated "
                      "float32 [4], rank 1 registered it as replicated "
                      "float32 [8] (ranks that differ from rank 0 on it: 1)");
    ckpt_mpi_saver_free(s);
}

/* One name registered as another kind on every odd rank (and, from 3
 * ranks, a dtype differing on rank 2): the message names the kinds and
 * every rank that differs from rank 0, the same on every rank. It once
 * said only "rank 1 did not register replicated variable 'k' (rank 0
 * did)", naming neither the kind rank 1 gave it nor ranks 2 and 3. */
static void test_kind_mismatch_names_every_rank(void **state)
{
    fixture *f = *state;
    ckpt_mpi_saver *s;
    float k[4] = {0};
    int32_t ki[4] = {0};
    char want[256];
    ckpt_var v;
    size_t used;
    if (test_size() < 2)
        skip();
    s = open_saver(f->dir, NULL);
    v = test_float_var("k", k, 4);
    if (test_rank() == 2) {
        v.dtype = CKPT_DT_INT32;
        v.data = ki;
    }
    if (test_rank() % 2 == 1)
        assert_ckpt_ok(ckpt_mpi_saver_add_per_rank(s, &v, 0));
    else
        assert_ckpt_ok(ckpt_mpi_saver_add_replicated(s, &v));
    used = (size_t)snprintf(want, sizeof(want),
                            "variable 'k': rank 0 registered it as "
                            "replicated float32 [4], rank 1 registered it "
                            "as per-rank float32 [4] (ranks that differ "
                            "from rank 0 on it: 1");
    for (int r = 2; r < test_size(); r++)
        used += (size_t)snprintf(want + used, sizeof(want) - used, ", %d", r);
    snprintf(want + used, sizeof(want) - used, ")");
    assert_ckpt_error(ckpt_mpi_saver_check(s), CKPT_EINVAL, want);
    assert_ckpt_error(ckpt_mpi_saver_save(s, 1, NULL), CKPT_EINVAL, want);
    ckpt_mpi_saver_free(s);
}

/* The same variables registered in another order on every rank pass. */
static void test_registration_order_free(void **state)
{
    fixture *f = *state;
    ckpt_mpi_saver *s;
    float a[2] = {1, 2}, b[3] = {3, 4, 5};
    ckpt_var va = test_float_var("a", a, 2), vb = test_float_var("b", b, 3);
    s = open_saver(f->dir, NULL);
    if (test_rank() % 2 == 0) {
        assert_ckpt_ok(ckpt_mpi_saver_add_replicated(s, &va));
        assert_ckpt_ok(ckpt_mpi_saver_add_per_rank(s, &vb, 0));
    } else {
        assert_ckpt_ok(ckpt_mpi_saver_add_per_rank(s, &vb, 0));
        assert_ckpt_ok(ckpt_mpi_saver_add_replicated(s, &va));
    }
    assert_ckpt_ok(ckpt_mpi_saver_save(s, 1, NULL));
    a[0] = b[0] = 0;
    assert_ckpt_ok(ckpt_mpi_saver_restore_latest(s, NULL));
    assert_true(a[0] == 1.0f && b[0] == 3.0f);
    ckpt_mpi_saver_free(s);
}

static void test_bad_options_rejected(void **state)
{
    fixture *f = *state;
    char path[4096], want[4200];
    ckpt_mpi_saver_options zero, o;
    ckpt_mpi_saver *s = NULL;
    memset(&zero, 0, sizeof(zero));
    assert_ckpt_error(ckpt_mpi_saver_open(&s, MPI_COMM_WORLD, f->dir, &zero),
                      CKPT_EVERSION, "start from CKPT_MPI_SAVER_OPTIONS_INIT");
    assert_null(s);
    assert_ckpt_ok(
        ckpt_mpi_saver_options_init(&o, CKPT_MPI_SAVER_OPTIONS_VERSION));
    assert_int_equal(o.base.max_to_keep, 0); /* the default: 5 */
    o.base.max_to_keep = -2;
    assert_ckpt_error(ckpt_mpi_saver_open(&s, MPI_COMM_WORLD, f->dir, &o),
                      CKPT_EINVAL, "max_to_keep -2 is negative");
    o.base.max_to_keep = CKPT_KEEP_ALL;
    o.base.busy_policy = 7;
    assert_ckpt_error(ckpt_mpi_saver_open(&s, MPI_COMM_WORLD, f->dir, &o),
                      CKPT_EINVAL, "unknown busy_policy 7");
    o.base.busy_policy = CKPT_BUSY_SKIP;
    o.base.direct_io = 9; /* checked like the single-process saver does */
    snprintf(want, sizeof(want),
             "mpi saver %s: options: base: unknown "
             "direct_io 9",
             f->dir);
    assert_ckpt_error(ckpt_mpi_saver_open(&s, MPI_COMM_WORLD, f->dir, &o),
                      CKPT_EINVAL, want);
    o.base.direct_io = CKPT_DIRECT_IO_OFF;
    o.collective_timeout_s = -1;
    assert_ckpt_error(ckpt_mpi_saver_open(&s, MPI_COMM_WORLD, f->dir, &o),
                      CKPT_EINVAL,
                      "options: collective_timeout_s is negative; give 0 (the "
                      "default, 600 s), a number of seconds or INFINITY");
    o.collective_timeout_s = NAN;
    assert_ckpt_error(ckpt_mpi_saver_open(&s, MPI_COMM_WORLD, f->dir, &o),
                      CKPT_EINVAL, "collective_timeout_s is NaN");
    assert_null(s);
    assert_ckpt_error(ckpt_mpi_saver_options_init(NULL, 1), CKPT_EINVAL,
                      "NULL");
    assert_ckpt_error(ckpt_mpi_saver_open(&s, MPI_COMM_WORLD, "", NULL),
                      CKPT_EINVAL,
                      "mpi saver: no checkpoint directory given; pass the "
                      "directory every rank shares");
    assert_null(s);
    /* TensorFlow's save_path given as the directory: every rank is told
     * what to open instead, as by the single-process saver */
    snprintf(path, sizeof(path), "%s/model.ckpt", f->dir);
    assert_ckpt_error(ckpt_mpi_saver_open(&s, MPI_COMM_WORLD, path, NULL),
                      CKPT_ENOTFOUND,
                      "model.ckpt does not exist (a saver takes the "
                      "directory, not TensorFlow's save_path");
    assert_null(s);
}

/* A version-1 options struct (built against the header before
 * fence_from_start joined ckpt_saver_options) is shorter: its
 * collective_timeout_s follows a version-1 base. init writes only its
 * bytes and open reads only them (bytes past it are 0xff: a timeout read
 * there would be NaN). */
static void test_version_1_options_layout(void **state)
{
    fixture *f = *state;
    size_t at = offsetof(ckpt_mpi_saver_options, base) +
                offsetof(ckpt_saver_options, fence_from_start);
    size_t timeout_at = (at + 7) / 8 * 8, size = timeout_at + sizeof(double);
    unsigned char *raw = malloc(size + 64);
    ckpt_mpi_saver_options *o = (ckpt_mpi_saver_options *)(void *)raw;
    ckpt_mpi_saver *s = NULL;
    double timeout = 45.0;
    assert_non_null(raw);
    memset(raw, 0xff, size + 64);
    assert_ckpt_ok(ckpt_mpi_saver_options_init(o, 1));
    for (size_t k = size; k < size + 64; k++)
        assert_int_equal(raw[k], 0xff);
    assert_int_equal(o->version, 1);
    assert_int_equal(o->base.version, 1);
    memcpy(&timeout, raw + timeout_at, sizeof(timeout));
    assert_true(timeout == 0.0);
    timeout = 45.0;
    memcpy(raw + timeout_at, &timeout, sizeof(timeout));
    o->base.max_to_keep = 3;
    assert_ckpt_ok(ckpt_mpi_saver_open(&s, MPI_COMM_WORLD, f->dir, o));
    assert_true(s->timeout_s == 45.0);
    assert_int_equal(s->opts.base.max_to_keep, 3);
    assert_int_equal(s->opts.base.fence_from_start, 0);
    assert_int_equal(s->opts.version, CKPT_MPI_SAVER_OPTIONS_VERSION);
    ckpt_mpi_saver_free(s);
    free(raw);
}

/* The NULL-argument rule of docs/CONTRIBUTING.md, as the single-process
 * saver follows it: CKPT_EINVAL with "<function>: <argument> is NULL" (it
 * said "mpi saver: save: NULL saver", "mpi saver: NULL out", "mpi saver:
 * add: var is NULL"), on every rank alike. */
static void test_null_arguments(void **state)
{
    fixture *f = *state;
    ckpt_mpi_saver *s = open_saver(f->dir, NULL);
    ckpt_mpi_saver *none = NULL;
    ckpt_saver *handle = (ckpt_saver *)f;
    ckpt_slice_extent rows[1] = {{0, 1}};
    uint64_t ticket;
    int busy;
    /* collective: every rank gets the lowest failing rank's error */
    EXPECT_NULL_ARG(ckpt_mpi_saver_open(NULL, MPI_COMM_WORLD, f->dir, NULL),
                    "rank 0: ckpt_mpi_saver_open: out is NULL");
    EXPECT_NULL_ARG(ckpt_mpi_saver_add_replicated(none, NULL),
                    "ckpt_mpi_saver_add_replicated: s is NULL");
    EXPECT_NULL_ARG(ckpt_mpi_saver_add_replicated(s, NULL),
                    "ckpt_mpi_saver_add_replicated: var is NULL");
    EXPECT_NULL_ARG(ckpt_mpi_saver_add_partitioned(s, NULL, rows),
                    "ckpt_mpi_saver_add_partitioned: var is NULL");
    EXPECT_NULL_ARG(ckpt_mpi_saver_add_per_rank(s, NULL, 0),
                    "ckpt_mpi_saver_add_per_rank: var is NULL");
    EXPECT_NULL_ARG(ckpt_mpi_saver_check(none),
                    "ckpt_mpi_saver_check: s is NULL");
    EXPECT_NULL_ARG(ckpt_mpi_saver_save(none, 1, NULL),
                    "ckpt_mpi_saver_save: s is NULL");
    EXPECT_NULL_ARG(ckpt_mpi_saver_save_async(none, 1, &ticket),
                    "ckpt_mpi_saver_save_async: s is NULL");
    EXPECT_NULL_ARG(ckpt_mpi_saver_poll(none, &busy),
                    "ckpt_mpi_saver_poll: s is NULL");
    EXPECT_NULL_ARG(ckpt_mpi_saver_wait(none, 1.0),
                    "ckpt_mpi_saver_wait: s is NULL");
    EXPECT_NULL_ARG(ckpt_mpi_saver_restore(none, "x"),
                    "ckpt_mpi_saver_restore: s is NULL");
    EXPECT_NULL_ARG(ckpt_mpi_saver_restore_latest(none, NULL),
                    "ckpt_mpi_saver_restore_latest: s is NULL");
    EXPECT_NULL_ARG(ckpt_mpi_saver_as_saver(s, NULL),
                    "ckpt_mpi_saver_as_saver: out is NULL");
    EXPECT_NULL_ARG(ckpt_mpi_saver_as_saver(none, &handle),
                    "ckpt_mpi_saver_as_saver: s is NULL");
    assert_null(handle);
    EXPECT_NULL_ARG(ckpt_mpi_saver_close(none),
                    "ckpt_mpi_saver_close: s is NULL");
    ckpt_mpi_saver_free(NULL);
    ckpt_mpi_saver_free(s);
}

/* A NULL or empty prefix follows the NULL rule ("<function>: prefix is
 * NULL", CKPT_EINVAL); a rank's prefix is its own, so when only the last
 * rank passes NULL every rank still returns (the check is part of the
 * agreement), with that rank's message, and no variable changed. */
static void test_restore_without_prefix(void **state)
{
    fixture *f = *state;
    ckpt_mpi_saver *s = open_saver(f->dir, NULL);
    ckpt_buf prefix = CKPT_BUF_INIT;
    char want[64];
    int last = test_size() - 1;
    model_fill(&f->m, test_rank(), test_size(), 1);
    model_register(s, &f->m, 0);
    assert_ckpt_ok(ckpt_mpi_saver_save(s, 3, &prefix));
    model_fill(&f->m, test_rank(), test_size(), 2);
    assert_ckpt_error(ckpt_mpi_saver_restore(s, NULL), CKPT_EINVAL,
                      "ckpt_mpi_saver_restore: prefix is NULL");
    assert_ckpt_error(ckpt_mpi_saver_restore(s, ""), CKPT_EINVAL,
                      "ckpt_mpi_saver_restore: prefix is empty");
    snprintf(want, sizeof(want),
             "rank %d: ckpt_mpi_saver_restore: prefix is NULL", last);
    assert_ckpt_error(
        ckpt_mpi_saver_restore(s, test_rank() == last ? NULL : prefix.ptr),
        CKPT_EINVAL, want);
    model_assert(&f->m, 2);
    assert_ckpt_ok(ckpt_mpi_saver_restore(s, prefix.ptr));
    model_assert(&f->m, 1);
    ckpt_mpi_saver_free(s);
    ckpt_buf_dispose(&prefix);
}

/* Every rank restores one checkpoint: the last rank given step 4's prefix
 * while the others restore step 3 (each a checkpoint of this directory)
 * is refused on every rank, naming that rank, and no variable changes; a
 * prefix spelled another way for the same checkpoint is fine. */
static void test_restore_of_different_checkpoints_refused(void **state)
{
    fixture *f = *state;
    ckpt_mpi_saver *s = open_saver(f->dir, NULL);
    ckpt_buf three = CKPT_BUF_INIT, four = CKPT_BUF_INIT;
    char want[128], other[4200];
    int last = test_size() - 1;
    model_fill(&f->m, test_rank(), test_size(), 1);
    model_register(s, &f->m, 0);
    assert_ckpt_ok(ckpt_mpi_saver_save(s, 3, &three));
    model_fill(&f->m, test_rank(), test_size(), 2);
    assert_ckpt_ok(ckpt_mpi_saver_save(s, 4, &four));
    model_fill(&f->m, test_rank(), test_size(), 5);
    if (last > 0) { /* one rank alone always restores one checkpoint */
        snprintf(want, sizeof(want), "rank %d: ckpt_mpi_saver_restore: ", last);
        assert_ckpt_error(ckpt_mpi_saver_restore(
                              s, test_rank() == last ? four.ptr : three.ptr),
                          CKPT_EINVAL, want);
        assert_non_null(strstr(ckpt_error_last()->message,
                               "is not the checkpoint rank 0 restores"));
        model_assert(&f->m, 5);
    }
    /* the same checkpoint through "<dir>/./<name>" on the last rank */
    {
        const char *slash = strrchr(three.ptr, '/');
        assert_non_null(slash);
        snprintf(other, sizeof(other), "%.*s/.%s", (int)(slash - three.ptr),
                 three.ptr, slash);
    }
    assert_ckpt_ok(
        ckpt_mpi_saver_restore(s, test_rank() == last ? other : three.ptr));
    model_assert(&f->m, 1);
    ckpt_mpi_saver_free(s);
    ckpt_buf_dispose(&three);
    ckpt_buf_dispose(&four);
}

/* Variables over the same memory on one rank (the last registers b over
 * a's buffer) fail the first save on every rank, naming that rank and
 * both variables, as ckpt_saver refuses them; nothing is written. */
static void test_shared_memory_refused_on_every_rank(void **state)
{
    fixture *f = *state;
    ckpt_mpi_saver *s = open_saver(f->dir, NULL);
    float a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8};
    int last = test_size() - 1;
    char want[64];
    ckpt_var va = test_float_var("a", a, 4);
    ckpt_var vb = test_float_var("b", test_rank() == last ? a : b, 4);
    assert_ckpt_ok(ckpt_mpi_saver_add_replicated(s, &va));
    assert_ckpt_ok(ckpt_mpi_saver_add_per_rank(s, &vb, 0));
    snprintf(want, sizeof(want), "rank %d: mpi saver ", last);
    assert_ckpt_error(ckpt_mpi_saver_save(s, 1, NULL), CKPT_EINVAL, want);
    assert_non_null(
        strstr(ckpt_error_last()->message, "variables 'a' (16 bytes at "));
    assert_non_null(
        strstr(ckpt_error_last()->message, "and 'b' (16 bytes at "));
    assert_non_null(
        strstr(ckpt_error_last()->message, "share memory: give each"));
    ckpt_mpi_saver_free(s);
    if (test_rank() == 0)
        assert_int_equal(count_files_in(f->dir, ".index"), 0);
}

static void test_bad_registration_rejected(void **state)
{
    fixture *f = *state;
    ckpt_mpi_saver *s = open_saver(f->dir, NULL);
    float buf[8] = {0};
    ckpt_var v;
    ckpt_slice_extent outside[1] = {{6, 4}};
    char want[4200];
    v = test_float_var("w", buf, 8);
    assert_ckpt_ok(ckpt_mpi_saver_add_replicated(s, &v));
    /* each message names the saver's directory and what to do */
    snprintf(want, sizeof(want),
             "mpi saver %s: variable 'w' is already registered; register "
             "each name once, as one kind",
             f->dir);
    assert_ckpt_error(ckpt_mpi_saver_add_per_rank(s, &v, 0), CKPT_EEXISTS,
                      want);
    snprintf(want, sizeof(want),
             "mpi saver %s: per-rank variable 'w': unknown flags 0x4; pass 0 "
             "or CKPT_MPI_OPTIONAL",
             f->dir);
    assert_ckpt_error(ckpt_mpi_saver_add_per_rank(s, &v, 4), CKPT_EINVAL, want);
    v.name = "";
    snprintf(want, sizeof(want),
             "mpi saver %s: variable without a name (its name is empty)",
             f->dir);
    assert_ckpt_error(ckpt_mpi_saver_add_replicated(s, &v), CKPT_EINVAL, want);
    v.name = "x";
    v.data = NULL;
    assert_ckpt_error(ckpt_mpi_saver_add_replicated(s, &v), CKPT_EINVAL,
                      "variable 'x': no data and no read/write callbacks; "
                      "give it data or both callbacks");
    v.read = sensor_read; /* save-only, as ckpt_saver allows: said so */
    assert_ckpt_error(ckpt_mpi_saver_add_per_rank(s, &v, 0), CKPT_EINVAL,
                      "variable 'x': a read callback without data or a "
                      "write callback; give it data or both callbacks (the "
                      "distributed saver restores every variable it saves)");
    v.read = NULL;
    v.data = buf;
    v.shape.rank = 0;
    assert_ckpt_error(ckpt_mpi_saver_add_partitioned(s, &v, outside),
                      CKPT_EINVAL,
                      "a scalar cannot be partitioned; register it "
                      "replicated or per-rank");
    v.shape.rank = 1;
    assert_ckpt_error(ckpt_mpi_saver_add_partitioned(s, &v, NULL), CKPT_EINVAL,
                      "partitioned variable 'x': no extents; pass one extent "
                      "per dimension");
    v.name = "x";
    assert_ckpt_error(ckpt_mpi_saver_add_partitioned(s, &v, outside),
                      CKPT_EINVAL,
                      "partitioned variable 'x': extent 0 (start 6, length "
                      "4) lies outside dimension 8; give extents inside the "
                      "global shape");
    outside[0].start = 1;
    outside[0].length = CKPT_SLICE_FULL;
    assert_ckpt_error(ckpt_mpi_saver_add_partitioned(s, &v, outside),
                      CKPT_EINVAL,
                      "extent 0 has length CKPT_SLICE_FULL with start 1; a "
                      "full extent starts at 0");
    assert_ckpt_error(ckpt_mpi_saver_add_replicated(s, NULL), CKPT_EINVAL,
                      "var is NULL");
    v.dtype = CKPT_DT_STRING;
    assert_ckpt_error(ckpt_mpi_saver_add_replicated(s, &v), CKPT_ENOTSUP,
                      "variable 'x': dtype 7 (string) is not a fixed-size "
                      "dtype; register it with a fixed-size dtype");
    v.dtype = CKPT_DT_FLOAT;
    v.shape.dims[0] = -3; /* the shape check's reason, not "bad shape" */
    assert_ckpt_error(ckpt_mpi_saver_add_replicated(s, &v), CKPT_EINVAL,
                      "variable 'x': shape: dim 0 is negative (-3)");
    v.shape.dims[0] = 8;
    v.dtype = CKPT_DT_STRING;
    assert_ckpt_ok(ckpt_mpi_saver_check(s));
    v.dtype = CKPT_DT_FLOAT;
    snprintf(want, sizeof(want),
             "mpi saver %s: variable 'x': variables are fixed after the "
             "first save, restore or check; register every variable before "
             "them",
             f->dir);
    assert_ckpt_error(ckpt_mpi_saver_add_replicated(s, &v), CKPT_ESTATE, want);
    ckpt_mpi_saver_free(s);
}

/* ---- each rank's write path ---------------------------------------------- */

/* Records the flags each data file (temporary name) is opened with. */
typedef struct open_log {
    ckpt_fs_forward fwd;
    int data_opens;
    int data_flags; /* of the last one */
} open_log;

static int logged_open_write(ckpt_file **out, const char *path, int flags,
                             void *payload)
{
    open_log *l = payload;
    const ckpt_fs *base = ckpt_fs_forward_base(payload);
    if (strstr(path, ".data-") && strstr(path, "tempstate")) {
        l->data_opens++;
        l->data_flags = flags;
    }
    return base->open_write(out, path, flags, base->payload);
}

/* As ckpt_saver writes its image: each rank's data file goes out with
 * O_DIRECT where possible by default, never with CKPT_DIRECT_IO_OFF. */
static void test_direct_io_option(void **state)
{
    fixture *f = *state;
    int settings[2] = {0, CKPT_DIRECT_IO_OFF};
    model_fill(&f->m, test_rank(), test_size(), 4);
    for (int i = 0; i < 2; i++) {
        ckpt_mpi_saver_options o = test_mpi_options();
        ckpt_mpi_saver *s = NULL;
        open_log l;
        memset(&l, 0, sizeof(l));
        ckpt_fs_forward_init(&l.fwd, NULL);
        l.fwd.fs.open_write = logged_open_write;
        o.base.fs = &l.fwd.fs;
        o.base.direct_io = settings[i];
        assert_ckpt_ok(ckpt_mpi_saver_open(&s, MPI_COMM_WORLD, f->dir, &o));
        model_register(s, &f->m, 0);
        assert_ckpt_ok(ckpt_mpi_saver_save_async(s, 40 + i, NULL));
        assert_ckpt_ok(ckpt_mpi_saver_wait(s, -1));
        assert_ckpt_ok(ckpt_mpi_saver_save(s, 50 + i, NULL));
        assert_int_equal(l.data_opens, 2);
        assert_int_equal(l.data_flags & CKPT_OPEN_EXCL, CKPT_OPEN_EXCL);
        assert_int_equal(l.data_flags & CKPT_OPEN_DIRECT,
                         i == 0 ? CKPT_OPEN_DIRECT : 0);
        model_zero(&f->m);
        assert_ckpt_ok(ckpt_mpi_saver_restore_latest(s, NULL));
        model_assert(&f->m, 4);
        ckpt_mpi_saver_free(s);
    }
}

/* Answers CKPT_EEXISTS to every exclusive open of a path containing
 * `taken`, as if each temporary name picked were another file's. */
typedef struct taken_fs {
    ckpt_fs_forward fwd;
    const char *taken;
    int refused;
} taken_fs;

static int taken_open_write(ckpt_file **out, const char *path, int flags,
                            void *payload)
{
    taken_fs *t = payload;
    const ckpt_fs *base = ckpt_fs_forward_base(payload);
    if ((flags & CKPT_OPEN_EXCL) && strstr(path, t->taken)) {
        t->refused++;
        return CKPT_EEXISTS;
    }
    return base->open_write(out, path, flags, base->payload);
}

/* Every temporary name taken, for the data files (every rank) and for the
 * index (rank 0): each tries CKPT__TEMP_TRIES names, then the save fails
 * with CKPT_EEXISTS on every rank, the message naming the last name
 * refused, and commits nothing. Before the data file and the index shared
 * ckpt__fs_create_temp, running out of names went on with no file open. */
static void test_temp_names_all_taken(void **state)
{
    fixture *f = *state;
    const char *taken[2] = {".data-", ".index.tempstate"};
    model_fill(&f->m, test_rank(), test_size(), 4);
    for (int i = 0; i < 2; i++) {
        ckpt_mpi_saver *s;
        taken_fs t;
        int refused_here = i == 0 || test_rank() == 0;
        memset(&t, 0, sizeof(t));
        ckpt_fs_forward_init(&t.fwd, NULL);
        t.fwd.fs.open_write = taken_open_write;
        t.taken = taken[i];
        s = open_saver(f->dir, &t.fwd.fs);
        model_register(s, &f->m, 0);
        assert_ckpt_error(ckpt_mpi_saver_save(s, 60 + i, NULL), CKPT_EEXISTS,
                          "rank 0: open_write ");
        assert_non_null(strstr(ckpt_error_last()->message, taken[i]));
        /* the last refusal alone, not each one's message in front of it */
        assert_int_equal(test_count(ckpt_error_last()->message, "open_write"),
                         1);
        assert_int_equal(t.refused, refused_here ? CKPT__TEMP_TRIES : 0);
        MPI_Barrier(MPI_COMM_WORLD);
        if (test_rank() == 0) {
            assert_int_equal(count_files_in(f->dir, "model.ckpt-6"), 0);
            assert_int_equal(count_files_in(f->dir, "tempstate"), 0);
        }
        ckpt_mpi_saver_free(s);
    }
}

/* A variable of several snapshot pieces (3 MiB per rank, pieces of 2 MiB),
 * its checksum fused into the copies or computed by the background thread
 * over the image (CKPT_SNAPSHOT_CHECKSUM forces each): the records' CRCs
 * combine right (the checkpoint verifies) and the values restore. */
static void test_large_variable_checksums(void **state)
{
    fixture *f = *state;
    const char *modes[2] = {"copy", "writer"};
    const int64_t cols = 1024, rows_per_rank = 768; /* 3 MiB of floats */
    int64_t rows = rows_per_rank * test_size();
    size_t n = (size_t)(rows_per_rank * cols);
    float *mine = malloc(n * sizeof(float));
    assert_non_null(mine);
    for (int i = 0; i < 2; i++) {
        ckpt_mpi_saver *s = NULL;
        ckpt_slice_extent ext[2] = {
            {rows_per_rank * test_rank(), rows_per_rank}, {0, CKPT_SLICE_FULL}};
        ckpt_var v;
        ckpt_buf prefix = CKPT_BUF_INIT;
        assert_int_equal(setenv("CKPT_SNAPSHOT_CHECKSUM", modes[i], 1), 0);
        for (size_t k = 0; k < n; k++)
            mine[k] = (float)(k % 1000003) * 0.5f + (float)test_rank() + i;
        s = open_saver(f->dir, NULL);
        memset(&v, 0, sizeof(v));
        v.name = "big";
        v.dtype = CKPT_DT_FLOAT;
        v.shape.rank = 2;
        v.shape.dims[0] = rows;
        v.shape.dims[1] = cols;
        v.data = mine;
        assert_ckpt_ok(ckpt_mpi_saver_add_partitioned(s, &v, ext));
        assert_ckpt_ok(ckpt_mpi_saver_save_async(s, 60 + i, NULL));
        memset(mine, 0, n * sizeof(float)); /* the snapshot holds the values */
        assert_ckpt_ok(ckpt_mpi_saver_wait(s, -1));
        assert_ckpt_ok(ckpt_mpi_saver_restore_latest(s, &prefix));
        for (size_t k = 0; k < n; k++)
            assert_true(mine[k] ==
                        (float)(k % 1000003) * 0.5f + (float)test_rank() + i);
        if (test_rank() == 0) {
            ckpt_bundle_reader *r = NULL;
            assert_ckpt_ok(ckpt_bundle_reader_open(&r, prefix.ptr, NULL));
            assert_ckpt_ok(ckpt_bundle_reader_verify(r));
            ckpt_bundle_reader_free(r);
        }
        ckpt_mpi_saver_free(s);
        ckpt_buf_dispose(&prefix);
        assert_int_equal(unsetenv("CKPT_SNAPSHOT_CHECKSUM"), 0);
    }
    free(mine);
}

/* Save step 2, have rank 0 remove data file `shard` of it (and put a FIFO
 * in its place when `fifo`), then restore_latest: CKPT_ECORRUPT on every
 * rank with `want` and the way on (how to fall back, the same
 * everywhere). */
static void restore_latest_without_data_file(fixture *f, int shard, int fifo,
                                             const char *want)
{
    ckpt_mpi_saver *s = open_saver(f->dir, NULL);
    char data[4200];
    model_fill(&f->m, test_rank(), test_size(), 2);
    model_register(s, &f->m, 0);
    assert_ckpt_ok(ckpt_mpi_saver_save(s, 2, NULL));
    if (test_rank() == 0) {
        snprintf(data, sizeof(data), "%s/model.ckpt-2.data-%05d-of-%05d",
                 f->dir, shard, test_size());
        assert_int_equal(unlink(data), 0);
        if (fifo)
            assert_int_equal(mkfifo(data, 0600), 0);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    assert_ckpt_error(ckpt_mpi_saver_restore_latest(s, NULL), CKPT_ECORRUPT,
                      want);
    assert_non_null(strstr(ckpt_error_last()->message,
                           "ckpt_state_read lists the older checkpoints"));
    ckpt_mpi_saver_free(s);
}

/* A data file of the latest checkpoint gone (rank N-1's): restore_latest
 * fails on every rank with CKPT_ECORRUPT naming it as incomplete, not as
 * lacking a variable. */
static void test_restore_missing_data_file(void **state)
{
    restore_latest_without_data_file(*state, test_size() - 1, 0,
                                     "incomplete checkpoint");
}

/* A FIFO where rank 0's data file of the latest checkpoint should be: a
 * damaged checkpoint, CKPT_ECORRUPT on every rank with the way on (it was
 * CKPT_EIO without it), and no rank blocks opening the FIFO. */
static void test_restore_fifo_data_file(void **state)
{
    restore_latest_without_data_file(*state, 0, 1,
                                     "a FIFO, not a regular file");
}

/* A save before any variable is registered fails on every rank, commits
 * nothing and leaves the list open: variables added afterwards save. */
static void test_save_without_variables(void **state)
{
    fixture *f = *state;
    ckpt_mpi_saver *s = open_saver(f->dir, NULL);
    char want[4200];
    /* the message names the saver's directory and what to do */
    snprintf(want, sizeof(want),
             "mpi saver %s: save: no variables to save; register them first "
             "(ckpt_mpi_saver_add_replicated, _partitioned, _per_rank)",
             f->dir);
    assert_ckpt_error(ckpt_mpi_saver_save(s, 1, NULL), CKPT_EINVAL, want);
    snprintf(want, sizeof(want),
             "mpi saver %s: save_async: no variables to save", f->dir);
    assert_ckpt_error(ckpt_mpi_saver_save_async(s, 1, NULL), CKPT_EINVAL, want);
    if (test_rank() == 0)
        assert_int_equal(count_files_in(f->dir, "model.ckpt-1"), 0);
    /* nor does a restore: it would restore nothing (it used to succeed
     * when there was a checkpoint) */
    snprintf(want, sizeof(want),
             "mpi saver %s: restore_latest: no variables registered, so "
             "nothing would be restored",
             f->dir);
    assert_ckpt_error(ckpt_mpi_saver_restore_latest(s, NULL), CKPT_EINVAL,
                      want);
    snprintf(want, sizeof(want),
             "mpi saver %s: restore: no variables registered", f->dir);
    assert_ckpt_error(ckpt_mpi_saver_restore(s, "x"), CKPT_EINVAL, want);
    model_fill(&f->m, test_rank(), test_size(), 5);
    model_register(s, &f->m, 0);
    assert_ckpt_ok(ckpt_mpi_saver_save(s, 2, NULL));
    model_zero(&f->m);
    assert_ckpt_ok(ckpt_mpi_saver_restore_latest(s, NULL));
    model_assert(&f->m, 5);
    ckpt_mpi_saver_free(s);
}

/* A rank holding none of a partitioned tensor registers an empty piece:
 * with data NULL that was refused ("no data and no read/write callbacks"),
 * and the other ranks' next save then failed on the missing piece. Now an
 * empty piece (and a tensor of no elements) needs no data; a piece with
 * elements still does. Saved sync and async, restored; check and restore
 * also work after close, as the header says. */
static void test_empty_piece_needs_no_data(void **state)
{
    fixture *f = *state;
    ckpt_mpi_saver *s = open_saver(f->dir, NULL);
    float rows[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    float keep[8];
    int mine = test_rank() == 0;
    ckpt_var v, none, bad;
    ckpt_slice_extent ev[2] = {{mine ? 0 : 4, mine ? 4 : 0},
                               {0, CKPT_SLICE_FULL}};
    ckpt_slice_extent en[2] = {{0, 0}, {0, CKPT_SLICE_FULL}};
    ckpt_slice_extent eb[1] = {{0, 1}};
    memcpy(keep, rows, sizeof(rows));
    memset(&v, 0, sizeof(v));
    v.name = "rows";
    v.dtype = CKPT_DT_FLOAT;
    v.shape.rank = 2;
    v.shape.dims[0] = 4;
    v.shape.dims[1] = 2;
    v.data = mine ? rows : NULL;
    none = v;
    none.name = "nothing";
    none.shape.dims[0] = 0;
    none.data = NULL;
    bad = v;
    bad.name = "bad";
    bad.shape.rank = 1;
    bad.shape.dims[0] = 1;
    bad.data = NULL;
    assert_ckpt_ok(ckpt_mpi_saver_add_partitioned(s, &v, ev));
    assert_ckpt_ok(ckpt_mpi_saver_add_partitioned(s, &none, en));
    assert_ckpt_error(ckpt_mpi_saver_add_partitioned(s, &bad, eb), CKPT_EINVAL,
                      "variable 'bad': no data and no read/write callbacks");
    assert_ckpt_ok(ckpt_mpi_saver_save(s, 1, NULL));
    assert_ckpt_ok(ckpt_mpi_saver_save_async(s, 2, NULL));
    assert_ckpt_ok(ckpt_mpi_saver_wait(s, -1));
    memset(rows, 0, sizeof(rows));
    assert_ckpt_ok(ckpt_mpi_saver_restore_latest(s, NULL));
    if (mine)
        assert_memory_equal(rows, keep, sizeof(rows));
    assert_ckpt_ok(ckpt_mpi_saver_close(s));
    assert_ckpt_ok(ckpt_mpi_saver_check(s));
    memset(rows, 0, sizeof(rows));
    assert_ckpt_ok(ckpt_mpi_saver_restore_latest(s, NULL));
    if (mine)
        assert_memory_equal(rows, keep, sizeof(rows));
    assert_ckpt_error(ckpt_mpi_saver_save(s, 3, NULL), CKPT_ESTATE,
                      "save after close");
    ckpt_mpi_saver_free(s);
}

/* A partitioned tensor of no elements ([0, 4] and [3 * ranks, 0], split
 * by rows) is stored once, whole, with its shape, and restores: once it
 * was left out of the checkpoint, which then did not restore. */
static void test_empty_partitioned_tensor(void **state)
{
    fixture *f = *state;
    ckpt_mpi_saver *s = open_saver(f->dir, NULL);
    float none[1];
    ckpt_var a, b;
    ckpt_slice_extent ea[2] = {{0, 0}, {0, CKPT_SLICE_FULL}};
    ckpt_slice_extent eb[2] = {{3 * test_rank(), 3}, {0, CKPT_SLICE_FULL}};
    char prefix[4200];
    memset(&a, 0, sizeof(a));
    a.name = "empty_rows";
    a.dtype = CKPT_DT_FLOAT;
    a.shape.rank = 2;
    a.shape.dims[0] = 0;
    a.shape.dims[1] = 4;
    a.data = none;
    b = a;
    b.name = "empty_cols";
    b.shape.dims[0] = 3 * test_size();
    b.shape.dims[1] = 0;
    assert_ckpt_ok(ckpt_mpi_saver_add_partitioned(s, &a, ea));
    assert_ckpt_ok(ckpt_mpi_saver_add_partitioned(s, &b, eb));
    assert_ckpt_ok(ckpt_mpi_saver_save(s, 3, NULL));
    snprintf(prefix, sizeof(prefix), "%s/model.ckpt-3", f->dir);
    if (test_rank() == 0) {
        ckpt_bundle_reader *r = NULL;
        const ckpt_tensor_entry *e;
        assert_ckpt_ok(ckpt_bundle_reader_open(&r, prefix, NULL));
        assert_int_equal(ckpt_bundle_reader_count(r), 2);
        assert_ckpt_ok(ckpt_bundle_reader_find(&e, r, "empty_rows"));
        assert_true(ckpt_shape_equal(&e->shape, &a.shape));
        assert_int_equal(e->num_slices, 0);
        assert_ckpt_ok(ckpt_bundle_reader_find(&e, r, "empty_cols"));
        assert_true(ckpt_shape_equal(&e->shape, &b.shape));
        assert_int_equal(e->num_slices, 0);
        assert_ckpt_ok(ckpt_bundle_reader_verify(r));
        ckpt_bundle_reader_free(r);
    }
    assert_ckpt_ok(ckpt_mpi_saver_restore_latest(s, NULL));
    ckpt_mpi_saver_free(s);
}

/* Past the size where the first snapshots are timed fused and plain by
 * turns (5 MiB per rank), each checkpoint carries its own snapshot's
 * checksums: the background thread seals every image as that snapshot
 * copied it, not as the next one will (the 2nd and 4th checkpoints once
 * carried the previous save's CRC). Sync and async saves alike. */
static void test_checksum_probing_snapshots_verify(void **state)
{
    fixture *f = *state;
    const size_t n = (5u << 20) / sizeof(float);
    float *mine = malloc(n * sizeof(float));
    ckpt_mpi_saver *s;
    ckpt_var v;
    assert_non_null(mine);
    assert_int_equal(unsetenv("CKPT_SNAPSHOT_CHECKSUM"), 0);
    s = open_saver(f->dir, NULL);
    v = test_float_var("big", mine, (int64_t)n);
    assert_ckpt_ok(ckpt_mpi_saver_add_per_rank(s, &v, 0));
    for (int step = 1; step <= 6; step++) {
        char prefix[4200];
        snprintf(prefix, sizeof(prefix), "%s/model.ckpt-%d", f->dir, step);
        for (size_t k = 0; k < n; k++)
            mine[k] =
                (float)(k % 4099) + 10000.0f * (float)step + (float)test_rank();
        if (step % 2) {
            assert_ckpt_ok(ckpt_mpi_saver_save(s, step, NULL));
        } else {
            assert_ckpt_ok(ckpt_mpi_saver_save_async(s, step, NULL));
            memset(mine, 0, n * sizeof(float));
            assert_ckpt_ok(ckpt_mpi_saver_wait(s, -1));
        }
        if (test_rank() == 0) {
            ckpt_bundle_reader *r = NULL;
            assert_ckpt_ok(ckpt_bundle_reader_open(&r, prefix, NULL));
            assert_ckpt_ok(ckpt_bundle_reader_verify(r));
            ckpt_bundle_reader_free(r);
        }
        memset(mine, 0, n * sizeof(float));
        assert_ckpt_ok(ckpt_mpi_saver_restore(s, prefix));
        for (size_t k = 0; k < n; k++)
            assert_true(mine[k] == (float)(k % 4099) + 10000.0f * (float)step +
                                       (float)test_rank());
    }
    ckpt_mpi_saver_free(s);
    free(mine);
}

/* Calls back into the saver from its own background thread (a log
 * callback: rank 0 logs retention's deletions there) are refused with
 * CKPT_ESTATE, and so is freeing it from on_save_done; the saver goes on. */
typedef struct callbacks_in {
    ckpt_mpi_saver *s;
    pthread_t caller;
    atomic_int from_thread, refused, done_calls, done_refused;
} callbacks_in;

static void call_back_from_log(int level, const char *message, void *payload)
{
    callbacks_in *c = payload;
    (void)level;
    (void)message;
    if (pthread_equal(pthread_self(), c->caller))
        return;
    atomic_fetch_add(&c->from_thread, 1);
    if (ckpt_mpi_saver_save(c->s, 99, NULL) == CKPT_ESTATE &&
        strstr(ckpt_error_last()->message, "own background thread") &&
        ckpt_mpi_saver_wait(c->s, -1) == CKPT_ESTATE)
        atomic_fetch_add(&c->refused, 1);
    ckpt_mpi_saver_free(c->s); /* refused too */
}

static void free_from_done(const ckpt_save_result *r, void *payload)
{
    callbacks_in *c = payload;
    (void)r;
    atomic_fetch_add(&c->done_calls, 1);
    ckpt_mpi_saver_free(c->s);
    if (strstr(ckpt_error_last()->message, "called from on_save_done"))
        atomic_fetch_add(&c->done_refused, 1);
}

static void test_calls_from_callbacks_refused(void **state)
{
    fixture *f = *state;
    ckpt_mpi_saver_options o = test_mpi_options();
    static callbacks_in c;
    memset(&c, 0, sizeof(c));
    c.caller = pthread_self();
    o.base.max_to_keep = 1;
    o.base.log = call_back_from_log;
    o.base.log_payload = &c;
    o.base.log_level = CKPT_LOG_DEBUG;
    o.base.on_save_done = free_from_done;
    o.base.on_save_done_payload = &c;
    assert_ckpt_ok(ckpt_mpi_saver_open(&c.s, MPI_COMM_WORLD, f->dir, &o));
    model_fill(&f->m, test_rank(), test_size(), 1);
    model_register(c.s, &f->m, 0);
    for (int step = 1; step <= 3; step++) {
        assert_ckpt_ok(ckpt_mpi_saver_save_async(c.s, step, NULL));
        assert_ckpt_ok(ckpt_mpi_saver_wait(c.s, -1));
    }
    assert_int_equal(atomic_load(&c.done_calls), 3);
    assert_int_equal(atomic_load(&c.done_refused), 3);
    if (test_rank() == 0) /* rank 0 deleted steps 1 and 2 on its thread */
        assert_true(atomic_load(&c.from_thread) >= 2);
    assert_int_equal(atomic_load(&c.refused), atomic_load(&c.from_thread));
    assert_ckpt_ok(ckpt_mpi_saver_close(c.s));
    ckpt_mpi_saver_free(c.s);
    model_zero(&f->m);
    c.s = open_saver(f->dir, NULL);
    model_register(c.s, &f->m, 0);
    assert_ckpt_ok(ckpt_mpi_saver_restore_latest(c.s, NULL));
    model_assert(&f->m, 1);
    ckpt_mpi_saver_free(c.s);
}

/* A saver keeping one checkpoint, on `g` (its removals held from step 2
 * on), under `busy_policy`: steps 1 and 2 saved, step 2's eviction of
 * step 1 handed to rank 0's background thread. */
static ckpt_mpi_saver *
save_two_evicting_held(fixture *f, ckpt_fs_gated_remove *g, int busy_policy)
{
    ckpt_mpi_saver_options o = test_mpi_options();
    ckpt_mpi_saver *s = NULL;
    ckpt_fs_gated_remove_init(g);
    o.base.fs = &g->fwd.fs;
    o.base.max_to_keep = 1;
    o.base.busy_policy = busy_policy;
    assert_ckpt_ok(ckpt_mpi_saver_open(&s, MPI_COMM_WORLD, f->dir, &o));
    model_fill(&f->m, test_rank(), test_size(), 1);
    model_register(s, &f->m, 0);
    assert_ckpt_ok(ckpt_mpi_saver_save(s, 1, NULL));
    atomic_store(&g->closed, 1);
    model_fill(&f->m, test_rank(), test_size(), 2);
    assert_ckpt_ok(ckpt_mpi_saver_save(s, 2, NULL)); /* evicts step 1 */
    return s;
}

/* Rank 0: until the held deletion has begun (30 s at most). */
static void wait_deletion_held(ckpt_fs_gated_remove *g)
{
    time_t until = time(NULL) + 30;
    while (atomic_load(&g->waiting) == 0 && time(NULL) < until)
        usleep(1000);
    assert_int_equal(atomic_load(&g->waiting), 1);
}

/* Retention: a sync save returns once the new checkpoint is named; rank
 * 0's background thread deletes what it evicted afterwards (deleting a big
 * file can take a third of the save), wait returns only when that is done
 * and the next save commits after it. */
static void test_eviction_after_save(void **state)
{
    fixture *f = *state;
    static ckpt_fs_gated_remove g;
    ckpt_mpi_saver *s = save_two_evicting_held(f, &g, CKPT_BUSY_SKIP);
    if (test_rank() == 0) {
        /* Returned while the deletion is still held (or not begun). */
        assert_int_equal(atomic_load(&g.timed_out), 0);
        wait_deletion_held(&g);
        assert_int_equal(count_files_in(f->dir, "model.ckpt-1.index"), 0);
        assert_int_equal(count_files_in(f->dir, "model.ckpt-1.data-"),
                         test_size());
        assert_ckpt_error(ckpt_mpi_saver_wait(s, 0.05), CKPT_ETIMEDOUT,
                          "did not finish within 0.050 s");
        atomic_store(&g.closed, 0);
    }
    assert_ckpt_ok(ckpt_mpi_saver_wait(s, -1));
    if (test_rank() == 0) {
        assert_int_equal(atomic_load(&g.timed_out), 0);
        assert_int_equal(count_files_in(f->dir, "model.ckpt-1."), 0);
        assert_int_equal(count_files_in(f->dir, "model.ckpt-2.data-"),
                         test_size());
    }
    /* Step 3 evicts step 2 and is deleted before step 2 is saved again. */
    model_fill(&f->m, test_rank(), test_size(), 3);
    assert_ckpt_ok(ckpt_mpi_saver_save(s, 3, NULL));
    model_fill(&f->m, test_rank(), test_size(), 4);
    assert_ckpt_ok(ckpt_mpi_saver_save(s, 2, NULL));
    assert_ckpt_ok(ckpt_mpi_saver_close(s));
    if (test_rank() == 0) {
        assert_int_equal(count_files_in(f->dir, "model.ckpt-3."), 0);
        char prefix[4200];
        snprintf(prefix, sizeof(prefix), "%s/model.ckpt-2", f->dir);
        assert_ordinary_checkpoint(prefix, 4);
    }
    model_zero(&f->m);
    ckpt_mpi_saver_free(s);
    s = open_saver(f->dir, NULL);
    model_register(s, &f->m, 0);
    assert_ckpt_ok(ckpt_mpi_saver_restore_latest(s, NULL));
    model_assert(&f->m, 4);
    ckpt_mpi_saver_free(s);
}

typedef struct {
    ckpt_mpi_saver *s;
    int err;
} cancelled_wait;

static void *wait_then_cancel(void *arg)
{
    cancelled_wait *c = arg;
    c->err = ckpt_mpi_saver_wait(c->s, -1);
    pthread_testcancel(); /* where the cancel is acted on */
    return NULL;
}

/* A thread cancelled (pthread_cancel) inside an mpi saver call: as for a
 * ckpt_saver (test_cancel_inside_a_call_waits_for_its_end), the cancel
 * was acted on at the call's first cancellation point, its pause while
 * rank 0's deletion ran (or a snapshot's condition wait, with the mutex
 * held), and the thread died inside the call. Now the call runs to its
 * end and the cancel takes effect after it. Rank 0 only: its wait, with
 * no save in flight and the WAIT policy, makes no MPI call. */
static void test_cancel_inside_a_call_waits_for_its_end(void **state)
{
    fixture *f = *state;
    static ckpt_fs_gated_remove g;
    ckpt_mpi_saver *s = save_two_evicting_held(f, &g, CKPT_BUSY_WAIT);
    if (test_rank() == 0) {
        cancelled_wait c = {s, -1};
        pthread_t t;
        void *ret = NULL;
        wait_deletion_held(&g);
        assert_int_equal(pthread_create(&t, NULL, wait_then_cancel, &c), 0);
        assert_int_equal(pthread_cancel(t), 0);
        usleep(
            20000); /* it reaches the wait's pauses (cancelled there before) */
        atomic_store(&g.closed, 0);
        assert_int_equal(pthread_join(t, &ret), 0);
        assert_ptr_equal(ret, PTHREAD_CANCELED);
        assert_ckpt_ok(c.err); /* the wait ran to its end */
        assert_int_equal(atomic_load(&g.timed_out), 0);
        assert_int_equal(count_files_in(f->dir, "model.ckpt-1."), 0);
    }
    assert_ckpt_ok(ckpt_mpi_saver_wait(s, -1));
    model_fill(&f->m, test_rank(), test_size(), 3);
    assert_ckpt_ok(ckpt_mpi_saver_save(s, 3, NULL)); /* still usable */
    assert_ckpt_ok(ckpt_mpi_saver_close(s));
    ckpt_mpi_saver_free(s);
    model_zero(&f->m);
    s = open_saver(f->dir, NULL);
    model_register(s, &f->m, 0);
    assert_ckpt_ok(ckpt_mpi_saver_restore_latest(s, NULL));
    model_assert(&f->m, 3);
    ckpt_mpi_saver_free(s);
}

/* Counts the file system calls made with cancellation enabled. */
typedef struct cancel_log {
    ckpt_fs_forward fwd;
    int calls, cancellable;
} cancel_log;

static void note_cancel_state(cancel_log *l)
{
    int old = PTHREAD_CANCEL_DISABLE;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
    pthread_setcancelstate(old, NULL);
    l->calls++;
    l->cancellable += old == PTHREAD_CANCEL_ENABLE;
}

static int noted_stat(const char *path, uint64_t *out, double *mtime_out,
                      void *payload)
{
    const ckpt_fs *base = ckpt_fs_forward_base(payload);
    note_cancel_state(payload);
    return base->stat(path, out, mtime_out, base->payload);
}

static int noted_list(const char *path, ckpt_dir_cb cb, void *cb_payload,
                      void *payload)
{
    const ckpt_fs *base = ckpt_fs_forward_base(payload);
    note_cancel_state(payload);
    return base->list(path, cb, cb_payload, base->payload);
}

/* ckpt_mpi_saver_open ran with cancellation enabled while every other call
 * held it off (as ckpt_saver_open did before it): a cancel acted on in
 * rank 0's recovery of the directory stopped it half way, or inside the
 * directory locks' process-wide mutex, left that held. The file system
 * sees the state the open runs in. */
static void test_open_holds_cancel_off(void **state)
{
    fixture *f = *state;
    ckpt_mpi_saver_options o = test_mpi_options();
    ckpt_mpi_saver *s = NULL;
    cancel_log l;
    memset(&l, 0, sizeof(l));
    ckpt_fs_forward_init(&l.fwd, NULL);
    l.fwd.fs.stat = noted_stat;
    l.fwd.fs.list = noted_list;
    o.base.fs = &l.fwd.fs;
    assert_ckpt_ok(ckpt_mpi_saver_open(&s, MPI_COMM_WORLD, f->dir, &o));
    if (test_rank() == 0)
        assert_true(l.calls > 0); /* rank 0 recovered the directory */
    assert_int_equal(l.cancellable, 0);
    ckpt_mpi_saver_free(s);
}

/* 0 when every index file in `dir` opens and verifies (its data files are
 * there and whole), else -1 naming the first that does not in `why`. */
static int every_index_verifies(const char *dir, char *why, size_t n)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int rc = 0;
    assert_non_null(d);
    while (rc == 0 && (e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        char prefix[4400];
        ckpt_bundle_reader *r = NULL;
        if (len < 7 || strcmp(e->d_name + len - 6, ".index") != 0)
            continue;
        snprintf(prefix, sizeof(prefix), "%s/%.*s", dir, (int)(len - 6),
                 e->d_name);
        if (ckpt_bundle_reader_open(&r, prefix, NULL) < 0 ||
            ckpt_bundle_reader_verify(r) < 0) {
            snprintf(why, n, "%s: %s", e->d_name, ckpt_error_last()->message);
            rc = -1;
        }
        ckpt_bundle_reader_free(r);
    }
    closedir(d);
    return rc;
}

/* Rank 0's commit with its syncs failing (EIO) from the Nth on, then a power
 * cut keeping a random part of what was not synced, for every N: the commit
 * that gave up after its index's rename (the directory fsync failed, or the
 * state file's update did) removed the index and the renamed data files
 * with nothing ordering the removals, and a cut keeping a data file's
 * removal but losing the index's left an index without its data. One rank
 * only: there every file of the save goes through this process's fault
 * file system, which models the power cut. */
#define MPI_CUT_SEEDS 8

static void test_failing_syncs_power_cut(void **state)
{
    fixture *f = *state;
    const unsigned syncs_mask =
        CKPT_FS_OP_BIT(CKPT_FS_OP_SYNC) | CKPT_FS_OP_BIT(CKPT_FS_OP_SYNC_DIR);
    uint64_t syncs = 0, cases = 0;
    if (test_size() != 1)
        skip();
    for (uint64_t cut = 0; cut == 0 || cut <= syncs; cut++) {
        for (uint64_t seed = 1; seed <= MPI_CUT_SEEDS; seed++) {
            ckpt_fs_fault *ff = NULL;
            ckpt_mpi_saver *s;
            char why[600] = "";
            int rc;
            fresh_dir(f->dir);
            assert_ckpt_ok(ckpt_fs_fault_new(&ff, NULL));
            s = open_saver(f->dir, ckpt_fs_fault_fs(ff));
            model_fill(&f->m, 0, 1, 1);
            model_register(s, &f->m, 0);
            assert_ckpt_ok(ckpt_mpi_saver_save(s, 1, NULL));
            if (cut > 0)
                ckpt_fs_fault_fail(ff, cut, syncs_mask, EIO, 1, 0);
            else
                ckpt_fs_fault_reset_count(ff);
            model_fill(&f->m, 0, 1, 2);
            rc = ckpt_mpi_saver_save(s, 2, NULL);
            if (rc == 0)
                rc = ckpt_mpi_saver_close(s);
            ckpt_mpi_saver_free(s);
            if (cut == 0) {
                assert_int_equal(rc, 0);
                syncs = ckpt_fs_fault_count(ff, syncs_mask);
            }
            ckpt_fs_fault_clear(ff);
            assert_ckpt_ok(ckpt_fs_fault_drop_unsynced_random(ff, seed));
            ckpt_fs_fault_free(ff);
            if (every_index_verifies(f->dir, why, sizeof(why)) < 0)
                fail_msg("syncs failing from sync %llu of %llu (the save: "
                         "%d), then a power cut (seed %llu): %s",
                         (unsigned long long)cut, (unsigned long long)syncs, rc,
                         (unsigned long long)seed, why);
            cases++;
        }
    }
    assert_true(syncs >= 4);
    print_message("%llu power cuts after failing syncs checked\n",
                  (unsigned long long)cases);
}

/* Retention under failing syncs and power cuts (max_to_keep 1): saves of
 * steps 1, 2 and 3, each evicting the one before, with syncs failing (EIO)
 * from the Nth after step 1's save, for every N (the commits, the state
 * file's updates and retention's deletions, index first), then a power cut
 * keeping a random part of what was not synced. Every index left verifies;
 * the next open removes what a save or deletion left, so that no data file
 * is left without its index; a restore of the latest checkpoint gives step
 * 1's, 2's or 3's values, at least those of the last save that returned 0.
 * One rank, for the reason above. */
static void test_retention_failing_syncs_power_cut(void **state)
{
    fixture *f = *state;
    const unsigned syncs_mask =
        CKPT_FS_OP_BIT(CKPT_FS_OP_SYNC) | CKPT_FS_OP_BIT(CKPT_FS_OP_SYNC_DIR);
    uint64_t syncs = 0, cases = 0;
    if (test_size() != 1)
        skip();
    for (uint64_t cut = 0; cut == 0 || cut <= syncs; cut++) {
        for (uint64_t seed = 1; seed <= MPI_CUT_SEEDS; seed++) {
            ckpt_mpi_saver_options o = test_mpi_options();
            ckpt_fs_fault *ff = NULL;
            ckpt_mpi_saver *s = NULL;
            char why[600] = "";
            int rc = 0, saved = 1;
            fresh_dir(f->dir);
            assert_ckpt_ok(ckpt_fs_fault_new(&ff, NULL));
            o.base.fs = ckpt_fs_fault_fs(ff);
            o.base.max_to_keep = 1;
            assert_ckpt_ok(ckpt_mpi_saver_open(&s, MPI_COMM_WORLD, f->dir, &o));
            model_fill(&f->m, 0, 1, 1);
            model_register(s, &f->m, 0);
            assert_ckpt_ok(ckpt_mpi_saver_save(s, 1, NULL));
            assert_ckpt_ok(ckpt_mpi_saver_wait(s, -1));
            if (cut > 0)
                ckpt_fs_fault_fail(ff, cut, syncs_mask, EIO, 1, 0);
            else
                ckpt_fs_fault_reset_count(ff);
            for (int step = 2; step <= 3 && rc == 0; step++) {
                model_fill(&f->m, 0, 1, step);
                rc = ckpt_mpi_saver_save(s, step, NULL);
                if (rc == 0)
                    saved = step;
                /* the fault file system takes one thread at a time: the
                 * eviction's deletion ends before the next save writes */
                if (rc == 0)
                    rc = ckpt_mpi_saver_wait(s, -1);
            }
            if (rc == 0)
                rc = ckpt_mpi_saver_close(s);
            ckpt_mpi_saver_free(s);
            if (cut == 0) {
                assert_int_equal(rc, 0);
                syncs = ckpt_fs_fault_count(ff, syncs_mask);
            }
            ckpt_fs_fault_clear(ff);
            assert_ckpt_ok(ckpt_fs_fault_drop_unsynced_random(ff, seed));
            ckpt_fs_fault_free(ff);
            if (every_index_verifies(f->dir, why, sizeof(why)) < 0)
                fail_msg("retention, syncs failing from sync %llu of %llu, "
                         "then a power cut (seed %llu): %s",
                         (unsigned long long)cut, (unsigned long long)syncs,
                         (unsigned long long)seed, why);
            /* the next open cleans up; the latest checkpoint restores */
            model_zero(&f->m);
            s = open_saver(f->dir, NULL);
            model_register(s, &f->m, 0);
            rc = ckpt_mpi_saver_restore_latest(s, NULL);
            ckpt_mpi_saver_free(s);
            if (rc != 0)
                fail_msg("retention, syncs failing from sync %llu, power cut "
                         "(seed %llu): restore_latest: %s",
                         (unsigned long long)cut, (unsigned long long)seed,
                         ckpt_error_last()->message);
            if (f->m.w[0] < (float)saved)
                fail_msg("retention, syncs failing from sync %llu, power cut "
                         "(seed %llu): step %d was saved, %g restored",
                         (unsigned long long)cut, (unsigned long long)seed,
                         saved, (double)f->m.w[0]);
            model_assert(&f->m, (int)f->m.w[0]); /* one save's values whole */
            if (test_find_leftover(f->dir, why, sizeof(why)) < 0)
                fail_msg("retention, syncs failing from sync %llu, power cut "
                         "(seed %llu), reopened: %s",
                         (unsigned long long)cut, (unsigned long long)seed,
                         why);
            cases++;
        }
    }
    assert_true(syncs >= 8);
    print_message("%llu power cuts of retention after failing syncs checked\n",
                  (unsigned long long)cases);
}

/* Saves in a row of one step (a loop that never advances the step it
 * passes) draw one warning, from rank 0 alone, at the third one, naming the
 * checkpoint each overwrites; sync and async saves count alike. */
static void test_repeated_step_warns_once(void **state)
{
    fixture *f = *state;
    ckpt_mpi_saver_options o = test_mpi_options();
    ckpt_mpi_saver *s = NULL;
    static char warnings[WARNINGS_SIZE];
    char want[4200];
    size_t n;
    warnings[0] = '\0';
    o.base.log = keep_warnings;
    o.base.log_payload = warnings;
    assert_ckpt_ok(ckpt_mpi_saver_open(&s, MPI_COMM_WORLD, f->dir, &o));
    model_fill(&f->m, test_rank(), test_size(), 1);
    model_register(s, &f->m, 0);
    assert_ckpt_ok(ckpt_mpi_saver_save(s, 4, NULL));
    assert_ckpt_ok(ckpt_mpi_saver_save(s, 5, NULL));
    assert_ckpt_ok(ckpt_mpi_saver_save(s, 5, NULL)); /* a final save */
    assert_null(strstr(warnings, "in a row"));
    assert_ckpt_ok(ckpt_mpi_saver_save_async(s, 5, NULL));
    assert_ckpt_ok(ckpt_mpi_saver_wait(s, -1));
    for (int i = 0; i < 3; i++)
        assert_ckpt_ok(ckpt_mpi_saver_save(s, 6, NULL));
    assert_ckpt_ok(ckpt_mpi_saver_close(s));
    ckpt_mpi_saver_free(s);
    n = test_count(warnings, "in a row");
    if (test_rank() != 0) {
        assert_int_equal(n, 0);
        return;
    }
    assert_int_equal(n, 1);
    snprintf(want, sizeof(want),
             "3 saves in a row of step 5, each one overwriting "
             "%s/model.ckpt-5: does the training loop advance",
             f->dir);
    assert_non_null(strstr(warnings, want));
}

static void keep_info(int level, const char *message, void *payload)
{
    char *b = payload;
    size_t used = strlen(b);
    if (level == CKPT_LOG_INFO)
        snprintf(b + used, WARNINGS_SIZE - used, "%s\n", message);
}

/* A committed save, sync or async, is said durable once, by rank 0, when
 * its outcome is delivered: "checkpoint P (step N) is durable on R ranks:
 * B bytes in T s" (the single-process saver's words, so a log reader such
 * as the black-box power-cut checker knows which saves it must never
 * lose); a failed one is not. */
static void test_durable_logged_by_rank0(void **state)
{
    fixture *f = *state;
    ckpt_mpi_saver_options o = test_mpi_options();
    ckpt_mpi_saver *s = NULL;
    static char info[WARNINGS_SIZE];
    char want[4300];
    const char *p;
    size_t n;
    info[0] = '\0';
    o.base.log = keep_info;
    o.base.log_payload = info;
    o.base.log_level = CKPT_LOG_INFO;
    assert_ckpt_ok(ckpt_mpi_saver_open(&s, MPI_COMM_WORLD, f->dir, &o));
    model_fill(&f->m, test_rank(), test_size(), 1);
    model_register(s, &f->m, 0);
    assert_ckpt_ok(ckpt_mpi_saver_save(s, 7, NULL));
    assert_ckpt_ok(ckpt_mpi_saver_save_async(s, 8, NULL));
    assert_ckpt_ok(ckpt_mpi_saver_wait(s, -1));
    assert_ckpt_ok(ckpt_mpi_saver_close(s));
    ckpt_mpi_saver_free(s);
    n = test_count(info, ") is durable on ");
    if (test_rank() != 0) {
        assert_int_equal(n, 0);
        return;
    }
    assert_int_equal(n, 2);
    for (int step = 7; step <= 8; step++) {
        snprintf(want, sizeof(want),
                 "checkpoint %s/model.ckpt-%d (step %d) is durable on %d "
                 "ranks: ",
                 f->dir, step, step, test_size());
        p = strstr(info, want);
        if (!p)
            fail_msg("no \"%s\" in the log:\n%s", want, info);
        p += strlen(want);
        assert_true(*p >= '1' && *p <= '9'); /* bytes, not 0 */
        assert_non_null(strstr(p, " bytes in "));
    }
}

/* Failed asynchronous saves kept until returned (mpi_failures.c, no MPI
 * involved): returned up to a count, once, combined in order; past the
 * ones kept whole only counted; with none kept a generic error. */
static void add_failure(ckpt__mpi_failures *f, int code, int64_t step)
{
    ckpt__mpi_status st;
    memset(&st, 0, sizeof(st));
    st.code = code;
    snprintf(st.msg, sizeof(st.msg), "disk %lld broke", (long long)step);
    ckpt__mpi_failure_add(f, &st, step, "d/m");
}

static void test_failures_returned_by_count(void **state)
{
    ckpt__mpi_failures f;
    (void)state;
    memset(&f, 0, sizeof(f));
    assert_ckpt_ok(ckpt__mpi_failures_take_all(&f));
    add_failure(&f, CKPT_EIO, 10);
    add_failure(&f, CKPT_ENOSPC, 20);
    add_failure(&f, CKPT_EIO, 30);
    assert_ckpt_ok(ckpt__mpi_failures_take(&f, 0));
    assert_ckpt_error(ckpt__mpi_failures_take(&f, 2), CKPT_EIO,
                      "save of step 10 to d/m failed: disk 10 broke; then save "
                      "of step 20 to d/m failed: disk 20 broke");
    assert_null(strstr(ckpt_error_last()->message, "30"));
    assert_ckpt_ok(ckpt__mpi_failures_take(&f, 2)); /* once */
    for (int64_t step = 40; step <= 90; step += 10)
        add_failure(&f, CKPT_ENOSPC, step); /* 30 and 40-60 kept, 70-90 not */
    assert_ckpt_error(ckpt__mpi_failures_take(&f, 5), CKPT_EIO,
                      "disk 30 broke; then save of step 40 to d/m failed: disk "
                      "40 broke; then save of step 50 to d/m failed: disk 50 "
                      "broke");
    assert_ckpt_error(ckpt__mpi_failures_take_all(&f), CKPT_ENOSPC,
                      "disk 60 broke; then 3 more failed");
    assert_ckpt_ok(ckpt__mpi_failures_take_all(&f));
    for (int64_t step = 1; step <= 6; step++)
        add_failure(&f, CKPT_ENOSPC, step);
    assert_ckpt_error(ckpt__mpi_failures_take(&f, f.returned + 5), CKPT_ENOSPC,
                      "then 1 more failed");
    add_failure(&f, CKPT_ENOSPC, 7); /* behind one not kept: counted only */
    assert_ckpt_error(ckpt__mpi_failures_take_all(&f), CKPT_EIO,
                      "2 asynchronous save(s) failed");
    assert_int_equal(f.returned, f.delivered);
    assert_int_equal(f.nkept, 0);
    /* a save that succeeded after the failures is said with them, once
     * all of them are returned; one before them is not */
    ckpt__mpi_failures_note_ok(&f, 99);
    add_failure(&f, CKPT_EIO, 100);
    add_failure(&f, CKPT_EIO, 110);
    ckpt__mpi_failures_note_ok(&f, 120);
    ckpt__mpi_failures_note_ok(&f, 130);
    assert_ckpt_error(ckpt__mpi_failures_take(&f, f.returned + 1), CKPT_EIO,
                      "disk 100 broke");
    assert_null(strstr(ckpt_error_last()->message, "later"));
    assert_ckpt_error(ckpt__mpi_failures_take_all(&f), CKPT_EIO,
                      "disk 110 broke (a later save, of step 130, "
                      "succeeded)");
    add_failure(&f, CKPT_EIO, 140);
    assert_ckpt_error(ckpt__mpi_failures_take_all(&f), CKPT_EIO,
                      "disk 140 broke");
    assert_null(strstr(ckpt_error_last()->message, "later"));
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_failures_returned_by_count),
        cmocka_unit_test_setup_teardown(test_sync_save_restore, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_async_save_is_a_snapshot, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_write_fails_on_one_rank, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_step_mismatch_rejected, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_restore_shape_mismatch, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_restore_detects_damage, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_fault_loop_on_rank0, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_fault_loop_on_last_rank, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_overlapping_pieces_rejected, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_hole_rejected, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restore_ignores_unlisted_piece,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_restore_big_endian_pieces, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_nested_piece_rejected, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_restore_from_many_pieces, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_mismatched_lists_rejected, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_mismatch_names_other_variables,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_shape_mismatch_rejected, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_kind_mismatch_names_every_rank,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_registration_order_free, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_null_arguments, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restore_without_prefix, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_restore_of_different_checkpoints_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_shared_memory_refused_on_every_rank, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_registration_rejected, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_bad_options_rejected, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_version_1_options_layout, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_direct_io_option, setup, teardown),
        cmocka_unit_test_setup_teardown(test_temp_names_all_taken, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_large_variable_checksums, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_restore_missing_data_file, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_restore_fifo_data_file, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_save_without_variables, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_empty_piece_needs_no_data, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_empty_partitioned_tensor, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_checksum_probing_snapshots_verify,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_repeated_step_warns_once, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_file_for_directory_on_one_rank,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_restore_latest_by_each_ranks_path,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_restore_latest_names_unlisted_checkpoints, setup, teardown),
        cmocka_unit_test_setup_teardown(test_options_that_differ_refused, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_other_directory_refused, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_relative_path_on_one_rank_saves,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_argument_on_one_rank, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_negative_step_fails_on_every_rank,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_snapshot_failure_names_the_save,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_calls_from_callbacks_refused,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_eviction_after_save, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_cancel_inside_a_call_waits_for_its_end, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_holds_cancel_off, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_durable_logged_by_rank0, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_retention_failing_syncs_power_cut,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_failing_syncs_power_cut, setup,
                                        teardown),
    };
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    return mpi_tests_end(cmocka_run_group_tests(tests, NULL, NULL));
}
