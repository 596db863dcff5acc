/* tests/saver/saver_test_util.h - helpers for the saver tests: a fake
 * clock, a "gate" file system whose data writes block until the test opens
 * the gate (to observe a write in flight), and small directory queries. */
#ifndef CKPT_TESTS_SAVER_TEST_UTIL_H
#define CKPT_TESTS_SAVER_TEST_UTIL_H

#include "test_util.h"

#include "ckpt/sys/fs_fault.h"

#include <pthread.h>

typedef struct fake_clock {
    ckpt_clock clock;
    double now;
} fake_clock;

void fake_clock_init(fake_clock *c, double start);

/* Forwards to the POSIX fs; `write` calls block while the gate is closed and
 * `blocked` counts writers waiting at it. */
typedef struct gate_fs {
    ckpt_fs fs;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int closed;
    int blocked;
} gate_fs;

void gate_fs_init(gate_fs *g);
void gate_fs_dispose(gate_fs *g);
void gate_close(gate_fs *g);
void gate_open(gate_fs *g);
/* Wait until a writer is blocked at the gate. */
void gate_wait_blocked(gate_fs *g);

/* Number of names in `dir` containing `needle`. */
int count_files(const char *dir, const char *needle);
/* Whether dir/name exists. */
int file_exists(const char *dir, const char *name);

#endif
