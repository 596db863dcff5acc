/* tests/crash/test_fs_fault_random.c - the fault file system's additions
 * for the power-loss suite: the operation trace, and the random power cut
 * (ckpt_fs_fault_drop_unsynced_random): synced bytes always survive, each
 * unsynced write survives or not on its own (gaps read as zeros), each
 * undurable directory change is kept or undone on its own except that
 * changes to one name stay in order, and a seed always gives the same
 * state; and the power cut that keeps every directory change
 * (ckpt_fs_fault_drop_unsynced_data). */
#include "crash_util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define SEEDS 64

/* The fault file system over POSIX without real fsyncs (it models them). */
static ckpt_fs_fault *new_fault_fs(void)
{
    static ckpt_fs_forward nosync; /* the same methods every time */
    ckpt_fs_fault *ff = NULL;
    crash_nosync_fs(&nosync);
    assert_ckpt_ok(ckpt_fs_fault_new(&ff, &nosync.fs));
    return ff;
}

static int exists(const char *dir, const char *name)
{
    char *p = test_path(dir, name);
    struct stat st;
    int e = stat(p, &st) == 0;
    free(p);
    return e;
}

/* Write `n` chunks to a new file through `fs` (one write each), syncing
 * after the first `synced` of them; closes it. */
static void write_chunks(const ckpt_fs *fs, const char *path,
                         const char *const *chunks, int n, int synced)
{
    ckpt_file *f = NULL;
    assert_ckpt_ok(fs->open_write(&f, path, CKPT_OPEN_TRUNC, fs->payload));
    for (int i = 0; i < n; i++) {
        assert_ckpt_ok(fs->write(f, chunks[i], strlen(chunks[i]), fs->payload));
        if (i + 1 == synced)
            assert_ckpt_ok(fs->sync(f, fs->payload));
    }
    assert_ckpt_ok(fs->close(f, fs->payload));
}

/* ---- the trace ------------------------------------------------------------
 */

static void test_trace_records_ops(void **state)
{
    char *dir = test_make_temp_dir();
    char *a = test_path(dir, "a");
    char *b = test_path(dir, "b");
    ckpt_fs_fault *ff = NULL;
    const ckpt_fs *fs;
    const ckpt_fs_fault_event *e;
    const char *const chunks[] = {"hello"};
    (void)state;
    ff = new_fault_fs();
    fs = ckpt_fs_fault_fs(ff);
    assert_int_equal(ckpt_fs_fault_trace_size(ff), 0);
    /* nothing is recorded before tracing starts */
    assert_int_equal(fs->stat(dir, NULL, NULL, fs->payload), 0);
    ckpt_fs_fault_trace(ff, CKPT_FS_OP_MUTATING);
    write_chunks(fs, a, chunks, 1, 1);
    /* stat is not in the mask */
    assert_int_equal(fs->stat(a, NULL, NULL, fs->payload), 0);
    ckpt_fs_fault_fail(ff, 1, CKPT_FS_OP_BIT(CKPT_FS_OP_RENAME), EIO, 0, 0);
    assert_ckpt_error(fs->rename(a, b, fs->payload), CKPT_EIO, "injected");
    assert_ckpt_ok(fs->rename(a, b, fs->payload));
    assert_ckpt_ok(fs->sync_dir(dir, fs->payload));
    /* open_write, write, sync, close, rename (failed), rename, sync_dir */
    assert_int_equal(ckpt_fs_fault_trace_size(ff), 7);
    e = ckpt_fs_fault_trace_event(ff, 0);
    assert_int_equal(e->op, CKPT_FS_OP_OPEN_WRITE);
    assert_string_equal(e->path, a);
    assert_null(e->to);
    e = ckpt_fs_fault_trace_event(ff, 1);
    assert_int_equal(e->op, CKPT_FS_OP_WRITE);
    assert_string_equal(e->path, a);
    assert_int_equal(e->bytes, 5);
    assert_int_equal(e->injected, 0);
    assert_int_equal(ckpt_fs_fault_trace_event(ff, 2)->op, CKPT_FS_OP_SYNC);
    assert_int_equal(ckpt_fs_fault_trace_event(ff, 3)->op, CKPT_FS_OP_CLOSE);
    e = ckpt_fs_fault_trace_event(ff, 4);
    assert_int_equal(e->op, CKPT_FS_OP_RENAME);
    assert_string_equal(e->path, a);
    assert_string_equal(e->to, b);
    assert_int_equal(e->injected, 1);
    assert_int_equal(ckpt_fs_fault_trace_event(ff, 5)->injected, 0);
    e = ckpt_fs_fault_trace_event(ff, 6);
    assert_int_equal(e->op, CKPT_FS_OP_SYNC_DIR);
    assert_string_equal(e->path, dir);
    assert_null(ckpt_fs_fault_trace_event(ff, 7));
    assert_string_equal(ckpt_fs_op_name(e->op), "sync_dir");
    /* 0 stops recording and keeps the trace; a new mask starts afresh */
    ckpt_fs_fault_trace(ff, 0);
    assert_ckpt_ok(fs->sync_dir(dir, fs->payload));
    assert_int_equal(ckpt_fs_fault_trace_size(ff), 7);
    ckpt_fs_fault_trace(ff, CKPT_FS_OP_BIT(CKPT_FS_OP_STAT));
    assert_int_equal(ckpt_fs_fault_trace_size(ff), 0);
    assert_int_equal(fs->stat(b, NULL, NULL, fs->payload), 0);
    assert_ckpt_ok(fs->sync_dir(dir, fs->payload));
    assert_int_equal(ckpt_fs_fault_trace_size(ff), 1);
    assert_int_equal(ckpt_fs_fault_trace_event(ff, 0)->op, CKPT_FS_OP_STAT);
    ckpt_fs_fault_free(ff);
    free(a);
    free(b);
    test_remove_tree(dir);
}

/* ---- unsynced writes ------------------------------------------------------
 */

static const char *const k_chunks[] = {"synced-part|", "BBBB", "CCCCCC", "DD"};
#define NCHUNKS 4

static void test_random_writes(void **state)
{
    char *dir = test_make_temp_dir();
    char *p = test_path(dir, "f");
    size_t offs[NCHUNKS + 1] = {0};
    int seen_len[NCHUNKS] = {0};
    int seen_hole = 0;
    (void)state;
    for (int i = 0; i < NCHUNKS; i++)
        offs[i + 1] = offs[i] + strlen(k_chunks[i]);
    for (uint64_t seed = 0; seed < SEEDS; seed++) {
        ckpt_fs_fault *ff = NULL;
        uint8_t *got;
        size_t n = 0;
        int last = 0;
        /* a durable empty file, so only its data is in question */
        test_write_file(p, "", 0);
        ff = new_fault_fs();
        write_chunks(ckpt_fs_fault_fs(ff), p, k_chunks, NCHUNKS, 1);
        assert_ckpt_ok(ckpt_fs_fault_drop_unsynced_random(ff, seed));
        ckpt_fs_fault_free(ff);
        got = test_read_file(p, &n);
        assert_non_null(got);
        /* the file ends where a chunk ends, never before the synced part */
        for (int i = 1; i <= NCHUNKS; i++)
            if (n == offs[i])
                last = i;
        if (last == 0)
            fail_msg("seed %llu: length %zu is not at a chunk end",
                     (unsigned long long)seed, n);
        seen_len[last - 1] = 1;
        assert_memory_equal(got, k_chunks[0], offs[1]);
        /* each later chunk is whole or zeros; the last one is whole */
        for (int i = 1; i < last; i++) {
            size_t len = offs[i + 1] - offs[i];
            int zero = 1;
            for (size_t k = 0; k < len; k++)
                zero = zero && got[offs[i] + k] == 0;
            if (zero)
                seen_hole = 1;
            else
                assert_memory_equal(got + offs[i], k_chunks[i], len);
        }
        if (last > 1)
            assert_memory_equal(got + offs[last - 1], k_chunks[last - 1],
                                offs[last] - offs[last - 1]);
        free(got);
    }
    /* every length and a hole came up */
    for (int i = 0; i < NCHUNKS; i++)
        assert_true(seen_len[i]);
    assert_true(seen_hole);
    free(p);
    test_remove_tree(dir);
}

/* ---- directory changes -----------------------------------------------------
 */

/* A temporary file written and synced, renamed over `final` (which held
 * "old" durably) without a directory sync; plus an unrelated new file. */
static void rename_case(const char *dir, uint64_t seed, char *out, size_t n)
{
    char *tmp = test_path(dir, "t.tmp");
    char *fin = test_path(dir, "final");
    char *other = test_path(dir, "other");
    const char *const newdata[] = {"new"};
    ckpt_fs_fault *ff = NULL;
    const ckpt_fs *fs;
    uint8_t *got;
    size_t len = 0;
    test_remove_tree(strdup(tmp));
    test_remove_tree(strdup(other));
    test_write_file(fin, "old", 3);
    ff = new_fault_fs();
    fs = ckpt_fs_fault_fs(ff);
    write_chunks(fs, tmp, newdata, 1, 1);
    assert_ckpt_ok(fs->rename(tmp, fin, fs->payload));
    write_chunks(fs, other, newdata, 1, 1);
    assert_ckpt_ok(ckpt_fs_fault_drop_unsynced_random(ff, seed));
    ckpt_fs_fault_free(ff);
    got = test_read_file(fin, &len);
    assert_non_null(got); /* "final" always has a durable version */
    snprintf(out, n, "final=%.*s tmp=%d other=%d", (int)len, (char *)got,
             exists(dir, "t.tmp"), exists(dir, "other"));
    free(got);
    free(tmp);
    free(fin);
    free(other);
}

static void test_random_dir_changes(void **state)
{
    char *dir = test_make_temp_dir();
    int seen_new = 0, seen_old_tmp = 0, seen_old_none = 0;
    int seen_other[2] = {0, 0};
    (void)state;
    for (uint64_t seed = 0; seed < SEEDS; seed++) {
        char a[128], b[128];
        rename_case(dir, seed, a, sizeof(a));
        /* the same seed gives the same state */
        rename_case(dir, seed, b, sizeof(b));
        assert_string_equal(a, b);
        if (!strncmp(a, "final=new tmp=0", 15))
            seen_new = 1; /* rename kept (so the creation too) */
        else if (!strncmp(a, "final=old tmp=1", 15))
            seen_old_tmp = 1; /* creation kept, rename undone */
        else if (!strncmp(a, "final=old tmp=0", 15))
            seen_old_none = 1; /* both undone */
        else
            fail_msg("seed %llu: impossible state %s", (unsigned long long)seed,
                     a);
        seen_other[strstr(a, "other=1") != NULL] = 1;
    }
    assert_true(seen_new && seen_old_tmp && seen_old_none);
    assert_true(seen_other[0] && seen_other[1]);
    test_remove_tree(dir);
}

/* A directory sync makes the changes before it durable; a removal after it
 * is kept or undone (the file comes back with its content). */
static void test_random_respects_sync_dir(void **state)
{
    char *dir = test_make_temp_dir();
    char *a = test_path(dir, "a");
    char *r = test_path(dir, "r");
    const char *const data[] = {"durable"};
    int seen_removed[2] = {0, 0};
    (void)state;
    for (uint64_t seed = 0; seed < SEEDS; seed++) {
        ckpt_fs_fault *ff = NULL;
        const ckpt_fs *fs;
        uint8_t *got;
        size_t len = 0;
        test_remove_tree(strdup(a));
        test_write_file(r, "keep me", 7);
        ff = new_fault_fs();
        fs = ckpt_fs_fault_fs(ff);
        write_chunks(fs, a, data, 1, 1);
        assert_ckpt_ok(fs->sync_dir(dir, fs->payload));
        assert_ckpt_ok(fs->remove(r, fs->payload));
        assert_ckpt_ok(ckpt_fs_fault_drop_unsynced_random(ff, seed));
        ckpt_fs_fault_free(ff);
        test_assert_file_is(a, "durable", 7);
        got = test_read_file(r, &len);
        seen_removed[got == NULL] = 1;
        if (got) {
            assert_int_equal(len, 7);
            assert_memory_equal(got, "keep me", 7);
        }
        free(got);
    }
    assert_true(seen_removed[0] && seen_removed[1]);
    free(a);
    free(r);
    test_remove_tree(dir);
}

/* drop_unsynced_data keeps every directory change and loses unsynced
 * bytes: a synced temporary renamed over "final" stays renamed, an unsynced
 * tail is cut and a removal stays. */
static void test_drop_data_keeps_entries(void **state)
{
    char *dir = test_make_temp_dir();
    char *tmp = test_path(dir, "t.tmp");
    char *fin = test_path(dir, "final");
    char *r = test_path(dir, "r");
    const char *const data[] = {"synced", "-lost"};
    ckpt_fs_fault *ff;
    const ckpt_fs *fs;
    (void)state;
    test_write_file(fin, "old", 3);
    test_write_file(r, "gone", 4);
    ff = new_fault_fs();
    fs = ckpt_fs_fault_fs(ff);
    write_chunks(fs, tmp, data, 2, 1);
    assert_ckpt_ok(fs->rename(tmp, fin, fs->payload));
    assert_ckpt_ok(fs->remove(r, fs->payload));
    assert_ckpt_ok(ckpt_fs_fault_drop_unsynced_data(ff));
    ckpt_fs_fault_free(ff);
    test_assert_file_is(fin, "synced", 6);
    assert_false(exists(dir, "t.tmp"));
    assert_false(exists(dir, "r"));
    free(tmp);
    free(fin);
    free(r);
    test_remove_tree(dir);
}

static void test_random_needs_closed_files(void **state)
{
    char *dir = test_make_temp_dir();
    char *a = test_path(dir, "a");
    ckpt_fs_fault *ff = NULL;
    const ckpt_fs *fs;
    ckpt_file *f = NULL;
    (void)state;
    ff = new_fault_fs();
    fs = ckpt_fs_fault_fs(ff);
    assert_ckpt_ok(fs->open_write(&f, a, CKPT_OPEN_TRUNC, fs->payload));
    assert_ckpt_error(ckpt_fs_fault_drop_unsynced_random(ff, 1), CKPT_ESTATE,
                      "drop_unsynced_random: 1 files still open");
    assert_ckpt_ok(fs->close(f, fs->payload));
    assert_ckpt_ok(ckpt_fs_fault_drop_unsynced_random(ff, 1));
    assert_ckpt_error(ckpt_fs_fault_drop_unsynced_random(NULL, 1), CKPT_EINVAL,
                      "NULL fault fs");
    ckpt_fs_fault_free(ff);
    free(a);
    test_remove_tree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trace_records_ops),
        cmocka_unit_test(test_random_writes),
        cmocka_unit_test(test_random_dir_changes),
        cmocka_unit_test(test_random_respects_sync_dir),
        cmocka_unit_test(test_drop_data_keeps_entries),
        cmocka_unit_test(test_random_needs_closed_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
