/* format/bundle_writer_state.h - the bundle writer's state, shared by the
 * two files that implement ckpt_bundle_writer: bundle_writer.c (open, the
 * data files, the sticky first error, finish and the crash-safe commit,
 * free) and bundle_writer_add.c (the tensor names and every add call). No
 * other file includes it: the rest of the library sees the writer through
 * ckpt/bundle.h and format/bundle_writer_internal.h. */
#ifndef CKPT_FORMAT_BUNDLE_WRITER_STATE_H
#define CKPT_FORMAT_BUNDLE_WRITER_STATE_H

#include "ckpt/bundle.h"
#include "format/bundle_slices.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CKPT__WRITER_MSG_MAX 1024

enum ckpt__writer_state { W_OPEN, W_FINISHED, W_FAILED };

struct ckpt__writer_shard {
    ckpt_file *file;
    ckpt_buf tmp_path;
    ckpt_buf final_path;
    ckpt_buf pending; /* appended, not yet handed to the fs */
    uint64_t size;    /* bytes of the file so far, pending included */
    bool created;     /* tmp_path exists */
    bool renamed;     /* final_path holds our file */
};

/* One added tensor: its name and its encoded BundleEntryProto. */
struct ckpt__writer_entry {
    char *name; /* name_len bytes + NUL, then proto_len bytes */
    size_t name_len;
    size_t proto_len;
};

struct ckpt_bundle_writer {
    const ckpt_fs *fs;
    char *prefix;
    ckpt_buf dir;
    int num_shards;
    size_t alignment;
    int open_flags; /* for data files */
    int cur_shard;
    struct ckpt__writer_shard *shards;
    struct ckpt__writer_entry *entries;
    size_t count;
    size_t cap;
    size_t *slots; /* hash set of entry index + 1; 0 = empty */
    size_t nslots; /* power of two */
    ckpt_file *index_file;
    ckpt_buf index_tmp;
    ckpt_buf index_final;
    bool index_created;
    bool index_renamed;
    uint64_t index_bytes;
    enum ckpt__writer_state state;
    int status; /* first error */
    char status_msg[CKPT__WRITER_MSG_MAX];
    ckpt__slice_set sliced;              /* partitioned tensors (add_slice) */
    int (*before_rename)(void *payload); /* see bundle_writer_internal.h */
    void *before_rename_payload;
};

/* bundle_writer.c */

/* Remember the first error (code and message) and return `rc`. */
int ckpt__bundle_writer_fail(ckpt_bundle_writer *w, int rc);

/* Checks common to every add: a usable writer (not finished, no sticky
 * error). */
int ckpt__bundle_writer_check_open(ckpt_bundle_writer *w);

/* Hand what the current shard has gathered to its file. */
int ckpt__bundle_writer_shard_flush(ckpt_bundle_writer *w,
                                    struct ckpt__writer_shard *s);

/* Append `n` bytes to the current shard (gathered, then written). */
int ckpt__bundle_writer_shard_append(ckpt_bundle_writer *w, const void *data,
                                     size_t n);

/* Zero bytes up to the next multiple of the alignment. */
int ckpt__bundle_writer_shard_pad(ckpt_bundle_writer *w);

/* bundle_writer_add.c */

/* Encode each partitioned tensor's full entry with every piece added (the
 * adds only record the pieces). Before the entries are sorted. 0 or
 * CKPT_ENOMEM. */
int ckpt__bundle_writer_encode_partitioned(ckpt_bundle_writer *w);

#endif
