/* format/checkpoint_state.c - the `checkpoint` state file of a checkpoint
 * directory (docs/format.md §8): TensorFlow's CheckpointState message
 * formatted in protobuf text format as TensorFlow writes it, the file read
 * (its parsing is checkpoint_state_parse.c's) and written atomically, paths
 * resolved against the directory, and latest_checkpoint.
 *
 * What TensorFlow writes (one field per line, field-number order, proto3
 * defaults omitted, every line ended by '\n'):
 *
 *   model_checkpoint_path: "ckpt-19"                     1  string
 *   all_model_checkpoint_paths: "ckpt-17"                2  repeated string
 *   all_model_checkpoint_paths: "ckpt-19"                   (oldest first;
 *                                                           last == field 1)
 *   all_model_checkpoint_timestamps: 1673735799.685766   3  repeated double
 *   all_model_checkpoint_timestamps: 1673736140.596798      (0 or one per
 *                                                           path)
 *   last_preserved_timestamp: 1673735591.495455          4  double
 *
 * Strings are double-quoted with C escapes (\" \' \\ \n \r \t, any other
 * byte outside printable ASCII as \NNN octal); doubles in Python's repr
 * form (shortest round trip: 1e-05, 1673735591.0, inf, nan). A saver
 * formats each kept checkpoint's timestamp once (ckpt__state_double_format)
 * and hands the texts back at every write (ckpt__state_write). */
#include "ckpt/state.h"
#include "common/internal.h"
#include "format/checkpoint_state_fields.h"
#include "format/checkpoint_state_write.h"
#include "io/fs_internal.h"

#include <float.h>
#include <inttypes.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const ckpt__state_field_names[CKPT__STATE_FIELD_COUNT] = {
    NULL, "model_checkpoint_path", "all_model_checkpoint_paths",
    "all_model_checkpoint_timestamps", "last_preserved_timestamp"};

/* ---- writer -------------------------------------------------------------- */

/* The significant digits (to `digits`, their count returned) and decimal
 * exponent of "%.*e" of `v` at precision `prec`, read whatever the locale's
 * decimal point; *exact says whether "d.ddd" e<exponent> reads back as
 * exactly `v`. */
static int digits_at(double v, int prec, locale_t c_locale, char digits[24],
                     int *exp10, int *exact)
{
    char sci[48], canon[48];
    const char *p;
    int ndigits = 0;
    snprintf(sci, sizeof(sci), "%.*e", prec, v);
    for (p = sci; *p && *p != 'e'; p++)
        if (*p >= '0' && *p <= '9')
            digits[ndigits++] = *p;
    *exp10 = *p ? (int)strtol(p + 1, NULL, 10) : 0;
    snprintf(canon, sizeof(canon), "%s%c.%.*se%d", signbit(v) ? "-" : "",
             digits[0], ndigits - 1, digits + 1, *exp10);
    *exact = strtod_l(canon, NULL, c_locale) == v;
    return ndigits;
}

/* The digits of the shortest "%.*e" (precision 0 to 16) of `v` that reads
 * back exactly, trailing zeros kept; their count returned.
 *
 * For a normal double (or zero) three tries at most: when some precision
 * below 15 (15 digits or fewer) reads back, the 15-digit rounding does too
 * and is the same number with zeros appended, because a decimal of 15
 * digits that reads back lies within half an ulp (2^-53 |v|) of v while
 * the other 15-digit decimals are 10^-15 |v| apart: it is the nearest
 * one. So the 15-digit rounding with its trailing zeros stripped is the
 * shortest, and when it does not read back, 16 or 17 digits are needed.
 * Subnormals, whose ulp is larger relative to them, try every precision
 * from 0 (as every double once did: the same bytes either way). */
static int shortest_digits(double v, locale_t c_locale, char digits[24],
                           int *exp10)
{
    int ndigits = 0, exact = 0;
    int prec = v != 0.0 && fabs(v) < DBL_MIN ? 0 : 14;
    for (; prec <= 16; prec++) {
        ndigits = digits_at(v, prec, c_locale, digits, exp10, &exact);
        if (exact)
            break;
    }
    return ndigits;
}

/* Python repr of a double into `res` (NUL-terminated, at most
 * CKPT__STATE_DOUBLE_MAX - 1 characters), its length returned: the shortest
 * digits that read back exactly; fixed notation when the decimal exponent
 * is in (-4, 16], else d.ddde+XX. The longest are 24 characters:
 * "-2.2250738585072014e-308", "-0.00012345678901234567". */
static size_t double_text(char res[CKPT__STATE_DOUBLE_MAX], double v,
                          locale_t c_locale)
{
    char digits[24];
    int ndigits, exp10 = 0, decpt, i;
    size_t k = 0;
    if (isnan(v) || isinf(v)) {
        const char *w = isnan(v) ? "nan" : v < 0 ? "-inf" : "inf";
        snprintf(res, CKPT__STATE_DOUBLE_MAX, "%s", w);
        return strlen(res);
    }
    ndigits = shortest_digits(v, c_locale, digits, &exp10);
    while (ndigits > 1 && digits[ndigits - 1] == '0')
        ndigits--;
    decpt = exp10 + 1; /* v = 0.DIGITS * 10^decpt */
    if (signbit(v))
        res[k++] = '-';
    if (decpt > -4 && decpt <= 16) {
        if (decpt <= 0) {
            res[k++] = '0';
            res[k++] = '.';
            for (i = 0; i < -decpt; i++)
                res[k++] = '0';
            for (i = 0; i < ndigits; i++)
                res[k++] = digits[i];
        } else {
            for (i = 0; i < ndigits || i < decpt; i++) {
                if (i == decpt)
                    res[k++] = '.';
                res[k++] = i < ndigits ? digits[i] : '0';
            }
            if (decpt >= ndigits) {
                res[k++] = '.';
                res[k++] = '0';
            }
        }
        res[k] = '\0';
        return k;
    }
    res[k++] = digits[0];
    if (ndigits > 1) {
        res[k++] = '.';
        for (i = 1; i < ndigits; i++)
            res[k++] = digits[i];
    }
    snprintf(res + k, CKPT__STATE_DOUBLE_MAX - k, "e%c%02d",
             exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
    return strlen(res);
}

int ckpt__state_double_format(ckpt__state_double *out, double v)
{
    locale_t loc = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    if (loc == (locale_t)0)
        return ckpt__error_oom();
    (void)double_text(out->text, v, loc);
    freelocale(loc);
    return 0;
}

/* A double-quoted string with TensorFlow's (Python CEscape) escaping. */
static int put_string(ckpt_buf *out, const char *s)
{
    int err = ckpt__buf_put(out, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p && err == 0;
         p++) {
        switch (*p) {
        case '\n':
            err = ckpt__buf_puts(out, "\\n");
            break;
        case '\r':
            err = ckpt__buf_puts(out, "\\r");
            break;
        case '\t':
            err = ckpt__buf_puts(out, "\\t");
            break;
        case '"':
            err = ckpt__buf_puts(out, "\\\"");
            break;
        case '\'':
            err = ckpt__buf_puts(out, "\\'");
            break;
        case '\\':
            err = ckpt__buf_puts(out, "\\\\");
            break;
        default:
            if (*p < 32 || *p >= 127)
                err = ckpt__buf_printf(out, "\\%03o", (unsigned int)*p);
            else
                err = ckpt__buf_put(out, p, 1);
            break;
        }
    }
    if (err == 0)
        err = ckpt__buf_put(out, "\"\n", 2);
    return err;
}

static int put_string_field(ckpt_buf *out, int field, const char *s)
{
    int err = ckpt__buf_printf(out, "%s: ", ckpt__state_field_names[field]);
    return err < 0 ? err : put_string(out, s);
}

/* "<field>: <v>\n", the double given as its text (`cached`, as
 * ckpt__state_double_format made it) or formatted now. */
static int put_double_field(ckpt_buf *out, int field, double v,
                            const ckpt__state_double *cached, locale_t loc)
{
    char res[CKPT__STATE_DOUBLE_MAX];
    const char *text = cached ? cached->text : res;
    if (!cached)
        (void)double_text(res, v, loc);
    return ckpt__buf_printf(out, "%s: %s\n", ckpt__state_field_names[field],
                            text);
}

/* Check `st` as TensorFlow's writer does; *append_model is set when
 * model_checkpoint_path must be appended to all_model_checkpoint_paths. */
static int check_state(const ckpt_state *st, int *append_model)
{
    const char *model = st->model_checkpoint_path;
    if (!model || model[0] == '\0')
        return ckpt__error(CKPT_EINVAL,
                           "checkpoint state: empty model_checkpoint_path");
    if (st->num_paths > 0 && !st->all_paths)
        return ckpt__error(CKPT_EINVAL, "checkpoint state: all_paths is NULL");
    if (st->num_timestamps > 0 && !st->timestamps)
        return ckpt__error(CKPT_EINVAL, "checkpoint state: timestamps is NULL");
    for (size_t i = 0; i < st->num_paths; i++)
        if (!st->all_paths[i])
            return ckpt__error(CKPT_EINVAL,
                               "checkpoint state: all_paths[%zu] is NULL", i);
    if (st->num_timestamps != 0 && st->num_timestamps != st->num_paths)
        return ckpt__error(CKPT_EINVAL,
                           "checkpoint state: %zu timestamps for %zu paths",
                           st->num_timestamps, st->num_paths);
    *append_model = st->num_paths == 0 ||
                    strcmp(st->all_paths[st->num_paths - 1], model) != 0;
    if (*append_model && st->num_timestamps != 0)
        return ckpt__error(CKPT_EINVAL,
                           "checkpoint state: model_checkpoint_path \"%s\" is "
                           "not the last of all_model_checkpoint_paths, and "
                           "appending it would leave %zu timestamps for %zu "
                           "paths",
                           model, st->num_timestamps, st->num_paths + 1);
    return 0;
}

int ckpt_state_format(ckpt_buf *out, const ckpt_state *st)
{
    CKPT__CHECK_ARG(out);
    CKPT__CHECK_ARG(st);
    return ckpt__state_format_cached(out, st, NULL);
}

int ckpt__state_format_cached(ckpt_buf *out, const ckpt_state *st,
                              const ckpt__state_double *texts)
{
    int append_model = 0;
    size_t start;
    locale_t loc;
    int err;
    err = check_state(st, &append_model);
    if (err < 0)
        return err;
    loc = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    if (loc == (locale_t)0)
        return ckpt__error_oom();
    start = out->size;
    err = put_string_field(out, CKPT__STATE_MODEL_PATH,
                           st->model_checkpoint_path);
    for (size_t i = 0; i < st->num_paths && err == 0; i++)
        err = put_string_field(out, CKPT__STATE_ALL_PATHS, st->all_paths[i]);
    if (err == 0 && append_model)
        err = put_string_field(out, CKPT__STATE_ALL_PATHS,
                               st->model_checkpoint_path);
    for (size_t i = 0; i < st->num_timestamps && err == 0; i++)
        err = put_double_field(out, CKPT__STATE_TIMESTAMPS, st->timestamps[i],
                               texts ? &texts[i] : NULL, loc);
    if (err == 0 && (st->last_preserved_timestamp != 0.0 ||
                     signbit(st->last_preserved_timestamp)))
        err = put_double_field(out, CKPT__STATE_LAST_PRESERVED,
                               st->last_preserved_timestamp, NULL, loc);
    freelocale(loc);
    if (err < 0 && out->ptr) {
        out->size = start;
        out->ptr[start] = '\0';
    }
    return err;
}

/* ---- files --------------------------------------------------------------- */

int ckpt_state_resolve(ckpt_buf *out, const char *dir, const char *path)
{
    CKPT__CHECK_ARG(out);
    CKPT__CHECK_ARG(dir);
    CKPT__CHECK_ARG(path);
    if (path[0] == '/')
        return ckpt__buf_set(out, path);
    return ckpt__path_join(out, dir, path);
}

/* CKPT_ENOTFOUND for the missing state file `path` of `dir`, saying why
 * when it can tell: `dir` does not exist (a mistyped path), or it is a
 * checkpoint's prefix rather than its directory. */
static int state_file_missing(const ckpt_fs *fs, const char *dir,
                              const char *path)
{
    ckpt_buf index = CKPT_BUF_INIT;
    int why = 0;
    if (ckpt__fs_stat(fs, dir, NULL, NULL) == CKPT_ENOTFOUND)
        why = ckpt__buf_printf(&index, "%s.index", dir) == 0 &&
                      ckpt__fs_stat(fs, index.ptr, NULL, NULL) == 0
                  ? 2
                  : 1;
    ckpt_buf_dispose(&index);
    if (why == 2)
        return ckpt__error(CKPT_ENOTFOUND,
                           "%s: no checkpoint state file: %s is a "
                           "checkpoint's prefix, not its directory",
                           path, dir);
    if (why == 1)
        return ckpt__error(CKPT_ENOTFOUND,
                           "%s: no checkpoint state file: directory %s "
                           "does not exist",
                           path, dir);
    return ckpt__error(CKPT_ENOTFOUND, "%s: no checkpoint state file", path);
}

int ckpt_state_read(ckpt_state *out, const ckpt_fs *fs, const char *dir)
{
    ckpt_buf path = CKPT_BUF_INIT, text = CKPT_BUF_INIT;
    int err;
    CKPT__CHECK_ARG(out);
    CKPT__CHECK_ARG(dir);
    err = ckpt__fs_check(fs, "state read: fs");
    if (err == 0)
        err = ckpt__path_join(&path, dir, CKPT_STATE_FILENAME);
    if (err < 0)
        goto done;
    err = ckpt__fs_read_file_max(&text, ckpt_fs_or_default(fs), path.ptr,
                                 CKPT_STATE_MAX_SIZE);
    if (err == CKPT_ENOTFOUND) {
        err = state_file_missing(ckpt_fs_or_default(fs), dir, path.ptr);
        goto done;
    }
    if (err < 0)
        goto done;
    err = ckpt_state_parse(out, text.ptr, text.size, path.ptr);
done:
    ckpt_buf_dispose(&path);
    ckpt_buf_dispose(&text);
    return err;
}

int ckpt_state_write(const ckpt_fs *fs, const char *dir, const ckpt_state *st)
{
    CKPT__CHECK_ARG(dir);
    CKPT__CHECK_ARG(st);
    if (ckpt__fs_check(fs, "state write: fs") < 0)
        return ckpt_error_last()->code;
    return ckpt__state_write(fs, dir, st, NULL, NULL);
}

int ckpt__state_write(const ckpt_fs *fs, const char *dir, const ckpt_state *st,
                      const ckpt__state_double *texts, int *replaced)
{
    ckpt_buf text = CKPT_BUF_INIT, path = CKPT_BUF_INIT, model = CKPT_BUF_INIT;
    int err;
    if (replaced)
        *replaced = 0;
    err = ckpt__state_format_cached(&text, st, texts);
    if (err < 0)
        goto done;
    if ((uint64_t)text.size > CKPT_STATE_MAX_SIZE) {
        /* ckpt_state_read would refuse it: the one on disk stays */
        err = ckpt__error(CKPT_EINVAL,
                          "%s: state file of %zu bytes, larger than the "
                          "%" PRIu64 " bytes a reader accepts: not written",
                          dir, text.size, (uint64_t)CKPT_STATE_MAX_SIZE);
        goto done;
    }
    err = ckpt__path_join(&path, dir, CKPT_STATE_FILENAME);
    if (err == 0)
        err = ckpt_state_resolve(&model, dir, st->model_checkpoint_path);
    if (err < 0)
        goto done;
    if (strcmp(path.ptr, model.ptr) == 0 ||
        strcmp(path.ptr, st->model_checkpoint_path) == 0) {
        err = ckpt__error(CKPT_EINVAL,
                          "%s: model_checkpoint_path \"%s\" conflicts with "
                          "the checkpoint state file",
                          path.ptr, st->model_checkpoint_path);
        goto done;
    }
    err = ckpt__fs_write_file_atomic(ckpt_fs_or_default(fs), path.ptr, text.ptr,
                                     text.size, replaced);
done:
    ckpt_buf_dispose(&text);
    ckpt_buf_dispose(&path);
    ckpt_buf_dispose(&model);
    return err;
}

/* 1 when "<prefix>.index" exists, 0 when it does not, or an error. */
static int index_exists(const ckpt_fs *fs, const char *prefix)
{
    ckpt_buf index = CKPT_BUF_INIT;
    int err = ckpt__buf_printf(&index, "%s.index", prefix);
    if (err == 0)
        err = ckpt__fs_exists(fs, index.ptr);
    ckpt_buf_dispose(&index);
    return err;
}

int ckpt_state_latest(ckpt_buf *out, const ckpt_fs *fs, const char *dir,
                      const ckpt_state *st)
{
    ckpt_buf prefix = CKPT_BUF_INIT;
    int err;
    CKPT__CHECK_ARG(out);
    CKPT__CHECK_ARG(dir);
    CKPT__CHECK_ARG(st);
    if (st->num_paths > 0 && !st->all_paths)
        return ckpt__error(CKPT_EINVAL,
                           "ckpt_state_latest: %zu paths and all_paths NULL",
                           st->num_paths);
    err = ckpt__fs_check(fs, "state latest: fs");
    if (err < 0)
        return err;
    fs = ckpt_fs_or_default(fs);
    /* model_checkpoint_path first, then the listed ones, newest first. */
    for (size_t i = 0; i <= st->num_paths; i++) {
        const char *p = i == 0 ? st->model_checkpoint_path
                               : st->all_paths[st->num_paths - i];
        if (!p)
            continue;
        err = ckpt_state_resolve(&prefix, dir, p);
        if (err == 0)
            err = index_exists(fs, prefix.ptr);
        if (err < 0)
            goto done;
        if (err == 1) {
            err = ckpt__buf_set(out, prefix.ptr);
            goto done;
        }
    }
    err = ckpt__error(
        CKPT_ENOTFOUND,
        "%s: no checkpoint listed in the state file has its "
        "index (latest: \"%s\")",
        dir, st->model_checkpoint_path ? st->model_checkpoint_path : "");
done:
    ckpt_buf_dispose(&prefix);
    return err;
}

int ckpt_latest_checkpoint(ckpt_buf *out, const ckpt_fs *fs, const char *dir)
{
    ckpt_state st = CKPT_STATE_INIT;
    int err;
    CKPT__CHECK_ARG(out);
    CKPT__CHECK_ARG(dir);
    fs = ckpt_fs_or_default(fs);
    err = ckpt_state_read(&st, fs, dir);
    if (err == CKPT_ECORRUPT) /* "none", as TensorFlow ignores such a file */
        err = ckpt__error_prefix(
            CKPT_ENOTFOUND, "%s: no latest checkpoint: " CKPT__STATE_UNREADABLE,
            dir);
    if (err == 0)
        err = ckpt_state_latest(out, fs, dir, &st);
    ckpt_state_dispose(&st);
    return err;
}
