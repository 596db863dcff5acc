/* tools/ckpt-train/model.h - a multi-layer perceptron (ReLU hidden layers,
 * softmax output) trained with Adam: forward, backward and update on plain
 * float arrays, deterministic for a given state (fixed operation order), so
 * a resumed run matches an uninterrupted one bit for bit; and the name
 * scope TensorFlow gives each layer, which the trainers' variables use. */
#ifndef CKPT_TRAIN_MODEL_H
#define CKPT_TRAIN_MODEL_H

#include <stddef.h>
#include <stdint.h>

struct train_alloc_failure; /* memory.h */

typedef struct layer {
    int in, out;
    float *w, *b;   /* weights [in x out], bias [out] */
    float *mw, *vw; /* Adam first and second moments of w */
    float *mb, *vb; /* ... and of b */
    float *gw, *gb; /* gradients (workspace) */
    float *act;     /* this layer's output [batch x out] */
    float *delta;   /* gradient w.r.t. act [batch x out] */
} layer;

typedef struct mlp {
    int nlayers; /* dense layers (hidden layers + 1) */
    int batch;
    layer *layers;
    float beta1_power, beta2_power; /* TF1 Adam's accumulators */
    int64_t iterations;             /* optimizer steps taken */
    float lr, beta1, beta2, eps;
} mlp;

/* Build an MLP in -> hidden x nhidden -> out, weights initialised from
 * `seed` (Glorot uniform), Adam state zero. Returns 0 or -1 (memory: *f
 * names the array that could not be allocated and its bytes; mlp_free
 * frees what was). */
int mlp_init(mlp *m, int in, int hidden, int nhidden, int out, int batch,
             float lr, uint64_t seed, struct train_alloc_failure *f);
void mlp_free(mlp *m);

/* Bytes of checkpointed state (weights, biases, both Adam moments). */
size_t mlp_state_bytes(const mlp *m);

/* One training step on a batch (x: [batch x in], labels: [batch]); returns
 * the mean cross-entropy loss before the update. */
float mlp_train_step(mlp *m, const float *x, const int32_t *labels);

/* The two halves of mlp_train_step, for data-parallel training: the
 * gradients of a batch into each layer's gw/gb (returns the loss), then
 * the Adam update from them (after they were averaged across processes). */
float mlp_compute_gradients(mlp *m, const float *x, const int32_t *labels);
void mlp_apply_gradients(mlp *m);

/* Whether a restored state is one training can have written: weights,
 * biases and Adam moments finite, second moments >= 0, beta powers in
 * [0, 1), iterations >= 0. 0, or -1 with the first tensor at fault and its
 * value in why[0..why_n) (model_check.c). */
int mlp_check_restored(const mlp *m, char *why, size_t why_n);

/* Layer l's name scope as TensorFlow (Keras) names it, into out[0..n):
 * "dense", then "dense_1", "dense_2", ...; every variable of the layer is
 * named "<scope>/<kernel, bias, ...>" by both trainers. */
void mlp_layer_scope(char *out, size_t n, int l);

#endif
