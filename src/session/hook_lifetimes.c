/* session/hook_lifetimes.c - how long a hook's payload lives: the payloads
 * of the library's own hooks that are alive (so that a caller's copy of a
 * hook a session has since destroyed is recognised, never used), the
 * payloads live monitored sessions hold (so that ckpt_hook_free of a hook
 * handed to one is refused), destroying hooks once each, and
 * ckpt_hook_free. Both registries are process-wide: hooks move between
 * threads with their sessions. */
#include "session_internal.h"

#include "common/ptr_set.h"

#include <stdio.h>
#include <string.h>

static ckpt__ptr_set alive = CKPT__PTR_SET_INIT;
static ckpt__ptr_set held = CKPT__PTR_SET_INIT;

static int is_library_kind(int kind)
{
    return kind >= CKPT_HOOK_KIND_CHECKPOINT &&
           kind <= CKPT_HOOK_KIND_NAN_TENSOR;
}

int ckpt__hook_complete(ckpt_hook *out)
{
    if (ckpt__ptr_set_add(&alive, out->payload) == 0)
        return 0;
    out->destroy(out->payload);
    memset(out, 0, sizeof(*out));
    return ckpt__error_oom();
}

int ckpt__hook_is_destroyed(const ckpt_hook *h)
{
    return is_library_kind(h->kind) && h->payload &&
           !ckpt__ptr_set_has(&alive, h->payload);
}

static void destroy_one(const ckpt_hook *h)
{
    h->destroy(h->payload);
    if (is_library_kind(h->kind) && h->payload)
        ckpt__ptr_set_remove(&alive, h->payload);
}

void ckpt__hooks_destroy(const ckpt_hook *hooks, size_t n,
                         const ckpt_hook *before, size_t m)
{
    for (size_t i = 0; hooks && i < n; i++)
        if (hooks[i].destroy && !ckpt__hook_is_destroyed(&hooks[i]) &&
            !ckpt__hook_is_among(&hooks[i], hooks, i) &&
            !ckpt__hook_is_among(&hooks[i], before, m))
            destroy_one(&hooks[i]);
}

/* A payload that cannot be noted (no memory) is only not protected from a
 * ckpt_hook_free while the session holds it. */
void ckpt__hooks_hold(const ckpt_hook *hooks, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (hooks[i].payload && hooks[i].destroy &&
            ckpt__ptr_set_add(&held, hooks[i].payload) < 0)
            break;
}

void ckpt__hooks_destroy_held(const ckpt_hook *hooks, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (hooks[i].payload && hooks[i].destroy)
            ckpt__ptr_set_remove(&held, hooks[i].payload);
    ckpt__hooks_destroy(hooks, n, NULL, 0);
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
    if (!hook)
        return;
    name = hook->name ? hook->name : "unnamed";
    if (ckpt__hook_is_destroyed(hook)) {
        /* the library's hooks are named by static strings: safe to read */
        refuse(CKPT_ESTATE,
               "ckpt_hook_free: hook '%s' was already destroyed (by the "
               "monitored session it was handed to, when that was freed; "
               "or it is not the library's: a hook of your own must leave "
               "kind 0): nothing freed here",
               name);
        memset(hook, 0, sizeof(*hook));
        return;
    }
    if (hook->payload && hook->destroy &&
        ckpt__ptr_set_has(&held, hook->payload)) {
        refuse(CKPT_ESTATE,
               "ckpt_hook_free: hook '%s' was handed to a monitored "
               "session, which destroys it when it is freed: not freed here",
               name);
        return;
    }
    if (hook->destroy)
        destroy_one(hook);
    memset(hook, 0, sizeof(*hook));
}
