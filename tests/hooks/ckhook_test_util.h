/* tests/hooks/ckhook_test_util.h - a fixture for the checkpoint hook tests:
 * a graph with one float variable and the global step, a step function
 * whose values are a function of the step, a fake clock, a file system that
 * can hold writes at a gate, fail them, and check at every replacement of
 * the state file that the checkpoint it names is complete, recording
 * listeners, a thread-safe log recorder, and small queries on checkpoints. */
#ifndef CKPT_TESTS_HOOKS_CKHOOK_TEST_UTIL_H
#define CKPT_TESTS_HOOKS_CKHOOK_TEST_UTIL_H

#include "saver/saver_test_util.h"

#include <stdatomic.h>

enum { CK_NVALS = 1024, CK_MAX_EVENTS = 256, CK_MAX_LOG = 256 };

/* A file system over the gate fs: `fail_writes` makes every write fail
 * with CKPT_ENOSPC; every rename onto a file named "checkpoint" reads the
 * new state file and checks that the checkpoint it names as newest has its
 * index and data file in place (`state_checks`, `state_bad`). */
typedef struct check_fs {
    ckpt_fs_forward fwd; /* over &gate.fwd.fs; hand &fwd.fs to the library */
    gate_fs gate;
    atomic_int fail_writes;
    atomic_int state_checks;
    atomic_int state_bad;
    char dir[4096];
} check_fs;

typedef enum ev_kind { EV_BEGIN, EV_BEFORE, EV_AFTER, EV_END } ev_kind;

typedef struct ck_event {
    ev_kind kind;
    int listener;
    int64_t step;
    char prefix[512];
    int index_exists; /* <prefix or expected prefix>.index existed */
    int on_caller;    /* called on the training thread */
    int64_t gstep;    /* global step at the call */
    int64_t latest;   /* newest checkpoint's step at the call, or -1 */
} ck_event;

typedef struct ck_fixture ck_fixture;

/* One recording listener; `stop_at` (> 0) asks to stop in after_save of
 * that step; `fail_before_at` makes before_save of that step fail. */
typedef struct ck_listener {
    ck_fixture *f;
    int index;
    int64_t stop_at;
    int64_t fail_before_at;
} ck_listener;

struct ck_fixture {
    char *root;       /* temp dir */
    char ckdir[4096]; /* root/ck/a/b (not created) */
    ckpt_graph *graph;
    float vals[CK_NVALS];
    int64_t gstep;
    fake_clock clock;
    double secs_per_step;
    int no_increment; /* the step function leaves the global step alone */
    int64_t abort_at; /* > 0: the step to that global step fails once with
                         CKPT_EABORTED, leaving garbage in the variables */
    int aborted;
    check_fs cfs;
    pthread_t caller;
    ck_listener listeners[4];
    ck_event events[CK_MAX_EVENTS];
    int nevents;
    pthread_mutex_t log_mu;
    char *log_lines[CK_MAX_LOG];
    int log_levels[CK_MAX_LOG];
    int nlog;
};

int ck_setup(void **state);
int ck_teardown(void **state);

/* Values the step function writes for `step`. */
float ck_value(int64_t step, int i);
/* Set the variables to their values at `step` (global step included). */
void ck_fill(ck_fixture *f, int64_t step);
/* The step function: global step + 1 (unless no_increment), values of the
 * new step, clock + secs_per_step. */
int ck_step(ckpt_step_context *sc, void *payload);

/* Saver options writing to the fixture's fs and log (CKPT_KEEP_ALL). */
ckpt_saver_options ck_saver_options(ck_fixture *f, int policy);
/* Hook options over ckdir with `n` recording listeners (0..4). */
ckpt_checkpoint_hook_options ck_hook_options(ck_fixture *f, int mode,
                                             int64_t save_steps,
                                             const ckpt_saver_options *so,
                                             ckpt_saver_listener *ls, int n);
/* Session options: the fixture's clock and fs; with `recoverable`, also
 * restore from ckdir (saver options `so`) and re-create without delay. */
ckpt_session_options ck_session_options(ck_fixture *f, int recoverable,
                                        const ckpt_saver_options *so);
/* Create a monitored session with the given hooks (clock = fixture's). */
ckpt_monitored_session *ck_session(ck_fixture *f, ckpt_hook *hooks, size_t n);
/* Run one step; returns its status. */
int ck_run(ck_fixture *f, ckpt_monitored_session *ms);

/* Wait (bounded) until every save the hook started has an outcome. */
void ck_wait_idle(const ckpt_hook *hook);
ckpt_saver_metrics ck_metrics(const ckpt_hook *hook);

/* Whether ckdir/model.ckpt-<step>.index exists. */
int ck_has_checkpoint(ck_fixture *f, int64_t step);
/* Check ckdir/model.ckpt-<step> holds the values of `values_step` and the
 * global step `step`. */
void ck_expect_checkpoint(ck_fixture *f, int64_t step, int64_t values_step);
/* The step of the newest checkpoint (latest_checkpoint), or -1. */
int64_t ck_latest_step(ck_fixture *f);

/* Events of one kind in order; returns how many were copied to `out`. */
int ck_events(ck_fixture *f, ev_kind kind, ck_event *out, int max);
/* Number of log lines containing `needle`. */
int ck_log_count(ck_fixture *f, const char *needle);

#endif
