/* format/bundle_writer_internal.h - what the saver needs from the bundle
 * writer beyond the public API: writing a whole pre-laid-out data image in
 * one call (so it can go out with O_DIRECT from a page-aligned buffer) and
 * declaring the records that image holds; and a call made before the
 * bundle's files are put in place. */
#ifndef CKPT_FORMAT_BUNDLE_WRITER_INTERNAL_H
#define CKPT_FORMAT_BUNDLE_WRITER_INTERNAL_H

#include "ckpt/bundle.h"

/* Append `n` raw bytes to the current shard's data file (its temporary
 * file). With direct I/O requested, a page-aligned `data` goes out through
 * the page-cache-bypassing path. */
int ckpt__bundle_writer_append_raw(ckpt_bundle_writer *w, const void *data,
                                   size_t n);

/* Declare a record of the current shard at [offset, offset + size), already
 * written with ckpt__bundle_writer_append_raw; `masked_crc` is its masked
 * CRC32C. Same checks as ckpt_bundle_writer_add (name, dtype, shape, size),
 * plus the record must lie within what was written. */
int ckpt__bundle_writer_add_written(ckpt_bundle_writer *w, const char *name,
                                    int dtype, const ckpt_shape *shape,
                                    uint64_t offset, uint64_t size,
                                    uint32_t masked_crc);

/* Have finish call `fn(payload)` once every data file is written and
 * fsynced under its temporary name, right before the first rename puts a
 * file of this bundle in place; a failure from it fails finish (the
 * temporary files removed). The saver replaces a checkpoint of the same
 * name there (ckpt__dir_state_forget), so that one stays whole and named
 * while the new one is written, and a failed write leaves it the latest. */
void ckpt__bundle_writer_before_rename(ckpt_bundle_writer *w,
                                       int (*fn)(void *payload), void *payload);

/* Bytes of data and index written by a finished writer. */
uint64_t ckpt__bundle_writer_bytes(const ckpt_bundle_writer *w);

#endif
