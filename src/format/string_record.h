/* format/string_record.h - the length checksum of a string tensor's record
 * in a bundle, for the reader (which checks it) and the writer (which
 * computes it). The record is
 *
 *   varint64 len[0] ... len[n-1] | uint32 masked length checksum | bytes
 *
 * The length checksum is the masked CRC32C of the lengths, each as a
 * fixed-width word in the bundle's byte order: 4 bytes, or 8 when the
 * length does not fit 32 bits. The record's own CRC (the entry's crc32c)
 * runs over those words in place of the varints, then the 4 checksum bytes
 * as stored, then the element bytes. Not installed. */
#ifndef CKPT_FORMAT_STRING_RECORD_H
#define CKPT_FORMAT_STRING_RECORD_H

#include <stdbool.h>
#include <stdint.h>

/* `crc` extended with the word of length `len` (big-endian when `big`,
 * else little-endian). */
uint32_t ckpt__string_length_crc(uint32_t crc, uint64_t len, bool big);

/* The masked length checksum stored at p[0..4). */
uint32_t ckpt__string_checksum_get(const uint8_t *p, bool big);

/* Store the masked length checksum `masked` at p[0..4). */
void ckpt__string_checksum_put(uint8_t *p, uint32_t masked, bool big);

#endif
