/* saver/saver.c - the public saver: options, variables, synchronous saves,
 * asynchronous saves handed to one background writer thread, delivery of
 * outcomes on the caller's thread, metrics, and closing.
 *
 * Async design: save_async copies every variable into a pre-faulted staging
 * image on the caller's thread (the only wait), then queues a job. Once the
 * caller has called ckpt_saver_mutation_fence, a save_async that finds the
 * writer idle copies only the variables behind read callbacks and leaves
 * the rest to the writer (the loop only reads them meanwhile); the next
 * fence, or any other saver call but poll, copies what is left, waits for
 * the writer's last piece and queues the job (complete_deferred). At most
 * one job is being written ("active") and at most one waits ("pending"), so
 * staging memory is one image (SKIP, WAIT) or two (COALESCE), fixed once the
 * variables are known. The writer thread never touches the variables, only
 * the image. Outcomes are queued and delivered to on_save_done by the next
 * saver call on the caller's thread; a failure is also kept as the
 * "background error" that the next save, save_async, poll, wait or close
 * returns exactly once. */
#include "saver_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SAVER_LOG(s, level, ...)                                               \
    ckpt__log((s)->opts.log, (s)->opts.log_payload, (s)->opts.log_level,       \
              (level), __VA_ARGS__)

int ckpt_saver_options_init(ckpt_saver_options *opts, unsigned int version)
{
    static const ckpt_saver_options defaults = CKPT_SAVER_OPTIONS_INIT;
    if (version != CKPT_SAVER_OPTIONS_VERSION)
        return ckpt__error(CKPT_EVERSION, "saver options: unknown version %u",
                           version);
    *opts = defaults;
    return 0;
}

static int dir_probe(const char *name, void *payload)
{
    (void)name;
    (void)payload;
    return 1; /* one entry is enough */
}

static int check_dir_exists(const ckpt_fs *fs, const char *dir)
{
    int err = fs->list(dir, dir_probe, NULL, fs->payload);
    if (err == 1)
        err = 0;
    if (err == CKPT_ENOTFOUND)
        return ckpt__error(CKPT_ENOTFOUND,
                           "checkpoint directory %s does not exist", dir);
    return err;
}

static int init_sync(ckpt_saver *s)
{
    pthread_condattr_t attr;
    if (pthread_mutex_init(&s->mu, NULL) != 0)
        return ckpt__error(CKPT_ERROR, "pthread_mutex_init failed");
    if (pthread_mutex_init(&s->ds_mu, NULL) != 0) {
        pthread_mutex_destroy(&s->mu);
        return ckpt__error(CKPT_ERROR, "pthread_mutex_init failed");
    }
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    if (pthread_cond_init(&s->cv, &attr) != 0) {
        pthread_condattr_destroy(&attr);
        pthread_mutex_destroy(&s->mu);
        pthread_mutex_destroy(&s->ds_mu);
        return ckpt__error(CKPT_ERROR, "pthread_cond_init failed");
    }
    pthread_condattr_destroy(&attr);
    return 0;
}

static int validate_options(const ckpt_saver_options *o)
{
    if (o->version != CKPT_SAVER_OPTIONS_VERSION)
        return ckpt__error(CKPT_EVERSION, "saver options: unknown version %u",
                           o->version);
    if (o->max_to_keep < 0)
        return ckpt__error(CKPT_EINVAL,
                           "saver options: max_to_keep %d is negative",
                           o->max_to_keep);
    if (o->keep_checkpoint_every_n_hours < 0)
        return ckpt__error(CKPT_EINVAL, "saver options: "
                                        "keep_checkpoint_every_n_hours is "
                                        "negative");
    if (o->busy_policy < CKPT_BUSY_SKIP || o->busy_policy > CKPT_BUSY_COALESCE)
        return ckpt__error(CKPT_EINVAL, "saver options: unknown busy_policy %d",
                           o->busy_policy);
    if (o->basename && (!*o->basename || strchr(o->basename, '/')))
        return ckpt__error(CKPT_EINVAL,
                           "saver options: basename '%s' must be a non-empty "
                           "file name without '/'",
                           o->basename);
    return 0;
}

int ckpt_saver_open(ckpt_saver **out, const char *dir,
                    const ckpt_saver_options *opts)
{
    ckpt_saver_options defaults = CKPT_SAVER_OPTIONS_INIT;
    ckpt_saver *s = NULL;
    int err;
    *out = NULL;
    if (!dir || !*dir)
        return ckpt__error(CKPT_EINVAL, "saver: no checkpoint directory given");
    if (!opts)
        opts = &defaults;
    err = validate_options(opts);
    if (err < 0)
        return err;
    err = check_dir_exists(ckpt_fs_or_default(opts->fs), dir);
    if (err < 0)
        return err;
    s = ckpt__calloc(1, sizeof(*s));
    if (!s)
        return ckpt__error_oom();
    s->opts = *opts;
    s->fs = ckpt_fs_or_default(opts->fs);
    s->basename = ckpt__strdup(opts->basename ? opts->basename : "model.ckpt");
    s->opts.basename = s->basename;
    s->metrics.last_saved_step = CKPT_NO_STEP;
    if (!s->basename) {
        ckpt__free(s);
        return ckpt__error_oom();
    }
    err = init_sync(s);
    if (err < 0) {
        ckpt__free(s->basename);
        ckpt__free(s);
        return err;
    }
    err = ckpt__dir_state_init(&s->ds, dir, &s->opts);
    if (err == 0)
        err = ckpt__dir_state_recover(&s->ds);
    if (err < 0) {
        ckpt_saver_free(s);
        return err;
    }
    *out = s;
    return 0;
}

int ckpt_saver_add_var(ckpt_saver *s, const ckpt_var *var)
{
    ckpt__var *v;
    int64_t bytes;
    int err;
    if (!var || !var->name || !*var->name)
        return ckpt__error(CKPT_EINVAL, "add_var: variable without a name");
    if (s->frozen)
        return ckpt__error(CKPT_ESTATE,
                           "add_var '%s': variables are fixed after the first "
                           "save",
                           var->name);
    if (ckpt_dtype_size(var->dtype) == 0)
        return ckpt__error(CKPT_ENOTSUP,
                           "add_var '%s': dtype %d (%s) is not a fixed-size "
                           "type",
                           var->name, var->dtype,
                           ckpt_dtype_name(var->dtype)
                               ? ckpt_dtype_name(var->dtype)
                               : "unknown");
    err = ckpt_tensor_byte_size(&bytes, var->dtype, &var->shape);
    if (err < 0)
        return ckpt__error_prefix(err, "add_var '%s'", var->name);
    if (!var->data && !var->read)
        return ckpt__error(CKPT_EINVAL,
                           "add_var '%s': neither data nor a read callback",
                           var->name);
    for (size_t i = 0; i < s->nvars; i++)
        if (strcmp(s->vars[i].name, var->name) == 0)
            return ckpt__error(CKPT_EEXISTS,
                               "add_var '%s': a variable of that name exists",
                               var->name);
    if (s->nvars == s->cap_vars) {
        size_t cap = s->cap_vars ? s->cap_vars * 2 : 16;
        ckpt__var *p = ckpt__realloc(s->vars, cap * sizeof(*p));
        if (!p)
            return ckpt__error_oom();
        s->vars = p;
        s->cap_vars = cap;
    }
    v = &s->vars[s->nvars];
    memset(v, 0, sizeof(*v));
    v->v = *var;
    v->name = ckpt__strdup(var->name);
    if (!v->name)
        return ckpt__error_oom();
    v->v.name = v->name;
    v->bytes = (uint64_t)bytes;
    v->offset = s->image_bytes;
    s->image_bytes += (uint64_t)bytes;
    s->nvars++;
    return 0;
}

/* ---- outcomes ------------------------------------------------------------ */

/* Queue an outcome (mu held). */
static void push_result(ckpt_saver *s, const ckpt__job *job, int status,
                        const char *error, double write_s, uint64_t bytes)
{
    ckpt__result *r;
    if (s->ndone == s->cap_done) {
        size_t cap = s->cap_done ? s->cap_done * 2 : 8;
        ckpt__result *p = ckpt__realloc(s->done, cap * sizeof(*p));
        if (!p)
            return; /* the outcome is still counted in the metrics */
        s->done = p;
        s->cap_done = cap;
    }
    r = &s->done[s->ndone++];
    memset(r, 0, sizeof(*r));
    r->prefix = ckpt__strdup(job->prefix);
    r->error = error ? ckpt__strdup(error) : NULL;
    r->r.ticket = job->ticket;
    r->r.step = job->step;
    r->r.status = status;
    r->r.blocking_s = job->blocking_s;
    r->r.write_s = write_s;
    r->r.bytes = bytes;
}

/* Hand queued outcomes to on_save_done, on the calling thread. */
static void deliver(ckpt_saver *s)
{
    ckpt__result *done;
    size_t n;
    pthread_mutex_lock(&s->mu);
    done = s->done;
    n = s->ndone;
    s->done = NULL;
    s->ndone = 0;
    s->cap_done = 0;
    pthread_mutex_unlock(&s->mu);
    for (size_t i = 0; i < n; i++) {
        done[i].r.prefix = done[i].prefix ? done[i].prefix : "";
        done[i].r.error = done[i].error;
        if (s->opts.on_save_done)
            s->opts.on_save_done(&done[i].r, s->opts.on_save_done_payload);
        ckpt__free(done[i].prefix);
        ckpt__free(done[i].error);
    }
    ckpt__free(done);
}

/* Return the undelivered background failure once (mu held). */
static int take_bg_error(ckpt_saver *s)
{
    int err = s->bg_error;
    if (err != 0) {
        ckpt__error(err, "%s", s->bg_message);
        s->bg_error = 0;
        s->bg_message[0] = '\0';
    }
    return err;
}

/* Common entry of save, save_async, poll, wait: deliver outcomes and return
 * a pending background failure. */
static int enter(ckpt_saver *s)
{
    int err;
    deliver(s);
    pthread_mutex_lock(&s->mu);
    err = take_bg_error(s);
    pthread_mutex_unlock(&s->mu);
    return err;
}

/* ---- naming ---------------------------------------------------------------
 */

static int checkpoint_names(ckpt_saver *s, int64_t step, ckpt_buf *stored,
                            ckpt_buf *prefix)
{
    ckpt_buf name = CKPT_BUF_INIT;
    int err;
    if (step == CKPT_NO_STEP) {
        if (strcmp(s->basename, CKPT_STATE_FILENAME) == 0)
            return ckpt__error(CKPT_EINVAL,
                               "save: without a step the checkpoint would be "
                               "named '%s', the state file's name",
                               s->basename);
        err = ckpt__buf_set(&name, s->basename);
    } else if (s->opts.pad_step_number) {
        err = ckpt__buf_printf(&name, "%s-%08" PRId64, s->basename, step);
    } else {
        err = ckpt__buf_printf(&name, "%s-%" PRId64, s->basename, step);
    }
    if (err == 0)
        err = ckpt__dir_state_name(&s->ds, name.ptr, stored, prefix);
    ckpt_buf_dispose(&name);
    return err;
}

int64_t ckpt_checkpoint_step(const char *prefix)
{
    const char *dash = prefix ? strrchr(prefix, '-') : NULL;
    int64_t v = 0;
    const char *p;
    if (!dash || !dash[1])
        return CKPT_NO_STEP;
    for (p = dash + 1; *p; p++) {
        if (*p < '0' || *p > '9')
            return CKPT_NO_STEP;
        if (v > (INT64_MAX - (*p - '0')) / 10)
            return CKPT_NO_STEP;
        v = v * 10 + (*p - '0');
    }
    return v;
}

/* If a checkpoint of this name exists, unlist it and drop its index first,
 * so a failure while overwriting never leaves mixed files looking complete. */
static int forget_existing(ckpt_saver *s, const char *stored,
                           const char *prefix)
{
    ckpt_buf index = CKPT_BUF_INIT;
    int err = ckpt_bundle_index_path(&index, prefix);
    if (err == 0 && s->fs->stat(index.ptr, NULL, NULL, s->fs->payload) == 0) {
        SAVER_LOG(s, CKPT_LOG_WARN, "overwriting existing checkpoint %s",
                  prefix);
        pthread_mutex_lock(&s->ds_mu);
        err = ckpt__dir_state_forget(&s->ds, stored);
        pthread_mutex_unlock(&s->ds_mu);
    }
    if (err == 0)
        ckpt_error_clear();
    ckpt_buf_dispose(&index);
    return err;
}

/* After a failed save (whose own cleanup may have failed too), sweep the
 * directory's temporary files before writing again. Only one save writes
 * at a time, so this never touches a save in progress. */
static void sweep_after_failure(ckpt_saver *s)
{
    if (!s->need_cleanup)
        return;
    pthread_mutex_lock(&s->ds_mu);
    if (ckpt__dir_state_remove_temps(&s->ds) == 0)
        s->need_cleanup = 0;
    pthread_mutex_unlock(&s->ds_mu);
    ckpt_error_clear();
}

/* Name the written checkpoint in the state file; on failure remove its
 * files so nothing unnamed is left behind, unless the state file on disk
 * may name it after all (its rollback failed too). */
static int commit_checkpoint(ckpt_saver *s, const char *stored,
                             const char *prefix)
{
    int err;
    int may_be_named = 0;
    pthread_mutex_lock(&s->ds_mu);
    err = ckpt__dir_state_commit(&s->ds, stored, ckpt_clock_wall(s->opts.clock),
                                 &may_be_named);
    pthread_mutex_unlock(&s->ds_mu);
    /* Never delete a checkpoint the state file on disk may still name. */
    if (err < 0 && !may_be_named) {
        ckpt_error saved = *ckpt_error_last();
        char msg[512];
        snprintf(msg, sizeof(msg), "%s", saved.message);
        ckpt__remove_checkpoint_files(s->fs, prefix);
        ckpt__error(saved.code, "%s", msg);
    }
    return err;
}

/* ---- synchronous saves -----------------------------------------------------
 */

static int check_can_save(ckpt_saver *s)
{
    if (s->closed)
        return ckpt__error(CKPT_ESTATE, "save: the saver is closed");
    if (s->nvars == 0)
        return ckpt__error(CKPT_EINVAL, "save: no variables to save");
    return 0;
}

static void record_outcome(ckpt_saver *s, const ckpt__job *job, int err,
                           double write_s, uint64_t bytes)
{
    /* mu held */
    if (err == 0) {
        s->metrics.saves_completed++;
        s->metrics.bytes_written += bytes;
        s->metrics.last_saved_step = job->step;
    } else {
        s->metrics.saves_failed++;
    }
    s->metrics.write_s_total += write_s;
    s->metrics.write_s_last = write_s;
}

int ckpt_saver_save(ckpt_saver *s, int64_t step, ckpt_buf *prefix_out)
{
    ckpt_buf stored = CKPT_BUF_INIT, prefix = CKPT_BUF_INIT;
    ckpt__job job;
    uint64_t bytes = 0;
    double t0, t1;
    int err = enter(s);
    if (err < 0)
        return err;
    err = check_can_save(s);
    if (err < 0)
        return err;
    err = checkpoint_names(s, step, &stored, &prefix);
    if (err < 0)
        goto done;
    /* Saves commit in order: let async writes finish first. */
    err = ckpt_saver_wait(s, 0, -1.0);
    if (err < 0)
        goto done;
    s->frozen = 1;
    t0 = ckpt_clock_monotonic(s->opts.clock);
    sweep_after_failure(s);
    err = forget_existing(s, stored.ptr, prefix.ptr);
    if (err == 0)
        err =
            ckpt__write_from_vars(s->fs, prefix.ptr, s->vars, s->nvars, &bytes);
    if (err == 0)
        err = commit_checkpoint(s, stored.ptr, prefix.ptr);
    t1 = ckpt_clock_monotonic(s->opts.clock);
    memset(&job, 0, sizeof(job));
    job.step = step;
    job.prefix = prefix.ptr;
    job.blocking_s = t1 - t0;
    pthread_mutex_lock(&s->mu);
    s->metrics.saves_started++;
    s->metrics.blocking_s_total += t1 - t0;
    s->metrics.blocking_s_last = t1 - t0;
    if (t1 - t0 > s->metrics.blocking_s_max)
        s->metrics.blocking_s_max = t1 - t0;
    record_outcome(s, &job, err, t1 - t0, bytes);
    push_result(s, &job, err, err < 0 ? ckpt_error_last()->message : NULL,
                t1 - t0, bytes);
    pthread_mutex_unlock(&s->mu);
    if (err < 0) {
        ckpt_error saved = *ckpt_error_last();
        char msg[512];
        snprintf(msg, sizeof(msg), "%s", saved.message);
        s->need_cleanup = 1;
        SAVER_LOG(s, CKPT_LOG_ERROR, "save of step %" PRId64 " failed: %s",
                  step, msg);
        deliver(s);
        ckpt__error(saved.code, "%s", msg);
        goto done;
    }
    SAVER_LOG(s, CKPT_LOG_INFO, "saved %s (%" PRIu64 " bytes, %.3f s)",
              prefix.ptr, bytes, t1 - t0);
    deliver(s);
    if (prefix_out)
        err = ckpt__buf_set(prefix_out, prefix.ptr);
done:
    ckpt_buf_dispose(&stored);
    ckpt_buf_dispose(&prefix);
    return err;
}

/* ---- the writer thread -----------------------------------------------------
 */

/* Write `job` (called without mu); returns with mu held, the outcome
 * recorded and the writer marked idle in the same critical section, so
 * whoever sees the metrics count the save as done also sees the writer
 * free for the next one. */
static void run_job(ckpt_saver *s, ckpt__job *job)
{
    uint64_t bytes = 0;
    double t0 = ckpt_clock_monotonic(s->opts.clock);
    double t1;
    char msg[512] = "";
    ckpt__snapshot_work seal;
    int err;
    /* The records' CRCs: pieces' combined, or the image checksummed here
     * when the snapshot's copies were plain (off the loop's wait). */
    memset(&seal, 0, sizeof(seal));
    seal.vars = s->vars;
    seal.nvars = s->nvars;
    seal.pieces = s->pieces;
    seal.npieces = s->npieces;
    seal.img = &s->images[job->image];
    seal.checksum = job->checksum;
    ckpt__image_seal(&seal);
    sweep_after_failure(s);
    err = forget_existing(s, job->stored, job->prefix);
    if (err == 0)
        err = ckpt__write_from_image(s->fs, job->prefix, s->vars, s->nvars,
                                     &s->images[job->image], s->image_bytes,
                                     s->opts.direct_io >= 0, &bytes);
    if (err == 0)
        err = commit_checkpoint(s, job->stored, job->prefix);
    t1 = ckpt_clock_monotonic(s->opts.clock);
    if (err < 0) {
        s->need_cleanup = 1;
        snprintf(msg, sizeof(msg), "save of step %" PRId64 " to %s failed: %s",
                 job->step, job->prefix, ckpt_error_last()->message);
        SAVER_LOG(s, CKPT_LOG_ERROR, "%s", msg);
    } else {
        SAVER_LOG(s, CKPT_LOG_INFO,
                  "checkpoint %s (step %" PRId64 ") is durable: %" PRIu64
                  " bytes in %.3f s",
                  job->prefix, job->step, bytes, t1 - t0);
    }
    pthread_mutex_lock(&s->mu);
    record_outcome(s, job, err, t1 - t0, bytes);
    push_result(s, job, err, err < 0 ? msg : NULL, t1 - t0, bytes);
    if (err < 0 && s->bg_error == 0) {
        s->bg_error = err;
        snprintf(s->bg_message, sizeof(s->bg_message), "%s", msg);
    }
    s->active = NULL;
    if (job->ticket > s->finished_ticket)
        s->finished_ticket = job->ticket;
}

static void free_job(ckpt__job *job)
{
    if (!job)
        return;
    ckpt__free(job->prefix);
    ckpt__free(job->stored);
    ckpt__free(job);
}

enum { HELP_NONE = 0, HELP_ASKED, HELP_RUNNING, HELP_DONE };

/* Take up a request to share a snapshot (mu held on entry and exit). */
static void help_with_snapshot(ckpt_saver *s)
{
    s->help_state = HELP_RUNNING;
    pthread_mutex_unlock(&s->mu);
    ckpt__snapshot_claim(&s->help_work);
    pthread_mutex_lock(&s->mu);
    s->help_state = HELP_DONE;
    pthread_cond_broadcast(&s->cv);
}

static void *writer_main(void *arg)
{
    ckpt_saver *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        ckpt__job *job;
        while (!s->pending && !s->stopping && s->help_state != HELP_ASKED)
            pthread_cond_wait(&s->cv, &s->mu);
        if (s->help_state == HELP_ASKED) {
            help_with_snapshot(s);
            continue;
        }
        if (!s->pending)
            break;
        job = s->pending;
        s->pending = NULL;
        s->active = job;
        pthread_mutex_unlock(&s->mu);
        run_job(s, job); /* returns with mu held */
        free_job(job);
        pthread_cond_broadcast(&s->cv);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* ---- asynchronous saves ----------------------------------------------------
 */

uint64_t ckpt_saver_staging_bytes(ckpt_saver *s)
{
    int images = s->opts.busy_policy == CKPT_BUSY_COALESCE ? 2 : 1;
    return s->image_bytes * (uint64_t)images;
}

/* Bytes of the biggest variable timed at reserve to choose where the
 * checksum is computed; states with no variable of at least MEASURE_MIN
 * bytes keep the fused copy (the difference is too small to time). */
#define MEASURE_MAX ((size_t)8 << 20)
#define MEASURE_MIN ((size_t)1 << 20)

/* Once, into the fresh first image (no write can be using it): time the
 * fused copy-and-checksum against a plain copy of the biggest variable in
 * plain memory. CKPT_SNAPSHOT_CHECKSUM=copy or =writer forces a choice
 * (for benchmarks). */
static void choose_checksum(ckpt_saver *s)
{
    const char *force = getenv("CKPT_SNAPSHOT_CHECKSUM");
    const ckpt__var *big = NULL;
    double fused_s = 0, plain_s = 0;
    size_t n;
    s->checksum = 1;
    if (force && strcmp(force, "writer") == 0) {
        s->checksum = 0;
        return;
    }
    if (force && strcmp(force, "copy") == 0)
        return;
    for (size_t i = 0; i < s->nvars; i++)
        if (!s->vars[i].v.read && (!big || s->vars[i].bytes > big->bytes))
            big = &s->vars[i];
    if (!big || big->bytes < MEASURE_MIN)
        return;
    n = big->bytes < MEASURE_MAX ? (size_t)big->bytes : MEASURE_MAX;
    s->checksum = ckpt__snapshot_measure(
        big->v.data, s->images[0].ptr + big->offset, n, 3, &fused_s, &plain_s);
    SAVER_LOG(s, CKPT_LOG_DEBUG,
              "snapshot copies: checksum %s (copy with checksum %.2f GB/s, "
              "plain copy %.2f GB/s, %zu bytes timed)",
              s->checksum ? "fused into the copy" : "computed by the writer",
              fused_s > 0 ? (double)n / fused_s / 1e9 : 0.0,
              plain_s > 0 ? (double)n / plain_s / 1e9 : 0.0, n);
}

int ckpt_saver_reserve(ckpt_saver *s)
{
    int want = s->opts.busy_policy == CKPT_BUSY_COALESCE ? 2 : 1;
    int fresh = s->num_images == 0;
    int err;
    if (s->nvars == 0)
        return ckpt__error(CKPT_EINVAL, "reserve: no variables registered");
    s->frozen = 1;
    if (fresh && !s->pieces) {
        err = ckpt__snapshot_plan(s->vars, s->nvars, CKPT__PIECE_BYTES,
                                  &s->pieces, &s->npieces);
        if (err < 0)
            return err;
    }
    while (s->num_images < want) {
        err = ckpt__image_alloc(&s->images[s->num_images], s->image_bytes,
                                s->nvars, s->npieces);
        if (err < 0)
            return err;
        s->num_images++;
    }
    if (fresh)
        choose_checksum(s);
    return 0;
}

static int start_writer(ckpt_saver *s)
{
    int rc;
    if (s->thread_started)
        return 0;
    rc = pthread_create(&s->thread, NULL, writer_main, s);
    if (rc != 0)
        return ckpt__error_errno(rc, "starting the checkpoint writer thread");
    s->thread_started = 1;
    return 0;
}

/* Decide which image the next snapshot goes to, applying the busy policy
 * (mu held). Returns the image index, or CKPT_EBUSY for a skip. */
static int choose_image(ckpt_saver *s, int64_t step)
{
    int busy = s->active || s->pending;
    if (!busy)
        return 0;
    switch (s->opts.busy_policy) {
    case CKPT_BUSY_WAIT:
        while (s->active || s->pending)
            pthread_cond_wait(&s->cv, &s->mu);
        return 0;
    case CKPT_BUSY_COALESCE:
        if (s->pending) {
            ckpt__job *old = s->pending;
            int image = old->image;
            s->pending = NULL;
            /* That trigger now counts as coalesced, not started. */
            s->metrics.saves_started--;
            s->metrics.saves_coalesced++;
            push_result(s, old, CKPT_ECANCELED,
                        "replaced by a newer snapshot (coalesce)", 0.0, 0);
            if (old->ticket > s->finished_ticket && !s->active)
                s->finished_ticket = old->ticket;
            free_job(old);
            return image;
        }
        return s->active->image == 0 ? 1 : 0;
    default:
        s->metrics.saves_skipped++;
        return ckpt__error(CKPT_EBUSY,
                           "save at step %" PRId64
                           " skipped: the previous checkpoint is still "
                           "being written",
                           step);
    }
}

/* Below this many bytes waking the writer to share a snapshot costs more
 * than it saves. */
#define SHARE_MIN_BYTES ((uint64_t)4 << 20)

/* Set up the snapshot into images[image] and, when `share` and the writer
 * is idle, ask the writer to claim pieces too. Returns whether it was
 * asked. */
static int snapshot_begin(ckpt_saver *s, int image, int share)
{
    ckpt__snapshot_work *w = &s->help_work;
    int asked = 0;
    w->vars = s->vars;
    w->nvars = s->nvars;
    w->pieces = s->pieces;
    w->npieces = s->npieces;
    w->img = &s->images[image];
    w->checksum = s->checksum;
    atomic_store(&w->next, 0);
    if (share && s->npieces > 0) {
        pthread_mutex_lock(&s->mu);
        if (!s->active && !s->pending && !s->stopping) {
            s->help_state = HELP_ASKED;
            pthread_cond_broadcast(&s->cv);
            asked = 1;
        }
        pthread_mutex_unlock(&s->mu);
    }
    return asked;
}

/* Copy the pieces nobody has claimed yet; then a request the writer has
 * not taken up is withdrawn, and one taken up is waited for (at most the
 * copy of one piece, as claims ran out). */
static void snapshot_end(ckpt_saver *s, int asked)
{
    ckpt__snapshot_claim(&s->help_work);
    if (!asked)
        return;
    pthread_mutex_lock(&s->mu);
    while (s->help_state == HELP_RUNNING)
        pthread_cond_wait(&s->cv, &s->mu);
    s->help_state = HELP_NONE;
    pthread_mutex_unlock(&s->mu);
}

/* Hand a job whose snapshot is complete to the writer. */
static void dispatch(ckpt_saver *s, ckpt__job *job)
{
    pthread_mutex_lock(&s->mu);
    s->pending = job;
    s->skips_since_dispatch = 0;
    s->metrics.saves_started++;
    s->metrics.blocking_s_total += job->blocking_s;
    s->metrics.blocking_s_last = job->blocking_s;
    if (job->blocking_s > s->metrics.blocking_s_max)
        s->metrics.blocking_s_max = job->blocking_s;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

/* Finish an overlapped snapshot: copy what the writer has not, wait for
 * its last piece, dispatch the job. The wait counts as blocking time. */
static void complete_deferred(ckpt_saver *s)
{
    ckpt__job *job = s->deferred;
    double t0, blocking;
    int64_t step;
    if (!job)
        return;
    t0 = ckpt_clock_monotonic(s->opts.clock);
    snapshot_end(s, 1);
    s->deferred = NULL;
    job->blocking_s += ckpt_clock_monotonic(s->opts.clock) - t0;
    blocking = job->blocking_s;
    step = job->step;
    dispatch(s, job); /* the writer owns (and may free) the job now */
    SAVER_LOG(s, CKPT_LOG_DEBUG,
              "overlapped snapshot of step %" PRId64
              " complete (%.6f s blocking in all); write dispatched",
              step, blocking);
}

void ckpt__saver_complete_snapshot(ckpt_saver *s)
{
    complete_deferred(s);
}

int ckpt_saver_mutation_fence(ckpt_saver *s)
{
    if (!s)
        return ckpt__error(CKPT_EINVAL, "mutation_fence: NULL saver");
    s->overlap = 1;
    complete_deferred(s);
    return 0;
}

static ckpt__job *new_job(int64_t step, int image, ckpt_buf *prefix,
                          ckpt_buf *stored)
{
    ckpt__job *job = ckpt__calloc(1, sizeof(*job));
    if (!job)
        return NULL;
    job->step = step;
    job->image = image;
    job->prefix = ckpt__buf_detach(prefix);
    job->stored = ckpt__buf_detach(stored);
    if (!job->prefix || !job->stored) {
        free_job(job);
        return NULL;
    }
    return job;
}

int ckpt_saver_save_async(ckpt_saver *s, int64_t step, uint64_t *ticket_out)
{
    ckpt_buf stored = CKPT_BUF_INIT, prefix = CKPT_BUF_INIT;
    ckpt__job *job = NULL;
    double t0 = ckpt_clock_monotonic(s->opts.clock);
    int image, asked, overlapped;
    int err;
    if (ticket_out)
        *ticket_out = 0;
    complete_deferred(s); /* the previous trigger's snapshot, if open */
    err = enter(s);
    if (err < 0)
        return err;
    err = check_can_save(s);
    if (err == 0)
        err = checkpoint_names(s, step, &stored, &prefix);
    if (err == 0)
        err = ckpt_saver_reserve(s);
    if (err == 0)
        err = start_writer(s);
    if (err < 0)
        goto done;
    pthread_mutex_lock(&s->mu);
    image = choose_image(s, step);
    pthread_mutex_unlock(&s->mu);
    if (image < 0) {
        /* A skipped trigger is retried at every step while the write runs:
         * the first skip after a dispatch is worth an INFO line, the rest
         * only DEBUG (each is still counted). */
        err = image;
        SAVER_LOG(s, s->skips_since_dispatch++ ? CKPT_LOG_DEBUG : CKPT_LOG_INFO,
                  "%s", ckpt_error_last()->message);
        goto done;
    }
    job = new_job(step, image, &prefix, &stored);
    if (!job) {
        err = ckpt__error_oom();
        goto done;
    }
    job->checksum = s->checksum;
    /* The snapshot: the only time the caller waits. The chosen image is
     * referenced by no job, so the writer cannot touch it but to help. */
    overlapped = s->overlap;
    asked = snapshot_begin(
        s, image,
        overlapped || (s->image_bytes >= SHARE_MIN_BYTES && s->npieces >= 2));
    err = ckpt__snapshot_callbacks(&s->help_work);
    if (err < 0 || !(overlapped && asked)) {
        snapshot_end(s, asked);
        if (err < 0) {
            free_job(job);
            goto done;
        }
    }
    job->blocking_s = ckpt_clock_monotonic(s->opts.clock) - t0;
    pthread_mutex_lock(&s->mu);
    job->ticket = ++s->next_ticket;
    pthread_mutex_unlock(&s->mu);
    if (ticket_out)
        *ticket_out = job->ticket;
    if (overlapped && asked) {
        /* The writer copies while the loop only reads the variables; the
         * next fence (or saver call) completes and dispatches. */
        s->deferred = job;
        SAVER_LOG(s, CKPT_LOG_DEBUG,
                  "snapshot of step %" PRId64
                  " started in %.6f s; the writer copies until the next "
                  "mutation fence",
                  step, job->blocking_s);
        goto done;
    }
    {
        double blocking = job->blocking_s;
        dispatch(s, job); /* the writer owns (and may free) the job now */
        SAVER_LOG(s, CKPT_LOG_DEBUG,
                  "snapshot of step %" PRId64
                  " taken in %.6f s; write dispatched",
                  step, blocking);
    }
done:
    ckpt_buf_dispose(&stored);
    ckpt_buf_dispose(&prefix);
    return err;
}

int ckpt_saver_poll(ckpt_saver *s, int *busy_out)
{
    int err = enter(s);
    if (busy_out) {
        pthread_mutex_lock(&s->mu);
        *busy_out = s->active || s->pending || s->deferred;
        pthread_mutex_unlock(&s->mu);
    }
    return err;
}

static void deadline_after(struct timespec *ts, double seconds)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += (time_t)seconds;
    ts->tv_nsec += (long)((seconds - (double)(time_t)seconds) * 1e9);
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

int ckpt_saver_wait(ckpt_saver *s, uint64_t ticket, double timeout_s)
{
    struct timespec deadline;
    int timed_out = 0;
    int err;
    complete_deferred(s);
    if (timeout_s >= 0)
        deadline_after(&deadline, timeout_s);
    pthread_mutex_lock(&s->mu);
    if (ticket == 0)
        ticket = s->next_ticket;
    while ((s->active || s->pending) && s->finished_ticket < ticket) {
        if (timeout_s < 0) {
            pthread_cond_wait(&s->cv, &s->mu);
        } else if (pthread_cond_timedwait(&s->cv, &s->mu, &deadline) ==
                   ETIMEDOUT) {
            timed_out =
                !(!(s->active || s->pending) || s->finished_ticket >= ticket);
            break;
        }
    }
    pthread_mutex_unlock(&s->mu);
    err = enter(s);
    if (err == 0 && timed_out)
        err = ckpt__error(CKPT_ETIMEDOUT,
                          "waiting for the checkpoint writer: timed out after "
                          "%.3f s",
                          timeout_s);
    return err;
}

static void stop_writer(ckpt_saver *s)
{
    if (!s->thread_started)
        return;
    pthread_mutex_lock(&s->mu);
    s->stopping = 1;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thread, NULL);
    s->thread_started = 0;
}

int ckpt_saver_close(ckpt_saver *s, double timeout_s)
{
    int err;
    if (s->closed)
        return ckpt__error(CKPT_ESTATE, "close: the saver is already closed");
    s->closed = 1;
    err = ckpt_saver_wait(s, 0, timeout_s);
    if (err == CKPT_ETIMEDOUT)
        return err;
    stop_writer(s);
    deliver(s);
    return err;
}

void ckpt_saver_free(ckpt_saver *s)
{
    if (!s)
        return;
    complete_deferred(s);
    stop_writer(s); /* a pending snapshot is still written */
    deliver(s);
    for (size_t i = 0; i < s->nvars; i++)
        ckpt__free(s->vars[i].name);
    ckpt__free(s->vars);
    ckpt__free(s->pieces);
    for (int i = 0; i < s->num_images; i++)
        ckpt__image_free(&s->images[i]);
    free_job(s->active);
    free_job(s->pending);
    ckpt__dir_state_dispose(&s->ds);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    pthread_mutex_destroy(&s->ds_mu);
    ckpt__free(s->basename);
    ckpt__free(s);
}

const ckpt_saver_options *ckpt_saver_get_options(const ckpt_saver *s)
{
    return &s->opts;
}

void ckpt_saver_set_on_save_done(ckpt_saver *s, ckpt_save_done_fn fn,
                                 void *payload)
{
    s->opts.on_save_done = fn;
    s->opts.on_save_done_payload = payload;
}

void ckpt_saver_get_metrics(ckpt_saver *s, ckpt_saver_metrics *out)
{
    pthread_mutex_lock(&s->mu);
    *out = s->metrics;
    pthread_mutex_unlock(&s->mu);
}

/* ---- listing ------------------------------------------------------------- */

size_t ckpt_saver_num_checkpoints(ckpt_saver *s)
{
    size_t n;
    pthread_mutex_lock(&s->ds_mu);
    n = s->ds.n;
    pthread_mutex_unlock(&s->ds_mu);
    return n;
}

int ckpt_saver_checkpoint(ckpt_saver *s, size_t i, ckpt_buf *out)
{
    int err;
    pthread_mutex_lock(&s->ds_mu);
    if (i >= s->ds.n)
        err = ckpt__error(CKPT_EINVAL, "checkpoint %zu: only %zu are kept", i,
                          s->ds.n);
    else
        err = ckpt_state_resolve(out, s->ds.dir, s->ds.paths[i]);
    pthread_mutex_unlock(&s->ds_mu);
    return err;
}

int ckpt_saver_latest(ckpt_saver *s, ckpt_buf *out)
{
    return ckpt_latest_checkpoint(out, s->fs, s->ds.dir);
}
