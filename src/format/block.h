/* format/block.h - SSTable blocks: prefix-compressed key/value entries with
 * restart points (LevelDB's block format, as in TensorFlow's .index files).
 *
 *   entry:   varint32 shared | varint32 non_shared | varint32 value_len |
 *            key_delta[non_shared] | value[value_len]
 *   block:   entry* | fixed32 restart[R] | fixed32 R
 */
#ifndef CKPT_FORMAT_BLOCK_H
#define CKPT_FORMAT_BLOCK_H

#include "ckpt/common.h"

#include <stdbool.h>
#include <stdint.h>

/* Bytewise key order of tables: memcmp, a shorter key first when it is a
 * prefix of the other. Returns <0, 0 or >0. */
int ckpt__key_compare(const void *a, size_t na, const void *b, size_t nb);

/* ---- builder ------------------------------------------------------------ */

typedef struct ckpt__block_builder {
    ckpt_buf out;       /* entries so far */
    ckpt_buf last_key;  /* previous key */
    uint32_t *restarts; /* restart offsets */
    size_t num_restarts;
    size_t cap_restarts;
    int restart_interval; /* 16 for data blocks, 1 for the index block */
    int counter;          /* entries since the last restart */
    bool finished;
} ckpt__block_builder;

void ckpt__block_builder_init(ckpt__block_builder *b, int restart_interval);
void ckpt__block_builder_dispose(ckpt__block_builder *b);
/* Forget the contents (keep memory) to build the next block. */
void ckpt__block_builder_reset(ckpt__block_builder *b);
/* Add an entry; keys must be strictly increasing (asserted). 0/ENOMEM. */
int ckpt__block_builder_add(ckpt__block_builder *b, const void *key,
                            size_t key_len, const void *value,
                            size_t value_len);
/* Size the block would have if finished now. */
size_t ckpt__block_builder_estimate(const ckpt__block_builder *b);
bool ckpt__block_builder_empty(const ckpt__block_builder *b);
/* Append the restart array; the block is then b->out.ptr/b->out.size. */
int ckpt__block_builder_finish(ckpt__block_builder *b);

/* ---- reader ------------------------------------------------------------- */

/* Called for each entry in order; return non-zero to stop (returned). */
typedef int (*ckpt__block_entry_cb)(const uint8_t *key, size_t key_len,
                                    const uint8_t *value, size_t value_len,
                                    void *payload);

/* Validate a block's structure (docs/format.md §2.2) and report every
 * entry with its full key. `what` names the block in errors, e.g.
 * "x.index: data block at 0". Returns 0, the callback's non-zero value, or
 * CKPT_ECORRUPT with a message ("bad entry in block", ...). */
int ckpt__block_iterate(const uint8_t *block, size_t n, const char *what,
                        ckpt__block_entry_cb cb, void *payload);

#endif
