/* tests/hooks/ckhook_test_util.c - see ckhook_test_util.h. */
#include "ckhook_test_util.h"

#include "common/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- the checking file system -------------------------------------------- */

#define INNER(c) (&(c)->gate.fwd.fs)

static int c_write(ckpt_file *f, const void *buf, size_t n, void *p)
{
    check_fs *c = p;
    if (atomic_load(&c->fail_writes))
        return ckpt__error(CKPT_ENOSPC, "injected: no space left on device");
    return INNER(c)->write(f, buf, n, INNER(c)->payload);
}

/* The checkpoint a state file names as newest must be complete. */
static void check_state_file(check_fs *c, const char *tmp_path)
{
    size_t n = 0;
    uint8_t *text = test_read_file(tmp_path, &n);
    const char *key = "model_checkpoint_path: \"";
    char name[1024], path[8192];
    const char *p, *q;
    int ok = 0;
    if (text) {
        char *s = realloc(text, n + 1);
        text = (uint8_t *)s;
        s[n] = '\0';
        p = strstr(s, key);
        if (p) {
            p += strlen(key);
            q = strchr(p, '"');
            if (q && (size_t)(q - p) < sizeof(name)) {
                memcpy(name, p, (size_t)(q - p));
                name[q - p] = '\0';
                if (name[0] == '/')
                    snprintf(path, sizeof(path), "%s.index", name);
                else
                    snprintf(path, sizeof(path), "%s/%s.index", c->dir, name);
                ok = INNER(c)->stat(path, NULL, NULL, INNER(c)->payload) == 0;
                if (name[0] == '/')
                    snprintf(path, sizeof(path), "%s.data-00000-of-00001",
                             name);
                else
                    snprintf(path, sizeof(path), "%s/%s.data-00000-of-00001",
                             c->dir, name);
                ok = ok &&
                     INNER(c)->stat(path, NULL, NULL, INNER(c)->payload) == 0;
            }
        }
    }
    free(text);
    atomic_fetch_add(&c->state_checks, 1);
    if (!ok)
        atomic_fetch_add(&c->state_bad, 1);
    ckpt_error_clear();
}

static int c_rename(const char *a, const char *b, void *p)
{
    check_fs *c = p;
    const char *base = strrchr(b, '/');
    base = base ? base + 1 : b;
    if (strcmp(base, CKPT_STATE_FILENAME) == 0)
        check_state_file(c, a);
    return INNER(c)->rename(a, b, INNER(c)->payload);
}

static void check_fs_init(check_fs *c, const char *dir)
{
    memset(c, 0, sizeof(*c));
    gate_fs_init(&c->gate);
    snprintf(c->dir, sizeof(c->dir), "%s", dir);
    ckpt_fs_forward_init(&c->fwd, INNER(c));
    c->fwd.fs.write = c_write;
    c->fwd.fs.rename = c_rename;
}

/* ---- fixture ------------------------------------------------------------- */

int ck_setup(void **state)
{
    ck_fixture *f = calloc(1, sizeof(*f));
    ckpt_var w;
    f->root = test_make_temp_dir();
    snprintf(f->ckdir, sizeof(f->ckdir), "%s/ck/a/b", f->root);
    check_fs_init(&f->cfs, f->ckdir);
    fake_clock_init(&f->clock, 1000.0, 1000.0);
    pthread_mutex_init(&f->log_mu, NULL);
    f->caller = pthread_self();
    assert_ckpt_ok(ckpt_graph_new(&f->graph));
    w = test_float_var("w", f->vals, CK_NVALS);
    assert_ckpt_ok(ckpt_graph_add_var(f->graph, &w));
    assert_ckpt_ok(ckpt_graph_create_global_step(f->graph, &f->gstep));
    ck_fill(f, 0);
    for (int i = 0; i < 4; i++) {
        f->listeners[i].f = f;
        f->listeners[i].index = i;
    }
    *state = f;
    return 0;
}

int ck_teardown(void **state)
{
    ck_fixture *f = *state;
    ckpt_graph_free(f->graph);
    gate_fs_dispose(&f->cfs.gate);
    for (int i = 0; i < f->nlog; i++)
        free(f->log_lines[i]);
    pthread_mutex_destroy(&f->log_mu);
    test_remove_tree(f->root);
    free(f);
    return 0;
}

float ck_value(int64_t step, int i)
{
    return (float)step * 1000.0f + (float)i;
}

void ck_fill(ck_fixture *f, int64_t step)
{
    for (int i = 0; i < CK_NVALS; i++)
        f->vals[i] = ck_value(step, i);
    f->gstep = step;
}

int ck_step(ckpt_step_context *sc, void *payload)
{
    ck_fixture *f = payload;
    (void)sc;
    if (f->abort_at > 0 && f->gstep + 1 == f->abort_at && !f->aborted) {
        f->aborted = 1;
        ck_fill(f, 999);
        return ckpt__error(CKPT_EABORTED, "injected: step aborted");
    }
    ck_fill(f, f->no_increment ? f->gstep : f->gstep + 1);
    f->clock.now += f->secs_per_step;
    return 0;
}

/* ---- log ----------------------------------------------------------------- */

static void ck_log(int level, const char *message, void *payload)
{
    ck_fixture *f = payload;
    pthread_mutex_lock(&f->log_mu);
    if (f->nlog < CK_MAX_LOG) {
        f->log_levels[f->nlog] = level;
        f->log_lines[f->nlog++] = strdup(message);
    }
    pthread_mutex_unlock(&f->log_mu);
}

int ck_log_count(ck_fixture *f, const char *needle)
{
    int n = 0;
    pthread_mutex_lock(&f->log_mu);
    for (int i = 0; i < f->nlog; i++)
        if (strstr(f->log_lines[i], needle))
            n++;
    pthread_mutex_unlock(&f->log_mu);
    return n;
}

/* ---- listeners ----------------------------------------------------------- */

static ck_event *record(ck_listener *l, ev_kind kind, int64_t step)
{
    ck_fixture *f = l->f;
    ck_event *e;
    if (f->nevents >= CK_MAX_EVENTS)
        fail_msg("too many listener events");
    e = &f->events[f->nevents++];
    memset(e, 0, sizeof(*e));
    e->kind = kind;
    e->listener = l->index;
    e->step = step;
    e->on_caller = pthread_equal(pthread_self(), f->caller);
    e->gstep = f->gstep;
    e->latest = ck_latest_step(f);
    e->index_exists = ck_has_checkpoint(f, step);
    return e;
}

static int l_begin(void *payload)
{
    record(payload, EV_BEGIN, -1);
    return 0;
}

static int l_before_save(ckpt_session *s, int64_t step, void *payload)
{
    ck_listener *l = payload;
    (void)s;
    record(l, EV_BEFORE, step);
    if (l->fail_before_at > 0 && l->fail_before_at == step)
        return CKPT_EUSER;
    return 0;
}

static int l_after_save(ckpt_session *s, int64_t step, const char *prefix,
                        int *stop, void *payload)
{
    ck_listener *l = payload;
    ck_event *e;
    (void)s;
    e = record(l, EV_AFTER, step);
    snprintf(e->prefix, sizeof(e->prefix), "%s", prefix);
    if (l->stop_at > 0 && l->stop_at == step)
        *stop = 1;
    return 0;
}

static int l_end(ckpt_session *s, int64_t step, void *payload)
{
    (void)s;
    record(payload, EV_END, step);
    return 0;
}

int ck_events(ck_fixture *f, ev_kind kind, ck_event *out, int max)
{
    int n = 0;
    for (int i = 0; i < f->nevents; i++)
        if (f->events[i].kind == kind && n < max)
            out[n++] = f->events[i];
    return n;
}

/* ---- options, sessions --------------------------------------------------- */

ckpt_saver_options ck_saver_options(ck_fixture *f, int policy)
{
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    o.fs = &f->cfs.fwd.fs;
    o.max_to_keep = CKPT_KEEP_ALL;
    o.busy_policy = policy;
    o.log = ck_log;
    o.log_payload = f;
    o.log_level = CKPT_LOG_DEBUG;
    return o;
}

ckpt_checkpoint_hook_options ck_hook_options(ck_fixture *f, int mode,
                                             int64_t save_steps,
                                             const ckpt_saver_options *so,
                                             ckpt_saver_listener *ls, int n)
{
    ckpt_checkpoint_hook_options o = CKPT_CHECKPOINT_HOOK_OPTIONS_INIT;
    o.checkpoint_dir = f->ckdir;
    o.save_steps = save_steps;
    o.mode = mode;
    o.saver_options = so;
    o.clock = &f->clock.clock;
    for (int i = 0; i < n; i++) {
        ckpt_saver_listener l = {
            CKPT_LISTENER_VERSION, &f->listeners[i], l_begin,
            l_before_save,         l_after_save,     l_end};
        ls[i] = l;
    }
    o.listeners = n > 0 ? ls : NULL;
    o.num_listeners = (size_t)n;
    return o;
}

ckpt_session_options ck_session_options(ck_fixture *f, int recoverable,
                                        const ckpt_saver_options *so)
{
    ckpt_session_options o = CKPT_SESSION_OPTIONS_INIT;
    o.clock = &f->clock.clock;
    o.fs = &f->cfs.fwd.fs;
    if (recoverable) {
        o.recoverable = 1;
        o.checkpoint_dir = f->ckdir;
        o.saver_options = so;
        o.recovery_backoff_s = 1e-6;
    }
    return o;
}

ckpt_monitored_session *ck_session(ck_fixture *f, ckpt_hook *hooks, size_t n)
{
    ckpt_session_options so = ck_session_options(f, 0, NULL);
    ckpt_monitored_session *ms = NULL;
    assert_ckpt_ok(ckpt_monitored_session_new(&ms, f->graph, hooks, n, &so));
    return ms;
}

int ck_run(ck_fixture *f, ckpt_monitored_session *ms)
{
    return ckpt_monitored_session_run(ms, NULL, ck_step, f, NULL);
}

/* ---- queries ------------------------------------------------------------- */

ckpt_saver_metrics ck_metrics(const ckpt_hook *hook)
{
    ckpt_saver_metrics m;
    assert_ckpt_ok(ckpt_checkpoint_hook_metrics(hook, &m));
    return m;
}

void ck_wait_idle(const ckpt_hook *hook)
{
    for (int i = 0; i < 20000; i++) {
        ckpt_saver_metrics m = ck_metrics(hook);
        struct timespec ts = {0, 1000000};
        if (m.saves_completed + m.saves_failed >= m.saves_started)
            return;
        nanosleep(&ts, NULL);
    }
    fail_msg("the checkpoint writer did not become idle");
}

int ck_has_checkpoint(ck_fixture *f, int64_t step)
{
    char name[256];
    snprintf(name, sizeof(name), "model.ckpt-%lld.index", (long long)step);
    return file_exists(f->ckdir, name);
}

void ck_expect_checkpoint(ck_fixture *f, int64_t step, int64_t values_step)
{
    char prefix[8192];
    ckpt_bundle_reader *r = NULL;
    float *got = malloc(sizeof(float) * CK_NVALS);
    int64_t got_step = -1;
    snprintf(prefix, sizeof(prefix), "%s/model.ckpt-%lld", f->ckdir,
             (long long)step);
    assert_ckpt_ok(ckpt_bundle_reader_open(&r, prefix, NULL));
    assert_ckpt_ok(
        ckpt_bundle_reader_read(r, "w", got, sizeof(float) * CK_NVALS));
    assert_ckpt_ok(
        ckpt_bundle_reader_read(r, "global_step", &got_step, sizeof(got_step)));
    assert_int_equal(got_step, step);
    for (int i = 0; i < CK_NVALS; i++)
        if (got[i] != ck_value(values_step, i))
            fail_msg("%s: w[%d] = %g, want %g (values of step %lld)", prefix, i,
                     (double)got[i], (double)ck_value(values_step, i),
                     (long long)values_step);
    ckpt_bundle_reader_free(r);
    free(got);
}

int64_t ck_latest_step(ck_fixture *f)
{
    ckpt_buf latest = CKPT_BUF_INIT;
    int64_t step = -1;
    if (ckpt_latest_checkpoint(&latest, NULL, f->ckdir) == 0)
        step = ckpt_checkpoint_step(latest.ptr);
    ckpt_error_clear();
    ckpt_buf_dispose(&latest);
    return step;
}
