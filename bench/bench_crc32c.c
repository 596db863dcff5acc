/* bench/bench_crc32c.c - throughput of every CRC-32C implementation this CPU
 * can run (util/crc32c.c: portable, sse42, pclmul, vpclmul256, vpclmul512,
 * armv8), checksum alone and fused copy + checksum, against a memcpy of the
 * same bytes timed in the same repetition, for a 256 KiB buffer (L2-resident)
 * and a 64 MiB one (memory-bound).
 *
 * Each repetition times memcpy, then every implementation's checksum, then
 * every implementation's fused copy (with the non-temporal-store choice
 * ckpt__crc32c_copy would make), each over at least MIN_BYTES in passes of
 * the buffer. Printed per row: GB/s median [min-max] over the repetitions,
 * the ratio to that repetition's memcpy, and the ratio to that
 * repetition's sse42 row of the same kind (the crc32-instruction path that
 * was the default before the folding kernels), median [min-max] each. A
 * "*" marks the implementation the library chose at start-up.
 *
 * usage: bench_crc32c [--reps N] [--quick]   (N >= 5; default 7;
 *        --quick: 5 reps, a quarter of the bytes per measurement)
 * Hold the machine's benchmark lock: flock /tmp/ckpt-bench.lock ... */
#include "bench_util.h"
#include "util/crc32c.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_REPS 64
#define ROWS (1 + 2 * CKPT__CRC32C_IMPL_COUNT)

/* Median, min and max of v[0..n) (sorts v). */
static void summarise(double *v, int n, double out[3])
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    out[0] = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    out[1] = v[0];
    out[2] = v[n - 1];
}

static volatile uint32_t sink;

/* GB/s of `passes` passes of row `row` over `size` bytes:
 * row 0 memcpy, 1..COUNT checksum by impl row-1, then fused copy. */
static double time_row(int row, uint8_t *dst, const uint8_t *src, size_t size,
                       int passes, int streaming)
{
    double t0 = now(), dt;
    for (int p = 0; p < passes; p++) {
        if (row == 0) {
            memcpy(dst, src, size);
            sink ^= dst[p % size];
        } else if (row <= CKPT__CRC32C_IMPL_COUNT) {
            sink ^= ckpt__crc32c_extend_with(row - 1, 0, src, size);
        } else {
            sink ^= ckpt__crc32c_copy_with(row - 1 - CKPT__CRC32C_IMPL_COUNT, 0,
                                           dst, src, size, streaming);
        }
    }
    dt = now() - t0;
    return (double)size * passes / dt * 1e-9;
}

static int row_available(int row)
{
    if (row == 0)
        return 1;
    if (row > CKPT__CRC32C_IMPL_COUNT)
        row -= CKPT__CRC32C_IMPL_COUNT;
    return ckpt__crc32c_impl_available(row - 1);
}

static void bench_size(size_t size, int reps, size_t min_bytes)
{
    /* 64-byte aligned, destination not 4K-aliased with the source */
    uint8_t *src = aligned_alloc(4096, size + 4096);
    uint8_t *dst = aligned_alloc(4096, size + 4096);
    int passes = (int)((min_bytes + size - 1) / size);
    int streaming = size >= ((size_t)256 << 10) && ckpt__crc32c_copy_streams();
    static double gbs[ROWS][MAX_REPS], ratio[ROWS][MAX_REPS],
        vs_sse42[ROWS][MAX_REPS];
    if (!src || !dst) {
        fprintf(stderr, "bench_crc32c: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < size; i++)
        src[i] = (uint8_t)(i * 2654435761u >> 13);
    memset(dst, 0, size);
    for (int r = 0; r < reps; r++) {
        for (int row = 0; row < ROWS; row++) {
            if (!row_available(row))
                continue;
            time_row(row, dst, src, size, 1, streaming); /* warm */
            gbs[row][r] = time_row(row, dst, src, size, passes, streaming);
            ratio[row][r] = gbs[row][r] / gbs[0][r];
        }
        for (int row = 1; row < ROWS; row++) {
            int base = row <= CKPT__CRC32C_IMPL_COUNT
                           ? 1 + CKPT__CRC32C_SSE42
                           : 1 + CKPT__CRC32C_IMPL_COUNT + CKPT__CRC32C_SSE42;
            if (row_available(row) && row_available(base))
                vs_sse42[row][r] = gbs[row][r] / gbs[base][r];
        }
    }
    printf("\n%zu KiB, %d reps, %d passes per measurement, fused copies "
           "with %s stores\n",
           size >> 10, reps, passes, streaming ? "non-temporal" : "plain");
    printf("%-20s %22s   %22s   %22s\n", "", "GB/s med [min-max]",
           "vs memcpy med [min-max]", "vs sse42 med [min-max]");
    for (int row = 0; row < ROWS; row++) {
        double g[3], q[3], v[3];
        char name[64];
        int impl = row == 0 ? -1 : (row - 1) % CKPT__CRC32C_IMPL_COUNT;
        if (!row_available(row))
            continue;
        summarise(gbs[row], reps, g);
        summarise(ratio[row], reps, q);
        snprintf(name, sizeof(name), "%s%s %s",
                 impl == ckpt__crc32c_impl() ? "*" : " ",
                 row == 0 ? "memcpy" : ckpt__crc32c_impl_name(impl),
                 row == 0                         ? ""
                 : row <= CKPT__CRC32C_IMPL_COUNT ? "crc"
                                                  : "copy+crc");
        printf("%-20s %6.2f [%6.2f-%6.2f]   %5.3f [%5.3f-%5.3f]", name, g[0],
               g[1], g[2], q[0], q[1], q[2]);
        if (row > 0 && row_available(1 + CKPT__CRC32C_SSE42)) {
            summarise(vs_sse42[row], reps, v);
            printf("   %5.3f [%5.3f-%5.3f]", v[0], v[1], v[2]);
        }
        printf("\n");
    }
    free(src);
    free(dst);
}

int main(int argc, char **argv)
{
    int reps = 7;
    size_t min_bytes = (size_t)512 << 20;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
            reps = (int)strtol(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--quick") == 0) {
            reps = 5;
            min_bytes /= 4;
        } else {
            fprintf(stderr, "usage: bench_crc32c [--reps N] [--quick]\n");
            return 2;
        }
    }
    if (reps < 5 || reps > MAX_REPS) {
        fprintf(stderr, "bench_crc32c: --reps must be 5..%d\n", MAX_REPS);
        return 2;
    }
    printf("crc32c implementation chosen at start-up: %s\n",
           ckpt__crc32c_impl_name(ckpt__crc32c_impl()));
    bench_size((size_t)256 << 10, reps, min_bytes);
    bench_size((size_t)64 << 20, reps, min_bytes);
    return 0;
}
