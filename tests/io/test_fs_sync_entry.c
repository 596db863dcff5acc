/* tests/io/test_fs_sync_entry.c - ckpt_fs_sync_entry: which directory it
 * syncs for each spelling of a path (recorded by a forwarding file system
 * whose sync_dir succeeds without touching the disk), a directory reached
 * through a symbolic link (its real parent synced as well), the paths that
 * name no parent, a failing sync_dir's error passed on, and bad arguments.
 * The `ckpt` tool's repack syncs its destination's directory with it. */
#include "support/fs_forward.h"
#include "test_util.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct recorder {
    ckpt_fs_forward fwd; /* first: the payload */
    char synced[8][PATH_MAX];
    int n;
    int fail;      /* a ckpt_error_code sync_dir returns, or 0 */
    int fail_from; /* with fail: the first call (1-based) failing; 0: all */
} recorder;

static int record_sync_dir(const char *path, void *payload)
{
    recorder *r = payload;
    if (r->n < 8)
        snprintf(r->synced[r->n++], sizeof(r->synced[0]), "%s", path);
    if (r->fail && r->n >= r->fail_from)
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

/* A directory reached through a symbolic link: the link's entry is synced
 * in the link's parent, and the real directory's entry in its real parent
 * (the directory of its realpath) when that is another directory. A
 * parent reached through a link needs nothing more: opening it to sync it
 * opens the real parent. */
static void test_symlinked_directory(void **state)
{
    char *dir = test_make_temp_dir();
    char real_dir[PATH_MAX], real_sub[PATH_MAX + 8];
    char *real = test_path(dir, "real"), *ck = test_path(real, "ck");
    struct {
        const char *name, *target; /* a link in dir */
    } links[] = {{"link", "real/ck"},
                 {"chain", "link"},
                 {"plink", "real"},
                 {"near", "real/ck/.."}};
    struct {
        const char *path;   /* below dir */
        int real_parent;    /* 1: dir/real synced after dir; 0: dir only */
        const char *parent; /* with 0: the one directory synced, below dir */
    } cases[] = {
        {"link", 1, NULL},      {"link/", 1, NULL},       {"link/.", 1, NULL},
        {"chain", 1, NULL},     {"plink/ck", 0, "plink"}, {"near", 0, "."},
        {"real/ck", 0, "real"},
    };
    (void)state;
    assert_int_equal(mkdir(real, 0755), 0);
    assert_int_equal(mkdir(ck, 0755), 0);
    for (size_t k = 0; k < sizeof(links) / sizeof(links[0]); k++) {
        char *l = test_path(dir, links[k].name);
        assert_int_equal(symlink(links[k].target, l), 0);
        free(l);
    }
    assert_non_null(realpath(dir, real_dir));
    snprintf(real_sub, sizeof(real_sub), "%s/real", real_dir);
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        recorder r;
        char *path = test_path(dir, cases[k].path);
        char *want = cases[k].real_parent ? test_path(dir, ".")
                                          : test_path(dir, cases[k].parent);
        size_t wn = strlen(want);
        if (wn > 2 && strcmp(want + wn - 2, "/.") == 0)
            want[wn - 2] = '\0'; /* "dir/." is synced as "dir" */
        recorder_init(&r);
        assert_ckpt_ok(ckpt_fs_sync_entry(&r.fwd.fs, path));
        if (r.n != 1 + cases[k].real_parent || strcmp(r.synced[0], want) != 0 ||
            (cases[k].real_parent && strcmp(r.synced[1], real_sub) != 0))
            fail_msg("'%s': synced %d ('%s', '%s'), expected '%s'%s%s",
                     cases[k].path, r.n, r.synced[0],
                     r.n > 1 ? r.synced[1] : "", want,
                     cases[k].real_parent ? " then " : "",
                     cases[k].real_parent ? real_sub : "");
        free(path);
        free(want);
    }
    { /* the real parent's failing sync is the call's error, except a
       * real parent the fs does not find: not a name of that fs */
        recorder r;
        char *path = test_path(dir, "link");
        recorder_init(&r);
        r.fail = CKPT_EIO;
        r.fail_from = 2;
        assert_ckpt_error(ckpt_fs_sync_entry(&r.fwd.fs, path), CKPT_EIO,
                          real_sub);
        assert_int_equal(r.n, 2);
        recorder_init(&r);
        r.fail = CKPT_ENOTFOUND;
        r.fail_from = 2;
        assert_ckpt_ok(ckpt_fs_sync_entry(&r.fwd.fs, path));
        assert_int_equal(r.n, 2);
        assert_int_equal(ckpt_error_last()->code, 0);
        free(path);
    }
    /* the default file system syncs both for real */
    {
        char *path = test_path(dir, "link");
        assert_ckpt_ok(ckpt_fs_sync_entry(NULL, path));
        free(path);
    }
    free(ck);
    free(real);
    test_remove_tree(dir);
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
        cmocka_unit_test(test_symlinked_directory),
        cmocka_unit_test(test_default_fs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
