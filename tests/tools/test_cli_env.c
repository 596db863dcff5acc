/* tests/tools/test_cli_env.c - the `ckpt` tool in a hostile environment
 * rather than on hostile files: fewer file descriptors than a checkpoint
 * has data files (ulimit -n); a temporary directory that cannot take the
 * output held there (ulimit -f); stderr closed while output is held in a
 * temporary file; a small stack (ulimit -s). Also that the runs' own
 * captured output goes where $TMPDIR says. */
#include "cli_run.h"

#include <fcntl.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define SHARDS 100

/* A checkpoint `<dir>/ckpt` of SHARDS data files, tensor "tNNN" (one
 * float, NNN) in data file SHARDS - 1 - NNN; returns the prefix. */
static char *write_sharded(const char *dir)
{
    char *prefix = test_path(dir, "ckpt");
    test_write_tensor_per_shard(prefix, SHARDS);
    return prefix;
}

/* The child keeps only 0-2 and may open 9 more descriptors: far fewer
 * than the data files, and than the 64 the reader would keep open. */
static void twelve_descriptors(const void *arg)
{
    struct rlimit twelve = {12, 12};
    (void)arg;
    for (int fd = 3; fd < 1024; fd++)
        close(fd);
    if (setrlimit(RLIMIT_NOFILE, &twelve) != 0)
        _exit(126);
}

/* verify and inspect --values of a checkpoint with 100 data files under
 * ulimit -n 12: every tensor read and checked, exit 0. They failed once
 * the tool held 9 data files: 'Too many open files', verify reporting
 * intact data files as damaged. */
static void test_verify_inspect_few_descriptors(void **state)
{
    char *dir = test_make_temp_dir();
    char *prefix = write_sharded(dir);
    const char *verify[] = {"verify", prefix, NULL};
    const char *inspect[] = {"inspect", prefix, "--values", NULL};
    cli_run r;
    (void)state;
#ifdef CKPT_CLI_UNDER_MEMCHECK
    skip(); /* valgrind needs descriptors of its own */
#endif
    r = cli_run_with(CKPT_CLI_PATH, NULL, verify, twelve_descriptors, NULL);
    expect_status(&r, 0);
    expect_contains(r.out, ": OK, 100 tensors");
    run_free(&r);
    r = cli_run_with(CKPT_CLI_PATH, NULL, inspect, twelve_descriptors, NULL);
    expect_status(&r, 0);
    expect_contains(r.out, "t000");
    expect_contains(r.out, "t099");
    expect_contains(r.out, "[99]");
    if (strstr(r.err, "Too many open files"))
        fail_msg("stderr: %s", r.err);
    run_free(&r);
    free(prefix);
    test_remove_tree(dir);
}

/* verify of that checkpoint with two data files damaged (data file 20,
 * holding t079, emptied; data file 50, holding t049, removed) under
 * ulimit -n 12: the two tensors named with what is wrong, exit 1. When
 * the one pass found damage, the tool tried to open every data file
 * itself (to name each one that cannot be opened once) while the reader
 * held the descriptors the limit leaves: all 100 were reported as
 * 'open_read ...: Too many open files', and the two real findings were
 * not printed. */
static void test_verify_damage_few_descriptors(void **state)
{
    char *dir = test_make_temp_dir();
    char *prefix = write_sharded(dir);
    char path[4200], want[4400];
    const char *verify[] = {"verify", prefix, NULL};
    cli_run r;
    (void)state;
#ifdef CKPT_CLI_UNDER_MEMCHECK
    skip(); /* valgrind needs descriptors of its own */
#endif
    snprintf(path, sizeof(path), "%s.data-00020-of-00100", prefix);
    test_write_file(path, "", 0);
    snprintf(path, sizeof(path), "%s.data-00050-of-00100", prefix);
    assert_int_equal(unlink(path), 0);
    r = cli_run_with(CKPT_CLI_PATH, NULL, verify, twelve_descriptors, NULL);
    expect_status(&r, 1);
    expect_contains(r.out, ": DAMAGED, 2 of 100 tensors");
    snprintf(want, sizeof(want),
             "%s.data-00020-of-00100: tensor 't079': record at offset 0, 4 "
             "bytes, runs past the end of the data file (0 bytes)",
             prefix);
    expect_contains(r.err, want);
    snprintf(want, sizeof(want),
             "%s.data-00050-of-00100: No such file or directory", prefix);
    expect_contains(r.err, want);
    if (strstr(r.err, "Too many open files"))
        fail_msg("stderr: %s", r.err);
    run_free(&r);
    free(prefix);
    test_remove_tree(dir);
}

/* ---- output held in a temporary file --------------------------------- */

/* Zeros enough that `inspect --values=all` prints about 9.6 MB, past the
 * 8 MiB the tool holds in memory before it moves to a temporary file. */
#define ZEROS 3200000

/* A checkpoint `<dir>/big` of one float tensor "z" of ZEROS zeros. */
static char *write_zeros(const char *dir)
{
    ckpt_bundle_writer *w = NULL;
    ckpt_shape shape = {1, {ZEROS}};
    float *z = calloc(ZEROS, sizeof(float));
    char *prefix = test_path(dir, "big");
    assert_non_null(z);
    assert_ckpt_ok(ckpt_bundle_writer_open(&w, prefix, NULL));
    assert_ckpt_ok(ckpt_bundle_writer_add(w, "z", CKPT_DT_FLOAT, &shape, z,
                                          ZEROS * sizeof(float)));
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);
    free(z);
    return prefix;
}

/* What a run with its stdout on a pipe gave: the pipe's bytes, which no
 * file-size limit applies to, and the exit status. */
typedef struct piped_run {
    int status; /* exit code, or -1 when killed */
    char *out;
    size_t out_len;
    char *err; /* stderr, through a file in `dir` */
} piped_run;

/* `ckpt args...` under a file-size limit of `fsize` bytes (0: none). */
static piped_run run_piped(const char *dir, const char *const *args,
                           rlim_t fsize)
{
    const char *argv[8];
    char *err_path = test_path(dir, "stderr.txt");
    piped_run r = {-1, NULL, 0, NULL};
    size_t cap = 1 << 20, n = 0;
    int fds[2], status = 0;
    pid_t pid;
    argv[0] = CKPT_CLI_PATH;
    for (int i = 0; args[i]; i++) {
        argv[i + 1] = args[i];
        argv[i + 2] = NULL;
    }
    assert_int_equal(pipe(fds), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct rlimit rl = {fsize, fsize};
        int fe = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fe < 0 || dup2(fds[1], 1) != 1 || dup2(fe, 2) != 2)
            _exit(126);
        close(fds[0]);
        if (fsize && setrlimit(RLIMIT_FSIZE, &rl) != 0)
            _exit(126);
        execv(CKPT_CLI_PATH, (char *const *)argv);
        _exit(127);
    }
    close(fds[1]);
    r.out = malloc(cap);
    for (;;) {
        ssize_t got;
        if (n == cap)
            r.out = realloc(r.out, cap *= 2);
        assert_non_null(r.out);
        got = read(fds[0], r.out + n, cap - n);
        if (got <= 0)
            break;
        n += (size_t)got;
    }
    close(fds[0]);
    r.out_len = n;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.err = test_read_text(err_path, NULL);
    free(err_path);
    return r;
}

/* `inspect --values=all` (text and --json) whose held output the
 * temporary directory cannot take: with a file-size limit of 1 MiB the
 * temporary file takes none of the 8 MiB moved to it, with 8.5 MiB it
 * takes those and fails later (text with the first, --json with the
 * second: both go through the one holder). Either way the output is held in
 * memory instead, and stdout is byte for byte that of a run without the limit.
 * The tool failed instead, with "ckpt ckpt: cannot hold the output in a
 * temporary file in /tmp: File too large" (its prefix doubled). */
static void test_held_output_falls_back_to_memory(void **state)
{
    static const rlim_t limits[] = {1 << 20, 8704 << 10};
    char *dir = test_make_temp_dir();
    char *prefix = write_zeros(dir);
    const char *text[] = {"inspect", prefix, "--values=all", NULL};
    const char *json[] = {"inspect", prefix, "--values=all", "--json", NULL};
    const char *const *cmds[] = {text, json};
    (void)state;
    for (int c = 0; c < 2; c++) {
        piped_run want = run_piped(dir, cmds[c], 0);
        assert_int_equal(want.status, 0);
        assert_true(want.out_len > ((size_t)9 << 20));
        { /* text: the move fails; JSON: a later write does */
            int l = c;
            piped_run got = run_piped(dir, cmds[c], limits[l]);
            if (got.status != 0)
                fail_msg("limit %lu: exit %d: %s", (unsigned long)limits[l],
                         got.status, got.err);
            assert_int_equal(got.out_len, want.out_len);
            assert_memory_equal(got.out, want.out, want.out_len);
            assert_string_equal(got.err, "");
            free(got.out);
            free(got.err);
        }
        free(want.out);
        free(want.err);
    }
    free(prefix);
    test_remove_tree(dir);
}

static void small_stack(const void *arg)
{
    struct rlimit small = {64 << 10, 64 << 10};
    (void)arg;
    if (setrlimit(RLIMIT_STACK, &small) != 0)
        _exit(126);
}

/* `inspect --values=all` of 9.6 MB of values under ulimit -s 64: the
 * held text is copied out of its temporary file through a heap buffer,
 * and the output is that of a run without the limit. It was a 64 KiB
 * array on the stack, and the tool died of SIGSEGV. Skipped in sanitizer
 * builds, whose frames need more stack. */
static void test_held_output_small_stack(void **state)
{
    char *dir, *prefix;
    const char *args[] = {"inspect", NULL, "--values=all", NULL};
    cli_run want, got;
    (void)state;
    if (TEST_SANITIZED)
        skip();
    dir = test_make_temp_dir();
    prefix = write_zeros(dir);
    args[1] = prefix;
    want = cli_run_with(CKPT_CLI_PATH, NULL, args, NULL, NULL);
    expect_status(&want, 0);
    got = cli_run_with(CKPT_CLI_PATH, NULL, args, small_stack, NULL);
    expect_status(&got, 0);
    assert_string_equal(got.err, "");
    assert_int_equal(strlen(got.out), strlen(want.out));
    assert_true(strcmp(got.out, want.out) == 0);
    run_free(&want);
    run_free(&got);
    free(prefix);
    test_remove_tree(dir);
}

/* A checkpoint `<dir>/bad` of `n` int32 scalars named by 500 characters
 * ("ttt...tNNNNNN": a damaged tensor costs verify's list about 850 bytes),
 * every record damaged (the data file's bytes inverted). */
static char *write_all_damaged(const char *dir, int n)
{
    ckpt_bundle_writer *w = NULL;
    ckpt_shape scalar = {0, {0}};
    char *prefix = test_path(dir, "bad");
    char *data = test_path(dir, "bad.data-00000-of-00001");
    uint8_t *bytes;
    size_t len = 0;
    assert_ckpt_ok(ckpt_bundle_writer_open(&w, prefix, NULL));
    for (int i = 0; i < n; i++) {
        char name[512];
        int32_t v = i;
        memset(name, 't', 494);
        snprintf(name + 494, sizeof(name) - 494, "%06d", i);
        assert_ckpt_ok(
            ckpt_bundle_writer_add(w, name, CKPT_DT_INT32, &scalar, &v, 4));
    }
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);
    bytes = test_read_file(data, &len);
    assert_non_null(bytes);
    for (size_t i = 0; i < len; i++)
        bytes[i] ^= 0xff;
    test_write_file(data, bytes, len);
    free(bytes);
    free(data);
    return prefix;
}

static void close_stderr(const void *arg)
{
    (void)arg;
    close(2);
}

/* verify --json with stderr closed, of 12,000 damaged tensors: the list of
 * them (about 10 MB) is held in a temporary file, which took fd 2, so each
 * damaged tensor's line for stderr went into the held list and stdout was
 * no JSON. The held file now stays off 0-2: the document parses and lists
 * every tensor. */
static void test_held_file_off_closed_stderr(void **state)
{
    enum { N = 12000 };
    char *dir = test_make_temp_dir();
    char *prefix = write_all_damaged(dir, N);
    const char *args[] = {"verify", "--json", prefix, NULL};
    json_object *doc, *damaged = NULL;
    cli_run r;
    (void)state;
    r = cli_run_with(CKPT_CLI_PATH, NULL, args, close_stderr, NULL);
    expect_status(&r, 1);
    assert_true(strlen(r.out) > ((size_t)9 << 20)); /* past 8 MiB: held in
                                                       the file */
    doc = json_tokener_parse(r.out);
    if (!doc)
        fail_msg("stdout is not JSON (%zu bytes)", strlen(r.out));
    assert_true(json_object_object_get_ex(doc, "damaged", &damaged));
    assert_int_equal(json_object_array_length(damaged), N);
    if (strstr(r.out, "ckpt verify:"))
        fail_msg("a line for stderr is in stdout");
    json_object_put(doc);
    run_free(&r);
    free(prefix);
    test_remove_tree(dir);
}

/* In the child: exit 99 unless its stdout, the file cli_run_with captures
 * it in, lies in the directory `arg`. */
static void stdout_in(const void *arg)
{
    const char *dir = arg;
    char target[4096];
    ssize_t n = readlink("/proc/self/fd/1", target, sizeof(target) - 1);
    if (n < 0)
        _exit(98);
    target[n] = '\0';
    if (strncmp(target, dir, strlen(dir)) != 0 || target[strlen(dir)] != '/')
        _exit(99);
}

/* The runs' captured output goes where $TMPDIR says, as every other file
 * of the tests (test_temp_base); it went to /tmp whatever TMPDIR said. */
static void test_runs_capture_in_tmpdir(void **state)
{
    char *dir = test_make_temp_dir();
    const char *old = getenv("TMPDIR");
    char *saved = old ? strdup(old) : NULL;
    const char *args[] = {"--help", NULL};
    cli_run r;
    (void)state;
    assert_int_equal(setenv("TMPDIR", dir, 1), 0);
    r = cli_run_with(CKPT_CLI_PATH, NULL, args, stdout_in, dir);
    if (saved)
        setenv("TMPDIR", saved, 1);
    else
        unsetenv("TMPDIR");
    expect_status(&r, 0);
    expect_contains(r.out, "ckpt");
    run_free(&r);
    free(saved);
    test_remove_tree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_runs_capture_in_tmpdir),
        cmocka_unit_test(test_verify_inspect_few_descriptors),
        cmocka_unit_test(test_verify_damage_few_descriptors),
        cmocka_unit_test(test_held_output_falls_back_to_memory),
        cmocka_unit_test(test_held_file_off_closed_stderr),
        cmocka_unit_test(test_held_output_small_stack),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
