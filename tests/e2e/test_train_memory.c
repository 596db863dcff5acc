/* tests/e2e/test_train_memory.c - what ckpt-train's options need in
 * memory (tools/ckpt-train/memory.c), before it allocates: the bytes of
 * the model (weights, biases, Adam moments, gradients, activations), of
 * an async save's staging copy (none for sync or none; a rank's share
 * with --distributed), of the data and, with --distributed, the packed
 * gradients, for the default options and the largest the command line
 * takes; a count that overflows 64 bits refused; the checkpointed part
 * the same as what the built model says it checkpoints; and an allocation
 * failure named by the first array that failed; with --distributed, a
 * gradients' average larger than one MPI call's count refused. The runs refused
 * under a memory limit are in test_e2e_train.c. */
#include "test_util.h"

#include "ckpt.h"
#include "data.h"
#include "memory.h"
#include "model.h"
#include "report.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct plan_case {
    int hidden, layers, batch, mode, ranks;
    uint64_t model, state, staging, data, total, allreduce;
} plan_case;

/* Computed by hand from the layer widths (32 -> hidden x layers -> 10),
 * 4 bytes a float: see memory.c for which arrays each term counts. */
static const plan_case plan_cases[] = {
    /* the defaults: 6784 weights, 138 units */
    {64, 2, 64, CKPT_SAVE_ASYNC, 0, 181408, 83064, 99512, 587264, 868184, 0},
    {64, 2, 64, CKPT_SAVE_SYNC, 0, 181408, 83064, 0, 587264, 768672, 0},
    {64, 2, 64, -1, 0, 181408, 83064, 0, 587264, 768672, 0},
    /* --distributed on 2 ranks, sync: the packed gradients too */
    {64, 2, 64, CKPT_SAVE_SYNC, 2, 181408, 83064, 0, 614956, 796364, 6923},
    /* the largest the command line takes: 6.9 TiB, and with the largest
     * batch on 4 ranks a quarter of the state staged on each */
    {65536, 64, 64, CKPT_SAVE_ASYNC, 0, 4331585672352, 3247078637688,
     3247078654136, 587264, 7578664913752, 0},
    {65536, 64, 65536, CKPT_SAVE_ASYNC, 4, 6528466682016, 3247078637688,
     811769675870, 1082368775468, 8422605133354, 270589886475},
};

static void test_plan_values(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(plan_cases) / sizeof(plan_cases[0]); i++) {
        const plan_case *c = &plan_cases[i];
        train_options o;
        train_memory m;
        memset(&o, 0, sizeof(o));
        o.hidden = c->hidden;
        o.layers = c->layers;
        o.batch = c->batch;
        o.mode = c->mode;
        if (train_memory_plan(&o, c->ranks, &m) != 0)
            fail_msg("case %zu: refused as an overflow", i);
        if (m.model != c->model || m.state != c->state ||
            m.staging != c->staging || m.data != c->data ||
            m.total != c->total || m.allreduce != c->allreduce)
            fail_msg("case %zu: model %llu state %llu staging %llu data %llu "
                     "total %llu allreduce %llu",
                     i, (unsigned long long)m.model,
                     (unsigned long long)m.state, (unsigned long long)m.staging,
                     (unsigned long long)m.data, (unsigned long long)m.total,
                     (unsigned long long)m.allreduce);
    }
}

/* Sizes past what 64 bits count (beyond the command line's bounds, which
 * keep every product in range on a 64-bit machine) are refused, not
 * wrapped to a small number that would pass the check. */
static void test_plan_overflow_refused(void **state)
{
    static const int sizes[][3] = {
        {INT_MAX, INT_MAX, 1},       /* (layers - 1) x hidden^2 */
        {INT_MAX, 1, INT_MAX},       /* 2 x batch x units x 4 */
        {1 << 30, 1 << 20, 1},       /* 2^80 weights */
        {INT_MAX, 1 << 10, INT_MAX}, /* both */
    };
    (void)state;
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        train_options o;
        train_memory m;
        memset(&o, 0, sizeof(o));
        o.hidden = sizes[i][0];
        o.layers = sizes[i][1];
        o.batch = sizes[i][2];
        o.mode = CKPT_SAVE_ASYNC;
        if (train_memory_plan(&o, 0, &m) != -1)
            fail_msg("case %zu: planned %llu bytes", i,
                     (unsigned long long)m.total);
        if (train_memory_plan(&o, 3, &m) != -1)
            fail_msg("case %zu (3 ranks): planned %llu bytes", i,
                     (unsigned long long)m.total);
        /* refused as a usage error, before any limit is looked at */
        assert_int_equal(train_memory_check(&o, 0, "test: "), 2);
    }
}

/* The checkpointed part of the plan is what the model built from the same
 * options checkpoints (mlp_state_bytes), for a few shapes. */
static void test_plan_state_matches_model(void **state)
{
    static const int shapes[][3] = {{64, 2, 64}, {16, 1, 16}, {33, 5, 7}};
    (void)state;
    for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
        train_options o;
        train_memory m;
        train_alloc_failure f;
        mlp model;
        memset(&o, 0, sizeof(o));
        memset(&f, 0, sizeof(f));
        o.hidden = shapes[i][0];
        o.layers = shapes[i][1];
        o.batch = shapes[i][2];
        o.mode = CKPT_SAVE_SYNC;
        assert_int_equal(train_memory_plan(&o, 0, &m), 0);
        assert_int_equal(mlp_init(&model, DATA_DIM, o.hidden, o.layers,
                                  DATA_CLASSES, o.batch, 0.01f, 1, &f),
                         0);
        assert_int_equal(m.state, mlp_state_bytes(&model));
        assert_string_equal(f.what, "");
        mlp_free(&model);
    }
    /* the defaults fit any machine the tests run on */
    {
        train_options o;
        memset(&o, 0, sizeof(o));
        o.hidden = 64;
        o.layers = 2;
        o.batch = 64;
        o.mode = CKPT_SAVE_ASYNC;
        assert_int_equal(train_memory_check(&o, 0, "test: "), 0);
    }
}

/* What train_memory_check prints on stderr (NUL-terminated; free it),
 * its return value into *status. */
static char *check_stderr(const train_options *o, int ranks, int *status)
{
    FILE *tmp = tmpfile();
    int saved;
    long n;
    char *out;
    assert_non_null(tmp);
    fflush(stderr);
    saved = dup(STDERR_FILENO);
    assert_true(saved >= 0);
    assert_int_equal(dup2(fileno(tmp), STDERR_FILENO), STDERR_FILENO);
    *status = train_memory_check(o, ranks, "test: ");
    fflush(stderr);
    assert_int_equal(dup2(saved, STDERR_FILENO), STDERR_FILENO);
    close(saved);
    n = ftell(tmp);
    assert_true(n >= 0);
    out = calloc(1, (size_t)n + 1);
    assert_non_null(out);
    rewind(tmp);
    assert_int_equal(fread(out, 1, (size_t)n, tmp), (size_t)n);
    fclose(tmp);
    return out;
}

/* --distributed averages every gradient in one MPI_Iallreduce, whose
 * count is an int: a model with more than INT_MAX gradients (and the stop
 * vote) is refused, naming the count, before any memory question (the
 * cast wrapped the count before: an MPI error, or a wrong average). With
 * one layer fewer the count fits. */
static void test_distributed_allreduce_bound(void **state)
{
    train_options o;
    train_memory m;
    int status;
    char *err;
    (void)state;
    memset(&o, 0, sizeof(o));
    o.hidden = 32768;
    o.layers = 3;
    o.batch = 64;
    o.mode = CKPT_SAVE_SYNC;
    assert_int_equal(train_memory_plan(&o, 2, &m), 0);
    assert_int_equal(m.allreduce, 2148958219ull);
    err = check_stderr(&o, 2, &status);
    assert_int_equal(status, 2);
    assert_string_equal(err, "test: --hidden 32768 --layers 3 --batch 64 "
                             "--mode sync --distributed: the gradients' "
                             "average would reduce 2148958219 floats in one "
                             "MPI_Iallreduce, more than an MPI count holds "
                             "(2147483647); choose a smaller --hidden or "
                             "--layers\n");
    free(err);
    /* the single-process trainer reduces nothing */
    assert_int_equal(train_memory_plan(&o, 0, &m), 0);
    assert_int_equal(m.allreduce, 0);
    err = check_stderr(&o, 0, &status);
    assert_null(strstr(err, "MPI"));
    free(err);
    /* two layers: 1075183627 floats, within an int */
    o.layers = 2;
    assert_int_equal(train_memory_plan(&o, 2, &m), 0);
    assert_int_equal(m.allreduce, 1075183627ull);
    err = check_stderr(&o, 2, &status);
    assert_null(strstr(err, "MPI"));
    free(err);
}

/* The limit: the smallest known, named; physical memory at most. */
static void test_limit_named(void **state)
{
    const char *what = NULL;
    uint64_t limit = train_memory_limit(&what);
    (void)state;
    assert_non_null(what);
    assert_true(limit > 0);
    assert_true(strcmp(what, "physical memory") == 0 ||
                strstr(what, "(ulimit -") != NULL);
}

/* A failed allocation keeps the first name and size given, and the
 * report says them. */
static void test_alloc_failure_named(void **state)
{
    train_alloc_failure f;
    void *p;
    (void)state;
    memset(&f, 0, sizeof(f));
    p = train_alloc(16, "sixteen bytes", &f);
    assert_non_null(p);
    assert_string_equal(f.what, "");
    free(p);
    if (TEST_SANITIZED) { /* a sanitizer's calloc aborts on SIZE_MAX */
        skip();
        return;
    }
    /* SIZE_MAX bytes: calloc refuses without trying */
    assert_null(train_alloc(SIZE_MAX, "dense_3/kernel/Adam", &f));
    assert_null(train_alloc(SIZE_MAX, "a later array", &f));
    {
        char want[96];
        snprintf(want, sizeof(want), "dense_3/kernel/Adam (%zu bytes)",
                 (size_t)SIZE_MAX);
        assert_string_equal(f.what, want);
    }
}

/* Run fn(payload) in a child whose address space may grow only 64 MiB
 * past what it has (nothing large is ever touched), its stderr and what
 * it writes on fd 3 (`out`, NUL-terminated, `n` bytes at most) kept: the
 * child's stderr is appended to `out` after a '|'. Fails the test unless
 * the child exits 0. */
static void run_limited(void (*fn)(int fd), char *out, size_t n)
{
    int pipefd[2], status = 0;
    size_t got = 0;
    ssize_t r;
    pid_t pid;
    assert_int_equal(pipe(pipefd), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        unsigned long pages = 0;
        FILE *statm = fopen("/proc/self/statm", "r");
        struct rlimit rl;
        close(pipefd[0]);
        if (!statm || fscanf(statm, "%lu", &pages) != 1 ||
            dup2(pipefd[1], 2) != 2)
            _exit(97);
        fclose(statm);
        rl.rlim_cur = rl.rlim_max =
            (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + ((rlim_t)64 << 20);
        if (setrlimit(RLIMIT_AS, &rl) != 0)
            _exit(98);
        fn(2);
        _exit(0);
    }
    close(pipefd[1]);
    while (got + 1 < n && (r = read(pipefd[0], out + got, n - 1 - got)) > 0)
        got += (size_t)r;
    out[got] = '\0';
    close(pipefd[0]);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("child: wait status %#x: %s", (unsigned)status, out);
}

static void check_huge_position(int fd)
{
    dataset d;
    char why[256];
    int rc;
    memset(&d, 0, sizeof(d));
    d.n = 1 << 28; /* the check's bitmap: 256 MiB, past the limit */
    d.shuffle.s[0] = 1;
    rc = dataset_position_check(&d, "/rank-1", why, sizeof(why));
    dprintf(fd, "%d %s", rc, why);
}

static void grow_huge_timings(int fd)
{
    report r;
    ckpt_save_result res;
    report_init(&r, 1, 0, 0);
    memset(&res, 0, sizeof(res));
    res.prefix = "dir/model.ckpt-7";
    res.bytes = 1000;
    res.write_s = 0.5;
    res.blocking_s = 0.25;
    r.nsaves = r.cap = (size_t)1 << 26; /* the next: 1 GiB per array */
    report_on_save_done(&res, &r);
    report_on_save_done(&res, &r); /* said once */
    dprintf(fd, "|%zu %d %llu %s", r.nsaves, r.timings_lost,
            (unsigned long long)r.bytes, r.last_checkpoint);
    r.nsaves = 0;
    report_dispose(&r);
}

/* Allocations that fail inside the trainer's parts, each run by
 * run_limited: what the child printed and wrote. */
static const struct {
    void (*fn)(int fd);
    const char *want;
} limited_cases[] = {
    /* The restored data order's check names its allocation and its
     * bytes, and says it is memory (DATASET_CHECK_NOMEM, which the
     * restored-state hook turns into CKPT_ENOMEM), not a bad checkpoint.
     * Before: "out of memory", -1, reported as CKPT_ECORRUPT (the
     * checkpoint refused as one no run writes). */
    {check_huge_position, "-2 out of memory allocating the restored data "
                          "order's check (268435456 bytes)"},
    /* A save's timings that find no memory to grow into: said once on
     * stderr with the bytes, the save still counted in the bytes and as
     * the last checkpoint. Before, the save was dropped from the summary
     * without a word. */
    {grow_huge_timings,
     "ckpt-train: warn: out of memory allocating the saves' timings "
     "(1073741824 bytes); the summary's blocking and write times leave out "
     "this save and later ones\n|67108864 1 2000 dir/model.ckpt-7"},
};

static void test_allocations_named_in_parts(void **state)
{
    char out[1024];
    (void)state;
    if (TEST_SANITIZED)
        skip();
    for (size_t i = 0; i < sizeof(limited_cases) / sizeof(limited_cases[0]);
         i++) {
        run_limited(limited_cases[i].fn, out, sizeof(out));
        if (strcmp(out, limited_cases[i].want) != 0)
            fail_msg("case %zu: '%s', want '%s'", i, out,
                     limited_cases[i].want);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan_values),
        cmocka_unit_test(test_plan_overflow_refused),
        cmocka_unit_test(test_plan_state_matches_model),
        cmocka_unit_test(test_distributed_allreduce_bound),
        cmocka_unit_test(test_limit_named),
        cmocka_unit_test(test_alloc_failure_named),
        cmocka_unit_test(test_allocations_named_in_parts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
