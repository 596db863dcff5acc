/* tools/ckpt-train/data.h - a synthetic classification data set made from
 * a seed (Gaussian clusters, no download), and the reading position through
 * it: the epoch's shuffled order, the cursor, the epoch number and the
 * shuffling RNG's state — all of which go into the checkpoint so a resumed
 * run reads exactly the batches an uninterrupted one would. */
#ifndef CKPT_TRAIN_DATA_H
#define CKPT_TRAIN_DATA_H

#include "rng.h"

#include <stddef.h>
#include <stdint.h>

struct train_alloc_failure; /* memory.h */

typedef struct dataset {
    int n, dim, classes;
    float *x;   /* [n x dim] */
    int32_t *y; /* [n] */
    /* Reading position (checkpointed). */
    int32_t *order; /* this epoch's permutation of 0..n-1 */
    int64_t cursor; /* next index into order */
    int64_t epoch;
    rng shuffle; /* state as uint64[4] */
} dataset;

/* Generate the data set and the first epoch's order. 0 or -1 (memory: *f
 * names what could not be allocated; dataset_free frees what was). */
int dataset_init(dataset *d, int n, int dim, int classes, uint64_t seed,
                 struct train_alloc_failure *f);
void dataset_free(dataset *d);

/* A second reading position over the same data (x and y are borrowed
 * from `d`; it owns its order): a step reads its batch through it and
 * moves the checkpointed position only once it may write the state.
 * 0 or -1 (memory, named in *f). */
int dataset_position_init(dataset *pos, const dataset *d,
                          struct train_alloc_failure *f);
void dataset_position_free(dataset *pos);
/* Copy the reading position (order, cursor, epoch, RNG) from -> to. */
void dataset_position_copy(dataset *to, const dataset *from);

/* Whether a restored reading position is one this program can have
 * written: `order` a permutation of 0..n-1, 0 <= cursor <= n, epoch >= 0,
 * an RNG state other than all zero.
 * 0, or -1 with what is wrong in why[0..why_n) (a checkpoint whose CRCs
 * hold can still carry values that would index outside the data set),
 * naming the tensor ("data/order" and so on, `suffix` appended), or
 * DATASET_CHECK_NOMEM when the check's own memory (n bytes) could not be
 * allocated, why saying "out of memory allocating <what> (<n> bytes)". */
#define DATASET_CHECK_NOMEM (-2)
int dataset_position_check(const dataset *d, const char *suffix, char *why,
                           size_t why_n);

/* Copy the next batch into x [batch x dim] and y [batch], reshuffling at
 * the end of each epoch. */
void dataset_next_batch(dataset *d, int batch, float *x, int32_t *y);

#endif
