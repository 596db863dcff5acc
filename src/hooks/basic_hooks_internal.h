/* hooks/basic_hooks_internal.h - value helpers of the standard hooks:
 * formatting a fetched tensor for a log line, and the NaN test. Not
 * installed. */
#ifndef CKPT_HOOKS_BASIC_HOOKS_INTERNAL_H
#define CKPT_HOOKS_BASIC_HOOKS_INTERNAL_H

#include "ckpt/session.h"

/* Append `v` to `out`: a scalar as "1.5", a tensor as "[1, 2, 3]" with at
 * most the first few elements followed by "...". */
int ckpt__format_value(ckpt_buf *out, const ckpt_value *v);

/* 1 when a floating-point value holds a NaN, 0 when not, -1 when the dtype
 * is not floating point. */
int ckpt__value_has_nan(const ckpt_value *v);

#endif
