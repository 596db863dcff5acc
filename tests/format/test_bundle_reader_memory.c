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
 *   - that handing one out without memory fails cleanly.
 * CKPT_TEST_ENTRIES (environment) replaces ENTRIES, for measuring 10^5 or
 * 10^6 entries by hand; the bounds are per entry either way. */
#include "support/count_alloc.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ENTRIES 10000
/* Bytes per entry an open reader may keep. Every entry was a public
 * ckpt_tensor_entry (328 bytes with its CKPT_MAX_RANK shape) in an array
 * grown by doubling, its name copied: 365 to 558 here. Kept compactly (a
 * 64-byte record, the name and its NUL, 8 bytes a dimension): 101. */
#define KEPT_PER_ENTRY_LIMIT 120
/* ... and open's peak per entry: 527 to 876 before, 181 to 249 now (the
 * arrays grown by doubling, then trimmed). */
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bytes_per_entry),
        cmocka_unit_test(test_entry_without_memory),
        cmocka_unit_test(test_entry_fill)};
    /* before any allocation of the library */
    if (ckpt_set_allocator(&count_alloc) != 0)
        return 1;
    return cmocka_run_group_tests(tests, NULL, NULL);
}
