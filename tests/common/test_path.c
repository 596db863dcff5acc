/* tests/common/test_path.c - ckpt__path_normalize (common/path.c): the
 * lexical form in which the saver compares the state file's spellings of
 * one checkpoint. */
#include "common/internal.h"
#include "test_util.h"

#include <string.h>

static void test_normalize_cases(void **state)
{
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"model.ckpt-40", "model.ckpt-40"},
        {"./model.ckpt-40", "model.ckpt-40"},
        {"././/model.ckpt-40", "model.ckpt-40"},
        {"sub/../model.ckpt-40", "model.ckpt-40"},
        {"a/b/../../c", "c"},
        {"a//b/./c/", "a/b/c"},
        {"../x", "../x"},
        {"../../x/../y", "../../y"},
        {"a/../../x", "../x"},
        {"/x/../y", "/y"},
        {"/../y", "/y"},
        {"//abs//dir/./k", "/abs/dir/k"},
        {"/", "/"},
        {".", ""},
        {"", ""},
        {"...", "..."},
        {"a/..b", "a/..b"},
    };
    ckpt_buf out = CKPT_BUF_INIT;
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        assert_ckpt_ok(ckpt__path_normalize(&out, cases[i].in));
        assert_non_null(out.ptr);
        if (strcmp(out.ptr, cases[i].out) != 0)
            fail_msg("'%s': '%s', want '%s'", cases[i].in, out.ptr,
                     cases[i].out);
        assert_int_equal(out.size, strlen(cases[i].out));
    }
    ckpt_buf_dispose(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_normalize_cases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
