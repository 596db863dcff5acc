/* tests/io/test_mapped_read.c - the page-cache path's mapped pieces
 * (io/mapped_read.h): bytes and CRCs copied out of a mapping at any offset
 * and length, with or without a destination, the same as the pread path
 * gives (ckpt__read_extents_buffered both ways, on one and two threads,
 * destinations that alias their file offset included); a file truncated
 * right before a piece's copy gives CKPT_EIO naming the file (the SIGBUS
 * caught) and the process lives on; a SIGBUS that is not a mapped read's
 * (sent by kill(), or a fault elsewhere) still ends the process, or reaches
 * the application's handler found at the first mapped read (SA_SIGINFO and
 * SA_RESETHAND kept); a handler installed after that is left alone and
 * reads use pread; no mapping for another file system, a file past its
 * size, or with mapped reads turned off. */
#include "test_util.h"

#include "extent_fixture.h"

#include "common/internal.h"
#include "io/buffered_read.h"
#include "io/fs_internal.h"
#include "io/mapped_read.h"
#include "support/fs_forward.h"
#include "util/crc32c.h"

#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define KIB ((size_t)1024)
#define FILE_BYTES (3 * KIB * KIB + 4097)

typedef struct fixture {
    char *dir;
    char path[4096];
    uint8_t *data;
} fixture;

static int setup(void **state)
{
    fixture *f = test_dir_fixture_new(sizeof(*f), offsetof(fixture, dir));
    f->data = malloc(FILE_BYTES);
    assert_non_null(f->data);
    test_fill_random(f->data, FILE_BYTES, 7);
    snprintf(f->path, sizeof(f->path), "%s/data", f->dir);
    test_write_file(f->path, f->data, FILE_BYTES); /* in the page cache */
    ckpt__mapped_reads_force(-1);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    ckpt__mapped_reads_force(-1);
    ckpt__mapped_reads_before_copy(NULL, NULL);
    free(f->data);
    return test_dir_fixture_teardown(state);
}

/* cmocka installs its own SIGBUS handler for each test (and puts back
 * what was there after it): install the mapped reads' handler again, in
 * front of it. Skip (saying why) where that cannot be done. */
static int mapped_or_skip(void)
{
    ckpt__mapped_reads_force(-2);
    if (ckpt__mapped_reads_available())
        return 1;
    print_message("SKIPPED: SIGBUS is ignored here: reads use pread\n");
    skip();
    return 0;
}

/* A child process's start: SIGBUS at its default disposition, the mapped
 * reads' handler not installed yet. */
static void child_from_default(void)
{
    signal(SIGBUS, SIG_DFL);
    ckpt__mapped_reads_force(-2);
}

/* Touch a mapping of the fixture's file past its new end (truncated). */
static void fault_on_truncated_mapping(const char *path)
{
    int fd = open(path, O_RDONLY);
    volatile uint8_t *map =
        mmap(NULL, FILE_BYTES, PROT_READ, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED || truncate(path, 0) != 0)
        _exit(4);
    (void)map[KIB * KIB];
}

static ckpt_file *open_posix(const fixture *f)
{
    const ckpt_fs *fs = ckpt_fs_posix();
    ckpt_file *file = NULL;
    assert_ckpt_ok(fs->open_read(&file, f->path, fs->payload));
    return file;
}

static void close_posix(ckpt_file *file)
{
    ckpt_fs_posix()->close(file, ckpt_fs_posix()->payload);
}

static void test_pieces_copied_with_crc(void **state)
{
    fixture *f = *state;
    static const struct {
        uint64_t at;
        size_t len;
    } cases[] = {
        {0, 256 * KIB},
        {4095, 1},
        {KIB * KIB + 7, 256 * KIB},
        {2 * KIB * KIB, 64},
        {FILE_BYTES - 100, 100},   /* the file's end */
        {3 * KIB * KIB - 5, 4102}, /* across the last page */
    };
    ckpt__map_window w;
    ckpt_file *file;
    uint32_t crc0 = 0;
    uint8_t *dst = malloc(256 * KIB + 16);
    assert_non_null(dst);
    if (!mapped_or_skip()) {
        free(dst);
        return;
    }
    file = open_posix(f);
    ckpt__map_window_init(&w, NULL, file);
    assert_true(w.fd >= 0);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint32_t crc = 0, only = 0;
        uint32_t want = ckpt__crc32c(f->data + cases[i].at, cases[i].len);
        memset(dst, 0xa5, 256 * KIB + 16);
        assert_int_equal(ckpt__mapped_piece(&w, f->path, cases[i].at,
                                            cases[i].len, dst + 3, &crc),
                         0);
        assert_int_equal(crc, want);
        assert_memory_equal(dst + 3, f->data + cases[i].at, cases[i].len);
        assert_int_equal(dst[2], 0xa5);
        assert_int_equal(dst[3 + cases[i].len], 0xa5);
        /* no destination: the checksum alone */
        assert_int_equal(ckpt__mapped_piece(&w, f->path, cases[i].at,
                                            cases[i].len, NULL, &only),
                         0);
        assert_int_equal(only, want);
    }
    /* past the file's size: not through the mapping */
    assert_int_equal(
        ckpt__mapped_piece(&w, f->path, FILE_BYTES - 10, 11, dst, &crc0), 1);
    assert_int_equal(
        ckpt__mapped_piece(&w, f->path, FILE_BYTES + 1, 1, dst, &crc0), 1);
    ckpt__map_window_dispose(&w);
    close_posix(file);
    free(dst);
}

/* Extents over the whole file (some without a destination, some whose
 * destination sits 16 bytes past its file offset modulo 4 KiB), read
 * through the buffered path with mapped reads on and off, on one and two
 * threads: the same bytes and CRCs. */
static void read_all(const fixture *f, int mapped, int threads)
{
    ckpt__extent ext[8];
    int dst_wanted[8] = {1, 0, 1, 1, 0, 1, 1, 1};
    size_t n = 0;
    uint64_t at = 0;
    const uint64_t sizes[8] = {1,         300 * KIB, 256 * KIB, 4095,
                               KIB * KIB, 77,        900 * KIB};
    ckpt_file *file;
    memset(ext, 0, sizeof(ext));
    for (size_t i = 0; i < 7; i++) {
        ext[n].offset = at;
        ext[n].size = sizes[i];
        at += sizes[i] + 13;
        n++;
    }
    ext[n].offset = at;
    ext[n].size = FILE_BYTES - at;
    n++;
    ext_give_destinations(ext, n, dst_wanted);
    ckpt__mapped_reads_force(mapped);
    file = open_posix(f);
    assert_ckpt_ok(
        ckpt__read_extents_buffered(NULL, file, f->path, ext, n, threads));
    close_posix(file);
    ext_check(f->data, ext, n);
    ext_free_destinations(ext, n);
}

static void test_same_as_pread(void **state)
{
    fixture *f = *state;
    if (!mapped_or_skip())
        return;
    for (int threads = 1; threads <= 2; threads++) {
        read_all(f, 1, threads);
        read_all(f, 0, threads);
    }
}

typedef struct truncation {
    const char *path;
    int calls;
} truncation;

static void truncate_file(void *arg)
{
    truncation *t = arg;
    if (t->calls++ == 1) /* the second piece */
        assert_int_equal(truncate(t->path, 0), 0);
}

static void test_truncated_during_read_is_eio(void **state)
{
    fixture *f = *state;
    truncation t = {f->path, 0};
    ckpt__extent ext[1];
    ckpt_file *file;
    char want[4200];
    if (!mapped_or_skip())
        return;
    memset(ext, 0, sizeof(ext));
    ext[0].offset = 0;
    ext[0].size = FILE_BYTES;
    ext_give_destinations(ext, 1, NULL);
    file = open_posix(f);
    ckpt__mapped_reads_before_copy(truncate_file, &t);
    assert_ckpt_error(
        ckpt__read_extents_buffered(NULL, file, f->path, ext, 1, 1), CKPT_EIO,
        "truncated by another process");
    ckpt__mapped_reads_before_copy(NULL, NULL);
    snprintf(want, sizeof(want), "%s: the 262144 bytes at offset 262144",
             f->path);
    assert_non_null(strstr(ckpt_error_last()->message, want));
    close_posix(file);
    ext_free_destinations(ext, 1);
    /* the handler is still ours, for the next read */
    assert_true(ckpt__mapped_reads_available());
}

/* The guarded copy of a mapping whose file was truncated under it. */
static void test_guard_catches_sigbus(void **state)
{
    fixture *f = *state;
    uint8_t *map, *dst = malloc(64 * KIB);
    uint32_t crc = 0;
    int fd = open(f->path, O_RDONLY);
    assert_true(fd >= 0);
    assert_non_null(dst);
    if (!mapped_or_skip()) {
        close(fd);
        free(dst);
        return;
    }
    map = mmap(NULL, FILE_BYTES, PROT_READ, MAP_SHARED, fd, 0);
    assert_true(map != MAP_FAILED);
    assert_int_equal(ckpt__mapped_copy_guarded(map, 64 * KIB, dst, &crc), 0);
    assert_int_equal(crc, ckpt__crc32c(f->data, 64 * KIB));
    assert_int_equal(truncate(f->path, 4096), 0);
    assert_int_equal(
        ckpt__mapped_copy_guarded(map + KIB * KIB, 64 * KIB, dst, &crc), 1);
    assert_int_equal(ckpt__mapped_copy_guarded(map + 8192, 4096, NULL, &crc),
                     1);
    /* still fine below the new end */
    assert_int_equal(ckpt__mapped_copy_guarded(map, 4096, dst, &crc), 0);
    assert_int_equal(crc, ckpt__crc32c(f->data, 4096));
    munmap(map, FILE_BYTES);
    close(fd);
    free(dst);
}

/* In a child: `how` 0 raises SIGBUS, 1 touches a truncated mapping outside
 * any guarded copy. The child must die of SIGBUS. */
static void expect_child_killed(const fixture *f, int how)
{
    pid_t pid = fork();
    int status = 0;
    assert_true(pid >= 0);
    if (pid == 0) {
        child_from_default();
        if (!ckpt__mapped_reads_available())
            _exit(3);
        if (how == 0)
            raise(SIGBUS);
        else
            fault_on_truncated_mapping(f->path);
        _exit(0); /* survived: wrong */
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGBUS);
}

static void test_other_sigbus_still_kills(void **state)
{
    fixture *f = *state;
    if (!mapped_or_skip())
        return;
    expect_child_killed(f, 0);
    expect_child_killed(f, 1);
}

static void app_handler(int sig)
{
    _exit(sig == SIGBUS ? 9 : 8);
}

static void app_siginfo_handler(int sig, siginfo_t *info, void *context)
{
    struct sigaction cur;
    (void)context;
    /* SA_RESETHAND kept: the default is back while this runs */
    if (sigaction(SIGBUS, NULL, &cur) != 0 || cur.sa_handler != SIG_DFL)
        _exit(11);
    _exit(sig == SIGBUS && info && info->si_signo == SIGBUS && info->si_code > 0
              ? 10
              : 12);
}

/* In a child: the application's handler installed `before` or after the
 * first mapped read's; a fault (or, with `raise_it`, a raise) outside any
 * mapped read must reach it; returns the child's exit status. */
static int child_with_app_handler(const fixture *f, int before, int siginfo,
                                  int raise_it)
{
    pid_t pid = fork();
    int status = 0;
    assert_true(pid >= 0);
    if (pid == 0) {
        struct sigaction sa, cur;
        child_from_default();
        memset(&sa, 0, sizeof(sa));
        if (siginfo) {
            sa.sa_sigaction = app_siginfo_handler;
            sa.sa_flags = SA_SIGINFO | SA_RESETHAND; /* as Open MPI's */
        } else {
            sa.sa_handler = app_handler;
        }
        sigemptyset(&sa.sa_mask);
        if (!before && !ckpt__mapped_reads_available())
            _exit(2);
        if (sigaction(SIGBUS, &sa, NULL) != 0)
            _exit(2);
        /* in front of a handler found at the first read; never in front
         * of one installed after it */
        if (ckpt__mapped_reads_available() != before)
            _exit(3);
        if (sigaction(SIGBUS, NULL, &cur) != 0)
            _exit(4);
        if (!before && cur.sa_handler != app_handler)
            _exit(5);
        if (raise_it)
            raise(SIGBUS);
        else
            fault_on_truncated_mapping(f->path);
        _exit(7);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    return WEXITSTATUS(status);
}

static void test_application_handler_kept(void **state)
{
    fixture *f = *state;
    if (!mapped_or_skip())
        return;
    assert_int_equal(child_with_app_handler(f, 1, 0, 0), 9);
    assert_int_equal(child_with_app_handler(f, 1, 0, 1), 9);
    assert_int_equal(child_with_app_handler(f, 1, 1, 0), 10);
    assert_int_equal(child_with_app_handler(f, 0, 0, 0), 9);
    assert_int_equal(child_with_app_handler(f, 0, 0, 1), 9);
}

/* SIGBUS ignored, with SA_SIGINFO among the flags (sigaction keeps them
 * with SIG_IGN): mapped reads are off, as for a plain SIG_IGN, and no
 * handler is installed in front of it (it would call SIG_IGN's value, 1,
 * as a function for a SIGBUS not its own). In a child. */
static void test_ignored_with_siginfo_flag_is_pread(void **state)
{
    pid_t pid;
    int status = 0;
    (void)state;
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct sigaction sa, cur;
        child_from_default();
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = SIG_IGN;
        sa.sa_flags = SA_SIGINFO;
        sigemptyset(&sa.sa_mask);
        if (sigaction(SIGBUS, &sa, NULL) != 0)
            _exit(2);
        if (ckpt__mapped_reads_available())
            _exit(3);
        if (sigaction(SIGBUS, NULL, &cur) != 0 || cur.sa_handler != SIG_IGN)
            _exit(4);
        raise(SIGBUS); /* still ignored */
        _exit(0);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

/* A handler that passes every SIGBUS on to what it found when it was
 * installed (as most do), and how often it ran. */
static struct sigaction chained_old;
static volatile sig_atomic_t chained_runs;

static void chaining_handler(int sig, siginfo_t *info, void *context)
{
    chained_runs++;
    if (chained_runs > 3)
        _exit(8); /* looping */
    if ((chained_old.sa_flags & SA_SIGINFO) &&
        chained_old.sa_handler != SIG_DFL && chained_old.sa_handler != SIG_IGN)
        chained_old.sa_sigaction(sig, info, context);
}

/* The application installs its chaining handler, the first mapped read
 * installs the library's in front of it, then the application installs
 * its handler again (which now passes on to the library's, which passes
 * on to it): a SIGBUS not a mapped read's runs it no more than twice and
 * ends the process with SIGBUS, instead of the two calling each other
 * until the stack runs out. In a child. */
static void test_handler_installed_again_does_not_loop(void **state)
{
    pid_t pid;
    int status = 0;
    (void)state;
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct sigaction sa;
        child_from_default();
        memset(&sa, 0, sizeof(sa));
        sa.sa_sigaction = chaining_handler;
        sa.sa_flags = SA_SIGINFO;
        sigemptyset(&sa.sa_mask);
        if (sigaction(SIGBUS, &sa, &chained_old) != 0)
            _exit(2);
        if (!ckpt__mapped_reads_available())
            _exit(3);
        if (sigaction(SIGBUS, &sa, &chained_old) != 0)
            _exit(4);
        raise(SIGBUS);
        _exit(5);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (WIFEXITED(status))
        fail_msg("child exited with status %d", WEXITSTATUS(status));
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGBUS);
}

/* A handler that recovers from SIGBUS by jumping out of it. */
static sigjmp_buf recover_jump;
static volatile sig_atomic_t recovered;

static void recovering_handler(int sig)
{
    (void)sig;
    recovered++;
    siglongjmp(recover_jump, 1);
}

/* An application handler found at the first mapped read that leaves by
 * siglongjmp gets every SIGBUS not a mapped read's, not only the first.
 * In a child. */
static void test_recovering_handler_gets_every_sigbus(void **state)
{
    pid_t pid;
    int status = 0;
    (void)state;
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct sigaction sa;
        child_from_default();
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = recovering_handler;
        sigemptyset(&sa.sa_mask);
        if (sigaction(SIGBUS, &sa, NULL) != 0)
            _exit(2);
        if (!ckpt__mapped_reads_available())
            _exit(3);
        for (int i = 0; i < 3; i++)
            if (sigsetjmp(recover_jump, 1) == 0)
                raise(SIGBUS);
        _exit(recovered == 3 ? 0 : 4);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (WIFSIGNALED(status))
        fail_msg("child killed by signal %d", WTERMSIG(status));
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_no_mapping_where_not_posix_or_off(void **state)
{
    fixture *f = *state;
    ckpt_fs_forward fwd;
    ckpt__map_window w;
    ckpt_file *file = open_posix(f);
    uint32_t crc = 0;
    uint8_t byte;
    /* another file system (here forwarding to POSIX): its pread is its own */
    ckpt_fs_forward_init(&fwd, NULL);
    assert_int_equal(ckpt__posix_read_fd(&fwd.fs, file), -1);
    ckpt__map_window_init(&w, &fwd.fs, file);
    assert_int_equal(w.fd, -1);
    assert_int_equal(ckpt__mapped_piece(&w, f->path, 0, 1, &byte, &crc), 1);
    ckpt__map_window_dispose(&w);
    /* turned off */
    ckpt__mapped_reads_force(0);
    assert_false(ckpt__mapped_reads_available());
    ckpt__map_window_init(&w, NULL, file);
    assert_int_equal(w.fd, -1);
    ckpt__map_window_dispose(&w);
    ckpt__mapped_reads_force(-1);
    assert_true(ckpt__posix_read_fd(NULL, file) >= 0);
    close_posix(file);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_pieces_copied_with_crc, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_same_as_pread, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncated_during_read_is_eio,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_guard_catches_sigbus, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_other_sigbus_still_kills, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_application_handler_kept, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_no_mapping_where_not_posix_or_off,
                                        setup, teardown),
        cmocka_unit_test(test_ignored_with_siginfo_flag_is_pread),
        cmocka_unit_test(test_handler_installed_again_does_not_loop),
        cmocka_unit_test(test_recovering_handler_gets_every_sigbus),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
