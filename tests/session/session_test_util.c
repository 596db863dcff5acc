/* tests/session/session_test_util.c - see session_test_util.h. */
#include "session_test_util.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

void trace_add(trace *t, const char *fmt, ...)
{
    size_t used = strlen(t->buf);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->buf + used, sizeof(t->buf) - used, fmt, ap);
    va_end(ap);
    used = strlen(t->buf);
    if (used + 1 < sizeof(t->buf)) {
        t->buf[used] = ' ';
        t->buf[used + 1] = '\0';
    }
}

static void note(rec_hook *r, const char *event)
{
    if (r->trace)
        trace_add(r->trace, "%s.%s", r->name, event);
}

static int rec_begin(ckpt_graph *g, void *payload)
{
    rec_hook *r = payload;
    (void)g;
    r->n_begin++;
    note(r, "begin");
    return r->fail_begin;
}

static int rec_create(ckpt_session *s, ckpt_coordinator *coord, void *payload)
{
    rec_hook *r = payload;
    r->n_create++;
    r->coord = coord;
    r->session = s;
    note(r, "create");
    if (r->fail_create &&
        (r->fail_create_times == 0 || r->n_create <= r->fail_create_times))
        return r->fail_create;
    return 0;
}

static int rec_before(ckpt_run_context *ctx, ckpt_run_args *args, void *payload)
{
    rec_hook *r = payload;
    r->n_before++;
    note(r, "before");
    if (r->fail_before)
        return r->fail_before;
    args->fetches = r->fetches;
    args->num_fetches = r->num_fetches;
    args->feeds = r->feeds;
    args->num_feeds = r->num_feeds;
    args->options = r->options;
    if (r->stop_in_before)
        ckpt_run_context_request_stop(ctx);
    return 0;
}

static int rec_after(ckpt_run_context *ctx, const ckpt_run_values *v,
                     void *payload)
{
    rec_hook *r = payload;
    r->n_after++;
    note(r, "after");
    r->last_num_results = v->num_results;
    for (size_t i = 0; i < v->num_results && i < 4; i++)
        r->last_results[i] = v->results[i];
    if (v->num_results > 0 && v->results[0].dtype == CKPT_DT_FLOAT &&
        v->results[0].size >= sizeof(float))
        memcpy(&r->last_float, v->results[0].data, sizeof(float));
    r->last_options = v->options;
    r->last_step_before = v->step_before;
    r->last_step_after = v->step_after;
    if (r->fail_after &&
        (r->fail_after_times == 0 || r->n_after <= r->fail_after_times))
        return r->fail_after;
    if (r->stop_in_after ||
        (r->stop_at_step > 0 && v->step_after >= r->stop_at_step))
        ckpt_run_context_request_stop(ctx);
    return 0;
}

static int rec_end(ckpt_session *s, void *payload)
{
    rec_hook *r = payload;
    (void)s;
    r->n_end++;
    note(r, "end");
    return r->fail_end;
}

static void rec_abort(int status, void *payload)
{
    rec_hook *r = payload;
    r->n_abort++;
    r->abort_status = status;
    note(r, "abort");
}

static void rec_destroy(void *payload)
{
    rec_hook *r = payload;
    r->n_destroy++;
}

ckpt_hook rec_hook_make(rec_hook *r, const char *name, trace *t)
{
    ckpt_hook h;
    r->name = name;
    r->trace = t;
    memset(&h, 0, sizeof(h));
    h.version = CKPT_HOOK_VERSION;
    h.name = name;
    h.payload = r;
    h.begin = rec_begin;
    h.after_create_session = rec_create;
    h.before_run = rec_before;
    h.after_run = rec_after;
    h.end = rec_end;
    h.on_abort = r->no_on_abort ? NULL : rec_abort;
    h.destroy = rec_destroy;
    return h;
}

void log_sink_fn(int level, const char *message, void *payload)
{
    log_sink *s = payload;
    if (s->n >= 64)
        return;
    snprintf(s->lines[s->n], sizeof(s->lines[s->n]), "%s", message);
    s->levels[s->n] = level;
    s->n++;
}

int log_sink_find(const log_sink *s, const char *needle)
{
    for (int i = 0; i < s->n; i++)
        if (strstr(s->lines[i], needle))
            return i;
    return -1;
}

void model_init(model *m)
{
    ckpt_var v;
    memset(m, 0, sizeof(*m));
    assert_ckpt_ok(ckpt_graph_new(&m->graph));
    assert_ckpt_ok(ckpt_graph_create_global_step(m->graph, &m->step));
    v = test_float_var("w", m->w, 4);
    assert_ckpt_ok(ckpt_graph_add_var(m->graph, &v));
}

void model_free(model *m)
{
    ckpt_graph_free(m->graph);
    m->graph = NULL;
}

int model_step(ckpt_step_context *sc, void *payload)
{
    model *m = payload;
    m->n_steps++;
    if (m->feed_name) {
        const void *data = NULL;
        size_t size = 0;
        int err = ckpt_step_context_feed(sc, m->feed_name, &data, &size);
        if (err < 0)
            return err;
        if (size == sizeof(float))
            memcpy(&m->last_feed, data, sizeof(float));
    }
    if (m->fail_code && m->step == m->fail_at_step &&
        (m->fail_times == 0 || m->failed < m->fail_times)) {
        m->failed++;
        return m->fail_code;
    }
    for (int i = 0; i < 4; i++)
        m->w[i] += 1.0f;
    m->step++;
    m->loss = 1.0f / (float)m->step;
    if (m->raise_at && m->step == m->raise_at)
        raise(m->raise_signal);
    if (m->request_stop_at && m->step == m->request_stop_at)
        ckpt_step_context_request_stop(sc);
    return ckpt_step_context_publish_float(sc, "loss", m->loss);
}
