/* Tests for dtype sizes and names and shape arithmetic. */
#include "test_util.h"

#include <math.h>
#include <string.h>

static void test_dtype_sizes_and_names(void **state)
{
    (void)state;
    assert_int_equal(ckpt_dtype_size(CKPT_DT_FLOAT), 4);
    assert_int_equal(ckpt_dtype_size(CKPT_DT_COMPLEX128), 16);
    assert_int_equal(ckpt_dtype_size(CKPT_DT_BFLOAT16), 2);
    assert_int_equal(ckpt_dtype_size(CKPT_DT_STRING), 0);
    assert_int_equal(ckpt_dtype_size(29), 0); /* int4: unsupported */
    assert_string_equal(ckpt_dtype_name(CKPT_DT_FLOAT), "float32");
    assert_string_equal(ckpt_dtype_name(CKPT_DT_HALF), "float16");
    assert_string_equal(ckpt_dtype_name(CKPT_DT_INT64), "int64");
    assert_null(ckpt_dtype_name(99));
    /* 29-32 are named in messages only, outside ckpt_dtype */
    assert_null(ckpt_dtype_name(29));
    assert_int_equal(ckpt_dtype_from_name("int4"), CKPT_DT_INVALID);
    assert_false(ckpt_dtype_is_supported(29));
    assert_int_equal(ckpt_dtype_from_name("string"), CKPT_DT_STRING);
    assert_int_equal(ckpt_dtype_from_name("nope"), CKPT_DT_INVALID);
    assert_true(ckpt_dtype_is_supported(CKPT_DT_STRING));
    assert_false(ckpt_dtype_is_supported(CKPT_DT_VARIANT));
    assert_false(ckpt_dtype_is_supported(CKPT_DT_RESOURCE));
}

static void test_shape_arithmetic(void **state)
{
    ckpt_shape s = {2, {3, 4}};
    ckpt_shape scalar = {0, {0}};
    ckpt_shape zero = {2, {0, 5}};
    ckpt_shape huge = {2, {INT64_MAX / 2, 3}};
    ckpt_shape neg = {1, {-1}};
    int64_t n;
    (void)state;
    assert_ckpt_ok(ckpt_shape_num_elements(&n, &s));
    assert_int_equal(n, 12);
    assert_ckpt_ok(ckpt_shape_num_elements(&n, &scalar));
    assert_int_equal(n, 1);
    assert_ckpt_ok(ckpt_shape_num_elements(&n, &zero));
    assert_int_equal(n, 0);
    assert_ckpt_error(ckpt_shape_num_elements(&n, &huge), CKPT_EINVAL,
                      "overflow");
    assert_ckpt_error(ckpt_shape_num_elements(&n, &neg), CKPT_EINVAL,
                      "negative");
    assert_ckpt_ok(ckpt_tensor_byte_size(&n, CKPT_DT_DOUBLE, &s));
    assert_int_equal(n, 96);
    assert_ckpt_error(ckpt_tensor_byte_size(&n, CKPT_DT_STRING, &s),
                      CKPT_ENOTSUP, "string");
}

static void test_shape_format(void **state)
{
    ckpt_shape s = {3, {3, 3, 32}};
    ckpt_shape scalar = {0, {0}};
    char out[64];
    char small[5];
    (void)state;
    assert_int_equal(ckpt_shape_format(out, sizeof(out), &s), 10);
    assert_string_equal(out, "[3, 3, 32]");
    ckpt_shape_format(out, sizeof(out), &scalar);
    assert_string_equal(out, "[]");
    assert_int_equal(ckpt_shape_format(small, sizeof(small), &s), 10);
    assert_string_equal(small, "[3, ");
    /* not a shape: said, not printed in part */
    s.rank = CKPT_MAX_RANK + 1;
    ckpt_shape_format(out, sizeof(out), &s);
    assert_string_equal(out, "(bad rank 33)");
    s.rank = -1;
    ckpt_shape_format(out, sizeof(out), &s);
    assert_string_equal(out, "(bad rank -1)");
    /* and the log levels' names, the options-only ones included */
    assert_string_equal(ckpt_log_level_name(CKPT_LOG_ERROR), "error");
    assert_string_equal(ckpt_log_level_name(CKPT_LOG_OFF), "off");
    assert_string_equal(ckpt_log_level_name(CKPT_LOG_DEFAULT), "default");
    assert_string_equal(ckpt_log_level_name(99), "unknown");
}

static void test_half_and_bfloat16(void **state)
{
    (void)state;
    assert_true(ckpt_half_to_float(0x3c00) == 1.0f);
    assert_true(ckpt_half_to_float(0xc000) == -2.0f);
    assert_true(ckpt_half_to_float(0x0001) ==
                ldexpf(1.0f, -24)); /* subnormal */
    assert_true(ckpt_half_to_float(0x7bff) == 65504.0f);
    assert_true(isinf(ckpt_half_to_float(0xfc00)) &&
                ckpt_half_to_float(0xfc00) < 0);
    assert_true(isnan(ckpt_half_to_float(0x7e00)));
    assert_true(signbit(ckpt_half_to_float(0x8000)));
    assert_true(ckpt_bfloat16_to_float(0x3f80) == 1.0f);
    assert_true(ckpt_bfloat16_to_float(0xc040) == -3.0f);
    assert_true(isnan(ckpt_bfloat16_to_float(0x7fc0)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dtype_sizes_and_names),
        cmocka_unit_test(test_shape_arithmetic),
        cmocka_unit_test(test_shape_format),
        cmocka_unit_test(test_half_and_bfloat16),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
