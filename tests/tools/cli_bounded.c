/* tests/tools/cli_bounded.c - running the `ckpt` tool under resource
 * limits (see cli_bounded.h), started by cli_run.c's cli_run_with. */
#include "cli_bounded.h"

#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TOOL_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define TOOL_SANITIZED 1
#endif
#endif
#ifndef TOOL_SANITIZED
#define TOOL_SANITIZED 0
#endif

/* memcheck runs a program 20 to 50 times slower */
#define MEMCHECK_SLOWDOWN 50

int cli_under_memcheck(void)
{
#ifdef CKPT_CLI_UNDER_MEMCHECK
    return 1;
#else
    return 0;
#endif
}

/* a sanitizer (TSan above all) runs the tool 5 to 15 times slower; its
 * tests run smaller inputs (cli_tool_sanitized) and get this much more */
#define SANITIZER_SLOWDOWN 3

int cli_tool_sanitized(void)
{
    return TOOL_SANITIZED;
}

/* The child's limits (a cli_child_setup). */
static void limit_child(const void *arg)
{
    const cli_limits *lim = arg;
    unsigned slow = cli_under_memcheck() ? MEMCHECK_SLOWDOWN
                    : TOOL_SANITIZED     ? SANITIZER_SLOWDOWN
                                         : 1;
    struct rlimit cpu = {lim->cpu_seconds * slow, lim->cpu_seconds * slow + 5};
    struct rlimit mem = {lim->memory_bytes, lim->memory_bytes};
    setrlimit(RLIMIT_CPU, &cpu);
    if (!TOOL_SANITIZED && !cli_under_memcheck() && lim->memory_bytes > 0)
        setrlimit(RLIMIT_AS, &mem);
    alarm(lim->wall_seconds * slow); /* kept across exec */
}

cli_run cli_run_bounded(const char *prog, const char *cwd,
                        const char *const *args, const cli_limits *lim)
{
    return cli_run_with(prog, cwd, args, limit_child, lim);
}

void expect_within_limits(const cli_run *r, const cli_limits *lim)
{
    if (r->signal == SIGXCPU || r->signal == SIGKILL)
        fail_msg("killed after %u s of CPU (signal %d): not linear in its "
                 "input\n--- stderr:\n%s",
                 lim->cpu_seconds, r->signal, r->err);
    if (r->signal == SIGALRM)
        fail_msg("still running after %u s: a hang\n--- stderr:\n%s",
                 lim->wall_seconds, r->err);
    if (r->signal != 0)
        fail_msg("ended by signal %d (memory limit %llu bytes)\n--- "
                 "stderr:\n%s",
                 r->signal, (unsigned long long)lim->memory_bytes, r->err);
}
