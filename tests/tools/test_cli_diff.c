/* Tests for `ckpt diff`, run as a program (CKPT_CLI_PATH): equal
 * checkpoints (a TensorFlow vector and its repack, two identical
 * checkpoints written here), each kind of difference (a changed value of
 * every dtype class, missing and extra tensors, dtype and shape), bitwise
 * versus --atol comparison (NaN payloads, -0, integers never tolerant),
 * the JSON report parsed with json-c, a tensor partitioned differently on
 * each side, and usage and read errors (exit 2). */
#include "cli_json.h"
#include "cli_run.h"

#include <errno.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CKPT_CLI_PATH
#error "CKPT_CLI_PATH must name the built ckpt binary"
#endif

/* Number of lines of `text`. */
static int count_lines(const char *text)
{
    int n = 0;
    for (; *text; text++)
        n += *text == '\n';
    return n;
}

/* ---- JSON ---------------------------------------------------------------- */

static int jhas(json_object *o, const char *key)
{
    return json_object_object_get_ex(o, key, NULL);
}

/* The difference named `name`, checking its reason. */
static json_object *find_difference(json_object *root, const char *name,
                                    const char *reason)
{
    json_object *list = jget(root, "differences");
    size_t n = json_object_array_length(list);
    for (size_t i = 0; i < n; i++) {
        json_object *d = json_object_array_get_idx(list, i);
        if (strcmp(json_object_get_string(jget(d, "name")), name) == 0) {
            assert_string_equal(json_object_get_string(jget(d, "reason")),
                                reason);
            return d;
        }
    }
    fail_msg("no difference for %s in %s", name,
             json_object_to_json_string(root));
    return NULL;
}

/* ---- checkpoints written here -------------------------------------------- */

/* Changes from the base checkpoint, one bit each. */
enum {
    MUT_F32 = 1 << 0,      /* f32[1]: -2.5 -> -2.4999 */
    MUT_NAN = 1 << 1,      /* naninf[0]: another NaN payload */
    MUT_NEGZERO = 1 << 2,  /* zero[1]: +0 -> -0 */
    MUT_I8 = 1 << 3,       /* i8[0]: -128 -> -127 */
    MUT_HALF = 1 << 4,     /* half[0]: 1.5 -> 1.5009765625 */
    MUT_BF16 = 1 << 5,     /* bf16[1]: 3.140625 -> 3.15625 */
    MUT_C64 = 1 << 6,      /* c64[1]: imaginary 0.25 -> 0.2505 */
    MUT_STR = 1 << 7,      /* str[1] */
    MUT_DROP = 1 << 8,     /* no u16 */
    MUT_EXTRA = 1 << 9,    /* an extra tensor "zz_extra" */
    MUT_DTYPE = 1 << 10,   /* i64 stored as int32 */
    MUT_SHAPE = 1 << 11,   /* f64 of shape [1, 2] */
    MUT_I64 = 1 << 12,     /* i64[0]: INT64_MIN -> INT64_MAX */
    MUT_F64 = 1 << 13,     /* f64[0]: 0.1 -> 0.1 + 2^-40 */
    MUT_BOOL = 1 << 14,    /* bool[1]: false -> true */
    MUT_BOOL_TWO = 1 << 15 /* bool[0]: stored byte 1 -> 2, still true */
};

static void write_checkpoint(const char *prefix, unsigned mut)
{
    ckpt_bundle_writer *w = NULL;
    ckpt_shape s3 = {1, {3}}, s2 = {1, {2}}, s12 = {2, {1, 2}};
    float f[3] = {0.1f, -2.5f, 1e-8f};
    double d[2] = {0.1, -1e300};
    int8_t i8[3] = {-128, 0, 127};
    uint16_t u16[2] = {0, 65535};
    int64_t i64[2] = {INT64_MIN, INT64_MAX};
    int32_t i32[2] = {1, 2};
    uint8_t b[2] = {1, 0};
    uint16_t half[3] = {0x3e00, 0xc000, 0x7c00};
    uint16_t bf16[2] = {0x3f80, 0x4049};
    float c64[4] = {1.0f, -2.0f, 0.5f, 0.25f};
    float zero[2] = {1.0f, 0.0f};
    ckpt_slice strs[3] = {{"a\"b\n", 4}, {"\xff\x01", 2}, {"", 0}};
    uint32_t nan_bits = 0x7fc00000u;
    float naninf[2];
    if (mut & MUT_F32)
        f[1] = -2.4999f;
    if (mut & MUT_NAN)
        nan_bits = 0x7fc00001u;
    memcpy(&naninf[0], &nan_bits, 4);
    naninf[1] = -INFINITY;
    if (mut & MUT_NEGZERO)
        zero[1] = -0.0f;
    if (mut & MUT_I8)
        i8[0] = -127;
    if (mut & MUT_HALF)
        half[0] = 0x3e01;
    if (mut & MUT_BF16)
        bf16[1] = 0x404a;
    if (mut & MUT_C64)
        c64[3] = 0.2505f;
    if (mut & MUT_STR)
        strs[1].ptr = "\xff\x02";
    if (mut & MUT_I64)
        i64[0] = INT64_MAX;
    if (mut & MUT_F64)
        d[0] = 0.1 + ldexp(1.0, -40);
    if (mut & MUT_BOOL)
        b[1] = 1;
    if (mut & MUT_BOOL_TWO)
        b[0] = 2;
    assert_ckpt_ok(ckpt_bundle_writer_open(&w, prefix, NULL));
    assert_ckpt_ok(
        ckpt_bundle_writer_add(w, "f32", CKPT_DT_FLOAT, &s3, f, sizeof(f)));
    assert_ckpt_ok(ckpt_bundle_writer_add(w, "f64", CKPT_DT_DOUBLE,
                                          (mut & MUT_SHAPE) ? &s12 : &s2, d,
                                          sizeof(d)));
    assert_ckpt_ok(
        ckpt_bundle_writer_add(w, "i8", CKPT_DT_INT8, &s3, i8, sizeof(i8)));
    if (!(mut & MUT_DROP))
        assert_ckpt_ok(ckpt_bundle_writer_add(w, "u16", CKPT_DT_UINT16, &s2,
                                              u16, sizeof(u16)));
    if (mut & MUT_DTYPE)
        assert_ckpt_ok(ckpt_bundle_writer_add(w, "i64", CKPT_DT_INT32, &s2, i32,
                                              sizeof(i32)));
    else
        assert_ckpt_ok(ckpt_bundle_writer_add(w, "i64", CKPT_DT_INT64, &s2, i64,
                                              sizeof(i64)));
    assert_ckpt_ok(
        ckpt_bundle_writer_add(w, "bool", CKPT_DT_BOOL, &s2, b, sizeof(b)));
    assert_ckpt_ok(ckpt_bundle_writer_add(w, "half", CKPT_DT_HALF, &s3, half,
                                          sizeof(half)));
    assert_ckpt_ok(ckpt_bundle_writer_add(w, "bf16", CKPT_DT_BFLOAT16, &s2,
                                          bf16, sizeof(bf16)));
    assert_ckpt_ok(ckpt_bundle_writer_add(w, "c64", CKPT_DT_COMPLEX64, &s2, c64,
                                          sizeof(c64)));
    assert_ckpt_ok(ckpt_bundle_writer_add(w, "naninf", CKPT_DT_FLOAT, &s2,
                                          naninf, sizeof(naninf)));
    assert_ckpt_ok(ckpt_bundle_writer_add(w, "zero", CKPT_DT_FLOAT, &s2, zero,
                                          sizeof(zero)));
    assert_ckpt_ok(ckpt_bundle_writer_add_strings(w, "str", &s3, strs, 3));
    if (mut & MUT_EXTRA)
        assert_ckpt_ok(ckpt_bundle_writer_add(w, "zz_extra", CKPT_DT_INT32, &s2,
                                              i32, sizeof(i32)));
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);
}

#define BASE_TENSORS 12

/* A directory with the base checkpoint "a" and "b" with changes `mut`. */
typedef struct pair {
    char *dir, *a, *b;
} pair;

static pair make_pair(unsigned mut)
{
    pair p;
    p.dir = test_make_temp_dir();
    p.a = test_path(p.dir, "a");
    p.b = test_path(p.dir, "b");
    write_checkpoint(p.a, 0);
    write_checkpoint(p.b, mut);
    return p;
}

static void pair_free(pair *p)
{
    free(p->a);
    free(p->b);
    test_remove_tree(p->dir);
}

/* `ckpt diff A B [extra]` expecting exit 1; returns the JSON report. */
static json_object *diff_json(const pair *p, const char *atol)
{
    cli_run r;
    json_object *root;
    if (atol)
        RUN(r, "diff", p->a, p->b, "--json", "--atol", atol);
    else
        RUN_STATUS(r, 1, "diff", p->a, p->b, "--json");
    assert_string_equal(r.err, "");
    root = parse_json(r.out);
    assert_string_equal(json_object_get_string(jget(root, "a")), p->a);
    assert_string_equal(json_object_get_string(jget(root, "b")), p->b);
    assert_false(json_object_get_boolean(jget(root, "equal")));
    run_free(&r);
    return root;
}

/* ---- tests --------------------------------------------------------------- */

static void test_equal_written_here(void **state)
{
    pair p = make_pair(0);
    cli_run r;
    json_object *root;
    char want[256];
    (void)state;
    RUN_STATUS(r, 0, "diff", p.a, p.b);
    assert_string_equal(r.err, "");
    snprintf(want, sizeof(want), "%s and %s: equal, %d tensors\n", p.a, p.b,
             BASE_TENSORS);
    assert_string_equal(r.out, want); /* NaN equals the same NaN bitwise */
    run_free(&r);
    /* the .index file names the same checkpoint */
    RUN_STATUS(r, 0, "diff", p.a, "--json", "--", p.b);
    root = parse_json(r.out);
    assert_true(json_object_get_boolean(jget(root, "equal")));
    assert_int_equal(json_object_array_length(jget(root, "differences")), 0);
    assert_int_equal(json_object_get_int(jget(root, "tensors")), BASE_TENSORS);
    json_object_put(root);
    run_free(&r);
    pair_free(&p);
}

static void test_equal_tf_vector_and_repack(void **state)
{
    static const char *const vecs[][2] = {
        {"tictactoe_ckpt_manager", "ckpt-19"},
        {"rl_collection_sharded", "ckpt-5"},
        {"tfx_estimator_saver", "model.ckpt-1000"}};
    (void)state;
    for (size_t i = 0; i < sizeof(vecs) / sizeof(vecs[0]); i++) {
        char *src = test_tf_vector(vecs[i][0]);
        char *out, *dst, *index, *want;
        cli_run r;
        if (!src)
            return;
        out = test_make_temp_dir();
        dst = test_path(out, "repacked");
        want = test_path(src, vecs[i][1]);
        RUN_STATUS(r, 0, "repack", src, dst);
        run_free(&r);
        /* a directory (latest checkpoint) against a prefix */
        RUN_STATUS(r, 0, "diff", src, dst);
        expect_contains(r.out, want);
        expect_contains(r.out, ": equal, ");
        assert_int_equal(count_lines(r.out), 1);
        run_free(&r);
        index = test_path(out, "repacked.index");
        RUN_STATUS(r, 0, "diff", index, src, "--atol", "0");
        expect_contains(r.out, "equal within atol 0");
        run_free(&r);
        /* dropping tensors makes them "only in A" */
        free(dst);
        dst = test_path(out, "no-slots");
        RUN_STATUS(r, 0, "repack", src, dst, "--include",
                   "global_step|save_counter");
        run_free(&r);
        RUN_STATUS(r, 1, "diff", src, dst);
        expect_contains(r.out, ": only in A\n");
        expect_lacks(r.out, "only in B");
        run_free(&r);
        free(index);
        free(want);
        free(dst);
        free(src);
        test_remove_tree(out);
    }
}

static void test_changed_value(void **state)
{
    pair p = make_pair(MUT_F32);
    cli_run r;
    json_object *root, *d;
    char want[256];
    (void)state;
    RUN_STATUS(r, 1, "diff", p.a, p.b);
    assert_string_equal(r.err, "");
    snprintf(want, sizeof(want),
             "f32: values differ: 1 of 3 elements, max abs diff %.9g\n"
             "%s and %s: 1 of %d tensors differ\n",
             (double)(-2.4999f) - (-2.5), p.a, p.b, BASE_TENSORS);
    assert_string_equal(r.out, want);
    run_free(&r);
    root = diff_json(&p, NULL);
    assert_int_equal(json_object_array_length(jget(root, "differences")), 1);
    d = find_difference(root, "f32", "values");
    assert_int_equal(json_object_get_int64(jget(d, "num_different")), 1);
    assert_int_equal(json_object_get_int64(jget(d, "num_elements")), 3);
    assert_float_equal(json_object_get_double(jget(d, "max_abs_diff")),
                       (double)(-2.4999f) - (-2.5), 1e-12);
    json_object_put(root);
    /* the order of A and B does not matter */
    RUN_STATUS(r, 1, "diff", p.b, p.a);
    expect_contains(r.out, "f32: values differ: 1 of 3 elements");
    run_free(&r);
    pair_free(&p);
}

/* Every class of dtype: its changed element is found and measured. */
static void test_changed_values_every_kind(void **state)
{
    pair p = make_pair(MUT_I8 | MUT_HALF | MUT_BF16 | MUT_C64 | MUT_STR |
                       MUT_I64 | MUT_F64 | MUT_BOOL);
    json_object *root, *d;
    cli_run r;
    (void)state;
    root = diff_json(&p, NULL);
    assert_int_equal(json_object_array_length(jget(root, "differences")), 8);
    d = find_difference(root, "i8", "values");
    assert_int_equal(json_object_get_int64(jget(d, "max_abs_diff")), 1);
    assert_int_equal(json_object_get_int64(jget(d, "num_different")), 1);
    d = find_difference(root, "half", "values");
    assert_float_equal(json_object_get_double(jget(d, "max_abs_diff")),
                       0.0009765625, 1e-12);
    d = find_difference(root, "bf16", "values");
    assert_float_equal(json_object_get_double(jget(d, "max_abs_diff")),
                       0.015625, 1e-12);
    d = find_difference(root, "c64", "values");
    assert_int_equal(json_object_get_int64(jget(d, "num_different")), 1);
    assert_float_equal(json_object_get_double(jget(d, "max_abs_diff")),
                       (double)0.2505f - 0.25, 1e-12);
    d = find_difference(root, "str", "values");
    assert_int_equal(json_object_get_int64(jget(d, "num_different")), 1);
    assert_false(jhas(d, "max_abs_diff"));
    /* INT64_MIN vs INT64_MAX: 2^64 - 1, exactly */
    d = find_difference(root, "i64", "values");
    assert_true(json_object_get_uint64(jget(d, "max_abs_diff")) == UINT64_MAX);
    d = find_difference(root, "f64", "values");
    assert_true(json_object_get_double(jget(d, "max_abs_diff")) ==
                (0.1 + ldexp(1.0, -40)) - 0.1);
    d = find_difference(root, "bool", "values");
    assert_int_equal(json_object_get_int64(jget(d, "max_abs_diff")), 1);
    json_object_put(root);
    RUN_STATUS(r, 1, "diff", p.a, p.b);
    expect_contains(r.out, "i64: values differ: 1 of 2 elements, max abs "
                           "diff 18446744073709551615\n");
    expect_contains(r.out, "str: values differ: 1 of 3 elements\n");
    expect_contains(r.out, "8 of 12 tensors differ\n");
    run_free(&r);
    pair_free(&p);
}

static void test_tolerance(void **state)
{
    pair p = make_pair(MUT_F32 | MUT_HALF | MUT_BF16 | MUT_C64 | MUT_F64);
    pair q = make_pair(MUT_F32 | MUT_I8);
    json_object *root, *d;
    cli_run r;
    (void)state;
    /* 1e-4, 2^-10, 2^-6, 5e-4 and 2^-40 apart: all within 0.02 */
    RUN_STATUS(r, 0, "diff", p.a, p.b, "--atol", "0.02");
    expect_contains(r.out, "equal within atol 0.02, 12 tensors\n");
    run_free(&r);
    RUN_STATUS(r, 0, "diff", p.a, p.b, "--atol=0.02", "--json");
    root = parse_json(r.out);
    assert_true(json_object_get_boolean(jget(root, "equal")));
    assert_float_equal(json_object_get_double(jget(root, "atol")), 0.02, 0);
    json_object_put(root);
    run_free(&r);
    /* 1e-3: bfloat16's 2^-6 is too far */
    root = diff_json(&p, "1e-3");
    assert_int_equal(json_object_array_length(jget(root, "differences")), 1);
    find_difference(root, "bf16", "values");
    json_object_put(root);
    /* 2e-4: half's 2^-10 and complex's 5e-4 (one component) too */
    root = diff_json(&p, "2e-4");
    assert_int_equal(json_object_array_length(jget(root, "differences")), 3);
    find_difference(root, "half", "values");
    d = find_difference(root, "c64", "values");
    assert_int_equal(json_object_get_int64(jget(d, "num_different")), 1);
    json_object_put(root);
    /* 1e-9: only float64's 2^-40 is within */
    root = diff_json(&p, "1e-9");
    assert_int_equal(json_object_array_length(jget(root, "differences")), 4);
    json_object_put(root);
    /* integers are never tolerant */
    root = diff_json(&q, "1000");
    assert_int_equal(json_object_array_length(jget(root, "differences")), 1);
    d = find_difference(root, "i8", "values");
    assert_int_equal(json_object_get_int64(jget(d, "max_abs_diff")), 1);
    json_object_put(root);
    pair_free(&p);
    pair_free(&q);
}

/* Bitwise by default: another NaN payload and -0 differ; --atol 0 takes
 * both NaNs and both zeros as equal. */
/* A bool stored as byte 2 is true, as TensorFlow reads it: equal to one
 * stored as 1 (--help: bools compare as read). */
static void test_bool_compared_as_read(void **state)
{
    pair p = make_pair(MUT_BOOL_TWO);
    cli_run r;
    (void)state;
    RUN_STATUS(r, 0, "diff", p.a, p.b);
    expect_contains(r.out, ": equal, ");
    run_free(&r);
    pair_free(&p);
}

static void test_nan_and_negative_zero(void **state)
{
    pair p = make_pair(MUT_NAN | MUT_NEGZERO);
    json_object *root, *d;
    cli_run r;
    (void)state;
    root = diff_json(&p, NULL);
    assert_int_equal(json_object_array_length(jget(root, "differences")), 2);
    d = find_difference(root, "naninf", "values");
    assert_string_equal(json_object_get_string(jget(d, "max_abs_diff")), "nan");
    d = find_difference(root, "zero", "values");
    assert_int_equal(json_object_get_int64(jget(d, "num_different")), 1);
    assert_true(json_object_get_double(jget(d, "max_abs_diff")) == 0.0);
    json_object_put(root);
    RUN_STATUS(r, 1, "diff", p.a, p.b);
    expect_contains(r.out, "naninf: values differ: 1 of 2 elements, max abs "
                           "diff nan\n");
    expect_contains(r.out, "zero: values differ: 1 of 2 elements, max abs "
                           "diff 0\n");
    run_free(&r);
    RUN_STATUS(r, 0, "diff", p.a, p.b, "--atol", "0");
    run_free(&r);
    pair_free(&p);
}

static void test_missing_and_extra(void **state)
{
    pair p = make_pair(MUT_DROP | MUT_EXTRA);
    json_object *root, *d;
    cli_run r;
    (void)state;
    RUN_STATUS(r, 1, "diff", p.a, p.b);
    expect_contains(r.out, "u16: only in A\n");
    expect_contains(r.out, "zz_extra: only in B\n");
    expect_contains(r.out, "2 of 13 tensors differ\n");
    run_free(&r);
    root = diff_json(&p, "1");
    assert_int_equal(json_object_array_length(jget(root, "differences")), 2);
    d = find_difference(root, "u16", "only_in_a");
    assert_false(jhas(d, "num_different"));
    assert_false(jhas(d, "max_abs_diff"));
    find_difference(root, "zz_extra", "only_in_b");
    json_object_put(root);
    RUN_STATUS(r, 1, "diff", p.b, p.a);
    expect_contains(r.out, "u16: only in B\n");
    expect_contains(r.out, "zz_extra: only in A\n");
    run_free(&r);
    pair_free(&p);
}

/* A [4, 3] float tensor "w" (w[i][j] = 10 i + j, one element changed by
 * `bump`) and an int32 scalar "step", with "w" written whole (`split` 0),
 * as two row blocks (1) or as three pieces, a row block and the other
 * rows' two column blocks (2). */
static void write_split(const char *prefix, int split, float bump)
{
    ckpt_bundle_writer *w = NULL;
    ckpt_shape full = {2, {4, 3}}, scalar = {0, {0}};
    float v[12], piece[12];
    int32_t step = 7;
    for (int i = 0; i < 12; i++)
        v[i] = (float)(10 * (i / 3) + i % 3);
    v[7] += bump;
    assert_ckpt_ok(ckpt_bundle_writer_open(&w, prefix, NULL));
    if (split == 0) {
        assert_ckpt_ok(
            ckpt_bundle_writer_add(w, "w", CKPT_DT_FLOAT, &full, v, sizeof(v)));
    } else if (split == 1) {
        ckpt_slice_extent top[2] = {{0, 2}, {0, 3}},
                          bottom[2] = {{2, 2}, {0, 3}};
        assert_ckpt_ok(ckpt_bundle_writer_add_slice(w, "w", CKPT_DT_FLOAT,
                                                    &full, top, v, 24));
        assert_ckpt_ok(ckpt_bundle_writer_add_slice(w, "w", CKPT_DT_FLOAT,
                                                    &full, bottom, v + 6, 24));
    } else {
        ckpt_slice_extent row0[2] = {{0, 1}, {0, 3}};
        ckpt_slice_extent left[2] = {{1, 3}, {0, 2}},
                          right[2] = {{1, 3}, {2, 1}};
        assert_ckpt_ok(ckpt_bundle_writer_add_slice(w, "w", CKPT_DT_FLOAT,
                                                    &full, row0, v, 12));
        for (int i = 0; i < 3; i++) {
            piece[2 * i] = v[3 * (i + 1)];
            piece[2 * i + 1] = v[3 * (i + 1) + 1];
        }
        assert_ckpt_ok(ckpt_bundle_writer_add_slice(w, "w", CKPT_DT_FLOAT,
                                                    &full, left, piece, 24));
        for (int i = 0; i < 3; i++)
            piece[i] = v[3 * (i + 1) + 2];
        assert_ckpt_ok(ckpt_bundle_writer_add_slice(w, "w", CKPT_DT_FLOAT,
                                                    &full, right, piece, 12));
    }
    assert_ckpt_ok(ckpt_bundle_writer_add(w, "step", CKPT_DT_INT32, &scalar,
                                          &step, sizeof(step)));
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);
}

/* A tensor split differently (or not at all) on each side is compared by
 * its values; its pieces are neither compared nor counted on their own
 * (a distributed checkpoint saved on 2 ranks against one saved on 3). */
static void test_partitioned_differently(void **state)
{
    char *dir = test_make_temp_dir();
    char *p[4];
    cli_run r;
    json_object *root;
    char want[512];
    (void)state;
    for (int k = 0; k < 4; k++) {
        char name[8];
        snprintf(name, sizeof(name), "c%d", k);
        p[k] = test_path(dir, name);
        write_split(p[k], k < 3 ? k : 2, k < 3 ? 0.0f : 0.5f);
    }
    for (int x = 0; x < 3; x++) {
        for (int y = 0; y < 3; y++) {
            RUN_STATUS(r, 0, "diff", p[x], p[y]);
            snprintf(want, sizeof(want), "%s and %s: equal, 2 tensors\n", p[x],
                     p[y]);
            assert_string_equal(r.out, want);
            run_free(&r);
        }
    }
    /* one element changed, in a piece the other side splits otherwise */
    RUN_STATUS(r, 1, "diff", p[1], p[3]);
    expect_contains(r.out, "w: values differ: 1 of 12 elements, max abs diff "
                           "0.5\n");
    expect_contains(r.out, "1 of 2 tensors differ\n");
    assert_int_equal(count_lines(r.out), 2);
    run_free(&r);
    RUN_STATUS(r, 1, "diff", p[0], p[3], "--json");
    root = parse_json(r.out);
    assert_int_equal(json_object_get_int(jget(root, "tensors")), 2);
    assert_int_equal(json_object_array_length(jget(root, "differences")), 1);
    assert_int_equal(
        json_object_get_int(
            jget(find_difference(root, "w", "values"), "num_different")),
        1);
    json_object_put(root);
    run_free(&r);
    for (int k = 0; k < 4; k++)
        free(p[k]);
    test_remove_tree(dir);
}

static void test_dtype_and_shape(void **state)
{
    pair p = make_pair(MUT_DTYPE | MUT_SHAPE);
    json_object *root, *d, *s;
    cli_run r;
    (void)state;
    RUN_STATUS(r, 1, "diff", p.a, p.b);
    expect_contains(r.out, "i64: dtype int64 in A, int32 in B\n");
    expect_contains(r.out, "f64: shape [2] in A, [1, 2] in B\n");
    run_free(&r);
    root = diff_json(&p, NULL);
    assert_int_equal(json_object_array_length(jget(root, "differences")), 2);
    d = find_difference(root, "i64", "dtype");
    assert_string_equal(json_object_get_string(jget(d, "dtype_a")), "int64");
    assert_string_equal(json_object_get_string(jget(d, "dtype_b")), "int32");
    assert_false(jhas(d, "num_different"));
    d = find_difference(root, "f64", "shape");
    s = jget(d, "shape_b");
    assert_int_equal(json_object_array_length(s), 2);
    assert_int_equal(json_object_get_int(json_object_array_get_idx(s, 0)), 1);
    assert_int_equal(json_object_get_int(json_object_array_get_idx(s, 1)), 2);
    assert_int_equal(json_object_array_length(jget(d, "shape_a")), 1);
    json_object_put(root);
    pair_free(&p);
}

static void test_usage_errors(void **state)
{
    pair p = make_pair(0);
    char *missing = test_path(p.dir, "nope");
    cli_run r;
    (void)state;
    RUN_STATUS(r, 2, "diff");
    expect_contains(r.err, "ckpt diff: need two checkpoints");
    expect_contains(r.err, "usage: ckpt diff A B [--atol X] [--json]");
    assert_string_equal(r.out, "");
    run_free(&r);
    RUN_STATUS(r, 2, "diff", p.a);
    run_free(&r);
    RUN_STATUS(r, 2, "diff", p.a, p.b, p.a);
    expect_contains(r.err, "unexpected argument");
    run_free(&r);
    RUN_STATUS(r, 2, "diff", p.a, p.b, "--atol");
    expect_contains(r.err,
                    "ckpt diff: --atol needs a number >= 0, e.g. --atol=1e-6");
    run_free(&r);
    RUN_STATUS(r, 2, "diff", p.a, p.b, "--atol", "-1");
    expect_contains(r.err, "ckpt diff: bad --atol '-1': needs a number >= 0, "
                           "e.g. --atol=1e-6");
    run_free(&r);
    RUN_STATUS(r, 2, "diff", p.a, p.b, "--atol=abc");
    expect_contains(r.err, "bad --atol 'abc'");
    run_free(&r);
    RUN_STATUS(r, 2, "diff", p.a, p.b, "--atol", "nan");
    run_free(&r);
    RUN_STATUS(r, 2, "diff", p.a, p.b, "--bogus");
    expect_contains(r.err, "unknown option '--bogus'");
    run_free(&r);
    RUN_STATUS(r, 2, "diff", p.a, missing);
    expect_contains(r.err, "ckpt diff: ");
    expect_contains(r.err, "nope.index");
    assert_string_equal(r.out, "");
    run_free(&r);
    RUN_STATUS(r, 0, "help", "diff");
    expect_contains(r.out, "usage: ckpt diff A B [--atol X] [--json]");
    expect_contains(r.out, "only_in_a");
    /* every member the document can have, for a jq user */
    expect_contains(r.out, "\"atol\"? (when\n             given), "
                           "\"tensors\" (the tensors in A or B");
    expect_contains(r.out, "\"num_different\"?,\n"
                           "             \"num_elements\"?, \"dtype_a\", "
                           "\"dtype_b\"?");
    expect_contains(r.out, "\"shape_a\", \"shape_b\"? (a\n"
                           "             shape difference: arrays of "
                           "dimensions)}]");
    run_free(&r);
    RUN_STATUS(r, 0, "--help");
    expect_contains(r.out, "  diff     Compare two checkpoints");
    run_free(&r);
    free(missing);
    pair_free(&p);
}

/* A damaged record cannot be compared: exit 2, naming the tensor; so is
 * an unparsable state file. */
static void test_damaged_input(void **state)
{
    pair p = make_pair(0);
    char *data = test_path(p.dir, "b.data-00000-of-00001");
    const ckpt_tensor_entry *e = NULL;
    ckpt_bundle_reader *rd = NULL;
    size_t n = 0;
    uint8_t *bytes;
    cli_run r;
    (void)state;
    assert_ckpt_ok(ckpt_bundle_reader_open(&rd, p.b, NULL));
    assert_ckpt_ok(ckpt_bundle_reader_find(&e, rd, "i8"));
    bytes = test_read_file(data, &n);
    assert_non_null(bytes);
    assert_true((size_t)e->offset < n);
    bytes[e->offset] ^= 0x01;
    test_write_file(data, bytes, n);
    ckpt_bundle_reader_free(rd);
    free(bytes);
    RUN_STATUS(r, 2, "diff", p.a, p.b);
    expect_contains(r.err, "ckpt diff: ");
    expect_contains(r.err, "'i8'");
    run_free(&r);
    /* a directory whose state file cannot be parsed is damaged input too:
     * 2 (where ls, inspect, verify and repack exit 1), since 1 means
     * "different"; README says which */
    {
        static const char text[] = "garbage {\n";
        char *state_file = test_path(p.dir, "checkpoint");
        test_write_file(state_file, text, sizeof(text) - 1);
        free(state_file);
    }
    RUN_STATUS(r, 2, "diff", p.dir, p.a);
    expect_contains(r.err, "ckpt diff: ");
    expect_contains(r.err, "checkpoint:1:1: unknown field \"garbage\"");
    run_free(&r);
    free(data);
    pair_free(&p);
}

/* Only descriptors 0-3 in the child: each checkpoint's index opens (one
 * at a time), A's data file takes the last one, B's cannot be opened. */
static void four_descriptors(const void *arg)
{
    struct rlimit four = {4, 4};
    (void)arg;
    for (int fd = 3; fd < 64; fd++)
        close(fd);
    if (setrlimit(RLIMIT_NOFILE, &four) != 0)
        _exit(126);
}

/* A data file that cannot be opened for want of descriptors (which the
 * library reports as CKPT_ENOMEM) is named with the tensor and the
 * system's reason: diff said only 'out of memory'. */
static void test_out_of_descriptors_named(void **state)
{
    pair p;
    const char *args[4] = {"diff", NULL, NULL, NULL};
    cli_run r;
    (void)state;
#ifdef CKPT_CLI_UNDER_MEMCHECK
    skip(); /* valgrind needs descriptors of its own */
#endif
    p = make_pair(0);
    args[1] = p.a;
    args[2] = p.b;
    r = cli_run_with(CKPT_CLI_PATH, NULL, args, four_descriptors, NULL);
    expect_status(&r, 2);
    expect_contains(r.err, "ckpt diff: ");
    expect_contains(r.err, "b.data-00000-of-00001");
    expect_contains(r.err, "Too many open files");
    run_free(&r);
    pair_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_equal_written_here),
        cmocka_unit_test(test_equal_tf_vector_and_repack),
        cmocka_unit_test(test_changed_value),
        cmocka_unit_test(test_changed_values_every_kind),
        cmocka_unit_test(test_tolerance),
        cmocka_unit_test(test_bool_compared_as_read),
        cmocka_unit_test(test_nan_and_negative_zero),
        cmocka_unit_test(test_missing_and_extra),
        cmocka_unit_test(test_dtype_and_shape),
        cmocka_unit_test(test_partitioned_differently),
        cmocka_unit_test(test_usage_errors),
        cmocka_unit_test(test_damaged_input),
        cmocka_unit_test(test_out_of_descriptors_named),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
