/* format/bundle_slice_key.c - partitioned tensors (docs/format.md §6), the
 * keys: TensorFlow's ordered code and the binary slice key of a piece.
 *
 *   slice key of piece {(start_d, length_d)} of tensor `name`, rank r:
 *     00 | name bytes, 00 -> 00 FF, FF -> FF 00 | 00 01 | U(r) |
 *     S(start_0) S(length_0) ... S(start_r-1) S(length_r-1)
 *   U(u): byte n = significant bytes of u (0 for 0), then those n bytes
 *         big-endian                       0 -> 00, 2 -> 01 02
 *   S(v): L = (significant bits of (v >= 0 ? v : ~v)) / 7 + 1 bytes of v,
 *         big-endian two's complement, its first L bits inverted
 *                                          0 -> 80, 2 -> 82, -1 -> 7F,
 *                                          64 -> C0 40, -65 -> 3F BF
 *   a full extent is written as start 0, length -1.
 *
 *   example (docs/format.md §6.3), float32 w [4, 3], rows 2-3:
 *     00 | 77 00 01 | 01 02 | 82 82 | 80 83 */
#include "format/bundle_slices.h"

#include "common/internal.h"
#include "format/bundle_text.h"
#include "util/pb_wire.h"

#include <stdio.h>
#include <string.h>

/* ---- ordered code ---------------------------------------------------------
 */

static int significant_bits(uint64_t x)
{
    return x == 0 ? 0 : 64 - __builtin_clzll(x);
}

int ckpt__ordered_put_unsigned(ckpt_buf *out, uint64_t v)
{
    uint8_t b[9];
    int n = (significant_bits(v) + 7) / 8;
    b[0] = (uint8_t)n;
    for (int i = 0; i < n; i++)
        b[1 + i] = (uint8_t)(v >> (8 * (n - 1 - i)));
    return ckpt__buf_put(out, b, (size_t)n + 1);
}

/* Bytes of the signed encoding of `v`: 1 .. 10. */
static int signed_length(int64_t v)
{
    uint64_t x = v >= 0 ? (uint64_t)v : ~(uint64_t)v;
    return significant_bits(x) / 7 + 1;
}

/* Invert the first `nbits` bits of `b` (most significant first). */
static void invert_leading_bits(uint8_t *b, int nbits)
{
    for (int i = 0; i < nbits; i++)
        b[i / 8] ^= (uint8_t)(0x80u >> (i % 8));
}

int ckpt__ordered_put_signed(ckpt_buf *out, int64_t v)
{
    uint8_t b[10];
    int len = signed_length(v);
    uint64_t u = (uint64_t)v;
    for (int i = 0; i < len; i++) {
        int shift = 8 * (len - 1 - i);
        /* bytes above the 8 of an int64 are its sign extension */
        if (shift >= 64)
            b[i] = v < 0 ? 0xff : 0x00;
        else
            b[i] = (uint8_t)(u >> shift);
    }
    invert_leading_bits(b, len);
    return ckpt__buf_put(out, b, (size_t)len);
}

int ckpt__ordered_get_unsigned(const uint8_t **p, const uint8_t *end,
                               uint64_t *out)
{
    const uint8_t *q = *p;
    uint64_t v = 0;
    size_t n;
    if (q >= end)
        return CKPT_ECORRUPT;
    n = *q++;
    if (n > 8 || (size_t)(end - q) < n)
        return CKPT_ECORRUPT;
    for (size_t i = 0; i < n; i++)
        v = (v << 8) | q[i];
    if ((size_t)(significant_bits(v) + 7) / 8 != n)
        return CKPT_ECORRUPT; /* not the shortest form */
    *p = q + n;
    *out = v;
    return 0;
}

/* Number of leading 1 bits of a byte. */
static int leading_ones(uint8_t b)
{
    int n = 0;
    while (n < 8 && (b & (0x80u >> n)))
        n++;
    return n;
}

int ckpt__ordered_get_signed(const uint8_t **p, const uint8_t *end,
                             int64_t *out)
{
    const uint8_t *q = *p;
    uint8_t b[10];
    uint8_t flip;
    uint64_t u;
    int len;
    if (q >= end)
        return CKPT_ECORRUPT;
    /* The length is the run of leading bits equal to the first bit (1 for
     * v >= 0, 0 for v < 0). */
    flip = (q[0] & 0x80) ? 0x00 : 0xff;
    len = leading_ones((uint8_t)(q[0] ^ flip));
    if (len == 8) {
        if (end - q < 2)
            return CKPT_ECORRUPT;
        len += leading_ones((uint8_t)(q[1] ^ flip));
    }
    if (len > 10 || end - q < len)
        return CKPT_ECORRUPT;
    memcpy(b, q, (size_t)len);
    invert_leading_bits(b, len);
    u = (b[0] & 0x80) ? ~(uint64_t)0 : 0;
    for (int i = 0; i < len; i++)
        u = (u << 8) | b[i];
    if (signed_length((int64_t)u) != len)
        return CKPT_ECORRUPT; /* not the shortest form, or beyond int64 */
    *p = q + len;
    *out = (int64_t)u;
    return 0;
}

/* ---- slice keys -----------------------------------------------------------
 */

int ckpt__slice_key_encode(ckpt_buf *out, const char *name, size_t name_len,
                           const ckpt__tensor_slice *s)
{
    static const uint8_t zero = 0x00;
    static const uint8_t esc_zero[2] = {0x00, 0xff};
    static const uint8_t esc_ff[2] = {0xff, 0x00};
    static const uint8_t term[2] = {0x00, 0x01};
    size_t run = 0;
    int err;

    if (s->rank < 1 || s->rank > CKPT_MAX_RANK)
        return ckpt__error(CKPT_EINVAL, "slice key: rank %d out of range",
                           s->rank);
    ckpt__buf_clear(out);
    err = ckpt__buf_put(out, &zero, 1);
    /* Copy the name in runs between the bytes that need escaping. */
    for (size_t i = 0; err == 0 && i < name_len; i++) {
        uint8_t c = (uint8_t)name[i];
        if (c != 0x00 && c != 0xff)
            continue;
        err = ckpt__buf_put(out, name + run, i - run);
        if (err == 0)
            err = ckpt__buf_put(out, c == 0 ? esc_zero : esc_ff, 2);
        run = i + 1;
    }
    if (err == 0)
        err = ckpt__buf_put(out, name + run, name_len - run);
    if (err == 0)
        err = ckpt__buf_put(out, term, 2);
    if (err == 0)
        err = ckpt__ordered_put_unsigned(out, (uint64_t)s->rank);
    for (int d = 0; err == 0 && d < s->rank; d++) {
        err = ckpt__ordered_put_signed(out, s->start[d]);
        if (err == 0)
            err = ckpt__ordered_put_signed(
                out, s->length[d] < 0 ? -1 : s->length[d]);
    }
    return err;
}

int ckpt__slice_key_decode(ckpt_buf *name, ckpt__tensor_slice *s,
                           const void *key, size_t key_len)
{
    const uint8_t *base = key;
    const uint8_t *p = base;
    const uint8_t *end = base + key_len;
    uint64_t rank;
    int err;

    ckpt__buf_clear(name);
    memset(s, 0, sizeof(*s));
    if (key_len == 0 || base[0] != 0x00)
        return ckpt__error(CKPT_ECORRUPT,
                           "slice key: does not start with a 0 byte");
    p++;
    for (;;) {
        uint8_t c, next;
        if (end - p < 2)
            return ckpt__error(CKPT_ECORRUPT,
                               "slice key: name not terminated (byte %zu)",
                               (size_t)(p - base));
        c = p[0];
        next = p[1];
        if (c == 0x00 && next == 0x01) {
            p += 2;
            break;
        }
        if (c == 0x00 || c == 0xff) {
            if ((c == 0x00 && next != 0xff) || (c == 0xff && next != 0x00))
                return ckpt__error(CKPT_ECORRUPT,
                                   "slice key: bad escape %02x %02x in the "
                                   "name (byte %zu)",
                                   c, next, (size_t)(p - base));
            err = ckpt__buf_put(name, &c, 1);
            p += 2;
        } else {
            err = ckpt__buf_put(name, &c, 1);
            p++;
        }
        if (err < 0)
            return err;
    }
    if (ckpt__ordered_get_unsigned(&p, end, &rank) < 0)
        return ckpt__error(CKPT_ECORRUPT, "slice key: bad rank (byte %zu)",
                           (size_t)(p - base));
    if (rank < 1 || rank > CKPT_MAX_RANK)
        return ckpt__error(CKPT_ECORRUPT,
                           "slice key: rank %llu out of range 1..%d",
                           (unsigned long long)rank, CKPT_MAX_RANK);
    s->rank = (int)rank;
    for (int d = 0; d < s->rank; d++) {
        if (ckpt__ordered_get_signed(&p, end, &s->start[d]) < 0 ||
            ckpt__ordered_get_signed(&p, end, &s->length[d]) < 0)
            return ckpt__error(CKPT_ECORRUPT,
                               "slice key: bad extent %d (byte %zu)", d,
                               (size_t)(p - base));
        if (s->length[d] < 0)
            s->length[d] = -1;
    }
    if (p != end)
        return ckpt__error(CKPT_ECORRUPT,
                           "slice key: %zu bytes after the last extent",
                           (size_t)(end - p));
    return 0;
}

int ckpt__tensor_slice_format(ckpt_buf *out, const ckpt__tensor_slice *s)
{
    int err = 0;
    ckpt__buf_clear(out);
    for (int d = 0; err == 0 && d < s->rank; d++) {
        if (d > 0)
            err = ckpt__buf_puts(out, ":");
        if (err == 0 && s->length[d] < 0)
            err = ckpt__buf_puts(out, "-");
        else if (err == 0)
            err = ckpt__buf_printf(out, "%lld,%lld", (long long)s->start[d],
                                   (long long)s->length[d]);
    }
    if (err == 0 && out->ptr == NULL)
        err = ckpt__buf_puts(out, ""); /* always a C string */
    return err;
}

int ckpt__slice_extent_inside(const ckpt__tensor_slice *s, int d, int64_t dim)
{
    return s->start[d] >= 0 &&
           (s->length[d] < 0 ||
            (s->start[d] <= dim && s->length[d] <= dim - s->start[d]));
}

/* The range [*lo, *hi) of dimension d covered by slice `s` of a tensor
 * whose dimension d has `dim` elements. */
void ckpt__slice_extent_range(const ckpt__tensor_slice *s, int d, int64_t dim,
                              int64_t *lo, int64_t *hi)
{
    if (s->length[d] < 0) {
        *lo = 0;
        *hi = dim;
    } else {
        *lo = s->start[d];
        *hi = s->start[d] + s->length[d];
    }
}

/* ---- the public call --------------------------------------------------- */

int ckpt_tensor_entry_piece(ckpt_buf *name, ckpt_slice_extent *extents,
                            int *rank, const ckpt_tensor_entry *e)
{
    ckpt__tensor_slice s;
    ckpt__shown_name shown;
    int err;
    if (!name || !e || !e->name)
        return ckpt__error(CKPT_EINVAL, "ckpt_tensor_entry_piece: NULL %s",
                           !name ? "name" : "entry");
    if (!e->is_slice_key)
        return ckpt__error(CKPT_EINVAL,
                           "ckpt_tensor_entry_piece: '%s' is not a piece of "
                           "a partitioned tensor (not a slice key)",
                           ckpt__show_name(&shown, e->name, e->name_len));
    err = ckpt__slice_key_decode(name, &s, e->name, e->name_len);
    if (err < 0)
        return err;
    if (rank)
        *rank = s.rank;
    if (extents) {
        for (int d = 0; d < s.rank; d++) {
            extents[d].start = s.start[d];
            extents[d].length = s.length[d] < 0 ? CKPT_SLICE_FULL : s.length[d];
        }
    }
    return 0;
}
