/* Tests for `ckpt ls` when a save lands while it reads the directory: the
 * state file replaced (as a saver commits one) between ls's reads, by
 * swap_state_shim.so preloaded into the tool. ls used to read the state
 * file twice, the list from the first read and the latest from the
 * second, so such a listing could mark no checkpoint latest; it reads the
 * file once. */
#include "cli_run.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef CKPT_CLI_PATH
#error "CKPT_CLI_PATH must name the built ckpt binary"
#endif
#ifndef CKPT_SWAP_STATE_SHIM
#error "CKPT_SWAP_STATE_SHIM must name swap_state_shim.so"
#endif

static void write_text(const char *dir, const char *name, const char *text)
{
    char *p = test_path(dir, name);
    test_write_file(p, text, strlen(text));
    free(p);
}

/* Checkpoints model.ckpt-1..3 of one float tensor in `dir`. */
static void save_three(const char *dir)
{
    float w[2] = {1.0f, 2.0f};
    ckpt_var v = {"w", CKPT_DT_FLOAT, {1, {2}}, NULL, NULL, NULL, NULL};
    ckpt_saver *s = NULL;
    v.data = w;
    assert_ckpt_ok(ckpt_saver_open(&s, dir, NULL));
    assert_ckpt_ok(ckpt_saver_add_var(s, &v));
    for (int64_t step = 1; step <= 3; step++)
        assert_ckpt_ok(ckpt_saver_save(s, step, NULL));
    ckpt_saver_free(s);
}

/* `ckpt ls --json dir` with the state file replaced by `next` just before
 * the tool's open number `at` of it. */
static cli_run ls_swapping(const char *dir, const char *next, int at)
{
    char *state = test_path(dir, "checkpoint");
    char at_text[16];
    const char *asan = getenv("ASAN_OPTIONS");
    char *asan_saved = asan ? strdup(asan) : NULL;
    char asan_opts[1024];
    cli_run r;
    snprintf(at_text, sizeof(at_text), "%d", at);
    /* under ASan the preloaded shim comes before its runtime */
    snprintf(asan_opts, sizeof(asan_opts), "%s%sverify_asan_link_order=0",
             asan ? asan : "", asan && *asan ? ":" : "");
    setenv("ASAN_OPTIONS", asan_opts, 1);
    setenv("CKPT_SWAP_STATE_PATH", state, 1);
    setenv("CKPT_SWAP_STATE_FROM", next, 1);
    setenv("CKPT_SWAP_STATE_AT", at_text, 1);
    setenv("LD_PRELOAD", CKPT_SWAP_STATE_SHIM, 1);
    RUN(r, "ls", "--json", dir);
    unsetenv("LD_PRELOAD");
    unsetenv("CKPT_SWAP_STATE_PATH");
    unsetenv("CKPT_SWAP_STATE_FROM");
    unsetenv("CKPT_SWAP_STATE_AT");
    if (asan_saved)
        setenv("ASAN_OPTIONS", asan_saved, 1);
    else
        unsetenv("ASAN_OPTIONS");
    free(asan_saved);
    free(state);
    return r;
}

/* The listing's "latest" (NULL when null) and its number of rows. */
static void expect_listing(const cli_run *r, const char *latest, size_t rows)
{
    json_object *o = json_tokener_parse(r->out), *v = NULL, *list = NULL;
    assert_non_null(o);
    assert_true(json_object_object_get_ex(o, "latest", &v));
    if (latest) {
        assert_non_null(v); /* null: no row marked latest */
        assert_string_equal(json_object_get_string(v), latest);
    } else
        assert_null(v);
    assert_true(json_object_object_get_ex(o, "checkpoints", &list));
    assert_int_equal(json_object_array_length(list), rows);
    for (size_t i = 0; i < rows; i++) {
        json_object *row = json_object_array_get_idx(list, i), *l = NULL;
        json_object *path = NULL;
        assert_true(json_object_object_get_ex(row, "latest", &l));
        assert_true(json_object_object_get_ex(row, "prefix", &path));
        assert_int_equal(json_object_get_boolean(l),
                         latest &&
                             strcmp(json_object_get_string(path), latest) == 0);
    }
    json_object_put(o);
}

/* A save replaces the state file (model.ckpt-2 latest of two) with one
 * naming model.ckpt-3 after ls has read it: the listing is the first
 * state file's, its latest marked. */
static void test_ls_state_replaced_after_read(void **state)
{
    char *dir = test_make_temp_dir(), *side = test_make_temp_dir();
    char *next = test_path(side, "next");
    static const char older[] =
        "model_checkpoint_path: \"model.ckpt-2\"\n"
        "all_model_checkpoint_paths: \"model.ckpt-1\"\n"
        "all_model_checkpoint_paths: \"model.ckpt-2\"\n";
    static const char newer[] =
        "model_checkpoint_path: \"model.ckpt-3\"\n"
        "all_model_checkpoint_paths: \"model.ckpt-1\"\n"
        "all_model_checkpoint_paths: \"model.ckpt-2\"\n"
        "all_model_checkpoint_paths: \"model.ckpt-3\"\n";
    cli_run r;
    (void)state;
    save_three(dir);

    /* the shim works: replaced before the first open, ls lists the new */
    write_text(dir, "checkpoint", older);
    write_text(side, "next", newer);
    r = ls_swapping(dir, next, 1);
    expect_status(&r, 0);
    expect_contains(r.err, "swap_state_shim: open 1 of ");
    expect_listing(&r, "model.ckpt-3", 3);
    run_free(&r);

    /* replaced after the first read: one state file's listing */
    write_text(dir, "checkpoint", older);
    write_text(side, "next", newer);
    r = ls_swapping(dir, next, 2);
    expect_status(&r, 0);
    expect_listing(&r, "model.ckpt-2", 2);
    expect_lacks(r.err, "swap_state_shim");
    run_free(&r);

    free(next);
    test_remove_tree(side);
    test_remove_tree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ls_state_replaced_after_read),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
