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

/* Every decoder gets `base`, the first byte of the outermost message, so
 * that errors report offsets within the whole value.
 *
 * One walk serves every message: for_each_field reads the fields in order,
 * skips those its schema does not list, rejects a listed field whose wire
 * type differs from the schema's, and hands the others to the message's
 * own callback. */

/* A field of a message's schema. A repeated scalar may also arrive packed
 * (one length-delimited field holding the varints): `packed_ok`. */
typedef struct field_spec {
    uint32_t number;
    int wire_type;
    bool packed_ok;
    const char *name; /* for messages */
} field_spec;

typedef struct message_spec {
    const char *what; /* "entry: shape: dim": where, for messages */
    const field_spec *fields;
    size_t nfields;
} message_spec;

/* Handles one listed field of `target`'s message; 0 to go on, a negative
 * error, or a positive value to stop the walk with. */
typedef int (*field_fn)(void *target, const ckpt__pb_field *f,
                        const uint8_t *base);

static const field_spec *find_field(const message_spec *m, uint32_t number)
{
    for (size_t i = 0; i < m->nfields; i++)
        if (m->fields[i].number == number)
            return &m->fields[i];
    return NULL;
}

/* Walk the fields of the message p[0..n) (within the outermost message at
 * `base`). Returns 0 at its end, or the first non-zero result of `fn` or
 * of the checks. */
static int for_each_field(const message_spec *m, const uint8_t *p, size_t n,
                          const uint8_t *base, field_fn fn, void *target)
{
    ckpt__pb_reader r;
    ckpt__pb_field f;
    ckpt__pb_reader_init(&r, p, n);
    for (;;) {
        size_t at = pos_of(&r, base);
        const field_spec *spec;
        int rc = ckpt__pb_next(&r, &f);
        if (rc < 0)
            return malformed(m->what, at);
        if (rc == 0)
            return 0;
        spec = find_field(m, f.number);
        if (!spec)
            continue; /* unknown field: skipped */
        if (f.wire_type != spec->wire_type &&
            !(spec->packed_ok && f.wire_type == CKPT__PB_LEN))
            return bad_wire(m->what, spec->name, at);
        rc = fn(target, &f, base);
        if (rc != 0)
            return rc;
    }
}

/* ---- BundleHeaderProto ----------------------------------------------------
 */

static const field_spec version_fields[] = {
    {VER_PRODUCER, CKPT__PB_VARINT, false, "producer"},
    {VER_MIN_CONSUMER, CKPT__PB_VARINT, false, "min_consumer"},
    {VER_BAD_CONSUMERS, CKPT__PB_VARINT, true, "bad_consumers"},
};
static const message_spec version_message = {"header: version", version_fields,
                                             CKPT__ARRAY_SIZE(version_fields)};

static const field_spec header_fields[] = {
    {HDR_NUM_SHARDS, CKPT__PB_VARINT, false, "num_shards"},
    {HDR_ENDIANNESS, CKPT__PB_VARINT, false, "endianness"},
    {HDR_VERSION, CKPT__PB_LEN, false, "version"},
};
static const message_spec header_message = {"header", header_fields,
                                            CKPT__ARRAY_SIZE(header_fields)};

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

static int version_field(void *target, const ckpt__pb_field *f,
                         const uint8_t *base)
{
    ckpt__bundle_header *h = target;
    switch (f->number) {
    case VER_PRODUCER:
        h->producer = as_int32(f->u64);
        return 0;
    case VER_MIN_CONSUMER:
        h->min_consumer = as_int32(f->u64);
        return 0;
    default: /* VER_BAD_CONSUMERS, one or packed */
        if (f->wire_type == CKPT__PB_LEN)
            return decode_packed_bad_consumers(h, f, base);
        add_bad_consumer(h, f->u64);
        return 0;
    }
}

static int header_field(void *target, const ckpt__pb_field *f,
                        const uint8_t *base)
{
    ckpt__bundle_header *h = target;
    switch (f->number) {
    case HDR_NUM_SHARDS:
        h->num_shards = as_int32(f->u64);
        return 0;
    case HDR_ENDIANNESS:
        h->endianness = as_int32(f->u64);
        return 0;
    default: /* HDR_VERSION */
        return for_each_field(&version_message, f->data, f->len, base,
                              version_field, h);
    }
}

int ckpt__bundle_header_decode(ckpt__bundle_header *h, const uint8_t *p,
                               size_t n)
{
    memset(h, 0, sizeof(*h));
    return for_each_field(&header_message, p, n, p, header_field, h);
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

/* ---- BundleEntryProto -----------------------------------------------------
 */

static const field_spec dim_fields[] = {
    {DIM_SIZE, CKPT__PB_VARINT, false, "size"},
    {DIM_NAME, CKPT__PB_LEN, false, "name"},
};
static const message_spec dim_message = {"entry: shape: dim", dim_fields,
                                         CKPT__ARRAY_SIZE(dim_fields)};

static const field_spec shape_fields[] = {
    {SHAPE_DIM, CKPT__PB_LEN, false, "dim"},
    {SHAPE_UNKNOWN_RANK, CKPT__PB_VARINT, false, "unknown_rank"},
};
static const message_spec shape_message = {"entry: shape", shape_fields,
                                           CKPT__ARRAY_SIZE(shape_fields)};

static const field_spec extent_fields[] = {
    {EXTENT_START, CKPT__PB_VARINT, false, "start"},
    {EXTENT_LENGTH, CKPT__PB_VARINT, false, "length"},
};
static const message_spec extent_message = {
    "entry: slice: extent", extent_fields, CKPT__ARRAY_SIZE(extent_fields)};

static const field_spec slice_fields[] = {
    {SLICE_EXTENT, CKPT__PB_LEN, false, "extent"},
};
static const message_spec slice_message = {"entry: slice", slice_fields,
                                           CKPT__ARRAY_SIZE(slice_fields)};

static const field_spec entry_fields[] = {
    {ENT_DTYPE, CKPT__PB_VARINT, false, "dtype"},
    {ENT_SHAPE, CKPT__PB_LEN, false, "shape"},
    {ENT_SHARD_ID, CKPT__PB_VARINT, false, "shard_id"},
    {ENT_OFFSET, CKPT__PB_VARINT, false, "offset"},
    {ENT_SIZE, CKPT__PB_VARINT, false, "size"},
    {ENT_CRC32C, CKPT__PB_FIXED32, false, "crc32c"},
    {ENT_SLICES, CKPT__PB_LEN, false, "slices"},
};
static const message_spec entry_message = {"entry", entry_fields,
                                           CKPT__ARRAY_SIZE(entry_fields)};

/* ckpt__bundle_entry_get_slice looks at the slices only. */
static const field_spec entry_slices_fields[] = {
    {ENT_SLICES, CKPT__PB_LEN, false, "slices"},
};
static const message_spec entry_slices_message = {
    "entry", entry_slices_fields, CKPT__ARRAY_SIZE(entry_slices_fields)};

static int dim_field(void *target, const ckpt__pb_field *f, const uint8_t *base)
{
    int64_t *size = target;
    (void)base;
    if (f->number == DIM_SIZE)
        *size = (int64_t)f->u64;
    return 0; /* a dim's name is not kept */
}

static int decode_dim(ckpt__bundle_entry *e, const ckpt__pb_field *outer,
                      const uint8_t *base)
{
    int64_t size = 0;
    size_t start = (size_t)(outer->data - base);
    int rc;

    if (e->shape.rank >= CKPT_MAX_RANK)
        return ckpt__error(CKPT_ECORRUPT,
                           "entry: shape: more than %d dims (byte %zu)",
                           CKPT_MAX_RANK, start);
    rc = for_each_field(&dim_message, outer->data, outer->len, base, dim_field,
                        &size);
    if (rc < 0)
        return rc;
    if (size < 0)
        return ckpt__error(CKPT_ECORRUPT,
                           "entry: shape: dim %d is negative (%lld) at byte "
                           "%zu",
                           e->shape.rank, (long long)size, start);
    e->shape.dims[e->shape.rank++] = size;
    return 0;
}

static int shape_field(void *target, const ckpt__pb_field *f,
                       const uint8_t *base)
{
    ckpt__bundle_entry *e = target;
    if (f->number == SHAPE_DIM)
        return decode_dim(e, f, base);
    e->unknown_rank = f->u64 != 0; /* SHAPE_UNKNOWN_RANK */
    return 0;
}

/* An extent's fields; `length` -1 while absent. */
struct extent_fields {
    int64_t start;
    int64_t length;
};

static int extent_field(void *target, const ckpt__pb_field *f,
                        const uint8_t *base)
{
    struct extent_fields *x = target;
    (void)base;
    if (f->number == EXTENT_START)
        x->start = (int64_t)f->u64;
    else
        x->length = (int64_t)f->u64;
    return 0;
}

static int decode_extent(ckpt__tensor_slice *s, const ckpt__pb_field *outer,
                         const uint8_t *base)
{
    struct extent_fields x = {0, -1};
    int rc;

    if (s->rank >= CKPT_MAX_RANK)
        return ckpt__error(CKPT_ECORRUPT,
                           "entry: slice: more than %d extents (byte %zu)",
                           CKPT_MAX_RANK, (size_t)(outer->data - base));
    rc = for_each_field(&extent_message, outer->data, outer->len, base,
                        extent_field, &x);
    if (rc < 0)
        return rc;
    s->start[s->rank] = x.start;
    s->length[s->rank] = x.length < 0 ? -1 : x.length;
    s->rank++;
    return 0;
}

static int slice_field(void *target, const ckpt__pb_field *f,
                       const uint8_t *base)
{
    return decode_extent(target, f, base); /* SLICE_EXTENT */
}

static int decode_slice(ckpt__tensor_slice *s, const ckpt__pb_field *outer,
                        const uint8_t *base)
{
    memset(s, 0, sizeof(*s));
    return for_each_field(&slice_message, outer->data, outer->len, base,
                          slice_field, s);
}

static int entry_field(void *target, const ckpt__pb_field *f,
                       const uint8_t *base)
{
    ckpt__bundle_entry *e = target;
    ckpt__tensor_slice slice;
    int rc;
    switch (f->number) {
    case ENT_DTYPE:
        e->dtype = as_int32(f->u64);
        return 0;
    case ENT_SHAPE:
        return for_each_field(&shape_message, f->data, f->len, base,
                              shape_field, e);
    case ENT_SHARD_ID:
        e->shard_id = as_int32(f->u64);
        return 0;
    case ENT_OFFSET:
        e->offset = (int64_t)f->u64;
        return 0;
    case ENT_SIZE:
        e->size = (int64_t)f->u64;
        return 0;
    case ENT_CRC32C:
        e->crc32c = (uint32_t)f->u64;
        return 0;
    default: /* ENT_SLICES: checked and counted; read with get_slice */
        rc = decode_slice(&slice, f, base);
        if (rc < 0)
            return rc;
        e->num_slices++;
        return 0;
    }
}

int ckpt__bundle_entry_decode(ckpt__bundle_entry *e, const uint8_t *p, size_t n)
{
    memset(e, 0, sizeof(*e));
    return for_each_field(&entry_message, p, n, p, entry_field, e);
}

/* The search of ckpt__bundle_entry_get_slice. */
struct slice_search {
    ckpt__tensor_slice *out;
    int index;
    int seen;
};

static int slice_search_field(void *target, const ckpt__pb_field *f,
                              const uint8_t *base)
{
    struct slice_search *q = target;
    int rc;
    if (q->seen++ < q->index)
        return 0;
    rc = decode_slice(q->out, f, base);
    return rc < 0 ? rc : 1; /* found: stop */
}

int ckpt__bundle_entry_get_slice(ckpt__tensor_slice *out, const uint8_t *p,
                                 size_t n, int index)
{
    struct slice_search q = {out, index, 0};
    int rc =
        for_each_field(&entry_slices_message, p, n, p, slice_search_field, &q);
    if (rc < 0)
        return rc;
    if (rc == 0)
        return ckpt__error(CKPT_ENOTFOUND, "entry: no slice %d (has %d)", index,
                           q.seen);
    return 0;
}
