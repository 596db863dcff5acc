/* format/table_builder.c - writing an SSTable (the bundle's .index file)
 * exactly as TensorFlow's table builder does (see table.h):
 *
 *   data block 0 | type | crc      type 0 (stored), crc = mask(crc32c(
 *   data block 1 | type | crc             block bytes || type byte))
 *   ...
 *   metaindex (empty, 8 bytes) | type | crc
 *   index block | type | crc       one entry per data block:
 *                                  separator key -> varint64 off, varint64 size
 *   footer (48): handle(metaindex) handle(index) zeros... | 57 fb 80 8b 24 75
 * 47 db
 *
 * A data block is written once its estimated size reaches block_size; an
 * entry whose key + value is at least twice block_size first flushes the
 * current block (TensorFlow's rule), so it starts a fresh one. The index key
 * of a block is chosen when the first key of the next block is known
 * (shortest separator) or at finish (short successor). Blocks are written
 * uncompressed. */
#include "format/table.h"

#include "common/internal.h"
#include "io/fs_internal.h"
#include "util/coding.h"
#include "util/crc32c.h"

#include <assert.h>
#include <string.h>

struct ckpt__table_builder {
    const ckpt_fs *fs;
    ckpt_file *file;
    char *name;
    size_t block_size;
    ckpt__block_builder data;
    ckpt__block_builder index;
    ckpt_buf last_key;
    uint64_t offset; /* bytes written so far */
    uint64_t num_entries;
    bool pending_index;    /* a data block awaits its index entry */
    uint64_t pending_off;  /* ... at this offset */
    uint64_t pending_size; /* ... of this size (without trailer) */
    bool finished;
    int status; /* first error, sticky */
};

/* ---- separators (LevelDB's bytewise comparator) -------------------------- */

int ckpt__table_shortest_separator(ckpt_buf *start, const uint8_t *limit,
                                   size_t limit_len)
{
    const uint8_t *s = (const uint8_t *)start->ptr;
    size_t n = start->size < limit_len ? start->size : limit_len;
    size_t i = 0;
    while (i < n && s[i] == limit[i])
        i++;
    if (i >= n)
        return 0; /* one is a prefix of the other: keep start */
    if (s[i] < 0xff && (unsigned)s[i] + 1 < (unsigned)limit[i]) {
        start->ptr[i] = (char)(s[i] + 1);
        start->size = i + 1;
        start->ptr[start->size] = '\0';
    }
    return 0;
}

void ckpt__table_short_successor(ckpt_buf *key)
{
    for (size_t i = 0; i < key->size; i++) {
        uint8_t c = (uint8_t)key->ptr[i];
        if (c != 0xff) {
            key->ptr[i] = (char)(c + 1);
            key->size = i + 1;
            key->ptr[key->size] = '\0';
            return;
        }
    }
    /* empty or all 0xff: unchanged */
}

/* ---- writing --------------------------------------------------------------
 */

int ckpt__table_builder_new(ckpt__table_builder **out, const ckpt_fs *fs,
                            ckpt_file *file, const char *name,
                            size_t block_size)
{
    ckpt__table_builder *t;
    *out = NULL;
    if (!fs || !fs->write || !file || !name)
        return ckpt__error(CKPT_EINVAL, "table builder: fs, file and name "
                                        "are required");
    t = ckpt__calloc(1, sizeof(*t));
    if (!t)
        return ckpt__error_oom();
    t->name = ckpt__strdup(name);
    if (!t->name) {
        ckpt__free(t);
        return ckpt__error_oom();
    }
    t->fs = fs;
    t->file = file;
    t->block_size = block_size ? block_size : CKPT__TABLE_BLOCK_SIZE;
    ckpt__block_builder_init(&t->data, 16);
    ckpt__block_builder_init(&t->index, 1);
    *out = t;
    return 0;
}

void ckpt__table_builder_free(ckpt__table_builder *t)
{
    if (!t)
        return;
    ckpt__block_builder_dispose(&t->data);
    ckpt__block_builder_dispose(&t->index);
    ckpt_buf_dispose(&t->last_key);
    ckpt__free(t->name);
    ckpt__free(t);
}

uint64_t ckpt__table_builder_file_size(const ckpt__table_builder *t)
{
    return t->offset;
}

static int fail(ckpt__table_builder *t, int err)
{
    if (t->status == 0)
        t->status = err;
    return err;
}

static int write_bytes(ckpt__table_builder *t, const void *p, size_t n)
{
    int err = ckpt__fs_write(t->fs, t->file, t->name, p, n);
    if (err < 0)
        return fail(t, err);
    t->offset += n;
    return 0;
}

/* Finish block `b`, append its trailer and write both in one call; the
 * handle (offset, size without trailer) goes to *off / *size. */
static int write_block(ckpt__table_builder *t, ckpt__block_builder *b,
                       uint64_t *off, uint64_t *size)
{
    uint8_t trailer[CKPT__TABLE_TRAILER_SIZE];
    size_t n;
    uint32_t crc;
    int err = ckpt__block_builder_finish(b);
    if (err < 0)
        return fail(t, err);
    n = b->out.size;
    trailer[0] = CKPT__BLOCK_TYPE_NONE;
    crc = ckpt__crc32c(b->out.ptr, n);
    crc = ckpt__crc32c_extend(crc, trailer, 1);
    ckpt__encode_fixed32(trailer + 1, ckpt__crc32c_mask(crc));
    err = ckpt__buf_put(&b->out, trailer, sizeof(trailer));
    if (err < 0)
        return fail(t, err);
    *off = t->offset;
    *size = n;
    err = write_bytes(t, b->out.ptr, b->out.size);
    if (err < 0)
        return err;
    ckpt__block_builder_reset(b);
    return 0;
}

static int add_index_entry(ckpt__table_builder *t)
{
    uint8_t handle[2 * CKPT__VARINT64_MAX];
    size_t hn = ckpt__encode_varint64(handle, t->pending_off);
    int err;
    hn += ckpt__encode_varint64(handle + hn, t->pending_size);
    err = ckpt__block_builder_add(&t->index, t->last_key.ptr, t->last_key.size,
                                  handle, hn);
    if (err < 0)
        return fail(t, err);
    t->pending_index = false;
    return 0;
}

static int flush_data(ckpt__table_builder *t)
{
    int err;
    if (ckpt__block_builder_empty(&t->data))
        return 0;
    assert(!t->pending_index);
    err = write_block(t, &t->data, &t->pending_off, &t->pending_size);
    if (err < 0)
        return err;
    t->pending_index = true;
    return 0;
}

/* 0 while entries may be added: the builder's earlier error, or
 * CKPT_ESTATE once finished. */
static int check_open(ckpt__table_builder *t)
{
    if (t->status < 0)
        return t->status;
    if (t->finished)
        return fail(
            t, ckpt__error(CKPT_ESTATE, "%s: table already finished", t->name));
    return 0;
}

int ckpt__table_builder_add(ckpt__table_builder *t, const void *key,
                            size_t key_len, const void *value, size_t value_len)
{
    int err = check_open(t);
    if (err < 0)
        return err;
    if (t->num_entries > 0) {
        /* TensorFlow: an entry at least twice the block size goes into a
         * fresh block. */
        if (key_len >= 2 * t->block_size ||
            value_len >= 2 * t->block_size - key_len) {
            err = flush_data(t);
            if (err < 0)
                return err;
        }
    }
    if (t->pending_index) {
        assert(ckpt__block_builder_empty(&t->data));
        err = ckpt__table_shortest_separator(&t->last_key, key, key_len);
        if (err == 0)
            err = add_index_entry(t);
        if (err < 0)
            return fail(t, err);
    }
    ckpt__buf_clear(&t->last_key);
    err = ckpt__buf_put(&t->last_key, key, key_len);
    if (err == 0)
        err = ckpt__block_builder_add(&t->data, key, key_len, value, value_len);
    if (err < 0)
        return fail(t, err);
    t->num_entries++;
    if (ckpt__block_builder_estimate(&t->data) >= t->block_size)
        return flush_data(t);
    return 0;
}

int ckpt__table_builder_finish(ckpt__table_builder *t)
{
    ckpt__block_builder meta;
    uint64_t meta_off = 0, meta_size = 0, index_off = 0, index_size = 0;
    uint8_t footer[CKPT__TABLE_FOOTER_SIZE];
    size_t fn;
    int err = check_open(t);

    if (err < 0)
        return err;
    err = flush_data(t);
    if (err < 0)
        return err;
    t->finished = true;

    ckpt__block_builder_init(&meta, 1);
    err = write_block(t, &meta, &meta_off, &meta_size);
    ckpt__block_builder_dispose(&meta);
    if (err < 0)
        return err;

    if (t->pending_index) {
        ckpt__table_short_successor(&t->last_key);
        err = add_index_entry(t);
        if (err < 0)
            return err;
    }
    err = write_block(t, &t->index, &index_off, &index_size);
    if (err < 0)
        return err;

    memset(footer, 0, sizeof(footer));
    fn = ckpt__encode_varint64(footer, meta_off);
    fn += ckpt__encode_varint64(footer + fn, meta_size);
    fn += ckpt__encode_varint64(footer + fn, index_off);
    fn += ckpt__encode_varint64(footer + fn, index_size);
    assert(fn <= 40);
    ckpt__encode_fixed64(footer + 40, CKPT__TABLE_MAGIC);
    return write_bytes(t, footer, sizeof(footer));
}
