/* hooks/basic_hooks_internal.h - helpers of the standard hooks: formatting
 * a fetched tensor for a log line, the NaN test, and a timer whose errors
 * name the hook's own options. Not installed. */
#ifndef CKPT_HOOKS_BASIC_HOOKS_INTERNAL_H
#define CKPT_HOOKS_BASIC_HOOKS_INTERNAL_H

#include "ckpt/hooks.h"
#include "ckpt/session.h"

/* Append `v` to `out`: a scalar as "1.5", a tensor as "[1, 2, 3]" with at
 * most the first few elements followed by "...". */
int ckpt__format_value(ckpt_buf *out, const ckpt_value *v);

/* 1 when a floating-point value holds a NaN, 0 when not, -1 when the dtype
 * is not floating point. */
int ckpt__value_has_nan(const ckpt_value *v);

/* ckpt_timer_init (`t` not NULL) whose messages name `who` and the
 * caller's own fields for the two intervals ("LoggingTensorHook: both
 * every_n_secs (2) and every_n_iter (5) are set"), not the timer's. */
int ckpt__timer_init_named(ckpt_timer *t, double every_secs,
                           int64_t every_steps, const ckpt_clock *clock,
                           const char *who, const char *secs_name,
                           const char *steps_name);

#endif
