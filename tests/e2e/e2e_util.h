/* tests/e2e/e2e_util.h - helpers for the end-to-end tests of ckpt-train:
 * running a program in the background with its stdout and stderr going to
 * files, watching its stdout line by line while it runs, waiting with a
 * timeout, signalling it; parsing the trainer's summary line; counting the
 * checkpoints of a directory. Paths of the programs come from
 * CKPT_TRAIN_PATH and CKPT_CLI_PATH. */
#ifndef CKPT_TESTS_E2E_UTIL_H
#define CKPT_TESTS_E2E_UTIL_H

#include "test_util.h"

#include <sys/types.h>

#ifndef CKPT_TRAIN_PATH
#error "CKPT_TRAIN_PATH must name the built ckpt-train binary"
#endif
#ifndef CKPT_CLI_PATH
#error "CKPT_CLI_PATH must name the built ckpt binary"
#endif

/* Longest a child may run before it is killed and the test fails. */
#define E2E_CHILD_TIMEOUT_S 120.0

/* A child process. */
typedef struct e2e_proc {
    pid_t pid;
    int reaped;
    int wstatus;       /* waitpid status once reaped */
    char out_path[64]; /* stdout goes here ("" once finished) */
    char err_path[64]; /* stderr goes here */
    char *out;         /* stdout read so far (NUL-terminated) */
    size_t out_len, out_cap;
    size_t line_start; /* first byte of stdout not yet given to a
                          line watcher */
    char *err;         /* stderr, after e2e_proc_finish */
} e2e_proc;

/* Start `prog args...` (args NULL-terminated, without argv[0]). When
 * `run_as` is not 0 the child switches to that uid and gid before exec (the
 * caller must be root). Fails the test if it cannot be started. */
void e2e_spawn(e2e_proc *p, const char *prog, const char *const *args,
               uid_t run_as);

/* Wait up to `timeout_s` for the child to exit; returns 1 when it has. */
int e2e_wait(e2e_proc *p, double timeout_s);

/* Call `on_line(line, payload)` for each new complete line of stdout (the
 * line without its newline, NUL-terminated) until it returns non-zero
 * (returns 1), the child exits and its last line is seen (returns 0), or
 * `timeout_s` passes (fails the test). Polls every millisecond. */
int e2e_watch(e2e_proc *p, int (*on_line)(const char *line, void *payload),
              void *payload, double timeout_s);

/* Send `sig` to a child that has not been reaped. */
void e2e_signal(e2e_proc *p, int sig);

/* Wait for the child (failing the test after E2E_CHILD_TIMEOUT_S), then
 * read all of its stdout and stderr and remove the files. */
void e2e_proc_finish(e2e_proc *p);

/* Release the captured output. */
void e2e_proc_free(e2e_proc *p);

/* The exit code, or -1 when the child was killed by a signal. */
int e2e_exit_code(const e2e_proc *p);

/* Fail the test, showing the child's output, unless it exited with `code`. */
void e2e_expect_exit(const e2e_proc *p, int code);

/* Run a program to completion (spawn + finish). */
void e2e_run(e2e_proc *p, const char *prog, const char *const *args);

#define E2E_ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

/* ---- the trainer's summary line -------------------------------------- */

typedef struct e2e_summary {
    int64_t steps;
    int64_t resumed_from; /* -1 for "-" */
    double loss;          /* NAN for "-" (no step trained in this run) */
    int64_t checkpoints, skipped, failed;
    double blocking_ms_p50, blocking_ms_max, write_ms_p50, write_mb_s;
    double start_ms, close_ms; /* creating and closing the session */
} e2e_summary;

/* The regular expression (POSIX extended) one summary line must match. */
extern const char e2e_summary_regex[];

/* Find the one "summary:" line of `out`, check it against
 * e2e_summary_regex and that it is the last line, and parse it. Fails the
 * test otherwise. */
void e2e_parse_summary(const char *out, e2e_summary *s);

/* ---- checkpoint directories ------------------------------------------ */

/* Number of entries of `dir` whose names end with `suffix` (e.g. ".index")
 * or, when `suffix` starts with '*', contain the rest (e.g. "*.data-");
 * "" counts every entry, "." and ".." included. */
int e2e_count_files(const char *dir, const char *suffix);

/* The step of the latest checkpoint of `dir` (via its state file), or -1
 * when there is none. *prefix_out (when not NULL) receives a malloc'd copy
 * of the prefix, or NULL. */
int64_t e2e_latest_step(const char *dir, char **prefix_out);

/* Sleep `ms` milliseconds. */
void e2e_sleep_ms(double ms);

/* Whether `hay` contains `needle`; fails showing both when `want` differs. */
void e2e_expect_contains(const char *what, const char *hay, const char *needle,
                         int want);

#endif
