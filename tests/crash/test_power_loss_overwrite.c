/* tests/crash/test_power_loss_overwrite.c - power cuts while a save
 * replaces a checkpoint of the same name: a fixed name (CKPT_NO_STEP) or
 * a step saved again.
 *
 * A saver keeping one checkpoint saves the model of step 10 under a name,
 * then twice more under the same name with the values of steps 20 and 30.
 * The power is cut before every mutating operation of those two saves
 * (every later one fails: the machine is gone), losing all that was not
 * synced, only unsynced data, or a random part of both. A fresh POSIX
 * reader must then find a state file naming a complete checkpoint whose
 * values are all of one save, at or after the last one reported durable:
 * never none (the first save was durable before the cut). A saver opened
 * on the directory and freed must leave no temporary file, note or data
 * file without its index (the second name's included); one opened again
 * must save, leaving that one checkpoint and the state file and nothing
 * else (no second name, no temporary file, no pending note). Sync and
 * async saves. */
#include "crash_util.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define FIRST_STEP 10
#define MAX_TRACE_OPS 4096

typedef struct overwrite_case {
    int async;
    int64_t name_step; /* CKPT_NO_STEP, or the step every save is named */
    uint64_t cut;      /* 0: no cut */
    int drop;          /* 0 all unsynced, 1 unsynced data, 2 random */
    uint64_t seed;
} overwrite_case;

static int save_as(ckpt_saver *s, const overwrite_case *c)
{
    int err;
    if (!c->async)
        return ckpt_saver_save(s, c->name_step, NULL);
    err = ckpt_saver_save_async(s, c->name_step, NULL);
    if (err == 0)
        err = ckpt_saver_wait(s, 0, -1.0);
    return err;
}

/* The latest checkpoint of `dir` holds the values of one save, of a step
 * in [durable, 30]. 0 or -1 (`why`). */
static int check_latest(const char *dir, int64_t durable, int64_t *step_out,
                        char *why, size_t n)
{
    ckpt_buf latest = CKPT_BUF_INIT;
    ckpt_bundle_reader *r = NULL;
    crash_model m;
    int rc = -1;
    crash_model_init(&m);
    if (ckpt_latest_checkpoint(&latest, NULL, dir) < 0) {
        snprintf(why, n, "no latest checkpoint: %s",
                 ckpt_error_last()->message);
        goto done;
    }
    if (ckpt_bundle_reader_open(&r, latest.ptr, NULL) < 0 ||
        ckpt_bundle_reader_verify(r) < 0 ||
        ckpt_bundle_reader_read(r, "global_step", &m.step, sizeof(m.step)) <
            0 ||
        ckpt_bundle_reader_read(r, "w", m.w, sizeof(m.w)) < 0 ||
        ckpt_bundle_reader_read(r, "emb", m.emb, m.emb_n) < 0) {
        snprintf(why, n, "%s: %s", latest.ptr, ckpt_error_last()->message);
        goto done;
    }
    if (m.step < durable || m.step > 30) {
        snprintf(why, n, "%s holds step %lld; the last durable save was %lld",
                 latest.ptr, (long long)m.step, (long long)durable);
        goto done;
    }
    if (crash_model_check(&m, m.step, why, n) < 0)
        goto done;
    *step_out = m.step;
    rc = 0;
done:
    ckpt_bundle_reader_free(r);
    ckpt_buf_dispose(&latest);
    crash_model_dispose(&m);
    return rc;
}

/* Only the state file and `name`'s index and one data file are in `dir`.
 * 0 or -1 (`why`). */
static int check_only(const char *dir, const char *name, char *why, size_t n)
{
    char index[256], data[256];
    DIR *d = opendir(dir);
    struct dirent *e;
    int rc = 0;
    snprintf(index, sizeof(index), "%s.index", name);
    snprintf(data, sizeof(data), "%s.data-00000-of-00001", name);
    assert_non_null(d);
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
            !strcmp(e->d_name, "checkpoint") || !strcmp(e->d_name, index) ||
            !strcmp(e->d_name, data))
            continue;
        snprintf(why, n, "left over after recovery and a save: %s", e->d_name);
        rc = -1;
        break;
    }
    closedir(d);
    return rc;
}

/* Run `c` in `dir`: the first save, the cut armed, two overwrites, the
 * power cut, the checks. Returns the mutating operations of the two
 * overwrites (for the reference run), or fails the test naming the cut. */
static uint64_t run_case(const char *dir, const overwrite_case *c)
{
    static const char *const drops[] = {
        "losing all unsynced", "losing unsynced data", "losing a random part"};
    ckpt_fs_forward nosync;
    ckpt_fs_fault *ff = NULL;
    ckpt_saver *s = NULL;
    crash_model m;
    char why[1024] = "", cut[600] = "";
    const char *name =
        c->name_step == CKPT_NO_STEP ? "model.ckpt" : "model.ckpt-10";
    int64_t durable = FIRST_STEP, latest = -1;
    uint64_t ops;
    int err;
    crash_nosync_fs(&nosync);
    crash_model_init(&m);
    assert_ckpt_ok(ckpt_fs_fault_new(&ff, &nosync.fs));
    assert_ckpt_ok(
        crash_saver_open(&s, dir, ckpt_fs_fault_fs(ff), 1, &m, NULL, NULL));
    crash_model_fill(&m, FIRST_STEP);
    assert_ckpt_ok(save_as(s, c));
    assert_ckpt_ok(ckpt_fs_fault_drop_unsynced(ff)); /* it is all durable */
    ckpt_fs_fault_trace(ff, CKPT_FS_OP_MUTATING);
    if (c->cut > 0)
        ckpt_fs_fault_fail(ff, c->cut, CKPT_FS_OP_MUTATING, EIO, 1, 0);
    else
        ckpt_fs_fault_reset_count(ff);
    for (int64_t step = 20; step <= 30; step += 10) {
        crash_model_fill(&m, step);
        if (save_as(s, c) == 0)
            durable = step;
    }
    ckpt_saver_free(s);
    ops = ckpt_fs_fault_count(ff, CKPT_FS_OP_MUTATING);
    crash_describe_cut(ff, cut, sizeof(cut));
    ckpt_fs_fault_clear(ff);
    if (c->drop == 2)
        err = ckpt_fs_fault_drop_unsynced_random(ff, c->seed);
    else if (c->drop == 1)
        err = ckpt_fs_fault_drop_unsynced_data(ff);
    else
        err = ckpt_fs_fault_drop_unsynced(ff);
    assert_ckpt_ok(err);
    ckpt_fs_fault_free(ff);
    crash_model_dispose(&m);
    if (check_latest(dir, durable, &latest, why, sizeof(why)) < 0)
        fail_msg("%s %s saves, cut at op %llu (%s), %s: %s",
                 c->async ? "async" : "sync",
                 c->name_step == CKPT_NO_STEP ? "fixed-name" : "same-step",
                 (unsigned long long)c->cut, cut, drops[c->drop], why);
    /* recovery alone: nothing any save left over, a second name's data
     * without its index included (which a later save of the name would
     * otherwise be the only one to remove); then again, with one more
     * save of the name */
    crash_model_init(&m);
    assert_ckpt_ok(crash_saver_open(&s, dir, &nosync.fs, 1, &m, NULL, NULL));
    ckpt_saver_free(s);
    crash_model_dispose(&m);
    if (test_find_leftover(dir, why, sizeof(why)) < 0)
        fail_msg("%s %s saves, cut at op %llu (%s), %s: %s",
                 c->async ? "async" : "sync",
                 c->name_step == CKPT_NO_STEP ? "fixed-name" : "same-step",
                 (unsigned long long)c->cut, cut, drops[c->drop], why);
    crash_model_init(&m);
    assert_ckpt_ok(crash_saver_open(&s, dir, &nosync.fs, 1, &m, NULL, NULL));
    crash_model_fill(&m, 99);
    assert_ckpt_ok(save_as(s, c));
    ckpt_saver_free(s);
    crash_model_dispose(&m);
    if (check_only(dir, name, why, sizeof(why)) < 0)
        fail_msg("%s %s saves, cut at op %llu (%s), %s: %s",
                 c->async ? "async" : "sync",
                 c->name_step == CKPT_NO_STEP ? "fixed-name" : "same-step",
                 (unsigned long long)c->cut, cut, drops[c->drop], why);
    return ops;
}

static void sweep(int async, int64_t name_step)
{
    char *base = test_make_temp_dir();
    char dir[4096];
    overwrite_case c = {async, name_step, 0, 0, 0};
    uint64_t ops, runs = 0;
    snprintf(dir, sizeof(dir), "%s/reference", base);
    assert_int_equal(mkdir(dir, 0755), 0);
    ops = run_case(dir, &c);
    assert_true(ops > 10 && ops < MAX_TRACE_OPS);
    for (uint64_t cut = 1; cut <= ops + 1; cut++) {
        for (int drop = 0; drop < 3; drop++) {
            c.cut = cut;
            c.drop = drop;
            c.seed = cut * 7919u + (uint64_t)drop;
            snprintf(dir, sizeof(dir), "%s/cut-%llu-%d", base,
                     (unsigned long long)cut, drop);
            assert_int_equal(mkdir(dir, 0755), 0);
            (void)run_case(dir, &c);
            test_remove_tree(strdup(dir));
            runs++;
        }
    }
    print_message("%s %s overwrites: %llu power cuts checked\n",
                  async ? "async" : "sync",
                  name_step == CKPT_NO_STEP ? "fixed-name" : "same-step",
                  (unsigned long long)runs);
    test_remove_tree(base);
}

static void test_fixed_name_sync(void **state)
{
    (void)state;
    sweep(0, CKPT_NO_STEP);
}

static void test_fixed_name_async(void **state)
{
    (void)state;
    sweep(1, CKPT_NO_STEP);
}

static void test_same_step_sync(void **state)
{
    (void)state;
    sweep(0, FIRST_STEP);
}

static void test_same_step_async(void **state)
{
    (void)state;
    sweep(1, FIRST_STEP);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixed_name_sync),
        cmocka_unit_test(test_fixed_name_async),
        cmocka_unit_test(test_same_step_sync),
        cmocka_unit_test(test_same_step_async),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
