/* util/crc32c.h - CRC-32C (Castagnoli): implementations from a portable
 * table-driven one to carry-less-multiply folding on 512-bit vectors, one
 * chosen at run time (CPU features, then a one-time measurement); the mask
 * TensorFlow and LevelDB apply to stored CRCs. */
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

/* Whether a hardware path (anything but the portable one) is in use. */
int ckpt__crc32c_hw_available(void);

/* The implementations (x86-64's slowest first, then AArch64's). The entry
 * points use the one chosen once per process (ckpt__crc32c_impl): among those
 * the CPU has, the fastest over a 64 KiB buffer measured at first use; the
 * environment variable CKPT_CRC32C_IMPL set to one of the names
 * (ckpt__crc32c_impl_name) forces that one when the CPU has it (for tests and
 * comparison). */
enum ckpt__crc32c_impl_id {
    CKPT__CRC32C_PORTABLE,   /* slicing-by-8 tables: "portable" */
    CKPT__CRC32C_SSE42,      /* crc32 instruction, 3 streams: "sse42" */
    CKPT__CRC32C_PCLMUL,     /* folding, 128-bit PCLMULQDQ: "pclmul" */
    CKPT__CRC32C_VPCLMUL256, /* folding, 256-bit VPCLMULQDQ: "vpclmul256" */
    CKPT__CRC32C_VPCLMUL512, /* folding, 512-bit VPCLMULQDQ: "vpclmul512" */
    CKPT__CRC32C_ARMV8,      /* AArch64 crc32c instructions, 3 streams:
                                "armv8" */
    CKPT__CRC32C_IMPL_COUNT
};

/* The implementation in use. */
int ckpt__crc32c_impl(void);

/* Its name ("portable", "sse42", ...), or NULL for an unknown id. */
const char *ckpt__crc32c_impl_name(int impl);

/* Whether this CPU can run `impl` (portable: always). */
int ckpt__crc32c_impl_available(int impl);

/* ckpt__crc32c_extend and ckpt__crc32c_copy_stores through a given
 * implementation (the portable one when this CPU cannot run `impl`). */
uint32_t ckpt__crc32c_extend_with(int impl, uint32_t crc, const void *data,
                                  size_t n);
uint32_t ckpt__crc32c_copy_with(int impl, uint32_t crc, void *dst,
                                const void *src, size_t n, int streaming);

/* Copy `n` bytes from src to dst and return the CRC extended over them,
 * reading the source once (fused copy + checksum). Copies of 256 KiB or
 * more store with non-temporal writes when that was measured faster on
 * this machine (once per process, at the first such copy); a destination
 * less than 512 bytes ahead of the source modulo 4 KiB, where 4K aliasing
 * can make streaming slow, only when it was measured faster there too. */
uint32_t ckpt__crc32c_copy(uint32_t crc, void *dst, const void *src, size_t n);

/* As ckpt__crc32c_copy, but never the one to run the measurement: streams
 * as measured once another copy has measured it, and stores plainly until
 * then. For the copies of a restore, often a process's first long copy (a
 * job restarting from its checkpoint), which would otherwise pay the
 * measurement's fresh memory: about 6 ms (5.5-9.2 over 7 runs) on an AMD
 * EPYC VM where a page fault is dear, a third of a 64 MiB restore there. */
uint32_t ckpt__crc32c_copy_unprobed(uint32_t crc, void *dst, const void *src,
                                    size_t n);

/* Whether that measurement is done (tests). */
int ckpt__crc32c_copy_measured(void);

/* The same with the choice made by the caller: `streaming` non-zero stores
 * copies of 256 KiB or more with non-temporal writes (hardware path). */
uint32_t ckpt__crc32c_copy_stores(uint32_t crc, void *dst, const void *src,
                                  size_t n, int streaming);

/* Whether ckpt__crc32c_copy streams long copies here (measures once), and
 * whether it does so into a destination a little ahead of the source
 * modulo 4 KiB (never when the first is 0). */
int ckpt__crc32c_copy_streams(void);
int ckpt__crc32c_copy_streams_near(void);

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
