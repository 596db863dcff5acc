/* tests/format/test_bundle_bad_input.c - the bundle reader on damaged and
 * hostile input: one test per kind of damage, each checking the error code
 * and that the message names the file (and the tensor where there is one).
 * Bad indexes are built from raw key/value pairs (bundle_test_helpers.c). */
#include "bundle_test_helpers.h"

#include "ckpt/sys/alloc.h"
#include "util/coding.h"
#include "util/crc32c.h"
#include "util/pb_wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef bt_fixture fixture;

/* ---- building bad bundles ---------------------------------------------------
 */

/* An index of `header` under "" plus `n` sorted entries. */
static void make_index(const fixture *f, const ckpt_buf *header,
                       const bt_kv *entries, size_t n)
{
    bt_kv *kvs = calloc(n + 1, sizeof(*kvs));
    assert_non_null(kvs);
    kvs[0].key = "";
    kvs[0].key_len = 0;
    kvs[0].value = header->ptr;
    kvs[0].value_len = header->size;
    if (n)
        memcpy(kvs + 1, entries, n * sizeof(*kvs));
    bt_write_table(f->index, kvs, n + 1);
    free(kvs);
}

/* A one-shard bundle with one entry `name` -> `e`, data file `data`. */
static void make_one(const fixture *f, const char *name,
                     const ckpt__bundle_entry *e, const void *data, size_t n)
{
    ckpt_buf header = CKPT_BUF_INIT;
    ckpt_buf value = CKPT_BUF_INIT;
    bt_kv kv;
    bt_header(&header, 1, 0);
    bt_entry(&value, e);
    kv.key = name;
    kv.key_len = strlen(name);
    kv.value = value.ptr;
    kv.value_len = value.size;
    make_index(f, &header, &kv, 1);
    test_write_file(f->data0, data, n);
    ckpt_buf_dispose(&header);
    ckpt_buf_dispose(&value);
}

static uint32_t masked_crc(const void *p, size_t n)
{
    return ckpt__crc32c_mask(ckpt__crc32c(p, n));
}

/* A valid two-tensor bundle written by the library. */
static void write_good(const fixture *f)
{
    ckpt_bundle_writer *w = NULL;
    float v[4] = {1, 2, 3, 4};
    ckpt_slice s[2] = {{"abc", 3}, {"", 0}};
    ckpt__bundle_entry tmp = bt_make_entry(CKPT_DT_FLOAT, 4, 0, 0, 0, 0);
    ckpt_shape s2 = tmp.shape;
    s2.dims[0] = 2;
    assert_ckpt_ok(ckpt_bundle_writer_open(&w, f->prefix, NULL));
    assert_ckpt_ok(ckpt_bundle_writer_add(w, "model/x", CKPT_DT_FLOAT,
                                          &tmp.shape, v, sizeof(v)));
    assert_ckpt_ok(ckpt_bundle_writer_add_strings(w, "model/s", &s2, s, 2));
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);
}

static int open_rc(const fixture *f, ckpt_bundle_reader **out)
{
    *out = NULL;
    return ckpt_bundle_reader_open(out, f->prefix, NULL);
}

/* Open must fail with `code`, naming the index file (and `needle`). */
static void expect_open_error(const fixture *f, int code, const char *needle)
{
    ckpt_bundle_reader *r = (ckpt_bundle_reader *)1;
    int rc = open_rc(f, &r);
    assert_ckpt_error(rc, code, "ckpt.index");
    if (needle)
        assert_ckpt_error(rc, code, needle);
    assert_null(r);
}

/* ---- the index file
 * ----------------------------------------------------------- */

static void test_truncated_index(void **state)
{
    fixture *f = *state;
    uint8_t *good;
    size_t n;
    write_good(f);
    good = test_read_file(f->index, &n);
    assert_non_null(good);
    assert_true(n > 48);
    for (size_t len = 0; len < n; len++) {
        test_write_file(f->index, good, len);
        expect_open_error(f, CKPT_ECORRUPT, NULL);
    }
    test_write_file(f->index, good, n);
    free(good);
}

static void test_flipped_bits_in_index(void **state)
{
    fixture *f = *state;
    uint8_t *good;
    size_t n, failures = 0, successes = 0;
    write_good(f);
    good = test_read_file(f->index, &n);
    assert_non_null(good);
    for (size_t bit = 0; bit < n * 8; bit++) {
        ckpt_bundle_reader *r = NULL;
        int rc;
        good[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        test_write_file(f->index, good, n);
        good[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        rc = open_rc(f, &r);
        if (rc == 0) {
            /* only in the footer before the magic: the unchecked zero
             * padding, or a handle varint re-encoded to the same value
             * (0e 00 -> 8e 00); the bundle must then still read correctly */
            float v[4];
            assert_true(bit / 8 >= n - 48 && bit / 8 < n - 8);
            assert_ckpt_ok(ckpt_bundle_reader_verify(r));
            assert_ckpt_ok(ckpt_bundle_reader_read(r, "model/x", v, 16));
            assert_true(v[3] == 4);
            ckpt_bundle_reader_free(r);
            successes++;
            continue;
        }
        assert_null(r);
        assert_ckpt_error(rc, CKPT_ECORRUPT, "ckpt.index");
        failures++;
    }
    assert_true(failures > n * 8 - 40 * 8);
    (void)successes;
    free(good);
}

static void test_wrong_magic(void **state)
{
    fixture *f = *state;
    uint8_t *good;
    size_t n;
    write_good(f);
    good = test_read_file(f->index, &n);
    good[n - 1] ^= 0x01;
    test_write_file(f->index, good, n);
    expect_open_error(f, CKPT_ECORRUPT, "magic");
    free(good);
}

static void test_empty_index_file(void **state)
{
    fixture *f = *state;
    test_write_file(f->index, "", 0);
    expect_open_error(f, CKPT_ECORRUPT, NULL);
}

static void test_keys_out_of_order(void **state)
{
    fixture *f = *state;
    ckpt_buf header = CKPT_BUF_INIT;
    ckpt_buf value = CKPT_BUF_INIT, value2 = CKPT_BUF_INIT;
    ckpt__bundle_entry e = bt_make_entry(CKPT_DT_FLOAT, -1, 0, 0, 4, 0);
    ckpt__bundle_entry e2 = bt_make_entry(CKPT_DT_FLOAT, -1, 0, 4, 4, 0);
    bt_kv kvs[3];
    bt_header(&header, 1, 0);
    bt_entry(&value, &e);
    bt_entry(&value2, &e2);
    kvs[0] = (bt_kv){"", 0, header.ptr, header.size};
    kvs[1] = (bt_kv){"b", 1, value.ptr, value.size};
    kvs[2] = (bt_kv){"a", 1, value2.ptr, value2.size};
    bt_write_raw_table(f->index, kvs, 3, "c");
    test_write_file(f->data0, "\0\0\0\0\0\0\0\0", 8);
    expect_open_error(f, CKPT_ECORRUPT, NULL);
    /* the same keys in order are fine, so it is the order that fails */
    kvs[1].key = "a";
    kvs[2].key = "b";
    bt_write_raw_table(f->index, kvs, 3, "c");
    {
        ckpt_bundle_reader *r;
        assert_ckpt_ok(open_rc(f, &r));
        assert_int_equal(ckpt_bundle_reader_count(r), 2);
        ckpt_bundle_reader_free(r);
    }
    ckpt_buf_dispose(&header);
    ckpt_buf_dispose(&value);
    ckpt_buf_dispose(&value2);
}

static void test_duplicate_keys(void **state)
{
    fixture *f = *state;
    ckpt_buf header = CKPT_BUF_INIT;
    ckpt_buf value = CKPT_BUF_INIT;
    ckpt__bundle_entry e = bt_make_entry(CKPT_DT_FLOAT, -1, 0, 0, 4, 0);
    bt_kv kvs[3];
    bt_header(&header, 1, 0);
    bt_entry(&value, &e);
    kvs[0] = (bt_kv){"", 0, header.ptr, header.size};
    kvs[1] = (bt_kv){"a", 1, value.ptr, value.size};
    kvs[2] = (bt_kv){"a", 1, value.ptr, value.size};
    bt_write_raw_table(f->index, kvs, 3, "b");
    test_write_file(f->data0, "\0\0\0\0", 4);
    expect_open_error(f, CKPT_ECORRUPT, NULL);
    ckpt_buf_dispose(&header);
    ckpt_buf_dispose(&value);
}

static void test_first_key_not_header(void **state)
{
    fixture *f = *state;
    ckpt_buf value = CKPT_BUF_INIT;
    ckpt__bundle_entry e = bt_make_entry(CKPT_DT_FLOAT, -1, 0, 0, 4, 0);
    bt_kv kv;
    bt_entry(&value, &e);
    kv = (bt_kv){"a", 1, value.ptr, value.size};
    bt_write_table(f->index, &kv, 1);
    expect_open_error(f, CKPT_ECORRUPT, "header");
    ckpt_buf_dispose(&value);
}

static void test_no_header_empty_table(void **state)
{
    fixture *f = *state;
    bt_write_table(f->index, NULL, 0);
    expect_open_error(f, CKPT_ECORRUPT, "header");
}

/* ---- the header
 * ------------------------------------------------------------------ */

static void with_header_bytes(const fixture *f, const void *h, size_t n)
{
    ckpt_buf header = CKPT_BUF_INIT;
    assert_ckpt_ok(ckpt__buf_put(&header, h, n));
    make_index(f, &header, NULL, 0);
    ckpt_buf_dispose(&header);
}

static void test_malformed_header(void **state)
{
    fixture *f = *state;
    with_header_bytes(f, "\x08", 1); /* truncated varint */
    expect_open_error(f, CKPT_ECORRUPT, "header");
}

static void test_header_num_shards_zero(void **state)
{
    fixture *f = *state;
    with_header_bytes(f, "\x1a\x02\x08\x01", 4); /* num_shards omitted */
    expect_open_error(f, CKPT_ECORRUPT, "num_shards");
}

static void test_header_num_shards_negative(void **state)
{
    fixture *f = *state;
    ckpt_buf header = CKPT_BUF_INIT;
    bt_header(&header, -3, 0);
    make_index(f, &header, NULL, 0);
    expect_open_error(f, CKPT_ECORRUPT, "num_shards");
    ckpt_buf_dispose(&header);
}

static void test_header_bad_endianness(void **state)
{
    fixture *f = *state;
    ckpt_buf header = CKPT_BUF_INIT;
    bt_header(&header, 1, 2);
    make_index(f, &header, NULL, 0);
    expect_open_error(f, CKPT_ECORRUPT, "endianness");
    ckpt_buf_dispose(&header);
}

static void test_header_version_rejected(void **state)
{
    fixture *f = *state;
    /* num_shards 1, version {producer 1, min_consumer 2} */
    with_header_bytes(f, "\x08\x01\x1a\x04\x08\x01\x10\x02", 8);
    expect_open_error(f, CKPT_EVERSION, "consumer");
    /* version {producer 1, bad_consumers [1]} */
    with_header_bytes(f, "\x08\x01\x1a\x04\x08\x01\x18\x01", 8);
    expect_open_error(f, CKPT_EVERSION, "bad");
    /* producer -1 */
    with_header_bytes(f,
                      "\x08\x01\x1a\x0b\x08\xff\xff\xff\xff\xff\xff\xff\xff"
                      "\xff\x01",
                      15);
    expect_open_error(f, CKPT_EVERSION, "producer");
}

/* ---- entries
 * ------------------------------------------------------------------------ */

static void test_malformed_entry_proto(void **state)
{
    fixture *f = *state;
    ckpt_buf header = CKPT_BUF_INIT;
    bt_kv kv = {"model/bad", 9, "\x08\x01\x12\x05\x12", 5};
    bt_header(&header, 1, 0);
    make_index(f, &header, &kv, 1);
    expect_open_error(f, CKPT_ECORRUPT, "'model/bad'");
    ckpt_buf_dispose(&header);
}

static void expect_entry_rejected(const fixture *f, const ckpt__bundle_entry *e,
                                  const char *needle)
{
    make_one(f, "model/t", e, "\0\0\0\0\0\0\0\0", 8);
    expect_open_error(f, CKPT_ECORRUPT, "'model/t'");
    if (needle)
        expect_open_error(f, CKPT_ECORRUPT, needle);
}

static void test_unknown_dtype(void **state)
{
    ckpt__bundle_entry e = bt_make_entry(77, -1, 0, 0, 4, 0);
    expect_entry_rejected(*state, &e, "unknown dtype 77");
    e.dtype = 0;
    expect_entry_rejected(*state, &e, "unknown dtype 0");
    e.dtype = 101; /* DT_FLOAT_REF: never in a checkpoint */
    expect_entry_rejected(*state, &e, "dtype 101");
    e.dtype = -1;
    expect_entry_rejected(*state, &e, "dtype -1");
}

static void test_absurd_rank(void **state)
{
    fixture *f = *state;
    ckpt_buf header = CKPT_BUF_INIT;
    ckpt_buf value = CKPT_BUF_INIT;
    ckpt_buf shape = CKPT_BUF_INIT;
    bt_kv kv;
    for (int i = 0; i < 100; i++)
        assert_ckpt_ok(ckpt__buf_put(&shape, "\x12\x02\x08\x01", 4));
    assert_ckpt_ok(ckpt__buf_put(&value, "\x08\x01", 2));
    assert_ckpt_ok(ckpt__pb_put_len_field(&value, 2, shape.ptr, shape.size));
    assert_ckpt_ok(ckpt__buf_put(&value, "\x28\x04", 2));
    bt_header(&header, 1, 0);
    kv = (bt_kv){"model/t", 7, value.ptr, value.size};
    make_index(f, &header, &kv, 1);
    expect_open_error(f, CKPT_ECORRUPT, "'model/t'");
    ckpt_buf_dispose(&header);
    ckpt_buf_dispose(&value);
    ckpt_buf_dispose(&shape);
}

static void test_negative_dim(void **state)
{
    fixture *f = *state;
    ckpt_buf header = CKPT_BUF_INIT;
    /* dtype float, shape {dim {size -5}}, size 4 */
    static const uint8_t v[] = {0x08, 0x01, 0x12, 0x0d, 0x12, 0x0b, 0x08,
                                0xfb, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                0xff, 0xff, 0x01, 0x28, 0x04};
    bt_kv kv = {"model/t", 7, v, sizeof(v)};
    bt_header(&header, 1, 0);
    make_index(f, &header, &kv, 1);
    expect_open_error(f, CKPT_ECORRUPT, "'model/t'");
    expect_open_error(f, CKPT_ECORRUPT, "-5");
    ckpt_buf_dispose(&header);
}

static void test_unknown_rank_shape(void **state)
{
    ckpt__bundle_entry e = bt_make_entry(CKPT_DT_FLOAT, -1, 0, 0, 4, 0);
    e.unknown_rank = true;
    expect_entry_rejected(*state, &e, "unknown rank");
}

static void test_dims_product_overflows(void **state)
{
    ckpt__bundle_entry e = bt_make_entry(CKPT_DT_FLOAT, 1ll << 40, 0, 0, 4, 0);
    e.shape.rank = 2;
    e.shape.dims[1] = 1ll << 40;
    expect_entry_rejected(*state, &e, "overflows");
}

static void test_byte_size_overflows(void **state)
{
    /* 2^61 elements fit in int64, 2^61 * 8 bytes do not */
    ckpt__bundle_entry e = bt_make_entry(CKPT_DT_DOUBLE, 1ll << 61, 0, 0, 8, 0);
    expect_entry_rejected(*state, &e, "overflows");
}

static void test_size_mismatch(void **state)
{
    ckpt__bundle_entry e = bt_make_entry(CKPT_DT_FLOAT, 3, 0, 0, 8, 0);
    expect_entry_rejected(*state, &e, "record size 8");
}

static void test_shard_out_of_range(void **state)
{
    ckpt__bundle_entry e = bt_make_entry(CKPT_DT_FLOAT, -1, 1, 0, 4, 0);
    expect_entry_rejected(*state, &e, "shard 1");
    e.shard_id = -1;
    expect_entry_rejected(*state, &e, "shard -1");
}

static void test_negative_offset(void **state)
{
    ckpt__bundle_entry e = bt_make_entry(CKPT_DT_FLOAT, -1, 0, -4, 4, 0);
    expect_entry_rejected(*state, &e, "offset -4");
    e.offset = INT64_MAX - 1; /* offset + size overflows */
    expect_entry_rejected(*state, &e, "offset");
}

static void test_string_count_exceeds_size(void **state)
{
    /* 2^60 strings claimed in a 100-byte record */
    ckpt__bundle_entry e =
        bt_make_entry(CKPT_DT_STRING, 1ll << 60, 0, 0, 100, 0);
    expect_entry_rejected(*state, &e, "string record");
}

/* ---- records
 * ----------------------------------------------------------------------------
 */

static void test_offset_past_end_of_shard(void **state)
{
    fixture *f = *state;
    static const float v = 1.5f;
    ckpt__bundle_entry e =
        bt_make_entry(CKPT_DT_FLOAT, -1, 0, 100, 4, masked_crc(&v, 4));
    ckpt_bundle_reader *r;
    float got;
    make_one(f, "model/t", &e, &v, 4);
    assert_ckpt_ok(open_rc(f, &r));
    assert_ckpt_error(ckpt_bundle_reader_read(r, "model/t", &got, 4),
                      CKPT_ECORRUPT, "ckpt.data-00000-of-00001");
    assert_ckpt_error(ckpt_bundle_reader_read(r, "model/t", &got, 4),
                      CKPT_ECORRUPT, "'model/t'");
    assert_ckpt_error(ckpt_bundle_reader_verify(r), CKPT_ECORRUPT,
                      "past the end");
    ckpt_bundle_reader_free(r);
}

static void test_size_past_end_of_shard(void **state)
{
    fixture *f = *state;
    static const float v[2] = {1.5f, 2.5f};
    ckpt__bundle_entry e =
        bt_make_entry(CKPT_DT_FLOAT, 2, 0, 4, 8, masked_crc(v, 8));
    ckpt_bundle_reader *r;
    ckpt_buf rec = CKPT_BUF_INIT;
    const ckpt_tensor_entry *te;
    make_one(f, "model/t", &e, v, 8);
    assert_ckpt_ok(open_rc(f, &r));
    assert_ckpt_ok(ckpt_bundle_reader_find(&te, r, "model/t"));
    assert_ckpt_error(ckpt_bundle_reader_read_record(r, te, &rec),
                      CKPT_ECORRUPT, "'model/t'");
    assert_int_equal(rec.size, 0);
    assert_ckpt_error(ckpt_bundle_reader_verify(r), CKPT_ECORRUPT,
                      "ckpt.data-00000-of-00001");
    ckpt_bundle_reader_free(r);
    ckpt_buf_dispose(&rec);
}

static void test_missing_shard(void **state)
{
    fixture *f = *state;
    ckpt_buf header = CKPT_BUF_INIT;
    ckpt_buf v0 = CKPT_BUF_INIT, v1 = CKPT_BUF_INIT;
    static const float x = 1, y = 2;
    ckpt__bundle_entry a =
        bt_make_entry(CKPT_DT_FLOAT, -1, 0, 0, 4, masked_crc(&x, 4));
    ckpt__bundle_entry b =
        bt_make_entry(CKPT_DT_FLOAT, -1, 1, 0, 4, masked_crc(&y, 4));
    char *data0 = test_path(f->dir, "ckpt.data-00000-of-00002");
    ckpt_bundle_reader *r;
    float got = 0;
    bt_kv kvs[2];
    bt_header(&header, 2, 0);
    bt_entry(&v0, &a);
    bt_entry(&v1, &b);
    kvs[0] = (bt_kv){"a", 1, v0.ptr, v0.size};
    kvs[1] = (bt_kv){"b", 1, v1.ptr, v1.size};
    make_index(f, &header, kvs, 2);
    test_write_file(data0, &x, 4);
    /* a missing data file is an error only when read */
    assert_ckpt_ok(open_rc(f, &r));
    assert_ckpt_ok(ckpt_bundle_reader_read(r, "a", &got, 4));
    assert_true(got == 1);
    assert_ckpt_error(ckpt_bundle_reader_read(r, "b", &got, 4), CKPT_ENOTFOUND,
                      "ckpt.data-00001-of-00002");
    assert_ckpt_error(ckpt_bundle_reader_read(r, "b", &got, 4), CKPT_ENOTFOUND,
                      "'b'");
    assert_ckpt_error(ckpt_bundle_reader_verify(r), CKPT_ENOTFOUND,
                      "ckpt.data-00001-of-00002");
    ckpt_bundle_reader_free(r);
    ckpt_buf_dispose(&header);
    ckpt_buf_dispose(&v0);
    ckpt_buf_dispose(&v1);
    free(data0);
}

/* Opening one of a checkpoint's files, or its directory, instead of its
 * prefix fails (TensorFlow takes prefixes only) and says what to open. */
static void test_file_or_directory_given_for_prefix(void **state)
{
    fixture *f = *state;
    ckpt_bundle_reader *r = NULL;
    char *missing = test_path(f->dir, "other");
    char *missing_index = test_path(f->dir, "other.index");
    write_good(f);
    assert_ckpt_error(ckpt_bundle_reader_open(&r, f->index, NULL),
                      CKPT_ENOTFOUND, "whose prefix is ");
    assert_ckpt_error(ckpt_bundle_reader_open(&r, f->index, NULL),
                      CKPT_ENOTFOUND, f->prefix);
    assert_null(r);
    assert_ckpt_error(ckpt_bundle_reader_open(&r, f->data0, NULL),
                      CKPT_ENOTFOUND, "open the prefix");
    assert_ckpt_error(ckpt_bundle_reader_open(&r, f->dir, NULL), CKPT_ENOTFOUND,
                      "not by a file or directory");
    /* nothing there at all: no such checkpoint, naming the missing index */
    assert_ckpt_error(ckpt_bundle_reader_open(&r, missing, NULL),
                      CKPT_ENOTFOUND, "other.index: No such file");
    assert_ckpt_error(ckpt_bundle_reader_open(&r, missing, NULL),
                      CKPT_ENOTFOUND, "other: no such checkpoint: open_read ");
    assert_ckpt_error(ckpt_bundle_reader_open(&r, missing_index, NULL),
                      CKPT_ENOTFOUND, "other.index.index: No such file");
    assert_null(r);
    assert_ckpt_ok(ckpt_bundle_reader_open(&r, f->prefix, NULL));
    ckpt_bundle_reader_free(r);
    free(missing);
    free(missing_index);
}

static void test_flipped_bit_in_data_record(void **state)
{
    fixture *f = *state;
    uint8_t *data;
    size_t n;
    ckpt_bundle_reader *r;
    float v[4];
    ckpt_string_array a;
    write_good(f);
    data = test_read_file(f->data0, &n);
    assert_int_equal(n, 16 + 2 + 4 + 3);
    /* every bit of the float record */
    for (size_t bit = 0; bit < 16 * 8; bit++) {
        data[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        test_write_file(f->data0, data, n);
        data[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        assert_ckpt_ok(open_rc(f, &r));
        assert_ckpt_error(ckpt_bundle_reader_read(r, "model/x", v, 16),
                          CKPT_ECORRUPT, "'model/x': checksum mismatch");
        assert_ckpt_error(ckpt_bundle_reader_verify(r), CKPT_ECORRUPT,
                          "ckpt.data-00000-of-00001: tensor 'model/x'");
        ckpt_bundle_reader_free(r);
    }
    /* every bit of the string record */
    for (size_t bit = 16 * 8; bit < n * 8; bit++) {
        data[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        test_write_file(f->data0, data, n);
        data[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        assert_ckpt_ok(open_rc(f, &r));
        assert_ckpt_error(ckpt_bundle_reader_read_strings(r, "model/s", &a),
                          CKPT_ECORRUPT, "'model/s'");
        assert_null(a.strings);
        assert_ckpt_error(ckpt_bundle_reader_verify(r), CKPT_ECORRUPT,
                          "ckpt.data-00000-of-00001: tensor 'model/s'");
        ckpt_bundle_reader_free(r);
    }
    /* skip_data_checksums reads the damaged float anyway */
    data[0] ^= 1;
    test_write_file(f->data0, data, n);
    {
        ckpt_bundle_reader_options o = CKPT_BUNDLE_READER_OPTIONS_INIT;
        o.skip_data_checksums = 1;
        assert_ckpt_ok(ckpt_bundle_reader_open(&r, f->prefix, &o));
        assert_ckpt_ok(ckpt_bundle_reader_read(r, "model/x", v, 16));
        assert_true(v[1] == 2);
        /* verify checks every checksum regardless */
        assert_ckpt_error(ckpt_bundle_reader_verify(r), CKPT_ECORRUPT,
                          "'model/x'");
        ckpt_bundle_reader_free(r);
    }
    free(data);
}

/* verify reads one data file's records in one pass, then compares each
 * CRC: a damaged record anywhere in the file is the one named, with the
 * stored and computed checksums. */
static void test_verify_names_damaged_record_in_shard(void **state)
{
    fixture *f = *state;
    static const char *const names[] = {"a", "b", "c"};
    ckpt__bundle_entry tmp = bt_make_entry(CKPT_DT_FLOAT, 4, 0, 0, 0, 0);
    float v[4] = {1, 2, 3, 4};
    ckpt_bundle_writer *w = NULL;
    ckpt_bundle_reader *r;
    uint8_t *data;
    size_t n;
    assert_ckpt_ok(ckpt_bundle_writer_open(&w, f->prefix, NULL));
    for (size_t k = 0; k < 3; k++)
        assert_ckpt_ok(ckpt_bundle_writer_add(w, names[k], CKPT_DT_FLOAT,
                                              &tmp.shape, v, sizeof(v)));
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);
    data = test_read_file(f->data0, &n);
    assert_int_equal(n, 3 * sizeof(v));
    for (size_t k = 0; k < 3; k++) {
        char want[128];
        data[k * sizeof(v) + 5] ^= 0x10;
        test_write_file(f->data0, data, n);
        data[k * sizeof(v) + 5] ^= 0x10;
        assert_ckpt_ok(open_rc(f, &r));
        snprintf(want, sizeof(want),
                 "ckpt.data-00000-of-00001: tensor '%s': checksum mismatch "
                 "(stored 0x",
                 names[k]);
        assert_ckpt_error(ckpt_bundle_reader_verify(r), CKPT_ECORRUPT, want);
        ckpt_bundle_reader_free(r);
    }
    test_write_file(f->data0, data, n);
    assert_ckpt_ok(open_rc(f, &r));
    assert_ckpt_ok(ckpt_bundle_reader_verify(r));
    ckpt_bundle_reader_free(r);
    free(data);
}

/* ---- strings
 * -----------------------------------------------------------------------------
 */

/* Allocation spy: the largest single request while installed. */
static size_t spy_max;

static void *spy_malloc(size_t n, void *payload)
{
    (void)payload;
    if (n > spy_max)
        spy_max = n;
    return malloc(n);
}

static void *spy_realloc(void *p, size_t n, void *payload)
{
    (void)payload;
    if (n > spy_max)
        spy_max = n;
    return realloc(p, n);
}

static void spy_free(void *p, void *payload)
{
    (void)payload;
    free(p);
}

static void test_string_absurd_lengths(void **state)
{
    fixture *f = *state;
    /* 3 elements: lengths 2^60, 2^60, 1; then junk; 40-byte record */
    uint8_t rec[40];
    size_t o = 0;
    ckpt__bundle_entry e;
    ckpt_bundle_reader *r;
    ckpt_string_array a;
    const ckpt_allocator spy = {CKPT_ALLOCATOR_VERSION, NULL, spy_malloc,
                                spy_realloc, spy_free};
    memset(rec, 0x41, sizeof(rec));
    o += ckpt__encode_varint64(rec + o, 1ull << 60);
    o += ckpt__encode_varint64(rec + o, 1ull << 60);
    o += ckpt__encode_varint64(rec + o, 1);
    e = bt_make_entry(CKPT_DT_STRING, 3, 0, 0, sizeof(rec),
                      masked_crc(rec, sizeof(rec)));
    make_one(f, "model/s", &e, rec, sizeof(rec));
    spy_max = 0;
    assert_ckpt_ok(ckpt_set_allocator(&spy));
    assert_ckpt_ok(open_rc(f, &r));
    assert_ckpt_error(ckpt_bundle_reader_read_strings(r, "model/s", &a),
                      CKPT_ECORRUPT, "'model/s': string lengths");
    assert_ckpt_error(ckpt_bundle_reader_verify(r), CKPT_ECORRUPT,
                      "ckpt.data-00000-of-00001: tensor 'model/s'");
    ckpt_bundle_reader_free(r);
    assert_ckpt_ok(ckpt_set_allocator(NULL));
    /* nothing near the claimed sizes was requested */
    assert_true(spy_max < 64 * 1024);
}

static void test_string_lengths_overflow_sum(void **state)
{
    fixture *f = *state;
    /* two lengths whose sum wraps around 2^64 */
    uint8_t rec[32];
    size_t o = 0;
    ckpt__bundle_entry e;
    ckpt_bundle_reader *r;
    ckpt_string_array a;
    memset(rec, 0, sizeof(rec));
    o += ckpt__encode_varint64(rec + o, UINT64_MAX - 2);
    o += ckpt__encode_varint64(rec + o, 8);
    e = bt_make_entry(CKPT_DT_STRING, 2, 0, 0, sizeof(rec), 0);
    make_one(f, "model/s", &e, rec, sizeof(rec));
    assert_ckpt_ok(open_rc(f, &r));
    assert_ckpt_error(ckpt_bundle_reader_read_strings(r, "model/s", &a),
                      CKPT_ECORRUPT, "'model/s'");
    ckpt_bundle_reader_free(r);
}

static void test_string_length_checksum_wrong(void **state)
{
    fixture *f = *state;
    /* ["ab", "", "xyz"] with the length checksum's first byte changed and
     * the entry CRC recomputed over the damaged bytes as TF would */
    static const uint8_t good[12] = {0x02, 0x00, 0x03, 0x1b, 0x42, 0x8b,
                                     0xca, 0x61, 0x62, 0x78, 0x79, 0x7a};
    uint8_t rec[12];
    ckpt__bundle_entry e;
    ckpt_bundle_reader *r;
    ckpt_string_array a;
    memcpy(rec, good, sizeof(rec));
    rec[3] ^= 0x80;
    e = bt_make_entry(CKPT_DT_STRING, 3, 0, 0, 12, 0x3FC4AD10);
    make_one(f, "model/s", &e, rec, sizeof(rec));
    assert_ckpt_ok(open_rc(f, &r));
    assert_ckpt_error(ckpt_bundle_reader_read_strings(r, "model/s", &a),
                      CKPT_ECORRUPT, "'model/s': string length checksum");
    assert_ckpt_error(ckpt_bundle_reader_verify(r), CKPT_ECORRUPT,
                      "ckpt.data-00000-of-00001");
    ckpt_bundle_reader_free(r);
    /* even with data checksums skipped, the layout check stays */
    {
        ckpt_bundle_reader_options o = CKPT_BUNDLE_READER_OPTIONS_INIT;
        o.skip_data_checksums = 1;
        assert_ckpt_ok(ckpt_bundle_reader_open(&r, f->prefix, &o));
        assert_ckpt_error(ckpt_bundle_reader_read_strings(r, "model/s", &a),
                          CKPT_ECORRUPT, "length checksum");
        ckpt_bundle_reader_free(r);
    }
    /* the intact record reads */
    make_one(f, "model/s", &e, good, sizeof(good));
    assert_ckpt_ok(open_rc(f, &r));
    assert_ckpt_ok(ckpt_bundle_reader_read_strings(r, "model/s", &a));
    assert_int_equal(a.count, 3);
    ckpt_string_array_dispose(&a);
    ckpt_bundle_reader_free(r);
}

static void test_string_record_trailing_bytes(void **state)
{
    fixture *f = *state;
    /* ["ab"] plus one extra byte inside the record */
    uint8_t rec[8] = {0x02, 0, 0, 0, 0, 'a', 'b', 'c'};
    uint32_t lc = ckpt__crc32c_mask(ckpt__crc32c("\x02\0\0\0", 4));
    ckpt__bundle_entry e;
    ckpt_bundle_reader *r;
    ckpt_string_array a;
    ckpt__encode_fixed32(rec + 1, lc);
    e = bt_make_entry(CKPT_DT_STRING, 1, 0, 0, sizeof(rec), 0);
    make_one(f, "model/s", &e, rec, sizeof(rec));
    assert_ckpt_ok(open_rc(f, &r));
    assert_ckpt_error(ckpt_bundle_reader_read_strings(r, "model/s", &a),
                      CKPT_ECORRUPT, "lengths account for");
    ckpt_bundle_reader_free(r);
}

/* ---- dtypes the reader lists but cannot read
 * ----------------------------------------------- */

static void test_unsupported_known_dtypes(void **state)
{
    fixture *f = *state;
    static const int dtypes[] = {CKPT_DT_VARIANT, CKPT_DT_RESOURCE, 29, 32};
    static const char *const names[] = {"variant", "resource", "int4", "uint2"};
    for (size_t i = 0; i < 4; i++) {
        ckpt__bundle_entry e = bt_make_entry(dtypes[i], 2, 0, 0, 8, 0);
        ckpt_bundle_reader *r;
        const ckpt_tensor_entry *te;
        uint8_t buf[8];
        make_one(f, "model/u", &e, buf, 0);
        test_write_file(f->data0, "\0\0\0\0\0\0\0\0", 8);
        assert_ckpt_ok(open_rc(f, &r));
        assert_ckpt_ok(ckpt_bundle_reader_find(&te, r, "model/u"));
        assert_int_equal(te->dtype, dtypes[i]);
        assert_ckpt_error(ckpt_bundle_reader_read(r, "model/u", buf, 8),
                          CKPT_ENOTSUP, "'model/u'");
        assert_ckpt_error(ckpt_bundle_reader_read(r, "model/u", buf, 8),
                          CKPT_ENOTSUP, names[i]);
        ckpt_bundle_reader_free(r);
    }
}

/* The slice key of rows 0..2 of "w" [4, 3] (docs/format.md §6.3). */
static const char w_slice_key[] = "\x00w\x00\x01\x01\x02\x80\x82\x80\x83";

/* Write a bundle holding float tensor "w" [4, 3] partitioned into one
 * slice, rows 0..2, whose piece entry is `p` (its shape set here to
 * [2, 3]) and whose data file holds data[0..n). */
static void make_partitioned_w(fixture *f, ckpt__bundle_entry p,
                               const void *data, size_t n)
{
    ckpt_buf header = CKPT_BUF_INIT;
    ckpt_buf full = CKPT_BUF_INIT, piece = CKPT_BUF_INIT;
    ckpt__tensor_slice s;
    ckpt__bundle_entry e = bt_make_entry(CKPT_DT_FLOAT, 4, 0, 0, 0, 0);
    bt_kv kvs[2];
    memset(&s, 0, sizeof(s));
    s.rank = 2;
    s.length[0] = 2;
    s.length[1] = 3;
    e.shape.rank = 2;
    e.shape.dims[1] = 3;
    e.shard_id = 5; /* ignored on a partitioned entry (after a merge) */
    e.num_slices = 1;
    e.slices = &s;
    p.shape.rank = 2;
    p.shape.dims[1] = 3;
    bt_header(&header, 1, 0);
    bt_entry(&full, &e);
    bt_entry(&piece, &p);
    kvs[0] =
        (bt_kv){w_slice_key, sizeof(w_slice_key) - 1, piece.ptr, piece.size};
    kvs[1] = (bt_kv){"w", 1, full.ptr, full.size};
    make_index(f, &header, kvs, 2);
    test_write_file(f->data0, data, n);
    ckpt_buf_dispose(&header);
    ckpt_buf_dispose(&full);
    ckpt_buf_dispose(&piece);
}

static void test_partitioned_entry(void **state)
{
    fixture *f = *state;
    static const float v[6] = {1, 2, 3, 4, 5, 6};
    ckpt_bundle_reader *r;
    const ckpt_tensor_entry *te;
    float got[12];
    make_partitioned_w(
        f, bt_make_entry(CKPT_DT_FLOAT, 2, 0, 0, 24, masked_crc(v, 24)), v,
        sizeof(v));
    assert_ckpt_ok(open_rc(f, &r));
    assert_int_equal(ckpt_bundle_reader_count(r), 2);
    te = ckpt_bundle_reader_entry(r, 0);
    assert_true(te->is_slice_key);
    assert_int_equal(te->name_len, sizeof(w_slice_key) - 1);
    assert_memory_equal(te->name, w_slice_key, sizeof(w_slice_key) - 1);
    assert_int_equal(te->name[te->name_len], '\0');
    te = ckpt_bundle_reader_entry(r, 1);
    assert_false(te->is_slice_key);
    assert_int_equal(te->num_slices, 1);
    /* the one piece covers half of the tensor */
    assert_ckpt_error(ckpt_bundle_reader_read(r, "w", got, sizeof(got)),
                      CKPT_ECORRUPT, "'w': slices cover 6 of 12 elements");
    assert_memory_equal(got, v, sizeof(v));
    /* verify checks the piece's record, then finds the hole */
    assert_ckpt_error(ckpt_bundle_reader_verify(r), CKPT_ECORRUPT,
                      "'w': slices cover 6 of 12 elements");
    ckpt_bundle_reader_free(r);
}

/* A partitioned read names a slice's dtype as a plain read does, also for
 * the dtypes TensorFlow defines beyond ckpt_dtype (int4 is 29). */
static void test_partitioned_slice_dtype_named(void **state)
{
    fixture *f = *state;
    ckpt_bundle_reader *r;
    float got[12];
    make_partitioned_w(f, bt_make_entry(29, 2, 0, 0, 3, 0), "\0\0\0", 3);
    assert_ckpt_ok(open_rc(f, &r));
    assert_ckpt_error(ckpt_bundle_reader_read(r, "w", got, sizeof(got)),
                      CKPT_ECORRUPT, "is int4, the tensor is float32");
    ckpt_bundle_reader_free(r);
}

/* ---- big-endian bundles
 * ---------------------------------------------------------------------- */

static void test_big_endian_bundle(void **state)
{
    fixture *f = *state;
    ckpt_buf header = CKPT_BUF_INIT;
    ckpt_buf v0 = CKPT_BUF_INIT, v1 = CKPT_BUF_INIT, v2 = CKPT_BUF_INIT;
    /* float 1.0f, complex64 (2.0f, -1.0f), strings ["ab", "c"] */
    static const uint8_t fl[4] = {0x3f, 0x80, 0x00, 0x00};
    static const uint8_t cx[8] = {0x40, 0x00, 0x00, 0x00,
                                  0xbf, 0x80, 0x00, 0x00};
    uint8_t st[2 + 4 + 3] = {0x02, 0x01, 0, 0, 0, 0, 'a', 'b', 'c'};
    uint8_t data[4 + 8 + 9];
    uint32_t lc;
    ckpt__bundle_entry a, b, c;
    ckpt_bundle_reader *r;
    ckpt_string_array sa;
    float got, gc[2];
    bt_kv kvs[3];

    /* length words big-endian: 00 00 00 02, 00 00 00 01 */
    lc = ckpt__crc32c_mask(ckpt__crc32c("\0\0\0\x02\0\0\0\x01", 8));
    st[2] = (uint8_t)(lc >> 24);
    st[3] = (uint8_t)(lc >> 16);
    st[4] = (uint8_t)(lc >> 8);
    st[5] = (uint8_t)lc;
    memcpy(data, fl, 4);
    memcpy(data + 4, cx, 8);
    memcpy(data + 12, st, 9);
    a = bt_make_entry(CKPT_DT_FLOAT, -1, 0, 0, 4, masked_crc(fl, 4));
    b = bt_make_entry(CKPT_DT_COMPLEX64, -1, 0, 4, 8, masked_crc(cx, 8));
    {
        uint32_t crc = ckpt__crc32c("\0\0\0\x02\0\0\0\x01", 8);
        crc = ckpt__crc32c_extend(crc, st + 2, 7);
        c = bt_make_entry(CKPT_DT_STRING, 2, 0, 12, 9, ckpt__crc32c_mask(crc));
    }
    bt_header(&header, 1, 1);
    bt_entry(&v0, &a);
    bt_entry(&v1, &b);
    bt_entry(&v2, &c);
    kvs[0] = (bt_kv){"c", 1, v1.ptr, v1.size};
    kvs[1] = (bt_kv){"f", 1, v0.ptr, v0.size};
    kvs[2] = (bt_kv){"s", 1, v2.ptr, v2.size};
    make_index(f, &header, kvs, 3);
    test_write_file(f->data0, data, sizeof(data));

    assert_ckpt_ok(open_rc(f, &r));
    assert_int_equal(ckpt_bundle_reader_big_endian(r), 1);
    assert_ckpt_ok(ckpt_bundle_reader_read(r, "f", &got, 4));
    assert_true(got == 1.0f);
    assert_ckpt_ok(ckpt_bundle_reader_read(r, "c", gc, 8));
    assert_true(gc[0] == 2.0f && gc[1] == -1.0f);
    assert_ckpt_ok(ckpt_bundle_reader_read_strings(r, "s", &sa));
    assert_int_equal(sa.count, 2);
    assert_memory_equal(sa.strings[0].ptr, "ab", 2);
    assert_memory_equal(sa.strings[1].ptr, "c", 1);
    ckpt_string_array_dispose(&sa);
    assert_ckpt_ok(ckpt_bundle_reader_verify(r));
    ckpt_bundle_reader_free(r);
    ckpt_buf_dispose(&header);
    ckpt_buf_dispose(&v0);
    ckpt_buf_dispose(&v1);
    ckpt_buf_dispose(&v2);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, bt_setup, bt_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_truncated_index),
        T(test_flipped_bits_in_index),
        T(test_wrong_magic),
        T(test_empty_index_file),
        T(test_keys_out_of_order),
        T(test_duplicate_keys),
        T(test_first_key_not_header),
        T(test_no_header_empty_table),
        T(test_malformed_header),
        T(test_header_num_shards_zero),
        T(test_header_num_shards_negative),
        T(test_header_bad_endianness),
        T(test_header_version_rejected),
        T(test_malformed_entry_proto),
        T(test_unknown_dtype),
        T(test_absurd_rank),
        T(test_negative_dim),
        T(test_unknown_rank_shape),
        T(test_dims_product_overflows),
        T(test_byte_size_overflows),
        T(test_size_mismatch),
        T(test_shard_out_of_range),
        T(test_negative_offset),
        T(test_string_count_exceeds_size),
        T(test_offset_past_end_of_shard),
        T(test_size_past_end_of_shard),
        T(test_missing_shard),
        T(test_file_or_directory_given_for_prefix),
        T(test_flipped_bit_in_data_record),
        T(test_verify_names_damaged_record_in_shard),
        T(test_string_absurd_lengths),
        T(test_string_lengths_overflow_sum),
        T(test_string_length_checksum_wrong),
        T(test_string_record_trailing_bytes),
        T(test_unsupported_known_dtypes),
        T(test_partitioned_entry),
        T(test_partitioned_slice_dtype_named),
        T(test_big_endian_bundle),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
