/* util/crc32c_combine.c - ckpt__crc32c_combine: the CRC-32C of a
 * concatenation from the CRCs of its parts, so pieces of one buffer can be
 * checksummed by different threads and joined afterwards.
 *
 * CRC-32C with its initial and final inversion satisfies, for any A and B,
 *   crc(A || B) = crc(A) * x^(8 |B|)  xor  crc(B)      (mod P),
 * with polynomials in the reflected bit order the CRC uses (bit 31 is the
 * x^0 coefficient). Multiplying by x^(8 |B|) needs x raised to a large
 * power mod P: it is a product of the powers x^(2^k) for the bits set in
 * 8 |B|, kept in a table computed once. */
#include "util/crc32c.h"

#include <pthread.h>

#define POLY 0x82f63b78u    /* reflected Castagnoli polynomial */
#define X_POW_0 0x80000000u /* the polynomial 1 in reflected order */

/* x^(2^k) mod P for k = 0..63; written only by make_powers, once. */
static uint32_t powers[64];
static pthread_once_t powers_once = PTHREAD_ONCE_INIT;

/* a * b mod P, both reflected. */
static uint32_t multiply(uint32_t a, uint32_t b)
{
    uint32_t product = 0;
    for (uint32_t bit = X_POW_0; bit != 0; bit >>= 1) {
        if (a & bit)
            product ^= b;
        /* b *= x: one step towards the low end, reduced by P. */
        b = (b >> 1) ^ (POLY & (0u - (b & 1u)));
    }
    return product;
}

static void make_powers(void)
{
    powers[0] = X_POW_0 >> 1; /* x^1 */
    for (int k = 1; k < 64; k++)
        powers[k] = multiply(powers[k - 1], powers[k - 1]);
}

/* x^(8 n) mod P. */
static uint32_t x_pow_8n(uint64_t n)
{
    uint32_t r = X_POW_0;
    int k = 3; /* 8 n = n << 3 */
    pthread_once(&powers_once, make_powers);
    for (; n != 0 && k < 64; n >>= 1, k++)
        if (n & 1u)
            r = multiply(r, powers[k]);
    return r;
}

uint32_t ckpt__crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b)
{
    if (len_b == 0)
        return crc_a;
    return multiply(x_pow_8n(len_b), crc_a) ^ crc_b;
}
