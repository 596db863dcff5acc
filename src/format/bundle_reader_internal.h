/* format/bundle_reader_internal.h - what the bundle reader
 * (format/bundle_reader.c) offers the other parts of the reading side that
 * live in their own files (the record stream, partitioned-tensor checks):
 * reading part of a record through the reader's open data file, and the
 * facts about the bundle they need. Not installed. */
#ifndef CKPT_FORMAT_BUNDLE_READER_INTERNAL_H
#define CKPT_FORMAT_BUNDLE_READER_INTERNAL_H

#include "ckpt/bundle.h"

#include <stdbool.h>
#include <stdint.h>

/* Open the data file of entry `e` (a record, num_slices == 0) and check
 * that the record lies inside it. 0, CKPT_EINVAL (a partitioned tensor's
 * full entry, or a bad entry), CKPT_ENOTFOUND / CKPT_EIO (data file) or
 * CKPT_ECORRUPT (record past the end of the data file), each naming the
 * data file and the tensor. */
int ckpt__bundle_reader_check_record(ckpt_bundle_reader *r,
                                     const ckpt_tensor_entry *e);

/* Read bytes [off, off + n) of the record of `e` (checked by
 * ckpt__bundle_reader_check_record; off + n <= e->size) into `dst`.
 * CKPT_ECORRUPT when the data file ends early; errors name file and
 * tensor. */
int ckpt__bundle_reader_read_part(ckpt_bundle_reader *r,
                                  const ckpt_tensor_entry *e, uint64_t off,
                                  void *dst, size_t n);

/* Read the record of `e` to its end through a ckpt_record_stream, its CRC
 * checked even when the reader skips checksums (DT_VARIANT excepted);
 * not for DT_STRING. */
int ckpt__bundle_reader_stream_check(ckpt_bundle_reader *r,
                                     const ckpt_tensor_entry *e);

/* Whether the bundle's byte order differs from the host's, and whether
 * the reader was told to skip data checksums. */
bool ckpt__bundle_reader_swaps(const ckpt_bundle_reader *r);
bool ckpt__bundle_reader_skips_crc(const ckpt_bundle_reader *r);

/* The data file name of `e` for messages (valid until the next read). */
const char *ckpt__bundle_reader_data_path(const ckpt_bundle_reader *r);

#endif
