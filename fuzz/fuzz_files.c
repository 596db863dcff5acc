/* fuzz/fuzz_files.c - fuzz target for the readers on real files (issue 14):
 * the input becomes a checkpoint directory on disk, opened through the
 * POSIX file system, so that FIFOs, sparse files and sizes far larger than
 * the bytes behind them reach the code that the in-memory targets cannot
 * (special files, the index read block by block, the state file's limit,
 * records streamed from big data files).
 *
 *   input:  flags[1] | index_ext[1] | data_ext[1] | state_ext[1] |
 *           index_len[4, little-endian] | index | rest
 *           flags bit 0: the index is a FIFO (nothing written)
 *           flags bit 1: the data file is a FIFO
 *           flags bit 2: the `checkpoint` state file is a FIFO
 *           flags bit 3: keep the index's block CRCs as they are
 *                        (otherwise repaired, ckpt_fuzz_fix_table_crcs)
 *           flags bit 4: open with skip_data_checksums
 *   files:  <tmp>/b.index: index_ext x 16 MiB of hole, then the index
 *                          (the footer stays at the end): up to 4 GiB
 *           <tmp>/b.data-00000-of-00001 (every data file name the header
 *                          could ask for is not made; others are missing):
 *                          rest, then data_ext x 128 KiB of hole
 *           <tmp>/checkpoint: rest, then state_ext x 128 KiB of hole
 *                          (crossing the 16 MiB state limit)
 *
 * Then: the state file read and the latest checkpoint looked up; the
 * bundle opened, verified, and each entry's data size checked and its
 * record streamed to the end (strings read whole, partitioned tensors of
 * up to 16 MiB assembled). Checks: documented
 * error codes with a message; a FIFO is refused (the state file's with
 * CKPT_EIO, the index's or data file's as damage, CKPT_ECORRUPT), never a
 * hang (libFuzzer's -timeout catches that); a stream hands out exactly the
 * record's bytes in pieces of at most CKPT_RECORD_STREAM_PIECE; the capped
 * allocator (64 MiB per allocation) sees no allocation the files' real
 * bytes do not justify, however large the holes make them. */
#include "fuzz.h"

#include "ckpt/bundle.h"
#include "ckpt/state.h"
#include "common/internal.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HEADER_BYTES 8
#define INDEX_HOLE_UNIT ((uint64_t)16 << 20)
#define TAIL_HOLE_UNIT ((uint64_t)128 << 10)
/* Largest partitioned tensor assembled (the target's own allocation). */
#define ASSEMBLE_MAX ((uint64_t)16 << 20)

enum {
    FIFO_INDEX = 1,
    FIFO_DATA = 2,
    FIFO_STATE = 4,
    KEEP_CRCS = 8,
    SKIP_CRC = 16,
};

typedef struct files {
    char dir[256];
    char prefix[300];
    char index[300];
    char data[300];
    char state[300];
} files;

static void check_error(int rc)
{
    CKPT_FUZZ_CHECK(rc < 0);
    CKPT_FUZZ_CHECK(ckpt_error_last()->code == rc);
    CKPT_FUZZ_CHECK(ckpt_error_last()->message[0] != '\0');
}

/* Write `n` bytes at `at` of a new file `path` of `size` bytes (the rest a
 * hole), or make it a FIFO. */
static void make_file(const char *path, int fifo, const uint8_t *p, size_t n,
                      uint64_t at, uint64_t size)
{
    int fd;
    if (fifo) {
        CKPT_FUZZ_CHECK(mkfifo(path, 0600) == 0);
        return;
    }
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    CKPT_FUZZ_CHECK(fd >= 0);
    CKPT_FUZZ_CHECK(ftruncate(fd, (off_t)size) == 0);
    CKPT_FUZZ_CHECK(n == 0 || pwrite(fd, p, n, (off_t)at) == (ssize_t)n);
    CKPT_FUZZ_CHECK(close(fd) == 0);
}

static void make_dir(files *f)
{
    ckpt_fuzz_make_temp_dir(f->dir, sizeof(f->dir), "files");
    snprintf(f->prefix, sizeof(f->prefix), "%s/b", f->dir);
    snprintf(f->index, sizeof(f->index), "%s/b.index", f->dir);
    snprintf(f->data, sizeof(f->data), "%s/b.data-00000-of-00001", f->dir);
    snprintf(f->state, sizeof(f->state), "%s/checkpoint", f->dir);
}

static void remove_dir(const files *f)
{
    unlink(f->index);
    unlink(f->data);
    unlink(f->state);
    CKPT_FUZZ_CHECK(rmdir(f->dir) == 0);
}

static void read_state(const files *f, int fifo)
{
    ckpt_state st = CKPT_STATE_INIT;
    ckpt_buf latest = CKPT_BUF_INIT;
    int rc = ckpt_state_read(&st, NULL, f->dir);
    if (rc != 0) {
        check_error(rc);
        CKPT_FUZZ_CHECK(rc == CKPT_ECORRUPT || rc == CKPT_EIO);
        CKPT_FUZZ_CHECK(!fifo || rc == CKPT_EIO);
    }
    ckpt_state_dispose(&st);
    rc = ckpt_latest_checkpoint(&latest, NULL, f->dir);
    if (rc != 0) {
        check_error(rc);
        CKPT_FUZZ_CHECK(rc == CKPT_ECORRUPT || rc == CKPT_EIO ||
                        rc == CKPT_ENOTFOUND);
    }
    ckpt_buf_dispose(&latest);
}

/* Stream the record of `e` to its end. */
static void stream_record(ckpt_bundle_reader *r, const ckpt_tensor_entry *e)
{
    ckpt_record_stream *s = NULL;
    uint64_t total = 0;
    int rc = ckpt_record_stream_open(&s, r, e, 0);
    if (rc != 0) {
        check_error(rc);
        CKPT_FUZZ_CHECK(rc == CKPT_ECORRUPT || rc == CKPT_EIO ||
                        rc == CKPT_ENOTFOUND);
        CKPT_FUZZ_CHECK(s == NULL);
        return;
    }
    for (;;) {
        const void *data = NULL;
        size_t n = 0;
        rc = ckpt_record_stream_next(s, &data, &n);
        if (rc != 0) {
            check_error(rc);
            CKPT_FUZZ_CHECK(rc == CKPT_ECORRUPT || rc == CKPT_EIO);
            break;
        }
        if (n == 0) {
            CKPT_FUZZ_CHECK(total == (uint64_t)e->size);
            break;
        }
        CKPT_FUZZ_CHECK(n <= CKPT_RECORD_STREAM_PIECE);
        ckpt_fuzz_touch(data, n);
        total += n;
        CKPT_FUZZ_CHECK(total <= (uint64_t)e->size);
    }
    ckpt_record_stream_free(s);
}

/* Assemble a partitioned tensor whose pieces ckpt_bundle_reader_data_size
 * accepted (`bytes`, bounded by the pieces' records in the data files):
 * the strides and runs of its shape, however large, must stay checked. */
static void read_partitioned(ckpt_bundle_reader *r, const ckpt_tensor_entry *e,
                             uint64_t bytes)
{
    uint8_t *dst;
    int rc;
    if (bytes > ASSEMBLE_MAX || strlen(e->name) != e->name_len)
        return;
    dst = malloc(bytes ? (size_t)bytes : 1);
    CKPT_FUZZ_CHECK(dst != NULL);
    rc = ckpt_bundle_reader_read(r, e->name, bytes ? dst : NULL, (size_t)bytes);
    if (rc != 0) {
        check_error(rc);
        CKPT_FUZZ_CHECK(rc == CKPT_ECORRUPT || rc == CKPT_EIO);
    } else {
        ckpt_fuzz_touch(dst, (size_t)bytes);
    }
    free(dst);
}

/* ckpt_bundle_reader_check: the whole tensor checked in bounded memory. */
static void check_entry(ckpt_bundle_reader *r, const ckpt_tensor_entry *e)
{
    int rc = ckpt_bundle_reader_check(r, e);
    if (rc != 0) {
        check_error(rc);
        CKPT_FUZZ_CHECK(rc == CKPT_ECORRUPT || rc == CKPT_EIO ||
                        rc == CKPT_ENOTFOUND || rc == CKPT_ENOTSUP);
    }
}

static void read_entries(ckpt_bundle_reader *r, int data_fifo)
{
    size_t count = ckpt_bundle_reader_count(r);
    int rc = ckpt_bundle_reader_verify(r);
    if (rc != 0) {
        check_error(rc);
        CKPT_FUZZ_CHECK(rc == CKPT_ECORRUPT || rc == CKPT_EIO ||
                        rc == CKPT_ENOTFOUND);
    }
    for (size_t i = 0; i < count; i++) {
        const ckpt_tensor_entry *e = ckpt_bundle_reader_entry(r, i);
        uint64_t bytes = 0;
        rc = ckpt_bundle_reader_data_size(r, e, &bytes);
        if (rc != 0) {
            check_error(rc);
            CKPT_FUZZ_CHECK(rc == CKPT_ECORRUPT || rc == CKPT_EIO ||
                            rc == CKPT_ENOTFOUND || rc == CKPT_ENOTSUP);
            /* the FIFO is shard 0 of a one-shard bundle */
            CKPT_FUZZ_CHECK(!data_fifo || e->num_slices > 0 ||
                            ckpt_bundle_reader_num_shards(r) != 1 ||
                            rc == CKPT_ECORRUPT);
        } else if (e->num_slices == 0) {
            CKPT_FUZZ_CHECK(bytes == (uint64_t)e->size);
        }
        check_entry(r, e);
        if (e->num_slices > 0) {
            if (rc == 0)
                read_partitioned(r, e, bytes);
            continue;
        }
        if (e->dtype != CKPT_DT_STRING) {
            stream_record(r, e);
        } else if (strlen(e->name) == e->name_len) {
            ckpt_string_array a;
            rc = ckpt_bundle_reader_read_strings(r, e->name, &a);
            if (rc != 0)
                check_error(rc);
            ckpt_string_array_dispose(&a);
        }
    }
}

int ckpt_fuzz_files(const uint8_t *data, size_t size)
{
    ckpt_bundle_reader_options opts = CKPT_BUNDLE_READER_OPTIONS_INIT;
    ckpt_bundle_reader *r = NULL;
    ckpt_fuzz_split in;
    uint64_t index_hole, data_size, state_size;
    int flags, rc;
    files f;

    if (size < HEADER_BYTES)
        return 0;
    ckpt_fuzz_begin();
    flags = data[0];
    index_hole = data[1] * INDEX_HOLE_UNIT;
    ckpt_fuzz_split_index(&in, data, size, HEADER_BYTES, 4,
                          !(flags & KEEP_CRCS));
    data_size = in.rest_len + data[2] * TAIL_HOLE_UNIT;
    state_size = in.rest_len + data[3] * TAIL_HOLE_UNIT;

    make_dir(&f);
    make_file(f.index, flags & FIFO_INDEX, in.index, in.index_len, index_hole,
              index_hole + in.index_len);
    make_file(f.data, flags & FIFO_DATA, in.rest, in.rest_len, 0, data_size);
    make_file(f.state, flags & FIFO_STATE, in.rest, in.rest_len, 0, state_size);

    read_state(&f, flags & FIFO_STATE);
    opts.skip_data_checksums = flags & SKIP_CRC ? 1 : 0;
    rc = ckpt_bundle_reader_open(&r, f.prefix, &opts);
    if (rc != 0) {
        check_error(rc);
        CKPT_FUZZ_CHECK(rc == CKPT_ECORRUPT || rc == CKPT_EVERSION ||
                        rc == CKPT_EIO);
        CKPT_FUZZ_CHECK(!(flags & FIFO_INDEX) || rc == CKPT_ECORRUPT);
        CKPT_FUZZ_CHECK(r == NULL);
    } else {
        CKPT_FUZZ_CHECK(!(flags & FIFO_INDEX));
        read_entries(r, flags & FIFO_DATA);
        ckpt_bundle_reader_free(r);
    }
    remove_dir(&f);
    free(in.owned);
    ckpt_fuzz_end("files");
    return 0;
}
