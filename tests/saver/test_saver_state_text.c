/* The state file a saver writes, byte for byte: each kept checkpoint's
 * timestamp is formatted once (when the checkpoint is added, or read at
 * open) and its text reused at every later write, so after each save the
 * file must be exactly what ckpt_state_format makes of the values it
 * holds, and each value the time its checkpoint was saved (a text left
 * behind by a list that moved would still read back as canonical), through
 * saves, an async save, a save over an existing step, a reopen and
 * retention. Timestamps read from a file written by hand in other
 * spellings ("1.50") are written back in the canonical one. */
#include "saver_test_util.h"

#include "ckpt/saver.h"
#include "ckpt/state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_STEP 32

typedef struct fixture {
    char *dir;
    float w[4];
    fake_clock clk;
    double when[MAX_STEP]; /* each step's save time, as the file says */
} fixture;

static int setup(void **state)
{
    fixture *f = test_dir_fixture_new(sizeof(*f), offsetof(fixture, dir));
    fake_clock_init(&f->clk, 1000.0, 1700000000.1);
    *state = f;
    return 0;
}

/* A state file in TensorFlow's layout listing steps 1 to 5, its
 * timestamps spelled otherwise than the writer would (trailing zeros, more
 * digits than needed, an exponent), each checkpoint's index and data file
 * present; f->when gets their values. */
static void write_hand_state(fixture *f)
{
    static const char *const stamps[] = {"1.50", "0.30000000000000004",
                                         "1673735799.6857660",
                                         "4.9406564584124654e-324", "12e2"};
    static const double values[] = {1.5, 0.1 + 0.2, 1673735799.685766, 5e-324,
                                    1200.0};
    const char *dir = f->dir;
    char text[2048], path[4200], name[64];
    size_t used = 0;
    used += (size_t)snprintf(text + used, sizeof(text) - used,
                             "model_checkpoint_path: \"model.ckpt-5\"\n");
    for (int i = 1; i <= 5; i++) {
        used += (size_t)snprintf(text + used, sizeof(text) - used,
                                 "all_model_checkpoint_paths: "
                                 "\"model.ckpt-%d\"\n",
                                 i);
        snprintf(name, sizeof(name), "model.ckpt-%d.index", i);
        test_touch(dir, name);
        snprintf(name, sizeof(name), "model.ckpt-%d.data-00000-of-00001", i);
        test_touch(dir, name);
    }
    for (int i = 0; i < 5; i++) {
        used += (size_t)snprintf(text + used, sizeof(text) - used,
                                 "all_model_checkpoint_timestamps: %s\n",
                                 stamps[i]);
        f->when[i + 1] = values[i];
    }
    used += (size_t)snprintf(text + used, sizeof(text) - used,
                             "last_preserved_timestamp: 1673735000.50\n");
    snprintf(path, sizeof(path), "%s/checkpoint", dir);
    test_write_file(path, text, used);
}

/* The state file on disk is byte for byte ckpt_state_format of what it
 * holds, and lists `n` checkpoints, each with the time it was saved. */
static void assert_canonical_state(const fixture *f, size_t n)
{
    const char *dir = f->dir;
    char path[4200];
    size_t size = 0;
    uint8_t *raw;
    ckpt_state st = CKPT_STATE_INIT;
    ckpt_buf fresh = CKPT_BUF_INIT;
    snprintf(path, sizeof(path), "%s/checkpoint", dir);
    raw = test_read_file(path, &size);
    assert_non_null(raw);
    assert_ckpt_ok(ckpt_state_read(&st, NULL, dir));
    assert_int_equal(st.num_paths, n);
    assert_int_equal(st.num_timestamps, n);
    for (size_t i = 0; i < n; i++) {
        int step = -1;
        assert_int_equal(sscanf(st.all_paths[i], "model.ckpt-%d", &step), 1);
        assert_true(step > 0 && step < MAX_STEP);
        if (st.timestamps[i] != f->when[step])
            fail_msg("%s: timestamp %.17g, saved at %.17g", st.all_paths[i],
                     st.timestamps[i], f->when[step]);
    }
    assert_ckpt_ok(ckpt_state_format(&fresh, &st));
    if (fresh.size != size || memcmp(fresh.ptr, raw, size) != 0)
        fail_msg("state file written:\n%.*s\nformatted afresh:\n%s", (int)size,
                 (const char *)raw, fresh.ptr);
    ckpt_buf_dispose(&fresh);
    ckpt_state_dispose(&st);
    free(raw);
}

static ckpt_saver *open_saver(fixture *f, int max_to_keep)
{
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_saver *s = NULL;
    ckpt_var w = {"w", CKPT_DT_FLOAT, {1, {4}}, f->w, NULL, NULL, NULL};
    o.max_to_keep = max_to_keep;
    o.clock = &f->clk.clock;
    assert_ckpt_ok(ckpt_saver_open(&s, f->dir, &o));
    assert_ckpt_ok(ckpt_saver_add_var(s, &w));
    return s;
}

/* One synchronous save at `step`, the wall clock a little later first
 * (steps of 0.1 s: sums whose shortest text takes many digits). */
static void save_at(fixture *f, ckpt_saver *s, int64_t step)
{
    f->clk.now += 0.1;
    f->w[0] = (float)step;
    assert_ckpt_ok(ckpt_saver_save(s, step, NULL));
    f->when[step] = ckpt_clock_wall(&f->clk.clock);
}

static void test_state_text_across_saves_and_reopen(void **state)
{
    fixture *f = *state;
    ckpt_saver *s;
    char path[4200];
    size_t size = 0;
    uint8_t *raw;
    char *text;
    uint64_t t = 0;
    write_hand_state(f);
    s = open_saver(f, CKPT_KEEP_ALL);
    assert_int_equal(ckpt_saver_num_checkpoints(s), 5);
    for (int64_t step = 10; step <= 14; step++) {
        save_at(f, s, step);
        assert_canonical_state(f, (size_t)(step - 4));
    }
    /* read at open, written back canonically: never the file's own text */
    snprintf(path, sizeof(path), "%s/checkpoint", f->dir);
    raw = test_read_file(path, &size);
    text = calloc(1, size + 1);
    assert_non_null(raw);
    assert_non_null(text);
    memcpy(text, raw, size);
    free(raw);
    assert_non_null(strstr(text, "timestamps: 1.5\n"));
    assert_non_null(strstr(text, "timestamps: 0.30000000000000004\n"));
    assert_non_null(strstr(text, "timestamps: 1673735799.685766\n"));
    assert_non_null(strstr(text, "timestamps: 5e-324\n"));
    assert_non_null(strstr(text, "timestamps: 1200.0\n"));
    assert_non_null(strstr(text, "last_preserved_timestamp: 1673735000.5\n"));
    free(text);
    /* the writer thread's commit */
    f->clk.now += 0.1;
    assert_ckpt_ok(ckpt_saver_save_async(s, 15, &t));
    assert_ckpt_ok(ckpt_saver_wait(s, t, -1));
    f->when[15] = ckpt_clock_wall(&f->clk.clock);
    assert_canonical_state(f, 11);
    /* a step saved again: set aside, then moved to the end of the list */
    save_at(f, s, 12);
    assert_canonical_state(f, 11);
    assert_ckpt_ok(ckpt_saver_close(s, -1));
    ckpt_saver_free(s);
    /* reopened: every time formatted again from what the file says */
    s = open_saver(f, CKPT_KEEP_ALL);
    save_at(f, s, 16);
    assert_canonical_state(f, 12);
    ckpt_saver_free(s);
    /* retention trims the list (and the texts with it) */
    s = open_saver(f, 3);
    save_at(f, s, 17);
    assert_canonical_state(f, 3);
    save_at(f, s, 18);
    assert_canonical_state(f, 3);
    ckpt_saver_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_state_text_across_saves_and_reopen,
                                        setup, test_dir_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
