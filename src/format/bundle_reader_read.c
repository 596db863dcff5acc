/* format/bundle_reader_read.c - reading one tensor whole with
 * ckpt_bundle_reader: a fixed-size tensor into the caller's buffer
 * (ckpt_bundle_reader_read), a partitioned one assembled from its pieces,
 * a record's raw bytes (read_record), a string tensor's elements
 * (read_strings, its layout and length checksum walked by scan_strings),
 * and a tensor's data size. */
#include "ckpt/bundle.h"

#include "common/internal.h"
#include "format/bundle_reader_internal.h"
#include "format/bundle_slices.h"
#include "format/bundle_text.h"
#include "format/string_record.h"
#include "util/coding.h"
#include "util/crc32c.h"

#include <string.h>

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
    ckpt__shown_name sn;
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
                           r->path.ptr, ckpt__bundle_entry_shown(&sn, e));
    stored = ckpt__string_checksum_get(p, big);
    if (stored != ckpt__crc32c_mask(crc))
        return ckpt__error(CKPT_ECORRUPT,
                           "%s: tensor '%s': string length checksum mismatch "
                           "(stored 0x%08x, computed 0x%08x)",
                           r->path.ptr, ckpt__bundle_entry_shown(&sn, e),
                           stored, ckpt__crc32c_mask(crc));
    if ((uint64_t)(end - p) - 4 != sum)
        return ckpt__error(CKPT_ECORRUPT,
                           "%s: tensor '%s': string record is %zu bytes, its "
                           "lengths account for %llu",
                           r->path.ptr, ckpt__bundle_entry_shown(&sn, e), size,
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
                       r->path.ptr, ckpt__bundle_entry_shown(&sn, e), size);
}

/* Element count of a validated entry. */
static uint64_t element_count(const ckpt_tensor_entry *e)
{
    int64_t n = 0;
    if (ckpt_shape_num_elements(&n, &e->shape) < 0 || n < 0)
        return UINT64_MAX;
    return (uint64_t)n;
}

/* The record's CRC against the entry's. Variant records use a
 * per-element running CRC this library does not decode: not checked. */
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
    return ckpt__bundle_reader_compare_crc(r, e, crc);
}

/* Append the record to `out`. */
int ckpt__bundle_reader_load_record(ckpt_bundle_reader *r,
                                    const ckpt_tensor_entry *e, ckpt_buf *out,
                                    bool check_crc)
{
    struct ckpt__bundle_shard *s;
    uint8_t *dst;
    int err = ckpt__bundle_reader_locate(r, e, &s);
    if (err < 0)
        return err;
    /* e->size now fits in the data file, so the allocation is justified. */
    err = ckpt__buf_grow(out, (size_t)e->size);
    if (err < 0)
        return err;
    dst = (uint8_t *)out->ptr + out->size;
    err = ckpt__bundle_reader_read_into(r, e, dst, NULL);
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
    return ckpt__bundle_reader_load_record(r, entry, out, !r->skip_crc);
}

/* Whether entry `e` is a fixed-size tensor that may be read into `dst` of
 * `dst_size` bytes: 0, or an error naming what is wrong. */
static int check_read_target(ckpt_bundle_reader *r, const ckpt_tensor_entry *e,
                             const void *dst, size_t dst_size)
{
    ckpt__shown_name sn;
    uint64_t want;

    if (e->dtype == CKPT_DT_STRING && e->num_slices > 0)
        return ckpt__error(CKPT_ENOTSUP,
                           "%s: tensor '%s': partitioned string tensor (%d "
                           "slices) not supported",
                           r->index_path.ptr, ckpt__bundle_entry_shown(&sn, e),
                           e->num_slices);
    if (e->dtype == CKPT_DT_STRING)
        return ckpt__error(CKPT_ENOTSUP,
                           "%s: tensor '%s': a string tensor (read it with "
                           "ckpt_bundle_reader_read_strings)",
                           r->index_path.ptr, ckpt__bundle_entry_shown(&sn, e));
    if (ckpt_dtype_size(e->dtype) == 0)
        return ckpt__error(CKPT_ENOTSUP,
                           "%s: tensor '%s': dtype %d (%s) is not supported",
                           r->index_path.ptr, ckpt__bundle_entry_shown(&sn, e),
                           e->dtype, ckpt__dtype_label(e->dtype));
    /* A partitioned tensor's entry has no record: its size is the full
     * shape's. */
    want = (uint64_t)e->size;
    if (e->num_slices > 0) {
        int64_t full = 0;
        if (ckpt_tensor_byte_size(&full, e->dtype, &e->shape) < 0)
            return ckpt__error(CKPT_ECORRUPT,
                               "%s: tensor '%s': byte size of the shape "
                               "overflows",
                               r->index_path.ptr,
                               ckpt__bundle_entry_shown(&sn, e));
        want = (uint64_t)full;
    }
    if (!dst && dst_size > 0)
        return ckpt__error(CKPT_EINVAL,
                           "%s: tensor '%s': dst is NULL (the tensor has "
                           "%llu bytes)",
                           r->index_path.ptr, ckpt__bundle_entry_shown(&sn, e),
                           (unsigned long long)want);
    if ((uint64_t)dst_size != want) {
        /* its dtype and shape too: a buffer of the wrong type is the
         * usual cause (double[] for a float tensor) */
        char shape[256];
        ckpt_shape_format(shape, sizeof(shape), &e->shape);
        return ckpt__error(CKPT_EINVAL,
                           "%s: tensor '%s': destination of %zu bytes, the "
                           "tensor has %llu (%s %s)",
                           r->index_path.ptr, ckpt__bundle_entry_shown(&sn, e),
                           dst_size, (unsigned long long)want,
                           ckpt_dtype_name(e->dtype), shape);
    }
    return 0;
}

/* The entry of a fixed-size tensor `name` that may be read into `dst` of
 * `dst_size` bytes, or an error naming what is wrong. */
int ckpt__bundle_reader_read_target(ckpt_tensor_entry *out, size_t *at,
                                    ckpt_bundle_reader *r, const char *name,
                                    const void *dst, size_t dst_size)
{
    int err;

    if (!name)
        return ckpt__error(CKPT_EINVAL, "bundle read: NULL tensor name");
    err = ckpt__bundle_reader_lookup(out, at, r, name);
    if (err == 0)
        err = check_read_target(r, out, dst, dst_size);
    return err;
}

/* What the partitioned-tensor code needs to read `e`. */
int ckpt__bundle_reader_partitioned_read_of(ckpt__partitioned_read *pr,
                                            ckpt_bundle_reader *r,
                                            const ckpt_tensor_entry *e)
{
    size_t at;
    memset(pr, 0, sizeof(*pr));
    pr->reader = r;
    pr->index_path = r->index_path.ptr;
    pr->entry = e;
    pr->swap = ckpt__bundle_reader_swaps(r);
    if (!ckpt__entry_table_index_of(&r->tab, e, &at))
        return ckpt__error(CKPT_EINVAL, "%s: the entry is not one of its own",
                           r->index_path.ptr);
    return ckpt__sliced_entries_get(&r->sliced, at, &pr->proto, &pr->proto_len);
}

int ckpt__bundle_reader_assembly_of(ckpt__partitioned_read *pr,
                                    ckpt_bundle_reader *r,
                                    const ckpt_tensor_entry *e)
{
    ckpt__shown_name sn;
    if (e->dtype == CKPT_DT_STRING || ckpt_dtype_size(e->dtype) == 0)
        return ckpt__error(CKPT_ENOTSUP,
                           "%s: tensor '%s': a partitioned %s tensor is not "
                           "assembled",
                           r->index_path.ptr, ckpt__bundle_entry_shown(&sn, e),
                           ckpt__dtype_label(e->dtype));
    return ckpt__bundle_reader_partitioned_read_of(pr, r, e);
}

int ckpt__bundle_reader_has_record(const ckpt_bundle_reader *r,
                                   const ckpt_tensor_entry *e)
{
    ckpt__shown_name sn;
    if (e->num_slices > 0)
        return ckpt__error(CKPT_ENOTSUP,
                           "%s: tensor '%s': partitioned tensor (%d slices) "
                           "not supported",
                           r->index_path.ptr, ckpt__bundle_entry_shown(&sn, e),
                           e->num_slices);
    return 0;
}

int ckpt__bundle_reader_owns(const ckpt_bundle_reader *r,
                             const ckpt_tensor_entry *e, const char *call)
{
    size_t at;
    if (!ckpt__entry_table_owns(&r->tab, e, &at))
        return ckpt__error(CKPT_EINVAL, "%s: the entry is not one of %s", call,
                           r->index_path.ptr);
    return 0;
}

/* Assemble a partitioned tensor from its slice entries. */
int ckpt__bundle_reader_read_partitioned(ckpt_bundle_reader *r,
                                         const ckpt_tensor_entry *e, void *dst,
                                         size_t dst_size)
{
    ckpt__partitioned_read pr;
    int err = ckpt__bundle_reader_partitioned_read_of(&pr, r, e);
    if (err < 0)
        return err;
    return ckpt__bundle_read_partitioned(&pr, dst, dst_size);
}

int ckpt_bundle_reader_data_size(ckpt_bundle_reader *r,
                                 const ckpt_tensor_entry *entry,
                                 uint64_t *bytes)
{
    ckpt__partitioned_read pr;
    int err;
    CKPT__CHECK_ARG(bytes);
    *bytes = 0;
    CKPT__CHECK_ARG(r);
    CKPT__CHECK_ARG(entry);
    err = ckpt__bundle_reader_owns(r, entry, "ckpt_bundle_reader_data_size");
    if (err < 0)
        return err;
    if (entry->num_slices == 0) {
        struct ckpt__bundle_shard *s;
        err = ckpt__bundle_reader_locate(r, entry, &s);
        if (err == 0)
            *bytes = (uint64_t)entry->size;
        return err;
    }
    err = ckpt__bundle_reader_assembly_of(&pr, r, entry);
    if (err == 0)
        err = ckpt__bundle_partitioned_size(&pr, bytes);
    return err;
}

/* Read the checked target `e`: assembled, or its record. */
static int read_target(ckpt_bundle_reader *r, const ckpt_tensor_entry *e,
                       void *dst, size_t dst_size)
{
    if (e->num_slices > 0)
        return ckpt__bundle_reader_read_partitioned(r, e, dst, dst_size);
    return ckpt__bundle_reader_read_checked(r, e, dst);
}

int ckpt_bundle_reader_read(ckpt_bundle_reader *r, const char *name, void *dst,
                            size_t dst_size)
{
    ckpt_tensor_entry e;
    int err;

    CKPT__CHECK_ARG(r);
    CKPT__CHECK_ARG(name);
    err = ckpt__bundle_reader_read_target(&e, NULL, r, name, dst, dst_size);
    if (err < 0)
        return err;
    return read_target(r, &e, dst, dst_size);
}

int ckpt_bundle_reader_read_entry(ckpt_bundle_reader *r,
                                  const ckpt_tensor_entry *entry, void *dst,
                                  size_t dst_size)
{
    int err;

    CKPT__CHECK_ARG(r);
    CKPT__CHECK_ARG(entry);
    err = ckpt__bundle_reader_owns(r, entry, "ckpt_bundle_reader_read_entry");
    if (err == 0)
        err = check_read_target(r, entry, dst, dst_size);
    if (err < 0)
        return err;
    return read_target(r, entry, dst, dst_size);
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

int ckpt__bundle_reader_read_strings_entry(ckpt_bundle_reader *r,
                                           const ckpt_tensor_entry *e,
                                           ckpt_string_array *out,
                                           bool check_crc)
{
    ckpt_buf rec = CKPT_BUF_INIT;
    ckpt_slice *strings = NULL;
    ckpt__shown_name sn;
    uint64_t count = element_count(e);
    uint32_t crc = 0;
    int err = ckpt__bundle_reader_load_record(r, e, &rec, false);
    if (err < 0)
        goto done;
    if (rec.size == 0)
        goto done; /* TensorFlow: an empty record is an empty tensor */
    /* Bound the element count by the record before allocating. */
    if (count > rec.size) {
        err = ckpt__error(CKPT_ECORRUPT,
                          "%s: tensor '%s': %llu strings cannot fit in %zu "
                          "bytes",
                          r->path.ptr, ckpt__bundle_entry_shown(&sn, e),
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
    if (err == 0 && check_crc)
        err = ckpt__bundle_reader_compare_crc(r, e, crc);
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

/* Read the string tensor `e` (found by name or given). */
static int read_strings_of(ckpt_bundle_reader *r, const ckpt_tensor_entry *e,
                           ckpt_string_array *out)
{
    ckpt__shown_name sn;
    int err = ckpt__bundle_reader_has_record(r, e);
    if (err < 0)
        return err;
    if (e->dtype != CKPT_DT_STRING)
        return ckpt__error(CKPT_EINVAL,
                           "%s: tensor '%s': dtype is %s, not string",
                           r->index_path.ptr, ckpt__bundle_entry_shown(&sn, e),
                           ckpt__dtype_label(e->dtype));
    return ckpt__bundle_reader_read_strings_entry(r, e, out, !r->skip_crc);
}

int ckpt_bundle_reader_read_strings(ckpt_bundle_reader *r, const char *name,
                                    ckpt_string_array *out)
{
    ckpt_tensor_entry e;
    int err;

    CKPT__CHECK_ARG(out);
    memset(out, 0, sizeof(*out));
    CKPT__CHECK_ARG(r);
    CKPT__CHECK_ARG(name);
    err = ckpt__bundle_reader_lookup(&e, NULL, r, name);
    if (err < 0)
        return err;
    return read_strings_of(r, &e, out);
}

int ckpt_bundle_reader_read_strings_entry(ckpt_bundle_reader *r,
                                          const ckpt_tensor_entry *entry,
                                          ckpt_string_array *out)
{
    int err;

    CKPT__CHECK_ARG(out);
    memset(out, 0, sizeof(*out));
    CKPT__CHECK_ARG(r);
    CKPT__CHECK_ARG(entry);
    err = ckpt__bundle_reader_owns(r, entry,
                                   "ckpt_bundle_reader_read_strings_entry");
    if (err < 0)
        return err;
    return read_strings_of(r, entry, out);
}
