/* util/crc32c.h - CRC-32C (Castagnoli) with an SSE4.2 path chosen at run
 * time and a portable table-driven fallback; the mask TensorFlow and LevelDB
 * apply to stored CRCs. */
#ifndef CKPT_UTIL_CRC32C_H
#define CKPT_UTIL_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Continue the finalised CRC `crc` over `n` bytes (start with 0):
 * ckpt__crc32c_extend(ckpt__crc32c_extend(0, a, na), b, nb) equals the CRC of
 * a||b. Uses the hardware path when the CPU has SSE4.2. */
uint32_t ckpt__crc32c_extend(uint32_t crc, const void *data, size_t n);

/* CRC-32C of `n` bytes. */
uint32_t ckpt__crc32c(const void *data, size_t n);

/* The portable implementation, always (for tests and comparison). */
uint32_t ckpt__crc32c_extend_portable(uint32_t crc, const void *data, size_t n);

/* Whether the hardware path is in use. */
int ckpt__crc32c_hw_available(void);

/* Copy `n` bytes from src to dst and return the CRC extended over them,
 * reading the source once (fused copy + checksum). Copies of 256 KiB or
 * more store with non-temporal writes when that was measured faster on
 * this machine (once per process, at the first such copy), unless the
 * destination is less than 512 bytes ahead of the source modulo 4 KiB
 * (4K aliasing makes streaming slow there). */
uint32_t ckpt__crc32c_copy(uint32_t crc, void *dst, const void *src, size_t n);

/* The same with the choice made by the caller: `streaming` non-zero stores
 * copies of 256 KiB or more with non-temporal writes (hardware path). */
uint32_t ckpt__crc32c_copy_stores(uint32_t crc, void *dst, const void *src,
                                  size_t n, int streaming);

/* Whether ckpt__crc32c_copy streams long copies here (measures once). */
int ckpt__crc32c_copy_streams(void);

/* The CRC of a||b from crc_a = CRC of a, crc_b = CRC of b and the length
 * of b (util/crc32c_combine.c); pieces checksummed apart, e.g. by two
 * threads, are joined with it. */
uint32_t ckpt__crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);

#define CKPT__CRC_MASK_DELTA 0xa282ead8u

static inline uint32_t ckpt__crc32c_mask(uint32_t crc)
{
    return ((crc >> 15) | (crc << 17)) + CKPT__CRC_MASK_DELTA;
}

static inline uint32_t ckpt__crc32c_unmask(uint32_t masked)
{
    uint32_t r = masked - CKPT__CRC_MASK_DELTA;
    return (r >> 17) | (r << 15);
}

#endif
