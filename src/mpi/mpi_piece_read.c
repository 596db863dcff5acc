/* mpi/mpi_piece_read.c - reading one stored piece of a partitioned tensor
 * straight into its place in a rank's variable, when the piece lies wholly
 * inside the rank's piece and lands on contiguous memory there (the same
 * or a finer partition along the first dimension): one pread into the
 * destination and a CRC32C check, instead of a read into a buffer and a
 * copy out of it. The record is a fixed-size tensor in little-endian
 * order, the byte order this library writes and reads. */
#include "mpi_internal.h"

#include "io/fs_internal.h"
#include "util/crc32c.h"

int ckpt__mpi_read_piece_into(const ckpt_fs *fs, const char *prefix,
                              int num_shards, const ckpt_tensor_entry *e,
                              const char *tensor, void *dst)
{
    ckpt_buf path = CKPT_BUF_INIT;
    ckpt_file *f = NULL;
    size_t done = 0, n = (size_t)e->size;
    int err = ckpt_bundle_data_path(&path, prefix, e->shard_id, num_shards);
    if (err == 0)
        err = ckpt__fs_open_read(fs, &f, path.ptr);
    while (err == 0 && done < n) {
        size_t got = 0;
        err = ckpt__fs_pread(fs, f, (uint8_t *)dst + done, n - done,
                             (uint64_t)e->offset + done, &got);
        if (err == 0 && got == 0)
            err = ckpt__error(CKPT_ECORRUPT,
                              "%s: tensor '%s': a piece's record at offset "
                              "%lld is cut short (%zu of %zu bytes)",
                              path.ptr, tensor, (long long)e->offset, done, n);
        done += got;
    }
    if (err == 0 && ckpt__crc32c_mask(ckpt__crc32c(dst, n)) != e->crc32c)
        err = ckpt__error(CKPT_ECORRUPT,
                          "%s: tensor '%s': checksum mismatch in a piece's "
                          "record at offset %lld",
                          path.ptr, tensor, (long long)e->offset);
    ckpt__fs_close_quiet(fs, f);
    ckpt_buf_dispose(&path);
    return err;
}
