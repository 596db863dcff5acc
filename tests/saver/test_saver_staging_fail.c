/* When the kernel cannot back the staging image's pages (madvise
 * MADV_POPULATE_WRITE fails with ENOMEM, as under a memory cgroup at its
 * limit), ckpt_saver_reserve and the first save_async fail with
 * CKPT_ENOMEM instead of touching every page and calling in the OOM
 * killer; the saver stays usable. A kernel without MADV_POPULATE_WRITE
 * (EINVAL) still gets its pages touched and saves. This program defines
 * madvise itself (the library is linked statically into it), forwarding
 * to the next definition unless a failure was asked for. */
#include "saver_test_util.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/* The errno value the next MADV_POPULATE_WRITE fails with (0: none), and
 * how many were asked for. */
static int fail_next_populate;
static int populate_calls;

typedef int (*madvise_fn)(void *, size_t, int);

int madvise(void *addr, size_t len, int advice)
{
    void *sym;
    madvise_fn next;
    if (advice == MADV_POPULATE_WRITE) {
        populate_calls++;
        if (fail_next_populate) {
            errno = fail_next_populate;
            fail_next_populate = 0;
            return -1;
        }
    }
    sym = dlsym(RTLD_NEXT, "madvise");
    if (!sym)
        abort();
    memcpy(&next, &sym, sizeof(next)); /* ISO C has no such cast */
    return next(addr, len, advice);
}

#define NVALUES (1u << 20) /* 4 MiB of floats */

static void check_saved(const char *dir, const char *name, float first)
{
    char *path = test_path(dir, name);
    ckpt_bundle_reader *r = NULL;
    float *back = calloc(NVALUES, sizeof(float));
    assert_non_null(back);
    assert_ckpt_ok(ckpt_bundle_reader_open(&r, path, NULL));
    assert_ckpt_ok(
        ckpt_bundle_reader_read(r, "w", back, NVALUES * sizeof(float)));
    assert_true(back[0] == first && back[NVALUES - 1] == 7.0f);
    ckpt_bundle_reader_free(r);
    free(back);
    free(path);
}

/* The one variable the tests save: 4 MiB of floats, its last 7. */
static float g_w[NVALUES];

/* A saver of `dir` with g_w registered as "w". */
static ckpt_saver *open_one_var_saver(const char *dir)
{
    ckpt_var v = {"w", CKPT_DT_FLOAT, {1, {NVALUES}}, g_w, NULL, NULL, NULL};
    ckpt_saver *s = NULL;
    g_w[NVALUES - 1] = 7.0f;
    assert_ckpt_ok(ckpt_saver_open(&s, dir, NULL));
    assert_ckpt_ok(ckpt_saver_add_var(s, &v));
    return s;
}

static void test_pages_the_kernel_cannot_back(void **state)
{
    char *dir = test_make_temp_dir();
    ckpt_saver *s = open_one_var_saver(dir);
    uint64_t ticket = 5;
    (void)state;

    fail_next_populate = ENOMEM;
    assert_ckpt_error(ckpt_saver_reserve(s), CKPT_ENOMEM,
                      "faulting in a staging image of 4194304 bytes: "
                      "Cannot allocate memory");
    assert_int_equal(fail_next_populate, 0); /* it was asked */
    assert_int_equal(ckpt_saver_staging_bytes(s), 4194304);

    fail_next_populate = ENOMEM;
    assert_ckpt_error(ckpt_saver_save_async(s, 1, &ticket), CKPT_ENOMEM,
                      "faulting in a staging image");
    assert_int_equal(ticket, 0);
    assert_int_equal(count_files(dir, ""), 0); /* nothing written */

    /* still usable: the next save_async maps, faults in and saves */
    g_w[0] = 1.0f;
    assert_ckpt_ok(ckpt_saver_save_async(s, 2, &ticket));
    assert_true(ticket > 0);
    assert_ckpt_ok(ckpt_saver_wait(s, ticket, -1));
    ckpt_saver_free(s);
    check_saved(dir, "model.ckpt-2", 1.0f);
    test_remove_tree(dir);
}

static void test_kernel_without_populate_touches_pages(void **state)
{
    char *dir = test_make_temp_dir();
    ckpt_saver *s = open_one_var_saver(dir);
    uint64_t ticket = 0;
    (void)state;
    g_w[0] = 3.0f;
    populate_calls = 0;
    fail_next_populate = EINVAL; /* a kernel older than 5.14 */
    assert_ckpt_ok(ckpt_saver_save_async(s, 4, &ticket));
    assert_int_equal(populate_calls, 1);
    assert_ckpt_ok(ckpt_saver_wait(s, ticket, -1));
    ckpt_saver_free(s);
    check_saved(dir, "model.ckpt-4", 3.0f);
    test_remove_tree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pages_the_kernel_cannot_back),
        cmocka_unit_test(test_kernel_without_populate_touches_pages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
