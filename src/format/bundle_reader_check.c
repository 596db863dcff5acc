/* format/bundle_reader_check.c - checking a bundle's data without keeping
 * it: ckpt_bundle_reader_check (one tensor: its record read through
 * ckpt__read_extents with no destination, each piece checksummed in a
 * small per-thread buffer, and its CRC compared; a string tensor's layout
 * walked; a partitioned tensor piece by piece) and ckpt_bundle_reader_verify
 * (every record of the bundle: the fixed-size ones, the pieces of
 * partitioned tensors included, of each data file in one such read, in
 * file order; then the string records, and where each partitioned
 * tensor's pieces lie). Memory does not grow with a record's size. */
#include "ckpt/bundle.h"

#include "common/internal.h"
#include "format/bundle_reader_internal.h"
#include "format/bundle_slices.h"
#include "format/bundle_text.h"
#include "io/buffered_read.h"
#include "util/crc32c.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Read the located records ext[0..n) of the data file `s` (r->path)
 * without keeping them: each one's CRC is computed into ext[i].crc. */
static int read_records(ckpt_bundle_reader *r, struct ckpt__bundle_shard *s,
                        ckpt__extent *ext, size_t n)
{
    return ckpt__read_extents(r->fs, r->path.ptr, s->file, ext, n, NULL);
}

/* The record of `e` as an extent to read without a destination. */
static ckpt__extent record_extent(const ckpt_tensor_entry *e)
{
    ckpt__extent x = {(uint64_t)e->offset, (uint64_t)e->size, NULL, 0};
    return x;
}

/* The computed CRC of the record of `e` against the stored one (DT_VARIANT
 * records: read only). */
static int compare_record_crc(const ckpt_bundle_reader *r,
                              const ckpt_tensor_entry *e, uint32_t crc)
{
    if (e->dtype == CKPT_DT_VARIANT)
        return 0;
    return ckpt__bundle_reader_compare_crc(r, e, crc);
}

int ckpt__bundle_reader_stream_check(ckpt_bundle_reader *r,
                                     const ckpt_tensor_entry *e)
{
    struct ckpt__bundle_shard *s;
    ckpt__extent ext = record_extent(e);
    ckpt__shown_name sn;
    int err = ckpt__bundle_reader_locate(r, e, &s); /* r->path: its file */
    if (err < 0)
        return err;
    err = read_records(r, s, &ext, 1);
    if (err < 0)
        return ckpt__error_prefix(err, "tensor '%s'",
                                  ckpt__bundle_entry_shown(&sn, e));
    return compare_record_crc(r, e, ext.crc);
}

/* Bits of r->piece_marks. */
#define PIECE_LISTED 1 /* a piece that a walked full entry lists */
#define LIST_WALKED 2  /* a full entry whose slice list was walked */

/* mark_listed's state: tensor `owner` (`owner_len` bytes) whose listed
 * slices' keys are looked up in the index (a reader finds a piece by
 * that key). */
typedef struct list_walk {
    ckpt_bundle_reader *r;
    const char *owner;
    size_t owner_len;
    ckpt_buf key;
} list_walk;

static int mark_listed(int index, const ckpt__tensor_slice *s, void *arg)
{
    list_walk *w = arg;
    size_t at;
    int err = ckpt__slice_key_encode(&w->key, w->owner, w->owner_len, s);
    (void)index;
    if (err == CKPT_ENOMEM)
        return ckpt__error_oom();
    if (err == 0 &&
        ckpt__entry_table_search(&w->r->tab, w->key.ptr, w->key.size, &at))
        w->r->piece_marks[at] |= PIECE_LISTED;
    return 0; /* a slice of no valid key is no piece's (its read fails) */
}

/* Whether the full entry `full` (index full_at) of tensor `owner` (`len`
 * bytes) lists the piece `e`: 0, or CKPT_ECORRUPT naming both (a piece it
 * does not list is read by nobody). Each full entry's list is walked once
 * per reader, marking the pieces it lists, so checking every piece of a
 * tensor of S pieces costs S lookups, not S walks of S slices. */
static int check_piece_listed(ckpt_bundle_reader *r,
                              const ckpt_tensor_entry *full, size_t full_at,
                              const ckpt_tensor_entry *e, const char *owner,
                              size_t len)
{
    ckpt__shown_name sn, sn_owner;
    size_t at;
    int err = 0;
    if (!ckpt__entry_table_index_of(&r->tab, e, &at) || full_at >= r->tab.count)
        return ckpt__error(CKPT_EINVAL, "%s: the entry is not one of its own",
                           r->index_path.ptr);
    if (!r->piece_marks) {
        r->piece_marks = ckpt__calloc(r->tab.count + 1, 1);
        if (!r->piece_marks)
            return ckpt__error_oom();
    }
    if (!(r->piece_marks[full_at] & LIST_WALKED)) {
        ckpt__partitioned_read pr;
        list_walk w = {r, owner, len, CKPT_BUF_INIT};
        err = ckpt__bundle_reader_partitioned_read_of(&pr, r, full);
        if (err == 0)
            err = ckpt__partitioned_for_each_slice(
                &pr, ckpt__show_name(&sn_owner, owner, len), mark_listed, &w);
        ckpt_buf_dispose(&w.key);
        if (err < 0)
            return err;
        r->piece_marks[full_at] |= LIST_WALKED;
    }
    if (!(r->piece_marks[at] & PIECE_LISTED))
        err = ckpt__error(CKPT_ECORRUPT,
                          "%s: tensor '%s': a piece tensor '%s' does not "
                          "list among its %d slice%s",
                          r->index_path.ptr, ckpt__bundle_entry_shown(&sn, e),
                          ckpt__show_name(&sn_owner, owner, len),
                          full->num_slices, full->num_slices == 1 ? "" : "s");
    return err;
}

/* An entry whose key starts with a 0 byte is a slice key: a piece of a
 * partitioned tensor the index also holds, whose entry lists it. One that
 * is not (a stray key, a piece whose tensor has no entry, or one its
 * tensor does not list) is no tensor a reader lists or reads, so nothing
 * else would say that the index is damaged. */
static int check_slice_owner(ckpt_bundle_reader *r, const ckpt_tensor_entry *e)
{
    ckpt_buf owner = CKPT_BUF_INIT;
    ckpt__tensor_slice slice;
    ckpt__shown_name sn, sn_owner;
    ckpt_tensor_entry full;
    size_t full_at = SIZE_MAX;
    int err = ckpt__slice_key_decode(&owner, &slice, e->name, e->name_len);
    if (err < 0 && err != CKPT_ENOMEM)
        err = ckpt__error_prefix(err,
                                 "%s: tensor '%s': its key starts with a 0 "
                                 "byte but is no slice key",
                                 r->index_path.ptr,
                                 ckpt__bundle_entry_shown(&sn, e));
    /* a name holding a 0 byte: a C string cannot look it up */
    if (err < 0 || memchr(owner.ptr, 0, owner.size) != NULL)
        goto done;
    err = ckpt__buf_put(&owner, "", 1);
    if (err < 0)
        goto done;
    if (ckpt__bundle_reader_lookup(&full, &full_at, r, owner.ptr) < 0 ||
        full.num_slices == 0)
        err =
            ckpt__error(CKPT_ECORRUPT,
                        "%s: tensor '%s': a piece of tensor '%s', "
                        "which has no partitioned entry of its own",
                        r->index_path.ptr, ckpt__bundle_entry_shown(&sn, e),
                        ckpt__show_name(&sn_owner, owner.ptr, owner.size - 1));
    else
        err =
            check_piece_listed(r, &full, full_at, e, owner.ptr, owner.size - 1);
done:
    ckpt_buf_dispose(&owner);
    return err;
}

/* Every piece in the index is one its tensor lists, each checked as
 * ckpt_bundle_reader_check does (each full entry's list walked once). */
static int check_slice_owners(ckpt_bundle_reader *r)
{
    int err = 0;
    for (size_t i = 0; err == 0 && i < r->tab.count; i++) {
        ckpt_tensor_entry e;
        if (!r->tab.recs[i].is_slice_key)
            continue;
        ckpt__entry_table_fill(&r->tab, i, &e);
        err = check_slice_owner(r, &e);
    }
    return err;
}

int ckpt__bundle_reader_record_check(ckpt_bundle_reader *r,
                                     const ckpt_tensor_entry *e)
{
    ckpt_string_array a = {NULL, 0, NULL};
    int err;
    if (e->dtype != CKPT_DT_STRING)
        return ckpt__bundle_reader_stream_check(r, e);
    err = ckpt__bundle_reader_read_strings_entry(r, e, &a, true);
    ckpt_string_array_dispose(&a);
    return err;
}

int ckpt_bundle_reader_check(ckpt_bundle_reader *r,
                             const ckpt_tensor_entry *entry)
{
    ckpt__partitioned_read pr;
    int err;
    CKPT__CHECK_ARG(r);
    CKPT__CHECK_ARG(entry);
    err = ckpt__bundle_reader_owns(r, entry, "ckpt_bundle_reader_check");
    if (err == 0 && entry->is_slice_key)
        err = check_slice_owner(r, entry);
    if (err < 0)
        return err;
    if (entry->num_slices == 0)
        return ckpt__bundle_reader_record_check(r, entry);
    /* any dtype: one that is not assembled (strings) must still have the
     * pieces it lists, covering it, each piece's record intact */
    err = ckpt__bundle_reader_partitioned_read_of(&pr, r, entry);
    if (err == 0)
        err = ckpt__bundle_check_partitioned(&pr);
    return err;
}

/* Whether the CRC `crc` computed over the record of `rec` matches the one
 * stored (DT_VARIANT records: read only, never compared). */
static bool rec_crc_matches(const ckpt__entry_rec *rec, uint32_t crc)
{
    return rec->dtype == CKPT_DT_VARIANT ||
           ckpt__crc32c_mask(crc) == rec->crc32c;
}

/* The records recs[0..n) of one data file, in file order: each located
 * (the data file opened, the record inside it), all read in one pass, each
 * one's CRC compared against its compact record. An entry is filled once
 * for each, to locate it (it is used only while it is checked: verify
 * makes no public entries), and again only for a record whose CRC does not
 * match, to say which. */
static int verify_shard(ckpt_bundle_reader *r,
                        const ckpt__entry_rec *const *recs, size_t n,
                        ckpt__extent *ext)
{
    struct ckpt__bundle_shard *s = NULL;
    ckpt_tensor_entry e;
    int err = 0;
    for (size_t i = 0; i < n && err == 0; i++) {
        ckpt__entry_table_fill(&r->tab, (size_t)(recs[i] - r->tab.recs), &e);
        ext[i] = record_extent(&e);
        err = ckpt__bundle_reader_locate(r, &e, &s);
    }
    if (err == 0) { /* locate's failures name the tensor already */
        err = read_records(r, s, ext, n);
        if (err < 0 && n == 1) {
            ckpt__shown_name sn;
            err = ckpt__error_prefix(err, "tensor '%s'",
                                     ckpt__bundle_entry_shown(&sn, &e));
        }
    }
    for (size_t i = 0; i < n && err == 0; i++) {
        if (rec_crc_matches(recs[i], ext[i].crc))
            continue;
        ckpt__entry_table_fill(&r->tab, (size_t)(recs[i] - r->tab.recs), &e);
        err = compare_record_crc(r, &e, ext[i].crc); /* says which */
    }
    return err;
}

/* Every fixed-size record, each data file's in one read in file order. */
static int verify_fixed_size(ckpt_bundle_reader *r)
{
    const ckpt__entry_table *t = &r->tab;
    const ckpt__entry_rec **recs = ckpt__calloc(t->count + 1, sizeof(*recs));
    ckpt__extent *ext = ckpt__calloc(t->count + 1, sizeof(*ext));
    size_t n = 0;
    int err = 0;
    if (!recs || !ext) {
        err = ckpt__error_oom();
        goto done;
    }
    for (size_t i = 0; i < t->count; i++)
        if (t->recs[i].num_slices == 0 && t->recs[i].dtype != CKPT_DT_STRING)
            recs[n++] = &t->recs[i];
    qsort(recs, n, sizeof(*recs), ckpt__rec_by_record_position);
    for (size_t start = 0, end; start < n && err == 0; start = end) {
        for (end = start;
             end < n && recs[end]->shard_id == recs[start]->shard_id; end++)
            ;
        err = verify_shard(r, recs + start, end - start, ext + start);
    }
done:
    ckpt__free(ext);
    ckpt__free(recs);
    return err;
}

int ckpt_bundle_reader_verify(ckpt_bundle_reader *r)
{
    ckpt_buf rec_buf = CKPT_BUF_INIT;
    int err;

    CKPT__CHECK_ARG(r);
    err = check_slice_owners(r);
    if (err == 0) /* the pieces of partitioned tensors too */
        err = verify_fixed_size(r);
    for (size_t i = 0; err == 0 && i < r->tab.count; i++) {
        const ckpt__entry_rec *rec = &r->tab.recs[i];
        ckpt_tensor_entry e;
        if (rec->num_slices > 0 || rec->dtype != CKPT_DT_STRING)
            continue;
        ckpt__entry_table_fill(&r->tab, i, &e);
        ckpt__buf_clear(&rec_buf);
        /* string records are checked by scan_strings through the CRC */
        err = ckpt__bundle_reader_load_record(r, &e, &rec_buf, true);
    }
    for (size_t i = 0; err == 0 && i < r->tab.count; i++) {
        const ckpt__entry_rec *rec = &r->tab.recs[i];
        ckpt_tensor_entry e;
        ckpt__partitioned_read pr;
        /* the pieces were checked as records above; here every
         * partitioned tensor, of any dtype (strings are not assembled, but
         * their pieces must be there all the same), must be covered */
        if (rec->num_slices == 0)
            continue;
        ckpt__entry_table_fill(&r->tab, i, &e);
        err = ckpt__bundle_reader_partitioned_read_of(&pr, r, &e);
        if (err == 0)
            err = ckpt__bundle_check_partitioned_layout(&pr);
    }
    ckpt_buf_dispose(&rec_buf);
    return err;
}
