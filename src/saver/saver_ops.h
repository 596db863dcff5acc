/* saver/saver_ops.h - the ckpt_saver handle over a saver implemented
 * elsewhere (ckpt_saver_wrap): what the public saver functions call on
 * such a handle, and what the checkpoint hook and the session ask of any
 * saver (is it collective, agree on a decision). Not installed. */
#ifndef CKPT_SAVER_SAVER_OPS_H
#define CKPT_SAVER_SAVER_OPS_H

#include "ckpt/saver.h"

/* The implementation behind a wrapped saver, or NULL (the library's own
 * saver, or NULL). */
const ckpt_saver_ops *ckpt__saver_ops(const ckpt_saver *s);
void *ckpt__saver_ops_self(const ckpt_saver *s);

/* 1 when `s` wraps a collective saver (ckpt_saver_ops.collective). */
int ckpt__saver_collective(const ckpt_saver *s);

/* Make `*flag` every process's (ckpt_saver_ops.agree); nothing for a
 * saver without agree. 0 or an error. */
int ckpt__saver_agree(ckpt_saver *s, int *flag);

/* `err`, this process's outcome of a step every process of the collective
 * saver `s` took, agreed among them (ckpt_saver_ops.agree_outcome): on a
 * process whose own outcome was an error, that error (its message kept);
 * on the others 0 or the failed process's error. `err` itself for a saver
 * that is not collective or offers no agree_outcome. */
int ckpt__saver_agree_outcome(ckpt_saver *s, int err);

/* ckpt_saver_saves_var on a wrapped saver: 1, 0 or CKPT_ENOTSUP (its ops
 * are version 1 or lack saves_var). */
int ckpt__saver_ops_saves_var(const ckpt_saver *s, const char *name,
                              const void *data);

/* How many variables the library's own saver `s` saves; -1 for a wrapped
 * saver (it cannot say) or NULL. */
long ckpt__saver_num_vars(const ckpt_saver *s);

/* Complete the library's own saver's open overlapped snapshot, if any,
 * without switching it to overlapped snapshots (as ckpt_saver_mutation_
 * fence would); nothing for a wrapped saver or NULL. */
void ckpt__saver_complete_open_snapshot(ckpt_saver *s);
/* The step of the library's own saver's open overlapped snapshot into
 * `*step`: 1 when one is open, else 0 (also for a wrapped saver or NULL). */
int ckpt__saver_open_snapshot_step(const ckpt_saver *s, int64_t *step);

/* The bytes of a ckpt_saver_options struct of `version` (1: up to
 * fence_from_start, which version 2 added; the current size otherwise). */
size_t ckpt__saver_options_size(unsigned int version);

/* Copy a caller's saver options into `dst`: the fields its version has,
 * the defaults for those added since (all defaults when `src` is NULL). */
void ckpt__saver_options_copy(ckpt_saver_options *dst,
                              const ckpt_saver_options *src);

/* Free a wrapped saver's handle (after its release). */
void ckpt__saver_ops_free(ckpt_saver *s);

/* Mark the wrapped handle `s` as freed by its owner through `owner_free`
 * (a call's name, e.g. "ckpt_mpi_saver_free"): ckpt_saver_free then
 * refuses it, naming that call, and the owner frees it with
 * ckpt__saver_ops_free. */
void ckpt__saver_ops_set_owner(ckpt_saver *s, const char *owner_free);

#endif
