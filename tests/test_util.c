/* tests/test_util.c - see test_util.h. */
#include "test_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

char *test_path(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    assert_non_null(p);
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

const int test_fixed_dtypes[TEST_NUM_FIXED_DTYPES] = {
    CKPT_DT_FLOAT,          CKPT_DT_DOUBLE,          CKPT_DT_INT32,
    CKPT_DT_UINT8,          CKPT_DT_INT16,           CKPT_DT_INT8,
    CKPT_DT_COMPLEX64,      CKPT_DT_INT64,           CKPT_DT_BOOL,
    CKPT_DT_QINT8,          CKPT_DT_QUINT8,          CKPT_DT_QINT32,
    CKPT_DT_BFLOAT16,       CKPT_DT_QINT16,          CKPT_DT_QUINT16,
    CKPT_DT_UINT16,         CKPT_DT_COMPLEX128,      CKPT_DT_HALF,
    CKPT_DT_UINT32,         CKPT_DT_UINT64,          CKPT_DT_FLOAT8_E5M2,
    CKPT_DT_FLOAT8_E4M3FN,  CKPT_DT_FLOAT8_E4M3FNUZ, CKPT_DT_FLOAT8_E4M3B11FNUZ,
    CKPT_DT_FLOAT8_E5M2FNUZ};

void test_log_init(test_log *l, int min_level)
{
    memset(l, 0, sizeof(*l));
    assert_int_equal(pthread_mutex_init(&l->mu, NULL), 0);
    l->min_level = min_level;
}

void test_log_capture(int level, const char *message, void *payload)
{
    test_log *l = payload;
    size_t used;
    if (level < l->min_level)
        return;
    pthread_mutex_lock(&l->mu);
    used = strlen(l->text);
    snprintf(l->text + used, sizeof(l->text) - used, "%s\n", message);
    pthread_mutex_unlock(&l->mu);
}

size_t test_count(const char *hay, const char *needle)
{
    size_t n = 0, len = strlen(needle);
    for (const char *p = hay; *p; p++)
        n += strncmp(p, needle, len) == 0;
    return n;
}

ckpt_var test_float_var(const char *name, float *data, int64_t n)
{
    ckpt_var v;
    memset(&v, 0, sizeof(v));
    v.name = name;
    v.dtype = CKPT_DT_FLOAT;
    v.shape.rank = 1;
    v.shape.dims[0] = n;
    v.data = data;
    return v;
}

void test_write_tensor_per_shard(const char *prefix, int shards)
{
    ckpt_bundle_writer_options o = CKPT_BUNDLE_WRITER_OPTIONS_INIT;
    ckpt_bundle_writer *w = NULL;
    ckpt_shape one = {1, {1}};
    o.num_shards = shards;
    assert_ckpt_ok(ckpt_bundle_writer_open(&w, prefix, &o));
    for (int i = 0; i < shards; i++) {
        char name[16];
        float v = (float)i;
        snprintf(name, sizeof(name), "t%03d", i);
        assert_ckpt_ok(ckpt_bundle_writer_select_shard(w, shards - 1 - i));
        assert_ckpt_ok(
            ckpt_bundle_writer_add(w, name, CKPT_DT_FLOAT, &one, &v, 4));
    }
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);
}

void test_many_entry_name(char *out, size_t cap, size_t i)
{
    snprintf(out, cap, "layer_%07zu/kernel", i);
}

void test_write_many_entries(const char *prefix, size_t n)
{
    ckpt_bundle_writer *w = NULL;
    ckpt_shape shape = {2, {1, 1}};
    char name[48]; /* room for any size_t */
    assert_ckpt_ok(ckpt_bundle_writer_open(&w, prefix, NULL));
    for (size_t i = 0; i < n; i++) {
        float v = (float)i;
        test_many_entry_name(name, sizeof(name), i);
        assert_ckpt_ok(ckpt_bundle_writer_add(w, name, CKPT_DT_FLOAT, &shape,
                                              &v, sizeof(v)));
    }
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);
}

size_t test_entries_env(size_t above, size_t fallback)
{
    const char *s = getenv("CKPT_TEST_ENTRIES");
    long long n = s ? strtoll(s, NULL, 10) : 0;
    return n > 0 && (unsigned long long)n > above ? (size_t)n : fallback;
}

void *test_dir_fixture_new(size_t size, size_t dir_offset)
{
    void *f = calloc(1, size);
    assert_non_null(f);
    assert_int_equal(dir_offset, 0);
    assert_true(size >= sizeof(char *));
    *(char **)f = test_make_temp_dir();
    return f;
}

int test_dir_fixture_teardown(void **state)
{
    char **dir = *state; /* the struct's first member */
    test_remove_tree(*dir);
    free(*state);
    return 0;
}

const char *test_temp_base(void)
{
    const char *base = getenv("TMPDIR");
    return base && *base ? base : "/tmp";
}

char *test_make_temp_dir(void)
{
    const char *base = test_temp_base();
    char *path;
    size_t n;
    n = strlen(base) + 32;
    path = malloc(n);
    assert_non_null(path);
    snprintf(path, n, "%s/ckpt-test-XXXXXX", base);
    if (!mkdtemp(path))
        fail_msg("mkdtemp %s: %s", path, strerror(errno));
    return path;
}

static void remove_tree_at(const char *path)
{
    struct stat st;
    DIR *d;
    struct dirent *e;
    if (lstat(path, &st) != 0)
        return;
    if (!S_ISDIR(st.st_mode)) {
        unlink(path);
        return;
    }
    d = opendir(path);
    if (d) {
        while ((e = readdir(d)) != NULL) {
            char child[4096];
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            snprintf(child, sizeof(child), "%s/%s", path, e->d_name);
            remove_tree_at(child);
        }
        closedir(d);
    }
    rmdir(path);
}

void test_remove_tree(char *path)
{
    if (!path)
        return;
    remove_tree_at(path);
    free(path);
}

char *test_tf_vector(const char *name)
{
    const char *root = getenv("CKPT_TESTDATA_TF");
    char *path;
    size_t n;
    struct stat st;
    if (!root || stat(root, &st) != 0 || !S_ISDIR(st.st_mode)) {
        print_message("SKIPPED: ../shared/testdata/tf is absent "
                      "(TensorFlow test vectors are for developers and CI)\n");
        skip();
        return NULL;
    }
    n = strlen(root) + strlen(name) + 2;
    path = malloc(n);
    assert_non_null(path);
    snprintf(path, n, "%s/%s", root, name);
    return path;
}

void test_assert_ckpt_error(int rc, int code, const char *needle,
                            const char *file, int line)
{
    const ckpt_error *e = ckpt_error_last();
    if (rc != code)
        fail_msg("%s:%d: expected %s, got %d (%s): %s", file, line,
                 ckpt_error_name(code), rc, ckpt_error_name(rc), e->message);
    if (needle && !strstr(e->message, needle))
        fail_msg("%s:%d: message \"%s\" lacks \"%s\"", file, line, e->message,
                 needle);
}

void test_assert_ckpt_ok(int rc, const char *file, int line)
{
    if (rc != 0)
        fail_msg("%s:%d: failed with %d (%s): %s", file, line, rc,
                 ckpt_error_name(rc), ckpt_error_last()->message);
}

uint8_t *test_read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    uint8_t *p;
    long len;
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    len = ftell(f);
    fseek(f, 0, SEEK_SET);
    p = malloc(len > 0 ? (size_t)len : 1);
    assert_non_null(p);
    *n = fread(p, 1, (size_t)len, f);
    fclose(f);
    return p;
}

char *test_read_text(const char *path, size_t *n)
{
    size_t len = 0;
    uint8_t *data = test_read_file(path, &len);
    char *s;
    if (!data)
        fail_msg("%s is missing", path);
    s = realloc(data, len + 1);
    assert_non_null(s);
    s[len] = '\0';
    if (n)
        *n = len;
    return s;
}

test_stderr test_stderr_begin(const char *path)
{
    test_stderr c;
    int fd;
    fflush(stderr);
    c.saved_fd = dup(STDERR_FILENO);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(c.saved_fd >= 0 && fd >= 0);
    assert_true(dup2(fd, STDERR_FILENO) >= 0);
    close(fd);
    c.path = strdup(path);
    assert_non_null(c.path);
    return c;
}

char *test_stderr_end(test_stderr *c)
{
    char *text;
    fflush(stderr);
    assert_true(dup2(c->saved_fd, STDERR_FILENO) >= 0);
    close(c->saved_fd);
    text = test_read_text(c->path, NULL);
    assert_int_equal(unlink(c->path), 0);
    free(c->path);
    c->path = NULL;
    return text;
}

void test_assert_file_is(const char *path, const void *data, size_t n)
{
    size_t got = 0;
    uint8_t *p = test_read_file(path, &got);
    if (!p)
        fail_msg("%s is missing", path);
    assert_int_equal(got, n);
    if (n)
        assert_memory_equal(p, data, n);
    free(p);
}

void test_write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        fail_msg("fopen %s: %s", path, strerror(errno));
    assert_int_equal(fwrite(data, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

void test_touch(const char *dir, const char *name)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    test_write_file(path, "x", 1);
}

int test_find_leftover(const char *dir, char *why, size_t n)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int rc = 0;
    assert_non_null(d);
    while (rc == 0 && (e = readdir(d)) != NULL) {
        const char *name = e->d_name;
        const char *data = strstr(name, ".data-");
        char index[4400];
        struct stat sb;
        if (strstr(name, ".tempstate") ||
            strncmp(name, "checkpoint.tmp", 14) == 0 ||
            strcmp(name, "checkpoint.pending") == 0) {
            snprintf(why, n, "%s left over", name);
            rc = -1;
            continue;
        }
        if (!data)
            continue;
        snprintf(index, sizeof(index), "%s/%.*s.index", dir, (int)(data - name),
                 name);
        if (stat(index, &sb) != 0) {
            snprintf(why, n, "%s without its index", name);
            rc = -1;
        }
    }
    closedir(d);
    return rc;
}

void test_limit_self(uint64_t max_memory, unsigned seconds)
{
    if (max_memory > 0 && !TEST_SANITIZED) {
        struct rlimit rl;
        rl.rlim_cur = (rlim_t)max_memory;
        rl.rlim_max = (rlim_t)max_memory;
        setrlimit(RLIMIT_AS, &rl);
    }
    if (seconds > 0)
        alarm(seconds);
}

void test_fill_random(void *dst, size_t n, uint64_t seed)
{
    uint8_t *p = dst;
    uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        p[i] = (uint8_t)(x >> 24);
    }
}
