/* util/crc32c.c - CRC-32C (Castagnoli, reflected polynomial 0x82F63B78):
 * the portable, SSE4.2 and ARMv8 implementations and the choice among all
 * of them.
 *
 * Implementations behind one entry point (enum ckpt__crc32c_impl_id):
 *  - portable: slicing-by-8 tables;
 *  - sse42: the crc32 instruction, 8 bytes per step, run as three
 *    independent streams over adjacent stripes of a chunk so the instruction's
 *    3-cycle latency is hidden; the three partial CRCs are then merged with
 *    "shift by N zero bytes" tables (CRC is linear over GF(2));
 *  - pclmul, vpclmul256, vpclmul512: folding with carry-less multiplication
 *    on 128-, 256- and 512-bit vectors (util/crc32c_fold.c);
 *  - armv8: AArch64's crc32c instructions (the CRC extension, told by the
 *    kernel's HWCAP_CRC32), in three streams as sse42 is.
 * The choice (choose_impl): the environment variable CKPT_CRC32C_IMPL names
 * one ("portable", "sse42", "pclmul", "vpclmul256", "vpclmul512", "armv8") to
 * force
 * it where the CPU has it; otherwise every implementation the CPU has
 * (besides the portable one) checksums a 64 KiB buffer, interleaved, best of
 * several rounds, and the fastest is used.
 * All tables are computed once under pthread_once together with the CPU
 * feature test and the choice, and whether long fused copies use
 * non-temporal stores is measured once under another pthread_once (see
 * choose_streaming); those two one-time initialisations (and the folding
 * constants, computed in the first) are the only global state, never
 * written again afterwards.
 *
 * Internally the CRC "register" is the raw (pre-inverted) state; the public
 * functions take and return finalised CRCs, inverting on entry and exit. */
#include "util/crc32c.h"
#include "common/internal.h"
#include "util/crc32c_fold.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#if defined(__x86_64__) && defined(__GNUC__)
#define CKPT__CRC_X86 1
#include <nmmintrin.h>
#else
#define CKPT__CRC_X86 0
#endif

/* Little-endian AArch64 only: the instructions take the 8 bytes of a load
 * in memory order there. */
#if defined(__aarch64__) && defined(__GNUC__) && defined(__BYTE_ORDER__) &&    \
    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define CKPT__CRC_ARM 1
#include <arm_acle.h>
#include <sys/auxv.h>
#ifndef HWCAP_CRC32
#define HWCAP_CRC32 (1UL << 7)
#endif
#ifdef __clang__
#define CKPT__TARGET_CRC __attribute__((target("crc")))
#else
#define CKPT__TARGET_CRC __attribute__((target("+crc")))
#endif
#else
#define CKPT__CRC_ARM 0
#endif

#define POLY 0x82f63b78u

/* Stripe lengths for the three-stream hardware loop: a long one for big
 * buffers and a short one for the tail (both multiples of 8). */
#define LONG_STRIPE 8192
#define SHORT_STRIPE 256
/* Fused copies at least this long may store with non-temporal writes
 * (when measured faster on this machine: choose_streaming). */
#define STREAM_MIN ((size_t)256 << 10)

typedef struct crc_tables {
    uint32_t slice[8][256];       /* slicing-by-8 */
    uint32_t shift_long[4][256];  /* register * x^(8*LONG_STRIPE) mod P */
    uint32_t shift_short[4][256]; /* register * x^(8*SHORT_STRIPE) mod P */
    bool available[CKPT__CRC32C_IMPL_COUNT]; /* what this CPU can run */
    int impl;                                /* the one in use */
} crc_tables;

static const char *const impl_names[CKPT__CRC32C_IMPL_COUNT] = {
    "portable", "sse42", "pclmul", "vpclmul256", "vpclmul512", "armv8"};

static void choose_impl(crc_tables *t);

/* Written only inside init_tables, which pthread_once runs exactly once. */
static crc_tables tables;
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

/* ---- GF(2) linear operators on the 32-bit register ---------------------- */

/* Apply the 32x32 bit matrix `m` (column i = image of bit i) to `v`. */
static uint32_t gf2_apply(const uint32_t m[32], uint32_t v)
{
    uint32_t r = 0;
    int i = 0;
    while (v) {
        if (v & 1)
            r ^= m[i];
        v >>= 1;
        i++;
    }
    return r;
}

/* out = m * m */
static void gf2_square(uint32_t out[32], const uint32_t m[32])
{
    for (int i = 0; i < 32; i++)
        out[i] = gf2_apply(m, m[i]);
}

/* Fill `tab` with the operator "feed `nbytes` zero bytes into the register",
 * split per input byte so it costs four lookups. */
static void make_shift_table(uint32_t tab[4][256], size_t nbytes)
{
    uint32_t op[32], sq[32], acc[32];
    bool have_acc = false;
    size_t nbits = nbytes * 8;

    /* One zero bit: shift right, xor the polynomial when bit 0 falls out. */
    op[0] = POLY;
    for (int i = 1; i < 32; i++)
        op[i] = 1u << (i - 1);

    /* Binary exponentiation: acc = op^nbits. */
    while (nbits) {
        if (nbits & 1) {
            if (!have_acc) {
                memcpy(acc, op, sizeof(acc));
                have_acc = true;
            } else {
                uint32_t tmp[32];
                for (int i = 0; i < 32; i++)
                    tmp[i] = gf2_apply(op, acc[i]);
                memcpy(acc, tmp, sizeof(acc));
            }
        }
        nbits >>= 1;
        if (nbits) {
            gf2_square(sq, op);
            memcpy(op, sq, sizeof(op));
        }
    }
    for (int k = 0; k < 4; k++)
        for (uint32_t v = 0; v < 256; v++)
            tab[k][v] = gf2_apply(acc, v << (8 * k));
}

static inline uint32_t shift_reg(const uint32_t tab[4][256], uint32_t reg)
{
    return tab[0][reg & 0xff] ^ tab[1][(reg >> 8) & 0xff] ^
           tab[2][(reg >> 16) & 0xff] ^ tab[3][reg >> 24];
}

static void init_tables(void)
{
    for (uint32_t v = 0; v < 256; v++) {
        uint32_t c = v;
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (POLY & (0u - (c & 1)));
        tables.slice[0][v] = c;
    }
    for (uint32_t v = 0; v < 256; v++) {
        uint32_t c = tables.slice[0][v];
        for (int t = 1; t < 8; t++) {
            c = (c >> 8) ^ tables.slice[0][c & 0xff];
            tables.slice[t][v] = c;
        }
    }
    make_shift_table(tables.shift_long, LONG_STRIPE);
    make_shift_table(tables.shift_short, SHORT_STRIPE);
    tables.available[CKPT__CRC32C_PORTABLE] = true;
#if CKPT__CRC_X86
    __builtin_cpu_init();
    tables.available[CKPT__CRC32C_SSE42] = __builtin_cpu_supports("sse4.2");
#endif
#if CKPT__CRC_FOLD
    ckpt__crc32c_fold_init();
    tables.available[CKPT__CRC32C_PCLMUL] =
        tables.available[CKPT__CRC32C_SSE42] &&
        __builtin_cpu_supports("pclmul");
    tables.available[CKPT__CRC32C_VPCLMUL256] =
        tables.available[CKPT__CRC32C_PCLMUL] &&
        __builtin_cpu_supports("avx2") && __builtin_cpu_supports("vpclmulqdq");
    tables.available[CKPT__CRC32C_VPCLMUL512] =
        tables.available[CKPT__CRC32C_VPCLMUL256] &&
        __builtin_cpu_supports("avx512f");
#endif
#if CKPT__CRC_ARM
    tables.available[CKPT__CRC32C_ARMV8] =
        (getauxval(AT_HWCAP) & HWCAP_CRC32) != 0;
#endif
    choose_impl(&tables);
}

static const crc_tables *get_tables(void)
{
    pthread_once(&tables_once, init_tables);
    return &tables;
}

static inline uint64_t load64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* ---- portable: slicing-by-8 --------------------------------------------- */

static uint32_t sw_update(const crc_tables *t, uint32_t reg, const uint8_t *p,
                          size_t n)
{
    while (n && ((uintptr_t)p & 7)) {
        reg = (reg >> 8) ^ t->slice[0][(reg ^ *p++) & 0xff];
        n--;
    }
    while (n >= 8) {
        uint32_t lo = reg ^ ((uint32_t)p[0] | ((uint32_t)p[1] << 8) |
                             ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24));
        uint32_t hi = (uint32_t)p[4] | ((uint32_t)p[5] << 8) |
                      ((uint32_t)p[6] << 16) | ((uint32_t)p[7] << 24);
        reg = t->slice[7][lo & 0xff] ^ t->slice[6][(lo >> 8) & 0xff] ^
              t->slice[5][(lo >> 16) & 0xff] ^ t->slice[4][lo >> 24] ^
              t->slice[3][hi & 0xff] ^ t->slice[2][(hi >> 8) & 0xff] ^
              t->slice[1][(hi >> 16) & 0xff] ^ t->slice[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n--)
        reg = (reg >> 8) ^ t->slice[0][(reg ^ *p++) & 0xff];
    return reg;
}

uint32_t ckpt__crc32c_extend_portable(uint32_t crc, const void *data, size_t n)
{
    return ~sw_update(get_tables(), ~crc, data, n);
}

/* ---- hardware: SSE4.2 ---------------------------------------------------- */

#if CKPT__CRC_X86

/* Three streams over stripes [p, p+len), [p+len, p+2len), [p+2len, p+3len);
 * returns the register after all 3*len bytes. When dst is not NULL the
 * bytes are also stored there (same layout). */
__attribute__((target("sse4.2"))) static inline uint32_t
hw_three_way(const uint32_t shift[4][256], uint32_t reg, uint8_t *dst,
             const uint8_t *p, size_t len, bool stream)
{
    uint64_t c0 = reg, c1 = 0, c2 = 0;
    const uint8_t *end = p + len;
    if (dst && stream) {
        /* Non-temporal stores: no read-for-ownership of the destination,
         * and a large copy does not evict the caller's working set. */
        while (p < end) {
            uint64_t a = load64(p), b = load64(p + len),
                     c = load64(p + 2 * len);
            c0 = _mm_crc32_u64(c0, a);
            c1 = _mm_crc32_u64(c1, b);
            c2 = _mm_crc32_u64(c2, c);
            _mm_stream_si64((long long *)(void *)dst, (long long)a);
            _mm_stream_si64((long long *)(void *)(dst + len), (long long)b);
            _mm_stream_si64((long long *)(void *)(dst + 2 * len), (long long)c);
            p += 8;
            dst += 8;
        }
    } else if (dst) {
        while (p < end) {
            uint64_t a = load64(p), b = load64(p + len),
                     c = load64(p + 2 * len);
            c0 = _mm_crc32_u64(c0, a);
            c1 = _mm_crc32_u64(c1, b);
            c2 = _mm_crc32_u64(c2, c);
            memcpy(dst, &a, 8);
            memcpy(dst + len, &b, 8);
            memcpy(dst + 2 * len, &c, 8);
            p += 8;
            dst += 8;
        }
    } else {
        while (p < end) {
            c0 = _mm_crc32_u64(c0, load64(p));
            c1 = _mm_crc32_u64(c1, load64(p + len));
            c2 = _mm_crc32_u64(c2, load64(p + 2 * len));
            p += 8;
        }
    }
    reg = shift_reg(shift, (uint32_t)c0) ^ (uint32_t)c1;
    return shift_reg(shift, reg) ^ (uint32_t)c2;
}

/* The hardware register update, optionally copying to dst. */
__attribute__((target("sse4.2"))) static uint32_t
hw_update(const crc_tables *t, uint32_t reg, uint8_t *dst, const uint8_t *p,
          size_t n, bool stream)
{
    stream = stream && dst && n >= STREAM_MIN;

    /* Byte steps until the source is 8-byte aligned. */
    while (n && ((uintptr_t)p & 7)) {
        reg = _mm_crc32_u8(reg, *p);
        if (dst)
            *dst++ = *p;
        p++;
        n--;
    }
    while (n >= 3 * LONG_STRIPE) {
        reg = hw_three_way(t->shift_long, reg, dst, p, LONG_STRIPE, stream);
        p += 3 * LONG_STRIPE;
        if (dst)
            dst += 3 * LONG_STRIPE;
        n -= 3 * LONG_STRIPE;
    }
    while (n >= 3 * SHORT_STRIPE) {
        reg = hw_three_way(t->shift_short, reg, dst, p, SHORT_STRIPE, stream);
        p += 3 * SHORT_STRIPE;
        if (dst)
            dst += 3 * SHORT_STRIPE;
        n -= 3 * SHORT_STRIPE;
    }
    reg = ckpt__crc32c_sse42_bytes(reg, dst, p, n);
    if (stream)
        _mm_sfence(); /* the streamed stores are visible before we return */
    return reg;
}

#endif /* CKPT__CRC_X86 */

/* ---- hardware: ARMv8 CRC extension ----------------------------------------
 */

#if CKPT__CRC_ARM

/* As hw_three_way, with AArch64's crc32c instructions (no streaming
 * stores: a copy stores plainly). */
CKPT__TARGET_CRC static inline uint32_t
arm_three_way(const uint32_t shift[4][256], uint32_t reg, uint8_t *dst,
              const uint8_t *p, size_t len)
{
    uint32_t c0 = reg, c1 = 0, c2 = 0;
    const uint8_t *end = p + len;
    while (p < end) {
        uint64_t a = load64(p), b = load64(p + len), c = load64(p + 2 * len);
        c0 = __crc32cd(c0, a);
        c1 = __crc32cd(c1, b);
        c2 = __crc32cd(c2, c);
        if (dst) {
            memcpy(dst, &a, 8);
            memcpy(dst + len, &b, 8);
            memcpy(dst + 2 * len, &c, 8);
            dst += 8;
        }
        p += 8;
    }
    reg = shift_reg(shift, c0) ^ c1;
    return shift_reg(shift, reg) ^ c2;
}

/* The ARMv8 register update, optionally copying to dst. */
CKPT__TARGET_CRC static uint32_t arm_update(const crc_tables *t, uint32_t reg,
                                            uint8_t *dst, const uint8_t *p,
                                            size_t n)
{
    while (n && ((uintptr_t)p & 7)) {
        reg = __crc32cb(reg, *p);
        if (dst)
            *dst++ = *p;
        p++;
        n--;
    }
    while (n >= 3 * LONG_STRIPE) {
        reg = arm_three_way(t->shift_long, reg, dst, p, LONG_STRIPE);
        p += 3 * LONG_STRIPE;
        if (dst)
            dst += 3 * LONG_STRIPE;
        n -= 3 * LONG_STRIPE;
    }
    while (n >= 3 * SHORT_STRIPE) {
        reg = arm_three_way(t->shift_short, reg, dst, p, SHORT_STRIPE);
        p += 3 * SHORT_STRIPE;
        if (dst)
            dst += 3 * SHORT_STRIPE;
        n -= 3 * SHORT_STRIPE;
    }
    for (; n >= 8; n -= 8, p += 8) {
        uint64_t v = load64(p);
        reg = __crc32cd(reg, v);
        if (dst) {
            memcpy(dst, &v, 8);
            dst += 8;
        }
    }
    for (; n; n--, p++) {
        reg = __crc32cb(reg, *p);
        if (dst)
            *dst++ = *p;
    }
    return reg;
}

#endif /* CKPT__CRC_ARM */

/* ---- dispatch ------------------------------------------------------------ */

/* Portable fused copy: copy a cache-sized piece, then checksum it while it is
 * still hot in cache. */
#define COPY_CHUNK 16384

/* The register update through `impl` (one this CPU can run), copying to
 * dst when it is not NULL (with non-temporal stores when `stream` and the
 * copy is long). */
static uint32_t update_with(const crc_tables *t, int impl, uint32_t reg,
                            uint8_t *dst, const uint8_t *src, size_t n,
                            bool stream)
{
    stream = stream && dst && n >= STREAM_MIN;
    switch (impl) {
#if CKPT__CRC_X86
    case CKPT__CRC32C_SSE42:
        return hw_update(t, reg, dst, src, n, stream);
#endif
#if CKPT__CRC_FOLD
    case CKPT__CRC32C_PCLMUL:
        return ckpt__crc32c_fold128(reg, dst, src, n, stream);
    case CKPT__CRC32C_VPCLMUL256:
        return ckpt__crc32c_fold256(reg, dst, src, n, stream);
    case CKPT__CRC32C_VPCLMUL512:
        return ckpt__crc32c_fold512(reg, dst, src, n, stream);
#endif
#if CKPT__CRC_ARM
    case CKPT__CRC32C_ARMV8:
        return arm_update(t, reg, dst, src, n);
#endif
    default:
        break;
    }
    if (!dst)
        return sw_update(t, reg, src, n);
    while (n) {
        size_t k = n < COPY_CHUNK ? n : COPY_CHUNK;
        memcpy(dst, src, k);
        reg = sw_update(t, reg, dst, k);
        dst += k;
        src += k;
        n -= k;
    }
    return reg;
}

/* ---- the choice ------------------------------------------------------------
 * Which implementation is fastest depends on the CPU (the crc32 instruction
 * and the carry-less multiplier run on different units with different
 * throughputs, and wide vectors may lower the clock), so the candidates are
 * timed once per process: MEASURE_BYTES of warm data each, interleaved,
 * best of MEASURE_ROUNDS (a fraction of a millisecond in all). Without a
 * buffer for it, the widest one the CPU has is used. */

#define MEASURE_BYTES ((size_t)64 << 10)
#define MEASURE_ROUNDS 7

static void choose_impl(crc_tables *t)
{
    const char *forced = getenv("CKPT_CRC32C_IMPL");
    double best[CKPT__CRC32C_IMPL_COUNT];
    volatile uint32_t sink = 0;
    int candidates = 0;
    uint8_t *buf;

    t->impl = CKPT__CRC32C_PORTABLE;
    for (int i = 0; i < CKPT__CRC32C_IMPL_COUNT; i++) {
        if (!t->available[i])
            continue;
        t->impl = i;
        if (i != CKPT__CRC32C_PORTABLE)
            candidates++;
        if (forced && strcmp(forced, impl_names[i]) == 0)
            return;
    }
    if (candidates < 2)
        return;
    /* Mapped rather than taken from the library's allocator, whose
     * failures (injected in tests) belong to the operations that
     * allocate. */
    buf = mmap(NULL, MEASURE_BYTES, PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED)
        return;
    for (size_t i = 0; i < MEASURE_BYTES; i++)
        buf[i] = (uint8_t)(i * 131u + (i >> 9));
    for (int i = 0; i < CKPT__CRC32C_IMPL_COUNT; i++)
        best[i] = -1.0;
    for (int r = 0; r < MEASURE_ROUNDS; r++) {
        for (int i = CKPT__CRC32C_SSE42; i < CKPT__CRC32C_IMPL_COUNT; i++) {
            double t0, dt;
            if (!t->available[i])
                continue;
            t0 = ckpt__seconds_now();
            sink ^= update_with(t, i, 0, NULL, buf, MEASURE_BYTES, false);
            dt = ckpt__seconds_now() - t0;
            if (best[i] < 0 || dt < best[i])
                best[i] = dt;
        }
    }
    (void)sink;
    for (int i = CKPT__CRC32C_SSE42; i < CKPT__CRC32C_IMPL_COUNT; i++)
        if (best[i] >= 0 && best[i] < best[t->impl])
            t->impl = i;
    munmap(buf, MEASURE_BYTES);
}

/* ---- entry points -------------------------------------------------------- */

uint32_t ckpt__crc32c_extend(uint32_t crc, const void *data, size_t n)
{
    const crc_tables *t = get_tables();
    return ~update_with(t, t->impl, ~crc, NULL, data, n, false);
}

uint32_t ckpt__crc32c(const void *data, size_t n)
{
    return ckpt__crc32c_extend(0, data, n);
}

int ckpt__crc32c_hw_available(void)
{
    return get_tables()->impl != CKPT__CRC32C_PORTABLE;
}

int ckpt__crc32c_impl(void)
{
    return get_tables()->impl;
}

const char *ckpt__crc32c_impl_name(int impl)
{
    if (impl < 0 || impl >= CKPT__CRC32C_IMPL_COUNT)
        return NULL;
    return impl_names[impl];
}

int ckpt__crc32c_impl_available(int impl)
{
    if (impl < 0 || impl >= CKPT__CRC32C_IMPL_COUNT)
        return 0;
    return get_tables()->available[impl] ? 1 : 0;
}

uint32_t ckpt__crc32c_extend_with(int impl, uint32_t crc, const void *data,
                                  size_t n)
{
    const crc_tables *t = get_tables();
    if (!ckpt__crc32c_impl_available(impl))
        impl = CKPT__CRC32C_PORTABLE;
    return ~update_with(t, impl, ~crc, NULL, data, n, false);
}

uint32_t ckpt__crc32c_copy_with(int impl, uint32_t crc, void *dst,
                                const void *src, size_t n, int streaming)
{
    const crc_tables *t = get_tables();
    if (!ckpt__crc32c_impl_available(impl))
        impl = CKPT__CRC32C_PORTABLE;
    return ~update_with(t, impl, ~crc, dst, src, n, streaming != 0);
}

uint32_t ckpt__crc32c_copy_stores(uint32_t crc, void *dst, const void *src,
                                  size_t n, int streaming)
{
    const crc_tables *t = get_tables();
    return ~update_with(t, t->impl, ~crc, dst, src, n, streaming != 0);
}

/* ---- whether long fused copies stream ------------------------------------
 * Non-temporal stores skip the read-for-ownership of the destination and
 * leave the caller's cache alone, which made them 0.7x of a memcpy on one
 * machine and about twice as fast as plain stores on another (an AMD EPYC
 * VM). Whether they pay is measured once per process, at the first long
 * fused copy: a warm 1 MiB source copied into 8 MiB of destination both
 * ways, interleaved, best of three each; streaming is used only when
 * clearly faster.
 *
 * A destination a little ahead of the source modulo 4 KiB (0 < (dst - src)
 * mod 4096 < ALIAS_WINDOW; malloc's 16-byte offset into a page-aligned
 * buffer is exactly that) is measured on its own, right after: there the
 * loads may alias (4K aliasing) the pending non-temporal stores of a few
 * iterations before and wait for each to commit. On one AMD EPYC VM that
 * ran 10-50 times slower (0.2-0.8 GB/s against 10 for plain stores); on
 * another (Zen 4), streaming into such a destination ran as fast as
 * anywhere (17-21 GB/s against 12-15 for plain stores, the same kernel).
 * So such copies stream only where streaming was also clearly faster
 * there, over a smaller destination (2 MiB) so that a machine where it is
 * slow pays little to find out. */

#define MEASURE_SRC ((size_t)1 << 20)
#define MEASURE_DST ((size_t)8 << 20)
#define MEASURE_NEAR_DST ((size_t)2 << 20)
#define NEAR_OFFSET 16 /* ahead of the source: inside the window */
#define ALIAS_WINDOW 512

static bool use_streaming, use_streaming_near;
static pthread_once_t streaming_once = PTHREAD_ONCE_INIT;
/* Set (release) once the two above hold the measurement: read (acquire)
 * by ckpt__crc32c_copy_unprobed, which does not wait for it. */
static atomic_int streaming_measured;

/* Whether copying the warm `src` (1 MiB) over `dst_len` bytes at `dst`
 * with streaming stores took under 0.9 of the time with plain stores, best
 * of three interleaved timings each. */
static bool streaming_faster(uint8_t *dst, size_t dst_len, const uint8_t *src)
{
    double best[2] = {-1.0, -1.0};
    volatile uint32_t sink = 0;
    for (int r = 0; r < 6; r++) {
        int mode = r % 2;
        double t0 = ckpt__seconds_now(), dt;
        for (size_t o = 0; o + MEASURE_SRC <= dst_len; o += MEASURE_SRC)
            sink ^=
                ckpt__crc32c_copy_stores(0, dst + o, src, MEASURE_SRC, mode);
        dt = ckpt__seconds_now() - t0;
        if (best[mode] < 0 || dt < best[mode])
            best[mode] = dt;
    }
    (void)sink;
    return best[1] > 0 && best[1] < 0.9 * best[0];
}

static void choose_streaming(void)
{
    /* Page-aligned both (no 4K aliasing between them), on huge pages
     * where the system gives them (ckpt__map_huge: 9 MiB of fresh 4 KiB
     * pages cost 27-31 ms of faults on a VM where a fault is dear), and
     * mapped rather than taken from the library's allocator, whose failures
     * (injected in tests) belong to the operations that allocate. One page
     * more for the destination NEAR_OFFSET bytes ahead. */
    size_t len = MEASURE_SRC + MEASURE_DST + 4096;
    uint8_t *map = ckpt__map_huge(len);
    uint8_t *src, *dst;
    use_streaming = false;
    use_streaming_near = false;
    if (!map || get_tables()->impl == CKPT__CRC32C_PORTABLE) {
        ckpt__unmap_huge(map, len);
        atomic_store_explicit(&streaming_measured, 1, memory_order_release);
        return;
    }
    src = map;
    dst = src + MEASURE_SRC;
    memset(src, 0x5c, MEASURE_SRC);
    memset(dst, 0, MEASURE_DST + 4096);
    use_streaming = streaming_faster(dst, MEASURE_DST, src);
    if (use_streaming)
        use_streaming_near =
            streaming_faster(dst + NEAR_OFFSET, MEASURE_NEAR_DST, src);
    ckpt__unmap_huge(map, len);
    atomic_store_explicit(&streaming_measured, 1, memory_order_release);
}

int ckpt__crc32c_copy_streams(void)
{
    pthread_once(&streaming_once, choose_streaming);
    return use_streaming ? 1 : 0;
}

int ckpt__crc32c_copy_streams_near(void)
{
    pthread_once(&streaming_once, choose_streaming);
    return use_streaming_near ? 1 : 0;
}

int ckpt__crc32c_copy_measured(void)
{
    return atomic_load_explicit(&streaming_measured, memory_order_acquire);
}

uint32_t ckpt__crc32c_copy_unprobed(uint32_t crc, void *dst, const void *src,
                                    size_t n)
{
    if (!ckpt__crc32c_copy_measured())
        return ckpt__crc32c_copy_stores(crc, dst, src, n, 0);
    return ckpt__crc32c_copy(crc, dst, src, n);
}

uint32_t ckpt__crc32c_copy(uint32_t crc, void *dst, const void *src, size_t n)
{
    size_t ahead = ((uintptr_t)dst - (uintptr_t)src) & 4095u;
    int near = ahead > 0 && ahead < ALIAS_WINDOW;
    int streaming = 0;
    if (n >= STREAM_MIN)
        streaming = near ? ckpt__crc32c_copy_streams_near()
                         : ckpt__crc32c_copy_streams();
    return ckpt__crc32c_copy_stores(crc, dst, src, n, streaming);
}
