/* A full disk: on a small tmpfs the save that no longer fits fails with a
 * clear ENOSPC error naming the file, earlier checkpoints stay intact and
 * listed, no temporary files remain, and once space is freed the next save
 * succeeds. Needs to mount a tmpfs (root); skips otherwise. */
#include "saver_test_util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

enum { NVALS = 64 * 1024 }; /* 256 KiB per checkpoint */

static float vals[NVALS];
static int64_t step;

static ckpt_saver *open_saver(const char *dir, int policy)
{
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_saver *s = NULL;
    ckpt_var v = {"w", CKPT_DT_FLOAT, {1, {NVALS}}, vals, NULL, NULL, NULL};
    ckpt_var g = {"global_step", CKPT_DT_INT64, {0, {0}}, &step,
                  NULL,          NULL,          NULL};
    o.max_to_keep = CKPT_KEEP_ALL;
    o.busy_policy = policy;
    assert_ckpt_ok(ckpt_saver_open(&s, dir, &o));
    assert_ckpt_ok(ckpt_saver_add_var(s, &v));
    assert_ckpt_ok(ckpt_saver_add_var(s, &g));
    return s;
}

static int save(ckpt_saver *s, int64_t n, int async)
{
    int err;
    step = n;
    for (int i = 0; i < NVALS; i++)
        vals[i] = (float)(n * 7 + i);
    if (!async)
        return ckpt_saver_save(s, n, NULL);
    err = ckpt_saver_save_async(s, n, NULL);
    return err ? err : ckpt_saver_wait(s, 0, -1);
}

static void check_listed_and_intact(const char *dir, int64_t upto)
{
    ckpt_state st = CKPT_STATE_INIT;
    assert_ckpt_ok(ckpt_state_read(&st, NULL, dir));
    assert_int_equal(st.num_paths, (size_t)upto);
    for (size_t i = 0; i < st.num_paths; i++) {
        ckpt_buf prefix = CKPT_BUF_INIT;
        ckpt_bundle_reader *r = NULL;
        int64_t got = -1;
        assert_ckpt_ok(ckpt_state_resolve(&prefix, dir, st.all_paths[i]));
        assert_ckpt_ok(ckpt_bundle_reader_open(&r, prefix.ptr, NULL));
        assert_ckpt_ok(ckpt_bundle_reader_verify(r));
        assert_ckpt_ok(ckpt_bundle_reader_read(r, "global_step", &got, 8));
        assert_int_equal(got, (int64_t)i + 1);
        ckpt_bundle_reader_free(r);
        ckpt_buf_dispose(&prefix);
    }
    ckpt_state_dispose(&st);
}

static void run(int async)
{
    char *dir = test_make_temp_dir();
    ckpt_saver *s;
    int64_t n = 0;
    int err = 0;
    if (mount("tmpfs", dir, "tmpfs", 0, "size=2m") != 0) {
        print_message("SKIPPED: cannot mount a tmpfs (%s); needs root\n",
                      strerror(errno));
        test_remove_tree(dir);
        skip();
        return;
    }
    s = open_saver(dir, async ? CKPT_BUSY_WAIT : CKPT_BUSY_SKIP);
    while (err == 0 && n < 20) {
        err = save(s, ++n, async);
    }
    assert_ckpt_error(err, CKPT_ENOSPC, "No space left on device");
    assert_non_null(strstr(ckpt_error_last()->message, dir));
    assert_true(n >= 2);
    /* Earlier checkpoints intact and listed; nothing half-written left. */
    check_listed_and_intact(dir, n - 1);
    assert_int_equal(count_files(dir, "tempstate"), 0);
    assert_int_equal(count_files(dir, "checkpoint.tmp"), 0);
    {
        char name[64];
        snprintf(name, sizeof(name), "model.ckpt-%lld.index", (long long)n);
        assert_false(file_exists(dir, name));
    }
    /* Free space (reopening with max_to_keep 2 deletes the older ones):
     * the next save succeeds. */
    ckpt_saver_free(s);
    {
        ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
        ckpt_var v = {"w", CKPT_DT_FLOAT, {1, {NVALS}}, vals, NULL, NULL, NULL};
        ckpt_var g = {"global_step", CKPT_DT_INT64, {0, {0}}, &step,
                      NULL,          NULL,          NULL};
        o.max_to_keep = 2;
        assert_ckpt_ok(ckpt_saver_open(&s, dir, &o));
        assert_ckpt_ok(ckpt_saver_add_var(s, &v));
        assert_ckpt_ok(ckpt_saver_add_var(s, &g));
    }
    assert_ckpt_ok(save(s, n, async));
    assert_int_equal(ckpt_saver_num_checkpoints(s), 2);
    assert_int_equal(count_files(dir, "tempstate"), 0);
    ckpt_saver_free(s);
    assert_int_equal(umount(dir), 0);
    test_remove_tree(dir);
}

static void test_full_disk_sync(void **state)
{
    (void)state;
    run(0);
}

static void test_full_disk_async(void **state)
{
    (void)state;
    run(1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_disk_sync),
        cmocka_unit_test(test_full_disk_async),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
