/* tests/format/test_bundle_roundtrip.c - the bundle writer and reader
 * together: every supported dtype, strings, shards, alignment, the exact
 * bytes of docs/format.md's example (§4.4), argument errors, abandoning, the
 * saver's raw-image path, failures injected at every file-system operation
 * of a save, and LevelDB reading our index files. */
#include "bundle_test_helpers.h"
#include "spec_example.h"

#include "ckpt/sys/alloc.h"
#include "format/bundle_writer_internal.h"
#include "format/table.h"
#include "support/fs_fault.h"
#include "util/crc32c.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef bt_fixture fixture;

static ckpt_shape shape1(int64_t d)
{
    return bt_shape(1, &d);
}

static ckpt_shape scalar(void)
{
    return bt_shape(0, NULL);
}

static ckpt_bundle_writer *open_writer(const char *prefix, int shards,
                                       size_t align, const ckpt_fs *fs)
{
    ckpt_bundle_writer_options o = CKPT_BUNDLE_WRITER_OPTIONS_INIT;
    ckpt_bundle_writer *w = NULL;
    o.num_shards = shards;
    o.data_alignment = align;
    o.fs = fs;
    assert_ckpt_ok(ckpt_bundle_writer_open(&w, prefix, &o));
    assert_non_null(w);
    return w;
}

static ckpt_bundle_reader *open_reader(const char *prefix)
{
    ckpt_bundle_reader *r = NULL;
    assert_ckpt_ok(ckpt_bundle_reader_open(&r, prefix, NULL));
    assert_non_null(r);
    return r;
}

static uint8_t *read_named(const char *dir, const char *name, size_t *n)
{
    char *p = test_path(dir, name);
    uint8_t *data = test_read_file(p, n);
    free(p);
    return data;
}

/* ---- exact bytes -----------------------------------------------------------
 */

static void test_spec_example_exact_files(void **state)
{
    /* docs/format.md §4.4: the index is spec_example_index */
    static const float x[6] = {1, 2, 3, 4, 5, 6};
    static const uint8_t want_data[24] = {
        0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x40, 0x40,
        0x00, 0x00, 0x80, 0x40, 0x00, 0x00, 0xa0, 0x40, 0x00, 0x00, 0xc0, 0x40};
    fixture *f = *state;
    int64_t dims[2] = {2, 3};
    ckpt_shape s = bt_shape(2, dims);
    ckpt_bundle_writer *w = open_writer(f->prefix, 0, 0, NULL);
    uint8_t *data;
    size_t n;

    assert_ckpt_ok(
        ckpt_bundle_writer_add(w, "x", CKPT_DT_FLOAT, &s, x, sizeof(x)));
    /* nothing is visible before finish */
    assert_int_equal(bt_count_files(f->dir, ".index", NULL), 0);
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);

    data = read_named(f->dir, "ckpt.index", &n);
    assert_non_null(data);
    assert_int_equal(n, sizeof(spec_example_index));
    assert_memory_equal(data, spec_example_index, sizeof(spec_example_index));
    free(data);
    data = read_named(f->dir, "ckpt.data-00000-of-00001", &n);
    assert_non_null(data);
    assert_int_equal(n, sizeof(want_data));
    assert_memory_equal(data, want_data, sizeof(want_data));
    free(data);
    /* exactly the two files, no temporaries */
    assert_int_equal(bt_count_files(f->dir, NULL, NULL), 2);
}

static void test_strings_spec_example(void **state)
{
    static const uint8_t want[12] = {0x02, 0x00, 0x03, 0x1b, 0x42, 0x8b,
                                     0xca, 0x61, 0x62, 0x78, 0x79, 0x7a};
    fixture *f = *state;
    ckpt_slice s[3] = {{"ab", 2}, {"", 0}, {"xyz", 3}};
    ckpt_shape shp = shape1(3);
    ckpt_bundle_writer *w = open_writer(f->prefix, 1, 1, NULL);
    ckpt_bundle_reader *r;
    const ckpt_tensor_entry *e;
    ckpt_string_array a;
    uint8_t *data;
    size_t n;

    assert_ckpt_ok(ckpt_bundle_writer_add_strings(w, "s", &shp, s, 3));
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);
    data = read_named(f->dir, "ckpt.data-00000-of-00001", &n);
    assert_int_equal(n, 12);
    assert_memory_equal(data, want, 12);
    free(data);

    r = open_reader(f->prefix);
    assert_ckpt_ok(ckpt_bundle_reader_find(&e, r, "s"));
    assert_int_equal(e->dtype, CKPT_DT_STRING);
    assert_int_equal(e->size, 12);
    assert_int_equal(e->crc32c, 0x3FC4AD10);
    assert_int_equal(e->shape.rank, 1);
    assert_int_equal(e->shape.dims[0], 3);
    assert_ckpt_ok(ckpt_bundle_reader_read_strings(r, "s", &a));
    assert_int_equal(a.count, 3);
    assert_int_equal(a.strings[0].len, 2);
    assert_memory_equal(a.strings[0].ptr, "ab", 2);
    assert_int_equal(a.strings[1].len, 0);
    assert_int_equal(a.strings[2].len, 3);
    assert_memory_equal(a.strings[2].ptr, "xyz", 3);
    ckpt_string_array_dispose(&a);
    assert_null(a.strings);
    assert_ckpt_ok(ckpt_bundle_reader_verify(r));
    ckpt_bundle_reader_free(r);
}

/* ---- every dtype
 * --------------------------------------------------------------- */

/* The six elements of tensor i of dtype `dtype` (es bytes each). */
static void fill_elements(uint8_t *buf, int dtype, size_t es, size_t i)
{
    for (size_t b = 0; b < 6 * es; b++)
        buf[b] = (uint8_t)(b * 37 + i * 11 + 1);
    if (dtype == CKPT_DT_BOOL)
        for (size_t b = 0; b < 6; b++)
            buf[b] = (uint8_t)(b & 1);
}

static void test_every_fixed_dtype(void **state)
{
    fixture *f = *state;
    int64_t dims[2] = {2, 3};
    ckpt_shape s = bt_shape(2, dims);
    size_t nd = TEST_NUM_FIXED_DTYPES;
    size_t known = 0;
    ckpt_bundle_writer *w = open_writer(f->prefix, 1, 1, NULL);
    ckpt_bundle_reader *r;
    uint8_t buf[6 * 16];
    uint8_t got[6 * 16];

    /* the shared table names every fixed-size dtype, once */
    for (int dt = 0; dt < 256; dt++) {
        size_t seen = 0;
        for (size_t i = 0; i < nd; i++)
            seen += test_fixed_dtypes[i] == dt;
        assert_int_equal(seen, ckpt_dtype_size(dt) > 0 ? 1 : 0);
        known += ckpt_dtype_size(dt) > 0;
    }
    assert_int_equal(known, nd);
    for (size_t i = 0; i < nd; i++) {
        size_t es = ckpt_dtype_size(test_fixed_dtypes[i]);
        char name[64];
        assert_true(es > 0);
        fill_elements(buf, test_fixed_dtypes[i], es, i);
        snprintf(name, sizeof(name), "t/%s",
                 ckpt_dtype_name(test_fixed_dtypes[i]));
        assert_ckpt_ok(ckpt_bundle_writer_add(w, name, test_fixed_dtypes[i], &s,
                                              buf, 6 * es));
    }
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);

    r = open_reader(f->prefix);
    assert_int_equal(ckpt_bundle_reader_count(r), nd);
    assert_int_equal(ckpt_bundle_reader_num_shards(r), 1);
    /* the writer's header names the host's byte order */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    assert_int_equal(ckpt_bundle_reader_big_endian(r), 1);
#else
    assert_int_equal(ckpt_bundle_reader_big_endian(r), 0);
#endif
    for (size_t i = 0; i < nd; i++) {
        size_t es = ckpt_dtype_size(test_fixed_dtypes[i]);
        const ckpt_tensor_entry *e;
        char name[64];
        fill_elements(buf, test_fixed_dtypes[i], es, i);
        snprintf(name, sizeof(name), "t/%s",
                 ckpt_dtype_name(test_fixed_dtypes[i]));
        assert_ckpt_ok(ckpt_bundle_reader_find(&e, r, name));
        assert_int_equal(e->dtype, test_fixed_dtypes[i]);
        assert_int_equal(e->shape.rank, 2);
        assert_int_equal(e->shape.dims[0], 2);
        assert_int_equal(e->shape.dims[1], 3);
        assert_int_equal(e->size, (int64_t)(6 * es));
        assert_int_equal(e->shard_id, 0);
        assert_int_equal(e->num_slices, 0);
        assert_false(e->is_slice_key);
        assert_int_equal(e->crc32c,
                         ckpt__crc32c_mask(ckpt__crc32c(buf, 6 * es)));
        memset(got, 0xee, sizeof(got));
        assert_ckpt_ok(ckpt_bundle_reader_read(r, name, got, 6 * es));
        assert_memory_equal(got, buf, 6 * es);
    }
    assert_ckpt_ok(ckpt_bundle_reader_verify(r));
    ckpt_bundle_reader_free(r);
}

static void test_typed_values(void **state)
{
    fixture *f = *state;
    static const uint8_t bools[4] = {1, 0, 0, 1};
    static const uint16_t halves[3] = {0x3c00, 0xc000, 0x7bff}; /* 1,-2,max */
    static const uint16_t bf16[3] = {0x3f80, 0xbf80, 0x4049};   /* 1,-1,3.14 */
    static const float c64[4] = {1.5f, -2.0f, 0.25f, 1e30f};
    static const double c128[2] = {-0.125, 6.02214076e23};
    static const uint64_t u64[2] = {UINT64_MAX, 1};
    static const int64_t i64[2] = {INT64_MIN, -1};
    static const double f64 = 3.141592653589793;
    static const int8_t i8[2] = {-128, 127};
    ckpt_shape s4 = shape1(4), s3 = shape1(3), s2 = shape1(2), s1 = shape1(1);
    ckpt_shape s0 = scalar();
    ckpt_bundle_writer *w = open_writer(f->prefix, 1, 1, NULL);
    ckpt_bundle_reader *r;
    uint8_t b4[4];
    uint16_t h3[3];
    float cf[4];
    double cd[2];
    uint64_t u2[2];
    int64_t l2[2];
    double d;
    int8_t c2[2];

    assert_ckpt_ok(ckpt_bundle_writer_add(w, "bool", CKPT_DT_BOOL, &s4, bools,
                                          sizeof(bools)));
    assert_ckpt_ok(ckpt_bundle_writer_add(w, "half", CKPT_DT_HALF, &s3, halves,
                                          sizeof(halves)));
    assert_ckpt_ok(ckpt_bundle_writer_add(w, "bf16", CKPT_DT_BFLOAT16, &s3,
                                          bf16, sizeof(bf16)));
    assert_ckpt_ok(ckpt_bundle_writer_add(w, "c64", CKPT_DT_COMPLEX64, &s2, c64,
                                          sizeof(c64)));
    assert_ckpt_ok(ckpt_bundle_writer_add(w, "c128", CKPT_DT_COMPLEX128, &s1,
                                          c128, sizeof(c128)));
    assert_ckpt_ok(ckpt_bundle_writer_add(w, "u64", CKPT_DT_UINT64, &s2, u64,
                                          sizeof(u64)));
    assert_ckpt_ok(
        ckpt_bundle_writer_add(w, "i64", CKPT_DT_INT64, &s2, i64, sizeof(i64)));
    assert_ckpt_ok(ckpt_bundle_writer_add(w, "f64", CKPT_DT_DOUBLE, &s0, &f64,
                                          sizeof(f64)));
    assert_ckpt_ok(
        ckpt_bundle_writer_add(w, "i8", CKPT_DT_INT8, &s2, i8, sizeof(i8)));
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);

    r = open_reader(f->prefix);
    assert_ckpt_ok(ckpt_bundle_reader_read(r, "bool", b4, sizeof(b4)));
    assert_memory_equal(b4, bools, 4);
    assert_ckpt_ok(ckpt_bundle_reader_read(r, "half", h3, sizeof(h3)));
    assert_int_equal(h3[0], 0x3c00);
    assert_int_equal(h3[1], 0xc000);
    assert_int_equal(h3[2], 0x7bff);
    assert_ckpt_ok(ckpt_bundle_reader_read(r, "bf16", h3, sizeof(h3)));
    assert_int_equal(h3[0], 0x3f80);
    assert_int_equal(h3[2], 0x4049);
    assert_ckpt_ok(ckpt_bundle_reader_read(r, "c64", cf, sizeof(cf)));
    assert_true(cf[0] == 1.5f && cf[1] == -2.0f && cf[2] == 0.25f &&
                cf[3] == 1e30f);
    assert_ckpt_ok(ckpt_bundle_reader_read(r, "c128", cd, sizeof(cd)));
    assert_true(cd[0] == -0.125 && cd[1] == 6.02214076e23);
    assert_ckpt_ok(ckpt_bundle_reader_read(r, "u64", u2, sizeof(u2)));
    assert_true(u2[0] == UINT64_MAX && u2[1] == 1);
    assert_ckpt_ok(ckpt_bundle_reader_read(r, "i64", l2, sizeof(l2)));
    assert_true(l2[0] == INT64_MIN && l2[1] == -1);
    assert_ckpt_ok(ckpt_bundle_reader_read(r, "f64", &d, sizeof(d)));
    assert_true(d == f64);
    assert_ckpt_ok(ckpt_bundle_reader_read(r, "i8", c2, sizeof(c2)));
    assert_true(c2[0] == -128 && c2[1] == 127);
    /* a buffer of another type: the message gives the tensor's dtype and
     * shape, the usual cause (it gave only the two sizes) */
    assert_ckpt_error(ckpt_bundle_reader_read(r, "c64", cd, sizeof(cf) / 2),
                      CKPT_EINVAL,
                      "tensor 'c64': destination of 8 bytes, the tensor has "
                      "16 (complex64 [2])");
    ckpt_bundle_reader_free(r);
}

/* ---- strings
 * --------------------------------------------------------------------- */

/* A bool record whose bytes are not 0 or 1 (a hostile or hand-made file;
 * TensorFlow reads any non-zero byte as true) is read as C's bool holds
 * it: 0 or 1, by the plain read and by read_many alike, and its CRC is
 * still that of the stored bytes. */
static void test_bool_bytes_read_as_bool(void **state)
{
    fixture *f = *state;
    static const uint8_t stored[5] = {0, 1, 2, 255, 0x80};
    static const uint8_t want[5] = {0, 1, 1, 1, 1};
    ckpt_shape s5 = shape1(5);
    ckpt_bundle_writer *w = open_writer(f->prefix, 1, 1, NULL);
    ckpt_bundle_reader *r;
    uint8_t got[5], many[5];
    ckpt_read_request req = {"b", many, sizeof(many)};
    assert_ckpt_ok(ckpt_bundle_writer_add(w, "b", CKPT_DT_BOOL, &s5, stored,
                                          sizeof(stored)));
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);
    assert_ckpt_ok(ckpt_bundle_reader_open(&r, f->prefix, NULL));
    assert_ckpt_ok(ckpt_bundle_reader_read(r, "b", got, sizeof(got)));
    assert_memory_equal(got, want, sizeof(want));
    assert_ckpt_ok(ckpt_bundle_reader_read_many(r, &req, 1));
    assert_memory_equal(many, want, sizeof(want));
    assert_ckpt_ok(ckpt_bundle_reader_verify(r));
    ckpt_bundle_reader_free(r);
}

static void test_strings_varied(void **state)
{
    fixture *f = *state;
    static const uint8_t bin[] = {0x00, 0xff, 0x00, 0x80, 0x7f, 0x0a};
    char *big = malloc(300);
    int64_t dims[2] = {2, 2};
    ckpt_shape s22 = bt_shape(2, dims);
    ckpt_shape s0 = shape1(0);
    ckpt_shape sc = scalar();
    ckpt_slice four[4] = {{"", 0}, {bin, sizeof(bin)}, {NULL, 0}, {NULL, 300}};
    ckpt_slice one = {"", 0};
    ckpt_slice hello = {"hello", 5};
    ckpt_bundle_writer *w = open_writer(f->prefix, 1, 1, NULL);
    ckpt_bundle_reader *r;
    const ckpt_tensor_entry *e;
    ckpt_string_array a;
    static const uint8_t empty_record[4] = {0xd8, 0xea, 0x82, 0xa2};
    ckpt_buf rec = CKPT_BUF_INIT;

    assert_non_null(big);
    for (int i = 0; i < 300; i++)
        big[i] = (char)(i * 7);
    four[3].ptr = big;
    assert_ckpt_ok(ckpt_bundle_writer_add_strings(w, "four", &s22, four, 4));
    assert_ckpt_ok(ckpt_bundle_writer_add_strings(w, "none", &s0, NULL, 0));
    assert_ckpt_ok(ckpt_bundle_writer_add_strings(w, "empty", &sc, &one, 1));
    assert_ckpt_ok(ckpt_bundle_writer_add_strings(w, "hello", &sc, &hello, 1));
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);

    r = open_reader(f->prefix);
    assert_ckpt_ok(ckpt_bundle_reader_read_strings(r, "four", &a));
    assert_int_equal(a.count, 4);
    assert_int_equal(a.strings[0].len, 0);
    assert_int_equal(a.strings[1].len, sizeof(bin));
    assert_memory_equal(a.strings[1].ptr, bin, sizeof(bin));
    assert_int_equal(a.strings[2].len, 0);
    assert_int_equal(a.strings[3].len, 300);
    assert_memory_equal(a.strings[3].ptr, big, 300);
    ckpt_string_array_dispose(&a);
    /* 300 needs a two-byte varint: 1+1+1+2 + 4 + 306 */
    assert_ckpt_ok(ckpt_bundle_reader_find(&e, r, "four"));
    assert_int_equal(e->size, 5 + 4 + 306);
    /* by its entry: the same elements */
    assert_ckpt_ok(ckpt_bundle_reader_read_strings_entry(r, e, &a));
    assert_int_equal(a.count, 4);
    assert_int_equal(a.strings[1].len, sizeof(bin));
    assert_memory_equal(a.strings[1].ptr, bin, sizeof(bin));
    assert_int_equal(a.strings[3].len, 300);
    assert_memory_equal(a.strings[3].ptr, big, 300);
    ckpt_string_array_dispose(&a);

    assert_ckpt_ok(ckpt_bundle_reader_read_strings(r, "none", &a));
    assert_int_equal(a.count, 0);
    ckpt_string_array_dispose(&a);
    assert_ckpt_ok(ckpt_bundle_reader_find(&e, r, "none"));
    assert_int_equal(e->size, 4);
    assert_ckpt_ok(ckpt_bundle_reader_read_record(r, e, &rec));
    assert_int_equal(rec.size, 4);
    assert_memory_equal(rec.ptr, empty_record, 4);

    assert_ckpt_ok(ckpt_bundle_reader_read_strings(r, "empty", &a));
    assert_int_equal(a.count, 1);
    assert_int_equal(a.strings[0].len, 0);
    ckpt_string_array_dispose(&a);
    assert_ckpt_ok(ckpt_bundle_reader_read_strings(r, "hello", &a));
    assert_int_equal(a.count, 1);
    assert_int_equal(a.strings[0].len, 5);
    assert_memory_equal(a.strings[0].ptr, "hello", 5);
    ckpt_string_array_dispose(&a);
    assert_ckpt_ok(ckpt_bundle_reader_verify(r));

    /* wrong-kind reads */
    assert_ckpt_error(ckpt_bundle_reader_read(r, "hello", big, 10),
                      CKPT_ENOTSUP, "'hello'");
    assert_ckpt_ok(ckpt_bundle_reader_find(&e, r, "hello"));
    assert_ckpt_error(ckpt_bundle_reader_read_entry(r, e, big, 10),
                      CKPT_ENOTSUP, "'hello'");
    ckpt_bundle_reader_free(r);
    ckpt_buf_dispose(&rec);
    free(big);
}

/* ---- shards and alignment
 * ----------------------------------------------------------- */

static void check_sharded(const char *dir, const char *prefix, int shards)
{
    ckpt_bundle_reader *r = open_reader(prefix);
    const ckpt_tensor_entry *e;
    int32_t v[4];
    ckpt_string_array a;
    char name[64];

    assert_int_equal(ckpt_bundle_reader_num_shards(r), shards);
    assert_int_equal(ckpt_bundle_reader_count(r), 2 * shards + 1);
    for (int s = 0; s < shards; s++) {
        for (int k = 0; k < 2; k++) {
            snprintf(name, sizeof(name), "v%d_%d", s, k);
            assert_ckpt_ok(ckpt_bundle_reader_find(&e, r, name));
            assert_int_equal(e->shard_id, s);
            assert_int_equal(e->offset, 16 * k);
            assert_ckpt_ok(ckpt_bundle_reader_read(r, name, v, sizeof(v)));
            for (int j = 0; j < 4; j++)
                assert_int_equal(v[j], s * 100 + k * 10 + j);
        }
        snprintf(name, sizeof(name), "ckpt.data-%05d-of-%05d", s, shards);
        assert_int_equal(bt_count_files(dir, name, NULL), 1);
    }
    assert_ckpt_ok(ckpt_bundle_reader_read_strings(r, "str", &a));
    assert_int_equal(a.count, 1);
    assert_memory_equal(a.strings[0].ptr, "last", 4);
    ckpt_string_array_dispose(&a);
    assert_ckpt_ok(ckpt_bundle_reader_find(&e, r, "str"));
    assert_int_equal(e->shard_id, shards - 1);
    assert_ckpt_ok(ckpt_bundle_reader_verify(r));
    ckpt_bundle_reader_free(r);
    assert_int_equal(bt_count_files(dir, NULL, NULL), (size_t)shards + 1);
}

static void write_sharded(const char *prefix, int shards)
{
    ckpt_bundle_writer *w = open_writer(prefix, shards, 1, NULL);
    ckpt_shape s4 = shape1(4);
    ckpt_shape sc = scalar();
    ckpt_slice last = {"last", 4};
    char name[32];
    /* shards in reverse order, two tensors each */
    for (int s = shards - 1; s >= 0; s--) {
        assert_ckpt_ok(ckpt_bundle_writer_select_shard(w, s));
        for (int k = 0; k < 2; k++) {
            int32_t v[4];
            for (int j = 0; j < 4; j++)
                v[j] = s * 100 + k * 10 + j;
            snprintf(name, sizeof(name), "v%d_%d", s, k);
            assert_ckpt_ok(ckpt_bundle_writer_add(w, name, CKPT_DT_INT32, &s4,
                                                  v, sizeof(v)));
        }
    }
    assert_ckpt_ok(ckpt_bundle_writer_select_shard(w, shards - 1));
    assert_ckpt_ok(ckpt_bundle_writer_add_strings(w, "str", &sc, &last, 1));
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);
}

static void test_two_shards(void **state)
{
    fixture *f = *state;
    write_sharded(f->prefix, 2);
    check_sharded(f->dir, f->prefix, 2);
}

static void test_three_shards(void **state)
{
    fixture *f = *state;
    write_sharded(f->prefix, 3);
    check_sharded(f->dir, f->prefix, 3);
}

static void test_unused_shard_is_empty_file(void **state)
{
    fixture *f = *state;
    ckpt_bundle_writer *w = open_writer(f->prefix, 3, 1, NULL);
    ckpt_shape sc = scalar();
    float v = 2.5f, got = 0;
    uint8_t *data;
    size_t n = 99;
    ckpt_bundle_reader *r;
    assert_ckpt_ok(
        ckpt_bundle_writer_add(w, "a", CKPT_DT_FLOAT, &sc, &v, sizeof(v)));
    assert_ckpt_error(ckpt_bundle_writer_select_shard(w, 3), CKPT_EINVAL,
                      "shard 3");
    ckpt_bundle_writer_free(w);
    assert_int_equal(bt_count_files(f->dir, NULL, NULL), 0);

    w = open_writer(f->prefix, 3, 1, NULL);
    assert_ckpt_ok(
        ckpt_bundle_writer_add(w, "a", CKPT_DT_FLOAT, &sc, &v, sizeof(v)));
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);
    assert_int_equal(bt_count_files(f->dir, NULL, NULL), 4);
    data = read_named(f->dir, "ckpt.data-00002-of-00003", &n);
    assert_non_null(data);
    assert_int_equal(n, 0);
    free(data);
    r = open_reader(f->prefix);
    assert_ckpt_ok(ckpt_bundle_reader_read(r, "a", &got, sizeof(got)));
    assert_true(got == 2.5f);
    ckpt_bundle_reader_free(r);
}

static void test_alignment_padding(void **state)
{
    fixture *f = *state;
    ckpt_bundle_writer *w = open_writer(f->prefix, 1, 8, NULL);
    ckpt_shape s3 = shape1(3), s5 = shape1(5), s8 = shape1(8);
    ckpt_shape sc = scalar();
    static const uint8_t a[3] = {1, 2, 3};
    static const uint8_t b[5] = {4, 5, 6, 7, 8};
    static const uint8_t c[8] = {9, 9, 9, 9, 9, 9, 9, 9};
    ckpt_slice str = {"zz", 2};
    ckpt_bundle_reader *r;
    const ckpt_tensor_entry *e;
    uint8_t got[8];
    uint8_t *data;
    size_t n;

    assert_ckpt_ok(ckpt_bundle_writer_add(w, "a", CKPT_DT_UINT8, &s3, a, 3));
    assert_ckpt_ok(ckpt_bundle_writer_add(w, "b", CKPT_DT_UINT8, &s5, b, 5));
    assert_ckpt_ok(ckpt_bundle_writer_add_strings(w, "s", &sc, &str, 1));
    assert_ckpt_ok(ckpt_bundle_writer_add(w, "c", CKPT_DT_UINT8, &s8, c, 8));
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);

    data = read_named(f->dir, "ckpt.data-00000-of-00001", &n);
    /* a@0 (3) pad 5, b@8 (5) pad 3, s@16 (7) pad 1, c@24 (8) */
    assert_int_equal(n, 32);
    assert_memory_equal(data, a, 3);
    for (int i = 3; i < 8; i++)
        assert_int_equal(data[i], 0);
    assert_memory_equal(data + 8, b, 5);
    for (int i = 13; i < 16; i++)
        assert_int_equal(data[i], 0);
    assert_int_equal(data[23], 0);
    assert_memory_equal(data + 24, c, 8);
    free(data);

    r = open_reader(f->prefix);
    assert_ckpt_ok(ckpt_bundle_reader_find(&e, r, "b"));
    assert_int_equal(e->offset, 8);
    assert_int_equal(e->size, 5);
    assert_ckpt_ok(ckpt_bundle_reader_find(&e, r, "s"));
    assert_int_equal(e->offset, 16);
    assert_int_equal(e->size, 7);
    assert_ckpt_ok(ckpt_bundle_reader_find(&e, r, "c"));
    assert_int_equal(e->offset, 24);
    assert_ckpt_ok(ckpt_bundle_reader_read(r, "c", got, 8));
    assert_memory_equal(got, c, 8);
    assert_ckpt_ok(ckpt_bundle_reader_verify(r));
    ckpt_bundle_reader_free(r);
}

static void test_keys_sorted_bytewise(void **state)
{
    fixture *f = *state;
    static const char *names[] = {"b",    "a/b",      "a",  "B", "ab",
                                  "\x7f", "\xc3\xa9", "a0", "_", "a.b"};
    static const char *sorted[] = {"B",  "_",  "a", "a.b",  "a/b",
                                   "a0", "ab", "b", "\x7f", "\xc3\xa9"};
    ckpt_bundle_writer *w = open_writer(f->prefix, 1, 1, NULL);
    ckpt_shape sc = scalar();
    ckpt_bundle_reader *r;
    for (int i = 0; i < 10; i++) {
        int32_t v = i;
        assert_ckpt_ok(ckpt_bundle_writer_add(w, names[i], CKPT_DT_INT32, &sc,
                                              &v, sizeof(v)));
    }
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);
    r = open_reader(f->prefix);
    assert_int_equal(ckpt_bundle_reader_count(r), 10);
    assert_null(ckpt_bundle_reader_entry(r, 10));
    for (size_t i = 0; i < 10; i++) {
        const ckpt_tensor_entry *e = ckpt_bundle_reader_entry(r, i);
        int32_t v = -1;
        assert_string_equal(e->name, sorted[i]);
        assert_int_equal(e->name_len, strlen(sorted[i]));
        /* records stay in add order: offset = 4 * add index */
        assert_ckpt_ok(ckpt_bundle_reader_read(r, e->name, &v, sizeof(v)));
        assert_int_equal(e->offset, 4 * v);
        assert_string_equal(names[v], sorted[i]);
    }
    ckpt_bundle_reader_free(r);
}

static void test_many_tensors_multi_block(void **state)
{
    fixture *f = *state;
    /* enough long names that the index needs several 256 KiB blocks */
    ckpt_bundle_writer *w = open_writer(f->prefix, 1, 1, NULL);
    ckpt_shape sc = scalar();
    ckpt_bundle_reader *r;
    char name[600];
    const int count = 1500;
    memset(name, 'n', sizeof(name));
    name[sizeof(name) - 1] = '\0';
    for (int i = 0; i < count; i++) {
        int64_t v = (int64_t)i * 1000003;
        snprintf(name, 8, "%06d/", (i * 7919) % count);
        name[7] = 'n';
        assert_ckpt_ok(
            ckpt_bundle_writer_add(w, name, CKPT_DT_INT64, &sc, &v, sizeof(v)));
    }
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);
    r = open_reader(f->prefix);
    assert_int_equal(ckpt_bundle_reader_count(r), (size_t)count);
    for (int i = 0; i < count; i += 97) {
        int64_t v;
        int k = (i * 7919) % count;
        snprintf(name, 8, "%06d/", k);
        name[7] = 'n';
        assert_ckpt_ok(ckpt_bundle_reader_read(r, name, &v, sizeof(v)));
        assert_int_equal(v, (int64_t)i * 1000003);
    }
    assert_ckpt_ok(ckpt_bundle_reader_verify(r));
    ckpt_bundle_reader_free(r);
    {
        size_t n = 0;
        free(read_named(f->dir, "ckpt.index", &n));
        assert_true(n > 2 * CKPT__TABLE_BLOCK_SIZE);
    }
}

static void test_large_and_small_records_interleaved(void **state)
{
    fixture *f = *state;
    const size_t big_n = (1u << 20) + 5; /* past the writer's buffer */
    uint8_t *big = malloc(big_n);
    uint8_t *got = malloc(big_n);
    ckpt_shape sb = shape1((int64_t)big_n), s3 = shape1(3);
    ckpt_bundle_writer *w = open_writer(f->prefix, 2, 1, NULL);
    ckpt_bundle_reader *r;
    const ckpt_tensor_entry *e;
    static const uint8_t small[3] = {7, 8, 9};
    char name[16];
    assert_non_null(big);
    assert_non_null(got);
    for (size_t i = 0; i < big_n; i++)
        big[i] = (uint8_t)(i * 131 + (i >> 9));
    for (int k = 0; k < 6; k++) {
        assert_ckpt_ok(ckpt_bundle_writer_select_shard(w, k % 2));
        snprintf(name, sizeof(name), "s%d", k);
        assert_ckpt_ok(
            ckpt_bundle_writer_add(w, name, CKPT_DT_UINT8, &s3, small, 3));
        snprintf(name, sizeof(name), "b%d", k);
        big[0] = (uint8_t)k;
        assert_ckpt_ok(
            ckpt_bundle_writer_add(w, name, CKPT_DT_UINT8, &sb, big, big_n));
    }
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);
    r = open_reader(f->prefix);
    for (int k = 0; k < 6; k++) {
        snprintf(name, sizeof(name), "b%d", k);
        assert_ckpt_ok(ckpt_bundle_reader_find(&e, r, name));
        assert_int_equal(e->shard_id, k % 2);
        assert_int_equal(e->offset, (int64_t)((k / 2) * (big_n + 3) + 3));
        assert_ckpt_ok(ckpt_bundle_reader_read(r, name, got, big_n));
        big[0] = (uint8_t)k;
        assert_memory_equal(got, big, big_n);
        snprintf(name, sizeof(name), "s%d", k);
        assert_ckpt_ok(ckpt_bundle_reader_read(r, name, got, 3));
        assert_memory_equal(got, small, 3);
    }
    assert_ckpt_ok(ckpt_bundle_reader_verify(r));
    ckpt_bundle_reader_free(r);
    free(big);
    free(got);
}

/* ---- argument errors
 * ------------------------------------------------------------------- */

static void expect_no_bundle(const fixture *f)
{
    assert_int_equal(bt_count_files(f->dir, NULL, NULL), 0);
}

static void test_duplicate_name(void **state)
{
    fixture *f = *state;
    ckpt_bundle_writer *w = open_writer(f->prefix, 1, 1, NULL);
    ckpt_shape sc = scalar();
    float v = 1;
    ckpt_slice s = {"x", 1};
    assert_ckpt_ok(
        ckpt_bundle_writer_add(w, "dup", CKPT_DT_FLOAT, &sc, &v, sizeof(v)));
    assert_ckpt_error(
        ckpt_bundle_writer_add(w, "dup", CKPT_DT_FLOAT, &sc, &v, sizeof(v)),
        CKPT_EEXISTS, "'dup'");
    /* sticky: later calls and finish report the first error, saying it
     * is an earlier call's (an add of "other" said only "tensor 'dup' was
     * already added") */
    assert_ckpt_error(ckpt_bundle_writer_add_strings(w, "other", &sc, &s, 1),
                      CKPT_EEXISTS, "'dup'");
    assert_ckpt_error(
        ckpt_bundle_writer_add(w, "other", CKPT_DT_FLOAT, &sc, &v, 1),
        CKPT_EEXISTS, "an earlier call failed, so nothing more is added");
    ckpt_error_clear();
    assert_ckpt_error(ckpt_bundle_writer_finish(w), CKPT_EEXISTS,
                      "free the writer and start again");
    assert_ckpt_error(ckpt_bundle_writer_finish(w), CKPT_EEXISTS, "'dup'");
    assert_ckpt_error(ckpt_bundle_writer_finish(w), CKPT_EEXISTS, "'dup'");
    expect_no_bundle(f);
    ckpt_bundle_writer_free(w);
    expect_no_bundle(f);
}

static void test_duplicate_across_kinds(void **state)
{
    fixture *f = *state;
    ckpt_bundle_writer *w = open_writer(f->prefix, 1, 1, NULL);
    ckpt_shape sc = scalar();
    ckpt_slice s = {"x", 1};
    int32_t v = 1;
    assert_ckpt_ok(ckpt_bundle_writer_add_strings(w, "k", &sc, &s, 1));
    assert_ckpt_error(ckpt_bundle_writer_add_record(w, "k", CKPT_DT_INT32, &sc,
                                                    &v, sizeof(v)),
                      CKPT_EEXISTS, "'k'");
    ckpt_bundle_writer_free(w);
    expect_no_bundle(f);
}

typedef int (*bad_add_fn)(ckpt_bundle_writer *w);

static void expect_bad_add(const fixture *f, bad_add_fn fn, int code,
                           const char *needle)
{
    ckpt_bundle_writer *w = open_writer(f->prefix, 1, 1, NULL);
    assert_ckpt_error(fn(w), code, needle);
    assert_ckpt_error(ckpt_bundle_writer_finish(w), code, needle);
    ckpt_bundle_writer_free(w);
    expect_no_bundle(f);
}

static int add_empty_name(ckpt_bundle_writer *w)
{
    ckpt_shape sc = scalar();
    float v = 0;
    return ckpt_bundle_writer_add(w, "", CKPT_DT_FLOAT, &sc, &v, sizeof(v));
}

static int add_null_name(ckpt_bundle_writer *w)
{
    ckpt_shape sc = scalar();
    float v = 0;
    return ckpt_bundle_writer_add(w, NULL, CKPT_DT_FLOAT, &sc, &v, sizeof(v));
}

static int add_negative_dim(ckpt_bundle_writer *w)
{
    ckpt_shape s = shape1(-2);
    float v = 0;
    return ckpt_bundle_writer_add(w, "neg", CKPT_DT_FLOAT, &s, &v, sizeof(v));
}

static int add_bad_rank(ckpt_bundle_writer *w)
{
    ckpt_shape s = scalar();
    float v = 0;
    s.rank = CKPT_MAX_RANK + 1;
    return ckpt_bundle_writer_add(w, "deep", CKPT_DT_FLOAT, &s, &v, sizeof(v));
}

static int add_overflow_shape(ckpt_bundle_writer *w)
{
    int64_t dims[3] = {INT64_MAX / 2, 4, 1};
    ckpt_shape s = bt_shape(3, dims);
    float v = 0;
    return ckpt_bundle_writer_add(w, "huge", CKPT_DT_FLOAT, &s, &v, sizeof(v));
}

static int add_bytes_overflow(ckpt_bundle_writer *w)
{
    /* element count fits in int64, byte size does not */
    ckpt_shape s = shape1(INT64_MAX / 4);
    float v = 0;
    return ckpt_bundle_writer_add(w, "bytes", CKPT_DT_DOUBLE, &s, &v,
                                  sizeof(v));
}

static int add_size_mismatch(ckpt_bundle_writer *w)
{
    ckpt_shape s = shape1(3);
    float v[4] = {0};
    return ckpt_bundle_writer_add(w, "short", CKPT_DT_FLOAT, &s, v, sizeof(v));
}

static int add_variant(ckpt_bundle_writer *w)
{
    ckpt_shape sc = scalar();
    uint8_t v[8] = {0};
    return ckpt_bundle_writer_add(w, "var", CKPT_DT_VARIANT, &sc, v, 8);
}

static int add_unknown_dtype(ckpt_bundle_writer *w)
{
    ckpt_shape sc = scalar();
    uint8_t v[8] = {0};
    return ckpt_bundle_writer_add(w, "u", 77, &sc, v, 8);
}

static int add_string_via_add(ckpt_bundle_writer *w)
{
    ckpt_shape sc = scalar();
    uint8_t v[8] = {0};
    return ckpt_bundle_writer_add(w, "str", CKPT_DT_STRING, &sc, v, 8);
}

static int add_strings_count(ckpt_bundle_writer *w)
{
    ckpt_shape s = shape1(2);
    ckpt_slice one = {"a", 1};
    return ckpt_bundle_writer_add_strings(w, "strs", &s, &one, 1);
}

static int add_record_bad_string(ckpt_bundle_writer *w)
{
    /* one element of length 5 but only 2 bytes follow the checksum */
    static const uint8_t rec[] = {0x05, 0, 0, 0, 0, 'a', 'b'};
    ckpt_shape sc = scalar();
    return ckpt_bundle_writer_add_record(w, "rec", CKPT_DT_STRING, &sc, rec,
                                         sizeof(rec));
}

static int add_record_bad_size(ckpt_bundle_writer *w)
{
    ckpt_shape s = shape1(2);
    int64_t v = 0;
    return ckpt_bundle_writer_add_record(w, "rec", CKPT_DT_INT64, &s, &v,
                                         sizeof(v));
}

static int add_null_data(ckpt_bundle_writer *w)
{
    ckpt_shape s = shape1(2);
    return ckpt_bundle_writer_add(w, "nul", CKPT_DT_INT32, &s, NULL, 8);
}

static void test_invalid_adds(void **state)
{
    fixture *f = *state;
    expect_bad_add(f, add_empty_name, CKPT_EINVAL, "empty");
    expect_bad_add(f, add_null_name, CKPT_EINVAL, "NULL");
    expect_bad_add(f, add_negative_dim, CKPT_EINVAL, "'neg'");
    expect_bad_add(f, add_bad_rank, CKPT_EINVAL, "'deep'");
    expect_bad_add(f, add_overflow_shape, CKPT_EINVAL, "'huge'");
    expect_bad_add(f, add_bytes_overflow, CKPT_EINVAL, "'bytes'");
    expect_bad_add(f, add_size_mismatch, CKPT_EINVAL, "'short'");
    expect_bad_add(f, add_variant, CKPT_ENOTSUP, "variant");
    expect_bad_add(f, add_unknown_dtype, CKPT_ENOTSUP, "dtype 77");
    expect_bad_add(f, add_string_via_add, CKPT_EINVAL, "add_strings");
    expect_bad_add(f, add_strings_count, CKPT_EINVAL, "'strs'");
    expect_bad_add(f, add_record_bad_string, CKPT_EINVAL, "'rec'");
    expect_bad_add(f, add_record_bad_size, CKPT_EINVAL, "'rec'");
    expect_bad_add(f, add_null_data, CKPT_EINVAL, "'nul'");
}

static void test_open_errors(void **state)
{
    fixture *f = *state;
    ckpt_bundle_writer *w = (ckpt_bundle_writer *)1;
    ckpt_bundle_writer_options o = CKPT_BUNDLE_WRITER_OPTIONS_INIT;
    ckpt_bundle_reader *r = (ckpt_bundle_reader *)1;
    char *missing = test_path(f->dir, "no/such/dir/ckpt");
    char want[4200];
    assert_ckpt_error(ckpt_bundle_writer_open(&w, missing, NULL),
                      CKPT_ENOTFOUND,
                      "cannot create "); /* the file asked for, */
    snprintf(want, sizeof(want),
             "no/such/dir/ckpt.data-00000-of-00001: directory %s/no/such/dir "
             "does not exist",
             f->dir);
    assert_non_null(strstr(ckpt_error_last()->message, want));
    assert_null(strstr(ckpt_error_last()->message, "tempstate")); /* only */
    assert_null(w);
    assert_ckpt_error(ckpt_bundle_writer_open(&w, "", NULL), CKPT_EINVAL,
                      "prefix");
    o.version = 99;
    assert_ckpt_error(ckpt_bundle_writer_open(&w, f->prefix, &o), CKPT_EVERSION,
                      "version");
    assert_ckpt_error(ckpt_bundle_writer_options_init(&o, 2), CKPT_EVERSION,
                      "version");
    assert_ckpt_ok(ckpt_bundle_writer_options_init(
        &o, CKPT_BUNDLE_WRITER_OPTIONS_VERSION));
    assert_int_equal(o.num_shards, 0);
    o.num_shards = -1;
    assert_ckpt_error(ckpt_bundle_writer_open(&w, f->prefix, &o), CKPT_EINVAL,
                      "num_shards");
    assert_ckpt_error(ckpt_bundle_reader_open(&r, f->prefix, NULL),
                      CKPT_ENOTFOUND, "ckpt.index");
    assert_null(r);
    expect_no_bundle(f);
    free(missing);
}

static void test_abandon_leaves_nothing(void **state)
{
    fixture *f = *state;
    ckpt_bundle_writer *w = open_writer(f->prefix, 2, 4, NULL);
    ckpt_shape s = shape1(1000);
    float *v = calloc(1000, sizeof(float));
    assert_non_null(v);
    assert_ckpt_ok(ckpt_bundle_writer_add(w, "a", CKPT_DT_FLOAT, &s, v,
                                          1000 * sizeof(float)));
    assert_ckpt_ok(ckpt_bundle_writer_select_shard(w, 1));
    assert_ckpt_ok(ckpt_bundle_writer_add(w, "b", CKPT_DT_FLOAT, &s, v,
                                          1000 * sizeof(float)));
    /* temporaries exist while writing, under .tempstate names */
    assert_int_equal(bt_count_files(f->dir, NULL, ".tempstate"), 2);
    assert_int_equal(bt_count_files(f->dir, NULL, NULL), 2);
    ckpt_bundle_writer_free(w);
    expect_no_bundle(f);
    free(v);
}

static void test_finish_twice(void **state)
{
    fixture *f = *state;
    ckpt_bundle_writer *w = open_writer(f->prefix, 1, 1, NULL);
    ckpt_shape sc = scalar();
    float v = 0;
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    assert_ckpt_error(ckpt_bundle_writer_finish(w), CKPT_ESTATE, "finished");
    assert_ckpt_error(
        ckpt_bundle_writer_add(w, "late", CKPT_DT_FLOAT, &sc, &v, sizeof(v)),
        CKPT_ESTATE, "finished");
    ckpt_bundle_writer_free(w);
    /* an empty bundle: index + one empty data file */
    assert_int_equal(bt_count_files(f->dir, NULL, NULL), 2);
    ckpt_bundle_reader *r = open_reader(f->prefix);
    assert_int_equal(ckpt_bundle_reader_count(r), 0);
    assert_ckpt_ok(ckpt_bundle_reader_verify(r));
    ckpt_bundle_reader_free(r);
}

static void test_overwrite_existing_bundle(void **state)
{
    fixture *f = *state;
    ckpt_shape sc = scalar();
    float v = 1, got = 0;
    ckpt_bundle_writer *w;
    ckpt_bundle_reader *r;
    for (int round = 0; round < 2; round++) {
        v = (float)round + 0.5f;
        w = open_writer(f->prefix, 1, 1, NULL);
        assert_ckpt_ok(
            ckpt_bundle_writer_add(w, "v", CKPT_DT_FLOAT, &sc, &v, sizeof(v)));
        assert_ckpt_ok(ckpt_bundle_writer_finish(w));
        ckpt_bundle_writer_free(w);
    }
    r = open_reader(f->prefix);
    assert_ckpt_ok(ckpt_bundle_reader_read(r, "v", &got, sizeof(got)));
    assert_true(got == 1.5f);
    ckpt_bundle_reader_free(r);
    assert_int_equal(bt_count_files(f->dir, NULL, NULL), 2);
}

/* ---- reader API errors
 * ------------------------------------------------------------------- */

/* A TensorFlow user asks for the graph tensor "dense/bias:0": the key is
 * "dense/bias", and the message says so (it once said only "no tensor
 * named"). A key that has a colon itself is still found as it is. A
 * TensorFlow 2 user asks for a variable by its object path ("net/w"):
 * tf.train.Checkpoint stores its value as "net/w/.ATTRIBUTES/
 * VARIABLE_VALUE", and the message says so; a name whose suffixed key is
 * absent gets no hint. */
static void test_output_suffix_named(void **state)
{
    fixture *f = *state;
    ckpt_bundle_writer *w = open_writer(f->prefix, 1, 1, NULL);
    ckpt_shape s2 = shape1(2);
    float v[2] = {1, 2};
    ckpt_bundle_reader *r;
    const ckpt_tensor_entry *e = NULL;
    assert_ckpt_ok(ckpt_bundle_writer_add(w, "dense/bias", CKPT_DT_FLOAT, &s2,
                                          v, sizeof(v)));
    assert_ckpt_ok(
        ckpt_bundle_writer_add(w, "x:1", CKPT_DT_FLOAT, &s2, v, sizeof(v)));
    assert_ckpt_ok(ckpt_bundle_writer_add(w, "net/w/.ATTRIBUTES/VARIABLE_VALUE",
                                          CKPT_DT_FLOAT, &s2, v, sizeof(v)));
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);
    assert_ckpt_ok(ckpt_bundle_reader_open(&r, f->prefix, NULL));
    assert_ckpt_error(ckpt_bundle_reader_read(r, "dense/bias:0", v, sizeof(v)),
                      CKPT_ENOTFOUND,
                      "no tensor named 'dense/bias:0' (checkpoint keys are "
                      "variable names, without a graph tensor's output "
                      "suffix ':0': use 'dense/bias')");
    assert_ckpt_error(ckpt_bundle_reader_find(&e, r, "x:1:12"), CKPT_ENOTFOUND,
                      "suffix ':12': use 'x:1')");
    assert_ckpt_error(ckpt_bundle_reader_find(&e, r, "nope:0"), CKPT_ENOTFOUND,
                      "no tensor named 'nope:0'");
    assert_null(strstr(ckpt_error_last()->message, "suffix"));
    assert_ckpt_error(ckpt_bundle_reader_find(&e, r, "dense/bias:"),
                      CKPT_ENOTFOUND, "no tensor named 'dense/bias:'");
    assert_null(strstr(ckpt_error_last()->message, "suffix"));
    assert_ckpt_ok(ckpt_bundle_reader_find(&e, r, "x:1"));
    assert_string_equal(e->name, "x:1");
    assert_ckpt_error(ckpt_bundle_reader_read(r, "net/w", v, sizeof(v)),
                      CKPT_ENOTFOUND,
                      "no tensor named 'net/w' (a TensorFlow 2 checkpoint "
                      "stores a variable's value under its object path "
                      "followed by '/.ATTRIBUTES/VARIABLE_VALUE': use "
                      "'net/w/.ATTRIBUTES/VARIABLE_VALUE')");
    assert_ckpt_error(ckpt_bundle_reader_find(&e, r, "net/b"), CKPT_ENOTFOUND,
                      "no tensor named 'net/b'");
    assert_null(strstr(ckpt_error_last()->message, "TensorFlow 2"));
    ckpt_bundle_reader_free(r);
}

/* A TensorFlow 1 user asks for one part of a partitioned variable by its
 * graph name ("emb/part_1"): the checkpoint holds the parts as pieces of
 * "emb", and the message says to read that (it said only "no tensor
 * named"). A key that ends so is found as it is, and the part name of a
 * tensor that is not partitioned gets no hint. */
static void test_partition_name_named(void **state)
{
    fixture *f = *state;
    ckpt_bundle_writer *w = open_writer(f->prefix, 1, 1, NULL);
    ckpt_shape full = {2, {4, 3}}, s2 = shape1(2);
    ckpt_slice_extent e0[2] = {{0, 2}, {0, CKPT_SLICE_FULL}};
    ckpt_slice_extent e1[2] = {{2, 2}, {0, CKPT_SLICE_FULL}};
    float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {7, 8, 9, 10, 11, 12}, v[12];
    ckpt_bundle_reader *r;
    const ckpt_tensor_entry *e = NULL;
    assert_ckpt_ok(ckpt_bundle_writer_add_slice(w, "emb", CKPT_DT_FLOAT, &full,
                                                e0, a, sizeof(a)));
    assert_ckpt_ok(ckpt_bundle_writer_add_slice(w, "emb", CKPT_DT_FLOAT, &full,
                                                e1, b, sizeof(b)));
    assert_ckpt_ok(ckpt_bundle_writer_add(w, "solo", CKPT_DT_FLOAT, &s2, a,
                                          2 * sizeof(float)));
    assert_ckpt_ok(ckpt_bundle_writer_add(w, "w/part_0", CKPT_DT_FLOAT, &s2, a,
                                          2 * sizeof(float)));
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);
    assert_ckpt_ok(ckpt_bundle_reader_open(&r, f->prefix, NULL));
    assert_ckpt_error(ckpt_bundle_reader_read(r, "emb/part_1", v, sizeof(a)),
                      CKPT_ENOTFOUND,
                      "no tensor named 'emb/part_1' (TensorFlow saves the "
                      "parts of a partitioned variable as pieces of one "
                      "tensor under the variable's name: use 'emb', which "
                      "reads them assembled)");
    assert_ckpt_error(ckpt_bundle_reader_find(&e, r, "solo/part_0"),
                      CKPT_ENOTFOUND, "no tensor named 'solo/part_0'");
    assert_null(strstr(ckpt_error_last()->message, "partitioned"));
    assert_ckpt_error(ckpt_bundle_reader_find(&e, r, "emb/part_"),
                      CKPT_ENOTFOUND, "no tensor named 'emb/part_'");
    assert_null(strstr(ckpt_error_last()->message, "partitioned"));
    assert_ckpt_ok(ckpt_bundle_reader_find(&e, r, "w/part_0"));
    assert_string_equal(e->name, "w/part_0");
    assert_ckpt_ok(ckpt_bundle_reader_read(r, "emb", v, sizeof(v)));
    assert_true(v[0] == 1.f && v[11] == 12.f);
    ckpt_bundle_reader_free(r);
}

/* Names too long for a message to show whole (their first 200 bytes and
 * "..."): the hints said to use that cut name followed by the TensorFlow
 * 2 suffix, or the cut name without the output suffix, neither of them a
 * key. They say what to do to the name instead. */
static void test_output_suffix_named_long(void **state)
{
    fixture *f = *state;
    ckpt_bundle_writer *w = open_writer(f->prefix, 1, 1, NULL);
    ckpt_shape s2 = shape1(2);
    float v[2] = {1, 2};
    char var[301], obj[301], key[400];
    ckpt_bundle_reader *r;
    const ckpt_tensor_entry *e = NULL;
    memset(var, 'v', 300);
    var[300] = '\0';
    memset(obj, 'o', 300);
    obj[300] = '\0';
    snprintf(key, sizeof(key), "%s/.ATTRIBUTES/VARIABLE_VALUE", obj);
    assert_ckpt_ok(
        ckpt_bundle_writer_add(w, var, CKPT_DT_FLOAT, &s2, v, sizeof(v)));
    assert_ckpt_ok(
        ckpt_bundle_writer_add(w, key, CKPT_DT_FLOAT, &s2, v, sizeof(v)));
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);
    assert_ckpt_ok(ckpt_bundle_reader_open(&r, f->prefix, NULL));
    assert_ckpt_error(ckpt_bundle_reader_find(&e, r, obj), CKPT_ENOTFOUND,
                      "followed by '/.ATTRIBUTES/VARIABLE_VALUE': use the "
                      "name followed by it)");
    snprintf(key, sizeof(key), "%s:0", var);
    assert_ckpt_error(ckpt_bundle_reader_find(&e, r, key), CKPT_ENOTFOUND,
                      "suffix ':0': use the name without it)");
    ckpt_bundle_reader_free(r);
}

static void test_reader_api_errors(void **state)
{
    fixture *f = *state;
    ckpt_bundle_writer *w = open_writer(f->prefix, 1, 1, NULL);
    ckpt_shape s2 = shape1(2);
    float v[2] = {1, 2};
    ckpt_bundle_reader *r;
    const ckpt_tensor_entry *e = (const ckpt_tensor_entry *)1;
    ckpt_string_array a;
    ckpt_bundle_reader_options o;
    assert_ckpt_ok(
        ckpt_bundle_writer_add(w, "f", CKPT_DT_FLOAT, &s2, v, sizeof(v)));
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);

    assert_ckpt_error(ckpt_bundle_reader_options_init(&o, 7), CKPT_EVERSION,
                      "version");
    assert_ckpt_ok(ckpt_bundle_reader_options_init(
        &o, CKPT_BUNDLE_READER_OPTIONS_VERSION));
    o.skip_data_checksums = 1;
    assert_ckpt_ok(ckpt_bundle_reader_open(&r, f->prefix, &o));
    assert_string_equal(ckpt_bundle_reader_prefix(r), f->prefix);
    assert_ckpt_error(ckpt_bundle_reader_find(&e, r, "g"), CKPT_ENOTFOUND,
                      "'g'");
    assert_null(e);
    assert_ckpt_error(ckpt_bundle_reader_read(r, "g", v, sizeof(v)),
                      CKPT_ENOTFOUND, "'g'");
    assert_ckpt_error(ckpt_bundle_reader_read(r, "f", v, 4), CKPT_EINVAL,
                      "'f'");
    assert_ckpt_error(ckpt_bundle_reader_read_strings(r, "f", &a), CKPT_EINVAL,
                      "not string");
    assert_int_equal(a.count, 0);
    assert_ckpt_ok(ckpt_bundle_reader_read(r, "f", v, sizeof(v)));
    assert_true(v[0] == 1 && v[1] == 2);
    ckpt_bundle_reader_free(r);
    ckpt_bundle_reader_free(NULL);
    ckpt_bundle_writer_free(NULL);
    ckpt_string_array_dispose(NULL);
}

/* ---- raw records and the saver's image path
 * ------------------------------------------- */

static void test_add_record_copies_bundle(void **state)
{
    fixture *f = *state;
    char *prefix2 = test_path(f->dir, "copy");
    ckpt_bundle_reader *r, *r2;
    ckpt_bundle_writer *w;
    ckpt_buf rec = CKPT_BUF_INIT;
    ckpt_string_array a;

    write_sharded(f->prefix, 2);
    r = open_reader(f->prefix);
    w = open_writer(prefix2, 1, 1, NULL);
    for (size_t i = 0; i < ckpt_bundle_reader_count(r); i++) {
        const ckpt_tensor_entry *e = ckpt_bundle_reader_entry(r, i);
        ckpt__buf_clear(&rec);
        assert_ckpt_ok(ckpt_bundle_reader_read_record(r, e, &rec));
        assert_int_equal(rec.size, (size_t)e->size);
        assert_ckpt_ok(ckpt_bundle_writer_add_record(
            w, e->name, e->dtype, &e->shape, rec.ptr, rec.size));
    }
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);

    r2 = open_reader(prefix2);
    assert_int_equal(ckpt_bundle_reader_count(r2), ckpt_bundle_reader_count(r));
    for (size_t i = 0; i < ckpt_bundle_reader_count(r); i++) {
        const ckpt_tensor_entry *a1 = ckpt_bundle_reader_entry(r, i);
        const ckpt_tensor_entry *a2 = ckpt_bundle_reader_entry(r2, i);
        assert_string_equal(a1->name, a2->name);
        assert_int_equal(a1->crc32c, a2->crc32c);
        assert_int_equal(a1->size, a2->size);
        assert_int_equal(a2->shard_id, 0);
    }
    assert_ckpt_ok(ckpt_bundle_reader_read_strings(r2, "str", &a));
    assert_memory_equal(a.strings[0].ptr, "last", 4);
    ckpt_string_array_dispose(&a);
    assert_ckpt_ok(ckpt_bundle_reader_verify(r2));
    ckpt_bundle_reader_free(r);
    ckpt_bundle_reader_free(r2);
    ckpt_buf_dispose(&rec);
    free(prefix2);
}

static void test_raw_image_path(void **state)
{
    fixture *f = *state;
    ckpt_bundle_writer_options o = CKPT_BUNDLE_WRITER_OPTIONS_INIT;
    ckpt_bundle_writer *w = NULL;
    ckpt_bundle_reader *r;
    float img[6] = {1, 2, 3, 4, 5, 6};
    ckpt_shape s2 = shape1(2), s4 = shape1(4);
    float got[4];
    size_t index_size = 0;
    o.direct_io = 1;
    assert_ckpt_ok(ckpt_bundle_writer_open(&w, f->prefix, &o));
    assert_ckpt_ok(ckpt__bundle_writer_append_raw(w, img, sizeof(img)));
    assert_ckpt_ok(ckpt__bundle_writer_add_written(
        w, "head", CKPT_DT_FLOAT, &s2, 0, 8,
        ckpt__crc32c_mask(ckpt__crc32c(img, 8))));
    assert_ckpt_ok(ckpt__bundle_writer_add_written(
        w, "tail", CKPT_DT_FLOAT, &s4, 8, 16,
        ckpt__crc32c_mask(ckpt__crc32c(img + 2, 16))));
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    free(read_named(f->dir, "ckpt.index", &index_size));
    assert_int_equal(ckpt__bundle_writer_bytes(w), sizeof(img) + index_size);
    ckpt_bundle_writer_free(w);
    r = open_reader(f->prefix);
    assert_ckpt_ok(ckpt_bundle_reader_read(r, "tail", got, sizeof(got)));
    assert_true(got[0] == 3 && got[3] == 6);
    assert_ckpt_ok(ckpt_bundle_reader_verify(r));
    ckpt_bundle_reader_free(r);
}

static void test_raw_image_out_of_range(void **state)
{
    fixture *f = *state;
    ckpt_bundle_writer *w = open_writer(f->prefix, 1, 1, NULL);
    float img[2] = {1, 2};
    ckpt_shape s2 = shape1(2);
    assert_ckpt_ok(ckpt__bundle_writer_append_raw(w, img, sizeof(img)));
    assert_ckpt_error(
        ckpt__bundle_writer_add_written(w, "x", CKPT_DT_FLOAT, &s2, 4, 8, 0),
        CKPT_EINVAL, "'x'");
    assert_ckpt_error(ckpt_bundle_writer_finish(w), CKPT_EINVAL, "'x'");
    ckpt_bundle_writer_free(w);
    expect_no_bundle(f);
}

/* ---- injected failures
 * ------------------------------------------------------------------- */

/* Write a small two-shard bundle through `fs`; return the first error. */
static int save_through(const char *prefix, const ckpt_fs *fs, int *stage)
{
    ckpt_bundle_writer_options o = CKPT_BUNDLE_WRITER_OPTIONS_INIT;
    ckpt_bundle_writer *w = NULL;
    ckpt_shape s = shape1(64);
    ckpt_shape sc = scalar();
    ckpt_slice str = {"string value", 12};
    double v[64];
    int err;
    for (int i = 0; i < 64; i++)
        v[i] = i * 0.5;
    o.fs = fs;
    o.num_shards = 2;
    o.data_alignment = 16;
    *stage = 0;
    err = ckpt_bundle_writer_open(&w, prefix, &o);
    if (err < 0)
        return err;
    *stage = 1;
    err = ckpt_bundle_writer_add(w, "a", CKPT_DT_DOUBLE, &s, v, sizeof(v));
    if (err == 0)
        err = ckpt_bundle_writer_select_shard(w, 1);
    if (err == 0)
        err = ckpt_bundle_writer_add(w, "b", CKPT_DT_DOUBLE, &s, v, sizeof(v));
    if (err == 0)
        err = ckpt_bundle_writer_add_strings(w, "s", &sc, &str, 1);
    *stage = 2;
    {
        int ferr = ckpt_bundle_writer_finish(w);
        if (err == 0)
            err = ferr;
        else
            assert_int_equal(ferr, err); /* sticky */
    }
    ckpt_bundle_writer_free(w);
    return err;
}

static void check_complete(const char *prefix)
{
    ckpt_bundle_reader *r = open_reader(prefix);
    ckpt_string_array a;
    double v[64];
    assert_int_equal(ckpt_bundle_reader_count(r), 3);
    assert_ckpt_ok(ckpt_bundle_reader_read(r, "b", v, sizeof(v)));
    assert_true(v[63] == 31.5);
    assert_ckpt_ok(ckpt_bundle_reader_read_strings(r, "s", &a));
    assert_memory_equal(a.strings[0].ptr, "string value", 12);
    ckpt_string_array_dispose(&a);
    assert_ckpt_ok(ckpt_bundle_reader_verify(r));
    ckpt_bundle_reader_free(r);
}

static void fault_loop(const fixture *f, unsigned mask, int persistent,
                       int err_no)
{
    ckpt_fs_fault *ff = NULL;
    uint64_t total;
    int stage;
    size_t failures = 0, data_kept = 0;

    assert_ckpt_ok(ckpt_fs_fault_new(&ff, NULL));
    /* count the operations of a clean save */
    assert_ckpt_ok(save_through(f->prefix, ckpt_fs_fault_fs(ff), &stage));
    total = ckpt_fs_fault_count(ff, mask);
    assert_true(total > 10);
    check_complete(f->prefix);
    for (uint64_t n = 1; n <= total + 1; n++) {
        int rc;
        test_remove_tree(strdup(f->dir));
        assert_int_equal(mkdir(f->dir, 0700), 0);
        ckpt_fs_fault_fail(ff, n, mask, err_no, persistent, 3);
        rc = save_through(f->prefix, ckpt_fs_fault_fs(ff), &stage);
        ckpt_fs_fault_clear(ff);
        if (rc == 0) {
            /* only possible once every operation ran */
            assert_true(n > total);
            check_complete(f->prefix);
            continue;
        }
        failures++;
        assert_true(rc < 0);
        /* Nothing is left, except where the directory fsync after the
         * index's rename failed and so did the one that would have made
         * the index's removal durable (persistent faults): then the data
         * files stay, never an index or a temporary (a power cut could
         * otherwise keep the index and lose its data; a saver's next open
         * removes data files without an index). */
        if (persistent && bt_count_files(f->dir, NULL, NULL) == 2 &&
            bt_count_files(f->dir, NULL, ".data-0000") == 2 &&
            bt_count_files(f->dir, NULL, ".tempstate") == 0) {
            data_kept++;
            continue;
        }
        if (bt_count_files(f->dir, NULL, NULL) != 0) {
            print_message("fault at op %llu (stage %d) left files:\n",
                          (unsigned long long)n, stage);
            bt_list_files(f->dir);
            fail();
        }
    }
    assert_int_equal(failures, total);
    /* persistent: the final directory fsync is the one such point */
    assert_int_equal(data_kept, persistent ? 1 : 0);
    ckpt_fs_fault_free(ff);
}

static void test_fault_at_every_op(void **state)
{
    fault_loop(*state, CKPT_FS_OP_MUTATING, 0, EIO);
}

static void test_fault_persistent_enospc(void **state)
{
    /* every mutating op from the Nth on fails, except removals, which the
     * cleanup needs */
    fault_loop(*state, CKPT_FS_OP_MUTATING & ~CKPT_FS_OP_BIT(CKPT_FS_OP_REMOVE),
               1, ENOSPC);
}

/* Open, read and verify through a file system whose Nth read-side
 * operation fails: each attempt fails cleanly with the injected error. */
static int read_through(const char *prefix, const ckpt_fs *fs)
{
    ckpt_bundle_reader_options o = CKPT_BUNDLE_READER_OPTIONS_INIT;
    ckpt_bundle_reader *r = NULL;
    ckpt_string_array a;
    double v[64];
    int err;
    o.fs = fs;
    err = ckpt_bundle_reader_open(&r, prefix, &o);
    if (err == 0)
        err = ckpt_bundle_reader_read(r, "b", v, sizeof(v));
    if (err == 0)
        err = ckpt_bundle_reader_read_strings(r, "s", &a);
    if (err == 0) {
        assert_memory_equal(a.strings[0].ptr, "string value", 12);
        ckpt_string_array_dispose(&a);
        err = ckpt_bundle_reader_verify(r);
    }
    ckpt_bundle_reader_free(r);
    return err;
}

static void test_read_faults(void **state)
{
    fixture *f = *state;
    const unsigned mask = CKPT_FS_OP_ALL & ~CKPT_FS_OP_MUTATING;
    ckpt_fs_fault *ff = NULL;
    uint64_t total;
    int stage;
    assert_ckpt_ok(save_through(f->prefix, NULL, &stage));
    assert_ckpt_ok(ckpt_fs_fault_new(&ff, NULL));
    assert_ckpt_ok(read_through(f->prefix, ckpt_fs_fault_fs(ff)));
    total = ckpt_fs_fault_count(ff, mask);
    assert_true(total >= 5);
    for (uint64_t n = 1; n <= total; n++) {
        ckpt_fs_fault_fail(ff, n, mask, EIO, 0, 0);
        assert_ckpt_error(read_through(f->prefix, ckpt_fs_fault_fs(ff)),
                          CKPT_EIO, "ckpt.");
        ckpt_fs_fault_clear(ff);
    }
    ckpt_fs_fault_free(ff);
}

/* Allocation failures: the Nth allocation of a save-and-read fails; every
 * run either succeeds or reports CKPT_ENOMEM, leaks nothing (ASan) and
 * leaves no index behind a failed save. */
typedef struct alloc_fault {
    long countdown; /* fail when it reaches 0; < 0: never */
    long count;
} alloc_fault;

static alloc_fault g_alloc;

static bool alloc_should_fail(void)
{
    g_alloc.count++;
    if (g_alloc.countdown < 0)
        return false;
    return g_alloc.countdown-- == 0;
}

static void *af_malloc(size_t n, void *payload)
{
    (void)payload;
    return alloc_should_fail() ? NULL : malloc(n);
}

static void *af_realloc(void *p, size_t n, void *payload)
{
    (void)payload;
    return alloc_should_fail() ? NULL : realloc(p, n);
}

static void af_free(void *p, void *payload)
{
    (void)payload;
    free(p);
}

static void test_allocation_failures(void **state)
{
    fixture *f = *state;
    const ckpt_allocator a = {CKPT_ALLOCATOR_VERSION, NULL, af_malloc,
                              af_realloc, af_free};
    long total;
    int stage;
    size_t failures = 0;
    g_alloc.countdown = -1;
    g_alloc.count = 0;
    assert_ckpt_ok(ckpt_set_allocator(&a));
    assert_ckpt_ok(save_through(f->prefix, NULL, &stage));
    assert_ckpt_ok(read_through(f->prefix, NULL));
    total = g_alloc.count;
    assert_ckpt_ok(ckpt_set_allocator(NULL));
    assert_true(total > 10);
    for (long n = 0; n < total; n++) {
        int rc;
        test_remove_tree(strdup(f->dir));
        assert_int_equal(mkdir(f->dir, 0700), 0);
        g_alloc.countdown = n;
        g_alloc.count = 0;
        assert_ckpt_ok(ckpt_set_allocator(&a));
        rc = save_through(f->prefix, NULL, &stage);
        if (rc == 0)
            rc = read_through(f->prefix, NULL);
        else if (bt_count_files(f->dir, ".index", NULL) != 0)
            fail_msg("allocation %ld: failed save left an index", n);
        assert_ckpt_ok(ckpt_set_allocator(NULL));
        if (rc != 0) {
            assert_ckpt_error(rc, CKPT_ENOMEM, NULL);
            failures++;
        }
    }
    assert_true(failures > 0);
}

/* ---- LevelDB reads our index files
 * ---------------------------------------------------- */

static void test_leveldb_reads_our_index(void **state)
{
#ifdef CKPT_LEVELDB_DUMP
    fixture *f = *state;
    char *index = test_path(f->dir, "ckpt.index");
    ckpt_buf ours = CKPT_BUF_INIT;
    struct stat st;
    ckpt_bundle_writer *w = open_writer(f->prefix, 3, 1, NULL);
    ckpt_shape s = shape1(3);
    ckpt_slice strs[3] = {{"ab", 2}, {"", 0}, {"xyz", 3}};
    char name[700];

    /* several tensors, all shards, strings, and enough long names for
     * several data blocks */
    memset(name, 'k', sizeof(name));
    name[sizeof(name) - 1] = '\0';
    for (int i = 0; i < 1200; i++) {
        float v[3] = {(float)i, 1, 2};
        /* the number first, so prefix compression cannot shrink the keys */
        snprintf(name, 7, "%05d/", (i * 31) % 1200);
        name[6] = 'k';
        assert_ckpt_ok(ckpt_bundle_writer_select_shard(w, i % 3));
        assert_ckpt_ok(
            ckpt_bundle_writer_add(w, name, CKPT_DT_FLOAT, &s, v, sizeof(v)));
    }
    assert_ckpt_ok(ckpt_bundle_writer_add_strings(w, "strings", &s, strs, 3));
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);

    assert_int_equal(stat(index, &st), 0);
    assert_true(st.st_size > 2 * CKPT__TABLE_BLOCK_SIZE); /* several blocks */
    bt_expect_leveldb_reads_same(index, &ours);
    /* header first, 1201 tensors */
    assert_memory_equal(ours.ptr, "- 08031a020801\n", 15);
    ckpt_buf_dispose(&ours);
    free(index);
#else
    (void)state;
    print_message("SKIPPED: built without LevelDB\n");
    skip();
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_spec_example_exact_files, bt_setup,
                                        bt_teardown),
        cmocka_unit_test_setup_teardown(test_bool_bytes_read_as_bool, bt_setup,
                                        bt_teardown),
        cmocka_unit_test_setup_teardown(test_strings_spec_example, bt_setup,
                                        bt_teardown),
        cmocka_unit_test_setup_teardown(test_every_fixed_dtype, bt_setup,
                                        bt_teardown),
        cmocka_unit_test_setup_teardown(test_typed_values, bt_setup,
                                        bt_teardown),
        cmocka_unit_test_setup_teardown(test_strings_varied, bt_setup,
                                        bt_teardown),
        cmocka_unit_test_setup_teardown(test_two_shards, bt_setup, bt_teardown),
        cmocka_unit_test_setup_teardown(test_three_shards, bt_setup,
                                        bt_teardown),
        cmocka_unit_test_setup_teardown(test_unused_shard_is_empty_file,
                                        bt_setup, bt_teardown),
        cmocka_unit_test_setup_teardown(test_alignment_padding, bt_setup,
                                        bt_teardown),
        cmocka_unit_test_setup_teardown(test_keys_sorted_bytewise, bt_setup,
                                        bt_teardown),
        cmocka_unit_test_setup_teardown(test_many_tensors_multi_block, bt_setup,
                                        bt_teardown),
        cmocka_unit_test_setup_teardown(
            test_large_and_small_records_interleaved, bt_setup, bt_teardown),
        cmocka_unit_test_setup_teardown(test_duplicate_name, bt_setup,
                                        bt_teardown),
        cmocka_unit_test_setup_teardown(test_duplicate_across_kinds, bt_setup,
                                        bt_teardown),
        cmocka_unit_test_setup_teardown(test_invalid_adds, bt_setup,
                                        bt_teardown),
        cmocka_unit_test_setup_teardown(test_open_errors, bt_setup,
                                        bt_teardown),
        cmocka_unit_test_setup_teardown(test_abandon_leaves_nothing, bt_setup,
                                        bt_teardown),
        cmocka_unit_test_setup_teardown(test_finish_twice, bt_setup,
                                        bt_teardown),
        cmocka_unit_test_setup_teardown(test_overwrite_existing_bundle,
                                        bt_setup, bt_teardown),
        cmocka_unit_test_setup_teardown(test_output_suffix_named_long, bt_setup,
                                        bt_teardown),
        cmocka_unit_test_setup_teardown(test_partition_name_named, bt_setup,
                                        bt_teardown),
        cmocka_unit_test_setup_teardown(test_output_suffix_named, bt_setup,
                                        bt_teardown),
        cmocka_unit_test_setup_teardown(test_reader_api_errors, bt_setup,
                                        bt_teardown),
        cmocka_unit_test_setup_teardown(test_add_record_copies_bundle, bt_setup,
                                        bt_teardown),
        cmocka_unit_test_setup_teardown(test_raw_image_path, bt_setup,
                                        bt_teardown),
        cmocka_unit_test_setup_teardown(test_raw_image_out_of_range, bt_setup,
                                        bt_teardown),
        cmocka_unit_test_setup_teardown(test_fault_at_every_op, bt_setup,
                                        bt_teardown),
        cmocka_unit_test_setup_teardown(test_fault_persistent_enospc, bt_setup,
                                        bt_teardown),
        cmocka_unit_test_setup_teardown(test_read_faults, bt_setup,
                                        bt_teardown),
        cmocka_unit_test_setup_teardown(test_allocation_failures, bt_setup,
                                        bt_teardown),
        cmocka_unit_test_setup_teardown(test_leveldb_reads_our_index, bt_setup,
                                        bt_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
