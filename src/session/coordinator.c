/* session/coordinator.c - TensorFlow's Coordinator: a stop flag, the first
 * non-clean error reported by any thread, and the threads to wait for at
 * join. Thread-safe: every member is guarded by one mutex; waits are
 * condition-variable waits on CLOCK_MONOTONIC (no polling), and the
 * injectable clock only measures what the messages report. A thread
 * cancelled (pthread_cancel) inside a wait releases the mutex as it goes
 * (a cleanup handler): the waits stay cancellation points, as a thread
 * blocked in wait_for_stop is what an application cancels. */
#include "session_internal.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

typedef struct coord_thread {
    int id;
    char *name;
    int done;
} coord_thread;

struct ckpt_coordinator {
    pthread_mutex_t mu;
    pthread_cond_t cond; /* signalled on stop requests and thread ends */
    const ckpt_clock *clock;
    int stop;
    int err;
    char *err_message;
    int joined;
    coord_thread *threads;
    size_t num_threads;
    size_t cap_threads;
    int next_id;
};

int ckpt_coordinator_new(ckpt_coordinator **out, const ckpt_clock *clock)
{
    ckpt_coordinator *c;
    pthread_condattr_t attr;
    int rc;
    CKPT__CHECK_ARG(out);
    *out = NULL;
    if (ckpt__clock_check(clock, "coordinator_new") < 0)
        return ckpt_error_last()->code;
    c = ckpt__calloc(1, sizeof(*c));
    if (!c)
        return ckpt__error_oom();
    rc = pthread_condattr_init(&attr);
    if (rc == 0) {
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        rc = pthread_cond_init(&c->cond, &attr);
        pthread_condattr_destroy(&attr);
    }
    if (rc != 0) {
        ckpt__free(c);
        return ckpt__error_errno(rc, "coordinator: condition variable");
    }
    rc = pthread_mutex_init(&c->mu, NULL);
    if (rc != 0) {
        pthread_cond_destroy(&c->cond);
        ckpt__free(c);
        return ckpt__error_errno(rc, "coordinator: mutex");
    }
    c->clock = clock;
    c->next_id = 1;
    *out = c;
    return 0;
}

static void forget_threads(ckpt_coordinator *c)
{
    for (size_t i = 0; i < c->num_threads; i++)
        ckpt__free(c->threads[i].name);
    c->num_threads = 0;
}

void ckpt_coordinator_free(ckpt_coordinator *c)
{
    if (!c)
        return;
    forget_threads(c);
    ckpt__free(c->threads);
    ckpt__free(c->err_message);
    pthread_cond_destroy(&c->cond);
    pthread_mutex_destroy(&c->mu);
    ckpt__free(c);
}

int ckpt_coordinator_request_stop(ckpt_coordinator *c, int err,
                                  const char *message)
{
    CKPT__CHECK_ARG(c);
    if (err > 0 || ckpt_is_clean_end(err))
        err = 0;
    pthread_mutex_lock(&c->mu);
    if (c->joined && err != 0) {
        pthread_mutex_unlock(&c->mu);
        return ckpt__error(err, "%s", message ? message : ckpt_strerror(err));
    }
    if (err != 0 && !c->stop && c->err == 0) {
        c->err = err;
        /* Without memory the code is still kept; the message is lost. */
        c->err_message = message ? ckpt__strdup(message) : NULL;
    }
    c->stop = 1;
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->mu);
    return 0;
}

int ckpt_coordinator_should_stop(ckpt_coordinator *c)
{
    int stop;
    if (!c)
        return 0;
    pthread_mutex_lock(&c->mu);
    stop = c->stop;
    pthread_mutex_unlock(&c->mu);
    return stop;
}

/* The CLOCK_MONOTONIC time `seconds` from now. */
static struct timespec deadline_after(double seconds)
{
    struct timespec ts;
    double whole;
    double frac;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    if (seconds > 1e9)
        seconds = 1e9;
    frac = modf(seconds, &whole);
    ts.tv_sec += (time_t)whole;
    ts.tv_nsec += (long)(frac * 1e9);
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

/* pthread_cleanup_push handler: a cancelled condition wait returns with
 * the mutex held. */
static void unlock_on_cancel(void *mu)
{
    pthread_mutex_unlock(mu);
}

/* Wait (mu held) until `done` or the `deadline` (NULL: none); cancelled
 * meanwhile, the thread releases mu as it goes. */
static void wait_until(ckpt_coordinator *c, int (*done)(ckpt_coordinator *),
                       const struct timespec *deadline)
{
    pthread_cleanup_push(unlock_on_cancel, &c->mu);
    while (!done(c)) {
        if (!deadline)
            pthread_cond_wait(&c->cond, &c->mu);
        else if (pthread_cond_timedwait(&c->cond, &c->mu, deadline) ==
                 ETIMEDOUT)
            break;
    }
    pthread_cleanup_pop(0);
}

static int stopped(ckpt_coordinator *c)
{
    return c->stop;
}

int ckpt_coordinator_wait_for_stop(ckpt_coordinator *c, double timeout_s)
{
    struct timespec deadline;
    int stop;
    if (!c)
        return 0;
    if (timeout_s != timeout_s) /* NaN: no wait, as join's grace */
        timeout_s = 0;
    if (timeout_s >= 0)
        deadline = deadline_after(timeout_s);
    pthread_mutex_lock(&c->mu);
    wait_until(c, stopped, timeout_s < 0 ? NULL : &deadline);
    stop = c->stop;
    pthread_mutex_unlock(&c->mu);
    return stop;
}

void ckpt_coordinator_clear_stop(ckpt_coordinator *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    c->stop = 0;
    c->err = 0;
    ckpt__free(c->err_message);
    c->err_message = NULL;
    c->joined = 0;
    pthread_mutex_unlock(&c->mu);
}

/* Record the coordinator's error (caller holds the lock) as the calling
 * thread's last error and return its code. */
static int report_recorded(const ckpt_coordinator *c)
{
    if (c->err == 0)
        return 0;
    return ckpt__error(c->err, "%s",
                       c->err_message ? c->err_message : ckpt_strerror(c->err));
}

int ckpt_coordinator_recorded_error(ckpt_coordinator *c)
{
    int err;
    if (!c)
        return 0;
    pthread_mutex_lock(&c->mu);
    err = report_recorded(c);
    pthread_mutex_unlock(&c->mu);
    return err;
}

int ckpt_coordinator_register_thread(ckpt_coordinator *c, const char *name,
                                     int *id_out)
{
    coord_thread *t;
    int err = 0;
    CKPT__CHECK_ARG(id_out);
    *id_out = 0; /* ids start at 1 */
    CKPT__CHECK_ARG(c);
    pthread_mutex_lock(&c->mu);
    if (c->num_threads == c->cap_threads) {
        size_t cap = c->cap_threads ? c->cap_threads * 2 : 4;
        coord_thread *p = ckpt__realloc(c->threads, cap * sizeof(*p));
        if (!p) {
            err = ckpt__error_oom();
            goto done;
        }
        c->threads = p;
        c->cap_threads = cap;
    }
    t = &c->threads[c->num_threads];
    t->name = ckpt__strdup(name ? name : "thread");
    if (!t->name) {
        err = ckpt__error_oom();
        goto done;
    }
    t->id = c->next_id++;
    t->done = 0;
    c->num_threads++;
    *id_out = t->id;
done:
    pthread_mutex_unlock(&c->mu);
    return err;
}

void ckpt_coordinator_thread_done(ckpt_coordinator *c, int id)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < c->num_threads; i++) {
        if (c->threads[i].id == id)
            c->threads[i].done = 1;
    }
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->mu);
}

static size_t count_live(const ckpt_coordinator *c)
{
    size_t n = 0;
    for (size_t i = 0; i < c->num_threads; i++)
        n += c->threads[i].done ? 0 : 1;
    return n;
}

/* "a, b, c" of the live threads into `out` (caller holds the lock). */
static void live_names(const ckpt_coordinator *c, char *out, size_t n)
{
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < c->num_threads && used + 1 < n; i++) {
        int w;
        if (c->threads[i].done)
            continue;
        w = snprintf(out + used, n - used, "%s%s", used ? ", " : "",
                     c->threads[i].name);
        if (w < 0)
            break;
        used += (size_t)w;
    }
}

static int stopped_or_all_done(ckpt_coordinator *c)
{
    return c->stop || count_live(c) == 0;
}

static int all_done(ckpt_coordinator *c)
{
    return count_live(c) == 0;
}

int ckpt_coordinator_join(ckpt_coordinator *c, double grace_s,
                          int ignore_live_threads)
{
    struct timespec deadline;
    char names[512];
    double started;
    size_t live;
    int err;
    CKPT__CHECK_ARG(c);
    if (!(grace_s >= 0))
        grace_s = 0;
    started = ckpt_clock_monotonic(c->clock);
    pthread_mutex_lock(&c->mu);
    /* First every thread ends or someone asks to stop... */
    wait_until(c, stopped_or_all_done, NULL);
    /* ...then the stragglers get the grace period. */
    deadline = deadline_after(grace_s);
    wait_until(c, all_done, &deadline);
    live = count_live(c);
    live_names(c, names, sizeof(names));
    forget_threads(c);
    c->joined = 1;
    err = report_recorded(c);
    pthread_mutex_unlock(&c->mu);
    if (err < 0)
        return err;
    if (live > 0 && !ignore_live_threads)
        return ckpt__error(CKPT_ETIMEDOUT,
                           "coordinator: %zu thread(s) still running %.3f s "
                           "after the stop (grace period %.3f s): %s",
                           live, ckpt_clock_monotonic(c->clock) - started,
                           grace_s, names);
    return 0;
}
