/* io/touch_probe.c - ckpt__first_touch_mode: whether the page-cache path
 * reads a piece through scratch and copies it on because the kernel's
 * first write into a page of the program's memory is slow on this
 * machine, and the limit that tells such a first write from a later one.
 * Measured once per process.
 *
 * A restore's variables were written by the program (initialised) but,
 * in the usual restore at start-up, never yet by the kernel. On most
 * machines the kernel's copy into them then runs as fast as into any
 * other memory. On some virtual machines it does not: on an AMD EPYC VM
 * (a Firecracker guest, kernel 6.18) the kernel's first pread into a page
 * the program had already written cost about 5 us a page, 84-102 ms for
 * 64 MiB in 256 KiB preads against 8-11 ms for the same preads again,
 * and the first restore of a process ran at 0.13-0.19x a read() of the
 * file (every later one near 1x); on huge pages (MADV_HUGEPAGE) the
 * difference vanished (9.3 ms, then 9.0). The program's own stores into
 * those pages pay nothing of the kind. (That guest runs under PVM, a
 * hypervisor that shadows the guest's page tables, with page-table
 * isolation on: the guest kernel runs on other page tables than the
 * program, so its first access to each page of the program's is a fault
 * of its own, taken in the host: `perf` shows it in exc_page_fault under
 * _copy_to_iter.) There a piece read into a scratch
 * buffer the kernel has written before, then copied on by the program
 * with its CRC fused into the copy (ckpt__crc32c_copy), fills variables
 * the kernel has not written 5-8x faster, and those it has (a second
 * restore into the same memory) about 20% slower. So on such a machine a
 * read times every long piece it reads straight into its destination
 * (ckpt__first_touch_limit_s): the first one slower than the limit shows
 * a page the kernel had not written, and the rest of the read bounces
 * (buffered_read.c).
 *
 * The probe: an in-memory file (memfd: the same kernel copy as a
 * page-cache read, no disk) of PROBE_BYTES; PROBE_ROUNDS times, fresh
 * plain pages (MADV_NOHUGEPAGE; each round its own part of one mapping)
 * written by this thread, then two preads of the file into them, timed
 * (fewer rounds when the first two are clear: PROBE_MIN_ROUNDS);
 * the best first over the best second is the ratio, slow from
 * CKPT__FIRST_TOUCH_SLOW up; the limit lies between the two best times.
 * Where it cannot be measured (no memfd, a file-size limit) pieces are
 * read straight, the choice made before this probe existed. The file's
 * bytes lie in the region the 256 KiB path keeps for its scratch buffers
 * (ckpt__scratch_pool_take_span), not in fresh pages of their own. Buffers
 * are mapped, not taken from the library's allocator, whose failures
 * (injected in tests) belong to the operations that allocate. */
#include "buffered_read.h"

#include "common/internal.h"
#include "fs_internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* 16 pages: enough to time (the first write ~80 us on the VM above, a
 * later one a few), few enough that the probe's own fresh pages cost
 * little where faults are dear (about 10 us a page there) */
#define PROBE_BYTES ((size_t)64 << 10)
#define PROBE_ROUNDS 5
/* ... or fewer: from the second round on, a ratio this far from
 * CKPT__FIRST_TOUCH_SLOW either way (a factor of 2) is the verdict; the
 * rounds after it only cost their fresh pages (about 0.35 ms a round on
 * the VM above, which measured 15-21x in its first two) */
#define PROBE_MIN_ROUNDS 2
#define PROBE_CLEAR 2.0

static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static double probed_ratio;   /* first / second; 0: not measured */
static double probed_again_s; /* the best second */
static atomic_int forced = -1;
static _Atomic double forced_limit_s; /* tests: above 0, the limit */

/* Seconds one pread of the whole file into `dst` took; -1 when it read
 * less. */
static double timed_read(int fd, uint8_t *dst)
{
    double t0 = ckpt__seconds_now();
    ssize_t got = pread(fd, dst, PROBE_BYTES, 0);
    double dt = ckpt__seconds_now() - t0;
    return got == (ssize_t)PROBE_BYTES ? dt : -1.0;
}

/* One round into the fresh pages at `pages` (written by this thread
 * first): the first and the second pread's seconds into *first and
 * *again (kept when better than what they hold, or when they hold -1); 0,
 * or -1 when a read failed. */
static int round_once(int fd, uint8_t *pages, double *first, double *again)
{
    double t1, t2;
    memset(pages, 0x5a, PROBE_BYTES); /* written by the program first */
    t1 = timed_read(fd, pages);
    t2 = timed_read(fd, pages);
    if (t1 < 0 || t2 < 0)
        return -1;
    if (*first < 0 || t1 < *first)
        *first = t1;
    if (*again < 0 || t2 < *again)
        *again = t2;
    return 0;
}

/* Whether the best first and later times so far are PROBE_CLEAR times
 * past CKPT__FIRST_TOUCH_SLOW, or under it. */
static int clear_verdict(double first, double again)
{
    return again > 0 &&
           (first >= PROBE_CLEAR * CKPT__FIRST_TOUCH_SLOW * again ||
            first * PROBE_CLEAR <= CKPT__FIRST_TOUCH_SLOW * again);
}

static void measure(void)
{
    double first = -1.0, again = -1.0;
    /* the file's bytes in the scratch buffers' region (io/scratch_pool.c);
     * each round's fresh plain pages in one mapping */
    uint8_t *content = ckpt__scratch_pool_take_span(PROBE_BYTES);
    size_t fresh_len = PROBE_ROUNDS * PROBE_BYTES;
    uint8_t *fresh = mmap(NULL, fresh_len, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    int fd = -1;
    if (content && fresh != MAP_FAILED) {
#ifdef MADV_NOHUGEPAGE
        (void)madvise(fresh, fresh_len, MADV_NOHUGEPAGE);
#endif
        fd = ckpt__probe_file("ckpt-first-touch-probe", content, PROBE_BYTES);
    }
    if (fd >= 0 && timed_read(fd, content) >= 0) { /* its pages, warm */
        int r = 0, done = 0;
        while (!done && r < PROBE_ROUNDS &&
               round_once(fd, fresh + (size_t)r * PROBE_BYTES, &first,
                          &again) == 0)
            done = ++r >= PROBE_MIN_ROUNDS && clear_verdict(first, again);
        if ((done || r == PROBE_ROUNDS) && first > 0 && again > 0) {
            probed_ratio = first / again;
            probed_again_s = again;
        }
    }
    if (fresh != MAP_FAILED)
        munmap(fresh, fresh_len);
    ckpt__scratch_pool_give(content);
    if (fd >= 0)
        close(fd);
}

double ckpt__first_touch_ratio(void)
{
    pthread_once(&probe_once, measure);
    return probed_ratio;
}

int ckpt__first_touch_mode(void)
{
    int f = atomic_load(&forced);
    if (f >= 0)
        return f;
    return ckpt__first_touch_ratio() >= CKPT__FIRST_TOUCH_SLOW
               ? CKPT__TOUCH_TIMED
               : CKPT__TOUCH_STRAIGHT;
}

/* The square root of x >= 0 by Newton's method (no libm for one root). */
static double root(double x)
{
    double r = x > 1.0 ? x : 1.0;
    if (x <= 0.0)
        return 0.0;
    for (int i = 0; i < 64; i++)
        r = 0.5 * (r + x / r);
    return r;
}

double ckpt__first_touch_limit_s(size_t bytes)
{
    /* halfway between a first and a later write on a log scale: a later
     * one into memory out of the CPU's cache (a restore's) runs slower
     * than the probe's into a buffer it just wrote */
    double ratio, fixed = atomic_load(&forced_limit_s);
    if (fixed > 0.0)
        return fixed;
    ratio = ckpt__first_touch_ratio();
    return root(ratio) * probed_again_s * (double)bytes / (double)PROBE_BYTES;
}

void ckpt__first_touch_force(int mode)
{
    atomic_store(&forced, mode < 0 ? -1 : mode);
}

void ckpt__first_touch_limit_force(double seconds)
{
    atomic_store(&forced_limit_s, seconds > 0.0 ? seconds : 0.0);
}
