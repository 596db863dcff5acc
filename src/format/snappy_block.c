/* format/snappy_block.c - raw Snappy block decompression through Debian's
 * libsnappy C API. The stream starts with a varint32 uncompressed length;
 * it is checked against the caller's cap before anything is allocated, and
 * the decoder (which bounds-checks every literal and copy) must produce
 * exactly that many bytes. */
#include "format/snappy_block.h"

#include "common/internal.h"

#include <snappy-c.h>

int ckpt__snappy_uncompress(ckpt_buf *out, const uint8_t *in, size_t n,
                            size_t max_out, const char *what)
{
    size_t len = 0;
    size_t got;
    int err;

    if (snappy_uncompressed_length((const char *)in, n, &len) != SNAPPY_OK)
        return ckpt__error(CKPT_ECORRUPT,
                           "%s: corrupt snappy block (bad length header)",
                           what);
    if (len > max_out)
        return ckpt__error(CKPT_ECORRUPT,
                           "%s: corrupt snappy block (declares %zu bytes, "
                           "more than the limit of %zu)",
                           what, len, max_out);
    ckpt__buf_clear(out);
    err = ckpt__buf_grow(out, len);
    if (err < 0)
        return err;
    got = len;
    if (snappy_uncompress((const char *)in, n, out->ptr, &got) != SNAPPY_OK ||
        got != len) {
        ckpt__buf_clear(out);
        return ckpt__error(CKPT_ECORRUPT, "%s: corrupt snappy block", what);
    }
    out->size = len;
    out->ptr[len] = '\0';
    return 0;
}
