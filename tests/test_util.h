/* tests/test_util.h - helpers shared by the cmocka tests: temporary
 * directories, the TensorFlow test vectors in ../shared (skipping when they
 * are absent), and asserting on ckpt error codes and messages. */
#ifndef CKPT_TESTS_TEST_UTIL_H
#define CKPT_TESTS_TEST_UTIL_H

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "ckpt.h"

/* Every fixed-size dtype (all but STRING, RESOURCE and VARIANT), for the
 * tests that run each one; test_every_fixed_dtype (format) checks that it
 * names every dtype ckpt_dtype_size knows. */
#define TEST_NUM_FIXED_DTYPES 25
extern const int test_fixed_dtypes[TEST_NUM_FIXED_DTYPES];

/* Where tests make temporary files: $TMPDIR, else (unset or empty) /tmp. */
const char *test_temp_base(void);

/* Make a fresh empty directory under test_temp_base(); the returned path
 * is malloc'd. Fails the test on error. */
char *test_make_temp_dir(void);

/* What a test's log callback received: every message at `min_level` or
 * above, one a line, appended under a lock (savers log from their writer
 * thread too); cut at the buffer's end. Set up with test_log_init, pass
 * test_log_capture as the log and the test_log as its payload, read
 * `text` once the logging has ended. */
typedef struct test_log {
    pthread_mutex_t mu;
    int min_level;
    char text[8192];
} test_log;
void test_log_init(test_log *l, int min_level);
void test_log_capture(int level, const char *message, void *payload);

/* How many times `needle` (not empty) occurs in `hay`, overlapping ones
 * included; in one pass (a sanitizer's strstr measures the whole rest of
 * `hay` at each call: quadratic on megabytes of output). */
size_t test_count(const char *hay, const char *needle);

/* A float32 variable of shape [n] named `name` over `data` (no
 * callbacks). */
ckpt_var test_float_var(const char *name, float *data, int64_t n);

/* Write a bundle at `prefix` of `shards` data files (at most 1000), tensor
 * "tNNN" (one float, NNN) in data file shards - 1 - NNN, so that name
 * order visits them backwards: for tests with fewer descriptors than data
 * files. */
void test_write_tensor_per_shard(const char *prefix, int shards);

/* Entry i's name in test_write_many_entries' bundle: "layer_NNNNNNN/kernel"
 * (20 bytes for i < 10^7) into out[0..cap). */
void test_many_entry_name(char *out, size_t cap, size_t i);

/* Write a bundle at `prefix` of `n` scalar-like tensors as a checkpoint
 * of many ranks holds them, for tests bounding memory per index entry:
 * entry i named test_many_entry_name(i), float32 of shape [1, 1] holding
 * (float)i, in one data file. */
void test_write_many_entries(const char *prefix, size_t n);

/* The entry count a per-entry memory test uses: CKPT_TEST_ENTRIES
 * (environment) when it is a number above `above`, for measuring 10^5 or
 * 10^6 entries by hand, else `fallback`. */
size_t test_entries_env(size_t above, size_t fallback);

/* A test fixture whose struct begins with `char *dir`: a zeroed struct of
 * `size` bytes, that member a fresh directory (test_make_temp_dir). Pass
 * offsetof(<struct>, dir) as dir_offset: the test fails unless it is 0
 * (test_dir_fixture_teardown relies on it). */
void *test_dir_fixture_new(size_t size, size_t dir_offset);

/* cmocka teardown of such a fixture (*state): remove the directory tree,
 * free the struct. */
int test_dir_fixture_teardown(void **state);

/* "<dir>/<name>" (malloc'd). */
char *test_path(const char *dir, const char *name);

/* Remove a directory tree (best effort) and free the path. */
void test_remove_tree(char *path);

/* Path of a TF test vector directory (e.g. "tictactoe_ckpt_manager") into a
 * malloc'd string, or NULL after calling cmocka's skip() with a message when
 * ../shared/testdata/tf is absent. */
char *test_tf_vector(const char *name);

/* Assert that `rc` equals `code` and the last error message contains
 * `needle` (when needle is not NULL). */
#define assert_ckpt_error(rc, code, needle)                                    \
    test_assert_ckpt_error((rc), (code), (needle), __FILE__, __LINE__)
void test_assert_ckpt_error(int rc, int code, const char *needle,
                            const char *file, int line);

/* The NULL-argument rule of docs/CONTRIBUTING.md: `call` fails with
 * CKPT_EINVAL and the message is exactly `want` ("<function>: <argument>
 * is NULL"). */
#define EXPECT_NULL_ARG(call, want)                                            \
    do {                                                                       \
        ckpt_error_clear();                                                    \
        assert_ckpt_error((call), CKPT_EINVAL, (want));                        \
        assert_string_equal(ckpt_error_last()->message, (want));               \
    } while (0)

/* Assert that `rc` is 0, printing the last error otherwise. */
#define assert_ckpt_ok(rc) test_assert_ckpt_ok((rc), __FILE__, __LINE__)
void test_assert_ckpt_ok(int rc, const char *file, int line);

/* Read a whole file into a malloc'd buffer (*n set); NULL if missing. */
uint8_t *test_read_file(const char *path, size_t *n);
/* A whole file as a malloc'd NUL-terminated string (*n, when not NULL,
 * its length); fails the test when the file is missing. */
char *test_read_text(const char *path, size_t *n);
/* What this process writes to stderr from test_stderr_begin(path) until
 * test_stderr_end(&capture) goes to the file `path` (fails the test when
 * it cannot); end puts stderr back and returns the text written, malloc'd
 * (the file is removed). */
typedef struct test_stderr {
    int saved_fd;
    char *path;
} test_stderr;
test_stderr test_stderr_begin(const char *path);
char *test_stderr_end(test_stderr *capture);
/* Assert that the file `path` holds exactly the `n` bytes at `data`
 * (failing with the path when it is missing). */
void test_assert_file_is(const char *path, const void *data, size_t n);
/* Write a whole file; fails the test on error. */
void test_write_file(const char *path, const void *data, size_t n);
/* Create the file `name` in `dir` holding one byte ("x"). */
void test_touch(const char *dir, const char *name);
/* 0 when `dir` holds nothing an interrupted save or deletion leaves (no
 * data file without its index, no temporary file ".tempstate" or
 * "checkpoint.tmp", no note "checkpoint.pending"), else -1 with `why`
 * (n bytes) naming the first such file. */
int test_find_leftover(const char *dir, char *why, size_t n);
/* `n` pseudo-random bytes from `seed` (xorshift64; the same seed gives the
 * same bytes). */
void test_fill_random(void *dst, size_t n, uint64_t seed);

/* 1 in a sanitizer build (ASan, TSan, MSan), whose runtime reserves
 * terabytes of address space: an address-space limit cannot apply. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) ||     \
    __has_feature(memory_sanitizer)
#define TEST_SANITIZED 1
#endif
#endif
#ifndef TEST_SANITIZED
#define TEST_SANITIZED 0
#endif

/* Limit the calling process (a child forked to run something hostile, or
 * about to exec a program; both limits survive exec): its address space to
 * `max_memory` bytes (0: no limit; skipped in sanitizer builds, which
 * reserve terabytes of address space for themselves) and its wall-clock
 * time to `seconds` (0: no limit), after which SIGALRM ends it. */
void test_limit_self(uint64_t max_memory, unsigned seconds);

#endif
