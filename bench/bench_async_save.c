/* bench/bench_async_save.c - measures the async saver against references
 * taken on the same machine in the same repetition, and prints one line
 * per paired ratio (tab-separated: "ratio", figure, le|ge|noise, target,
 * value), which scripts/bench.sh turns into medians, ranges and verdicts:
 *
 *   blocking:   save_async's wait vs one memcpy of the state into a warm
 *               buffer timed just before it; and with the mutation fence
 *               (the copy overlaps a pass that reads the state), the
 *               trigger's and the fence's waits together vs that memcpy
 *   write:      write()+fsync()+rename of the same bytes vs the save's
 *               write (how much faster the save writes); and that
 *               reference against a second one right after it (op
 *               "noise": the spread two identical writes give here)
 *   loop:       a memory-bound loop rewriting the whole state every step,
 *               in segments of whole periods (at least 1 s; 0.6 s with
 *               --quick) with a checkpoint every 2 or every 10
 *               write-times, each paired with a segment of as many steps
 *               without (four pairs per repetition, in the orders AB BA
 *               BA AB; each segment ends waiting for its last write): the
 *               median pair's extra time per checkpoint vs a memcpy, and
 *               its slowdown; and, every 10 write-times, the two segments
 *               without saves that follow each other (the first pair's
 *               second, the second pair's first) against each other (op
 *               "noise": the slowdown two identical segments show here)
 *   restore:    restore with checksums vs read() of the data file, both
 *               cold (dropped from the page cache; each side first in
 *               turn) and both cached; and cold read() vs cold read(),
 *               paired the same way (op "noise": the noise floor of the
 *               cold figure, no target); and cold, each in a process of
 *               its own that has done nothing else (--restore-child,
 *               --read-child: a job restarting from its checkpoint, which
 *               pays what a process measures once), each timing only its
 *               restore or read(), next to two such read() processes
 *               against each other (op "noise": its noise floor)
 *
 * usage: bench_async_save [--dir DIR] [--sizes MiB,...] [--reps N]
 *                         [--quick] [--only save|loop] [--restore-only]
 *        --only save: only the blocking and write figures; --only loop:
 *        those the loop needs (the write time) and the loop figures;
 *        --restore-only: the saves and restores, not the fence or loop.
 *        BENCH_TRACE=1 prints every segment's time on stderr;
 *        BENCH_LOG=1 the savers' DEBUG log (how each restore read).
 *        bench_async_save --memcpy MiB     median of 5 memcpys, seconds
 *        bench_async_save --drop-cache FILE...  evict files from the cache
 *        bench_async_save --restore-child DIR PREFIX MiB  (the bench's
 *            own children: a new process's timed restore, seconds)
 *        bench_async_save --read-child FILE MiB  (a new process of the
 *            restore child's size: its timed read() in 256 KiB pieces,
 *            seconds)
 *        bench_async_save --run-timed PROGRAM ARGS...  run a program and
 *            print, after its output, "timed: wall_s=W runqueue_s=Q": its
 *            wall-clock time and the time its main thread was ready to run
 *            but waited for a CPU other threads held
 */
#include "bench_util.h"
#include "ckpt.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NTENSORS 64

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

static ckpt_saver *open_saver_reserved(const char *dir, state *s, int policy,
                                       int reserve)
{
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_saver *sv = NULL;
    o.busy_policy = policy;
    o.max_to_keep = 2;
    if (getenv("BENCH_LOG")) {
        o.log = ckpt_log_stderr;
        o.log_level = CKPT_LOG_DEBUG;
    }
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
    if (reserve && ckpt_saver_reserve(sv) < 0)
        die("reserve");
    return sv;
}

static ckpt_saver *open_saver(const char *dir, state *s, int policy)
{
    return open_saver_reserved(dir, s, policy, 1);
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

/* Seconds this thread has spent runnable but waiting for a CPU that other
 * threads held (the kernel's schedstat; 0 where it is not available). */
static double runqueue_s(void)
{
    unsigned long long on_cpu = 0, waiting = 0;
    FILE *f = fopen("/proc/thread-self/schedstat", "r");
    if (!f)
        return 0.0;
    if (fscanf(f, "%llu %llu", &on_cpu, &waiting) != 2)
        waiting = 0;
    fclose(f);
    return (double)waiting * 1e-9;
}

/* A segment's time: wall clock, and wall clock less the time the loop's
 * thread waited for a CPU held by another thread. */
typedef struct seg_time {
    double wall, net;
} seg_time;

/* Run `steps` steps with a save_async every `every` steps (0: never),
 * each right after the first step of its period, so that its write (one
 * write-time, the period at least two) falls inside the period; then wait
 * for the last write, so a segment is charged all of its saves' cost. */
static seg_time run_segment(state *s, ckpt_saver *sv, int steps, int every,
                            int64_t *step_counter)
{
    double q0 = runqueue_s(), t0 = now();
    seg_time t;
    for (int i = 0; i < steps; i++) {
        step(s);
        (*step_counter)++;
        if (every > 0 && i % every == 0) {
            int err = ckpt_saver_save_async(sv, *step_counter, NULL);
            if (err < 0 && err != CKPT_EBUSY)
                die("save_async in loop");
        }
    }
    if (ckpt_saver_wait(sv, 0, -1) < 0)
        die("wait");
    t.wall = now() - t0;
    t.net = t.wall - (runqueue_s() - q0);
    return t;
}

/* One repetition of a loop figure: four pairs of segments of equal steps,
 * one with saves (A) and one without (B), in the orders AB BA BA AB, so
 * that a drift of the machine's speed over the repetition weighs on both
 * alike. Gives each pair's time with saves less that without and its
 * ratio, both net of run-queue waits (wall clock less the time other
 * threads held the CPU the loop was ready to run on), the plain wall-clock
 * ratio, and the saves per segment actually taken (a trigger skipped while
 * a write runs costs next to nothing). */
#define PAIRS 4
typedef struct pair_figures {
    double diff[PAIRS], ratio[PAIRS], wall_ratio[PAIRS];
    double saves_per_segment;
    double noise; /* the two segments without saves that follow each other
                     (the second pair's B right after the first's), the
                     second's net time over the first's, less 1 */
} pair_figures;

static void loop_rep(state *s, ckpt_saver *sv, int steps, int every,
                     int64_t *stepno, pair_figures *out)
{
    static const int with_first[PAIRS] = {1, 0, 0, 1};
    const int trace = getenv("BENCH_TRACE") != NULL;
    ckpt_saver_metrics m;
    uint64_t started;
    ckpt_saver_get_metrics(sv, &m);
    started = m.saves_started;
    seg_time first_b = {0, 0};
    for (int k = 0; k < PAIRS; k++) {
        seg_time w, b;
        if (with_first[k]) {
            w = run_segment(s, sv, steps, every, stepno);
            b = run_segment(s, sv, steps, 0, stepno);
        } else {
            b = run_segment(s, sv, steps, 0, stepno);
            w = run_segment(s, sv, steps, every, stepno);
        }
        if (k == 0)
            first_b = b;
        else if (k == 1)
            out->noise = b.net / first_b.net - 1.0;
        out->diff[k] = w.net - b.net;
        out->ratio[k] = w.net / b.net;
        out->wall_ratio[k] = w.wall / b.wall;
        if (trace)
            fprintf(stderr,
                    "bench_async_save: every %d: with %.4f s (net %.4f), "
                    "without %.4f s (net %.4f)\n",
                    every, w.wall, w.net, b.wall, b.net);
    }
    ckpt_saver_get_metrics(sv, &m);
    out->saves_per_segment = (double)(m.saves_started - started) / PAIRS;
    if (out->saves_per_segment <= 0)
        out->saves_per_segment = 1;
}

/* Steps of a segment: whole periods of `every` steps, at least `min_s`
 * seconds of steps. */
static int segment_steps(int every, double t_step, double min_s)
{
    int steps = every;
    while (steps * t_step < min_s)
        steps += every;
    return steps;
}

/* --restore-child DIR PREFIX MiB: a process that has done nothing else
 * yet: fresh variables (written by the program, as a job's
 * initialisation would), a saver on DIR, and the restore of PREFIX into
 * them, timed alone; prints its seconds. */
static int restore_child(const char *dir, const char *prefix, size_t mib)
{
    state s;
    ckpt_saver *sv;
    double t0;
    state_init(&s, mib << 20);
    sv = open_saver_reserved(dir, &s, CKPT_BUSY_SKIP, 0);
    t0 = now();
    if (ckpt_saver_restore(sv, prefix) < 0)
        die("restore (new process)");
    printf("%.6f\n", now() - t0);
    ckpt_saver_free(sv);
    state_free(&s);
    return 0;
}

/* --read-child FILE MiB: a new process of the restore child's size (the
 * same variables, written the same way, not read into) and its read() of
 * FILE in 256 KiB pieces into one buffer (as cat does, the strictest
 * read() a restore can be held to: no page of its buffer is new after the
 * first), timed alone; prints its seconds. The variables make the two
 * processes alike: on the EPYC VM a cold read() by a process that had
 * just written 256 MiB of fresh memory took 200-210 ms in about one run
 * of three against 46-50 ms without (a host's cost for fresh guest memory,
 * not the reading code's), which the restore child alone paid. */
static int read_child(const char *path, size_t mib)
{
    size_t piece = (size_t)256 << 10;
    char *buf = malloc(piece);
    state s;
    double t0;
    int fd;
    if (!buf)
        return 1;
    state_init(&s, mib << 20);
    memset(buf, 0, piece);
    t0 = now();
    fd = open(path, O_RDONLY);
    if (fd < 0) {
        perror("bench: open for read");
        return 1;
    }
    while (read(fd, buf, piece) > 0)
        ;
    close(fd);
    printf("%.6f\n", now() - t0);
    free(buf);
    state_free(&s);
    return 0;
}

/* Seconds a child of this program (`args` after its path) printed, the
 * files of `drop` dropped from the page cache first. */
static double child_seconds(const char *self, const char *args,
                            const char *drop)
{
    char cmd[9000];
    double s = -1.0;
    FILE *p;
    drop_cache(drop);
    snprintf(cmd, sizeof(cmd), "exec '%s' %s", self, args);
    p = popen(cmd, "r");
    if (!p || fscanf(p, "%lf", &s) != 1 || pclose(p) != 0 || s <= 0) {
        fprintf(stderr, "bench: child '%s' failed\n", args);
        exit(1);
    }
    return s;
}

static char self_path[4096];

/* Cold restores, each in a new process (restore_child), against read() in
 * a new process (read_child), in turn first: a job restarting from its
 * checkpoint pays once what a process measures once (the probes of
 * src/io/ and util/crc32c.c), which the restores above, in a process that
 * has saved and restored before, do not show. */
static void new_process_restores(const char *dir, const char *prefix,
                                 const char *data_path, size_t mib, int reps)
{
    char rargs[8400], dargs[4400];
    snprintf(rargs, sizeof(rargs), "--restore-child '%s' '%s' %zu", dir, prefix,
             mib);
    snprintf(dargs, sizeof(dargs), "--read-child '%s' %zu", data_path, mib);
    for (int r = 0; r < reps; r++) {
        double rd, rs, rd2;
        if (r % 2 == 0) {
            rd = child_seconds(self_path, dargs, data_path);
            rs = child_seconds(self_path, rargs, data_path);
        } else {
            rs = child_seconds(self_path, rargs, data_path);
            rd = child_seconds(self_path, dargs, data_path);
        }
        ratio("cold restore in a new process vs read() in one", mib, "ge", 0.9,
              rd / rs);
        /* two new read() processes timed the same way: how far apart this
         * machine puts two identical new processes' cold reads */
        rd = child_seconds(self_path, dargs, data_path);
        rd2 = child_seconds(self_path, dargs, data_path);
        ratio("new-process read() vs read() (noise floor)", mib, "noise", 0,
              rd / rd2);
    }
}

static void bench_size(const char *dir, size_t mib, int reps, int quick,
                       const char *only)
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
        ratio("write+fsync vs write+fsync (noise floor)", mib, "noise", 0,
              plain_s / time_plain_write(dir, warm, s.total));
    }
    if (ckpt_saver_latest(sv, &latest) < 0)
        die("latest");
    snprintf(data_path, sizeof(data_path), "%s.data-00000-of-00001",
             latest.ptr);
    /* Restores, interleaved with read() of the same file: cold, then
     * cached (the previous read left it in the cache). Each cold pair
     * (read() and the restore, in turn first: AB, BA, ...) is followed by
     * a pair of two cold read()s timed the same way: the noise floor of
     * the cold figure. */
    for (int r = 0; r < reps && (!only || strcmp(only, "restore") == 0); r++) {
        double t0, rd = 0, rs, rd2;
        if (r % 2 == 0)
            rd = time_plain_read(data_path, warm, s.total);
        drop_cache(data_path);
        t0 = now();
        if (ckpt_saver_restore(sv, latest.ptr) < 0)
            die("restore");
        rs = now() - t0;
        if (r % 2 == 1)
            rd = time_plain_read(data_path, warm, s.total);
        ratio("cold restore vs read()", mib, "ge", 0.9, rd / rs);
        rd = time_plain_read(data_path, warm, s.total);
        rd2 = time_plain_read(data_path, warm, s.total);
        ratio("cold read() vs read() (noise floor)", mib, "noise", 0, rd / rd2);
    }
    /* The last cold restore may have read around the page cache: read
     * the file once so that the first pair is cached for both. */
    if (!only || strcmp(only, "restore") == 0)
        (void)time_plain_read_cached(data_path, warm, s.total);
    for (int r = 0; r < reps && (!only || strcmp(only, "restore") == 0); r++) {
        double t0, rd, rs;
        rd = time_plain_read_cached(data_path, warm, s.total);
        t0 = now();
        if (ckpt_saver_restore(sv, latest.ptr) < 0)
            die("restore");
        rs = now() - t0;
        ratio("cached restore vs read()", mib, "ge", 0.9, rd / rs);
    }
    ckpt_saver_free(sv);
    if (!only || strcmp(only, "restore") == 0)
        new_process_restores(dir, latest.ptr, data_path, mib, reps);
    if (only && strcmp(only, "restore") == 0)
        goto done;

    /* Overlapped snapshots: trigger, a pass that only reads the state,
     * the fence; the waits of trigger and fence vs a memcpy. */
    sv = open_saver(dir, &s, CKPT_BUSY_SKIP);
    if (ckpt_saver_mutation_fence(sv) < 0)
        die("fence");
    for (int r = 0; r < reps && (!only || strcmp(only, "save") == 0); r++) {
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

    /* The training loop: segments with saves against segments without,
     * interleaved (loop_rep); every segment whole periods of at least
     * min_seg_s, long enough that a shared machine's noise does not drown
     * a small state's loop. */
    if (!only || strcmp(only, "loop") == 0) {
        double write_med = median(write_s, reps);
        double t_step, min_seg_s = quick ? 0.6 : 1.0;
        int every2, every10, steps2, steps10;
        uint64_t skipped;
        sv = open_saver(dir, &s, CKPT_BUSY_SKIP);
        /* Steady-state step time: the fastest of a few short runs (the
         * first steps after allocation or a restore run slow). */
        t_step = run_segment(&s, sv, 3, 0, &stepno).net / 3.0;
        for (int r = 0; r < 3; r++) {
            double t = run_segment(&s, sv, 5, 0, &stepno).net / 5.0;
            if (t < t_step)
                t_step = t;
        }
        every2 = (int)(2.0 * write_med / t_step + 0.5);
        every10 = (int)(10.0 * write_med / t_step + 0.5);
        if (every2 < 2)
            every2 = 2;
        if (every10 < 2)
            every10 = 2;
        steps2 = segment_steps(every2, t_step, min_seg_s);
        steps10 = segment_steps(every10, t_step, min_seg_s);
        ckpt_saver_get_metrics(sv, &m);
        skipped = m.saves_skipped;
        for (int r = 0; r < reps; r++) {
            double memcpy_s = time_memcpy(&s, warm, 3);
            pair_figures p;
            /* The median of a repetition's pairs: a burst of other work on
             * a shared machine lands in one pair, the saves in all. */
            loop_rep(&s, sv, steps2, every2, &stepno, &p);
            ratio("extra per checkpoint vs memcpy (every 2 write-times)", mib,
                  "le", 2.0,
                  median(p.diff, PAIRS) / p.saves_per_segment / memcpy_s);
            loop_rep(&s, sv, steps10, every10, &stepno, &p);
            ratio("loop slowdown (every 10 write-times)", mib, "le", 0.03,
                  median(p.ratio, PAIRS) - 1.0);
            ratio("loop slowdown, wall clock (every 10 write-times)", mib, "le",
                  0.03, median(p.wall_ratio, PAIRS) - 1.0);
            ratio("loop without saves vs without (noise floor, every 10 "
                  "write-times)",
                  mib, "noise", 0, p.noise);
        }
        ckpt_saver_get_metrics(sv, &m);
        ckpt_saver_free(sv);
        fprintf(stderr,
                "bench_async_save: %zu MiB: step %.4f s, write %.4f s; "
                "segments of %d and %d steps (a save every %d and %d); "
                "%" PRIu64 " triggers skipped\n",
                mib, t_step, write_med, steps2, steps10, every2, every10,
                m.saves_skipped - skipped);
    }
done:
    (void)sink;
    ckpt_buf_dispose(&latest);
    free(warm);
    state_free(&s);
}

/* --run-timed: fork and exec argv, wait for it to exit without reaping it
 * (its schedstat stays readable), then reap it. Returns its exit status. */
static int run_timed(char **argv)
{
    char path[64];
    unsigned long long on_cpu = 0, waiting = 0;
    siginfo_t si;
    double t0, wall;
    int status = 0;
    FILE *f;
    pid_t pid;
    fflush(stdout);
    t0 = now();
    pid = fork();
    if (pid < 0) {
        perror("bench: fork");
        return 1;
    }
    if (pid == 0) {
        execv(argv[0], argv);
        perror("bench: exec");
        _exit(127);
    }
    memset(&si, 0, sizeof(si));
    if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT) != 0) {
        perror("bench: waitid");
        return 1;
    }
    wall = now() - t0;
    snprintf(path, sizeof(path), "/proc/%d/schedstat", (int)pid);
    f = fopen(path, "r");
    if (f) {
        if (fscanf(f, "%llu %llu", &on_cpu, &waiting) != 2)
            waiting = 0;
        fclose(f);
    }
    if (waitpid(pid, &status, 0) != pid)
        return 1;
    printf("timed: wall_s=%.6f runqueue_s=%.6f\n", wall,
           (double)waiting * 1e-9);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

int main(int argc, char **argv)
{
    const char *dir = "bench-tmp";
    char sizes[256] = "64,256,1024";
    int reps = 5, quick = 0;
    const char *only = NULL;
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
        } else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc &&
                   (strcmp(argv[i + 1], "save") == 0 ||
                    strcmp(argv[i + 1], "loop") == 0)) {
            only = argv[++i];
        } else if (strcmp(argv[i], "--restore-only") == 0) {
            only = "restore";
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
        } else if (strcmp(argv[i], "--restore-child") == 0 && i + 3 < argc) {
            return restore_child(argv[i + 1], argv[i + 2],
                                 (size_t)strtoul(argv[i + 3], NULL, 10));
        } else if (strcmp(argv[i], "--read-child") == 0 && i + 2 < argc) {
            return read_child(argv[i + 1],
                              (size_t)strtoul(argv[i + 2], NULL, 10));
        } else if (strcmp(argv[i], "--run-timed") == 0 && i + 1 < argc) {
            return run_timed(argv + i + 1);
        } else if (strcmp(argv[i], "--drop-cache") == 0) {
            for (i++; i < argc; i++)
                drop_cache(argv[i]);
            return 0;
        } else {
            fprintf(stderr, "usage: bench_async_save [--dir DIR] "
                            "[--sizes MiB,...] [--reps N] [--quick]\n"
                            "                        [--only save|loop] "
                            "[--restore-only]\n"
                            "       bench_async_save --memcpy MiB\n"
                            "       bench_async_save --drop-cache FILE...\n"
                            "       bench_async_save --run-timed PROGRAM "
                            "ARGS...\n");
            return 2;
        }
    }
    if (reps < 1 || reps > 16)
        reps = 5;
    {
        ssize_t n =
            readlink("/proc/self/exe", self_path, sizeof(self_path) - 1);
        if (n <= 0 || (size_t)n >= sizeof(self_path) - 1) {
            fprintf(stderr, "bench: cannot find this program's path\n");
            return 1;
        }
        self_path[n] = '\0';
    }
    mkdir(dir, 0755);
    for (tok = strtok_r(sizes, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        size_t mib = (size_t)strtoul(tok, NULL, 10);
        if (mib < 1)
            continue;
        bench_size(dir, mib, reps, quick, only);
    }
    return 0;
}
