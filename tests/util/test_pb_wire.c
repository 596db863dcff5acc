/* Tests for util/pb_wire: reading each wire type, the error cases, and the
 * writers producing the exact bytes TensorFlow writes. */
#include "test_util.h"

#include "common/internal.h"
#include "util/pb_wire.h"

#include <string.h>

/* BundleEntryProto of the worked example of docs/format.md §4.4. */
static const uint8_t entry_x[] = {0x08, 0x01, 0x12, 0x08, 0x12, 0x02, 0x08,
                                  0x02, 0x12, 0x02, 0x08, 0x03, 0x28, 0x18,
                                  0x35, 0x7a, 0xeb, 0xf5, 0xab};

static void test_read_entry(void **state)
{
    ckpt__pb_reader r;
    ckpt__pb_field f;
    (void)state;
    ckpt__pb_reader_init(&r, entry_x, sizeof(entry_x));
    assert_int_equal(ckpt__pb_next(&r, &f), 1);
    assert_int_equal(f.number, 1);
    assert_int_equal(f.wire_type, CKPT__PB_VARINT);
    assert_int_equal(f.u64, 1);
    assert_int_equal(ckpt__pb_next(&r, &f), 1);
    assert_int_equal(f.number, 2);
    assert_int_equal(f.wire_type, CKPT__PB_LEN);
    assert_int_equal(f.len, 8);
    assert_ptr_equal(f.data, entry_x + 4);
    {
        /* nested shape message: two dims */
        ckpt__pb_reader inner;
        ckpt__pb_field d;
        ckpt__pb_reader_init(&inner, f.data, f.len);
        assert_int_equal(ckpt__pb_next(&inner, &d), 1);
        assert_int_equal(d.number, 2);
        assert_int_equal(d.len, 2);
        assert_int_equal(ckpt__pb_next(&inner, &d), 1);
        assert_int_equal(d.len, 2);
        assert_int_equal(ckpt__pb_next(&inner, &d), 0);
    }
    assert_int_equal(ckpt__pb_next(&r, &f), 1);
    assert_int_equal(f.number, 5);
    assert_int_equal(f.u64, 24);
    assert_int_equal(ckpt__pb_next(&r, &f), 1);
    assert_int_equal(f.number, 6);
    assert_int_equal(f.wire_type, CKPT__PB_FIXED32);
    assert_int_equal(f.u64, 0xabf5eb7au);
    assert_int_equal(ckpt__pb_next(&r, &f), 0);
    assert_int_equal(ckpt__pb_next(&r, &f), 0);
}

static void test_fixed64_and_negative(void **state)
{
    /* field 1 fixed64; field 2 varint -1 as 10 bytes */
    const uint8_t msg[] = {0x09, 1,    2,    3,    4,    5,    6,
                           7,    8,    0x10, 0xff, 0xff, 0xff, 0xff,
                           0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    ckpt__pb_reader r;
    ckpt__pb_field f;
    (void)state;
    ckpt__pb_reader_init(&r, msg, sizeof(msg));
    assert_int_equal(ckpt__pb_next(&r, &f), 1);
    assert_int_equal(f.wire_type, CKPT__PB_FIXED64);
    assert_true(f.u64 == 0x0807060504030201ull);
    assert_int_equal(ckpt__pb_next(&r, &f), 1);
    assert_int_equal(f.number, 2);
    assert_true((int64_t)f.u64 == -1);
    assert_int_equal(ckpt__pb_next(&r, &f), 0);
}

static void expect_corrupt(const uint8_t *msg, size_t n)
{
    ckpt__pb_reader r;
    ckpt__pb_field f;
    const uint8_t *before;
    int rc;
    ckpt__pb_reader_init(&r, msg, n);
    do {
        before = r.p;
        rc = ckpt__pb_next(&r, &f);
    } while (rc == 1);
    assert_int_equal(rc, CKPT_ECORRUPT);
    assert_ptr_equal(r.p, before); /* cursor not advanced on failure */
}

static void test_errors(void **state)
{
    (void)state;
    /* field number 0 */
    expect_corrupt((const uint8_t *)"\x00\x01", 2);
    /* wire types 3, 4 (groups), 6, 7 */
    expect_corrupt((const uint8_t *)"\x0b", 1);
    expect_corrupt((const uint8_t *)"\x0c", 1);
    expect_corrupt((const uint8_t *)"\x0e\x00", 2);
    expect_corrupt((const uint8_t *)"\x0f\x00", 2);
    /* truncated varint value, tag, fixed32, fixed64, length and payload */
    expect_corrupt((const uint8_t *)"\x08\x80", 2);
    expect_corrupt((const uint8_t *)"\x08\x01\x88", 3);
    expect_corrupt((const uint8_t *)"\x0d\x01\x02\x03", 4);
    expect_corrupt((const uint8_t *)"\x09\x01\x02\x03\x04\x05\x06\x07", 8);
    expect_corrupt((const uint8_t *)"\x12\x80", 2);
    expect_corrupt((const uint8_t *)"\x12\x05"
                                    "abcd",
                   6);
    /* a huge length must not wrap the pointer */
    expect_corrupt((const uint8_t *)"\x12\xff\xff\xff\xff\xff\xff\xff\xff\x7f",
                   10);
    /* an over-long varint value */
    expect_corrupt((const uint8_t *)"\x08\x80\x80\x80\x80\x80\x80\x80\x80\x80"
                                    "\x80\x00",
                   12);
}

static void test_writers(void **state)
{
    ckpt_buf b = CKPT_BUF_INIT;
    ckpt_buf shape = CKPT_BUF_INIT;
    ckpt_buf dim = CKPT_BUF_INIT;
    ckpt_buf ver = CKPT_BUF_INIT;
    (void)state;
    /* BundleEntryProto of docs/format.md §4.4 */
    assert_ckpt_ok(ckpt__pb_put_varint_field(&dim, 1, 2));
    assert_ckpt_ok(ckpt__pb_put_len_field(&shape, 2, dim.ptr, dim.size));
    ckpt__buf_clear(&dim);
    assert_ckpt_ok(ckpt__pb_put_varint_field(&dim, 1, 3));
    assert_ckpt_ok(ckpt__pb_put_len_field(&shape, 2, dim.ptr, dim.size));
    assert_ckpt_ok(ckpt__pb_put_varint_field(&b, 1, 1));
    assert_ckpt_ok(ckpt__pb_put_len_field(&b, 2, shape.ptr, shape.size));
    assert_ckpt_ok(ckpt__pb_put_varint_field(&b, 5, 24));
    assert_ckpt_ok(ckpt__pb_put_fixed32_field(&b, 6, 0xabf5eb7au));
    assert_int_equal(b.size, sizeof(entry_x));
    assert_memory_equal(b.ptr, entry_x, sizeof(entry_x));

    /* header {num_shards: 1, version {producer: 1}} = 08 01 1a 02 08 01 */
    ckpt__buf_clear(&b);
    assert_ckpt_ok(ckpt__pb_put_varint_field(&ver, 1, 1));
    assert_ckpt_ok(ckpt__pb_put_varint_field(&b, 1, 1));
    assert_ckpt_ok(ckpt__pb_put_len_field(&b, 3, ver.ptr, ver.size));
    assert_int_equal(b.size, 6);
    assert_memory_equal(b.ptr, "\x08\x01\x1a\x02\x08\x01", 6);

    /* negative int64: ten bytes; a large field number: multi-byte tag */
    ckpt__buf_clear(&b);
    assert_ckpt_ok(ckpt__pb_put_varint_field(&b, 4, (uint64_t)-1));
    assert_int_equal(b.size, 11);
    ckpt__buf_clear(&b);
    assert_ckpt_ok(ckpt__pb_put_len_field(&b, 300, "", 0));
    assert_memory_equal(b.ptr, "\xe2\x12\x00", 3);
    {
        ckpt__pb_reader r;
        ckpt__pb_field f;
        ckpt__pb_reader_init(&r, b.ptr, b.size);
        assert_int_equal(ckpt__pb_next(&r, &f), 1);
        assert_int_equal(f.number, 300);
        assert_int_equal(f.len, 0);
    }
    ckpt_buf_dispose(&b);
    ckpt_buf_dispose(&shape);
    ckpt_buf_dispose(&dim);
    ckpt_buf_dispose(&ver);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read_entry),
        cmocka_unit_test(test_fixed64_and_negative),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_writers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
