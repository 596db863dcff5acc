/* tools/ckpt/cmd_ls.c - `ckpt ls DIR [--json]`: the checkpoints a
 * directory's state file lists (prefix, step, bytes, time), which one is
 * latest, and the stray or incomplete files next to them: temporary files,
 * data files without their index, index files the state file does not
 * list. */
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static int run(int argc, char **argv);

const cli_command cli_cmd_ls = {
    "ls", "ls DIR [--json]",
    "List the checkpoints of a directory and any stray or incomplete files.",
    "Lists the checkpoints named by DIR/checkpoint (oldest first) with their\n"
    "step (from a trailing -<digits>), bytes (index and data files) and time\n"
    "(the state file's timestamp, else the index file's mtime, in UTC), and\n"
    "marks the latest. Then lists stray or incomplete files: temporary files\n"
    "(*.tempstate*, checkpoint.tmp*, *.tmp*), data files whose index is\n"
    "missing, and index files the state file does not list.\n\n"
    "  --json   print JSON: {\"directory\", \"state_file\", \"latest\",\n"
    "           \"checkpoints\": [{\"prefix\", \"path\", \"step\", \"bytes\",\n"
    "           \"time\", \"time_source\", \"latest\", \"complete\", "
    "\"problem\"}],\n"
    "           \"stray\": [{\"file\", \"reason\"}]}\n",
    run};

/* ---- small helpers ------------------------------------------------------- */

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "ckpt ls: out of memory\n");
        exit(CLI_USAGE);
    }
    return p;
}

static char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(xmalloc(n), s, n);
}

/* dir + "/" + name, as the library joins them ("" or "." gives name). */
static char *join(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p;
    size_t d = strlen(dir);
    if (d == 0 || strcmp(dir, ".") == 0)
        return xstrdup(name);
    p = xmalloc(n);
    snprintf(p, n, "%s%s%s", dir, d && dir[d - 1] == '/' ? "" : "/", name);
    return p;
}

static char *resolve(const char *dir, const char *path)
{
    return path[0] == '/' ? xstrdup(path) : join(dir, path);
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && memcmp(s + n - m, suffix, m) == 0;
}

static int digits_at(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return 0;
    return 1;
}

static int five_digits(const char *s)
{
    int v = 0;
    for (int i = 0; i < 5; i++)
        v = v * 10 + (s[i] - '0');
    return v;
}

/* For "<p>.data-SSSSS-of-NNNNN": the length of <p> (0 when the name is not
 * a data file's), the shard and the shard count. */
static size_t parse_data_name(const char *s, int *shard, int *count)
{
    size_t n = strlen(s);
    const char *t;
    if (n <= 20)
        return 0;
    t = s + n - 20;
    if (memcmp(t, ".data-", 6) != 0 || !digits_at(t + 6, 5) ||
        memcmp(t + 11, "-of-", 4) != 0 || !digits_at(t + 15, 5))
        return 0;
    *shard = five_digits(t + 6);
    *count = five_digits(t + 15);
    return n - 20;
}

/* ---- directory listings -------------------------------------------------- */

typedef struct file_entry {
    char *name;
    uint64_t size;
    double mtime;
} file_entry;

typedef struct dir_listing {
    file_entry *files;
    size_t n;
} dir_listing;

static int by_name(const void *a, const void *b)
{
    return strcmp(((const file_entry *)a)->name, ((const file_entry *)b)->name);
}

/* The regular files of `dir`, sorted by name; 0 or an errno value. */
static int list_dir(dir_listing *out, const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    size_t cap = 0;
    out->files = NULL;
    out->n = 0;
    if (!d)
        return errno;
    while ((de = readdir(d)) != NULL) {
        struct stat st;
        char *full;
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        full = join(dir, de->d_name);
        if (stat(full, &st) == 0 && S_ISREG(st.st_mode)) {
            if (out->n == cap) {
                file_entry *grown;
                cap = cap ? cap * 2 : 16;
                grown = realloc(out->files, cap * sizeof(*grown));
                if (!grown) {
                    fprintf(stderr, "ckpt ls: out of memory\n");
                    exit(CLI_USAGE);
                }
                out->files = grown;
            }
            out->files[out->n].name = xstrdup(de->d_name);
            out->files[out->n].size = (uint64_t)st.st_size;
            out->files[out->n].mtime =
                (double)st.st_mtim.tv_sec + (double)st.st_mtim.tv_nsec / 1e9;
            out->n++;
        }
        free(full);
    }
    closedir(d);
    if (out->n > 1)
        qsort(out->files, out->n, sizeof(*out->files), by_name);
    return 0;
}

static void free_listing(dir_listing *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->files[i].name);
    free(l->files);
    l->files = NULL;
    l->n = 0;
}

static const file_entry *find_file(const dir_listing *l, const char *name)
{
    file_entry key;
    key.name = (char *)name;
    if (l->n == 0)
        return NULL;
    return bsearch(&key, l->files, l->n, sizeof(*l->files), by_name);
}

/* ---- checkpoints --------------------------------------------------------- */

typedef struct ckpt_row {
    const char *stored; /* as the state file has it */
    char *path;         /* resolved against DIR */
    int has_step;
    long long step;
    uint64_t bytes;
    int has_time;
    double time;
    const char *time_source; /* "state" or "mtime" */
    int latest;
    char problem[96]; /* "" when complete */
} ckpt_row;

/* The step of "<anything>-<digits>", from the last path component. */
static void parse_step(ckpt_row *row)
{
    const char *base = strrchr(row->stored, '/');
    const char *dash;
    size_t n;
    base = base ? base + 1 : row->stored;
    dash = strrchr(base, '-');
    if (!dash)
        return;
    n = strlen(dash + 1);
    if (n == 0 || n > 18 || !digits_at(dash + 1, n))
        return;
    row->step = strtoll(dash + 1, NULL, 10);
    row->has_step = 1;
}

/* Index and data files of `row` found in `l`: bytes, mtime, problems. */
static void scan_files(ckpt_row *row, const dir_listing *l, const char *base)
{
    size_t blen = strlen(base);
    char *index = xmalloc(blen + 7);
    const file_entry *f;
    unsigned char *present = NULL;
    int count = 0, mixed = 0, missing = 0, first_missing = -1;
    snprintf(index, blen + 7, "%s.index", base);
    f = find_file(l, index);
    free(index);
    if (f) {
        row->bytes += f->size;
        if (!row->has_time) {
            row->has_time = 1;
            row->time = f->mtime;
            row->time_source = "mtime";
        }
    }
    for (size_t i = 0; i < l->n; i++) {
        int shard, n;
        size_t plen = parse_data_name(l->files[i].name, &shard, &n);
        if (plen != blen || memcmp(l->files[i].name, base, blen) != 0)
            continue;
        row->bytes += l->files[i].size;
        if (count == 0 && n > 0) {
            count = n;
            present = calloc((size_t)n, 1);
        }
        if (n != count)
            mixed = 1;
        else if (present && shard < n)
            present[shard] = 1;
    }
    for (int s = 0; s < count && present; s++) {
        if (!present[s]) {
            missing++;
            if (first_missing < 0)
                first_missing = s;
        }
    }
    free(present);
    if (!f)
        snprintf(row->problem, sizeof(row->problem), "missing index");
    else if (count == 0)
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
}

static void scan_checkpoint(ckpt_row *row, const char *dir,
                            const dir_listing *dir_files)
{
    const char *slash = strrchr(row->path, '/');
    const char *base = slash ? slash + 1 : row->path;
    char *parent;
    dir_listing other = {NULL, 0};
    parse_step(row);
    parent = slash ? xstrdup(row->path) : xstrdup(".");
    if (slash)
        parent[slash - row->path == 0 ? 1 : slash - row->path] = '\0';
    if (strcmp(parent, dir) == 0 || (!slash && strcmp(dir, ".") == 0)) {
        scan_files(row, dir_files, base);
    } else {
        list_dir(&other, parent); /* unreadable: nothing found */
        scan_files(row, &other, base);
        free_listing(&other);
    }
    free(parent);
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

static int listed(const ckpt_row *rows, size_t n, const char *path)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(rows[i].path, path) == 0)
            return 1;
    return 0;
}

/* Classify every file of DIR; returns how many strays went to `out`. */
static size_t find_strays(stray *out, const dir_listing *l, const char *dir,
                          const ckpt_row *rows, size_t nrows)
{
    size_t k = 0;
    for (size_t i = 0; i < l->n; i++) {
        const char *name = l->files[i].name;
        size_t n = strlen(name);
        int shard, count;
        size_t plen;
        if (strcmp(name, CKPT_STATE_FILENAME) == 0)
            continue;
        if (is_temp_name(name)) {
            out[k].file = name;
            out[k++].reason = "temporary file";
            continue;
        }
        if (ends_with(name, ".index") && n > 6) {
            char *base = xstrdup(name);
            char *path;
            base[n - 6] = '\0';
            path = join(dir, base);
            if (!listed(rows, nrows, path)) {
                out[k].file = name;
                out[k++].reason = "index not listed in the state file";
            }
            free(path);
            free(base);
            continue;
        }
        plen = parse_data_name(name, &shard, &count);
        if (plen > 0) {
            char *index = xmalloc(plen + 7);
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

static void print_text(const char *dir, int have_state, const ckpt_row *rows,
                       size_t nrows, const stray *strays, size_t nstrays)
{
    int wp = 6, ws = 4, wb = 5;
    if (!have_state)
        printf("%s: no checkpoint state file\n", dir);
    else
        printf("%s: %zu checkpoint%s\n", dir, nrows, nrows == 1 ? "" : "s");
    for (size_t i = 0; i < nrows; i++) {
        char num[32];
        int len = (int)strlen(rows[i].stored);
        if (len > wp)
            wp = len;
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
        printf("%-*s  %*s  %*llu  %s", wp, r->stored, ws, step, wb,
               (unsigned long long)r->bytes, when);
        if (r->latest || r->problem[0])
            printf("%*s", 20 - (int)strlen(when), "");
        if (r->latest)
            printf("  latest");
        if (r->problem[0])
            printf("  (%s)", r->problem);
        printf("\n");
    }
    if (nstrays > 0) {
        int wf = 4;
        for (size_t i = 0; i < nstrays; i++)
            if ((int)strlen(strays[i].file) > wf)
                wf = (int)strlen(strays[i].file);
        printf("stray or incomplete files:\n");
        for (size_t i = 0; i < nstrays; i++)
            printf("  %-*s  %s\n", wf, strays[i].file, strays[i].reason);
    }
}

static void print_json(const char *dir, int have_state, const ckpt_row *rows,
                       size_t nrows, const stray *strays, size_t nstrays)
{
    json_object *root = json_object_new_object();
    json_object *list = json_object_new_array();
    json_object *sl = json_object_new_array();
    const char *latest = NULL;
    for (size_t i = 0; i < nrows; i++) {
        const ckpt_row *r = &rows[i];
        json_object *o = json_object_new_object();
        if (r->latest)
            latest = r->stored;
        json_object_object_add(o, "prefix", json_object_new_string(r->stored));
        json_object_object_add(o, "path", json_object_new_string(r->path));
        json_object_object_add(
            o, "step", r->has_step ? json_object_new_int64(r->step) : NULL);
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
        json_object_object_add(
            o, "problem",
            r->problem[0] ? json_object_new_string(r->problem) : NULL);
        json_object_array_add(list, o);
    }
    for (size_t i = 0; i < nstrays; i++) {
        json_object *o = json_object_new_object();
        json_object_object_add(o, "file",
                               json_object_new_string(strays[i].file));
        json_object_object_add(o, "reason",
                               json_object_new_string(strays[i].reason));
        json_object_array_add(sl, o);
    }
    json_object_object_add(root, "directory", json_object_new_string(dir));
    json_object_object_add(root, "state_file",
                           json_object_new_boolean(have_state));
    json_object_object_add(root, "latest",
                           latest ? json_object_new_string(latest) : NULL);
    json_object_object_add(root, "checkpoints", list);
    json_object_object_add(root, "stray", sl);
    cli_print_json(root);
    json_object_put(root);
}

/* ---- the command --------------------------------------------------------- */

/* Rows for every listed path (model_checkpoint_path too if the list lacks
 * it), with the latest marked. */
static ckpt_row *make_rows(const ckpt_state *st, const char *dir,
                           const char *latest, size_t *n_out)
{
    size_t n = st->num_paths;
    int append = 1;
    ckpt_row *rows;
    for (size_t i = 0; i < n; i++)
        if (strcmp(st->all_paths[i], st->model_checkpoint_path) == 0)
            append = 0;
    rows = calloc(n + 1, sizeof(*rows));
    if (!rows) {
        fprintf(stderr, "ckpt ls: out of memory\n");
        exit(CLI_USAGE);
    }
    for (size_t i = 0; i < n + (size_t)append; i++) {
        ckpt_row *r = &rows[i];
        r->stored = i < n ? st->all_paths[i] : st->model_checkpoint_path;
        r->path = resolve(dir, r->stored);
        if (i < n && st->num_timestamps == n) {
            r->has_time = 1;
            r->time = st->timestamps[i];
            r->time_source = "state";
        }
        r->latest = latest && strcmp(latest, r->path) == 0;
    }
    *n_out = n + (size_t)append;
    return rows;
}

static int run(int argc, char **argv)
{
    const cli_command *c = &cli_cmd_ls;
    const char *dir = NULL;
    ckpt_state st = CKPT_STATE_INIT;
    ckpt_buf latest = CKPT_BUF_INIT;
    dir_listing files = {NULL, 0};
    ckpt_row *rows = NULL;
    stray *strays = NULL;
    size_t nrows = 0, nstrays;
    int json = 0, have_state = 0, err, rc = 0;
    struct stat sb;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0)
            json = 1;
        else if (strcmp(argv[i], "--") == 0 && i + 1 < argc && !dir)
            dir = argv[++i];
        else if (argv[i][0] == '-' && argv[i][1] != '\0')
            return cli_usage_error(c, "unknown option '%s'", argv[i]);
        else if (dir)
            return cli_usage_error(c, "unexpected argument '%s'", argv[i]);
        else
            dir = argv[i];
    }
    if (!dir)
        return cli_usage_error(c, "missing DIR");
    if (stat(dir, &sb) != 0) {
        cli_error("ls", "%s: %s", dir, strerror(errno));
        return CLI_USAGE;
    }
    if (!S_ISDIR(sb.st_mode)) {
        cli_error("ls", "%s: not a directory", dir);
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
        rc = cli_lib_error("ls", err, dir);
        rc = CLI_USAGE;
        goto done;
    }
    if (have_state) {
        err = ckpt_latest_checkpoint(&latest, NULL, dir);
        if (err < 0 && err != CKPT_ENOTFOUND) {
            rc = cli_lib_error("ls", err, dir);
            rc = CLI_USAGE;
            goto done;
        }
        rows = make_rows(&st, dir, err == 0 ? latest.ptr : NULL, &nrows);
        for (size_t i = 0; i < nrows; i++)
            scan_checkpoint(&rows[i], dir, &files);
    }
    strays = calloc(files.n + 1, sizeof(*strays));
    if (!strays) {
        rc = CLI_USAGE;
        goto done;
    }
    nstrays = find_strays(strays, &files, dir, rows, nrows);
    if (json)
        print_json(dir, have_state, rows, nrows, strays, nstrays);
    else
        print_text(dir, have_state, rows, nrows, strays, nstrays);
done:
    for (size_t i = 0; i < nrows; i++)
        free(rows[i].path);
    free(rows);
    free(strays);
    free_listing(&files);
    ckpt_state_dispose(&st);
    ckpt_buf_dispose(&latest);
    return rc;
}
