/* Tests for util/crc32c: RFC 3720 vectors, the mask of docs/format.md §3,
 * hardware vs portable agreement at every length and alignment, extend
 * composition, the fused copy, and combining the CRCs of pieces; then every
 * implementation this CPU can run (portable, sse42, the folding kernels)
 * against the portable one, and the choice among them (CKPT_CRC32C_IMPL:
 * this program also runs with it set, see CMakeLists.txt). */
#include "test_util.h"

#include "util/crc32c.h"

#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#endif

/* A small deterministic generator (xorshift64*). */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint8_t rnd8(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (uint8_t)((rng_state * 0x2545f4914f6cdd1dull) >> 56);
}

static void fill_random(uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = rnd8();
}

/* Bit-at-a-time reference, independent of both implementations. */
static uint32_t crc_reference(uint32_t crc, const uint8_t *p, size_t n)
{
    crc = ~crc;
    for (size_t i = 0; i < n; i++) {
        crc ^= p[i];
        for (int k = 0; k < 8; k++)
            crc = (crc >> 1) ^ (0x82f63b78u & (0u - (crc & 1)));
    }
    return ~crc;
}

static void test_rfc3720_vectors(void **state)
{
    uint8_t buf[32];
    (void)state;
    assert_int_equal(ckpt__crc32c("123456789", 9), 0xe3069283u);
    assert_int_equal(ckpt__crc32c_extend_portable(0, "123456789", 9),
                     0xe3069283u);
    memset(buf, 0, sizeof(buf));
    assert_int_equal(ckpt__crc32c(buf, 32), 0x8a9136aau);
    assert_int_equal(ckpt__crc32c_extend_portable(0, buf, 32), 0x8a9136aau);
    memset(buf, 0xff, sizeof(buf));
    assert_int_equal(ckpt__crc32c(buf, 32), 0x62a8ab43u);
    assert_int_equal(ckpt__crc32c_extend_portable(0, buf, 32), 0x62a8ab43u);
    for (int i = 0; i < 32; i++)
        buf[i] = (uint8_t)i;
    assert_int_equal(ckpt__crc32c(buf, 32), 0x46dd794eu);
    assert_int_equal(ckpt__crc32c_extend_portable(0, buf, 32), 0x46dd794eu);
    for (int i = 0; i < 32; i++)
        buf[i] = (uint8_t)(31 - i);
    assert_int_equal(ckpt__crc32c(buf, 32), 0x113fdb5cu);
    assert_int_equal(ckpt__crc32c_extend_portable(0, buf, 32), 0x113fdb5cu);
    assert_int_equal(ckpt__crc32c(NULL, 0), 0);
}

static void test_mask(void **state)
{
    const uint8_t half[4] = {0x00, 0x00, 0x00, 0x3f};
    uint32_t c;
    (void)state;
    c = ckpt__crc32c(half, 4);
    assert_int_equal(c, 0x26973e52u);
    assert_int_equal(ckpt__crc32c_mask(c), 0x1f273806u);
    assert_int_equal(ckpt__crc32c_unmask(0x1f273806u), 0x26973e52u);
    assert_int_equal(ckpt__crc32c_mask(0xe3069283u), 0xc78ab0e5u);
    assert_int_equal(ckpt__crc32c_unmask(0xc78ab0e5u), 0xe3069283u);
    /* mask(0) is the length checksum of an empty string tensor */
    assert_int_equal(ckpt__crc32c_mask(0), 0xa282ead8u);
    for (uint32_t v = 1; v < 2000000000u; v += 98765431u)
        assert_int_equal(ckpt__crc32c_unmask(ckpt__crc32c_mask(v)), v);
}

/* Every length 0..300 at every alignment 0..15: the dispatched entry point,
 * the portable path and the bit-serial reference agree. */
static void test_hw_matches_portable(void **state)
{
    uint8_t buf[320];
    (void)state;
    print_message("hardware crc32c: %s\n",
                  ckpt__crc32c_hw_available() ? "yes" : "no");
    fill_random(buf, sizeof(buf));
    for (size_t align = 0; align < 16; align++) {
        for (size_t n = 0; n + align <= 316 && n <= 300; n++) {
            uint32_t ref = crc_reference(0, buf + align, n);
            assert_int_equal(ckpt__crc32c(buf + align, n), ref);
            assert_int_equal(ckpt__crc32c_extend_portable(0, buf + align, n),
                             ref);
        }
    }
}

/* Large buffers go through the three-stream hardware loop (both stripe
 * sizes and the remainder) at odd alignments and lengths. */
static void test_large_buffers(void **state)
{
    size_t sizes[] = {
        767,   768,   769,   3 * 256 * 5 + 13,          24575, 24576,
        24577, 65536, 99999, 3 * 8192 * 7 + 3 * 256 + 9};
    uint8_t *buf = malloc(200000);
    (void)state;
    assert_non_null(buf);
    fill_random(buf, 200000);
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        for (size_t align = 0; align < 9; align += 3) {
            uint32_t ref = crc_reference(0, buf + align, sizes[i]);
            assert_int_equal(ckpt__crc32c(buf + align, sizes[i]), ref);
            assert_int_equal(
                ckpt__crc32c_extend_portable(0, buf + align, sizes[i]), ref);
        }
    }
    free(buf);
}

static void test_extend_composes(void **state)
{
    uint8_t buf[70000];
    (void)state;
    fill_random(buf, sizeof(buf));
    for (size_t split = 0; split <= 300; split += 7) {
        uint32_t whole = ckpt__crc32c(buf, 300);
        uint32_t a = ckpt__crc32c(buf, split);
        assert_int_equal(ckpt__crc32c_extend(a, buf + split, 300 - split),
                         whole);
        a = ckpt__crc32c_extend_portable(0, buf, split);
        assert_int_equal(
            ckpt__crc32c_extend_portable(a, buf + split, 300 - split), whole);
    }
    {
        uint32_t whole = ckpt__crc32c(buf, sizeof(buf));
        uint32_t a = ckpt__crc32c(buf, 33333);
        assert_int_equal(
            ckpt__crc32c_extend(a, buf + 33333, sizeof(buf) - 33333), whole);
        assert_int_equal(whole, crc_reference(0, buf, sizeof(buf)));
    }
}

/* Runs first: a restore's copies (ckpt__crc32c_copy_unprobed) leave the
 * streaming measurement to others: long copies before it exist are exact
 * (bytes and CRC) and do not run it; once another copy has run it, they
 * are exact still. */
static void test_copy_unprobed(void **state)
{
    const size_t n = (size_t)600001;
    uint8_t *src = malloc(n + 16);
    uint8_t *dst = malloc(n + 16);
    (void)state;
    assert_non_null(src);
    assert_non_null(dst);
    fill_random(src, n + 16);
    assert_false(ckpt__crc32c_copy_measured());
    for (int round = 0; round < 2; round++) {
        for (size_t sa = 0; sa < 16; sa += 5) {
            for (size_t da = 0; da < 16; da += 7) {
                memset(dst, 0, n + 16);
                assert_int_equal(
                    ckpt__crc32c_copy_unprobed(0, dst + da, src + sa, n),
                    ckpt__crc32c(src + sa, n));
                assert_memory_equal(dst + da, src + sa, n);
            }
        }
        if (round == 0) {
            assert_false(ckpt__crc32c_copy_measured());
            (void)ckpt__crc32c_copy_streams(); /* another copy measures */
            assert_true(ckpt__crc32c_copy_measured());
        }
    }
    free(dst);
    free(src);
}

static void test_copy(void **state)
{
    /* Sizes from 256 KiB up may take the non-temporal store path: as
     * measured here, and both ways explicitly; the choice is 0 or 1. */
    size_t cap = 600001;
    uint8_t *src = malloc(cap + 16);
    uint8_t *dst = malloc(cap + 16);
    size_t sizes[] = {0,      1,      7,      8,      9,     63,
                      300,    767,    768,    1000,   24576, 30001,
                      100000, 262143, 262144, 262151, cap};
    (void)state;
    assert_non_null(src);
    assert_non_null(dst);
    assert_true(ckpt__crc32c_copy_streams() == 0 ||
                ckpt__crc32c_copy_streams() == 1);
    /* streaming into an aliasing destination only where streaming at all */
    assert_true(ckpt__crc32c_copy_streams_near() <=
                ckpt__crc32c_copy_streams());
    fill_random(src, cap + 16);
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        for (size_t sa = 0; sa < 16; sa += 5) {
            for (size_t da = 0; da < 16; da += 3) {
                size_t n = sizes[i];
                uint32_t c;
                /* as chosen here, then plain and streaming stores */
                for (int mode = -1; mode < 2; mode++) {
                    memset(dst, 0xa5, cap + 16);
                    c = mode < 0
                            ? ckpt__crc32c_copy(0x12345678u, dst + da, src + sa,
                                                n)
                            : ckpt__crc32c_copy_stores(0x12345678u, dst + da,
                                                       src + sa, n, mode);
                    assert_int_equal(c,
                                     crc_reference(0x12345678u, src + sa, n));
                    assert_memory_equal(dst + da, src + sa, n);
                    /* nothing written outside the target */
                    for (size_t k = 0; k < da; k++)
                        assert_int_equal(dst[k], 0xa5);
                    if (da + n < cap + 16)
                        assert_int_equal(dst[da + n], 0xa5);
                }
            }
        }
    }
    free(src);
    free(dst);
}

/* Combining the CRCs of pieces gives the one-pass CRC of the whole, for
 * empty pieces, odd lengths, many pieces, and lengths far beyond a buffer
 * (checked against extending over zero bytes). */
static void test_combine(void **state)
{
    size_t cap = 300007;
    uint8_t *buf = malloc(cap);
    uint8_t *zeros = calloc(1, (size_t)1 << 20);
    size_t splits[] = {0, 1, 3, 8, 255, 4096, 65537, 150000, 299999, cap};
    (void)state;
    assert_non_null(buf);
    assert_non_null(zeros);
    fill_random(buf, cap);
    for (size_t i = 0; i < sizeof(splits) / sizeof(splits[0]); i++) {
        size_t k = splits[i];
        uint32_t whole = crc_reference(0, buf, cap);
        uint32_t a = ckpt__crc32c(buf, k);
        uint32_t b = ckpt__crc32c(buf + k, cap - k);
        assert_int_equal(ckpt__crc32c_combine(a, b, cap - k), whole);
    }
    /* many pieces of uneven sizes, joined left to right */
    {
        uint32_t acc = 0;
        size_t at = 0, len = 1;
        while (at < cap) {
            size_t n = len < cap - at ? len : cap - at;
            acc = ckpt__crc32c_combine(acc, ckpt__crc32c(buf + at, n), n);
            at += n;
            len = len * 3 + 1;
        }
        assert_int_equal(acc, crc_reference(0, buf, cap));
    }
    /* a zero-length second piece leaves the first CRC */
    assert_int_equal(ckpt__crc32c_combine(0xdeadbeefu, 0, 0), 0xdeadbeefu);
    /* a long run of zero bytes (1 MiB: every bit of 8 * len up to 2^23) */
    {
        size_t n = (size_t)1 << 20;
        uint32_t a = ckpt__crc32c(buf, 1000);
        uint32_t z = ckpt__crc32c(zeros, n);
        assert_int_equal(ckpt__crc32c_combine(a, z, n),
                         ckpt__crc32c_extend(a, zeros, n));
        /* and one byte less, to exercise many set bits */
        z = ckpt__crc32c(zeros, n - 1);
        assert_int_equal(ckpt__crc32c_combine(a, z, n - 1),
                         ckpt__crc32c_extend(a, zeros, n - 1));
    }
    free(buf);
    free(zeros);
}

/* ---- every implementation ------------------------------------------------ */

static void print_impls(void)
{
    for (int i = 0; i < CKPT__CRC32C_IMPL_COUNT; i++)
        print_message("crc32c %-10s %s%s\n", ckpt__crc32c_impl_name(i),
                      ckpt__crc32c_impl_available(i) ? "available"
                                                     : "not on this CPU",
                      ckpt__crc32c_impl() == i ? ", in use" : "");
}

/* The known vectors through each implementation, and for the long ones
 * (which reach the folding loops) the bit-serial reference. */
static void test_impl_vectors(void **state)
{
    uint8_t buf[32];
    uint8_t *big = malloc(4096);
    (void)state;
    assert_non_null(big);
    print_impls();
    for (int i = 0; i < CKPT__CRC32C_IMPL_COUNT; i++) {
        if (!ckpt__crc32c_impl_available(i))
            continue;
        assert_int_equal(ckpt__crc32c_extend_with(i, 0, "123456789", 9),
                         0xe3069283u);
        memset(buf, 0, sizeof(buf));
        assert_int_equal(ckpt__crc32c_extend_with(i, 0, buf, 32), 0x8a9136aau);
        memset(buf, 0xff, sizeof(buf));
        assert_int_equal(ckpt__crc32c_extend_with(i, 0, buf, 32), 0x62a8ab43u);
        for (int k = 0; k < 32; k++)
            buf[k] = (uint8_t)k;
        assert_int_equal(ckpt__crc32c_extend_with(i, 0, buf, 32), 0x46dd794eu);
        for (int k = 0; k < 32; k++)
            buf[k] = (uint8_t)(31 - k);
        assert_int_equal(ckpt__crc32c_extend_with(i, 0, buf, 32), 0x113fdb5cu);
        assert_int_equal(ckpt__crc32c_extend_with(i, 0, NULL, 0), 0);
        assert_int_equal(ckpt__crc32c_extend_with(i, 0x1234u, NULL, 0),
                         0x1234u);
        for (size_t k = 0; k < 4096; k++)
            big[k] = (uint8_t)(k * 7 + (k >> 8));
        assert_int_equal(ckpt__crc32c_extend_with(i, 0, big, 4096),
                         crc_reference(0, big, 4096));
        memset(big, 0, 4096);
        assert_int_equal(ckpt__crc32c_extend_with(i, 0xabcdef01u, big, 4096),
                         crc_reference(0xabcdef01u, big, 4096));
    }
    /* an id that is no implementation: not available, no name, and the
     * _with calls fall back to the portable one */
    assert_false(ckpt__crc32c_impl_available(CKPT__CRC32C_IMPL_COUNT));
    assert_false(ckpt__crc32c_impl_available(-1));
    assert_null(ckpt__crc32c_impl_name(CKPT__CRC32C_IMPL_COUNT));
    assert_int_equal(
        ckpt__crc32c_extend_with(CKPT__CRC32C_IMPL_COUNT, 0, "123456789", 9),
        0xe3069283u);
    free(big);
}

/* Every length 0..1024 at every source alignment 0..63, with a non-zero
 * starting CRC, checksummed and fused-copied (to a destination at another
 * alignment), against the portable implementation. Folding kernels reach
 * every fold distance here (their loops start at 128, 256 and 512 bytes). */
static void test_impl_lengths_alignments(void **state)
{
    enum { MAXLEN = 1024, ALIGNS = 64 };
    uint8_t *src = malloc(MAXLEN + ALIGNS + 64);
    uint8_t *dst = malloc(MAXLEN + ALIGNS + 64);
    uint8_t *s0, *d0;
    (void)state;
    assert_non_null(src);
    assert_non_null(dst);
    /* 64-byte aligned bases, so each alignment is the one named */
    s0 = src + ((64 - ((uintptr_t)src & 63)) & 63);
    d0 = dst + ((64 - ((uintptr_t)dst & 63)) & 63);
    fill_random(s0, MAXLEN + ALIGNS);
    for (size_t n = 0; n <= MAXLEN; n++) {
        for (size_t a = 0; a < ALIGNS; a++) {
            uint32_t seed = 0x9abcdef0u + (uint32_t)(n * 64 + a);
            uint32_t ref = ckpt__crc32c_extend_portable(seed, s0 + a, n);
            size_t da = (a * 7 + n) % ALIGNS;
            for (int i = CKPT__CRC32C_SSE42; i < CKPT__CRC32C_IMPL_COUNT; i++) {
                if (!ckpt__crc32c_impl_available(i))
                    continue;
                if (ckpt__crc32c_extend_with(i, seed, s0 + a, n) != ref)
                    fail_msg("%s: length %zu alignment %zu differs",
                             ckpt__crc32c_impl_name(i), n, a);
                d0[da + n] = 0xa5;
                if (ckpt__crc32c_copy_with(i, seed, d0 + da, s0 + a, n, 0) !=
                    ref)
                    fail_msg("%s copy: length %zu alignment %zu differs",
                             ckpt__crc32c_impl_name(i), n, a);
                if (memcmp(d0 + da, s0 + a, n) != 0 || d0[da + n] != 0xa5)
                    fail_msg("%s copy: length %zu alignment %zu: bytes",
                             ckpt__crc32c_impl_name(i), n, a);
            }
        }
    }
    free(src);
    free(dst);
}

/* Random buffers of several MiB, lengths no multiple of 16 or 64, odd
 * alignments; the fused copy both with plain and non-temporal stores,
 * copying exactly the bytes asked for. */
static void test_impl_large(void **state)
{
    const size_t cap = ((size_t)5 << 20) + 4099;
    const size_t lens[] = {((size_t)5 << 20) + 4001, ((size_t)3 << 20) + 17,
                           ((size_t)1 << 20) + 255, 262144 + 5, 100003};
    const size_t aligns[] = {0, 1, 13, 33, 63};
    uint8_t *src = malloc(cap + 64);
    uint8_t *dst = malloc(cap + 64);
    (void)state;
    assert_non_null(src);
    assert_non_null(dst);
    fill_random(src, cap + 64);
    for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
        size_t a = aligns[l];
        size_t da = aligns[(l + 2) % 5];
        size_t n = lens[l];
        uint32_t ref = ckpt__crc32c_extend_portable(0x31415926u, src + a, n);
        assert_int_equal(ref, crc_reference(0x31415926u, src + a, n));
        for (int i = CKPT__CRC32C_SSE42; i < CKPT__CRC32C_IMPL_COUNT; i++) {
            if (!ckpt__crc32c_impl_available(i))
                continue;
            if (ckpt__crc32c_extend_with(i, 0x31415926u, src + a, n) != ref)
                fail_msg("%s: length %zu differs", ckpt__crc32c_impl_name(i),
                         n);
            for (int streaming = 0; streaming < 2; streaming++) {
                memset(dst, 0x5a, cap + 64);
                if (ckpt__crc32c_copy_with(i, 0x31415926u, dst + da, src + a, n,
                                           streaming) != ref)
                    fail_msg("%s copy (streaming %d): length %zu differs",
                             ckpt__crc32c_impl_name(i), streaming, n);
                assert_memory_equal(dst + da, src + a, n);
                for (size_t k = 0; k < da; k++)
                    assert_int_equal(dst[k], 0x5a);
                for (size_t k = da + n; k < cap + 64; k++)
                    assert_int_equal(dst[k], 0x5a);
            }
        }
    }
    /* lengths from 40 to 160 KiB at an odd step, at two alignments: the
     * 3-stream loop of sse42 (24 KiB chunks) and the folding loops end
     * with every kind of remainder somewhere in here */
    for (size_t n = 40000; n < 160000; n += 4099) {
        for (size_t a = 5; a < 64; a += 58) {
            uint32_t ref = ckpt__crc32c_extend_portable(7, src + a, n);
            for (int i = CKPT__CRC32C_SSE42; i < CKPT__CRC32C_IMPL_COUNT; i++) {
                if (!ckpt__crc32c_impl_available(i))
                    continue;
                if (ckpt__crc32c_extend_with(i, 7, src + a, n) != ref)
                    fail_msg("%s: length %zu differs",
                             ckpt__crc32c_impl_name(i), n);
                dst[n + 3] = 0x77;
                if (ckpt__crc32c_copy_with(i, 7, dst + 3, src + a, n, 0) != ref)
                    fail_msg("%s copy: length %zu differs",
                             ckpt__crc32c_impl_name(i), n);
                assert_memory_equal(dst + 3, src + a, n);
                assert_int_equal(dst[n + 3], 0x77);
            }
        }
    }
    free(src);
    free(dst);
}

/* Extending over pieces of uneven sizes (1 byte to tens of KiB) gives the
 * CRC of the whole, in every implementation. */
static void test_impl_extend_pieces(void **state)
{
    const size_t cap = 400009;
    uint8_t *buf = malloc(cap);
    uint32_t whole;
    (void)state;
    assert_non_null(buf);
    fill_random(buf, cap);
    whole = crc_reference(0, buf, cap);
    for (int i = 0; i < CKPT__CRC32C_IMPL_COUNT; i++) {
        uint32_t acc = 0;
        size_t at = 0, len = 1;
        if (!ckpt__crc32c_impl_available(i))
            continue;
        assert_int_equal(ckpt__crc32c_extend_with(i, 0, buf, cap), whole);
        while (at < cap) {
            size_t n = len < cap - at ? len : cap - at;
            acc = ckpt__crc32c_extend_with(i, acc, buf + at, n);
            at += n;
            len = (len * 5 + 3) % 70001;
        }
        assert_int_equal(acc, whole);
    }
    free(buf);
}

/* The choice: one the CPU has; the one CKPT_CRC32C_IMPL names when it
 * names one the CPU has; and the entry points behave as that one. */
static void test_impl_choice(void **state)
{
    const char *forced = getenv("CKPT_CRC32C_IMPL");
    int in_use = ckpt__crc32c_impl();
    int named = -1;
    (void)state;
    assert_true(in_use >= 0 && in_use < CKPT__CRC32C_IMPL_COUNT);
    assert_true(ckpt__crc32c_impl_available(in_use));
    assert_true(ckpt__crc32c_impl_available(CKPT__CRC32C_PORTABLE));
    assert_int_equal(ckpt__crc32c_hw_available(),
                     in_use != CKPT__CRC32C_PORTABLE);
    print_message("crc32c in use: %s (CKPT_CRC32C_IMPL=%s)\n",
                  ckpt__crc32c_impl_name(in_use), forced ? forced : "");
    for (int i = 0; forced && i < CKPT__CRC32C_IMPL_COUNT; i++)
        if (strcmp(forced, ckpt__crc32c_impl_name(i)) == 0)
            named = i;
    if (forced)
        assert_true(named >= 0); /* the CMake registration names real ones */
    if (named >= 0 && ckpt__crc32c_impl_available(named))
        assert_int_equal(in_use, named);
    if (named == CKPT__CRC32C_PORTABLE)
        assert_false(ckpt__crc32c_hw_available());
}

#if defined(__x86_64__) && defined(__GNUC__)
/* The XINUSE bits (XGETBV with ECX=1): which parts of the vector state are
 * not in their initial state; bit 2 is the upper halves of ymm0-15, bit 6
 * the upper halves of zmm0-15. Returns -1 when the CPU cannot report it. */
static long long vector_state_in_use(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid_count(0xd, 1, &a, &b, &c, &d) || !(a & (1u << 2)))
        return -1;
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(1));
    return (long long)(((unsigned long long)hi << 32) | lo);
}

__attribute__((target("avx"))) static void clear_upper_state(void)
{
    _mm256_zeroupper();
}
#endif

/* A wide kernel returns with the upper vector state clear: left dirty, it
 * made the caller's later SSE loops (ckpt-train's training step, on the
 * thread that helps the snapshot copy) run 2-2.5x slower. */
static void test_impl_leaves_upper_state_clear(void **state)
{
    (void)state;
#if defined(__x86_64__) && defined(__GNUC__)
    const long long upper = (1ll << 2) | (1ll << 6);
    size_t n = (size_t)1 << 20;
    uint8_t *src = malloc(n), *dst = malloc(n);
    assert_non_null(src);
    assert_non_null(dst);
    fill_random(src, n);
    for (int i = CKPT__CRC32C_VPCLMUL256; i < CKPT__CRC32C_IMPL_COUNT; i++) {
        if (!ckpt__crc32c_impl_available(i))
            continue;
        clear_upper_state();
        long long before = vector_state_in_use();
        if (before < 0 || (before & upper) != 0) {
            print_message("%s: this CPU does not report the upper state; "
                          "not checked\n",
                          ckpt__crc32c_impl_name(i));
            continue;
        }
        (void)ckpt__crc32c_extend_with(i, 0, src + 3, n - 3);
        long long after = vector_state_in_use();
        if (after & upper)
            fail_msg("%s: checksum left the upper state in use (%llx)",
                     ckpt__crc32c_impl_name(i), after);
        clear_upper_state();
        (void)ckpt__crc32c_copy_with(i, 0, dst + 1, src + 3, n - 3, 0);
        after = vector_state_in_use();
        if (after & upper)
            fail_msg("%s: copy left the upper state in use (%llx)",
                     ckpt__crc32c_impl_name(i), after);
    }
    free(src);
    free(dst);
#else
    print_message("not x86-64: nothing to check\n");
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_copy_unprobed),
        cmocka_unit_test(test_rfc3720_vectors),
        cmocka_unit_test(test_mask),
        cmocka_unit_test(test_hw_matches_portable),
        cmocka_unit_test(test_large_buffers),
        cmocka_unit_test(test_extend_composes),
        cmocka_unit_test(test_copy),
        cmocka_unit_test(test_combine),
        cmocka_unit_test(test_impl_vectors),
        cmocka_unit_test(test_impl_lengths_alignments),
        cmocka_unit_test(test_impl_large),
        cmocka_unit_test(test_impl_extend_pieces),
        cmocka_unit_test(test_impl_choice),
        cmocka_unit_test(test_impl_leaves_upper_state_clear),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
