/* io/read_verdicts.c - the per-device memory of the read path's probe
 * (read_verdicts.h): a fixed table of a few entries under one mutex. It
 * is process-wide state (docs/threading.md): readers on any thread, of any
 * saver, bundle reader or MPI restore, share what was measured on a device
 * of the same ckpt_fs table. */
#include "read_verdicts.h"

#include "common/internal.h"
#include "direct_read.h"
#include "fs_internal.h"

#include <pthread.h>
#include <string.h>

/* Devices remembered at once: a process reads from a handful (local disk,
 * a scratch volume, a network file system); beyond that the oldest
 * verdict gives way and its device is probed again. */
#define SLOTS 8

typedef struct verdict_entry {
    int in_use;
    ckpt__device_key key;
    ckpt__read_verdict verdict;
    int confirmed;    /* may be recalled (see read_verdicts.h) */
    double probed_at; /* monotonic seconds */
    unsigned uses;    /* reads it served since */
} verdict_entry;

static pthread_mutex_t verdicts_mu = PTHREAD_MUTEX_INITIALIZER;
static verdict_entry verdicts[SLOTS];    /* under verdicts_mu */
static const ckpt_clock *verdicts_clock; /* NULL: the system clock */

int ckpt__read_verdict_key(const ckpt_fs *fs, const char *path,
                           ckpt__device_key *key)
{
    ckpt__saved_error saved;
    uint64_t id = 0;
    memset(key, 0, sizeof(*key));
    ckpt__error_save(&saved);
    if (ckpt__fs_device_id(fs, path, &id) < 0) {
        /* no device_id (or it failed): no key, the read probes */
        ckpt__error_restore(&saved);
        return 0;
    }
    key->fs = fs;
    key->id = id;
    return 1;
}

static verdict_entry *find(const ckpt__device_key *key)
{
    for (int i = 0; i < SLOTS; i++)
        if (verdicts[i].in_use && verdicts[i].key.fs == key->fs &&
            verdicts[i].key.id == key->id)
            return &verdicts[i];
    return NULL;
}

int ckpt__read_verdict_recall(const ckpt__device_key *key,
                              ckpt__read_verdict *out)
{
    verdict_entry *e;
    int found = 0;
    pthread_mutex_lock(&verdicts_mu);
    e = find(key);
    if (e && e->confirmed) {
        double age = ckpt_clock_monotonic(verdicts_clock) - e->probed_at;
        /* a clock that went back (a test's) makes the verdict stale too */
        if (e->uses >= CKPT__VERDICT_MAX_USES || age < 0 ||
            age >= CKPT__VERDICT_MAX_AGE_S) {
            e->in_use = 0;
        } else {
            e->uses++;
            *out = e->verdict;
            found = 1;
        }
    }
    pthread_mutex_unlock(&verdicts_mu);
    return found;
}

void ckpt__read_verdict_remember(const ckpt__device_key *key,
                                 const ckpt__read_verdict *v)
{
    verdict_entry *e;
    int confirmed = v->mode != CKPT__READ_DIRECT;
    pthread_mutex_lock(&verdicts_mu);
    e = find(key);
    if (e && v->mode == CKPT__READ_DIRECT &&
        e->verdict.mode == CKPT__READ_DIRECT)
        confirmed = 1; /* the probe before said so too */
    for (int i = 0; !e && i < SLOTS; i++)
        if (!verdicts[i].in_use)
            e = &verdicts[i];
    if (!e) { /* full: the oldest gives way */
        e = &verdicts[0];
        for (int i = 1; i < SLOTS; i++)
            if (verdicts[i].probed_at < e->probed_at)
                e = &verdicts[i];
    }
    e->in_use = 1;
    e->key = *key;
    e->verdict = *v;
    e->confirmed = confirmed;
    e->probed_at = ckpt_clock_monotonic(verdicts_clock);
    e->uses = 0;
    pthread_mutex_unlock(&verdicts_mu);
}

void ckpt__read_verdicts_reset(const ckpt_clock *clock)
{
    pthread_mutex_lock(&verdicts_mu);
    memset(verdicts, 0, sizeof(verdicts));
    verdicts_clock = clock;
    pthread_mutex_unlock(&verdicts_mu);
}
