/* Tests for ckpt_fs_write_file_atomic: round trips, errors, and a fault
 * loop failing each mutating operation in turn, after which the target
 * holds either the new content (success) or the original one, no temporary
 * file is left, and a power cut never exposes anything else. */
#include "test_util.h"

#include "io/fs_internal.h"
#include "support/fs_fault.h"
#include "support/fs_forward.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char ORIGINAL[] = "model_checkpoint_path: \"ckpt-1\"\n";
static const char UPDATED[] = "model_checkpoint_path: \"ckpt-2\"\n"
                              "all_model_checkpoint_paths: \"ckpt-2\"\n";

struct fixture {
    char *dir;
    char *path;
};

static int setup(void **state)
{
    struct fixture *fx = calloc(1, sizeof(*fx));
    size_t n;
    assert_non_null(fx);
    fx->dir = test_make_temp_dir();
    n = strlen(fx->dir) + sizeof("/checkpoint");
    fx->path = malloc(n);
    assert_non_null(fx->path);
    snprintf(fx->path, n, "%s/checkpoint", fx->dir);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *fx = *state;
    test_remove_tree(fx->dir);
    free(fx->path);
    free(fx);
    return 0;
}

static int file_is(const char *path, const char *text)
{
    size_t got = 0;
    uint8_t *p = test_read_file(path, &got);
    int same = p && got == strlen(text) && !memcmp(p, text, got);
    free(p);
    return same;
}

struct listing {
    int count;
    char first[256];
};

static int list_entry(const char *name, void *payload)
{
    struct listing *l = payload;
    if (l->count == 0)
        snprintf(l->first, sizeof(l->first), "%s", name);
    l->count++;
    return 0;
}

/* The directory must hold exactly one entry, named "checkpoint". */
static void assert_only_target(const struct fixture *fx)
{
    struct listing l;
    const ckpt_fs *fs = ckpt_fs_posix();
    memset(&l, 0, sizeof(l));
    assert_ckpt_ok(fs->list(fx->dir, list_entry, &l, fs->payload));
    if (l.count != 1 || strcmp(l.first, "checkpoint") != 0)
        fail_msg("%d entries in %s (first \"%s\"): a temporary file left?",
                 l.count, fx->dir, l.first);
}

static void test_create_and_replace(void **state)
{
    struct fixture *fx = *state;
    assert_ckpt_ok(
        ckpt_fs_write_file_atomic(NULL, fx->path, ORIGINAL, strlen(ORIGINAL)));
    test_assert_file_is(fx->path, ORIGINAL, strlen(ORIGINAL));
    assert_only_target(fx);
    assert_ckpt_ok(ckpt_fs_write_file_atomic(ckpt_fs_posix(), fx->path, UPDATED,
                                             strlen(UPDATED)));
    test_assert_file_is(fx->path, UPDATED, strlen(UPDATED));
    assert_only_target(fx);
    /* empty content is fine */
    assert_ckpt_ok(ckpt_fs_write_file_atomic(NULL, fx->path, NULL, 0));
    test_assert_file_is(fx->path, "", 0);
    assert_only_target(fx);
}

static void test_relative_path(void **state)
{
    struct fixture *fx = *state;
    char *cwd = getcwd(NULL, 0);
    assert_non_null(cwd);
    assert_int_equal(chdir(fx->dir), 0);
    /* no directory part: the directory synced is "." */
    assert_ckpt_ok(ckpt_fs_write_file_atomic(NULL, "checkpoint", UPDATED, 10));
    assert_int_equal(chdir(cwd), 0);
    free(cwd);
    test_assert_file_is(fx->path, UPDATED, 10);
    assert_only_target(fx);
}

static void test_errors(void **state)
{
    struct fixture *fx = *state;
    char bad[4200];
    snprintf(bad, sizeof(bad), "%s/no/such/dir/file", fx->dir);
    assert_ckpt_error(ckpt_fs_write_file_atomic(NULL, bad, "x", 1),
                      CKPT_ENOTFOUND, "open_write");
    assert_non_null(strstr(ckpt_error_last()->message, bad));
    assert_ckpt_error(ckpt_fs_write_file_atomic(NULL, "", "x", 1), CKPT_EINVAL,
                      NULL);
    assert_ckpt_error(ckpt_fs_write_file_atomic(NULL, NULL, "x", 1),
                      CKPT_EINVAL, NULL);
    assert_ckpt_error(ckpt_fs_write_file_atomic(NULL, fx->path, NULL, 3),
                      CKPT_EINVAL, NULL);
}

/* Fail mutating operation i (once) for every i; see the file comment. */
static void run_fault_loop(struct fixture *fx, int err, size_t partial)
{
    ckpt_fs_fault *ff = NULL;
    const ckpt_fs *fs;
    uint64_t ops;
    assert_ckpt_ok(ckpt_fs_fault_new(&ff, NULL));
    fs = ckpt_fs_fault_fs(ff);

    /* a clean run tells how many mutating operations there are */
    test_write_file(fx->path, ORIGINAL, strlen(ORIGINAL));
    ckpt_fs_fault_reset_count(ff);
    assert_ckpt_ok(
        ckpt_fs_write_file_atomic(fs, fx->path, UPDATED, strlen(UPDATED)));
    ops = ckpt_fs_fault_count(ff, CKPT_FS_OP_MUTATING);
    /* open_write, write, sync, close, rename, sync_dir */
    assert_int_equal(ops, 6);
    assert_ckpt_ok(ckpt_fs_fault_drop_unsynced(ff));

    for (uint64_t i = 1; i <= ops + 1; i++) {
        int rc;
        test_write_file(fx->path, ORIGINAL, strlen(ORIGINAL));
        ckpt_fs_fault_fail(ff, i, CKPT_FS_OP_MUTATING, err, 0, partial);
        ckpt_error_clear();
        rc = ckpt_fs_write_file_atomic(fs, fx->path, UPDATED, strlen(UPDATED));
        if (i > ops) {
            /* nothing left to fail */
            assert_ckpt_ok(rc);
            assert_true(file_is(fx->path, UPDATED));
        } else {
            const char *msg = ckpt_error_last()->message;
            assert_int_equal(rc, ckpt__code_from_errno(err));
            if (!strstr(msg, "(injected)") || !strstr(msg, fx->path))
                fail_msg("op %llu: message \"%s\"", (unsigned long long)i, msg);
            /* Only a failed sync_dir comes after the rename: the new
             * content is in place but not known to be durable. */
            if (strstr(msg, ": sync_dir "))
                assert_true(file_is(fx->path, UPDATED));
            else if (!file_is(fx->path, ORIGINAL))
                fail_msg("op %llu (%s): original content changed",
                         (unsigned long long)i, msg);
        }
        assert_only_target(fx);
        /* a power cut now: the file is whole, old or new, never torn */
        assert_ckpt_ok(ckpt_fs_fault_drop_unsynced(ff));
        if (rc == 0)
            assert_true(file_is(fx->path, UPDATED));
        else
            assert_true(file_is(fx->path, ORIGINAL));
        assert_only_target(fx);
        assert_int_equal(ckpt_fs_fault_injected(ff), i <= ops ? i : ops);
    }
    ckpt_fs_fault_free(ff);
}

static void test_fault_loop_eio(void **state)
{
    run_fault_loop(*state, EIO, 0);
}

static void test_fault_loop_enospc_short_writes(void **state)
{
    run_fault_loop(*state, ENOSPC, 7);
}

static void test_power_cut_without_failure(void **state)
{
    struct fixture *fx = *state;
    ckpt_fs_fault *ff = NULL;
    const ckpt_fs *fs;
    assert_ckpt_ok(ckpt_fs_fault_new(&ff, NULL));
    fs = ckpt_fs_fault_fs(ff);
    /* a first write of a new file survives a cut once it returned */
    assert_ckpt_ok(
        ckpt_fs_write_file_atomic(fs, fx->path, ORIGINAL, strlen(ORIGINAL)));
    assert_ckpt_ok(ckpt_fs_fault_drop_unsynced(ff));
    test_assert_file_is(fx->path, ORIGINAL, strlen(ORIGINAL));
    assert_only_target(fx);
    ckpt_fs_fault_free(ff);
}

/* A custom file system whose path methods say why they failed without
 * naming the path ("device 3 is gone") gets "<method> <path>: " in front,
 * as the methods on an open file do; a rename names both of its files.
 * (They were once passed on bare, naming no file.) */
static int gone_rename(const char *from, const char *to, void *payload)
{
    (void)from, (void)to, (void)payload;
    return ckpt_error_set(CKPT_EIO, "device %d is gone", 3);
}
static int gone_path(const char *path, void *payload)
{
    (void)path, (void)payload;
    return ckpt_error_set(CKPT_EIO, "device %d is gone", 3);
}
static int gone_stat(const char *path, uint64_t *size, double *mtime,
                     void *payload)
{
    (void)size, (void)mtime;
    return gone_path(path, payload);
}
static int gone_list(const char *path, ckpt_dir_cb cb, void *cb_payload,
                     void *payload)
{
    (void)cb, (void)cb_payload;
    return gone_path(path, payload);
}
static int named_rename(const char *from, const char *to, void *payload)
{
    (void)payload;
    return ckpt_error_set(CKPT_EIO, "moving %s onto %s: device gone", from, to);
}

static void test_method_messages_name_the_files(void **state)
{
    struct fixture *fx = *state;
    ckpt_fs_forward fwd;
    const char *msg;
    char want[4300];
    test_write_file(fx->path, ORIGINAL, strlen(ORIGINAL));
    ckpt_fs_forward_init(&fwd, NULL);
    fwd.fs.rename = gone_rename;
    assert_ckpt_error(ckpt_fs_write_file_atomic(&fwd.fs, fx->path, "x", 1),
                      CKPT_EIO, ": device 3 is gone");
    msg = ckpt_error_last()->message;
    snprintf(want, sizeof(want), "rename %s/checkpoint.", fx->dir);
    if (!strstr(msg, want))
        fail_msg("\"%s\" lacks \"%s\"", msg, want);
    snprintf(want, sizeof(want), " to %s: device 3 is gone", fx->path);
    if (!strstr(msg, want))
        fail_msg("\"%s\" lacks \"%s\"", msg, want);
    assert_only_target(fx);
    assert_true(file_is(fx->path, ORIGINAL));
    /* a message naming both files already is kept as it is */
    fwd.fs.rename = named_rename;
    assert_ckpt_error(ckpt_fs_write_file_atomic(&fwd.fs, fx->path, "x", 1),
                      CKPT_EIO, "moving ");
    fwd.fs.rename = ckpt_fs_posix()->rename;
    fwd.fs.sync_dir = gone_path;
    snprintf(want, sizeof(want), "sync_dir %s: device 3 is gone", fx->dir);
    assert_ckpt_error(ckpt_fs_write_file_atomic(&fwd.fs, fx->path, "x", 1),
                      CKPT_EIO, want);
    fwd.fs.remove = gone_path;
    fwd.fs.mkdir = gone_path;
    fwd.fs.stat = gone_stat;
    fwd.fs.list = gone_list;
    snprintf(want, sizeof(want), "remove %s: device 3 is gone", fx->path);
    assert_ckpt_error(ckpt__fs_remove(&fwd.fs, fx->path), CKPT_EIO, want);
    snprintf(want, sizeof(want), "mkdir %s: device 3 is gone", fx->path);
    assert_ckpt_error(ckpt__fs_mkdir(&fwd.fs, fx->path), CKPT_EIO, want);
    snprintf(want, sizeof(want), "stat %s: device 3 is gone", fx->path);
    assert_ckpt_error(ckpt__fs_stat(&fwd.fs, fx->path, NULL, NULL), CKPT_EIO,
                      want);
    snprintf(want, sizeof(want), "list %s: device 3 is gone", fx->dir);
    assert_ckpt_error(ckpt__fs_list(&fwd.fs, fx->dir, list_entry, NULL),
                      CKPT_EIO, want);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_create_and_replace),
        T(test_relative_path),
        T(test_errors),
        T(test_fault_loop_eio),
        T(test_fault_loop_enospc_short_writes),
        T(test_power_cut_without_failure),
        T(test_method_messages_name_the_files),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
