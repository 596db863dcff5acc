/* Tests for format/block: exact bytes of built blocks (empty block, the
 * worked example of docs/format.md §4.4, restart points every 16 / every
 * entry), round trips, and every structural check of the block reader. */
#include "test_util.h"

#include "common/internal.h"
#include "format/block.h"
#include "util/coding.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Collects entries as "key=value;" text (keys and values are printable in
 * these tests) and counts them; stops with 42 after `stop_after` entries. */
typedef struct collect {
    ckpt_buf text;
    size_t count;
    size_t stop_after;
} collect;

static int collect_cb(const uint8_t *key, size_t key_len, const uint8_t *value,
                      size_t value_len, void *payload)
{
    collect *c = payload;
    c->count++;
    assert_int_equal(ckpt__buf_put(&c->text, key, key_len), 0);
    assert_int_equal(ckpt__buf_put(&c->text, "=", 1), 0);
    assert_int_equal(ckpt__buf_put(&c->text, value, value_len), 0);
    assert_int_equal(ckpt__buf_put(&c->text, ";", 1), 0);
    if (c->stop_after && c->count == c->stop_after)
        return 42;
    return 0;
}

static void test_empty_block(void **state)
{
    ckpt__block_builder b;
    collect c = {CKPT_BUF_INIT, 0, 0};
    (void)state;
    ckpt__block_builder_init(&b, 16);
    assert_true(ckpt__block_builder_empty(&b));
    assert_int_equal(ckpt__block_builder_estimate(&b), 8);
    assert_ckpt_ok(ckpt__block_builder_finish(&b));
    assert_int_equal(b.out.size, 8);
    assert_memory_equal(b.out.ptr, "\x00\x00\x00\x00\x01\x00\x00\x00", 8);
    assert_ckpt_ok(ckpt__block_iterate((const uint8_t *)b.out.ptr, b.out.size,
                                       "t", collect_cb, &c));
    assert_int_equal(c.count, 0);
    ckpt__block_builder_dispose(&b);
    ckpt_buf_dispose(&c.text);
}

/* The data block of docs/format.md's 125-byte example (§4.4), bytes
 * 0..39. */
static const uint8_t example_block[40] = {
    0x00, 0x00, 0x06, 0x08, 0x01, 0x1a, 0x02, 0x08, 0x01, 0x00,
    0x01, 0x13, 0x78, 0x08, 0x01, 0x12, 0x08, 0x12, 0x02, 0x08,
    0x02, 0x12, 0x02, 0x08, 0x03, 0x28, 0x18, 0x35, 0x7a, 0xeb,
    0xf5, 0xab, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00};

static void test_example_block_bytes(void **state)
{
    ckpt__block_builder b;
    size_t est;
    (void)state;
    ckpt__block_builder_init(&b, 16);
    assert_ckpt_ok(
        ckpt__block_builder_add(&b, "", 0, "\x08\x01\x1a\x02\x08\x01", 6));
    assert_ckpt_ok(ckpt__block_builder_add(&b, "x", 1, example_block + 13, 19));
    assert_false(ckpt__block_builder_empty(&b));
    est = ckpt__block_builder_estimate(&b);
    assert_ckpt_ok(ckpt__block_builder_finish(&b));
    assert_int_equal(est, b.out.size);
    assert_int_equal(b.out.size, sizeof(example_block));
    assert_memory_equal(b.out.ptr, example_block, sizeof(example_block));
    ckpt__block_builder_dispose(&b);
}

/* 20 entries with interval 16: restarts [0, offset of entry 16]; entry 16
 * is stored whole, others share their prefix. Interval 1: all whole. */
static void test_restart_points(void **state)
{
    (void)state;
    for (int interval = 1; interval <= 16; interval += 15) {
        ckpt__block_builder b;
        collect c = {CKPT_BUF_INIT, 0, 0};
        ckpt_buf expect = CKPT_BUF_INIT;
        size_t offsets[20];
        uint32_t nr;
        ckpt__block_builder_init(&b, interval);
        for (int i = 0; i < 20; i++) {
            char key[32], val[32];
            snprintf(key, sizeof(key), "prefix/key%02d", i);
            snprintf(val, sizeof(val), "v%d", i);
            offsets[i] = b.out.size;
            assert_ckpt_ok(ckpt__block_builder_add(&b, key, strlen(key), val,
                                                   strlen(val)));
            assert_ckpt_ok(ckpt__buf_printf(&expect, "%s=%s;", key, val));
        }
        assert_ckpt_ok(ckpt__block_builder_finish(&b));
        nr = ckpt__decode_fixed32((const uint8_t *)b.out.ptr + b.out.size - 4);
        if (interval == 16) {
            assert_int_equal(nr, 2);
            assert_int_equal(ckpt__decode_fixed32((const uint8_t *)b.out.ptr +
                                                  b.out.size - 8),
                             offsets[16]);
            /* entry 1 shares "prefix/key0" (11 bytes), entry 16 shares 0 */
            assert_int_equal((uint8_t)b.out.ptr[offsets[1]], 11);
            assert_int_equal((uint8_t)b.out.ptr[offsets[16]], 0);
            assert_int_equal((uint8_t)b.out.ptr[offsets[17]], 11);
        } else {
            assert_int_equal(nr, 20);
            for (int i = 0; i < 20; i++) {
                assert_int_equal((uint8_t)b.out.ptr[offsets[i]], 0);
                assert_int_equal(
                    ckpt__decode_fixed32((const uint8_t *)b.out.ptr +
                                         b.out.size - 4 - 4 * (20 - (size_t)i)),
                    offsets[i]);
            }
        }
        assert_ckpt_ok(ckpt__block_iterate((const uint8_t *)b.out.ptr,
                                           b.out.size, "t", collect_cb, &c));
        assert_int_equal(c.count, 20);
        assert_string_equal(c.text.ptr, expect.ptr);

        /* reset and reuse: a single entry block */
        ckpt__block_builder_reset(&b);
        assert_true(ckpt__block_builder_empty(&b));
        assert_ckpt_ok(ckpt__block_builder_add(&b, "k", 1, "v", 1));
        assert_ckpt_ok(ckpt__block_builder_finish(&b));
        assert_int_equal(b.out.size, 5 + 8);
        assert_memory_equal(b.out.ptr, "\x00\x01\x01kv\0\0\0\0\x01\0\0\0", 13);
        ckpt__block_builder_dispose(&b);
        ckpt_buf_dispose(&c.text);
        ckpt_buf_dispose(&expect);
    }
}

static void test_callback_stops(void **state)
{
    collect c = {CKPT_BUF_INIT, 0, 1};
    (void)state;
    assert_int_equal(ckpt__block_iterate(example_block, sizeof(example_block),
                                         "t", collect_cb, &c),
                     42);
    assert_int_equal(c.count, 1);
    c.stop_after = 0;
    c.count = 0;
    ckpt__buf_clear(&c.text);
    assert_ckpt_ok(ckpt__block_iterate(example_block, sizeof(example_block),
                                       "t", collect_cb, &c));
    assert_int_equal(c.count, 2);
    assert_memory_equal(c.text.ptr, "=\x08\x01\x1a\x02\x08\x01;x=\x08", 11);
    ckpt_buf_dispose(&c.text);
}

/* Run the reader on `bytes` and expect ECORRUPT naming `what` and `needle`. */
static void expect_bad(const uint8_t *bytes, size_t n, const char *needle)
{
    collect c = {CKPT_BUF_INIT, 0, 0};
    int rc =
        ckpt__block_iterate(bytes, n, "x.index: block at 7", collect_cb, &c);
    assert_ckpt_error(rc, CKPT_ECORRUPT, needle);
    assert_non_null(
        strstr(ckpt_error_last()->message, "x.index: block at 7: "));
    ckpt_buf_dispose(&c.text);
}

static void test_bad_blocks(void **state)
{
    uint8_t b[64];
    (void)state;
    /* too short */
    expect_bad((const uint8_t *)"\x01\x00\x00", 3, "too short");
    expect_bad(NULL, 0, "too short");
    /* restart count too big */
    expect_bad((const uint8_t *)"\x00\x00\x00\x00\x02\x00\x00\x00", 8,
               "restart count 2 too large");
    expect_bad((const uint8_t *)"\xff\xff\xff\xff", 4, "restart count");
    /* entries but no restarts */
    expect_bad((const uint8_t *)"\x00\x01\x00k\x00\x00\x00\x00", 8,
               "no restart points");
    /* restart offset beyond the entries / first restart not 0 */
    expect_bad((const uint8_t *)"\x00\x01\x00k\x09\x00\x00\x00\x01\x00\x00\x00",
               12, "restart point 0");
    expect_bad((const uint8_t *)"\x00\x01\x00k\x01\x00\x00\x00\x01\x00\x00\x00",
               12, "restart point 0");
    /* restart in the middle of an entry */
    memcpy(b,
           "\x00\x01\x00k\x00\x01\x00l\x00\x00\x00\x00\x02\x00\x00\x00"
           "\x02\x00\x00\x00",
           20);
    expect_bad(b, 20, "is not at an entry");
    /* decreasing restart offsets */
    memcpy(b,
           "\x00\x01\x00k\x00\x01\x00l\x00\x00\x00\x00\x04\x00\x00\x00"
           "\x00\x00\x00\x00\x03\x00\x00\x00",
           24);
    expect_bad(b, 24, "restart point 2");
    /* restart entry with shared != 0 */
    memcpy(b,
           "\x00\x01\x00k\x01\x01\x00l\x00\x00\x00\x00\x04\x00\x00\x00"
           "\x02\x00\x00\x00",
           20);
    expect_bad(b, 20, "shared prefix 1 with a restart key");
    /* shared longer than the previous key */
    memcpy(b, "\x00\x01\x00k\x02\x01\x00l\x00\x00\x00\x00\x01\x00\x00\x00", 16);
    expect_bad(b, 16, "shared prefix 2 with a previous key of 1 bytes");
    /* key + value overrun into the restart array */
    memcpy(b, "\x00\x01\x05k\x00\x00\x00\x00\x01\x00\x00\x00", 12);
    expect_bad(b, 12, "overrun the block");
    memcpy(b, "\x00\x05\x00k\x00\x00\x00\x00\x01\x00\x00\x00", 12);
    expect_bad(b, 12, "overrun the block");
    /* a huge non_shared that would wrap 32-bit arithmetic */
    memcpy(b,
           "\x00\xff\xff\xff\xff\x0f\xff\xff\xff\xff\x0f\x00\x00\x00\x00"
           "\x01\x00\x00\x00",
           19);
    expect_bad(b, 19, "overrun the block");
    /* truncated varint header */
    memcpy(b, "\x00\x80\x00\x00\x00\x00\x01\x00\x00\x00", 10);
    b[2] = 0x80;
    b[3] = 0x80;
    b[4] = 0x80;
    b[5] = 0x80;
    memcpy(b + 6, "\x00\x00\x00\x00\x01\x00\x00\x00", 8);
    expect_bad(b, 14, "truncated header");
    /* over-long varint32 in an entry */
    memcpy(b,
           "\x80\x80\x80\x80\x80\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00"
           "\x00\x00",
           17);
    expect_bad(b, 17, "truncated header");
}

/* Keys that share prefixes: a block of a few KiB whose keys each add one
 * byte to the previous one (one restart point) would make its reader
 * materialize megabytes; it is refused, naming the block. Blocks built
 * with long keys and restart points every 16 or 64 entries read whole. */
static void test_shared_prefix_amplification(void **state)
{
    ckpt_buf hostile = CKPT_BUF_INIT;
    char key[1100];
    (void)state;
    /* entry 0: a 1000-byte key; then 2000 entries sharing all of it */
    memset(key, 'a', sizeof(key));
    assert_ckpt_ok(ckpt__put_varint32(&hostile, 0));
    assert_ckpt_ok(ckpt__put_varint32(&hostile, 1000));
    assert_ckpt_ok(ckpt__put_varint32(&hostile, 0));
    assert_ckpt_ok(ckpt__buf_put(&hostile, key, 1000));
    for (uint32_t i = 0; i < 2000; i++) {
        assert_ckpt_ok(ckpt__put_varint32(&hostile, 1000 + i));
        assert_ckpt_ok(ckpt__put_varint32(&hostile, 1));
        assert_ckpt_ok(ckpt__put_varint32(&hostile, 0));
        assert_ckpt_ok(ckpt__buf_put(&hostile, "b", 1));
    }
    assert_ckpt_ok(ckpt__put_fixed32(&hostile, 0));
    assert_ckpt_ok(ckpt__put_fixed32(&hostile, 1));
    expect_bad((const uint8_t *)hostile.ptr, hostile.size,
               "more than 64 times the block's");
    ckpt_buf_dispose(&hostile);

    for (int interval = 16; interval <= 64; interval *= 4) {
        ckpt__block_builder b;
        collect c = {CKPT_BUF_INIT, 0, 0};
        ckpt__block_builder_init(&b, interval);
        for (int i = 0; i < 300; i++) {
            snprintf(key + 1000, sizeof(key) - 1000, "%04d", i);
            assert_ckpt_ok(ckpt__block_builder_add(&b, key, 1004, "v", 1));
        }
        assert_ckpt_ok(ckpt__block_builder_finish(&b));
        assert_ckpt_ok(ckpt__block_iterate((const uint8_t *)b.out.ptr,
                                           b.out.size, "t", collect_cb, &c));
        assert_int_equal(c.count, 300);
        ckpt__block_builder_dispose(&b);
        ckpt_buf_dispose(&c.text);
    }
}

/* Every prefix of a valid block, and every single-byte corruption of one,
 * fails cleanly or succeeds: never reads out of bounds (ASan checks). */
static void test_mutations_never_crash(void **state)
{
    ckpt__block_builder b;
    uint8_t copy[512];
    (void)state;
    ckpt__block_builder_init(&b, 4);
    for (int i = 0; i < 12; i++) {
        char key[16];
        snprintf(key, sizeof(key), "key%03d", i * 7);
        assert_ckpt_ok(
            ckpt__block_builder_add(&b, key, strlen(key), "value", 5));
    }
    assert_ckpt_ok(ckpt__block_builder_finish(&b));
    assert_true(b.out.size <= sizeof(copy));
    for (size_t n = 0; n < b.out.size; n++) {
        collect c = {CKPT_BUF_INIT, 0, 0};
        uint8_t *heap = malloc(n ? n : 1);
        int rc;
        assert_non_null(heap);
        memcpy(heap, b.out.ptr, n);
        rc = ckpt__block_iterate(heap, n, "t", collect_cb, &c);
        assert_true(rc == 0 || rc == CKPT_ECORRUPT);
        free(heap);
        ckpt_buf_dispose(&c.text);
    }
    for (size_t i = 0; i < b.out.size; i++) {
        for (int v = 0; v < 256; v += 17) {
            collect c = {CKPT_BUF_INIT, 0, 0};
            int rc;
            memcpy(copy, b.out.ptr, b.out.size);
            copy[i] = (uint8_t)v;
            rc = ckpt__block_iterate(copy, b.out.size, "t", collect_cb, &c);
            assert_true(rc == 0 || rc == CKPT_ECORRUPT);
            ckpt_buf_dispose(&c.text);
        }
    }
    ckpt__block_builder_dispose(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty_block),
        cmocka_unit_test(test_example_block_bytes),
        cmocka_unit_test(test_restart_points),
        cmocka_unit_test(test_callback_stops),
        cmocka_unit_test(test_bad_blocks),
        cmocka_unit_test(test_shared_prefix_amplification),
        cmocka_unit_test(test_mutations_never_crash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
