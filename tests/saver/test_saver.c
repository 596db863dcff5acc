/* Saver tests: round trips of every fixed-size dtype, naming, retention,
 * latest_checkpoint, restore checks and directory recovery (B70-B80). */
#include "saver_test_util.h"

#include "common/internal.h"

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct fixture {
    char *dir;
    float w[6];
    int64_t step;
    double d[3];
} fixture;

static int setup(void **state)
{
    fixture *f = test_dir_fixture_new(sizeof(*f), offsetof(fixture, dir));
    for (int i = 0; i < 6; i++)
        f->w[i] = (float)i * 0.5f;
    f->step = 0;
    f->d[0] = 1.0 / 3.0;
    *state = f;
    return 0;
}

static ckpt_saver *open_saver(fixture *f, const ckpt_saver_options *o)
{
    ckpt_saver *s = NULL;
    ckpt_var w = {"dense/kernel", CKPT_DT_FLOAT, {2, {2, 3}}, f->w,
                  NULL,           NULL,          NULL};
    ckpt_var step = {"global_step", CKPT_DT_INT64, {0, {0}}, &f->step,
                     NULL,          NULL,          NULL};
    assert_ckpt_ok(ckpt_saver_open(&s, f->dir, o));
    assert_ckpt_ok(ckpt_saver_add_var(s, &w));
    assert_ckpt_ok(ckpt_saver_add_var(s, &step));
    return s;
}

static void save_steps(ckpt_saver *s, fixture *f, int from, int to)
{
    for (int i = from; i <= to; i++) {
        f->step = i;
        assert_ckpt_ok(ckpt_saver_save(s, i, NULL));
    }
}

static char *read_state(const char *dir)
{
    char path[4096];
    size_t n;
    uint8_t *p;
    char *s;
    snprintf(path, sizeof(path), "%s/checkpoint", dir);
    p = test_read_file(path, &n);
    if (!p)
        return NULL;
    s = malloc(n + 1);
    memcpy(s, p, n);
    s[n] = '\0';
    free(p);
    return s;
}

/* Every fixed-size dtype survives a save and a restore bit for bit. */
static void test_roundtrip_every_dtype(void **state)
{
    fixture *f = *state;
    const int *dtypes = test_fixed_dtypes;
    enum { N = TEST_NUM_FIXED_DTYPES, ELEMS = 7 };
    uint8_t *orig[N], *live[N];
    ckpt_saver *s = NULL;
    ckpt_buf prefix = CKPT_BUF_INIT;
    for (int mode = 0; mode < 2; mode++) {
        assert_ckpt_ok(ckpt_saver_open(&s, f->dir, NULL));
        for (int i = 0; i < N; i++) {
            size_t bytes = ckpt_dtype_size(dtypes[i]) * ELEMS;
            char name[32];
            ckpt_var v = {name, dtypes[i], {1, {ELEMS}}, NULL,
                          NULL, NULL,      NULL};
            snprintf(name, sizeof(name), "v/%s", ckpt_dtype_name(dtypes[i]));
            orig[i] = malloc(bytes);
            live[i] = malloc(bytes);
            for (size_t b = 0; b < bytes; b++)
                orig[i][b] = (uint8_t)(b * 37 + (size_t)i * 11 + 1);
            if (dtypes[i] == CKPT_DT_BOOL)
                for (size_t b = 0; b < bytes; b++)
                    orig[i][b] &= 1;
            memcpy(live[i], orig[i], bytes);
            v.data = live[i];
            assert_ckpt_ok(ckpt_saver_add_var(s, &v));
        }
        if (mode == 0) {
            assert_ckpt_ok(ckpt_saver_save(s, 10, &prefix));
        } else {
            assert_ckpt_ok(ckpt_saver_save_async(s, 20, NULL));
            assert_ckpt_ok(ckpt_saver_wait(s, 0, -1));
            assert_ckpt_ok(ckpt_saver_latest(s, &prefix));
        }
        for (int i = 0; i < N; i++)
            memset(live[i], 0xEE, ckpt_dtype_size(dtypes[i]) * ELEMS);
        assert_ckpt_ok(ckpt_saver_restore(s, prefix.ptr));
        for (int i = 0; i < N; i++) {
            assert_memory_equal(live[i], orig[i],
                                ckpt_dtype_size(dtypes[i]) * ELEMS);
            free(orig[i]);
            free(live[i]);
        }
        ckpt_saver_free(s);
    }
    ckpt_buf_dispose(&prefix);
}

/* B70: <basename>-<step>, zero-padded to 8 digits when configured. */
static void test_b70_naming(void **state)
{
    fixture *f = *state;
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_buf prefix = CKPT_BUF_INIT;
    char want[4096];
    ckpt_saver *s = open_saver(f, NULL);
    assert_ckpt_ok(ckpt_saver_save(s, 1000, &prefix));
    snprintf(want, sizeof(want), "%s/model.ckpt-1000", f->dir);
    assert_string_equal(prefix.ptr, want);
    assert_true(file_exists(f->dir, "model.ckpt-1000.index"));
    assert_true(file_exists(f->dir, "model.ckpt-1000.data-00000-of-00001"));
    assert_int_equal(ckpt_checkpoint_step(prefix.ptr), 1000);
    ckpt_saver_free(s);

    o.pad_step_number = 1;
    o.basename = "ckpt";
    s = open_saver(f, &o);
    assert_ckpt_ok(ckpt_saver_save(s, 42, &prefix));
    assert_true(file_exists(f->dir, "ckpt-00000042.index"));
    assert_int_equal(ckpt_checkpoint_step(prefix.ptr), 42);
    ckpt_saver_free(s);
    ckpt_buf_dispose(&prefix);
}

/* B71: without a step, a basename equal to the state file name fails. */
static void test_b71_no_step_state_name(void **state)
{
    fixture *f = *state;
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_saver *s;
    ckpt_buf prefix = CKPT_BUF_INIT;
    o.basename = "checkpoint";
    s = open_saver(f, &o);
    assert_ckpt_error(ckpt_saver_save(s, CKPT_NO_STEP, NULL), CKPT_EINVAL,
                      "state file");
    assert_int_equal(count_files(f->dir, "index"), 0);
    ckpt_saver_free(s);
    s = open_saver(f, NULL);
    assert_ckpt_ok(ckpt_saver_save(s, CKPT_NO_STEP, &prefix));
    assert_true(file_exists(f->dir, "model.ckpt.index"));
    /* a negative step would be named "model.ckpt--3", read back as 3 */
    {
        /* naming the saver by its directory */
        char want[4200];
        snprintf(want, sizeof(want), "saver %s: save: step -3 is negative",
                 f->dir);
        assert_ckpt_error(ckpt_saver_save(s, -3, NULL), CKPT_EINVAL, want);
    }
    assert_ckpt_error(ckpt_saver_save_async(s, -1, NULL), CKPT_EINVAL,
                      "step -1 is negative");
    assert_int_equal(count_files(f->dir, "--"), 0);
    ckpt_saver_free(s);
    ckpt_buf_dispose(&prefix);
}

/* B72: a missing directory gives ENOTFOUND and creates nothing. */
static void test_b72_missing_directory(void **state)
{
    fixture *f = *state;
    ckpt_saver *s = NULL;
    char missing[4096], sub[4096];
    /* a fresh directory opens without leaving an error behind */
    ckpt_error_clear();
    s = open_saver(f, NULL);
    assert_int_equal(ckpt_error_last()->code, 0);
    ckpt_saver_free(s);
    s = NULL;
    snprintf(missing, sizeof(missing), "%s/nope/deeper", f->dir);
    assert_ckpt_error(ckpt_saver_open(&s, missing, NULL), CKPT_ENOTFOUND,
                      "nope/deeper does not exist (a saver does not create "
                      "it, as TensorFlow's Saver does not: create it first");
    assert_null(strstr(ckpt_error_last()->message, "save_path"));
    assert_null(s);
    /* TensorFlow's save_path ("<dir>/model.ckpt") given as the directory
     * says what to give instead; under a missing directory it does not */
    snprintf(missing, sizeof(missing), "%s/model.ckpt", f->dir);
    assert_ckpt_error(ckpt_saver_open(&s, missing, NULL), CKPT_ENOTFOUND,
                      "model.ckpt does not exist (a saver takes the "
                      "directory, not TensorFlow's save_path: open the "
                      "directory it is in");
    assert_null(s);
    snprintf(missing, sizeof(missing), "%s/nope/mnist.ckpt", f->dir);
    assert_ckpt_error(ckpt_saver_open(&s, missing, NULL), CKPT_ENOTFOUND,
                      "mnist.ckpt does not exist");
    assert_null(strstr(ckpt_error_last()->message, "save_path"));
    /* a file of that name is named for what it is */
    snprintf(missing, sizeof(missing), "%s/file", f->dir);
    test_write_file(missing, "x", 1);
    assert_ckpt_error(ckpt_saver_open(&s, missing, NULL), CKPT_ENOTFOUND,
                      "file is not a directory");
    /* under a file: mkdir -p would not help, so the advice names the file */
    {
        char under[4200];
        snprintf(under, sizeof(under), "%s/sub/deeper/", missing);
        assert_ckpt_error(ckpt_saver_open(&s, under, NULL), CKPT_ENOTFOUND,
                          "sub/deeper/ cannot exist: ");
        assert_non_null(strstr(ckpt_error_last()->message, missing));
        assert_non_null(strstr(ckpt_error_last()->message,
                               ", on its path, is a file, not a directory"));
        assert_null(strstr(ckpt_error_last()->message, "mkdir"));
    }
    assert_int_equal(unlink(missing), 0);
    /* The directory disappears after open. */
    snprintf(sub, sizeof(sub), "%s/sub", f->dir);
    assert_int_equal(mkdir(sub, 0755), 0);
    {
        fixture g = *f;
        g.dir = sub;
        s = open_saver(&g, NULL);
    }
    assert_int_equal(rmdir(sub), 0);
    assert_ckpt_error(ckpt_saver_save(s, 1, NULL), CKPT_ENOTFOUND, sub);
    assert_int_equal(count_files(f->dir, ""), 0);
    ckpt_saver_free(s);
    /* a checkpoint's prefix (a restore path) given as the directory says
     * so, and what to do instead */
    assert_ckpt_ok(ckpt_saver_open(&s, f->dir, NULL));
    {
        float w[2] = {1, 2};
        ckpt_var v = test_float_var("w", w, 2);
        assert_ckpt_ok(ckpt_saver_add_var(s, &v));
        assert_ckpt_ok(ckpt_saver_save(s, 3, NULL));
    }
    ckpt_saver_free(s);
    s = NULL;
    snprintf(missing, sizeof(missing), "%s/model.ckpt-3", f->dir);
    assert_ckpt_error(ckpt_saver_open(&s, missing, NULL), CKPT_ENOTFOUND,
                      "model.ckpt-3 does not exist: that is a checkpoint's "
                      "prefix (");
    assert_ckpt_error(CKPT_ENOTFOUND, CKPT_ENOTFOUND,
                      "model.ckpt-3.index exists); open the saver on the "
                      "directory it is in and restore the prefix with "
                      "ckpt_saver_restore");
    assert_null(s);
}

/* B73: K + 3 saves leave exactly the newest K, on disk and listed. */
static void test_b73_max_to_keep(void **state)
{
    fixture *f = *state;
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_saver *s;
    char *text;
    o.max_to_keep = 3;
    s = open_saver(f, &o);
    save_steps(s, f, 1, 6);
    assert_int_equal(count_files(f->dir, ".index"), 3);
    assert_int_equal(count_files(f->dir, ".data-"), 3);
    for (int i = 4; i <= 6; i++) {
        char name[64];
        snprintf(name, sizeof(name), "model.ckpt-%d.index", i);
        assert_true(file_exists(f->dir, name));
    }
    text = read_state(f->dir);
    assert_non_null(strstr(text,
                           "model_checkpoint_path: \"model.ckpt-6\"\n"
                           "all_model_checkpoint_paths: \"model.ckpt-4\"\n"
                           "all_model_checkpoint_paths: \"model.ckpt-5\"\n"
                           "all_model_checkpoint_paths: \"model.ckpt-6\"\n"
                           "all_model_checkpoint_timestamps: "));
    free(text);
    assert_int_equal(ckpt_saver_num_checkpoints(s), 3);
    ckpt_saver_free(s);
}

/* B74: reopening a directory with K + 2 checkpoints and saving once leaves
 * exactly K (the list recovered at open is trimmed, in one pass, when the
 * first save starts). A saver opened only to restore deletes nothing. */
static void test_b74_reconcile_on_reopen(void **state)
{
    fixture *f = *state;
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_saver *s;
    o.max_to_keep = CKPT_KEEP_ALL;
    s = open_saver(f, &o);
    save_steps(s, f, 1, 4);
    ckpt_saver_free(s);
    assert_int_equal(count_files(f->dir, ".index"), 4);
    o.max_to_keep = 2;
    s = open_saver(f, &o);
    assert_int_equal(ckpt_saver_num_checkpoints(s), 4);
    assert_ckpt_ok(ckpt_saver_restore_latest(s, NULL));
    ckpt_saver_free(s);
    assert_int_equal(count_files(f->dir, ".index"), 4);
    s = open_saver(f, &o);
    save_steps(s, f, 5, 5);
    assert_int_equal(ckpt_saver_num_checkpoints(s), 2);
    assert_int_equal(count_files(f->dir, ".index"), 2);
    assert_true(file_exists(f->dir, "model.ckpt-4.index"));
    assert_true(file_exists(f->dir, "model.ckpt-5.index"));
    ckpt_saver_free(s);
}

/* B75: max_to_keep = CKPT_KEEP_ALL (TF's 0) keeps and lists every checkpoint.
 */
static void test_b75_keep_all(void **state)
{
    fixture *f = *state;
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_saver *s;
    ckpt_state st = CKPT_STATE_INIT;
    o.max_to_keep = CKPT_KEEP_ALL;
    s = open_saver(f, &o);
    save_steps(s, f, 1, 8);
    assert_int_equal(count_files(f->dir, ".index"), 8);
    assert_ckpt_ok(ckpt_state_read(&st, NULL, f->dir));
    assert_int_equal(st.num_paths, 8);
    assert_string_equal(st.all_paths[0], "model.ckpt-1");
    assert_string_equal(st.model_checkpoint_path, "model.ckpt-8");
    assert_int_equal(st.num_timestamps, 8);
    ckpt_state_dispose(&st);
    ckpt_saver_free(s);
}

/* B76's saver in the tests below: max_to_keep 1, and one checkpoint kept
 * every hour, on `clk`, which starts at t0 = 1,000,000 s (both clocks). */
static ckpt_saver *open_hourly_saver(fixture *f, fake_clock *clk)
{
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    fake_clock_init(clk, 1000000.0, 1000000.0);
    o.clock = &clk->clock;
    o.max_to_keep = 1;
    o.keep_checkpoint_every_n_hours = 1.0; /* next keep time: t0 + 3600 */
    return open_saver(f, &o);
}

/* B76: keep_checkpoint_every_n_hours with a fake clock. */
static void test_b76_keep_every_n_hours(void **state)
{
    fixture *f = *state;
    fake_clock clk;
    ckpt_saver *s = open_hourly_saver(f, &clk);
    clk.now += 600; /* step 1 at t0+600: before the next keep time */
    save_steps(s, f, 1, 1);
    clk.now += 600;
    save_steps(s, f, 2, 2); /* evicts 1: 600 <= 3600, deleted */
    assert_false(file_exists(f->dir, "model.ckpt-1.index"));
    clk.now = 1000000.0 + 3601; /* step 3 strictly after t0 + 3600 */
    save_steps(s, f, 3, 3);     /* evicts 2 (t0+1200): deleted */
    assert_false(file_exists(f->dir, "model.ckpt-2.index"));
    clk.now += 10;
    save_steps(s, f, 4, 4); /* evicts 3 (t0+3601 > t0+3600): preserved */
    assert_true(file_exists(f->dir, "model.ckpt-3.index"));
    assert_int_equal(ckpt_saver_num_checkpoints(s), 1);
    clk.now += 10;
    save_steps(s, f, 5, 5); /* evicts 4 (t0+3611 <= t0+7200): deleted */
    assert_false(file_exists(f->dir, "model.ckpt-4.index"));
    assert_true(file_exists(f->dir, "model.ckpt-3.index"));
    assert_int_equal(count_files(f->dir, ".index"), 2);
    ckpt_saver_free(s);
}

/* B76 with a wall clock stepped back (an NTP correction, a clock that
 * ran a day ahead): a checkpoint saved before the last one kept restarts
 * the schedule at its time, so the next is kept H hours later; the
 * schedule used to wait until the clock passed the old time again plus H
 * (a day without a kept checkpoint here). */
static void test_b76_wall_clock_stepped_back(void **state)
{
    fixture *f = *state;
    fake_clock clk;
    ckpt_saver *s = open_hourly_saver(f, &clk);
    clk.now += 3601;
    save_steps(s, f, 1, 1);
    clk.now += 10;
    save_steps(s, f, 2, 2); /* evicts 1 (t0+3601): preserved */
    assert_true(file_exists(f->dir, "model.ckpt-1.index"));
    clk.wall_offset -= 86400.0; /* the wall clock goes back a day */
    save_steps(s, f, 3, 3);     /* evicts 2 (t0+3611): deleted */
    clk.now += 10;
    save_steps(s, f, 4, 4); /* evicts 3 (a day earlier): deleted, the
                               schedule restarted at its time */
    assert_false(file_exists(f->dir, "model.ckpt-2.index"));
    assert_false(file_exists(f->dir, "model.ckpt-3.index"));
    clk.now += 3601;
    save_steps(s, f, 5, 5); /* evicts 4 (3 + 10 s): deleted */
    clk.now += 10;
    save_steps(s, f, 6, 6); /* evicts 5 (more than 1 h after 3): kept */
    assert_false(file_exists(f->dir, "model.ckpt-4.index"));
    assert_true(file_exists(f->dir, "model.ckpt-5.index"));
    assert_true(file_exists(f->dir, "model.ckpt-1.index"));
    ckpt_saver_free(s);
}

/* B76: checkpoints a saver finds in the directory, saved before its
 * schedule starts, are not kept for their times, however far apart they
 * are (the schedule's restart when the clock goes back must not take them
 * for a clock gone back). */
static void test_b76_older_checkpoints_found_not_kept(void **state)
{
    fixture *f = *state;
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    fake_clock clk;
    ckpt_saver *s;
    fake_clock_init(&clk, 1000000.0, 1000000.0);
    o.clock = &clk.clock;
    o.max_to_keep = CKPT_KEEP_ALL;
    s = open_saver(f, &o); /* no schedule: keeps all */
    for (int i = 1; i <= 3; i++) {
        save_steps(s, f, i, i);
        clk.now += 5 * 3600.0;
    }
    ckpt_saver_free(s);
    o.max_to_keep = 1;
    o.keep_checkpoint_every_n_hours = 1.0;
    s = open_saver(f, &o); /* its schedule starts now, after all three */
    save_steps(s, f, 4, 4);
    assert_int_equal(count_files(f->dir, ".index"), 1);
    assert_true(file_exists(f->dir, "model.ckpt-4.index"));
    ckpt_saver_free(s);
}

/* B76 across a restart: the state file keeps when the schedule started (or
 * the last checkpoint preserved), and a saver opened later goes on from
 * it; a job restarted more often than every n hours still preserves. */
static void test_b76_schedule_survives_reopen(void **state)
{
    fixture *f = *state;
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_state st = CKPT_STATE_INIT;
    fake_clock clk;
    ckpt_saver *s;
    const double t0 = 1000000.0;
    fake_clock_init(&clk, t0, t0);
    o.clock = &clk.clock;
    o.max_to_keep = 1;
    o.keep_checkpoint_every_n_hours = 1.0;
    s = open_saver(f, &o);
    clk.now = t0 + 600;
    save_steps(s, f, 1, 1);
    assert_ckpt_ok(ckpt_state_read(&st, NULL, f->dir));
    assert_true(st.last_preserved_timestamp == t0); /* the start */
    ckpt_state_dispose(&st);
    ckpt_saver_free(s);

    clk.now = t0 + 3000; /* a new job: its own start would be t0 + 3000 */
    s = open_saver(f, &o);
    clk.now = t0 + 3500;
    save_steps(s, f, 2, 2); /* evicts 1 (t0+600): deleted */
    clk.now = t0 + 3700;
    save_steps(s, f, 3, 3); /* evicts 2 (t0+3500, not after t0+3600) */
    assert_false(file_exists(f->dir, "model.ckpt-1.index"));
    assert_false(file_exists(f->dir, "model.ckpt-2.index"));
    clk.now = t0 + 3800;
    save_steps(s, f, 4, 4); /* evicts 3 (t0+3700 > t0+3600): preserved */
    assert_true(file_exists(f->dir, "model.ckpt-3.index"));
    assert_ckpt_ok(ckpt_state_read(&st, NULL, f->dir));
    assert_true(st.last_preserved_timestamp == t0 + 3700);
    assert_int_equal(st.num_paths, 1);
    ckpt_state_dispose(&st);
    ckpt_saver_free(s);

    /* A state file whose last preservation lies in the future (a clock
     * set back): the schedule goes on from now instead of never. */
    clk.now = t0 + 100; /* before t0+3700; step 4's time reads as now */
    s = open_saver(f, &o);
    clk.now = t0 + 3750;
    save_steps(s, f, 5, 5); /* evicts 4 (t0+100): deleted */
    clk.now = t0 + 3800;
    save_steps(s, f, 6, 6); /* evicts 5 (t0+3750 > t0+100+3600) */
    assert_false(file_exists(f->dir, "model.ckpt-4.index"));
    assert_true(file_exists(f->dir, "model.ckpt-5.index"));
    ckpt_saver_free(s);
}

/* B77: latest is "none" for a missing or unparsable state file and skips an
 * entry whose index is missing; restore_latest's CKPT_ENOTFOUND then names
 * the checkpoints left in the directory. */
static void test_b77_latest_checkpoint(void **state)
{
    fixture *f = *state;
    ckpt_buf latest = CKPT_BUF_INIT;
    ckpt_saver *s;
    char path[4096], want[4096];
    s = open_saver(f, NULL);
    assert_ckpt_error(ckpt_saver_latest(s, &latest), CKPT_ENOTFOUND, NULL);
    save_steps(s, f, 1, 3);
    assert_ckpt_ok(ckpt_saver_latest(s, &latest));
    snprintf(want, sizeof(want), "%s/model.ckpt-3", f->dir);
    assert_string_equal(latest.ptr, want);
    snprintf(path, sizeof(path), "%s/model.ckpt-3.index", f->dir);
    assert_int_equal(unlink(path), 0);
    assert_ckpt_ok(ckpt_saver_latest(s, &latest));
    snprintf(want, sizeof(want), "%s/model.ckpt-2", f->dir);
    assert_string_equal(latest.ptr, want);
    snprintf(path, sizeof(path), "%s/checkpoint", f->dir);
    test_write_file(path, "garbage {{{", 11);
    assert_int_not_equal(ckpt_saver_latest(s, &latest), 0);
    /* restore_latest then has nothing to restore, as TensorFlow reads such
     * a directory, and says which checkpoints it leaves (they were only
     * named "no checkpoint") */
    assert_ckpt_error(ckpt_saver_restore_latest(s, NULL), CKPT_ENOTFOUND,
                      "the state file is unreadable");
    assert_non_null(strstr(ckpt_error_last()->message,
                           "; 2 checkpoints of this saver's naming are in "
                           "the directory, the newest model.ckpt-2, not "
                           "named by a state file and so not restored"));
    assert_int_equal(unlink(path), 0); /* no state file at all */
    assert_ckpt_error(ckpt_saver_restore_latest(s, NULL), CKPT_ENOTFOUND,
                      "2 checkpoints of this saver's naming are in the "
                      "directory, the newest model.ckpt-2");
    ckpt_saver_free(s);
    ckpt_buf_dispose(&latest);
}

/* B78: restore errors name the checkpoint or the variable. */
/* Fill a bundle as TensorFlow would have written it, from `values` (two
 * floats): the checkpoints of TensorFlow users' names below. */
typedef void (*bundle_fill)(ckpt_bundle_writer *w, float *values);

/* tf.train.Checkpoint: the variable "net/w" under its object path. */
static void fill_tf2(ckpt_bundle_writer *w, float *values)
{
    ckpt_shape s2 = {1, {2}};
    assert_ckpt_ok(ckpt_bundle_writer_add(w, "net/w/.ATTRIBUTES/VARIABLE_VALUE",
                                          CKPT_DT_FLOAT, &s2, values,
                                          2 * sizeof(float)));
}

/* TensorFlow 1's Saver: a variable "emb" [4, 1] partitioned in two. */
static void fill_partitioned(ckpt_bundle_writer *w, float *values)
{
    ckpt_shape full = {2, {4, 1}};
    ckpt_slice_extent e0[2] = {{0, 2}, {0, CKPT_SLICE_FULL}};
    ckpt_slice_extent e1[2] = {{2, 2}, {0, CKPT_SLICE_FULL}};
    assert_ckpt_ok(ckpt_bundle_writer_add_slice(w, "emb", CKPT_DT_FLOAT, &full,
                                                e0, values, 2 * sizeof(float)));
    assert_ckpt_ok(ckpt_bundle_writer_add_slice(w, "emb", CKPT_DT_FLOAT, &full,
                                                e1, values, 2 * sizeof(float)));
}

/* Restoring `v` from the checkpoint `fill` writes (in a directory of its
 * own) is CKPT_ENOTFOUND with `message`, the hint for the name used. */
static void expect_restore_hint(bundle_fill fill, float *values,
                                const ckpt_var *v, const char *message)
{
    char *dir = test_make_temp_dir();
    char *prefix = test_path(dir, "model.ckpt-1");
    ckpt_bundle_writer *w = NULL;
    ckpt_saver *s = NULL;
    assert_ckpt_ok(ckpt_bundle_writer_open(&w, prefix, NULL));
    fill(w, values);
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);
    assert_ckpt_ok(ckpt_saver_open(&s, dir, NULL));
    assert_ckpt_ok(ckpt_saver_add_var(s, v));
    assert_ckpt_error(ckpt_saver_restore(s, prefix), CKPT_ENOTFOUND, message);
    ckpt_saver_free(s);
    free(prefix);
    test_remove_tree(dir); /* frees it */
}

static void test_b78_restore_errors(void **state)
{
    fixture *f = *state;
    ckpt_saver *s = open_saver(f, NULL);
    ckpt_saver *other = NULL;
    ckpt_buf prefix = CKPT_BUF_INIT;
    char missing[4096];
    float wrong_shape[4];
    int32_t wrong_type[6];
    float extra[2], extra2[2], many[22];
    snprintf(missing, sizeof(missing), "%s/model.ckpt-99", f->dir);
    assert_ckpt_error(ckpt_saver_restore(s, missing), CKPT_ENOTFOUND,
                      "model.ckpt-99");
    assert_ckpt_ok(ckpt_saver_save(s, 1, &prefix));
    ckpt_saver_free(s);

    /* A variable the checkpoint lacks. */
    s = open_saver(f, NULL);
    {
        ckpt_var v = {"not/there", CKPT_DT_FLOAT, {1, {2}}, extra,
                      NULL,        NULL,          NULL};
        assert_ckpt_ok(ckpt_saver_add_var(s, &v));
    }
    f->w[0] = 42.0f;
    assert_ckpt_error(ckpt_saver_restore(s, prefix.ptr), CKPT_ENOTFOUND,
                      "not/there");
    assert_true(f->w[0] == 42.0f); /* nothing written before the checks */
    /* restore_latest: CKPT_ENOTFOUND would mean "no checkpoint, start
     * afresh", whose saves then evict this one: a mismatch instead. */
    assert_ckpt_error(ckpt_saver_restore_latest(s, NULL), CKPT_EINVAL,
                      "does not hold every registered variable");
    assert_ckpt_error(CKPT_EINVAL, CKPT_EINVAL, "not/there");
    assert_true(f->w[0] == 42.0f);
    ckpt_saver_free(s);
    { /* ...and "no checkpoint" stays CKPT_ENOTFOUND */
        char *empty = test_make_temp_dir();
        assert_ckpt_ok(ckpt_saver_open(&other, empty, NULL));
        assert_ckpt_ok(ckpt_saver_add_var(
            other, &(ckpt_var){
                       "w", CKPT_DT_FLOAT, {1, {2}}, extra, NULL, NULL, NULL}));
        assert_int_equal(ckpt_saver_restore_latest(other, NULL),
                         CKPT_ENOTFOUND);
        ckpt_saver_free(other);
        other = NULL;
        test_remove_tree(empty); /* frees it */
    }

    /* Shape and dtype mismatches. */
    assert_ckpt_ok(ckpt_saver_open(&other, f->dir, NULL));
    {
        ckpt_var v = {"dense/kernel", CKPT_DT_FLOAT, {1, {4}}, wrong_shape,
                      NULL,           NULL,          NULL};
        assert_ckpt_ok(ckpt_saver_add_var(other, &v));
    }
    assert_ckpt_error(ckpt_saver_restore(other, prefix.ptr), CKPT_EINVAL,
                      "dense/kernel' has shape [2, 3] in the checkpoint but "
                      "[4] here");
    ckpt_saver_free(other);
    assert_ckpt_ok(ckpt_saver_open(&other, f->dir, NULL));
    {
        ckpt_var v = {"dense/kernel", CKPT_DT_INT32, {2, {2, 3}}, wrong_type,
                      NULL,           NULL,          NULL};
        assert_ckpt_ok(ckpt_saver_add_var(other, &v));
    }
    assert_ckpt_error(ckpt_saver_restore(other, prefix.ptr), CKPT_EINVAL,
                      "float32 in the checkpoint but int32");
    ckpt_saver_free(other);

    /* Every variable is checked: the first mismatch, with how many more
     * there are; a missing one suggests restore_subset. */
    assert_ckpt_ok(ckpt_saver_open(&other, f->dir, NULL));
    {
        ckpt_var gone = {"not/there", CKPT_DT_FLOAT, {1, {2}}, extra,
                         NULL,        NULL,          NULL};
        ckpt_var v = {"dense/kernel", CKPT_DT_FLOAT, {1, {4}}, wrong_shape,
                      NULL,           NULL,          NULL};
        ckpt_var v2 = {"also/gone", CKPT_DT_FLOAT, {1, {2}}, extra2,
                       NULL,        NULL,          NULL};
        assert_ckpt_ok(ckpt_saver_add_var(other, &gone));
        assert_ckpt_ok(ckpt_saver_add_var(other, &v));
        assert_ckpt_ok(ckpt_saver_add_var(other, &v2));
    }
    assert_ckpt_error(ckpt_saver_restore(other, prefix.ptr), CKPT_ENOTFOUND,
                      "'not/there' is not in the checkpoint (one added since "
                      "it was written? restore the others with "
                      "ckpt_saver_restore_subset) (and 2 more variables do "
                      "not match the checkpoint: 'dense/kernel', "
                      "'also/gone'); the checkpoint holds 1 tensor no "
                      "registered variable takes (renamed?): "
                      "'global_step'");
    ckpt_saver_free(other);

    /* A TensorFlow graph tensor's name ("dense/kernel:0") for the
     * variable: the message gives the key to register instead. */
    assert_ckpt_ok(ckpt_saver_open(&other, f->dir, NULL));
    {
        ckpt_var v = {"dense/kernel:0",
                      CKPT_DT_FLOAT,
                      {2, {2, 3}},
                      wrong_type,
                      NULL,
                      NULL,
                      NULL};
        assert_ckpt_ok(ckpt_saver_add_var(other, &v));
    }
    assert_ckpt_error(ckpt_saver_restore(other, prefix.ptr), CKPT_ENOTFOUND,
                      "'dense/kernel:0' is not in the checkpoint (checkpoint "
                      "keys are variable names, without a graph tensor's "
                      "output suffix: register it as 'dense/kernel')");
    ckpt_saver_free(other);

    /* A TensorFlow 2 checkpoint's variable registered by its object path:
     * the message gives the key tf.train.Checkpoint stores it under. */
    {
        ckpt_var v = {"net/w", CKPT_DT_FLOAT, {1, {2}}, extra,
                      NULL,    NULL,          NULL};
        expect_restore_hint(fill_tf2, extra, &v,
                            "'net/w' is not in the checkpoint (a TensorFlow 2 "
                            "checkpoint stores a variable's value under its "
                            "object path followed by "
                            "'/.ATTRIBUTES/VARIABLE_VALUE': register it as "
                            "'net/w/.ATTRIBUTES/VARIABLE_VALUE')");
    }

    /* A TensorFlow 1 partitioned variable registered part by part, under
     * the graph's names ("emb/part_0"): the checkpoint holds the parts as
     * pieces of "emb", and the message says to register that, with the
     * shape to give it. */
    {
        ckpt_var v = {"emb/part_0", CKPT_DT_FLOAT, {2, {2, 1}}, extra,
                      NULL,         NULL,          NULL};
        expect_restore_hint(fill_partitioned, extra, &v,
                            "'emb/part_0' is not in the checkpoint "
                            "(TensorFlow saves the parts of a partitioned "
                            "variable as pieces of one tensor under the "
                            "variable's name: register 'emb' with its full "
                            "shape [4, 1])");
    }

    /* Past the first few, the others are counted, not named. */
    assert_ckpt_ok(ckpt_saver_open(&other, f->dir, NULL));
    for (int i = 0; i < 11; i++) {
        char name[32];
        ckpt_var v = {name, CKPT_DT_FLOAT, {1, {2}}, &many[2 * i],
                      NULL, NULL,          NULL};
        snprintf(name, sizeof(name), "gone/%d", i);
        assert_ckpt_ok(ckpt_saver_add_var(other, &v));
    }
    assert_ckpt_error(ckpt_saver_restore(other, prefix.ptr), CKPT_ENOTFOUND,
                      "(and 10 more variables do not match the checkpoint: "
                      "'gone/1', 'gone/2', 'gone/3', 'gone/4', 'gone/5', "
                      "'gone/6', 'gone/7', 'gone/8', ...)");
    ckpt_saver_free(other);
    ckpt_buf_dispose(&prefix);
}

/* Restore of a subset and of the latest checkpoint. */
static void test_restore_subset_and_latest(void **state)
{
    fixture *f = *state;
    ckpt_saver *s = open_saver(f, NULL);
    ckpt_buf prefix = CKPT_BUF_INIT;
    const char *names[] = {"global_step"};
    f->step = 7;
    assert_ckpt_ok(ckpt_saver_save(s, 7, NULL));
    f->step = 100;
    f->w[1] = -1.0f;
    assert_ckpt_ok(ckpt_saver_latest(s, &prefix));
    assert_ckpt_ok(ckpt_saver_restore_subset(s, prefix.ptr, names, 1));
    assert_int_equal(f->step, 7);
    assert_true(f->w[1] == -1.0f);
    /* a name nothing registered is the caller's mistake, not a variable
     * the checkpoint lacks (it was CKPT_ENOTFOUND, which a program takes
     * for "nothing to restore") */
    {
        const char *typo[] = {"global_stpe"};
        f->step = 100;
        assert_ckpt_error(ckpt_saver_restore_subset(s, prefix.ptr, typo, 1),
                          CKPT_EINVAL,
                          "restore_subset: 'global_stpe' is not a "
                          "registered variable (ckpt_saver_add_var "
                          "registers one)");
        assert_int_equal(f->step, 100);
    }
    assert_ckpt_ok(ckpt_saver_restore_latest(s, &prefix));
    assert_true(f->w[1] == 0.5f);
    assert_int_equal(ckpt_checkpoint_step(prefix.ptr), 7);
    ckpt_saver_free(s);
    ckpt_buf_dispose(&prefix);
}

/* B79: a failure between the data write and the state update leaves the
 * previous checkpoint newest and latest valid. */
static void test_b79_crash_before_state_update(void **state)
{
    fixture *f = *state;
    ckpt_fs_fault *ff = NULL;
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_saver *s;
    ckpt_buf latest = CKPT_BUF_INIT;
    char want[4096];
    assert_ckpt_ok(ckpt_fs_fault_new(&ff, NULL));
    o.fs = ckpt_fs_fault_fs(ff);
    s = open_saver(f, &o);
    save_steps(s, f, 1, 1);
    /* Renames of a save: its pending note, data, index, then the state
     * file's temp. */
    ckpt_fs_fault_fail(ff, 4, CKPT_FS_OP_BIT(CKPT_FS_OP_RENAME), 5 /*EIO*/, 0,
                       0);
    f->step = 2;
    assert_int_not_equal(ckpt_saver_save(s, 2, NULL), 0);
    assert_non_null(strstr(ckpt_error_last()->message, "checkpoint"));
    assert_ckpt_ok(ckpt_saver_latest(s, &latest));
    snprintf(want, sizeof(want), "%s/model.ckpt-1", f->dir);
    assert_string_equal(latest.ptr, want);
    assert_false(file_exists(f->dir, "model.ckpt-2.index"));
    assert_int_equal(count_files(f->dir, "tmp"), 0);
    assert_int_equal(count_files(f->dir, "tempstate"), 0);
    ckpt_fs_fault_clear(ff);
    f->step = 0;
    assert_ckpt_ok(ckpt_saver_restore(s, latest.ptr));
    assert_int_equal(f->step, 1);
    ckpt_saver_free(s);
    ckpt_fs_fault_free(ff);
    ckpt_buf_dispose(&latest);
}

/* B80: temp files of an interrupted save are never latest and are removed
 * when the directory is opened; other files are left alone. */
static void test_b80_temp_files(void **state)
{
    fixture *f = *state;
    ckpt_saver *s = open_saver(f, NULL);
    ckpt_buf latest = CKPT_BUF_INIT;
    char path[4096];
    save_steps(s, f, 1, 1);
    ckpt_saver_free(s);
    snprintf(path, sizeof(path),
             "%s/model.ckpt-2.data-00000-of-00001.tempstate12345f", f->dir);
    test_write_file(path, "x", 1);
    snprintf(path, sizeof(path), "%s/model.ckpt-2.index.tempstate98765",
             f->dir);
    test_write_file(path, "x", 1);
    snprintf(path, sizeof(path), "%s/checkpoint.tmp0123abcd", f->dir);
    test_write_file(path, "x", 1);
    snprintf(path, sizeof(path), "%s/notes.tempstate-keep", f->dir);
    test_write_file(path, "x", 1);
    snprintf(path, sizeof(path), "%s/user.tmp", f->dir);
    test_write_file(path, "x", 1);
    /* a user's files that merely start like the state file's temporary */
    snprintf(path, sizeof(path), "%s/checkpoint.tmp", f->dir);
    test_write_file(path, "x", 1);
    snprintf(path, sizeof(path), "%s/checkpoint.tmpl_notes.txt", f->dir);
    test_write_file(path, "x", 1);
    /* a directory of a temporary's name cannot be removed: it is logged
     * and left, never a reason to refuse the directory */
    snprintf(path, sizeof(path), "%s/x.tempstate1", f->dir);
    assert_int_equal(mkdir(path, 0755), 0);
    assert_ckpt_ok(ckpt_latest_checkpoint(&latest, NULL, f->dir));
    assert_non_null(strstr(latest.ptr, "model.ckpt-1"));
    s = open_saver(f, NULL);
    assert_true(file_exists(f->dir, "checkpoint.tmp"));
    assert_true(file_exists(f->dir, "checkpoint.tmpl_notes.txt"));
    assert_int_equal(rmdir(path), 0);
    assert_int_equal(count_files(f->dir, ".tempstate1"), 0);
    assert_int_equal(count_files(f->dir, ".tempstate9"), 0);
    assert_false(file_exists(f->dir, "checkpoint.tmp0123abcd"));
    assert_true(file_exists(f->dir, "notes.tempstate-keep"));
    assert_true(file_exists(f->dir, "user.tmp"));
    assert_true(file_exists(f->dir, "model.ckpt-1.index"));
    ckpt_saver_free(s);
    ckpt_buf_dispose(&latest);
}

/* Retention never deletes outside the directory, whatever the state file
 * says (a hostile state file naming an absolute path and a "../" path). */
static void test_retention_stays_inside_directory(void **state)
{
    fixture *f = *state;
    char outside[2048], path[4096], text[8192];
    const char *outside_base;
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_saver *s;
    snprintf(outside, sizeof(outside), "%.2000s-outside", f->dir);
    outside_base = strrchr(outside, '/') + 1;
    assert_int_equal(mkdir(outside, 0755), 0);
    snprintf(path, sizeof(path), "%s/victim.index", outside);
    test_write_file(path, "keep me", 7);
    snprintf(path, sizeof(path), "%s/victim.data-00000-of-00001", outside);
    test_write_file(path, "keep me", 7);
    s = open_saver(f, NULL);
    save_steps(s, f, 1, 1);
    ckpt_saver_free(s);
    snprintf(text, sizeof(text),
             "model_checkpoint_path: \"model.ckpt-1\"\n"
             "all_model_checkpoint_paths: \"%s/victim\"\n"
             "all_model_checkpoint_paths: \"../%s/victim\"\n"
             "all_model_checkpoint_paths: \"model.ckpt-1\"\n",
             outside, outside_base);
    snprintf(path, sizeof(path), "%s/checkpoint", f->dir);
    test_write_file(path, text, strlen(text));
    o.max_to_keep = 1;
    s = open_saver(f, &o);
    /* the two spellings of victim are one checkpoint, listed once */
    assert_int_equal(ckpt_saver_num_checkpoints(s), 2);
    save_steps(s, f, 2, 2); /* retention evicts the hostile entry */
    assert_int_equal(ckpt_saver_num_checkpoints(s), 1);
    assert_true(file_exists(outside, "victim.index"));
    assert_true(file_exists(outside, "victim.data-00000-of-00001"));
    assert_true(file_exists(f->dir, "model.ckpt-2.index"));
    assert_false(file_exists(f->dir, "model.ckpt-1.index"));
    ckpt_saver_free(s);
    test_remove_tree(strdup(outside));
}

/* A state file whose newest entries name paths no file can have (longer
 * than NAME_MAX, through a symbolic link that loops): the saver opens, drops
 * them as missing, and restore_latest restores the newest real checkpoint.
 * Opening used to fail ("stat ...: File name too long", CKPT_EIO), so a
 * training job could not start in the directory. */
static void test_state_paths_no_file_can_have(void **state)
{
    fixture *f = *state;
    char path[4096], text[8192], name[301];
    ckpt_saver *s = open_saver(f, NULL);
    ckpt_buf prefix = CKPT_BUF_INIT;
    save_steps(s, f, 3, 3);
    ckpt_saver_free(s);
    memset(name, 'n', 300);
    name[300] = '\0';
    snprintf(path, sizeof(path), "%s/loop", f->dir);
    assert_int_equal(symlink("loop", path), 0);
    snprintf(text, sizeof(text),
             "model_checkpoint_path: \"%s\"\n"
             "all_model_checkpoint_paths: \"model.ckpt-3\"\n"
             "all_model_checkpoint_paths: \"loop/model.ckpt-4\"\n"
             "all_model_checkpoint_paths: \"%s\"\n",
             name, name);
    snprintf(path, sizeof(path), "%s/checkpoint", f->dir);
    test_write_file(path, text, strlen(text));
    f->step = 0;
    s = open_saver(f, NULL);
    assert_ckpt_ok(ckpt_saver_restore_latest(s, &prefix));
    assert_int_equal(f->step, 3);
    assert_int_equal(ckpt_checkpoint_step(prefix.ptr), 3);
    save_steps(s, f, 5, 5);
    assert_ckpt_ok(ckpt_saver_latest(s, &prefix));
    assert_int_equal(ckpt_checkpoint_step(prefix.ptr), 5);
    ckpt_saver_free(s);
    ckpt_buf_dispose(&prefix);
}

/* The directory swapped for a link to another one between saves (or moved
 * away and another made at its path): the saver writes, names and deletes
 * nothing there, sync or async; it evicted the other directory's
 * same-named checkpoints before. */
static void test_swapped_directory_untouched(void **state)
{
    fixture *f = *state;
    char moved[2048], other[2048], path[4096];
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_saver *s;
    o.max_to_keep = 1;
    snprintf(moved, sizeof(moved), "%.2000s-moved", f->dir);
    snprintf(other, sizeof(other), "%.2000s-other", f->dir);
    assert_int_equal(mkdir(other, 0755), 0);
    snprintf(path, sizeof(path), "%s/model.ckpt-1.index", other);
    test_write_file(path, "theirs", 6);
    s = open_saver(f, &o);
    save_steps(s, f, 1, 1);
    assert_int_equal(rename(f->dir, moved), 0);
    assert_int_equal(symlink(other, f->dir), 0);
    assert_ckpt_error(ckpt_saver_save(s, 2, NULL), CKPT_ENOTFOUND,
                      "is no longer the directory this saver opened");
    assert_ckpt_ok(ckpt_saver_save_async(s, 3, NULL));
    assert_ckpt_error(ckpt_saver_wait(s, 0, -1), CKPT_ENOTFOUND,
                      "nothing written or deleted there");
    ckpt_saver_free(s);
    assert_true(file_exists(other, "model.ckpt-1.index"));
    assert_int_equal(count_files(other, "model.ckpt-"), 1);
    assert_false(file_exists(other, "checkpoint"));
    assert_true(file_exists(moved, "model.ckpt-1.index"));
    assert_int_equal(unlink(f->dir), 0);
    assert_int_equal(rename(moved, f->dir), 0);
    test_remove_tree(strdup(other));
}

/* A saver opened on a relative path, then the process changes directory:
 * refused, saying why, rather than saving into another directory that
 * happens to be there (whose state file would name checkpoints it lacks).
 * latest and restore_latest are refused too (CKPT_ESTATE): they read the
 * other directory's newest checkpoint into the variables, or said "no
 * checkpoint" where the path led nowhere (a newcomer's program restored
 * step 777 of another run). */
static void test_relative_directory_after_chdir(void **state)
{
    fixture *f = *state;
    char cwd[4096], elsewhere[2048], path[4096];
    ckpt_saver *s = NULL;
    ckpt_var w = {"w", CKPT_DT_FLOAT, {1, {6}}, f->w, NULL, NULL, NULL};
    assert_non_null(getcwd(cwd, sizeof(cwd)));
    snprintf(elsewhere, sizeof(elsewhere), "%.2000s/elsewhere", f->dir);
    snprintf(path, sizeof(path), "%.2000s/elsewhere/rel", f->dir);
    assert_int_equal(mkdir(elsewhere, 0755), 0);
    assert_int_equal(mkdir(path, 0755), 0);
    snprintf(path, sizeof(path), "%.2000s/rel", f->dir);
    assert_int_equal(mkdir(path, 0755), 0);
    assert_int_equal(chdir(f->dir), 0);
    assert_ckpt_ok(ckpt_saver_open(&s, "rel", NULL));
    assert_ckpt_ok(ckpt_saver_add_var(s, &w));
    assert_ckpt_ok(ckpt_saver_save(s, 1, NULL));
    assert_int_equal(chdir(elsewhere), 0);
    assert_ckpt_error(ckpt_saver_save(s, 2, NULL), CKPT_ENOTFOUND,
                      "a relative path also changes with the process's "
                      "working directory");
    {
        ckpt_saver *there = NULL;
        ckpt_buf latest = CKPT_BUF_INIT;
        float theirs[6] = {7, 7, 7, 7, 7, 7};
        ckpt_var tw = {"w", CKPT_DT_FLOAT, {1, {6}}, theirs, NULL, NULL, NULL};
        assert_ckpt_ok(ckpt_saver_open(&there, "rel", NULL));
        assert_ckpt_ok(ckpt_saver_add_var(there, &tw));
        assert_ckpt_ok(ckpt_saver_save(there, 777, NULL));
        ckpt_saver_free(there);
        f->w[0] = -1.0f;
        assert_ckpt_error(ckpt_saver_restore_latest(s, &latest), CKPT_ESTATE,
                          "latest: checkpoint directory rel is no longer "
                          "the directory this saver opened");
        assert_true(f->w[0] == -1.0f); /* not step 777's values */
        assert_ckpt_error(ckpt_saver_latest(s, &latest), CKPT_ESTATE,
                          "a relative path also changes");
        assert_int_equal(latest.size, 0);
        assert_int_equal(chdir(f->dir), 0); /* back where it was opened */
        assert_ckpt_ok(ckpt_saver_restore_latest(s, &latest));
        assert_non_null(strstr(latest.ptr, "model.ckpt-1"));
        assert_true(f->w[0] == 0.0f);
        ckpt_buf_dispose(&latest);
    }
    assert_int_equal(chdir(cwd), 0);
    ckpt_saver_free(s);
    snprintf(path, sizeof(path), "%.2000s/elsewhere/rel", f->dir);
    assert_int_equal(count_files(path, ".index"), 1); /* step 777 */
    snprintf(path, sizeof(path), "%.2000s/rel", f->dir);
    assert_int_equal(count_files(path, ".index"), 1);
}

/* absolute_paths writes absolute prefixes; latest and restore still work
 * and a reopened saver recovers the list. */
static void test_absolute_paths(void **state)
{
    fixture *f = *state;
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_state st = CKPT_STATE_INIT;
    ckpt_buf latest = CKPT_BUF_INIT;
    char real[4096];
    char want[8192];
    ckpt_saver *s;
    o.absolute_paths = 1;
    o.max_to_keep = 2;
    s = open_saver(f, &o);
    save_steps(s, f, 1, 3);
    ckpt_saver_free(s);
    assert_non_null(realpath(f->dir, real));
    assert_ckpt_ok(ckpt_state_read(&st, NULL, f->dir));
    snprintf(want, sizeof(want), "%s/model.ckpt-3", real);
    assert_string_equal(st.model_checkpoint_path, want);
    assert_int_equal(st.num_paths, 2);
    ckpt_state_dispose(&st);
    s = open_saver(f, &o);
    assert_int_equal(ckpt_saver_num_checkpoints(s), 2);
    f->step = 0;
    assert_ckpt_ok(ckpt_saver_restore_latest(s, &latest));
    assert_int_equal(f->step, 3);
    save_steps(s, f, 4, 4); /* evicts step 2, deleting its files */
    assert_false(file_exists(f->dir, "model.ckpt-2.index"));
    assert_true(file_exists(f->dir, "model.ckpt-3.index"));
    ckpt_saver_free(s);
    ckpt_buf_dispose(&latest);
}

static void copy_file(const char *dir, const char *from, const char *to)
{
    char a[4200], b[4200];
    size_t n;
    uint8_t *p;
    snprintf(a, sizeof(a), "%s/%s", dir, from);
    snprintf(b, sizeof(b), "%s/%s", dir, to);
    p = test_read_file(a, &n);
    assert_non_null(p);
    test_write_file(b, p, n);
    free(p);
}

/* The value of "dense/kernel"[0] in checkpoint `name` of `dir`. */
static float first_weight(const char *dir, const char *name)
{
    char prefix[4200];
    ckpt_bundle_reader *r = NULL;
    float w[6];
    snprintf(prefix, sizeof(prefix), "%s/%s", dir, name);
    assert_ckpt_ok(ckpt_bundle_reader_open(&r, prefix, NULL));
    assert_ckpt_ok(ckpt_bundle_reader_read(r, "dense/kernel", w, sizeof(w)));
    ckpt_bundle_reader_free(r);
    return w[0];
}

/* A step saved again replaces its checkpoint through a second name
 * (model.ckpt.replaced-2) that is gone once the new one is named; a stale
 * file of that name nothing names (a set-aside cut short) is removed
 * first; a file system without links replaces it the old way. Each time
 * the checkpoint holds the last save's values and nothing else is left. */
static void test_overwrite_through_second_name(void **state)
{
    fixture *f = *state;
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    static ckpt_fs_forward no_link;
    ckpt_saver *s;
    char *st;
    s = open_saver(f, NULL);
    for (int k = 0; k < 3; k++) {
        f->w[0] = (float)k;
        if (k == 2) { /* a leftover of that name */
            copy_file(f->dir, "model.ckpt-2.index",
                      "model.ckpt.replaced-2.index");
            copy_file(f->dir, "model.ckpt-2.data-00000-of-00001",
                      "model.ckpt.replaced-2.data-00000-of-00001");
        }
        assert_ckpt_ok(ckpt_saver_save(s, 2, NULL));
        assert_true(first_weight(f->dir, "model.ckpt-2") == (float)k);
        assert_int_equal(count_files(f->dir, ".replaced"), 0);
    }
    ckpt_saver_free(s);
    ckpt_fs_forward_init(&no_link, NULL);
    no_link.fs.link = NULL;
    o.fs = &no_link.fs;
    s = open_saver(f, &o);
    f->w[0] = 9.0f;
    assert_ckpt_ok(ckpt_saver_save(s, 2, NULL));
    ckpt_saver_free(s);
    assert_true(first_weight(f->dir, "model.ckpt-2") == 9.0f);
    assert_int_equal(count_files(f->dir, ".replaced"), 0);
    st = read_state(f->dir);
    assert_non_null(strstr(st, "model_checkpoint_path: \"model.ckpt-2\""));
    assert_null(strstr(st, "replaced"));
    free(st);
}

/* The second name's links fail: with an I/O error or a full disk the save
 * fails (the old way would leave no checkpoint of that name for a moment,
 * unannounced), naming the file, with the old checkpoint still named and
 * whole and no second name left; a file system that says it has no links
 * (CKPT_ENOTSUP) is replaced the old way and the save succeeds. */
static int link_err;
static int failing_link(const char *from, const char *to, void *payload)
{
    (void)from;
    (void)to;
    (void)payload;
    return link_err;
}

static void test_second_name_link_fails(void **state)
{
    fixture *f = *state;
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    static ckpt_fs_forward bad_link;
    ckpt_saver *s;
    char *st;
    ckpt_fs_forward_init(&bad_link, NULL);
    bad_link.fs.link = failing_link;
    o.fs = &bad_link.fs;
    s = open_saver(f, &o);
    f->w[0] = 1.0f;
    assert_ckpt_ok(ckpt_saver_save(s, 2, NULL));
    f->w[0] = 2.0f;
    link_err = CKPT_ENOSPC;
    assert_int_equal(ckpt_saver_save(s, 2, NULL), CKPT_ENOSPC);
    assert_non_null(strstr(ckpt_error_last()->message, "model.ckpt-2.index"));
    assert_true(first_weight(f->dir, "model.ckpt-2") == 1.0f);
    assert_int_equal(count_files(f->dir, ".replaced"), 0);
    st = read_state(f->dir);
    assert_non_null(strstr(st, "model_checkpoint_path: \"model.ckpt-2\""));
    free(st);
    link_err = CKPT_ENOTSUP;
    assert_ckpt_ok(ckpt_saver_save(s, 2, NULL));
    assert_true(first_weight(f->dir, "model.ckpt-2") == 2.0f);
    assert_int_equal(count_files(f->dir, ".replaced"), 0);
    ckpt_saver_free(s);
}

/* An evicted checkpoint whose deletion fails is not forgotten: the next
 * save deletes it, and so does the next open when a process ends first
 * (the pending note keeps naming it). */
static ckpt_fs_forward flaky_remove;
static int remove_fails; /* removals of "model.ckpt-1.index" left to fail */
static int flaky_remove_fn(const char *path, void *payload)
{
    (void)payload;
    if (remove_fails > 0 && strstr(path, "model.ckpt-1.index")) {
        remove_fails--;
        return CKPT_EIO;
    }
    return flaky_remove.base->remove(path, flaky_remove.base->payload);
}

static void test_failed_eviction_retried(void **state)
{
    fixture *f = *state;
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_saver *s;
    ckpt_fs_forward_init(&flaky_remove, NULL);
    flaky_remove.fs.remove = flaky_remove_fn;
    o.fs = &flaky_remove.fs;
    o.max_to_keep = 1;
    s = open_saver(f, &o);
    assert_ckpt_ok(ckpt_saver_save(s, 1, NULL));
    remove_fails = 1;
    assert_ckpt_ok(ckpt_saver_save(s, 2, NULL)); /* a warning, no failure */
    assert_true(file_exists(f->dir, "model.ckpt-1.index"));
    assert_ckpt_ok(ckpt_saver_save(s, 3, NULL)); /* deleted now */
    assert_false(file_exists(f->dir, "model.ckpt-1.index"));
    assert_false(file_exists(f->dir, "model.ckpt-2.index"));
    assert_false(file_exists(f->dir, "model.ckpt-1.data-00000-of-00001"));
    /* the same with asynchronous saves, whose deletions the writer thread
     * makes (and whose failure it carries to the next commit) */
    assert_ckpt_ok(ckpt_saver_save(s, 1, NULL));
    {
        uint64_t t = 0;
        remove_fails = 1;
        assert_ckpt_ok(ckpt_saver_save_async(s, 5, &t));
        assert_ckpt_ok(ckpt_saver_wait(s, t, -1));
        assert_int_equal(remove_fails, 0); /* the deletion was tried */
        assert_true(file_exists(f->dir, "model.ckpt-1.index"));
        assert_ckpt_ok(ckpt_saver_save_async(s, 6, &t));
        assert_ckpt_ok(ckpt_saver_wait(s, t, -1));
        assert_false(file_exists(f->dir, "model.ckpt-1.index"));
        assert_false(file_exists(f->dir, "model.ckpt-5.index"));
        assert_true(file_exists(f->dir, "model.ckpt-6.index"));
    }
    ckpt_saver_free(s);
    /* the process ends before another save: the next open deletes it */
    f->w[0] = 5.0f;
    s = open_saver(f, &o);
    assert_ckpt_ok(ckpt_saver_save(s, 1, NULL));
    remove_fails = 1;
    assert_ckpt_ok(ckpt_saver_save(s, 4, NULL));
    assert_true(file_exists(f->dir, "model.ckpt-1.index"));
    ckpt_saver_free(s);
    s = open_saver(f, &o);
    assert_false(file_exists(f->dir, "model.ckpt-1.index"));
    assert_false(file_exists(f->dir, "model.ckpt-1.data-00000-of-00001"));
    assert_true(file_exists(f->dir, "model.ckpt-4.index"));
    ckpt_saver_free(s);
}

/* Faults of a save's last steps: `temp_full`, a full disk for the state
 * file's temporary copy only (the checkpoint's data fit);
 * `sync_after_rename`, the directory sync after a rename onto the state
 * file failing (the update, and its rollback too: the state file on disk
 * may then name either list); `index_rename`, the rename of a new index
 * onto "<dir>/model.ckpt.index" failing (a save that fails after its
 * checkpoint was set aside). */
typedef struct state_faults {
    ckpt_fs_forward fwd;
    int temp_full;
    int sync_after_rename;
    int index_rename;
    int renamed; /* a rename onto the state file awaits its sync */
} state_faults;

static int faulty_open_write(ckpt_file **out, const char *path, int flags,
                             void *payload)
{
    state_faults *d = payload;
    const ckpt_fs *base = ckpt_fs_forward_base(payload);
    if (d->temp_full && strstr(path, "/checkpoint.tmp"))
        return ckpt__error(CKPT_ENOSPC, "open_write %s: no space left", path);
    return base->open_write(out, path, flags, base->payload);
}

static int faulty_rename(const char *from, const char *to, void *payload)
{
    state_faults *d = payload;
    const ckpt_fs *base = ckpt_fs_forward_base(payload);
    size_t n = strlen(to);
    int err;
    if (d->index_rename && n >= 17 &&
        strcmp(to + n - 17, "/model.ckpt.index") == 0)
        return ckpt__error(CKPT_EIO, "rename %s to %s: input/output error",
                           from, to);
    err = base->rename(from, to, base->payload);
    if (err == 0 && d->sync_after_rename && n >= 11 &&
        strcmp(to + n - 11, "/checkpoint") == 0)
        d->renamed = 1;
    return err;
}

static int faulty_sync_dir(const char *path, void *payload)
{
    state_faults *d = payload;
    const ckpt_fs *base = ckpt_fs_forward_base(payload);
    if (d->renamed) {
        d->renamed = 0;
        return ckpt__error(CKPT_EIO, "sync_dir %s: input/output error", path);
    }
    return base->sync_dir(path, base->payload);
}

static void state_faults_init(state_faults *d)
{
    memset(d, 0, sizeof(*d));
    ckpt_fs_forward_init(&d->fwd, NULL);
    d->fwd.fs.open_write = faulty_open_write;
    d->fwd.fs.rename = faulty_rename;
    d->fwd.fs.sync_dir = faulty_sync_dir;
}

/* Write the state file of `dir` listing `paths` (the last the latest). */
static void write_state_listing(const char *dir, const char *const *paths,
                                size_t n)
{
    char text[1024], path[4200];
    size_t used = (size_t)snprintf(
        text, sizeof(text), "model_checkpoint_path: \"%s\"\n", paths[n - 1]);
    for (size_t i = 0; i < n; i++)
        used +=
            (size_t)snprintf(text + used, sizeof(text) - used,
                             "all_model_checkpoint_paths: \"%s\"\n", paths[i]);
    snprintf(path, sizeof(path), "%s/checkpoint", dir);
    test_write_file(path, text, used);
}

/* Copy checkpoint `from` of `dir` to `to` (index and one data file). */
static void copy_named(const char *dir, const char *from, const char *to)
{
    char a[256], b[256];
    snprintf(a, sizeof(a), "%s.index", from);
    snprintf(b, sizeof(b), "%s.index", to);
    copy_file(dir, a, b);
    snprintf(a, sizeof(a), "%s.data-00000-of-00001", from);
    snprintf(b, sizeof(b), "%s.data-00000-of-00001", to);
    copy_file(dir, a, b);
}

/* A fixed-name replacement cut short by a crash leaves the state file
 * naming the second name (model.ckpt.replaced). The next save of that name
 * drops it with its own commit, so it never lingers as an old state that a
 * later replacement would leave the latest. And when a state file lists
 * both (written so by a version that kept it), a replacement failing
 * after the set-aside leaves the checkpoint's own last state the latest,
 * never the older second name. */
static void test_second_name_never_outlives_its_checkpoint(void **state)
{
    fixture *f = *state;
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    static state_faults d;
    static const char *const crashed[] = {"model.ckpt.replaced"};
    static const char *const both[] = {"model.ckpt.replaced", "model.ckpt"};
    ckpt_buf latest = CKPT_BUF_INIT;
    ckpt_saver *s;
    char *st;
    s = open_saver(f, NULL);
    f->w[0] = 1.0f;
    assert_ckpt_ok(ckpt_saver_save(s, CKPT_NO_STEP, NULL));
    ckpt_saver_free(s);
    /* the crash: the state file names the second name, which holds the
     * last durable state; the checkpoint's own files are gone */
    copy_named(f->dir, "model.ckpt", "model.ckpt.replaced");
    assert_int_equal(count_files(f->dir, "model.ckpt.data"), 1);
    write_state_listing(f->dir, crashed, 1);
    {
        char p[4200];
        snprintf(p, sizeof(p), "%s/model.ckpt.index", f->dir);
        assert_int_equal(unlink(p), 0);
        snprintf(p, sizeof(p), "%s/model.ckpt.data-00000-of-00001", f->dir);
        assert_int_equal(unlink(p), 0);
    }
    o.max_to_keep = 5;
    s = open_saver(f, &o);
    f->w[0] = 3.0f;
    assert_ckpt_ok(ckpt_saver_save(s, CKPT_NO_STEP, NULL));
    ckpt_saver_free(s);
    st = read_state(f->dir);
    assert_null(strstr(st, "replaced"));
    free(st);
    assert_int_equal(count_files(f->dir, ".replaced"), 0);
    assert_true(first_weight(f->dir, "model.ckpt") == 3.0f);

    /* both listed: the second name an older state (1), the checkpoint 3 */
    f->w[0] = 1.0f;
    s = open_saver(f, NULL);
    assert_ckpt_ok(ckpt_saver_save(s, 1, NULL));
    ckpt_saver_free(s);
    copy_named(f->dir, "model.ckpt-1", "model.ckpt.replaced");
    write_state_listing(f->dir, both, 2);
    state_faults_init(&d);
    d.index_rename = 1;
    o.fs = &d.fwd.fs;
    s = open_saver(f, &o);
    f->w[0] = 4.0f;
    assert_int_not_equal(ckpt_saver_save(s, CKPT_NO_STEP, NULL), 0);
    ckpt_saver_free(s);
    assert_ckpt_ok(ckpt_latest_checkpoint(&latest, NULL, f->dir));
    assert_true(first_weight(f->dir, ckpt__path_basename(latest.ptr)) == 3.0f);
    ckpt_buf_dispose(&latest);
}

/* restore_subset of no variables restores none (it used to restore
 * every one), yet still opens the checkpoint. */
static void test_restore_subset_of_none(void **state)
{
    fixture *f = *state;
    ckpt_saver *s;
    char prefix[4200], missing[4200];
    s = open_saver(f, NULL);
    f->w[0] = 1.0f;
    assert_ckpt_ok(ckpt_saver_save(s, 1, NULL));
    snprintf(prefix, sizeof(prefix), "%s/model.ckpt-1", f->dir);
    snprintf(missing, sizeof(missing), "%s/model.ckpt-7", f->dir);
    f->w[0] = 5.0f;
    assert_ckpt_ok(ckpt_saver_restore_subset(s, prefix, NULL, 0));
    assert_true(f->w[0] == 5.0f);
    assert_ckpt_error(ckpt_saver_restore_subset(s, missing, NULL, 0),
                      CKPT_ENOTFOUND, "model.ckpt-7");
    assert_ckpt_ok(ckpt_saver_restore(s, prefix));
    assert_true(f->w[0] == 1.0f);
    ckpt_saver_free(s);
}

static int read_zeros(void *dst, uint64_t offset, size_t n, void *payload)
{
    (void)offset;
    (void)payload;
    memset(dst, 0, n);
    return 0;
}

/* A variable saved through a read callback alone cannot be restored: the
 * restore fails before any variable is written (the in-memory ones were
 * once restored first), and so does restore_subset naming it. A NULL
 * among restore_subset's names is refused, naming its index. */
static void test_restore_unrestorable_writes_nothing(void **state)
{
    fixture *f = *state;
    ckpt_saver *s;
    ckpt_var ro = {"read_only", CKPT_DT_FLOAT, {1, {4}}, NULL,
                   read_zeros,  NULL,          NULL};
    const char *names[2] = {"dense/kernel", NULL};
    char prefix[4200];
    s = open_saver(f, NULL);
    assert_ckpt_ok(ckpt_saver_add_var(s, &ro));
    f->w[0] = 1.0f;
    assert_ckpt_ok(ckpt_saver_save(s, 1, NULL));
    snprintf(prefix, sizeof(prefix), "%s/model.ckpt-1", f->dir);
    f->w[0] = 5.0f;
    assert_ckpt_error(ckpt_saver_restore(s, prefix), CKPT_EINVAL,
                      "variable 'read_only' has neither data nor a write "
                      "callback");
    assert_true(f->w[0] == 5.0f);
    assert_ckpt_error(ckpt_saver_restore_subset(s, prefix, names, 2),
                      CKPT_EINVAL, "restore_subset: names[1] is NULL");
    assert_true(f->w[0] == 5.0f);
    names[1] = "read_only";
    assert_ckpt_error(ckpt_saver_restore_subset(s, prefix, names, 2),
                      CKPT_EINVAL, "'read_only'");
    assert_true(f->w[0] == 5.0f);
    assert_ckpt_ok(ckpt_saver_restore_subset(s, prefix, names, 1));
    assert_true(f->w[0] == 1.0f);
    ckpt_saver_free(s);
}

/* A checkpoint whose index is there and whose data file is gone is
 * incomplete, not absent: restore and restore_latest say CKPT_ECORRUPT
 * naming the file (restore_latest said the checkpoint lacked a variable,
 * and restore CKPT_ENOTFOUND, which promises nothing was written). */
static void test_restore_missing_data_file_is_damage(void **state)
{
    fixture *f = *state;
    ckpt_saver *s;
    char data[4200];
    s = open_saver(f, NULL);
    assert_ckpt_ok(ckpt_saver_save(s, 1, NULL));
    snprintf(data, sizeof(data), "%s/model.ckpt-1.data-00000-of-00001", f->dir);
    assert_int_equal(unlink(data), 0);
    snprintf(data, sizeof(data), "%s/model.ckpt-1", f->dir);
    assert_ckpt_error(ckpt_saver_restore(s, data), CKPT_ECORRUPT,
                      "incomplete checkpoint");
    assert_non_null(strstr(ckpt_error_last()->message, "data-00000-of-00001"));
    assert_ckpt_error(ckpt_saver_restore_latest(s, NULL), CKPT_ECORRUPT,
                      "incomplete checkpoint");
    ckpt_saver_free(s);
}

/* A FIFO or a directory where the latest checkpoint's data file or index
 * should be is a damaged checkpoint: CKPT_ECORRUPT naming the file and
 * saying older ones are listed, never a hang on the FIFO (it was CKPT_EIO,
 * which the caller could not tell from a failing disk). */
static void test_restore_latest_special_file_is_damage(void **state)
{
    fixture *f = *state;
    const char *part[] = {"data-00000-of-00001", "index"};
    ckpt_saver *s = open_saver(f, NULL);
    char path[4200], aside[4300];
    save_steps(s, f, 1, 2);
    for (int i = 0; i < 2; i++)
        for (int fifo = 0; fifo < 2; fifo++) {
            snprintf(path, sizeof(path), "%s/model.ckpt-2.%s", f->dir, part[i]);
            snprintf(aside, sizeof(aside), "%s.aside", path);
            assert_int_equal(rename(path, aside), 0);
            assert_int_equal(fifo ? mkfifo(path, 0600) : mkdir(path, 0700), 0);
            assert_ckpt_error(ckpt_saver_restore_latest(s, NULL), CKPT_ECORRUPT,
                              "1 older checkpoint is listed");
            assert_non_null(strstr(ckpt_error_last()->message, path));
            assert_non_null(strstr(ckpt_error_last()->message,
                                   fifo ? "a FIFO, not a regular file"
                                        : "a directory, not a regular file"));
            assert_int_equal(fifo ? unlink(path) : rmdir(path), 0);
            assert_int_equal(rename(aside, path), 0);
        }
    assert_ckpt_ok(ckpt_saver_restore_latest(s, NULL));
    assert_int_equal(f->step, 2);
    ckpt_saver_free(s);
}

/* A damaged latest checkpoint: restore_latest says so and that older ones
 * are listed (it does not fall back by itself: which state to resume from
 * is the caller's choice); restoring the older one works. */
static void test_restore_latest_damaged_names_older(void **state)
{
    fixture *f = *state;
    ckpt_saver *s;
    ckpt_buf older = CKPT_BUF_INIT;
    char path[4200];
    FILE *fp;
    s = open_saver(f, NULL);
    save_steps(s, f, 1, 2);
    snprintf(path, sizeof(path), "%s/model.ckpt-2.data-00000-of-00001", f->dir);
    fp = fopen(path, "r+b");
    assert_non_null(fp);
    assert_int_equal(fseek(fp, 3, SEEK_SET), 0);
    assert_int_equal(fputc(0x5a, fp), 0x5a);
    fclose(fp);
    assert_ckpt_error(ckpt_saver_restore_latest(s, NULL), CKPT_ECORRUPT,
                      "(1 older checkpoint is listed: ckpt_saver_checkpoint "
                      "gives them, ckpt_saver_restore restores one)");
    assert_ckpt_error(ckpt_saver_checkpoint(s, 2, &older), CKPT_EINVAL,
                      "checkpoint 2: out of range: the saver keeps 2 "
                      "checkpoint(s)");
    assert_ckpt_ok(ckpt_saver_checkpoint(s, 0, &older));
    assert_ckpt_ok(ckpt_saver_restore(s, older.ptr));
    assert_int_equal(f->step, 1);
    ckpt_buf_dispose(&older);
    ckpt_saver_free(s);
}

/* Three saves in a row of one step (a loop that never advances the step it
 * passes) draw one warning naming the step and the checkpoint overwritten;
 * two do not (a final save may repeat the last periodic one's step), nor
 * do fixed-name saves, and the warning is given once per saver. Saves
 * without a step are logged as such, never as a number. */
static void test_repeated_step_warns_once(void **state)
{
    fixture *f = *state;
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_saver *s;
    test_log lb;
    test_log_init(&lb, 0);
    o.log = test_log_capture;
    o.log_payload = &lb;
    o.log_level = CKPT_LOG_DEBUG;
    s = open_saver(f, &o);
    save_steps(s, f, 5, 5);
    save_steps(s, f, 5, 5);
    assert_ckpt_ok(ckpt_saver_wait(s, 0, -1)); /* the writer logs too */
    assert_null(strstr(lb.text, "in a row"));
    for (int i = 0; i < 3; i++) {
        assert_ckpt_ok(ckpt_saver_save(s, CKPT_NO_STEP, NULL));
        assert_ckpt_ok(ckpt_saver_save_async(s, CKPT_NO_STEP, NULL));
        assert_ckpt_ok(ckpt_saver_wait(s, 0, -1));
    }
    assert_null(strstr(lb.text, "in a row"));
    assert_non_null(strstr(lb.text, "snapshot without a step taken"));
    assert_null(strstr(lb.text, "-9223372036854775808"));
    for (int i = 0; i < 3; i++)
        save_steps(s, f, 6, 6);
    for (int i = 0; i < 4; i++) {
        assert_ckpt_ok(ckpt_saver_save_async(s, 7, NULL));
        assert_ckpt_ok(ckpt_saver_wait(s, 0, -1));
    }
    ckpt_saver_free(s);
    assert_int_equal(test_count(lb.text, "in a row"), 1);
    assert_non_null(strstr(lb.text, "3 saves in a row of step 6, each one "
                                    "overwriting "));
    assert_non_null(strstr(lb.text, "model.ckpt-6: does the training loop "
                                    "advance the step"));
}

/* Copy checkpoint `from` to step `to` (index and data). */
static void copy_checkpoint(const char *dir, int from, int to)
{
    char a[64], b[64];
    snprintf(a, sizeof(a), "model.ckpt-%d.index", from);
    snprintf(b, sizeof(b), "model.ckpt-%d.index", to);
    copy_file(dir, a, b);
    snprintf(a, sizeof(a), "model.ckpt-%d.data-00000-of-00001", from);
    snprintf(b, sizeof(b), "model.ckpt-%d.data-00000-of-00001", to);
    copy_file(dir, a, b);
}

static int has_checkpoint_files(const char *dir, int step)
{
    char a[64], b[64];
    snprintf(a, sizeof(a), "model.ckpt-%d.index", step);
    snprintf(b, sizeof(b), "model.ckpt-%d.data-00000-of-00001", step);
    return file_exists(dir, a) + file_exists(dir, b);
}

/* Reopening removes what nothing can read, and nothing readable: temporary
 * files (test_b80) and data files without their index go; complete
 * checkpoints of our naming the state file does not list (a save or a
 * deletion a crash cut short, or a user's files) stay, with a warning, and
 * so do files not of our naming. The state file's own list is recovered
 * as it was. */
static void test_recover_removes_crash_leftovers(void **state)
{
    fixture *f = *state;
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_saver *s;
    ckpt_buf latest = CKPT_BUF_INIT;
    test_log lb;
    o.max_to_keep = 2;
    s = open_saver(f, &o);
    save_steps(s, f, 2, 2);
    save_steps(s, f, 5, 5);
    ckpt_saver_free(s);
    copy_checkpoint(f->dir, 2, 1); /* older than every listed one */
    copy_checkpoint(f->dir, 5, 9); /* newer */
    copy_checkpoint(f->dir, 5, 4); /* between */
    copy_file(f->dir, "model.ckpt-2.data-00000-of-00001",
              "model.ckpt-7.data-00000-of-00001"); /* orphan data */
    copy_file(f->dir, "model.ckpt-2.data-00000-of-00001",
              "other-5.data-00000-of-00001");
    copy_file(f->dir, "model.ckpt-2.data-00000-of-00001",
              "model.ckpt-x.data-00000-of-00001");
    test_log_init(&lb, 0);
    o.log = test_log_capture;
    o.log_payload = &lb;
    s = open_saver(f, &o);
    assert_int_equal(ckpt_saver_num_checkpoints(s), 2);
    assert_ckpt_ok(ckpt_saver_latest(s, &latest));
    assert_non_null(strstr(latest.ptr, "model.ckpt-5"));
    ckpt_saver_free(s);
    assert_non_null(strstr(lb.text, "3 checkpoint(s) not in the state file "
                                    "left in place (model.ckpt-"));
    for (int step = 1; step <= 9; step++)
        assert_int_equal(
            has_checkpoint_files(f->dir, step),
            step == 1 || step == 2 || step == 4 || step == 5 || step == 9 ? 2
                                                                          : 0);
    assert_false(file_exists(f->dir, "model.ckpt-7.data-00000-of-00001"));
    assert_true(file_exists(f->dir, "other-5.data-00000-of-00001"));
    assert_true(file_exists(f->dir, "model.ckpt-x.data-00000-of-00001"));
    ckpt_buf_dispose(&latest);
}

/* What the second name of a replaced checkpoint leaves when a crash cuts
 * its life short was kept for ever: "model.ckpt.replaced-5"'s data after
 * retention removed its index and a kill came before its data went (the
 * same without a step, "model.ckpt.replaced"); "model.ckpt.replaced-4"'s
 * index alone, its set-aside links not yet durable. Reopening now removes
 * them as it does a step's; names that only look alike stay, and so does
 * a save without a step's data ("model.ckpt", possibly a user's). */
static void test_recover_removes_second_name_leftovers(void **state)
{
    fixture *f = *state;
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_saver *s;
    ckpt_buf latest = CKPT_BUF_INIT;
    test_log lb;
    static const char *const gone[] = {
        "model.ckpt.replaced-5.data-00000-of-00001",
        "model.ckpt.replaced.data-00000-of-00001",
        "model.ckpt.replaced-4.index"};
    static const char *const kept[] = {
        "model.ckpt.replaced-x.data-00000-of-00001",
        "model.ckpt.replacedx-5.data-00000-of-00001",
        "model.ckpt.replaced-.index", "model.ckpt.data-00000-of-00001"};
    o.max_to_keep = 2;
    s = open_saver(f, &o);
    save_steps(s, f, 2, 2);
    save_steps(s, f, 5, 5);
    ckpt_saver_free(s);
    for (size_t i = 0; i < sizeof(gone) / sizeof(gone[0]); i++)
        copy_file(f->dir,
                  strstr(gone[i], ".index")
                      ? "model.ckpt-5.index"
                      : "model.ckpt-5.data-00000-of-00001",
                  gone[i]);
    for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
        copy_file(f->dir,
                  strstr(kept[i], ".index")
                      ? "model.ckpt-5.index"
                      : "model.ckpt-5.data-00000-of-00001",
                  kept[i]);
    test_log_init(&lb, 0);
    o.log = test_log_capture;
    o.log_payload = &lb;
    s = open_saver(f, &o);
    assert_int_equal(ckpt_saver_num_checkpoints(s), 2);
    assert_ckpt_ok(ckpt_saver_latest(s, &latest));
    assert_non_null(strstr(latest.ptr, "model.ckpt-5"));
    ckpt_saver_free(s);
    assert_non_null(strstr(lb.text, "removed 2 data file(s) without an index"));
    assert_non_null(strstr(lb.text, "removed 1 index file(s) without any of "
                                    "their data files "
                                    "(model.ckpt.replaced-4.index;"));
    for (size_t i = 0; i < sizeof(gone) / sizeof(gone[0]); i++)
        assert_false(file_exists(f->dir, gone[i]));
    for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
        assert_true(file_exists(f->dir, kept[i]));
    assert_int_equal(has_checkpoint_files(f->dir, 5), 2);
    assert_int_equal(has_checkpoint_files(f->dir, 2), 2);
    ckpt_buf_dispose(&latest);
}

/* A latest checkpoint whose index is a symbolic link to nothing (a file
 * system not mounted yet) or a link in a loop cannot be read, but it is
 * there: an open to restore deletes nothing of it and keeps it listed,
 * and the restore takes the one before it (the open deleted its data file
 * as an interrupted save's and dropped it from the state file). */
static void test_index_link_to_nothing_keeps_checkpoint(void **state)
{
    fixture *f = *state;
    static const char *const target[] = {"/nonexistent-ckpt-mount/x.index",
                                         "model.ckpt-3.index"};
    for (int k = 0; k < 2; k++) {
        ckpt_saver *s = open_saver(f, NULL);
        ckpt_buf latest = CKPT_BUF_INIT;
        ckpt_state st = CKPT_STATE_INIT;
        char index[4200], data[4200];
        struct stat sb;
        save_steps(s, f, 1, 3);
        ckpt_saver_free(s);
        snprintf(index, sizeof(index), "%s/model.ckpt-3.index", f->dir);
        snprintf(data, sizeof(data), "%s/model.ckpt-3.data-00000-of-00001",
                 f->dir);
        assert_int_equal(unlink(index), 0);
        assert_int_equal(symlink(target[k], index), 0);
        s = open_saver(f, NULL);
        assert_ckpt_ok(ckpt_saver_restore_latest(s, &latest));
        assert_non_null(strstr(latest.ptr, "model.ckpt-2"));
        assert_int_equal(f->step, 2);
        ckpt_saver_free(s);
        assert_int_equal(lstat(index, &sb), 0);
        assert_int_equal(stat(data, &sb), 0);
        assert_ckpt_ok(ckpt_state_read(&st, NULL, f->dir));
        assert_int_equal(st.num_paths, 3);
        assert_non_null(strstr(st.all_paths[2], "model.ckpt-3"));
        ckpt_state_dispose(&st);
        ckpt_buf_dispose(&latest);
        assert_int_equal(unlink(index), 0);
    }
}

/* An index none of whose data files exist names data that does not exist
 * (a save or deletion a power cut cut short on a failing disk): nothing can
 * read it, yet it was kept for ever as a checkpoint nobody lists, the
 * directory called fine. Reopening removes it when the state file does not
 * name it, saying so; one whose data file is only partly there, one the
 * state file names, and files not of our naming stay. */
static void test_recover_removes_index_without_data(void **state)
{
    fixture *f = *state;
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_saver *s;
    ckpt_buf latest = CKPT_BUF_INIT;
    test_log lb;
    char path[4200];
    o.max_to_keep = 3;
    s = open_saver(f, &o);
    save_steps(s, f, 2, 2);
    save_steps(s, f, 5, 5);
    ckpt_saver_free(s);
    copy_file(f->dir, "model.ckpt-5.index", "model.ckpt-3.index");
    copy_file(f->dir, "model.ckpt-5.index", "model.ckpt-9.index");
    copy_file(f->dir, "model.ckpt-5.index", "other-9.index");
    /* a directory of an index's name: left, and not counted as removed */
    snprintf(path, sizeof(path), "%s/model.ckpt-1.index", f->dir);
    assert_int_equal(mkdir(path, 0755), 0);
    /* two shards named, one there: not taken for a leftover */
    copy_file(f->dir, "model.ckpt-5.index", "model.ckpt-8.index");
    copy_file(f->dir, "model.ckpt-5.data-00000-of-00001",
              "model.ckpt-8.data-00000-of-00002");
    /* listed, its data gone: reported missing, never removed */
    snprintf(path, sizeof(path), "%s/model.ckpt-2.data-00000-of-00001", f->dir);
    assert_int_equal(unlink(path), 0);
    test_log_init(&lb, 0);
    o.log = test_log_capture;
    o.log_payload = &lb;
    s = open_saver(f, &o);
    assert_ckpt_ok(ckpt_saver_latest(s, &latest));
    assert_non_null(strstr(latest.ptr, "model.ckpt-5"));
    ckpt_saver_free(s);
    assert_non_null(strstr(lb.text, "removed 2 index file(s) without any of "
                                    "their data files (model.ckpt-"));
    assert_null(strstr(lb.text, "(model.ckpt-1.index"));
    assert_non_null(strstr(lb.text, "leaving model.ckpt-1.index: "));
    assert_true(file_exists(f->dir, "model.ckpt-1.index"));
    assert_false(file_exists(f->dir, "model.ckpt-3.index"));
    assert_false(file_exists(f->dir, "model.ckpt-9.index"));
    assert_true(file_exists(f->dir, "model.ckpt-8.index"));
    assert_true(file_exists(f->dir, "model.ckpt-8.data-00000-of-00002"));
    assert_true(file_exists(f->dir, "model.ckpt-2.index"));
    assert_true(file_exists(f->dir, "other-9.index"));
    assert_int_equal(has_checkpoint_files(f->dir, 5), 2);
    /* a state file that does not parse may name it: left */
    copy_file(f->dir, "model.ckpt-5.index", "model.ckpt-3.index");
    snprintf(path, sizeof(path), "%s/checkpoint", f->dir);
    test_write_file(path, "not a state file {", 18);
    s = open_saver(f, &o);
    ckpt_saver_free(s);
    assert_true(file_exists(f->dir, "model.ckpt-3.index"));
    ckpt_buf_dispose(&latest);
}

/* A state file listing many entries whose index is missing logs the first
 * ten one by one, then a count (a hostile one listed 400,000). */
static void test_recover_logs_many_drops_once(void **state)
{
    fixture *f = *state;
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_saver *s;
    test_log lb;
    static char text[4096];
    size_t used;
    char path[4200];
    s = open_saver(f, NULL);
    save_steps(s, f, 1, 1);
    ckpt_saver_free(s);
    used = (size_t)snprintf(text, sizeof(text),
                            "model_checkpoint_path: \"model.ckpt-1\"\n"
                            "all_model_checkpoint_paths: \"model.ckpt-1\"\n");
    for (int i = 0; i < 25; i++)
        used +=
            (size_t)snprintf(text + used, sizeof(text) - used,
                             "all_model_checkpoint_paths: \"gone-%d\"\n", i);
    snprintf(path, sizeof(path), "%s/checkpoint", f->dir);
    test_write_file(path, text, used);
    test_log_init(&lb, 0);
    o.log = test_log_capture;
    o.log_payload = &lb;
    s = open_saver(f, &o);
    assert_int_equal(ckpt_saver_num_checkpoints(s), 1);
    ckpt_saver_free(s);
    assert_int_equal(test_count(lb.text, "dropping "), 10);
    assert_non_null(strstr(lb.text, "25 entries dropped from the list in all"));
}

/* The pending note never deletes a checkpoint the state file names, even
 * only as model_checkpoint_path (a state file written by hand) or spelled
 * as an absolute path (TensorFlow's Saver writes those); with no state
 * file (a first save cut short before it wrote one) what it notes is
 * deleted; with a state file that does not parse, nothing is. */
static void test_pending_note_spares_named_checkpoints(void **state)
{
    fixture *f = *state;
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_saver *s;
    char path[4200], text[8400], real[4096];
    o.max_to_keep = CKPT_KEEP_ALL;
    s = open_saver(f, &o);
    save_steps(s, f, 1, 3);
    ckpt_saver_free(s);
    assert_non_null(realpath(f->dir, real));
    snprintf(path, sizeof(path), "%s/checkpoint.pending", f->dir);
    test_write_file(path, "model.ckpt-3\nmodel.ckpt-2\nmodel.ckpt-1\n", 39);
    snprintf(path, sizeof(path), "%s/checkpoint", f->dir);
    snprintf(text, sizeof(text),
             "model_checkpoint_path: \"model.ckpt-3\"\n"
             "all_model_checkpoint_paths: \"%s/model.ckpt-2\"\n",
             real);
    test_write_file(path, text, strlen(text));
    s = open_saver(f, &o);
    ckpt_saver_free(s);
    for (int step = 1; step <= 3; step++)
        assert_int_equal(has_checkpoint_files(f->dir, step), step == 1 ? 0 : 2);
    assert_false(file_exists(f->dir, "checkpoint.pending"));
    /* a state file that does not parse: the note is dropped, nothing
     * deleted */
    snprintf(path, sizeof(path), "%s/checkpoint.pending", f->dir);
    test_write_file(path, "model.ckpt-3\n", 13);
    snprintf(path, sizeof(path), "%s/checkpoint", f->dir);
    test_write_file(path, "model_checkpoint_path: \"", 24);
    s = open_saver(f, &o);
    ckpt_saver_free(s);
    assert_int_equal(has_checkpoint_files(f->dir, 3), 2);
    assert_false(file_exists(f->dir, "checkpoint.pending"));
    /* no state file: what the note names is deleted */
    snprintf(path, sizeof(path), "%s/checkpoint.pending", f->dir);
    test_write_file(path, "model.ckpt-3\n", 13);
    snprintf(path, sizeof(path), "%s/checkpoint", f->dir);
    assert_int_equal(unlink(path), 0);
    s = open_saver(f, &o);
    ckpt_saver_free(s);
    assert_int_equal(has_checkpoint_files(f->dir, 3), 0);
    assert_int_equal(has_checkpoint_files(f->dir, 2), 2);
    assert_false(file_exists(f->dir, "checkpoint.pending"));
}

static int ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), t = strlen(tail);
    return n >= t && strcmp(s + n - t, tail) == 0;
}

/* The pending note is only ever put in place by a rename of a temporary
 * file fsynced first: never removed and created again (a crash between
 * the two forgot a complete, unnamed checkpoint), never an entry that may
 * reach the disk before its bytes. Saves that evict rewrite it. */
static void test_pending_note_replaced_by_rename(void **state)
{
    fixture *f = *state;
    ckpt_fs_fault *ff = NULL;
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_saver *s;
    int renames = 0;
    assert_ckpt_ok(ckpt_fs_fault_new(&ff, NULL));
    o.fs = ckpt_fs_fault_fs(ff);
    o.max_to_keep = 1;
    s = open_saver(f, &o);
    ckpt_fs_fault_trace(ff, ~0u);
    save_steps(s, f, 1, 3); /* saves 2 and 3 evict */
    ckpt_saver_free(s);
    for (size_t i = 0; i < ckpt_fs_fault_trace_size(ff); i++) {
        const ckpt_fs_fault_event *e = ckpt_fs_fault_trace_event(ff, i);
        int synced = 0;
        assert_false(e->op == CKPT_FS_OP_OPEN_WRITE &&
                     ends_with(e->path, "/checkpoint.pending"));
        if (e->op != CKPT_FS_OP_RENAME ||
            !ends_with(e->to, "/checkpoint.pending"))
            continue;
        renames++;
        for (size_t j = 0; j < i; j++) {
            const ckpt_fs_fault_event *b = ckpt_fs_fault_trace_event(ff, j);
            if (strcmp(b->path, e->path) == 0 && b->op == CKPT_FS_OP_SYNC)
                synced = 1;
        }
        assert_true(synced);
    }
    assert_true(renames >= 5); /* each save's own, two evicting saves' */
    ckpt_fs_fault_free(ff);
}

/* A save failing before its commit (here its index cannot be renamed into
 * place) keeps the failed saves the state file may name in the pending
 * note: a process ending then leaves them for the next open to delete,
 * never unnamed and unnoted for good. */
static void test_unsure_saves_survive_a_failed_save(void **state)
{
    fixture *f = *state;
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    static state_faults d;
    ckpt_saver *s;
    char path[4200], index7[4200];
    state_faults_init(&d);
    o.fs = &d.fwd.fs;
    s = open_saver(f, &o);
    save_steps(s, f, 1, 1);
    d.sync_after_rename = 1;
    for (int step = 3; step <= 4; step++) {
        f->step = step;
        assert_int_not_equal(ckpt_saver_save(s, step, NULL), 0);
    }
    d.sync_after_rename = 0;
    snprintf(index7, sizeof(index7), "%s/model.ckpt-7.index", f->dir);
    assert_int_equal(mkdir(index7, 0755), 0);
    f->step = 7;
    assert_int_not_equal(ckpt_saver_save(s, 7, NULL), 0);
    ckpt_saver_free(s);
    assert_int_equal(rmdir(index7), 0);
    for (int step = 3; step <= 4; step++)
        assert_int_equal(has_checkpoint_files(f->dir, step), 2);
    snprintf(path, sizeof(path), "%s/checkpoint.pending", f->dir);
    {
        size_t n = 0;
        uint8_t *raw = test_read_file(path, &n);
        char *note = calloc(1, n + 1);
        assert_non_null(raw);
        assert_non_null(note);
        memcpy(note, raw, n);
        free(raw);
        assert_non_null(strstr(note, "model.ckpt-3\n"));
        assert_non_null(strstr(note, "model.ckpt-4\n"));
        free(note);
    }
    s = open_saver(f, NULL); /* the open deletes what the note names */
    ckpt_saver_free(s);
    for (int step = 3; step <= 4; step++)
        assert_int_equal(has_checkpoint_files(f->dir, step), 0);
    assert_false(file_exists(f->dir, "checkpoint.pending"));
}

/* A state file update failing before its rename (a full disk for its
 * temporary copy) left the state file as it was: nothing is rolled back
 * (no "could not restore" warning), and the failed save's checkpoint and
 * note are removed at once, giving the space back. */
static void test_state_update_failing_before_rename(void **state)
{
    fixture *f = *state;
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    static state_faults d;
    ckpt_saver *s;
    test_log lb;
    char *st;
    state_faults_init(&d);
    o.fs = &d.fwd.fs;
    o.max_to_keep = 2;
    test_log_init(&lb, 0);
    o.log = test_log_capture;
    o.log_payload = &lb;
    s = open_saver(f, &o);
    save_steps(s, f, 1, 1);
    d.temp_full = 1;
    f->step = 2;
    assert_ckpt_error(ckpt_saver_save(s, 2, NULL), CKPT_ENOSPC,
                      "checkpoint.tmp");
    assert_null(strstr(lb.text, "could not restore"));
    assert_int_equal(has_checkpoint_files(f->dir, 2), 0);
    assert_false(file_exists(f->dir, "checkpoint.pending"));
    st = read_state(f->dir);
    assert_non_null(strstr(st, "model_checkpoint_path: \"model.ckpt-1\""));
    free(st);
    d.temp_full = 0;
    save_steps(s, f, 3, 3);
    ckpt_saver_free(s);
    assert_int_equal(has_checkpoint_files(f->dir, 2), 0);
    assert_true(file_exists(f->dir, "model.ckpt-3.index"));
}

/* Saves whose state-file update and its rollback both fail (here the
 * directory sync after each rename onto the state file) may be named by
 * the state file on disk, so their files stay; they are carried in every
 * later pending note and deleted once a state file is written without
 * them. Each such save used to leak a whole checkpoint for good. */
static void test_unsure_saves_deleted_after_next_commit(void **state)
{
    fixture *f = *state;
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    static state_faults d;
    ckpt_saver *s;
    state_faults_init(&d);
    o.fs = &d.fwd.fs;
    o.max_to_keep = 2;
    s = open_saver(f, &o);
    save_steps(s, f, 1, 2);
    d.sync_after_rename = 1;
    for (int step = 3; step <= 5; step++) {
        f->step = step;
        assert_int_not_equal(ckpt_saver_save(s, step, NULL), 0);
        assert_int_equal(has_checkpoint_files(f->dir, step), 2);
    }
    d.sync_after_rename = 0;
    save_steps(s, f, 6, 6);
    ckpt_saver_free(s);
    for (int step = 3; step <= 5; step++)
        assert_int_equal(has_checkpoint_files(f->dir, step), 0);
    assert_int_equal(count_files(f->dir, ".index"), 2);
    assert_true(file_exists(f->dir, "model.ckpt-6.index"));
    assert_false(file_exists(f->dir, "checkpoint.pending"));
}

/* A step saved again over a checkpoint of that name written with another
 * shard count (by a distributed job on other ranks): the old data files
 * go with the old index, not only those the new save's renames replace. */
static void test_resave_removes_other_shard_counts(void **state)
{
    fixture *f = *state;
    ckpt_saver *s;
    ckpt_bundle_reader *r = NULL;
    ckpt_buf prefix = CKPT_BUF_INIT;
    char path[4200];
    s = open_saver(f, NULL);
    save_steps(s, f, 3, 3);
    for (int k = 0; k < 2; k++) { /* as a 2-rank job would have left */
        snprintf(path, sizeof(path), "%s/model.ckpt-3.data-%05d-of-00002",
                 f->dir, k);
        test_write_file(path, "old", 3);
    }
    f->w[0] = 9.0f;
    assert_ckpt_ok(ckpt_saver_save(s, 3, &prefix));
    ckpt_saver_free(s);
    assert_int_equal(count_files(f->dir, ".data-"), 1);
    assert_true(file_exists(f->dir, "model.ckpt-3.data-00000-of-00001"));
    assert_ckpt_ok(ckpt_bundle_reader_open(&r, prefix.ptr, NULL));
    assert_ckpt_ok(ckpt_bundle_reader_verify(r));
    ckpt_bundle_reader_free(r);
    ckpt_buf_dispose(&prefix);
}

/* Two savers of one process on one directory (a hook's and a scaffold's,
 * say, one of which saves): the second one's recovery sweeps nothing, nor
 * does its save, since what looks left over may be the other one's save
 * in flight; a later sole saver sweeps. */
static void test_second_saver_of_process_sweeps_nothing(void **state)
{
    fixture *f = *state;
    static const char temp[] =
        "model.ckpt-3.data-00000-of-00001.tempstate0123abcd";
    static const char orphan[] = "model.ckpt-7.data-00000-of-00001";
    ckpt_saver *a, *b;
    a = open_saver(f, NULL);
    save_steps(a, f, 2, 2);
    ckpt_saver_free(a);
    a = open_saver(f, NULL); /* holds the directory, saves nothing */
    copy_file(f->dir, "model.ckpt-2.data-00000-of-00001", temp);
    copy_file(f->dir, "model.ckpt-2.data-00000-of-00001", orphan);
    b = open_saver(f, NULL);
    assert_true(file_exists(f->dir, temp));
    assert_true(file_exists(f->dir, orphan));
    save_steps(b, f, 4, 4);
    assert_true(file_exists(f->dir, temp));
    ckpt_saver_free(b);
    ckpt_saver_free(a);
    b = open_saver(f, NULL);
    assert_false(file_exists(f->dir, temp));
    assert_false(file_exists(f->dir, orphan));
    assert_int_equal(has_checkpoint_files(f->dir, 4), 2);
    ckpt_saver_free(b);
}

/* Recovery makes the state file it read durable (a sync of the directory:
 * a crash may have left its rename unsynced) before it deletes anything,
 * here a data file whose index is missing. */
static void test_recover_syncs_before_deleting(void **state)
{
    fixture *f = *state;
    ckpt_fs_fault *ff = NULL;
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_saver *s;
    long synced = -1, removed = -1;
    s = open_saver(f, NULL);
    save_steps(s, f, 1, 1);
    ckpt_saver_free(s);
    copy_file(f->dir, "model.ckpt-1.data-00000-of-00001",
              "model.ckpt-2.data-00000-of-00001");
    assert_ckpt_ok(ckpt_fs_fault_new(&ff, NULL));
    ckpt_fs_fault_trace(ff, CKPT_FS_OP_BIT(CKPT_FS_OP_SYNC_DIR) |
                                CKPT_FS_OP_BIT(CKPT_FS_OP_REMOVE));
    o.fs = ckpt_fs_fault_fs(ff);
    s = open_saver(f, &o);
    ckpt_saver_free(s);
    for (size_t i = 0; i < ckpt_fs_fault_trace_size(ff); i++) {
        const ckpt_fs_fault_event *e = ckpt_fs_fault_trace_event(ff, i);
        if (e->op == CKPT_FS_OP_SYNC_DIR && synced < 0 &&
            strcmp(e->path, f->dir) == 0)
            synced = (long)i;
        if (e->op == CKPT_FS_OP_REMOVE && removed < 0 &&
            strstr(e->path, "model.ckpt-2.data-"))
            removed = (long)i;
    }
    assert_true(removed >= 0);
    assert_true(synced >= 0 && synced < removed);
    assert_false(file_exists(f->dir, "model.ckpt-2.data-00000-of-00001"));
    ckpt_fs_fault_free(ff);
}

/* Saves 1..3 (max_to_keep 3) in f->dir, then saves 4 through `ff` with
 * max_to_keep 1, tracing directory fsyncs and removals: that save trims the
 * list first, evicting 1 and 2 in one batch (both indexes removed, one
 * directory fsync, then their data files), and 3 once 4 is named. With
 * `fail_sync` > 0 that save's `fail_sync`th directory fsync fails once. */
static void evict_in_batch(fixture *f, ckpt_fs_fault *ff, uint64_t fail_sync)
{
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_saver *s;
    o.max_to_keep = 3;
    s = open_saver(f, &o);
    save_steps(s, f, 1, 3);
    ckpt_saver_free(s);
    o.max_to_keep = 1;
    o.fs = ckpt_fs_fault_fs(ff);
    s = open_saver(f, &o);
    ckpt_fs_fault_trace(ff, CKPT_FS_OP_BIT(CKPT_FS_OP_SYNC_DIR) |
                                CKPT_FS_OP_BIT(CKPT_FS_OP_REMOVE));
    if (fail_sync > 0)
        ckpt_fs_fault_fail(ff, fail_sync, CKPT_FS_OP_BIT(CKPT_FS_OP_SYNC_DIR),
                           EIO, 0, 0);
    save_steps(s, f, 4, 4);
    ckpt_fs_fault_clear(ff);
    ckpt_saver_free(s);
}

/* The index of the first traced event of `op` on a path holding `name`
 * (NULL: any path) at or after `from`, or -1. */
static long traced(const ckpt_fs_fault *ff, int op, const char *name,
                   size_t from)
{
    for (size_t i = from; i < ckpt_fs_fault_trace_size(ff); i++) {
        const ckpt_fs_fault_event *e = ckpt_fs_fault_trace_event(ff, i);
        if (e->op == op && (!name || strstr(e->path, name)))
            return (long)i;
    }
    return -1;
}

/* An eviction batch whose one directory fsync fails: no data file of the
 * first evicted checkpoint is removed until a directory fsync after its
 * index's removal has passed (a power cut could otherwise bring the index
 * back without its data); the next checkpoint's fsync is tried again, and
 * the first, carried, is deleted at the save's commit: nothing is left. */
static void test_eviction_batch_failed_dir_sync(void **state)
{
    fixture *f = *state;
    char *outer = f->dir;
    char *twin = test_path(outer, "twin"), *dir = test_path(outer, "real");
    ckpt_fs_fault *ff = NULL;
    uint64_t nth = 0;
    long at, failed = -1, passed, data1;
    assert_int_equal(mkdir(twin, 0755), 0);
    assert_int_equal(mkdir(dir, 0755), 0);
    /* a dry run finds which fsync of save 4 is the batch's */
    assert_ckpt_ok(ckpt_fs_fault_new(&ff, NULL));
    f->dir = twin;
    evict_in_batch(f, ff, 0);
    at = traced(ff, CKPT_FS_OP_REMOVE, "model.ckpt-1.index", 0);
    assert_true(at >= 0);
    at = traced(ff, CKPT_FS_OP_SYNC_DIR, NULL, (size_t)at);
    assert_true(at >= 0);
    for (long i = 0; i <= at; i++)
        nth +=
            ckpt_fs_fault_trace_event(ff, (size_t)i)->op == CKPT_FS_OP_SYNC_DIR;
    ckpt_fs_fault_free(ff);
    /* the same save with that fsync failing */
    assert_ckpt_ok(ckpt_fs_fault_new(&ff, NULL));
    f->dir = dir;
    evict_in_batch(f, ff, nth);
    assert_int_equal(ckpt_fs_fault_injected(ff), 1);
    for (size_t i = 0; i < ckpt_fs_fault_trace_size(ff); i++)
        if (ckpt_fs_fault_trace_event(ff, i)->injected)
            failed = (long)i;
    assert_true(failed >
                traced(ff, CKPT_FS_OP_REMOVE, "model.ckpt-1.index", 0));
    passed = traced(ff, CKPT_FS_OP_SYNC_DIR, NULL, (size_t)failed + 1);
    data1 = traced(ff, CKPT_FS_OP_REMOVE, "model.ckpt-1.data-", 0);
    assert_true(passed > failed);
    assert_true(data1 > passed);
    for (int step = 1; step <= 3; step++)
        assert_int_equal(has_checkpoint_files(dir, step), 0);
    assert_int_equal(has_checkpoint_files(dir, 4), 2);
    ckpt_fs_fault_free(ff);
    f->dir = outer;
    free(twin);
    free(dir);
}

/* Fails the test unless the trace of `ff` (sync_dir and open_write
 * traced) holds a sync_dir of `parent` before the first open_write: the
 * entry of the directory `dir` a saver opened made durable first. */
static void expect_synced_before_write(ckpt_fs_fault *ff, const char *parent,
                                       const char *dir)
{
    long synced = -1, wrote = -1;
    for (size_t i = 0; i < ckpt_fs_fault_trace_size(ff); i++) {
        const ckpt_fs_fault_event *e = ckpt_fs_fault_trace_event(ff, i);
        if (e->op == CKPT_FS_OP_SYNC_DIR && synced < 0 &&
            strcmp(e->path, parent) == 0)
            synced = (long)i;
        if (e->op == CKPT_FS_OP_OPEN_WRITE && wrote < 0)
            wrote = (long)i;
    }
    if (synced < 0 || wrote < 0 || synced > wrote)
        fail_msg("saver on %s: sync_dir %s at event %ld, first write at %ld",
                 dir, parent, synced, wrote);
}

/* Opening makes the directory's own entry durable (a sync_dir of its
 * parent) before anything is written: the program, or an earlier run
 * killed before it synced, may have created it unsynced, and a power cut
 * would take it away with every checkpoint saved in it. The path spelled
 * with and without a trailing slash, and with a last "." ("ck/." is
 * "ck"). */
static void test_open_syncs_directory_entry(void **state)
{
    static const char *const spellings[] = {"ck", "ck/", "ck//", "ck/.",
                                            "ck/./"};
    fixture *f = *state;
    char *outer = f->dir;
    char *ck = test_path(outer, "ck");
    assert_int_equal(mkdir(ck, 0755), 0);
    for (size_t k = 0; k < sizeof(spellings) / sizeof(spellings[0]); k++) {
        ckpt_fs_fault *ff = NULL;
        ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
        ckpt_saver *s;
        char *dir = test_path(outer, spellings[k]);
        assert_ckpt_ok(ckpt_fs_fault_new(&ff, NULL));
        ckpt_fs_fault_trace(ff, CKPT_FS_OP_BIT(CKPT_FS_OP_SYNC_DIR) |
                                    CKPT_FS_OP_BIT(CKPT_FS_OP_OPEN_WRITE));
        o.fs = ckpt_fs_fault_fs(ff);
        f->dir = dir;
        s = open_saver(f, &o);
        save_steps(s, f, (int)k + 1, (int)k + 1);
        ckpt_saver_free(s);
        f->dir = outer;
        expect_synced_before_write(ff, outer, dir);
        ckpt_fs_fault_free(ff);
        free(dir);
    }
    free(ck);
}

/* A program run in the directory it saves to ("." : `mkdir run && cd run
 * && train --dir .`, the shell's mkdir syncing nothing) gets that
 * directory's entry synced too: in "..", the parent the kernel finds,
 * before the first write. Before, "." named no parent and nothing was
 * synced. */
static void test_open_syncs_entry_of_dot(void **state)
{
    fixture *f = *state;
    char *outer = f->dir;
    char *ck = test_path(outer, "run");
    char cwd[4096];
    ckpt_fs_fault *ff = NULL;
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_saver *s;
    assert_int_equal(mkdir(ck, 0755), 0);
    assert_non_null(getcwd(cwd, sizeof(cwd)));
    assert_int_equal(chdir(ck), 0);
    assert_ckpt_ok(ckpt_fs_fault_new(&ff, NULL));
    ckpt_fs_fault_trace(ff, CKPT_FS_OP_BIT(CKPT_FS_OP_SYNC_DIR) |
                                CKPT_FS_OP_BIT(CKPT_FS_OP_OPEN_WRITE));
    o.fs = ckpt_fs_fault_fs(ff);
    f->dir = ".";
    s = open_saver(f, &o);
    save_steps(s, f, 1, 1);
    ckpt_saver_free(s);
    f->dir = outer;
    assert_int_equal(chdir(cwd), 0);
    expect_synced_before_write(ff, "..", ".");
    assert_true(file_exists(ck, "model.ckpt-1.index"));
    ckpt_fs_fault_free(ff);
    free(ck);
}

/* Checkpoints of steps 40, 50 and 60 in f->dir, saved by a saver opened
 * with `o` and freed. */
static void save_40_50_60(fixture *f, const ckpt_saver_options *o)
{
    ckpt_saver *s = open_saver(f, o);
    save_steps(s, f, 40, 40);
    save_steps(s, f, 50, 50);
    save_steps(s, f, 60, 60);
    ckpt_saver_free(s);
}

/* A state file that names a checkpoint more than once (a hostile or
 * hand-edited one) counts it once, in its last place: retention never
 * evicts, and deletes, a checkpoint the list still names, and the latest
 * restores. */
static void test_recover_state_listing_twice(void **state)
{
    fixture *f = *state;
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_saver *s;
    ckpt_buf latest = CKPT_BUF_INIT;
    char path[4200];
    char *text;
    o.max_to_keep = 3;
    save_40_50_60(f, &o);
    snprintf(path, sizeof(path), "%s/checkpoint", f->dir);
    {
        static const char listing[] =
            "model_checkpoint_path: \"model.ckpt-60\"\n"
            "all_model_checkpoint_paths: \"model.ckpt-60\"\n"
            "all_model_checkpoint_paths: \"model.ckpt-40\"\n"
            "all_model_checkpoint_paths: \"model.ckpt-60\"\n"
            "all_model_checkpoint_paths: \"model.ckpt-50\"\n"
            "all_model_checkpoint_paths: \"model.ckpt-60\"\n"
            "all_model_checkpoint_paths: \"model.ckpt-60\"\n";
        test_write_file(path, listing, sizeof(listing) - 1);
    }
    s = open_saver(f, &o);
    assert_int_equal(ckpt_saver_num_checkpoints(s), 3);
    assert_ckpt_ok(ckpt_saver_latest(s, &latest));
    assert_non_null(strstr(latest.ptr, "model.ckpt-60"));
    f->step = 0;
    assert_ckpt_ok(ckpt_saver_restore(s, latest.ptr));
    assert_int_equal(f->step, 60);
    ckpt_saver_free(s);
    for (int step = 40; step <= 60; step += 10)
        assert_int_equal(has_checkpoint_files(f->dir, step), 2);
    text = read_state(f->dir);
    assert_non_null(strstr(text,
                           "all_model_checkpoint_paths: \"model.ckpt-40\"\n"
                           "all_model_checkpoint_paths: \"model.ckpt-50\"\n"
                           "all_model_checkpoint_paths: \"model.ckpt-60\"\n"));
    {
        /* the listing had no save times: the indexes' times, not 0 */
        const char *t = strstr(text, "all_model_checkpoint_timestamps: ");
        assert_non_null(t);
        assert_true(strtod(t + 33, NULL) > 1e9);
    }
    free(text);
    ckpt_buf_dispose(&latest);
}

/* Save steps 40, 50 and 60 keeping 3, replace the state file with one
 * listing them and then `second` again, last and as the latest, and open a
 * saver on it (recovery has run): the set-up of the two checks below. */
static ckpt_saver *open_listing_again(fixture *f, ckpt_saver_options *o,
                                      const char *second)
{
    char path[4200], listing[9000];
    int len = snprintf(listing, sizeof(listing),
                       "model_checkpoint_path: \"%s\"\n"
                       "all_model_checkpoint_paths: \"model.ckpt-40\"\n"
                       "all_model_checkpoint_paths: \"model.ckpt-50\"\n"
                       "all_model_checkpoint_paths: \"model.ckpt-60\"\n"
                       "all_model_checkpoint_paths: \"%s\"\n",
                       second, second);
    o->max_to_keep = 3;
    save_40_50_60(f, o);
    snprintf(path, sizeof(path), "%s/checkpoint", f->dir);
    test_write_file(path, listing, (size_t)len);
    return open_saver(f, o);
}

/* The same checkpoint listed under two spellings, "model.ckpt-40" and,
 * later (so newer), "./model.ckpt-40", the latest: retention at the next
 * save evicted the older spelling and deleted model.ckpt-40's files while
 * the list still named them under the other, so the state file's latest
 * checkpoint was gone. The two are one checkpoint, listed once, in its
 * last place. */
static void expect_listing_one_checkpoint_two_ways(fixture *f,
                                                   const char *second)
{
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_saver *s = open_listing_again(f, &o, second);
    ckpt_buf latest = CKPT_BUF_INIT;
    assert_int_equal(ckpt_saver_num_checkpoints(s), 3);
    save_steps(s, f, 70, 70);
    ckpt_saver_free(s);
    assert_int_equal(has_checkpoint_files(f->dir, 40), 2);
    assert_ckpt_ok(ckpt_latest_checkpoint(&latest, NULL, f->dir));
    assert_non_null(strstr(latest.ptr, "model.ckpt-70"));
    ckpt_buf_dispose(&latest);
}

static void test_recover_state_listing_one_checkpoint_two_ways(void **state)
{
    expect_listing_one_checkpoint_two_ways(*state, "./model.ckpt-40");
}

static void test_recover_state_listing_one_checkpoint_via_dotdot(void **state)
{
    fixture *f = *state;
    char sub[4200];
    snprintf(sub, sizeof(sub), "%s/sub", f->dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    expect_listing_one_checkpoint_two_ways(f, "sub/../model.ckpt-40");
}

/* A symbolic link in the directory to the directory itself ("alias" ->
 * "."): "alias/model.ckpt-40" is model.ckpt-40, though no lexical rule
 * says so. */
static void
test_recover_state_listing_one_checkpoint_via_inner_link(void **state)
{
    fixture *f = *state;
    char *alias = test_path(f->dir, "alias");
    assert_int_equal(symlink(".", alias), 0);
    free(alias);
    expect_listing_one_checkpoint_two_ways(f, "alias/model.ckpt-40");
}

/* A state file whose model_checkpoint_path, the latest, is not among its
 * all_model_checkpoint_paths (TensorFlow's writer always lists it last;
 * a hand-edited file may not), and which lists a checkpoint whose index
 * is gone: recovery rewrote the list without that one, and so without the
 * latest, and a job restarted from the directory resumed from an older
 * checkpoint. The latest stays listed, last. */
static void test_recover_keeps_unlisted_latest(void **state)
{
    fixture *f = *state;
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_saver *s;
    ckpt_buf latest = CKPT_BUF_INIT;
    char path[4200], *text;
    static const char listing[] =
        "model_checkpoint_path: \"model.ckpt-60\"\n"
        "all_model_checkpoint_paths: \"model.ckpt-40\"\n"
        "all_model_checkpoint_paths: \"model.ckpt-45\"\n"
        "all_model_checkpoint_paths: \"model.ckpt-50\"\n";
    o.max_to_keep = 3;
    save_40_50_60(f, &o);
    snprintf(path, sizeof(path), "%s/checkpoint", f->dir);
    test_write_file(path, listing, sizeof(listing) - 1);
    s = open_saver(f, &o);
    assert_int_equal(ckpt_saver_num_checkpoints(s), 3);
    assert_ckpt_ok(ckpt_saver_latest(s, &latest));
    assert_string_equal(ckpt__path_basename(latest.ptr), "model.ckpt-60");
    f->step = 0;
    assert_ckpt_ok(ckpt_saver_restore(s, latest.ptr));
    assert_int_equal(f->step, 60);
    save_steps(s, f, 70, 70); /* evicts 40 only */
    ckpt_saver_free(s);
    text = read_state(f->dir);
    assert_non_null(strstr(text,
                           "all_model_checkpoint_paths: \"model.ckpt-50\"\n"
                           "all_model_checkpoint_paths: \"model.ckpt-60\"\n"
                           "all_model_checkpoint_paths: \"model.ckpt-70\"\n"));
    free(text);
    assert_int_equal(has_checkpoint_files(f->dir, 40), 0);
    assert_int_equal(has_checkpoint_files(f->dir, 60), 2);
    ckpt_buf_dispose(&latest);
}

/* A state file whose list leaves its latest out and is otherwise in
 * order: the open lists it last and writes the state file so, and a
 * second open (ckpt-train opens the session's saver, then its hook's)
 * finds nothing to say: the warning was printed once per open. */
static void test_recover_writes_unlisted_latest(void **state)
{
    fixture *f = *state;
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_saver *s;
    test_log first, second;
    char path[4200], *text;
    static const char listing[] =
        "model_checkpoint_path: \"model.ckpt-60\"\n"
        "all_model_checkpoint_paths: \"model.ckpt-40\"\n"
        "all_model_checkpoint_paths: \"model.ckpt-50\"\n";
    o.max_to_keep = 3;
    save_40_50_60(f, &o);
    snprintf(path, sizeof(path), "%s/checkpoint", f->dir);
    test_write_file(path, listing, sizeof(listing) - 1);
    test_log_init(&first, CKPT_LOG_WARN);
    test_log_init(&second, CKPT_LOG_WARN);
    o.log = test_log_capture;
    o.log_payload = &first;
    s = open_saver(f, &o);
    ckpt_saver_free(s);
    assert_int_equal(test_count(first.text, "is missing from the list"), 1);
    text = read_state(f->dir);
    assert_non_null(strstr(text,
                           "all_model_checkpoint_paths: \"model.ckpt-40\"\n"
                           "all_model_checkpoint_paths: \"model.ckpt-50\"\n"
                           "all_model_checkpoint_paths: \"model.ckpt-60\"\n"));
    free(text);
    o.log_payload = &second;
    s = open_saver(f, &o);
    assert_int_equal(ckpt_saver_num_checkpoints(s), 3);
    ckpt_saver_free(s);
    assert_string_equal(second.text, "");
}

/* A state file that lists its latest, model_checkpoint_path, first (a
 * rollback by hand or by update_checkpoint_state): the first save trims
 * the list to max_to_keep before it writes, by list order, and deleted
 * that latest; when the save then failed, the state file named the newest
 * listed one instead, the step rolled back from. The latest is moved last
 * at the open, with a warning: the trim passes it over, a failed save
 * leaves it named, and the next save evicts the others first. */
static void test_recover_moves_listed_latest_last(void **state)
{
    fixture *f = *state;
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_saver *s;
    ckpt_buf latest = CKPT_BUF_INIT;
    test_log lb, again;
    char path[4200], *text;
    static const char listing[] =
        "model_checkpoint_path: \"model.ckpt-40\"\n"
        "all_model_checkpoint_paths: \"model.ckpt-40\"\n"
        "all_model_checkpoint_paths: \"model.ckpt-50\"\n"
        "all_model_checkpoint_paths: \"model.ckpt-60\"\n";
    o.max_to_keep = 3;
    save_40_50_60(f, &o);
    snprintf(path, sizeof(path), "%s/checkpoint", f->dir);
    test_write_file(path, listing, sizeof(listing) - 1);
    test_log_init(&lb, CKPT_LOG_WARN);
    o.max_to_keep = 2;
    o.log = test_log_capture;
    o.log_payload = &lb;
    s = open_saver(f, &o);
    assert_non_null(strstr(lb.text, "the latest checkpoint model.ckpt-40 is "
                                    "not last in the list"));
    ckpt_saver_free(s);
    /* written in order at the open: the next open (ckpt-train's hook after
     * its session's) does not warn again */
    text = read_state(f->dir);
    assert_non_null(strstr(text,
                           "all_model_checkpoint_paths: \"model.ckpt-60\"\n"
                           "all_model_checkpoint_paths: \"model.ckpt-40\"\n"));
    free(text);
    test_log_init(&again, CKPT_LOG_WARN);
    o.log_payload = &again;
    s = open_saver(f, &o);
    assert_null(strstr(again.text, "is not last in the list"));
    assert_ckpt_ok(ckpt_saver_latest(s, &latest));
    assert_string_equal(ckpt__path_basename(latest.ptr), "model.ckpt-40");
    /* the save of step 70 fails: its index's name is a directory */
    snprintf(path, sizeof(path), "%s/model.ckpt-70.index", f->dir);
    assert_int_equal(mkdir(path, 0700), 0);
    f->step = 70;
    assert_int_not_equal(ckpt_saver_save(s, 70, NULL), 0);
    ckpt_error_clear();
    text = read_state(f->dir);
    assert_non_null(strstr(text, "model_checkpoint_path: \"model.ckpt-40\"\n"));
    free(text);
    assert_int_equal(has_checkpoint_files(f->dir, 40), 2);
    assert_int_equal(has_checkpoint_files(f->dir, 50), 0); /* the trim's */
    assert_int_equal(rmdir(path), 0);
    save_steps(s, f, 80, 80); /* evicts 60, the oldest left */
    ckpt_saver_free(s);
    text = read_state(f->dir);
    assert_non_null(strstr(text,
                           "model_checkpoint_path: \"model.ckpt-80\"\n"
                           "all_model_checkpoint_paths: \"model.ckpt-40\"\n"
                           "all_model_checkpoint_paths: \"model.ckpt-80\"\n"));
    free(text);
    assert_int_equal(has_checkpoint_files(f->dir, 40), 2);
    assert_int_equal(has_checkpoint_files(f->dir, 60), 0);
    f->step = 0;
    s = open_saver(f, &o);
    assert_ckpt_ok(ckpt_saver_restore(s, latest.ptr));
    assert_int_equal(f->step, 40);
    ckpt_saver_free(s);
    ckpt_buf_dispose(&latest);
}

/* A state file that lists this directory's own checkpoints by absolute
 * paths (TensorFlow 1, or absolute_paths, here through a symbolic link to
 * the directory) read by a saver writing relative paths: eviction took
 * them for another directory's, logged "outside the checkpoint
 * directory" and left their files for ever. They are this directory's
 * and are deleted; a checkpoint listed in another directory is not. */
static void test_evicts_own_checkpoints_listed_by_absolute_path(void **state)
{
    fixture *f = *state;
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_saver *s;
    test_log lb;
    char real[4096], link[4200], other[4200], listing[16384], path[8400];
    int n;
    o.max_to_keep = 3;
    save_40_50_60(f, &o);
    assert_non_null(realpath(f->dir, real));
    snprintf(link, sizeof(link), "%s-link", real);
    assert_int_equal(symlink(real, link), 0);
    snprintf(other, sizeof(other), "%s-other", real);
    assert_int_equal(mkdir(other, 0700), 0);
    snprintf(path, sizeof(path), "%s/model.ckpt-30.index", other);
    test_write_file(path, "x", 1);
    n = snprintf(listing, sizeof(listing),
                 "model_checkpoint_path: \"%s/model.ckpt-60\"\n"
                 "all_model_checkpoint_paths: \"%s/model.ckpt-30\"\n"
                 "all_model_checkpoint_paths: \"%s/model.ckpt-40\"\n"
                 "all_model_checkpoint_paths: \"%s/model.ckpt-50\"\n"
                 "all_model_checkpoint_paths: \"%s/model.ckpt-60\"\n",
                 real, other, link, real, real);
    snprintf(path, sizeof(path), "%s/checkpoint", f->dir);
    test_write_file(path, listing, (size_t)n);
    test_log_init(&lb, CKPT_LOG_WARN);
    o.max_to_keep = 1;
    o.log = test_log_capture;
    o.log_payload = &lb;
    s = open_saver(f, &o);
    save_steps(s, f, 70, 70);
    ckpt_saver_free(s);
    assert_int_equal(has_checkpoint_files(f->dir, 40), 0);
    assert_int_equal(has_checkpoint_files(f->dir, 50), 0);
    assert_int_equal(has_checkpoint_files(f->dir, 60), 0);
    assert_int_equal(has_checkpoint_files(f->dir, 70), 2);
    assert_int_equal(has_checkpoint_files(other, 30), 1); /* not ours */
    assert_non_null(strstr(lb.text, "model.ckpt-30': it is outside"));
    assert_null(strstr(lb.text, "model.ckpt-40': it is outside"));
    assert_null(strstr(lb.text, "model.ckpt-50': it is outside"));
    snprintf(path, sizeof(path), "%s/model.ckpt-30.index", other);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(rmdir(other), 0);
    assert_int_equal(unlink(link), 0);
}

/* Relative spellings that lead into the directory ("./x", "alias/x" for a
 * symbolic link "alias" -> ".") name its own checkpoints: they were taken
 * for another directory's, dropped from the list and their files left for
 * ever. A real subdirectory's checkpoint is still not deleted. */
static void test_evicts_own_checkpoints_listed_by_relative_path(void **state)
{
    fixture *f = *state;
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_saver *s;
    test_log lb;
    char path[8400];
    static const char listing[] =
        "model_checkpoint_path: \"model.ckpt-60\"\n"
        "all_model_checkpoint_paths: \"sub/model.ckpt-30\"\n"
        "all_model_checkpoint_paths: \"./model.ckpt-40\"\n"
        "all_model_checkpoint_paths: \"alias/model.ckpt-50\"\n"
        "all_model_checkpoint_paths: \"model.ckpt-60\"\n";
    o.max_to_keep = 3;
    save_40_50_60(f, &o);
    snprintf(path, sizeof(path), "%s/alias", f->dir);
    assert_int_equal(symlink(".", path), 0);
    snprintf(path, sizeof(path), "%s/sub", f->dir);
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(path, sizeof(path), "%s/sub/model.ckpt-30.index", f->dir);
    test_write_file(path, "x", 1);
    snprintf(path, sizeof(path), "%s/checkpoint", f->dir);
    test_write_file(path, listing, sizeof(listing) - 1);
    test_log_init(&lb, CKPT_LOG_WARN);
    o.max_to_keep = 1;
    o.log = test_log_capture;
    o.log_payload = &lb;
    s = open_saver(f, &o);
    save_steps(s, f, 70, 70);
    ckpt_saver_free(s);
    assert_int_equal(has_checkpoint_files(f->dir, 40), 0);
    assert_int_equal(has_checkpoint_files(f->dir, 50), 0);
    assert_int_equal(has_checkpoint_files(f->dir, 60), 0);
    assert_int_equal(has_checkpoint_files(f->dir, 70), 2);
    assert_non_null(strstr(lb.text, "model.ckpt-30': it is outside"));
    assert_null(strstr(lb.text, "model.ckpt-40': it is outside"));
    assert_null(strstr(lb.text, "model.ckpt-50': it is outside"));
    snprintf(path, sizeof(path), "%s/sub/model.ckpt-30.index", f->dir);
    assert_int_equal(unlink(path), 0);
    snprintf(path, sizeof(path), "%s/sub", f->dir);
    assert_int_equal(rmdir(path), 0);
    snprintf(path, sizeof(path), "%s/alias", f->dir);
    assert_int_equal(unlink(path), 0);
}

/* "<dir>-other" with a stand-in index of model.ckpt-<step> (what makes a
 * listed path there count as a checkpoint), and "<dir>/alias" leading to
 * it: the set-up of the tests that point the link back at the directory
 * between the open and a save. */
static void make_alias_to_other(const fixture *f, char *other, size_t n,
                                int step)
{
    char path[8400];
    snprintf(other, n, "%s-other", f->dir);
    assert_int_equal(mkdir(other, 0700), 0);
    snprintf(path, sizeof(path), "%s/model.ckpt-%d.index", other, step);
    test_write_file(path, "x", 1);
    snprintf(path, sizeof(path), "%s/alias", f->dir);
    assert_int_equal(symlink(other, path), 0);
}

/* Point "<dir>/alias" at the directory itself. */
static void point_alias_here(const fixture *f)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/alias", f->dir);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(symlink(".", path), 0);
}

static void remove_alias_and_other(const fixture *f, const char *other,
                                   int step)
{
    char path[8400];
    snprintf(path, sizeof(path), "%s/alias", f->dir);
    assert_int_equal(unlink(path), 0);
    snprintf(path, sizeof(path), "%s/model.ckpt-%d.index", other, step);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(rmdir(other), 0);
}

/* The mirror of the test below: the evicted spelling is the bare name and
 * the one kept, "alias/model.ckpt-40", led to another directory at the
 * open; the link is then pointed at this directory. The bare name's
 * deletion was not looked up again (only a path with a '/' was), and
 * deleted the checkpoint the new state file names as alias/model.ckpt-40. */
static void test_evicted_name_kept_through_swapped_link(void **state)
{
    fixture *f = *state;
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_saver *s;
    char other[4200], path[8400], *text;
    static const char listing[] =
        "model_checkpoint_path: \"model.ckpt-60\"\n"
        "all_model_checkpoint_paths: \"model.ckpt-40\"\n"
        "all_model_checkpoint_paths: \"alias/model.ckpt-40\"\n"
        "all_model_checkpoint_paths: \"model.ckpt-50\"\n"
        "all_model_checkpoint_paths: \"model.ckpt-60\"\n";
    o.max_to_keep = 4;
    save_40_50_60(f, &o);
    make_alias_to_other(f, other, sizeof(other), 40);
    snprintf(path, sizeof(path), "%s/checkpoint", f->dir);
    test_write_file(path, listing, sizeof(listing) - 1);
    s = open_saver(f, &o);
    point_alias_here(f);
    save_steps(s, f, 70, 70); /* evicts the bare model.ckpt-40 */
    ckpt_saver_free(s);
    text = read_state(f->dir);
    assert_non_null(strstr(text, "\"alias/model.ckpt-40\""));
    free(text);
    assert_int_equal(has_checkpoint_files(f->dir, 40), 2);
    remove_alias_and_other(f, other, 40);
}

/* A path listed with a '/' that led to another directory at the open and
 * into this one at the eviction (a link changed between them) names
 * another directory's checkpoint as far as the list knows: the eviction
 * deleted this directory's unlisted model.ckpt-10 through it. Ownership
 * now needs both the open and the eviction to see it. */
static void test_evicted_path_swapped_into_directory_kept(void **state)
{
    fixture *f = *state;
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_saver *s;
    test_log lb;
    char other[4200], path[8400];
    static const char listing[] =
        "model_checkpoint_path: \"model.ckpt-60\"\n"
        "all_model_checkpoint_paths: \"alias/model.ckpt-10\"\n"
        "all_model_checkpoint_paths: \"model.ckpt-50\"\n"
        "all_model_checkpoint_paths: \"model.ckpt-60\"\n";
    o.max_to_keep = 5;
    s = open_saver(f, &o);
    save_steps(s, f, 10, 10);
    ckpt_saver_free(s);
    save_40_50_60(f, &o);
    make_alias_to_other(f, other, sizeof(other), 10);
    snprintf(path, sizeof(path), "%s/checkpoint", f->dir);
    test_write_file(path, listing, sizeof(listing) - 1);
    test_log_init(&lb, CKPT_LOG_WARN);
    o.max_to_keep = 3;
    o.log = test_log_capture;
    o.log_payload = &lb;
    s = open_saver(f, &o);
    point_alias_here(f);
    save_steps(s, f, 70, 70); /* evicts alias/model.ckpt-10 */
    ckpt_saver_free(s);
    assert_int_equal(has_checkpoint_files(f->dir, 10), 2);
    assert_non_null(strstr(lb.text, "model.ckpt-10': it is outside"));
    remove_alias_and_other(f, other, 10);
}

/* A latest (model_checkpoint_path) whose index the system does not find,
 * spelt so that it reads as a listed one ("model.ckpt-40/"): the open
 * matched it by text, moved 40 last and wrote that, so merely opening a
 * saver rolled the latest back from 60 to 40, and the next save deleted
 * 50 and 60. Such a latest is not the latest (as ckpt_latest_checkpoint
 * has it): the list is left as it is. */
static void test_latest_without_index_not_moved(void **state)
{
    fixture *f = *state;
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_saver *s;
    ckpt_buf latest = CKPT_BUF_INIT;
    char path[4200];
    static const char listing[] =
        "model_checkpoint_path: \"model.ckpt-40/\"\n"
        "all_model_checkpoint_paths: \"model.ckpt-40\"\n"
        "all_model_checkpoint_paths: \"model.ckpt-50\"\n"
        "all_model_checkpoint_paths: \"model.ckpt-60\"\n";
    o.max_to_keep = 3;
    save_40_50_60(f, &o);
    snprintf(path, sizeof(path), "%s/checkpoint", f->dir);
    test_write_file(path, listing, sizeof(listing) - 1);
    s = open_saver(f, &o);
    assert_ckpt_ok(ckpt_saver_latest(s, &latest));
    assert_string_equal(ckpt__path_basename(latest.ptr), "model.ckpt-60");
    ckpt_saver_free(s);
    assert_ckpt_ok(ckpt_latest_checkpoint(&latest, NULL, f->dir));
    assert_string_equal(ckpt__path_basename(latest.ptr), "model.ckpt-60");
    o.max_to_keep = 2;
    s = open_saver(f, &o);
    save_steps(s, f, 70, 70);
    ckpt_saver_free(s);
    assert_int_equal(has_checkpoint_files(f->dir, 40), 0);
    assert_int_equal(has_checkpoint_files(f->dir, 50), 0);
    assert_int_equal(has_checkpoint_files(f->dir, 60), 2);
    ckpt_buf_dispose(&latest);
}

/* One checkpoint under two spellings that the open told apart: an
 * absolute path through a symbolic link to another directory, and the
 * bare name. The link is then pointed at this directory before the save
 * that evicts the first spelling: the deletion found the path now led
 * into this directory and deleted model.ckpt-40, which the state file
 * still names under its bare name. It is looked up under every listed
 * spelling again before it is deleted, and kept. */
static void test_evicted_spelling_through_swapped_link(void **state)
{
    fixture *f = *state;
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_saver *s;
    char real[4096], link[4200], other[4200], listing[16384], path[8400];
    char *text;
    int n;
    o.max_to_keep = 4;
    save_40_50_60(f, &o);
    assert_non_null(realpath(f->dir, real));
    snprintf(other, sizeof(other), "%s-other", real);
    assert_int_equal(mkdir(other, 0700), 0);
    snprintf(path, sizeof(path), "%s/model.ckpt-40.index", other);
    test_write_file(path, "x", 1);
    snprintf(link, sizeof(link), "%s-link", real);
    assert_int_equal(symlink(other, link), 0);
    n = snprintf(listing, sizeof(listing),
                 "model_checkpoint_path: \"model.ckpt-60\"\n"
                 "all_model_checkpoint_paths: \"%s/model.ckpt-40\"\n"
                 "all_model_checkpoint_paths: \"model.ckpt-40\"\n"
                 "all_model_checkpoint_paths: \"model.ckpt-50\"\n"
                 "all_model_checkpoint_paths: \"model.ckpt-60\"\n",
                 link);
    snprintf(path, sizeof(path), "%s/checkpoint", f->dir);
    test_write_file(path, listing, (size_t)n);
    s = open_saver(f, &o);
    assert_int_equal(ckpt_saver_num_checkpoints(s), 4);
    assert_int_equal(unlink(link), 0);
    assert_int_equal(symlink(real, link), 0);
    save_steps(s, f, 70, 70); /* evicts the first spelling */
    ckpt_saver_free(s);
    assert_int_equal(has_checkpoint_files(f->dir, 40), 2);
    text = read_state(f->dir);
    assert_non_null(
        strstr(text, "all_model_checkpoint_paths: \"model.ckpt-40\"\n"));
    free(text);
    assert_int_equal(has_checkpoint_files(other, 40), 1);
    snprintf(path, sizeof(path), "%s/model.ckpt-40.index", other);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(rmdir(other), 0);
    assert_int_equal(unlink(link), 0);
}

/* The latest checkpoint listed again, last, under a spelling that is the
 * same name lexically but finds nothing through the file system ("nosuch/"
 * does not exist; "away/" is a symlink to another directory's subdirectory,
 * so "away/.." is not f->dir): recovery dropped "model.ckpt-60" as listed
 * again, then the later spelling as its index is missing, and the newest
 * good checkpoint was no longer listed. The one that exists stays. */
static void expect_later_spelling_finding_nothing(fixture *f,
                                                  const char *second)
{
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_saver *s = open_listing_again(f, &o, second);
    ckpt_buf latest = CKPT_BUF_INIT;
    char *text;
    assert_int_equal(ckpt_saver_num_checkpoints(s), 3);
    assert_ckpt_ok(ckpt_saver_latest(s, &latest));
    assert_string_equal(ckpt__path_basename(latest.ptr), "model.ckpt-60");
    f->step = 0;
    assert_ckpt_ok(ckpt_saver_restore(s, latest.ptr));
    assert_int_equal(f->step, 60);
    ckpt_saver_free(s);
    text = read_state(f->dir);
    assert_non_null(strstr(text, "model_checkpoint_path: \"model.ckpt-60\"\n"));
    assert_null(strstr(text, second));
    free(text);
    assert_int_equal(has_checkpoint_files(f->dir, 60), 2);
    ckpt_buf_dispose(&latest);
}

static void test_recover_later_spelling_through_missing_dir(void **state)
{
    expect_later_spelling_finding_nothing(*state, "nosuch/../model.ckpt-60");
}

static void test_recover_later_spelling_through_symlink(void **state)
{
    fixture *f = *state;
    char other[4200], away[4200];
    snprintf(other, sizeof(other), "%s/other", f->dir);
    assert_int_equal(mkdir(other, 0700), 0);
    snprintf(other, sizeof(other), "%s/other/deep", f->dir);
    assert_int_equal(mkdir(other, 0700), 0);
    snprintf(away, sizeof(away), "%s/away", f->dir);
    assert_int_equal(symlink(other, away), 0);
    expect_later_spelling_finding_nothing(f, "away/../model.ckpt-60");
}

/* The directory's absolute path, without absolute_paths. */
static void test_recover_state_listing_one_checkpoint_absolute(void **state)
{
    fixture *f = *state;
    char real[PATH_MAX], abs_path[PATH_MAX + 32];
    assert_non_null(realpath(f->dir, real));
    snprintf(abs_path, sizeof(abs_path), "%s/model.ckpt-40", real);
    expect_listing_one_checkpoint_two_ways(f, abs_path);
}

/* The directory opened through a symlink ("<dir>/alias" -> "."), the
 * checkpoint listed under that absolute spelling, as TensorFlow writes it
 * for an absolute directory: only the operating system's path was taken
 * off, so the two spellings were two checkpoints and retention deleted the
 * latest one's files. aliased_parent: the fixture's own directory, put
 * back by teardown_aliased so that the whole tree is removed. */
static char *aliased_parent;

static int teardown_aliased(void **state)
{
    fixture *f = *state;
    if (aliased_parent) {
        free(f->dir);
        f->dir = aliased_parent;
        aliased_parent = NULL;
    }
    return test_dir_fixture_teardown(state);
}

static void test_recover_state_listing_one_checkpoint_via_symlink(void **state)
{
    fixture *f = *state;
    char entry[4200];
    char *alias = test_path(f->dir, "alias");
    assert_int_equal(symlink(".", alias), 0);
    aliased_parent = f->dir;
    f->dir = alias;
    snprintf(entry, sizeof(entry), "%s/model.ckpt-40", alias);
    expect_listing_one_checkpoint_two_ways(f, entry);
}

/* Save step 60 again under the state file `listing`, which names it
 * "./model.ckpt-60" and lists `listed` checkpoints at recovery: three
 * listed after, "./model.ckpt-60" no longer named, model.ckpt-60's files
 * there. The state file's text, malloc'd. */
static char *resave_60_listed_as(fixture *f, const ckpt_saver_options *o,
                                 const char *listing, size_t listed)
{
    ckpt_saver *s;
    char path[4200], *text;
    snprintf(path, sizeof(path), "%s/checkpoint", f->dir);
    test_write_file(path, listing, strlen(listing));
    s = open_saver(f, o);
    assert_int_equal(ckpt_saver_num_checkpoints(s), listed);
    save_steps(s, f, 60, 60);
    assert_int_equal(ckpt_saver_num_checkpoints(s), 3);
    ckpt_saver_free(s);
    text = read_state(f->dir);
    assert_null(strstr(text, "./model.ckpt-60"));
    assert_int_equal(has_checkpoint_files(f->dir, 60), 2);
    return text;
}

/* A checkpoint listed under another spelling ("./model.ckpt-60", the
 * latest) saved again as "model.ckpt-60": the save found no entry of that
 * name, so it removed the files while the state file still named them
 * (not set aside: a failed save left the latest checkpoint without
 * files), and then listed the checkpoint twice. It is the listed entry
 * now: replaced in its place, listed once. */
static void test_resave_checkpoint_listed_under_other_spelling(void **state)
{
    fixture *f = *state;
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    char *text;
    save_40_50_60(f, &o);
    text =
        resave_60_listed_as(f, &o,
                            "model_checkpoint_path: \"./model.ckpt-60\"\n"
                            "all_model_checkpoint_paths: \"model.ckpt-40\"\n"
                            "all_model_checkpoint_paths: \"model.ckpt-50\"\n"
                            "all_model_checkpoint_paths: \"./model.ckpt-60\"\n",
                            3);
    assert_non_null(strstr(text,
                           "all_model_checkpoint_paths: \"model.ckpt-50\"\n"
                           "all_model_checkpoint_paths: \"model.ckpt-60\"\n"));
    free(text);
}

/* As above, with the checkpoint's second name ("model.ckpt.replaced-60",
 * left by a replacement cut short) listed too: the set-aside unlists that
 * name first and then looked the entry up again by the new spelling, found
 * none, and wrote past the list's end; the state file kept
 * "./model.ckpt-60" whose files it had removed. */
static void test_resave_other_spelling_with_second_name_listed(void **state)
{
    fixture *f = *state;
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    char path[4200], from[4200], *text;
    static const char *const ends[] = {".index", ".data-00000-of-00001"};
    save_40_50_60(f, &o);
    for (size_t k = 0; k < 2; k++) {
        snprintf(from, sizeof(from), "%s/model.ckpt-40%s", f->dir, ends[k]);
        snprintf(path, sizeof(path), "%s/model.ckpt.replaced-60%s", f->dir,
                 ends[k]);
        assert_int_equal(link(from, path), 0);
    }
    text = resave_60_listed_as(
        f, &o,
        "model_checkpoint_path: \"./model.ckpt-60\"\n"
        "all_model_checkpoint_paths: \"model.ckpt-40\"\n"
        "all_model_checkpoint_paths: \"model.ckpt.replaced-60\"\n"
        "all_model_checkpoint_paths: \"model.ckpt-50\"\n"
        "all_model_checkpoint_paths: \"./model.ckpt-60\"\n",
        4);
    assert_null(strstr(text, "replaced"));
    assert_non_null(strstr(text,
                           "all_model_checkpoint_paths: \"model.ckpt-40\"\n"
                           "all_model_checkpoint_paths: \"model.ckpt-50\"\n"
                           "all_model_checkpoint_paths: \"model.ckpt-60\"\n"));
    free(text);
}

/* Everything under `root` but the directory `keep` and the files in it:
 * how many entries (files and directories) there are, nftw's walk. */
static const char *tree_keep;
static int tree_strays;

static int count_stray(const char *path, const struct stat *st, int type,
                       struct FTW *ftw)
{
    size_t k = strlen(tree_keep);
    (void)st;
    (void)type;
    if (ftw->level == 0)
        return 0;
    if (!strncmp(path, tree_keep, k) && (path[k] == '\0' || path[k] == '/'))
        return 0;
    /* the directories leading to `keep` */
    if (!strncmp(tree_keep, path, strlen(path)) &&
        tree_keep[strlen(path)] == '/')
        return 0;
    tree_strays++;
    return 0;
}

static int stray_entries(const char *root, const char *keep)
{
    tree_keep = keep;
    tree_strays = 0;
    if (nftw(root, count_stray, 16, FTW_PHYS) != 0)
        return -1;
    return tree_strays;
}

static int write_nothing(const void *src, uint64_t offset, size_t n,
                         void *payload)
{
    (void)src;
    (void)offset;
    (void)n;
    (void)payload;
    return 0;
}

/* Two variables over the same memory (one buffer under two names, or a
 * slip registering w1's memory as w2's, which left w2 unsaved) are refused
 * by name at the first save, at reserve and at a restore, as TensorFlow
 * refuses one variable under two names; a save, a reserve or a restore of
 * distinct memory is not (ranges that touch, as the fixture's w and step
 * do, an empty variable, one read and written by callbacks only). */
static void test_shared_memory_refused(void **state)
{
    fixture *f = *state;
    ckpt_saver *s = open_saver(f, NULL);
    ckpt_buf prefix = CKPT_BUF_INIT;
    ckpt_var alias = {"dense/bias", CKPT_DT_FLOAT, {1, {2}}, &f->w[4],
                      NULL,         NULL,          NULL};
    ckpt_var other_mem = {"d",  CKPT_DT_DOUBLE, {1, {3}}, f->d,
                          NULL, NULL,           NULL};
    ckpt_var empty = {"empty", CKPT_DT_FLOAT, {1, {0}}, f->w, NULL, NULL, NULL};
    ckpt_var by_callbacks = {"cb",       CKPT_DT_FLOAT, {1, {6}}, f->w,
                             read_zeros, write_nothing, NULL};
    assert_ptr_equal((char *)&f->step, (char *)f->w + sizeof(f->w));
    assert_ckpt_ok(ckpt_saver_add_var(s, &other_mem));
    assert_ckpt_ok(ckpt_saver_add_var(s, &empty));
    assert_ckpt_ok(ckpt_saver_add_var(s, &by_callbacks));
    assert_ckpt_ok(ckpt_saver_add_var(s, &alias)); /* checked when fixed */
    assert_ckpt_error(ckpt_saver_save(s, 1, NULL), CKPT_EINVAL,
                      "save: variables 'dense/kernel' (24 bytes at ");
    assert_non_null(
        strstr(ckpt_error_last()->message, "and 'dense/bias' (8 bytes at "));
    assert_non_null(strstr(ckpt_error_last()->message,
                           "share memory: give each variable its own"));
    assert_ckpt_error(ckpt_saver_reserve(s), CKPT_EINVAL,
                      "reserve: variables 'dense/kernel'");
    assert_ckpt_error(ckpt_saver_save_async(s, 1, NULL), CKPT_EINVAL,
                      "share memory");
    assert_int_equal(ckpt_saver_num_checkpoints(s), 0);
    ckpt_saver_free(s);

    /* without the alias: saved, and restored */
    s = open_saver(f, NULL);
    assert_ckpt_ok(ckpt_saver_add_var(s, &other_mem));
    assert_ckpt_ok(ckpt_saver_add_var(s, &empty));
    assert_ckpt_ok(ckpt_saver_add_var(s, &by_callbacks));
    assert_ckpt_ok(ckpt_saver_save(s, 1, &prefix));
    ckpt_saver_free(s);
    s = open_saver(f, NULL);
    alias.name = "also/kernel";
    alias.shape.dims[0] = 6;
    alias.data = f->w; /* the same start as dense/kernel */
    assert_ckpt_ok(ckpt_saver_add_var(s, &alias));
    assert_ckpt_error(ckpt_saver_restore(s, prefix.ptr), CKPT_EINVAL,
                      "restore: variables 'dense/kernel' (24 bytes at ");
    ckpt_saver_free(s);
    ckpt_buf_dispose(&prefix);
}

/* Security: tensor names are data, never paths. Names that look like
 * paths round-trip as keys and create no file anywhere. The checkpoint
 * directory lies three levels down the test's own temporary directory, and
 * the absolute name points into it too, so every place a name could point
 * is inside that tree, and the test looks nowhere else (it used to check
 * <tmp>/b, a fixed path another program may own). */
static void test_tensor_names_are_not_paths(void **state)
{
    fixture *f = *state;
    char deep[4200], absolute[4200];
    const char *names[4];
    float vals[4] = {1, 2, 3, 4}, back[4];
    ckpt_saver *s = NULL;
    ckpt_buf prefix = CKPT_BUF_INIT;
    snprintf(deep, sizeof(deep), "%s/a/b/ckpt", f->dir);
    snprintf(absolute, sizeof(absolute), "%s/abs/olute", f->dir);
    names[0] = "../../escape"; /* <tmp>/a/escape as a path */
    names[1] = absolute;
    names[2] = "a/../../b"; /* <tmp>/a/b/b */
    names[3] = "model.ckpt-1.index";
    {
        char a[4200], ab[4200];
        snprintf(a, sizeof(a), "%s/a", f->dir);
        snprintf(ab, sizeof(ab), "%s/a/b", f->dir);
        assert_int_equal(mkdir(a, 0777), 0);
        assert_int_equal(mkdir(ab, 0777), 0);
        assert_int_equal(mkdir(deep, 0777), 0);
    }
    assert_ckpt_ok(ckpt_saver_open(&s, deep, NULL));
    for (int i = 0; i < 4; i++) {
        ckpt_var v = {names[i], CKPT_DT_FLOAT, {0, {0}}, &vals[i],
                      NULL,     NULL,          NULL};
        assert_ckpt_ok(ckpt_saver_add_var(s, &v));
    }
    assert_ckpt_ok(ckpt_saver_save(s, 1, &prefix));
    ckpt_saver_free(s);
    /* Only the checkpoint's own files, nothing where the names point. */
    assert_int_equal(count_files(deep, ""), 3); /* index, data, state */
    assert_int_equal(stray_entries(f->dir, deep), 0);
    {
        ckpt_bundle_reader *r = NULL;
        assert_ckpt_ok(ckpt_bundle_reader_open(&r, prefix.ptr, NULL));
        for (int i = 0; i < 4; i++) {
            assert_ckpt_ok(
                ckpt_bundle_reader_read(r, names[i], &back[i], sizeof(float)));
            assert_true(back[i] == vals[i]);
        }
        ckpt_bundle_reader_free(r);
    }
    ckpt_buf_dispose(&prefix);
}

/* Two savers of one process on one directory: the second opens and
 * restores, but once the first has saved, the second's saves (sync and
 * async) are refused with CKPT_EBUSY naming the directory, nothing of
 * them written, and the first's list stays whole (before, each wrote the
 * state file from its own list and dropped the other's checkpoints from
 * it). Once the first is freed, the second, whose list predates the
 * first's saves, is still refused; a saver opened then saves, listing
 * every checkpoint. Savers of two directories save side by side. */
static void test_one_saver_saves_into_a_directory(void **state)
{
    fixture *f = *state;
    char other[4096];
    ckpt_saver *a = open_saver(f, NULL);
    ckpt_saver *b = open_saver(f, NULL);
    ckpt_saver *c;
    char *dir = f->dir;
    char *text;
    save_steps(a, f, 1, 2);
    assert_ckpt_ok(ckpt_saver_restore_latest(b, NULL));
    assert_ckpt_error(ckpt_saver_save(b, 3, NULL), CKPT_EBUSY,
                      "another saver of this process saves there");
    assert_non_null(strstr(ckpt_error_last()->message, dir));
    assert_ckpt_error(ckpt_saver_save_async(b, 4, NULL), CKPT_EBUSY,
                      "free it and open a new saver");
    assert_false(file_exists(dir, "model.ckpt-3.index"));
    assert_false(file_exists(dir, "model.ckpt-4.index"));
    save_steps(a, f, 5, 5);
    assert_int_equal(ckpt_saver_num_checkpoints(a), 3);
    text = read_state(dir);
    assert_non_null(strstr(text, "\"model.ckpt-2\""));
    free(text);
    /* another directory saves beside it */
    snprintf(other, sizeof(other), "%s/other", dir);
    assert_int_equal(mkdir(other, 0755), 0);
    f->dir = other;
    c = open_saver(f, NULL);
    f->dir = dir;
    save_steps(c, f, 6, 6);
    save_steps(a, f, 7, 7);
    ckpt_saver_free(c);
    ckpt_saver_free(a);
    /* b's list predates a's saves: still refused, saying so */
    assert_ckpt_error(ckpt_saver_save(b, 8, NULL), CKPT_EBUSY,
                      "this one's list of checkpoints is out of date");
    ckpt_saver_free(b);
    b = open_saver(f, NULL);
    save_steps(b, f, 8, 8);
    assert_int_equal(ckpt_saver_num_checkpoints(b), 5);
    text = read_state(dir);
    assert_non_null(strstr(text, "\"model.ckpt-1\""));
    assert_non_null(strstr(text, "\"model.ckpt-8\""));
    free(text);
    ckpt_saver_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_roundtrip_every_dtype, setup,
                                        test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_b70_naming, setup,
                                        test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_one_saver_saves_into_a_directory,
                                        setup, test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_b71_no_step_state_name, setup,
                                        test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_b72_missing_directory, setup,
                                        test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_b73_max_to_keep, setup,
                                        test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_b74_reconcile_on_reopen, setup,
                                        test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_b75_keep_all, setup,
                                        test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_b76_keep_every_n_hours, setup,
                                        test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_b76_wall_clock_stepped_back, setup,
                                        test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(
            test_b76_older_checkpoints_found_not_kept, setup,
            test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_b76_schedule_survives_reopen,
                                        setup, test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_b77_latest_checkpoint, setup,
                                        test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_b78_restore_errors, setup,
                                        test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_restore_subset_and_latest, setup,
                                        test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_b79_crash_before_state_update,
                                        setup, test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_b80_temp_files, setup,
                                        test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_retention_stays_inside_directory,
                                        setup, test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_state_paths_no_file_can_have,
                                        setup, test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_swapped_directory_untouched, setup,
                                        test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_relative_directory_after_chdir,
                                        setup, test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_absolute_paths, setup,
                                        test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_open_syncs_directory_entry, setup,
                                        test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_open_syncs_entry_of_dot, setup,
                                        test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_recover_syncs_before_deleting,
                                        setup, test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_recover_state_listing_twice, setup,
                                        test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(
            test_recover_state_listing_one_checkpoint_two_ways, setup,
            test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(
            test_recover_state_listing_one_checkpoint_via_dotdot, setup,
            test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(
            test_recover_state_listing_one_checkpoint_via_inner_link, setup,
            test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_recover_keeps_unlisted_latest,
                                        setup, test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_recover_writes_unlisted_latest,
                                        setup, test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_recover_moves_listed_latest_last,
                                        setup, test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(
            test_evicts_own_checkpoints_listed_by_absolute_path, setup,
            test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(
            test_evicts_own_checkpoints_listed_by_relative_path, setup,
            test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(
            test_evicted_name_kept_through_swapped_link, setup,
            test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(
            test_evicted_path_swapped_into_directory_kept, setup,
            test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_latest_without_index_not_moved,
                                        setup, test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(
            test_evicted_spelling_through_swapped_link, setup,
            test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(
            test_recover_later_spelling_through_missing_dir, setup,
            test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(
            test_recover_later_spelling_through_symlink, setup,
            test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(
            test_recover_state_listing_one_checkpoint_absolute, setup,
            test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(
            test_recover_state_listing_one_checkpoint_via_symlink, setup,
            teardown_aliased),
        cmocka_unit_test_setup_teardown(
            test_resave_checkpoint_listed_under_other_spelling, setup,
            test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(
            test_resave_other_spelling_with_second_name_listed, setup,
            test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_recover_removes_crash_leftovers,
                                        setup, test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_recover_removes_index_without_data,
                                        setup, test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(
            test_recover_removes_second_name_leftovers, setup,
            test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(
            test_second_saver_of_process_sweeps_nothing, setup,
            test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_recover_logs_many_drops_once,
                                        setup, test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(
            test_pending_note_spares_named_checkpoints, setup,
            test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(
            test_unsure_saves_deleted_after_next_commit, setup,
            test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_pending_note_replaced_by_rename,
                                        setup, test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_resave_removes_other_shard_counts,
                                        setup, test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_unsure_saves_survive_a_failed_save,
                                        setup, test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_state_update_failing_before_rename,
                                        setup, test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_failed_eviction_retried, setup,
                                        test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_second_name_link_fails, setup,
                                        test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_overwrite_through_second_name,
                                        setup, test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(
            test_second_name_never_outlives_its_checkpoint, setup,
            test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(
            test_restore_unrestorable_writes_nothing, setup,
            test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(
            test_restore_missing_data_file_is_damage, setup,
            test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_eviction_batch_failed_dir_sync,
                                        setup, test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(
            test_index_link_to_nothing_keeps_checkpoint, setup,
            test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(
            test_restore_latest_special_file_is_damage, setup,
            test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_restore_subset_of_none, setup,
                                        test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_restore_latest_damaged_names_older,
                                        setup, test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_repeated_step_warns_once, setup,
                                        test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_tensor_names_are_not_paths, setup,
                                        test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_shared_memory_refused, setup,
                                        test_dir_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
