/* Tests for the `ckpt` tool on checkpoints holding a partitioned tensor
 * (written with ckpt_bundle_writer_add_slice), run as a program
 * (CKPT_CLI_PATH): inspect lists the tensor once with its full shape and
 * slice count and prints its assembled values (text and --json), verify
 * reads it assembled and reports pieces that do not cover it, and diff
 * compares the assembled values. */
#include "cli_json.h"
#include "cli_run.h"

#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CKPT_CLI_PATH
#error "CKPT_CLI_PATH must name the built ckpt binary"
#endif

typedef struct fixture {
    char *dir;
    char path[3][512]; /* prefixes a, b, c */
} fixture;

/* "w" float32 [4, 3] = 0.5, 1.5, ... 11.5 in row pieces (only the top one
 * when `gap`; element 7 changed to 99 when `changed`), plus "b" [2]. */
static void write_ckpt(const char *prefix, int gap, int changed)
{
    ckpt_bundle_writer *w = NULL;
    ckpt_shape full = {.rank = 2, .dims = {4, 3}};
    ckpt_shape b = {.rank = 1, .dims = {2}};
    ckpt_slice_extent top[2] = {{0, 2}, {0, 3}};
    ckpt_slice_extent bottom[2] = {{2, 2}, {0, CKPT_SLICE_FULL}};
    float v[12];
    for (int i = 0; i < 12; i++)
        v[i] = (float)i + 0.5f;
    if (changed)
        v[7] = 99.0f;
    assert_ckpt_ok(ckpt_bundle_writer_open(&w, prefix, NULL));
    assert_ckpt_ok(ckpt_bundle_writer_add_slice(w, "w", CKPT_DT_FLOAT, &full,
                                                bottom, v + 6, 24));
    if (!gap)
        assert_ckpt_ok(ckpt_bundle_writer_add_slice(w, "w", CKPT_DT_FLOAT,
                                                    &full, top, v, 24));
    assert_ckpt_ok(ckpt_bundle_writer_add(w, "b", CKPT_DT_FLOAT, &b, v,
                                          2 * sizeof(float)));
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);
}

static int setup(void **state)
{
    fixture *f = test_dir_fixture_new(sizeof(*f), offsetof(fixture, dir));
    for (int i = 0; i < 3; i++)
        snprintf(f->path[i], sizeof(f->path[i]), "%s/%c", f->dir, 'a' + i);
    write_ckpt(f->path[0], 0, 0);
    write_ckpt(f->path[1], 0, 1);
    write_ckpt(f->path[2], 1, 0);
    *state = f;
    return 0;
}

static void test_inspect_text(void **state)
{
    fixture *f = *state;
    cli_run r;
    RUN_STATUS(r, 0, "inspect", f->path[0], "--values=all");
    expect_contains(r.out, "2 tensors"); /* slice entries are not listed */
    expect_contains(r.out, "(partitioned, 2 slices)");
    expect_contains(r.out, "[4, 3]");
    expect_contains(r.out, "[0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5, "
                           "9.5, 10.5, 11.5]");
    expect_lacks(r.out, "\\x00");
    expect_lacks(r.out, "not supported");
    run_free(&r);
}

static void test_inspect_json(void **state)
{
    fixture *f = *state;
    json_object *root, *tensors, *t = NULL, *x;
    cli_run r;
    RUN_STATUS(r, 0, "inspect", f->path[0], "--json", "--values=all",
               "--tensor", "w");
    root = parse_json(r.out);
    tensors = jget(root, "tensors");
    assert_int_equal(json_object_array_length(tensors), 1);
    t = json_object_array_get_idx(tensors, 0);
    x = jget(t, "name");
    assert_string_equal(json_object_get_string(x), "w");
    x = jget(t, "num_slices");
    assert_int_equal(json_object_get_int(x), 2);
    x = jget(t, "num_elements");
    assert_int_equal(json_object_get_int(x), 12);
    /* the full tensor's bytes, not its (record-less) entry's 0 */
    x = jget(t, "bytes");
    assert_int_equal(json_object_get_int(x), 48);
    x = jget(t, "shape");
    assert_int_equal(json_object_array_length(x), 2);
    assert_int_equal(json_object_get_int(json_object_array_get_idx(x, 0)), 4);
    assert_int_equal(json_object_get_int(json_object_array_get_idx(x, 1)), 3);
    x = jget(t, "values");
    assert_int_equal(json_object_array_length(x), 12);
    for (int i = 0; i < 12; i++)
        assert_true(json_object_get_double(json_object_array_get_idx(x, i)) ==
                    (double)i + 0.5);
    json_object_put(root);
    run_free(&r);
}

static void test_verify(void **state)
{
    fixture *f = *state;
    char damaged[560];
    cli_run r;
    RUN_STATUS(r, 0, "verify", f->path[0]);
    expect_contains(r.out, "OK, 2 tensors");
    run_free(&r);
    /* the bottom rows only */
    RUN_STATUS(r, 1, "verify", f->path[2]);
    expect_contains(r.out, "DAMAGED, 1 of 2 tensors");
    expect_contains(r.err, "tensor 'w': slices cover 6 of 12 elements");
    run_free(&r);
    RUN_STATUS(r, 1, "inspect", f->path[2], "--values");
    expect_contains(r.err, "slices cover 6 of 12 elements");
    run_free(&r);
    /* a damaged piece damages its tensor: counted once, as a tensor */
    {
        char data[600];
        size_t n;
        uint8_t *bytes;
        snprintf(damaged, sizeof(damaged), "%s/d", f->dir);
        write_ckpt(damaged, 0, 0);
        snprintf(data, sizeof(data), "%s.data-00000-of-00001", damaged);
        bytes = test_read_file(data, &n);
        assert_non_null(bytes);
        bytes[0] ^= 0x40; /* the bottom piece's first element */
        test_write_file(data, bytes, n);
        free(bytes);
    }
    RUN_STATUS(r, 1, "verify", damaged);
    expect_contains(r.out, "DAMAGED, 1 of 2 tensors");
    /* said once, by the tensor (whose message ends with its piece's) */
    expect_contains(r.err, "tensor 'w': slice ");
    {
        const char *first = strstr(r.err, "checksum mismatch");
        assert_non_null(first);
        assert_null(strstr(first + 1, "checksum mismatch"));
    }
    run_free(&r);
    /* --json names the damaged piece as messages do, not by its binary
     * slice key */
    RUN_STATUS(r, 1, "verify", damaged, "--json");
    expect_contains(r.out, "\"name\": \"w (piece ");
    expect_lacks(r.out, "\\u0000");
    run_free(&r);
}

static void test_diff(void **state)
{
    fixture *f = *state;
    cli_run r;
    RUN_STATUS(r, 0, "diff", f->path[0], f->path[0]);
    run_free(&r);
    RUN_STATUS(r, 1, "diff", f->path[0], f->path[1]);
    /* the assembled tensor only: its pieces are not compared on their own */
    expect_contains(r.out, "w: values differ: 1 of 12 elements, max abs diff "
                           "91.5");
    expect_lacks(r.out, "of 6 elements");
    expect_lacks(r.out, "\nb: ");
    assert_true(strncmp(r.out, "b: ", 3) != 0);
    expect_contains(r.out, "1 of 2 tensors differ");
    run_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_inspect_text),
        cmocka_unit_test(test_inspect_json),
        cmocka_unit_test(test_verify),
        cmocka_unit_test(test_diff),
    };
    return cmocka_run_group_tests(tests, setup, test_dir_fixture_teardown);
}
