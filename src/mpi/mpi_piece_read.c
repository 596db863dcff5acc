/* mpi/mpi_piece_read.c - reading one stored piece of a partitioned tensor
 * straight into its place in a rank's variable, when the piece lies wholly
 * inside the rank's piece and lands on contiguous memory there (the same
 * or a finer partition along the first dimension): preads into the
 * destination, instead of a read into a buffer and a copy out of it.
 * The read goes in chunks small enough to stay in the CPU's cache, each
 * checksummed right after it lands: one pass over the destination in
 * memory instead of two (a pread of the whole record, then a CRC32C of it
 * read back from memory, cost a third more on a record larger than the
 * cache). The record is a fixed-size tensor in little-endian order, the
 * byte order this library writes and reads. */
#include "mpi_internal.h"

#include "io/fs_internal.h"
#include "util/crc32c.h"

/* Bytes read and checksummed at a time: well inside a core's L2 cache. */
#define CHUNK ((size_t)512 * 1024)

int ckpt__mpi_read_piece_into(const ckpt_fs *fs, const char *prefix,
                              int num_shards, const ckpt_tensor_entry *e,
                              const char *tensor, void *dst)
{
    ckpt_buf path = CKPT_BUF_INIT;
    ckpt_file *f = NULL;
    size_t done = 0, n = (size_t)e->size;
    uint32_t crc = 0;
    int err = ckpt_bundle_data_path(&path, prefix, e->shard_id, num_shards);
    if (err == 0)
        err = ckpt__fs_open_read(fs, &f, path.ptr);
    while (err == 0 && done < n) {
        size_t got = 0, want = n - done < CHUNK ? n - done : CHUNK;
        err = ckpt__fs_pread(fs, f, (uint8_t *)dst + done, want,
                             (uint64_t)e->offset + done, &got);
        if (err == 0 && got == 0)
            err = ckpt__error(CKPT_ECORRUPT,
                              "%s: tensor '%s': a piece's record at offset "
                              "%lld is cut short (%zu of %zu bytes)",
                              path.ptr, tensor, (long long)e->offset, done, n);
        crc = ckpt__crc32c_extend(crc, (uint8_t *)dst + done, got);
        done += got;
    }
    if (err == 0 && ckpt__crc32c_mask(crc) != e->crc32c)
        err = ckpt__error(CKPT_ECORRUPT,
                          "%s: tensor '%s': checksum mismatch in a piece's "
                          "record at offset %lld",
                          path.ptr, tensor, (long long)e->offset);
    ckpt__fs_close_quiet(fs, f);
    ckpt_buf_dispose(&path);
    return err;
}
