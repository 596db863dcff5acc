/* tests/session/test_monitored_session.c - the monitored session's
 * lifecycle and run cycle (docs/behaviour.md B14-B30, B35, B39): hook call
 * order, fetches and feeds, option merging, stop requests, error rules, close
 * rules, one hook given twice, ckpt_hook_free on a hook a session holds. */
#include "session_test_util.h"

#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct fixture {
    model m;
    trace t;
    rec_hook a, b, c;
    ckpt_monitored_session *ms;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof(*f));
    model_init(&f->m);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    ckpt_monitored_session_free(f->ms);
    model_free(&f->m);
    free(f);
    return 0;
}

/* Create a session over hooks a, b, c (with `n` of them). */
static int open_session(fixture *f, size_t n, const ckpt_session_options *opts)
{
    ckpt_hook hooks[3];
    hooks[0] = rec_hook_make(&f->a, "A", &f->t);
    hooks[1] = rec_hook_make(&f->b, "B", &f->t);
    hooks[2] = rec_hook_make(&f->c, "C", &f->t);
    return ckpt_monitored_session_new(&f->ms, f->m.graph, hooks, n, opts);
}

static int run_step(fixture *f)
{
    return ckpt_monitored_session_run(f->ms, NULL, model_step, &f->m, NULL);
}

static void test_b14_begin_once_in_order_before_create(void **state)
{
    fixture *f = *state;
    assert_ckpt_ok(open_session(f, 3, NULL));
    assert_string_equal(f->t.buf, "A.begin B.begin C.begin A.create "
                                  "B.create C.create ");
    assert_int_equal(f->a.n_begin, 1);
    assert_int_equal(f->c.n_begin, 1);
    assert_true(ckpt_graph_is_frozen(f->m.graph));
}

static int add_var_in_begin(ckpt_graph *g, void *payload)
{
    static float extra[2];
    ckpt_var v;
    (void)payload;
    v = test_float_var("extra", extra, 2);
    return ckpt_graph_add_var(g, &v);
}

static void test_b14_graph_extensible_in_begin_frozen_after(void **state)
{
    fixture *f = *state;
    ckpt_hook h;
    float more = 0;
    ckpt_var v;
    memset(&h, 0, sizeof(h));
    h.version = CKPT_HOOK_VERSION;
    h.name = "adder";
    h.begin = add_var_in_begin;
    assert_ckpt_ok(ckpt_monitored_session_new(&f->ms, f->m.graph, &h, 1, NULL));
    assert_non_null(ckpt_graph_find(f->m.graph, "extra"));
    memset(&v, 0, sizeof(v));
    v.name = "late";
    v.dtype = CKPT_DT_FLOAT;
    v.data = &more;
    assert_ckpt_error(ckpt_graph_add_var(f->m.graph, &v), CKPT_ESTATE,
                      "frozen");
    assert_ckpt_ok(ckpt_monitored_session_close(f->ms, 0));
    /* unfrozen again after close, as it was not frozen before */
    assert_false(ckpt_graph_is_frozen(f->m.graph));
    assert_ckpt_ok(ckpt_graph_add_var(f->m.graph, &v));
}

static int init_fn_sets_w(ckpt_session *s, void *payload)
{
    model *m = payload;
    (void)s;
    m->w[0] = 42.0f;
    return 0;
}

static void test_b15_create_after_init_with_coordinator(void **state)
{
    fixture *f = *state;
    ckpt_session_options o = CKPT_SESSION_OPTIONS_INIT;
    o.scaffold.init_fn = init_fn_sets_w;
    o.scaffold.init_payload = &f->m;
    assert_ckpt_ok(open_session(f, 2, &o));
    assert_true(f->m.w[0] == 42.0f);
    assert_non_null(f->a.coord);
    assert_ptr_equal(f->a.coord, f->b.coord);
    assert_ptr_equal(f->a.coord, ckpt_session_coordinator(
                                     ckpt_monitored_session_session(f->ms)));
    assert_ptr_equal(f->a.session, ckpt_monitored_session_session(f->ms));
}

static void test_b16_run_calls_hooks_in_order(void **state)
{
    fixture *f = *state;
    static const char *const fetches[] = {"loss", "w"};
    ckpt_run_args args = {fetches, 2, NULL, 0, {0, 0}};
    ckpt_run_values v;
    assert_ckpt_ok(open_session(f, 3, NULL));
    f->t.buf[0] = '\0';
    assert_ckpt_ok(
        ckpt_monitored_session_run(f->ms, &args, model_step, &f->m, &v));
    assert_string_equal(f->t.buf,
                        "A.before B.before C.before A.after B.after C.after ");
    assert_int_equal(f->m.n_steps, 1);
    assert_int_equal(v.num_results, 2);
    assert_string_equal(v.results[0].name, "loss");
    assert_int_equal(v.results[0].dtype, CKPT_DT_FLOAT);
    assert_true(*(const float *)v.results[0].data == 1.0f);
    assert_string_equal(v.results[1].name, "w");
    assert_int_equal(v.results[1].size, 16);
    assert_true(((const float *)v.results[1].data)[3] == 1.0f);
    assert_int_equal(v.step_before, 0);
    assert_int_equal(v.step_after, 1);
}

static void test_b17_after_run_gets_own_fetches_and_steps(void **state)
{
    fixture *f = *state;
    static const char *const fa[] = {"loss"};
    static const char *const fc[] = {"w", "global_step"};
    f->a.fetches = fa;
    f->a.num_fetches = 1;
    f->c.fetches = fc;
    f->c.num_fetches = 2;
    assert_ckpt_ok(open_session(f, 3, NULL));
    assert_ckpt_ok(run_step(f));
    assert_ckpt_ok(run_step(f));
    assert_int_equal(f->a.last_num_results, 1);
    assert_string_equal(f->a.last_results[0].name, "loss");
    assert_true(f->a.last_float == 0.5f);
    assert_int_equal(f->b.last_num_results, 0);
    assert_int_equal(f->c.last_num_results, 2);
    assert_string_equal(f->c.last_results[0].name, "w");
    assert_string_equal(f->c.last_results[1].name, "global_step");
    assert_int_equal(*(const int64_t *)f->c.last_results[1].data, 2);
    assert_int_equal(f->b.last_step_before, 1);
    assert_int_equal(f->b.last_step_after, 2);
}

static int publish_nothing(ckpt_step_context *sc, void *payload)
{
    (void)sc, (void)payload;
    return 0;
}

static int publish_ten(ckpt_step_context *sc, void *payload)
{
    int err = 0;
    (void)payload;
    for (int i = 0; i < 10 && err == 0; i++) {
        char name[8];
        snprintf(name, sizeof(name), "o%d", i);
        err = ckpt_step_context_publish_float(sc, name, (float)i);
    }
    return err;
}

static void test_b17_unknown_fetch_fails_without_after_run(void **state)
{
    fixture *f = *state;
    static const char *const fb[] = {"nope"};
    f->b.fetches = fb;
    f->b.num_fetches = 1;
    assert_ckpt_ok(open_session(f, 2, NULL));
    /* the message shows what the step did publish (a misspelt name beside
     * the right one) and how a step publishes */
    assert_ckpt_error(run_step(f), CKPT_ENOTFOUND,
                      "fetch 'nope': no step output or variable of that name "
                      "(the step published 'loss'; a step publishes an "
                      "output with ckpt_step_context_publish)");
    assert_int_equal(f->a.n_after, 0);
    /* none, and more than eight */
    assert_ckpt_error(
        ckpt_monitored_session_run(f->ms, NULL, publish_nothing, NULL, NULL),
        CKPT_ENOTFOUND,
        "fetch 'nope': no step output or variable of that "
        "name (the step published none; ");
    assert_ckpt_error(
        ckpt_monitored_session_run(f->ms, NULL, publish_ten, NULL, NULL),
        CKPT_ENOTFOUND,
        "(the step published 'o0', 'o1', 'o2', 'o3', 'o4', 'o5', 'o6', 'o7' "
        "and 2 more; ");
}

static void test_b17_no_global_step_gives_minus_one(void **state)
{
    fixture *f = *state;
    ckpt_graph *g;
    ckpt_hook h;
    assert_ckpt_ok(ckpt_graph_new(&g));
    h = rec_hook_make(&f->a, "A", &f->t);
    assert_ckpt_ok(ckpt_monitored_session_new(&f->ms, g, &h, 1, NULL));
    assert_ckpt_ok(run_step(f));
    assert_int_equal(f->a.last_step_before, -1);
    assert_int_equal(f->a.last_step_after, -1);
    ckpt_monitored_session_free(f->ms);
    f->ms = NULL;
    ckpt_graph_free(g);
}

static void test_b18_two_hooks_same_feed_einval(void **state)
{
    fixture *f = *state;
    static const float x = 1.0f;
    static const ckpt_feed feed = {"x", &x, sizeof(x)};
    f->a.feeds = &feed;
    f->a.num_feeds = 1;
    f->b.feeds = &feed;
    f->b.num_feeds = 1;
    assert_ckpt_ok(open_session(f, 3, NULL));
    f->t.buf[0] = '\0';
    assert_ckpt_error(run_step(f), CKPT_EINVAL,
                      "feed 'x' is fed by hooks 'A' and 'B'");
    assert_int_equal(f->m.n_steps, 0);
    assert_int_equal(f->c.n_before, 0); /* raised as B returned */
    assert_string_equal(f->t.buf, "A.before B.before ");
}

static void test_b18_hook_and_caller_same_feed_einval(void **state)
{
    fixture *f = *state;
    static const float x = 1.0f;
    static const ckpt_feed feed = {"x", &x, sizeof(x)};
    ckpt_run_args args = {NULL, 0, &feed, 1, {0, 0}};
    f->b.feeds = &feed;
    f->b.num_feeds = 1;
    assert_ckpt_ok(open_session(f, 3, NULL));
    assert_ckpt_error(
        ckpt_monitored_session_run(f->ms, &args, model_step, &f->m, NULL),
        CKPT_EINVAL, "fed by the caller and by hook 'B'");
    assert_int_equal(f->m.n_steps, 0);
    assert_int_equal(f->c.n_before, 1); /* detected after all before_run */
}

static void test_b18_feeds_reach_the_step(void **state)
{
    fixture *f = *state;
    static const float x = 2.5f;
    static const float y = 7.0f;
    static const ckpt_feed hf = {"x", &x, sizeof(x)};
    static const ckpt_feed cf = {"y", &y, sizeof(y)};
    ckpt_run_args args = {NULL, 0, &cf, 1, {0, 0}};
    f->a.feeds = &hf;
    f->a.num_feeds = 1;
    assert_ckpt_ok(open_session(f, 1, NULL));
    f->m.feed_name = "x";
    assert_ckpt_ok(
        ckpt_monitored_session_run(f->ms, &args, model_step, &f->m, NULL));
    assert_true(f->m.last_feed == 2.5f);
    f->m.feed_name = "y";
    assert_ckpt_ok(
        ckpt_monitored_session_run(f->ms, &args, model_step, &f->m, NULL));
    assert_true(f->m.last_feed == 7.0f);
    f->m.feed_name = "z";
    assert_ckpt_error(
        ckpt_monitored_session_run(f->ms, &args, model_step, &f->m, NULL),
        CKPT_ENOTFOUND, "'z'");
}

static const ckpt_run_options *seen_options;
static ckpt_run_options seen_copy;

static int step_reads_options(ckpt_step_context *sc, void *payload)
{
    seen_options = ckpt_step_context_options(sc);
    seen_copy = *seen_options;
    return model_step(sc, payload);
}

static void test_b19_options_merged_max(void **state)
{
    fixture *f = *state;
    ckpt_run_args args = {NULL, 0, NULL, 0, {1, 500}};
    ckpt_run_values v;
    f->a.options.trace_level = 3;
    f->a.options.timeout_ms = 100;
    f->b.options.timeout_ms = 900;
    assert_ckpt_ok(open_session(f, 3, NULL));
    assert_ckpt_ok(ckpt_monitored_session_run(f->ms, &args, step_reads_options,
                                              &f->m, &v));
    assert_int_equal(seen_copy.trace_level, 3);
    assert_int_equal(seen_copy.timeout_ms, 900);
    assert_int_equal(v.options.timeout_ms, 900);
    assert_int_equal(f->a.last_options.trace_level, 3);
    assert_int_equal(f->c.last_options.timeout_ms, 900);
}

static void test_b19_options_start_empty_without_caller(void **state)
{
    fixture *f = *state;
    f->b.options.trace_level = 2;
    assert_ckpt_ok(open_session(f, 2, NULL));
    assert_ckpt_ok(ckpt_monitored_session_run(f->ms, NULL, step_reads_options,
                                              &f->m, NULL));
    assert_int_equal(seen_copy.trace_level, 2);
    assert_int_equal(seen_copy.timeout_ms, 0);
}

static void test_b20_stop_in_after_run_still_runs_rest(void **state)
{
    fixture *f = *state;
    f->a.stop_in_after = 1;
    assert_ckpt_ok(open_session(f, 3, NULL));
    assert_false(ckpt_monitored_session_should_stop(f->ms, NULL));
    assert_ckpt_ok(run_step(f));
    assert_int_equal(f->b.n_after, 1);
    assert_int_equal(f->c.n_after, 1);
    assert_true(ckpt_monitored_session_should_stop(f->ms, NULL));
}

static void test_b21_stop_in_before_run_step_still_runs(void **state)
{
    fixture *f = *state;
    f->b.stop_in_before = 1;
    assert_ckpt_ok(open_session(f, 3, NULL));
    assert_ckpt_ok(run_step(f));
    assert_int_equal(f->m.n_steps, 1);
    assert_int_equal(f->c.n_before, 1);
    assert_int_equal(f->a.n_after, 1);
    assert_true(ckpt_monitored_session_should_stop(f->ms, NULL));
}

static void test_b22_run_after_stop_estate_no_hooks(void **state)
{
    fixture *f = *state;
    f->a.stop_in_after = 1;
    assert_ckpt_ok(open_session(f, 2, NULL));
    assert_ckpt_ok(run_step(f));
    f->t.buf[0] = '\0';
    assert_ckpt_error(run_step(f), CKPT_ESTATE, "after a stop request");
    assert_string_equal(f->t.buf, "");
    assert_int_equal(f->m.n_steps, 1);
}

static void test_b23_step_failure_no_after_run(void **state)
{
    fixture *f = *state;
    assert_ckpt_ok(open_session(f, 2, NULL));
    f->m.fail_at_step = 1;
    f->m.fail_code = CKPT_EIO;
    assert_ckpt_ok(run_step(f));
    assert_int_equal(run_step(f), CKPT_EIO);
    assert_int_equal(f->a.n_before, 2);
    assert_int_equal(f->a.n_after, 1);
    assert_int_equal(f->b.n_after, 1);
}

static void test_b24_before_run_failure_skips_step_and_rest(void **state)
{
    fixture *f = *state;
    f->b.fail_before = CKPT_EUSER;
    assert_ckpt_ok(open_session(f, 3, NULL));
    f->t.buf[0] = '\0';
    assert_ckpt_error(run_step(f), CKPT_EUSER, "hook 'B' before_run");
    assert_int_equal(f->m.n_steps, 0);
    assert_string_equal(f->t.buf, "A.before B.before ");
}

static void test_b25_after_run_failure_skips_rest(void **state)
{
    fixture *f = *state;
    f->b.fail_after = CKPT_EIO;
    f->c.stop_in_after = 1;
    f->a.stop_in_after = 1;
    assert_ckpt_ok(open_session(f, 3, NULL));
    f->t.buf[0] = '\0';
    assert_ckpt_error(run_step(f), CKPT_EIO, "hook 'B' after_run");
    assert_string_equal(f->t.buf,
                        "A.before B.before C.before A.after B.after ");
    /* the stop flag was not updated */
    assert_false(ckpt_monitored_session_should_stop(f->ms, NULL));
}

static void test_b26_close_ok_calls_end_in_order(void **state)
{
    fixture *f = *state;
    assert_ckpt_ok(open_session(f, 3, NULL));
    assert_ckpt_ok(run_step(f));
    f->t.buf[0] = '\0';
    assert_ckpt_ok(ckpt_monitored_session_close(f->ms, 0));
    assert_string_equal(f->t.buf, "A.end B.end C.end ");
    assert_int_equal(f->a.n_abort, 0);
    assert_true(ckpt_monitored_session_should_stop(f->ms, NULL));
}

typedef struct end_probe {
    ckpt_coordinator *coord;
    int coord_stopped_at_end;
} end_probe;

static int probe_create(ckpt_session *s, ckpt_coordinator *c, void *payload)
{
    (void)s;
    ((end_probe *)payload)->coord = c;
    return 0;
}

static int probe_end(ckpt_session *s, void *payload)
{
    end_probe *p = payload;
    int64_t step;
    p->coord_stopped_at_end = ckpt_coordinator_should_stop(p->coord);
    /* the session is still usable: the global step can be read */
    return ckpt_session_global_step(s, &step);
}

static void test_b26_end_runs_before_session_closes(void **state)
{
    fixture *f = *state;
    end_probe p = {NULL, -1};
    ckpt_hook h;
    memset(&h, 0, sizeof(h));
    h.version = CKPT_HOOK_VERSION;
    h.payload = &p;
    h.after_create_session = probe_create;
    h.end = probe_end;
    assert_ckpt_ok(ckpt_monitored_session_new(&f->ms, f->m.graph, &h, 1, NULL));
    assert_ckpt_ok(ckpt_monitored_session_close(f->ms, 0));
    assert_int_equal(p.coord_stopped_at_end, 0);
    assert_true(ckpt_coordinator_should_stop(p.coord));
}

/* A hook reading the global step of a graph that has none is told which
 * call failed and how to make one (it said "session: the graph has no
 * global step"); after ckpt_graph_add_var of a "global_step" too. */
typedef struct step_probe {
    int rc;
    char message[512];
} step_probe;

static int probe_step_at_create(ckpt_session *s, ckpt_coordinator *c,
                                void *payload)
{
    step_probe *p = payload;
    int64_t step = 0;
    (void)c;
    p->rc = ckpt_session_global_step(s, &step);
    snprintf(p->message, sizeof(p->message), "%s", ckpt_error_last()->message);
    return 0;
}

static void test_global_step_missing_says_how(void **state)
{
    static const struct {
        const char *var_name;
        const char *want;
    } cases[] = {
        {"w", "ckpt_session_global_step: the graph has no global step (create "
              "one with ckpt_graph_create_global_step)"},
        {"global_step", "ckpt_session_global_step: the graph has no global "
                        "step: its variable 'global_step' was added with "
                        "ckpt_graph_add_var; create it with "
                        "ckpt_graph_create_global_step instead"},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int64_t data = 0;
        ckpt_var v = {cases[i].var_name,
                      CKPT_DT_INT64,
                      {0, {0}},
                      &data,
                      NULL,
                      NULL,
                      NULL};
        step_probe p = {1, ""};
        ckpt_graph *g = NULL;
        ckpt_monitored_session *ms = NULL;
        ckpt_session_options so = CKPT_SESSION_OPTIONS_INIT;
        ckpt_hook h;
        memset(&h, 0, sizeof(h));
        h.version = CKPT_HOOK_VERSION;
        h.payload = &p;
        h.after_create_session = probe_step_at_create;
        so.log_level = CKPT_LOG_OFF;
        assert_ckpt_ok(ckpt_graph_new(&g));
        assert_ckpt_ok(ckpt_graph_add_var(g, &v));
        assert_ckpt_ok(ckpt_monitored_session_new(&ms, g, &h, 1, &so));
        assert_int_equal(p.rc, CKPT_ESTATE);
        assert_string_equal(p.message, cases[i].want);
        assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
        ckpt_monitored_session_free(ms);
        ckpt_graph_free(g);
    }
}

static void test_b27_close_clean_end_calls_end_returns_ok(void **state)
{
    fixture *f = *state;
    assert_ckpt_ok(open_session(f, 2, NULL));
    assert_ckpt_ok(ckpt_monitored_session_close(f->ms, CKPT_EOUT_OF_RANGE));
    assert_int_equal(f->a.n_end, 1);
    assert_int_equal(f->b.n_end, 1);
    ckpt_monitored_session_free(f->ms);
    f->ms = NULL;
    memset(&f->a, 0, sizeof(f->a));
    memset(&f->b, 0, sizeof(f->b));
    assert_ckpt_ok(open_session(f, 2, NULL));
    assert_ckpt_ok(ckpt_monitored_session_close(f->ms, CKPT_ESTOPITER));
    assert_int_equal(f->a.n_end, 1);
    assert_int_equal(f->b.n_abort, 0);
}

static void test_b28_close_error_calls_on_abort_not_end(void **state)
{
    fixture *f = *state;
    f->b.no_on_abort = 1;
    assert_ckpt_ok(open_session(f, 3, NULL));
    f->t.buf[0] = '\0';
    assert_int_equal(ckpt_monitored_session_close(f->ms, CKPT_EIO), CKPT_EIO);
    assert_string_equal(f->t.buf, "A.abort C.abort ");
    assert_int_equal(f->a.abort_status, CKPT_EIO);
    assert_int_equal(f->a.n_end + f->b.n_end + f->c.n_end, 0);
    assert_true(ckpt_coordinator_should_stop(f->a.coord));
}

static void test_b29_end_failure_skips_rest_still_closes(void **state)
{
    fixture *f = *state;
    f->b.fail_end = CKPT_ENOSPC;
    assert_ckpt_ok(open_session(f, 3, NULL));
    f->t.buf[0] = '\0';
    assert_ckpt_error(ckpt_monitored_session_close(f->ms, 0), CKPT_ENOSPC,
                      "hook 'B' end");
    assert_string_equal(f->t.buf, "A.end B.end ");
    assert_true(ckpt_coordinator_should_stop(f->a.coord));
    assert_false(ckpt_graph_is_frozen(f->m.graph));
}

static void test_b30_second_close_estate_no_callbacks(void **state)
{
    fixture *f = *state;
    assert_ckpt_ok(open_session(f, 2, NULL));
    assert_ckpt_ok(ckpt_monitored_session_close(f->ms, 0));
    f->t.buf[0] = '\0';
    assert_ckpt_error(ckpt_monitored_session_close(f->ms, 0), CKPT_ESTATE,
                      "already closed");
    assert_ckpt_error(ckpt_monitored_session_close(f->ms, CKPT_EIO),
                      CKPT_ESTATE, "already closed");
    assert_string_equal(f->t.buf, "");
    assert_int_equal(f->a.n_end, 1);
    assert_ckpt_error(run_step(f), CKPT_ESTATE, "after close");
}

static void test_b35_coordinator_error_from_should_stop(void **state)
{
    fixture *f = *state;
    int status = 0;
    assert_ckpt_ok(open_session(f, 1, NULL));
    assert_ckpt_ok(run_step(f));
    assert_ckpt_ok(ckpt_coordinator_request_stop(f->a.coord, CKPT_EIO,
                                                 "reader thread: disk gone"));
    assert_true(ckpt_monitored_session_should_stop(f->ms, &status));
    assert_int_equal(status, CKPT_EIO);
    assert_ckpt_error(status, CKPT_EIO, "disk gone");
}

static void test_b35_coordinator_error_from_run(void **state)
{
    fixture *f = *state;
    assert_ckpt_ok(open_session(f, 1, NULL));
    assert_ckpt_ok(ckpt_coordinator_request_stop(f->a.coord, CKPT_EIO,
                                                 "reader thread: disk gone"));
    f->t.buf[0] = '\0';
    assert_ckpt_error(run_step(f), CKPT_EIO, "disk gone");
    assert_string_equal(f->t.buf, "");
    assert_int_equal(f->m.n_steps, 0);
    /* the close reports it too (errors are never lost) */
    assert_ckpt_error(ckpt_monitored_session_close(f->ms, 0), CKPT_EIO,
                      "disk gone");
}

static void test_b39_step_request_stop_estopiter_clean(void **state)
{
    fixture *f = *state;
    int rc = 0;
    f->m.request_stop_at = 3;
    assert_ckpt_ok(open_session(f, 1, NULL));
    while (!ckpt_monitored_session_should_stop(f->ms, NULL)) {
        rc = run_step(f);
        if (rc != 0)
            break;
    }
    assert_int_equal(rc, CKPT_ESTOPITER);
    assert_true(ckpt_is_clean_end(rc));
    assert_int_equal(f->m.step, 3);
    assert_int_equal(f->a.n_after, 3); /* the step itself completed */
    assert_true(ckpt_monitored_session_should_stop(f->ms, NULL));
    assert_ckpt_ok(ckpt_monitored_session_close(f->ms, rc));
    assert_int_equal(f->a.n_end, 1);
}

/* The bracket API drives the same cycle around an inline step. */
static void test_b16_bracket_before_after_run(void **state)
{
    fixture *f = *state;
    static const char *const fa[] = {"loss"};
    ckpt_step_context *sc = NULL;
    ckpt_run_values v;
    f->a.fetches = fa;
    f->a.num_fetches = 1;
    assert_ckpt_ok(open_session(f, 2, NULL));
    f->t.buf[0] = '\0';
    assert_ckpt_ok(ckpt_monitored_session_before_run(f->ms, NULL, &sc));
    assert_non_null(sc);
    assert_ckpt_error(run_step(f), CKPT_ESTATE, "in progress");
    f->m.step++;
    assert_ckpt_ok(ckpt_step_context_publish_float(sc, "loss", 0.25f));
    assert_ckpt_ok(ckpt_monitored_session_after_run(f->ms, 0, &v));
    assert_string_equal(f->t.buf, "A.before B.before A.after B.after ");
    assert_true(f->a.last_float == 0.25f);
    assert_int_equal(v.step_before, 0);
    assert_int_equal(v.step_after, 1);
    assert_ckpt_error(ckpt_monitored_session_after_run(f->ms, 0, NULL),
                      CKPT_ESTATE, "without before_run");
}

static void test_b23_bracket_step_failure_no_after_run(void **state)
{
    fixture *f = *state;
    ckpt_step_context *sc = NULL;
    assert_ckpt_ok(open_session(f, 2, NULL));
    assert_ckpt_ok(ckpt_monitored_session_before_run(f->ms, NULL, &sc));
    assert_int_equal(ckpt_monitored_session_after_run(f->ms, CKPT_EIO, NULL),
                     CKPT_EIO);
    assert_int_equal(f->a.n_after, 0);
    assert_int_equal(f->b.n_after, 0);
}

/* A step that fails without recording a message gets one naming its code
 * (its message was "no error", or an unrelated earlier one in the bracket
 * form); a step's own message is kept. */
static int step_says_why(ckpt_step_context *sc, void *payload)
{
    (void)sc, (void)payload;
    return ckpt_error_set(CKPT_EIO, "disk 3 is gone");
}

static void test_b23_silent_step_failure_gets_a_message(void **state)
{
    fixture *f = *state;
    ckpt_step_context *sc = NULL;
    assert_ckpt_ok(open_session(f, 1, NULL));
    f->m.fail_at_step = 0;
    f->m.fail_code = CKPT_EIO;
    f->m.fail_times = 1;
    assert_ckpt_error(run_step(f), CKPT_EIO,
                      "the step failed with CKPT_EIO (input/output error) and "
                      "recorded no message");
    assert_ckpt_error(
        ckpt_monitored_session_run(f->ms, NULL, step_says_why, NULL, NULL),
        CKPT_EIO, "disk 3 is gone");
    ckpt_error_set(CKPT_ENOTFOUND, "an earlier failure");
    assert_ckpt_ok(ckpt_monitored_session_before_run(f->ms, NULL, &sc));
    assert_ckpt_error(ckpt_monitored_session_after_run(f->ms, CKPT_EUSER, NULL),
                      CKPT_EUSER, "the step failed with CKPT_EUSER");
    assert_ckpt_ok(ckpt_monitored_session_before_run(f->ms, NULL, &sc));
    ckpt_error_set(CKPT_EIO, "my inline step's reason");
    assert_ckpt_error(ckpt_monitored_session_after_run(f->ms, CKPT_EIO, NULL),
                      CKPT_EIO, "my inline step's reason");
}

/* A positive return is not a ckpt_error_code (a step returning 1 for
 * "failed", or a count): it becomes CKPT_EUSER with a message saying so,
 * after the step's own message when it recorded one. */
static void test_b23_positive_step_status_says_so(void **state)
{
    fixture *f = *state;
    ckpt_step_context *sc = NULL;
    assert_ckpt_ok(open_session(f, 1, NULL));
    f->m.fail_at_step = 0;
    f->m.fail_code = 1;
    f->m.fail_times = 1;
    assert_ckpt_error(run_step(f), CKPT_EUSER,
                      "the step function returned 1, which is not 0 or a "
                      "negative ckpt_error_code (a failure returns a "
                      "negative code; recorded as CKPT_EUSER)");
    assert_ckpt_ok(ckpt_monitored_session_before_run(f->ms, NULL, &sc));
    assert_ckpt_error(ckpt_monitored_session_after_run(f->ms, 2, NULL),
                      CKPT_EUSER,
                      "ckpt_monitored_session_after_run: step_status (the "
                      "step) returned 2, which is not 0 or a negative");
    assert_ckpt_ok(ckpt_monitored_session_before_run(f->ms, NULL, &sc));
    ckpt_error_set(CKPT_EIO, "sensor 4 is gone");
    assert_ckpt_error(ckpt_monitored_session_after_run(f->ms, 5, NULL),
                      CKPT_EUSER, "recorded as CKPT_EUSER): sensor 4 is gone");
}

static void test_b14_begin_failure_destroys_and_aborts(void **state)
{
    fixture *f = *state;
    f->b.fail_begin = CKPT_EUSER;
    assert_ckpt_error(open_session(f, 3, NULL), CKPT_EUSER, "hook 'B' begin");
    assert_null(f->ms);
    assert_int_equal(f->c.n_begin, 0);
    assert_int_equal(f->a.n_abort, 1); /* A began: it may drain work */
    assert_int_equal(f->b.n_abort, 0);
    assert_int_equal(f->a.n_destroy + f->b.n_destroy + f->c.n_destroy, 3);
    assert_false(ckpt_graph_is_frozen(f->m.graph));
}

static void test_b15_after_create_failure_propagates(void **state)
{
    fixture *f = *state;
    f->b.fail_create = CKPT_EIO;
    assert_ckpt_error(open_session(f, 3, NULL), CKPT_EIO,
                      "hook 'B' after_create_session");
    assert_null(f->ms);
    assert_int_equal(f->c.n_create, 0);
    assert_int_equal(f->a.n_end, 0);
    assert_int_equal(f->c.n_destroy, 1);
}

static void test_free_without_close_aborts_with_canceled(void **state)
{
    fixture *f = *state;
    ckpt_session_options so = CKPT_SESSION_OPTIONS_INIT;
    test_log lb;
    test_log_init(&lb, CKPT_LOG_WARN);
    so.log = test_log_capture;
    so.log_payload = &lb;
    assert_ckpt_ok(open_session(f, 1, &so));
    ckpt_monitored_session_free(f->ms);
    f->ms = NULL;
    assert_int_equal(f->a.n_abort, 1);
    assert_int_equal(f->a.abort_status, CKPT_ECANCELED);
    assert_int_equal(f->a.n_destroy, 1);
    /* the log says what the free did not do (it read "closed with
     * CKPT_ECANCELED") */
    assert_non_null(strstr(lb.text, "freed without "
                                    "ckpt_monitored_session_close: the hooks "
                                    "were aborted and no final checkpoint"));
}

static void test_clean_and_recoverable_codes(void **state)
{
    (void)state;
    assert_true(ckpt_is_clean_end(CKPT_EOUT_OF_RANGE));
    assert_true(ckpt_is_clean_end(CKPT_ESTOPITER));
    assert_false(ckpt_is_clean_end(0));
    assert_false(ckpt_is_clean_end(CKPT_EABORTED));
    assert_true(ckpt_is_recoverable(CKPT_EABORTED));
    assert_true(ckpt_is_recoverable(CKPT_EUNAVAILABLE));
    assert_false(ckpt_is_recoverable(CKPT_EIO));
    assert_false(ckpt_is_recoverable(CKPT_EOUT_OF_RANGE));
}

static void test_options_version_checked(void **state)
{
    fixture *f = *state;
    ckpt_session_options o;
    assert_ckpt_error(ckpt_session_options_init(&o, 99), CKPT_EVERSION, "99");
    assert_ckpt_ok(ckpt_session_options_init(&o, CKPT_SESSION_OPTIONS_VERSION));
    o.version = 7;
    assert_ckpt_error(open_session(f, 1, &o), CKPT_EVERSION, "version 7");
    assert_int_equal(f->a.n_destroy, 1);
}

static void test_session_fetch_outside_run(void **state)
{
    fixture *f = *state;
    ckpt_value v;
    ckpt_session *s;
    assert_ckpt_ok(open_session(f, 1, NULL));
    assert_ckpt_ok(run_step(f));
    s = ckpt_monitored_session_session(f->ms);
    assert_ckpt_ok(ckpt_session_fetch(s, "loss", &v));
    assert_true(*(const float *)v.data == 1.0f);
    assert_ckpt_ok(ckpt_session_fetch(s, "w", &v));
    assert_int_equal(v.shape.dims[0], 4);
    assert_ckpt_error(ckpt_session_fetch(s, "q", &v), CKPT_ENOTFOUND, "'q'");
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

/* A hook or the step function calling back into its own session (close,
 * run, before_run, after_run) is refused with CKPT_ESTATE: a close there
 * once ended the session while its step went on, and the checkpoint
 * hook saved after its end. The session is still whole afterwards. */
typedef struct reentrant {
    ckpt_monitored_session *ms;
    model *m;
    int rc_close, rc_run, rc_before;
} reentrant;

static int close_in_after_run(ckpt_run_context *ctx,
                              const ckpt_run_values *values, void *payload)
{
    reentrant *r = payload;
    ckpt_step_context *sc = NULL;
    (void)ctx;
    (void)values;
    r->rc_close = ckpt_monitored_session_close(r->ms, 0);
    r->rc_before = ckpt_monitored_session_before_run(r->ms, NULL, &sc);
    return 0;
}

static int step_runs_again(ckpt_step_context *sc, void *payload)
{
    reentrant *r = payload;
    r->rc_run = ckpt_monitored_session_run(r->ms, NULL, model_step, r->m, NULL);
    return model_step(sc, r->m);
}

/* Open the fixture's session with the one hook `h` (its callbacks set by
 * the caller) whose payload is `r`, pointed at that session. */
static void open_reentrant(fixture *f, reentrant *r, ckpt_hook *h)
{
    memset(r, 0, sizeof(*r));
    h->version = CKPT_HOOK_VERSION;
    h->name = "reenter";
    h->payload = r;
    assert_ckpt_ok(ckpt_monitored_session_new(&f->ms, f->m.graph, h, 1, NULL));
    r->ms = f->ms;
    r->m = &f->m;
}

static void test_reentry_from_hook_and_step_refused(void **state)
{
    fixture *f = *state;
    reentrant r;
    ckpt_hook h;
    memset(&h, 0, sizeof(h));
    h.after_run = close_in_after_run;
    open_reentrant(f, &r, &h);
    assert_ckpt_ok(
        ckpt_monitored_session_run(f->ms, NULL, step_runs_again, &r, NULL));
    assert_int_equal(r.rc_run, CKPT_ESTATE);
    assert_int_equal(r.rc_close, CKPT_ESTATE);
    assert_int_equal(r.rc_before, CKPT_ESTATE);
    assert_int_equal(f->m.step, 1); /* one step ran, not two */
    assert_false(ckpt_monitored_session_should_stop(f->ms, NULL));
    assert_ckpt_ok(
        ckpt_monitored_session_run(f->ms, NULL, model_step, &f->m, NULL));
    assert_int_equal(f->m.step, 2);
    assert_ckpt_ok(ckpt_monitored_session_close(f->ms, 0));
}

/* A hook's end (or a listener it calls) closing or running the session
 * while close runs gets CKPT_ESTATE saying so; it said "already closed",
 * which read as if the caller had closed twice. */
static char g_end_close_msg[512];

static int close_in_end(ckpt_session *s, void *payload)
{
    reentrant *r = payload;
    (void)s;
    r->rc_close = ckpt_monitored_session_close(r->ms, 0);
    snprintf(g_end_close_msg, sizeof(g_end_close_msg), "%s",
             ckpt_error_last()->message);
    r->rc_run = ckpt_monitored_session_run(r->ms, NULL, model_step, r->m, NULL);
    return 0;
}

/* A monitored session is used from one thread: a run, before_run or close
 * from a second thread while the first runs a step is refused, and says
 * so (it blamed a hook or the step function; two runs entering at once
 * were a data race). The step waits on semaphores, not on time. */
typedef struct blocked_step {
    model *m;
    sem_t entered, release;
} blocked_step;

static int step_blocks(ckpt_step_context *sc, void *payload)
{
    blocked_step *b = payload;
    sem_post(&b->entered);
    while (sem_wait(&b->release) != 0)
        ;
    return model_step(sc, b->m);
}

typedef struct runner {
    ckpt_monitored_session *ms;
    blocked_step *b;
    int rc;
} runner;

static void *run_blocked(void *arg)
{
    runner *r = arg;
    r->rc = ckpt_monitored_session_run(r->ms, NULL, step_blocks, r->b, NULL);
    return NULL;
}

/* While another thread holds f's session (in a step or a close), every
 * call from this one is refused, naming the call. should_stop may recover
 * (re-create the session under the other thread): it answered from the
 * session unguarded; now it is refused too, answering stop. */
static void expect_held_by_another_thread(fixture *f)
{
    ckpt_step_context *sc = NULL;
    int status = 0;
    assert_ckpt_error(
        ckpt_monitored_session_run(f->ms, NULL, model_step, &f->m, NULL),
        CKPT_ESTATE,
        "monitored session: run called while another thread runs a step on "
        "it or closes it: a monitored session is used from one thread");
    assert_ckpt_error(ckpt_monitored_session_before_run(f->ms, NULL, &sc),
                      CKPT_ESTATE, "before_run called while another thread");
    assert_ckpt_error(ckpt_monitored_session_close(f->ms, 0), CKPT_ESTATE,
                      "close called while another thread");
    assert_int_equal(ckpt_monitored_session_should_stop(f->ms, &status), 1);
    assert_ckpt_error(status, CKPT_ESTATE,
                      "monitored session: should_stop called while another "
                      "thread runs a step on it or closes it");
}

static void test_run_from_another_thread_refused(void **state)
{
    fixture *f = *state;
    blocked_step b = {&f->m, {{0}}, {{0}}};
    runner r = {NULL, &b, -1};
    int status;
    pthread_t t;
    assert_ckpt_ok(
        ckpt_monitored_session_new(&f->ms, f->m.graph, NULL, 0, NULL));
    r.ms = f->ms;
    assert_int_equal(sem_init(&b.entered, 0, 0), 0);
    assert_int_equal(sem_init(&b.release, 0, 0), 0);
    assert_int_equal(pthread_create(&t, NULL, run_blocked, &r), 0);
    while (sem_wait(&b.entered) != 0)
        ;
    expect_held_by_another_thread(f);
    sem_post(&b.release);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_ckpt_ok(r.rc);
    assert_int_equal(ckpt_monitored_session_should_stop(f->ms, &status), 0);
    assert_int_equal(status, 0);
    assert_int_equal(f->m.step, 1); /* only the first thread's step ran */
    /* handed over between calls, it runs on this thread */
    assert_ckpt_ok(
        ckpt_monitored_session_run(f->ms, NULL, model_step, &f->m, NULL));
    assert_int_equal(f->m.step, 2);
    sem_destroy(&b.entered);
    sem_destroy(&b.release);
}

/* A close on one thread held the session only through a plain flag: a
 * run from another thread while the hooks' end ran was refused as if a
 * hook had called it ("from a hook or listener"), reading that flag
 * unsynchronised, and once the hooks were done it was let in against a
 * session being closed. Now close holds the session as a run does. The
 * end waits on semaphores, not on time. */
static int end_blocks(ckpt_session *s, void *payload)
{
    blocked_step *b = payload;
    (void)s;
    sem_post(&b->entered);
    while (sem_wait(&b->release) != 0)
        ;
    return 0;
}

typedef struct closer {
    ckpt_monitored_session *ms;
    int rc;
} closer;

static void *close_on_thread(void *arg)
{
    closer *c = arg;
    c->rc = ckpt_monitored_session_close(c->ms, 0);
    return NULL;
}

/* A session whose one hook's end blocks on `b` (its semaphores made). */
static void open_with_blocking_end(fixture *f, blocked_step *b, ckpt_hook *h)
{
    memset(h, 0, sizeof(*h));
    h->version = CKPT_HOOK_VERSION;
    h->name = "blocks";
    h->end = end_blocks;
    h->payload = b;
    assert_int_equal(sem_init(&b->entered, 0, 0), 0);
    assert_int_equal(sem_init(&b->release, 0, 0), 0);
    assert_ckpt_ok(ckpt_monitored_session_new(&f->ms, f->m.graph, h, 1, NULL));
}

static void test_run_while_another_thread_closes_refused(void **state)
{
    fixture *f = *state;
    blocked_step b = {&f->m, {{0}}, {{0}}};
    closer c = {NULL, -1};
    ckpt_hook h;
    pthread_t t;
    open_with_blocking_end(f, &b, &h);
    c.ms = f->ms;
    assert_int_equal(pthread_create(&t, NULL, close_on_thread, &c), 0);
    while (sem_wait(&b.entered) != 0)
        ;
    expect_held_by_another_thread(f);
    sem_post(&b.release);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_ckpt_ok(c.rc);
    assert_int_equal(f->m.step, 0); /* no step ran */
    assert_ckpt_error(ckpt_monitored_session_close(f->ms, 0), CKPT_ESTATE,
                      "already closed");
    sem_destroy(&b.entered);
    sem_destroy(&b.release);
}

/* A thread cancelled (pthread_cancel) inside the step function or a
 * hook's end left the session held: every later call, free's close
 * included, was refused for ever. The hold is released on the way out and
 * a cancelled close is finished there; cancellation meets the thread in a
 * semaphore wait, no timing. */
static void cancel_when_entered(pthread_t t, blocked_step *b)
{
    void *ret = NULL;
    while (sem_wait(&b->entered) != 0)
        ;
    assert_int_equal(pthread_cancel(t), 0);
    assert_int_equal(pthread_join(t, &ret), 0);
    assert_ptr_equal(ret, PTHREAD_CANCELED);
}

static void test_cancel_inside_step_or_end_releases_session(void **state)
{
    fixture *f = *state;
    blocked_step b = {&f->m, {{0}}, {{0}}};
    runner r = {NULL, &b, -1};
    closer c = {NULL, -1};
    ckpt_hook h;
    pthread_t t;
    open_with_blocking_end(f, &b, &h);
    r.ms = f->ms;
    c.ms = f->ms;
    assert_int_equal(pthread_create(&t, NULL, run_blocked, &r), 0);
    cancel_when_entered(t, &b);
    assert_int_equal(f->m.step, 0); /* the cancelled step did not finish */
    assert_ckpt_ok(
        ckpt_monitored_session_run(f->ms, NULL, model_step, &f->m, NULL));
    assert_int_equal(f->m.step, 1);
    assert_true(ckpt_graph_is_frozen(f->m.graph));
    assert_int_equal(pthread_create(&t, NULL, close_on_thread, &c), 0);
    cancel_when_entered(t, &b);
    assert_false(ckpt_graph_is_frozen(f->m.graph)); /* the close finished */
    assert_ckpt_error(ckpt_monitored_session_close(f->ms, 0), CKPT_ESTATE,
                      "monitored session: already closed");
    assert_int_equal(ckpt_monitored_session_should_stop(f->ms, NULL), 1);
    sem_destroy(&b.entered);
    sem_destroy(&b.release);
}

static void test_reentry_from_end_refused(void **state)
{
    fixture *f = *state;
    reentrant r;
    ckpt_hook h;
    memset(&h, 0, sizeof(h));
    h.end = close_in_end;
    open_reentrant(f, &r, &h);
    assert_ckpt_ok(ckpt_monitored_session_close(f->ms, 0));
    assert_int_equal(r.rc_close, CKPT_ESTATE);
    assert_non_null(strstr(g_end_close_msg,
                           "close called from a hook or listener while the "
                           "session closes"));
    assert_int_equal(r.rc_run, CKPT_ESTATE);
    assert_int_equal(f->m.step, 0);
    assert_ckpt_error(ckpt_monitored_session_close(f->ms, 0), CKPT_ESTATE,
                      "already closed");
}

/* One hook handed over twice was called twice a step and its payload
 * destroyed twice (a double free for a library hook); now refused, naming
 * both places, and destroyed once. */
static void test_same_hook_twice_refused_destroyed_once(void **state)
{
    fixture *f = *state;
    ckpt_hook hooks[3];
    hooks[0] = rec_hook_make(&f->a, "A", &f->t);
    hooks[1] = rec_hook_make(&f->b, "B", &f->t);
    hooks[2] = hooks[0];
    assert_ckpt_error(
        ckpt_monitored_session_new(&f->ms, f->m.graph, hooks, 3, NULL),
        CKPT_EINVAL, "hooks[0] and hooks[2] ('A') are the same hook");
    assert_null(f->ms);
    assert_int_equal(f->a.n_destroy, 1);
    assert_int_equal(f->b.n_destroy, 1);
    assert_int_equal(f->a.n_begin, 0);
}

/* Different hooks over one payload (the caller's state, e.g. a pair of
 * hooks counting into one struct) were refused as "the same hook"; only
 * one hook given twice is. Both run; a shared destroy is called once, and
 * without one nothing is destroyed. */
static void test_hooks_sharing_a_payload_accepted(void **state)
{
    fixture *f = *state;
    for (int with_destroy = 1; with_destroy >= 0; with_destroy--) {
        ckpt_hook hooks[2];
        memset(&f->a, 0, sizeof(f->a));
        hooks[0] = rec_hook_make(&f->a, "A", &f->t);
        hooks[1] = hooks[0];
        hooks[1].name = "A-after";
        hooks[1].before_run = NULL; /* another hook on the same state */
        if (!with_destroy)
            hooks[0].destroy = hooks[1].destroy = NULL;
        assert_ckpt_ok(
            ckpt_monitored_session_new(&f->ms, f->m.graph, hooks, 2, NULL));
        assert_ckpt_ok(run_step(f));
        assert_int_equal(f->a.n_before, 1);
        assert_int_equal(f->a.n_after, 2);
        assert_ckpt_ok(ckpt_monitored_session_close(f->ms, 0));
        ckpt_monitored_session_free(f->ms);
        f->ms = NULL;
        assert_int_equal(f->a.n_end, 2);
        assert_int_equal(f->a.n_destroy, with_destroy);
    }
}

/* ckpt_hook_free on a hook already handed to a session destroyed the
 * payload the session still called, and the session destroyed it again
 * (a double free for a library hook); now refused with CKPT_ESTATE (and a
 * line on stderr), the session going on with the hook. */
static void test_hook_free_after_handing_over_refused(void **state)
{
    fixture *f = *state;
    ckpt_hook h = rec_hook_make(&f->a, "A", &f->t);
    ckpt_hook counter;
    assert_ckpt_ok(ckpt_monitored_session_new(&f->ms, f->m.graph, &h, 1, NULL));
    ckpt_error_clear();
    ckpt_hook_free(&h);
    assert_int_equal(ckpt_error_last()->code, CKPT_ESTATE);
    assert_non_null(strstr(ckpt_error_last()->message,
                           "hook 'A' was handed to a monitored session"));
    assert_int_equal(f->a.n_destroy, 0);
    assert_ckpt_ok(run_step(f));
    assert_int_equal(f->a.n_after, 1);
    ckpt_monitored_session_free(f->ms);
    f->ms = NULL;
    assert_int_equal(f->a.n_destroy, 1);
    /* a library hook the same way, then one never handed over */
    assert_ckpt_ok(ckpt_step_counter_hook_new(&counter, NULL));
    h = counter;
    assert_ckpt_ok(ckpt_monitored_session_new(&f->ms, f->m.graph, &h, 1, NULL));
    ckpt_hook_free(&counter);
    assert_int_equal(ckpt_error_last()->code, CKPT_ESTATE);
    assert_ckpt_ok(run_step(f));
    ckpt_monitored_session_free(f->ms);
    f->ms = NULL;
    assert_ckpt_ok(ckpt_step_counter_hook_new(&counter, NULL));
    ckpt_hook_free(&counter);
    assert_null(counter.payload);
}

/* A failed creation destroys the hooks it was given; the caller's copies
 * pointed at freed payloads, so a retry with them (the newcomer's fix of
 * the options) used freed memory and a ckpt_hook_free of them freed it
 * twice. They are zeroed: the retry is refused naming them, the free does
 * nothing. */
static void test_failed_creation_zeroes_hooks(void **state)
{
    fixture *f = *state;
    ckpt_hook hooks[2];
    ckpt_hook counter;
    f->a.fail_begin = CKPT_EUSER;
    hooks[0] = rec_hook_make(&f->a, "A", &f->t);
    assert_ckpt_ok(ckpt_step_counter_hook_new(&counter, NULL));
    hooks[1] = counter;
    assert_int_equal(
        ckpt_monitored_session_new(&f->ms, f->m.graph, hooks, 2, NULL),
        CKPT_EUSER);
    assert_int_equal(f->a.n_destroy, 1);
    assert_null(hooks[0].payload);
    assert_null(hooks[1].payload);
    assert_null(hooks[1].destroy);
    assert_ckpt_error(
        ckpt_monitored_session_new(&f->ms, f->m.graph, hooks, 2, NULL),
        CKPT_EINVAL,
        "hooks[0] is all zero: a hook given to a failed "
        "ckpt_monitored_session_new");
    assert_null(f->ms);
    ckpt_hook_free(&hooks[1]); /* nothing to free: no double free */
    assert_int_equal(f->a.n_destroy, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_b14_begin_once_in_order_before_create),
        T(test_same_hook_twice_refused_destroyed_once),
        T(test_hooks_sharing_a_payload_accepted),
        T(test_hook_free_after_handing_over_refused),
        T(test_failed_creation_zeroes_hooks),
        T(test_reentry_from_hook_and_step_refused),
        T(test_reentry_from_end_refused),
        T(test_run_from_another_thread_refused),
        T(test_run_while_another_thread_closes_refused),
        T(test_b14_graph_extensible_in_begin_frozen_after),
        T(test_b14_begin_failure_destroys_and_aborts),
        T(test_b15_create_after_init_with_coordinator),
        T(test_b15_after_create_failure_propagates),
        T(test_b16_run_calls_hooks_in_order),
        T(test_b16_bracket_before_after_run),
        T(test_b17_after_run_gets_own_fetches_and_steps),
        T(test_b17_unknown_fetch_fails_without_after_run),
        T(test_b17_no_global_step_gives_minus_one),
        T(test_b18_two_hooks_same_feed_einval),
        T(test_b18_hook_and_caller_same_feed_einval),
        T(test_b18_feeds_reach_the_step),
        T(test_b19_options_merged_max),
        T(test_b19_options_start_empty_without_caller),
        T(test_b20_stop_in_after_run_still_runs_rest),
        T(test_b21_stop_in_before_run_step_still_runs),
        T(test_b22_run_after_stop_estate_no_hooks),
        T(test_b23_step_failure_no_after_run),
        T(test_b23_bracket_step_failure_no_after_run),
        T(test_b23_silent_step_failure_gets_a_message),
        T(test_b23_positive_step_status_says_so),
        cmocka_unit_test(test_global_step_missing_says_how),
        T(test_b24_before_run_failure_skips_step_and_rest),
        T(test_b25_after_run_failure_skips_rest),
        T(test_b26_close_ok_calls_end_in_order),
        T(test_b26_end_runs_before_session_closes),
        T(test_b27_close_clean_end_calls_end_returns_ok),
        T(test_b28_close_error_calls_on_abort_not_end),
        T(test_b29_end_failure_skips_rest_still_closes),
        T(test_b30_second_close_estate_no_callbacks),
        T(test_b35_coordinator_error_from_should_stop),
        T(test_b35_coordinator_error_from_run),
        T(test_b39_step_request_stop_estopiter_clean),
        T(test_cancel_inside_step_or_end_releases_session),
        T(test_free_without_close_aborts_with_canceled),
        T(test_clean_and_recoverable_codes),
        T(test_options_version_checked),
        T(test_session_fetch_outside_run),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
