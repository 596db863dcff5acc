/* tools/ckpt/cli_read.c - reading a tensor's data for the commands that
 * look at values (verify, diff, inspect --values) in memory bounded by the
 * files: a record goes through a ckpt_record_stream piece by piece,
 * whatever its size; a partitioned tensor, which must be assembled whole,
 * is allocated only after ckpt_bundle_reader_data_size has checked its
 * pieces against their data files. */
#include "cli.h"

#include <stdlib.h>

int cli_stream_record(ckpt_bundle_reader *r, const ckpt_tensor_entry *e,
                      cli_piece_cb cb, void *payload)
{
    ckpt_record_stream *s = NULL;
    const void *data = NULL;
    size_t n = 0;
    int err = ckpt_record_stream_open(&s, r, e, 0);
    while (err == 0) {
        err = ckpt_record_stream_next(s, &data, &n);
        if (err < 0 || n == 0)
            break;
        if (cb)
            cb(data, n, payload);
    }
    ckpt_record_stream_free(s);
    return err;
}

int cli_read_assembled(ckpt_bundle_reader *r, const ckpt_tensor_entry *e,
                       const char *cmd, uint8_t **out, size_t *nbytes)
{
    uint64_t size = 0;
    uint8_t *data;
    int err;
    *out = NULL;
    *nbytes = 0;
    err = ckpt_bundle_reader_data_size(r, e, &size);
    if (err < 0)
        return err;
    data = size <= SIZE_MAX - 1 ? malloc(size > 0 ? (size_t)size : 1) : NULL;
    if (!data) {
        cli_error(cmd, "out of memory for tensor '%s' of %s (%llu bytes)",
                  cli_safe_name(e), ckpt_bundle_reader_prefix(r),
                  (unsigned long long)size);
        cli_exit(CLI_USAGE);
    }
    err = ckpt_bundle_reader_read_entry(r, e, data, (size_t)size);
    if (err < 0) {
        free(data);
        return err;
    }
    *out = data;
    *nbytes = (size_t)size;
    return 0;
}
