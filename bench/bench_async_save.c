/* bench/bench_async_save.c - measures the async saver against references
 * taken on the same machine in the same repetition, and prints one line
 * per paired ratio (tab-separated: "ratio", figure, le|ge, target, value),
 * which scripts/bench.sh turns into medians, ranges and verdicts:
 *
 *   blocking:   save_async's wait vs one memcpy of the state into a warm
 *               buffer timed just before it; and with the mutation fence
 *               (the copy overlaps a pass that reads the state), the
 *               trigger's and the fence's waits together vs that memcpy
 *   write:      write()+fsync()+rename of the same bytes vs the save's
 *               write (how much faster the save writes)
 *   loop:       a memory-bound loop rewriting the whole state every step,
 *               with a checkpoint every 2 and every 10 write-times, each
 *               against the plain loop run just before it: extra time per
 *               checkpoint vs a memcpy, and the slowdown
 *   restore:    restore with checksums vs read() of the data file, both
 *               cold (dropped from the page cache) and both cached
 *
 * usage: bench_async_save [--dir DIR] [--sizes MiB,...] [--reps N]
 *                         [--quick] [--restore-only]
 *        (--restore-only: the saves and restores, not the fence or loop)
 *        bench_async_save --memcpy MiB     median of 5 memcpys, seconds
 *        bench_async_save --drop-cache FILE...  evict files from the cache
 */
#include "ckpt.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define NTENSORS 64

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void die(const char *what)
{
    fprintf(stderr, "bench: %s: %s\n", what, ckpt_error_last()->message);
    exit(1);
}

typedef struct state {
    float *t[NTENSORS];
    size_t tensor_bytes;
    size_t total;
} state;

static void state_init(state *s, size_t total)
{
    s->tensor_bytes = total / NTENSORS;
    s->total = s->tensor_bytes * NTENSORS;
    for (int i = 0; i < NTENSORS; i++) {
        s->t[i] = malloc(s->tensor_bytes);
        if (!s->t[i]) {
            fprintf(stderr, "bench: out of memory\n");
            exit(1);
        }
        memset(s->t[i], i + 1, s->tensor_bytes);
    }
}

static void state_free(state *s)
{
    for (int i = 0; i < NTENSORS; i++)
        free(s->t[i]);
}

/* One training "step": rewrite every element (memory bound). */
static void step(state *s)
{
    size_t n = s->tensor_bytes / sizeof(float);
    for (int i = 0; i < NTENSORS; i++) {
        float *p = s->t[i];
        for (size_t j = 0; j < n; j++)
            p[j] = p[j] * 0.999f + 0.001f;
    }
}

static double time_memcpy(state *s, char *warm, int reps)
{
    double v[16];
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        for (int i = 0; i < NTENSORS; i++)
            memcpy(warm + (size_t)i * s->tensor_bytes, s->t[i],
                   s->tensor_bytes);
        v[r] = now() - t0;
    }
    return median(v, reps);
}

/* A step's forward pass: read the whole state (memory bound). */
static double read_pass(const state *s)
{
    double sum = 0;
    size_t n = s->tensor_bytes / sizeof(float);
    for (int i = 0; i < NTENSORS; i++) {
        const float *p = s->t[i];
        float acc = 0;
        for (size_t j = 0; j < n; j++)
            acc += p[j];
        sum += acc;
    }
    return sum;
}

static void ratio(const char *figure, size_t mib, const char *op, double target,
                  double value)
{
    printf("ratio\t%s, %zu MiB\t%s\t%g\t%.6f\n", figure, mib, op, target,
           value);
    fflush(stdout);
}

static ckpt_saver *open_saver(const char *dir, state *s, int policy)
{
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_saver *sv = NULL;
    o.busy_policy = policy;
    o.max_to_keep = 2;
    if (ckpt_saver_open(&sv, dir, &o) < 0)
        die("open");
    for (int i = 0; i < NTENSORS; i++) {
        char name[32];
        ckpt_var v = {name,
                      CKPT_DT_FLOAT,
                      {1, {(int64_t)(s->tensor_bytes / sizeof(float))}},
                      s->t[i],
                      NULL,
                      NULL,
                      NULL};
        snprintf(name, sizeof(name), "layer_%02d/kernel", i);
        if (ckpt_saver_add_var(sv, &v) < 0)
            die("add_var");
    }
    if (ckpt_saver_reserve(sv) < 0)
        die("reserve");
    return sv;
}

/* write()+fsync()+rename of the state from one buffer: the reference a
 * save is compared with. */
static double time_plain_write(const char *dir, const char *buf, size_t n)
{
    char tmp[4096], fin[4096];
    double t0;
    int fd;
    snprintf(tmp, sizeof(tmp), "%s/plain.tmp", dir);
    snprintf(fin, sizeof(fin), "%s/plain.bin", dir);
    t0 = now();
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        perror("bench: open");
        exit(1);
    }
    for (size_t off = 0; off < n;) {
        ssize_t w = write(fd, buf + off, n - off);
        if (w <= 0) {
            perror("bench: write");
            exit(1);
        }
        off += (size_t)w;
    }
    if (fsync(fd) != 0 || close(fd) != 0 || rename(tmp, fin) != 0) {
        perror("bench: fsync/rename");
        exit(1);
    }
    return now() - t0;
}

static void drop_cache(const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd >= 0) {
        fdatasync(fd);
        posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        close(fd);
    }
}

/* read() of the file as it is in the page cache (nothing dropped). */
static double time_plain_read_cached(const char *path, char *buf, size_t n)
{
    double t0 = now();
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        perror("bench: open for read");
        exit(1);
    }
    for (size_t off = 0; off < n;) {
        ssize_t r = read(fd, buf + off, n - off);
        if (r <= 0)
            break;
        off += (size_t)r;
    }
    close(fd);
    return now() - t0;
}

/* read() of the file dropped from the page cache first. */
static double time_plain_read(const char *path, char *buf, size_t n)
{
    drop_cache(path);
    return time_plain_read_cached(path, buf, n);
}

/* Run `steps` steps with a save_async every `every` steps (0: never);
 * returns the loop's wall time, including the wait for the last write.
 * Saves fall half-way through each period (steps every/2, every/2 +
 * every, ...), as in a long run, where no save lands on the last step and
 * leaves its whole write to be waited for. */
static double run_loop(state *s, ckpt_saver *sv, int steps, int every,
                       int64_t *step_counter)
{
    double t0 = now();
    for (int i = 1; i <= steps; i++) {
        step(s);
        (*step_counter)++;
        if (every > 0 && i % every == every / 2) {
            int err = ckpt_saver_save_async(sv, *step_counter, NULL);
            if (err < 0 && err != CKPT_EBUSY)
                die("save_async in loop");
        }
    }
    if (ckpt_saver_wait(sv, 0, -1) < 0)
        die("wait");
    return now() - t0;
}

/* How many saves run_loop triggers in `steps` steps. */
static int saves_in(int steps, int every)
{
    int n = 0;
    for (int i = 1; i <= steps; i++)
        n += i % every == every / 2;
    return n;
}

static void bench_size(const char *dir, size_t mib, int reps, int quick,
                       int restore_only)
{
    state s;
    ckpt_saver *sv;
    ckpt_saver_metrics m;
    char *warm;
    double write_s[16];
    int64_t stepno = 0;
    char data_path[4200];
    ckpt_buf latest = CKPT_BUF_INIT;
    volatile double sink = 0;

    state_init(&s, mib << 20);
    warm = malloc(s.total);
    memset(warm, 0, s.total);
    (void)time_memcpy(&s, warm, 2); /* warm up both buffers */

    /* Idle async saves: blocking vs a memcpy just before; the write vs
     * write()+fsync()+rename just after. */
    sv = open_saver(dir, &s, CKPT_BUSY_SKIP);
    for (int r = 0; r < reps; r++) {
        double memcpy_s = time_memcpy(&s, warm, 1), plain_s;
        if (ckpt_saver_save_async(sv, ++stepno, NULL) < 0)
            die("save_async");
        if (ckpt_saver_wait(sv, 0, -1) < 0)
            die("wait");
        ckpt_saver_get_metrics(sv, &m);
        write_s[r] = m.write_s_last;
        plain_s = time_plain_write(dir, warm, s.total);
        ratio("blocking vs memcpy", mib, "le", 1.0,
              m.blocking_s_last / memcpy_s);
        ratio("write+fsync vs the save's write", mib, "ge", 1.0,
              plain_s / m.write_s_last);
    }
    if (ckpt_saver_latest(sv, &latest) < 0)
        die("latest");
    snprintf(data_path, sizeof(data_path), "%s.data-00000-of-00001",
             latest.ptr);
    /* Restores, interleaved with read() of the same file: cold, then
     * cached (the previous read left it in the cache). */
    for (int r = 0; r < reps; r++) {
        double t0, rd, rs;
        rd = time_plain_read(data_path, warm, s.total);
        drop_cache(data_path);
        t0 = now();
        if (ckpt_saver_restore(sv, latest.ptr) < 0)
            die("restore");
        rs = now() - t0;
        ratio("cold restore vs read()", mib, "ge", 0.9, rd / rs);
    }
    /* The last cold restore may have read around the page cache: read
     * the file once so that the first pair is cached for both. */
    (void)time_plain_read_cached(data_path, warm, s.total);
    for (int r = 0; r < reps; r++) {
        double t0, rd, rs;
        rd = time_plain_read_cached(data_path, warm, s.total);
        t0 = now();
        if (ckpt_saver_restore(sv, latest.ptr) < 0)
            die("restore");
        rs = now() - t0;
        ratio("cached restore vs read()", mib, "ge", 0.9, rd / rs);
    }
    ckpt_saver_free(sv);
    if (restore_only)
        goto done;

    /* Overlapped snapshots: trigger, a pass that only reads the state,
     * the fence; the waits of trigger and fence vs a memcpy. */
    sv = open_saver(dir, &s, CKPT_BUSY_SKIP);
    if (ckpt_saver_mutation_fence(sv) < 0)
        die("fence");
    for (int r = 0; r < reps; r++) {
        double memcpy_s = time_memcpy(&s, warm, 1);
        if (ckpt_saver_save_async(sv, ++stepno, NULL) < 0)
            die("save_async (overlapped)");
        sink += read_pass(&s);
        if (ckpt_saver_mutation_fence(sv) < 0)
            die("fence");
        ckpt_saver_get_metrics(sv, &m);
        if (ckpt_saver_wait(sv, 0, -1) < 0)
            die("wait");
        ratio("blocking with the fence vs memcpy", mib, "le", 0.1,
              m.blocking_s_last / memcpy_s);
    }
    ckpt_saver_free(sv);

    /* The training loop. */
    {
        double write_med = median(write_s, reps);
        double t_step, min_loop_s = quick ? 2.0 : 4.0;
        int steps, every2, every10, n2, n10, periods = quick ? 2 : 4;
        sv = open_saver(dir, &s, CKPT_BUSY_SKIP);
        /* Steady-state step time: the fastest of a few short runs (the
         * first steps after allocation or a restore run slow). */
        t_step = run_loop(&s, sv, 3, 0, &stepno) / 3.0;
        for (int r = 0; r < 3; r++) {
            double t = run_loop(&s, sv, 5, 0, &stepno) / 5.0;
            if (t < t_step)
                t_step = t;
        }
        every2 = (int)(2.0 * write_med / t_step + 0.5);
        every10 = (int)(10.0 * write_med / t_step + 0.5);
        if (every2 < 1)
            every2 = 1;
        if (every10 < 1)
            every10 = 1;
        /* Whole periods, long enough that a shared machine's noise does
         * not drown a small state's loop. */
        steps = every10 * periods;
        while (steps * t_step < min_loop_s)
            steps += every10;
        /* ... and short enough that slow writes (a loaded machine) do not
         * stretch the benchmark: at least two periods. */
        while (steps > 2 * every10 && steps * t_step > 4 * min_loop_s)
            steps -= every10;
        n2 = saves_in(steps, every2);
        n10 = saves_in(steps, every10);
        for (int r = 0; r < reps; r++) {
            /* Each loop with saves against the plain loop just before it
             * (paired), so slow drifts of a shared machine cancel. */
            double memcpy_s = time_memcpy(&s, warm, 1);
            double b = run_loop(&s, sv, steps, 0, &stepno);
            double w2 = run_loop(&s, sv, steps, every2, &stepno);
            double b2 = run_loop(&s, sv, steps, 0, &stepno);
            double w10 = run_loop(&s, sv, steps, every10, &stepno);
            ratio("extra per checkpoint vs memcpy (every 2 write-times)", mib,
                  "le", 2.0, (w2 - b) / (n2 ? n2 : 1) / memcpy_s);
            ratio("loop slowdown (every 10 write-times)", mib, "le", 0.03,
                  w10 / b2 - 1.0);
        }
        ckpt_saver_get_metrics(sv, &m);
        ckpt_saver_free(sv);
        fprintf(stderr,
                "bench_async_save: %zu MiB: step %.4f s, %d steps per loop, "
                "%d and %d checkpoints, %" PRIu64 " triggers skipped\n",
                mib, t_step, steps, n2, n10, m.saves_skipped);
    }
done:
    (void)sink;
    ckpt_buf_dispose(&latest);
    free(warm);
    state_free(&s);
}

int main(int argc, char **argv)
{
    const char *dir = "bench-tmp";
    char sizes[256] = "64,256,1024";
    int reps = 5, quick = 0, restore_only = 0;
    char *tok, *save = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc) {
            dir = argv[++i];
        } else if (strcmp(argv[i], "--sizes") == 0 && i + 1 < argc) {
            snprintf(sizes, sizeof(sizes), "%s", argv[++i]);
        } else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
            reps = (int)strtol(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--quick") == 0) {
            quick = 1;
        } else if (strcmp(argv[i], "--restore-only") == 0) {
            restore_only = 1;
        } else if (strcmp(argv[i], "--memcpy") == 0 && i + 1 < argc) {
            state st;
            char *warm;
            size_t mib = (size_t)strtoul(argv[++i], NULL, 10);
            state_init(&st, (mib ? mib : 1) << 20);
            warm = malloc(st.total);
            if (!warm)
                return 1;
            memset(warm, 0, st.total);
            (void)time_memcpy(&st, warm, 2);
            printf("%.6f\n", time_memcpy(&st, warm, 5));
            free(warm);
            state_free(&st);
            return 0;
        } else if (strcmp(argv[i], "--drop-cache") == 0) {
            for (i++; i < argc; i++)
                drop_cache(argv[i]);
            return 0;
        } else {
            fprintf(stderr, "usage: bench_async_save [--dir DIR] "
                            "[--sizes MiB,...] [--reps N] [--quick]\n"
                            "                       [--restore-only]\n"
                            "       bench_async_save --memcpy MiB\n"
                            "       bench_async_save --drop-cache FILE...\n");
            return 2;
        }
    }
    if (reps < 1 || reps > 16)
        reps = 5;
    mkdir(dir, 0755);
    for (tok = strtok_r(sizes, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        size_t mib = (size_t)strtoul(tok, NULL, 10);
        if (mib < 1)
            continue;
        bench_size(dir, mib, reps, quick, restore_only);
    }
    return 0;
}
