/* tests/hooks/test_basic_hooks.c - StopAtStepHook, StepCounterHook,
 * LoggingTensorHook and NanTensorHook (docs/guide.md, "Other hooks") driven
 * through a monitored session, with a fake clock and a capturing log. The
 * constructors take options structs; the helpers below fill them from the
 * arguments the tests vary. */
#include "session/session_test_util.h"

#include <math.h>
#include <string.h>

typedef struct loop {
    model m;
    fake_clock fc;
    log_sink log;
    double secs_per_step; /* the fake clock advances this much per step */
    int no_increment;     /* the step forgets to increment the global step */
    float publish;        /* the loss the step publishes */
    int publish_set;
} loop;

static int loop_step(ckpt_step_context *sc, void *payload)
{
    loop *l = payload;
    int err;
    l->fc.now += l->secs_per_step;
    if (l->no_increment) {
        l->m.n_steps++;
        return ckpt_step_context_publish_float(sc, "loss", 1.0f);
    }
    err = model_step(sc, &l->m);
    if (err == 0 && l->publish_set)
        err = ckpt_step_context_publish_float(sc, "loss", l->publish);
    return err;
}

static int counter_new(ckpt_hook *h, int64_t steps, double secs,
                       const ckpt_clock *clock, ckpt_log_fn log, void *payload)
{
    ckpt_step_counter_hook_options o = CKPT_STEP_COUNTER_HOOK_OPTIONS_INIT;
    o.every_n_steps = steps;
    o.every_n_secs = secs;
    o.clock = clock;
    o.log = log;
    o.log_payload = payload;
    return ckpt_step_counter_hook_new(h, &o);
}

static int logging_new(ckpt_hook *h, const char *const *names, size_t n,
                       int64_t iters, double secs, int at_end,
                       const ckpt_clock *clock, ckpt_log_fn log, void *payload)
{
    ckpt_logging_tensor_hook_options o = CKPT_LOGGING_TENSOR_HOOK_OPTIONS_INIT;
    o.names = names;
    o.num_names = n;
    o.every_n_iter = iters;
    o.every_n_secs = secs;
    o.at_end = at_end;
    o.clock = clock;
    o.log = log;
    o.log_payload = payload;
    return ckpt_logging_tensor_hook_new(h, &o);
}

static int nan_new(ckpt_hook *h, const char *name, int fail, ckpt_log_fn log,
                   void *payload)
{
    ckpt_nan_tensor_hook_options o = CKPT_NAN_TENSOR_HOOK_OPTIONS_INIT;
    o.loss_name = name;
    o.fail_on_nan = fail;
    o.log = log;
    o.log_payload = payload;
    return ckpt_nan_tensor_hook_new(h, &o);
}

static void loop_init(loop *l)
{
    memset(l, 0, sizeof(*l));
    model_init(&l->m);
    fake_clock_init(&l->fc, 1000.0, 1.7e9 + 1000.0);
}

/* Run until should_stop or `max` steps; returns the last run status. */
static int loop_run(loop *l, ckpt_monitored_session *ms, int max)
{
    int rc = 0;
    for (int i = 0; i < max && !ckpt_monitored_session_should_stop(ms, NULL);
         i++) {
        rc = ckpt_monitored_session_run(ms, NULL, loop_step, l, NULL);
        if (rc != 0)
            break;
    }
    return rc;
}

/* ---- StopAtStepHook ---------------------------------------------------- */

static void test_stop_at_step_args(void **state)
{
    ckpt_hook h;
    (void)state;
    assert_ckpt_error(ckpt_stop_at_step_hook_new(&h, 0, 0), CKPT_EINVAL,
                      "exactly one");
    assert_ckpt_error(ckpt_stop_at_step_hook_new(&h, 3, 5), CKPT_EINVAL,
                      "exactly one");
    assert_ckpt_error(ckpt_stop_at_step_hook_new(&h, -1, 0), CKPT_EINVAL,
                      "negative");
    assert_ckpt_ok(ckpt_stop_at_step_hook_new(&h, 3, 0));
    assert_string_equal(h.name, "StopAtStepHook");
    assert_int_equal(h.version, CKPT_HOOK_VERSION);
    h.destroy(h.payload);
}

static void test_stop_at_step_needs_global_step(void **state)
{
    ckpt_graph *g;
    ckpt_hook h;
    ckpt_monitored_session *ms = NULL;
    (void)state;
    assert_ckpt_ok(ckpt_graph_new(&g));
    assert_ckpt_ok(ckpt_stop_at_step_hook_new(&h, 3, 0));
    assert_ckpt_error(ckpt_monitored_session_new(&ms, g, &h, 1, NULL),
                      CKPT_ESTATE, "no global step");
    assert_null(ms);
    ckpt_graph_free(g);
}

static void test_stop_at_step_num_steps_from_creation(void **state)
{
    loop l;
    ckpt_hook h;
    ckpt_monitored_session *ms;
    (void)state;
    loop_init(&l);
    l.m.step = 10; /* e.g. restored */
    assert_ckpt_ok(ckpt_stop_at_step_hook_new(&h, 3, 0));
    assert_ckpt_ok(ckpt_monitored_session_new(&ms, l.m.graph, &h, 1, NULL));
    assert_ckpt_ok(loop_run(&l, ms, 100));
    assert_int_equal(l.m.step, 13);
    assert_int_equal(l.m.n_steps, 3);
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    ckpt_monitored_session_free(ms);
    model_free(&l.m);
}

static void test_stop_at_step_last_step(void **state)
{
    loop l;
    ckpt_hook h;
    ckpt_monitored_session *ms;
    (void)state;
    loop_init(&l);
    l.m.step = 2;
    assert_ckpt_ok(ckpt_stop_at_step_hook_new(&h, 0, 5));
    assert_ckpt_ok(ckpt_monitored_session_new(&ms, l.m.graph, &h, 1, NULL));
    assert_ckpt_ok(loop_run(&l, ms, 100));
    assert_int_equal(l.m.step, 5);
    ckpt_monitored_session_free(ms);
    model_free(&l.m);
}

static void test_stop_at_step_already_past_runs_nothing(void **state)
{
    loop l;
    ckpt_hook h;
    ckpt_monitored_session *ms;
    (void)state;
    loop_init(&l);
    l.m.step = 7;
    assert_ckpt_ok(ckpt_stop_at_step_hook_new(&h, 0, 5));
    assert_ckpt_ok(ckpt_monitored_session_new(&ms, l.m.graph, &h, 1, NULL));
    assert_true(ckpt_monitored_session_should_stop(ms, NULL));
    assert_ckpt_ok(loop_run(&l, ms, 100));
    assert_int_equal(l.m.n_steps, 0);
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    ckpt_monitored_session_free(ms);
    model_free(&l.m);
}

/* ---- StepCounterHook --------------------------------------------------- */

static void test_step_counter_args(void **state)
{
    ckpt_hook h;
    (void)state;
    /* Neither interval: TF's default, every 100 steps. */
    assert_ckpt_ok(counter_new(&h, 0, 0.0, NULL, NULL, NULL));
    ckpt_hook_free(&h);
    assert_null(h.payload);
    /* the messages name the hook's own options (they named the timer's
     * every_secs and every_steps, fields the options do not have) */
    assert_ckpt_error(counter_new(&h, 5, 2.0, NULL, NULL, NULL), CKPT_EINVAL,
                      "StepCounterHook: both every_n_secs (2) and "
                      "every_n_steps (5) are set; give exactly one");
    assert_ckpt_error(counter_new(&h, -5, 0, NULL, NULL, NULL), CKPT_EINVAL,
                      "StepCounterHook: intervals must be positive "
                      "(every_n_secs 0, every_n_steps -5; 0 leaves one "
                      "unset)");
}

static void test_step_counter_logs_rate(void **state)
{
    loop l;
    ckpt_hook h;
    ckpt_monitored_session *ms;
    (void)state;
    loop_init(&l);
    l.secs_per_step = 0.25;
    assert_ckpt_ok(counter_new(&h, 2, 0.0, &l.fc.clock, log_sink_fn, &l.log));
    assert_string_equal(h.name, "StepCounterHook");
    assert_ckpt_ok(ckpt_monitored_session_new(&ms, l.m.graph, &h, 1, NULL));
    /* step 1: first trigger, nothing logged; step 3: 2 steps in 0.5 s */
    assert_ckpt_ok(loop_run(&l, ms, 2));
    assert_int_equal(l.log.n, 0);
    assert_ckpt_ok(loop_run(&l, ms, 1));
    assert_int_equal(l.log.n, 1);
    assert_string_equal(l.log.lines[0], "global_step/sec: 4 (global step 3)");
    assert_int_equal(l.log.levels[0], CKPT_LOG_INFO);
    assert_ckpt_ok(loop_run(&l, ms, 2));
    assert_int_equal(l.log.n, 2);
    assert_string_equal(l.log.lines[1], "global_step/sec: 4 (global step 5)");
    ckpt_monitored_session_free(ms);
    model_free(&l.m);
}

static void test_step_counter_seconds_mode(void **state)
{
    loop l;
    ckpt_hook h;
    ckpt_monitored_session *ms;
    (void)state;
    loop_init(&l);
    l.secs_per_step = 1.0;
    assert_ckpt_ok(counter_new(&h, 0, 3.0, &l.fc.clock, log_sink_fn, &l.log));
    assert_ckpt_ok(ckpt_monitored_session_new(&ms, l.m.graph, &h, 1, NULL));
    assert_ckpt_ok(loop_run(&l, ms, 4)); /* triggers at 1 and 4 */
    assert_int_equal(l.log.n, 1);
    assert_string_equal(l.log.lines[0], "global_step/sec: 1 (global step 4)");
    ckpt_monitored_session_free(ms);
    model_free(&l.m);
}

static void test_step_counter_warns_when_step_stuck(void **state)
{
    loop l;
    ckpt_hook h;
    ckpt_monitored_session *ms;
    int warnings = 0;
    (void)state;
    loop_init(&l);
    l.no_increment = 1;
    assert_ckpt_ok(counter_new(&h, 1, 0.0, &l.fc.clock, log_sink_fn, &l.log));
    assert_ckpt_ok(ckpt_monitored_session_new(&ms, l.m.graph, &h, 1, NULL));
    assert_ckpt_ok(loop_run(&l, ms, 8));
    for (int i = 0; i < l.log.n; i++)
        if (strstr(l.log.lines[i], "did not increase")) {
            assert_int_equal(l.log.levels[i], CKPT_LOG_WARN);
            warnings++;
        }
    assert_int_equal(warnings, 5);
    ckpt_monitored_session_free(ms);
    model_free(&l.m);
}

/* ---- LoggingTensorHook ----------------------------------------------- */

static const char *const loss_and_w[] = {"loss", "w"};

static void test_logging_tensor_args(void **state)
{
    ckpt_hook h;
    (void)state;
    assert_ckpt_error(
        logging_new(&h, loss_and_w, 2, 0, 0.0, 0, NULL, NULL, NULL),
        CKPT_EINVAL, "at_end");
    assert_ckpt_error(
        logging_new(&h, loss_and_w, 2, -2, 0.0, 0, NULL, NULL, NULL),
        CKPT_EINVAL,
        "LoggingTensorHook: every_n_iter (-2) and every_n_secs (0) must be "
        "positive (0 leaves one unset)");
    /* named as the options name them, not as the timer's every_secs */
    assert_ckpt_error(
        logging_new(&h, loss_and_w, 2, 2, 1.0, 0, NULL, NULL, NULL),
        CKPT_EINVAL,
        "LoggingTensorHook: both every_n_secs (1) and every_n_iter (2) are "
        "set; give exactly one");
    assert_ckpt_error(logging_new(&h, NULL, 0, 2, 0.0, 0, NULL, NULL, NULL),
                      CKPT_EINVAL, "no tensor names");
    {
        static const char *const holes[] = {"loss", NULL, ""};
        assert_ckpt_error(
            logging_new(&h, holes, 2, 2, 0.0, 0, NULL, NULL, NULL), CKPT_EINVAL,
            "LoggingTensorHook: names[1] is NULL");
        assert_ckpt_error(
            logging_new(&h, holes + 1, 2, 2, 0.0, 0, NULL, NULL, NULL),
            CKPT_EINVAL, "LoggingTensorHook: names[0] is NULL");
        assert_ckpt_error(
            logging_new(&h, holes + 2, 1, 2, 0.0, 0, NULL, NULL, NULL),
            CKPT_EINVAL, "LoggingTensorHook: names[0] is empty");
    }
    assert_ckpt_ok(logging_new(&h, loss_and_w, 2, 0, 0.0, 1, NULL, NULL, NULL));
    h.destroy(h.payload);
}

static void test_logging_tensor_every_n_iter(void **state)
{
    loop l;
    ckpt_hook h;
    ckpt_monitored_session *ms;
    (void)state;
    loop_init(&l);
    l.secs_per_step = 0.5;
    assert_ckpt_ok(logging_new(&h, loss_and_w, 2, 2, 0.0, 0, &l.fc.clock,
                               log_sink_fn, &l.log));
    assert_ckpt_ok(ckpt_monitored_session_new(&ms, l.m.graph, &h, 1, NULL));
    assert_ckpt_ok(loop_run(&l, ms, 5)); /* logs at iterations 0, 2, 4 */
    assert_int_equal(l.log.n, 3);
    assert_string_equal(l.log.lines[0], "loss = 1, w = [1, 1, 1, 1]");
    assert_string_equal(l.log.lines[1],
                        "loss = 0.333333, w = [3, 3, 3, 3] (1.000 sec)");
    assert_string_equal(l.log.lines[2], "loss = 0.2, w = [5, 5, 5, 5] "
                                        "(1.000 sec)");
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    assert_int_equal(l.log.n, 3); /* no at_end */
    ckpt_monitored_session_free(ms);
    model_free(&l.m);
}

static void test_logging_tensor_at_end_only(void **state)
{
    loop l;
    ckpt_hook h;
    ckpt_monitored_session *ms;
    static const char *const names[] = {"global_step", "loss"};
    (void)state;
    loop_init(&l);
    assert_ckpt_ok(
        logging_new(&h, names, 2, 0, 0.0, 1, &l.fc.clock, log_sink_fn, &l.log));
    assert_ckpt_ok(ckpt_monitored_session_new(&ms, l.m.graph, &h, 1, NULL));
    assert_ckpt_ok(loop_run(&l, ms, 4));
    assert_int_equal(l.log.n, 0);
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    assert_int_equal(l.log.n, 1);
    assert_string_equal(l.log.lines[0], "global_step = 4, loss = 0.25");
    ckpt_monitored_session_free(ms);
    model_free(&l.m);
}

static void test_logging_tensor_every_n_secs(void **state)
{
    loop l;
    ckpt_hook h;
    ckpt_monitored_session *ms;
    static const char *const names[] = {"global_step"};
    (void)state;
    loop_init(&l);
    l.secs_per_step = 1.0;
    assert_ckpt_ok(
        logging_new(&h, names, 1, 0, 2.5, 0, &l.fc.clock, log_sink_fn, &l.log));
    assert_ckpt_ok(ckpt_monitored_session_new(&ms, l.m.graph, &h, 1, NULL));
    assert_ckpt_ok(loop_run(&l, ms, 6));
    /* iteration 0 logs and records t=1001 (after its step); iteration 4's
     * before_run (t=1004) is the first 2.5 s later; it records t=1005 */
    assert_int_equal(l.log.n, 2);
    assert_string_equal(l.log.lines[0], "global_step = 1");
    assert_string_equal(l.log.lines[1], "global_step = 5 (4.000 sec)");
    ckpt_monitored_session_free(ms);
    model_free(&l.m);
}

/* ---- NanTensorHook ---------------------------------------------------- */

static void test_nan_tensor_fail_on_nan(void **state)
{
    loop l;
    ckpt_hook h;
    ckpt_monitored_session *ms;
    (void)state;
    loop_init(&l);
    assert_ckpt_error(nan_new(&h, "", 1, NULL, NULL), CKPT_EINVAL, "name");
    assert_ckpt_ok(nan_new(&h, "loss", 1, NULL, NULL));
    assert_string_equal(h.name, "NanTensorHook");
    assert_ckpt_ok(ckpt_monitored_session_new(&ms, l.m.graph, &h, 1, NULL));
    assert_ckpt_ok(loop_run(&l, ms, 2));
    l.publish_set = 1;
    l.publish = NAN;
    assert_ckpt_error(ckpt_monitored_session_run(ms, NULL, loop_step, &l, NULL),
                      CKPT_EUSER,
                      "NaN loss during training: 'loss' at global "
                      "step 3");
    ckpt_monitored_session_free(ms);
    model_free(&l.m);
}

static void test_nan_tensor_warn_and_stop(void **state)
{
    loop l;
    ckpt_hook h;
    ckpt_monitored_session *ms;
    (void)state;
    loop_init(&l);
    assert_ckpt_ok(nan_new(&h, "loss", 0, log_sink_fn, &l.log));
    assert_ckpt_ok(ckpt_monitored_session_new(&ms, l.m.graph, &h, 1, NULL));
    l.publish_set = 1;
    l.publish = 0.5f;
    assert_ckpt_ok(loop_run(&l, ms, 2));
    assert_false(ckpt_monitored_session_should_stop(ms, NULL));
    l.publish = NAN;
    assert_ckpt_ok(loop_run(&l, ms, 10));
    assert_int_equal(l.m.step, 3);
    assert_true(ckpt_monitored_session_should_stop(ms, NULL));
    assert_int_equal(l.log.n, 1);
    assert_int_equal(l.log.levels[0], CKPT_LOG_WARN);
    assert_non_null(strstr(l.log.lines[0], "NaN loss"));
    ckpt_monitored_session_free(ms);
    model_free(&l.m);
}

static int publish_half_nan(ckpt_step_context *sc, void *payload)
{
    static const uint16_t h[2] = {0x3c00, 0x7e00}; /* 1.0, NaN */
    ckpt_shape shape = {1, {2}};
    (void)payload;
    return ckpt_step_context_publish(sc, "hloss", CKPT_DT_HALF, &shape, h);
}

static int publish_int(ckpt_step_context *sc, void *payload)
{
    int32_t v = 3;
    (void)payload;
    return ckpt_step_context_publish(sc, "hloss", CKPT_DT_INT32, NULL, &v);
}

static void test_nan_tensor_half_and_wrong_dtype(void **state)
{
    loop l;
    ckpt_hook h;
    ckpt_monitored_session *ms;
    (void)state;
    loop_init(&l);
    assert_ckpt_ok(nan_new(&h, "hloss", 1, NULL, NULL));
    assert_ckpt_ok(ckpt_monitored_session_new(&ms, l.m.graph, &h, 1, NULL));
    assert_ckpt_error(
        ckpt_monitored_session_run(ms, NULL, publish_half_nan, NULL, NULL),
        CKPT_EUSER, "NaN loss");
    assert_ckpt_error(
        ckpt_monitored_session_run(ms, NULL, publish_int, NULL, NULL),
        CKPT_EINVAL, "int32, not a floating-point");
    ckpt_monitored_session_free(ms);
    model_free(&l.m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stop_at_step_args),
        cmocka_unit_test(test_stop_at_step_needs_global_step),
        cmocka_unit_test(test_stop_at_step_num_steps_from_creation),
        cmocka_unit_test(test_stop_at_step_last_step),
        cmocka_unit_test(test_stop_at_step_already_past_runs_nothing),
        cmocka_unit_test(test_step_counter_args),
        cmocka_unit_test(test_step_counter_logs_rate),
        cmocka_unit_test(test_step_counter_seconds_mode),
        cmocka_unit_test(test_step_counter_warns_when_step_stuck),
        cmocka_unit_test(test_logging_tensor_args),
        cmocka_unit_test(test_logging_tensor_every_n_iter),
        cmocka_unit_test(test_logging_tensor_at_end_only),
        cmocka_unit_test(test_logging_tensor_every_n_secs),
        cmocka_unit_test(test_nan_tensor_fail_on_nan),
        cmocka_unit_test(test_nan_tensor_warn_and_stop),
        cmocka_unit_test(test_nan_tensor_half_and_wrong_dtype),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
