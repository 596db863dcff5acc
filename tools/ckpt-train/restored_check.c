/* tools/ckpt-train/restored_check.c - see restored_check.h. */
#include "restored_check.h"
#include "train_hook.h"

static int after_create_session(ckpt_session *s, ckpt_coordinator *coord,
                                void *payload)
{
    restored_check *c = payload;
    char why[256];
    int position = 0, all;
    int ok =
        !c->complete || c->complete(why, sizeof(why), c->all_ok_payload) == 0;
    if (ok) {
        position = dataset_position_check(c->data, c->suffix, why, sizeof(why));
        ok = position == 0;
    }
    if (ok)
        ok = mlp_check_restored(c->model, why, sizeof(why)) == 0;
    all = c->all_ok ? c->all_ok(ok, c->all_ok_payload) : ok;
    (void)s;
    (void)coord;
    if (!ok) /* out of memory is not a damaged checkpoint */
        return ckpt_error_set(position == DATASET_CHECK_NOMEM ? CKPT_ENOMEM
                                                              : CKPT_ECORRUPT,
                              "%s", why);
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
