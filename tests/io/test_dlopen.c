/* tests/io/test_dlopen.c - the shared library loaded with dlopen (as
 * Python's ctypes does): it loads (its thread-local state must not need
 * room in the static TLS block, which a dlopen'ed library may not get),
 * writes and verifies a bundle, reports an error through its thread's last
 * error, unloads with dlclose, and loads again. The library's path comes
 * from the build (CKPT_SHARED_LIB). */
#include "test_util.h"

#include "ckpt/bundle.h"
#include "ckpt/tensor.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#define TENSOR_BYTES ((size_t)4 << 20)

typedef struct api {
    int (*writer_open)(ckpt_bundle_writer **, const char *,
                       const ckpt_bundle_writer_options *);
    int (*writer_add)(ckpt_bundle_writer *, const char *, int,
                      const ckpt_shape *, const void *, size_t);
    int (*writer_finish)(ckpt_bundle_writer *);
    void (*writer_free)(ckpt_bundle_writer *);
    int (*reader_open)(ckpt_bundle_reader **, const char *,
                       const ckpt_bundle_reader_options *);
    int (*reader_verify)(ckpt_bundle_reader *);
    void (*reader_free)(ckpt_bundle_reader *);
    const ckpt_error *(*error_last)(void);
} api;

static void *must_find(void *lib, const char *name)
{
    void *p = dlsym(lib, name);
    if (!p)
        fail_msg("%s: %s", name, dlerror());
    return p;
}

static void load_api(void *lib, api *a)
{
    *(void **)&a->writer_open = must_find(lib, "ckpt_bundle_writer_open");
    *(void **)&a->writer_add = must_find(lib, "ckpt_bundle_writer_add");
    *(void **)&a->writer_finish = must_find(lib, "ckpt_bundle_writer_finish");
    *(void **)&a->writer_free = must_find(lib, "ckpt_bundle_writer_free");
    *(void **)&a->reader_open = must_find(lib, "ckpt_bundle_reader_open");
    *(void **)&a->reader_verify = must_find(lib, "ckpt_bundle_reader_verify");
    *(void **)&a->reader_free = must_find(lib, "ckpt_bundle_reader_free");
    *(void **)&a->error_last = must_find(lib, "ckpt_error_last");
}

/* Write a bundle of one 4 MiB float tensor at `prefix` and verify it, all
 * through the loaded library. */
static void write_and_verify(const api *a, const char *prefix)
{
    ckpt_bundle_writer *w = NULL;
    ckpt_bundle_reader *r = NULL;
    ckpt_shape shape;
    float *data = malloc(TENSOR_BYTES);
    assert_non_null(data);
    for (size_t i = 0; i < TENSOR_BYTES / sizeof(float); i++)
        data[i] = (float)i;
    memset(&shape, 0, sizeof(shape));
    shape.rank = 1;
    shape.dims[0] = (int64_t)(TENSOR_BYTES / sizeof(float));
    assert_int_equal(a->writer_open(&w, prefix, NULL), 0);
    assert_int_equal(
        a->writer_add(w, "t", CKPT_DT_FLOAT, &shape, data, TENSOR_BYTES), 0);
    assert_int_equal(a->writer_finish(w), 0);
    a->writer_free(w);
    assert_int_equal(a->reader_open(&r, prefix, NULL), 0);
    assert_int_equal(a->reader_verify(r), 0);
    a->reader_free(r);
    free(data);
}

static void test_dlopen_verify_dlclose(void **state)
{
    char *dir = test_make_temp_dir();
    char *prefix, *missing;
    ckpt_bundle_reader *r = NULL;
    api a;
    void *lib;
    (void)state;
    assert_non_null(dir);
    prefix = test_path(dir, "b");
    missing = test_path(dir, "nothing");
    for (int round = 0; round < 2; round++) { /* loads again after dlclose */
        lib = dlopen(CKPT_SHARED_LIB, RTLD_NOW | RTLD_LOCAL);
        if (!lib)
            fail_msg("dlopen %s: %s", CKPT_SHARED_LIB, dlerror());
        load_api(lib, &a);
        write_and_verify(&a, prefix);
        assert_int_equal(a.reader_open(&r, missing, NULL), CKPT_ENOTFOUND);
        assert_null(r);
        assert_int_equal(a.error_last()->code, CKPT_ENOTFOUND);
        assert_non_null(strstr(a.error_last()->message, "nothing.index"));
        assert_int_equal(dlclose(lib), 0);
    }
    free(missing);
    free(prefix);
    test_remove_tree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dlopen_verify_dlclose),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
