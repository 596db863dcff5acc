/* hooks/checkpoint_hook_internal.h - the state of one checkpoint hook
 * (CheckpointSaverHook and AsyncCheckpointSaverHook are one implementation
 * with a mode) and what its two files share: checkpoint_hook.c drives the
 * hook callbacks and the saves, checkpoint_listeners.c calls the listeners
 * and receives save outcomes from the saver. Not installed.
 *
 * Threads: everything here runs on the training thread. The saver delivers
 * outcomes (on_save_done) on the thread that calls it, which is the
 * training thread inside one of the hook's callbacks, or the thread that
 * frees the saver. */
#ifndef CKPT_HOOKS_CHECKPOINT_HOOK_INTERNAL_H
#define CKPT_HOOKS_CHECKPOINT_HOOK_INTERNAL_H

#include "ckpt/hooks.h"
#include "common/internal.h"

/* First member of every checkpoint hook's payload: with the hook's kind
 * (CKPT_HOOK_KIND_CHECKPOINT) it identifies the payload as ours. */
#define CKPT__CKHOOK_MAGIC 0x434b484bu /* "CKHK" */

typedef struct ckpt__ckhook {
    uint32_t magic; /* CKPT__CKHOOK_MAGIC */
    /* configuration (copied from the options) */
    int mode; /* a ckpt_save_mode */
    const char *name;
    char *dir; /* NULL until begin when the session's is used */
    ckpt_saver *explicit_saver; /* borrowed */
    int use_scaffold;
    ckpt_saver_options saver_opts; /* basename points at `basename` */
    char *basename;                /* checkpoint_basename, or NULL */
    const ckpt_fs *fs;             /* for begin's mkdir (resolved there) */
    ckpt_log_fn log;               /* resolved: options, session, stderr */
    void *log_payload;
    int log_level;
    ckpt_saver_listener *listeners;
    size_t nlisteners;
    int save_initial_if_present;
    double end_timeout_s;
    ckpt_timer timer;

    /* session state */
    ckpt_session *session;
    ckpt_saver *saver;           /* resolved at after_create_session */
    int own_saver;               /* opened (and freed) by the hook */
    ckpt_saver *hooked;          /* borrowed saver whose on_save_done is ours */
    ckpt_save_done_fn prev_done; /* the callback we chain to */
    void *prev_done_payload;
    ckpt_saver_metrics final_metrics; /* of a borrowed saver, at end */
    int has_final_metrics;

    /* The saver is collective (ckpt_saver_ops): every process makes the
     * same saver calls, errors or not. */
    int collective;
    int64_t last_durable; /* step of our newest durable save, or
                             CKPT_NO_STEP */
    uint64_t *tickets;    /* async saves dispatched, outcome not yet seen */
    size_t ntickets, cap_tickets;
    int in_sync_save;          /* a synchronous save of ours is running */
    int in_after_save;         /* listeners' after_save are running: a
                                  synchronous save they make is theirs */
    int ended;                 /* end or on_abort ran: no more listener calls */
    int stop_pending;          /* a listener asked to stop; not yet passed on */
    uint64_t skipped;          /* triggers skipped (policy SKIP) */
    uint64_t next_skip_report; /* skip count of the next warning */
    int64_t start_step;        /* the global step the session began at */
    unsigned runs_at_start;    /* runs since then that left it there */
    int step_moved;            /* it advanced once: no more counting */
    int kept_err; /* first error not yet returned from a callback */
    char kept_msg[512];
} ckpt__ckhook;

/* ---- checkpoint_listeners.c ---------------------------------------------- */

/* Call every listener's begin / before_save / end in order; the first
 * failure stops the calls and is returned with the listener named. */
int ckpt__ckhook_listeners_begin(ckpt__ckhook *h);
int ckpt__ckhook_listeners_before_save(ckpt__ckhook *h, int64_t step);
int ckpt__ckhook_listeners_end(ckpt__ckhook *h, int64_t step);

/* Route the saver's outcomes to the hook: for a borrowed saver, install
 * our on_save_done (chaining to the one it had); uninstall puts it back. */
void ckpt__ckhook_install(ckpt__ckhook *h, ckpt_saver *saver);
void ckpt__ckhook_uninstall(ckpt__ckhook *h);

/* The on_save_done the hook gives a saver it opens itself. */
void ckpt__ckhook_on_save_done(const ckpt_save_result *r, void *payload);

/* The saver's busy policy and log callback (for a borrowed saver, its own;
 * the hook's saver options win for logging when they name a callback). */
int ckpt__ckhook_busy_policy(const ckpt__ckhook *h);
void ckpt__ckhook_log(const ckpt__ckhook *h, int level, const char *fmt, ...)
    CKPT__PRINTF(3, 4);

/* The hook's payload, or NULL when `hook` is not a checkpoint hook. */
ckpt__ckhook *ckpt__ckhook_of(const ckpt_hook *hook);

/* Count a trigger skipped at `step` (policy SKIP) and warn at the 1st,
 * 10th, 100th, ... skip with the count and the remedy. */
void ckpt__ckhook_note_skip(ckpt__ckhook *h, int64_t step);
/* Log the totals of the hook's saves (at end or on_abort). */
void ckpt__ckhook_log_totals(ckpt__ckhook *h, const char *when);

/* Remember `err` (with the thread's last message) to return later when no
 * error is kept yet. */
void ckpt__ckhook_keep_error(ckpt__ckhook *h, int err);
/* `err` when non-zero, else the kept error (once; its message becomes the
 * last error again), else 0. */
int ckpt__ckhook_take_error(ckpt__ckhook *h, int err);

/* Make room for one more ticket (before dispatching, so recording it
 * cannot fail afterwards) and record one. */
int ckpt__ckhook_reserve_ticket(ckpt__ckhook *h);
void ckpt__ckhook_add_ticket(ckpt__ckhook *h, uint64_t ticket);

#endif
