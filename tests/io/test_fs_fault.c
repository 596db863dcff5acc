/* Tests for the fault-injecting file system (tests/support/fs_fault.h):
 * counting, failing the Nth operation once or persistently, short writes,
 * error codes and messages, and the power-cut simulation of
 * ckpt_fs_fault_drop_unsynced. */
#include "test_util.h"

#include "io/fs_internal.h"
#include "support/fs_fault.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct fixture {
    char *dir;
    ckpt_fs_fault *ff;
    const ckpt_fs *fs;
};

static int setup(void **state)
{
    struct fixture *fx = calloc(1, sizeof(*fx));
    assert_non_null(fx);
    fx->dir = test_make_temp_dir();
    assert_ckpt_ok(ckpt_fs_fault_new(&fx->ff, NULL));
    fx->fs = ckpt_fs_fault_fs(fx->ff);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *fx = *state;
    ckpt_fs_fault_free(fx->ff);
    test_remove_tree(fx->dir);
    free(fx);
    return 0;
}

static void assert_file_is(const char *path, const char *text)
{
    test_assert_file_is(path, text, strlen(text));
}

static void assert_missing(const char *path)
{
    struct stat st;
    if (lstat(path, &st) == 0)
        fail_msg("%s exists but should not", path);
}

/* Open `path` for writing through the wrapper, write `text`, optionally
 * sync, close. */
static void put(const struct fixture *fx, const char *path, int flags,
                const char *text, int sync)
{
    const ckpt_fs *fs = fx->fs;
    ckpt_file *f = NULL;
    assert_ckpt_ok(fs->open_write(&f, path, flags, fs->payload));
    assert_ckpt_ok(fs->write(f, text, strlen(text), fs->payload));
    if (sync)
        assert_ckpt_ok(fs->sync(f, fs->payload));
    assert_ckpt_ok(fs->close(f, fs->payload));
}

static void test_op_names(void **state)
{
    (void)state;
    assert_string_equal(ckpt_fs_op_name(CKPT_FS_OP_OPEN_WRITE), "open_write");
    assert_string_equal(ckpt_fs_op_name(CKPT_FS_OP_WRITE), "write");
    assert_string_equal(ckpt_fs_op_name(CKPT_FS_OP_RENAME), "rename");
    assert_string_equal(ckpt_fs_op_name(CKPT_FS_OP_SYNC_DIR), "sync_dir");
    assert_string_equal(ckpt_fs_op_name(CKPT_FS_OP_STAT), "stat");
    assert_string_equal(ckpt_fs_op_name(CKPT_FS_OP_COUNT), "unknown");
    assert_string_equal(ckpt_fs_op_name(-1), "unknown");
}

static int count_entry(const char *name, void *payload)
{
    (void)name;
    (*(int *)payload)++;
    return 0;
}

static void test_passthrough_and_counts(void **state)
{
    struct fixture *fx = *state;
    const ckpt_fs *fs = fx->fs;
    char *a = test_path(fx->dir, "a");
    char *b = test_path(fx->dir, "b");
    ckpt_file *f = NULL;
    char back[16];
    size_t nread = 0;
    uint64_t size = 0;
    int entries = 0;

    assert_ckpt_ok(fs->open_write(&f, a, CKPT_OPEN_EXCL, fs->payload));
    assert_ckpt_ok(fs->write(f, "hello", 5, fs->payload));
    assert_ckpt_ok(fs->write(f, " world", 6, fs->payload));
    assert_ckpt_ok(fs->sync(f, fs->payload));
    assert_ckpt_ok(fs->close(f, fs->payload));
    assert_ckpt_ok(fs->open_read(&f, a, fs->payload));
    assert_ckpt_ok(fs->size(f, &size, fs->payload));
    assert_int_equal(size, 11);
    assert_ckpt_ok(fs->pread(f, back, sizeof(back), 0, &nread, fs->payload));
    assert_int_equal(nread, 11);
    assert_memory_equal(back, "hello world", 11);
    assert_ckpt_ok(fs->close(f, fs->payload));
    assert_ckpt_ok(fs->rename(a, b, fs->payload));
    assert_ckpt_ok(fs->sync_dir(fx->dir, fs->payload));
    assert_ckpt_ok(fs->stat(b, &size, NULL, fs->payload));
    assert_ckpt_ok(fs->list(fx->dir, count_entry, &entries, fs->payload));
    assert_int_equal(entries, 1);
    assert_file_is(b, "hello world");

    assert_int_equal(ckpt_fs_fault_count(fx->ff, CKPT_FS_OP_ALL), 13);
    assert_int_equal(
        ckpt_fs_fault_count(fx->ff, CKPT_FS_OP_BIT(CKPT_FS_OP_WRITE)), 2);
    assert_int_equal(
        ckpt_fs_fault_count(fx->ff, CKPT_FS_OP_BIT(CKPT_FS_OP_CLOSE)), 2);
    assert_int_equal(
        ckpt_fs_fault_count(fx->ff, CKPT_FS_OP_BIT(CKPT_FS_OP_SYNC) |
                                        CKPT_FS_OP_BIT(CKPT_FS_OP_RENAME)),
        2);
    /* open_write, 2 write, sync, 2 close, rename, sync_dir */
    assert_int_equal(ckpt_fs_fault_count(fx->ff, CKPT_FS_OP_MUTATING), 8);
    assert_int_equal(ckpt_fs_fault_injected(fx->ff), 0);
    ckpt_fs_fault_reset_count(fx->ff);
    assert_int_equal(ckpt_fs_fault_count(fx->ff, CKPT_FS_OP_ALL), 0);
    assert_ckpt_ok(fs->stat(b, NULL, NULL, fs->payload));
    assert_int_equal(
        ckpt_fs_fault_count(fx->ff, CKPT_FS_OP_BIT(CKPT_FS_OP_STAT)), 1);

    /* the wrapped file system reports the inner one's errors */
    assert_ckpt_error(fs->open_read(&f, a, fs->payload), CKPT_ENOTFOUND, a);
    free(a);
    free(b);
}

static void test_fail_nth_write_once(void **state)
{
    struct fixture *fx = *state;
    const ckpt_fs *fs = fx->fs;
    char *path = test_path(fx->dir, "f");
    ckpt_file *f = NULL;

    ckpt_fs_fault_fail(fx->ff, 3, CKPT_FS_OP_BIT(CKPT_FS_OP_WRITE), EIO, 0, 0);
    assert_ckpt_ok(fs->open_write(&f, path, CKPT_OPEN_EXCL, fs->payload));
    assert_ckpt_ok(fs->write(f, "1", 1, fs->payload));
    assert_ckpt_ok(fs->write(f, "2", 1, fs->payload));
    assert_ckpt_error(fs->write(f, "3", 1, fs->payload), CKPT_EIO,
                      "(injected)");
    assert_non_null(strstr(ckpt_error_last()->message, "write "));
    assert_non_null(strstr(ckpt_error_last()->message, path));
    assert_non_null(strstr(ckpt_error_last()->message, strerror(EIO)));
    assert_ckpt_ok(fs->write(f, "4", 1, fs->payload));
    assert_ckpt_ok(fs->write(f, "5", 1, fs->payload));
    assert_ckpt_ok(fs->close(f, fs->payload));
    assert_int_equal(ckpt_fs_fault_injected(fx->ff), 1);
    assert_file_is(path, "1245");
    free(path);
}

static void test_fail_persistent_then_clear(void **state)
{
    struct fixture *fx = *state;
    const ckpt_fs *fs = fx->fs;
    char *path = test_path(fx->dir, "p");
    ckpt_file *f = NULL;

    assert_ckpt_ok(fs->open_write(&f, path, CKPT_OPEN_EXCL, fs->payload));
    ckpt_fs_fault_fail(fx->ff, 2, CKPT_FS_OP_BIT(CKPT_FS_OP_SYNC), EIO, 1, 0);
    assert_ckpt_ok(fs->sync(f, fs->payload));
    for (int i = 0; i < 4; i++)
        assert_ckpt_error(fs->sync(f, fs->payload), CKPT_EIO, "sync ");
    /* writes are not in the mask */
    assert_ckpt_ok(fs->write(f, "x", 1, fs->payload));
    assert_int_equal(ckpt_fs_fault_injected(fx->ff), 4);
    ckpt_fs_fault_clear(fx->ff);
    assert_ckpt_ok(fs->sync(f, fs->payload));
    assert_int_equal(
        ckpt_fs_fault_count(fx->ff, CKPT_FS_OP_BIT(CKPT_FS_OP_SYNC)), 6);
    assert_ckpt_ok(fs->close(f, fs->payload));
    free(path);
}

static void test_partial_write_lands_exactly(void **state)
{
    struct fixture *fx = *state;
    const ckpt_fs *fs = fx->fs;
    char *path = test_path(fx->dir, "short");
    ckpt_file *f = NULL;

    assert_ckpt_ok(fs->open_write(&f, path, CKPT_OPEN_EXCL, fs->payload));
    assert_ckpt_ok(fs->write(f, "abc", 3, fs->payload));
    ckpt_fs_fault_fail(fx->ff, 1, CKPT_FS_OP_BIT(CKPT_FS_OP_WRITE), ENOSPC, 0,
                       4);
    assert_ckpt_error(fs->write(f, "0123456789", 10, fs->payload), CKPT_ENOSPC,
                      "(injected)");
    assert_non_null(strstr(ckpt_error_last()->message, path));
    assert_non_null(strstr(ckpt_error_last()->message, strerror(ENOSPC)));
    assert_ckpt_ok(fs->close(f, fs->payload));
    assert_file_is(path, "abc0123");

    /* partial bytes beyond the write's length are capped */
    assert_ckpt_ok(fs->open_write(&f, path, CKPT_OPEN_TRUNC, fs->payload));
    ckpt_fs_fault_fail(fx->ff, 1, CKPT_FS_OP_BIT(CKPT_FS_OP_WRITE), EIO, 0,
                       100);
    assert_ckpt_error(fs->write(f, "xy", 2, fs->payload), CKPT_EIO,
                      "(injected)");
    assert_ckpt_ok(fs->close(f, fs->payload));
    assert_file_is(path, "xy");
    free(path);
}

static void test_errno_mapping_and_messages(void **state)
{
    struct fixture *fx = *state;
    const ckpt_fs *fs = fx->fs;
    char *a = test_path(fx->dir, "a");
    char *b = test_path(fx->dir, "b");
    char *d = test_path(fx->dir, "d");
    ckpt_file *f = NULL;

    ckpt_fs_fault_fail(fx->ff, 1, CKPT_FS_OP_BIT(CKPT_FS_OP_OPEN_WRITE), EDQUOT,
                       0, 0);
    assert_ckpt_error(fs->open_write(&f, a, CKPT_OPEN_EXCL, fs->payload),
                      CKPT_ENOSPC, "open_write ");
    assert_non_null(strstr(ckpt_error_last()->message, a));
    assert_null(f);
    assert_missing(a); /* a failed open creates nothing */

    test_write_file(a, "a", 1);
    ckpt_fs_fault_fail(fx->ff, 1, CKPT_FS_OP_BIT(CKPT_FS_OP_RENAME), EXDEV, 0,
                       0);
    assert_ckpt_error(fs->rename(a, b, fs->payload), CKPT_EIO, "rename ");
    assert_non_null(strstr(ckpt_error_last()->message, a));
    assert_non_null(strstr(ckpt_error_last()->message, b));
    assert_non_null(strstr(ckpt_error_last()->message, "(injected)"));
    assert_file_is(a, "a");
    assert_missing(b);

    ckpt_fs_fault_fail(fx->ff, 1, CKPT_FS_OP_BIT(CKPT_FS_OP_REMOVE), EACCES, 0,
                       0);
    assert_ckpt_error(fs->remove(a, fs->payload), CKPT_EACCES, "remove ");
    assert_file_is(a, "a");

    ckpt_fs_fault_fail(fx->ff, 1, CKPT_FS_OP_BIT(CKPT_FS_OP_MKDIR), ENOSPC, 0,
                       0);
    assert_ckpt_error(fs->mkdir(d, fs->payload), CKPT_ENOSPC, "mkdir ");
    assert_missing(d);

    ckpt_fs_fault_fail(fx->ff, 1, CKPT_FS_OP_BIT(CKPT_FS_OP_SYNC_DIR), EIO, 0,
                       0);
    assert_ckpt_error(fs->sync_dir(fx->dir, fs->payload), CKPT_EIO,
                      "sync_dir ");
    assert_non_null(strstr(ckpt_error_last()->message, fx->dir));

    ckpt_fs_fault_fail(fx->ff, 1, CKPT_FS_OP_BIT(CKPT_FS_OP_STAT), ENOENT, 0,
                       0);
    assert_ckpt_error(fs->stat(a, NULL, NULL, fs->payload), CKPT_ENOTFOUND,
                      "stat ");

    /* the internal wrappers pass the injected message through unchanged */
    ckpt_fs_fault_fail(fx->ff, 1, CKPT_FS_OP_BIT(CKPT_FS_OP_OPEN_READ), EIO, 0,
                       0);
    assert_ckpt_error(ckpt__fs_open_read(fs, &f, a), CKPT_EIO, "open_read ");
    assert_non_null(strstr(ckpt_error_last()->message, "(injected)"));
    assert_int_equal(ckpt_fs_fault_injected(fx->ff), 7);
    free(a);
    free(b);
    free(d);
}

static void test_mask_counts_only_matching_ops(void **state)
{
    struct fixture *fx = *state;
    const ckpt_fs *fs = fx->fs;
    char *a = test_path(fx->dir, "a");
    char *b = test_path(fx->dir, "b");
    char *c = test_path(fx->dir, "c");
    unsigned mask =
        CKPT_FS_OP_BIT(CKPT_FS_OP_RENAME) | CKPT_FS_OP_BIT(CKPT_FS_OP_REMOVE);

    test_write_file(a, "a", 1);
    test_write_file(c, "c", 1);
    ckpt_fs_fault_fail(fx->ff, 2, mask, EIO, 0, 0);
    put(fx, b, CKPT_OPEN_EXCL, "b", 1);            /* not matching */
    assert_ckpt_ok(fs->rename(a, b, fs->payload)); /* 1st match */
    assert_ckpt_ok(fs->sync_dir(fx->dir, fs->payload));
    assert_ckpt_error(fs->remove(c, fs->payload), CKPT_EIO, c); /* 2nd */
    assert_ckpt_ok(fs->remove(c, fs->payload));                 /* once only */
    assert_file_is(b, "a");
    assert_missing(c);
    assert_int_equal(ckpt_fs_fault_count(fx->ff, mask), 3);
    assert_int_equal(ckpt_fs_fault_injected(fx->ff), 1);

    /* arming resets the count; n = 0 arms nothing */
    ckpt_fs_fault_fail(fx->ff, 0, CKPT_FS_OP_ALL, EIO, 1, 0);
    assert_int_equal(ckpt_fs_fault_count(fx->ff, CKPT_FS_OP_ALL), 0);
    assert_ckpt_ok(fs->remove(b, fs->payload));
    free(a);
    free(b);
    free(c);
}

static void test_failed_close_still_closes(void **state)
{
    struct fixture *fx = *state;
    const ckpt_fs *fs = fx->fs;
    char *path = test_path(fx->dir, "c");
    ckpt_file *f = NULL;

    assert_ckpt_ok(fs->open_write(&f, path, CKPT_OPEN_EXCL, fs->payload));
    assert_ckpt_ok(fs->write(f, "data", 4, fs->payload));
    ckpt_fs_fault_fail(fx->ff, 1, CKPT_FS_OP_BIT(CKPT_FS_OP_CLOSE), EIO, 0, 0);
    assert_ckpt_error(fs->close(f, fs->payload), CKPT_EIO, "close ");
    assert_file_is(path, "data");
    /* nothing is open any more (ASan would report a leak otherwise) */
    assert_ckpt_ok(ckpt_fs_fault_drop_unsynced(fx->ff));
    free(path);
}

static void test_drop_open_file_refused(void **state)
{
    struct fixture *fx = *state;
    const ckpt_fs *fs = fx->fs;
    char *path = test_path(fx->dir, "open");
    ckpt_file *f = NULL;
    assert_ckpt_ok(fs->open_write(&f, path, CKPT_OPEN_EXCL, fs->payload));
    assert_ckpt_error(ckpt_fs_fault_drop_unsynced(fx->ff), CKPT_ESTATE,
                      "still open");
    assert_ckpt_ok(fs->close(f, fs->payload));
    free(path);
}

static void test_drop_unsynced_tail(void **state)
{
    struct fixture *fx = *state;
    const ckpt_fs *fs = fx->fs;
    char *path = test_path(fx->dir, "tail");
    ckpt_file *f = NULL;

    assert_ckpt_ok(fs->open_write(&f, path, CKPT_OPEN_EXCL, fs->payload));
    assert_ckpt_ok(fs->write(f, "synced|", 7, fs->payload));
    assert_ckpt_ok(fs->sync(f, fs->payload));
    assert_ckpt_ok(fs->write(f, "lost", 4, fs->payload));
    assert_ckpt_ok(fs->close(f, fs->payload));
    assert_ckpt_ok(fs->sync_dir(fx->dir, fs->payload));
    assert_file_is(path, "synced|lost");
    assert_ckpt_ok(ckpt_fs_fault_drop_unsynced(fx->ff));
    assert_file_is(path, "synced|");
    /* a second cut changes nothing: what is left is durable */
    assert_ckpt_ok(ckpt_fs_fault_drop_unsynced(fx->ff));
    assert_file_is(path, "synced|");

    /* a failed sync does not count as a sync */
    assert_ckpt_ok(fs->open_write(&f, path, 0, fs->payload));
    assert_ckpt_ok(fs->write(f, "synced|more", 11, fs->payload));
    ckpt_fs_fault_fail(fx->ff, 1, CKPT_FS_OP_BIT(CKPT_FS_OP_SYNC), EIO, 0, 0);
    assert_ckpt_error(fs->sync(f, fs->payload), CKPT_EIO, "(injected)");
    assert_ckpt_ok(fs->close(f, fs->payload));
    assert_ckpt_ok(ckpt_fs_fault_drop_unsynced(fx->ff));
    assert_file_is(path, "synced|");
    free(path);
}

static void test_drop_created_without_dir_sync(void **state)
{
    struct fixture *fx = *state;
    const ckpt_fs *fs = fx->fs;
    char *kept = test_path(fx->dir, "kept");
    char *empty = test_path(fx->dir, "empty");
    char *sub = test_path(fx->dir, "sub");
    char *in_sub = test_path(fx->dir, "sub/file");
    char *gone = test_path(fx->dir, "gone");

    /* entry and data synced: stays */
    put(fx, kept, CKPT_OPEN_EXCL, "data", 1);
    /* entry synced, data never: stays, empty */
    put(fx, empty, 0, "data", 0);
    /* data synced, but only the parent of its directory was synced */
    assert_ckpt_ok(fs->mkdir(sub, fs->payload));
    put(fx, in_sub, CKPT_OPEN_EXCL, "w", 1);
    assert_ckpt_ok(fs->sync_dir(fx->dir, fs->payload));
    /* data synced, entry created after the last dir sync: gone */
    put(fx, gone, CKPT_OPEN_EXCL, "data", 1);
    assert_file_is(gone, "data");
    assert_file_is(empty, "data");

    assert_ckpt_ok(ckpt_fs_fault_drop_unsynced(fx->ff));
    assert_file_is(kept, "data");
    assert_file_is(empty, "");
    assert_missing(in_sub);
    assert_missing(gone);
    free(kept);
    free(empty);
    free(sub);
    free(in_sub);
    free(gone);
}

static void test_drop_reverts_rename(void **state)
{
    struct fixture *fx = *state;
    const ckpt_fs *fs = fx->fs;
    char *a = test_path(fx->dir, "a");
    char *b = test_path(fx->dir, "b");
    char *tmp = test_path(fx->dir, "state.tmp");
    char *state_file = test_path(fx->dir, "state");

    put(fx, a, CKPT_OPEN_EXCL, "A", 1);
    assert_ckpt_ok(fs->sync_dir(fx->dir, fs->payload));
    assert_ckpt_ok(fs->rename(a, b, fs->payload));
    assert_missing(a);
    assert_ckpt_ok(ckpt_fs_fault_drop_unsynced(fx->ff));
    assert_file_is(a, "A");
    assert_missing(b);

    /* a rename onto an existing file: the replaced file comes back */
    test_write_file(state_file, "old state", 9);
    put(fx, tmp, CKPT_OPEN_EXCL, "new state", 1);
    assert_ckpt_ok(fs->sync_dir(fx->dir, fs->payload));
    assert_ckpt_ok(fs->rename(tmp, state_file, fs->payload));
    assert_file_is(state_file, "new state");
    assert_ckpt_ok(ckpt_fs_fault_drop_unsynced(fx->ff));
    assert_file_is(state_file, "old state");
    assert_file_is(tmp, "new state");

    /* the same without syncing tmp's creation: everything as before */
    assert_ckpt_ok(fs->remove(tmp, fs->payload));
    assert_ckpt_ok(fs->sync_dir(fx->dir, fs->payload));
    put(fx, tmp, CKPT_OPEN_EXCL, "newer", 1);
    assert_ckpt_ok(fs->rename(tmp, state_file, fs->payload));
    assert_ckpt_ok(ckpt_fs_fault_drop_unsynced(fx->ff));
    assert_file_is(state_file, "old state");
    assert_missing(tmp);
    free(a);
    free(b);
    free(tmp);
    free(state_file);
}

static void test_drop_rename_across_directories(void **state)
{
    struct fixture *fx = *state;
    const ckpt_fs *fs = fx->fs;
    char *d1 = test_path(fx->dir, "d1");
    char *d2 = test_path(fx->dir, "d2");
    char *a = test_path(fx->dir, "d1/a");
    char *b = test_path(fx->dir, "d2/b");

    assert_ckpt_ok(fs->mkdir(d1, fs->payload));
    assert_ckpt_ok(fs->mkdir(d2, fs->payload));
    put(fx, a, CKPT_OPEN_EXCL, "A", 1);
    assert_ckpt_ok(fs->sync_dir(d1, fs->payload));
    /* only the destination directory synced: not durable yet */
    assert_ckpt_ok(fs->rename(a, b, fs->payload));
    assert_ckpt_ok(fs->sync_dir(d2, fs->payload));
    assert_ckpt_ok(ckpt_fs_fault_drop_unsynced(fx->ff));
    assert_file_is(a, "A");
    assert_missing(b);
    /* both synced: it sticks */
    assert_ckpt_ok(fs->rename(a, b, fs->payload));
    assert_ckpt_ok(fs->sync_dir(d2, fs->payload));
    assert_ckpt_ok(fs->sync_dir(d1, fs->payload));
    assert_ckpt_ok(ckpt_fs_fault_drop_unsynced(fx->ff));
    assert_missing(a);
    assert_file_is(b, "A");
    free(d1);
    free(d2);
    free(a);
    free(b);
}

static void test_drop_undoes_remove(void **state)
{
    struct fixture *fx = *state;
    const ckpt_fs *fs = fx->fs;
    char *outside = test_path(fx->dir, "outside");
    char *tracked = test_path(fx->dir, "tracked");
    ckpt_file *f = NULL;

    /* a file written elsewhere counts as durable as a whole */
    test_write_file(outside, "outside", 7);
    /* a file written here with an unsynced tail */
    put(fx, tracked, CKPT_OPEN_EXCL, "kept", 1);
    assert_ckpt_ok(fs->sync_dir(fx->dir, fs->payload));
    assert_ckpt_ok(fs->open_write(&f, tracked, 0, fs->payload));
    assert_ckpt_ok(fs->write(f, "kept+unsynced", 13, fs->payload));
    assert_ckpt_ok(fs->close(f, fs->payload));

    /* removals without a dir sync are undone; only the synced part of a
     * file comes back */
    assert_ckpt_ok(fs->remove(outside, fs->payload));
    assert_ckpt_ok(fs->remove(tracked, fs->payload));
    assert_missing(outside);
    assert_missing(tracked);
    assert_ckpt_ok(ckpt_fs_fault_drop_unsynced(fx->ff));
    assert_file_is(outside, "outside");
    assert_file_is(tracked, "kept");

    /* removals followed by a dir sync are final */
    assert_ckpt_ok(fs->remove(outside, fs->payload));
    assert_ckpt_ok(fs->remove(tracked, fs->payload));
    assert_ckpt_ok(fs->sync_dir(fx->dir, fs->payload));
    assert_ckpt_ok(ckpt_fs_fault_drop_unsynced(fx->ff));
    assert_missing(outside);
    assert_missing(tracked);

    /* removing a missing file fails and leaves nothing to undo */
    assert_ckpt_error(fs->remove(outside, fs->payload), CKPT_ENOTFOUND,
                      outside);
    assert_ckpt_ok(ckpt_fs_fault_drop_unsynced(fx->ff));
    assert_missing(outside);
    free(outside);
    free(tracked);
}

static void test_drop_after_sync_dir_everything_sticks(void **state)
{
    struct fixture *fx = *state;
    const ckpt_fs *fs = fx->fs;
    char *a = test_path(fx->dir, "a");
    char *b = test_path(fx->dir, "b");
    char *c = test_path(fx->dir, "c");
    char *old = test_path(fx->dir, "old");
    /* spelled differently, the same directory */
    char dir_alias[4200];
    snprintf(dir_alias, sizeof(dir_alias), "%s/./", fx->dir);

    test_write_file(old, "old", 3);
    put(fx, a, CKPT_OPEN_EXCL, "A", 1);
    put(fx, b, CKPT_OPEN_EXCL, "B", 1);
    assert_ckpt_ok(fs->rename(b, c, fs->payload));
    assert_ckpt_ok(fs->remove(old, fs->payload));
    assert_ckpt_ok(fs->sync_dir(dir_alias, fs->payload));
    assert_ckpt_ok(ckpt_fs_fault_drop_unsynced(fx->ff));
    assert_file_is(a, "A");
    assert_missing(b);
    assert_file_is(c, "B");
    assert_missing(old);

    /* the atomic whole-file write leaves nothing to lose */
    assert_ckpt_ok(ckpt_fs_write_file_atomic(fs, a, "atomic", 6));
    assert_ckpt_ok(ckpt_fs_fault_drop_unsynced(fx->ff));
    assert_file_is(a, "atomic");
    free(a);
    free(b);
    free(c);
    free(old);
}

static void test_wrap_another_fs(void **state)
{
    struct fixture *fx = *state;
    ckpt_fs_fault *outer = NULL;
    const ckpt_fs *fs;
    char *path = test_path(fx->dir, "nested");
    ckpt_file *f = NULL;

    /* a fault fs around a fault fs: both count, the inner one injects */
    assert_ckpt_ok(ckpt_fs_fault_new(&outer, fx->fs));
    fs = ckpt_fs_fault_fs(outer);
    ckpt_fs_fault_fail(fx->ff, 1, CKPT_FS_OP_BIT(CKPT_FS_OP_SYNC), ENOSPC, 0,
                       0);
    assert_ckpt_ok(fs->open_write(&f, path, CKPT_OPEN_EXCL, fs->payload));
    assert_ckpt_error(fs->sync(f, fs->payload), CKPT_ENOSPC, path);
    assert_ckpt_ok(fs->close(f, fs->payload));
    assert_int_equal(ckpt_fs_fault_count(outer, CKPT_FS_OP_ALL), 3);
    assert_int_equal(ckpt_fs_fault_injected(outer), 0);
    assert_int_equal(ckpt_fs_fault_injected(fx->ff), 1);
    ckpt_fs_fault_free(outer);
    ckpt_fs_fault_free(NULL);
    free(path);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_op_names),
        T(test_passthrough_and_counts),
        T(test_fail_nth_write_once),
        T(test_fail_persistent_then_clear),
        T(test_partial_write_lands_exactly),
        T(test_errno_mapping_and_messages),
        T(test_mask_counts_only_matching_ops),
        T(test_failed_close_still_closes),
        T(test_drop_open_file_refused),
        T(test_drop_unsynced_tail),
        T(test_drop_created_without_dir_sync),
        T(test_drop_reverts_rename),
        T(test_drop_rename_across_directories),
        T(test_drop_undoes_remove),
        T(test_drop_after_sync_dir_everything_sticks),
        T(test_wrap_another_fs),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
