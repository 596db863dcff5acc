/* tests/io/extent_fixture.c - the read tests' shared
 * destinations and checks (see extent_fixture.h). */
#include "extent_fixture.h"

#include "test_util.h"

#include "util/crc32c.h"

#include <stdlib.h>
#include <string.h>

void ext_give_destinations(ckpt__extent *ext, size_t n, const int *dst_wanted)
{
    for (size_t i = 0; i < n; i++) {
        ext[i].dst = NULL;
        ext[i].crc = 0xdeadbeefu; /* must be overwritten */
        if (dst_wanted && !dst_wanted[i])
            continue;
        ext[i].dst = malloc((size_t)ext[i].size + EXT_GUARD);
        assert_non_null(ext[i].dst);
        memset(ext[i].dst, EXT_GUARD_BYTE, (size_t)ext[i].size + EXT_GUARD);
    }
}

void ext_free_destinations(ckpt__extent *ext, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(ext[i].dst);
}

void ext_check(const uint8_t *file_data, const ckpt__extent *ext, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const uint8_t *want = file_data + ext[i].offset;
        size_t sz = (size_t)ext[i].size;
        uint32_t crc = ckpt__crc32c(want, sz);
        if (ext[i].crc != crc)
            fail_msg("extent %zu (offset %llu, %zu bytes): crc 0x%08x, "
                     "expected 0x%08x",
                     i, (unsigned long long)ext[i].offset, sz, ext[i].crc, crc);
        if (!ext[i].dst)
            continue;
        assert_memory_equal(ext[i].dst, want, sz);
        for (size_t g = 0; g < EXT_GUARD; g++)
            assert_int_equal(((const uint8_t *)ext[i].dst)[sz + g],
                             EXT_GUARD_BYTE);
    }
}
