/* tests/session/session_test_util.h - helpers for the session and hook
 * tests: a recording hook that writes every callback into a shared trace
 * and can be told to fail, stop, feed or fetch, a log sink, and a tiny
 * model (graph with a global step and one variable) with a step function.
 * The fake clock comes from the testing library. */
#ifndef CKPT_TESTS_SESSION_TEST_UTIL_H
#define CKPT_TESTS_SESSION_TEST_UTIL_H

#include "test_util.h"

#include "support/fake_clock.h"

/* ---- trace
 * ------------------------------------------------------------------- */

typedef struct trace {
    char buf[8192];
} trace;

void trace_add(trace *t, const char *fmt, ...);

/* ---- recording hook
 * ------------------------------------------------------------ */

typedef struct rec_hook {
    const char *name;
    trace *trace;
    /* errors to return (0: succeed) */
    int fail_begin, fail_create, fail_before, fail_after, fail_end;
    int fail_create_times; /* fail after_create only this many times */
    int fail_after_times;  /* fail after_run only this many times */
    int stop_in_before, stop_in_after; /* request_stop there */
    int stop_at_step; /* request_stop in after_run once step_after >= it
                         (0: never) */
    const char *const *fetches;
    size_t num_fetches;
    const ckpt_feed *feeds;
    size_t num_feeds;
    ckpt_run_options options;
    int no_on_abort; /* leave on_abort NULL */
    /* observations */
    int n_begin, n_create, n_before, n_after, n_end, n_abort, n_destroy;
    int abort_status;
    ckpt_coordinator *coord;
    ckpt_session *session;
    size_t last_num_results;
    ckpt_value last_results[4];
    float last_float; /* first result as float when it is one */
    ckpt_run_options last_options;
    int64_t last_step_before, last_step_after;
} rec_hook;

ckpt_hook rec_hook_make(rec_hook *r, const char *name, trace *t);

/* ---- log sink
 * ------------------------------------------------------------------ */

typedef struct log_sink {
    char lines[64][256];
    int levels[64];
    int n;
} log_sink;

void log_sink_fn(int level, const char *message, void *payload);
/* Index of the first line containing `needle`, or -1. */
int log_sink_find(const log_sink *s, const char *needle);

/* ---- tiny model
 * ------------------------------------------------------------------ */

typedef struct model {
    ckpt_graph *graph;
    int64_t step;
    float w[4];
    float loss;
    int fail_at_step; /* with fail_code != 0: the step returns fail_code
                         when step == fail_at_step */
    int fail_code;
    int fail_times; /* how many times to fail (0: always) */
    int failed;
    int request_stop_at; /* ckpt_step_context_request_stop at this step */
    int raise_at;        /* raise(raise_signal) during this step (0: never) */
    int raise_signal;
    int n_steps;           /* step function calls */
    const char *feed_name; /* read this feed into last_feed when set */
    float last_feed;
} model;

/* Graph with "global_step" and "w" (float32 [4]). */
void model_init(model *m);
void model_free(model *m);
/* Step function: w += 1, step += 1, publishes "loss" = 1 / step. */
int model_step(ckpt_step_context *sc, void *payload);

#endif
