/* Tests for the test helpers of tests/support: the forwarding file system
 * (every method reaches the base with the base's payload; a replaced
 * method is the only one that changes; open_read_direct and device_id only
 * when the base has them) and the fake clock (monotonic now, wall now +
 * offset). */
#include "test_util.h"

#include "common/internal.h"
#include "support/fake_clock.h"
#include "support/fs_forward.h"

#include <sys/stat.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A base over POSIX that counts the calls it gets and checks that each
 * comes with its own payload. */
struct counting_base {
    int calls;
    int bad_payload;
};

static void seen(void *payload, struct counting_base *expect)
{
    if (payload != expect)
        expect->bad_payload++;
    expect->calls++;
}

/* The one counting base of a test (methods find it through the payload
 * they get, which must be the base's own). */
static struct counting_base *g_base;

#define COUNT(p) seen((p), g_base)
#define POSIX ckpt_fs_posix()

static int b_open_write(ckpt_file **out, const char *path, int flags, void *p)
{
    COUNT(p);
    return POSIX->open_write(out, path, flags, POSIX->payload);
}
static int b_open_read(ckpt_file **out, const char *path, void *p)
{
    COUNT(p);
    return POSIX->open_read(out, path, POSIX->payload);
}
static int b_write(ckpt_file *f, const void *buf, size_t n, void *p)
{
    COUNT(p);
    return POSIX->write(f, buf, n, POSIX->payload);
}
static int b_pread(ckpt_file *f, void *buf, size_t n, uint64_t off,
                   size_t *nread, void *p)
{
    COUNT(p);
    return POSIX->pread(f, buf, n, off, nread, POSIX->payload);
}
static int b_size(ckpt_file *f, uint64_t *out, void *p)
{
    COUNT(p);
    return POSIX->size(f, out, POSIX->payload);
}
static int b_sync(ckpt_file *f, void *p)
{
    COUNT(p);
    return POSIX->sync(f, POSIX->payload);
}
static int b_close(ckpt_file *f, void *p)
{
    COUNT(p);
    return POSIX->close(f, POSIX->payload);
}
static int b_rename(const char *a, const char *b, void *p)
{
    COUNT(p);
    return POSIX->rename(a, b, POSIX->payload);
}
static int b_remove(const char *a, void *p)
{
    COUNT(p);
    return POSIX->remove(a, POSIX->payload);
}
static int b_mkdir(const char *a, void *p)
{
    COUNT(p);
    return POSIX->mkdir(a, POSIX->payload);
}
static int b_sync_dir(const char *a, void *p)
{
    COUNT(p);
    return POSIX->sync_dir(a, POSIX->payload);
}
static int b_list(const char *a, ckpt_dir_cb cb, void *cbp, void *p)
{
    COUNT(p);
    return POSIX->list(a, cb, cbp, POSIX->payload);
}
static int b_stat(const char *a, uint64_t *out, double *mtime, void *p)
{
    COUNT(p);
    return POSIX->stat(a, out, mtime, POSIX->payload);
}

/* A base table of its own (not a forwarder), so that its payload is
 * distinct from the forwarder's. */
static ckpt_fs counting_table(struct counting_base *b)
{
    ckpt_fs fs;
    memset(&fs, 0, sizeof(fs));
    fs.version = 1; /* no open_read_direct */
    fs.payload = b;
    fs.open_write = b_open_write;
    fs.open_read = b_open_read;
    fs.write = b_write;
    fs.pread = b_pread;
    fs.size = b_size;
    fs.sync = b_sync;
    fs.close = b_close;
    fs.rename = b_rename;
    fs.remove = b_remove;
    fs.mkdir = b_mkdir;
    fs.sync_dir = b_sync_dir;
    fs.list = b_list;
    fs.stat = b_stat;
    return fs;
}

static int count_entry(const char *name, void *payload)
{
    (void)name;
    (*(int *)payload)++;
    return 0;
}

static void test_forwards_every_method(void **state)
{
    char *dir = test_make_temp_dir();
    char a[4096], b[4096], sub[4096];
    struct counting_base base;
    ckpt_fs table;
    ckpt_fs_forward w;
    const ckpt_fs *fs = &w.fs;
    ckpt_file *f = NULL;
    char buf[8];
    size_t got = 0;
    uint64_t size = 0;
    int entries = 0;
    (void)state;
    memset(&base, 0, sizeof(base));
    g_base = &base;
    table = counting_table(&base);
    ckpt_fs_forward_init(&w, &table);
    assert_int_equal(w.fs.version, CKPT_FS_VERSION);
    assert_ptr_equal(w.fs.payload, &w);
    assert_ptr_equal(ckpt_fs_forward_base(&w), &table);
    assert_null(w.fs.open_read_direct); /* the base (version 1) has none */
    snprintf(a, sizeof(a), "%s/a", dir);
    snprintf(b, sizeof(b), "%s/b", dir);
    snprintf(sub, sizeof(sub), "%s/sub", dir);

    assert_ckpt_ok(fs->open_write(&f, a, CKPT_OPEN_EXCL, fs->payload));
    assert_ckpt_ok(fs->write(f, "hello", 5, fs->payload));
    assert_ckpt_ok(fs->sync(f, fs->payload));
    assert_ckpt_ok(fs->close(f, fs->payload));
    assert_ckpt_ok(fs->rename(a, b, fs->payload));
    assert_ckpt_ok(fs->sync_dir(dir, fs->payload));
    assert_ckpt_ok(fs->open_read(&f, b, fs->payload));
    assert_ckpt_ok(fs->size(f, &size, fs->payload));
    assert_int_equal(size, 5);
    assert_ckpt_ok(fs->pread(f, buf, sizeof(buf), 1, &got, fs->payload));
    assert_int_equal(got, 4);
    assert_memory_equal(buf, "ello", 4);
    assert_ckpt_ok(fs->close(f, fs->payload));
    assert_ckpt_ok(fs->stat(b, &size, NULL, fs->payload));
    assert_int_equal(size, 5);
    assert_ckpt_ok(fs->mkdir(sub, fs->payload));
    assert_ckpt_ok(fs->list(dir, count_entry, &entries, fs->payload));
    assert_int_equal(entries, 2); /* b and sub */
    assert_ckpt_ok(fs->remove(b, fs->payload));
    assert_ckpt_error(fs->stat(b, NULL, NULL, fs->payload), CKPT_ENOTFOUND,
                      NULL);
    /* all 13 methods, 15 calls, each with the base's own payload */
    assert_int_equal(base.calls, 15);
    assert_int_equal(base.bad_payload, 0);
    g_base = NULL;
    test_remove_tree(dir);
}

/* A test replaces one method; the rest still forward. */
struct full_disk {
    ckpt_fs_forward fwd;
    int writes;
};

static int full_write(ckpt_file *f, const void *buf, size_t n, void *payload)
{
    struct full_disk *d = payload;
    (void)f;
    (void)buf;
    (void)n;
    d->writes++;
    return ckpt__error(CKPT_ENOSPC, "write: no space left (test)");
}

static void test_override_one_method(void **state)
{
    char *dir = test_make_temp_dir();
    char path[4096];
    struct full_disk d;
    size_t n = 0;
    uint8_t *text;
    (void)state;
    ckpt_fs_forward_init(&d.fwd, NULL);
    d.writes = 0;
    d.fwd.fs.write = full_write;
    assert_ptr_equal(ckpt_fs_forward_base(&d), ckpt_fs_posix());
    snprintf(path, sizeof(path), "%s/state", dir);
    assert_ckpt_error(ckpt_fs_write_file_atomic(&d.fwd.fs, path, "x", 1),
                      CKPT_ENOSPC, "no space left (test)");
    assert_int_equal(d.writes, 1);
    assert_null(test_read_file(path, &n)); /* the temporary was removed */
    /* writing through the real one still works */
    assert_ckpt_ok(ckpt_fs_write_file_atomic(ckpt_fs_posix(), path, "y", 1));
    text = test_read_file(path, &n);
    assert_non_null(text);
    assert_int_equal(n, 1);
    free(text);
    test_remove_tree(dir);
}

static void test_direct_reads_follow_the_base(void **state)
{
    ckpt_fs_forward w;
    ckpt_fs v1 = *ckpt_fs_posix();
    (void)state;
    ckpt_fs_forward_init(&w, ckpt_fs_posix());
    assert_non_null(ckpt_fs_posix()->open_read_direct);
    assert_non_null(w.fs.open_read_direct);
    v1.version = 1; /* the member exists but a version-1 table lacks it */
    ckpt_fs_forward_init(&w, &v1);
    assert_null(w.fs.open_read_direct);
}

/* device_id reaches the base (the POSIX one: st_dev) only from a base of
 * version 3 or later that offers it. */
static void test_device_id_follows_the_base(void **state)
{
    char *dir = test_make_temp_dir();
    ckpt_fs_forward w;
    ckpt_fs v2 = *ckpt_fs_posix();
    struct stat st;
    uint64_t id = 0;
    (void)state;
    ckpt_fs_forward_init(&w, ckpt_fs_posix());
    assert_non_null(w.fs.device_id);
    assert_ckpt_ok(w.fs.device_id(dir, &id, w.fs.payload));
    assert_int_equal(stat(dir, &st), 0);
    assert_int_equal(id, (uint64_t)st.st_dev);
    v2.version = 2; /* the member exists but a version-2 table lacks it */
    ckpt_fs_forward_init(&w, &v2);
    assert_null(w.fs.device_id);
    test_remove_tree(dir);
}

static void test_fake_clock(void **state)
{
    fake_clock fc;
    (void)state;
    fake_clock_init(&fc, 10.0, 1.7e9);
    assert_true(ckpt_clock_monotonic(&fc.clock) == 10.0);
    assert_true(ckpt_clock_wall(&fc.clock) == 1.7e9);
    fc.now += 2.5;
    assert_true(ckpt_clock_monotonic(&fc.clock) == 12.5);
    assert_true(ckpt_clock_wall(&fc.clock) == 1.7e9 + 2.5);
    fake_clock_init(&fc, 1000.0, 1000.0);
    assert_true(ckpt_clock_wall(&fc.clock) == ckpt_clock_monotonic(&fc.clock));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forwards_every_method),
        cmocka_unit_test(test_override_one_method),
        cmocka_unit_test(test_direct_reads_follow_the_base),
        cmocka_unit_test(test_device_id_follows_the_base),
        cmocka_unit_test(test_fake_clock),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
