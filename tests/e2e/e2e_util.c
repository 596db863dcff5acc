/* tests/e2e/e2e_util.c - see e2e_util.h. */
#include "e2e_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <math.h>
#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* ---- time ------------------------------------------------------------- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void e2e_sleep_ms(double ms)
{
    struct timespec ts;
    if (ms <= 0)
        return;
    ts.tv_sec = (time_t)(ms / 1000.0);
    ts.tv_nsec = (long)((ms - (double)ts.tv_sec * 1000.0) * 1e6);
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* ---- processes -------------------------------------------------------- */

static int temp_file(char *path, size_t n, const char *tag)
{
    int fd;
    snprintf(path, n, "%s/ckpt-e2e-%s-XXXXXX", test_temp_base(), tag);
    fd = mkstemp(path);
    if (fd < 0)
        fail_msg("mkstemp %s: %s", path, strerror(errno));
    return fd;
}

void e2e_spawn(e2e_proc *p, const char *prog, const char *const *args,
               uid_t run_as)
{
    const char *argv[64];
    int n = 0, fo, fe;
    pid_t pid;
    memset(p, 0, sizeof(*p));
    fo = temp_file(p->out_path, sizeof(p->out_path), "out");
    fe = temp_file(p->err_path, sizeof(p->err_path), "err");
    argv[n++] = prog;
    while (args[n - 1] && n < 63) {
        argv[n] = args[n - 1];
        n++;
    }
    argv[n] = NULL;
    if (run_as != 0) {
        /* the child must be able to write them */
        assert_int_equal(fchown(fo, run_as, run_as), 0);
        assert_int_equal(fchown(fe, run_as, run_as), 0);
    }
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid < 0)
        fail_msg("fork: %s", strerror(errno));
    if (pid == 0) {
        if (dup2(fo, 1) < 0 || dup2(fe, 2) < 0)
            _exit(126);
        close(fo);
        close(fe);
        if (run_as != 0 && (setgroups(0, NULL) != 0 || setgid(run_as) != 0 ||
                            setuid(run_as) != 0))
            _exit(126);
        execve(prog, (char *const *)argv, environ);
        _exit(127);
    }
    close(fo);
    close(fe);
    p->pid = pid;
}

int e2e_wait(e2e_proc *p, double timeout_s)
{
    double deadline = now_s() + timeout_s;
    for (;;) {
        int st = 0;
        pid_t r;
        if (p->reaped)
            return 1;
        r = waitpid(p->pid, &st, WNOHANG);
        if (r == p->pid) {
            p->reaped = 1;
            p->wstatus = st;
            return 1;
        }
        if (r < 0 && errno != EINTR)
            fail_msg("waitpid %d: %s", (int)p->pid, strerror(errno));
        if (now_s() >= deadline)
            return 0;
        e2e_sleep_ms(1);
    }
}

/* Append what stdout has gained since the last call. */
static void read_more(e2e_proc *p)
{
    int fd;
    if (p->out_path[0] == '\0')
        return; /* finished: all of it was read */
    fd = open(p->out_path, O_RDONLY);
    if (fd < 0)
        fail_msg("open %s: %s", p->out_path, strerror(errno));
    for (;;) {
        ssize_t got;
        if (p->out_cap - p->out_len < 4097) {
            size_t cap = p->out_cap ? p->out_cap * 2 : 65536;
            char *q = realloc(p->out, cap);
            assert_non_null(q);
            p->out = q;
            p->out_cap = cap;
        }
        got = pread(fd, p->out + p->out_len, p->out_cap - p->out_len - 1,
                    (off_t)p->out_len);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            fail_msg("read %s: %s", p->out_path, strerror(errno));
        if (got == 0)
            break;
        p->out_len += (size_t)got;
    }
    p->out[p->out_len] = '\0';
    close(fd);
}

/* Give each new complete line to on_line; 1 when it asked to stop. */
static int scan_lines(e2e_proc *p, int (*on_line)(const char *, void *),
                      void *payload)
{
    while (p->line_start < p->out_len) {
        char *start = p->out + p->line_start;
        char *nl = memchr(start, '\n', p->out_len - p->line_start);
        int stop;
        if (!nl)
            return 0;
        *nl = '\0';
        stop = on_line(start, payload);
        *nl = '\n';
        p->line_start = (size_t)(nl - p->out) + 1;
        if (stop)
            return 1;
    }
    return 0;
}

int e2e_watch(e2e_proc *p, int (*on_line)(const char *line, void *payload),
              void *payload, double timeout_s)
{
    double deadline = now_s() + timeout_s;
    for (;;) {
        int exited = e2e_wait(p, 0);
        read_more(p);
        if (scan_lines(p, on_line, payload))
            return 1;
        if (exited)
            return 0;
        if (now_s() >= deadline)
            fail_msg("timed out after %.0f s watching pid %d; stdout so "
                     "far:\n%s",
                     timeout_s, (int)p->pid, p->out);
        e2e_sleep_ms(1);
    }
}

void e2e_signal(e2e_proc *p, int sig)
{
    assert_false(p->reaped);
    if (kill(p->pid, sig) != 0)
        fail_msg("kill %d: %s", (int)p->pid, strerror(errno));
}

void e2e_proc_finish(e2e_proc *p)
{
    if (!e2e_wait(p, E2E_CHILD_TIMEOUT_S)) {
        kill(p->pid, SIGKILL);
        e2e_wait(p, 10);
        fail_msg("pid %d still running after %.0f s: killed", (int)p->pid,
                 E2E_CHILD_TIMEOUT_S);
    }
    read_more(p);
    p->err = test_read_text(p->err_path, NULL);
    unlink(p->out_path);
    unlink(p->err_path);
    p->out_path[0] = p->err_path[0] = '\0';
}

void e2e_proc_free(e2e_proc *p)
{
    free(p->out);
    free(p->err);
    p->out = p->err = NULL;
}

int e2e_exit_code(const e2e_proc *p)
{
    assert_true(p->reaped);
    return WIFEXITED(p->wstatus) ? WEXITSTATUS(p->wstatus) : -1;
}

void e2e_expect_exit(const e2e_proc *p, int code)
{
    int got = e2e_exit_code(p);
    if (got != code)
        fail_msg("exit %d (%s %d), wanted %d\n--- stdout (tail):\n%s\n"
                 "--- stderr:\n%s",
                 got, WIFSIGNALED(p->wstatus) ? "signal" : "status",
                 WIFSIGNALED(p->wstatus) ? WTERMSIG(p->wstatus)
                                         : WEXITSTATUS(p->wstatus),
                 code, p->out_len > 4000 ? p->out + p->out_len - 4000 : p->out,
                 p->err ? p->err : "(not read)");
}

void e2e_run(e2e_proc *p, const char *prog, const char *const *args)
{
    e2e_spawn(p, prog, args, 0);
    e2e_proc_finish(p);
}

/* ---- the summary line -------------------------------------------------- */

#define NUM "([0-9]+)"
#define REAL "([0-9]+\\.[0-9]+)"

const char e2e_summary_regex[] =
    "^summary: steps=" NUM " resumed_from=([0-9]+|-) "
    "loss=(-?[0-9]+\\.[0-9]+|-?nan|-?inf|-) checkpoints=" NUM " skipped=" NUM
    " failed=" NUM " blocking_ms_p50=" REAL " blocking_ms_max=" REAL
    " write_ms_p50=" REAL " write_mb_s=" REAL " start_ms=" REAL
    " close_ms=" REAL "$";

static int64_t group_int(const char *line, const regmatch_t *m)
{
    return strtoll(line + m->rm_so, NULL, 10);
}

static double group_real(const char *line, const regmatch_t *m)
{
    return strtod(line + m->rm_so, NULL);
}

void e2e_parse_summary(const char *out, e2e_summary *s)
{
    const char *line = strstr(out, "summary: ");
    regex_t re;
    regmatch_t m[13];
    char *copy;
    size_t n;
    memset(s, 0, sizeof(*s));
    if (!line || (line != out && line[-1] != '\n'))
        fail_msg("no summary line in:\n%s", out);
    n = strcspn(line, "\n");
    if (line[n] != '\n' || line[n + 1] != '\0')
        fail_msg("the summary is not the last line of:\n%s", out);
    if (strstr(line + n, "summary: "))
        fail_msg("two summary lines in:\n%s", out);
    copy = strndup(line, n);
    assert_non_null(copy);
    assert_int_equal(regcomp(&re, e2e_summary_regex, REG_EXTENDED), 0);
    if (regexec(&re, copy, 13, m, 0) != 0)
        fail_msg("summary line does not match %s:\n%s", e2e_summary_regex,
                 copy);
    s->steps = group_int(copy, &m[1]);
    s->resumed_from = copy[m[2].rm_so] == '-' ? -1 : group_int(copy, &m[2]);
    s->loss = m[3].rm_eo - m[3].rm_so == 1 && copy[m[3].rm_so] == '-'
                  ? (double)NAN
                  : group_real(copy, &m[3]);
    s->checkpoints = group_int(copy, &m[4]);
    s->skipped = group_int(copy, &m[5]);
    s->failed = group_int(copy, &m[6]);
    s->blocking_ms_p50 = group_real(copy, &m[7]);
    s->blocking_ms_max = group_real(copy, &m[8]);
    s->write_ms_p50 = group_real(copy, &m[9]);
    s->write_mb_s = group_real(copy, &m[10]);
    s->start_ms = group_real(copy, &m[11]);
    s->close_ms = group_real(copy, &m[12]);
    regfree(&re);
    free(copy);
}

/* ---- checkpoint directories -------------------------------------------- */

static int name_matches(const char *name, const char *suffix)
{
    size_t n = strlen(name), m;
    if (suffix[0] == '*')
        return strstr(name, suffix + 1) != NULL;
    m = strlen(suffix);
    return n > m && strcmp(name + n - m, suffix) == 0;
}

int e2e_count_files(const char *dir, const char *suffix)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int count = 0;
    if (!d)
        fail_msg("opendir %s: %s", dir, strerror(errno));
    while ((e = readdir(d)) != NULL)
        count += name_matches(e->d_name, suffix);
    closedir(d);
    return count;
}

int64_t e2e_latest_step(const char *dir, char **prefix_out)
{
    ckpt_buf latest = CKPT_BUF_INIT;
    int64_t step = -1;
    int err = ckpt_latest_checkpoint(&latest, NULL, dir);
    if (prefix_out)
        *prefix_out = NULL;
    if (err == CKPT_ENOTFOUND) {
        ckpt_error_clear();
        ckpt_buf_dispose(&latest);
        return -1;
    }
    assert_ckpt_ok(err);
    step = ckpt_checkpoint_step(latest.ptr);
    if (step < 0)
        fail_msg("latest checkpoint of %s has no step: %s", dir, latest.ptr);
    if (prefix_out) {
        *prefix_out = strdup(latest.ptr);
        assert_non_null(*prefix_out);
    }
    ckpt_buf_dispose(&latest);
    return step;
}

void e2e_expect_contains(const char *what, const char *hay, const char *needle,
                         int want)
{
    int has = strstr(hay, needle) != NULL;
    if (has != want)
        fail_msg("%s: \"%s\" %s in:\n%s", what, needle,
                 want ? "not found" : "unexpected", hay);
}
