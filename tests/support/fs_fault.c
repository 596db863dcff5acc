/* tests/support/fs_fault.c - the fault-injecting file system of
 * fs_fault.h, for tests (in the testing library, not in libckpt).
 *
 * Every method is forwarded to an inner ckpt_fs after two steps: the call
 * is counted under its ckpt_fs_op, and if an armed fault matches it, it
 * fails instead with the chosen errno, recording the last error as POSIX
 * would plus a marker: "<op> <path>: <strerror(err)> (injected)". A write
 * that fails may first pass `partial_bytes` of its data to the inner write,
 * as a short write followed by an error would. A failing close still closes
 * the inner file (a close always releases the file).
 *
 * The power-cut model (in the spirit of LevelDB's fault_injection_test and
 * SQLite's test6.c, kept deliberately simple):
 *
 * - File data. For every file opened for writing through the wrapper we
 *   know its length and its length at the last successful sync. A power
 *   cut truncates the file to that synced length. A new file, or one
 *   opened with CKPT_OPEN_TRUNC, starts with synced length 0, so if never
 *   synced it comes back empty. Files never written through the wrapper
 *   are taken to be fully durable.
 *
 * - Directory entries. Every creation (open_write of a path that did not
 *   exist), rename and removal is appended to a journal together with its
 *   parent directory (both directories for a rename). sync_dir(D) makes the
 *   entries of D durable; an entry leaves the journal once all its
 *   directories were synced. A power cut undoes the remaining entries,
 *   newest first: a created file is removed, a rename is moved back (and a
 *   file it replaced is put back), a removed file is written back. To put
 *   files back, a removal or a rename onto an existing file first copies
 *   the durable part of the file it destroys into memory (its synced
 *   length, or all of it when the wrapper never wrote it).
 *
 * Simplifications, all of them on the side of "what a test sees":
 * - Overwriting bytes of an existing file in place (open_write without
 *   TRUNC) cannot be undone; only lengths are restored.
 * - mkdir is durable at once; directories are never removed by a drop, and
 *   renaming a directory does not move the tracked files inside it.
 * - Paths are compared after normalisation ("a//b/./c/" -> "a/b/c") but
 *   not resolved: spell a directory the same way in sync_dir as in the
 *   file paths ("dir", not "/abs/dir" once and "dir" another time).
 * - The inner calls made to save or restore content and to truncate are
 *   neither counted nor subject to faults.
 *
 * The random power cut (ckpt_fs_fault_drop_unsynced_random) widens the
 * model: each tracked file also keeps the extents written since its last
 * sync, and each of them survives or not on its own (a lost extent below a
 * surviving one reads as zeros); each journal entry is undone or kept on
 * its own, newest first, except that an entry is kept when a later kept
 * entry names one of its paths, so that undoing it never has to look past
 * a change that stays. Overlapping unsynced writes are modelled only as
 * far as the file's current bytes allow: a lost write's bytes that a later
 * surviving write covers keep that later write's data.
 *
 * ckpt_fs_fault_drop_unsynced_data is the other extreme: the journal is
 * kept whole (a file system that commits every directory change at once
 * and in order) and only unsynced bytes are lost.
 *
 * The trace records every operation in its mask, in order, with its paths
 * and whether the armed fault failed it; tests print it to name the
 * operation a crash hit. */
#include "support/fs_fault.h"

#include "io/fs_internal.h"

#include <errno.h>
#include <string.h>

/* Bytes [off, off + len) written to a file since its last sync. */
struct extent {
    uint64_t off;
    uint64_t len;
    int keep; /* the random power cut's choice */
};

/* A file written through the wrapper. Entries are never freed before a
 * drop or the wrapper's end, so open handles can keep pointing at them. */
struct tracked {
    struct tracked *next;
    char *path;         /* normalised; NULL once the name is gone */
    uint64_t size;      /* bytes the file holds as far as we know */
    uint64_t synced;    /* its length at the last successful sync */
    struct extent *ext; /* writes since the last sync, oldest first */
    size_t n_ext, cap_ext;
};

/* A trace event with its own copies of the paths. */
struct event {
    ckpt_fs_fault_event e;
    char *path;
    char *to;
};

enum change_kind { CHANGE_CREATE, CHANGE_RENAME, CHANGE_REMOVE };

/* A directory-entry change not yet made durable by sync_dir. */
struct change {
    enum change_kind kind;
    char *path;   /* the file (CREATE, REMOVE) or the source (RENAME) */
    char *to;     /* RENAME: the destination */
    char *dir;    /* parent of `path` */
    char *to_dir; /* RENAME across directories: parent of `to` */
    int dir_synced;
    int to_dir_synced;
    int has_old;  /* REMOVE: always; RENAME: `to` existed before */
    uint8_t *old; /* the durable content destroyed by the change */
    size_t old_len;
};

struct ckpt_fs_fault {
    ckpt_fs fs; /* handed out by ckpt_fs_fault_fs(); payload = this */
    const ckpt_fs *inner;
    uint64_t counts[CKPT_FS_OP_COUNT];
    uint64_t injected;
    /* the armed fault */
    int armed;
    uint64_t fail_at; /* 1-based among matching operations */
    uint64_t matched; /* matching operations since arming */
    unsigned mask;
    int err;
    int persistent;
    size_t partial;
    size_t read_cap; /* > 0: no pread returns more bytes than this */
    /* the power-cut model */
    struct tracked *files;
    struct change *changes;
    size_t nchanges;
    size_t changes_cap;
    size_t open_files;
    /* the trace */
    unsigned trace_mask;
    struct event *events;
    size_t nevents, cap_events;
};

/* What a ckpt_file opened through the wrapper points to. */
struct fault_file {
    ckpt_file *inner;
    char *path;        /* as given, for messages */
    struct tracked *t; /* NULL for files opened for reading */
    uint64_t pos;      /* write offset */
};

static const char *const op_names[CKPT_FS_OP_COUNT] = {
    "open_write", "open_read", "write", "pread",    "size", "sync", "close",
    "rename",     "remove",    "mkdir", "sync_dir", "list", "stat", "link",
};

const char *ckpt_fs_op_name(int op)
{
    if (op < 0 || op >= CKPT_FS_OP_COUNT)
        return "unknown";
    return op_names[op];
}

static struct fault_file *fault_file_of(ckpt_file *f)
{
    return (struct fault_file *)(void *)f;
}

/* ---- paths -------------------------------------------------------------- */

/* A malloc'd copy of `path` without empty and "." components or a
 * trailing slash; "" becomes ".". NULL when out of memory. */
static char *normalize(const char *path)
{
    size_t n = strlen(path);
    char *out = ckpt__malloc(n + 2);
    size_t len = 0;
    const char *p = path;
    if (!out)
        return NULL;
    if (*p == '/')
        out[len++] = '/';
    while (*p) {
        const char *end;
        size_t clen;
        while (*p == '/')
            p++;
        end = p;
        while (*end && *end != '/')
            end++;
        clen = (size_t)(end - p);
        if (clen > 0 && !(clen == 1 && p[0] == '.')) {
            if (len > 0 && out[len - 1] != '/')
                out[len++] = '/';
            memcpy(out + len, p, clen);
            len += clen;
        }
        p = end;
    }
    if (len == 0)
        out[len++] = '.';
    out[len] = '\0';
    return out;
}

/* The parent directory of a normalised path, malloc'd. */
static char *parent_of(const char *norm)
{
    const char *slash = strrchr(norm, '/');
    if (!slash)
        return ckpt__strdup(".");
    if (slash == norm)
        return ckpt__strdup("/");
    return ckpt__strndup(norm, (size_t)(slash - norm));
}

/* ---- tracked files ------------------------------------------------------ */

static struct tracked *find_tracked(ckpt_fs_fault *ff, const char *norm)
{
    for (struct tracked *t = ff->files; t; t = t->next)
        if (t->path && !strcmp(t->path, norm))
            return t;
    return NULL;
}

static void untrack(ckpt_fs_fault *ff, const char *norm)
{
    struct tracked *t = find_tracked(ff, norm);
    if (t) {
        ckpt__free(t->path);
        t->path = NULL;
    }
}

static void free_tracked(ckpt_fs_fault *ff)
{
    struct tracked *t = ff->files;
    while (t) {
        struct tracked *next = t->next;
        ckpt__free(t->path);
        ckpt__free(t->ext);
        ckpt__free(t);
        t = next;
    }
    ff->files = NULL;
}

/* ---- the journal of directory changes ----------------------------------- */

static void change_dispose(struct change *c)
{
    ckpt__free(c->path);
    ckpt__free(c->to);
    ckpt__free(c->dir);
    ckpt__free(c->to_dir);
    ckpt__free(c->old);
    memset(c, 0, sizeof(*c));
}

/* Room for one more change, so recording after a successful inner call
 * cannot fail. */
static int reserve_change(ckpt_fs_fault *ff)
{
    struct change *p;
    size_t cap;
    if (ff->nchanges < ff->changes_cap)
        return 0;
    cap = ff->changes_cap ? 2 * ff->changes_cap : 16;
    p = ckpt__realloc(ff->changes, cap * sizeof(*p));
    if (!p)
        return ckpt__error_oom();
    ff->changes = p;
    ff->changes_cap = cap;
    return 0;
}

/* Fill a change's paths and parents; the caller owns nothing on failure. */
static int change_init(struct change *c, enum change_kind kind,
                       const char *norm, const char *norm_to)
{
    memset(c, 0, sizeof(*c));
    c->kind = kind;
    c->path = ckpt__strdup(norm);
    c->dir = parent_of(norm);
    if (!c->path || !c->dir)
        goto oom;
    if (norm_to) {
        c->to = ckpt__strdup(norm_to);
        c->to_dir = parent_of(norm_to);
        if (!c->to || !c->to_dir)
            goto oom;
        if (!strcmp(c->to_dir, c->dir)) {
            ckpt__free(c->to_dir);
            c->to_dir = NULL;
        }
    }
    return 0;
oom:
    change_dispose(c);
    return ckpt__error_oom();
}

static void free_changes(ckpt_fs_fault *ff)
{
    for (size_t i = 0; i < ff->nchanges; i++)
        change_dispose(&ff->changes[i]);
    ckpt__free(ff->changes);
    ff->changes = NULL;
    ff->nchanges = 0;
    ff->changes_cap = 0;
}

/* sync_dir(dir) succeeded: its entries are durable. */
static void changes_synced(ckpt_fs_fault *ff, const char *dir)
{
    size_t keep = 0;
    for (size_t i = 0; i < ff->nchanges; i++) {
        struct change *c = &ff->changes[i];
        if (!strcmp(c->dir, dir))
            c->dir_synced = 1;
        if (c->to_dir && !strcmp(c->to_dir, dir))
            c->to_dir_synced = 1;
        if (c->dir_synced && (!c->to_dir || c->to_dir_synced))
            change_dispose(c);
        else
            ff->changes[keep++] = *c;
    }
    ff->nchanges = keep;
}

/* ---- raw content on the inner file system ------------------------------- */

/* The first `limit` bytes of the file at `path` (all of it when shorter)
 * into a malloc'd buffer. */
static int read_prefix(const ckpt_fs *fs, const char *path, uint64_t limit,
                       uint8_t **out, size_t *out_len)
{
    ckpt_file *f = NULL;
    uint64_t size = 0;
    size_t want;
    size_t got = 0;
    uint8_t *buf = NULL;
    int err;
    *out = NULL;
    *out_len = 0;
    err = fs->open_read(&f, path, fs->payload);
    if (err < 0)
        return err;
    err = fs->size(f, &size, fs->payload);
    if (err < 0)
        goto done;
    if (size > limit)
        size = limit;
    if (size > SIZE_MAX - 1) {
        err = ckpt__error_oom();
        goto done;
    }
    want = (size_t)size;
    buf = ckpt__malloc(want);
    if (!buf) {
        err = ckpt__error_oom();
        goto done;
    }
    err = fs->pread(f, buf, want, 0, &got, fs->payload);
    if (err < 0)
        goto done;
    *out = buf;
    *out_len = got;
    buf = NULL;
done:
    ckpt__free(buf);
    if (f)
        fs->close(f, fs->payload);
    return err;
}

/* Replace the file at `path` with `len` bytes of `data`, durably. */
static int write_whole(const ckpt_fs *fs, const char *path, const uint8_t *data,
                       size_t len)
{
    ckpt_file *f = NULL;
    int err;
    err = fs->open_write(&f, path, CKPT_OPEN_TRUNC, fs->payload);
    if (err < 0)
        return err;
    err = fs->write(f, data, len, fs->payload);
    if (err == 0)
        err = fs->sync(f, fs->payload);
    if (err < 0) {
        fs->close(f, fs->payload);
        return err;
    }
    return fs->close(f, fs->payload);
}

/* The durable content of the file at `norm`, as a power cut would leave
 * it: its synced part when tracked, else all of it. The last error is
 * kept. Returns 0 or the (negative) reason it could not be read. */
static int durable_content(ckpt_fs_fault *ff, const char *norm, uint8_t **out,
                           size_t *out_len)
{
    ckpt__saved_error saved;
    struct tracked *t = find_tracked(ff, norm);
    int err;
    ckpt__error_save(&saved);
    err =
        read_prefix(ff->inner, norm, t ? t->synced : UINT64_MAX, out, out_len);
    ckpt__error_restore(&saved);
    return err;
}

/* Set up journal entry ff->changes[ff->nchanges] (not yet counted) for a
 * rename of `norm` to `norm_to` or a removal of `norm` (norm_to NULL), with
 * the durable content of the file the change destroys (the destination,
 * or the removed file) when it can be read. */
static int begin_change(ckpt_fs_fault *ff, enum change_kind kind,
                        const char *norm, const char *norm_to,
                        struct change **out)
{
    const char *destroyed = norm_to ? norm_to : norm;
    struct change *c;
    int err = reserve_change(ff);
    if (err < 0)
        return err;
    c = &ff->changes[ff->nchanges];
    err = change_init(c, kind, norm, norm_to);
    if (err < 0)
        return err;
    c->has_old = durable_content(ff, destroyed, &c->old, &c->old_len) == 0;
    *out = c;
    return 0;
}

/* ---- faults ------------------------------------------------------------- */

/* Append an event to the trace; on out of memory it is dropped. */
static void trace_event(ckpt_fs_fault *ff, ckpt_fs_op op, const char *path,
                        const char *to, uint64_t bytes, int injected)
{
    struct event *ev;
    if (!(ff->trace_mask & CKPT_FS_OP_BIT(op)))
        return;
    if (ff->nevents == ff->cap_events) {
        size_t cap = ff->cap_events ? 2 * ff->cap_events : 64;
        struct event *p = ckpt__realloc(ff->events, cap * sizeof(*p));
        if (!p)
            return;
        ff->events = p;
        ff->cap_events = cap;
    }
    ev = &ff->events[ff->nevents];
    memset(ev, 0, sizeof(*ev));
    ev->path = ckpt__strdup(path ? path : "");
    ev->to = to ? ckpt__strdup(to) : NULL;
    if (!ev->path || (to && !ev->to)) {
        ckpt__free(ev->path);
        ckpt__free(ev->to);
        return;
    }
    ev->e.op = (int)op;
    ev->e.path = ev->path;
    ev->e.to = ev->to;
    ev->e.bytes = bytes;
    ev->e.injected = injected;
    ff->nevents++;
}

static void free_trace(ckpt_fs_fault *ff)
{
    for (size_t i = 0; i < ff->nevents; i++) {
        ckpt__free(ff->events[i].path);
        ckpt__free(ff->events[i].to);
    }
    ckpt__free(ff->events);
    ff->events = NULL;
    ff->nevents = 0;
    ff->cap_events = 0;
}

/* Count `op` (on `path`, `to`, `bytes` for the trace); 1 if an armed fault
 * makes it fail. */
static int should_fail(ckpt_fs_fault *ff, ckpt_fs_op op, const char *path,
                       const char *to, uint64_t bytes)
{
    int fail = 0;
    ff->counts[op]++;
    if (ff->armed && (ff->mask & CKPT_FS_OP_BIT(op))) {
        ff->matched++;
        fail = ff->matched == ff->fail_at ||
               (ff->persistent && ff->matched > ff->fail_at);
    }
    trace_event(ff, op, path, to, bytes, fail);
    return fail;
}

static int inject(ckpt_fs_fault *ff, ckpt_fs_op op, const char *path)
{
    ff->injected++;
    return ckpt__error(ckpt__code_from_errno(ff->err), "%s %s: %s (injected)",
                       ckpt_fs_op_name(op), path, strerror(ff->err));
}

/* ---- the methods -------------------------------------------------------- */

static int fault_open_write(ckpt_file **out, const char *path, int flags,
                            void *payload)
{
    ckpt_fs_fault *ff = payload;
    const ckpt_fs *in = ff->inner;
    struct fault_file *ffile = NULL;
    struct tracked *fresh = NULL;
    struct tracked *t;
    char *norm = NULL;
    uint64_t old_size = 0;
    int existed = 0;
    int err;
    *out = NULL;
    if (should_fail(ff, CKPT_FS_OP_OPEN_WRITE, path, NULL, 0))
        return inject(ff, CKPT_FS_OP_OPEN_WRITE, path);
    /* Allocate everything first: after the inner open nothing may fail. */
    norm = normalize(path);
    ffile = ckpt__calloc(1, sizeof(*ffile));
    fresh = ckpt__calloc(1, sizeof(*fresh));
    if (!norm || !ffile || !fresh) {
        err = ckpt__error_oom();
        goto done;
    }
    ffile->path = ckpt__strdup(path);
    if (!ffile->path) {
        err = ckpt__error_oom();
        goto done;
    }
    err = reserve_change(ff);
    if (err < 0)
        goto done;
    if (!(flags & CKPT_OPEN_EXCL)) {
        ckpt__saved_error saved;
        ckpt__error_save(&saved);
        existed = in->stat(path, &old_size, NULL, in->payload) == 0;
        ckpt__error_restore(&saved);
    }
    if (!existed) {
        /* Prepare the CREATE record now; it is kept only on success. */
        err =
            change_init(&ff->changes[ff->nchanges], CHANGE_CREATE, norm, NULL);
        if (err < 0)
            goto done;
    }
    err = in->open_write(&ffile->inner, path, flags, in->payload);
    if (err < 0) {
        if (!existed)
            change_dispose(&ff->changes[ff->nchanges]);
        goto done;
    }
    if (!existed)
        ff->nchanges++;
    t = find_tracked(ff, norm);
    if (!t) {
        t = fresh;
        fresh = NULL;
        t->path = norm;
        norm = NULL;
        t->next = ff->files;
        ff->files = t;
        /* an untracked existing file is durable as it stands */
        t->size = existed ? old_size : 0;
        t->synced = t->size;
    }
    if (!existed || (flags & CKPT_OPEN_TRUNC)) {
        t->size = 0;
        t->synced = 0;
        t->n_ext = 0;
    }
    ffile->t = t;
    ff->open_files++;
    *out = (ckpt_file *)(void *)ffile;
    ffile = NULL;
done:
    if (ffile) {
        ckpt__free(ffile->path);
        ckpt__free(ffile);
    }
    ckpt__free(fresh);
    ckpt__free(norm);
    return err;
}

static int fault_open_read(ckpt_file **out, const char *path, void *payload)
{
    ckpt_fs_fault *ff = payload;
    const ckpt_fs *in = ff->inner;
    struct fault_file *ffile;
    int err;
    *out = NULL;
    if (should_fail(ff, CKPT_FS_OP_OPEN_READ, path, NULL, 0))
        return inject(ff, CKPT_FS_OP_OPEN_READ, path);
    ffile = ckpt__calloc(1, sizeof(*ffile));
    if (!ffile)
        return ckpt__error_oom();
    ffile->path = ckpt__strdup(path);
    if (!ffile->path) {
        ckpt__free(ffile);
        return ckpt__error_oom();
    }
    err = in->open_read(&ffile->inner, path, in->payload);
    if (err < 0) {
        ckpt__free(ffile->path);
        ckpt__free(ffile);
        return err;
    }
    ff->open_files++;
    *out = (ckpt_file *)(void *)ffile;
    return 0;
}

/* Room for one more unsynced extent of `t` (NULL: nothing to do). */
static int reserve_extent(struct tracked *t)
{
    struct extent *p;
    size_t cap;
    if (!t || t->n_ext < t->cap_ext)
        return 0;
    cap = t->cap_ext ? 2 * t->cap_ext : 8;
    p = ckpt__realloc(t->ext, cap * sizeof(*p));
    if (!p)
        return ckpt__error_oom();
    t->ext = p;
    t->cap_ext = cap;
    return 0;
}

/* Record `n` bytes written at `off` since the last sync (room reserved). */
static void add_extent(struct tracked *t, uint64_t off, uint64_t n)
{
    if (!t || n == 0)
        return;
    t->ext[t->n_ext].off = off;
    t->ext[t->n_ext].len = n;
    t->ext[t->n_ext].keep = 1;
    t->n_ext++;
}

/* `n` more bytes landed at the write offset. */
static void wrote(struct fault_file *ffile, size_t n)
{
    add_extent(ffile->t, ffile->pos, n);
    ffile->pos += n;
    if (ffile->t && ffile->t->size < ffile->pos)
        ffile->t->size = ffile->pos;
}

static int fault_write(ckpt_file *f, const void *buf, size_t n, void *payload)
{
    ckpt_fs_fault *ff = payload;
    const ckpt_fs *in = ff->inner;
    struct fault_file *ffile = fault_file_of(f);
    int err;
    if (should_fail(ff, CKPT_FS_OP_WRITE, ffile->path, NULL, n)) {
        size_t part = ff->partial < n ? ff->partial : n;
        if (part > 0) {
            err = reserve_extent(ffile->t);
            if (err < 0)
                return err;
            err = in->write(ffile->inner, buf, part, in->payload);
            if (err < 0)
                return err;
            wrote(ffile, part);
        }
        return inject(ff, CKPT_FS_OP_WRITE, ffile->path);
    }
    err = reserve_extent(ffile->t);
    if (err < 0)
        return err;
    err = in->write(ffile->inner, buf, n, in->payload);
    if (err < 0) {
        /* Some bytes may have landed: learn the length from the file. */
        ckpt__saved_error saved;
        uint64_t size;
        ckpt__error_save(&saved);
        if (ffile->t && in->size(ffile->inner, &size, in->payload) == 0 &&
            ffile->t->size < size) {
            add_extent(ffile->t, ffile->t->size, size - ffile->t->size);
            ffile->t->size = size;
        }
        ckpt__error_restore(&saved);
        return err;
    }
    wrote(ffile, n);
    return 0;
}

static int fault_pread(ckpt_file *f, void *buf, size_t n, uint64_t offset,
                       size_t *nread, void *payload)
{
    ckpt_fs_fault *ff = payload;
    struct fault_file *ffile = fault_file_of(f);
    *nread = 0;
    if (should_fail(ff, CKPT_FS_OP_PREAD, ffile->path, NULL, 0))
        return inject(ff, CKPT_FS_OP_PREAD, ffile->path);
    if (ff->read_cap > 0 && n > ff->read_cap)
        n = ff->read_cap; /* a short read, as a signal or a pipe may cut */
    return ff->inner->pread(ffile->inner, buf, n, offset, nread,
                            ff->inner->payload);
}

static int fault_size(ckpt_file *f, uint64_t *out, void *payload)
{
    ckpt_fs_fault *ff = payload;
    struct fault_file *ffile = fault_file_of(f);
    if (should_fail(ff, CKPT_FS_OP_SIZE, ffile->path, NULL, 0))
        return inject(ff, CKPT_FS_OP_SIZE, ffile->path);
    return ff->inner->size(ffile->inner, out, ff->inner->payload);
}

static int fault_sync(ckpt_file *f, void *payload)
{
    ckpt_fs_fault *ff = payload;
    struct fault_file *ffile = fault_file_of(f);
    int err;
    if (should_fail(ff, CKPT_FS_OP_SYNC, ffile->path, NULL, 0))
        return inject(ff, CKPT_FS_OP_SYNC, ffile->path);
    err = ff->inner->sync(ffile->inner, ff->inner->payload);
    if (err == 0 && ffile->t) {
        ffile->t->synced = ffile->t->size;
        ffile->t->n_ext = 0;
    }
    return err;
}

static int fault_close(ckpt_file *f, void *payload)
{
    ckpt_fs_fault *ff = payload;
    const ckpt_fs *in = ff->inner;
    struct fault_file *ffile = fault_file_of(f);
    int err;
    if (!ffile)
        return 0;
    if (should_fail(ff, CKPT_FS_OP_CLOSE, ffile->path, NULL, 0)) {
        ckpt__fs_close_quiet(in, ffile->inner);
        err = inject(ff, CKPT_FS_OP_CLOSE, ffile->path);
    } else {
        err = in->close(ffile->inner, in->payload);
    }
    ff->open_files--;
    ckpt__free(ffile->path);
    ckpt__free(ffile);
    return err;
}

static int fault_rename(const char *from, const char *to, void *payload)
{
    ckpt_fs_fault *ff = payload;
    const ckpt_fs *in = ff->inner;
    struct change *c;
    struct tracked *t;
    char *nfrom = NULL;
    char *nto = NULL;
    int err;
    if (should_fail(ff, CKPT_FS_OP_RENAME, from, to, 0)) {
        ff->injected++;
        return ckpt__error(ckpt__code_from_errno(ff->err),
                           "rename %s to %s: %s (injected)", from, to,
                           strerror(ff->err));
    }
    nfrom = normalize(from);
    nto = normalize(to);
    if (!nfrom || !nto) {
        err = ckpt__error_oom();
        goto done;
    }
    err = begin_change(ff, CHANGE_RENAME, nfrom, nto, &c);
    if (err < 0)
        goto done;
    err = in->rename(from, to, in->payload);
    if (err < 0) {
        change_dispose(c);
        goto done;
    }
    ff->nchanges++;
    untrack(ff, nto);
    t = find_tracked(ff, nfrom);
    if (t) {
        ckpt__free(t->path);
        t->path = nto;
        nto = NULL;
    }
done:
    ckpt__free(nfrom);
    ckpt__free(nto);
    return err;
}

/* A second name is a creation of `to` for the journal (undone by removing
 * it); the file's bytes are the source's, as durable as they were. */
static int fault_link(const char *from, const char *to, void *payload)
{
    ckpt_fs_fault *ff = payload;
    const ckpt_fs *in = ff->inner;
    char *nto = NULL;
    int err;
    if (should_fail(ff, CKPT_FS_OP_LINK, from, to, 0)) {
        ff->injected++;
        return ckpt__error(ckpt__code_from_errno(ff->err),
                           "link %s to %s: %s (injected)", from, to,
                           strerror(ff->err));
    }
    nto = normalize(to);
    if (!nto)
        return ckpt__error_oom();
    err = reserve_change(ff);
    if (err == 0)
        err = change_init(&ff->changes[ff->nchanges], CHANGE_CREATE, nto, NULL);
    if (err < 0)
        goto done;
    err = in->link(from, to, in->payload);
    if (err < 0)
        change_dispose(&ff->changes[ff->nchanges]);
    else
        ff->nchanges++;
done:
    ckpt__free(nto);
    return err;
}

static int fault_remove(const char *path, void *payload)
{
    ckpt_fs_fault *ff = payload;
    const ckpt_fs *in = ff->inner;
    struct change *c;
    char *norm = NULL;
    int err;
    if (should_fail(ff, CKPT_FS_OP_REMOVE, path, NULL, 0))
        return inject(ff, CKPT_FS_OP_REMOVE, path);
    norm = normalize(path);
    if (!norm) {
        err = ckpt__error_oom();
        goto done;
    }
    err = begin_change(ff, CHANGE_REMOVE, norm, NULL, &c);
    if (err < 0)
        goto done;
    err = in->remove(path, in->payload);
    if (err < 0 || !c->has_old) {
        /* nothing removed, or nothing we could put back */
        change_dispose(c);
    } else {
        ff->nchanges++;
    }
    if (err == 0)
        untrack(ff, norm);
done:
    ckpt__free(norm);
    return err;
}

static int fault_mkdir(const char *path, void *payload)
{
    ckpt_fs_fault *ff = payload;
    if (should_fail(ff, CKPT_FS_OP_MKDIR, path, NULL, 0))
        return inject(ff, CKPT_FS_OP_MKDIR, path);
    return ff->inner->mkdir(path, ff->inner->payload);
}

static int fault_sync_dir(const char *path, void *payload)
{
    ckpt_fs_fault *ff = payload;
    char *norm;
    int err;
    if (should_fail(ff, CKPT_FS_OP_SYNC_DIR, path, NULL, 0))
        return inject(ff, CKPT_FS_OP_SYNC_DIR, path);
    norm = normalize(path);
    if (!norm)
        return ckpt__error_oom();
    err = ff->inner->sync_dir(path, ff->inner->payload);
    if (err == 0)
        changes_synced(ff, norm);
    ckpt__free(norm);
    return err;
}

static int fault_list(const char *path, ckpt_dir_cb cb, void *cb_payload,
                      void *payload)
{
    ckpt_fs_fault *ff = payload;
    if (should_fail(ff, CKPT_FS_OP_LIST, path, NULL, 0))
        return inject(ff, CKPT_FS_OP_LIST, path);
    return ff->inner->list(path, cb, cb_payload, ff->inner->payload);
}

static int fault_stat(const char *path, uint64_t *out, double *mtime_out,
                      void *payload)
{
    ckpt_fs_fault *ff = payload;
    if (should_fail(ff, CKPT_FS_OP_STAT, path, NULL, 0))
        return inject(ff, CKPT_FS_OP_STAT, path);
    return ff->inner->stat(path, out, mtime_out, ff->inner->payload);
}

/* ---- the power cut ------------------------------------------------------ */

static int undo_change(ckpt_fs_fault *ff, const struct change *c)
{
    const ckpt_fs *in = ff->inner;
    struct tracked *t;
    int err = 0;
    switch (c->kind) {
    case CHANGE_CREATE:
        err = in->remove(c->path, in->payload);
        if (err == CKPT_ENOTFOUND)
            err = 0;
        untrack(ff, c->path);
        break;
    case CHANGE_RENAME:
        err = in->rename(c->to, c->path, in->payload);
        if (err == CKPT_ENOTFOUND)
            err = 0;
        untrack(ff, c->path);
        t = find_tracked(ff, c->to);
        if (t) {
            char *p = ckpt__strdup(c->path);
            if (!p)
                return ckpt__error_oom();
            ckpt__free(t->path);
            t->path = p;
        }
        if (err == 0 && c->has_old)
            err = write_whole(in, c->to, c->old, c->old_len);
        break;
    case CHANGE_REMOVE:
        untrack(ff, c->path);
        err = write_whole(in, c->path, c->old, c->old_len);
        break;
    }
    return err;
}

/* Cut the file at `path` back to `synced` bytes if it is longer. */
static int truncate_to(const ckpt_fs *in, const char *path, uint64_t synced)
{
    uint64_t size = 0;
    uint8_t *data = NULL;
    size_t len = 0;
    int err;
    err = in->stat(path, &size, NULL, in->payload);
    if (err == CKPT_ENOTFOUND)
        return 0;
    if (err < 0 || size <= synced)
        return err;
    err = read_prefix(in, path, synced, &data, &len);
    if (err == 0)
        err = write_whole(in, path, data, len);
    ckpt__free(data);
    return err;
}

/* The random power cut's generator (splitmix64): a coin per decision. */
static int coin(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (int)(z >> 63);
}

/* Zero [lo, hi) of `buf` except what a kept extent after `from` covers. */
static void zero_lost(uint8_t *buf, uint64_t lo, uint64_t hi,
                      const struct extent *ext, size_t from, size_t n)
{
    for (size_t j = from; j < n && lo < hi; j++) {
        uint64_t jlo = ext[j].off;
        uint64_t jhi = ext[j].off + ext[j].len;
        if (!ext[j].keep || jhi <= lo || jlo >= hi)
            continue;
        if (jlo > lo)
            zero_lost(buf, lo, jlo, ext, j + 1, n);
        lo = jhi;
    }
    if (lo < hi)
        memset(buf + lo, 0, (size_t)(hi - lo));
}

/* Keep a random subset of the unsynced extents of `t`: the file ends at
 * the end of the last kept one (at least its synced length) and the lost
 * ones below that read as zeros. */
static int truncate_random(const ckpt_fs *in, struct tracked *t, uint64_t *rng)
{
    uint64_t size = 0;
    uint64_t len = t->synced;
    uint8_t *data = NULL;
    size_t got = 0;
    int holes = 0;
    int err;
    for (size_t i = 0; i < t->n_ext; i++) {
        struct extent *e = &t->ext[i];
        e->keep = coin(rng);
        if (e->keep && e->off + e->len > len)
            len = e->off + e->len;
    }
    for (size_t i = 0; i < t->n_ext; i++)
        if (!t->ext[i].keep && t->ext[i].off < len &&
            t->ext[i].off + t->ext[i].len > t->synced)
            holes = 1;
    err = in->stat(t->path, &size, NULL, in->payload);
    if (err == CKPT_ENOTFOUND)
        return 0;
    if (err < 0)
        return err;
    if (len > size)
        len = size;
    if (len == size && !holes)
        return 0;
    err = read_prefix(in, t->path, len, &data, &got);
    if (err < 0)
        return err;
    for (size_t i = 0; i < t->n_ext; i++) {
        const struct extent *e = &t->ext[i];
        uint64_t lo = e->off > t->synced ? e->off : t->synced;
        uint64_t hi = e->off + e->len < got ? e->off + e->len : got;
        if (!e->keep && lo < hi)
            zero_lost(data, lo, hi, t->ext, i + 1, t->n_ext);
    }
    err = write_whole(in, t->path, data, got);
    ckpt__free(data);
    return err;
}

/* Whether `name` is one of the first `n` of `names`. */
static int name_in(const char *name, const char *const *names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(names[i], name))
            return 1;
    return 0;
}

/* The power cut: `rng` NULL loses every unsynced byte and, unless
 * `keep_entries`, every undurable directory change; else a random part of
 * both. */
static int drop(ckpt_fs_fault *ff, uint64_t *rng, int keep_entries,
                const char *what)
{
    const char **kept = NULL; /* paths named by kept changes */
    size_t nkept = 0;
    int first = 0;
    int err;
    if (!ff)
        return ckpt__error(CKPT_EINVAL, "%s: NULL fault fs", what);
    if (ff->open_files > 0)
        return ckpt__error(CKPT_ESTATE, "%s: %zu files still open", what,
                           ff->open_files);
    if (rng && ff->nchanges > 0) {
        kept = ckpt__calloc(2 * ff->nchanges, sizeof(*kept));
        if (!kept)
            return ckpt__error_oom();
    }
    for (size_t i = keep_entries ? 0 : ff->nchanges; i-- > 0;) {
        const struct change *c = &ff->changes[i];
        if (rng) {
            int keep = name_in(c->path, kept, nkept) ||
                       (c->to && name_in(c->to, kept, nkept)) || coin(rng);
            if (keep) {
                kept[nkept++] = c->path;
                if (c->to)
                    kept[nkept++] = c->to;
                continue;
            }
        }
        err = undo_change(ff, c);
        if (err < 0 && first == 0)
            first = err;
    }
    ckpt__free(kept);
    free_changes(ff);
    for (struct tracked *t = ff->files; t; t = t->next) {
        if (!t->path)
            continue;
        if (rng)
            err = truncate_random(ff->inner, t, rng);
        else
            err = truncate_to(ff->inner, t->path, t->synced);
        if (err < 0 && first == 0)
            first = err;
    }
    /* What is left on disk is now all durable. */
    free_tracked(ff);
    return first;
}

int ckpt_fs_fault_drop_unsynced(ckpt_fs_fault *ff)
{
    return drop(ff, NULL, 0, "drop_unsynced");
}

int ckpt_fs_fault_drop_unsynced_data(ckpt_fs_fault *ff)
{
    return drop(ff, NULL, 1, "drop_unsynced_data");
}

int ckpt_fs_fault_drop_unsynced_random(ckpt_fs_fault *ff, uint64_t seed)
{
    return drop(ff, &seed, 0, "drop_unsynced_random");
}

/* ---- the wrapper object ------------------------------------------------- */

int ckpt_fs_fault_new(ckpt_fs_fault **out, const ckpt_fs *inner)
{
    ckpt_fs_fault *ff;
    if (!out)
        return ckpt__error(CKPT_EINVAL, "fs_fault_new: NULL out");
    *out = NULL;
    ff = ckpt__calloc(1, sizeof(*ff));
    if (!ff)
        return ckpt__error_oom();
    ff->inner = ckpt_fs_or_default(inner);
    ff->fs.version = CKPT_FS_VERSION;
    ff->fs.payload = ff;
    ff->fs.open_write = fault_open_write;
    ff->fs.open_read = fault_open_read;
    ff->fs.write = fault_write;
    ff->fs.pread = fault_pread;
    ff->fs.size = fault_size;
    ff->fs.sync = fault_sync;
    ff->fs.close = fault_close;
    ff->fs.rename = fault_rename;
    ff->fs.remove = fault_remove;
    ff->fs.mkdir = fault_mkdir;
    ff->fs.sync_dir = fault_sync_dir;
    ff->fs.list = fault_list;
    ff->fs.stat = fault_stat;
    if (ff->inner->version >= 5 && ff->inner->link)
        ff->fs.link = fault_link; /* offered when the inner one is */
    *out = ff;
    return 0;
}

void ckpt_fs_fault_free(ckpt_fs_fault *ff)
{
    if (!ff)
        return;
    free_changes(ff);
    free_tracked(ff);
    free_trace(ff);
    ckpt__free(ff);
}

const ckpt_fs *ckpt_fs_fault_fs(ckpt_fs_fault *ff)
{
    return &ff->fs;
}

void ckpt_fs_fault_fail(ckpt_fs_fault *ff, uint64_t n, unsigned op_mask,
                        int err, int persistent, size_t partial_bytes)
{
    ckpt_fs_fault_reset_count(ff);
    ff->matched = 0;
    ff->armed = n > 0 && op_mask != 0;
    ff->fail_at = n;
    ff->mask = op_mask;
    ff->err = err;
    ff->persistent = persistent;
    ff->partial = partial_bytes;
}

void ckpt_fs_fault_short_reads(ckpt_fs_fault *ff, size_t max_bytes)
{
    ff->read_cap = max_bytes;
}

void ckpt_fs_fault_clear(ckpt_fs_fault *ff)
{
    ff->armed = 0;
}

uint64_t ckpt_fs_fault_count(const ckpt_fs_fault *ff, unsigned op_mask)
{
    uint64_t total = 0;
    for (int op = 0; op < CKPT_FS_OP_COUNT; op++)
        if (op_mask & CKPT_FS_OP_BIT(op))
            total += ff->counts[op];
    return total;
}

void ckpt_fs_fault_reset_count(ckpt_fs_fault *ff)
{
    memset(ff->counts, 0, sizeof(ff->counts));
}

uint64_t ckpt_fs_fault_injected(const ckpt_fs_fault *ff)
{
    return ff->injected;
}

void ckpt_fs_fault_trace(ckpt_fs_fault *ff, unsigned op_mask)
{
    if (op_mask != 0)
        free_trace(ff);
    ff->trace_mask = op_mask;
}

size_t ckpt_fs_fault_trace_size(const ckpt_fs_fault *ff)
{
    return ff->nevents;
}

const ckpt_fs_fault_event *ckpt_fs_fault_trace_event(const ckpt_fs_fault *ff,
                                                     size_t i)
{
    if (i >= ff->nevents)
        return NULL;
    return &ff->events[i].e;
}
