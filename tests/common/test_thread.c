/* tests/common/test_thread.c - ckpt__thread_token (common/thread.c): the
 * token a saver or monitored session records for the thread inside a call
 * on it, which must tell that thread from every other, including a thread
 * started after it ended. */
#include "common/internal.h"
#include "test_util.h"

#include <pthread.h>

static void *token_of_thread(void *arg)
{
    *(uintptr_t *)arg = ckpt__thread_token();
    return NULL;
}

static uintptr_t token_of_new_thread(void)
{
    uintptr_t token = 0;
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, token_of_thread, &token), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    return token;
}

/* The token was the address of a thread-local byte: a thread started after
 * another ended (glibc reuses its stack and thread-local block) had the
 * same one, so it counted as the owner of a saver or session the ended
 * thread left held (a pthread_exit inside a callback) and re-entered it as
 * that thread. Each thread now draws a number of its own. */
static void test_token_differs_for_each_thread(void **state)
{
    uintptr_t mine = ckpt__thread_token();
    uintptr_t first, second;
    (void)state;
    assert_true(mine != 0);
    assert_true(ckpt__thread_token() == mine); /* stable on one thread */
    first = token_of_new_thread();
    second = token_of_new_thread(); /* after the first ended */
    assert_true(first != 0);
    assert_true(second != 0);
    assert_true(first != mine);
    assert_true(second != mine);
    assert_true(second != first);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_token_differs_for_each_thread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
