/* tests/common/test_log_stderr.c - ckpt_log_stderr, the logger the hooks
 * and sessions use when given none, with stderr a pipe whose reader went
 * away (a `| tee` killed): its line fails with EPIPE instead of SIGPIPE
 * ending the application, from the calling thread or another; the
 * thread's signal mask is as before and no SIGPIPE is left pending. */
#include "test_util.h"

#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static void *log_a_line(void *arg)
{
    (void)arg;
    ckpt_log_stderr(CKPT_LOG_WARN, "from another thread", NULL);
    return NULL;
}

/* In a child: stderr a pipe without reader, SIGPIPE's default action;
 * exits 0 when both lines were dropped quietly, 2 or 3 when the mask or
 * pending set changed. */
static void child_logs_to_broken_pipe(void)
{
    int fds[2];
    sigset_t mask, pending;
    pthread_t t;
    signal(SIGPIPE, SIG_DFL);
    if (pipe(fds) != 0 || dup2(fds[1], 2) != 2)
        _exit(1);
    close(fds[0]);
    ckpt_log_stderr(CKPT_LOG_WARN, "from the main thread", NULL);
    if (pthread_create(&t, NULL, log_a_line, NULL) != 0 ||
        pthread_join(t, NULL) != 0)
        _exit(1);
    if (pthread_sigmask(SIG_BLOCK, NULL, &mask) != 0 ||
        sigismember(&mask, SIGPIPE))
        _exit(2);
    if (sigpending(&pending) != 0 || sigismember(&pending, SIGPIPE))
        _exit(3);
    _exit(0);
}

static void test_log_to_broken_pipe_survives(void **state)
{
    int status = 0;
    pid_t pid;
    (void)state;
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        child_logs_to_broken_pipe();
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (WIFSIGNALED(status))
        fail_msg("the child was killed by signal %d", WTERMSIG(status));
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_log_to_broken_pipe_survives),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
