/* tests/mpi/patch_tensor.c - rewrites a checkpoint with one tensor's bytes
 * changed, or the tensor left out, and everything else as it was (every
 * record in the data shard it was in, so the files keep their names; the
 * checksums hold): the tampered checkpoints the distributed demo's
 * hostile-resume test restores from.
 *
 *   patch_tensor PREFIX TENSOR BYTE_OFFSET i32|i64 VALUE
 *   patch_tensor PREFIX TENSOR drop
 *
 * Exit status 0, or 1 with the reason on stderr. */
#include "ckpt.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The patched copy of `r` at `tmp`, with the patch at `at` in `name`
 * (`patch` NULL: without `name`). */
static int copy_patched(ckpt_bundle_reader *r, const char *tmp,
                        const char *name, size_t at, const void *patch,
                        size_t n)
{
    ckpt_bundle_writer_options wo = CKPT_BUNDLE_WRITER_OPTIONS_INIT;
    ckpt_bundle_writer *w = NULL;
    int err, found = 0;
    wo.num_shards = ckpt_bundle_reader_num_shards(r);
    err = ckpt_bundle_writer_open(&w, tmp, &wo);
    for (size_t i = 0; err == 0 && i < ckpt_bundle_reader_count(r); i++) {
        const ckpt_tensor_entry *e = ckpt_bundle_reader_entry(r, i);
        size_t bytes = (size_t)e->size;
        unsigned char *buf = malloc(bytes ? bytes : 1);
        if (!buf)
            return fprintf(stderr, "out of memory\n"), 1;
        err = ckpt_bundle_reader_read_entry(r, e, buf, bytes);
        if (err == 0 && strcmp(e->name, name) == 0 && !patch) {
            found = 1;
            free(buf);
            continue;
        }
        if (err == 0 && strcmp(e->name, name) == 0) {
            found = 1;
            if (at > bytes || n > bytes - at) {
                fprintf(stderr, "%s: %zu bytes, no room at %zu\n", name, bytes,
                        at);
                free(buf);
                ckpt_bundle_writer_free(w);
                return 1;
            }
            memcpy(buf + at, patch, n);
        }
        if (err == 0)
            err = ckpt_bundle_writer_select_shard(w, e->shard_id);
        if (err == 0)
            err = ckpt_bundle_writer_add(w, e->name, e->dtype, &e->shape, buf,
                                         bytes);
        free(buf);
    }
    if (err == 0)
        err = ckpt_bundle_writer_finish(w);
    ckpt_bundle_writer_free(w);
    if (err < 0)
        return fprintf(stderr, "%s\n", ckpt_error_last()->message), 1;
    if (!found)
        return fprintf(stderr, "no tensor %s\n", name), 1;
    return 0;
}

/* Rename the patched copy's files over the original's. */
static int take_name(const char *tmp, const char *prefix, int shards)
{
    ckpt_buf from = CKPT_BUF_INIT, to = CKPT_BUF_INIT;
    int rc = 0;
    for (int i = -1; rc == 0 && i < shards; i++) {
        int err = i < 0 ? ckpt_bundle_index_path(&from, tmp)
                        : ckpt_bundle_data_path(&from, tmp, i, shards);
        if (err == 0)
            err = i < 0 ? ckpt_bundle_index_path(&to, prefix)
                        : ckpt_bundle_data_path(&to, prefix, i, shards);
        if (err < 0 || rename(from.ptr, to.ptr) != 0)
            rc = 1;
    }
    ckpt_buf_dispose(&from);
    ckpt_buf_dispose(&to);
    return rc;
}

int main(int argc, char **argv)
{
    ckpt_bundle_reader *r = NULL;
    char tmp[4200];
    int32_t v32;
    int64_t v64;
    int rc, shards;
    int drop = argc == 4 && strcmp(argv[3], "drop") == 0;
    if (!drop && (argc != 6 || (strcmp(argv[4], "i32") != 0 &&
                                strcmp(argv[4], "i64") != 0))) {
        fprintf(stderr, "usage: patch_tensor PREFIX TENSOR BYTE_OFFSET "
                        "i32|i64 VALUE\n       patch_tensor PREFIX TENSOR "
                        "drop\n");
        return 2;
    }
    v64 = drop ? 0 : strtoll(argv[5], NULL, 0);
    v32 = (int32_t)v64;
    if (ckpt_bundle_reader_open(&r, argv[1], NULL) < 0)
        return fprintf(stderr, "%s\n", ckpt_error_last()->message), 1;
    snprintf(tmp, sizeof(tmp), "%s-patched", argv[1]);
    shards = ckpt_bundle_reader_num_shards(r);
    if (drop)
        rc = copy_patched(r, tmp, argv[2], 0, NULL, 0);
    else if (strcmp(argv[4], "i32") == 0)
        rc = copy_patched(r, tmp, argv[2], strtoul(argv[3], NULL, 0), &v32,
                          sizeof(v32));
    else
        rc = copy_patched(r, tmp, argv[2], strtoul(argv[3], NULL, 0), &v64,
                          sizeof(v64));
    ckpt_bundle_reader_free(r);
    if (rc == 0)
        rc = take_name(tmp, argv[1], shards);
    return rc;
}
