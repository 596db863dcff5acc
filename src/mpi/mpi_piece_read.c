/* mpi/mpi_piece_read.c - reading one stored piece of a partitioned tensor
 * straight into its place in a rank's variable, when the piece lies wholly
 * inside the rank's piece and lands on contiguous memory there (the same
 * or a finer partition along the first dimension): through
 * ckpt__read_extents, the path every restore reads with (io/buffered_read.h:
 * preads into the destination in pieces checksummed right after they
 * land, on two threads when the machine has the cores, or a direct stream
 * when a probe shows that faster), instead of a read into a buffer and a
 * copy out of it. The data file is the one the bundle reader holds (located
 * by it: the record checked to lie inside the file, and held files closed
 * when the process runs out of descriptors), never one opened past it. The
 * record lands as stored (a fixed-size tensor in the checkpoint's byte
 * order): the caller brings it to the host's. */
#include "mpi_internal.h"

#include "format/bundle_reader_internal.h"
#include "io/buffered_read.h"
#include "util/crc32c.h"

int ckpt__mpi_read_piece_into(ckpt_bundle_reader *r, const ckpt_tensor_entry *e,
                              const char *tensor, void *dst)
{
    struct ckpt__bundle_shard *shard;
    ckpt__extent ext;
    int err = ckpt__bundle_reader_locate(r, e, &shard); /* r->path: its file */
    if (err < 0)
        return err;
    ext.offset = (uint64_t)e->offset;
    ext.size = (uint64_t)e->size;
    ext.dst = dst;
    ext.crc = 0;
    err = ckpt__read_extents(r->fs, r->path.ptr, shard->file, &ext, 1, NULL);
    if (err < 0 && err != CKPT_ENOMEM)
        err = ckpt__error_prefix(err,
                                 "tensor '%s': a piece's record at "
                                 "offset %lld",
                                 tensor, (long long)e->offset);
    if (err == 0 && ckpt__crc32c_mask(ext.crc) != e->crc32c)
        err = ckpt__error(CKPT_ECORRUPT,
                          "%s: tensor '%s': checksum mismatch in a piece's "
                          "record at offset %lld",
                          r->path.ptr, tensor, (long long)e->offset);
    return err;
}
