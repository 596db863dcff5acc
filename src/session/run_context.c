/* session/run_context.c - the run context hooks see around a step, the step
 * context a step sees (merged feeds, published outputs, stop request), the
 * raw session's accessors, and fetch resolution: a fetch names a step output
 * published in the step, else a graph variable read after the step. */
#include "session_internal.h"

#include "saver/saver_internal.h"

#include <string.h>

/* ---- raw session ------------------------------------------------------------
 */

ckpt_graph *ckpt_session_graph(ckpt_session *s)
{
    return s ? s->graph : NULL;
}

int ckpt_session_global_step(ckpt_session *s, int64_t *out)
{
    CKPT__CHECK_ARG(out);
    CKPT__CHECK_ARG(s);
    if (ckpt__graph_need_global_step(s->graph, __func__) < 0)
        return CKPT_ESTATE;
    *out = *s->graph->global_step;
    return 0;
}

ckpt_coordinator *ckpt_session_coordinator(ckpt_session *s)
{
    return s ? s->coord : NULL;
}

ckpt_saver *ckpt_session_saver(ckpt_session *s)
{
    return s ? s->saver : NULL;
}

int ckpt_session_fetch(ckpt_session *s, const char *name, ckpt_value *out)
{
    CKPT__CHECK_ARG(out);
    CKPT__CHECK_ARG(s);
    CKPT__CHECK_ARG(name);
    return ckpt__step_context_resolve(&s->ms->sc, s->graph, name, out);
}

/* ---- run context ------------------------------------------------------------
 */

void ckpt_run_context_request_stop(ckpt_run_context *ctx)
{
    if (ctx)
        ctx->stop_requested = 1;
}

int ckpt_run_context_stop_requested(const ckpt_run_context *ctx)
{
    return ctx ? ctx->stop_requested : 0;
}

ckpt_session *ckpt_run_context_session(ckpt_run_context *ctx)
{
    return ctx ? ctx->session : NULL;
}

const ckpt_run_args *ckpt_run_context_original_args(const ckpt_run_context *ctx)
{
    return ctx ? ctx->original : NULL;
}

/* ---- step context
 * ------------------------------------------------------------ */

void ckpt__step_context_init(ckpt_step_context *sc, ckpt_session *s)
{
    memset(sc, 0, sizeof(*sc));
    sc->session = s;
}

static void free_outputs(ckpt_step_context *sc)
{
    for (size_t i = 0; i < sc->num_outputs; i++) {
        ckpt__free(sc->outputs[i].name);
        ckpt__free(sc->outputs[i].data);
    }
    sc->num_outputs = 0;
}

static void free_scratch(ckpt_step_context *sc)
{
    for (size_t i = 0; i < sc->num_scratch; i++)
        ckpt__free(sc->scratch[i]);
    sc->num_scratch = 0;
}

void ckpt__step_context_reset(ckpt_step_context *sc)
{
    free_outputs(sc);
    free_scratch(sc);
    sc->num_feeds = 0;
    sc->stop_requested = 0;
    memset(&sc->options, 0, sizeof(sc->options));
}

void ckpt__step_context_dispose(ckpt_step_context *sc)
{
    ckpt__step_context_reset(sc);
    ckpt__free(sc->outputs);
    ckpt__free(sc->scratch);
    ckpt__free(sc->feeds);
    memset(sc, 0, sizeof(*sc));
}

int ckpt__step_context_add_feed(ckpt_step_context *sc, const ckpt_feed *feed)
{
    int err = ckpt__reserve_one(&sc->feeds, &sc->cap_feeds, sc->num_feeds,
                                sizeof(*sc->feeds), 8);
    if (err < 0)
        return err;
    sc->feeds[sc->num_feeds++] = *feed;
    return 0;
}

const ckpt_feed *ckpt__step_context_find_feed(const ckpt_step_context *sc,
                                              const char *name)
{
    for (size_t i = 0; i < sc->num_feeds; i++)
        if (strcmp(sc->feeds[i].name, name) == 0)
            return &sc->feeds[i];
    return NULL;
}

int ckpt_step_context_feed(ckpt_step_context *sc, const char *name,
                           const void **data, size_t *size)
{
    const ckpt_feed *f;
    CKPT__CHECK_ARG(sc);
    CKPT__CHECK_ARG(name);
    f = ckpt__step_context_find_feed(sc, name);
    if (!f)
        return ckpt__error(CKPT_ENOTFOUND, "step: no input fed as '%s'", name);
    if (data)
        *data = f->data;
    if (size)
        *size = f->size;
    return 0;
}

const ckpt_run_options *ckpt_step_context_options(const ckpt_step_context *sc)
{
    return sc ? &sc->options : NULL;
}

static ckpt__output *find_output(ckpt_step_context *sc, const char *name)
{
    for (size_t i = 0; i < sc->num_outputs; i++)
        if (strcmp(sc->outputs[i].name, name) == 0)
            return &sc->outputs[i];
    return NULL;
}

int ckpt_step_context_publish(ckpt_step_context *sc, const char *name,
                              int dtype, const ckpt_shape *shape,
                              const void *data)
{
    static const ckpt_shape scalar = {0, {0}};
    ckpt__output *o;
    int64_t bytes = 0;
    void *copy;
    int err;
    CKPT__CHECK_ARG(sc);
    CKPT__CHECK_ARG(name);
    if (!name[0])
        return ckpt__error(CKPT_EINVAL, "step_context_publish: empty name");
    if (!shape)
        shape = &scalar;
    if (ckpt_dtype_size(dtype) == 0)
        return ckpt__error(CKPT_ENOTSUP,
                           "step output '%s': dtype %d is not a fixed-size "
                           "type",
                           name, dtype);
    err = ckpt_tensor_byte_size(&bytes, dtype, shape);
    if (err < 0)
        return ckpt__error_prefix(err, "step output '%s'", name);
    if (bytes > 0 && !data)
        return ckpt__error(CKPT_EINVAL, "step output '%s': no data", name);
    copy = ckpt__malloc(bytes > 0 ? (size_t)bytes : 1);
    if (!copy)
        return ckpt__error_oom();
    if (bytes > 0)
        memcpy(copy, data, (size_t)bytes);
    o = find_output(sc, name);
    if (o) {
        /* Published again in the same step: the newest value wins. */
        ckpt__free(o->data);
    } else {
        char *dup = ckpt__strdup(name);
        err = dup ? ckpt__reserve_one(&sc->outputs, &sc->cap_outputs,
                                      sc->num_outputs, sizeof(*sc->outputs), 8)
                  : ckpt__error_oom();
        if (err < 0) {
            ckpt__free(dup);
            ckpt__free(copy);
            return err;
        }
        o = &sc->outputs[sc->num_outputs++];
        o->name = dup;
    }
    o->dtype = dtype;
    o->shape = *shape;
    o->data = copy;
    o->size = (size_t)bytes;
    return 0;
}

int ckpt_step_context_publish_float(ckpt_step_context *sc, const char *name,
                                    float v)
{
    CKPT__CHECK_ARG(sc);
    return ckpt_step_context_publish(sc, name, CKPT_DT_FLOAT, NULL, &v);
}

void ckpt_step_context_request_stop(ckpt_step_context *sc)
{
    if (sc)
        sc->stop_requested = 1;
}

ckpt_session *ckpt_step_context_session(ckpt_step_context *sc)
{
    return sc ? sc->session : NULL;
}

/* ---- fetch resolution ------------------------------------------------------
 */

static int read_var(ckpt_step_context *sc, const ckpt_var *v, size_t size,
                    const void **out)
{
    void *buf;
    int err;
    if (v->data) {
        *out = v->data;
        return 0;
    }
    err = ckpt__reserve_one(&sc->scratch, &sc->cap_scratch, sc->num_scratch,
                            sizeof(*sc->scratch), 8);
    if (err < 0)
        return err;
    buf = ckpt__malloc(size ? size : 1);
    if (!buf)
        return ckpt__error_oom();
    sc->scratch[sc->num_scratch++] = buf;
    if (size > 0) {
        err = ckpt__var_read(v, v->name, buf, size);
        if (err < 0)
            return err;
    }
    *out = buf;
    return 0;
}

/* The missing fetch's message: the outputs the step did publish (the
 * first few), so that a misspelt name shows beside the right one. */
static int fetch_not_found(const ckpt_step_context *sc, const char *name)
{
    enum { SHOWN = 8 };
    ckpt_buf seen = CKPT_BUF_INIT;
    int err;
    for (size_t i = 0; i < sc->num_outputs && i < SHOWN; i++)
        ckpt__buf_printf(&seen, "%s'%s'", i ? ", " : "", sc->outputs[i].name);
    if (sc->num_outputs > SHOWN)
        ckpt__buf_printf(&seen, " and %zu more", sc->num_outputs - SHOWN);
    err = ckpt__error(CKPT_ENOTFOUND,
                      "fetch '%s': no step output or variable of that name "
                      "(the step published %s; a step publishes an output "
                      "with ckpt_step_context_publish)",
                      name,
                      sc->num_outputs == 0 ? "none"
                      : seen.ptr           ? seen.ptr
                                           : "some");
    ckpt_buf_dispose(&seen);
    return err;
}

int ckpt__step_context_resolve(ckpt_step_context *sc, const ckpt_graph *g,
                               const char *name, ckpt_value *out)
{
    const ckpt__output *o = find_output(sc, name);
    const ckpt_var *v;
    int64_t bytes = 0;
    int err;
    if (o) {
        out->name = o->name;
        out->dtype = o->dtype;
        out->shape = o->shape;
        out->data = o->data;
        out->size = o->size;
        return 0;
    }
    v = ckpt_graph_find(g, name);
    if (!v)
        return fetch_not_found(sc, name);
    err = ckpt_tensor_byte_size(&bytes, v->dtype, &v->shape);
    if (err < 0)
        return err;
    out->name = v->name;
    out->dtype = v->dtype;
    out->shape = v->shape;
    out->size = (size_t)bytes;
    return read_var(sc, v, (size_t)bytes, &out->data);
}
