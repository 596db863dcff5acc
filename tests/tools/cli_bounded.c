/* tests/tools/cli_bounded.c - running the `ckpt` tool under resource
 * limits (see cli_bounded.h). */
#include "cli_bounded.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
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

static char *slurp(const char *path)
{
    size_t n = 0;
    uint8_t *p = test_read_file(path, &n);
    char *s;
    assert_non_null(p);
    s = realloc(p, n + 1);
    assert_non_null(s);
    s[n] = '\0';
    return s;
}

/* The child: limits, then exec. */
static void exec_bounded(const char *prog, const char *cwd, char *const *argv,
                         int fo, int fe, const cli_limits *lim)
{
    unsigned slow = cli_under_memcheck() ? MEMCHECK_SLOWDOWN : 1;
    struct rlimit cpu = {lim->cpu_seconds * slow, lim->cpu_seconds * slow + 5};
    struct rlimit mem = {lim->memory_bytes, lim->memory_bytes};
    if (dup2(fo, 1) < 0 || dup2(fe, 2) < 0 || (cwd && chdir(cwd) != 0))
        _exit(126);
    setrlimit(RLIMIT_CPU, &cpu);
    if (!TOOL_SANITIZED && !cli_under_memcheck() && lim->memory_bytes > 0)
        setrlimit(RLIMIT_AS, &mem);
    alarm(lim->wall_seconds * slow); /* kept across exec */
    execv(prog, argv);
    _exit(127);
}

cli_run cli_run_bounded(const char *prog, const char *cwd,
                        const char *const *args, const cli_limits *lim)
{
    char out_path[] = "/tmp/ckpt-cli-out-XXXXXX";
    char err_path[] = "/tmp/ckpt-cli-err-XXXXXX";
    const char *argv[64];
    cli_run r;
    pid_t pid;
    int st = 0, n = 0;
    int fo = mkstemp(out_path), fe = mkstemp(err_path);
    assert_true(fo >= 0 && fe >= 0);
    argv[n++] = prog;
    for (; args[n - 1] && n < 63; n++)
        argv[n] = args[n - 1];
    argv[n] = NULL;
    fflush(NULL);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        exec_bounded(prog, cwd, (char *const *)argv, fo, fe, lim);
    while (waitpid(pid, &st, 0) < 0)
        assert_int_equal(errno, EINTR);
    close(fo);
    close(fe);
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    r.signal = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
    r.out = slurp(out_path);
    r.err = slurp(err_path);
    unlink(out_path);
    unlink(err_path);
    return r;
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
