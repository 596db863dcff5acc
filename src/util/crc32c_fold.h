/* util/crc32c_fold.h - the carry-less-multiply folding kernels of CRC-32C
 * (util/crc32c_fold.c), shared only with util/crc32c.c, which picks one.
 *
 * Every kernel takes and returns the raw CRC register (the state before the
 * final inversion), checksums `n` bytes at `src` and, when `dst` is not
 * NULL, copies them there too (with non-temporal stores when `stream` is
 * true). They exist on x86-64 only; the caller checks the CPU features
 * named next to each before calling it. */
#ifndef CKPT_UTIL_CRC32C_FOLD_H
#define CKPT_UTIL_CRC32C_FOLD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__x86_64__) && defined(__GNUC__)
#define CKPT__CRC_FOLD 1

/* The crc32 instruction over `n` bytes, 8 at a time then byte by byte
 * (copying to `dst` when not NULL): the short tails of every hardware
 * path, here and in util/crc32c.c (needs sse4.2). */
uint32_t ckpt__crc32c_sse42_bytes(uint32_t reg, uint8_t *dst,
                                  const uint8_t *src, size_t n);

/* Compute the folding constants; call once before any kernel. */
void ckpt__crc32c_fold_init(void);

/* 128-bit lanes, PCLMULQDQ (needs pclmul and sse4.2). */
uint32_t ckpt__crc32c_fold128(uint32_t reg, uint8_t *dst, const uint8_t *src,
                              size_t n, bool stream);

/* 256-bit lanes, VPCLMULQDQ (needs vpclmulqdq, avx2, pclmul, sse4.2). */
uint32_t ckpt__crc32c_fold256(uint32_t reg, uint8_t *dst, const uint8_t *src,
                              size_t n, bool stream);

/* 512-bit lanes, VPCLMULQDQ (needs vpclmulqdq, avx512f, pclmul, sse4.2). */
uint32_t ckpt__crc32c_fold512(uint32_t reg, uint8_t *dst, const uint8_t *src,
                              size_t n, bool stream);
#else
#define CKPT__CRC_FOLD 0
#endif

#endif
