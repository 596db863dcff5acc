/* tests/format/test_bundle_piece_crc.c - the per-piece checksums of the
 * read path (io/buffered_read.h) joined per record, seen through the
 * bundle reader: a record of 13 pieces among records of 0 and 1 bytes and
 * 200 small ones reads back exact through ckpt_bundle_reader_read_many,
 * check and verify; a byte flipped in its first, middle or last piece is
 * found by each of them, naming the tensor and the data file, on two
 * threads (the POSIX file system) and on one (a file system without
 * concurrent reads), while the other records still read. */
#include "bundle_test_helpers.h"

#include "support/fs_forward.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BIG_FLOATS ((int64_t)(13 * 65536 - 5)) /* 13 pieces, last short */
#define NSMALL 200

typedef struct fixture {
    bt_fixture bt;
    float *big;
    uint8_t one;
    int32_t small[NSMALL][5];
    char data_path[4200];
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof(*f));
    ckpt_bundle_writer *w = NULL;
    void *bts = NULL;
    assert_non_null(f);
    assert_int_equal(bt_setup(&bts), 0);
    f->bt = *(bt_fixture *)bts;
    free(bts);
    f->big = malloc((size_t)BIG_FLOATS * sizeof(float));
    assert_non_null(f->big);
    for (int64_t i = 0; i < BIG_FLOATS; i++)
        f->big[i] = (float)i * 0.5f - 7.0f;
    f->one = 0xc3;
    for (int i = 0; i < NSMALL; i++)
        for (int j = 0; j < 5; j++)
            f->small[i][j] = i * 100 + j;
    assert_ckpt_ok(ckpt_bundle_writer_open(&w, f->bt.prefix, NULL));
    {
        int64_t d = BIG_FLOATS, zero = 0, one = 1, five = 5;
        ckpt_shape sb = bt_shape(1, &d), s0 = bt_shape(1, &zero),
                   s1 = bt_shape(1, &one), s5 = bt_shape(1, &five);
        assert_ckpt_ok(ckpt_bundle_writer_add(w, "big", CKPT_DT_FLOAT, &sb,
                                              f->big, (size_t)BIG_FLOATS * 4));
        assert_ckpt_ok(
            ckpt_bundle_writer_add(w, "empty", CKPT_DT_FLOAT, &s0, NULL, 0));
        assert_ckpt_ok(
            ckpt_bundle_writer_add(w, "one", CKPT_DT_UINT8, &s1, &f->one, 1));
        for (int i = 0; i < NSMALL; i++) {
            char name[32];
            snprintf(name, sizeof(name), "small/%03d", i);
            assert_ckpt_ok(ckpt_bundle_writer_add(w, name, CKPT_DT_INT32, &s5,
                                                  f->small[i], 20));
        }
    }
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);
    snprintf(f->data_path, sizeof(f->data_path), "%s.data-00000-of-00001",
             f->bt.prefix);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    void *bts = malloc(sizeof(bt_fixture));
    memcpy(bts, &f->bt, sizeof(bt_fixture));
    bt_teardown(&bts);
    free(f->big);
    free(f);
    return 0;
}

/* A file system without open_read_direct: the read path stays on the
 * calling thread. */
static void one_thread_fs(ckpt_fs_forward *w)
{
    ckpt_fs_forward_init(w, NULL); /* its payload is `w` itself */
    w->fs.open_read_direct = NULL;
}

static ckpt_bundle_reader *open_reader(const fixture *f, const ckpt_fs *fs)
{
    ckpt_bundle_reader_options o = CKPT_BUNDLE_READER_OPTIONS_INIT;
    ckpt_bundle_reader *r = NULL;
    o.fs = fs;
    assert_ckpt_ok(ckpt_bundle_reader_open(&r, f->bt.prefix, &o));
    return r;
}

/* Offset of the record of "big" in the data file. */
static int64_t big_offset(const fixture *f)
{
    ckpt_bundle_reader *r = open_reader(f, NULL);
    const ckpt_tensor_entry *e = NULL;
    int64_t off;
    assert_ckpt_ok(ckpt_bundle_reader_find(&e, r, "big"));
    off = e->offset;
    ckpt_bundle_reader_free(r);
    return off;
}

static void flip_byte(const fixture *f, uint64_t at)
{
    size_t n = 0;
    uint8_t *bytes = test_read_file(f->data_path, &n);
    assert_non_null(bytes);
    assert_true(at < n);
    bytes[at] ^= 0x10;
    test_write_file(f->data_path, bytes, n);
    free(bytes);
}

/* Read everything with read_many: big, empty, one and the small ones. */
static int read_all(const fixture *f, const ckpt_fs *fs, float *big,
                    uint8_t *one, int32_t (*small)[5])
{
    ckpt_read_request reqs[3 + NSMALL];
    char names[NSMALL][32];
    ckpt_bundle_reader *r = open_reader(f, fs);
    int err;
    reqs[0] = (ckpt_read_request){"big", big, (size_t)BIG_FLOATS * 4};
    reqs[1] = (ckpt_read_request){"empty", NULL, 0};
    reqs[2] = (ckpt_read_request){"one", one, 1};
    for (int i = 0; i < NSMALL; i++) {
        snprintf(names[i], sizeof(names[i]), "small/%03d", i);
        reqs[3 + i] = (ckpt_read_request){names[i], small[i], 20};
    }
    err = ckpt_bundle_reader_read_many(r, reqs, 3 + NSMALL);
    ckpt_bundle_reader_free(r);
    return err;
}

static void check_clean(const fixture *f, const ckpt_fs *fs)
{
    float *big = calloc((size_t)BIG_FLOATS, sizeof(float));
    int32_t(*small)[5] = calloc(NSMALL, sizeof(*small));
    uint8_t one = 0;
    ckpt_bundle_reader *r;
    const ckpt_tensor_entry *e = NULL;
    assert_non_null(big);
    assert_non_null(small);
    assert_ckpt_ok(read_all(f, fs, big, &one, small));
    assert_memory_equal(big, f->big, (size_t)BIG_FLOATS * 4);
    assert_int_equal(one, f->one);
    assert_memory_equal(small, f->small, sizeof(f->small));
    r = open_reader(f, fs);
    assert_ckpt_ok(ckpt_bundle_reader_verify(r));
    assert_ckpt_ok(ckpt_bundle_reader_find(&e, r, "big"));
    assert_ckpt_ok(ckpt_bundle_reader_check(r, e));
    assert_ckpt_ok(ckpt_bundle_reader_find(&e, r, "one"));
    assert_ckpt_ok(ckpt_bundle_reader_check(r, e));
    assert_ckpt_ok(ckpt_bundle_reader_find(&e, r, "empty"));
    assert_ckpt_ok(ckpt_bundle_reader_check(r, e));
    ckpt_bundle_reader_free(r);
    free(small);
    free(big);
}

/* Every way of reading finds the damage in "big" and names it. */
static void check_damaged(const fixture *f, const ckpt_fs *fs)
{
    float *big = calloc((size_t)BIG_FLOATS, sizeof(float));
    int32_t(*small)[5] = calloc(NSMALL, sizeof(*small));
    uint8_t one = 0;
    char want[4400];
    ckpt_bundle_reader *r;
    const ckpt_tensor_entry *e = NULL;
    assert_non_null(big);
    assert_non_null(small);
    snprintf(want, sizeof(want), "%s: tensor 'big': checksum mismatch",
             f->data_path);
    assert_ckpt_error(read_all(f, fs, big, &one, small), CKPT_ECORRUPT, want);
    r = open_reader(f, fs);
    assert_ckpt_error(ckpt_bundle_reader_verify(r), CKPT_ECORRUPT, want);
    assert_ckpt_ok(ckpt_bundle_reader_find(&e, r, "big"));
    assert_ckpt_error(ckpt_bundle_reader_check(r, e), CKPT_ECORRUPT, want);
    /* the other records are intact */
    assert_ckpt_ok(ckpt_bundle_reader_find(&e, r, "small/199"));
    assert_ckpt_ok(ckpt_bundle_reader_check(r, e));
    assert_ckpt_ok(ckpt_bundle_reader_read(r, "small/007", small[7], 20));
    assert_memory_equal(small[7], f->small[7], 20);
    ckpt_bundle_reader_free(r);
    free(small);
    free(big);
}

static void test_clean_two_threads(void **state)
{
    check_clean(*state, NULL);
}

static void test_clean_one_thread(void **state)
{
    ckpt_fs_forward w;
    one_thread_fs(&w);
    check_clean(*state, &w.fs);
}

static void damage_and_check(fixture *f, uint64_t byte_in_record)
{
    ckpt_fs_forward w;
    one_thread_fs(&w);
    flip_byte(f, (uint64_t)big_offset(f) + byte_in_record);
    check_damaged(f, NULL);
    check_damaged(f, &w.fs);
}

static void test_damage_first_piece(void **state)
{
    damage_and_check(*state, 3);
}

static void test_damage_middle_piece(void **state)
{
    damage_and_check(*state, (uint64_t)BIG_FLOATS * 4 / 2 + 1);
}

static void test_damage_last_piece(void **state)
{
    damage_and_check(*state, (uint64_t)BIG_FLOATS * 4 - 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_clean_two_threads, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_clean_one_thread, setup, teardown),
        cmocka_unit_test_setup_teardown(test_damage_first_piece, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_damage_middle_piece, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_damage_last_piece, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
