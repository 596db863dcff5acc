/* saver/bg_thread.c - starting and stopping a saver's background thread,
 * the one step both savers' threads (ckpt_saver's writer, the MPI saver's
 * rank thread) take the same way: started once, stopped by setting the
 * saver's `stopping` under its mutex, waking the thread and joining it. */
#include "saver_internal.h"

#include "common/internal.h"

int ckpt__bg_thread_start(ckpt__bg_thread *t, void *(*main_fn)(void *),
                          void *arg, const char *what)
{
    int rc;
    if (t->started)
        return 0;
    rc = pthread_create(&t->id, NULL, main_fn, arg);
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
