/* tests/io/test_probe_region.c - the probes of the kernel's copy
 * (io/alias_probe.c, io/touch_probe.c) work in the region the 256 KiB
 * path keeps for its scratch buffers (io/scratch_pool.c), not in fresh
 * pages of their own: run first in a process that has read nothing, they
 * leave that region kept, 2 MiB-aligned, with the pages they wrote
 * resident (the alias probe's file bytes and what its reads copied), and
 * the next read's scratch buffers are that region. Also
 * the span's bounds. */
#include "test_util.h"

#include "io/buffered_read.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Whether every page of [p, p + bytes) is resident. */
static int all_resident(const uint8_t *p, size_t bytes)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t pages = (bytes + page - 1) / page;
    unsigned char *vec = malloc(pages);
    int all = vec && mincore((void *)(uintptr_t)p, bytes, vec) == 0;
    for (size_t i = 0; all && i < pages; i++)
        all = (vec[i] & 1) != 0;
    free(vec);
    return all;
}

/* Must run first: nothing before it has taken the region. */
static void test_probes_leave_the_region_written(void **state)
{
    /* the alias probe's file bytes and its two destinations */
    const size_t probed = CKPT__BUFFERED_PIECE + 2 * CKPT__SCRATCH_BYTES;
    double touch, alias;
    uint8_t *span, *scratch;
    (void)state;
    touch = ckpt__first_touch_ratio();
    alias = ckpt__aliased_read_ratio();
    if (touch <= 0.0 || alias <= 0.0) {
        print_message("skipped: the probes measured nothing here "
                      "(no in-memory file)\n");
        skip();
    }
    span = ckpt__scratch_pool_take_span(CKPT__SCRATCH_POOL_BYTES);
    assert_non_null(span);
    assert_int_equal((uintptr_t)span % CKPT__SCRATCH_POOL_BYTES, 0);
    assert_true(all_resident(span, probed));
    /* the alias probe's file bytes, and their copy its last pread left in
     * the aligned destination right after them */
    assert_true(span[1] != 0 || span[2] != 0);
    assert_memory_equal(span + CKPT__BUFFERED_PIECE, span,
                        CKPT__BUFFERED_PIECE);
    memset(span, 0x3c, CKPT__SCRATCH_POOL_BYTES); /* all of it addressable */
    ckpt__scratch_pool_give(span);
    scratch = ckpt__scratch_pool_take(CKPT__SCRATCH_BYTES);
    assert_ptr_equal(scratch, span);
    ckpt__scratch_pool_give(scratch);
}

/* A span past the region is refused; while the region is taken, another
 * take maps its own, and the first one given back is the one kept. */
static void test_span_bounds(void **state)
{
    uint8_t *a, *b, *again;
    (void)state;
    assert_null(ckpt__scratch_pool_take_span(CKPT__SCRATCH_POOL_BYTES + 1));
    a = ckpt__scratch_pool_take_span(CKPT__SCRATCH_POOL_BYTES);
    b = ckpt__scratch_pool_take_span(4096);
    assert_non_null(a);
    assert_non_null(b);
    assert_true(a != b);
    assert_int_equal((uintptr_t)b % CKPT__SCRATCH_POOL_BYTES, 0);
    b[0] = 1;
    b[4095] = 2;
    ckpt__scratch_pool_give(b);
    ckpt__scratch_pool_give(a);
    again = ckpt__scratch_pool_take_span(1);
    assert_ptr_equal(again, b);
    ckpt__scratch_pool_give(again);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_probes_leave_the_region_written),
        cmocka_unit_test(test_span_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
