/* format/string_record.c - the length checksum of string records (see
 * string_record.h). */
#include "format/string_record.h"

#include "util/coding.h"
#include "util/crc32c.h"

uint32_t ckpt__string_length_crc(uint32_t crc, uint64_t len, bool big)
{
    uint8_t word[8];
    if (len <= 0xffffffffu) {
        uint32_t v = (uint32_t)len;
        ckpt__encode_fixed32(word, big ? __builtin_bswap32(v) : v);
        return ckpt__crc32c_extend(crc, word, 4);
    }
    ckpt__encode_fixed64(word, big ? __builtin_bswap64(len) : len);
    return ckpt__crc32c_extend(crc, word, 8);
}

uint32_t ckpt__string_checksum_get(const uint8_t *p, bool big)
{
    uint32_t v = ckpt__decode_fixed32(p);
    return big ? __builtin_bswap32(v) : v;
}

void ckpt__string_checksum_put(uint8_t *p, uint32_t masked, bool big)
{
    ckpt__encode_fixed32(p, big ? __builtin_bswap32(masked) : masked);
}
