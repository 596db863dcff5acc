/* session/hook_lifetimes.c - how long a hook's payload lives: the payloads
 * of the library's own hooks that are alive (so that a caller's copy of a
 * hook a session has since destroyed is recognised, never used), the
 * payloads live monitored sessions hold (so that ckpt_hook_free of a hook
 * handed to one, or handing it to a second session, is refused),
 * destroying hooks once each, and ckpt_hook_free. Both registries are
 * process-wide (hooks move between threads with their sessions) and change
 * together under one mutex: a payload is taken out of `alive` (claimed)
 * before its destroy runs and out of `held` only after, so a
 * ckpt_hook_free racing a session's free finds it in one or the other.
 * A library hook is known by its payload and its serial (a number given
 * once per constructor call), so a stale copy is told apart from a newer
 * hook whose payload took the same memory; a hook with a library kind and
 * no serial is the caller's own, kind set by mistake. */
#include "session_internal.h"

#include "common/ptr_set.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

static pthread_mutex_t lifetimes_mu = PTHREAD_MUTEX_INITIALIZER;
static ckpt__ptr_set alive = CKPT__PTR_SET_INIT; /* payload, serial */
static ckpt__ptr_set held = CKPT__PTR_SET_INIT;  /* payload, 0 */
static unsigned long long last_serial;

static int is_library_kind(int kind)
{
    return kind >= CKPT_HOOK_KIND_CHECKPOINT &&
           kind <= CKPT_HOOK_KIND_NAN_TENSOR;
}

/* One of the library's hooks, by its kind and serial. */
static int is_library_hook(const ckpt_hook *h)
{
    return is_library_kind(h->kind) && h->serial != 0;
}

/* A hook of the caller's own with a library kind set. */
static int is_mislabelled(const ckpt_hook *h)
{
    return is_library_kind(h->kind) && h->serial == 0;
}

/* Whether `h` is a library hook no longer alive (a copy kept after its
 * destroy); the caller holds lifetimes_mu. */
static int is_destroyed_locked(const ckpt_hook *h)
{
    return is_library_hook(h) &&
           !ckpt__ptr_set_has(&alive, h->payload, h->serial);
}

static int is_held_locked(const ckpt_hook *h)
{
    return h->payload && h->destroy && ckpt__ptr_set_has(&held, h->payload, 0);
}

int ckpt__hook_complete(ckpt_hook *out)
{
    int rc;
    pthread_mutex_lock(&lifetimes_mu);
    out->serial = ++last_serial;
    rc = ckpt__ptr_set_add(&alive, out->payload, out->serial);
    pthread_mutex_unlock(&lifetimes_mu);
    if (rc == 0)
        return 0;
    out->destroy(out->payload);
    memset(out, 0, sizeof(*out));
    return ckpt__error_oom();
}

int ckpt__hook_is_live(const ckpt_hook *h)
{
    int live;
    if (!is_library_hook(h))
        return 0;
    pthread_mutex_lock(&lifetimes_mu);
    live = !is_destroyed_locked(h);
    pthread_mutex_unlock(&lifetimes_mu);
    return live;
}

int ckpt__hook_check_usable(const ckpt_hook *h, const char *label)
{
    const char *name = h->name ? h->name : "unnamed";
    int destroyed, held_elsewhere;
    pthread_mutex_lock(&lifetimes_mu);
    destroyed = is_destroyed_locked(h);
    held_elsewhere = !destroyed && is_held_locked(h);
    pthread_mutex_unlock(&lifetimes_mu);
    /* the library's hooks are named by static strings: safe to read */
    if (destroyed)
        return ckpt__error(CKPT_EINVAL,
                           "%s ('%s') is a copy of one of the library's "
                           "hooks that the monitored session it was handed "
                           "to destroyed when it was freed: make the hook "
                           "again",
                           label, name);
    if (is_mislabelled(h))
        return ckpt__error(CKPT_EINVAL,
                           "%s ('%s') has kind %d, which only the library's "
                           "hook constructors set: leave kind 0 "
                           "(CKPT_HOOK_KIND_USER) in a hook of your own",
                           label, name, h->kind);
    if (held_elsewhere)
        return ckpt__error(CKPT_EINVAL,
                           "%s ('%s') is held by another monitored session, "
                           "which runs it and destroys it when it is freed: "
                           "make a hook for each session",
                           label, name);
    return 0;
}

/* Destroy `h` unless it is a library hook already claimed (by a racing
 * ckpt_hook_free, or destroyed before) or, for any but its holder, one a
 * live session holds (a copy of it given to a failed creation). */
static void destroy_one(const ckpt_hook *h, int holder)
{
    int skip = 0;
    pthread_mutex_lock(&lifetimes_mu);
    if (!holder && h->payload && ckpt__ptr_set_has(&held, h->payload, 0))
        skip = 1;
    else if (is_library_hook(h)) {
        skip = is_destroyed_locked(h);
        if (!skip) /* claimed */
            ckpt__ptr_set_remove(&alive, h->payload, h->serial);
    }
    pthread_mutex_unlock(&lifetimes_mu);
    if (!skip)
        h->destroy(h->payload);
}

static void destroy_each_once(const ckpt_hook *hooks, size_t n,
                              const ckpt_hook *before, size_t m, int holder)
{
    for (size_t i = 0; hooks && i < n; i++)
        if (hooks[i].destroy && !ckpt__hook_is_among(&hooks[i], hooks, i) &&
            !ckpt__hook_is_among(&hooks[i], before, m))
            destroy_one(&hooks[i], holder);
}

void ckpt__hooks_destroy(const ckpt_hook *hooks, size_t n,
                         const ckpt_hook *before, size_t m)
{
    destroy_each_once(hooks, n, before, m, 0);
}

/* A payload that cannot be noted (no memory) is only not protected from a
 * ckpt_hook_free, or a second session, while the session holds it. */
void ckpt__hooks_hold(const ckpt_hook *hooks, size_t n)
{
    pthread_mutex_lock(&lifetimes_mu);
    for (size_t i = 0; i < n; i++)
        if (hooks[i].payload && hooks[i].destroy &&
            ckpt__ptr_set_add(&held, hooks[i].payload, 0) < 0)
            break;
    pthread_mutex_unlock(&lifetimes_mu);
}

void ckpt__hooks_destroy_held(const ckpt_hook *hooks, size_t n)
{
    /* destroyed first, released after: a ckpt_hook_free meanwhile finds
     * the payload held (or, for the library's, claimed) */
    destroy_each_once(hooks, n, NULL, 0, 1);
    pthread_mutex_lock(&lifetimes_mu);
    for (size_t i = 0; i < n; i++)
        if (hooks[i].payload && hooks[i].destroy)
            ckpt__ptr_set_remove(&held, hooks[i].payload, 0);
    pthread_mutex_unlock(&lifetimes_mu);
}

/* Record `code` with the message, and log it on stderr at ERROR: the
 * caller of a void function sees it there. */
static void refuse(int code, const char *fmt, const char *name)
{
    char msg[512];
    ckpt__error(code, fmt, name);
    snprintf(msg, sizeof(msg), "%s", ckpt_error_last()->message);
    ckpt_log_stderr(CKPT_LOG_ERROR, msg, NULL);
}

void ckpt_hook_free(ckpt_hook *hook)
{
    const char *name;
    int destroyed = 0, is_held = 0;
    if (!hook)
        return;
    name = hook->name ? hook->name : "unnamed";
    pthread_mutex_lock(&lifetimes_mu);
    if (is_destroyed_locked(hook))
        destroyed = 1;
    else if (is_held_locked(hook))
        is_held = 1;
    else if (is_library_hook(hook)) /* claimed */
        ckpt__ptr_set_remove(&alive, hook->payload, hook->serial);
    pthread_mutex_unlock(&lifetimes_mu);
    if (destroyed) {
        refuse(CKPT_ESTATE,
               "ckpt_hook_free: hook '%s' was already destroyed (by the "
               "monitored session it was handed to, when that was freed): "
               "nothing freed here",
               name);
        memset(hook, 0, sizeof(*hook));
        return;
    }
    if (is_held) {
        refuse(CKPT_ESTATE,
               "ckpt_hook_free: hook '%s' was handed to a monitored "
               "session, which destroys it when it is freed: not freed here",
               name);
        return;
    }
    if (hook->destroy)
        hook->destroy(hook->payload);
    memset(hook, 0, sizeof(*hook));
}
