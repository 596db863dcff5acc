/* saver/dir_state.c - the checkpoint directory as the saver sees it: the
 * kept checkpoints (the state file's list), retention (max_to_keep and
 * keep_checkpoint_every_n_hours), recovery of a restarted job's directory
 * and deletion of evicted checkpoints, also handed to a saver's thread
 * (ckpt__eviction). Removing what interrupted saves left
 * is dir_sweep.c's job.
 *
 * Safety: retention only ever deletes files of checkpoints that live in this
 * directory; a state-file entry pointing elsewhere (absolute, or with a '/'
 * or "..") is listed as TF would list it but never deleted, and one
 * checkpoint listed under two spellings ("x", "./x", "alias/x" through a
 * symbolic link to the directory) counts once, so the spelling retention
 * may delete is never evicted while the other stays. */
#include "format/checkpoint_state_write.h"
#include "io/fs_dirs.h"
#include "io/fs_internal.h"
#include "saver_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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
    ds->basename = ckpt__strdup(ckpt__saver_basename(opts->basename));
    if (!ds->dir || !ds->basename)
        return ckpt__error_oom();
    if (opts->absolute_paths) {
        /* realpath() asks the operating system, not opts->fs: a ckpt_fs has
         * no method that resolves a path (a current directory, symlinks),
         * and the absolute path written into the state file is for
         * TensorFlow, which opens it through the operating system too. The
         * result lives on the stack and is copied with ckpt__strdup, so the
         * allocator seam is kept. */
        char real[PATH_MAX];
        if (!realpath(dir, real))
            return ckpt__error_errno(errno, "realpath %s", dir);
        ds->abs_dir = ckpt__strdup(real);
        if (!ds->abs_dir)
            return ckpt__error_oom();
    }
    /* keep_checkpoint_every_n_hours: the schedule starts now, unless the
     * state file says when it last preserved one (recover). */
    if (ds->keep_hours > 0)
        ds->kept.last_preserved = ckpt_clock_wall(ds->clock);
    return 0;
}

static void kept_dispose(ckpt__kept_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        ckpt__free(l->paths[i]);
    ckpt__free(l->paths);
    ckpt__free(l->times);
    ckpt__free(l->texts);
    memset(l, 0, sizeof(*l));
}

void ckpt__dir_state_dispose(ckpt__dir_state *ds)
{
    ckpt__dir_lock_unclaim(ds->lock, ds);
    ckpt__dir_lock_release(ds->lock);
    kept_dispose(&ds->kept);
    kept_dispose(&ds->unsure);
    ckpt__name_index_dispose(&ds->owned_index);
    kept_dispose(&ds->owned_paths);
    ckpt__free(ds->dir);
    ckpt__free(ds->basename);
    ckpt__free(ds->abs_dir);
    memset(ds, 0, sizeof(*ds));
}

/* Room for one more entry in `l`. */
static int kept_grow(ckpt__kept_list *l)
{
    size_t cap = l->cap ? l->cap * 2 : 8;
    char **p;
    double *tt;
    ckpt__state_double *tx;
    if (l->n < l->cap)
        return 0;
    p = ckpt__realloc(l->paths, cap * sizeof(*p));
    if (!p)
        return ckpt__error_oom();
    l->paths = p;
    tt = ckpt__realloc(l->times, cap * sizeof(*tt));
    if (!tt)
        return ckpt__error_oom();
    l->times = tt;
    tx = ckpt__realloc(l->texts, cap * sizeof(*tx));
    if (!tx)
        return ckpt__error_oom();
    l->texts = tx;
    l->cap = cap;
    return 0;
}

/* Append `path` saved at `t`, its time's text `text` (NULL: formatted
 * now, the only place a kept time is formatted). */
static int kept_push_text(ckpt__kept_list *l, const char *path, double t,
                          const ckpt__state_double *text)
{
    int err = kept_grow(l);
    if (err < 0)
        return err;
    if (text)
        l->texts[l->n] = *text;
    else if ((err = ckpt__state_double_format(&l->texts[l->n], t)) < 0)
        return err;
    l->paths[l->n] = ckpt__strdup(path);
    if (!l->paths[l->n])
        return ckpt__error_oom();
    l->times[l->n] = t;
    l->n++;
    return 0;
}

static int kept_push(ckpt__kept_list *l, const char *path, double t)
{
    return kept_push_text(l, path, t, NULL);
}

/* Append entry i of `from`, its time's text copied, not formatted again. */
static int kept_push_entry(ckpt__kept_list *l, const ckpt__kept_list *from,
                           size_t i)
{
    return kept_push_text(l, from->paths[i], from->times[i], &from->texts[i]);
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
    memmove(l->texts + i, l->texts + i + 1, (l->n - i - 1) * sizeof(*l->texts));
    l->n--;
}

/* Move entry i to the end of the list, the others keeping their order. */
static void kept_move_last(ckpt__kept_list *l, size_t i)
{
    char *path = l->paths[i];
    double t = l->times[i];
    ckpt__state_double text = l->texts[i];
    size_t after = l->n - i - 1;
    memmove(l->paths + i, l->paths + i + 1, after * sizeof(*l->paths));
    memmove(l->times + i, l->times + i + 1, after * sizeof(*l->times));
    memmove(l->texts + i, l->texts + i + 1, after * sizeof(*l->texts));
    l->paths[l->n - 1] = path;
    l->times[l->n - 1] = t;
    l->texts[l->n - 1] = text;
}

size_t ckpt__kept_find(const ckpt__kept_list *l, const char *stored)
{
    size_t i = 0;
    while (i < l->n && strcmp(l->paths[i], stored) != 0)
        i++;
    return i;
}

int ckpt__kept_index(ckpt__name_index *x, const ckpt__kept_list *l)
{
    int err = ckpt__name_index_reserve(x, l->n);
    for (size_t i = 0; err == 0 && i < l->n; i++)
        if (ckpt__name_index_find(x, l->paths[i]) == SIZE_MAX)
            ckpt__name_index_put(x, l->paths[i], i);
    return err;
}

/* `to` (empty) becomes a copy of `from` without the entry `skip`. */
static int kept_copy_except(ckpt__kept_list *to, const ckpt__kept_list *from,
                            const char *skip)
{
    to->last_preserved = from->last_preserved;
    for (size_t i = 0; i < from->n; i++) {
        int err;
        if (strcmp(from->paths[i], skip) == 0)
            continue;
        err = kept_push_entry(to, from, i);
        if (err < 0)
            return err;
    }
    return 0;
}

/* Whether `stored`, a path holding a '/', names its files in the
 * checkpoint directory itself, however it is spelt ("./x", "alias/x" for a
 * symbolic link "alias" -> ".", an absolute path through a symlinked
 * directory): its key, as the operating system resolves it now, is a bare
 * name. Defined with the keys below. */
static int leads_into_directory(const ckpt__dir_state *ds, const char *stored);

/* Whether `stored` names a checkpoint of this directory now: a name in
 * it, a path in its real directory, or one leading there
 * (leads_into_directory). *spelt_as_ours: 1 for the first two, which no
 * link on the way can change. */
static int owned_now(const ckpt__dir_state *ds, const char *stored,
                     int *spelt_as_ours)
{
    const char *slash = strrchr(stored, '/');
    const char *base = slash ? slash + 1 : stored;
    *spelt_as_ours = 0;
    if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
        return 0;
    *spelt_as_ours =
        !slash || (stored[0] == '/' && ds->abs_dir &&
                   (size_t)(slash - stored) == strlen(ds->abs_dir) &&
                   strncmp(stored, ds->abs_dir, (size_t)(slash - stored)) == 0);
    return *spelt_as_ours || leads_into_directory(ds, stored);
}

int ckpt__dir_state_owns(const ckpt__dir_state *ds, const char *stored)
{
    int spelt_as_ours;
    if (!owned_now(ds, stored, &spelt_as_ours))
        return 0;
    /* any other path: also when recovery read it */
    return spelt_as_ours ||
           ckpt__name_index_find(&ds->owned_index, stored) != SIZE_MAX;
}

/* Note which of the recovered list's paths holding a '/' lead into the
 * directory now (owned_paths). Without memory for it, none is: their
 * checkpoints are then dropped from the list at eviction, not deleted. */
static void note_owned_paths(ckpt__dir_state *ds)
{
    for (size_t i = 0; i < ds->kept.n; i++) {
        int spelt_as_ours;
        if (!strchr(ds->kept.paths[i], '/') ||
            !owned_now(ds, ds->kept.paths[i], &spelt_as_ours) || spelt_as_ours)
            continue;
        if (kept_push(&ds->owned_paths, ds->kept.paths[i], 0.0) < 0) {
            ckpt_error_clear();
            break;
        }
    }
    if (ds->owned_paths.n > 0 &&
        ckpt__kept_index(&ds->owned_index, &ds->owned_paths) < 0) {
        ckpt_error_clear();
        ckpt__name_index_dispose(&ds->owned_index);
        kept_dispose(&ds->owned_paths);
    }
}

static int resolve(const ckpt__dir_state *ds, const char *stored, ckpt_buf *out)
{
    return ckpt_state_resolve(out, ds->dir, stored);
}

/* 1 when <prefix>.index exists, 0 when it does not, or an error: a failed
 * check (EIO, EACCES, no memory) must never pass for a missing index, or
 * recovery would forget a good checkpoint. */
static int index_lookup(const ckpt__dir_state *ds, const char *prefix,
                        int (*exists)(const ckpt_fs *, const char *))
{
    ckpt_buf path = CKPT_BUF_INIT;
    int err = ckpt_bundle_index_path(&path, prefix);
    if (err == 0)
        err = exists(ds->fs, path.ptr);
    ckpt_buf_dispose(&path);
    return err;
}

static int index_exists(const ckpt__dir_state *ds, const char *prefix)
{
    return index_lookup(ds, prefix, ckpt__fs_exists);
}

/* index_exists, but 1 also for an index entry that names nothing
 * (ckpt__fs_entry_exists). */
static int index_entry_exists(const ckpt__dir_state *ds, const char *prefix)
{
    return index_lookup(ds, prefix, ckpt__fs_entry_exists);
}

/* What deleting a batch of evicted checkpoints looks up: the kept list's
 * names (NULL members: not available, scan the list / list the directory
 * per checkpoint instead), so that deleting n of them among N files costs
 * one listing and O(n + N) look-ups, not n listings; and ds->unsure's
 * names, indexed at the batch's first failed deletion, so that n failures
 * are carried in O(n + u), not O(n * u). */
typedef struct eviction_lookups {
    const ckpt__name_index *kept;
    const ckpt__data_files *data;
    ckpt__name_index unsure; /* ds->unsure's names, in step with the list */
    int unsure_indexed;      /* 0: not yet, 1: `unsure` in use, -1: no
                                memory for it, ds->unsure is scanned */
} eviction_lookups;

static int still_kept(const ckpt__dir_state *ds, const eviction_lookups *lk,
                      const char *stored)
{
    if (lk->kept)
        return ckpt__name_index_find(lk->kept, stored) != SIZE_MAX;
    return ckpt__kept_find(&ds->kept, stored) < ds->kept.n;
}

/* Carry `stored`, whose deletion failed, in ds->unsure (once). */
static void carry_unsure(ckpt__dir_state *ds, eviction_lookups *lk,
                         const char *stored)
{
    ckpt__kept_list *u = &ds->unsure;
    if (lk->unsure_indexed == 0)
        lk->unsure_indexed = ckpt__kept_index(&lk->unsure, u) == 0 ? 1 : -1;
    if (lk->unsure_indexed > 0 &&
        ckpt__name_index_reserve(&lk->unsure, u->n + 1) < 0)
        lk->unsure_indexed = -1; /* no memory: scans from now on */
    if (lk->unsure_indexed < 0) {
        if (ckpt__kept_find(u, stored) == u->n)
            (void)kept_push(u, stored, 0.0);
        return;
    }
    if (ckpt__name_index_find(&lk->unsure, stored) == SIZE_MAX &&
        kept_push(u, stored, 0.0) == 0)
        ckpt__name_index_put(&lk->unsure, u->paths[u->n - 1], u->n - 1);
}

static size_t kept_find_any_spelling(const ckpt__dir_state *ds,
                                     const char *stored);

/* Whether the index `stored` names is, to the operating system, the same
 * file (device and inode) as the index of an entry the list still holds:
 * two spellings realpath cannot tie together (a bind mount) or a symbolic
 * link changed since the open. */
static int same_file_as_kept(const ckpt__dir_state *ds, const char *stored)
{
    ckpt_buf prefix = CKPT_BUF_INIT, index = CKPT_BUF_INIT;
    struct stat a, b;
    int same = 0;
    if (resolve(ds, stored, &prefix) == 0 &&
        ckpt_bundle_index_path(&index, prefix.ptr) == 0 &&
        stat(index.ptr, &a) == 0) {
        for (size_t i = 0; !same && i < ds->kept.n; i++) {
            if (resolve(ds, ds->kept.paths[i], &prefix) < 0 ||
                ckpt_bundle_index_path(&index, prefix.ptr) < 0)
                break;
            same = stat(index.ptr, &b) == 0 && a.st_dev == b.st_dev &&
                   a.st_ino == b.st_ino;
        }
    }
    ckpt_error_clear();
    ckpt_buf_dispose(&prefix);
    ckpt_buf_dispose(&index);
    return same;
}

/* Whether evicted `stored` may be deleted; logs why not. */
static int may_delete(ckpt__dir_state *ds, const eviction_lookups *lk,
                      const char *stored)
{
    /* Every evicted entry, a bare name too, is looked up again under
     * every spelling the list holds, as the file system resolves them now,
     * and by its index file: a symbolic link on the way of another
     * spelling may have changed since the open told the two apart, and a
     * bind mount gives one directory two real paths. */
    if (still_kept(ds, lk, stored) ||
        kept_find_any_spelling(ds, stored) < ds->kept.n ||
        same_file_as_kept(ds, stored)) {
        CKPT__DS_LOG(ds, CKPT_LOG_WARN,
                     "%s: not deleting '%s': the state file still names it",
                     ds->dir, stored);
        return 0;
    }
    if (!ckpt__dir_state_owns(ds, stored)) {
        CKPT__DS_LOG(ds, CKPT_LOG_WARN,
                     "%s: not deleting '%s': it is outside the checkpoint "
                     "directory",
                     ds->dir, stored);
        return 0;
    }
    return 1;
}

static void deletion_failed(ckpt__dir_state *ds, eviction_lookups *lk,
                            const char *stored, const char *prefix)
{
    CKPT__DS_LOG(ds, CKPT_LOG_WARN,
                 "deleting old checkpoint %s: %s (tried again at the next "
                 "save and the next open)",
                 prefix ? prefix : stored, ckpt_error_last()->message);
    /* Carried in the notes, like a failed save's checkpoint, so the next
     * commit (or the next open) deletes what is left of it. */
    carry_unsure(ds, lk, stored);
    ckpt_error_clear();
}

/* Delete the `n` evicted checkpoints `stored` (each in `prefix[i]`, empty
 * buffers), never outside the directory: every index first, then one
 * fsync per directory they are in (one, unless the list spells the
 * directory in several ways), then their other files. The order a single
 * deletion keeps (ckpt__remove_checkpoint_files), with one directory fsync
 * for the batch instead of one per checkpoint: a list of thousands to
 * evict (a max_to_keep lowered, a hostile state file) took a directory
 * fsync each. */
static void delete_batch(ckpt__dir_state *ds, eviction_lookups *lk,
                         char *const *stored, size_t n, ckpt_buf *prefix)
{
    ckpt_buf dir = CKPT_BUF_INIT, synced = CKPT_BUF_INIT;
    int sync_err = 0;
    for (size_t i = 0; i < n; i++) {
        int err;
        if (!may_delete(ds, lk, stored[i]))
            continue;
        err = resolve(ds, stored[i], &prefix[i]);
        if (err == 0)
            err = ckpt__remove_checkpoint_index(ds->fs, prefix[i].ptr);
        if (err < 0) {
            deletion_failed(ds, lk, stored[i], prefix[i].ptr);
            ckpt_buf_dispose(&prefix[i]);
        }
    }
    for (size_t i = 0; i < n; i++) {
        int err;
        if (!prefix[i].ptr)
            continue;
        err = ckpt__path_dirname(&dir, prefix[i].ptr);
        if (err == 0 && (!synced.ptr || strcmp(synced.ptr, dir.ptr) != 0)) {
            sync_err = ckpt__fs_sync_dir(ds->fs, dir.ptr);
            if (sync_err < 0 || ckpt__buf_set(&synced, dir.ptr) < 0)
                ckpt_buf_dispose(&synced); /* the next one syncs again */
        }
        if (err == 0)
            err = sync_err;
        if (err == 0)
            err = ckpt__remove_checkpoint_rest(ds->fs, prefix[i].ptr, lk->data);
        if (err < 0)
            deletion_failed(ds, lk, stored[i], prefix[i].ptr);
        else
            CKPT__DS_LOG(ds, CKPT_LOG_DEBUG, "deleted old checkpoint %s",
                         prefix[i].ptr);
        ckpt_buf_dispose(&prefix[i]);
    }
    ckpt_buf_dispose(&dir);
    ckpt_buf_dispose(&synced);
}

/* How many of `n` listed checkpoints max_to_keep has too many (0 when it
 * keeps all): the oldest that many are retention's to evict. */
static size_t over_max_to_keep(const ckpt__dir_state *ds, size_t n)
{
    if (ds->max_to_keep <= 0 || n <= (size_t)ds->max_to_keep)
        return 0;
    return n - (size_t)ds->max_to_keep;
}

/* Apply max_to_keep to `l`: evicted entries move to `evicted` (to be
 * deleted once the state file no longer names them), except those that
 * keep_checkpoint_every_n_hours preserves (dropped from the list, kept on
 * disk): one saved more than that many hours after the last one preserved
 * (at first: after the schedule's start), which becomes the last one.
 * `now` is the wall clock's time (the save's): a last one kept later than
 * that means the clock went back, and the schedule restarts at `now`, as
 * at an open (B76); a checkpoint saved later than `now` (before the clock
 * went back) is not kept for its time. */
static int apply_retention(const ckpt__dir_state *ds, ckpt__kept_list *l,
                           double now, ckpt__kept_list *evicted)
{
    size_t excess = over_max_to_keep(ds, l->n), i;
    int err = 0;
    if (excess == 0)
        return 0;
    if (ds->keep_hours > 0 && l->last_preserved > now)
        l->last_preserved = now;
    for (i = 0; i < excess && err == 0; i++) {
        double t = l->times[i];
        if (ds->keep_hours > 0 && t <= now &&
            t > l->last_preserved + ds->keep_hours * 3600.0) {
            l->last_preserved = t;
            CKPT__DS_LOG(ds, CKPT_LOG_INFO,
                         "%s: preserving %s (keep_checkpoint_every_n_hours)",
                         ds->dir, l->paths[i]);
        } else {
            err = kept_push_entry(evicted, l, i);
        }
    }
    if (err < 0)
        return err;
    /* one move for all of them: a long list is trimmed in linear time */
    for (i = 0; i < excess; i++)
        ckpt__free(l->paths[i]);
    memmove(l->paths, l->paths + excess, (l->n - excess) * sizeof(*l->paths));
    memmove(l->times, l->times + excess, (l->n - excess) * sizeof(*l->times));
    memmove(l->texts, l->texts + excess, (l->n - excess) * sizeof(*l->texts));
    l->n -= excess;
    return 0;
}

/* Write `l` as the state file; *replaced (may be NULL) says whether the
 * one on disk changed (ckpt__state_write), so that a failure before that
 * needs no rollback. */
static int write_state_replacing(const ckpt__dir_state *ds,
                                 const ckpt__kept_list *l, int *replaced)
{
    ckpt_state st = CKPT_STATE_INIT;
    if (replaced)
        *replaced = 0;
    if (l->n == 0) {
        /* Nothing kept: a state file naming nothing is invalid, so remove
         * it (readers then see "no checkpoint"). */
        ckpt_buf path = CKPT_BUF_INIT;
        int err = ckpt__path_join(&path, ds->dir, CKPT_STATE_FILENAME);
        if (err == 0)
            err = ckpt__fs_remove(ds->fs, path.ptr);
        ckpt_buf_dispose(&path);
        if (err == 0 && replaced)
            *replaced = 1;
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
    return ckpt__state_write(ds->fs, ds->dir, &st, l->texts, replaced);
}

static int write_state(const ckpt__dir_state *ds, const ckpt__kept_list *l)
{
    return write_state_replacing(ds, l, NULL);
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
        CKPT__DS_LOG(ds, CKPT_LOG_WARN,
                     "%s: could not restore the state file: %s", ds->dir,
                     ckpt_error_last()->message);
    ckpt__error_restore(&saved);
    return rc;
}

/* What recovery finds of a listed entry (bits of one byte per entry). */
enum { INDEX_MISSING = 1, LISTED_AGAIN = 2 };

/* An entry of the state file's list, for sorting by path, then by
 * position. */
typedef struct listed_entry {
    const char *path;
    size_t i;
} listed_entry;

static int by_path_then_position(const void *a, const void *b)
{
    const listed_entry *x = a, *y = b;
    int c = strcmp(x->path, y->path);
    return c != 0 ? c : (x->i > y->i) - (x->i < y->i);
}

/* The directory's absolute path, as listing_key takes it off an entry's
 * key: the operating system's (absolute_paths' own, or realpath's) and,
 * when the directory was given as an absolute path without "..", that
 * spelling too (a symlinked directory: "/link/dir/x" as TensorFlow writes
 * it for "/link/dir"). Found once per list (paths[0..n), and `also`
 * when not NULL), not per entry, and only when one of them holds a '/'
 * (an entry without one is a name in the directory, its own key). */
typedef struct key_dirs {
    const char *dir[2];    /* NULL: none */
    const char *listed_in; /* the directory as the saver was given it */
    char real[PATH_MAX];
    ckpt_buf spelt;
    /* the last directory resolved_key resolved, and its real path (""
     * when it did not resolve): a list naming one directory many times
     * costs one realpath, not one per entry */
    ckpt_buf last_parent;
    char last_real[PATH_MAX];
} key_dirs;

static void key_dirs_init(key_dirs *kd, const ckpt__dir_state *ds,
                          const char *also, char *const *paths, size_t n)
{
    size_t i = 0;
    kd->dir[0] = kd->dir[1] = NULL;
    kd->listed_in = ds->dir;
    kd->spelt = (ckpt_buf)CKPT_BUF_INIT;
    kd->last_parent = (ckpt_buf)CKPT_BUF_INIT;
    while (i < n && !strchr(paths[i], '/'))
        i++;
    if (i == n && (!also || !strchr(also, '/')))
        return; /* names in the directory only: nothing to take off */
    kd->dir[0] = ds->abs_dir                   ? ds->abs_dir
                 : realpath(ds->dir, kd->real) ? kd->real
                                               : NULL;
    if (ds->dir[0] == '/' && !strstr(ds->dir, "..") &&
        ckpt__path_normalize(&kd->spelt, ds->dir) == 0 &&
        (!kd->dir[0] || strcmp(kd->spelt.ptr, kd->dir[0]) != 0))
        kd->dir[1] = kd->spelt.ptr;
}

static void key_dirs_dispose(key_dirs *kd)
{
    ckpt_buf_dispose(&kd->spelt);
    ckpt_buf_dispose(&kd->last_parent);
}

/* `path` (NUL-terminated) with the directory `dir` and the '/' after it
 * taken off when it starts with them; `path` itself otherwise. */
static const char *inside(const char *path, const char *dir)
{
    size_t n = dir ? strlen(dir) : 0;
    if (n > 0 && strncmp(path, dir, n) == 0 && path[n] == '/')
        return path + n + 1;
    return path;
}

/* The key of `stored` as the operating system resolves it: the real path
 * of the directory its files are in (symbolic links and ".." followed, as
 * opening them does), then its last component as it is (the files are
 * "<last component>.index" and its data files), with the checkpoint
 * directory's real path taken off. 1 with *out set; 0 when the system
 * cannot say (a directory on the way missing, a path too long, no
 * checkpoint directory's real path to compare with, a last component
 * "", "." or ".."); CKPT_ENOMEM. */
static int resolved_key(key_dirs *kd, const char *stored, char **out)
{
    ckpt_buf prefix = CKPT_BUF_INIT, parent = CKPT_BUF_INIT;
    ckpt_buf key = CKPT_BUF_INIT;
    const char *base;
    int err;
    *out = NULL;
    if (!kd->dir[0])
        return 0;
    err = ckpt_state_resolve(&prefix, kd->listed_in, stored);
    if (err == 0)
        err = ckpt__path_dirname(&parent, prefix.ptr);
    if (err < 0)
        goto done;
    base = ckpt__path_basename(prefix.ptr);
    if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
        goto done; /* err 0: not resolved */
    if (!kd->last_parent.ptr || strcmp(kd->last_parent.ptr, parent.ptr) != 0) {
        err = ckpt__buf_set(&kd->last_parent, parent.ptr);
        if (err < 0)
            goto done;
        if (!realpath(parent.ptr, kd->last_real))
            kd->last_real[0] = '\0';
    }
    if (!kd->last_real[0])
        goto done;
    err = ckpt__path_join(&key, kd->last_real, base);
    if (err == 0) {
        *out = ckpt__strdup(inside(key.ptr, kd->dir[0]));
        err = *out ? 1 : ckpt__error_oom();
    }
done:
    ckpt_buf_dispose(&prefix);
    ckpt_buf_dispose(&parent);
    ckpt_buf_dispose(&key);
    return err;
}

static int leads_into_directory(const ckpt__dir_state *ds, const char *stored)
{
    key_dirs kd;
    char *key = NULL;
    int found, owned;
    key_dirs_init(&kd, ds, stored, NULL, 0);
    found = resolved_key(&kd, stored, &key);
    owned = found > 0 && !strchr(key, '/');
    if (found < 0)
        ckpt_error_clear(); /* out of memory: not known to be ours */
    ckpt__free(key);
    key_dirs_dispose(&kd);
    return owned;
}

/* The checkpoint `stored` names, spelt one way, so that one checkpoint
 * listed under two spellings is seen as listed twice: a name in the
 * directory as it is; a path as the operating system resolves it
 * (resolved_key: "alias/x" for a symbolic link "alias" -> "." is "x",
 * "away/../x" for "away" -> "../other/deep" is "other/x"); where it
 * cannot, lexically normalised ("./x" and "sub/../x" are "x") with the
 * directory's absolute path (either spelling in `kd`) taken off. NULL
 * when out of memory. */
static char *listing_key(key_dirs *kd, const char *stored)
{
    ckpt_buf norm = CKPT_BUF_INIT;
    char *out = NULL;
    int found = strchr(stored, '/') ? resolved_key(kd, stored, &out) : 0;
    if (found != 0)
        return out; /* resolved, or NULL: out of memory */
    if (ckpt__path_normalize(&norm, stored) == 0) {
        const char *a = inside(norm.ptr, kd->dir[0]);
        const char *b = inside(norm.ptr, kd->dir[1]);
        out = ckpt__strdup(a > b ? a : b); /* the longer match goes */
    }
    ckpt_buf_dispose(&norm);
    return out;
}

/* `marks[i]` |= LISTED_AGAIN for each entry the list names again further
 * on, under the same spelling or another (listing_key): the later one is
 * kept (a re-saved checkpoint moves to the end, as TensorFlow's list
 * does), so that retention never evicts, and deletes, a checkpoint the
 * list still names. Entries marked INDEX_MISSING take no part: a later
 * spelling that names nothing the operating system finds (the key is
 * lexical: "nosuch/../x" or "link/../x" is "x" to it) must not drop "x",
 * or recovery would lose it with its only working entry. Sorting keeps
 * this linear-logarithmic in a hostile list's length. */
static int mark_repeated(const ckpt__dir_state *ds, const ckpt_state *st,
                         unsigned char *marks)
{
    size_t n = 0;
    listed_entry *order;
    key_dirs kd;
    int err = 0;
    key_dirs_init(&kd, ds, NULL, st->all_paths, st->num_paths);
    order = ckpt__calloc(st->num_paths ? st->num_paths : 1, sizeof(*order));
    if (!order)
        err = ckpt__error_oom();
    for (size_t i = 0; err == 0 && i < st->num_paths; i++) {
        if (marks[i] & INDEX_MISSING)
            continue;
        order[n].path = listing_key(&kd, st->all_paths[i]);
        order[n].i = i;
        if (!order[n++].path)
            err = ckpt__error_oom();
    }
    if (err == 0)
        qsort(order, n, sizeof(*order), by_path_then_position);
    for (size_t k = 0; err == 0 && k + 1 < n; k++)
        if (strcmp(order[k].path, order[k + 1].path) == 0)
            marks[order[k].i] |= LISTED_AGAIN;
    for (size_t k = 0; order && k < n; k++)
        ckpt__free((char *)order[k].path);
    ckpt__free(order);
    key_dirs_dispose(&kd);
    return err;
}

/* `*marks` (allocated): one byte per listed entry, INDEX_MISSING for each
 * whose index has no directory entry (one that is a link to nothing, a
 * file system not mounted yet, stays listed, as its data stays). A failed
 * check is an error, never a missing index (index_exists). */
static int mark_missing(const ckpt__dir_state *ds, const ckpt_state *st,
                        unsigned char **marks)
{
    ckpt_buf prefix = CKPT_BUF_INIT;
    int err = 0;
    *marks = ckpt__calloc(st->num_paths ? st->num_paths : 1, 1);
    if (!*marks)
        return ckpt__error_oom();
    for (size_t i = 0; err >= 0 && i < st->num_paths; i++) {
        err = resolve(ds, st->all_paths[i], &prefix);
        if (err == 0)
            err = index_entry_exists(ds, prefix.ptr);
        if (err == 0)
            (*marks)[i] = INDEX_MISSING;
    }
    ckpt_buf_dispose(&prefix);
    return err < 0 ? err : 0;
}

/* The save time of a listed checkpoint whose state file records none: its
 * index file's modification time (never later than `now`), else `now`. */
static double index_mtime(const ckpt__dir_state *ds, const char *prefix,
                          double now)
{
    ckpt_buf path = CKPT_BUF_INIT;
    double t = now;
    if (ckpt_bundle_index_path(&path, prefix) == 0 &&
        ckpt__fs_stat(ds->fs, path.ptr, NULL, &t) < 0)
        t = now;
    ckpt_buf_dispose(&path);
    ckpt_error_clear();
    return t > 0 && t < now ? t : now;
}

/* The directory's own entry, synced in its parent: whoever created it
 * (the program, or an earlier run killed before it synced it) may have
 * left it unsynced, and a power cut would then take it away with every
 * checkpoint a save reported durable in it. A parent this process may not
 * read (EACCES) is passed over quietly; another failure is a warning:
 * the saves go on, as durable as the directory's entry already is. */
static void sync_own_entry(const ckpt__dir_state *ds)
{
    ckpt__saved_error saved;
    ckpt__error_save(&saved);
    if (ckpt__fs_sync_entry(ds->fs, ds->dir) < 0)
        CKPT__DS_LOG(ds,
                     ckpt_error_last()->code == CKPT_EACCES ? CKPT_LOG_DEBUG
                                                            : CKPT_LOG_WARN,
                     "%s: cannot make the directory's own entry durable (a "
                     "power cut may lose it if it was never synced): %s",
                     ds->dir, ckpt_error_last()->message);
    ckpt__error_restore(&saved);
}

/* The state file's model_checkpoint_path, its latest, kept last: listed
 * elsewhere in the list (a hand edit or update_checkpoint_state that rolled
 * the latest back), it is moved to the end; not listed and its index
 * there, it is appended. TensorFlow's writer always lists the latest last,
 * and retention evicts from the front before a save writes: the list
 * recovery keeps must never lose, nor a failed save stop naming, the
 * checkpoint a restarted job resumes from. 1 when the list changed (the
 * state file is then rewritten, so that the next open finds it in order
 * and says nothing), 0 when not, or an error. */
static int keep_latest_last(ckpt__dir_state *ds, const ckpt_state *st,
                            double now)
{
    const char *model = st->model_checkpoint_path;
    ckpt_buf prefix = CKPT_BUF_INIT;
    size_t at;
    int err;
    if (!model || !*model)
        return 0;
    /* A latest whose index the operating system does not find is not the
     * latest (ckpt_state_latest): never matched by a lexical spelling. */
    err = resolve(ds, model, &prefix);
    if (err == 0)
        err = index_exists(ds, prefix.ptr);
    if (err <= 0)
        goto done;
    at = kept_find_any_spelling(ds, model);
    if (at + 1 < ds->kept.n) {
        CKPT__DS_LOG(ds, CKPT_LOG_WARN,
                     "%s: the latest checkpoint %s is not last in the list of "
                     "checkpoints: moving it last, so that the oldest are "
                     "deleted before it",
                     ds->dir, model);
        kept_move_last(&ds->kept, at);
        err = 0;
    } else if (at == ds->kept.n) {
        CKPT__DS_LOG(ds, CKPT_LOG_WARN,
                     "%s: the latest checkpoint %s is missing from the list "
                     "of checkpoints: listing it last",
                     ds->dir, model);
        err = kept_push(&ds->kept, model, index_mtime(ds, prefix.ptr, now));
    } else {
        err = 1; /* already last */
    }
    /* 0 from moving or pushing: the list changed (1); 1: as it was (0) */
    err = err < 0 ? err : err == 0;
done:
    ckpt_buf_dispose(&prefix);
    return err;
}

/* A hostile state file may list millions of entries: the first few of
 * each kind of problem are logged one by one, then a count. */
#define LOGGED_PER_KIND 10

int ckpt__dir_state_recover(ckpt__dir_state *ds)
{
    size_t repeats = 0, dropped = 0;
    ckpt_state st = CKPT_STATE_INIT;
    ckpt_buf prefix = CKPT_BUF_INIT;
    unsigned char *marks = NULL;
    double now = ckpt_clock_wall(ds->clock);
    int changed = 0;
    int readable = 1; /* the state file read intact, or there is none */
    int err = ds->lock ? 0 : ckpt__dir_lock_acquire(ds->fs, ds->dir, &ds->lock);
    if (err < 0)
        return err;
    sync_own_entry(ds);
    ds->lock_claims = ckpt__dir_lock_claims(ds->lock); /* before the read */
    err = ckpt_state_read(&st, ds->fs, ds->dir);
    if (err == CKPT_ENOTFOUND) {
        /* A fresh directory (or one whose first save a crash cut short:
         * its pending note names the checkpoint nothing names). */
        ckpt_error_clear();
        err = 0;
        goto cleanup;
    }
    if (err == CKPT_ECORRUPT) {
        CKPT__DS_LOG(ds, CKPT_LOG_WARN, "ignoring unreadable state file: %s",
                     ckpt_error_last()->message);
        readable = 0;
        err = 0;
        goto cleanup;
    }
    if (err < 0)
        goto done;
    /* The state file read may be a rename a crash left unsynced: make it
     * durable before anything it no longer names is deleted. */
    err = ckpt__fs_sync_dir(ds->fs, ds->dir);
    if (err == 0)
        err = mark_missing(ds, &st, &marks);
    if (err == 0)
        err = mark_repeated(ds, &st, marks);
    if (err < 0)
        goto done;
    /* The schedule goes on from the last preserved checkpoint (or the
     * start an earlier saver wrote), never from a time still to come. */
    if (st.last_preserved_timestamp > 0.0)
        ds->kept.last_preserved =
            ds->keep_hours > 0 && st.last_preserved_timestamp > now
                ? now
                : st.last_preserved_timestamp;
    for (size_t i = 0; i < st.num_paths; i++) {
        double t;
        if (marks[i] & LISTED_AGAIN) {
            if (++repeats <= LOGGED_PER_KIND)
                CKPT__DS_LOG(ds, CKPT_LOG_WARN,
                             "%s: %s is listed more than once: keeping the "
                             "last",
                             ds->dir, st.all_paths[i]);
            changed = 1;
            continue;
        }
        if (marks[i] & INDEX_MISSING) {
            if (++dropped <= LOGGED_PER_KIND)
                CKPT__DS_LOG(ds, CKPT_LOG_WARN,
                             "%s: dropping %s from the list: its index is "
                             "missing",
                             ds->dir, st.all_paths[i]);
            changed = 1;
            continue;
        }
        if (st.num_timestamps == st.num_paths) {
            t = st.timestamps[i];
        } else { /* mark_missing resolved it too, but kept no prefix */
            err = resolve(ds, st.all_paths[i], &prefix);
            if (err < 0)
                goto done;
            t = index_mtime(ds, prefix.ptr, now);
        }
        if (t > now)
            t = now;
        err = kept_push(&ds->kept, st.all_paths[i], t);
        if (err < 0)
            goto done;
    }
    err = keep_latest_last(ds, &st, now);
    if (err < 0)
        goto done;
    if (err == 1)
        changed = 1; /* written so, another open does not warn again */
    note_owned_paths(ds);
    if (repeats > LOGGED_PER_KIND)
        CKPT__DS_LOG(ds, CKPT_LOG_WARN,
                     "%s: %zu entries listed more than once in all", ds->dir,
                     repeats);
    if (dropped > LOGGED_PER_KIND)
        CKPT__DS_LOG(ds, CKPT_LOG_WARN,
                     "%s: %zu entries dropped from the list in all (their "
                     "index is missing)",
                     ds->dir, dropped);
    /* Retention is not applied here but at the next save (in one pass):
     * a saver opened only to restore deletes nothing, as in TensorFlow. */
    if (over_max_to_keep(ds, ds->kept.n) > 0)
        CKPT__DS_LOG(ds, CKPT_LOG_INFO,
                     "%s lists %zu checkpoints, more than max_to_keep %d: "
                     "the oldest %zu will be deleted at the next save",
                     ds->dir, ds->kept.n, ds->max_to_keep,
                     over_max_to_keep(ds, ds->kept.n));
    if (changed) {
        /* Only tidying: the list in memory is right either way, and the
         * next save writes it. A directory this process may not write (a
         * read-only mount, another user's) must still open, to restore
         * from; the state file on disk then still names what was dropped,
         * which readers skip (B77). Out of memory stays an error. */
        err = write_state(ds, &ds->kept);
        if (err == CKPT_ENOMEM)
            goto done;
        if (err < 0) {
            CKPT__DS_LOG(ds, CKPT_LOG_WARN,
                         "%s: cannot rewrite the state file without the "
                         "entries dropped (the next save writes it): %s",
                         ds->dir, ckpt_error_last()->message);
            ckpt_error_clear();
            err = 0;
        }
    }
cleanup:
    err = ckpt__dir_state_sweep_leftovers(ds, readable ? &st : NULL);
done:
    ckpt__free(marks);
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

int ckpt__dir_state_checkpoint_name(ckpt__dir_state *ds, const char *basename,
                                    int pad_step_number, int64_t step,
                                    ckpt_buf *stored, ckpt_buf *prefix)
{
    ckpt_buf name = CKPT_BUF_INIT;
    int err;
    if (step < 0 && step != CKPT_NO_STEP)
        return ckpt__error(CKPT_EINVAL,
                           "save: step %" PRId64 " is negative: a checkpoint's "
                           "name carries a step of 0 or more (or none: "
                           "CKPT_NO_STEP)",
                           step);
    if (step == CKPT_NO_STEP) {
        if (strcmp(basename, CKPT_STATE_FILENAME) == 0)
            return ckpt__error(CKPT_EINVAL,
                               "save: without a step the checkpoint would be "
                               "named '%s', the state file's name",
                               basename);
        err = ckpt__buf_set(&name, basename);
    } else if (pad_step_number) {
        err = ckpt__buf_printf(&name, "%s-%08" PRId64, basename, step);
    } else {
        err = ckpt__buf_printf(&name, "%s-%" PRId64, basename, step);
    }
    if (err == 0)
        err = ckpt__dir_state_name(ds, name.ptr, stored, prefix);
    ckpt_buf_dispose(&name);
    return err;
}

/* The name a checkpoint about to be replaced is kept under: its basename
 * with ".replaced" before the step ("model.ckpt-25" ->
 * "model.ckpt.replaced-25", so its step still reads from the name), or
 * after the name when it has no step ("model.ckpt.replaced"). */
static int set_aside_name(ckpt_buf *out, const char *stored)
{
    const char *base = strrchr(stored, '/');
    const char *dash = strrchr(base ? base + 1 : stored, '-');
    if (ckpt_checkpoint_step(stored) == CKPT_NO_STEP || !dash)
        return ckpt__buf_printf(out, "%s.replaced", stored);
    return ckpt__buf_printf(out, "%.*s.replaced%s", (int)(dash - stored),
                            stored, dash);
}

/* Keep the listed checkpoint `stored` (entry i, its files at `prefix`)
 * under a second name while a new one of its name is put in place: its
 * files linked to the set-aside name (index first), the directory synced,
 * the state file naming the second name in its place; then its own files
 * removed. The pending note names the second name first, so a crash
 * before the state file names it leaves nothing behind. The commit that
 * names the new checkpoint drops the second name (commit_evicting). 1
 * when done; 0 when not possible here (no link in this file system, or
 * the state file on disk may name that name: ds->unsure): nothing
 * changed, forget the old way; an error when the links, the directory
 * sync or the state file failed (the state file is put back; the
 * checkpoint is still listed and whole). */
static int set_aside(ckpt__dir_state *ds, const char *stored, size_t i,
                     const char *prefix)
{
    ckpt_buf aside = CKPT_BUF_INIT, aside_prefix = CKPT_BUF_INIT;
    ckpt__kept_list noted = {0};
    int replaced = 0;
    int err = set_aside_name(&aside, stored);
    if (err == 0 && ckpt__kept_find(&ds->unsure, aside.ptr) < ds->unsure.n)
        goto done; /* err 0: the old way (that name may be named) */
    if (err == 0)
        err = resolve(ds, aside.ptr, &aside_prefix);
    if (err == 0)
        err = kept_push(&noted, aside.ptr, 0.0);
    if (err < 0)
        goto done;
    ckpt__pending_note_write(ds, stored, &noted);
    /* Listed beside the checkpoint itself, the second name holds an older
     * state of it (a replacement cut short before the commit that drops
     * it, by a version that did not drop it): unlisted first, never left
     * as the latest while this one is replaced. */
    if (ckpt__kept_find(&ds->kept, aside.ptr) < ds->kept.n) {
        ckpt__kept_list without = {0};
        size_t before = 0; /* entries of the second name ahead of entry i */
        for (size_t k = 0; k < i; k++)
            before += strcmp(ds->kept.paths[k], aside.ptr) == 0;
        err = kept_copy_except(&without, &ds->kept, aside.ptr);
        if (err == 0)
            err = write_state(ds, &without);
        if (err < 0) {
            kept_dispose(&without);
            (void)rollback_state(ds);
            goto done;
        }
        kept_dispose(&ds->kept);
        ds->kept = without;
        /* entry i moves up by those; not found again by `stored`, which
         * may spell the listed name another way (kept_find_any_spelling) */
        i -= before;
    }
    /* files of that name nothing names: an earlier set-aside's, cut short
     * (the name is reserved for that, saver.h CKPT_NO_STEP) */
    if (index_exists(ds, aside_prefix.ptr) == 1)
        CKPT__DS_LOG(ds, CKPT_LOG_WARN,
                     "%s: removing %s, the second name the saver keeps %s "
                     "under while it is replaced (left by a replacement cut "
                     "short)",
                     ds->dir, aside.ptr, stored);
    (void)ckpt__remove_checkpoint_files(ds->fs, aside_prefix.ptr);
    err = ckpt__link_checkpoint_files(ds->fs, prefix, aside_prefix.ptr);
    if (err == 0)
        err = ckpt__fs_sync_dir(ds->fs, ds->dir);
    if (err < 0) {
        ckpt__saved_error saved;
        int no_links = err == CKPT_ENOTSUP;
        ckpt__error_save(&saved);
        (void)ckpt__remove_checkpoint_files(ds->fs, aside_prefix.ptr);
        ckpt__error_restore(&saved);
        if (!no_links) /* an I/O error, a full disk: the save fails here,
                          the old checkpoint still named and whole */
            goto done;
        CKPT__DS_LOG(ds, CKPT_LOG_DEBUG,
                     "%s: not keeping %s under a second name while it is "
                     "replaced: %s",
                     ds->dir, stored, ckpt_error_last()->message);
        ckpt_error_clear();
        err = 0;
        goto done; /* the old way: this file system has no links */
    }
    {
        char *was = ds->kept.paths[i];
        char *now = ckpt__strdup(aside.ptr);
        if (!now) {
            err = ckpt__error_oom();
            goto done;
        }
        ds->kept.paths[i] = now;
        err = write_state_replacing(ds, &ds->kept, &replaced);
        if (err < 0) {
            ckpt__saved_error saved;
            ds->kept.paths[i] = was;
            ckpt__free(now);
            ckpt__error_save(&saved);
            /* The state file on disk names the old name again: the second
             * one goes. Or it may name the second one: then it is kept,
             * and carried in the notes until a state file is written
             * without it (as a failed save's checkpoint is). */
            if (!replaced || rollback_state(ds) == 0)
                (void)ckpt__remove_checkpoint_files(ds->fs, aside_prefix.ptr);
            else if (ckpt__kept_find(&ds->unsure, aside.ptr) == ds->unsure.n)
                (void)kept_push(&ds->unsure, aside.ptr, 0.0);
            ckpt__error_restore(&saved);
            goto done;
        }
        ckpt__free(was);
    }
    err = ckpt__remove_checkpoint_files(ds->fs, prefix);
    if (err == 0)
        err = 1;
done:
    kept_dispose(&noted);
    ckpt_buf_dispose(&aside);
    ckpt_buf_dispose(&aside_prefix);
    return err;
}

/* Move `stored`'s second name, when `next` lists it, into `evicted`. */
static int drop_set_aside(ckpt__kept_list *next, const char *stored,
                          ckpt__kept_list *evicted)
{
    ckpt_buf aside = CKPT_BUF_INIT;
    int err = set_aside_name(&aside, stored);
    size_t k = err == 0 ? ckpt__kept_find(next, aside.ptr) : next->n;
    if (k < next->n) {
        kept_remove(next, k, NULL);
        err = kept_push(evicted, aside.ptr, 0.0);
    }
    ckpt_buf_dispose(&aside);
    return err;
}

/* The entry of ds->kept naming the checkpoint `stored` names, under that
 * spelling or another (listing_key); ds->kept.n when none. */
static size_t kept_find_any_spelling(const ckpt__dir_state *ds,
                                     const char *stored)
{
    size_t i = ckpt__kept_find(&ds->kept, stored);
    key_dirs kd;
    char *key;
    if (i < ds->kept.n)
        return i;
    key_dirs_init(&kd, ds, stored, ds->kept.paths, ds->kept.n);
    key = listing_key(&kd, stored);
    for (i = 0; key && i < ds->kept.n; i++) {
        char *other = listing_key(&kd, ds->kept.paths[i]);
        int same = other && strcmp(key, other) == 0;
        ckpt__free(other);
        if (same)
            break;
    }
    if (!key) /* no memory: the one spelling only */
        i = ds->kept.n;
    ckpt__free(key);
    key_dirs_dispose(&kd);
    return i;
}

int ckpt__dir_state_forget(ckpt__dir_state *ds, const char *stored)
{
    ckpt_buf prefix = CKPT_BUF_INIT;
    size_t i = kept_find_any_spelling(ds, stored);
    int err = resolve(ds, stored, &prefix);
    if (err == 0)
        err = index_exists(ds, prefix.ptr);
    if (err == 1 && i < ds->kept.n) {
        err = set_aside(ds, stored, i, prefix.ptr);
        if (err != 0)
            goto done; /* kept under its second name, or an error */
        err = 1;
    }
    if (err >= 0 && i < ds->kept.n) {
        int rc;
        kept_remove(&ds->kept, i, NULL);
        rc = write_state(ds, &ds->kept);
        if (rc < 0)
            err = rc;
    }
    /* Index first, then its data files, whatever their shard count (a
     * checkpoint of this name written by another number of ranks would
     * keep files the new one's renames do not replace). */
    if (err == 1)
        err = ckpt__remove_checkpoint_files(ds->fs, prefix.ptr);
done:
    ckpt_buf_dispose(&prefix);
    return err < 0 ? err : 0;
}

void ckpt__dir_state_delete_evicted(ckpt__dir_state *ds,
                                    ckpt__kept_list *evicted)
{
    if (evicted->n > 0 && ckpt__dir_lock_check(ds->lock, ds->dir) < 0) {
        CKPT__DS_LOG(ds, CKPT_LOG_WARN,
                     "not deleting %zu evicted "
                     "checkpoint(s): %s",
                     evicted->n, ckpt_error_last()->message);
        ckpt_error_clear();
        kept_dispose(evicted);
        return;
    }
    if (evicted->n > 0) {
        ckpt__name_index kept = {0};
        ckpt__data_files data = {0};
        eviction_lookups lk = {NULL, NULL, {NULL, 0}, 0};
        /* Without memory for the index, or the listing failing, each
         * deletion looks for itself (and reports what it finds). */
        if (ckpt__kept_index(&kept, &ds->kept) == 0)
            lk.kept = &kept;
        if (ckpt__data_files_list(&data, ds->fs, ds->dir) == 0)
            lk.data = &data;
        else
            ckpt_error_clear();
        /* without memory for the batch's prefixes, one at a time */
        ckpt_buf one = CKPT_BUF_INIT;
        ckpt_buf *prefixes = ckpt__calloc(evicted->n, sizeof(*prefixes));
        size_t batch = prefixes ? evicted->n : 1;
        for (size_t i = 0; i < evicted->n; i += batch)
            delete_batch(ds, &lk, evicted->paths + i,
                         batch < evicted->n - i ? batch : evicted->n - i,
                         prefixes ? prefixes : &one);
        ckpt__free(prefixes);
        ckpt__data_files_dispose(&data);
        ckpt__name_index_dispose(&kept);
        ckpt__name_index_dispose(&lk.unsure);
    }
    kept_dispose(evicted);
    ckpt__pending_note_remove(ds); /* the save is done with */
}

int ckpt__dir_state_reconcile(ckpt__dir_state *ds)
{
    ckpt__kept_list next = {0};
    ckpt__kept_list evicted = {0};
    int err;
    if (ds->reconciled || over_max_to_keep(ds, ds->kept.n) == 0) {
        ds->reconciled = 1;
        return 0;
    }
    err = ckpt__dir_lock_check(ds->lock, ds->dir);
    if (err == 0)
        err = kept_copy_except(&next, &ds->kept, "");
    if (err == 0)
        err = apply_retention(ds, &next, ckpt_clock_wall(ds->clock), &evicted);
    if (err == 0 && evicted.n > 0)
        ckpt__pending_note_write(ds, NULL, &evicted);
    if (err == 0)
        err = write_state(ds, &next);
    if (err < 0) {
        /* nothing deleted; the list stays as recovered, to try again */
        kept_dispose(&next);
        kept_dispose(&evicted);
        return err;
    }
    kept_dispose(&ds->kept);
    ds->kept = next;
    ds->reconciled = 1;
    ckpt__dir_state_delete_evicted(ds, &evicted);
    return 0;
}

/* Failed saves' checkpoints the state file may have named (ds->unsure) go
 * with what retention evicts once this state file no longer names them:
 * each one that is not `stored` and that neither `next` nor `evicted`
 * lists is appended to `evicted`. One index of those lists' names, so u
 * of them against N listed cost O(u + N), not O(u * N). 0 or
 * CKPT_ENOMEM. */
static int evict_unsure(const ckpt__dir_state *ds, const char *stored,
                        const ckpt__kept_list *next, ckpt__kept_list *evicted)
{
    ckpt__name_index listed = {0};
    int err;
    if (ds->unsure.n == 0)
        return 0;
    err =
        ckpt__name_index_reserve(&listed, next->n + evicted->n + ds->unsure.n);
    if (err == 0)
        err = ckpt__kept_index(&listed, next);
    if (err == 0)
        err = ckpt__kept_index(&listed, evicted);
    for (size_t i = 0; err == 0 && i < ds->unsure.n; i++) {
        const char *name = ds->unsure.paths[i];
        if (strcmp(name, stored) == 0 ||
            ckpt__name_index_find(&listed, name) != SIZE_MAX)
            continue;
        err = kept_push_entry(evicted, &ds->unsure, i);
        if (err == 0)
            ckpt__name_index_put(&listed, evicted->paths[evicted->n - 1], 0);
    }
    ckpt__name_index_dispose(&listed);
    return err;
}

int ckpt__dir_state_commit_evicting(ckpt__dir_state *ds, const char *stored,
                                    double save_time, int *may_be_named,
                                    ckpt__kept_list *evicted_out)
{
    ckpt__kept_list next = {0};
    ckpt__kept_list evicted = {0};
    int replaced = 0;
    int err;
    *may_be_named = 0;
    err = ckpt__dir_lock_check(ds->lock, ds->dir);
    if (err == 0)
        err = kept_copy_except(&next, &ds->kept, stored);
    if (err == 0)
        err = kept_push(&next, stored, save_time);
    /* The checkpoint's second name (kept while it was replaced, by this
     * process or one a crash stopped) holds an older state of it: it goes
     * now that the new one is named (before retention counts it). */
    if (err == 0)
        err = drop_set_aside(&next, stored, &evicted);
    if (err == 0)
        err = apply_retention(ds, &next, save_time, &evicted);
    if (err == 0)
        err = evict_unsure(ds, stored, &next, &evicted);
    if (err < 0)
        goto done;     /* nothing written: the state file is as it was */
    if (evicted.n > 0) /* with the new checkpoint's name, noted at its start */
        ckpt__pending_note_write(ds, stored, &evicted);
    err = write_state_replacing(ds, &next, &replaced);
    if (err < 0) {
        /* A failure before the rename (a full disk for the temporary file)
         * left the state file as it was: nothing to put back. One after it
         * (the directory sync): put the current list back, keeping the
         * original error. If that fails too, the state file on disk may
         * name the new checkpoint: kept in the notes of the saves after
         * this one until a state file is written without it. */
        if (replaced && rollback_state(ds) < 0) {
            ckpt__saved_error saved; /* the update's error is the one */
            *may_be_named = 1;
            ckpt__error_save(&saved);
            if (ckpt__kept_find(&ds->unsure, stored) == ds->unsure.n)
                (void)kept_push(&ds->unsure, stored, 0.0); /* else: kept */
            ckpt__error_restore(&saved);
        }
        goto done;
    }
    kept_dispose(&ds->kept);
    kept_dispose(&ds->unsure);
    ds->kept = next;
    memset(&next, 0, sizeof(next));
    if (evicted.n == 0)
        ckpt__pending_note_remove(ds); /* named, nothing to delete */
    *evicted_out = evicted;
    memset(&evicted, 0, sizeof(evicted));
done:
    kept_dispose(&next);
    kept_dispose(&evicted);
    return err;
}

void ckpt__eviction_queue(ckpt__eviction *q, ckpt__dir_state *ds,
                          ckpt__kept_list *evicted, pthread_cond_t *cv)
{
    if (evicted->n == 0) {
        kept_dispose(evicted);
        return;
    }
    if (q->list.n > 0) /* not expected: each commit waits for the last */
        ckpt__dir_state_delete_evicted(ds, &q->list);
    q->list = *evicted;
    q->pending = 1;
    memset(evicted, 0, sizeof(*evicted));
    if (cv)
        pthread_cond_broadcast(cv);
}

void ckpt__eviction_run(ckpt__eviction *q, ckpt__dir_state *ds,
                        pthread_mutex_t *mu, pthread_cond_t *cv)
{
    ckpt__kept_list l = q->list;
    memset(&q->list, 0, sizeof(q->list));
    pthread_mutex_unlock(mu);
    ckpt__dir_state_delete_evicted(ds, &l);
    pthread_mutex_lock(mu);
    q->pending = 0;
    pthread_cond_broadcast(cv);
}
