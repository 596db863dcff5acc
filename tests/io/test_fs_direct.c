/* Tests for CKPT_OPEN_DIRECT writes of the POSIX file system: aligned
 * prefixes go out with O_DIRECT, unaligned tails and unaligned buffers
 * through the page cache, and the file holds exactly the bytes written. */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_direct_mixed_writes(void **state)
{
    const ckpt_fs *fs = ckpt_fs_posix();
    char *dir = test_make_temp_dir();
    char path[4096];
    uint8_t *aligned = NULL;
    uint8_t *want;
    size_t big = 3 * 4096 + 100, total = 0;
    ckpt_file *f = NULL;
    (void)state;
    assert_int_equal(posix_memalign((void **)&aligned, 4096, big + 4096), 0);
    want = malloc(3 * big + 64);
    for (size_t i = 0; i < big + 4096; i++)
        aligned[i] = (uint8_t)(i * 7 + 3);
    snprintf(path, sizeof(path), "%s/direct.bin", dir);
    assert_ckpt_ok(fs->open_write(&f, path, CKPT_OPEN_EXCL | CKPT_OPEN_DIRECT,
                                  fs->payload));
    /* Aligned buffer at offset 0: 3 pages direct, 100 bytes buffered. */
    assert_ckpt_ok(fs->write(f, aligned, big, fs->payload));
    memcpy(want + total, aligned, big);
    total += big;
    /* Now the file offset is unaligned: all buffered. */
    assert_ckpt_ok(fs->write(f, aligned, 4096, fs->payload));
    memcpy(want + total, aligned, 4096);
    total += 4096;
    /* An unaligned buffer: buffered. */
    assert_ckpt_ok(fs->write(f, aligned + 1, 50, fs->payload));
    memcpy(want + total, aligned + 1, 50);
    total += 50;
    assert_ckpt_ok(fs->sync(f, fs->payload));
    assert_ckpt_ok(fs->close(f, fs->payload));
    test_assert_file_is(path, want, total);
    free(aligned);
    free(want);
    test_remove_tree(dir);
}

static void test_direct_small_and_empty_writes(void **state)
{
    const ckpt_fs *fs = ckpt_fs_posix();
    char *dir = test_make_temp_dir();
    char path[4096];
    uint8_t *aligned = NULL;
    ckpt_file *f = NULL;
    (void)state;
    assert_int_equal(posix_memalign((void **)&aligned, 4096, 8192), 0);
    memset(aligned, 0x5a, 8192);
    snprintf(path, sizeof(path), "%s/small.bin", dir);
    assert_ckpt_ok(fs->open_write(&f, path, CKPT_OPEN_DIRECT, fs->payload));
    assert_ckpt_ok(fs->write(f, aligned, 0, fs->payload));
    assert_ckpt_ok(fs->write(f, aligned, 10, fs->payload));
    assert_ckpt_ok(fs->close(f, fs->payload));
    test_assert_file_is(path, aligned, 10);
    free(aligned);
    test_remove_tree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_direct_mixed_writes),
        cmocka_unit_test(test_direct_small_and_empty_writes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
