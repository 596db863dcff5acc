/* tests/hooks/test_training_session.c - the MonitoredTrainingSession-style
 * builder (docs/behaviour.md B40-B43): default frequencies, the rejected
 * double frequency, disabled hooks, hook order on the chief and on a
 * worker, listeners and the checkpoint name, the named frequency
 * constants, one hook given twice, and a listener that saves from
 * after_save. */
#include "session/session_test_util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct fixture {
    char *dir;
    model m;
    fake_clock fc;
    trace t;
    rec_hook user, chief;
    ckpt_hook user_hook, chief_hook;
    log_sink sink; /* outlives the session, which logs when freed */
    ckpt_monitored_session *ms;
} fixture;

static int setup(void **state)
{
    fixture *f = test_dir_fixture_new(sizeof(*f), offsetof(fixture, dir));
    model_init(&f->m);
    fake_clock_init(&f->fc, 5000.0, 1.7e9 + 5000.0);
    f->user_hook = rec_hook_make(&f->user, "user", &f->t);
    f->chief_hook = rec_hook_make(&f->chief, "chief_only", &f->t);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    ckpt_monitored_session_free(f->ms);
    model_free(&f->m);
    return test_dir_fixture_teardown(state);
}

/* Options over the fixture's two hooks, made again: a failed creation
 * destroyed and zeroed them. */
static ckpt_training_session_options base_options(fixture *f)
{
    ckpt_training_session_options o;
    f->user_hook = rec_hook_make(&f->user, "user", &f->t);
    f->chief_hook = rec_hook_make(&f->chief, "chief_only", &f->t);
    assert_ckpt_ok(ckpt_training_session_options_init(
        &o, CKPT_TRAINING_SESSION_OPTIONS_VERSION));
    o.checkpoint_dir = f->dir;
    o.hooks = &f->user_hook;
    o.num_hooks = 1;
    o.chief_only_hooks = &f->chief_hook;
    o.num_chief_only_hooks = 1;
    o.session.clock = &f->fc.clock;
    return o;
}

/* The session's hook names joined by spaces. */
static void hook_names(const ckpt_monitored_session *ms, char *out, size_t n)
{
    out[0] = '\0';
    for (size_t i = 0; i < ckpt_monitored_session_num_hooks(ms); i++) {
        size_t used = strlen(out);
        snprintf(out + used, n - used, "%s%s", i ? " " : "",
                 ckpt_monitored_session_hook(ms, i)->name);
    }
}

static const ckpt_hook *find_hook(const ckpt_monitored_session *ms,
                                  const char *name)
{
    for (size_t i = 0; i < ckpt_monitored_session_num_hooks(ms); i++)
        if (strcmp(ckpt_monitored_session_hook(ms, i)->name, name) == 0)
            return ckpt_monitored_session_hook(ms, i);
    return NULL;
}

static int clocked_step(ckpt_step_context *sc, void *payload)
{
    fixture *f = payload;
    f->fc.now += 100.0;
    return model_step(sc, &f->m);
}

static void run_steps(fixture *f, int n)
{
    for (int i = 0; i < n; i++)
        assert_ckpt_ok(
            ckpt_monitored_session_run(f->ms, NULL, clocked_step, f, NULL));
}

static void test_b40_default_checkpoint_every_600_secs(void **state)
{
    fixture *f = *state;
    ckpt_training_session_options o = base_options(f);
    ckpt_saver_metrics mt;
    const ckpt_hook *ck;
    assert_ckpt_ok(ckpt_training_session_new(&f->ms, f->m.graph, &o));
    ck = find_hook(f->ms, "CheckpointSaverHook");
    assert_non_null(ck);
    assert_ckpt_ok(ckpt_checkpoint_hook_metrics(ck, &mt));
    assert_int_equal(mt.saves_completed, 1); /* initial save at step 0 */
    run_steps(f, 5);                         /* t = +500 s */
    assert_ckpt_ok(ckpt_checkpoint_hook_metrics(ck, &mt));
    assert_int_equal(mt.saves_completed, 1);
    run_steps(f, 1); /* t = +600 s: step 6 saves */
    assert_ckpt_ok(ckpt_checkpoint_hook_metrics(ck, &mt));
    assert_int_equal(mt.saves_completed, 2);
    assert_int_equal(mt.last_saved_step, 6);
    run_steps(f, 5);
    assert_ckpt_ok(ckpt_checkpoint_hook_metrics(ck, &mt));
    assert_int_equal(mt.saves_completed, 2);
}

static void test_b40_default_step_counter_every_100_steps(void **state)
{
    fixture *f = *state;
    ckpt_training_session_options o = base_options(f);
    o.session.log = log_sink_fn;
    o.session.log_payload = &f->sink;
    o.session.log_level = CKPT_LOG_INFO;
    o.save_checkpoint_secs = -1; /* only the step counter */
    assert_ckpt_ok(ckpt_training_session_new(&f->ms, f->m.graph, &o));
    assert_non_null(find_hook(f->ms, "StepCounterHook"));
    run_steps(f, 100);
    assert_int_equal(log_sink_find(&f->sink, "global_step/sec"), -1);
    run_steps(f, 1); /* step 101 = 1 + 100 */
    assert_true(log_sink_find(&f->sink, "global_step/sec: 0.01 (global step "
                                        "101)") >= 0);
}

static void test_b41_both_checkpoint_frequencies_einval(void **state)
{
    fixture *f = *state;
    ckpt_training_session_options o = base_options(f);
    o.save_checkpoint_secs = 60.0;
    o.save_checkpoint_steps = 100;
    assert_ckpt_error(ckpt_training_session_new(&f->ms, f->m.graph, &o),
                      CKPT_EINVAL, "both save_checkpoint_secs");
    assert_null(f->ms);
    /* the hooks passed in were consumed */
    assert_int_equal(f->user.n_destroy, 1);
    assert_int_equal(f->chief.n_destroy, 1);
    assert_int_equal(f->user.n_begin, 0);
}

static void test_b41_both_without_directory_no_hook(void **state)
{
    fixture *f = *state;
    ckpt_training_session_options o = base_options(f);
    char names[256];
    o.checkpoint_dir = NULL;
    o.save_checkpoint_secs = 60.0;
    o.save_checkpoint_steps = 100;
    o.session.log = log_sink_fn;
    o.session.log_payload = &f->sink;
    assert_ckpt_ok(ckpt_training_session_new(&f->ms, f->m.graph, &o));
    hook_names(f->ms, names, sizeof(names));
    assert_string_equal(names, "chief_only user");
    /* a frequency without a directory saves nothing: said at WARN (it was
     * silent, a loop meant to checkpoint never did) */
    assert_true(log_sink_find(&f->sink, "save_checkpoint_secs is set but "
                                        "checkpoint_dir is NULL: no "
                                        "checkpoint is saved") >= 0);
}

static void test_b42_non_positive_frequencies_disable(void **state)
{
    fixture *f = *state;
    ckpt_training_session_options o = base_options(f);
    char names[256];
    o.save_checkpoint_secs = -1;
    o.log_step_count_steps = -1;
    assert_ckpt_ok(ckpt_training_session_new(&f->ms, f->m.graph, &o));
    hook_names(f->ms, names, sizeof(names));
    assert_string_equal(names, "chief_only user");
    ckpt_monitored_session_free(f->ms);
    f->ms = NULL;

    f->user_hook = rec_hook_make(&f->user, "user", &f->t);
    f->chief_hook = rec_hook_make(&f->chief, "chief_only", &f->t);
    o = base_options(f);
    o.save_checkpoint_steps = -5; /* secs becomes unset: nothing left */
    assert_ckpt_ok(ckpt_training_session_new(&f->ms, f->m.graph, &o));
    hook_names(f->ms, names, sizeof(names));
    assert_string_equal(names, "chief_only StepCounterHook user");
}

static void test_b42_steps_only_checkpoints_by_steps(void **state)
{
    fixture *f = *state;
    ckpt_training_session_options o = base_options(f);
    ckpt_saver_metrics mt;
    o.save_checkpoint_secs = -1;
    o.save_checkpoint_steps = 3;
    assert_ckpt_ok(ckpt_training_session_new(&f->ms, f->m.graph, &o));
    run_steps(f, 7);
    assert_ckpt_ok(ckpt_checkpoint_hook_metrics(
        find_hook(f->ms, "CheckpointSaverHook"), &mt));
    assert_int_equal(mt.saves_completed, 3); /* steps 0, 3, 6 */
    assert_int_equal(mt.last_saved_step, 6);
}

static void test_b43_chief_hook_order(void **state)
{
    fixture *f = *state;
    ckpt_training_session_options o = base_options(f);
    char names[256];
    assert_ckpt_ok(ckpt_training_session_new(&f->ms, f->m.graph, &o));
    hook_names(f->ms, names, sizeof(names));
    assert_string_equal(names, "chief_only StepCounterHook "
                               "CheckpointSaverHook user");
    assert_ckpt_ok(ckpt_monitored_session_close(f->ms, 0));
    /* the user hook's end runs after the checkpoint hook's (TF's chief
     * order), the chief-only one before */
    assert_string_equal(f->t.buf, "chief_only.begin user.begin "
                                  "chief_only.create user.create "
                                  "chief_only.end user.end ");
}

static void test_b43_async_mode_hook(void **state)
{
    fixture *f = *state;
    ckpt_training_session_options o = base_options(f);
    char names[256];
    o.checkpoint_mode = CKPT_SAVE_ASYNC;
    assert_ckpt_ok(ckpt_training_session_new(&f->ms, f->m.graph, &o));
    hook_names(f->ms, names, sizeof(names));
    assert_string_equal(names, "chief_only StepCounterHook "
                               "AsyncCheckpointSaverHook user");
}

static void test_b43_worker_only_user_hooks_no_restore(void **state)
{
    fixture *f = *state;
    ckpt_training_session_options o = base_options(f);
    char names[256];
    ckpt_saver *s;
    /* a checkpoint at step 9 exists */
    f->m.step = 9;
    assert_ckpt_ok(ckpt_saver_open(&s, f->dir, NULL));
    for (size_t i = 0; i < ckpt_graph_num_vars(f->m.graph); i++)
        assert_ckpt_ok(ckpt_saver_add_var(s, ckpt_graph_var(f->m.graph, i)));
    assert_ckpt_ok(ckpt_saver_save(s, 9, NULL));
    ckpt_saver_free(s);
    f->m.step = 0;
    o.not_chief = 1;
    assert_ckpt_ok(ckpt_training_session_new(&f->ms, f->m.graph, &o));
    hook_names(f->ms, names, sizeof(names));
    assert_string_equal(names, "user");
    assert_int_equal(f->chief.n_destroy, 1);
    assert_null(f->chief_hook.payload);    /* destroyed: the copy zeroed */
    assert_non_null(f->user_hook.payload); /* the session's: kept */
    assert_int_equal(f->chief.n_begin, 0);
    assert_int_equal(f->m.step, 0); /* never restored */
    ckpt_monitored_session_free(f->ms);
    f->ms = NULL;

    /* the chief restores it */
    f->user_hook = rec_hook_make(&f->user, "user", &f->t);
    f->chief_hook = rec_hook_make(&f->chief, "chief_only", &f->t);
    o = base_options(f);
    assert_ckpt_ok(ckpt_training_session_new(&f->ms, f->m.graph, &o));
    assert_int_equal(f->m.step, 9);
}

static void test_training_session_options_version(void **state)
{
    fixture *f = *state;
    ckpt_training_session_options o = base_options(f);
    assert_ckpt_error(ckpt_training_session_options_init(&o, 5), CKPT_EVERSION,
                      "version 5");
    o.version = 5;
    assert_ckpt_error(ckpt_training_session_new(&f->ms, f->m.graph, &o),
                      CKPT_EVERSION, "version 5");
    assert_int_equal(f->user.n_destroy, 1);
    assert_int_equal(f->user_hook.version, 0); /* zeroed: destroyed */
    f->user_hook = rec_hook_make(&f->user, "user", &f->t);
    f->chief_hook = rec_hook_make(&f->chief, "chief_only", &f->t);
    o.version = 0; /* zeroed: the error names the INIT macro */
    assert_ckpt_error(ckpt_training_session_new(&f->ms, f->m.graph, &o),
                      CKPT_EVERSION, "CKPT_TRAINING_SESSION_OPTIONS_INIT");
    assert_int_equal(f->user.n_destroy, 2); /* consumed again */
}

static int count_after_save(ckpt_session *s, int64_t step, const char *prefix,
                            int *stop, void *payload)
{
    int *n = payload;
    (void)s;
    (void)step;
    (void)stop;
    assert_non_null(strstr(prefix, "/net-"));
    (*n)++;
    return 0;
}

/* The builder takes the checkpoint hook's listeners and basename. */
static void test_listeners_and_basename(void **state)
{
    fixture *f = *state;
    ckpt_training_session_options o = base_options(f);
    int calls = 0;
    ckpt_saver_listener l = {CKPT_LISTENER_VERSION, NULL, NULL, NULL,
                             count_after_save,      NULL};
    char path[4200];
    l.payload = &calls;
    o.listeners = &l;
    o.num_listeners = 1;
    o.checkpoint_basename = "net";
    o.save_checkpoint_steps = 2;
    o.session.log_level = CKPT_LOG_OFF;
    assert_ckpt_ok(ckpt_training_session_new(&f->ms, f->m.graph, &o));
    run_steps(f, 4);
    assert_ckpt_ok(ckpt_monitored_session_close(f->ms, 0));
    assert_int_equal(calls, 3); /* steps 0, 2, 4 */
    snprintf(path, sizeof(path), "%s/net-4.index", f->dir);
    assert_int_equal(access(path, F_OK), 0);
}

/* CKPT_FREQ_OFF turns the checkpoint hook off (TensorFlow's 0); the
 * default (CKPT_FREQ_DEFAULT, 0) is said in the log. */
static void test_frequency_constants(void **state)
{
    fixture *f = *state;
    ckpt_training_session_options o = base_options(f);
    o.session.log = log_sink_fn;
    o.session.log_payload = &f->sink;
    o.save_checkpoint_secs = CKPT_FREQ_OFF;
    assert_ckpt_ok(ckpt_training_session_new(&f->ms, f->m.graph, &o));
    assert_null(find_hook(f->ms, "CheckpointSaverHook"));
    assert_int_equal(log_sink_find(&f->sink, "(the default;"), -1);
    ckpt_monitored_session_free(f->ms);
    f->ms = NULL;

    o = base_options(f);
    o.session.log = log_sink_fn;
    o.session.log_payload = &f->sink;
    assert_int_equal(o.save_checkpoint_secs, CKPT_FREQ_DEFAULT);
    assert_ckpt_ok(ckpt_training_session_new(&f->ms, f->m.graph, &o));
    assert_non_null(find_hook(f->ms, "CheckpointSaverHook"));
    assert_true(log_sink_find(&f->sink, "every 600 s (the default; set "
                                        "save_checkpoint_secs or "
                                        "save_checkpoint_steps, or "
                                        "CKPT_FREQ_OFF to save none)") >= 0);
}

/* A copy of a library hook kept after the session that held it was freed
 * is refused by the builder, named by its index in the caller's list (not
 * in the session's, which counts the default hooks first). */
static void test_destroyed_copy_named_by_callers_index(void **state)
{
    fixture *f = *state;
    ckpt_training_session_options o = base_options(f);
    ckpt_hook hooks[2];
    o.session.log_level = CKPT_LOG_OFF;
    hooks[0] = f->user_hook;
    assert_ckpt_ok(ckpt_stop_at_step_hook_new(&hooks[1], 100, 0));
    o.hooks = hooks;
    o.num_hooks = 2;
    assert_ckpt_ok(ckpt_training_session_new(&f->ms, f->m.graph, &o));
    ckpt_monitored_session_free(f->ms);
    f->ms = NULL;
    o = base_options(f);
    o.session.log_level = CKPT_LOG_OFF;
    hooks[0] = f->user_hook;
    o.hooks = hooks;
    o.num_hooks = 2;
    assert_ckpt_error(ckpt_training_session_new(&f->ms, f->m.graph, &o),
                      CKPT_EINVAL,
                      "training session: hooks[1] ('StopAtStepHook') is a "
                      "copy of one of the library's hooks that the monitored "
                      "session it was handed to destroyed");
    assert_null(f->ms);
}

/* A checkpoint_dir that cannot be used is not announced as where the
 * checkpoints go before the error that names it (a newcomer read "saving
 * checkpoints to e/afile ..." and then "e/afile is not a directory"). */
static void test_unusable_dir_not_announced(void **state)
{
    fixture *f = *state;
    ckpt_training_session_options o = base_options(f);
    char file[600];
    FILE *fp;
    snprintf(file, sizeof(file), "%s/afile", o.checkpoint_dir);
    assert_int_equal(mkdir(o.checkpoint_dir, 0700) == 0 || errno == EEXIST, 1);
    fp = fopen(file, "w");
    assert_non_null(fp);
    fclose(fp);
    o.checkpoint_dir = file;
    o.session.log = log_sink_fn;
    o.session.log_payload = &f->sink;
    assert_ckpt_error(ckpt_training_session_new(&f->ms, f->m.graph, &o),
                      CKPT_ENOTFOUND, "afile is not a directory");
    assert_int_equal(log_sink_find(&f->sink, "saving checkpoints to"), -1);
}

/* A caller built against version 1 (no listeners) still works. */
static void test_options_version_1(void **state)
{
    fixture *f = *state;
    ckpt_training_session_options o = base_options(f);
    int calls = 0;
    ckpt_saver_listener l = {CKPT_LISTENER_VERSION, &calls, NULL, NULL,
                             count_after_save,      NULL};
    o.version = 1;
    o.listeners = &l; /* beyond a version-1 struct: not read */
    o.num_listeners = 1;
    o.session.log_level = CKPT_LOG_OFF;
    assert_ckpt_ok(ckpt_training_session_new(&f->ms, f->m.graph, &o));
    assert_non_null(find_hook(f->ms, "CheckpointSaverHook"));
    assert_ckpt_ok(ckpt_monitored_session_close(f->ms, 0));
    assert_int_equal(calls, 0);
}

/* Two directories that disagree are an error naming both. */
static void test_two_directories_disagree(void **state)
{
    fixture *f = *state;
    ckpt_training_session_options o = base_options(f);
    char other[4200];
    snprintf(other, sizeof(other), "%s/other", f->dir);
    o.session.checkpoint_dir = other;
    o.session.log_level = CKPT_LOG_OFF;
    assert_ckpt_error(ckpt_training_session_new(&f->ms, f->m.graph, &o),
                      CKPT_EINVAL, "disagrees with checkpoint_dir");
    assert_non_null(strstr(ckpt_error_last()->message, other));
}

/* One hook given twice, in one list or in both, is refused naming both
 * places in the caller's indices, and destroyed once (it was destroyed
 * twice: a double free for a library hook). */
static void test_same_hook_twice_refused(void **state)
{
    fixture *f = *state;
    ckpt_training_session_options o = base_options(f);
    ckpt_hook twice[2];
    twice[0] = f->user_hook;
    twice[1] = f->user_hook;
    o.hooks = twice;
    o.num_hooks = 2;
    o.session.log_level = CKPT_LOG_OFF;
    assert_ckpt_error(ckpt_training_session_new(&f->ms, f->m.graph, &o),
                      CKPT_EINVAL,
                      "hooks[0] and hooks[1] ('user') are the same hook");
    assert_int_equal(f->user.n_destroy, 1);
    assert_int_equal(f->chief.n_destroy, 1);
    o = base_options(f);
    o.hooks = &f->chief_hook;
    o.session.log_level = CKPT_LOG_OFF;
    assert_ckpt_error(ckpt_training_session_new(&f->ms, f->m.graph, &o),
                      CKPT_EINVAL,
                      "chief_only_hooks[0] and hooks[0] ('chief_only') are "
                      "the same hook");
    assert_int_equal(f->chief.n_destroy, 2);
    assert_null(f->ms);
    /* a hook's bad version is named by the caller's index too (it was the
     * session's, counting the default hooks) */
    o = base_options(f);
    f->user_hook.version = 0;
    o.hooks = &f->user_hook;
    o.session.log_level = CKPT_LOG_OFF;
    assert_ckpt_error(ckpt_training_session_new(&f->ms, f->m.graph, &o),
                      CKPT_EVERSION,
                      "training session: hooks[0] ('user'): version 0");
    assert_int_equal(f->user.n_destroy, 2);
}

/* An array whose count was left at 0 was ignored: the listener never ran,
 * the hook neither ran nor was freed. Now refused, naming both fields, and
 * the hooks given with their counts are still consumed. */
static void test_arrays_without_count_refused(void **state)
{
    fixture *f = *state;
    ckpt_saver_listener l = {
        CKPT_LISTENER_VERSION, NULL, NULL, NULL, NULL, NULL};
    ckpt_training_session_options o = base_options(f);
    o.listeners = &l;
    o.session.log_level = CKPT_LOG_OFF;
    assert_ckpt_error(ckpt_training_session_new(&f->ms, f->m.graph, &o),
                      CKPT_EINVAL,
                      "training session: listeners is set but num_listeners "
                      "is 0 (set num_listeners to the array's length; leave "
                      "listeners NULL for none)");
    assert_null(f->ms);
    assert_int_equal(f->user.n_destroy, 1);
    assert_int_equal(f->chief.n_destroy, 1);
    o = base_options(f);
    o.num_hooks = 0;
    o.session.log_level = CKPT_LOG_OFF;
    assert_ckpt_error(ckpt_training_session_new(&f->ms, f->m.graph, &o),
                      CKPT_EINVAL,
                      "training session: hooks is set but num_hooks is 0");
    assert_int_equal(f->chief.n_destroy, 2);
    o = base_options(f);
    o.num_chief_only_hooks = 0;
    o.session.log_level = CKPT_LOG_OFF;
    assert_ckpt_error(ckpt_training_session_new(&f->ms, f->m.graph, &o),
                      CKPT_EINVAL,
                      "training session: chief_only_hooks is set but "
                      "num_chief_only_hooks is 0");
    assert_int_equal(f->user.n_destroy, 2);
}

/* A listener that saves an extra checkpoint (say, a "best" copy) through
 * the session's saver from after_save. */
static int save_copy_after_save(ckpt_session *s, int64_t step,
                                const char *prefix, int *stop, void *payload)
{
    int *n = payload;
    (void)prefix;
    (void)stop;
    (*n)++;
    if (*n > 10)
        return ckpt_error_set(CKPT_EUSER, "after_save called %d times", *n);
    return ckpt_saver_save(ckpt_session_saver(s), 1000 + step, NULL);
}

/* The listener's own save, made during the hook's synchronous save, was
 * taken for the hook's and reported to the listener again, which saved
 * again: endless recursion, a stack overflow. Now only the hook's saves
 * reach the listeners; the listener's copies are written. */
static void test_listener_saving_from_after_save(void **state)
{
    fixture *f = *state;
    ckpt_training_session_options o = base_options(f);
    int calls = 0;
    ckpt_saver_listener l = {CKPT_LISTENER_VERSION, NULL, NULL, NULL,
                             save_copy_after_save,  NULL};
    char path[4200];
    l.payload = &calls;
    o.listeners = &l;
    o.num_listeners = 1;
    o.save_checkpoint_steps = 2;
    o.saver_options = NULL;
    o.session.log_level = CKPT_LOG_OFF;
    assert_ckpt_ok(ckpt_training_session_new(&f->ms, f->m.graph, &o));
    run_steps(f, 2);
    assert_ckpt_ok(ckpt_monitored_session_close(f->ms, 0));
    assert_int_equal(calls, 2); /* steps 0 and 2 */
    snprintf(path, sizeof(path), "%s/model.ckpt-1002.index", f->dir);
    assert_int_equal(access(path, F_OK), 0);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_b40_default_checkpoint_every_600_secs),
        T(test_b40_default_step_counter_every_100_steps),
        T(test_b41_both_checkpoint_frequencies_einval),
        T(test_b41_both_without_directory_no_hook),
        T(test_b42_non_positive_frequencies_disable),
        T(test_b42_steps_only_checkpoints_by_steps),
        T(test_b43_chief_hook_order),
        T(test_b43_async_mode_hook),
        T(test_b43_worker_only_user_hooks_no_restore),
        T(test_training_session_options_version),
        T(test_listeners_and_basename),
        T(test_frequency_constants),
        T(test_unusable_dir_not_announced),
        T(test_destroyed_copy_named_by_callers_index),
        T(test_options_version_1),
        T(test_two_directories_disagree),
        T(test_same_hook_twice_refused),
        T(test_arrays_without_count_refused),
        T(test_listener_saving_from_after_save),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
