/* tests/io/test_buffered_read.c - ckpt__read_extents_buffered and
 * ckpt__read_extents (io/buffered_read.h): the bytes and CRCs of extents
 * that span many pieces, end exactly on a piece, hold 0 or 1 bytes, come
 * by the hundred, or have no destination (scratch buffers); on one thread
 * and on two (a file system whose first pread waits for a second thread's
 * proves the helper reads at the same time; with one thread only one
 * thread ever reads); short reads looped over (the fault fs, and a
 * forwarding fs on two threads); a pread failing (an injected EINTR, and a
 * failure on either thread) reported once with its message; a file ending
 * inside an extent; scratch buffers taking each piece at its file
 * offset's place in a page; a destination that would alias its file
 * offset modulo 4 KiB filled through scratch, and every destination where
 * the kernel's first write into the program's pages is slow (bounced, or
 * after a first long piece timed straight; and that probe); the cold path
 * (ckpt__read_extents_cold): requests spanning extents with preadv, or
 * preads without it, and the end of the file met inside one; the cold
 * path chosen by the device's read-ahead; the streamed path
 * (ckpt__read_extents_streamed): bytes, CRCs and request sizes, short
 * reads, no preadv, a failure at any read, the end of the file, ranges
 * without a destination refused, and when it is chosen. */
#include "test_util.h"

#include "extent_fixture.h"

#include "common/internal.h"
#include "io/buffered_read.h"
#include "io/fs_internal.h"
#include "support/fs_fault.h"
#include "support/fs_forward.h"
#include "util/crc32c.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define KIB ((uint64_t)1024)
#define PIECE ((uint64_t)CKPT__BUFFERED_PIECE)
#define GUARD EXT_GUARD
#define GUARD_BYTE EXT_GUARD_BYTE
#define MAX_EXT 400

typedef struct fixture {
    char *dir;
    char path[4096];
    uint8_t *data;
    size_t size;
} fixture;

static int setup(void **state)
{
    fixture *f = test_dir_fixture_new(sizeof(*f), offsetof(fixture, dir));
    f->size = (size_t)(6 * PIECE + 3 * KIB * KIB + 4097);
    f->data = malloc(f->size);
    assert_non_null(f->data);
    test_fill_random(f->data, f->size, 42);
    snprintf(f->path, sizeof(f->path), "%s/data", f->dir);
    test_write_file(f->path, f->data, f->size);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    ckpt__aliased_reads_force(-1); /* a test that forced it and failed */
    ckpt__streamed_alone_force(0);
    free(f->data);
    return test_dir_fixture_teardown(state);
}

/* The layout every reading test uses (offsets increasing):
 *   a record of 4 pieces and 12345 bytes at an odd offset, one of 0 bytes,
 *   one of 1 byte, one of 2.3 pieces with no destination (checksum only),
 *   300 records of 1..41 bytes back to back, a gap, and one of exactly 2
 *   pieces. Returns the count. */
static size_t layout(ckpt__extent *ext, uint64_t file_size)
{
    size_t n = 0;
    uint64_t at = 101;
    ext[n].offset = at;
    ext[n++].size = 4 * PIECE + 12345;
    at += 4 * PIECE + 12345;
    ext[n].offset = at;
    ext[n++].size = 0;
    ext[n].offset = at;
    ext[n++].size = 1;
    at += 1 + 7;
    ext[n].offset = at;
    ext[n++].size = 2 * PIECE + PIECE / 3;
    at += 2 * PIECE + PIECE / 3;
    for (int i = 0; i < 300; i++) {
        ext[n].offset = at;
        ext[n].size = (uint64_t)(i * 7 % 41 + 1);
        at += ext[n++].size;
    }
    at += 3 * KIB;
    ext[n].offset = at;
    ext[n++].size = 2 * PIECE;
    assert_true(at + 2 * PIECE <= file_size);
    return n;
}

/* Destinations for every extent of the layout but its checksum-only one
 * (index 3). */
static void give_destinations(ckpt__extent *ext, size_t n)
{
    int wanted[MAX_EXT];
    for (size_t i = 0; i < n; i++)
        wanted[i] = i != 3;
    ext_give_destinations(ext, n, wanted);
}

static void read_layout(const fixture *f, const ckpt_fs *fs, int threads)
{
    ckpt__extent ext[MAX_EXT];
    ckpt_file *file = NULL;
    size_t n = layout(ext, f->size);
    give_destinations(ext, n);
    assert_ckpt_ok(ckpt_fs_or_default(fs)->open_read(
        &file, f->path, ckpt_fs_or_default(fs)->payload));
    assert_ckpt_ok(
        ckpt__read_extents_buffered(fs, file, f->path, ext, n, threads));
    ckpt_fs_or_default(fs)->close(file, ckpt_fs_or_default(fs)->payload);
    ext_check(f->data, ext, n);
    ext_free_destinations(ext, n);
}

/* ---- a file system that records which threads read ---------------------- */

/* What a slowed pread of the witness file system takes (asleep or busy),
 * and the first-write limit test_first_touch_timed fixes: far apart, and
 * the limit far above what a 256 KiB pread takes even under a sanitizer
 * on a loaded machine, so that only the slowed preads exceed it. */
#define SLOW_PREAD_S 0.3
#define TIMED_LIMIT_S 0.1

typedef struct witness_fs {
    ckpt_fs_forward fwd;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t first;
    int readers;       /* distinct threads seen (1 or 2) */
    int first_waiting; /* the first pread waits for a second thread */
    size_t cap;        /* > 0: every pread returns at most this much */
    atomic_uint preads;
    unsigned fail_at;     /* 1-based pread to fail with CKPT_EIO; 0: none */
    unsigned slow_at;     /* 1-based pread slowed by SLOW_PREAD_S; 0: none */
    unsigned slow_n;      /* preads from slow_at on that do (0 counts as 1) */
    int slow_spins;       /* they burn SLOW_PREAD_S of CPU time instead */
    atomic_uint off_page; /* preads whose buffer sits at another offset in
                             a page than the file offset */
    struct {
        uintptr_t buf;
        uint64_t off;
    } log[64]; /* the first preads' buffers, and preadvs' */
    atomic_uint logged;
    atomic_uint preadvs;   /* preadv calls (the cold path's requests) */
    atomic_uint widest;    /* most buffers in one preadv */
    atomic_ullong largest; /* most bytes asked for by one call */
    atomic_ullong bytes;   /* bytes every call returned */
} witness_fs;

static void note_max(atomic_ullong *m, unsigned long long v)
{
    unsigned long long old = atomic_load(m);
    while (v > old && !atomic_compare_exchange_weak(m, &old, v))
        ;
}

/* Burn `seconds` of this thread's CPU time. */
static void spin_cpu_seconds(double seconds)
{
    struct timespec t;
    double start;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    start = (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
    do /* the clock's own system calls burn the time */
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    while ((double)t.tv_sec + (double)t.tv_nsec * 1e-9 - start < seconds);
}

static int witness_pread(ckpt_file *file, void *buf, size_t n, uint64_t off,
                         size_t *got, void *payload)
{
    witness_fs *w = payload;
    const ckpt_fs *base = ckpt_fs_forward_base(payload);
    unsigned k = atomic_fetch_add(&w->preads, 1) + 1;
    pthread_mutex_lock(&w->mu);
    if (w->readers == 0) {
        w->readers = 1;
        w->first = pthread_self();
        if (w->first_waiting) {
            /* Wait (at most 30 s) for a pread from another thread. */
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_sec += 30;
            while (w->readers < 2 &&
                   pthread_cond_timedwait(&w->cv, &w->mu, &until) == 0)
                ;
        }
    } else if (w->readers == 1 && !pthread_equal(w->first, pthread_self())) {
        w->readers = 2;
        pthread_cond_broadcast(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
    if ((uintptr_t)buf % 4096 != off % 4096)
        atomic_fetch_add(&w->off_page, 1);
    {
        unsigned slot = atomic_fetch_add(&w->logged, 1);
        if (slot < CKPT__ARRAY_SIZE(w->log)) {
            w->log[slot].buf = (uintptr_t)buf;
            w->log[slot].off = off;
        }
    }
    *got = 0;
    if (w->slow_at > 0 && k >= w->slow_at &&
        k < w->slow_at + (w->slow_n > 0 ? w->slow_n : 1)) {
        struct timespec nap = {0, (long)(SLOW_PREAD_S * 1e9)};
        if (w->slow_spins)
            spin_cpu_seconds(SLOW_PREAD_S);
        else
            nanosleep(&nap, NULL);
    }
    if (w->fail_at == k)
        return ckpt__error(CKPT_EIO, "witness fs: injected EIO at pread %u", k);
    note_max(&w->largest, n);
    if (w->cap > 0 && n > w->cap)
        n = w->cap;
    {
        int err = base->pread(file, buf, n, off, got, base->payload);
        atomic_fetch_add(&w->bytes, *got);
        return err;
    }
}

/* preadv: counted, each buffer checked for its page offset like a pread's
 * (so scratch parts must sit at their file offset's place), at most `cap`
 * bytes returned (buffers cut there), forwarded to POSIX's preadv. */
static int witness_preadv(ckpt_file *file, const ckpt_iovec *iov, int iovcnt,
                          uint64_t off, size_t *got, void *payload)
{
    witness_fs *w = payload;
    const ckpt_fs *base = ckpt_fs_forward_base(payload);
    ckpt_iovec cut[256];
    unsigned long long total = 0, at = off;
    int m = 0, err;
    unsigned widest = atomic_load(&w->widest);
    assert_true(iovcnt > 0 && iovcnt <= 256);
    atomic_fetch_add(&w->preadvs, 1);
    while ((unsigned)iovcnt > widest &&
           !atomic_compare_exchange_weak(&w->widest, &widest, (unsigned)iovcnt))
        ;
    for (int i = 0; i < iovcnt; i++) {
        unsigned slot = atomic_fetch_add(&w->logged, 1);
        if (slot < CKPT__ARRAY_SIZE(w->log)) {
            w->log[slot].buf = (uintptr_t)iov[i].base;
            w->log[slot].off = at;
        }
        if ((uintptr_t)iov[i].base % 4096 != at % 4096)
            atomic_fetch_add(&w->off_page, 1);
        at += iov[i].len;
        total += iov[i].len;
    }
    note_max(&w->largest, total);
    for (size_t left = w->cap ? w->cap : (size_t)total; m < iovcnt && left;
         m++) {
        cut[m] = iov[m];
        if (cut[m].len > left)
            cut[m].len = left;
        left -= cut[m].len;
    }
    err = base->preadv(file, cut, m, off, got, base->payload);
    atomic_fetch_add(&w->bytes, *got);
    return err;
}

static void witness_init(witness_fs *w)
{
    memset(w, 0, sizeof(*w));
    ckpt_fs_forward_init(&w->fwd, NULL);
    w->fwd.fs.pread = witness_pread;
    w->fwd.fs.preadv = witness_preadv;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
}

static void witness_dispose(witness_fs *w)
{
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
}

/* ---- tests ----------------------------------------------------------------
 */

static void test_one_thread(void **state)
{
    fixture *f = *state;
    witness_fs w;
    witness_init(&w);
    read_layout(f, &w.fwd.fs, 1);
    assert_int_equal(w.readers, 1); /* forced single-thread mode */
    witness_dispose(&w);
}

static void test_two_threads_read_at_once(void **state)
{
    fixture *f = *state;
    witness_fs w;
    witness_init(&w);
    w.first_waiting = 1;
    read_layout(f, &w.fwd.fs, 2);
    assert_int_equal(w.readers, 2); /* the helper read while one waited */
    witness_dispose(&w);
}

/* Extents without a destination are read into scratch at the file
 * offset's position in a page (ckpt__scratch_for), on either thread and
 * across short reads, and their CRCs are right. */
static void test_scratch_at_file_page_offset(void **state)
{
    fixture *f = *state;
    for (int round = 0; round < 3; round++) {
        ckpt__extent ext[MAX_EXT];
        ckpt_file *file = NULL;
        witness_fs w;
        size_t n = layout(ext, f->size);
        witness_init(&w);
        w.first_waiting = round > 0;
        w.cap = round == 2 ? 5000 : 0;
        for (size_t i = 0; i < n; i++) {
            ext[i].dst = NULL;
            ext[i].crc = 0xdeadbeefu;
        }
        assert_ckpt_ok(w.fwd.fs.open_read(&file, f->path, w.fwd.fs.payload));
        assert_ckpt_ok(ckpt__read_extents_buffered(&w.fwd.fs, file, f->path,
                                                   ext, n, round > 0 ? 2 : 1));
        w.fwd.fs.close(file, w.fwd.fs.payload);
        ext_check(f->data, ext, n);
        assert_int_equal(w.readers, round > 0 ? 2 : 1);
        assert_true(atomic_load(&w.preads) > 0);
        assert_int_equal(atomic_load(&w.off_page), 0);
        witness_dispose(&w);
    }
    {
        uint8_t page[2 * CKPT__SCRATCH_PAGE];
        uint8_t *base =
            page + (CKPT__SCRATCH_PAGE - (uintptr_t)page % CKPT__SCRATCH_PAGE) %
                       CKPT__SCRATCH_PAGE;
        assert_ptr_equal(ckpt__scratch_for(base, 0), base);
        assert_ptr_equal(ckpt__scratch_for(base, 4096 * 7 + 101), base + 101);
        assert_true(CKPT__SCRATCH_BYTES >=
                    CKPT__BUFFERED_PIECE + CKPT__SCRATCH_PAGE - 1);
    }
}

/* A destination just ahead of its file offset modulo 4 KiB (where the
 * kernel's copy stalls on 4K aliasing on some CPUs) is filled, where that
 * stall was measured (forced here), through scratch at the file offset's
 * place in a page and copied on; one at another offset is read straight
 * into. The cold path reads both straight into their destinations (its
 * scratch would hold a whole request). Bytes and CRCs are right every
 * way. */
static void test_aliasing_destination_bounced(void **state)
{
    fixture *f = *state;
    const size_t len = (size_t)(2 * PIECE + 777);
    const size_t bytes = (2 * (len + 8192) + 4095) / 4096 * 4096;
    uint8_t *pages = aligned_alloc(4096, bytes); /* size: whole pages */
    uint8_t *alias_dst = pages + 100 + 8; /* 8 bytes ahead of offset 100 */
    /* 100 bytes ahead of offset 100 + len, on pages of its own */
    uint8_t *plain_dst =
        pages + (len + 108 + 8191) / 4096 * 4096 + (200 + len) % 4096;
    ckpt__extent ext[2];
    ckpt_file *file = NULL;
    witness_fs w;
    unsigned n;
    assert_non_null(pages);
    assert_true(ckpt__read_aliases(alias_dst, 100));
    assert_false(ckpt__read_aliases(plain_dst, 100 + len));
    assert_false(ckpt__read_aliases(pages, 4096 * 3));
    assert_true(ckpt__read_aliases(pages + 63, 4096 * 3));
    assert_false(ckpt__read_aliases(pages + CKPT__ALIAS_WINDOW, 0));
    assert_false(ckpt__read_aliases(pages + 4095, 0)); /* behind */
    memset(ext, 0, sizeof(ext));
    ext[0].offset = 100;
    ext[0].size = len;
    ext[0].dst = alias_dst;
    ext[1].offset = 100 + len;
    ext[1].size = len;
    ext[1].dst = plain_dst;
    ckpt__first_touch_force(CKPT__TOUCH_STRAIGHT); /* else all bounce */
    ckpt__aliased_reads_force(1);
    assert_int_equal(ckpt__aliased_reads_bounce(), 1);
    for (int threads = 1; threads <= 2; threads++) {
        witness_init(&w);
        memset(pages, GUARD_BYTE, bytes);
        assert_ckpt_ok(w.fwd.fs.open_read(&file, f->path, w.fwd.fs.payload));
        assert_ckpt_ok(ckpt__read_extents_buffered(&w.fwd.fs, file, f->path,
                                                   ext, 2, threads));
        w.fwd.fs.close(file, w.fwd.fs.payload);
        ext_check(f->data, ext, 2);
        n = atomic_load(&w.logged);
        assert_true(n >= 6 && n <= CKPT__ARRAY_SIZE(w.log));
        for (unsigned i = 0; i < n; i++) {
            uintptr_t b = w.log[i].buf;
            if (w.log[i].off < ext[1].offset) { /* bounced */
                assert_true(b < (uintptr_t)alias_dst ||
                            b >= (uintptr_t)alias_dst + len);
                assert_int_equal(b % 4096, w.log[i].off % 4096);
            } else { /* straight into the destination */
                assert_int_equal(b, (uintptr_t)plain_dst +
                                        (w.log[i].off - ext[1].offset));
            }
        }
        witness_dispose(&w);
    }
    ckpt__aliased_reads_force(-1);
    for (int threads = 1; threads <= 2; threads++) {
        witness_init(&w);
        memset(pages, GUARD_BYTE, bytes);
        assert_ckpt_ok(w.fwd.fs.open_read(&file, f->path, w.fwd.fs.payload));
        assert_ckpt_ok(
            ckpt__read_extents_cold(&w.fwd.fs, file, f->path, ext, 2, threads));
        w.fwd.fs.close(file, w.fwd.fs.payload);
        ext_check(f->data, ext, 2);
        assert_int_equal(atomic_load(&w.preads), 0);
        assert_int_equal(atomic_load(&w.preadvs), 1); /* one request */
        n = atomic_load(&w.logged);
        assert_int_equal(n, 2); /* a buffer per extent */
        for (unsigned i = 0; i < n; i++) {
            int k = w.log[i].off >= ext[1].offset;
            assert_int_equal(w.log[i].buf, (uintptr_t)ext[k].dst +
                                               (w.log[i].off - ext[k].offset));
        }
        witness_dispose(&w);
    }
    ckpt__first_touch_force(-1);
    free(pages);
}

/* Where the kernel's copy into an aliasing destination is not slow
 * (forced here), the 256 KiB path reads such a destination straight too:
 * every pread lands in a destination, none in scratch; bytes and CRCs
 * right. */
static void test_aliasing_destination_straight(void **state)
{
    fixture *f = *state;
    const size_t len = (size_t)(2 * PIECE + 777);
    const size_t bytes = (len + 8192 + 4095) / 4096 * 4096;
    uint8_t *pages = aligned_alloc(4096, bytes);
    uint8_t *alias_dst = pages + 100 + 16; /* 16 bytes ahead: malloc's */
    ckpt__extent ext[1];
    ckpt_file *file = NULL;
    witness_fs w;
    unsigned n;
    assert_non_null(pages);
    assert_true(ckpt__read_aliases(alias_dst, 100));
    memset(ext, 0, sizeof(ext));
    ext[0].offset = 100;
    ext[0].size = len;
    ext[0].dst = alias_dst;
    ckpt__first_touch_force(CKPT__TOUCH_STRAIGHT);
    ckpt__aliased_reads_force(0);
    assert_int_equal(ckpt__aliased_reads_bounce(), 0);
    for (int threads = 1; threads <= 2; threads++) {
        witness_init(&w);
        memset(pages, GUARD_BYTE, bytes);
        assert_ckpt_ok(w.fwd.fs.open_read(&file, f->path, w.fwd.fs.payload));
        assert_ckpt_ok(ckpt__read_extents_buffered(&w.fwd.fs, file, f->path,
                                                   ext, 1, threads));
        w.fwd.fs.close(file, w.fwd.fs.payload);
        ext_check(f->data, ext, 1);
        n = atomic_load(&w.logged);
        assert_int_equal(n, 3); /* two whole pieces and the rest */
        for (unsigned i = 0; i < n; i++)
            assert_int_equal(w.log[i].buf,
                             (uintptr_t)alias_dst + (w.log[i].off - 100));
        witness_dispose(&w);
    }
    ckpt__aliased_reads_force(-1);
    ckpt__first_touch_force(-1);
    free(pages);
}

/* Which scratch buffers a bounced read (every piece through scratch:
 * forced BOUNCED) of `ext` on `threads` read into: the start of the
 * REGION-aligned region its preads landed in (0 when they landed in more
 * than one or outside every such region's first two slots). */
#define POOL_REGION ((uintptr_t)2 << 20)
static uintptr_t bounced_read_region(const char *path, const uint8_t *data,
                                     ckpt__extent *ext, size_t n, int threads)
{
    ckpt_file *file = NULL;
    witness_fs w;
    uintptr_t region = 0;
    unsigned logged;
    witness_init(&w);
    assert_ckpt_ok(w.fwd.fs.open_read(&file, path, w.fwd.fs.payload));
    assert_ckpt_ok(
        ckpt__read_extents_buffered(&w.fwd.fs, file, path, ext, n, threads));
    w.fwd.fs.close(file, w.fwd.fs.payload);
    ext_check(data, ext, n);
    logged = atomic_load(&w.logged);
    assert_true(logged > 0);
    for (unsigned i = 0; i < logged; i++) {
        uintptr_t b = w.log[i].buf, start = b - b % POOL_REGION;
        if (i == 0)
            region = start;
        if (start != region ||
            b - start >= CKPT__SCRATCH_POOL_SLOTS * CKPT__SCRATCH_BYTES)
            region = 0;
    }
    witness_dispose(&w);
    return region;
}

/* The 256 KiB path's scratch buffers are kept between reads: bounced
 * reads in turn, on one thread and on two, read into the same 2
 * MiB-aligned region (bounced_read_region; test_first_touch_bounces_every_piece
 * checks each piece's place in a page). While another read holds the
 * kept region (taken here) a read maps its own and still gets every byte
 * right; given back first, that one is kept, and the held one, given
 * back after, is let go: the next read reads into the first. */
static void test_scratch_kept_between_reads(void **state)
{
    fixture *f = *state;
    ckpt__extent ext[2];
    uintptr_t first, beside;
    uint8_t *held;
    memset(ext, 0, sizeof(ext));
    ext[0] = (ckpt__extent){100, 2 * PIECE + 777, NULL, 0};
    ext[1] = (ckpt__extent){100 + 2 * PIECE + 777, PIECE, NULL, 0};
    ext_give_destinations(ext, 2, NULL);
    ckpt__first_touch_force(CKPT__TOUCH_BOUNCED);
    first = bounced_read_region(f->path, f->data, ext, 2, 2);
    assert_true(first != 0);
    assert_int_equal(bounced_read_region(f->path, f->data, ext, 2, 1), first);
    assert_int_equal(bounced_read_region(f->path, f->data, ext, 2, 2), first);
    held = ckpt__scratch_pool_take(CKPT__SCRATCH_BYTES);
    assert_int_equal((uintptr_t)held, first);
    beside = bounced_read_region(f->path, f->data, ext, 2, 2);
    assert_true(beside != 0 && beside != first);
    ckpt__scratch_pool_give(held);
    assert_int_equal(bounced_read_region(f->path, f->data, ext, 2, 1), beside);
    ckpt__first_touch_force(-1);
    ext_free_destinations(ext, 2);
}

/* Where the kernel's first write into the program's pages is slow (forced
 * here), the 256 KiB path reads every piece into scratch at its file
 * offset's place in a page and copies it on, whatever the destination's
 * place (aligned with the file, 16 bytes ahead, elsewhere): no pread lands
 * in a destination; bytes and CRCs right on one thread and two. The cold
 * path still reads straight into the destinations. */
static void test_first_touch_bounces_every_piece(void **state)
{
    fixture *f = *state;
    const size_t len = (size_t)(2 * PIECE + 777);
    const size_t stride = (len + 8192 + 4095) / 4096 * 4096;
    uint8_t *pages = aligned_alloc(4096, 3 * stride);
    ckpt__extent ext[3];
    ckpt_file *file = NULL;
    witness_fs w;
    unsigned n;
    assert_non_null(pages);
    memset(ext, 0, sizeof(ext));
    for (int k = 0; k < 3; k++) {
        ext[k].offset = 100 + (uint64_t)k * len;
        ext[k].size = len;
    }
    ext[0].dst = pages + ext[0].offset % 4096;               /* in step */
    ext[1].dst = pages + stride + ext[1].offset % 4096 + 16; /* aliasing */
    ext[2].dst = pages + 2 * stride + 1000;                  /* elsewhere */
    assert_true(ckpt__read_aliases(ext[1].dst, ext[1].offset));
    assert_false(ckpt__read_aliases(ext[2].dst, ext[2].offset));
    ckpt__first_touch_force(CKPT__TOUCH_BOUNCED);
    ckpt__aliased_reads_force(0);
    assert_int_equal(ckpt__first_touch_mode(), CKPT__TOUCH_BOUNCED);
    for (int threads = 1; threads <= 2; threads++) {
        witness_init(&w);
        memset(pages, GUARD_BYTE, 3 * stride);
        assert_ckpt_ok(w.fwd.fs.open_read(&file, f->path, w.fwd.fs.payload));
        assert_ckpt_ok(ckpt__read_extents_buffered(&w.fwd.fs, file, f->path,
                                                   ext, 3, threads));
        w.fwd.fs.close(file, w.fwd.fs.payload);
        ext_check(f->data, ext, 3);
        n = atomic_load(&w.logged);
        assert_int_equal(n, 9); /* two whole pieces and the rest, each */
        for (unsigned i = 0; i < n; i++) {
            uintptr_t b = w.log[i].buf;
            assert_true(b < (uintptr_t)pages ||
                        b >= (uintptr_t)pages + 3 * stride);
            assert_int_equal(b % 4096, w.log[i].off % 4096);
        }
        witness_dispose(&w);
    }
    witness_init(&w);
    memset(pages, GUARD_BYTE, 3 * stride);
    assert_ckpt_ok(w.fwd.fs.open_read(&file, f->path, w.fwd.fs.payload));
    assert_ckpt_ok(
        ckpt__read_extents_cold(&w.fwd.fs, file, f->path, ext, 3, 2));
    w.fwd.fs.close(file, w.fwd.fs.payload);
    ext_check(f->data, ext, 3);
    n = atomic_load(&w.logged);
    assert_int_equal(n, 3); /* one request, a buffer per extent */
    for (unsigned i = 0; i < n; i++) {
        int k = (int)((w.log[i].off - 100) / len);
        assert_int_equal(w.log[i].buf, (uintptr_t)ext[k].dst +
                                           (w.log[i].off - ext[k].offset));
    }
    witness_dispose(&w);
    ckpt__aliased_reads_force(-1);
    ckpt__first_touch_force(-1);
    free(pages);
}

/* Where the kernel's first write is slow (CKPT__TOUCH_TIMED, forced
 * here, with a limit of 0.1 s a piece), a read's pieces go straight into
 * their destinations, a short one (under CKPT__TOUCH_TIMED_MIN) untimed,
 * the long ones timed, the first in the thread's CPU seconds, the later
 * ones on the wall clock, until one took longer than the limit: every
 * piece after it bounces. A file system that sleeps 0.3 s in the first
 * long pread (a cold file's wait on the disk) bounces nothing; one that
 * sleeps in a later one, or burns 0.3 s of CPU in any, bounces every piece
 * after it. Once bounced, never straight again in that read.
 * One thread, so the order is the file's: pread 1 the short extent,
 * 2-4 the long one's three pieces, 5 its short rest. Bytes and CRCs right
 * every time. */
static void test_first_touch_timed(void **state)
{
    fixture *f = *state;
    const size_t small = 10 * KIB, len = (size_t)(3 * PIECE + 777);
    const size_t bytes = (small + len + 3 * 8192 + 4095) / 4096 * 4096;
    uint8_t *pages = aligned_alloc(4096, bytes);
    static const struct {
        unsigned slow_at, slow_n; /* 1-based preads */
        int spins;
        unsigned bounced_from; /* 0-based; 5: none */
    } rounds[] = {
        {0, 0, 0, 5}, /* none slow */
        {2, 1, 0, 5}, /* the first long piece waits: CPU-timed, fast */
        {3, 1, 0, 3}, /* a later one waits: wall-timed, slow */
        {2, 1, 1, 2}, /* the first long piece busy */
        {3, 1, 1, 3}, /* a later one busy */
        {4, 1, 0, 4}, /* the last long one waits: only the short rest */
    };
    ckpt__extent ext[2];
    ckpt_file *file = NULL;
    witness_fs w;
    assert_non_null(pages);
    memset(ext, 0, sizeof(ext));
    ext[0].offset = 0;
    ext[0].size = small;
    ext[0].dst = pages;
    ext[1].offset = small;
    ext[1].size = len;
    ext[1].dst = pages + (small + 8191) / 4096 * 4096 + 1000; /* not aliasing */
    assert_false(ckpt__read_aliases(ext[1].dst, ext[1].offset));
    ckpt__first_touch_force(CKPT__TOUCH_TIMED);
    ckpt__first_touch_limit_force(TIMED_LIMIT_S);
    assert_true(ckpt__first_touch_limit_s(PIECE) == TIMED_LIMIT_S);
    ckpt__aliased_reads_force(0);
    for (size_t round = 0; round < CKPT__ARRAY_SIZE(rounds); round++) {
        unsigned bounced_from = 5; /* the first bounced pread, 0-based */
        witness_init(&w);
        w.slow_at = rounds[round].slow_at;
        w.slow_n = rounds[round].slow_n;
        w.slow_spins = rounds[round].spins;
        memset(pages, GUARD_BYTE, bytes);
        assert_ckpt_ok(w.fwd.fs.open_read(&file, f->path, w.fwd.fs.payload));
        assert_ckpt_ok(
            ckpt__read_extents_buffered(&w.fwd.fs, file, f->path, ext, 2, 1));
        w.fwd.fs.close(file, w.fwd.fs.payload);
        ext_check(f->data, ext, 2);
        assert_int_equal(atomic_load(&w.logged), 5);
        for (unsigned i = 0; i < 5; i++) {
            const ckpt__extent *e = &ext[w.log[i].off >= ext[1].offset];
            int straight =
                w.log[i].buf == (uintptr_t)e->dst + (w.log[i].off - e->offset);
            if (!straight) {
                assert_int_equal(w.log[i].buf % 4096, w.log[i].off % 4096);
                if (bounced_from == 5)
                    bounced_from = i;
            } else {
                assert_int_equal(bounced_from, 5); /* never after a bounce */
            }
        }
        assert_int_equal(bounced_from, rounds[round].bounced_from);
        witness_dispose(&w);
    }
    ckpt__first_touch_limit_force(0);
    assert_true(ckpt__first_touch_limit_s(PIECE) < 0.05);
    ckpt__aliased_reads_force(-1);
    ckpt__first_touch_force(-1);
    free(pages);
}

/* The probe of the kernel's first write into the program's pages: a ratio
 * measured (memfd is there on Linux), a limit, and the answer they give,
 * CKPT__TOUCH_TIMED from CKPT__FIRST_TOUCH_SLOW on. */
static void test_first_touch_probe_measures(void **state)
{
    double ratio = ckpt__first_touch_ratio();
    (void)state;
    ckpt__first_touch_force(-1);
    assert_true(ratio > 0.0);
    assert_true(ckpt__first_touch_limit_s(PIECE) > 0.0);
    assert_int_equal(ckpt__first_touch_mode(), ratio >= CKPT__FIRST_TOUCH_SLOW
                                                   ? CKPT__TOUCH_TIMED
                                                   : CKPT__TOUCH_STRAIGHT);
    print_message("the kernel's first copy into the program's pages: %.2fx "
                  "its next (limit for 256 KiB: %.3f ms); pieces %s\n",
                  ratio, ckpt__first_touch_limit_s(PIECE) * 1e3,
                  ckpt__first_touch_mode() == CKPT__TOUCH_TIMED ? "timed"
                                                                : "straight");
}

/* The probe of this machine's kernel copy: a ratio measured (memfd is
 * there on Linux) and the answer it gives, 1 from CKPT__ALIAS_SLOW on. */
static void test_alias_probe_measures(void **state)
{
    double ratio = ckpt__aliased_read_ratio();
    (void)state;
    ckpt__aliased_reads_force(-1);
    assert_true(ratio > 0.0);
    assert_int_equal(ckpt__aliased_reads_bounce(), ratio >= CKPT__ALIAS_SLOW);
    print_message("kernel copy 16 bytes ahead: %.2fx an aligned one; "
                  "aliasing destinations %s\n",
                  ratio, ckpt__aliased_reads_bounce() ? "bounced" : "straight");
}

static void test_posix_default_threads(void **state)
{
    fixture *f = *state;
    read_layout(f, NULL, ckpt__read_threads(NULL));
    assert_true(ckpt__read_threads(NULL) >= 1);
}

static void test_short_reads_fault_fs(void **state)
{
    fixture *f = *state;
    ckpt_fs_fault *ff = NULL;
    assert_ckpt_ok(ckpt_fs_fault_new(&ff, NULL));
    ckpt_fs_fault_short_reads(ff, 4097);
    assert_int_equal(ckpt__read_threads(ckpt_fs_fault_fs(ff)), 1);
    read_layout(f, ckpt_fs_fault_fs(ff), 1);
    assert_true(ckpt_fs_fault_count(ff, CKPT_FS_OP_BIT(CKPT_FS_OP_PREAD)) >
                f->size / 4097 / 2);
    ckpt_fs_fault_free(ff);
}

static void test_short_reads_two_threads(void **state)
{
    fixture *f = *state;
    witness_fs w;
    witness_init(&w);
    w.cap = 5000;
    w.first_waiting = 1;
    read_layout(f, &w.fwd.fs, 2);
    assert_int_equal(w.readers, 2);
    witness_dispose(&w);
}

static void test_interrupted_pread_fault_fs(void **state)
{
    fixture *f = *state;
    ckpt_fs_fault *ff = NULL;
    ckpt__extent ext[MAX_EXT];
    ckpt_file *file = NULL;
    const ckpt_fs *fs;
    size_t n;
    char want[4200];
    assert_ckpt_ok(ckpt_fs_fault_new(&ff, NULL));
    fs = ckpt_fs_fault_fs(ff);
    n = layout(ext, f->size);
    give_destinations(ext, n);
    assert_ckpt_ok(fs->open_read(&file, f->path, fs->payload));
    ckpt_fs_fault_fail(ff, 3, CKPT_FS_OP_BIT(CKPT_FS_OP_PREAD), EINTR, 0, 0);
    snprintf(want, sizeof(want), "pread %s: %s (injected)", f->path,
             strerror(EINTR));
    assert_ckpt_error(ckpt__read_extents_buffered(fs, file, f->path, ext, n, 1),
                      CKPT_EIO, want);
    /* stopped at the failure: no later pread */
    assert_int_equal(ckpt_fs_fault_count(ff, CKPT_FS_OP_BIT(CKPT_FS_OP_PREAD)),
                     3);
    fs->close(file, fs->payload);
    ext_free_destinations(ext, n);
    ckpt_fs_fault_free(ff);
}

/* A reader of the layout's extents through `fs` (the two paths under
 * test, one signature). */
typedef int (*layout_reader)(const ckpt_fs *fs, ckpt_file *file,
                             const char *path, ckpt__extent *ext, size_t n);

static int read_buffered_two(const ckpt_fs *fs, ckpt_file *file,
                             const char *path, ckpt__extent *ext, size_t n)
{
    return ckpt__read_extents_buffered(fs, file, path, ext, n, 2);
}

/* pread number k (1, 1 + step, ... up to 12) fails in turn: `read` returns
 * that failure once, with its message; with `exact`, no pread follows it
 * (one reader), and every extent has a destination (else all but the
 * layout's checksum-only one). `version` 3 keeps preadv unused (every part
 * one pread); 0 keeps the forwarding file system's. */
static void check_failure_at_each_pread(const fixture *f, layout_reader read,
                                        int version, unsigned step, int exact)
{
    for (unsigned k = 1; k <= 12; k += step) {
        witness_fs w;
        ckpt__extent ext[MAX_EXT];
        ckpt_file *file = NULL;
        size_t n = layout(ext, f->size);
        char want[64];
        witness_init(&w);
        if (version)
            w.fwd.fs.version = version;
        w.fail_at = k;
        if (exact)
            ext_give_destinations(ext, n, NULL);
        else
            give_destinations(ext, n);
        assert_ckpt_ok(w.fwd.fs.open_read(&file, f->path, &w.fwd));
        ckpt_error_clear();
        snprintf(want, sizeof(want), "injected EIO at pread %u", k);
        assert_ckpt_error(read(&w.fwd.fs, file, f->path, ext, n), CKPT_EIO,
                          want);
        if (exact)
            assert_int_equal(atomic_load(&w.preads), k); /* none after it */
        w.fwd.fs.close(file, &w.fwd);
        ext_free_destinations(ext, n);
        witness_dispose(&w);
    }
}

/* A failure on whichever thread reads pread k comes back once, with its
 * message, and the helper is joined (ASan/TSan see no leak or race). */
static void test_failure_on_either_thread(void **state)
{
    check_failure_at_each_pread(*state, read_buffered_two, 0, 1, 0);
}

static void test_file_ends_inside_extent(void **state)
{
    fixture *f = *state;
    ckpt__extent ext[2];
    uint8_t *dst = malloc(2 * PIECE);
    char want[4200];
    assert_non_null(dst);
    ext[0].offset = 0;
    ext[0].size = PIECE;
    ext[0].dst = dst;
    ext[1].offset = f->size - PIECE / 2;
    ext[1].size = PIECE;
    ext[1].dst = dst + PIECE;
    snprintf(want, sizeof(want),
             "%s: the file ends at or before byte %zu, inside the range of "
             "%llu bytes",
             f->path, f->size, (unsigned long long)PIECE);
    assert_ckpt_error(ckpt__read_extents(NULL, f->path, NULL, ext, 2, NULL),
                      CKPT_ECORRUPT, want);
    free(dst);
}

/* The whole entry: the choice made (the tmpfs or cached file is read
 * through the page cache) and reported, the bytes right. */
static void test_read_extents_reports(void **state)
{
    fixture *f = *state;
    ckpt__extent ext[MAX_EXT];
    ckpt__read_report rep;
    size_t n = layout(ext, f->size);
    give_destinations(ext, n);
    memset(&rep, 0xff, sizeof(rep));
    assert_ckpt_ok(ckpt__read_extents(NULL, f->path, NULL, ext, n, &rep));
    ext_check(f->data, ext, n);
    assert_true(rep.mode == CKPT__READ_BUFFERED ||
                rep.mode == CKPT__READ_DIRECT);
    assert_true(rep.readers == 1 || rep.readers == 2);
    assert_true(rep.piece_bytes > 0);
    ext_free_destinations(ext, n);
}

static uint64_t layout_bytes(const ckpt__extent *ext, size_t n)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += ext[i].size;
    return sum;
}

/* The cold path: a claim runs on from one extent into the next without a
 * gap (the 300 back-to-back records: one preadv of many buffers), never
 * past CKPT__COLD_REQUEST; bytes and CRCs right with destinations, without
 * (scratch, each buffer at its file offset's place in a page), on one
 * thread and two, and across short reads; every byte read once. */
static void test_cold_requests_span_extents(void **state)
{
    fixture *f = *state;
    for (int round = 0; round < 6; round++) {
        ckpt__extent ext[MAX_EXT];
        ckpt_file *file = NULL;
        witness_fs w;
        int threads = round % 2 + 1, scratch_only = round / 2 == 1;
        size_t n = layout(ext, f->size);
        witness_init(&w);
        w.cap = round / 2 == 2 ? 5000 : 0;
        if (scratch_only) {
            for (size_t i = 0; i < n; i++) {
                ext[i].dst = NULL;
                ext[i].crc = 0xdeadbeefu;
            }
        } else {
            give_destinations(ext, n);
        }
        assert_ckpt_ok(w.fwd.fs.open_read(&file, f->path, w.fwd.fs.payload));
        assert_ckpt_ok(
            ckpt__read_extents_cold(&w.fwd.fs, file, f->path, ext, n, threads));
        w.fwd.fs.close(file, w.fwd.fs.payload);
        ext_check(f->data, ext, n);
        assert_true(atomic_load(&w.preadvs) >= 1);
        assert_true(atomic_load(&w.widest) >= 32); /* 64 parts a claim */
        assert_true(atomic_load(&w.largest) <= CKPT__COLD_REQUEST);
        assert_int_equal(atomic_load(&w.bytes), layout_bytes(ext, n));
        if (scratch_only)
            assert_int_equal(atomic_load(&w.off_page), 0);
        else
            ext_free_destinations(ext, n);
        witness_dispose(&w);
    }
}

/* A file system of version 3 keeps its preadv unused: the cold path reads
 * each part with a pread of its own, with the same bytes and CRCs. */
static void test_cold_without_preadv(void **state)
{
    fixture *f = *state;
    ckpt__extent ext[MAX_EXT];
    ckpt_file *file = NULL;
    witness_fs w;
    size_t n = layout(ext, f->size);
    witness_init(&w);
    w.fwd.fs.version = 3;
    give_destinations(ext, n);
    assert_ckpt_ok(w.fwd.fs.open_read(&file, f->path, w.fwd.fs.payload));
    assert_ckpt_ok(
        ckpt__read_extents_cold(&w.fwd.fs, file, f->path, ext, n, 2));
    w.fwd.fs.close(file, w.fwd.fs.payload);
    ext_check(f->data, ext, n);
    assert_int_equal(atomic_load(&w.preadvs), 0);
    assert_true(atomic_load(&w.preads) >= n - 1); /* one per part */
    assert_int_equal(atomic_load(&w.bytes), layout_bytes(ext, n));
    ext_free_destinations(ext, n);
    witness_dispose(&w);
}

/* The cold path's request that meets the end of the file names the file,
 * where it ends and the range it ends in, with or without preadv. */
static void test_cold_file_ends_inside_extent(void **state)
{
    fixture *f = *state;
    ckpt__extent ext[3];
    uint8_t *dst = malloc(3 * PIECE);
    char want[4200];
    assert_non_null(dst);
    ext[0] = (ckpt__extent){f->size - 2 * PIECE, PIECE, dst, 0};
    ext[1] = (ckpt__extent){f->size - PIECE, PIECE / 2, NULL, 0};
    ext[2] = (ckpt__extent){f->size - PIECE / 2, PIECE, dst + PIECE, 0};
    snprintf(want, sizeof(want),
             "%s: the file ends at or before byte %zu, inside the range of "
             "%llu bytes "
             "at offset %zu",
             f->path, f->size, (unsigned long long)PIECE,
             f->size - (size_t)PIECE / 2);
    for (int version = 3; version <= CKPT_FS_VERSION; version++) {
        witness_fs w;
        ckpt_file *file = NULL;
        witness_init(&w);
        w.fwd.fs.version = version;
        assert_ckpt_ok(w.fwd.fs.open_read(&file, f->path, w.fwd.fs.payload));
        assert_ckpt_error(
            ckpt__read_extents_cold(&w.fwd.fs, file, f->path, ext, 3, 1),
            CKPT_ECORRUPT, want);
        w.fwd.fs.close(file, w.fwd.fs.payload);
        assert_int_equal(atomic_load(&w.preadvs) > 0, version >= 4);
        witness_dispose(&w);
    }
    free(dst);
}

/* ---- the streamed path (ckpt__read_extents_streamed) --------------------- */

/* Every extent of the layout with a destination, read by the streamed
 * path: bytes and CRCs right, every byte read once, claims running on
 * across back-to-back extents (one preadv of many buffers) and never past
 * CKPT__STREAM_MAX_REQUEST; with short reads (cap), with a file system
 * without preadv (version 3: a pread per part) and without the helper
 * (the reader checksums). */
static void test_streamed_reads_layout(void **state)
{
    fixture *f = *state;
    for (int round = 0; round < 4; round++) {
        ckpt__extent ext[MAX_EXT];
        ckpt_file *file = NULL;
        witness_fs w;
        size_t n = layout(ext, f->size);
        witness_init(&w);
        w.cap = round == 1 ? 5000 : 0;
        if (round == 2)
            w.fwd.fs.version = 3;
        ckpt__streamed_alone_force(round == 3); /* no helper thread */
        ext_give_destinations(ext, n, NULL);
        for (size_t i = 0; i < n; i++)
            ext[i].crc = 0xdeadbeefu;
        assert_ckpt_ok(w.fwd.fs.open_read(&file, f->path, w.fwd.fs.payload));
        assert_ckpt_ok(
            ckpt__read_extents_streamed(&w.fwd.fs, file, f->path, ext, n));
        w.fwd.fs.close(file, w.fwd.fs.payload);
        ext_check(f->data, ext, n);
        assert_int_equal(atomic_load(&w.bytes), layout_bytes(ext, n));
        assert_true(atomic_load(&w.largest) <= CKPT__STREAM_MAX_REQUEST);
        if (round == 2) {
            assert_int_equal(atomic_load(&w.preadvs), 0);
            assert_true(atomic_load(&w.preads) >= n - 1); /* one per part */
        } else {
            assert_true(atomic_load(&w.widest) >= 32); /* 64 parts a claim */
        }
        ext_free_destinations(ext, n);
        witness_dispose(&w);
    }
    ckpt__streamed_alone_force(0);
}

/* One extent of 40 MiB: requests of half what is left, at least
 * CKPT__STREAM_MIN_REQUEST: 20, 10, 8 and the last 2 MiB, in file order
 * (one reader). */
static void test_streamed_request_sizes(void **state)
{
    fixture *f = *state;
    const size_t size = (size_t)40 << 20;
    uint8_t *data = malloc(size);
    char path[4200];
    ckpt__extent ext[1];
    ckpt_file *file = NULL;
    witness_fs w;
    assert_non_null(data);
    test_fill_random(data, size, 11);
    snprintf(path, sizeof(path), "%s/forty", f->dir);
    test_write_file(path, data, size);
    ext[0] = (ckpt__extent){0, size, NULL, 0};
    ext_give_destinations(ext, 1, NULL);
    witness_init(&w);
    assert_ckpt_ok(w.fwd.fs.open_read(&file, path, w.fwd.fs.payload));
    assert_ckpt_ok(ckpt__read_extents_streamed(&w.fwd.fs, file, path, ext, 1));
    w.fwd.fs.close(file, w.fwd.fs.payload);
    ext_check(data, ext, 1);
    assert_int_equal(atomic_load(&w.preads), 4);
    assert_int_equal(atomic_load(&w.largest), (size_t)20 << 20);
    assert_int_equal(w.readers, 1);
    for (unsigned k = 0; k < 4; k++) {
        static const uint64_t at[4] = {0, 20, 30, 38};
        assert_int_equal(w.log[k].off, at[k] << 20);
        assert_int_equal(w.log[k].buf, (uintptr_t)ext[0].dst + (at[k] << 20));
    }
    ext_free_destinations(ext, 1);
    witness_dispose(&w);
    free(data);
}

/* An extent without a destination: refused before any read, naming the
 * file and the range's offset. */
static void test_streamed_needs_destinations(void **state)
{
    fixture *f = *state;
    ckpt__extent ext[MAX_EXT];
    ckpt_file *file = NULL;
    witness_fs w;
    char want[4200];
    size_t n = layout(ext, f->size);
    give_destinations(ext, n); /* all but index 3 */
    witness_init(&w);
    snprintf(want, sizeof(want),
             "%s: the streamed read needs a destination "
             "for every range (the one at offset %llu has none)",
             f->path, (unsigned long long)ext[3].offset);
    assert_ckpt_ok(w.fwd.fs.open_read(&file, f->path, w.fwd.fs.payload));
    assert_ckpt_error(
        ckpt__read_extents_streamed(&w.fwd.fs, file, f->path, ext, n),
        CKPT_EINVAL, want);
    w.fwd.fs.close(file, w.fwd.fs.payload);
    assert_int_equal(atomic_load(&w.preads) + atomic_load(&w.preadvs), 0);
    ext_free_destinations(ext, n);
    witness_dispose(&w);
}

/* A pread failing at any point of the stream (a file system without
 * preadv, so every part is one pread) is returned once with its message;
 * the helper is joined (the next test would trip over it otherwise, and
 * TSan and ASan see it). */
static void test_streamed_failure_returned(void **state)
{
    check_failure_at_each_pread(*state, ckpt__read_extents_streamed, 3, 3, 1);
}

/* The end of the file met inside a range names the file, where it ends
 * and the range. */
static void test_streamed_file_ends_inside_extent(void **state)
{
    fixture *f = *state;
    ckpt__extent ext[2];
    uint8_t *dst = malloc(2 * PIECE);
    char want[4200];
    ckpt_file *file = NULL;
    assert_non_null(dst);
    ext[0] = (ckpt__extent){f->size - 2 * PIECE, PIECE, dst, 0};
    ext[1] = (ckpt__extent){f->size - PIECE / 2, PIECE, dst + PIECE, 0};
    snprintf(want, sizeof(want),
             "%s: the file ends at or before byte %zu, inside the range of "
             "%llu bytes at offset %zu",
             f->path, f->size, (unsigned long long)PIECE,
             f->size - (size_t)PIECE / 2);
    assert_ckpt_ok(ckpt_fs_posix()->open_read(&file, f->path, NULL));
    assert_ckpt_error(ckpt__read_extents_streamed(NULL, file, f->path, ext, 2),
                      CKPT_ECORRUPT, want);
    ckpt_fs_posix()->close(file, NULL);
    free(dst);
}

/* When a restore is long (ckpt__long_restore): two threads, a destination
 * for every range that has bytes, CKPT__STREAM_MIN_BYTES in all, whatever
 * the kernel's first writes cost; and when the streamed path is taken:
 * such a restore where they are not slow, since its long requests would
 * land straight (nothing is read: the destinations are only looked at). */
static void test_stream_suits(void **state)
{
    uint8_t byte;
    ckpt__extent ext[3] = {
        {0, CKPT__STREAM_MIN_BYTES / 2, &byte, 0},
        {CKPT__STREAM_MIN_BYTES / 2, 0, NULL, 0}, /* empty: no destination */
        {CKPT__STREAM_MIN_BYTES, CKPT__STREAM_MIN_BYTES / 2, &byte, 0},
    };
    const int modes[] = {CKPT__TOUCH_STRAIGHT, CKPT__TOUCH_BOUNCED,
                         CKPT__TOUCH_TIMED};
    (void)state;
    for (int m = 0; m < 3; m++) {
        int straight = modes[m] == CKPT__TOUCH_STRAIGHT;
        ckpt__first_touch_force(modes[m]);
        assert_true(ckpt__long_restore(ext, 3, 2));
        assert_int_equal(ckpt__stream_suits(ext, 3, 2), straight);
        assert_false(ckpt__long_restore(ext, 3, 1));
        assert_false(ckpt__stream_suits(ext, 3, 1));
        assert_false(ckpt__long_restore(ext, 2, 2)); /* half the bytes */
        assert_false(ckpt__stream_suits(ext, 2, 2));
        ext[2].size--; /* one byte short */
        assert_false(ckpt__long_restore(ext, 3, 2));
        assert_false(ckpt__stream_suits(ext, 3, 2));
        ext[2].size++;
        ext[2].dst = NULL; /* a check, not a restore */
        assert_false(ckpt__long_restore(ext, 3, 2));
        assert_false(ckpt__stream_suits(ext, 3, 2));
        ext[2].dst = &byte;
    }
    ckpt__first_touch_force(-1);
}

/* A file of CKPT__STREAM_MIN_BYTES just evicted from the page cache, read
 * by ckpt__read_extents through the POSIX file system into destinations
 * (a restore): on a device that reads far ahead, with two CPUs, by the
 * streamed path, reported as such (up to CKPT__STREAM_MAX_REQUEST a
 * read); the same file checked without destinations keeps the 256 KiB
 * pieces and one reader, and the restore where the kernel's first write
 * into the program's pages is slow (forced in the third round) the pieces
 * with two readers. Elsewhere
 * (tmpfs, a small read-ahead, one CPU) only the bytes are checked, and the
 * test says so. */
static void test_streamed_chosen_for_cold_restore(void **state)
{
    fixture *f = *state;
    const size_t size = (size_t)CKPT__STREAM_MIN_BYTES;
    uint8_t *data = malloc(size);
    char path[4200];
    ckpt__extent ext[2];
    ckpt__read_report rep;
    long ra_kb;
    int fd;
    assert_non_null(data);
    test_fill_random(data, size, 13);
    snprintf(path, sizeof(path), "%s/cold-long", f->dir);
    test_write_file(path, data, size);
    for (int round = 0; round < 3; round++) {
        ckpt__first_touch_force(round == 2 ? CKPT__TOUCH_TIMED
                                           : CKPT__TOUCH_STRAIGHT);
        fd = open(path, O_RDONLY);
        assert_true(fd >= 0);
        assert_int_equal(fdatasync(fd), 0);
        (void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        close(fd);
        ext[0] = (ckpt__extent){0, size / 2, NULL, 0};
        ext[1] = (ckpt__extent){size / 2, size / 2, NULL, 0};
        if (round != 1)
            ext_give_destinations(ext, 2, NULL);
        memset(&rep, 0, sizeof(rep));
        assert_ckpt_ok(ckpt__read_extents(NULL, path, NULL, ext, 2, &rep));
        ext_check(data, ext, 2);
        ra_kb = ckpt__posix_read_ahead_kb(path);
        if (!rep.far_read_ahead || ckpt__read_threads(NULL) < 2) {
            print_message("read %s (read-ahead %ld KiB, far %d): the "
                          "streamed path not in question here\n",
                          path, ra_kb, rep.far_read_ahead);
            assert_int_equal(rep.streamed, 0);
        } else if (round == 0) { /* a restore */
            assert_int_equal(rep.streamed, 1);
            assert_int_equal(rep.piece_bytes, CKPT__STREAM_MAX_REQUEST);
            assert_int_equal(rep.readers, 1);
        } else { /* a check (no destinations): one reader; or first
                    writes slow: two */
            assert_int_equal(rep.streamed, 0);
            assert_int_equal(rep.piece_bytes, CKPT__BUFFERED_PIECE);
            assert_int_equal(rep.readers, round == 1 ? 1 : 2);
        }
        if (round != 1)
            ext_free_destinations(ext, 2);
    }
    ckpt__first_touch_force(-1);
    free(data);
}

/* A file of 12 MiB (enough for the probe) just evicted from the page
 * cache, read by ckpt__read_extents through the POSIX file system: on a
 * device whose read-ahead is CKPT__FAR_READ_AHEAD_KB or more, through the
 * page cache by one reader in 256 KiB pieces, without a probe; below it,
 * when the probe (or a remembered one) chose the page cache, in the cold
 * path's 32 MiB requests. A file system that keeps the file cached (tmpfs)
 * declines direct reads and leaves nothing to check but the bytes. */
static void test_cold_choice_follows_read_ahead(void **state)
{
    fixture *f = *state;
    const size_t size = (size_t)12 << 20;
    uint8_t *data = malloc(size);
    char path[4200];
    ckpt__extent ext[1];
    ckpt__read_report rep;
    long ra_kb;
    int fd;
    assert_non_null(data);
    test_fill_random(data, size, 7);
    snprintf(path, sizeof(path), "%s/cold", f->dir);
    test_write_file(path, data, size);
    fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(fdatasync(fd), 0);
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
    ext[0] = (ckpt__extent){0, size, NULL, 0};
    ext_give_destinations(ext, 1, NULL);
    memset(&rep, 0, sizeof(rep));
    assert_ckpt_ok(ckpt__read_extents(NULL, path, NULL, ext, 1, &rep));
    ext_check(data, ext, 1);
    ra_kb = ckpt__posix_read_ahead_kb(path);
    if (ra_kb >= CKPT__FAR_READ_AHEAD_KB) {
        assert_int_equal(rep.probed, 0);
        assert_int_equal(rep.remembered, 0);
    }
    if (rep.far_read_ahead) {
        assert_true(ra_kb >= CKPT__FAR_READ_AHEAD_KB);
        assert_int_equal(rep.streamed, 0); /* under CKPT__STREAM_MIN_BYTES */
        assert_int_equal(rep.mode, CKPT__READ_BUFFERED);
        assert_int_equal(rep.piece_bytes, CKPT__BUFFERED_PIECE);
        assert_int_equal(rep.readers, 1);
    } else if (rep.mode == CKPT__READ_BUFFERED &&
               (rep.probed || rep.remembered))
        assert_int_equal(rep.piece_bytes, CKPT__COLD_REQUEST);
    else
        print_message("read %s (mode %d, probed %d): the choice by "
                      "read-ahead (%ld KiB) not taken here (the file "
                      "stayed cached, or no direct reads)\n",
                      path, rep.mode, rep.probed, ra_kb);
    ext_free_destinations(ext, 1);
    free(data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_one_thread, setup, teardown),
        cmocka_unit_test_setup_teardown(test_two_threads_read_at_once, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_scratch_kept_between_reads, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_scratch_at_file_page_offset, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_aliasing_destination_bounced,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_aliasing_destination_straight,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_first_touch_bounces_every_piece,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_first_touch_timed, setup,
                                        teardown),
        cmocka_unit_test(test_first_touch_probe_measures),
        cmocka_unit_test(test_alias_probe_measures),
        cmocka_unit_test_setup_teardown(test_posix_default_threads, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_short_reads_fault_fs, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_short_reads_two_threads, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_interrupted_pread_fault_fs, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_failure_on_either_thread, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_file_ends_inside_extent, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_cold_requests_span_extents, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_cold_without_preadv, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_cold_file_ends_inside_extent,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_cold_choice_follows_read_ahead,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_extents_reports, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_streamed_reads_layout, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_streamed_request_sizes, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_streamed_needs_destinations, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_streamed_failure_returned, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_streamed_file_ends_inside_extent,
                                        setup, teardown),
        cmocka_unit_test(test_stream_suits),
        cmocka_unit_test_setup_teardown(test_streamed_chosen_for_cold_restore,
                                        setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
