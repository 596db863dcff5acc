/* Tests for error codes, names and the thread-local last error. */
#include "test_util.h"

#include "common/internal.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

static void test_strerror_and_names(void **state)
{
    (void)state;
    assert_string_equal(ckpt_strerror(CKPT_ECORRUPT), "data is corrupt");
    assert_string_equal(ckpt_error_name(CKPT_ENOSPC), "CKPT_ENOSPC");
    assert_string_equal(ckpt_error_name(12345), "CKPT_UNKNOWN");
    assert_string_equal(ckpt_strerror(-999), "unknown error code");
}

static void test_last_error_set_and_clear(void **state)
{
    (void)state;
    ckpt_error_clear();
    assert_int_equal(ckpt_error_last()->code, 0);
    assert_string_equal(ckpt_error_last()->message, "no error");
    assert_int_equal(ckpt__error(CKPT_EINVAL, "arg %s bad", "x"), CKPT_EINVAL);
    assert_int_equal(ckpt_error_last()->code, CKPT_EINVAL);
    assert_string_equal(ckpt_error_last()->message, "arg x bad");
    assert_int_equal(ckpt__error_prefix(CKPT_EINVAL, "f.index"), CKPT_EINVAL);
    assert_string_equal(ckpt_error_last()->message, "f.index: arg x bad");
    ckpt_error_clear();
    assert_int_equal(ckpt_error_last()->code, 0);
}

static void test_errno_mapping(void **state)
{
    (void)state;
    assert_int_equal(ckpt__error_errno(ENOSPC, "write %s", "a"), CKPT_ENOSPC);
    assert_non_null(strstr(ckpt_error_last()->message, "write a: "));
    assert_int_equal(ckpt__code_from_errno(EDQUOT), CKPT_ENOSPC);
    assert_int_equal(ckpt__code_from_errno(ENOENT), CKPT_ENOTFOUND);
    assert_int_equal(ckpt__code_from_errno(EACCES), CKPT_EACCES);
    assert_int_equal(ckpt__code_from_errno(EXDEV), CKPT_EIO);
}

static void *other_thread(void *arg)
{
    (void)arg;
    ckpt__error(CKPT_EIO, "other thread");
    return NULL;
}

static void test_last_error_is_per_thread(void **state)
{
    pthread_t t;
    (void)state;
    ckpt__error(CKPT_ECORRUPT, "mine");
    assert_int_equal(pthread_create(&t, NULL, other_thread, NULL), 0);
    pthread_join(t, NULL);
    assert_int_equal(ckpt_error_last()->code, CKPT_ECORRUPT);
    assert_string_equal(ckpt_error_last()->message, "mine");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strerror_and_names),
        cmocka_unit_test(test_last_error_set_and_clear),
        cmocka_unit_test(test_errno_mapping),
        cmocka_unit_test(test_last_error_is_per_thread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
