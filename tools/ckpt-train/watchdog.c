/* tools/ckpt-train/watchdog.c - see watchdog.h. The thread sleeps on a
 * condition variable until the deadline (CLOCK_MONOTONIC, so a change of
 * the wall clock neither fires nor delays it) or until disarmed. */
#include "watchdog.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* `t` plus `s` seconds. */
static struct timespec after(struct timespec t, double s)
{
    double whole = floor(s);
    t.tv_sec += (time_t)whole;
    t.tv_nsec += (long)((s - whole) * 1e9);
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    return t;
}

static void *watch(void *arg)
{
    train_watchdog *w = arg;
    struct timespec now, deadline;
    int fired = 0;
    clock_gettime(CLOCK_MONOTONIC, &now);
    deadline = after(now, w->timeout_s);
    pthread_mutex_lock(&w->mu);
    while (!w->disarmed && !fired)
        fired = pthread_cond_timedwait(&w->cv, &w->mu, &deadline) == ETIMEDOUT;
    fired = fired && !w->disarmed;
    pthread_mutex_unlock(&w->mu);
    if (fired) {
        ssize_t n = write(STDERR_FILENO, w->msg, w->msg_len);
        (void)n;
        _exit(TRAIN_WATCHDOG_STATUS);
    }
    return NULL;
}

int train_watchdog_arm(train_watchdog *w, double timeout_s, const char *msg)
{
    pthread_condattr_t ca;
    sigset_t all, before;
    int n, err;
    memset(w, 0, sizeof(*w));
    n = snprintf(w->msg, sizeof(w->msg), "%s", msg);
    w->msg_len = n < 0 ? 0 : (size_t)n;
    if (w->msg_len >= sizeof(w->msg))
        w->msg_len = sizeof(w->msg) - 1;
    /* a bound of more than ten years is none */
    w->timeout_s = timeout_s > 0 && timeout_s < 3.2e8 ? timeout_s : 3.2e8;
    pthread_mutex_init(&w->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cv, &ca);
    pthread_condattr_destroy(&ca);
    /* Every signal blocked in the thread (it inherits the mask it is
     * created with): a signal for the process (SIGTERM, SIGINT, the
     * process's own SIGALRM) is still taken by its other threads. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &before);
    err = pthread_create(&w->thread, NULL, watch, w);
    pthread_sigmask(SIG_SETMASK, &before, NULL);
    if (err != 0) {
        fprintf(stderr,
                "ckpt-train: warn: no thread to bound the next call "
                "(%s); it runs without a timeout\n",
                strerror(err));
        return -1;
    }
    w->running = 1;
    return 0;
}

void train_watchdog_disarm(train_watchdog *w)
{
    pthread_mutex_lock(&w->mu);
    w->disarmed = 1;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    if (w->running)
        pthread_join(w->thread, NULL);
    w->running = 0;
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
}
