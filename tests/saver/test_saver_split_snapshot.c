/* Shared and overlapped snapshots: how the caller and an idle writer thread
 * share the copy (claims of pieces; callbacks on the caller only); that an
 * async save of a state big enough to be shared still writes exactly the
 * values at save_async (the variables are rewritten as soon as it
 * returns); and that after a mutation fence has been called, save_async
 * leaves the copy to the writer and the next fence completes it, the
 * values saved still being those at save_async while the test rewrites
 * every variable right after the fence (run under TSan in CI: any access
 * of the writer to a variable after the fence is a reported race). Read
 * callbacks are only ever called on the caller's thread, inside
 * save_async. With the option fence_from_start the staging image is only
 * mapped at reserve and the first save_async already overlaps. A variable
 * of 5 MiB and some bytes spans several pieces. */
#include "saver/saver_internal.h"
#include "saver_test_util.h"
#include "util/crc32c.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MIB ((uint64_t)1 << 20)
#define NBIG 8
#define BIG_FLOATS ((size_t)(MIB / 4)) /* 1 MiB per variable */
#define CB_FLOATS ((size_t)1000)
#define HUGE_FLOATS ((size_t)(5 * MIB / 4 + 3)) /* three pieces */

/* ---- shared snapshot work -------------------------------------------------
 */

static int dummy_read(void *dst, uint64_t off, size_t n, void *payload)
{
    (void)off;
    (void)payload;
    memset(dst, 0x5a, n);
    return 0;
}

static int read_fails(void *dst, uint64_t off, size_t n, void *payload)
{
    (void)dst;
    (void)off;
    (void)n;
    (void)payload;
    return 7;
}

typedef struct work_fixture {
    ckpt__var vars[6];
    float data[6][256];
    ckpt__piece *pieces;
    ckpt__image img;
} work_fixture;

/* Six variables of 256 floats, those in `cb` behind a callback, planned
 * in pieces of `piece_bytes`. */
static void work_init(work_fixture *wf, ckpt__snapshot_work *w, const int *cb,
                      ckpt_var_read_fn fn, uint64_t piece_bytes, int checksum)
{
    size_t npieces = 0;
    memset(wf, 0, sizeof(*wf));
    memset(w, 0, sizeof(*w));
    for (size_t i = 0; i < 6; i++) {
        for (int k = 0; k < 256; k++)
            wf->data[i][k] = (float)(i * 1000 + (size_t)k);
        wf->vars[i].bytes = 1024;
        wf->vars[i].offset = 1024 * i;
        wf->vars[i].v.data = cb[i] ? NULL : wf->data[i];
        wf->vars[i].v.read = cb[i] ? fn : NULL;
        wf->vars[i].name = (char *)"v";
    }
    assert_ckpt_ok(
        ckpt__snapshot_plan(wf->vars, 6, piece_bytes, &wf->pieces, &npieces));
    assert_ckpt_ok(ckpt__image_alloc(&wf->img, 6 * 1024, 6, npieces, 1));
    w->vars = wf->vars;
    w->nvars = 6;
    w->pieces = wf->pieces;
    w->npieces = npieces;
    w->img = &wf->img;
    w->checksum = checksum;
    atomic_store(&w->next, 0);
}

static void work_dispose(work_fixture *wf)
{
    ckpt__image_free(&wf->img);
    free(wf->pieces);
}

static void test_plan(void **state)
{
    ckpt__var vars[4];
    ckpt__piece *p = NULL;
    size_t n = 0;
    (void)state;
    memset(vars, 0, sizeof(vars));
    vars[0].bytes = 10; /* one short piece */
    vars[1].bytes = 0;  /* none */
    vars[2].bytes = 25; /* 8 + 8 + 8 + 1 */
    vars[3].bytes = 16;
    vars[3].v.read = dummy_read; /* callbacks are not planned */
    assert_ckpt_ok(ckpt__snapshot_plan(vars, 4, 8, &p, &n));
    assert_int_equal(n, 6);
    assert_int_equal(p[0].var, 0);
    assert_int_equal(p[0].len, 8);
    assert_int_equal(p[1].var, 0);
    assert_int_equal(p[1].offset, 8);
    assert_int_equal(p[1].len, 2);
    for (size_t k = 2; k < 6; k++) {
        assert_int_equal(p[k].var, 2);
        assert_int_equal(p[k].offset, 8 * (k - 2));
        assert_int_equal(p[k].len, k == 5 ? 1 : 8);
    }
    free(p);
}

static void test_shared_work(void **state)
{
    work_fixture wf;
    ckpt__snapshot_work w;
    int none[6] = {0};
    int cb[6] = {0, 1, 0, 0, 1, 0};
    (void)state;

    /* one thread claims everything, whole variables or pieces of 100 bytes
     * (the last one short), checksums fused or left to the seal: every
     * CRC and byte is right */
    for (int mode = 0; mode < 4; mode++) {
        work_init(&wf, &w, none, NULL, mode < 2 ? 1024 : 100, mode % 2);
        assert_ckpt_ok(ckpt__snapshot_run_caller(&w));
        assert_true(atomic_load(&w.next) >= w.npieces);
        ckpt__image_seal(&w);
        for (size_t i = 0; i < 6; i++) {
            assert_memory_equal(wf.img.ptr + 1024 * i, wf.data[i], 1024);
            assert_int_equal(wf.img.crcs[i], ckpt__crc32c(wf.data[i], 1024));
        }
        work_dispose(&wf);
    }

    /* claims already taken by another thread are not copied again, and a
     * helper never copies a callback variable (none is planned) */
    work_init(&wf, &w, cb, dummy_read, 1024, 1);
    assert_int_equal(w.npieces, 4);
    atomic_store(&w.next, 2); /* vars 0 and 2 "taken" elsewhere */
    assert_ckpt_ok(ckpt__snapshot_run_caller(&w));
    assert_int_equal(wf.img.piece_crcs[0], 0);
    assert_int_equal(wf.img.piece_crcs[1], 0);
    assert_int_equal(wf.img.ptr[0], 0);
    assert_memory_equal(wf.img.ptr + 1024 * 3, wf.data[3], 1024);
    assert_memory_equal(wf.img.ptr + 1024 * 5, wf.data[5], 1024);
    assert_int_equal(wf.img.ptr[1024 * 1], 0x5a); /* callbacks: caller */
    assert_int_equal(wf.img.ptr[1024 * 4 + 1023], 0x5a);
    work_dispose(&wf);

    /* a failing callback stops the claims and names the variable */
    work_init(&wf, &w, cb, read_fails, 1024, 1);
    assert_ckpt_error(ckpt__snapshot_run_caller(&w), CKPT_EUSER,
                      "read callback failed (7)");
    assert_true(atomic_load(&w.next) >= w.npieces);
    ckpt__snapshot_claim(&w); /* a helper arriving now copies none */
    assert_int_equal(wf.img.piece_crcs[0], 0);
    assert_int_equal(wf.img.ptr[0], 0);
    assert_int_equal(wf.img.ptr[5 * 1024], 0);
    work_dispose(&wf);
}

/* The placement rule both savers share, on its own: a state too small to
 * time, or CKPT_SNAPSHOT_CHECKSUM, decides at once (fused, or as forced);
 * otherwise four timed snapshots alternate, fused first, and the call
 * that makes the choice (and only that one) says so. */
static void test_checksum_choice_rule(void **state)
{
    ckpt__checksum_choice c;
    int said = 0;
    (void)state;
    assert_int_equal(unsetenv("CKPT_SNAPSHOT_CHECKSUM"), 0);
    ckpt__checksum_choice_init(&c, 1 << 20);
    assert_int_equal(c.checksum, 1);
    assert_int_equal(c.probes, CKPT__CHECKSUM_PROBES);
    assert_int_equal(ckpt__checksum_choice_timed(&c, 1, 0.5), 0);
    assert_int_equal(c.checksum, 1);

    ckpt__checksum_choice_init(&c, (uint64_t)64 << 20);
    assert_int_equal(c.probes, 0);
    for (int i = 0; i < CKPT__CHECKSUM_PROBES; i++) {
        int fused = c.checksum;
        assert_int_equal(fused, i % 2 == 0);
        said += ckpt__checksum_choice_timed(&c, fused, fused ? 0.010 : 0.005);
    }
    assert_int_equal(said, 1);
    assert_int_equal(c.checksum, 0); /* plain copies twice as fast */
    assert_int_equal(ckpt__checksum_choice_timed(&c, 0, 0.5), 0);
    assert_int_equal(c.checksum, 0);
    assert_true(c.fused_s == 0.010 && c.plain_s == 0.005);

    assert_int_equal(setenv("CKPT_SNAPSHOT_CHECKSUM", "writer", 1), 0);
    ckpt__checksum_choice_init(&c, (uint64_t)64 << 20);
    assert_int_equal(c.checksum, 0);
    assert_int_equal(c.probes, CKPT__CHECKSUM_PROBES);
    assert_int_equal(setenv("CKPT_SNAPSHOT_CHECKSUM", "copy", 1), 0);
    ckpt__checksum_choice_init(&c, (uint64_t)64 << 20);
    assert_int_equal(c.checksum, 1);
    assert_int_equal(c.probes, CKPT__CHECKSUM_PROBES);
    assert_int_equal(unsetenv("CKPT_SNAPSHOT_CHECKSUM"), 0);
}

/* ---- async saves of a split state -----------------------------------------
 */

typedef struct fixture {
    char *dir;
    float *big[NBIG];
    float *huge;
    float cb_vals[CB_FLOATS];
    pthread_t caller;
    int cb_calls;
    int cb_wrong_thread;
    gate_fs gate;
    int direct_io;     /* the savers' option */
    char log[16][256]; /* INFO and up lines logged */
    int nlog;
} fixture;

static int setup(void **state)
{
    fixture *f = test_dir_fixture_new(sizeof(*f), offsetof(fixture, dir));
    for (int i = 0; i < NBIG; i++) {
        f->big[i] = malloc(BIG_FLOATS * sizeof(float));
        assert_non_null(f->big[i]);
    }
    f->huge = malloc(HUGE_FLOATS * sizeof(float));
    assert_non_null(f->huge);
    f->caller = pthread_self();
    gate_fs_init(&f->gate);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    gate_fs_dispose(&f->gate);
    for (int i = 0; i < NBIG; i++)
        free(f->big[i]);
    free(f->huge);
    return test_dir_fixture_teardown(state);
}

static float value(int var, size_t i, float base)
{
    return base + (float)var * 1000.0f + (float)(i % 997);
}

static void fill(fixture *f, float base)
{
    for (int v = 0; v < NBIG; v++)
        for (size_t i = 0; i < BIG_FLOATS; i++)
            f->big[v][i] = value(v, i, base);
    for (size_t i = 0; i < CB_FLOATS; i++)
        f->cb_vals[i] = base - (float)i;
    for (size_t i = 0; i < HUGE_FLOATS; i++)
        f->huge[i] = base * 0.5f + (float)(i % 1009);
}

static int cb_read(void *dst, uint64_t off, size_t n, void *payload)
{
    fixture *f = payload;
    if (!pthread_equal(pthread_self(), f->caller))
        f->cb_wrong_thread = 1;
    f->cb_calls++;
    memcpy(dst, (const uint8_t *)f->cb_vals + off, n);
    return 0;
}

/* Logs come from the writer thread too; the tests read them after the
 * writes ended (wait), which orders them. */
static void keep_log(int level, const char *message, void *payload)
{
    fixture *f = payload;
    if (level >= CKPT_LOG_INFO && f->nlog < 16)
        snprintf(f->log[f->nlog++], sizeof(f->log[0]), "%s", message);
}

static ckpt_saver *open_saver_with(fixture *f, int policy, int from_start)
{
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_saver *s = NULL;
    ckpt_var cbv = {
        "cb", CKPT_DT_FLOAT, {1, {(int64_t)CB_FLOATS}}, NULL, cb_read, NULL, f};
    o.busy_policy = policy;
    o.fence_from_start = from_start;
    o.fs = &f->gate.fwd.fs;
    o.max_to_keep = CKPT_KEEP_ALL;
    o.direct_io = f->direct_io;
    o.log = keep_log;
    o.log_payload = f;
    assert_ckpt_ok(ckpt_saver_open(&s, f->dir, &o));
    /* the callback variable first: the caller copies it */
    assert_ckpt_ok(ckpt_saver_add_var(s, &cbv));
    for (int i = 0; i < NBIG; i++) {
        char name[32];
        ckpt_var v = {name,      CKPT_DT_FLOAT, {1, {(int64_t)BIG_FLOATS}},
                      f->big[i], NULL,          NULL,
                      NULL};
        snprintf(name, sizeof(name), "big_%d", i);
        assert_ckpt_ok(ckpt_saver_add_var(s, &v));
    }
    {
        ckpt_var v = {"huge",  CKPT_DT_FLOAT, {1, {(int64_t)HUGE_FLOATS}},
                      f->huge, NULL,          NULL,
                      NULL};
        assert_ckpt_ok(ckpt_saver_add_var(s, &v));
    }
    return s;
}

static ckpt_saver *open_saver(fixture *f, int policy)
{
    return open_saver_with(f, policy, 0);
}

static void expect_checkpoint(fixture *f, int64_t step, float base)
{
    char prefix[4096];
    ckpt_bundle_reader *r = NULL;
    float *got = malloc(BIG_FLOATS * sizeof(float));
    assert_non_null(got);
    snprintf(prefix, sizeof(prefix), "%s/model.ckpt-%lld", f->dir,
             (long long)step);
    assert_ckpt_ok(ckpt_bundle_reader_open(&r, prefix, NULL));
    for (int v = 0; v < NBIG; v++) {
        char name[32];
        snprintf(name, sizeof(name), "big_%d", v);
        assert_ckpt_ok(
            ckpt_bundle_reader_read(r, name, got, BIG_FLOATS * sizeof(float)));
        for (size_t i = 0; i < BIG_FLOATS; i++)
            if (got[i] != value(v, i, base))
                fail_msg("step %lld: %s[%zu] = %g, expected %g",
                         (long long)step, name, i, (double)got[i],
                         (double)value(v, i, base));
    }
    assert_ckpt_ok(
        ckpt_bundle_reader_read(r, "cb", got, CB_FLOATS * sizeof(float)));
    for (size_t i = 0; i < CB_FLOATS; i++)
        assert_true(got[i] == base - (float)i);
    free(got);
    /* read with its checksum verified: the pieces' CRCs were combined */
    got = malloc(HUGE_FLOATS * sizeof(float));
    assert_non_null(got);
    assert_ckpt_ok(
        ckpt_bundle_reader_read(r, "huge", got, HUGE_FLOATS * sizeof(float)));
    for (size_t i = 0; i < HUGE_FLOATS; i++)
        if (got[i] != base * 0.5f + (float)(i % 1009))
            fail_msg("step %lld: huge[%zu] = %g", (long long)step, i,
                     (double)got[i]);
    ckpt_bundle_reader_free(r);
    free(got);
}

/* Idle writer: the snapshot is split; values rewritten right after
 * save_async returns never reach the checkpoint. */
static void test_split_snapshot_is_consistent(void **state)
{
    fixture *f = *state;
    ckpt_saver *s = open_saver(f, CKPT_BUSY_SKIP);
    for (int round = 0; round < 3; round++) {
        float base = 10.0f * (float)(round + 1);
        fill(f, base);
        assert_ckpt_ok(ckpt_saver_save_async(s, round + 1, NULL));
        fill(f, -base); /* training goes on at once */
        assert_ckpt_ok(ckpt_saver_wait(s, 0, -1));
        expect_checkpoint(f, round + 1, base);
    }
    assert_int_equal(f->cb_calls, 3);
    assert_false(f->cb_wrong_thread);
    ckpt_saver_free(s);
}

/* Busy writer (coalesce): the caller copies everything alone, into the
 * second image, while the first is being written. */
static void test_snapshot_while_writing(void **state)
{
    fixture *f = *state;
    ckpt_saver *s = open_saver(f, CKPT_BUSY_COALESCE);
    fill(f, 1.0f);
    gate_close(&f->gate);
    assert_ckpt_ok(ckpt_saver_save_async(s, 1, NULL));
    gate_wait_blocked(&f->gate);
    fill(f, 2.0f);
    assert_ckpt_ok(ckpt_saver_save_async(s, 2, NULL));
    fill(f, 3.0f);
    gate_open(&f->gate);
    assert_ckpt_ok(ckpt_saver_wait(s, 0, -1));
    expect_checkpoint(f, 1, 1.0f);
    expect_checkpoint(f, 2, 2.0f);
    assert_false(f->cb_wrong_thread);
    ckpt_saver_free(s);
}

/* The writer's help state, read under the saver's lock. */
static int help_state(ckpt_saver *s)
{
    int st;
    pthread_mutex_lock(&s->mu);
    st = s->help_state;
    pthread_mutex_unlock(&s->mu);
    return st;
}

/* Wait (bounded: 60 s) until the writer has taken up the help request
 * (want_done: and copied every piece it could claim). */
static void wait_for_writer(ckpt_saver *s, int want_done)
{
    for (int i = 0; i < 60000; i++) {
        int st = help_state(s);
        if (want_done ? st == 3 /* HELP_DONE */ : st >= 2 /* RUNNING */)
            return;
        usleep(1000);
    }
    fail_msg("the writer did not take up the snapshot within 60 s");
}

/* Sum of every variable: the loop "reading" the state while the writer
 * copies it. */
static double read_state(const fixture *f)
{
    double sum = 0;
    for (int v = 0; v < NBIG; v++)
        for (size_t i = 0; i < BIG_FLOATS; i += 64)
            sum += f->big[v][i];
    for (size_t i = 0; i < HUGE_FLOATS; i += 64)
        sum += f->huge[i];
    return sum;
}

/* Without a fence, nothing changes: save_async copies everything before
 * it returns, with both checksum placements. */
static void test_no_fence_copies_at_trigger(void **state)
{
    fixture *f = *state;
    for (int checksum = 0; checksum < 2; checksum++) {
        ckpt_saver *s = open_saver(f, CKPT_BUSY_SKIP);
        int busy = 0;
        assert_ckpt_ok(ckpt_saver_reserve(s));
        s->cs.checksum = checksum;
        fill(f, 5.0f);
        assert_ckpt_ok(ckpt_saver_save_async(s, 1, NULL));
        assert_null(s->deferred);
        assert_int_equal(s->overlap, 0);
        fill(f, -5.0f);
        assert_ckpt_ok(ckpt_saver_poll(s, &busy));
        assert_ckpt_ok(ckpt_saver_wait(s, 0, -1));
        expect_checkpoint(f, 1, 5.0f);
        ckpt_saver_free(s);
        test_remove_tree(f->dir); /* frees the path */
        f->dir = test_make_temp_dir();
    }
}

/* After a fence: the trigger returns with the copy left to the writer
 * (callbacks done; the copies fuse the checksum even where plain copies
 * were measured faster for the caller), the loop reads, the fence completes the
 * copy whether the writer has not started, is copying, or is done; the test
 * rewrites everything right after the fence; every saved byte is the trigger's.
 */
static void test_fence_completes_overlapped_snapshot(void **state)
{
    fixture *f = *state;
    for (int checksum = 0; checksum < 2; checksum++) {
        ckpt_saver *s = open_saver(f, CKPT_BUSY_SKIP);
        ckpt_saver_metrics m;
        assert_ckpt_ok(ckpt_saver_reserve(s));
        s->cs.checksum = checksum;
        assert_ckpt_ok(ckpt_saver_mutation_fence(s)); /* nothing open */
        assert_int_equal(s->overlap, 1);
        f->cb_calls = 0;
        for (int round = 0; round < 6; round++) {
            float base = 100.0f * (float)(round + 1);
            int64_t step = round + 1;
            uint64_t ticket = 0;
            int busy = 0;
            fill(f, base);
            assert_ckpt_ok(ckpt_saver_save_async(s, step, &ticket));
            assert_true(ticket > 0);
            assert_non_null(s->deferred); /* copy left to the writer */
            /* the writer's copy fuses the checksum whatever was measured */
            assert_int_equal(s->deferred->checksum, 1);
            assert_int_equal(f->cb_calls, round + 1); /* at the trigger */
            (void)read_state(f);
            /* poll neither completes nor dispatches it */
            assert_ckpt_ok(ckpt_saver_poll(s, &busy));
            assert_true(busy);
            assert_non_null(s->deferred);
            if (round % 3 == 1)
                wait_for_writer(s, 0);
            else if (round % 3 == 2)
                wait_for_writer(s, 1);
            assert_ckpt_ok(ckpt_saver_mutation_fence(s));
            assert_null(s->deferred);
            fill(f, -base); /* the optimizer update, right after */
            assert_ckpt_ok(ckpt_saver_wait(s, ticket, -1));
            expect_checkpoint(f, step, base);
        }
        ckpt_saver_get_metrics(s, &m);
        assert_int_equal(m.saves_started, 6);
        assert_int_equal(m.saves_completed, 6);
        assert_false(f->cb_wrong_thread);
        ckpt_saver_free(s);
        test_remove_tree(f->dir); /* frees the path */
        f->dir = test_make_temp_dir();
    }
}

/* An open snapshot is completed by wait, by the next save_async and by
 * free, not only by the fence. */
static void test_other_calls_complete_snapshot(void **state)
{
    fixture *f = *state;
    ckpt_saver *s = open_saver(f, CKPT_BUSY_WAIT);
    assert_ckpt_ok(ckpt_saver_mutation_fence(s));
    fill(f, 1.0f);
    assert_ckpt_ok(ckpt_saver_save_async(s, 1, NULL));
    assert_non_null(s->deferred);
    assert_ckpt_ok(ckpt_saver_wait(s, 0, -1));
    assert_null(s->deferred);
    fill(f, 2.0f);
    expect_checkpoint(f, 1, 1.0f);
    assert_ckpt_ok(ckpt_saver_save_async(s, 2, NULL));
    /* a second trigger completes the first before its own snapshot */
    assert_ckpt_ok(ckpt_saver_save_async(s, 3, NULL));
    assert_ckpt_ok(ckpt_saver_wait(s, 0, -1));
    fill(f, 4.0f);
    expect_checkpoint(f, 2, 2.0f);
    expect_checkpoint(f, 3, 2.0f);
    assert_ckpt_ok(ckpt_saver_save_async(s, 4, NULL));
    assert_non_null(s->deferred);
    ckpt_saver_free(s); /* completes and writes it */
    expect_checkpoint(f, 4, 4.0f);
    assert_false(f->cb_wrong_thread);
}

/* How many pages of [p, p + len) are resident (mincore). */
static size_t resident_pages(void *p, size_t len)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), n = (len + page - 1) / page;
    unsigned char *vec = calloc(n, 1);
    size_t count = 0;
    assert_non_null(vec);
    assert_int_equal(mincore(p, len, vec), 0);
    for (size_t i = 0; i < n; i++)
        count += vec[i] & 1;
    free(vec);
    return count;
}

/* The option fence_from_start: reserve maps the staging image without
 * faulting it in (a saver without the option has every page resident
 * after reserve), and the very first save_async leaves the copy to the
 * writer; the fence completes it, and the checkpoint holds the values at
 * the trigger although every variable changes right after the fence. */
static void test_fence_from_start(void **state)
{
    fixture *f = *state;
    for (int from_start = 0; from_start < 2; from_start++) {
        ckpt_saver *s = open_saver_with(f, CKPT_BUSY_SKIP, from_start);
        size_t pages, resident;
        assert_ckpt_ok(ckpt_saver_reserve(s));
        pages = s->images[0].mapped / (size_t)sysconf(_SC_PAGESIZE);
        resident = resident_pages(s->images[0].ptr, s->images[0].mapped);
        assert_int_equal(resident, from_start ? 0 : pages);
        assert_int_equal(s->overlap, from_start);
        fill(f, 7.0f);
        assert_ckpt_ok(ckpt_saver_save_async(s, 1, NULL));
        if (from_start)
            assert_non_null(s->deferred); /* copy left to the writer */
        else
            assert_null(s->deferred);
        (void)read_state(f);
        assert_ckpt_ok(ckpt_saver_mutation_fence(s));
        assert_null(s->deferred);
        fill(f, -7.0f);
        assert_ckpt_ok(ckpt_saver_wait(s, 0, -1));
        expect_checkpoint(f, 1, 7.0f);
        assert_false(f->cb_wrong_thread);
        ckpt_saver_free(s);
        test_remove_tree(f->dir); /* frees the path */
        f->dir = test_make_temp_dir();
    }
}

/* A synchronous save by a saver with staging memory (an async saver's, as
 * the checkpoint hook's final save at the end of a session) copies the
 * variables into the image and writes it in one piece, instead of one
 * write per variable: the data file's bytes and the index are exactly
 * those a saver without staging memory writes, and the values are those
 * at the call even when the variables change right after it returns. */
static void test_sync_save_through_image(void **state)
{
    fixture *f = *state;
    ckpt_saver *plain = open_saver(f, CKPT_BUSY_SKIP);
    ckpt_saver *staged = open_saver(f, CKPT_BUSY_SKIP);
    const char *files[] = {"model.ckpt-%d.data-00000-of-00001",
                           "model.ckpt-%d.index"};
    uint64_t total = 0;
    size_t plain_largest;
    fill(f, 4.0f);
    assert_ckpt_ok(ckpt_saver_save(plain, 1, NULL));
    plain_largest = f->gate.largest_write;
    assert_ckpt_ok(ckpt_saver_reserve(staged));
    f->gate.largest_write = 0;
    assert_ckpt_ok(ckpt_saver_save(staged, 2, NULL));
    fill(f, -4.0f);
    expect_checkpoint(f, 2, 4.0f);
    total = CB_FLOATS * 4 + NBIG * BIG_FLOATS * 4 + HUGE_FLOATS * 4;
    /* one write of every variable's bytes, where the plain save wrote
     * each variable (or less) at a time */
    assert_int_equal(f->gate.largest_write, total);
    assert_true(plain_largest < total);
    for (int k = 0; k < 2; k++) {
        char a[4096], b[4096], name[128];
        uint8_t *x, *y;
        size_t nx = 0, ny = 0;
        snprintf(name, sizeof(name), files[k], 1);
        snprintf(a, sizeof(a), "%s/%s", f->dir, name);
        snprintf(name, sizeof(name), files[k], 2);
        snprintf(b, sizeof(b), "%s/%s", f->dir, name);
        x = test_read_file(a, &nx);
        y = test_read_file(b, &ny);
        assert_int_equal(nx, ny);
        if (k == 0)
            assert_int_equal(nx, total);
        assert_memory_equal(x, y, nx);
        free(x);
        free(y);
    }
    assert_false(f->cb_wrong_thread);
    ckpt_saver_free(staged);
    ckpt_saver_free(plain);
}

/* Image writes with direct_io 0: the first four (two, when those differ
 * twofold) alternate O_DIRECT and the page cache (timed), then one of the
 * two for good, named in one INFO line; a synchronous save through the image
 * follows the same choice. CKPT_DIRECT_IO_OFF never asks for O_DIRECT, _ON
 * always does. */
static void test_direct_or_buffered_by_measure(void **state)
{
    fixture *f = *state;
    ckpt_saver *s = open_saver(f, CKPT_BUSY_SKIP);
    int chosen, probes, lines = 0;
    fill(f, 1.0f);
    for (int i = 1; i <= 6; i++) {
        assert_ckpt_ok(ckpt_saver_save_async(s, i, NULL));
        assert_ckpt_ok(ckpt_saver_wait(s, 0, -1));
    }
    assert_ckpt_ok(ckpt_saver_save(s, 7, NULL));
    expect_checkpoint(f, 7, 1.0f);
    ckpt_saver_free(s);
    assert_int_equal(f->gate.data_opens, 7);
    assert_true(f->gate.data_direct[0]);
    assert_false(f->gate.data_direct[1]);
    /* two probes more, unless the first two differed twofold */
    probes = f->gate.data_direct[2] && !f->gate.data_direct[3] ? 4 : 2;
    chosen = f->gate.data_direct[probes];
    for (int i = probes; i < 7; i++)
        assert_int_equal(f->gate.data_direct[i], chosen);
    for (int i = 0; i < f->nlog; i++)
        if (strstr(f->log[i], "checkpoint writes: O_DIRECT ")) {
            lines++;
            assert_non_null(strstr(f->log[i], chosen ? "): O_DIRECT from now on"
                                                     : "): the page cache from "
                                                       "now on"));
        }
    assert_int_equal(lines, 1);

    for (int k = 0; k < 2; k++) {
        f->direct_io = k == 0 ? CKPT_DIRECT_IO_OFF : CKPT_DIRECT_IO_ON;
        f->gate.data_opens = 0;
        s = open_saver(f, CKPT_BUSY_SKIP);
        for (int i = 1; i <= 3; i++) {
            assert_ckpt_ok(ckpt_saver_save_async(s, 10 * (k + 1) + i, NULL));
            assert_ckpt_ok(ckpt_saver_wait(s, 0, -1));
        }
        ckpt_saver_free(s);
        assert_int_equal(f->gate.data_opens, 3);
        for (int i = 0; i < 3; i++)
            assert_int_equal(f->gate.data_direct[i], k == 1);
    }
}

/* Where a snapshot's checksum is computed is timed on the first snapshots:
 * they alternate between the checksum fused into the copies and plain
 * copies (the writer checksums the image), fused first; then the choice
 * is logged and kept. Every checkpoint reads back with its checksums
 * verified whichever placement wrote it. */
static void test_checksum_placement_by_timed_snapshots(void **state)
{
    fixture *f = *state;
    ckpt_saver *s;
    int chosen = -1, lines = 0;
    assert_int_equal(unsetenv("CKPT_SNAPSHOT_CHECKSUM"), 0);
    s = open_saver(f, CKPT_BUSY_SKIP);
    assert_ckpt_ok(ckpt_saver_reserve(s));
    for (int i = 0; i < 6; i++) {
        float base = 10.0f * (float)(i + 1);
        if (i < 4)
            assert_int_equal(s->cs.checksum, i % 2 == 0); /* this save's */
        else
            assert_int_equal(s->cs.checksum, chosen);
        fill(f, base);
        assert_ckpt_ok(ckpt_saver_save_async(s, i + 1, NULL));
        fill(f, -base); /* the copy was complete at the trigger */
        assert_ckpt_ok(ckpt_saver_wait(s, 0, -1));
        expect_checkpoint(f, i + 1, base);
        if (i == 3) {
            chosen = s->cs.checksum;
            assert_true(chosen == 0 || chosen == 1);
        }
    }
    assert_int_equal(s->cs.probes, 4);
    for (int i = 0; i < f->nlog; i++)
        if (strstr(f->log[i], "snapshot copies: with the checksum ")) {
            lines++;
            assert_non_null(
                strstr(f->log[i], chosen ? "checksum fused into the copy "
                                           "from now on"
                                         : "checksum computed by the writer "
                                           "from now on"));
        }
    assert_int_equal(lines, 1);

    /* The rule, with times given: plain copies only when clearly (15%)
     * faster than the fused copy, best of each. */
    ckpt__saver_choose_checksum(s);
    assert_int_equal(s->cs.checksum, 1);
    ckpt__saver_snapshot_timed(s, 1, 0.010);
    assert_int_equal(s->cs.checksum, 0);
    ckpt__saver_snapshot_timed(s, 0, 0.009);
    ckpt__saver_snapshot_timed(s, 1, 0.020);
    ckpt__saver_snapshot_timed(s, 0, 0.0088);
    assert_int_equal(s->cs.checksum, 1);     /* 0.0088 is not < 0.85 * 0.010 */
    ckpt__saver_snapshot_timed(s, 0, 0.001); /* probing is over */
    assert_int_equal(s->cs.checksum, 1);
    ckpt__saver_choose_checksum(s);
    ckpt__saver_snapshot_timed(s, 1, 0.010);
    ckpt__saver_snapshot_timed(s, 0, 0.0084);
    ckpt__saver_snapshot_timed(s, 1, 0.011);
    ckpt__saver_snapshot_timed(s, 0, 0.009);
    assert_int_equal(s->cs.checksum, 0);

    /* CKPT_SNAPSHOT_CHECKSUM forces a placement: no probing. */
    assert_int_equal(setenv("CKPT_SNAPSHOT_CHECKSUM", "writer", 1), 0);
    ckpt__saver_choose_checksum(s);
    assert_int_equal(s->cs.checksum, 0);
    ckpt__saver_snapshot_timed(s, 0, 0.010);
    assert_int_equal(s->cs.checksum, 0);
    assert_int_equal(setenv("CKPT_SNAPSHOT_CHECKSUM", "copy", 1), 0);
    ckpt__saver_choose_checksum(s);
    assert_int_equal(s->cs.checksum, 1);
    ckpt__saver_snapshot_timed(s, 1, 0.010);
    assert_int_equal(s->cs.checksum, 1);
    assert_int_equal(unsetenv("CKPT_SNAPSHOT_CHECKSUM"), 0);
    ckpt_saver_free(s);
}

/* The staging image: at a 2 MiB boundary (so that all of it can be huge
 * pages where it is faulted in at once), whole pages of it, zeroed and
 * writable, faulted in at once or not. */
static void test_image_aligned(void **state)
{
    const uint64_t bytes = 5 * MIB + 100;
    const uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    (void)state;
    for (int now = 0; now < 2; now++) {
        ckpt__image img;
        memset(&img, 0, sizeof(img));
        assert_ckpt_ok(ckpt__image_alloc(&img, bytes, 2, 3, now));
        assert_int_equal((uintptr_t)img.ptr % (2 * MIB), 0);
        assert_int_equal(img.mapped,
                         (size_t)((bytes + page - 1) / page * page));
        assert_int_equal(img.ptr[0], 0);
        assert_int_equal(img.ptr[img.mapped - 1], 0);
        memset(img.ptr, 0x77, img.mapped);
        ckpt__image_free(&img);
        assert_null(img.ptr);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan),
        cmocka_unit_test(test_image_aligned),
        cmocka_unit_test(test_shared_work),
        cmocka_unit_test(test_checksum_choice_rule),
        cmocka_unit_test_setup_teardown(test_sync_save_through_image, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_direct_or_buffered_by_measure,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_checksum_placement_by_timed_snapshots, setup, teardown),
        cmocka_unit_test_setup_teardown(test_split_snapshot_is_consistent,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_snapshot_while_writing, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_no_fence_copies_at_trigger, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_fence_completes_overlapped_snapshot, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fence_from_start, setup, teardown),
        cmocka_unit_test_setup_teardown(test_other_calls_complete_snapshot,
                                        setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
