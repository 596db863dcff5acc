/* A checkpoint directory this process may read but not write (a read-only
 * mount, a snapshot of another job's checkpoints, another user's
 * directory): a saver still opens on it and restores its latest
 * checkpoint, even when recovery would tidy the state file (an entry whose
 * index is missing, dropped from the list); saving there fails cleanly,
 * naming the file, and changes nothing on disk. The file system is the
 * POSIX one with every method that changes the directory refused, as
 * EROFS is (CKPT_EACCES). B74. */
#include "saver_test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct fixture {
    char *dir;
    float w[4];
} fixture;

static int setup(void **state)
{
    *state = test_dir_fixture_new(sizeof(fixture), offsetof(fixture, dir));
    return 0;
}

static int refuse(const char *path)
{
    return ckpt_error_set(CKPT_EACCES, "%s: Read-only file system", path);
}

static int ro_open_write(ckpt_file **out, const char *path, int flags,
                         void *payload)
{
    (void)flags, (void)payload;
    *out = NULL;
    return refuse(path);
}

static int ro_rename(const char *from, const char *to, void *payload)
{
    (void)to, (void)payload;
    return refuse(from);
}

static int ro_one_path(const char *path, void *payload)
{
    (void)payload;
    return refuse(path);
}

static int ro_link(const char *from, const char *to, void *payload)
{
    (void)from, (void)payload;
    return refuse(to);
}

static void read_only_fs(ckpt_fs_forward *ro)
{
    ckpt_fs_forward_init(ro, NULL);
    ro->fs.open_write = ro_open_write;
    ro->fs.rename = ro_rename;
    ro->fs.remove = ro_one_path;
    ro->fs.mkdir = ro_one_path;
    ro->fs.link = ro_link;
}

static ckpt_saver *open_with(fixture *f, const ckpt_saver_options *o)
{
    ckpt_saver *s = NULL;
    ckpt_var w = test_float_var("w", f->w, 4);
    assert_ckpt_ok(ckpt_saver_open(&s, f->dir, o));
    assert_ckpt_ok(ckpt_saver_add_var(s, &w));
    return s;
}

static void remove_file(const char *dir, const char *name)
{
    char *path = test_path(dir, name);
    assert_int_equal(unlink(path), 0);
    free(path);
}

/* Steps 1..3 saved with w = {step, ...}; then step 1's files removed
 * behind the saver's back (by hand, or by another tool's retention), so
 * that the state file lists an entry whose index is missing. */
static void three_saves_first_gone(fixture *f)
{
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_saver *s;
    o.max_to_keep = CKPT_KEEP_ALL;
    s = open_with(f, &o);
    for (int64_t step = 1; step <= 3; step++) {
        for (int i = 0; i < 4; i++)
            f->w[i] = (float)(step * 10 + i);
        assert_ckpt_ok(ckpt_saver_save(s, step, NULL));
    }
    ckpt_saver_free(s);
    remove_file(f->dir, "model.ckpt-1.index");
    remove_file(f->dir, "model.ckpt-1.data-00000-of-00001");
}

/* Opened on the read-only directory, recovery drops step 1 from its list
 * and cannot write the state file without it: a warning, not a failed
 * open. The latest checkpoint restores; a save fails with the file
 * system's error naming the file, leaving the directory as it was. */
static void test_read_only_directory_opens_and_restores(void **state)
{
    fixture *f = *state;
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_fs_forward ro;
    ckpt_buf latest = CKPT_BUF_INIT;
    ckpt_saver *s;
    test_log lb;
    char *state_path = test_path(f->dir, "checkpoint");
    uint8_t *before, *after;
    size_t n_before = 0, n_after = 0;
    three_saves_first_gone(f);
    before = test_read_file(state_path, &n_before);
    assert_non_null(before);

    read_only_fs(&ro);
    test_log_init(&lb, 0);
    o.fs = &ro.fs;
    o.max_to_keep = CKPT_KEEP_ALL;
    o.log = test_log_capture;
    o.log_payload = &lb;
    s = open_with(f, &o);
    assert_int_equal(ckpt_saver_num_checkpoints(s), 2);
    memset(f->w, 0, sizeof(f->w));
    assert_ckpt_ok(ckpt_saver_restore_latest(s, &latest));
    assert_non_null(strstr(latest.ptr, "model.ckpt-3"));
    for (int i = 0; i < 4; i++)
        assert_true(f->w[i] == (float)(30 + i));
    assert_ckpt_error(ckpt_saver_save(s, 4, NULL), CKPT_EACCES,
                      "Read-only file system");
    assert_non_null(strstr(ckpt_error_last()->message, "model.ckpt-4"));
    ckpt_saver_free(s);

    assert_non_null(strstr(lb.text, "dropping model.ckpt-1 from the list"));
    assert_non_null(strstr(lb.text, "cannot rewrite the state file without "
                                    "the entries dropped"));
    assert_non_null(strstr(lb.text, "Read-only file system"));
    /* the note of the save could not be written: none to remove either */
    assert_non_null(strstr(lb.text, "cannot note the save in progress"));
    assert_null(strstr(lb.text, "cannot remove the note"));
    after = test_read_file(state_path, &n_after);
    assert_non_null(after);
    assert_int_equal(n_after, n_before);
    assert_memory_equal(after, before, n_before);
    assert_false(file_exists(f->dir, "model.ckpt-4.index"));
    assert_int_equal(count_files(f->dir, ".tempstate"), 0);
    free(before);
    free(after);
    free(state_path);
    ckpt_buf_dispose(&latest);
}

/* Writable again, the next open drops step 1 from the state file on disk
 * and the next save succeeds. */
static void test_writable_again_tidies_and_saves(void **state)
{
    fixture *f = *state;
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_fs_forward ro;
    ckpt_state st = CKPT_STATE_INIT;
    ckpt_saver *s;
    three_saves_first_gone(f);
    read_only_fs(&ro);
    o.fs = &ro.fs;
    o.max_to_keep = CKPT_KEEP_ALL;
    s = open_with(f, &o);
    ckpt_saver_free(s);
    o.fs = NULL;
    s = open_with(f, &o);
    assert_ckpt_ok(ckpt_saver_save(s, 4, NULL));
    ckpt_saver_free(s);
    assert_ckpt_ok(ckpt_state_read(&st, NULL, f->dir));
    assert_int_equal(st.num_paths, 3);
    assert_string_equal(st.all_paths[0], "model.ckpt-2");
    assert_string_equal(st.model_checkpoint_path, "model.ckpt-4");
    ckpt_state_dispose(&st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_read_only_directory_opens_and_restores, setup,
            test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_writable_again_tidies_and_saves,
                                        setup, test_dir_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
