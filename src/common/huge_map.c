/* common/huge_map.c - ckpt__map_huge: anonymous memory the library keeps
 * or measures with, mapped at a 2 MiB boundary and asked for as huge
 * pages, so that faulting it in costs one fault for each 2 MiB instead of
 * one for each 4 KiB page; ckpt__map_aligned, the same mapping without
 * the request (the saver's staging image, which asks for huge pages
 * itself only when it faults them in at once: saver/snapshot.c).
 *
 * On a virtual machine whose host shadows the guest's page tables (the
 * AMD EPYC PVM guest of io/touch_probe.c) a page fault costs about 10 us:
 * 9 MiB of fresh 4 KiB pages took the CRC's streaming probe
 * (util/crc32c.c) 27-31 ms to fault in, on every process's first long
 * copy (a first save's snapshot, a first restore). Where transparent huge
 * pages are off or none is free the mapping is plain pages, as before.
 * Mapped, not taken from the library's allocator, whose failures
 * (injected in tests) belong to the operations that allocate. */
#include "internal.h"

#include <errno.h>
#include <sys/mman.h>

#define HUGE_BYTES ((size_t)2 << 20)

uint8_t *ckpt__map_aligned(size_t bytes)
{
    size_t len, head;
    uint8_t *raw, *start;
    if (bytes == 0 || bytes > SIZE_MAX - HUGE_BYTES) {
        errno = bytes == 0 ? EINVAL : ENOMEM;
        return NULL;
    }
    len = bytes + HUGE_BYTES;
    raw = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
               -1, 0);
    if (raw == MAP_FAILED)
        return NULL;
    head = (HUGE_BYTES - (uintptr_t)raw % HUGE_BYTES) % HUGE_BYTES;
    start = raw + head;
    if (head > 0)
        munmap(raw, head);
    if (len - head > bytes)
        munmap(start + bytes, len - head - bytes);
    return start;
}

uint8_t *ckpt__map_huge(size_t bytes)
{
    uint8_t *start = ckpt__map_aligned(bytes);
#ifdef MADV_HUGEPAGE
    if (start)
        (void)madvise(start, bytes, MADV_HUGEPAGE);
#endif
    return start;
}

void ckpt__unmap_huge(uint8_t *p, size_t bytes)
{
    if (p)
        munmap(p, bytes);
}
