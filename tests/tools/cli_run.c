/* tests/tools/cli_run.c - running programs with captured output for the
 * CLI tests (see cli_run.h). */
#include "cli_run.h"

#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

cli_run cli_run_prog(const char *prog, const char *cwd, const char *const *args)
{
    return cli_run_with(prog, cwd, args, NULL, NULL);
}

/* The child of cli_run_with: redirect, set up, then exec `prog`. */
static void exec_child(const char *prog, const char *cwd, char *const *argv,
                       int fo, int fe, cli_child_setup setup, const void *arg)
{
    if (dup2(fo, 1) < 0 || dup2(fe, 2) < 0 || (cwd && chdir(cwd) != 0))
        _exit(127);
    setup(arg);
    execve(prog, argv, environ);
    _exit(127);
}

/* Start `prog` with stdout and stderr going to fo and fe: posix_spawn
 * without a setup, fork and exec with one. */
static pid_t start(const char *prog, const char *cwd, char *const *argv, int fo,
                   int fe, cli_child_setup setup, const void *arg)
{
    posix_spawn_file_actions_t fa;
    pid_t pid;
    if (setup) {
        fflush(NULL);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0)
            exec_child(prog, cwd, argv, fo, fe, setup, arg);
        return pid;
    }
    assert_int_equal(posix_spawn_file_actions_init(&fa), 0);
    posix_spawn_file_actions_adddup2(&fa, fo, 1);
    posix_spawn_file_actions_adddup2(&fa, fe, 2);
    if (cwd)
        assert_int_equal(posix_spawn_file_actions_addchdir_np(&fa, cwd), 0);
    assert_int_equal(posix_spawn(&pid, prog, &fa, NULL, argv, environ), 0);
    posix_spawn_file_actions_destroy(&fa);
    return pid;
}

/* A new file "ckpt-cli-<what>-XXXXXX" in test_temp_base() ($TMPDIR, else
 * /tmp), open for writing; its path in `*path` (the caller frees it). */
static int temp_file(char **path, const char *what)
{
    const char *base = test_temp_base();
    size_t n = strlen(base) + strlen(what) + sizeof("/ckpt-cli--XXXXXX");
    int fd;
    *path = malloc(n);
    assert_non_null(*path);
    snprintf(*path, n, "%s/ckpt-cli-%s-XXXXXX", base, what);
    fd = mkstemp(*path);
    assert_true(fd >= 0);
    return fd;
}

cli_run cli_run_with(const char *prog, const char *cwd, const char *const *args,
                     cli_child_setup setup, const void *arg)
{
    char *out_path, *err_path;
    const char *argv[64];
    cli_run r;
    pid_t pid;
    int st = 0, n = 0;
    int fo = temp_file(&out_path, "out"), fe = temp_file(&err_path, "err");
    argv[n++] = prog;
    for (; args[n - 1] && n < 63; n++)
        argv[n] = args[n - 1];
    argv[n] = NULL;
    pid = start(prog, cwd, (char *const *)argv, fo, fe, setup, arg);
    while (waitpid(pid, &st, 0) < 0)
        assert_int_equal(errno, EINTR);
    close(fo);
    close(fe);
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    r.signal = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
    r.out = test_read_text(out_path, NULL);
    r.err = test_read_text(err_path, NULL);
    unlink(out_path);
    unlink(err_path);
    free(out_path);
    free(err_path);
    return r;
}

/* The limits of cli_run_limited. */
struct memory_and_time {
    uint64_t max_memory;
    unsigned seconds;
};

static void limit_child(const void *arg)
{
    const struct memory_and_time *l = arg;
    test_limit_self(l->max_memory, l->seconds);
}

cli_run cli_run_limited(const char *prog, const char *cwd,
                        const char *const *args, uint64_t max_memory,
                        unsigned seconds)
{
    struct memory_and_time l = {max_memory, seconds};
    if (max_memory == 0 && seconds == 0)
        return cli_run_prog(prog, cwd, args);
    return cli_run_with(prog, cwd, args, limit_child, &l);
}

void run_free(cli_run *r)
{
    free(r->out);
    free(r->err);
}

void expect_status(const cli_run *r, int want)
{
    if (r->status != want)
        fail_msg("exit %d (signal %d), wanted %d\n--- stdout:\n%s\n--- "
                 "stderr:\n%s",
                 r->status, r->signal, want, r->out, r->err);
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
