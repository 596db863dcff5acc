/* format/snappy_block.c - raw Snappy block decompression, our own decoder
 * (LevelDB's tables, TensorFlow's index among them, may store a block
 * Snappy-compressed; nothing of ckpt writes one).
 *
 *   stream:   [varint32 uncompressed length][element][element]...
 *   element:  tag byte, its low two bits the kind:
 *     00 literal   length-1 in tag>>2 (0..59), or in the 1..4 little-endian
 *                  bytes after the tag when tag>>2 is 60..63; the bytes follow
 *     01 copy      length 4 + ((tag>>2) & 7), offset ((tag>>5) << 8) | 1 byte
 *     10 copy      length (tag>>2) + 1, offset: 2 bytes little-endian
 *     11 copy      length (tag>>2) + 1, offset: 4 bytes little-endian
 *   a copy repeats `length` bytes starting `offset` bytes back in the output
 *   (it may overlap what it writes: offset 1 repeats one byte).
 *
 * The declared length is checked against the caller's cap before anything
 * is allocated; every element is bounds-checked against the input left and
 * the room left in the output, a copy's offset against what is written, and
 * the output must come to exactly the declared length. Our own so that the
 * library needs no C++ runtime: a process linking ckpt loads only libc. */
#include "format/snappy_block.h"

#include "common/internal.h"

#include <string.h>

/* The varint32 at in[0..n): its value in *len and its byte count, or 0
 * when it is cut short, longer than 5 bytes or above 2^32 - 1. */
static size_t read_length(const uint8_t *in, size_t n, size_t *len)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n && i < 5; i++) {
        v |= (uint64_t)(in[i] & 0x7f) << (7 * i);
        if (!(in[i] & 0x80)) {
            if (v > UINT32_MAX)
                return 0;
            *len = (size_t)v;
            return i + 1;
        }
    }
    return 0;
}

/* The little-endian value of the k (1..4) bytes at p. */
static uint32_t load_le(const uint8_t *p, size_t k)
{
    uint32_t v = 0;
    for (size_t i = 0; i < k; i++)
        v |= (uint32_t)p[i] << (8 * i);
    return v;
}

/* Decode the elements in[0..n) into out[0..cap): 0 when they fill it
 * exactly, -1 when anything is out of bounds. */
static int decode(const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
    size_t ip = 0, op = 0;
    while (ip < n) {
        uint8_t tag = in[ip++];
        size_t len, offset, extra;
        switch (tag & 3) {
        case 0:
            len = (size_t)(tag >> 2) + 1;
            if (len > 60) { /* the length-1 is in the next 1..4 bytes */
                extra = len - 60;
                if (n - ip < extra)
                    return -1;
                len = (size_t)load_le(in + ip, extra) + 1;
                ip += extra;
                if (len == 0) /* 2^32 wrapped on a 32-bit size_t */
                    return -1;
            }
            if (n - ip < len || cap - op < len)
                return -1;
            memcpy(out + op, in + ip, len);
            ip += len;
            op += len;
            continue;
        case 1:
            if (n - ip < 1)
                return -1;
            len = 4 + ((size_t)(tag >> 2) & 7);
            offset = ((size_t)(tag >> 5) << 8) | in[ip];
            ip += 1;
            break;
        default: /* 2 or 3: a 2- or 4-byte offset */
            extra = (tag & 3) == 2 ? 2 : 4;
            if (n - ip < extra)
                return -1;
            len = (size_t)(tag >> 2) + 1;
            offset = load_le(in + ip, extra);
            ip += extra;
            break;
        }
        if (offset == 0 || offset > op || cap - op < len)
            return -1;
        if (offset >= len) {
            memcpy(out + op, out + op - offset, len);
        } else { /* overlapping: the pattern repeats byte by byte */
            for (size_t i = 0; i < len; i++)
                out[op + i] = out[op + i - offset];
        }
        op += len;
    }
    return op == cap ? 0 : -1;
}

int ckpt__snappy_uncompress(ckpt_buf *out, const uint8_t *in, size_t n,
                            size_t max_out, const char *what)
{
    size_t len = 0;
    size_t head = read_length(in, n, &len);
    int err;

    if (head == 0)
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
    if (decode(in + head, n - head, (uint8_t *)out->ptr, len) < 0) {
        ckpt__buf_clear(out);
        return ckpt__error(CKPT_ECORRUPT, "%s: corrupt snappy block", what);
    }
    out->size = len;
    out->ptr[len] = '\0';
    return 0;
}
