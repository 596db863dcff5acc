/* tests/hooks/test_hook_setup.c - the setup a new user writes (issue 11):
 * the checkpoint name in every setup, one checkpoint directory for saving
 * and resuming, logging by default with skipped triggers reported, the
 * listener stop protocol of TensorFlow, freeing and waiting on a hook,
 * options structs that accept a zeroed or older struct sensibly, and the
 * hook kind that identifies the library's hooks. */
#include "hooks/ckhook_test_util.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- helpers --------------------------------------------------------------
 */

/* Standard error of the code between capture_start and capture_end goes to
 * a file; capture_end returns its contents (malloc'd). */
typedef struct capture {
    int saved_fd;
    char path[4200];
} capture;

static void capture_start(capture *c, const ck_fixture *f)
{
    int fd;
    snprintf(c->path, sizeof(c->path), "%s/stderr.txt", f->root);
    fd = open(c->path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    fflush(stderr);
    c->saved_fd = dup(STDERR_FILENO);
    assert_true(c->saved_fd >= 0);
    assert_true(dup2(fd, STDERR_FILENO) >= 0);
    close(fd);
}

static char *capture_end(capture *c)
{
    FILE *fp;
    char *text = calloc(1, 1 << 16);
    size_t n;
    fflush(stderr);
    assert_true(dup2(c->saved_fd, STDERR_FILENO) >= 0);
    close(c->saved_fd);
    fp = fopen(c->path, "rb");
    assert_non_null(fp);
    assert_non_null(text);
    n = fread(text, 1, (1 << 16) - 1, fp);
    text[n] = '\0';
    fclose(fp);
    return text;
}

/* Session options without the fixture's log (so the defaults apply). */
static ckpt_session_options plain_session(ck_fixture *f)
{
    ckpt_session_options so = CKPT_SESSION_OPTIONS_INIT;
    so.clock = &f->clock.clock;
    so.fs = &f->cfs.fwd.fs;
    return so;
}

/* plain_session with logging off. */
static ckpt_session_options quiet_session(ck_fixture *f)
{
    ckpt_session_options so = plain_session(f);
    so.log_level = CKPT_LOG_OFF;
    return so;
}

static ckpt_checkpoint_hook_options plain_hook(ck_fixture *f, int mode,
                                               int64_t steps)
{
    ckpt_checkpoint_hook_options o = CKPT_CHECKPOINT_HOOK_OPTIONS_INIT;
    o.checkpoint_dir = f->ckdir;
    o.save_steps = steps;
    o.mode = mode;
    o.clock = &f->clock.clock;
    return o;
}

static void run_steps(ck_fixture *f, ckpt_monitored_session *ms, int n)
{
    for (int i = 0; i < n; i++)
        assert_ckpt_ok(ck_run(f, ms));
}

/* A checkpoint hook made from `o` (into *h) and a monitored session of
 * f's graph running it with `so`. */
static ckpt_monitored_session *
start_session(ck_fixture *f, const ckpt_checkpoint_hook_options *o,
              const ckpt_session_options *so, ckpt_hook *h)
{
    ckpt_monitored_session *ms = NULL;
    assert_ckpt_ok(ckpt_checkpoint_hook_new(h, o));
    assert_ckpt_ok(ckpt_monitored_session_new(&ms, f->graph, h, 1, so));
    return ms;
}

/* Run `n` more steps, then close the session cleanly and free it. */
static void finish_session(ck_fixture *f, ckpt_monitored_session *ms, int n)
{
    run_steps(f, ms, n);
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    ckpt_monitored_session_free(ms);
}

/* ---- 1. the checkpoint name ------------------------------------------------
 */

/* With use_scaffold (the README's setup), checkpoint_basename names the
 * files; before, a basename given in the hook's saver options was dropped
 * and the files were model.ckpt-*. */
static void test_basename_with_scaffold(void **state)
{
    ck_fixture *f = *state;
    ckpt_checkpoint_hook_options o = plain_hook(f, CKPT_SAVE_ASYNC, 2);
    ckpt_session_options so = quiet_session(f);
    ckpt_monitored_session *ms = NULL;
    ckpt_hook h;
    o.use_scaffold = 1;
    o.checkpoint_basename = "mnist";
    ms = start_session(f, &o, &so, &h);
    for (int i = 0; i < 4; i++) {
        assert_ckpt_ok(ckpt_checkpoint_hook_wait(&h, 60.0));
        run_steps(f, ms, 1);
    }
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    ckpt_monitored_session_free(ms);
    assert_true(file_exists(f->ckdir, "mnist-0.index"));
    assert_true(file_exists(f->ckdir, "mnist-2.index"));
    assert_true(file_exists(f->ckdir, "mnist-4.index"));
    assert_int_equal(count_files(f->ckdir, "model.ckpt"), 0);
}

/* The same name through the own saver and the training-session builder. */
static void test_basename_own_saver(void **state)
{
    ck_fixture *f = *state;
    ckpt_checkpoint_hook_options o = plain_hook(f, CKPT_SAVE_SYNC, 3);
    ckpt_session_options so = quiet_session(f);
    ckpt_monitored_session *ms = NULL;
    ckpt_hook h;
    o.checkpoint_basename = "net";
    ms = start_session(f, &o, &so, &h);
    finish_session(f, ms, 3);
    assert_true(file_exists(f->ckdir, "net-0.index"));
    assert_true(file_exists(f->ckdir, "net-3.index"));
    assert_int_equal(count_files(f->ckdir, "model.ckpt"), 0);
}

/* Two different names are an error saying which settings disagree. */
static void test_basename_conflicts(void **state)
{
    ck_fixture *f = *state;
    ckpt_checkpoint_hook_options o = plain_hook(f, CKPT_SAVE_SYNC, 3);
    ckpt_saver_options hs = CKPT_SAVER_OPTIONS_INIT;
    ckpt_saver_options ss = CKPT_SAVER_OPTIONS_INIT;
    ckpt_session_options so = quiet_session(f);
    ckpt_monitored_session *ms = NULL;
    ckpt_hook h;
    /* not a file name: refused by the hook, naming its own option */
    o.checkpoint_basename = "a/b";
    assert_ckpt_error(ckpt_checkpoint_hook_new(&h, &o), CKPT_EINVAL,
                      "checkpoint hook: checkpoint_basename 'a/b' must be a "
                      "file name without '/', not '.' or '..'");
    o.checkpoint_basename = "..";
    assert_ckpt_error(ckpt_checkpoint_hook_new(&h, &o), CKPT_EINVAL,
                      "checkpoint hook: checkpoint_basename '..' must be a "
                      "file name without '/', not '.' or '..'");
    /* hook: checkpoint_basename against its own saver options */
    hs.basename = "b";
    o.saver_options = &hs;
    o.checkpoint_basename = "a";
    assert_ckpt_error(ckpt_checkpoint_hook_new(&h, &o), CKPT_EINVAL,
                      "checkpoint_basename 'a' disagrees with "
                      "saver_options->basename 'b'");
    /* use_scaffold: the hook's name against the session's saver options */
    o.saver_options = NULL;
    o.use_scaffold = 1;
    ss.basename = "b";
    so.saver_options = &ss;
    assert_ckpt_ok(ckpt_checkpoint_hook_new(&h, &o));
    assert_ckpt_error(ckpt_monitored_session_new(&ms, f->graph, &h, 1, &so),
                      CKPT_EINVAL,
                      "checkpoint basename 'a' of the checkpoint hook options "
                      "(checkpoint_basename) disagrees with checkpoint "
                      "basename 'b' of the session options");
    assert_null(ms);
}

/* Two checkpoint hooks saving through two savers (one through the
 * session's, one through its own, as a training session's hook beside a
 * user's) are refused at creation: both would write the directory's one
 * state file; the builder's hook once took the other's basename, and the
 * two savers wrote each other's checkpoints over. Two hooks sharing the
 * session's saver are fine. */
static void test_two_savers_in_one_directory_refused(void **state)
{
    ck_fixture *f = *state;
    ckpt_checkpoint_hook_options a = plain_hook(f, CKPT_SAVE_SYNC, 5);
    ckpt_checkpoint_hook_options b = plain_hook(f, CKPT_SAVE_SYNC, 3);
    ckpt_session_options so = quiet_session(f);
    ckpt_monitored_session *ms = NULL;
    ckpt_hook h[2];
    a.use_scaffold = 1;
    b.checkpoint_basename = "user";
    assert_ckpt_ok(ckpt_checkpoint_hook_new(&h[0], &a));
    assert_ckpt_ok(ckpt_checkpoint_hook_new(&h[1], &b));
    assert_ckpt_error(ckpt_monitored_session_new(&ms, f->graph, h, 2, &so),
                      CKPT_EINVAL,
                      "2 checkpoint hooks save into " /* the directory */);
    assert_null(ms);
    assert_int_equal(count_files(f->ckdir, ".index"), 0);
    b.checkpoint_basename = NULL;
    b.use_scaffold = 1;
    assert_ckpt_ok(ckpt_checkpoint_hook_new(&h[0], &a));
    assert_ckpt_ok(ckpt_checkpoint_hook_new(&h[1], &b));
    assert_ckpt_ok(ckpt_monitored_session_new(&ms, f->graph, h, 2, &so));
    finish_session(f, ms, 6);
    assert_true(file_exists(f->ckdir, "model.ckpt-6.index"));
}

/* With use_scaffold and the name given only in the session's saver
 * options, the files and the hook's first log line both use it (the log
 * used to name model.ckpt whatever was written). */
static void test_basename_from_session_is_logged(void **state)
{
    ck_fixture *f = *state;
    ckpt_checkpoint_hook_options o = plain_hook(f, CKPT_SAVE_SYNC, 2);
    ckpt_saver_options ss = CKPT_SAVER_OPTIONS_INIT;
    ckpt_session_options so = plain_session(f);
    ckpt_monitored_session *ms = NULL;
    char want[4300];
    ckpt_hook h;
    capture c;
    char *text;
    ss.basename = "sess";
    so.saver_options = &ss;
    o.use_scaffold = 1;
    capture_start(&c, f);
    ms = start_session(f, &o, &so, &h);
    ckpt_monitored_session_free(ms);
    text = capture_end(&c);
    snprintf(want, sizeof(want), "saving checkpoints to %s/sess-<step>",
             f->ckdir);
    assert_int_equal(test_count(text, want), 1);
    free(text);
    assert_true(file_exists(f->ckdir, "sess-0.index"));
}

/* A graph with nothing but the global step (a program that forgot
 * ckpt_graph_add_var): the saver the hook writes through warns once that
 * its checkpoints hold only the step, whether it is the hook's own or the
 * session's scaffold saver (use_scaffold); a graph with variables draws no
 * such warning. */
static void test_only_global_step_warns(void **state)
{
    ck_fixture *f = *state;
    ckpt_checkpoint_hook_options o = plain_hook(f, CKPT_SAVE_SYNC, 2);
    ckpt_session_options so = plain_session(f);
    ckpt_monitored_session *ms = NULL;
    ckpt_graph *g = NULL;
    int64_t step = 0;
    const char *want = "saver saves no variable but the global step";
    ckpt_hook h;
    capture c;
    char *text;
    capture_start(&c, f);
    ms = start_session(f, &o, &so, &h);
    finish_session(f, ms, 2);
    text = capture_end(&c);
    assert_int_equal(test_count(text, want), 0);
    free(text);

    assert_ckpt_ok(ckpt_graph_new(&g));
    assert_ckpt_ok(ckpt_graph_create_global_step(g, &step));
    o.checkpoint_dir = f->root;
    for (int scaffold = 0; scaffold <= 1; scaffold++) {
        o.use_scaffold = scaffold;
        so.checkpoint_dir = scaffold ? f->root : NULL;
        assert_ckpt_ok(ckpt_checkpoint_hook_new(&h, &o));
        capture_start(&c, f);
        assert_ckpt_ok(ckpt_monitored_session_new(&ms, g, &h, 1, &so));
        assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
        ckpt_monitored_session_free(ms);
        text = capture_end(&c);
        assert_int_equal(test_count(text, want), 1);
        assert_non_null(strstr(text, "ckpt: warn: CheckpointSaverHook: "));
        assert_non_null(strstr(text, scaffold ? "the session's scaffold saver"
                                              : "the hook's own saver"));
        free(text);
    }
    ckpt_graph_free(g);
}

/* ---- 4. one directory setting ----------------------------------------------
 */

/* The hook's directory alone: a second run resumes from it. */
static void test_hook_dir_alone_resumes(void **state)
{
    ck_fixture *f = *state;
    ckpt_checkpoint_hook_options o = plain_hook(f, CKPT_SAVE_SYNC, 5);
    ckpt_session_options so = quiet_session(f);
    ckpt_monitored_session *ms = NULL;
    ckpt_hook h;
    ms = start_session(f, &o, &so, &h);
    finish_session(f, ms, 7);
    assert_int_equal(ck_latest_step(f), 7);

    ck_fill(f, 0); /* a new process starts from scratch */
    ms = start_session(f, &o, &so, &h);
    assert_int_equal(f->gstep, 7); /* restored */
    assert_true(f->vals[1] == ck_value(7, 1));
    ckpt_monitored_session_free(ms);
}

/* A variable registered since the last checkpoint: session creation fails
 * with CKPT_EINVAL naming the variable, as ckpt_saver_restore_latest does
 * (it was CKPT_ENOTFOUND, which that call keeps for "no checkpoint"), and
 * the message names the checkpoint once (it used to repeat the prefix:
 * "session: restoring P: restore P: ..."). */
static void test_restore_error_names_checkpoint_once(void **state)
{
    ck_fixture *f = *state;
    ckpt_checkpoint_hook_options o = plain_hook(f, CKPT_SAVE_SYNC, 5);
    ckpt_session_options so = quiet_session(f);
    ckpt_monitored_session *ms = NULL;
    float extra[2] = {0};
    char prefix[4200];
    ckpt_var v;
    ckpt_hook h;
    const char *msg;
    ms = start_session(f, &o, &so, &h);
    finish_session(f, ms, 5);
    snprintf(prefix, sizeof(prefix), "%s/model.ckpt-5", f->ckdir);

    v = test_float_var("extra", extra, 2);
    assert_ckpt_ok(ckpt_graph_add_var(f->graph, &v));
    assert_ckpt_ok(ckpt_checkpoint_hook_new(&h, &o));
    assert_ckpt_error(ckpt_monitored_session_new(&ms, f->graph, &h, 1, &so),
                      CKPT_EINVAL, "'extra'");
    msg = ckpt_error_last()->message;
    assert_non_null(strstr(msg, "session: restoring the checkpoint: the "
                                "latest checkpoint does not hold every "
                                "registered variable"));
    assert_int_equal(test_count(msg, prefix), 1);
}

/* A checkpoint holding a negative global step (no run of this program
 * saves one): the hook's first save refuses it, and the error names the
 * checkpoint the session was restored from, the likely cause. */
static void test_after_create_error_names_restored_checkpoint(void **state)
{
    ck_fixture *f = *state;
    ckpt_checkpoint_hook_options o = plain_hook(f, CKPT_SAVE_SYNC, 5);
    ckpt_session_options so = quiet_session(f);
    ckpt_saver_options sopts = ck_saver_options(f, CKPT_BUSY_WAIT);
    ckpt_monitored_session *ms = NULL;
    ckpt_saver *sv = NULL;
    char prefix[4200];
    ckpt_hook h;
    const char *msg;
    ms = start_session(f, &o, &so, &h);
    finish_session(f, ms, 5);

    /* model.ckpt-7 holds global step -5 */
    assert_ckpt_ok(ckpt_saver_open(&sv, f->ckdir, &sopts));
    for (size_t i = 0; i < ckpt_graph_num_vars(f->graph); i++)
        assert_ckpt_ok(ckpt_saver_add_var(sv, ckpt_graph_var(f->graph, i)));
    f->gstep = -5; /* the graph registers it as variable global_step */
    assert_ckpt_ok(ckpt_saver_save(sv, 7, NULL));
    assert_ckpt_ok(ckpt_saver_close(sv, -1));
    ckpt_saver_free(sv);
    snprintf(prefix, sizeof(prefix), "%s/model.ckpt-7", f->ckdir);

    assert_ckpt_ok(ckpt_checkpoint_hook_new(&h, &o));
    assert_ckpt_error(ckpt_monitored_session_new(&ms, f->graph, &h, 1, &so),
                      CKPT_ESTATE, "the global step -5 is negative");
    msg = ckpt_error_last()->message;
    assert_non_null(strstr(msg, "the session was restored from "));
    assert_non_null(strstr(msg, prefix));
}

/* The session restores from the hook's directory through a saver of its
 * own; opening that saver must not apply its default retention (5) to the
 * checkpoints the hook keeps (10 here). */
static void test_resume_keeps_hook_retention(void **state)
{
    ck_fixture *f = *state;
    ckpt_checkpoint_hook_options o = plain_hook(f, CKPT_SAVE_SYNC, 1);
    ckpt_saver_options sv = CKPT_SAVER_OPTIONS_INIT;
    ckpt_session_options so = quiet_session(f);
    ckpt_monitored_session *ms = NULL;
    ckpt_hook h;
    sv.max_to_keep = 10;
    sv.fs = &f->cfs.fwd.fs;
    o.saver_options = &sv;
    ms = start_session(f, &o, &so, &h);
    run_steps(f, ms, 12);
    ckpt_monitored_session_free(ms);
    assert_int_equal(count_files(f->ckdir, ".index"), 10);
    ms = start_session(f, &o, &so, &h);
    assert_int_equal(f->gstep, 12); /* restored */
    assert_int_equal(count_files(f->ckdir, ".index"), 10);
    ckpt_monitored_session_free(ms);
    assert_int_equal(count_files(f->ckdir, ".index"), 10);
    assert_true(file_exists(f->ckdir, "model.ckpt-3.index"));
}

/* The session's directory alone serves the hook (use_scaffold or not). */
static void test_session_dir_alone_saves(void **state)
{
    ck_fixture *f = *state;
    ckpt_checkpoint_hook_options o = plain_hook(f, CKPT_SAVE_ASYNC, 2);
    ckpt_session_options so = quiet_session(f);
    ckpt_monitored_session *ms = NULL;
    ckpt_hook h;
    so.checkpoint_dir = f->ckdir;
    o.checkpoint_dir = NULL;
    for (int scaffold = 0; scaffold < 2; scaffold++) {
        o.use_scaffold = scaffold;
        ms = start_session(f, &o, &so, &h);
        finish_session(f, ms, 2);
        assert_int_equal(ck_latest_step(f), 2 * (scaffold + 1));
    }
}

static void test_dirs_disagree_or_missing(void **state)
{
    ck_fixture *f = *state;
    ckpt_checkpoint_hook_options o = plain_hook(f, CKPT_SAVE_SYNC, 2);
    ckpt_session_options so = quiet_session(f);
    ckpt_monitored_session *ms = NULL;
    char other[4200];
    ckpt_hook h;
    snprintf(other, sizeof(other), "%s/other", f->root);
    so.checkpoint_dir = other;
    assert_ckpt_ok(ckpt_checkpoint_hook_new(&h, &o));
    assert_ckpt_error(ckpt_monitored_session_new(&ms, f->graph, &h, 1, &so),
                      CKPT_EINVAL, "disagrees with checkpoint_dir");
    assert_null(ms);
    assert_true(strstr(ckpt_error_last()->message, other) != NULL);
    assert_true(strstr(ckpt_error_last()->message, f->ckdir) != NULL);
    /* The same directory twice (a trailing '/' aside) is fine. */
    snprintf(other, sizeof(other), "%s/", f->ckdir);
    ms = start_session(f, &o, &so, &h);
    ckpt_monitored_session_free(ms);
    /* ... and so is another spelling of it: "." components and repeated
     * '/', or a symbolic link to it (they were CKPT_EINVAL, compared as
     * strings) */
    snprintf(other, sizeof(other), "%s//./", f->ckdir);
    ms = start_session(f, &o, &so, &h);
    ckpt_monitored_session_free(ms);
    snprintf(other, sizeof(other), "%s/link", f->root);
    assert_int_equal(symlink(f->ckdir, other), 0);
    ms = start_session(f, &o, &so, &h);
    ckpt_monitored_session_free(ms);
    assert_int_equal(unlink(other), 0);
    /* Neither names one. */
    so.checkpoint_dir = NULL;
    o.checkpoint_dir = NULL;
    assert_ckpt_ok(ckpt_checkpoint_hook_new(&h, &o));
    assert_ckpt_error(ckpt_monitored_session_new(&ms, f->graph, &h, 1, &so),
                      CKPT_EINVAL,
                      "set checkpoint_dir in the hook's options or the "
                      "session's");
    /* Two checkpoint hooks, two directories: both settings come from hook
     * options, which the message says (it read as one setting disagreeing
     * with itself). */
    {
        ckpt_checkpoint_hook_options o2 = plain_hook(f, CKPT_SAVE_SYNC, 2);
        ckpt_hook hooks[2];
        snprintf(other, sizeof(other), "%s/other", f->root);
        o.checkpoint_dir = f->ckdir;
        o2.checkpoint_dir = other;
        assert_ckpt_ok(ckpt_checkpoint_hook_new(&hooks[0], &o));
        assert_ckpt_ok(ckpt_checkpoint_hook_new(&hooks[1], &o2));
        assert_ckpt_error(
            ckpt_monitored_session_new(&ms, f->graph, hooks, 2, &so),
            CKPT_EINVAL, "disagrees with checkpoint_dir");
        assert_non_null(strstr(ckpt_error_last()->message,
                               "both from the checkpoint hook options (two "
                               "of them on one graph): a graph has one "
                               "checkpoint_dir"));
        assert_null(ms);
    }
}

/* ---- 2. logging and skipped triggers ---------------------------------------
 */

/* No log anywhere: the hook and the session log to stderr at INFO, with
 * the totals at the end; CKPT_LOG_OFF silences both. */
static void test_logs_to_stderr_by_default(void **state)
{
    ck_fixture *f = *state;
    ckpt_checkpoint_hook_options o = plain_hook(f, CKPT_SAVE_SYNC, 2);
    ckpt_session_options so = plain_session(f);
    ckpt_monitored_session *ms = NULL;
    ckpt_hook h;
    capture c;
    char *text;
    o.use_scaffold = 1;
    so.checkpoint_dir = f->ckdir;
    capture_start(&c, f);
    ms = start_session(f, &o, &so, &h);
    finish_session(f, ms, 4);
    text = capture_end(&c);
    assert_int_equal(test_count(text, "ckpt: info: CheckpointSaverHook: "
                                      "saving checkpoint for step"),
                     3);
    assert_int_equal(test_count(text, "CheckpointSaverHook: session ended: "
                                      "3 checkpoint(s) written, 0 "
                                      "trigger(s) skipped, 0 coalesced, 0 "
                                      "failed"),
                     1);
    assert_int_equal(test_count(text, "debug"), 0);
    free(text);

    so.log_level = CKPT_LOG_OFF;
    capture_start(&c, f);
    ms = start_session(f, &o, &so, &h);
    finish_session(f, ms, 2);
    text = capture_end(&c);
    assert_string_equal(text, "");
    free(text);
}

/* The default busy policy stays SKIP (one snapshot buffer; see
 * docs/guide.md), but every skip is counted and reported: at the 1st and
 * the 10th, with the count and the remedy, and in the totals. */
static void test_default_policy_skips_and_reports(void **state)
{
    ck_fixture *f = *state;
    ckpt_checkpoint_hook_options o = plain_hook(f, CKPT_SAVE_ASYNC, 1);
    ckpt_session_options so = quiet_session(f);
    ckpt_saver_options sv = ck_saver_options(f, CKPT_BUSY_SKIP);
    ckpt_monitored_session *ms = NULL;
    ckpt_saver_metrics m;
    ckpt_hook h;
    sv.busy_policy = 0; /* the default */
    o.saver_options = &sv;
    assert_ckpt_ok(ckpt_checkpoint_hook_new(&h, &o));
    assert_ckpt_ok(ckpt_monitored_session_new(&ms, f->graph, &h, 1, &so));
    ck_wait_idle(&h);
    gate_close(&f->cfs.gate);
    run_steps(f, ms, 1); /* dispatched; its write waits at the gate */
    gate_wait_blocked(&f->cfs.gate);
    run_steps(f, ms, 12); /* 12 triggers skipped */
    m = ck_metrics(&h);
    assert_int_equal(m.saves_skipped, 12);
    assert_int_equal(m.saves_coalesced, 0);
    assert_int_equal(ck_log_count(f, "1 trigger(s) skipped so far"), 1);
    assert_int_equal(ck_log_count(f, "10 trigger(s) skipped so far"), 1);
    assert_int_equal(ck_log_count(f, "trigger(s) skipped so far"), 2);
    assert_int_equal(ck_log_count(f, "CKPT_BUSY_COALESCE"), 2);
    /* the remedy names the options of the saver the hook opens */
    assert_int_equal(ck_log_count(f, "set busy_policy in saver_options to"), 2);
    /* One snapshot buffer: COALESCE would need two. */
    gate_open(&f->cfs.gate);
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    assert_int_equal(ck_log_count(f, "12 trigger(s) skipped, 0 coalesced"), 1);
    ckpt_monitored_session_free(ms);
}

/* log_level 0 means INFO: DEBUG lines are not passed on. */
static void test_log_level_zero_is_info(void **state)
{
    ck_fixture *f = *state;
    ckpt_saver_options sv = ck_saver_options(f, CKPT_BUSY_SKIP);
    ckpt_saver_listener ls[1];
    ckpt_checkpoint_hook_options o =
        ck_hook_options(f, CKPT_SAVE_SYNC, 2, &sv, ls, 1);
    ckpt_session_options so = quiet_session(f);
    ckpt_monitored_session *ms = NULL;
    ckpt_hook h;
    sv.log_level = 0;
    ms = start_session(f, &o, &so, &h);
    run_steps(f, ms, 2);
    ckpt_monitored_session_free(ms);
    assert_true(ck_log_count(f, "saving checkpoint for step") >= 2);
    /* "calling 1 checkpoint listener(s)" is logged at DEBUG */
    assert_int_equal(ck_log_count(f, "checkpoint listener(s) before"), 0);
    for (int i = 0; i < f->nlog; i++)
        assert_true(f->log_levels[i] >= CKPT_LOG_INFO);
}

/* ---- 3. the listener stop protocol -----------------------------------------
 */

static int stop_after_save(ckpt_session *s, int64_t step, const char *prefix,
                           int *stop, void *payload)
{
    int *calls = payload;
    (void)s;
    (void)prefix;
    (void)stop;
    (*calls)++;
    return step >= 2 ? CKPT_LISTENER_STOP : 0; /* TF: return True */
}

static void test_after_save_true_stops(void **state)
{
    ck_fixture *f = *state;
    for (int mode = CKPT_SAVE_SYNC; mode <= CKPT_SAVE_ASYNC; mode++) {
        ckpt_checkpoint_hook_options o = plain_hook(f, mode, 2);
        ckpt_session_options so = plain_session(f);
        ckpt_saver_listener l = {CKPT_LISTENER_VERSION, NULL, NULL, NULL,
                                 stop_after_save,       NULL};
        ckpt_monitored_session *ms = NULL;
        ckpt_hook h;
        int calls = 0, err = 0, steps = 0;
        l.payload = &calls;
        o.listeners = &l;
        o.num_listeners = 1;
        so.log_level = CKPT_LOG_OFF;
        ck_fill(f, 0);
        assert_ckpt_ok(ckpt_checkpoint_hook_new(&h, &o));
        so.not_chief = 1; /* start at step 0 each time */
        assert_ckpt_ok(ckpt_monitored_session_new(&ms, f->graph, &h, 1, &so));
        while (steps < 20 && !ckpt_monitored_session_should_stop(ms, &err)) {
            assert_ckpt_ok(ck_run(f, ms));
            steps++;
            if (mode == CKPT_SAVE_ASYNC)
                assert_ckpt_ok(ckpt_checkpoint_hook_wait(&h, 60.0));
        }
        assert_ckpt_ok(err);
        assert_true(steps < 20);
        assert_true(f->gstep >= 2 && f->gstep <= 4);
        assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
        assert_true(calls >= 2);
        ckpt_monitored_session_free(ms);
    }
}

static int true_from_before_save(ckpt_session *s, int64_t step, void *payload)
{
    (void)s;
    (void)step;
    (void)payload;
    return 1;
}

/* Elsewhere a positive return is an error that names the right way. */
static void test_before_save_true_names_the_way(void **state)
{
    ck_fixture *f = *state;
    ckpt_checkpoint_hook_options o = plain_hook(f, CKPT_SAVE_SYNC, 2);
    ckpt_session_options so = quiet_session(f);
    ckpt_saver_listener l = {CKPT_LISTENER_VERSION, NULL, NULL,
                             true_from_before_save, NULL, NULL};
    ckpt_monitored_session *ms = NULL;
    ckpt_hook h;
    o.listeners = &l;
    o.num_listeners = 1;
    assert_ckpt_ok(ckpt_checkpoint_hook_new(&h, &o));
    assert_ckpt_error(ckpt_monitored_session_new(&ms, f->graph, &h, 1, &so),
                      CKPT_EUSER,
                      "before_save returned 1 at step 0: return 0 or a "
                      "negative error (only after_save stops training by "
                      "returning CKPT_LISTENER_STOP)");
}

/* A listener array with num_listeners left at 0 (TensorFlow has no count
 * to forget) was silently ignored: the listener never ran. Now refused,
 * naming both fields; NULL with 0 is "no listeners". */
static void test_listeners_without_count_refused(void **state)
{
    ck_fixture *f = *state;
    ckpt_checkpoint_hook_options o = plain_hook(f, CKPT_SAVE_SYNC, 2);
    ckpt_saver_listener l = {CKPT_LISTENER_VERSION, NULL, NULL,
                             true_from_before_save, NULL, NULL};
    ckpt_hook h;
    o.listeners = &l;
    assert_ckpt_error(ckpt_checkpoint_hook_new(&h, &o), CKPT_EINVAL,
                      "checkpoint hook: listeners is set but num_listeners "
                      "is 0 (set num_listeners to the number of listeners; "
                      "leave listeners NULL for none)");
    o.listeners = NULL;
    assert_ckpt_ok(ckpt_checkpoint_hook_new(&h, &o));
    ckpt_hook_free(&h);
}

/* The session's clock serves hooks given none, as its file system and log
 * do: the checkpoint hook's save_secs, the step counter's every_n_secs,
 * and the timestamps (and so keep_checkpoint_every_n_hours) of the saver
 * the hook opens. The hook's timer and saver once read the system clock,
 * so a loop driven by its own clock never saved on time. */
static void test_session_clock_serves_hooks(void **state)
{
    ck_fixture *f = *state;
    ckpt_checkpoint_hook_options o = plain_hook(f, CKPT_SAVE_SYNC, 0);
    ckpt_step_counter_hook_options co = CKPT_STEP_COUNTER_HOOK_OPTIONS_INIT;
    ckpt_session_options so = plain_session(f);
    ckpt_monitored_session *ms = NULL;
    ckpt_hook hooks[2];
    ckpt_state st = CKPT_STATE_INIT;
    char *state_path;
    ckpt_buf text = CKPT_BUF_INIT;
    ckpt_saver_options lo = ck_saver_options(f, CKPT_BUSY_SKIP);
    o.clock = NULL;
    o.save_steps = 0;
    o.save_secs = 25;
    co.every_n_steps = 0;
    co.every_n_secs = 35;
    so.log = lo.log; /* the fixture's recording log */
    so.log_payload = f;
    f->secs_per_step = 10;
    assert_ckpt_ok(ckpt_checkpoint_hook_new(&hooks[0], &o));
    assert_ckpt_ok(ckpt_step_counter_hook_new(&hooks[1], &co));
    assert_ckpt_ok(ckpt_monitored_session_new(&ms, f->graph, hooks, 2, &so));
    run_steps(f, ms, 6); /* session time 1000 .. 1060 */
    /* step 0 at creation; 25 s later the trigger of step 3 (at 1030) */
    assert_true(ck_has_checkpoint(f, 0));
    assert_false(ck_has_checkpoint(f, 2));
    assert_true(ck_has_checkpoint(f, 3));
    assert_false(ck_has_checkpoint(f, 4));
    assert_true(ck_has_checkpoint(f, 6));
    assert_int_equal(ck_log_count(f, "global_step/sec"), 1);
    state_path = test_path(f->ckdir, "checkpoint");
    assert_ckpt_ok(ckpt_fs_read_file(&text, NULL, state_path));
    assert_ckpt_ok(ckpt_state_parse(&st, text.ptr, text.size, state_path));
    assert_int_equal(st.num_timestamps, 3);
    assert_true(st.timestamps[0] == 1000.0);
    assert_true(st.timestamps[2] == 1060.0);
    ckpt_state_dispose(&st);
    ckpt_buf_dispose(&text);
    free(state_path);
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    ckpt_monitored_session_free(ms);
}

/* ---- 5. lifecycle -----------------------------------------------------------
 */

static void count_destroy(void *payload)
{
    (*(int *)payload)++;
}

static void test_hook_free(void **state)
{
    ck_fixture *f = *state;
    ckpt_checkpoint_hook_options o = plain_hook(f, CKPT_SAVE_ASYNC, 2);
    ckpt_hook h;
    int destroyed = 0;
    ckpt_hook user = {.version = CKPT_HOOK_VERSION,
                      .name = "mine",
                      .payload = &destroyed,
                      .destroy = count_destroy};
    ckpt_hook_free(&user);
    assert_int_equal(destroyed, 1);
    ckpt_hook_free(&user); /* zeroed: nothing */
    assert_int_equal(destroyed, 1);
    ckpt_hook_free(NULL);
    /* A checkpoint hook never handed to a session (ASan checks the leak). */
    assert_ckpt_ok(ckpt_checkpoint_hook_new(&h, &o));
    ckpt_hook_free(&h);
    assert_null(h.payload);
}

/* A session destroys the hooks it was given when it is freed; the
 * caller's copies still pointed at the payloads, so a ckpt_hook_free of
 * one freed a payload twice, and ckpt_checkpoint_hook_metrics or handing
 * it to a new session read freed memory. Each is now refused (ASan and
 * valgrind check that nothing freed is read). */
static void test_hook_copies_after_session_freed(void **state)
{
    ck_fixture *f = *state;
    ckpt_checkpoint_hook_options o = plain_hook(f, CKPT_SAVE_SYNC, 2);
    ckpt_session_options so = quiet_session(f), second;
    ckpt_monitored_session *ms = NULL, *other = NULL;
    ckpt_saver_metrics m;
    ckpt_hook hooks[2], copy;
    assert_ckpt_ok(ckpt_checkpoint_hook_new(&hooks[0], &o));
    assert_ckpt_ok(ckpt_step_counter_hook_new(&hooks[1], NULL));
    ms = ck_session(f, hooks, 2);
    /* a copy given to a second session while the first holds it: both
     * would run it and destroy it */
    copy = hooks[1];
    second = ck_session_options(f, 0, NULL);
    assert_ckpt_error(
        ckpt_monitored_session_new(&other, f->graph, &copy, 1, &second),
        CKPT_EINVAL,
        "hooks[0] ('StepCounterHook') is held by another "
        "monitored session");
    assert_null(other);
    finish_session(f, ms, 2);
    assert_ckpt_error(ckpt_checkpoint_hook_metrics(&hooks[0], &m), CKPT_EINVAL,
                      "ckpt_checkpoint_hook_metrics: hook is not a checkpoint "
                      "hook (or no longer one: the monitored session it was "
                      "handed to destroyed it when it was freed)");
    assert_ckpt_error(ckpt_checkpoint_hook_wait(&hooks[0], 1.0), CKPT_EINVAL,
                      "no longer one");
    ckpt_error_clear();
    ckpt_hook_free(&hooks[1]);
    assert_int_equal(ckpt_error_last()->code, CKPT_ESTATE);
    assert_non_null(strstr(ckpt_error_last()->message,
                           "hook 'StepCounterHook' was already destroyed"));
    assert_null(hooks[1].payload); /* zeroed: a second call does nothing */
    ckpt_error_clear();
    ckpt_hook_free(&hooks[1]);
    assert_int_equal(ckpt_error_last()->code, 0);
    /* refused without destroying it again, and zeroed as any hook given
     * to a failed creation */
    ms = NULL;
    assert_ckpt_error(
        ckpt_monitored_session_new(&ms, f->graph, hooks, 1, &so), CKPT_EINVAL,
        "hooks[0] ('CheckpointSaverHook') is a copy of one of the library's "
        "hooks that the monitored session it was handed to destroyed when "
        "it was freed: make the hook again");
    assert_null(ms);
    assert_null(hooks[0].payload);
}

/* A stale copy is known by its serial, not its payload's address: once a
 * newer hook's payload takes the same memory (forced here by copying the
 * new hook's payload into the stale copy), the stale copy is still
 * refused and the new hook left alone. */
static void test_stale_copy_told_from_newer_hook(void **state)
{
    ck_fixture *f = *state;
    ckpt_session_options so = quiet_session(f);
    ckpt_monitored_session *ms = NULL;
    ckpt_hook h, stale, fresh;
    assert_ckpt_ok(ckpt_step_counter_hook_new(&h, NULL));
    stale = h;
    ms = ck_session(f, &h, 1);
    finish_session(f, ms, 1);
    assert_ckpt_ok(ckpt_step_counter_hook_new(&fresh, NULL));
    assert_true(fresh.serial != 0 && fresh.serial != stale.serial);
    stale.payload = fresh.payload; /* as if the allocator reused it */
    ckpt_error_clear();
    ckpt_hook_free(&stale);
    assert_int_equal(ckpt_error_last()->code, CKPT_ESTATE);
    assert_non_null(strstr(ckpt_error_last()->message, "already destroyed"));
    ms = NULL;
    stale = h;
    stale.payload = fresh.payload;
    assert_ckpt_error(ckpt_monitored_session_new(&ms, f->graph, &stale, 1, &so),
                      CKPT_EINVAL,
                      "hooks[0] ('StepCounterHook') is a copy of one of the "
                      "library's hooks that the monitored session");
    /* the fresh hook is untouched by both refusals: it runs and is freed
     * once (ASan checks) */
    ms = ck_session(f, &fresh, 1);
    finish_session(f, ms, 1);
}

static int mislabelled_destroyed;

static void count_mislabelled_destroy(void *payload)
{
    (void)payload;
    mislabelled_destroyed++;
}

/* A hook of the caller's own with a library kind set (the header says to
 * leave it 0) is refused naming it, and destroyed like any hook given to
 * a failed creation (it used to be taken for a stale copy and leaked);
 * ckpt_checkpoint_hook_wait says why it is not a checkpoint hook. */
static void test_mislabelled_user_hook(void **state)
{
    ck_fixture *f = *state;
    ckpt_session_options so = quiet_session(f);
    ckpt_monitored_session *ms = NULL;
    int payload = 0;
    ckpt_hook mine = {.version = CKPT_HOOK_VERSION,
                      .name = "mine",
                      .payload = &payload,
                      .destroy = count_mislabelled_destroy,
                      .kind = CKPT_HOOK_KIND_CHECKPOINT};
    mislabelled_destroyed = 0;
    assert_ckpt_error(ckpt_checkpoint_hook_wait(&mine, 1.0), CKPT_EINVAL,
                      "hook is not a checkpoint hook (its kind is set, but "
                      "ckpt_checkpoint_hook_new did not make it)");
    assert_ckpt_error(ckpt_monitored_session_new(&ms, f->graph, &mine, 1, &so),
                      CKPT_EINVAL,
                      "hooks[0] ('mine') has kind 1, which only the "
                      "library's hook constructors set: leave kind 0");
    assert_null(ms);
    assert_int_equal(mislabelled_destroyed, 1);
    assert_null(mine.payload);
    /* ckpt_hook_free of such a hook destroys it, as any hook of yours */
    mine = (ckpt_hook){.version = CKPT_HOOK_VERSION,
                       .name = "mine",
                       .payload = &payload,
                       .destroy = count_mislabelled_destroy,
                       .kind = CKPT_HOOK_KIND_STEP_COUNTER};
    ckpt_hook_free(&mine);
    assert_int_equal(mislabelled_destroyed, 2);
}

/* A graph variable over the global step's memory (the step registered a
 * second time under a name of the caller's): the session's creation is
 * refused, naming both, before any checkpoint is written. */
static void test_graph_var_sharing_memory_refused(void **state)
{
    ck_fixture *f = *state;
    ckpt_checkpoint_hook_options o = plain_hook(f, CKPT_SAVE_ASYNC, 2);
    ckpt_session_options so = quiet_session(f);
    ckpt_monitored_session *ms = NULL;
    ckpt_hook h;
    ckpt_var step = {
        .name = "my_step", .dtype = CKPT_DT_INT64, .data = &f->gstep};
    assert_ckpt_ok(ckpt_graph_add_var(f->graph, &step));
    assert_ckpt_ok(ckpt_checkpoint_hook_new(&h, &o));
    assert_ckpt_error(ckpt_monitored_session_new(&ms, f->graph, &h, 1, &so),
                      CKPT_EINVAL, "variables 'global_step' (8 bytes at ");
    assert_non_null(
        strstr(ckpt_error_last()->message, "and 'my_step' (8 bytes at "));
    assert_null(ms);
    assert_int_equal(ck_latest_step(f), -1);
    assert_false(ck_has_checkpoint(f, 0));
}

/* The newest checkpoint damaged: the session's creation fails and says
 * the way on (restore_from, and where the older checkpoints are listed),
 * as ckpt_saver_restore_latest does; it said only "checksum mismatch". */
static void test_damaged_latest_says_way_on(void **state)
{
    ck_fixture *f = *state;
    ckpt_checkpoint_hook_options o = plain_hook(f, CKPT_SAVE_SYNC, 2);
    ckpt_session_options so = quiet_session(f);
    ckpt_monitored_session *ms = NULL;
    ckpt_hook h;
    char path[4200];
    FILE *fp;
    int c;
    assert_ckpt_ok(ckpt_checkpoint_hook_new(&h, &o));
    ms = ck_session(f, &h, 1);
    finish_session(f, ms, 2);
    assert_int_equal(ck_latest_step(f), 2);
    snprintf(path, sizeof(path), "%s/model.ckpt-2.data-00000-of-00001",
             f->ckdir);
    fp = fopen(path, "r+b");
    assert_non_null(fp);
    c = fgetc(fp);
    assert_int_equal(fseek(fp, 0, SEEK_SET), 0);
    fputc(c ^ 0x40, fp);
    assert_int_equal(fclose(fp), 0);
    assert_ckpt_ok(ckpt_checkpoint_hook_new(&h, &o));
    ms = NULL;
    assert_ckpt_error(ckpt_monitored_session_new(&ms, f->graph, &h, 1, &so),
                      CKPT_ECORRUPT,
                      "the session does not fall back by itself: give an "
                      "older checkpoint as the session options' "
                      "restore_from; 'ckpt ls ");
    assert_null(ms);
    /* and restore_from the older one works */
    snprintf(path, sizeof(path), "%s/model.ckpt-0", f->ckdir);
    so.restore_from = path;
    assert_ckpt_ok(ckpt_checkpoint_hook_new(&h, &o));
    assert_ckpt_ok(ckpt_monitored_session_new(&ms, f->graph, &h, 1, &so));
    ckpt_monitored_session_free(ms);
}

/* Wait for the write in flight: after_save is delivered, no polling. */
static void test_hook_wait(void **state)
{
    ck_fixture *f = *state;
    ckpt_saver_listener ls[1];
    ckpt_saver_options sv = ck_saver_options(f, CKPT_BUSY_SKIP);
    ckpt_checkpoint_hook_options o =
        ck_hook_options(f, CKPT_SAVE_ASYNC, 2, &sv, ls, 1);
    ckpt_monitored_session *ms = NULL;
    ck_event ev[8];
    ckpt_hook h;
    ckpt_hook user = {.version = CKPT_HOOK_VERSION, .name = "mine"};
    assert_ckpt_ok(ckpt_checkpoint_hook_new(&h, &o));
    assert_ckpt_ok(ckpt_checkpoint_hook_wait(&h, 1.0)); /* no session yet */
    ms = ck_session(f, &h, 1);
    assert_ckpt_ok(ckpt_checkpoint_hook_wait(&h, 60.0));
    assert_int_equal(ck_events(f, EV_AFTER, ev, 8), 1); /* step 0 */
    gate_close(&f->cfs.gate);
    run_steps(f, ms, 2); /* step 2 dispatched, held */
    gate_wait_blocked(&f->cfs.gate);
    assert_int_equal(ckpt_checkpoint_hook_wait(&h, 0.05), CKPT_ETIMEDOUT);
    gate_open(&f->cfs.gate);
    assert_ckpt_ok(ckpt_checkpoint_hook_wait(&h, 60.0));
    assert_int_equal(ck_events(f, EV_AFTER, ev, 8), 2);
    assert_int_equal(ck_metrics(&h).saves_completed, 2);
    assert_ckpt_error(ckpt_checkpoint_hook_wait(&user, 1.0), CKPT_EINVAL,
                      "not a checkpoint hook");
    assert_ckpt_error(ckpt_checkpoint_hook_wait(NULL, 1.0), CKPT_EINVAL,
                      "hook is NULL");
    ckpt_monitored_session_free(ms);
}

/* The library's hooks are recognised by kind and payload, not by their
 * callbacks: a user hook reusing the callbacks is not a checkpoint hook,
 * and a foreign payload under the checkpoint kind is refused. */
static void test_hook_kind(void **state)
{
    ck_fixture *f = *state;
    ckpt_checkpoint_hook_options o = plain_hook(f, CKPT_SAVE_SYNC, 2);
    ckpt_saver_metrics m;
    ckpt_hook h, copy;
    int64_t foreign[4] = {0, 0, 0, 0};
    assert_ckpt_ok(ckpt_checkpoint_hook_new(&h, &o));
    assert_int_equal(h.kind, CKPT_HOOK_KIND_CHECKPOINT);
    copy = h;
    assert_ckpt_ok(ckpt_checkpoint_hook_metrics(&copy, &m));
    copy.kind = CKPT_HOOK_KIND_USER;
    assert_ckpt_error(ckpt_checkpoint_hook_metrics(&copy, &m), CKPT_EINVAL,
                      "not a checkpoint hook");
    copy.kind = CKPT_HOOK_KIND_CHECKPOINT;
    copy.payload = foreign;
    assert_ckpt_error(ckpt_checkpoint_hook_metrics(&copy, &m), CKPT_EINVAL,
                      "not a checkpoint hook");
    ckpt_hook_free(&h);
}

/* ---- 6. options structs
 * ------------------------------------------------------ */

static void test_zeroed_options_name_the_init_macro(void **state)
{
    ck_fixture *f = *state;
    ckpt_checkpoint_hook_options o;
    ckpt_session_options so;
    ckpt_saver_options sv;
    ckpt_monitored_session *ms = NULL;
    ckpt_saver *saver = NULL;
    ckpt_hook h;
    memset(&o, 0, sizeof(o));
    memset(&so, 0, sizeof(so));
    memset(&sv, 0, sizeof(sv));
    o.checkpoint_dir = f->ckdir;
    o.save_steps = 10;
    assert_ckpt_error(ckpt_checkpoint_hook_new(&h, &o), CKPT_EVERSION,
                      "unsupported version 0 (the struct was not initialised): "
                      "start from CKPT_CHECKPOINT_HOOK_OPTIONS_INIT");
    assert_ckpt_error(ckpt_monitored_session_new(&ms, f->graph, NULL, 0, &so),
                      CKPT_EVERSION, "CKPT_SESSION_OPTIONS_INIT");
    assert_ckpt_error(ckpt_saver_open(&saver, f->root, &sv), CKPT_EVERSION,
                      "CKPT_SAVER_OPTIONS_INIT");
    /* A version no header had is most likely stack garbage: an options
     * struct never initialised (it said only "built against a newer ckpt
     * header?") */
    sv.version = 2779096485u;
    assert_ckpt_error(ckpt_saver_open(&saver, f->root, &sv), CKPT_EVERSION,
                      "unsupported version 2779096485: this library knows "
                      "versions 1 to ");
    assert_ckpt_error(ckpt_saver_open(&saver, f->root, &sv), CKPT_EVERSION,
                      "(the struct was not initialised: start from "
                      "CKPT_SAVER_OPTIONS_INIT; or the program was built "
                      "against a newer ckpt header)");
    sv.version = 0;
    /* With the version set, every zero field is its default. */
    o.version = CKPT_CHECKPOINT_HOOK_OPTIONS_VERSION;
    so.version = CKPT_SESSION_OPTIONS_VERSION;
    so.log_level = CKPT_LOG_OFF;
    ms = start_session(f, &o, &so, &h);
    ckpt_monitored_session_free(ms);
    sv.version = CKPT_SAVER_OPTIONS_VERSION;
    assert_ckpt_ok(ckpt_saver_open(&saver, f->root, &sv));
    assert_int_equal(ckpt_saver_get_options(saver)->max_to_keep, 5);
    assert_string_equal(ckpt_saver_get_options(saver)->basename, "model.ckpt");
    ckpt_saver_free(saver);
}

/* A caller built against version 1 (before checkpoint_basename) keeps
 * working; the field it lacks keeps its default; a newer version fails. */
static void test_older_version_accepted(void **state)
{
    ck_fixture *f = *state;
    ckpt_checkpoint_hook_options o = plain_hook(f, CKPT_SAVE_SYNC, 2);
    ckpt_session_options so = quiet_session(f);
    ckpt_monitored_session *ms = NULL;
    ckpt_hook h;
    o.version = 1;
    o.checkpoint_basename = "ignored"; /* beyond a version-1 struct */
    ms = start_session(f, &o, &so, &h);
    ckpt_monitored_session_free(ms);
    assert_true(file_exists(f->ckdir, "model.ckpt-0.index"));
    assert_int_equal(count_files(f->ckdir, "ignored"), 0);
    o.version = CKPT_CHECKPOINT_HOOK_OPTIONS_VERSION + 1;
    assert_ckpt_error(ckpt_checkpoint_hook_new(&h, &o), CKPT_EVERSION,
                      "this library knows versions 1 to 2");
    assert_ckpt_ok(ckpt_checkpoint_hook_options_init(&o, 1));
    assert_int_equal(o.version, 1);
    assert_ckpt_error(ckpt_checkpoint_hook_options_init(&o, 0), CKPT_EVERSION,
                      "CKPT_CHECKPOINT_HOOK_OPTIONS_INIT");
}

/* A clock whose version is 0 (zero-initialised) or newer than this
 * library's is refused by every call that takes one, naming where it was
 * given, before any of its members is called. */
static double clock_must_not_run(void *payload)
{
    (void)payload;
    fail_msg("a clock of an unknown version was called");
    return 0.0;
}

static void test_unknown_clock_version_refused(void **state)
{
    ck_fixture *f = *state;
    ckpt_clock bad = {0, NULL, clock_must_not_run, clock_must_not_run};
    ckpt_checkpoint_hook_options o = plain_hook(f, CKPT_SAVE_SYNC, 2);
    ckpt_session_options so = quiet_session(f);
    ckpt_saver_options sv = CKPT_SAVER_OPTIONS_INIT;
    ckpt_step_counter_hook_options sc = CKPT_STEP_COUNTER_HOOK_OPTIONS_INIT;
    ckpt_monitored_session *ms = NULL;
    ckpt_coordinator *co = NULL;
    ckpt_saver *saver = NULL;
    ckpt_timer t;
    ckpt_hook h;
    for (int pass = 0; pass < 2; pass++) {
        bad.version = pass == 0 ? 0 : CKPT_CLOCK_VERSION + 1;
        o.clock = &bad;
        assert_ckpt_error(ckpt_checkpoint_hook_new(&h, &o), CKPT_EVERSION,
                          "checkpoint hook options: ckpt_clock version");
        o.clock = NULL;
        so.clock = &bad;
        assert_ckpt_error(
            ckpt_monitored_session_new(&ms, f->graph, NULL, 0, &so),
            CKPT_EVERSION, "session options: ckpt_clock version");
        so.clock = NULL;
        sv.clock = &bad;
        assert_ckpt_error(ckpt_saver_open(&saver, f->root, &sv), CKPT_EVERSION,
                          "set it to CKPT_CLOCK_VERSION");
        sc.clock = &bad;
        assert_ckpt_error(ckpt_step_counter_hook_new(&h, &sc), CKPT_EVERSION,
                          "StepCounterHook options: ckpt_clock version");
        assert_ckpt_error(ckpt_coordinator_new(&co, &bad), CKPT_EVERSION,
                          "coordinator_new: ckpt_clock version");
        assert_null(co);
        assert_ckpt_error(ckpt_timer_init(&t, 1.0, 0, &bad), CKPT_EVERSION,
                          "timer: ckpt_clock version");
    }
    assert_null(ms);
    assert_null(saver);
}

/* max_to_keep 0 is the default (5); CKPT_KEEP_ALL keeps every one;
 * direct_io takes the shared constants only. */
static void test_saver_zero_means_default(void **state)
{
    ck_fixture *f = *state;
    ckpt_saver_options sv = CKPT_SAVER_OPTIONS_INIT;
    ckpt_saver *saver = NULL;
    ckpt_var v = {"v", CKPT_DT_FLOAT, {1, {4}}, f->vals, NULL, NULL, NULL};
    assert_int_equal(sv.max_to_keep, 0);
    assert_int_equal(sv.log_level, CKPT_LOG_DEFAULT);
    assert_ckpt_ok(ckpt_saver_open(&saver, f->root, &sv));
    assert_ckpt_ok(ckpt_saver_add_var(saver, &v));
    for (int64_t s = 1; s <= 7; s++)
        assert_ckpt_ok(ckpt_saver_save(saver, s, NULL));
    assert_int_equal(ckpt_saver_num_checkpoints(saver), 5);
    ckpt_saver_free(saver);
    sv.direct_io = 2;
    assert_ckpt_error(ckpt_saver_open(&saver, f->root, &sv), CKPT_EINVAL,
                      "CKPT_DIRECT_IO_ON");
    sv.direct_io = CKPT_DIRECT_IO_OFF;
    sv.max_to_keep = -2;
    assert_ckpt_error(ckpt_saver_open(&saver, f->root, &sv), CKPT_EINVAL,
                      "CKPT_KEEP_ALL");
}

/* NULL arguments: CKPT_EINVAL naming the function and the argument; the
 * *_free functions accept NULL. */
static void test_null_arguments(void **state)
{
    ck_fixture *f = *state;
    ckpt_checkpoint_hook_options o = plain_hook(f, CKPT_SAVE_SYNC, 2);
    ckpt_var v = {"v", CKPT_DT_FLOAT, {1, {4}}, f->vals, NULL, NULL, NULL};
    ckpt_saver_metrics m;
    ckpt_hook h;
    int64_t step;
    assert_ckpt_error(ckpt_checkpoint_hook_new(NULL, &o), CKPT_EINVAL,
                      "ckpt_checkpoint_hook_new: out is NULL");
    assert_ckpt_error(ckpt_checkpoint_hook_new(&h, NULL), CKPT_EINVAL,
                      "ckpt_checkpoint_hook_new: opts is NULL");
    assert_ckpt_ok(ckpt_checkpoint_hook_new(&h, &o));
    assert_ckpt_error(ckpt_checkpoint_hook_metrics(&h, NULL), CKPT_EINVAL,
                      "ckpt_checkpoint_hook_metrics: out is NULL");
    assert_ckpt_error(ckpt_checkpoint_hook_metrics(NULL, &m), CKPT_EINVAL,
                      "ckpt_checkpoint_hook_metrics: hook is NULL");
    ckpt_hook_free(&h);
    assert_ckpt_error(ckpt_graph_add_var(NULL, &v), CKPT_EINVAL,
                      "ckpt_graph_add_var: g is NULL");
    assert_ckpt_error(ckpt_graph_add_var(f->graph, NULL), CKPT_EINVAL,
                      "ckpt_graph_add_var: var is NULL");
    assert_ckpt_error(ckpt_session_global_step(NULL, &step), CKPT_EINVAL,
                      "ckpt_session_global_step: s is NULL");
    assert_ckpt_error(ckpt_monitored_session_run(NULL, NULL, ck_step, f, NULL),
                      CKPT_EINVAL, "ckpt_monitored_session_run: ms is NULL");
    assert_ckpt_error(ckpt_monitored_session_before_run(NULL, NULL, NULL),
                      CKPT_EINVAL,
                      "ckpt_monitored_session_before_run: sc_out is NULL");
    assert_ckpt_error(ckpt_monitored_session_close(NULL, 0), CKPT_EINVAL,
                      "ckpt_monitored_session_close: ms is NULL");
    assert_ckpt_error(ckpt_monitored_session_new(NULL, f->graph, NULL, 0, NULL),
                      CKPT_EINVAL, "ckpt_monitored_session_new: out is NULL");
    assert_ckpt_error(ckpt_checkpoint_hook_options_init(
                          NULL, CKPT_CHECKPOINT_HOOK_OPTIONS_VERSION),
                      CKPT_EINVAL,
                      "ckpt_checkpoint_hook_options_init: o is NULL");
    assert_ckpt_error(
        ckpt_session_options_init(NULL, CKPT_SESSION_OPTIONS_VERSION),
        CKPT_EINVAL, "ckpt_session_options_init: opts is NULL");
    ckpt_hook_free(NULL);
    ckpt_monitored_session_free(NULL);
    ckpt_graph_free(NULL);
}

/* The same rule for the coordinator, the preemption handler, the float
 * publish and the training-session builder, which named a shortened
 * function ("coordinator_join: NULL"), not which argument, another
 * function (publish_float's "ckpt_step_context_publish", the builder's
 * "ckpt_monitored_session_new") or no function at all; and the calls
 * without an error code answer for a NULL object as their comments say. */
static void test_null_arguments_elsewhere(void **state)
{
    ck_fixture *f = *state;
    ckpt_coordinator *c = NULL;
    ckpt_monitored_session *ms = (ckpt_monitored_session *)f;
    int id = 7, status = 7;
    int64_t step = 5;
    double secs = 1;
    ckpt_coordinator *none = NULL;
    EXPECT_NULL_ARG(ckpt_coordinator_new(NULL, NULL),
                    "ckpt_coordinator_new: out is NULL");
    assert_ckpt_ok(ckpt_coordinator_new(&c, NULL));
    EXPECT_NULL_ARG(ckpt_coordinator_request_stop(none, CKPT_EIO, "x"),
                    "ckpt_coordinator_request_stop: c is NULL");
    EXPECT_NULL_ARG(ckpt_coordinator_register_thread(c, "t", NULL),
                    "ckpt_coordinator_register_thread: id_out is NULL");
    EXPECT_NULL_ARG(ckpt_coordinator_register_thread(none, "t", &id),
                    "ckpt_coordinator_register_thread: c is NULL");
    assert_int_equal(id, 0); /* cleared: no thread has id 0 */
    EXPECT_NULL_ARG(ckpt_coordinator_join(none, 0, 0),
                    "ckpt_coordinator_join: c is NULL");
    assert_false(ckpt_coordinator_should_stop(c)); /* nothing reached it */
    ckpt_coordinator_free(c);
    EXPECT_NULL_ARG(ckpt_preemption_handler_install(NULL),
                    "ckpt_preemption_handler_install: ms is NULL");
    EXPECT_NULL_ARG(ckpt_step_context_publish_float(NULL, "loss", 1.f),
                    "ckpt_step_context_publish_float: sc is NULL");
    EXPECT_NULL_ARG(ckpt_training_session_new(NULL, f->graph, NULL),
                    "ckpt_training_session_new: out is NULL");
    EXPECT_NULL_ARG(ckpt_training_session_new(&ms, NULL, NULL),
                    "ckpt_training_session_new: graph is NULL");
    assert_null(ms);
    assert_int_equal(ckpt_timer_update(NULL, 3, &secs, &step), 0);
    assert_true(secs == 0.0);
    assert_int_equal(step, 0);
    assert_int_equal(ckpt_timer_last_step(NULL, &step), 0);
    assert_int_equal(ckpt_monitored_session_should_stop(NULL, &status), 1);
    assert_int_equal(status, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_basename_with_scaffold, ck_setup,
                                        ck_teardown),
        cmocka_unit_test_setup_teardown(test_basename_own_saver, ck_setup,
                                        ck_teardown),
        cmocka_unit_test_setup_teardown(
            test_two_savers_in_one_directory_refused, ck_setup, ck_teardown),
        cmocka_unit_test_setup_teardown(test_basename_conflicts, ck_setup,
                                        ck_teardown),
        cmocka_unit_test_setup_teardown(test_basename_from_session_is_logged,
                                        ck_setup, ck_teardown),
        cmocka_unit_test_setup_teardown(
            test_restore_error_names_checkpoint_once, ck_setup, ck_teardown),
        cmocka_unit_test_setup_teardown(
            test_after_create_error_names_restored_checkpoint, ck_setup,
            ck_teardown),
        cmocka_unit_test_setup_teardown(test_only_global_step_warns, ck_setup,
                                        ck_teardown),
        cmocka_unit_test_setup_teardown(test_hook_dir_alone_resumes, ck_setup,
                                        ck_teardown),
        cmocka_unit_test_setup_teardown(test_resume_keeps_hook_retention,
                                        ck_setup, ck_teardown),
        cmocka_unit_test_setup_teardown(test_session_dir_alone_saves, ck_setup,
                                        ck_teardown),
        cmocka_unit_test_setup_teardown(test_dirs_disagree_or_missing, ck_setup,
                                        ck_teardown),
        cmocka_unit_test_setup_teardown(test_logs_to_stderr_by_default,
                                        ck_setup, ck_teardown),
        cmocka_unit_test_setup_teardown(test_default_policy_skips_and_reports,
                                        ck_setup, ck_teardown),
        cmocka_unit_test_setup_teardown(test_log_level_zero_is_info, ck_setup,
                                        ck_teardown),
        cmocka_unit_test_setup_teardown(test_after_save_true_stops, ck_setup,
                                        ck_teardown),
        cmocka_unit_test_setup_teardown(test_before_save_true_names_the_way,
                                        ck_setup, ck_teardown),
        cmocka_unit_test_setup_teardown(test_listeners_without_count_refused,
                                        ck_setup, ck_teardown),
        cmocka_unit_test_setup_teardown(test_session_clock_serves_hooks,
                                        ck_setup, ck_teardown),
        cmocka_unit_test_setup_teardown(test_hook_free, ck_setup, ck_teardown),
        cmocka_unit_test_setup_teardown(test_hook_copies_after_session_freed,
                                        ck_setup, ck_teardown),
        cmocka_unit_test_setup_teardown(test_stale_copy_told_from_newer_hook,
                                        ck_setup, ck_teardown),
        cmocka_unit_test_setup_teardown(test_mislabelled_user_hook, ck_setup,
                                        ck_teardown),
        cmocka_unit_test_setup_teardown(test_graph_var_sharing_memory_refused,
                                        ck_setup, ck_teardown),
        cmocka_unit_test_setup_teardown(test_damaged_latest_says_way_on,
                                        ck_setup, ck_teardown),
        cmocka_unit_test_setup_teardown(test_hook_wait, ck_setup, ck_teardown),
        cmocka_unit_test_setup_teardown(test_hook_kind, ck_setup, ck_teardown),
        cmocka_unit_test_setup_teardown(test_zeroed_options_name_the_init_macro,
                                        ck_setup, ck_teardown),
        cmocka_unit_test_setup_teardown(test_older_version_accepted, ck_setup,
                                        ck_teardown),
        cmocka_unit_test_setup_teardown(test_unknown_clock_version_refused,
                                        ck_setup, ck_teardown),
        cmocka_unit_test_setup_teardown(test_saver_zero_means_default, ck_setup,
                                        ck_teardown),
        cmocka_unit_test_setup_teardown(test_null_arguments, ck_setup,
                                        ck_teardown),
        cmocka_unit_test_setup_teardown(test_null_arguments_elsewhere, ck_setup,
                                        ck_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
