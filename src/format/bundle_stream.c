/* format/bundle_stream.c - ckpt_record_stream: one record of a bundle read
 * in bounded pieces, for tensors too large to hold whole (ckpt verify, ckpt
 * diff and inspect --values read through it).
 *
 *   record of `size` bytes:  [piece 0][piece 1] ... [last piece]
 *   each piece <= piece_size bytes, whole elements of a fixed-size dtype,
 *   brought to host byte order; the CRC32C runs over the stored bytes and
 *   is compared when the end is reached.
 *
 * Memory: one buffer of piece_size bytes, whatever the record's size; the
 * record is checked to lie inside its data file before anything is read. */
#include "ckpt/bundle.h"

#include "common/internal.h"
#include "format/bundle_reader_internal.h"
#include "format/bundle_text.h"
#include "util/crc32c.h"

#include <string.h>

struct ckpt_record_stream {
    ckpt_bundle_reader *r;
    const ckpt_tensor_entry *e;
    uint8_t *buf;
    size_t piece;  /* bytes per piece (whole elements) */
    uint64_t done; /* bytes of the record handed out */
    uint32_t crc;  /* CRC32C of the stored bytes so far */
    bool check_crc;
    size_t swap_width; /* > 1: swap words of this width */
    bool ended;
};

int ckpt_record_stream_open(ckpt_record_stream **out, ckpt_bundle_reader *r,
                            const ckpt_tensor_entry *entry, size_t piece_size)
{
    ckpt_record_stream *s;
    ckpt__shown_name sn;
    size_t esize;
    int err;

    CKPT__CHECK_ARG(out);
    *out = NULL;
    CKPT__CHECK_ARG(r);
    CKPT__CHECK_ARG(entry);
    if (entry->dtype == CKPT_DT_STRING)
        return ckpt__error(CKPT_ENOTSUP,
                           "%s: tensor '%s': a string record is not streamed "
                           "(read it with ckpt_bundle_reader_read_strings)",
                           ckpt_bundle_reader_prefix(r),
                           ckpt__show_name(&sn, entry->name, entry->name_len));
    if (entry->num_slices > 0)
        return ckpt__error(CKPT_ENOTSUP,
                           "%s: tensor '%s': partitioned tensor (%d slices): "
                           "stream its slice entries",
                           ckpt_bundle_reader_prefix(r),
                           ckpt__show_name(&sn, entry->name, entry->name_len),
                           entry->num_slices);
    err = ckpt__bundle_reader_check_record(r, entry);
    if (err < 0)
        return err;
    if (piece_size == 0)
        piece_size = CKPT_RECORD_STREAM_PIECE;
    esize = ckpt_dtype_size(entry->dtype);
    if (esize > 1) /* whole elements, at least one */
        piece_size =
            piece_size < esize ? esize : piece_size - piece_size % esize;
    if ((uint64_t)piece_size > (uint64_t)entry->size)
        piece_size = entry->size > 0 ? (size_t)entry->size : 1;
    s = ckpt__calloc(1, sizeof(*s));
    if (!s)
        return ckpt__error_oom();
    s->buf = ckpt__malloc(piece_size);
    if (!s->buf) {
        ckpt__free(s);
        return ckpt__error_oom();
    }
    s->r = r;
    s->e = entry;
    s->piece = piece_size;
    s->check_crc =
        !ckpt__bundle_reader_skips_crc(r) && entry->dtype != CKPT_DT_VARIANT;
    if (esize > 0 && ckpt__bundle_reader_swaps(r))
        s->swap_width = ckpt__record_word_width(entry->dtype);
    *out = s;
    return 0;
}

/* The end of the record: compare the CRC of everything handed out. */
static int finish(ckpt_record_stream *s)
{
    s->ended = true;
    return s->check_crc ? ckpt__bundle_reader_compare_crc(s->r, s->e, s->crc)
                        : 0;
}

int ckpt_record_stream_next(ckpt_record_stream *s, const void **data, size_t *n)
{
    uint64_t left;
    size_t want;
    int err;

    CKPT__CHECK_ARG(s);
    CKPT__CHECK_ARG(data);
    CKPT__CHECK_ARG(n);
    *data = NULL;
    *n = 0;
    if (s->ended)
        return 0;
    left = (uint64_t)s->e->size - s->done;
    if (left == 0)
        return finish(s);
    want = left < s->piece ? (size_t)left : s->piece;
    err = ckpt__bundle_reader_read_part(s->r, s->e, s->done, s->buf, want);
    if (err < 0)
        return err;
    if (s->check_crc)
        s->crc = ckpt__crc32c_extend(s->crc, s->buf, want);
    if (s->swap_width > 1)
        ckpt__record_swap_words(s->buf, want, s->swap_width);
    if (s->e->dtype == CKPT_DT_BOOL)
        ckpt__record_bools_to_host(s->buf, want);
    s->done += want;
    *data = s->buf;
    *n = want;
    return 0;
}

void ckpt_record_stream_free(ckpt_record_stream *s)
{
    if (!s)
        return;
    ckpt__free(s->buf);
    ckpt__free(s);
}
