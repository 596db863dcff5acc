/* tests/tools/test_cli_hostile.c - the `ckpt` tool on hostile files (issue
 * 14), built byte by byte (tests/format/hostile_bytes.c) and run with its
 * memory and time limited (cli_run_limited), so that a hang or an
 * allocation the files do not justify fails the test: FIFOs as index, data
 * or state file; tensors declaring far more data than their files hold;
 * records larger than the tool's memory, which must be streamed, and the
 * text of all their values, which must be held outside memory; a data
 * file gone, which fails every tensor in it alike: verify names the file
 * once, with its error and its tensors' count, where its JSON lists each. */
#include "cli_bounded.h"
#include "cli_json.h"
#include "cli_run.h"

#include "format/bundle_slices.h"
#include "format/bundle_test_helpers.h"
#include "format/hostile_bytes.h"
#include "util/crc32c.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MIB ((uint64_t)1 << 20)
#define MEM_LIMIT (384 * MIB)
#define TIME_LIMIT 60

#define RUN_BOUNDED(r, ...) RUN_LIMITED(r, MEM_LIMIT, TIME_LIMIT, __VA_ARGS__)

/* One float tensor "t" of `count` elements, its record at 0. */
static void write_one_float(const bt_fixture *f, int64_t count, uint32_t crc)
{
    ckpt_buf e = CKPT_BUF_INIT;
    const char *name = "t";
    hb_entry(&e, CKPT_DT_FLOAT, &count, 1, 0, count * 4, crc, NULL);
    hb_write_index(f->index, &name, &e, 1);
    ckpt_buf_dispose(&e);
}

/* Run `cmd` on the prefix and expect `status` with `needle` on stderr. */
static void expect_cmd(const bt_fixture *f, const char *cmd, int status,
                       const char *needle)
{
    cli_run r;
    char *copy = test_path(f->dir, "copy");
    if (strcmp(cmd, "diff") == 0)
        RUN_BOUNDED(r, cmd, f->prefix, f->prefix);
    else if (strcmp(cmd, "repack") == 0)
        RUN_BOUNDED(r, cmd, f->prefix, copy);
    else if (strcmp(cmd, "values") == 0)
        RUN_BOUNDED(r, "inspect", f->prefix, "--values");
    else
        RUN_BOUNDED(r, cmd, f->prefix);
    expect_status(&r, status);
    if (needle)
        expect_contains(r.err, needle);
    run_free(&r);
    free(copy);
}

/* ---- 1. special files ------------------------------------------------------
 */

static void test_fifo_index(void **state)
{
    bt_fixture *f = *state;
    /* an index that is not a regular file is damage, as a data file that
     * is not one (diff says 2 for any damaged input) */
    const char *cmds[] = {"inspect", "verify", "diff", "values"};
    const int status[] = {1, 1, 2, 1};
    assert_int_equal(mkfifo(f->index, 0600), 0);
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
        cli_run r;
        expect_cmd(f, cmds[i], status[i], "a FIFO, not a regular file");
        RUN_BOUNDED(r, "repack", f->prefix, "out");
        expect_status(&r, 1);
        expect_contains(r.err, f->index);
        expect_contains(r.err, "a FIFO, not a regular file");
        run_free(&r);
    }
    /* ls says what is there (it said "missing index"), and the listed
     * checkpoint's data file is its, not a stray (it was listed as "data
     * file without its index" as well) */
    {
        static const char text[] = "model_checkpoint_path: \"ckpt\"\n";
        cli_run r;
        test_write_file(f->state, text, sizeof(text) - 1);
        test_write_file(f->data0, "data", 4);
        RUN_BOUNDED(r, "ls", f->dir);
        expect_status(&r, 0);
        expect_contains(r.out, "(index is a FIFO, not a regular file)");
        expect_lacks(r.out, "missing index");
        expect_lacks(r.out, "without its index");
        run_free(&r);
    }
}

static void test_fifo_data_file(void **state)
{
    bt_fixture *f = *state;
    write_one_float(f, 1, 0);
    assert_int_equal(mkfifo(f->data0, 0600), 0);
    expect_cmd(f, "verify", 1, "a FIFO, not a regular file");
    /* a data file that is not one is damage, as verify counts it */
    expect_cmd(f, "values", 1, "a FIFO, not a regular file");
    expect_cmd(f, "diff", 2, "a FIFO, not a regular file");
    /* ls says what is there (it said "missing data files") */
    {
        static const char text[] = "model_checkpoint_path: \"ckpt\"\n";
        cli_run r;
        test_write_file(f->state, text, sizeof(text) - 1);
        RUN_BOUNDED(r, "ls", f->dir);
        expect_status(&r, 0);
        expect_contains(r.out,
                        "(data shard 0 of 1 is a FIFO, not a regular file)");
        expect_lacks(r.out, "missing data");
        run_free(&r);
        RUN_BOUNDED(r, "ls", f->dir, "--json");
        expect_status(&r, 0);
        expect_contains(r.out, "\"problem\": \"data shard 0 of 1 is a FIFO, "
                               "not a regular file\"");
        run_free(&r);
    }
}

/* A data file replaced by a directory is damage of the checkpoint, as a
 * missing one is: verify and inspect --values (text and --json) exit 1
 * naming it; diff, for which 1 means "different", exits 2. */
/* ls marks an index that is a link to nothing (it said "missing index")
 * and lists the note checkpoint.pending a crash left (it did not). */
static void test_ls_marks_index_link_and_pending(void **state)
{
    bt_fixture *f = *state;
    static const char text[] = "model_checkpoint_path: \"ckpt\"\n";
    char *pending = test_path(f->dir, "checkpoint.pending");
    cli_run r;
    test_write_file(f->state, text, sizeof(text) - 1);
    test_write_file(f->data0, "data", 4);
    test_write_file(pending, "ckpt-9\n", 7);
    assert_int_equal(symlink("/nonexistent-ckpt-mount/ckpt.index", f->index),
                     0);
    RUN_BOUNDED(r, "ls", f->dir);
    expect_status(&r, 0);
    expect_contains(r.out, "(index is a symbolic link to nothing or in a "
                           "loop)");
    expect_contains(r.out, "checkpoint.pending  note of a save in progress, "
                           "or of one a crash cut short");
    run_free(&r);
    RUN_BOUNDED(r, "ls", f->dir, "--json");
    expect_status(&r, 0);
    expect_contains(r.out, "\"problem\": \"index is a symbolic link to "
                           "nothing or in a loop\"");
    expect_contains(r.out, "\"file\": \"checkpoint.pending\"");
    run_free(&r);
    free(pending);
}

static void test_directory_data_file(void **state)
{
    bt_fixture *f = *state;
    cli_run r;
    write_one_float(f, 1, 0);
    assert_int_equal(mkdir(f->data0, 0700), 0);
    expect_cmd(f, "verify", 1, "a directory, not a regular file");
    expect_cmd(f, "values", 1, "a directory, not a regular file");
    expect_cmd(f, "diff", 2, "a directory, not a regular file");
    RUN_BOUNDED(r, "inspect", f->prefix, "--json", "--values");
    expect_status(&r, 1);
    expect_contains(r.out, "a directory, not a regular file");
    run_free(&r);
    assert_int_equal(rmdir(f->data0), 0);
    expect_cmd(f, "values", 1, "No such file or directory");
}

static void test_fifo_state_file(void **state)
{
    bt_fixture *f = *state;
    cli_run r;
    assert_int_equal(mkfifo(f->state, 0600), 0);
    RUN_BOUNDED(r, "inspect", f->dir);
    expect_status(&r, 2);
    expect_contains(r.err, "checkpoint: a FIFO, not a regular file");
    run_free(&r);
    RUN_BOUNDED(r, "ls", f->dir);
    expect_status(&r, 2);
    expect_contains(r.err, "checkpoint: a FIFO, not a regular file");
    run_free(&r);
}

/* ---- 2. sizes and 5. work amplification ---------------------------------- */

static void test_sparse_10g_index(void **state)
{
    bt_fixture *f = *state;
    hb_write_sparse(f->index, (uint64_t)10 << 30, NULL, 0);
    expect_cmd(f, "inspect", 1, "bad magic number");
    expect_cmd(f, "verify", 1, "bad magic number");
}

/* 20,000 index entries naming one 1 MiB block of 262,143 restart points
 * (the issue's 49 KB Snappy variant): refused at the first block. */
static void test_restart_flood(void **state)
{
    bt_fixture *f = *state;
    size_t clen;
    uint8_t *packed = hb_restart_flood_snappy(&clen);
    hb_write_repeated_handles(f->index, packed, clen, 1, 20000);
    expect_cmd(f, "inspect", 1, "262143 restart points but no entries");
    free(packed);
}

/* ---- 3. shapes against data files -------------------------------------------
 */

/* 1 TiB of floats declared, 16 bytes of data file: an error naming the
 * file and the tensor, never an allocation of the declared size. */
static void test_huge_tensor_small_data_file(void **state)
{
    bt_fixture *f = *state;
    write_one_float(f, (int64_t)1 << 38, 0);
    test_write_file(f->data0, "0123456789abcdef", 16);
    expect_cmd(f, "verify", 1,
               "tensor 't': record at offset 0, 1099511627776 bytes, runs "
               "past the end of the data file (16 bytes)");
    expect_cmd(f, "values", 1, "runs past the end of the data file");
    expect_cmd(f, "diff", 2, "runs past the end of the data file");
    /* repack allocated the declared size before reading: out of memory,
     * reported as "no error" with the usage status */
    expect_cmd(f, "repack", 1,
               "tensor 't': record at offset 0, 1099511627776 bytes, runs "
               "past the end of the data file (16 bytes)");
    {
        cli_run r;
        RUN_BOUNDED(r, "verify", f->prefix);
        expect_contains(r.err, f->data0);
        run_free(&r);
    }
}

/* A piece of a tensor "w" the index does not hold, beside a tensor "x":
 * verify passed it ("OK, 1 tensor") and repack called "w" a partitioned
 * tensor; both now say the index is damaged. */
static void test_piece_of_no_tensor(void **state)
{
    bt_fixture *f = *state;
    ckpt_buf key = CKPT_BUF_INIT;
    ckpt__tensor_slice s;
    cli_run r;
    memset(&s, 0, sizeof(s));
    s.rank = 1;
    s.length[0] = 2;
    assert_int_equal(ckpt__slice_key_encode(&key, "w", 1, &s), 0);
    hb_write_stray_piece(f->index, f->data0, key.ptr, key.size);
    RUN_BOUNDED(r, "verify", f->prefix);
    expect_status(&r, 1);
    expect_contains(r.err, "ckpt verify: ");
    expect_contains(r.err, ".index: tensor 'w (piece 0,2)': a piece of "
                           "tensor 'w', which has no partitioned entry of "
                           "its own\n");
    expect_contains(r.out, ": DAMAGED, 0 of 1 tensor; 1 index entry of "
                           "no tensor\n");
    run_free(&r);
    expect_cmd(f, "repack", 1,
               ".index: tensor 'w (piece 0,2)': a piece of tensor 'w', "
               "which has no partitioned entry of its own\n");
    ckpt_buf_dispose(&key);
}

/* A piece of "w" that w's entry does not list (w is whole without it):
 * verify said OK; now it names the piece and counts it as an entry of no
 * tensor; inspect and diff still read w, and repack refuses w. */
static void test_piece_its_tensor_does_not_list(void **state)
{
    bt_fixture *f = *state;
    cli_run r;
    hb_write_row_pieces(f->index, f->data0, 4, 2, 2, HB_LEAVE_LAST_UNLISTED);
    RUN_BOUNDED(r, "verify", f->prefix);
    expect_status(&r, 1);
    expect_contains(r.err, ".index: tensor 'w (piece 2,2:0,2)': a piece "
                           "tensor 'w' does not list among its 1 slice\n");
    expect_contains(r.out, ": DAMAGED, 0 of 1 tensor; 1 index entry of "
                           "no tensor\n");
    run_free(&r);
    RUN_BOUNDED(r, "inspect", f->prefix);
    expect_status(&r, 0);
    expect_contains(r.out, "(partitioned, 1 slice)\n"); /* not "1 slices" */
    run_free(&r);
    expect_cmd(f, "values", 0, NULL);
    expect_cmd(f, "diff", 0, NULL);
    /* repack refuses at the listed piece, before it meets the other */
    expect_cmd(f, "repack", 2, "tensor 'w' is partitioned");
}

/* Write the index of a header and two entries, `a` then `b` (encoded
 * entries, keys in order), over a data file of `bytes` zero bytes. */
static void write_two_entries(const bt_fixture *f, const void *a_key,
                              size_t a_len, const ckpt_buf *a,
                              const char *b_key, const ckpt_buf *b,
                              uint64_t bytes)
{
    ckpt_buf header = CKPT_BUF_INIT;
    bt_kv kvs[3];
    hb_header(&header, 1);
    kvs[0] = (bt_kv){"", 0, header.ptr, header.size};
    kvs[1] = (bt_kv){a_key, a_len, a->ptr, a->size};
    kvs[2] = (bt_kv){b_key, strlen(b_key), b->ptr, b->size};
    bt_write_raw_table(f->index, kvs, 3, b_key);
    hb_write_sparse(f->data0, bytes, NULL, 0);
    ckpt_buf_dispose(&header);
}

/* A string tensor "w" of shape [2] whose entry lists one slice with no
 * piece, beside an intact "x": the strings' pieces are not assembled, and
 * verify skipped the tensor ("OK, 2 tensors", exit 0) though the one piece
 * it needs is missing; it now names the slice and counts "w" damaged. */
static void test_partitioned_string_piece_missing(void **state)
{
    bt_fixture *f = *state;
    ckpt_buf full = CKPT_BUF_INIT, plain = CKPT_BUF_INIT;
    int64_t two = 2;
    cli_run r;
    hb_entry(&full, CKPT_DT_STRING, &two, 1, 0, 0, 0, &two);
    hb_entry(&plain, CKPT_DT_FLOAT, &two, 1, 0, 8, hb_zeros_crc(8), NULL);
    write_two_entries(f, "w", 1, &full, "x", &plain, 8);
    RUN_BOUNDED(r, "verify", f->prefix);
    expect_status(&r, 1);
    expect_contains(r.err, ".index: tensor 'w': slice 0 (0,2) has no entry "
                           "in the index\n");
    expect_contains(r.out, ": DAMAGED, 1 of 2 tensors\n");
    run_free(&r);
    ckpt_buf_dispose(&full);
    ckpt_buf_dispose(&plain);
}

/* A variant tensor "w" of shape [2] in one piece whose stored CRC is
 * wrong: verify does not decode variant checksums and said "OK, 1
 * tensors" of it, partitioned, while it says "not checked" of the same
 * tensor whole; now it says so of the partitioned one too. */
static void test_partitioned_variant_not_checked(void **state)
{
    bt_fixture *f = *state;
    ckpt_buf full = CKPT_BUF_INIT, piece = CKPT_BUF_INIT, key = CKPT_BUF_INIT;
    ckpt__tensor_slice s;
    int64_t two = 2;
    cli_run r;
    memset(&s, 0, sizeof(s));
    s.rank = 1;
    s.length[0] = 2;
    assert_int_equal(ckpt__slice_key_encode(&key, "w", 1, &s), 0);
    hb_entry(&full, CKPT_DT_VARIANT, &two, 1, 0, 0, 0, &two);
    hb_entry(&piece, CKPT_DT_VARIANT, &two, 1, 0, 8, 7, NULL);
    write_two_entries(f, key.ptr, key.size, &piece, "w", &full, 8);
    RUN_BOUNDED(r, "verify", f->prefix);
    expect_status(&r, 0);
    expect_contains(r.out, "w: not checked (its pieces are variant records, "
                           "whose per-element checksums this tool does not "
                           "decode)\n");
    expect_contains(r.out, ": no damage found in 0 of 1 tensor (0 bytes "
                           "checked); 1 not checked\n");
    run_free(&r);
    ckpt_buf_dispose(&full);
    ckpt_buf_dispose(&piece);
    ckpt_buf_dispose(&key);
}

/* At `prefix` (its index and one data file), a string tensor "w" of shape
 * [4] in two pieces of two strings each, `head` and `tail`, as TensorFlow
 * leaves one it saved partitioned (this library writes none). */
static void write_string_pieces(const char *prefix, const char *const head[2],
                                const char *const tail[2])
{
    ckpt__tensor_slice sl[2];
    const char *const *strs[2] = {head, tail};
    ckpt_buf header = CKPT_BUF_INIT, data = CKPT_BUF_INIT, path = CKPT_BUF_INIT;
    ckpt_buf keys[2] = {CKPT_BUF_INIT, CKPT_BUF_INIT};
    ckpt_buf values[3] = {CKPT_BUF_INIT, CKPT_BUF_INIT, CKPT_BUF_INIT};
    ckpt__bundle_entry e;
    bt_kv kvs[4];
    int64_t four = 4;
    memset(sl, 0, sizeof(sl));
    for (int k = 0; k < 2; k++) {
        uint32_t crc = 0;
        int64_t at = (int64_t)data.size;
        sl[k].rank = 1;
        sl[k].start[0] = 2 * k;
        sl[k].length[0] = 2;
        hb_string_record(&data, &crc, strs[k], 2, false);
        e = bt_make_entry(CKPT_DT_STRING, 2, 0, at, (int64_t)data.size - at,
                          crc);
        bt_entry(&values[k], &e);
        assert_ckpt_ok(ckpt__slice_key_encode(&keys[k], "w", 1, &sl[k]));
        kvs[k + 1] =
            (bt_kv){keys[k].ptr, keys[k].size, values[k].ptr, values[k].size};
    }
    memset(&e, 0, sizeof(e));
    e.dtype = CKPT_DT_STRING;
    e.shape = bt_shape(1, &four);
    e.num_slices = 2;
    e.slices = sl;
    bt_entry(&values[2], &e);
    hb_header(&header, 1);
    kvs[0] = (bt_kv){"", 0, header.ptr, header.size};
    kvs[3] = (bt_kv){"w", 1, values[2].ptr, values[2].size};
    assert_ckpt_ok(ckpt_bundle_index_path(&path, prefix));
    bt_write_raw_table(path.ptr, kvs, 4, "w");
    assert_ckpt_ok(ckpt_bundle_data_path(&path, prefix, 0, 1));
    test_write_file(path.ptr, data.ptr, data.size);
    for (int i = 0; i < 3; i++)
        ckpt_buf_dispose(&values[i]);
    ckpt_buf_dispose(&keys[0]);
    ckpt_buf_dispose(&keys[1]);
    ckpt_buf_dispose(&header);
    ckpt_buf_dispose(&data);
    ckpt_buf_dispose(&path);
}

/* A partitioned string tensor is one tensor, its pieces' records its bytes:
 * verify counted 0 bytes checked for it (its shape gives no size), and
 * diff counted each piece as a tensor as well ("equal, 3 tensors"; both
 * pieces differing: "2 of 3 tensors differ"). Each differing piece is
 * still listed. */
static void test_partitioned_strings_counted_once(void **state)
{
    bt_fixture *f = *state;
    static const char *const head[2] = {"a", "bb"};
    static const char *const tail[2] = {"ccc", ""};
    static const char *const head2[2] = {"a", "bX"};
    static const char *const tail2[2] = {"ccc", "d"};
    char *other = test_path(f->dir, "other");
    cli_run r;
    write_string_pieces(f->prefix, head, tail);
    write_string_pieces(other, head2, tail2);
    RUN_BOUNDED(r, "verify", f->prefix);
    expect_status(&r, 0);
    /* two records of 2 length bytes, a 4-byte checksum and 3 bytes */
    expect_contains(r.out, ": OK, 1 tensor, 18 bytes checked\n");
    run_free(&r);
    /* inspect gives w the bytes of its pieces' records (its shape gives
     * none: it was 0) */
    RUN_BOUNDED(r, "inspect", f->prefix);
    expect_status(&r, 0);
    expect_contains(r.out,
                    "w     string  [4]       18  -  (partitioned, 2 slices)\n");
    run_free(&r);
    RUN_BOUNDED(r, "inspect", "--json", f->prefix);
    expect_status(&r, 0);
    expect_contains(r.out, "\"bytes\": 18,");
    run_free(&r);
    RUN_BOUNDED(r, "diff", f->prefix, f->prefix);
    expect_status(&r, 0);
    expect_contains(r.out, ": equal, 1 tensor\n");
    run_free(&r);
    RUN_BOUNDED(r, "diff", f->prefix, other);
    expect_status(&r, 1);
    expect_contains(r.out, "w (piece 0,2): values differ");
    expect_contains(r.out, "w (piece 2,2): values differ");
    expect_contains(r.out, ": 1 of 1 tensor differ\n");
    run_free(&r);
    /* against a bundle of one float "v": w's pieces and w itself are only
     * in A, one tensor for all three lines, and v only in B */
    {
        ckpt_bundle_writer *w = NULL;
        ckpt_shape one = {1, {1}};
        float v = 1.f;
        assert_ckpt_ok(ckpt_bundle_writer_open(&w, other, NULL));
        assert_ckpt_ok(
            ckpt_bundle_writer_add(w, "v", CKPT_DT_FLOAT, &one, &v, sizeof(v)));
        assert_ckpt_ok(ckpt_bundle_writer_finish(w));
        ckpt_bundle_writer_free(w);
    }
    RUN_BOUNDED(r, "diff", f->prefix, other);
    expect_status(&r, 1);
    expect_contains(r.out, "w (piece 2,2): only in A\n");
    expect_contains(r.out, "w: only in A\n");
    expect_contains(r.out, "v: only in B\n");
    expect_contains(r.out, ": 2 of 2 tensors differ\n");
    run_free(&r);
    free(other);
}

/* A float tensor "m" [2 * pieces, 2] of `pieces` pieces of two rows each
 * (16 bytes of data apiece, piece p at offset 16 * p of the one data
 * file). */
static void write_row_pieces(const char *prefix, int pieces)
{
    ckpt_bundle_writer *w = NULL;
    ckpt_shape full = {.rank = 2, .dims = {2 * (int64_t)pieces, 2}};
    float v[4] = {1, 2, 3, 4};
    assert_ckpt_ok(ckpt_bundle_writer_open(&w, prefix, NULL));
    for (int p = 0; p < pieces; p++) {
        ckpt_slice_extent e[2] = {{2 * p, 2}, {0, CKPT_SLICE_FULL}};
        assert_ckpt_ok(ckpt_bundle_writer_add_slice(w, "m", CKPT_DT_FLOAT,
                                                    &full, e, v, sizeof(v)));
    }
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);
}

/* A tensor of 20,000 pieces with one damaged: verify, finding damage,
 * checks each entry alone, and each piece's check used to walk its
 * tensor's whole list of slices (20,000 x 20,000 key encodings, past two
 * minutes); each list is now walked once per reader. */
static void test_many_pieces_one_damaged(void **state)
{
    bt_fixture *f = *state;
    uint8_t flip = 0x55;
    int fd;
    cli_run r;
    write_row_pieces(f->prefix, 20000);
    fd = open(f->data0, O_WRONLY);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, &flip, 1, 100), 1); /* in piece 6 */
    assert_int_equal(close(fd), 0);
    RUN_BOUNDED(r, "verify", f->prefix);
    expect_status(&r, 1);
    expect_contains(r.err, "checksum mismatch");
    expect_contains(r.out, ": DAMAGED, 1 of 1 tensor\n");
    run_free(&r);
}

/* Every piece of a tensor of 300 damaged: the tensor and the first 100
 * pieces are named (the first piece within the tensor's own message),
 * then how many more; --json names each (it printed a line per piece). */
static void test_many_pieces_all_damaged_said_in_bounds(void **state)
{
    bt_fixture *f = *state;
    enum { PIECES = 300 };
    uint8_t flip = 0x55;
    size_t lines = 0;
    int fd;
    cli_run r;
    write_row_pieces(f->prefix, PIECES);
    fd = open(f->data0, O_WRONLY);
    assert_true(fd >= 0);
    for (int p = 0; p < PIECES; p++)
        assert_int_equal(pwrite(fd, &flip, 1, 16 * p + 1), 1);
    assert_int_equal(close(fd), 0);
    RUN_BOUNDED(r, "verify", f->prefix);
    expect_status(&r, 1);
    for (const char *at = r.err; (at = strstr(at, "checksum mismatch")); at++)
        lines++;
    assert_int_equal(lines, 1 + 100); /* m's own, then 100 pieces' */
    expect_contains(r.err, ": 199 more damaged pieces of partitioned "
                           "tensors, not named here (the first 100 are; "
                           "--json names each)\n");
    expect_contains(r.out, ": DAMAGED, 1 of 1 tensor\n");
    run_free(&r);
    RUN_BOUNDED(r, "verify", "--json", f->prefix);
    expect_status(&r, 1);
    {
        json_object *root = json_tokener_parse(r.out);
        assert_non_null(root);
        assert_int_equal(
            json_object_array_length(json_object_object_get(root, "damaged")),
            PIECES + 1);
        json_object_put(root);
    }
    run_free(&r);
}

/* A partitioned tensor of 512 GiB whose one piece holds 8 bytes. */
static void test_partitioned_huge_full_shape(void **state)
{
    bt_fixture *f = *state;
    int64_t dim = (int64_t)1 << 37, len = 2;
    hb_write_partitioned(f->index, f->data0, &dim, &len, 1, 8);
    expect_cmd(f, "verify", 1,
               "tensor 'w': slices cover 2 of 137438953472 elements");
    expect_cmd(f, "values", 1, "slices cover 2 of 137438953472 elements");
    expect_cmd(f, "diff", 2, "slices cover 2 of 137438953472 elements");
}

/* A record larger than the tool's memory is verified, compared and shown
 * piece by piece. */
static void test_record_larger_than_memory(void **state)
{
    bt_fixture *f = *state;
    uint64_t size = MEM_LIMIT + 64 * MIB;
    cli_run r;
    write_one_float(f, (int64_t)(size / 4), hb_zeros_crc(size));
    hb_write_sparse(f->data0, size, NULL, 0);
    RUN_BOUNDED(r, "verify", f->prefix);
    expect_status(&r, 0);
    expect_contains(r.out, ": OK, 1 tensor, 469762048 bytes checked");
    run_free(&r);
    RUN_BOUNDED(r, "diff", f->prefix, f->prefix);
    expect_status(&r, 0);
    run_free(&r);
    RUN_BOUNDED(r, "inspect", f->prefix, "--values=3");
    expect_status(&r, 0);
    expect_contains(r.out, "[0, 0, 0, ...]");
    run_free(&r);
    /* a damaged checksum is still found at the end of the stream */
    write_one_float(f, (int64_t)(size / 4), hb_zeros_crc(size) ^ 1);
    RUN_BOUNDED(r, "verify", f->prefix);
    expect_status(&r, 1);
    expect_contains(r.err, "tensor 't': checksum mismatch");
    run_free(&r);
    RUN_BOUNDED(r, "inspect", f->prefix, "--values=3");
    expect_status(&r, 1);
    expect_contains(r.err, "checksum mismatch");
    expect_lacks(r.out, "[0, 0, 0");
    run_free(&r);
}

/* `inspect --values=all` holds a tensor's values as text until its
 * checksum is checked: past 8 MiB that text goes to a temporary file, so
 * 4 Mi zeros (12 MiB of text, 44 as JSON) print whole under a memory limit
 * below their text (held in memory, the text was cut short with exit 0 and
 * the JSON ended in "out of memory"); a damaged checksum still prints no
 * value, and a TMPDIR that cannot take the file keeps the text in memory. */
static void test_values_all_held_past_memory(void **state)
{
    bt_fixture *f = *state;
    /* sanitized, the tool runs no limit (cli_bounded.c) and is 5-15 times
     * slower: 1 Mi values, still past 8 MiB as JSON */
    const int64_t count = (int64_t)(cli_tool_sanitized() ? 1 : 4) << 20;
    const uint64_t size = (uint64_t)count * 4, limit = 24 * MIB;
    cli_run r;
    write_one_float(f, count, hb_zeros_crc(size));
    hb_write_sparse(f->data0, size, NULL, 0);
    RUN_LIMITED(r, limit, TIME_LIMIT, "inspect", f->prefix, "--values=all");
    expect_status(&r, 0);
    assert_int_equal(test_count(r.out, "0, "), (size_t)count - 1);
    expect_contains(r.out, ", 0]\n");
    run_free(&r);
    RUN_LIMITED(r, limit, TIME_LIMIT, "inspect", f->prefix, "--values=all",
                "--json");
    expect_status(&r, 0);
    assert_int_equal(test_count(r.out, "        0,\n"), (size_t)count - 1);
    expect_contains(r.out, "        0\n      ]\n    }\n  ],\n  \"ok\": true");
    run_free(&r);
    write_one_float(f, count, hb_zeros_crc(size) ^ 1);
    RUN_LIMITED(r, limit, TIME_LIMIT, "inspect", f->prefix, "--values=all");
    expect_status(&r, 1);
    expect_contains(r.err, "checksum mismatch");
    expect_lacks(r.out, "0, 0");
    run_free(&r);
    write_one_float(f, count, hb_zeros_crc(size));
    { /* TMPDIR in the tool's environment only: the run's own capture
         files go to the test's */
        const char *args[] = {"TMPDIR=/nonexistent/ckpt-test",
                              CKPT_CLI_PATH,
                              "inspect",
                              f->prefix,
                              "--values=all",
                              NULL};
        r = cli_run_limited("/usr/bin/env", NULL, args, MEM_LIMIT, TIME_LIMIT);
    }
    expect_status(&r, 0);
    assert_int_equal(test_count(r.out, "0, "), (size_t)count - 1);
    run_free(&r);
}

/* A partitioned tensor larger than the tool's memory verifies piece by
 * piece; overlapping pieces are found. */
static void test_partitioned_larger_than_memory(void **state)
{
    bt_fixture *f = *state;
    int64_t cols = (int64_t)((MEM_LIMIT / 2 + 32 * MIB) / 4);
    cli_run r;
    hb_write_row_pieces(f->index, f->data0, 2, cols, 2, 0);
    RUN_BOUNDED(r, "verify", f->prefix);
    expect_status(&r, 0);
    expect_contains(r.out, ": OK, 1 tensor");
    run_free(&r);
    hb_write_row_pieces(f->index, f->data0, 4, 3, 2, 1);
    expect_cmd(f, "verify", 1,
               "two of its slices name the same piece, 'w (piece 0,2:0,3)'");
}

/* ---- 4. one error for many tensors ----------------------------------------
 */

/* Five float tensors "t0".."t4" of 4 elements, written by the library. */
static void write_five(const bt_fixture *f)
{
    ckpt_bundle_writer *w = NULL;
    ckpt_shape s = {1, {4}};
    float v[4] = {1, 2, 3, 4};
    assert_ckpt_ok(ckpt_bundle_writer_open(&w, f->prefix, NULL));
    for (int i = 0; i < 5; i++) {
        char name[8];
        snprintf(name, sizeof(name), "t%d", i);
        v[0] = (float)i;
        assert_ckpt_ok(
            ckpt_bundle_writer_add(w, name, CKPT_DT_FLOAT, &s, v, sizeof(v)));
    }
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);
}

/* A missing data file fails every tensor in it: one line names the file,
 * its error and its 5 tensors; --json lists each tensor. */
static void test_missing_data_file_said_once(void **state)
{
    bt_fixture *f = *state;
    json_object *root, *damaged;
    cli_run r;
    write_five(f);
    assert_int_equal(unlink(f->data0), 0);
    RUN_BOUNDED(r, "verify", f->prefix);
    expect_status(&r, 1);
    expect_contains(r.err, "ckpt verify: open_read ");
    expect_contains(r.err, ".data-00000-of-00001: No such file or directory "
                           "(it holds 5 tensors; --json names each damaged "
                           "one)\n");
    expect_lacks(r.err, "'t0'");
    expect_lacks(r.err, "'t4'");
    assert_int_equal(test_count(r.err, "ckpt verify: "), 1);
    expect_contains(r.out, "DAMAGED, 5 of 5 tensors");
    run_free(&r);
    RUN_BOUNDED(r, "verify", f->prefix, "--json");
    expect_status(&r, 1);
    root = parse_json(r.out);
    damaged = jget(root, "damaged");
    assert_int_equal(json_object_array_length(damaged), 5);
    for (size_t i = 0; i < 5; i++) {
        json_object *d = json_object_array_get_idx(damaged, i), *name, *err;
        char want[8];
        snprintf(want, sizeof(want), "t%zu", i);
        name = jget(d, "name");
        err = jget(d, "error");
        assert_string_equal(json_object_get_string(name), want);
        assert_non_null(strstr(json_object_get_string(err), "No such file"));
    }
    json_object_put(root);
    run_free(&r);
}

/* Data file names that claim 2147483647 shards (the count is only in the
 * names): ls counts the missing ones from the files it finds, without an
 * array of that many entries or a loop over them (it took 2 GiB and 5 s
 * per checkpoint, and ran out of memory under the test's limit); the
 * first missing one is still the first gap among those found. */
static void test_ls_data_file_claims_int_max_shards(void **state)
{
    bt_fixture *f = *state;
    static const char text[] = "model_checkpoint_path: \"ckpt\"\n"
                               "all_model_checkpoint_paths: \"two\"\n"
                               "all_model_checkpoint_paths: \"ckpt\"\n";
    static const char *const names[] = {"ckpt.data-00000-of-2147483647",
                                        "two.data-00002-of-00003",
                                        "two.data-00000-of-00003"};
    cli_run r;
    write_one_float(f, 1, 0);
    test_touch(f->dir, "two.index");
    for (size_t i = 0; i < 3; i++)
        test_touch(f->dir, names[i]);
    test_write_file(f->state, text, sizeof(text) - 1);
    RUN_BOUNDED(r, "ls", f->dir);
    expect_status(&r, 0);
    expect_contains(r.out, "latest  (missing 2147483646 of 2147483647 data "
                           "shards)");
    expect_contains(r.out, "(missing data shard 1 of 3)");
    run_free(&r);
}

/* A state file listing 2000 checkpoints and one whose name is 4000
 * bytes: ls padded every row's PREFIX column to that name, 8 MB of
 * output for 40 KB of state file (16 MiB of state file could ask for
 * terabytes). The column is padded to at most 72 characters, as inspect's
 * NAME column is; the long name pushes only its own line. */
static void test_ls_long_prefix_pads_no_other_row(void **state)
{
    bt_fixture *f = *state;
    ckpt_buf text = CKPT_BUF_INIT;
    char row[128];
    cli_run r;
    assert_ckpt_ok(ckpt__buf_puts(&text, "model_checkpoint_path: \""));
    for (int i = 0; i < 4000; i++)
        assert_ckpt_ok(ckpt__buf_puts(&text, "a"));
    assert_ckpt_ok(ckpt__buf_puts(&text, "\"\n"));
    for (int i = 0; i < 2000; i++)
        assert_ckpt_ok(ckpt__buf_printf(
            &text, "all_model_checkpoint_paths: \"ckpt-%d\"\n", i));
    test_write_file(f->state, text.ptr, text.size);
    RUN_BOUNDED(r, "ls", f->dir);
    expect_status(&r, 0);
    assert_true(strlen(r.out) < 2001 * 200 + 4100);
    snprintf(row, sizeof(row), "\nckpt-7%*s  %4d  ", 72 - 6, "", 7);
    expect_contains(r.out, row);
    run_free(&r);
    ckpt_buf_dispose(&text);
}

/* An index that says it has a billion data files, its one tensor in the
 * first, which is missing: only the data files the entries name are tried,
 * so verify says that one and ends within the test's memory and time. */
static void test_billion_shards_one_missing(void **state)
{
    bt_fixture *f = *state;
    ckpt_buf header = CKPT_BUF_INIT, entry = CKPT_BUF_INIT;
    int64_t count = 4;
    bt_kv kvs[2];
    cli_run r;
    hb_header(&header, 1000000000);
    hb_entry(&entry, CKPT_DT_FLOAT, &count, 1, 0, 16, 0, NULL);
    kvs[0] = (bt_kv){"", 0, header.ptr, header.size};
    kvs[1] = (bt_kv){"t", 1, entry.ptr, entry.size};
    bt_write_raw_table(f->index, kvs, 2, "\xff");
    RUN_BOUNDED(r, "verify", f->prefix);
    expect_status(&r, 1);
    expect_contains(r.err, ".data-00000-of-1000000000: No such file or "
                           "directory (it holds 1 tensor; --json names each "
                           "damaged one)\n");
    assert_int_equal(test_count(r.err, "ckpt verify: "), 1);
    expect_contains(r.out, "DAMAGED, 1 of 1 tensor");
    run_free(&r);
    ckpt_buf_dispose(&entry);
    ckpt_buf_dispose(&header);
}

/* A data file that opens but is cut short: each tensor past its end is
 * named with its own error, and the file is not said unopenable. */
static void test_different_errors_each_said(void **state)
{
    bt_fixture *f = *state;
    cli_run r;
    write_five(f);
    assert_int_equal(truncate(f->data0, 3 * 16), 0);
    RUN_BOUNDED(r, "verify", f->prefix);
    expect_status(&r, 1);
    expect_contains(r.err, "tensor 't3': record at offset 48, 16 bytes, runs "
                           "past the end of the data file (48 bytes)");
    expect_contains(r.err, "tensor 't4': record at offset 64, 16 bytes, runs "
                           "past the end of the data file (48 bytes)");
    expect_lacks(r.err, "it holds");
    expect_lacks(r.err, "'t2'");
    expect_contains(r.out, "DAMAGED, 2 of 5 tensors");
    run_free(&r);
}

/* repack of a tensor the writer refuses (a DT_RESOURCE record) names the
 * tensor and the checkpoint it comes from, not only the destination. */
static void test_repack_refused_tensor_named_with_source(void **state)
{
    bt_fixture *f = *state;
    ckpt_buf e = CKPT_BUF_INIT;
    const char *name = "res";
    static const uint8_t bytes[4] = {1, 2, 3, 4};
    int64_t one = 1;
    char *out = test_path(f->dir, "out");
    cli_run r;
    hb_entry(&e, CKPT_DT_RESOURCE, &one, 1, 0, 4,
             ckpt__crc32c_mask(ckpt__crc32c(bytes, 4)), NULL);
    hb_write_index(f->index, &name, &e, 1);
    test_write_file(f->data0, bytes, 4);
    RUN_BOUNDED(r, "repack", f->prefix, out);
    expect_status(&r, 2);
    expect_contains(r.err, "copying tensor 'res' of ");
    expect_contains(r.err, f->prefix);
    run_free(&r);
    ckpt_buf_dispose(&e);
    free(out);
}

/* The text between "--exclude '" and the last "'" of `err` (malloc'd):
 * the pattern repack's refusal advises (its quotes are those of a shell,
 * which none of these names needs inside). */
static char *advised_exclude(const char *err)
{
    const char *at = strstr(err, "--exclude '");
    const char *end;
    char *p;
    assert_non_null(at);
    at += strlen("--exclude '");
    end = strchr(at, '\'');
    assert_non_null(end);
    p = strndup(at, (size_t)(end - at));
    assert_non_null(p);
    return p;
}

/* repack of a tensor whose name holds a 0 byte ("a\0x", which the
 * reader keeps whole): the writer takes names as C strings, so the copy
 * stored it as "a", another tensor, and exited 0. It is refused, naming
 * the tensor, with nothing written. Its patterns saw a name only up to
 * its first 0 byte, so no pattern could keep "a" and leave out "a\0x",
 * and the refusal advised a bare "--exclude". They now match the name as
 * the tool prints it ("a\x00x"), and the refusal gives the --exclude of
 * that tensor alone, its regex operators escaped ("c.\0(":
 * '^c\.\\x00\($'): followed, the rest is copied, "a" included, and the
 * copy verifies. */
static void test_repack_zero_byte_name_advice(void **state)
{
    bt_fixture *f = *state;
    static const float v[4] = {1.5f, 2.5f, 3.5f, 4.5f};
    static const struct {
        const char *name;
        size_t len;
    } names[4] = {{"a", 1}, {"a\0x", 3}, {"b", 1}, {"c.\0(", 4}};
    ckpt_buf header = CKPT_BUF_INIT, values[4];
    bt_kv kvs[5];
    char *out = test_path(f->dir, "out");
    char *first, *second;
    ckpt_bundle_reader *rd = NULL;
    float got = 0;
    cli_run r;
    bt_header(&header, 1, 0);
    kvs[0] = (bt_kv){"", 0, header.ptr, header.size};
    for (int i = 0; i < 4; i++) {
        ckpt__bundle_entry e =
            bt_make_entry(CKPT_DT_FLOAT, 1, 0, 4 * i, 4,
                          ckpt__crc32c_mask(ckpt__crc32c(&v[i], 4)));
        values[i] = (ckpt_buf)CKPT_BUF_INIT;
        bt_entry(&values[i], &e);
        kvs[i + 1] =
            (bt_kv){names[i].name, names[i].len, values[i].ptr, values[i].size};
    }
    bt_write_table(f->index, kvs, 5);
    test_write_file(f->data0, v, sizeof(v));
    RUN_BOUNDED(r, "repack", f->prefix, out);
    expect_status(&r, 2);
    expect_contains(r.err, "tensor 'a\\x00x': its name holds a 0 byte");
    expect_contains(r.err, "(it would be renamed 'a')");
    expect_contains(r.err, "leave it out with --exclude '^a\\\\x00x$'\n");
    expect_contains(r.err, f->prefix);
    first = advised_exclude(r.err);
    run_free(&r);
    assert_int_equal(bt_count_files(f->dir, NULL, "out"), 0);
    RUN_BOUNDED(r, "repack", f->prefix, out, "--exclude", first);
    expect_status(&r, 2);
    expect_contains(r.err, "tensor 'c.\\x00(': its name holds a 0 byte");
    expect_contains(r.err, "leave it out with --exclude '^c\\.\\\\x00\\($'\n");
    second = advised_exclude(r.err);
    run_free(&r);
    RUN_BOUNDED(r, "repack", f->prefix, out, "--exclude", first, "--exclude",
                second);
    expect_status(&r, 0);
    expect_contains(r.out, ": 2 of 4 tensors, 8 bytes, 1 shard\n");
    run_free(&r);
    RUN_BOUNDED(r, "verify", out);
    expect_status(&r, 0);
    run_free(&r);
    assert_ckpt_ok(ckpt_bundle_reader_open(&rd, out, NULL));
    assert_int_equal(ckpt_bundle_reader_count(rd), 2);
    assert_ckpt_ok(ckpt_bundle_reader_read(rd, "a", &got, sizeof(got)));
    assert_true(got == 1.5f);
    assert_ckpt_ok(ckpt_bundle_reader_read(rd, "b", &got, sizeof(got)));
    assert_true(got == 3.5f);
    ckpt_bundle_reader_free(rd);
    for (int i = 0; i < 4; i++)
        ckpt_buf_dispose(&values[i]);
    ckpt_buf_dispose(&header);
    free(first);
    free(second);
    free(out);
}

/* repack of a checkpoint written on a big-endian machine (header
 * endianness BIG, records byte-swapped): the copy is little-endian, so its
 * records are swapped back, and every value reads as written. */
static void test_repack_big_endian_source(void **state)
{
    bt_fixture *f = *state;
    static const float a[3] = {1.5f, -2.0f, 3.25f};
    static const int64_t b[2] = {1, -7000000000LL};
    static const int16_t c[3] = {-2, 300, 7};
    const void *host[3] = {a, b, c};
    const size_t width[3] = {4, 8, 2}, count[3] = {3, 2, 3};
    const int dtype[3] = {CKPT_DT_FLOAT, CKPT_DT_INT64, CKPT_DT_INT16};
    const char *names[3] = {"a", "b", "c"};
    ckpt_buf header = CKPT_BUF_INIT, values[3];
    uint8_t data[64];
    size_t at = 0;
    bt_kv kvs[4];
    char *out = test_path(f->dir, "out");
    ckpt_bundle_reader *rd = NULL;
    cli_run r;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    skip(); /* the swapped bytes below are those of a little-endian host */
#endif
    bt_header(&header, 1, 1 /* BIG */);
    kvs[0] = (bt_kv){"", 0, header.ptr, header.size};
    for (int i = 0; i < 3; i++) {
        size_t n = width[i] * count[i];
        ckpt__bundle_entry e;
        for (size_t k = 0; k < count[i]; k++) /* each value's bytes reversed */
            for (size_t j = 0; j < width[i]; j++)
                data[at + k * width[i] + j] =
                    ((const uint8_t *)host[i])[k * width[i] + width[i] - 1 - j];
        e = bt_make_entry(dtype[i], (int64_t)count[i], 0, (int64_t)at,
                          (int64_t)n,
                          ckpt__crc32c_mask(ckpt__crc32c(data + at, n)));
        values[i] = (ckpt_buf)CKPT_BUF_INIT;
        bt_entry(&values[i], &e);
        kvs[i + 1] = (bt_kv){names[i], 1, values[i].ptr, values[i].size};
        at += n;
    }
    bt_write_table(f->index, kvs, 4);
    test_write_file(f->data0, data, at);
    RUN_BOUNDED(r, "repack", f->prefix, out);
    expect_status(&r, 0);
    run_free(&r);
    assert_ckpt_ok(ckpt_bundle_reader_open(&rd, out, NULL));
    for (int i = 0; i < 3; i++) {
        uint8_t got[32];
        size_t n = width[i] * count[i];
        assert_ckpt_ok(ckpt_bundle_reader_read(rd, names[i], got, n));
        assert_memory_equal(got, host[i], n);
    }
    ckpt_bundle_reader_free(rd);
    RUN_BOUNDED(r, "verify", out);
    expect_status(&r, 0);
    run_free(&r);
    for (int i = 0; i < 3; i++)
        ckpt_buf_dispose(&values[i]);
    ckpt_buf_dispose(&header);
    free(out);
}

/* repack of a string tensor written on a big-endian machine: its record's
 * length words and length checksum are in the source's byte order, and
 * the record copied as stored was refused by the writer ("string record's
 * length checksum does not match", exit 2, blaming DST) for a checkpoint
 * that verifies. The strings are now written again little-endian, their
 * bytes unchanged, and the copy verifies. */
static void test_repack_big_endian_strings(void **state)
{
    bt_fixture *f = *state;
    static const char *const text[3] = {"hello", "", "world!"};
    ckpt_buf header = CKPT_BUF_INIT, value = CKPT_BUF_INIT, rec = CKPT_BUF_INIT;
    uint32_t crc;
    ckpt__bundle_entry e;
    ckpt_string_array got = CKPT_STRING_ARRAY_INIT;
    bt_kv kvs[2];
    char *out = test_path(f->dir, "out");
    ckpt_bundle_reader *rd = NULL;
    cli_run r;
    hb_string_record(&rec, &crc, text, 3, true);
    bt_header(&header, 1, 1 /* BIG */);
    e = bt_make_entry(CKPT_DT_STRING, 3, 0, 0, (int64_t)rec.size, crc);
    bt_entry(&value, &e);
    kvs[0] = (bt_kv){"", 0, header.ptr, header.size};
    kvs[1] = (bt_kv){"s", 1, value.ptr, value.size};
    bt_write_table(f->index, kvs, 2);
    test_write_file(f->data0, rec.ptr, rec.size);
    RUN_BOUNDED(r, "verify", f->prefix);
    expect_status(&r, 0);
    run_free(&r);
    RUN_BOUNDED(r, "repack", f->prefix, out);
    expect_status(&r, 0);
    expect_contains(r.out, "1 of 1 tensor, 18 bytes");
    run_free(&r);
    RUN_BOUNDED(r, "verify", out);
    expect_status(&r, 0);
    run_free(&r);
    assert_ckpt_ok(ckpt_bundle_reader_open(&rd, out, NULL));
    assert_ckpt_ok(ckpt_bundle_reader_read_strings(rd, "s", &got));
    assert_int_equal(got.count, 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(got.strings[i].len, strlen(text[i]));
        assert_memory_equal(got.strings[i].ptr, text[i], strlen(text[i]));
    }
    ckpt_string_array_dispose(&got);
    ckpt_bundle_reader_free(rd);
    ckpt_buf_dispose(&header);
    ckpt_buf_dispose(&value);
    ckpt_buf_dispose(&rec);
    free(out);
}

/* inspect --json --values (the first 10 values) of a string tensor whose
 * strings are long: the text cut each at 100 bytes ("... (N bytes)"), but
 * the JSON gave every shown string whole, so a checkpoint of a few large
 * strings made an unbounded document (6 bytes a control byte). It is cut
 * as the text is: {"cut": the first bytes, never half a UTF-8 sequence,
 * "bytes": the length}; --values=all still gives each string whole. */
static void test_json_values_cut_long_strings(void **state)
{
    bt_fixture *f = *state;
    enum { BIG = 1 << 20 };
    char *big = malloc(BIG), accents[162], want[100], cont[150];
    ckpt_slice strings[4];
    ckpt_shape shape = {1, {4}};
    ckpt_bundle_writer *w = NULL;
    json_object *root, *values, *v;
    cli_run r;
    assert_non_null(big);
    memset(big, 1, BIG); /* \u0001 in JSON: 6 bytes each */
    accents[0] = 'a';
    for (int i = 0; i < 80; i++) /* "a" then 80 x U+00E9 (c3 a9) */
        memcpy(accents + 1 + 2 * i, "\xc3\xa9", 2);
    strings[0] = (ckpt_slice){big, BIG};
    strings[1] = (ckpt_slice){"x", 1};
    strings[2] = (ckpt_slice){accents, 161};
    memset(cont, 0x80, sizeof(cont)); /* not UTF-8: no sequence to keep */
    strings[3] = (ckpt_slice){cont, sizeof(cont)};
    assert_ckpt_ok(ckpt_bundle_writer_open(&w, f->prefix, NULL));
    assert_ckpt_ok(ckpt_bundle_writer_add_strings(w, "s", &shape, strings, 4));
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);
    RUN_BOUNDED(r, "inspect", f->prefix, "--json", "--values");
    expect_status(&r, 0);
    assert_true(strlen(r.out) < 4096);
    root = parse_json(r.out);
    values =
        jget(json_object_array_get_idx(jget(root, "tensors"), 0), "values");
    assert_int_equal(json_object_array_length(values), 4);
    v = json_object_array_get_idx(values, 0);
    memset(want, 1, sizeof(want));
    assert_int_equal(json_object_get_string_len(jget(v, "cut")), 100);
    assert_memory_equal(json_object_get_string(jget(v, "cut")), want, 100);
    assert_int_equal(json_object_get_int64(jget(v, "bytes")), BIG);
    assert_string_equal(
        json_object_get_string(json_object_array_get_idx(values, 1)), "x");
    v = json_object_array_get_idx(values, 2);
    /* 100 bytes would end inside an accent: 99 */
    assert_int_equal(json_object_get_string_len(jget(v, "cut")), 99);
    assert_memory_equal(json_object_get_string(jget(v, "cut")), accents, 99);
    assert_int_equal(json_object_get_int64(jget(v, "bytes")), 161);
    v = json_object_array_get_idx(values, 3);
    /* 100 bytes, as the text shows, each 0x80 as U+0080 (c2 80): it was
     * cut at 97, as if a sequence were split */
    assert_int_equal(json_object_get_string_len(jget(v, "cut")), 200);
    assert_memory_equal(json_object_get_string(jget(v, "cut")), "\xc2\x80", 2);
    assert_int_equal(json_object_get_int64(jget(v, "bytes")), 150);
    json_object_put(root);
    run_free(&r);
    RUN_BOUNDED(r, "inspect", f->prefix, "--values");
    expect_status(&r, 0);
    expect_contains(r.out, "... (1048576 bytes), \"x\", \"a");
    run_free(&r);
    RUN_BOUNDED(r, "inspect", f->prefix, "--json", "--values=all");
    expect_status(&r, 0);
    root = parse_json(r.out);
    values =
        jget(json_object_array_get_idx(jget(root, "tensors"), 0), "values");
    v = json_object_array_get_idx(values, 0);
    assert_true(json_object_is_type(v, json_type_string));
    assert_int_equal(json_object_get_string_len(v), BIG);
    json_object_put(root);
    run_free(&r);
    free(big);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, bt_setup, bt_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_fifo_index),
        T(test_repack_zero_byte_name_advice),
        T(test_repack_big_endian_source),
        T(test_repack_big_endian_strings),
        T(test_fifo_data_file),
        T(test_directory_data_file),
        T(test_ls_marks_index_link_and_pending),
        T(test_fifo_state_file),
        T(test_sparse_10g_index),
        T(test_restart_flood),
        T(test_huge_tensor_small_data_file),
        T(test_partitioned_huge_full_shape),
        T(test_piece_of_no_tensor),
        T(test_piece_its_tensor_does_not_list),
        T(test_partitioned_string_piece_missing),
        T(test_partitioned_variant_not_checked),
        T(test_partitioned_strings_counted_once),
        T(test_many_pieces_one_damaged),
        T(test_many_pieces_all_damaged_said_in_bounds),
        T(test_record_larger_than_memory),
        T(test_values_all_held_past_memory),
        T(test_partitioned_larger_than_memory),
        T(test_missing_data_file_said_once),
        T(test_different_errors_each_said),
        T(test_ls_data_file_claims_int_max_shards),
        T(test_ls_long_prefix_pads_no_other_row),
        T(test_billion_shards_one_missing),
        T(test_repack_refused_tensor_named_with_source),
        T(test_json_values_cut_long_strings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
