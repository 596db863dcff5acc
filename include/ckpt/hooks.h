/* ckpt/hooks.h - the hooks the library ships, all built on the public
 * ckpt_hook struct: the step/seconds timer, CheckpointSaverHook (sync) and
 * AsyncCheckpointSaverHook (async, snapshot at the trigger step) with
 * checkpoint listeners, StopAtStepHook, StepCounterHook, LoggingTensorHook,
 * NanTensorHook, the MonitoredTrainingSession-style builder, and the opt-in
 * preemption handler. Behaviour: docs/behaviour.md (B1-B13, B40-B69); a
 * walk-through with the TensorFlow-to-ckpt mapping: docs/guide.md. */
#ifndef CKPT_HOOKS_H
#define CKPT_HOOKS_H

#include "session.h"

CKPT_BEGIN_DECL

/* ---- SecondOrStepTimer --------------------------------------------------- */

/** Triggers every N steps or every S seconds (exactly one of them). Plain
 *  struct; initialise with ckpt_timer_init. */
typedef struct ckpt_timer {
    double every_secs;   /**< > 0 in seconds mode */
    int64_t every_steps; /**< > 0 in steps mode */
    int never;           /**< the never-trigger timer */
    int has_last;        /**< a trigger was recorded */
    int64_t last_step;
    double last_time;
    const ckpt_clock *clock;
} ckpt_timer;

/** Initialise: 0 means "unset". Exactly one interval must be set; a
 *  negative (or NaN) interval is CKPT_EINVAL (B1-B3; TF accepts 0 and
 *  negative values). `clock` (borrowed, may be NULL: the system clock)
 *  times seconds mode; one of an unknown version is CKPT_EVERSION. */
CKPT_EXTERN(int)
ckpt_timer_init(ckpt_timer *t, double every_secs, int64_t every_steps,
                const ckpt_clock *clock);
/** A timer that never triggers (B13). */
CKPT_EXTERN(void) ckpt_timer_init_never(ckpt_timer *t);
/** Whether `step` triggers (B4-B8, B12): in seconds mode once the clock
 *  reaches the last update's time plus the interval, or reads earlier
 *  than the last update (a clock gone back triggers once; the update
 *  re-anchors the timer, B8). 0 for a NULL timer. */
CKPT_EXTERN(int) ckpt_timer_should_trigger(const ckpt_timer *t, int64_t step);
/** Record a trigger at `step`; `*elapsed_secs`/`*elapsed_steps` (may be
 *  NULL) receive the time and steps since the previous one, and the return
 *  value is 1 when there was a previous one, else 0 (B9, B10); 0 for a
 *  NULL timer, which records nothing. */
CKPT_EXTERN(int)
ckpt_timer_update(ckpt_timer *t, int64_t step, double *elapsed_secs,
                  int64_t *elapsed_steps);
/** The last triggered step into `*out` (may be NULL): returns 1, or 0
 *  when there is none (B11) or the timer is NULL. */
CKPT_EXTERN(int) ckpt_timer_last_step(const ckpt_timer *t, int64_t *out);
CKPT_EXTERN(void) ckpt_timer_reset(ckpt_timer *t);

/* ---- checkpoint listeners -------------------------------------------------
 */

#define CKPT_LISTENER_VERSION 1

/** What after_save returns to ask training to stop (TensorFlow's
 *  `return True` from after_save). */
#define CKPT_LISTENER_STOP 1

/** Called around every checkpoint (TF's CheckpointSaverListener). The same
 *  contract in sync and async modes (F4): before_save on the training
 *  thread at snapshot time; after_save once the checkpoint is durable, on
 *  the training thread (during the next hook callback in async mode, or
 *  end's wait), with the snapshot's step. after_save asks training to stop
 *  after the current (or next) run by returning a positive value
 *  (CKPT_LISTENER_STOP: TensorFlow's `return True`) or by setting `*stop`
 *  (B53). A snapshot replaced before its write (policy COALESCE) or a
 *  failed write gets no after_save. A negative return is an error; it is
 *  returned by the hook callback that made the call; after_save's, in async
 *  mode, by the hook callback that delivered the checkpoint. begin,
 *  before_save and end return 0 or a negative error (a positive value is
 *  CKPT_EUSER, with a message saying that only after_save stops). The
 *  listeners hear of the hook's own saves only: a save a listener makes
 *  itself (e.g. a copy through ckpt_session_saver from after_save) is not
 *  reported to them. */
typedef struct ckpt_saver_listener {
    int version; /**< CKPT_LISTENER_VERSION */
    void *payload;
    int (*begin)(void *payload);
    int (*before_save)(ckpt_session *s, int64_t step, void *payload);
    int (*after_save)(ckpt_session *s, int64_t step, const char *prefix,
                      int *stop, void *payload);
    int (*end)(ckpt_session *s, int64_t step, void *payload);
} ckpt_saver_listener;

/* ---- CheckpointSaverHook / AsyncCheckpointSaverHook -------------------------
 */

typedef enum ckpt_save_mode {
    CKPT_SAVE_SYNC = 0, /**< CheckpointSaverHook */
    CKPT_SAVE_ASYNC = 1 /**< AsyncCheckpointSaverHook */
} ckpt_save_mode;

/** Version 2 added checkpoint_basename; a version-1 struct is accepted. */
#define CKPT_CHECKPOINT_HOOK_OPTIONS_VERSION 2

/** Checkpoint hook options (TensorFlow's CheckpointSaverHook arguments;
 *  docs/guide.md maps each). Start from CKPT_CHECKPOINT_HOOK_OPTIONS_INIT;
 *  0 or NULL in a field means its default. */
typedef struct ckpt_checkpoint_hook_options {
    unsigned int version;       /**< CKPT_CHECKPOINT_HOOK_OPTIONS_VERSION */
    const char *checkpoint_dir; /**< created recursively at begin, every
                                     level durable in its parent (B46);
                                     NULL: the session's checkpoint_dir
                                     (one of the two is required; both set
                                     and different is CKPT_EINVAL) */
    double save_secs;           /**< exactly one of save_secs/save_steps
                                     (> 0); INFINITY saves at creation
                                     and at end only */
    int64_t save_steps;
    int mode;          /**< a ckpt_save_mode */
    ckpt_saver *saver; /**< borrowed; excludes use_scaffold */
    int use_scaffold;  /**< write through the session's scaffold
                            saver (configured by the session's
                            saver_options); excludes saver and
                            saver_options */
    const ckpt_saver_options *saver_options; /**< when the hook opens its own
                                                  saver (keep, busy policy,
                                                  ...); copied (fs, clock and
                                                  log stay borrowed); its fs
                                                  and log also serve begin's
                                                  mkdir and the hook's log */
    const ckpt_saver_listener *listeners;    /**< copied; NULL: none */
    size_t num_listeners;                    /**< the length of listeners: 0
                                                  with listeners set (a
                                                  forgotten count) is
                                                  CKPT_EINVAL */
    int save_initial_if_present; /**< 1: save at creation even when the
                                      newest checkpoint has that step (TF);
                                      default 0 skips it (B49) */
    double end_timeout_s;        /**< async: bound on end's and on_abort's
                                      wait for a write in flight; 0: the
                                      default (end: no bound, B65; on_abort:
                                      60 s, B68); < 0: no bound for either */
    const ckpt_clock *clock;     /**< times save_secs, and stamps the
                                      checkpoints of a saver the hook opens
                                      whose saver_options name no clock
                                      (read on its writer thread too);
                                      NULL: the session's clock */
    /** Checkpoint file names are <checkpoint_basename>-<step> (TF's
     *  checkpoint_basename; NULL: the saver's basename, by default
     *  "model.ckpt"). Honoured with an own saver, use_scaffold (the
     *  scaffold saver is opened with it) and an explicit saver (whose
     *  basename must be the same); a different basename in saver_options,
     *  the session's saver_options or the saver is CKPT_EINVAL naming
     *  both. Since version 2. */
    const char *checkpoint_basename;
} ckpt_checkpoint_hook_options;

#define CKPT_CHECKPOINT_HOOK_OPTIONS_INIT                                      \
    {                                                                          \
        CKPT_CHECKPOINT_HOOK_OPTIONS_VERSION, NULL, 0.0, 0, CKPT_SAVE_SYNC,    \
            NULL, 0, NULL, NULL, 0, 0, 0.0, NULL, NULL                         \
    }

/** Fill `o` with the defaults of `version` (1 ..
 *  CKPT_CHECKPOINT_HOOK_OPTIONS_VERSION). @return 0, CKPT_EINVAL or
 *  CKPT_EVERSION */
CKPT_EXTERN(int)
ckpt_checkpoint_hook_options_init(ckpt_checkpoint_hook_options *o,
                                  unsigned int version);

/** Build a checkpoint hook (sync or async: one implementation). It logs
 *  through the saver options' log, else ckpt_log_stderr, at INFO (each
 *  checkpoint, the directory at begin, and at end one line of totals:
 *  written, skipped, coalesced, failed). Async mode: a trigger skipped by
 *  the saver's busy policy SKIP (the default, see docs/guide.md) does not
 *  move the timer (the next step tries again, B60) and is counted; skips
 *  are reported at WARN with their count and the remedy, at the 1st, 10th,
 *  100th, ... skip; a failed background write is
 *  returned once by the next after_run or by end (B63); end waits for
 *  writes in flight, then saves the final step unless a durable checkpoint
 *  of this hook already has it (B54, B64-B66). A borrowed saver (explicit
 *  or the scaffold's) reports to the hook through its on_save_done, which
 *  the hook wraps (forwarding every outcome) until end or on_abort; do not
 *  share one saver between two checkpoint hooks. Through a collective
 *  saver's log (ckpt_mpi_saver_as_saver: each rank's own) the hook logs
 *  only what the session's log_level also allows, so the sessions'
 *  CKPT_LOG_OFF on all ranks but the chief keeps its lines to the chief.
 *  The directory and basename are settled with the session in begin: a
 *  hook without checkpoint_dir uses the session's; neither, or two that
 *  differ, make the session's creation fail with CKPT_EINVAL naming them.
 *  A borrowed saver must save the graph's global step (variable
 *  "global_step" at the storage ckpt_graph_global_step returns), which
 *  names the checkpoints: else the session's creation fails with
 *  CKPT_EINVAL (a wrapped saver whose ops lack saves_var is trusted).
 *  The session's graph needs a global step (ckpt_graph_create_global_step),
 *  as TensorFlow's hook does: without one its creation fails with
 *  CKPT_ESTATE saying so.
 *  @return 0, CKPT_EINVAL (out or opts NULL; saver and use_scaffold both set,
 *          B44; neither or both of save_secs/save_steps, B45; use_scaffold
 *          with saver_options; checkpoint_basename differing from the saver
 *          options' or the saver's basename; listeners set with
 *          num_listeners 0, or num_listeners with listeners NULL),
 *          CKPT_EVERSION (version 0 or
 *          newer than the library's), CKPT_ENOMEM */
CKPT_EXTERN(int)
ckpt_checkpoint_hook_new(ckpt_hook *out,
                         const ckpt_checkpoint_hook_options *opts);

/** Wait, at most `timeout_s` seconds (< 0: no limit), until every
 *  checkpoint write of the hook that is in flight is durable, delivering
 *  after_save to the listeners (a stop they ask for reaches the next run).
 *  Call it from the training thread. Returns at once when the session was
 *  not created yet or the hook has ended.
 *  @return 0, CKPT_ETIMEDOUT, a failed write's error (then returned here
 *          instead of by the next hook callback), CKPT_EINVAL (NULL, not
 *          a checkpoint hook, or a copy of one whose session has been
 *          freed) */
CKPT_EXTERN(int)
ckpt_checkpoint_hook_wait(const ckpt_hook *hook, double timeout_s);

/** Metrics of a checkpoint hook built by ckpt_checkpoint_hook_new (its
 *  saver's metrics; zero before the session is created; for a borrowed
 *  saver, as they were at end or on_abort). Valid until the monitored
 *  session holding the hook is freed. @return 0 or CKPT_EINVAL for another
 *  hook, or for a copy of one whose session has been freed */
CKPT_EXTERN(int)
ckpt_checkpoint_hook_metrics(const ckpt_hook *hook, ckpt_saver_metrics *out);

/* ---- the other standard hooks ----------------------------------------------
 */

/** Stop at a global step: exactly one of num_steps (counted from the step
 *  at the first session creation) or last_step (> 0), else CKPT_EINVAL.
 *  Requests a stop after the step whose step_after reaches it; when the
 *  session is (re)created at or past it, the coordinator is asked to stop
 *  before any step runs (TF runs one more step). begin returns CKPT_ESTATE
 *  when the graph has no global step. */
CKPT_EXTERN(int)
ckpt_stop_at_step_hook_new(ckpt_hook *out, int64_t num_steps,
                           int64_t last_step);

#define CKPT_STEP_COUNTER_HOOK_OPTIONS_VERSION 1

/** StepCounterHook options; 0 or NULL in a field means its default. */
typedef struct ckpt_step_counter_hook_options {
    unsigned int version;    /**< CKPT_STEP_COUNTER_HOOK_OPTIONS_VERSION */
    int64_t every_n_steps;   /**< at most one of the two intervals; neither: */
    double every_n_secs;     /**< every 100 steps (TF's default) */
    const ckpt_clock *clock; /**< NULL: the session's clock */
    ckpt_log_fn log;         /**< NULL: the session's, else ckpt_log_stderr */
    void *log_payload;
    int log_level; /**< 0: INFO; CKPT_LOG_OFF: silent */
} ckpt_step_counter_hook_options;

#define CKPT_STEP_COUNTER_HOOK_OPTIONS_INIT                                    \
    {                                                                          \
        CKPT_STEP_COUNTER_HOOK_OPTIONS_VERSION, 0, 0.0, NULL, NULL, NULL, 0    \
    }

/** Log "global_step/sec: <rate> (global step <S>)" at INFO every N steps
 *  or S seconds (both set, or a negative one, is CKPT_EINVAL), measured
 *  from the previous trigger (the first trigger after each session
 *  creation only starts the measure); warns (first 5 times) when a step did
 *  not increase the global step. begin returns CKPT_ESTATE without a global
 *  step. NULL `o`: the defaults. @return 0, CKPT_EINVAL, CKPT_EVERSION */
CKPT_EXTERN(int)
ckpt_step_counter_hook_new(ckpt_hook *out,
                           const ckpt_step_counter_hook_options *o);

#define CKPT_LOGGING_TENSOR_HOOK_OPTIONS_VERSION 1

/** LoggingTensorHook options; 0 or NULL in a field means its default. */
typedef struct ckpt_logging_tensor_hook_options {
    unsigned int version;     /**< CKPT_LOGGING_TENSOR_HOOK_OPTIONS_VERSION */
    const char *const *names; /**< required: tensors to log (copied) */
    size_t num_names;
    int64_t every_n_iter; /**< local iterations (session runs) */
    double every_n_secs;
    int at_end;              /**< also (or only) log the last values */
    const ckpt_clock *clock; /**< NULL: the session's clock */
    ckpt_log_fn log;         /**< NULL: the session's, else stderr */
    void *log_payload;
    int log_level;
} ckpt_logging_tensor_hook_options;

#define CKPT_LOGGING_TENSOR_HOOK_OPTIONS_INIT                                  \
    {                                                                          \
        CKPT_LOGGING_TENSOR_HOOK_OPTIONS_VERSION, NULL, 0, 0, 0.0, 0, NULL,    \
            NULL, NULL, 0                                                      \
    }

/** Log "name = value, ..." (plus " (<secs> sec)" since the previous line)
 *  at INFO for the named tensors (step outputs or variables) every N local
 *  iterations or S seconds, and/or once at end (values of the last step,
 *  through ckpt_session_fetch). Give every_n_iter or every_n_secs, or
 *  neither with at_end; anything else, or a negative interval, is
 *  CKPT_EINVAL. @return 0, CKPT_EINVAL, CKPT_EVERSION, CKPT_ENOMEM */
CKPT_EXTERN(int)
ckpt_logging_tensor_hook_new(ckpt_hook *out,
                             const ckpt_logging_tensor_hook_options *o);

#define CKPT_NAN_TENSOR_HOOK_OPTIONS_VERSION 1

/** NanTensorHook options; 0 or NULL in a field means its default. */
typedef struct ckpt_nan_tensor_hook_options {
    unsigned int version;  /**< CKPT_NAN_TENSOR_HOOK_OPTIONS_VERSION */
    const char *loss_name; /**< NULL: "loss" */
    int fail_on_nan;       /**< 1: fail with CKPT_EUSER; 0: warn and stop */
    ckpt_log_fn log;       /**< NULL: the session's, else stderr */
    void *log_payload;
    int log_level;
} ckpt_nan_tensor_hook_options;

#define CKPT_NAN_TENSOR_HOOK_OPTIONS_INIT                                      \
    {                                                                          \
        CKPT_NAN_TENSOR_HOOK_OPTIONS_VERSION, NULL, 0, NULL, NULL, 0           \
    }

/** Check the named output (float, double, half or bfloat16, any shape) for
 *  NaN after every step: fail with CKPT_EUSER when fail_on_nan, else log a
 *  warning and request a stop. Another dtype makes after_run fail with
 *  CKPT_EINVAL. NULL `o`: the defaults.
 *  @return 0, CKPT_EINVAL, CKPT_EVERSION, CKPT_ENOMEM */
CKPT_EXTERN(int)
ckpt_nan_tensor_hook_new(ckpt_hook *out, const ckpt_nan_tensor_hook_options *o);

/* ---- preemption ------------------------------------------------------------
 */

/** Opt-in: after this call SIGTERM and SIGINT request a stop at the next
 *  step boundary of `ms` (a cloud preemption notice): the step in progress
 *  completes, ckpt_monitored_session_should_stop becomes true, and closing
 *  with 0 runs every hook's end, so the checkpoint hook writes the final
 *  checkpoint and the loop exits cleanly. A second signal while the first
 *  is pending gets the previous disposition (Ctrl-C twice quits). A signal
 *  the process ignores at install (SIGINT in a shell's background job)
 *  stays ignored. SIGTERM ignored, or blocked in the calling thread's
 *  signal mask (both inherited from the parent process), cannot stop the
 *  session: install then logs one warning through the session's log
 *  (ckpt_session_options.log; stderr by default) saying which, and still
 *  succeeds.
 *  Process-wide (signal dispositions are): one session at a time, also
 *  when sessions on several threads install at once; remove restores the
 *  dispositions in place before install. Freeing `ms` removes it.
 *  @return 0 (also when `ms` already holds it), CKPT_EBUSY if another
 *          session holds the handler, CKPT_EINVAL */
CKPT_EXTERN(int) ckpt_preemption_handler_install(ckpt_monitored_session *ms);
/** Restore the previous signal dispositions; nothing when not installed. */
CKPT_EXTERN(void) ckpt_preemption_handler_remove(void);
/** The signal that requested the stop since the last install, or 0 (still
 *  reported after remove). */
CKPT_EXTERN(int) ckpt_preemption_signal(void);

/* ---- MonitoredTrainingSession ---------------------------------------------
 */

/** A frequency option (save_checkpoint_secs, save_checkpoint_steps,
 *  log_step_count_steps) left at its default. TensorFlow's 0 ("off") is
 *  CKPT_FREQ_OFF here, so that a zeroed struct means the defaults. */
#define CKPT_FREQ_DEFAULT 0
/** A frequency option that turns its hook off (any negative value). */
#define CKPT_FREQ_OFF (-1)

/** Version 2 added listeners and checkpoint_basename. */
#define CKPT_TRAINING_SESSION_OPTIONS_VERSION 2

/** MonitoredTrainingSession arguments; 0 or NULL in a field means its
 *  default. */
typedef struct ckpt_training_session_options {
    unsigned int version; /**< CKPT_TRAINING_SESSION_OPTIONS_VERSION */
    int not_chief;        /**< 1: a worker: only user hooks, no restore */
    const char *checkpoint_dir;
    double save_checkpoint_secs;   /**< CKPT_FREQ_DEFAULT: 600 s unless steps
                                        are set (logged at creation);
                                        CKPT_FREQ_OFF: off */
    int64_t save_checkpoint_steps; /**< CKPT_FREQ_DEFAULT: unset;
                                        CKPT_FREQ_OFF: off */
    int checkpoint_mode;           /**< ckpt_save_mode (default SYNC) */
    int64_t log_step_count_steps;  /**< CKPT_FREQ_DEFAULT: 100;
                                        CKPT_FREQ_OFF: off */
    /* Each array below comes with its length; an array set with its
     * length 0 (a forgotten count) is CKPT_EINVAL naming both fields:
     * leave the array NULL to give none. */
    ckpt_hook *hooks; /**< user hooks (copied; zeroed when destroyed
                           before the session frees them) */
    size_t num_hooks;
    ckpt_hook *chief_only_hooks;
    size_t num_chief_only_hooks;
    ckpt_session_options session; /**< clock, fs, scaffold, recoverable,
                                       log... (version 0: its defaults) */
    const ckpt_saver_options *saver_options; /**< the scaffold saver's,
                                                  which the checkpoint hook
                                                  writes through */
    /** The checkpoint hook's listeners (copied; TF's
     *  CheckpointSaverHook(listeners=...)). Since version 2. */
    const ckpt_saver_listener *listeners;
    size_t num_listeners;
    /** The checkpoint hook's checkpoint_basename. Since version 2. */
    const char *checkpoint_basename;
} ckpt_training_session_options;

#define CKPT_TRAINING_SESSION_OPTIONS_INIT                                     \
    {                                                                          \
        CKPT_TRAINING_SESSION_OPTIONS_VERSION, 0, NULL, 0.0, 0,                \
            CKPT_SAVE_SYNC, 0, NULL, 0, NULL, 0, CKPT_SESSION_OPTIONS_INIT,    \
            NULL, NULL, 0, NULL                                                \
    }

/** Fill `o` with the defaults of `version` (1 ..
 *  CKPT_TRAINING_SESSION_OPTIONS_VERSION). @return 0, CKPT_EINVAL or
 *  CKPT_EVERSION */
CKPT_EXTERN(int)
ckpt_training_session_options_init(ckpt_training_session_options *o,
                                   unsigned int version);

/** Build a monitored session with MonitoredTrainingSession's defaults and
 *  hook order (B40-B43): chief-only hooks, StepCounterHook (every
 *  log_step_count_steps, when checkpoint_dir is set), the checkpoint hook
 *  (when checkpoint_dir is set and a frequency is enabled; it writes
 *  through the session's scaffold saver, configured by saver_options, with
 *  the given listeners and checkpoint_basename), then user hooks; a
 *  non-chief gets only the user hooks and never restores. Both checkpoint
 *  frequencies positive is CKPT_EINVAL (B41); a positive one without
 *  checkpoint_dir saves nothing, said at WARN. The hooks log through
 *  session.log (default: stderr). The session restores from
 *  checkpoint_dir; a different session.checkpoint_dir, or saver_options
 *  given both here and in session, is CKPT_EINVAL, and so is one hook given
 *  twice (as for ckpt_monitored_session_new; in one list or in both, named
 *  by list and index), and an array
 *  (hooks, chief_only_hooks, listeners) set with its count 0. Every hook
 *  passed in with its count is consumed, also on failure (its destroy has
 *  been called, once per hook). The caller's copies of hooks destroyed
 *  here are zeroed, so that a retry with them is refused naming them and
 *  ckpt_hook_free of them does nothing: all of them on failure, and a
 *  non-chief's chief_only_hooks (not also among hooks) on success. NULL
 *  `opts`: all defaults. */
CKPT_EXTERN(int)
ckpt_training_session_new(ckpt_monitored_session **out, ckpt_graph *graph,
                          const ckpt_training_session_options *opts);

CKPT_END_DECL

#endif
