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

/* Run `prog args...` (NULL-terminated, at most 62) in directory `cwd`
 * (NULL: this process's) with stdout and stderr captured. */
cli_run cli_run_prog(const char *prog, const char *cwd,
                     const char *const *args);

/* What the child does before exec, after its stdout and stderr are
 * redirected and its directory changed: set its limits. */
typedef void (*cli_child_setup)(const void *arg);

/* cli_run_prog with setup(arg) called in the child before exec (NULL: no
 * setup). The one way the tests start a program (cli_run_limited,
 * cli_run_bounded). */
cli_run cli_run_with(const char *prog, const char *cwd, const char *const *args,
                     cli_child_setup setup, const void *arg);

/* The same with the program's address space limited to `max_memory`
 * bytes and its wall-clock time to `seconds` (0: no limit; see
 * test_limit_self): a hostile input must not make it hang or allocate
 * more than the files justify. */
cli_run cli_run_limited(const char *prog, const char *cwd,
                        const char *const *args, uint64_t max_memory,
                        unsigned seconds);

/* Run the `ckpt` tool with the given arguments. */
#define RUN(r, ...)                                                            \
    do {                                                                       \
        const char *args_[] = {__VA_ARGS__, NULL};                             \
        (r) = cli_run_prog(CKPT_CLI_PATH, NULL, args_);                        \
    } while (0)

/* RUN, then expect_status(&r, want): a run whose exit code the test
 * checks before its output. */
#define RUN_STATUS(r, want, ...)                                               \
    do {                                                                       \
        RUN(r, __VA_ARGS__);                                                   \
        expect_status(&(r), (want));                                           \
    } while (0)

/* RUN under cli_run_limited's limits. */
#define RUN_LIMITED(r, max_memory, seconds, ...)                               \
    do {                                                                       \
        const char *args_[] = {__VA_ARGS__, NULL};                             \
        (r) = cli_run_limited(CKPT_CLI_PATH, NULL, args_, (max_memory),        \
                              (seconds));                                      \
    } while (0)

void run_free(cli_run *r);

/* Fail with the captured output when the exit code is not `want`. */
void expect_status(const cli_run *r, int want);
void expect_contains(const char *hay, const char *needle);
void expect_lacks(const char *hay, const char *needle);

#endif
