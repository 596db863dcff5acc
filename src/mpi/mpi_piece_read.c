/* mpi/mpi_piece_read.c - reading one stored piece of a partitioned tensor
 * straight into its place in a rank's variable, when the piece lies wholly
 * inside the rank's piece and lands on contiguous memory there (the same
 * or a finer partition along the first dimension): through
 * ckpt__read_extents, the path every restore reads with (io/buffered_read.h:
 * preads into the destination in pieces checksummed right after they
 * land, on two threads when the machine has the cores, or a direct stream
 * when a probe shows that faster), instead of a read into a buffer and a
 * copy out of it. The record lands as stored (a fixed-size tensor in the
 * checkpoint's byte order): the caller brings it to the host's. */
#include "mpi_internal.h"

#include "io/buffered_read.h"
#include "util/crc32c.h"

int ckpt__mpi_read_piece_into(const ckpt_fs *fs, const char *prefix,
                              int num_shards, const ckpt_tensor_entry *e,
                              const char *tensor, void *dst)
{
    ckpt_buf path = CKPT_BUF_INIT;
    ckpt__extent ext;
    int err = ckpt_bundle_data_path(&path, prefix, e->shard_id, num_shards);
    ext.offset = (uint64_t)e->offset;
    ext.size = (uint64_t)e->size;
    ext.dst = dst;
    ext.crc = 0;
    if (err == 0)
        err = ckpt__read_extents(fs, path.ptr, NULL, &ext, 1, NULL);
    if (err < 0 && err != CKPT_ENOMEM)
        err = ckpt__error_prefix(err,
                                 "tensor '%s': a piece's record at "
                                 "offset %lld",
                                 tensor, (long long)e->offset);
    if (err == 0 && ckpt__crc32c_mask(ext.crc) != e->crc32c)
        err = ckpt__error(CKPT_ECORRUPT,
                          "%s: tensor '%s': checksum mismatch in a piece's "
                          "record at offset %lld",
                          path.ptr, tensor, (long long)e->offset);
    ckpt_buf_dispose(&path);
    return err;
}
