/* tests/crash/test_alloc_faults.c - allocation failures (issue 6, part 1):
 * a replacement allocator (ckpt_set_allocator) fails the Nth allocation,
 * once or from then on, for every N up to the number the operation makes:
 * a bundle write + finish, a bundle reader's open + verify, every tensor
 * of a partitioned bundle and of TensorFlow's checkpoints read each way
 * the reader offers (values read alike whenever a run succeeds), a state file
 * parse + format, and a saver's open + save + save_async + wait + restore.
 *
 * Every run must succeed or return a known error code with a message,
 * never crash, and free everything it allocated: the allocator keeps the
 * set of live blocks, which must be empty after each run (the ASan build
 * checks the rest). A failed bundle leaves no file behind; after a failed
 * save the previous checkpoint is still the latest and verifies. */
#include "test_util.h"

#include "ckpt/sys/alloc.h"

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- the failing allocator ------------------------------------------------
 */

typedef struct fault_alloc {
    pthread_mutex_t mu; /* the saver's writer thread allocates too */
    uint64_t count;     /* allocations (malloc, realloc) since arming */
    uint64_t fail_at;   /* 1-based; 0: never */
    int persistent;     /* fail every allocation from fail_at on */
    uint64_t injected;
    void **live; /* blocks handed out and not yet freed */
    size_t nlive, cap;
} fault_alloc;

static fault_alloc g_fa = {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, 0, NULL, 0, 0};

/* mu held */
static int fa_should_fail(void)
{
    g_fa.count++;
    if (g_fa.fail_at == 0)
        return 0;
    if (g_fa.count == g_fa.fail_at ||
        (g_fa.persistent && g_fa.count > g_fa.fail_at)) {
        g_fa.injected++;
        return 1;
    }
    return 0;
}

/* mu held */
static void fa_track(void *p)
{
    if (g_fa.nlive == g_fa.cap) {
        size_t cap = g_fa.cap ? 2 * g_fa.cap : 256;
        void **q = realloc(g_fa.live, cap * sizeof(*q));
        if (!q)
            abort();
        g_fa.live = q;
        g_fa.cap = cap;
    }
    g_fa.live[g_fa.nlive++] = p;
}

/* mu held; 1 when `p` was ours */
static int fa_untrack(void *p)
{
    for (size_t i = g_fa.nlive; i-- > 0;) {
        if (g_fa.live[i] == p) {
            g_fa.live[i] = g_fa.live[--g_fa.nlive];
            return 1;
        }
    }
    return 0;
}

static void *fa_malloc(size_t n, void *payload)
{
    void *p = NULL;
    (void)payload;
    pthread_mutex_lock(&g_fa.mu);
    if (!fa_should_fail()) {
        p = malloc(n);
        if (p)
            fa_track(p);
    }
    pthread_mutex_unlock(&g_fa.mu);
    return p;
}

static void *fa_realloc(void *p, size_t n, void *payload)
{
    void *q = NULL;
    (void)payload;
    pthread_mutex_lock(&g_fa.mu);
    if (!fa_should_fail()) {
        int ours = p ? fa_untrack(p) : 0;
        q = realloc(p, n);
        if (q)
            fa_track(q);
        else if (ours)
            fa_track(p); /* the old block is still live */
    }
    pthread_mutex_unlock(&g_fa.mu);
    return q;
}

static void fa_free(void *p, void *payload)
{
    (void)payload;
    pthread_mutex_lock(&g_fa.mu);
    fa_untrack(p);
    pthread_mutex_unlock(&g_fa.mu);
    free(p);
}

static const ckpt_allocator k_fault_allocator = {
    CKPT_ALLOCATOR_VERSION, NULL, fa_malloc, fa_realloc, fa_free};

/* Install the allocator failing at `fail_at` (0: never). */
static void fa_install(uint64_t fail_at, int persistent)
{
    pthread_mutex_lock(&g_fa.mu);
    g_fa.count = 0;
    g_fa.fail_at = fail_at;
    g_fa.persistent = persistent;
    g_fa.injected = 0;
    pthread_mutex_unlock(&g_fa.mu);
    assert_ckpt_ok(ckpt_set_allocator(&k_fault_allocator));
}

/* Stop failing (the allocator stays, so frees are still tracked). */
static void fa_disarm(void)
{
    pthread_mutex_lock(&g_fa.mu);
    g_fa.fail_at = 0;
    pthread_mutex_unlock(&g_fa.mu);
}

/* Uninstall; every block handed out must have been freed. */
static void fa_uninstall(const char *what, uint64_t n, int persistent)
{
    size_t leaked;
    assert_ckpt_ok(ckpt_set_allocator(NULL));
    pthread_mutex_lock(&g_fa.mu);
    leaked = g_fa.nlive;
    g_fa.nlive = 0;
    pthread_mutex_unlock(&g_fa.mu);
    if (leaked)
        fail_msg("%s: allocation %llu failing%s: %zu blocks leaked", what,
                 (unsigned long long)n, persistent ? " from then on" : "",
                 leaked);
}

/* ---- the loop -------------------------------------------------------------
 */

typedef struct op {
    const char *name;
    void (*setup)(void *ctx); /* before each run; may be NULL */
    int (*run)(void *ctx);    /* under the allocator */
    void (*check)(void *ctx, int rc, uint64_t n, int persistent);
    void *ctx;
} op;

typedef struct loop_stats {
    uint64_t runs, ok, enomem, other;
} loop_stats;

/* The first failure of a run, noted where it happened (later stages of a
 * run may succeed and clear the thread's last error). */
static int g_noted_code;
static char g_noted_msg[1024];

static int note(int err)
{
    if (err < 0 && g_noted_code == 0) {
        g_noted_code = ckpt_error_last()->code;
        snprintf(g_noted_msg, sizeof(g_noted_msg), "%s",
                 ckpt_error_last()->message);
    }
    return err;
}

static void check_rc(const char *what, int rc, uint64_t n, int persistent)
{
    if (rc == 0)
        return;
    if (rc > 0 || !strcmp(ckpt_error_name(rc), "CKPT_UNKNOWN"))
        fail_msg("%s: allocation %llu failing%s: returned %d, not a ckpt "
                 "error code",
                 what, (unsigned long long)n, persistent ? " on" : "", rc);
    if (g_noted_code != rc || !g_noted_msg[0])
        fail_msg("%s: allocation %llu failing%s: returned %s but the last "
                 "error was %s '%s'",
                 what, (unsigned long long)n, persistent ? " on" : "",
                 ckpt_error_name(rc), ckpt_error_name(g_noted_code),
                 g_noted_msg);
}

/* Run `o` failing allocation N = 1, 2, ... until a run makes fewer than N
 * allocations. Returns the number of allocations of a clean run. */
static uint64_t fault_loop(const op *o, int persistent, loop_stats *st)
{
    uint64_t total;
    int rc;
    memset(st, 0, sizeof(*st));
    if (o->setup)
        o->setup(o->ctx);
    fa_install(0, 0);
    rc = o->run(o->ctx);
    pthread_mutex_lock(&g_fa.mu);
    total = g_fa.count;
    pthread_mutex_unlock(&g_fa.mu);
    fa_uninstall(o->name, 0, 0);
    if (rc != 0)
        fail_msg("%s without a failing allocation: %s", o->name,
                 ckpt_error_last()->message);
    o->check(o->ctx, rc, 0, 0);
    assert_true(total > 0);
    for (uint64_t n = 1;; n++) {
        uint64_t injected;
        if (o->setup)
            o->setup(o->ctx);
        fa_install(n, persistent);
        g_noted_code = 0;
        g_noted_msg[0] = '\0';
        rc = o->run(o->ctx);
        fa_disarm();
        pthread_mutex_lock(&g_fa.mu);
        injected = g_fa.injected;
        pthread_mutex_unlock(&g_fa.mu);
        check_rc(o->name, rc, n, persistent);
        fa_uninstall(o->name, n, persistent);
        o->check(o->ctx, rc, n, persistent);
        if (!injected) {
            assert_int_equal(rc, 0);
            break;
        }
        st->runs++;
        if (rc == 0)
            st->ok++;
        else if (rc == CKPT_ENOMEM)
            st->enomem++;
        else
            st->other++;
        if (n > 100000)
            fail_msg("%s: no end to the allocations", o->name);
    }
    /* a run that never fails is a test that cannot fail */
    assert_true(st->runs > 0);
    assert_true(st->enomem > 0);
    print_message("%s, failing %s: %llu allocations; %llu runs: %llu ok, "
                  "%llu CKPT_ENOMEM, %llu other errors\n",
                  o->name, persistent ? "from N on" : "once",
                  (unsigned long long)total, (unsigned long long)st->runs,
                  (unsigned long long)st->ok, (unsigned long long)st->enomem,
                  (unsigned long long)st->other);
    return total;
}

static void run_both(const op *o)
{
    loop_stats once, on;
    fault_loop(o, 0, &once);
    fault_loop(o, 1, &on);
}

/* ---- the values -----------------------------------------------------------
 */

#define A_ROWS 3
#define A_COLS 4
#define C_N 300

static const char *const k_strings[] = {"x", "hello", "", "checkpoint"};

static float a_value(int i, int64_t step)
{
    return (float)(i + 1) * 0.25f + (float)step;
}

/* Entries of `dir` other than "." and ".."; their names into `names`. */
static int list_entries(const char *dir, char *names, size_t cap)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    size_t len = 0;
    int n = 0;
    assert_non_null(d);
    names[0] = '\0';
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        n++;
        if (len < cap)
            len += (size_t)snprintf(names + len, cap - len, " %s", e->d_name);
    }
    closedir(d);
    return n;
}

/* ---- a bundle write + finish -----------------------------------------------
 */

typedef struct bundle_ctx {
    char *dir;
    char prefix[4096];
} bundle_ctx;

static void bundle_setup(void *p)
{
    bundle_ctx *b = p;
    test_remove_tree(b->dir);
    b->dir = test_make_temp_dir();
    snprintf(b->prefix, sizeof(b->prefix), "%s/b", b->dir);
}

static int write_bundle(const char *prefix)
{
    ckpt_bundle_writer *w = NULL;
    float a[A_ROWS * A_COLS];
    int64_t step = 7;
    double c[C_N];
    ckpt_shape sa = {2, {A_ROWS, A_COLS}};
    ckpt_shape sscalar = {0, {0}};
    ckpt_shape sc = {1, {C_N}};
    ckpt_shape ss = {1, {4}};
    ckpt_slice strs[4];
    int err;
    for (int i = 0; i < A_ROWS * A_COLS; i++)
        a[i] = a_value(i, 0);
    for (int i = 0; i < C_N; i++)
        c[i] = 1.0 / (i + 1);
    for (int i = 0; i < 4; i++) {
        strs[i].ptr = k_strings[i];
        strs[i].len = strlen(k_strings[i]);
    }
    err = ckpt_bundle_writer_open(&w, prefix, NULL);
    if (err == 0)
        err = ckpt_bundle_writer_add(w, "layer/a", CKPT_DT_FLOAT, &sa, a,
                                     sizeof(a));
    if (err == 0)
        err = ckpt_bundle_writer_add(w, "global_step", CKPT_DT_INT64, &sscalar,
                                     &step, sizeof(step));
    if (err == 0)
        err = ckpt_bundle_writer_add_strings(w, "names", &ss, strs, 4);
    if (err == 0)
        err = ckpt_bundle_writer_add(w, "c", CKPT_DT_DOUBLE, &sc, c, sizeof(c));
    if (err == 0)
        err = ckpt_bundle_writer_finish(w);
    note(err);
    ckpt_bundle_writer_free(w);
    return err;
}

/* Open, verify and read back the bundle: 0 or the error. */
static int read_bundle(const char *prefix)
{
    ckpt_bundle_reader *r = NULL;
    ckpt_string_array names = CKPT_STRING_ARRAY_INIT;
    float a[A_ROWS * A_COLS];
    int err = ckpt_bundle_reader_open(&r, prefix, NULL);
    if (err == 0)
        err = ckpt_bundle_reader_verify(r);
    if (err == 0)
        err = ckpt_bundle_reader_read(r, "layer/a", a, sizeof(a));
    if (err == 0)
        err = ckpt_bundle_reader_read_strings(r, "names", &names);
    if (err == 0) {
        assert_int_equal(ckpt_bundle_reader_count(r), 4);
        for (int i = 0; i < A_ROWS * A_COLS; i++)
            assert_true(a[i] == a_value(i, 0));
        assert_int_equal(names.count, 4);
        for (int i = 0; i < 4; i++) {
            assert_int_equal(names.strings[i].len, strlen(k_strings[i]));
            assert_memory_equal(names.strings[i].ptr, k_strings[i],
                                names.strings[i].len);
        }
    }
    note(err);
    ckpt_string_array_dispose(&names);
    ckpt_bundle_reader_free(r);
    return err;
}

static int bundle_write_run(void *p)
{
    bundle_ctx *b = p;
    return write_bundle(b->prefix);
}

static void bundle_write_check(void *p, int rc, uint64_t n, int persistent)
{
    bundle_ctx *b = p;
    char names[1024];
    if (rc == 0) {
        assert_ckpt_ok(read_bundle(b->prefix));
        return;
    }
    /* a failed bundle leaves nothing: no index, data or temporary file */
    if (list_entries(b->dir, names, sizeof(names)) != 0)
        fail_msg("bundle write, allocation %llu failing%s: files left "
                 "behind after %s (%s):%s",
                 (unsigned long long)n, persistent ? " on" : "",
                 ckpt_error_name(rc), g_noted_msg, names);
}

static void test_bundle_write(void **state)
{
    bundle_ctx b = {NULL, ""};
    op o = {"bundle write", bundle_setup, bundle_write_run, bundle_write_check,
            &b};
    (void)state;
    run_both(&o);
    test_remove_tree(b.dir);
}

/* ---- a bundle reader's open + verify ---------------------------------------
 */

static int bundle_read_run(void *p)
{
    bundle_ctx *b = p;
    return read_bundle(b->prefix);
}

static void bundle_read_check(void *p, int rc, uint64_t n, int persistent)
{
    (void)p;
    (void)rc;
    (void)n;
    (void)persistent;
}

static void test_bundle_read(void **state)
{
    bundle_ctx b = {NULL, ""};
    op o = {"bundle read", NULL, bundle_read_run, bundle_read_check, &b};
    (void)state;
    bundle_setup(&b);
    assert_ckpt_ok(write_bundle(b.prefix));
    run_both(&o);
    test_remove_tree(b.dir);
}

/* ---- every tensor of other checkpoints --------------------------------------
 */

/* A checkpoint read whole: each entry handed out, read (values, strings,
 * a partitioned tensor assembled), checked and streamed, and the fixed-size
 * ones read again in one read_many; `digest` sums what was read, so that a
 * run that succeeds is seen to read the same values. */
typedef struct whole_ctx {
    char prefix[4096];
    uint64_t digest, clean_digest;
} whole_ctx;

static void digest_bytes(uint64_t *d, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        *d = *d * 1099511628211u + b[i];
}

static int read_one_entry(ckpt_bundle_reader *r, const ckpt_tensor_entry *e,
                          uint64_t *d)
{
    int64_t bytes = 0;
    int err = 0;
    if (e->dtype == CKPT_DT_STRING) {
        ckpt_string_array a = CKPT_STRING_ARRAY_INIT;
        err = ckpt_bundle_reader_read_strings_entry(r, e, &a);
        for (size_t i = 0; err == 0 && i < a.count; i++)
            digest_bytes(d, a.strings[i].ptr, a.strings[i].len);
        ckpt_string_array_dispose(&a);
        return err;
    }
    assert_ckpt_ok(ckpt_tensor_byte_size(&bytes, e->dtype, &e->shape));
    {
        unsigned char *dst = malloc(bytes ? (size_t)bytes : 1);
        assert_non_null(dst);
        err = ckpt_bundle_reader_read_entry(r, e, dst, (size_t)bytes);
        if (err == 0)
            digest_bytes(d, dst, (size_t)bytes);
        free(dst);
    }
    if (err == 0 && e->num_slices == 0)
        err = ckpt_bundle_reader_check(r, e);
    if (err == 0 && e->num_slices == 0) {
        ckpt_record_stream *st = NULL;
        const void *piece = NULL;
        size_t n = 1;
        err = ckpt_record_stream_open(&st, r, e, 64);
        while (err == 0 && n > 0) {
            err = ckpt_record_stream_next(st, &piece, &n);
            if (err == 0)
                digest_bytes(d, piece, n);
        }
        ckpt_record_stream_free(st);
    }
    return err;
}

/* Every fixed-size tensor with a plain name in one read_many. */
static int read_many_fixed(ckpt_bundle_reader *r, uint64_t *d)
{
    size_t count = ckpt_bundle_reader_count(r), n = 0;
    ckpt_read_request *reqs = calloc(count + 1, sizeof(*reqs));
    int err;
    assert_non_null(reqs);
    for (size_t i = 0; i < count; i++) {
        ckpt_tensor_entry e;
        int64_t bytes = 0;
        assert_ckpt_ok(ckpt_bundle_reader_entry_fill(&e, r, i));
        if (e.dtype == CKPT_DT_STRING || e.is_slice_key ||
            strlen(e.name) != e.name_len)
            continue;
        assert_ckpt_ok(ckpt_tensor_byte_size(&bytes, e.dtype, &e.shape));
        reqs[n].name = e.name;
        reqs[n].dst_size = (size_t)bytes;
        reqs[n].dst = malloc(bytes ? (size_t)bytes : 1);
        assert_non_null(reqs[n].dst);
        n++;
    }
    err = ckpt_bundle_reader_read_many(r, reqs, n);
    for (size_t i = 0; i < n; i++) {
        if (err == 0)
            digest_bytes(d, reqs[i].dst, reqs[i].dst_size);
        free(reqs[i].dst);
    }
    free(reqs);
    return err;
}

static int whole_run(void *p)
{
    whole_ctx *c = p;
    ckpt_bundle_reader *r = NULL;
    int err = ckpt_bundle_reader_open(&r, c->prefix, NULL);
    c->digest = 0;
    if (err == 0)
        err = ckpt_bundle_reader_verify(r);
    for (size_t i = 0; err == 0 && i < ckpt_bundle_reader_count(r); i++) {
        /* the entry is made the first time it is handed out */
        const ckpt_tensor_entry *e = ckpt_bundle_reader_entry(r, i);
        err = e ? read_one_entry(r, e, &c->digest) : ckpt_error_last()->code;
    }
    if (err == 0)
        err = read_many_fixed(r, &c->digest);
    note(err);
    ckpt_bundle_reader_free(r);
    return err;
}

static void whole_check(void *p, int rc, uint64_t n, int persistent)
{
    whole_ctx *c = p;
    if (n == 0)
        c->clean_digest = c->digest;
    else if (rc == 0 && c->digest != c->clean_digest)
        fail_msg("%s, allocation %llu failing%s: read other values", c->prefix,
                 (unsigned long long)n, persistent ? " on" : "");
}

static void run_whole(const char *prefix)
{
    whole_ctx c;
    op o = {c.prefix, NULL, whole_run, whole_check, &c};
    memset(&c, 0, sizeof(c));
    snprintf(c.prefix, sizeof(c.prefix), "%s", prefix);
    run_both(&o);
}

/* A partitioned tensor (two row pieces in two data files) beside a plain
 * one: the pieces are assembled under the failing allocator. */
static void test_partitioned_read(void **state)
{
    static const float rows[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
    ckpt_bundle_writer_options wo = CKPT_BUNDLE_WRITER_OPTIONS_INIT;
    ckpt_bundle_writer *w = NULL;
    ckpt_shape full = {2, {4, 3}}, scalar = {0, {0}};
    ckpt_slice_extent ext[2] = {{0, 2}, {0, CKPT_SLICE_FULL}};
    int64_t step = 9;
    char *dir = test_make_temp_dir();
    char *prefix = test_path(dir, "p");
    (void)state;
    wo.num_shards = 2;
    assert_ckpt_ok(ckpt_bundle_writer_open(&w, prefix, &wo));
    assert_ckpt_ok(ckpt_bundle_writer_add_slice(w, "w", CKPT_DT_FLOAT, &full,
                                                ext, rows, 6 * sizeof(float)));
    assert_ckpt_ok(ckpt_bundle_writer_select_shard(w, 1));
    ext[0].start = 2;
    assert_ckpt_ok(ckpt_bundle_writer_add_slice(
        w, "w", CKPT_DT_FLOAT, &full, ext, rows + 6, 6 * sizeof(float)));
    assert_ckpt_ok(ckpt_bundle_writer_add(w, "step", CKPT_DT_INT64, &scalar,
                                          &step, sizeof(step)));
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);
    run_whole(prefix);
    free(prefix);
    test_remove_tree(dir);
}

/* TensorFlow's checkpoints: two shards, strings (the object graph), many
 * tensors. */
static void test_tf_vectors_read(void **state)
{
    static const char *const vectors[][2] = {
        {"tictactoe_ckpt_manager", "ckpt-19"},
        {"rl_collection_sharded", "ckpt-5"},
        {"rust_regression_savedmodel", "variables"},
        {"tfx_estimator_saver", "model.ckpt-1000"},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
        char *dir = test_tf_vector(vectors[i][0]);
        char *prefix;
        if (!dir)
            return;
        prefix = test_path(dir, vectors[i][1]);
        run_whole(prefix);
        free(prefix);
        free(dir);
    }
}

/* ---- a state file parse + format --------------------------------------------
 */

static const char k_state_text[] =
    "model_checkpoint_path: \"model.ckpt-30\"\n"
    "all_model_checkpoint_paths: \"model.ckpt-10\"\n"
    "all_model_checkpoint_paths: \"model.ckpt-20\"\n"
    "all_model_checkpoint_paths: \"model.ckpt-30\"\n"
    "all_model_checkpoint_timestamps: 1.5\n"
    "all_model_checkpoint_timestamps: 2.5\n"
    "all_model_checkpoint_timestamps: 3.25\n"
    "last_preserved_timestamp: 1.0\n";

static int state_run(void *p)
{
    ckpt_state st = CKPT_STATE_INIT;
    ckpt_buf text = CKPT_BUF_INIT;
    int err;
    (void)p;
    err = ckpt_state_parse(&st, k_state_text, sizeof(k_state_text) - 1,
                           "checkpoint");
    if (err == 0) {
        assert_string_equal(st.model_checkpoint_path, "model.ckpt-30");
        assert_int_equal(st.num_paths, 3);
        assert_string_equal(st.all_paths[1], "model.ckpt-20");
        assert_int_equal(st.num_timestamps, 3);
        assert_true(st.timestamps[2] == 3.25);
        assert_true(st.last_preserved_timestamp == 1.0);
        err = ckpt_state_format(&text, &st);
    }
    if (err == 0) {
        assert_int_equal(text.size, sizeof(k_state_text) - 1);
        assert_memory_equal(text.ptr, k_state_text, text.size);
    }
    note(err);
    ckpt_buf_dispose(&text);
    ckpt_state_dispose(&st);
    return err;
}

static void test_state_parse(void **state)
{
    op o = {"state parse", NULL, state_run, bundle_read_check, NULL};
    (void)state;
    run_both(&o);
}

/* ---- a saver: open, save, save_async + wait, restore ------------------------
 */

#define W_N 64

typedef struct saver_ctx {
    char *dir;
    float w[W_N];
    int64_t step;
    int64_t last_ok;  /* newest step whose save reported success */
    int failed_saves; /* saves that reported a failure */
    int failed_stages;
    long kept_after_open; /* checkpoints the reopened saver kept, -1 */
} saver_ctx;

static void saver_fill(saver_ctx *c, int64_t step)
{
    for (int i = 0; i < W_N; i++)
        c->w[i] = a_value(i, step);
    c->step = step;
}

static int saver_open_vars(saver_ctx *c, ckpt_saver **out)
{
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_var w = {"w", CKPT_DT_FLOAT, {1, {W_N}}, c->w, NULL, NULL, NULL};
    ckpt_var step = {"global_step", CKPT_DT_INT64, {0, {0}}, &c->step,
                     NULL,          NULL,          NULL};
    ckpt_saver *s = NULL;
    int err;
    o.max_to_keep = 2;
    *out = NULL;
    err = ckpt_saver_open(&s, c->dir, &o);
    if (err == 0)
        err = ckpt_saver_add_var(s, &w);
    if (err == 0)
        err = ckpt_saver_add_var(s, &step);
    if (err < 0) {
        note(err);
        ckpt_saver_free(s);
        return err;
    }
    *out = s;
    return 0;
}

/* A directory whose latest checkpoint is step 1. */
static void saver_setup(void *p)
{
    saver_ctx *c = p;
    ckpt_saver *s;
    test_remove_tree(c->dir);
    c->dir = test_make_temp_dir();
    assert_ckpt_ok(saver_open_vars(c, &s));
    saver_fill(c, 1);
    assert_ckpt_ok(ckpt_saver_save(s, 1, NULL));
    ckpt_saver_free(s);
    c->last_ok = 1;
    c->failed_saves = 0;
    c->failed_stages = 0;
    c->kept_after_open = -1;
}

static int saver_run(void *p)
{
    saver_ctx *c = p;
    ckpt_saver *s = NULL;
    ckpt_buf prefix = CKPT_BUF_INIT;
    uint64_t ticket = 0;
    int first = 0;
    int err = saver_open_vars(c, &s);
    if (err < 0) {
        c->failed_stages++;
        return err;
    }
    c->kept_after_open = (long)ckpt_saver_num_checkpoints(s);
    /* Every stage runs even after a failure: the saver must stay usable. */
    saver_fill(c, 2);
    err = note(ckpt_saver_save(s, 2, NULL));
    if (err == 0) {
        c->last_ok = 2;
    } else {
        first = err;
        c->failed_saves++;
        c->failed_stages++;
    }
    saver_fill(c, 3);
    err = note(ckpt_saver_save_async(s, 3, &ticket));
    if (err == 0)
        err = note(ckpt_saver_wait(s, ticket, -1.0));
    if (err == 0) {
        c->last_ok = 3;
    } else {
        if (first == 0)
            first = err;
        c->failed_saves++;
        c->failed_stages++;
    }
    saver_fill(c, 0);
    err = note(ckpt_saver_restore_latest(s, &prefix));
    if (err == 0) {
        int64_t step = ckpt_checkpoint_step(prefix.ptr);
        assert_int_equal(c->step, step);
        for (int i = 0; i < W_N; i++)
            assert_true(c->w[i] == a_value(i, step));
    } else {
        if (first == 0)
            first = err;
        c->failed_stages++;
    }
    ckpt_buf_dispose(&prefix);
    ckpt_saver_free(s);
    return first;
}

static void saver_check(void *p, int rc, uint64_t n, int persistent)
{
    saver_ctx *c = p;
    ckpt_buf latest = CKPT_BUF_INIT;
    ckpt_bundle_reader *r = NULL;
    float w[W_N];
    int64_t step;
    (void)rc;
    /* recovery keeps the checkpoint of step 1, or the open fails */
    if (c->kept_after_open != -1 && c->kept_after_open != 1)
        fail_msg("saver, allocation %llu failing%s: the reopened saver kept "
                 "%ld checkpoints, not the 1 the state file lists",
                 (unsigned long long)n, persistent ? " on" : "",
                 c->kept_after_open);
    assert_ckpt_ok(ckpt_latest_checkpoint(&latest, NULL, c->dir));
    step = ckpt_checkpoint_step(latest.ptr);
    /* the newest successful save is the latest; a failed one never is */
    if (step != c->last_ok)
        fail_msg("saver, allocation %llu failing%s: the latest checkpoint is "
                 "step %lld, the newest successful save step %lld",
                 (unsigned long long)n, persistent ? " on" : "",
                 (long long)step, (long long)c->last_ok);
    assert_ckpt_ok(ckpt_bundle_reader_open(&r, latest.ptr, NULL));
    assert_ckpt_ok(ckpt_bundle_reader_verify(r));
    assert_ckpt_ok(ckpt_bundle_reader_read(r, "w", w, sizeof(w)));
    for (int i = 0; i < W_N; i++)
        assert_true(w[i] == a_value(i, step));
    ckpt_bundle_reader_free(r);
    ckpt_buf_dispose(&latest);
    /* failing once, at most one stage fails: the saver recovers */
    if (!persistent && c->failed_stages > 1)
        fail_msg("saver, allocation %llu failing once: %d stages failed",
                 (unsigned long long)n, c->failed_stages);
}

static void test_saver(void **state)
{
    saver_ctx c;
    op o = {"saver", saver_setup, saver_run, saver_check, &c};
    (void)state;
    memset(&c, 0, sizeof(c));
    run_both(&o);
    test_remove_tree(c.dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bundle_write),
        cmocka_unit_test(test_bundle_read),
        cmocka_unit_test(test_partitioned_read),
        cmocka_unit_test(test_tf_vectors_read),
        cmocka_unit_test(test_state_parse),
        cmocka_unit_test(test_saver),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
