/* tools/ckpt-train/train_var.h - one of the trainer's arrays (a scalar, a
 * vector of d0 or a d0 x d1 matrix) described as a ckpt_var, for the
 * single-process trainer (main.c) and the distributed one (distributed.c)
 * alike. */
#ifndef CKPT_TRAIN_TRAIN_VAR_H
#define CKPT_TRAIN_TRAIN_VAR_H

#include "ckpt.h"

#include <stdint.h>
#include <string.h>

static inline ckpt_var train_var(const char *name, int dtype, int rank,
                                 int64_t d0, int64_t d1, void *data)
{
    ckpt_var v;
    memset(&v, 0, sizeof(v));
    v.name = name;
    v.dtype = dtype;
    v.shape.rank = rank;
    v.shape.dims[0] = d0;
    v.shape.dims[1] = d1;
    v.data = data;
    return v;
}

#endif
