/* The POSIX file system and a saver on it in a hostile process
 * environment rather than hostile files: a file-size limit
 * (RLIMIT_FSIZE) that makes the kernel send SIGXFSZ, standard
 * descriptors closed at start, an address-space limit (RLIMIT_AS) below
 * the async writer's staging image. Each case runs in a
 * child process (the environment is the child's alone), which writes what
 * it saw to a file the parent then checks; the parent asserts that the
 * child was not killed by a signal. */
#include "ckpt.h"
#include "support/fs_forward.h"
#include "test_util.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

enum { NVALS = 16 * 1024 }; /* 64 KiB of floats per checkpoint */

static float vals[NVALS];

/* A saver on `dir` holding `vals` as "w"; NULL (error set) on failure. */
static ckpt_saver *open_saver(const char *dir)
{
    ckpt_saver *s = NULL;
    ckpt_var v = {"w", CKPT_DT_FLOAT, {1, {NVALS}}, vals, NULL, NULL, NULL};
    if (ckpt_saver_open(&s, dir, NULL) != 0)
        return NULL;
    if (ckpt_saver_add_var(s, &v) != 0) {
        ckpt_saver_free(s);
        return NULL;
    }
    return s;
}

/* Run `child(dir)` in a child process and return its wait status. */
static int run_child(void (*child)(const char *), const char *dir)
{
    int status = 0;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        child(dir);
        _exit(0);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return status;
}

static void assert_exited_0(int status)
{
    if (WIFSIGNALED(status))
        fail_msg("the child was killed by signal %d", WTERMSIG(status));
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

/* "<rc> <message>" of the last error, written to <dir>/result. */
static void write_result(const char *dir, int rc)
{
    char path[4200];
    FILE *f;
    snprintf(path, sizeof(path), "%s/result", dir);
    f = fopen(path, "w");
    if (!f)
        _exit(3);
    fprintf(f, "%d %s", rc, rc ? ckpt_error_last()->message : "");
    if (fclose(f) != 0)
        _exit(3);
}

static char *read_result(const char *dir)
{
    char *path = test_path(dir, "result");
    size_t n = 0;
    uint8_t *p = test_read_file(path, &n);
    char *s;
    assert_non_null(p);
    s = malloc(n + 1);
    memcpy(s, p, n);
    s[n] = '\0';
    free(p);
    free(path);
    return s;
}

/* Step 2's save under a 16 KiB file-size limit (the checkpoint takes 64
 * KiB), synchronously or on the async writer thread. */
static void save_past_limit(const char *dir, int async)
{
    struct rlimit rl = {16384, 16384};
    ckpt_saver *s;
    int rc;
    if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
        _exit(2);
    s = open_saver(dir);
    if (!s)
        _exit(2);
    for (int i = 0; i < NVALS; i++)
        vals[i] = -1.0f;
    if (async) {
        rc = ckpt_saver_save_async(s, 2, NULL);
        if (rc == 0)
            rc = ckpt_saver_wait(s, 0, -1);
    } else {
        rc = ckpt_saver_save(s, 2, NULL);
    }
    write_result(dir, rc);
    ckpt_saver_free(s);
}

static void child_save_sync(const char *dir)
{
    save_past_limit(dir, 0);
}

static void child_save_async(const char *dir)
{
    save_past_limit(dir, 1);
}

/* Past RLIMIT_FSIZE a save fails with EFBIG ("File too large", CKPT_EIO)
 * naming the file, instead of SIGXFSZ killing the process (the library
 * changes no signal disposition: the child's SIGXFSZ stays the default,
 * which ends a process), and step 1 stays the latest checkpoint, whole. */
static void check_file_size_limit(void (*child)(const char *))
{
    char *dir = test_make_temp_dir();
    ckpt_saver *s;
    ckpt_buf latest = CKPT_BUF_INIT;
    ckpt_bundle_reader *r = NULL;
    float back[NVALS];
    char *result;
    for (int i = 0; i < NVALS; i++)
        vals[i] = (float)i;
    s = open_saver(dir);
    assert_non_null(s);
    assert_ckpt_ok(ckpt_saver_save(s, 1, NULL));
    ckpt_saver_free(s);

    assert_exited_0(run_child(child, dir));
    result = read_result(dir);
    {
        char want[16];
        snprintf(want, sizeof(want), "%d ", CKPT_EIO);
        if (strncmp(result, want, strlen(want)) != 0)
            fail_msg("expected CKPT_EIO, got: %s", result);
    }
    if (!strstr(result, "File too large") ||
        !strstr(result, "model.ckpt-2.data-00000-of-00001"))
        fail_msg("message: %s", result);
    free(result);

    assert_ckpt_ok(ckpt_latest_checkpoint(&latest, NULL, dir));
    assert_non_null(strstr(latest.ptr, "model.ckpt-1"));
    assert_ckpt_ok(ckpt_bundle_reader_open(&r, latest.ptr, NULL));
    assert_ckpt_ok(ckpt_bundle_reader_read(r, "w", back, sizeof(back)));
    for (int i = 0; i < NVALS; i++)
        assert_true(back[i] == (float)i);
    ckpt_bundle_reader_free(r);
    ckpt_buf_dispose(&latest);
    test_remove_tree(dir);
}

static void test_file_size_limit_sync(void **state)
{
    (void)state;
    check_file_size_limit(child_save_sync);
}

static void test_file_size_limit_async(void **state)
{
    (void)state;
    check_file_size_limit(child_save_async);
}

/* The process's own output while the library works: a log line to each
 * standard descriptor before every write and read the library makes, and
 * a count of the times one of them was open then (a file of ours). */
static int stdio_taken;

static void log_lines(void)
{
    static const char line[] = "LOG LINE\n";
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) != -1)
            stdio_taken++;
        if (write(fd, line, sizeof(line) - 1) < 0)
            continue; /* EBADF: closed, as it should be */
    }
}

static int logging_write(ckpt_file *f, const void *p, size_t n, void *payload)
{
    const ckpt_fs *base = ckpt_fs_forward_base(payload);
    log_lines();
    return base->write(f, p, n, base->payload);
}

static int logging_pread(ckpt_file *f, void *p, size_t n, uint64_t offset,
                         size_t *nread, void *payload)
{
    const ckpt_fs *base = ckpt_fs_forward_base(payload);
    log_lines();
    return base->pread(f, p, n, offset, nread, base->payload);
}

/* Close 0, 1 and 2, then save step 3 (sync, then async as step 4) and
 * read step 4 back, printing to stdout and stderr all along; writes
 * "<rc> <times 0-2 were open> <message>" to <dir>/result. */
static void child_closed_stdio(const char *dir)
{
    ckpt_fs_forward fwd;
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_bundle_reader_options ro = CKPT_BUNDLE_READER_OPTIONS_INIT;
    ckpt_saver *s = NULL;
    ckpt_var v = {"w", CKPT_DT_FLOAT, {1, {NVALS}}, vals, NULL, NULL, NULL};
    ckpt_bundle_reader *r = NULL;
    ckpt_buf latest = CKPT_BUF_INIT;
    static float back[NVALS];
    char path[4200];
    FILE *f;
    int rc;
    ckpt_fs_forward_init(&fwd, NULL);
    fwd.fs.write = logging_write;
    fwd.fs.pread = logging_pread;
    o.fs = &fwd.fs;
    ro.fs = &fwd.fs;
    close(0);
    close(1);
    close(2);
    for (int i = 0; i < NVALS; i++)
        vals[i] = (float)(i * 3);
    rc = ckpt_saver_open(&s, dir, &o);
    if (rc == 0)
        rc = ckpt_saver_add_var(s, &v);
    if (rc == 0)
        rc = ckpt_saver_save(s, 3, NULL);
    if (rc == 0)
        rc = ckpt_saver_save_async(s, 4, NULL);
    if (rc == 0)
        rc = ckpt_saver_wait(s, 0, -1);
    ckpt_saver_free(s);
    if (rc == 0)
        rc = ckpt_latest_checkpoint(&latest, &fwd.fs, dir);
    if (rc == 0)
        rc = ckpt_bundle_reader_open(&r, latest.ptr, &ro);
    if (rc == 0)
        rc = ckpt_bundle_reader_read(r, "w", back, sizeof(back));
    for (int i = 0; rc == 0 && i < NVALS; i++)
        if (back[i] != (float)(i * 3))
            rc = -1000; /* values differ */
    ckpt_bundle_reader_free(r);
    ckpt_buf_dispose(&latest);
    snprintf(path, sizeof(path), "%s/result", dir);
    f = fopen(path, "w");
    if (!f)
        _exit(3);
    fprintf(f, "%d %d %s", rc, stdio_taken,
            rc ? ckpt_error_last()->message : "");
    if (fclose(f) != 0)
        _exit(3);
}

/* A process started with 0, 1 and 2 closed: no file the library opens
 * takes one of them (fs_posix keeps its descriptors >= 3; so does the
 * directory lock), so the process's own output never lands in a
 * checkpoint, which saves and reads back whole. Without that the index or
 * data file took fd 1 or 2 and "LOG LINE" went into it. */
static void test_closed_stdio(void **state)
{
    char *dir = test_make_temp_dir();
    char *result;
    (void)state;
    assert_exited_0(run_child(child_closed_stdio, dir));
    result = read_result(dir);
    if (strcmp(result, "0 0 ") != 0)
        fail_msg("rc, times a standard descriptor was open, message: %s",
                 result);
    free(result);
    test_remove_tree(dir);
}

/* ---- address space too small for the async writer's staging image ---- */

enum { BIG_VALS = 16 << 20 }; /* 64 MiB of floats */

/* The process's mapped bytes now (/proc/self/statm), or 0. */
static uint64_t mapped_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long pages = 0;
    if (!f)
        return 0;
    if (fscanf(f, "%lu", &pages) != 1)
        pages = 0;
    fclose(f);
    return (uint64_t)pages * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* Under an address-space limit 32 MiB above what is mapped: save_async
 * of 64 MiB (its staging image cannot be mapped), then save, then, the
 * limit lifted, save_async again. Writes "skip" when the limit does not
 * apply (a sanitizer's runtime), else "<rc> <rc> <rc> <first message>". */
static void child_staging_past_memory(const char *dir)
{
    ckpt_var v = {"w", CKPT_DT_FLOAT, {1, {BIG_VALS}}, NULL, NULL, NULL, NULL};
    ckpt_saver *s = NULL;
    struct rlimit rl;
    char path[4200], first[1024] = "";
    int rc[3] = {1, 1, 1};
    FILE *f;
    v.data = calloc(BIG_VALS, sizeof(float));
    if (!v.data || ckpt_saver_open(&s, dir, NULL) != 0 ||
        ckpt_saver_add_var(s, &v) != 0)
        _exit(2);
    snprintf(path, sizeof(path), "%s/result", dir);
    if (getrlimit(RLIMIT_AS, &rl) != 0)
        _exit(2);
    rl.rlim_cur = (rlim_t)(mapped_bytes() + ((uint64_t)32 << 20));
    if (TEST_SANITIZED || setrlimit(RLIMIT_AS, &rl) != 0) {
        f = fopen(path, "w");
        if (!f || fputs("skip", f) < 0 || fclose(f) != 0)
            _exit(3);
        return;
    }
    rc[0] = ckpt_saver_save_async(s, 1, NULL);
    if (rc[0] != 0)
        snprintf(first, sizeof(first), "%s", ckpt_error_last()->message);
    rc[1] = ckpt_saver_save(s, 2, NULL);
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_AS, &rl) != 0)
        _exit(2);
    rc[2] = ckpt_saver_save_async(s, 3, NULL);
    if (rc[2] == 0)
        rc[2] = ckpt_saver_wait(s, 0, -1);
    ckpt_saver_free(s);
    free(v.data);
    f = fopen(path, "w");
    if (!f)
        _exit(3);
    fprintf(f, "%d %d %d %s", rc[0], rc[1], rc[2], first);
    if (fclose(f) != 0)
        _exit(3);
}

/* Too little address space for the async writer's staging image: the
 * save_async fails with CKPT_ENOMEM saying what it could not map, and the
 * saver stays usable (a sync save needs no image; with the limit lifted
 * the next save_async works). Checked, not changed: a guard for the
 * behaviour. */
static void test_staging_image_past_address_space(void **state)
{
    char *dir = test_make_temp_dir();
    char *result, want[64];
    (void)state;
    assert_exited_0(run_child(child_staging_past_memory, dir));
    result = read_result(dir);
    if (strcmp(result, "skip") == 0) {
        free(result);
        test_remove_tree(dir);
        skip(); /* no address-space limit under a sanitizer */
        return;
    }
    snprintf(want, sizeof(want), "%d 0 0 ", CKPT_ENOMEM);
    if (strncmp(result, want, strlen(want)) != 0 ||
        !strstr(result, "staging image of 67108864 bytes: Cannot allocate "
                        "memory"))
        fail_msg("save_async, save, save_async, message: %s", result);
    free(result);
    test_remove_tree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_file_size_limit_sync),
        cmocka_unit_test(test_file_size_limit_async),
        cmocka_unit_test(test_closed_stdio),
        cmocka_unit_test(test_staging_image_past_address_space),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
