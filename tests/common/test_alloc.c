/* The replacement allocator is process-wide: one owner at a time. A second
 * user trying to install a different allocator is refused (its memory would
 * otherwise reach the wrong free) until the owner restores the default, and
 * no change is made while the library holds blocks of the current one. */
#include "test_util.h"

#include "ckpt/sys/alloc.h"
#include "common/internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct counting {
    size_t allocs;
} counting;

static void *count_malloc(size_t n, void *payload)
{
    ((counting *)payload)->allocs++;
    return malloc(n);
}

static void *count_realloc(void *p, size_t n, void *payload)
{
    ((counting *)payload)->allocs++;
    return realloc(p, n);
}

static void count_free(void *p, void *payload)
{
    (void)payload;
    free(p);
}

static void test_second_allocator_is_refused(void **state)
{
    counting first = {0}, second = {0};
    const ckpt_allocator a = {CKPT_ALLOCATOR_VERSION, &first, count_malloc,
                              count_realloc, count_free};
    const ckpt_allocator b = {CKPT_ALLOCATOR_VERSION, &second, count_malloc,
                              count_realloc, count_free};
    void *p;
    (void)state;
    assert_ckpt_ok(ckpt_set_allocator(&a));
    assert_ckpt_ok(ckpt_set_allocator(&a)); /* the same owner again */
    assert_ckpt_error(ckpt_set_allocator(&b), CKPT_EBUSY,
                      "another allocator is installed");

    /* the owner's allocator is still the one in use */
    p = ckpt__malloc(16);
    assert_non_null(p);
    ckpt__free(p);
    assert_int_equal(first.allocs, 1);
    assert_int_equal(second.allocs, 0);

    /* once the owner restores the default, the next user may install */
    assert_ckpt_ok(ckpt_set_allocator(NULL));
    assert_ckpt_ok(ckpt_set_allocator(&b));
    p = ckpt__malloc(16);
    ckpt__free(p);
    assert_int_equal(first.allocs, 1);
    assert_int_equal(second.allocs, 1);
    assert_ckpt_ok(ckpt_set_allocator(NULL));
}

/* Blocks of one allocator must reach its own free: while the library holds
 * any (here a graph's), a change of allocator is refused, in both
 * directions, and the allocator in use stays. */
static void test_change_with_live_blocks_is_refused(void **state)
{
    counting mine = {0};
    const ckpt_allocator a = {CKPT_ALLOCATOR_VERSION, &mine, count_malloc,
                              count_realloc, count_free};
    ckpt_graph *g = NULL;
    (void)state;
    assert_ckpt_ok(ckpt_graph_new(&g));
    assert_ckpt_error(ckpt_set_allocator(&a), CKPT_EBUSY,
                      "the current allocator gave the library are not "
                      "freed yet");
    assert_non_null(strstr(ckpt_error_last()->message, "block(s)"));
    ckpt_graph_free(g);
    assert_int_equal(mine.allocs, 0);

    assert_ckpt_ok(ckpt_set_allocator(&a));
    assert_ckpt_ok(ckpt_graph_new(&g));
    assert_true(mine.allocs > 0);
    assert_ckpt_error(ckpt_set_allocator(NULL), CKPT_EBUSY,
                      "free them before changing the allocator");
    assert_ckpt_ok(ckpt_set_allocator(&a)); /* the same one: a no-op */
    ckpt_graph_free(g);                     /* through `a`'s free */
    assert_ckpt_ok(ckpt_set_allocator(NULL));
}

static void test_bad_allocators(void **state)
{
    ckpt_allocator a = {CKPT_ALLOCATOR_VERSION + 1, NULL, count_malloc,
                        count_realloc, count_free};
    (void)state;
    assert_ckpt_error(ckpt_set_allocator(&a), CKPT_EVERSION,
                      "unsupported version");
    a.version = CKPT_ALLOCATOR_VERSION;
    a.free = NULL;
    assert_ckpt_error(ckpt_set_allocator(&a), CKPT_EINVAL,
                      "every member is required");
    assert_ckpt_ok(ckpt_set_allocator(NULL)); /* nothing installed: fine */
}

typedef struct refusing {
    int refuse; /* realloc returns NULL while set */
    size_t refused;
} refusing;

static void *refusing_malloc(size_t n, void *payload)
{
    (void)payload;
    return malloc(n);
}

static void *refusing_realloc(void *p, size_t n, void *payload)
{
    refusing *r = payload;
    if (r->refuse) {
        r->refused++;
        return NULL;
    }
    return realloc(p, n);
}

static void refusing_free(void *p, void *payload)
{
    (void)payload;
    free(p);
}

/* ckpt__reserve_one: `first` items at the first growth, then twice as
 * many, nothing while there is room; a failed growth (the allocator
 * refusing, or a byte size past SIZE_MAX) is CKPT_ENOMEM with the array
 * and its capacity as they were. */
static void test_reserve_one(void **state)
{
    refusing r = {0, 0};
    const ckpt_allocator a = {CKPT_ALLOCATOR_VERSION, &r, refusing_malloc,
                              refusing_realloc, refusing_free};
    double *items = NULL, *before;
    size_t cap = 0;
    (void)state;
    assert_ckpt_ok(ckpt_set_allocator(&a));
    assert_ckpt_ok(ckpt__reserve_one(&items, &cap, 0, sizeof(*items), 4));
    assert_non_null(items);
    assert_int_equal(cap, 4);
    for (size_t i = 0; i < 5; i++) {
        assert_ckpt_ok(ckpt__reserve_one(&items, &cap, i, sizeof(*items), 4));
        items[i] = (double)i;
    }
    assert_int_equal(cap, 8);
    assert_ckpt_ok(ckpt__reserve_one(&items, &cap, 7, sizeof(*items), 4));
    assert_int_equal(cap, 8); /* room for the eighth: unchanged */
    before = items;
    assert_ckpt_error(ckpt__reserve_one(&items, &cap, 8, SIZE_MAX / 8, 4),
                      CKPT_ENOMEM, "out of memory");
    assert_ptr_equal(items, before);
    assert_int_equal(cap, 8);
    r.refuse = 1;
    assert_ckpt_error(ckpt__reserve_one(&items, &cap, 8, sizeof(*items), 4),
                      CKPT_ENOMEM, "out of memory");
    assert_int_equal(r.refused, 1);
    assert_ptr_equal(items, before);
    assert_int_equal(cap, 8);
    for (size_t i = 0; i < 5; i++)
        assert_true(items[i] == (double)i);
    ckpt__free(items);
    assert_ckpt_ok(ckpt_set_allocator(NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_second_allocator_is_refused),
        cmocka_unit_test(test_change_with_live_blocks_is_refused),
        cmocka_unit_test(test_bad_allocators),
        cmocka_unit_test(test_reserve_one),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
