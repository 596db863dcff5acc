/* tests/e2e/test_train_watchdog.c - the watchdog that bounds ckpt-train's
 * MPI_Init_thread and MPI_Finalize (tools/ckpt-train/watchdog.c): an
 * alarm the process had pending, its SIGALRM handler and its signal mask
 * are as they were after a bounded call; a call past its bound ends the
 * process with the message and exit status 70. */
#include "test_util.h"

#include "watchdog.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t alarms;

static void on_alarm(int sig)
{
    (void)sig;
    alarms++;
}

/* The process's own alarm (an hour ahead), SIGALRM handler and a blocked
 * SIGALRM, then a call bounded by the watchdog and disarmed in time: the
 * alarm is still pending (about an hour left), the handler and the mask
 * unchanged, and no SIGALRM arrived. Before, the exit alarm of
 * ckpt-train --distributed replaced the process's alarm with its own and
 * cancelled it on return: the process's alarm was lost. */
static void test_pending_alarm_kept(void **state)
{
    struct sigaction sa, now;
    sigset_t block, old, mask;
    train_watchdog w;
    unsigned left;
    (void)state;
    memset(&sa, 0, sizeof(sa));
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = on_alarm;
    assert_int_equal(sigaction(SIGALRM, &sa, NULL), 0);
    sigemptyset(&block);
    sigaddset(&block, SIGALRM);
    assert_int_equal(pthread_sigmask(SIG_BLOCK, &block, &old), 0);
    alarm(3600);

    assert_int_equal(train_watchdog_arm(&w, 600.0, "never said\n"), 0);
    train_watchdog_disarm(&w);
    assert_int_equal(train_watchdog_arm(&w, 0.5, "never said\n"), 0);
    train_watchdog_disarm(&w);

    left = alarm(0);
    assert_true(left > 3500 && left <= 3600);
    assert_int_equal(sigaction(SIGALRM, NULL, &now), 0);
    assert_ptr_equal(now.sa_handler, on_alarm);
    assert_int_equal(pthread_sigmask(SIG_BLOCK, NULL, &mask), 0);
    assert_int_equal(sigismember(&mask, SIGALRM), 1);
    assert_int_equal(pthread_sigmask(SIG_SETMASK, &old, NULL), 0);
    assert_int_equal(alarms, 0);
    signal(SIGALRM, SIG_DFL);
}

/* A call that does not return within the bound: the watchdog writes its
 * message on stderr and the process exits 70, with SIGALRM ignored (it
 * needs no signal). */
static void test_call_past_bound_exits_70(void **state)
{
    char *dir = test_make_temp_dir();
    char *path = test_path(dir, "err.txt");
    const char msg[] = "ckpt-train: the call did not return within 1 s\n";
    int status = 0;
    size_t n = 0;
    uint8_t *err;
    pid_t pid;
    (void)state;
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        train_watchdog w;
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || dup2(fd, 2) != 2)
            _exit(97);
        signal(SIGALRM, SIG_IGN);
        if (train_watchdog_arm(&w, 0.2, msg) != 0)
            _exit(98);
        for (int i = 0; i < 600; i++) /* the call that hangs: a minute */
            usleep(100000);
        _exit(99);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), TRAIN_WATCHDOG_STATUS);
    err = test_read_file(path, &n);
    assert_non_null(err);
    assert_int_equal(n, strlen(msg));
    assert_memory_equal(err, msg, n);
    free(err);
    free(path);
    test_remove_tree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pending_alarm_kept),
        cmocka_unit_test(test_call_past_bound_exits_70),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
