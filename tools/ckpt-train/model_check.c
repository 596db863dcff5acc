/* tools/ckpt-train/model_check.c - whether a restored model state is one
 * training can have written (see model.h): a checkpoint whose checksums
 * hold may still carry a NaN weight, which ReLU hides from the loss (the
 * NaN check never fires) while every later checkpoint stores it, or a
 * beta power of 1, which divides Adam's step by zero. */
#include "model.h"

#include <math.h>
#include <stdio.h>

/* Whether x[0..n) are finite (and >= 0 with `nonneg`); else the first
 * bad one described in why, naming the tensor `scope`/`name`. */
static int check_floats(const float *x, size_t n, int nonneg, const char *scope,
                        const char *name, char *why, size_t why_n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i]) || (nonneg && x[i] < 0)) {
            snprintf(why, why_n, "%s/%s element %zu is %g%s", scope, name, i,
                     (double)x[i],
                     nonneg && isfinite(x[i]) ? " (an Adam second moment is "
                                                "never negative)"
                                              : "");
            return -1;
        }
    return 0;
}

/* A beta power: in [0, 1) (it starts at beta < 1 and only shrinks). */
static int check_power(float p, const char *name, char *why, size_t why_n)
{
    if (p >= 0.0f && p < 1.0f)
        return 0;
    snprintf(why, why_n, "%s is %g, outside [0, 1)", name, (double)p);
    return -1;
}

int mlp_check_restored(const mlp *m, char *why, size_t why_n)
{
    int err = check_power(m->beta1_power, "beta1_power", why, why_n);
    if (err == 0)
        err = check_power(m->beta2_power, "beta2_power", why, why_n);
    if (err == 0 && m->iterations < 0) {
        snprintf(why, why_n, "optimizer/iterations is %lld, negative",
                 (long long)m->iterations);
        err = -1;
    }
    for (int l = 0; err == 0 && l < m->nlayers; l++) {
        const layer *L = &m->layers[l];
        size_t nw = (size_t)L->in * (size_t)L->out, nb = (size_t)L->out;
        char scope[32];
        mlp_layer_scope(scope, sizeof(scope), l);
        err = check_floats(L->w, nw, 0, scope, "kernel", why, why_n);
        if (err == 0)
            err = check_floats(L->mw, nw, 0, scope, "kernel/Adam", why, why_n);
        if (err == 0)
            err =
                check_floats(L->vw, nw, 1, scope, "kernel/Adam_1", why, why_n);
        if (err == 0)
            err = check_floats(L->b, nb, 0, scope, "bias", why, why_n);
        if (err == 0)
            err = check_floats(L->mb, nb, 0, scope, "bias/Adam", why, why_n);
        if (err == 0)
            err = check_floats(L->vb, nb, 1, scope, "bias/Adam_1", why, why_n);
    }
    return err;
}
