/* io/alias_probe.c - ckpt__aliased_reads_bounce: whether the page-cache
 * path reads a piece whose destination sits just ahead of its file offset
 * modulo 4 KiB (ckpt__read_aliases) through scratch, or straight into the
 * destination. Measured once per process on this machine's kernel copy.
 *
 * The kernel copies a page-cache page to the reader with `rep movsb`. On
 * some CPUs (measured: AMD EPYC) that runs 1.5x slower 16 bytes ahead and
 * 2.6-5x slower 4-8 bytes ahead (loads falsely wait on the earlier stores,
 * "4K aliasing"): there a bounce through scratch at the file offset's
 * place in a page, copied on with the CRC fused into the copy, wins. On
 * others (measured: an Intel Xeon with AVX-512) the aliased copy runs as
 * fast as an aligned one, and the bounce's second pass over the bytes
 * only costs: 256 KiB preads into a destination 16 bytes ahead, from a
 * cached 64 MiB file, 7.9-9.8 GB/s straight against 6.8-7.0 bounced; a
 * restore on 2 MPI ranks sharing 2 cores 15-20% faster straight (medians
 * of 8 paired runs).
 *
 * So the probe reads PROBE_BYTES of an in-memory file (memfd: the same
 * kernel copy as a page-cache read, no disk) into a page-aligned buffer
 * and into one PROBE_AHEAD bytes ahead, interleaved, best of PROBE_ROUNDS
 * each (0.3 ms in all on an EPYC VM), and bounces only when the aliased
 * copy is CKPT__ALIAS_SLOW times slower. Where no such file can be made (no
 * memfd, a file-size limit) the bounce stays, the choice measured before
 * this probe existed. The file's bytes and both destinations lie in the
 * region the 256 KiB path keeps for its scratch buffers
 * (ckpt__scratch_pool_take_span; mapped, not taken from the library's
 * allocator, whose failures, injected in tests, belong to the operations
 * that allocate), faulted in once for the probe and the reads after it. */
#include "buffered_read.h"

#include "common/internal.h"
#include "fs_internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#define PROBE_BYTES CKPT__BUFFERED_PIECE
#define PROBE_ROUNDS 8
/* 16 bytes ahead: where glibc's malloc puts a large block (a mapping's
 * first page plus its header), the usual destination of a restore. */
#define PROBE_AHEAD 16

static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static double probed_ratio; /* aliased / aligned; 0: not measured */
static atomic_int forced = -1;

/* Best time of one pread of the whole file into `dst`, so far `best`. */
static double timed_read(int fd, uint8_t *dst, double best)
{
    double t0 = ckpt__seconds_now();
    ssize_t got = pread(fd, dst, PROBE_BYTES, 0);
    double dt = ckpt__seconds_now() - t0;
    if (got != (ssize_t)PROBE_BYTES)
        return -1.0;
    return best < 0 || dt < best ? dt : best;
}

static void measure(void)
{
    /* the file's bytes, then two destinations of a piece and a page each,
     * in the scratch buffers' region (io/scratch_pool.c) */
    size_t dst_len = PROBE_BYTES + 4096;
    size_t len = PROBE_BYTES + 2 * dst_len;
    double aligned = -1.0, aliased = -1.0;
    uint8_t *map = ckpt__scratch_pool_take_span(len);
    int fd;
    if (!map)
        return;
    fd = ckpt__probe_file("ckpt-alias-probe", map, PROBE_BYTES);
    memset(map + PROBE_BYTES, 0, 2 * dst_len); /* both faulted in */
    if (fd >= 0) {
        uint8_t *straight = map + PROBE_BYTES;
        uint8_t *ahead = straight + dst_len + PROBE_AHEAD;
        for (int r = 0; r < PROBE_ROUNDS; r++) {
            /* alternate which goes first: neither always finds the other's
             * cache state */
            if (r % 2 == 0) {
                aligned = timed_read(fd, straight, aligned);
                aliased = timed_read(fd, ahead, aliased);
            } else {
                aliased = timed_read(fd, ahead, aliased);
                aligned = timed_read(fd, straight, aligned);
            }
            if (aligned < 0 || aliased < 0)
                break;
        }
        if (aligned > 0 && aliased > 0)
            probed_ratio = aliased / aligned;
    }
    ckpt__scratch_pool_give(map);
    if (fd >= 0)
        close(fd);
}

double ckpt__aliased_read_ratio(void)
{
    pthread_once(&probe_once, measure);
    return probed_ratio;
}

int ckpt__aliased_reads_bounce(void)
{
    int f = atomic_load(&forced);
    double ratio;
    if (f >= 0)
        return f;
    ratio = ckpt__aliased_read_ratio();
    return ratio <= 0 || ratio >= CKPT__ALIAS_SLOW;
}

void ckpt__aliased_reads_force(int bounce)
{
    atomic_store(&forced, bounce < 0 ? -1 : bounce != 0);
}
