/* format/bundle_names.c - the file names of a bundle: "<prefix>.index" and
 * "<prefix>.data-SSSSS-of-NNNNN" (decimal, zero-padded to at least five
 * digits, as printf's %05d). */
#include "ckpt/bundle.h"

#include "common/internal.h"

int ckpt_bundle_index_path(ckpt_buf *out, const char *prefix)
{
    CKPT__CHECK_ARG(out);
    CKPT__CHECK_ARG(prefix);
    ckpt__buf_clear(out);
    return ckpt__buf_printf(out, "%s.index", prefix);
}

int ckpt_bundle_data_path(ckpt_buf *out, const char *prefix, int shard,
                          int num_shards)
{
    CKPT__CHECK_ARG(out);
    CKPT__CHECK_ARG(prefix);
    if (num_shards < 1 || shard < 0 || shard >= num_shards)
        return ckpt__error(CKPT_EINVAL,
                           "bundle data path: shard %d out of range for %d "
                           "shards",
                           shard, num_shards);
    ckpt__buf_clear(out);
    return ckpt__buf_printf(out, "%s.data-%05d-of-%05d", prefix, shard,
                            num_shards);
}
