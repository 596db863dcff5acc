/* tests/io/test_direct_read.c - ckpt__read_extents_direct (io/direct_read.h)
 * through the aligned test file system (every direct pread aligned, the
 * bytes and CRCs right, big gaps skipped, failures of any pread reported
 * with the reader thread's message) and the POSIX open_read_direct: it
 * declines a file in the page cache and reads one that is not. */
#include "test_util.h"

#include "extent_fixture.h"

#include "aligned_fs.h"
#include "io/direct_read.h"
#include "support/fs_fault.h"
#include "util/crc32c.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <unistd.h>

#define KIB ((uint64_t)1024)
#define MIB (KIB * KIB)
#define GUARD EXT_GUARD
#define GUARD_BYTE EXT_GUARD_BYTE
#define TMPFS_MAGIC_NUMBER 0x01021994

typedef struct fixture {
    char *dir;
    char path[4096];
    uint8_t *data; /* the file's bytes */
    size_t size;
    aligned_fs afs;
} fixture;

/* Write a file of `size` pseudo-random bytes as f->path in `dir`. */
static void make_file(fixture *f, const char *dir, const char *name,
                      size_t size)
{
    free(f->data);
    f->size = size;
    f->data = malloc(size ? size : 1);
    assert_non_null(f->data);
    test_fill_random(f->data, size, size + 7);
    snprintf(f->path, sizeof(f->path), "%s/%s", dir, name);
    test_write_file(f->path, f->data, size);
}

static int setup(void **state)
{
    fixture *f = test_dir_fixture_new(sizeof(*f), offsetof(fixture, dir));
    aligned_fs_init(&f->afs, CKPT_FS_VERSION);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    free(f->data);
    return test_dir_fixture_teardown(state);
}

static uint64_t align_down(uint64_t x)
{
    return x & ~((uint64_t)CKPT_DIRECT_ALIGN - 1);
}

static uint64_t align_up(uint64_t x)
{
    return align_down(x + CKPT_DIRECT_ALIGN - 1);
}

/* ---- the aligned test file system itself -------------------------------- */

static void test_aligned_fs_polices(void **state)
{
    fixture *f = *state;
    const ckpt_fs *fs = &f->afs.fwd.fs;
    ckpt_file *file = NULL;
    uint8_t *buf = NULL;
    size_t got = 0;
    make_file(f, f->dir, "police.bin", 64 * KIB);
    assert_int_equal(
        posix_memalign((void **)&buf, CKPT_DIRECT_ALIGN, 3 * CKPT_DIRECT_ALIGN),
        0);
    assert_ckpt_ok(fs->open_read_direct(&file, f->path, fs->payload));
    assert_ckpt_error(
        fs->pread(file, buf, CKPT_DIRECT_ALIGN, 1, &got, fs->payload),
        CKPT_EINVAL, "unaligned direct pread");
    assert_ckpt_error(fs->pread(file, buf, 100, 0, &got, fs->payload),
                      CKPT_EINVAL, "unaligned direct pread");
    assert_ckpt_error(
        fs->pread(file, buf + 8, CKPT_DIRECT_ALIGN, 0, &got, fs->payload),
        CKPT_EINVAL, "unaligned direct pread");
    assert_int_equal(atomic_load(&f->afs.violations), 3);
    assert_ckpt_ok(fs->pread(file, buf, 2 * CKPT_DIRECT_ALIGN,
                             CKPT_DIRECT_ALIGN, &got, fs->payload));
    assert_int_equal(got, 2 * CKPT_DIRECT_ALIGN);
    assert_memory_equal(buf, f->data + CKPT_DIRECT_ALIGN, got);
    assert_int_equal(atomic_load(&f->afs.direct_preads), 4);
    assert_int_equal(atomic_load(&f->afs.direct_bytes), got);
    assert_int_equal(atomic_load(&f->afs.open_files), 1);
    assert_ckpt_ok(fs->close(file, fs->payload));
    /* ordinary files are not policed */
    assert_ckpt_ok(fs->open_read(&file, f->path, fs->payload));
    assert_ckpt_ok(fs->pread(file, buf + 1, 10, 3, &got, fs->payload));
    assert_int_equal(got, 10);
    assert_memory_equal(buf + 1, f->data + 3, 10);
    assert_ckpt_ok(fs->close(file, fs->payload));
    assert_int_equal(atomic_load(&f->afs.violations), 3);
    assert_int_equal(atomic_load(&f->afs.open_files), 0);
    free(buf);
}

/* ---- round trip --------------------------------------------------------- */

static void test_round_trip(void **state)
{
    fixture *f = *state;
    /* 4 MiB + 123 bytes: the last extent ends at the unaligned end */
    const size_t size = 4 * MIB + 123;
    ckpt__extent ext[8];
    int dst_wanted[8] = {1, 1, 1, 1, 0, 1, 1, 1};
    uint64_t sum = 0, gap_lo, gap_hi;
    size_t n = 0;

    make_file(f, f->dir, "data.bin", size);
    memset(ext, 0, sizeof(ext));
    /* unaligned, crossing a page */
    ext[n++] = (ckpt__extent){1000, 5000, NULL, 0};
    /* a gap of 100 bytes, 3 bytes */
    ext[n++] = (ckpt__extent){6100, 3, NULL, 0};
    /* zero-size */
    ext[n++] = (ckpt__extent){6200, 0, NULL, 0};
    /* a gap of ~200 KiB, then 1.3 MB crossing several 512 KiB pieces */
    ext[n++] = (ckpt__extent){206103, 1300000, NULL, 0};
    /* checksum only, after a gap of ~94 KiB */
    ext[n++] = (ckpt__extent){1600000, 70001, NULL, 0};
    /* a gap of ~1.33 MB (more than a piece), then 900,000 bytes */
    ext[n++] = (ckpt__extent){3000007, 900000, NULL, 0};
    /* an odd one right after */
    ext[n++] = (ckpt__extent){3900007, 1, NULL, 0};
    /* the file's last 50 bytes */
    ext[n++] = (ckpt__extent){size - 50, 50, NULL, 0};
    ext_give_destinations(ext, n, dst_wanted);

    assert_ckpt_ok(ckpt__read_extents_direct(&f->afs.fwd.fs, f->path, ext, n));
    ext_check(f->data, ext, n);
    assert_int_equal(ext[2].crc, 0); /* CRC of no bytes */

    assert_int_equal(atomic_load(&f->afs.violations), 0);
    assert_int_equal(atomic_load(&f->afs.direct_opens), 1);
    assert_int_equal(atomic_load(&f->afs.other_preads), 0);
    assert_int_equal(atomic_load(&f->afs.open_files), 0);
    assert_true(atomic_load(&f->afs.direct_preads) >= 2);
    /* everything asked for was read, the big gap was not */
    for (size_t i = 0; i < n; i++)
        sum += ext[i].size;
    gap_lo = align_up(ext[4].offset + ext[4].size);
    gap_hi = align_down(ext[5].offset);
    assert_true(atomic_load(&f->afs.direct_bytes) >= sum);
    assert_true(atomic_load(&f->afs.direct_bytes) < size);
    if (atomic_load(&f->afs.direct_bytes) > size - (gap_hi - gap_lo))
        fail_msg("%llu bytes read: the gap [%llu, %llu) was read",
                 (unsigned long long)atomic_load(&f->afs.direct_bytes),
                 (unsigned long long)gap_lo, (unsigned long long)gap_hi);
    ext_free_destinations(ext, n);
}

/* A single extent of the whole file, from offset 0 to its unaligned end,
 * reused after a first read (CRCs are reset, not accumulated). */
static void test_whole_file_twice(void **state)
{
    fixture *f = *state;
    const size_t size = 3 * MIB + 4095;
    ckpt__extent ext[1];
    int want_dst[1] = {1};
    make_file(f, f->dir, "whole.bin", size);
    ext[0] = (ckpt__extent){0, size, NULL, 0};
    ext_give_destinations(ext, 1, want_dst);
    assert_ckpt_ok(ckpt__read_extents_direct(&f->afs.fwd.fs, f->path, ext, 1));
    ext_check(f->data, ext, 1);
    assert_ckpt_ok(ckpt__read_extents_direct(&f->afs.fwd.fs, f->path, ext, 1));
    ext_check(f->data, ext, 1);
    assert_int_equal(atomic_load(&f->afs.violations), 0);
    assert_int_equal(atomic_load(&f->afs.direct_bytes), 2 * size);
    ext_free_destinations(ext, 1);
}

/* Nothing to read: 0 extents, or only empty ones. */
static void test_nothing_to_read(void **state)
{
    fixture *f = *state;
    ckpt__extent ext[2] = {{10, 0, NULL, 7}, {20, 0, NULL, 9}};
    make_file(f, f->dir, "empty.bin", 100);
    assert_ckpt_ok(ckpt__read_extents_direct(&f->afs.fwd.fs, f->path, ext, 0));
    assert_ckpt_ok(ckpt__read_extents_direct(&f->afs.fwd.fs, f->path, ext, 2));
    assert_int_equal(ext[0].crc, 0);
    assert_int_equal(ext[1].crc, 0);
    assert_int_equal(atomic_load(&f->afs.direct_preads), 0);
}

/* ---- argument errors ---------------------------------------------------- */

static void test_unsorted_and_overlapping(void **state)
{
    fixture *f = *state;
    uint8_t a[100], b[100];
    make_file(f, f->dir, "args.bin", 64 * KIB);
    memset(a, GUARD_BYTE, sizeof(a));
    memset(b, GUARD_BYTE, sizeof(b));
    {
        ckpt__extent ext[2] = {{5000, 10, a, 0}, {100, 10, b, 0}};
        assert_ckpt_error(
            ckpt__read_extents_direct(&f->afs.fwd.fs, f->path, ext, 2),
            CKPT_EINVAL, "extent 1 (offset 100, 10 bytes) is out of order");
    }
    {
        ckpt__extent ext[2] = {{0, 100, a, 0}, {50, 100, b, 0}};
        assert_ckpt_error(
            ckpt__read_extents_direct(&f->afs.fwd.fs, f->path, ext, 2),
            CKPT_EINVAL, "overlaps");
    }
    {
        /* an extent whose end does not fit in 63 bits */
        ckpt__extent ext[1] = {{UINT64_MAX - 10, 100, a, 0}};
        assert_ckpt_error(
            ckpt__read_extents_direct(&f->afs.fwd.fs, f->path, ext, 1),
            CKPT_EINVAL, "out of range");
    }
    /* rejected before the file was opened or anything written */
    assert_int_equal(atomic_load(&f->afs.direct_opens), 0);
    for (size_t i = 0; i < sizeof(a); i++) {
        assert_int_equal(a[i], GUARD_BYTE);
        assert_int_equal(b[i], GUARD_BYTE);
    }
}

/* A zero-size extent placed out of order among the others: either rejected
 * (not sorted) or ignored, but never a reason to skip the data of the
 * extents after it. */
static void test_empty_extent_out_of_order(void **state)
{
    fixture *f = *state;
    ckpt__extent ext[3];
    int want_dst[3] = {0, 1, 1};
    make_file(f, f->dir, "order.bin", 2 * MIB);
    ext[0] = (ckpt__extent){1500000, 0, NULL, 0};
    ext[1] = (ckpt__extent){100, 5000, NULL, 0};
    ext[2] = (ckpt__extent){9000, 20, NULL, 0};
    ext_give_destinations(ext, 3, want_dst);
    /* the contract: sorted by offset, empty extents included */
    assert_ckpt_error(
        ckpt__read_extents_direct(&f->afs.fwd.fs, f->path, ext, 3), CKPT_EINVAL,
        "extent 1 (offset 100, 5000 bytes)");
    assert_int_equal(atomic_load(&f->afs.open_files), 0);
    /* in order, the empty extent is skipped and the others read */
    ext[0] = (ckpt__extent){100, 5000, ext[1].dst, 0};
    ext[1] = (ckpt__extent){9000, 20, ext[2].dst, 0};
    ext[2] = (ckpt__extent){1500000, 0, NULL, 0};
    assert_ckpt_ok(ckpt__read_extents_direct(&f->afs.fwd.fs, f->path, ext, 3));
    ext_check(f->data, ext, 3);
    ext_free_destinations(ext, 3);
}

/* ---- file systems without direct reads ---------------------------------- */

static void test_not_offered(void **state)
{
    fixture *f = *state;
    ckpt_fs_fault *ff = NULL;
    aligned_fs v1;
    uint8_t buf[64];
    ckpt__extent ext[1];
    make_file(f, f->dir, "plain.bin", 256 * KIB);
    memset(buf, GUARD_BYTE, sizeof(buf));
    ext[0] = (ckpt__extent){4000, sizeof(buf), buf, 0};

    /* the fault wrapper has no open_read_direct */
    assert_ckpt_ok(ckpt_fs_fault_new(&ff, NULL));
    assert_ckpt_error(
        ckpt__read_extents_direct(ckpt_fs_fault_fs(ff), f->path, ext, 1),
        CKPT_ENOTSUP, "not offered");
    assert_non_null(strstr(ckpt_error_last()->message, f->path));
    ckpt_fs_fault_free(ff);

    /* a version-1 table is not asked even though the member is set */
    aligned_fs_init(&v1, 1);
    assert_ckpt_error(ckpt__read_extents_direct(&v1.fwd.fs, f->path, ext, 1),
                      CKPT_ENOTSUP, "not offered");
    assert_int_equal(atomic_load(&v1.direct_opens), 0);
    assert_int_equal(atomic_load(&v1.open_files), 0);

    /* the file system declines this file */
    atomic_store(&f->afs.decline, 1);
    assert_ckpt_error(
        ckpt__read_extents_direct(&f->afs.fwd.fs, f->path, ext, 1),
        CKPT_ENOTSUP, "declining direct reads of");
    assert_int_equal(atomic_load(&f->afs.direct_preads), 0);
    for (size_t i = 0; i < sizeof(buf); i++)
        assert_int_equal(buf[i], GUARD_BYTE);

    /* a missing file is not "not supported" */
    atomic_store(&f->afs.decline, 0);
    {
        char missing[4200];
        snprintf(missing, sizeof(missing), "%s/missing.bin", f->dir);
        assert_ckpt_error(
            ckpt__read_extents_direct(&f->afs.fwd.fs, missing, ext, 1),
            CKPT_ENOTFOUND, "missing.bin");
    }
}

/* ---- the file ends early ------------------------------------------------ */

static void test_extent_past_end(void **state)
{
    fixture *f = *state;
    const size_t size = MIB + 100;
    char want[64];
    ckpt__extent ext[2];
    int want_dst[2] = {1, 1};
    make_file(f, f->dir, "short.bin", size);

    /* starts inside the file, ends 100 bytes after it */
    ext[0] = (ckpt__extent){100, 1000, NULL, 0};
    ext[1] = (ckpt__extent){MIB, 200, NULL, 0};
    ext_give_destinations(ext, 2, want_dst);
    snprintf(want, sizeof(want), "ends at byte %zu", size);
    assert_ckpt_error(
        ckpt__read_extents_direct(&f->afs.fwd.fs, f->path, ext, 2),
        CKPT_ECORRUPT, want);
    assert_non_null(strstr(ckpt_error_last()->message, f->path));
    assert_int_equal(atomic_load(&f->afs.open_files), 0);
    ext_free_destinations(ext, 2);

    /* starts inside, runs megabytes past the end over several pieces */
    ext[0] = (ckpt__extent){MIB - 10, 3 * MIB, NULL, 0};
    ext_give_destinations(ext, 1, want_dst);
    assert_ckpt_error(
        ckpt__read_extents_direct(&f->afs.fwd.fs, f->path, ext, 1),
        CKPT_ECORRUPT, want);
    assert_int_equal(atomic_load(&f->afs.open_files), 0);
    ext_free_destinations(ext, 1);

    /* wholly past the end */
    ext[0] = (ckpt__extent){3 * MIB, 10, NULL, 0};
    ext_give_destinations(ext, 1, want_dst);
    assert_ckpt_error(
        ckpt__read_extents_direct(&f->afs.fwd.fs, f->path, ext, 1),
        CKPT_ECORRUPT, "ends before byte 3145728");
    assert_int_equal(atomic_load(&f->afs.open_files), 0);
    assert_int_equal(atomic_load(&f->afs.violations), 0);
    ext_free_destinations(ext, 1);
}

/* ---- a failing pread ---------------------------------------------------- */

/* The layout of the failure tests: 6 MiB read as one run and one extent
 * after a big gap. */
static size_t fail_layout(ckpt__extent *ext, const fixture *f)
{
    ext[0] = (ckpt__extent){777, 3 * MIB, NULL, 0};
    ext[1] = (ckpt__extent){3 * MIB + 1000, 0, NULL, 0};
    ext[2] = (ckpt__extent){3 * MIB + 5000, 100000, NULL, 0};
    ext[3] = (ckpt__extent){5 * MIB, f->size - 5 * MIB, NULL, 0};
    return 4;
}

static void test_pread_failures(void **state)
{
    fixture *f = *state;
    ckpt__extent ext[4];
    int want_dst[4] = {1, 1, 0, 1};
    uint64_t total, which[3];
    size_t n;
    make_file(f, f->dir, "failing.bin", 6 * MIB + 3);
    n = fail_layout(ext, f);

    /* a clean run counts the preads */
    ext_give_destinations(ext, n, want_dst);
    assert_ckpt_ok(ckpt__read_extents_direct(&f->afs.fwd.fs, f->path, ext, n));
    ext_check(f->data, ext, n);
    ext_free_destinations(ext, n);
    total = atomic_load(&f->afs.direct_preads);
    assert_true(total >= 8);
    which[0] = 1;
    which[1] = total / 2 + 1;
    which[2] = total;

    for (int t = 0; t < 3; t++) {
        char want[4300];
        aligned_fs_fail_nth(&f->afs, which[t]);
        atomic_store(&f->afs.injected, 0);
        ext_give_destinations(ext, n, want_dst);
        snprintf(want, sizeof(want),
                 "aligned fs: injected EIO at direct pread %llu of %s",
                 (unsigned long long)which[t], f->path);
        ckpt_error_clear();
        assert_ckpt_error(
            ckpt__read_extents_direct(&f->afs.fwd.fs, f->path, ext, n),
            CKPT_EIO, want);
        assert_int_equal(atomic_load(&f->afs.injected), 1);
        /* the fault happened on a reader thread, not the caller's */
        assert_false(pthread_equal(f->afs.failed_thread, pthread_self()));
        assert_int_equal(atomic_load(&f->afs.open_files), 0);
        ext_free_destinations(ext, n);
    }
    aligned_fs_fail_nth(&f->afs, 0);
    assert_int_equal(atomic_load(&f->afs.violations), 0);
}

/* ---- the POSIX file system ---------------------------------------------- */

static int evict(const char *path)
{
    int fd = open(path, O_RDONLY);
    int rc;
    assert_true(fd >= 0);
    assert_int_equal(fdatasync(fd), 0);
    rc = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
    return rc;
}

/* Whether `path` lies on tmpfs (whose pages never leave memory). */
static int on_tmpfs(const char *path)
{
    struct statfs sf;
    return statfs(path, &sf) == 0 &&
           (unsigned long)sf.f_type == TMPFS_MAGIC_NUMBER;
}

static void test_posix_declines_cached_reads_evicted(void **state)
{
    fixture *f = *state;
    const ckpt_fs *fs = ckpt_fs_posix();
    const size_t size = 4 * MIB + 1234;
    ckpt_file *file = NULL;
    ckpt__extent ext[4];
    int want_dst[4] = {1, 0, 1, 1};
    uint8_t *page = NULL;
    size_t got = 0;
    int err;

    make_file(f, f->dir, "posix.bin", size);
    /* just written: in the page cache */
    err = fs->open_read_direct(&file, f->path, fs->payload);
    if (err == CKPT_ENOTSUP && strstr(ckpt_error_last()->message, "O_DIRECT")) {
        print_message("SKIPPED: %s refuses O_DIRECT: %s\n", f->dir,
                      ckpt_error_last()->message);
        skip();
        return;
    }
    assert_ckpt_error(err, CKPT_ENOTSUP, "page cache");
    assert_non_null(strstr(ckpt_error_last()->message, f->path));
    assert_null(file);

    /* the stream declines too, reading nothing */
    ext[0] = (ckpt__extent){5, 100, NULL, 0};
    ext_give_destinations(ext, 1, want_dst);
    assert_ckpt_error(ckpt__read_extents_direct(fs, f->path, ext, 1),
                      CKPT_ENOTSUP, "page cache");
    for (size_t i = 0; i < 100 + GUARD; i++)
        assert_int_equal(((uint8_t *)ext[0].dst)[i], GUARD_BYTE);
    ext_free_destinations(ext, 1);

    /* written back and dropped from the cache: opened with O_DIRECT */
    assert_int_equal(evict(f->path), 0);
    err = fs->open_read_direct(&file, f->path, fs->payload);
    if (err == CKPT_ENOTSUP) {
        print_message("SKIPPED: %s still declined after fdatasync and "
                      "POSIX_FADV_DONTNEED%s: %s\n",
                      f->path, on_tmpfs(f->path) ? " (tmpfs)" : "",
                      ckpt_error_last()->message);
        skip();
        return;
    }
    assert_ckpt_ok(err);
    assert_int_equal(posix_memalign((void **)&page, CKPT_DIRECT_ALIGN,
                                    2 * CKPT_DIRECT_ALIGN),
                     0);
    /* an aligned read inside the file */
    assert_ckpt_ok(
        fs->pread(file, page, 2 * CKPT_DIRECT_ALIGN, 8192, &got, fs->payload));
    assert_int_equal(got, 2 * CKPT_DIRECT_ALIGN);
    assert_memory_equal(page, f->data + 8192, got);
    /* the last, partial page: a short read, which ends the request */
    assert_ckpt_ok(fs->pread(file, page, 2 * CKPT_DIRECT_ALIGN,
                             align_down(size), &got, fs->payload));
    assert_int_equal(got, size % CKPT_DIRECT_ALIGN);
    assert_memory_equal(page, f->data + align_down(size), got);
    /* past the end: nothing */
    assert_ckpt_ok(fs->pread(file, page, CKPT_DIRECT_ALIGN, align_up(size),
                             &got, fs->payload));
    assert_int_equal(got, 0);
    assert_ckpt_ok(fs->close(file, fs->payload));
    free(page);

    /* the stream through POSIX O_DIRECT */
    assert_int_equal(evict(f->path), 0);
    ext[0] = (ckpt__extent){3, 70000, NULL, 0};
    ext[1] = (ckpt__extent){100000, 1500000, NULL, 0};
    ext[2] = (ckpt__extent){2 * MIB + 17, MIB, NULL, 0};
    ext[3] = (ckpt__extent){size - 4000, 4000, NULL, 0};
    ext_give_destinations(ext, 4, want_dst);
    assert_ckpt_ok(ckpt__read_extents_direct(fs, f->path, ext, 4));
    ext_check(f->data, ext, 4);
    ext_free_destinations(ext, 4);
}

/* tmpfs keeps every page in memory: the POSIX file system declines it
 * (it refuses O_DIRECT or, on kernels whose tmpfs accepts O_DIRECT, finds
 * the file in the page cache even after POSIX_FADV_DONTNEED), and the
 * stream then returns CKPT_ENOTSUP having written nothing; should it ever
 * stream, the bytes must be right. */
static void test_posix_on_tmpfs(void **state)
{
    fixture *f = *state;
    const ckpt_fs *fs = ckpt_fs_posix();
    char dir[64] = "/dev/shm/ckpt-test-XXXXXX";
    ckpt__extent ext[1];
    int want_dst[1] = {1};
    ckpt_file *file = NULL;
    int err;
    if (!on_tmpfs("/dev/shm") || !mkdtemp(dir)) {
        print_message("SKIPPED: no tmpfs at /dev/shm\n");
        skip();
        return;
    }
    make_file(f, dir, "shm.bin", 2 * MIB + 5);
    (void)evict(f->path);
    err = fs->open_read_direct(&file, f->path, fs->payload);
    print_message("tmpfs: open_read_direct -> %d (%s)\n", err,
                  err ? ckpt_error_last()->message : "opened");
    if (err == 0)
        fs->close(file, fs->payload);
    ext[0] = (ckpt__extent){100, 2 * MIB, NULL, 0};
    ext_give_destinations(ext, 1, want_dst);
    err = ckpt__read_extents_direct(fs, f->path, ext, 1);
    if (err == 0) {
        ext_check(f->data, ext, 1);
    } else {
        assert_ckpt_error(err, CKPT_ENOTSUP, f->path);
        for (size_t i = 0; i < 2 * MIB + GUARD; i++)
            if (((uint8_t *)ext[0].dst)[i] != GUARD_BYTE)
                fail_msg("byte %zu written by a declined direct read", i);
    }
    ext_free_destinations(ext, 1);
    unlink(f->path);
    rmdir(dir);
}

/* A file of 16 pieces or more: the first four pieces are read alternately
 * with O_DIRECT and through the page cache, and the faster way reads the
 * rest; every byte and CRC is right whichever wins, and the report says
 * which. A smaller file is read direct only. */
static void test_probe_chooses_a_mode(void **state)
{
    fixture *f = *state;
    const size_t size = 12 * MIB + 5; /* 25 pieces of 512 KiB */
    ckpt__extent ext[2];
    int want_dst[2] = {1, 0};
    ckpt__read_report rep;
    uint64_t direct, other;
    make_file(f, f->dir, "probe.bin", size);
    ext[0] = (ckpt__extent){3, 7 * MIB, NULL, 0};
    ext[1] = (ckpt__extent){7 * MIB + 3, size - 7 * MIB - 3, NULL, 0};
    ext_give_destinations(ext, 2, want_dst);
    memset(&rep, 0, sizeof(rep));
    assert_ckpt_ok(
        ckpt__read_extents_report(&f->afs.fwd.fs, f->path, ext, 2, &rep));
    ext_check(f->data, ext, 2);
    assert_int_equal(rep.probed, 1);
    assert_true(rep.direct_bytes_per_s > 0);
    assert_true(rep.buffered_bytes_per_s > 0);
    assert_int_equal(rep.piece_bytes, 512 * 1024);
    direct = atomic_load(&f->afs.direct_preads);
    other = atomic_load(&f->afs.other_preads);
    assert_int_equal(direct + other, 25);
    if (rep.mode == CKPT__READ_DIRECT) {
        assert_int_equal(other, 2);
    } else {
        assert_int_equal(rep.mode, CKPT__READ_BUFFERED);
        assert_int_equal(direct, 2);
    }
    assert_int_equal(atomic_load(&f->afs.violations), 0);
    assert_int_equal(atomic_load(&f->afs.open_files), 0);
    ext_free_destinations(ext, 2);

    /* 15 pieces: no probe */
    atomic_store(&f->afs.other_preads, 0);
    ext[0] = (ckpt__extent){0, 15 * 512 * 1024, NULL, 0};
    ext_give_destinations(ext, 1, want_dst);
    assert_ckpt_ok(
        ckpt__read_extents_report(&f->afs.fwd.fs, f->path, ext, 1, &rep));
    ext_check(f->data, ext, 1);
    assert_int_equal(rep.probed, 0);
    assert_int_equal(rep.mode, CKPT__READ_DIRECT);
    assert_int_equal(atomic_load(&f->afs.other_preads), 0);
    ext_free_destinations(ext, 1);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_aligned_fs_polices),
        T(test_round_trip),
        T(test_whole_file_twice),
        T(test_nothing_to_read),
        T(test_unsorted_and_overlapping),
        T(test_empty_extent_out_of_order),
        T(test_not_offered),
        T(test_extent_past_end),
        T(test_pread_failures),
        T(test_posix_declines_cached_reads_evicted),
        T(test_posix_on_tmpfs),
        T(test_probe_chooses_a_mode),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
