/* ckpt/coordinator.h - stop coordination between the training loop and
 * background threads (TensorFlow's Coordinator). Fully thread-safe. */
#ifndef CKPT_COORDINATOR_H
#define CKPT_COORDINATOR_H

#include "clock.h"
#include "common.h"
#include "errors.h" /* the codes and ckpt_error_last() of every call */

CKPT_BEGIN_DECL

typedef struct ckpt_coordinator ckpt_coordinator;

/** Create a coordinator; `clock` (may be NULL) times join's grace period.
 *  @return 0, CKPT_EINVAL (NULL `out`), CKPT_EVERSION (the clock's
 *  version), CKPT_ENOMEM */
CKPT_EXTERN(int)
ckpt_coordinator_new(ckpt_coordinator **out, const ckpt_clock *clock);

/** Free; NULL is ignored. Registered threads must have ended. */
CKPT_EXTERN(void) ckpt_coordinator_free(ckpt_coordinator *c);

/** Ask everyone to stop. `err` 0 (or a clean-end code: CKPT_EOUT_OF_RANGE)
 *  records nothing. A non-clean error is recorded, with `message`, only if
 *  no error is recorded yet and the stop flag was not already set (B36).
 *  After a join, passing an error returns it immediately instead.
 *  @return 0, `err` when the coordinator was already joined, or
 *          CKPT_EINVAL (NULL `c`) */
CKPT_EXTERN(int)
ckpt_coordinator_request_stop(ckpt_coordinator *c, int err,
                              const char *message);

/** Whether a stop was requested. */
CKPT_EXTERN(int) ckpt_coordinator_should_stop(ckpt_coordinator *c);

/** Wait up to `timeout_s` (< 0: forever; NaN: not at all) for a stop request.
 *  @return 1 if stopped, 0 on timeout */
CKPT_EXTERN(int)
ckpt_coordinator_wait_for_stop(ckpt_coordinator *c, double timeout_s);

/** Clear the stop flag, the recorded error and the joined mark (B38). */
CKPT_EXTERN(void) ckpt_coordinator_clear_stop(ckpt_coordinator *c);

/** The recorded error: its code (0 when none); the message, when there is
 *  one, becomes the calling thread's last error. */
CKPT_EXTERN(int) ckpt_coordinator_recorded_error(ckpt_coordinator *c);

/** Register a thread the coordinator should wait for; `*id_out` receives
 *  its id for ckpt_coordinator_thread_done (ids start at 1; 0 when this
 *  fails). `name` (may be NULL: "thread") appears in messages.
 *  @return 0, CKPT_EINVAL (NULL `c` or `id_out`) or CKPT_ENOMEM */
CKPT_EXTERN(int)
ckpt_coordinator_register_thread(ckpt_coordinator *c, const char *name,
                                 int *id_out);

/** Mark a registered thread as finished (call from that thread last). */
CKPT_EXTERN(void) ckpt_coordinator_thread_done(ckpt_coordinator *c, int id);

/** Wait until every registered thread is done or a stop was requested,
 *  then up to `grace_s` more for the rest; forget registered threads and
 *  mark the coordinator joined (B37).
 *  @return the recorded error (preferred); else CKPT_ETIMEDOUT naming the
 *          live threads unless `ignore_live_threads`; else 0; CKPT_EINVAL
 *          for a NULL `c` */
CKPT_EXTERN(int)
ckpt_coordinator_join(ckpt_coordinator *c, double grace_s,
                      int ignore_live_threads);

CKPT_END_DECL

#endif
