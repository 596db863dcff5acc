/* tools/ckpt-train/options.h - the command line of ckpt-train, one parser
 * for the single-process trainer and for --distributed: the same options,
 * defaults and bounds, with what the distributed trainer lacks refused. */
#ifndef CKPT_TRAIN_OPTIONS_H
#define CKPT_TRAIN_OPTIONS_H

#include <stdint.h>

typedef struct train_options {
    const char *dir;
    int64_t steps, save_steps; /* save_steps 0: every save_secs */
    double save_secs;
    int keep;          /* 0: keep all */
    double keep_hours; /* keep_checkpoint_every_n_hours; 0: off */
    int mode; /* CKPT_SAVE_ASYNC, CKPT_SAVE_SYNC, or -1: no checkpoints */
    int busy; /* CKPT_BUSY_* */
    int hidden, layers, batch, quiet;
    float lr;
    uint64_t seed;
    double collective_timeout; /* --distributed: seconds (default 600) */
} train_options;

/* What train_options_parse returns after printing the usage for --help,
 * or the version for --version: the program exits 0. */
#define TRAIN_OPTIONS_HELP (-1)

/* Fill `o` from the command line (argv[0] is the program). `distributed`:
 * --distributed is accepted, the default directory is runs/distributed,
 * --save-secs, --busy and --mode none are refused; otherwise
 * --collective-timeout is. Returns 0, TRAIN_OPTIONS_HELP (the usage or
 * the version printed on stdout), or 2 after printing a usage error on
 * stderr. */
int train_options_parse(train_options *o, int argc, char **argv,
                        int distributed);

/* --collective-timeout of the command line, for what runs before it is
 * parsed (MPI_Init_thread's bound): its last valid value, else the default
 * 600 (train_options_parse then reports a bad one). Prints nothing. */
double train_options_collective_timeout(int argc, char **argv);

#endif
