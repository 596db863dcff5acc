/* A file system that refuses O_DIRECT (ramfs): the saver's first image
 * writes alternate between O_DIRECT and the page cache to choose one, and
 * the POSIX file system writes through the page cache when O_DIRECT is
 * refused. The choice logged said "O_DIRECT from now on" although no write
 * was direct; it now says the file system refuses O_DIRECT, and the
 * checkpoints restore. Needs to mount a ramfs (root); skips otherwise. */
#include "saver_test_util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

enum { NVALS = 256 * 1024 }; /* 1 MiB per checkpoint */

static float vals[NVALS];

static void test_direct_refused_said(void **state)
{
    char *dir = test_make_temp_dir();
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_saver *s = NULL;
    ckpt_var v = {"w", CKPT_DT_FLOAT, {1, {NVALS}}, vals, NULL, NULL, NULL};
    ckpt_buf latest = CKPT_BUF_INIT;
    test_log lb;
    (void)state;
    if (mount("ramfs", dir, "ramfs", 0, NULL) != 0) {
        print_message("SKIPPED: cannot mount a ramfs (%s); needs root\n",
                      strerror(errno));
        test_remove_tree(dir);
        skip();
        return;
    }
    test_log_init(&lb, CKPT_LOG_INFO);
    o.log = test_log_capture;
    o.log_payload = &lb;
    o.log_level = CKPT_LOG_INFO;
    assert_ckpt_ok(ckpt_saver_open(&s, dir, &o));
    assert_ckpt_ok(ckpt_saver_add_var(s, &v));
    for (int64_t n = 1; n <= 4; n++) {
        for (int i = 0; i < NVALS; i++)
            vals[i] = (float)(n * 3 + i);
        assert_ckpt_ok(ckpt_saver_save_async(s, n, NULL));
        assert_ckpt_ok(ckpt_saver_wait(s, 0, -1));
    }
    assert_ckpt_ok(ckpt_saver_latest(s, &latest));
    memset(vals, 0, sizeof(vals));
    assert_ckpt_ok(ckpt_saver_restore(s, latest.ptr));
    for (int i = 0; i < NVALS; i++)
        assert_true(vals[i] == (float)(4 * 3 + i));
    ckpt_saver_free(s);
    ckpt_buf_dispose(&latest);
    assert_non_null(strstr(lb.text, "checkpoint writes: the file system "
                                    "refuses O_DIRECT: through the page "
                                    "cache"));
    assert_null(strstr(lb.text, "O_DIRECT from now on"));
    assert_int_equal(umount(dir), 0);
    test_remove_tree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_direct_refused_said),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
