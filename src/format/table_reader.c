/* format/table_reader.c - validating an SSTable, held in memory or read
 * block by block from a file, and reporting its entries in order (see
 * table.h).
 *
 *   [data block | t | crc]* [metaindex | t | crc] [index | t | crc] footer
 *   footer (last 48 bytes):
 *     varint64 meta_off, meta_size, index_off, index_size  (within 40 bytes)
 *     padding (not checked)                                 up to byte 40
 *     magic 57 fb 80 8b 24 75 47 db                         bytes 40..47
 *
 * Checks, in order: size >= 48, magic, footer handles, then for the index,
 * the metaindex and every data block: bounds (offset + size + 5 <= n - 48),
 * size at most CKPT__TABLE_MAX_BLOCK, masked CRC32C over stored bytes +
 * type byte, type 0 or 1 (Snappy), block structure; data blocks in file
 * order without overlapping; keys strictly increasing over the whole
 * table; each data block's keys <= its index separator and > the previous
 * separator.
 *
 * Bounded work and memory: a file is never read whole. The footer, the
 * index block and one data block at a time are read, each at most
 * CKPT__TABLE_MAX_BLOCK bytes; since data blocks may not overlap, every
 * byte of the file is read and checked once, however many index entries
 * there are. A Snappy block may declare at most 32 times its stored size
 * (Snappy cannot expand more than about 21x: a 3-byte copy element yields
 * at most 64 bytes), and at most CKPT__TABLE_MAX_BLOCK. */
#include "format/table.h"

#include "common/internal.h"
#include "format/snappy_block.h"
#include "io/fs_internal.h"
#include "util/coding.h"
#include "util/crc32c.h"

#include <inttypes.h>
#include <string.h>

#define SNAPPY_MAX_RATIO 32

typedef struct reader {
    const uint8_t *file; /* the image in memory, or NULL: read from `f` */
    const ckpt_fs *fs;
    ckpt_file *f;
    uint64_t n;
    const char *name;
    ckpt__block_entry_cb cb;
    void *payload;
    ckpt_buf what;     /* "<name>: block at <offset>" for block errors */
    ckpt_buf scratch;  /* decompressed data block */
    ckpt_buf raw;      /* a data block as read from the file */
    uint64_t data_end; /* end of the last data block read (with trailer) */
    ckpt_buf prev_key; /* last key reported (whole table) */
    ckpt_buf prev_sep; /* previous index separator */
    bool have_key;
    bool have_sep;
    const uint8_t *sep; /* separator of the data block being read */
    size_t sep_len;
    uint64_t block_off; /* offset of the data block being read */
    size_t entry;       /* entry number within that block */
} reader;

static int set_what(reader *r, uint64_t off)
{
    ckpt__buf_clear(&r->what);
    return ckpt__buf_printf(&r->what, "%s: block at %" PRIu64, r->name, off);
}

static bool decode_handle(const uint8_t **p, const uint8_t *end, uint64_t *off,
                          uint64_t *size)
{
    return ckpt__get_varint64(p, end, off) && ckpt__get_varint64(p, end, size);
}

/* Point *out at `n` bytes of the table at `off` (inside it, as checked by
 * the caller): in the image, or read from the file into `raw`. */
static int fetch(reader *r, uint64_t off, size_t n, ckpt_buf *raw,
                 const uint8_t **out)
{
    size_t got = 0;
    int err;
    if (r->file) {
        *out = r->file + off;
        return 0;
    }
    ckpt__buf_clear(raw);
    err = ckpt__buf_grow(raw, n);
    if (err < 0)
        return err;
    err = ckpt__fs_pread(r->fs, r->f, r->name, raw->ptr, n, off, &got);
    if (err < 0)
        return err;
    if (got != n)
        return ckpt__error(CKPT_ECORRUPT,
                           "%s: file ended after %zu of %zu bytes (it "
                           "shrank while being read?)",
                           r->what.ptr, got, n);
    raw->size = n;
    *out = (const uint8_t *)raw->ptr;
    return 0;
}

/* Check a handle's bounds and trailer; point out and out_len at the block's
 * contents (read into `raw` from a file, decompressed into `dec` when
 * Snappy). */
static int read_block(reader *r, uint64_t off, uint64_t size, ckpt_buf *raw,
                      ckpt_buf *dec, const uint8_t **out, size_t *out_len)
{
    uint64_t end, limit = r->n - CKPT__TABLE_FOOTER_SIZE;
    const uint8_t *p;
    uint32_t stored, actual;
    uint8_t type;
    size_t max_out;
    int err = set_what(r, off);
    if (err < 0)
        return err;
    if (ckpt__add_overflow_u64(off, size, &end) ||
        ckpt__add_overflow_u64(end, CKPT__TABLE_TRAILER_SIZE, &end) ||
        end > limit)
        return ckpt__error(CKPT_ECORRUPT,
                           "%s: truncated block read (size %" PRIu64
                           " runs past the footer at %" PRIu64 ")",
                           r->what.ptr, size, limit);
    if (size > CKPT__TABLE_MAX_BLOCK)
        return ckpt__error(CKPT_ECORRUPT,
                           "%s: block of %" PRIu64 " bytes, more than the "
                           "limit of %llu",
                           r->what.ptr, size,
                           (unsigned long long)CKPT__TABLE_MAX_BLOCK);
    err = fetch(r, off, (size_t)size + CKPT__TABLE_TRAILER_SIZE, raw, &p);
    if (err < 0)
        return err;
    type = p[size];
    stored = ckpt__decode_fixed32(p + size + 1);
    actual = ckpt__crc32c(p, (size_t)size + 1);
    if (ckpt__crc32c_unmask(stored) != actual)
        return ckpt__error(CKPT_ECORRUPT, "%s: checksum mismatch", r->what.ptr);
    switch (type) {
    case CKPT__BLOCK_TYPE_NONE:
        *out = p;
        *out_len = (size_t)size;
        return 0;
    case CKPT__BLOCK_TYPE_SNAPPY:
        max_out = (size_t)size * SNAPPY_MAX_RATIO;
        if (max_out > CKPT__TABLE_MAX_BLOCK)
            max_out = CKPT__TABLE_MAX_BLOCK;
        err =
            ckpt__snappy_uncompress(dec, p, (size_t)size, max_out, r->what.ptr);
        if (err < 0)
            return err;
        *out = (const uint8_t *)dec->ptr;
        *out_len = dec->size;
        return 0;
    default:
        return ckpt__error(CKPT_ECORRUPT, "%s: bad block type %u", r->what.ptr,
                           (unsigned)type);
    }
}

static int ignore_entry(const uint8_t *key, size_t key_len,
                        const uint8_t *value, size_t value_len, void *payload)
{
    (void)key;
    (void)key_len;
    (void)value;
    (void)value_len;
    (void)payload;
    return 0;
}

static int on_data_entry(const uint8_t *key, size_t key_len,
                         const uint8_t *value, size_t value_len, void *payload)
{
    reader *r = payload;
    size_t entry = r->entry++;
    int err;
    if (r->have_key && ckpt__key_compare((const uint8_t *)r->prev_key.ptr,
                                         r->prev_key.size, key, key_len) >= 0) {
        return ckpt__error(CKPT_ECORRUPT,
                           "%s: keys out of order in the data block at %" PRIu64
                           ", entry %zu",
                           r->name, r->block_off, entry);
    }
    if (ckpt__key_compare(key, key_len, r->sep, r->sep_len) > 0 ||
        (r->have_sep &&
         ckpt__key_compare(key, key_len, (const uint8_t *)r->prev_sep.ptr,
                           r->prev_sep.size) <= 0)) {
        return ckpt__error(
            CKPT_ECORRUPT,
            "%s: key outside its index range in the data block at "
            "%" PRIu64 ", entry %zu",
            r->name, r->block_off, entry);
    }
    ckpt__buf_clear(&r->prev_key);
    err = ckpt__buf_put(&r->prev_key, key, key_len);
    if (err < 0)
        return err;
    r->have_key = true;
    return r->cb(key, key_len, value, value_len, r->payload);
}

static int on_index_entry(const uint8_t *key, size_t key_len,
                          const uint8_t *value, size_t value_len, void *payload)
{
    reader *r = payload;
    const uint8_t *p = value;
    const uint8_t *contents;
    size_t len;
    uint64_t off, size;
    int err;

    if (!decode_handle(&p, value + value_len, &off, &size) ||
        p != value + value_len) {
        return ckpt__error(CKPT_ECORRUPT, "%s: index block: bad block handle",
                           r->name);
    }
    if (r->have_sep && ckpt__key_compare((const uint8_t *)r->prev_sep.ptr,
                                         r->prev_sep.size, key, key_len) >= 0) {
        return ckpt__error(CKPT_ECORRUPT,
                           "%s: index block: the separator of the data block "
                           "at %" PRIu64 " is out of order",
                           r->name, off);
    }
    if (off < r->data_end)
        return ckpt__error(CKPT_ECORRUPT,
                           "%s: index block: data block at %" PRIu64
                           " overlaps or precedes the one before it (which "
                           "ends at %" PRIu64 ")",
                           r->name, off, r->data_end);
    err = read_block(r, off, size, &r->raw, &r->scratch, &contents, &len);
    if (err < 0)
        return err;
    r->data_end = off + size + CKPT__TABLE_TRAILER_SIZE; /* checked above */
    r->sep = key;
    r->sep_len = key_len;
    r->block_off = off;
    r->entry = 0;
    err = ckpt__block_iterate(contents, len, r->what.ptr, on_data_entry, r);
    if (err != 0)
        return err;
    ckpt__buf_clear(&r->prev_sep);
    err = ckpt__buf_put(&r->prev_sep, key, key_len);
    if (err < 0)
        return err;
    r->have_sep = true;
    return 0;
}

/* The footer, the metaindex and the index block of the table `r`
 * describes; each data block as the index names it. */
static int iterate(reader *r)
{
    ckpt_buf index_dec = CKPT_BUF_INIT, index_raw = CKPT_BUF_INIT;
    ckpt_buf what = CKPT_BUF_INIT;
    const uint8_t *footer, *p, *contents;
    size_t len;
    uint64_t meta_off, meta_size, index_off, index_size;
    int err;

    if (r->n < CKPT__TABLE_FOOTER_SIZE) {
        err = ckpt__error(CKPT_ECORRUPT,
                          "%s: file is too short to be an sstable (%" PRIu64
                          " bytes)",
                          r->name, r->n);
        goto done;
    }
    err = set_what(r, r->n - CKPT__TABLE_FOOTER_SIZE);
    if (err == 0)
        err = fetch(r, r->n - CKPT__TABLE_FOOTER_SIZE, CKPT__TABLE_FOOTER_SIZE,
                    &index_raw, &footer);
    if (err < 0)
        goto done;
    if (ckpt__decode_fixed64(footer + 40) != CKPT__TABLE_MAGIC) {
        err = ckpt__error(CKPT_ECORRUPT,
                          "%s: not an sstable (bad magic number)", r->name);
        goto done;
    }
    p = footer;
    if (!decode_handle(&p, footer + 40, &meta_off, &meta_size) ||
        !decode_handle(&p, footer + 40, &index_off, &index_size)) {
        err =
            ckpt__error(CKPT_ECORRUPT, "%s: footer: bad block handle", r->name);
        goto done;
    }

    /* The metaindex is not used, but it must be intact. */
    err = read_block(r, meta_off, meta_size, &index_raw, &index_dec, &contents,
                     &len);
    if (err == 0)
        err =
            ckpt__block_iterate(contents, len, r->what.ptr, ignore_entry, NULL);
    if (err < 0)
        goto done;

    err = read_block(r, index_off, index_size, &index_raw, &index_dec,
                     &contents, &len);
    if (err < 0)
        goto done;
    /* "<name>: index block at <off>" survives data-block reads */
    err = ckpt__buf_printf(&what, "%s: index block at %" PRIu64, r->name,
                           index_off);
    if (err == 0)
        err = ckpt__block_iterate(contents, len, what.ptr, on_index_entry, r);
done:
    ckpt_buf_dispose(&what);
    ckpt_buf_dispose(&index_dec);
    ckpt_buf_dispose(&index_raw);
    ckpt_buf_dispose(&r->what);
    ckpt_buf_dispose(&r->scratch);
    ckpt_buf_dispose(&r->raw);
    ckpt_buf_dispose(&r->prev_key);
    ckpt_buf_dispose(&r->prev_sep);
    return err;
}

int ckpt__table_iterate(const uint8_t *file, size_t n, const char *name,
                        ckpt__block_entry_cb cb, void *payload)
{
    reader r;
    memset(&r, 0, sizeof(r));
    r.file = file;
    r.n = n;
    r.name = name;
    r.cb = cb;
    r.payload = payload;
    return iterate(&r);
}

int ckpt__table_iterate_file(const ckpt_fs *fs, ckpt_file *f, uint64_t size,
                             const char *name, ckpt__block_entry_cb cb,
                             void *payload)
{
    reader r;
    memset(&r, 0, sizeof(r));
    r.fs = fs;
    r.f = f;
    r.n = size;
    r.name = name;
    r.cb = cb;
    r.payload = payload;
    return iterate(&r);
}
