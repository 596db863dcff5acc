/* tests/crash/crash_util.h - helpers of the power-loss tests: a POSIX file
 * system whose fsyncs are no-ops (the fault file system models durability,
 * so real fsyncs only cost time), the model whose values every checkpoint
 * holds (derived from its step), and the checks run on a directory after a
 * simulated power cut. The checks never assert: they return a message, so
 * the caller can name the crash point that broke them. */
#ifndef CKPT_TESTS_CRASH_UTIL_H
#define CKPT_TESTS_CRASH_UTIL_H

#include "test_util.h"

#include "support/fs_fault.h"
#include "support/fs_forward.h"

#include <stddef.h>
#include <stdint.h>

/* The POSIX file system with sync and sync_dir doing nothing (the fault
 * file system models durability itself), into `out`; use &out->fs. */
void crash_nosync_fs(ckpt_fs_forward *out);

/* Elements of the model's variables: "w" (float), "global_step" (int64)
 * and "emb" (uint8; crash_set_emb_kib() sets its size, 4 KiB by default,
 * large enough in the long form for several writes per data file). */
#define CRASH_W_N 257

/* Set the size of "emb" in KiB for every later model (default 4). */
void crash_set_emb_kib(size_t kib);
size_t crash_emb_bytes(void);

typedef struct crash_model {
    float w[CRASH_W_N];
    int64_t step;
    uint8_t *emb;
    size_t emb_n;
} crash_model;

void crash_model_init(crash_model *m);
void crash_model_dispose(crash_model *m);
/* Set every value to the one of `step`. */
void crash_model_fill(crash_model *m, int64_t step);
/* 0 when `m` holds the values of `step`, else -1 with `why` set. */
int crash_model_check(const crash_model *m, int64_t step, char *why, size_t n);
/* Make every later crash_saver_open keep a checkpoint every `hours` hours
 * (keep_checkpoint_every_n_hours) by `clock` (NULL, 0: neither). */
void crash_set_keep_hours(double hours, const ckpt_clock *clock);

/* Open a saver on `dir` through `fs` with the model's variables.
 * Returns the saver's error (the saver is NULL then). */
int crash_saver_open(ckpt_saver **out, const char *dir, const ckpt_fs *fs,
                     int max_to_keep, crash_model *m, ckpt_save_done_fn done,
                     void *done_payload);

/* Open `prefix` with a fresh POSIX reader, verify every checksum and compare
 * the values with those of the step its name ends in. 0 or -1 (`why`). */
int crash_verify_checkpoint(const char *prefix, char *why, size_t n);

/* Names in `dir` starting with `prefix`. */
int crash_count_names(const char *dir, const char *prefix);

/* Names in `dir` that an interrupted save leaves as temporaries. */
int crash_count_temps(const char *dir);

/* Index files in `dir` whose single data file ("<stem>.data-00000-of-00001")
 * is missing: checkpoints that look present and can never be read, and
 * that no sweep removes. A power cut must never leave one behind the
 * recovery (crash_check_recovery), whether syncs succeed or fail (EIO). */
int crash_count_incomplete(const char *dir);

/* The state a power cut left in `dir`, checked with a fresh POSIX reader:
 * no state file is fine only when no save was reported durable
 * (`durable` < 0); otherwise the state file parses, its
 * model_checkpoint_path is its newest entry and ckpt_latest_checkpoint's
 * answer, every listed checkpoint verifies (crash_verify_checkpoint), and
 * the latest step lies in [durable, max_step]. `latest_out` receives that
 * step (-1: no state file) and `listed_out` the number of entries.
 * 0 or -1 (`why`). */
int crash_check_dir(const char *dir, int64_t durable, int64_t max_step,
                    int64_t *latest_out, size_t *listed_out, char *why,
                    size_t n);

/* Recovery after the cut: a saver opened on `dir` (through `fs`, normally the
 * crash_nosync_fs one) must succeed, remove every temporary file, keep the
 * `listed` checkpoints, restore `latest` (when >= 0), then save `step`
 * and leave a directory whose latest checkpoint is `step`. 0 or -1. */
int crash_check_recovery(const char *dir, const ckpt_fs *fs, int64_t latest,
                         size_t listed, int64_t step, char *why, size_t n);

/* "op path" (or "rename a -> b") of the first injected event of the
 * trace, or "no operation failed" when the cut came after the last one. */
void crash_describe_cut(const ckpt_fs_fault *ff, char *out, size_t n);

#endif
