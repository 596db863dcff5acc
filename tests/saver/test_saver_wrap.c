/* tests/saver/test_saver_wrap.c - ckpt_saver_wrap: a ckpt_saver handle
 * over a saver implemented outside the library (a fake one here): the
 * table is checked, every ckpt_saver_* call reaches the implementation,
 * the calls it cannot serve are refused by name, and the checkpoint hook
 * over a collective saver asks its agree in seconds mode and saves at the
 * step the agreement decides, whatever its own clock says. */
#include "test_util.h"

#include "ckpt.h"
#include "common/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct fake {
    ckpt_saver_options opts;
    int calls[16];
    int64_t saved[16];
    int nsaved;
    uint64_t next_ticket;
    uint64_t undelivered; /* ticket of an async save not yet reported */
    int64_t undelivered_step;
    int64_t agree_yes_at; /* the step whose agree says 1 */
    int64_t *global_step;
    int released;
    int overlap;       /* its save_async leaves the snapshot open */
    int open;          /* a snapshot is open */
    int64_t open_step; /* its step */
    int fences[2];     /* mutation_fence calls by from_now_on */
} fake;

enum {
    C_SAVE,
    C_SAVE_ASYNC,
    C_POLL,
    C_WAIT,
    C_CLOSE,
    C_RESTORE,
    C_RESTORE_LATEST,
    C_LATEST,
    C_METRICS,
    C_SET_DONE,
    C_AGREE
};

static void deliver(fake *f, uint64_t ticket, int64_t step)
{
    ckpt_save_result r;
    memset(&r, 0, sizeof(r));
    r.ticket = ticket;
    r.step = step;
    r.prefix = "fake";
    if (f->opts.on_save_done)
        f->opts.on_save_done(&r, f->opts.on_save_done_payload);
}

static void deliver_pending(fake *f)
{
    if (f->undelivered) {
        uint64_t t = f->undelivered;
        f->undelivered = 0;
        deliver(f, t, f->undelivered_step);
    }
}

static int f_save(void *self, int64_t step, ckpt_buf *prefix_out)
{
    fake *f = self;
    (void)prefix_out;
    f->calls[C_SAVE]++;
    f->saved[f->nsaved++ & 15] = step;
    deliver(f, 0, step);
    return 0;
}

static int f_save_async(void *self, int64_t step, uint64_t *ticket_out)
{
    fake *f = self;
    f->calls[C_SAVE_ASYNC]++;
    deliver_pending(f);
    f->saved[f->nsaved++ & 15] = step;
    f->open = f->overlap;
    f->open_step = step;
    f->undelivered = ++f->next_ticket;
    f->undelivered_step = step;
    if (ticket_out)
        *ticket_out = f->undelivered;
    return 0;
}

static int f_poll(void *self, int *busy_out)
{
    fake *f = self;
    f->calls[C_POLL]++;
    deliver_pending(f);
    if (busy_out)
        *busy_out = 0;
    return 0;
}

static int f_wait(void *self, uint64_t ticket, double timeout_s)
{
    fake *f = self;
    (void)ticket;
    (void)timeout_s;
    f->calls[C_WAIT]++;
    deliver_pending(f);
    return 0;
}

static int f_close(void *self, double timeout_s)
{
    fake *f = self;
    (void)timeout_s;
    f->calls[C_CLOSE]++;
    return 0;
}

static int f_restore(void *self, const char *prefix)
{
    fake *f = self;
    f->calls[C_RESTORE]++;
    return strcmp(prefix, "fake-7") == 0 ? 0 : CKPT_ENOTFOUND;
}

static int f_restore_latest(void *self, ckpt_buf *prefix_out)
{
    fake *f = self;
    (void)prefix_out;
    f->calls[C_RESTORE_LATEST]++;
    return 0;
}

static int f_latest(void *self, ckpt_buf *out)
{
    fake *f = self;
    (void)out;
    f->calls[C_LATEST]++;
    return ckpt__error(CKPT_ENOTFOUND, "fake: no checkpoint");
}

static void f_metrics(void *self, ckpt_saver_metrics *out)
{
    fake *f = self;
    f->calls[C_METRICS]++;
    memset(out, 0, sizeof(*out));
    out->saves_started = 42;
}

static const ckpt_saver_options *f_options(const void *self)
{
    return &((const fake *)self)->opts;
}

static void f_set_done(void *self, ckpt_save_done_fn fn, void *payload)
{
    fake *f = self;
    f->calls[C_SET_DONE]++;
    f->opts.on_save_done = fn;
    f->opts.on_save_done_payload = payload;
}

/* The decision of "rank 0": yes at one step only. */
static int f_agree(void *self, int *flag)
{
    fake *f = self;
    f->calls[C_AGREE]++;
    *flag = *f->global_step == f->agree_yes_at;
    return 0;
}

static void f_release(void *self)
{
    ((fake *)self)->released++;
}

/* Saves only "w" (from anywhere). */
static int f_saves_var(const void *self, const char *name, const void *data)
{
    (void)self;
    (void)data;
    return strcmp(name, "w") == 0;
}

static int f_mutation_fence(void *self, int from_now_on)
{
    fake *f = self;
    f->fences[from_now_on != 0]++;
    if (from_now_on)
        f->overlap = 1;
    f->open = 0;
    return 0;
}

static int f_open_snapshot(const void *self, int64_t *step)
{
    const fake *f = self;
    if (!f->open)
        return 0;
    *step = f->open_step;
    return 1;
}

static ckpt_saver_ops fake_ops(int collective)
{
    ckpt_saver_ops o;
    memset(&o, 0, sizeof(o));
    o.version = CKPT_SAVER_OPS_VERSION;
    o.collective = collective;
    o.save = f_save;
    o.save_async = f_save_async;
    o.poll = f_poll;
    o.wait = f_wait;
    o.close = f_close;
    o.restore = f_restore;
    o.restore_latest = f_restore_latest;
    o.latest = f_latest;
    o.get_metrics = f_metrics;
    o.get_options = f_options;
    o.set_on_save_done = f_set_done;
    o.agree = f_agree;
    o.release = f_release;
    o.mutation_fence = f_mutation_fence;
    o.open_snapshot = f_open_snapshot;
    return o;
}

static void fake_init(fake *f)
{
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    memset(f, 0, sizeof(*f));
    f->opts = o;
    f->opts.basename = "model.ckpt";
    f->agree_yes_at = -1;
}

static void test_wrap_checks_the_table(void **state)
{
    ckpt_saver_ops ops = fake_ops(0);
    ckpt_saver *s = (ckpt_saver *)&ops;
    fake f;
    (void)state;
    fake_init(&f);
    assert_ckpt_error(ckpt_saver_wrap(NULL, &ops, &f), CKPT_EINVAL, "NULL");
    assert_ckpt_error(ckpt_saver_wrap(&s, NULL, &f), CKPT_EINVAL, "NULL");
    assert_null(s);
    ops.version = 0;
    assert_ckpt_error(ckpt_saver_wrap(&s, &ops, &f), CKPT_EVERSION,
                      "CKPT_SAVER_OPS_VERSION");
    ops = fake_ops(0);
    ops.poll = NULL;
    assert_ckpt_error(ckpt_saver_wrap(&s, &ops, &f), CKPT_EINVAL,
                      "member 'poll' is NULL");
    ops = fake_ops(0);
    ops.agree = NULL; /* optional */
    ops.release = NULL;
    f.opts.basename = NULL;
    assert_ckpt_error(ckpt_saver_wrap(&s, &ops, &f), CKPT_EINVAL,
                      "no basename");
    f.opts.basename = "b";
    assert_ckpt_ok(ckpt_saver_wrap(&s, &ops, &f));
    ckpt_saver_free(s);
}

static void test_wrap_forwards_every_call(void **state)
{
    ckpt_saver_ops ops = fake_ops(0);
    ckpt_saver *s = NULL;
    ckpt_saver_metrics m;
    ckpt_buf b = CKPT_BUF_INIT;
    ckpt_var v;
    const char *names[1] = {"x"};
    uint64_t ticket = 0;
    int64_t x = 0;
    fake f;
    (void)state;
    fake_init(&f);
    assert_ckpt_ok(ckpt_saver_wrap(&s, &ops, &f));
    assert_ptr_equal(ckpt_saver_get_options(s), &f.opts);
    assert_ckpt_ok(ckpt_saver_save(s, 3, NULL));
    assert_ckpt_ok(ckpt_saver_save_async(s, 4, &ticket));
    assert_true(ticket == 1);
    assert_ckpt_ok(ckpt_saver_poll(s, NULL));
    assert_ckpt_ok(ckpt_saver_wait(s, 0, 1.0));
    assert_ckpt_ok(ckpt_saver_restore(s, "fake-7"));
    assert_int_equal(ckpt_saver_restore(s, "other"), CKPT_ENOTFOUND);
    assert_ckpt_ok(ckpt_saver_restore_latest(s, NULL));
    assert_ckpt_error(ckpt_saver_latest(s, &b), CKPT_ENOTFOUND,
                      "fake: no checkpoint");
    ckpt_saver_get_metrics(s, &m);
    assert_int_equal(m.saves_started, 42);
    ckpt_saver_set_on_save_done(s, NULL, NULL);
    assert_ckpt_ok(ckpt_saver_close(s, 1.0));
    assert_int_equal(f.calls[C_SAVE], 1);
    assert_int_equal(f.calls[C_SAVE_ASYNC], 1);
    assert_int_equal(f.calls[C_POLL], 1);
    assert_int_equal(f.calls[C_WAIT], 1);
    assert_int_equal(f.calls[C_RESTORE], 2);
    assert_int_equal(f.calls[C_RESTORE_LATEST], 1);
    assert_int_equal(f.calls[C_LATEST], 1);
    assert_int_equal(f.calls[C_METRICS], 1);
    assert_int_equal(f.calls[C_SET_DONE], 1);
    assert_int_equal(f.calls[C_CLOSE], 1);
    /* what a wrapped saver cannot do, refused by name */
    memset(&v, 0, sizeof(v));
    v.name = "x";
    v.dtype = CKPT_DT_INT64;
    v.data = &x;
    assert_ckpt_error(ckpt_saver_add_var(s, &v), CKPT_ENOTSUP,
                      "'x' goes to the saver this handle wraps");
    assert_ckpt_error(ckpt_saver_restore_subset(s, "fake-7", names, 1),
                      CKPT_ENOTSUP, "restores every variable");
    assert_ckpt_error(ckpt_saver_checkpoint(s, 0, &b), CKPT_ENOTSUP,
                      "does not list");
    assert_int_equal(ckpt_saver_num_checkpoints(s), 0);
    assert_int_equal(ckpt_saver_staging_bytes(s), 0);
    assert_ckpt_error(ckpt_saver_saves_var(s, "w", NULL), CKPT_ENOTSUP,
                      "do not offer saves_var");
    ops.saves_var = f_saves_var;
    assert_int_equal(ckpt_saver_saves_var(s, "w", &x), 1);
    assert_int_equal(ckpt_saver_saves_var(s, "x", &x), 0);
    assert_ckpt_error(ckpt_saver_saves_var(s, NULL, NULL), CKPT_EINVAL,
                      "name is NULL");
    ops.version = 1; /* a version 1 table ends before the member */
    assert_ckpt_error(ckpt_saver_saves_var(s, "w", NULL), CKPT_ENOTSUP,
                      "do not offer saves_var");
    ops.version = CKPT_SAVER_OPS_VERSION;
    assert_ckpt_ok(ckpt_saver_reserve(s));
    assert_ckpt_ok(ckpt_saver_mutation_fence(s)); /* nothing to complete */
    ckpt_saver_free(s);
    assert_int_equal(f.released, 1);
    ckpt_buf_dispose(&b);
}

static double frozen_clock(void *payload)
{
    (void)payload;
    return 0.0; /* the local timer never triggers */
}

static int step_fn(ckpt_step_context *sc, void *payload)
{
    (void)sc;
    (*(int64_t *)payload)++;
    return 0;
}

/* A monitored session with one checkpoint hook of `ho` (its saver and
 * directory set here) over `f` wrapped by `ops`, with session options
 * `so`, run for `steps` steps of `step` (given the global step), closed
 * and freed with everything it used. */
static void run_wrapped_session(const ckpt_saver_ops *ops, fake *f,
                                ckpt_checkpoint_hook_options ho,
                                const ckpt_session_options *so, int steps,
                                ckpt_step_fn step)
{
    ckpt_saver *s = NULL;
    ckpt_graph *g = NULL;
    ckpt_monitored_session *ms = NULL;
    ckpt_hook hook;
    char *dir = test_make_temp_dir();
    int64_t gs = 0;
    f->global_step = &gs;
    assert_ckpt_ok(ckpt_saver_wrap(&s, ops, f));
    assert_ckpt_ok(ckpt_graph_new(&g));
    assert_ckpt_ok(ckpt_graph_create_global_step(g, &gs));
    ho.saver = s;
    ho.checkpoint_dir = dir;
    assert_ckpt_ok(ckpt_checkpoint_hook_new(&hook, &ho));
    assert_ckpt_ok(ckpt_monitored_session_new(&ms, g, &hook, 1, so));
    for (int i = 0; i < steps; i++)
        assert_ckpt_ok(ckpt_monitored_session_run(ms, NULL, step, &gs, NULL));
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    ckpt_monitored_session_free(ms);
    f->global_step = NULL;
    ckpt_saver_free(s);
    ckpt_graph_free(g);
    test_remove_tree(dir);
}

/* Seconds mode over a collective saver: agree once per step decides;
 * the hook saves at step 5 (and 0 at creation, 8 at end) although its own
 * clock stands still. Over a saver that is not collective the same agree
 * is never asked. */
static void test_hook_asks_agree_in_seconds_mode(void **state)
{
    for (int collective = 0; collective < 2; collective++) {
        ckpt_saver_ops ops = fake_ops(collective);
        ckpt_clock clock = {CKPT_CLOCK_VERSION, NULL, frozen_clock, NULL};
        ckpt_checkpoint_hook_options ho = CKPT_CHECKPOINT_HOOK_OPTIONS_INIT;
        ckpt_session_options so = CKPT_SESSION_OPTIONS_INIT;
        fake f;
        (void)state;
        fake_init(&f);
        f.agree_yes_at = 5;
        ho.save_secs = 100.0;
        ho.mode = CKPT_SAVE_ASYNC;
        ho.clock = &clock;
        so.log_level = CKPT_LOG_OFF;
        run_wrapped_session(&ops, &f, ho, &so, 8, step_fn);
        assert_int_equal(f.calls[C_AGREE], collective ? 8 : 0);
        if (collective) {
            assert_int_equal(f.nsaved, 3);
            assert_int_equal(f.saved[1], 5);
        } else {
            assert_int_equal(f.nsaved, 2); /* 0 and 8 */
        }
        assert_int_equal(f.saved[0], 0);
        assert_int_equal(f.saved[f.nsaved - 1], 8);
    }
}

/* A wrapped saver whose saves_var says it does not hold "global_step" is
 * refused by the checkpoint hook when the session is created, before any
 * save; one without saves_var is taken on trust (the test above). */
static void test_hook_refuses_saver_without_global_step(void **state)
{
    ckpt_saver_ops ops = fake_ops(0);
    ckpt_checkpoint_hook_options ho = CKPT_CHECKPOINT_HOOK_OPTIONS_INIT;
    ckpt_session_options so = CKPT_SESSION_OPTIONS_INIT;
    ckpt_saver *s = NULL;
    ckpt_graph *g = NULL;
    ckpt_monitored_session *ms = NULL;
    ckpt_hook hook;
    char *dir = test_make_temp_dir();
    int64_t gs = 0;
    fake f;
    (void)state;
    fake_init(&f);
    f.global_step = &gs;
    ops.saves_var = f_saves_var;
    assert_ckpt_ok(ckpt_saver_wrap(&s, &ops, &f));
    assert_ckpt_ok(ckpt_graph_new(&g));
    assert_ckpt_ok(ckpt_graph_create_global_step(g, &gs));
    ho.saver = s;
    ho.save_steps = 2;
    so.checkpoint_dir = dir;
    so.log_level = CKPT_LOG_OFF;
    assert_ckpt_ok(ckpt_checkpoint_hook_new(&hook, &ho));
    assert_ckpt_error(ckpt_monitored_session_new(&ms, g, &hook, 1, &so),
                      CKPT_EINVAL,
                      "the hook's saver does not save the graph's global "
                      "step: register it as variable 'global_step'");
    assert_null(ms);
    assert_int_equal(f.nsaved, 0);
    ckpt_saver_free(s);
    ckpt_graph_free(g);
    test_remove_tree(dir);
}

static int fenced_step(ckpt_step_context *sc, void *payload)
{
    int err = ckpt_step_context_mutation_fence(sc);
    (*(int64_t *)payload)++;
    return err;
}

static void keep_log(int level, const char *message, void *payload)
{
    if (level >= CKPT_LOG_WARN)
        snprintf(payload, 512, "%s", message);
}

/* The mutation fence reaches a wrapped saver (ckpt_saver_ops version 4):
 * a step's fence switches it to overlapped snapshots and completes its
 * open one (from_now_on 1), the session completes one at each step's end
 * (0) without switching it, and asks open_snapshot for its warning about
 * a loop that never fenced. A version-3 table's fence members are not
 * read. */
static void test_fence_reaches_wrapped_saver(void **state)
{
    for (int round = 0; round < 3; round++) {
        ckpt_saver_ops ops = fake_ops(0);
        ckpt_checkpoint_hook_options ho = CKPT_CHECKPOINT_HOOK_OPTIONS_INIT;
        ckpt_session_options so = CKPT_SESSION_OPTIONS_INIT;
        char warning[512] = "";
        fake f;
        (void)state;
        fake_init(&f);
        if (round == 1)
            f.overlap = 1; /* as a saver told fence_from_start */
        if (round == 2)
            ops.version = 3;
        ho.save_steps = 2;
        ho.mode = CKPT_SAVE_ASYNC;
        so.log = keep_log;
        so.log_payload = warning;
        run_wrapped_session(&ops, &f, ho, &so, 4,
                            round == 1 ? step_fn : fenced_step);
        if (round == 0) { /* fenced every step */
            assert_int_equal(f.fences[1], 4);
            assert_true(f.fences[0] >= 4);
            assert_int_equal(warning[0], 0);
        } else if (round == 1) { /* never fenced, overlapping from start */
            assert_int_equal(f.fences[1], 0);
            assert_true(f.fences[0] >= 4);
            assert_non_null(strstr(warning, "checkpoint of step 0 was still "
                                            "being copied"));
        } else { /* version 3: no fence members */
            assert_int_equal(f.fences[0] + f.fences[1], 0);
            assert_int_equal(f.overlap, 0);
        }
        assert_int_equal(f.open, 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wrap_checks_the_table),
        cmocka_unit_test(test_wrap_forwards_every_call),
        cmocka_unit_test(test_hook_asks_agree_in_seconds_mode),
        cmocka_unit_test(test_hook_refuses_saver_without_global_step),
        cmocka_unit_test(test_fence_reaches_wrapped_saver),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
