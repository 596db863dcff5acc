/* End-to-end tests of ckpt-train, run as a program (CKPT_TRAIN_PATH) on
 * small models, with `ckpt` (CKPT_CLI_PATH) checking what it wrote: the
 * summary line's format, --keep across restarts, --keep-hours keeping
 * evicted checkpoints for good (also after a relaunch without it), a
 * clean stop on SIGTERM
 * and SIGINT with a final checkpoint at the step it stopped, --mode none
 * and --mode sync (the same checkpoints as async), and saves that fail
 * (a read-only directory; a full tmpfs) leaving exit status 1, a message
 * naming the file and the OS error, and the earlier checkpoint intact;
 * a stdout that goes nowhere (exit status 3, the checkpoints written);
 * a 64 KiB stack limit; a model larger than the memory it may have
 * (refused, exit status 2), and an allocation failure named. */
#include "e2e_util.h"

#include "ckpt.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* A small model: a few tens of microseconds per step. */
#define MODEL "--hidden", "16", "--layers", "1", "--batch", "16"

#define TRAIN(p, ...) e2e_run((p), CKPT_TRAIN_PATH, E2E_ARGS(__VA_ARGS__))
#define CKPT(p, ...) e2e_run((p), CKPT_CLI_PATH, E2E_ARGS(__VA_ARGS__))

/* `ckpt verify PATH` must pass. */
static void expect_verify_ok(const char *path)
{
    e2e_proc v;
    CKPT(&v, "verify", path);
    e2e_expect_exit(&v, 0);
    e2e_expect_contains("ckpt verify", v.out, ": OK, ", 1);
    e2e_proc_free(&v);
}

/* The state file lists exactly `want` (steps, oldest first), the latest
 * last, and the directory holds exactly their files. */
static void expect_checkpoints(const char *dir, const int64_t *want, size_t n)
{
    ckpt_state st = CKPT_STATE_INIT;
    assert_ckpt_ok(ckpt_state_read(&st, NULL, dir));
    if (st.num_paths != n)
        fail_msg("%s: %zu checkpoints listed, wanted %zu", dir, st.num_paths,
                 n);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(ckpt_checkpoint_step(st.all_paths[i]), want[i]);
    assert_int_equal(ckpt_checkpoint_step(st.model_checkpoint_path),
                     want[n - 1]);
    ckpt_state_dispose(&st);
    assert_int_equal(e2e_count_files(dir, ".index"), (int)n);
    assert_int_equal(e2e_count_files(dir, "*.data-"), (int)n);
    assert_int_equal(e2e_count_files(dir, "*.tempstate"), 0);
    assert_int_equal(e2e_count_files(dir, "*checkpoint.tmp"), 0);
}

/* A line "restored <dir>/model.ckpt-<step> at step <step>". */
static void expect_restored(const char *out, const char *dir, int64_t step)
{
    char want[512];
    snprintf(want, sizeof(want), "restored %s/model.ckpt-%lld at step %lld\n",
             dir, (long long)step, (long long)step);
    e2e_expect_contains("trainer stdout", out, want, 1);
}

/* ---- the summary line ------------------------------------------------- */

static void test_summary_format(void **state)
{
    char *dir = test_make_temp_dir();
    regex_t re;
    e2e_summary s;
    e2e_proc p;
    (void)state;
    /* the pattern itself accepts a good line and rejects near misses */
    assert_int_equal(regcomp(&re, e2e_summary_regex, REG_EXTENDED), 0);
    assert_int_equal(
        regexec(&re,
                "summary: steps=10 resumed_from=- loss=2.302585 "
                "checkpoints=2 skipped=0 failed=0 blocking_ms_p50=0.120 "
                "blocking_ms_max=0.300 write_ms_p50=1.500 write_mb_s=12.5 "
                "start_ms=80.2 close_ms=260.0",
                0, NULL, 0),
        0);
    assert_int_not_equal(
        regexec(&re,
                "summary: steps=10 resumed_from=- loss=2.302585 "
                "checkpoints=2 skipped=0 failed=0 blocking_ms_p50=0.120 "
                "blocking_ms_max=0.300 write_ms_p50=1.500",
                0, NULL, 0),
        0);
    assert_int_not_equal(
        regexec(&re,
                "summary: steps=10 resumed_from=- loss=2.302585 "
                "checkpoints=2 skipped=0 failed=0 blocking_ms_p50=0.120 "
                "blocking_ms_max=0.300 write_ms_p50=1.500 write_mb_s=12.5",
                0, NULL, 0),
        0);
    assert_int_not_equal(
        regexec(&re,
                "summary: steps=x resumed_from=- loss=2.302585 "
                "checkpoints=2 skipped=0 failed=0 blocking_ms_p50=0.120 "
                "blocking_ms_max=0.300 write_ms_p50=1.500 write_mb_s=12.5 "
                "start_ms=80.2 close_ms=260.0",
                0, NULL, 0),
        0);
    regfree(&re);
    TRAIN(&p, "--dir", dir, "--steps", "200", MODEL, "--save-steps", "50",
          "--busy", "wait", "--quiet");
    e2e_expect_exit(&p, 0);
    assert_string_equal(p.err, "");
    e2e_parse_summary(p.out, &s);
    assert_int_equal(s.steps, 200);
    assert_int_equal(s.resumed_from, -1);
    assert_int_equal(s.checkpoints, 5); /* steps 0, 50, ..., 200 */
    assert_int_equal(s.skipped, 0);
    assert_int_equal(s.failed, 0);
    assert_true(s.loss > 0 && s.loss < 10);
    assert_true(s.blocking_ms_p50 <= s.blocking_ms_max);
    assert_true(s.write_ms_p50 > 0);
    assert_true(s.write_mb_s > 0);
    /* --quiet: the summary is the only line */
    assert_int_equal(strchr(p.out, '\n') - p.out + 1, (long)strlen(p.out));
    e2e_proc_free(&p);
    /* resumed: resumed_from and the restore line */
    TRAIN(&p, "--dir", dir, "--steps", "260", MODEL, "--save-steps", "50",
          "--busy", "wait", "--quiet");
    e2e_expect_exit(&p, 0);
    e2e_parse_summary(p.out, &s);
    expect_restored(p.out, dir, 200);
    assert_int_equal(s.steps, 260);
    assert_int_equal(s.resumed_from, 200);
    assert_int_equal(s.checkpoints, 2); /* 250 and the final 260 */
    e2e_proc_free(&p);
    /* not quiet: progress lines, then the summary last */
    TRAIN(&p, "--dir", dir, "--steps", "300", MODEL, "--save-steps", "20");
    e2e_expect_exit(&p, 0);
    e2e_expect_contains("trainer stdout", p.out, "\nstep 300 loss ", 1);
    e2e_parse_summary(p.out, &s);
    assert_int_equal(s.steps, 300);
    assert_int_equal(s.resumed_from, 260);
    e2e_proc_free(&p);
    test_remove_tree(dir);
}

/* ---- --keep ------------------------------------------------------------ */

static void test_keep_across_restarts(void **state)
{
    char *dir = test_make_temp_dir();
    static const int64_t first[] = {200, 250, 300};
    static const int64_t second[] = {500, 550, 600};
    static const int64_t third[] = {850, 900};
    e2e_summary s;
    e2e_proc p;
    (void)state;
    TRAIN(&p, "--dir", dir, "--steps", "300", MODEL, "--save-steps", "50",
          "--keep", "3", "--busy", "wait", "--quiet");
    e2e_expect_exit(&p, 0);
    e2e_parse_summary(p.out, &s);
    assert_int_equal(s.checkpoints, 7);
    e2e_proc_free(&p);
    expect_checkpoints(dir, first, 3);
    /* again, synchronous this time: the old ones still count */
    TRAIN(&p, "--dir", dir, "--steps", "600", MODEL, "--save-steps", "50",
          "--keep", "3", "--mode", "sync", "--quiet");
    e2e_expect_exit(&p, 0);
    e2e_parse_summary(p.out, &s);
    assert_int_equal(s.resumed_from, 300);
    assert_int_equal(s.checkpoints, 6);
    e2e_proc_free(&p);
    expect_checkpoints(dir, second, 3);
    /* fewer kept than are there */
    TRAIN(&p, "--dir", dir, "--steps", "900", MODEL, "--save-steps", "50",
          "--keep", "2", "--busy", "wait", "--quiet");
    e2e_expect_exit(&p, 0);
    e2e_proc_free(&p);
    expect_checkpoints(dir, third, 2);
    expect_verify_ok(dir);
    test_remove_tree(dir);
}

/* --keep-hours sets keep_checkpoint_every_n_hours (B76). 1e-9 hours
 * (3.6 microseconds) is shorter than the time between any two saves, each
 * of which fsyncs: every checkpoint --keep evicts is kept for good, off
 * the list. A relaunch without --keep-hours evicts what its list holds and
 * never touches the ones kept before. */
static void test_keep_hours(void **state)
{
    char *dir = test_make_temp_dir();
    static const int64_t listed[] = {5, 6};
    static const int64_t relisted[] = {8, 9};
    ckpt_state st = CKPT_STATE_INIT;
    e2e_proc p;
    (void)state;
    TRAIN(&p, "--dir", dir, "--steps", "6", MODEL, "--save-steps", "1",
          "--keep", "2", "--keep-hours", "1e-9", "--mode", "sync", "--quiet");
    e2e_expect_exit(&p, 0);
    e2e_proc_free(&p);
    assert_ckpt_ok(ckpt_state_read(&st, NULL, dir));
    assert_int_equal(st.num_paths, 2);
    for (size_t i = 0; i < 2; i++)
        assert_int_equal(ckpt_checkpoint_step(st.all_paths[i]), listed[i]);
    assert_true(st.last_preserved_timestamp > 0);
    ckpt_state_dispose(&st);
    /* steps 0 to 4 kept for good, 5 and 6 listed */
    assert_int_equal(e2e_count_files(dir, ".index"), 7);
    TRAIN(&p, "--dir", dir, "--steps", "9", MODEL, "--save-steps", "1",
          "--keep", "2", "--mode", "sync", "--quiet");
    e2e_expect_exit(&p, 0);
    expect_restored(p.out, dir, 6);
    e2e_proc_free(&p);
    assert_ckpt_ok(ckpt_state_read(&st, NULL, dir));
    assert_int_equal(st.num_paths, 2);
    for (size_t i = 0; i < 2; i++)
        assert_int_equal(ckpt_checkpoint_step(st.all_paths[i]), relisted[i]);
    ckpt_state_dispose(&st);
    /* 0 to 4 still there; 5, 6 and 7 evicted by the relaunch's list */
    assert_int_equal(e2e_count_files(dir, ".index"), 7);
    for (int step = 0; step <= 4; step++) {
        char name[64];
        char *path;
        snprintf(name, sizeof(name), "model.ckpt-%d", step);
        path = test_path(dir, name);
        expect_verify_ok(path);
        free(path);
    }
    test_remove_tree(dir);
}

/* ---- SIGTERM and SIGINT ------------------------------------------------ */

/* Stops at the first "checkpoint ... is durable" line. */
static int on_durable(const char *line, void *payload)
{
    (void)payload;
    return strncmp(line, "checkpoint: checkpoint ", 23) == 0 &&
           strstr(line, " is durable") != NULL;
}

static void stop_by_signal(int sig)
{
    char *dir = test_make_temp_dir();
    char *latest = NULL;
    char want[512];
    e2e_summary s;
    e2e_proc p;
    e2e_spawn(&p, CKPT_TRAIN_PATH,
              E2E_ARGS("--dir", dir, "--steps", "1000000000", MODEL,
                       "--save-steps", "50"),
              0);
    /* training and checkpointing are under way */
    if (!e2e_watch(&p, on_durable, NULL, E2E_CHILD_TIMEOUT_S))
        fail_msg("exited before its first checkpoint:\n%s", p.out);
    e2e_signal(&p, sig);
    e2e_proc_finish(&p);
    e2e_expect_exit(&p, 0);
    e2e_parse_summary(p.out, &s);
    assert_true(s.steps > 0 && s.steps < 1000000000);
    assert_int_equal(s.failed, 0);
    snprintf(want, sizeof(want), "stopped by signal %d at step %lld\n", sig,
             (long long)s.steps);
    e2e_expect_contains("trainer stdout", p.out, want, 1);
    snprintf(want, sizeof(want), "signal %d received", sig);
    e2e_expect_contains("trainer stderr", p.err, want, 1);
    /* the final checkpoint is at the step it stopped */
    assert_int_equal(e2e_latest_step(dir, &latest), s.steps);
    expect_verify_ok(dir);
    e2e_proc_free(&p);
    /* and training continues from there */
    snprintf(want, sizeof(want), "%lld", (long long)(s.steps + 20));
    TRAIN(&p, "--dir", dir, "--steps", want, MODEL, "--quiet");
    e2e_expect_exit(&p, 0);
    expect_restored(p.out, dir, s.steps);
    e2e_parse_summary(p.out, &s);
    assert_int_equal(s.steps, atoll(want));
    e2e_proc_free(&p);
    free(latest);
    test_remove_tree(dir);
}

static void test_sigterm(void **state)
{
    (void)state;
    stop_by_signal(SIGTERM);
}

static void test_sigint(void **state)
{
    (void)state;
    stop_by_signal(SIGINT);
}

/* ---- --mode none and --mode sync --------------------------------------- */

static void test_mode_none(void **state)
{
    char *dir = test_make_temp_dir();
    char *sub = test_path(dir, "none/deeper");
    e2e_summary s;
    e2e_proc p;
    (void)state;
    TRAIN(&p, "--dir", sub, "--steps", "200", MODEL, "--save-steps", "10",
          "--mode", "none");
    e2e_expect_exit(&p, 0);
    e2e_parse_summary(p.out, &s);
    assert_int_equal(s.steps, 200);
    assert_int_equal(s.checkpoints, 0);
    e2e_expect_contains("trainer stdout", p.out, "checkpoint: saved", 0);
    e2e_proc_free(&p);
    /* the directory is made, and stays empty */
    assert_int_equal(e2e_count_files(sub, ""), 2); /* "." and ".." */
    TRAIN(&p, "--dir", sub, "--steps", "100", MODEL, "--mode", "none",
          "--quiet");
    e2e_expect_exit(&p, 0);
    e2e_expect_contains("trainer stdout", p.out, "restored", 0);
    e2e_parse_summary(p.out, &s);
    assert_int_equal(s.resumed_from, -1);
    e2e_proc_free(&p);
    assert_int_equal(e2e_count_files(sub, ""), 2);
    free(sub);
    test_remove_tree(dir);
}

static void test_mode_sync_same_as_async(void **state)
{
    char *dir = test_make_temp_dir();
    char *sync_dir = test_path(dir, "sync");
    char *async_dir = test_path(dir, "async");
    char *skip_dir = test_path(dir, "skip");
    char *other_dir = test_path(dir, "other");
    e2e_summary s;
    e2e_proc p;
    (void)state;
    TRAIN(&p, "--dir", sync_dir, "--steps", "300", MODEL, "--save-steps", "50",
          "--keep", "0", "--mode", "sync", "--seed", "5", "--quiet");
    e2e_expect_exit(&p, 0);
    e2e_parse_summary(p.out, &s);
    assert_int_equal(s.checkpoints, 7);
    e2e_proc_free(&p);
    TRAIN(&p, "--dir", async_dir, "--steps", "300", MODEL, "--save-steps", "50",
          "--keep", "0", "--mode", "async", "--busy", "wait", "--seed", "5",
          "--quiet");
    e2e_expect_exit(&p, 0);
    e2e_proc_free(&p);
    /* the default policy skips saves while one is written, but the final
     * checkpoint is the same */
    TRAIN(&p, "--dir", skip_dir, "--steps", "300", MODEL, "--save-steps", "50",
          "--seed", "5", "--quiet");
    e2e_expect_exit(&p, 0);
    e2e_proc_free(&p);
    for (int step = 0; step <= 300; step += 50) {
        char name[64];
        char *a, *b;
        snprintf(name, sizeof(name), "model.ckpt-%d", step);
        a = test_path(sync_dir, name);
        b = test_path(async_dir, name);
        CKPT(&p, "diff", a, b);
        e2e_expect_exit(&p, 0);
        e2e_expect_contains("ckpt diff", p.out, ": equal, 20 tensors", 1);
        e2e_proc_free(&p);
        free(a);
        free(b);
    }
    CKPT(&p, "diff", sync_dir, skip_dir);
    e2e_expect_exit(&p, 0);
    e2e_proc_free(&p);
    /* and diff does see a difference between steps */
    {
        char *a = test_path(sync_dir, "model.ckpt-250");
        CKPT(&p, "diff", a, async_dir);
        e2e_expect_exit(&p, 1);
        e2e_expect_contains("ckpt diff", p.out,
                            "global_step: values differ: 1 of 1 elements, "
                            "max abs diff 50\n",
                            1);
        e2e_proc_free(&p);
        free(a);
    }
    /* another seed trains another model */
    TRAIN(&p, "--dir", other_dir, "--steps", "300", MODEL, "--seed", "6",
          "--quiet");
    e2e_expect_exit(&p, 0);
    e2e_proc_free(&p);
    CKPT(&p, "diff", sync_dir, other_dir);
    e2e_expect_exit(&p, 1);
    e2e_expect_contains("ckpt diff", p.out, "dense/kernel: values differ", 1);
    e2e_proc_free(&p);
    free(other_dir);
    free(sync_dir);
    free(async_dir);
    free(skip_dir);
    test_remove_tree(dir);
}

/* ---- usage and a --dir that cannot be a directory ---------------------- */

static void test_usage_and_bad_dir(void **state)
{
    char *dir = test_make_temp_dir();
    char *file = test_path(dir, "a-file");
    char *below = test_path(file, "below");
    char want[512];
    e2e_proc p;
    (void)state;
    test_write_file(file, "x", 1);
    TRAIN(&p, "--dir", file, "--steps", "10", MODEL, "--quiet");
    e2e_expect_exit(&p, 1);
    snprintf(want, sizeof(want),
             "ckpt-train: cannot create %s: Not a "
             "directory\n",
             file);
    assert_string_equal(p.err, want);
    assert_string_equal(p.out, "");
    e2e_proc_free(&p);
    TRAIN(&p, "--dir", below, "--steps", "10", MODEL, "--quiet");
    e2e_expect_exit(&p, 1);
    e2e_expect_contains("trainer stderr", p.err, "Not a directory", 1);
    e2e_proc_free(&p);
    /* a --dir that is a dangling symbolic link names its target (it said
     * only "No such file or directory"), and nothing is created there */
    {
        char *link = test_path(dir, "link");
        char *gone = test_path(dir, "gone/deeper");
        struct stat st;
        assert_int_equal(symlink(gone, link), 0);
        TRAIN(&p, "--dir", link, "--steps", "10", MODEL, "--quiet");
        e2e_expect_exit(&p, 1);
        snprintf(want, sizeof(want),
                 "ckpt-train: cannot create %s: it is a symbolic link to "
                 "'%s', which does not exist (create that directory, or "
                 "point --dir elsewhere)\n",
                 link, gone);
        assert_string_equal(p.err, want);
        e2e_proc_free(&p);
        { /* "link/" names the link too */
            char *slashed = test_path(link, "");
            TRAIN(&p, "--dir", slashed, "--steps", "10", MODEL, "--quiet");
            e2e_expect_exit(&p, 1);
            e2e_expect_contains("trainer stderr", p.err,
                                "it is a symbolic link to", 1);
            e2e_proc_free(&p);
            free(slashed);
        }
        assert_int_equal(lstat(gone, &st), -1);
        free(gone);
        free(link);
    }
    /* arguments echoed in messages show control bytes as \xHH, never raw
     * on the terminal (they were printed raw) */
    {
        char *esc = test_path(file, "x\x1b[2J");
        TRAIN(&p, "--dir", esc, "--steps", "10", MODEL, "--quiet");
        e2e_expect_exit(&p, 1);
        e2e_expect_contains("trainer stderr", p.err, "/x\\x1b[2J: Not a", 1);
        e2e_expect_contains("trainer stderr", p.err, "\x1b", 0);
        e2e_proc_free(&p);
        free(esc);
    }
    TRAIN(&p, "--dir", dir, "--steps", "\x1b[2J");
    e2e_expect_exit(&p, 2);
    e2e_expect_contains("trainer stderr", p.err, "bad --steps '\\x1b[2J'", 1);
    e2e_expect_contains("trainer stderr", p.err, "\x1b", 0);
    e2e_proc_free(&p);
    /* a value out of range: the message says what is accepted (it said
     * only "bad --keep '-1'", and --help gives no ranges) */
    {
        static const struct {
            const char *option, *value, *message;
        } bad[] = {
            {"--save-steps", "0",
             "bad --save-steps '0' (steps between checkpoints: 1 or more)"},
            {"--save-secs", "inf",
             "bad --save-secs 'inf' (seconds between checkpoints: a finite "
             "number > 0)"},
            {"--keep", "-1",
             "bad --keep '-1' (checkpoints to keep: 1 to 1000000, or 0 to "
             "keep all)"},
            {"--keep-hours", "-1",
             "bad --keep-hours '-1' (hours between checkpoints kept for "
             "good: 0 to 1000000, 0 for none)"},
            {"--keep-hours", "nan", "bad --keep-hours 'nan'"},
            {"--mode", "fast", "bad --mode 'fast' (async, sync or none)"},
            {"--busy", "drop", "bad --busy 'drop' (skip, wait or coalesce)"},
            {"--hidden", "100000",
             "bad --hidden '100000' (units per layer: 1 to 65536)"},
            {"--layers", "65", "bad --layers '65' (hidden layers: 1 to 64)"},
            {"--batch", "0", "bad --batch '0' (examples per step: 1 to 65536)"},
            {"--lr", "nan",
             "bad --lr 'nan' (the learning rate: a finite number > 0)"},
            {"--seed", "-3", "bad --seed '-3' (an integer, 0 or more)"},
            /* an operand and a joined value said "unknown option extra"
             * and "unknown option --dir=d", though --dir is one */
            {"extra", "1",
             "ckpt-train: unexpected argument 'extra' (ckpt-train takes "
             "options only)\n"},
            {"--dir=d", "1",
             "ckpt-train: unknown option --dir=d (an option's value is the "
             "next argument: --steps 100, not --steps=100)\n"},
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
            TRAIN(&p, "--dir", dir, bad[i].option, bad[i].value);
            e2e_expect_exit(&p, 2);
            e2e_expect_contains("trainer stderr", p.err, bad[i].message, 1);
            e2e_proc_free(&p);
        }
    }
    TRAIN(&p, "--dir", dir, "--bogus", "1");
    e2e_expect_exit(&p, 2);
    e2e_expect_contains("trainer stderr", p.err, "unknown option --bogus", 1);
    e2e_expect_contains("trainer stderr", p.err, "usage: ckpt-train", 1);
    e2e_expect_contains("trainer stderr", p.err,
                        "[--distributed [--collective-timeout SECS]]\n", 1);
    e2e_expect_contains("trainer stderr", p.err,
                        "Run 'ckpt-train --help' for every option.", 1);
    /* the synopsis only: the option descriptions are --help's */
    e2e_expect_contains("trainer stderr", p.err, "--keep K           ", 0);
    e2e_proc_free(&p);
    TRAIN(&p, "--dir", dir, "--save-secs", "1e400"); /* no infinity */
    e2e_expect_exit(&p, 2);
    e2e_expect_contains("trainer stderr", p.err, "bad --save-secs '1e400'", 1);
    e2e_proc_free(&p);
    TRAIN(&p, "--dir", dir, "--steps", "0");
    e2e_expect_exit(&p, 2);
    e2e_expect_contains("trainer stderr", p.err, "bad --steps '0'", 1);
    e2e_proc_free(&p);
    TRAIN(&p, "--dir", "", "--steps", "10");
    e2e_expect_exit(&p, 2);
    e2e_expect_contains("trainer stderr", p.err, "bad --dir ''", 1);
    e2e_proc_free(&p);
    TRAIN(&p, "--dir", dir, "--lr", "nan");
    e2e_expect_exit(&p, 2);
    e2e_expect_contains("trainer stderr", p.err, "bad --lr 'nan'", 1);
    e2e_proc_free(&p);
    TRAIN(&p, "--dir", dir, "--save-steps", "5", "--save-secs", "1");
    e2e_expect_exit(&p, 2);
    e2e_expect_contains("trainer stderr", p.err, "exclude each other", 1);
    e2e_proc_free(&p);
    TRAIN(&p, "--steps");
    e2e_expect_exit(&p, 2);
    e2e_proc_free(&p);
    /* the distributed trainer's bound on its collectives only */
    TRAIN(&p, "--dir", dir, "--collective-timeout", "5");
    e2e_expect_exit(&p, 2);
    e2e_expect_contains("trainer stderr", p.err,
                        "--collective-timeout needs --distributed", 1);
    e2e_proc_free(&p);
    /* an installed program answers --version (it was an unknown option,
     * exit 2), with the library's version */
    TRAIN(&p, "--version");
    e2e_expect_exit(&p, 0);
    {
        char version[64];
        snprintf(version, sizeof(version), "ckpt-train %s\n",
                 ckpt_version_string());
        assert_string_equal(p.out, version);
        assert_string_equal(p.err, "");
    }
    e2e_proc_free(&p);
    TRAIN(&p, "--help");
    e2e_expect_exit(&p, 0);
    e2e_expect_contains("trainer stdout", p.out, "usage: ckpt-train", 1);
    e2e_expect_contains("trainer stdout", p.out,
                        "  --version          print \"ckpt-train <version>\"",
                        1);
    e2e_expect_contains("trainer stdout", p.out,
                        "  --collective-timeout SECS\n", 1);
    /* a script's `ckpt-train ... &` cannot be stopped by SIGINT: --help
     * says so, and what does stop it */
    e2e_expect_contains("trainer stdout", p.out,
                        "Without --distributed a signal\n"
                        "ckpt-train starts with ignored stays ignored: "
                        "SIGINT in a background\njob of a shell script "
                        "(cmd &), which SIGTERM stops.",
                        1);
    e2e_proc_free(&p);
    /* nothing was written anywhere (the file and the link made here) */
    assert_int_equal(e2e_count_files(dir, ""), 4);
    free(below);
    free(file);
    test_remove_tree(dir);
}

/* ---- a SIGTERM that cannot stop the trainer ------------------------------ */

/* Started with SIGTERM blocked in its signal mask, or ignored (both
 * inherited across exec), the trainer could not be preempted: it trains
 * as usual but says so once on stderr, naming which. */
static void test_train_warns_unusable_sigterm(void **state)
{
    static const struct {
        int ignore;
        const char *want;
    } cases[] = {
        {0, "ckpt-train: warn: preemption handler: SIGTERM is blocked in the "
            "signal mask"},
        {1, "ckpt-train: warn: preemption handler: SIGTERM is ignored"},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *dir = test_make_temp_dir();
        struct sigaction ign, before;
        sigset_t term, old_mask;
        e2e_proc p;
        memset(&ign, 0, sizeof(ign));
        ign.sa_handler = cases[i].ignore ? SIG_IGN : SIG_DFL;
        sigemptyset(&ign.sa_mask);
        sigemptyset(&term);
        sigaddset(&term, SIGTERM);
        assert_int_equal(sigaction(SIGTERM, &ign, &before), 0);
        assert_int_equal(
            pthread_sigmask(cases[i].ignore ? SIG_UNBLOCK : SIG_BLOCK, &term,
                            &old_mask),
            0);
        TRAIN(&p, "--dir", dir, "--steps", "4", MODEL, "--save-steps", "2",
              "--quiet");
        assert_int_equal(pthread_sigmask(SIG_SETMASK, &old_mask, NULL), 0);
        assert_int_equal(sigaction(SIGTERM, &before, NULL), 0);
        e2e_expect_exit(&p, 0);
        assert_int_equal(test_count(p.err, cases[i].want), 1);
        assert_int_equal(test_count(p.err, "no final checkpoint"), 1);
        e2e_proc_free(&p);
        test_remove_tree(dir);
    }
}

/* ---- saves that fail --------------------------------------------------- */

/* The trainer runs as `uid` (0: as this process) on `run`, a directory made
 * read-only after its first run's checkpoints. */
static void test_save_fails_read_only_dir(void **state)
{
    char *dir = test_make_temp_dir();
    char *run = test_path(dir, "run");
    uid_t uid = 0;
    e2e_summary s;
    e2e_proc p;
    (void)state;
    if (geteuid() == 0) {
        /* root ignores permissions: train as nobody instead */
        uid = 65534;
        assert_int_equal(chmod(dir, 0755), 0);
    }
    assert_int_equal(mkdir(run, 0755), 0);
    if (uid != 0)
        assert_int_equal(chown(run, uid, uid), 0);
    e2e_spawn(&p, CKPT_TRAIN_PATH,
              E2E_ARGS("--dir", run, "--steps", "100", MODEL, "--save-steps",
                       "50", "--busy", "wait", "--quiet"),
              uid);
    e2e_proc_finish(&p);
    if (uid != 0 && e2e_exit_code(&p) != 0) {
        /* e.g. the build or temp directory is closed to nobody */
        print_message("SKIPPED: cannot run the trainer as uid %d (exit "
                      "%d): %s\n",
                      (int)uid, e2e_exit_code(&p), p.err);
        e2e_proc_free(&p);
        free(run);
        test_remove_tree(dir);
        skip();
        return;
    }
    e2e_expect_exit(&p, 0);
    e2e_proc_free(&p);
    assert_int_equal(chmod(run, 0555), 0);
    e2e_spawn(&p, CKPT_TRAIN_PATH,
              E2E_ARGS("--dir", run, "--steps", "200", MODEL, "--save-steps",
                       "50", "--busy", "wait", "--quiet"),
              uid);
    e2e_proc_finish(&p);
    e2e_expect_exit(&p, 1);
    expect_restored(p.out, run, 100);
    e2e_expect_contains("trainer stderr", p.err, "Permission denied", 1);
    e2e_expect_contains("trainer stderr", p.err, "/run/model.ckpt-150", 1);
    e2e_parse_summary(p.out, &s);
    assert_true(s.failed >= 1);
    assert_int_equal(s.checkpoints, 0);
    e2e_proc_free(&p);
    assert_int_equal(chmod(run, 0755), 0);
    /* the earlier checkpoints are untouched */
    assert_int_equal(e2e_latest_step(run, NULL), 100);
    expect_verify_ok(run);
    assert_int_equal(e2e_count_files(run, ".index"), 3);
    assert_int_equal(e2e_count_files(run, "*.tempstate"), 0);
    free(run);
    test_remove_tree(dir);
}

/* A checkpoint directory below a parent the trainer may write and enter
 * but not read (mode 0311, as a shared /scratch at 1733): the parent
 * cannot be opened to sync the directory's entry, by this run or any:
 * the trainer creates the directory there, trains and saves, and a
 * relaunch finds it and resumes, instead of "cannot create". */
static void test_train_below_unreadable_parent(void **state)
{
    char *dir = test_make_temp_dir();
    char *par = test_path(dir, "par");
    char *run = test_path(par, "run");
    uid_t uid = geteuid() == 0 ? 65534 : 0; /* root reads any directory */
    e2e_proc p;
    (void)state;
    assert_int_equal(chmod(dir, 0755), 0);
    assert_int_equal(mkdir(par, 0755), 0);
    if (uid != 0)
        assert_int_equal(chown(par, uid, uid), 0);
    /* owner (the trainer) and others: write and search, no read */
    assert_int_equal(chmod(par, 0311), 0);
    for (int round = 0; round < 2; round++) {
        e2e_spawn(&p, CKPT_TRAIN_PATH,
                  E2E_ARGS("--dir", run, "--steps", round ? "100" : "50", MODEL,
                           "--save-steps", "50", "--quiet"),
                  uid);
        e2e_proc_finish(&p);
        if (round == 0 && uid != 0 && e2e_exit_code(&p) != 0 &&
            !strstr(p.err, run)) {
            /* e.g. the build or temp directory is closed to nobody */
            print_message("SKIPPED: cannot run the trainer as uid %d "
                          "(exit %d): %s\n",
                          (int)uid, e2e_exit_code(&p), p.err);
            e2e_proc_free(&p);
            assert_int_equal(chmod(par, 0755), 0);
            free(run);
            free(par);
            test_remove_tree(dir);
            skip();
            return;
        }
        e2e_expect_exit(&p, 0);
        if (round == 1)
            expect_restored(p.out, run, 50);
        e2e_proc_free(&p);
    }
    assert_int_equal(chmod(par, 0755), 0);
    assert_int_equal(e2e_latest_step(run, NULL), 100);
    expect_verify_ok(run);
    free(run);
    free(par);
    test_remove_tree(dir);
}

/* ---- output that goes nowhere ---------------------------------------- */

enum lost_stdout { STDOUT_DEV_FULL, STDOUT_CLOSED, STDOUT_BROKEN_PIPE };

/* Run the trainer for 100 steps into `run` with its stdout `how` and its
 * stderr in `err_path`; returns its wait status. */
static int train_losing_stdout(const char *run, const char *err_path,
                               enum lost_stdout how)
{
    const char *const args[] = {
        CKPT_TRAIN_PATH, "--dir", run,      "--steps", "100", MODEL,
        "--save-steps",  "50",    "--busy", "wait",    NULL};
    int status = 0, fds[2] = {-1, -1};
    pid_t pid;
    if (how == STDOUT_BROKEN_PIPE) {
        assert_int_equal(pipe(fds), 0);
        close(fds[0]); /* no reader, ever */
    }
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int err = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int out = how == STDOUT_DEV_FULL ? open("/dev/full", O_WRONLY) : -1;
        if (err < 0 || dup2(err, 2) != 2)
            _exit(97);
        if (how == STDOUT_DEV_FULL && (out < 0 || dup2(out, 1) != 1))
            _exit(97);
        if (how == STDOUT_BROKEN_PIPE && dup2(fds[1], 1) != 1)
            _exit(97);
        if (how == STDOUT_CLOSED)
            close(1);
        /* the default disposition, whatever the test runner set */
        signal(SIGPIPE, SIG_DFL);
        execv(CKPT_TRAIN_PATH, (char *const *)args);
        _exit(98);
    }
    if (fds[1] >= 0)
        close(fds[1]);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return status;
}

/* A trainer whose stdout goes nowhere (/dev/full; closed; a pipe whose
 * reader went away, which would have killed it with SIGPIPE) trains to
 * the end and writes its checkpoints, but exits 3, not 0, saying on
 * stderr which stream it lost and the OS error (before, /dev/full and a
 * closed stdout exited 0, as if all was well; then the message gave no
 * error for a write that failed before the end: stdio keeps none). */
static void test_lost_stdout_exits_3(void **state)
{
    static const char *const why[] = {
        [STDOUT_DEV_FULL] = "ckpt-train: could not write stdout: No space "
                            "left on device\n",
        [STDOUT_CLOSED] = "ckpt-train: could not write stdout: it was "
                          "closed when ckpt-train started\n",
        [STDOUT_BROKEN_PIPE] = "ckpt-train: could not write stdout: Broken "
                               "pipe\n",
    };
    char *dir = test_make_temp_dir();
    (void)state;
    for (int how = STDOUT_DEV_FULL; how <= STDOUT_BROKEN_PIPE; how++) {
        char name[32];
        char *run, *err_path, *err;
        int status;
        snprintf(name, sizeof(name), "run%d", how);
        run = test_path(dir, name);
        err_path = test_path(dir, "stderr.txt");
        status = train_losing_stdout(run, err_path, (enum lost_stdout)how);
        err = test_read_text(err_path, NULL);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 3)
            fail_msg("stdout case %d: wait status %#x, stderr: %s", how,
                     (unsigned)status, err);
        e2e_expect_contains("trainer stderr", err, why[how], 1);
        /* training and its checkpoints were not affected */
        assert_int_equal(e2e_latest_step(run, NULL), 100);
        expect_verify_ok(run);
        free(err);
        free(err_path);
        free(run);
    }
    test_remove_tree(dir);
}

/* --help into /dev/full: the help went nowhere, exit status 3. */
static void test_help_to_full_device_exits_3(void **state)
{
    int status = 0;
    pid_t pid;
    (void)state;
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int out = open("/dev/full", O_WRONLY);
        int null = open("/dev/null", O_WRONLY);
        if (out < 0 || null < 0 || dup2(out, 1) != 1 || dup2(null, 2) != 2)
            _exit(97);
        execl(CKPT_TRAIN_PATH, CKPT_TRAIN_PATH, "--help", (char *)NULL);
        _exit(98);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 3);
}

/* ---- a small stack limit ---------------------------------------------- */

/* Run argv[0] with `resource` limited to `limit` (soft and hard), its
 * stdout and stderr into the file `out_path`; its wait status. */
static int run_under_limit(int resource, rlim_t limit, const char *const *argv,
                           const char *out_path)
{
    int status = 0;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct rlimit rl = {limit, limit};
        int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || dup2(fd, 1) != 1 || dup2(fd, 2) != 2 ||
            setrlimit(resource, &rl) != 0)
            _exit(97);
        execv(argv[0], (char *const *)argv);
        _exit(98);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return status;
}

/* The output of a run_under_limit run, NUL-terminated (free it). */
static char *read_output(const char *path)
{
    return test_read_text(path, NULL);
}

/* ckpt-train to step 100 with RLIMIT_STACK at `limit` (saves every 50
 * steps, --busy wait): it exits 0 and its checkpoint verifies (its stderr
 * shown otherwise). Skipped in sanitizer builds, whose own frames need
 * more of the main thread's stack. */
static void train_under_stack_limit(rlim_t limit)
{
    char *dir = test_make_temp_dir();
    char *run = test_path(dir, "run");
    char *err_path = test_path(dir, "stderr.txt");
    const char *const args[] = {
        CKPT_TRAIN_PATH, "--dir", run,      "--steps", "100",     MODEL,
        "--save-steps",  "50",    "--busy", "wait",    "--quiet", NULL};
    int status;
    if (TEST_SANITIZED) {
        free(err_path);
        free(run);
        test_remove_tree(dir);
        skip();
        return;
    }
    status = run_under_limit(RLIMIT_STACK, limit, args, err_path);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        size_t n = 0;
        uint8_t *err = test_read_file(err_path, &n);
        fail_msg("wait status %#x: %.*s", (unsigned)status, (int)n,
                 err ? (const char *)err : "");
    }
    assert_int_equal(e2e_latest_step(run, NULL), 100);
    expect_verify_ok(run);
    free(err_path);
    free(run);
    test_remove_tree(dir);
}

/* Under `ulimit -s 64` (the limit new threads take their stack size from
 * by default) the trainer's async saves complete: the library starts its
 * writer with a stack of at least 1 MiB. The writer used to overflow a
 * 64 KiB stack in its first commit and the trainer died of SIGSEGV. */
static void test_small_stack_limit(void **state)
{
    (void)state;
    train_under_stack_limit((rlim_t)64 << 10);
}

/* A stack limit too large to map for each thread (`ulimit -s` of a
 * terabyte; a thread's default stack is that limit): the writer thread
 * starts with the library's floor instead, and the run saves. Before,
 * pthread_create failed with EAGAIN and the session was never made. */
static void test_huge_stack_limit(void **state)
{
    (void)state;
    train_under_stack_limit((rlim_t)1 << 40);
}

/* ---- a model larger than the memory it may have ---------------------- */

typedef struct memory_case {
    int resource;
    rlim_t limit;
    const char *hidden, *layers, *mode;
    int status;
    const char *want[2]; /* in its output */
    const char *absent;  /* not in its output */
} memory_case;

/* Options whose model (with its Adam moments, gradients, activations and
 * an async save's staging copy) cannot fit in the memory the process may
 * have (a small `ulimit -v` or `ulimit -d` here, set in the child alone:
 * nothing large is ever allocated) are refused at once: exit status 2,
 * the options, the bytes they need and the limit named (--mode sync
 * suggested where it would fit), no directory made. Before, the
 * allocations failed one by one and the trainer said only "out of
 * memory" (exit 1), or, under no limit, was OOM-killed touching
 * terabytes. A model that passes the check but not the allocations (the
 * process's own mappings count against `ulimit -v` too: a limit one page
 * above what the options need, 53775008 bytes by test_train_memory.c's
 * plan) fails naming the array it could not allocate and its size, exit
 * status 1. Skipped in sanitizer builds, whose shadow memory does not
 * start under such limits. */
static void test_model_memory_limits(void **state)
{
    static const memory_case cases[] = {
        {RLIMIT_AS,
         (rlim_t)256 << 20,
         "65536",
         "64",
         "async",
         2,
         {"ckpt-train: --hidden 65536 --layers 64 --batch 64 --mode async "
          "need 7578664913752 bytes of memory (6.9 TiB: the model with its "
          "Adam moments, gradients and activations 3.9 TiB, an async save's "
          "copy of its state 3.0 TiB, the data), more than ",
          "the address-space limit (ulimit -v) of 268435456 bytes (256.0 "
          "MiB); choose a smaller --hidden, --layers or --batch\n"},
         "out of memory"},
        {RLIMIT_DATA,
         (rlim_t)256 << 20,
         "4096",
         "8",
         "sync",
         2,
         {"ckpt-train: --hidden 4096 --layers 8 --batch 64 --mode sync need "
          "1899694752 bytes of memory (1.8 GiB: the model with its Adam "
          "moments, gradients and activations 1.8 GiB, the data), more than ",
          "the data-segment limit (ulimit -d) of 268435456 bytes (256.0 "
          "MiB); choose a smaller --hidden, --layers or --batch\n"},
         "out of memory"},
        {RLIMIT_AS,
         (rlim_t)64 << 20,
         "1024",
         "4",
         "async",
         2,
         {"ckpt-train: --hidden 1024 --layers 4 --batch 64 --mode async need "
          "92105560 bytes of memory (87.8 MiB: ",
          "the address-space limit (ulimit -v) of 67108864 bytes (64.0 MiB); "
          "choose a smaller --hidden, --layers or --batch, or --mode sync (no "
          "staging copy)\n"},
         "out of memory"},
        {RLIMIT_AS,
         (rlim_t)53780480,
         "1024",
         "4",
         "sync",
         1,
         {"ckpt-train: out of memory allocating ", " bytes)\n"},
         " need "},
    };
    char *dir, *out_path;
    (void)state;
    if (TEST_SANITIZED)
        skip();
    dir = test_make_temp_dir();
    out_path = test_path(dir, "out.txt");
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const memory_case *c = &cases[i];
        char name[16];
        char *run;
        snprintf(name, sizeof(name), "run%zu", i);
        run = test_path(dir, name);
        const char *const args[] = {CKPT_TRAIN_PATH, "--dir",   run,
                                    "--hidden",      c->hidden, "--layers",
                                    c->layers,       "--mode",  c->mode,
                                    "--quiet",       NULL};
        int status = run_under_limit(c->resource, c->limit, args, out_path);
        char *out = read_output(out_path);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != c->status)
            fail_msg("case %zu: wait status %#x, want exit %d: %s", i,
                     (unsigned)status, c->status, out);
        e2e_expect_contains("trainer output", out, c->want[0], 1);
        e2e_expect_contains("trainer output", out, c->want[1], 1);
        e2e_expect_contains("trainer output", out, c->absent, 0);
        if (c->status == 2) /* refused before the directory is made */
            assert_int_equal(access(run, F_OK), -1);
        free(out);
        free(run);
    }
    free(out_path);
    test_remove_tree(dir);
}

/* Whether a run_under_limit status is the dynamic loader's refusal (the
 * limit too small to map the libraries: main never ran). */
static int loader_refused(int status)
{
    return WIFEXITED(status) && WEXITSTATUS(status) == 127;
}

/* Every allocation ckpt-train makes, its very first (the trainer's state,
 * a few hundred bytes) included, names what it allocates and its bytes
 * when it fails, and exits 1. Under `ulimit -v` (set in the child alone;
 * nothing large is allocated) the limits from the smallest at which main
 * runs upward, 4 KiB apart, fail one allocation after another until the
 * run gets past them: each must say "out of memory allocating <what>
 * (<n> bytes)", the first the trainer's state, then the arrays. Before, the
 * first allocation's failure exited 1 without a word. Skipped in sanitizer
 * builds, whose shadow memory does not start under such limits. */
static void test_first_allocation_named(void **state)
{
    const rlim_t step = 4096;
    rlim_t lo = (rlim_t)1 << 20, hi = (rlim_t)256 << 20;
    char *dir, *out_path, *run;
    int saw_state = 0, saw_other = 0;
    (void)state;
    if (TEST_SANITIZED)
        skip();
    dir = test_make_temp_dir();
    out_path = test_path(dir, "out.txt");
    run = test_path(dir, "run");
    const char *const args[] = {
        CKPT_TRAIN_PATH, "--dir", run,       "--mode", "none",
        "--steps",       "1",     "--quiet", NULL};
    /* the smallest limit, to a page, at which the loader lets main run */
    assert_true(loader_refused(run_under_limit(RLIMIT_AS, lo, args, out_path)));
    assert_false(
        loader_refused(run_under_limit(RLIMIT_AS, hi, args, out_path)));
    while (hi - lo > step) {
        rlim_t mid = lo + (hi - lo) / 2 / step * step;
        if (loader_refused(run_under_limit(RLIMIT_AS, mid, args, out_path)))
            lo = mid;
        else
            hi = mid;
    }
    for (rlim_t limit = hi; limit < hi + ((rlim_t)8 << 20); limit += step) {
        int status = run_under_limit(RLIMIT_AS, limit, args, out_path);
        char *out = read_output(out_path);
        if (loader_refused(status)) {
            free(out);
            continue;
        }
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 1 || !out[0] ||
            strncmp(out, "ckpt-train: out of memory allocating ", 37) != 0 ||
            !strstr(out, " bytes)\n")) {
            /* a failure, and silent: the bug */
            if (WIFEXITED(status) && WEXITSTATUS(status) == 1 && !out[0])
                fail_msg("limit %llu: exit 1 without a word",
                         (unsigned long long)limit);
            free(out);
            break; /* past the trainer's own allocations */
        }
        if (strstr(out, "allocating the trainer's state ("))
            saw_state = 1;
        else
            saw_other = 1;
        free(out);
    }
    assert_true(saw_state);
    assert_true(saw_other);
    free(run);
    free(out_path);
    test_remove_tree(dir);
}

typedef struct mount_state {
    char *dir;
    int mounted;
} mount_state;

static int mount_setup(void **state)
{
    mount_state *m = calloc(1, sizeof(*m));
    if (!m)
        return -1;
    m->dir = test_make_temp_dir();
    *state = m;
    return 0;
}

static int mount_teardown(void **state)
{
    mount_state *m = *state;
    if (m->mounted && umount(m->dir) != 0)
        umount2(m->dir, MNT_DETACH);
    test_remove_tree(m->dir);
    free(m);
    return 0;
}

/* Bytes of a checkpoint of the trainer's MLP (32 inputs, 10 classes):
 * each weight three times (value and Adam's two slots), 4096 int32 of data
 * order, a few scalars and the index. */
static int64_t checkpoint_bytes(int64_t hidden, int64_t layers)
{
    int64_t params = 32 * hidden + hidden +
                     (layers - 1) * (hidden * hidden + hidden) + hidden * 10 +
                     10;
    return 4 * 3 * params + 4 * 4096 + 2048;
}

/* A tmpfs that holds one checkpoint but not two: the second save fails
 * with ENOSPC. Needs root (mount); skipped where mounting is not allowed. */
static void test_save_fails_full_tmpfs(void **state)
{
    static const char *const modes[] = {"async", "sync"};
    mount_state *m = *state;
    int64_t one = checkpoint_bytes(256, 2);
    char opts[64];
    (void)state;
    /* room for 1.5 checkpoints, in whole pages */
    snprintf(opts, sizeof(opts), "size=%lldk,mode=0755",
             (long long)((one * 3 / 2 + 4095) / 4096 * 4));
    if (mount("tmpfs", m->dir, "tmpfs", 0, opts) != 0) {
        print_message("SKIPPED: cannot mount a tmpfs (%s); needs root and "
                      "CAP_SYS_ADMIN\n",
                      strerror(errno));
        skip();
        return;
    }
    m->mounted = 1;
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
        char *run = test_path(m->dir, modes[i]);
        char want[512];
        e2e_summary s;
        e2e_proc p;
        TRAIN(&p, "--dir", run, "--steps", "40", "--hidden", "256", "--layers",
              "2", "--batch", "16", "--save-steps", "10", "--keep", "1",
              "--mode", modes[i], "--busy", "wait", "--quiet");
        e2e_expect_exit(&p, 1);
        snprintf(want, sizeof(want), "%s/model.ckpt-10.data-00000-of-00001",
                 run);
        e2e_expect_contains("trainer stderr", p.err, want, 1);
        e2e_expect_contains("trainer stderr", p.err, "No space left on device",
                            1);
        e2e_parse_summary(p.out, &s);
        assert_int_equal(s.checkpoints, 1);
        assert_true(s.failed >= 1);
        assert_true(s.steps >= 10 && s.steps < 40);
        e2e_proc_free(&p);
        /* the first checkpoint is intact, and nothing half-written stays */
        assert_int_equal(e2e_latest_step(run, NULL), 0);
        expect_verify_ok(run);
        assert_int_equal(e2e_count_files(run, ".index"), 1);
        assert_int_equal(e2e_count_files(run, "*.data-"), 1);
        assert_int_equal(e2e_count_files(run, "*.tempstate"), 0);
        assert_true(one > 0);
        test_remove_tree(run); /* room for the next mode */
    }
}

/* A directory one process's saver holds is refused to a saver of another
 * process (its recovery would delete the first one's temporary files),
 * with a message that says so; savers of one process share it; once the
 * holder is gone the other process gets it. */
static void test_directory_of_another_process_refused(void **state)
{
    char *dir = test_make_temp_dir();
    ckpt_saver *a = NULL, *b = NULL;
    e2e_proc p;
    (void)state;
    assert_ckpt_ok(ckpt_saver_open(&a, dir, NULL));
    assert_ckpt_ok(ckpt_saver_open(&b, dir, NULL)); /* same process */
    e2e_run(&p, CKPT_TRAIN_PATH,
            E2E_ARGS("--dir", dir, "--steps", "3", "--hidden", "16", "--layers",
                     "1", "--batch", "8", "--quiet"));
    e2e_expect_exit(&p, 1);
    e2e_expect_contains("ckpt-train stderr", p.err,
                        "is in use by a saver of another process", 1);
    /* naming the holder, where the kernel lists its locks */
    if (access("/proc/locks", R_OK) == 0) {
        char who[64];
        snprintf(who, sizeof(who), "another process (pid %ld)", (long)getpid());
        e2e_expect_contains("ckpt-train stderr", p.err, who, 1);
    }
    e2e_proc_free(&p);
    ckpt_saver_free(a);
    e2e_run(&p, CKPT_TRAIN_PATH,
            E2E_ARGS("--dir", dir, "--steps", "3", "--hidden", "16", "--layers",
                     "1", "--batch", "8", "--quiet"));
    e2e_expect_exit(&p, 1); /* b still holds it */
    e2e_proc_free(&p);
    ckpt_saver_free(b);
    e2e_run(&p, CKPT_TRAIN_PATH,
            E2E_ARGS("--dir", dir, "--steps", "3", "--hidden", "16", "--layers",
                     "1", "--batch", "8", "--quiet"));
    e2e_expect_exit(&p, 0);
    e2e_proc_free(&p);
    test_remove_tree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_summary_format),
        cmocka_unit_test(test_train_warns_unusable_sigterm),
        cmocka_unit_test(test_directory_of_another_process_refused),
        cmocka_unit_test(test_keep_across_restarts),
        cmocka_unit_test(test_keep_hours),
        cmocka_unit_test(test_sigterm),
        cmocka_unit_test(test_sigint),
        cmocka_unit_test(test_mode_none),
        cmocka_unit_test(test_mode_sync_same_as_async),
        cmocka_unit_test(test_usage_and_bad_dir),
        cmocka_unit_test(test_save_fails_read_only_dir),
        cmocka_unit_test(test_train_below_unreadable_parent),
        cmocka_unit_test(test_lost_stdout_exits_3),
        cmocka_unit_test(test_help_to_full_device_exits_3),
        cmocka_unit_test(test_small_stack_limit),
        cmocka_unit_test(test_huge_stack_limit),
        cmocka_unit_test(test_model_memory_limits),
        cmocka_unit_test(test_first_allocation_named),
        cmocka_unit_test_setup_teardown(test_save_fails_full_tmpfs, mount_setup,
                                        mount_teardown),
    };
    /* Run from a shell's background job, SIGINT arrives ignored, and an
     * ignored signal stays ignored under the handler (and across exec):
     * start from the default so that the signals these tests send act. */
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
