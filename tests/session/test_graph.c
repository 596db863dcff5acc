/* tests/session/test_graph.c - the variable registry: registration checks,
 * the global step, lookups, the freeze after the hooks' begin (kept while
 * any session over the graph is open), and a graph freed before its
 * sessions. */
#include "session_test_util.h"

#include <stdlib.h>
#include <string.h>

static void test_graph_add_and_find(void **state)
{
    ckpt_graph *g;
    float a[3], b[2];
    char name[8] = "a";
    ckpt_var v = test_float_var(name, a, 3);
    (void)state;
    assert_ckpt_ok(ckpt_graph_new(&g));
    assert_ckpt_ok(ckpt_graph_add_var(g, &v));
    name[0] = 'z'; /* the name was copied */
    v = test_float_var("b", b, 2);
    assert_ckpt_ok(ckpt_graph_add_var(g, &v));
    assert_int_equal(ckpt_graph_num_vars(g), 2);
    assert_string_equal(ckpt_graph_var(g, 0)->name, "a");
    assert_ptr_equal(ckpt_graph_var(g, 0)->data, a);
    assert_string_equal(ckpt_graph_var(g, 1)->name, "b");
    assert_null(ckpt_graph_var(g, 2));
    assert_ptr_equal(ckpt_graph_find(g, "b")->data, b);
    assert_null(ckpt_graph_find(g, "z"));
    assert_null(ckpt_graph_global_step(g));
    ckpt_graph_free(g);
}

static void test_graph_rejects_bad_vars(void **state)
{
    ckpt_graph *g;
    float a[2];
    ckpt_var v = test_float_var("a", a, 2);
    (void)state;
    assert_ckpt_ok(ckpt_graph_new(&g));
    assert_ckpt_ok(ckpt_graph_add_var(g, &v));
    assert_ckpt_error(ckpt_graph_add_var(g, &v), CKPT_EEXISTS, "'a'");
    v.name = "";
    assert_ckpt_error(ckpt_graph_add_var(g, &v), CKPT_EINVAL, "without a name");
    v = test_float_var("s", a, 2);
    v.dtype = CKPT_DT_STRING;
    assert_ckpt_error(ckpt_graph_add_var(g, &v), CKPT_ENOTSUP,
                      "variable 's': dtype 7 (string) is not a fixed-size");
    /* The shape check's own reason is kept, as the saver's add_var keeps
     * it, not reduced to "bad shape". */
    v = test_float_var("neg", a, -1);
    assert_ckpt_error(ckpt_graph_add_var(g, &v), CKPT_EINVAL,
                      "graph: variable 'neg': shape: dim 0 is negative (-1)");
    v = test_float_var("deep", a, 2);
    v.shape.rank = CKPT_MAX_RANK + 1;
    assert_ckpt_error(ckpt_graph_add_var(g, &v), CKPT_EINVAL,
                      "variable 'deep': shape: rank 33 out of range 0..32");
    v = test_float_var("nodata", NULL, 2);
    assert_ckpt_error(ckpt_graph_add_var(g, &v), CKPT_EINVAL, "'nodata'");
    assert_int_equal(ckpt_graph_num_vars(g), 1);
    ckpt_graph_free(g);
}

/* The graph checks a variable's name as the savers do (one check,
 * ckpt__check_var_name): a name longer than CKPT_MAX_NAME_BYTES is refused
 * when it is added, not when the session's saver first sees it. */
static void test_graph_rejects_long_name(void **state)
{
    ckpt_graph *g;
    float a[2];
    char *name = malloc(CKPT_MAX_NAME_BYTES + 2);
    ckpt_var v = test_float_var(NULL, a, 2);
    (void)state;
    assert_non_null(name);
    memset(name, 'n', CKPT_MAX_NAME_BYTES + 1);
    name[CKPT_MAX_NAME_BYTES + 1] = '\0';
    v.name = name;
    assert_ckpt_ok(ckpt_graph_new(&g));
    assert_ckpt_error(ckpt_graph_add_var(g, &v), CKPT_EINVAL,
                      "graph: a tensor name of 1048577 bytes");
    assert_ckpt_error(ckpt_graph_add_var(g, &v), CKPT_EINVAL,
                      "at most CKPT_MAX_NAME_BYTES");
    v.name = NULL;
    assert_ckpt_error(ckpt_graph_add_var(g, &v), CKPT_EINVAL,
                      "graph: variable without a name (its name is NULL)");
    name[CKPT_MAX_NAME_BYTES] = '\0';
    v.name = name;
    assert_ckpt_ok(ckpt_graph_add_var(g, &v));
    assert_int_equal(ckpt_graph_num_vars(g), 1);
    ckpt_graph_free(g);
    free(name);
}

static void test_graph_global_step(void **state)
{
    ckpt_graph *g;
    int64_t step = 7, other = 0;
    const ckpt_var *v;
    (void)state;
    assert_ckpt_ok(ckpt_graph_new(&g));
    assert_ckpt_ok(ckpt_graph_create_global_step(g, &step));
    assert_ptr_equal(ckpt_graph_global_step(g), &step);
    v = ckpt_graph_find(g, "global_step");
    assert_non_null(v);
    assert_int_equal(v->dtype, CKPT_DT_INT64);
    assert_int_equal(v->shape.rank, 0);
    assert_ckpt_error(ckpt_graph_create_global_step(g, &other), CKPT_EEXISTS,
                      "global step");
    ckpt_graph_free(g);
}

/* A variable named "global_step" added as an ordinary one is not the
 * global step, and both messages say how to make it one. */
static void test_graph_global_step_added_as_var(void **state)
{
    ckpt_graph *g;
    ckpt_hook h;
    ckpt_monitored_session *ms = NULL;
    int64_t step = 0;
    ckpt_var v = {"global_step", CKPT_DT_INT64, {0, {0}}, &step,
                  NULL,          NULL,          NULL};
    (void)state;
    assert_ckpt_ok(ckpt_graph_new(&g));
    assert_ckpt_ok(ckpt_graph_add_var(g, &v));
    assert_null(ckpt_graph_global_step(g));
    assert_ckpt_error(ckpt_graph_create_global_step(g, &step), CKPT_EEXISTS,
                      "was added with ckpt_graph_add_var");
    assert_ckpt_ok(ckpt_stop_at_step_hook_new(&h, 5, 0));
    assert_ckpt_error(ckpt_monitored_session_new(&ms, g, &h, 1, NULL),
                      CKPT_ESTATE,
                      "'global_step' was added with ckpt_graph_add_var");
    assert_null(ms);
    ckpt_graph_free(g);
}

static void test_graph_frozen_by_session(void **state)
{
    model m;
    ckpt_monitored_session *ms;
    int64_t other = 0;
    float x = 0;
    ckpt_var v = test_float_var("x", &x, 1);
    ckpt_graph *g2;
    (void)state;
    model_init(&m);
    assert_false(ckpt_graph_is_frozen(m.graph));
    /* hooks NULL with a count: refused (it once crashed destroying them) */
    assert_ckpt_error(ckpt_monitored_session_new(&ms, m.graph, NULL, 3, NULL),
                      CKPT_EINVAL, "hooks is NULL");
    assert_false(ckpt_graph_is_frozen(m.graph));
    assert_ckpt_ok(ckpt_monitored_session_new(&ms, m.graph, NULL, 0, NULL));
    assert_true(ckpt_graph_is_frozen(m.graph));
    assert_ckpt_error(ckpt_graph_add_var(m.graph, &v), CKPT_ESTATE, "frozen");
    ckpt_monitored_session_free(ms);
    assert_false(ckpt_graph_is_frozen(m.graph));
    assert_ckpt_ok(ckpt_graph_add_var(m.graph, &v));
    model_free(&m);
    /* a global step cannot be created in a frozen graph either */
    assert_ckpt_ok(ckpt_graph_new(&g2));
    assert_ckpt_ok(ckpt_monitored_session_new(&ms, g2, NULL, 0, NULL));
    assert_ckpt_error(ckpt_graph_create_global_step(g2, &other), CKPT_ESTATE,
                      "frozen");
    ckpt_monitored_session_free(ms);
    ckpt_graph_free(g2);
}

/* Two sessions over one graph: the first one's close left the graph
 * unfrozen while the second still ran over it, so a variable added then
 * was silently missing from the second one's checkpoints. */
static void test_graph_frozen_while_any_session_open(void **state)
{
    model m;
    ckpt_monitored_session *a, *b;
    float x = 0;
    ckpt_var v = test_float_var("x", &x, 1);
    (void)state;
    model_init(&m);
    assert_ckpt_ok(ckpt_monitored_session_new(&a, m.graph, NULL, 0, NULL));
    assert_ckpt_ok(ckpt_monitored_session_new(&b, m.graph, NULL, 0, NULL));
    assert_ckpt_ok(ckpt_monitored_session_close(a, 0));
    assert_true(ckpt_graph_is_frozen(m.graph));
    assert_ckpt_error(ckpt_graph_add_var(m.graph, &v), CKPT_ESTATE, "frozen");
    ckpt_monitored_session_free(a);
    assert_true(ckpt_graph_is_frozen(m.graph));
    ckpt_monitored_session_free(b);
    assert_false(ckpt_graph_is_frozen(m.graph));
    assert_ckpt_ok(ckpt_graph_add_var(m.graph, &v));
    model_free(&m);
}

/* A graph freed before its session (a cleanup in the wrong order) was
 * used after free by the session's run, close and free; now the session
 * keeps it until it is freed itself. */
static void test_graph_freed_before_session(void **state)
{
    model m;
    ckpt_monitored_session *ms, *ms2;
    (void)state;
    model_init(&m);
    assert_ckpt_ok(ckpt_monitored_session_new(&ms, m.graph, NULL, 0, NULL));
    assert_ckpt_ok(ckpt_monitored_session_new(&ms2, m.graph, NULL, 0, NULL));
    ckpt_graph_free(m.graph);
    assert_ckpt_ok(ckpt_monitored_session_run(ms, NULL, model_step, &m, NULL));
    assert_int_equal(m.step, 1);
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    ckpt_monitored_session_free(ms);
    assert_ckpt_ok(ckpt_monitored_session_run(ms2, NULL, model_step, &m, NULL));
    assert_int_equal(m.step, 2);
    ckpt_monitored_session_free(ms2); /* frees the graph */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_graph_add_and_find),
        cmocka_unit_test(test_graph_rejects_bad_vars),
        cmocka_unit_test(test_graph_rejects_long_name),
        cmocka_unit_test(test_graph_global_step),
        cmocka_unit_test(test_graph_global_step_added_as_var),
        cmocka_unit_test(test_graph_frozen_by_session),
        cmocka_unit_test(test_graph_frozen_while_any_session_open),
        cmocka_unit_test(test_graph_freed_before_session),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
