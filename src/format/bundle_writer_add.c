/* format/bundle_writer_add.c - adding tensors to a ckpt_bundle_writer:
 * every name is checked once (not empty, not seen before, through a hash
 * set of the added names), then a fixed-size tensor (add), a piece of a
 * partitioned tensor (add_slice), a string tensor (add_strings, its record
 * laid out and checksummed here), an already encoded record (add_record)
 * or records the saver wrote itself (append_raw, add_written) becomes a
 * record in the current data file and an entry for the index that
 * bundle_writer.c writes at finish (a partitioned tensor's full entry is
 * encoded then, once, with all its pieces).
 *
 *   string record:  varint64 len[n] | fixed32 masked length CRC |
 *                   bytes s[0] .. s[n-1]       (docs/format.md §5.3) */
#include "ckpt/bundle.h"

#include "common/internal.h"
#include "format/bundle_proto.h"
#include "format/bundle_slices.h"
#include "format/bundle_writer_internal.h"
#include "format/bundle_writer_state.h"
#include "format/string_record.h"
#include "io/fs_internal.h"
#include "util/coding.h"
#include "util/crc32c.h"

#include <stdlib.h>
#include <string.h>

/* ---- names -----------------------------------------------------------------
 */

static size_t hash_name(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) {
        h ^= (uint8_t)s[i];
        h *= 0x100000001b3ull;
    }
    return (size_t)h;
}

/* Slot of `name` in the hash set: where it is, or the empty slot where it
 * would go. */
static size_t find_slot(const ckpt_bundle_writer *w, const char *name, size_t n)
{
    size_t mask = w->nslots - 1;
    size_t i = hash_name(name, n) & mask;
    while (w->slots[i] != 0) {
        const struct ckpt__writer_entry *e = &w->entries[w->slots[i] - 1];
        if (e->name_len == n && memcmp(e->name, name, n) == 0)
            return i;
        i = (i + 1) & mask;
    }
    return i;
}

static int grow_slots(ckpt_bundle_writer *w)
{
    size_t nslots = w->nslots ? w->nslots * 2 : 64;
    size_t *old = w->slots;
    size_t old_n = w->nslots;
    w->slots = ckpt__calloc(nslots, sizeof(*w->slots));
    if (!w->slots) {
        w->slots = old;
        return ckpt__error_oom();
    }
    w->nslots = nslots;
    for (size_t i = 0; i < old_n; i++) {
        if (old[i] != 0) {
            const struct ckpt__writer_entry *e = &w->entries[old[i] - 1];
            w->slots[find_slot(w, e->name, e->name_len)] = old[i];
        }
    }
    ckpt__free(old);
    return 0;
}

static int check_name(ckpt_bundle_writer *w, const char *name)
{
    size_t n;
    if (!name || !*name)
        return ckpt__error(CKPT_EINVAL, "%s: tensor name is %s", w->prefix,
                           name ? "empty" : "NULL");
    n = strlen(name);
    if (ckpt__check_name_length(w->prefix, name) < 0)
        return CKPT_EINVAL;
    if (w->nslots && w->slots[find_slot(w, name, n)] != 0)
        return ckpt__error(CKPT_EEXISTS, "%s: tensor '%s' was already added",
                           w->prefix, name);
    return 0;
}

/* Record an entry under the key `name` (`n` bytes followed by a NUL;
 * slice keys hold 0 bytes) with its proto. */
static int add_key(ckpt_bundle_writer *w, const char *name, size_t n,
                   const ckpt__bundle_entry *be)
{
    ckpt_buf proto = CKPT_BUF_INIT;
    struct ckpt__writer_entry *e;
    int err;

    if ((w->count + 1) * 2 > w->nslots) {
        err = grow_slots(w);
        if (err < 0)
            return err;
    }
    if (ckpt__reserve_one(&w->entries, &w->cap, w->count, sizeof(*w->entries),
                          64) < 0)
        return CKPT_ENOMEM;
    err = ckpt__bundle_entry_encode(&proto, be);
    if (err < 0)
        goto done;
    e = &w->entries[w->count];
    e->name = ckpt__malloc(n + 1 + proto.size);
    if (!e->name) {
        err = ckpt__error_oom();
        goto done;
    }
    memcpy(e->name, name, n + 1);
    if (proto.size)
        memcpy(e->name + n + 1, proto.ptr, proto.size);
    e->name_len = n;
    e->proto_len = proto.size;
    w->count++;
    w->slots[find_slot(w, name, n)] = w->count;
done:
    ckpt_buf_dispose(&proto);
    return err;
}

/* Record an entry for `name` (checked by check_name) with its proto. */
static int add_entry(ckpt_bundle_writer *w, const char *name,
                     const ckpt__bundle_entry *be)
{
    return add_key(w, name, strlen(name), be);
}

/* Replace the proto of entry `i` (a partitioned tensor's full entry). */
static int replace_proto(ckpt_bundle_writer *w, size_t i,
                         const ckpt__bundle_entry *be)
{
    ckpt_buf proto = CKPT_BUF_INIT;
    struct ckpt__writer_entry *e = &w->entries[i];
    char *p;
    int err = ckpt__bundle_entry_encode(&proto, be);
    if (err < 0)
        goto done;
    p = ckpt__realloc(e->name, e->name_len + 1 + proto.size);
    if (!p) {
        err = ckpt__error_oom();
        goto done;
    }
    memcpy(p + e->name_len + 1, proto.ptr, proto.size);
    e->name = p;
    e->proto_len = proto.size;
done:
    ckpt_buf_dispose(&proto);
    return err;
}

/* ---- adds
 * ------------------------------------------------------------------------ */

/* Validate the shape for tensor `name`; the element count to `out`. */
static int check_shape(ckpt_bundle_writer *w, const char *name,
                       const ckpt_shape *shape, int64_t *out)
{
    int err;
    if (!shape)
        return ckpt__error(CKPT_EINVAL, "%s: tensor '%s': NULL shape",
                           w->prefix, name);
    err = ckpt_shape_num_elements(out, shape);
    if (err < 0)
        return ckpt__error_prefix(err, "%s: tensor '%s'", w->prefix, name);
    return 0;
}

/* Fill the entry for a record about to be appended to the current shard. */
static void entry_init(const ckpt_bundle_writer *w, ckpt__bundle_entry *e,
                       int dtype, const ckpt_shape *shape)
{
    memset(e, 0, sizeof(*e));
    e->dtype = dtype;
    e->shape = *shape;
    e->shard_id = w->cur_shard;
    e->offset = (int64_t)w->shards[w->cur_shard].size;
}

/* Append a record whose CRC is known, pad, and record the entry. */
static int finish_record(ckpt_bundle_writer *w, const char *name,
                         ckpt__bundle_entry *e, uint64_t size, uint32_t crc)
{
    int err;
    e->size = (int64_t)size;
    e->crc32c = ckpt__crc32c_mask(crc);
    err = ckpt__bundle_writer_shard_pad(w);
    if (err == 0)
        err = add_entry(w, name, e);
    return err;
}

/* Checks of a fixed-size tensor's name, dtype, shape and byte size. */
static int check_fixed(ckpt_bundle_writer *w, const char *name, int dtype,
                       const ckpt_shape *shape, uint64_t nbytes)
{
    int64_t count, need;
    int err = check_name(w, name);
    if (err < 0)
        return err;
    if (dtype == CKPT_DT_STRING)
        return ckpt__error(CKPT_EINVAL,
                           "%s: tensor '%s': string tensors are added with "
                           "ckpt_bundle_writer_add_strings",
                           w->prefix, name);
    if (ckpt_dtype_size(dtype) == 0)
        return ckpt__error(CKPT_ENOTSUP,
                           "%s: tensor '%s': dtype %d (%s) is not supported",
                           w->prefix, name, dtype, ckpt__dtype_label(dtype));
    err = check_shape(w, name, shape, &count);
    if (err < 0)
        return err;
    if (ckpt__mul_overflow_i64(count, (int64_t)ckpt_dtype_size(dtype), &need) ||
        (uint64_t)need != nbytes)
        return ckpt__error(CKPT_EINVAL,
                           "%s: tensor '%s': %llu bytes given, a %s tensor "
                           "of %lld elements needs %lld",
                           w->prefix, name, (unsigned long long)nbytes,
                           ckpt__dtype_label(dtype), (long long)count,
                           (long long)need);
    return 0;
}

/* The start of every add of a named tensor: the writer must be open (an
 * error there leaves it as it is), then the tensor's checks. With `count`,
 * those of a tensor whose record the caller lays out or checks itself
 * (add_strings, add_record): check_name, then check_shape, the element
 * count to *count; without, check_fixed's for `nbytes` bytes. A failed
 * check ends the writer. */
static int begin_add(ckpt_bundle_writer *w, const char *name, int dtype,
                     const ckpt_shape *shape, uint64_t nbytes, int64_t *count)
{
    int err = ckpt__bundle_writer_check_open(w);
    if (err < 0)
        return err;
    if (!count) {
        err = check_fixed(w, name, dtype, shape, nbytes);
    } else {
        err = check_name(w, name);
        if (err == 0)
            err = check_shape(w, name, shape, count);
    }
    return ckpt__bundle_writer_fail(w, err);
}

int ckpt_bundle_writer_add(ckpt_bundle_writer *w, const char *name, int dtype,
                           const ckpt_shape *shape, const void *data,
                           size_t nbytes)
{
    ckpt__bundle_entry e;
    int err;
    CKPT__CHECK_ARG(w);
    err = begin_add(w, name, dtype, shape, nbytes, NULL);
    if (err < 0)
        return err;
    if (!data && nbytes > 0)
        return ckpt__bundle_writer_fail(
            w, ckpt__error(CKPT_EINVAL, "%s: tensor '%s': NULL data", w->prefix,
                           name));
    entry_init(w, &e, dtype, shape);
    err = ckpt__bundle_writer_shard_append(w, data, nbytes);
    if (err == 0)
        err = finish_record(w, name, &e, nbytes, ckpt__crc32c(data, nbytes));
    return ckpt__bundle_writer_fail(w, err);
}

/* The full entry of piece `p` of `name`: created, or its piece list in
 * the slice set grown by the piece (its proto is brought up to date once,
 * at finish: ckpt__bundle_writer_encode_partitioned, so that k pieces cost
 * O(k) to encode, not O(k^2)). */
static int add_full_entry(ckpt_bundle_writer *w, const char *name, int dtype,
                          const ckpt_shape *full_shape,
                          const ckpt__slice_piece *p, bool is_new, size_t i)
{
    ckpt__bundle_entry full;
    int err;
    if (is_new)
        i = w->count;
    err = ckpt__slice_set_append(&w->sliced, i, dtype, full_shape, p, &full);
    if (err < 0)
        return err;
    return is_new ? add_entry(w, name, &full) : 0;
}

int ckpt__bundle_writer_encode_partitioned(ckpt_bundle_writer *w)
{
    int err = 0;
    for (size_t k = 0; err == 0 && k < w->sliced.count; k++) {
        ckpt__bundle_entry full;
        size_t i;
        ckpt__slice_set_describe(&w->sliced, k, &i, &full);
        err = replace_proto(w, i, &full);
    }
    return err;
}

int ckpt_bundle_writer_add_slice(ckpt_bundle_writer *w, const char *name,
                                 int dtype, const ckpt_shape *full_shape,
                                 const ckpt_slice_extent *extents,
                                 const void *data, size_t nbytes)
{
    ckpt__slice_piece piece;
    ckpt__bundle_entry e;
    size_t slot = 0;
    int err;
    CKPT__CHECK_ARG(w);
    err = ckpt__bundle_writer_check_open(w);
    if (err < 0)
        return err;
    err = ckpt__slice_piece_prepare(&piece, w->prefix, name, dtype, full_shape,
                                    extents, data, nbytes);
    if (err == 0 && piece.whole) {
        ckpt__slice_piece_dispose(&piece);
        return ckpt_bundle_writer_add(w, name, dtype, full_shape, data, nbytes);
    }
    if (err == 0 && w->nslots) {
        slot = w->slots[find_slot(w, name, strlen(name))];
        if (w->slots[find_slot(w, piece.key.ptr, piece.key.size)] != 0)
            err = ckpt__error(CKPT_EEXISTS,
                              "%s: tensor '%s': this piece was already added",
                              w->prefix, name);
    }
    if (err == 0)
        err = ckpt__slice_set_check(&w->sliced, w->prefix, name,
                                    slot ? slot - 1 : 0, slot == 0, dtype,
                                    full_shape, &piece);
    if (err == 0) {
        entry_init(w, &e, dtype, &piece.shape);
        err = ckpt__bundle_writer_shard_append(w, data, nbytes);
    }
    if (err == 0) {
        e.size = (int64_t)nbytes;
        e.crc32c = ckpt__crc32c_mask(ckpt__crc32c(data, nbytes));
        err = ckpt__bundle_writer_shard_pad(w);
    }
    if (err == 0)
        err = add_full_entry(w, name, dtype, full_shape, &piece, slot == 0,
                             slot ? slot - 1 : 0);
    if (err == 0)
        err = add_key(w, piece.key.ptr, piece.key.size, &e);
    ckpt__slice_piece_dispose(&piece);
    return ckpt__bundle_writer_fail(w, err);
}

int ckpt__bundle_writer_append_raw(ckpt_bundle_writer *w, const void *data,
                                   size_t n)
{
    struct ckpt__writer_shard *s;
    int err = ckpt__bundle_writer_check_open(w);
    if (err < 0)
        return err;
    if (!data && n > 0)
        return ckpt__bundle_writer_fail(
            w, ckpt__error(CKPT_EINVAL, "%s: NULL data", w->prefix));
    s = &w->shards[w->cur_shard];
    /* Straight to the fs, so an aligned buffer stays aligned. */
    err = ckpt__bundle_writer_shard_flush(w, s);
    if (err == 0 && n > 0)
        err = ckpt__fs_write(w->fs, s->file, s->tmp_path.ptr, data, n);
    if (err == 0)
        s->size += n;
    return ckpt__bundle_writer_fail(w, err);
}

int ckpt__bundle_writer_add_written(ckpt_bundle_writer *w, const char *name,
                                    int dtype, const ckpt_shape *shape,
                                    uint64_t offset, uint64_t size,
                                    uint32_t masked_crc)
{
    ckpt__bundle_entry e;
    uint64_t written;
    int err = begin_add(w, name, dtype, shape, size, NULL);
    if (err < 0)
        return err;
    written = w->shards[w->cur_shard].size;
    if (offset > written || size > written - offset)
        return ckpt__bundle_writer_fail(
            w,
            ckpt__error(CKPT_EINVAL,
                        "%s: tensor '%s': record [%llu, +%llu) "
                        "lies beyond the %llu bytes written",
                        w->prefix, name, (unsigned long long)offset,
                        (unsigned long long)size, (unsigned long long)written));
    entry_init(w, &e, dtype, shape);
    e.offset = (int64_t)offset;
    e.size = (int64_t)size;
    e.crc32c = masked_crc;
    return ckpt__bundle_writer_fail(w, add_entry(w, name, &e));
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define HOST_BIG_ENDIAN 1
#else
#define HOST_BIG_ENDIAN 0
#endif

int ckpt_bundle_writer_add_strings(ckpt_bundle_writer *w, const char *name,
                                   const ckpt_shape *shape,
                                   const ckpt_slice *strings, size_t n)
{
    ckpt_buf head = CKPT_BUF_INIT;
    ckpt__bundle_entry e;
    int64_t count;
    uint64_t total;
    uint32_t crc = 0;
    uint32_t masked;
    uint8_t word[8];
    int err;
    CKPT__CHECK_ARG(w);
    err = begin_add(w, name, CKPT_DT_STRING, shape, 0, &count);
    if (err < 0)
        return err;
    if ((uint64_t)count != (uint64_t)n)
        return ckpt__bundle_writer_fail(
            w, ckpt__error(CKPT_EINVAL,
                           "%s: tensor '%s': %zu strings given, the "
                           "shape has %lld elements",
                           w->prefix, name, n, (long long)count));
    if (!strings && n > 0)
        return ckpt__bundle_writer_fail(
            w, ckpt__error(CKPT_EINVAL, "%s: tensor '%s': NULL strings",
                           w->prefix, name));
    for (size_t i = 0; i < n; i++) {
        if (!strings[i].ptr && strings[i].len > 0)
            return ckpt__bundle_writer_fail(
                w,
                ckpt__error(CKPT_EINVAL, "%s: tensor '%s': string %zu is NULL",
                            w->prefix, name, i));
        err = ckpt__put_varint64(&head, strings[i].len);
        if (err < 0)
            goto done;
        crc = ckpt__string_length_crc(crc, strings[i].len, HOST_BIG_ENDIAN);
    }
    masked = ckpt__crc32c_mask(crc);
    ckpt__string_checksum_put(word, masked, HOST_BIG_ENDIAN);
    err = ckpt__buf_put(&head, word, 4);
    if (err < 0)
        goto done;
    crc = ckpt__crc32c_extend(crc, word, 4);
    total = head.size;
    for (size_t i = 0; i < n; i++) {
        if (ckpt__add_overflow_u64(total, strings[i].len, &total) ||
            total > INT64_MAX) {
            err = ckpt__error(CKPT_EINVAL, "%s: tensor '%s': too many bytes",
                              w->prefix, name);
            goto done;
        }
    }
    entry_init(w, &e, CKPT_DT_STRING, shape);
    err = ckpt__bundle_writer_shard_append(w, head.ptr, head.size);
    for (size_t i = 0; err == 0 && i < n; i++) {
        crc = ckpt__crc32c_extend(crc, strings[i].ptr, strings[i].len);
        err =
            ckpt__bundle_writer_shard_append(w, strings[i].ptr, strings[i].len);
    }
    if (err == 0)
        err = finish_record(w, name, &e, total, crc);
done:
    ckpt_buf_dispose(&head);
    return ckpt__bundle_writer_fail(w, err);
}

/* Check that `rec` is a well-formed string record of `count` elements
 * (layout and length checksum) and compute its CRC as TensorFlow defines
 * it: the length words in place of the varints, then the rest. */
static int string_record_crc(const ckpt_bundle_writer *w, const char *name,
                             const uint8_t *rec, size_t len, int64_t count,
                             uint32_t *crc_out)
{
    const uint8_t *p = rec;
    const uint8_t *end = rec + len;
    uint64_t sum = 0;
    uint32_t crc = 0;
    uint32_t stored;
    if (count == 0 && len == 0) {
        *crc_out = 0; /* TensorFlow reads an empty record as no strings */
        return 0;
    }
    for (int64_t i = 0; i < count; i++) {
        uint64_t l;
        if (!ckpt__get_varint64(&p, end, &l) ||
            ckpt__add_overflow_u64(sum, l, &sum))
            goto bad;
        crc = ckpt__string_length_crc(crc, l, HOST_BIG_ENDIAN);
    }
    if ((size_t)(end - p) < 4 || (uint64_t)(end - p) - 4 != sum)
        goto bad;
    stored = ckpt__string_checksum_get(p, HOST_BIG_ENDIAN);
    if (stored != ckpt__crc32c_mask(crc))
        return ckpt__error(CKPT_EINVAL,
                           "%s: tensor '%s': string record's length checksum "
                           "does not match",
                           w->prefix, name);
    *crc_out = ckpt__crc32c_extend(crc, p, (size_t)(end - p));
    return 0;
bad:
    return ckpt__error(CKPT_EINVAL,
                       "%s: tensor '%s': not a string record of %lld "
                       "elements",
                       w->prefix, name, (long long)count);
}

int ckpt_bundle_writer_add_record(ckpt_bundle_writer *w, const char *name,
                                  int dtype, const ckpt_shape *shape,
                                  const void *record, size_t record_len)
{
    ckpt__bundle_entry e;
    int64_t count, need;
    uint32_t crc = 0;
    int err;
    CKPT__CHECK_ARG(w);
    err = begin_add(w, name, dtype, shape, 0, &count);
    if (err < 0)
        return err;
    if (!record && record_len > 0)
        return ckpt__bundle_writer_fail(
            w, ckpt__error(CKPT_EINVAL, "%s: tensor '%s': NULL record",
                           w->prefix, name));
    if (dtype == CKPT_DT_STRING) {
        err = string_record_crc(w, name, record, record_len, count, &crc);
    } else if (ckpt_dtype_size(dtype) > 0) {
        if (ckpt__mul_overflow_i64(count, (int64_t)ckpt_dtype_size(dtype),
                                   &need) ||
            (uint64_t)need != (uint64_t)record_len)
            err = ckpt__error(CKPT_EINVAL,
                              "%s: tensor '%s': record of %zu bytes, a %s "
                              "tensor of %lld elements needs %lld",
                              w->prefix, name, record_len,
                              ckpt__dtype_label(dtype), (long long)count,
                              (long long)need);
    } else {
        err = ckpt__error(CKPT_ENOTSUP,
                          "%s: tensor '%s': dtype %d (%s) is not supported",
                          w->prefix, name, dtype, ckpt__dtype_label(dtype));
    }
    if (err < 0)
        return ckpt__bundle_writer_fail(w, err);
    entry_init(w, &e, dtype, shape);
    if (dtype != CKPT_DT_STRING)
        crc = ckpt__crc32c(record, record_len);
    err = ckpt__bundle_writer_shard_append(w, record, record_len);
    if (err == 0)
        err = finish_record(w, name, &e, record_len, crc);
    return ckpt__bundle_writer_fail(w, err);
}
