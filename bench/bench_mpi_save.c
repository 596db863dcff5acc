/* bench/bench_mpi_save.c - the distributed saver's costs on however many
 * ranks mpiexec starts, each as a ratio against a reference measured in the
 * same repetition, right before or after it (the order alternates between
 * repetitions), printed once per repetition in the format scripts/bench.sh
 * tabulates (never assertions):
 *
 *   ratio <TAB> figure <TAB> le|ge|noise <TAB> target <TAB> value
 *   info  <TAB> name   <TAB> value          (components, for diagnosis)
 *
 * Figures:
 *   - blocking: per rank, the time save_async keeps the caller against one
 *     memcpy of that rank's bytes (the records it writes) into a warm
 *     buffer, with every rank copying at once after a barrier, as every
 *     rank snapshots at once; the worst rank's ratio, and the slowest
 *     rank's blocking against the slowest rank's copy (what a step that
 *     ends in a collective waits for; on oversubscribed cores which rank
 *     gets a core first is a draw, which the per-rank ratio magnifies);
 *   - aggregate save throughput: a sync save (every rank's data file
 *     durable, merged index, state file) against `dd bs=4M conv=fsync` of
 *     the same total bytes into the same directory (run by rank 0 while
 *     the others wait); dd's time over the save's, so 1.0 means as fast;
 *   - restore: every rank restores its part against every rank read()ing
 *     its own data file into memory of its size, both from the page cache
 *     (an untimed restore and read() first); read time over restore;
 *   - blocking with the fence: per rank, save_async's wait plus the
 *     mutation fence's, with a pass that only reads the state and a
 *     collective between them (a step's forward, backward and allreduce),
 *     against the same memcpy; the worst rank's ratio (a second saver,
 *     fenced from its opening, after the other figures);
 *   - noise floors (op "noise", no target): dd against a second dd and
 *     read() against a second read(), run right next to the reference on
 *     the side away from the save or restore, in the same repetition: the
 *     spread two identical runs of the reference show on this machine.
 * Info lines: the snapshot alone (the saver's blocking metric) and the
 * rest of save_async (agreement), the memcpy, a poll, MiB/s of both
 * writes. --entries N,...: the commit cost of a checkpoint of N tiny
 * replicated tensors (a sync save on every rank; the index dominates).
 *
 * The benchmark's own waits (barriers, reductions of results) poll
 * non-blocking collectives and sleep, so ranks waiting in them leave the
 * cores to the ranks still working, as the saver's own waits do.
 *
 * Usage: mpiexec -n R bench_mpi_save DIR [--mib M] [--reps K] [--buffered]
 *        [--entries N,...]  (M MiB of partitioned state in total, split over
 *        the ranks, plus 1% replicated; K repetitions, default 5;
 *        --buffered: the saver's direct_io off) */
#include "bench_util.h"
#include "ckpt.h"
#include "ckpt/mpi.h"

#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static int g_rank, g_size;

/* Complete `req`, sleeping between tests (never spinning on the cores the
 * other ranks need). */
static void calm_wait(MPI_Request *req)
{
    int done = 0;
    for (;;) {
        MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (done)
            return;
        struct timespec ts = {0, 20000};
        nanosleep(&ts, NULL);
    }
}

static void calm_barrier(void)
{
    MPI_Request req;
    MPI_Ibarrier(MPI_COMM_WORLD, &req);
    calm_wait(&req);
}

static double reduce(double v, MPI_Op op)
{
    double m;
    MPI_Request req;
    MPI_Iallreduce(&v, &m, 1, MPI_DOUBLE, op, MPI_COMM_WORLD, &req);
    calm_wait(&req);
    return m;
}

static int die(const char *what)
{
    fprintf(stderr, "bench_mpi_save: rank %d: %s: %s\n", g_rank, what,
            ckpt_error_last()->message);
    MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
}

/* Seconds to read() a whole file in 4 MiB pieces into `dst` (`cap`
 * bytes, the memory a restore fills). Reading into one reused 4 MiB
 * buffer instead would never leave the CPU's cache and flatter read() by
 * the cost of writing the bytes to memory. */
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

/* Rank 0: seconds `dd if=/dev/zero bs=4M conv=fsync` takes to write
 * `bytes` to `path` (then removed); the other ranks wait, sleeping. */
static double dd_s(const char *path, unsigned long long bytes)
{
    double t = 0;
    if (g_rank == 0) {
        char of[4300], count[64];
        char *argv[] = {"dd",         "if=/dev/zero", of,
                        "bs=4M",      count,          "iflag=count_bytes",
                        "conv=fsync", "status=none",  NULL};
        pid_t pid;
        int st = 0;
        snprintf(of, sizeof(of), "of=%s", path);
        snprintf(count, sizeof(count), "count=%llu", bytes);
        double t0 = now();
        if (posix_spawnp(&pid, "dd", NULL, NULL, argv, environ) != 0 ||
            waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
            WEXITSTATUS(st) != 0) {
            fprintf(stderr, "bench_mpi_save: dd failed\n");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        t = now() - t0;
        unlink(path);
    }
    calm_barrier();
    return t;
}

static void ratio(const char *figure, double mib, const char *op, double target,
                  double value)
{
    if (g_rank == 0)
        printf("ratio\tmpi %d rank%s: %s, %.0f MiB\t%s\t%g\t%.6f\n", g_size,
               g_size == 1 ? "" : "s", figure, mib, op, target, value);
}

static void info(const char *name, double value)
{
    if (g_rank == 0)
        printf("info\tmpi %d rank%s: %s\t%.6f\n", g_size,
               g_size == 1 ? "" : "s", name, value);
}

/* Commit cost of a checkpoint of n tiny replicated tensors. */
static void bench_entries(const char *dir, long n)
{
    ckpt_mpi_saver *s = NULL;
    float *vals = calloc((size_t)n, sizeof(float));
    char name[64];
    double t0, t;
    if (ckpt_mpi_saver_open(&s, MPI_COMM_WORLD, dir, NULL) != 0)
        die("open");
    for (long i = 0; i < n; i++) {
        ckpt_var v;
        memset(&v, 0, sizeof(v));
        snprintf(name, sizeof(name), "layer_%06ld/kernel", i);
        v.name = name;
        v.dtype = CKPT_DT_FLOAT;
        v.data = &vals[i];
        if (ckpt_mpi_saver_add_replicated(s, &v) != 0)
            die("add");
    }
    if (ckpt_mpi_saver_check(s) != 0)
        die("check");
    calm_barrier();
    t0 = now();
    if (ckpt_mpi_saver_save(s, 100 + n, NULL) != 0)
        die("save");
    t = reduce(now() - t0, MPI_MAX);
    if (g_rank == 0)
        printf("info\tmpi %d ranks: commit of %ld entries, s\t%.6f\n", g_size,
               n, t);
    ckpt_mpi_saver_free(s);
    free(vals);
}

typedef struct state {
    const char *dir;
    int buffered; /* --buffered: direct_io off */
    int policy;   /* --policy skip|wait|coalesce (default: the saver's) */
    double mib;
    ckpt_mpi_saver *s;
    float *part, *rep;
    size_t local, rep_bytes;
    size_t own_bytes; /* the bytes of this rank's data file */
    char *warm;       /* memcpy and read() destination */
    size_t warm_cap;
    double total; /* bytes of every rank's records */
} state;

/* Copy this rank's records (its piece, then the replicated variable when
 * it writes it) into the warm buffer: the snapshot's reference. */
static double copy_own_s(const state *st)
{
    double t0 = now();
    memcpy(st->warm, st->part, st->local);
    if (st->own_bytes > st->local)
        memcpy(st->warm + st->local, st->rep, st->own_bytes - st->local);
    return now() - t0;
}

static void data_path(char *out, size_t cap, const char *prefix)
{
    snprintf(out, cap, "%s.data-%05d-of-%05d", prefix, g_rank, g_size);
}

/* A few training steps before a trigger, as a loop runs them: each polls
 * the saver (as the documented loop does once per step) and ends in a
 * collective (the gradients' allreduce). */
static void steps_before_trigger(state *st)
{
    for (int i = 0; i < 3; i++) {
        if (ckpt_mpi_saver_poll(st->s, NULL) != 0)
            die("poll");
        calm_barrier();
    }
}

/* A step's forward and backward passes: read this rank's state. */
static volatile double sink;

static double read_pass(const state *st)
{
    const float *p = st->part;
    size_t n = st->local / sizeof(float);
    float acc = 0;
    for (size_t i = 0; i < n; i++)
        acc += p[i];
    return (double)acc;
}

/* save_async's wait against a memcpy of the rank's bytes (all ranks
 * copying at once), the order alternating. `fenced` (the saver fenced
 * once, so save_async leaves its large pieces to the rank's thread): a
 * step that only reads the state and ends in a collective, then the
 * mutation fence, whose wait counts too. */
static void rep_blocking(state *st, int r, int64_t step, int fenced)
{
    double copy = 0, block = 0, poll = 0, snap, t0;
    ckpt_saver_metrics m;
    for (int k = 0; k < 2; k++) {
        steps_before_trigger(st);
        if ((k == 0) == (r % 2 == 0)) {
            copy = copy_own_s(st);
            continue;
        }
        t0 = now();
        if (ckpt_mpi_saver_save_async(st->s, step, NULL) != 0)
            die("save_async");
        block = now() - t0;
        if (fenced) {
            sink += read_pass(st);
            calm_barrier(); /* the gradients' allreduce */
            t0 = now();
            if (ckpt_mpi_saver_mutation_fence(st->s) != 0)
                die("fence");
            block += now() - t0;
        } else {
            t0 = now();
            ckpt_mpi_saver_poll(st->s, NULL); /* a step's price meanwhile */
            poll = now() - t0;
        }
        if (ckpt_mpi_saver_wait(st->s, -1) != 0)
            die("wait");
    }
    if (fenced) {
        ratio("blocking with the fence vs memcpy of the rank's bytes (worst "
              "rank)",
              st->mib, "le", 0.1, reduce(block / copy, MPI_MAX));
        return;
    }
    ckpt_mpi_saver_get_metrics(st->s, &m);
    snap = m.blocking_s_last;
    ratio("blocking vs memcpy of the rank's bytes (worst rank)", st->mib, "le",
          1.25, reduce(block / copy, MPI_MAX));
    ratio("slowest rank's blocking vs slowest rank's memcpy", st->mib, "le",
          1.25, reduce(block, MPI_MAX) / reduce(copy, MPI_MAX));
    info("snapshot, worst rank, ms", reduce(snap, MPI_MAX) * 1e3);
    info("save_async beyond the snapshot, worst rank, ms",
         reduce(block - snap, MPI_MAX) * 1e3);
    info("memcpy of the rank's bytes, all at once, worst rank, ms",
         reduce(copy, MPI_MAX) * 1e3);
    info("poll with a save in flight, worst rank, us",
         reduce(poll, MPI_MAX) * 1e6);
}

/* Sync save against dd, and dd against itself (the noise floor): three
 * runs back to back, the reference dd always next to the save, the order
 * alternating between repetitions (save, dd, dd twin; then dd twin, dd,
 * save). Each rank's save ends with ckpt_mpi_saver_wait, untimed, so the
 * deletions retention started never overlap the next measurement. */
static void rep_throughput(state *st, int r, int64_t step)
{
    char path[4200];
    double save = 0, dd = 0, twin = 0, t0;
    unsigned long long bytes = (unsigned long long)st->total;
    snprintf(path, sizeof(path), "%s/dd.out", st->dir);
    for (int k = 0; k < 3; k++) {
        int slot = r % 2 == 0 ? k : 2 - k; /* 0 save, 1 dd, 2 twin */
        if (slot == 1) {
            dd = reduce(dd_s(path, bytes), MPI_MAX);
            continue;
        }
        if (slot == 2) {
            twin = reduce(dd_s(path, bytes), MPI_MAX);
            continue;
        }
        calm_barrier();
        t0 = now();
        if (ckpt_mpi_saver_save(st->s, step, NULL) != 0)
            die("save");
        save = reduce(now() - t0, MPI_MAX);
        if (ckpt_mpi_saver_wait(st->s, -1) != 0)
            die("wait");
    }
    ratio("sync save vs dd conv=fsync of the same bytes (throughput)", st->mib,
          "ge", 0.9, dd / save);
    ratio("dd conv=fsync vs dd conv=fsync (noise floor)", st->mib, "noise", 0,
          dd / twin);
    info("sync save, MiB/s", st->total / 1048576.0 / save);
    info("dd conv=fsync, MiB/s", st->total / 1048576.0 / dd);
}

/* Restore against read(), and read() against itself (the noise floor),
 * ordered as rep_throughput orders its runs. */
static void rep_restore(state *st, int r)
{
    ckpt_buf latest = CKPT_BUF_INIT;
    char path[4200];
    double rs = 0, rd = 0, twin = 0, t0;
    /* One untimed restore first (the latest checkpoint's name), then one
     * untimed read() of this rank's data file: its pages in the page cache
     * for the three timed runs alike. A save writes with O_DIRECT, and the
     * restore alone does not always leave the file cached (a restore that
     * reads around the page cache, as a remembered verdict may have it):
     * run 22's read() against read() then ran 0.6-39x, whichever read came
     * first paying the disk. */
    if (ckpt_mpi_saver_restore_latest(st->s, &latest) != 0)
        die("restore");
    data_path(path, sizeof(path), latest.ptr);
    (void)read_file_s(path, st->warm, st->warm_cap);
    for (int k = 0; k < 3; k++) {
        int slot = r % 2 == 0 ? k : 2 - k; /* 0 restore, 1 read, 2 twin */
        calm_barrier();
        if (slot == 0) {
            t0 = now();
            if (ckpt_mpi_saver_restore_latest(st->s, NULL) != 0)
                die("restore");
            rs = reduce(now() - t0, MPI_MAX);
        } else {
            double t =
                reduce(read_file_s(path, st->warm, st->warm_cap), MPI_MAX);
            if (slot == 1)
                rd = t;
            else
                twin = t;
        }
    }
    ratio("restore vs read() of each rank's file", st->mib, "ge", 0.9, rd / rs);
    ratio("read() vs read() (noise floor)", st->mib, "noise", 0, rd / twin);
    ckpt_buf_dispose(&latest);
}

static void open_saver(state *st);

static void setup(state *st)
{
    int64_t rows = (int64_t)(st->mib * 1024 * 1024 / 4096); /* 1024 floats */
    int64_t lo = rows * g_rank / g_size, hi = rows * (g_rank + 1) / g_size;
    st->local = (size_t)(hi - lo) * 4096;
    st->rep_bytes = (size_t)(st->mib * 1024 * 1024 / 100) & ~(size_t)3;
    st->part = malloc(st->local);
    st->rep = malloc(st->rep_bytes);
    st->warm_cap = st->local + st->rep_bytes + ((size_t)1 << 20);
    st->warm = malloc(st->warm_cap);
    st->total = (double)rows * 4096 + (double)st->rep_bytes;
    memset(st->part, 1, st->local);
    memset(st->rep, 2, st->rep_bytes);
    memset(st->warm, 0, st->warm_cap);
    open_saver(st);
}

/* Open the saver on st->dir and register the state (collective). */
static void open_saver(state *st)
{
    int64_t rows = (int64_t)(st->mib * 1024 * 1024 / 4096);
    int64_t lo = rows * g_rank / g_size, hi = rows * (g_rank + 1) / g_size;
    ckpt_slice_extent ext[2] = {{lo, hi - lo}, {0, CKPT_SLICE_FULL}};
    ckpt_mpi_saver_options opts = CKPT_MPI_SAVER_OPTIONS_INIT;
    ckpt_var v;
    opts.base.direct_io = st->buffered ? CKPT_DIRECT_IO_OFF : 0;
    opts.base.busy_policy = st->policy;
    if (ckpt_mpi_saver_open(&st->s, MPI_COMM_WORLD, st->dir, &opts) != 0)
        die("open");
    memset(&v, 0, sizeof(v));
    v.name = "part";
    v.dtype = CKPT_DT_FLOAT;
    v.shape.rank = 2;
    v.shape.dims[0] = rows;
    v.shape.dims[1] = 1024;
    v.data = st->part;
    if (ckpt_mpi_saver_add_partitioned(st->s, &v, ext) != 0)
        die("add part");
    v.name = "rep";
    v.shape.rank = 1;
    v.shape.dims[0] = (int64_t)(st->rep_bytes / 4);
    v.data = st->rep;
    if (ckpt_mpi_saver_add_replicated(st->s, &v) != 0)
        die("add rep");
    if (ckpt_mpi_saver_check(st->s) != 0)
        die("check");
}

/* One unmeasured save of each kind (staging image, writer thread), then
 * this rank's bytes from its data file, and one unmeasured copy. */
static void warm_up(state *st)
{
    ckpt_buf prefix = CKPT_BUF_INIT;
    char path[4200];
    struct stat sb;
    if (ckpt_mpi_saver_save_async(st->s, 1, NULL) != 0 ||
        ckpt_mpi_saver_wait(st->s, -1) != 0)
        die("warm-up save_async");
    if (ckpt_mpi_saver_save(st->s, 2, &prefix) != 0)
        die("warm-up save");
    data_path(path, sizeof(path), prefix.ptr);
    if (stat(path, &sb) != 0) {
        fprintf(stderr, "bench_mpi_save: stat %s failed\n", path);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    st->own_bytes = (size_t)sb.st_size;
    ckpt_buf_dispose(&prefix);
    copy_own_s(st); /* the reference's first touch, unmeasured too */
}

int main(int argc, char **argv)
{
    int provided, reps = 5;
    const char *entries = NULL;
    state st;
    memset(&st, 0, sizeof(st));
    st.mib = 256;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--mib") == 0 && i + 1 < argc)
            st.mib = strtod(argv[++i], NULL);
        else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
            reps = (int)strtol(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--buffered") == 0)
            st.buffered = 1;
        else if (strcmp(argv[i], "--policy") == 0 && i + 1 < argc) {
            i++;
            st.policy = strcmp(argv[i], "wait") == 0       ? CKPT_BUSY_WAIT
                        : strcmp(argv[i], "coalesce") == 0 ? CKPT_BUSY_COALESCE
                                                           : CKPT_BUSY_SKIP;
        } else if (strcmp(argv[i], "--entries") == 0 && i + 1 < argc)
            entries = argv[++i];
        else
            st.dir = argv[i];
    }
    if (!st.dir || reps < 1) {
        if (g_rank == 0)
            fprintf(stderr,
                    "usage: mpiexec -n R %s DIR [--mib M] [--reps K] "
                    "[--buffered] [--entries N,...]\n",
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
            bench_entries(st.dir, n);
            p = *end == ',' ? end + 1 : end;
        }
        MPI_Finalize();
        return 0;
    }

    setup(&st);
    warm_up(&st);
    for (int r = 0; r < reps; r++) {
        rep_blocking(&st, r, 1000 + 2 * r, 0);
        rep_throughput(&st, r, 1001 + 2 * r);
        rep_restore(&st, r);
        if (g_rank == 0)
            fflush(stdout);
    }
    /* A saver whose loop keeps the fence rule (one that has not would
     * have overlapped the figures above). */
    ckpt_mpi_saver_free(st.s);
    open_saver(&st);
    if (ckpt_mpi_saver_mutation_fence(st.s) != 0 ||
        ckpt_mpi_saver_save_async(st.s, 4999, NULL) != 0 ||
        ckpt_mpi_saver_mutation_fence(st.s) != 0 ||
        ckpt_mpi_saver_wait(st.s, -1) != 0) /* its staging image, unmeasured */
        die("fenced warm-up");
    for (int r = 0; r < reps; r++) {
        rep_blocking(&st, r, 5000 + r, 1);
        if (g_rank == 0)
            fflush(stdout);
    }
    ckpt_mpi_saver_free(st.s);
    free(st.part);
    free(st.rep);
    free(st.warm);
    MPI_Finalize();
    return 0;
}
