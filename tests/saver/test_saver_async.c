/* Async saver tests: the snapshot is consistent and taken before
 * save_async returns, the busy policies (skip, wait, coalesce), background
 * failures returned exactly once, close with a timeout, metrics and outcome
 * delivery, a fork()ed child and a second thread refused, a forked child
 * outliving its killed parent holding no lock. Run under TSan
 * in CI. */
#include "saver_test_util.h"

#include "support/fs_gated_remove.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum {
    NVALS = 32768
}; /* 128 KiB: above the small variables an
       overlapped snapshot copies at the trigger */

typedef struct fixture {
    char *dir;
    float vals[NVALS];
    int64_t step;
    gate_fs gate;
    ckpt_save_result outcomes[16];
    char prefixes[16][256];
    int noutcomes;
    pthread_t caller;
    int wrong_thread;
} fixture;

static void on_done(const ckpt_save_result *r, void *payload)
{
    fixture *f = payload;
    if (!pthread_equal(pthread_self(), f->caller))
        f->wrong_thread = 1;
    if (f->noutcomes < 16) {
        f->outcomes[f->noutcomes] = *r;
        snprintf(f->prefixes[f->noutcomes], 256, "%s", r->prefix);
        f->noutcomes++;
    }
}

static int setup(void **state)
{
    fixture *f = test_dir_fixture_new(sizeof(*f), offsetof(fixture, dir));
    gate_fs_init(&f->gate);
    f->caller = pthread_self();
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    gate_fs_dispose(&f->gate);
    return test_dir_fixture_teardown(state);
}

/* A saver on f->dir with options `o` (outcomes go to on_done) and the
 * fixture's two variables registered. */
static ckpt_saver *open_saver_with(fixture *f, ckpt_saver_options *o)
{
    ckpt_saver *s = NULL;
    ckpt_var v = {"w", CKPT_DT_FLOAT, {1, {NVALS}}, f->vals, NULL, NULL, NULL};
    ckpt_var st = {"global_step", CKPT_DT_INT64, {0, {0}}, &f->step,
                   NULL,          NULL,          NULL};
    o->on_save_done = on_done;
    o->on_save_done_payload = f;
    assert_ckpt_ok(ckpt_saver_open(&s, f->dir, o));
    assert_ckpt_ok(ckpt_saver_add_var(s, &v));
    assert_ckpt_ok(ckpt_saver_add_var(s, &st));
    return s;
}

static ckpt_saver *open_saver(fixture *f, int policy, const ckpt_fs *fs)
{
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    o.busy_policy = policy;
    o.fs = fs;
    o.max_to_keep = CKPT_KEEP_ALL;
    return open_saver_with(f, &o);
}

static void fill(fixture *f, float base, int64_t step)
{
    for (int i = 0; i < NVALS; i++)
        f->vals[i] = base + (float)i;
    f->step = step;
}

/* Read back checkpoint <dir>/model.ckpt-<step> and check it holds `base`. */
static void expect_checkpoint(fixture *f, int64_t step, float base)
{
    char prefix[4096];
    ckpt_bundle_reader *r = NULL;
    float *got = malloc(sizeof(float) * NVALS);
    int64_t got_step = -1;
    snprintf(prefix, sizeof(prefix), "%s/model.ckpt-%lld", f->dir,
             (long long)step);
    assert_ckpt_ok(ckpt_bundle_reader_open(&r, prefix, NULL));
    assert_ckpt_ok(ckpt_bundle_reader_read(r, "w", got, sizeof(float) * NVALS));
    assert_ckpt_ok(
        ckpt_bundle_reader_read(r, "global_step", &got_step, sizeof(got_step)));
    assert_int_equal(got_step, step);
    for (int i = 0; i < NVALS; i++)
        if (got[i] != base + (float)i)
            fail_msg("%s: w[%d] = %g, want %g", prefix, i, (double)got[i],
                     (double)(base + (float)i));
    ckpt_bundle_reader_free(r);
    free(got);
}

/* B58/B59: save_async returns before any file I/O (the writer is held at
 * the gate) and the values written are the snapshot, although the loop
 * rewrites the state right after the call. */
static void test_b58_b59_snapshot_then_write(void **state)
{
    fixture *f = *state;
    ckpt_saver *s = open_saver(f, CKPT_BUSY_SKIP, &f->gate.fwd.fs);
    uint64_t ticket = 0;
    int busy = 0;
    fill(f, 100.0f, 10);
    gate_close(&f->gate);
    assert_ckpt_ok(ckpt_saver_save_async(s, 10, &ticket));
    assert_true(ticket > 0);
    fill(f, -5.0f, 11); /* training goes on, mutating everything */
    gate_wait_blocked(&f->gate);
    assert_ckpt_ok(ckpt_saver_poll(s, &busy));
    assert_int_equal(busy, 1);
    assert_false(file_exists(f->dir, "model.ckpt-10.index"));
    gate_open(&f->gate);
    assert_ckpt_ok(ckpt_saver_wait(s, ticket, -1));
    /* a ticket no save_async gave is refused, not waited for */
    assert_ckpt_error(ckpt_saver_wait(s, ticket + 1, -1), CKPT_EINVAL,
                      "was never issued");
    expect_checkpoint(f, 10, 100.0f);
    assert_int_equal(f->noutcomes, 1);
    assert_int_equal(f->outcomes[0].status, 0);
    assert_int_equal(f->outcomes[0].step, 10);
    assert_int_equal(f->outcomes[0].ticket, ticket);
    assert_true(f->outcomes[0].bytes > NVALS * 4);
    assert_false(f->wrong_thread);
    ckpt_saver_free(s);
}

/* B60: SKIP counts the trigger, returns EBUSY and copies nothing; the next
 * trigger once the writer is free is saved. */
static void test_b60_skip(void **state)
{
    fixture *f = *state;
    ckpt_saver *s = open_saver(f, CKPT_BUSY_SKIP, &f->gate.fwd.fs);
    ckpt_saver_metrics m;
    fill(f, 1.0f, 5);
    gate_close(&f->gate);
    assert_ckpt_ok(ckpt_saver_save_async(s, 5, NULL));
    gate_wait_blocked(&f->gate);
    fill(f, 2.0f, 6);
    assert_ckpt_error(ckpt_saver_save_async(s, 6, NULL), CKPT_EBUSY,
                      "step 6 skipped");
    /* and says what to do about it */
    assert_non_null(strstr(ckpt_error_last()->message,
                           "(ckpt_saver_wait waits for it; the saver's "
                           "busy_policy option chooses to wait or coalesce "
                           "instead)"));
    ckpt_saver_get_metrics(s, &m);
    assert_int_equal(m.saves_skipped, 1);
    assert_int_equal(m.saves_started, 1);
    gate_open(&f->gate);
    assert_ckpt_ok(ckpt_saver_wait(s, 0, -1));
    fill(f, 3.0f, 7);
    assert_ckpt_ok(ckpt_saver_save_async(s, 7, NULL));
    assert_ckpt_ok(ckpt_saver_wait(s, 0, -1));
    expect_checkpoint(f, 5, 1.0f);
    expect_checkpoint(f, 7, 3.0f);
    assert_false(file_exists(f->dir, "model.ckpt-6.index"));
    ckpt_saver_get_metrics(s, &m);
    assert_int_equal(m.saves_completed, 2);
    assert_int_equal(m.last_saved_step, 7);
    ckpt_saver_free(s);
}

struct opener {
    gate_fs *gate;
    int delay_ms;
};

static void *open_later(void *arg)
{
    struct opener *o = arg;
    usleep((useconds_t)o->delay_ms * 1000);
    gate_open(o->gate);
    return NULL;
}

/* B61: WAIT blocks until the previous write ends, then snapshots. */
static void test_b61_wait(void **state)
{
    fixture *f = *state;
    ckpt_saver *s = open_saver(f, CKPT_BUSY_WAIT, &f->gate.fwd.fs);
    ckpt_saver_metrics m;
    struct opener op = {&f->gate, 50};
    pthread_t t;
    fill(f, 1.0f, 1);
    gate_close(&f->gate);
    assert_ckpt_ok(ckpt_saver_save_async(s, 1, NULL));
    gate_wait_blocked(&f->gate);
    pthread_create(&t, NULL, open_later, &op);
    fill(f, 2.0f, 2);
    assert_ckpt_ok(ckpt_saver_save_async(s, 2, NULL)); /* waits for step 1 */
    ckpt_saver_get_metrics(s, &m);
    assert_true(m.saves_completed >= 1);
    assert_int_equal(m.saves_skipped, 0);
    pthread_join(t, NULL);
    assert_ckpt_ok(ckpt_saver_wait(s, 0, -1));
    expect_checkpoint(f, 1, 1.0f);
    expect_checkpoint(f, 2, 2.0f);
    ckpt_saver_free(s);
}

/* B62: COALESCE keeps at most one pending snapshot; a newer trigger replaces
 * it (counted, reported as canceled); memory is two images. */
static void test_b62_coalesce(void **state)
{
    fixture *f = *state;
    ckpt_saver *s = open_saver(f, CKPT_BUSY_COALESCE, &f->gate.fwd.fs);
    ckpt_saver_metrics m;
    uint64_t t2 = 0, t3 = 0;
    assert_int_equal(ckpt_saver_staging_bytes(s), 2 * (NVALS * 4 + 8));
    fill(f, 1.0f, 1);
    gate_close(&f->gate);
    assert_ckpt_ok(ckpt_saver_save_async(s, 1, NULL));
    gate_wait_blocked(&f->gate);
    fill(f, 2.0f, 2);
    assert_ckpt_ok(ckpt_saver_save_async(s, 2, &t2));
    fill(f, 3.0f, 3);
    assert_ckpt_ok(ckpt_saver_save_async(s, 3, &t3));
    ckpt_saver_get_metrics(s, &m);
    assert_int_equal(m.saves_coalesced, 1);
    assert_int_equal(m.saves_started, 2); /* B69: one counter per trigger */
    fill(f, 4.0f, 4);
    gate_open(&f->gate);
    assert_ckpt_ok(ckpt_saver_wait(s, 0, -1));
    expect_checkpoint(f, 1, 1.0f);
    expect_checkpoint(f, 3, 3.0f);
    assert_false(file_exists(f->dir, "model.ckpt-2.index"));
    assert_int_equal(f->noutcomes, 3);
    for (int i = 0; i < f->noutcomes; i++) {
        if (f->outcomes[i].ticket == t2)
            assert_int_equal(f->outcomes[i].status, CKPT_ECANCELED);
        else
            assert_int_equal(f->outcomes[i].status, 0);
    }
    ckpt_saver_get_metrics(s, &m);
    assert_int_equal(m.saves_completed, 2);
    assert_int_equal(m.saves_failed, 0);
    ckpt_saver_free(s);
}

/* B63/B69: a background failure is returned once by the next call, counted
 * once; the previous checkpoint stays the latest; nothing is left behind. */
static void test_b63_background_failure_once(void **state)
{
    fixture *f = *state;
    ckpt_fs_fault *ff = NULL;
    ckpt_saver *s;
    ckpt_saver_metrics m;
    ckpt_buf latest = CKPT_BUF_INIT;
    assert_ckpt_ok(ckpt_fs_fault_new(&ff, NULL));
    s = open_saver(f, CKPT_BUSY_SKIP, ckpt_fs_fault_fs(ff));
    fill(f, 1.0f, 1);
    assert_ckpt_ok(ckpt_saver_save(s, 1, NULL));
    ckpt_fs_fault_fail(ff, 1, CKPT_FS_OP_BIT(CKPT_FS_OP_WRITE), ENOSPC, 1, 0);
    fill(f, 2.0f, 2);
    assert_ckpt_ok(ckpt_saver_save_async(s, 2, NULL));
    /* Wait for the outcome without consuming the error. */
    for (;;) {
        ckpt_saver_get_metrics(s, &m);
        if (m.saves_failed + m.saves_completed >= 2)
            break;
        usleep(1000);
    }
    assert_ckpt_error(ckpt_saver_poll(s, NULL), CKPT_ENOSPC, "step 2");
    assert_non_null(strstr(ckpt_error_last()->message, "model.ckpt-2"));
    assert_ckpt_ok(ckpt_saver_poll(s, NULL)); /* exactly once */
    ckpt_saver_get_metrics(s, &m);
    assert_int_equal(m.saves_failed, 1);
    assert_int_equal(m.saves_completed, 1);
    assert_int_equal(m.last_saved_step, 1);
    ckpt_fs_fault_clear(ff);
    assert_ckpt_ok(ckpt_saver_latest(s, &latest));
    assert_non_null(strstr(latest.ptr, "model.ckpt-1"));
    assert_int_equal(count_files(f->dir, "tempstate"), 0);
    assert_false(file_exists(f->dir, "model.ckpt-2.index"));
    assert_false(file_exists(f->dir, "model.ckpt-2.data-00000-of-00001"));
    ckpt_saver_free(s);
    ckpt_fs_fault_free(ff);
    ckpt_buf_dispose(&latest);
}

/* The failure is also returned by save_async, which then dispatches
 * nothing. */
static void test_background_failure_returned_by_next_save(void **state)
{
    fixture *f = *state;
    ckpt_fs_fault *ff = NULL;
    ckpt_saver *s;
    ckpt_saver_metrics m;
    assert_ckpt_ok(ckpt_fs_fault_new(&ff, NULL));
    s = open_saver(f, CKPT_BUSY_SKIP, ckpt_fs_fault_fs(ff));
    /* the save's second sync: its data file's (the first is its pending
     * note's, which a save does without when it fails) */
    ckpt_fs_fault_fail(ff, 2, CKPT_FS_OP_BIT(CKPT_FS_OP_SYNC), EIO, 0, 0);
    fill(f, 1.0f, 1);
    assert_ckpt_ok(ckpt_saver_save_async(s, 1, NULL));
    for (int i = 0; i < 30000; i++) {
        ckpt_saver_get_metrics(s, &m);
        if (m.saves_failed == 1)
            break;
        usleep(1000);
    }
    assert_int_equal(m.saves_failed, 1);
    assert_ckpt_error(ckpt_saver_save_async(s, 2, NULL), CKPT_EIO, "step 1");
    ckpt_saver_get_metrics(s, &m);
    assert_int_equal(m.saves_started, 1);
    fill(f, 1.0f, 3);
    assert_ckpt_ok(ckpt_saver_save_async(s, 3, NULL));
    assert_ckpt_ok(ckpt_saver_close(s, -1));
    expect_checkpoint(f, 3, 1.0f);
    ckpt_saver_free(s);
    ckpt_fs_fault_free(ff);
}

/* B65: close waits at most the timeout and reports ETIMEDOUT; the previous
 * checkpoint stays the latest. */
static void test_b65_close_timeout(void **state)
{
    fixture *f = *state;
    ckpt_saver *s = open_saver(f, CKPT_BUSY_SKIP, &f->gate.fwd.fs);
    ckpt_buf latest = CKPT_BUF_INIT;
    fill(f, 1.0f, 1);
    assert_ckpt_ok(ckpt_saver_save(s, 1, NULL));
    gate_close(&f->gate);
    fill(f, 2.0f, 2);
    assert_ckpt_ok(ckpt_saver_save_async(s, 2, NULL));
    gate_wait_blocked(&f->gate);
    assert_ckpt_error(ckpt_saver_close(s, 0.05), CKPT_ETIMEDOUT, "timed out");
    assert_ckpt_ok(ckpt_latest_checkpoint(&latest, NULL, f->dir));
    assert_non_null(strstr(latest.ptr, "model.ckpt-1"));
    assert_ckpt_error(ckpt_saver_save_async(s, 3, NULL), CKPT_ESTATE, "closed");
    gate_open(&f->gate);
    ckpt_saver_free(s); /* joins the writer, which finishes step 2 */
    expect_checkpoint(f, 2, 2.0f);
    ckpt_buf_dispose(&latest);
}

/* B63/B65: close's timeout holds also when an earlier background failure
 * is waiting to be returned. close took that failure from its wait, which
 * had timed out, and went on to join the writer, blocked in the next write
 * for as long as that write took; now it returns CKPT_ETIMEDOUT in time and
 * the failure stays for the next call, returned there once. */
static void test_close_timeout_with_failure_pending(void **state)
{
    fixture *f = *state;
    static held_opens h;
    ckpt_saver *s;
    ckpt_saver_metrics m;
    held_opens_init(&h);
    s = open_saver(f, CKPT_BUSY_COALESCE, &h.fwd.fs);
    fill(f, 1.0f, 1);
    assert_ckpt_ok(ckpt_saver_save_async(s, 1, NULL)); /* held, then fails */
    held_opens_wait(&h, &h.held1);
    fill(f, 2.0f, 2);
    assert_ckpt_ok(ckpt_saver_save_async(s, 2, NULL)); /* pending */
    atomic_store(&h.release1, 1);
    held_opens_wait(&h, &h.held2);
    ckpt_saver_get_metrics(s, &m);
    assert_int_equal(m.saves_failed, 1); /* step 1's, not returned yet */
    assert_ckpt_error(ckpt_saver_close(s, 0.05), CKPT_ETIMEDOUT, "timed out");
    assert_int_equal(atomic_load(&h.gave_up), 0); /* close did not join */
    atomic_store(&h.release2, 1);
    assert_ckpt_error(ckpt_saver_wait(s, 0, -1), CKPT_EIO, "step 1");
    assert_non_null(strstr(ckpt_error_last()->message, "injected failure"));
    assert_ckpt_ok(ckpt_saver_wait(s, 0, -1)); /* exactly once */
    ckpt_saver_free(s);
    expect_checkpoint(f, 2, 2.0f);
    assert_int_equal(f->noutcomes, 2);
    assert_int_equal(f->outcomes[0].status, CKPT_EIO);
    assert_int_equal(f->outcomes[1].status, 0);
}

/* Read callbacks serve memory the library cannot read directly. */
static int read_cb(void *dst, uint64_t offset, size_t n, void *payload)
{
    memcpy(dst, (const uint8_t *)payload + offset, n);
    return 0;
}

static int failing_read_cb(void *dst, uint64_t offset, size_t n, void *payload)
{
    (void)dst;
    (void)offset;
    (void)n;
    (void)payload;
    return -1;
}

/* Set when the saver logs that an overlapped snapshot was left to the
 * writer until the next fence. */
static atomic_int deferred_logged;

static void watch_deferral(int level, const char *message, void *payload)
{
    (void)level;
    (void)payload;
    if (strstr(message, "the writer copies until the next mutation fence"))
        atomic_store(&deferred_logged, 1);
}

/* Wait (at most 30 s) until a remove is held at the gate. */
static void wait_remove_held(ckpt_fs_gated_remove *g)
{
    time_t until = time(NULL) + 30;
    while (atomic_load(&g->waiting) == 0 && time(NULL) < until)
        usleep(1000);
    assert_int_equal(atomic_load(&g->waiting), 1);
    assert_int_equal(atomic_load(&g->timed_out), 0);
}

/* Retention's deletions are not part of a save: a write's outcome is
 * recorded once its checkpoint is named, and the writer deletes what it
 * evicted afterwards (deleting a big file can take a third of a write); a
 * synchronous save returns without waiting for its deletion. wait waits
 * for it, a trigger meanwhile still takes its snapshot, and a checkpoint
 * that reuses an evicted name is written after the deletion. */
static void test_retention_deletes_after_the_save(void **state)
{
    fixture *f = *state;
    static ckpt_fs_gated_remove g;
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_saver *s;
    ckpt_buf latest = CKPT_BUF_INIT;
    ckpt_saver_metrics m;
    int busy = 1;
    ckpt_fs_gated_remove_init(&g);
    o.fs = &g.fwd.fs;
    o.max_to_keep = 1;
    o.log = watch_deferral;
    o.log_level = CKPT_LOG_DEBUG;
    s = open_saver_with(f, &o);
    fill(f, 1.0f, 1);
    assert_ckpt_ok(ckpt_saver_save_async(s, 1, NULL));
    assert_ckpt_ok(ckpt_saver_wait(s, 0, -1));

    /* The write of step 2 evicts step 1, whose deletion is held. */
    atomic_store(&g.closed, 1);
    fill(f, 2.0f, 2);
    assert_ckpt_ok(ckpt_saver_save_async(s, 2, NULL));
    wait_remove_held(&g);
    assert_ckpt_ok(ckpt_saver_poll(s, &busy));
    assert_int_equal(busy, 0);
    assert_int_equal(f->noutcomes, 2);
    assert_int_equal(f->outcomes[1].status, 0);
    assert_int_equal(f->outcomes[1].step, 2);
    ckpt_saver_get_metrics(s, &m);
    assert_int_equal(m.saves_completed, 2);
    assert_ckpt_ok(ckpt_saver_latest(s, &latest));
    assert_non_null(strstr(latest.ptr, "model.ckpt-2"));
    assert_ckpt_error(ckpt_saver_wait(s, 0, 0.05), CKPT_ETIMEDOUT, "timed out");
    /* A trigger is not skipped, and an overlapped one still leaves the
     * copy to the writer, which takes it up after the deletion; its write
     * follows the deletion. */
    assert_ckpt_ok(ckpt_saver_mutation_fence(s)); /* fence mode from now on */
    fill(f, 3.0f, 3);
    atomic_store(&deferred_logged, 0);
    assert_ckpt_ok(ckpt_saver_save_async(s, 3, NULL));
    assert_int_equal(atomic_load(&deferred_logged), 1);
    assert_false(file_exists(f->dir, "model.ckpt-3.index"));
    atomic_store(&g.closed, 0);
    assert_ckpt_ok(ckpt_saver_mutation_fence(s));
    fill(f, -1.0f, 99); /* the optimizer's update, after the fence */
    assert_ckpt_ok(ckpt_saver_wait(s, 0, -1));
    assert_int_equal(count_files(f->dir, "model.ckpt-1."), 0);
    assert_int_equal(count_files(f->dir, "model.ckpt-2."), 0);
    expect_checkpoint(f, 3, 3.0f);

    /* A synchronous save returns while its deletion (step 3) is held; a
     * save that reuses the name is written after that deletion. */
    atomic_store(&g.closed, 1);
    fill(f, 4.0f, 4);
    assert_ckpt_ok(ckpt_saver_save(s, 4, NULL));
    wait_remove_held(&g);
    fill(f, 5.0f, 3);
    assert_ckpt_ok(ckpt_saver_save_async(s, 3, NULL));
    assert_ckpt_ok(ckpt_saver_mutation_fence(s));
    atomic_store(&g.closed, 0);
    assert_ckpt_ok(ckpt_saver_close(s, -1));
    assert_int_equal(atomic_load(&g.timed_out), 0);
    assert_int_equal(count_files(f->dir, "model.ckpt-4."), 0);
    expect_checkpoint(f, 3, 5.0f);
    assert_ckpt_ok(ckpt_saver_latest(s, &latest));
    assert_non_null(strstr(latest.ptr, "model.ckpt-3"));
    ckpt_buf_dispose(&latest);
    ckpt_saver_free(s);
}

/* The error lines a saver logged, one after another (the caller's
 * thread: a snapshot's failure is logged there). */
static void note_errors(int level, const char *message, void *payload)
{
    char *errors = payload;
    size_t used = strlen(errors);
    if (level == CKPT_LOG_ERROR)
        snprintf(errors + used, 1024 - used, "%s\n", message);
}

static void test_read_callbacks(void **state)
{
    fixture *f = *state;
    ckpt_saver *s = NULL;
    double device[5] = {1.5, 2.5, 3.5, 4.5, 5.5};
    double back[5] = {0};
    ckpt_var v = {"dev", CKPT_DT_DOUBLE, {1, {5}}, back, read_cb, NULL, device};
    ckpt_var bad = {"bad",           CKPT_DT_DOUBLE, {1, {5}}, NULL,
                    failing_read_cb, NULL,           NULL};
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    char errors[1024] = "";
    assert_ckpt_ok(ckpt_saver_open(&s, f->dir, NULL));
    assert_ckpt_ok(ckpt_saver_add_var(s, &v));
    assert_ckpt_ok(ckpt_saver_save_async(s, 1, NULL));
    assert_ckpt_ok(ckpt_saver_wait(s, 0, -1));
    assert_ckpt_ok(ckpt_saver_restore_latest(s, NULL));
    assert_memory_equal(back, device, sizeof(device));
    ckpt_saver_free(s);
    o.log = note_errors;
    o.log_payload = errors;
    assert_ckpt_ok(ckpt_saver_open(&s, f->dir, &o));
    assert_ckpt_ok(ckpt_saver_add_var(s, &bad));
    assert_ckpt_error(ckpt_saver_save_async(s, 2, NULL), CKPT_EUSER, "'bad'");
    /* logged as the sync save's failure is (it was only returned) */
    assert_non_null(strstr(errors, "save of step 2 failed: "));
    assert_non_null(strstr(errors, "'bad'"));
    errors[0] = '\0';
    assert_ckpt_error(ckpt_saver_save(s, 2, NULL), CKPT_EUSER, "'bad'");
    assert_non_null(strstr(errors, "save of step 2 failed: "));
    assert_false(file_exists(f->dir, "model.ckpt-2.index"));
    ckpt_saver_free(s);
}

/* A log callback that calls back into the saver while the writer thread
 * logs: each call is refused with CKPT_ESTATE on that thread (a save or a
 * wait there waited for itself, and free joined the thread from itself:
 * the process hung); the saver goes on working for its own thread. */
typedef struct reentry {
    ckpt_saver *s;
    pthread_t caller;
    pthread_mutex_t mu;
    int calls, refused, other;
} reentry;

static void reenter_from_log(int level, const char *message, void *payload)
{
    reentry *r = payload;
    ckpt_saver *s;
    int rc[3];
    (void)level;
    (void)message;
    if (pthread_equal(pthread_self(), r->caller))
        return;
    pthread_mutex_lock(&r->mu);
    s = r->s;
    pthread_mutex_unlock(&r->mu);
    if (!s)
        return;
    rc[0] = ckpt_saver_save(s, 99, NULL);
    rc[1] = ckpt_saver_wait(s, 0, -1.0);
    rc[2] = ckpt_saver_close(s, -1.0);
    ckpt_saver_free(s); /* refused too: the saver stays */
    pthread_mutex_lock(&r->mu);
    r->calls++;
    for (int i = 0; i < 3; i++) {
        if (rc[i] == CKPT_ESTATE &&
            strstr(ckpt_error_last()->message, "own writer thread"))
            r->refused++;
        else
            r->other++;
    }
    pthread_mutex_unlock(&r->mu);
}

static void test_saver_calls_from_writer_thread_refused(void **state)
{
    fixture *f = *state;
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    reentry r;
    ckpt_saver *s;
    memset(&r, 0, sizeof(r));
    r.caller = pthread_self();
    pthread_mutex_init(&r.mu, NULL);
    o.log = reenter_from_log;
    o.log_payload = &r;
    o.log_level = CKPT_LOG_DEBUG;
    s = open_saver_with(f, &o);
    pthread_mutex_lock(&r.mu);
    r.s = s;
    pthread_mutex_unlock(&r.mu);
    fill(f, 1.0f, 1);
    assert_ckpt_ok(ckpt_saver_save_async(s, 1, NULL));
    assert_ckpt_ok(ckpt_saver_wait(s, 0, -1.0));
    fill(f, 2.0f, 2);
    assert_ckpt_ok(ckpt_saver_save_async(s, 2, NULL));
    assert_ckpt_ok(ckpt_saver_close(s, -1.0));
    pthread_mutex_lock(&r.mu);
    r.s = NULL;
    assert_true(r.calls > 0);
    assert_int_equal(r.refused, 3 * r.calls);
    assert_int_equal(r.other, 0);
    pthread_mutex_unlock(&r.mu);
    ckpt_saver_free(s);
    pthread_mutex_destroy(&r.mu);
    expect_checkpoint(f, 1, 1.0f);
    expect_checkpoint(f, 2, 2.0f);
}

/* on_save_done freeing its saver: refused (an ERROR line says so), the
 * saver stays usable and is freed afterwards; it was a use after free. */
typedef struct freer {
    ckpt_saver *s;
    int calls, refused_logged;
} freer;

static void free_in_done(const ckpt_save_result *r, void *payload)
{
    freer *fr = payload;
    (void)r;
    fr->calls++;
    ckpt_saver_free(fr->s);
}

static void note_refusal(int level, const char *message, void *payload)
{
    freer *fr = payload;
    if (level == CKPT_LOG_ERROR && strstr(message, "called from on_save_done"))
        fr->refused_logged++; /* on the caller's thread: no lock needed */
}

static void test_free_from_on_save_done_refused(void **state)
{
    fixture *f = *state;
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    freer fr = {NULL, 0, 0};
    ckpt_var v = {"w", CKPT_DT_FLOAT, {1, {NVALS}}, f->vals, NULL, NULL, NULL};
    o.on_save_done = free_in_done;
    o.on_save_done_payload = &fr;
    o.log = note_refusal;
    o.log_payload = &fr;
    assert_ckpt_ok(ckpt_saver_open(&fr.s, f->dir, &o));
    assert_ckpt_ok(ckpt_saver_add_var(fr.s, &v));
    fill(f, 3.0f, 1);
    assert_ckpt_ok(ckpt_saver_save(fr.s, 1, NULL));
    assert_ckpt_ok(ckpt_saver_save_async(fr.s, 2, NULL));
    assert_ckpt_ok(ckpt_saver_wait(fr.s, 0, -1.0));
    assert_int_equal(fr.calls, 2);
    assert_int_equal(fr.refused_logged, 2);
    assert_int_equal(ckpt_saver_num_checkpoints(fr.s), 2);
    ckpt_saver_set_on_save_done(fr.s, NULL, NULL);
    ckpt_saver_free(fr.s);
    /* A saver with no log says it on stderr: free returns nothing, and the
     * refusal was otherwise silent. */
    {
        char path[4200], *text;
        test_stderr capture;
        snprintf(path, sizeof(path), "%s/stderr.txt", f->dir);
        o.log = NULL;
        o.log_payload = NULL;
        fr.calls = 0;
        assert_ckpt_ok(ckpt_saver_open(&fr.s, f->dir, &o));
        assert_ckpt_ok(ckpt_saver_add_var(fr.s, &v));
        capture = test_stderr_begin(path);
        assert_ckpt_ok(ckpt_saver_save(fr.s, 3, NULL));
        text = test_stderr_end(&capture);
        assert_int_equal(fr.calls, 1);
        assert_non_null(strstr(text, "free: called from on_save_done"));
        assert_non_null(strstr(text, f->dir));
        free(text);
        ckpt_saver_set_on_save_done(fr.s, NULL, NULL);
        ckpt_saver_free(fr.s);
    }
}

/* COALESCE: the save in flight and the pending one both fail before the
 * caller asks; the next call returns both, once (the second was dropped). */
static void test_two_failures_returned_together(void **state)
{
    fixture *f = *state;
    ckpt_saver *s = open_saver(f, CKPT_BUSY_COALESCE, &f->gate.fwd.fs);
    const char *msg;
    fill(f, 1.0f, 1);
    gate_close(&f->gate);
    assert_ckpt_ok(ckpt_saver_save_async(s, 1, NULL));
    gate_wait_blocked(&f->gate);
    fill(f, 2.0f, 2);
    assert_ckpt_ok(ckpt_saver_save_async(s, 2, NULL)); /* pending */
    pthread_mutex_lock(&f->gate.mu);
    f->gate.fail_writes = 1;
    pthread_mutex_unlock(&f->gate.mu);
    gate_open(&f->gate);
    assert_ckpt_error(ckpt_saver_wait(s, 0, -1), CKPT_EIO, "injected failure");
    msg = ckpt_error_last()->message;
    assert_non_null(strstr(msg, "model.ckpt-1"));
    assert_non_null(strstr(msg, "; then another save failed too: "));
    assert_non_null(strstr(strstr(msg, "failed too"), "model.ckpt-2"));
    assert_ckpt_ok(ckpt_saver_wait(s, 0, -1)); /* returned once */
    pthread_mutex_lock(&f->gate.mu);
    f->gate.fail_writes = 0;
    pthread_mutex_unlock(&f->gate.mu);
    fill(f, 3.0f, 3);
    assert_ckpt_ok(ckpt_saver_save(s, 3, NULL));
    expect_checkpoint(f, 3, 3.0f);
    ckpt_saver_free(s);
}

/* add_var checks and the freeze after the first save. */
static void test_add_var_checks(void **state)
{
    fixture *f = *state;
    ckpt_saver *s = NULL;
    float x[2];
    ckpt_var ok = {"x", CKPT_DT_FLOAT, {1, {2}}, x, NULL, NULL, NULL};
    ckpt_var str = {"s", CKPT_DT_STRING, {0, {0}}, x, NULL, NULL, NULL};
    ckpt_var neg = {"n", CKPT_DT_FLOAT, {1, {-2}}, x, NULL, NULL, NULL};
    ckpt_var nodata = {"d", CKPT_DT_FLOAT, {1, {2}}, NULL, NULL, NULL, NULL};
    assert_ckpt_ok(ckpt_saver_open(&s, f->dir, NULL));
    assert_ckpt_error(ckpt_saver_save(s, 1, NULL), CKPT_EINVAL, "no variables");
    assert_ckpt_ok(ckpt_saver_add_var(s, &ok));
    assert_ckpt_error(ckpt_saver_add_var(s, &ok), CKPT_EEXISTS, "'x'");
    assert_ckpt_error(ckpt_saver_add_var(s, &str), CKPT_ENOTSUP, "'s'");
    assert_ckpt_error(ckpt_saver_add_var(s, &neg), CKPT_EINVAL, "'n'");
    assert_ckpt_error(ckpt_saver_add_var(s, &nodata), CKPT_EINVAL, "'d'");
    assert_ckpt_ok(ckpt_saver_save(s, 1, NULL));
    ok.name = "y";
    assert_ckpt_error(ckpt_saver_add_var(s, &ok), CKPT_ESTATE, "'y'");
    ckpt_saver_free(s);
}

static int read_nothing(void *dst, uint64_t offset, size_t n, void *payload)
{
    (void)dst;
    (void)offset;
    (void)n;
    (void)payload;
    return 0;
}

/* Variables each of a size that fits, whose sum does not (2^61 bytes
 * each, behind read callbacks): the one past the limit is refused, naming
 * it, and the staging size stays the sum of those accepted (it once
 * wrapped around, and save_async overran a 16-byte image). */
static void test_add_var_total_size_limit(void **state)
{
    fixture *f = *state;
    ckpt_saver *s = NULL;
    ckpt_var a = {"a",  CKPT_DT_DOUBLE, {1, {INT64_C(1) << 58}},
                  NULL, read_nothing,   NULL,
                  NULL};
    ckpt_var b = a;
    b.name = "b";
    assert_ckpt_ok(ckpt_saver_open(&s, f->dir, NULL));
    assert_ckpt_ok(ckpt_saver_add_var(s, &a));
    assert_ckpt_error(ckpt_saver_add_var(s, &b), CKPT_EINVAL,
                      "add_var 'b': 2305843009213693952 bytes on top of the "
                      "2305843009213693952 already registered exceed");
    /* naming the saver by its directory */
    assert_non_null(strstr(ckpt_error_last()->message, f->dir));
    assert_true(ckpt_saver_staging_bytes(s) == UINT64_C(1) << 61);
    ckpt_saver_free(s);
}

/* Copy the regular files of `from` into the new directory `to` (what a
 * crash at this moment would leave on disk). */
static void copy_dir(const char *from, const char *to)
{
    DIR *d = opendir(from);
    struct dirent *de;
    assert_non_null(d);
    assert_int_equal(mkdir(to, 0755), 0);
    while ((de = readdir(d)) != NULL) {
        char *src, *dst;
        uint8_t *data;
        size_t n = 0;
        if (de->d_type != DT_REG)
            continue;
        src = test_path(from, de->d_name);
        dst = test_path(to, de->d_name);
        data = test_read_file(src, &n);
        test_write_file(dst, data, n);
        free(data);
        free(src);
        free(dst);
    }
    closedir(d);
}

/* The note of a save in progress: while retention's deletion of the
 * evicted checkpoint is held, checkpoint.pending names the new checkpoint
 * and the evicted one. A directory left like that (a crash) opens with the
 * evicted checkpoint deleted, the listed one kept and the note gone, where
 * an unnoted unlisted checkpoint stays (a stray). Once the deletion has
 * run, the note is gone. */
static void test_pending_note_after_crash(void **state)
{
    fixture *f = *state;
    static ckpt_fs_gated_remove g;
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_saver *s;
    char *note = test_path(f->dir, "checkpoint.pending");
    char *crash = test_path(f->dir, "crash");
    char *orig, *copied;
    uint8_t *index1;
    size_t index1_n = 0;
    uint8_t *text;
    size_t n = 0;
    ckpt_fs_gated_remove_init(&g);
    o.fs = &g.fwd.fs;
    o.max_to_keep = 1;
    s = open_saver_with(f, &o);
    fill(f, 1.0f, 1);
    assert_ckpt_ok(ckpt_saver_save_async(s, 1, NULL));
    assert_ckpt_ok(ckpt_saver_wait(s, 0, -1));
    assert_false(file_exists(f->dir, "checkpoint.pending"));
    copied = test_path(f->dir, "model.ckpt-1.index");
    index1 = test_read_file(copied, &index1_n);
    free(copied);
    atomic_store(&g.closed, 1);
    fill(f, 2.0f, 2);
    assert_ckpt_ok(ckpt_saver_save_async(s, 2, NULL));
    wait_remove_held(&g);
    text = test_read_file(note, &n);
    assert_int_equal(n, strlen("model.ckpt-2\nmodel.ckpt-1\n"));
    assert_memory_equal(text, "model.ckpt-2\nmodel.ckpt-1\n", n);
    free(text);
    /* a crash now, or just before the index went (removed first, then the
     * data files, whose removal is held) */
    copy_dir(f->dir, crash);
    copied = test_path(crash, "model.ckpt-1.index");
    test_write_file(copied, index1, index1_n);
    free(copied);
    free(index1);
    atomic_store(&g.closed, 0);
    assert_ckpt_ok(ckpt_saver_wait(s, 0, -1));
    ckpt_saver_free(s);
    assert_false(file_exists(f->dir, "checkpoint.pending"));
    assert_false(file_exists(f->dir, "model.ckpt-1.index"));

    /* the crashed copy: a stray of the user's own (a complete checkpoint:
     * an index without its data is removed on open) is not noted */
    orig = f->dir;
    f->dir = crash;
    copied = test_path(crash, "model.ckpt-2.index");
    text = test_read_file(copied, &n);
    free(copied);
    copied = test_path(crash, "model.ckpt-7.index");
    test_write_file(copied, text, n);
    free(copied);
    free(text);
    copied = test_path(crash, "model.ckpt-2.data-00000-of-00001");
    text = test_read_file(copied, &n);
    free(copied);
    copied = test_path(crash, "model.ckpt-7.data-00000-of-00001");
    test_write_file(copied, text, n);
    free(copied);
    free(text);
    assert_true(file_exists(crash, "model.ckpt-1.index"));
    o = (ckpt_saver_options)CKPT_SAVER_OPTIONS_INIT;
    o.max_to_keep = 1;
    s = open_saver_with(f, &o);
    ckpt_saver_free(s);
    f->dir = orig;
    assert_false(file_exists(crash, "model.ckpt-1.index"));
    assert_int_equal(count_files(crash, "model.ckpt-1."), 0);
    assert_true(file_exists(crash, "model.ckpt-2.index"));
    assert_true(file_exists(crash, "model.ckpt-7.index"));
    assert_false(file_exists(crash, "checkpoint.pending"));
    free(crash);
    free(note);
}

/* In a child made by fork() with the parent's writer running, the
 * parent's saver waited for a writer thread that does not exist there (a
 * hang), and a saver the child opened on the parent's directory shared the
 * parent's lock; now each call is CKPT_ESTATE saying so, and the open is
 * CKPT_EBUSY. The child reports through its exit status: bit i set when
 * check i failed. */
static int child_checks(ckpt_saver *s, const char *dir)
{
    ckpt_saver *other = NULL;
    int bad = 0;
    alarm(30); /* a hang ends the child with SIGALRM */
    if (ckpt_saver_save_async(s, 2, NULL) != CKPT_ESTATE ||
        !strstr(ckpt_error_last()->message,
                "save_async: the saver was opened by process ") ||
        !strstr(ckpt_error_last()->message, "a child made by fork()"))
        bad |= 1;
    if (ckpt_saver_wait(s, 0, -1) != CKPT_ESTATE)
        bad |= 2;
    if (ckpt_saver_mutation_fence(s) != CKPT_ESTATE)
        bad |= 4;
    if (ckpt_saver_save(s, 3, NULL) != CKPT_ESTATE)
        bad |= 8;
    if (ckpt_saver_open(&other, dir, NULL) != CKPT_EBUSY ||
        !strstr(ckpt_error_last()->message,
                "a child made by fork()) inherited"))
        bad |= 16;
    return bad;
}

static void test_fork_child_refused(void **state)
{
    fixture *f = *state;
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_saver *s = open_saver_with(f, &o);
    int status = 0;
    pid_t pid;
    f->step = 1;
    assert_ckpt_ok(ckpt_saver_save_async(s, 1, NULL));
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(child_checks(s, f->dir));
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    /* the parent goes on as before */
    assert_ckpt_ok(ckpt_saver_wait(s, 0, -1));
    assert_ckpt_ok(ckpt_saver_save_async(s, 2, NULL));
    assert_ckpt_ok(ckpt_saver_close(s, -1));
    ckpt_saver_free(s);
    assert_true(file_exists(f->dir, "model.ckpt-2.index"));
}

/* The parent of a forked child (a data loader, say) killed while the
 * child lives: the child's copy of the directory lock's descriptor held
 * the flock, and the relaunch was refused with CKPT_EBUSY ("in use by a
 * saver of another process") until the child ended. Now the child holds
 * none of it. Process P saves step 1, forks G, waits until G runs (its
 * fork returned: the atfork handlers ran) and is killed; with G alive
 * (it waits on a pipe), a saver here opens the directory, finds step 1
 * and saves step 2. */
static void run_killed_parent(const char *dir, int wait_fd, int release_fd)
{
    ckpt_saver *s = NULL;
    float w[4] = {1, 2, 3, 4};
    ckpt_var v = {"w", CKPT_DT_FLOAT, {1, {4}}, w, NULL, NULL, NULL};
    int ready[2];
    char c;
    if (ckpt_saver_open(&s, dir, NULL) < 0 || ckpt_saver_add_var(s, &v) < 0 ||
        ckpt_saver_save(s, 1, NULL) < 0 || pipe(ready) != 0)
        _exit(3);
    if (fork() == 0) { /* G: lives until the test closes the pipe */
        close(release_fd);
        close(ready[0]);
        alarm(30);
        if (write(ready[1], "r", 1) != 1)
            _exit(5);
        while (read(wait_fd, &c, 1) < 0 && errno == EINTR)
            ;
        _exit(0);
    }
    close(ready[1]);
    while (read(ready[0], &c, 1) < 0 && errno == EINTR)
        ;
    raise(SIGKILL); /* P: killed, its saver never freed */
    _exit(4);
}

static void test_killed_parent_forked_child_frees_lock(void **state)
{
    fixture *f = *state;
    ckpt_saver *s = NULL;
    float w[4] = {0};
    ckpt_var v = {"w", CKPT_DT_FLOAT, {1, {4}}, w, NULL, NULL, NULL};
    ckpt_buf latest = CKPT_BUF_INIT;
    int fds[2], status = 0;
    pid_t pid;
    assert_int_equal(pipe(fds), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        run_killed_parent(f->dir, fds[0], fds[1]);
    close(fds[0]);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGKILL);
    /* G still runs (it waits for fds[1] to close) */
    assert_ckpt_ok(ckpt_saver_open(&s, f->dir, NULL));
    assert_ckpt_ok(ckpt_saver_add_var(s, &v));
    assert_ckpt_ok(ckpt_saver_restore_latest(s, &latest));
    assert_non_null(strstr(latest.ptr, "model.ckpt-1"));
    assert_true(w[3] == 4.0f);
    assert_ckpt_ok(ckpt_saver_save(s, 2, NULL));
    assert_int_equal(ckpt_saver_num_checkpoints(s), 2);
    ckpt_saver_free(s);
    ckpt_buf_dispose(&latest);
    close(fds[1]); /* G ends */
    assert_true(file_exists(f->dir, "model.ckpt-2.index"));
}

typedef struct sync_saver_call {
    ckpt_saver *s;
    int err;
} sync_saver_call;

static void *save_on_thread(void *arg)
{
    sync_saver_call *c = arg;
    c->err = ckpt_saver_save(c->s, 7, NULL);
    return NULL;
}

/* A second thread calling a saver while the first is inside a call raced
 * on the saver's state unnoticed (a saver is driven from one thread);
 * now its calls are CKPT_ESTATE, its free is refused, and the first
 * thread's save completes. Handing the saver over between calls works. */
static void test_second_thread_refused(void **state)
{
    fixture *f = *state;
    ckpt_saver *s = open_saver(f, CKPT_BUSY_SKIP, &f->gate.fwd.fs);
    sync_saver_call c = {s, -1};
    pthread_t t;
    f->step = 7;
    gate_close(&f->gate);
    assert_int_equal(pthread_create(&t, NULL, save_on_thread, &c), 0);
    gate_wait_blocked(&f->gate); /* the other thread is inside save */
    assert_ckpt_error(ckpt_saver_save_async(s, 8, NULL), CKPT_ESTATE,
                      "save_async: called while another thread is inside a "
                      "call on this saver");
    assert_ckpt_error(ckpt_saver_wait(s, 0, -1), CKPT_ESTATE,
                      "wait: called while another thread");
    assert_ckpt_error(ckpt_saver_restore(s, "x"), CKPT_ESTATE,
                      "restore: called while another thread");
    assert_ckpt_error(ckpt_saver_mutation_fence(s), CKPT_ESTATE,
                      "mutation fence: called while another thread");
    ckpt_saver_free(s); /* refused: the other thread is using it */
    gate_open(&f->gate);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_ckpt_ok(c.err);
    /* handed back between calls: this thread may drive it now */
    f->step = 8;
    assert_ckpt_ok(ckpt_saver_save_async(s, 8, NULL));
    assert_ckpt_ok(ckpt_saver_wait(s, 0, -1));
    ckpt_saver_free(s);
    assert_true(file_exists(f->dir, "model.ckpt-7.index"));
    assert_true(file_exists(f->dir, "model.ckpt-8.index"));
}

static void *wait_then_cancel(void *arg)
{
    sync_saver_call *c = arg;
    c->err = ckpt_saver_wait(c->s, 0, -1);
    pthread_testcancel(); /* where the cancel is acted on */
    return NULL;
}

/* A thread cancelled (pthread_cancel) while inside a saver call: the
 * cancel was acted on in the call's condition wait, which left the saver's
 * mutex held (the writer then blocked on it for ever) and the saver marked
 * as in use by that thread (every later call CKPT_ESTATE). Now a saver
 * call runs with cancellation disabled: the wait completes, the cancel
 * takes effect after it, and the saver stays usable. */
static void test_cancel_inside_a_call_waits_for_its_end(void **state)
{
    fixture *f = *state;
    ckpt_saver *s = open_saver(f, CKPT_BUSY_SKIP, &f->gate.fwd.fs);
    sync_saver_call c = {s, -1};
    pthread_t t;
    void *ret = NULL;
    fill(f, 1.0f, 1);
    gate_close(&f->gate);
    assert_ckpt_ok(ckpt_saver_save_async(s, 1, NULL));
    gate_wait_blocked(&f->gate); /* the write is held */
    assert_int_equal(pthread_create(&t, NULL, wait_then_cancel, &c), 0);
    assert_int_equal(pthread_cancel(t), 0);
    gate_open(&f->gate);
    assert_int_equal(pthread_join(t, &ret), 0);
    assert_ptr_equal(ret, PTHREAD_CANCELED);
    assert_ckpt_ok(c.err);                    /* the wait ran to its end */
    assert_ckpt_ok(ckpt_saver_poll(s, NULL)); /* handed back, usable */
    fill(f, 2.0f, 2);
    assert_ckpt_ok(ckpt_saver_save_async(s, 2, NULL));
    assert_ckpt_ok(ckpt_saver_close(s, -1));
    ckpt_saver_free(s);
    expect_checkpoint(f, 1, 1.0f);
    expect_checkpoint(f, 2, 2.0f);
}

typedef struct open_call {
    const char *dir;
    ckpt_saver *s;
    int err;
} open_call;

static void *open_with_cancel_pending(void *arg)
{
    open_call *c = arg;
    pthread_cancel(pthread_self()); /* pending before the open begins */
    c->err = ckpt_saver_open(&c->s, c->dir, NULL);
    pthread_testcancel(); /* where the cancel is acted on */
    return NULL;
}

/* ckpt_saver_open was left out when the calls on a saver were made to
 * hold off pthread_cancel: cancelled inside it (at its first cancellation
 * point, a directory read or sync, or open() under the process-wide mutex
 * of the directory locks) the thread ended there, its caller never told,
 * the directory half recovered, and, inside dir_lock.c, that mutex left
 * held for every later open. Now the open runs to its end first. */
static void test_cancel_inside_open_waits_for_its_end(void **state)
{
    fixture *f = *state;
    open_call c = {f->dir, NULL, -1};
    pthread_t t;
    void *ret = NULL;
    ckpt_saver *s;
    assert_int_equal(pthread_create(&t, NULL, open_with_cancel_pending, &c), 0);
    assert_int_equal(pthread_join(t, &ret), 0);
    assert_ptr_equal(ret, PTHREAD_CANCELED);
    assert_ckpt_ok(c.err); /* the open ran to its end */
    assert_non_null(c.s);
    ckpt_saver_free(c.s);
    s = open_saver(f, CKPT_BUSY_WAIT, NULL); /* the locks are free */
    fill(f, 3.0f, 3);
    assert_ckpt_ok(ckpt_saver_save(s, 3, NULL));
    ckpt_saver_free(s);
    expect_checkpoint(f, 3, 3.0f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_b58_b59_snapshot_then_write, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_b60_skip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_b61_wait, setup, teardown),
        cmocka_unit_test_setup_teardown(test_b62_coalesce, setup, teardown),
        cmocka_unit_test_setup_teardown(test_b63_background_failure_once, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_background_failure_returned_by_next_save, setup, teardown),
        cmocka_unit_test_setup_teardown(test_b65_close_timeout, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_close_timeout_with_failure_pending,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_retention_deletes_after_the_save,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_pending_note_after_crash, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_read_callbacks, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_saver_calls_from_writer_thread_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_free_from_on_save_done_refused,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_two_failures_returned_together,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_add_var_total_size_limit, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_add_var_checks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fork_child_refused, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_killed_parent_forked_child_frees_lock, setup, teardown),
        cmocka_unit_test_setup_teardown(test_second_thread_refused, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_cancel_inside_a_call_waits_for_its_end, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_cancel_inside_open_waits_for_its_end, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
