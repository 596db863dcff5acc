/* tests/tools/cli_run.h - running a program (the `ckpt` tool, an example)
 * from a test with its exit code, stdout and stderr captured, and the
 * assertions the CLI tests make on them. Each test program defines
 * CKPT_CLI_PATH (the built `ckpt`), which RUN uses. */
#ifndef CKPT_TESTS_TOOLS_CLI_RUN_H
#define CKPT_TESTS_TOOLS_CLI_RUN_H

#include "test_util.h"

typedef struct cli_run {
    int status; /* exit code, or -1 when it did not exit normally */
    int signal; /* the signal that ended it, or 0 */
    char *out;  /* stdout, NUL-terminated */
    char *err;  /* stderr, NUL-terminated */
} cli_run;

/* Resource limits for a run on hostile input. */
typedef struct cli_limits {
    unsigned cpu_seconds;  /* RLIMIT_CPU (SIGXCPU, then SIGKILL) */
    unsigned wall_seconds; /* SIGALRM after this long: a hang */
    uint64_t memory_bytes; /* RLIMIT_AS; not applied when the tool is built
                              with a sanitizer, which reserves terabytes of
                              address space */
} cli_limits;

/* Run `prog args...` (NULL-terminated, at most 62) in directory `cwd`
 * (NULL: this process's) with stdout and stderr captured. */
cli_run cli_run_prog(const char *prog, const char *cwd,
                     const char *const *args);

/* cli_run_prog in a child held to `lim`; a run a limit ended has status -1
 * and its signal (SIGXCPU, SIGKILL, SIGALRM, or SIGSEGV/SIGABRT when an
 * allocation failed). */
cli_run cli_run_limited(const char *prog, const char *cwd,
                        const char *const *args, const cli_limits *lim);

/* Whether programs run under valgrind memcheck (CKPT_CLI_VALGRIND names
 * valgrind: the registrations labelled "valgrind" set it); a memcheck
 * error makes the program exit 99. Limits are then 50 times longer and
 * memory is not limited. */
int cli_run_under_valgrind(void);

/* Fail, naming the limit, when a limited run did not exit by itself. */
void expect_within_limits(const cli_run *r, const cli_limits *lim);

/* Run the `ckpt` tool with the given arguments. */
#define RUN(r, ...)                                                            \
    do {                                                                       \
        const char *args_[] = {__VA_ARGS__, NULL};                             \
        (r) = cli_run_prog(CKPT_CLI_PATH, NULL, args_);                        \
    } while (0)

/* Run the `ckpt` tool held to `lim` (a const cli_limits *). */
#define RUN_LIMITED(r, lim, ...)                                               \
    do {                                                                       \
        const char *args_[] = {__VA_ARGS__, NULL};                             \
        (r) = cli_run_limited(CKPT_CLI_PATH, NULL, args_, (lim));              \
    } while (0)

void run_free(cli_run *r);

/* Fail with the captured output when the exit code is not `want`. */
void expect_status(const cli_run *r, int want);
void expect_contains(const char *hay, const char *needle);
void expect_lacks(const char *hay, const char *needle);

#endif
