/* tests/mpi/test_mpi_faults.c - what happens when ranks do not keep up or
 * die (CTest runs each mode as its own job):
 *   progress DIR   (2+ ranks) an async save's agreement advances only in
 *                  each rank's own calls: rank 0's polls return at once,
 *                  busy, while rank 1 makes no call; SKIP skips on every
 *                  rank while any rank has a save in flight; COALESCE
 *                  keeps one pending snapshot on every rank, replaced by
 *                  a newer trigger alike on every rank, written after
 *                  the save in flight
 *   stall DIR      (2+ ranks) the odd ranks never join a save: rank 0's
 *                  wait is bounded by the collective timeout and ends the
 *                  job (MPI_Abort), naming the ranks it has no status
 *                  from (message checked by CTest)
 *   mismatch DIR   (2 ranks) rank 0 saves while rank 1 closes (a
 *                  collective called on one rank only): both waits are
 *                  bounded and the message says why (CTest checks it)
 *   kill DIR       (2 ranks) rank 1 is killed in the middle of writing its
 *                  data file after step 1 was saved (mpiexec ends the job)
 *   after-kill DIR (2 ranks) reopening removes what the killed save left;
 *                  step 1 is still the latest and restores
 *   thread-single DIR (2 ranks, MPI_THREAD_SINGLE) async saves refused,
 *                  sync saves and restores work
 *   agree DIR      (2+ ranks) SKIP's busy agreement given ahead of the
 *                  trigger: once every rank polled idle, a trigger starts
 *                  on rank 0 while the other ranks make no MPI call; a
 *                  rank lagging several steps behind and a rank whose
 *                  writes are slow still give every rank the same
 *                  decision at every trigger
 *   waits DIR      (2 ranks) the collective timeout counts from the start
 *                  of a blocking wait, not from an earlier posting (a
 *                  poll never aborts); ckpt_mpi_saver_wait_requests
 *                  completes the caller's requests
 *   user-stall DIR (2 ranks) rank 1 never joins the caller's barrier:
 *                  rank 0's ckpt_mpi_saver_wait_requests ends the job
 *                  (message checked by CTest)
 *   oom-abort DIR  (2 ranks) rank 0 runs out of memory for the save
 *                  status it gathers: the job ends at once, the message
 *                  saying so, not that the other ranks did not respond
 *                  (CTest checks it)
 *   abort-epipe DIR (2 ranks) as user-stall, rank 0's stderr a pipe
 *                  nobody reads, SIGPIPE's action the default: its abort
 *                  still ends the job with MPI_Abort (errorcode 70),
 *                  the message lost, instead of SIGPIPE killing rank 0
 *                  (CTest checks mpiexec's report)
 *   broken-entries DIR (2+ ranks) the last rank's index entries reach
 *                  rank 0 cut short (the entry count or the path's
 *                  length raised in flight): the save fails on every
 *                  rank naming the checkpoint directory and the rank,
 *                  leaves no file of it behind, step 1 stays the latest,
 *                  and the next save works */
#include "ckpt/sys/alloc.h"
#include "mpi/mpi_internal.h"
#include "mpi_model.h"
#include "test_util.h"

#include <dirent.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *g_dir;

static ckpt_mpi_saver *open_saver(const ckpt_fs *fs, int policy,
                                  double timeout_s)
{
    ckpt_mpi_saver_options o = test_mpi_options();
    ckpt_mpi_saver *s = NULL;
    o.base.fs = fs;
    o.base.busy_policy = policy;
    if (timeout_s > 0)
        o.collective_timeout_s = timeout_s;
    assert_ckpt_ok(ckpt_mpi_saver_open(&s, MPI_COMM_WORLD, g_dir, &o));
    return s;
}

static void test_progress(void **state)
{
    ckpt_mpi_saver *s;
    model m;
    int busy = 0;
    (void)state;
    fresh_dir(g_dir);
    s = open_saver(NULL, CKPT_BUSY_SKIP, 0);
    model_fill(&m, test_rank(), test_size(), 1);
    model_register(s, &m, 0);
    assert_ckpt_ok(ckpt_mpi_saver_save_async(s, 1, NULL));
    /* Rank 1 has made no call since: its status cannot have reached rank
     * 0, so rank 0's polls return without the outcome. */
    if (test_rank() == 0)
        for (int i = 0; i < 100; i++) {
            assert_ckpt_ok(ckpt_mpi_saver_poll(s, &busy));
            assert_int_equal(busy, 1);
        }
    MPI_Barrier(MPI_COMM_WORLD);
    /* Rank 1's save is still in flight (it has not polled): every rank
     * skips the next trigger. */
    assert_ckpt_error(ckpt_mpi_saver_save_async(s, 2, NULL), CKPT_EBUSY,
                      "skipped");
    assert_ckpt_ok(ckpt_mpi_saver_wait(s, -1));
    assert_ckpt_ok(ckpt_mpi_saver_save_async(s, 3, NULL));
    assert_ckpt_ok(ckpt_mpi_saver_close(s));
    {
        ckpt_saver_metrics mt;
        ckpt_mpi_saver_get_metrics(s, &mt);
        assert_int_equal(mt.saves_started, 2);
        assert_int_equal(mt.saves_skipped, 1);
        assert_int_equal(mt.saves_completed, 2);
        assert_int_equal(mt.last_saved_step, 3);
    }
    ckpt_mpi_saver_free(s);
    MPI_Barrier(MPI_COMM_WORLD);
    if (test_rank() == 0) {
        assert_int_equal(count_files_in(g_dir, "model.ckpt-2"), 0);
        assert_int_equal(count_files_in(g_dir, "model.ckpt-3.index"), 1);
    }
}

/* ---- COALESCE ----------------------------------------------------------- */

/* Rank 0's writes wait while `closed` is set, so its save in flight (and
 * with it every rank's) cannot end until the test opens the gate. */
typedef struct gated_fs {
    ckpt_fs fs;
    const ckpt_fs *inner;
    atomic_int closed;
} gated_fs;

static int gated_write(ckpt_file *f, const void *buf, size_t n, void *payload)
{
    gated_fs *g = payload;
    while (atomic_load(&g->closed))
        usleep(1000);
    return g->inner->write(f, buf, n, g->inner->payload);
}

typedef struct outcomes {
    int n;
    int64_t step[8];
    int status[8];
    uint64_t ticket[8];
    char error[8][200];
} outcomes;

/* Said before an assertion on the outcomes fails: which steps ended how. */
static void print_outcomes(const outcomes *o)
{
    for (int i = 0; i < o->n && i < 8; i++)
        print_message("rank %d: outcome %d: step %lld, status %d, ticket "
                      "%llu: %s\n",
                      test_rank(), i, (long long)o->step[i], o->status[i],
                      (unsigned long long)o->ticket[i], o->error[i]);
}

static void record_outcome(const ckpt_save_result *r, void *payload)
{
    outcomes *o = payload;
    if (o->n < 8) {
        o->step[o->n] = r->step;
        o->status[o->n] = r->status;
        o->ticket[o->n] = r->ticket;
        snprintf(o->error[o->n], sizeof(o->error[o->n]), "%s",
                 r->error ? r->error : "");
    }
    o->n++;
}

static void test_coalesce(void **state)
{
    static gated_fs gfs;
    ckpt_mpi_saver_options o = test_mpi_options();
    ckpt_mpi_saver *s = NULL;
    ckpt_saver_metrics mt;
    outcomes out;
    uint64_t t1 = 0, t2 = 0, t3 = 0;
    model m;
    int busy = 0;
    (void)state;
    memset(&out, 0, sizeof(out));
    fresh_dir(g_dir);
    gfs.inner = ckpt_fs_posix();
    gfs.fs = *gfs.inner;
    if (test_rank() == 0) {
        gfs.fs.write = gated_write;
        gfs.fs.payload = &gfs;
    }
    o.base.fs = &gfs.fs;
    o.base.busy_policy = CKPT_BUSY_COALESCE;
    o.base.on_save_done = record_outcome;
    o.base.on_save_done_payload = &out;
    assert_ckpt_ok(ckpt_mpi_saver_open(&s, MPI_COMM_WORLD, g_dir, &o));
    model_fill(&m, test_rank(), test_size(), 1);
    model_register(s, &m, 0);
    assert_ckpt_ok(ckpt_mpi_saver_check(s));
    atomic_store(&gfs.closed, 1);
    assert_ckpt_ok(ckpt_mpi_saver_save_async(s, 1, &t1));
    /* Step 1 is in flight on every rank: step 2 waits as the pending
     * snapshot, then step 3 replaces it on every rank. */
    model_fill(&m, test_rank(), test_size(), 2);
    assert_ckpt_ok(ckpt_mpi_saver_save_async(s, 2, &t2));
    assert_ckpt_ok(ckpt_mpi_saver_poll(s, &busy));
    assert_int_equal(busy, 1);
    assert_int_equal(out.n, 0);
    model_fill(&m, test_rank(), test_size(), 3);
    assert_ckpt_ok(ckpt_mpi_saver_save_async(s, 3, &t3));
    assert_true(t1 > 0 && t2 > t1 && t3 > t2);
    if (out.n != 1)
        print_outcomes(&out);
    assert_int_equal(out.n, 1);
    assert_int_equal(out.step[0], 2);
    assert_int_equal(out.status[0], CKPT_ECANCELED);
    assert_true(out.ticket[0] == t2);
    model_fill(&m, test_rank(), test_size(), 4); /* after the snapshot */
    atomic_store(&gfs.closed, 0);
    assert_ckpt_ok(ckpt_mpi_saver_wait(s, -1));
    assert_int_equal(out.n, 3);
    /* Idle again: the next trigger is an ordinary dispatch. */
    model_fill(&m, test_rank(), test_size(), 5);
    assert_ckpt_ok(ckpt_mpi_saver_save_async(s, 5, NULL));
    model_fill(&m, test_rank(), test_size(), 6);
    assert_ckpt_ok(ckpt_mpi_saver_wait(s, -1));
    assert_int_equal(out.n, 4);
    assert_int_equal(out.step[1], 1);
    assert_int_equal(out.status[1], 0);
    assert_int_equal(out.step[2], 3);
    assert_int_equal(out.status[2], 0);
    assert_true(out.ticket[2] == t3);
    assert_int_equal(out.step[3], 5);
    assert_int_equal(out.status[3], 0);
    ckpt_mpi_saver_get_metrics(s, &mt);
    assert_int_equal(mt.saves_started, 3);
    assert_int_equal(mt.saves_coalesced, 1);
    assert_int_equal(mt.saves_completed, 3);
    assert_int_equal(mt.saves_failed, 0);
    assert_int_equal(mt.last_saved_step, 5);
    model_zero(&m);
    assert_ckpt_ok(ckpt_mpi_saver_restore_latest(s, NULL));
    model_assert(&m, 5);
    assert_ckpt_ok(ckpt_mpi_saver_close(s));
    ckpt_mpi_saver_free(s);
    MPI_Barrier(MPI_COMM_WORLD);
    if (test_rank() == 0) {
        assert_int_equal(count_files_in(g_dir, "model.ckpt-1.index"), 1);
        assert_int_equal(count_files_in(g_dir, "model.ckpt-2"), 0);
        assert_int_equal(count_files_in(g_dir, "model.ckpt-3.index"), 1);
        assert_int_equal(count_files_in(g_dir, "model.ckpt-5.index"), 1);
    }
}

static void test_stall(void **state)
{
    ckpt_mpi_saver *s;
    model m;
    (void)state;
    fresh_dir(g_dir);
    /* rank 0 times out first: the ranks that join wait longer */
    s = open_saver(NULL, CKPT_BUSY_WAIT, test_rank() == 0 ? 2.0 : 30.0);
    model_fill(&m, test_rank(), test_size(), 1);
    model_register(s, &m, 0);
    assert_ckpt_ok(ckpt_mpi_saver_check(s));
    if (test_rank() % 2 == 1) {
        sleep(60); /* never joins; the abort ends this process */
        fail_msg("rank %d outlived the collective timeout", test_rank());
    }
    ckpt_mpi_saver_save(s, 1, NULL);
    fail_msg("rank %d's save returned although the odd ranks never joined",
             test_rank());
}

/* A save made on rank 0 only: rank 1 closes instead. Each rank's wait is
 * bounded; the message names the likely mistake. */
static void test_mismatch(void **state)
{
    ckpt_mpi_saver *s;
    model m;
    (void)state;
    fresh_dir(g_dir);
    s = open_saver(NULL, CKPT_BUSY_SKIP, 2.0);
    model_fill(&m, test_rank(), test_size(), 1);
    model_register(s, &m, 0);
    assert_ckpt_ok(ckpt_mpi_saver_check(s));
    if (test_rank() == 0)
        ckpt_mpi_saver_save(s, 1, NULL);
    else
        ckpt_mpi_saver_close(s);
    fail_msg("rank %d returned from a collective the other rank never made",
             test_rank());
}

/* ---- a rank killed in the middle of its write --------------------------- */

typedef struct killing_fs {
    ckpt_fs fs;
    const ckpt_fs *inner;
} killing_fs;

static int kill_write(ckpt_file *f, const void *buf, size_t n, void *payload)
{
    killing_fs *k = payload;
    if (n > 1)
        k->inner->write(f, buf, n / 2, k->inner->payload);
    raise(SIGKILL);
    return 0;
}

static void test_kill(void **state)
{
    static killing_fs kfs;
    ckpt_mpi_saver *s;
    model m;
    (void)state;
    fresh_dir(g_dir);
    kfs.inner = ckpt_fs_posix();
    kfs.fs = *kfs.inner;
    s = open_saver(&kfs.fs, CKPT_BUSY_WAIT, 0);
    model_fill(&m, test_rank(), test_size(), 1);
    model_register(s, &m, 0);
    assert_ckpt_ok(ckpt_mpi_saver_save(s, 1, NULL));
    /* From now on rank 1's writes kill it half-way. */
    if (test_rank() == 1) {
        kfs.fs.write = kill_write;
        kfs.fs.payload = &kfs;
    }
    model_fill(&m, test_rank(), test_size(), 2);
    ckpt_mpi_saver_save(s, 2, NULL);
    fail_msg("the save outlived rank 1");
}

static void test_after_kill(void **state)
{
    ckpt_mpi_saver *s;
    ckpt_buf latest = CKPT_BUF_INIT;
    char want[4200];
    model m;
    (void)state;
    if (test_rank() == 0)
        assert_true(count_files_in(g_dir, "model.ckpt-2") >
                    0); /* the killed save */
    MPI_Barrier(MPI_COMM_WORLD);
    s = open_saver(NULL, CKPT_BUSY_WAIT, 0);
    if (test_rank() == 0) {
        assert_int_equal(count_files_in(g_dir, "model.ckpt-2"), 0);
        assert_int_equal(count_files_in(g_dir, "tempstate"), 0);
    }
    model_fill(&m, test_rank(), test_size(), 0);
    model_register(s, &m, 0);
    assert_ckpt_ok(ckpt_mpi_saver_restore_latest(s, &latest));
    snprintf(want, sizeof(want), "%s/model.ckpt-1", g_dir);
    assert_string_equal(latest.ptr, want);
    model_assert(&m, 1);
    ckpt_mpi_saver_free(s);
    ckpt_buf_dispose(&latest);
}

/* MPI initialised with MPI_THREAD_SINGLE: async saves are refused (the
 * saver would start a thread), sync saves and restores work. */
static void test_thread_single(void **state)
{
    ckpt_mpi_saver *s;
    char want[4200];
    int provided;
    model m;
    (void)state;
    MPI_Query_thread(&provided);
    if (provided != MPI_THREAD_SINGLE)
        skip();
    fresh_dir(g_dir);
    s = open_saver(NULL, CKPT_BUSY_WAIT, 0);
    model_fill(&m, test_rank(), test_size(), 3);
    model_register(s, &m, 0);
    /* the message names the saver's directory, the level and the way out */
    assert_ckpt_error(ckpt_mpi_saver_save_async(s, 1, NULL), CKPT_ENOTSUP,
                      "at least MPI_THREAD_FUNNELED");
    snprintf(want, sizeof(want), "mpi saver %s: save_async at step 1: ", g_dir);
    assert_non_null(strstr(ckpt_error_last()->message, want));
    assert_non_null(strstr(ckpt_error_last()->message,
                           "this process has MPI_THREAD_SINGLE"));
    assert_non_null(strstr(ckpt_error_last()->message,
                           "initialise MPI with MPI_Init_thread(&argc, &argv, "
                           "MPI_THREAD_FUNNELED, &provided), or save with "
                           "ckpt_mpi_saver_save"));
    assert_ckpt_ok(ckpt_mpi_saver_save(s, 2, NULL));
    model_zero(&m);
    assert_ckpt_ok(ckpt_mpi_saver_restore_latest(s, NULL));
    model_assert(&m, 3);
    ckpt_mpi_saver_free(s);
}

/* ---- what the collective timeout counts ---------------------------------- */

/* The timeout counts from the start of a blocking wait (or the posting of
 * what it waits for, if later), never from an earlier posting: rank 0's
 * agreement is posted at once, then rank 0 trains (sleeps) past the
 * timeout while rank 1 makes no MPI call. Rank 0's poll then must not
 * abort (it does not wait), nor its wait, which rank 1 joins 1.5 s into
 * it (timeout 3 s). */
static void test_wait_counts_from_its_start(void **state)
{
    ckpt_mpi_saver *s;
    ckpt_buf latest = CKPT_BUF_INIT;
    char want[4200];
    int busy = 0;
    model m;
    (void)state;
    fresh_dir(g_dir);
    s = open_saver(NULL, CKPT_BUSY_WAIT, 3.0);
    model_fill(&m, test_rank(), test_size(), 4);
    model_register(s, &m, 0);
    assert_ckpt_ok(ckpt_mpi_saver_check(s));
    assert_ckpt_ok(ckpt_mpi_saver_save_async(s, 1, NULL));
    if (test_rank() == 0) {
        /* its write done, its agreement posted; rank 1 does not answer */
        assert_ckpt_error(ckpt_mpi_saver_wait(s, 1.0), CKPT_ETIMEDOUT,
                          "did not finish within 1.000 s");
        sleep(4); /* training: 5 s since the posting, past the timeout */
        assert_ckpt_ok(ckpt_mpi_saver_poll(s, &busy));
        assert_int_equal(busy, 1);
    } else {
        usleep(6500000); /* no MPI call: joins rank 0's wait 1.5 s in */
    }
    assert_ckpt_ok(ckpt_mpi_saver_wait(s, -1));
    assert_ckpt_ok(ckpt_mpi_saver_poll(s, &busy));
    assert_int_equal(busy, 0);
    model_zero(&m);
    assert_ckpt_ok(ckpt_mpi_saver_restore_latest(s, &latest));
    snprintf(want, sizeof(want), "%s/model.ckpt-1", g_dir);
    assert_string_equal(latest.ptr, want);
    model_assert(&m, 4);
    ckpt_mpi_saver_free(s);
    ckpt_buf_dispose(&latest);
}

/* ---- the caller's own requests, under the saver's timeout ---------------- */

/* Completed requests: every rank's sum, the requests reset; bad calls. */
static void test_wait_requests(void **state)
{
    ckpt_mpi_saver *s;
    MPI_Request reqs[2];
    int mine = test_rank() + 1, sum = 0, max = 0;
    int n = test_size();
    (void)state;
    fresh_dir(g_dir);
    s = open_saver(NULL, CKPT_BUSY_WAIT, 0);
    MPI_Iallreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &reqs[0]);
    MPI_Iallreduce(&mine, &max, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &reqs[1]);
    assert_ckpt_ok(ckpt_mpi_saver_wait_requests(s, 2, reqs, "summing ranks"));
    assert_int_equal(sum, n * (n + 1) / 2);
    assert_int_equal(max, n);
    assert_true(reqs[0] == MPI_REQUEST_NULL && reqs[1] == MPI_REQUEST_NULL);
    assert_ckpt_ok(ckpt_mpi_saver_wait_requests(s, 0, reqs, NULL));
    /* an empty wait needs no array, as MPI_Waitall(0, NULL, ...) */
    ckpt_error_clear();
    assert_ckpt_ok(ckpt_mpi_saver_wait_requests(s, 0, NULL, "nothing"));
    assert_int_equal(ckpt_error_last()->code, 0);
    assert_ckpt_error(ckpt_mpi_saver_wait_requests(NULL, 1, reqs, NULL),
                      CKPT_EINVAL, "ckpt_mpi_saver_wait_requests: s is NULL");
    assert_ckpt_error(ckpt_mpi_saver_wait_requests(s, 1, NULL, NULL),
                      CKPT_EINVAL,
                      "ckpt_mpi_saver_wait_requests: reqs is NULL");
    assert_ckpt_error(ckpt_mpi_saver_wait_requests(s, -1, reqs, NULL),
                      CKPT_EINVAL, "n is -1 (negative)");
    /* after close too: a trainer's last collectives follow it */
    assert_ckpt_ok(ckpt_mpi_saver_close(s));
    MPI_Ibarrier(MPI_COMM_WORLD, &reqs[0]);
    assert_ckpt_ok(ckpt_mpi_saver_wait_requests(s, 1, reqs, "a barrier"));
    ckpt_mpi_saver_free(s);
}

/* Rank 1 never joins rank 0's barrier, which rank 0 waits for with
 * ckpt_mpi_saver_wait_requests under a timeout of `timeout_s`, after
 * `before()` (NULL: nothing); the abort ends both processes. */
static void stall_callers_barrier(double timeout_s, void (*before)(void))
{
    ckpt_mpi_saver *s;
    MPI_Request req;
    fresh_dir(g_dir);
    s = open_saver(NULL, CKPT_BUSY_WAIT, timeout_s);
    if (test_rank() == 1) {
        sleep(60); /* never joins; the abort ends this process */
        fail_msg("rank 1 outlived the collective timeout");
    }
    if (before)
        before();
    MPI_Ibarrier(MPI_COMM_WORLD, &req);
    ckpt_mpi_saver_wait_requests(s, 1, &req, "the caller's barrier");
    fail_msg("rank 0's barrier returned although rank 1 never joined");
}

/* Rank 0's wait ends the job past the saver's timeout (message checked by
 * CTest: the timeout as given, 1.5 s, not rounded to a whole second). */
static void test_user_stall(void **state)
{
    (void)state;
    stall_callers_barrier(1.5, NULL);
}

/* Rank 0's stderr a pipe whose reader is gone, SIGPIPE's action the
 * default. */
static void break_stderr(void)
{
    int fds[2];
    signal(SIGPIPE, SIG_DFL);
    assert_int_equal(pipe(fds), 0);
    assert_int_equal(dup2(fds[1], STDERR_FILENO), STDERR_FILENO);
    close(fds[0]);
    close(fds[1]);
}

/* As test_user_stall, rank 0's stderr broken: the abort still happens
 * (CTest checks mpiexec's exit status). */
static void test_abort_epipe(void **state)
{
    (void)state;
    stall_callers_barrier(1.0, break_stderr);
}

/* ---- an abort that is no timeout ---------------------------------------- */

/* An allocator of the C library's blocks that refuses one request of
 * `oom_size` bytes once armed (oom_size 0: none). */
static atomic_size_t oom_size;

static void *oom_malloc(size_t n, void *payload)
{
    size_t want = n;
    (void)payload;
    if (n > 0 && atomic_compare_exchange_strong(&oom_size, &want, 0))
        return NULL;
    return malloc(n);
}

static void *oom_realloc(void *p, size_t n, void *payload)
{
    (void)payload;
    return realloc(p, n);
}

static void oom_free(void *p, void *payload)
{
    (void)payload;
    free(p);
}

static const ckpt_allocator oom_allocator = {CKPT_ALLOCATOR_VERSION, NULL,
                                             oom_malloc, oom_realloc, oom_free};

/* Rank 0 cannot allocate the table of every rank's save status, which it
 * needs before it can tell the others anything: it ends the job. */
static void test_oom_abort(void **state)
{
    ckpt_mpi_saver *s;
    model m;
    (void)state;
    fresh_dir(g_dir);
    assert_ckpt_ok(ckpt_set_allocator(&oom_allocator));
    s = open_saver(NULL, CKPT_BUSY_WAIT, 30.0);
    model_fill(&m, test_rank(), test_size(), 1);
    model_register(s, &m, 0);
    assert_ckpt_ok(ckpt_mpi_saver_check(s));
    if (test_rank() == 0)
        atomic_store(&oom_size, (size_t)test_size() * sizeof(ckpt__mpi_status));
    ckpt_mpi_saver_save(s, 1, NULL);
    fail_msg("rank %d's save returned although rank 0 had no memory for it",
             test_rank());
}

/* ---- a rank's entries broken in flight ---------------------------------- */

/* Set on the last rank before a save: its next gathered blob (the index
 * entries: u32 path length, the path, u32 entry count, the entries) goes
 * out with the entry count (BREAK_COUNT) or the path's length (BREAK_PATH)
 * raised past what the bytes hold. The profiling interface lets this
 * program stand in for MPI_Igatherv. */
#define BREAK_COUNT 1
#define BREAK_PATH 2
static atomic_int break_next_blob;

int MPI_Igatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                 void *recvbuf, const int recvcounts[], const int displs[],
                 MPI_Datatype recvtype, int root, MPI_Comm comm,
                 MPI_Request *request)
{
    static uint8_t broken[8192];
    uint32_t path_len, count;
    int how = atomic_exchange(&break_next_blob, 0);
    if (how) { /* the blob this save sends is small: it must be broken */
        assert_true(sendcount >= 8 && (size_t)sendcount <= sizeof(broken));
        memcpy(broken, sendbuf, (size_t)sendcount);
        memcpy(&path_len, broken, 4);
        assert_true(path_len + 8 <= (uint32_t)sendcount);
        if (how == BREAK_COUNT) {
            memcpy(&count, broken + 4 + path_len, 4);
            count += 1000;
            memcpy(broken + 4 + path_len, &count, 4);
        } else {
            path_len = (uint32_t)sendcount;
            memcpy(broken, &path_len, 4);
        }
        sendbuf = broken;
    }
    return PMPI_Igatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts,
                         displs, recvtype, root, comm, request);
}

static void test_broken_entries(void **state)
{
    ckpt_mpi_saver *s;
    ckpt_buf latest = CKPT_BUF_INIT;
    char want[4200];
    int last = test_size() - 1;
    model m;
    (void)state;
    fresh_dir(g_dir);
    s = open_saver(NULL, CKPT_BUSY_WAIT, 0);
    model_fill(&m, test_rank(), test_size(), 1);
    model_register(s, &m, 0);
    assert_ckpt_ok(ckpt_mpi_saver_save(s, 1, NULL));
    /* the count broken in a sync and an async save; the path's length
     * (rank 0 cannot name that rank's temporary file: the rank removes
     * its own on hearing the verdict) */
    for (int round = 0; round < 3; round++) {
        int async = round == 1;
        model_fill(&m, test_rank(), test_size(), 2);
        if (test_rank() == last)
            atomic_store(&break_next_blob,
                         round == 2 ? BREAK_PATH : BREAK_COUNT);
        if (async) {
            int rc;
            assert_ckpt_ok(ckpt_mpi_saver_save_async(s, 2, NULL));
            rc = ckpt_mpi_saver_wait(s, -1);
            assert_ckpt_error(rc, CKPT_ECORRUPT, "truncated entries");
        } else {
            assert_ckpt_error(ckpt_mpi_saver_save(s, 2, NULL), CKPT_ECORRUPT,
                              "truncated entries");
        }
        /* every rank hears rank 0's verdict: the directory, the rank */
        snprintf(want, sizeof(want), "rank 0: %s: rank %d's entries: ", g_dir,
                 last);
        assert_non_null(strstr(ckpt_error_last()->message, want));
        MPI_Barrier(MPI_COMM_WORLD);
        if (test_rank() == 0) {
            assert_int_equal(count_files_in(g_dir, "model.ckpt-2"), 0);
            assert_int_equal(count_files_in(g_dir, "tempstate"), 0);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    model_zero(&m);
    assert_ckpt_ok(ckpt_mpi_saver_restore_latest(s, &latest));
    snprintf(want, sizeof(want), "%s/model.ckpt-1", g_dir);
    assert_string_equal(latest.ptr, want);
    model_assert(&m, 1);
    /* the saver goes on: the next save commits */
    model_fill(&m, test_rank(), test_size(), 3);
    assert_ckpt_ok(ckpt_mpi_saver_save(s, 3, NULL));
    model_zero(&m);
    assert_ckpt_ok(ckpt_mpi_saver_restore_latest(s, &latest));
    snprintf(want, sizeof(want), "%s/model.ckpt-3", g_dir);
    assert_string_equal(latest.ptr, want);
    model_assert(&m, 3);
    ckpt_mpi_saver_free(s);
    ckpt_buf_dispose(&latest);
}

/* ---- SKIP's agreement given ahead -------------------------------------- */

/* Let every rank's answer for the next trigger travel: polls, each step
 * ending in a collective as a training step's gradients do. */
static void steps_with_polls(ckpt_mpi_saver *s, int n)
{
    for (int i = 0; i < n; i++) {
        assert_ckpt_ok(ckpt_mpi_saver_poll(s, NULL));
        MPI_Barrier(MPI_COMM_WORLD);
    }
}

static int wait_for_file(const char *path, double max_s)
{
    struct stat st;
    for (double waited = 0; waited < max_s; waited += 0.001) {
        if (stat(path, &st) == 0)
            return 1;
        usleep(1000);
    }
    return 0;
}

/* Every rank's save finished and was polled: rank 0's next trigger needs
 * nothing from the others (they make no MPI call until rank 0 has started
 * its save; waiting at the trigger for their answer would never end). */
static void test_trigger_needs_no_collective(void **state)
{
    char marker[4200];
    ckpt_mpi_saver *s;
    ckpt_saver_metrics mt;
    model m;
    (void)state;
    fresh_dir(g_dir);
    snprintf(marker, sizeof(marker), "%s/rank0-started", g_dir);
    s = open_saver(NULL, CKPT_BUSY_SKIP, 0);
    model_fill(&m, test_rank(), test_size(), 1);
    model_register(s, &m, 0);
    assert_ckpt_ok(ckpt_mpi_saver_save_async(s, 1, NULL));
    assert_ckpt_ok(ckpt_mpi_saver_wait(s, -1));
    steps_with_polls(s, 50);
    if (test_rank() == 0) {
        FILE *f;
        assert_ckpt_ok(ckpt_mpi_saver_save_async(s, 2, NULL));
        f = fopen(marker, "w");
        assert_non_null(f);
        fclose(f);
    } else {
        assert_true(wait_for_file(marker, 30.0));
        assert_ckpt_ok(ckpt_mpi_saver_save_async(s, 2, NULL));
    }
    assert_ckpt_ok(ckpt_mpi_saver_wait(s, -1));
    assert_ckpt_ok(ckpt_mpi_saver_close(s));
    ckpt_mpi_saver_get_metrics(s, &mt);
    assert_int_equal(mt.saves_started, 2);
    assert_int_equal(mt.saves_completed, 2);
    assert_int_equal(mt.last_saved_step, 2);
    ckpt_mpi_saver_free(s);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* Rank `slow`'s writes take `delay_us` each. */
typedef struct slow_fs {
    ckpt_fs fs;
    const ckpt_fs *inner;
    useconds_t delay_us;
} slow_fs;

static int slow_write(ckpt_file *f, const void *buf, size_t n, void *payload)
{
    slow_fs *w = payload;
    usleep(w->delay_us);
    return w->inner->write(f, buf, n, w->inner->payload);
}

#define AGREE_STEPS 120
#define AGREE_EVERY 3

/* A loop of AGREE_STEPS steps, a trigger every AGREE_EVERY, polls at
 * every step, no other collective: every rank sleeps `step_us` per step,
 * the last rank `lag_us` more (it falls behind until a trigger's agreement
 * holds the others), and its writes go through `fs`. Every rank records what
 * each trigger decided; rank 0 checks that every rank decided alike, and that
 * the directory holds exactly the checkpoints every rank saw completed. */
static void run_agree_loop(const ckpt_fs *fs, useconds_t step_us,
                           useconds_t lag_us)
{
    int decided[AGREE_STEPS / AGREE_EVERY];
    int *all = NULL;
    int64_t counts[3], *all_counts = NULL;
    ckpt_mpi_saver_options o = test_mpi_options();
    ckpt_mpi_saver *s = NULL;
    ckpt_saver_metrics mt;
    const int n = AGREE_STEPS / AGREE_EVERY, size = test_size();
    const int last = test_rank() == size - 1;
    model m;
    fresh_dir(g_dir);
    o.base.busy_policy = CKPT_BUSY_SKIP;
    o.base.max_to_keep = AGREE_STEPS;
    if (last)
        o.base.fs = fs;
    assert_ckpt_ok(ckpt_mpi_saver_open(&s, MPI_COMM_WORLD, g_dir, &o));
    model_fill(&m, test_rank(), size, 1);
    model_register(s, &m, 0);
    for (int step = 1; step <= AGREE_STEPS; step++) {
        if (step_us + (last ? lag_us : 0) > 0)
            usleep(step_us + (last ? lag_us : 0));
        assert_ckpt_ok(ckpt_mpi_saver_poll(s, NULL));
        if (step % AGREE_EVERY == 0) {
            int err = ckpt_mpi_saver_save_async(s, step, NULL);
            if (err != 0)
                assert_ckpt_error(err, CKPT_EBUSY, "skipped");
            decided[step / AGREE_EVERY - 1] = err == 0;
        }
    }
    assert_ckpt_ok(ckpt_mpi_saver_close(s));
    ckpt_mpi_saver_get_metrics(s, &mt);
    counts[0] = (int64_t)mt.saves_started;
    counts[1] = (int64_t)mt.saves_completed;
    counts[2] = mt.last_saved_step;
    assert_int_equal(mt.saves_started + mt.saves_skipped, n);
    assert_int_equal(mt.saves_completed, mt.saves_started);
    ckpt_mpi_saver_free(s);
    if (test_rank() == 0) {
        all = calloc((size_t)(n * size), sizeof(int));
        all_counts = calloc((size_t)(3 * size), sizeof(int64_t));
        assert_non_null(all);
        assert_non_null(all_counts);
    }
    MPI_Gather(decided, n, MPI_INT, all, n, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Gather(counts, 3, MPI_INT64_T, all_counts, 3, MPI_INT64_T, 0,
               MPI_COMM_WORLD);
    if (test_rank() == 0) {
        int started = 0;
        for (int r = 1; r < size; r++) {
            for (int k = 0; k < n; k++)
                if (all[r * n + k] != all[k])
                    fail_msg("trigger at step %d: rank 0 %s, rank %d %s",
                             (k + 1) * AGREE_EVERY,
                             all[k] ? "saved" : "skipped", r,
                             all[r * n + k] ? "saved" : "skipped");
            for (int c = 0; c < 3; c++)
                assert_int_equal(all_counts[r * 3 + c], all_counts[c]);
        }
        for (int k = 0; k < n; k++)
            started += all[k];
        assert_true(started >= 1);
        assert_int_equal(started, all_counts[0]);
        assert_int_equal(count_files_in(g_dir, ".index"), started);
        free(all);
        free(all_counts);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

static void test_lagging_rank(void **state)
{
    (void)state;
    run_agree_loop(NULL, 0, 3000);
}

static void test_slow_writer(void **state)
{
    static slow_fs w;
    (void)state;
    w.inner = ckpt_fs_posix();
    w.fs = *w.inner;
    w.fs.write = slow_write;
    w.fs.payload = &w;
    w.delay_us = 20000;
    run_agree_loop(&w.fs, 2000, 0);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest progress[] = {cmocka_unit_test(test_progress),
                                          cmocka_unit_test(test_coalesce)};
    const struct CMUnitTest stall[] = {cmocka_unit_test(test_stall)};
    const struct CMUnitTest mismatch[] = {cmocka_unit_test(test_mismatch)};
    const struct CMUnitTest kill[] = {cmocka_unit_test(test_kill)};
    const struct CMUnitTest after[] = {cmocka_unit_test(test_after_kill)};
    const struct CMUnitTest single[] = {cmocka_unit_test(test_thread_single)};
    const struct CMUnitTest waits[] = {
        cmocka_unit_test(test_wait_counts_from_its_start),
        cmocka_unit_test(test_wait_requests)};
    const struct CMUnitTest user_stall[] = {cmocka_unit_test(test_user_stall)};
    const struct CMUnitTest oom_abort[] = {cmocka_unit_test(test_oom_abort)};
    const struct CMUnitTest abort_epipe[] = {
        cmocka_unit_test(test_abort_epipe)};
    const struct CMUnitTest broken_entries[] = {
        cmocka_unit_test(test_broken_entries)};
    const struct CMUnitTest agree[] = {
        cmocka_unit_test(test_trigger_needs_no_collective),
        cmocka_unit_test(test_lagging_rank),
        cmocka_unit_test(test_slow_writer)};
    int single_mode = argc == 3 && strcmp(argv[1], "thread-single") == 0;
    const mpi_test_group groups[] = {
        MPI_TEST_GROUP("progress", progress),
        MPI_TEST_GROUP("stall", stall),
        MPI_TEST_GROUP("mismatch", mismatch),
        MPI_TEST_GROUP("kill", kill),
        MPI_TEST_GROUP("after-kill", after),
        MPI_TEST_GROUP("thread-single", single),
        MPI_TEST_GROUP("agree", agree),
        MPI_TEST_GROUP("waits", waits),
        MPI_TEST_GROUP("user-stall", user_stall),
        MPI_TEST_GROUP("oom-abort", oom_abort),
        MPI_TEST_GROUP("abort-epipe", abort_epipe),
        MPI_TEST_GROUP("broken-entries", broken_entries),
    };
    int provided, failed = 1;
    MPI_Init_thread(&argc, &argv,
                    single_mode ? MPI_THREAD_SINGLE : MPI_THREAD_FUNNELED,
                    &provided);
    if (argc == 3 && test_size() >= 2) {
        g_dir = argv[2];
        failed =
            mpi_run_group(argv[1], groups, sizeof(groups) / sizeof(groups[0]));
    } else {
        fprintf(stderr,
                "usage: mpiexec -n 2+ %s "
                "progress|stall|mismatch|kill|after-kill|thread-single|"
                "agree|waits|user-stall|oom-abort|abort-epipe|broken-entries "
                "DIR\n",
                argv[0]);
    }
    return mpi_tests_end(failed);
}
