/* tools/ckpt-train/report.h - what the trainer shows: a progress bar on a
 * terminal or plain log lines otherwise (as a user-written ckpt_hook), the
 * per-save statistics gathered from the saver's outcomes, and the summary
 * line printed at exit. */
#ifndef CKPT_TRAIN_REPORT_H
#define CKPT_TRAIN_REPORT_H

#include "ckpt.h"

#include <stdio.h>

typedef struct report {
    int quiet;
    int tty;
    int64_t target_step;
    int64_t log_every; /* plain mode: a line every this many steps */
    float last_loss;
    int have_loss;
    double started; /* monotonic seconds */
    int64_t first_step;
    double last_draw;
    int64_t last_logged; /* plain mode: last step printed */
    char last_checkpoint[256];
    /* per completed save */
    double *blocking_ms, *write_ms;
    size_t nsaves, cap;
    int timings_lost; /* growing the arrays failed: no more timings */
    uint64_t bytes;
    double write_s_total;
    /* the session's fixed costs: creating it (restore, initial
     * checkpoint's snapshot) and closing it (writes in flight, final
     * checkpoint), in milliseconds */
    double start_ms, close_ms;
} report;

void report_init(report *r, int quiet, int64_t target_step, int64_t log_every);
void report_dispose(report *r);

/* The progress hook (a ckpt_hook built like any user hook). */
ckpt_hook report_hook(report *r);

/* ckpt_saver_options.on_save_done / .log targets. */
void report_on_save_done(const ckpt_save_result *res, void *payload);
void report_on_log(int level, const char *message, void *payload);

/* The median and the longest blocking of the completed saves, in
 * milliseconds (0 without any). */
double report_blocking_ms_p50(report *r);
double report_blocking_ms_max(const report *r);

/* The one summary line. */
void report_summary(report *r, FILE *out, int64_t final_step,
                    int64_t resumed_from, const ckpt_saver_metrics *m);

/* The process's exit status once stdout and stderr are flushed: `status`
 * when it is not 0 or both were written whole; otherwise
 * REPORT_OUTPUT_LOST, said on stderr (if it still takes a line) with the
 * stream and the OS error: a run whose output went nowhere (stdout closed,
 * /dev/full, a pipe nobody reads any more) must not look like a clean
 * one. */
#define REPORT_OUTPUT_LOST 3
int report_exit_status(int status);

/* fflush(f), keeping the OS error of the first write to stdout or stderr
 * that fails (stdio keeps only that one failed) for report_exit_status's
 * message; every flush of what the trainer prints goes through it. */
void report_flush(FILE *f);
/* Keep `err` (an errno) as f's first write error, as report_flush does,
 * for a write the caller saw fail (an unbuffered fprintf to stderr). */
void report_note_write_error(FILE *f, int err);

/* Put /dev/null on descriptor 0, 1 or 2 where the process started with
 * it closed, so that no file a library opens later (MPI_Init's pipes and
 * sockets, say) takes that number and receives what the trainer prints
 * as its stdout; a stdout or stderr closed at the start still counts as
 * lost for report_exit_status ("it was closed when ckpt-train started").
 * Called first in main, before anything opens a file. */
void report_hold_std_streams(void);

#endif
