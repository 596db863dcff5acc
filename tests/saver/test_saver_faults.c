/* Fault loop over a save: every file-system operation of a save (with
 * retention deleting an old checkpoint, and of a two-shard bundle) fails in
 * turn, once and from then on, with EIO, ENOSPC, EDQUOT and EINTR for
 * writes and EXDEV / EACCES for renames. Every run must end in a clean error
 * naming the failed operation and file (or succeed when the failure hit a
 * best-effort step), leave the previous checkpoint the latest and readable, and
 * the next successful save must leave no temporary files. Leaks are caught by
 * the ASan build. */
#include "saver_test_util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NVALS = 64 };

typedef struct run {
    char *dir;
    float w[NVALS];
    int64_t step;
    ckpt_fs_fault *ff;
    ckpt_saver *s;
} run;

static void run_open(run *r, int policy)
{
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_var w = {"w", CKPT_DT_FLOAT, {1, {NVALS}}, r->w, NULL, NULL, NULL};
    ckpt_var st = {"global_step", CKPT_DT_INT64, {0, {0}}, &r->step,
                   NULL,          NULL,          NULL};
    memset(r, 0, sizeof(*r));
    r->dir = test_make_temp_dir();
    assert_ckpt_ok(ckpt_fs_fault_new(&r->ff, NULL));
    o.fs = ckpt_fs_fault_fs(r->ff);
    o.max_to_keep = 2;
    o.busy_policy = policy;
    assert_ckpt_ok(ckpt_saver_open(&r->s, r->dir, &o));
    assert_ckpt_ok(ckpt_saver_add_var(r->s, &w));
    assert_ckpt_ok(ckpt_saver_add_var(r->s, &st));
}

static void run_close(run *r)
{
    ckpt_saver_free(r->s);
    ckpt_fs_fault_free(r->ff);
    test_remove_tree(r->dir);
}

static void set_state(run *r, int64_t step)
{
    for (int i = 0; i < NVALS; i++)
        r->w[i] = (float)(step * 1000 + i);
    r->step = step;
}

static int save(run *r, int64_t step, int async)
{
    int err;
    set_state(r, step);
    if (!async)
        return ckpt_saver_save(r->s, step, NULL);
    err = ckpt_saver_save_async(r->s, step, NULL);
    if (err == 0)
        err = ckpt_saver_wait(r->s, 0, -1);
    return err;
}

/* The latest checkpoint (read with the plain POSIX fs) is `step` and holds
 * its values. */
static void expect_latest(run *r, int64_t step)
{
    ckpt_buf latest = CKPT_BUF_INIT;
    ckpt_bundle_reader *rd = NULL;
    float w[NVALS];
    int64_t got;
    assert_ckpt_ok(ckpt_latest_checkpoint(&latest, NULL, r->dir));
    assert_int_equal(ckpt_checkpoint_step(latest.ptr), step);
    assert_ckpt_ok(ckpt_bundle_reader_open(&rd, latest.ptr, NULL));
    assert_ckpt_ok(ckpt_bundle_reader_verify(rd));
    assert_ckpt_ok(ckpt_bundle_reader_read(rd, "w", w, sizeof(w)));
    assert_ckpt_ok(ckpt_bundle_reader_read(rd, "global_step", &got, 8));
    assert_int_equal(got, step);
    assert_true(w[NVALS - 1] == (float)(step * 1000 + NVALS - 1));
    ckpt_bundle_reader_free(rd);
    ckpt_buf_dispose(&latest);
}

static int64_t latest_step(run *r)
{
    ckpt_buf latest = CKPT_BUF_INIT;
    int64_t step = -1;
    if (ckpt_latest_checkpoint(&latest, NULL, r->dir) == 0)
        step = ckpt_checkpoint_step(latest.ptr);
    ckpt_buf_dispose(&latest);
    return step;
}

static void loop_ops(int async, int persistent, int err_no, unsigned op_mask)
{
    int injected_runs = 0;
    for (uint64_t n = 1; n < 500; n++) {
        run r;
        int rc;
        run_open(&r, CKPT_BUSY_SKIP);
        assert_ckpt_ok(save(&r, 1, async));
        assert_ckpt_ok(save(&r, 2, async));
        ckpt_fs_fault_fail(r.ff, n, op_mask, err_no, persistent, 3);
        rc = save(&r, 3, async); /* also evicts step 1 */
        if (ckpt_fs_fault_injected(r.ff) == 0) {
            assert_ckpt_ok(rc);
            run_close(&r);
            assert_true(injected_runs >= 2);
            return;
        }
        injected_runs++;
        if (rc != 0) {
            const char *msg = ckpt_error_last()->message;
            if (!strstr(msg, "(injected)"))
                fail_msg("op %llu: message lacks the injected failure: %s",
                         (unsigned long long)n, msg);
            if (!strstr(msg, r.dir) && !strstr(msg, "model.ckpt"))
                fail_msg("op %llu: message names no file: %s",
                         (unsigned long long)n, msg);
            /* With failures from then on, a failed state-file update may
             * be neither completed nor undone (the rename landed, its
             * directory sync and the rollback failed): the new checkpoint,
             * complete and verified, may then be the latest. */
            if (persistent && latest_step(&r) == 3)
                expect_latest(&r, 3);
            else
                expect_latest(&r, 2);
        } else {
            expect_latest(&r, 3);
        }
        ckpt_fs_fault_clear(r.ff);
        assert_ckpt_ok(save(&r, 4, async));
        expect_latest(&r, 4);
        if (count_files(r.dir, "tempstate") != 0 ||
            count_files(r.dir, "checkpoint.tmp") != 0) {
            char cmd[4200];
            snprintf(cmd, sizeof(cmd), "ls -la %s >&2", r.dir);
            if (system(cmd) != 0)
                print_error("ls failed\n");
            fail_msg("op %llu: temporary files left after the next save",
                     (unsigned long long)n);
        }
        run_close(&r);
    }
    fail_msg("the fault loop did not terminate");
}

static void loop(int async, int persistent, int err_no)
{
    loop_ops(async, persistent, err_no, CKPT_FS_OP_ALL);
}

#define WRITES CKPT_FS_OP_BIT(CKPT_FS_OP_WRITE)
#define RENAMES CKPT_FS_OP_BIT(CKPT_FS_OP_RENAME)

static void test_sync_once_eio(void **state)
{
    (void)state;
    loop(0, 0, EIO);
}

static void test_sync_persistent_enospc(void **state)
{
    (void)state;
    loop(0, 1, ENOSPC);
}

static void test_async_once_edquot(void **state)
{
    (void)state;
    loop(1, 0, EDQUOT);
}

static void test_async_persistent_eio(void **state)
{
    (void)state;
    loop(1, 1, EIO);
}

/* Writes failing with each errno a disk can give (EINTR escaping a file
 * system that does not retry it included), and renames failing across
 * devices or for lack of permission. */
static void test_writes_each_errno(void **state)
{
    static const int errs[] = {EIO, ENOSPC, EDQUOT, EINTR};
    (void)state;
    for (size_t i = 0; i < sizeof(errs) / sizeof(errs[0]); i++) {
        loop_ops(0, 0, errs[i], WRITES);
        loop_ops(1, 1, errs[i], WRITES);
    }
}

static void test_renames_exdev_eacces(void **state)
{
    (void)state;
    loop_ops(0, 0, EXDEV, RENAMES);
    loop_ops(1, 0, EACCES, RENAMES);
    loop_ops(0, 1, EACCES, RENAMES);
}

/* Saving a step again (or a fixed name, CKPT_NO_STEP) overwrites that
 * checkpoint. The old one must stay whole and the latest until the new
 * data is durable: every failure while writing the data (a full disk, say)
 * leaves it readable with its own values. A failure after that (the
 * index, the renames) may leave the step before it the latest, never
 * mixed files. */
static void test_overwrite_keeps_old_until_data_durable(void **state)
{
    int data_failures = 0;
    (void)state;
    for (int async = 0; async < 2; async++) {
        for (uint64_t n = 1; n < 100; n++) {
            run r;
            int rc;
            float w[NVALS];
            ckpt_buf latest = CKPT_BUF_INIT;
            ckpt_bundle_reader *rd = NULL;
            run_open(&r, CKPT_BUSY_SKIP);
            assert_ckpt_ok(save(&r, 1, async));
            assert_ckpt_ok(save(&r, 2, async));
            ckpt_fs_fault_fail(r.ff, n, CKPT_FS_OP_ALL, ENOSPC, 0, 0);
            set_state(&r, 2);
            r.w[0] = -1.0f; /* the overwrite's own values */
            rc = async ? ckpt_saver_save_async(r.s, 2, NULL) : 0;
            if (async && rc == 0)
                rc = ckpt_saver_wait(r.s, 0, -1);
            else if (!async)
                rc = ckpt_saver_save(r.s, 2, NULL);
            if (ckpt_fs_fault_injected(r.ff) == 0) {
                assert_ckpt_ok(rc);
                run_close(&r);
                break;
            }
            if (rc != 0 && strstr(ckpt_error_last()->message, ".data-") &&
                strstr(ckpt_error_last()->message, "tempstate") &&
                !strstr(ckpt_error_last()->message, "rename ")) {
                /* the new data was not durable: the old step 2 is whole */
                data_failures++;
                assert_ckpt_ok(ckpt_latest_checkpoint(&latest, NULL, r.dir));
                assert_int_equal(ckpt_checkpoint_step(latest.ptr), 2);
                assert_ckpt_ok(ckpt_bundle_reader_open(&rd, latest.ptr, NULL));
                assert_ckpt_ok(ckpt_bundle_reader_verify(rd));
                assert_ckpt_ok(ckpt_bundle_reader_read(rd, "w", w, sizeof(w)));
                assert_true(w[0] == 2000.0f);
                ckpt_bundle_reader_free(rd);
            } else if (latest_step(&r) == 2) {
                assert_ckpt_ok(ckpt_latest_checkpoint(&latest, NULL, r.dir));
                assert_ckpt_ok(ckpt_bundle_reader_open(&rd, latest.ptr, NULL));
                assert_ckpt_ok(ckpt_bundle_reader_verify(rd));
                ckpt_bundle_reader_free(rd);
            } else {
                expect_latest(&r, 1);
            }
            ckpt_buf_dispose(&latest);
            run_close(&r);
        }
    }
    assert_true(data_failures >= 2); /* the loop did reach the data writes */
}

/* A two-shard bundle written over an existing one fails in turn at every
 * operation: each run is a clean error naming the operation, the earlier
 * bundle still verifies, and no temporary file or partial index remains. */
static void write_two_shards(const ckpt_fs *fs, const char *prefix, float base,
                             int *rc)
{
    ckpt_bundle_writer_options o = CKPT_BUNDLE_WRITER_OPTIONS_INIT;
    ckpt_bundle_writer *w = NULL;
    ckpt_shape shape = {1, {NVALS}};
    float a[NVALS], b[NVALS];
    for (int i = 0; i < NVALS; i++) {
        a[i] = base + (float)i;
        b[i] = -base - (float)i;
    }
    o.fs = fs;
    o.num_shards = 2;
    *rc = ckpt_bundle_writer_open(&w, prefix, &o);
    if (*rc == 0)
        *rc =
            ckpt_bundle_writer_add(w, "a", CKPT_DT_FLOAT, &shape, a, sizeof(a));
    if (*rc == 0)
        *rc = ckpt_bundle_writer_select_shard(w, 1);
    if (*rc == 0)
        *rc =
            ckpt_bundle_writer_add(w, "b", CKPT_DT_FLOAT, &shape, b, sizeof(b));
    if (*rc == 0)
        *rc = ckpt_bundle_writer_finish(w);
    ckpt_bundle_writer_free(w);
}

static void expect_two_shards(const char *prefix, float base)
{
    ckpt_bundle_reader *r = NULL;
    float b[NVALS];
    assert_ckpt_ok(ckpt_bundle_reader_open(&r, prefix, NULL));
    assert_int_equal(ckpt_bundle_reader_num_shards(r), 2);
    assert_ckpt_ok(ckpt_bundle_reader_verify(r));
    assert_ckpt_ok(ckpt_bundle_reader_read(r, "b", b, sizeof(b)));
    assert_true(b[1] == -base - 1.0f);
    ckpt_bundle_reader_free(r);
}

static void test_two_shard_bundle_fault_loop(void **state)
{
    (void)state;
    for (int persistent = 0; persistent < 2; persistent++) {
        for (uint64_t n = 1; n < 500; n++) {
            char *dir = test_make_temp_dir();
            char old_prefix[4200], new_prefix[4200];
            ckpt_fs_fault *ff = NULL;
            int rc;
            snprintf(old_prefix, sizeof(old_prefix), "%s/old", dir);
            snprintf(new_prefix, sizeof(new_prefix), "%s/new", dir);
            assert_ckpt_ok(ckpt_fs_fault_new(&ff, NULL));
            write_two_shards(ckpt_fs_fault_fs(ff), old_prefix, 1.0f, &rc);
            assert_ckpt_ok(rc);
            ckpt_fs_fault_fail(ff, n, CKPT_FS_OP_ALL, EIO, persistent, 5);
            write_two_shards(ckpt_fs_fault_fs(ff), new_prefix, 2.0f, &rc);
            if (ckpt_fs_fault_injected(ff) == 0) {
                assert_ckpt_ok(rc);
                expect_two_shards(new_prefix, 2.0f);
                ckpt_fs_fault_free(ff);
                test_remove_tree(dir);
                break;
            }
            if (rc != 0) {
                if (!strstr(ckpt_error_last()->message, "(injected)"))
                    fail_msg("op %llu: %s", (unsigned long long)n,
                             ckpt_error_last()->message);
                /* From then on even the cleanup fails: an index renamed
                 * before its directory sync failed may stay, but only
                 * complete. Once, the cleanup removes it. */
                if (file_exists(dir, "new.index")) {
                    if (!persistent)
                        fail_msg("op %llu: new.index left after: %s",
                                 (unsigned long long)n,
                                 ckpt_error_last()->message);
                    expect_two_shards(new_prefix, 2.0f);
                }
            }
            expect_two_shards(old_prefix, 1.0f);
            if (!persistent) {
                assert_int_equal(count_files(dir, "tempstate"), 0);
                if (rc != 0)
                    assert_int_equal(count_files(dir, "new."), 0);
            }
            ckpt_fs_fault_free(ff);
            test_remove_tree(dir);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_writes_each_errno),
        cmocka_unit_test(test_renames_exdev_eacces),
        cmocka_unit_test(test_overwrite_keeps_old_until_data_durable),
        cmocka_unit_test(test_two_shard_bundle_fault_loop),
        cmocka_unit_test(test_sync_once_eio),
        cmocka_unit_test(test_sync_persistent_enospc),
        cmocka_unit_test(test_async_once_edquot),
        cmocka_unit_test(test_async_persistent_eio),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
