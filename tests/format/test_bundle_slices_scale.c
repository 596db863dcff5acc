/* tests/format/test_bundle_slices_scale.c - partitioned tensors of
 * thousands of pieces: the writer checks each new piece against an
 * interval tree of the earlier ones (bundle_slice_overlap.c) and encodes
 * the full entry once, at finish. Pieces added in order, in reverse and
 * shuffled read back whole; on a grid with holes, random candidate pieces
 * are accepted or refused exactly as a comparison with every earlier piece
 * decides, the refusal naming the earliest piece overlapped. */
#include "bundle_test_helpers.h"

#include "format/bundle_slices.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef bt_fixture fixture;

static uint64_t next_random(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* 0 .. n-1 in the order `how` says: 0 forward, 1 reversed, 2 shuffled. */
static int *piece_order(int n, int how, uint64_t seed)
{
    int *p = malloc((size_t)n * sizeof(*p));
    assert_non_null(p);
    for (int i = 0; i < n; i++)
        p[i] = how == 1 ? n - 1 - i : i;
    for (int i = n - 1; how == 2 && i > 0; i--) {
        int j = (int)(next_random(&seed) % (uint64_t)(i + 1));
        int t = p[i];
        p[i] = p[j];
        p[j] = t;
    }
    return p;
}

/* Add the rows of the [rows, 3] float tensor "t" (`full`) one at a time
 * to `w`, in `order`, from `values`. */
static void add_rows(ckpt_bundle_writer *w, const ckpt_shape *full,
                     const int *order, const float *values)
{
    for (int k = 0; k < (int)full->dims[0]; k++) {
        int row = order[k];
        ckpt_slice_extent ext[2] = {{row, 1}, {0, CKPT_SLICE_FULL}};
        assert_ckpt_ok(ckpt_bundle_writer_add_slice(w, "t", CKPT_DT_FLOAT, full,
                                                    ext, values + row * 3,
                                                    3 * sizeof(float)));
    }
}

/* A [ROWS, 3] float tensor added one row at a time in each order, then
 * read back whole. */
static void test_rows_in_any_order_read_back(void **state)
{
    enum { ROWS = 3000 };
    fixture *f = *state;
    ckpt_shape full = {2, {ROWS, 3}};
    float *want = malloc(sizeof(float) * ROWS * 3);
    float *got = malloc(sizeof(float) * ROWS * 3);
    assert_non_null(want);
    assert_non_null(got);
    for (int i = 0; i < ROWS * 3; i++)
        want[i] = (float)i * 0.25f;
    for (int how = 0; how < 3; how++) {
        int *order = piece_order(ROWS, how, 0x51ce5u + (uint64_t)how);
        ckpt_bundle_writer *w = NULL;
        ckpt_bundle_reader *r = NULL;
        const ckpt_tensor_entry *e;
        char prefix[4200];
        snprintf(prefix, sizeof(prefix), "%s-%d", f->prefix, how);
        assert_ckpt_ok(ckpt_bundle_writer_open(&w, prefix, NULL));
        add_rows(w, &full, order, want);
        {
            /* a row again, as a piece reaching into its neighbours */
            ckpt_slice_extent ext[2] = {{ROWS / 2, 2}, {1, 1}};
            assert_ckpt_error(
                ckpt_bundle_writer_add_slice(w, "t", CKPT_DT_FLOAT, &full, ext,
                                             want, 2 * sizeof(float)),
                CKPT_EINVAL, "overlaps piece");
        }
        assert_ckpt_error(ckpt_bundle_writer_finish(w), CKPT_EINVAL,
                          "overlaps piece");
        ckpt_bundle_writer_free(w);

        /* the same without the refused piece: written and read back */
        assert_ckpt_ok(ckpt_bundle_writer_open(&w, prefix, NULL));
        add_rows(w, &full, order, want);
        assert_ckpt_ok(ckpt_bundle_writer_finish(w));
        ckpt_bundle_writer_free(w);
        assert_ckpt_ok(ckpt_bundle_reader_open(&r, prefix, NULL));
        assert_ckpt_ok(ckpt_bundle_reader_find(&e, r, "t"));
        assert_int_equal(e->num_slices, ROWS);
        memset(got, 0, sizeof(float) * ROWS * 3);
        assert_ckpt_ok(
            ckpt_bundle_reader_read(r, "t", got, sizeof(float) * ROWS * 3));
        assert_memory_equal(got, want, sizeof(float) * ROWS * 3);
        ckpt_bundle_reader_free(r);
        free(order);
    }
    free(want);
    free(got);
}

typedef struct box {
    int64_t r, c, h, w; /* start row and column, height and width */
} box;

static int boxes_meet(const box *a, const box *b)
{
    return a->r < b->r + b->h && b->r < a->r + a->h && a->c < b->c + b->w &&
           b->c < a->c + a->w;
}

/* Check piece `b` of tensor "g" against `set` and, when it fits, add it
 * (as entry 0). 0 or the check's error. */
static int offer(ckpt__slice_set *set, const ckpt_shape *full, const box *b,
                 bool first)
{
    static const float data[9];
    ckpt_slice_extent ext[2] = {{b->r, b->h}, {b->c, b->w}};
    ckpt__slice_piece p;
    ckpt__bundle_entry entry;
    int rc =
        ckpt__slice_piece_prepare(&p, "bundle", "g", CKPT_DT_FLOAT, full, ext,
                                  data, (size_t)(b->h * b->w) * sizeof(float));
    assert_int_equal(rc, 0);
    rc = ckpt__slice_set_check(set, "bundle", "g", 0, first, CKPT_DT_FLOAT,
                               full, &p);
    if (rc == 0)
        assert_ckpt_ok(
            ckpt__slice_set_append(set, 0, CKPT_DT_FLOAT, full, &p, &entry));
    ckpt__slice_piece_dispose(&p);
    return rc;
}

/* A [GRID*2, GRID*2] tensor cut into 2x2 blocks, shuffled, every fifth
 * block left out; then random pieces of 1..3 by 1..3 elements: each is
 * accepted when it meets no piece added before it, else refused naming
 * the earliest piece it meets, as a comparison with each one says; and
 * the full entry lists every piece accepted, in the order added. */
static void test_grid_candidates_match_brute_force(void **state)
{
    enum { GRID = 40, CANDIDATES = 1500 };
    ckpt_shape full = {2, {GRID * 2, GRID * 2}};
    box *added = malloc(sizeof(box) * (GRID * GRID + CANDIDATES));
    int *order = piece_order(GRID * GRID, 2, 0x6a1dull);
    ckpt__slice_set set = CKPT__SLICE_SET_INIT;
    ckpt__bundle_entry entry;
    size_t entry_index = 1;
    uint64_t x = 0xfeedull;
    int n = 0, accepted = 0, refused = 0;
    (void)state;
    assert_non_null(added);
    for (int k = 0; k < GRID * GRID; k++) {
        box b = {order[k] / GRID * 2, order[k] % GRID * 2, 2, 2};
        if (order[k] % 5 == 0)
            continue;
        assert_int_equal(offer(&set, &full, &b, n == 0), 0);
        added[n++] = b;
    }
    for (int k = 0; k < CANDIDATES; k++) {
        box b;
        int first = -1;
        b.h = (int64_t)(next_random(&x) % 3) + 1;
        b.w = (int64_t)(next_random(&x) % 3) + 1;
        b.r = (int64_t)(next_random(&x) % (uint64_t)(GRID * 2 - b.h + 1));
        b.c = (int64_t)(next_random(&x) % (uint64_t)(GRID * 2 - b.w + 1));
        for (int i = 0; i < n && first < 0; i++)
            if (boxes_meet(&b, &added[i]))
                first = i;
        if (first < 0) {
            assert_int_equal(offer(&set, &full, &b, false), 0);
            added[n++] = b;
            accepted++;
        } else {
            char needle[64];
            snprintf(needle, sizeof(needle), "overlaps piece %d (", first);
            assert_int_equal(offer(&set, &full, &b, false), CKPT_EINVAL);
            if (!strstr(ckpt_error_last()->message, needle))
                fail_msg("candidate %d: '%s' does not name piece %d", k,
                         ckpt_error_last()->message, first);
            refused++;
        }
    }
    assert_true(accepted > 10 && refused > 100);
    ckpt__slice_set_describe(&set, 0, &entry_index, &entry);
    assert_int_equal(entry_index, 0);
    assert_int_equal(entry.num_slices, n);
    for (int i = 0; i < n; i++) {
        assert_int_equal(entry.slices[i].start[0], added[i].r);
        assert_int_equal(entry.slices[i].length[0], added[i].h);
        assert_int_equal(entry.slices[i].start[1], added[i].c);
        assert_int_equal(entry.slices[i].length[1], added[i].w);
    }
    ckpt__slice_set_dispose(&set);
    free(order);
    free(added);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_rows_in_any_order_read_back,
                                        bt_setup, bt_teardown),
        cmocka_unit_test(test_grid_candidates_match_brute_force),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
