/* tests/format/test_hostile_files.c - the reader on hostile files (issue
 * 14), built byte by byte (hostile_bytes.c), each opened in a child
 * process limited in memory and time so that a hang or a huge allocation
 * fails the test instead of the machine:
 *   1. special files (FIFO, directory) as index, data or state file;
 *   2. sizes trusted before checked (sparse 10 GiB index, 4 GiB state);
 *   3. shapes larger than the data files; records read in bounded pieces;
 *   4. arithmetic on huge dimensions;
 *   5. work amplification (restart-point floods, repeated block handles,
 *      records shared by many entries);
 *   6. more data files than the process may open. */
#include "bundle_test_helpers.h"
#include "hostile_bytes.h"

#include "format/bundle_slices.h"
#include "format/table.h"
#include "util/crc32c.h"

#include "support/fs_fault.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#define MIB ((uint64_t)1 << 20)
#define GIB ((uint64_t)1 << 30)
/* Limits of the child running each hostile case. */
#define MEM_LIMIT (256 * MIB)
#define TIME_LIMIT 60

typedef struct fixture {
    bt_fixture d; /* the test's directory and file paths */
    char msg[2048];
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    bt_fixture_make(&f->d);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    bt_fixture_remove(&f->d);
    free(f);
    return 0;
}

/* Run `fn` bounded and check its code and message. */
static void expect_bounded(fixture *f, int (*fn)(void *), int code,
                           const char *needle)
{
    int rc = hb_bounded(fn, f, MEM_LIMIT, TIME_LIMIT, f->msg, sizeof(f->msg));
    if (rc != code || (needle && !strstr(f->msg, needle)))
        fail_msg("got %d (%s), wanted %d with \"%s\"", rc, f->msg, code,
                 needle ? needle : "");
}

static void expect_msg_has(const fixture *f, const char *needle)
{
    if (!strstr(f->msg, needle))
        fail_msg("\"%s\" not in: %s", needle, f->msg);
}

/* One float tensor `name` of `count` elements, the record at 0. */
static void write_one_float(const fixture *f, const char *name, int64_t count,
                            uint32_t crc)
{
    ckpt_buf e = CKPT_BUF_INIT;
    hb_entry(&e, CKPT_DT_FLOAT, &count, 1, 0, count * 4, crc, NULL);
    hb_write_index(f->d.index, &name, &e, 1);
    ckpt_buf_dispose(&e);
}

/* ---- the bounded bodies ----------------------------------------------------
 */

static int open_only(void *arg)
{
    fixture *f = arg;
    ckpt_bundle_reader *r = NULL;
    int err = ckpt_bundle_reader_open(&r, f->d.prefix, NULL);
    ckpt_bundle_reader_free(r);
    return err;
}

static int open_and_verify(void *arg)
{
    fixture *f = arg;
    ckpt_bundle_reader *r = NULL;
    int err = ckpt_bundle_reader_open(&r, f->d.prefix, NULL);
    if (err == 0)
        err = ckpt_bundle_reader_verify(r);
    ckpt_bundle_reader_free(r);
    return err;
}

static int read_state(void *arg)
{
    fixture *f = arg;
    ckpt_state st = CKPT_STATE_INIT;
    int err = ckpt_state_read(&st, NULL, f->d.dir);
    ckpt_state_dispose(&st);
    return err;
}

static int latest(void *arg)
{
    fixture *f = arg;
    ckpt_buf out = CKPT_BUF_INIT;
    int err = ckpt_latest_checkpoint(&out, NULL, f->d.dir);
    ckpt_buf_dispose(&out);
    return err;
}

/* The data size of the entry "t", or of "w" when there is no "t". */
static int data_size(void *arg)
{
    fixture *f = arg;
    ckpt_bundle_reader *r = NULL;
    const ckpt_tensor_entry *e = NULL;
    uint64_t bytes = 0;
    int err = ckpt_bundle_reader_open(&r, f->d.prefix, NULL);
    if (err == 0 && ckpt_bundle_reader_find(&e, r, "t") < 0)
        err = ckpt_bundle_reader_find(&e, r, "w");
    if (err == 0)
        err = ckpt_bundle_reader_data_size(r, e, &bytes);
    ckpt_bundle_reader_free(r);
    return err;
}

/* Open a stream over "t" and read it to its end. */
static int stream_t(void *arg)
{
    fixture *f = arg;
    ckpt_bundle_reader *r = NULL;
    ckpt_record_stream *s = NULL;
    const ckpt_tensor_entry *e = NULL;
    const void *data;
    size_t n = 1;
    int err = ckpt_bundle_reader_open(&r, f->d.prefix, NULL);
    if (err == 0)
        err = ckpt_bundle_reader_find(&e, r, "t");
    if (err == 0)
        err = ckpt_record_stream_open(&s, r, e, 0);
    while (err == 0 && n > 0)
        err = ckpt_record_stream_next(s, &data, &n);
    ckpt_record_stream_free(s);
    ckpt_bundle_reader_free(r);
    return err;
}

/* Check "w" with ckpt_bundle_reader_check. */
static int check_w(void *arg)
{
    fixture *f = arg;
    ckpt_bundle_reader *r = NULL;
    const ckpt_tensor_entry *e = NULL;
    int err = ckpt_bundle_reader_open(&r, f->d.prefix, NULL);
    if (err == 0)
        err = ckpt_bundle_reader_find(&e, r, "w");
    if (err == 0)
        err = ckpt_bundle_reader_check(r, e);
    ckpt_bundle_reader_free(r);
    return err;
}

/* Read "w" (a tensor without elements) assembled. */
static int read_w_empty(void *arg)
{
    fixture *f = arg;
    ckpt_bundle_reader *r = NULL;
    int err = ckpt_bundle_reader_open(&r, f->d.prefix, NULL);
    if (err == 0)
        err = ckpt_bundle_reader_read(r, "w", NULL, 0);
    ckpt_bundle_reader_free(r);
    return err;
}

/* ---- 1. special files ------------------------------------------------------
 */

static void test_fifo_index(void **state)
{
    fixture *f = *state;
    assert_int_equal(mkfifo(f->d.index, 0600), 0);
    expect_bounded(f, open_only, CKPT_ECORRUPT, "a FIFO, not a regular file");
    expect_msg_has(f, f->d.index);
}

static void test_directory_index(void **state)
{
    fixture *f = *state;
    assert_int_equal(mkdir(f->d.index, 0700), 0);
    expect_bounded(f, open_only, CKPT_ECORRUPT,
                   "a directory, not a regular file");
    expect_msg_has(f, f->d.index);
}

static void test_fifo_data_file(void **state)
{
    fixture *f = *state;
    write_one_float(f, "t", 1, 0);
    assert_int_equal(mkfifo(f->d.data0, 0600), 0);
    expect_bounded(f, open_and_verify, CKPT_ECORRUPT,
                   "a FIFO, not a regular file");
    expect_msg_has(f, f->d.data0);
    expect_msg_has(f, "tensor 't'");
    /* named once (the verifier named it again) */
    assert_null(strstr(strstr(f->msg, "tensor 't'") + 1, "tensor 't'"));
}

/* A data file that is a symbolic link in a loop is refused as a FIFO is:
 * a damaged checkpoint (it was CKPT_EIO, which reads as a failing disk). */
static void test_looping_data_link(void **state)
{
    fixture *f = *state;
    write_one_float(f, "t", 1, 0);
    assert_int_equal(symlink(f->d.data0, f->d.data0), 0);
    expect_bounded(f, open_and_verify, CKPT_ECORRUPT,
                   "symbolic links in a loop, not a regular file");
    expect_msg_has(f, f->d.data0);
}

static void test_fifo_state_file(void **state)
{
    fixture *f = *state;
    assert_int_equal(mkfifo(f->d.state, 0600), 0);
    expect_bounded(f, read_state, CKPT_EIO, "a FIFO, not a regular file");
    expect_msg_has(f, f->d.state);
    expect_bounded(f, latest, CKPT_EIO, "a FIFO, not a regular file");
}

/* ---- 2. sizes
 * ---------------------------------------------------------------- */

static void test_sparse_10g_index(void **state)
{
    fixture *f = *state;
    hb_write_sparse(f->d.index, 10 * GIB, NULL, 0);
    expect_bounded(f, open_only, CKPT_ECORRUPT, "bad magic number");
    expect_msg_has(f, f->d.index);
}

/* A valid footer whose metaindex handle spans 9 GiB of a sparse file. */
static void test_sparse_index_huge_block(void **state)
{
    fixture *f = *state;
    ckpt_buf footer = CKPT_BUF_INIT, mh = CKPT_BUF_INIT, ih = CKPT_BUF_INIT;
    hb_varint(&mh, 0);
    hb_varint(&mh, 9 * GIB);
    hb_varint(&ih, 9 * GIB + 100);
    hb_varint(&ih, 10);
    bt_put_footer(&footer, &mh, &ih);
    hb_write_sparse(f->d.index, 10 * GIB, footer.ptr, footer.size);
    expect_bounded(f, open_only, CKPT_ECORRUPT,
                   "block of 9663676416 bytes, more than the limit of "
                   "33554432");
    expect_msg_has(f, f->d.index);
    ckpt_buf_dispose(&footer);
    ckpt_buf_dispose(&mh);
    ckpt_buf_dispose(&ih);
}

static void test_sparse_4g_state_file(void **state)
{
    fixture *f = *state;
    static const char text[] = "model_checkpoint_path: \"ckpt\"\n";
    hb_write_sparse(f->d.state, 4 * GIB, text, sizeof(text) - 1);
    expect_bounded(f, read_state, CKPT_ECORRUPT,
                   "larger than the 16777216 bytes this file can need");
    expect_msg_has(f, f->d.state);
}

/* ---- 3. shapes against data files -------------------------------------------
 */

/* 1 TiB of floats declared, 16 bytes of data file. */
static void test_huge_tensor_small_data_file(void **state)
{
    fixture *f = *state;
    write_one_float(f, "t", (int64_t)1 << 38, 0);
    test_write_file(f->d.data0, "0123456789abcdef", 16);
    expect_bounded(f, data_size, CKPT_ECORRUPT,
                   "runs past the end of the data file (16 bytes)");
    expect_msg_has(f, f->d.data0);
    expect_msg_has(f, "tensor 't'");
    expect_bounded(f, stream_t, CKPT_ECORRUPT, "runs past the end");
    expect_bounded(f, open_and_verify, CKPT_ECORRUPT, "tensor 't'");
}

/* A record larger than the child's memory limit verifies and streams:
 * it is read in pieces, never whole. */
static void test_record_larger_than_memory(void **state)
{
    fixture *f = *state;
    uint64_t size = MEM_LIMIT + 64 * MIB;
    write_one_float(f, "t", (int64_t)(size / 4), hb_zeros_crc(size));
    hb_write_sparse(f->d.data0, size, NULL, 0);
    expect_bounded(f, open_and_verify, 0, NULL);
    expect_bounded(f, stream_t, 0, NULL);
    /* the same with a wrong checksum: found at the end of the stream */
    write_one_float(f, "t", (int64_t)(size / 4), hb_zeros_crc(size) ^ 1);
    expect_bounded(f, stream_t, CKPT_ECORRUPT, "tensor 't': checksum mismatch");
    expect_msg_has(f, f->d.data0);
    expect_bounded(f, open_and_verify, CKPT_ECORRUPT, "checksum mismatch");
}

/* Pieces come in whole elements, in order, at most the size asked for. */
static void test_stream_pieces(void **state)
{
    fixture *f = *state;
    ckpt_bundle_reader *r = NULL;
    ckpt_record_stream *s = NULL;
    const ckpt_tensor_entry *e;
    uint8_t rec[40];
    int32_t got[10];
    size_t total = 0, pieces = 0;
    const void *data;
    size_t n;
    for (int i = 0; i < 10; i++) {
        int32_t v = i * 1000 - 3;
        memcpy(rec + 4 * i, &v, 4); /* little-endian host assumed below */
    }
    {
        ckpt_buf entry = CKPT_BUF_INIT;
        const char *name = "t";
        int64_t dim = 10;
        hb_entry(&entry, CKPT_DT_INT32, &dim, 1, 0, 40,
                 ckpt__crc32c_mask(ckpt__crc32c(rec, 40)), NULL);
        hb_write_index(f->d.index, &name, &entry, 1);
        ckpt_buf_dispose(&entry);
    }
    test_write_file(f->d.data0, rec, sizeof(rec));
    assert_ckpt_ok(ckpt_bundle_reader_open(&r, f->d.prefix, NULL));
    assert_ckpt_ok(ckpt_bundle_reader_find(&e, r, "t"));
    /* 14 bytes asked: 12 (three elements) given */
    assert_ckpt_ok(ckpt_record_stream_open(&s, r, e, 14));
    for (;;) {
        assert_ckpt_ok(ckpt_record_stream_next(s, &data, &n));
        if (n == 0)
            break;
        assert_true(n == 12 || (n == 4 && total == 36));
        memcpy((uint8_t *)got + total, data, n);
        total += n;
        pieces++;
    }
    assert_int_equal(total, 40);
    assert_int_equal(pieces, 4);
    for (int i = 0; i < 10; i++)
        assert_int_equal(got[i], i * 1000 - 3);
    /* after the end: the end again */
    assert_ckpt_ok(ckpt_record_stream_next(s, &data, &n));
    assert_int_equal(n, 0);
    ckpt_record_stream_free(s);
    /* 1 byte asked: one element */
    assert_ckpt_ok(ckpt_record_stream_open(&s, r, e, 1));
    assert_ckpt_ok(ckpt_record_stream_next(s, &data, &n));
    assert_int_equal(n, 4);
    ckpt_record_stream_free(s);
    assert_ckpt_error(ckpt_record_stream_open(&s, NULL, e, 0), CKPT_EINVAL,
                      "ckpt_record_stream_open: r is NULL");
    ckpt_bundle_reader_free(r);
}

/* Open and stream "t" through `fs`: the error of the first failing step. */
static int stream_through_fs(const fixture *f, const ckpt_fs *fs,
                             uint64_t *bytes)
{
    ckpt_bundle_reader_options opts = CKPT_BUNDLE_READER_OPTIONS_INIT;
    ckpt_bundle_reader *r = NULL;
    ckpt_record_stream *s = NULL;
    const ckpt_tensor_entry *e = NULL;
    const void *data;
    size_t n = 1;
    int err;
    opts.fs = fs;
    *bytes = 0;
    err = ckpt_bundle_reader_open(&r, f->d.prefix, &opts);
    if (err == 0)
        err = ckpt_bundle_reader_find(&e, r, "t");
    if (err == 0)
        err = ckpt_record_stream_open(&s, r, e, 0);
    while (err == 0 && n > 0) {
        err = ckpt_record_stream_next(s, &data, &n);
        *bytes += n;
    }
    ckpt_record_stream_free(s);
    ckpt_bundle_reader_free(r);
    return err;
}

/* Every I/O operation of opening the index block by block and streaming a
 * record, failed in turn: the error comes back naming the file, nothing
 * leaks (ASan), and without the fault the record reads whole. */
static void test_stream_io_faults(void **state)
{
    fixture *f = *state;
    const unsigned mask = CKPT_FS_OP_ALL;
    const uint64_t size = 3 * MIB + 8;
    ckpt_fs_fault *ff = NULL;
    uint64_t total, bytes = 0, failed = 0;
    write_one_float(f, "t", (int64_t)(size / 4), hb_zeros_crc(size));
    hb_write_sparse(f->d.data0, size, NULL, 0);
    assert_ckpt_ok(ckpt_fs_fault_new(&ff, NULL));
    assert_ckpt_ok(stream_through_fs(f, ckpt_fs_fault_fs(ff), &bytes));
    assert_int_equal(bytes, size);
    total = ckpt_fs_fault_count(ff, mask);
    assert_true(total >= 8); /* open, size, footer, blocks, 4 pieces, ... */
    for (uint64_t n = 1; n <= total; n++) {
        int rc;
        ckpt_fs_fault_fail(ff, n, mask, EIO, 0, 0);
        rc = stream_through_fs(f, ckpt_fs_fault_fs(ff), &bytes);
        ckpt_fs_fault_clear(ff);
        if (rc == 0)
            continue; /* a failed close after the reads is not reported */
        assert_int_equal(rc, CKPT_EIO);
        failed++;
        if (!strstr(ckpt_error_last()->message, f->d.index) &&
            !strstr(ckpt_error_last()->message, f->d.data0))
            fail_msg("operation %llu: the message names no file: %s",
                     (unsigned long long)n, ckpt_error_last()->message);
    }
    assert_true(failed + 3 >= total); /* all but the closes fail the read */
    ckpt_fs_fault_free(ff);
}

/* A partitioned tensor of 512 GiB whose one piece holds 8 bytes. */
static void test_partitioned_huge_full_shape(void **state)
{
    fixture *f = *state;
    int64_t dims[1] = {(int64_t)1 << 37}, lengths[1] = {2};
    hb_write_partitioned(f->d.index, f->d.data0, dims, lengths, 1, 8);
    expect_bounded(f, data_size, CKPT_ECORRUPT,
                   "tensor 'w': slices cover 2 of 137438953472 elements");
    expect_msg_has(f, f->d.index);
}

/* A partitioned tensor larger than the memory limit is checked piece by
 * piece; its pieces must still cover it exactly once. */
static void test_check_partitioned_larger_than_memory(void **state)
{
    fixture *f = *state;
    int64_t cols = (int64_t)((MEM_LIMIT / 2 + 32 * MIB) / 4);
    hb_write_row_pieces(f->d.index, f->d.data0, 2, cols, 2, 0);
    expect_bounded(f, check_w, 0, NULL);
    expect_bounded(f, data_size, 0, NULL);
}

static void test_check_partitioned_overlap(void **state)
{
    fixture *f = *state;
    ckpt_bundle_reader *r = NULL;
    const ckpt_tensor_entry *e = NULL;
    ckpt_tensor_entry copy;
    hb_write_row_pieces(f->d.index, f->d.data0, 4, 3, 2, 1);
    /* the sizes add up only by counting one piece twice: refused before
     * anything the size justifies is allocated (a few bytes of index
     * listing one piece K times once passed for K times its size) */
    expect_bounded(f, data_size, CKPT_ECORRUPT,
                   "tensor 'w': two of its slices name the same piece, 'w "
                   "(piece 0,2:0,3)'");
    expect_bounded(f, check_w, CKPT_ECORRUPT, "name the same piece");
    hb_write_row_pieces(f->d.index, f->d.data0, 4, 3, 2, 0);
    assert_ckpt_ok(ckpt_bundle_reader_open(&r, f->d.prefix, NULL));
    assert_ckpt_ok(ckpt_bundle_reader_find(&e, r, "w"));
    assert_ckpt_ok(ckpt_bundle_reader_check(r, e));
    copy = *e; /* a copy as filled is the reader's (entry_fill's) ... */
    assert_ckpt_ok(ckpt_bundle_reader_check(r, &copy));
    copy.num_slices = 1; /* ... a changed one is not */
    assert_ckpt_error(ckpt_bundle_reader_check(r, &copy), CKPT_EINVAL,
                      "the entry is not one of");
    assert_ckpt_error(ckpt_bundle_reader_check(NULL, e), CKPT_EINVAL,
                      "ckpt_bundle_reader_check: r is NULL");
    ckpt_bundle_reader_free(r);
}

/* An index whose slice entries belong to no partitioned tensor: a piece
 * of "w" with no "w", a piece of "x" whose "x" is an ordinary tensor, a
 * key starting with a 0 byte that is no slice key. Each is no tensor a
 * reader lists, so verify passed them (and `ckpt repack` named "w" as a
 * partitioned tensor); now verify and check say what is wrong. */
static void test_slice_entries_of_no_tensor(void **state)
{
    fixture *f = *state;
    static const char *const want[] = {
        "tensor 'w (piece 0,2)': a piece of tensor 'w', which has no "
        "partitioned entry of its own",
        "tensor 'x (piece 0,2)': a piece of tensor 'x', which has no "
        "partitioned entry of its own",
        "tensor '\\x00zz': its key starts with a 0 byte but is no slice "
        "key: slice key: name not terminated (byte 2)",
    };
    for (int c = 0; c < 3; c++) {
        ckpt_buf key = CKPT_BUF_INIT;
        ckpt__tensor_slice s;
        ckpt_bundle_reader *r = NULL;
        ckpt_tensor_entry e;
        float got[2];
        memset(&s, 0, sizeof(s));
        s.rank = 1;
        s.length[0] = 2;
        if (c < 2)
            assert_int_equal(
                ckpt__slice_key_encode(&key, c == 0 ? "w" : "x", 1, &s), 0);
        else
            assert_int_equal(ckpt__buf_put(&key, "\0zz", 3), 0);
        hb_write_stray_piece(f->d.index, f->d.data0, key.ptr, key.size);
        assert_ckpt_ok(ckpt_bundle_reader_open(&r, f->d.prefix, NULL));
        assert_int_equal(ckpt_bundle_reader_count(r), 2);
        assert_ckpt_error(ckpt_bundle_reader_verify(r), CKPT_ECORRUPT, want[c]);
        assert_non_null(strstr(ckpt_error_last()->message, f->d.index));
        assert_ckpt_ok(ckpt_bundle_reader_entry_fill(&e, r, 0));
        assert_true(e.is_slice_key);
        assert_ckpt_error(ckpt_bundle_reader_check(r, &e), CKPT_ECORRUPT,
                          want[c]);
        /* the tensor beside it still reads */
        assert_ckpt_ok(ckpt_bundle_reader_read(r, "x", got, sizeof(got)));
        assert_true(got[0] == 0 && got[1] == 0);
        ckpt_bundle_reader_free(r);
        ckpt_buf_dispose(&key);
    }
}

/* A piece of "w" in the index that w's entry does not list (no reader
 * looks for it; w itself is whole without it). Verify said OK; now it and
 * check of the piece name the piece and its tensor. */
static void test_piece_its_tensor_does_not_list(void **state)
{
    fixture *f = *state;
    ckpt_bundle_reader *r = NULL;
    ckpt_tensor_entry e;
    hb_write_row_pieces(f->d.index, f->d.data0, 4, 2, 2,
                        HB_LEAVE_LAST_UNLISTED);
    assert_ckpt_ok(ckpt_bundle_reader_open(&r, f->d.prefix, NULL));
    assert_int_equal(ckpt_bundle_reader_count(r), 3);
    {
        float w[4];
        assert_ckpt_ok(ckpt_bundle_reader_read(r, "w", w, sizeof(w)));
    }
    assert_ckpt_error(ckpt_bundle_reader_verify(r), CKPT_ECORRUPT,
                      "tensor 'w (piece 2,2:0,2)': a piece tensor 'w' does not "
                      "list among its 1 slice");
    assert_non_null(strstr(ckpt_error_last()->message, f->d.index));
    /* the listed piece first, then the unlisted one (rows 2..3) */
    assert_ckpt_ok(ckpt_bundle_reader_entry_fill(&e, r, 0));
    assert_true(e.is_slice_key);
    assert_ckpt_ok(ckpt_bundle_reader_check(r, &e));
    assert_ckpt_ok(ckpt_bundle_reader_entry_fill(&e, r, 1));
    assert_true(e.is_slice_key);
    assert_ckpt_error(ckpt_bundle_reader_check(r, &e), CKPT_ECORRUPT,
                      "tensor 'w (piece 2,2:0,2)': a piece tensor 'w' does not "
                      "list among its 1 slice");
    ckpt_bundle_reader_free(r);
}

/* ---- 4. arithmetic
 * ----------------------------------------------------------- */

/* Shape [0, 2^32, 2^32]: no elements, but the strides of the other
 * dimensions overflow int64 (UBSan: signed overflow in the assembly). */
static void test_partitioned_zero_dim_before_huge(void **state)
{
    fixture *f = *state;
    int64_t dims[3] = {0, (int64_t)1 << 32, (int64_t)1 << 32};
    hb_write_partitioned(f->d.index, f->d.data0, dims, dims, 3, 0);
    expect_bounded(f, read_w_empty, 0, NULL);
    expect_bounded(f, data_size, 0, NULL);
}

/* ---- 5. work amplification --------------------------------------------------
 */

static void test_restart_flood(void **state)
{
    fixture *f = *state;
    size_t n;
    uint8_t *block = hb_restart_flood(&n);
    hb_write_repeated_handles(f->d.index, block, n, 0, 20000);
    expect_bounded(f, open_only, CKPT_ECORRUPT,
                   "262143 restart points but no entries");
    expect_msg_has(f, f->d.index);
    free(block);
}

static void test_restart_flood_snappy(void **state)
{
    fixture *f = *state;
    size_t clen;
    uint8_t *packed = hb_restart_flood_snappy(&clen);
    hb_write_repeated_handles(f->d.index, packed, clen, 1, 20000);
    expect_bounded(f, open_only, CKPT_ECORRUPT,
                   "262143 restart points but no entries");
    free(packed);
}

/* Index entries naming one data block again: each block is read once. */
static void test_repeated_data_block(void **state)
{
    fixture *f = *state;
    ckpt_buf block = CKPT_BUF_INIT, value = CKPT_BUF_INIT;
    bt_kv header;
    hb_header(&value, 1);
    header = (bt_kv){"", 0, value.ptr, value.size};
    bt_block(&block, &header, 1); /* "" -> header */
    hb_write_repeated_handles(f->d.index, block.ptr, block.size, 0, 1000);
    expect_bounded(f, open_only, CKPT_ECORRUPT,
                   "overlaps or precedes the one before it");
    ckpt_buf_dispose(&block);
    ckpt_buf_dispose(&value);
}

/* 1,000 entries naming one 1 MiB record: refused when opened. */
static void test_shared_record(void **state)
{
    fixture *f = *state;
    enum { N = 1000 };
    static char names[N][16];
    const char *pnames[N];
    ckpt_buf *entries = calloc(N, sizeof(*entries));
    int64_t count = (int64_t)(MIB / 4);
    uint32_t crc = hb_zeros_crc(MIB);
    assert_non_null(entries);
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof(names[i]), "t%05d", i);
        pnames[i] = names[i];
        hb_entry(&entries[i], CKPT_DT_FLOAT, &count, 1, 0, (int64_t)MIB, crc,
                 NULL);
    }
    hb_write_index(f->d.index, pnames, entries, N);
    hb_write_sparse(f->d.data0, MIB, NULL, 0);
    expect_bounded(f, open_and_verify, CKPT_ECORRUPT,
                   "tensors 't00000' and 't00001' overlap in data file 0");
    expect_msg_has(f, f->d.index);
    for (int i = 0; i < N; i++)
        ckpt_buf_dispose(&entries[i]);
    free(entries);
}

/* ---- 6. many data files -------------------------------------------------- */

#define MANY_SHARDS 300

/* A bundle of MANY_SHARDS data files, tensor "tNNN" (one float, NNN) in
 * data file MANY_SHARDS - 1 - NNN: name order visits them backwards. */
static void write_many_shards(const fixture *f)
{
    test_write_tensor_per_shard(f->d.prefix, MANY_SHARDS);
}

/* With `limit` file descriptors, fewer than data files: verify, read
 * each tensor by name, then all of them in one read_many. */
static int read_many_shards_under(const fixture *f, rlim_t limit)
{
    struct rlimit few = {limit, limit};
    ckpt_bundle_reader *r = NULL;
    ckpt_read_request req[MANY_SHARDS];
    char names[MANY_SHARDS][16];
    float v[MANY_SHARDS];
    int err;
    if (setrlimit(RLIMIT_NOFILE, &few) != 0)
        return CKPT_ERROR;
    err = ckpt_bundle_reader_open(&r, f->d.prefix, NULL);
    if (err == 0)
        err = ckpt_bundle_reader_verify(r);
    for (int i = 0; err == 0 && i < MANY_SHARDS; i++) {
        snprintf(names[i], sizeof(names[i]), "t%03d", i);
        err = ckpt_bundle_reader_read(r, names[i], &v[i], 4);
        if (err == 0 && v[i] != (float)i)
            err = ckpt__error(CKPT_ERROR, "t%03d read %g", i, (double)v[i]);
        req[i].name = names[i];
        req[i].dst = &v[i];
        req[i].dst_size = 4;
    }
    memset(v, 0, sizeof(v));
    if (err == 0)
        err = ckpt_bundle_reader_read_many(r, req, MANY_SHARDS);
    for (int i = 0; err == 0 && i < MANY_SHARDS; i++)
        if (v[i] != (float)i)
            err = ckpt__error(CKPT_ERROR, "read_many: t%03d is %g", i,
                              (double)v[i]);
    ckpt_bundle_reader_free(r);
    return err;
}

/* A bundle may have more data files than a process may open (one per rank
 * of a large job; a hostile index's num_shards): the reader keeps a few
 * open at a time. It kept every one it had opened, so past the limit each
 * read failed with 'Too many open files' (CKPT_ENOMEM), and ckpt verify
 * reported intact data files as damaged. */
static int read_many_shards(void *arg)
{
    return read_many_shards_under(arg, 100);
}

static void test_more_data_files_than_descriptors(void **state)
{
    fixture *f = *state;
    write_many_shards(f);
    expect_bounded(f, read_many_shards, 0, NULL);
}

/* Fewer descriptors than the reader keeps data files open (MAX_OPEN_SHARDS,
 * 64): with 12 (three standard, the index, the bounded run's own), opening
 * a data file fails with EMFILE, and the reader closes the ones it holds
 * and retries instead of failing the read ('Too many open files'). */
static int read_many_shards_12(void *arg)
{
    return read_many_shards_under(arg, 12);
}

static void test_descriptors_below_open_data_files(void **state)
{
    fixture *f = *state;
    write_many_shards(f);
    expect_bounded(f, read_many_shards_12, 0, NULL);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_fifo_index),
        T(test_directory_index),
        T(test_fifo_data_file),
        T(test_looping_data_link),
        T(test_fifo_state_file),
        T(test_sparse_10g_index),
        T(test_sparse_index_huge_block),
        T(test_sparse_4g_state_file),
        T(test_huge_tensor_small_data_file),
        T(test_record_larger_than_memory),
        T(test_stream_pieces),
        T(test_stream_io_faults),
        T(test_partitioned_huge_full_shape),
        T(test_check_partitioned_larger_than_memory),
        T(test_check_partitioned_overlap),
        T(test_slice_entries_of_no_tensor),
        T(test_piece_its_tensor_does_not_list),
        T(test_partitioned_zero_dim_before_huge),
        T(test_restart_flood),
        T(test_restart_flood_snappy),
        T(test_repeated_data_block),
        T(test_shared_record),
        T(test_more_data_files_than_descriptors),
        T(test_descriptors_below_open_data_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
