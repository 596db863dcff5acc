/* Saver tests at moderate scale: a directory holding hundreds of
 * checkpoints, where deleting what retention evicts, the scan for
 * checkpoints the state file does not list and the pending note's
 * deletions each look at the directory once for all of them, and many
 * failed deletions are carried (each once) to the next commit through
 * indexes of the names. These check what is deleted and what is kept
 * (never timing): names that share a prefix ("model.ckpt-1",
 * "model.ckpt-10", "model.ckpt-100") must not be taken for one another's. */
#include "saver_test_util.h"

#include "ckpt/saver.h"
#include "ckpt/state.h"
#include "common/internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LISTED 100 /* checkpoints the state file lists: steps 1..LISTED */

typedef struct fixture {
    char *dir;
    float w[4];
} fixture;

static int setup(void **state)
{
    fixture *f = test_dir_fixture_new(sizeof(*f), offsetof(fixture, dir));
    *state = f;
    return 0;
}

/* The names of checkpoint model.ckpt-<step>'s files: its index and one
 * data file, or, every tenth step, two data shards and a meta file too
 * (few files: creating them is most of these tests' time). */
static int file_names(char names[4][64], int step)
{
    int shards = step % 10 == 0 ? 2 : 1, n = 0;
    snprintf(names[n++], 64, "model.ckpt-%d.index", step);
    for (int i = 0; i < shards; i++)
        snprintf(names[n++], 64, "model.ckpt-%d.data-%05d-of-%05d", step, i,
                 shards);
    if (shards == 2)
        snprintf(names[n++], 64, "model.ckpt-%d.meta", step);
    return n;
}

/* Create checkpoint `step`'s files (their contents are never read here). */
static void make_checkpoint(const char *dir, int step)
{
    char names[4][64];
    int n = file_names(names, step);
    for (int i = 0; i < n; i++)
        test_touch(dir, names[i]);
}

/* How many of checkpoint `step`'s files exist; *all gets their number. */
static int files_of(const char *dir, int step, int *all)
{
    char names[4][64];
    int n = file_names(names, step), found = 0;
    for (int i = 0; i < n; i++)
        found += file_exists(dir, names[i]);
    *all = n;
    return found;
}

static void assert_gone(const char *dir, int step)
{
    int all;
    assert_int_equal(files_of(dir, step, &all), 0);
}

static void assert_whole(const char *dir, int step)
{
    int all;
    int found = files_of(dir, step, &all);
    assert_int_equal(found, all);
}

/* Checkpoints 1..n and a state file listing them, oldest first. */
static void write_listing_state(const char *dir, int n)
{
    char *paths[LISTED];
    double times[LISTED];
    ckpt_state st = CKPT_STATE_INIT;
    assert_true(n <= LISTED);
    for (int i = 0; i < n; i++) {
        paths[i] = malloc(32);
        snprintf(paths[i], 32, "model.ckpt-%d", i + 1);
        times[i] = 1673735799.685766 + i;
        make_checkpoint(dir, i + 1);
    }
    st.model_checkpoint_path = paths[n - 1];
    st.all_paths = paths;
    st.num_paths = (size_t)n;
    st.timestamps = times;
    st.num_timestamps = (size_t)n;
    assert_ckpt_ok(ckpt_state_write(NULL, dir, &st));
    for (int i = 0; i < n; i++)
        free(paths[i]);
}

/* Files of other names, which nothing here may touch. */
static void make_foreign_files(const char *dir)
{
    test_touch(dir, "other-5.data-00000-of-00001");
    test_touch(dir, "model.ckpt-5x.data-00000-of-00001");
    test_touch(dir, "model.ckpt.data-00000-of-00001");
    test_touch(dir, "model.ckpt-12.data-00000-of-00002.bak");
}

static void assert_foreign_files(const char *dir)
{
    assert_true(file_exists(dir, "other-5.data-00000-of-00001"));
    assert_true(file_exists(dir, "model.ckpt-5x.data-00000-of-00001"));
    assert_true(file_exists(dir, "model.ckpt.data-00000-of-00001"));
    assert_true(file_exists(dir, "model.ckpt-12.data-00000-of-00002.bak"));
}

static ckpt_saver *open_saver(fixture *f, ckpt_saver_options *o)
{
    ckpt_saver *s = NULL;
    ckpt_var w = {"w", CKPT_DT_FLOAT, {1, {4}}, f->w, NULL, NULL, NULL};
    assert_ckpt_ok(ckpt_saver_open(&s, f->dir, o));
    assert_ckpt_ok(ckpt_saver_add_var(s, &w));
    return s;
}

/* The first save after opening a directory that lists LISTED checkpoints
 * with max_to_keep 3 deletes the oldest LISTED - 2, every file of each,
 * and nothing of the two it keeps, of a checkpoint the state file does not
 * list, or of other names. */
static void test_first_save_evicts_many(void **state)
{
    fixture *f = *state;
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_saver *s;
    ckpt_fs_fault *ff;
    write_listing_state(f->dir, LISTED);
    make_checkpoint(f->dir, 1000); /* unlisted: left in place */
    make_foreign_files(f->dir);
    o.max_to_keep = 3;
    assert_ckpt_ok(ckpt_fs_fault_new(&ff, NULL));
    o.fs = ckpt_fs_fault_fs(ff);
    s = open_saver(f, &o);
    assert_int_equal(ckpt_saver_num_checkpoints(s), LISTED);
    ckpt_fs_fault_reset_count(ff);
    assert_ckpt_ok(ckpt_saver_save(s, LISTED + 1, NULL));
    assert_ckpt_ok(ckpt_saver_close(s, -1));
    assert_int_equal(ckpt_saver_num_checkpoints(s), 3);
    /* The batch's indexes are removed, then the directory fsynced once
     * for all of them (it was once per checkpoint: 98 fsyncs here, which
     * a list of 20,000 made a minute's wait); the save's own few. */
    assert_in_range(
        ckpt_fs_fault_count(ff, CKPT_FS_OP_BIT(CKPT_FS_OP_SYNC_DIR)), 1, 10);
    ckpt_saver_free(s);
    ckpt_fs_fault_free(ff);
    for (int step = 1; step <= LISTED - 2; step++)
        assert_gone(f->dir, step);
    assert_whole(f->dir, LISTED - 1);
    assert_whole(f->dir, LISTED);
    assert_whole(f->dir, 1000);
    assert_int_equal(count_files(f->dir, "model.ckpt-101.index"), 1);
    assert_foreign_files(f->dir);
    assert_false(file_exists(f->dir, "checkpoint.pending"));
}

/* Opening a directory whose state file lists LISTED checkpoints counts
 * exactly the complete checkpoints it does not list (steps between,
 * before and after the listed ones, and ones whose names extend a listed
 * name), and deletes nothing the state file lists. */
static void test_open_counts_unlisted_among_many(void **state)
{
    fixture *f = *state;
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_saver *s;
    test_log lb;
    write_listing_state(f->dir, LISTED);
    for (int step = 3001; step <= 3020; step++) /* 20 unlisted */
        make_checkpoint(f->dir, step);
    make_checkpoint(f->dir, 0);     /* before */
    make_checkpoint(f->dir, 10000); /* "model.ckpt-1" + "0000" */
    make_foreign_files(f->dir);
    o.max_to_keep = 5;
    test_log_init(&lb, 0);
    o.log = test_log_capture;
    o.log_payload = &lb;
    s = open_saver(f, &o);
    assert_int_equal(ckpt_saver_num_checkpoints(s), LISTED);
    ckpt_saver_free(s);
    assert_non_null(strstr(lb.text, ": 22 checkpoint(s) not in the state "
                                    "file left in place"));
    for (int step = 1; step <= LISTED; step++)
        assert_whole(f->dir, step);
    assert_whole(f->dir, 0);
    assert_whole(f->dir, 10000);
    assert_foreign_files(f->dir);
}

/* A pending note naming 150 checkpoints the state file does not
 * list (a crash during a long eviction) has each deleted at open, and
 * none it lists. */
static void test_pending_note_deletes_many(void **state)
{
    fixture *f = *state;
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_saver *s;
    char path[4200];
    char *note = malloc(32 * 200);
    size_t used = 0;
    write_listing_state(f->dir, 12);
    for (int step = 1001; step <= 1150; step++) {
        make_checkpoint(f->dir, step);
        used += (size_t)snprintf(note + used, 32 * 200 - used,
                                 "model.ckpt-%d\n", step);
    }
    /* listed ones the note names too: the state file wins */
    used += (size_t)snprintf(note + used, 32 * 200 - used, "model.ckpt-10\n");
    make_foreign_files(f->dir);
    snprintf(path, sizeof(path), "%s/checkpoint.pending", f->dir);
    test_write_file(path, note, used);
    free(note);
    o.max_to_keep = CKPT_KEEP_ALL;
    s = open_saver(f, &o);
    assert_int_equal(ckpt_saver_num_checkpoints(s), 12);
    ckpt_saver_free(s);
    for (int step = 1001; step <= 1150; step++)
        assert_gone(f->dir, step);
    for (int step = 1; step <= 12; step++)
        assert_whole(f->dir, step);
    assert_foreign_files(f->dir);
    assert_false(file_exists(f->dir, "checkpoint.pending"));
}

/* Removals of checkpoint files (not the state file, the note or temporary
 * files) fail while `failing` is set. */
static ckpt_fs_forward failing_remove;
static int failing;
static int failing_remove_fn(const char *path, void *payload)
{
    const ckpt_fs *base = ckpt_fs_forward_base(payload);
    if (failing && strstr(path, "/model.ckpt-") &&
        (strstr(path, ".index") || strstr(path, ".data-") ||
         strstr(path, ".meta")))
        return ckpt__error(CKPT_EIO, "remove %s: input/output error", path);
    return base->remove(path, base->payload);
}

/* The pending note's names: how many times each step 1..LISTED is named
 * (in `counts`), and how many lines it has. */
static int read_note(const char *dir, int counts[LISTED + 1])
{
    char path[4200];
    size_t n = 0;
    uint8_t *raw;
    char *text, *line, *save = NULL;
    int lines = 0;
    memset(counts, 0, sizeof(int) * (LISTED + 1));
    snprintf(path, sizeof(path), "%s/checkpoint.pending", dir);
    raw = test_read_file(path, &n);
    assert_non_null(raw);
    text = calloc(1, n + 1);
    assert_non_null(text);
    memcpy(text, raw, n);
    free(raw);
    for (line = strtok_r(text, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        int step = 0;
        lines++;
        if (sscanf(line, "model.ckpt-%d", &step) == 1 && step >= 1 &&
            step <= LISTED)
            counts[step]++;
    }
    free(text);
    return lines;
}

/* The first save after opening a directory of LISTED checkpoints with
 * max_to_keep 2, every deletion failing: the LISTED - 1 it evicts stay on
 * disk and the note names each exactly once. A save of one of those steps
 * again keeps its new files; the next commit deletes all the others, and
 * then an asynchronous save's deletion (the writer thread's) works too. */
static void test_many_failed_evictions_carried_once(void **state)
{
    fixture *f = *state;
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_saver *s;
    int counts[LISTED + 1];
    uint64_t t = 0;
    write_listing_state(f->dir, LISTED);
    make_foreign_files(f->dir);
    ckpt_fs_forward_init(&failing_remove, NULL);
    failing_remove.fs.remove = failing_remove_fn;
    o.fs = &failing_remove.fs;
    o.max_to_keep = 2;
    s = open_saver(f, &o);
    failing = 1;
    assert_ckpt_ok(ckpt_saver_save(s, LISTED + 1, NULL));
    failing = 0;
    assert_int_equal(ckpt_saver_num_checkpoints(s), 2);
    for (int step = 1; step < LISTED; step++)
        assert_whole(f->dir, step);
    assert_int_equal(read_note(f->dir, counts), LISTED - 1);
    for (int step = 1; step < LISTED; step++)
        assert_int_equal(counts[step], 1);
    assert_int_equal(counts[LISTED], 0);
    /* step LISTED - 1 again: its new files are kept, the others go */
    assert_ckpt_ok(ckpt_saver_save(s, LISTED - 1, NULL));
    assert_int_equal(ckpt_saver_num_checkpoints(s), 2);
    for (int step = 1; step <= LISTED; step++)
        if (step != LISTED - 1)
            assert_gone(f->dir, step);
    assert_true(file_exists(f->dir, "model.ckpt-99.index"));
    assert_true(file_exists(f->dir, "model.ckpt-99.data-00000-of-00001"));
    assert_true(file_exists(f->dir, "model.ckpt-101.index"));
    assert_false(file_exists(f->dir, "checkpoint.pending"));
    assert_ckpt_ok(ckpt_saver_save_async(s, LISTED + 2, &t));
    assert_ckpt_ok(ckpt_saver_wait(s, t, -1));
    assert_ckpt_ok(ckpt_saver_close(s, -1));
    ckpt_saver_free(s);
    assert_false(file_exists(f->dir, "model.ckpt-101.index"));
    assert_true(file_exists(f->dir, "model.ckpt-99.index"));
    assert_true(file_exists(f->dir, "model.ckpt-102.index"));
    assert_int_equal(count_files(f->dir, ".index"), 2);
    assert_foreign_files(f->dir);
    assert_false(file_exists(f->dir, "checkpoint.pending"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_first_save_evicts_many, setup,
                                        test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_open_counts_unlisted_among_many,
                                        setup, test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_pending_note_deletes_many, setup,
                                        test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_many_failed_evictions_carried_once,
                                        setup, test_dir_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
