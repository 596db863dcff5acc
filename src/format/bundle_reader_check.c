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

#include <stdlib.h>

/* Read the located records es[0..n) of the data file `s` (r->path)
 * without keeping them and compare each one's CRC (DT_VARIANT: read
 * only). */
static int check_records(ckpt_bundle_reader *r, struct ckpt__bundle_shard *s,
                         const ckpt_tensor_entry *const *es, size_t n)
{
    ckpt__extent *ext = ckpt__calloc(n ? n : 1, sizeof(*ext));
    int err;
    if (!ext)
        return ckpt__error_oom();
    for (size_t i = 0; i < n; i++) {
        ext[i].offset = (uint64_t)es[i]->offset;
        ext[i].size = (uint64_t)es[i]->size;
    }
    err = ckpt__read_extents(r->fs, r->path.ptr, s->file, ext, n, NULL);
    if (err < 0 && n == 1) {
        ckpt__shown_name sn;
        err = ckpt__error_prefix(err, "tensor '%s'",
                                 ckpt__bundle_entry_shown(&sn, es[0]));
    }
    for (size_t i = 0; i < n && err == 0; i++)
        if (es[i]->dtype != CKPT_DT_VARIANT)
            err = ckpt__bundle_reader_compare_crc(r, es[i], ext[i].crc);
    ckpt__free(ext);
    return err;
}

int ckpt__bundle_reader_stream_check(ckpt_bundle_reader *r,
                                     const ckpt_tensor_entry *e)
{
    struct ckpt__bundle_shard *s;
    int err = ckpt__bundle_reader_locate(r, e, &s); /* r->path: its file */
    if (err == 0)
        err = check_records(r, s, &e, 1);
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
    if (err < 0)
        return err;
    if (entry->num_slices == 0 && entry->dtype == CKPT_DT_STRING) {
        ckpt_string_array a = {NULL, 0, NULL};
        err = ckpt__bundle_reader_read_strings_entry(r, entry, &a, true);
        ckpt_string_array_dispose(&a);
        return err;
    }
    if (entry->num_slices == 0)
        return ckpt__bundle_reader_stream_check(r, entry);
    err = ckpt__bundle_reader_assembly_of(&pr, r, entry);
    if (err == 0)
        err = ckpt__bundle_check_partitioned(&pr);
    return err;
}

/* Every fixed-size record, each data file's in one read in file order. */
static int verify_fixed_size(ckpt_bundle_reader *r)
{
    const ckpt_tensor_entry **es = ckpt__calloc(r->count + 1, sizeof(*es));
    size_t n = 0;
    int err = 0;
    if (!es)
        return ckpt__error_oom();
    for (size_t i = 0; i < r->count; i++)
        if (r->entries[i].num_slices == 0 &&
            r->entries[i].dtype != CKPT_DT_STRING)
            es[n++] = &r->entries[i];
    qsort(es, n, sizeof(*es), ckpt__entry_by_record_position);
    for (size_t start = 0, end; start < n && err == 0; start = end) {
        struct ckpt__bundle_shard *s = NULL;
        for (end = start; end < n && es[end]->shard_id == es[start]->shard_id;
             end++) {
            err = ckpt__bundle_reader_locate(r, es[end], &s);
            if (err < 0)
                break;
        }
        if (err == 0)
            err = check_records(r, s, es + start, end - start);
    }
    ckpt__free(es);
    return err;
}

int ckpt_bundle_reader_verify(ckpt_bundle_reader *r)
{
    ckpt_buf rec = CKPT_BUF_INIT;
    int err;

    CKPT__CHECK_ARG(r);
    err = verify_fixed_size(r); /* the pieces of partitioned tensors too */
    for (size_t i = 0; err == 0 && i < r->count; i++) {
        const ckpt_tensor_entry *e = &r->entries[i];
        if (e->num_slices > 0 || e->dtype != CKPT_DT_STRING)
            continue;
        ckpt__buf_clear(&rec);
        /* string records are checked by scan_strings through the CRC */
        err = ckpt__bundle_reader_load_record(r, e, &rec, true);
    }
    for (size_t i = 0; err == 0 && i < r->count; i++) {
        const ckpt_tensor_entry *e = &r->entries[i];
        ckpt__partitioned_read pr;
        /* only a fixed-size dtype is assembled; the pieces of the others
         * were checked as records above */
        if (e->num_slices == 0 || ckpt_dtype_size(e->dtype) == 0)
            continue;
        err = ckpt__bundle_reader_assembly_of(&pr, r, e);
        if (err == 0)
            err = ckpt__bundle_check_partitioned_layout(&pr);
    }
    ckpt_buf_dispose(&rec);
    return err;
}
