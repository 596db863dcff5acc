/* saver/bg_thread.c - starting and stopping a saver's background thread,
 * the one step both savers' threads (ckpt_saver's writer, the MPI saver's
 * rank thread) take the same way: started once, stopped by setting the
 * saver's `stopping` under its mutex, waking the thread and joining it;
 * a thread that cannot be started is CKPT_ENOMEM and leaves nothing
 * started (the next start tries again); and which saver, if any, the
 * calling thread works for (so that a callback
 * on it calling back into that saver is refused instead of waiting for
 * itself). */
#include "saver_internal.h"

#include "common/internal.h"

#include <errno.h>
#include <string.h>

/* The `arg` (the saver) of the background thread running on this thread;
 * NULL on every other thread. */
static _Thread_local const void *running_for;

static void *thread_main(void *p)
{
    const ckpt__bg_thread *t = p;
    running_for = t->arg;
    return t->main_fn(t->arg);
}

int ckpt__bg_thread_runs_for(const void *arg)
{
    return arg && running_for == arg;
}

int ckpt__bg_thread_start(ckpt__bg_thread *t, void *(*main_fn)(void *),
                          void *arg, const char *what)
{
    int rc;
    if (t->started)
        return 0;
    t->main_fn = main_fn;
    t->arg = arg;
    rc = ckpt__thread_create(&t->id, thread_main, t);
    /* EAGAIN: no resources for another thread (RLIMIT_NPROC, memory for
     * its stack), a resource like memory rather than an I/O error. The
     * thread is not started, so the next call tries again. */
    if (rc == EAGAIN)
        return ckpt__error(CKPT_ENOMEM, "%s: %s", what, strerror(rc));
    if (rc != 0)
        return ckpt__error_errno(rc, "%s", what);
    t->started = 1;
    return 0;
}

void ckpt__bg_thread_stop(ckpt__bg_thread *t, pthread_mutex_t *mu,
                          pthread_cond_t *cv, int *stopping)
{
    if (!t->started)
        return;
    pthread_mutex_lock(mu);
    *stopping = 1;
    pthread_cond_broadcast(cv);
    pthread_mutex_unlock(mu);
    pthread_join(t->id, NULL);
    t->started = 0;
}
