/* tools/ckpt-train/restored_check.c - see restored_check.h. */
#include "restored_check.h"
#include "train_hook.h"

static int after_create_session(ckpt_session *s, ckpt_coordinator *coord,
                                void *payload)
{
    restored_check *c = payload;
    char why[256];
    int ok =
        (!c->complete ||
         c->complete(why, sizeof(why), c->all_ok_payload) == 0) &&
        dataset_position_check(c->data, c->suffix, why, sizeof(why)) == 0 &&
        mlp_check_restored(c->model, why, sizeof(why)) == 0;
    int all = c->all_ok ? c->all_ok(ok, c->all_ok_payload) : ok;
    (void)s;
    (void)coord;
    if (!ok)
        return ckpt_error_set(CKPT_ECORRUPT, "%s", why);
    if (!all)
        return ckpt_error_set(CKPT_ECORRUPT,
                              "another rank's restored state is not one this "
                              "program writes (that rank says which)");
    return 0;
}

ckpt_hook restored_check_hook(restored_check *c)
{
    ckpt_hook h = train_hook("RestoredStateCheckHook", c);
    h.after_create_session = after_create_session;
    return h;
}
