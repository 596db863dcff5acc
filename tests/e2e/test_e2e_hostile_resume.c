/* tests/e2e/test_e2e_hostile_resume.c - ckpt-train resuming from a
 * checkpoint whose checksums hold but whose reading position could not
 * have been written by it (an out-of-range sample index in data/order, a
 * negative data/cursor, a data/epoch at INT64_MAX, an all-zero
 * data/rng_state) or a model no training writes (a NaN weight, a beta
 * power of 1): it refuses with a message
 * naming the checkpoint and the value, exit code 1, instead of indexing outside
 * its data set, and before it writes anything into the directory. */
#include "e2e_util.h"

#include "ckpt.h"

#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Rewrite the bundle at `prefix` with every tensor as it was, except that
 * `name` (a fixed-size tensor) gets `patch` (bytes) at byte `at`. */
static void rewrite_with_patch(const char *prefix, const char *name, size_t at,
                               const void *patch, size_t n)
{
    ckpt_bundle_reader *r = NULL;
    ckpt_bundle_writer *w = NULL;
    char tmp[4200];
    snprintf(tmp, sizeof(tmp), "%s-patched", prefix);
    assert_ckpt_ok(ckpt_bundle_reader_open(&r, prefix, NULL));
    assert_ckpt_ok(ckpt_bundle_writer_open(&w, tmp, NULL));
    for (size_t i = 0; i < ckpt_bundle_reader_count(r); i++) {
        const ckpt_tensor_entry *e = ckpt_bundle_reader_entry(r, i);
        size_t bytes = (size_t)e->size;
        uint8_t *buf = malloc(bytes ? bytes : 1);
        assert_non_null(buf);
        assert_ckpt_ok(ckpt_bundle_reader_read_entry(r, e, buf, bytes));
        if (strcmp(e->name, name) == 0) {
            assert_true(at + n <= bytes);
            memcpy(buf + at, patch, n);
        }
        assert_ckpt_ok(ckpt_bundle_writer_add(w, e->name, e->dtype, &e->shape,
                                              buf, bytes));
        free(buf);
    }
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);
    ckpt_bundle_reader_free(r);
    /* the patched bundle takes the original's name */
    {
        char from[4300], to[4300];
        snprintf(from, sizeof(from), "%s.index", tmp);
        snprintf(to, sizeof(to), "%s.index", prefix);
        assert_int_equal(rename(from, to), 0);
        snprintf(from, sizeof(from), "%s.data-00000-of-00001", tmp);
        snprintf(to, sizeof(to), "%s.data-00000-of-00001", prefix);
        assert_int_equal(rename(from, to), 0);
    }
}

/* Train a small model to step 20 in `dir`, then patch its latest
 * checkpoint (named in *latest) as rewrite_with_patch does. */
static void train_and_patch(const char *dir, ckpt_buf *latest, const char *name,
                            size_t at, const void *patch, size_t n)
{
    e2e_proc p;
    e2e_run(&p, CKPT_TRAIN_PATH,
            E2E_ARGS("--dir", dir, "--steps", "20", "--save-steps", "10",
                     "--hidden", "16", "--layers", "1", "--batch", "8",
                     "--quiet"));
    e2e_expect_exit(&p, 0);
    e2e_proc_free(&p);
    assert_ckpt_ok(ckpt_latest_checkpoint(latest, NULL, dir));
    rewrite_with_patch(latest->ptr, name, at, patch, n);
}

static void expect_refused(const char *dir, const char *name, size_t at,
                           const void *patch, size_t n, const char *message)
{
    ckpt_buf latest = CKPT_BUF_INIT;
    e2e_proc p;
    train_and_patch(dir, &latest, name, at, patch, n);
    e2e_run(&p, CKPT_CLI_PATH, E2E_ARGS("verify", latest.ptr));
    e2e_expect_exit(&p, 0); /* the checksums hold */
    e2e_proc_free(&p);
    e2e_run(&p, CKPT_TRAIN_PATH,
            E2E_ARGS("--dir", dir, "--steps", "30", "--save-steps", "10",
                     "--hidden", "16", "--layers", "1", "--batch", "8",
                     "--quiet"));
    e2e_expect_exit(&p, 1);
    e2e_expect_contains("ckpt-train stderr", p.err, latest.ptr, 1);
    e2e_expect_contains("ckpt-train stderr", p.err, message, 1);
    e2e_proc_free(&p);
    ckpt_buf_dispose(&latest);
}

static void test_restored_position_out_of_range(void **state)
{
    char *root = test_make_temp_dir();
    char *dir = test_path(root, "order");
    int32_t huge = 0x7ffffff0;
    int64_t negative = -100000;
    int64_t last = INT64_MAX;
    uint64_t zero_state[4] = {0, 0, 0, 0};
    (void)state;
    expect_refused(dir, "data/order", 0, &huge, sizeof(huge),
                   "data/order is not a permutation of 0..");
    free(dir);
    dir = test_path(root, "cursor");
    expect_refused(dir, "data/cursor", 0, &negative, sizeof(negative),
                   "data/cursor -100000 is outside 0..");
    free(dir);
    dir = test_path(root, "epoch"); /* its next increment would overflow */
    expect_refused(dir, "data/epoch", 0, &last, sizeof(last),
                   "data/epoch 9223372036854775807 is outside 0..");
    free(dir);
    dir = test_path(root, "rng"); /* xoshiro256** would draw 0 for ever */
    expect_refused(dir, "data/rng_state", 0, zero_state, sizeof(zero_state),
                   "data/rng_state is all zero");
    free(dir);
    test_remove_tree(root);
}

/* Model values no training writes: a NaN weight (ReLU hides it from the
 * loss, so the NaN check never fired and every later checkpoint stored
 * it), a beta power of 1 (Adam's step divided by zero), a negative Adam
 * second moment. */
static void test_restored_model_out_of_range(void **state)
{
    char *root = test_make_temp_dir();
    char *dir = test_path(root, "nan");
    float nan = NAN, one = 1.0f, negative = -1.0f;
    (void)state;
    expect_refused(dir, "dense/kernel", 4, &nan, sizeof(nan),
                   "dense/kernel element 1 is nan");
    free(dir);
    dir = test_path(root, "power");
    expect_refused(dir, "beta1_power", 0, &one, sizeof(one),
                   "beta1_power is 1, outside [0, 1)");
    free(dir);
    dir = test_path(root, "moment");
    expect_refused(dir, "dense_1/bias/Adam_1", 0, &negative, sizeof(negative),
                   "dense_1/bias/Adam_1 element 0 is -1");
    free(dir);
    test_remove_tree(root);
}

/* A checkpoint whose stored global step differs from its name's (7 in
 * model.ckpt-20): the "restored" line names the checkpoint restored, not
 * the one the hook then saves at step 7. */
static void test_restored_line_names_restored_checkpoint(void **state)
{
    char *root = test_make_temp_dir();
    char *dir = test_path(root, "gs");
    ckpt_buf latest = CKPT_BUF_INIT;
    int64_t seven = 7;
    char want[4300];
    e2e_proc p;
    (void)state;
    train_and_patch(dir, &latest, "global_step", 0, &seven, sizeof(seven));
    e2e_run(&p, CKPT_TRAIN_PATH,
            E2E_ARGS("--dir", dir, "--steps", "12", "--save-steps", "5",
                     "--mode", "sync", "--hidden", "16", "--layers", "1",
                     "--batch", "8", "--quiet"));
    e2e_expect_exit(&p, 0);
    snprintf(want, sizeof(want), "restored %s at step 7\n", latest.ptr);
    e2e_expect_contains("ckpt-train stdout", p.out, want, 1);
    e2e_proc_free(&p);
    ckpt_buf_dispose(&latest);
    free(dir);
    test_remove_tree(root);
}

/* Append n bytes to the malloc'd *out of *len bytes. */
static void append(uint8_t **out, size_t *len, const void *p, size_t n)
{
    *out = realloc(*out, *len + n + 1);
    assert_non_null(*out);
    memcpy(*out + *len, p, n);
    *len += n;
}

/* The names in `dir` and the bytes of each file, one after the other
 * (names sorted, each ending in a NUL), to compare a directory before and
 * after a run (malloc'd, *len bytes). */
static uint8_t *dir_contents(const char *dir, size_t *len)
{
    uint8_t *out = NULL;
    char *names[64];
    size_t n = 0;
    struct dirent *de;
    DIR *d = opendir(dir);
    assert_non_null(d);
    *len = 0;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        assert_true(n < 64);
        names[n] = strdup(de->d_name);
        assert_non_null(names[n++]);
    }
    closedir(d);
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            char *t = names[j];
            names[j] = names[j - 1];
            names[j - 1] = t;
        }
    for (size_t i = 0; i < n; i++) {
        char *path = test_path(dir, names[i]);
        size_t bytes_len = 0;
        uint8_t *bytes = test_read_file(path, &bytes_len);
        assert_non_null(bytes);
        append(&out, len, names[i], strlen(names[i]) + 1);
        append(&out, len, bytes, bytes_len);
        free(bytes);
        free(path);
        free(names[i]);
    }
    return out;
}

/* A position no run could write in a checkpoint whose stored global step
 * (7) is not its name's (model.ckpt-20): the checkpoint hook would save the
 * restored state at step 7 as soon as the session is created (and, with
 * --keep, drop an older good checkpoint for it). The position is refused
 * before that: nothing in the directory changes. */
static void test_refused_before_initial_save(void **state)
{
    char *root = test_make_temp_dir();
    char *dir = test_path(root, "gs");
    ckpt_buf latest = CKPT_BUF_INIT;
    int32_t huge = 0x7ffffff0;
    int64_t seven = 7;
    uint8_t *before, *after;
    size_t before_len, after_len;
    e2e_proc p;
    (void)state;
    train_and_patch(dir, &latest, "global_step", 0, &seven, sizeof(seven));
    rewrite_with_patch(latest.ptr, "data/order", 0, &huge, sizeof(huge));
    before = dir_contents(dir, &before_len);
    e2e_run(&p, CKPT_TRAIN_PATH,
            E2E_ARGS("--dir", dir, "--steps", "30", "--save-steps", "10",
                     "--keep", "2", "--hidden", "16", "--layers", "1",
                     "--batch", "8", "--quiet"));
    e2e_expect_exit(&p, 1);
    e2e_expect_contains("ckpt-train stderr", p.err, latest.ptr, 1);
    e2e_expect_contains("ckpt-train stderr", p.err,
                        "data/order is not a permutation of 0..", 1);
    e2e_proc_free(&p);
    after = dir_contents(dir, &after_len);
    assert_int_equal(after_len, before_len);
    assert_memory_equal(after, before, before_len);
    free(before);
    free(after);
    ckpt_buf_dispose(&latest);
    free(dir);
    test_remove_tree(root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_restored_position_out_of_range),
        cmocka_unit_test(test_restored_model_out_of_range),
        cmocka_unit_test(test_restored_line_names_restored_checkpoint),
        cmocka_unit_test(test_refused_before_initial_save),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
