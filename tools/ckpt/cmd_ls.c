/* tools/ckpt/cmd_ls.c - `ckpt ls DIR [--json]`: the checkpoints a
 * directory's state file lists (prefix, step, bytes, time, and the data
 * files of a checkpoint with several: a sharded or distributed save's
 * shards), which one is latest, and the stray or incomplete files next to
 * them: temporary files, data files without their index, index files the
 * state file does not list. */
/* realpath is XSI: asked for before cli.h includes any system header. */
#define _XOPEN_SOURCE 700
#include "cli.h"
#include "ls_paths.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* The note a save keeps while it runs (saver.h): a stray once it ends. */
#define PENDING_NOTE "checkpoint.pending"

static int run(int argc, char **argv);

static const cli_option ls_options[] = {
    {"--json", NULL, NULL, 0,
     "  --json   print JSON: {\"directory\", \"state_file\", \"latest\",\n"
     "           \"checkpoints\": [{\"prefix\", \"path\", \"step\", "
     "\"bytes\",\n"
     "           \"time\", \"time_source\", \"latest\", \"complete\", "
     "\"problem\",\n"
     "           \"shards\": [{\"file\", \"shard\", \"of\", \"bytes\"}]}],\n"
     "           \"stray\": [{\"file\", \"reason\"}], \"ok\": true};\n"
     "           \"latest\" is the latest row's \"prefix\" as the state\n"
     "           file spells it (null when none): its \"path\" is the\n"
     "           one to open (jq -r '.checkpoints[] | select(.latest)\n"
     "           | .path').\n",
     NULL},
};

const cli_command cli_cmd_ls = {
    "ls",
    "DIR",
    ls_options,
    CLI_NUM_OPTIONS(ls_options),
    "List the checkpoints of a directory and any stray or incomplete files.",
    "Lists the checkpoints named by DIR/checkpoint (oldest first) with their\n"
    "step (from a trailing -<digits>), bytes (index and data files) and time\n"
    "(the state file's timestamp, else the index file's mtime, in UTC), and\n"
    "marks the latest; a checkpoint the state file lists twice (the same\n"
    "path, also when spelled with extra \"./\" or \"//\", or relative and\n"
    "absolute) is listed once, at its later place.\n"
    "A checkpoint with more than one data file (a sharded\n"
    "or distributed save: <prefix>.data-<r>-of-<N>) has its data files\n"
    "listed under it, one line each: shard, file name and bytes.\n"
    "Then lists stray or incomplete files: temporary files\n"
    "(*.tempstate*, checkpoint.tmp*, *.tmp*), the note checkpoint.pending\n"
    "of a save in progress or one a crash cut short, data files of no listed\n"
    "checkpoint whose index is missing, data files whose shard number is\n"
    "out of range (<r> not below <N>: no checkpoint's, so counted in no\n"
    "checkpoint's bytes or shards), and index files the state file\n"
    "does not list (among them the checkpoints\n"
    "keep_checkpoint_every_n_hours keeps: a saver drops them from the\n"
    "list and leaves their files; when the state file records\n"
    "last_preserved_timestamp, as such a saver's does, the reason says\n"
    "so; one without any of its data files is marked unreadable: a saver\n"
    "opening DIR removes it).\n"
    "A listed checkpoint with files missing is marked (\"missing index\",\n"
    "\"missing data shard 3 of 4\"; an index or data file that is there\n"
    "but is not a regular file: \"index is a FIFO, not a regular file\",\n"
    "\"data shard 0 of 1 is a directory, not a regular file\"; an index\n"
    "that is a symbolic link to nothing: \"index is a symbolic link to\n"
    "nothing or in a loop\"); ls still\n"
    "exits 0, as it only lists (ckpt verify DIR exits 1 for the checkpoint\n"
    "it names).\n\n"
    "DIR must be a directory: a checkpoint prefix, one of its files or\n"
    "the state file instead is a usage error whose message gives the\n"
    "command meant (ckpt ls of its directory, ckpt inspect of it).\n"
    "DIR/checkpoint is read once (the latest is chosen from that read, so\n"
    "a save replacing it meanwhile cannot leave no row marked latest) and\n"
    "DIR is listed once (and once each directory under it the state\n"
    "file's paths lead to, whatever the paths and links that lead there);\n"
    "each checkpoint's files are then looked up. A path ending in\n"
    "'/' is not a checkpoint prefix, nor is an empty one (\"empty path\");\n"
    "for a checkpoint outside DIR only its index is looked up. Names are\n"
    "printed with control bytes as \\xHH.\n\n",
    "\n"
    "Exit status 0 when DIR is listed (missing or stray files included), 1\n"
    "when its state file cannot be parsed, 2 on a usage error or a DIR that\n"
    "is not a directory or cannot be read.\n",
    run};

/* ---- small helpers ------------------------------------------------------- */

/* dir + "/" + name, as the library joins them ("" or "." gives name). */
static char *join(const char *dir, const char *name)
{
    if (dir[0] == '\0' || strcmp(dir, ".") == 0)
        return cli_xstrdup(name);
    return cli_join(dir, name);
}

/* The path a stored one names, tidied (ls_path_tidy): one spelling of
 * each, so that one directory is one group of rows. */
static char *resolve(const char *dir, const char *path)
{
    char *joined = path[0] == '/' ? cli_xstrdup(path) : join(dir, path);
    char *tidy = ls_path_tidy(joined);
    free(joined);
    return tidy;
}

/* ---- directory listings -------------------------------------------------- */

typedef struct file_entry {
    char *name;
    uint64_t size;
    double mtime;
    int claimed;      /* the index or a data file of a listed checkpoint */
    const char *kind; /* an entry of `others`: what it is ("a FIFO") */
} file_entry;

typedef struct dir_listing {
    file_entry *files; /* sorted by name */
    size_t n;
    /* Entries that are not regular files (symbolic links followed), sorted
     * by name: a data file's name on a FIFO or directory is reported as
     * that, not as a missing data file. */
    file_entry *others;
    size_t nothers;
} dir_listing;

static int by_name(const void *a, const void *b)
{
    return strcmp(((const file_entry *)a)->name, ((const file_entry *)b)->name);
}

/* What a file that is not a regular file is, for messages. */
static const char *irregular_kind(mode_t mode)
{
    if (S_ISDIR(mode))
        return "a directory";
    if (S_ISFIFO(mode))
        return "a FIFO";
    if (S_ISCHR(mode) || S_ISBLK(mode))
        return "a device";
    if (S_ISSOCK(mode))
        return "a socket";
    return "not a regular file";
}

/* Note the entry `name` of `out` that is not a regular file. */
static void add_other(dir_listing *out, size_t *cap, const char *name,
                      mode_t mode)
{
    if (out->nothers == *cap) {
        *cap = *cap ? *cap * 2 : 4;
        out->others = cli_xrealloc(out->others, *cap * sizeof(*out->others));
    }
    memset(&out->others[out->nothers], 0, sizeof(*out->others));
    out->others[out->nothers].name = cli_xstrdup(name);
    out->others[out->nothers].kind = irregular_kind(mode);
    out->nothers++;
}

/* The regular files of `dir` (symbolic links followed), sorted by name,
 * and apart the entries that are something else; one readdir pass and one
 * fstatat per entry. 0 or an errno value. */
static int list_dir(dir_listing *out, const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    size_t cap = 0, other_cap = 0;
    memset(out, 0, sizeof(*out));
    if (!d)
        return errno;
    while ((de = readdir(d)) != NULL) {
        struct stat st;
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (fstatat(dirfd(d), de->d_name, &st, 0) != 0)
            continue;
        if (!S_ISREG(st.st_mode)) {
            add_other(out, &other_cap, de->d_name, st.st_mode);
            continue;
        }
        if (out->n == cap) {
            cap = cap ? cap * 2 : 16;
            out->files = cli_xrealloc(out->files, cap * sizeof(*out->files));
        }
        out->files[out->n].name = cli_xstrdup(de->d_name);
        out->files[out->n].size = (uint64_t)st.st_size;
        out->files[out->n].mtime =
            (double)st.st_mtim.tv_sec + (double)st.st_mtim.tv_nsec / 1e9;
        out->files[out->n].claimed = 0;
        out->files[out->n].kind = NULL;
        out->n++;
    }
    closedir(d);
    if (out->n > 1)
        qsort(out->files, out->n, sizeof(*out->files), by_name);
    if (out->nothers > 1)
        qsort(out->others, out->nothers, sizeof(*out->others), by_name);
    return 0;
}

static void free_listing(dir_listing *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->files[i].name);
    free(l->files);
    for (size_t i = 0; i < l->nothers; i++)
        free(l->others[i].name);
    free(l->others);
    memset(l, 0, sizeof(*l));
}

static file_entry *find_file(const dir_listing *l, const char *name)
{
    file_entry key = {0};
    key.name = (char *)name;
    if (l->n == 0)
        return NULL;
    return bsearch(&key, l->files, l->n, sizeof(*l->files), by_name);
}

/* The first of files[0..n) whose name is not less than `name`. */
static size_t first_not_less(const file_entry *files, size_t n,
                             const char *name)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(files[mid].name, name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The first file whose name is not less than `name`. */
static size_t lower_bound(const dir_listing *l, const char *name)
{
    return first_not_less(l->files, l->n, name);
}

/* A data file name of `base` ("<base>.data-...", `key`) that is not a
 * regular file, of `count` shards when count > 0: "data shard 0 of 2 is a
 * FIFO, not a regular file" in `out`; 0 when there is none. */
static int irregular_data_file(const dir_listing *l, const char *key,
                               size_t blen, int count, char *out, size_t cap)
{
    for (size_t i = first_not_less(l->others, l->nothers, key);
         i < l->nothers && strncmp(l->others[i].name, key, blen + 6) == 0;
         i++) {
        int shard = 0, n = 0;
        const char *kind = l->others[i].kind;
        if (cli_parse_data_name(l->others[i].name, &shard, &n) != blen ||
            shard >= n || (count > 0 && n != count))
            continue;
        snprintf(out, cap, "data shard %d of %d is %s%s", shard, n, kind,
                 strcmp(kind, "not a regular file") == 0
                     ? ""
                     : ", not a regular file");
        return 1;
    }
    return 0;
}

/* ---- checkpoints --------------------------------------------------------- */

/* One data file of a checkpoint. */
typedef struct shard_file {
    char *file; /* its name in the checkpoint's directory */
    int shard;
    int of;
    uint64_t bytes;
} shard_file;

typedef struct ckpt_row {
    const char *stored; /* as the state file has it */
    char *path;         /* resolved against DIR */
    char *parent;       /* the directory part of path ("." when none) */
    const char *base;   /* the last component of path (points into path) */
    int has_step;
    long long step;
    uint64_t bytes;
    int has_time;
    double time;
    const char *time_source; /* "state" or "mtime" */
    int latest;
    char problem[96];   /* "" when complete */
    shard_file *shards; /* the data files found, by name */
    size_t nshards;
} ckpt_row;

/* The step of "<anything>-<digits>", from the last path component. */
static void parse_step(ckpt_row *row)
{
    const char *dash = strrchr(row->base, '-');
    size_t n;
    if (!dash)
        return;
    n = strlen(dash + 1);
    if (n == 0 || n > 18 || !cli_all_digits(dash + 1, n))
        return;
    row->step = strtoll(dash + 1, NULL, 10);
    row->has_step = 1;
}

/* Split row->path into its directory and last component. */
static void split_path(ckpt_row *row)
{
    const char *slash = strrchr(row->path, '/');
    if (!slash) {
        row->parent = cli_xstrdup(".");
        row->base = row->path;
        return;
    }
    row->base = slash + 1;
    row->parent = cli_xstrdup(row->path);
    /* "/name" lives in "/" */
    row->parent[slash == row->path ? 1 : (size_t)(slash - row->path)] = '\0';
}

static void found_index(ckpt_row *row, uint64_t size, double mtime)
{
    row->bytes += size;
    if (!row->has_time) {
        row->has_time = 1;
        row->time = mtime;
        row->time_source = "mtime";
    }
}

/* Why the index `path` is not among the regular files listed: missing, or
 * something else of that name (symbolic links followed). */
static const char *index_problem(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return lstat(path, &st) == 0 && S_ISLNK(st.st_mode)
                   ? "index is a symbolic link to nothing or in a loop"
                   : "missing index";
    if (S_ISDIR(st.st_mode))
        return "index is a directory, not a regular file";
    if (S_ISFIFO(st.st_mode))
        return "index is a FIFO, not a regular file";
    if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode))
        return "index is a device, not a regular file";
    return "index is not a regular file";
}

/* Index and data files of `row` found in the listing `l` of its directory:
 * bytes, mtime, problems. Looks names up: work in the number of files the
 * checkpoint has, not in the size of the directory. */
static int by_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Of the shard numbers present[0..n) (each below `count`; sorted here),
 * how many of 0..count-1 are missing, and the first of them in *first.
 * Work in the files found, not in `count`: a file name can claim
 * 2147483647 shards. */
static int count_missing(int *present, size_t n, int count, int *first)
{
    int distinct = 0, next = 0;
    if (n > 1)
        qsort(present, n, sizeof(*present), by_int);
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && present[i] == present[i - 1])
            continue;
        distinct++;
        if (present[i] == next)
            next++;
    }
    *first = next;
    return count - distinct;
}

static void scan_files(ckpt_row *row, dir_listing *l)
{
    const char *base = row->base;
    size_t blen = strlen(base);
    char *key = cli_xmalloc(blen + 8);
    file_entry *f;
    int *present = NULL; /* shard numbers of the files found */
    size_t npresent = 0;
    int count = 0, mixed = 0, missing = 0, first_missing = -1;
    size_t cap = 0;
    snprintf(key, blen + 8, "%s.index", base);
    f = find_file(l, key);
    if (f) {
        f->claimed = 1;
        found_index(row, f->size, f->mtime);
    }
    snprintf(key, blen + 8, "%s.data-", base);
    for (size_t i = lower_bound(l, key);
         i < l->n && strncmp(l->files[i].name, key, blen + 6) == 0; i++) {
        int shard = 0, n = 0;
        shard_file *sf;
        if (cli_parse_data_name(l->files[i].name, &shard, &n) != blen)
            continue;
        if (shard >= n)
            continue;            /* no checkpoint's: a stray (find_strays) */
        l->files[i].claimed = 1; /* listed under its row, not as a stray */
        row->bytes += l->files[i].size;
        if (row->nshards == cap) {
            cap = cap ? cap * 2 : 4;
            row->shards = cli_xrealloc(row->shards, cap * sizeof(*row->shards));
        }
        sf = &row->shards[row->nshards++];
        sf->file = cli_xstrdup(l->files[i].name);
        sf->shard = shard;
        sf->of = n;
        sf->bytes = l->files[i].size;
        if (count == 0 && n > 0)
            count = n;
        if (n != count)
            mixed = 1;
        else if (shard < n) {
            /* row->shards grows with it: room for every file's number */
            present = cli_xrealloc(present, cap * sizeof(*present));
            present[npresent++] = shard;
        }
    }
    if (count > 0)
        missing = count_missing(present, npresent, count, &first_missing);
    free(present);
    if (!f) {
        size_t n = strlen(row->parent) + blen + 8;
        char *index = cli_xmalloc(n);
        snprintf(index, n, "%s/%s.index", row->parent, base);
        snprintf(row->problem, sizeof(row->problem), "%s",
                 index_problem(index));
        free(index);
    } else if ((count == 0 || missing > 0) && !mixed &&
               irregular_data_file(l, key, blen, count, row->problem,
                                   sizeof(row->problem))) {
        /* said what is there instead of a missing data file */
    } else if (count == 0)
        snprintf(row->problem, sizeof(row->problem), "missing data files");
    else if (mixed)
        snprintf(row->problem, sizeof(row->problem),
                 "data files with different shard counts");
    else if (missing == 1)
        snprintf(row->problem, sizeof(row->problem),
                 "missing data shard %d of %d", first_missing, count);
    else if (missing > 1)
        snprintf(row->problem, sizeof(row->problem),
                 "missing %d of %d data shards", missing, count);
    free(key);
}

/* A checkpoint outside DIR: only the index it names is looked at (no
 * directory outside DIR is listed). */
static void scan_outside(ckpt_row *row)
{
    char *index = cli_index_path(row->path);
    struct stat st;
    if (stat(index, &st) == 0 && S_ISREG(st.st_mode)) {
        found_index(row, (uint64_t)st.st_size,
                    (double)st.st_mtim.tv_sec +
                        (double)st.st_mtim.tv_nsec / 1e9);
        snprintf(row->problem, sizeof(row->problem),
                 "outside the directory; data files not checked");
    } else {
        snprintf(row->problem, sizeof(row->problem), "%s",
                 index_problem(index));
    }
    free(index);
}

static int by_parent_then_base(const void *a, const void *b)
{
    const ckpt_row *x = *(const ckpt_row *const *)a;
    const ckpt_row *y = *(const ckpt_row *const *)b;
    int c = strcmp(x->parent, y->parent);
    return c != 0 ? c : strcmp(x->base, y->base);
}

/* The result of scanning `from`, for a row naming the same files. */
static void copy_scan(ckpt_row *to, const ckpt_row *from)
{
    int from_state = to->has_time;
    to->bytes = from->bytes;
    memcpy(to->problem, from->problem, sizeof(to->problem));
    if (from->nshards > 0) {
        to->shards = cli_xmalloc(from->nshards * sizeof(*to->shards));
        for (size_t i = 0; i < from->nshards; i++) {
            to->shards[i] = from->shards[i];
            to->shards[i].file = cli_xstrdup(from->shards[i].file);
        }
        to->nshards = from->nshards;
    }
    if (!from_state && from->has_time && from->time_source &&
        strcmp(from->time_source, "mtime") == 0) {
        to->has_time = 1;
        to->time = from->time;
        to->time_source = "mtime";
    }
}

/* Scan rows[first..end) (sorted, one parent path), whose directory is at
 * `place` and listed in `l` (NULL: not listed). */
static void scan_group(ckpt_row **rows, size_t first, size_t end,
                       enum cli_dir_place place, dir_listing *l)
{
    for (size_t i = first; i < end; i++) {
        ckpt_row *r = rows[i];
        if (r->base[0] == '\0')
            snprintf(r->problem, sizeof(r->problem), "%s",
                     r->stored[0] == '\0'
                         ? "empty path (not a checkpoint prefix)"
                         : "not a checkpoint prefix (ends in '/')");
        else if (i > first && strcmp(r->base, rows[i - 1]->base) == 0)
            copy_scan(r, rows[i - 1]);
        else if (l)
            scan_files(r, l);
        else if (place != CLI_DIR_UNKNOWN)
            scan_outside(r);
        else
            snprintf(r->problem, sizeof(r->problem), "missing index");
    }
}

/* The rows of one parent path, and the directory it leads to. */
typedef struct row_group {
    size_t first, end; /* into the rows sorted by parent */
    int found;         /* the directory was there (dev, ino set) */
    dev_t dev;
    ino_t ino;
} row_group;

static int by_directory(const void *a, const void *b)
{
    const row_group *x = a, *y = b;
    if (x->found != y->found)
        return x->found - y->found;
    if (x->dev != y->dev)
        return x->dev < y->dev ? -1 : 1;
    if (x->ino != y->ino)
        return x->ino < y->ino ? -1 : 1;
    return (x->first > y->first) - (x->first < y->first);
}

static int same_directory(const row_group *x, const row_group *y)
{
    return x->found && y->found && x->dev == y->dev && x->ino == y->ino;
}

/* Scan every row: rows are grouped by parent path and the groups by the
 * directory they lead to (symbolic links followed), each directory is
 * placed once, DIR's listing serves the rows in DIR, a directory under
 * DIR is listed once whatever the paths that lead to it, and a checkpoint
 * outside DIR has only its index looked at. O(n log n) in the rows plus
 * the files listed. */
static void scan_rows(ckpt_row *rows, size_t nrows, const char *dir,
                      dir_listing *dir_files)
{
    ckpt_row **order;
    row_group *groups;
    size_t ngroups = 0;
    char *dir_real = realpath(dir, NULL);
    if (nrows == 0) {
        free(dir_real);
        return;
    }
    order = cli_xmalloc(nrows * sizeof(*order));
    groups = cli_xcalloc(nrows, sizeof(*groups));
    for (size_t i = 0; i < nrows; i++) {
        split_path(&rows[i]);
        parse_step(&rows[i]);
        order[i] = &rows[i];
    }
    qsort(order, nrows, sizeof(*order), by_parent_then_base);
    for (size_t first = 0, end; first < nrows; first = end) {
        struct stat sb;
        row_group *g = &groups[ngroups++];
        for (end = first + 1; end < nrows && strcmp(order[end]->parent,
                                                    order[first]->parent) == 0;
             end++)
            ;
        g->first = first;
        g->end = end;
        if (stat(order[first]->parent, &sb) == 0 && S_ISDIR(sb.st_mode)) {
            g->found = 1;
            g->dev = sb.st_dev;
            g->ino = sb.st_ino;
        }
    }
    qsort(groups, ngroups, sizeof(*groups), by_directory);
    for (size_t k = 0, next; k < ngroups; k = next) {
        enum cli_dir_place place =
            cli_dir_place(order[groups[k].first]->parent, dir, dir_real);
        dir_listing other = {NULL, 0, NULL, 0};
        dir_listing *l = NULL;
        for (next = k + 1;
             next < ngroups && same_directory(&groups[k], &groups[next]);
             next++)
            ;
        if (!groups[k].found) /* each on its own: nothing to share */
            next = k + 1;
        if (place == CLI_DIR_SAME)
            l = dir_files;
        else if (place == CLI_DIR_INSIDE &&
                 list_dir(&other, order[groups[k].first]->parent) == 0)
            l = &other;
        for (size_t j = k; j < next; j++)
            scan_group(order, groups[j].first, groups[j].end, place, l);
        free_listing(&other);
    }
    free(groups);
    free(order);
    free(dir_real);
}

/* ---- stray files --------------------------------------------------------- */

typedef struct stray {
    const char *file;
    const char *reason;
} stray;

static int is_temp_name(const char *name)
{
    return strstr(name, ".tempstate") != NULL ||
           strncmp(name, "checkpoint.tmp", 14) == 0 ||
           strstr(name, ".tmp") != NULL;
}

/* Whether DIR holds any data file of the checkpoint whose name is the
 * first `stem` bytes of `name`. */
static int has_data_file(const dir_listing *l, const char *name, size_t stem)
{
    char *key = cli_xmalloc(stem + 7);
    int found = 0;
    memcpy(key, name, stem);
    memcpy(key + stem, ".data-", 7);
    for (size_t i = lower_bound(l, key);
         !found && i < l->n && strncmp(l->files[i].name, key, stem + 6) == 0;
         i++) {
        int shard = 0, count = 0;
        found = cli_parse_data_name(l->files[i].name, &shard, &count) == stem &&
                shard < count;
    }
    free(key);
    return found;
}

/* Classify every file of DIR; returns how many strays went to `out`. */
static size_t find_strays(stray *out, const dir_listing *l, int keeps_hours)
{
    size_t k = 0;
    for (size_t i = 0; i < l->n; i++) {
        const char *name = l->files[i].name;
        size_t n = strlen(name);
        int shard, count;
        size_t plen;
        if (strcmp(name, CKPT_STATE_FILENAME) == 0)
            continue;
        if (strcmp(name, PENDING_NOTE) == 0) {
            out[k].file = name;
            out[k++].reason =
                "note of a save in progress, or of one a crash cut short: "
                "a saver opening DIR deletes the complete checkpoints it "
                "names that the state file does not list, then removes it";
            continue;
        }
        if (is_temp_name(name)) {
            out[k].file = name;
            out[k++].reason = "temporary file";
            continue;
        }
        if (cli_ends_with(name, ".index") && n > 6) {
            if (!l->files[i].claimed) {
                out[k].file = name;
                /* a saver with keep_checkpoint_every_n_hours records
                 * last_preserved_timestamp and keeps checkpoints unlisted */
                if (!has_data_file(l, name, n - 6))
                    out[k++].reason = "index not listed in the state file, "
                                      "without any of its data files "
                                      "(unreadable)";
                else
                    out[k++].reason =
                        keeps_hours ? "index not listed in the state file "
                                      "(likely a checkpoint "
                                      "keep_checkpoint_every_n_hours kept)"
                                    : "index not listed in the state file";
            }
            continue;
        }
        plen = cli_parse_data_name(name, &shard, &count);
        if (plen > 0 && shard >= count) {
            /* "-00007-of-00002": part of no checkpoint, whatever is next
             * to it (not counted in any checkpoint's bytes or shards) */
            out[k].file = name;
            out[k++].reason = "data file whose shard number is out of range "
                              "(not below its shard count)";
            continue;
        }
        if (plen > 0 && !l->files[i].claimed) {
            char *index = cli_xmalloc(plen + 7);
            memcpy(index, name, plen);
            memcpy(index + plen, ".index", 7);
            if (!find_file(l, index)) {
                out[k].file = name;
                out[k++].reason = "data file without its index";
            }
            free(index);
        }
    }
    return k;
}

/* ---- output -------------------------------------------------------------- */

static void format_time(char *buf, size_t n, const ckpt_row *row)
{
    struct tm tm;
    time_t t;
    if (!row->has_time || !(row->time > -1e15 && row->time < 1e15)) {
        snprintf(buf, n, "-");
        return;
    }
    t = (time_t)row->time;
    if (!gmtime_r(&t, &tm) || strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        snprintf(buf, n, "-");
}

/* Under a checkpoint with several data files, one line per file. */
static void print_shards(const ckpt_row *r)
{
    int wf = 4, wb = 1;
    if (r->nshards < 2 && !(r->nshards == 1 && r->shards[0].of > 1))
        return;
    for (size_t i = 0; i < r->nshards; i++) {
        char num[32];
        int len;
        const char *file = cli_safe(r->shards[i].file);
        wf = cli_name_column(wf, cli_text_columns(file, strlen(file)));
        len = snprintf(num, sizeof(num), "%llu",
                       (unsigned long long)r->shards[i].bytes);
        if (len > wb)
            wb = len;
    }
    for (size_t i = 0; i < r->nshards; i++) {
        printf("    shard %d of %d  ", r->shards[i].shard, r->shards[i].of);
        cli_print_padded(cli_safe(r->shards[i].file), wf);
        printf("  %*llu\n", wb, (unsigned long long)r->shards[i].bytes);
    }
}

static void print_text(const char *dir, int have_state, const ckpt_row *rows,
                       size_t nrows, const stray *strays, size_t nstrays)
{
    int wp = 6, ws = 4, wb = 5;
    if (!have_state)
        printf("%s: no checkpoint state file\n", cli_safe(dir));
    else
        printf("%s: %zu checkpoint%s\n", cli_safe(dir), nrows,
               nrows == 1 ? "" : "s");
    for (size_t i = 0; i < nrows; i++) {
        char num[32];
        int len;
        const char *stored = cli_safe(rows[i].stored);
        wp = cli_name_column(wp, cli_text_columns(stored, strlen(stored)));
        len = snprintf(num, sizeof(num), "%lld", rows[i].step);
        if (rows[i].has_step && len > ws)
            ws = len;
        len = snprintf(num, sizeof(num), "%llu",
                       (unsigned long long)rows[i].bytes);
        if (len > wb)
            wb = len;
    }
    if (nrows > 0)
        printf("%-*s  %*s  %*s  %s\n", wp, "PREFIX", ws, "STEP", wb, "BYTES",
               "TIME");
    for (size_t i = 0; i < nrows; i++) {
        char step[32], when[40];
        const ckpt_row *r = &rows[i];
        if (r->has_step)
            snprintf(step, sizeof(step), "%lld", r->step);
        else
            snprintf(step, sizeof(step), "-");
        format_time(when, sizeof(when), r);
        cli_print_padded(cli_safe(r->stored), wp);
        printf("  %*s  %*llu  %s", ws, step, wb, (unsigned long long)r->bytes,
               when);
        if (r->latest || r->problem[0])
            printf("%*s", 20 - (int)strlen(when), "");
        if (r->latest)
            printf("  latest");
        if (r->problem[0])
            printf("  (%s)", r->problem);
        printf("\n");
        print_shards(r);
    }
    if (nstrays > 0) {
        int wf = 4;
        for (size_t i = 0; i < nstrays; i++) {
            const char *file = cli_safe(strays[i].file);
            wf = cli_name_column(wf, cli_text_columns(file, strlen(file)));
        }
        printf("stray or incomplete files:\n");
        for (size_t i = 0; i < nstrays; i++) {
            printf("  ");
            cli_print_padded(cli_safe(strays[i].file), wf);
            printf("  %s\n", strays[i].reason);
        }
    }
}

static json_object *json_shards(const ckpt_row *r)
{
    json_object *a = json_object_new_array();
    for (size_t i = 0; i < r->nshards; i++) {
        json_object *o = json_object_new_object();
        json_object_object_add(o, "file", cli_json_string(r->shards[i].file));
        json_object_object_add(o, "shard",
                               json_object_new_int(r->shards[i].shard));
        json_object_object_add(o, "of", json_object_new_int(r->shards[i].of));
        json_object_object_add(o, "bytes",
                               json_object_new_uint64(r->shards[i].bytes));
        json_object_array_add(a, o);
    }
    return a;
}

static json_object *json_row(const ckpt_row *r)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "prefix", cli_json_string(r->stored));
    json_object_object_add(o, "path", cli_json_string(r->path));
    json_object_object_add(o, "step",
                           r->has_step ? json_object_new_int64(r->step) : NULL);
    json_object_object_add(o, "bytes", json_object_new_uint64(r->bytes));
    if (r->has_time && isfinite(r->time)) {
        char buf[40];
        snprintf(buf, sizeof(buf), "%.17g", r->time);
        json_object_object_add(o, "time",
                               json_object_new_double_s(r->time, buf));
        json_object_object_add(o, "time_source",
                               json_object_new_string(r->time_source));
    } else {
        json_object_object_add(o, "time", NULL);
        json_object_object_add(o, "time_source", NULL);
    }
    json_object_object_add(o, "latest", json_object_new_boolean(r->latest));
    json_object_object_add(o, "complete",
                           json_object_new_boolean(r->problem[0] == 0));
    json_object_object_add(o, "problem",
                           r->problem[0] ? json_object_new_string(r->problem)
                                         : NULL);
    json_object_object_add(o, "shards", json_shards(r));
    return o;
}

/* The document is written a row at a time, each row built, printed and
 * freed in turn: a state file listing hundreds of thousands of
 * checkpoints costs the memory of one row's objects, not of all of them
 * (json-c's objects take several times the text they print). */
static void print_json(const char *dir, int have_state, const ckpt_row *rows,
                       size_t nrows, const stray *strays, size_t nstrays)
{
    const char *latest = NULL;
    for (size_t i = 0; i < nrows; i++)
        if (rows[i].latest)
            latest = rows[i].stored;
    cli_json_printed();
    fputs("{\n  \"directory\": ", stdout);
    cli_put_json(cli_json_string(dir), 2);
    fputs(",\n  \"state_file\": ", stdout);
    cli_put_json(json_object_new_boolean(have_state), 2);
    fputs(",\n  \"latest\": ", stdout);
    cli_put_json(latest ? cli_json_string(latest) : NULL, 2);
    fputs(",\n  \"checkpoints\": [", stdout);
    for (size_t i = 0; i < nrows; i++) {
        fputs(i ? ",\n    " : "\n    ", stdout);
        cli_put_json(json_row(&rows[i]), 4);
    }
    fputs(nrows ? "\n  ],\n  \"stray\": [" : "],\n  \"stray\": [", stdout);
    for (size_t i = 0; i < nstrays; i++) {
        json_object *o = json_object_new_object();
        json_object_object_add(o, "file", cli_json_string(strays[i].file));
        json_object_object_add(o, "reason",
                               json_object_new_string(strays[i].reason));
        fputs(i ? ",\n    " : "\n    ", stdout);
        cli_put_json(o, 4);
    }
    /* "ok": the exit status is 0, in every command's document */
    fputs(nstrays ? "\n  ],\n  \"ok\": true\n}\n" : "],\n  \"ok\": true\n}\n",
          stdout);
}

/* ---- the command --------------------------------------------------------- */

/* Orders rows (pointers into one array) by path, then by position. */
static int compare_row_paths(const void *a, const void *b)
{
    const ckpt_row *x = *(const ckpt_row *const *)a;
    const ckpt_row *y = *(const ckpt_row *const *)b;
    int c = strcmp(x->path, y->path);
    return c != 0 ? c : (x > y) - (x < y);
}

/* Whether a row's stored path can name a checkpoint (not empty, not
 * ending in '/'): only those are the same checkpoint when they resolve to
 * the same path; the others are each listed with their problem. */
static int names_prefix(const ckpt_row *r)
{
    return ls_path_names_prefix(r->stored);
}

/* Drop every row whose checkpoint a later row names again (a state file
 * may list a path twice, or once relative and once absolute; the later
 * place is the newer, and the saver counts it once): *n becomes the
 * number kept, in their order. Sorts, so a long list costs n log n. */
static void drop_repeated_rows(ckpt_row *rows, size_t *n)
{
    const ckpt_row **order = cli_xcalloc(*n + 1, sizeof(*order));
    unsigned char *drop = cli_xcalloc(*n + 1, 1);
    size_t kept = 0;
    for (size_t i = 0; i < *n; i++)
        order[i] = &rows[i];
    qsort(order, *n, sizeof(*order), compare_row_paths);
    for (size_t i = 0; i + 1 < *n; i++)
        if (names_prefix(order[i]) && names_prefix(order[i + 1]) &&
            strcmp(order[i]->path, order[i + 1]->path) == 0)
            drop[order[i] - rows] = 1;
    for (size_t i = 0; i < *n; i++) {
        if (drop[i])
            free(rows[i].path);
        else
            rows[kept++] = rows[i];
    }
    *n = kept;
    free(order);
    free(drop);
}

/* Rows for every listed path (model_checkpoint_path too if the list lacks
 * it), each path once, with the latest marked. A path the list spells
 * again later (the same, or "./" and "//" apart) is dropped before its row
 * is made, so a list repeating one path costs a copy of the list, not a
 * row and a joined path each; then relative and absolute spellings of one
 * path are made one (drop_repeated_rows). */
static ckpt_row *make_rows(const ckpt_state *st, const char *dir,
                           const char *latest, size_t *n_out)
{
    size_t n = st->num_paths, total, made = 0;
    int append = 1;
    const char **stored;
    unsigned char *keep;
    char *latest_path = latest ? ls_path_tidy(latest) : NULL;
    ckpt_row *rows;
    for (size_t i = 0; i < n; i++)
        if (strcmp(st->all_paths[i], st->model_checkpoint_path) == 0)
            append = 0;
    total = n + (size_t)append;
    stored = cli_xcalloc(total + 1, sizeof(*stored));
    keep = cli_xcalloc(total + 1, 1);
    for (size_t i = 0; i < total; i++)
        stored[i] = i < n ? st->all_paths[i] : st->model_checkpoint_path;
    ls_paths_last_places(stored, total, keep);
    for (size_t i = 0; i < total; i++)
        made += keep[i];
    rows = cli_xcalloc(made + 1, sizeof(*rows));
    made = 0;
    for (size_t i = 0; i < total; i++) {
        ckpt_row *r;
        if (!keep[i])
            continue;
        r = &rows[made++];
        r->stored = stored[i];
        r->path = resolve(dir, r->stored);
        if (i < n && st->num_timestamps == n) {
            r->has_time = 1;
            r->time = st->timestamps[i];
            r->time_source = "state";
        }
        r->latest = latest_path && strcmp(latest_path, r->path) == 0;
    }
    *n_out = made;
    drop_repeated_rows(rows, n_out);
    free(latest_path);
    free(keep);
    free(stored);
    return rows;
}

/* What `path`, given to ls where a directory is expected, names: 1 a
 * checkpoint (path.index exists, or a name ending in .index or .data-...),
 * 2 a state file (named "checkpoint"), else 0; each gets a hint. */
static int names_checkpoint(const char *path)
{
    const char *base = strrchr(path, '/');
    char *index;
    struct stat sb;
    int found;
    base = base ? base + 1 : path;
    if (strcmp(base, "checkpoint") == 0)
        return stat(path, &sb) == 0 ? 2 : 0;
    if (cli_names_checkpoint_file(path))
        return 1;
    index = cli_index_path(path);
    found = stat(index, &sb) == 0;
    free(index);
    return found;
}

static int run(int argc, char **argv)
{
    const cli_command *c = &cli_cmd_ls;
    const char *dir = NULL;
    ckpt_state st = CKPT_STATE_INIT;
    ckpt_buf latest = CKPT_BUF_INIT;
    dir_listing files = {NULL, 0, NULL, 0};
    ckpt_row *rows = NULL;
    stray *strays = NULL;
    size_t nrows = 0, nstrays;
    int json = 0, have_state = 0, err, rc = 0;
    struct stat sb;
    rc = cli_parse_path_and_json(c, "DIR", argc, argv, &dir, &json);
    if (rc != 0)
        return rc;
    if (!*dir) { /* else "ckpt ls: : No such file or directory" */
        cli_error("ls", "empty DIR (give a directory: . for the current one)");
        return CLI_USAGE;
    }
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        const char *why =
            stat(dir, &sb) != 0 ? strerror(errno) : "not a directory";
        int names = names_checkpoint(dir);
        const char *slash = strrchr(dir, '/');
        int dlen = slash ? (int)(slash - dir) + (slash == dir) : 1;
        const char *dname = slash ? dir : ".";
        if (names)
            cli_error("ls",
                      "%s: %s: ls takes a checkpoint directory (ckpt ls "
                      "%.*s)%s%s",
                      dir, why, dlen, dname,
                      names == 1 ? "; this checkpoint's tensors: ckpt "
                                   "inspect "
                                 : "",
                      names == 1 ? dir : "");
        else
            cli_error("ls", "%s: %s", dir, why);
        return CLI_USAGE;
    }
    err = list_dir(&files, dir);
    if (err != 0) {
        cli_error("ls", "%s: %s", dir, strerror(err));
        return CLI_USAGE;
    }
    err = ckpt_state_read(&st, NULL, dir);
    if (err == 0) {
        have_state = 1;
    } else if (err != CKPT_ENOTFOUND) {
        rc = cli_lib_error("ls", err, dir); /* a damaged state file: 1 */
        goto done;
    }
    if (have_state) {
        /* from the state read above: a save landing in between must not
         * leave the listing without its latest */
        err = ckpt_state_latest(&latest, NULL, dir, &st);
        if (err < 0 && err != CKPT_ENOTFOUND) {
            rc = cli_lib_error("ls", err, dir);
            goto done;
        }
        rows = make_rows(&st, dir, err == 0 ? latest.ptr : NULL, &nrows);
        scan_rows(rows, nrows, dir, &files);
    }
    strays = cli_xcalloc(files.n + 1, sizeof(*strays));
    nstrays = find_strays(strays, &files,
                          have_state && st.last_preserved_timestamp > 0.0);
    if (json)
        print_json(dir, have_state, rows, nrows, strays, nstrays);
    else
        print_text(dir, have_state, rows, nrows, strays, nstrays);
done:
    for (size_t i = 0; i < nrows; i++) {
        free(rows[i].path);
        free(rows[i].parent);
        for (size_t k = 0; k < rows[i].nshards; k++)
            free(rows[i].shards[k].file);
        free(rows[i].shards);
    }
    free(rows);
    free(strays);
    free_listing(&files);
    ckpt_state_dispose(&st);
    ckpt_buf_dispose(&latest);
    return rc;
}
