/* Stress of the async saver's threads (run under TSan in CI): every step
 * fences, rewrites every variable right after the fence and triggers a
 * save_async, and every checkpoint that reports success must hold exactly
 * its trigger step's bytes. The variables span the cases the snapshot
 * splits differently: 0 bytes, 1 byte, a variable larger than the 2 MiB
 * copy piece (the state above the 4 MiB at which the writer shares a copy),
 * one above the 64 KiB copied at the trigger, many small ones, one behind a
 * read callback. Each busy policy runs with and without the fence, with a
 * data write failing in the middle (once, ENOSPC), and ends three ways:
 * close while a save is pending, close from the error path, free without
 * close. Outcomes: one per dispatched save, the failure returned exactly
 * once. CKPT_STRESS_STEPS sets the steps per case (the `slow` run). */
#include "saver_test_util.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define BIG_BYTES (((size_t)4 << 20) + 4099)
#define MEDIUM_BYTES ((size_t)200 << 10)
#define CB_BYTES ((size_t)3000)
#define NSMALL 40
#define MAX_STEPS 4096

enum ending { END_CLOSE_PENDING, END_CLOSE_ON_ERROR, END_FREE };

typedef struct stress_case {
    const char *name;
    int policy;
    int fence;
    int fail_step; /* 0: no failure */
    enum ending ending;
} stress_case;

/* Fails the first write into the data file of step `fail_step`. */
typedef struct fail_fs {
    ckpt_fs_forward fwd; /* first: the methods' payload */
    char match[64];      /* "model.ckpt-<step>.data-", "" for none */
    _Atomic(ckpt_file *) target;
    atomic_int failed;
} fail_fs;

typedef struct outcome {
    int64_t step;
    int status;
} outcome;

typedef struct fixture {
    char *dir;
    fail_fs fs;
    int64_t global_step;
    uint8_t empty[1];
    uint8_t one;
    uint8_t *big, *medium, *cb;
    uint8_t small[NSMALL][97 + NSMALL];
    outcome outcomes[MAX_STEPS];
    int noutcomes, nchecked;
    uint8_t *got; /* a read-back buffer of BIG_BYTES */
} fixture;

static int ff_open_write(ckpt_file **out, const char *path, int flags, void *p)
{
    fail_fs *ff = p;
    const ckpt_fs *base = ckpt_fs_forward_base(p);
    int err = base->open_write(out, path, flags, base->payload);
    if (err == 0 && ff->match[0] && strstr(path, ff->match) &&
        !atomic_load(&ff->failed))
        atomic_store(&ff->target, *out);
    return err;
}

static int ff_write(ckpt_file *f, const void *buf, size_t n, void *p)
{
    fail_fs *ff = p;
    const ckpt_fs *base = ckpt_fs_forward_base(p);
    ckpt_file *want = f;
    if (atomic_compare_exchange_strong(&ff->target, &want, NULL)) {
        atomic_store(&ff->failed, 1);
        (void)base->write(f, buf, n / 2, base->payload); /* a short write */
        return ckpt_error_set(CKPT_ENOSPC, "write: injected: disk full");
    }
    return base->write(f, buf, n, base->payload);
}

static uint8_t pattern(int64_t step, int var, size_t off)
{
    return (uint8_t)(step * 131 + var * 17 + (int64_t)off * 7 +
                     (int64_t)(off >> 8));
}

static void fill(uint8_t *p, size_t n, int64_t step, int var)
{
    for (size_t i = 0; i < n; i++)
        p[i] = pattern(step, var, i);
}

static void write_state(fixture *f, int64_t step)
{
    f->global_step = step;
    f->one = pattern(step, 1, 0);
    fill(f->big, BIG_BYTES, step, 2);
    fill(f->medium, MEDIUM_BYTES, step, 3);
    fill(f->cb, CB_BYTES, step, 4);
    for (int i = 0; i < NSMALL; i++)
        fill(f->small[i], (size_t)(97 + i), step, 5 + i);
}

/* What a training step's forward pass does: read the variables. */
static unsigned read_state(const fixture *f)
{
    unsigned sum = f->one;
    for (size_t i = 0; i < BIG_BYTES; i += 4096)
        sum += f->big[i];
    for (size_t i = 0; i < MEDIUM_BYTES; i += 4096)
        sum += f->medium[i];
    return sum;
}

static int cb_read(void *dst, uint64_t offset, size_t n, void *payload)
{
    const fixture *f = payload;
    memcpy(dst, f->cb + offset, n);
    return 0;
}

static void on_done(const ckpt_save_result *r, void *payload)
{
    fixture *f = payload;
    assert_true(f->noutcomes < MAX_STEPS);
    f->outcomes[f->noutcomes].step = r->step;
    f->outcomes[f->noutcomes].status = r->status;
    f->noutcomes++;
}

static void expect_bytes(ckpt_bundle_reader *r, const char *name, size_t n,
                         int64_t step, int var, uint8_t *got)
{
    assert_ckpt_ok(ckpt_bundle_reader_read(r, name, got, n));
    for (size_t i = 0; i < n; i++)
        if (got[i] != pattern(step, var, i))
            fail_msg("step %lld: %s[%zu] = %u, want %u", (long long)step, name,
                     i, got[i], pattern(step, var, i));
}

/* The checkpoint of `step` holds exactly that step's values. */
static void expect_checkpoint(fixture *f, int64_t step)
{
    char prefix[4096], name[32];
    ckpt_bundle_reader *r = NULL;
    int64_t gs = -1;
    snprintf(prefix, sizeof(prefix), "%s/model.ckpt-%lld", f->dir,
             (long long)step);
    assert_ckpt_ok(ckpt_bundle_reader_open(&r, prefix, NULL));
    assert_ckpt_ok(ckpt_bundle_reader_read(r, "global_step", &gs, 8));
    assert_int_equal(gs, step);
    assert_ckpt_ok(ckpt_bundle_reader_read(r, "empty", f->got, 0));
    expect_bytes(r, "one", 1, step, 1, f->got);
    expect_bytes(r, "big", BIG_BYTES, step, 2, f->got);
    expect_bytes(r, "medium", MEDIUM_BYTES, step, 3, f->got);
    expect_bytes(r, "cb", CB_BYTES, step, 4, f->got);
    for (int i = 0; i < NSMALL; i++) {
        snprintf(name, sizeof(name), "small_%02d", i);
        expect_bytes(r, name, (size_t)(97 + i), step, 5 + i, f->got);
    }
    ckpt_bundle_reader_free(r);
}

/* Check the successful outcomes delivered since the last check (retention
 * keeps enough of them: at most two saves finish between two calls). */
static void check_new_outcomes(fixture *f)
{
    for (; f->nchecked < f->noutcomes; f->nchecked++)
        if (f->outcomes[f->nchecked].status == 0)
            expect_checkpoint(f, f->outcomes[f->nchecked].step);
}

static ckpt_saver *open_stress_saver(fixture *f, int policy)
{
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_saver *s = NULL;
    char name[32];
    o.busy_policy = policy;
    o.fs = &f->fs.fwd.fs;
    o.max_to_keep = 6;
    o.on_save_done = on_done;
    o.on_save_done_payload = f;
    assert_ckpt_ok(ckpt_saver_open(&s, f->dir, &o));
    {
        const ckpt_var vars[] = {
            {"global_step",
             CKPT_DT_INT64,
             {0, {0}},
             &f->global_step,
             NULL,
             NULL,
             NULL},
            {"empty", CKPT_DT_UINT8, {1, {0}}, f->empty, NULL, NULL, NULL},
            {"one", CKPT_DT_UINT8, {0, {0}}, &f->one, NULL, NULL, NULL},
            {"big", CKPT_DT_UINT8, {1, {BIG_BYTES}}, f->big, NULL, NULL, NULL},
            {"medium",
             CKPT_DT_UINT8,
             {1, {MEDIUM_BYTES}},
             f->medium,
             NULL,
             NULL,
             NULL},
            {"cb", CKPT_DT_UINT8, {1, {CB_BYTES}}, NULL, cb_read, NULL, f},
        };
        for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
            assert_ckpt_ok(ckpt_saver_add_var(s, &vars[i]));
    }
    for (int i = 0; i < NSMALL; i++) {
        ckpt_var v = {name, CKPT_DT_UINT8, {1, {97 + i}}, f->small[i],
                      NULL, NULL,          NULL};
        snprintf(name, sizeof(name), "small_%02d", i);
        assert_ckpt_ok(ckpt_saver_add_var(s, &v));
    }
    return s;
}

static int stress_steps(void)
{
    const char *env = getenv("CKPT_STRESS_STEPS");
    long n = env ? strtol(env, NULL, 10) : 0;
    return n > 0 && n < MAX_STEPS ? (int)n : 6;
}

/* A call's result: 0, CKPT_EBUSY from a skip, or the injected failure. */
static void note_result(int err, int *failures_returned)
{
    if (err == CKPT_ENOSPC) {
        assert_non_null(strstr(ckpt_error_last()->message, "disk full"));
        (*failures_returned)++;
        return;
    }
    if (err == CKPT_EBUSY)
        return;
    assert_ckpt_ok(err);
}

static void run_case(fixture *f, const stress_case *c)
{
    int steps = stress_steps();
    int dispatched = 0, failures_returned = 0, failed_outcomes = 0;
    int cancelled = 0, last_ok_dispatch = 0;
    ckpt_saver *s;
    int err;
    print_message("case %s: %d steps\n", c->name, steps);
    snprintf(f->fs.match, sizeof(f->fs.match), "model.ckpt-%d.data-",
             c->fail_step);
    if (!c->fail_step)
        f->fs.match[0] = '\0';
    s = open_stress_saver(f, c->policy);
    for (int step = 1; step <= steps; step++) {
        if (c->fence)
            assert_ckpt_ok(ckpt_saver_mutation_fence(s));
        write_state(f, step); /* right after the fence */
        err = ckpt_saver_save_async(s, step, NULL);
        if (err == 0) {
            dispatched++;
            last_ok_dispatch = step;
        }
        note_result(err, &failures_returned);
        f->global_step = -1; /* small: copied at the trigger */
        (void)read_state(f);
        err = ckpt_saver_poll(s, NULL);
        note_result(err, &failures_returned);
        check_new_outcomes(f);
        if (c->ending == END_CLOSE_ON_ERROR && failures_returned > 0)
            break; /* close from the error path */
    }
    if (c->ending == END_FREE) {
        ckpt_saver_free(s); /* writes what is pending and delivers */
    } else {
        note_result(ckpt_saver_close(s, -1), &failures_returned);
        ckpt_saver_free(s);
    }
    check_new_outcomes(f);
    for (int i = 0; i < f->noutcomes; i++) {
        if (f->outcomes[i].status == CKPT_ECANCELED)
            cancelled++;
        else if (f->outcomes[i].status != 0)
            failed_outcomes++;
    }
    /* one outcome per dispatched save; the failure returned once (free
     * returns nothing) */
    print_message("  %d dispatched, %d cancelled, %d failed\n", dispatched,
                  cancelled, failed_outcomes);
    assert_int_equal(f->noutcomes, dispatched);
    assert_int_equal(failed_outcomes, atomic_load(&f->fs.failed));
    if (c->ending != END_FREE)
        assert_int_equal(failures_returned, failed_outcomes);
    if (c->policy != CKPT_BUSY_COALESCE)
        assert_int_equal(cancelled, 0);
    if (c->fail_step && c->policy == CKPT_BUSY_WAIT && c->fail_step <= steps)
        assert_int_equal(atomic_load(&f->fs.failed), 1);
    if (c->ending != END_CLOSE_ON_ERROR && last_ok_dispatch > 0 &&
        f->outcomes[f->noutcomes - 1].status == 0)
        assert_int_equal(f->outcomes[f->noutcomes - 1].step, last_ok_dispatch);
}

static void test_stress_cases(void **state)
{
    static const stress_case cases[] = {
        {"skip, fence, close pending", CKPT_BUSY_SKIP, 1, 0, END_CLOSE_PENDING},
        {"wait, fence, failure, close pending", CKPT_BUSY_WAIT, 1, 4,
         END_CLOSE_PENDING},
        {"coalesce, fence, failure, free", CKPT_BUSY_COALESCE, 1, 3, END_FREE},
        {"wait, fence, failure, close on error", CKPT_BUSY_WAIT, 1, 5,
         END_CLOSE_ON_ERROR},
        {"wait, no fence, free", CKPT_BUSY_WAIT, 0, 0, END_FREE},
        {"coalesce, no fence, failure, close pending", CKPT_BUSY_COALESCE, 0, 2,
         END_CLOSE_PENDING},
        {"skip, no fence, failure, close on error", CKPT_BUSY_SKIP, 0, 1,
         END_CLOSE_ON_ERROR},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        fixture *f = *state;
        f->noutcomes = 0;
        f->nchecked = 0;
        atomic_store(&f->fs.failed, 0);
        atomic_store(&f->fs.target, NULL);
        test_remove_tree(strdup(f->dir)); /* frees the copy */
        assert_int_equal(mkdir(f->dir, 0700), 0);
        run_case(f, &cases[i]);
    }
}

static int setup(void **state)
{
    fixture *f = test_dir_fixture_new(sizeof(*f), offsetof(fixture, dir));
    ckpt_fs_forward_init(&f->fs.fwd, NULL);
    f->fs.fwd.fs.open_write = ff_open_write;
    f->fs.fwd.fs.write = ff_write;
    f->big = malloc(BIG_BYTES);
    f->medium = malloc(MEDIUM_BYTES);
    f->cb = malloc(CB_BYTES);
    f->got = malloc(BIG_BYTES);
    assert_non_null(f->big);
    assert_non_null(f->medium);
    assert_non_null(f->cb);
    assert_non_null(f->got);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    free(f->big);
    free(f->medium);
    free(f->cb);
    free(f->got);
    return test_dir_fixture_teardown(state);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_stress_cases, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
