/* hooks/preemption.c - the opt-in preemption handler: SIGTERM (a cloud
 * preemption notice) or SIGINT asks the monitored session to stop at its
 * next step boundary, so the loop leaves cleanly and the checkpoint hook's
 * end writes the final checkpoint. A second signal while the first is
 * pending restores the previous disposition and re-raises (e.g. Ctrl-C
 * twice quits at once).
 *
 * Global state (docs/threading.md, "Process-wide state"): signal
 * dispositions belong to the process, so this file keeps process-wide
 * state: the signal that arrived (a lock-free atomic, the only thing the
 * handler touches, which makes it async-signal-safe and race-free whichever
 * thread receives the signal), the session that owns the handler and the
 * dispositions to restore. One session holds the handler at a time; owner
 * and dispositions are guarded by owner_mu, so sessions on different
 * threads may install and remove concurrently (the loser gets CKPT_EBUSY).
 * A signal the process ignores when the handler is installed (a shell's
 * background job ignores SIGINT, nohup-like launchers others) stays
 * ignored: the handler takes only the signals in use. SIGTERM, the
 * preemption notice, ignored or blocked in the installing thread's signal
 * mask (both are inherited across exec) would give no final checkpoint:
 * install says so once, a warning through the session's log. */
#include "ckpt/hooks.h"
#include "session/session_internal.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>

_Static_assert(ATOMIC_INT_LOCK_FREE == 2,
               "the signal handler needs a lock-free atomic int");

static atomic_int preempt_signal;
static pthread_mutex_t owner_mu = PTHREAD_MUTEX_INITIALIZER;
static ckpt_monitored_session *preempt_owner; /* guarded by owner_mu */
static struct sigaction saved_term;
static struct sigaction saved_int;
static int took_term, took_int; /* the handler holds the signal */

static void on_signal(int signo)
{
    int expected = 0;
    if (atomic_compare_exchange_strong(&preempt_signal, &expected, signo))
        return;
    /* A second signal: give it its previous meaning. */
    sigaction(signo, signo == SIGTERM ? &saved_term : &saved_int, NULL);
    raise(signo);
}

static void detach_on_free(void)
{
    ckpt_preemption_handler_remove();
}

/* Put `sa` in place for `signo` unless the process ignores it; the old
 * disposition into `saved`, whether it was taken into `*took`. */
static int take_signal(int signo, const struct sigaction *sa,
                       struct sigaction *saved, int *took)
{
    *took = 0;
    if (sigaction(signo, NULL, saved) != 0)
        return -1;
    if (!(saved->sa_flags & SA_SIGINFO) && saved->sa_handler == SIG_IGN)
        return 0;
    if (sigaction(signo, sa, NULL) != 0)
        return -1;
    *took = 1;
    return 0;
}

/* Why SIGTERM, as found at install, cannot stop the session: NULL when
 * it can. `took` says whether the handler took it (it is not ignored). */
static const char *term_unusable(int took)
{
    sigset_t mask;
    if (!took)
        return "ignored (SIG_IGN, as the process started with it)";
    if (pthread_sigmask(SIG_BLOCK, NULL, &mask) == 0 &&
        sigismember(&mask, SIGTERM) == 1)
        return "blocked in the signal mask of the thread installing the "
               "handler (as the process started with it; unblock it with "
               "pthread_sigmask)";
    return NULL;
}

/* Install the handler for `ms` (owner_mu held); `*why_not` says why
 * SIGTERM will not stop it (term_unusable), for a newly installed one. */
static int install_locked(ckpt_monitored_session *ms, const char **why_not)
{
    struct sigaction sa;
    *why_not = NULL;
    if (preempt_owner == ms)
        return 0;
    if (preempt_owner)
        return ckpt__error(CKPT_EBUSY,
                           "preemption handler: another monitored session "
                           "holds it");
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    atomic_store(&preempt_signal, 0);
    if (take_signal(SIGTERM, &sa, &saved_term, &took_term) != 0)
        return ckpt__error_errno(errno, "preemption handler: SIGTERM");
    if (take_signal(SIGINT, &sa, &saved_int, &took_int) != 0) {
        int e = errno;
        if (took_term)
            sigaction(SIGTERM, &saved_term, NULL);
        return ckpt__error_errno(e, "preemption handler: SIGINT");
    }
    preempt_owner = ms;
    ckpt__ms_set_stop_source(ms, &preempt_signal, detach_on_free);
    *why_not = term_unusable(took_term);
    return 0;
}

int ckpt_preemption_handler_install(ckpt_monitored_session *ms)
{
    int err;
    const char *why_not;
    CKPT__CHECK_ARG(ms);
    pthread_mutex_lock(&owner_mu);
    err = install_locked(ms, &why_not);
    pthread_mutex_unlock(&owner_mu);
    /* outside owner_mu: the log is the caller's callback */
    if (err == 0 && why_not)
        ckpt__ms_log(ms, CKPT_LOG_WARN,
                     "preemption handler: SIGTERM is %s: a SIGTERM (a "
                     "preemption notice) will not stop the session, and no "
                     "final checkpoint is written for it",
                     why_not);
    return err;
}

void ckpt_preemption_handler_remove(void)
{
    pthread_mutex_lock(&owner_mu);
    if (preempt_owner) {
        if (took_term)
            sigaction(SIGTERM, &saved_term, NULL);
        if (took_int)
            sigaction(SIGINT, &saved_int, NULL);
        ckpt__ms_set_stop_source(preempt_owner, NULL, NULL);
        preempt_owner = NULL;
    }
    pthread_mutex_unlock(&owner_mu);
}

int ckpt_preemption_signal(void)
{
    return atomic_load(&preempt_signal);
}
