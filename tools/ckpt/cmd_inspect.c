/* tools/ckpt/cmd_inspect.c - `ckpt inspect PATH [--json] [--tensor NAME]
 * [--values[=N|all]]`: every tensor of a checkpoint with its dtype, shape,
 * bytes and shard, and optionally its first values. */
#include "cli.h"
#include "piece_sizes.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_VALUES 10

static int run(int argc, char **argv);

static const cli_option inspect_options[] = {
    {"--json", NULL, NULL, 0,
     "  --json           print JSON: {\"prefix\", \"outside_directory\",\n"
     "                   \"num_shards\", \"tensors\":\n"
     "                   [{\"name\", \"dtype\", \"shape\", \"bytes\", "
     "\"shard\",\n"
     "                   \"num_elements\", \"values\"?, \"error\"?}],\n"
     "                   \"ok\": the exit status is 0}; a\n"
     "                   tensor whose values cannot be read has \"error\"\n",
     NULL},
    {"--tensor", "NAME", NULL, 1,
     "  --tensor NAME    only this tensor (may be repeated)\n",
     "a tensor's name, e.g. --tensor dense/kernel"},
    {"--values", NULL, "N|all", 0,
     "  --values[=N]     also print the first N values of each tensor\n"
     "                   (default 10; --values=all prints every value;\n"
     "                   without it a string longer than 100 bytes is cut:\n"
     "                   its start, then its length, in text \"...\" (N\n"
     "                   bytes), in JSON {\"cut\": start, \"bytes\": N}); a\n"
     "                   tensor's values are held as their text until its\n"
     "                   checksum is checked, with --json too (past 8 MiB\n"
     "                   in a temporary file in $TMPDIR, else /tmp; in\n"
     "                   memory when that file cannot take them)\n",
     "a count or 'all', e.g. --values=20"},
};

const cli_command cli_cmd_inspect = {
    "inspect",
    "PATH",
    inspect_options,
    CLI_NUM_OPTIONS(inspect_options),
    "List the tensors of a checkpoint: name, dtype, shape, bytes, shard.",
    "PATH is a checkpoint prefix (e.g. runs/x/model.ckpt-300), its .index\n"
    "file, or a directory (its latest checkpoint; one its state file names\n"
    "outside the directory is read after a warning on stderr; when the\n"
    "one it names has no index, the newest listed one that has, after a\n"
    "warning naming both).\n\n",
    "\n"
    "BYTES is the size of a tensor's record in its data file; for a\n"
    "partitioned tensor (SHARD \"-\") that of its pieces' records together.\n"
    "Floats are printed with enough digits to round-trip (%.9g, %.17g for\n"
    "float64; float16/bfloat16 widened to float32), complex numbers as\n"
    "(re,im), strings C-escaped (JSON strings with --json; bytes that are\n"
    "not UTF-8 map to U+0000..U+00FF).\n"
    "In JSON the values are numbers (true/false for bool, [re, im] for\n"
    "complex), except a NaN or infinity, which is the string \"nan\", \"inf\"\n"
    "or \"-inf\" (JSON has no number for it), and 64-bit integers are\n"
    "written exactly: a reader that holds numbers as doubles (jq 1.6,\n"
    "JavaScript) rounds those beyond 2^53, so compare them as text.\n\n"
    "Exit status 1 when the index, the state file or (with --values) a\n"
    "tensor's record is damaged, or its data file is missing, unreadable\n"
    "or not a regular file (as verify counts it), 2 on a usage error, a\n"
    "missing checkpoint or a --tensor NAME the checkpoint does not have.\n",
    run};

typedef struct inspect_opts {
    const char *path;
    int json;
    int values;   /* print values */
    size_t limit; /* how many (SIZE_MAX: all) */
    const char **tensors;
    int num_tensors;
} inspect_opts;

static int parse_values_arg(const char *arg, inspect_opts *o)
{
    const char *v;
    char *end = NULL;
    unsigned long long n;
    o->values = 1;
    o->limit = DEFAULT_VALUES;
    if (strcmp(arg, "--values") == 0)
        return 0;
    v = arg + strlen("--values=");
    if (strcmp(v, "all") == 0) {
        o->limit = SIZE_MAX;
        return 0;
    }
    /* digits only: strtoull alone skips leading white space and takes a
     * sign, so " -3" was read as 2^64 - 3, every value */
    if (!*v || strspn(v, "0123456789") != strlen(v))
        return -1;
    errno = 0;
    n = strtoull(v, &end, 10);
    if (*end || errno)
        return -1;
    o->limit = n > SIZE_MAX - 1 ? SIZE_MAX - 1 : (size_t)n;
    return 0;
}

/* Whether argv[k] is a count ("5", "all") right after a bare --values. */
static int count_after_values(int argc, char **argv, int k)
{
    const char *a = k > 0 && k < argc ? argv[k] : "";
    return k > 0 && strcmp(argv[k - 1], "--values") == 0 && *a &&
           (strcmp(a, "all") == 0 || strspn(a, "0123456789") == strlen(a));
}

/* The option at argv[*i] (its value, if separate, is consumed): 0, or
 * CLI_USAGE after printing the usage error. */
static int parse_option(int argc, char **argv, int *i, inspect_opts *o)
{
    const cli_command *c = &cli_cmd_inspect;
    const char *a = argv[*i];
    const cli_option *opt;
    const char *v;
    int m = cli_option_at(c, argc, argv, i, &opt, &v);
    if (m <= 0)
        return cli_option_error(c, a, opt);
    if (strcmp(opt->name, "--json") == 0) {
        o->json = 1;
    } else if (strcmp(opt->name, "--values") == 0) {
        if (parse_values_arg(a, o) < 0)
            return cli_option_value_error(c, opt, v, NULL);
    } else {
        o->tensors[o->num_tensors++] = v; /* --tensor */
    }
    return 0;
}

static int parse_args(int argc, char **argv, inspect_opts *o)
{
    const cli_command *c = &cli_cmd_inspect;
    int path_at = -1;
    int operands_only = 0;
    o->tensors = calloc((size_t)argc + 1, sizeof(char *));
    if (!o->tensors)
        return cli_usage_error(c, "out of memory");
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        int kind = cli_arg_kind(a, &operands_only);
        if (kind == CLI_ARG_END)
            continue;
        if (kind == CLI_ARG_OPTION) {
            if (parse_option(argc, argv, &i, o) != 0)
                return CLI_USAGE;
            continue;
        }
        if (o->path) {
            /* "--values 5": the count read as an argument of its own */
            int k = count_after_values(argc, argv, i) ? i : path_at;
            if (count_after_values(argc, argv, k))
                return cli_usage_error(c,
                                       "unexpected argument '%s' (a count "
                                       "is given as --values=%s)",
                                       argv[k], argv[k]);
            return cli_usage_error(c, "unexpected argument '%s'", a);
        }
        o->path = a;
        path_at = i;
    }
    if (!o->path)
        return cli_usage_error(c, "missing PATH");
    cli_json_parsed(c, o->json);
    return 0;
}

/* A name of `len` bytes (it may hold NUL bytes) against a --tensor
 * argument, in byte order then length: the order o->tensors is sorted in,
 * so each entry is looked up in log time however many are asked for. */
typedef struct name_key {
    const char *name;
    size_t len;
} name_key;

static int compare_names(const char *a, size_t alen, const char *b, size_t blen)
{
    int c = memcmp(a, b, alen < blen ? alen : blen);
    if (c != 0)
        return c;
    return alen < blen ? -1 : alen > blen;
}

static int compare_key_arg(const void *key, const void *arg)
{
    const name_key *k = key;
    const char *t = *(const char *const *)arg;
    return compare_names(k->name, k->len, t, strlen(t));
}

static int compare_args(const void *a, const void *b)
{
    const char *x = *(const char *const *)a, *y = *(const char *const *)b;
    return compare_names(x, strlen(x), y, strlen(y));
}

static int wanted(const inspect_opts *o, const ckpt_tensor_entry *e)
{
    name_key k = {e->name, e->name_len};
    if (!cli_entry_listed(e))
        return 0;
    if (o->num_tensors == 0)
        return 1;
    return bsearch(&k, o->tensors, (size_t)o->num_tensors,
                   sizeof(o->tensors[0]), compare_key_arg) != NULL;
}

/* Column widths of the text table. */
typedef struct widths {
    int name, dtype, shape, bytes;
} widths;

static void measure(const inspect_opts *o, ckpt_bundle_reader *r,
                    piece_sizes *ps, widths *w)
{
    size_t n = ckpt_bundle_reader_count(r);
    w->name = 4;
    w->dtype = 5;
    w->shape = 5;
    w->bytes = 5;
    for (size_t i = 0; i < n; i++) {
        ckpt_tensor_entry buf;
        const ckpt_tensor_entry *e = cli_entry(r, i, &buf);
        char tmp[24], num[32];
        int len;
        if (!wanted(o, e))
            continue;
        w->name = cli_name_column(w->name,
                                  cli_put_safe_n(NULL, e->name, e->name_len));
        len = (int)strlen(cli_dtype_name(e->dtype, tmp));
        if (len > w->dtype)
            w->dtype = len;
        len = (int)ckpt_shape_format(NULL, 0, &e->shape);
        if (len > w->shape)
            w->shape = len;
        len = snprintf(num, sizeof(num), "%lld",
                       (long long)piece_sizes_entry_bytes(ps, r, e));
        if (len > w->bytes)
            w->bytes = len;
    }
}

/* The text line of one tensor, and its values when asked for. */
static int text_tensor(const inspect_opts *o, ckpt_bundle_reader *r,
                       piece_sizes *ps, const char *prefix,
                       const ckpt_tensor_entry *e, const widths *w)
{
    char tmp[24], shape[512];
    cli_held *line;
    int64_t count = 0;
    size_t len;
    int err;
    ckpt_shape_format(shape, sizeof(shape), &e->shape);
    /* the name printed, not kept: one copy per entry grew with the index */
    len = cli_put_safe_n(stdout, e->name, e->name_len);
    printf("%*s  %-*s  %-*s  %*lld  ",
           len < (size_t)w->name ? w->name - (int)len : 0, "", w->dtype,
           cli_dtype_name(e->dtype, tmp), w->shape, shape, w->bytes,
           (long long)piece_sizes_entry_bytes(ps, r, e));
    if (e->num_slices > 0)
        printf("-  (partitioned, %d slice%s)\n", e->num_slices,
               e->num_slices == 1 ? "" : "s");
    else
        printf("%d\n", e->shard_id);
    if (!o->values)
        return 0;
    /* a partitioned tensor's values are read assembled from its slices */
    if ((e->num_slices > 0 && e->dtype == CKPT_DT_STRING) ||
        !ckpt_dtype_is_supported(e->dtype)) {
        printf("    (values not supported for this tensor)\n");
        return 0;
    }
    /* Hold the line first: nothing is printed for a damaged tensor. */
    line = cli_held_open();
    err =
        cli_tensor_values(r, e, o->limit, cli_held_stream(line), NULL, &count);
    if (err == 0) {
        fputs("    ", stdout);
        cli_held_put(line, stdout);
        fputc('\n', stdout);
    }
    cli_held_dispose(line);
    if (err < 0) {
        cli_tensor_error("inspect", prefix, e);
        return cli_values_exit_code(err);
    }
    return 0;
}

/* The tensor's object, printed as the next element of the "tensors" list
 * (`first`: no comma before it) a member at a time: the document is
 * written a tensor at a time, so an index of many entries costs the
 * memory of one tensor's objects, not of all of them (json-c's objects
 * take several times the text they print), and a tensor's values are kept
 * as their text until they are all read and checked (a json-c object per
 * value took about 120 bytes: 30 times a float tensor). */
static int json_tensor(const inspect_opts *o, ckpt_bundle_reader *r,
                       piece_sizes *ps, const char *prefix,
                       const ckpt_tensor_entry *e, int first)
{
    char tmp[24];
    cli_json_list values = {0, NULL, 0};
    json_object *error = NULL;
    int64_t count = 0;
    int rc = 0, has_values = 0;
    ckpt_shape_num_elements(&count, &e->shape);
    if (o->values && (e->num_slices == 0 || e->dtype != CKPT_DT_STRING) &&
        ckpt_dtype_is_supported(e->dtype)) {
        int err;
        cli_json_list_open(&values, 6);
        err = cli_tensor_values(r, e, o->limit, NULL, &values, &count);
        if (err < 0) {
            /* in the document too, where the values would be */
            error = cli_json_string(ckpt_error_last()->message);
            cli_tensor_error("inspect", prefix, e);
            rc = cli_values_exit_code(err);
        } else {
            has_values = 1;
        }
    }
    fputs(first ? "\n    " : ",\n    ", stdout);
    cli_put_member_at("{\n", 6, "name", cli_json_name(e));
    cli_put_member_at(",\n", 6, "dtype",
                      json_object_new_string(cli_dtype_name(e->dtype, tmp)));
    cli_put_member_at(",\n", 6, "shape", cli_json_shape(&e->shape));
    cli_put_member_at(",\n", 6, "bytes",
                      json_object_new_int64(piece_sizes_entry_bytes(ps, r, e)));
    cli_put_member_at(",\n", 6, "shard",
                      e->num_slices > 0 ? NULL
                                        : json_object_new_int(e->shard_id));
    cli_put_member_at(",\n", 6, "num_elements", json_object_new_int64(count));
    if (e->num_slices > 0)
        cli_put_member_at(",\n", 6, "num_slices",
                          json_object_new_int(e->num_slices));
    if (error)
        cli_put_member_at(",\n", 6, "error", error);
    if (has_values) {
        fputs(",\n      \"values\": ", stdout);
        cli_json_list_put(&values);
    }
    fputs("\n    }", stdout);
    cli_json_list_dispose(&values);
    return rc;
}

static int run(int argc, char **argv)
{
    inspect_opts o;
    ckpt_bundle_reader *r = NULL;
    char *prefix = NULL;
    size_t n, shown = 0, printed = 0;
    widths w = {0, 0, 0, 0};
    piece_sizes ps;
    int rc, outside;
    memset(&o, 0, sizeof(o));
    memset(&ps, 0, sizeof(ps));
    rc = parse_args(argc, argv, &o);
    if (rc != 0)
        goto done;
    rc = cli_open_bundle(&r, &prefix, "inspect", o.path);
    if (rc != 0)
        goto done;
    outside = cli_outside_warnings() > 0;
    for (int i = 0; i < o.num_tensors; i++) {
        const ckpt_tensor_entry *e = NULL;
        int err = ckpt_bundle_reader_find(&e, r, o.tensors[i]);
        if (err < 0) {
            /* the library's message: it says what was meant, e.g. the
             * name without a graph tensor's ":0" */
            cli_lib_error("inspect", err, prefix);
            rc = CLI_USAGE;
            goto done;
        }
    }
    qsort(o.tensors, (size_t)o.num_tensors, sizeof(o.tensors[0]), compare_args);
    n = ckpt_bundle_reader_count(r);
    for (size_t i = 0; i < n; i++) {
        ckpt_tensor_entry buf;
        shown += wanted(&o, cli_entry(r, i, &buf)) != 0;
    }
    if (o.json) {
        cli_json_printed();
        fputs("{\n  \"prefix\": ", stdout);
        cli_put_json(cli_json_or_oom(cli_json_string(prefix)), 2);
        fprintf(stdout,
                ",\n  \"outside_directory\": %s,\n  \"num_shards\": %d,"
                "\n  \"tensors\": [",
                outside ? "true" : "false", ckpt_bundle_reader_num_shards(r));
    } else {
        int shards = ckpt_bundle_reader_num_shards(r);
        printf("%s: %zu tensor%s, %d shard%s\n", cli_safe(prefix), shown,
               cli_plural(shown), shards, cli_plural((size_t)shards));
        measure(&o, r, &ps, &w);
        printf("%-*s  %-*s  %-*s  %*s  %s\n", w.name, "NAME", w.dtype, "DTYPE",
               w.shape, "SHAPE", w.bytes, "BYTES", "SHARD");
    }
    for (size_t i = 0; i < n; i++) {
        ckpt_tensor_entry buf;
        const ckpt_tensor_entry *e = cli_entry(r, i, &buf);
        int trc;
        if (!wanted(&o, e))
            continue;
        trc = o.json ? json_tensor(&o, r, &ps, prefix, e, printed++ == 0)
                     : text_tensor(&o, r, &ps, prefix, e, &w);
        if (trc > rc)
            rc = trc;
    }
    if (o.json) /* "ok": the exit status is 0, in every command's document */
        fprintf(stdout, "%s,\n  \"ok\": %s\n}\n", printed ? "\n  ]" : "]",
                rc == 0 ? "true" : "false");
done:
    piece_sizes_dispose(&ps);
    ckpt_bundle_reader_free(r);
    free(prefix);
    free(o.tensors);
    return rc;
}
