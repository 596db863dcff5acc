/* tests/tools/cli_bounded.h - running the `ckpt` tool on hostile input
 * under CPU, wall-clock and memory limits, and knowing whether the tool
 * runs under valgrind memcheck (the *_memcheck test programs, whose
 * CKPT_CLI_PATH is a script running the tool under memcheck). */
#ifndef CKPT_TESTS_TOOLS_CLI_BOUNDED_H
#define CKPT_TESTS_TOOLS_CLI_BOUNDED_H

#include "cli_run.h"

/* Resource limits for a run on hostile input. */
typedef struct cli_limits {
    unsigned cpu_seconds;  /* RLIMIT_CPU (SIGXCPU, then SIGKILL): work, not
                              time on a loaded machine */
    unsigned wall_seconds; /* SIGALRM after this long: a hang */
    uint64_t memory_bytes; /* RLIMIT_AS; not applied when the tool is built
                              with a sanitizer, which reserves terabytes of
                              address space, nor under memcheck */
} cli_limits;

/* Whether the tool runs under valgrind memcheck (a memcheck error makes it
 * exit 99, which no expected status matches). Limits are then 50 times
 * longer and memory is not limited. */
int cli_under_memcheck(void);

/* Whether the tool was built with a sanitizer (as the test was): slower,
 * and with no address-space limit, so a test may feed it less. */
int cli_tool_sanitized(void);

/* cli_run_prog in a child held to `lim`; a run a limit ended has status -1
 * and its signal (SIGXCPU, SIGKILL, SIGALRM, or SIGSEGV/SIGABRT when an
 * allocation failed). */
cli_run cli_run_bounded(const char *prog, const char *cwd,
                        const char *const *args, const cli_limits *lim);

/* Fail, naming the limit, when a bounded run did not exit by itself. */
void expect_within_limits(const cli_run *r, const cli_limits *lim);

/* A bounded run of the tool with the NULL-terminated `args`, then
 * expect_within_limits and expect_status(&r, want): every bounded run
 * checks that no limit ended it before its exit code. */
#define RUN_EXPECT_ARGV(r, lim, want, args)                                    \
    do {                                                                       \
        (r) = cli_run_bounded(CKPT_CLI_PATH, NULL, (args), (lim));             \
        expect_within_limits(&(r), (lim));                                     \
        expect_status(&(r), (want));                                           \
    } while (0)

/* RUN_EXPECT_ARGV with the arguments listed. */
#define RUN_EXPECT(r, lim, want, ...)                                          \
    do {                                                                       \
        const char *argv_[] = {__VA_ARGS__, NULL};                             \
        RUN_EXPECT_ARGV(r, lim, want, argv_);                                  \
    } while (0)

#endif
