/* tests/format/test_bundle_read_many.c - ckpt_bundle_reader_read_many:
 * large bundles probed and read through the direct path of the aligned test
 * file system (tests/io/aligned_fs.h), small ones through the page cache, two
 * shards, damaged records, requests rejected before anything is written,
 * duplicates, a partitioned tensor among ordinary ones (its pieces looked
 * up in the index once, counted by the reader), and a big-endian
 * bundle converted to host order on the direct path. */
#include "bundle_test_helpers.h"

#include "../io/aligned_fs.h"
#include "format/block.h"
#include "format/bundle_reader_internal.h"
#include "util/crc32c.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB ((size_t)1 << 20)
#define GUARD 16
#define SENTINEL 0xa5

typedef struct tspec {
    const char *name;
    int dtype;
    int64_t count; /* elements of a rank-1 shape */
    int shard;
} tspec;

typedef struct fixture {
    char *dir;
    char *prefix; /* <dir>/ckpt */
    aligned_fs afs;
    const tspec *specs;
    size_t n;
    uint8_t *values[32]; /* each spec's bytes as written (host order) */
    size_t bytes[32];
} fixture;

/* ~11.6 MiB in one shard: sizes not multiples of 4096, a 1 MiB one, odd
 * byte counts, a zero-size one and a tiny one. */
static const tspec BIG[] = {
    {"w00", CKPT_DT_FLOAT, 300000, 0}, {"w01", CKPT_DT_INT32, 1, 0},
    {"w02", CKPT_DT_FLOAT, 262144, 0}, {"w03", CKPT_DT_INT64, 123457, 0},
    {"w04", CKPT_DT_FLOAT, 800000, 0}, {"w05", CKPT_DT_DOUBLE, 77777, 0},
    {"w06", CKPT_DT_INT32, 400001, 0}, {"w07", CKPT_DT_UINT8, 1023, 0},
    {"empty", CKPT_DT_FLOAT, 0, 0},    {"w08", CKPT_DT_FLOAT, 333333, 0},
    {"w09", CKPT_DT_INT16, 250001, 0}, {"w10", CKPT_DT_FLOAT, 99999, 0},
    {"w11", CKPT_DT_INT64, 155555, 0}, {"small", CKPT_DT_FLOAT, 3, 0},
};
#define NBIG (sizeof(BIG) / sizeof(BIG[0]))

/* ~5 MiB: below the direct-read threshold. */
static const tspec SMALL[] = {
    {"a", CKPT_DT_FLOAT, 500000, 0},
    {"b", CKPT_DT_INT64, 200001, 0},
    {"c", CKPT_DT_UINT8, 777, 0},
    {"d", CKPT_DT_DOUBLE, 33333, 0},
};

/* Two shards of ~8.4 MiB each, added alternately. */
static const tspec SHARDED[] = {
    {"s0a", CKPT_DT_FLOAT, 1500000, 0}, {"s1a", CKPT_DT_INT32, 900001, 1},
    {"s0b", CKPT_DT_DOUBLE, 300000, 0}, {"s1b", CKPT_DT_FLOAT, 1300000, 1},
    {"s0c", CKPT_DT_INT16, 212345, 0},  {"s1c", CKPT_DT_UINT8, 99, 1},
    {"s1d", CKPT_DT_INT64, 100, 1},
};

static uint64_t name_seed(const char *name)
{
    uint64_t h = 1469598103934665603ull;
    for (; *name; name++)
        h = (h ^ (uint8_t)*name) * 1099511628211ull;
    return h;
}

static ckpt_shape vec(int64_t n)
{
    ckpt_shape s;
    memset(&s, 0, sizeof(s));
    s.rank = 1;
    s.dims[0] = n;
    return s;
}

static int setup(void **state)
{
    fixture *f = test_dir_fixture_new(sizeof(*f), offsetof(fixture, dir));
    f->prefix = test_path(f->dir, "ckpt");
    aligned_fs_init(&f->afs, CKPT_FS_VERSION);
    *state = f;
    return 0;
}

static void drop_values(fixture *f)
{
    for (size_t i = 0; i < f->n; i++) {
        free(f->values[i]);
        f->values[i] = NULL;
    }
    f->n = 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    drop_values(f);
    free(f->prefix);
    return test_dir_fixture_teardown(state);
}

/* Make the values of `specs` (pseudo-random bytes seeded by name). */
static void make_values(fixture *f, const tspec *specs, size_t n)
{
    drop_values(f);
    assert_true(n <= 32);
    f->specs = specs;
    f->n = n;
    for (size_t i = 0; i < n; i++) {
        f->bytes[i] = (size_t)specs[i].count * ckpt_dtype_size(specs[i].dtype);
        f->values[i] = malloc(f->bytes[i] + 1);
        assert_non_null(f->values[i]);
        test_fill_random(f->values[i], f->bytes[i], name_seed(specs[i].name));
    }
}

static void add_all(fixture *f, ckpt_bundle_writer *w)
{
    for (size_t i = 0; i < f->n; i++) {
        ckpt_shape s = vec(f->specs[i].count);
        assert_ckpt_ok(ckpt_bundle_writer_select_shard(w, f->specs[i].shard));
        assert_ckpt_ok(ckpt_bundle_writer_add(w, f->specs[i].name,
                                              f->specs[i].dtype, &s,
                                              f->values[i], f->bytes[i]));
    }
}

static ckpt_bundle_writer *open_writer(const fixture *f, int shards)
{
    ckpt_bundle_writer_options o = CKPT_BUNDLE_WRITER_OPTIONS_INIT;
    ckpt_bundle_writer *w = NULL;
    o.num_shards = shards;
    assert_ckpt_ok(ckpt_bundle_writer_open(&w, f->prefix, &o));
    return w;
}

/* Write a bundle holding `specs`. */
static void write_bundle(fixture *f, const tspec *specs, size_t n, int shards)
{
    ckpt_bundle_writer *w;
    make_values(f, specs, n);
    w = open_writer(f, shards);
    add_all(f, w);
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);
}

static ckpt_bundle_reader *open_reader(fixture *f, int skip_crc)
{
    ckpt_bundle_reader_options o = CKPT_BUNDLE_READER_OPTIONS_INIT;
    ckpt_bundle_reader *r = NULL;
    o.fs = &f->afs.fwd.fs;
    o.skip_data_checksums = skip_crc;
    assert_ckpt_ok(ckpt_bundle_reader_open(&r, f->prefix, &o));
    return r;
}

/* Requests for every tensor of the fixture in a shuffled order, each with
 * a destination of its size + GUARD bytes filled with SENTINEL (NULL for
 * empty tensors). `extra` more slots are left zeroed at the end. */
static ckpt_read_request *make_requests(const fixture *f, uint64_t seed,
                                        size_t extra, size_t *index_of)
{
    ckpt_read_request *reqs = calloc(f->n + extra, sizeof(*reqs));
    size_t order[32];
    uint64_t x = seed | 1;
    assert_non_null(reqs);
    for (size_t i = 0; i < f->n; i++)
        order[i] = i;
    for (size_t i = f->n; i > 1; i--) {
        size_t j, t;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        j = (size_t)(x % i);
        t = order[i - 1];
        order[i - 1] = order[j];
        order[j] = t;
    }
    for (size_t k = 0; k < f->n; k++) {
        size_t i = order[k];
        reqs[k].name = f->specs[i].name;
        reqs[k].dst_size = f->bytes[i];
        if (f->bytes[i] > 0) {
            reqs[k].dst = malloc(f->bytes[i] + GUARD);
            assert_non_null(reqs[k].dst);
            memset(reqs[k].dst, SENTINEL, f->bytes[i] + GUARD);
        }
        if (index_of)
            index_of[k] = i;
    }
    return reqs;
}

static void free_requests(ckpt_read_request *reqs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(reqs[i].dst);
    free(reqs);
}

static size_t spec_index(const fixture *f, const char *name)
{
    for (size_t i = 0; i < f->n; i++)
        if (!strcmp(f->specs[i].name, name))
            return i;
    fail_msg("no tensor %s", name);
    return 0;
}

/* Request k holds the bytes of its tensor and its guard is untouched. */
static void check_request(const fixture *f, const ckpt_read_request *q)
{
    size_t i = spec_index(f, q->name);
    const uint8_t *d = q->dst;
    if (f->bytes[i] == 0)
        return;
    if (memcmp(d, f->values[i], f->bytes[i]) != 0)
        fail_msg("tensor %s: wrong bytes", q->name);
    for (size_t g = 0; g < GUARD; g++)
        assert_int_equal(d[f->bytes[i] + g], SENTINEL);
}

/* Nothing of any destination was written. */
static void check_untouched(const ckpt_read_request *reqs, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        const uint8_t *d = reqs[k].dst;
        for (size_t b = 0; d && b < reqs[k].dst_size + GUARD; b++)
            if (d[b] != SENTINEL)
                fail_msg("request %zu (%s): byte %zu written", k,
                         reqs[k].name ? reqs[k].name : "(null)", b);
    }
}

/* Read every tensor of the fixture with read_many, shuffled by `seed`. */
static void read_all_and_check(fixture *f, uint64_t seed)
{
    ckpt_bundle_reader *r = open_reader(f, 0);
    ckpt_read_request *reqs = make_requests(f, seed, 0, NULL);
    assert_ckpt_ok(ckpt_bundle_reader_read_many(r, reqs, f->n));
    for (size_t k = 0; k < f->n; k++)
        check_request(f, &reqs[k]);
    ckpt_bundle_reader_free(r);
    free_requests(reqs, f->n);
    assert_int_equal(atomic_load(&f->afs.violations), 0);
    assert_int_equal(atomic_load(&f->afs.open_files), 0);
}

/* ---- direct and buffered ------------------------------------------------ */

/* Each of `files` data files was probed: one direct open for the probe's
 * pieces, and one more for the rest where O_DIRECT won. */
static void assert_probed(const fixture *f, unsigned long long files)
{
    unsigned long long opens = atomic_load(&f->afs.direct_opens);
    if (opens < files || opens > 2 * files)
        fail_msg("%llu direct opens for %llu probed files", opens, files);
}

static void test_large_bundle_direct(void **state)
{
    fixture *f = *state;
    write_bundle(f, BIG, NBIG, 1);
    read_all_and_check(f, 7);
    assert_probed(f, 1);
    assert_true(atomic_load(&f->afs.direct_preads) > 0);
    /* the records and no more than a piece of alignment around them, read
     * with O_DIRECT or, where the stream's probe found it faster, through
     * the page cache */
    assert_true(atomic_load(&f->afs.direct_bytes) +
                    atomic_load(&f->afs.other_bytes) >=
                11 * MIB);
    /* a second order, same result */
    aligned_fs_reset(&f->afs);
    read_all_and_check(f, 1234567);
    assert_probed(f, 1);
}

static void test_small_bundle_buffered(void **state)
{
    fixture *f = *state;
    write_bundle(f, SMALL, sizeof(SMALL) / sizeof(SMALL[0]), 1);
    read_all_and_check(f, 3);
    assert_int_equal(atomic_load(&f->afs.direct_opens), 0);
    assert_int_equal(atomic_load(&f->afs.direct_preads), 0);
    assert_true(atomic_load(&f->afs.other_preads) > 0);
}

/* 16 pieces of the direct stream (8 MiB) are enough to probe direct
 * reads, 15 are not (read through the page cache). */
static void test_threshold(void **state)
{
    fixture *f = *state;
    tspec at[2] = {{"x", CKPT_DT_FLOAT, (int64_t)(8 * MIB / 4), 0},
                   {"y", CKPT_DT_INT32, (int64_t)(15 * MIB / 2 / 4) - 1, 0}};
    write_bundle(f, at, 2, 1);
    read_all_and_check(f, 5);
    assert_probed(f, 1);
    for (int only = 0; only < 2; only++) {
        ckpt_bundle_reader *r = open_reader(f, 0);
        ckpt_read_request *reqs = make_requests(f, 1, 0, NULL);
        size_t k = strcmp(reqs[0].name, only ? "y" : "x") == 0 ? 0 : 1;
        aligned_fs_reset(&f->afs);
        assert_ckpt_ok(ckpt_bundle_reader_read_many(r, &reqs[k], 1));
        check_request(f, &reqs[k]);
        if (only) /* y alone: 15 pieces */
            assert_int_equal(atomic_load(&f->afs.direct_opens), 0);
        else
            assert_probed(f, 1);
        ckpt_bundle_reader_free(r);
        free_requests(reqs, f->n);
    }
}

static void test_two_shards(void **state)
{
    fixture *f = *state;
    write_bundle(f, SHARDED, sizeof(SHARDED) / sizeof(SHARDED[0]), 2);
    read_all_and_check(f, 11);
    assert_probed(f, 2);
    assert_true(atomic_load(&f->afs.direct_preads) > 0);
}

/* A file system that declines, or one of version 1: read through the page
 * cache with the same result. */
static void test_declined_falls_back(void **state)
{
    fixture *f = *state;
    write_bundle(f, BIG, NBIG, 1);
    atomic_store(&f->afs.decline, 1);
    read_all_and_check(f, 9);
    assert_int_equal(atomic_load(&f->afs.direct_preads), 0);
    assert_true(atomic_load(&f->afs.other_preads) > 0);
    atomic_store(&f->afs.decline, 0);
    aligned_fs_reset(&f->afs);
    f->afs.fwd.fs.version = 1;
    read_all_and_check(f, 9);
    assert_int_equal(atomic_load(&f->afs.direct_opens), 0);
    assert_int_equal(atomic_load(&f->afs.direct_preads), 0);
    f->afs.fwd.fs.version = CKPT_FS_VERSION;
}

/* A failing direct read is the call's error, naming the data file once:
 * in the file system's message that names it, in front of its message
 * that does not ("device gone"), or in the generic one when it set none. */
static void test_direct_read_failure(void **state)
{
    static const struct {
        const char *text; /* aligned_fs.fail_text */
        const char *want; /* after "pread <data file>: ", or anywhere */
    } cases[] = {{NULL, "injected EIO at direct pread 2 of"},
                 {"device gone", "device gone"},
                 {"", "input/output error"}};
    fixture *f = *state;
    char data[4200], want[4400];
    snprintf(data, sizeof(data), "%s.data-00000-of-00001", f->prefix);
    write_bundle(f, BIG, NBIG, 1);
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        ckpt_bundle_reader *r = open_reader(f, 0);
        ckpt_read_request *reqs = make_requests(f, 2, 0, NULL);
        const char *msg;
        f->afs.fail_text = cases[c].text;
        if (cases[c].text)
            snprintf(want, sizeof(want), "pread %s: %s", data, cases[c].want);
        else
            snprintf(want, sizeof(want), "%s", cases[c].want);
        /* the second: the stream's probe reads its first pieces
         * alternately direct and through the page cache, and may then
         * read the rest through the cache */
        aligned_fs_fail_nth(&f->afs, 2);
        ckpt_error_clear();
        assert_ckpt_error(ckpt_bundle_reader_read_many(r, reqs, f->n), CKPT_EIO,
                          want);
        msg = ckpt_error_last()->message;
        if (test_count(msg, data) != 1)
            fail_msg("case %zu: \"%s\" names %s %zu times", c, msg, data,
                     test_count(msg, data));
        aligned_fs_fail_nth(&f->afs, 0);
        f->afs.fail_text = NULL;
        ckpt_bundle_reader_free(r);
        free_requests(reqs, f->n);
        assert_int_equal(atomic_load(&f->afs.open_files), 0);
    }
}

/* ---- damaged records ---------------------------------------------------- */

static void flip_byte(const fixture *f, const char *name, size_t *at)
{
    ckpt_bundle_reader *r = NULL;
    const ckpt_tensor_entry *e;
    ckpt_buf path = CKPT_BUF_INIT;
    uint8_t *data;
    size_t n = 0;
    assert_ckpt_ok(ckpt_bundle_reader_open(&r, f->prefix, NULL));
    assert_ckpt_ok(ckpt_bundle_reader_find(&e, r, name));
    *at = (size_t)e->size / 2 + 1;
    assert_ckpt_ok(ckpt_bundle_data_path(&path, f->prefix, e->shard_id,
                                         ckpt_bundle_reader_num_shards(r)));
    data = test_read_file(path.ptr, &n);
    assert_non_null(data);
    data[(size_t)e->offset + *at] ^= 0x10;
    test_write_file(path.ptr, data, n);
    free(data);
    ckpt_buf_dispose(&path);
    ckpt_bundle_reader_free(r);
}

static void check_flipped(fixture *f, int large)
{
    ckpt_bundle_reader *r;
    ckpt_read_request *reqs;
    size_t at, i;
    flip_byte(f, "w06", &at);
    i = spec_index(f, "w06");

    r = open_reader(f, 0);
    reqs = make_requests(f, 4, 0, NULL);
    assert_ckpt_error(ckpt_bundle_reader_read_many(r, reqs, f->n),
                      CKPT_ECORRUPT, "tensor 'w06': checksum mismatch");
    if (large)
        assert_true(atomic_load(&f->afs.direct_preads) > 0);
    ckpt_bundle_reader_free(r);
    free_requests(reqs, f->n);

    /* without checksums it reads, the byte flipped */
    r = open_reader(f, 1);
    reqs = make_requests(f, 4, 0, NULL);
    assert_ckpt_ok(ckpt_bundle_reader_read_many(r, reqs, f->n));
    f->values[i][at] ^= 0x10;
    for (size_t k = 0; k < f->n; k++)
        check_request(f, &reqs[k]);
    ckpt_bundle_reader_free(r);
    free_requests(reqs, f->n);
}

static void test_flipped_byte_direct(void **state)
{
    fixture *f = *state;
    write_bundle(f, BIG, NBIG, 1);
    check_flipped(f, 1);
    assert_int_equal(atomic_load(&f->afs.violations), 0);
}

static void test_flipped_byte_buffered(void **state)
{
    fixture *f = *state;
    tspec specs[3] = {{"w05", CKPT_DT_DOUBLE, 1000, 0},
                      {"w06", CKPT_DT_INT32, 5000, 0},
                      {"w07", CKPT_DT_UINT8, 3, 0}};
    write_bundle(f, specs, 3, 1);
    check_flipped(f, 0);
    assert_int_equal(atomic_load(&f->afs.direct_preads), 0);
}

/* ---- bad requests ------------------------------------------------------- */

/* The BIG bundle plus a string tensor and a partitioned one. */
static void write_mixed_bundle(fixture *f)
{
    ckpt_bundle_writer *w;
    ckpt_slice strs[2] = {{"hello", 5}, {"", 0}};
    ckpt_shape s2 = vec(2);
    make_values(f, BIG, NBIG);
    w = open_writer(f, 1);
    add_all(f, w);
    assert_ckpt_ok(ckpt_bundle_writer_add_strings(w, "str", &s2, strs, 2));
    {
        ckpt_shape full = vec(10);
        ckpt_slice_extent lo = {0, 4}, hi = {4, 6};
        float v[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
        assert_ckpt_ok(ckpt_bundle_writer_add_slice(w, "part", CKPT_DT_FLOAT,
                                                    &full, &hi, v + 4, 24));
        assert_ckpt_ok(ckpt_bundle_writer_add_slice(w, "part", CKPT_DT_FLOAT,
                                                    &full, &lo, v, 16));
    }
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);
}

/* Requests for every ordinary tensor followed by `bad`; read_many must fail
 * with `code`/`needle` having written nothing. */
static void expect_rejected(fixture *f, ckpt_bundle_reader *r,
                            ckpt_read_request bad, int code, const char *needle)
{
    ckpt_read_request *reqs = make_requests(f, 6, 1, NULL);
    reqs[f->n] = bad;
    if (bad.dst_size > 0) {
        reqs[f->n].dst = malloc(bad.dst_size + GUARD);
        assert_non_null(reqs[f->n].dst);
        memset(reqs[f->n].dst, SENTINEL, bad.dst_size + GUARD);
    }
    aligned_fs_reset(&f->afs);
    assert_ckpt_error(ckpt_bundle_reader_read_many(r, reqs, f->n + 1), code,
                      needle);
    check_untouched(reqs, f->n + 1);
    assert_int_equal(atomic_load(&f->afs.direct_preads), 0);
    free_requests(reqs, f->n + 1);
}

static void test_bad_requests_write_nothing(void **state)
{
    fixture *f = *state;
    ckpt_bundle_reader *r;
    size_t w05;
    write_mixed_bundle(f);
    w05 = spec_index(f, "w05");
    r = open_reader(f, 0);

    expect_rejected(f, r, (ckpt_read_request){"w05", NULL, f->bytes[w05] - 8},
                    CKPT_EINVAL, "tensor 'w05': destination of");
    expect_rejected(f, r, (ckpt_read_request){"w05", NULL, f->bytes[w05] + 8},
                    CKPT_EINVAL, "tensor 'w05'");
    expect_rejected(f, r, (ckpt_read_request){"nope", NULL, 4}, CKPT_ENOTFOUND,
                    "nope");
    expect_rejected(f, r, (ckpt_read_request){"str", NULL, 16}, CKPT_ENOTSUP,
                    "tensor 'str'");
    {
        char want[64];
        snprintf(want, sizeof(want), "request %zu has no name", f->n);
        expect_rejected(f, r, (ckpt_read_request){NULL, NULL, 4}, CKPT_EINVAL,
                        want);
    }
    {
        /* a NULL destination for a non-empty tensor */
        ckpt_read_request *reqs = make_requests(f, 6, 1, NULL);
        reqs[f->n] = (ckpt_read_request){"w01", NULL, 4};
        assert_ckpt_error(ckpt_bundle_reader_read_many(r, reqs, f->n + 1),
                          CKPT_EINVAL, "tensor 'w01'");
        check_untouched(reqs, f->n + 1);
        free_requests(reqs, f->n + 1);
    }
    /* the reader still works */
    {
        ckpt_read_request *reqs = make_requests(f, 6, 0, NULL);
        assert_ckpt_ok(ckpt_bundle_reader_read_many(r, reqs, f->n));
        for (size_t k = 0; k < f->n; k++)
            check_request(f, &reqs[k]);
        free_requests(reqs, f->n);
    }
    assert_int_equal(ckpt_bundle_reader_read_many(r, NULL, 0), 0);
    assert_ckpt_error(ckpt_bundle_reader_read_many(NULL, NULL, 1), CKPT_EINVAL,
                      "NULL");
    assert_ckpt_error(ckpt_bundle_reader_read_many(r, NULL, 1), CKPT_EINVAL,
                      "NULL");
    ckpt_bundle_reader_free(r);
}

/* A partitioned tensor whose destination has the wrong size: its size is
 * known from the index, so it is rejected like any other request. */
static void test_bad_partitioned_request(void **state)
{
    fixture *f = *state;
    ckpt_bundle_reader *r;
    write_mixed_bundle(f);
    r = open_reader(f, 0);
    expect_rejected(f, r, (ckpt_read_request){"part", NULL, 36}, CKPT_EINVAL,
                    "tensor 'part'");
    ckpt_bundle_reader_free(r);
}

/* A data file missing: found while checking, before anything is read. */
static void test_missing_data_file(void **state)
{
    fixture *f = *state;
    ckpt_bundle_reader *r;
    ckpt_read_request *reqs;
    ckpt_buf path = CKPT_BUF_INIT;
    write_bundle(f, SHARDED, sizeof(SHARDED) / sizeof(SHARDED[0]), 2);
    assert_ckpt_ok(ckpt_bundle_data_path(&path, f->prefix, 1, 2));
    assert_int_equal(remove(path.ptr), 0);
    r = open_reader(f, 0);
    reqs = make_requests(f, 12, 0, NULL);
    assert_ckpt_error(ckpt_bundle_reader_read_many(r, reqs, f->n),
                      CKPT_ENOTFOUND, "data-00001-of-00002");
    check_untouched(reqs, f->n);
    assert_int_equal(atomic_load(&f->afs.direct_preads), 0);
    ckpt_bundle_reader_free(r);
    free_requests(reqs, f->n);
    ckpt_buf_dispose(&path);
}

/* Drop the last `drop` bytes of the fixture's one data file, named in
 * `path`. */
static void cut_data_file(const fixture *f, ckpt_buf *path, size_t drop)
{
    uint8_t *data;
    size_t n = 0;
    assert_ckpt_ok(ckpt_bundle_data_path(path, f->prefix, 0, 1));
    data = test_read_file(path->ptr, &n);
    assert_non_null(data);
    assert_true(n >= drop);
    test_write_file(path->ptr, data, n - drop);
    free(data);
}

/* A data file cut short inside the last records: found when the records
 * are located, before any is read. */
static void test_truncated_data_file(void **state)
{
    fixture *f = *state;
    ckpt_bundle_reader *r;
    ckpt_read_request *reqs;
    ckpt_buf path = CKPT_BUF_INIT;
    write_bundle(f, BIG, NBIG, 1);
    cut_data_file(f, &path, 100000);
    r = open_reader(f, 0);
    reqs = make_requests(f, 13, 0, NULL);
    /* found when the records are located, before any is read */
    assert_ckpt_error(ckpt_bundle_reader_read_many(r, reqs, f->n),
                      CKPT_ECORRUPT, "runs past the end of the data file");
    check_untouched(reqs, f->n);
    ckpt_bundle_reader_free(r);
    free_requests(reqs, f->n);
    ckpt_buf_dispose(&path);
    assert_int_equal(atomic_load(&f->afs.open_files), 0);
}

/* The data file cut inside the last record, the first piece of the
 * partitioned "part" (rows 0-3, added last): read_many located the
 * ordinary records before reading any, but a partitioned tensor's pieces
 * only while assembling it, so the ordinary tensors and rows 4-9 of
 * "part" had been written into their destinations when it failed. */
static void test_truncated_piece_writes_nothing(void **state)
{
    fixture *f = *state;
    ckpt_bundle_reader *r;
    ckpt_buf path = CKPT_BUF_INIT;
    write_mixed_bundle(f);
    cut_data_file(f, &path, 8);
    r = open_reader(f, 0);
    expect_rejected(f, r, (ckpt_read_request){"part", NULL, 40}, CKPT_ECORRUPT,
                    "tensor 'part (piece 0,4)': record at offset");
    assert_non_null(strstr(ckpt_error_last()->message,
                           "runs past the end of the data "
                           "file"));
    assert_non_null(strstr(ckpt_error_last()->message, path.ptr));
    ckpt_bundle_reader_free(r);
    ckpt_buf_dispose(&path);
}

/* ---- duplicates and partitioned tensors --------------------------------- */

static void test_duplicates(void **state)
{
    fixture *f = *state;
    ckpt_bundle_reader *r;
    ckpt_read_request *reqs;
    const char *dup[3] = {"w03", "small", "empty"};
    write_bundle(f, BIG, NBIG, 1);
    r = open_reader(f, 0);
    reqs = make_requests(f, 8, 3, NULL);
    for (int d = 0; d < 3; d++) {
        size_t i = spec_index(f, dup[d]);
        ckpt_read_request *q = &reqs[f->n + (size_t)d];
        q->name = dup[d];
        q->dst_size = f->bytes[i];
        if (f->bytes[i]) {
            q->dst = malloc(f->bytes[i] + GUARD);
            assert_non_null(q->dst);
            memset(q->dst, SENTINEL, f->bytes[i] + GUARD);
        }
    }
    assert_ckpt_ok(ckpt_bundle_reader_read_many(r, reqs, f->n + 3));
    for (size_t k = 0; k < f->n + 3; k++)
        check_request(f, &reqs[k]);
    /* one read of each tensor, streamed; the second copy is a memcpy */
    assert_true(atomic_load(&f->afs.direct_preads) > 0);
    ckpt_bundle_reader_free(r);
    free_requests(reqs, f->n + 3);
}

static void test_partitioned_among_ordinary(void **state)
{
    fixture *f = *state;
    ckpt_bundle_writer *w;
    ckpt_bundle_reader *r;
    ckpt_read_request *reqs;
    ckpt_shape full = {.rank = 2, .dims = {6, 1000}};
    float *m = malloc(6000 * sizeof(float));
    float *got = malloc(6000 * sizeof(float) + GUARD);
    assert_non_null(m);
    assert_non_null(got);
    for (int i = 0; i < 6000; i++)
        m[i] = (float)i * 0.5f - 7.0f;
    make_values(f, BIG, NBIG);
    w = open_writer(f, 1);
    /* the pieces around the ordinary records, bottom rows first */
    {
        ckpt_slice_extent hi[2] = {{3, 3}, {0, CKPT_SLICE_FULL}};
        assert_ckpt_ok(ckpt_bundle_writer_add_slice(
            w, "part", CKPT_DT_FLOAT, &full, hi, m + 3000, 3000 * 4));
    }
    add_all(f, w);
    {
        ckpt_slice_extent lo[2] = {{0, 3}, {0, CKPT_SLICE_FULL}};
        assert_ckpt_ok(ckpt_bundle_writer_add_slice(w, "part", CKPT_DT_FLOAT,
                                                    &full, lo, m, 3000 * 4));
    }
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);

    r = open_reader(f, 0);
    reqs = make_requests(f, 10, 1, NULL);
    /* the partitioned one in the middle of the list */
    reqs[f->n] = reqs[f->n / 2];
    reqs[f->n / 2] = (ckpt_read_request){"part", got, 6000 * sizeof(float)};
    memset(got, SENTINEL, 6000 * sizeof(float) + GUARD);
    assert_int_equal(r->piece_lookups, 0);
    assert_ckpt_ok(ckpt_bundle_reader_read_many(r, reqs, f->n + 1));
    /* each of its 2 pieces looked up in the index once: when the request
     * was checked, not again when the tensor was assembled */
    assert_int_equal(r->piece_lookups, 2);
    assert_memory_equal(got, m, 6000 * sizeof(float));
    for (size_t g = 0; g < GUARD; g++)
        assert_int_equal(((uint8_t *)got)[6000 * sizeof(float) + g], SENTINEL);
    for (size_t k = 0; k <= f->n; k++)
        if (k != f->n / 2)
            check_request(f, &reqs[k]);
    assert_true(atomic_load(&f->afs.direct_preads) > 0);
    assert_int_equal(atomic_load(&f->afs.violations), 0);
    reqs[f->n / 2].dst = NULL; /* `got` is freed below */
    ckpt_bundle_reader_free(r);
    free_requests(reqs, f->n + 1);
    free(got);
    free(m);
}

/* ---- hand-made bundles: big-endian, overlapping records ------------------ */

typedef struct hand_tensor {
    const char *name;
    int dtype;
    int64_t count;
    int64_t offset; /* -1: right after the previous one */
    int64_t size;   /* -1: count * width */
} hand_tensor;

static int kv_order(const void *a, const void *b)
{
    const bt_kv *x = a, *y = b;
    return ckpt__key_compare(x->key, x->key_len, y->key, y->key_len);
}

/* Write <prefix>.index for `t` (header endianness `endianness`) over the
 * data file `data` of `data_size` bytes. Offsets/sizes filled in. */
static void write_hand_bundle(const fixture *f, hand_tensor *t, size_t n,
                              int endianness, const uint8_t *data,
                              size_t data_size)
{
    ckpt_buf header = CKPT_BUF_INIT, path = CKPT_BUF_INIT;
    ckpt_buf values[8];
    bt_kv kvs[9];
    assert_true(n <= 8);
    bt_header(&header, 1, endianness);
    kvs[0] = (bt_kv){"", 0, header.ptr, header.size};
    for (size_t i = 0; i < n; i++) {
        ckpt__bundle_entry e =
            bt_make_entry(t[i].dtype, t[i].count, 0, t[i].offset, t[i].size,
                          ckpt__crc32c_mask(ckpt__crc32c(data + t[i].offset,
                                                         (size_t)t[i].size)));
        values[i] = (ckpt_buf)CKPT_BUF_INIT;
        bt_entry(&values[i], &e);
        kvs[i + 1] = (bt_kv){t[i].name, strlen(t[i].name), values[i].ptr,
                             values[i].size};
    }
    qsort(kvs + 1, n, sizeof(kvs[0]), kv_order);
    assert_ckpt_ok(ckpt_bundle_index_path(&path, f->prefix));
    bt_write_table(path.ptr, kvs, n + 1);
    assert_ckpt_ok(ckpt_bundle_data_path(&path, f->prefix, 0, 1));
    test_write_file(path.ptr, data, data_size);
    for (size_t i = 0; i < n; i++)
        ckpt_buf_dispose(&values[i]);
    ckpt_buf_dispose(&header);
    ckpt_buf_dispose(&path);
}

/* Byte-swap `n` bytes in words of `width`. */
static void swap_bytes(uint8_t *p, size_t n, size_t width)
{
    for (size_t i = 0; i + width <= n; i += width)
        for (size_t a = 0, b = width - 1; a < b; a++, b--) {
            uint8_t t = p[i + a];
            p[i + a] = p[i + b];
            p[i + b] = t;
        }
}

static void test_big_endian_direct(void **state)
{
    fixture *f = *state;
    hand_tensor t[5] = {
        {"be_f", CKPT_DT_FLOAT, 2200000, -1, -1},
        {"be_i64", CKPT_DT_INT64, 1001, -1, -1},
        {"be_i16", CKPT_DT_INT16, 333, -1, -1},
        {"be_u8", CKPT_DT_UINT8, 77, -1, -1},
        {"be_c64", CKPT_DT_COMPLEX64, 5, -1, -1},
    };
    size_t width[5] = {4, 8, 2, 1, 4}; /* complex64: two floats */
    uint8_t *host[5];
    uint8_t *data;
    size_t total = 0;
    ckpt_bundle_reader *r;
    ckpt_read_request reqs[5];
    for (int i = 0; i < 5; i++) {
        t[i].offset = (int64_t)total;
        t[i].size = t[i].count * (int64_t)ckpt_dtype_size(t[i].dtype);
        total += (size_t)t[i].size;
    }
    data = malloc(total);
    assert_non_null(data);
    for (int i = 0; i < 5; i++) {
        size_t sz = (size_t)t[i].size;
        host[i] = malloc(sz);
        assert_non_null(host[i]);
        test_fill_random(host[i], sz, name_seed(t[i].name));
        memcpy(data + t[i].offset, host[i], sz);
        swap_bytes(data + t[i].offset, sz, width[i]); /* host is LE */
    }
    write_hand_bundle(f, t, 5, 1, data, total);
    r = open_reader(f, 0);
    for (int k = 0; k < 5; k++) {
        int i = (k * 3) % 5; /* shuffled */
        reqs[k].name = t[i].name;
        reqs[k].dst_size = (size_t)t[i].size;
        reqs[k].dst = malloc(reqs[k].dst_size);
        assert_non_null(reqs[k].dst);
    }
    assert_ckpt_ok(ckpt_bundle_reader_read_many(r, reqs, 5));
    for (int k = 0; k < 5; k++) {
        int i = (k * 3) % 5;
        if (memcmp(reqs[k].dst, host[i], reqs[k].dst_size) != 0)
            fail_msg("%s: not in host order", t[i].name);
        free(reqs[k].dst);
    }
    assert_true(atomic_load(&f->afs.direct_preads) > 0);
    assert_int_equal(atomic_load(&f->afs.violations), 0);
    ckpt_bundle_reader_free(r);
    for (int i = 0; i < 5; i++)
        free(host[i]);
    free(data);
}

/* Records that overlap in the data file: TensorFlow never writes them, and
 * they would let a small index make every read go over the same data again
 * (issue 14), so the index is refused when opened, naming both tensors;
 * an empty record inside another one overlaps nothing. */
static void test_overlapping_records(void **state)
{
    fixture *f = *state;
    const size_t total = 12 * MIB;
    uint8_t *data = malloc(total);
    ckpt_bundle_reader *r = NULL;
    hand_tensor t[3] = {
        {"a", CKPT_DT_FLOAT, (int64_t)(8 * MIB / 4), 0, (int64_t)(8 * MIB)},
        {"b", CKPT_DT_FLOAT, (int64_t)(8 * MIB / 4), (int64_t)(4 * MIB),
         (int64_t)(8 * MIB)},
        {"z", CKPT_DT_FLOAT, 0, (int64_t)(2 * MIB), 0},
    };
    assert_non_null(data);
    test_fill_random(data, total, 99);
    write_hand_bundle(f, t, 3, 0, data, total);
    assert_ckpt_error(ckpt_bundle_reader_open(&r, f->prefix, NULL),
                      CKPT_ECORRUPT, "tensors 'a' and 'b' overlap");
    assert_null(r);
    /* without "b": "z" lies inside "a" but holds no bytes */
    t[1] = t[2];
    write_hand_bundle(f, t, 2, 0, data, total);
    r = open_reader(f, 0);
    {
        ckpt_read_request req = {"a", malloc(8 * MIB), 8 * MIB};
        assert_non_null(req.dst);
        assert_ckpt_ok(ckpt_bundle_reader_read_many(r, &req, 1));
        assert_memory_equal(req.dst, data, 8 * MIB);
        free(req.dst);
    }
    ckpt_bundle_reader_free(r);
    free(data);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_large_bundle_direct),
        T(test_small_bundle_buffered),
        T(test_threshold),
        T(test_two_shards),
        T(test_declined_falls_back),
        T(test_direct_read_failure),
        T(test_flipped_byte_direct),
        T(test_flipped_byte_buffered),
        T(test_bad_requests_write_nothing),
        T(test_bad_partitioned_request),
        T(test_missing_data_file),
        T(test_truncated_data_file),
        T(test_truncated_piece_writes_nothing),
        T(test_duplicates),
        T(test_partitioned_among_ordinary),
        T(test_big_endian_direct),
        T(test_overlapping_records),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
