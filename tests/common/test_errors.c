/* Tests for error codes, names and the thread-local last error. */
#include "test_util.h"

#include "common/internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
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

/* ckpt_error_last's message is the thread's buffer (errors.h): a pointer
 * kept from one error shows the next one's text, and "" once cleared, so a
 * caller copies the text to keep it. */
static void test_kept_message_pointer_shows_the_latest_text(void **state)
{
    const char *kept;
    (void)state;
    assert_int_equal(ckpt_error_set(CKPT_EIO, "first %d", 1), CKPT_EIO);
    kept = ckpt_error_last()->message;
    assert_string_equal(kept, "first 1");
    assert_int_equal(ckpt_error_set(CKPT_ENOSPC, "second"), CKPT_ENOSPC);
    assert_ptr_equal(ckpt_error_last()->message, kept);
    assert_string_equal(kept, "second");
    ckpt_error_clear();
    assert_string_equal(kept, "");
    assert_string_equal(ckpt_error_last()->message, "no error");
}

/* ckpt_error_set, for callers' code; and how the library passes on a
 * callback's message (ckpt__error_callback). */
static void test_error_set_by_callers(void **state)
{
    (void)state;
    assert_int_equal(ckpt_error_set(CKPT_ENOSPC, "quota %d", 7), CKPT_ENOSPC);
    assert_int_equal(ckpt_error_last()->code, CKPT_ENOSPC);
    assert_string_equal(ckpt_error_last()->message, "quota 7");
    assert_int_equal(ckpt_error_set(0, "not an error code"), CKPT_EUSER);
    assert_int_equal(ckpt_error_set(5, "%s", "positive"), CKPT_EUSER);
    assert_int_equal(ckpt_error_last()->code, CKPT_EUSER);
    assert_int_equal(ckpt_error_set(CKPT_EIO, NULL), CKPT_EIO);
    assert_string_equal(ckpt_error_last()->message, ckpt_strerror(CKPT_EIO));
    /* a callback that recorded its message: prefixed, code CKPT_EUSER */
    ckpt_error_set(CKPT_EIO, "disk 2 offline");
    assert_int_equal(ckpt__error_callback(CKPT_EIO, "variable '%s'", "w"),
                     CKPT_EUSER);
    assert_string_equal(ckpt_error_last()->message,
                        "variable 'w': disk 2 offline");
    /* one that returned another code than the last error's: not its own */
    ckpt_error_set(CKPT_EIO, "stale");
    assert_int_equal(ckpt__error_callback(CKPT_ENOSPC, "variable 'w'"),
                     CKPT_EUSER);
    assert_string_equal(ckpt_error_last()->message, "variable 'w' (-5)");
    ckpt_error_clear();
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

/* A string of `n` bytes "/dir..../dir" (malloc'd), like a long path. */
static char *long_path(size_t n, char c)
{
    char *p = malloc(n + 1);
    assert_non_null(p);
    for (size_t i = 0; i < n; i++)
        p[i] = i % 64 == 0 ? '/' : c;
    p[n] = '\0';
    return p;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && memcmp(s + a - b, suffix, b) == 0;
}

/* Messages naming long paths keep the paths and the error after them (a
 * 1 KiB buffer used to cut both off). */
static void test_long_paths_keep_the_error(void **state)
{
    char *a = long_path(4000, 'a'), *b = long_path(4000, 'b');
    const char *msg;
    (void)state;
    assert_int_equal(ckpt__error_errno(ENOENT, "open_read %s", a),
                     CKPT_ENOTFOUND);
    msg = ckpt_error_last()->message;
    assert_non_null(strstr(msg, a));
    assert_true(ends_with(msg, ": No such file or directory"));
    ckpt__error(CKPT_ECORRUPT, "%s: block 3: checksum mismatch", a);
    assert_int_equal(ckpt__error_prefix(CKPT_ECORRUPT, "reading %s", b),
                     CKPT_ECORRUPT);
    msg = ckpt_error_last()->message;
    assert_non_null(strstr(msg, a));
    assert_non_null(strstr(msg, b));
    assert_true(ends_with(msg, ": block 3: checksum mismatch"));
    assert_int_equal(ckpt_error_last()->code, CKPT_ECORRUPT);
    ckpt_error_clear();
    free(a);
    free(b);
}

/* A context longer than the whole buffer gives way in its middle; the
 * error at the end survives, as does a message too long on its own (its
 * start gives way then). */
static void test_overlong_context_is_cut_in_the_middle(void **state)
{
    char *huge = long_path(3 * CKPT__ERROR_MESSAGE_MAX, 'h');
    char *big = long_path(CKPT__ERROR_MESSAGE_MAX - 100, 'm');
    const char *msg;
    (void)state;
    ckpt__error(CKPT_EIO, "the actual error");
    ckpt__error_prefix(CKPT_EIO, "%s", huge);
    msg = ckpt_error_last()->message;
    assert_true(strlen(msg) < CKPT__ERROR_MESSAGE_MAX);
    assert_true(strlen(msg) > CKPT__ERROR_MESSAGE_MAX / 2);
    assert_true(ends_with(msg, ": the actual error"));
    assert_memory_equal(msg, huge, 100); /* its start */
    assert_non_null(strstr(msg, "..."));
    ckpt__error_errno(EACCES, "%s", huge);
    assert_true(ends_with(ckpt_error_last()->message, ": Permission denied"));
    ckpt__error(CKPT_EIO, "%s: the end", big);
    ckpt__error_prefix(CKPT_EIO, "context");
    msg = ckpt_error_last()->message;
    assert_true(strlen(msg) < CKPT__ERROR_MESSAGE_MAX);
    assert_true(ends_with(msg, "m: the end"));
    assert_memory_equal(msg, "context: ...", 12);
    ckpt_error_clear();
    free(huge);
    free(big);
}

/* A message formatted longer than the buffer (a long path named three
 * times) lost its end, which says what happened: "... cannot be looked up:
 * File name too long" never showed. Now its middle gives way. */
static void test_overlong_message_keeps_its_end(void **state)
{
    char *p = long_path(CKPT__ERROR_MESSAGE_MAX / 2, 'p');
    const char *msg;
    (void)state;
    ckpt__error(CKPT_ENOTFOUND,
                "%s: no such checkpoint (no %s.index), and the name %s "
                "itself cannot be looked up: File name too long",
                p, p, p);
    msg = ckpt_error_last()->message;
    assert_true(strlen(msg) < CKPT__ERROR_MESSAGE_MAX);
    assert_true(strlen(msg) > CKPT__ERROR_MESSAGE_MAX - 100);
    assert_memory_equal(msg, p, 100);
    assert_non_null(strstr(msg, " bytes cut) ..."));
    assert_true(ends_with(msg, "cannot be looked up: File name too long"));
    /* one that fits is as formatted */
    ckpt__error(CKPT_EIO, "%.100s: short", p);
    assert_int_equal(strlen(ckpt_error_last()->message), 107);
    ckpt_error_clear();
    free(p);
}

/* A saved error survives a failing cleanup step and comes back whole, even
 * when the message fills the buffer; a saved "no error" restores to none. */
static void test_error_save_restore(void **state)
{
    char long_name[CKPT__ERROR_MESSAGE_MAX + 100];
    ckpt__saved_error saved;
    size_t full;
    (void)state;
    memset(long_name, 'n', sizeof(long_name) - 1);
    long_name[sizeof(long_name) - 1] = '\0';
    ckpt__error(CKPT_ENOSPC, "write %s", long_name);
    full = strlen(ckpt_error_last()->message); /* cut in its middle */
    assert_true(full > CKPT__ERROR_MESSAGE_MAX - 64);
    ckpt__error_save(&saved);
    assert_int_equal(saved.code, CKPT_ENOSPC);
    ckpt__error(CKPT_EIO, "cleanup failed");
    assert_int_equal(ckpt__error_restore(&saved), CKPT_ENOSPC);
    assert_int_equal(ckpt_error_last()->code, CKPT_ENOSPC);
    assert_int_equal(strncmp(ckpt_error_last()->message, "write nnnn", 10), 0);
    assert_int_equal(strlen(ckpt_error_last()->message), full);

    ckpt_error_clear();
    ckpt__error_save(&saved);
    assert_int_equal(saved.code, 0);
    ckpt__error(CKPT_EIO, "probe failed");
    assert_int_equal(ckpt__error_restore(&saved), 0);
    assert_int_equal(ckpt_error_last()->code, 0);
    assert_string_equal(ckpt_error_last()->message, "no error");
}

static int takes_pointer(const char *name)
{
    CKPT__CHECK_ARG(name);
    return 7;
}

/* The NULL-argument check names the function and the argument. */
static void test_check_arg(void **state)
{
    (void)state;
    ckpt_error_clear();
    assert_int_equal(takes_pointer("x"), 7);
    assert_int_equal(ckpt_error_last()->code, 0);
    assert_int_equal(takes_pointer(NULL), CKPT_EINVAL);
    assert_string_equal(ckpt_error_last()->message,
                        "takes_pointer: name is NULL");
    ckpt_error_clear();
}

/* Messages quote paths and names, which are data: what a terminal would
 * act on reaches the message as \xHH, printable UTF-8 as it is. */
static void test_messages_are_printable(void **state)
{
    char out[64];
    (void)state;
    ckpt__error(CKPT_EINVAL, "path %s", "a\x1b[2Jb\xc2\x9b\xff caf\xc3\xa9");
    assert_string_equal(ckpt_error_last()->message,
                        "path a\\x1b[2Jb\\xc2\\x9b\\xff caf\xc3\xa9");
    ckpt__error_errno(ENOENT, "open %s", "x\ny\xe2\x80\xae");
    assert_string_equal(
        ckpt_error_last()->message,
        "open x\\x0ay\\xe2\\x80\\xae: No such file or directory");
    ckpt__error(CKPT_EIO, "plain message");
    assert_string_equal(ckpt_error_last()->message, "plain message");
    /* the public copy: cut at a character boundary, always terminated */
    assert_int_equal(ckpt_text_printable(out, sizeof(out), "ok\x07"), 6);
    assert_string_equal(out, "ok\\x07");
    assert_int_equal(ckpt_text_printable(out, 6, "ab\x1b"), 2);
    assert_string_equal(out, "ab");
    assert_int_equal(ckpt_text_printable(out, 4, "ab\xc3\xa9"), 2);
    assert_string_equal(out, "ab");
    assert_int_equal(ckpt_text_printable(out, sizeof(out), NULL), 0);
    assert_string_equal(out, "");
    assert_int_equal(ckpt_text_printable(NULL, 8, "x"), 0);
    /* a byte string with a NUL inside (a tensor name) */
    assert_int_equal(ckpt_text_printable_n(out, sizeof(out), "a\0b", 3), 6);
    assert_string_equal(out, "a\\x00b");
    ckpt_error_clear();
}

/* A message shows a path escaped; ckpt__message_find looks for it that
 * way, so a path with a control byte is not named a second time. */
static void test_message_find_sees_escaped_paths(void **state)
{
    size_t shown = 0;
    const char *at;
    (void)state;
    ckpt__error(CKPT_ENOTFOUND, "open_read %s: gone", "d\tx/m.index");
    at = ckpt__message_find(ckpt_error_last()->message, "d\tx/m.index", &shown);
    assert_non_null(at);
    assert_int_equal(at - ckpt_error_last()->message, 10);
    assert_int_equal(shown, strlen("d\\x09x/m.index"));
    assert_string_equal(at + shown, ": gone");
    assert_true(ckpt__message_names(ckpt_error_last()->message, "gone"));
    /* the raw bytes are not what the message holds */
    assert_null(strstr(ckpt_error_last()->message, "d\tx"));
    /* not a near miss: another escaped byte, a cut name, a longer one */
    assert_false(ckpt__message_names(ckpt_error_last()->message, "d\nx"));
    assert_false(
        ckpt__message_names(ckpt_error_last()->message, "d\tx/m.index2"));
    assert_false(ckpt__message_names("d\\x0", "d\t"));
    /* UTF-8 as is, bytes that are not UTF-8 escaped */
    ckpt__error(CKPT_EIO, "at caf\xc3\xa9/\xff!");
    assert_true(
        ckpt__message_names(ckpt_error_last()->message, "caf\xc3\xa9/\xff"));
    assert_false(ckpt__message_names(ckpt_error_last()->message, "\xfe"));
    assert_null(ckpt__message_find(NULL, "x", NULL));
    assert_null(ckpt__message_find("x", NULL, NULL));
    assert_null(ckpt__message_find("", "x", NULL));
    ckpt_error_clear();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strerror_and_names),
        cmocka_unit_test(test_last_error_set_and_clear),
        cmocka_unit_test(test_kept_message_pointer_shows_the_latest_text),
        cmocka_unit_test(test_error_set_by_callers),
        cmocka_unit_test(test_errno_mapping),
        cmocka_unit_test(test_last_error_is_per_thread),
        cmocka_unit_test(test_long_paths_keep_the_error),
        cmocka_unit_test(test_overlong_context_is_cut_in_the_middle),
        cmocka_unit_test(test_overlong_message_keeps_its_end),
        cmocka_unit_test(test_error_save_restore),
        cmocka_unit_test(test_check_arg),
        cmocka_unit_test(test_messages_are_printable),
        cmocka_unit_test(test_message_find_sees_escaped_paths),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
