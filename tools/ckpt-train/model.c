/* tools/ckpt-train/model.c - see model.h. Loops are ordered so the inner
 * one runs over contiguous memory and vectorises. */
#include "model.h"
#include "memory.h"
#include "rng.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* n floats, zeroed, for `scope`/`name`; NULL (and *f says which) when
 * there is no memory for them. */
static float *alloc_floats(size_t n, const char *scope, const char *name,
                           train_alloc_failure *f)
{
    char what[96];
    snprintf(what, sizeof(what), "%s/%s", scope, name);
    return train_alloc(n * sizeof(float), what, f);
}

/* The arrays of layer `l` (its in and out set), zeroed, in order; -1 at
 * the first that cannot be allocated, named in *f. */
static int alloc_layer(layer *L, int l, int batch, train_alloc_failure *f)
{
    const size_t nw = (size_t)L->in * (size_t)L->out, nb = (size_t)L->out,
                 na = (size_t)batch * (size_t)L->out;
    const struct {
        float **p;
        size_t n;
        const char *name;
    } arrays[] = {{&L->w, nw, "kernel"},
                  {&L->mw, nw, "kernel/Adam"},
                  {&L->vw, nw, "kernel/Adam_1"},
                  {&L->gw, nw, "kernel's gradient"},
                  {&L->b, nb, "bias"},
                  {&L->mb, nb, "bias/Adam"},
                  {&L->vb, nb, "bias/Adam_1"},
                  {&L->gb, nb, "bias's gradient"},
                  {&L->act, na, "activations"},
                  {&L->delta, na, "activations' gradient"}};
    char scope[32];
    mlp_layer_scope(scope, sizeof(scope), l);
    for (size_t i = 0; i < sizeof(arrays) / sizeof(arrays[0]); i++) {
        *arrays[i].p = alloc_floats(arrays[i].n, scope, arrays[i].name, f);
        if (!*arrays[i].p)
            return -1;
    }
    return 0;
}

int mlp_init(mlp *m, int in, int hidden, int nhidden, int out, int batch,
             float lr, uint64_t seed, train_alloc_failure *f)
{
    rng r;
    memset(m, 0, sizeof(*m));
    rng_seed(&r, seed ^ 0x6d6f64656cull);
    m->nlayers = nhidden + 1;
    m->batch = batch;
    m->lr = lr;
    m->beta1 = 0.9f;
    m->beta2 = 0.999f;
    m->eps = 1e-7f;
    m->beta1_power = m->beta1;
    m->beta2_power = m->beta2;
    m->layers = train_alloc((size_t)m->nlayers * sizeof(layer),
                            "the table of layers", f);
    if (!m->layers)
        return -1;
    for (int l = 0; l < m->nlayers; l++) {
        layer *L = &m->layers[l];
        size_t nw;
        float limit;
        L->in = l == 0 ? in : hidden;
        L->out = l == m->nlayers - 1 ? out : hidden;
        nw = (size_t)L->in * (size_t)L->out;
        if (alloc_layer(L, l, batch, f) != 0)
            return -1;
        limit = sqrtf(6.0f / (float)(L->in + L->out));
        for (size_t i = 0; i < nw; i++)
            L->w[i] = (2.0f * rng_uniform(&r) - 1.0f) * limit;
    }
    return 0;
}

void mlp_free(mlp *m)
{
    if (!m->layers)
        return;
    for (int l = 0; l < m->nlayers; l++) {
        layer *L = &m->layers[l];
        free(L->w);
        free(L->mw);
        free(L->vw);
        free(L->gw);
        free(L->b);
        free(L->mb);
        free(L->vb);
        free(L->gb);
        free(L->act);
        free(L->delta);
    }
    free(m->layers);
    m->layers = NULL;
}

size_t mlp_state_bytes(const mlp *m)
{
    size_t n = 0;
    for (int l = 0; l < m->nlayers; l++)
        n += 3 * ((size_t)m->layers[l].in * (size_t)m->layers[l].out +
                  (size_t)m->layers[l].out);
    return n * sizeof(float);
}

/* out[B x N] = in[B x K] * w[K x N] + b, then ReLU unless `last`. */
static void forward_layer(const float *in, layer *L, int batch, int last)
{
    for (int i = 0; i < batch; i++) {
        float *o = L->act + (size_t)i * (size_t)L->out;
        const float *x = in + (size_t)i * (size_t)L->in;
        memcpy(o, L->b, sizeof(float) * (size_t)L->out);
        for (int k = 0; k < L->in; k++) {
            const float a = x[k];
            const float *wr = L->w + (size_t)k * (size_t)L->out;
            if (a == 0.0f)
                continue;
            for (int j = 0; j < L->out; j++)
                o[j] += a * wr[j];
        }
        if (!last)
            for (int j = 0; j < L->out; j++)
                o[j] = o[j] > 0.0f ? o[j] : 0.0f;
    }
}

/* Softmax cross-entropy: loss, and delta = (softmax - onehot) / B. */
static float softmax_loss(layer *L, const int32_t *labels, int batch)
{
    double total = 0.0;
    for (int i = 0; i < batch; i++) {
        float *z = L->act + (size_t)i * (size_t)L->out;
        float *d = L->delta + (size_t)i * (size_t)L->out;
        float mx = z[0], sum = 0.0f;
        for (int j = 1; j < L->out; j++)
            mx = z[j] > mx ? z[j] : mx;
        for (int j = 0; j < L->out; j++) {
            d[j] = expf(z[j] - mx);
            sum += d[j];
        }
        for (int j = 0; j < L->out; j++)
            d[j] = d[j] / sum / (float)batch;
        total -= log((double)(d[labels[i]] * (float)batch) + 1e-12);
        d[labels[i]] -= 1.0f / (float)batch;
    }
    return (float)(total / batch);
}

/* Gradients of layer L from its delta; writes the delta of its input
 * (through the previous layer's ReLU) into prev_delta when not NULL. */
static void backward_layer(layer *L, const float *in, const float *in_act,
                           float *prev_delta, int batch)
{
    memset(L->gw, 0, sizeof(float) * (size_t)L->in * (size_t)L->out);
    memset(L->gb, 0, sizeof(float) * (size_t)L->out);
    for (int i = 0; i < batch; i++) {
        const float *d = L->delta + (size_t)i * (size_t)L->out;
        const float *x = in + (size_t)i * (size_t)L->in;
        for (int j = 0; j < L->out; j++)
            L->gb[j] += d[j];
        for (int k = 0; k < L->in; k++) {
            const float a = x[k];
            float *g = L->gw + (size_t)k * (size_t)L->out;
            if (a == 0.0f)
                continue;
            for (int j = 0; j < L->out; j++)
                g[j] += a * d[j];
        }
        if (prev_delta) {
            float *pd = prev_delta + (size_t)i * (size_t)L->in;
            const float *pa = in_act + (size_t)i * (size_t)L->in;
            for (int k = 0; k < L->in; k++) {
                const float *wr = L->w + (size_t)k * (size_t)L->out;
                float s = 0.0f;
                if (pa[k] <= 0.0f) {
                    pd[k] = 0.0f;
                    continue;
                }
                for (int j = 0; j < L->out; j++)
                    s += d[j] * wr[j];
                pd[k] = s;
            }
        }
    }
}

static void adam(float *w, float *mo, float *ve, const float *g, size_t n,
                 float lr_t, float b1, float b2, float eps)
{
    for (size_t i = 0; i < n; i++) {
        mo[i] = b1 * mo[i] + (1.0f - b1) * g[i];
        ve[i] = b2 * ve[i] + (1.0f - b2) * g[i] * g[i];
        w[i] -= lr_t * mo[i] / (sqrtf(ve[i]) + eps);
    }
}

float mlp_compute_gradients(mlp *m, const float *x, const int32_t *labels)
{
    float loss;
    const float *in = x;
    for (int l = 0; l < m->nlayers; l++) {
        forward_layer(in, &m->layers[l], m->batch, l == m->nlayers - 1);
        in = m->layers[l].act;
    }
    loss = softmax_loss(&m->layers[m->nlayers - 1], labels, m->batch);
    for (int l = m->nlayers - 1; l >= 0; l--) {
        const float *lin = l == 0 ? x : m->layers[l - 1].act;
        backward_layer(&m->layers[l], lin, lin,
                       l == 0 ? NULL : m->layers[l - 1].delta, m->batch);
    }
    return loss;
}

void mlp_apply_gradients(mlp *m)
{
    float lr_t = m->lr * sqrtf(1.0f - m->beta2_power) / (1.0f - m->beta1_power);
    for (int l = 0; l < m->nlayers; l++) {
        layer *L = &m->layers[l];
        adam(L->w, L->mw, L->vw, L->gw, (size_t)L->in * (size_t)L->out, lr_t,
             m->beta1, m->beta2, m->eps);
        adam(L->b, L->mb, L->vb, L->gb, (size_t)L->out, lr_t, m->beta1,
             m->beta2, m->eps);
    }
    m->beta1_power *= m->beta1;
    m->beta2_power *= m->beta2;
    if (m->iterations < INT64_MAX) /* a restored count may be anything */
        m->iterations++;
}

float mlp_train_step(mlp *m, const float *x, const int32_t *labels)
{
    float loss = mlp_compute_gradients(m, x, labels);
    mlp_apply_gradients(m);
    return loss;
}

void mlp_layer_scope(char *out, size_t n, int l)
{
    if (l == 0)
        snprintf(out, n, "dense");
    else
        snprintf(out, n, "dense_%d", l);
}
