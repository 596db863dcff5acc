/* util/pb_wire.h - protobuf wire-format primitives: reading fields one at
 * a time from a bounded buffer (skipping unknown ones is the caller's
 * choice) and appending tagged fields to a ckpt_buf. Only the wire types
 * TensorFlow's checkpoint messages use are supported: 0 varint,
 * 1 fixed64, 2 length-delimited, 5 fixed32 (3/4 groups are rejected). */
#ifndef CKPT_UTIL_PB_WIRE_H
#define CKPT_UTIL_PB_WIRE_H

#include "ckpt/common.h"

#include <stdbool.h>
#include <stdint.h>

enum {
    CKPT__PB_VARINT = 0,
    CKPT__PB_FIXED64 = 1,
    CKPT__PB_LEN = 2,
    CKPT__PB_FIXED32 = 5
};

/* A cursor over a message's bytes. */
typedef struct ckpt__pb_reader {
    const uint8_t *p;
    const uint8_t *end;
} ckpt__pb_reader;

/* One decoded field. For VARINT/FIXED64/FIXED32 the value is in `u64`
 * (fixed32 zero-extended); for LEN the payload is `data`/`len`. */
typedef struct ckpt__pb_field {
    uint32_t number;
    int wire_type;
    uint64_t u64;
    const uint8_t *data;
    size_t len;
} ckpt__pb_field;

static inline void ckpt__pb_reader_init(ckpt__pb_reader *r, const void *p,
                                        size_t n)
{
    r->p = (const uint8_t *)p;
    r->end = r->p + n;
}

/* Read the next field. Returns 1 with *f filled, 0 at the clean end of the
 * message, or CKPT_ECORRUPT (truncated varint or payload, field number 0,
 * unsupported wire type). Sets no error message: callers add context. */
int ckpt__pb_next(ckpt__pb_reader *r, ckpt__pb_field *f);

/* Writers: append a tag plus payload. Return 0 or CKPT_ENOMEM. */
int ckpt__pb_put_varint_field(ckpt_buf *b, uint32_t number, uint64_t v);
int ckpt__pb_put_fixed32_field(ckpt_buf *b, uint32_t number, uint32_t v);
int ckpt__pb_put_len_field(ckpt_buf *b, uint32_t number, const void *p,
                           size_t n);

#endif
