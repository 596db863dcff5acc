/* saver/dir_sweep.c - recognising what interrupted saves and deletions
 * leave in a checkpoint directory: temporary files and data files whose
 * index is missing (nothing can read either: removed; of a step's name or
 * a replaced checkpoint's second name), and complete numbered checkpoints the
 * state file does not list (readable: left in place, with a warning), and
 * unlisted indexes none of whose data files exist (unreadable: removed); and
 * removing one checkpoint's files, index first, or linking them under a second
 * name. Only names of our own patterns are ever touched (see dir_state.c for
 * what "our own" means), and a leftover that cannot be removed is logged, not
 * fatal. */
#include "io/fs_internal.h"
#include "saver_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whether `p` is ".data-<digits>-of-<digits>" and nothing else. */
static int is_data_suffix(const char *p)
{
    if (strncmp(p, ".data-", 6) != 0)
        return 0;
    p += 6;
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

/* Whether `name` is "<base>.data-<digits>-of-<digits>". */
static int is_data_file_of(const char *name, const char *base)
{
    size_t n = strlen(base);
    return strncmp(name, base, n) == 0 && is_data_suffix(name + n);
}

/* The length of the checkpoint name `name` is a data file of (what comes
 * before its last '.'), or 0 when it is no data file. A data file belongs
 * to one checkpoint only: the suffix holds no other '.'. */
static size_t data_stem_len(const char *name)
{
    const char *dot = strrchr(name, '.');
    return dot && dot > name && is_data_suffix(dot) ? (size_t)(dot - name) : 0;
}

/* Whether `p` is one or more lowercase hex digits and nothing else. */
static int all_hex_digits(const char *p)
{
    size_t digits = strspn(p, "0123456789abcdef");
    return digits > 0 && p[digits] == '\0';
}

/* Whether `name` is a temporary file of an interrupted save: a bundle
 * file's "<name>.tempstate<hex digits>" or the state file's
 * "checkpoint.tmp<hex digits>" (TensorFlow writes decimal or hex digits
 * there too). Nothing else: "checkpoint.tmp" or "checkpoint.tmpl.txt" are
 * a user's files. */
static int is_temp_file(const char *name)
{
    static const char state_tmp[] = CKPT_STATE_FILENAME ".tmp";
    const char *t = strstr(name, ".tempstate");
    if (t)
        return all_hex_digits(t + 10);
    return strncmp(name, state_tmp, sizeof(state_tmp) - 1) == 0 &&
           all_hex_digits(name + sizeof(state_tmp) - 1);
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
    int err = ckpt__reserve_one(&l->names, &l->cap, l->n, sizeof(*l->names), 8);
    if (err < 0) {
        l->err = err;
        return 1;
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

/* Remove every listed name in `dir`, trying them all. Without `sweep`
 * the first error other than "not found" is returned. With it (a sweep of
 * leftovers) one that cannot be removed (a directory of that name, no
 * permission) is logged and left, never a reason to refuse the directory;
 * only running out of memory is returned, and `*removed` (when given)
 * counts the names that went, which then come first in `l`. */
static int remove_names(const ckpt_fs *fs, const char *dir, struct name_list *l,
                        const ckpt__dir_state *sweep, size_t *removed)
{
    ckpt_buf path = CKPT_BUF_INIT;
    int first = 0;
    if (removed)
        *removed = 0;
    for (size_t i = 0; i < l->n && first != CKPT_ENOMEM; i++) {
        int err = ckpt__path_join(&path, dir, l->names[i]);
        if (err == 0)
            err = ckpt__fs_remove(fs, path.ptr);
        if (err == 0 && removed) {
            char *gone = l->names[i];
            l->names[i] = l->names[*removed];
            l->names[(*removed)++] = gone;
        }
        if (err == 0 || err == CKPT_ENOTFOUND)
            continue;
        if (sweep && err != CKPT_ENOMEM)
            CKPT__DS_LOG(sweep, CKPT_LOG_WARN, "%s: leaving %s: %s", dir,
                         l->names[i], ckpt_error_last()->message);
        else if (first == 0)
            first = err;
    }
    ckpt_buf_dispose(&path);
    if (sweep && first == 0)
        ckpt_error_clear();
    return first;
}

/* Order data file names by the checkpoint they belong to, then by name. */
static int stem_cmp(const char *a, size_t an, const char *b, size_t bn)
{
    int c = memcmp(a, b, an < bn ? an : bn);
    return c != 0 ? c : (an > bn) - (an < bn);
}

static int by_stem_then_name(const void *x, const void *y)
{
    const char *a = *(char *const *)x, *b = *(char *const *)y;
    int c = stem_cmp(a, data_stem_len(a), b, data_stem_len(b));
    return c != 0 ? c : strcmp(a, b);
}

static int collect_data_name(const char *name, void *payload)
{
    return data_stem_len(name) ? collect_name_always(name, payload) : 0;
}

int ckpt__data_files_list(ckpt__data_files *out, const ckpt_fs *fs,
                          const char *dir)
{
    struct name_list all = {NULL, NULL, 0, 0, 0};
    int err = ckpt__fs_list(fs, dir, collect_data_name, &all);
    if (all.err < 0)
        err = all.err;
    if (err < 0) {
        name_list_dispose(&all);
        return err;
    }
    if (all.n > 1)
        qsort(all.names, all.n, sizeof(*all.names), by_stem_then_name);
    out->dir = ckpt__strdup(dir);
    if (!out->dir) {
        name_list_dispose(&all);
        return ckpt__error_oom();
    }
    out->names = all.names;
    out->n = all.n;
    return 0;
}

void ckpt__data_files_dispose(ckpt__data_files *l)
{
    struct name_list all = {NULL, l->names, l->n, l->n, 0};
    name_list_dispose(&all);
    ckpt__free(l->dir);
    l->dir = NULL;
    l->names = NULL;
    l->n = 0;
}

/* The data files of checkpoint `base` in `l`: a sub-list borrowing the
 * names (a binary search for the first, the rest follow it). */
static struct name_list data_files_of(const ckpt__data_files *l,
                                      const char *base)
{
    struct name_list found = {NULL, NULL, 0, 0, 0};
    size_t bn = strlen(base), lo = 0, hi = l->n, end;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const char *m = l->names[mid];
        if (stem_cmp(m, data_stem_len(m), base, bn) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (end = lo; end < l->n; end++) {
        const char *m = l->names[end];
        if (stem_cmp(m, data_stem_len(m), base, bn) != 0)
            break;
    }
    found.names = l->names + lo;
    found.n = end - lo;
    return found;
}

int ckpt__remove_checkpoint_index(const ckpt_fs *fs, const char *prefix)
{
    ckpt_buf path = CKPT_BUF_INIT;
    int err = ckpt_bundle_index_path(&path, prefix);
    if (err == 0)
        err = ckpt__fs_remove(fs, path.ptr);
    /* An index already gone may be an earlier removal whose directory
     * fsync failed (a deletion tried again): its removal is synced all the
     * same. */
    if (err == CKPT_ENOTFOUND) {
        ckpt_error_clear();
        err = 0;
    }
    ckpt_buf_dispose(&path);
    return err;
}

int ckpt__remove_checkpoint_rest(const ckpt_fs *fs, const char *prefix,
                                 const ckpt__data_files *listed)
{
    ckpt_buf path = CKPT_BUF_INIT;
    ckpt_buf dir = CKPT_BUF_INIT;
    struct name_list data = {ckpt__path_basename(prefix), NULL, 0, 0, 0};
    int err = ckpt__path_dirname(&dir, prefix);
    if (err == 0)
        err = ckpt__buf_printf(&path, "%s.meta", prefix);
    if (err == 0)
        err = ckpt__fs_remove(fs, path.ptr);
    if (err < 0 && err != CKPT_ENOTFOUND)
        goto done;
    if (err == CKPT_ENOTFOUND)
        ckpt_error_clear();
    /* A listing of another directory (a checkpoint the state file names
     * elsewhere, or the same one spelt otherwise) is not used. */
    if (listed && strcmp(listed->dir, dir.ptr) == 0) {
        struct name_list own = data_files_of(listed, data.base);
        err = remove_names(fs, dir.ptr, &own, NULL, NULL);
        goto done;
    }
    err = ckpt__fs_list(fs, dir.ptr, collect_name, &data);
    if (data.err < 0)
        err = data.err;
    if (err < 0)
        goto done;
    err = remove_names(fs, dir.ptr, &data, NULL, NULL);
done:
    name_list_dispose(&data);
    ckpt_buf_dispose(&path);
    ckpt_buf_dispose(&dir);
    return err;
}

/* The index goes first: without it the checkpoint is never complete. Its
 * removal is made durable before any data file goes: removals in one
 * directory reach the disk in any order until it is fsynced, and a power
 * cut that kept a data file's removal but lost the index's would leave an
 * index whose data is gone, which no sweep removes (only data without an
 * index is recognisably left over) and which, when a checkpoint of the
 * same name is being written (forget), would look complete over the new
 * data files. */
int ckpt__remove_checkpoint_files_listed(const ckpt_fs *fs, const char *prefix,
                                         const ckpt__data_files *listed)
{
    ckpt_buf dir = CKPT_BUF_INIT;
    int err = ckpt__remove_checkpoint_index(fs, prefix);
    if (err == 0)
        err = ckpt__path_dirname(&dir, prefix);
    if (err == 0)
        err = ckpt__fs_sync_dir(fs, dir.ptr);
    if (err == 0)
        err = ckpt__remove_checkpoint_rest(fs, prefix, listed);
    ckpt_buf_dispose(&dir);
    return err;
}

int ckpt__remove_checkpoint_files(const ckpt_fs *fs, const char *prefix)
{
    return ckpt__remove_checkpoint_files_listed(fs, prefix, NULL);
}

int ckpt__link_checkpoint_files(const ckpt_fs *fs, const char *from,
                                const char *to)
{
    ckpt_buf src = CKPT_BUF_INIT, dst = CKPT_BUF_INIT, dir = CKPT_BUF_INIT;
    const char *from_base = ckpt__path_basename(from);
    struct name_list data = {from_base, NULL, 0, 0, 0};
    int err = ckpt_bundle_index_path(&src, from);
    if (err == 0)
        err = ckpt_bundle_index_path(&dst, to);
    /* The index first: a second name is never data without its index. */
    if (err == 0)
        err = ckpt__fs_link(fs, src.ptr, dst.ptr);
    if (err == 0)
        err = ckpt__path_dirname(&dir, from);
    if (err == 0)
        err = ckpt__fs_list(fs, dir.ptr, collect_name, &data);
    if (err == 0 && data.err < 0)
        err = data.err;
    for (size_t i = 0; err == 0 && i < data.n; i++) {
        ckpt__buf_clear(&src);
        ckpt__buf_clear(&dst);
        err = ckpt__path_join(&src, dir.ptr, data.names[i]);
        if (err == 0) /* the same data file name under `to` */
            err = ckpt__buf_printf(&dst, "%s%s", to,
                                   data.names[i] + strlen(from_base));
        if (err == 0)
            err = ckpt__fs_link(fs, src.ptr, dst.ptr);
    }
    name_list_dispose(&data);
    ckpt_buf_dispose(&src);
    ckpt_buf_dispose(&dst);
    ckpt_buf_dispose(&dir);
    return err;
}

/* Another saver of this process uses the directory too: what looks left
 * over may be its save in flight, so nothing is swept (the first saver
 * swept when it opened; a later sole saver sweeps again). */
static int directory_shared(const ckpt__dir_state *ds)
{
    if (!ckpt__dir_lock_shared(ds->lock))
        return 0;
    CKPT__DS_LOG(ds, CKPT_LOG_DEBUG,
                 "%s: another saver of this process uses it: not sweeping "
                 "leftovers",
                 ds->dir);
    return 1;
}

int ckpt__dir_state_remove_temps(ckpt__dir_state *ds)
{
    struct name_list temps = {NULL, NULL, 0, 0, 0};
    int err;
    if (directory_shared(ds))
        return 0;
    err = ckpt__fs_list(ds->fs, ds->dir, collect_name, &temps);
    if (temps.err < 0)
        err = temps.err;
    if (err == 0 && temps.n > 0) {
        size_t removed;
        err = remove_names(ds->fs, ds->dir, &temps, ds, &removed);
        if (removed > 0)
            CKPT__DS_LOG(ds, CKPT_LOG_INFO,
                         "%s: removed %zu temporary file(s) of interrupted "
                         "saves",
                         ds->dir, removed);
    }
    name_list_dispose(&temps);
    return err;
}

static int is_index_suffix(const char *p)
{
    return strcmp(p, ".index") == 0;
}

/* The length of the checkpoint name of the saver's own that `name` starts
 * with, when `suffix` accepts what follows it (a data file's or an
 * index's ending); else 0. Its own names: "<base>-<digits>" (a step) and
 * the second names a replaced checkpoint is kept under,
 * "<base>.replaced-<digits>" and "<base>.replaced" (dir_state.c's
 * set_aside_name, reserved to the saver: saver.h, CKPT_NO_STEP). A
 * checkpoint "<base>" of a save without a step is not taken: files of
 * that name may be a user's (the next such save replaces them). */
static size_t own_stem_len(const char *name, const char *base,
                           int (*suffix)(const char *))
{
    size_t n = strlen(base);
    const char *p = name + n;
    int second = 0;
    if (strncmp(name, base, n) != 0)
        return 0;
    if (strncmp(p, ".replaced", 9) == 0) {
        p += 9;
        second = 1;
    }
    if (*p == '-') {
        size_t digits = strspn(p + 1, "0123456789");
        if (digits == 0)
            return 0;
        p += 1 + digits;
    } else if (!second) {
        return 0;
    }
    return suffix(p) ? (size_t)(p - name) : 0;
}

struct orphan_scan {
    ckpt__dir_state *ds;
    struct name_list found;
};

/* Collect data files of the saver's own names (own_stem_len: a step's, a
 * replaced checkpoint's second name) whose index does not exist (no entry
 * of its name: an index that is a link to nothing, a file system not
 * mounted yet, is there, and its data stays): an
 * interrupted save (data renamed, index not yet), an interrupted deletion
 * (index removed first: retention's of a second name too) or an
 * interrupted set-aside (its links not yet durable). Nothing can ever
 * read them. */
static int collect_orphan(const char *name, void *payload)
{
    struct orphan_scan *sc = payload;
    size_t stem = own_stem_len(name, sc->ds->basename, is_data_suffix);
    ckpt_buf index_name = CKPT_BUF_INIT, index = CKPT_BUF_INIT;
    int orphan = 0;
    if (stem == 0)
        return 0;
    if (ckpt__buf_printf(&index_name, "%.*s.index", (int)stem, name) == 0 &&
        ckpt__path_join(&index, sc->ds->dir, index_name.ptr) == 0)
        orphan = ckpt__fs_entry_exists(sc->ds->fs, index.ptr) == 0;
    ckpt_buf_dispose(&index_name);
    ckpt_buf_dispose(&index);
    ckpt_error_clear();
    return orphan ? collect_name_always(name, &sc->found) : 0;
}

/* The index's absence may be a removal not yet durable (a save that gave
 * up when its directory fsync failed keeps its data files for this sweep,
 * bundle_writer.c; an open that read no state file has not fsynced the
 * directory): removals in one directory reach the disk in any order until
 * it is fsynced, so it is fsynced before any data file goes, and when that
 * fails they stay (a power cut could otherwise bring the index back without
 * its data). */
static int remove_orphan_data(ckpt__dir_state *ds)
{
    struct orphan_scan sc = {ds, {NULL, NULL, 0, 0, 0}};
    int err = ckpt__fs_list(ds->fs, ds->dir, collect_orphan, &sc);
    if (sc.found.err < 0)
        err = sc.found.err;
    if (err == 0 && sc.found.n > 0 && ckpt__fs_sync_dir(ds->fs, ds->dir) < 0) {
        CKPT__DS_LOG(ds, CKPT_LOG_WARN,
                     "%s: leaving %zu data file(s) without an index (%s%s): "
                     "%s",
                     ds->dir, sc.found.n, sc.found.names[0],
                     sc.found.n > 1 ? ", ..." : "", ckpt_error_last()->message);
        ckpt_error_clear();
    } else if (err == 0 && sc.found.n > 0) {
        size_t removed;
        err = remove_names(ds->fs, ds->dir, &sc.found, ds, &removed);
        if (removed > 0)
            CKPT__DS_LOG(ds, CKPT_LOG_INFO,
                         "%s: removed %zu data file(s) without an index (left "
                         "by an interrupted save or deletion)",
                         ds->dir, removed);
    }
    name_list_dispose(&sc.found);
    return err;
}

/* Copy "<base>-<digits>" into `stem` (STEM_CAP bytes) when `name` is that
 * followed by ".index"; 1 if so, else 0. */
#define STEM_CAP 512
static int stepped_index_stem(const char *name, const char *base, char *stem)
{
    size_t n = strlen(base), digits;
    if (strncmp(name, base, n) != 0 || name[n] != '-')
        return 0;
    digits = strspn(name + n + 1, "0123456789");
    if (digits == 0 || strcmp(name + n + 1 + digits, ".index") != 0 ||
        n + 1 + digits >= STEM_CAP)
        return 0;
    memcpy(stem, name, n + 1 + digits);
    stem[n + 1 + digits] = '\0';
    return 1;
}

struct numbered_scan {
    const char *base;
    size_t count;
    int64_t newest_step;
    char newest[STEM_CAP];
};

static int count_numbered(const char *name, void *payload)
{
    struct numbered_scan *sc = payload;
    char stem[STEM_CAP];
    int64_t step;
    if (!stepped_index_stem(name, sc->base, stem))
        return 0;
    step = ckpt_checkpoint_step(stem);
    if (sc->count++ == 0 || step > sc->newest_step) {
        sc->newest_step = step;
        memcpy(sc->newest, stem, strlen(stem) + 1);
    }
    return 0;
}

int ckpt__dir_state_numbered(const ckpt__dir_state *ds, size_t *count,
                             ckpt_buf *newest)
{
    struct numbered_scan sc;
    int err;
    memset(&sc, 0, sizeof(sc));
    sc.base = ds->basename;
    *count = 0;
    err = ckpt__fs_list(ds->fs, ds->dir, count_numbered, &sc);
    if (err == 0 && sc.count > 0)
        err = ckpt__buf_set(newest, sc.newest);
    if (err == 0)
        *count = sc.count;
    return err;
}

struct dataless_scan {
    const ckpt__dir_state *ds;
    const ckpt__data_files *data; /* the directory's data files */
    struct name_list found;
};

/* Whether the state file names `stem` (a checkpoint of this directory,
 * however its path is spelt: compared by last component, so a name it
 * lists anywhere is never taken for a leftover). */
static int listed_anywhere(const ckpt__kept_list *kept, const char *stem)
{
    for (size_t i = 0; i < kept->n; i++) {
        const char *slash = strrchr(kept->paths[i], '/');
        if (strcmp(slash ? slash + 1 : kept->paths[i], stem) == 0)
            return 1;
    }
    return 0;
}

/* Collect index files of the saver's own names (own_stem_len) with no
 * data file of theirs at all that the state file does not name. */
static int collect_dataless(const char *name, void *payload)
{
    struct dataless_scan *sc = payload;
    char stem[STEM_CAP];
    size_t len = own_stem_len(name, sc->ds->basename, is_index_suffix);
    if (len == 0 || len >= STEM_CAP)
        return 0;
    memcpy(stem, name, len);
    stem[len] = '\0';
    if (data_files_of(sc->data, stem).n > 0 ||
        listed_anywhere(&sc->ds->kept, stem))
        return 0;
    return collect_name_always(name, &sc->found);
}

/* An index without any of its data files names data that does not exist:
 * nothing can read it, and no save in flight ever looks so (data files
 * are renamed into place before the index, here and in TensorFlow). A
 * save or deletion a power cut cut short on a failing disk, by an older
 * version, could leave one (dir_sweep's removals now make the index's
 * removal durable first, and bundle_writer.c's too). Left in place, it
 * would pass for a checkpoint nobody lists and be kept for ever. One the
 * state file names, or any while the state file does not parse, is never
 * removed (ckpt ls and verify report it); one
 * that still has some of its data files is left with the unlisted ones. */
static int remove_dataless_indexes(ckpt__dir_state *ds)
{
    ckpt__data_files data = {0};
    struct dataless_scan sc = {ds, &data, {NULL, NULL, 0, 0, 0}};
    int err = ckpt__data_files_list(&data, ds->fs, ds->dir);
    if (err == 0)
        err = ckpt__fs_list(ds->fs, ds->dir, collect_dataless, &sc);
    if (err == 0 && sc.found.err < 0)
        err = sc.found.err;
    if (err == 0 && sc.found.n > 0) {
        size_t removed;
        err = remove_names(ds->fs, ds->dir, &sc.found, ds, &removed);
        if (removed > 0)
            CKPT__DS_LOG(ds, CKPT_LOG_WARN,
                         "%s: removed %zu index file(s) without any of their "
                         "data files (%s%s; unreadable, left by a save or "
                         "deletion a crash cut short)",
                         ds->dir, removed, sc.found.names[0],
                         removed > 1 ? ", ..." : "");
    }
    name_list_dispose(&sc.found);
    ckpt__data_files_dispose(&data);
    return err;
}

struct stale_scan {
    const ckpt__dir_state *ds;
    const ckpt__name_index *kept; /* the kept list's names */
    struct name_list found;
};

/* Collect "<basename>-<step>" of every "<basename>-<step>.index" that the
 * state file does not list. */
static int collect_stale(const char *name, void *payload)
{
    struct stale_scan *sc = payload;
    char stem[STEM_CAP];
    if (!stepped_index_stem(name, sc->ds->basename, stem) ||
        ckpt__name_index_find(sc->kept, stem) != SIZE_MAX)
        return 0;
    return collect_name_always(stem, &sc->found);
}

/* A checkpoint of our naming with its index that the state file does not
 * list is readable: a save a crash cut short between its index's rename
 * and the state file (never reported durable), a deletion a crash cut
 * short before its index went, or files a user or an older state file put
 * there. The saver cannot tell these apart for certain, so it deletes none
 * of them: it warns, once per open, and retention never touches them
 * (TensorFlow leaves unlisted checkpoints on disk too). Only when the
 * state file lists checkpoints of our own naming. */
static int warn_unlisted_checkpoints(ckpt__dir_state *ds)
{
    ckpt__name_index names = {0};
    struct stale_scan sc = {ds, &names, {NULL, NULL, 0, 0, 0}};
    const ckpt__kept_list *kept = &ds->kept;
    int err;
    if (ds->keep_hours > 0 || ds->max_to_keep <= 0 || kept->n == 0)
        return 0;
    for (size_t i = 0; i < kept->n; i++)
        if (ckpt_checkpoint_step(kept->paths[i]) == CKPT_NO_STEP ||
            !ckpt__dir_state_owns(ds, kept->paths[i]) ||
            strchr(kept->paths[i], '/'))
            return 0; /* not our naming: say nothing */
    /* Indexed once, so that the scan is linear in the directory's size,
     * not its size times the list's. */
    err = ckpt__kept_index(&names, kept);
    if (err < 0)
        return err;
    err = ckpt__fs_list(ds->fs, ds->dir, collect_stale, &sc);
    if (sc.found.err < 0)
        err = sc.found.err;
    if (err == 0 && sc.found.n > 0)
        CKPT__DS_LOG(ds, CKPT_LOG_WARN,
                     "%s: %zu checkpoint(s) not in the state file left in "
                     "place (%s%s; a save or deletion a crash cut short, or "
                     "files put here): remove them if they are not wanted",
                     ds->dir, sc.found.n, sc.found.names[0],
                     sc.found.n > 1 ? ", ..." : "");
    name_list_dispose(&sc.found);
    ckpt__name_index_dispose(&names);
    return err;
}

int ckpt__dir_state_sweep_leftovers(ckpt__dir_state *ds,
                                    const ckpt_state *listed)
{
    int err;
    if (directory_shared(ds))
        return 0;
    ckpt__pending_note_apply(ds, listed);
    err = ckpt__dir_state_remove_temps(ds);
    if (err == 0)
        err = remove_orphan_data(ds);
    if (err == 0 && listed) /* a state file that does not parse may name
                               it: nothing is known, nothing deleted */
        err = remove_dataless_indexes(ds);
    if (err == 0)
        err = warn_unlisted_checkpoints(ds);
    return err;
}
