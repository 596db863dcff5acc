/* Tests for util/coding: fixed-width and varint encoders, and the decoders'
 * rejection of truncated, over-long and out-of-range varints. */
#include "test_util.h"

#include "common/internal.h"
#include "util/coding.h"

#include <string.h>

static void test_fixed(void **state)
{
    uint8_t b[8];
    ckpt_buf buf = CKPT_BUF_INIT;
    (void)state;
    ckpt__encode_fixed32(b, 0x04030201u);
    assert_memory_equal(b, "\x01\x02\x03\x04", 4);
    assert_int_equal(ckpt__decode_fixed32(b), 0x04030201u);
    ckpt__encode_fixed64(b, 0x0807060504030201ull);
    assert_memory_equal(b, "\x01\x02\x03\x04\x05\x06\x07\x08", 8);
    assert_true(ckpt__decode_fixed64(b) == 0x0807060504030201ull);
    assert_ckpt_ok(ckpt__put_fixed32(&buf, 0xdeadbeefu));
    assert_ckpt_ok(ckpt__put_fixed64(&buf, 0xdb4775248b80fb57ull));
    assert_int_equal(buf.size, 12);
    assert_memory_equal(buf.ptr,
                        "\xef\xbe\xad\xde\x57\xfb\x80\x8b\x24\x75\x47\xdb", 12);
    ckpt_buf_dispose(&buf);
}

static void test_varint_encode(void **state)
{
    struct {
        uint64_t v;
        const char *bytes;
        size_t n;
    } cases[] = {
        {0, "\x00", 1},
        {1, "\x01", 1},
        {127, "\x7f", 1},
        {128, "\x80\x01", 2},
        {300, "\xac\x02", 2},
        {613, "\xe5\x04", 2},
        {0xffffffffull, "\xff\xff\xff\xff\x0f", 5},
        {UINT64_MAX, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 10},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint8_t b[CKPT__VARINT64_MAX];
        ckpt_buf buf = CKPT_BUF_INIT;
        const uint8_t *p = b;
        uint64_t v;
        size_t n = ckpt__encode_varint64(b, cases[i].v);
        assert_int_equal(n, cases[i].n);
        assert_int_equal(ckpt__varint_length(cases[i].v), cases[i].n);
        assert_memory_equal(b, cases[i].bytes, n);
        assert_true(ckpt__get_varint64(&p, b + n, &v));
        assert_true(v == cases[i].v);
        assert_ptr_equal(p, b + n);
        assert_ckpt_ok(ckpt__put_varint64(&buf, cases[i].v));
        assert_int_equal(buf.size, n);
        assert_memory_equal(buf.ptr, cases[i].bytes, n);
        if (cases[i].v <= UINT32_MAX) {
            uint32_t v32;
            p = b;
            assert_true(ckpt__get_varint32(&p, b + n, &v32));
            assert_int_equal(v32, (uint32_t)cases[i].v);
            ckpt__buf_clear(&buf);
            assert_ckpt_ok(ckpt__put_varint32(&buf, (uint32_t)cases[i].v));
            assert_memory_equal(buf.ptr, cases[i].bytes, n);
        }
        ckpt_buf_dispose(&buf);
    }
}

static void test_varint_roundtrip_many(void **state)
{
    (void)state;
    for (int shift = 0; shift < 64; shift++) {
        for (int delta = -2; delta <= 2; delta++) {
            uint64_t v = ((uint64_t)1 << shift) + (uint64_t)(int64_t)delta;
            uint8_t b[CKPT__VARINT64_MAX];
            const uint8_t *p = b;
            uint64_t out;
            size_t n = ckpt__encode_varint64(b, v);
            assert_true(ckpt__get_varint64(&p, b + n, &out));
            assert_true(out == v);
            /* every truncation fails and leaves the cursor alone */
            for (size_t k = 0; k < n; k++) {
                p = b;
                assert_false(ckpt__get_varint64(&p, b + k, &out));
                assert_ptr_equal(p, b);
            }
        }
    }
}

static void test_varint_rejects(void **state)
{
    const uint8_t *p;
    uint32_t v32 = 77;
    uint64_t v64 = 77;
    /* 6-byte varint32 (too long even though the value would fit) */
    const uint8_t long32[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x00};
    /* 5th byte with bits beyond 32 */
    const uint8_t big32[] = {0xff, 0xff, 0xff, 0xff, 0x1f};
    const uint8_t max32[] = {0xff, 0xff, 0xff, 0xff, 0x0f};
    /* 11-byte varint64 */
    const uint8_t long64[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
                              0x80, 0x80, 0x80, 0x80, 0x00};
    /* 10th byte with bits beyond 64 */
    const uint8_t big64[] = {0xff, 0xff, 0xff, 0xff, 0xff,
                             0xff, 0xff, 0xff, 0xff, 0x02};
    const uint8_t trunc[] = {0x80, 0x80};
    (void)state;

    p = long32;
    assert_false(ckpt__get_varint32(&p, long32 + sizeof(long32), &v32));
    assert_ptr_equal(p, long32);
    p = big32;
    assert_false(ckpt__get_varint32(&p, big32 + sizeof(big32), &v32));
    assert_int_equal(v32, 77);
    p = max32;
    assert_true(ckpt__get_varint32(&p, max32 + sizeof(max32), &v32));
    assert_int_equal(v32, 0xffffffffu);
    /* the same 5 bytes are fine as a varint64 */
    p = big32;
    assert_true(ckpt__get_varint64(&p, big32 + sizeof(big32), &v64));
    assert_true(v64 == 0x1ffffffffull);

    p = long64;
    assert_false(ckpt__get_varint64(&p, long64 + sizeof(long64), &v64));
    p = big64;
    assert_false(ckpt__get_varint64(&p, big64 + sizeof(big64), &v64));
    assert_ptr_equal(p, big64);

    p = trunc;
    assert_false(ckpt__get_varint32(&p, trunc + sizeof(trunc), &v32));
    assert_false(ckpt__get_varint64(&p, trunc + sizeof(trunc), &v64));
    assert_false(ckpt__get_varint64(&p, trunc, &v64)); /* empty input */
    assert_ptr_equal(p, trunc);
}

static void test_length_prefixed(void **state)
{
    ckpt_buf buf = CKPT_BUF_INIT;
    char big[200];
    (void)state;
    assert_ckpt_ok(ckpt__put_length_prefixed(&buf, "abc", 3));
    assert_int_equal(buf.size, 4);
    assert_memory_equal(buf.ptr,
                        "\x03"
                        "abc",
                        4);
    memset(big, 'z', sizeof(big));
    assert_ckpt_ok(ckpt__put_length_prefixed(&buf, big, sizeof(big)));
    assert_int_equal(buf.size, 4 + 2 + 200);
    assert_memory_equal(buf.ptr + 4, "\xc8\x01", 2);
    assert_ckpt_ok(ckpt__put_length_prefixed(&buf, NULL, 0));
    assert_int_equal(buf.size, 207);
    assert_int_equal((uint8_t)buf.ptr[206], 0);
    ckpt_buf_dispose(&buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixed),
        cmocka_unit_test(test_varint_encode),
        cmocka_unit_test(test_varint_roundtrip_many),
        cmocka_unit_test(test_varint_rejects),
        cmocka_unit_test(test_length_prefixed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
