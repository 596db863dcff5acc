/* tools/ckpt-train/report.c - see report.h. */
#include "report.h"
#include "train_hook.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void report_init(report *r, int quiet, int64_t target_step, int64_t log_every)
{
    memset(r, 0, sizeof(*r));
    r->quiet = quiet;
    r->tty = !quiet && isatty(STDERR_FILENO);
    r->target_step = target_step;
    r->log_every = log_every > 0 ? log_every : 100;
    r->started = ckpt_clock_monotonic(NULL);
    r->first_step = -1;
    r->last_logged = -1;
}

void report_dispose(report *r)
{
    free(r->blocking_ms);
    free(r->write_ms);
}

static const char *const loss_fetch[] = {"loss"};

static int before_run(ckpt_run_context *ctx, ckpt_run_args *args, void *p)
{
    (void)ctx;
    (void)p;
    args->fetches = loss_fetch;
    args->num_fetches = 1;
    return 0;
}

static void draw(report *r, int64_t step, int final)
{
    double now = ckpt_clock_monotonic(NULL);
    double rate = step > r->first_step && now > r->started
                      ? (double)(step - r->first_step) / (now - r->started)
                      : 0.0;
    if (r->tty) {
        int width = 30;
        int filled =
            r->target_step > 0
                ? (int)((double)width * (double)step / (double)r->target_step)
                : 0;
        if (!final && now - r->last_draw < 0.1)
            return;
        r->last_draw = now;
        if (filled > width)
            filled = width;
        fprintf(stderr,
                "\r[%.*s%*s] step %" PRId64 "/%" PRId64
                "  loss %.4f  %.0f steps/s  last: %s\033[K",
                filled, "##############################", width - filled, "",
                step, r->target_step, (double)r->last_loss, rate,
                r->last_checkpoint[0] ? r->last_checkpoint : "-");
        if (final)
            fputc('\n', stderr);
        report_flush(stderr);
    } else if (!r->quiet && step != r->last_logged &&
               (final || step % r->log_every == 0)) {
        r->last_logged = step;
        printf("step %" PRId64 " loss %.4f %.1f steps/s\n", step,
               (double)r->last_loss, rate);
        report_flush(stdout);
    }
}

static int after_run(ckpt_run_context *ctx, const ckpt_run_values *v, void *p)
{
    report *r = p;
    (void)ctx;
    if (r->first_step < 0) {
        r->first_step = v->step_before;
        r->started = ckpt_clock_monotonic(NULL);
    }
    if (v->num_results == 1 && v->results[0].size == sizeof(float)) {
        memcpy(&r->last_loss, v->results[0].data, sizeof(float));
        r->have_loss = 1;
    }
    draw(r, v->step_after, 0);
    return 0;
}

static int end(ckpt_session *s, void *p)
{
    report *r = p;
    int64_t step = 0;
    if (r->first_step >= 0 && ckpt_session_global_step(s, &step) == 0)
        draw(r, step, 1);
    return 0;
}

ckpt_hook report_hook(report *r)
{
    ckpt_hook h = train_hook("ProgressHook", r);
    h.before_run = before_run;
    h.after_run = after_run;
    h.end = end;
    return h;
}

/* Room for twice as many saves' timings. 0, or -1 after saying once on
 * stderr what could not be allocated: the summary's timings then leave
 * out that save and every later one (its byte and save counts do not). */
static int grow_timings(report *r)
{
    size_t cap = r->cap ? r->cap * 2 : 64;
    size_t bytes = cap * sizeof(double);
    double *b = realloc(r->blocking_ms, bytes);
    double *w = NULL;
    if (b) {
        r->blocking_ms = b;
        w = realloc(r->write_ms, bytes);
    }
    if (w) {
        r->write_ms = w;
        r->cap = cap;
        return 0;
    }
    fprintf(stderr,
            "ckpt-train: warn: out of memory allocating the saves' timings "
            "(%zu bytes); the summary's blocking and write times leave out "
            "this save and later ones\n",
            bytes);
    return -1;
}

void report_on_save_done(const ckpt_save_result *res, void *payload)
{
    report *r = payload;
    if (res->status != 0)
        return;
    if (!r->timings_lost && r->nsaves == r->cap && grow_timings(r) != 0)
        r->timings_lost = 1;
    if (!r->timings_lost) {
        r->blocking_ms[r->nsaves] = res->blocking_s * 1e3;
        r->write_ms[r->nsaves] = res->write_s * 1e3;
        r->nsaves++;
    }
    r->bytes += res->bytes;
    r->write_s_total += res->write_s;
    snprintf(r->last_checkpoint, sizeof(r->last_checkpoint), "%s", res->prefix);
}

void report_on_log(int level, const char *message, void *payload)
{
    report *r = payload;
    if (level >= CKPT_LOG_WARN) {
        if (r->tty)
            fputc('\n', stderr);
        if (fprintf(stderr, "ckpt-train: %s: %s\n", ckpt_log_level_name(level),
                    message) < 0)
            report_note_write_error(stderr, errno);
    } else if (!r->quiet && !r->tty && level >= CKPT_LOG_INFO) {
        printf("checkpoint: %s\n", message);
        report_flush(stdout);
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double percentile50(double *v, size_t n)
{
    if (n == 0)
        return 0.0;
    qsort(v, n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double report_blocking_ms_p50(report *r)
{
    return percentile50(r->blocking_ms, r->nsaves);
}

double report_blocking_ms_max(const report *r)
{
    double max_blocking = 0.0;
    for (size_t i = 0; i < r->nsaves; i++)
        if (r->blocking_ms[i] > max_blocking)
            max_blocking = r->blocking_ms[i];
    return max_blocking;
}

void report_summary(report *r, FILE *out, int64_t final_step,
                    int64_t resumed_from, const ckpt_saver_metrics *m)
{
    char resumed[32] = "-";
    char loss[32] = "-"; /* no step ran in this run: no loss to show */
    double max_blocking = report_blocking_ms_max(r);
    if (resumed_from >= 0)
        snprintf(resumed, sizeof(resumed), "%" PRId64, resumed_from);
    if (r->have_loss)
        snprintf(loss, sizeof(loss), "%.6f", (double)r->last_loss);
    fprintf(out,
            "summary: steps=%" PRId64 " resumed_from=%s loss=%s "
            "checkpoints=%" PRIu64 " skipped=%" PRIu64 " failed=%" PRIu64
            " blocking_ms_p50=%.3f blocking_ms_max=%.3f write_ms_p50=%.3f "
            "write_mb_s=%.1f start_ms=%.1f close_ms=%.1f\n",
            final_step, resumed, loss, m ? m->saves_completed : 0,
            m ? m->saves_skipped : 0, m ? m->saves_failed : 0,
            report_blocking_ms_p50(r), max_blocking,
            percentile50(r->write_ms, r->nsaves),
            r->write_s_total > 0 ? (double)r->bytes / r->write_s_total / 1e6
                                 : 0.0,
            r->start_ms, r->close_ms);
    report_flush(out);
}

/* The first write error (an errno) of stdout [0] and stderr [1]: the
 * writer's thread logs too, so they are atomic. */
static atomic_int first_write_error[2];

void report_note_write_error(FILE *f, int err)
{
    int none = 0;
    int i = f == stdout ? 0 : f == stderr ? 1 : -1;
    if (i >= 0 && err != 0)
        atomic_compare_exchange_strong(&first_write_error[i], &none, err);
}

void report_flush(FILE *f)
{
    errno = 0;
    if (fflush(f) != 0)
        report_note_write_error(f, errno);
}

/* Whether `f` lost output: a flush that fails now or an error on an
 * earlier write; `*err` the first such write's errno (0: not known). */
static int stream_lost(FILE *f, int *err)
{
    int lost;
    errno = 0;
    lost = fflush(f) != 0;
    if (lost)
        report_note_write_error(f, errno);
    lost = lost || ferror(f) != 0;
    *err = atomic_load(&first_write_error[f == stdout ? 0 : 1]);
    return lost;
}

/* Which of descriptors 0, 1 and 2 the process started with closed (and
 * report_hold_std_streams put /dev/null on): process-wide, set once at
 * the start of main. */
static int closed_at_start[3];

void report_hold_std_streams(void)
{
    for (int fd = 0; fd < 3; fd++) {
        int got;
        if (fcntl(fd, F_GETFD) != -1 || errno != EBADF)
            continue;
        /* the lowest free descriptor: `fd`, the ones below being open */
        got = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
        if (got == fd)
            closed_at_start[fd] = 1;
        else if (got >= 0)
            close(got);
    }
}

int report_exit_status(int status)
{
    static const char *const names[] = {"stdout", "stderr"};
    FILE *streams[2];
    int lost = 0, err;
    streams[0] = stdout;
    streams[1] = stderr;
    for (int i = 0; i < 2; i++) {
        int gone = stream_lost(streams[i], &err);
        if (closed_at_start[i + 1]) {
            lost = 1;
            fprintf(stderr,
                    "ckpt-train: could not write %s: it was closed when "
                    "ckpt-train started\n",
                    names[i]);
            continue;
        }
        if (!gone)
            continue;
        lost = 1;
        fprintf(stderr, "ckpt-train: could not write %s: %s\n", names[i],
                err ? strerror(err)
                    : "a write failed (closed, full, or a pipe "
                      "nobody reads)");
    }
    return status == 0 && lost ? REPORT_OUTPUT_LOST : status;
}
