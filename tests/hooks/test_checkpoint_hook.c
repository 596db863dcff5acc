/* CheckpointSaverHook (mode SYNC) and what both modes share, end to end
 * through a monitored session: option checks, the directory and global step
 * at begin, the initial save and its skip, the step and seconds schedules,
 * listener order and stop requests, the final save at end, failing saves,
 * the state file naming only complete checkpoints (B44-B57), and the
 * durability of the directories begin creates. */
#include "ckhook_test_util.h"

#include "support/fs_fault.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static ckpt_hook new_hook(const ckpt_checkpoint_hook_options *o)
{
    ckpt_hook h;
    assert_ckpt_ok(ckpt_checkpoint_hook_new(&h, o));
    return h;
}

/* Steps of the events of one kind (listener 0 only). */
static int event_steps(ck_fixture *f, ev_kind kind, int64_t *out, int max)
{
    ck_event ev[CK_MAX_EVENTS];
    int n = ck_events(f, kind, ev, CK_MAX_EVENTS), k = 0;
    for (int i = 0; i < n; i++)
        if (ev[i].listener == 0 && k < max)
            out[k++] = ev[i].step;
    return k;
}

static void expect_steps(ck_fixture *f, ev_kind kind, const int64_t *want,
                         int nwant)
{
    int64_t got[CK_MAX_EVENTS];
    int n = event_steps(f, kind, got, CK_MAX_EVENTS);
    if (n != nwant) {
        for (int i = 0; i < n; i++)
            print_message("event %d: step %lld\n", i, (long long)got[i]);
        fail_msg("%d events of kind %d, want %d", n, (int)kind, nwant);
    }
    for (int i = 0; i < n; i++)
        assert_int_equal(got[i], want[i]);
}

static void make_dir_p(ck_fixture *f)
{
    char path[8192];
    snprintf(path, sizeof(path), "%s/ck", f->root);
    mkdir(path, 0755);
    snprintf(path, sizeof(path), "%s/ck/a", f->root);
    mkdir(path, 0755);
    mkdir(f->ckdir, 0755);
}

/* B44: an explicit saver and use_scaffold exclude each other. */
static void test_b44_saver_and_scaffold_are_exclusive(void **state)
{
    ck_fixture *f = *state;
    ckpt_saver_options so = ck_saver_options(f, CKPT_BUSY_SKIP);
    ckpt_checkpoint_hook_options o =
        ck_hook_options(f, CKPT_SAVE_SYNC, 5, &so, NULL, 0);
    ckpt_saver *saver = NULL;
    ckpt_hook h;
    make_dir_p(f);
    assert_ckpt_ok(ckpt_saver_open(&saver, f->ckdir, &so));
    o.saver = saver;
    o.use_scaffold = 1;
    assert_ckpt_error(ckpt_checkpoint_hook_new(&h, &o), CKPT_EINVAL,
                      "use_scaffold");
    o.use_scaffold = 0;
    h = new_hook(&o);
    ckpt_hook_free(&h);
    o.saver = NULL;
    o.use_scaffold = 1;
    o.mode = CKPT_SAVE_ASYNC;
    /* Saver options would configure a saver the hook does not open. */
    assert_ckpt_error(ckpt_checkpoint_hook_new(&h, &o), CKPT_EINVAL,
                      "give them as the session's saver_options");
    o.saver_options = NULL;
    h = new_hook(&o);
    ckpt_hook_free(&h);
    ckpt_saver_free(saver);
}

/* B45: exactly one of save_secs and save_steps. */
static void test_b45_needs_exactly_one_frequency(void **state)
{
    ck_fixture *f = *state;
    ckpt_checkpoint_hook_options o =
        ck_hook_options(f, CKPT_SAVE_SYNC, 0, NULL, NULL, 0);
    ckpt_hook h;
    assert_ckpt_error(ckpt_checkpoint_hook_new(&h, &o), CKPT_EINVAL,
                      "exactly one of save_secs and save_steps");
    o.save_steps = 10;
    o.save_secs = 60.0;
    assert_ckpt_error(ckpt_checkpoint_hook_new(&h, &o), CKPT_EINVAL,
                      "exactly one of save_secs and save_steps");
    o.save_steps = -1; /* <= 0 means unset */
    o.save_secs = 0.0;
    assert_ckpt_error(ckpt_checkpoint_hook_new(&h, &o), CKPT_EINVAL,
                      "exactly one");
    o.mode = CKPT_SAVE_ASYNC;
    assert_ckpt_error(ckpt_checkpoint_hook_new(&h, &o), CKPT_EINVAL,
                      "exactly one");
    o.save_secs = 30.0;
    h = new_hook(&o);
    assert_string_equal(h.name, "AsyncCheckpointSaverHook");
    h.destroy(h.payload);
    o.mode = CKPT_SAVE_SYNC;
    o.save_secs = 0.0;
    o.save_steps = 3;
    h = new_hook(&o);
    assert_string_equal(h.name, "CheckpointSaverHook");
    h.destroy(h.payload);
    /* No directory in the hook: the session's is used; neither is
     * CKPT_EINVAL at begin (tests/hooks/test_newcomer.c). */
    o.checkpoint_dir = NULL;
    h = new_hook(&o);
    ckpt_hook_free(&h);
    assert_ckpt_error(ckpt_checkpoint_hook_new(&h, NULL), CKPT_EINVAL, "opts");
}

/* B46: begin creates every missing level of the directory, then calls the
 * listeners' begin in order, before any save. */
static void test_b46_begin_creates_directory_and_calls_listeners(void **state)
{
    ck_fixture *f = *state;
    ckpt_saver_listener ls[3];
    ckpt_saver_options so = ck_saver_options(f, CKPT_BUSY_SKIP);
    ckpt_checkpoint_hook_options o =
        ck_hook_options(f, CKPT_SAVE_SYNC, 5, &so, ls, 3);
    ckpt_hook h = new_hook(&o);
    ckpt_monitored_session *ms;
    struct stat st;
    assert_int_not_equal(stat(f->ckdir, &st), 0);
    ms = ck_session(f, &h, 1);
    assert_int_equal(stat(f->ckdir, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_true(f->nevents >= 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(f->events[i].kind, EV_BEGIN);
        assert_int_equal(f->events[i].listener, i);
    }
    assert_int_equal(f->events[3].kind, EV_BEFORE);
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    ckpt_monitored_session_free(ms);
}

/* B47: without a global step, begin fails with ESTATE. */
static void test_b47_begin_without_global_step(void **state)
{
    ck_fixture *f = *state;
    ckpt_checkpoint_hook_options o =
        ck_hook_options(f, CKPT_SAVE_SYNC, 5, NULL, NULL, 0);
    ckpt_graph *g = NULL;
    ckpt_monitored_session *ms = NULL;
    ckpt_session_options so = CKPT_SESSION_OPTIONS_INIT;
    ckpt_hook h = new_hook(&o);
    ckpt_var w;
    assert_ckpt_ok(ckpt_graph_new(&g));
    w = test_float_var("w", f->vals, CK_NVALS);
    assert_ckpt_ok(ckpt_graph_add_var(g, &w));
    assert_ckpt_error(ckpt_monitored_session_new(&ms, g, &h, 1, &so),
                      CKPT_ESTATE, "global step");
    assert_null(ms);
    ckpt_graph_free(g);
}

/* B48: the session's creation saves <dir>/<basename>-<S0> and sets the
 * timer to S0 (the next save is S0 + N). */
static void test_b48_initial_save_at_current_step(void **state)
{
    ck_fixture *f = *state;
    ckpt_saver_listener ls[1];
    ckpt_saver_options so = ck_saver_options(f, CKPT_BUSY_SKIP);
    ckpt_checkpoint_hook_options o;
    ckpt_hook h;
    ckpt_monitored_session *ms;
    static const int64_t want[] = {7, 12};
    so.basename = "my.ckpt";
    o = ck_hook_options(f, CKPT_SAVE_SYNC, 5, &so, ls, 1);
    h = new_hook(&o);
    ck_fill(f, 7);
    ms = ck_session(f, &h, 1);
    assert_true(file_exists(f->ckdir, "my.ckpt-7.index"));
    assert_true(file_exists(f->ckdir, "my.ckpt-7.data-00000-of-00001"));
    for (int i = 0; i < 5; i++)
        assert_ckpt_ok(ck_run(f, ms));
    assert_int_equal(f->gstep, 12);
    expect_steps(f, EV_AFTER, want, 2);
    for (int s = 8; s < 12; s++) {
        char name[64];
        snprintf(name, sizeof(name), "my.ckpt-%d.index", s);
        assert_false(file_exists(f->ckdir, name));
    }
    {
        ck_event ev[8];
        int n = ck_events(f, EV_AFTER, ev, 8);
        char want_prefix[8192];
        assert_int_equal(n, 2);
        snprintf(want_prefix, sizeof(want_prefix), "%s/my.ckpt-7", f->ckdir);
        assert_string_equal(ev[0].prefix, want_prefix);
    }
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    ckpt_monitored_session_free(ms);
}

/* B48 with the scaffold's saver. */
static void test_b48_initial_save_with_scaffold_saver(void **state)
{
    ck_fixture *f = *state;
    ckpt_saver_listener ls[1];
    ckpt_checkpoint_hook_options o =
        ck_hook_options(f, CKPT_SAVE_SYNC, 2, NULL, ls, 1);
    ckpt_session_options so = CKPT_SESSION_OPTIONS_INIT;
    ckpt_saver_options sopts = ck_saver_options(f, CKPT_BUSY_SKIP);
    ckpt_monitored_session *ms = NULL;
    ckpt_hook h;
    static const int64_t want[] = {0, 2, 3};
    o.use_scaffold = 1;
    h = new_hook(&o);
    so.clock = &f->clock.clock;
    so.fs = &f->cfs.fwd.fs;
    so.checkpoint_dir = f->ckdir;
    so.saver_options = &sopts;
    assert_ckpt_ok(ckpt_monitored_session_new(&ms, f->graph, &h, 1, &so));
    assert_non_null(ckpt_session_saver(ckpt_monitored_session_session(ms)));
    assert_true(ck_has_checkpoint(f, 0));
    for (int i = 0; i < 3; i++)
        assert_ckpt_ok(ck_run(f, ms));
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    expect_steps(f, EV_AFTER, want, 3);
    ck_expect_checkpoint(f, 3, 3);
    assert_int_equal(ck_metrics(&h).saves_completed, 3);
    ckpt_monitored_session_free(ms);
}

/* B49: a new session does not save again at a step the newest checkpoint
 * already has, unless save_initial_if_present; another step is saved. */
static void test_b49_initial_save_skipped_when_newest_has_step(void **state)
{
    ck_fixture *f = *state;
    ckpt_saver_listener ls[1];
    ckpt_saver_options so = ck_saver_options(f, CKPT_BUSY_SKIP);
    ckpt_checkpoint_hook_options o =
        ck_hook_options(f, CKPT_SAVE_SYNC, 5, &so, ls, 1);
    ckpt_monitored_session *ms;
    ckpt_hook h = new_hook(&o);
    ms = ck_session(f, &h, 1);
    assert_int_equal(ck_metrics(&h).saves_started, 1);
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    assert_int_equal(ck_metrics(&h).saves_started, 1); /* end: L == 0 */
    ckpt_monitored_session_free(ms);

    f->nevents = 0;
    h = new_hook(&o);
    ms = ck_session(f, &h, 1);
    assert_int_equal(ck_metrics(&h).saves_started, 0);
    assert_int_equal(f->nevents, 1); /* begin only */
    assert_int_equal(ck_log_count(f, "initial save skipped"), 1);
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    assert_int_equal(ck_metrics(&h).saves_started, 0);
    ckpt_monitored_session_free(ms);

    o.save_initial_if_present = 1;
    h = new_hook(&o);
    ms = ck_session(f, &h, 1);
    assert_int_equal(ck_metrics(&h).saves_started, 1);
    ckpt_monitored_session_free(ms);

    /* A session that does not restore (the hook's directory is also the
     * session's, so a chief would restore step 0) at step 3 saves it. */
    o.save_initial_if_present = 0;
    ck_fill(f, 3);
    h = new_hook(&o);
    {
        ckpt_session_options so2 = ck_session_options(f, 0, NULL);
        so2.not_chief = 1;
        ms = NULL;
        assert_ckpt_ok(ckpt_monitored_session_new(&ms, f->graph, &h, 1, &so2));
    }
    assert_int_equal(ck_metrics(&h).saves_started, 1);
    assert_true(ck_has_checkpoint(f, 3));
    assert_int_equal(ck_latest_step(f), 3);
    ckpt_monitored_session_free(ms);
}

/* B50: save_steps=N saves at the first step_after >= last + N only. */
static void test_b50_save_steps_schedule(void **state)
{
    ck_fixture *f = *state;
    ckpt_saver_listener ls[1];
    ckpt_saver_options so = ck_saver_options(f, CKPT_BUSY_SKIP);
    ckpt_checkpoint_hook_options o =
        ck_hook_options(f, CKPT_SAVE_SYNC, 3, &so, ls, 1);
    ckpt_hook h = new_hook(&o);
    ckpt_monitored_session *ms = ck_session(f, &h, 1);
    static const int64_t want[] = {0, 3, 6, 9};
    static const int64_t want_end[] = {0, 3, 6, 9, 10};
    for (int i = 0; i < 10; i++)
        assert_ckpt_ok(ck_run(f, ms));
    expect_steps(f, EV_AFTER, want, 4);
    for (int s = 0; s <= 10; s++)
        assert_int_equal(ck_has_checkpoint(f, s), s % 3 == 0);
    for (int s = 0; s <= 9; s += 3)
        ck_expect_checkpoint(f, s, s);
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    expect_steps(f, EV_AFTER, want_end, 5);
    ckpt_monitored_session_free(ms);
}

/* B51: save_secs with a fake clock: the first step finishing after the
 * interval saves; the same step never twice, whatever the time. */
static void test_b51_save_secs_with_fake_clock(void **state)
{
    ck_fixture *f = *state;
    ckpt_saver_listener ls[1];
    ckpt_saver_options so = ck_saver_options(f, CKPT_BUSY_SKIP);
    ckpt_checkpoint_hook_options o =
        ck_hook_options(f, CKPT_SAVE_SYNC, 0, &so, ls, 1);
    ckpt_hook h;
    ckpt_monitored_session *ms;
    static const int64_t want[] = {0, 3, 6, 7};
    o.save_secs = 10.0;
    h = new_hook(&o);
    ms = ck_session(f, &h, 1); /* t = 1000: step 0 */
    f->secs_per_step = 4.0;
    for (int i = 0; i < 6; i++) /* t 1004 .. 1024: saves at 3 and 6 */
        assert_ckpt_ok(ck_run(f, ms));
    f->no_increment = 1;
    f->secs_per_step = 100.0;
    for (int i = 0; i < 2; i++) /* step stays 6 */
        assert_ckpt_ok(ck_run(f, ms));
    f->no_increment = 0;
    assert_ckpt_ok(ck_run(f, ms)); /* step 7 */
    expect_steps(f, EV_AFTER, want, 4);
    assert_false(ck_has_checkpoint(f, 5));
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    ckpt_monitored_session_free(ms);
}

/* A step function that never increments the global step: after 10 runs
 * one warning says why no checkpoint comes (triggers follow the step, and
 * the end's save is skipped as step 0 is saved); a loop whose step moves
 * once, even after a few runs at the start, is never warned about. */
static void test_global_step_that_never_moves_is_warned(void **state)
{
    ck_fixture *f = *state;
    ckpt_saver_options so = ck_saver_options(f, CKPT_BUSY_SKIP);
    ckpt_checkpoint_hook_options o =
        ck_hook_options(f, CKPT_SAVE_SYNC, 2, &so, NULL, 0);
    const char *warning = "10 steps ran and the global step is still 0: "
                          "checkpoints follow the global step";
    ckpt_hook h = new_hook(&o);
    ckpt_monitored_session *ms = ck_session(f, &h, 1);
    f->no_increment = 1;
    for (int i = 0; i < 9; i++)
        assert_ckpt_ok(ck_run(f, ms));
    assert_int_equal(ck_log_count(f, warning), 0);
    for (int i = 0; i < 20; i++)
        assert_ckpt_ok(ck_run(f, ms));
    assert_int_equal(ck_log_count(f, warning), 1); /* once */
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    ckpt_monitored_session_free(ms);
    assert_int_equal(ck_latest_step(f), 0);

    /* moved after a few runs at the start: no warning, ever */
    h = new_hook(&o);
    ms = ck_session(f, &h, 1);
    for (int i = 0; i < 5; i++)
        assert_ckpt_ok(ck_run(f, ms));
    f->no_increment = 0;
    assert_ckpt_ok(ck_run(f, ms)); /* step 1 */
    f->no_increment = 1;
    for (int i = 0; i < 20; i++)
        assert_ckpt_ok(ck_run(f, ms));
    assert_int_equal(ck_log_count(f, warning), 1);
    assert_int_equal(ck_log_count(f, "global step is still 1"), 0);
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    ckpt_monitored_session_free(ms);
}

/* save_secs = INFINITY (documented): the initial save and the end's, none
 * between, however much time passes. */
static void test_save_secs_infinite_saves_at_creation_and_end(void **state)
{
    ck_fixture *f = *state;
    ckpt_saver_listener ls[1];
    ckpt_saver_options so = ck_saver_options(f, CKPT_BUSY_SKIP);
    ckpt_checkpoint_hook_options o =
        ck_hook_options(f, CKPT_SAVE_SYNC, 0, &so, ls, 1);
    ckpt_hook h;
    ckpt_monitored_session *ms;
    static const int64_t want[] = {0, 5};
    o.save_secs = INFINITY;
    h = new_hook(&o);
    ms = ck_session(f, &h, 1);
    f->secs_per_step = 1e6;
    for (int i = 0; i < 5; i++)
        assert_ckpt_ok(ck_run(f, ms));
    for (int s = 1; s <= 5; s++)
        assert_false(ck_has_checkpoint(f, s));
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    expect_steps(f, EV_AFTER, want, 2);
    ck_expect_checkpoint(f, 5, 5);
    assert_int_equal(ck_metrics(&h).saves_completed, 2);
    ckpt_monitored_session_free(ms);
}

/* B52: before_save of every listener in order, the write, after_save of
 * every listener in order, all with the checkpoint's step. */
static void test_b52_listener_order_around_the_write(void **state)
{
    ck_fixture *f = *state;
    ckpt_saver_listener ls[2];
    ckpt_saver_options so = ck_saver_options(f, CKPT_BUSY_SKIP);
    ckpt_checkpoint_hook_options o =
        ck_hook_options(f, CKPT_SAVE_SYNC, 2, &so, ls, 2);
    ckpt_hook h = new_hook(&o);
    ckpt_monitored_session *ms = ck_session(f, &h, 1);
    char prefix[8192];
    int first;
    f->nevents = 0;
    assert_ckpt_ok(ck_run(f, ms));
    assert_int_equal(f->nevents, 0);
    assert_ckpt_ok(ck_run(f, ms));
    assert_int_equal(f->nevents, 4);
    first = 0;
    snprintf(prefix, sizeof(prefix), "%s/model.ckpt-2", f->ckdir);
    for (int i = 0; i < 2; i++) {
        ck_event *b = &f->events[first + i];
        ck_event *a = &f->events[first + 2 + i];
        assert_int_equal(b->kind, EV_BEFORE);
        assert_int_equal(b->listener, i);
        assert_int_equal(b->step, 2);
        assert_false(b->index_exists);
        assert_int_equal(a->kind, EV_AFTER);
        assert_int_equal(a->listener, i);
        assert_int_equal(a->step, 2);
        assert_true(a->index_exists);
        assert_int_equal(a->latest, 2);
        assert_string_equal(a->prefix, prefix);
        assert_true(a->on_caller);
    }
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    ckpt_monitored_session_free(ms);
}

/* B52: a failing before_save aborts that save and is returned. */
static void test_b52_before_save_failure_aborts_the_save(void **state)
{
    ck_fixture *f = *state;
    ckpt_saver_listener ls[2];
    ckpt_saver_options so = ck_saver_options(f, CKPT_BUSY_SKIP);
    ckpt_checkpoint_hook_options o =
        ck_hook_options(f, CKPT_SAVE_SYNC, 2, &so, ls, 2);
    ckpt_hook h = new_hook(&o);
    ckpt_monitored_session *ms = ck_session(f, &h, 1);
    f->listeners[0].fail_before_at = 2;
    assert_ckpt_ok(ck_run(f, ms));
    assert_ckpt_error(ck_run(f, ms), CKPT_EUSER,
                      "checkpoint listener 0: before_save failed at step 2");
    assert_false(ck_has_checkpoint(f, 2));
    f->listeners[0].fail_before_at = 0;
    assert_int_equal(ckpt_monitored_session_close(ms, CKPT_EUSER), CKPT_EUSER);
    ckpt_monitored_session_free(ms);
}

/* B53: a listener's stop request: every listener is still called and the
 * session stops after that run. */
static void test_b53_listener_stop_request_sync(void **state)
{
    ck_fixture *f = *state;
    ckpt_saver_listener ls[2];
    ckpt_saver_options so = ck_saver_options(f, CKPT_BUSY_SKIP);
    ckpt_checkpoint_hook_options o =
        ck_hook_options(f, CKPT_SAVE_SYNC, 2, &so, ls, 2);
    ckpt_hook h = new_hook(&o);
    ckpt_monitored_session *ms = ck_session(f, &h, 1);
    ck_event ev[CK_MAX_EVENTS];
    int n;
    f->listeners[0].stop_at = 4;
    for (int i = 0; i < 3; i++) {
        assert_ckpt_ok(ck_run(f, ms));
        assert_false(ckpt_monitored_session_should_stop(ms, NULL));
    }
    assert_ckpt_ok(ck_run(f, ms));
    assert_true(ckpt_monitored_session_should_stop(ms, NULL));
    n = ck_events(f, EV_AFTER, ev, CK_MAX_EVENTS);
    assert_int_equal(ev[n - 1].listener, 1);
    assert_int_equal(ev[n - 1].step, 4);
    assert_int_equal(ev[n - 2].listener, 0);
    assert_int_equal(ev[n - 2].step, 4);
    assert_ckpt_error(ck_run(f, ms), CKPT_ESTATE, NULL);
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    ckpt_monitored_session_free(ms);
}

/* B54: end saves the final step when it is not saved yet, then calls every
 * listener's end with it, in order. */
static void test_b54_end_saves_final_step_then_listeners_end(void **state)
{
    ck_fixture *f = *state;
    ckpt_saver_listener ls[2];
    ckpt_saver_options so = ck_saver_options(f, CKPT_BUSY_SKIP);
    ckpt_checkpoint_hook_options o =
        ck_hook_options(f, CKPT_SAVE_SYNC, 5, &so, ls, 2);
    ckpt_hook h = new_hook(&o);
    ckpt_monitored_session *ms = ck_session(f, &h, 1);
    int n;
    for (int i = 0; i < 7; i++)
        assert_ckpt_ok(ck_run(f, ms));
    assert_false(ck_has_checkpoint(f, 7));
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    ck_expect_checkpoint(f, 7, 7);
    n = f->nevents;
    assert_true(n >= 6);
    assert_int_equal(f->events[n - 4].kind, EV_AFTER);
    assert_int_equal(f->events[n - 4].step, 7);
    assert_int_equal(f->events[n - 3].kind, EV_AFTER);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(f->events[n - 2 + i].kind, EV_END);
        assert_int_equal(f->events[n - 2 + i].listener, i);
        assert_int_equal(f->events[n - 2 + i].step, 7);
    }
    assert_int_equal(ck_metrics(&h).saves_completed, 3); /* 0, 5, 7 */
    ckpt_monitored_session_free(ms);
}

/* B29 with a checkpoint hook: a hook before it whose end fails skips its
 * end, and with it the final checkpoint. That is TensorFlow's order, but
 * it was silent (close returned only the failing hook's error): now a
 * warning names the checkpoint hook and the step left unsaved. A failing
 * hook after the checkpoint hook loses nothing and warns of nothing. */
static int end_fails(ckpt_session *s, void *payload)
{
    (void)s;
    (void)payload;
    return ckpt_error_set(CKPT_EIO, "flushing my metrics failed");
}

static void test_b29_failing_end_before_checkpoint_hook_warns(void **state)
{
    ck_fixture *f = *state;
    ckpt_saver_options so = ck_saver_options(f, CKPT_BUSY_SKIP);
    ckpt_session_options sess = ck_session_options(f, 0, NULL);
    ckpt_hook hooks[2];
    ckpt_monitored_session *ms = NULL;
    sess.log = so.log; /* the fixture's log, which the test reads */
    sess.log_payload = so.log_payload;
    for (int order = 0; order < 2; order++) {
        int mine = order == 0 ? 0 : 1;
        ckpt_checkpoint_hook_options o =
            ck_hook_options(f, CKPT_SAVE_SYNC, 5, &so, NULL, 0);
        int64_t last = f->gstep + 7;
        memset(&hooks[mine], 0, sizeof(hooks[mine]));
        hooks[mine].version = CKPT_HOOK_VERSION;
        hooks[mine].name = "metrics";
        hooks[mine].end = end_fails;
        hooks[1 - mine] = new_hook(&o);
        make_dir_p(f);
        assert_ckpt_ok(
            ckpt_monitored_session_new(&ms, f->graph, hooks, 2, &sess));
        while (f->gstep < last)
            assert_ckpt_ok(ck_run(f, ms));
        assert_ckpt_error(ckpt_monitored_session_close(ms, 0), CKPT_EIO,
                          "hook 'metrics' end: flushing my metrics failed");
        ckpt_monitored_session_free(ms);
        if (order == 0) {
            assert_false(ck_has_checkpoint(f, 7));
            assert_int_equal(
                ck_log_count(f, "hook 'metrics' end failed, so the end of "
                                "the hooks after it did not run: "
                                "'CheckpointSaverHook' saved no final "
                                "checkpoint (global step 7); give the "
                                "session a hook whose end may fail after "
                                "the checkpoint hook"),
                1);
        } else {
            ck_expect_checkpoint(f, 14, 14);
            assert_int_equal(ck_log_count(f, "saved no final checkpoint"), 1);
        }
    }
}

/* B55: end does not save again the step the last trigger saved. */
static void test_b55_end_does_not_resave_last_trigger(void **state)
{
    ck_fixture *f = *state;
    ckpt_saver_listener ls[1];
    ckpt_saver_options so = ck_saver_options(f, CKPT_BUSY_SKIP);
    ckpt_checkpoint_hook_options o =
        ck_hook_options(f, CKPT_SAVE_SYNC, 5, &so, ls, 1);
    ckpt_hook h = new_hook(&o);
    ckpt_monitored_session *ms = ck_session(f, &h, 1);
    static const int64_t want[] = {0, 5};
    static const int64_t want_end[] = {5};
    for (int i = 0; i < 5; i++)
        assert_ckpt_ok(ck_run(f, ms));
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    expect_steps(f, EV_BEFORE, want, 2);
    expect_steps(f, EV_END, want_end, 1);
    assert_int_equal(ck_metrics(&h).saves_started, 2);
    ckpt_monitored_session_free(ms);
}

/* B56: a failing synchronous save is returned from after_run, hence from
 * the run; the step is saved by end once the disk works again. */
static void test_b56_failing_sync_save_is_returned(void **state)
{
    ck_fixture *f = *state;
    ckpt_saver_listener ls[1];
    ckpt_saver_options so = ck_saver_options(f, CKPT_BUSY_SKIP);
    ckpt_checkpoint_hook_options o =
        ck_hook_options(f, CKPT_SAVE_SYNC, 2, &so, ls, 1);
    ckpt_hook h = new_hook(&o);
    ckpt_monitored_session *ms = ck_session(f, &h, 1);
    static const int64_t want[] = {0, 2};
    assert_ckpt_ok(ck_run(f, ms));
    atomic_store(&f->cfs.fail_writes, 1);
    assert_ckpt_error(ck_run(f, ms), CKPT_ENOSPC, "no space left");
    atomic_store(&f->cfs.fail_writes, 0);
    assert_false(ck_has_checkpoint(f, 2));
    assert_int_equal(ck_latest_step(f), 0);
    assert_int_equal(ck_metrics(&h).saves_failed, 1);
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    ck_expect_checkpoint(f, 2, 2); /* end: 2 is not durable yet */
    expect_steps(f, EV_AFTER, want, 2);
    assert_int_equal(count_files(f->ckdir, "tempstate"), 0);
    ckpt_monitored_session_free(ms);
}

/* B57: each replacement of the state file names a checkpoint whose index
 * and data file are in place (checked by the file system at the rename). */
static void test_b57_state_file_names_only_complete_checkpoints(void **state)
{
    ck_fixture *f = *state;
    ckpt_saver_listener ls[1];
    ckpt_saver_options so = ck_saver_options(f, CKPT_BUSY_SKIP);
    ckpt_checkpoint_hook_options o =
        ck_hook_options(f, CKPT_SAVE_SYNC, 2, &so, ls, 1);
    ckpt_hook h = new_hook(&o);
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
        assert_int_equal(ev[i].latest, ev[i].step);
        assert_true(file_exists(f->ckdir, "checkpoint"));
    }
    assert_true(file_exists(f->ckdir, "model.ckpt-7.data-00000-of-00001"));
    ckpt_monitored_session_free(ms);
}

/* The caller's saver: its own on_save_done still hears of every save while
 * the hook is attached, and gets its callback back at end. */
typedef struct user_cb {
    int calls;
} user_cb;

static void user_done(const ckpt_save_result *r, void *payload)
{
    (void)r;
    ((user_cb *)payload)->calls++;
}

static void test_b52_explicit_saver_keeps_callers_callback(void **state)
{
    ck_fixture *f = *state;
    ckpt_saver_listener ls[1];
    ckpt_saver_options so = ck_saver_options(f, CKPT_BUSY_SKIP);
    ckpt_checkpoint_hook_options o =
        ck_hook_options(f, CKPT_SAVE_SYNC, 2, &so, ls, 1);
    ckpt_saver *saver = NULL;
    user_cb cb = {0};
    ckpt_hook h;
    ckpt_monitored_session *ms;
    static const int64_t want[] = {0, 2, 4};
    make_dir_p(f);
    so.on_save_done = user_done;
    so.on_save_done_payload = &cb;
    assert_ckpt_ok(ckpt_saver_open(&saver, f->ckdir, &so));
    for (size_t i = 0; i < ckpt_graph_num_vars(f->graph); i++)
        assert_ckpt_ok(ckpt_saver_add_var(saver, ckpt_graph_var(f->graph, i)));
    o.saver = saver;
    h = new_hook(&o);
    ms = ck_session(f, &h, 1);
    for (int i = 0; i < 4; i++)
        assert_ckpt_ok(ck_run(f, ms));
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    expect_steps(f, EV_AFTER, want, 3);
    assert_int_equal(cb.calls, 3);
    assert_int_equal(ck_metrics(&h).saves_completed, 3);
    ckpt_monitored_session_free(ms);
    assert_ckpt_ok(ckpt_saver_save(saver, 9, NULL));
    assert_int_equal(cb.calls, 4);
    expect_steps(f, EV_AFTER, want, 3); /* the hook is gone */
    ckpt_saver_free(saver);
}

/* An explicit saver that does not save the graph's global step (not
 * registered, or registered from other storage) is refused when the
 * session is created, before anything is written: restored, it would
 * leave the step at 0 and the hook would write over the checkpoints of
 * the steps it counts through again. */
static void test_explicit_saver_without_global_step(void **state)
{
    ck_fixture *f = *state;
    int64_t elsewhere = 0;
    make_dir_p(f);
    for (int with_copy = 0; with_copy < 2; with_copy++) {
        ckpt_saver_options so = ck_saver_options(f, CKPT_BUSY_SKIP);
        ckpt_checkpoint_hook_options o =
            ck_hook_options(f, CKPT_SAVE_SYNC, 2, &so, NULL, 0);
        ckpt_session_options sess = ck_session_options(f, 0, NULL);
        ckpt_monitored_session *ms = NULL;
        ckpt_saver *saver = NULL;
        ckpt_hook h;
        assert_ckpt_ok(ckpt_saver_open(&saver, f->ckdir, &so));
        for (size_t i = 0; i < ckpt_graph_num_vars(f->graph); i++) {
            ckpt_var v = *ckpt_graph_var(f->graph, i);
            if (strcmp(v.name, "global_step") == 0) {
                if (!with_copy)
                    continue;
                v.data = &elsewhere;
            }
            assert_ckpt_ok(ckpt_saver_add_var(saver, &v));
        }
        assert_int_equal(ckpt_saver_saves_var(saver, "global_step", NULL),
                         with_copy);
        assert_int_equal(ckpt_saver_saves_var(saver, "global_step",
                                              ckpt_graph_global_step(f->graph)),
                         0);
        o.saver = saver;
        h = new_hook(&o);
        assert_ckpt_error(
            ckpt_monitored_session_new(&ms, f->graph, &h, 1, &sess),
            CKPT_EINVAL,
            "the hook's saver does not save the graph's global step");
        assert_null(ms);
        assert_false(ck_has_checkpoint(f, 0));
        ckpt_saver_free(saver);
    }
}

/* A negative global step cannot name a checkpoint (the lowest is the
 * saver's "no step", which would name it "model.ckpt"): the save at
 * creation fails, sync and async, and nothing is written. */
static void test_negative_global_step_refused(void **state)
{
    ck_fixture *f = *state;
    static const int64_t steps[] = {-5, INT64_MIN};
    for (int mode = 0; mode < 2; mode++)
        for (int k = 0; k < 2; k++) {
            ckpt_saver_options so = ck_saver_options(f, CKPT_BUSY_SKIP);
            ckpt_checkpoint_hook_options o = ck_hook_options(
                f, mode ? CKPT_SAVE_ASYNC : CKPT_SAVE_SYNC, 5, &so, NULL, 0);
            ckpt_session_options sess = ck_session_options(f, 0, NULL);
            ckpt_monitored_session *ms = NULL;
            ckpt_hook h = new_hook(&o);
            ck_fill(f, 0);
            f->gstep = steps[k];
            assert_ckpt_error(
                ckpt_monitored_session_new(&ms, f->graph, &h, 1, &sess),
                CKPT_ESTATE, "is negative");
            assert_null(ms);
            assert_false(file_exists(f->ckdir, "model.ckpt.index"));
        }
}

/* B49 (F7): re-creating the session after an aborted step restores the
 * newest checkpoint and does not write it again. */
static void test_b49_no_initial_save_after_recovery(void **state)
{
    ck_fixture *f = *state;
    ckpt_saver_listener ls[1];
    ckpt_saver_options so = ck_saver_options(f, CKPT_BUSY_SKIP);
    ckpt_checkpoint_hook_options o =
        ck_hook_options(f, CKPT_SAVE_SYNC, 2, &so, ls, 1);
    ckpt_session_options sess = ck_session_options(f, 1, &so);
    ckpt_monitored_session *ms = NULL;
    ckpt_hook h = new_hook(&o);
    static const int64_t want[] = {0, 2, 4};
    assert_ckpt_ok(ckpt_monitored_session_new(&ms, f->graph, &h, 1, &sess));
    f->abort_at = 3;
    for (int i = 0; i < 4; i++) /* 1, 2, (3 aborted: back to 2), 3, 4 */
        assert_ckpt_ok(ck_run(f, ms));
    assert_true(f->aborted);
    assert_int_equal(f->gstep, 4);
    expect_steps(f, EV_BEFORE, want, 3);
    assert_int_equal(ck_log_count(f, "initial save skipped"), 1);
    ck_expect_checkpoint(f, 4, 4);
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    assert_int_equal(ck_metrics(&h).saves_started, 3);
    ckpt_monitored_session_free(ms);
}

/* Index of the first traced event `op` on `path` at or after `from`, or
 * -1. */
static long find_event(const ckpt_fs_fault *ff, size_t from, int op,
                       const char *path)
{
    for (size_t i = from; i < ckpt_fs_fault_trace_size(ff); i++) {
        const ckpt_fs_fault_event *e = ckpt_fs_fault_trace_event(ff, i);
        if (e->op == op && (!path || strcmp(e->path, path) == 0))
            return (long)i;
    }
    return -1;
}

/* Every directory begin creates (root/ck, root/ck/a, root/ck/a/b) is made
 * durable by a sync_dir of its parent before the first save writes into
 * it: under strict POSIX semantics an unsynced new directory can vanish in
 * a power cut with every checkpoint in it. */
static void test_begin_syncs_parent_of_each_created_directory(void **state)
{
    ck_fixture *f = *state;
    ckpt_fs_fault *ff = NULL;
    ckpt_saver_options so = ck_saver_options(f, CKPT_BUSY_SKIP);
    ckpt_checkpoint_hook_options o;
    ckpt_monitored_session *ms;
    ckpt_hook h;
    char levels[3][4200];
    long first_write;
    assert_ckpt_ok(ckpt_fs_fault_new(&ff, NULL));
    so.fs = ckpt_fs_fault_fs(ff);
    o = ck_hook_options(f, CKPT_SAVE_SYNC, 1, &so, NULL, 0);
    snprintf(levels[0], sizeof(levels[0]), "%s/ck", f->root);
    snprintf(levels[1], sizeof(levels[1]), "%s/ck/a", f->root);
    snprintf(levels[2], sizeof(levels[2]), "%s/ck/a/b", f->root);
    assert_string_equal(levels[2], f->ckdir);
    ckpt_fs_fault_trace(ff, CKPT_FS_OP_BIT(CKPT_FS_OP_MKDIR) |
                                CKPT_FS_OP_BIT(CKPT_FS_OP_SYNC_DIR) |
                                CKPT_FS_OP_BIT(CKPT_FS_OP_OPEN_WRITE));
    h = new_hook(&o);
    ms = ck_session(f, &h, 1); /* begin, then the initial save */
    first_write = -1;
    for (size_t i = 0; i < ckpt_fs_fault_trace_size(ff); i++)
        if (ckpt_fs_fault_trace_event(ff, i)->op == CKPT_FS_OP_OPEN_WRITE) {
            first_write = (long)i;
            break;
        }
    assert_true(first_write >= 0);
    for (int i = 0; i < 3; i++) {
        const char *parent = i == 0 ? f->root : levels[i - 1];
        long made = find_event(ff, 0, CKPT_FS_OP_MKDIR, levels[i]);
        long synced;
        assert_true(made >= 0);
        synced = find_event(ff, (size_t)made + 1, CKPT_FS_OP_SYNC_DIR, parent);
        if (synced < 0 || synced > first_write)
            fail_msg("mkdir %s is not followed by sync_dir %s before the "
                     "first save",
                     levels[i], parent);
    }
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    ckpt_monitored_session_free(ms);
    /* The directory exists now; an earlier process may have created it
     * and died before syncing its entry: begin syncs it in its parent
     * again, before the first save. */
    ckpt_fs_fault_trace(ff, CKPT_FS_OP_BIT(CKPT_FS_OP_SYNC_DIR) |
                                CKPT_FS_OP_BIT(CKPT_FS_OP_OPEN_WRITE));
    h = new_hook(&o);
    ms = ck_session(f, &h, 1);
    {
        long synced = find_event(ff, 0, CKPT_FS_OP_SYNC_DIR, levels[1]);
        long wrote = find_event(ff, 0, CKPT_FS_OP_OPEN_WRITE, NULL);
        assert_true(synced >= 0);
        assert_true(wrote < 0 || synced < wrote);
    }
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    ckpt_monitored_session_free(ms);
    /* A run killed after creating root/ck and root/ck/a, before creating
     * root/ck/a/b or syncing either: the relaunch creates b, and syncs the
     * levels it found too (root for ck, root/ck for a), else a power cut
     * could take ck away with every checkpoint saved below it. */
    test_remove_tree(strdup(levels[2]));
    ckpt_fs_fault_trace(ff, CKPT_FS_OP_BIT(CKPT_FS_OP_SYNC_DIR) |
                                CKPT_FS_OP_BIT(CKPT_FS_OP_OPEN_WRITE));
    h = new_hook(&o);
    ms = ck_session(f, &h, 1);
    {
        long wrote = find_event(ff, 0, CKPT_FS_OP_OPEN_WRITE, NULL);
        assert_true(wrote >= 0);
        for (int i = 0; i < 3; i++) {
            const char *parent = i == 0 ? f->root : levels[i - 1];
            long synced = find_event(ff, 0, CKPT_FS_OP_SYNC_DIR, parent);
            if (synced < 0 || synced > wrote)
                fail_msg("relaunch: %s (%s) not synced in %s before the "
                         "first save",
                         levels[i], i < 2 ? "found" : "created", parent);
        }
    }
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    ckpt_monitored_session_free(ms);
    ckpt_fs_fault_free(ff);
}

/* B46: a parent the process may enter and write but not read (EACCES on
 * its sync_dir, as a /scratch at mode 1733 gives a non-root user) cannot
 * be synced by any run: begin goes on, whether it created the checkpoint
 * directory there or found it, and the hook saves; another failure of
 * that sync still fails begin, naming the directory. */
static void test_begin_passes_over_unreadable_parent(void **state)
{
    ck_fixture *f = *state;
    ckpt_fs_fault *ff = NULL;
    ckpt_saver_options so = ck_saver_options(f, CKPT_BUSY_SKIP);
    ckpt_session_options sopt = ck_session_options(f, 0, NULL);
    ckpt_checkpoint_hook_options o;
    ckpt_monitored_session *ms = NULL;
    ckpt_hook h;
    char parent[4200];
    /* the levels of ckdir, from the top, each synced in its parent: the
     * last sync of begin is ckdir's own entry, in `parent` */
    int levels = 0;
    for (const char *p = f->ckdir; *p; p++)
        levels += *p == '/';
    snprintf(parent, sizeof(parent), "%s", f->ckdir);
    *strrchr(parent, '/') = '\0';
    assert_ckpt_ok(ckpt_fs_fault_new(&ff, NULL));
    so.fs = ckpt_fs_fault_fs(ff);
    o = ck_hook_options(f, CKPT_SAVE_SYNC, 1, &so, NULL, 0);
    /* round 0 creates ckdir, round 1 finds it */
    for (int round = 0; round < 2; round++) {
        const ckpt_fs_fault_event *e = NULL;
        ckpt_fs_fault_fail(ff, (uint64_t)levels,
                           CKPT_FS_OP_BIT(CKPT_FS_OP_SYNC_DIR), EACCES, 0, 0);
        ckpt_fs_fault_trace(ff, CKPT_FS_OP_BIT(CKPT_FS_OP_SYNC_DIR));
        h = new_hook(&o);
        ms = ck_session(f, &h, 1); /* begin, then the initial save */
        for (size_t i = 0; i < ckpt_fs_fault_trace_size(ff); i++)
            if (ckpt_fs_fault_trace_event(ff, i)->injected)
                e = ckpt_fs_fault_trace_event(ff, i);
        assert_non_null(e);
        assert_string_equal(e->path, parent);
        assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
        ckpt_monitored_session_free(ms);
        assert_true(ck_has_checkpoint(f, 0));
    }
    /* EIO on that sync is no permission matter: begin fails */
    ckpt_fs_fault_fail(ff, (uint64_t)levels,
                       CKPT_FS_OP_BIT(CKPT_FS_OP_SYNC_DIR), EIO, 0, 0);
    h = new_hook(&o);
    ms = NULL;
    assert_ckpt_error(ckpt_monitored_session_new(&ms, f->graph, &h, 1, &sopt),
                      CKPT_EIO, "creating checkpoint directory");
    assert_null(ms);
    ckpt_fs_fault_free(ff);
}

static void test_metrics_of_another_hook_is_einval(void **state)
{
    ckpt_hook other;
    ckpt_saver_metrics m;
    (void)state;
    memset(&other, 0, sizeof(other));
    assert_ckpt_error(ckpt_checkpoint_hook_metrics(&other, &m), CKPT_EINVAL,
                      "not a checkpoint hook");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, ck_setup, ck_teardown)
        T(test_b44_saver_and_scaffold_are_exclusive),
        T(test_b45_needs_exactly_one_frequency),
        T(test_b46_begin_creates_directory_and_calls_listeners),
        T(test_b47_begin_without_global_step),
        T(test_b48_initial_save_at_current_step),
        T(test_b48_initial_save_with_scaffold_saver),
        T(test_negative_global_step_refused),
        T(test_b49_initial_save_skipped_when_newest_has_step),
        T(test_b49_no_initial_save_after_recovery),
        T(test_b50_save_steps_schedule),
        T(test_b51_save_secs_with_fake_clock),
        T(test_save_secs_infinite_saves_at_creation_and_end),
        T(test_global_step_that_never_moves_is_warned),
        T(test_b52_listener_order_around_the_write),
        T(test_b52_before_save_failure_aborts_the_save),
        T(test_b52_explicit_saver_keeps_callers_callback),
        T(test_explicit_saver_without_global_step),
        T(test_b53_listener_stop_request_sync),
        T(test_b54_end_saves_final_step_then_listeners_end),
        T(test_b29_failing_end_before_checkpoint_hook_warns),
        T(test_b55_end_does_not_resave_last_trigger),
        T(test_b56_failing_sync_save_is_returned),
        T(test_b57_state_file_names_only_complete_checkpoints),
        T(test_begin_syncs_parent_of_each_created_directory),
        T(test_begin_passes_over_unreadable_parent),
        T(test_metrics_of_another_hook_is_einval),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
