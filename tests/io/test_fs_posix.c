/* Tests for the POSIX file system (ckpt_fs_posix), ckpt_fs_read_file and
 * the internal helpers of io/fs_internal.h. */
#include "ckpt.h"
#include "test_util.h"

#include "io/fs_internal.h"
#include "support/fs_forward.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

struct fixture {
    char *dir;
    const ckpt_fs *fs;
};

static int setup(void **state)
{
    struct fixture *fx = calloc(1, sizeof(*fx));
    assert_non_null(fx);
    fx->dir = test_make_temp_dir();
    fx->fs = ckpt_fs_posix();
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *fx = *state;
    test_remove_tree(fx->dir);
    free(fx);
    return 0;
}

static void write_with(const ckpt_fs *fs, const char *path, int flags,
                       const char *text)
{
    ckpt_file *f = NULL;
    assert_ckpt_ok(fs->open_write(&f, path, flags, fs->payload));
    assert_non_null(f);
    assert_ckpt_ok(fs->write(f, text, strlen(text), fs->payload));
    assert_ckpt_ok(fs->close(f, fs->payload));
}

static void test_default_fs(void **state)
{
    (void)state;
    assert_ptr_equal(ckpt_fs_or_default(NULL), ckpt_fs_posix());
    assert_ptr_equal(ckpt_fs_or_default(ckpt_fs_posix()), ckpt_fs_posix());
    assert_int_equal(ckpt_fs_posix()->version, CKPT_FS_VERSION);
}

/* device_id is the file's st_dev (files on one device share it); a
 * missing file is CKPT_ENOTFOUND naming the operation and the path, and
 * the wrapper answers CKPT_ENOTSUP for a table of version 2. */
static void test_device_id(void **state)
{
    struct fixture *fx = *state;
    char *path = test_path(fx->dir, "dev.bin");
    char *missing = test_path(fx->dir, "missing.bin");
    ckpt_fs v2 = *fx->fs;
    struct stat st;
    uint64_t id = 0;
    write_with(fx->fs, path, CKPT_OPEN_EXCL, "x");
    assert_int_equal(stat(path, &st), 0);
    assert_ckpt_ok(fx->fs->device_id(path, &id, fx->fs->payload));
    assert_int_equal(id, (uint64_t)st.st_dev);
    assert_ckpt_ok(ckpt__fs_device_id(fx->fs, fx->dir, &id));
    assert_int_equal(id, (uint64_t)st.st_dev);
    assert_ckpt_error(ckpt__fs_device_id(fx->fs, missing, &id), CKPT_ENOTFOUND,
                      "device_id");
    assert_non_null(strstr(ckpt_error_last()->message, missing));
    v2.version = 2;
    assert_ckpt_error(ckpt__fs_device_id(&v2, path, &id), CKPT_ENOTSUP,
                      "not offered by this file system");
    free(missing);
    free(path);
}

/* preadv fills its buffers in turn from consecutive file bytes (empty
 * buffers included), returns fewer bytes only at the end of the file, and
 * 0 past it; ckpt__fs_preadv gives the same with a table of version 3
 * (one pread per buffer); an offset past INT64_MAX is refused. */
static void test_preadv(void **state)
{
    struct fixture *fx = *state;
    char *path = test_path(fx->dir, "v.bin");
    const char text[] = "abcdefghijklmnopqrstuvwxyz";
    ckpt_fs v3 = *fx->fs;
    ckpt_file *f = NULL;
    v3.version = 3;
    v3.preadv = NULL; /* would crash if a version-3 table were asked */
    write_with(fx->fs, path, CKPT_OPEN_EXCL, text);
    assert_ckpt_ok(fx->fs->open_read(&f, path, fx->fs->payload));
    for (int round = 0; round < 2; round++) {
        const ckpt_fs *fs = round == 0 ? fx->fs : &v3;
        char a[4], b[1], c[30];
        ckpt_iovec iov[4] = {{a, 4}, {b, 0}, {b, 1}, {c, 30}};
        size_t got = 99;
        memset(c, '.', sizeof(c));
        assert_ckpt_ok(ckpt__fs_preadv(fs, f, path, iov, 4, 2, &got));
        assert_int_equal(got, 24); /* short: the file ends */
        assert_memory_equal(a, "cdef", 4);
        assert_int_equal(b[0], 'g');
        assert_memory_equal(c, "hijklmnopqrstuvwxyz", 19);
        assert_int_equal(c[19], '.');
        assert_ckpt_ok(ckpt__fs_preadv(fs, f, path, iov, 4, 26, &got));
        assert_int_equal(got, 0);
        assert_ckpt_ok(ckpt__fs_preadv(fs, f, path, iov, 1, 22, &got));
        assert_int_equal(got, 4);
        assert_memory_equal(a, "wxyz", 4);
    }
    {
        char a[4];
        ckpt_iovec iov[1] = {{a, 4}};
        size_t got = 0;
        assert_ckpt_error(fx->fs->preadv(f, iov, 1, (uint64_t)INT64_MAX + 1,
                                         &got, fx->fs->payload),
                          CKPT_EINVAL, "out of range");
    }
    assert_ckpt_ok(fx->fs->close(f, fx->fs->payload));
    free(path);
}

/* The read-ahead of the device holding a path: sysfs's number for a file
 * on a block device (a partition's disk), -1 for a missing path or one on
 * no block device (/proc). */
static void test_read_ahead_kb(void **state)
{
    struct fixture *fx = *state;
    char *missing = test_path(fx->dir, "missing.bin");
    struct stat st;
    char sys[96];
    long kb = ckpt__posix_read_ahead_kb(fx->dir), want = -1;
    FILE *f;
    assert_int_equal(ckpt__posix_read_ahead_kb(missing), -1);
    assert_int_equal(ckpt__posix_read_ahead_kb("/proc/self"), -1);
    assert_int_equal(stat(fx->dir, &st), 0);
    snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u/queue/read_ahead_kb",
             major(st.st_dev), minor(st.st_dev));
    f = fopen(sys, "r");
    if (!f) {
        snprintf(sys, sizeof(sys),
                 "/sys/dev/block/%u:%u/../queue/read_ahead_kb",
                 major(st.st_dev), minor(st.st_dev));
        f = fopen(sys, "r");
    }
    if (f) {
        assert_int_equal(fscanf(f, "%ld", &want), 1);
        fclose(f);
    }
    assert_int_equal(kb, want);
    free(missing);
}

static void test_write_read_round_trip(void **state)
{
    struct fixture *fx = *state;
    const ckpt_fs *fs = fx->fs;
    char *path = test_path(fx->dir, "data.bin");
    uint8_t big[100000];
    uint8_t back[100010];
    ckpt_file *f = NULL;
    uint64_t size = 0;
    size_t nread = 0;
    for (size_t i = 0; i < sizeof(big); i++)
        big[i] = (uint8_t)(i * 7 + (i >> 8));

    assert_ckpt_ok(fs->open_write(&f, path, CKPT_OPEN_EXCL, fs->payload));
    assert_ckpt_ok(fs->write(f, big, 10, fs->payload));
    assert_ckpt_ok(fs->write(f, big + 10, 0, fs->payload));
    assert_ckpt_ok(fs->write(f, big + 10, sizeof(big) - 10, fs->payload));
    assert_ckpt_ok(fs->size(f, &size, fs->payload));
    assert_int_equal(size, sizeof(big));
    assert_ckpt_ok(fs->sync(f, fs->payload));
    assert_ckpt_ok(fs->close(f, fs->payload));
    test_assert_file_is(path, big, sizeof(big));

    f = NULL;
    assert_ckpt_ok(fs->open_read(&f, path, fs->payload));
    assert_ckpt_ok(fs->size(f, &size, fs->payload));
    assert_int_equal(size, sizeof(big));
    /* a read in the middle */
    assert_ckpt_ok(fs->pread(f, back, 1000, 5000, &nread, fs->payload));
    assert_int_equal(nread, 1000);
    assert_memory_equal(back, big + 5000, 1000);
    /* a read across the end is short */
    assert_ckpt_ok(
        fs->pread(f, back, 100, sizeof(big) - 30, &nread, fs->payload));
    assert_int_equal(nread, 30);
    assert_memory_equal(back, big + sizeof(big) - 30, 30);
    /* past the end: nothing */
    assert_ckpt_ok(
        fs->pread(f, back, 10, sizeof(big) + 5, &nread, fs->payload));
    assert_int_equal(nread, 0);
    /* the whole file plus slack */
    assert_ckpt_ok(fs->pread(f, back, sizeof(back), 0, &nread, fs->payload));
    assert_int_equal(nread, sizeof(big));
    assert_memory_equal(back, big, sizeof(big));
    assert_ckpt_ok(fs->close(f, fs->payload));
    free(path);
}

static void test_trunc_and_overwrite(void **state)
{
    struct fixture *fx = *state;
    char *path = test_path(fx->dir, "t");
    test_write_file(path, "0123456789", 10);
    /* without TRUNC: writes start at 0 and the tail stays */
    write_with(fx->fs, path, 0, "ab");
    test_assert_file_is(path, "ab23456789", 10);
    /* with TRUNC: the old content is gone */
    write_with(fx->fs, path, CKPT_OPEN_TRUNC, "xyz");
    test_assert_file_is(path, "xyz", 3);
    /* DIRECT is a hint that must not break ordinary unaligned writes */
    write_with(fx->fs, path, CKPT_OPEN_TRUNC | CKPT_OPEN_DIRECT, "hello");
    test_assert_file_is(path, "hello", 5);
    free(path);
}

static void test_excl_existing_and_symlink(void **state)
{
    struct fixture *fx = *state;
    const ckpt_fs *fs = fx->fs;
    char *path = test_path(fx->dir, "exists");
    char *link = test_path(fx->dir, "link");
    char *target = test_path(fx->dir, "target");
    char *dangling = test_path(fx->dir, "dangling");
    char *nowhere = test_path(fx->dir, "nowhere");
    ckpt_file *f = NULL;
    struct stat st;

    test_write_file(path, "keep", 4);
    assert_ckpt_error(fs->open_write(&f, path, CKPT_OPEN_EXCL, fs->payload),
                      CKPT_EEXISTS, path);
    assert_null(f);
    assert_non_null(strstr(ckpt_error_last()->message, "open_write"));
    test_assert_file_is(path, "keep", 4);
    /* EXCL wins over TRUNC */
    assert_ckpt_error(
        fs->open_write(&f, path, CKPT_OPEN_EXCL | CKPT_OPEN_TRUNC, fs->payload),
        CKPT_EEXISTS, path);
    test_assert_file_is(path, "keep", 4);

    /* a symlink to an existing file: EXCL fails, the target is untouched */
    test_write_file(target, "target", 6);
    assert_int_equal(symlink(target, link), 0);
    assert_ckpt_error(fs->open_write(&f, link, CKPT_OPEN_EXCL, fs->payload),
                      CKPT_EEXISTS, link);
    test_assert_file_is(target, "target", 6);

    /* a dangling symlink: EXCL fails and does not create its target */
    assert_int_equal(symlink(nowhere, dangling), 0);
    assert_ckpt_error(fs->open_write(&f, dangling, CKPT_OPEN_EXCL, fs->payload),
                      CKPT_EEXISTS, dangling);
    assert_int_equal(lstat(nowhere, &st), -1);
    assert_int_equal(errno, ENOENT);
    assert_int_equal(lstat(dangling, &st), 0);
    assert_true(S_ISLNK(st.st_mode));

    free(path);
    free(link);
    free(target);
    free(dangling);
    free(nowhere);
}

static void test_missing_file(void **state)
{
    struct fixture *fx = *state;
    const ckpt_fs *fs = fx->fs;
    char *path = test_path(fx->dir, "missing");
    char *in_missing_dir = test_path(fx->dir, "nodir/file");
    ckpt_file *f = NULL;
    ckpt_buf buf = CKPT_BUF_INIT;
    uint64_t size = 99;

    assert_ckpt_error(fs->open_read(&f, path, fs->payload), CKPT_ENOTFOUND,
                      path);
    assert_non_null(strstr(ckpt_error_last()->message, "open_read"));
    assert_null(f);
    assert_ckpt_error(fs->stat(path, &size, NULL, fs->payload), CKPT_ENOTFOUND,
                      path);
    assert_ckpt_error(fs->remove(path, fs->payload), CKPT_ENOTFOUND, path);
    assert_non_null(strstr(ckpt_error_last()->message, "remove"));
    assert_ckpt_error(ckpt_fs_read_file(&buf, NULL, path), CKPT_ENOTFOUND,
                      path);
    assert_int_equal(buf.size, 0);
    assert_ckpt_error(
        fs->open_write(&f, in_missing_dir, CKPT_OPEN_EXCL, fs->payload),
        CKPT_ENOTFOUND, in_missing_dir);
    assert_ckpt_error(fs->sync_dir(path, fs->payload), CKPT_ENOTFOUND,
                      "sync_dir");
    ckpt_buf_dispose(&buf);
    free(path);
    free(in_missing_dir);
}

static void test_disk_full_maps_to_enospc(void **state)
{
    const ckpt_fs *fs = ckpt_fs_posix();
    ckpt_file *f = NULL;
    char block[4096] = {0};
    struct stat st;
    (void)state;
    if (stat("/dev/full", &st) != 0) {
        print_message("SKIPPED: no /dev/full\n");
        skip();
        return;
    }
    assert_ckpt_ok(fs->open_write(&f, "/dev/full", 0, fs->payload));
    assert_ckpt_error(fs->write(f, block, sizeof(block), fs->payload),
                      CKPT_ENOSPC, "write /dev/full: ");
    assert_ckpt_ok(fs->close(f, fs->payload));
}

struct names {
    char items[16][32];
    int n;
    int stop_after;
};

static int collect(const char *name, void *payload)
{
    struct names *ns = payload;
    assert_true(ns->n < 16);
    snprintf(ns->items[ns->n], sizeof(ns->items[0]), "%s", name);
    ns->n++;
    if (ns->stop_after && ns->n == ns->stop_after)
        return 42;
    return 0;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(a, b);
}

static void test_list(void **state)
{
    struct fixture *fx = *state;
    const ckpt_fs *fs = fx->fs;
    struct names ns;
    char *a = test_path(fx->dir, "a.index");
    char *b = test_path(fx->dir, "b.data");
    char *sub = test_path(fx->dir, "sub");
    char *missing = test_path(fx->dir, "missing");

    memset(&ns, 0, sizeof(ns));
    assert_ckpt_ok(fs->list(fx->dir, collect, &ns, fs->payload));
    assert_int_equal(ns.n, 0);

    test_write_file(a, "1", 1);
    test_write_file(b, "2", 1);
    assert_ckpt_ok(fs->mkdir(sub, fs->payload));
    assert_ckpt_error(fs->mkdir(sub, fs->payload), CKPT_EEXISTS, sub);
    memset(&ns, 0, sizeof(ns));
    assert_ckpt_ok(fs->list(fx->dir, collect, &ns, fs->payload));
    assert_int_equal(ns.n, 3);
    qsort(ns.items, (size_t)ns.n, sizeof(ns.items[0]), cmp_names);
    assert_string_equal(ns.items[0], "a.index");
    assert_string_equal(ns.items[1], "b.data");
    assert_string_equal(ns.items[2], "sub");

    /* the callback stops the listing and its value comes back */
    memset(&ns, 0, sizeof(ns));
    ns.stop_after = 2;
    assert_int_equal(fs->list(fx->dir, collect, &ns, fs->payload), 42);
    assert_int_equal(ns.n, 2);

    assert_ckpt_error(fs->list(missing, collect, &ns, fs->payload),
                      CKPT_ENOTFOUND, missing);
    free(a);
    free(b);
    free(sub);
    free(missing);
}

static void test_rename_and_sync_dir(void **state)
{
    struct fixture *fx = *state;
    const ckpt_fs *fs = fx->fs;
    char *from = test_path(fx->dir, "from");
    char *to = test_path(fx->dir, "to");
    uint64_t size = 0;

    test_write_file(from, "new", 3);
    test_write_file(to, "old content", 11);
    assert_ckpt_ok(fs->rename(from, to, fs->payload));
    assert_ckpt_ok(fs->sync_dir(fx->dir, fs->payload));
    test_assert_file_is(to, "new", 3);
    assert_ckpt_error(fs->stat(from, &size, NULL, fs->payload), CKPT_ENOTFOUND,
                      from);
    /* both names appear in a failed rename's message */
    assert_ckpt_error(fs->rename(from, to, fs->payload), CKPT_ENOTFOUND,
                      "rename");
    assert_non_null(strstr(ckpt_error_last()->message, from));
    assert_non_null(strstr(ckpt_error_last()->message, to));
    assert_ckpt_ok(fs->remove(to, fs->payload));
    assert_ckpt_error(fs->stat(to, NULL, NULL, fs->payload), CKPT_ENOTFOUND,
                      to);
    assert_ckpt_ok(fs->sync_dir(fx->dir, fs->payload));
    free(from);
    free(to);
}

static void test_stat(void **state)
{
    struct fixture *fx = *state;
    const ckpt_fs *fs = fx->fs;
    char *path = test_path(fx->dir, "s");
    uint64_t size = 0;
    double mtime = 0;
    time_t now = time(NULL);

    test_write_file(path, "12345", 5);
    assert_ckpt_ok(fs->stat(path, &size, &mtime, fs->payload));
    assert_int_equal(size, 5);
    assert_true(mtime > (double)now - 60 && mtime < (double)now + 60);
    assert_ckpt_ok(fs->stat(path, NULL, NULL, fs->payload));
    free(path);
}

static void test_read_file_round_trip(void **state)
{
    struct fixture *fx = *state;
    char *path = test_path(fx->dir, "r");
    char *empty = test_path(fx->dir, "empty");
    ckpt_buf buf = CKPT_BUF_INIT;
    uint8_t data[70000];
    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (uint8_t)(i ^ (i >> 9));
    test_write_file(path, data, sizeof(data));
    test_write_file(empty, "", 0);

    /* appends to what the buffer holds */
    assert_ckpt_ok(ckpt__buf_puts(&buf, "head"));
    assert_ckpt_ok(ckpt_fs_read_file(&buf, NULL, path));
    assert_int_equal(buf.size, 4 + sizeof(data));
    assert_memory_equal(buf.ptr, "head", 4);
    assert_memory_equal(buf.ptr + 4, data, sizeof(data));
    assert_int_equal(buf.ptr[buf.size], '\0');

    ckpt__buf_clear(&buf);
    assert_ckpt_ok(ckpt_fs_read_file(&buf, ckpt_fs_posix(), empty));
    assert_int_equal(buf.size, 0);

    ckpt_buf_dispose(&buf);
    free(path);
    free(empty);
}

/* A file system whose size() is off by `delta`, as if the file grew (delta
 * < 0) or shrank (delta > 0) between size() and the reads. */
struct lying_fs {
    ckpt_fs_forward fwd; /* over POSIX; first: the methods' payload */
    int64_t delta;
    int size_error; /* fail size() without setting a message */
};

static int lying_size(ckpt_file *f, uint64_t *out, void *payload)
{
    struct lying_fs *l = payload;
    const ckpt_fs *p = ckpt_fs_forward_base(payload);
    uint64_t real = 0;
    int rc;
    if (l->size_error)
        return l->size_error;
    rc = p->size(f, &real, p->payload);
    if (rc < 0)
        return rc;
    *out = (uint64_t)((int64_t)real + l->delta);
    return 0;
}

static void lying_init(struct lying_fs *l, int64_t delta)
{
    ckpt_fs_forward_init(&l->fwd, ckpt_fs_posix());
    l->fwd.fs.size = lying_size;
    l->delta = delta;
    l->size_error = 0;
}

static void test_read_file_changing_size(void **state)
{
    struct fixture *fx = *state;
    char *path = test_path(fx->dir, "grow");
    ckpt_buf buf = CKPT_BUF_INIT;
    struct lying_fs l;
    uint8_t data[20000];
    char want[4200];
    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (uint8_t)(i * 13);
    test_write_file(path, data, sizeof(data));

    /* grew after size(): the extra bytes are read too */
    lying_init(&l, -15000);
    assert_ckpt_ok(ckpt_fs_read_file(&buf, &l.fwd.fs, path));
    assert_int_equal(buf.size, sizeof(data));
    assert_memory_equal(buf.ptr, data, sizeof(data));

    /* reported empty: everything still read */
    ckpt_buf_dispose(&buf);
    lying_init(&l, -(int64_t)sizeof(data));
    assert_ckpt_ok(ckpt_fs_read_file(&buf, &l.fwd.fs, path));
    assert_int_equal(buf.size, sizeof(data));
    assert_memory_equal(buf.ptr, data, sizeof(data));

    /* shrank after size(): what is there, nothing invented */
    ckpt_buf_dispose(&buf);
    lying_init(&l, 5000);
    assert_ckpt_ok(ckpt_fs_read_file(&buf, &l.fwd.fs, path));
    assert_int_equal(buf.size, sizeof(data));
    assert_memory_equal(buf.ptr, data, sizeof(data));

    /* a method failing without a message: the wrapper names op and path,
     * and the buffer is left as it was */
    ckpt_buf_dispose(&buf);
    assert_ckpt_ok(ckpt__buf_puts(&buf, "keep"));
    lying_init(&l, 0);
    l.size_error = CKPT_EIO;
    ckpt_error_clear();
    snprintf(want, sizeof(want), "size %s: input/output error", path);
    assert_ckpt_error(ckpt_fs_read_file(&buf, &l.fwd.fs, path), CKPT_EIO, want);
    assert_int_equal(buf.size, 4);
    assert_string_equal(buf.ptr, "keep");

    ckpt_buf_dispose(&buf);
    free(path);
}

static void test_read_file_endless(void **state)
{
    ckpt_buf buf = CKPT_BUF_INIT;
    struct stat st;
    (void)state;
    if (stat("/dev/zero", &st) != 0) {
        print_message("SKIPPED: no /dev/zero\n");
        skip();
        return;
    }
    /* a device never ends: refused before any read */
    assert_ckpt_error(ckpt_fs_read_file(&buf, NULL, "/dev/zero"), CKPT_EIO,
                      "/dev/zero: a character device, not a regular file");
    assert_int_equal(buf.size, 0);
    ckpt_buf_dispose(&buf);
}

static void test_exists_keeps_last_error(void **state)
{
    struct fixture *fx = *state;
    char *path = test_path(fx->dir, "e");
    char *missing = test_path(fx->dir, "nope");
    test_write_file(path, "x", 1);
    ckpt__error(CKPT_ECORRUPT, "earlier failure");
    assert_int_equal(ckpt__fs_exists(fx->fs, path), 1);
    assert_int_equal(ckpt__fs_exists(fx->fs, missing), 0);
    assert_int_equal(ckpt__fs_exists(fx->fs, fx->dir), 1);
    assert_int_equal(ckpt_error_last()->code, CKPT_ECORRUPT);
    assert_string_equal(ckpt_error_last()->message, "earlier failure");
    /* quiet cleanup keeps it too */
    ckpt__fs_remove_quiet(fx->fs, missing);
    assert_string_equal(ckpt_error_last()->message, "earlier failure");
    ckpt_error_clear();
    ckpt__fs_remove_quiet(fx->fs, missing);
    assert_int_equal(ckpt_error_last()->code, 0);
    free(path);
    free(missing);
}

static void test_temp_name(void **state)
{
    ckpt_buf a = CKPT_BUF_INIT;
    ckpt_buf b = CKPT_BUF_INIT;
    const char *prefix = "dir/checkpoint.tmp";
    (void)state;
    assert_ckpt_ok(ckpt__fs_temp_name(&a, "dir/checkpoint", "tmp"));
    assert_ckpt_ok(ckpt__fs_temp_name(&b, "dir/checkpoint", "tmp"));
    assert_true(a.size >= strlen(prefix) + 16);
    assert_memory_equal(a.ptr, prefix, strlen(prefix));
    for (size_t i = strlen(prefix); i < a.size; i++)
        assert_true(isxdigit((unsigned char)a.ptr[i]));
    assert_string_not_equal(a.ptr, b.ptr);
    /* replaces, does not append */
    assert_ckpt_ok(ckpt__fs_temp_name(&a, "x", "tempstate"));
    assert_int_equal(a.size, strlen("x.tempstate") + 16);
    assert_memory_equal(a.ptr, "x.tempstate", strlen("x.tempstate"));
    ckpt_buf_dispose(&a);
    ckpt_buf_dispose(&b);
}

/* A caller's ckpt_fs is checked where it is given: its version (the
 * saver, the session) and every required member (the bundle reader and
 * writer, the state file's functions) are named in the error, where a NULL
 * member once crashed the first call through it. */
static void test_incomplete_fs_refused(void **state)
{
    struct fixture *fx = *state;
    ckpt_fs fs = *ckpt_fs_posix();
    ckpt_saver_options so = CKPT_SAVER_OPTIONS_INIT;
    ckpt_bundle_writer_options wo = CKPT_BUNDLE_WRITER_OPTIONS_INIT;
    ckpt_bundle_reader_options ro = CKPT_BUNDLE_READER_OPTIONS_INIT;
    ckpt_session_options sess = CKPT_SESSION_OPTIONS_INIT;
    ckpt_saver *s = NULL;
    ckpt_bundle_writer *w = NULL;
    ckpt_bundle_reader *r = NULL;
    ckpt_monitored_session *ms = NULL;
    ckpt_graph *g = NULL;
    ckpt_state st = CKPT_STATE_INIT;
    char *prefix = test_path(fx->dir, "p");
    so.fs = &fs;
    fs.version = 0;
    assert_ckpt_error(ckpt_saver_open(&s, fx->dir, &so), CKPT_EVERSION,
                      "saver options: ckpt_fs version 0 is not one");
    fs.version = CKPT_FS_VERSION + 1;
    assert_ckpt_error(ckpt_saver_open(&s, fx->dir, &so), CKPT_EVERSION,
                      "set it to CKPT_FS_VERSION");
    fs.version = CKPT_FS_VERSION;
    fs.list = NULL;
    assert_ckpt_error(ckpt_saver_open(&s, fx->dir, &so), CKPT_EINVAL,
                      "ckpt_fs member 'list' is NULL");
    assert_null(s);
    fs = *ckpt_fs_posix();
    fs.sync_dir = NULL;
    wo.fs = &fs;
    assert_ckpt_error(ckpt_bundle_writer_open(&w, prefix, &wo), CKPT_EINVAL,
                      "bundle writer options: ckpt_fs member 'sync_dir'");
    assert_null(w);
    ro.fs = &fs;
    assert_ckpt_error(ckpt_bundle_reader_open(&r, prefix, &ro), CKPT_EINVAL,
                      "'sync_dir'");
    assert_ckpt_error(ckpt_state_read(&st, &fs, fx->dir), CKPT_EINVAL,
                      "state read: fs: ckpt_fs member 'sync_dir'");
    {
        ckpt_buf b = CKPT_BUF_INIT;
        assert_ckpt_error(ckpt_fs_write_file_atomic(&fs, prefix, "x", 1),
                          CKPT_EINVAL,
                          "ckpt_fs_write_file_atomic: fs: ckpt_fs member "
                          "'sync_dir'");
        fs.sync_dir = ckpt_fs_posix()->sync_dir;
        fs.size = NULL;
        assert_ckpt_error(ckpt_fs_read_file(&b, &fs, prefix), CKPT_EINVAL,
                          "ckpt_fs_read_file: fs: ckpt_fs member 'size'");
        fs.size = ckpt_fs_posix()->size;
        fs.version = 99;
        assert_ckpt_error(ckpt_fs_read_file(&b, &fs, prefix), CKPT_EVERSION,
                          "ckpt_fs version 99");
        fs.version = CKPT_FS_VERSION;
        fs.sync_dir = NULL;
        ckpt_buf_dispose(&b);
    }
    assert_ckpt_error(ckpt_state_write(&fs, fx->dir, &st), CKPT_EINVAL,
                      "'sync_dir'");
    assert_ckpt_ok(ckpt_graph_new(&g));
    sess.fs = &fs;
    assert_ckpt_error(ckpt_monitored_session_new(&ms, g, NULL, 0, &sess),
                      CKPT_EINVAL, "session options: ckpt_fs member");
    ckpt_graph_free(g);
    ckpt_state_dispose(&st);
    free(prefix);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_fs),
        cmocka_unit_test_setup_teardown(test_incomplete_fs_refused, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_device_id, setup, teardown),
        cmocka_unit_test_setup_teardown(test_preadv, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_ahead_kb, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_read_round_trip, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_trunc_and_overwrite, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_excl_existing_and_symlink, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_missing_file, setup, teardown),
        cmocka_unit_test(test_disk_full_maps_to_enospc),
        cmocka_unit_test_setup_teardown(test_list, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rename_and_sync_dir, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_stat, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_file_round_trip, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_read_file_changing_size, setup,
                                        teardown),
        cmocka_unit_test(test_read_file_endless),
        cmocka_unit_test_setup_teardown(test_exists_keeps_last_error, setup,
                                        teardown),
        cmocka_unit_test(test_temp_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
