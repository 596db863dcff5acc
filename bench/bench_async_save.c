/* bench/bench_async_save.c - measures, in one run, the async saver against
 * references taken on the same machine at the same time, and prints JSON:
 *
 *   blocking:   save_async's wait vs one memcpy of the state into a warm
 *               buffer (also while the previous write is still running,
 *               with SKIP and with COALESCE)
 *   throughput: a save's write vs write()+fsync()+rename of the same bytes
 *               from one buffer, and vs `dd bs=4M conv=fsync`
 *   loop:       a memory-bound loop rewriting the whole state every step,
 *               with a checkpoint every 2 and every 10 write-times: extra
 *               time per checkpoint vs a memcpy, and total slowdown
 *   restore:    cold restore with checksums vs read() of the data file
 *
 * usage: bench_async_save [--dir DIR] [--sizes MiB,MiB,...] [--reps N] */
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

static double time_dd(const char *dir, size_t n)
{
    char cmd[4300];
    double t0;
    snprintf(cmd, sizeof(cmd),
             "dd if=/dev/zero of=%s/dd.bin bs=4M count=%zu conv=fsync "
             "status=none",
             dir, n / (4u << 20));
    t0 = now();
    if (system(cmd) != 0)
        return -1.0;
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

static double time_plain_read(const char *path, char *buf, size_t n)
{
    double t0;
    int fd;
    drop_cache(path);
    t0 = now();
    fd = open(path, O_RDONLY);
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

static void bench_size(const char *dir, size_t mib, int reps, int first)
{
    state s;
    ckpt_saver *sv;
    ckpt_saver_metrics m;
    char *warm;
    double memcpy_s, blocking[16], write_s[16], plain_s, dd_s;
    double busy_skip_s, busy_coalesce_s, restore_s, read_s;
    int64_t stepno = 0;
    char data_path[4200];
    ckpt_buf latest = CKPT_BUF_INIT;

    state_init(&s, mib << 20);
    warm = malloc(s.total);
    memset(warm, 0, s.total);
    memcpy_s = time_memcpy(&s, warm, reps);

    /* Blocking time and write time of idle async saves. */
    sv = open_saver(dir, &s, CKPT_BUSY_SKIP);
    for (int r = 0; r < reps; r++) {
        if (ckpt_saver_save_async(sv, ++stepno, NULL) < 0)
            die("save_async");
        if (ckpt_saver_wait(sv, 0, -1) < 0)
            die("wait");
        ckpt_saver_get_metrics(sv, &m);
        blocking[r] = m.blocking_s_last;
        write_s[r] = m.write_s_last;
    }
    /* A trigger while the previous write runs: SKIP. */
    if (ckpt_saver_save_async(sv, ++stepno, NULL) < 0)
        die("save_async");
    {
        double t0 = now();
        int err = ckpt_saver_save_async(sv, ++stepno, NULL);
        busy_skip_s = now() - t0;
        if (err != CKPT_EBUSY && err != 0)
            die("save_async while busy");
    }
    if (ckpt_saver_wait(sv, 0, -1) < 0)
        die("wait");
    if (ckpt_saver_latest(sv, &latest) < 0)
        die("latest");
    snprintf(data_path, sizeof(data_path), "%s.data-00000-of-00001",
             latest.ptr);
    /* Interleaved, so both see the same (host) caching: medians. */
    {
        double rs[16], rd[16];
        for (int r = 0; r < reps; r++) {
            double t0;
            rd[r] = time_plain_read(data_path, warm, s.total);
            drop_cache(data_path);
            t0 = now();
            if (ckpt_saver_restore(sv, latest.ptr) < 0)
                die("restore");
            rs[r] = now() - t0;
        }
        restore_s = median(rs, reps);
        read_s = median(rd, reps);
    }
    ckpt_saver_free(sv);

    /* COALESCE: the second trigger snapshots into the second image. */
    sv = open_saver(dir, &s, CKPT_BUSY_COALESCE);
    if (ckpt_saver_save_async(sv, ++stepno, NULL) < 0)
        die("save_async");
    {
        double t0 = now();
        if (ckpt_saver_save_async(sv, ++stepno, NULL) < 0)
            die("save_async while busy (coalesce)");
        busy_coalesce_s = now() - t0;
    }
    if (ckpt_saver_wait(sv, 0, -1) < 0)
        die("wait");
    ckpt_saver_free(sv);

    plain_s = time_plain_write(dir, warm, s.total);
    dd_s = time_dd(dir, s.total);

    /* The training loop. */
    {
        double write_med = median(write_s, reps);
        double t_step, base, with2, with10;
        int steps, every2, every10, n2, n10;
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
        /* At least 4 periods and about 4 s per loop, whole periods: short
         * loops of a small state drown in a shared machine's noise. */
        steps = every10 * 4;
        while (steps * t_step < 4.0)
            steps += every10;
        {
            /* Interleaved repetitions; medians damp a noisy machine. */
            double b[16], w2[16], w10[16];
            for (int r = 0; r < reps; r++) {
                b[r] = run_loop(&s, sv, steps, 0, &stepno);
                w2[r] = run_loop(&s, sv, steps, every2, &stepno);
                w10[r] = run_loop(&s, sv, steps, every10, &stepno);
            }
            /* Each loop with saves against the plain loop run just before
             * it (paired ratios), so slow drifts of a shared machine
             * cancel; the median ratio gives the slowdown. */
            for (int r = 0; r < reps; r++) {
                w2[r] /= b[r];
                w10[r] /= b[r];
            }
            base = median(b, reps);
            with2 = median(w2, reps) * base;
            with10 = median(w10, reps) * base;
        }
        n2 = saves_in(steps, every2);
        n10 = saves_in(steps, every10);
        ckpt_saver_get_metrics(sv, &m);
        ckpt_saver_free(sv);

        printf("%s  {\"state_mib\": %zu, \"tensors\": %d,\n",
               first ? "" : ",\n", mib, NTENSORS);
        printf("   \"memcpy_s\": %.6f,\n", memcpy_s);
        printf("   \"blocking_s\": %.6f, \"blocking_vs_memcpy\": %.3f,\n",
               median(blocking, reps), median(blocking, reps) / memcpy_s);
        printf("   \"blocking_busy_skip_s\": %.6f, "
               "\"blocking_busy_coalesce_s\": %.6f, "
               "\"blocking_busy_coalesce_vs_memcpy\": %.3f,\n",
               busy_skip_s, busy_coalesce_s, busy_coalesce_s / memcpy_s);
        printf("   \"save_write_s\": %.4f, \"plain_write_fsync_s\": %.4f, "
               "\"dd_fsync_s\": %.4f,\n",
               write_med, plain_s, dd_s);
        printf(
            "   \"throughput_vs_plain\": %.3f, \"throughput_vs_dd\": %.3f,\n",
            plain_s / write_med, dd_s > 0 ? dd_s / write_med : -1.0);
        printf("   \"loop_step_s\": %.5f, \"loop_steps\": %d,\n", t_step,
               steps);
        printf("   \"every_2x_write\": {\"checkpoints\": %d, "
               "\"extra_per_checkpoint_s\": %.5f, "
               "\"extra_vs_memcpy\": %.3f, \"slowdown\": %.4f},\n",
               n2, (with2 - base) / (n2 ? n2 : 1),
               (with2 - base) / (n2 ? n2 : 1) / memcpy_s, with2 / base - 1.0);
        printf("   \"every_10x_write\": {\"checkpoints\": %d, "
               "\"extra_per_checkpoint_s\": %.5f, \"slowdown\": %.4f},\n",
               n10, (with10 - base) / (n10 ? n10 : 1), with10 / base - 1.0);
        printf("   \"loop_saves_skipped\": %" PRIu64 ",\n", m.saves_skipped);
        printf("   \"restore_s\": %.4f, \"plain_read_s\": %.4f, "
               "\"restore_vs_read\": %.3f}",
               restore_s, read_s, read_s / restore_s);
        fflush(stdout);
    }
    ckpt_buf_dispose(&latest);
    free(warm);
    state_free(&s);
}

int main(int argc, char **argv)
{
    const char *dir = "bench-tmp";
    char sizes[256] = "64,256,1024";
    int reps = 5;
    int first = 1;
    char *tok, *save = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
            dir = argv[++i];
        else if (strcmp(argv[i], "--sizes") == 0 && i + 1 < argc)
            snprintf(sizes, sizeof(sizes), "%s", argv[++i]);
        else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
            reps = (int)strtol(argv[++i], NULL, 10);
        else {
            fprintf(stderr, "usage: bench_async_save [--dir DIR] "
                            "[--sizes MiB,...] [--reps N]\n");
            return 2;
        }
    }
    if (reps < 1 || reps > 16)
        reps = 5;
    mkdir(dir, 0755);
    printf("{\"benchmark\": \"async_save\", \"results\": [\n");
    for (tok = strtok_r(sizes, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        size_t mib = (size_t)strtoul(tok, NULL, 10);
        if (mib < 1)
            continue;
        bench_size(dir, mib, reps, first);
        first = 0;
    }
    printf("\n]}\n");
    return 0;
}
