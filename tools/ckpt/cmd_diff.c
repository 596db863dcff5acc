/* tools/ckpt/cmd_diff.c - `ckpt diff A B [--atol X] [--json]`: compare two
 * checkpoints tensor by tensor: the sets of names, dtypes, shapes and
 * values. Values are compared bit for bit by default (so NaN equals the
 * same NaN and -0 differs from +0); with --atol X, floating-point values
 * (float32, float64, float16, bfloat16 and each component of complex64 and
 * complex128) are equal when |a - b| <= X or both are NaN, while integers,
 * strings and the 8-bit float formats must still match exactly (bools as
 * the reader gives them: any non-zero byte is true).
 * A partitioned tensor (TensorFlow's slices, or a distributed checkpoint's
 * pieces) of a fixed-size dtype is compared by its assembled values,
 * however each side splits it (or does not), and its pieces' entries are
 * not compared or counted on their own; the pieces of string tensors and
 * of dtypes the library cannot decode are compared entry by entry, each
 * differing one listed, while the summary counts their tensor once
 * (diff_tally.c).
 * Exit 0 when equal, 1 when anything differs, 2 on a usage error or input
 * that cannot be read. */
#include "cli.h"
#include "diff_tally.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int run(int argc, char **argv);

static const cli_option diff_options[] = {
    {"--atol", "X", NULL, 0,
     "  --atol X   floats (float32/64, float16, bfloat16, each component of\n"
     "             complex64/128) are equal when |a-b| <= X, or both NaN;\n"
     "             without it every value must be bitwise identical (NaN\n"
     "             equals the same NaN, -0 differs from +0). Integers,\n"
     "             strings and 8-bit floats always compare exactly, bools\n"
     "             as read (any non-zero byte is true, as TensorFlow\n"
     "             reads it).\n",
     "a number >= 0, e.g. --atol=1e-6"},
    {"--json", NULL, NULL, 0,
     "  --json     print JSON: {\"a\", \"b\", \"a_outside_directory\",\n"
     "             \"b_outside_directory\", \"equal\", \"atol\"? (when\n"
     "             given), \"tensors\" (the tensors in A or B, a\n"
     "             partitioned one's pieces not counted apart from it),\n"
     "             \"differences\":\n"
     "             [{\"name\", \"reason\": \"only_in_a\"|\"only_in_b\"|"
     "\"dtype\"|\n"
     "             \"shape\"|\"values\", \"max_abs_diff\"?, "
     "\"num_different\"?,\n"
     "             \"num_elements\"?, \"dtype_a\", \"dtype_b\"? (a dtype\n"
     "             difference: the names), \"shape_a\", \"shape_b\"? (a\n"
     "             shape difference: arrays of dimensions)}],\n"
     "             \"ok\": the exit status is 0}, printed when the\n"
     "             comparison is done (the differences kept as their text\n"
     "             meanwhile: memory of the size of the document, not\n"
     "             more). \"max_abs_diff\" is a number (64-bit\n"
     "             integers exact: jq 1.6 and JavaScript round those\n"
     "             beyond 2^53), or the string \"nan\" or \"inf\" when\n"
     "             the largest difference is not finite.\n",
     NULL},
};

const cli_command cli_cmd_diff = {
    "diff",
    "A B",
    diff_options,
    CLI_NUM_OPTIONS(diff_options),
    "Compare two checkpoints: tensor names, dtypes, shapes and values.",
    "A and B are checkpoint prefixes, .index files, or directories (their\n"
    "latest checkpoints; one a state file names outside its directory is\n"
    "read after a warning on stderr; when the one it names has no index,\n"
    "the newest listed one that has, after a warning naming both). A\n"
    "tensor present in only one of\n"
    "them, or whose dtype or shape differs, is a difference; so are\n"
    "differing values.\n"
    "Each differing tensor is listed with the number of differing elements\n"
    "and the largest absolute difference. A partitioned tensor is compared\n"
    "by its whole values however each side splits it into pieces (strings\n"
    "and dtypes ckpt cannot decode: piece by piece).\n\n",
    "\n"
    "Exit status 0 when equal (within the tolerance), 1 when they differ,\n"
    "2 on a usage error or a checkpoint that cannot be read.\n",
    run};

typedef struct diff_opts {
    const char *a, *b;
    int json;
    int tolerant; /* --atol given */
    double atol;
} diff_opts;

/* How the elements of a dtype are compared. */
enum elem_class {
    CLASS_REAL,    /* one floating-point component */
    CLASS_COMPLEX, /* two floating-point components */
    CLASS_SIGNED,  /* integers, compared exactly */
    CLASS_UNSIGNED,
    CLASS_BYTES /* anything else of fixed size: bytes compared exactly */
};

/* Outcome of comparing the values of one tensor. */
typedef struct value_diff {
    int64_t num_elements;
    int64_t num_different; /* -1: unknown (raw records compared) */
    int has_max;           /* max_abs_diff is meaningful */
    int integral;          /* max is an integer: use max_int */
    double max_abs;        /* NaN when a NaN was involved */
    uint64_t max_int;
    int digits; /* %.*g digits for max_abs */
} value_diff;

/* ---- elements ------------------------------------------------------------ */

static enum elem_class class_of(int dtype)
{
    switch (dtype) {
    case CKPT_DT_FLOAT:
    case CKPT_DT_DOUBLE:
    case CKPT_DT_HALF:
    case CKPT_DT_BFLOAT16:
        return CLASS_REAL;
    case CKPT_DT_COMPLEX64:
    case CKPT_DT_COMPLEX128:
        return CLASS_COMPLEX;
    case CKPT_DT_INT8:
    case CKPT_DT_INT16:
    case CKPT_DT_INT32:
    case CKPT_DT_INT64:
    case CKPT_DT_QINT8:
    case CKPT_DT_QINT16:
    case CKPT_DT_QINT32:
        return CLASS_SIGNED;
    case CKPT_DT_UINT8:
    case CKPT_DT_UINT16:
    case CKPT_DT_UINT32:
    case CKPT_DT_UINT64:
    case CKPT_DT_QUINT8:
    case CKPT_DT_QUINT16:
    case CKPT_DT_BOOL:
        return CLASS_UNSIGNED;
    default:
        return CLASS_BYTES;
    }
}

/* One floating-point component of `size` bytes (2, 4 or 8) as a double. */
static double real_value(int dtype, const uint8_t *p, size_t size)
{
    uint16_t h;
    float f;
    double d;
    if (size == 8) {
        memcpy(&d, p, 8);
        return d;
    }
    if (size == 4) {
        memcpy(&f, p, 4);
        return f;
    }
    memcpy(&h, p, 2);
    if (dtype == CKPT_DT_HALF)
        return ckpt_half_to_float(h);
    return ckpt_bfloat16_to_float(h);
}

static void note_real(value_diff *d, double diff)
{
    if (isnan(diff) || isnan(d->max_abs))
        d->max_abs = NAN;
    else if (diff > d->max_abs)
        d->max_abs = diff;
}

/* Whether one floating-point component differs; records its difference. */
static int real_differs(const diff_opts *o, int dtype, const uint8_t *pa,
                        const uint8_t *pb, size_t size, value_diff *d)
{
    double a, b, diff;
    if (memcmp(pa, pb, size) == 0)
        return 0;
    a = real_value(dtype, pa, size);
    b = real_value(dtype, pb, size);
    diff = fabs(a - b);
    if (o->tolerant && ((isnan(a) && isnan(b)) || diff <= o->atol))
        return 0;
    note_real(d, diff);
    return 1;
}

static int element_differs(const diff_opts *o, int dtype, enum elem_class cls,
                           const uint8_t *pa, const uint8_t *pb, size_t esize,
                           value_diff *d)
{
    switch (cls) {
    case CLASS_REAL:
        return real_differs(o, dtype, pa, pb, esize, d);
    case CLASS_COMPLEX: {
        /* both components are always looked at, for max_abs */
        size_t half = esize / 2;
        int re = real_differs(o, dtype, pa, pb, half, d);
        int im = real_differs(o, dtype, pa + half, pb + half, half, d);
        return re || im;
    }
    case CLASS_SIGNED: {
        int64_t a = cli_int_at(pa, esize), b = cli_int_at(pb, esize);
        uint64_t diff;
        if (a == b)
            return 0;
        diff = a > b ? (uint64_t)a - (uint64_t)b : (uint64_t)b - (uint64_t)a;
        if (diff > d->max_int)
            d->max_int = diff;
        return 1;
    }
    case CLASS_UNSIGNED: {
        uint64_t a = cli_uint_at(pa, esize), b = cli_uint_at(pb, esize);
        uint64_t diff = a > b ? a - b : b - a;
        if (a == b)
            return 0;
        if (diff > d->max_int)
            d->max_int = diff;
        return 1;
    }
    case CLASS_BYTES:
    default:
        return memcmp(pa, pb, esize) != 0;
    }
}

/* Compare `n` elements of `dtype` held in host order at `a` and `b`. */
static void compare_fixed(const diff_opts *o, int dtype, const uint8_t *a,
                          const uint8_t *b, int64_t n, value_diff *d)
{
    size_t esize = ckpt_dtype_size(dtype);
    enum elem_class cls = class_of(dtype);
    d->has_max = cls != CLASS_BYTES;
    d->integral = cls == CLASS_SIGNED || cls == CLASS_UNSIGNED;
    d->digits = dtype == CKPT_DT_DOUBLE || dtype == CKPT_DT_COMPLEX128 ? 17 : 9;
    for (int64_t i = 0; i < n; i++) {
        size_t off = (size_t)i * esize;
        if (element_differs(o, dtype, cls, a + off, b + off, esize, d))
            d->num_different++;
    }
}

static void compare_strings(const ckpt_string_array *a,
                            const ckpt_string_array *b, value_diff *d)
{
    size_t n = a->count < b->count ? a->count : b->count;
    for (size_t i = 0; i < n; i++) {
        const ckpt_slice *x = &a->strings[i], *y = &b->strings[i];
        if (x->len != y->len || (x->len && memcmp(x->ptr, y->ptr, x->len)))
            d->num_different++;
    }
}

/* ---- reading ------------------------------------------------------------- */

/* Compare two records piece by piece, in memory bounded by the piece size
 * whatever the tensors' sizes: elements of a fixed-size dtype (the pieces
 * of both sides hold the same elements, in host order), other dtypes as
 * raw bytes (equal or not, count unknown). Both records are read to their
 * ends, so both CRCs are checked. */
static int compare_streams(const diff_opts *o, ckpt_bundle_reader *ra,
                           const ckpt_tensor_entry *ea, ckpt_bundle_reader *rb,
                           const ckpt_tensor_entry *eb, value_diff *d,
                           int *which)
{
    ckpt_record_stream *sa = NULL, *sb = NULL;
    size_t esize = ckpt_dtype_size(ea->dtype);
    int err;
    *which = 0;
    if (esize > 0) /* what the report shows, also for an empty tensor */
        compare_fixed(o, ea->dtype, NULL, NULL, 0, d);
    err = ckpt_record_stream_open(&sa, ra, ea, 0);
    if (err == 0) {
        *which = 1;
        err = ckpt_record_stream_open(&sb, rb, eb, 0);
    }
    while (err == 0) {
        const void *pa = NULL, *pb = NULL;
        size_t na = 0, nb = 0;
        *which = 0;
        err = ckpt_record_stream_next(sa, &pa, &na);
        if (err < 0)
            break;
        *which = 1;
        err = ckpt_record_stream_next(sb, &pb, &nb);
        if (err < 0 || (na == 0 && nb == 0))
            break;
        if (esize == 0) {
            if (na != nb || memcmp(pa, pb, na) != 0)
                d->num_different = -1;
            if (na == 0 || nb == 0)
                break; /* sizes differ: no need to read on */
            continue;
        }
        /* equal dtype and shape: equal sizes, equal pieces */
        compare_fixed(o, ea->dtype, pa, pb, (int64_t)(na / esize), d);
    }
    ckpt_record_stream_free(sa);
    ckpt_record_stream_free(sb);
    return err;
}

/* Whether a partitioned tensor of `dtype` is read assembled (and its
 * pieces' entries are then left out of the comparison). */
static int assembled_dtype(int dtype)
{
    return dtype != CKPT_DT_STRING && ckpt_dtype_is_supported(dtype) &&
           ckpt_dtype_size(dtype) > 0;
}

/* Two tensors, at least one partitioned, read whole (host order; a
 * partitioned one assembled), each allocated only after its pieces were
 * checked against their data files. */
static int compare_assembled(const diff_opts *o, ckpt_bundle_reader *ra,
                             const ckpt_tensor_entry *ea,
                             ckpt_bundle_reader *rb,
                             const ckpt_tensor_entry *eb, value_diff *d,
                             int *which)
{
    uint8_t *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    int err;
    *which = 0;
    err = cli_read_assembled(ra, ea, "diff", &a, &na);
    if (err == 0) {
        *which = 1;
        err = cli_read_assembled(rb, eb, "diff", &b, &nb);
    }
    if (err == 0)
        compare_fixed(o, ea->dtype, a, b, d->num_elements, d);
    free(a);
    free(b);
    return err;
}

/* Compare the values of two entries of equal dtype and shape. On a read
 * failure *which says which side (0: A, 1: B) and the error is returned. */
static int compare_values(const diff_opts *o, ckpt_bundle_reader *ra,
                          const ckpt_tensor_entry *ea, ckpt_bundle_reader *rb,
                          const ckpt_tensor_entry *eb, value_diff *d,
                          int *which)
{
    int err;
    memset(d, 0, sizeof(*d));
    *which = 0;
    err = ckpt_shape_num_elements(&d->num_elements, &ea->shape);
    if (err < 0)
        return err;
    if ((ea->num_slices > 0 || eb->num_slices > 0) &&
        assembled_dtype(ea->dtype))
        return compare_assembled(o, ra, ea, rb, eb, d, which);
    if ((ea->num_slices > 0) != (eb->num_slices > 0)) {
        d->num_different = -1; /* partitioned in one only, not assembled */
        return 0;
    }
    if (ea->num_slices > 0)
        return 0; /* not assembled: the slice entries are compared */
    if (ea->dtype == CKPT_DT_STRING) {
        ckpt_string_array sa = CKPT_STRING_ARRAY_INIT,
                          sb = CKPT_STRING_ARRAY_INIT;
        err = ckpt_bundle_reader_read_strings_entry(ra, ea, &sa);
        if (err == 0) {
            *which = 1;
            err = ckpt_bundle_reader_read_strings_entry(rb, eb, &sb);
        }
        if (err == 0)
            compare_strings(&sa, &sb, d);
        ckpt_string_array_dispose(&sa);
        ckpt_string_array_dispose(&sb);
        return err;
    }
    return compare_streams(o, ra, ea, rb, eb, d, which);
}

/* ---- reporting ----------------------------------------------------------- */

/* Printable name of an entry (malloc'd, freed by the caller once its
 * line is printed: nothing is kept per entry, as cli_safe_name's copies
 * would be until exit): a slice key (binary) as the library shows it,
 * "<name> (piece <spec>)", any other name escaped as cli_safe_n does. */
static char *display_name(const ckpt_tensor_entry *e)
{
    char shown[1024];
    char *s;
    if (e->is_slice_key)
        return cli_xstrdup(
            ckpt_tensor_entry_shown_name(shown, sizeof(shown), e));
    s = cli_xmalloc(4 * e->name_len + 1);
    ckpt_text_printable_n(s, 4 * e->name_len + 1, e->name, e->name_len);
    return s;
}

static void format_max(char *buf, size_t n, const value_diff *d)
{
    if (d->integral)
        snprintf(buf, n, "%llu", (unsigned long long)d->max_int);
    else if (isnan(d->max_abs))
        snprintf(buf, n, "nan");
    else if (isinf(d->max_abs))
        snprintf(buf, n, "inf");
    else
        snprintf(buf, n, "%.*g", d->digits, d->max_abs);
}

typedef struct report {
    const diff_opts *o;
    int json;
    cli_json_list list;     /* --json: the differences, as their text */
    size_t num_differences; /* lines: the exit status */
    diff_tally tally;       /* tensors: the summary */
    int outside[2];         /* A, B: a state file led outside its directory */
} report;

static json_object *new_difference(const ckpt_tensor_entry *e, const char *name,
                                   const char *reason)
{
    json_object *d = json_object_new_object();
    json_object_object_add(d, "name",
                           e->is_slice_key ? json_object_new_string(name)
                                           : cli_json_name(e));
    json_object_object_add(d, "reason", json_object_new_string(reason));
    return d;
}

/* Count a difference found at entry `e` (a line, and its tensor once);
 * the name to show, freed by the caller. */
static char *count_difference(report *rep, const ckpt_tensor_entry *e)
{
    rep->num_differences++;
    diff_tally_add(&rep->tally, e);
    return display_name(e);
}

static void report_only(report *rep, const ckpt_tensor_entry *e, int in_a)
{
    char *name = count_difference(rep, e);
    if (rep->json)
        cli_json_list_add(
            &rep->list,
            new_difference(e, name, in_a ? "only_in_a" : "only_in_b"));
    else
        printf("%s: only in %s\n", name, in_a ? "A" : "B");
    free(name);
}

static void report_dtype(report *rep, const ckpt_tensor_entry *ea,
                         const ckpt_tensor_entry *eb)
{
    char *name = count_difference(rep, ea);
    char ta[24], tb[24];
    const char *da = cli_dtype_name(ea->dtype, ta);
    const char *db = cli_dtype_name(eb->dtype, tb);
    if (rep->json) {
        json_object *d = new_difference(ea, name, "dtype");
        json_object_object_add(d, "dtype_a", json_object_new_string(da));
        json_object_object_add(d, "dtype_b", json_object_new_string(db));
        cli_json_list_add(&rep->list, d);
    } else {
        printf("%s: dtype %s in A, %s in B\n", name, da, db);
    }
    free(name);
}

static void report_shape(report *rep, const ckpt_tensor_entry *ea,
                         const ckpt_tensor_entry *eb)
{
    char *name = count_difference(rep, ea);
    char sa[512], sb[512];
    if (rep->json) {
        json_object *d = new_difference(ea, name, "shape");
        json_object_object_add(d, "shape_a", cli_json_shape(&ea->shape));
        json_object_object_add(d, "shape_b", cli_json_shape(&eb->shape));
        cli_json_list_add(&rep->list, d);
    } else {
        ckpt_shape_format(sa, sizeof(sa), &ea->shape);
        ckpt_shape_format(sb, sizeof(sb), &eb->shape);
        printf("%s: shape %s in A, %s in B\n", name, sa, sb);
    }
    free(name);
}

static json_object *max_to_json(const value_diff *d)
{
    char buf[40];
    format_max(buf, sizeof(buf), d);
    if (d->integral)
        return json_object_new_uint64(d->max_int);
    if (!isfinite(d->max_abs))
        return json_object_new_string(buf);
    return json_object_new_double_s(d->max_abs, buf);
}

static void report_values(report *rep, const ckpt_tensor_entry *e,
                          const value_diff *d)
{
    char *name = count_difference(rep, e);
    char max[40];
    format_max(max, sizeof(max), d);
    if (rep->json) {
        json_object *j = new_difference(e, name, "values");
        if (d->has_max)
            json_object_object_add(j, "max_abs_diff", max_to_json(d));
        if (d->num_different >= 0) {
            json_object_object_add(j, "num_different",
                                   json_object_new_int64(d->num_different));
            json_object_object_add(j, "num_elements",
                                   json_object_new_int64(d->num_elements));
        }
        cli_json_list_add(&rep->list, j);
    } else if (d->num_different < 0) {
        printf("%s: values differ (records differ)\n", name);
    } else if (d->has_max) {
        printf("%s: values differ: %lld of %lld elements, max abs diff %s\n",
               name, (long long)d->num_different, (long long)d->num_elements,
               max);
    } else {
        printf("%s: values differ: %lld of %lld elements\n", name,
               (long long)d->num_different, (long long)d->num_elements);
    }
    free(name);
}

/* ---- comparing ----------------------------------------------------------- */

/* Bytewise order of two keys (the order of the index). */
static int key_cmp(const ckpt_tensor_entry *a, const ckpt_tensor_entry *b)
{
    size_t n = a->name_len < b->name_len ? a->name_len : b->name_len;
    int c = n ? memcmp(a->name, b->name, n) : 0;
    if (c != 0)
        return c;
    return a->name_len < b->name_len ? -1 : a->name_len > b->name_len;
}

/* Compare two entries with the same key. Returns 0 or an exit code. */
static int compare_entry(report *rep, ckpt_bundle_reader *ra,
                         const char *prefix_a, const ckpt_tensor_entry *ea,
                         ckpt_bundle_reader *rb, const char *prefix_b,
                         const ckpt_tensor_entry *eb)
{
    value_diff d;
    int which = 0, err;
    if (ea->dtype != eb->dtype) {
        report_dtype(rep, ea, eb);
        return 0;
    }
    if (!ckpt_shape_equal(&ea->shape, &eb->shape)) {
        report_shape(rep, ea, eb);
        return 0;
    }
    err = compare_values(rep->o, ra, ea, rb, eb, &d, &which);
    /* the library's message, also for CKPT_ENOMEM: out of memory, or of
     * file descriptors (naming the file) */
    if (err < 0) {
        cli_tensor_error("diff", which ? prefix_b : prefix_a, which ? eb : ea);
        return CLI_USAGE;
    }
    if (d.num_different != 0)
        report_values(rep, ea, &d);
    return 0;
}

static int compare_bundles(report *rep, ckpt_bundle_reader *ra,
                           const char *prefix_a, ckpt_bundle_reader *rb,
                           const char *prefix_b, size_t *compared)
{
    size_t na = ckpt_bundle_reader_count(ra), nb = ckpt_bundle_reader_count(rb);
    size_t i = 0, j = 0;
    int rc = 0;
    *compared = 0;
    while (rc == 0 && (i < na || j < nb)) {
        ckpt_tensor_entry bufa, bufb;
        const ckpt_tensor_entry *ea = i < na ? cli_entry(ra, i, &bufa) : NULL;
        const ckpt_tensor_entry *eb = j < nb ? cli_entry(rb, j, &bufb) : NULL;
        int c;
        /* pieces of tensors compared assembled: not on their own */
        if (ea && ea->is_slice_key && assembled_dtype(ea->dtype)) {
            i++;
            continue;
        }
        if (eb && eb->is_slice_key && assembled_dtype(eb->dtype)) {
            j++;
            continue;
        }
        c = !ea ? 1 : !eb ? -1 : key_cmp(ea, eb);
        if (c < 0) {
            report_only(rep, ea, 1);
            i++;
        } else if (c > 0) {
            report_only(rep, eb, 0);
            j++;
        } else {
            rc = compare_entry(rep, ra, prefix_a, ea, rb, prefix_b, eb);
            i++;
            j++;
        }
        /* tensors: a piece compared on its own is part of one */
        *compared += !(c < 0 ? ea : eb)->is_slice_key;
    }
    return rc;
}

/* ---- the command --------------------------------------------------------- */

static int parse_atol(const cli_option *opt, const char *v, diff_opts *o)
{
    char *end = NULL;
    errno = 0;
    o->atol = strtod(v, &end);
    if (!*v || *end || errno || !isfinite(o->atol) || o->atol < 0)
        return cli_option_value_error(&cli_cmd_diff, opt, v, NULL);
    o->tolerant = 1;
    return 0;
}

static int parse_args(int argc, char **argv, diff_opts *o)
{
    const cli_command *c = &cli_cmd_diff;
    int paths_only = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        const cli_option *opt;
        const char *v;
        int kind = cli_arg_kind(a, &paths_only);
        int m;
        if (kind == CLI_ARG_END)
            continue;
        if (kind == CLI_ARG_OPTION) {
            m = cli_option_at(c, argc, argv, &i, &opt, &v);
            if (m <= 0)
                return cli_option_error(c, a, opt);
            if (strcmp(opt->name, "--json") == 0)
                o->json = 1;
            else if (parse_atol(opt, v, o) != 0) /* --atol */
                return CLI_USAGE;
            continue;
        }
        if (!o->a)
            o->a = a;
        else if (!o->b)
            o->b = a;
        else
            return cli_usage_error(c, "unexpected argument '%s'", a);
    }
    if (!o->b)
        return cli_usage_error(c, "need two checkpoints, A and B");
    cli_json_parsed(c, o->json);
    return 0;
}

static int open_side(ckpt_bundle_reader **r, char **prefix, const char *path)
{
    /* damage in an input is "cannot be read" here, not a difference */
    return cli_open_bundle(r, prefix, "diff", path) != 0 ? CLI_USAGE : 0;
}

static void print_result(report *rep, const char *pa, const char *pb,
                         size_t compared)
{
    const diff_opts *o = rep->o;
    if (!rep->json) {
        if (rep->num_differences == 0 && o->tolerant)
            printf("%s and %s: equal within atol %g, %zu tensor%s\n",
                   cli_safe(pa), cli_safe(pb), o->atol, compared,
                   cli_plural(compared));
        else if (rep->num_differences == 0)
            printf("%s and %s: equal, %zu tensor%s\n", cli_safe(pa),
                   cli_safe(pb), compared, cli_plural(compared));
        else
            printf("%s and %s: %zu of %zu tensor%s differ\n", cli_safe(pa),
                   cli_safe(pb), rep->tally.tensors, compared,
                   cli_plural(compared));
        return;
    }
    cli_json_printed();
    cli_put_member("{\n", "a", cli_json_string(pa));
    cli_put_member(",\n", "b", cli_json_string(pb));
    cli_put_member(",\n", "a_outside_directory",
                   json_object_new_boolean(rep->outside[0]));
    cli_put_member(",\n", "b_outside_directory",
                   json_object_new_boolean(rep->outside[1]));
    cli_put_member(",\n", "equal",
                   json_object_new_boolean(rep->num_differences == 0));
    if (o->tolerant)
        cli_put_member(",\n", "atol", json_object_new_double(o->atol));
    cli_put_member(",\n", "tensors", json_object_new_int64((int64_t)compared));
    fputs(",\n  \"differences\": ", stdout);
    cli_json_list_put(&rep->list);
    /* "ok": the exit status is 0, in every command's document */
    cli_put_member(",\n", "ok",
                   json_object_new_boolean(rep->num_differences == 0));
    fputs("\n}\n", stdout);
}

static int run(int argc, char **argv)
{
    diff_opts o;
    report rep;
    ckpt_bundle_reader *ra = NULL, *rb = NULL;
    char *pa = NULL, *pb = NULL;
    size_t compared = 0;
    unsigned warned;
    int rc;
    memset(&o, 0, sizeof(o));
    memset(&rep, 0, sizeof(rep));
    rc = parse_args(argc, argv, &o);
    if (rc != 0)
        return rc;
    rep.o = &o;
    warned = cli_outside_warnings();
    rc = open_side(&ra, &pa, o.a);
    rep.outside[0] = cli_outside_warnings() > warned;
    warned = cli_outside_warnings();
    if (rc == 0)
        rc = open_side(&rb, &pb, o.b);
    rep.outside[1] = cli_outside_warnings() > warned;
    if (rc != 0)
        goto done;
    rep.json = o.json;
    if (o.json)
        cli_json_list_open(&rep.list, 2);
    rc = compare_bundles(&rep, ra, pa, rb, pb, &compared);
    if (rc != 0)
        goto done;
    print_result(&rep, pa, pb, compared);
    rc = rep.num_differences == 0 ? CLI_OK : CLI_FOUND;
done:
    cli_json_list_dispose(&rep.list);
    diff_tally_dispose(&rep.tally);
    ckpt_bundle_reader_free(ra);
    ckpt_bundle_reader_free(rb);
    free(pa);
    free(pb);
    return rc;
}
