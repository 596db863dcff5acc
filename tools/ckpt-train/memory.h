/* tools/ckpt-train/memory.h - what ckpt-train's memory comes to, before
 * any of it is allocated: the bytes its options need (the model with its
 * Adam moments, gradients and activations, an async save's staging copy
 * of the checkpointed state, the data set), checked against what this
 * process can have at most (physical memory, ulimit -v, ulimit -d), so a
 * model that cannot fit is refused at once with the options and the bytes
 * named, not OOM-killed or failing with a vague message later; and an
 * allocation that names what it allocates when it fails. */
#ifndef CKPT_TRAIN_MEMORY_H
#define CKPT_TRAIN_MEMORY_H

#include "options.h"

#include <stddef.h>
#include <stdint.h>

/* The synthetic data set both trainers train on: examples, features per
 * example, classes (the MLP's input and output widths). */
#define DATA_N 4096
#define DATA_DIM 32
#define DATA_CLASSES 10

/* What a run of the given options allocates, in bytes. */
typedef struct train_memory {
    uint64_t model;     /* weights, biases, both Adam moments, gradients and
                           activations of every layer */
    uint64_t state;     /* of which checkpointed: weights, biases, moments */
    uint64_t staging;   /* an async save's copy of the checkpointed state
                           (this rank's share with --distributed) */
    uint64_t data;      /* the data set, two reading positions, a batch, and
                           with --distributed the packed gradients */
    uint64_t total;     /* model + staging + data */
    uint64_t allreduce; /* --distributed: floats the gradients' average
                           reduces in one MPI call (every gradient and the
                           stop vote); 0 otherwise */
} train_memory;

/* Fill `m` for the options `o` (hidden, layers, batch, mode), trained by
 * the single-process trainer (`ranks` 0) or as one of `ranks` ranks of
 * --distributed. 0, or -1 when a count overflows 64 bits (or the address
 * space of this build: SIZE_MAX). */
int train_memory_plan(const train_options *o, int ranks, train_memory *m);

/* The most memory this process can have: the smallest of physical memory,
 * RLIMIT_AS and RLIMIT_DATA (soft limits), and what it is ("physical
 * memory", "the address-space limit (ulimit -v)", "the data-segment
 * limit (ulimit -d)") into *what. UINT64_MAX when none is known. */
uint64_t train_memory_limit(const char **what);

/* The plan of the options checked against train_memory_limit: 0 when it
 * may fit, else 2 (a usage error) after a message on stderr naming the
 * options, the bytes they need and the limit (`prefix` starts it:
 * "ckpt-train: " or "ckpt-train: rank R: "). With --distributed (`ranks`
 * > 0) a gradients' average of more floats than an MPI count (an int)
 * holds is refused the same way, first. */
int train_memory_check(const train_options *o, int ranks, const char *prefix);

/* What failed to be allocated, for the message "out of memory allocating
 * <what> (<bytes> bytes)". */
typedef struct train_alloc_failure {
    char what[160];
} train_alloc_failure;

/* calloc(1, bytes) (at least 1 byte); on failure NULL, with `what` and the
 * bytes in *f unless an earlier failure is already there. */
void *train_alloc(size_t bytes, const char *what, train_alloc_failure *f);

/* Print "<prefix>out of memory allocating <what>" on stderr. */
void train_alloc_report(const train_alloc_failure *f, const char *prefix);

#endif
