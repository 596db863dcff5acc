/* tests/common/test_huge_map.c - ckpt__map_huge (common/huge_map.c): a
 * 2 MiB-aligned, zeroed, writable mapping of exactly the bytes asked for,
 * advised as huge pages (the kernel's VmFlags "hg" on its mapping, where
 * the system has MADV_HUGEPAGE); NULL for 0 bytes and for a size that
 * cannot be mapped; ckpt__map_aligned, the same without the advice;
 * ckpt__unmap_huge gives back every page of either. */
#include "test_util.h"

#include "common/internal.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#define HUGE ((uintptr_t)2 << 20)

/* The VmFlags line of the mapping in /proc/self/smaps that holds `p`,
 * into `flags` (empty when not found); its end address into *end. */
static void mapping_of(const void *p, char *flags, size_t cap, uintptr_t *end)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    char line[512];
    int inside = 0;
    flags[0] = '\0';
    *end = 0;
    assert_non_null(f);
    while (fgets(line, sizeof(line), f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) {
            inside = (uintptr_t)p >= lo && (uintptr_t)p < hi;
            if (inside)
                *end = hi;
        } else if (inside && strncmp(line, "VmFlags:", 8) == 0) {
            size_t len = strlen(line + 8);
            if (len >= cap)
                len = cap - 1;
            memcpy(flags, line + 8, len);
            flags[len] = '\0';
            break;
        }
    }
    fclose(f);
}

static void test_aligned_zeroed_writable(void **state)
{
    const size_t sizes[] = {1, 4096, (size_t)2 << 20, ((size_t)9 << 20) + 4096};
    (void)state;
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        size_t n = sizes[k];
        uint8_t *p = ckpt__map_huge(n);
        assert_non_null(p);
        assert_int_equal((uintptr_t)p % HUGE, 0);
        for (size_t i = 0; i < n; i += 4096)
            assert_int_equal(p[i], 0);
        assert_int_equal(p[n - 1], 0);
        memset(p, 0xa5, n);
        assert_int_equal(p[n - 1], 0xa5);
        ckpt__unmap_huge(p, n);
    }
}

/* The mapping is advised huge, and covers the bytes asked for. */
static void test_advised_huge(void **state)
{
    const size_t n = ((size_t)4 << 20) + 4096;
    char flags[256];
    uintptr_t end;
    uint8_t *p = ckpt__map_huge(n);
    (void)state;
    assert_non_null(p);
    mapping_of(p, flags, sizeof(flags), &end);
    if (flags[0] == '\0') {
        ckpt__unmap_huge(p, n);
        print_message("skipped: no VmFlags in /proc/self/smaps\n");
        skip();
    }
#ifdef MADV_HUGEPAGE
    assert_non_null(strstr(flags, " hg"));
#endif
    assert_true(end >= (uintptr_t)p + n);
    ckpt__unmap_huge(p, n);
}

static void test_refused_sizes(void **state)
{
    (void)state;
    assert_null(ckpt__map_huge(0));
    assert_null(ckpt__map_huge(SIZE_MAX));
    assert_null(ckpt__map_huge(SIZE_MAX - ((size_t)1 << 20)));
    errno = 0;
    assert_null(ckpt__map_aligned(0));
    assert_int_equal(errno, EINVAL);
    errno = 0;
    assert_null(ckpt__map_aligned(SIZE_MAX));
    assert_int_equal(errno, ENOMEM);
    ckpt__unmap_huge(NULL, 4096); /* nothing to give back: no effect */
}

/* Whether any page of [p, p + n) is mapped: mincore fails with ENOMEM
 * for a range with an unmapped page in it. */
static int any_unmapped(const uint8_t *p, size_t n)
{
    unsigned char vec[64];
    for (size_t off = 0; off < n; off += sizeof(vec) * 4096) {
        size_t len =
            n - off < sizeof(vec) * 4096 ? n - off : sizeof(vec) * 4096;
        if (mincore((void *)(p + off), len, vec) != 0 && errno == ENOMEM)
            return 1;
    }
    return 0;
}

/* ckpt__map_aligned: the same 2 MiB-aligned, zeroed, writable mapping,
 * not advised huge; given back whole by ckpt__unmap_huge. */
static void test_aligned_not_advised(void **state)
{
    const size_t n = ((size_t)4 << 20) + 4096;
    char flags[256];
    uintptr_t end;
    uint8_t *p = ckpt__map_aligned(n);
    (void)state;
    assert_non_null(p);
    assert_int_equal((uintptr_t)p % HUGE, 0);
    assert_int_equal(p[0], 0);
    assert_int_equal(p[n - 1], 0);
    memset(p, 0x3c, n);
    assert_false(any_unmapped(p, n));
    mapping_of(p, flags, sizeof(flags), &end);
    if (flags[0] != '\0')
        assert_null(strstr(flags, " hg"));
    ckpt__unmap_huge(p, n);
    assert_true(any_unmapped(p, 4096));
    assert_true(any_unmapped(p + n - 4096, 4096));
}

/* ckpt__unmap_huge gives back every page it was given: none of the
 * range is mapped after it. */
static void test_unmapped_whole(void **state)
{
    const size_t n = ((size_t)6 << 20) + 3 * 4096;
    uint8_t *p = ckpt__map_huge(n);
    (void)state;
    assert_non_null(p);
    memset(p, 1, n);
    assert_false(any_unmapped(p, n));
    ckpt__unmap_huge(p, n);
    for (size_t off = 0; off < n; off += 4096)
        assert_true(any_unmapped(p + off, 4096));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_aligned_zeroed_writable),
        cmocka_unit_test(test_advised_huge),
        cmocka_unit_test(test_refused_sizes),
        cmocka_unit_test(test_aligned_not_advised),
        cmocka_unit_test(test_unmapped_whole),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
