/* examples/custom_hook.c - a hook written by a user with the same public
 * ckpt_hook struct the library's own hooks use: it fetches the step's
 * "loss" output every N steps, logs it, and asks the session to stop once
 * the loss falls below a threshold. A tiny loop fits y = 3x with gradient
 * descent under a monitored session; the library's StopAtStepHook is a
 * safety net.
 *
 * Usage: custom_hook [threshold]   (default 1e-4) */
#include <ckpt.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the user's hook ------------------------------------------------------
 */

typedef struct loss_watch {
    const char *fetch[1]; /* what before_run asks for */
    int64_t every_n;      /* look at the loss every N steps */
    double threshold;     /* stop when loss < threshold */
    int64_t checked;      /* how many times the loss was looked at */
    int watching;         /* this step's loss was requested */
} loss_watch;

static int watch_before_run(ckpt_run_context *ctx, ckpt_run_args *args,
                            void *payload)
{
    loss_watch *w = payload;
    int64_t step = 0;
    (void)ckpt_session_global_step(ckpt_run_context_session(ctx), &step);
    /* Request the loss only on the steps we log: other steps cost nothing. */
    w->watching = (step + 1) % w->every_n == 0;
    if (w->watching) {
        args->fetches = w->fetch;
        args->num_fetches = 1;
    }
    return 0;
}

static int watch_after_run(ckpt_run_context *ctx, const ckpt_run_values *v,
                           void *payload)
{
    loss_watch *w = payload;
    float loss;
    if (!w->watching)
        return 0;
    if (v->num_results != 1 || v->results[0].dtype != CKPT_DT_FLOAT)
        return CKPT_EUSER; /* the step did not publish a float "loss" */
    memcpy(&loss, v->results[0].data, sizeof(loss));
    w->checked++;
    printf("step %lld: loss %.6g\n", (long long)v->step_after, loss);
    if (loss < w->threshold) {
        printf("loss below %g: requesting a stop\n", w->threshold);
        ckpt_run_context_request_stop(ctx);
    }
    return 0;
}

static ckpt_hook loss_watch_hook(loss_watch *w)
{
    ckpt_hook h;
    memset(&h, 0, sizeof(h));
    h.version = CKPT_HOOK_VERSION;
    h.name = "LossWatchHook";
    h.payload = w;
    h.before_run = watch_before_run;
    h.after_run = watch_after_run;
    return h; /* no destroy: `w` lives on main's stack */
}

/* ---- a tiny model: y = a * x, fitted to y = 3x -------------------------- */

typedef struct model {
    int64_t step;
    float a;
} model;

static int train_step(ckpt_step_context *sc, void *payload)
{
    model *m = payload;
    float x = (float)(m->step % 7 + 1) / 7.0f;
    float err = m->a * x - 3.0f * x;
    m->a -= 0.5f * err * x; /* gradient of err^2 / 2 */
    m->step++;
    return ckpt_step_context_publish_float(sc, "loss", 0.5f * err * err);
}

int main(int argc, char **argv)
{
    loss_watch w = {{"loss"}, 10, 1e-4, 0, 0};
    model m = {0, 0.0f};
    ckpt_var a_var;
    ckpt_graph *graph = NULL;
    ckpt_monitored_session *ms = NULL;
    ckpt_hook hooks[2];
    int rc;
    if (argc > 1)
        w.threshold = strtod(argv[1], NULL);

    memset(&a_var, 0, sizeof(a_var));
    a_var.name = "a";
    a_var.dtype = CKPT_DT_FLOAT;
    a_var.data = &m.a;
    rc = ckpt_graph_new(&graph);
    if (rc == 0)
        rc = ckpt_graph_create_global_step(graph, &m.step);
    if (rc == 0)
        rc = ckpt_graph_add_var(graph, &a_var);
    if (rc == 0) {
        hooks[0] = loss_watch_hook(&w);
        rc = ckpt_stop_at_step_hook_new(&hooks[1], 0, 10000);
    }
    if (rc == 0)
        rc = ckpt_monitored_session_new(&ms, graph, hooks, 2, NULL);
    while (rc == 0 && !ckpt_monitored_session_should_stop(ms, &rc))
        rc = ckpt_monitored_session_run(ms, NULL, train_step, &m, NULL);
    if (ms) {
        rc = ckpt_monitored_session_close(ms, rc);
        ckpt_monitored_session_free(ms);
    }
    ckpt_graph_free(graph);
    if (rc != 0) {
        fprintf(stderr, "custom_hook: %s\n", ckpt_error_last()->message);
        return 1;
    }
    printf("stopped at step %lld with a = %.4f (loss checked %lld times)\n",
           (long long)m.step, m.a, (long long)w.checked);
    return 0;
}
