/* When the saver's writer thread cannot be started (pthread_create fails:
 * RLIMIT_NPROC, memory for its stack), ckpt_saver_save_async fails with
 * CKPT_ENOMEM saying so, writes nothing, and leaves the saver usable: a
 * synchronous save works, and the next save_async starts the thread.
 * A default stack that cannot be mapped (EAGAIN) is tried again at the
 * library's 1 MiB floor before the save fails. This program defines
 * pthread_create itself (the library is linked statically into it),
 * forwarding to the next definition unless a failure was asked for. */
#include "saver_test_util.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* The errno value the next `fail_creates` calls of pthread_create fail
 * with; the stack size the last call asked for. */
static int fail_errno;
static int fail_creates;
static size_t last_stack;

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *),
                         void *);

int pthread_create(pthread_t *t, const pthread_attr_t *attr,
                   void *(*fn)(void *), void *arg)
{
    void *sym;
    create_fn next;
    last_stack = 0;
    if (attr)
        pthread_attr_getstacksize(attr, &last_stack);
    if (fail_creates > 0) {
        fail_creates--;
        return fail_errno;
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

    fail_errno = EAGAIN;
    fail_creates = 1000; /* the default stack and the floor alike */
    assert_ckpt_error(ckpt_saver_save_async(s, 1, &ticket), CKPT_ENOMEM,
                      "starting the checkpoint writer thread: Resource "
                      "temporarily unavailable");
    assert_int_equal(ticket, 0);
    assert_true(fail_creates < 1000); /* it was asked */
    fail_creates = 0;
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

/* The default stack (RLIMIT_STACK's, above the floor) cannot be mapped:
 * pthread_create fails with EAGAIN once, and the writer starts with a
 * 1 MiB stack instead; the save goes through. */
static void test_writer_thread_retried_at_floor(void **state)
{
    char *dir = test_make_temp_dir();
    float w[4] = {1, 2, 3, 4};
    ckpt_var v = {"w", CKPT_DT_FLOAT, {1, {4}}, w, NULL, NULL, NULL};
    ckpt_saver *s = NULL;
    pthread_attr_t attr;
    size_t def = 0;
    uint64_t ticket = 0;
    (void)state;
    assert_int_equal(pthread_attr_init(&attr), 0);
    assert_int_equal(pthread_attr_getstacksize(&attr, &def), 0);
    pthread_attr_destroy(&attr);
    if (def <= ((size_t)1 << 20)) {
        /* `ulimit -s` at or below the floor: nothing to retry */
        test_remove_tree(dir);
        skip();
        return;
    }
    assert_ckpt_ok(ckpt_saver_open(&s, dir, NULL));
    assert_ckpt_ok(ckpt_saver_add_var(s, &v));
    fail_errno = EAGAIN;
    fail_creates = 1;
    assert_ckpt_ok(ckpt_saver_save_async(s, 1, &ticket));
    assert_int_equal(fail_creates, 0);
    assert_int_equal(last_stack, (size_t)1 << 20);
    assert_ckpt_ok(ckpt_saver_wait(s, ticket, -1));
    ckpt_saver_free(s);
    assert_true(file_exists(dir, "model.ckpt-1.index"));
    /* another error is no stack matter: not tried again */
    assert_ckpt_ok(ckpt_saver_open(&s, dir, NULL));
    assert_ckpt_ok(ckpt_saver_add_var(s, &v));
    fail_errno = EPERM;
    fail_creates = 1;
    assert_ckpt_error(ckpt_saver_save_async(s, 2, &ticket), CKPT_EACCES,
                      "starting the checkpoint writer thread");
    assert_int_equal(fail_creates, 0);
    ckpt_saver_free(s);
    test_remove_tree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_writer_thread_cannot_start),
        cmocka_unit_test(test_writer_thread_retried_at_floor),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
