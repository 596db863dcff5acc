/* fuzz/fuzz_table.c - fuzz target for the SSTable reader (format/table.h):
 * the input is a whole .index image given to ckpt__table_iterate.
 *
 * Each input is read as is and, when its block checksums do not match,
 * again with them repaired (ckpt_fuzz_fix_table_crcs), so mutations reach
 * the block and Snappy decoders behind the CRC check.
 *
 * Checks beyond "no crash": every key and value handed to the callback is
 * readable, keys arrive strictly increasing (the reader promises it), an
 * accepted table is rebuilt with the table builder (block size picked from
 * the input, so several blocks and separators get exercised) and the
 * rebuilt image must read back with exactly the same entries; no
 * allocation above the cap, no leak. */
#include "fuzz.h"

#include "common/internal.h"
#include "format/table.h"

#include <stdlib.h>
#include <string.h>

/* Entries copied out of the table (harness memory: libc malloc). */
typedef struct kv {
    uint8_t *key;
    size_t key_len;
    uint8_t *value;
    size_t value_len;
} kv;

typedef struct kv_list {
    kv *items;
    size_t n, cap;
} kv_list;

static int bytes_compare(const uint8_t *a, size_t na, const uint8_t *b,
                         size_t nb)
{
    size_t n = na < nb ? na : nb;
    int c = n ? memcmp(a, b, n) : 0;
    if (c != 0)
        return c;
    return na < nb ? -1 : na > nb ? 1 : 0;
}

static uint8_t *copy_bytes(const uint8_t *p, size_t n)
{
    uint8_t *d = malloc(n ? n : 1);
    CKPT_FUZZ_CHECK(d != NULL);
    if (n)
        memcpy(d, p, n);
    return d;
}

static void kv_list_free(kv_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->items[i].key);
        free(l->items[i].value);
    }
    free(l->items);
    memset(l, 0, sizeof(*l));
}

static int collect(const uint8_t *key, size_t key_len, const uint8_t *value,
                   size_t value_len, void *payload)
{
    kv_list *l = payload;
    kv *it;
    ckpt_fuzz_touch(key, key_len);
    ckpt_fuzz_touch(value, value_len);
    if (l->n > 0) {
        const kv *prev = &l->items[l->n - 1];
        CKPT_FUZZ_CHECK(bytes_compare(prev->key, prev->key_len, key, key_len) <
                        0);
    }
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        kv *p = realloc(l->items, cap * sizeof(*p));
        CKPT_FUZZ_CHECK(p != NULL);
        l->items = p;
        l->cap = cap;
    }
    it = &l->items[l->n++];
    it->key = copy_bytes(key, key_len);
    it->key_len = key_len;
    it->value = copy_bytes(value, value_len);
    it->value_len = value_len;
    return 0;
}

/* Build a table of `l` with `block_size` into `sink`. */
static void rebuild(const kv_list *l, size_t block_size, ckpt_fuzz_sink *sink)
{
    ckpt__table_builder *tb = NULL;
    ckpt_file *f = NULL;
    int rc = sink->fs.open_write(&f, "rebuilt.index", 0, sink->fs.payload);
    CKPT_FUZZ_CHECK(rc == 0);
    rc =
        ckpt__table_builder_new(&tb, &sink->fs, f, "rebuilt.index", block_size);
    CKPT_FUZZ_CHECK(rc == 0);
    for (size_t i = 0; i < l->n; i++) {
        rc = ckpt__table_builder_add(tb, l->items[i].key, l->items[i].key_len,
                                     l->items[i].value, l->items[i].value_len);
        CKPT_FUZZ_CHECK(rc == 0);
    }
    rc = ckpt__table_builder_finish(tb);
    CKPT_FUZZ_CHECK(rc == 0);
    CKPT_FUZZ_CHECK(ckpt__table_builder_file_size(tb) == sink->data.size);
    ckpt__table_builder_free(tb);
    sink->fs.close(f, sink->fs.payload);
}

/* Iterate `data`; when it reads, rebuild it and compare. */
static void check_image(const uint8_t *data, size_t size)
{
    kv_list first = {NULL, 0, 0};
    kv_list again = {NULL, 0, 0};
    ckpt_fuzz_sink sink;
    int rc;

    ckpt_fuzz_sink_init(&sink);
    rc = ckpt__table_iterate(data, size, "fuzz.index", collect, &first);
    if (rc != 0) {
        CKPT_FUZZ_CHECK(rc == CKPT_ECORRUPT);
        CKPT_FUZZ_CHECK(ckpt_error_last()->code == rc);
        goto done;
    }
    rebuild(&first, (size_t)64 << (size & 7), &sink);
    rc = ckpt__table_iterate((const uint8_t *)sink.data.ptr, sink.data.size,
                             "rebuilt.index", collect, &again);
    CKPT_FUZZ_CHECK(rc == 0);
    CKPT_FUZZ_CHECK(again.n == first.n);
    for (size_t i = 0; i < first.n; i++) {
        const kv *a = &first.items[i], *b = &again.items[i];
        CKPT_FUZZ_CHECK(bytes_compare(a->key, a->key_len, b->key, b->key_len) ==
                        0);
        CKPT_FUZZ_CHECK(
            bytes_compare(a->value, a->value_len, b->value, b->value_len) == 0);
    }
done:
    kv_list_free(&first);
    kv_list_free(&again);
    ckpt_fuzz_sink_dispose(&sink);
}

int ckpt_fuzz_table(const uint8_t *data, size_t size)
{
    uint8_t *fixed;

    ckpt_fuzz_begin();
    check_image(data, size);
    /* again with the block checksums repaired, when that changes it */
    fixed = malloc(size ? size : 1);
    CKPT_FUZZ_CHECK(fixed != NULL);
    if (size)
        memcpy(fixed, data, size);
    if (ckpt_fuzz_fix_table_crcs(fixed, size) > 0 &&
        memcmp(fixed, data, size) != 0)
        check_image(fixed, size);
    free(fixed);
    ckpt_fuzz_end("table");
    return 0;
}
