/* tests/tools/heap_peak_shim.c - an LD_PRELOAD library counting the heap a
 * program holds, for test_cli_memory.c: malloc, calloc, realloc, the
 * aligned allocators and free forward to glibc's own (__libc_*), each
 * block's usable size is added to or taken from a live count, and at exit
 * the largest live count is written, in decimal, to the file that
 * HEAP_PEAK_SHIM_OUT names. Bytes, never time. The counters are atomic:
 * the tool's read helpers allocate on their threads. */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void *__libc_malloc(size_t n);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t n);
void __libc_free(void *p);
void *__libc_memalign(size_t align, size_t n);

static _Atomic long long live, peak;

static void counted(long long delta)
{
    long long now = atomic_fetch_add(&live, delta) + delta;
    long long old = atomic_load(&peak);
    while (now > old && !atomic_compare_exchange_weak(&peak, &old, now))
        ;
}

static void *added(void *p)
{
    if (p)
        counted((long long)malloc_usable_size(p));
    return p;
}

void *malloc(size_t n)
{
    return added(__libc_malloc(n));
}

void *calloc(size_t n, size_t size)
{
    return added(__libc_calloc(n, size));
}

void *realloc(void *p, size_t n)
{
    long long old = p ? (long long)malloc_usable_size(p) : 0;
    void *q = __libc_realloc(p, n);
    if (q) { /* the new block counted before the old one leaves */
        added(q);
        counted(-old);
    } else if (n == 0) {
        counted(-old);
    }
    return q;
}

void free(void *p)
{
    if (p)
        counted(-(long long)malloc_usable_size(p));
    __libc_free(p);
}

void *memalign(size_t align, size_t n)
{
    return added(__libc_memalign(align, n));
}

void *aligned_alloc(size_t align, size_t n)
{
    return memalign(align, n);
}

int posix_memalign(void **out, size_t align, size_t n)
{
    void *p;
    if (align < sizeof(void *) || (align & (align - 1)) != 0)
        return EINVAL;
    p = memalign(align, n);
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

__attribute__((destructor)) static void write_peak(void)
{
    const char *path = getenv("HEAP_PEAK_SHIM_OUT");
    char text[32];
    int fd, len;
    if (!path)
        return;
    len = snprintf(text, sizeof(text), "%lld\n", atomic_load(&peak));
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    if (write(fd, text, (size_t)len) != len)
        fputs("heap_peak_shim: short write\n", stderr);
    close(fd);
}
