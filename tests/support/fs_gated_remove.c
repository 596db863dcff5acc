/* tests/support/fs_gated_remove.c - the gated-remove file system (see
 * fs_gated_remove.h). */
#include "support/fs_gated_remove.h"

#include <string.h>
#include <time.h>
#include <unistd.h>

#define GATE_LIMIT_S 20

static int gated_remove(const char *path, void *payload)
{
    ckpt_fs_gated_remove *g = payload;
    const ckpt_fs *base = ckpt_fs_forward_base(payload);
    if (strstr(path, ".data-")) {
        time_t until = time(NULL) + GATE_LIMIT_S;
        atomic_fetch_add(&g->waiting, 1);
        while (atomic_load(&g->closed)) {
            if (time(NULL) > until) {
                atomic_store(&g->timed_out, 1);
                atomic_store(&g->closed, 0);
            }
            usleep(1000);
        }
        atomic_fetch_sub(&g->waiting, 1);
    }
    return base->remove(path, base->payload);
}

void ckpt_fs_gated_remove_init(ckpt_fs_gated_remove *g)
{
    memset(g, 0, sizeof(*g));
    ckpt_fs_forward_init(&g->fwd, NULL);
    g->fwd.fs.remove = gated_remove;
}
