/* format/snappy_block.h - raw Snappy decompression of a table block (our
 * own decoder, snappy_block.c), with the declared length bounded before
 * any allocation. */
#ifndef CKPT_FORMAT_SNAPPY_BLOCK_H
#define CKPT_FORMAT_SNAPPY_BLOCK_H

#include "ckpt/common.h"

#include <stdint.h>

/* Decompress `n` bytes into `out` (replacing). `max_out` caps the declared
 * uncompressed length. `what` names the block in errors.
 * Returns 0, CKPT_ECORRUPT or CKPT_ENOMEM. */
int ckpt__snappy_uncompress(ckpt_buf *out, const uint8_t *in, size_t n,
                            size_t max_out, const char *what);

#endif
