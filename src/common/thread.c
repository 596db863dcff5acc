/* common/thread.c - starting the library's own threads (the saver's
 * writer, the MPI saver's rank thread, the read path's helpers) with a
 * stack of at least CKPT__THREAD_STACK_MIN. A thread's default stack is
 * the process's RLIMIT_STACK (`ulimit -s`, read by the C library at
 * start), which a hostile environment may set far below what the writer
 * needs (its commit takes tens of KiB of frames): with `ulimit -s 64` the
 * writer overflowed its stack and the process died of SIGSEGV. A default
 * at or above the floor is kept (a caller's callbacks on these threads may
 * rely on it), unless it cannot be mapped: a `ulimit -s` of a terabyte, or
 * one of gigabytes under a `ulimit -v`, failed every thread with EAGAIN,
 * and no checkpoint could be written at all; the thread is then started
 * again with the floor. It also gives each thread its token (a number
 * unique in the process's life), which the objects driven from one thread
 * (a saver, a monitored session) record to tell a re-entry on their own
 * thread from a call on another one.
 *
 * Also cancellation: a call that waits with a mutex held, or joins helper
 * threads that write into the caller's memory, runs with it disabled
 * (ckpt__cancel_off), since a pthread_cancel acted on inside it left the
 * mutex held (the writer blocked on it for ever) or the helpers running. */
#include "common/internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>

/* The least stack a library thread gets. */
#define CKPT__THREAD_STACK_MIN ((size_t)1 << 20)

int ckpt__cancel_off(void)
{
    int old = PTHREAD_CANCEL_ENABLE;
    (void)pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
    return old;
}

void ckpt__cancel_restore(int old_state)
{
    (void)pthread_setcancelstate(old_state, NULL);
}

int ckpt__thread_create(pthread_t *id, void *(*fn)(void *), void *arg)
{
    pthread_attr_t attr;
    size_t size = 0;
    int rc = pthread_attr_init(&attr);
    if (rc != 0)
        return rc;
    if (pthread_attr_getstacksize(&attr, &size) == 0 &&
        size < CKPT__THREAD_STACK_MIN)
        (void)pthread_attr_setstacksize(&attr, CKPT__THREAD_STACK_MIN);
    rc = pthread_create(id, &attr, fn, arg);
    if (rc == EAGAIN && size > CKPT__THREAD_STACK_MIN &&
        pthread_attr_setstacksize(&attr, CKPT__THREAD_STACK_MIN) == 0)
        rc = pthread_create(id, &attr, fn, arg); /* the default's mapping */
    pthread_attr_destroy(&attr);
    return rc;
}

/* Each thread's token, drawn at its first use from a process-wide count:
 * never 0 (no owner), never one an ended thread had. The address of a
 * thread-local byte was the token before, and a thread started after
 * another ended (glibc reuses the stack and thread-local block) got the
 * same one: it counted as the owner of a saver or session the ended
 * thread left held. */
static atomic_uintptr_t tokens_drawn;
static _Thread_local uintptr_t thread_token;

uintptr_t ckpt__thread_token(void)
{
    if (thread_token == 0)
        thread_token = atomic_fetch_add(&tokens_drawn, 1) + 1;
    return thread_token;
}
