/* io/read_verdicts.h - what the read path remembers per device: the
 * verdict of the last probe (O_DIRECT or the page cache, and the two rates
 * it measured) on a device, so that the next reads of files there skip the
 * probe for a while. Process-wide (docs/threading.md), under one mutex.
 * Not installed.
 *
 *   key:     (the ckpt_fs table, its device_id of the file)
 *   entry:   verdict + when it was probed + how many reads it served
 *   reused:  at most CKPT__VERDICT_MAX_USES reads and CKPT__VERDICT_MAX_AGE_S
 *            seconds after its probe, then the next read probes again
 *
 * A page-cache verdict is reused from its first probe: buffered reads are
 * what read() does, so a wrong one costs no more than plain reads. An
 * O_DIRECT verdict is reused only once two probes in a row on the device
 * found it (the second confirms the first): one probe times four single
 * reads, and on a shared machine one stalled buffered read can make
 * O_DIRECT look twice as fast; remembered, that noise would read every
 * file of the next minute at half speed (the likely cause of one bench
 * run on this project's VM with 4 of 5 cold restores at 0.6-0.7x read()).
 *
 * A ckpt_fs without device_id (or whose device_id fails) has no key: its
 * files are probed every time. */
#ifndef CKPT_IO_READ_VERDICTS_H
#define CKPT_IO_READ_VERDICTS_H

#include "ckpt/clock.h"
#include "ckpt/io.h"

#include <stdint.h>

/* How long a verdict lasts. The probe costs about a millisecond or two
 * (1 MiB read both ways, two reader threads, extra opens): reused for 32
 * reads its cost falls to a few percent of what probing each file cost,
 * while a device whose speed changes (the host's cache fills or drains,
 * another tenant, a remount) is measured again within a minute or 32
 * reads, whichever comes first. */
#define CKPT__VERDICT_MAX_USES 32
#define CKPT__VERDICT_MAX_AGE_S 60.0

typedef struct ckpt__device_key {
    const ckpt_fs *fs;
    uint64_t id;
} ckpt__device_key;

typedef struct ckpt__read_verdict {
    int mode; /* CKPT__READ_DIRECT or CKPT__READ_BUFFERED */
    double direct_bytes_per_s, buffered_bytes_per_s; /* the probe's rates */
} ckpt__read_verdict;

/* The key of the device holding `path` on `fs`: 1 when `fs` says its
 * device (device_id), 0 when it cannot (the last error is left as it
 * was). */
int ckpt__read_verdict_key(const ckpt_fs *fs, const char *path,
                           ckpt__device_key *key);

/* The verdict remembered for `key` into `out` and 1, counting one use;
 * 0 when there is none, it waits for confirmation (O_DIRECT once), or it
 * has served its uses or its time. */
int ckpt__read_verdict_recall(const ckpt__device_key *key,
                              ckpt__read_verdict *out);

/* Remember the verdict of a probe just made on `key` (replacing any
 * before, which confirms an O_DIRECT verdict when it was one too; when
 * the table is full, the oldest entry gives way). */
void ckpt__read_verdict_remember(const ckpt__device_key *key,
                                 const ckpt__read_verdict *v);

/* For tests: forget every verdict and time them by `clock` from now on
 * (NULL: the system clock). Call while no read runs. */
void ckpt__read_verdicts_reset(const ckpt_clock *clock);

#endif
