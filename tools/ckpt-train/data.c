/* tools/ckpt-train/data.c - see data.h. */
#include "data.h"
#include "memory.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void shuffle(dataset *d)
{
    for (int i = 0; i < d->n; i++)
        d->order[i] = i;
    for (int i = d->n - 1; i > 0; i--) {
        int j = (int)rng_below(&d->shuffle, (uint32_t)i + 1);
        int32_t t = d->order[i];
        d->order[i] = d->order[j];
        d->order[j] = t;
    }
}

int dataset_init(dataset *d, int n, int dim, int classes, uint64_t seed,
                 train_alloc_failure *f)
{
    rng gen;
    float *centers = NULL;
    memset(d, 0, sizeof(*d));
    d->n = n;
    d->dim = dim;
    d->classes = classes;
    d->x = train_alloc(sizeof(float) * (size_t)n * (size_t)dim,
                       "the data set's examples", f);
    if (d->x)
        d->y = train_alloc(sizeof(int32_t) * (size_t)n, "the data set's labels",
                           f);
    if (d->y)
        d->order =
            train_alloc(sizeof(int32_t) * (size_t)n, "the data set's order", f);
    if (d->order)
        centers = train_alloc(sizeof(float) * (size_t)classes * (size_t)dim,
                              "the data set's class centres", f);
    if (!centers)
        return -1;
    rng_seed(&gen, seed);
    for (int c = 0; c < classes * dim; c++)
        centers[c] = 0.4f * rng_normal(&gen);
    for (int i = 0; i < n; i++) {
        int c = (int)rng_below(&gen, (uint32_t)classes);
        d->y[i] = c;
        for (int k = 0; k < dim; k++)
            d->x[(size_t)i * (size_t)dim + (size_t)k] =
                centers[c * dim + k] + rng_normal(&gen);
    }
    free(centers);
    rng_seed(&d->shuffle, seed ^ 0x7368756666ull);
    shuffle(d);
    return 0;
}

void dataset_free(dataset *d)
{
    free(d->x);
    free(d->y);
    free(d->order);
    memset(d, 0, sizeof(*d));
}

int dataset_position_init(dataset *pos, const dataset *d,
                          train_alloc_failure *f)
{
    *pos = *d;
    pos->order = train_alloc(sizeof(int32_t) * (size_t)d->n,
                             "the reading position's order", f);
    if (!pos->order)
        return -1;
    dataset_position_copy(pos, d);
    return 0;
}

void dataset_position_free(dataset *pos)
{
    free(pos->order);
    memset(pos, 0, sizeof(*pos));
}

void dataset_position_copy(dataset *to, const dataset *from)
{
    memcpy(to->order, from->order, sizeof(int32_t) * (size_t)from->n);
    to->cursor = from->cursor;
    to->epoch = from->epoch;
    to->shuffle = from->shuffle;
}

int dataset_position_check(const dataset *d, const char *suffix, char *why,
                           size_t why_n)
{
    train_alloc_failure f;
    unsigned char *seen;
    int ok = 1;
    if (d->cursor < 0 || d->cursor > d->n) {
        snprintf(why, why_n, "data/cursor%s %" PRId64 " is outside 0..%d",
                 suffix, d->cursor, d->n);
        return -1;
    }
    if (d->epoch < 0 || d->epoch == INT64_MAX) {
        snprintf(why, why_n, "data/epoch%s %" PRId64 " is outside 0..%" PRId64,
                 suffix, d->epoch, INT64_MAX - 1);
        return -1;
    }
    if ((d->shuffle.s[0] | d->shuffle.s[1] | d->shuffle.s[2] |
         d->shuffle.s[3]) == 0) {
        /* xoshiro256** never leaves that state: every draw would be 0 */
        snprintf(why, why_n, "data/rng_state%s is all zero", suffix);
        return -1;
    }
    memset(&f, 0, sizeof(f));
    seen = train_alloc((size_t)d->n, "the restored data order's check", &f);
    if (!seen) { /* not the checkpoint's fault */
        snprintf(why, why_n, "out of memory allocating %s", f.what);
        return DATASET_CHECK_NOMEM;
    }
    for (int i = 0; ok && i < d->n; i++) {
        int32_t v = d->order[i];
        ok = v >= 0 && v < d->n && !seen[v];
        if (ok)
            seen[v] = 1;
        else
            snprintf(why, why_n,
                     "data/order%s is not a permutation of 0..%d (element "
                     "%d is %" PRId32 ")",
                     suffix, d->n - 1, i, v);
    }
    free(seen);
    return ok ? 0 : -1;
}

void dataset_next_batch(dataset *d, int batch, float *x, int32_t *y)
{
    for (int b = 0; b < batch; b++) {
        int32_t i;
        if (d->cursor >= d->n) {
            d->cursor = 0;
            d->epoch++;
            shuffle(d);
        }
        i = d->order[d->cursor++];
        memcpy(x + (size_t)b * (size_t)d->dim,
               d->x + (size_t)i * (size_t)d->dim,
               sizeof(float) * (size_t)d->dim);
        y[b] = d->y[i];
    }
}
