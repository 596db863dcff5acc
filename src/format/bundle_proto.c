/* format/bundle_proto.c - encoders and decoders of BundleHeaderProto and
 * BundleEntryProto (see bundle_proto.h for the field layout).
 *
 * Decoding follows proto3: fields in any order, unknown fields of any
 * supported wire type skipped, the last occurrence of a scalar wins, a
 * repeated message field appends and a singular message field seen twice
 * merges into the first (so two `shape` fields concatenate their dims).
 * Nesting is fixed by the schema (at most three levels), so no recursion
 * depth has to be tracked. A known field with a wire type other than its
 * schema's is rejected as corrupt. */
#include "format/bundle_proto.h"

#include "common/internal.h"
#include "util/coding.h"
#include "util/pb_wire.h"

#include <string.h>

/* Field numbers. */
enum {
    HDR_NUM_SHARDS = 1,
    HDR_ENDIANNESS = 2,
    HDR_VERSION = 3,
    VER_PRODUCER = 1,
    VER_MIN_CONSUMER = 2,
    VER_BAD_CONSUMERS = 3,
    ENT_DTYPE = 1,
    ENT_SHAPE = 2,
    ENT_SHARD_ID = 3,
    ENT_OFFSET = 4,
    ENT_SIZE = 5,
    ENT_CRC32C = 6,
    ENT_SLICES = 7,
    SHAPE_DIM = 2,
    SHAPE_UNKNOWN_RANK = 3,
    DIM_SIZE = 1,
    DIM_NAME = 2,
    SLICE_EXTENT = 1,
    EXTENT_START = 1,
    EXTENT_LENGTH = 2
};

/* Offset of the reader's position within the outermost message. */
static size_t pos_of(const ckpt__pb_reader *r, const uint8_t *base)
{
    return (size_t)(r->p - base);
}

static int bad_wire(const char *msg, const char *field, size_t at)
{
    return ckpt__error(CKPT_ECORRUPT,
                       "%s: field %s at byte %zu: wrong wire "
                       "type",
                       msg, field, at);
}

static int malformed(const char *msg, size_t at)
{
    return ckpt__error(CKPT_ECORRUPT, "%s: malformed field at byte %zu", msg,
                       at);
}

/* Protobuf int32 fields travel as a (possibly 10-byte) varint holding the
 * sign-extended value; keep the low 32 bits like protobuf does. */
static int32_t as_int32(uint64_t v)
{
    return (int32_t)(uint32_t)v;
}

/* ---- encoders ------------------------------------------------------------ */

static int put_int32(ckpt_buf *b, uint32_t number, int32_t v)
{
    if (v == 0)
        return 0;
    return ckpt__pb_put_varint_field(b, number, (uint64_t)(int64_t)v);
}

static int put_int64(ckpt_buf *b, uint32_t number, int64_t v)
{
    if (v == 0)
        return 0;
    return ckpt__pb_put_varint_field(b, number, (uint64_t)v);
}

void ckpt__bundle_header_init(ckpt__bundle_header *h, int32_t num_shards)
{
    memset(h, 0, sizeof(*h));
    h->num_shards = num_shards;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    h->endianness = CKPT__BUNDLE_BIG_ENDIAN;
#else
    h->endianness = CKPT__BUNDLE_LITTLE_ENDIAN;
#endif
    h->producer = 1;
}

int ckpt__bundle_header_encode(ckpt_buf *out, const ckpt__bundle_header *h)
{
    ckpt_buf ver = CKPT_BUF_INIT;
    ckpt_buf packed = CKPT_BUF_INIT;
    size_t nbad = h->num_bad_consumers;
    int err;

    if (nbad > CKPT__BUNDLE_MAX_BAD_CONSUMERS)
        nbad = CKPT__BUNDLE_MAX_BAD_CONSUMERS;
    err = put_int32(&ver, VER_PRODUCER, h->producer);
    if (err == 0)
        err = put_int32(&ver, VER_MIN_CONSUMER, h->min_consumer);
    for (size_t i = 0; err == 0 && i < nbad; i++)
        err =
            ckpt__put_varint64(&packed, (uint64_t)(int64_t)h->bad_consumers[i]);
    if (err == 0 && packed.size > 0)
        err = ckpt__pb_put_len_field(&ver, VER_BAD_CONSUMERS, packed.ptr,
                                     packed.size);
    if (err == 0)
        err = put_int32(out, HDR_NUM_SHARDS, h->num_shards);
    if (err == 0)
        err = put_int32(out, HDR_ENDIANNESS, h->endianness);
    if (err == 0)
        err = ckpt__pb_put_len_field(out, HDR_VERSION, ver.ptr, ver.size);
    ckpt_buf_dispose(&ver);
    ckpt_buf_dispose(&packed);
    return err;
}

static int encode_shape(ckpt_buf *out, const ckpt__bundle_entry *e)
{
    ckpt_buf shape = CKPT_BUF_INIT;
    ckpt_buf dim = CKPT_BUF_INIT;
    int err = 0;

    for (int i = 0; err == 0 && i < e->shape.rank; i++) {
        ckpt__buf_clear(&dim);
        err = put_int64(&dim, DIM_SIZE, e->shape.dims[i]);
        if (err == 0)
            err = ckpt__pb_put_len_field(&shape, SHAPE_DIM, dim.ptr, dim.size);
    }
    if (err == 0 && e->unknown_rank)
        err = ckpt__pb_put_varint_field(&shape, SHAPE_UNKNOWN_RANK, 1);
    /* Always present, even empty (a scalar is `12 00`). */
    if (err == 0)
        err = ckpt__pb_put_len_field(out, ENT_SHAPE, shape.ptr, shape.size);
    ckpt_buf_dispose(&shape);
    ckpt_buf_dispose(&dim);
    return err;
}

static int encode_slice(ckpt_buf *out, const ckpt__tensor_slice *s)
{
    ckpt_buf slice = CKPT_BUF_INIT;
    ckpt_buf ext = CKPT_BUF_INIT;
    int err = 0;

    for (int i = 0; err == 0 && i < s->rank; i++) {
        ckpt__buf_clear(&ext);
        err = put_int64(&ext, EXTENT_START, s->start[i]);
        /* `length` sits in a oneof: written whenever it is set, even 0. */
        if (err == 0 && s->length[i] >= 0)
            err = ckpt__pb_put_varint_field(&ext, EXTENT_LENGTH,
                                            (uint64_t)s->length[i]);
        if (err == 0)
            err =
                ckpt__pb_put_len_field(&slice, SLICE_EXTENT, ext.ptr, ext.size);
    }
    if (err == 0)
        err = ckpt__pb_put_len_field(out, ENT_SLICES, slice.ptr, slice.size);
    ckpt_buf_dispose(&slice);
    ckpt_buf_dispose(&ext);
    return err;
}

int ckpt__bundle_entry_encode(ckpt_buf *out, const ckpt__bundle_entry *e)
{
    int err = put_int32(out, ENT_DTYPE, e->dtype);
    if (err == 0)
        err = encode_shape(out, e);
    if (err == 0)
        err = put_int32(out, ENT_SHARD_ID, e->shard_id);
    if (err == 0)
        err = put_int64(out, ENT_OFFSET, e->offset);
    if (err == 0)
        err = put_int64(out, ENT_SIZE, e->size);
    if (err == 0 && e->crc32c != 0)
        err = ckpt__pb_put_fixed32_field(out, ENT_CRC32C, e->crc32c);
    for (int i = 0; err == 0 && e->slices && i < e->num_slices; i++)
        err = encode_slice(out, &e->slices[i]);
    return err;
}

/* ---- decoders ------------------------------------------------------------ */

/* Every nested decoder gets `base`, the first byte of the outermost
 * message, so that errors report offsets within the whole value. */

static void add_bad_consumer(ckpt__bundle_header *h, uint64_t v)
{
    int32_t c = as_int32(v);
    if (c == 1)
        h->bans_consumer_1 = true;
    if (h->num_bad_consumers < CKPT__BUNDLE_MAX_BAD_CONSUMERS)
        h->bad_consumers[h->num_bad_consumers] = c;
    h->num_bad_consumers++;
}

static int decode_packed_bad_consumers(ckpt__bundle_header *h,
                                       const ckpt__pb_field *f,
                                       const uint8_t *base)
{
    const uint8_t *p = f->data;
    const uint8_t *end = f->data + f->len;
    while (p < end) {
        uint64_t v;
        if (!ckpt__get_varint64(&p, end, &v))
            return ckpt__error(CKPT_ECORRUPT,
                               "header: version: bad packed bad_consumers "
                               "varint at byte %zu",
                               (size_t)(p - base));
        add_bad_consumer(h, v);
    }
    return 0;
}

static int decode_version(ckpt__bundle_header *h, const ckpt__pb_field *outer,
                          const uint8_t *base)
{
    ckpt__pb_reader r;
    ckpt__pb_field f;
    int rc;

    ckpt__pb_reader_init(&r, outer->data, outer->len);
    for (;;) {
        size_t at = pos_of(&r, base);
        rc = ckpt__pb_next(&r, &f);
        if (rc < 0)
            return malformed("header: version", at);
        if (rc == 0)
            return 0;
        switch (f.number) {
        case VER_PRODUCER:
        case VER_MIN_CONSUMER:
            if (f.wire_type != CKPT__PB_VARINT)
                return bad_wire(
                    "header: version",
                    f.number == VER_PRODUCER ? "producer" : "min_consumer", at);
            if (f.number == VER_PRODUCER)
                h->producer = as_int32(f.u64);
            else
                h->min_consumer = as_int32(f.u64);
            break;
        case VER_BAD_CONSUMERS:
            if (f.wire_type == CKPT__PB_VARINT) {
                add_bad_consumer(h, f.u64);
            } else if (f.wire_type == CKPT__PB_LEN) {
                rc = decode_packed_bad_consumers(h, &f, base);
                if (rc < 0)
                    return rc;
            } else {
                return bad_wire("header: version", "bad_consumers", at);
            }
            break;
        default:
            break; /* unknown field: skipped */
        }
    }
}

int ckpt__bundle_header_decode(ckpt__bundle_header *h, const uint8_t *p,
                               size_t n)
{
    ckpt__pb_reader r;
    ckpt__pb_field f;
    int rc;

    memset(h, 0, sizeof(*h));
    ckpt__pb_reader_init(&r, p, n);
    for (;;) {
        size_t at = pos_of(&r, p);
        rc = ckpt__pb_next(&r, &f);
        if (rc < 0)
            return malformed("header", at);
        if (rc == 0)
            return 0;
        switch (f.number) {
        case HDR_NUM_SHARDS:
            if (f.wire_type != CKPT__PB_VARINT)
                return bad_wire("header", "num_shards", at);
            h->num_shards = as_int32(f.u64);
            break;
        case HDR_ENDIANNESS:
            if (f.wire_type != CKPT__PB_VARINT)
                return bad_wire("header", "endianness", at);
            h->endianness = as_int32(f.u64);
            break;
        case HDR_VERSION:
            if (f.wire_type != CKPT__PB_LEN)
                return bad_wire("header", "version", at);
            rc = decode_version(h, &f, p);
            if (rc < 0)
                return rc;
            break;
        default:
            break;
        }
    }
}

int ckpt__bundle_header_check_version(const ckpt__bundle_header *h)
{
    if (h->producer < 0)
        return ckpt__error(CKPT_EVERSION,
                           "header: producer version %d is below the "
                           "minimum 0",
                           (int)h->producer);
    if (h->min_consumer > 1)
        return ckpt__error(CKPT_EVERSION,
                           "header: needs consumer version %d or later, this "
                           "reader is 1",
                           (int)h->min_consumer);
    if (h->bans_consumer_1)
        return ckpt__error(CKPT_EVERSION,
                           "header: consumer version 1 (this reader) is "
                           "listed as bad");
    return 0;
}

static int decode_dim(ckpt__bundle_entry *e, const ckpt__pb_field *outer,
                      const uint8_t *base)
{
    ckpt__pb_reader r;
    ckpt__pb_field f;
    int64_t size = 0;
    size_t start = (size_t)(outer->data - base);
    int rc;

    if (e->shape.rank >= CKPT_MAX_RANK)
        return ckpt__error(CKPT_ECORRUPT,
                           "entry: shape: more than %d dims (byte %zu)",
                           CKPT_MAX_RANK, start);
    ckpt__pb_reader_init(&r, outer->data, outer->len);
    for (;;) {
        size_t at = pos_of(&r, base);
        rc = ckpt__pb_next(&r, &f);
        if (rc < 0)
            return malformed("entry: shape: dim", at);
        if (rc == 0)
            break;
        if (f.number == DIM_SIZE) {
            if (f.wire_type != CKPT__PB_VARINT)
                return bad_wire("entry: shape: dim", "size", at);
            size = (int64_t)f.u64;
        } else if (f.number == DIM_NAME) {
            if (f.wire_type != CKPT__PB_LEN)
                return bad_wire("entry: shape: dim", "name", at);
        }
    }
    if (size < 0)
        return ckpt__error(CKPT_ECORRUPT,
                           "entry: shape: dim %d is negative (%lld) at byte "
                           "%zu",
                           e->shape.rank, (long long)size, start);
    e->shape.dims[e->shape.rank++] = size;
    return 0;
}

static int decode_shape(ckpt__bundle_entry *e, const ckpt__pb_field *outer,
                        const uint8_t *base)
{
    ckpt__pb_reader r;
    ckpt__pb_field f;
    int rc;

    ckpt__pb_reader_init(&r, outer->data, outer->len);
    for (;;) {
        size_t at = pos_of(&r, base);
        rc = ckpt__pb_next(&r, &f);
        if (rc < 0)
            return malformed("entry: shape", at);
        if (rc == 0)
            return 0;
        if (f.number == SHAPE_DIM) {
            if (f.wire_type != CKPT__PB_LEN)
                return bad_wire("entry: shape", "dim", at);
            rc = decode_dim(e, &f, base);
            if (rc < 0)
                return rc;
        } else if (f.number == SHAPE_UNKNOWN_RANK) {
            if (f.wire_type != CKPT__PB_VARINT)
                return bad_wire("entry: shape", "unknown_rank", at);
            e->unknown_rank = f.u64 != 0;
        }
    }
}

static int decode_extent(ckpt__tensor_slice *s, const ckpt__pb_field *outer,
                         const uint8_t *base)
{
    ckpt__pb_reader r;
    ckpt__pb_field f;
    int64_t start = 0;
    int64_t length = -1;
    int rc;

    if (s->rank >= CKPT_MAX_RANK)
        return ckpt__error(CKPT_ECORRUPT,
                           "entry: slice: more than %d extents (byte %zu)",
                           CKPT_MAX_RANK, (size_t)(outer->data - base));
    ckpt__pb_reader_init(&r, outer->data, outer->len);
    for (;;) {
        size_t at = pos_of(&r, base);
        rc = ckpt__pb_next(&r, &f);
        if (rc < 0)
            return malformed("entry: slice: extent", at);
        if (rc == 0)
            break;
        if (f.number == EXTENT_START || f.number == EXTENT_LENGTH) {
            if (f.wire_type != CKPT__PB_VARINT)
                return bad_wire("entry: slice: extent",
                                f.number == EXTENT_START ? "start" : "length",
                                at);
            if (f.number == EXTENT_START)
                start = (int64_t)f.u64;
            else
                length = (int64_t)f.u64;
        }
    }
    s->start[s->rank] = start;
    s->length[s->rank] = length < 0 ? -1 : length;
    s->rank++;
    return 0;
}

static int decode_slice(ckpt__tensor_slice *s, const ckpt__pb_field *outer,
                        const uint8_t *base)
{
    ckpt__pb_reader r;
    ckpt__pb_field f;
    int rc;

    memset(s, 0, sizeof(*s));
    ckpt__pb_reader_init(&r, outer->data, outer->len);
    for (;;) {
        size_t at = pos_of(&r, base);
        rc = ckpt__pb_next(&r, &f);
        if (rc < 0)
            return malformed("entry: slice", at);
        if (rc == 0)
            return 0;
        if (f.number == SLICE_EXTENT) {
            if (f.wire_type != CKPT__PB_LEN)
                return bad_wire("entry: slice", "extent", at);
            rc = decode_extent(s, &f, base);
            if (rc < 0)
                return rc;
        }
    }
}

static const char *entry_field_name(uint32_t number)
{
    static const char *const names[] = {"?",      "dtype", "shape",  "shard_id",
                                        "offset", "size",  "crc32c", "slices"};
    return number < CKPT__ARRAY_SIZE(names) ? names[number] : "?";
}

static int entry_wire_type(uint32_t number)
{
    switch (number) {
    case ENT_SHAPE:
    case ENT_SLICES:
        return CKPT__PB_LEN;
    case ENT_CRC32C:
        return CKPT__PB_FIXED32;
    default:
        return CKPT__PB_VARINT;
    }
}

int ckpt__bundle_entry_decode(ckpt__bundle_entry *e, const uint8_t *p, size_t n)
{
    ckpt__pb_reader r;
    ckpt__pb_field f;
    ckpt__tensor_slice slice;
    int rc;

    memset(e, 0, sizeof(*e));
    ckpt__pb_reader_init(&r, p, n);
    for (;;) {
        size_t at = pos_of(&r, p);
        rc = ckpt__pb_next(&r, &f);
        if (rc < 0)
            return malformed("entry", at);
        if (rc == 0)
            return 0;
        if (f.number >= ENT_DTYPE && f.number <= ENT_SLICES &&
            f.wire_type != entry_wire_type(f.number))
            return bad_wire("entry", entry_field_name(f.number), at);
        switch (f.number) {
        case ENT_DTYPE:
            e->dtype = as_int32(f.u64);
            break;
        case ENT_SHAPE:
            rc = decode_shape(e, &f, p);
            if (rc < 0)
                return rc;
            break;
        case ENT_SHARD_ID:
            e->shard_id = as_int32(f.u64);
            break;
        case ENT_OFFSET:
            e->offset = (int64_t)f.u64;
            break;
        case ENT_SIZE:
            e->size = (int64_t)f.u64;
            break;
        case ENT_CRC32C:
            e->crc32c = (uint32_t)f.u64;
            break;
        case ENT_SLICES:
            rc = decode_slice(&slice, &f, p);
            if (rc < 0)
                return rc;
            e->num_slices++;
            break;
        default:
            break;
        }
    }
}

int ckpt__bundle_entry_get_slice(ckpt__tensor_slice *out, const uint8_t *p,
                                 size_t n, int index)
{
    ckpt__pb_reader r;
    ckpt__pb_field f;
    int seen = 0;
    int rc;

    ckpt__pb_reader_init(&r, p, n);
    for (;;) {
        size_t at = pos_of(&r, p);
        rc = ckpt__pb_next(&r, &f);
        if (rc < 0)
            return malformed("entry", at);
        if (rc == 0)
            return ckpt__error(CKPT_ENOTFOUND, "entry: no slice %d (has %d)",
                               index, seen);
        if (f.number != ENT_SLICES)
            continue;
        if (f.wire_type != CKPT__PB_LEN)
            return bad_wire("entry", "slices", at);
        if (seen == index)
            return decode_slice(out, &f, p);
        seen++;
    }
}
