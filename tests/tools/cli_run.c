/* tests/tools/cli_run.c - running programs with captured output for the
 * CLI tests (see cli_run.h). */
#include "cli_run.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CLI_RUN_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define CLI_RUN_SANITIZED 1
#endif
#endif
#ifndef CLI_RUN_SANITIZED
#define CLI_RUN_SANITIZED 0
#endif

extern char **environ;

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

/* Under CKPT_CLI_VALGRIND (the path of valgrind, set by the registrations
 * labelled "valgrind"), every program runs under memcheck: an uninitialised
 * read, an invalid access or a leak makes it exit VALGRIND_ERROR_EXIT,
 * which no expected status matches. */
#define VALGRIND_ERROR_EXIT "99"

static const char *valgrind_path(void)
{
    const char *v = getenv("CKPT_CLI_VALGRIND");
    return v && *v ? v : NULL;
}

/* argv for `prog args...`, behind valgrind's own arguments when asked
 * for; returns the program to exec. */
static const char *build_argv(const char **argv, size_t cap, const char *prog,
                              const char *const *args)
{
    size_t n = 0;
    const char *vg = valgrind_path();
    if (vg) {
        argv[n++] = vg;
        argv[n++] = "--quiet";
        argv[n++] = "--error-exitcode=" VALGRIND_ERROR_EXIT;
        argv[n++] = "--leak-check=full";
        argv[n++] = "--errors-for-leak-kinds=definite,indirect,possible";
    }
    argv[n++] = prog;
    for (size_t i = 0; args[i] && n + 1 < cap; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    return vg ? vg : prog;
}

int cli_run_under_valgrind(void)
{
    return valgrind_path() != NULL;
}

cli_run cli_run_prog(const char *prog, const char *cwd, const char *const *args)
{
    char out_path[] = "/tmp/ckpt-cli-out-XXXXXX";
    char err_path[] = "/tmp/ckpt-cli-err-XXXXXX";
    const char *argv[72];
    posix_spawn_file_actions_t fa;
    cli_run r;
    pid_t pid;
    int st = 0;
    int fo = mkstemp(out_path), fe = mkstemp(err_path);
    const char *exe = build_argv(argv, 72, prog, args);
    assert_true(fo >= 0 && fe >= 0);
    assert_int_equal(posix_spawn_file_actions_init(&fa), 0);
    posix_spawn_file_actions_adddup2(&fa, fo, 1);
    posix_spawn_file_actions_adddup2(&fa, fe, 2);
    if (cwd)
        assert_int_equal(posix_spawn_file_actions_addchdir_np(&fa, cwd), 0);
    assert_int_equal(
        posix_spawn(&pid, exe, &fa, NULL, (char *const *)argv, environ), 0);
    posix_spawn_file_actions_destroy(&fa);
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

cli_run cli_run_limited(const char *prog, const char *cwd,
                        const char *const *args, const cli_limits *lim)
{
    char out_path[] = "/tmp/ckpt-cli-out-XXXXXX";
    char err_path[] = "/tmp/ckpt-cli-err-XXXXXX";
    const char *argv[72];
    cli_run r;
    pid_t pid;
    int st = 0;
    int fo = mkstemp(out_path), fe = mkstemp(err_path);
    const char *exe = build_argv(argv, 72, prog, args);
    /* memcheck is 20 to 50 times slower and needs its address space */
    unsigned slow = cli_run_under_valgrind() ? 50 : 1;
    int limit_memory = !CLI_RUN_SANITIZED && !cli_run_under_valgrind();
    assert_true(fo >= 0 && fe >= 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct rlimit cpu = {lim->cpu_seconds * slow,
                             lim->cpu_seconds * slow + 5};
        struct rlimit mem = {lim->memory_bytes, lim->memory_bytes};
        if (dup2(fo, 1) < 0 || dup2(fe, 2) < 0 || (cwd && chdir(cwd) != 0))
            _exit(126);
        setrlimit(RLIMIT_CPU, &cpu);
        if (limit_memory && lim->memory_bytes > 0)
            setrlimit(RLIMIT_AS, &mem);
        alarm(lim->wall_seconds * slow); /* kept across exec */
        execv(exe, (char *const *)argv);
        _exit(127);
    }
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

void run_free(cli_run *r)
{
    free(r->out);
    free(r->err);
}

void expect_status(const cli_run *r, int want)
{
    if (r->status != want)
        fail_msg("exit %d, wanted %d\n--- stdout:\n%s\n--- stderr:\n%s",
                 r->status, want, r->out, r->err);
}

void expect_contains(const char *hay, const char *needle)
{
    if (!strstr(hay, needle))
        fail_msg("\"%s\" not found in:\n%s", needle, hay);
}

void expect_lacks(const char *hay, const char *needle)
{
    if (strstr(hay, needle))
        fail_msg("\"%s\" unexpected in:\n%s", needle, hay);
}
