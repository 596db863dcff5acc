/* util/coding.c - varint encoders and the bounds-checked varint decoders of
 * coding.h, plus the ckpt_buf append helpers. A varint stores 7 bits per
 * byte, least significant group first; the high bit of a byte says another
 * byte follows. A varint32 takes at most 5 bytes, a varint64 at most 10. */
#include "util/coding.h"

#include "common/internal.h"

size_t ckpt__encode_varint64(uint8_t *p, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}

size_t ckpt__varint_length(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

int ckpt__put_fixed32(ckpt_buf *b, uint32_t v)
{
    uint8_t tmp[4];
    ckpt__encode_fixed32(tmp, v);
    return ckpt__buf_put(b, tmp, sizeof(tmp));
}

int ckpt__put_fixed64(ckpt_buf *b, uint64_t v)
{
    uint8_t tmp[8];
    ckpt__encode_fixed64(tmp, v);
    return ckpt__buf_put(b, tmp, sizeof(tmp));
}

int ckpt__put_varint32(ckpt_buf *b, uint32_t v)
{
    return ckpt__put_varint64(b, v);
}

int ckpt__put_varint64(ckpt_buf *b, uint64_t v)
{
    uint8_t tmp[CKPT__VARINT64_MAX];
    size_t n = ckpt__encode_varint64(tmp, v);
    return ckpt__buf_put(b, tmp, n);
}

int ckpt__put_length_prefixed(ckpt_buf *b, const void *p, size_t n)
{
    int err = ckpt__put_varint64(b, (uint64_t)n);
    if (err < 0)
        return err;
    return ckpt__buf_put(b, p, n);
}

/* Decode at most `max_bytes` bytes; the last allowed byte may only carry
 * `last_bits` value bits and no continuation bit. */
static bool get_varint(const uint8_t **pp, const uint8_t *end, size_t max_bytes,
                       unsigned last_bits, uint64_t *out)
{
    const uint8_t *p = *pp;
    uint64_t v = 0;
    for (size_t i = 0; i < max_bytes; i++) {
        uint8_t byte;
        if (p >= end)
            return false; /* truncated */
        byte = *p++;
        if (i == max_bytes - 1 && (byte >> last_bits) != 0)
            return false; /* too long or bits beyond the type */
        v |= (uint64_t)(byte & 0x7f) << (7 * i);
        if (!(byte & 0x80)) {
            *out = v;
            *pp = p;
            return true;
        }
    }
    return false;
}

bool ckpt__get_varint32(const uint8_t **p, const uint8_t *end, uint32_t *out)
{
    uint64_t v;
    /* 4*7 = 28 bits in the first four bytes, 4 more in the fifth */
    if (!get_varint(p, end, CKPT__VARINT32_MAX, 4, &v))
        return false;
    *out = (uint32_t)v;
    return true;
}

bool ckpt__get_varint64(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
    /* 9*7 = 63 bits in the first nine bytes, 1 more in the tenth */
    return get_varint(p, end, CKPT__VARINT64_MAX, 1, out);
}
