/* format/bundle_read_report.h - how a bundle reader read its data: the
 * report of its last read of a data file (direct or through the page
 * cache, as ckpt__read_extents chose), for callers that log or count it. Not
 * installed. */
#ifndef CKPT_FORMAT_BUNDLE_READ_REPORT_H
#define CKPT_FORMAT_BUNDLE_READ_REPORT_H

#include "ckpt/bundle.h"
#include "io/direct_read.h"

/* The report of the last ckpt_bundle_reader_read_many group read through
 * ckpt__read_extents (its mode is 0 when none was: nothing read, or
 * records that overlap, read one at a time); `bytes` (may be NULL)
 * receives the bytes that group read. Borrowed from `r`. */
const ckpt__read_report *ckpt__bundle_reader_stream(const ckpt_bundle_reader *r,
                                                    uint64_t *bytes);

#endif
