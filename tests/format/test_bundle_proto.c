/* tests/format/test_bundle_proto.c - BundleHeaderProto / BundleEntryProto
 * encoders (exact TensorFlow bytes from docs/format.md and the test
 * vectors) and decoders (round trips, proto3 rules, malformed input). */
#include "test_util.h"

#include "common/internal.h"
#include "format/bundle_proto.h"

#include <stdlib.h>
#include <string.h>

static void assert_bytes(const ckpt_buf *b, const uint8_t *want, size_t n)
{
    assert_int_equal(b->size, n);
    assert_memory_equal(b->ptr, want, n);
}

static ckpt_shape shape2(int64_t a, int64_t b)
{
    ckpt_shape s;
    memset(&s, 0, sizeof(s));
    s.rank = 2;
    s.dims[0] = a;
    s.dims[1] = b;
    return s;
}

static void test_header_encode_exact(void **state)
{
    static const uint8_t one[] = {0x08, 0x01, 0x1a, 0x02, 0x08, 0x01};
    static const uint8_t two[] = {0x08, 0x02, 0x1a, 0x02, 0x08, 0x01};
    ckpt__bundle_header h;
    ckpt_buf b = CKPT_BUF_INIT;
    (void)state;
    ckpt__bundle_header_init(&h, 1);
    assert_ckpt_ok(ckpt__bundle_header_encode(&b, &h));
    assert_bytes(&b, one, sizeof(one));
    ckpt__buf_clear(&b);
    ckpt__bundle_header_init(&h, 2);
    assert_ckpt_ok(ckpt__bundle_header_encode(&b, &h));
    assert_bytes(&b, two, sizeof(two));
    ckpt_buf_dispose(&b);
}

static void test_header_roundtrip(void **state)
{
    ckpt__bundle_header h, d;
    ckpt_buf b = CKPT_BUF_INIT;
    (void)state;
    ckpt__bundle_header_init(&h, 7);
    h.endianness = CKPT__BUNDLE_BIG_ENDIAN;
    h.producer = 300;
    h.min_consumer = 1;
    h.num_bad_consumers = 3;
    h.bad_consumers[0] = 5;
    h.bad_consumers[1] = -2;
    h.bad_consumers[2] = 700;
    assert_ckpt_ok(ckpt__bundle_header_encode(&b, &h));
    assert_ckpt_ok(
        ckpt__bundle_header_decode(&d, (const uint8_t *)b.ptr, b.size));
    assert_int_equal(d.num_shards, 7);
    assert_int_equal(d.endianness, CKPT__BUNDLE_BIG_ENDIAN);
    assert_int_equal(d.producer, 300);
    assert_int_equal(d.min_consumer, 1);
    assert_int_equal(d.num_bad_consumers, 3);
    assert_int_equal(d.bad_consumers[0], 5);
    assert_int_equal(d.bad_consumers[1], -2);
    assert_int_equal(d.bad_consumers[2], 700);
    assert_false(d.bans_consumer_1);
    assert_ckpt_ok(ckpt__bundle_header_check_version(&d));
    ckpt_buf_dispose(&b);
}

static void test_header_bad_consumers_packed_and_unpacked(void **state)
{
    /* version { producer 1, bad_consumers [3, 1] packed } */
    static const uint8_t packed[] = {0x08, 0x01, 0x1a, 0x06, 0x08,
                                     0x01, 0x1a, 0x02, 0x03, 0x01};
    /* version { producer 1, bad_consumers 3, bad_consumers 1 } unpacked */
    static const uint8_t unpacked[] = {0x08, 0x01, 0x1a, 0x06, 0x08,
                                       0x01, 0x18, 0x03, 0x18, 0x01};
    /* packed list whose varint is cut */
    static const uint8_t bad_packed[] = {0x08, 0x01, 0x1a, 0x05, 0x08,
                                         0x01, 0x1a, 0x01, 0x80};
    ckpt__bundle_header h;
    (void)state;
    assert_ckpt_ok(ckpt__bundle_header_decode(&h, packed, sizeof(packed)));
    assert_int_equal(h.num_bad_consumers, 2);
    assert_int_equal(h.bad_consumers[0], 3);
    assert_int_equal(h.bad_consumers[1], 1);
    assert_true(h.bans_consumer_1);
    assert_ckpt_error(ckpt__bundle_header_check_version(&h), CKPT_EVERSION,
                      "consumer version 1");
    assert_ckpt_ok(ckpt__bundle_header_decode(&h, unpacked, sizeof(unpacked)));
    assert_int_equal(h.num_bad_consumers, 2);
    assert_true(h.bans_consumer_1);
    assert_ckpt_error(
        ckpt__bundle_header_decode(&h, bad_packed, sizeof(bad_packed)),
        CKPT_ECORRUPT, "bad_consumers");
}

static void test_header_version_rule(void **state)
{
    ckpt__bundle_header h;
    (void)state;
    ckpt__bundle_header_init(&h, 1);
    assert_ckpt_ok(ckpt__bundle_header_check_version(&h));
    h.min_consumer = 1;
    assert_ckpt_ok(ckpt__bundle_header_check_version(&h));
    h.min_consumer = 2;
    assert_ckpt_error(ckpt__bundle_header_check_version(&h), CKPT_EVERSION,
                      "consumer version 2");
    ckpt__bundle_header_init(&h, 1);
    h.producer = -1;
    assert_ckpt_error(ckpt__bundle_header_check_version(&h), CKPT_EVERSION,
                      "producer");
    ckpt__bundle_header_init(&h, 1);
    h.producer = 0; /* producer 0 is fine */
    assert_ckpt_ok(ckpt__bundle_header_check_version(&h));
}

static void test_header_merge_and_unknown(void **state)
{
    /* num_shards 1, unknown field 9 (fixed64), num_shards 4 again (later
     * wins), version twice (merged: producer from first, min_consumer from
     * second), unknown field 20 (LEN) and 21 (fixed32). */
    static const uint8_t msg[] = {
        0x08, 0x01, 0x49, 1,    2,    3,    4,    5,    6,    7,    8,
        0x08, 0x04, 0x1a, 0x02, 0x08, 0x05, 0x1a, 0x02, 0x10, 0x01, 0xa2,
        0x01, 0x01, 0xff, 0xad, 0x01, 1,    2,    3,    4};
    ckpt__bundle_header h;
    (void)state;
    assert_ckpt_ok(ckpt__bundle_header_decode(&h, msg, sizeof(msg)));
    assert_int_equal(h.num_shards, 4);
    assert_int_equal(h.producer, 5);
    assert_int_equal(h.min_consumer, 1);
    assert_int_equal(h.endianness, 0);
}

static void test_header_malformed(void **state)
{
    static const uint8_t wrong_wire[] = {0x0a, 0x00}; /* num_shards as LEN */
    static const uint8_t version_varint[] = {0x18, 0x01};
    static const uint8_t truncated[] = {0x08};
    static const uint8_t past_end[] = {0x1a, 0x05, 0x08, 0x01};
    static const uint8_t group[] = {0x0b, 0x0c};
    ckpt__bundle_header h;
    (void)state;
    assert_ckpt_error(
        ckpt__bundle_header_decode(&h, wrong_wire, sizeof(wrong_wire)),
        CKPT_ECORRUPT, "num_shards");
    assert_ckpt_error(
        ckpt__bundle_header_decode(&h, version_varint, sizeof(version_varint)),
        CKPT_ECORRUPT, "version");
    assert_ckpt_error(
        ckpt__bundle_header_decode(&h, truncated, sizeof(truncated)),
        CKPT_ECORRUPT, "byte 0");
    assert_ckpt_error(
        ckpt__bundle_header_decode(&h, past_end, sizeof(past_end)),
        CKPT_ECORRUPT, "header");
    assert_ckpt_error(ckpt__bundle_header_decode(&h, group, sizeof(group)),
                      CKPT_ECORRUPT, "header");
    /* empty message: all defaults */
    assert_ckpt_ok(ckpt__bundle_header_decode(&h, NULL, 0));
    assert_int_equal(h.num_shards, 0);
}

/* docs/format.md §4.4: float32 [2, 3], size 24, crc 0xABF5EB7A. */
static const uint8_t spec_entry[] = {0x08, 0x01, 0x12, 0x08, 0x12, 0x02, 0x08,
                                     0x02, 0x12, 0x02, 0x08, 0x03, 0x28, 0x18,
                                     0x35, 0x7a, 0xeb, 0xf5, 0xab};

static void test_entry_encode_spec_example(void **state)
{
    static const uint8_t with_offset[] = {
        0x08, 0x01, 0x12, 0x08, 0x12, 0x02, 0x08, 0x02, 0x12, 0x02, 0x08,
        0x03, 0x20, 0x0c, 0x28, 0x18, 0x35, 0x7a, 0xeb, 0xf5, 0xab};
    ckpt__bundle_entry e;
    ckpt_buf b = CKPT_BUF_INIT;
    (void)state;
    memset(&e, 0, sizeof(e));
    e.dtype = CKPT_DT_FLOAT;
    e.shape = shape2(2, 3);
    e.size = 24;
    e.crc32c = 0xABF5EB7A;
    assert_ckpt_ok(ckpt__bundle_entry_encode(&b, &e));
    assert_bytes(&b, spec_entry, sizeof(spec_entry));
    ckpt__buf_clear(&b);
    e.offset = 12;
    assert_ckpt_ok(ckpt__bundle_entry_encode(&b, &e));
    assert_bytes(&b, with_offset, sizeof(with_offset));
    ckpt_buf_dispose(&b);
}

static void test_entry_encode_vectors(void **state)
{
    /* From testdata/tf/README.md: serving_half_plus_two_cpu `a` and `b`,
     * tfx `global_step` and `dnn/hiddenlayer_0/kernel`, rust `b/...`. */
    static const uint8_t a[] = {0x08, 0x01, 0x12, 0x00, 0x28, 0x04,
                                0x35, 0x06, 0x38, 0x27, 0x1f};
    static const uint8_t b_[] = {0x08, 0x01, 0x12, 0x00, 0x20, 0x08, 0x28,
                                 0x04, 0x35, 0x10, 0xfd, 0x78, 0x4f};
    static const uint8_t gs[] = {0x08, 0x09, 0x12, 0x00, 0x20, 0x8c, 0x89, 0x03,
                                 0x28, 0x08, 0x35, 0x07, 0x95, 0x11, 0x9a};
    static const uint8_t kern[] = {
        0x08, 0x01, 0x12, 0x08, 0x12, 0x02, 0x08, 0x03, 0x12, 0x02, 0x08, 0x64,
        0x20, 0x90, 0x03, 0x28, 0xb0, 0x09, 0x35, 0xd3, 0x59, 0xe4, 0xe5};
    static const uint8_t rust_b[] = {0x08, 0x01, 0x12, 0x04, 0x12, 0x02,
                                     0x08, 0x01, 0x20, 0x04, 0x28, 0x04,
                                     0x35, 0xa6, 0x7b, 0x11, 0x3a};
    ckpt__bundle_entry e;
    ckpt__bundle_entry d;
    ckpt_buf b = CKPT_BUF_INIT;
    (void)state;

    memset(&e, 0, sizeof(e));
    e.dtype = CKPT_DT_FLOAT;
    e.size = 4;
    e.crc32c = 0x1f273806;
    assert_ckpt_ok(ckpt__bundle_entry_encode(&b, &e));
    assert_bytes(&b, a, sizeof(a));

    ckpt__buf_clear(&b);
    e.offset = 8;
    e.crc32c = 0x4f78fd10;
    assert_ckpt_ok(ckpt__bundle_entry_encode(&b, &e));
    assert_bytes(&b, b_, sizeof(b_));

    ckpt__buf_clear(&b);
    memset(&e, 0, sizeof(e));
    e.dtype = CKPT_DT_INT64;
    e.offset = 50316;
    e.size = 8;
    e.crc32c = 0x9a119507;
    assert_ckpt_ok(ckpt__bundle_entry_encode(&b, &e));
    assert_bytes(&b, gs, sizeof(gs));

    ckpt__buf_clear(&b);
    memset(&e, 0, sizeof(e));
    e.dtype = CKPT_DT_FLOAT;
    e.shape = shape2(3, 100);
    e.offset = 400;
    e.size = 1200;
    e.crc32c = 0xe5e459d3;
    assert_ckpt_ok(ckpt__bundle_entry_encode(&b, &e));
    assert_bytes(&b, kern, sizeof(kern));

    /* decode the rust one and re-encode it */
    assert_ckpt_ok(ckpt__bundle_entry_decode(&d, rust_b, sizeof(rust_b)));
    assert_int_equal(d.dtype, CKPT_DT_FLOAT);
    assert_int_equal(d.shape.rank, 1);
    assert_int_equal(d.shape.dims[0], 1);
    assert_int_equal(d.offset, 4);
    assert_int_equal(d.size, 4);
    assert_int_equal(d.crc32c, 0x3a117ba6);
    ckpt__buf_clear(&b);
    assert_ckpt_ok(ckpt__bundle_entry_encode(&b, &d));
    assert_bytes(&b, rust_b, sizeof(rust_b));
    ckpt_buf_dispose(&b);
}

static void test_entry_decode_spec_example(void **state)
{
    ckpt__bundle_entry d;
    (void)state;
    assert_ckpt_ok(
        ckpt__bundle_entry_decode(&d, spec_entry, sizeof(spec_entry)));
    assert_int_equal(d.dtype, CKPT_DT_FLOAT);
    assert_int_equal(d.shape.rank, 2);
    assert_int_equal(d.shape.dims[0], 2);
    assert_int_equal(d.shape.dims[1], 3);
    assert_false(d.unknown_rank);
    assert_int_equal(d.shard_id, 0);
    assert_int_equal(d.offset, 0);
    assert_int_equal(d.size, 24);
    assert_int_equal(d.crc32c, 0xABF5EB7A);
    assert_int_equal(d.num_slices, 0);
    assert_null(d.slices);
}

static void test_entry_roundtrip_extremes(void **state)
{
    ckpt__bundle_entry e, d;
    ckpt_buf b = CKPT_BUF_INIT;
    (void)state;
    memset(&e, 0, sizeof(e));
    e.dtype = CKPT_DT_COMPLEX128;
    e.shape.rank = CKPT_MAX_RANK;
    for (int i = 0; i < CKPT_MAX_RANK; i++)
        e.shape.dims[i] = i == 5 ? 0 : (int64_t)1 << (i % 40);
    e.shard_id = 99999;
    e.offset = INT64_MAX - 10;
    e.size = 7;
    e.crc32c = 0xffffffffu;
    assert_ckpt_ok(ckpt__bundle_entry_encode(&b, &e));
    assert_ckpt_ok(
        ckpt__bundle_entry_decode(&d, (const uint8_t *)b.ptr, b.size));
    assert_int_equal(d.dtype, e.dtype);
    assert_int_equal(d.shape.rank, CKPT_MAX_RANK);
    assert_memory_equal(d.shape.dims, e.shape.dims, sizeof(e.shape.dims));
    assert_int_equal(d.shard_id, 99999);
    assert_int_equal(d.offset, INT64_MAX - 10);
    assert_int_equal(d.size, 7);
    assert_int_equal(d.crc32c, 0xffffffffu);

    /* negative int32 fields travel as 10-byte varints and come back */
    ckpt__buf_clear(&b);
    memset(&e, 0, sizeof(e));
    e.dtype = -3;
    e.shard_id = -1;
    e.offset = -5;
    assert_ckpt_ok(ckpt__bundle_entry_encode(&b, &e));
    /* dtype tag + 10 bytes, shape 2 bytes, shard 11, offset 11 */
    assert_int_equal(b.size, 11 + 2 + 11 + 11);
    assert_ckpt_ok(
        ckpt__bundle_entry_decode(&d, (const uint8_t *)b.ptr, b.size));
    assert_int_equal(d.dtype, -3);
    assert_int_equal(d.shard_id, -1);
    assert_int_equal(d.offset, -5);
    ckpt_buf_dispose(&b);
}

static void test_entry_slices_spec_example(void **state)
{
    /* docs/format.md §6.3: full entry "w", float32 [4, 3], two slices. */
    static const uint8_t want[] = {
        0x08, 0x01, 0x12, 0x08, 0x12, 0x02, 0x08, 0x04, 0x12, 0x02, 0x08, 0x03,
        0x3a, 0x08, 0x0a, 0x02, 0x10, 0x02, 0x0a, 0x02, 0x10, 0x03, 0x3a, 0x0a,
        0x0a, 0x04, 0x08, 0x02, 0x10, 0x02, 0x0a, 0x02, 0x10, 0x03};
    /* a slice with a full second extent: {len 2}{} */
    static const uint8_t full_extent[] = {0x08, 0x01, 0x3a, 0x06, 0x0a,
                                          0x02, 0x10, 0x02, 0x0a, 0x00};
    ckpt__tensor_slice s[2];
    ckpt__tensor_slice got;
    ckpt__bundle_entry e, d;
    ckpt_buf b = CKPT_BUF_INIT;
    (void)state;
    memset(s, 0, sizeof(s));
    s[0].rank = 2;
    s[0].start[0] = 0;
    s[0].length[0] = 2;
    s[0].start[1] = 0;
    s[0].length[1] = 3;
    s[1] = s[0];
    s[1].start[0] = 2;
    memset(&e, 0, sizeof(e));
    e.dtype = CKPT_DT_FLOAT;
    e.shape = shape2(4, 3);
    e.num_slices = 2;
    e.slices = s;
    assert_ckpt_ok(ckpt__bundle_entry_encode(&b, &e));
    assert_bytes(&b, want, sizeof(want));

    assert_ckpt_ok(ckpt__bundle_entry_decode(&d, want, sizeof(want)));
    assert_int_equal(d.num_slices, 2);
    assert_int_equal(d.shape.rank, 2);
    assert_int_equal(d.size, 0);
    assert_ckpt_ok(ckpt__bundle_entry_get_slice(&got, want, sizeof(want), 0));
    assert_int_equal(got.rank, 2);
    assert_int_equal(got.start[0], 0);
    assert_int_equal(got.length[0], 2);
    assert_int_equal(got.start[1], 0);
    assert_int_equal(got.length[1], 3);
    assert_ckpt_ok(ckpt__bundle_entry_get_slice(&got, want, sizeof(want), 1));
    assert_int_equal(got.start[0], 2);
    assert_int_equal(got.length[0], 2);
    assert_ckpt_error(ckpt__bundle_entry_get_slice(&got, want, sizeof(want), 2),
                      CKPT_ENOTFOUND, "no slice 2");

    assert_ckpt_ok(
        ckpt__bundle_entry_decode(&d, full_extent, sizeof(full_extent)));
    assert_int_equal(d.num_slices, 1);
    assert_ckpt_ok(ckpt__bundle_entry_get_slice(&got, full_extent,
                                                sizeof(full_extent), 0));
    assert_int_equal(got.rank, 2);
    assert_int_equal(got.length[0], 2);
    assert_int_equal(got.start[1], 0);
    assert_int_equal(got.length[1], -1);
    /* a full extent re-encodes as the empty `0a 00` */
    ckpt__buf_clear(&b);
    memset(&e, 0, sizeof(e));
    e.dtype = CKPT_DT_FLOAT;
    e.num_slices = 1;
    e.slices = &got;
    assert_ckpt_ok(ckpt__bundle_entry_encode(&b, &e));
    assert_int_equal(b.size, 2 + 2 + sizeof(full_extent) - 2);
    assert_memory_equal(b.ptr + 4, full_extent + 2, sizeof(full_extent) - 2);
    ckpt_buf_dispose(&b);
}

static void test_entry_proto3_rules(void **state)
{
    /* dtype 1 then dtype 2 (later wins); unknown varint field 15, unknown
     * LEN field 16, unknown fixed64 field 9, unknown fixed32 field 10; shape
     * in two pieces (dims concatenate); dim with a name; size twice. */
    static const uint8_t msg[] = {
        0x08, 0x01, 0x78, 0x96, 0x01, 0x08, 0x02, 0x82, 0x01, 0x03, 'a',  'b',
        'c',  0x49, 1,    2,    3,    4,    5,    6,    7,    8,    0x55, 1,
        2,    3,    4,    0x12, 0x07, 0x12, 0x05, 0x08, 0x05, 0x12, 0x01, 'n',
        0x28, 0x01, 0x12, 0x04, 0x12, 0x02, 0x08, 0x07, 0x28, 0x8c, 0x01};
    ckpt__bundle_entry d;
    (void)state;
    assert_ckpt_ok(ckpt__bundle_entry_decode(&d, msg, sizeof(msg)));
    assert_int_equal(d.dtype, 2);
    assert_int_equal(d.shape.rank, 2);
    assert_int_equal(d.shape.dims[0], 5);
    assert_int_equal(d.shape.dims[1], 7);
    assert_int_equal(d.size, 140);
    assert_int_equal(d.crc32c, 0);
}

#define BYTES(...)                                                             \
    (const uint8_t[]){__VA_ARGS__}, sizeof((const uint8_t[]){__VA_ARGS__})

/* Entries the decoder refuses with CKPT_ECORRUPT, each naming where. */
static void test_entry_decode_refuses(void **state)
{
    const struct {
        const uint8_t *msg;
        size_t len;
        const char *needle;
    } cases[] = {
        /* crc32c (field 6) as a varint */
        {BYTES(0x08, 0x01, 0x30, 0x05), "crc32c"},
        /* truncated varints: a tag, a value, an 11-byte one, inside a dim */
        {BYTES(0x08), "byte 0"},
        {BYTES(0x08, 0x80), "byte 0"},
        {BYTES(0x28, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
               0x01),
         "entry"},
        {BYTES(0x08, 0x01, 0x12, 0x03, 0x12, 0x01, 0x08), "byte 6"},
        /* lengths past the end: of the shape, of a dim inside it, huge */
        {BYTES(0x08, 0x01, 0x12, 0x05, 0x12, 0x01), "byte 2"},
        {BYTES(0x12, 0x03, 0x12, 0x05, 0x08), "shape"},
        {BYTES(0x12, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f),
         "entry"},
        /* wrong wire types: dtype as LEN, shape as varint, a group (wire
         * 3), wire 6, a dim's truncated fixed32, a dim's size as LEN,
         * field 0 */
        {BYTES(0x0a, 0x00), "dtype"},
        {BYTES(0x10, 0x01), "shape"},
        {BYTES(0x08, 0x01, 0x7b), "byte 2"},
        {BYTES(0x0e), "byte 0"},
        {BYTES(0x12, 0x03, 0x15, 0, 0), "shape"},
        {BYTES(0x12, 0x04, 0x12, 0x02, 0x0a, 0x00), "size"},
        {BYTES(0x00, 0x00), "entry"},
        /* shape { dim { size -1 } } with the 10-byte varint */
        {BYTES(0x08, 0x01, 0x12, 0x0d, 0x12, 0x0b, 0x08, 0xff, 0xff, 0xff, 0xff,
               0xff, 0xff, 0xff, 0xff, 0xff, 0x01),
         "negative"},
        /* an extent whose start is a LEN field; a slice cut inside */
        {BYTES(0x08, 0x01, 0x3a, 0x04, 0x0a, 0x02, 0x0a, 0x00), "start"},
        {BYTES(0x3a, 0x03, 0x0a, 0x04, 0x08), "slice"},
    };
    ckpt__bundle_entry d;
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int rc = ckpt__bundle_entry_decode(&d, cases[i].msg, cases[i].len);
        const char *msg = ckpt_error_last()->message;
        if (rc != CKPT_ECORRUPT || !strstr(msg, cases[i].needle))
            fail_msg("case %zu: %d \"%s\", wanted CKPT_ECORRUPT \"...%s...\"",
                     i, rc, msg, cases[i].needle);
    }
}

static void test_entry_rank_too_large(void **state)
{
    ckpt_buf b = CKPT_BUF_INIT;
    ckpt_buf shape = CKPT_BUF_INIT;
    ckpt__bundle_entry d;
    (void)state;
    for (int i = 0; i < CKPT_MAX_RANK + 1; i++) {
        static const uint8_t dim[] = {0x12, 0x02, 0x08, 0x01};
        assert_ckpt_ok(ckpt__buf_put(&shape, dim, sizeof(dim)));
    }
    assert_ckpt_ok(ckpt__buf_put(&b, "\x08\x01\x12", 3));
    assert_int_equal(shape.size, 132);
    assert_ckpt_ok(ckpt__buf_put(&b, "\x84\x01", 2));
    assert_ckpt_ok(ckpt__buf_put(&b, shape.ptr, shape.size));
    assert_ckpt_error(
        ckpt__bundle_entry_decode(&d, (const uint8_t *)b.ptr, b.size),
        CKPT_ECORRUPT, "more than 32 dims");
    ckpt_buf_dispose(&b);
    ckpt_buf_dispose(&shape);
}

static void test_entry_unknown_rank_flag(void **state)
{
    static const uint8_t msg[] = {0x08, 0x01, 0x12, 0x02, 0x18, 0x01};
    ckpt__bundle_entry d;
    ckpt_buf b = CKPT_BUF_INIT;
    (void)state;
    assert_ckpt_ok(ckpt__bundle_entry_decode(&d, msg, sizeof(msg)));
    assert_true(d.unknown_rank);
    assert_int_equal(d.shape.rank, 0);
    assert_ckpt_ok(ckpt__bundle_entry_encode(&b, &d));
    assert_bytes(&b, msg, sizeof(msg));
    ckpt_buf_dispose(&b);
}

/* get_slice refuses an extent whose start is a LEN field too. */
static void test_entry_bad_slice(void **state)
{
    static const uint8_t msg[] = {0x08, 0x01, 0x3a, 0x04,
                                  0x0a, 0x02, 0x0a, 0x00};
    ckpt__tensor_slice s;
    (void)state;
    assert_ckpt_error(ckpt__bundle_entry_get_slice(&s, msg, sizeof(msg), 0),
                      CKPT_ECORRUPT, "start");
}

/* The messages of the shared field walk name the message path, the field
 * and the byte offset within the whole value; get_slice looks at the
 * slices only. */
static void test_entry_field_walk_messages(void **state)
{
    static const uint8_t dim_size_len[] = {0x12, 0x04, 0x12, 0x02, 0x0a, 0x00};
    static const uint8_t cut_extent[] = {0x08, 0x01, 0x3a, 0x04,
                                         0x0a, 0x02, 0x08, 0x80};
    /* dtype as a LEN field (wrong), then one slice with one extent 3:4 */
    static const uint8_t odd_dtype[] = {0x0a, 0x00, 0x3a, 0x06, 0x0a,
                                        0x04, 0x08, 0x03, 0x10, 0x04};
    static const uint8_t version_packed_bad[] = {0x1a, 0x04, 0x1a,
                                                 0x02, 0x01, 0x80};
    ckpt__bundle_entry d;
    ckpt__bundle_header h;
    ckpt__tensor_slice s;
    (void)state;
    assert_ckpt_error(
        ckpt__bundle_entry_decode(&d, dim_size_len, sizeof(dim_size_len)),
        CKPT_ECORRUPT,
        "entry: shape: dim: field size at byte 4: wrong wire type");
    assert_ckpt_error(
        ckpt__bundle_entry_decode(&d, cut_extent, sizeof(cut_extent)),
        CKPT_ECORRUPT, "entry: slice: extent: malformed field at byte 6");
    assert_ckpt_error(
        ckpt__bundle_entry_decode(&d, odd_dtype, sizeof(odd_dtype)),
        CKPT_ECORRUPT, "entry: field dtype at byte 0: wrong wire type");
    assert_ckpt_ok(
        ckpt__bundle_entry_get_slice(&s, odd_dtype, sizeof(odd_dtype), 0));
    assert_int_equal(s.rank, 1);
    assert_int_equal(s.start[0], 3);
    assert_int_equal(s.length[0], 4);
    assert_ckpt_error(
        ckpt__bundle_entry_get_slice(&s, odd_dtype, sizeof(odd_dtype), 1),
        CKPT_ENOTFOUND, "entry: no slice 1 (has 1)");
    assert_ckpt_error(ckpt__bundle_header_decode(&h, version_packed_bad,
                                                 sizeof(version_packed_bad)),
                      CKPT_ECORRUPT,
                      "header: version: bad packed bad_consumers varint at "
                      "byte 5");
}

/* Every prefix of valid messages decodes or fails cleanly (ASan checks the
 * reads stay in bounds: each prefix lives in its own exact-size buffer). */
static void test_entry_every_truncation(void **state)
{
    ckpt__tensor_slice s[1];
    ckpt__bundle_entry e, d;
    ckpt_buf b = CKPT_BUF_INIT;
    size_t ok = 0;
    (void)state;
    memset(s, 0, sizeof(s));
    s[0].rank = 2;
    s[0].start[0] = 1000;
    s[0].length[0] = 5;
    s[0].length[1] = -1;
    memset(&e, 0, sizeof(e));
    e.dtype = CKPT_DT_DOUBLE;
    e.shape = shape2(300, 70000);
    e.shard_id = 3;
    e.offset = 1234567890123;
    e.size = 168000000;
    e.crc32c = 0x12345678;
    e.num_slices = 1;
    e.slices = s;
    assert_ckpt_ok(ckpt__bundle_entry_encode(&b, &e));
    for (size_t n = 0; n <= b.size; n++) {
        uint8_t *copy = malloc(n ? n : 1);
        int rc;
        assert_non_null(copy);
        memcpy(copy, b.ptr, n);
        rc = ckpt__bundle_entry_decode(&d, copy, n);
        assert_true(rc == 0 || rc == CKPT_ECORRUPT);
        if (rc == 0)
            ok++;
        free(copy);
    }
    /* the full message and the empty one at least */
    assert_true(ok >= 2);
    assert_ckpt_ok(
        ckpt__bundle_entry_decode(&d, (const uint8_t *)b.ptr, b.size));
    assert_int_equal(d.offset, 1234567890123);
    assert_int_equal(d.num_slices, 1);
    ckpt_buf_dispose(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_header_encode_exact),
        cmocka_unit_test(test_header_roundtrip),
        cmocka_unit_test(test_header_bad_consumers_packed_and_unpacked),
        cmocka_unit_test(test_header_version_rule),
        cmocka_unit_test(test_header_merge_and_unknown),
        cmocka_unit_test(test_header_malformed),
        cmocka_unit_test(test_entry_encode_spec_example),
        cmocka_unit_test(test_entry_encode_vectors),
        cmocka_unit_test(test_entry_decode_spec_example),
        cmocka_unit_test(test_entry_roundtrip_extremes),
        cmocka_unit_test(test_entry_slices_spec_example),
        cmocka_unit_test(test_entry_proto3_rules),
        cmocka_unit_test(test_entry_field_walk_messages),
        cmocka_unit_test(test_entry_decode_refuses),
        cmocka_unit_test(test_entry_rank_too_large),
        cmocka_unit_test(test_entry_unknown_rank_flag),
        cmocka_unit_test(test_entry_bad_slice),
        cmocka_unit_test(test_entry_every_truncation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
