/* saver/dir_state.c - the checkpoint directory as the saver sees it: the
 * kept checkpoints (the state file's list), retention (max_to_keep and
 * keep_checkpoint_every_n_hours), recovery of a restarted job's directory,
 * and removal of evicted checkpoints and of temporary files.
 *
 * Safety: retention only ever deletes files of checkpoints that live in this
 * directory; a state-file entry pointing elsewhere (absolute, or with a '/'
 * or "..") is listed as TF would list it but never deleted. */
#include "io/fs_internal.h"
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
        ds->kept.next_keep_time =
            ckpt_clock_wall(ds->clock) + ds->keep_hours * 3600.0;
    return 0;
}

static void kept_dispose(ckpt__kept_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        ckpt__free(l->paths[i]);
    ckpt__free(l->paths);
    ckpt__free(l->times);
    memset(l, 0, sizeof(*l));
}

void ckpt__dir_state_dispose(ckpt__dir_state *ds)
{
    kept_dispose(&ds->kept);
    ckpt__free(ds->dir);
    ckpt__free(ds->basename);
    ckpt__free(ds->abs_dir);
    memset(ds, 0, sizeof(*ds));
}

static int kept_push(ckpt__kept_list *l, const char *path, double t)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        char **p = ckpt__realloc(l->paths, cap * sizeof(*p));
        double *tt;
        if (!p)
            return ckpt__error_oom();
        l->paths = p;
        tt = ckpt__realloc(l->times, cap * sizeof(*tt));
        if (!tt)
            return ckpt__error_oom();
        l->times = tt;
        l->cap = cap;
    }
    l->paths[l->n] = ckpt__strdup(path);
    if (!l->paths[l->n])
        return ckpt__error_oom();
    l->times[l->n] = t;
    l->n++;
    return 0;
}

/* Remove entry i from the list; its string goes to *taken (or is freed). */
static void kept_remove(ckpt__kept_list *l, size_t i, char **taken)
{
    if (taken)
        *taken = l->paths[i];
    else
        ckpt__free(l->paths[i]);
    memmove(l->paths + i, l->paths + i + 1, (l->n - i - 1) * sizeof(*l->paths));
    memmove(l->times + i, l->times + i + 1, (l->n - i - 1) * sizeof(*l->times));
    l->n--;
}

/* The index of `stored` in the list, or l->n when it is not listed. */
static size_t kept_find(const ckpt__kept_list *l, const char *stored)
{
    size_t i = 0;
    while (i < l->n && strcmp(l->paths[i], stored) != 0)
        i++;
    return i;
}

/* `to` (empty) becomes a copy of `from` without the entry `skip`. */
static int kept_copy_except(ckpt__kept_list *to, const ckpt__kept_list *from,
                            const char *skip)
{
    to->last_preserved = from->last_preserved;
    to->next_keep_time = from->next_keep_time;
    for (size_t i = 0; i < from->n; i++) {
        int err;
        if (strcmp(from->paths[i], skip) == 0)
            continue;
        err = kept_push(to, from->paths[i], from->times[i]);
        if (err < 0)
            return err;
    }
    return 0;
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
        err = ckpt__fs_exists(ds->fs, path.ptr);
    ckpt_buf_dispose(&path);
    return err;
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
            err = ckpt__fs_remove(fs, path.ptr);
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
    err = ckpt__fs_remove(fs, path.ptr);
    if (err < 0 && err != CKPT_ENOTFOUND)
        goto done;
    ckpt__buf_clear(&path);
    err = ckpt__buf_printf(&path, "%s.meta", prefix);
    if (err < 0)
        goto done;
    err = ckpt__fs_remove(fs, path.ptr);
    if (err < 0 && err != CKPT_ENOTFOUND)
        goto done;
    err = ckpt__path_dirname(&dir, prefix);
    if (err < 0)
        goto done;
    err = ckpt__fs_list(fs, dir.ptr, collect_name, &data);
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
    int err = ckpt__fs_list(ds->fs, ds->dir, collect_name, &temps);
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
        orphan =
            ckpt__fs_stat(sc->ds->fs, index.ptr, NULL, NULL) == CKPT_ENOTFOUND;
    ckpt_buf_dispose(&index_name);
    ckpt_buf_dispose(&index);
    ckpt_error_clear();
    return orphan ? collect_name_always(name, &sc->found) : 0;
}

static int remove_orphan_data(ckpt__dir_state *ds)
{
    struct orphan_scan sc = {ds, {NULL, NULL, 0, 0, 0}};
    int err = ckpt__fs_list(ds->fs, ds->dir, collect_orphan, &sc);
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
    if (kept_find(&sc->ds->kept, stem) < sc->ds->kept.n)
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
    const ckpt__kept_list *kept = &ds->kept;
    ckpt_buf prefix = CKPT_BUF_INIT;
    int err;
    if (ds->keep_hours > 0 || ds->max_to_keep <= 0 || kept->n == 0)
        return 0;
    for (size_t i = 0; i < kept->n; i++)
        if (ckpt_checkpoint_step(kept->paths[i]) == CKPT_NO_STEP ||
            !is_own_checkpoint(ds, kept->paths[i]) ||
            strchr(kept->paths[i], '/'))
            return 0; /* not our naming: leave everything alone */
    err = ckpt__fs_list(ds->fs, ds->dir, collect_stale, &sc);
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

/* Apply max_to_keep to `l`: evicted entries move to `evicted` (to be
 * deleted once the state file no longer names them), except those that
 * keep_checkpoint_every_n_hours preserves (dropped from the list, kept on
 * disk). */
static int apply_retention(const ckpt__dir_state *ds, ckpt__kept_list *l,
                           struct name_list *evicted)
{
    while (ds->max_to_keep > 0 && l->n > (size_t)ds->max_to_keep) {
        double t = l->times[0];
        char *stored;
        kept_remove(l, 0, &stored);
        if (ds->keep_hours > 0 && t > l->next_keep_time) {
            l->next_keep_time += ds->keep_hours * 3600.0;
            l->last_preserved = t;
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

/* Write `l` as the state file. */
static int write_state(const ckpt__dir_state *ds, const ckpt__kept_list *l)
{
    ckpt_state st = CKPT_STATE_INIT;
    if (l->n == 0) {
        /* Nothing kept: a state file naming nothing is invalid, so remove
         * it (readers then see "no checkpoint"). */
        ckpt_buf path = CKPT_BUF_INIT;
        int err = ckpt__path_join(&path, ds->dir, CKPT_STATE_FILENAME);
        if (err == 0)
            err = ckpt__fs_remove(ds->fs, path.ptr);
        ckpt_buf_dispose(&path);
        if (err == CKPT_ENOTFOUND)
            err = 0;
        if (err == 0) /* the removal must be as durable as a rewrite */
            err = ckpt__fs_sync_dir(ds->fs, ds->dir);
        return err;
    }
    st.model_checkpoint_path = l->paths[l->n - 1];
    st.all_paths = l->paths;
    st.num_paths = l->n;
    st.timestamps = l->times;
    st.num_timestamps = l->n;
    st.last_preserved_timestamp = l->last_preserved;
    return ckpt_state_write(ds->fs, ds->dir, &st);
}

/* Rewrite the state file from the current list after a failed update; the
 * caller's error and message are kept. Returns the rewrite's status. */
static int rollback_state(ckpt__dir_state *ds)
{
    ckpt__saved_error saved;
    int rc;
    ckpt__error_save(&saved);
    rc = write_state(ds, &ds->kept);
    if (rc < 0)
        DS_LOG(ds, CKPT_LOG_WARN, "%s: could not restore the state file: %s",
               ds->dir, ckpt_error_last()->message);
    ckpt__error_restore(&saved);
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
    ds->kept.last_preserved = st.last_preserved_timestamp;
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
        err = kept_push(&ds->kept, st.all_paths[i], t);
        if (err < 0)
            goto done;
    }
    err = apply_retention(ds, &ds->kept, &evicted);
    if (err < 0)
        goto done;
    if (changed || evicted.n > 0) {
        err = write_state(ds, &ds->kept);
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
    size_t i = kept_find(&ds->kept, stored);
    int err = 0;
    if (i < ds->kept.n) {
        kept_remove(&ds->kept, i, NULL);
        err = write_state(ds, &ds->kept);
    }
    if (err == 0)
        err = resolve(ds, stored, &prefix);
    if (err == 0)
        err = index_exists(ds, prefix.ptr);
    if (err == 1) {
        ckpt_buf index = CKPT_BUF_INIT;
        err = ckpt_bundle_index_path(&index, prefix.ptr);
        if (err == 0)
            err = ckpt__fs_remove(ds->fs, index.ptr);
        ckpt_buf_dispose(&index);
    }
    ckpt_buf_dispose(&prefix);
    return err;
}

int ckpt__dir_state_commit(ckpt__dir_state *ds, const char *stored,
                           double save_time, int *may_be_named)
{
    ckpt__kept_list next = {0};
    struct name_list evicted = {NULL, NULL, 0, 0, 0};
    int err;
    *may_be_named = 0;
    err = kept_copy_except(&next, &ds->kept, stored);
    if (err == 0)
        err = kept_push(&next, stored, save_time);
    if (err == 0)
        err = apply_retention(ds, &next, &evicted);
    if (err < 0)
        goto done; /* nothing written: the state file is as it was */
    err = write_state(ds, &next);
    if (err < 0) {
        /* The failure may have come after the rename (the directory sync):
         * put the current list back, keeping the original error. If that
         * fails too, the state file on disk may name the new checkpoint. */
        if (rollback_state(ds) < 0)
            *may_be_named = 1;
        goto done;
    }
    kept_dispose(&ds->kept);
    ds->kept = next;
    memset(&next, 0, sizeof(next));
    for (size_t i = 0; i < evicted.n; i++)
        delete_evicted(ds, evicted.names[i]);
done:
    kept_dispose(&next);
    name_list_dispose(&evicted);
    return err;
}
