/* tests/format/test_bundle_reader_memory.c - the bytes an open bundle
 * reader keeps per index entry (docs/scaling.md, "Restore at scale"),
 * counted through the allocator hook (tests/support/count_alloc.h), never
 * timed. A bundle of ENTRIES scalar-like tensors, 20-byte names and shape
 * [1, 1], as a checkpoint of many ranks holds them:
 *   - what open keeps, and its peak, per entry;
 *   - what asking for one entry by name adds (one entry, not all);
 *   - that filling every entry into the caller's memory adds nothing;
 *   - what handing out every entry adds (each pointer stays valid until
 *     the reader is freed, so each entry then exists in the public form);
 *   - that handing one out without memory fails cleanly;
 *   - what a hostile index whose keys share long prefixes makes open keep
 *     and need, against the index's size (README, resource limits).
 * CKPT_TEST_ENTRIES (environment) replaces ENTRIES, for measuring 10^5 or
 * 10^6 entries by hand; the bounds are per entry either way. */
#include "format/bundle_test_helpers.h"
#include "support/count_alloc.h"
#include "test_util.h"
#include "util/coding.h"
#include "util/crc32c.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ENTRIES 10000
/* Bytes per entry an open reader may keep. Every entry was a public
 * ckpt_tensor_entry (328 bytes with its CKPT_MAX_RANK shape) in an array
 * grown by doubling, its name copied: 365 to 558 here. Kept compactly (a
 * 64-byte record, the name and its NUL, 8 bytes a dimension): 101 to 106
 * (the last block of names is up to 64 KiB). */
#define KEPT_PER_ENTRY_LIMIT 120
/* ... and open's peak per entry: 527 to 876 before, 169 to 243 now (the
 * arrays grown by doubling, then trimmed; the names in blocks). */
#define PEAK_PER_ENTRY_LIMIT 300
/* What one lookup by name may add, however many entries: the public
 * entry it hands out (the pool's first chunk, 16 entries: 5376 bytes). */
#define ONE_ENTRY_LIMIT 8192

static void test_bytes_per_entry(void **state)
{
    char *dir = test_make_temp_dir();
    char *prefix = test_path(dir, "many");
    size_t n = test_entries_env(0, ENTRIES);
    ckpt_bundle_reader *r = NULL;
    const ckpt_tensor_entry *e = NULL;
    long long before, kept, peak, one, all, filled;
    char name[48]; /* room for any size_t */
    float v = -1;
    (void)state;
    test_write_many_entries(prefix, n);

    before = count_alloc_live();
    count_alloc_reset_peak();
    assert_ckpt_ok(ckpt_bundle_reader_open(&r, prefix, NULL));
    kept = count_alloc_live() - before;
    peak = count_alloc_peak() - before;
    assert_int_equal(ckpt_bundle_reader_count(r), n);

    /* one entry by name, its values read */
    test_many_entry_name(name, sizeof(name), n / 2);
    before = count_alloc_live();
    assert_ckpt_ok(ckpt_bundle_reader_find(&e, r, name));
    one = count_alloc_live() - before;
    assert_int_equal(e->name_len, 20);
    assert_string_equal(e->name, name);
    assert_int_equal(e->dtype, CKPT_DT_FLOAT);
    assert_int_equal(e->shape.rank, 2);
    assert_int_equal(e->shape.dims[0], 1);
    assert_int_equal(e->shape.dims[1], 1);
    assert_int_equal(e->size, 4);
    assert_ckpt_ok(ckpt_bundle_reader_read(r, name, &v, sizeof(v)));
    assert_true(v == (float)(n / 2));

    /* every entry filled into the caller's memory: nothing allocated */
    before = count_alloc_live();
    count_alloc_reset_peak();
    for (size_t i = 0; i < n; i++) {
        ckpt_tensor_entry x;
        assert_ckpt_ok(ckpt_bundle_reader_entry_fill(&x, r, i));
        assert_int_equal(x.name_len, 20);
        assert_int_equal(x.size, 4);
    }
    filled = count_alloc_peak() - before;
    assert_int_equal(filled, 0);

    /* every entry handed out; each pointer stays valid and the same */
    before = count_alloc_live();
    for (size_t i = 0; i < n; i++) {
        const ckpt_tensor_entry *x = ckpt_bundle_reader_entry(r, i);
        assert_non_null(x);
        if (i == n / 2)
            assert_ptr_equal(x, e);
    }
    all = count_alloc_live() - before;
    test_many_entry_name(name, sizeof(name), n - 1);
    assert_string_equal(ckpt_bundle_reader_entry(r, n - 1)->name, name);
    assert_ptr_equal(ckpt_bundle_reader_entry(r, n / 2), e);
    /* an entry of the pool's last chunk is known as the reader's own */
    assert_ckpt_ok(ckpt_bundle_reader_read_entry(
        r, ckpt_bundle_reader_entry(r, n - 1), &v, sizeof(v)));
    assert_true(v == (float)(n - 1));

    print_message("%zu entries: open keeps %.1f bytes per entry (peak "
                  "%.1f), one found entry adds %lld bytes, handing out "
                  "every entry %.1f more per entry\n",
                  n, (double)kept / (double)n, (double)peak / (double)n, one,
                  (double)all / (double)n);
    if (kept > (long long)KEPT_PER_ENTRY_LIMIT * (long long)n)
        fail_msg("open keeps %.1f bytes per entry, more than %d",
                 (double)kept / (double)n, KEPT_PER_ENTRY_LIMIT);
    if (peak > (long long)PEAK_PER_ENTRY_LIMIT * (long long)n)
        fail_msg("open's peak is %.1f bytes per entry, more than %d",
                 (double)peak / (double)n, PEAK_PER_ENTRY_LIMIT);
    if (one > ONE_ENTRY_LIMIT)
        fail_msg("one lookup adds %lld bytes, more than %d", one,
                 ONE_ENTRY_LIMIT);
    ckpt_bundle_reader_free(r);
    free(prefix);
    test_remove_tree(dir);
}

/* What a read by name may keep once its call returns, however many
 * tensors were read: the data file it opened and its name (each read
 * used to leave its tensor's public entry behind, 336 bytes or more a
 * tensor, until the reader was freed). */
#define READS_KEEP_LIMIT 4096
#define READ_ENTRIES 2000

/* Reading every tensor by name (ckpt_bundle_reader_read, read_strings,
 * read_many) keeps nothing per tensor: the library's own lookups fill an
 * entry of their own instead of handing out a public one. */
static void test_reads_by_name_keep_nothing(void **state)
{
    char *dir = test_make_temp_dir();
    char *prefix = test_path(dir, "reads");
    size_t n = READ_ENTRIES;
    ckpt_bundle_reader *r = NULL;
    ckpt_read_request *reqs = calloc(n, sizeof(*reqs));
    float *got = calloc(n, sizeof(*got));
    char(*names)[48] = calloc(n, sizeof(*names));
    long long before, kept;
    (void)state;
    assert_non_null(reqs);
    assert_non_null(got);
    assert_non_null(names);
    test_write_many_entries(prefix, n);
    assert_ckpt_ok(ckpt_bundle_reader_open(&r, prefix, NULL));
    before = count_alloc_live();
    for (size_t i = 0; i < n; i++) {
        ckpt_string_array strs;
        float v = -1;
        test_many_entry_name(names[i], sizeof(names[i]), i);
        assert_ckpt_ok(ckpt_bundle_reader_read(r, names[i], &v, sizeof(v)));
        assert_true(v == (float)i);
        assert_ckpt_error(ckpt_bundle_reader_read_strings(r, names[i], &strs),
                          CKPT_EINVAL, "not string");
        reqs[i].name = names[i];
        reqs[i].dst = &got[i];
        reqs[i].dst_size = sizeof(got[i]);
    }
    assert_ckpt_ok(ckpt_bundle_reader_read_many(r, reqs, n));
    for (size_t i = 0; i < n; i++)
        assert_true(got[i] == (float)i);
    kept = count_alloc_live() - before;
    print_message("reading %zu tensors by name kept %lld bytes\n", n, kept);
    if (kept > READS_KEEP_LIMIT)
        fail_msg("reading %zu tensors by name kept %lld bytes, more than %d", n,
                 kept, READS_KEEP_LIMIT);
    ckpt_bundle_reader_free(r);
    free(reqs);
    free(got);
    free(names);
    free(prefix);
    test_remove_tree(dir);
}

/* Handing an entry out for the first time may allocate (the public
 * entries come in chunks of 16, 32, ...; the 17th needs the second):
 * without memory, ckpt_bundle_reader_entry gives NULL and find
 * CKPT_ENOMEM, both naming the index and the entry; an entry handed out
 * before is still given, and once memory is back every entry is. */
static void test_entry_without_memory(void **state)
{
    char *dir = test_make_temp_dir();
    char *prefix = test_path(dir, "few");
    ckpt_bundle_reader *r = NULL;
    const ckpt_tensor_entry *first = NULL, *e = NULL;
    (void)state;
    test_write_many_entries(prefix, 20);
    assert_ckpt_ok(ckpt_bundle_reader_open(&r, prefix, NULL));
    first = ckpt_bundle_reader_entry(r, 0);
    assert_non_null(first);
    for (size_t i = 1; i < 16; i++)
        assert_non_null(ckpt_bundle_reader_entry(r, i));
    count_alloc_fail(1);
    ckpt_error_clear();
    assert_null(ckpt_bundle_reader_entry(r, 16));
    assert_int_equal(ckpt_error_last()->code, CKPT_ENOMEM);
    assert_non_null(strstr(ckpt_error_last()->message,
                           "few.index: entry 16: out of memory"));
    assert_ckpt_error(ckpt_bundle_reader_find(&e, r, "layer_0000017/kernel"),
                      CKPT_ENOMEM,
                      "few.index: tensor 'layer_0000017/kernel': out of "
                      "memory");
    assert_null(e);
    assert_ptr_equal(ckpt_bundle_reader_entry(r, 0), first);
    assert_ckpt_error(ckpt_bundle_reader_find(&e, r, "layer_0000099/kernel"),
                      CKPT_ENOTFOUND, "no tensor named 'layer_0000099/kernel'");
    count_alloc_fail(0);
    assert_ckpt_ok(ckpt_bundle_reader_find(&e, r, "layer_0000017/kernel"));
    assert_ptr_equal(ckpt_bundle_reader_entry(r, 17), e);
    assert_string_equal(ckpt_bundle_reader_entry(r, 16)->name,
                        "layer_0000016/kernel");
    assert_ptr_equal(ckpt_bundle_reader_entry(r, 0), first);
    ckpt_bundle_reader_free(r);
    free(prefix);
    test_remove_tree(dir);
}

/* ckpt_bundle_reader_entry_fill allocates nothing (it works with every
 * allocation failing), hands out no entry, and its entry is accepted as
 * the reader's own by each call taking one (found by name). */
static void test_entry_fill(void **state)
{
    char *dir = test_make_temp_dir();
    char *prefix = test_path(dir, "few");
    ckpt_bundle_reader *r = NULL, *other = NULL;
    ckpt_record_stream *st = NULL;
    ckpt_tensor_entry e;
    ckpt_buf rec = CKPT_BUF_INIT;
    const void *piece;
    uint64_t bytes = 0;
    size_t got;
    float v = -1;
    (void)state;
    test_write_many_entries(prefix, 20);
    assert_ckpt_ok(ckpt_bundle_reader_open(&r, prefix, NULL));
    count_alloc_fail(1);
    for (size_t i = 0; i < 20; i++) {
        char name[48];
        test_many_entry_name(name, sizeof(name), i);
        assert_ckpt_ok(ckpt_bundle_reader_entry_fill(&e, r, i));
        assert_string_equal(e.name, name);
        assert_int_equal(e.name_len, 20);
        assert_int_equal(e.dtype, CKPT_DT_FLOAT);
        assert_int_equal(e.shape.rank, 2);
        assert_int_equal(e.shape.dims[0], 1);
        assert_int_equal(e.shape.dims[1], 1);
        assert_int_equal(e.shard_id, 0);
        assert_int_equal(e.offset, 4 * (int64_t)i);
        assert_int_equal(e.size, 4);
        assert_int_equal(e.num_slices, 0);
        assert_int_equal(e.is_slice_key, 0);
    }
    count_alloc_fail(0);
    /* a copy: the caller's memory, not a handed-out entry's address */
    assert_ptr_not_equal(ckpt_bundle_reader_entry(r, 19), &e);
    assert_ckpt_ok(ckpt_bundle_reader_entry_fill(&e, r, 7));
    assert_ckpt_ok(ckpt_bundle_reader_read_entry(r, &e, &v, sizeof(v)));
    assert_true(v == 7.0f);
    assert_ckpt_ok(ckpt_bundle_reader_data_size(r, &e, &bytes));
    assert_int_equal(bytes, 4);
    assert_ckpt_ok(ckpt_bundle_reader_check(r, &e));
    assert_ckpt_ok(ckpt_bundle_reader_read_record(r, &e, &rec));
    assert_int_equal(rec.size, 4);
    assert_ckpt_ok(ckpt_record_stream_open(&st, r, &e, 0));
    assert_ckpt_ok(ckpt_record_stream_next(st, &piece, &got));
    assert_int_equal(got, 4);
    assert_true(*(const float *)piece == 7.0f);
    ckpt_record_stream_free(st);
    ckpt_buf_dispose(&rec);
    /* a filled entry changed, or one of another reader, is not r's */
    assert_ckpt_ok(ckpt_bundle_reader_entry_fill(&e, r, 19));
    e.name += e.name_len + 1; /* past the last key, in its block's free end:
                                 bytes never written, which the search read
                                 (valgrind: test_..._memory_memcheck) */
    assert_ckpt_error(ckpt_bundle_reader_read_entry(r, &e, &v, sizeof(v)),
                      CKPT_EINVAL,
                      "ckpt_bundle_reader_read_entry: the entry is not one of");
    assert_non_null(strstr(ckpt_error_last()->message, "few.index"));
    assert_ckpt_ok(ckpt_bundle_reader_entry_fill(&e, r, 7));
    e.offset = 0;
    assert_ckpt_error(ckpt_bundle_reader_read_entry(r, &e, &v, sizeof(v)),
                      CKPT_EINVAL,
                      "ckpt_bundle_reader_read_entry: the entry is not one of");
    assert_ckpt_ok(ckpt_bundle_reader_open(&other, prefix, NULL));
    assert_ckpt_ok(ckpt_bundle_reader_entry_fill(&e, other, 7));
    assert_ckpt_error(ckpt_bundle_reader_check(r, &e), CKPT_EINVAL,
                      "ckpt_bundle_reader_check: the entry is not one of");
    assert_ckpt_ok(ckpt_bundle_reader_check(other, &e));
    ckpt_bundle_reader_free(other);
    /* the index past the end, and NULL arguments */
    memset(&e, 0xff, sizeof(e));
    assert_ckpt_error(ckpt_bundle_reader_entry_fill(&e, r, 20), CKPT_EINVAL,
                      "ckpt_bundle_reader_entry_fill: ");
    assert_ckpt_error(ckpt_bundle_reader_entry_fill(&e, r, 20), CKPT_EINVAL,
                      "few.index: entry 20 of 20");
    assert_null(e.name);
    assert_int_equal(e.size, 0);
    assert_ckpt_error(ckpt_bundle_reader_entry_fill(NULL, r, 0), CKPT_EINVAL,
                      "ckpt_bundle_reader_entry_fill: out is NULL");
    assert_ckpt_error(ckpt_bundle_reader_entry_fill(&e, NULL, 0), CKPT_EINVAL,
                      "ckpt_bundle_reader_entry_fill: r is NULL");
    ckpt_bundle_reader_free(r);
    free(prefix);
    test_remove_tree(dir);
}

/* A hostile index of SHARED_KEYS entries of empty float tensors in one
 * data block whose keys are SHARED_KEY_LEN bytes, each sharing all but its
 * last 2 with the key before: 12 bytes of block per entry, the keys adding
 * up to about 63 times the block (block.c refuses more than 64), a little
 * past 4 MiB. */
#define SHARED_KEYS 5600
#define SHARED_KEY_LEN 760

static void put_shared_key_entry(ckpt_buf *block, size_t shared,
                                 const void *delta, size_t n,
                                 const ckpt_buf *value)
{
    assert_ckpt_ok(ckpt__put_varint32(block, (uint32_t)shared));
    assert_ckpt_ok(ckpt__put_varint32(block, (uint32_t)n));
    assert_ckpt_ok(ckpt__put_varint32(block, (uint32_t)value->size));
    assert_ckpt_ok(ckpt__buf_put(block, delta, n));
    assert_ckpt_ok(ckpt__buf_put(block, value->ptr, value->size));
}

static size_t write_shared_key_index(const char *path)
{
    ckpt_buf header = CKPT_BUF_INIT, value = CKPT_BUF_INIT;
    ckpt_buf block = CKPT_BUF_INIT, file = CKPT_BUF_INIT;
    ckpt_buf meta_handle = CKPT_BUF_INIT, data_handle = CKPT_BUF_INIT;
    ckpt_buf index_block = CKPT_BUF_INIT, index_handle = CKPT_BUF_INIT;
    ckpt__bundle_entry e =
        bt_make_entry(CKPT_DT_FLOAT, 0, 0, 0, 0, ckpt__crc32c_mask(0));
    char key[SHARED_KEY_LEN];
    uint32_t restart;
    bt_kv sep;
    size_t n;
    bt_header(&header, 1, 0);
    bt_entry(&value, &e);
    memset(key, 'k', sizeof(key));
    put_shared_key_entry(&block, 0, "", 0, &header);
    restart = (uint32_t)block.size; /* the first key stored whole */
    key[SHARED_KEY_LEN - 2] = 0;
    key[SHARED_KEY_LEN - 1] = 0;
    put_shared_key_entry(&block, 0, key, sizeof(key), &value);
    for (size_t i = 1; i < SHARED_KEYS; i++) {
        key[SHARED_KEY_LEN - 2] = (char)(i >> 8);
        key[SHARED_KEY_LEN - 1] = (char)(i & 0xff);
        put_shared_key_entry(&block, SHARED_KEY_LEN - 2,
                             key + SHARED_KEY_LEN - 2, 2, &value);
    }
    assert_ckpt_ok(ckpt__put_fixed32(&block, 0));
    assert_ckpt_ok(ckpt__put_fixed32(&block, restart));
    assert_ckpt_ok(ckpt__put_fixed32(&block, 2));
    bt_put_block(&file, block.ptr, block.size, 0, &data_handle);
    ckpt__buf_clear(&block);
    bt_block(&block, NULL, 0);
    bt_put_block(&file, block.ptr, block.size, 0, &meta_handle);
    sep = (bt_kv){"l", 1, data_handle.ptr, data_handle.size};
    bt_block(&index_block, &sep, 1);
    bt_put_block(&file, index_block.ptr, index_block.size, 0, &index_handle);
    bt_put_footer(&file, &meta_handle, &index_handle);
    test_write_file(path, file.ptr, file.size);
    n = file.size;
    ckpt_buf_dispose(&header);
    ckpt_buf_dispose(&value);
    ckpt_buf_dispose(&block);
    ckpt_buf_dispose(&file);
    ckpt_buf_dispose(&meta_handle);
    ckpt_buf_dispose(&data_handle);
    ckpt_buf_dispose(&index_block);
    ckpt_buf_dispose(&index_handle);
    return n;
}

/* The keys of the index above add up to 63 times its size. They were kept
 * in one arena grown by doubling: 8 MiB for their 4.3 MB, and 12 MiB at
 * once while it was copied into the larger one, so opening the 70 KB index
 * took 180 times its size, where the README's resource limits promise
 * about 100. In blocks that never move, the keys cost their bytes: open
 * keeps and peaks at under 100 times the index, and every key reads back. */
static void test_shared_prefix_keys_within_bound(void **state)
{
    char *dir = test_make_temp_dir();
    char *prefix = test_path(dir, "shared");
    char *index = test_path(dir, "shared.index");
    char *data = test_path(dir, "shared.data-00000-of-00001");
    size_t size = write_shared_key_index(index);
    ckpt_bundle_reader *r = NULL;
    const ckpt_tensor_entry *e = NULL;
    char key[SHARED_KEY_LEN + 1];
    long long before, kept, peak;
    (void)state;
    test_write_file(data, "", 0); /* the records are empty */
    before = count_alloc_live();
    count_alloc_reset_peak();
    assert_ckpt_ok(ckpt_bundle_reader_open(&r, prefix, NULL));
    kept = count_alloc_live() - before;
    peak = count_alloc_peak() - before;
    print_message("index of %zu bytes: open keeps %.1f times it, peak %.1f\n",
                  size, (double)kept / (double)size,
                  (double)peak / (double)size);
    assert_int_equal(ckpt_bundle_reader_count(r), SHARED_KEYS);
    if (peak > 100 * (long long)size)
        fail_msg("open's peak is %.1f times the index, more than 100",
                 (double)peak / (double)size);
    memset(key, 'k', SHARED_KEY_LEN);
    key[SHARED_KEY_LEN] = '\0';
    for (size_t i = 0; i < SHARED_KEYS; i += SHARED_KEYS / 7) {
        e = ckpt_bundle_reader_entry(r, i);
        assert_non_null(e);
        assert_int_equal(e->name_len, SHARED_KEY_LEN);
        assert_memory_equal(e->name, key, SHARED_KEY_LEN - 2);
        assert_int_equal((uint8_t)e->name[SHARED_KEY_LEN - 2], i >> 8);
        assert_int_equal((uint8_t)e->name[SHARED_KEY_LEN - 1], i & 0xff);
        assert_int_equal(e->name[SHARED_KEY_LEN], '\0');
        assert_int_equal(e->shape.rank, 1);
        assert_int_equal(e->shape.dims[0], 0);
    }
    assert_ckpt_ok(ckpt_bundle_reader_verify(r));
    ckpt_bundle_reader_free(r);
    assert_int_equal(count_alloc_live(), before);
    free(data);
    free(index);
    free(prefix);
    test_remove_tree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bytes_per_entry),
        cmocka_unit_test(test_entry_without_memory),
        cmocka_unit_test(test_reads_by_name_keep_nothing),
        cmocka_unit_test(test_entry_fill),
        cmocka_unit_test(test_shared_prefix_keys_within_bound)};
    /* before any allocation of the library */
    if (ckpt_set_allocator(&count_alloc) != 0)
        return 1;
    return cmocka_run_group_tests(tests, NULL, NULL);
}
