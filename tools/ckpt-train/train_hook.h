/* tools/ckpt-train/train_hook.h - the start of each of the trainer's own
 * hooks (the progress report, the restored-state check): a ckpt_hook of
 * this header's version with its name and payload and no callbacks yet,
 * which the hook's file then fills in. */
#ifndef CKPT_TRAIN_TRAIN_HOOK_H
#define CKPT_TRAIN_TRAIN_HOOK_H

#include "ckpt.h"

#include <string.h>

static inline ckpt_hook train_hook(const char *name, void *payload)
{
    ckpt_hook h;
    memset(&h, 0, sizeof(h));
    h.version = CKPT_HOOK_VERSION;
    h.name = name;
    h.payload = payload;
    return h;
}

#endif
