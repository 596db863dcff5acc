/* tests/io/test_fs_sync_entry.c - ckpt_fs_sync_entry: which directory it
 * syncs for each spelling of a path (recorded by a forwarding file system
 * whose sync_dir succeeds without touching the disk), the paths that name
 * no parent, a failing sync_dir's error passed on, and bad arguments. The
 * `ckpt` tool's repack syncs its destination's directory with it. */
#include "support/fs_forward.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct recorder {
    ckpt_fs_forward fwd; /* first: the payload */
    char synced[8][64];
    int n;
    int fail; /* a ckpt_error_code sync_dir returns, or 0 */
} recorder;

static int record_sync_dir(const char *path, void *payload)
{
    recorder *r = payload;
    if (r->n < 8)
        snprintf(r->synced[r->n++], sizeof(r->synced[0]), "%s", path);
    if (r->fail)
        return ckpt_error_set(r->fail, "sync_dir %s: refused", path);
    return 0;
}

static void recorder_init(recorder *r)
{
    memset(r, 0, sizeof(*r));
    ckpt_fs_forward_init(&r->fwd, NULL);
    r->fwd.fs.sync_dir = record_sync_dir;
}

static void test_parent_synced(void **state)
{
    static const struct {
        const char *path, *parent; /* parent NULL: nothing synced */
    } cases[] = {
        {"a/b", "a"},
        {"x", "."},
        {"/x", "/"},
        {"/out/x", "/out"},
        {"a//b", "a"},
        {"a/b/", "a"},
        {"a/b//", "a"},
        {"a/b/c", "a/b"},
        {"//x", "/"},
        {"", NULL},
        {"/", NULL},
        {"/.", NULL},
        /* "." and "..": the entry is in the parent the kernel finds */
        {".", ".."},
        {"./", ".."},
        {"..", "../.."},
        {"a/..", "a/../.."},
        {"a/.", "."},
        {"a/b/.", "a"},
    };
    (void)state;
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        recorder r;
        recorder_init(&r);
        assert_ckpt_ok(ckpt_fs_sync_entry(&r.fwd.fs, cases[k].path));
        if (!cases[k].parent) {
            if (r.n != 0)
                fail_msg("'%s': synced '%s', expected nothing", cases[k].path,
                         r.synced[0]);
            continue;
        }
        if (r.n != 1 || strcmp(r.synced[0], cases[k].parent) != 0)
            fail_msg("'%s': synced %d directories ('%s'), expected '%s'",
                     cases[k].path, r.n, r.n ? r.synced[0] : "",
                     cases[k].parent);
    }
}

static void test_errors(void **state)
{
    recorder r;
    ckpt_fs bad;
    (void)state;
    recorder_init(&r);
    r.fail = CKPT_EACCES;
    assert_ckpt_error(ckpt_fs_sync_entry(&r.fwd.fs, "dir/ckpt"), CKPT_EACCES,
                      "sync_dir dir: refused");
    r.fail = CKPT_EIO;
    assert_ckpt_error(ckpt_fs_sync_entry(&r.fwd.fs, "dir/ckpt"), CKPT_EIO,
                      "sync_dir dir: refused");
    assert_ckpt_error(ckpt_fs_sync_entry(&r.fwd.fs, NULL), CKPT_EINVAL,
                      "ckpt_fs_sync_entry: path is NULL");
    bad = r.fwd.fs;
    bad.sync_dir = NULL;
    assert_ckpt_error(ckpt_fs_sync_entry(&bad, "dir/ckpt"), CKPT_EINVAL,
                      "ckpt_fs_sync_entry: fs: ckpt_fs member 'sync_dir'");
    bad.version = 99;
    assert_ckpt_error(ckpt_fs_sync_entry(&bad, "dir/ckpt"), CKPT_EVERSION,
                      "ckpt_fs_sync_entry: fs: ckpt_fs version 99");
    assert_int_equal(r.n, 2);
}

/* The default file system: a real directory's entry, synced in "." */
static void test_default_fs(void **state)
{
    char *dir = test_make_temp_dir();
    char *sub = test_path(dir, "made");
    (void)state;
    assert_ckpt_ok(ckpt_fs_posix()->mkdir(sub, ckpt_fs_posix()->payload));
    assert_ckpt_ok(ckpt_fs_sync_entry(NULL, sub));
    assert_ckpt_error(ckpt_fs_sync_entry(NULL, "no-such-dir/x/y"),
                      CKPT_ENOTFOUND, "no-such-dir/x");
    free(sub);
    test_remove_tree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parent_synced),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_default_fs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
