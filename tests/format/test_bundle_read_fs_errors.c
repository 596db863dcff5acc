/* tests/format/test_bundle_read_fs_errors.c - a custom file system's read
 * failures, as the bundle reader reports them: its pread or size of the
 * index (reader open) or of a data file (ckpt_bundle_reader_read, _check
 * and _read_many through the page cache), or its open_read of either,
 * failing with a message of its own
 * that does not name the file ("device gone") or with none. Either way the
 * call returns the file system's code and a message naming the file once,
 * with the file system's text or the generic one. (The direct path's
 * failures: test_bundle_read_many.c.) */
#include "bundle_test_helpers.h"

#include "support/fs_forward.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FILES 16

/* Forwards to POSIX, except that pread or size (`method`) of a file opened
 * with a path ending in `suffix`, or opening it, fails with CKPT_EIO, saying
 * `text` with ckpt_error_set or, for NULL, nothing. Files are the base's own:
 * the ones to fail are remembered when opened, and forgotten when closed. */
typedef enum { FAIL_PREAD, FAIL_SIZE, FAIL_OPEN } fail_method;

typedef struct failing_fs {
    ckpt_fs_forward fwd; /* first: the payload of every method */
    fail_method method;
    const char *suffix;
    const char *text;
    pthread_mutex_t mu; /* preads come from reader threads */
    ckpt_file *marked[MAX_FILES];
    size_t nmarked;
} failing_fs;

typedef struct fixture {
    char *dir;
    char *prefix; /* <dir>/ckpt */
    char *index;  /* <prefix>.index */
    char *data;   /* <prefix>.data-00000-of-00001 */
    failing_fs ffs;
} fixture;

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

static int is_marked(failing_fs *w, const ckpt_file *f)
{
    int found = 0;
    pthread_mutex_lock(&w->mu);
    for (size_t i = 0; i < w->nmarked; i++)
        if (w->marked[i] == f)
            found = 1;
    pthread_mutex_unlock(&w->mu);
    return found;
}

static int injected(const failing_fs *w)
{
    if (!w->text)
        return CKPT_EIO; /* no message of its own */
    return ckpt_error_set(CKPT_EIO, "%s", w->text);
}

static int f_open_read(ckpt_file **out, const char *path, void *payload)
{
    failing_fs *w = payload;
    const ckpt_fs *base = ckpt_fs_forward_base(payload);
    int err;
    *out = NULL;
    if (w->method == FAIL_OPEN && w->suffix && ends_with(path, w->suffix))
        return injected(w);
    err = base->open_read(out, path, base->payload);
    if (err == 0 && w->suffix && ends_with(path, w->suffix)) {
        pthread_mutex_lock(&w->mu);
        assert_true(w->nmarked < MAX_FILES);
        w->marked[w->nmarked++] = *out;
        pthread_mutex_unlock(&w->mu);
    }
    return err;
}

static int f_close(ckpt_file *f, void *payload)
{
    failing_fs *w = payload;
    const ckpt_fs *base = ckpt_fs_forward_base(payload);
    pthread_mutex_lock(&w->mu); /* its address may be a later file's */
    for (size_t i = 0; i < w->nmarked; i++)
        if (w->marked[i] == f)
            w->marked[i--] = w->marked[--w->nmarked];
    pthread_mutex_unlock(&w->mu);
    return base->close(f, base->payload);
}

static int f_pread(ckpt_file *f, void *buf, size_t n, uint64_t off,
                   size_t *nread, void *payload)
{
    failing_fs *w = payload;
    const ckpt_fs *base = ckpt_fs_forward_base(payload);
    *nread = 0;
    if (w->method == FAIL_PREAD && is_marked(w, f))
        return injected(w);
    return base->pread(f, buf, n, off, nread, base->payload);
}

static int f_size(ckpt_file *f, uint64_t *out, void *payload)
{
    failing_fs *w = payload;
    const ckpt_fs *base = ckpt_fs_forward_base(payload);
    if (w->method == FAIL_SIZE && is_marked(w, f))
        return injected(w);
    return base->size(f, out, base->payload);
}

/* Arm `w`: files ending in `suffix` opened from now on fail `method`. */
static void arm(failing_fs *w, fail_method method, const char *suffix,
                const char *text)
{
    w->method = method;
    w->suffix = suffix;
    w->text = text;
    w->nmarked = 0;
}

static int setup(void **state)
{
    static const float values[3] = {1.0f, 2.0f, 3.0f};
    fixture *f = calloc(1, sizeof(*f));
    ckpt_bundle_writer *w = NULL;
    ckpt_shape s = bt_shape(1, (const int64_t[]){3});
    assert_non_null(f);
    f->dir = test_make_temp_dir();
    f->prefix = test_path(f->dir, "ckpt");
    f->index = test_path(f->dir, "ckpt.index");
    f->data = test_path(f->dir, "ckpt.data-00000-of-00001");
    assert_ckpt_ok(ckpt_bundle_writer_open(&w, f->prefix, NULL));
    assert_ckpt_ok(ckpt_bundle_writer_add(w, "w", CKPT_DT_FLOAT, &s, values,
                                          sizeof(values)));
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);
    ckpt_fs_forward_init(&f->ffs.fwd, NULL);
    f->ffs.fwd.fs.open_read = f_open_read;
    f->ffs.fwd.fs.pread = f_pread;
    f->ffs.fwd.fs.size = f_size;
    f->ffs.fwd.fs.close = f_close;
    pthread_mutex_init(&f->ffs.mu, NULL);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    pthread_mutex_destroy(&f->ffs.mu);
    test_remove_tree(f->dir);
    free(f->data);
    free(f->index);
    free(f->prefix);
    free(f);
    return 0;
}

/* The call's result `rc` is CKPT_EIO with "<op> <path>: <text>" (or the
 * generic description when the file system set none), naming `path` once
 * in all. */
static void assert_named_once(int rc, const char *op, const char *path,
                              const char *text)
{
    char want[4400];
    const char *msg, *p;
    snprintf(want, sizeof(want), "%s %s: %s", op, path,
             text ? text : "input/output error");
    assert_ckpt_error(rc, CKPT_EIO, want);
    msg = ckpt_error_last()->message;
    p = strstr(msg, path);
    if (strstr(p + 1, path))
        fail_msg("\"%s\" names %s twice", msg, path);
}

static ckpt_bundle_reader *open_reader(fixture *f)
{
    ckpt_bundle_reader_options o = CKPT_BUNDLE_READER_OPTIONS_INIT;
    ckpt_bundle_reader *r = NULL;
    o.fs = &f->ffs.fwd.fs;
    assert_ckpt_ok(ckpt_bundle_reader_open(&r, f->prefix, &o));
    return r;
}

static const char *const TEXTS[] = {"device gone", NULL};

/* Opening the reader reads the index: its size, then its blocks. */
static void test_index_read_failure(void **state)
{
    fixture *f = *state;
    for (int m = FAIL_PREAD; m <= FAIL_SIZE; m++)
        for (size_t t = 0; t < 2; t++) {
            ckpt_bundle_reader_options o = CKPT_BUNDLE_READER_OPTIONS_INIT;
            ckpt_bundle_reader *r = NULL;
            o.fs = &f->ffs.fwd.fs;
            arm(&f->ffs, (fail_method)m, ".index", TEXTS[t]);
            ckpt_error_clear();
            assert_named_once(ckpt_bundle_reader_open(&r, f->prefix, &o),
                              m == FAIL_PREAD ? "pread" : "size", f->index,
                              TEXTS[t]);
            assert_null(r);
        }
}

/* A tensor's record: read alone, checked, and read with read_many (the
 * page cache path: the file is small). The message also names the
 * tensor. */
static void test_data_read_failure(void **state)
{
    fixture *f = *state;
    for (size_t t = 0; t < 2; t++)
        for (int call = 0; call < 3; call++) {
            ckpt_bundle_reader *r = open_reader(f);
            const ckpt_tensor_entry *e = NULL;
            float dst[3];
            ckpt_read_request req = {"w", dst, sizeof(dst)};
            int rc;
            assert_ckpt_ok(ckpt_bundle_reader_find(&e, r, "w"));
            arm(&f->ffs, FAIL_PREAD, ".data-00000-of-00001", TEXTS[t]);
            ckpt_error_clear();
            if (call == 0)
                rc = ckpt_bundle_reader_read(r, "w", dst, sizeof(dst));
            else if (call == 1)
                rc = ckpt_bundle_reader_check(r, e);
            else
                rc = ckpt_bundle_reader_read_many(r, &req, 1);
            assert_named_once(rc, "pread", f->data, TEXTS[t]);
            if (call < 2)
                assert_non_null(
                    strstr(ckpt_error_last()->message, "tensor 'w': pread"));
            ckpt_bundle_reader_free(r);
        }
}

/* Opening the index (reader open) or the data file (its first read): a
 * custom open_read's own message that does not name the file gets it in
 * front, once. */
static void test_open_failure(void **state)
{
    fixture *f = *state;
    for (size_t t = 0; t < 2; t++) {
        ckpt_bundle_reader_options o = CKPT_BUNDLE_READER_OPTIONS_INIT;
        ckpt_bundle_reader *r = NULL;
        float dst[3];
        o.fs = &f->ffs.fwd.fs;
        arm(&f->ffs, FAIL_OPEN, ".index", TEXTS[t]);
        ckpt_error_clear();
        assert_named_once(ckpt_bundle_reader_open(&r, f->prefix, &o),
                          "open_read", f->index, TEXTS[t]);
        assert_null(r);
        arm(&f->ffs, FAIL_OPEN, ".data-00000-of-00001", TEXTS[t]);
        r = open_reader(f);
        ckpt_error_clear();
        assert_named_once(ckpt_bundle_reader_read(r, "w", dst, sizeof(dst)),
                          "open_read", f->data, TEXTS[t]);
        assert_non_null(
            strstr(ckpt_error_last()->message, "tensor 'w': open_read"));
        ckpt_bundle_reader_free(r);
    }
}

/* The data file's size, asked when it is first opened. */
static void test_data_size_failure(void **state)
{
    fixture *f = *state;
    for (size_t t = 0; t < 2; t++) {
        ckpt_bundle_reader *r = open_reader(f);
        float dst[3];
        arm(&f->ffs, FAIL_SIZE, ".data-00000-of-00001", TEXTS[t]);
        ckpt_error_clear();
        assert_named_once(ckpt_bundle_reader_read(r, "w", dst, sizeof(dst)),
                          "size", f->data, TEXTS[t]);
        assert_non_null(strstr(ckpt_error_last()->message, "tensor 'w': size"));
        ckpt_bundle_reader_free(r);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_index_read_failure, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_data_read_failure, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_open_failure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_data_size_failure, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
