/* ckpt/session.h - TensorFlow's monitored-session machinery for C training
 * loops: the variable registry (the "graph"), the global step, run
 * arguments and values, the run context, the raw session hooks see, and the
 * monitored session that drives hooks around each step, restores from the
 * latest checkpoint on creation and, in its recoverable flavour, re-creates
 * itself on CKPT_EABORTED / CKPT_EUNAVAILABLE.
 *
 * Behaviour: docs/behaviour.md (B14-B39 and F-numbers; where the library
 * deviates from TensorFlow it says so); a walk-through: docs/guide.md. A
 * monitored session is used from one thread (handing it over between
 * calls is fine): run, before_run, after_run, close or should_stop while
 * another thread is inside one of them returns CKPT_ESTATE saying so. A
 * thread cancelled (pthread_cancel) inside a hook or the step function
 * releases the session as it goes: docs/threading.md. */
#ifndef CKPT_SESSION_H
#define CKPT_SESSION_H

#include "clock.h"
#include "coordinator.h"
#include "io.h"
#include "log.h"
#include "saver.h"
#include "tensor.h"

CKPT_BEGIN_DECL

/* ---- the graph: a registry of variables -----------------------------------
 */

typedef struct ckpt_graph ckpt_graph;

CKPT_EXTERN(int) ckpt_graph_new(ckpt_graph **out);
/** Free the graph; NULL is ignored. A graph that monitored sessions still
 *  hold (created over it and not yet freed) stays alive for them and is
 *  freed with the last one, so the two may be freed in either order. */
CKPT_EXTERN(void) ckpt_graph_free(ckpt_graph *g);

/** Register a variable (the struct and name are copied; the memory is the
 *  caller's). @return 0, CKPT_EINVAL, CKPT_ENOTSUP, CKPT_EEXISTS, or
 *  CKPT_ESTATE once the graph is frozen (after the last hook's begin, until
 *  every monitored session over it is closed) */
CKPT_EXTERN(int) ckpt_graph_add_var(ckpt_graph *g, const ckpt_var *var);

/** Register the global step: an int64 scalar named "global_step" stored at
 *  `storage` (the training loop increments it once per step).
 *  @return 0, CKPT_EEXISTS, CKPT_ESTATE */
CKPT_EXTERN(int) ckpt_graph_create_global_step(ckpt_graph *g, int64_t *storage);

/** The global step's storage, or NULL when none was created. */
CKPT_EXTERN(int64_t *) ckpt_graph_global_step(const ckpt_graph *g);

CKPT_EXTERN(size_t) ckpt_graph_num_vars(const ckpt_graph *g);
/** Variable `i` in registration order (borrowed). */
CKPT_EXTERN(const ckpt_var *) ckpt_graph_var(const ckpt_graph *g, size_t i);
/** The variable named `name`, or NULL. */
CKPT_EXTERN(const ckpt_var *)
ckpt_graph_find(const ckpt_graph *g, const char *name);
CKPT_EXTERN(int) ckpt_graph_is_frozen(const ckpt_graph *g);

/* ---- run arguments and values ---------------------------------------------
 */

/** Options of one run: requests the caller and the hooks make of the step
 *  function, which reads the merged result with
 *  ckpt_step_context_options(); hooks see it again in after_run. The
 *  library itself acts on none of them. Merging (B19): each field takes
 *  the largest value asked for. */
typedef struct ckpt_run_options {
    int trace_level;    /**< how much the step should trace (0: nothing) */
    int64_t timeout_ms; /**< a deadline the step should keep (0: none) */
} ckpt_run_options;

/** An input fed into a step, by name. */
typedef struct ckpt_feed {
    const char *name;
    const void *data;
    size_t size;
} ckpt_feed;

/** What the caller, or a hook's before_run, asks of one step: outputs to
 *  fetch after it (step outputs published by the step, or variables), feeds,
 *  options. Everything is borrowed until the step's after_run returns. */
typedef struct ckpt_run_args {
    const char *const *fetches;
    size_t num_fetches;
    const ckpt_feed *feeds;
    size_t num_feeds;
    ckpt_run_options options;
} ckpt_run_args;

/** A fetched value (borrowed; valid during the after_run call, or for the
 *  caller until its next run on the session). */
typedef struct ckpt_value {
    const char *name;
    int dtype;
    ckpt_shape shape;
    const void *data;
    size_t size;
} ckpt_value;

/** What a hook's after_run (or the caller) gets back from a step: exactly
 *  the fetches it asked for, in its order (B17), the merged options, and the
 *  global step before and after the step. */
typedef struct ckpt_run_values {
    const ckpt_value *results;
    size_t num_results;
    ckpt_run_options options;
    int64_t step_before;
    int64_t step_after;
} ckpt_run_values;

/* ---- the raw session, run context and step context -------------------------
 */

/** The session hooks see (TF's raw session): the graph, the global step and
 *  the coordinator. Borrowed; valid until the monitored session is freed. */
typedef struct ckpt_session ckpt_session;

CKPT_EXTERN(ckpt_graph *) ckpt_session_graph(ckpt_session *s);
/** Current value of the global step. @return 0 or CKPT_ESTATE (none) */
CKPT_EXTERN(int) ckpt_session_global_step(ckpt_session *s, int64_t *out);
CKPT_EXTERN(ckpt_coordinator *) ckpt_session_coordinator(ckpt_session *s);
/** The scaffold's saver (opened on the checkpoint directory), or NULL. */
CKPT_EXTERN(ckpt_saver *) ckpt_session_saver(ckpt_session *s);

/** Read `name` outside a run (e.g. from a hook's end): a step output
 *  published by the last step, else the variable's current value. `out` is
 *  borrowed until the next step starts.
 *  @return 0, CKPT_ENOTFOUND, CKPT_EUSER (a variable's read callback) */
CKPT_EXTERN(int)
ckpt_session_fetch(ckpt_session *s, const char *name, ckpt_value *out);

/** One run's context, handed to before_run and after_run. */
typedef struct ckpt_run_context ckpt_run_context;

/** Ask the monitored session to stop after this step (B20, B21). */
CKPT_EXTERN(void) ckpt_run_context_request_stop(ckpt_run_context *ctx);
CKPT_EXTERN(int) ckpt_run_context_stop_requested(const ckpt_run_context *ctx);
CKPT_EXTERN(ckpt_session *) ckpt_run_context_session(ckpt_run_context *ctx);
/** The caller's own run arguments (borrowed). */
CKPT_EXTERN(const ckpt_run_args *)
ckpt_run_context_original_args(const ckpt_run_context *ctx);

/** What a step sees: merged feeds, a place to publish step outputs (e.g.
 *  "loss") that hooks and the caller may fetch, and a stop request. */
typedef struct ckpt_step_context ckpt_step_context;

/** The fed input named `name`. @return 0 or CKPT_ENOTFOUND */
CKPT_EXTERN(int)
ckpt_step_context_feed(ckpt_step_context *sc, const char *name,
                       const void **data, size_t *size);
/** Publish a step output (copied; `shape` NULL: a scalar). Publishing a
 *  name again in the same step replaces the value. Outputs live until the
 *  next step starts. @return 0, CKPT_EINVAL, CKPT_ENOTSUP (dtype), or
 *  CKPT_ENOMEM */
CKPT_EXTERN(int)
ckpt_step_context_publish(ckpt_step_context *sc, const char *name, int dtype,
                          const ckpt_shape *shape, const void *data);
/** Publish a float32 scalar output, e.g. the loss. */
CKPT_EXTERN(int)
ckpt_step_context_publish_float(ckpt_step_context *sc, const char *name,
                                float v);
/** The step's run options: the caller's merged with every hook's (B19). */
CKPT_EXTERN(const ckpt_run_options *)
ckpt_step_context_options(const ckpt_step_context *sc);
/** The step is about to write the variables (call it right before the
 *  optimizer update, or whatever first writes a saved variable). An async
 *  checkpoint triggered at the end of the previous step may still be
 *  copying in the background, while the step only reads the state (its
 *  forward and backward passes): the fence copies what is left, waits for
 *  the piece the writer is copying and lets the step go on. The values
 *  saved are those at the trigger step.
 *
 *  The first call switches the session's checkpoint savers to overlapped
 *  snapshots; from then on every step that writes a variable must call the
 *  fence first (a step that writes nothing need not: the session completes
 *  an open snapshot when the step ends), and nothing may write the
 *  variables between steps. Variables of at most 64 KiB (the global step,
 *  counters; up to 1 MiB of them in all) are copied at the trigger and may
 *  change before the fence. A larger variable written before the fence is
 *  saved torn, and nothing can tell (its checksum matches what was
 *  written). A loop that never calls it gets complete
 *  snapshots at the trigger, as before. Read callbacks of variables are
 *  always called at the trigger, on the training thread. Works the same
 *  in ckpt_monitored_session_run's step function and between
 *  ckpt_monitored_session_before_run and _after_run.
 *  @return 0, CKPT_EINVAL (NULL), CKPT_ESTATE (no step in progress) */
CKPT_EXTERN(int) ckpt_step_context_mutation_fence(ckpt_step_context *sc);
/** Ask to stop: the step completes (hooks' after_run run), the session
 *  stops, and run / after_run return CKPT_ESTOPITER, a clean end (B39). */
CKPT_EXTERN(void) ckpt_step_context_request_stop(ckpt_step_context *sc);
CKPT_EXTERN(ckpt_session *) ckpt_step_context_session(ckpt_step_context *sc);

/** A training step: do the work, increment the global step, publish
 *  outputs. Return 0 or an error (CKPT_EOUT_OF_RANGE when the input is
 *  exhausted: a clean end; CKPT_EABORTED / CKPT_EUNAVAILABLE: recoverable),
 *  saying what failed with ckpt_error_set (a code returned without a
 *  message gets "the step failed with <code> ... and recorded no message";
 *  the same for the status passed to ckpt_monitored_session_after_run,
 *  since ckpt_monitored_session_before_run clears the last error). A
 *  positive return is not a code: the run returns CKPT_EUSER, its message
 *  saying "the step function returned N, which is not 0 or a negative
 *  ckpt_error_code" (after_run's says "step_status"). */
typedef int (*ckpt_step_fn)(ckpt_step_context *sc, void *payload);

/* ---- hooks ------------------------------------------------------------------
 */

#define CKPT_HOOK_VERSION 1

/** What a hook is (ckpt_hook.kind): hooks written by the caller are
 *  CKPT_HOOK_KIND_USER (0); the library's constructors set their own kind,
 *  which functions taking a hook of one kind (ckpt_checkpoint_hook_wait,
 *  ...) check. */
typedef enum ckpt_hook_kind {
    CKPT_HOOK_KIND_USER = 0,
    CKPT_HOOK_KIND_CHECKPOINT = 1, /**< ckpt_checkpoint_hook_new */
    CKPT_HOOK_KIND_STOP_AT_STEP = 2,
    CKPT_HOOK_KIND_STEP_COUNTER = 3,
    CKPT_HOOK_KIND_LOGGING_TENSOR = 4,
    CKPT_HOOK_KIND_NAN_TENSOR = 5
} ckpt_hook_kind;

/** A session hook: optional callbacks plus a payload (TF's SessionRunHook).
 *  Every callback returns 0 or an error (its own failures: CKPT_EUSER or a
 *  specific code, its message recorded with ckpt_error_set, which the
 *  session passes on prefixed with the hook's name); a hook asks to stop
 *  with ckpt_run_context_request_stop.
 *  The library's own hooks are built with this same struct. */
typedef struct ckpt_hook {
    int version;      /**< CKPT_HOOK_VERSION */
    const char *name; /**< for messages, e.g. "CheckpointSaverHook" */
    void *payload;
    /** Once per monitored session, before the session is created; the graph
     *  may still be extended (it is frozen after the last hook's begin). */
    int (*begin)(ckpt_graph *g, void *payload);
    /** After every session (re)creation, restore or initialisation. */
    int (*after_create_session)(ckpt_session *s, ckpt_coordinator *coord,
                                void *payload);
    /** Before each step; fill `args` (zeroed) to request fetches/feeds. */
    int (*before_run)(ckpt_run_context *ctx, ckpt_run_args *args,
                      void *payload);
    /** After each successful step, with the values this hook requested. */
    int (*after_run)(ckpt_run_context *ctx, const ckpt_run_values *values,
                     void *payload);
    /** At close with OK or a clean-end status. */
    int (*end)(ckpt_session *s, void *payload);
    /** At close with any other status, instead of end (F5); also when the
     *  monitored session's creation fails after this hook's begin, and
     *  with CKPT_ECANCELED when the session is freed without close. */
    void (*on_abort)(int status, void *payload);
    /** Release the payload; called by ckpt_monitored_session_free, or by
     *  ckpt_hook_free for a hook never handed to a session. */
    void (*destroy)(void *payload);
    /** A ckpt_hook_kind; leave 0 in hooks of your own. */
    int kind;
    /** Set by the library's hook constructors, a number no other hook of
     *  the process has: it tells a live hook from a copy of one since
     *  destroyed, whatever memory a newer hook takes. Leave 0 in hooks of
     *  your own. */
    unsigned long long serial;
} ckpt_hook;

/** Release a hook that was never handed to a session (a session, or the
 *  training-session builder, consumes every hook given to it, also when it
 *  fails: do not call this on those). Calls destroy(payload) and zeroes
 *  `*hook`, so a second call does nothing. NULL is ignored. A hook (a
 *  non-NULL payload with a destroy) that a monitored session still holds
 *  is left alone: the call is refused, recorded as CKPT_ESTATE in the last
 *  error and logged on stderr at ERROR, and the session destroys the hook
 *  when it is freed. A copy of one of the library's hooks kept after that
 *  session was freed is refused the same way (the payload is not touched)
 *  and zeroed. */
CKPT_EXTERN(void) ckpt_hook_free(ckpt_hook *hook);

/* ---- the monitored session --------------------------------------------------
 */

/** Called when no checkpoint was restored at creation (scaffold init_fn). */
typedef int (*ckpt_init_fn)(ckpt_session *s, void *payload);

/** Scaffold: how a session is initialised. */
typedef struct ckpt_scaffold {
    ckpt_init_fn init_fn; /**< may be NULL: variables keep their values */
    void *init_payload;
    ckpt_saver *saver; /**< borrowed; NULL: one is opened on
                            checkpoint_dir over the graph's variables */
} ckpt_scaffold;

#define CKPT_SESSION_OPTIONS_VERSION 1

typedef struct ckpt_session_options {
    unsigned int version;       /**< CKPT_SESSION_OPTIONS_VERSION */
    const ckpt_clock *clock;    /**< NULL: the system clock; also the
                                     clock of hooks given none (their
                                     timers, and the saver a checkpoint
                                     hook opens) and of the scaffold
                                     saver whose saver_options name none;
                                     savers read it on their writer
                                     thread too: it must be thread-safe */
    const ckpt_fs *fs;          /**< NULL: POSIX */
    const char *checkpoint_dir; /**< restore from its latest checkpoint at
                                     creation (chief only); may be NULL:
                                     then a checkpoint hook's directory is
                                     used (one setting suffices; two that
                                     differ are CKPT_EINVAL) */
    const char *restore_from;   /**< explicit checkpoint prefix to restore */
    ckpt_scaffold scaffold;
    const ckpt_saver_options *saver_options; /**< for the scaffold's saver
                                     (a checkpoint hook with use_scaffold
                                     writes through it); its basename and a
                                     hook's checkpoint_basename must agree */
    int recoverable;            /**< re-create on ABORTED/UNAVAILABLE */
    int max_recovery_attempts;  /**< re-creations per failing call
                                     (default 10; < 0: no limit; B34) */
    double recovery_backoff_s;  /**< real sleep before the first
                                     re-creation, doubled for each next one
                                     up to 60 s (default 0.1; < 0: none) */
    int not_chief;              /**< 1: never restore or initialise */
    double stop_grace_period_s; /**< coordinator join at close (default 120) */
    ckpt_log_fn log;            /**< NULL: ckpt_log_stderr */
    void *log_payload;
    int log_level; /**< lowest level logged: CKPT_LOG_DEBUG, _INFO,
                        _WARN, _ERROR (log.h; 0: INFO); CKPT_LOG_OFF
                        silences the session and its hooks */
} ckpt_session_options;

/** Defaults of every field (0 or NULL in each means its default). */
#define CKPT_SESSION_OPTIONS_INIT                                              \
    {                                                                          \
        CKPT_SESSION_OPTIONS_VERSION, NULL, NULL, NULL, NULL,                  \
            {NULL, NULL, NULL}, NULL, 0, 0, 0.0, 0, 0.0, NULL, NULL, 0         \
    }

/** Fill `opts` with the defaults of `version` (1 ..
 *  CKPT_SESSION_OPTIONS_VERSION). @return 0, CKPT_EINVAL or CKPT_EVERSION */
CKPT_EXTERN(int)
ckpt_session_options_init(ckpt_session_options *opts, unsigned int version);

typedef struct ckpt_monitored_session ckpt_monitored_session;

/** Create a monitored session over `graph` with `hooks` (copied; order is
 *  call order; NULL when `num_hooks` is 0) and `opts` (NULL: every
 *  default, as CKPT_SESSION_OPTIONS_INIT): every hook's begin (B14),
 *  freeze the graph, create the session, then every hook's
 *  after_create_session (B15). Creating the session = (chief only)
 *  restore `restore_from`, else the latest
 *  checkpoint of checkpoint_dir, through the scaffold's saver (opened on
 *  checkpoint_dir over every graph variable when scaffold.saver is NULL),
 *  else run init_fn. The recoverable flavour retries a creation failing
 *  with a recoverable code like a failing run (B34).
 *  The hooks are consumed on every path: on failure nothing needs freeing,
 *  hooks whose begin succeeded got on_abort(error), every hook's destroy
 *  has been called and `hooks[0..num_hooks)` are zeroed (so that a retry
 *  with them is refused, naming them, and ckpt_hook_free of them does
 *  nothing: make them again). On success the caller's copies stay as they
 *  are, for ckpt_checkpoint_hook_wait and _metrics, until the session is
 *  freed; after that, a copy of one of the library's hooks is known to be
 *  destroyed: ckpt_hook_free of it does nothing but record CKPT_ESTATE (and
 *  zero it), _wait and _metrics are CKPT_EINVAL and giving it to a session
 *  again is refused, naming it (a hook of your own is yours to keep track
 *  of: its payload is gone), also once a newer hook has taken the same
 *  memory (ckpt_hook.serial tells them apart). A hook of your own with a
 *  library kind set is refused (CKPT_EINVAL) and destroyed like any hook
 *  given to a failed creation.
 *  A hook (a payload with a destroy) that another live session holds is
 *  CKPT_EINVAL: make a hook for each session. One hook given twice (the same
 * callbacks, destroy and non-NULL payload) is CKPT_EINVAL naming both indices
 * (its destroy called once). Different hooks may share a payload (state of the
 *  caller's, or one payload and destroy: then destroy is called once).
 *  @return 0, CKPT_EINVAL, CKPT_EVERSION (options or a hook's version), a
 *          hook's error (its message prefixed with the hook's name), a
 *          restore error (e.g. CKPT_ENOTFOUND for a missing restore_from
 *          or a variable it lacks; a latest checkpoint of checkpoint_dir
 *          that lacks a variable is CKPT_EINVAL, as for
 *          ckpt_saver_restore_latest) */
CKPT_EXTERN(int)
ckpt_monitored_session_new(ckpt_monitored_session **out, ckpt_graph *graph,
                           ckpt_hook *hooks, size_t num_hooks,
                           const ckpt_session_options *opts);

/** Run one step through the hooks (B16-B25): before_run of every hook, the
 *  step, after_run of every hook. `args` (may be NULL) are the caller's;
 *  `values_out` (may be NULL) receives the caller's fetches. A fetch names
 *  a step output published in this step, else a graph variable (read after
 *  the step). The recoverable flavour re-creates the session on a
 *  recoverable error and runs the whole cycle again (B31); checkpoint
 *  writes in flight land first (each saver's wait bounded by
 *  stop_grace_period_s), so the new session restores from the newest.
 *  @return 0; the step's or a hook's error; CKPT_EINVAL (an input fed twice,
 *          B18); CKPT_ENOTFOUND (a fetch names nothing; no after_run is
 *          called); CKPT_ESTOPITER (the step called
 *          ckpt_step_context_request_stop: a clean end, after_run ran);
 *          an error recorded in the coordinator (B35); CKPT_ESTATE after a
 *          stop request, after close or while a bracketed step is open */
CKPT_EXTERN(int)
ckpt_monitored_session_run(ckpt_monitored_session *ms,
                           const ckpt_run_args *args, ckpt_step_fn step,
                           void *payload, ckpt_run_values *values_out);

/** The same cycle for a step written inline: before_run gives the step
 *  context, the caller runs its step, then calls after_run with the step's
 *  status (0, or its error: then no hook's after_run is called). In the
 *  recoverable flavour a recoverable step status re-creates the session
 *  (restoring the latest checkpoint) and after_run returns 0 with
 *  step_before == step_after == the restored step and no results: the
 *  caller's next iteration repeats the step. */
CKPT_EXTERN(int)
ckpt_monitored_session_before_run(ckpt_monitored_session *ms,
                                  const ckpt_run_args *args,
                                  ckpt_step_context **sc_out);
CKPT_EXTERN(int)
ckpt_monitored_session_after_run(ckpt_monitored_session *ms, int step_status,
                                 ckpt_run_values *values_out);

/** Whether the loop should stop: after close, a stop request (hooks, the
 *  step, the coordinator, the preemption handler), or a broken session.
 *  `*status_out` (may be NULL) receives a background error recorded in the
 *  coordinator (F14, B35), else 0. The recoverable flavour re-creates the
 *  session on a recorded recoverable error and answers 0. A NULL `ms`
 *  answers 1 (stop), as a closed one does. Called while another thread
 *  runs a step on the session or closes it (or from a hook or the step
 *  function), it answers 1 with CKPT_ESTATE in `*status_out`: it may
 *  re-create the session, which is not done under a step in progress. */
CKPT_EXTERN(int)
ckpt_monitored_session_should_stop(ckpt_monitored_session *ms, int *status_out);

/** Close with the loop's terminating status (B26-B30): OK or a clean-end
 *  code runs every hook's end in order (stopping at the first failure: a
 *  checkpoint hook after a failing end then saves no final checkpoint,
 *  which is logged at WARN) and returns OK or end's error; another status
 *  runs on_abort instead and is returned. Then the coordinator is stopped
 *  and joined (grace period stop_grace_period_s, stragglers ignored), the
 *  writes in flight of checkpoint hooks whose end did not run (an earlier
 *  hook's end failed) are waited for, each within the grace period, the
 *  scaffold saver closed and the graph unfrozen unless another open
 *  session froze it too. An
 *  error recorded in the coordinator, or a pending error of the scaffold
 *  saver, is returned when
 *  nothing else failed. A second close returns CKPT_ESTATE, and so does a
 *  close (or run, before_run, after_run) from a hook or step function of
 *  this session while it runs a step, or from a hook or listener while
 *  close runs the hooks' end or on_abort (the message says which). A
 *  bracketed step still open (a before_run with no after_run, e.g. a loop
 *  that broke out between them) is abandoned: no hook's after_run runs for
 *  it, and close goes on as for `status` (with 0, the checkpoint hook's end
 *  saves the global step as the step left it).
 *  A checkpoint hook's own saver is freed with the session, not closed
 *  here: until ckpt_monitored_session_free, it keeps the checkpoint
 *  directory it saved into, so another saver or session of this process
 *  saving there fails with CKPT_EBUSY (free the closed session first). */
CKPT_EXTERN(int)
ckpt_monitored_session_close(ckpt_monitored_session *ms, int status);

/** Free (closing with CKPT_ECANCELED first if needed) and destroy hooks. */
CKPT_EXTERN(void) ckpt_monitored_session_free(ckpt_monitored_session *ms);

/** The raw session (borrowed). */
CKPT_EXTERN(ckpt_session *)
ckpt_monitored_session_session(ckpt_monitored_session *ms);

/** Number of hooks the session drives. */
CKPT_EXTERN(size_t)
ckpt_monitored_session_num_hooks(const ckpt_monitored_session *ms);
/** Hook `i` in call order (the session's copy; borrowed), or NULL. */
CKPT_EXTERN(const ckpt_hook *)
ckpt_monitored_session_hook(const ckpt_monitored_session *ms, size_t i);
/** How many times the recoverable flavour re-created the session. */
CKPT_EXTERN(uint64_t)
ckpt_monitored_session_recoveries(const ckpt_monitored_session *ms);

/** Whether `code` is a clean end (CKPT_EOUT_OF_RANGE, CKPT_ESTOPITER). */
CKPT_EXTERN(int) ckpt_is_clean_end(int code);
/** Whether `code` is recoverable (CKPT_EABORTED, CKPT_EUNAVAILABLE). */
CKPT_EXTERN(int) ckpt_is_recoverable(int code);

CKPT_END_DECL

#endif
