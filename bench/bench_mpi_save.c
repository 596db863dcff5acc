/* bench/bench_mpi_save.c - the distributed saver's costs on however many
 * ranks mpiexec starts, as ratios against references taken in the same
 * run (never assertions):
 *   - per rank, the blocking time of save_async (the snapshot) against one
 *     memcpy of that rank's bytes into a warm buffer;
 *   - the cost of a poll (the per-step price of async progress) and of the
 *     SKIP busy agreement (one small allreduce);
 *   - aggregate save throughput of a sync save (every rank's data file
 *     durable, merged index, state file) in MiB/s, for comparison with
 *     `dd conv=fsync` of the same total bytes (bench/bench_mpi.sh);
 *   - restore throughput on the same ranks, and against each rank
 *     read()ing its own data file into memory of its size (restore_vs_read:
 *     read time / restore time, so 1.0 means as fast as read);
 *   - commit cost against the number of tensors: rank 0's merge of an
 *     index of N entries (--entries).
 * Usage: mpiexec -n R bench_mpi_save DIR [--mib M] [--reps K]
 *        [--entries N,...]  (M MiB of partitioned state in total, split over
 *        the ranks, plus 1% replicated) */
#include "ckpt.h"
#include "ckpt/mpi.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double max_over_ranks(double v)
{
    double m;
    MPI_Allreduce(&v, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return m;
}

/* Seconds to read() a whole file in 4 MiB pieces into `dst` (`cap`
 * bytes, the memory a restore fills: the restore's reference). Reading
 * into one reused 4 MiB buffer instead would never leave the CPU's cache
 * and flatter read() by the cost of writing the bytes to memory. */
static double read_file_s(const char *path, char *dst, size_t cap)
{
    size_t off = 0;
    double t0 = now();
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return 0;
    for (;;) {
        size_t want =
            cap - off < ((size_t)4 << 20) ? cap - off : ((size_t)4 << 20);
        ssize_t got = want ? read(fd, dst + off, want) : 0;
        if (got <= 0)
            break;
        off += (size_t)got;
    }
    close(fd);
    return now() - t0;
}

static int die(const char *what)
{
    fprintf(stderr, "bench_mpi_save: %s: %s\n", what,
            ckpt_error_last()->message);
    MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
}

/* Rank 0: merge cost of an index of n tensors (sync save of n tiny
 * replicated variables on all ranks, minus nothing: it is dominated by the
 * index at large n). */
static void bench_entries(const char *dir, long n, int rank)
{
    ckpt_mpi_saver *s = NULL;
    float *vals = calloc((size_t)n, sizeof(float));
    char name[64];
    double t0, t;
    for (long i = 0; i < n; i++) {
        ckpt_var v;
        memset(&v, 0, sizeof(v));
        snprintf(name, sizeof(name), "layer_%06ld/kernel", i);
        v.name = name;
        v.dtype = CKPT_DT_FLOAT;
        v.data = &vals[i];
        if (i == 0 && ckpt_mpi_saver_open(&s, MPI_COMM_WORLD, dir, NULL) != 0)
            die("open");
        if (ckpt_mpi_saver_add_replicated(s, &v) != 0)
            die("add");
    }
    if (ckpt_mpi_saver_check(s) != 0)
        die("check");
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = now();
    if (ckpt_mpi_saver_save(s, 100 + n, NULL) != 0)
        die("save");
    t = max_over_ranks(now() - t0);
    if (rank == 0)
        printf("commit_entries=%ld save_s=%.4f per_entry_us=%.2f\n", n, t,
               t / (double)n * 1e6);
    ckpt_mpi_saver_free(s);
    free(vals);
}

int main(int argc, char **argv)
{
    int provided, rank, size, reps = 3;
    double mib = 256;
    const char *dir = NULL, *entries = NULL;
    ckpt_mpi_saver *s = NULL;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--mib") == 0 && i + 1 < argc)
            mib = strtod(argv[++i], NULL);
        else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
            reps = (int)strtol(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--entries") == 0 && i + 1 < argc)
            entries = argv[++i];
        else
            dir = argv[i];
    }
    if (!dir) {
        if (rank == 0)
            fprintf(stderr,
                    "usage: mpiexec -n R %s DIR [--mib M] [--reps K] "
                    "[--entries N,...]\n",
                    argv[0]);
        MPI_Finalize();
        return 2;
    }
    if (entries) {
        const char *p = entries;
        while (*p) {
            char *end;
            long n = strtol(p, &end, 10);
            if (end == p)
                break;
            bench_entries(dir, n, rank);
            p = *end == ',' ? end + 1 : end;
        }
        MPI_Finalize();
        return 0;
    }

    int64_t rows = (int64_t)(mib * 1024 * 1024 / 4096); /* 1024 floats/row */
    int64_t lo = rows * rank / size, hi = rows * (rank + 1) / size;
    size_t local = (size_t)(hi - lo) * 4096;
    size_t rep_bytes = (size_t)(mib * 1024 * 1024 / 100) & ~(size_t)3;
    float *part = malloc(local), *rep = malloc(rep_bytes);
    char *warm = malloc(local + rep_bytes + ((size_t)1 << 20));
    ckpt_var v;
    ckpt_slice_extent ext[2] = {{lo, hi - lo}, {0, CKPT_SLICE_FULL}};
    memset(part, 1, local);
    memset(rep, 2, rep_bytes);
    memset(warm, 0, local + rep_bytes + ((size_t)1 << 20));
    if (ckpt_mpi_saver_open(&s, MPI_COMM_WORLD, dir, NULL) != 0)
        return die("open");
    memset(&v, 0, sizeof(v));
    v.name = "part";
    v.dtype = CKPT_DT_FLOAT;
    v.shape.rank = 2;
    v.shape.dims[0] = rows;
    v.shape.dims[1] = 1024;
    v.data = part;
    if (ckpt_mpi_saver_add_partitioned(s, &v, ext) != 0)
        return die("add part");
    v.name = "rep";
    v.shape.rank = 1;
    v.shape.dims[0] = (int64_t)(rep_bytes / 4);
    v.data = rep;
    if (ckpt_mpi_saver_add_replicated(s, &v) != 0)
        return die("add rep");
    if (ckpt_mpi_saver_check(s) != 0)
        return die("check");

    double copy_s = 1e9, block_s = 1e9, poll_s = 1e9, save_s = 1e9;
    double restore_s = 1e9, read_s = 1e9;
    ckpt_buf latest = CKPT_BUF_INIT;
    for (int r = 0; r < reps; r++) {
        double t0 = now(), t;
        memcpy(warm, part, local);
        t = now() - t0;
        if (t < copy_s)
            copy_s = t;
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = now();
        if (ckpt_mpi_saver_save(s, r + 1, NULL) != 0)
            return die("save");
        t = max_over_ranks(now() - t0);
        if (t < save_s)
            save_s = t;
        t0 = now();
        if (ckpt_mpi_saver_save_async(s, 1000 + r, NULL) != 0)
            return die("save_async");
        t = now() - t0;
        if (t < block_s)
            block_s = t;
        t0 = now();
        ckpt_mpi_saver_poll(s, NULL);
        t = now() - t0;
        if (t < poll_s)
            poll_s = t;
        if (ckpt_mpi_saver_wait(s, -1) != 0)
            return die("wait");
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = now();
        if (ckpt_mpi_saver_restore_latest(s, &latest) != 0)
            return die("restore");
        t = max_over_ranks(now() - t0);
        if (t < restore_s)
            restore_s = t;
        {
            char path[4096];
            snprintf(path, sizeof(path), "%s.data-%05d-of-%05d", latest.ptr,
                     rank, size);
            MPI_Barrier(MPI_COMM_WORLD);
            t = max_over_ranks(
                read_file_s(path, warm, local + rep_bytes + ((size_t)1 << 20)));
            if (t < read_s)
                read_s = t;
        }
    }
    block_s = max_over_ranks(block_s / copy_s);
    if (rank == 0) {
        double total = (double)rows * 4096 + (double)rep_bytes;
        printf("ranks=%d total_mib=%.0f local_mib=%.1f\n", size,
               total / 1048576.0, (double)local / 1048576.0);
        printf("blocking_vs_memcpy_max_rank=%.2f\n", block_s);
        printf("poll_us=%.1f\n", poll_s * 1e6);
        printf("sync_save_s=%.3f aggregate_mib_s=%.1f\n", save_s,
               total / 1048576.0 / save_s);
        printf("restore_s=%.3f restore_mib_s=%.1f read_own_file_s=%.3f "
               "restore_vs_read=%.2f\n",
               restore_s, total / 1048576.0 / restore_s, read_s,
               read_s / restore_s);
    }
    ckpt_mpi_saver_free(s);
    ckpt_buf_dispose(&latest);
    free(part);
    free(rep);
    free(warm);
    MPI_Finalize();
    return 0;
}
