/* tests/crash/test_power_loss.c - power-loss simulation of the saver
 * (issue 6, part 2).
 *
 * A saver keeping two checkpoints writes three saves (steps 10, 20, 30;
 * the third evicts the first) through the fault file system, which records
 * every operation. For every prefix of that trace we cut the power: the
 * fault file system fails the next mutating operation and every later one
 * (the machine is gone; the saver's reactions change nothing), then drops
 * what a power cut loses, twice from the same point: bytes not fsynced and
 * directory entries not followed by a directory fsync; and bytes not
 * fsynced only, every directory change kept in order (a file system that
 * commits its metadata at once: this catches a deletion made before the
 * state file stops naming its checkpoint). A fresh POSIX reader then checks the
 * directory (crash_check_dir): no state file, or one whose checkpoints all
 * verify with the values of their steps, and no save that reported success
 * lost. A saver reopened on the directory must recover (temporaries gone,
 * the listed checkpoints kept and restorable) and save again. Both sync
 * saves and async saves (save_async + wait) are cut.
 *
 * A second fault model ("syncs"): from the Nth fsync or directory fsync on,
 * every sync fails with EIO while the other operations still reach the
 * page cache (a failing disk), so the saver keeps reacting: rolling back
 * the state file, deleting what it wrote. The directory must satisfy the
 * same checks before the power cut (a reader may look at any time) and
 * after it.
 *
 * "cuts" also runs the three saves to the end and cuts the power there 48
 * times at random (ckpt_fs_fault_drop_unsynced_random): the eviction's
 * removals must leave no index without its data after recovery, which
 * every group checks after every recovery too. "syncs" adds, at every
 * failing sync, 12 power cuts keeping a random part of what was not synced:
 * a save that gives up after its index's rename removes the index first
 * and keeps its data files when the directory fsync making that removal
 * durable fails; and a first save given up so, then an open on a
 * recovered disk removing its data files (no index), then a power cut.
 *
 * "cuts" also sweeps every cut point of the three saves with
 * keep_checkpoint_every_n_hours set (a clock two hours on at each save):
 * the third save's retention keeps step 10 unlisted instead of deleting
 * it, and once the state file stops naming it no cut and no recovery may
 * lose it.
 *
 * The long form ("random", label "slow") draws 10,000 random states of the
 * first model and 3,000 of the second: a random cut point, and a random
 * subset of the unsynced writes and directory changes surviving
 * (ckpt_fs_fault_drop_unsynced_random); a quarter of them crash again
 * during the recovery (a saver keeping one checkpoint, so recovery itself
 * evicts and rewrites the state file) before the final recovery check;
 * then 2,000 random states of the first model with
 * keep_checkpoint_every_n_hours set, checking that step 10, once kept for
 * its time, survives every later crash and recovery.
 *
 * The program takes the group to run as its argument (see main). */
#include "crash_util.h"

#include "support/fake_clock.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define NUM_STEPS 3
static const int64_t k_steps[NUM_STEPS] = {10, 20, 30};
#define MAX_STEP 30
#define RECOVERY_STEP 99
#define FINAL_STEP 100
#define MAX_TRACE 1024

/* With keep_hours_on, the savers keep a checkpoint every hour by
 * keep_clock, which each save moves two hours on (see
 * test_keep_hours_every_cut_sync). */
static int keep_hours_on;
static fake_clock keep_clock;
#define KEPT_STEP 10 /* the checkpoint the third save keeps for its time */

/* The newest step whose save was reported durable (-1: none). */
typedef struct outcome {
    int64_t durable;
} outcome;

static void on_done(const ckpt_save_result *r, void *payload)
{
    outcome *o = payload;
    if (r->status == 0 && r->step > o->durable)
        o->durable = r->step;
}

/* What the power cut loses (see support/fs_fault.h). */
enum drop_mode {
    DROP_ALL,    /* every unsynced byte and undurable directory change */
    DROP_DATA,   /* unsynced bytes only: directory changes kept, in order */
    DROP_RANDOM, /* a random part of both */
    DROP_MODES
};

static const char *const k_drop_names[DROP_MODES] = {
    "losing all unsynced", "losing unsynced data", "losing a random part"};

/* Operations a dying disk fails while the page cache accepts the rest. */
#define SYNC_OPS                                                               \
    (CKPT_FS_OP_BIT(CKPT_FS_OP_SYNC) | CKPT_FS_OP_BIT(CKPT_FS_OP_SYNC_DIR))

typedef struct crash_case {
    int async;      /* save_async + wait instead of save */
    uint64_t cut;   /* op (1-based, among `mask`) that fails, with every
                       later one of `mask`; 0: none */
    unsigned mask;  /* 0: CKPT_FS_OP_MUTATING (the machine stops);
                       SYNC_OPS: only syncs fail, the saver goes on and
                       the directory is checked before the cut too */
    size_t partial; /* bytes a failing write lands first */
    int drop;       /* what the power cut loses: a drop_mode */
    uint64_t seed;  /* for DROP_RANDOM */
    int once;       /* only op `cut` fails (a transient error), not every
                       later one */
    int more;       /* saves after the three (steps 40, 50, ...): what a
                       failed sync left is retried by a later save */
} crash_case;

/* The newest step the saves of `c` reach. */
static int64_t case_max_step(const crash_case *c)
{
    return MAX_STEP + 10 * (int64_t)c->more;
}

typedef struct case_result {
    int64_t durable;    /* newest step reported durable, -1: none */
    int64_t latest;     /* step the state file names, -1: no state file */
    size_t listed;      /* entries of the state file */
    uint64_t mutating;  /* mutating operations the saves asked for */
    int cut_op;         /* op of the first failed operation, -1: none */
    char cut_desc[600]; /* the same in words */
    int ops[MAX_TRACE]; /* the trace's ops (the first MAX_TRACE) */
    size_t nops;
} case_result;

static char *case_dir(const char *base, uint64_t i)
{
    size_t n = strlen(base) + 32;
    char *dir = malloc(n);
    assert_non_null(dir);
    snprintf(dir, n, "%s/case-%llu", base, (unsigned long long)i);
    assert_int_equal(mkdir(dir, 0755), 0);
    return dir;
}

/* Run the three saves in `dir` under `c`, cut the power and check what is
 * left. 0, or -1 with `why` set. */
static int run_case(const char *dir, const crash_case *c, case_result *res,
                    char *why, size_t n)
{
    ckpt_fs_forward nosync;
    ckpt_fs_fault *ff = NULL;
    ckpt_saver *s = NULL;
    crash_model m;
    outcome o = {-1};
    int err;
    memset(res, 0, sizeof(*res));
    res->cut_op = -1;
    crash_nosync_fs(&nosync);
    crash_model_init(&m);
    if (keep_hours_on) {
        fake_clock_init(&keep_clock, 1000.0, 1.7e9);
        crash_set_keep_hours(1.0, &keep_clock.clock);
    }
    assert_ckpt_ok(ckpt_fs_fault_new(&ff, &nosync.fs));
    assert_ckpt_ok(
        crash_saver_open(&s, dir, ckpt_fs_fault_fs(ff), 2, &m, on_done, &o));
    ckpt_fs_fault_trace(ff, CKPT_FS_OP_MUTATING);
    if (c->cut > 0)
        ckpt_fs_fault_fail(ff, c->cut, c->mask ? c->mask : CKPT_FS_OP_MUTATING,
                           EIO, !c->once, c->partial);
    else
        ckpt_fs_fault_reset_count(ff);
    for (int i = 0; i < NUM_STEPS + c->more; i++) {
        int64_t step = i < NUM_STEPS ? k_steps[i] : MAX_STEP + 10 * (i - 2);
        crash_model_fill(&m, step);
        keep_clock.now += 2 * 3600.0;
        if (c->async) {
            uint64_t ticket = 0;
            err = ckpt_saver_save_async(s, step, &ticket);
            if (err == 0)
                err = ckpt_saver_wait(s, ticket, -1.0);
        } else {
            err = ckpt_saver_save(s, step, NULL);
        }
        if (err == 0 && step > o.durable)
            o.durable = step;
    }
    ckpt_saver_free(s); /* delivers the last outcomes */
    res->mutating = ckpt_fs_fault_count(ff, CKPT_FS_OP_MUTATING);
    for (size_t i = 0; i < ckpt_fs_fault_trace_size(ff); i++) {
        const ckpt_fs_fault_event *e = ckpt_fs_fault_trace_event(ff, i);
        if (e->injected && res->cut_op < 0)
            res->cut_op = e->op;
        if (res->nops < MAX_TRACE)
            res->ops[res->nops++] = e->op;
    }
    crash_describe_cut(ff, res->cut_desc, sizeof(res->cut_desc));
    ckpt_fs_fault_clear(ff);
    if (c->mask == SYNC_OPS &&
        crash_check_dir(dir, o.durable, case_max_step(c), &res->latest,
                        &res->listed, why, n) < 0) {
        char inner[900];
        snprintf(inner, sizeof(inner), "%s", why);
        snprintf(why, n, "before the power cut: %s", inner);
        ckpt_fs_fault_free(ff);
        crash_model_dispose(&m);
        return -1;
    }
    if (c->drop == DROP_RANDOM)
        err = ckpt_fs_fault_drop_unsynced_random(ff, c->seed);
    else if (c->drop == DROP_DATA)
        err = ckpt_fs_fault_drop_unsynced_data(ff);
    else
        err = ckpt_fs_fault_drop_unsynced(ff);
    if (err < 0)
        snprintf(why, n, "the power cut failed: %s",
                 ckpt_error_last()->message);
    ckpt_fs_fault_free(ff);
    crash_model_dispose(&m);
    res->durable = o.durable;
    if (err < 0)
        return -1;
    return crash_check_dir(dir, o.durable, case_max_step(c), &res->latest,
                           &res->listed, why, n);
}

/* After a recovery: no index left without its data (retention's, a
 * replacement's and a failed save's removals make the index's removal
 * durable first, and keep the data when they cannot). 0 or -1 (`why`). */
static int check_no_incomplete(const char *dir, char *why, size_t n)
{
    int left = crash_count_incomplete(dir);
    if (left == 0)
        return 0;
    snprintf(why, n, "recovery: %d index file(s) without their data left",
             left);
    return -1;
}

/* The checkpoint retention kept for its time once the state file stopped
 * naming it (keep_hours_on): still whole, with its step's values. 0 or -1
 * (`why`). */
static int check_kept_for_time(const char *dir, char *why, size_t n)
{
    char prefix[4200], inner[900] = "";
    snprintf(prefix, sizeof(prefix), "%s/model.ckpt-%d", dir, KEPT_STEP);
    if (crash_verify_checkpoint(prefix, inner, sizeof(inner)) == 0)
        return 0;
    snprintf(why, n, "step %d, kept for its time, is lost: %s", KEPT_STEP,
             inner);
    return -1;
}

/* Operations of the trace in `mask`. */
static uint64_t count_ops(const case_result *r, unsigned mask)
{
    uint64_t n = 0;
    for (size_t i = 0; i < r->nops; i++)
        if (mask & CKPT_FS_OP_BIT(r->ops[i]))
            n++;
    return n;
}

static const char *mode_name(const crash_case *c)
{
    return c->async ? "async" : "sync";
}

/* The saves without a cut: every op of the trace, and the final state. */
static void reference_run(const char *base, int async, case_result *ref)
{
    crash_case c = {async, 0, 0, 0, DROP_ALL, 0, 0, 0};
    char why[1024] = "";
    char *dir = case_dir(base, 0);
    if (run_case(dir, &c, ref, why, sizeof(why)) < 0)
        fail_msg("%s saves without a fault: %s", mode_name(&c), why);
    assert_int_equal(ref->durable, MAX_STEP);
    assert_int_equal(ref->latest, MAX_STEP);
    assert_int_equal(ref->listed, 2);
    assert_int_equal(ref->nops, ref->mutating);
    assert_true(ref->mutating > 30 && ref->mutating < MAX_TRACE);
    test_remove_tree(dir);
}

/* Cut the power before every mutating operation of the three saves (and
 * after the last), losing everything unsynced. */
static void sweep(int async, unsigned mask)
{
    char *base = test_make_temp_dir();
    case_result *ref = calloc(1, sizeof(*ref));
    case_result *res = calloc(1, sizeof(*res));
    ckpt_fs_forward nosync;
    int seen_none = 0, seen[NUM_STEPS] = {0};
    assert_non_null(ref);
    assert_non_null(res);
    crash_nosync_fs(&nosync);
    reference_run(base, async, ref);
    uint64_t cuts = mask ? count_ops(ref, mask) : ref->mutating;
    for (uint64_t i = 0; i < DROP_RANDOM * (cuts + 1); i++) {
        uint64_t cut = 1 + i / DROP_RANDOM;
        crash_case c = {async, cut, mask, 0, (int)(i % DROP_RANDOM), 0, 0, 0};
        char why[1024] = "";
        char *dir = case_dir(base, i + 1);
        if (run_case(dir, &c, res, why, sizeof(why)) < 0)
            fail_msg("%s saves, %s from op %llu of %llu on (%s), then a "
                     "power cut %s: %s",
                     mode_name(&c), mask ? "syncs failing" : "stopped",
                     (unsigned long long)cut, (unsigned long long)cuts,
                     res->cut_desc, k_drop_names[c.drop], why);
        /* The cut hit the operation the reference trace has there. */
        if (!mask && cut <= ref->mutating)
            assert_int_equal(res->cut_op, ref->ops[cut - 1]);
        else if (cut > cuts)
            assert_int_equal(res->cut_op, -1);
        if (crash_check_recovery(dir, &nosync.fs, res->latest, res->listed,
                                 RECOVERY_STEP, why, sizeof(why)) < 0 ||
            check_no_incomplete(dir, why, sizeof(why)) < 0)
            fail_msg("%s saves, %s from op %llu on (%s), then a power cut "
                     "%s, then %s",
                     mode_name(&c), mask ? "syncs failing" : "stopped",
                     (unsigned long long)cut, res->cut_desc,
                     k_drop_names[c.drop], why);
        if (keep_hours_on && res->latest == MAX_STEP &&
            check_kept_for_time(dir, why, sizeof(why)) < 0)
            fail_msg("%s saves keeping one every hour, stopped from op %llu "
                     "on (%s), then a power cut %s, then recovery: %s",
                     mode_name(&c), (unsigned long long)cut, res->cut_desc,
                     k_drop_names[c.drop], why);
        if (res->latest < 0)
            seen_none = 1;
        for (int k = 0; k < NUM_STEPS; k++)
            if (res->latest == k_steps[k])
                seen[k] = 1;
        test_remove_tree(dir);
    }
    /* The sweep went through every stage: nothing yet, then each save. */
    assert_true(seen_none);
    for (int i = 0; i < NUM_STEPS; i++)
        assert_true(seen[i]);
    print_message("%s saves, %s: %llu cut points checked, %d power cuts "
                  "each\n",
                  async ? "async" : "sync", mask ? "syncs failing" : "stopped",
                  (unsigned long long)cuts + 1, DROP_RANDOM);
    free(ref);
    free(res);
    test_remove_tree(base);
}

static void test_every_cut_sync(void **state)
{
    (void)state;
    sweep(0, 0);
}

static void test_every_cut_async(void **state)
{
    (void)state;
    sweep(1, 0);
}

/* Every cut of the three saves with keep_checkpoint_every_n_hours set:
 * the third save's retention keeps step 10 (saved two hours after the
 * saver's creation) on disk, unlisted, instead of deleting it. */
static void keep_hours_sweep(int async)
{
    char *base = test_make_temp_dir();
    char *dir = case_dir(base, 0);
    crash_case c = {async, 0, 0, 0, DROP_ALL, 0, 0, 0};
    case_result *res = calloc(1, sizeof(*res));
    char why[1024] = "";
    assert_non_null(res);
    keep_hours_on = 1;
    /* without a cut: 10 is off the list and on disk */
    if (run_case(dir, &c, res, why, sizeof(why)) < 0 ||
        check_kept_for_time(dir, why, sizeof(why)) < 0)
        fail_msg("%s saves keeping one every hour, no fault: %s", mode_name(&c),
                 why);
    assert_int_equal(res->latest, MAX_STEP);
    assert_int_equal(res->listed, 2);
    test_remove_tree(dir);
    test_remove_tree(base);
    free(res);
    sweep(async, 0);
    keep_hours_on = 0;
    crash_set_keep_hours(0.0, NULL);
}

static void test_keep_hours_every_cut_sync(void **state)
{
    (void)state;
    keep_hours_sweep(0);
}

static void test_keep_hours_every_cut_async(void **state)
{
    (void)state;
    keep_hours_sweep(1);
}

/* The three saves run to the end (the last thing they do is retention
 * deleting step 10), then random power cuts: removals in one directory
 * reach the disk in any order until it is fsynced, so a cut keeping the
 * data file's removal but losing the index's would leave an index whose
 * data is gone, which no sweep removes; the deletion makes the index's
 * removal durable first. Recovery must leave no such index. */
static void eviction_power_cuts(int async)
{
    char *base = test_make_temp_dir();
    case_result *res = calloc(1, sizeof(*res));
    ckpt_fs_forward nosync;
    assert_non_null(res);
    crash_nosync_fs(&nosync);
    for (uint64_t seed = 1; seed <= 48; seed++) {
        crash_case c = {async, 0, 0, 0, DROP_RANDOM, seed, 0, 0};
        char why[1024] = "";
        char *dir = case_dir(base, seed);
        if (run_case(dir, &c, res, why, sizeof(why)) < 0)
            fail_msg("%s saves to the end, then a power cut %s (seed %llu): "
                     "%s",
                     mode_name(&c), k_drop_names[c.drop],
                     (unsigned long long)seed, why);
        if (crash_check_recovery(dir, &nosync.fs, res->latest, res->listed,
                                 RECOVERY_STEP, why, sizeof(why)) < 0 ||
            check_no_incomplete(dir, why, sizeof(why)) < 0)
            fail_msg("%s saves to the end, then a power cut %s (seed %llu), "
                     "then %s",
                     mode_name(&c), k_drop_names[c.drop],
                     (unsigned long long)seed, why);
        test_remove_tree(dir);
    }
    free(res);
    test_remove_tree(base);
}

static void test_eviction_power_cuts_sync(void **state)
{
    (void)state;
    eviction_power_cuts(0);
}

static void test_eviction_power_cuts_async(void **state)
{
    (void)state;
    eviction_power_cuts(1);
}

/* fsync failing from the Nth sync on (the rest still reaching the page
 * cache), then the power cut. */
static void test_failing_syncs_sync(void **state)
{
    (void)state;
    sweep(0, SYNC_OPS);
}

static void test_failing_syncs_async(void **state)
{
    (void)state;
    sweep(1, SYNC_OPS);
}

/* fsync failing from the Nth sync on, then power cuts keeping a random part
 * of what was not synced, SEEDS_PER_CUT of them at every N. A save whose
 * directory fsync failed after its index's rename gave up and removed its
 * files, index and data alike, with no fsync between the removals it could
 * trust: a cut keeping a data file's removal but losing the index's left an
 * index without its data, which no sweep removed. With `once` only the Nth
 * sync fails (a transient error) and two more saves follow, so what that
 * failure left (an evicted checkpoint whose index's removal was not made
 * durable, its data kept) is deleted by a later save: that deletion too
 * must make the index's absence durable before the data files go.
 * Recovery must leave no index without its data, whichever syncs failed. */
#define SEEDS_PER_CUT 12

static void failing_syncs_random_cuts(int async, int once)
{
    char *base = test_make_temp_dir();
    case_result *res = calloc(1, sizeof(*res));
    ckpt_fs_forward nosync;
    crash_case ref = {async, 0, 0, 0, DROP_ALL, 0, once, once ? 2 : 0};
    char why[1024] = "";
    uint64_t cuts, i = 0;
    char *ref_dir = case_dir(base, 0);
    assert_non_null(res);
    crash_nosync_fs(&nosync);
    if (run_case(ref_dir, &ref, res, why, sizeof(why)) < 0)
        fail_msg("%s saves without a fault: %s", mode_name(&ref), why);
    test_remove_tree(ref_dir);
    assert_int_equal(res->latest, case_max_step(&ref));
    cuts = count_ops(res, SYNC_OPS);
    assert_true(cuts > 20 && res->nops < MAX_TRACE);
    for (uint64_t cut = 1; cut <= cuts + 1; cut++) {
        for (uint64_t seed = 1; seed <= SEEDS_PER_CUT; seed++) {
            crash_case c = ref;
            char *dir = case_dir(base, ++i);
            c.cut = cut;
            c.mask = SYNC_OPS;
            c.drop = DROP_RANDOM;
            c.seed = cut * 1000 + seed;
            if (run_case(dir, &c, res, why, sizeof(why)) < 0 ||
                crash_check_recovery(dir, &nosync.fs, res->latest, res->listed,
                                     RECOVERY_STEP, why, sizeof(why)) < 0 ||
                check_no_incomplete(dir, why, sizeof(why)) < 0)
                fail_msg("%s saves, %s %llu of %llu (%s), then a power cut "
                         "%s (seed %llu): %s",
                         mode_name(&c),
                         once ? "failing sync" : "syncs failing from sync",
                         (unsigned long long)cut, (unsigned long long)cuts,
                         res->cut_desc, k_drop_names[c.drop],
                         (unsigned long long)c.seed, why);
            test_remove_tree(dir);
        }
    }
    print_message("%s saves, %s: %llu cut points, %d random power cuts each\n",
                  mode_name(&ref), once ? "one sync failing" : "syncs failing",
                  (unsigned long long)cuts + 1, SEEDS_PER_CUT);
    free(res);
    test_remove_tree(base);
}

static void test_failing_syncs_random_cuts_sync(void **state)
{
    (void)state;
    failing_syncs_random_cuts(0, 0);
}

static void test_failing_syncs_random_cuts_async(void **state)
{
    (void)state;
    failing_syncs_random_cuts(1, 0);
}

static void test_failing_sync_once_random_cuts_sync(void **state)
{
    (void)state;
    failing_syncs_random_cuts(0, 1);
}

static void test_failing_sync_once_random_cuts_async(void **state)
{
    (void)state;
    failing_syncs_random_cuts(1, 1);
}

/* A first save into an empty directory with syncs failing from its Nth on:
 * it gives up, keeping data files whose index's removal it could not make
 * durable. The disk recovers and the job starts again (no power cut yet):
 * the saver's open removes those data files as left over (no index), then
 * the power goes. That open read no state file, so nothing had made the
 * directory durable: a cut keeping the data files' removal but losing the
 * index's left an index without its data. Each N, SEEDS_PER_CUT cuts. */
static void leftovers_swept_after_failed_syncs(int async)
{
    char *base = test_make_temp_dir();
    ckpt_fs_forward nosync;
    uint64_t cuts = 0, i = 0, syncs = 0;
    crash_nosync_fs(&nosync);
    /* cut 0: no sync fails (it counts them) */
    for (uint64_t cut = 0; cut == 0 || cut <= syncs + 1; cut++) {
        for (uint64_t seed = 1; seed <= SEEDS_PER_CUT; seed++) {
            ckpt_fs_fault *ff = NULL;
            ckpt_saver *s = NULL;
            crash_model m;
            char why[1024] = "";
            char *dir = case_dir(base, ++i);
            int64_t latest = -1;
            size_t listed = 0;
            int err;
            crash_model_init(&m);
            assert_ckpt_ok(ckpt_fs_fault_new(&ff, &nosync.fs));
            assert_ckpt_ok(crash_saver_open(&s, dir, ckpt_fs_fault_fs(ff), 2,
                                            &m, NULL, NULL));
            if (cut > 0)
                ckpt_fs_fault_fail(ff, cut, SYNC_OPS, EIO, 1, 0);
            else
                ckpt_fs_fault_reset_count(ff);
            crash_model_fill(&m, 10);
            if (async) {
                uint64_t ticket = 0;
                err = ckpt_saver_save_async(s, 10, &ticket);
                if (err == 0)
                    err = ckpt_saver_wait(s, ticket, -1.0);
            } else {
                err = ckpt_saver_save(s, 10, NULL);
            }
            ckpt_saver_free(s);
            if (cut == 0)
                syncs = ckpt_fs_fault_count(ff, SYNC_OPS);
            ckpt_fs_fault_clear(ff); /* the disk recovers */
            assert_ckpt_ok(crash_saver_open(&s, dir, ckpt_fs_fault_fs(ff), 2,
                                            &m, NULL, NULL));
            ckpt_saver_free(s);
            assert_ckpt_ok(ckpt_fs_fault_drop_unsynced_random(ff, seed));
            ckpt_fs_fault_free(ff);
            crash_model_dispose(&m);
            if (crash_check_dir(dir, err == 0 ? 10 : -1, 10, &latest, &listed,
                                why, sizeof(why)) < 0 ||
                check_no_incomplete(dir, why, sizeof(why)) < 0)
                fail_msg("%s save, syncs failing from sync %llu of %llu, "
                         "then an open sweeping its leftovers, then a power "
                         "cut losing a random part (seed %llu): %s",
                         async ? "async" : "sync", (unsigned long long)cut,
                         (unsigned long long)syncs, (unsigned long long)seed,
                         why);
            test_remove_tree(dir);
        }
        cuts = cut;
    }
    assert_true(syncs >= 4);
    print_message("%s save, syncs failing, leftovers swept: %llu cut points, "
                  "%d random power cuts each\n",
                  async ? "async" : "sync", (unsigned long long)cuts,
                  SEEDS_PER_CUT);
    test_remove_tree(base);
}

static void test_leftovers_swept_after_failed_syncs_sync(void **state)
{
    (void)state;
    leftovers_swept_after_failed_syncs(0);
}

static void test_leftovers_swept_after_failed_syncs_async(void **state)
{
    (void)state;
    leftovers_swept_after_failed_syncs(1);
}

#define RANDOM_STATES 10000
#define RANDOM_STATES_SYNCS 3000
#define RANDOM_STATES_KEEP_HOURS 2000

static uint64_t splitmix(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Recovery crashing too: a saver keeping one checkpoint opens `dir`
 * (recovery evicts and rewrites the state file) and saves RECOVERY_STEP,
 * all under a cut at `cut`; then a random power cut. */
static int crash_during_recovery(const char *dir, uint64_t cut, uint64_t seed,
                                 int64_t durable, int64_t *latest,
                                 size_t *listed, char *desc, size_t desc_n,
                                 char *why, size_t n)
{
    ckpt_fs_forward nosync;
    ckpt_fs_fault *ff = NULL;
    ckpt_saver *s = NULL;
    crash_model m;
    outcome o = {durable};
    int err;
    crash_nosync_fs(&nosync);
    crash_model_init(&m);
    if (keep_hours_on) /* a new process: its clock starts again */
        fake_clock_init(&keep_clock, 1000.0, 1.7e9);
    assert_ckpt_ok(ckpt_fs_fault_new(&ff, &nosync.fs));
    ckpt_fs_fault_trace(ff, CKPT_FS_OP_MUTATING);
    ckpt_fs_fault_fail(ff, cut, CKPT_FS_OP_MUTATING, EIO, 1, 0);
    err = crash_saver_open(&s, dir, ckpt_fs_fault_fs(ff), 1, &m, on_done, &o);
    if (err == 0) {
        crash_model_fill(&m, RECOVERY_STEP);
        if (ckpt_saver_save(s, RECOVERY_STEP, NULL) == 0)
            o.durable = RECOVERY_STEP;
        ckpt_saver_free(s);
    }
    crash_describe_cut(ff, desc, desc_n);
    ckpt_fs_fault_clear(ff);
    err = ckpt_fs_fault_drop_unsynced_random(ff, seed);
    if (err < 0)
        snprintf(why, n, "the power cut failed: %s",
                 ckpt_error_last()->message);
    ckpt_fs_fault_free(ff);
    crash_model_dispose(&m);
    if (err < 0)
        return -1;
    return crash_check_dir(dir, o.durable, RECOVERY_STEP, latest, listed, why,
                           n);
}

/* Random states under one fault model (`mask` as in crash_case). */
static void random_states(unsigned mask, uint64_t count)
{
    char *base = test_make_temp_dir();
    case_result *ref[2];
    case_result *res = calloc(1, sizeof(*res));
    ckpt_fs_forward nosync;
    uint64_t outcomes[5] = {0}; /* none, 10, 20, 30, ambiguous */
    uint64_t double_crashes = 0;
    assert_non_null(res);
    crash_nosync_fs(&nosync);
    for (int a = 0; a < 2; a++) {
        ref[a] = calloc(1, sizeof(*ref[a]));
        assert_non_null(ref[a]);
        reference_run(base, a, ref[a]);
    }
    for (uint64_t iter = 0; iter < count; iter++) {
        uint64_t rng = 0xC0FFEEull + iter;
        crash_case c = {0, 0, 0, 0, 0, 0, 0, 0};
        char why[1024] = "";
        char desc[600] = "";
        int kept;
        char *dir = case_dir(base, iter + 1);
        c.async = (int)(iter & 1);
        c.mask = mask;
        c.cut = 1 + splitmix(&rng) % ((c.mask ? count_ops(ref[c.async], c.mask)
                                              : ref[c.async]->mutating) +
                                      1);
        c.partial = (size_t)(splitmix(&rng) % (2 * crash_emb_bytes()));
        c.drop = DROP_RANDOM;
        c.seed = splitmix(&rng);
        if (run_case(dir, &c, res, why, sizeof(why)) < 0)
            fail_msg("random state %llu: %s saves, %s from op %llu on (%s), "
                     "drop seed %llu: %s",
                     (unsigned long long)iter, mode_name(&c),
                     c.mask ? "syncs failing" : "stopped",
                     (unsigned long long)c.cut, res->cut_desc,
                     (unsigned long long)c.seed, why);
        if (res->latest < 0)
            outcomes[0]++;
        for (int i = 0; i < NUM_STEPS; i++)
            if (res->latest == k_steps[i])
                outcomes[1 + i]++;
        if (res->latest > res->durable)
            outcomes[4]++; /* a save reported failed survived: allowed */
        kept = keep_hours_on && res->latest == MAX_STEP;
        if (iter % 4 == 0) {
            uint64_t cut2 = 1 + splitmix(&rng) % 40;
            uint64_t seed2 = splitmix(&rng);
            int64_t durable =
                res->latest > res->durable ? res->latest : res->durable;
            double_crashes++;
            if (crash_during_recovery(dir, cut2, seed2, durable, &res->latest,
                                      &res->listed, desc, sizeof(desc), why,
                                      sizeof(why)) < 0)
                fail_msg("random state %llu (%s saves, %s from op %llu on, "
                         "seed %llu), then a recovery cut at op %llu (%s), "
                         "seed %llu: %s",
                         (unsigned long long)iter, mode_name(&c),
                         c.mask ? "syncs failing" : "stopped",
                         (unsigned long long)c.cut, (unsigned long long)c.seed,
                         (unsigned long long)cut2, desc,
                         (unsigned long long)seed2, why);
        }
        if (crash_check_recovery(dir, &nosync.fs, res->latest, res->listed,
                                 FINAL_STEP, why, sizeof(why)) < 0 ||
            check_no_incomplete(dir, why, sizeof(why)) < 0)
            fail_msg("random state %llu: %s saves, %s from op %llu on (%s), "
                     "drop seed %llu, then %s",
                     (unsigned long long)iter, mode_name(&c),
                     c.mask ? "syncs failing" : "stopped",
                     (unsigned long long)c.cut, res->cut_desc,
                     (unsigned long long)c.seed, why);
        /* kept for its time once the state file named step 30: no later
         * crash, recovery or retention may delete it */
        if (kept && check_kept_for_time(dir, why, sizeof(why)) < 0)
            fail_msg("random state %llu: %s saves keeping one every hour, "
                     "stopped from op %llu on (%s), drop seed %llu, then "
                     "recoveries: %s",
                     (unsigned long long)iter, mode_name(&c),
                     (unsigned long long)c.cut, res->cut_desc,
                     (unsigned long long)c.seed, why);
        test_remove_tree(dir);
    }
    print_message(
        "%llu random states, %s (%llu with a second crash in "
        "recovery): "
        "latest none %llu, step 10 %llu, step 20 %llu, step 30 "
        "%llu; a save reported failed survived in %llu\n",
        (unsigned long long)count, mask ? "syncs failing" : "stopped",
        (unsigned long long)double_crashes, (unsigned long long)outcomes[0],
        (unsigned long long)outcomes[1], (unsigned long long)outcomes[2],
        (unsigned long long)outcomes[3], (unsigned long long)outcomes[4]);
    for (int i = 0; i < 4; i++)
        assert_true(outcomes[i] > 0);
    free(ref[0]);
    free(ref[1]);
    free(res);
    test_remove_tree(base);
}

static void test_random_states(void **state)
{
    (void)state;
    crash_set_emb_kib(300);
    random_states(0, RANDOM_STATES);
}

static void test_random_states_failing_syncs(void **state)
{
    (void)state;
    crash_set_emb_kib(300);
    random_states(SYNC_OPS, RANDOM_STATES_SYNCS);
}

/* The first model's random states with keep_checkpoint_every_n_hours
 * set: step 10, kept for its time by the third save, must survive every
 * later cut and recovery once the state file named step 30. */
static void test_random_states_keep_hours(void **state)
{
    (void)state;
    crash_set_emb_kib(300);
    keep_hours_on = 1;
    random_states(0, RANDOM_STATES_KEEP_HOURS);
    keep_hours_on = 0;
    crash_set_keep_hours(0.0, NULL);
}

/* argv[1] picks the group: "cuts" (default), "syncs", "random". */
int main(int argc, char **argv)
{
    const struct CMUnitTest cuts[] = {
        cmocka_unit_test(test_every_cut_sync),
        cmocka_unit_test(test_every_cut_async),
        cmocka_unit_test(test_eviction_power_cuts_sync),
        cmocka_unit_test(test_eviction_power_cuts_async),
        cmocka_unit_test(test_keep_hours_every_cut_sync),
        cmocka_unit_test(test_keep_hours_every_cut_async),
    };
    const struct CMUnitTest syncs[] = {
        cmocka_unit_test(test_failing_syncs_sync),
        cmocka_unit_test(test_failing_syncs_async),
        cmocka_unit_test(test_failing_syncs_random_cuts_sync),
        cmocka_unit_test(test_failing_syncs_random_cuts_async),
        cmocka_unit_test(test_failing_sync_once_random_cuts_sync),
        cmocka_unit_test(test_failing_sync_once_random_cuts_async),
        cmocka_unit_test(test_leftovers_swept_after_failed_syncs_sync),
        cmocka_unit_test(test_leftovers_swept_after_failed_syncs_async),
    };
    const struct CMUnitTest random[] = {
        cmocka_unit_test(test_random_states),
        cmocka_unit_test(test_random_states_failing_syncs),
        cmocka_unit_test(test_random_states_keep_hours),
    };
    const char *group = argc > 1 ? argv[1] : "cuts";
    if (!strcmp(group, "cuts"))
        return cmocka_run_group_tests(cuts, NULL, NULL);
    if (!strcmp(group, "syncs"))
        return cmocka_run_group_tests(syncs, NULL, NULL);
    if (!strcmp(group, "random"))
        return cmocka_run_group_tests(random, NULL, NULL);
    fprintf(stderr, "usage: %s [cuts|syncs|random]\n", argv[0]);
    return 2;
}
