/* format/bundle_slices.c - partitioned (sliced) tensors (format spec §8):
 * slice keys in TensorFlow's ordered code, the writer's checks and
 * bookkeeping for ckpt_bundle_writer_add_slice, and the reader's assembly
 * of a whole tensor from its pieces.
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
 *   example (§8.3), float32 w [4, 3], rows 2-3:
 *     00 | 77 00 01 | 01 02 | 82 82 | 80 83
 *
 * Assembly: each piece's TensorSliceProto gives its key; the piece's record
 * (row-major in the piece's shape) is copied run by run into the full
 * tensor, where a run is the piece's innermost dimensions that are
 * contiguous in the full tensor. A bitmap of the full tensor's elements
 * finds overlaps; the pieces' element counts must add up to the tensor's. */
#include "format/bundle_slices.h"

#include "common/internal.h"
#include "util/pb_wire.h"

#include <stdio.h>
#include <string.h>

/* BundleEntryProto field number of `slices`. */
#define ENTRY_SLICES 7
/* Longest tensor name shown in a message. */
#define NAME_SHOWN 200

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

/* A tensor name fit for a message: printable ASCII as is, other bytes as
 * \xHH, long names cut. */
typedef struct shown_name {
    char text[NAME_SHOWN * 4 + 8];
} shown_name;

static const char *show(shown_name *sn, const char *name, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        uint8_t c = (uint8_t)name[i];
        if (i == NAME_SHOWN) {
            memcpy(sn->text + o, "...", 3);
            o += 3;
            break;
        }
        if (c >= 0x20 && c < 0x7f && c != '\\') {
            sn->text[o++] = (char)c;
        } else {
            sn->text[o++] = '\\';
            sn->text[o++] = 'x';
            sn->text[o++] = hex[c >> 4];
            sn->text[o++] = hex[c & 15];
        }
    }
    sn->text[o] = '\0';
    return sn->text;
}

typedef struct shown_shape {
    char text[CKPT_MAX_RANK * 22 + 8];
} shown_shape;

static const char *shape_text(shown_shape *ss, const ckpt_shape *shape)
{
    ckpt_shape_format(ss->text, sizeof(ss->text), shape);
    return ss->text;
}

static const char *dtype_label(int dtype)
{
    const char *name = ckpt_dtype_name(dtype);
    return name ? name : "unknown";
}

/* ---- writer ---------------------------------------------------------------
 */

struct ckpt__sliced_tensor {
    size_t entry_index;
    int dtype;
    ckpt_shape full;
    ckpt__tensor_slice *slices;
    int count;
    int cap;
};

/* Check one extent and store it in p; `dim` is the full dimension. */
static int prepare_extent(ckpt__slice_piece *p, const char *prefix,
                          const char *name, int d, ckpt_slice_extent e,
                          int64_t dim)
{
    if (e.length == CKPT_SLICE_FULL) {
        if (e.start != 0)
            return ckpt__error(CKPT_EINVAL,
                               "%s: tensor '%s': extent %d is full "
                               "(CKPT_SLICE_FULL) but starts at %lld",
                               prefix, name, d, (long long)e.start);
        p->slice.start[d] = 0;
        p->slice.length[d] = -1;
        p->shape.dims[d] = dim;
        return 0;
    }
    if (e.start < 0 || e.length < 0 || e.start > dim ||
        e.length > dim - e.start)
        return ckpt__error(CKPT_EINVAL,
                           "%s: tensor '%s': extent %d (start %lld, length "
                           "%lld) lies outside dimension %d of size %lld",
                           prefix, name, d, (long long)e.start,
                           (long long)e.length, d, (long long)dim);
    p->slice.start[d] = e.start;
    p->slice.length[d] = e.length;
    p->shape.dims[d] = e.length;
    return 0;
}

int ckpt__slice_piece_prepare(ckpt__slice_piece *p, const char *prefix,
                              const char *name, int dtype,
                              const ckpt_shape *full_shape,
                              const ckpt_slice_extent *extents,
                              const void *data, size_t nbytes)
{
    shown_shape ss;
    int64_t count, need;
    size_t esize = ckpt_dtype_size(dtype);
    int err;

    memset(p, 0, sizeof(*p));
    if (!name || !*name)
        return ckpt__error(CKPT_EINVAL, "%s: tensor name is %s", prefix,
                           name ? "empty" : "NULL");
    if (dtype == CKPT_DT_STRING)
        return ckpt__error(CKPT_ENOTSUP,
                           "%s: tensor '%s': partitioned string tensors are "
                           "not supported",
                           prefix, name);
    if (esize == 0)
        return ckpt__error(CKPT_ENOTSUP,
                           "%s: tensor '%s': dtype %d (%s) is not supported",
                           prefix, name, dtype, dtype_label(dtype));
    if (!full_shape)
        return ckpt__error(CKPT_EINVAL, "%s: tensor '%s': NULL shape", prefix,
                           name);
    err = ckpt_shape_num_elements(&count, full_shape);
    if (err < 0)
        return ckpt__error_prefix(err, "%s: tensor '%s'", prefix, name);
    if (full_shape->rank > 0 && !extents)
        return ckpt__error(CKPT_EINVAL, "%s: tensor '%s': NULL extents", prefix,
                           name);
    p->slice.rank = full_shape->rank;
    p->shape.rank = full_shape->rank;
    p->whole = true;
    for (int d = 0; d < full_shape->rank; d++) {
        err =
            prepare_extent(p, prefix, name, d, extents[d], full_shape->dims[d]);
        if (err < 0)
            return err;
        if (p->shape.dims[d] != full_shape->dims[d])
            p->whole = false;
    }
    /* The piece lies inside the full shape, so its count cannot overflow. */
    if (ckpt_shape_num_elements(&count, &p->shape) < 0 ||
        ckpt__mul_overflow_i64(count, (int64_t)esize, &need))
        return ckpt__error(CKPT_EINVAL,
                           "%s: tensor '%s': byte size of the piece overflows",
                           prefix, name);
    if ((uint64_t)need != (uint64_t)nbytes)
        return ckpt__error(CKPT_EINVAL,
                           "%s: tensor '%s': %zu bytes given, a %s piece of "
                           "shape %s needs %lld",
                           prefix, name, nbytes, dtype_label(dtype),
                           shape_text(&ss, &p->shape), (long long)need);
    if (!data && nbytes > 0)
        return ckpt__error(CKPT_EINVAL, "%s: tensor '%s': NULL data", prefix,
                           name);
    if (p->whole)
        return 0;
    return ckpt__slice_key_encode(&p->key, name, strlen(name), &p->slice);
}

void ckpt__slice_piece_dispose(ckpt__slice_piece *p)
{
    if (p)
        ckpt_buf_dispose(&p->key);
}

static struct ckpt__sliced_tensor *set_find(const ckpt__slice_set *s,
                                            size_t entry_index)
{
    size_t lo = 0, hi = s->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->items[mid].entry_index == entry_index)
            return &s->items[mid];
        if (s->items[mid].entry_index < entry_index)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

bool ckpt__slice_set_has(const ckpt__slice_set *s, size_t entry_index)
{
    return set_find(s, entry_index) != NULL;
}

/* The range [*lo, *hi) of dimension d covered by slice `s` of a tensor
 * whose dimension d has `dim` elements. */
static void extent_range(const ckpt__tensor_slice *s, int d, int64_t dim,
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

static bool slices_overlap(const ckpt__tensor_slice *a,
                           const ckpt__tensor_slice *b, const ckpt_shape *full)
{
    for (int d = 0; d < full->rank; d++) {
        int64_t alo, ahi, blo, bhi;
        extent_range(a, d, full->dims[d], &alo, &ahi);
        extent_range(b, d, full->dims[d], &blo, &bhi);
        if ((alo > blo ? alo : blo) >= (ahi < bhi ? ahi : bhi))
            return false;
    }
    return true;
}

int ckpt__slice_set_check(const ckpt__slice_set *s, const char *prefix,
                          const char *name, size_t entry_index, bool is_new,
                          int dtype, const ckpt_shape *full_shape,
                          const ckpt__slice_piece *p)
{
    const struct ckpt__sliced_tensor *t;
    shown_shape a, b;
    ckpt_buf x = CKPT_BUF_INIT, y = CKPT_BUF_INIT;
    int err = 0;

    if (is_new)
        return 0;
    t = set_find(s, entry_index);
    if (!t)
        return ckpt__error(CKPT_EEXISTS,
                           "%s: tensor '%s' was already added as a whole "
                           "tensor",
                           prefix, name);
    if (t->dtype != dtype)
        return ckpt__error(CKPT_EINVAL,
                           "%s: tensor '%s': piece of dtype %s, the earlier "
                           "pieces are %s",
                           prefix, name, dtype_label(dtype),
                           dtype_label(t->dtype));
    if (!ckpt_shape_equal(&t->full, full_shape))
        return ckpt__error(CKPT_EINVAL,
                           "%s: tensor '%s': full shape %s differs from the "
                           "earlier pieces' %s",
                           prefix, name, shape_text(&a, full_shape),
                           shape_text(&b, &t->full));
    for (int i = 0; i < t->count; i++) {
        if (!slices_overlap(&t->slices[i], &p->slice, full_shape))
            continue;
        err = ckpt__tensor_slice_format(&x, &p->slice);
        if (err == 0)
            err = ckpt__tensor_slice_format(&y, &t->slices[i]);
        if (err == 0)
            err = ckpt__error(CKPT_EINVAL,
                              "%s: tensor '%s': piece %s overlaps piece %d "
                              "(%s)",
                              prefix, name, x.ptr, i, y.ptr);
        break;
    }
    ckpt_buf_dispose(&x);
    ckpt_buf_dispose(&y);
    return err;
}

int ckpt__slice_set_append(ckpt__slice_set *s, size_t entry_index, int dtype,
                           const ckpt_shape *full_shape,
                           const ckpt__slice_piece *p, ckpt__bundle_entry *full)
{
    struct ckpt__sliced_tensor *t = set_find(s, entry_index);
    if (!t) {
        if (s->count > 0 && s->items[s->count - 1].entry_index > entry_index)
            return ckpt__error(CKPT_EINVAL,
                               "slice set: entry %zu added out of order",
                               entry_index);
        if (s->count == s->cap) {
            size_t cap = s->cap ? s->cap * 2 : 8;
            struct ckpt__sliced_tensor *q =
                ckpt__realloc(s->items, cap * sizeof(*q));
            if (!q)
                return ckpt__error_oom();
            s->items = q;
            s->cap = cap;
        }
        t = &s->items[s->count++];
        memset(t, 0, sizeof(*t));
        t->entry_index = entry_index;
        t->dtype = dtype;
        t->full = *full_shape;
    }
    if (t->count == t->cap) {
        int cap;
        ckpt__tensor_slice *q;
        if (t->cap > (1 << 29))
            return ckpt__error(CKPT_EINVAL, "slice set: too many pieces");
        cap = t->cap ? t->cap * 2 : 4;
        q = ckpt__realloc(t->slices, (size_t)cap * sizeof(*q));
        if (!q)
            return ckpt__error_oom();
        t->slices = q;
        t->cap = cap;
    }
    t->slices[t->count++] = p->slice;
    memset(full, 0, sizeof(*full));
    full->dtype = t->dtype;
    full->shape = t->full;
    full->num_slices = t->count;
    full->slices = t->slices;
    return 0;
}

void ckpt__slice_set_dispose(ckpt__slice_set *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->count; i++)
        ckpt__free(s->items[i].slices);
    ckpt__free(s->items);
    s->items = NULL;
    s->count = 0;
    s->cap = 0;
}

/* ---- reader: kept entries -------------------------------------------------
 */

struct ckpt__sliced_value {
    size_t entry_index;
    uint8_t *value;
    size_t n;
};

int ckpt__sliced_entries_add(ckpt__sliced_entries *s, size_t entry_index,
                             const uint8_t *value, size_t n)
{
    struct ckpt__sliced_value *v;
    if (s->count > 0 && s->items[s->count - 1].entry_index >= entry_index)
        return ckpt__error(CKPT_EINVAL,
                           "sliced entries: entry %zu added out of order",
                           entry_index);
    if (s->count == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 8;
        struct ckpt__sliced_value *q =
            ckpt__realloc(s->items, cap * sizeof(*q));
        if (!q)
            return ckpt__error_oom();
        s->items = q;
        s->cap = cap;
    }
    v = &s->items[s->count];
    v->value = ckpt__malloc(n ? n : 1);
    if (!v->value)
        return ckpt__error_oom();
    if (n)
        memcpy(v->value, value, n);
    v->n = n;
    v->entry_index = entry_index;
    s->count++;
    return 0;
}

int ckpt__sliced_entries_get(const ckpt__sliced_entries *s, size_t entry_index,
                             const uint8_t **value, size_t *n)
{
    size_t lo = 0, hi = s->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->items[mid].entry_index == entry_index) {
            *value = s->items[mid].value;
            *n = s->items[mid].n;
            return 0;
        }
        if (s->items[mid].entry_index < entry_index)
            lo = mid + 1;
        else
            hi = mid;
    }
    return ckpt__error(CKPT_ENOTFOUND, "sliced entries: no entry %zu",
                       entry_index);
}

void ckpt__sliced_entries_dispose(ckpt__sliced_entries *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->count; i++)
        ckpt__free(s->items[i].value);
    ckpt__free(s->items);
    s->items = NULL;
    s->count = 0;
    s->cap = 0;
}

/* ---- reader: assembly -----------------------------------------------------
 */

struct assembly {
    const ckpt__partitioned_read *pr;
    const ckpt_tensor_entry *e;
    const char *name; /* shown */
    size_t esize;
    uint8_t *dst;
    uint8_t *covered; /* one bit per element of the full tensor */
    uint64_t total;   /* elements covered so far */
    ckpt_buf key;
    ckpt_buf record;
    ckpt_buf spec; /* the current piece in slice-spec notation */
};

/* Mark elements [a, a + n) as covered; true when one already was. */
static bool mark_covered(uint8_t *bits, uint64_t a, uint64_t n)
{
    uint64_t end = a + n;
    while (a < end && (a & 7) != 0) {
        uint8_t m = (uint8_t)(1u << (a & 7));
        if (bits[a >> 3] & m)
            return true;
        bits[a >> 3] |= m;
        a++;
    }
    while (end - a >= 8) {
        if (bits[a >> 3] != 0)
            return true;
        bits[a >> 3] = 0xff;
        a += 8;
    }
    while (a < end) {
        uint8_t m = (uint8_t)(1u << (a & 7));
        if (bits[a >> 3] & m)
            return true;
        bits[a >> 3] |= m;
        a++;
    }
    return false;
}

/* Copy the piece's record (row-major in `lo`..`hi` of each dimension) into
 * the full tensor. */
static int scatter(struct assembly *as, int index, const int64_t *lo,
                   const int64_t *hi, const uint8_t *src)
{
    const ckpt_shape *full = &as->e->shape;
    int rank = full->rank;
    int64_t stride[CKPT_MAX_RANK];
    int64_t idx[CKPT_MAX_RANK];
    uint64_t run = 1, runs = 1;
    int inner = rank - 1;

    stride[rank - 1] = 1;
    for (int d = rank - 2; d >= 0; d--)
        stride[d] = stride[d + 1] * full->dims[d + 1];
    /* Dimensions after `inner` are whole, so a run spans inner..rank-1. */
    while (inner > 0 && lo[inner] == 0 && hi[inner] == full->dims[inner])
        inner--;
    for (int d = inner; d < rank; d++)
        run *= (uint64_t)(hi[d] - lo[d]);
    for (int d = 0; d < inner; d++)
        runs *= (uint64_t)(hi[d] - lo[d]);
    if (run == 0 || runs == 0)
        return 0;
    for (int d = 0; d < inner; d++)
        idx[d] = lo[d];
    for (uint64_t k = 0; k < runs; k++) {
        uint64_t at = (uint64_t)(lo[inner] * stride[inner]);
        for (int d = 0; d < inner; d++)
            at += (uint64_t)(idx[d] * stride[d]);
        if (mark_covered(as->covered, at, run))
            return ckpt__error(CKPT_ECORRUPT,
                               "%s: tensor '%s': slice %d (%s) overlaps an "
                               "earlier slice",
                               as->pr->index_path, as->name, index,
                               as->spec.ptr);
        memcpy(as->dst + at * as->esize, src + k * run * as->esize,
               (size_t)(run * as->esize));
        for (int d = inner - 1; d >= 0; d--) {
            if (++idx[d] < hi[d])
                break;
            idx[d] = lo[d];
        }
    }
    as->total += run * runs;
    return 0;
}

/* Find, check, read and place piece `index`, described by `s`. */
static int place_piece(struct assembly *as, int index,
                       const ckpt__tensor_slice *s)
{
    const ckpt__partitioned_read *pr = as->pr;
    const ckpt_shape *full = &as->e->shape;
    const ckpt_tensor_entry *pe;
    shown_shape a, b;
    ckpt_shape want;
    int64_t lo[CKPT_MAX_RANK], hi[CKPT_MAX_RANK];
    int err = ckpt__tensor_slice_format(&as->spec, s);
    if (err < 0)
        return err;
    if (s->rank != full->rank)
        return ckpt__error(CKPT_ECORRUPT,
                           "%s: tensor '%s': slice %d (%s) has %d extents, "
                           "the tensor's rank is %d",
                           pr->index_path, as->name, index, as->spec.ptr,
                           s->rank, full->rank);
    memset(&want, 0, sizeof(want));
    want.rank = full->rank;
    for (int d = 0; d < full->rank; d++) {
        int64_t dim = full->dims[d];
        if (s->start[d] < 0 ||
            (s->length[d] >= 0 &&
             (s->start[d] > dim || s->length[d] > dim - s->start[d])))
            return ckpt__error(CKPT_ECORRUPT,
                               "%s: tensor '%s': slice %d (%s) lies outside "
                               "the shape %s",
                               pr->index_path, as->name, index, as->spec.ptr,
                               shape_text(&a, full));
        extent_range(s, d, dim, &lo[d], &hi[d]);
        want.dims[d] = hi[d] - lo[d];
    }
    err = ckpt__slice_key_encode(&as->key, as->e->name, as->e->name_len, s);
    if (err < 0)
        return err;
    err = ckpt__bundle_reader_find_key(&pe, pr->reader, as->key.ptr,
                                       as->key.size);
    if (err == CKPT_ENOTFOUND)
        return ckpt__error(CKPT_ECORRUPT,
                           "%s: tensor '%s': slice %d (%s) has no entry in "
                           "the index",
                           pr->index_path, as->name, index, as->spec.ptr);
    if (err < 0)
        return err;
    if (pe->num_slices > 0)
        return ckpt__error(CKPT_ECORRUPT,
                           "%s: tensor '%s': slice %d (%s): its entry is "
                           "itself partitioned",
                           pr->index_path, as->name, index, as->spec.ptr);
    if (pe->dtype != as->e->dtype)
        return ckpt__error(CKPT_ECORRUPT,
                           "%s: tensor '%s': slice %d (%s) is %s, the tensor "
                           "is %s",
                           pr->index_path, as->name, index, as->spec.ptr,
                           dtype_label(pe->dtype), dtype_label(as->e->dtype));
    if (!ckpt_shape_equal(&pe->shape, &want))
        return ckpt__error(CKPT_ECORRUPT,
                           "%s: tensor '%s': slice %d (%s) has shape %s, its "
                           "extents make %s",
                           pr->index_path, as->name, index, as->spec.ptr,
                           shape_text(&a, &pe->shape), shape_text(&b, &want));
    ckpt__buf_clear(&as->record);
    err = ckpt_bundle_reader_read_record(pr->reader, pe, &as->record);
    if (err < 0)
        return ckpt__error_prefix(err, "%s: tensor '%s': slice %d (%s)",
                                  pr->index_path, as->name, index,
                                  as->spec.ptr);
    /* The reader checked size = elements x dtype size when it opened. */
    return scatter(as, index, lo, hi, (const uint8_t *)as->record.ptr);
}

static size_t swap_width(int dtype)
{
    if (dtype == CKPT_DT_COMPLEX64)
        return 4;
    if (dtype == CKPT_DT_COMPLEX128)
        return 8;
    return ckpt_dtype_size(dtype);
}

static void swap_words(uint8_t *p, size_t n, size_t width)
{
    for (size_t i = 0; i + width <= n; i += width) {
        for (size_t a = 0, b = width - 1; a < b; a++, b--) {
            uint8_t t = p[i + a];
            p[i + a] = p[i + b];
            p[i + b] = t;
        }
    }
}

/* Walk the `slices` fields of the full entry and place each piece. */
static int place_all(struct assembly *as)
{
    const ckpt__partitioned_read *pr = as->pr;
    ckpt__pb_reader rd;
    ckpt__pb_field f;
    int index = 0;

    ckpt__pb_reader_init(&rd, pr->proto, pr->proto_len);
    for (;;) {
        const uint8_t *field = rd.p;
        ckpt__tensor_slice s;
        int rc = ckpt__pb_next(&rd, &f);
        if (rc < 0)
            return ckpt__error(
                CKPT_ECORRUPT, "%s: tensor '%s': malformed entry (byte %zu)",
                pr->index_path, as->name, (size_t)(field - pr->proto));
        if (rc == 0)
            return 0;
        if (f.number != ENTRY_SLICES)
            continue;
        /* Decode this one field as a message holding a single slice. */
        rc = ckpt__bundle_entry_get_slice(&s, field, (size_t)(rd.p - field), 0);
        if (rc < 0)
            return ckpt__error_prefix(rc, "%s: tensor '%s': slice %d",
                                      pr->index_path, as->name, index);
        rc = place_piece(as, index, &s);
        if (rc < 0)
            return rc;
        index++;
    }
}

int ckpt__bundle_read_partitioned(const ckpt__partitioned_read *pr, void *dst,
                                  size_t dst_size)
{
    const ckpt_tensor_entry *e = pr->entry;
    struct assembly as;
    shown_name sn;
    int64_t count = 0, bytes = 0;
    int err;

    memset(&as, 0, sizeof(as));
    as.pr = pr;
    as.e = e;
    as.name = show(&sn, e->name, e->name_len);
    as.esize = ckpt_dtype_size(e->dtype);
    as.dst = dst;
    if (e->dtype == CKPT_DT_STRING)
        return ckpt__error(CKPT_ENOTSUP,
                           "%s: tensor '%s': partitioned string tensor (%d "
                           "slices) not supported",
                           pr->index_path, as.name, e->num_slices);
    if (as.esize == 0)
        return ckpt__error(
            CKPT_ENOTSUP, "%s: tensor '%s': dtype %d (%s) is not supported",
            pr->index_path, as.name, e->dtype, dtype_label(e->dtype));
    if (ckpt_shape_num_elements(&count, &e->shape) < 0 ||
        ckpt__mul_overflow_i64(count, (int64_t)as.esize, &bytes))
        return ckpt__error(CKPT_ECORRUPT,
                           "%s: tensor '%s': byte size of the shape "
                           "overflows",
                           pr->index_path, as.name);
    if ((uint64_t)dst_size != (uint64_t)bytes || (!dst && dst_size > 0))
        return ckpt__error(CKPT_EINVAL,
                           "%s: tensor '%s': destination of %zu bytes, the "
                           "tensor has %lld",
                           pr->index_path, as.name, dst_size, (long long)bytes);
    if (e->shape.rank == 0)
        return ckpt__error(CKPT_ECORRUPT,
                           "%s: tensor '%s': a scalar with %d slices",
                           pr->index_path, as.name, e->num_slices);
    if (count > 0) {
        /* dst holds count x esize bytes: the bitmap is at most 1/8 of it */
        as.covered = ckpt__calloc((size_t)(((uint64_t)count + 7) / 8), 1);
        if (!as.covered)
            return ckpt__error_oom();
    }
    err = place_all(&as);
    if (err == 0 && as.total != (uint64_t)count)
        err = ckpt__error(CKPT_ECORRUPT,
                          "%s: tensor '%s': slices cover %llu of %lld "
                          "elements",
                          pr->index_path, as.name, (unsigned long long)as.total,
                          (long long)count);
    if (err == 0 && pr->swap && swap_width(e->dtype) > 1)
        swap_words(dst, dst_size, swap_width(e->dtype));
    ckpt__free(as.covered);
    ckpt_buf_dispose(&as.key);
    ckpt_buf_dispose(&as.record);
    ckpt_buf_dispose(&as.spec);
    return err;
}
