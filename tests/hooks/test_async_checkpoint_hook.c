/* AsyncCheckpointSaverHook (mode ASYNC) end to end through a monitored
 * session, with writes held at a gate to observe them in flight: the
 * snapshot is taken at the trigger step, after_run does not wait for I/O,
 * the busy policies, background failures returned once, end's wait and
 * final save, listener threads and steps, abnormal close, metrics
 * (B53-B69 in async mode). Run under TSan and ASan too. */
#include "ckhook_test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static ckpt_hook new_async_hook(ck_fixture *f, int policy, int64_t steps,
                                int nlisteners, double end_timeout_s)
{
    static ckpt_saver_listener ls[4];
    ckpt_saver_options so = ck_saver_options(f, policy);
    ckpt_checkpoint_hook_options o =
        ck_hook_options(f, CKPT_SAVE_ASYNC, steps, &so, ls, nlisteners);
    ckpt_hook h;
    o.end_timeout_s = end_timeout_s;
    assert_ckpt_ok(ckpt_checkpoint_hook_new(&h, &o));
    return h;
}

/* A session whose initial save (step 0) is durable; writes then blocked. */
static ckpt_monitored_session *start_gated(ck_fixture *f, ckpt_hook *h)
{
    ckpt_monitored_session *ms = ck_session(f, h, 1);
    ck_wait_idle(h);
    assert_true(ck_has_checkpoint(f, 0));
    gate_close(&f->cfs.gate);
    return ms;
}

static int count_kind(ck_fixture *f, ev_kind kind, int64_t step)
{
    int n = 0;
    for (int i = 0; i < f->nevents; i++)
        if (f->events[i].kind == kind && f->events[i].listener == 0 &&
            (step < 0 || f->events[i].step == step))
            n++;
    return n;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Opens the gate after a short delay, from another thread. */
static void *open_later(void *arg)
{
    sleep_ms(30);
    gate_open(arg);
    return NULL;
}

/* B58: the checkpoint of the trigger step holds that step's values although
 * the next step rewrites every variable while the write is held. */
static void test_b58_async_values_are_snapshot_at_trigger_step(void **state)
{
    ck_fixture *f = *state;
    ckpt_hook h = new_async_hook(f, CKPT_BUSY_SKIP, 2, 1, -1.0);
    ckpt_monitored_session *ms = start_gated(f, &h);
    assert_ckpt_ok(ck_run(f, ms));
    assert_ckpt_ok(ck_run(f, ms)); /* step 2: snapshot, write dispatched */
    gate_wait_blocked(&f->cfs.gate);
    assert_ckpt_ok(ck_run(f, ms)); /* step 3 mutates everything */
    assert_float_equal(f->vals[5], ck_value(3, 5), 0.0);
    assert_false(ck_has_checkpoint(f, 2));
    gate_open(&f->cfs.gate);
    ck_wait_idle(&h);
    ck_expect_checkpoint(f, 2, 2);
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    ck_expect_checkpoint(f, 3, 3); /* end: final step */
    ckpt_monitored_session_free(ms);
}

/* B59: after_run returns once the snapshot is taken, while the write is
 * still held at the gate. */
static void test_b59_async_after_run_does_not_wait_for_io(void **state)
{
    ck_fixture *f = *state;
    ckpt_hook h = new_async_hook(f, CKPT_BUSY_SKIP, 1, 1, -1.0);
    ckpt_monitored_session *ms = start_gated(f, &h);
    ckpt_saver_metrics m;
    assert_ckpt_ok(ck_run(f, ms)); /* returns although the gate is closed */
    gate_wait_blocked(&f->cfs.gate);
    m = ck_metrics(&h);
    assert_int_equal(m.saves_started, 2);
    assert_int_equal(m.saves_completed, 1);
    assert_false(ck_has_checkpoint(f, 1));
    assert_int_equal(count_kind(f, EV_BEFORE, 1), 1);
    assert_int_equal(count_kind(f, EV_AFTER, 1), 0);
    gate_open(&f->cfs.gate);
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    assert_int_equal(count_kind(f, EV_AFTER, 1), 1);
    ckpt_monitored_session_free(ms);
}

/* B60: SKIP counts the busy trigger, leaves the timer, and saves at the
 * first step where the writer is free. */
static void test_b60_skip_retries_at_next_free_step(void **state)
{
    ck_fixture *f = *state;
    ckpt_hook h = new_async_hook(f, CKPT_BUSY_SKIP, 2, 1, -1.0);
    ckpt_monitored_session *ms = start_gated(f, &h);
    ckpt_saver_metrics m;
    assert_ckpt_ok(ck_run(f, ms));
    assert_ckpt_ok(ck_run(f, ms)); /* 2 dispatched and held */
    gate_wait_blocked(&f->cfs.gate);
    assert_ckpt_ok(ck_run(f, ms)); /* 3: no trigger */
    assert_ckpt_ok(ck_run(f, ms)); /* 4: trigger, busy: skipped */
    m = ck_metrics(&h);
    assert_int_equal(m.saves_skipped, 1);
    assert_int_equal(m.saves_started, 2);
    assert_int_equal(count_kind(f, EV_BEFORE, 4), 0); /* not announced */
    gate_open(&f->cfs.gate);
    ck_wait_idle(&h);
    assert_ckpt_ok(ck_run(f, ms)); /* 5: the timer is still at 2 */
    ck_wait_idle(&h);
    m = ck_metrics(&h);
    assert_int_equal(m.saves_started, 3);
    assert_int_equal(m.saves_skipped, 1);
    ck_expect_checkpoint(f, 5, 5);
    assert_false(ck_has_checkpoint(f, 4));
    assert_ckpt_ok(ck_run(f, ms)); /* 6: no trigger (5 + 2 = 7) */
    assert_false(ck_has_checkpoint(f, 6));
    assert_ckpt_ok(ck_run(f, ms)); /* 7 */
    ck_wait_idle(&h);
    assert_true(ck_has_checkpoint(f, 7));
    assert_true(ck_log_count(f, "skipped") >= 1);
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    assert_int_equal(ck_metrics(&h).saves_started, 4); /* 0, 2, 5, 7 */
    ckpt_monitored_session_free(ms);
}

/* B61: WAIT blocks the trigger until the running write ends, then takes
 * the snapshot of that step. */
typedef struct run_arg {
    ck_fixture *f;
    ckpt_monitored_session *ms;
    atomic_int done;
    int rc;
} run_arg;

static void *run_in_thread(void *p)
{
    run_arg *a = p;
    a->rc = ck_run(a->f, a->ms);
    atomic_store(&a->done, 1);
    return NULL;
}

static void test_b61_wait_blocks_until_write_ends(void **state)
{
    ck_fixture *f = *state;
    ckpt_hook h = new_async_hook(f, CKPT_BUSY_WAIT, 2, 1, -1.0);
    ckpt_monitored_session *ms = start_gated(f, &h);
    run_arg a;
    pthread_t t;
    assert_ckpt_ok(ck_run(f, ms));
    assert_ckpt_ok(ck_run(f, ms)); /* 2 dispatched and held */
    gate_wait_blocked(&f->cfs.gate);
    assert_ckpt_ok(ck_run(f, ms));
    memset(&a, 0, sizeof(a));
    a.f = f;
    a.ms = ms;
    atomic_init(&a.done, 0);
    assert_int_equal(pthread_create(&t, NULL, run_in_thread, &a), 0);
    sleep_ms(50);
    assert_int_equal(atomic_load(&a.done), 0); /* step 4 waits */
    assert_false(ck_has_checkpoint(f, 2));
    gate_open(&f->cfs.gate);
    pthread_join(t, NULL);
    assert_ckpt_ok(a.rc);
    ck_wait_idle(&h);
    ck_expect_checkpoint(f, 2, 2);
    ck_expect_checkpoint(f, 4, 4);
    assert_int_equal(ck_metrics(&h).saves_skipped, 0);
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    ckpt_monitored_session_free(ms);
}

/* B62: COALESCE keeps one pending snapshot; a newer trigger replaces it
 * (counted); the replaced one never reaches the listeners' after_save. */
static void test_b62_coalesce_replaces_pending_snapshot(void **state)
{
    ck_fixture *f = *state;
    ckpt_hook h = new_async_hook(f, CKPT_BUSY_COALESCE, 2, 1, -1.0);
    ckpt_monitored_session *ms = start_gated(f, &h);
    ckpt_saver_metrics m;
    assert_ckpt_ok(ck_run(f, ms));
    assert_ckpt_ok(ck_run(f, ms)); /* 2: written, held */
    gate_wait_blocked(&f->cfs.gate);
    for (int i = 0; i < 4; i++) /* 4: pending; 6: replaces 4 */
        assert_ckpt_ok(ck_run(f, ms));
    m = ck_metrics(&h);
    assert_int_equal(m.saves_coalesced, 1);
    assert_int_equal(m.saves_skipped, 0);
    gate_open(&f->cfs.gate);
    ck_wait_idle(&h);
    assert_ckpt_ok(ck_run(f, ms)); /* delivers the outcomes */
    ck_expect_checkpoint(f, 2, 2);
    ck_expect_checkpoint(f, 6, 6);
    assert_false(ck_has_checkpoint(f, 4));
    assert_int_equal(count_kind(f, EV_BEFORE, 4), 1);
    assert_int_equal(count_kind(f, EV_AFTER, 4), 0);
    assert_int_equal(count_kind(f, EV_AFTER, 6), 1);
    assert_int_equal(ck_log_count(f, "replaced by a newer one"), 1);
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    ckpt_monitored_session_free(ms);
}

/* B63: a failed background write is returned by the next after_run, once,
 * and counted; training and saving go on afterwards. */
static void test_b63_background_failure_returned_once(void **state)
{
    ck_fixture *f = *state;
    ckpt_hook h = new_async_hook(f, CKPT_BUSY_SKIP, 2, 1, -1.0);
    ckpt_monitored_session *ms = ck_session(f, &h, 1);
    ck_wait_idle(&h);
    atomic_store(&f->cfs.fail_writes, 1);
    assert_ckpt_ok(ck_run(f, ms));
    assert_ckpt_ok(ck_run(f, ms)); /* 2 dispatched; its write fails */
    ck_wait_idle(&h);
    atomic_store(&f->cfs.fail_writes, 0);
    assert_int_equal(ck_metrics(&h).saves_failed, 1);
    assert_ckpt_error(ck_run(f, ms), CKPT_ENOSPC, "step 2");
    assert_int_equal(f->gstep, 3); /* the step itself ran */
    assert_ckpt_ok(ck_run(f, ms)); /* not again; 4 triggers */
    ck_wait_idle(&h);
    assert_ckpt_ok(ck_run(f, ms));
    ck_expect_checkpoint(f, 4, 4);
    assert_false(ck_has_checkpoint(f, 2));
    assert_int_equal(count_kind(f, EV_AFTER, 2), 0);
    assert_int_equal(ck_metrics(&h).saves_failed, 1);
    assert_int_equal(ck_latest_step(f), 4);
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    ckpt_monitored_session_free(ms);
}

/* B63: a failure found by end is returned by end (the close). */
static void test_b63_background_failure_returned_by_end(void **state)
{
    ck_fixture *f = *state;
    ckpt_hook h = new_async_hook(f, CKPT_BUSY_SKIP, 2, 1, -1.0);
    ckpt_monitored_session *ms = ck_session(f, &h, 1);
    ck_wait_idle(&h);
    atomic_store(&f->cfs.fail_writes, 1);
    assert_ckpt_ok(ck_run(f, ms));
    assert_ckpt_ok(ck_run(f, ms)); /* 2 dispatched; its write fails */
    ck_wait_idle(&h);
    atomic_store(&f->cfs.fail_writes, 0);
    assert_ckpt_error(ckpt_monitored_session_close(ms, 0), CKPT_ENOSPC,
                      "step 2");
    assert_int_equal(ck_metrics(&h).saves_failed, 1);
    assert_ckpt_error(ckpt_monitored_session_close(ms, 0), CKPT_ESTATE, NULL);
    ckpt_monitored_session_free(ms);
}

/* B64: after the background write of the final step failed, end saves
 * that step synchronously, then calls the listeners' end. */
static void test_b64_end_resaves_step_whose_write_failed(void **state)
{
    ck_fixture *f = *state;
    ckpt_hook h = new_async_hook(f, CKPT_BUSY_SKIP, 2, 1, -1.0);
    ckpt_monitored_session *ms = ck_session(f, &h, 1);
    ckpt_saver_metrics m;
    ck_wait_idle(&h);
    atomic_store(&f->cfs.fail_writes, 1);
    assert_ckpt_ok(ck_run(f, ms));
    assert_ckpt_ok(ck_run(f, ms));
    ck_wait_idle(&h);
    atomic_store(&f->cfs.fail_writes, 0);
    assert_false(ck_has_checkpoint(f, 2));
    assert_int_equal(ckpt_monitored_session_close(ms, 0), CKPT_ENOSPC);
    ck_expect_checkpoint(f, 2, 2);
    assert_int_equal(ck_latest_step(f), 2);
    assert_int_equal(count_kind(f, EV_BEFORE, 2), 2);
    assert_int_equal(count_kind(f, EV_AFTER, 2), 1);
    assert_int_equal(count_kind(f, EV_END, 2), 1);
    m = ck_metrics(&h);
    assert_int_equal(m.saves_failed, 1);
    assert_int_equal(m.saves_completed, 2);
    ckpt_monitored_session_free(ms);
}

/* B48 in async mode: the initial save is asynchronous. The session's
 * creation returns with its write held at the gate; until that write is
 * durable no state file names a checkpoint (a crash then leaves the
 * directory as it was); once through, step 0 is the newest. */
static void test_b48_async_initial_save_is_async(void **state)
{
    ck_fixture *f = *state;
    ckpt_hook h = new_async_hook(f, CKPT_BUSY_SKIP, 100, 1, -1.0);
    ckpt_monitored_session *ms;
    gate_close(&f->cfs.gate);
    ms = ck_session(f, &h, 1);
    gate_wait_blocked(&f->cfs.gate);
    assert_int_equal(ck_latest_step(f), -1);
    assert_false(ck_has_checkpoint(f, 0));
    assert_int_equal(ck_metrics(&h).saves_started, 1);
    assert_int_equal(ck_metrics(&h).saves_completed, 0);
    gate_open(&f->cfs.gate);
    ck_wait_idle(&h);
    assert_int_equal(ck_latest_step(f), 0);
    ck_expect_checkpoint(f, 0, 0);
    ckpt_monitored_session_free(ms);
}

/* B54 in async mode: end saves a final step no trigger saved. */
static void test_b54_async_end_saves_final_step(void **state)
{
    ck_fixture *f = *state;
    ckpt_hook h = new_async_hook(f, CKPT_BUSY_SKIP, 2, 1, -1.0);
    ckpt_monitored_session *ms = ck_session(f, &h, 1);
    ck_wait_idle(&h);
    assert_ckpt_ok(ck_run(f, ms));
    assert_ckpt_ok(ck_run(f, ms)); /* 2 */
    ck_wait_idle(&h);
    assert_ckpt_ok(ck_run(f, ms)); /* 3: no trigger */
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    ck_expect_checkpoint(f, 2, 2);
    ck_expect_checkpoint(f, 3, 3);
    assert_int_equal(ck_metrics(&h).saves_started, 3);
    assert_int_equal(count_kind(f, EV_END, 3), 1);
    assert_int_equal(f->events[f->nevents - 1].kind, EV_END);
    ckpt_monitored_session_free(ms);
}

/* B65: end's wait is bounded: ETIMEDOUT, no final save, the previous
 * checkpoint stays the newest. */
static void test_b65_end_wait_times_out(void **state)
{
    ck_fixture *f = *state;
    ckpt_hook h = new_async_hook(f, CKPT_BUSY_SKIP, 2, 1, 0.05);
    ckpt_monitored_session *ms = start_gated(f, &h);
    double t0;
    assert_ckpt_ok(ck_run(f, ms));
    assert_ckpt_ok(ck_run(f, ms));
    gate_wait_blocked(&f->cfs.gate);
    t0 = now_s();
    assert_ckpt_error(ckpt_monitored_session_close(ms, 0), CKPT_ETIMEDOUT,
                      "timed out");
    assert_true(now_s() - t0 < 5.0);
    assert_int_equal(ck_latest_step(f), 0);
    assert_false(ck_has_checkpoint(f, 2));
    assert_int_equal(count_kind(f, EV_END, -1), 0);
    gate_open(&f->cfs.gate);
    ckpt_monitored_session_free(ms); /* the write completes meanwhile */
    assert_int_equal(count_files(f->ckdir, "tempstate"), 0);
}

/* B65 with B63: end's bound holds also while an earlier failure waits to
 * be returned. The saver's wait returned that failure in place of its
 * timeout, and end went on to save the final step synchronously, behind
 * the write still held: close took as long as that write. Now end returns
 * CKPT_ETIMEDOUT in time (the failure was logged when it happened). */
static void test_b65_end_bounded_with_failure_pending(void **state)
{
    ck_fixture *f = *state;
    static ckpt_saver_listener ls[1];
    static held_opens ho;
    ckpt_saver_options so = ck_saver_options(f, CKPT_BUSY_COALESCE);
    ckpt_checkpoint_hook_options o;
    ckpt_monitored_session *ms;
    ckpt_hook h;
    held_opens_init(&ho);
    so.fs = &ho.fwd.fs;
    o = ck_hook_options(f, CKPT_SAVE_ASYNC, 1, &so, ls, 1);
    o.end_timeout_s = 0.05;
    assert_ckpt_ok(ckpt_checkpoint_hook_new(&h, &o));
    ms = ck_session(f, &h, 1);
    ck_wait_idle(&h);              /* step 0's */
    assert_ckpt_ok(ck_run(f, ms)); /* 1: held, then fails */
    held_opens_wait(&ho, &ho.held1);
    assert_ckpt_ok(ck_run(f, ms)); /* 2: pending */
    atomic_store(&ho.release1, 1);
    held_opens_wait(&ho, &ho.held2);
    assert_ckpt_error(ckpt_monitored_session_close(ms, 0), CKPT_ETIMEDOUT,
                      "timed out");
    assert_int_equal(atomic_load(&ho.gave_up), 0); /* did not wait for 2 */
    assert_int_equal(ck_latest_step(f), 0);
    assert_true(ck_log_count(f, "injected failure") >= 1);
    atomic_store(&ho.release2, 1);
    ckpt_monitored_session_free(ms); /* the write of step 2 completes */
    ck_expect_checkpoint(f, 2, 2);
}

/* B66: the in-flight write is of the final step and succeeds: end waits
 * for it and does not write that step again. */
static void test_b66_end_does_not_rewrite_in_flight_final_step(void **state)
{
    ck_fixture *f = *state;
    ckpt_hook h = new_async_hook(f, CKPT_BUSY_SKIP, 2, 1, -1.0);
    ckpt_monitored_session *ms = start_gated(f, &h);
    pthread_t t;
    assert_ckpt_ok(ck_run(f, ms));
    assert_ckpt_ok(ck_run(f, ms)); /* final step 2, held */
    gate_wait_blocked(&f->cfs.gate);
    assert_int_equal(pthread_create(&t, NULL, open_later, &f->cfs.gate), 0);
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    pthread_join(t, NULL);
    ck_expect_checkpoint(f, 2, 2);
    assert_int_equal(ck_metrics(&h).saves_started, 2);
    assert_int_equal(count_kind(f, EV_BEFORE, 2), 1);
    assert_int_equal(count_kind(f, EV_AFTER, 2), 1);
    assert_int_equal(count_kind(f, EV_END, 2), 1);
    ckpt_monitored_session_free(ms);
}

/* B67: before_save runs on the training thread while the state is that of
 * the trigger step; after_save runs on the training thread once the
 * checkpoint is durable and named, with the snapshot's step and prefix. */
static void test_b67_listener_threads_and_steps(void **state)
{
    ck_fixture *f = *state;
    ckpt_hook h = new_async_hook(f, CKPT_BUSY_SKIP, 2, 1, -1.0);
    ckpt_monitored_session *ms = start_gated(f, &h);
    ck_event ev[CK_MAX_EVENTS];
    char prefix[8192];
    int n, before;
    assert_ckpt_ok(ck_run(f, ms));
    assert_ckpt_ok(ck_run(f, ms)); /* 2 */
    n = ck_events(f, EV_BEFORE, ev, CK_MAX_EVENTS);
    assert_int_equal(ev[n - 1].step, 2);
    assert_true(ev[n - 1].on_caller);
    assert_int_equal(ev[n - 1].gstep, 2);
    assert_false(ev[n - 1].index_exists);
    gate_wait_blocked(&f->cfs.gate);
    assert_ckpt_ok(ck_run(f, ms)); /* 3: write held: no after_save(2) */
    assert_int_equal(count_kind(f, EV_AFTER, 2), 0);
    gate_open(&f->cfs.gate);
    ck_wait_idle(&h);
    before = f->nevents;
    sleep_ms(10);
    assert_int_equal(f->nevents, before); /* never from the writer */
    assert_ckpt_ok(ck_run(f, ms));        /* 4: delivered here */
    n = ck_events(f, EV_AFTER, ev, CK_MAX_EVENTS);
    assert_int_equal(ev[n - 1].step, 2);
    assert_true(ev[n - 1].on_caller);
    assert_true(ev[n - 1].index_exists);
    assert_int_equal(ev[n - 1].latest, 2);
    assert_int_equal(ev[n - 1].gstep, 3); /* delivered before step 4 ran */
    snprintf(prefix, sizeof(prefix), "%s/model.ckpt-2", f->ckdir);
    assert_string_equal(ev[n - 1].prefix, prefix);
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    ckpt_monitored_session_free(ms);
}

/* B53 in async mode: a stop request from after_save is honoured by the
 * run that delivers it; every listener is still called. */
static void test_b53_async_listener_stop_request(void **state)
{
    ck_fixture *f = *state;
    ckpt_hook h = new_async_hook(f, CKPT_BUSY_SKIP, 2, 2, -1.0);
    ckpt_monitored_session *ms = ck_session(f, &h, 1);
    ck_event ev[CK_MAX_EVENTS];
    int n;
    f->listeners[0].stop_at = 2;
    ck_wait_idle(&h);
    assert_ckpt_ok(ck_run(f, ms));
    assert_ckpt_ok(ck_run(f, ms)); /* 2 dispatched */
    assert_false(ckpt_monitored_session_should_stop(ms, NULL));
    ck_wait_idle(&h);
    assert_ckpt_ok(ck_run(f, ms)); /* 3: after_save(2) asks to stop */
    assert_true(ckpt_monitored_session_should_stop(ms, NULL));
    n = ck_events(f, EV_AFTER, ev, CK_MAX_EVENTS);
    assert_int_equal(ev[n - 2].listener, 0);
    assert_int_equal(ev[n - 2].step, 2);
    assert_int_equal(ev[n - 1].listener, 1);
    assert_int_equal(ev[n - 1].step, 2);
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    ck_expect_checkpoint(f, 3, 3);
    ckpt_monitored_session_free(ms);
}

/* B68: an abnormal close still waits for the write in flight. */
static void test_b68_abnormal_close_waits_for_write(void **state)
{
    ck_fixture *f = *state;
    ckpt_hook h = new_async_hook(f, CKPT_BUSY_SKIP, 2, 1, -1.0);
    ckpt_monitored_session *ms = start_gated(f, &h);
    pthread_t t;
    assert_ckpt_ok(ck_run(f, ms));
    assert_ckpt_ok(ck_run(f, ms));
    gate_wait_blocked(&f->cfs.gate);
    assert_int_equal(pthread_create(&t, NULL, open_later, &f->cfs.gate), 0);
    assert_int_equal(ckpt_monitored_session_close(ms, CKPT_EIO), CKPT_EIO);
    assert_true(ck_has_checkpoint(f, 2)); /* before anything else ran */
    assert_int_equal(ck_latest_step(f), 2);
    pthread_join(t, NULL);
    ck_expect_checkpoint(f, 2, 2);
    assert_int_equal(count_kind(f, EV_END, -1), 0);
    assert_int_equal(count_files(f->ckdir, "tempstate"), 0);
    ckpt_monitored_session_free(ms);
}

/* B68: the wait is bounded, and a write cut short is never the newest. */
static void test_b68_abnormal_close_wait_is_bounded(void **state)
{
    ck_fixture *f = *state;
    ckpt_hook h = new_async_hook(f, CKPT_BUSY_SKIP, 2, 1, 0.05);
    ckpt_monitored_session *ms = start_gated(f, &h);
    double t0;
    assert_ckpt_ok(ck_run(f, ms));
    assert_ckpt_ok(ck_run(f, ms));
    gate_wait_blocked(&f->cfs.gate);
    t0 = now_s();
    assert_int_equal(ckpt_monitored_session_close(ms, CKPT_EIO), CKPT_EIO);
    assert_true(now_s() - t0 < 5.0);
    assert_int_equal(ck_latest_step(f), 0);
    assert_false(ck_has_checkpoint(f, 2));
    assert_true(ck_log_count(f, "session aborted") >= 1);
    gate_open(&f->cfs.gate);
    ckpt_monitored_session_free(ms);
    assert_int_equal(count_files(f->ckdir, "tempstate"), 0);
    assert_int_equal(atomic_load(&f->cfs.state_bad), 0);
    assert_true(ck_latest_step(f) == 0 || ck_latest_step(f) == 2);
}

/* B69: one metric per trigger (started, skipped or coalesced: with
 * COALESCE a pending snapshot replaced by a newer trigger moves from started
 * to coalesced), and one per finished write (completed or failed). Logs say
 * dispatched, durable, skipped. */
static void check_trigger(const ckpt_hook *h, ckpt_saver_metrics *prev,
                          int triggered, int want_started)
{
    ckpt_saver_metrics m = ck_metrics(h);
    uint64_t started = m.saves_started - prev->saves_started;
    uint64_t skipped = m.saves_skipped - prev->saves_skipped;
    uint64_t coalesced = m.saves_coalesced - prev->saves_coalesced;
    assert_int_equal(started + skipped + coalesced, triggered ? 1 : 0);
    assert_int_equal(started, want_started);
    *prev = m;
}

static void test_b69_metrics_one_event_per_trigger_skip(void **state)
{
    ck_fixture *f = *state;
    ckpt_hook h = new_async_hook(f, CKPT_BUSY_SKIP, 1, 1, -1.0);
    ckpt_monitored_session *ms = start_gated(f, &h);
    ckpt_saver_metrics prev = ck_metrics(&h), m;
    assert_ckpt_ok(ck_run(f, ms)); /* 1: started */
    check_trigger(&h, &prev, 1, 1);
    gate_wait_blocked(&f->cfs.gate);
    for (int i = 0; i < 3; i++) { /* 2, 3, 4: skipped */
        assert_ckpt_ok(ck_run(f, ms));
        check_trigger(&h, &prev, 1, 0);
    }
    gate_open(&f->cfs.gate);
    ck_wait_idle(&h);
    assert_ckpt_ok(ck_run(f, ms)); /* 5: started */
    check_trigger(&h, &prev, 1, 1);
    ck_wait_idle(&h);
    atomic_store(&f->cfs.fail_writes, 1);
    assert_ckpt_ok(ck_run(f, ms)); /* 6: started, fails */
    check_trigger(&h, &prev, 1, 1);
    ck_wait_idle(&h);
    atomic_store(&f->cfs.fail_writes, 0);
    assert_int_equal(ck_run(f, ms), CKPT_ENOSPC); /* 7: reports, no trigger */
    check_trigger(&h, &prev, 0, 0);
    assert_ckpt_ok(ck_run(f, ms)); /* 8: started */
    check_trigger(&h, &prev, 1, 1);
    ck_wait_idle(&h);
    m = ck_metrics(&h);
    assert_int_equal(m.saves_started, 5); /* 0, 1, 5, 6, 8 */
    assert_int_equal(m.saves_skipped, 3);
    assert_int_equal(m.saves_coalesced, 0);
    assert_int_equal(m.saves_completed, 4);
    assert_int_equal(m.saves_failed, 1);
    assert_int_equal(m.last_saved_step, 8);
    assert_true(m.bytes_written > 4 * CK_NVALS * sizeof(float));
    assert_int_equal(ck_log_count(f, "checkpoint write dispatched"), 5);
    assert_int_equal(ck_log_count(f, "is durable"), 4);
    assert_int_equal(ck_log_count(f, "is still being written"), 3);
    /* The hook reports the first skip with the count and the remedy. */
    assert_int_equal(ck_log_count(f, "1 trigger(s) skipped so far"), 1);
    assert_int_equal(ck_log_count(f, "CKPT_BUSY_COALESCE"), 1);
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    m = ck_metrics(&h);
    assert_int_equal(m.saves_started, 5); /* 8 is durable: no final save */
    ckpt_monitored_session_free(ms);
}

static void test_b69_metrics_one_event_per_trigger_coalesce(void **state)
{
    ck_fixture *f = *state;
    ckpt_hook h = new_async_hook(f, CKPT_BUSY_COALESCE, 1, 1, -1.0);
    ckpt_monitored_session *ms = start_gated(f, &h);
    ckpt_saver_metrics prev = ck_metrics(&h), m;
    for (int i = 0; i < 4; i++) { /* 1 written; 2, 3 replaced; 4 pending */
        assert_ckpt_ok(ck_run(f, ms));
        /* 1 and 2 start; 3 replaces 2 and 4 replaces 3: each of those
         * moves one trigger from started to coalesced. */
        check_trigger(&h, &prev, 1, i < 2 ? 1 : 0);
        if (i == 0)
            gate_wait_blocked(&f->cfs.gate);
    }
    assert_int_equal(prev.saves_coalesced, 2);
    gate_open(&f->cfs.gate);
    ck_wait_idle(&h);
    m = ck_metrics(&h);
    assert_int_equal(m.saves_started, 3); /* 0, 1, 4 */
    assert_int_equal(m.saves_completed + m.saves_failed, m.saves_started);
    assert_int_equal(m.saves_completed, 3); /* 0, 1, 4 */
    assert_int_equal(m.saves_skipped, 0);
    ck_expect_checkpoint(f, 4, 4);
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    ckpt_monitored_session_free(ms);
}

/* B57 in async mode: the state file only ever names complete checkpoints,
 * and after_save sees the checkpoint named. */
static void
test_b57_async_state_file_names_only_complete_checkpoints(void **state)
{
    ck_fixture *f = *state;
    ckpt_hook h = new_async_hook(f, CKPT_BUSY_WAIT, 2, 1, -1.0);
    ckpt_monitored_session *ms = ck_session(f, &h, 1);
    ck_event ev[CK_MAX_EVENTS];
    int n;
    for (int i = 0; i < 7; i++)
        assert_ckpt_ok(ck_run(f, ms));
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    assert_int_equal(atomic_load(&f->cfs.state_checks), 5); /* 0,2,4,6,7 */
    assert_int_equal(atomic_load(&f->cfs.state_bad), 0);
    n = ck_events(f, EV_AFTER, ev, CK_MAX_EVENTS);
    assert_int_equal(n, 5);
    for (int i = 0; i < n; i++) {
        assert_true(ev[i].index_exists);
        assert_true(ev[i].latest >= ev[i].step);
        ck_expect_checkpoint(f, ev[i].step, ev[i].step);
    }
    ckpt_monitored_session_free(ms);
}

/* Async mode on the scaffold's saver across a session re-creation: the
 * restored step is not saved again (B49) and saves go on afterwards. */
static void test_b49_async_scaffold_saver_across_recovery(void **state)
{
    ck_fixture *f = *state;
    static ckpt_saver_listener ls[1];
    ckpt_saver_options so = ck_saver_options(f, CKPT_BUSY_SKIP);
    ckpt_checkpoint_hook_options o =
        ck_hook_options(f, CKPT_SAVE_ASYNC, 2, NULL, ls, 1);
    ckpt_session_options sess = ck_session_options(f, 1, &so);
    ckpt_monitored_session *ms = NULL;
    ckpt_hook h;
    o.use_scaffold = 1;
    assert_ckpt_ok(ckpt_checkpoint_hook_new(&h, &o));
    assert_ckpt_ok(ckpt_monitored_session_new(&ms, f->graph, &h, 1, &sess));
    ck_wait_idle(&h);
    f->abort_at = 3;
    assert_ckpt_ok(ck_run(f, ms));
    assert_ckpt_ok(ck_run(f, ms)); /* 2 */
    ck_wait_idle(&h);
    assert_ckpt_ok(ck_run(f, ms)); /* aborted, restored at 2, then 3 */
    assert_true(f->aborted);
    assert_int_equal(f->gstep, 3);
    assert_int_equal(ck_log_count(f, "initial save skipped"), 1);
    assert_ckpt_ok(ck_run(f, ms)); /* 4 */
    ck_wait_idle(&h);
    assert_ckpt_ok(ck_run(f, ms)); /* 5: delivers 4 */
    assert_int_equal(count_kind(f, EV_BEFORE, 2), 1);
    assert_int_equal(count_kind(f, EV_AFTER, 2), 1);
    assert_int_equal(count_kind(f, EV_AFTER, 4), 1);
    ck_expect_checkpoint(f, 4, 4);
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    ck_expect_checkpoint(f, 5, 5);
    assert_int_equal(count_kind(f, EV_END, 5), 1);
    ckpt_monitored_session_free(ms);
}

/* A checkpoint hook with its own saver across a session re-creation: the
 * write in flight when the step aborts lands before the new session
 * restores, which restores it (F15: the write no longer lands later, as
 * the newest checkpoint, under a session restored from an older one). */
static void test_f15_own_saver_write_lands_before_recovery(void **state)
{
    ck_fixture *f = *state;
    ckpt_hook h = new_async_hook(f, CKPT_BUSY_SKIP, 2, 1, -1.0);
    ckpt_session_options sess = ck_session_options(f, 1, NULL);
    ckpt_monitored_session *ms = NULL;
    pthread_t t;
    assert_ckpt_ok(ckpt_monitored_session_new(&ms, f->graph, &h, 1, &sess));
    ck_wait_idle(&h);
    assert_true(ck_has_checkpoint(f, 0));
    gate_close(&f->cfs.gate);
    f->abort_at = 3;
    assert_ckpt_ok(ck_run(f, ms)); /* 1 */
    assert_ckpt_ok(ck_run(f, ms)); /* 2: its write is held */
    gate_wait_blocked(&f->cfs.gate);
    assert_int_equal(pthread_create(&t, NULL, open_later, &f->cfs.gate), 0);
    assert_ckpt_ok(ck_run(f, ms)); /* aborted, restored at 2, then 3 */
    pthread_join(t, NULL);
    assert_true(f->aborted);
    assert_int_equal(f->gstep, 3);
    ck_expect_checkpoint(f, 2, 2);
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    ck_expect_checkpoint(f, 3, 3);
    assert_int_equal(ck_latest_step(f), 3);
    ckpt_monitored_session_free(ms);
}

static int end_fails(ckpt_session *s, void *payload)
{
    (void)s;
    (void)payload;
    return CKPT_EUSER;
}

/* F5 with B29: a hook before the checkpoint hook fails in end, so the
 * checkpoint hook gets neither end nor on_abort; close still waits for its
 * write in flight (within the grace period) before it returns the error. */
static void test_f5_close_waits_when_an_earlier_end_fails(void **state)
{
    ck_fixture *f = *state;
    ckpt_hook hooks[2];
    ckpt_monitored_session *ms;
    pthread_t t;
    memset(&hooks[0], 0, sizeof(hooks[0]));
    hooks[0].version = CKPT_HOOK_VERSION;
    hooks[0].name = "fails in end";
    hooks[0].end = end_fails;
    hooks[1] = new_async_hook(f, CKPT_BUSY_SKIP, 2, 1, -1.0);
    ms = ck_session(f, hooks, 2);
    ck_wait_idle(&hooks[1]);
    gate_close(&f->cfs.gate);
    assert_ckpt_ok(ck_run(f, ms)); /* 1 */
    assert_ckpt_ok(ck_run(f, ms)); /* 2: its write is held */
    gate_wait_blocked(&f->cfs.gate);
    assert_int_equal(pthread_create(&t, NULL, open_later, &f->cfs.gate), 0);
    assert_ckpt_error(ckpt_monitored_session_close(ms, 0), CKPT_EUSER,
                      "fails in end");
    assert_true(ck_has_checkpoint(f, 2)); /* landed before close returned */
    pthread_join(t, NULL);
    ck_expect_checkpoint(f, 2, 2);
    assert_int_equal(count_kind(f, EV_END, -1), 0);
    ckpt_monitored_session_free(ms);
}

/* A directory another saver of this process holds (here another
 * session's hook, which saved step 0 there first): the async hook's
 * trigger fails with the saver's CKPT_EBUSY naming the directory, as the
 * sync hook's does. It was taken for a trigger skipped because a write was
 * running: runs returned 0, the log blamed a running write, the metrics
 * counted no skip, and no checkpoint was written. */
static ckpt_hook posix_async_hook(ck_fixture *f)
{
    /* the directory lock is the POSIX file system's */
    ckpt_saver_options so = ck_saver_options(f, CKPT_BUSY_SKIP);
    ckpt_checkpoint_hook_options o;
    ckpt_hook h;
    so.fs = NULL;
    o = ck_hook_options(f, CKPT_SAVE_ASYNC, 2, &so, NULL, 0);
    assert_ckpt_ok(ckpt_checkpoint_hook_new(&h, &o));
    return h;
}

static ckpt_monitored_session *posix_session(ck_fixture *f, ckpt_hook *h)
{
    ckpt_session_options so = ck_session_options(f, 0, NULL);
    ckpt_monitored_session *ms = NULL;
    so.fs = NULL;
    assert_ckpt_ok(ckpt_monitored_session_new(&ms, f->graph, h, 1, &so));
    return ms;
}

static void test_directory_held_by_another_saver_is_an_error(void **state)
{
    ck_fixture *f = *state;
    ckpt_hook first = posix_async_hook(f);
    ckpt_hook second = posix_async_hook(f);
    ckpt_monitored_session *holder = posix_session(f, &first);
    ckpt_monitored_session *ms;
    ckpt_saver_metrics m;
    ck_wait_idle(&first);
    ms = posix_session(f, &second);
    assert_ckpt_ok(ck_run(f, ms)); /* step 1: no trigger */
    assert_ckpt_error(ck_run(f, ms), CKPT_EBUSY,
                      "another saver of this process saves there");
    assert_non_null(strstr(ckpt_error_last()->message, f->ckdir));
    assert_int_equal(ck_log_count(f, "skipped: the previous write"), 0);
    m = ck_metrics(&second);
    assert_int_equal(m.saves_skipped, 0);
    assert_int_equal(m.saves_started, 0);
    assert_false(ck_has_checkpoint(f, 2));
    assert_ckpt_error(ckpt_monitored_session_close(ms, 0), CKPT_EBUSY,
                      "another saver of this process saves there");
    ckpt_monitored_session_free(ms);
    assert_ckpt_ok(ckpt_monitored_session_close(holder, 0));
    ckpt_monitored_session_free(holder);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, ck_setup, ck_teardown)
        T(test_b58_async_values_are_snapshot_at_trigger_step),
        T(test_b59_async_after_run_does_not_wait_for_io),
        T(test_b60_skip_retries_at_next_free_step),
        T(test_b61_wait_blocks_until_write_ends),
        T(test_b62_coalesce_replaces_pending_snapshot),
        T(test_b63_background_failure_returned_once),
        T(test_b63_background_failure_returned_by_end),
        T(test_b64_end_resaves_step_whose_write_failed),
        T(test_b48_async_initial_save_is_async),
        T(test_b54_async_end_saves_final_step),
        T(test_b65_end_wait_times_out),
        T(test_b65_end_bounded_with_failure_pending),
        T(test_b66_end_does_not_rewrite_in_flight_final_step),
        T(test_b67_listener_threads_and_steps),
        T(test_b53_async_listener_stop_request),
        T(test_b68_abnormal_close_waits_for_write),
        T(test_b68_abnormal_close_wait_is_bounded),
        T(test_b69_metrics_one_event_per_trigger_skip),
        T(test_b69_metrics_one_event_per_trigger_coalesce),
        T(test_b57_async_state_file_names_only_complete_checkpoints),
        T(test_b49_async_scaffold_saver_across_recovery),
        T(test_f15_own_saver_write_lands_before_recovery),
        T(test_f5_close_waits_when_an_earlier_end_fails),
        T(test_directory_held_by_another_saver_is_an_error),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
