/* tests/io/test_read_choice.c - the probe's verdict remembered per device
 * (io/read_verdicts.h) by ckpt__read_extents (io/buffered_read.h), through
 * the aligned test file system given a device_id: a second read on the
 * same device reuses the verdict (the report says remembered, with the
 * probe's rates, and no file is opened or read the other way); a verdict
 * serves 32 reads and 60 s (a fake clock), then a read probes again; a
 * file system without a device, or whose device_id fails, probes every
 * time; a declined direct read stores no verdict and keeps the one there;
 * devices and file systems are kept apart; the table holds 8 devices; and
 * reads from several threads share the table. Every read's bytes and CRCs
 * are checked, in every mode. */
#include "test_util.h"

#include "extent_fixture.h"

#include "aligned_fs.h"
#include "common/internal.h"
#include "io/buffered_read.h"
#include "io/read_verdicts.h"
#include "support/fake_clock.h"
#include "util/crc32c.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KIB ((uint64_t)1024)
#define MIB (KIB * KIB)
#define FILE_SIZE ((size_t)(8 * MIB + 4101)) /* 17 direct pieces */
#define DIRECT_PIECES 17
#define THREADS 4
#define READS_PER_THREAD 6

/* The device every path of the test's file systems is on, and how often
 * it was asked. */
static atomic_ullong g_device = 7;
static atomic_ullong g_device_calls;
static atomic_int g_device_fails;

static int fake_device_id(const char *path, uint64_t *id, void *payload)
{
    (void)payload;
    atomic_fetch_add(&g_device_calls, 1);
    if (atomic_load(&g_device_fails))
        return ckpt__error(CKPT_EIO, "fake device_id %s: injected failure",
                           path);
    *id = atomic_load(&g_device);
    return 0;
}

typedef struct fixture {
    char *dir;
    char path[4096];
    uint8_t *data;
    aligned_fs afs; /* with fake_device_id */
    fake_clock clock;
} fixture;

static int setup(void **state)
{
    fixture *f = test_dir_fixture_new(sizeof(*f), offsetof(fixture, dir));
    f->data = malloc(FILE_SIZE);
    assert_non_null(f->data);
    test_fill_random(f->data, FILE_SIZE, 99);
    snprintf(f->path, sizeof(f->path), "%s/data", f->dir);
    test_write_file(f->path, f->data, FILE_SIZE);
    aligned_fs_init(&f->afs, CKPT_FS_VERSION);
    f->afs.fwd.fs.device_id = fake_device_id;
    fake_clock_init(&f->clock, 1000.0, 1000.0);
    ckpt__read_verdicts_reset(&f->clock.clock);
    atomic_store(&g_device, 7);
    atomic_store(&g_device_calls, 0);
    atomic_store(&g_device_fails, 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    ckpt__read_verdicts_reset(NULL); /* the fake clock goes away */
    free(f->data);
    return test_dir_fixture_teardown(state);
}

/* Read the file through `fs` as three extents (the first cut by the
 * probe's end, the second checksum only), check every byte and CRC, and
 * return the report. */
static ckpt__read_report read_once(const fixture *f, const ckpt_fs *fs)
{
    ckpt__extent ext[3];
    int want_dst[3] = {1, 0, 1};
    ckpt__read_report rep;
    ext[0] = (ckpt__extent){0, 3 * MIB, NULL, 0};
    ext[1] = (ckpt__extent){3 * MIB + 100, 2 * MIB, NULL, 0};
    ext[2] = (ckpt__extent){5 * MIB + 200, FILE_SIZE - 5 * MIB - 200, NULL, 0};
    ext_give_destinations(ext, 3, want_dst);
    memset(&rep, 0xff, sizeof(rep));
    assert_ckpt_ok(ckpt__read_extents(fs, f->path, NULL, ext, 3, &rep));
    ext_check(f->data, ext, 3);
    ext_free_destinations(ext, 3);
    return rep;
}

static void assert_probed(const ckpt__read_report *rep)
{
    assert_int_equal(rep->probed, 1);
    assert_int_equal(rep->remembered, 0);
    assert_true(rep->direct_bytes_per_s > 0);
    assert_true(rep->buffered_bytes_per_s > 0);
}

/* After a read that probed: an O_DIRECT verdict waits for a second probe
 * to confirm it, so read once more then (probing again). */
static void confirm_if_direct(fixture *f, const ckpt_fs *fs,
                              const ckpt__read_report *probed)
{
    ckpt__read_report rep;
    if (probed->mode != CKPT__READ_DIRECT)
        return;
    rep = read_once(f, fs);
    assert_probed(&rep);
}

/* A verdict planted for `fs`'s device as if `probes` probes in a row had
 * just made it. */
static void plant_times(const ckpt_fs *fs, const char *path, int mode,
                        int probes)
{
    ckpt__device_key key;
    ckpt__read_verdict v = {mode, 3e9, 1e9};
    assert_int_equal(ckpt__read_verdict_key(fs, path, &key), 1);
    for (int i = 0; i < probes; i++)
        ckpt__read_verdict_remember(&key, &v);
}

/* A verdict ready for reuse: O_DIRECT confirmed by a second probe. */
static void plant(const ckpt_fs *fs, const char *path, int mode)
{
    plant_times(fs, path, mode, mode == CKPT__READ_DIRECT ? 2 : 1);
}

/* One probe's O_DIRECT verdict is not reused until a second probe in a
 * row confirms it (one stalled buffered read can fake it); a page-cache
 * verdict is reused from its first probe. */
static void test_direct_verdict_needs_two_probes(void **state)
{
    fixture *f = *state;
    const ckpt_fs *fs = &f->afs.fwd.fs;
    ckpt__read_report rep;
    plant_times(fs, f->path, CKPT__READ_DIRECT, 1);
    rep = read_once(f, fs);
    assert_probed(&rep);
    plant_times(fs, f->path, CKPT__READ_BUFFERED, 1);
    plant_times(fs, f->path, CKPT__READ_DIRECT, 1); /* the buffered one
                                                        does not confirm */
    rep = read_once(f, fs);
    assert_probed(&rep);
    plant_times(fs, f->path, CKPT__READ_DIRECT, 2);
    rep = read_once(f, fs);
    assert_int_equal(rep.remembered, 1);
    assert_int_equal(rep.mode, CKPT__READ_DIRECT);
    plant_times(fs, f->path, CKPT__READ_BUFFERED, 1);
    rep = read_once(f, fs);
    assert_int_equal(rep.remembered, 1);
    assert_int_equal(rep.mode, CKPT__READ_BUFFERED);
}

/* The second read on the device skips the probe: same mode, the probe's
 * rates, and nothing opened or read the other way. */
static void test_second_read_remembers(void **state)
{
    fixture *f = *state;
    const ckpt_fs *fs = &f->afs.fwd.fs;
    ckpt__read_report first = read_once(f, fs), again;
    int calls = 1;
    assert_probed(&first);
    assert_int_equal(atomic_load(&g_device_calls), 1);
    /* O_DIRECT is reused once a second probe confirms it */
    while (first.mode == CKPT__READ_DIRECT && calls < 2) {
        first = read_once(f, fs);
        calls++;
        assert_probed(&first);
    }
    aligned_fs_reset(&f->afs);
    again = read_once(f, fs);
    assert_int_equal(again.probed, 0);
    assert_int_equal(again.remembered, 1);
    assert_int_equal(again.mode, first.mode);
    assert_true(again.direct_bytes_per_s == first.direct_bytes_per_s);
    assert_true(again.buffered_bytes_per_s == first.buffered_bytes_per_s);
    assert_int_equal(atomic_load(&g_device_calls), calls + 1);
    if (first.mode == CKPT__READ_DIRECT) {
        assert_int_equal(atomic_load(&f->afs.direct_opens), 1);
        assert_int_equal(atomic_load(&f->afs.direct_preads), DIRECT_PIECES);
        assert_int_equal(atomic_load(&f->afs.other_preads), 0);
    } else {
        /* one direct open to learn that the file is not in the page cache
         * (it is read in requests of 32 MiB), no direct read */
        assert_int_equal(first.mode, CKPT__READ_BUFFERED);
        assert_int_equal(atomic_load(&f->afs.direct_opens), 1);
        assert_int_equal(atomic_load(&f->afs.direct_preads), 0);
        assert_int_equal(again.piece_bytes, CKPT__COLD_REQUEST);
    }
    assert_int_equal(atomic_load(&f->afs.open_files), 0);
}

/* Each mode read as remembered: O_DIRECT streams every piece direct (its
 * 512 KiB reads, 2 readers), the page cache reads no piece direct: in
 * requests of 32 MiB when the file system would open the file direct (it
 * is not cached), in 256 KiB pieces when it declines (it is). */
static void test_remembered_modes(void **state)
{
    fixture *f = *state;
    const ckpt_fs *fs = &f->afs.fwd.fs;
    ckpt__read_report rep;
    plant(fs, f->path, CKPT__READ_DIRECT);
    rep = read_once(f, fs);
    assert_int_equal(rep.mode, CKPT__READ_DIRECT);
    assert_int_equal(rep.probed, 0);
    assert_int_equal(rep.remembered, 1);
    assert_true(rep.direct_bytes_per_s == 3e9);
    assert_true(rep.buffered_bytes_per_s == 1e9);
    assert_int_equal(rep.piece_bytes, 512 * KIB);
    assert_int_equal(rep.readers, 2);
    assert_int_equal(atomic_load(&f->afs.direct_opens), 1);
    assert_int_equal(atomic_load(&f->afs.direct_preads), DIRECT_PIECES);
    assert_int_equal(atomic_load(&f->afs.other_preads), 0);
    assert_int_equal(atomic_load(&f->afs.violations), 0);

    aligned_fs_reset(&f->afs);
    plant(fs, f->path, CKPT__READ_BUFFERED);
    rep = read_once(f, fs);
    assert_int_equal(rep.mode, CKPT__READ_BUFFERED);
    assert_int_equal(rep.probed, 0);
    assert_int_equal(rep.remembered, 1);
    assert_true(rep.direct_bytes_per_s == 3e9);
    assert_int_equal(rep.piece_bytes, CKPT__COLD_REQUEST);
    assert_int_equal(atomic_load(&f->afs.direct_opens), 1);
    assert_int_equal(atomic_load(&f->afs.direct_preads), 0);
    /* every byte of read_once's extents once (not the gaps, 200 bytes) */
    assert_int_equal(atomic_load(&f->afs.other_bytes), FILE_SIZE - 200);
    assert_int_equal(atomic_load(&f->afs.open_files), 0);

    aligned_fs_reset(&f->afs);
    atomic_store(&f->afs.decline, 1);
    rep = read_once(f, fs);
    atomic_store(&f->afs.decline, 0);
    assert_int_equal(rep.mode, CKPT__READ_BUFFERED);
    assert_int_equal(rep.remembered, 1);
    assert_int_equal(rep.piece_bytes, CKPT__BUFFERED_PIECE);
    assert_int_equal(atomic_load(&f->afs.direct_opens), 0);
    assert_int_equal(atomic_load(&f->afs.direct_preads), 0);
    assert_int_equal(atomic_load(&f->afs.other_preadvs), 0);
    assert_true(atomic_load(&f->afs.other_preads) > 0);
    assert_int_equal(atomic_load(&f->afs.open_files), 0);
}

/* A verdict serves 32 reads; the 33rd probes (and is remembered anew). */
static void test_reuse_ends_after_32_reads(void **state)
{
    fixture *f = *state;
    const ckpt_fs *fs = &f->afs.fwd.fs;
    ckpt__read_report rep;
    plant(fs, f->path, CKPT__READ_BUFFERED);
    for (int i = 0; i < CKPT__VERDICT_MAX_USES; i++) {
        rep = read_once(f, fs);
        if (rep.remembered != 1 || rep.probed != 0)
            fail_msg("read %d of %d was not remembered", i + 1,
                     CKPT__VERDICT_MAX_USES);
    }
    assert_int_equal(CKPT__VERDICT_MAX_USES, 32);
    rep = read_once(f, fs);
    assert_probed(&rep);
    confirm_if_direct(f, fs, &rep);
    rep = read_once(f, fs);
    assert_int_equal(rep.remembered, 1);
}

/* A verdict lasts 60 s after its probe (the fake clock), then a read
 * probes again. */
static void test_reuse_ends_after_60_s(void **state)
{
    fixture *f = *state;
    const ckpt_fs *fs = &f->afs.fwd.fs;
    ckpt__read_report rep;
    plant(fs, f->path, CKPT__READ_DIRECT);
    f->clock.now += 59.9;
    rep = read_once(f, fs);
    assert_int_equal(rep.remembered, 1);
    assert_int_equal(rep.mode, CKPT__READ_DIRECT);
    f->clock.now += 0.1; /* 60 s after the probe */
    rep = read_once(f, fs);
    assert_probed(&rep);
    confirm_if_direct(f, fs, &rep);
    f->clock.now += 30;
    rep = read_once(f, fs);
    assert_int_equal(rep.remembered, 1);
    assert_int_equal(CKPT__VERDICT_MAX_AGE_S, 60);
}

/* Without device_id, or when it fails, every read probes; the failure's
 * message does not become the caller's last error. */
static void test_no_device_probes_every_time(void **state)
{
    fixture *f = *state;
    const ckpt_fs *fs = &f->afs.fwd.fs;
    ckpt__read_report rep;
    f->afs.fwd.fs.device_id = NULL;
    for (int i = 0; i < 3; i++) {
        rep = read_once(f, fs);
        assert_probed(&rep);
    }
    assert_true(atomic_load(&f->afs.direct_opens) >= 3);

    f->afs.fwd.fs.device_id = fake_device_id;
    f->afs.fwd.fs.version = 2; /* the member is there, the version is not */
    rep = read_once(f, fs);
    assert_probed(&rep);
    assert_int_equal(atomic_load(&g_device_calls), 0);

    f->afs.fwd.fs.version = CKPT_FS_VERSION;
    atomic_store(&g_device_fails, 1);
    for (int i = 0; i < 2; i++) {
        ckpt_error_clear();
        rep = read_once(f, fs);
        assert_probed(&rep);
        assert_int_equal(ckpt_error_last()->code, 0);
    }
    assert_int_equal(atomic_load(&g_device_calls), 2);
}

/* A direct read declined for one file (the POSIX fs: it is in the page
 * cache) is no device verdict: nothing is stored, and a verdict already
 * there stays for the next file. */
static void test_declined_read_keeps_the_cache(void **state)
{
    fixture *f = *state;
    const ckpt_fs *fs = &f->afs.fwd.fs;
    ckpt__read_report rep;
    atomic_store(&f->afs.decline, 1);
    rep = read_once(f, fs);
    assert_int_equal(rep.mode, CKPT__READ_BUFFERED);
    assert_int_equal(rep.probed, 0);
    assert_int_equal(rep.remembered, 0);
    atomic_store(&f->afs.decline, 0);
    rep = read_once(f, fs);
    assert_probed(&rep); /* the decline left nothing to remember */

    plant(fs, f->path, CKPT__READ_DIRECT);
    atomic_store(&f->afs.decline, 1);
    ckpt_error_clear();
    rep = read_once(f, fs); /* declined: through the cache */
    assert_int_equal(rep.mode, CKPT__READ_BUFFERED);
    assert_int_equal(rep.probed, 0);
    assert_int_equal(rep.remembered, 0);
    assert_int_equal(ckpt_error_last()->code, 0);
    atomic_store(&f->afs.decline, 0);
    aligned_fs_reset(&f->afs);
    rep = read_once(f, fs);
    assert_int_equal(rep.remembered, 1);
    assert_int_equal(rep.mode, CKPT__READ_DIRECT);
    assert_int_equal(atomic_load(&f->afs.direct_preads), DIRECT_PIECES);
}

/* A verdict serves only its own device of its own file system. */
static void test_devices_and_file_systems_apart(void **state)
{
    fixture *f = *state;
    const ckpt_fs *fs = &f->afs.fwd.fs;
    aligned_fs other;
    ckpt__read_report rep;
    plant(fs, f->path, CKPT__READ_BUFFERED);
    atomic_store(&g_device, 8);
    rep = read_once(f, fs);
    assert_probed(&rep);
    atomic_store(&g_device, 7);
    aligned_fs_init(&other, CKPT_FS_VERSION);
    other.fwd.fs.device_id = fake_device_id;
    rep = read_once(f, &other.fwd.fs); /* same id, another table */
    assert_probed(&rep);
    rep = read_once(f, fs);
    assert_int_equal(rep.remembered, 1);
    assert_int_equal(rep.mode, CKPT__READ_BUFFERED);
}

/* The table holds 8 devices; a ninth pushes out the oldest verdict. */
static void test_table_keeps_eight_devices(void **state)
{
    fixture *f = *state;
    const ckpt_fs *fs = &f->afs.fwd.fs;
    ckpt__read_verdict v = {CKPT__READ_DIRECT, 2e9, 1e9}, got;
    for (uint64_t id = 1; id <= 9; id++) {
        ckpt__device_key key = {fs, id};
        ckpt__read_verdict_remember(&key, &v);
        ckpt__read_verdict_remember(&key, &v); /* confirmed */
        f->clock.now += 1;
    }
    for (uint64_t id = 1; id <= 9; id++) {
        ckpt__device_key key = {fs, id};
        memset(&got, 0, sizeof(got));
        assert_int_equal(ckpt__read_verdict_recall(&key, &got), id != 1);
        if (id != 1)
            assert_true(got.mode == CKPT__READ_DIRECT &&
                        got.direct_bytes_per_s == 2e9 &&
                        got.buffered_bytes_per_s == 1e9);
    }
}

typedef struct reader_arg {
    const fixture *f;
    int probed, remembered, failed; /* reads that failed or came out wrong */
} reader_arg;

/* read_once without cmocka's asserts, which must stay on the main thread:
 * the whole file into one buffer, compared with the data and its CRC. */
static void *reader_main(void *p)
{
    reader_arg *a = p;
    uint8_t *dst = malloc(FILE_SIZE);
    uint32_t want = ckpt__crc32c(a->f->data, FILE_SIZE);
    for (int i = 0; i < READS_PER_THREAD && dst; i++) {
        ckpt__extent ext = {0, FILE_SIZE, dst, 0};
        ckpt__read_report rep;
        memset(dst, 0, FILE_SIZE);
        if (ckpt__read_extents(&a->f->afs.fwd.fs, a->f->path, NULL, &ext, 1,
                               &rep) != 0 ||
            ext.crc != want || memcmp(dst, a->f->data, FILE_SIZE) != 0) {
            a->failed++;
            continue;
        }
        a->probed += rep.probed;
        a->remembered += rep.remembered;
    }
    if (!dst)
        a->failed = READS_PER_THREAD;
    free(dst);
    return NULL;
}

/* Run THREADS readers of READS_PER_THREAD reads each at once; every read
 * must be right and either probed or remembered. Returns how many were
 * remembered. */
static int run_readers(fixture *f)
{
    pthread_t t[THREADS];
    reader_arg args[THREADS];
    int remembered = 0;
    for (int i = 0; i < THREADS; i++) {
        args[i] = (reader_arg){f, 0, 0, 0};
        assert_int_equal(pthread_create(&t[i], NULL, reader_main, &args[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        assert_int_equal(pthread_join(t[i], NULL), 0);
        assert_int_equal(args[i].failed, 0);
        assert_int_equal(args[i].probed + args[i].remembered, READS_PER_THREAD);
        remembered += args[i].remembered;
    }
    return remembered;
}

/* Reads on several threads share the table (TSan watches). From an empty
 * table they probe and store verdicts at once: every read right, each
 * probed or remembered (how many of each depends on the probes' timing: an
 * O_DIRECT verdict waits for a second probe, racing probes may disagree).
 * From a verdict stored before they start, every read of every thread is
 * remembered. */
static void test_threads_share_verdicts(void **state)
{
    fixture *f = *state;
    int remembered;
    ckpt__read_verdicts_reset(NULL); /* the fake clock is not shared */
    (void)run_readers(f);
    ckpt__read_verdicts_reset(NULL);
    plant(&f->afs.fwd.fs, f->path, CKPT__READ_BUFFERED);
    remembered = run_readers(f);
    assert_true(remembered >= THREADS * READS_PER_THREAD / 2);
    assert_int_equal(remembered, THREADS * READS_PER_THREAD);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_second_read_remembers),
        T(test_remembered_modes),
        T(test_direct_verdict_needs_two_probes),
        T(test_reuse_ends_after_32_reads),
        T(test_reuse_ends_after_60_s),
        T(test_no_device_probes_every_time),
        T(test_declined_read_keeps_the_cache),
        T(test_devices_and_file_systems_apart),
        T(test_table_keeps_eight_devices),
        T(test_threads_share_verdicts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
