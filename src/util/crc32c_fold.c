/* util/crc32c_fold.c - CRC-32C by folding with carry-less multiplication
 * (PCLMULQDQ on 128-bit lanes, VPCLMULQDQ on 256- and 512-bit vectors).
 *
 * The math. Read the message as a polynomial over GF(2) whose earliest bit
 * is the highest power (the reflected order: bit 0 of byte 0 comes first).
 * The raw CRC register after a message M, started from 0, is M * x^32 mod P
 * (P the Castagnoli polynomial), so two messages congruent mod P that end at
 * the same place leave the same register. A 16-byte lane A that is followed
 * by D more bits of message contributes A * x^D to it. Split A = H x^64 + L
 * (H its first 8 bytes); then
 *     A * x^D  ==  H * (x^(D+64) mod P)  +  L * (x^D mod P)     (mod P),
 * two 64x32-bit carry-less products below 128 bits: A has been "folded"
 * forward by D bits and can be xored into the lane that starts D bits later.
 * Keeping several lanes in flight (4 per loop iteration, each folded over the
 * width of one iteration) and folding them into one at the end leaves a
 * single 16-byte lane congruent to everything read; the crc32 instruction
 * over those 16 bytes from a zero register then gives the register of the
 * whole prefix, and the last bytes (< 16) go through the crc32 instruction
 * as well. The initial register enters by xoring it into the first 4 bytes.
 *
 * Constants. The CPU multiplies 64-bit operands whose bit j stands for
 * x^(63-j) (both reflected) and returns a 127-bit product in bits 0..126 of
 * a 128-bit lane, in which bit t stands for x^(127-t): the product appears
 * multiplied by x. A constant C kept as a reflected 32-bit value in the low
 * half of a 64-bit operand stands for C * x^32. So the constant that
 * multiplies H is x^(D+64-33) mod P and the one that multiplies L is
 * x^(D-33) mod P. They are computed once, here, by stepping a reflected
 * register through x^k (fold_init), for each fold distance D used.
 *
 * A copying kernel (dst not NULL) stores every vector it loads; the start
 * is then aligned on dst (so non-temporal stores are aligned), otherwise on
 * the source. All loads and stores of data go through unaligned-load/store
 * intrinsics or memcpy. */
#include "util/crc32c_fold.h"

#if CKPT__CRC_FOLD

#include <immintrin.h>
#include <string.h>

#define POLY 0x82f63b78u    /* reflected Castagnoli polynomial */
#define X_POW_0 0x80000000u /* the polynomial 1, reflected */

/* The two multipliers for one fold distance: `first` multiplies the first
 * 8 bytes of a lane (low qword), `second` the last 8 (high qword). */
typedef struct fold_constants {
    uint64_t first, second;
} fold_constants;

/* Fold distances in bits: one 16-, 32-, 64-byte step, and one iteration
 * of four 16-, 32- or 64-byte vectors. Written once by
 * ckpt__crc32c_fold_init (under util/crc32c.c's pthread_once), then only
 * read. */
static fold_constants by128, by256, by512, by1024, by2048;

/* x^k mod P, reflected (bit 31 is the x^0 coefficient). */
static uint32_t x_pow_mod_p(unsigned k)
{
    uint32_t v = X_POW_0;
    while (k--)
        v = (v >> 1) ^ (POLY & (0u - (v & 1u)));
    return v;
}

static fold_constants constants_for(unsigned bits)
{
    fold_constants c;
    c.first = x_pow_mod_p(bits + 64 - 33);
    c.second = x_pow_mod_p(bits - 33);
    return c;
}

void ckpt__crc32c_fold_init(void)
{
    by128 = constants_for(128);
    by256 = constants_for(256);
    by512 = constants_for(512);
    by1024 = constants_for(1024);
    by2048 = constants_for(2048);
}

#define T_SSE42 __attribute__((target("sse4.2")))
#define T_128 __attribute__((target("pclmul,sse4.2")))
#define T_256 __attribute__((target("pclmul,sse4.2,avx2,vpclmulqdq")))
#define T_512 __attribute__((target("pclmul,sse4.2,avx2,avx512f,vpclmulqdq")))

/* The crc32 instruction, 8 bytes then 1 byte at a time (short pieces). */
T_SSE42 uint32_t ckpt__crc32c_sse42_bytes(uint32_t reg, uint8_t *dst,
                                          const uint8_t *p, size_t n)
{
    uint64_t r64 = reg;
    while (n >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        r64 = _mm_crc32_u64(r64, v);
        if (dst) {
            memcpy(dst, &v, 8);
            dst += 8;
        }
        p += 8;
        n -= 8;
    }
    reg = (uint32_t)r64;
    while (n--) {
        reg = _mm_crc32_u8(reg, *p);
        if (dst)
            *dst++ = *p;
        p++;
    }
    return reg;
}

/* Bytes before `p` reaches a multiple of `width` (a power of two). */
static size_t head_length(const void *p, size_t width)
{
    return (size_t)(0u - (uintptr_t)p) & (width - 1);
}

/* ---- 128-bit lanes ------------------------------------------------------ */

T_128 static inline __m128i k128_of(fold_constants c)
{
    return _mm_set_epi64x((long long)c.second, (long long)c.first);
}

T_128 static inline __m128i fold16(__m128i acc, __m128i next, __m128i k)
{
    __m128i a = _mm_clmulepi64_si128(acc, k, 0x00);
    __m128i b = _mm_clmulepi64_si128(acc, k, 0x11);
    return _mm_xor_si128(_mm_xor_si128(a, b), next);
}

T_128 static inline __m128i load16(const uint8_t *p)
{
    return _mm_loadu_si128((const __m128i *)(const void *)p);
}

/* Store a copied vector; `dst` is 16-byte aligned when streaming. */
T_128 static inline void store16(uint8_t *dst, __m128i v, bool stream)
{
    if (stream)
        _mm_stream_si128((__m128i *)(void *)dst, v);
    else
        _mm_storeu_si128((__m128i *)(void *)dst, v);
}

/* Fold the remaining whole 16-byte lanes into `acc`, reduce it to a
 * register and finish the last bytes. */
T_128 static uint32_t finish(__m128i acc, uint8_t *dst, const uint8_t *p,
                             size_t n, bool stream)
{
    __m128i k = k128_of(by128);
    uint64_t r64;
    while (n >= 16) {
        __m128i v = load16(p);
        if (dst) {
            store16(dst, v, stream);
            dst += 16;
        }
        acc = fold16(acc, v, k);
        p += 16;
        n -= 16;
    }
    if (stream)
        _mm_sfence(); /* the streamed stores are visible before we return */
    r64 = _mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(acc));
    r64 = _mm_crc32_u64(r64, (uint64_t)_mm_extract_epi64(acc, 1));
    return ckpt__crc32c_sse42_bytes((uint32_t)r64, dst, p, n);
}

T_128 uint32_t ckpt__crc32c_fold128(uint32_t reg, uint8_t *dst,
                                    const uint8_t *p, size_t n, bool stream)
{
    __m128i x0, x1, x2, x3, k;
    size_t head;
    stream = stream && dst;
    if (n < 128)
        return ckpt__crc32c_sse42_bytes(reg, dst, p, n);
    head = head_length(dst ? (const void *)dst : (const void *)p, 16);
    reg = ckpt__crc32c_sse42_bytes(reg, dst, p, head);
    p += head;
    n -= head;
    if (dst)
        dst += head;

    x0 = load16(p);
    x1 = load16(p + 16);
    x2 = load16(p + 32);
    x3 = load16(p + 48);
    if (dst) {
        store16(dst, x0, stream);
        store16(dst + 16, x1, stream);
        store16(dst + 32, x2, stream);
        store16(dst + 48, x3, stream);
        dst += 64;
    }
    x0 = _mm_xor_si128(x0, _mm_cvtsi32_si128((int)reg));
    p += 64;
    n -= 64;
    k = k128_of(by512);
    while (n >= 64) {
        __m128i y0 = load16(p), y1 = load16(p + 16), y2 = load16(p + 32),
                y3 = load16(p + 48);
        if (dst) {
            store16(dst, y0, stream);
            store16(dst + 16, y1, stream);
            store16(dst + 32, y2, stream);
            store16(dst + 48, y3, stream);
            dst += 64;
        }
        x0 = fold16(x0, y0, k);
        x1 = fold16(x1, y1, k);
        x2 = fold16(x2, y2, k);
        x3 = fold16(x3, y3, k);
        p += 64;
        n -= 64;
    }
    k = k128_of(by128);
    x0 = fold16(x0, x1, k);
    x0 = fold16(x0, x2, k);
    x0 = fold16(x0, x3, k);
    return finish(x0, dst, p, n, stream);
}

/* ---- 256-bit vectors ---------------------------------------------------- */

T_256 static inline __m256i fold32(__m256i acc, __m256i next, __m256i k)
{
    __m256i a = _mm256_clmulepi64_epi128(acc, k, 0x00);
    __m256i b = _mm256_clmulepi64_epi128(acc, k, 0x11);
    return _mm256_xor_si256(_mm256_xor_si256(a, b), next);
}

T_256 static inline __m256i load32(const uint8_t *p)
{
    return _mm256_loadu_si256((const __m256i *)(const void *)p);
}

T_256 static inline void store32(uint8_t *dst, __m256i v, bool stream)
{
    if (stream)
        _mm256_stream_si256((__m256i *)(void *)dst, v);
    else
        _mm256_storeu_si256((__m256i *)(void *)dst, v);
}

T_256 uint32_t ckpt__crc32c_fold256(uint32_t reg, uint8_t *dst,
                                    const uint8_t *p, size_t n, bool stream)
{
    __m256i y0, y1, y2, y3, k;
    __m128i x, k16;
    size_t head;
    stream = stream && dst;
    if (n < 256)
        return ckpt__crc32c_fold128(reg, dst, p, n, stream);
    head = head_length(dst ? (const void *)dst : (const void *)p, 32);
    reg = ckpt__crc32c_sse42_bytes(reg, dst, p, head);
    p += head;
    n -= head;
    if (dst)
        dst += head;

    y0 = load32(p);
    y1 = load32(p + 32);
    y2 = load32(p + 64);
    y3 = load32(p + 96);
    if (dst) {
        store32(dst, y0, stream);
        store32(dst + 32, y1, stream);
        store32(dst + 64, y2, stream);
        store32(dst + 96, y3, stream);
        dst += 128;
    }
    y0 = _mm256_xor_si256(y0,
                          _mm256_zextsi128_si256(_mm_cvtsi32_si128((int)reg)));
    p += 128;
    n -= 128;
    k = _mm256_broadcastsi128_si256(k128_of(by1024));
    while (n >= 128) {
        __m256i v0 = load32(p), v1 = load32(p + 32), v2 = load32(p + 64),
                v3 = load32(p + 96);
        if (dst) {
            store32(dst, v0, stream);
            store32(dst + 32, v1, stream);
            store32(dst + 64, v2, stream);
            store32(dst + 96, v3, stream);
            dst += 128;
        }
        y0 = fold32(y0, v0, k);
        y1 = fold32(y1, v1, k);
        y2 = fold32(y2, v2, k);
        y3 = fold32(y3, v3, k);
        p += 128;
        n -= 128;
    }
    k = _mm256_broadcastsi128_si256(k128_of(by256));
    y0 = fold32(y0, y1, k);
    y0 = fold32(y0, y2, k);
    y0 = fold32(y0, y3, k);
    while (n >= 32) {
        __m256i v = load32(p);
        if (dst) {
            store32(dst, v, stream);
            dst += 32;
        }
        y0 = fold32(y0, v, k);
        p += 32;
        n -= 32;
    }
    k16 = k128_of(by128);
    x = fold16(_mm256_castsi256_si128(y0), _mm256_extracti128_si256(y0, 1),
               k16);
    /* Clear the upper halves before the SSE tail (and the caller's SSE
     * code): GCC inserts no vzeroupper before this tail call, and a dirty
     * upper state slowed the caller's later SSE loops 2-2.5x. */
    _mm256_zeroupper();
    return finish(x, dst, p, n, stream);
}

/* ---- 512-bit vectors ---------------------------------------------------- */

T_512 static inline __m512i fold64(__m512i acc, __m512i next, __m512i k)
{
    __m512i a = _mm512_clmulepi64_epi128(acc, k, 0x00);
    __m512i b = _mm512_clmulepi64_epi128(acc, k, 0x11);
    return _mm512_ternarylogic_epi64(a, b, next, 0x96); /* a ^ b ^ next */
}

T_512 static inline __m512i load64(const uint8_t *p)
{
    return _mm512_loadu_si512((const void *)p);
}

T_512 static inline void store64(uint8_t *dst, __m512i v, bool stream)
{
    if (stream)
        _mm512_stream_si512((__m512i *)(void *)dst, v);
    else
        _mm512_storeu_si512((void *)dst, v);
}

T_512 uint32_t ckpt__crc32c_fold512(uint32_t reg, uint8_t *dst,
                                    const uint8_t *p, size_t n, bool stream)
{
    __m512i z0, z1, z2, z3, k;
    __m128i x, k16;
    size_t head;
    stream = stream && dst;
    if (n < 512)
        return ckpt__crc32c_fold128(reg, dst, p, n, stream);
    head = head_length(dst ? (const void *)dst : (const void *)p, 64);
    reg = ckpt__crc32c_sse42_bytes(reg, dst, p, head);
    p += head;
    n -= head;
    if (dst)
        dst += head;

    z0 = load64(p);
    z1 = load64(p + 64);
    z2 = load64(p + 128);
    z3 = load64(p + 192);
    if (dst) {
        store64(dst, z0, stream);
        store64(dst + 64, z1, stream);
        store64(dst + 128, z2, stream);
        store64(dst + 192, z3, stream);
        dst += 256;
    }
    z0 = _mm512_xor_si512(z0,
                          _mm512_zextsi128_si512(_mm_cvtsi32_si128((int)reg)));
    p += 256;
    n -= 256;
    k = _mm512_broadcast_i32x4(k128_of(by2048));
    while (n >= 256) {
        __m512i v0 = load64(p), v1 = load64(p + 64), v2 = load64(p + 128),
                v3 = load64(p + 192);
        if (dst) {
            store64(dst, v0, stream);
            store64(dst + 64, v1, stream);
            store64(dst + 128, v2, stream);
            store64(dst + 192, v3, stream);
            dst += 256;
        }
        z0 = fold64(z0, v0, k);
        z1 = fold64(z1, v1, k);
        z2 = fold64(z2, v2, k);
        z3 = fold64(z3, v3, k);
        p += 256;
        n -= 256;
    }
    k = _mm512_broadcast_i32x4(k128_of(by512));
    z0 = fold64(z0, z1, k);
    z0 = fold64(z0, z2, k);
    z0 = fold64(z0, z3, k);
    while (n >= 64) {
        __m512i v = load64(p);
        if (dst) {
            store64(dst, v, stream);
            dst += 64;
        }
        z0 = fold64(z0, v, k);
        p += 64;
        n -= 64;
    }
    k16 = k128_of(by128);
    x = fold16(_mm512_extracti32x4_epi32(z0, 0),
               _mm512_extracti32x4_epi32(z0, 1), k16);
    x = fold16(x, _mm512_extracti32x4_epi32(z0, 2), k16);
    x = fold16(x, _mm512_extracti32x4_epi32(z0, 3), k16);
    _mm256_zeroupper(); /* as in ckpt__crc32c_fold256 */
    return finish(x, dst, p, n, stream);
}

#endif /* CKPT__CRC_FOLD */
