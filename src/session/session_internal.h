/* session/session_internal.h - the layout of the session layer's objects
 * (graph, raw session, run and step contexts, monitored session) and the
 * functions its files share. Not installed; the hooks layer may include it
 * for the few internal entry points marked below. */
#ifndef CKPT_SESSION_INTERNAL_H
#define CKPT_SESSION_INTERNAL_H

#include "ckpt/session.h"
#include "common/internal.h"

#include <stdatomic.h>

/* ---- graph ----------------------------------------------------------------
 */

/* What a monitored session and its hooks agree on while the session is
 * created (the session states its settings before the hooks' begin; each
 * checkpoint hook adds or checks its own in begin): one checkpoint
 * directory and basename, named by whoever set them first, and the
 * session's log, which hooks without a log of their own use. */
typedef struct ckpt__graph_agreement {
    char *dir;
    const char *dir_from; /* static text naming the setting */
    char *basename;
    const char *basename_from;
    const ckpt_fs *fs;       /* the session's; NULL until a session states it */
    const ckpt_clock *clock; /* the session's (NULL: the system clock) */
    ckpt_log_fn log;         /* the session's; NULL until a session states it */
    void *log_payload;
    int log_level;
    int scaffold_writer; /* a hook writes through the scaffold saver */
    int own_writers;     /* hooks that write through a saver they open */
} ckpt__graph_agreement;

struct ckpt_graph {
    ckpt_var *vars; /* names are owned copies */
    size_t num_vars;
    size_t cap_vars;
    ckpt__name_index names; /* each var's name -> its index */
    int64_t *global_step;   /* borrowed storage, NULL when none */
    int frozen;             /* sessions that froze it and are not closed */
    int sessions;           /* monitored sessions over it, not yet freed */
    int free_requested;     /* ckpt_graph_free came while sessions > 0 */
    ckpt__graph_agreement agreed;
};

/* Freeze (1) or unfreeze (0) the graph for one monitored session: it
 * freezes it after the last hook's begin and unfreezes it at close. The
 * graph stays frozen while any session over it holds a freeze. */
void ckpt__graph_set_frozen(ckpt_graph *g, int frozen);
/* Whether `h` is one of the `n` hooks of `list` again: the same destroy
 * and the same non-NULL payload (one hook handed over twice, whose payload
 * must be destroyed once). */
int ckpt__hook_is_among(const ckpt_hook *h, const ckpt_hook *list, size_t n);
/* Whether `h` and `other` are one hook given twice, which would run twice
 * a step: the same non-NULL payload, destroy and callbacks. Different
 * hooks may share a payload (the caller's state, or one destroy, which
 * ckpt__hooks_destroy then calls once). */
int ckpt__hook_is_repeat(const ckpt_hook *h, const ckpt_hook *other);
/* Whether every byte of `h` is zero: a hook a failed creation destroyed
 * and zeroed in the caller's array (or one whose constructor failed). */
int ckpt__hook_is_zero(const ckpt_hook *h);
/* Call the destroy of each of the `n` hooks, once per hook: skipping a
 * hook given earlier in `hooks` or among the `m` of `before` (NULL with 0:
 * none), a library hook already destroyed (a stale copy) and one a live
 * session holds (that session destroys it). */
void ckpt__hooks_destroy(const ckpt_hook *hooks, size_t n,
                         const ckpt_hook *before, size_t m);
/* The last step of the library's hook constructors: give the hook `out`
 * its serial and note it alive. 0, or CKPT_ENOMEM (recorded) with the hook
 * destroyed and zeroed. */
int ckpt__hook_complete(ckpt_hook *out);
/* Whether `h` is one of the library's hooks (its kind and serial say so)
 * and still alive: not a caller's copy kept after the session that held
 * the hook was freed, nor a hook of the caller's with a library kind set.
 * Only a live hook's payload may be read. */
int ckpt__hook_is_live(const ckpt_hook *h);
/* 0 when `h` may be handed to a session; CKPT_EINVAL, naming it by
 * `label` ("hooks[2]"), for a copy of one of the library's hooks already
 * destroyed, a hook of the caller's with a library kind set, or a hook
 * another live session holds. */
int ckpt__hook_check_usable(const ckpt_hook *h, const char *label);
/* A monitored session notes the payloads of its copies of its hooks as
 * held, and releases and destroys them when it is freed. */
void ckpt__hooks_hold(const ckpt_hook *hooks, size_t n);
void ckpt__hooks_destroy_held(const ckpt_hook *hooks, size_t n);
/* A monitored session takes (1) or drops (0) the graph: a graph freed by
 * ckpt_graph_free while sessions hold it is freed when the last one drops
 * it. */
void ckpt__graph_hold(ckpt_graph *g, int hold);

/* For the session and the hooks layer: agree on the checkpoint directory
 * (`dir` NULL: nothing to add). The first setting wins; a different one is
 * CKPT_EINVAL naming `from` and the earlier setting. Trailing '/' are
 * ignored in the comparison. */
int ckpt__graph_agree_dir(ckpt_graph *g, const char *dir, const char *from);
/* The same for the checkpoint basename. */
int ckpt__graph_agree_basename(ckpt_graph *g, const char *basename,
                               const char *from);
/* A checkpoint hook with use_scaffold says so in its begin: the scaffold
 * saver then writes checkpoints, rather than only restoring one. */
void ckpt__graph_note_scaffold_writer(ckpt_graph *g);
void ckpt__graph_note_own_writer(ckpt_graph *g);
/* The agreement so far (borrowed; fields NULL when unset). */
const ckpt__graph_agreement *ckpt__graph_agreement_of(const ckpt_graph *g);
/* Forget it (a session starts over, or is freed). */
void ckpt__graph_forget_agreement(ckpt_graph *g);
/* Record the creating session's file system, clock and log, for hooks
 * that were given none of their own. */
void ckpt__graph_set_session_defaults(ckpt_graph *g, const ckpt_fs *fs,
                                      const ckpt_clock *clock, ckpt_log_fn log,
                                      void *payload, int level);

/* ---- raw session, run context, step context ----------------------------- */

struct ckpt_session {
    ckpt_monitored_session *ms;
    ckpt_graph *graph;
    ckpt_coordinator *coord;
    ckpt_saver *saver; /* the scaffold's saver, or NULL */
};

struct ckpt_run_context {
    ckpt_session *session;
    const ckpt_run_args *original;
    int stop_requested;
};

/* A step output published with ckpt_step_context_publish (owned copy). */
typedef struct ckpt__output {
    char *name;
    int dtype;
    ckpt_shape shape;
    void *data;
    size_t size;
} ckpt__output;

struct ckpt_step_context {
    ckpt_session *session;
    ckpt_run_options options; /* merged options of the current step */
    ckpt_feed *feeds;         /* merged feeds (borrowed members) */
    size_t num_feeds;
    size_t cap_feeds;
    ckpt__output *outputs; /* kept until the next step starts */
    size_t num_outputs;
    size_t cap_outputs;
    void **scratch; /* buffers of variables read through callbacks */
    size_t num_scratch;
    size_t cap_scratch;
    int stop_requested;
};

void ckpt__step_context_init(ckpt_step_context *sc, ckpt_session *s);
/* Forget feeds, outputs and scratch buffers before a new step. */
void ckpt__step_context_reset(ckpt_step_context *sc);
void ckpt__step_context_dispose(ckpt_step_context *sc);
int ckpt__step_context_add_feed(ckpt_step_context *sc, const ckpt_feed *feed);
/* The merged feed named `name`, or NULL. */
const ckpt_feed *ckpt__step_context_find_feed(const ckpt_step_context *sc,
                                              const char *name);
/* Resolve a fetch: a step output published in the last step first, else
 * the graph variable (read through its callback into a scratch buffer when
 * it has no plain memory). @return 0, CKPT_ENOTFOUND, CKPT_EUSER */
int ckpt__step_context_resolve(ckpt_step_context *sc, const ckpt_graph *g,
                               const char *name, ckpt_value *out);

/* ---- monitored session ----------------------------------------------------
 */

struct ckpt_monitored_session {
    ckpt_graph *graph;
    int holds_freeze; /* this session froze the graph (until close) */
    ckpt_hook *hooks;
    size_t num_hooks;
    size_t num_began; /* hooks whose begin succeeded */

    /* options (strings copied) */
    const ckpt_clock *clock;
    const ckpt_fs *fs;
    char *checkpoint_dir;
    char *restore_from;
    char *basename; /* a hook's checkpoint_basename, for the scaffold saver */
    int saver_options_given; /* the caller configured the scaffold saver */
    ckpt_scaffold scaffold;
    ckpt_saver_options saver_opts;
    int recoverable;
    int max_recovery_attempts; /* < 0: no limit */
    double recovery_backoff_s; /* <= 0: none */
    int not_chief;
    double stop_grace_period_s;
    ckpt_log_fn log;
    void *log_payload;
    int log_level;

    ckpt_session sess;
    ckpt_saver *owned_saver;
    int live;          /* a session is created (restore/init + after_create) */
    int stop;          /* the hooked layer's stop flag */
    int closed;        /* close was called */
    int closing;       /* close is running its hooks' end or on_abort */
    ckpt_buf restored; /* the checkpoint this session was created from
                          (empty: initialised), for messages */

    /* the step in progress */
    int in_step;
    /* the ckpt__thread_token of the thread whose run, before_run,
     * after_run or close is calling hooks or the step function, 0 when
     * none: re-entering them or close is refused, from that thread or
     * another */
    _Atomic uintptr_t in_run;
    ckpt_run_context ctx;
    ckpt_step_context sc;
    ckpt_run_args caller_args;
    ckpt_run_args *hook_args; /* one per hook, filled by before_run */
    ckpt_value *values;       /* caller's fetches, then each hook's */
    size_t cap_values;
    int64_t step_before;
    int64_t step_after;
    uint64_t recoveries;

    /* savers a step's mutation fence completes (mutation_fence.c) */
    ckpt_saver **fence_savers;
    size_t num_fence_savers, cap_fence_savers;
    int fence_used;      /* a step called the fence: snapshots overlap */
    int warned_unfenced; /* said a step ended unfenced over an open
                            snapshot (fence_from_start) */

    /* preemption (see hooks/preemption.c) */
    const atomic_int *stop_source;
    void (*stop_source_detach)(void);
};

/* Log through the session's callback when `level` is enabled. */
void ckpt__ms_log(const ckpt_monitored_session *ms, int level, const char *fmt,
                  ...) CKPT__PRINTF(3, 4);

/* Restore the latest checkpoint (or run init_fn), reset the coordinator and
 * call every hook's after_create_session. */
int ckpt__ms_create_session(ckpt_monitored_session *ms);
/* Stop and join the coordinator's threads and drain the scaffold saver:
 * the session is no longer live. Errors are logged, not returned. */
void ckpt__ms_drop_session(ckpt_monitored_session *ms);
/* Recoverable flavour: after the recoverable error `err`, re-create the
 * session with back-off until it succeeds (0) or `*attempts` reaches the
 * limit or a non-recoverable error occurs (that error is returned). */
int ckpt__ms_recover(ckpt_monitored_session *ms, int err, int *attempts);
/* Whether `err` should be handled by re-creating the session. */
int ckpt__ms_should_recover(const ckpt_monitored_session *ms, int err);
/* Apply a pending stop request of the stop source (preemption). */
void ckpt__ms_poll_stop_source(ckpt_monitored_session *ms);
/* Value of the global step, or -1 when the graph has none. */
int64_t ckpt__ms_global_step(const ckpt_monitored_session *ms);
/* CKPT_ESTATE naming `what` while run, before_run, after_run or close is
 * in progress: on another thread, or on this one (a hook or the step
 * function calling back in; run_cycle.c). */
int ckpt__ms_refuse_in_run(const ckpt_monitored_session *ms, const char *what);
/* Enter run, before_run, after_run or close as `what`: 0 with this
 * thread's token in `in_run`, or CKPT_ESTATE as ckpt__ms_refuse_in_run.
 * ckpt__ms_leave ends it. */
int ckpt__ms_enter(ckpt_monitored_session *ms, const char *what);
void ckpt__ms_leave(ckpt_monitored_session *ms);

/* For hooks/preemption.c: make `flag` (non-zero: stop) a stop source of
 * `ms`, read at every step boundary and by should_stop; `detach` is called
 * when the session is freed. NULL removes it. */
void ckpt__ms_set_stop_source(ckpt_monitored_session *ms,
                              const atomic_int *flag, void (*detach)(void));

/* For the checkpoint hooks: a saver whose overlapped snapshots the step's
 * mutation fence completes (added once; removing it completes an open
 * snapshot first). @return 0, CKPT_EINVAL, CKPT_ENOMEM */
int ckpt__session_add_fence_saver(ckpt_session *s, ckpt_saver *saver);
void ckpt__session_remove_fence_saver(ckpt_session *s, ckpt_saver *saver);
/* Once a step has called the fence: complete every registered saver's
 * open snapshot (at the end of every step). */
void ckpt__ms_complete_snapshots(ckpt_monitored_session *ms);
/* 0 when `g` has a global step, else CKPT_ESTATE naming `who`, and saying
 * so when a variable of that name was added as an ordinary one. */
int ckpt__graph_need_global_step(const ckpt_graph *g, const char *who);
/* Wait (each within stop_grace_period_s) for the writes in flight of the
 * checkpoint hooks' savers still registered, the scaffold's excepted;
 * failures are logged as WARN prefixed with `when`; the thread's last
 * error is left as it was. */
void ckpt__ms_wait_hook_savers(ckpt_monitored_session *ms, const char *when);

/* Sleep for `seconds` of real time (the recovery back-off). */
void ckpt__sleep_s(double seconds);

#endif
