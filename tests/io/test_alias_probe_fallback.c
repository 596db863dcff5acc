/* tests/io/test_alias_probe_fallback.c - the alias probe
 * (io/alias_probe.c) where its in-memory file cannot be made: memfd_create
 * failing (run with no argument: RLIMIT_NOFILE at 0 while the probe runs,
 * so no descriptor can be opened: EMFILE), or the file not filled (run
 * with "fsize": RLIMIT_FSIZE at one page, so its write fails with EFBIG).
 * main() applies the fault around the process's one probe, before any
 * test runs, and lifts it again. The probe then measures nothing (ratio
 * 0) and the buffered path bounces every piece whose destination aliases
 * its file offset, the choice made before the probe existed (the probe of
 * the kernel's first write into the program's pages, io/touch_probe.c,
 * fails alike and bounces nothing more): the preads
 * land in scratch at the file offset's place in a page, none in the
 * destination, and the bytes and CRCs come out exact, through
 * ckpt__read_extents_buffered on one and two threads and through a
 * saver's restore of a tensor into an aliasing destination. */
#include "test_util.h"

#include "extent_fixture.h"

#include "ckpt.h"
#include "common/internal.h"
#include "io/buffered_read.h"
#include "support/fs_forward.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#define PIECE ((uint64_t)CKPT__BUFFERED_PIECE)

/* What the probes measured, with the fault in place (main). */
static double probed_ratio = -1.0;
static double probed_first_touch = -1.0;
static const char *fault_name = "memfd_create failing (EMFILE)";

/* Counts the preads whose buffer sits at another place in a page than the
 * file offset: a read straight into an aliasing destination. */
typedef struct offset_fs {
    ckpt_fs_forward fwd;
    atomic_uint preads, off_page;
} offset_fs;

static int offset_pread(ckpt_file *file, void *buf, size_t n, uint64_t off,
                        size_t *got, void *payload)
{
    offset_fs *w = payload;
    const ckpt_fs *base = ckpt_fs_forward_base(payload);
    atomic_fetch_add(&w->preads, 1);
    if ((uintptr_t)buf % 4096 != off % 4096)
        atomic_fetch_add(&w->off_page, 1);
    return base->pread(file, buf, n, off, got, base->payload);
}

static void test_probe_measured_nothing(void **state)
{
    (void)state;
    print_message("fault: %s\n", fault_name);
    assert_true(probed_ratio == 0.0);
    assert_true(ckpt__aliased_read_ratio() == 0.0); /* once per process */
    assert_int_equal(ckpt__aliased_reads_bounce(), 1);
    assert_true(probed_first_touch == 0.0);
    assert_true(ckpt__first_touch_ratio() == 0.0);
    assert_int_equal(ckpt__first_touch_mode(), CKPT__TOUCH_STRAIGHT);
}

/* A destination 16 bytes ahead of its file offset (glibc's large blocks)
 * read through the page-cache path: bounced, exact. */
static void test_aliasing_destination_bounced(void **state)
{
    char *dir = test_make_temp_dir();
    char *path = test_path(dir, "data");
    const size_t len = (size_t)(3 * PIECE + 777), file_size = len + 8192;
    const size_t bytes = (len + 8192 + 4095) / 4096 * 4096;
    uint8_t *data = malloc(file_size);
    uint8_t *pages = aligned_alloc(4096, bytes);
    ckpt__extent ext[1];
    (void)state;
    assert_non_null(data);
    assert_non_null(pages);
    test_fill_random(data, file_size, 7);
    test_write_file(path, data, file_size);
    memset(ext, 0, sizeof(ext));
    ext[0].offset = 100;
    ext[0].size = len;
    ext[0].dst = pages + 100 + 16;
    assert_true(ckpt__read_aliases(ext[0].dst, ext[0].offset));
    for (int threads = 1; threads <= 2; threads++) {
        offset_fs w;
        ckpt_file *file = NULL;
        memset(&w, 0, sizeof(w));
        ckpt_fs_forward_init(&w.fwd, NULL);
        w.fwd.fs.pread = offset_pread;
        memset(pages, EXT_GUARD_BYTE, bytes);
        assert_ckpt_ok(w.fwd.fs.open_read(&file, path, w.fwd.fs.payload));
        assert_ckpt_ok(ckpt__read_extents_buffered(&w.fwd.fs, file, path, ext,
                                                   1, threads));
        w.fwd.fs.close(file, w.fwd.fs.payload);
        ext_check(data, ext, 1);
        assert_true(atomic_load(&w.preads) >= 4); /* three pieces and more */
        assert_int_equal(atomic_load(&w.off_page), 0); /* all bounced */
    }
    free(pages);
    free(data);
    free(path);
    test_remove_tree(dir);
}

/* A saver's restore of a float tensor of a few pieces into memory 16
 * bytes past a page (the record starts at offset 0 of its data file):
 * the values come back exact. */
static void test_restore_exact(void **state)
{
    const int64_t n = (int64_t)(3 * PIECE / sizeof(float)) + 1001;
    char *dir = test_make_temp_dir();
    size_t bytes = ((size_t)n * sizeof(float) + 16 + 4095) / 4096 * 4096;
    uint8_t *pages = aligned_alloc(4096, bytes);
    float *values = (float *)(void *)(pages + 16);
    float *want = malloc((size_t)n * sizeof(float));
    ckpt_saver *s = NULL;
    ckpt_var v;
    (void)state;
    assert_non_null(pages);
    assert_non_null(want);
    for (int64_t i = 0; i < n; i++)
        want[i] = (float)i * 0.25f - 3.0f;
    memcpy(values, want, (size_t)n * sizeof(float));
    v = test_float_var("w", values, n);
    assert_ckpt_ok(ckpt_saver_open(&s, dir, NULL));
    assert_ckpt_ok(ckpt_saver_add_var(s, &v));
    assert_ckpt_ok(ckpt_saver_save(s, 1, NULL));
    memset(values, 0, (size_t)n * sizeof(float));
    assert_ckpt_ok(ckpt_saver_restore_latest(s, NULL));
    assert_memory_equal(values, want, (size_t)n * sizeof(float));
    ckpt_saver_free(s);
    free(want);
    free(pages);
    test_remove_tree(dir);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_probe_measured_nothing),
        cmocka_unit_test(test_aliasing_destination_bounced),
        cmocka_unit_test(test_restore_exact),
    };
    int resource = RLIMIT_NOFILE;
    struct rlimit old, fault;
    if (argc > 1 && strcmp(argv[1], "fsize") == 0) {
        resource = RLIMIT_FSIZE;
        fault_name = "the in-memory file not filled (EFBIG)";
    }
    if (getrlimit(resource, &old) != 0) {
        perror("getrlimit");
        return 1;
    }
    fault = old;
    fault.rlim_cur = resource == RLIMIT_FSIZE ? 4096 : 0;
    if (setrlimit(resource, &fault) != 0) {
        perror("setrlimit");
        return 1;
    }
    probed_ratio = ckpt__aliased_read_ratio();
    probed_first_touch = ckpt__first_touch_ratio();
    if (setrlimit(resource, &old) != 0) {
        perror("setrlimit");
        return 1;
    }
    return cmocka_run_group_tests(tests, NULL, NULL);
}
