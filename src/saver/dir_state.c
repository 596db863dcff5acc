/* saver/dir_state.c - the checkpoint directory as the saver sees it: the
 * kept checkpoints (the state file's list), retention (max_to_keep and
 * keep_checkpoint_every_n_hours), recovery of a restarted job's directory,
 * and removal of evicted checkpoints and of temporary files.
 *
 * Safety: retention only ever deletes files of checkpoints that live in this
 * directory; a state-file entry pointing elsewhere (absolute, or with a '/'
 * or "..") is listed as TF would list it but never deleted. */
#include "saver_internal.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DS_LOG(ds, level, ...)                                                 \
    ckpt__log((ds)->log, (ds)->log_payload, (ds)->log_level, (level),          \
              __VA_ARGS__)

int ckpt__dir_state_init(ckpt__dir_state *ds, const char *dir,
                         const ckpt_saver_options *opts)
{
    memset(ds, 0, sizeof(*ds));
    ds->fs = ckpt_fs_or_default(opts->fs);
    ds->clock = opts->clock;
    ds->max_to_keep = opts->max_to_keep;
    ds->keep_hours = opts->keep_checkpoint_every_n_hours;
    ds->log = opts->log;
    ds->log_payload = opts->log_payload;
    ds->log_level = opts->log_level;
    ds->dir = ckpt__strdup(dir);
    ds->basename = ckpt__strdup(opts->basename ? opts->basename : "model.ckpt");
    if (!ds->dir || !ds->basename)
        return ckpt__error_oom();
    if (opts->absolute_paths) {
        char real[PATH_MAX];
        if (!realpath(dir, real))
            return ckpt__error_errno(errno, "realpath %s", dir);
        ds->abs_dir = ckpt__strdup(real);
        if (!ds->abs_dir)
            return ckpt__error_oom();
    }
    if (ds->keep_hours > 0)
        ds->next_keep_time =
            ckpt_clock_wall(ds->clock) + ds->keep_hours * 3600.0;
    return 0;
}

void ckpt__dir_state_dispose(ckpt__dir_state *ds)
{
    for (size_t i = 0; i < ds->n; i++)
        ckpt__free(ds->paths[i]);
    ckpt__free(ds->paths);
    ckpt__free(ds->times);
    ckpt__free(ds->dir);
    ckpt__free(ds->basename);
    ckpt__free(ds->abs_dir);
    memset(ds, 0, sizeof(*ds));
}

static int list_push(ckpt__dir_state *ds, const char *path, double t)
{
    if (ds->n == ds->cap) {
        size_t cap = ds->cap ? ds->cap * 2 : 8;
        char **p = ckpt__realloc(ds->paths, cap * sizeof(*p));
        double *tt;
        if (!p)
            return ckpt__error_oom();
        ds->paths = p;
        tt = ckpt__realloc(ds->times, cap * sizeof(*tt));
        if (!tt)
            return ckpt__error_oom();
        ds->times = tt;
        ds->cap = cap;
    }
    ds->paths[ds->n] = ckpt__strdup(path);
    if (!ds->paths[ds->n])
        return ckpt__error_oom();
    ds->times[ds->n] = t;
    ds->n++;
    return 0;
}

/* Remove entry i from the list; its string goes to *taken (or is freed). */
static void list_remove(ckpt__dir_state *ds, size_t i, char **taken)
{
    if (taken)
        *taken = ds->paths[i];
    else
        ckpt__free(ds->paths[i]);
    memmove(ds->paths + i, ds->paths + i + 1,
            (ds->n - i - 1) * sizeof(*ds->paths));
    memmove(ds->times + i, ds->times + i + 1,
            (ds->n - i - 1) * sizeof(*ds->times));
    ds->n--;
}

/* A stored path names a checkpoint inside this directory when it is a bare
 * name, or absolute with exactly abs_dir as its directory. */
static int is_own_checkpoint(const ckpt__dir_state *ds, const char *stored)
{
    const char *slash = strrchr(stored, '/');
    const char *base = slash ? slash + 1 : stored;
    if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
        return 0;
    if (!slash)
        return 1;
    return ds->abs_dir && stored[0] == '/' &&
           (size_t)(slash - stored) == strlen(ds->abs_dir) &&
           strncmp(stored, ds->abs_dir, (size_t)(slash - stored)) == 0;
}

static int resolve(const ckpt__dir_state *ds, const char *stored, ckpt_buf *out)
{
    return ckpt_state_resolve(out, ds->dir, stored);
}

/* 1 when <prefix>.index exists, 0 when it does not, or an error: a failed
 * check (EIO, EACCES, no memory) must never pass for a missing index, or
 * recovery would forget a good checkpoint. */
static int index_exists(const ckpt__dir_state *ds, const char *prefix)
{
    ckpt_buf path = CKPT_BUF_INIT;
    int err = ckpt_bundle_index_path(&path, prefix);
    if (err == 0)
        err = ds->fs->stat(path.ptr, NULL, NULL, ds->fs->payload);
    ckpt_buf_dispose(&path);
    if (err == CKPT_ENOTFOUND) {
        ckpt_error_clear();
        return 0;
    }
    return err == 0 ? 1 : err;
}

/* Whether `name` is "<base>.data-<digits>-of-<digits>". */
static int is_data_file_of(const char *name, const char *base)
{
    size_t n = strlen(base);
    const char *p;
    if (strncmp(name, base, n) != 0 || strncmp(name + n, ".data-", 6) != 0)
        return 0;
    p = name + n + 6;
    if (*p < '0' || *p > '9')
        return 0;
    while (*p >= '0' && *p <= '9')
        p++;
    if (strncmp(p, "-of-", 4) != 0)
        return 0;
    p += 4;
    if (*p < '0' || *p > '9')
        return 0;
    while (*p >= '0' && *p <= '9')
        p++;
    return *p == '\0';
}

/* Whether `name` is a temporary file of an interrupted save: a bundle
 * file's "<name>.tempstate<hex digits>" or the state file's
 * "checkpoint.tmp*". */
static int is_temp_file(const char *name)
{
    const char *t = strstr(name, ".tempstate");
    if (t) {
        /* TensorFlow writes a decimal number, our bundle writer hex. */
        const char *p = t + 10;
        size_t digits = strspn(p, "0123456789abcdef");
        return digits > 0 && p[digits] == '\0';
    }
    return strncmp(name, CKPT_STATE_FILENAME ".tmp",
                   sizeof(CKPT_STATE_FILENAME ".tmp") - 1) == 0;
}

struct name_list {
    const char *base; /* for data-file matching; NULL for temp files */
    char **names;
    size_t n, cap;
    int err;
};

/* Append `name` to the list (payload: struct name_list). */
static int collect_name_always(const char *name, void *payload)
{
    struct name_list *l = payload;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        char **p = ckpt__realloc(l->names, cap * sizeof(*p));
        if (!p) {
            l->err = ckpt__error_oom();
            return 1;
        }
        l->names = p;
        l->cap = cap;
    }
    l->names[l->n] = ckpt__strdup(name);
    if (!l->names[l->n]) {
        l->err = ckpt__error_oom();
        return 1;
    }
    l->n++;
    return 0;
}

static int collect_name(const char *name, void *payload)
{
    struct name_list *l = payload;
    int match = l->base ? is_data_file_of(name, l->base) : is_temp_file(name);
    return match ? collect_name_always(name, payload) : 0;
}

static void name_list_dispose(struct name_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        ckpt__free(l->names[i]);
    ckpt__free(l->names);
}

/* Remove every listed name in `dir`; the first error other than "not
 * found" is returned after trying them all. */
static int remove_names(const ckpt_fs *fs, const char *dir,
                        const struct name_list *l)
{
    ckpt_buf path = CKPT_BUF_INIT;
    int first = 0;
    for (size_t i = 0; i < l->n; i++) {
        int err = ckpt__path_join(&path, dir, l->names[i]);
        if (err == 0)
            err = fs->remove(path.ptr, fs->payload);
        if (err < 0 && err != CKPT_ENOTFOUND && first == 0)
            first = err;
    }
    ckpt_buf_dispose(&path);
    return first;
}

int ckpt__remove_checkpoint_files(const ckpt_fs *fs, const char *prefix)
{
    ckpt_buf path = CKPT_BUF_INIT;
    ckpt_buf dir = CKPT_BUF_INIT;
    struct name_list data = {ckpt__path_basename(prefix), NULL, 0, 0, 0};
    int err = ckpt_bundle_index_path(&path, prefix);
    if (err < 0)
        goto done;
    /* The index goes first: without it the checkpoint is never complete. */
    err = fs->remove(path.ptr, fs->payload);
    if (err < 0 && err != CKPT_ENOTFOUND)
        goto done;
    ckpt__buf_clear(&path);
    err = ckpt__buf_printf(&path, "%s.meta", prefix);
    if (err < 0)
        goto done;
    err = fs->remove(path.ptr, fs->payload);
    if (err < 0 && err != CKPT_ENOTFOUND)
        goto done;
    err = ckpt__path_dirname(&dir, prefix);
    if (err < 0)
        goto done;
    err = fs->list(dir.ptr, collect_name, &data, fs->payload);
    if (data.err < 0)
        err = data.err;
    if (err < 0)
        goto done;
    err = remove_names(fs, dir.ptr, &data);
done:
    name_list_dispose(&data);
    ckpt_buf_dispose(&path);
    ckpt_buf_dispose(&dir);
    return err;
}

int ckpt__dir_state_remove_temps(ckpt__dir_state *ds)
{
    struct name_list temps = {NULL, NULL, 0, 0, 0};
    int err = ds->fs->list(ds->dir, collect_name, &temps, ds->fs->payload);
    if (temps.err < 0)
        err = temps.err;
    if (err == 0 && temps.n > 0) {
        DS_LOG(ds, CKPT_LOG_INFO,
               "%s: removing %zu temporary file(s) of interrupted saves",
               ds->dir, temps.n);
        err = remove_names(ds->fs, ds->dir, &temps);
    }
    name_list_dispose(&temps);
    return err;
}

/* Length of "<base>-<digits>" when `name` is that followed by
 * ".data-<digits>-of-<digits>", else 0. */
static size_t stepped_data_stem(const char *name, const char *base)
{
    char stem[512];
    size_t n = strlen(base);
    size_t digits, len;
    if (strncmp(name, base, n) != 0 || name[n] != '-')
        return 0;
    digits = strspn(name + n + 1, "0123456789");
    len = n + 1 + digits;
    if (digits == 0 || len >= sizeof(stem))
        return 0;
    memcpy(stem, name, len);
    stem[len] = '\0';
    return is_data_file_of(name, stem) ? len : 0;
}

struct orphan_scan {
    ckpt__dir_state *ds;
    struct name_list found;
};

/* Collect data files of <basename>-<step> whose index does not exist: an
 * interrupted save (data renamed, index not yet) or an interrupted deletion
 * (index removed first). Nothing can ever read them. */
static int collect_orphan(const char *name, void *payload)
{
    struct orphan_scan *sc = payload;
    size_t stem = stepped_data_stem(name, sc->ds->basename);
    ckpt_buf index_name = CKPT_BUF_INIT, index = CKPT_BUF_INIT;
    int orphan = 0;
    if (stem == 0)
        return 0;
    if (ckpt__buf_printf(&index_name, "%.*s.index", (int)stem, name) == 0 &&
        ckpt__path_join(&index, sc->ds->dir, index_name.ptr) == 0)
        orphan = sc->ds->fs->stat(index.ptr, NULL, NULL, sc->ds->fs->payload) ==
                 CKPT_ENOTFOUND;
    ckpt_buf_dispose(&index_name);
    ckpt_buf_dispose(&index);
    ckpt_error_clear();
    return orphan ? collect_name_always(name, &sc->found) : 0;
}

static int remove_orphan_data(ckpt__dir_state *ds)
{
    struct orphan_scan sc = {ds, {NULL, NULL, 0, 0, 0}};
    int err = ds->fs->list(ds->dir, collect_orphan, &sc, ds->fs->payload);
    if (sc.found.err < 0)
        err = sc.found.err;
    if (err == 0 && sc.found.n > 0) {
        DS_LOG(ds, CKPT_LOG_INFO,
               "%s: removing %zu data file(s) without an index (left by an "
               "interrupted save or deletion)",
               ds->dir, sc.found.n);
        err = remove_names(ds->fs, ds->dir, &sc.found);
    }
    name_list_dispose(&sc.found);
    return err;
}

struct stale_scan {
    const ckpt__dir_state *ds;
    struct name_list found;
};

/* Collect "<basename>-<step>" of every "<basename>-<step>.index" that the
 * state file does not list. */
static int collect_stale(const char *name, void *payload)
{
    struct stale_scan *sc = payload;
    const char *base = sc->ds->basename;
    size_t n = strlen(base);
    size_t digits;
    char stem[512];
    if (strncmp(name, base, n) != 0 || name[n] != '-')
        return 0;
    digits = strspn(name + n + 1, "0123456789");
    if (digits == 0 || strcmp(name + n + 1 + digits, ".index") != 0 ||
        n + 1 + digits >= sizeof(stem))
        return 0;
    memcpy(stem, name, n + 1 + digits);
    stem[n + 1 + digits] = '\0';
    for (size_t i = 0; i < sc->ds->n; i++)
        if (strcmp(sc->ds->paths[i], stem) == 0)
            return 0;
    return collect_name_always(stem, &sc->found);
}

/* Without keep_checkpoint_every_n_hours nothing is ever kept unlisted, so
 * an unlisted "<basename>-<step>" checkpoint is what a crash left: an older
 * one a retention deletion cut short, or a newer one whose save died before
 * the state file named it (never reported durable). Finish removing them.
 * Only when the state file lists checkpoints of our own naming. */
static int remove_stale_checkpoints(ckpt__dir_state *ds)
{
    struct stale_scan sc = {ds, {NULL, NULL, 0, 0, 0}};
    ckpt_buf prefix = CKPT_BUF_INIT;
    int err;
    if (ds->keep_hours > 0 || ds->max_to_keep <= 0 || ds->n == 0)
        return 0;
    for (size_t i = 0; i < ds->n; i++)
        if (ckpt_checkpoint_step(ds->paths[i]) == CKPT_NO_STEP ||
            !is_own_checkpoint(ds, ds->paths[i]) || strchr(ds->paths[i], '/'))
            return 0; /* not our naming: leave everything alone */
    err = ds->fs->list(ds->dir, collect_stale, &sc, ds->fs->payload);
    if (sc.found.err < 0)
        err = sc.found.err;
    for (size_t i = 0; err == 0 && i < sc.found.n; i++) {
        DS_LOG(ds, CKPT_LOG_INFO,
               "%s: removing %s: not in the state file (left by a crash "
               "during a save or a deletion)",
               ds->dir, sc.found.names[i]);
        err = ckpt__path_join(&prefix, ds->dir, sc.found.names[i]);
        if (err == 0)
            err = ckpt__remove_checkpoint_files(ds->fs, prefix.ptr);
    }
    ckpt_buf_dispose(&prefix);
    name_list_dispose(&sc.found);
    return err;
}

/* Delete an evicted checkpoint's files, never outside the directory. */
static void delete_evicted(ckpt__dir_state *ds, const char *stored)
{
    ckpt_buf prefix = CKPT_BUF_INIT;
    int err;
    if (!is_own_checkpoint(ds, stored)) {
        DS_LOG(ds, CKPT_LOG_WARN,
               "%s: not deleting '%s': it is outside the checkpoint "
               "directory",
               ds->dir, stored);
        return;
    }
    err = resolve(ds, stored, &prefix);
    if (err == 0)
        err = ckpt__remove_checkpoint_files(ds->fs, prefix.ptr);
    if (err < 0)
        DS_LOG(ds, CKPT_LOG_WARN, "deleting old checkpoint %s: %s",
               prefix.ptr ? prefix.ptr : stored, ckpt_error_last()->message);
    else
        DS_LOG(ds, CKPT_LOG_DEBUG, "deleted old checkpoint %s", prefix.ptr);
    ckpt_buf_dispose(&prefix);
}

/* Apply max_to_keep to the list: evicted entries move to `evicted` (to be
 * deleted once the state file no longer names them), except those that
 * keep_checkpoint_every_n_hours preserves (dropped from the list, kept on
 * disk). */
static int apply_retention(ckpt__dir_state *ds, struct name_list *evicted)
{
    while (ds->max_to_keep > 0 && ds->n > (size_t)ds->max_to_keep) {
        double t = ds->times[0];
        char *stored;
        list_remove(ds, 0, &stored);
        if (ds->keep_hours > 0 && t > ds->next_keep_time) {
            ds->next_keep_time += ds->keep_hours * 3600.0;
            ds->last_preserved = t;
            DS_LOG(ds, CKPT_LOG_INFO,
                   "%s: preserving %s (keep_checkpoint_every_n_hours)", ds->dir,
                   stored);
            ckpt__free(stored);
            continue;
        }
        if (evicted->n == evicted->cap) {
            size_t cap = evicted->cap ? evicted->cap * 2 : 8;
            char **p = ckpt__realloc(evicted->names, cap * sizeof(*p));
            if (!p) {
                ckpt__free(stored);
                return ckpt__error_oom();
            }
            evicted->names = p;
            evicted->cap = cap;
        }
        evicted->names[evicted->n++] = stored;
    }
    return 0;
}

static int write_state(ckpt__dir_state *ds)
{
    ckpt_state st = CKPT_STATE_INIT;
    if (ds->n == 0) {
        /* Nothing kept: a state file naming nothing is invalid, so remove
         * it (readers then see "no checkpoint"). */
        ckpt_buf path = CKPT_BUF_INIT;
        int err = ckpt__path_join(&path, ds->dir, CKPT_STATE_FILENAME);
        if (err == 0)
            err = ds->fs->remove(path.ptr, ds->fs->payload);
        ckpt_buf_dispose(&path);
        if (err == CKPT_ENOTFOUND)
            err = 0;
        if (err == 0) /* the removal must be as durable as a rewrite */
            err = ds->fs->sync_dir(ds->dir, ds->fs->payload);
        return err;
    }
    st.model_checkpoint_path = ds->paths[ds->n - 1];
    st.all_paths = ds->paths;
    st.num_paths = ds->n;
    st.timestamps = ds->times;
    st.num_timestamps = ds->n;
    st.last_preserved_timestamp = ds->last_preserved;
    return ckpt_state_write(ds->fs, ds->dir, &st);
}

/* Rewrite the state file from the (restored) list after a failed update;
 * the caller's error and message are kept. Returns the rewrite's status. */
static int rollback_state(ckpt__dir_state *ds)
{
    ckpt_error saved = *ckpt_error_last();
    char msg[CKPT__ERROR_MESSAGE_MAX];
    int rc;
    snprintf(msg, sizeof(msg), "%s", saved.message);
    rc = write_state(ds);
    if (rc < 0)
        DS_LOG(ds, CKPT_LOG_WARN, "%s: could not restore the state file: %s",
               ds->dir, ckpt_error_last()->message);
    ckpt__error(saved.code, "%s", msg);
    return rc;
}

int ckpt__dir_state_recover(ckpt__dir_state *ds)
{
    ckpt_state st = CKPT_STATE_INIT;
    ckpt_buf prefix = CKPT_BUF_INIT;
    struct name_list evicted = {NULL, NULL, 0, 0, 0};
    double now = ckpt_clock_wall(ds->clock);
    int changed = 0;
    int err = ckpt_state_read(&st, ds->fs, ds->dir);
    if (err == CKPT_ENOTFOUND) {
        err = 0;
        goto cleanup;
    }
    if (err == CKPT_ECORRUPT) {
        DS_LOG(ds, CKPT_LOG_WARN, "ignoring unreadable state file: %s",
               ckpt_error_last()->message);
        err = 0;
        goto cleanup;
    }
    if (err < 0)
        goto done;
    ds->last_preserved = st.last_preserved_timestamp;
    for (size_t i = 0; i < st.num_paths; i++) {
        double t = st.num_timestamps == st.num_paths
                       ? st.timestamps[i]
                       : st.last_preserved_timestamp;
        if (t > now)
            t = now;
        err = resolve(ds, st.all_paths[i], &prefix);
        if (err < 0)
            goto done;
        err = index_exists(ds, prefix.ptr);
        if (err < 0)
            goto done;
        if (err == 0) {
            DS_LOG(ds, CKPT_LOG_WARN,
                   "%s: dropping %s from the list: its index is missing",
                   ds->dir, st.all_paths[i]);
            changed = 1;
            continue;
        }
        err = list_push(ds, st.all_paths[i], t);
        if (err < 0)
            goto done;
    }
    err = apply_retention(ds, &evicted);
    if (err < 0)
        goto done;
    if (changed || evicted.n > 0) {
        err = write_state(ds);
        if (err < 0)
            goto done;
        for (size_t i = 0; i < evicted.n; i++)
            delete_evicted(ds, evicted.names[i]);
    }
cleanup:
    err = ckpt__dir_state_remove_temps(ds);
    if (err == 0)
        err = remove_stale_checkpoints(ds);
    if (err == 0)
        err = remove_orphan_data(ds);
done:
    name_list_dispose(&evicted);
    ckpt_buf_dispose(&prefix);
    ckpt_state_dispose(&st);
    return err;
}

int ckpt__dir_state_name(ckpt__dir_state *ds, const char *name,
                         ckpt_buf *stored_out, ckpt_buf *prefix_out)
{
    int err;
    if (ds->abs_dir)
        err = ckpt__path_join(stored_out, ds->abs_dir, name);
    else
        err = ckpt__buf_set(stored_out, name);
    if (err == 0)
        err = ckpt__path_join(prefix_out, ds->dir, name);
    return err;
}

int ckpt__dir_state_forget(ckpt__dir_state *ds, const char *stored)
{
    ckpt_buf prefix = CKPT_BUF_INIT;
    int err = 0;
    for (size_t i = 0; i < ds->n; i++) {
        if (strcmp(ds->paths[i], stored) == 0) {
            list_remove(ds, i, NULL);
            err = write_state(ds);
            break;
        }
    }
    if (err == 0)
        err = resolve(ds, stored, &prefix);
    if (err == 0)
        err = index_exists(ds, prefix.ptr);
    if (err == 1) {
        ckpt_buf index = CKPT_BUF_INIT;
        err = ckpt_bundle_index_path(&index, prefix.ptr);
        if (err == 0)
            err = ds->fs->remove(index.ptr, ds->fs->payload);
        ckpt_buf_dispose(&index);
    }
    ckpt_buf_dispose(&prefix);
    return err;
}

int ckpt__dir_state_commit(ckpt__dir_state *ds, const char *stored,
                           double save_time, int *may_be_named)
{
    struct name_list evicted = {NULL, NULL, 0, 0, 0};
    char **old_paths = NULL;
    double *old_times = NULL;
    size_t old_n = ds->n;
    double old_preserved = ds->last_preserved;
    double old_next_keep = ds->next_keep_time;
    int err;
    *may_be_named = 0;

    /* Keep a copy of the list so a failed state write leaves it as was. */
    old_paths = ckpt__calloc(old_n + 1, sizeof(*old_paths));
    old_times = ckpt__calloc(old_n + 1, sizeof(*old_times));
    if (!old_paths || !old_times) {
        err = ckpt__error_oom();
        goto done;
    }
    for (size_t i = 0; i < old_n; i++) {
        old_paths[i] = ckpt__strdup(ds->paths[i]);
        if (!old_paths[i]) {
            err = ckpt__error_oom();
            goto done;
        }
        old_times[i] = ds->times[i];
    }
    for (size_t i = 0; i < ds->n; i++) {
        if (strcmp(ds->paths[i], stored) == 0) {
            list_remove(ds, i, NULL);
            break;
        }
    }
    err = list_push(ds, stored, save_time);
    if (err == 0)
        err = apply_retention(ds, &evicted);
    if (err == 0)
        err = write_state(ds);
    if (err < 0) {
        /* Restore the previous list. */
        for (size_t i = 0; i < ds->n; i++)
            ckpt__free(ds->paths[i]);
        ds->n = 0;
        for (size_t i = 0; i < old_n; i++) {
            ds->paths[i] = old_paths[i];
            ds->times[i] = old_times[i];
            old_paths[i] = NULL;
        }
        ds->n = old_n;
        ds->last_preserved = old_preserved;
        ds->next_keep_time = old_next_keep;
        /* The failure may have come after the rename (the directory sync):
         * put the previous state back, keeping the original error. If that
         * fails too, the state file on disk may name the new checkpoint. */
        if (rollback_state(ds) < 0)
            *may_be_named = 1;
        for (size_t i = 0; i < evicted.n; i++) {
            ckpt__free(evicted.names[i]);
            evicted.names[i] = NULL;
        }
        evicted.n = 0;
        goto done;
    }
    for (size_t i = 0; i < evicted.n; i++)
        delete_evicted(ds, evicted.names[i]);
done:
    if (old_paths)
        for (size_t i = 0; i < old_n; i++)
            ckpt__free(old_paths[i]);
    ckpt__free(old_paths);
    ckpt__free(old_times);
    name_list_dispose(&evicted);
    return err;
}
