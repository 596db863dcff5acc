/* format/bundle_reader.c - ckpt_bundle_reader: loads and validates a whole
 * bundle index when opened (read block by block, never held whole; records
 * that overlap in a data file are refused), then reads records from the
 * data shards, which are opened on first use and kept open. Record
 * streams (bundle_stream.c) and partitioned-tensor checks read through
 * the helpers of bundle_reader_internal.h.
 *
 *   <prefix>.index:  SSTable { "" -> BundleHeaderProto (first key),
 *                              name -> BundleEntryProto ... }
 *   <prefix>.data-SSSSS-of-NNNNN:  records located by (offset, size) only
 *   string record:  varint64 len[n] | fixed32 masked length CRC | bytes
 *
 * Every check a record needs before it is read (dtype, shape, shard range,
 * size against dtype x shape) is done at open; only the data file's length,
 * the CRCs and the string layout are checked when a record is read, and
 * nothing is allocated beyond what the index and data file sizes allow.
 * Dtypes TensorFlow knows but this library cannot decode (variant,
 * resource, the sub-byte ints) are listed; reading them fails with
 * CKPT_ENOTSUP. Unknown dtype numbers make the index corrupt. */
#include "ckpt/bundle.h"

#include "common/internal.h"
#include "format/bundle_proto.h"
#include "format/bundle_read_report.h"
#include "format/bundle_reader_internal.h"
#include "format/bundle_slices.h"
#include "format/bundle_text.h"
#include "format/string_record.h"
#include "format/table.h"
#include "io/direct_read.h"
#include "io/fs_internal.h"
#include "util/coding.h"
#include "util/crc32c.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define HOST_ENDIANNESS CKPT__BUNDLE_BIG_ENDIAN
#else
#define HOST_ENDIANNESS CKPT__BUNDLE_LITTLE_ENDIAN
#endif

struct rshard {
    int id;
    ckpt_file *file;
    uint64_t size;
};

struct ckpt_bundle_reader {
    const ckpt_fs *fs;
    char *prefix;
    ckpt_buf index_path;
    int num_shards;
    int endianness;
    bool skip_crc;
    ckpt_tensor_entry *entries; /* key order */
    size_t count;
    size_t cap;
    struct rshard *shards; /* opened shards, sorted by id */
    size_t nshards;
    size_t shards_cap;
    ckpt_buf path;               /* scratch: a data file's name */
    ckpt__sliced_entries sliced; /* values of partitioned entries */
    ckpt__read_report stream;    /* the last streamed read (mode 0: none) */
    uint64_t stream_bytes;       /* bytes it read */
};

typedef ckpt__shown_name shown_name;

static const char *entry_name(shown_name *s, const ckpt_tensor_entry *e)
{
    return ckpt__show_name(s, e->name, e->name_len);
}

/* ---- options / accessors ----------------------------------------------------
 */

int ckpt_bundle_reader_options_init(ckpt_bundle_reader_options *opts,
                                    unsigned int version)
{
    static const ckpt_bundle_reader_options defaults =
        CKPT_BUNDLE_READER_OPTIONS_INIT;
    CKPT__CHECK_ARG(opts);
    return ckpt__options_init(opts, &defaults, sizeof(defaults), version,
                              CKPT_BUNDLE_READER_OPTIONS_VERSION,
                              "bundle reader options",
                              "CKPT_BUNDLE_READER_OPTIONS_INIT");
}

const char *ckpt_bundle_reader_prefix(const ckpt_bundle_reader *r)
{
    return r ? r->prefix : NULL;
}

int ckpt_bundle_reader_num_shards(const ckpt_bundle_reader *r)
{
    return r ? r->num_shards : 0;
}

size_t ckpt_bundle_reader_count(const ckpt_bundle_reader *r)
{
    return r ? r->count : 0;
}

const ckpt_tensor_entry *ckpt_bundle_reader_entry(const ckpt_bundle_reader *r,
                                                  size_t i)
{
    if (!r || i >= r->count)
        return NULL;
    return &r->entries[i];
}

int ckpt_bundle_reader_find(const ckpt_tensor_entry **out,
                            const ckpt_bundle_reader *r, const char *name)
{
    CKPT__CHECK_ARG(out);
    CKPT__CHECK_ARG(r);
    CKPT__CHECK_ARG(name);
    return ckpt__bundle_reader_find_key(out, r, name, strlen(name));
}

int ckpt__bundle_reader_find_key(const ckpt_tensor_entry **out,
                                 const ckpt_bundle_reader *r, const void *key,
                                 size_t n)
{
    const char *name = key;
    size_t lo = 0, hi;
    shown_name sn;
    *out = NULL;
    hi = r->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const ckpt_tensor_entry *e = &r->entries[mid];
        int c = ckpt__key_compare(e->name, e->name_len, name, n);
        if (c == 0) {
            *out = e;
            return 0;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return ckpt__error(CKPT_ENOTFOUND, "%s: no tensor named '%s'",
                       r->index_path.ptr, ckpt__show_name(&sn, name, n));
}

/* ---- open: the index
 * ------------------------------------------------------------ */

struct load_state {
    ckpt_bundle_reader *r;
    bool have_header;
};

static int load_header(ckpt_bundle_reader *r, const uint8_t *key,
                       size_t key_len, const uint8_t *value, size_t value_len)
{
    ckpt__bundle_header h;
    const char *path = r->index_path.ptr;
    int err;

    if (key_len != 0)
        return ckpt__error(CKPT_ECORRUPT,
                           "%s: first key is not the bundle header (\"\")",
                           path);
    (void)key;
    err = ckpt__bundle_header_decode(&h, value, value_len);
    if (err < 0)
        return ckpt__error_prefix(err, "%s", path);
    if (h.num_shards < 1)
        return ckpt__error(CKPT_ECORRUPT, "%s: header: num_shards is %d", path,
                           (int)h.num_shards);
    if (h.endianness != CKPT__BUNDLE_LITTLE_ENDIAN &&
        h.endianness != CKPT__BUNDLE_BIG_ENDIAN)
        return ckpt__error(CKPT_ECORRUPT, "%s: header: bad endianness %d", path,
                           (int)h.endianness);
    err = ckpt__bundle_header_check_version(&h);
    if (err < 0)
        return ckpt__error_prefix(err, "%s", path);
    r->num_shards = h.num_shards;
    r->endianness = h.endianness;
    return 0;
}

/* Checks of §10 items 8-10 that need no data file. */
static int validate_entry(const ckpt_bundle_reader *r,
                          const ckpt__bundle_entry *be, const char *name)
{
    const char *path = r->index_path.ptr;
    int64_t count, need;
    size_t esize = ckpt_dtype_size(be->dtype);

    if (!ckpt__dtype_known(be->dtype))
        return ckpt__error(CKPT_ECORRUPT, "%s: tensor '%s': unknown dtype %d",
                           path, name, (int)be->dtype);
    if (be->unknown_rank)
        return ckpt__error(CKPT_ECORRUPT,
                           "%s: tensor '%s': shape has an unknown rank", path,
                           name);
    if (ckpt_shape_num_elements(&count, &be->shape) < 0)
        return ckpt__error(CKPT_ECORRUPT,
                           "%s: tensor '%s': shape's element count overflows",
                           path, name);
    if (be->num_slices > 0)
        return 0; /* a partitioned tensor's full entry owns no record */
    if (be->shard_id < 0 || be->shard_id >= r->num_shards)
        return ckpt__error(CKPT_ECORRUPT,
                           "%s: tensor '%s': shard %d out of range (%d "
                           "shards)",
                           path, name, (int)be->shard_id, r->num_shards);
    if (be->offset < 0 || be->size < 0 || be->offset > INT64_MAX - be->size)
        return ckpt__error(
            CKPT_ECORRUPT, "%s: tensor '%s': bad record offset %lld size %lld",
            path, name, (long long)be->offset, (long long)be->size);
    if (esize > 0) {
        if (ckpt__mul_overflow_i64(count, (int64_t)esize, &need))
            return ckpt__error(CKPT_ECORRUPT,
                               "%s: tensor '%s': byte size of the shape "
                               "overflows",
                               path, name);
        if (need != be->size)
            return ckpt__error(CKPT_ECORRUPT,
                               "%s: tensor '%s': record size %lld, a %s "
                               "tensor of %lld elements needs %lld",
                               path, name, (long long)be->size,
                               ckpt__dtype_label(be->dtype), (long long)count,
                               (long long)need);
    } else if (be->dtype == CKPT_DT_STRING && be->size < count) {
        /* every element takes at least its one-byte length */
        return ckpt__error(CKPT_ECORRUPT,
                           "%s: tensor '%s': string record of %lld bytes "
                           "cannot hold %lld elements",
                           path, name, (long long)be->size, (long long)count);
    }
    return 0;
}

static int load_entry(ckpt_bundle_reader *r, const uint8_t *key, size_t key_len,
                      const uint8_t *value, size_t value_len)
{
    ckpt__bundle_entry be;
    ckpt_tensor_entry *e;
    shown_name sn;
    const char *name = ckpt__show_name(&sn, (const char *)key, key_len);
    int err;

    err = ckpt__bundle_entry_decode(&be, value, value_len);
    if (err < 0)
        return ckpt__error_prefix(err, "%s: tensor '%s'", r->index_path.ptr,
                                  name);
    err = validate_entry(r, &be, name);
    if (err < 0)
        return err;
    if (r->count == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 16;
        ckpt_tensor_entry *p = ckpt__realloc(r->entries, cap * sizeof(*p));
        if (!p)
            return ckpt__error_oom();
        r->entries = p;
        r->cap = cap;
    }
    e = &r->entries[r->count];
    memset(e, 0, sizeof(*e));
    e->name = ckpt__strndup((const char *)key, key_len);
    if (!e->name)
        return ckpt__error_oom();
    r->count++;
    e->name_len = key_len;
    e->dtype = be.dtype;
    e->shape = be.shape;
    e->shard_id = be.shard_id;
    e->offset = be.offset;
    e->size = be.size;
    e->crc32c = be.crc32c;
    e->num_slices = be.num_slices;
    e->is_slice_key = key_len > 0 && key[0] == 0;
    if (be.num_slices > 0) /* kept to find the pieces when it is read */
        return ckpt__sliced_entries_add(&r->sliced, r->count - 1, value,
                                        value_len);
    return 0;
}

static int load_cb(const uint8_t *key, size_t key_len, const uint8_t *value,
                   size_t value_len, void *payload)
{
    struct load_state *st = payload;
    if (!st->have_header) {
        st->have_header = true;
        return load_header(st->r, key, key_len, value, value_len);
    }
    return load_entry(st->r, key, key_len, value, value_len);
}

/* Records of one data file in file order (by shard, offset, then size). */
static int by_record_position(const void *a, const void *b)
{
    const ckpt_tensor_entry *x = *(const ckpt_tensor_entry *const *)a;
    const ckpt_tensor_entry *y = *(const ckpt_tensor_entry *const *)b;
    if (x->shard_id != y->shard_id)
        return x->shard_id < y->shard_id ? -1 : 1;
    if (x->offset != y->offset)
        return x->offset < y->offset ? -1 : 1;
    if (x->size != y->size)
        return x->size < y->size ? -1 : 1;
    return 0;
}

/* No two records share a byte of a data file (TensorFlow's writer appends
 * each tensor once): otherwise a small index could make every read or
 * verify of the bundle go over the same data again and again. */
static int check_no_overlap(const ckpt_bundle_reader *r)
{
    const ckpt_tensor_entry **recs;
    size_t n = 0;
    int err = 0;
    if (r->count < 2)
        return 0;
    recs = ckpt__calloc(r->count, sizeof(*recs));
    if (!recs)
        return ckpt__error_oom();
    for (size_t i = 0; i < r->count; i++) {
        if (r->entries[i].num_slices == 0 && r->entries[i].size > 0)
            recs[n++] = &r->entries[i];
    }
    qsort(recs, n, sizeof(*recs), by_record_position);
    for (size_t i = 1; i < n && err == 0; i++) {
        const ckpt_tensor_entry *a = recs[i - 1], *b = recs[i];
        shown_name sa, sb;
        /* offset + size cannot overflow: validate_entry checked it */
        if (a->shard_id != b->shard_id || a->offset + a->size <= b->offset)
            continue;
        err = ckpt__error(CKPT_ECORRUPT,
                          "%s: tensors '%s' and '%s' overlap in data file "
                          "%d (records at offset %lld, %lld bytes, and at "
                          "offset %lld, %lld bytes)",
                          r->index_path.ptr, entry_name(&sa, a),
                          entry_name(&sb, b), a->shard_id, (long long)a->offset,
                          (long long)a->size, (long long)b->offset,
                          (long long)b->size);
    }
    ckpt__free(recs);
    return err;
}

/* Read and check the index of `r` block by block (it is never held whole:
 * a huge or sparse index costs no more memory than its blocks). */
static int load_index(ckpt_bundle_reader *r)
{
    ckpt_file *f = NULL;
    uint64_t size = 0;
    struct load_state st;
    int err = ckpt__fs_open_read(r->fs, &f, r->index_path.ptr);
    if (err == 0)
        err = ckpt__fs_size(r->fs, f, &size);
    if (err < 0)
        goto done;
    st.r = r;
    st.have_header = false;
    err = ckpt__table_iterate_file(r->fs, f, size, r->index_path.ptr, load_cb,
                                   &st);
    if (err == 0 && !st.have_header)
        err = ckpt__error(CKPT_ECORRUPT, "%s: no bundle header (empty table)",
                          r->index_path.ptr);
    if (err == 0)
        err = check_no_overlap(r);
done:
    ckpt__fs_close_quiet(r->fs, f);
    return err;
}

int ckpt_bundle_reader_open(ckpt_bundle_reader **out, const char *prefix,
                            const ckpt_bundle_reader_options *opts)
{
    ckpt_bundle_reader *r = NULL;
    int err;

    CKPT__CHECK_ARG(out);
    *out = NULL;
    if (!prefix || !*prefix)
        return ckpt__error(CKPT_EINVAL, "bundle reader: empty prefix");
    if (opts) {
        int err_v = ckpt__options_check_version(
            opts->version, CKPT_BUNDLE_READER_OPTIONS_VERSION,
            "bundle reader options", "CKPT_BUNDLE_READER_OPTIONS_INIT");
        if (err_v < 0)
            return err_v;
    }
    r = ckpt__calloc(1, sizeof(*r));
    if (!r)
        return ckpt__error_oom();
    r->fs = ckpt_fs_or_default(opts ? opts->fs : NULL);
    r->skip_crc = opts && opts->skip_data_checksums;
    r->prefix = ckpt__strdup(prefix);
    if (!r->prefix) {
        err = ckpt__error_oom();
        goto done;
    }
    err = ckpt_bundle_index_path(&r->index_path, prefix);
    if (err < 0)
        goto done;
    err = load_index(r);
done:
    if (err < 0) {
        ckpt__saved_error saved;
        ckpt__error_save(&saved);
        ckpt_bundle_reader_free(r);
        ckpt__error_restore(&saved);
        return err;
    }
    *out = r;
    return 0;
}

void ckpt_bundle_reader_free(ckpt_bundle_reader *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->nshards; i++)
        ckpt__fs_close_quiet(r->fs, r->shards[i].file);
    for (size_t i = 0; i < r->count; i++)
        ckpt__free((void *)r->entries[i].name);
    ckpt__free(r->entries);
    ckpt__free(r->shards);
    ckpt__free(r->prefix);
    ckpt_buf_dispose(&r->index_path);
    ckpt_buf_dispose(&r->path);
    ckpt__sliced_entries_dispose(&r->sliced);
    ckpt__free(r);
}

/* ---- records
 * ---------------------------------------------------------------------- */

/* The open data file `id`, opening it on first use. */
static int get_shard(ckpt_bundle_reader *r, const ckpt_tensor_entry *e,
                     struct rshard **out)
{
    size_t lo = 0, hi = r->nshards;
    struct rshard s;
    shown_name sn;
    int err;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->shards[mid].id == e->shard_id) {
            *out = &r->shards[mid];
            return 0;
        }
        if (r->shards[mid].id < e->shard_id)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (r->nshards == r->shards_cap) {
        size_t cap = r->shards_cap ? r->shards_cap * 2 : 4;
        struct rshard *p = ckpt__realloc(r->shards, cap * sizeof(*p));
        if (!p)
            return ckpt__error_oom();
        r->shards = p;
        r->shards_cap = cap;
    }
    err =
        ckpt_bundle_data_path(&r->path, r->prefix, e->shard_id, r->num_shards);
    if (err < 0)
        return err;
    s.id = e->shard_id;
    s.file = NULL;
    s.size = 0;
    err = ckpt__fs_open_read(r->fs, &s.file, r->path.ptr);
    if (err == 0)
        err = ckpt__fs_size(r->fs, s.file, &s.size);
    if (err < 0) {
        ckpt__fs_close_quiet(r->fs, s.file);
        return ckpt__error_prefix(err, "%s: tensor '%s'", r->path.ptr,
                                  entry_name(&sn, e));
    }
    memmove(&r->shards[lo + 1], &r->shards[lo],
            (r->nshards - lo) * sizeof(*r->shards));
    r->shards[lo] = s;
    r->nshards++;
    *out = &r->shards[lo];
    return 0;
}

/* Open the record's data file and check the record lies inside it. Leaves
 * the data file's name in r->path. */
static int locate(ckpt_bundle_reader *r, const ckpt_tensor_entry *e,
                  struct rshard **out)
{
    shown_name sn;
    int err;
    if (e->num_slices > 0)
        return ckpt__error(CKPT_ENOTSUP,
                           "%s: tensor '%s': partitioned tensor (%d slices) "
                           "not supported",
                           r->index_path.ptr, entry_name(&sn, e),
                           e->num_slices);
    if (e->shard_id < 0 || e->shard_id >= r->num_shards || e->offset < 0 ||
        e->size < 0 || e->offset > INT64_MAX - e->size)
        return ckpt__error(CKPT_EINVAL, "%s: tensor '%s': bad entry",
                           r->index_path.ptr, entry_name(&sn, e));
    err = get_shard(r, e, out);
    if (err < 0)
        return err;
    err =
        ckpt_bundle_data_path(&r->path, r->prefix, e->shard_id, r->num_shards);
    if (err < 0)
        return err;
    if ((uint64_t)(e->offset + e->size) > (*out)->size)
        return ckpt__error(CKPT_ECORRUPT,
                           "%s: tensor '%s': record at offset %lld, %lld "
                           "bytes, runs past the end of the data file (%llu "
                           "bytes)",
                           r->path.ptr, entry_name(&sn, e),
                           (long long)e->offset, (long long)e->size,
                           (unsigned long long)(*out)->size);
    return 0;
}

int ckpt__bundle_reader_check_record(ckpt_bundle_reader *r,
                                     const ckpt_tensor_entry *e)
{
    struct rshard *s;
    return locate(r, e, &s);
}

/* Read bytes [off, off + n) of the record of `e` from its data file `s`
 * (located), looping over short reads. */
static int read_located(ckpt_bundle_reader *r, struct rshard *s,
                        const ckpt_tensor_entry *e, uint64_t off, void *dst,
                        size_t n)
{
    shown_name sn;
    size_t done = 0;
    while (done < n) {
        size_t got = 0;
        int err =
            ckpt__fs_pread(r->fs, s->file, (uint8_t *)dst + done, n - done,
                           (uint64_t)e->offset + off + done, &got);
        if (err < 0)
            return ckpt__error_prefix(err, "%s: tensor '%s'", r->path.ptr,
                                      entry_name(&sn, e));
        if (got == 0)
            return ckpt__error(CKPT_ECORRUPT,
                               "%s: tensor '%s': data file ended after %llu "
                               "of %lld bytes of the record",
                               r->path.ptr, entry_name(&sn, e),
                               (unsigned long long)(off + done),
                               (long long)e->size);
        done += got;
    }
    return 0;
}

int ckpt__bundle_reader_read_part(ckpt_bundle_reader *r,
                                  const ckpt_tensor_entry *e, uint64_t off,
                                  void *dst, size_t n)
{
    struct rshard *s;
    int err = locate(r, e, &s);
    if (err == 0)
        err = read_located(r, s, e, off, dst, n);
    return err;
}

bool ckpt__bundle_reader_swaps(const ckpt_bundle_reader *r)
{
    return r->endianness != HOST_ENDIANNESS;
}

bool ckpt__bundle_reader_skips_crc(const ckpt_bundle_reader *r)
{
    return r->skip_crc;
}

const char *ckpt__bundle_reader_data_path(const ckpt_bundle_reader *r)
{
    return r->path.ptr ? r->path.ptr : r->index_path.ptr;
}

/* Reads are issued in pieces of this size when a CRC is wanted, so each
 * piece is checksummed while it is still in the L2 cache (measured: 128 KiB
 * beats 1 MiB and 4 MiB by 5-10% on a cold 256 MiB restore). */
#define CRC_READ_CHUNK ((size_t)128 << 10)

/* Read the record of `e` into dst; with `crc` not NULL also extend *crc
 * over it, piece by piece. */
static int read_into(ckpt_bundle_reader *r, const ckpt_tensor_entry *e,
                     void *dst, uint32_t *crc)
{
    struct rshard *s;
    size_t done = 0;
    size_t n = (size_t)e->size;
    int err = locate(r, e, &s);
    while (err == 0 && done < n) {
        size_t want = n - done;
        if (crc && want > CRC_READ_CHUNK)
            want = CRC_READ_CHUNK;
        err = read_located(r, s, e, done, (uint8_t *)dst + done, want);
        if (err == 0 && crc)
            *crc = ckpt__crc32c_extend(*crc, (uint8_t *)dst + done, want);
        done += want;
    }
    return err;
}

/* Walk the string record `rec` (`size` bytes, size > 0) of entry `e`:
 * check its layout and length checksum, store each element in `strings`
 * when not NULL (`count` slots), and compute the record's CRC as
 * TensorFlow defines it: the length words (not the varints), then the
 * stored length checksum, then the string bytes. */
static int scan_strings(const ckpt_bundle_reader *r, const ckpt_tensor_entry *e,
                        const uint8_t *rec, size_t size, uint64_t count,
                        ckpt_slice *strings, uint32_t *crc_out)
{
    bool big = r->endianness == CKPT__BUNDLE_BIG_ENDIAN;
    const uint8_t *p = rec;
    const uint8_t *end = rec + size;
    shown_name sn;
    uint64_t sum = 0;
    uint32_t crc = 0;
    uint32_t stored;

    if (count > size)
        goto bad_lengths;
    for (uint64_t i = 0; i < count; i++) {
        uint64_t len;
        if (!ckpt__get_varint64(&p, end, &len) ||
            ckpt__add_overflow_u64(sum, len, &sum) || sum > size)
            goto bad_lengths;
        if (strings)
            strings[i].len = (size_t)len;
        crc = ckpt__string_length_crc(crc, len, big);
    }
    /* TensorFlow's lower bound: a length byte per element plus the bytes. */
    if (count + sum > (uint64_t)size)
        goto bad_lengths;
    if ((size_t)(end - p) < 4)
        return ckpt__error(CKPT_ECORRUPT,
                           "%s: tensor '%s': string record ends before its "
                           "length checksum",
                           r->path.ptr, entry_name(&sn, e));
    stored = ckpt__string_checksum_get(p, big);
    if (stored != ckpt__crc32c_mask(crc))
        return ckpt__error(CKPT_ECORRUPT,
                           "%s: tensor '%s': string length checksum mismatch "
                           "(stored 0x%08x, computed 0x%08x)",
                           r->path.ptr, entry_name(&sn, e), stored,
                           ckpt__crc32c_mask(crc));
    if ((uint64_t)(end - p) - 4 != sum)
        return ckpt__error(CKPT_ECORRUPT,
                           "%s: tensor '%s': string record is %zu bytes, its "
                           "lengths account for %llu",
                           r->path.ptr, entry_name(&sn, e), size,
                           (unsigned long long)((uint64_t)(p - rec) + 4 + sum));
    crc = ckpt__crc32c_extend(crc, p, (size_t)(end - p));
    p += 4;
    for (uint64_t i = 0; strings && i < count; i++) {
        strings[i].ptr = p;
        p += strings[i].len;
    }
    *crc_out = crc;
    return 0;
bad_lengths:
    return ckpt__error(CKPT_ECORRUPT,
                       "%s: tensor '%s': string lengths longer than the "
                       "record (%zu bytes)",
                       r->path.ptr, entry_name(&sn, e), size);
}

/* Element count of a validated entry. */
static uint64_t element_count(const ckpt_tensor_entry *e)
{
    int64_t n = 0;
    if (ckpt_shape_num_elements(&n, &e->shape) < 0 || n < 0)
        return UINT64_MAX;
    return (uint64_t)n;
}

/* Compare the record's CRC with the entry's. Variant records use a
 * per-element running CRC this library does not decode: not checked. */
/* The stored (masked) CRC of `e` against the computed one. */
static int compare_crc(const ckpt_bundle_reader *r, const ckpt_tensor_entry *e,
                       uint32_t crc)
{
    shown_name sn;
    if (ckpt__crc32c_mask(crc) != e->crc32c)
        return ckpt__error(CKPT_ECORRUPT,
                           "%s: tensor '%s': checksum mismatch (stored "
                           "0x%08x, computed 0x%08x)",
                           r->path.ptr, entry_name(&sn, e), e->crc32c,
                           ckpt__crc32c_mask(crc));
    return 0;
}

static int check_record_crc(const ckpt_bundle_reader *r,
                            const ckpt_tensor_entry *e, const uint8_t *rec,
                            size_t n)
{
    uint32_t crc;
    int err;
    if (e->dtype == CKPT_DT_VARIANT)
        return 0;
    if (e->dtype == CKPT_DT_STRING) {
        if (n == 0)
            return 0; /* TensorFlow: an empty record is an empty tensor */
        err = scan_strings(r, e, rec, n, element_count(e), NULL, &crc);
        if (err < 0)
            return err;
    } else {
        crc = ckpt__crc32c(rec, n);
    }
    return compare_crc(r, e, crc);
}

/* Append the record to `out`. */
static int load_record(ckpt_bundle_reader *r, const ckpt_tensor_entry *e,
                       ckpt_buf *out, bool check_crc)
{
    struct rshard *s;
    uint8_t *dst;
    int err = locate(r, e, &s);
    if (err < 0)
        return err;
    /* e->size now fits in the data file, so the allocation is justified. */
    err = ckpt__buf_grow(out, (size_t)e->size);
    if (err < 0)
        return err;
    dst = (uint8_t *)out->ptr + out->size;
    err = read_into(r, e, dst, NULL);
    if (err == 0 && check_crc)
        err = check_record_crc(r, e, dst, (size_t)e->size);
    if (err < 0) {
        out->ptr[out->size] = '\0';
        return err;
    }
    out->size += (size_t)e->size;
    out->ptr[out->size] = '\0';
    return 0;
}

int ckpt_bundle_reader_read_record(ckpt_bundle_reader *r,
                                   const ckpt_tensor_entry *entry,
                                   ckpt_buf *out)
{
    CKPT__CHECK_ARG(r);
    CKPT__CHECK_ARG(entry);
    CKPT__CHECK_ARG(out);
    return load_record(r, entry, out, !r->skip_crc);
}

/* Entry `name` for a read, or an error naming what is wrong. */
static int find_for_read(const ckpt_tensor_entry **out, ckpt_bundle_reader *r,
                         const char *name)
{
    shown_name sn;
    int err = ckpt_bundle_reader_find(out, r, name);
    if (err < 0)
        return err;
    if ((*out)->num_slices > 0)
        return ckpt__error(CKPT_ENOTSUP,
                           "%s: tensor '%s': partitioned tensor (%d slices) "
                           "not supported",
                           r->index_path.ptr, entry_name(&sn, *out),
                           (*out)->num_slices);
    return 0;
}

/* The entry of a fixed-size tensor `name` that may be read into `dst` of
 * `dst_size` bytes, or an error naming what is wrong. */
static int check_read_target(const ckpt_tensor_entry **out,
                             ckpt_bundle_reader *r, const char *name,
                             const void *dst, size_t dst_size)
{
    const ckpt_tensor_entry *e;
    shown_name sn;
    uint64_t want;
    int err;

    if (!name)
        return ckpt__error(CKPT_EINVAL, "bundle read: NULL tensor name");
    err = ckpt_bundle_reader_find(&e, r, name);
    if (err < 0)
        return err;
    if (e->dtype == CKPT_DT_STRING && e->num_slices > 0)
        return ckpt__error(CKPT_ENOTSUP,
                           "%s: tensor '%s': partitioned string tensor (%d "
                           "slices) not supported",
                           r->index_path.ptr, entry_name(&sn, e),
                           e->num_slices);
    if (e->dtype == CKPT_DT_STRING)
        return ckpt__error(CKPT_ENOTSUP,
                           "%s: tensor '%s': a string tensor (read it with "
                           "ckpt_bundle_reader_read_strings)",
                           r->index_path.ptr, entry_name(&sn, e));
    if (ckpt_dtype_size(e->dtype) == 0)
        return ckpt__error(CKPT_ENOTSUP,
                           "%s: tensor '%s': dtype %d (%s) is not supported",
                           r->index_path.ptr, entry_name(&sn, e), e->dtype,
                           ckpt__dtype_label(e->dtype));
    /* A partitioned tensor's entry has no record: its size is the full
     * shape's. */
    want = (uint64_t)e->size;
    if (e->num_slices > 0) {
        int64_t full = 0;
        if (ckpt_tensor_byte_size(&full, e->dtype, &e->shape) < 0)
            return ckpt__error(CKPT_ECORRUPT,
                               "%s: tensor '%s': byte size of the shape "
                               "overflows",
                               r->index_path.ptr, entry_name(&sn, e));
        want = (uint64_t)full;
    }
    if ((uint64_t)dst_size != want || (!dst && dst_size > 0))
        return ckpt__error(CKPT_EINVAL,
                           "%s: tensor '%s': destination of %zu bytes, the "
                           "tensor has %llu",
                           r->index_path.ptr, entry_name(&sn, e), dst_size,
                           (unsigned long long)want);
    *out = e;
    return 0;
}

/* Bring a record read into `dst` to host byte order. */
static void to_host_order(const ckpt_bundle_reader *r,
                          const ckpt_tensor_entry *e, void *dst)
{
    size_t width = ckpt__record_word_width(e->dtype);
    if (r->endianness != HOST_ENDIANNESS && width > 1)
        ckpt__record_swap_words(dst, (size_t)e->size, width);
}

/* Read the checked entry `e` into dst through the data file's ckpt_file. */
static int read_checked(ckpt_bundle_reader *r, const ckpt_tensor_entry *e,
                        void *dst)
{
    uint32_t crc = 0;
    int err = read_into(r, e, dst, r->skip_crc ? NULL : &crc);
    if (err == 0 && !r->skip_crc)
        err = compare_crc(r, e, crc);
    if (err == 0)
        to_host_order(r, e, dst);
    return err;
}

/* What the partitioned-tensor code needs to read `e`. */
static int partitioned_read_of(ckpt__partitioned_read *pr,
                               ckpt_bundle_reader *r,
                               const ckpt_tensor_entry *e)
{
    memset(pr, 0, sizeof(*pr));
    pr->reader = r;
    pr->index_path = r->index_path.ptr;
    pr->entry = e;
    pr->swap = r->endianness != HOST_ENDIANNESS;
    return ckpt__sliced_entries_get(&r->sliced, (size_t)(e - r->entries),
                                    &pr->proto, &pr->proto_len);
}

/* Assemble a partitioned tensor from its slice entries. */
static int read_partitioned(ckpt_bundle_reader *r, const ckpt_tensor_entry *e,
                            void *dst, size_t dst_size)
{
    ckpt__partitioned_read pr;
    int err = partitioned_read_of(&pr, r, e);
    if (err < 0)
        return err;
    return ckpt__bundle_read_partitioned(&pr, dst, dst_size);
}

int ckpt_bundle_reader_data_size(ckpt_bundle_reader *r,
                                 const ckpt_tensor_entry *entry,
                                 uint64_t *bytes)
{
    ckpt__partitioned_read pr;
    shown_name sn;
    int err;
    CKPT__CHECK_ARG(bytes);
    *bytes = 0;
    CKPT__CHECK_ARG(r);
    CKPT__CHECK_ARG(entry);
    if (entry < r->entries || entry >= r->entries + r->count)
        return ckpt__error(CKPT_EINVAL,
                           "ckpt_bundle_reader_data_size: the entry is not "
                           "one of %s",
                           r->index_path.ptr);
    if (entry->num_slices == 0) {
        struct rshard *s;
        err = locate(r, entry, &s);
        if (err == 0)
            *bytes = (uint64_t)entry->size;
        return err;
    }
    if (entry->dtype == CKPT_DT_STRING || ckpt_dtype_size(entry->dtype) == 0)
        return ckpt__error(CKPT_ENOTSUP,
                           "%s: tensor '%s': a partitioned %s tensor is not "
                           "assembled",
                           r->index_path.ptr, entry_name(&sn, entry),
                           ckpt__dtype_label(entry->dtype));
    err = partitioned_read_of(&pr, r, entry);
    if (err == 0)
        err = ckpt__bundle_partitioned_size(&pr, bytes);
    return err;
}

int ckpt_bundle_reader_read(ckpt_bundle_reader *r, const char *name, void *dst,
                            size_t dst_size)
{
    const ckpt_tensor_entry *e;
    int err;

    CKPT__CHECK_ARG(r);
    CKPT__CHECK_ARG(name);
    err = check_read_target(&e, r, name, dst, dst_size);
    if (err < 0)
        return err;
    if (e->num_slices > 0)
        return read_partitioned(r, e, dst, dst_size);
    return read_checked(r, e, dst);
}

/* ---- several tensors at once -------------------------------------------- */

/* Below this many bytes from one data file, starting the direct stream's
 * threads costs more than it saves. */
#define DIRECT_READ_MIN ((uint64_t)8 << 20)

typedef struct planned_read {
    const ckpt_tensor_entry *e;
    void *dst;
    size_t dst_size;
} planned_read;

/* Records in file order; partitioned tensors (assembled from pieces
 * elsewhere) last. */
static int by_shard_then_offset(const void *a, const void *b)
{
    const ckpt_tensor_entry *x = ((const planned_read *)a)->e;
    const ckpt_tensor_entry *y = ((const planned_read *)b)->e;
    if ((x->num_slices > 0) != (y->num_slices > 0))
        return x->num_slices > 0 ? 1 : -1;
    if (x->num_slices > 0)
        return 0;
    if (x->shard_id != y->shard_id)
        return x->shard_id < y->shard_id ? -1 : 1;
    if (x->offset != y->offset)
        return x->offset < y->offset ? -1 : 1;
    if (x != y) /* requests for one tensor end up side by side */
        return x < y ? -1 : 1;
    return 0;
}

/* Stream the records plan[0..n) of one data file with
 * ckpt__read_extents_report (keeping its report in r->stream). CKPT_ENOTSUP
 * (nothing read, last error left as it was) when that is not possible or
 * not worth it. */
static int read_group_direct(ckpt_bundle_reader *r, planned_read *plan,
                             size_t n)
{
    ckpt__saved_error saved;
    ckpt__extent *ext;
    size_t *first_of; /* plan index whose extent request i shares */
    size_t next = 0;
    uint64_t total = 0, end = 0;
    struct rshard *s;
    int err;

    for (size_t i = 0; i < n; i++) {
        const ckpt_tensor_entry *e = plan[i].e;
        if (i > 0 && e == plan[i - 1].e)
            continue; /* the same tensor again: copied after the read */
        if (e->size > 0 && (uint64_t)e->offset < end)
            return CKPT_ENOTSUP; /* overlapping records: read one by one */
        if (e->size > 0)
            end = (uint64_t)(e->offset + e->size);
        total += (uint64_t)e->size;
    }
    if (total < DIRECT_READ_MIN)
        return CKPT_ENOTSUP;
    ext = ckpt__calloc(n, sizeof(*ext));
    first_of = ckpt__calloc(n, sizeof(*first_of));
    if (!ext || !first_of) {
        err = ckpt__error_oom();
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && plan[i].e == plan[i - 1].e) {
            first_of[i] = first_of[i - 1];
            continue;
        }
        first_of[i] = i;
        ext[next].offset = (uint64_t)plan[i].e->offset;
        ext[next].size = (uint64_t)plan[i].e->size;
        ext[next].dst = plan[i].dst;
        next++;
    }
    err = locate(r, plan[0].e, &s); /* sets r->path to the data file */
    ckpt__error_save(&saved);
    if (err == 0)
        err = ckpt__read_extents_report(r->fs, r->path.ptr, ext, next,
                                        &r->stream);
    if (err == 0)
        r->stream_bytes = total;
    if (err == CKPT_ENOTSUP)
        ckpt__error_restore(&saved);
    for (size_t i = 0, k = 0; i < n && err == 0; i++) {
        if (first_of[i] != i) {
            if (plan[i].dst_size > 0)
                memcpy(plan[i].dst, plan[first_of[i]].dst, plan[i].dst_size);
            continue;
        }
        if (!r->skip_crc)
            err = compare_crc(r, plan[i].e, ext[k].crc);
        if (err == 0)
            to_host_order(r, plan[i].e, plan[i].dst);
        k++;
    }
done:
    ckpt__free(first_of);
    ckpt__free(ext);
    return err;
}

int ckpt_bundle_reader_read_many(ckpt_bundle_reader *r,
                                 const ckpt_read_request *reqs, size_t n)
{
    planned_read *plan = NULL;
    int err = 0;

    CKPT__CHECK_ARG(r);
    if (n > 0)
        CKPT__CHECK_ARG(reqs);
    if (n == 0)
        return 0;
    memset(&r->stream, 0, sizeof(r->stream));
    r->stream_bytes = 0;
    plan = ckpt__calloc(n, sizeof(*plan));
    if (!plan)
        return ckpt__error_oom();
    for (size_t i = 0; i < n && err == 0; i++) {
        struct rshard *s;
        plan[i].dst = reqs[i].dst;
        plan[i].dst_size = reqs[i].dst_size;
        if (!reqs[i].name) {
            err = ckpt__error(CKPT_EINVAL,
                              "bundle read_many: request %zu has no name", i);
            break;
        }
        err = check_read_target(&plan[i].e, r, reqs[i].name, reqs[i].dst,
                                reqs[i].dst_size);
        if (err == 0 && plan[i].e->num_slices == 0)
            err = locate(r, plan[i].e, &s);
    }
    if (err < 0)
        goto done;
    qsort(plan, n, sizeof(*plan), by_shard_then_offset);
    for (size_t start = 0, end; start < n && err == 0; start = end) {
        if (plan[start].e->num_slices > 0) {
            end = start + 1;
            err = read_partitioned(r, plan[start].e, plan[start].dst,
                                   plan[start].dst_size);
            continue;
        }
        for (end = start + 1; end < n && plan[end].e->num_slices == 0 &&
                              plan[end].e->shard_id == plan[start].e->shard_id;)
            end++;
        err = read_group_direct(r, plan + start, end - start);
        if (err != CKPT_ENOTSUP)
            continue;
        err = 0;
        for (size_t i = start; i < end && err == 0; i++)
            err = read_checked(r, plan[i].e, plan[i].dst);
    }
done:
    ckpt__free(plan);
    return err;
}

void ckpt_string_array_dispose(ckpt_string_array *a)
{
    if (!a)
        return;
    ckpt__free(a->strings);
    ckpt__free(a->storage_);
    a->strings = NULL;
    a->storage_ = NULL;
    a->count = 0;
}

static int read_strings_entry(ckpt_bundle_reader *r, const ckpt_tensor_entry *e,
                              ckpt_string_array *out, bool check_crc)
{
    ckpt_buf rec = CKPT_BUF_INIT;
    ckpt_slice *strings = NULL;
    shown_name sn;
    uint64_t count = element_count(e);
    uint32_t crc = 0;
    int err = load_record(r, e, &rec, false);
    if (err < 0)
        goto done;
    if (rec.size == 0)
        goto done; /* TensorFlow: an empty record is an empty tensor */
    /* Bound the element count by the record before allocating. */
    if (count > rec.size) {
        err = ckpt__error(CKPT_ECORRUPT,
                          "%s: tensor '%s': %llu strings cannot fit in %zu "
                          "bytes",
                          r->path.ptr, entry_name(&sn, e),
                          (unsigned long long)count, rec.size);
        goto done;
    }
    strings = ckpt__calloc(count ? (size_t)count : 1, sizeof(*strings));
    if (!strings) {
        err = ckpt__error_oom();
        goto done;
    }
    err = scan_strings(r, e, (const uint8_t *)rec.ptr, rec.size, count, strings,
                       &crc);
    if (err == 0 && check_crc && ckpt__crc32c_mask(crc) != e->crc32c)
        err = ckpt__error(CKPT_ECORRUPT,
                          "%s: tensor '%s': checksum mismatch (stored "
                          "0x%08x, computed 0x%08x)",
                          r->path.ptr, entry_name(&sn, e), e->crc32c,
                          ckpt__crc32c_mask(crc));
done:
    if (err < 0 || rec.size == 0) {
        ckpt__free(strings);
        ckpt_buf_dispose(&rec);
        return err;
    }
    out->strings = strings;
    out->count = (size_t)count;
    out->storage_ = rec.ptr; /* the strings point into the record */
    return 0;
}

int ckpt_bundle_reader_read_strings(ckpt_bundle_reader *r, const char *name,
                                    ckpt_string_array *out)
{
    const ckpt_tensor_entry *e;
    shown_name sn;
    int err;

    CKPT__CHECK_ARG(out);
    memset(out, 0, sizeof(*out));
    CKPT__CHECK_ARG(r);
    CKPT__CHECK_ARG(name);
    err = find_for_read(&e, r, name);
    if (err < 0)
        return err;
    if (e->dtype != CKPT_DT_STRING)
        return ckpt__error(
            CKPT_EINVAL, "%s: tensor '%s': dtype is %s, not string",
            r->index_path.ptr, entry_name(&sn, e), ckpt__dtype_label(e->dtype));
    return read_strings_entry(r, e, out, !r->skip_crc);
}

int ckpt__bundle_reader_stream_check(ckpt_bundle_reader *r,
                                     const ckpt_tensor_entry *e)
{
    ckpt_record_stream *s = NULL;
    const void *data;
    size_t n = 1;
    bool skip = r->skip_crc;
    int err;
    r->skip_crc = false; /* checking is comparing the checksums */
    err = ckpt_record_stream_open(&s, r, e, 0);
    r->skip_crc = skip;
    while (err == 0 && n > 0)
        err = ckpt_record_stream_next(s, &data, &n);
    ckpt_record_stream_free(s);
    return err;
}

int ckpt_bundle_reader_check(ckpt_bundle_reader *r,
                             const ckpt_tensor_entry *entry)
{
    ckpt__partitioned_read pr;
    shown_name sn;
    int err;
    CKPT__CHECK_ARG(r);
    CKPT__CHECK_ARG(entry);
    if (entry < r->entries || entry >= r->entries + r->count)
        return ckpt__error(CKPT_EINVAL,
                           "ckpt_bundle_reader_check: the entry is not one "
                           "of %s",
                           r->index_path.ptr);
    if (entry->num_slices == 0 && entry->dtype == CKPT_DT_STRING) {
        ckpt_string_array a = {NULL, 0, NULL};
        err = read_strings_entry(r, entry, &a, true);
        ckpt_string_array_dispose(&a);
        return err;
    }
    if (entry->num_slices == 0)
        return ckpt__bundle_reader_stream_check(r, entry);
    if (entry->dtype == CKPT_DT_STRING || ckpt_dtype_size(entry->dtype) == 0)
        return ckpt__error(CKPT_ENOTSUP,
                           "%s: tensor '%s': a partitioned %s tensor is not "
                           "assembled",
                           r->index_path.ptr, entry_name(&sn, entry),
                           ckpt__dtype_label(entry->dtype));
    err = partitioned_read_of(&pr, r, entry);
    if (err == 0)
        err = ckpt__bundle_check_partitioned(&pr);
    return err;
}

int ckpt_bundle_reader_verify(ckpt_bundle_reader *r)
{
    ckpt_buf rec = CKPT_BUF_INIT;
    int err = 0;

    CKPT__CHECK_ARG(r);
    for (size_t i = 0; err == 0 && i < r->count; i++) {
        const ckpt_tensor_entry *e = &r->entries[i];
        if (e->num_slices > 0)
            continue;
        if (e->dtype != CKPT_DT_STRING) {
            /* bounded memory at any size */
            err = ckpt__bundle_reader_stream_check(r, e);
            continue;
        }
        ckpt__buf_clear(&rec);
        /* string records are checked by scan_strings through the CRC */
        err = load_record(r, e, &rec, true);
    }
    ckpt_buf_dispose(&rec);
    return err;
}

const ckpt__read_report *ckpt__bundle_reader_stream(const ckpt_bundle_reader *r,
                                                    uint64_t *bytes)
{
    if (bytes)
        *bytes = r->stream_bytes;
    return &r->stream;
}
