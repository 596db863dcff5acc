/* format/bundle_reader_data.c - the bundle reader's data files: each is
 * opened on first use and kept open (at most MAX_OPEN_SHARDS at once: one
 * is closed to open another; fewer when the process runs out of
 * descriptors first, ulimit -n: the reader then closes those it holds
 * until the open succeeds); a record is located in its data file
 * (checked to lie inside it), read with short reads looped over, its CRC
 * computed piece by piece while the bytes are in cache and compared with
 * the entry's, and brought to host byte order. Also the facts the record
 * stream and partitioned-tensor code ask of the reader
 * (bundle_reader_internal.h). */
#include "ckpt/bundle.h"

#include "common/internal.h"
#include "format/bundle_reader_internal.h"
#include "format/bundle_text.h"
#include "io/fs_internal.h"
#include "util/crc32c.h"

#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define HOST_ENDIANNESS CKPT__BUNDLE_BIG_ENDIAN
#else
#define HOST_ENDIANNESS CKPT__BUNDLE_LITTLE_ENDIAN
#endif

/* Add the tensor of `e` to the failure `err` of a call on its data file
 * r->path, and the file unless the message names it already (the
 * file-system wrappers name it; a custom open_read's own message may
 * not). */
static int name_tensor(ckpt_bundle_reader *r, const ckpt_tensor_entry *e,
                       int err)
{
    ckpt__shown_name sn;
    if (ckpt_error_last()->code == err &&
        ckpt__message_names(ckpt_error_last()->message, r->path.ptr))
        return ckpt__error_prefix(err, "tensor '%s'",
                                  ckpt__bundle_entry_shown(&sn, e));
    return ckpt__error_prefix(err, "%s: tensor '%s'", r->path.ptr,
                              ckpt__bundle_entry_shown(&sn, e));
}

/* Data files held open at once. A bundle may have thousands (one per rank
 * of a large job, or as many as a hostile index names), more than a
 * process may open: past this many, one is closed to open the next, and
 * opened again when a record in it is read. */
#define MAX_OPEN_SHARDS 64

/* Close one of the open data files (the one after the last closed, in
 * id order) to make room for another. */
static void close_one_shard(ckpt_bundle_reader *r)
{
    size_t i = r->next_close % r->nshards;
    ckpt__fs_close_quiet(r->fs, r->shards[i].file);
    memmove(&r->shards[i], &r->shards[i + 1],
            (r->nshards - i - 1) * sizeof(*r->shards));
    r->nshards--;
    r->next_close = i;
}

/* The open data file of `e`, opening it when it is not (its size measured
 * then). */
static int get_shard(ckpt_bundle_reader *r, const ckpt_tensor_entry *e,
                     struct ckpt__bundle_shard **out)
{
    size_t lo = 0, hi;
    struct ckpt__bundle_shard s;
    int err;

    hi = r->nshards;
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
    if (ckpt__reserve_one(&r->shards, &r->shards_cap, r->nshards,
                          sizeof(*r->shards), 4) < 0)
        return CKPT_ENOMEM;
    err =
        ckpt_bundle_data_path(&r->path, r->prefix, e->shard_id, r->num_shards);
    if (err < 0)
        return err;
    if (r->nshards == MAX_OPEN_SHARDS) {
        close_one_shard(r);
        if (r->next_close < lo)
            lo--; /* the closed one was before `e`'s place */
    }
    s.id = e->shard_id;
    s.file = NULL;
    s.size = 0;
    err = ckpt__fs_open_read_part(r->fs, &s.file, r->path.ptr);
    /* Out of descriptors (EMFILE/ENFILE, which the file system reports as
     * CKPT_ENOMEM) below MAX_OPEN_SHARDS, the process's limit being lower
     * (ulimit -n) or its other files many: close the data files this
     * reader holds, one at a time, until the open succeeds. */
    while (err == CKPT_ENOMEM && r->nshards > 0) {
        close_one_shard(r);
        if (r->next_close < lo)
            lo--;
        ckpt_error_clear();
        err = ckpt__fs_open_read_part(r->fs, &s.file, r->path.ptr);
    }
    if (err == 0)
        err = ckpt__fs_size(r->fs, s.file, r->path.ptr, &s.size);
    if (err < 0) {
        ckpt__fs_close_quiet(r->fs, s.file);
        return name_tensor(r, e, err);
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
int ckpt__bundle_reader_locate(ckpt_bundle_reader *r,
                               const ckpt_tensor_entry *e,
                               struct ckpt__bundle_shard **out)
{
    ckpt__shown_name sn;
    int err = ckpt__bundle_reader_has_record(r, e);
    if (err < 0)
        return err;
    if (e->shard_id < 0 || e->shard_id >= r->num_shards || e->offset < 0 ||
        e->size < 0 || e->offset > INT64_MAX - e->size)
        return ckpt__error(CKPT_EINVAL, "%s: tensor '%s': bad entry",
                           r->index_path.ptr, ckpt__bundle_entry_shown(&sn, e));
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
                           r->path.ptr, ckpt__bundle_entry_shown(&sn, e),
                           (long long)e->offset, (long long)e->size,
                           (unsigned long long)(*out)->size);
    return 0;
}

int ckpt__bundle_reader_check_record(ckpt_bundle_reader *r,
                                     const ckpt_tensor_entry *e)
{
    struct ckpt__bundle_shard *s;
    return ckpt__bundle_reader_locate(r, e, &s);
}

/* Read bytes [off, off + n) of the record of `e` from its data file `s`
 * (located), looping over short reads. */
static int read_located(ckpt_bundle_reader *r, struct ckpt__bundle_shard *s,
                        const ckpt_tensor_entry *e, uint64_t off, void *dst,
                        size_t n)
{
    ckpt__shown_name sn;
    size_t done = 0;
    while (done < n) {
        size_t got = 0;
        int err =
            ckpt__fs_pread(r->fs, s->file, r->path.ptr, (uint8_t *)dst + done,
                           n - done, (uint64_t)e->offset + off + done, &got);
        if (err < 0)
            return name_tensor(r, e, err);
        if (got == 0)
            return ckpt__error(CKPT_ECORRUPT,
                               "%s: tensor '%s': data file ended after %llu "
                               "of %lld bytes of the record",
                               r->path.ptr, ckpt__bundle_entry_shown(&sn, e),
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
    struct ckpt__bundle_shard *s;
    int err = ckpt__bundle_reader_locate(r, e, &s);
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
int ckpt__bundle_reader_read_into(ckpt_bundle_reader *r,
                                  const ckpt_tensor_entry *e, void *dst,
                                  uint32_t *crc)
{
    struct ckpt__bundle_shard *s;
    size_t done = 0;
    size_t n = (size_t)e->size;
    int err = ckpt__bundle_reader_locate(r, e, &s);
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

int ckpt__bundle_reader_compare_crc(const ckpt_bundle_reader *r,
                                    const ckpt_tensor_entry *e, uint32_t crc)
{
    ckpt__shown_name sn;
    if (ckpt__crc32c_mask(crc) != e->crc32c)
        return ckpt__error(CKPT_ECORRUPT,
                           "%s: tensor '%s': checksum mismatch (stored "
                           "0x%08x, computed 0x%08x)",
                           ckpt__bundle_reader_data_path(r),
                           ckpt__bundle_entry_shown(&sn, e), e->crc32c,
                           ckpt__crc32c_mask(crc));
    return 0;
}

/* Bring a record read into `dst` to the host's form. */
void ckpt__bundle_reader_to_host(const ckpt_bundle_reader *r,
                                 const ckpt_tensor_entry *e, void *dst)
{
    size_t width = ckpt__record_word_width(e->dtype);
    if (r->endianness != HOST_ENDIANNESS && width > 1)
        ckpt__record_swap_words(dst, (size_t)e->size, width);
    if (e->dtype == CKPT_DT_BOOL)
        ckpt__record_bools_to_host(dst, (size_t)e->size);
}

/* Read the checked entry `e` into dst through the data file's ckpt_file. */
int ckpt__bundle_reader_read_checked(ckpt_bundle_reader *r,
                                     const ckpt_tensor_entry *e, void *dst)
{
    uint32_t crc = 0;
    int err =
        ckpt__bundle_reader_read_into(r, e, dst, r->skip_crc ? NULL : &crc);
    if (err == 0 && !r->skip_crc)
        err = ckpt__bundle_reader_compare_crc(r, e, crc);
    if (err == 0)
        ckpt__bundle_reader_to_host(r, e, dst);
    return err;
}
