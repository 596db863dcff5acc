/* tests/tools/test_cli_env.c - the `ckpt` tool in a hostile environment
 * rather than on hostile files: fewer file descriptors than a checkpoint
 * has data files (ulimit -n). */
#include "cli_run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define SHARDS 100

/* A checkpoint `<dir>/ckpt` of SHARDS data files, tensor "tNNN" (one
 * float, NNN) in data file SHARDS - 1 - NNN; returns the prefix. */
static char *write_sharded(const char *dir)
{
    ckpt_bundle_writer_options o = CKPT_BUNDLE_WRITER_OPTIONS_INIT;
    ckpt_bundle_writer *w = NULL;
    ckpt_shape one = {1, {1}};
    char *prefix = test_path(dir, "ckpt");
    o.num_shards = SHARDS;
    assert_ckpt_ok(ckpt_bundle_writer_open(&w, prefix, &o));
    for (int i = 0; i < SHARDS; i++) {
        char name[16];
        float v = (float)i;
        snprintf(name, sizeof(name), "t%03d", i);
        assert_ckpt_ok(ckpt_bundle_writer_select_shard(w, SHARDS - 1 - i));
        assert_ckpt_ok(
            ckpt_bundle_writer_add(w, name, CKPT_DT_FLOAT, &one, &v, 4));
    }
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_verify_inspect_few_descriptors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
