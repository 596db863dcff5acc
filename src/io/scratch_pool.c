/* io/scratch_pool.c - the 256 KiB path's scratch buffers, mapped once and
 * kept for the process (ckpt__scratch_pool_take / _give).
 *
 * A read that bounces pieces through scratch (buffered_read.c) used to
 * allocate two buffers of 260 KiB and free them after. The C library
 * hands such blocks back to the system on free (mapped blocks, or the
 * heap's top trimmed), so every read faulted its scratch in again, and on
 * a virtual machine where the kernel's first write into a page of the
 * program's is itself slow (io/touch_probe.c) each piece's first pread
 * into fresh scratch paid that as well: on an AMD EPYC PVM guest, page
 * faults under the kernel's copy into scratch were a sixth of that copy's
 * time in restores of a cached 64 MiB checkpoint (`perf`). Kept, the
 * buffers are faulted in once; asked for as a huge page (ckpt__map_huge:
 * the region is 2 MiB-aligned and advised MADV_HUGEPAGE where the system
 * allows it), once is one fault instead of 130. The cost is the region, 2 MiB
 * of address space of which the buffers use 520 KiB (all of it resident when it
 * is a huge page), for the life of the process.
 *
 * The probes of the kernel's copy (io/alias_probe.c, io/touch_probe.c)
 * take the region whole (ckpt__scratch_pool_take_span) for their file's
 * bytes and the destinations they time, before the first read uses it:
 * fresh pages of their own cost about 10 us a page of faults on the VM
 * above, where the alias probe took 3.4-3.6 ms in its own mapping and
 * 0.3 ms here, and the pages the probes had the kernel write are the ones
 * the reads use next. With it (and the touch probe's fewer rounds) the
 * first cold restore of a process, 64 MiB, went from 0.66-0.72 to
 * 0.79-0.90 of a read() (6 paired processes); later restores alike.
 *
 * At most one region is kept: take swaps it out of `kept` (or maps a new
 * one when another read holds it), give swaps it back, or unmaps it when
 * another read's region was given back first. The region is
 * mapped, not taken from the library's allocator: it outlives every
 * operation, and the allocator's failures (injected in tests) belong to
 * the operations that allocate. */
#include "buffered_read.h"

#include "common/internal.h"

#include <stdatomic.h>
#include <stdint.h>

/* Under AddressSanitizer only the bytes a read asked for are addressable
 * (a kept region is all poisoned between reads), so a scratch overrun is
 * caught as it was in a block of its own. */
#if defined(__SANITIZE_ADDRESS__)
#define POOL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define POOL_ASAN 1
#endif
#endif
#ifdef POOL_ASAN
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define REGION_BYTES CKPT__SCRATCH_POOL_BYTES

static _Atomic(uintptr_t) kept; /* the idle region, or 0 */

/* The kept region, or a new one; all of it poisoned (NULL: none). */
static uint8_t *take_region(void)
{
    uint8_t *pool = (uint8_t *)atomic_exchange(&kept, (uintptr_t)0);
    if (!pool)
        pool = ckpt__map_huge(REGION_BYTES);
    if (pool)
        POISON(pool, REGION_BYTES);
    return pool;
}

uint8_t *ckpt__scratch_pool_take(size_t bytes)
{
    uint8_t *pool = take_region();
    _Static_assert(CKPT__SCRATCH_POOL_SLOTS * CKPT__SCRATCH_BYTES <=
                       REGION_BYTES,
                   "the scratch buffers fit the region");
    if (bytes > CKPT__SCRATCH_BYTES)
        bytes = CKPT__SCRATCH_BYTES;
    for (size_t t = 0; pool && t < CKPT__SCRATCH_POOL_SLOTS; t++)
        UNPOISON(pool + t * CKPT__SCRATCH_BYTES, bytes);
    return pool;
}

uint8_t *ckpt__scratch_pool_take_span(size_t bytes)
{
    uint8_t *pool;
    _Static_assert(CKPT__SCRATCH_POOL_BYTES == REGION_BYTES,
                   "the header names the region's size");
    if (bytes > REGION_BYTES)
        return NULL;
    pool = take_region();
    if (pool)
        UNPOISON(pool, bytes);
    return pool;
}

void ckpt__scratch_pool_give(uint8_t *pool)
{
    uintptr_t none = 0;
    if (!pool)
        return;
    POISON(pool, REGION_BYTES);
    if (!atomic_compare_exchange_strong(&kept, &none, (uintptr_t)pool)) {
        UNPOISON(pool, REGION_BYTES);
        ckpt__unmap_huge(pool, REGION_BYTES);
    }
}
