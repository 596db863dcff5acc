/* saver/pending_note.c - the note of what a save in progress may leave
 * behind: "<dir>/checkpoint.pending", one checkpoint name per line (as the
 * state file stores it). A save writes it before it puts its files in
 * place (its own name) and again before the state file drops what
 * retention evicts (those names too), and removes it once the checkpoint
 * is named and the evicted ones are deleted. Checkpoints of failed saves
 * the state file on disk may name (its update and its rollback both
 * failed: ckpt__dir_state's `unsure`), and evicted checkpoints whose
 * deletion failed, are carried in every note until a state file is
 * written without them (and deleted then). A crash in between leaves complete
 * checkpoints the state file does not name; the next open deletes those
 * the note names, and only while the state file it read is intact (or
 * absent: a first save cut short) and does not list them. Complete
 * checkpoints nobody noted (a user's own copy, a state file damaged by
 * hand) are still left in place with a warning (dir_sweep.c). The note
 * is fsynced under a temporary name and renamed over the last one; its
 * name is made durable by the directory sync that follows (the save's
 * renames, or the state file's), so a power cut before that may lose the
 * new note, which leaves such checkpoints in place, as before, and never
 * deletes more. */
#include "io/fs_internal.h"
#include "saver_internal.h"

#include <string.h>

/* The note's largest size read back: the longest lists a state file can
 * hold, and a little more. */
#define NOTE_MAX (CKPT_STATE_MAX_SIZE + 4096)

static int note_path(const ckpt__dir_state *ds, ckpt_buf *out)
{
    return ckpt__path_join(out, ds->dir, CKPT__PENDING_NOTE);
}

/* Append `name` and a newline; names holding a newline are left out (the
 * note could not give them back; such a name is only ever kept). */
static int append_name(ckpt_buf *text, const char *name)
{
    if (strchr(name, '\n'))
        return 0;
    return ckpt__buf_printf(text, "%s\n", name);
}

void ckpt__pending_note_write(const ckpt__dir_state *ds, const char *stored,
                              const ckpt__kept_list *evicted)
{
    ckpt_buf path = CKPT_BUF_INIT, text = CKPT_BUF_INIT, tmp = CKPT_BUF_INIT;
    ckpt_file *f = NULL;
    ckpt__saved_error saved;
    int created, err;
    ckpt__error_save(&saved);
    err = note_path(ds, &path);
    if (err == 0 && stored)
        err = append_name(&text, stored);
    for (size_t i = 0; err == 0 && evicted && i < evicted->n; i++)
        err = append_name(&text, evicted->paths[i]);
    for (size_t i = 0; err == 0 && i < ds->unsure.n; i++)
        if (!stored || strcmp(ds->unsure.paths[i], stored) != 0)
            err = append_name(&text, ds->unsure.paths[i]);
    /* Replaced by a rename, never removed first: a crash between a removal
     * and the new note would forget a checkpoint the old one named. */
    if (err == 0)
        err = ckpt__fs_create_temp(ds->fs, &f, &tmp, path.ptr, "tempstate", 0);
    created = err == 0;
    if (err == 0)
        err = ckpt__fs_write(ds->fs, f, tmp.ptr, text.ptr, text.size);
    if (err == 0) /* durable before its name: never an empty note */
        err = ckpt__fs_sync_close(ds->fs, &f, tmp.ptr);
    ckpt__fs_close_quiet(ds->fs, f); /* after a failure: keeps its message */
    if (err == 0)
        err = ckpt__fs_rename(ds->fs, tmp.ptr, path.ptr);
    if (err < 0 && created)
        ckpt__fs_remove_quiet(ds->fs, tmp.ptr);
    if (err < 0)
        CKPT__DS_LOG(ds, CKPT_LOG_WARN,
                     "%s: cannot note the save in progress (a crash now may "
                     "leave a checkpoint the next open does not delete): %s",
                     ds->dir, ckpt_error_last()->message);
    ckpt_buf_dispose(&path);
    ckpt_buf_dispose(&text);
    ckpt_buf_dispose(&tmp);
    ckpt__error_restore(&saved);
}

void ckpt__pending_note_remove(const ckpt__dir_state *ds)
{
    ckpt_buf path = CKPT_BUF_INIT;
    if (ds->unsure.n > 0) { /* still carried: a note of those alone */
        ckpt__pending_note_write(ds, NULL, NULL);
        return;
    }
    if (note_path(ds, &path) == 0) {
        ckpt__saved_error saved;
        int err;
        ckpt__error_save(&saved);
        err = ckpt__fs_remove(ds->fs, path.ptr);
        /* A file system refusing every change (EROFS: a read-only mount)
         * refuses to remove a note that is not there too (the save could
         * not write it): nothing is left behind then. */
        if (err < 0 && err != CKPT_ENOTFOUND &&
            ckpt__fs_exists(ds->fs, path.ptr) == 0)
            err = CKPT_ENOTFOUND;
        /* Left behind, the note is read at the next open, which deletes
         * only what the state file does not name: said, not fatal. */
        if (err < 0 && err != CKPT_ENOTFOUND)
            CKPT__DS_LOG(ds, CKPT_LOG_WARN,
                         "%s: cannot remove the note of the finished save "
                         "(the next open reads it again): %s",
                         ds->dir, ckpt_error_last()->message);
        ckpt__error_restore(&saved);
    }
    ckpt_buf_dispose(&path);
}

/* The last component of `path`. */
static const char *last_component(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* Index the last components of the state file's paths (this directory's
 * checkpoints, however each path is spelled), so checking every name of
 * a long note against a long list costs O(names + paths). */
static int index_listed(ckpt__name_index *x, const ckpt_state *listed)
{
    int err = ckpt__name_index_reserve(x, listed->num_paths + 1);
    if (err < 0)
        return err;
    if (listed->model_checkpoint_path)
        ckpt__name_index_put(x, last_component(listed->model_checkpoint_path),
                             0);
    for (size_t i = 0; i < listed->num_paths; i++) {
        const char *base = last_component(listed->all_paths[i]);
        if (ckpt__name_index_find(x, base) == SIZE_MAX)
            ckpt__name_index_put(x, base, 0);
    }
    return 0;
}

/* Whether a path of the state file names the checkpoint `name`. */
static int listed_by_state(const ckpt__name_index *listed, const char *name)
{
    return ckpt__name_index_find(listed, last_component(name)) != SIZE_MAX;
}

/* Delete the checkpoint `name` the note gives, when nothing names it;
 * its data files are taken from `data` (the directory listed once for the
 * whole note; NULL: listed for this one). */
static void remove_noted(ckpt__dir_state *ds, const ckpt__name_index *listed,
                         const ckpt__data_files *data, const char *name)
{
    ckpt_buf prefix = CKPT_BUF_INIT, index = CKPT_BUF_INIT;
    int err;
    if (!*name || listed_by_state(listed, name) ||
        !ckpt__dir_state_owns(ds, name))
        return;
    err = ckpt_state_resolve(&prefix, ds->dir, name);
    if (err == 0)
        err = ckpt_bundle_index_path(&index, prefix.ptr);
    if (err == 0 && ckpt__fs_exists(ds->fs, index.ptr) == 1) {
        CKPT__DS_LOG(ds, CKPT_LOG_INFO,
                     "%s: removing %s: an interrupted save or deletion left "
                     "it, and the state file does not name it",
                     ds->dir, name);
        if (ckpt__remove_checkpoint_files_listed(ds->fs, prefix.ptr, data) < 0)
            CKPT__DS_LOG(ds, CKPT_LOG_WARN, "%s: removing %s: %s", ds->dir,
                         name, ckpt_error_last()->message);
    } else if (err == 0) {
        /* No index: data files alone (a second name's links cut short
         * before the directory sync kept them all) are removed quietly. */
        (void)ckpt__remove_checkpoint_files_listed(ds->fs, prefix.ptr, data);
    }
    ckpt_buf_dispose(&index);
    ckpt_buf_dispose(&prefix);
}

void ckpt__pending_note_apply(ckpt__dir_state *ds, const ckpt_state *listed)
{
    ckpt_buf path = CKPT_BUF_INIT, text = CKPT_BUF_INIT;
    ckpt__name_index names = {0};
    ckpt__data_files data = {0};
    ckpt__saved_error saved;
    int err;
    ckpt__error_save(&saved);
    err = note_path(ds, &path);
    if (err == 0)
        err = ckpt__fs_read_file_max(&text, ds->fs, path.ptr, NOTE_MAX);
    /* out of memory for the index: the note is dropped, nothing deleted */
    if (err == 0 && listed && index_listed(&names, listed) == 0) {
        char *p = text.ptr, *end = text.ptr + text.size;
        /* one listing for every name of the note (a failed one: each
         * removal lists the directory itself) */
        int have_data = ckpt__data_files_list(&data, ds->fs, ds->dir) == 0;
        while (p < end) {
            char *nl = memchr(p, '\n', (size_t)(end - p));
            if (!nl)
                break; /* a cut last line: not a name */
            *nl = '\0';
            if (strlen(p) == (size_t)(nl - p))
                remove_noted(ds, &names, have_data ? &data : NULL, p);
            p = nl + 1;
        }
    }
    if (err != CKPT_ENOTFOUND && path.ptr) /* read or not: done with */
        ckpt__fs_remove_quiet(ds->fs, path.ptr);
    ckpt__name_index_dispose(&names);
    ckpt__data_files_dispose(&data);
    ckpt_buf_dispose(&path);
    ckpt_buf_dispose(&text);
    ckpt__error_restore(&saved);
}
