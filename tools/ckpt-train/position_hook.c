/* tools/ckpt-train/position_hook.c - see position_hook.h. */
#include "position_hook.h"

#include <string.h>

static int after_create_session(ckpt_session *s, ckpt_coordinator *coord,
                                void *payload)
{
    position_hook *p = payload;
    char why[256];
    int ok = (!p->complete ||
              p->complete(why, sizeof(why), p->all_ok_payload) == 0) &&
             dataset_position_check(p->data, p->suffix, why, sizeof(why)) == 0;
    int all = p->all_ok ? p->all_ok(ok, p->all_ok_payload) : ok;
    (void)s;
    (void)coord;
    if (!ok)
        return ckpt_error_set(CKPT_ECORRUPT, "%s", why);
    if (!all)
        return ckpt_error_set(CKPT_ECORRUPT,
                              "another rank's restored reading position is "
                              "not one this program writes (that rank says "
                              "which)");
    return 0;
}

ckpt_hook position_check_hook(position_hook *p)
{
    ckpt_hook h;
    memset(&h, 0, sizeof(h));
    h.version = CKPT_HOOK_VERSION;
    h.name = "PositionCheckHook";
    h.payload = p;
    h.after_create_session = after_create_session;
    return h;
}
