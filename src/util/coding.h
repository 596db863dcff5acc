/* util/coding.h - little-endian fixed-width integers and base-128 varints
 * (LevelDB/protobuf style). Encoders append to a ckpt_buf or write into a
 * caller array; every decoder is bounds-checked and reports failure instead
 * of reading past `end`. */
#ifndef CKPT_UTIL_CODING_H
#define CKPT_UTIL_CODING_H

#include "ckpt/common.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define CKPT__VARINT32_MAX 5
#define CKPT__VARINT64_MAX 10

static inline void ckpt__encode_fixed32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static inline void ckpt__encode_fixed64(uint8_t *p, uint64_t v)
{
    ckpt__encode_fixed32(p, (uint32_t)v);
    ckpt__encode_fixed32(p + 4, (uint32_t)(v >> 32));
}

static inline uint32_t ckpt__decode_fixed32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
           ((uint32_t)p[3] << 24);
}

static inline uint64_t ckpt__decode_fixed64(const uint8_t *p)
{
    return (uint64_t)ckpt__decode_fixed32(p) |
           ((uint64_t)ckpt__decode_fixed32(p + 4) << 32);
}

/* Write the varint of v at p (room for CKPT__VARINT64_MAX bytes); returns
 * the number of bytes written. */
size_t ckpt__encode_varint64(uint8_t *p, uint64_t v);

/* Number of bytes the varint of v takes. */
size_t ckpt__varint_length(uint64_t v);

/* Append encodings to a buffer; return 0 or CKPT_ENOMEM. */
int ckpt__put_fixed32(ckpt_buf *b, uint32_t v);
int ckpt__put_fixed64(ckpt_buf *b, uint64_t v);
int ckpt__put_varint32(ckpt_buf *b, uint32_t v);
int ckpt__put_varint64(ckpt_buf *b, uint64_t v);
/* varint length then the bytes */
int ckpt__put_length_prefixed(ckpt_buf *b, const void *p, size_t n);

/* Decode a varint starting at *p, not reading at or past `end`. On success
 * store it, advance *p and return true; on truncation or a varint longer than
 * its type allows (or with bits beyond 32/64) return false, *p unchanged. */
bool ckpt__get_varint32(const uint8_t **p, const uint8_t *end, uint32_t *out);
bool ckpt__get_varint64(const uint8_t **p, const uint8_t *end, uint64_t *out);

#endif
