/* util/pb_wire.c - protobuf wire-format field reader and tagged-field
 * writers (see pb_wire.h).
 *
 *   field: varint tag (number << 3 | wire_type) | payload
 *   payload: 0 varint | 1 fixed64 LE | 2 varint length + bytes | 5 fixed32 LE
 */
#include "util/pb_wire.h"

#include "common/internal.h"
#include "util/coding.h"

int ckpt__pb_next(ckpt__pb_reader *r, ckpt__pb_field *f)
{
    const uint8_t *p = r->p;
    uint32_t tag;
    uint64_t len;

    if (p >= r->end)
        return 0;
    if (!ckpt__get_varint32(&p, r->end, &tag))
        return CKPT_ECORRUPT;
    f->number = tag >> 3;
    f->wire_type = (int)(tag & 7);
    f->u64 = 0;
    f->data = NULL;
    f->len = 0;
    if (f->number == 0)
        return CKPT_ECORRUPT;
    switch (f->wire_type) {
    case CKPT__PB_VARINT:
        if (!ckpt__get_varint64(&p, r->end, &f->u64))
            return CKPT_ECORRUPT;
        break;
    case CKPT__PB_FIXED64:
        if ((size_t)(r->end - p) < 8)
            return CKPT_ECORRUPT;
        f->u64 = ckpt__decode_fixed64(p);
        p += 8;
        break;
    case CKPT__PB_FIXED32:
        if ((size_t)(r->end - p) < 4)
            return CKPT_ECORRUPT;
        f->u64 = ckpt__decode_fixed32(p);
        p += 4;
        break;
    case CKPT__PB_LEN:
        if (!ckpt__get_varint64(&p, r->end, &len))
            return CKPT_ECORRUPT;
        if (len > (uint64_t)(r->end - p))
            return CKPT_ECORRUPT;
        f->data = p;
        f->len = (size_t)len;
        p += len;
        break;
    default:
        return CKPT_ECORRUPT;
    }
    r->p = p;
    return 1;
}

static int put_tag(ckpt_buf *b, uint32_t number, int wire_type)
{
    return ckpt__put_varint32(b, (number << 3) | (uint32_t)wire_type);
}

int ckpt__pb_put_varint_field(ckpt_buf *b, uint32_t number, uint64_t v)
{
    int err = put_tag(b, number, CKPT__PB_VARINT);
    if (err < 0)
        return err;
    return ckpt__put_varint64(b, v);
}

int ckpt__pb_put_fixed32_field(ckpt_buf *b, uint32_t number, uint32_t v)
{
    int err = put_tag(b, number, CKPT__PB_FIXED32);
    if (err < 0)
        return err;
    return ckpt__put_fixed32(b, v);
}

int ckpt__pb_put_len_field(ckpt_buf *b, uint32_t number, const void *p,
                           size_t n)
{
    int err = put_tag(b, number, CKPT__PB_LEN);
    if (err < 0)
        return err;
    return ckpt__put_length_prefixed(b, p, n);
}
