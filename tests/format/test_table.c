/* Tests for format/table: the builder's exact bytes (docs/format.md's 125-byte
 * example, the empty table, TensorFlow's vectors re-emitted byte for byte),
 * block splitting and separators, TensorFlow's oversize-entry rule, reading
 * TensorFlow-written index files (Snappy ones included), and the reader's
 * rejection of damaged or hand-built bad tables. */
#include "spec_example.h"
#include "test_util.h"

#include "common/internal.h"
#include "format/snappy_block.h"
#include "format/table.h"
#include "util/coding.h"
#include "util/crc32c.h"

#include <snappy-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- an in-memory ckpt_fs: write appends to a buffer --------------------- */

struct ckpt_file {
    ckpt_buf data;
    int writes;
    int fail_at; /* fail the Nth write (1-based), 0 = never */
};

static int mem_write(ckpt_file *f, const void *buf, size_t n, void *payload)
{
    (void)payload;
    f->writes++;
    if (f->fail_at && f->writes >= f->fail_at)
        return ckpt__error(CKPT_EIO, "mem: write failed");
    return ckpt__buf_put(&f->data, buf, n);
}

static const ckpt_fs mem_fs = {.version = CKPT_FS_VERSION, .write = mem_write};

/* ---- helpers --------------------------------------------------------------
 */

typedef struct kv {
    ckpt_buf key;
    ckpt_buf value;
} kv;

typedef struct entries {
    kv *items;
    size_t n, cap;
} entries;

static void entries_add(entries *e, const void *k, size_t kn, const void *v,
                        size_t vn)
{
    kv *it;
    if (e->n == e->cap) {
        e->cap = e->cap ? 2 * e->cap : 64;
        e->items = realloc(e->items, e->cap * sizeof(*e->items));
        assert_non_null(e->items);
    }
    it = &e->items[e->n++];
    memset(it, 0, sizeof(*it));
    assert_int_equal(ckpt__buf_put(&it->key, k, kn), 0);
    assert_int_equal(ckpt__buf_put(&it->value, v, vn), 0);
}

static void entries_free(entries *e)
{
    for (size_t i = 0; i < e->n; i++) {
        ckpt_buf_dispose(&e->items[i].key);
        ckpt_buf_dispose(&e->items[i].value);
    }
    free(e->items);
    memset(e, 0, sizeof(*e));
}

static int collect_cb(const uint8_t *key, size_t key_len, const uint8_t *value,
                      size_t value_len, void *payload)
{
    entries_add(payload, key, key_len, value, value_len);
    return 0;
}

/* Build a table of `e` into `out` with the given block size. */
static void build(ckpt_buf *out, const entries *e, size_t block_size)
{
    struct ckpt_file f = {CKPT_BUF_INIT, 0, 0};
    ckpt__table_builder *t = NULL;
    assert_ckpt_ok(
        ckpt__table_builder_new(&t, &mem_fs, &f, "t.index", block_size));
    for (size_t i = 0; i < e->n; i++)
        assert_ckpt_ok(ckpt__table_builder_add(
            t, e->items[i].key.ptr, e->items[i].key.size, e->items[i].value.ptr,
            e->items[i].value.size));
    assert_ckpt_ok(ckpt__table_builder_finish(t));
    assert_int_equal(ckpt__table_builder_file_size(t), f.data.size);
    ckpt__table_builder_free(t);
    *out = f.data;
}

/* Read `file` and check it holds exactly `e`. */
static void expect_entries(const ckpt_buf *file, const entries *e)
{
    entries got = {0};
    assert_ckpt_ok(ckpt__table_iterate((const uint8_t *)file->ptr, file->size,
                                       "t.index", collect_cb, &got));
    assert_int_equal(got.n, e->n);
    for (size_t i = 0; i < e->n; i++) {
        assert_int_equal(got.items[i].key.size, e->items[i].key.size);
        assert_memory_equal(got.items[i].key.ptr, e->items[i].key.ptr,
                            e->items[i].key.size);
        assert_int_equal(got.items[i].value.size, e->items[i].value.size);
        assert_memory_equal(got.items[i].value.ptr, e->items[i].value.ptr,
                            e->items[i].value.size);
    }
    entries_free(&got);
}

/* The index block's entries (separator -> handle) of a table image. */
typedef struct index_entry {
    char sep[64];
    size_t sep_len;
    uint64_t off, size;
} index_entry;

typedef struct index_list {
    index_entry items[512];
    size_t n;
} index_list;

static int index_cb(const uint8_t *key, size_t key_len, const uint8_t *value,
                    size_t value_len, void *payload)
{
    index_list *l = payload;
    index_entry *it = &l->items[l->n++];
    const uint8_t *p = value;
    assert_true(l->n <= 512 && key_len <= sizeof(it->sep));
    memcpy(it->sep, key, key_len);
    it->sep_len = key_len;
    assert_true(ckpt__get_varint64(&p, value + value_len, &it->off));
    assert_true(ckpt__get_varint64(&p, value + value_len, &it->size));
    assert_ptr_equal(p, value + value_len);
    return 0;
}

static void read_index(const ckpt_buf *file, index_list *l)
{
    const uint8_t *f = (const uint8_t *)file->ptr;
    const uint8_t *footer = f + file->size - 48;
    const uint8_t *p = footer;
    uint64_t mo, ms, io, is;
    l->n = 0;
    assert_true(ckpt__get_varint64(&p, footer + 40, &mo));
    assert_true(ckpt__get_varint64(&p, footer + 40, &ms));
    assert_true(ckpt__get_varint64(&p, footer + 40, &io));
    assert_true(ckpt__get_varint64(&p, footer + 40, &is));
    assert_int_equal(ms, 8);
    assert_memory_equal(f + mo, "\x00\x00\x00\x00\x01\x00\x00\x00", 8);
    assert_int_equal(f[io + is], 0); /* index stored uncompressed */
    assert_ckpt_ok(
        ckpt__block_iterate(f + io, (size_t)is, "index", index_cb, l));
}

/* Append a block with a trailer of `type` (CRC computed) to `f`. */
static void put_block(ckpt_buf *f, const void *p, size_t n, uint8_t type,
                      uint64_t *off)
{
    uint8_t trailer[5];
    uint32_t crc = ckpt__crc32c(p, n);
    trailer[0] = type;
    crc = ckpt__crc32c_extend(crc, trailer, 1);
    ckpt__encode_fixed32(trailer + 1, ckpt__crc32c_mask(crc));
    *off = f->size;
    assert_int_equal(ckpt__buf_put(f, p, n), 0);
    assert_int_equal(ckpt__buf_put(f, trailer, 5), 0);
}

/* A block whose entries are all stored whole with a restart each, in the
 * order given (no ordering checks: for hand-built bad tables). Lengths of
 * NULL mean strlen. */
static void raw_block_n(ckpt_buf *b, const char *const *keys,
                        const size_t *klens, const char *const *values,
                        const size_t *vlens, size_t n)
{
    uint32_t restarts[32];
    assert_true(n <= 32);
    ckpt__buf_clear(b);
    for (size_t i = 0; i < n; i++) {
        size_t kn = klens ? klens[i] : strlen(keys[i]);
        size_t vn = vlens ? vlens[i] : strlen(values[i]);
        restarts[i] = (uint32_t)b->size;
        assert_ckpt_ok(ckpt__put_varint32(b, 0));
        assert_ckpt_ok(ckpt__put_varint32(b, (uint32_t)kn));
        assert_ckpt_ok(ckpt__put_varint32(b, (uint32_t)vn));
        assert_ckpt_ok(ckpt__buf_put(b, keys[i], kn));
        assert_ckpt_ok(ckpt__buf_put(b, values[i], vn));
    }
    if (n == 0) {
        restarts[0] = 0;
        n = 1;
    }
    for (size_t i = 0; i < n; i++)
        assert_ckpt_ok(ckpt__put_fixed32(b, restarts[i]));
    assert_ckpt_ok(ckpt__put_fixed32(b, (uint32_t)n));
}

static void raw_block(ckpt_buf *b, const char *const *keys,
                      const char *const *values, size_t n)
{
    raw_block_n(b, keys, NULL, values, NULL, n);
}

static void put_footer(ckpt_buf *f, uint64_t mo, uint64_t ms, uint64_t io,
                       uint64_t is)
{
    uint8_t footer[48];
    size_t n;
    memset(footer, 0, sizeof(footer));
    n = ckpt__encode_varint64(footer, mo);
    n += ckpt__encode_varint64(footer + n, ms);
    n += ckpt__encode_varint64(footer + n, io);
    ckpt__encode_varint64(footer + n, is);
    ckpt__encode_fixed64(footer + 40, CKPT__TABLE_MAGIC);
    assert_ckpt_ok(ckpt__buf_put(f, footer, 48));
}

/* Assemble a table from raw data blocks (already formatted, stored with
 * `type`) and their separators. */
static void assemble(ckpt_buf *f, const ckpt_buf *blocks, const char **seps,
                     size_t nblocks, uint8_t type)
{
    ckpt_buf idx = CKPT_BUF_INIT, meta = CKPT_BUF_INIT;
    char handles[16][24];
    const char *hptr[16];
    size_t hlen[16];
    uint64_t offs[16], mo, io;
    assert_true(nblocks <= 16);
    ckpt__buf_clear(f);
    for (size_t i = 0; i < nblocks; i++)
        put_block(f, blocks[i].ptr, blocks[i].size, type, &offs[i]);
    raw_block(&meta, NULL, NULL, 0);
    put_block(f, meta.ptr, meta.size, 0, &mo);
    for (size_t i = 0; i < nblocks; i++) {
        hlen[i] = ckpt__encode_varint64((uint8_t *)handles[i], offs[i]);
        hlen[i] += ckpt__encode_varint64((uint8_t *)handles[i] + hlen[i],
                                         blocks[i].size);
        hptr[i] = handles[i];
    }
    raw_block_n(&idx, seps, NULL, hptr, hlen, nblocks);
    put_block(f, idx.ptr, idx.size, 0, &io);
    put_footer(f, mo, meta.size, io, idx.size);
    ckpt_buf_dispose(&idx);
    ckpt_buf_dispose(&meta);
}

static int table_rc(const ckpt_buf *f)
{
    entries got = {0};
    int rc = ckpt__table_iterate((const uint8_t *)f->ptr, f->size, "bad.index",
                                 collect_cb, &got);
    entries_free(&got);
    return rc;
}

/* ---- docs/format.md's 125-byte example (§4.4, spec_example.h) ---------- */

static void example_entries(entries *e)
{
    entries_add(e, "", 0, "\x08\x01\x1a\x02\x08\x01", 6);
    entries_add(e, "x", 1, spec_example_index + 13, 19);
}

static void test_example_file_bytes(void **state)
{
    entries e = {0};
    ckpt_buf f;
    (void)state;
    /* header key "" and "x" -> its BundleEntryProto (dtype, shape [2, 3],
     * size 24, crc32c) */
    example_entries(&e);
    build(&f, &e, 0);
    assert_int_equal(f.size, 125);
    assert_memory_equal(f.ptr, spec_example_index, 125);
    expect_entries(&f, &e);
    ckpt_buf_dispose(&f);
    entries_free(&e);
}

static void test_empty_table(void **state)
{
    entries e = {0};
    ckpt_buf f;
    /* metaindex at 0, index at 13, both the 8-byte empty block */
    static const uint8_t expect[26] = {0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00,
                                       0x00, 0x00, 0xc0, 0xf2, 0xa1, 0xb0, 0x00,
                                       0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
                                       0x00, 0xc0, 0xf2, 0xa1, 0xb0};
    (void)state;
    build(&f, &e, 0);
    assert_int_equal(f.size, 26 + 48);
    assert_memory_equal(f.ptr, expect, 26);
    assert_memory_equal(f.ptr + 26, "\x00\x08\x0d\x08", 4);
    assert_memory_equal(f.ptr + 66, "\x57\xfb\x80\x8b\x24\x75\x47\xdb", 8);
    expect_entries(&f, &e);
    ckpt_buf_dispose(&f);
}

/* ---- separators ------------------------------------------------------------
 */

static void check_sep(const char *a, size_t na, const char *b, size_t nb,
                      const char *want, size_t nwant)
{
    ckpt_buf s = CKPT_BUF_INIT;
    assert_ckpt_ok(ckpt__buf_put(&s, a, na));
    assert_ckpt_ok(ckpt__table_shortest_separator(&s, (const uint8_t *)b, nb));
    assert_int_equal(s.size, nwant);
    assert_memory_equal(s.ptr, want, nwant);
    ckpt_buf_dispose(&s);
}

static void check_succ(const char *a, size_t na, const char *want, size_t nwant)
{
    ckpt_buf s = CKPT_BUF_INIT;
    assert_ckpt_ok(ckpt__buf_put(&s, a, na));
    ckpt__table_short_successor(&s);
    assert_int_equal(s.size, nwant);
    if (nwant)
        assert_memory_equal(s.ptr, want, nwant);
    ckpt_buf_dispose(&s);
}

static void test_separators(void **state)
{
    (void)state;
    check_sep("abc", 3, "abz", 3, "abd", 3);
    check_sep("abc", 3, "abd", 3, "abc", 3);   /* c+1 == d: keep */
    check_sep("ab", 2, "abc", 3, "ab", 2);     /* prefix: keep */
    check_sep("abc", 3, "ab", 2, "abc", 3);    /* (never in order) */
    check_sep("a\xff", 2, "b", 1, "a\xff", 2); /* a+1 == b */
    check_sep("a\xffx", 3, "c", 1, "b", 1);
    check_sep("\xff\x01", 2, "\xff\x05", 2, "\xff\x02", 2);
    check_sep("\xff\xff", 2, "\xff\xff\x01", 3, "\xff\xff", 2);
    check_sep("00000270", 8, "00000273", 8, "00000271", 8);
    check_sep("", 0, "a", 1, "", 0);
    check_sep("helloworld", 10, "hellozzz", 8, "hellox", 6);

    check_succ("c", 1, "d", 1);
    check_succ("c2", 2, "d", 1);
    check_succ("w/.ATTRIBUTES/VARIABLE_VALUE", 28, "x", 1);
    check_succ("_CHECKPOINTABLE_OBJECT_GRAPH", 28, "`", 1);
    check_succ("\xff\xff\x10z", 4, "\xff\xff\x11", 3);
    check_succ("\xff\xff", 2, "\xff\xff", 2);
    check_succ("", 0, "", 0);
}

/* ---- multi-block tables ----------------------------------------------------
 */

static void make_many(entries *e, size_t n, size_t value_len)
{
    char *val = malloc(value_len + 1);
    assert_non_null(val);
    for (size_t i = 0; i < n; i++) {
        char key[32];
        snprintf(key, sizeof(key), "%08zu", i * 3);
        for (size_t k = 0; k < value_len; k++)
            val[k] = (char)('a' + (i + k) % 26);
        entries_add(e, key, strlen(key), val, value_len);
    }
    free(val);
}

static void test_many_keys_multiple_blocks(void **state)
{
    entries e = {0};
    ckpt_buf f;
    index_list l;
    size_t first = 0;
    (void)state;
    make_many(&e, 6000, 100); /* about 660 KiB of entries */
    build(&f, &e, 0);
    expect_entries(&f, &e);
    read_index(&f, &l);
    assert_true(l.n >= 2);
    for (size_t b = 0; b < l.n; b++) {
        /* find the entries of this block: the last one <= separator */
        size_t last = first;
        entries blk = {0};
        const char *sep_want;
        ckpt_buf want = CKPT_BUF_INIT;
        assert_ckpt_ok(ckpt__block_iterate(
            (const uint8_t *)f.ptr + l.items[b].off, (size_t)l.items[b].size,
            "blk", collect_cb, &blk));
        assert_true(blk.n > 0);
        last = first + blk.n - 1;
        assert_string_equal(blk.items[0].key.ptr, e.items[first].key.ptr);
        assert_string_equal(blk.items[blk.n - 1].key.ptr,
                            e.items[last].key.ptr);
        /* every block but the last reached the block size */
        if (b + 1 < l.n) {
            assert_true(l.items[b].size >= CKPT__TABLE_BLOCK_SIZE);
            assert_true(l.items[b].size < CKPT__TABLE_BLOCK_SIZE + 120);
        }
        /* the separator: LevelDB's rule, computed here independently */
        assert_ckpt_ok(ckpt__buf_puts(&want, e.items[last].key.ptr));
        if (b + 1 < l.n) {
            const char *a = e.items[last].key.ptr;
            const char *nx = e.items[last + 1].key.ptr;
            size_t i = 0;
            while (a[i] == nx[i])
                i++;
            if ((unsigned char)a[i] + 1 < (unsigned char)nx[i]) {
                want.ptr[i]++;
                want.size = i + 1;
            }
        } else {
            /* "00017997" -> "1" */
            want.ptr[0]++;
            want.size = 1;
        }
        sep_want = want.ptr;
        assert_int_equal(l.items[b].sep_len, want.size);
        assert_memory_equal(l.items[b].sep, sep_want, want.size);
        /* contiguous layout: block k+1 follows block k's trailer */
        if (b + 1 < l.n)
            assert_int_equal(l.items[b + 1].off,
                             l.items[b].off + l.items[b].size + 5);
        ckpt_buf_dispose(&want);
        entries_free(&blk);
        first = last + 1;
    }
    assert_int_equal(first, e.n);
    ckpt_buf_dispose(&f);

    /* a small block size: many blocks, same entries */
    build(&f, &e, 4096);
    read_index(&f, &l);
    assert_true(l.n > 100);
    expect_entries(&f, &e);
    ckpt_buf_dispose(&f);
    entries_free(&e);
}

static void test_small_block_size_many_blocks(void **state)
{
    entries e = {0};
    ckpt_buf f;
    index_list l;
    (void)state;
    make_many(&e, 200, 30);
    build(&f, &e, 512);
    expect_entries(&f, &e);
    read_index(&f, &l);
    assert_true(l.n > 10);
    ckpt_buf_dispose(&f);
    entries_free(&e);
}

/* TensorFlow's rule: key + value >= 2 * block size flushes the current
 * block first, so the big entry starts a new block. */
static void test_oversize_entry_rule(void **state)
{
    size_t big = 2 * CKPT__TABLE_BLOCK_SIZE;
    char *v = malloc(big);
    (void)state;
    assert_non_null(v);
    memset(v, 'v', big);
    for (int k = 0; k < 2; k++) {
        entries e = {0};
        ckpt_buf f;
        index_list l;
        size_t vlen = k == 0 ? big - 1 : big - 2; /* key "b" is 1 byte */
        entries_add(&e, "a", 1, "1", 1);
        entries_add(&e, "b", 1, v, vlen);
        entries_add(&e, "c", 1, "3", 1);
        build(&f, &e, 0);
        expect_entries(&f, &e);
        read_index(&f, &l);
        if (k == 0) {
            /* [a] [b] [c] */
            assert_int_equal(l.n, 3);
            assert_int_equal(l.items[0].size, 5 + 8);
            assert_memory_equal(l.items[0].sep, "a", 1);
            assert_memory_equal(l.items[1].sep, "b", 1);
            assert_memory_equal(l.items[2].sep, "d", 1);
        } else {
            /* [a b] [c] */
            assert_int_equal(l.n, 2);
            assert_memory_equal(l.items[0].sep, "b", 1);
            assert_memory_equal(l.items[1].sep, "d", 1);
        }
        ckpt_buf_dispose(&f);
        entries_free(&e);
    }
    /* a huge first entry needs no flush (the table is empty) */
    {
        entries e = {0};
        ckpt_buf f;
        index_list l;
        entries_add(&e, "b", 1, v, big);
        entries_add(&e, "c", 1, "3", 1);
        build(&f, &e, 0);
        read_index(&f, &l);
        assert_int_equal(l.n, 2);
        assert_int_equal(l.items[0].off, 0);
        expect_entries(&f, &e);
        ckpt_buf_dispose(&f);
        entries_free(&e);
    }
    free(v);
}

static void test_binary_keys(void **state)
{
    entries e = {0};
    ckpt_buf f;
    (void)state;
    entries_add(&e, "", 0, "", 0);
    entries_add(&e, "\x00", 1, "zero", 4);
    entries_add(&e, "\x00\x00", 2, "\xff", 1);
    entries_add(&e, "\x00\x77\x00\x01\x01\x02\x80\x82", 8, "slice", 5);
    entries_add(&e, "a\x00z", 3, "", 0);
    entries_add(&e, "\xfe", 1, "x", 1);
    entries_add(&e, "\xff", 1, "y", 1);
    entries_add(&e, "\xff\xff", 2, "z", 1);
    build(&f, &e, 0);
    expect_entries(&f, &e);
    ckpt_buf_dispose(&f);
    entries_free(&e);
}

/* ---- builder errors ---------------------------------------------------------
 */

static void test_builder_write_error_sticks(void **state)
{
    struct ckpt_file f = {CKPT_BUF_INIT, 0, 1};
    ckpt__table_builder *t = NULL;
    (void)state;
    assert_ckpt_ok(ckpt__table_builder_new(&t, &mem_fs, &f, "w.index", 64));
    /* 80 bytes of entry >= 64: the block is written at once and fails */
    assert_ckpt_error(ckpt__table_builder_add(t, "a", 1,
                                              "0123456789012345678901234567890"
                                              "1234567890123456789012345678901"
                                              "23456789",
                                              70),
                      CKPT_EIO, "mem: write failed");
    assert_int_equal(ckpt__table_builder_add(t, "b", 1, "x", 1), CKPT_EIO);
    assert_int_equal(ckpt__table_builder_finish(t), CKPT_EIO);
    assert_int_equal(f.writes, 1); /* nothing more was attempted */
    ckpt__table_builder_free(t);
    ckpt_buf_dispose(&f.data);

    /* failing the footer write */
    memset(&f, 0, sizeof(f));
    f.fail_at = 4; /* data block, metaindex, index, footer */
    assert_ckpt_ok(ckpt__table_builder_new(&t, &mem_fs, &f, "w.index", 0));
    assert_ckpt_ok(ckpt__table_builder_add(t, "a", 1, "b", 1));
    assert_int_equal(ckpt__table_builder_finish(t), CKPT_EIO);
    assert_int_equal(f.writes, 4);
    ckpt__table_builder_free(t);
    ckpt_buf_dispose(&f.data);

    /* add after finish */
    memset(&f, 0, sizeof(f));
    assert_ckpt_ok(ckpt__table_builder_new(&t, &mem_fs, &f, "w.index", 0));
    assert_ckpt_ok(ckpt__table_builder_finish(t));
    assert_ckpt_error(ckpt__table_builder_add(t, "a", 1, "b", 1), CKPT_ESTATE,
                      "w.index: table already finished");
    ckpt__table_builder_free(t);
    ckpt_buf_dispose(&f.data);

    assert_ckpt_error(ckpt__table_builder_new(&t, &mem_fs, NULL, "x", 0),
                      CKPT_EINVAL, "required");
    assert_null(t);
    ckpt__table_builder_free(NULL);
}

/* ---- TensorFlow-written index files ----------------------------------------
 */

typedef struct vector_case {
    const char *dir;
    const char *file;
    size_t count;
    const char *second_key;
    const char *last_key;
    int snappy;
} vector_case;

static const vector_case vectors[] = {
    {"serving_half_plus_two_cpu", "variables.index", 6, "a", "c2", 1},
    {"serving_half_plus_two_tf2_cpu", "variables.index", 5,
     "_CHECKPOINTABLE_OBJECT_GRAPH", "c/.ATTRIBUTES/VARIABLE_VALUE", 1},
    {"tf2onnx_regression_ckpt", "model.index", 3, "W", "b", 0},
    {"rust_regression_savedmodel", "variables.index", 8,
     "_CHECKPOINTABLE_OBJECT_GRAPH", "w/.ATTRIBUTES/VARIABLE_VALUE", 0},
    {"tictactoe_ckpt_manager", "ckpt-17.index", 20,
     "_CHECKPOINTABLE_OBJECT_GRAPH", "step/.ATTRIBUTES/VARIABLE_VALUE", 0},
    {"tictactoe_ckpt_manager", "ckpt-19.index", 20,
     "_CHECKPOINTABLE_OBJECT_GRAPH", "step/.ATTRIBUTES/VARIABLE_VALUE", 0},
    {"rl_collection_sharded", "ckpt-5.index", 32,
     "_CHECKPOINTABLE_OBJECT_GRAPH", "save_counter/.ATTRIBUTES/VARIABLE_VALUE",
     0},
    {"tfx_estimator_saver", "model.ckpt-1000.index", 61,
     "dnn/hiddenlayer_0/bias",
     "training/Ftrl/linear/linear_model/trip_start_month_xf/weights/linear", 0},
    {"tfx_estimator_saver", "model.ckpt-0.index", 61, "dnn/hiddenlayer_0/bias",
     "training/Ftrl/linear/linear_model/trip_start_month_xf/weights/linear", 0},
};

static void test_tf_vectors(void **state)
{
    char *root = test_tf_vector("");
    (void)state;
    if (!root)
        return;
    for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
        const vector_case *v = &vectors[i];
        char path[4096];
        uint8_t *data;
        size_t n = 0;
        entries got = {0};
        ckpt_buf rebuilt;
        snprintf(path, sizeof(path), "%s/%s/%s", root, v->dir, v->file);
        data = test_read_file(path, &n);
        if (!data)
            fail_msg("cannot read %s", path);
        assert_ckpt_ok(ckpt__table_iterate(data, n, v->file, collect_cb, &got));
        assert_int_equal(got.n, v->count);
        assert_int_equal(got.items[0].key.size, 0);
        assert_true(got.items[0].value.size == 6);
        assert_memory_equal(got.items[0].value.ptr, "\x08", 1);
        assert_memory_equal(got.items[0].value.ptr + 2, "\x1a\x02\x08\x01", 4);
        assert_string_equal(got.items[1].key.ptr, v->second_key);
        assert_string_equal(got.items[got.n - 1].key.ptr, v->last_key);
        /* the first data block's trailer type */
        {
            ckpt_buf img = {(char *)data, n, n};
            index_list l;
            read_index(&img, &l);
            assert_int_equal(l.n, 1);
            assert_int_equal(data[l.items[0].size], v->snappy ? 1 : 0);
        }
        /* our builder re-emits uncompressed vectors byte for byte */
        build(&rebuilt, &got, 0);
        if (!v->snappy) {
            assert_int_equal(rebuilt.size, n);
            assert_memory_equal(rebuilt.ptr, data, n);
        }
        expect_entries(&rebuilt, &got);
        ckpt_buf_dispose(&rebuilt);
        entries_free(&got);
        free(data);
    }
    /* a known entry value: "a" in serving_half_plus_two_cpu */
    {
        char path[4096];
        uint8_t *data;
        size_t n = 0;
        entries got = {0};
        snprintf(path, sizeof(path),
                 "%s/serving_half_plus_two_cpu/"
                 "variables.index",
                 root);
        data = test_read_file(path, &n);
        assert_non_null(data);
        assert_int_equal(n, 172);
        assert_ckpt_ok(ckpt__table_iterate(data, n, "v", collect_cb, &got));
        assert_int_equal(got.items[1].value.size, 11);
        assert_memory_equal(got.items[1].value.ptr,
                            "\x08\x01\x12\x00\x28\x04\x35\x06\x38\x27\x1f", 11);
        entries_free(&got);
        free(data);
    }
    free(root);
}

/* ---- damaged tables
 * ------------------------------------------------------------ */

static void test_truncated_and_magic(void **state)
{
    ckpt_buf f = CKPT_BUF_INIT;
    (void)state;
    for (size_t n = 0; n < sizeof(spec_example_index); n++) {
        uint8_t *heap = malloc(n ? n : 1);
        int rc;
        assert_non_null(heap);
        memcpy(heap, spec_example_index, n);
        rc = ckpt__table_iterate(heap, n, "cut.index", collect_cb, NULL);
        if (n < 48)
            assert_ckpt_error(rc, CKPT_ECORRUPT,
                              "cut.index: file is too short to be an sstable");
        else
            assert_ckpt_error(rc, CKPT_ECORRUPT,
                              "cut.index: not an sstable (bad magic number)");
        free(heap);
    }
    /* trailing bytes after the footer */
    assert_ckpt_ok(
        ckpt__buf_put(&f, spec_example_index, sizeof(spec_example_index)));
    assert_ckpt_ok(ckpt__buf_put(&f, "\0", 1));
    assert_ckpt_error(table_rc(&f), CKPT_ECORRUPT, "bad magic number");
    ckpt_buf_dispose(&f);
}

/* Decode the footer's four handle numbers; false if they do not decode. */
static bool footer_handles(const uint8_t *img, size_t n, uint64_t h[4],
                           size_t *end)
{
    const uint8_t *fp = img + n - 48;
    const uint8_t *p = fp;
    for (int i = 0; i < 4; i++)
        if (!ckpt__get_varint64(&p, fp + 40, &h[i]))
            return false;
    *end = (size_t)(p - img);
    return true;
}

/* Flip every bit of a table: ECORRUPT, except in the footer padding (not
 * checked, like TensorFlow), where the table must read back intact. A flip
 * of a handle's high bit can also yield an over-long varint of the same
 * value (e.g. 0e 00 -> 8e 00); then too the table must read back intact. */
static void flip_every_bit(const uint8_t *img, size_t n, const entries *want)
{
    uint8_t *copy = malloc(n);
    uint64_t h[4], h2[4];
    size_t end, end2;
    assert_non_null(copy);
    assert_true(footer_handles(img, n, h, &end));
    for (size_t i = 0; i < n; i++) {
        for (int bit = 0; bit < 8; bit++) {
            entries got = {0};
            int rc;
            bool same_meaning;
            memcpy(copy, img, n);
            copy[i] ^= (uint8_t)(1u << bit);
            rc = ckpt__table_iterate(copy, n, "flip.index", collect_cb, &got);
            same_meaning = footer_handles(copy, n, h2, &end2) &&
                           !memcmp(h, h2, sizeof(h)) && i >= n - 48 &&
                           i < n - 8;
            if (same_meaning) {
                assert_ckpt_ok(rc);
                assert_int_equal(got.n, want->n);
            } else if (rc != CKPT_ECORRUPT) {
                fail_msg("flip of byte %zu bit %d gave %d", i, bit, rc);
            }
            entries_free(&got);
        }
    }
    (void)end;
    free(copy);
}

static void test_flip_every_bit(void **state)
{
    entries e = {0};
    ckpt_buf f;
    (void)state;
    example_entries(&e);
    flip_every_bit(spec_example_index, sizeof(spec_example_index), &e);
    entries_free(&e);
    /* a table of several blocks */
    make_many(&e, 30, 7);
    build(&f, &e, 64);
    flip_every_bit((const uint8_t *)f.ptr, f.size, &e);
    ckpt_buf_dispose(&f);
    entries_free(&e);
}

static void test_checksum_and_type(void **state)
{
    ckpt_buf f = CKPT_BUF_INIT;
    uint32_t crc;
    uint8_t t;
    (void)state;
    assert_ckpt_ok(
        ckpt__buf_put(&f, spec_example_index, sizeof(spec_example_index)));
    f.ptr[12] ^= 0x20; /* inside the data block at 0 */
    assert_ckpt_error(table_rc(&f), CKPT_ECORRUPT,
                      "bad.index: block at 0: checksum mismatch");
    f.ptr[12] ^= 0x20;
    f.ptr[50] ^= 1; /* inside the metaindex at 45 */
    assert_ckpt_error(table_rc(&f), CKPT_ECORRUPT,
                      "bad.index: block at 45: checksum mismatch");
    f.ptr[50] ^= 1;
    f.ptr[62] ^= 1; /* inside the index at 58 */
    assert_ckpt_error(table_rc(&f), CKPT_ECORRUPT,
                      "bad.index: block at 58: checksum mismatch");
    f.ptr[62] ^= 1;
    assert_ckpt_ok(table_rc(&f));

    /* type 2 with a correct CRC: bad block type */
    for (t = 2; t < 5; t++) {
        uint8_t tb = t;
        f.ptr[40] = (char)t;
        crc = ckpt__crc32c_extend(ckpt__crc32c(f.ptr, 40), &tb, 1);
        ckpt__encode_fixed32((uint8_t *)f.ptr + 41, ckpt__crc32c_mask(crc));
        assert_ckpt_error(table_rc(&f), CKPT_ECORRUPT,
                          "bad.index: block at 0: bad block type");
    }
    /* type 1 over bytes that are not Snappy */
    {
        uint8_t tb = 1;
        f.ptr[40] = 1;
        crc = ckpt__crc32c_extend(ckpt__crc32c(f.ptr, 40), &tb, 1);
        ckpt__encode_fixed32((uint8_t *)f.ptr + 41, ckpt__crc32c_mask(crc));
        assert_ckpt_error(table_rc(&f), CKPT_ECORRUPT,
                          "bad.index: block at 0: corrupt snappy block");
    }
    ckpt_buf_dispose(&f);
}

static void test_footer_errors(void **state)
{
    ckpt_buf f = CKPT_BUF_INIT;
    (void)state;
    /* unterminated handle varints */
    assert_ckpt_ok(
        ckpt__buf_put(&f, spec_example_index, sizeof(spec_example_index)));
    memset(f.ptr + 77, 0xff, 40);
    assert_ckpt_error(table_rc(&f), CKPT_ECORRUPT,
                      "bad.index: footer: bad block handle");
    /* index handle past the footer */
    ckpt__buf_clear(&f);
    assert_ckpt_ok(ckpt__buf_put(&f, spec_example_index, 77));
    put_footer(&f, 45, 8, 58, 15);
    assert_ckpt_error(table_rc(&f), CKPT_ECORRUPT, "truncated block read");
    /* overflowing offset + size */
    ckpt__buf_clear(&f);
    assert_ckpt_ok(ckpt__buf_put(&f, spec_example_index, 77));
    put_footer(&f, 45, 8, 58, UINT64_MAX - 10);
    assert_ckpt_error(table_rc(&f), CKPT_ECORRUPT,
                      "bad.index: block at 58: truncated block read");
    ckpt__buf_clear(&f);
    assert_ckpt_ok(ckpt__buf_put(&f, spec_example_index, 77));
    put_footer(&f, UINT64_MAX, 8, 58, 14);
    assert_ckpt_error(table_rc(&f), CKPT_ECORRUPT, "truncated block read");
    ckpt_buf_dispose(&f);
}

static void test_hand_built_bad_tables(void **state)
{
    ckpt_buf f = CKPT_BUF_INIT;
    ckpt_buf blocks[2] = {CKPT_BUF_INIT, CKPT_BUF_INIT};
    (void)state;

    /* sanity: a good hand-built table reads */
    {
        const char *k[] = {"", "a", "b"}, *v[] = {"h", "1", "2"};
        const char *seps[] = {"c"};
        raw_block(&blocks[0], k, v, 3);
        assemble(&f, blocks, seps, 1, 0);
        assert_ckpt_ok(table_rc(&f));
    }
    /* keys out of order inside a block */
    {
        const char *k[] = {"b", "a"}, *v[] = {"1", "2"};
        const char *seps[] = {"c"};
        raw_block(&blocks[0], k, v, 2);
        assemble(&f, blocks, seps, 1, 0);
        assert_ckpt_error(
            table_rc(&f), CKPT_ECORRUPT,
            "bad.index: keys out of order in the data block at 0, entry 1");
    }
    /* duplicate key */
    {
        const char *k[] = {"a", "a"}, *v[] = {"1", "2"};
        const char *seps[] = {"c"};
        raw_block(&blocks[0], k, v, 2);
        assemble(&f, blocks, seps, 1, 0);
        assert_ckpt_error(table_rc(&f), CKPT_ECORRUPT, "keys out of order");
    }
    /* keys out of order across blocks */
    {
        const char *k0[] = {"a", "c"}, *v0[] = {"1", "2"};
        const char *k1[] = {"b"}, *v1[] = {"3"};
        const char *seps[] = {"c", "d"};
        raw_block(&blocks[0], k0, v0, 2);
        raw_block(&blocks[1], k1, v1, 1);
        assemble(&f, blocks, seps, 2, 0);
        assert_ckpt_error(table_rc(&f), CKPT_ECORRUPT,
                          "keys out of order in the data block at 27, entry 0");
    }
    /* a key beyond its block's separator */
    {
        const char *k[] = {"a", "c"}, *v[] = {"1", "2"};
        const char *seps[] = {"b"};
        raw_block(&blocks[0], k, v, 2);
        assemble(&f, blocks, seps, 1, 0);
        assert_ckpt_error(
            table_rc(&f), CKPT_ECORRUPT,
            "key outside its index range in the data block at 0, entry "
            "1");
    }
    /* a key not above the previous separator */
    {
        const char *k0[] = {"a"}, *v0[] = {"1"};
        const char *k1[] = {"bb"}, *v1[] = {"3"};
        const char *seps[] = {"b", "c"};
        raw_block(&blocks[0], k0, v0, 1);
        raw_block(&blocks[1], k1, v1, 1);
        assemble(&f, blocks, seps, 2, 0);
        assert_ckpt_ok(table_rc(&f));
        seps[0] = "bc";
        assemble(&f, blocks, seps, 2, 0);
        assert_ckpt_error(table_rc(&f), CKPT_ECORRUPT,
                          "key outside its index range");
    }
    /* separators out of order */
    {
        const char *k0[] = {"a"}, *v0[] = {"1"};
        const char *k1[] = {"b"}, *v1[] = {"3"};
        const char *seps[] = {"d", "c"};
        raw_block(&blocks[0], k0, v0, 1);
        raw_block(&blocks[1], k1, v1, 1);
        assemble(&f, blocks, seps, 2, 0);
        assert_ckpt_error(table_rc(&f), CKPT_ECORRUPT,
                          "the separator of the data block at");
    }
    /* restart count too big in a data block (CRC valid) */
    {
        const char *k[] = {"a"}, *v[] = {"1"};
        const char *seps[] = {"b"};
        raw_block(&blocks[0], k, v, 1);
        ckpt__encode_fixed32((uint8_t *)blocks[0].ptr + blocks[0].size - 4,
                             1000);
        assemble(&f, blocks, seps, 1, 0);
        assert_ckpt_error(table_rc(&f), CKPT_ECORRUPT,
                          "bad.index: block at 0: bad block contents (restart "
                          "count 1000 too large");
    }
    /* an index value that is not exactly a handle */
    {
        ckpt_buf idx = CKPT_BUF_INIT, meta = CKPT_BUF_INIT;
        const char *k[] = {"a"}, *v[] = {"1"};
        const char *ik[] = {"b"}, *iv[] = {"\x01\x02\x03"};
        uint64_t off, mo, io;
        raw_block(&blocks[0], k, v, 1);
        ckpt__buf_clear(&f);
        put_block(&f, blocks[0].ptr, blocks[0].size, 0, &off);
        raw_block(&meta, NULL, NULL, 0);
        put_block(&f, meta.ptr, meta.size, 0, &mo);
        raw_block(&idx, ik, iv, 1);
        put_block(&f, idx.ptr, idx.size, 0, &io);
        put_footer(&f, mo, meta.size, io, idx.size);
        assert_ckpt_error(table_rc(&f), CKPT_ECORRUPT,
                          "bad.index: index block: bad block handle");
        ckpt_buf_dispose(&idx);
        ckpt_buf_dispose(&meta);
    }
    ckpt_buf_dispose(&blocks[0]);
    ckpt_buf_dispose(&blocks[1]);
    ckpt_buf_dispose(&f);
}

/* Our decoder against Debian's libsnappy: inputs of many shapes (random,
 * runs, repeats near and far, every size around the element boundaries)
 * compressed by the reference compressor decode to the same bytes. */
static void test_snappy_matches_reference(void **state)
{
    ckpt_buf out = CKPT_BUF_INIT;
    uint32_t seed = 12345;
    (void)state;
    for (int round = 0; round < 200; round++) {
        size_t n = round < 100 ? (size_t)round * 7 : (size_t)round * 997;
        char *raw = malloc(n ? n : 1);
        size_t clen = snappy_max_compressed_length(n);
        char *comp = malloc(clen);
        assert_non_null(raw);
        assert_non_null(comp);
        for (size_t i = 0; i < n; i++) {
            seed = seed * 1103515245u + 12345u;
            switch (round % 4) {
            case 0: /* incompressible: long literals */
                raw[i] = (char)(seed >> 16);
                break;
            case 1: /* runs: overlapping copies */
                raw[i] = (char)('a' + (i / 50) % 3);
                break;
            case 2: /* a short alphabet: copies near and far */
                raw[i] = (char)('a' + (seed >> 16) % 4);
                break;
            default: /* a block repeated 3 KiB back: 2-byte offsets */
                raw[i] = i >= 3072 ? raw[i - 3072] : (char)(seed >> 16);
                break;
            }
        }
        assert_int_equal(snappy_compress(raw, n, comp, &clen), SNAPPY_OK);
        assert_ckpt_ok(ckpt__snappy_uncompress(&out, (const uint8_t *)comp,
                                               clen, n, "blk"));
        assert_int_equal(out.size, n);
        if (n)
            assert_memory_equal(out.ptr, raw, n);
        free(raw);
        free(comp);
    }
    ckpt_buf_dispose(&out);
}

/* Hand-built streams: the element kinds the reference compressor never
 * emits for small inputs (4-byte offsets, 3- and 4-byte literal lengths),
 * and every way a stream can lie. */
static void test_snappy_elements(void **state)
{
    ckpt_buf in = CKPT_BUF_INIT;
    ckpt_buf out = CKPT_BUF_INIT;
    uint8_t b[16];
    (void)state;
    /* 70000 literal bytes (length in 3 bytes), then a 4-byte-offset copy
     * of 5 bytes from 70000 back, then an overlapping 2-byte-offset copy
     * of 64 bytes from 1 back */
    assert_ckpt_ok(ckpt__buf_put(&in, "\xb5\xa3\x04", 3)); /* 70069 */
    b[0] = 62 << 2;
    b[1] = (69999) & 0xff;
    b[2] = (69999 >> 8) & 0xff;
    b[3] = (69999 >> 16) & 0xff;
    assert_ckpt_ok(ckpt__buf_put(&in, b, 4));
    for (int i = 0; i < 70000; i++) {
        char c = (char)('A' + i % 26);
        assert_ckpt_ok(ckpt__buf_put(&in, &c, 1));
    }
    b[0] = (4 << 2) | 3;
    b[1] = 0x70, b[2] = 0x11, b[3] = 0x01, b[4] = 0x00; /* 70000 */
    assert_ckpt_ok(ckpt__buf_put(&in, b, 5));
    b[0] = (63 << 2) | 2, b[1] = 1, b[2] = 0;
    assert_ckpt_ok(ckpt__buf_put(&in, b, 3));
    assert_ckpt_ok(ckpt__snappy_uncompress(&out, (const uint8_t *)in.ptr,
                                           in.size, 1 << 20, "blk"));
    assert_int_equal(out.size, 70069);
    assert_memory_equal(out.ptr + 70000, "ABCDE", 5);
    for (int i = 70005; i < 70069; i++)
        assert_int_equal(out.ptr[i], 'E');

    /* a literal whose 4-byte length says 2^32 - 1 + 1 bytes */
    assert_ckpt_error(
        ckpt__snappy_uncompress(
            &out, (const uint8_t *)"\x05\xfc\xff\xff\xff\xff", 6, 100, "blk"),
        CKPT_ECORRUPT, "blk: corrupt snappy block");
    /* a literal longer than the input left */
    assert_ckpt_error(ckpt__snappy_uncompress(&out,
                                              (const uint8_t *)"\x05\x10"
                                                               "ab",
                                              4, 100, "blk"),
                      CKPT_ECORRUPT, "corrupt snappy block");
    /* a literal longer than the declared output */
    assert_ckpt_error(ckpt__snappy_uncompress(&out,
                                              (const uint8_t *)"\x01\x04"
                                                               "ab",
                                              4, 100, "blk"),
                      CKPT_ECORRUPT, "corrupt snappy block");
    /* cut inside each kind's extra bytes */
    assert_ckpt_error(ckpt__snappy_uncompress(&out, (const uint8_t *)"\x05\xf0",
                                              2, 100, "blk"),
                      CKPT_ECORRUPT, "corrupt snappy block");
    assert_ckpt_error(ckpt__snappy_uncompress(&out,
                                              (const uint8_t *)"\x05\x00"
                                                               "a\x01",
                                              4, 100, "blk"),
                      CKPT_ECORRUPT, "corrupt snappy block");
    assert_ckpt_error(ckpt__snappy_uncompress(&out,
                                              (const uint8_t *)"\x05\x00"
                                                               "a\x02\x01",
                                              5, 100, "blk"),
                      CKPT_ECORRUPT, "corrupt snappy block");
    assert_ckpt_error(
        ckpt__snappy_uncompress(&out,
                                (const uint8_t *)"\x05\x00"
                                                 "a\x03\x01\x00\x00",
                                7, 100, "blk"),
        CKPT_ECORRUPT, "corrupt snappy block");
    /* a copy of offset 0, and one past the output's end */
    assert_ckpt_error(ckpt__snappy_uncompress(&out,
                                              (const uint8_t *)"\x05\x00"
                                                               "a\x01\x00",
                                              5, 100, "blk"),
                      CKPT_ECORRUPT, "corrupt snappy block");
    assert_ckpt_error(ckpt__snappy_uncompress(&out,
                                              (const uint8_t *)"\x04\x00"
                                                               "a\x01\x01",
                                              5, 100, "blk"),
                      CKPT_ECORRUPT, "corrupt snappy block");
    /* elements that stop short of the declared length */
    assert_ckpt_error(ckpt__snappy_uncompress(&out,
                                              (const uint8_t *)"\x06\x00"
                                                               "a\x01\x01",
                                              5, 100, "blk"),
                      CKPT_ECORRUPT, "corrupt snappy block");
    /* the same stream, exactly right: 1 literal + 4 copied */
    assert_ckpt_ok(ckpt__snappy_uncompress(&out,
                                           (const uint8_t *)"\x05\x00"
                                                            "a\x01\x01",
                                           5, 100, "blk"));
    assert_int_equal(out.size, 5);
    assert_string_equal(out.ptr, "aaaaa");
    /* a length header of 6 bytes, and an empty block */
    assert_ckpt_error(
        ckpt__snappy_uncompress(
            &out, (const uint8_t *)"\x80\x80\x80\x80\x80\x00", 6, 100, "blk"),
        CKPT_ECORRUPT, "bad length header");
    assert_ckpt_error(
        ckpt__snappy_uncompress(&out, (const uint8_t *)"", 0, 100, "blk"),
        CKPT_ECORRUPT, "bad length header");
    assert_ckpt_ok(
        ckpt__snappy_uncompress(&out, (const uint8_t *)"\x00", 1, 100, "blk"));
    assert_int_equal(out.size, 0);
    ckpt_buf_dispose(&in);
    ckpt_buf_dispose(&out);
}

/* ---- Snappy
 * ------------------------------------------------------------------------ */

static void test_snappy_blocks(void **state)
{
    ckpt_buf f = CKPT_BUF_INIT;
    ckpt_buf raw = CKPT_BUF_INIT;
    ckpt_buf comp = CKPT_BUF_INIT;
    ckpt_buf out = CKPT_BUF_INIT;
    entries e = {0}, got = {0};
    const char *seps[] = {"l"};
    size_t clen;
    (void)state;
    /* a compressible block built by our block builder */
    {
        ckpt__block_builder b;
        char key[16];
        ckpt__block_builder_init(&b, 16);
        for (int i = 0; i < 50; i++) {
            snprintf(key, sizeof(key), "k%03d", i);
            assert_ckpt_ok(ckpt__block_builder_add(
                &b, key, strlen(key), "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 32));
            entries_add(&e, key, strlen(key),
                        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 32);
        }
        assert_ckpt_ok(ckpt__block_builder_finish(&b));
        assert_ckpt_ok(ckpt__buf_put(&raw, b.out.ptr, b.out.size));
        ckpt__block_builder_dispose(&b);
    }
    clen = snappy_max_compressed_length(raw.size);
    assert_ckpt_ok(ckpt__buf_grow(&comp, clen));
    assert_int_equal(snappy_compress(raw.ptr, raw.size, comp.ptr, &clen),
                     SNAPPY_OK);
    comp.size = clen;
    assert_true(comp.size < raw.size / 2);
    assemble(&f, &comp, seps, 1, 1);
    assert_ckpt_ok(ckpt__table_iterate((const uint8_t *)f.ptr, f.size, "s",
                                       collect_cb, &got));
    assert_int_equal(got.n, 50);
    assert_string_equal(got.items[49].key.ptr, "k049");
    entries_free(&got);

    /* the decompressor alone: exact output, caps and corruption */
    assert_ckpt_ok(ckpt__snappy_uncompress(&out, (const uint8_t *)comp.ptr,
                                           comp.size, raw.size, "blk"));
    assert_int_equal(out.size, raw.size);
    assert_memory_equal(out.ptr, raw.ptr, raw.size);
    assert_ckpt_error(ckpt__snappy_uncompress(&out, (const uint8_t *)comp.ptr,
                                              comp.size, raw.size - 1, "blk"),
                      CKPT_ECORRUPT, "blk: corrupt snappy block (declares");
    /* declared length far beyond the cap: refused before allocating */
    assert_ckpt_error(
        ckpt__snappy_uncompress(&out, (const uint8_t *)"\xff\xff\xff\xff\x0f",
                                5, 1 << 20, "blk"),
        CKPT_ECORRUPT, "declares 4294967295 bytes");
    assert_ckpt_error(ckpt__snappy_uncompress(&out, (const uint8_t *)"\xff\xff",
                                              2, 100, "blk"),
                      CKPT_ECORRUPT, "bad length header");
    /* truncated stream */
    assert_ckpt_error(ckpt__snappy_uncompress(&out, (const uint8_t *)comp.ptr,
                                              comp.size - 3, raw.size, "blk"),
                      CKPT_ECORRUPT, "blk: corrupt snappy block");
    /* copy before the start of the output: length 4, copy-1 offset 9 */
    assert_ckpt_error(ckpt__snappy_uncompress(
                          &out, (const uint8_t *)"\x04\x01\x09", 3, 100, "blk"),
                      CKPT_ECORRUPT, "corrupt snappy block");

    /* in a table: a declared length above 32x the stored size is refused */
    ckpt__buf_clear(&comp);
    assert_ckpt_ok(ckpt__buf_put(&comp, "\x80\x08\x00", 3)); /* 1024 bytes */
    assemble(&f, &comp, seps, 1, 1);
    assert_ckpt_error(table_rc(&f), CKPT_ECORRUPT,
                      "bad.index: block at 0: corrupt snappy block (declares "
                      "1024 bytes, more than the limit of 96)");

    ckpt_buf_dispose(&f);
    ckpt_buf_dispose(&raw);
    ckpt_buf_dispose(&comp);
    ckpt_buf_dispose(&out);
    entries_free(&e);
}

static int stop_cb(const uint8_t *key, size_t key_len, const uint8_t *value,
                   size_t value_len, void *payload)
{
    (void)key;
    (void)value;
    (void)value_len;
    (*(int *)payload)++;
    return key_len == 1 ? 7 : 0;
}

static void test_callback_stop(void **state)
{
    int calls = 0;
    (void)state;
    assert_int_equal(ckpt__table_iterate(spec_example_index,
                                         sizeof(spec_example_index), "t",
                                         stop_cb, &calls),
                     7);
    assert_int_equal(calls, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_example_file_bytes),
        cmocka_unit_test(test_empty_table),
        cmocka_unit_test(test_separators),
        cmocka_unit_test(test_many_keys_multiple_blocks),
        cmocka_unit_test(test_small_block_size_many_blocks),
        cmocka_unit_test(test_oversize_entry_rule),
        cmocka_unit_test(test_binary_keys),
        cmocka_unit_test(test_builder_write_error_sticks),
        cmocka_unit_test(test_tf_vectors),
        cmocka_unit_test(test_truncated_and_magic),
        cmocka_unit_test(test_flip_every_bit),
        cmocka_unit_test(test_checksum_and_type),
        cmocka_unit_test(test_footer_errors),
        cmocka_unit_test(test_hand_built_bad_tables),
        cmocka_unit_test(test_snappy_blocks),
        cmocka_unit_test(test_snappy_matches_reference),
        cmocka_unit_test(test_snappy_elements),
        cmocka_unit_test(test_callback_stop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
