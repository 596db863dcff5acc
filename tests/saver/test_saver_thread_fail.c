/* When the saver's writer thread cannot be started (pthread_create fails:
 * RLIMIT_NPROC, memory for its stack), ckpt_saver_save_async fails with
 * CKPT_ENOMEM saying so, writes nothing, and leaves the saver usable: a
 * synchronous save works, and the next save_async starts the thread.
 * This program defines pthread_create itself (the library is linked
 * statically into it), forwarding to the next definition unless a
 * failure was asked for. */
#include "saver_test_util.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* The errno value the next pthread_create fails with (0: none). */
static int fail_next_create;

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *),
                         void *);

int pthread_create(pthread_t *t, const pthread_attr_t *attr,
                   void *(*fn)(void *), void *arg)
{
    void *sym;
    create_fn next;
    if (fail_next_create) {
        int err = fail_next_create;
        fail_next_create = 0;
        return err;
    }
    sym = dlsym(RTLD_NEXT, "pthread_create");
    if (!sym)
        abort();
    memcpy(&next, &sym, sizeof(next)); /* ISO C has no such cast */
    return next(t, attr, fn, arg);
}

static void test_writer_thread_cannot_start(void **state)
{
    char *dir = test_make_temp_dir();
    float w[4] = {1, 2, 3, 4}, back[4];
    ckpt_var v = {"w", CKPT_DT_FLOAT, {1, {4}}, w, NULL, NULL, NULL};
    ckpt_saver *s = NULL;
    ckpt_buf latest = CKPT_BUF_INIT;
    ckpt_bundle_reader *r = NULL;
    uint64_t ticket = 7;
    (void)state;
    assert_ckpt_ok(ckpt_saver_open(&s, dir, NULL));
    assert_ckpt_ok(ckpt_saver_add_var(s, &v));

    fail_next_create = EAGAIN;
    assert_ckpt_error(ckpt_saver_save_async(s, 1, &ticket), CKPT_ENOMEM,
                      "starting the checkpoint writer thread: Resource "
                      "temporarily unavailable");
    assert_int_equal(ticket, 0);
    assert_int_equal(fail_next_create, 0); /* it was asked */
    /* nothing written, nothing left behind, nothing pending */
    assert_int_equal(count_files(dir, ""), 0);
    assert_ckpt_ok(ckpt_saver_wait(s, 0, 5));
    assert_ckpt_ok(ckpt_saver_poll(s, NULL));

    /* still usable: a synchronous save, then an async one */
    assert_ckpt_ok(ckpt_saver_save(s, 2, NULL));
    w[0] = 10;
    assert_ckpt_ok(ckpt_saver_save_async(s, 3, &ticket));
    assert_true(ticket > 0);
    assert_ckpt_ok(ckpt_saver_wait(s, ticket, -1));
    ckpt_saver_free(s);

    assert_ckpt_ok(ckpt_latest_checkpoint(&latest, NULL, dir));
    assert_non_null(strstr(latest.ptr, "model.ckpt-3"));
    assert_ckpt_ok(ckpt_bundle_reader_open(&r, latest.ptr, NULL));
    assert_ckpt_ok(ckpt_bundle_reader_read(r, "w", back, sizeof(back)));
    assert_true(back[0] == 10 && back[3] == 4);
    ckpt_bundle_reader_free(r);
    ckpt_buf_dispose(&latest);
    assert_true(file_exists(dir, "model.ckpt-2.index"));
    assert_false(file_exists(dir, "model.ckpt-1.index"));
    test_remove_tree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_writer_thread_cannot_start),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
