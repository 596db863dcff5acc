/* saver/saver_ops.c - ckpt_saver_wrap: a ckpt_saver handle over a saver
 * implemented elsewhere (a table of functions, ckpt_saver_ops), so the
 * checkpoint hook and the monitored session drive it through the ordinary
 * ckpt_saver_* calls. The public functions (saver.c, restore.c) forward to
 * the table when the handle has one. */
#include "saver_ops.h"
#include "saver_internal.h"

#include <stddef.h>
#include <string.h>

const ckpt_saver_ops *ckpt__saver_ops(const ckpt_saver *s)
{
    return s ? s->ops : NULL;
}

void *ckpt__saver_ops_self(const ckpt_saver *s)
{
    return s ? s->ops_self : NULL;
}

int ckpt__saver_collective(const ckpt_saver *s)
{
    return s && s->ops && s->ops->collective;
}

int ckpt__saver_agree(ckpt_saver *s, int *flag)
{
    if (!s || !s->ops || !s->ops->agree)
        return 0;
    return s->ops->agree(s->ops_self, flag);
}

int ckpt__saver_agree_outcome(ckpt_saver *s, int err)
{
    ckpt__saved_error own;
    int agreed;
    /* A version 1 or 2 table ends before the member. */
    if (!ckpt__saver_collective(s) || s->ops->version < 3 ||
        !s->ops->agree_outcome)
        return err;
    ckpt__error_save(&own);
    agreed = s->ops->agree_outcome(s->ops_self, err < 0 ? err : 0);
    if (err < 0)
        return ckpt__error_restore(&own); /* this process's own failure */
    return agreed;
}

int ckpt__saver_ops_saves_var(const ckpt_saver *s, const char *name,
                              const void *data)
{
    /* A version 1 table ends before the member. */
    if (s->ops->version < 2 || !s->ops->saves_var)
        return ckpt__error(CKPT_ENOTSUP,
                           "saves_var: the wrapped saver's ops do not "
                           "offer saves_var");
    return s->ops->saves_var(s->ops_self, name, data) ? 1 : 0;
}

void ckpt__saver_ops_set_owner(ckpt_saver *s, const char *owner_free)
{
    s->owner_free = owner_free;
}

void ckpt__saver_ops_free(ckpt_saver *s)
{
    if (s->ops->release)
        s->ops->release(s->ops_self);
    ckpt__free(s);
}

/* The first required member that is NULL, or NULL. */
static const char *missing_member(const ckpt_saver_ops *o)
{
#define REQUIRE(m)                                                             \
    if (!o->m)                                                                 \
        return #m;
    REQUIRE(save)
    REQUIRE(save_async)
    REQUIRE(poll)
    REQUIRE(wait)
    REQUIRE(close)
    REQUIRE(restore)
    REQUIRE(restore_latest)
    REQUIRE(latest)
    REQUIRE(get_metrics)
    REQUIRE(get_options)
    REQUIRE(set_on_save_done)
#undef REQUIRE
    return NULL;
}

int ckpt_saver_wrap(ckpt_saver **out, const ckpt_saver_ops *ops, void *self)
{
    ckpt_saver *s;
    const char *missing;
    int err;
    CKPT__CHECK_ARG(out);
    *out = NULL;
    CKPT__CHECK_ARG(ops);
    err = ckpt__options_check_version(ops->version, CKPT_SAVER_OPS_VERSION,
                                      "ckpt_saver_wrap: saver ops",
                                      "CKPT_SAVER_OPS_VERSION");
    if (err < 0)
        return err;
    missing = missing_member(ops);
    if (missing)
        return ckpt__error(CKPT_EINVAL,
                           "ckpt_saver_wrap: saver ops member '%s' is NULL",
                           missing);
    if (!ops->get_options(self) || !ops->get_options(self)->basename)
        return ckpt__error(CKPT_EINVAL,
                           "ckpt_saver_wrap: the saver's options name no "
                           "basename");
    s = ckpt__calloc(1, sizeof(*s));
    if (!s)
        return ckpt__error_oom();
    s->ops = ops;
    s->pid = ckpt__saver_pid();
    s->ops_self = self;
    *out = s;
    return 0;
}
