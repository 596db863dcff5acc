/* tests/saver/saver_test_util.h - helpers for the saver tests: a "gate"
 * file system whose data writes block until the test opens the gate (to
 * observe a write in flight) and which records the largest write and how
 * data files were opened, a file system holding and failing the opens of
 * two steps' data files, and
 * small directory queries. The fake clock
 * and the fault file system come from the testing library. */
#ifndef CKPT_TESTS_SAVER_TEST_UTIL_H
#define CKPT_TESTS_SAVER_TEST_UTIL_H

#include "test_util.h"

#include "support/fake_clock.h"
#include "support/fs_fault.h"
#include "support/fs_forward.h"

#include <pthread.h>
#include <stdatomic.h>

/* Forwards to the POSIX fs (without direct reads); `write` calls block
 * while the gate is closed and `blocked` counts writers waiting at it.
 * Hand &fwd.fs to the library. */
typedef struct gate_fs {
    ckpt_fs_forward fwd; /* first: the methods' payload is the gate_fs */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int closed;
    int blocked;
    size_t largest_write; /* the largest `write` call's size so far */
    int data_opens;       /* data files (".data-" in the name) opened */
    int data_direct[32];  /* whether each of the first 32 asked for
                             CKPT_OPEN_DIRECT */
    int fail_writes;      /* set: every write past the gate fails (EIO) */
} gate_fs;

void gate_fs_init(gate_fs *g);
void gate_fs_dispose(gate_fs *g);
void gate_close(gate_fs *g);
void gate_open(gate_fs *g);
/* Wait until a writer is blocked at the gate. */
void gate_wait_blocked(gate_fs *g);

/* Forwards to the POSIX fs (without direct reads), but the opens of step
 * 1's data file ("model.ckpt-1.data-") wait for `release1` and then fail
 * (CKPT_EIO, "injected failure"), and those of step 2's wait for
 * `release2`: a failure waiting to be returned while the next write is
 * held. `held1` / `held2` are set while such an open waits; each waits at
 * most 20 s, then sets `gave_up` and goes on, so a test that would hang
 * fails. Hand &fwd.fs to the library. */
typedef struct held_opens {
    ckpt_fs_forward fwd; /* first: the methods' payload */
    atomic_int release1, release2;
    atomic_int held1, held2;
    atomic_int gave_up;
} held_opens;

void held_opens_init(held_opens *h);
/* Wait until `*flag` (h->held1 or h->held2) is set, or an open gave up. */
void held_opens_wait(held_opens *h, atomic_int *flag);

/* Number of names in `dir` containing `needle`. */
int count_files(const char *dir, const char *needle);
/* Whether dir/name exists. */
int file_exists(const char *dir, const char *name);
/* What a directory holds, for "nothing was touched" checks: each entry's
 * name, size and modification time (ns), sorted by name, one per line,
 * in a string the caller frees. NULL if the directory cannot be read or
 * memory runs out (never a listing cut short). */
char *dir_signature(const char *dir);

#endif
