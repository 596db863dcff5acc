/* saver/saver.c - the public saver: options, the variable list, and the
 * public calls (save, save_async, poll, wait, close, free, metrics, the
 * kept-checkpoint list).
 *
 * A synchronous save writes straight from the variables on the caller's
 * thread. An asynchronous one copies every variable into a pre-faulted
 * staging image on the caller's thread (the only wait) and queues a job for
 * the background writer (writer.c, which states the protocol); once the
 * caller uses the mutation fence, the copy of the variables in plain
 * memory may overlap the caller's next reads of them (overlap.c). Staging
 * memory is one image (SKIP, WAIT) or two (COALESCE), fixed once the
 * variables are known. Both kinds run the same save pipeline
 * (save_pipeline.c) and report to outcomes.c, which delivers outcomes to
 * on_save_done on the caller's thread and keeps a failure as the
 * "background error" that the next save, save_async, poll, wait or close
 * returns exactly once. */
#include "io/fs_internal.h"
#include "saver_internal.h"
#include "saver_ops.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* The bytes of a saver options struct of `version` (a version-1 caller's
 * struct ends before fence_from_start). */
size_t ckpt__saver_options_size(unsigned int version)
{
    if (version == 1)
        return offsetof(ckpt_saver_options, fence_from_start);
    return sizeof(ckpt_saver_options);
}

int ckpt_saver_options_init(ckpt_saver_options *opts, unsigned int version)
{
    static const ckpt_saver_options defaults = CKPT_SAVER_OPTIONS_INIT;
    CKPT__CHECK_ARG(opts);
    return ckpt__options_init(
        opts, &defaults, ckpt__saver_options_size(version), version,
        CKPT_SAVER_OPTIONS_VERSION, "saver options", "CKPT_SAVER_OPTIONS_INIT");
}

void ckpt__saver_options_copy(ckpt_saver_options *dst,
                              const ckpt_saver_options *src)
{
    static const ckpt_saver_options defaults = CKPT_SAVER_OPTIONS_INIT;
    ckpt__options_merge(dst, &defaults, sizeof(*dst), src,
                        src ? ckpt__saver_options_size(src->version) : 0);
}

static int dir_probe(const char *name, void *payload)
{
    (void)name;
    (void)payload;
    return 1; /* one entry is enough */
}

/* Whether `dir`, which does not exist, reads as TensorFlow's save_path
 * ("<directory>/model.ckpt"): its last part is the basename or ends in
 * ".ckpt", and the part before it is a directory. */
static int looks_like_save_path(const ckpt_fs *fs, const char *dir,
                                const char *basename)
{
    const char *slash = strrchr(dir, '/');
    const char *last = slash ? slash + 1 : dir;
    size_t n = strlen(last);
    char *parent;
    int err;
    if (strcmp(last, basename) != 0 &&
        (n < 5 || strcmp(last + n - 5, ".ckpt") != 0))
        return 0;
    if (!slash)
        return 1; /* relative to the working directory, which exists */
    parent = ckpt__strndup(dir, slash == dir ? 1 : (size_t)(slash - dir));
    if (!parent)
        return 0;
    err = ckpt__fs_list(fs, parent, dir_probe, NULL); /* message replaced */
    ckpt__free(parent);
    return err >= 0;
}

/* Whether `dir` is a checkpoint's prefix: <dir>.index exists (a restore
 * path given where the saver wants the directory). */
static int is_checkpoint_prefix(const ckpt_fs *fs, const char *dir)
{
    ckpt_buf index = CKPT_BUF_INIT;
    int yes = ckpt__buf_printf(&index, "%s.index", dir) == 0 &&
              ckpt__fs_stat(fs, index.ptr, NULL, NULL) == 0;
    ckpt_buf_dispose(&index);
    return yes;
}

/* For a `dir` that does not exist: whether the nearest part of its path
 * that does exist is no directory (a file where the path needs one, which
 * mkdir -p cannot fix); that part goes to `out`. */
static bool parent_is_file(const ckpt_fs *fs, const char *dir, ckpt_buf *out)
{
    size_t len = strlen(dir);
    if (ckpt__buf_put(out, dir, len + 1) < 0) {
        ckpt_error_clear();
        return false;
    }
    for (;;) {
        char *path = out->ptr;
        int err;
        while (len > 1 && path[len - 1] == '/') /* "a/b/" is "a/b" */
            len--;
        while (len > 0 && path[len - 1] != '/')
            len--;
        while (len > 1 && path[len - 1] == '/')
            len--;
        if (len == 0 || (len == 1 && path[0] == '/'))
            return false; /* the root, or a relative path's start */
        path[len] = '\0';
        if (ckpt__fs_stat(fs, path, NULL, NULL) != 0) {
            ckpt_error_clear();
            continue;
        }
        err = ckpt__fs_list(fs, path, dir_probe, NULL);
        ckpt_error_clear();
        return err == CKPT_ENOTFOUND; /* it exists, yet cannot be listed */
    }
}

int ckpt__saver_check_dir(const ckpt_fs *fs, const char *dir,
                          const char *basename)
{
    ckpt_buf file = CKPT_BUF_INIT;
    int err = ckpt__fs_list(fs, dir, dir_probe, NULL);
    if (err == 1)
        err = 0;
    if (err == CKPT_ENOTFOUND) {
        /* listing a file fails as ENOTDIR, which maps to not found too */
        int exists = ckpt__fs_stat(fs, dir, NULL, NULL) == 0;
        if (!exists && is_checkpoint_prefix(fs, dir))
            return ckpt__error(
                CKPT_ENOTFOUND,
                "checkpoint directory %s does not exist: that is a "
                "checkpoint's prefix (%s.index exists); open the saver on "
                "the directory it is in and restore the prefix with "
                "ckpt_saver_restore",
                dir, dir);
        if (!exists && looks_like_save_path(fs, dir, basename))
            return ckpt__error(
                CKPT_ENOTFOUND,
                "checkpoint directory %s does not exist (a saver takes the "
                "directory, not TensorFlow's save_path: open the directory "
                "it is in, and set the options' basename to its last part "
                "unless that is '%s', the default)",
                dir, CKPT__DEFAULT_BASENAME);
        if (exists)
            return ckpt__error(CKPT_ENOTFOUND,
                               "checkpoint directory %s is not a directory",
                               dir);
        if (parent_is_file(fs, dir, &file)) {
            err = ckpt__error(CKPT_ENOTFOUND,
                              "checkpoint directory %s cannot exist: %s, "
                              "on its path, is a file, not a directory",
                              dir, file.ptr);
            ckpt_buf_dispose(&file);
            return err;
        }
        ckpt_buf_dispose(&file);
        return ckpt__error(CKPT_ENOTFOUND,
                           "checkpoint directory %s does not exist (a saver "
                           "does not create it, as TensorFlow's Saver does "
                           "not: create it first, e.g. with mkdir -p; the "
                           "checkpoint hook creates its own)",
                           dir);
    }
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

int ckpt__saver_options_check(const ckpt_saver_options *o, const char *what)
{
    int err =
        ckpt__options_check_version(o->version, CKPT_SAVER_OPTIONS_VERSION,
                                    what, "CKPT_SAVER_OPTIONS_INIT");
    if (err < 0)
        return err;
    if (o->max_to_keep < CKPT_KEEP_ALL)
        return ckpt__error(CKPT_EINVAL,
                           "%s: max_to_keep %d is negative (use "
                           "CKPT_KEEP_ALL to keep every checkpoint)",
                           what, o->max_to_keep);
    if (o->direct_io < CKPT_DIRECT_IO_OFF || o->direct_io > CKPT_DIRECT_IO_ON)
        return ckpt__error(CKPT_EINVAL,
                           "%s: unknown direct_io %d (use "
                           "CKPT_DIRECT_IO_ON or CKPT_DIRECT_IO_OFF)",
                           what, o->direct_io);
    if (!(o->keep_checkpoint_every_n_hours >= 0))
        return ckpt__error(
            CKPT_EINVAL, "%s: keep_checkpoint_every_n_hours is %s", what,
            o->keep_checkpoint_every_n_hours < 0 ? "negative" : "NaN");
    if (o->busy_policy < CKPT_BUSY_SKIP || o->busy_policy > CKPT_BUSY_COALESCE)
        return ckpt__error(CKPT_EINVAL, "%s: unknown busy_policy %d", what,
                           o->busy_policy);
    err = ckpt__fs_check(o->fs, what);
    if (err == 0)
        err = ckpt__clock_check(o->clock, what);
    if (err < 0)
        return err;
    if (o->basename && !ckpt__basename_is_file_name(o->basename))
        return ckpt__error(CKPT_EINVAL,
                           "%s: basename '%s' must be a non-empty "
                           "file name without '/', not '.' or '..'",
                           what, o->basename);
    if (o->basename && strlen(o->basename) > CKPT_BASENAME_MAX)
        return ckpt__error(CKPT_EINVAL,
                           "%s: basename of %zu bytes is longer than %d "
                           "(with '-<step>', '.data-00000-of-00001' and a "
                           "temporary suffix its files' names must fit in "
                           "255 bytes): '%.40s...'",
                           what, strlen(o->basename), CKPT_BASENAME_MAX,
                           o->basename);
    return 0;
}

/* ckpt_saver_open after its check of `out`. */
static int open_saver(ckpt_saver **out, const char *dir,
                      const ckpt_saver_options *opts)
{
    ckpt_saver_options defaults = CKPT_SAVER_OPTIONS_INIT;
    ckpt_saver *s = NULL;
    int err;
    *out = NULL;
    if (!dir || !*dir)
        return ckpt__error(CKPT_EINVAL,
                           "saver: no checkpoint directory given (dir is %s)",
                           dir ? "an empty string" : "NULL");
    if (!opts)
        opts = &defaults;
    err = ckpt__saver_options_check(opts, "saver options");
    if (err < 0)
        return err;
    err = ckpt__saver_check_dir(ckpt_fs_or_default(opts->fs), dir,
                                ckpt__saver_basename(opts->basename));
    if (err < 0)
        return err;
    s = ckpt__calloc(1, sizeof(*s));
    if (!s)
        return ckpt__error_oom();
    ckpt__saver_options_copy(&s->opts, opts);
    s->pid = ckpt__saver_pid();
    s->overlap = s->opts.fence_from_start != 0;
    if (s->opts.max_to_keep == 0)
        s->opts.max_to_keep = CKPT__DEFAULT_MAX_TO_KEEP;
    s->fs = ckpt_fs_or_default(opts->fs);
    s->basename = ckpt__strdup(ckpt__saver_basename(opts->basename));
    s->opts.basename = s->basename;
    s->metrics.last_saved_step = CKPT_NO_STEP;
    s->repeats.step = CKPT_NO_STEP;
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

int ckpt_saver_open(ckpt_saver **out, const char *dir,
                    const ckpt_saver_options *opts)
{
    int cancel, err;
    CKPT__CHECK_ARG(out);
    /* Not cut short by a cancel: it holds the process-wide mutex of the
     * directory locks across open() and close() (dir_lock.c), both
     * cancellation points, and recovers the directory (reads, syncs,
     * removals); cut short, it left that mutex held (every later open in
     * the process blocked for ever) or the directory half recovered, and
     * its caller never learnt the outcome. */
    cancel = ckpt__cancel_off();
    err = open_saver(out, dir, opts);
    ckpt__cancel_restore(cancel);
    return err;
}

static int add_var(ckpt_saver *s, const ckpt_var *var)
{
    ckpt__var *v;
    int64_t bytes;
    int err;
    if (s->ops)
        return ckpt__error(CKPT_ENOTSUP,
                           "add_var: '%s' goes to the saver this handle "
                           "wraps (register variables there)",
                           var && var->name ? var->name : "(null)");
    err = ckpt__check_var_name("add_var", var->name);
    if (err < 0)
        return err;
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
                           ckpt__dtype_label(var->dtype));
    err = ckpt_tensor_byte_size(&bytes, var->dtype, &var->shape);
    if (err < 0)
        return ckpt__error_prefix(err, "add_var '%s'", var->name);
    if (!var->data && !var->read)
        return ckpt__error(CKPT_EINVAL,
                           "add_var '%s': neither data nor a read callback",
                           var->name);
    if (ckpt__name_index_find(&s->var_names, var->name) != SIZE_MAX)
        return ckpt__error(CKPT_EEXISTS,
                           "add_var '%s': a variable of that name exists",
                           var->name);
    /* Offsets in the data file are int64, and COALESCE stages two images
     * of the whole state: the sum must stay below half of INT64_MAX. */
    if ((uint64_t)bytes > CKPT__MAX_STATE_BYTES - s->image_bytes)
        return ckpt__error(CKPT_EINVAL,
                           "add_var '%s': %lld bytes on top of the %llu "
                           "already registered exceed the largest state a "
                           "saver holds (%llu bytes)",
                           var->name, (long long)bytes,
                           (unsigned long long)s->image_bytes,
                           (unsigned long long)CKPT__MAX_STATE_BYTES);
    if (ckpt__name_index_reserve(&s->var_names, s->nvars + 1) < 0)
        return ckpt_error_last()->code;
    if (ckpt__reserve_one(&s->vars, &s->cap_vars, s->nvars, sizeof(*s->vars),
                          16) < 0)
        return CKPT_ENOMEM;
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
    ckpt__name_index_put(&s->var_names, v->name, s->nvars);
    s->nvars++;
    return 0;
}

/* An argument refused names the saver (its directory): a program with
 * several savers learns which one. */
int ckpt_saver_add_var(ckpt_saver *s, const ckpt_var *var)
{
    int err;
    CKPT__CHECK_ARG(s);
    if (!s->ops) { /* a wrapped saver's refusal comes first */
        CKPT__CHECK_ARG(var);
    }
    err = add_var(s, var);
    if (err < 0)
        return ckpt__error_prefix(err, "saver %s", ckpt__saver_say(s));
    return 0;
}

/* ---- naming ---------------------------------------------------------------
 */

static int checkpoint_names(ckpt_saver *s, int64_t step, ckpt_buf *stored,
                            ckpt_buf *prefix)
{
    int err = ckpt__dir_state_checkpoint_name(
        &s->ds, s->basename, s->opts.pad_step_number, step, stored, prefix);
    if (err < 0)
        return ckpt__error_prefix(err, "saver %s", ckpt__saver_say(s));
    return 0;
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

/* ---- synchronous saves -----------------------------------------------------
 */

/* `op` names the call in messages ("save", "save_async"). */
static int check_can_save(ckpt_saver *s, const char *op)
{
    if (s->closed)
        return ckpt__error(CKPT_ESTATE, "saver %s: %s: the saver is closed",
                           ckpt__saver_say(s), op);
    if (s->nvars == 0)
        return ckpt__error(CKPT_EINVAL,
                           "saver %s: %s: no variables to save (register "
                           "them with ckpt_saver_add_var first)",
                           ckpt__saver_say(s), op);
    /* one saver of this process saves into a directory */
    return ckpt__dir_lock_claim(s->ds.lock, &s->ds, s->ds.lock_claims,
                                s->ds.dir);
}

static int saver_save(ckpt_saver *s, int64_t step, ckpt_buf *prefix_out)
{
    ckpt_buf stored = CKPT_BUF_INIT, prefix = CKPT_BUF_INIT;
    ckpt__job job = {0};
    ckpt__kept_list evicted = {0};
    ckpt__step_words words;
    uint64_t bytes = 0;
    double write_s = 0.0;
    int err;
    CKPT__CHECK_ARG(s);
    if (s->ops)
        return s->ops->save(s->ops_self, step, prefix_out);
    err = ckpt__saver_enter(s);
    if (err < 0)
        return err;
    err = check_can_save(s, "save");
    if (err < 0)
        return err;
    err = checkpoint_names(s, step, &stored, &prefix);
    if (err < 0)
        goto done;
    ckpt__step_repeats_note(&s->repeats, step, prefix.ptr, &s->opts);
    /* Saves commit in order: let async writes finish first. */
    err = ckpt_saver_wait(s, 0, -1.0);
    if (err == 0)
        err = ckpt__saver_check_own_memory(s, "save");
    if (err < 0)
        goto done;
    s->frozen = 1;
    job.step = step;
    job.prefix = prefix.ptr;
    job.stored = stored.ptr;
    err = ckpt__saver_write_sync(s, &job, &bytes, &write_s, &evicted);
    job.blocking_s = write_s; /* the caller waited for all of it */
    pthread_mutex_lock(&s->mu);
    ckpt__saver_count_started(s, write_s);
    ckpt__saver_record_outcome(s, &job, err,
                               err < 0 ? ckpt_error_last()->message : NULL,
                               write_s, bytes);
    pthread_mutex_unlock(&s->mu);
    if (err < 0) {
        ckpt__saved_error saved;
        ckpt__error_save(&saved);
        CKPT__SAVER_LOG(s, CKPT_LOG_ERROR, "save %s failed: %s",
                        ckpt__step_say(&words, step), saved.message);
        ckpt__saver_deliver(s);
        ckpt__error_restore(&saved);
        /* said as an asynchronous save's failure is (writer.c) */
        err = ckpt__error_prefix(err, "save %s to %s failed",
                                 ckpt__step_say(&words, step), prefix.ptr);
        goto done;
    }
    CKPT__SAVER_LOG(s, CKPT_LOG_INFO, "saved %s (%" PRIu64 " bytes, %.3f s)",
                    prefix.ptr, bytes, write_s);
    ckpt__saver_evict(s, &evicted);
    ckpt__saver_deliver(s);
    if (prefix_out)
        err = ckpt__buf_set(prefix_out, prefix.ptr);
done:
    ckpt_buf_dispose(&stored);
    ckpt_buf_dispose(&prefix);
    return err;
}

int ckpt_saver_save(ckpt_saver *s, int64_t step, ckpt_buf *prefix_out)
{
    int err;
    CKPT__CHECK_ARG(s);
    err = ckpt__saver_call_begin(s, "save");
    if (err < 0)
        return err;
    err = saver_save(s, step, prefix_out);
    ckpt__saver_call_end(s);
    return err;
}

/* ---- asynchronous saves ----------------------------------------------------
 */

uint64_t ckpt_saver_staging_bytes(ckpt_saver *s)
{
    int images;
    if (!s || s->ops)
        return 0;
    images = s->opts.busy_policy == CKPT_BUSY_COALESCE ? 2 : 1;
    return s->image_bytes * (uint64_t)images;
}

int ckpt_saver_reserve(ckpt_saver *s)
{
    int want;
    CKPT__CHECK_ARG(s);
    if (s->ops)
        return 0;
    want = s->opts.busy_policy == CKPT_BUSY_COALESCE ? 2 : 1;
    if (s->nvars == 0)
        return ckpt__error(CKPT_EINVAL,
                           "saver %s: reserve: no variables registered",
                           ckpt__saver_say(s));
    if (!s->frozen) {
        int err = ckpt__saver_check_own_memory(s, "reserve");
        if (err < 0)
            return err;
    }
    s->frozen = 1;
    if (!s->pieces) {
        int err = ckpt__snapshot_plan(s->vars, s->nvars, CKPT__PIECE_BYTES,
                                      &s->pieces, &s->npieces);
        if (err < 0)
            return err;
        s->neager = ckpt__snapshot_eager_pieces(s->pieces, s->npieces);
    }
    while (s->num_images < want) {
        /* Overlapped from the start: the writer's copies fault it in, off
         * the caller's path. */
        int err =
            ckpt__image_alloc(&s->images[s->num_images], s->image_bytes,
                              s->nvars, s->npieces, !s->opts.fence_from_start);
        if (err < 0)
            return err;
        if (++s->num_images == 1)
            ckpt__saver_choose_checksum(s); /* into the fresh image */
    }
    return 0;
}

/* A job for the writer, owning copies of the names. */
static int new_job(ckpt__job **out, int64_t step, int image, ckpt_buf *stored,
                   ckpt_buf *prefix)
{
    ckpt__job *job = ckpt__calloc(1, sizeof(*job));
    *out = NULL;
    if (!job)
        return ckpt__error_oom();
    job->step = step;
    job->image = image;
    job->prefix = ckpt__buf_detach(prefix);
    job->stored = ckpt__buf_detach(stored);
    if (!job->prefix || !job->stored) {
        ckpt__job_free(job);
        return ckpt__error_oom();
    }
    *out = job;
    return 0;
}

static int saver_save_async(ckpt_saver *s, int64_t step, uint64_t *ticket_out)
{
    ckpt_buf stored = CKPT_BUF_INIT, prefix = CKPT_BUF_INIT;
    ckpt__job *job = NULL;
    ckpt__step_words words;
    double t0;
    uint64_t ticket;
    int image;
    int err;
    if (ticket_out)
        *ticket_out = 0;
    CKPT__CHECK_ARG(s);
    if (s->ops)
        return s->ops->save_async(s->ops_self, step, ticket_out);
    t0 = ckpt_clock_monotonic(s->opts.clock);
    ckpt__saver_complete_snapshot(s); /* the previous trigger's, if open */
    err = ckpt__saver_enter(s);
    if (err < 0)
        return err;
    err = check_can_save(s, "save_async");
    if (err == 0)
        err = checkpoint_names(s, step, &stored, &prefix);
    if (err == 0)
        err = ckpt_saver_reserve(s);
    if (err == 0)
        err = ckpt__writer_start(s);
    if (err < 0)
        goto done;
    pthread_mutex_lock(&s->mu);
    image = ckpt__writer_choose_image(s, step);
    pthread_mutex_unlock(&s->mu);
    if (image < 0) {
        /* A skipped trigger is retried at every step while the write runs,
         * and the caller has the error (the checkpoint hook logs skips on
         * its own schedule): only DEBUG here, each still counted. */
        err = image;
        CKPT__SAVER_LOG(s, CKPT_LOG_DEBUG, "%s", ckpt_error_last()->message);
        goto done;
    }
    /* a save, not a skipped retry */
    ckpt__step_repeats_note(&s->repeats, step, prefix.ptr, &s->opts);
    err = new_job(&job, step, image, &stored, &prefix);
    if (err < 0)
        goto done;
    job->checksum = s->cs.checksum;
    /* The snapshot: the only time the caller waits (with the fence in use,
     * it may leave the copy to the writer: 1). A snapshot taken here is
     * timed, with the machine's clock (not the saver's, which a test may
     * fake), for the choice of where its checksum is computed. */
    if (s->overlap) {
        err = ckpt__saver_overlap_snapshot(s, job);
    } else {
        double c0 = ckpt_clock_monotonic(NULL);
        err = ckpt__writer_snapshot(s, image, job->checksum);
        if (err == 0)
            ckpt__saver_snapshot_timed(s, job->checksum,
                                       ckpt_clock_monotonic(NULL) - c0);
    }
    if (err < 0) {
        /* logged and said as a synchronous save's failure is (save_sync) */
        CKPT__SAVER_LOG(s, CKPT_LOG_ERROR, "save %s failed: %s",
                        ckpt__step_say(&words, step),
                        ckpt_error_last()->message);
        err = ckpt__error_prefix(err, "save %s to %s failed",
                                 ckpt__step_say(&words, step), job->prefix);
        ckpt__job_free(job);
        goto done;
    }
    job->blocking_s = ckpt_clock_monotonic(s->opts.clock) - t0;
    if (err == 1) {
        ticket = ckpt__writer_number(s, job);
        /* The trigger's own wait, until the fence adds its part. */
        pthread_mutex_lock(&s->mu);
        s->metrics.blocking_s_last = job->blocking_s;
        pthread_mutex_unlock(&s->mu);
        CKPT__SAVER_LOG(s, CKPT_LOG_DEBUG,
                        "snapshot %s started in %.6f s; the writer copies "
                        "until the next mutation fence",
                        ckpt__step_say(&words, step), job->blocking_s);
        if (ticket_out)
            *ticket_out = ticket;
        err = 0;
        goto done;
    }
    CKPT__SAVER_LOG(s, CKPT_LOG_DEBUG,
                    "snapshot %s taken in %.6f s; write dispatched",
                    ckpt__step_say(&words, step), job->blocking_s);
    ticket = ckpt__writer_submit(s, job); /* the writer owns the job now */
    if (ticket_out)
        *ticket_out = ticket;
done:
    ckpt_buf_dispose(&stored);
    ckpt_buf_dispose(&prefix);
    return err;
}

int ckpt_saver_save_async(ckpt_saver *s, int64_t step, uint64_t *ticket_out)
{
    int err;
    if (ticket_out)
        *ticket_out = 0;
    CKPT__CHECK_ARG(s);
    err = ckpt__saver_call_begin(s, "save_async");
    if (err < 0)
        return err;
    err = saver_save_async(s, step, ticket_out);
    ckpt__saver_call_end(s);
    return err;
}

static int saver_poll(ckpt_saver *s, int *busy_out)
{
    int err;
    CKPT__CHECK_ARG(s);
    if (s->ops)
        return s->ops->poll(s->ops_self, busy_out);
    err = ckpt__saver_enter(s);
    if (busy_out) {
        pthread_mutex_lock(&s->mu);
        *busy_out = s->active || s->pending || s->deferred;
        pthread_mutex_unlock(&s->mu);
    }
    return err;
}

int ckpt_saver_poll(ckpt_saver *s, int *busy_out)
{
    int err;
    CKPT__CHECK_ARG(s);
    err = ckpt__saver_call_begin(s, "poll");
    if (err < 0)
        return err;
    err = saver_poll(s, busy_out);
    ckpt__saver_call_end(s);
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

/* Whether the save `ticket` or a deletion of what retention evicted is
 * still to finish (mu held). */
static int writer_owes(const ckpt_saver *s, uint64_t ticket)
{
    return ((s->active || s->pending) && s->finished_ticket < ticket) ||
           s->eviction.pending;
}

static int saver_wait(ckpt_saver *s, uint64_t ticket, double timeout_s)
{
    struct timespec deadline;
    int timed_out = 0;
    int err;
    CKPT__CHECK_ARG(s);
    err = ckpt__seconds_check(timeout_s, "wait", "timeout_s");
    if (err < 0)
        return ckpt__error_prefix(err, "saver %s", ckpt__saver_say(s));
    timeout_s = ckpt__timeout_or_unbounded(timeout_s);
    if (s->ops)
        return s->ops->wait(s->ops_self, ticket, timeout_s);
    ckpt__saver_complete_snapshot(s);
    if (timeout_s >= 0)
        deadline_after(&deadline, timeout_s);
    pthread_mutex_lock(&s->mu);
    if (ticket > s->next_ticket) {
        uint64_t last = s->next_ticket;
        pthread_mutex_unlock(&s->mu);
        return ckpt__error(CKPT_EINVAL,
                           "saver %s: wait: ticket %llu was never issued (the "
                           "last save_async gave %llu)",
                           ckpt__saver_say(s), (unsigned long long)ticket,
                           (unsigned long long)last);
    }
    if (ticket == 0)
        ticket = s->next_ticket;
    while (writer_owes(s, ticket)) {
        if (timeout_s < 0) {
            pthread_cond_wait(&s->cv, &s->mu);
        } else if (pthread_cond_timedwait(&s->cv, &s->mu, &deadline) ==
                   ETIMEDOUT) {
            timed_out = writer_owes(s, ticket);
            break;
        }
    }
    pthread_mutex_unlock(&s->mu);
    /* Timed out, the write still runs: say so even with an earlier
     * failure to return, which stays for the next call. Returning that
     * failure instead hid the timeout from close, which then joined the
     * writer for as long as its write took. */
    if (timed_out) {
        ckpt__saver_deliver(s);
        return ckpt__error(CKPT_ETIMEDOUT,
                           "saver %s: waiting for the checkpoint writer: "
                           "timed out after %.3f s",
                           ckpt__saver_say(s), timeout_s);
    }
    return ckpt__saver_enter(s);
}

int ckpt_saver_wait(ckpt_saver *s, uint64_t ticket, double timeout_s)
{
    int err;
    CKPT__CHECK_ARG(s);
    err = ckpt__saver_call_begin(s, "wait");
    if (err < 0)
        return err;
    err = saver_wait(s, ticket, timeout_s);
    ckpt__saver_call_end(s);
    return err;
}

static int saver_close(ckpt_saver *s, double timeout_s)
{
    int err;
    CKPT__CHECK_ARG(s);
    err = ckpt__seconds_check(timeout_s, "close", "timeout_s");
    if (err < 0) /* still open */
        return ckpt__error_prefix(err, "saver %s", ckpt__saver_say(s));
    if (s->ops)
        return s->ops->close(s->ops_self, timeout_s);
    if (s->closed)
        return ckpt__error(CKPT_ESTATE,
                           "saver %s: close: the saver is already closed",
                           ckpt__saver_say(s));
    s->closed = 1;
    err = ckpt_saver_wait(s, 0, timeout_s);
    if (err == CKPT_ETIMEDOUT)
        return err;
    ckpt__writer_stop(s);
    ckpt__saver_deliver(s);
    return err;
}

int ckpt_saver_close(ckpt_saver *s, double timeout_s)
{
    int err;
    CKPT__CHECK_ARG(s);
    err = ckpt__saver_call_begin(s, "close");
    if (err < 0)
        return err;
    err = saver_close(s, timeout_s);
    ckpt__saver_call_end(s);
    return err;
}

/* ckpt_saver_free of a saver that wraps no ops. */
static void free_own(ckpt_saver *s)
{
    ckpt__saver_complete_snapshot(s);
    ckpt__writer_stop(s); /* a pending snapshot is still written */
    ckpt__saver_deliver(s);
    for (size_t i = 0; i < s->nvars; i++)
        ckpt__free(s->vars[i].name);
    ckpt__free(s->vars);
    ckpt__name_index_dispose(&s->var_names);
    ckpt__free(s->pieces);
    for (int i = 0; i < s->num_images; i++)
        ckpt__image_free(&s->images[i]);
    ckpt__job_free(s->active);
    ckpt__job_free(s->pending);
    ckpt__dir_state_dispose(&s->ds);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    pthread_mutex_destroy(&s->ds_mu);
    ckpt__free(s->basename);
    ckpt__free(s);
}

/* Say why free was refused (it returns nothing): through the saver's log,
 * or on stderr when it has none, as a refused ckpt_hook_free does. */
static void free_refused(const ckpt_saver *s)
{
    const char *msg = ckpt_error_last()->message;
    if (s->ops && s->owner_free) /* the owner's log is its own */
        ckpt_log_stderr(CKPT_LOG_ERROR, msg, NULL);
    else if (s->opts.log)
        CKPT__SAVER_LOG(s, CKPT_LOG_ERROR, "%s", msg);
    else /* the whole message: a copy into 512 bytes cut a long directory */
        ckpt_log_stderr(CKPT_LOG_ERROR, msg, NULL);
}

void ckpt_saver_free(ckpt_saver *s)
{
    int cancel;
    if (!s)
        return;
    /* A handle another saver owns and frees with itself (the distributed
     * saver's): freeing it here would leave that saver to free it again. */
    if (s->ops && s->owner_free) {
        ckpt__error(CKPT_ESTATE,
                    "ckpt_saver_free: this handle belongs to the saver it "
                    "was taken from; %s frees both: call that instead",
                    s->owner_free);
        free_refused(s);
        return;
    }
    /* From a log callback on the writer thread: freeing would join the
     * thread from itself. Refused (logged through the error slot), the
     * saver stays as it is. */
    if (ckpt__saver_refuse_writer_thread(s, "free") < 0)
        return;
    /* Another thread inside a call: freeing would pull the saver from
     * under it. Refused, the saver stays. */
    if (ckpt__saver_call_begin(s, "free") < 0) {
        free_refused(s);
        return;
    }
    ckpt__saver_call_end(s);
    /* From on_save_done: the delivery that called it still walks the
     * saver. Refused, and said, rather than freed under it. */
    if (s->delivering > 0) {
        ckpt__error(CKPT_ESTATE,
                    "saver %s: free: called from on_save_done; free the "
                    "saver after the call that delivered it",
                    ckpt__saver_say(s));
        free_refused(s);
        return;
    }
    /* Not cut short by a cancel: it joins the writer, a cancellation
     * point, and would leave the saver half freed. */
    cancel = ckpt__cancel_off();
    if (s->ops)
        ckpt__saver_ops_free(s);
    else
        free_own(s);
    ckpt__cancel_restore(cancel);
}

int ckpt_saver_saves_var(ckpt_saver *s, const char *name, const void *data)
{
    CKPT__CHECK_ARG(s);
    CKPT__CHECK_ARG(name);
    if (s->ops)
        return ckpt__saver_ops_saves_var(s, name, data);
    for (size_t i = 0; i < s->nvars; i++) {
        const ckpt_var *v = &s->vars[i].v;
        if (strcmp(v->name, name) == 0)
            return !data || !v->data || v->data == data;
    }
    return 0;
}

long ckpt__saver_num_vars(const ckpt_saver *s)
{
    if (!s || s->ops)
        return -1;
    return (long)s->nvars;
}

const ckpt_saver_options *ckpt_saver_get_options(const ckpt_saver *s)
{
    if (s && s->ops)
        return s->ops->get_options(s->ops_self);
    return s ? &s->opts : NULL;
}

void ckpt_saver_set_on_save_done(ckpt_saver *s, ckpt_save_done_fn fn,
                                 void *payload)
{
    if (!s)
        return;
    if (s->ops) {
        s->ops->set_on_save_done(s->ops_self, fn, payload);
        return;
    }
    s->opts.on_save_done = fn;
    s->opts.on_save_done_payload = payload;
}

void ckpt_saver_get_metrics(ckpt_saver *s, ckpt_saver_metrics *out)
{
    if (!s || !out)
        return;
    if (s->ops) {
        s->ops->get_metrics(s->ops_self, out);
        return;
    }
    pthread_mutex_lock(&s->mu);
    *out = s->metrics;
    pthread_mutex_unlock(&s->mu);
}

/* ---- listing ------------------------------------------------------------- */

size_t ckpt_saver_num_checkpoints(ckpt_saver *s)
{
    size_t n;
    if (!s || s->ops)
        return 0;
    pthread_mutex_lock(&s->ds_mu);
    n = s->ds.kept.n;
    pthread_mutex_unlock(&s->ds_mu);
    return n;
}

int ckpt_saver_checkpoint(ckpt_saver *s, size_t i, ckpt_buf *out)
{
    int err;
    CKPT__CHECK_ARG(s);
    CKPT__CHECK_ARG(out);
    if (s->ops)
        return ckpt__error(CKPT_ENOTSUP,
                           "checkpoint %zu: a wrapped saver does not list "
                           "its checkpoints",
                           i);
    pthread_mutex_lock(&s->ds_mu);
    if (i >= s->ds.kept.n)
        err = ckpt__error(CKPT_EINVAL,
                          "checkpoint %zu: out of range: the saver keeps "
                          "%zu checkpoint(s) (ckpt_saver_num_checkpoints; "
                          "0 is the oldest)",
                          i, s->ds.kept.n);
    else
        err = ckpt_state_resolve(out, s->ds.dir, s->ds.kept.paths[i]);
    pthread_mutex_unlock(&s->ds_mu);
    return err;
}

int ckpt_saver_latest(ckpt_saver *s, ckpt_buf *out)
{
    int err;
    CKPT__CHECK_ARG(s);
    CKPT__CHECK_ARG(out);
    if (s->ops)
        return s->ops->latest(s->ops_self, out);
    /* The directory's path names another one now (a relative path after a
     * chdir, a directory moved or swapped): its latest is not this
     * saver's, and "no checkpoint" would have the caller start afresh. */
    err = ckpt__dir_lock_check(s->ds.lock, s->ds.dir);
    if (err < 0) {
        ckpt__saved_error saved;
        ckpt__error_save(&saved);
        return ckpt__error(CKPT_ESTATE, "saver %s: latest: %s",
                           ckpt__saver_say(s), saved.message);
    }
    return ckpt_latest_checkpoint(out, s->fs, s->ds.dir);
}
