/* tests/io/extent_fixture.h - what the read tests of io/ share:
 * destinations for extents with guard bytes after them, and the check that
 * every extent got the file's bytes and CRC. */
#ifndef CKPT_TESTS_IO_EXTENT_FIXTURE_H
#define CKPT_TESTS_IO_EXTENT_FIXTURE_H

#include "io/direct_read.h"

#include <stddef.h>
#include <stdint.h>

/* Bytes after each destination that a read must leave as EXT_GUARD_BYTE. */
#define EXT_GUARD 16
#define EXT_GUARD_BYTE 0xa5

/* Give extent i a destination of size + EXT_GUARD bytes, all set to
 * EXT_GUARD_BYTE, when dst_wanted is NULL or dst_wanted[i] is nonzero
 * (else dst stays NULL: checksum only); every crc is set to garbage that
 * the read must overwrite. */
void ext_give_destinations(ckpt__extent *ext, size_t n, const int *dst_wanted);

void ext_free_destinations(ckpt__extent *ext, size_t n);

/* Every extent's CRC is that of file_data's bytes at its offset, its
 * destination (if any) holds those bytes, and its guard bytes are
 * untouched; fails the test naming the extent otherwise. */
void ext_check(const uint8_t *file_data, const ckpt__extent *ext, size_t n);

#endif
