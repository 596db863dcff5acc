/* format/bundle_reader_check.c - checking a bundle's data without keeping
 * it: ckpt_bundle_reader_check (one tensor: its record streamed and its
 * CRC compared in bounded memory, a string tensor's layout walked, a
 * partitioned tensor piece by piece) and ckpt_bundle_reader_verify (every
 * record of the bundle). */
#include "ckpt/bundle.h"

#include "common/internal.h"
#include "format/bundle_reader_internal.h"
#include "format/bundle_slices.h"
#include "format/bundle_text.h"

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
        err = ckpt__bundle_reader_load_record(r, e, &rec, true);
    }
    ckpt_buf_dispose(&rec);
    return err;
}
