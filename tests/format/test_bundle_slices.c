/* tests/format/test_bundle_slices.c - partitioned (sliced) tensors: the
 * ordered-code numbers and slice keys of docs/format.md §6.2 byte for byte,
 * the index entries of the §6.3 example as ckpt_bundle_writer_add_slice
 * writes them, round trips (rows, a middle dimension, columns across
 * shards, a piece that is the whole tensor), every writer and reader error,
 * and LevelDB reading an index that holds slice keys. */
#include "bundle_test_helpers.h"
#include "hostile_bytes.h"

#include "format/bundle_slices.h"
#include "format/table.h"
#include "util/crc32c.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef bt_fixture fixture;

static ckpt_shape shape2(int64_t a, int64_t b)
{
    int64_t d[2] = {a, b};
    return bt_shape(2, d);
}

static ckpt__tensor_slice slice_of(int rank, const int64_t *start,
                                   const int64_t *length)
{
    ckpt__tensor_slice s;
    memset(&s, 0, sizeof(s));
    s.rank = rank;
    for (int i = 0; i < rank; i++) {
        s.start[i] = start[i];
        s.length[i] = length[i];
    }
    return s;
}

static ckpt__tensor_slice slice2(int64_t s0, int64_t l0, int64_t s1, int64_t l1)
{
    int64_t st[2] = {s0, s1}, ln[2] = {l0, l1};
    return slice_of(2, st, ln);
}

static ckpt_bundle_writer *open_writer(const char *prefix, int shards)
{
    ckpt_bundle_writer_options o = CKPT_BUNDLE_WRITER_OPTIONS_INIT;
    ckpt_bundle_writer *w = NULL;
    o.num_shards = shards;
    assert_ckpt_ok(ckpt_bundle_writer_open(&w, prefix, &o));
    return w;
}

static ckpt_bundle_reader *open_reader(const char *prefix)
{
    ckpt_bundle_reader *r = NULL;
    assert_ckpt_ok(ckpt_bundle_reader_open(&r, prefix, NULL));
    return r;
}

/* Rows [r0, r0 + nr) and columns [c0, c0 + nc) of a row-major matrix with
 * `cols` columns of floats. */
static void copy_block(float *out, const float *m, int64_t cols, int64_t r0,
                       int64_t nr, int64_t c0, int64_t nc)
{
    for (int64_t i = 0; i < nr; i++)
        for (int64_t j = 0; j < nc; j++)
            out[i * nc + j] = m[(r0 + i) * cols + c0 + j];
}

/* ---- ordered code and slice keys ---------------------------------------- */

static void check_signed(int64_t v, const char *hex)
{
    ckpt_buf b = CKPT_BUF_INIT;
    uint8_t want[16];
    size_t n = strlen(hex) / 2;
    const uint8_t *p;
    int64_t back = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned x;
        assert_int_equal(sscanf(hex + 2 * i, "%2x", &x), 1);
        want[i] = (uint8_t)x;
    }
    assert_ckpt_ok(ckpt__ordered_put_signed(&b, v));
    assert_int_equal(b.size, n);
    assert_memory_equal(b.ptr, want, n);
    p = (const uint8_t *)b.ptr;
    assert_int_equal(ckpt__ordered_get_signed(&p, p + n, &back), 0);
    assert_true(back == v);
    assert_ptr_equal(p, (const uint8_t *)b.ptr + n);
    /* one byte short: rejected */
    p = (const uint8_t *)b.ptr;
    assert_int_equal(ckpt__ordered_get_signed(&p, p + n - 1, &back),
                     CKPT_ECORRUPT);
    ckpt_buf_dispose(&b);
}

static void test_ordered_code_reference_values(void **state)
{
    ckpt_buf b = CKPT_BUF_INIT;
    const uint8_t *p;
    uint64_t u = 0;
    (void)state;
    /* docs/format.md §6.2, and the extremes */
    check_signed(0, "80");
    check_signed(1, "81");
    check_signed(63, "bf");
    check_signed(64, "c040");
    check_signed(100, "c064");
    check_signed(8191, "dfff");
    check_signed(8192, "e02000");
    check_signed(-1, "7f");
    check_signed(-2, "7e");
    check_signed(-64, "40");
    check_signed(-65, "3fbf");
    check_signed(-8192, "2000");
    check_signed(-8193, "1fdfff");
    check_signed(INT64_MAX, "ffc07fffffffffffffff");
    check_signed(INT64_MIN, "003f8000000000000000");

    assert_ckpt_ok(ckpt__ordered_put_unsigned(&b, 0));
    assert_ckpt_ok(ckpt__ordered_put_unsigned(&b, 2));
    assert_ckpt_ok(ckpt__ordered_put_unsigned(&b, 300));
    assert_int_equal(b.size, 6);
    assert_memory_equal(b.ptr, "\x00\x01\x02\x02\x01\x2c", 6);
    p = (const uint8_t *)b.ptr;
    assert_int_equal(ckpt__ordered_get_unsigned(&p, p + 6, &u), 0);
    assert_true(u == 0);
    assert_int_equal(ckpt__ordered_get_unsigned(&p, p + 5, &u), 0);
    assert_true(u == 2);
    assert_int_equal(ckpt__ordered_get_unsigned(&p, p + 3, &u), 0);
    assert_true(u == 300);
    /* not the shortest form (02 00 05), and a length above 8 */
    p = (const uint8_t *)"\x02\x00\x05";
    assert_int_equal(ckpt__ordered_get_unsigned(&p, p + 3, &u), CKPT_ECORRUPT);
    p = (const uint8_t *)"\x09\x01\x01\x01\x01\x01\x01\x01\x01\x01";
    assert_int_equal(ckpt__ordered_get_unsigned(&p, p + 10, &u), CKPT_ECORRUPT);
    ckpt_buf_dispose(&b);
}

/* The encoding sorts like the numbers it encodes, and decodes back. */
static void test_ordered_code_sorts_like_numbers(void **state)
{
    int64_t vals[200];
    size_t n = 0;
    ckpt_buf a = CKPT_BUF_INIT, b = CKPT_BUF_INIT;
    (void)state;
    for (int k = 0; k < 63; k++) {
        int64_t x = (int64_t)1 << k;
        vals[n++] = x - 1;
        vals[n++] = x;
        vals[n++] = -x;
    }
    vals[n++] = INT64_MAX;
    vals[n++] = INT64_MIN;
    vals[n++] = INT64_MIN + 1;
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < n; j++) {
            int c;
            ckpt__buf_clear(&a);
            ckpt__buf_clear(&b);
            assert_ckpt_ok(ckpt__ordered_put_signed(&a, vals[i]));
            assert_ckpt_ok(ckpt__ordered_put_signed(&b, vals[j]));
            c = ckpt__key_compare(a.ptr, a.size, b.ptr, b.size);
            if (vals[i] < vals[j])
                assert_true(c < 0);
            else if (vals[i] > vals[j])
                assert_true(c > 0);
            else
                assert_int_equal(c, 0);
        }
        {
            const uint8_t *p = (const uint8_t *)a.ptr;
            int64_t back = 0;
            ckpt__buf_clear(&a);
            assert_ckpt_ok(ckpt__ordered_put_signed(&a, vals[i]));
            p = (const uint8_t *)a.ptr;
            assert_int_equal(ckpt__ordered_get_signed(&p, p + a.size, &back),
                             0);
            assert_true(back == vals[i]);
        }
    }
    ckpt_buf_dispose(&a);
    ckpt_buf_dispose(&b);
}

static void test_slice_key_spec_example(void **state)
{
    static const uint8_t rows01[] = {0x00, 0x77, 0x00, 0x01, 0x01,
                                     0x02, 0x80, 0x82, 0x80, 0x83};
    static const uint8_t rows23[] = {0x00, 0x77, 0x00, 0x01, 0x01,
                                     0x02, 0x82, 0x82, 0x80, 0x83};
    static const uint8_t full2[] = {0x00, 0x77, 0x00, 0x01, 0x01,
                                    0x02, 0x80, 0x82, 0x80, 0x7f};
    ckpt_buf key = CKPT_BUF_INIT, name = CKPT_BUF_INIT;
    ckpt__tensor_slice s = slice2(0, 2, 0, 3), back;
    (void)state;

    assert_ckpt_ok(ckpt__slice_key_encode(&key, "w", 1, &s));
    assert_int_equal(key.size, sizeof(rows01));
    assert_memory_equal(key.ptr, rows01, sizeof(rows01));
    assert_ckpt_ok(ckpt__slice_key_decode(&name, &back, key.ptr, key.size));
    assert_string_equal(name.ptr, "w");
    assert_int_equal(back.rank, 2);
    assert_true(back.start[0] == 0 && back.length[0] == 2);
    assert_true(back.start[1] == 0 && back.length[1] == 3);

    s = slice2(2, 2, 0, 3);
    assert_ckpt_ok(ckpt__slice_key_encode(&key, "w", 1, &s));
    assert_int_equal(key.size, sizeof(rows23));
    assert_memory_equal(key.ptr, rows23, sizeof(rows23));

    s = slice2(0, 2, 0, -1); /* "0,2:-" */
    assert_ckpt_ok(ckpt__slice_key_encode(&key, "w", 1, &s));
    assert_int_equal(key.size, sizeof(full2));
    assert_memory_equal(key.ptr, full2, sizeof(full2));
    assert_ckpt_ok(ckpt__slice_key_decode(&name, &back, key.ptr, key.size));
    assert_true(back.length[1] == -1);
    assert_ckpt_ok(ckpt__tensor_slice_format(&name, &back));
    assert_string_equal(name.ptr, "0,2:-");

    /* name bytes 00 and FF are escaped; larger numbers take more bytes */
    {
        static const uint8_t want[] = {0x00, 0x61, 0x00, 0xff, 0xff, 0x00,
                                       0x62, 0x00, 0x01, 0x01, 0x01, 0xc0,
                                       0x64, 0xe0, 0x20, 0x00};
        int64_t st = 100, ln = 8192;
        s = slice_of(1, &st, &ln);
        assert_ckpt_ok(ckpt__slice_key_encode(&key,
                                              "a\0\xff"
                                              "b",
                                              4, &s));
        assert_int_equal(key.size, sizeof(want));
        assert_memory_equal(key.ptr, want, sizeof(want));
        assert_ckpt_ok(ckpt__slice_key_decode(&name, &back, key.ptr, key.size));
        assert_int_equal(name.size, 4);
        assert_memory_equal(name.ptr,
                            "a\0\xff"
                            "b",
                            4);
        assert_true(back.start[0] == 100 && back.length[0] == 8192);
    }
    /* rank 0 has no key */
    memset(&s, 0, sizeof(s));
    assert_ckpt_error(ckpt__slice_key_encode(&key, "w", 1, &s), CKPT_EINVAL,
                      "rank 0");

    /* damaged keys */
    assert_ckpt_error(ckpt__slice_key_decode(&name, &back, "w", 1),
                      CKPT_ECORRUPT, "does not start with a 0 byte");
    assert_ckpt_error(ckpt__slice_key_decode(&name, &back, "\x00w\x00\x02", 4),
                      CKPT_ECORRUPT, "bad escape 00 02");
    assert_ckpt_error(ckpt__slice_key_decode(&name, &back, "\x00w", 2),
                      CKPT_ECORRUPT, "name not terminated");
    assert_ckpt_error(
        ckpt__slice_key_decode(&name, &back, "\x00w\x00\x01\x00", 5),
        CKPT_ECORRUPT, "rank 0 out of range");
    assert_ckpt_error(
        ckpt__slice_key_decode(&name, &back, "\x00w\x00\x01\x01\x01\x80", 7),
        CKPT_ECORRUPT, "bad extent 0");
    {
        uint8_t longer[sizeof(rows01) + 1];
        memcpy(longer, rows01, sizeof(rows01));
        longer[sizeof(rows01)] = 0x80;
        assert_ckpt_error(
            ckpt__slice_key_decode(&name, &back, longer, sizeof(longer)),
            CKPT_ECORRUPT, "1 bytes after the last extent");
    }
    ckpt_buf_dispose(&key);
    ckpt_buf_dispose(&name);
}

/* TensorSliceProto inside BundleEntryProto (docs/format.md §6.1): a full extent
 * is an empty Extent; start is omitted when 0; length always written. */
static void test_tensor_slice_proto_bytes(void **state)
{
    static const uint8_t want[] = {
        0x08, 0x01, 0x12, 0x08, 0x12, 0x02, 0x08, 0x04,
        0x12, 0x02, 0x08, 0x03,                         /* dtype, shape */
        0x3a, 0x06, 0x0a, 0x02, 0x10, 0x02, 0x0a, 0x00, /* {len 2}{} */
        0x3a, 0x0a, 0x0a, 0x04, 0x08, 0x02, 0x10, 0x02,
        0x0a, 0x02, 0x10, 0x03, /* {start 2, len 2}{len 3} */
    };
    ckpt__tensor_slice sl[2] = {slice2(0, 2, 0, -1), slice2(2, 2, 0, 3)};
    ckpt__bundle_entry e;
    ckpt__tensor_slice back;
    ckpt_buf out = CKPT_BUF_INIT;
    (void)state;
    memset(&e, 0, sizeof(e));
    e.dtype = CKPT_DT_FLOAT;
    e.shape = shape2(4, 3);
    e.num_slices = 2;
    e.slices = sl;
    assert_ckpt_ok(ckpt__bundle_entry_encode(&out, &e));
    assert_int_equal(out.size, sizeof(want));
    assert_memory_equal(out.ptr, want, sizeof(want));
    assert_ckpt_ok(ckpt__bundle_entry_get_slice(&back, (const uint8_t *)out.ptr,
                                                out.size, 0));
    assert_int_equal(back.rank, 2);
    assert_true(back.start[0] == 0 && back.length[0] == 2);
    assert_true(back.length[1] == -1);
    assert_ckpt_ok(ckpt__bundle_entry_get_slice(&back, (const uint8_t *)out.ptr,
                                                out.size, 1));
    assert_true(back.start[0] == 2 && back.length[0] == 2);
    assert_true(back.start[1] == 0 && back.length[1] == 3);
    ckpt_buf_dispose(&out);
}

/* ---- the writer: the example of docs/format.md §6.3 ---------------------- */

typedef struct kv_list {
    size_t n;
    ckpt_buf keys[16];
    ckpt_buf values[16];
} kv_list;

static int collect(const uint8_t *key, size_t key_len, const uint8_t *value,
                   size_t value_len, void *payload)
{
    kv_list *l = payload;
    assert_true(l->n < 16);
    assert_ckpt_ok(ckpt__buf_put(&l->keys[l->n], key, key_len));
    assert_ckpt_ok(ckpt__buf_put(&l->values[l->n], value, value_len));
    l->n++;
    return 0;
}

static void kv_list_dispose(kv_list *l)
{
    for (size_t i = 0; i < 16; i++) {
        ckpt_buf_dispose(&l->keys[i]);
        ckpt_buf_dispose(&l->values[i]);
    }
}

static void read_index(const char *prefix, kv_list *l)
{
    ckpt_buf path = CKPT_BUF_INIT;
    uint8_t *data;
    size_t n;
    memset(l, 0, sizeof(*l));
    assert_ckpt_ok(ckpt_bundle_index_path(&path, prefix));
    data = test_read_file(path.ptr, &n);
    assert_non_null(data);
    assert_ckpt_ok(ckpt__table_iterate(data, n, path.ptr, collect, l));
    free(data);
    ckpt_buf_dispose(&path);
}

static const float W[12] = {0.5f, 1.5f, 2.5f, 3.5f, 4.5f,  5.5f,
                            6.5f, 7.5f, 8.5f, 9.5f, 10.5f, 11.5f};

static void write_w_by_rows(const char *prefix)
{
    ckpt_bundle_writer *w = open_writer(prefix, 1);
    ckpt_shape full = shape2(4, 3);
    ckpt_slice_extent top[2] = {{0, 2}, {0, 3}};
    ckpt_slice_extent bottom[2] = {{2, 2}, {0, 3}};
    assert_ckpt_ok(ckpt_bundle_writer_add_slice(w, "w", CKPT_DT_FLOAT, &full,
                                                top, W, 6 * sizeof(float)));
    assert_ckpt_ok(ckpt_bundle_writer_add_slice(
        w, "w", CKPT_DT_FLOAT, &full, bottom, W + 6, 6 * sizeof(float)));
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);
}

static void test_writer_spec_example_entries(void **state)
{
    static const uint8_t key01[] = {0x00, 0x77, 0x00, 0x01, 0x01,
                                    0x02, 0x80, 0x82, 0x80, 0x83};
    static const uint8_t key23[] = {0x00, 0x77, 0x00, 0x01, 0x01,
                                    0x02, 0x82, 0x82, 0x80, 0x83};
    static const uint8_t full[] = {
        0x08, 0x01, 0x12, 0x08, 0x12, 0x02, 0x08, 0x04, 0x12, 0x02, 0x08, 0x03,
        0x3a, 0x08, 0x0a, 0x02, 0x10, 0x02, 0x0a, 0x02, 0x10, 0x03, 0x3a, 0x0a,
        0x0a, 0x04, 0x08, 0x02, 0x10, 0x02, 0x0a, 0x02, 0x10, 0x03};
    fixture *f = *state;
    kv_list l;
    ckpt__bundle_entry e;
    (void)state;

    write_w_by_rows(f->prefix);
    read_index(f->prefix, &l);
    assert_int_equal(l.n, 4); /* header, two slice keys, "w" */
    assert_int_equal(l.keys[0].size, 0);
    assert_int_equal(l.keys[1].size, sizeof(key01));
    assert_memory_equal(l.keys[1].ptr, key01, sizeof(key01));
    assert_int_equal(l.keys[2].size, sizeof(key23));
    assert_memory_equal(l.keys[2].ptr, key23, sizeof(key23));
    assert_int_equal(l.keys[3].size, 1);
    assert_memory_equal(l.keys[3].ptr, "w", 1);
    assert_int_equal(l.values[3].size, sizeof(full));
    assert_memory_equal(l.values[3].ptr, full, sizeof(full));
    /* each slice key maps to an ordinary float [2, 3] entry of 24 bytes */
    for (int i = 1; i <= 2; i++) {
        assert_ckpt_ok(ckpt__bundle_entry_decode(
            &e, (const uint8_t *)l.values[i].ptr, l.values[i].size));
        assert_int_equal(e.dtype, CKPT_DT_FLOAT);
        assert_true(ckpt_shape_equal(&e.shape, &(ckpt_shape){
                                                   .rank = 2,
                                                   .dims = {2, 3},
                                               }));
        assert_int_equal(e.num_slices, 0);
        assert_int_equal(e.shard_id, 0);
        assert_int_equal(e.size, 24);
        assert_int_equal(e.offset, i == 1 ? 0 : 24);
        assert_int_equal(e.crc32c,
                         ckpt__crc32c_mask(ckpt__crc32c(
                             (const uint8_t *)(W + (i - 1) * 6), 24)));
    }
    kv_list_dispose(&l);
}

/* ---- round trips --------------------------------------------------------- */

static void test_roundtrip_rows(void **state)
{
    fixture *f = *state;
    ckpt_bundle_reader *r;
    const ckpt_tensor_entry *e;
    float got[12];
    (void)state;

    write_w_by_rows(f->prefix);
    r = open_reader(f->prefix);
    /* listing: both slice entries stay visible, then the full entry */
    assert_int_equal(ckpt_bundle_reader_count(r), 3);
    assert_true(ckpt_bundle_reader_entry(r, 0)->is_slice_key);
    assert_true(ckpt_bundle_reader_entry(r, 1)->is_slice_key);
    assert_int_equal(ckpt_bundle_reader_entry(r, 1)->name_len, 10);
    assert_ckpt_ok(ckpt_bundle_reader_find(&e, r, "w"));
    assert_int_equal(e->num_slices, 2);
    assert_false(e->is_slice_key);
    /* names as messages show them: a piece by its tensor and extents */
    {
        char shown[64];
        const char *first = ckpt_tensor_entry_shown_name(
            shown, sizeof(shown), ckpt_bundle_reader_entry(r, 0));
        assert_ptr_equal(first, shown);
        assert_string_equal(shown, "w (piece 0,2:0,3)");
        ckpt_tensor_entry_shown_name(shown, sizeof(shown),
                                     ckpt_bundle_reader_entry(r, 1));
        assert_string_equal(shown, "w (piece 2,2:0,3)");
        ckpt_tensor_entry_shown_name(shown, sizeof(shown), e);
        assert_string_equal(shown, "w");
        ckpt_tensor_entry_shown_name(shown, 5, ckpt_bundle_reader_entry(r, 0));
        assert_string_equal(shown, "w (p"); /* cut to the room given */
        ckpt_tensor_entry_shown_name(shown, sizeof(shown), NULL);
        assert_string_equal(shown, "");
    }
    assert_int_equal(e->dtype, CKPT_DT_FLOAT);
    assert_int_equal(e->shape.rank, 2);
    assert_true(e->shape.dims[0] == 4 && e->shape.dims[1] == 3);

    memset(got, 0, sizeof(got));
    assert_ckpt_ok(ckpt_bundle_reader_read(r, "w", got, sizeof(got)));
    assert_memory_equal(got, W, sizeof(W));
    /* wrong destination size */
    assert_ckpt_error(ckpt_bundle_reader_read(r, "w", got, sizeof(got) - 4),
                      CKPT_EINVAL, "tensor 'w': destination of 44 bytes");
    /* strings reader: still refused, naming the tensor */
    {
        ckpt_string_array a;
        assert_ckpt_error(ckpt_bundle_reader_read_strings(r, "w", &a),
                          CKPT_ENOTSUP, "'w': partitioned tensor");
        assert_ckpt_error(ckpt_bundle_reader_read_strings_entry(r, e, &a),
                          CKPT_ENOTSUP, "'w': partitioned tensor");
    }
    /* by its entry: the same assembly and the same checks */
    memset(got, 0, sizeof(got));
    assert_ckpt_ok(ckpt_bundle_reader_read_entry(r, e, got, sizeof(got)));
    assert_memory_equal(got, W, sizeof(W));
    assert_ckpt_error(ckpt_bundle_reader_read_entry(r, e, got, sizeof(got) - 4),
                      CKPT_EINVAL, "tensor 'w': destination of 44 bytes");
    {
        ckpt_tensor_entry copy = *e; /* a copy as filled is the reader's */
        memset(got, 0, sizeof(got));
        assert_ckpt_ok(
            ckpt_bundle_reader_read_entry(r, &copy, got, sizeof(got)));
        assert_memory_equal(got, W, sizeof(W));
        copy.shape.dims[0]++; /* a changed one is not */
        assert_ckpt_error(
            ckpt_bundle_reader_read_entry(r, &copy, got, sizeof(got)),
            CKPT_EINVAL, "ckpt_bundle_reader_read_entry: the entry is not one");
    }
    assert_ckpt_ok(ckpt_bundle_reader_verify(r));
    ckpt_bundle_reader_free(r);
}

/* [2, 5, 3] int64 split on the middle dimension; the first piece uses full
 * extents, the second explicit ones; pieces added last-first. */
static void test_roundtrip_3d_middle_dimension(void **state)
{
    fixture *f = *state;
    int64_t dims[3] = {2, 5, 3};
    ckpt_shape full = bt_shape(3, dims);
    ckpt_slice_extent a[3] = {
        {0, CKPT_SLICE_FULL}, {0, 2}, {0, CKPT_SLICE_FULL}};
    ckpt_slice_extent b[3] = {{0, 2}, {2, 3}, {0, 3}};
    int64_t t[30], pa[12], pb[18], got[30];
    ckpt_bundle_writer *w;
    ckpt_bundle_reader *r;
    const ckpt_tensor_entry *e;
    size_t na = 0, nb = 0;
    (void)state;

    for (int i = 0; i < 30; i++)
        t[i] = (int64_t)i * 1000003 - 7;
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 5; j++)
            for (int k = 0; k < 3; k++) {
                int64_t v = t[(i * 5 + j) * 3 + k];
                if (j < 2)
                    pa[na++] = v;
                else
                    pb[nb++] = v;
            }
    w = open_writer(f->prefix, 1);
    assert_ckpt_ok(ckpt_bundle_writer_add_slice(
        w, "layer/kernel", CKPT_DT_INT64, &full, b, pb, sizeof(pb)));
    assert_ckpt_ok(ckpt_bundle_writer_add_slice(
        w, "layer/kernel", CKPT_DT_INT64, &full, a, pa, sizeof(pa)));
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);

    r = open_reader(f->prefix);
    assert_ckpt_ok(ckpt_bundle_reader_find(&e, r, "layer/kernel"));
    assert_int_equal(e->num_slices, 2);
    memset(got, 0, sizeof(got));
    assert_ckpt_ok(
        ckpt_bundle_reader_read(r, "layer/kernel", got, sizeof(got)));
    assert_memory_equal(got, t, sizeof(t));
    ckpt_bundle_reader_free(r);
}

/* Column pieces (non-contiguous runs), one per data shard, plus an
 * ordinary tensor and a second partitioned one in the same bundle. */
static void test_roundtrip_columns_across_shards(void **state)
{
    fixture *f = *state;
    ckpt_shape full = shape2(3, 7);
    float m[21], piece[21], got[21];
    double v[6] = {1, 2, 3, 4, 5, 6}, gv[6];
    int64_t cut[4] = {0, 3, 4, 7};
    ckpt_bundle_writer *w = open_writer(f->prefix, 3);
    ckpt_bundle_reader *r;
    (void)state;

    for (int i = 0; i < 21; i++)
        m[i] = (float)i * 0.25f - 3.0f;
    assert_ckpt_ok(ckpt_bundle_writer_add(w, "plain", CKPT_DT_DOUBLE,
                                          &(ckpt_shape){.rank = 1, .dims = {6}},
                                          v, sizeof(v)));
    for (int p = 0; p < 3; p++) {
        ckpt_slice_extent ext[2] = {{0, CKPT_SLICE_FULL},
                                    {cut[p], cut[p + 1] - cut[p]}};
        int64_t nc = cut[p + 1] - cut[p];
        copy_block(piece, m, 7, 0, 3, cut[p], nc);
        assert_ckpt_ok(ckpt_bundle_writer_select_shard(w, 2 - p));
        assert_ckpt_ok(ckpt_bundle_writer_add_slice(
            w, "m", CKPT_DT_FLOAT, &full, ext, piece,
            (size_t)(3 * nc) * sizeof(float)));
    }
    {
        /* a second tensor: two pieces of a vector */
        ckpt_shape vs = {.rank = 1, .dims = {6}};
        ckpt_slice_extent lo = {0, 4}, hi = {4, 2};
        assert_ckpt_ok(ckpt_bundle_writer_add_slice(w, "v", CKPT_DT_DOUBLE, &vs,
                                                    &hi, v + 4, 16));
        assert_ckpt_ok(ckpt_bundle_writer_add_slice(w, "v", CKPT_DT_DOUBLE, &vs,
                                                    &lo, v, 32));
    }
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);

    r = open_reader(f->prefix);
    assert_int_equal(ckpt_bundle_reader_count(r), 8); /* 5 keys, m, plain, v */
    assert_ckpt_ok(ckpt_bundle_reader_read(r, "m", got, sizeof(got)));
    assert_memory_equal(got, m, sizeof(m));
    assert_ckpt_ok(ckpt_bundle_reader_read(r, "plain", gv, sizeof(gv)));
    assert_memory_equal(gv, v, sizeof(v));
    memset(gv, 0, sizeof(gv));
    assert_ckpt_ok(ckpt_bundle_reader_read(r, "v", gv, sizeof(gv)));
    assert_memory_equal(gv, v, sizeof(v));
    assert_ckpt_ok(ckpt_bundle_reader_verify(r));
    ckpt_bundle_reader_free(r);
}

/* ckpt_tensor_entry_piece: each slice key gives its tensor's name (a 0xff
 * byte in it escaped in the key) and its extents; an ordinary entry or a key
 * that does not decode is refused. */
static void test_entry_piece_decodes_keys(void **state)
{
    fixture *f = *state;
    static const char name[] = "emb\xffx";
    ckpt_shape full = shape2(4, 3);
    ckpt_slice_extent top[2] = {{0, 2}, {0, CKPT_SLICE_FULL}};
    ckpt_slice_extent bottom[2] = {{2, 2}, {0, CKPT_SLICE_FULL}};
    ckpt_bundle_writer *w = open_writer(f->prefix, 1);
    ckpt_bundle_reader *r;
    ckpt_buf owner = CKPT_BUF_INIT;
    ckpt_slice_extent got[CKPT_MAX_RANK];
    ckpt_tensor_entry bad;
    int rank = 0;
    (void)state;

    assert_ckpt_ok(ckpt_bundle_writer_add_slice(w, name, CKPT_DT_FLOAT, &full,
                                                bottom, W + 6, 24));
    assert_ckpt_ok(ckpt_bundle_writer_add_slice(w, name, CKPT_DT_FLOAT, &full,
                                                top, W, 24));
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);
    r = open_reader(f->prefix);
    assert_int_equal(ckpt_bundle_reader_count(r), 3); /* 2 keys, the tensor */
    for (size_t i = 0; i < 2; i++) {
        const ckpt_tensor_entry *e = ckpt_bundle_reader_entry(r, i);
        assert_non_null(e);
        assert_true(e->is_slice_key);
        assert_ckpt_ok(ckpt_tensor_entry_piece(&owner, got, &rank, e));
        assert_int_equal(owner.size, strlen(name));
        assert_memory_equal(owner.ptr, name, owner.size);
        assert_int_equal(rank, 2);
        /* keys sort by start: rows 0-1 first */
        assert_int_equal(got[0].start, i == 0 ? 0 : 2);
        assert_int_equal(got[0].length, 2);
        assert_int_equal(got[1].start, 0);
        assert_int_equal(got[1].length, CKPT_SLICE_FULL);
        /* the name alone */
        assert_ckpt_ok(ckpt_tensor_entry_piece(&owner, NULL, NULL, e));
        assert_string_equal(owner.ptr, name);
    }
    assert_ckpt_error(ckpt_tensor_entry_piece(&owner, got, &rank,
                                              ckpt_bundle_reader_entry(r, 2)),
                      CKPT_EINVAL,
                      "'emb\\xffx' is not a piece of a partitioned tensor");
    /* a key cut inside the name, and one with a bad escape */
    bad = *ckpt_bundle_reader_entry(r, 0);
    bad.name_len = 3;
    assert_ckpt_error(ckpt_tensor_entry_piece(&owner, got, &rank, &bad),
                      CKPT_ECORRUPT, "slice key: name not terminated");
    bad.name = "\0a\0b\0\1\1\2\x80\x82\x80\x7f";
    bad.name_len = 12;
    assert_ckpt_error(ckpt_tensor_entry_piece(&owner, got, &rank, &bad),
                      CKPT_ECORRUPT, "bad escape 00 62 in the name (byte 2)");
    assert_ckpt_error(ckpt_tensor_entry_piece(NULL, got, &rank, &bad),
                      CKPT_EINVAL, "NULL name");
    ckpt_buf_dispose(&owner);
    ckpt_bundle_reader_free(r);
}

/* A piece that covers the whole tensor is an ordinary entry. */
static void test_whole_piece_is_ordinary_entry(void **state)
{
    fixture *f = *state;
    ckpt_shape full = shape2(4, 3);
    ckpt_slice_extent explicit_ext[2] = {{0, 4}, {0, 3}};
    ckpt_slice_extent full_ext[2] = {{0, CKPT_SLICE_FULL},
                                     {0, CKPT_SLICE_FULL}};
    ckpt_shape scalar = {.rank = 0};
    int32_t one = 42, got1 = 0;
    float got[12];
    ckpt_bundle_writer *w = open_writer(f->prefix, 1);
    ckpt_bundle_reader *r;
    const ckpt_tensor_entry *e;
    kv_list l;
    (void)state;

    assert_ckpt_ok(ckpt_bundle_writer_add_slice(w, "a", CKPT_DT_FLOAT, &full,
                                                explicit_ext, W, sizeof(W)));
    assert_ckpt_ok(ckpt_bundle_writer_add_slice(w, "b", CKPT_DT_FLOAT, &full,
                                                full_ext, W, sizeof(W)));
    assert_ckpt_ok(ckpt_bundle_writer_add_slice(w, "s", CKPT_DT_INT32, &scalar,
                                                NULL, &one, sizeof(one)));
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);

    read_index(f->prefix, &l);
    assert_int_equal(l.n, 4); /* header, a, b, s: no slice keys */
    for (size_t i = 1; i < l.n; i++)
        assert_true(l.keys[i].size == 1 && l.keys[i].ptr[0] != 0);
    kv_list_dispose(&l);

    r = open_reader(f->prefix);
    assert_int_equal(ckpt_bundle_reader_count(r), 3);
    assert_ckpt_ok(ckpt_bundle_reader_find(&e, r, "a"));
    assert_int_equal(e->num_slices, 0);
    assert_int_equal(e->size, 48);
    assert_ckpt_ok(ckpt_bundle_reader_read(r, "a", got, sizeof(got)));
    assert_memory_equal(got, W, sizeof(W));
    assert_ckpt_ok(ckpt_bundle_reader_read(r, "b", got, sizeof(got)));
    assert_memory_equal(got, W, sizeof(W));
    assert_ckpt_ok(ckpt_bundle_reader_read(r, "s", &got1, sizeof(got1)));
    assert_int_equal(got1, 42);
    ckpt_bundle_reader_free(r);
}

/* ---- writer errors ------------------------------------------------------- */

/* Open a writer and, when `with_first`, add rows 0-1 of "w" (float32
 * [4, 3]). */
static ckpt_bundle_writer *writer_with_top(const char *prefix, bool with_first)
{
    ckpt_bundle_writer *w = open_writer(prefix, 1);
    ckpt_shape full = shape2(4, 3);
    ckpt_slice_extent top[2] = {{0, 2}, {0, 3}};
    if (with_first)
        assert_ckpt_ok(ckpt_bundle_writer_add_slice(
            w, "w", CKPT_DT_FLOAT, &full, top, W, 6 * sizeof(float)));
    return w;
}

/* The error is kept: finish reports it again, and no index appears. */
static void expect_sticky(ckpt_bundle_writer *w, const char *prefix, int code,
                          const char *needle)
{
    ckpt_buf path = CKPT_BUF_INIT;
    size_t n;
    uint8_t *data;
    assert_ckpt_error(ckpt_bundle_writer_finish(w), code, needle);
    ckpt_bundle_writer_free(w);
    assert_ckpt_ok(ckpt_bundle_index_path(&path, prefix));
    data = test_read_file(path.ptr, &n);
    assert_null(data);
    ckpt_buf_dispose(&path);
}

/* What a writer holds before the add a writer-error case makes. */
enum first_add {
    FIRST_NONE,  /* nothing */
    FIRST_TOP,   /* the piece [0, 2) x [0, 3) of "w" */
    FIRST_WHOLE, /* "w" as a whole tensor */
};

static const ckpt_slice_extent E_TOP[2] = {{0, 2}, {0, 3}};
static const ckpt_slice_extent E_BOTTOM[2] = {{2, 2}, {0, 3}};
static const ckpt_slice_extent E_MID[2] = {{1, 2}, {0, 3}};
static const ckpt_slice_extent E_BAD[2] = {{3, 2}, {0, 3}};
static const ckpt_slice_extent E_NEG[2] = {{-1, 2}, {0, 3}};
static const ckpt_slice_extent E_FULL_AT1[2] = {{1, CKPT_SLICE_FULL}, {0, 3}};
static const ckpt_slice_extent E_TOP_FULL[2] = {{0, 2}, {0, CKPT_SLICE_FULL}};
static const ckpt_slice_extent E_ALL[2] = {{0, 4}, {0, 3}};
static const ckpt_slice STRINGS[1] = {{"x", 1}};
static const int32_t INTS[6] = {0};

/* Each refused add_slice: its error, then the same error from finish
 * (a failed add ends the writer) and no index file. */
static void test_writer_errors(void **state)
{
    static const struct {
        enum first_add first;
        const char *name;
        int dtype;
        int64_t rows; /* the full shape: [rows, 3] */
        const ckpt_slice_extent *extents;
        const void *data;
        size_t nbytes;
        int code;
        const char *needle;
    } cases[] = {
        /* strings and unsupported dtypes */
        {FIRST_NONE, "w", CKPT_DT_STRING, 4, E_TOP, STRINGS, 6, CKPT_ENOTSUP,
         "tensor 'w': partitioned string tensors are not supported"},
        {FIRST_NONE, "w", CKPT_DT_VARIANT, 4, E_TOP, W, 24, CKPT_ENOTSUP,
         "tensor 'w': dtype 21"},
        /* extents outside the shape, a full extent not at 0 */
        {FIRST_NONE, "w", CKPT_DT_FLOAT, 4, E_BAD, W, 24, CKPT_EINVAL,
         "tensor 'w': extent 0 (start 3, length 2) lies outside dimension 0 "
         "of size 4"},
        {FIRST_NONE, "w", CKPT_DT_FLOAT, 4, E_NEG, W, 24, CKPT_EINVAL,
         "tensor 'w': extent 0 (start -1, length 2)"},
        {FIRST_NONE, "w", CKPT_DT_FLOAT, 4, E_FULL_AT1, W, 24, CKPT_EINVAL,
         "tensor 'w': extent 0 is full"},
        /* data size, NULL data, NULL extents, empty name */
        {FIRST_NONE, "w", CKPT_DT_FLOAT, 4, E_TOP, W, 20, CKPT_EINVAL,
         "tensor 'w': 20 bytes given, a float32 piece of shape [2, 3] needs "
         "24"},
        {FIRST_NONE, "w", CKPT_DT_FLOAT, 4, E_TOP, NULL, 24, CKPT_EINVAL,
         "tensor 'w': NULL data"},
        {FIRST_NONE, "w", CKPT_DT_FLOAT, 4, NULL, W, 24, CKPT_EINVAL,
         "tensor 'w': NULL extents"},
        {FIRST_NONE, "", CKPT_DT_FLOAT, 4, E_TOP, W, 24, CKPT_EINVAL,
         "tensor name is empty"},
        /* a later piece of another dtype or full shape */
        {FIRST_TOP, "w", CKPT_DT_INT32, 4, E_BOTTOM, INTS, sizeof(INTS),
         CKPT_EINVAL,
         "tensor 'w': piece of dtype int32, the earlier pieces are float32"},
        {FIRST_TOP, "w", CKPT_DT_FLOAT, 5, E_BOTTOM, W, 24, CKPT_EINVAL,
         "tensor 'w': full shape [5, 3] differs from the earlier pieces' "
         "[4, 3]"},
        /* overlapping pieces, the same piece twice, full vs explicit */
        {FIRST_TOP, "w", CKPT_DT_FLOAT, 4, E_MID, W, 24, CKPT_EINVAL,
         "tensor 'w': piece 1,2:0,3 overlaps piece 0 (0,2:0,3)"},
        {FIRST_TOP, "w", CKPT_DT_FLOAT, 4, E_TOP, W, 24, CKPT_EEXISTS,
         "tensor 'w': this piece was already added"},
        {FIRST_TOP, "w", CKPT_DT_FLOAT, 4, E_TOP_FULL, W, 24, CKPT_EINVAL,
         "piece 0,2:- overlaps piece 0 (0,2:0,3)"},
        /* mixing with ordinary adds of the same name */
        {FIRST_WHOLE, "w", CKPT_DT_FLOAT, 4, E_TOP, W, 24, CKPT_EEXISTS,
         "tensor 'w' was already added as a whole tensor"},
        {FIRST_TOP, "w", CKPT_DT_FLOAT, 4, E_ALL, W, sizeof(W), CKPT_EEXISTS,
         "tensor 'w' was already added"},
    };
    fixture *f = *state;
    ckpt_shape full = shape2(4, 3);
    ckpt_bundle_writer *w;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ckpt_shape rows3 = shape2(cases[i].rows, 3);
        w = writer_with_top(f->prefix, cases[i].first == FIRST_TOP);
        if (cases[i].first == FIRST_WHOLE)
            assert_ckpt_ok(ckpt_bundle_writer_add(w, "w", CKPT_DT_FLOAT, &full,
                                                  W, sizeof(W)));
        assert_ckpt_error(ckpt_bundle_writer_add_slice(
                              w, cases[i].name, cases[i].dtype, &rows3,
                              cases[i].extents, cases[i].data, cases[i].nbytes),
                          cases[i].code, cases[i].needle);
        expect_sticky(w, f->prefix, cases[i].code, cases[i].needle);
    }
    /* a whole tensor of a name that has pieces */
    w = writer_with_top(f->prefix, true);
    assert_ckpt_error(
        ckpt_bundle_writer_add(w, "w", CKPT_DT_FLOAT, &full, W, sizeof(W)),
        CKPT_EEXISTS, "tensor 'w' was already added");
    expect_sticky(w, f->prefix, CKPT_EEXISTS, "tensor 'w' was already added");
}

/* ---- reader errors: hand-made bundles ------------------------------------ */

#define HB_MAX 8

/* A bundle built entry by entry: records in one data file. */
typedef struct hand_bundle {
    ckpt_buf data;
    size_t n;
    ckpt_buf keys[HB_MAX];
    ckpt_buf values[HB_MAX];
} hand_bundle;

static void hb_put(hand_bundle *hb, const void *key, size_t key_len,
                   const ckpt__bundle_entry *e)
{
    assert_true(hb->n < HB_MAX);
    assert_ckpt_ok(ckpt__buf_put(&hb->keys[hb->n], key, key_len));
    bt_entry(&hb->values[hb->n], e);
    hb->n++;
}

/* A record for piece `key_slice` of "w" (dtype, shape given). */
static void hb_piece(hand_bundle *hb, const ckpt__tensor_slice *key_slice,
                     int dtype, ckpt_shape shape, const void *data, size_t n)
{
    ckpt_buf key = CKPT_BUF_INIT;
    ckpt__bundle_entry e;
    memset(&e, 0, sizeof(e));
    e.dtype = dtype;
    e.shape = shape;
    e.offset = (int64_t)hb->data.size;
    e.size = (int64_t)n;
    e.crc32c = ckpt__crc32c_mask(ckpt__crc32c(data, n));
    assert_ckpt_ok(ckpt__buf_put(&hb->data, data, n));
    assert_ckpt_ok(ckpt__slice_key_encode(&key, "w", 1, key_slice));
    hb_put(hb, key.ptr, key.size, &e);
    ckpt_buf_dispose(&key);
}

/* The full entry "w" listing `slices`. */
static void hb_full(hand_bundle *hb, int dtype, ckpt_shape shape,
                    const ckpt__tensor_slice *slices, int n)
{
    ckpt__bundle_entry e;
    memset(&e, 0, sizeof(e));
    e.dtype = dtype;
    e.shape = shape;
    e.num_slices = n;
    e.slices = slices;
    hb_put(hb, "w", 1, &e);
}

static int kv_order(const void *a, const void *b)
{
    const bt_kv *x = a, *y = b;
    return ckpt__key_compare(x->key, x->key_len, y->key, y->key_len);
}

/* Write <prefix>.index (sorted, with a header of `endianness`) and the
 * data file; frees the bundle's memory. */
static void hb_write(hand_bundle *hb, const char *prefix, int endianness)
{
    ckpt_buf header = CKPT_BUF_INIT, path = CKPT_BUF_INIT;
    bt_kv kvs[HB_MAX + 1];
    bt_header(&header, 1, endianness);
    kvs[0] = (bt_kv){"", 0, header.ptr, header.size};
    for (size_t i = 0; i < hb->n; i++)
        kvs[i + 1] = (bt_kv){hb->keys[i].ptr, hb->keys[i].size,
                             hb->values[i].ptr, hb->values[i].size};
    qsort(kvs + 1, hb->n, sizeof(kvs[0]), kv_order);
    assert_ckpt_ok(ckpt_bundle_index_path(&path, prefix));
    bt_write_table(path.ptr, kvs, hb->n + 1);
    assert_ckpt_ok(ckpt_bundle_data_path(&path, prefix, 0, 1));
    test_write_file(path.ptr, hb->data.ptr ? hb->data.ptr : "", hb->data.size);
    for (size_t i = 0; i < HB_MAX; i++) {
        ckpt_buf_dispose(&hb->keys[i]);
        ckpt_buf_dispose(&hb->values[i]);
    }
    ckpt_buf_dispose(&hb->data);
    ckpt_buf_dispose(&header);
    ckpt_buf_dispose(&path);
    memset(hb, 0, sizeof(*hb));
}

/* Open the hand-made bundle: reading "w" (12 floats) fails so; checking it
 * alone fails with `code` too, and so does verifying the whole bundle (the
 * pieces' records in its one pass, then where they lie, without reading them
 * again). */
static void expect_read_error(const char *prefix, int code, const char *needle)
{
    ckpt_bundle_reader *r = open_reader(prefix);
    const ckpt_tensor_entry *e = NULL;
    float got[12];
    assert_ckpt_error(ckpt_bundle_reader_read(r, "w", got, sizeof(got)), code,
                      needle);
    assert_ckpt_ok(ckpt_bundle_reader_find(&e, r, "w"));
    assert_int_equal(ckpt_bundle_reader_check(r, e), code);
    if (code == CKPT_ENOTSUP) {
        /* not damage: verify checks the pieces' records alone */
        assert_ckpt_ok(ckpt_bundle_reader_verify(r));
    } else {
        /* found too, possibly first through another entry (a damaged
         * piece's record by its own key, a piece that is itself
         * partitioned as a tensor of its own) */
        assert_int_equal(ckpt_bundle_reader_verify(r), code);
        assert_non_null(strstr(ckpt_error_last()->message, "ckpt."));
    }
    ckpt_bundle_reader_free(r);
}

static void test_reader_hand_made_good(void **state)
{
    fixture *f = *state;
    hand_bundle hb;
    ckpt__tensor_slice sl[2] = {slice2(2, 2, 0, -1), slice2(0, 2, 0, 3)};
    ckpt_bundle_reader *r;
    float got[12];
    (void)state;
    memset(&hb, 0, sizeof(hb));
    /* a full extent keyed with length -1 (TF's "0,2:-" form) */
    hb_piece(&hb, &sl[0], CKPT_DT_FLOAT, shape2(2, 3), W + 6, 24);
    hb_piece(&hb, &sl[1], CKPT_DT_FLOAT, shape2(2, 3), W, 24);
    hb_full(&hb, CKPT_DT_FLOAT, shape2(4, 3), sl, 2);
    hb_write(&hb, f->prefix, 0);
    r = open_reader(f->prefix);
    assert_ckpt_ok(ckpt_bundle_reader_read(r, "w", got, sizeof(got)));
    assert_memory_equal(got, W, sizeof(W));
    ckpt_bundle_reader_free(r);
}

/* A big-endian bundle: each piece is byte-swapped after assembly. */
static void test_reader_big_endian_pieces(void **state)
{
    fixture *f = *state;
    hand_bundle hb;
    ckpt__tensor_slice sl[2] = {slice2(0, 4, 0, 1), slice2(0, 4, 1, 2)};
    uint32_t be0[4], be1[8], want[12];
    uint32_t got[12];
    ckpt_bundle_reader *r;
    (void)state;
    for (int i = 0; i < 12; i++)
        want[i] = 0x01020300u + (uint32_t)i;
    for (int i = 0; i < 4; i++) {
        be0[i] = __builtin_bswap32(want[i * 3]);
        be1[2 * i] = __builtin_bswap32(want[i * 3 + 1]);
        be1[2 * i + 1] = __builtin_bswap32(want[i * 3 + 2]);
    }
    memset(&hb, 0, sizeof(hb));
    hb_piece(&hb, &sl[0], CKPT_DT_UINT32, shape2(4, 1), be0, sizeof(be0));
    hb_piece(&hb, &sl[1], CKPT_DT_UINT32, shape2(4, 2), be1, sizeof(be1));
    hb_full(&hb, CKPT_DT_UINT32, shape2(4, 3), sl, 2);
    hb_write(&hb, f->prefix, 1);
    r = open_reader(f->prefix);
    assert_ckpt_ok(ckpt_bundle_reader_read(r, "w", got, sizeof(got)));
    assert_memory_equal(got, want, sizeof(want));
    ckpt_bundle_reader_free(r);
}

static void test_reader_errors(void **state)
{
    fixture *f = *state;
    hand_bundle hb;
    ckpt__tensor_slice top = slice2(0, 2, 0, 3), bottom = slice2(2, 2, 0, 3);
    ckpt__tensor_slice rows13 = slice2(1, 3, 0, 3);
    int32_t ints[6] = {1, 2, 3, 4, 5, 6};
    (void)state;
    memset(&hb, 0, sizeof(hb));

    /* a gap: only rows 0-1 */
    hb_piece(&hb, &top, CKPT_DT_FLOAT, shape2(2, 3), W, 24);
    hb_full(&hb, CKPT_DT_FLOAT, shape2(4, 3), &top, 1);
    hb_write(&hb, f->prefix, 0);
    expect_read_error(f->prefix, CKPT_ECORRUPT,
                      "ckpt.index: tensor 'w': slices cover 6 of 12 elements");

    /* an overlap: rows 0-1 and rows 1-3 */
    {
        ckpt__tensor_slice sl[2] = {top, rows13};
        float nine[9] = {0};
        hb_piece(&hb, &top, CKPT_DT_FLOAT, shape2(2, 3), W, 24);
        hb_piece(&hb, &rows13, CKPT_DT_FLOAT, shape2(3, 3), nine, sizeof(nine));
        hb_full(&hb, CKPT_DT_FLOAT, shape2(4, 3), sl, 2);
        hb_write(&hb, f->prefix, 0);
        expect_read_error(f->prefix, CKPT_ECORRUPT,
                          "tensor 'w': slice 1 (1,3:0,3) overlaps an earlier "
                          "slice");
    }

    /* the same piece listed twice */
    {
        ckpt__tensor_slice sl[3] = {top, bottom, top};
        hb_piece(&hb, &top, CKPT_DT_FLOAT, shape2(2, 3), W, 24);
        hb_piece(&hb, &bottom, CKPT_DT_FLOAT, shape2(2, 3), W + 6, 24);
        hb_full(&hb, CKPT_DT_FLOAT, shape2(4, 3), sl, 3);
        hb_write(&hb, f->prefix, 0);
        expect_read_error(f->prefix, CKPT_ECORRUPT,
                          "tensor 'w': slice 2 (0,2:0,3) overlaps");
    }

    /* an extent outside the shape */
    {
        ckpt__tensor_slice out = slice2(3, 2, 0, 3);
        ckpt__tensor_slice sl[2] = {top, out};
        hb_piece(&hb, &top, CKPT_DT_FLOAT, shape2(2, 3), W, 24);
        hb_piece(&hb, &out, CKPT_DT_FLOAT, shape2(2, 3), W + 6, 24);
        hb_full(&hb, CKPT_DT_FLOAT, shape2(4, 3), sl, 2);
        hb_write(&hb, f->prefix, 0);
        expect_read_error(f->prefix, CKPT_ECORRUPT,
                          "tensor 'w': slice 1 (3,2:0,3) lies outside the "
                          "shape [4, 3]");
    }

    /* a slice with the wrong number of extents */
    {
        int64_t st = 0, ln = 2;
        ckpt__tensor_slice one = slice_of(1, &st, &ln);
        ckpt__tensor_slice sl[2] = {top, one};
        hb_piece(&hb, &top, CKPT_DT_FLOAT, shape2(2, 3), W, 24);
        hb_full(&hb, CKPT_DT_FLOAT, shape2(4, 3), sl, 2);
        hb_write(&hb, f->prefix, 0);
        expect_read_error(f->prefix, CKPT_ECORRUPT,
                          "tensor 'w': slice 1 (0,2) has 1 extents, the "
                          "tensor's rank is 2");
    }

    /* a missing slice entry */
    {
        ckpt__tensor_slice sl[2] = {top, bottom};
        hb_piece(&hb, &top, CKPT_DT_FLOAT, shape2(2, 3), W, 24);
        hb_full(&hb, CKPT_DT_FLOAT, shape2(4, 3), sl, 2);
        hb_write(&hb, f->prefix, 0);
        expect_read_error(f->prefix, CKPT_ECORRUPT,
                          "tensor 'w': slice 1 (2,2:0,3) has no entry in the "
                          "index");
    }

    /* a piece of another dtype */
    {
        ckpt__tensor_slice sl[2] = {top, bottom};
        hb_piece(&hb, &top, CKPT_DT_FLOAT, shape2(2, 3), W, 24);
        hb_piece(&hb, &bottom, CKPT_DT_INT32, shape2(2, 3), ints, sizeof(ints));
        hb_full(&hb, CKPT_DT_FLOAT, shape2(4, 3), sl, 2);
        hb_write(&hb, f->prefix, 0);
        expect_read_error(f->prefix, CKPT_ECORRUPT,
                          "tensor 'w': slice 1 (2,2:0,3) is int32, the "
                          "tensor is float32");
    }

    /* a piece whose shape is not its extents' */
    {
        ckpt__tensor_slice sl[2] = {top, bottom};
        hb_piece(&hb, &top, CKPT_DT_FLOAT, shape2(2, 3), W, 24);
        hb_piece(&hb, &bottom, CKPT_DT_FLOAT, shape2(3, 2), W + 6, 24);
        hb_full(&hb, CKPT_DT_FLOAT, shape2(4, 3), sl, 2);
        hb_write(&hb, f->prefix, 0);
        expect_read_error(f->prefix, CKPT_ECORRUPT,
                          "tensor 'w': slice 1 (2,2:0,3) has shape [3, 2], "
                          "its extents make [2, 3]");
    }

    /* a damaged piece record: its CRC names the piece and the tensor */
    {
        ckpt__tensor_slice sl[2] = {top, bottom};
        ckpt_buf path = CKPT_BUF_INIT;
        uint8_t *data;
        size_t n;
        hb_piece(&hb, &top, CKPT_DT_FLOAT, shape2(2, 3), W, 24);
        hb_piece(&hb, &bottom, CKPT_DT_FLOAT, shape2(2, 3), W + 6, 24);
        hb_full(&hb, CKPT_DT_FLOAT, shape2(4, 3), sl, 2);
        hb_write(&hb, f->prefix, 0);
        assert_ckpt_ok(ckpt_bundle_data_path(&path, f->prefix, 0, 1));
        data = test_read_file(path.ptr, &n);
        assert_int_equal(n, 48);
        data[30] ^= 0x01;
        test_write_file(path.ptr, data, n);
        free(data);
        ckpt_buf_dispose(&path);
        expect_read_error(f->prefix, CKPT_ECORRUPT,
                          "tensor 'w': slice 1 (2,2:0,3): ");
        expect_read_error(f->prefix, CKPT_ECORRUPT, "checksum mismatch");
        {
            /* skipping checksums reads the damaged value */
            ckpt_bundle_reader_options o = CKPT_BUNDLE_READER_OPTIONS_INIT;
            ckpt_bundle_reader *r = NULL;
            float got[12];
            o.skip_data_checksums = 1;
            assert_ckpt_ok(ckpt_bundle_reader_open(&r, f->prefix, &o));
            assert_ckpt_ok(ckpt_bundle_reader_read(r, "w", got, sizeof(got)));
            assert_memory_equal(got, W, 7 * sizeof(float));
            assert_memory_not_equal(got, W, sizeof(W));
            ckpt_bundle_reader_free(r);
        }
    }

    /* a partitioned scalar (strings: test_reader_partitioned_no_fixed_size) */
    {
        ckpt__tensor_slice sl[1] = {top};
        hb_full(&hb, CKPT_DT_FLOAT, (ckpt_shape){.rank = 0}, sl, 1);
        hb_write(&hb, f->prefix, 0);
        {
            ckpt_bundle_reader *r = open_reader(f->prefix);
            float one;
            assert_ckpt_error(ckpt_bundle_reader_read(r, "w", &one, 4),
                              CKPT_ECORRUPT,
                              "tensor 'w': a scalar with 1 "
                              "slices");
            ckpt_bundle_reader_free(r);
        }
    }

    /* the listed piece's entry is itself partitioned */
    {
        ckpt_buf key = CKPT_BUF_INIT;
        ckpt__bundle_entry e;
        ckpt__tensor_slice sl[2] = {top, bottom};
        hb_piece(&hb, &top, CKPT_DT_FLOAT, shape2(2, 3), W, 24);
        memset(&e, 0, sizeof(e));
        e.dtype = CKPT_DT_FLOAT;
        e.shape = shape2(2, 3);
        e.num_slices = 1;
        e.slices = &top;
        assert_ckpt_ok(ckpt__slice_key_encode(&key, "w", 1, &bottom));
        hb_put(&hb, key.ptr, key.size, &e);
        hb_full(&hb, CKPT_DT_FLOAT, shape2(4, 3), sl, 2);
        hb_write(&hb, f->prefix, 0);
        expect_read_error(f->prefix, CKPT_ECORRUPT,
                          "tensor 'w': slice 1 (2,2:0,3): its entry is itself "
                          "partitioned");
        ckpt_buf_dispose(&key);
    }
}

/* A string piece of "w" (`n` strings, shape [n]) as TensorFlow writes
 * one (hb_string_record). */
static void hb_string_piece(hand_bundle *hb,
                            const ckpt__tensor_slice *key_slice,
                            const char *const *strs, int n)
{
    ckpt_buf rec = CKPT_BUF_INIT, key = CKPT_BUF_INIT;
    ckpt__bundle_entry e;
    uint32_t crc = 0;
    int64_t dims[1] = {n};
    hb_string_record(&rec, &crc, strs, n, false);
    memset(&e, 0, sizeof(e));
    e.dtype = CKPT_DT_STRING;
    e.shape = bt_shape(1, dims);
    e.offset = (int64_t)hb->data.size;
    e.size = (int64_t)rec.size;
    e.crc32c = crc;
    assert_ckpt_ok(ckpt__buf_put(&hb->data, rec.ptr, rec.size));
    assert_ckpt_ok(ckpt__slice_key_encode(&key, "w", 1, key_slice));
    hb_put(hb, key.ptr, key.size, &e);
    ckpt_buf_dispose(&key);
    ckpt_buf_dispose(&rec);
}

/* Open the hand-made bundle of a partitioned string tensor "w": reading it
 * is not supported (it is not assembled), but checking it alone gives
 * `code` (0: no damage) and so does verifying the whole bundle, with
 * `needle` in both messages. */
static void expect_string_check(const char *prefix, int code,
                                const char *needle)
{
    ckpt_bundle_reader *r = open_reader(prefix);
    const ckpt_tensor_entry *e = NULL;
    ckpt_string_array a = CKPT_STRING_ARRAY_INIT;
    assert_ckpt_error(ckpt_bundle_reader_read_strings(r, "w", &a), CKPT_ENOTSUP,
                      "tensor 'w': partitioned tensor (");
    assert_ckpt_ok(ckpt_bundle_reader_find(&e, r, "w"));
    if (code == 0) {
        assert_ckpt_ok(ckpt_bundle_reader_check(r, e));
        assert_ckpt_ok(ckpt_bundle_reader_verify(r));
    } else {
        assert_ckpt_error(ckpt_bundle_reader_check(r, e), code, needle);
        assert_ckpt_error(ckpt_bundle_reader_verify(r), code, needle);
    }
    ckpt_bundle_reader_free(r);
}

/* A partitioned string tensor is not assembled, yet its pieces are held to
 * what a fixed-size tensor's are: ckpt_bundle_reader_check and _verify
 * find a slice without its piece (whose absence nothing else would show:
 * every record there is intact), a damaged piece, a scalar with slices and
 * pieces too small for the shape (refused before a bitmap of the shape's
 * elements is allocated: a 2^40-element shape costs nothing); and, for a
 * variant tensor, a piece too small for its own elements. */
static void test_reader_partitioned_no_fixed_size(void **state)
{
    fixture *f = *state;
    hand_bundle hb;
    ckpt__tensor_slice head = slice_of(1, (int64_t[]){0}, (int64_t[]){2});
    ckpt__tensor_slice tail = slice_of(1, (int64_t[]){2}, (int64_t[]){2});
    ckpt__tensor_slice sl[2] = {head, tail};
    const char *const first[2] = {"a", "bb"}, *const second[2] = {"ccc", ""};
    int64_t four[1] = {4}, huge[1] = {(int64_t)1 << 40};
    memset(&hb, 0, sizeof(hb));

    /* both pieces: intact */
    hb_string_piece(&hb, &head, first, 2);
    hb_string_piece(&hb, &tail, second, 2);
    hb_full(&hb, CKPT_DT_STRING, bt_shape(1, four), sl, 2);
    hb_write(&hb, f->prefix, 0);
    expect_string_check(f->prefix, 0, NULL);

    /* the second piece missing */
    hb_string_piece(&hb, &head, first, 2);
    hb_full(&hb, CKPT_DT_STRING, bt_shape(1, four), sl, 2);
    hb_write(&hb, f->prefix, 0);
    expect_string_check(f->prefix, CKPT_ECORRUPT,
                        "tensor 'w': slice 1 (2,2) has no entry in the index");

    /* a piece whose bytes were changed: its CRC */
    {
        ckpt_buf path = CKPT_BUF_INIT;
        uint8_t *data;
        size_t n;
        hb_string_piece(&hb, &head, first, 2);
        hb_string_piece(&hb, &tail, second, 2);
        hb_full(&hb, CKPT_DT_STRING, bt_shape(1, four), sl, 2);
        hb_write(&hb, f->prefix, 0);
        assert_ckpt_ok(ckpt_bundle_data_path(&path, f->prefix, 0, 1));
        data = test_read_file(path.ptr, &n);
        data[n - 1] ^= 0x01; /* the last byte of "ccc" */
        test_write_file(path.ptr, data, n);
        free(data);
        ckpt_buf_dispose(&path);
        expect_string_check(f->prefix, CKPT_ECORRUPT, "checksum mismatch");
    }

    /* a scalar with a slice */
    hb_string_piece(&hb, &head, first, 2);
    hb_full(&hb, CKPT_DT_STRING, (ckpt_shape){.rank = 0}, sl, 1);
    hb_write(&hb, f->prefix, 0);
    expect_string_check(f->prefix, CKPT_ECORRUPT,
                        "tensor 'w': slice 0 (0,2) has 1 extents, the "
                        "tensor's rank is 0");

    /* 2^40 elements listed with one piece of two */
    hb_string_piece(&hb, &head, first, 2);
    hb_full(&hb, CKPT_DT_STRING, bt_shape(1, huge), sl, 1);
    hb_write(&hb, f->prefix, 0);
    expect_string_check(f->prefix, CKPT_ECORRUPT,
                        "tensor 'w': its slices' records hold 9 bytes, too "
                        "few for the 1099511627776 elements of shape "
                        "[1099511627776]");

    /* a variant piece (no fixed size either) whose record holds fewer
     * bytes than its elements, though all pieces together hold enough */
    {
        ckpt_bundle_reader *r;
        const ckpt_tensor_entry *e = NULL;
        hb_piece(&hb, &head, CKPT_DT_VARIANT, bt_shape(1, (int64_t[]){2}),
                 "abcdef", 6);
        hb_piece(&hb, &tail, CKPT_DT_VARIANT, bt_shape(1, (int64_t[]){2}), "",
                 0);
        hb_full(&hb, CKPT_DT_VARIANT, bt_shape(1, four), sl, 2);
        hb_write(&hb, f->prefix, 0);
        r = open_reader(f->prefix);
        assert_ckpt_ok(ckpt_bundle_reader_find(&e, r, "w"));
        assert_ckpt_error(ckpt_bundle_reader_check(r, e), CKPT_ECORRUPT,
                          "tensor 'w': slice 1 (2,2): its record holds 0 "
                          "bytes, too few for its 2 elements");
        assert_ckpt_error(ckpt_bundle_reader_verify(r), CKPT_ECORRUPT,
                          "too few for its 2 elements");
        ckpt_bundle_reader_free(r);
    }
}

/* ---- read_many refuses a bad slice layout before writing ----------------- */

/* A plain variable "a" (4 floats) and then "w" (4 x 3) whose slices, rows
 * 0-1 and rows 1-2, leave row 3 a hole (row 1 stored twice: the pieces'
 * sizes add up to the shape's, so only the coverage finds it). read_many
 * of both checks every request's layout before it writes anything: it
 * fails naming "w", and both destinations keep their pattern. Before, "a"
 * was read (and "w"'s first piece placed) before the assembly of "w"
 * found the overlap. */
static void test_read_many_layout_before_writing(void **state)
{
    bt_fixture *f = *state;
    static const float a[4] = {1, 2, 3, 4};
    ckpt__tensor_slice top = slice2(0, 2, 0, 3), mid = slice2(1, 2, 0, 3);
    ckpt__tensor_slice sl[2] = {top, mid};
    hand_bundle hb;
    ckpt__bundle_entry e;
    ckpt_bundle_reader *r;
    uint8_t got_a[16], got_w[48], pattern[48];
    ckpt_read_request reqs[2] = {{"a", got_a, sizeof(got_a)},
                                 {"w", got_w, sizeof(got_w)}};
    memset(&hb, 0, sizeof(hb));
    memset(&e, 0, sizeof(e));
    e.dtype = CKPT_DT_FLOAT;
    e.shape.rank = 1;
    e.shape.dims[0] = 4;
    e.size = sizeof(a);
    e.crc32c = ckpt__crc32c_mask(ckpt__crc32c(a, sizeof(a)));
    assert_ckpt_ok(ckpt__buf_put(&hb.data, a, sizeof(a)));
    hb_put(&hb, "a", 1, &e);
    hb_piece(&hb, &top, CKPT_DT_FLOAT, shape2(2, 3), W, 24);
    hb_piece(&hb, &mid, CKPT_DT_FLOAT, shape2(2, 3), W + 3, 24);
    hb_full(&hb, CKPT_DT_FLOAT, shape2(4, 3), sl, 2);
    hb_write(&hb, f->prefix, 0);

    memset(pattern, 0xA5, sizeof(pattern));
    memcpy(got_a, pattern, sizeof(got_a));
    memcpy(got_w, pattern, sizeof(got_w));
    r = open_reader(f->prefix);
    assert_ckpt_error(ckpt_bundle_reader_read_many(r, reqs, 2), CKPT_ECORRUPT,
                      "tensor 'w': slice 1 (1,2:0,3) overlaps an earlier "
                      "slice");
    assert_memory_equal(got_a, pattern, sizeof(got_a));
    assert_memory_equal(got_w, pattern, sizeof(got_w));
    /* "a" alone reads */
    assert_ckpt_ok(ckpt_bundle_reader_read_many(r, reqs, 1));
    assert_memory_equal(got_a, a, sizeof(a));
    ckpt_bundle_reader_free(r);
}

/* ---- LevelDB reads an index holding slice keys --------------------------- */

static void test_leveldb_reads_slice_keys(void **state)
{
#ifdef CKPT_LEVELDB_DUMP
    fixture *f = *state;
    char *index = test_path(f->dir, "ckpt.index");
    ckpt_buf ours = CKPT_BUF_INIT;
    ckpt_bundle_writer *w = open_writer(f->prefix, 1);
    ckpt_shape full = shape2(300, 1);
    float vals[300];

    /* many pieces (keys with 1- to 3-byte numbers) and names around them,
     * some with 0xFF bytes */
    for (int i = 0; i < 300; i++)
        vals[i] = (float)i;
    for (int i = 0; i < 300; i += 3) {
        ckpt_slice_extent ext[2] = {{i, 3}, {0, CKPT_SLICE_FULL}};
        assert_ckpt_ok(ckpt_bundle_writer_add_slice(
            w, "v", CKPT_DT_FLOAT, &full, ext, vals + i, 3 * sizeof(float)));
        assert_ckpt_ok(ckpt_bundle_writer_add_slice(w, "v\xff", CKPT_DT_FLOAT,
                                                    &full, ext, vals + i,
                                                    3 * sizeof(float)));
    }
    assert_ckpt_ok(ckpt_bundle_writer_add(
        w, "a", CKPT_DT_FLOAT, &(ckpt_shape){.rank = 1, .dims = {300}}, vals,
        sizeof(vals)));
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);

    bt_expect_leveldb_reads_same(index, &ours);
    /* header, then the slice keys (00 ...) before "a", "v", "v\xff" */
    assert_memory_equal(ours.ptr, "- 08011a020801\n00", 17);
    {
        const char *a = strstr(ours.ptr, "\n61 ");
        const char *v = strstr(ours.ptr, "\n76 ");
        const char *vff = strstr(ours.ptr, "\n76ff ");
        const char *last_key = strstr(ours.ptr, "\n00");
        while (last_key && strstr(last_key + 1, "\n00"))
            last_key = strstr(last_key + 1, "\n00");
        assert_non_null(a);
        assert_non_null(v);
        assert_non_null(vff);
        assert_true(last_key < a && a < v && v < vff);
    }
    {
        ckpt_bundle_reader *r = open_reader(f->prefix);
        float got[300];
        assert_int_equal(ckpt_bundle_reader_count(r), 203);
        assert_ckpt_ok(ckpt_bundle_reader_read(r, "v\xff", got, sizeof(got)));
        assert_memory_equal(got, vals, sizeof(vals));
        ckpt_bundle_reader_free(r);
    }
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
        cmocka_unit_test(test_ordered_code_reference_values),
        cmocka_unit_test(test_ordered_code_sorts_like_numbers),
        cmocka_unit_test(test_slice_key_spec_example),
        cmocka_unit_test(test_tensor_slice_proto_bytes),
        cmocka_unit_test_setup_teardown(test_writer_spec_example_entries,
                                        bt_setup, bt_teardown),
        cmocka_unit_test_setup_teardown(test_roundtrip_rows, bt_setup,
                                        bt_teardown),
        cmocka_unit_test_setup_teardown(test_roundtrip_3d_middle_dimension,
                                        bt_setup, bt_teardown),
        cmocka_unit_test_setup_teardown(test_roundtrip_columns_across_shards,
                                        bt_setup, bt_teardown),
        cmocka_unit_test_setup_teardown(test_entry_piece_decodes_keys, bt_setup,
                                        bt_teardown),
        cmocka_unit_test_setup_teardown(test_whole_piece_is_ordinary_entry,
                                        bt_setup, bt_teardown),
        cmocka_unit_test_setup_teardown(test_writer_errors, bt_setup,
                                        bt_teardown),
        cmocka_unit_test_setup_teardown(test_reader_hand_made_good, bt_setup,
                                        bt_teardown),
        cmocka_unit_test_setup_teardown(test_reader_big_endian_pieces, bt_setup,
                                        bt_teardown),
        cmocka_unit_test_setup_teardown(test_reader_partitioned_no_fixed_size,
                                        bt_setup, bt_teardown),
        cmocka_unit_test_setup_teardown(test_reader_errors, bt_setup,
                                        bt_teardown),
        cmocka_unit_test_setup_teardown(test_read_many_layout_before_writing,
                                        bt_setup, bt_teardown),
        cmocka_unit_test_setup_teardown(test_leveldb_reads_slice_keys, bt_setup,
                                        bt_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
