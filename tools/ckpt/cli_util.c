/* tools/ckpt/cli_util.c - messages, option parsing and opening checkpoints
 * for the subcommands of `ckpt` (see cli.h). */
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- messages ------------------------------------------------------------ */

/* A message longer than this (a path of megabytes from a hostile state
 * file) is cut, saying how much was left out, as the library's are. */
#define MESSAGE_MAX 16384

/* Cut `text` (`len` bytes, NUL-terminated, longer than MESSAGE_MAX) in its
 * middle: its start and its end, which says what happened, are kept around
 * "... (N more bytes) ...". Returns the new length. */
static size_t cut_middle(char *text, size_t len)
{
    const size_t head = MESSAGE_MAX / 2, tail = MESSAGE_MAX / 4;
    char mark[64];
    size_t m = (size_t)snprintf(mark, sizeof(mark), "... (%zu more bytes) ...",
                                len - head - tail);
    memmove(text + head + m, text + len - tail, tail);
    memcpy(text + head, mark, m);
    text[head + m + tail] = '\0';
    return head + m + tail;
}

void cli_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    size_t len = 0;
    char *text;
    va_start(ap, fmt);
    text = cli_vformat(&len, fmt, ap);
    va_end(ap);
    if (len > MESSAGE_MAX)
        len = cut_middle(text, len);
    fprintf(stderr, "ckpt%s%s: %s\n", cmd ? " " : "", cmd ? cmd : "",
            cli_safe_n(text, len));
    cli_json_failure_note(text, len);
    free(text);
}

int cli_exit_code(int err)
{
    return err == CKPT_ECORRUPT ? CLI_FOUND : CLI_USAGE;
}

int cli_values_exit_code(int err)
{
    return err == CKPT_ECORRUPT || err == CKPT_ENOTFOUND || err == CKPT_EIO ||
                   err == CKPT_EACCES
               ? CLI_FOUND
               : CLI_USAGE;
}

int cli_lib_error(const char *cmd, int err, const char *context)
{
    const ckpt_error *e = ckpt_error_last();
    const char *msg = e->code != 0 ? e->message : ckpt_strerror(err);
    /* the library's messages show a path escaped (cli_safe's rule): look
     * for it that way, or a name with a control byte is named twice */
    if (context && *context && !strstr(msg, cli_safe(context)))
        cli_error(cmd, "%s: %s", context, msg);
    else
        cli_error(cmd, "%s", msg);
    return cli_exit_code(err);
}

int cli_usage_error(const cli_command *c, const char *fmt, ...)
{
    va_list ap;
    size_t len = 0;
    char *text;
    cli_synopsis syn;
    va_start(ap, fmt);
    text = cli_vformat(&len, fmt, ap);
    va_end(ap);
    fprintf(stderr, "ckpt %s: %s\nusage: ckpt %s\n(see 'ckpt help %s')\n",
            c->name, cli_safe_n(text, len), cli_synopsis_of(&syn, c), c->name);
    cli_json_usage_failure(text, len, syn.text);
    free(text);
    return CLI_USAGE;
}

void cli_print_help(const cli_command *c, FILE *out)
{
    cli_synopsis syn;
    fprintf(out, "usage: ckpt %s\n\n%s\n\n%s", cli_synopsis_of(&syn, c),
            c->summary, c->help);
    for (size_t k = 0; k < c->num_options; k++)
        fputs(c->options[k].help, out);
    fputs(c->help_after, out);
}

/* ---- options ------------------------------------------------------------- */

const char *cli_synopsis_of(cli_synopsis *s, const cli_command *c)
{
    size_t cap = sizeof(s->text);
    int n = snprintf(s->text, cap, "%s %s", c->name, c->operands);
    for (size_t k = 0; k < c->num_options && n >= 0 && (size_t)n < cap; k++) {
        const cli_option *o = &c->options[k];
        n += snprintf(s->text + n, cap - (size_t)n, " [%s%s%s%s%s%s]%s",
                      o->name, o->value ? " " : "", o->value ? o->value : "",
                      o->optional ? "[=" : "", o->optional ? o->optional : "",
                      o->optional ? "]" : "", o->repeats ? "..." : "");
    }
    return s->text;
}

const cli_option *cli_option_named(const cli_command *c, const char *arg)
{
    for (size_t k = 0; c && k < c->num_options; k++) {
        const cli_option *o = &c->options[k];
        size_t n = strlen(o->name);
        if (strncmp(arg, o->name, n) != 0)
            continue;
        if (arg[n] == '\0' || (arg[n] == '=' && (o->value || o->optional)))
            return o;
    }
    return NULL;
}

int cli_option_takes_next(const cli_command *c, const char *arg)
{
    const cli_option *o = cli_option_named(c, arg);
    return o && o->value && strcmp(arg, o->name) == 0;
}

int cli_option_at(const cli_command *c, int argc, char **argv, int *i,
                  const cli_option **opt, const char **value)
{
    const char *arg = argv[*i];
    const cli_option *o = cli_option_named(c, arg);
    size_t n;
    *opt = o;
    *value = NULL;
    if (!o)
        return 0;
    n = strlen(o->name);
    if (arg[n] == '=') {
        *value = arg + n + 1;
        return 1;
    }
    if (!o->value)
        return 1;
    if (*i + 1 >= argc)
        return -1;
    *i += 1;
    *value = argv[*i];
    return 1;
}

int cli_option_error(const cli_command *c, const char *arg,
                     const cli_option *opt)
{
    const char *eq = strchr(arg, '=');
    if (opt)
        return cli_usage_error(c, "%s needs %s", opt->name,
                               opt->takes ? opt->takes : "a value");
    for (size_t k = 0; eq && k < c->num_options; k++) {
        const cli_option *o = &c->options[k];
        if (!o->value && !o->optional &&
            strlen(o->name) == (size_t)(eq - arg) &&
            strncmp(arg, o->name, (size_t)(eq - arg)) == 0)
            return cli_usage_error(c, "%s takes no value (given '%s')", o->name,
                                   arg);
    }
    return cli_usage_error(c, "unknown option '%s'", arg);
}

int cli_option_value_error(const cli_command *c, const cli_option *opt,
                           const char *value, const char *why)
{
    const char *takes = opt->takes ? opt->takes : "another value";
    if (why)
        return cli_usage_error(c, "bad %s '%s': %s; needs %s", opt->name, value,
                               why, takes);
    return cli_usage_error(c, "bad %s '%s': needs %s", opt->name, value, takes);
}

int cli_is_help(const char *arg)
{
    return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0;
}

int cli_arg_kind(const char *arg, int *operands_only)
{
    if (*operands_only)
        return CLI_ARG_OPERAND;
    if (strcmp(arg, "--") == 0) {
        *operands_only = 1;
        return CLI_ARG_END;
    }
    return arg[0] == '-' && arg[1] != '\0' ? CLI_ARG_OPTION : CLI_ARG_OPERAND;
}

int cli_parse_path_and_json(const cli_command *c, const char *what, int argc,
                            char **argv, const char **path, int *json)
{
    int operands_only = 0;
    *path = NULL;
    *json = 0;
    for (int i = 0; i < argc; i++) {
        int kind = cli_arg_kind(argv[i], &operands_only);
        if (kind == CLI_ARG_END)
            continue;
        const cli_option *opt;
        const char *v;
        if (kind == CLI_ARG_OPTION &&
            (cli_option_at(c, argc, argv, &i, &opt, &v) <= 0 ||
             strcmp(opt->name, "--json") != 0))
            return cli_option_error(c, argv[i], NULL);
        if (kind == CLI_ARG_OPTION)
            *json = 1;
        else if (*path)
            return cli_usage_error(c, "unexpected argument '%s'", argv[i]);
        else
            *path = argv[i];
    }
    if (!*path)
        return cli_usage_error(c, "missing %s", what);
    cli_json_parsed(c, *json);
    return 0;
}

/* ---- checkpoints --------------------------------------------------------- */

int cli_ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && memcmp(s + n - m, suffix, m) == 0;
}

int cli_all_digits(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return 0;
    return 1;
}

/* The shard number or count that ends at `end` (exclusive) and starts
 * after `start`, written as printf's %05d writes it: five digits
 * zero-padded, or more without a leading zero, at most INT_MAX. Returns
 * its first character, or NULL when the text before `end` is not one. */
static const char *padded_number_before(const char *start, const char *end,
                                        int *value)
{
    const char *p = end;
    long long v = 0;
    while (p > start && p[-1] >= '0' && p[-1] <= '9')
        p--;
    if (end - p < 5 || end - p > 10 || (end - p > 5 && *p == '0'))
        return NULL;
    for (const char *q = p; q < end; q++)
        v = v * 10 + (*q - '0');
    if (v > INT_MAX)
        return NULL;
    *value = (int)v;
    return p;
}

size_t cli_parse_data_name(const char *s, int *shard, int *count)
{
    /* "<prefix>.data-" shard "-of-" count, each at least five digits */
    const char *end = s + strlen(s), *p;
    int sh, n;
    p = padded_number_before(s, end, &n);
    if (!p || p - s < 4 || memcmp(p - 4, "-of-", 4) != 0)
        return 0;
    p = padded_number_before(s, p - 4, &sh);
    if (!p || p - s < 7 || memcmp(p - 6, ".data-", 6) != 0)
        return 0;
    if (shard)
        *shard = sh;
    if (count)
        *count = n;
    return (size_t)(p - 6 - s);
}

char *cli_index_path(const char *prefix)
{
    size_t n = strlen(prefix) + sizeof(".index");
    char *index = cli_xmalloc(n);
    snprintf(index, n, "%s.index", prefix);
    return index;
}

int cli_names_checkpoint_file(const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    const char *dot = strrchr(base, '.');
    return dot && dot > base &&
           (strcmp(dot, ".index") == 0 ||
            strncmp(dot, ".data-", strlen(".data-")) == 0);
}

void *cli_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        cli_out_of_memory();
    return p;
}

const ckpt_tensor_entry *cli_entry(const ckpt_bundle_reader *r, size_t i,
                                   ckpt_tensor_entry *buf)
{
    int err = ckpt_bundle_reader_entry_fill(buf, r, i);
    if (err < 0) /* i < count: not expected */
        cli_exit(cli_lib_error(NULL, err, ckpt_bundle_reader_prefix(r)));
    return buf;
}

void *cli_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        cli_out_of_memory();
    return p;
}

void *cli_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        cli_out_of_memory();
    return q;
}

char *cli_xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(cli_xmalloc(n), s, n);
}

static char *dup_n(const char *s, size_t n)
{
    char *p = cli_xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *cli_join(const char *dir, const char *name)
{
    size_t n = strlen(dir);
    size_t total = n + strlen(name) + 2;
    char *p = cli_xmalloc(total);
    snprintf(p, total, "%s%s%s", dir, n && dir[n - 1] == '/' ? "" : "/", name);
    return p;
}

/* Whether the directory `dir` has a state file. One that is there but
 * cannot be looked up (a symbolic link that loops) counts: it is read,
 * and fails as the library's readers fail on it, not taken for none. */
static int has_state_file(const char *dir)
{
    struct stat st;
    char *state = cli_join(dir, CKPT_STATE_FILENAME);
    int there = stat(state, &st) == 0 || errno != ENOENT;
    free(state);
    return there;
}

/* A directory without a state file: its only "*.index" file, if any. */
static int sole_index_prefix(char **out, const char *cmd, const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    char *found = NULL;
    int count = 0;
    if (!d) {
        cli_error(cmd, "%s: %s", dir, strerror(errno));
        return CLI_USAGE;
    }
    while ((de = readdir(d)) != NULL) {
        size_t n = strlen(de->d_name);
        if (!cli_ends_with(de->d_name, ".index") || n == 6)
            continue;
        if (++count == 1) {
            char *base = dup_n(de->d_name, n - 6);
            found = cli_join(dir, base);
            free(base);
        }
    }
    closedir(d);
    if (count == 1) {
        *out = found;
        return 0;
    }
    free(found);
    if (count == 0) {
        /* a checkpoint beside it of the directory's name, which the
         * directory hides (a directory is read first, as TensorFlow does) */
        char *index = cli_index_path(dir);
        struct stat st;
        if (stat(index, &st) == 0)
            cli_error(cmd,
                      "%s: no checkpoint state file and no .index file; "
                      "%s exists: give that file's name to read the "
                      "checkpoint %s, which the directory of that name hides",
                      dir, index, dir);
        else
            cli_error(cmd, "%s: no checkpoint state file and no .index file",
                      dir);
        free(index);
    } else
        cli_error(cmd,
                  "%s: no checkpoint state file and %d .index files; name "
                  "one prefix",
                  dir, count);
    return CLI_USAGE;
}

/* `path` is a file and neither an index nor a data file: unless it is
 * also a prefix (<path>.index exists), say what to give instead, in the
 * tool's terms (the library's message names its C function). The
 * directory's state file, "checkpoint", is the usual one. */
static int file_not_checkpoint(const char *cmd, const char *path)
{
    struct stat st;
    char *index = cli_index_path(path);
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    int is_prefix = stat(index, &st) == 0;
    free(index);
    if (is_prefix)
        return 0;
    if (strcmp(base, CKPT_STATE_FILENAME) == 0) {
        char *dir = slash ? dup_n(path, (size_t)(slash - path)) : NULL;
        cli_error(cmd,
                  "%s is a directory's state file, not a checkpoint: give "
                  "its directory (%s) for the checkpoint it names, or a "
                  "checkpoint prefix",
                  path, dir ? (*dir ? dir : "/") : ".");
        free(dir);
    } else {
        cli_error(cmd,
                  "%s is a file, not a checkpoint: give a checkpoint prefix "
                  "(its files' name before .index) or a checkpoint "
                  "directory",
                  path);
    }
    return CLI_USAGE;
}

int cli_resolve_prefix(char **out, const char *cmd, const char *path)
{
    struct stat st;
    size_t n;
    *out = NULL;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        ckpt_buf latest = CKPT_BUF_INIT;
        int have_state = has_state_file(path);
        int err;
        if (!have_state)
            return sole_index_prefix(out, cmd, path);
        err = ckpt_latest_checkpoint(&latest, NULL, path);
        if (err == CKPT_ENOTFOUND) {
            /* "none" to the library; damage to this tool (exit 1) */
            ckpt_state parsed = CKPT_STATE_INIT;
            if (ckpt_state_read(&parsed, NULL, path) == CKPT_ECORRUPT)
                err = CKPT_ECORRUPT;
            ckpt_state_dispose(&parsed);
        }
        if (err < 0) {
            ckpt_buf_dispose(&latest);
            return cli_lib_error(cmd, err, path);
        }
        *out = dup_n(latest.ptr, latest.size);
        ckpt_buf_dispose(&latest);
        cli_warn_named_missing(cmd, path, *out);
        if (cli_outside_dir(path, *out, NULL))
            cli_warn_outside(cmd, path, *out);
        return 0;
    }
    n = strlen(path);
    if (cli_ends_with(path, ".index") && n > 6)
        n -= 6;
    else if (cli_parse_data_name(path, NULL, NULL) > 0)
        n = cli_parse_data_name(path, NULL, NULL);
    else if (stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
             file_not_checkpoint(cmd, path) != 0)
        return CLI_USAGE;
    *out = dup_n(path, n);
    return 0;
}

int cli_resolve_named_prefix(char **out, int *named, int *outside,
                             const char *cmd, const char *path)
{
    struct stat st;
    ckpt_state state = CKPT_STATE_INIT;
    ckpt_buf prefix = CKPT_BUF_INIT;
    int have_state, err;
    *named = 0;
    *outside = 0;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return cli_resolve_prefix(out, cmd, path);
    have_state = has_state_file(path);
    if (!have_state)
        return cli_resolve_prefix(out, cmd, path);
    err = ckpt_state_read(&state, NULL, path);
    if (err == 0)
        err = ckpt_state_resolve(&prefix, path, state.model_checkpoint_path);
    if (err < 0) {
        ckpt_state_dispose(&state);
        ckpt_buf_dispose(&prefix);
        return cli_lib_error(cmd, err, path);
    }
    *out = dup_n(prefix.ptr, prefix.size);
    *named = 1;
    *outside = cli_outside_dir(path, *out, state.model_checkpoint_path);
    ckpt_state_dispose(&state);
    if (*outside)
        cli_warn_outside(cmd, path, *out);
    ckpt_buf_dispose(&prefix);
    return 0;
}

int cli_open_bundle(ckpt_bundle_reader **out, char **prefix_out,
                    const char *cmd, const char *path)
{
    int rc = cli_resolve_prefix(prefix_out, cmd, path);
    int err;
    *out = NULL;
    if (rc != 0)
        return rc;
    err = ckpt_bundle_reader_open(out, *prefix_out, NULL);
    if (err < 0) {
        rc = cli_lib_error(cmd, err, *prefix_out);
        free(*prefix_out);
        *prefix_out = NULL;
        *out = NULL;
        return rc;
    }
    return 0;
}

/* "'<the entry's name as the library's messages show it>'", malloc'd. */
static char *quoted_as_library_shows(const ckpt_tensor_entry *e)
{
    char shown[1024];
    size_t n;
    char *q;
    ckpt_tensor_entry_shown_name(shown, sizeof(shown), e);
    n = strlen(shown);
    q = cli_xmalloc(n + 3);
    q[0] = '\'';
    memcpy(q + 1, shown, n);
    q[n + 1] = '\'';
    q[n + 2] = '\0';
    return q;
}

void cli_tensor_error(const char *cmd, const char *prefix,
                      const ckpt_tensor_entry *e)
{
    const char *msg = ckpt_error_last()->message;
    char *quoted = quoted_as_library_shows(e);
    int named = strstr(msg, quoted) != NULL;
    if (named && strstr(msg, cli_safe(prefix)))
        cli_error(cmd, "%s", msg);
    else if (named)
        cli_error(cmd, "%s: %s", prefix, msg);
    else if (e->is_slice_key)
        cli_error(cmd, "%s: tensor %s: %s", prefix, cli_safe(quoted), msg);
    else
        cli_error(cmd, "%s: tensor '%s': %s", prefix, cli_safe_name(e), msg);
    free(quoted);
}

int cli_entry_listed(const ckpt_tensor_entry *e)
{
    return !e->is_slice_key;
}

const char *cli_dtype_name(int dtype, char tmp[24])
{
    const char *name = ckpt_dtype_name(dtype);
    if (name)
        return name;
    snprintf(tmp, 24, "dtype(%d)", dtype);
    return tmp;
}

json_object *cli_json_shape(const ckpt_shape *shape)
{
    json_object *a = cli_json_or_oom(json_object_new_array());
    for (int i = 0; i < shape->rank; i++)
        cli_json_add(a, NULL, json_object_new_int64(shape->dims[i]));
    return a;
}

json_object *cli_json_or_oom(json_object *o)
{
    if (!o)
        cli_out_of_memory();
    return o;
}

void cli_json_add(json_object *to, const char *key, json_object *value)
{
    int rc;
    if (!value)
        cli_out_of_memory();
    rc = key ? json_object_object_add(to, key, value)
             : json_object_array_add(to, value);
    if (rc != 0) {
        json_object_put(value);
        cli_out_of_memory();
    }
}

/* The pretty text of `obj` (json-c's, freed with it); out of memory ends
 * the run with status 2. */
static const char *json_text(json_object *obj)
{
    const char *text = json_object_to_json_string_ext(
        obj, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                 JSON_C_TO_STRING_NOSLASHESCAPE);
    if (!text)
        cli_out_of_memory();
    return text;
}

void cli_print_json(json_object *obj)
{
    cli_json_printed();
    cli_json_write_safe(json_text(obj), stdout);
    fputc('\n', stdout);
}

void cli_put_json(json_object *o, size_t indent)
{
    cli_put_json_to(stdout, o, indent);
}

void cli_put_json_to(FILE *f, json_object *o, size_t indent)
{
    const char *text = json_text(o);
    size_t n = strlen(text), lines = 0, at = 0;
    char *out;
    for (size_t i = 0; i < n; i++)
        lines += text[i] == '\n';
    out = cli_xmalloc(n + lines * indent + 1);
    for (size_t i = 0; i < n; i++) {
        out[at++] = text[i];
        if (text[i] == '\n')
            for (size_t k = 0; k < indent; k++)
                out[at++] = ' ';
    }
    out[at] = '\0';
    cli_json_write_safe(out, f);
    free(out);
    json_object_put(o);
}
