/* tests/format/test_entry_table.c - the bundle reader's entry table
 * (bundle_reader_entries.c) placing a name in its block of keys by its
 * address, as the ownership check of a filled entry
 * (ckpt_bundle_reader_entry_fill) does before it reads the name. A table
 * of long keys, each in a block of its own, between short ones packed
 * together: once trimmed, every entry's name is placed with at most
 * log2(blocks) + 1 looks (one look per block made a walk over every
 * entry of such an index quadratic: 40000 keys of 9000 bytes took 3.5 s
 * to size, 0.15 s with the search), and every filled entry is still
 * the table's own; an address outside every block's keys (in none, or
 * in the unused rest of one), or a name whose NUL would lie past them, is
 * in none. */
#include "format/bundle_reader_internal.h"
#include "format/bundle_test_helpers.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LONG_KEYS 1024
#define LONG_KEY_LEN 8200 /* with its NUL, past 8 KiB: a block of its own */

/* Entry i's key: its number, zero-padded (key order is entry order), then
 * for odd i enough bytes to make it long. */
static size_t make_key(char *key, size_t i)
{
    size_t n = (size_t)snprintf(key, 16, "%06zu", i);
    if (i % 2 == 1) {
        memset(key + n, 'x', LONG_KEY_LEN - n);
        n = LONG_KEY_LEN;
    }
    return n;
}

static void fill_table(ckpt__entry_table *t, size_t count)
{
    char *key = malloc(LONG_KEY_LEN + 1);
    assert_non_null(key);
    assert_ckpt_ok(ckpt__entry_table_init(t));
    for (size_t i = 0; i < count; i++) {
        ckpt__bundle_entry be =
            bt_make_entry(CKPT_DT_FLOAT, 1, 0, 4 * (int64_t)i, 4, 0);
        size_t n = make_key(key, i);
        assert_ckpt_ok(ckpt__entry_table_add(t, (const uint8_t *)key, n, &be));
    }
    free(key);
}

static size_t log2_ceil(size_t n)
{
    size_t bits = 0;
    while (((size_t)1 << bits) < n)
        bits++;
    return bits;
}

static void test_name_placed_by_binary_search(void **state)
{
    ckpt__entry_table t;
    size_t count = 2 * LONG_KEYS, bound, worst = 0;
    (void)state;
    fill_table(&t, count);
    assert_true(t.nblocks > LONG_KEYS);
    ckpt__entry_table_trim(&t);
    bound = log2_ceil(t.nblocks + 1) + 1;
    for (size_t i = 0; i < count; i++) {
        ckpt_tensor_entry e;
        size_t probes = 0, at = SIZE_MAX, k;
        ckpt__entry_table_fill(&t, i, &e);
        k = ckpt__entry_table_name_block(&t, e.name, e.name_len, &probes);
        assert_true(k < t.nblocks);
        assert_true(e.name >= t.name_blocks[k].bytes &&
                    e.name < t.name_blocks[k].bytes + t.name_blocks[k].size);
        if (probes > worst)
            worst = probes;
        assert_true(ckpt__entry_table_owns(&t, &e, &at));
        assert_int_equal(at, i);
    }
    if (worst > bound)
        fail_msg("a name took %zu looks among %zu blocks; at most %zu", worst,
                 t.nblocks, bound);
    ckpt__entry_table_dispose(&t);
}

/* Addresses at and past the ends of each block's keys: a name lies in a
 * block only with its NUL inside the bytes keys were written to, never in
 * the unused, uninitialised rest of a block keys are packed in (the
 * search by name that follows would read it). Before the table is
 * trimmed (the blocks in the order made), the answers are the same. */
static void test_block_edges(void **state)
{
    ckpt__entry_table t;
    size_t with_rest = 0;
    (void)state;
    fill_table(&t, 64);
    for (int trimmed = 0; trimmed < 2; trimmed++) {
        if (trimmed)
            ckpt__entry_table_trim(&t);
        for (size_t k = 0; k < t.nblocks; k++) {
            const char *b = t.name_blocks[k].bytes;
            size_t used = t.name_blocks[k].used;
            assert_true(used > 0 && used <= t.name_blocks[k].size);
            assert_int_equal(ckpt__entry_table_name_block(&t, b, 0, NULL), k);
            assert_int_equal(
                ckpt__entry_table_name_block(&t, b, used - 1, NULL), k);
            assert_int_equal(ckpt__entry_table_name_block(&t, b, used, NULL),
                             SIZE_MAX);
            assert_int_equal(
                ckpt__entry_table_name_block(&t, b + used - 1, 0, NULL), k);
            assert_int_equal(
                ckpt__entry_table_name_block(&t, b + used - 1, 1, NULL),
                SIZE_MAX);
            if (used < t.name_blocks[k].size) { /* the unused rest */
                with_rest++;
                assert_int_equal(
                    ckpt__entry_table_name_block(&t, b + used, 0, NULL),
                    SIZE_MAX);
                assert_int_equal(
                    ckpt__entry_table_name_block(
                        &t, b + t.name_blocks[k].size - 1, 0, NULL),
                    SIZE_MAX);
            }
        }
        assert_int_equal(
            ckpt__entry_table_name_block(&t, (const char *)&t, 0, NULL),
            SIZE_MAX);
    }
    assert_true(with_rest > 0);
    ckpt__entry_table_dispose(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_name_placed_by_binary_search),
        cmocka_unit_test(test_block_edges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
