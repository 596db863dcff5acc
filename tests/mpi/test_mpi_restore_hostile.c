/* tests/mpi/test_mpi_restore_hostile.c - the distributed restore of a
 * partitioned tensor from hand-made (hostile) checkpoints, on however many
 * ranks mpiexec starts (CTest: 1, 2 and 3): odd slice keys among the
 * pieces, a slice listed twice, a truncated data file (under pieces or
 * under the whole entry of one writer, or under a replicated tensor read
 * after a partitioned one), a replicated tensor stored as pieces with a
 * hole, few descriptors.
 * Rank 0 writes the index byte by byte (bundle_test_helpers.h); every rank
 * restores "m" float [240, 2] (element i holds i), its rows split over the
 * ranks, and checks the outcome. Every test is collective. */
#include "mpi_model.h"
#include "test_util.h"

#include "format/bundle_slices.h"
#include "format/bundle_test_helpers.h"
#include "util/crc32c.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define ROWS 240
#define COLS 2
#define MAX_PIECES 8

/* One stored piece of "m": rows [start, start + length) (length -1: all
 * rows), every column; its entry holds those elements. `listed` times in
 * the full entry's slices. With `raw_key`, stored under those `raw_len`
 * bytes instead of its slice key. Its elements hold their index (plus
 * raw_add when it has a raw key). */
typedef struct piece {
    int64_t start, length;
    int listed;
    const char *raw_key;
    size_t raw_len;
} piece;

static float raw_add;

static int by_key(const void *a, const void *b)
{
    const bt_kv *x = a, *y = b;
    size_t n = x->key_len < y->key_len ? x->key_len : y->key_len;
    int c = memcmp(x->key, y->key, n);
    if (c != 0)
        return c;
    return x->key_len < y->key_len ? -1 : x->key_len > y->key_len;
}

/* Bytes the next write_pieces keeps of its data file (0: all). */
static size_t data_cut;

/* Write checkpoint `prefix`: "m" stored as pieces p[0..n), one data file
 * (cut to `data_cut` bytes when set). */
static void write_pieces(const char *prefix, const piece *p, int n)
{
    static float stored[MAX_PIECES * ROWS * COLS];
    ckpt__tensor_slice sl[MAX_PIECES], listed[2 * MAX_PIECES];
    ckpt_buf key[MAX_PIECES], val[MAX_PIECES];
    ckpt_buf fullv = CKPT_BUF_INIT, header = CKPT_BUF_INIT;
    ckpt_buf path = CKPT_BUF_INIT;
    ckpt__bundle_entry full;
    bt_kv kvs[MAX_PIECES + 2];
    size_t off = 0;
    int nlisted = 0, nk = 0;
    assert_true(n <= MAX_PIECES);
    for (int k = 0; k < n; k++) {
        ckpt__bundle_entry e;
        int64_t lo = p[k].length < 0 ? 0 : p[k].start;
        int64_t hi = p[k].length < 0 ? ROWS : p[k].start + p[k].length;
        size_t first = off;
        memset(&sl[k], 0, sizeof(sl[k]));
        sl[k].rank = 2;
        sl[k].start[0] = p[k].start;
        sl[k].length[0] = p[k].length;
        sl[k].length[1] = -1;
        key[k] = (ckpt_buf)CKPT_BUF_INIT;
        val[k] = (ckpt_buf)CKPT_BUF_INIT;
        if (p[k].raw_key)
            assert_ckpt_ok(ckpt__buf_put(&key[k], p[k].raw_key, p[k].raw_len));
        else
            assert_ckpt_ok(ckpt__slice_key_encode(&key[k], "m", 1, &sl[k]));
        for (int64_t i = lo * COLS; i < hi * COLS; i++)
            stored[off++] = (float)i + (p[k].raw_key ? raw_add : 0.0f);
        memset(&e, 0, sizeof(e));
        e.dtype = CKPT_DT_FLOAT;
        e.shape.rank = 2;
        e.shape.dims[0] = hi - lo;
        e.shape.dims[1] = COLS;
        e.offset = (int64_t)(first * sizeof(float));
        e.size = (int64_t)((off - first) * sizeof(float));
        e.crc32c = ckpt__crc32c_mask(
            ckpt__crc32c(stored + first, (off - first) * sizeof(float)));
        bt_entry(&val[k], &e);
        kvs[nk++] = (bt_kv){key[k].ptr, key[k].size, val[k].ptr, val[k].size};
        for (int j = 0; j < p[k].listed; j++)
            listed[nlisted++] = sl[k];
    }
    memset(&full, 0, sizeof(full));
    full.dtype = CKPT_DT_FLOAT;
    full.shape.rank = 2;
    full.shape.dims[0] = ROWS;
    full.shape.dims[1] = COLS;
    full.num_slices = nlisted;
    full.slices = listed;
    bt_entry(&fullv, &full);
    bt_header(&header, 1, 0);
    kvs[nk++] = (bt_kv){"", 0, header.ptr, header.size};
    kvs[nk++] = (bt_kv){"m", 1, fullv.ptr, fullv.size};
    qsort(kvs, (size_t)nk, sizeof(kvs[0]), by_key);
    assert_ckpt_ok(ckpt_bundle_index_path(&path, prefix));
    bt_write_table(path.ptr, kvs, (size_t)nk);
    assert_ckpt_ok(ckpt_bundle_data_path(&path, prefix, 0, 1));
    test_write_file(path.ptr, stored,
                    data_cut ? data_cut : off * sizeof(float));
    for (int k = 0; k < n; k++) {
        ckpt_buf_dispose(&key[k]);
        ckpt_buf_dispose(&val[k]);
    }
    ckpt_buf_dispose(&fullv);
    ckpt_buf_dispose(&header);
    ckpt_buf_dispose(&path);
}

/* One restore of "m" from a checkpoint of pieces p[0..n). */
typedef struct restore_run {
    char prefix[4200];
    float buf[ROWS * COLS]; /* this rank's rows, first; -7 before */
    int64_t lo, hi;         /* this rank's rows */
    int rc;
    char message[1024];
} restore_run;

static void restore_pieces(restore_run *run, const char *dir, const char *name,
                           const piece *p, int n)
{
    ckpt_mpi_saver_options o = test_mpi_options();
    ckpt_mpi_saver *s = NULL;
    ckpt_slice_extent e[2];
    int64_t dims[2] = {ROWS, COLS};
    ckpt_var v = model_var("m", CKPT_DT_FLOAT, 2, dims, run->buf);
    snprintf(run->prefix, sizeof(run->prefix), "%s/%s", dir, name);
    if (test_rank() == 0)
        write_pieces(run->prefix, p, n);
    MPI_Barrier(MPI_COMM_WORLD);
    run->lo = ROWS * test_rank() / test_size();
    run->hi = ROWS * (test_rank() + 1) / test_size();
    e[0].start = run->lo;
    e[0].length = run->hi - run->lo;
    e[1].start = 0;
    e[1].length = CKPT_SLICE_FULL;
    for (int i = 0; i < ROWS * COLS; i++)
        run->buf[i] = -7.0f;
    assert_ckpt_ok(ckpt_mpi_saver_open(&s, MPI_COMM_WORLD, dir, &o));
    assert_ckpt_ok(ckpt_mpi_saver_add_partitioned(s, &v, e));
    run->rc = ckpt_mpi_saver_restore(s, run->prefix);
    snprintf(run->message, sizeof(run->message), "%s",
             run->rc < 0 ? ckpt_error_last()->message : "");
    ckpt_mpi_saver_free(s);
}

/* This rank's rows hold the tensor's values. */
static void assert_restored(const restore_run *run)
{
    assert_ckpt_ok(run->rc);
    for (int64_t i = 0; i < (run->hi - run->lo) * COLS; i++)
        assert_true(run->buf[i] == (float)(run->lo * COLS + i));
}

/* Restore "m" from pieces p[0..n) (checkpoint `name`): its values, on
 * every rank. */
static void expect_restores(const char *name, const piece *p, int n)
{
    restore_run *run = calloc(1, sizeof(*run));
    char *dir = shared_dir_make();
    assert_non_null(run);
    restore_pieces(run, dir, name, p, n);
    assert_restored(run);
    free(run);
    shared_dir_remove(dir);
}

/* The two halves of "m", each stored under its slice key and listed. */
#define HALVES                                                                 \
    {0, ROWS / 2, 1, NULL, 0},                                                 \
    {                                                                          \
        ROWS / 2, ROWS / 2, 1, NULL, 0                                         \
    }

/* A slice key naming the empty tensor (00 | 00 01 | rank 2 | 0,-1 0,-1),
 * the first slice key of the index: the restore's index of slice keys
 * read its name as a C string before any byte was stored in it (NULL:
 * every rank crashed). No variable has an empty name: the key is left out,
 * and "m" restores on every rank count. */
static void test_empty_tensor_name_in_slice_key(void **state)
{
    static const char key[] = {0x00,       0x00, 0x01,       0x01, 0x02,
                               (char)0x80, 0x7f, (char)0x80, 0x7f};
    piece p[] = {HALVES, {0, -1, 0, key, sizeof(key)}};
    (void)state;
    expect_restores("empty_name", p, 3);
}

/* Slice keys that do not decode (rank 0; an extent cut short) beside the
 * pieces of "m": the single-process reader and verify leave them out, but
 * the restore failed on every rank count with a message naming neither
 * file nor tensor ("slice key: rank 0 out of range 1..32"). They are left
 * out: "m" restores. */
static void test_undecodable_slice_keys_left_out(void **state)
{
    static const char rank0[] = {0x00, 'm', 0x00, 0x01, 0x00};
    static const char cut[] = {0x00, 'm', 0x00, 0x01, 0x01, 0x02, (char)0x82};
    piece p[] = {
        HALVES, {0, -1, 0, rank0, sizeof(rank0)}, {0, -1, 0, cut, sizeof(cut)}};
    (void)state;
    expect_restores("undecodable", p, 4);
}

/* A listed piece stored under a damaged key (its rank byte 2 made 0): the
 * piece is missing, a hole in "m" reported on every rank count with the
 * checkpoint and the tensor, before any value is written. */
static void test_damaged_key_of_listed_piece(void **state)
{
    static const char damaged[] = {0x00,       'm',        0x00,       0x01,
                                   0x00,       (char)0x81, (char)0xf8, 0x78,
                                   (char)0xf8, 0x78,       (char)0x80, 0x7f};
    piece p[] = {{0, ROWS / 2, 1, NULL, 0},
                 {ROWS / 2, ROWS / 2, 1, damaged, sizeof(damaged)}};
    restore_run *run = calloc(1, sizeof(*run));
    char *dir = shared_dir_make();
    (void)state;
    restore_pieces(run, dir, "damaged_key", p, 2);
    assert_int_equal(run->rc, CKPT_ECORRUPT);
    assert_non_null(strstr(run->message, run->prefix));
    assert_non_null(strstr(run->message, "tensor 'm'"));
    assert_non_null(
        strstr(run->message, "slice 1 (120,120:-) has no entry in the index"));
    for (int i = 0; i < ROWS * COLS; i++)
        assert_true(run->buf[i] == -7.0f);
    free(run);
    shared_dir_remove(dir);
}

/* The second half stored twice: under its slice key, and under a key
 * that decodes to the same slice but writes its full column extent with
 * a length of -5, not -1, holding other values (not listed: the entry
 * lists the slice once). The single-process reader finds a piece by the
 * slice's written key and reads the first; the restore took whichever
 * its sorted list of decoded slices met first, so on 2 or more ranks the
 * ranks holding the second half got the other values, rc 0. Such a key
 * is left out now: the right values on every rank count. */
static void test_slice_key_not_as_written_left_out(void **state)
{
    ckpt_buf odd = CKPT_BUF_INIT;
    (void)state;
    assert_ckpt_ok(ckpt__buf_put(&odd, "\0m\0\1", 4));
    assert_ckpt_ok(ckpt__ordered_put_unsigned(&odd, 2));
    assert_ckpt_ok(ckpt__ordered_put_signed(&odd, ROWS / 2));
    assert_ckpt_ok(ckpt__ordered_put_signed(&odd, ROWS / 2));
    assert_ckpt_ok(ckpt__ordered_put_signed(&odd, 0));
    assert_ckpt_ok(ckpt__ordered_put_signed(&odd, -5));
    {
        piece p[] = {HALVES, {ROWS / 2, ROWS / 2, 0, odd.ptr, odd.size}};
        raw_add = 999.0f;
        expect_restores("odd_key", p, 3);
        raw_add = 0.0f;
    }
    ckpt_buf_dispose(&odd);
}

/* The full entry lists a slice (rows 0-10) that has no piece in the index
 * (a piece of another tensor, "x", is stored under its key's place); the
 * halves still cover "m". The single-process reader refuses it ("has no
 * entry in the index"), as did the restore on 1 rank, but on 2 and 3
 * ranks the listed slice without a piece was passed over: rc 0. Refused
 * on every rank count now, before any value is written. */
static void test_listed_slice_without_piece_rejected(void **state)
{
    ckpt_buf other = CKPT_BUF_INIT;
    ckpt__tensor_slice sl;
    restore_run *run = calloc(1, sizeof(*run));
    char *dir = shared_dir_make();
    (void)state;
    memset(&sl, 0, sizeof(sl));
    sl.rank = 2;
    sl.length[0] = 10;
    sl.length[1] = -1;
    assert_ckpt_ok(ckpt__slice_key_encode(&other, "x", 1, &sl));
    {
        piece p[] = {HALVES, {0, 10, 1, other.ptr, other.size}};
        restore_pieces(run, dir, "unlisted", p, 3);
    }
    assert_int_equal(run->rc, CKPT_ECORRUPT);
    assert_non_null(strstr(run->message, "tensor 'm': slice 2 (0,10:-) has "
                                         "no entry in the index"));
    for (int i = 0; i < ROWS * COLS; i++)
        assert_true(run->buf[i] == -7.0f);
    ckpt_buf_dispose(&other);
    free(run);
    shared_dir_remove(dir);
}

/* The full entry lists the first half twice (three slices, two stored
 * pieces): the single-process reader and verify call it an overlap, and
 * the restore did on 1 rank (where "m" is read whole), but on 2 and 3
 * ranks both listings found the one stored piece, counted once, and the
 * restore succeeded. Rejected on every rank count now, in the reader's
 * words, before any value is written. */
static void test_slice_listed_twice_rejected(void **state)
{
    piece p[] = {{0, ROWS / 2, 2, NULL, 0}, {ROWS / 2, ROWS / 2, 1, NULL, 0}};
    restore_run *run = calloc(1, sizeof(*run));
    char *dir = shared_dir_make();
    char index[4300];
    (void)state;
    restore_pieces(run, dir, "listed_twice", p, 2);
    snprintf(index, sizeof(index), "%s.index: tensor 'm': ", run->prefix);
    assert_int_equal(run->rc, CKPT_ECORRUPT);
    assert_non_null(strstr(run->message, index));
    assert_non_null(
        strstr(run->message, "slice 1 (0,120:-) overlaps an earlier slice"));
    for (int i = 0; i < ROWS * COLS; i++)
        assert_true(run->buf[i] == -7.0f);
    free(run);
    shared_dir_remove(dir);
}

/* The data file cut 8 bytes short: the second half's record runs past its
 * end. Found only when that piece was read: on 2 and 3 ranks after the
 * ranks holding rows of the first half had written them (their variables
 * overwritten, the restore failed), and on 1 rank by the reader after it
 * had copied the first half into the variable. Every record a rank reads
 * is now located in its data file while the layout is checked, before
 * any variable is written, as read_many locates the records of whole
 * values first. */
static void test_truncated_data_file_writes_nothing(void **state)
{
    piece p[] = {HALVES};
    restore_run *run = calloc(1, sizeof(*run));
    char *dir = shared_dir_make();
    char want[4400];
    int hit = 0;
    (void)state;
    data_cut = ROWS * COLS * sizeof(float) - 8;
    restore_pieces(run, dir, "truncated", p, 2);
    data_cut = 0;
    assert_int_equal(run->rc, CKPT_ECORRUPT);
    snprintf(want, sizeof(want),
             "%s.data-00000-of-00001: tensor 'm (piece 120,120:-)': record "
             "at offset 960, 960 bytes, runs past the end of the data file "
             "(1912 bytes)",
             run->prefix);
    hit = strstr(run->message, want) != NULL;
    if (!hit)
        fail_msg("rank %d: %s", test_rank(), run->message);
    for (int i = 0; i < ROWS * COLS; i++)
        assert_true(run->buf[i] == -7.0f);
    free(run);
    shared_dir_remove(dir);
}

/* Register "m" float [ROWS, COLS] in `s`, this rank's rows [*lo, *hi)
 * of it held at `m`. */
static void add_rank_rows(ckpt_mpi_saver *s, float *m, int64_t *lo, int64_t *hi)
{
    int64_t dims[2] = {ROWS, COLS};
    ckpt_var v = model_var("m", CKPT_DT_FLOAT, 2, dims, m);
    ckpt_slice_extent e[2];
    *lo = ROWS * test_rank() / test_size();
    *hi = ROWS * (test_rank() + 1) / test_size();
    e[0].start = *lo;
    e[0].length = *hi - *lo;
    e[1].start = 0;
    e[1].length = CKPT_SLICE_FULL;
    assert_ckpt_ok(ckpt_mpi_saver_add_partitioned(s, &v, e));
}

/* Checkpoint `prefix` written by one process: the float "r" (holding 5)
 * and "m" stored whole, ordinary entries, "r" first in the one data file
 * when `r_first`, the file then cut `cut` bytes short: the last record
 * runs past its end. */
static void write_cut(const char *prefix, int r_first, off_t cut)
{
    ckpt_bundle_writer *w = NULL;
    ckpt_shape one = {1, {1}}, full = {2, {ROWS, COLS}};
    static float rows[ROWS * COLS];
    float five = 5.0f;
    ckpt_buf path = CKPT_BUF_INIT;
    for (int i = 0; i < ROWS * COLS; i++)
        rows[i] = (float)i;
    assert_ckpt_ok(ckpt_bundle_writer_open(&w, prefix, NULL));
    for (int k = 0; k < 2; k++) {
        if ((k == 0) == (r_first != 0))
            assert_ckpt_ok(ckpt_bundle_writer_add(w, "r", CKPT_DT_FLOAT, &one,
                                                  &five, sizeof(five)));
        else
            assert_ckpt_ok(ckpt_bundle_writer_add(w, "m", CKPT_DT_FLOAT, &full,
                                                  rows, sizeof(rows)));
    }
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);
    assert_ckpt_ok(ckpt_bundle_data_path(&path, prefix, 0, 1));
    assert_int_equal(truncate(path.ptr, (off_t)(sizeof(rows) + 4) - cut), 0);
    ckpt_buf_dispose(&path);
}

static int r_writes;

static int r_read(void *dst, uint64_t off, size_t n, void *payload)
{
    (void)off;
    (void)payload;
    memset(dst, 0, n);
    return 0;
}

static int r_write(const void *src, uint64_t off, size_t n, void *payload)
{
    (void)src;
    (void)off;
    (void)n;
    (void)payload;
    r_writes++;
    return 0;
}

/* Restore checkpoint `name` (write_cut's, with `r_first` and `cut`)
 * into the replicated float "r" (in memory, or behind read and write
 * callbacks with `r_callbacks`) and "m" (this rank's rows; "r" registered
 * first when `r_first`): CKPT_ECORRUPT with `want` after the data file's
 * path on every rank, and neither variable written. */
static void expect_cut_writes_nothing(const char *name, int r_first, off_t cut,
                                      int r_callbacks, const char *want)
{
    static float m[ROWS * COLS];
    float r = -7.0f;
    ckpt_mpi_saver_options o = test_mpi_options();
    ckpt_mpi_saver *s = NULL;
    int64_t one = 1, lo, hi;
    ckpt_var rv = model_var("r", CKPT_DT_FLOAT, 1, &one, &r);
    char *dir = shared_dir_make();
    char prefix[4200], full[4400];
    int rc;
    snprintf(prefix, sizeof(prefix), "%s/%s", dir, name);
    if (r_callbacks) {
        rv.data = NULL;
        rv.read = r_read;
        rv.write = r_write;
    }
    r_writes = 0;
    if (test_rank() == 0)
        write_cut(prefix, r_first, cut);
    for (int i = 0; i < ROWS * COLS; i++)
        m[i] = -7.0f;
    assert_ckpt_ok(ckpt_mpi_saver_open(&s, MPI_COMM_WORLD, dir, &o));
    if (r_first)
        assert_ckpt_ok(ckpt_mpi_saver_add_replicated(s, &rv));
    add_rank_rows(s, m, &lo, &hi);
    if (!r_first)
        assert_ckpt_ok(ckpt_mpi_saver_add_replicated(s, &rv));
    MPI_Barrier(MPI_COMM_WORLD);
    rc = ckpt_mpi_saver_restore(s, prefix);
    assert_int_equal(rc, CKPT_ECORRUPT);
    snprintf(full, sizeof(full), "%s.data-00000-of-00001: %s", prefix, want);
    if (!strstr(ckpt_error_last()->message, full))
        fail_msg("rank %d: %s", test_rank(), ckpt_error_last()->message);
    assert_true(r == -7.0f);
    assert_int_equal(r_writes, 0);
    for (int i = 0; i < ROWS * COLS; i++)
        assert_true(m[i] == -7.0f);
    ckpt_mpi_saver_free(s);
    shared_dir_remove(dir);
}

/* "m" stored whole by one writer, its record past the end of the cut data
 * file, restored beside the replicated "r" (registered first). On 2 and 3
 * ranks, where each rank cuts its rows out of the whole entry, the layout
 * check located no record of it: the restore wrote "r" and then failed
 * reading "m". Its record is located with the layout now: CKPT_ECORRUPT
 * naming the data file and the tensor, nothing written, on every rank
 * count. */
static void test_whole_entry_past_data_end_writes_nothing(void **state)
{
    (void)state;
    expect_cut_writes_nothing("whole_cut", 1, 8, 0,
                              "tensor 'm': record at offset 4, 1920 bytes, "
                              "runs past the end of the data file (1916 "
                              "bytes)");
}

/* The replicated "r", its record past the end of the cut data file,
 * registered after "m" (partitioned, intact). On 2 and 3 ranks the one
 * variable read whole was read after "m" and only its read found the cut:
 * the restore failed with "m" written. Every record is located before any
 * variable is written now: CKPT_ECORRUPT naming the data file and "r",
 * nothing written, on every rank count. */
static void test_replicated_past_data_end_writes_nothing(void **state)
{
    (void)state;
    expect_cut_writes_nothing("replicated_cut", 0, 2, 0,
                              "tensor 'r': record at offset 1920, 4 bytes, "
                              "runs past the end of the data file (1922 "
                              "bytes)");
}

/* The same with "r" behind read and write callbacks: read after every
 * variable in memory (restore_one), so its record is located with the
 * checks, before any variable is written, on every rank count. */
static void test_callback_past_data_end_writes_nothing(void **state)
{
    (void)state;
    expect_cut_writes_nothing("callback_cut", 0, 2, 1,
                              "tensor 'r': record at offset 1920, 4 bytes, "
                              "runs past the end of the data file (1922 "
                              "bytes)");
}

/* "m" stored as two pieces with a hole between them (rows 100-119 in
 * none), restored as a replicated variable: its one read assembled the
 * pieces into it and found the hole at the end, with the first piece
 * written. The pieces' coverage is checked before any variable is written
 * now: CKPT_ECORRUPT naming the tensor, "m" untouched, on every rank. */
static void test_replicated_pieces_with_hole_writes_nothing(void **state)
{
    piece p[] = {{0, 100, 1, NULL, 0}, {120, ROWS - 120, 1, NULL, 0}};
    static float m[ROWS * COLS];
    int64_t dims[2] = {ROWS, COLS};
    ckpt_var v = model_var("m", CKPT_DT_FLOAT, 2, dims, m);
    ckpt_mpi_saver_options o = test_mpi_options();
    ckpt_mpi_saver *s = NULL;
    char *dir = shared_dir_make();
    char prefix[4200];
    int rc;
    (void)state;
    snprintf(prefix, sizeof(prefix), "%s/replicated_hole", dir);
    if (test_rank() == 0)
        write_pieces(prefix, p, 2);
    for (int i = 0; i < ROWS * COLS; i++)
        m[i] = -7.0f;
    assert_ckpt_ok(ckpt_mpi_saver_open(&s, MPI_COMM_WORLD, dir, &o));
    assert_ckpt_ok(ckpt_mpi_saver_add_replicated(s, &v));
    MPI_Barrier(MPI_COMM_WORLD);
    rc = ckpt_mpi_saver_restore(s, prefix);
    assert_int_equal(rc, CKPT_ECORRUPT);
    if (!strstr(ckpt_error_last()->message, "tensor 'm'") ||
        !strstr(ckpt_error_last()->message, "cover"))
        fail_msg("rank %d: %s", test_rank(), ckpt_error_last()->message);
    for (int i = 0; i < ROWS * COLS; i++)
        assert_true(m[i] == -7.0f);
    ckpt_mpi_saver_free(s);
    shared_dir_remove(dir);
}

/* Data files of the "descriptors" checkpoint: "m" in pieces of 40 rows
 * in data file 0, and one replicated float "r<k>" (holding k) in each
 * other one. */
#define FD_SHARDS 41

static void write_many_data_files(const char *prefix)
{
    ckpt_bundle_writer_options o = CKPT_BUNDLE_WRITER_OPTIONS_INIT;
    ckpt_bundle_writer *w = NULL;
    ckpt_shape one = {1, {1}}, full = {2, {ROWS, COLS}};
    static float rows[ROWS * COLS];
    o.num_shards = FD_SHARDS;
    for (int i = 0; i < ROWS * COLS; i++)
        rows[i] = (float)i;
    assert_ckpt_ok(ckpt_bundle_writer_open(&w, prefix, &o));
    for (int k = 1; k < FD_SHARDS; k++) {
        char name[16];
        float v = (float)k;
        snprintf(name, sizeof(name), "r%02d", k);
        assert_ckpt_ok(ckpt_bundle_writer_select_shard(w, k));
        assert_ckpt_ok(
            ckpt_bundle_writer_add(w, name, CKPT_DT_FLOAT, &one, &v, 4));
    }
    assert_ckpt_ok(ckpt_bundle_writer_select_shard(w, 0));
    for (int64_t lo = 0; lo < ROWS; lo += 40) {
        ckpt_slice_extent e[2] = {{lo, 40}, {0, CKPT_SLICE_FULL}};
        assert_ckpt_ok(ckpt_bundle_writer_add_slice(w, "m", CKPT_DT_FLOAT,
                                                    &full, e, rows + lo * COLS,
                                                    40 * COLS * sizeof(float)));
    }
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);
}

/* Descriptors this process has open. */
static int open_descriptors(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *de;
    int n = -1; /* the directory's own */
    assert_non_null(d);
    while ((de = readdir(d)) != NULL)
        n += de->d_name[0] != '.';
    closedir(d);
    return n;
}

/* A restore under a descriptor limit (ulimit -n) a few above what the
 * process has open, fewer than the checkpoint's data files: the bundle
 * reader holds the data files it reads the replicated values from, and
 * closes one when opening the next runs out of descriptors. The pieces of
 * "m" that lie wholly in a rank's rows (every piece on 2 and 3 ranks) were
 * read through a file the restore opened itself, past the reader, and
 * failed with 'Too many open files' (CKPT_ENOMEM) on every rank. */
static void test_descriptors_run_out_reading_pieces(void **state)
{
    static float m[ROWS * COLS], r[FD_SHARDS];
    ckpt_mpi_saver_options o = test_mpi_options();
    ckpt_mpi_saver *s = NULL;
    int64_t one = 1, lo, hi;
    char *dir = shared_dir_make();
    char prefix[4200], names[FD_SHARDS][16];
    struct rlimit was, few;
    int rc, failed;
    (void)state;
    snprintf(prefix, sizeof(prefix), "%s/descriptors", dir);
    if (test_rank() == 0)
        write_many_data_files(prefix);
    assert_ckpt_ok(ckpt_mpi_saver_open(&s, MPI_COMM_WORLD, dir, &o));
    add_rank_rows(s, m, &lo, &hi);
    for (int k = 1; k < FD_SHARDS; k++) {
        ckpt_var rv;
        snprintf(names[k], sizeof(names[k]), "r%02d", k);
        rv = model_var(names[k], CKPT_DT_FLOAT, 1, &one, &r[k]);
        assert_ckpt_ok(ckpt_mpi_saver_add_replicated(s, &rv));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &was), 0);
    few = was;
    few.rlim_cur = (rlim_t)open_descriptors() + 8;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &few), 0);
    rc = ckpt_mpi_saver_restore(s, prefix);
    failed = rc < 0;
    if (failed)
        print_message("rank %d: %s\n", test_rank(), ckpt_error_last()->message);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &was), 0);
    assert_int_equal(failed, 0);
    for (int k = 1; k < FD_SHARDS; k++)
        assert_true(r[k] == (float)k);
    for (int64_t i = 0; i < (hi - lo) * COLS; i++)
        assert_true(m[i] == (float)(lo * COLS + i));
    ckpt_mpi_saver_free(s);
    shared_dir_remove(dir);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty_tensor_name_in_slice_key),
        cmocka_unit_test(test_undecodable_slice_keys_left_out),
        cmocka_unit_test(test_damaged_key_of_listed_piece),
        cmocka_unit_test(test_slice_listed_twice_rejected),
        cmocka_unit_test(test_slice_key_not_as_written_left_out),
        cmocka_unit_test(test_listed_slice_without_piece_rejected),
        cmocka_unit_test(test_truncated_data_file_writes_nothing),
        cmocka_unit_test(test_whole_entry_past_data_end_writes_nothing),
        cmocka_unit_test(test_replicated_past_data_end_writes_nothing),
        cmocka_unit_test(test_callback_past_data_end_writes_nothing),
        cmocka_unit_test(test_replicated_pieces_with_hole_writes_nothing),
        cmocka_unit_test(test_descriptors_run_out_reading_pieces),
    };
    int provided, failed;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    failed = cmocka_run_group_tests(tests, NULL, NULL);
    return mpi_tests_end(failed);
}
