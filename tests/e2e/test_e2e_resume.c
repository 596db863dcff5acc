/* End-to-end test of exact resumption: ckpt-train (CKPT_TRAIN_PATH) runs
 * uninterrupted to step N in one directory; in another the same seed is
 * killed with SIGKILL at random moments (some during start-up and the first
 * write, some just after a checkpoint became durable, often with the next
 * write under way), restarted each time, and finally left to reach N. After
 * every kill `ckpt verify` passes on every checkpoint there, the latest
 * checkpoint opens, and the next run restores exactly the latest one, at
 * its step, never older than the last checkpoint reported durable. The two
 * final checkpoints must be bit-identical (`ckpt diff` exit 0), although
 * the checkpoint schedules differ (the killed runs use --busy wait, the
 * others the default, skipping saves while a write is running).
 * The kill timing comes from a fixed seed (CKPT_E2E_SEED overrides it) and
 * waits on the trainer's own output, not on fixed sleeps.
 * Also: resumed at or past --steps, it trains nothing and writes nothing. */
#include "e2e_util.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#define MODEL                                                                  \
    "--hidden", "16", "--layers", "1", "--batch", "16", "--save-steps", "50",  \
        "--seed", "7"

/* Far more steps than the killed runs make, so none finishes early: the
 * killed runs wait for each write before the next (--busy wait), so a
 * checkpoint is durable every 50 steps and a run killed after its third
 * one has made at most a few hundred steps, however slow the disk. */
#define STEPS 5000
#define STEPS_STR "5000"
#define NUM_KILLS 6
/* The first kills land at a random moment in the first milliseconds. */
#define EARLY_KILLS 2

/* ---- the kill timing's random numbers ---------------------------------- */

static uint64_t rng_state;

static uint64_t rng_next(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [lo, hi]. */
static unsigned rng_range(unsigned lo, unsigned hi)
{
    return lo + (unsigned)(rng_next() % (uint64_t)(hi - lo + 1));
}

/* ---- watching the trainer ---------------------------------------------- */

typedef struct watch {
    int durable_wanted; /* stop at this many "is durable" lines */
    int durable_seen;
    int64_t durable_step; /* step of the last one */
    int restored_seen;
    char restored_line[512];
} watch;

/* "checkpoint: checkpoint <prefix> (step <S>) is durable: ..." */
static int on_line(const char *line, void *payload)
{
    watch *w = payload;
    const char *s;
    if (strncmp(line, "restored ", 9) == 0) {
        w->restored_seen = 1;
        snprintf(w->restored_line, sizeof(w->restored_line), "%s", line);
        return 0;
    }
    if (strncmp(line, "checkpoint: checkpoint ", 23) != 0 ||
        !strstr(line, " is durable"))
        return 0;
    s = strstr(line, " (step ");
    assert_non_null(s);
    w->durable_step = strtoll(s + 7, NULL, 10);
    w->durable_seen++;
    return w->durable_wanted > 0 && w->durable_seen >= w->durable_wanted;
}

/* ---- checks ------------------------------------------------------------ */

static void ckpt_cli(const char *cmd, const char *path, int want)
{
    e2e_proc p;
    e2e_run(&p, CKPT_CLI_PATH, E2E_ARGS(cmd, path));
    e2e_expect_exit(&p, want);
    e2e_proc_free(&p);
}

/* Every "<prefix>.index" of `dir` passes `ckpt verify <prefix>`. */
static int verify_every_checkpoint(const char *dir)
{
    ckpt_state st = CKPT_STATE_INIT;
    int n = 0;
    int err = ckpt_state_read(&st, NULL, dir);
    if (err == CKPT_ENOTFOUND) {
        ckpt_error_clear();
        return 0;
    }
    assert_ckpt_ok(err);
    for (size_t i = 0; i < st.num_paths; i++) {
        char *prefix = test_path(dir, st.all_paths[i]);
        ckpt_cli("verify", prefix, 0);
        free(prefix);
        n++;
    }
    ckpt_state_dispose(&st);
    return n;
}

/* The restore line names the latest checkpoint `prefix` at its step. */
static void expect_restore_line(const watch *w, const char *out,
                                const char *prefix, int64_t step)
{
    char want[512];
    snprintf(want, sizeof(want), "restored %s at step %lld", prefix,
             (long long)step);
    if (!w->restored_seen || strcmp(w->restored_line, want) != 0)
        fail_msg("wanted \"%s\", got \"%s\"; stdout:\n%.4000s", want,
                 w->restored_seen ? w->restored_line : "(none)", out);
}

/* ---- the test ---------------------------------------------------------- */

static void test_kill_and_resume_exactly(void **state)
{
    char *root = test_make_temp_dir();
    char *dir_a = test_path(root, "a"), *dir_b = test_path(root, "b");
    const char *seed_env = getenv("CKPT_E2E_SEED");
    uint64_t seed = seed_env ? strtoull(seed_env, NULL, 0) : 0x5eedu;
    int restores = 0, late_kills = 0;
    int64_t min_restore = -1; /* a later run must restore at least this */
    e2e_summary s;
    e2e_proc p;
    watch w;
    (void)state;
    rng_state = seed;
    print_message("kill timing seed %#llx (set CKPT_E2E_SEED to change)\n",
                  (unsigned long long)seed);

    /* A: uninterrupted */
    e2e_run(&p, CKPT_TRAIN_PATH,
            E2E_ARGS("--dir", dir_a, "--steps", STEPS_STR, MODEL, "--quiet"));
    e2e_expect_exit(&p, 0);
    e2e_parse_summary(p.out, &s);
    assert_int_equal(s.steps, STEPS);
    e2e_proc_free(&p);

    /* B: killed again and again */
    for (int k = 0; k < NUM_KILLS; k++) {
        char *latest = NULL;
        int64_t latest_step = e2e_latest_step(dir_b, &latest);
        memset(&w, 0, sizeof(w));
        e2e_spawn(&p, CKPT_TRAIN_PATH,
                  E2E_ARGS("--dir", dir_b, "--steps", STEPS_STR, MODEL,
                           "--busy", "wait"),
                  0);
        if (k < EARLY_KILLS) {
            e2e_sleep_ms(rng_range(1, 15));
        } else {
            /* just after the 1st..3rd checkpoint of this run is durable,
             * while training and the next write go on */
            w.durable_wanted = (int)rng_range(1, 3);
            if (!e2e_watch(&p, on_line, &w, E2E_CHILD_TIMEOUT_S))
                fail_msg("run %d exited before it was killed:\n%.4000s", k,
                         p.out);
            e2e_sleep_ms(rng_range(0, 25));
            late_kills++;
        }
        e2e_signal(&p, SIGKILL);
        e2e_proc_finish(&p);
        if (!WIFSIGNALED(p.wstatus) || WTERMSIG(p.wstatus) != SIGKILL)
            e2e_expect_exit(&p, -1); /* shows the output */
        /* what it printed before it died */
        w.durable_wanted = 0;
        e2e_watch(&p, on_line, &w, 1);
        if (latest && (w.restored_seen || k >= EARLY_KILLS)) {
            expect_restore_line(&w, p.out, latest, latest_step);
            restores++;
        }
        if (w.durable_seen > 0)
            min_restore = w.durable_step;
        print_message("run %d: %s; killed after %d durable checkpoint(s)%s\n",
                      k, w.restored_seen ? w.restored_line : "no restore",
                      w.durable_seen, k < EARLY_KILLS ? " (early kill)" : "");
        e2e_proc_free(&p);
        free(latest);

        /* everything there is intact; the latest opens */
        if (verify_every_checkpoint(dir_b) > 0) {
            ckpt_cli("verify", dir_b, 0);
            ckpt_cli("inspect", dir_b, 0);
        }
        latest_step = e2e_latest_step(dir_b, NULL);
        if (latest_step < min_restore)
            fail_msg("after kill %d the latest checkpoint is at step %lld, "
                     "but step %lld was reported durable",
                     k, (long long)latest_step, (long long)min_restore);
    }
    assert_int_equal(late_kills, NUM_KILLS - EARLY_KILLS);

    /* B: to the end */
    {
        char *latest = NULL;
        int64_t latest_step = e2e_latest_step(dir_b, &latest);
        memset(&w, 0, sizeof(w));
        e2e_run(&p, CKPT_TRAIN_PATH,
                E2E_ARGS("--dir", dir_b, "--steps", STEPS_STR, MODEL));
        e2e_expect_exit(&p, 0);
        e2e_watch(&p, on_line, &w, 1);
        assert_non_null(latest); /* the late kills came after checkpoints */
        expect_restore_line(&w, p.out, latest, latest_step);
        restores++;
        e2e_parse_summary(p.out, &s);
        assert_int_equal(s.steps, STEPS);
        assert_int_equal(s.resumed_from, latest_step);
        assert_int_equal(s.failed, 0);
        e2e_proc_free(&p);
        free(latest);
    }
    /* the run after each late kill restored a checkpoint */
    assert_true(restores >= NUM_KILLS - EARLY_KILLS);
    /* temporary files of killed writes are gone */
    assert_int_equal(e2e_count_files(dir_b, "*.tempstate"), 0);
    assert_int_equal(e2e_count_files(dir_b, "*checkpoint.tmp"), 0);
    verify_every_checkpoint(dir_b);

    /* bit-identical to the run that was never interrupted */
    e2e_run(&p, CKPT_CLI_PATH, E2E_ARGS("diff", dir_a, dir_b));
    e2e_expect_exit(&p, 0);
    e2e_expect_contains("ckpt diff", p.out, ": equal, 20 tensors\n", 1);
    e2e_proc_free(&p);

    free(dir_a);
    free(dir_b);
    test_remove_tree(root);
}

/* Resumed from a checkpoint whose step already reaches --steps (equal to
 * it, and past it): "nothing to train", exit 0, and the directory as it
 * was: no checkpoint written, the state file unchanged byte for byte. */
static void test_resume_at_or_past_steps_trains_nothing(void **state)
{
    static const char *const targets[] = {"20", "15"};
    char *root = test_make_temp_dir();
    char *dir = test_path(root, "run");
    char *state_path = test_path(dir, "checkpoint");
    char want[128];
    uint8_t *before, *after;
    size_t n_before, n_after;
    int entries;
    e2e_summary s;
    e2e_proc p;
    (void)state;
    e2e_run(&p, CKPT_TRAIN_PATH,
            E2E_ARGS("--dir", dir, "--steps", "20", "--save-steps", "10",
                     "--busy", "wait", "--hidden", "16", "--layers", "1",
                     "--quiet"));
    e2e_expect_exit(&p, 0);
    e2e_proc_free(&p);
    before = test_read_file(state_path, &n_before);
    entries = e2e_count_files(dir, "");
    assert_int_equal(e2e_count_files(dir, ".index"), 3); /* 0, 10, 20 */
    for (size_t i = 0; i < 2; i++) {
        e2e_run(&p, CKPT_TRAIN_PATH,
                E2E_ARGS("--dir", dir, "--steps", targets[i], "--save-steps",
                         "10", "--hidden", "16", "--layers", "1"));
        e2e_expect_exit(&p, 0);
        snprintf(want, sizeof(want),
                 "\nnothing to train: step 20 reached (--steps %s); "
                 "nothing saved\n",
                 targets[i]);
        e2e_expect_contains("stdout", p.out, want, 1);
        /* no step ran, so there is no loss to show: "-", not nan */
        e2e_expect_contains("stdout", p.out, " loss=- ", 1);
        e2e_expect_contains("stdout", p.out, "nan", 0);
        e2e_parse_summary(p.out, &s);
        assert_int_equal(s.steps, 20);
        assert_int_equal(s.resumed_from, 20);
        assert_true(isnan(s.loss));
        assert_int_equal(s.checkpoints, 0);
        assert_int_equal(s.failed, 0);
        e2e_proc_free(&p);
        after = test_read_file(state_path, &n_after);
        assert_int_equal(n_after, n_before);
        assert_memory_equal(after, before, n_before);
        free(after);
        assert_int_equal(e2e_count_files(dir, ""), entries);
    }
    free(before);
    free(state_path);
    free(dir);
    test_remove_tree(root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kill_and_resume_exactly),
        cmocka_unit_test(test_resume_at_or_past_steps_trains_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
