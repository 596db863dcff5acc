/* format/checkpoint_state_parse.c - reading the `checkpoint` state file's
 * text (docs/format.md §8): a lexer for protobuf's text format and the
 * parser of TensorFlow's CheckpointState message into a ckpt_state
 * (ckpt_state_parse), and ckpt_state_dispose.
 *
 * The reader accepts what Python's text_format.Merge accepts for this
 * message: whitespace and '#' comments between tokens, fields in any order
 * (a repeated scalar field: last one wins), "name: value" (the colon is
 * required for scalar fields), an optional ',' or ';' after each field,
 * "[a, b]" lists for repeated fields, single- or double-quoted strings with
 * adjacent literals concatenated, every C escape including octal and hex
 * and \uXXXX / \UXXXXXXXX (as UTF-8, as protobuf's C++ text format), and
 * doubles in strtod form, integers, inf/-inf/infinity/nan in any case,
 * with an optional 'f' suffix. Errors name "<file>:<line>:<column>". */
#include "ckpt/state.h"
#include "common/internal.h"
#include "format/checkpoint_state_fields.h"
#include "io/fs_internal.h"

#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- lists --------------------------------------------------------------- */

/* The state being parsed; moved into the caller's ckpt_state on success. */
typedef struct parsed_state {
    char *model_path;
    char **paths;
    size_t num_paths, cap_paths;
    double *stamps;
    size_t num_stamps, cap_stamps;
    double last_preserved;
} parsed_state;

/* The capacity after growing `cap` to hold `need` elements of `elem` bytes,
 * or 0 on overflow. */
static size_t grown_capacity(size_t cap, size_t need, size_t elem)
{
    size_t ncap = cap ? cap : 4;
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2)
            return 0;
        ncap *= 2;
    }
    return ncap > SIZE_MAX / elem ? 0 : ncap;
}

static int push_path(parsed_state *ps, char *s)
{
    if (ps->num_paths == ps->cap_paths) {
        size_t ncap =
            grown_capacity(ps->cap_paths, ps->num_paths + 1, sizeof(char *));
        char **p =
            ncap ? ckpt__realloc(ps->paths, ncap * sizeof(char *)) : NULL;
        if (!p)
            return ckpt__error_oom();
        ps->paths = p;
        ps->cap_paths = ncap;
    }
    ps->paths[ps->num_paths++] = s;
    return 0;
}

static int push_stamp(parsed_state *ps, double d)
{
    if (ps->num_stamps == ps->cap_stamps) {
        size_t ncap =
            grown_capacity(ps->cap_stamps, ps->num_stamps + 1, sizeof(double));
        double *p =
            ncap ? ckpt__realloc(ps->stamps, ncap * sizeof(double)) : NULL;
        if (!p)
            return ckpt__error_oom();
        ps->stamps = p;
        ps->cap_stamps = ncap;
    }
    ps->stamps[ps->num_stamps++] = d;
    return 0;
}

static void free_strings(char **list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ckpt__free(list[i]);
    ckpt__free(list);
}

static void parsed_dispose(parsed_state *ps)
{
    ckpt__free(ps->model_path);
    free_strings(ps->paths, ps->num_paths);
    ckpt__free(ps->stamps);
    memset(ps, 0, sizeof(*ps));
}

void ckpt_state_dispose(ckpt_state *st)
{
    if (!st)
        return;
    ckpt__free(st->model_checkpoint_path);
    free_strings(st->all_paths, st->num_paths);
    ckpt__free(st->timestamps);
    st->model_checkpoint_path = NULL;
    st->all_paths = NULL;
    st->num_paths = 0;
    st->timestamps = NULL;
    st->num_timestamps = 0;
    st->last_preserved_timestamp = 0.0;
}

/* ---- lexer --------------------------------------------------------------- */

typedef struct lexer {
    const char *text;
    size_t len;
    size_t pos;
    size_t line;       /* 1-based line of pos */
    size_t line_start; /* offset of that line's first byte */
    const char *filename;
    locale_t c_locale; /* strtod in the "C" locale */
} lexer;

/* Record "<file>:<line>:<col>: <message>" as a CKPT_ECORRUPT error. */
static int lex_error(const lexer *lx, const char *fmt, ...) CKPT__PRINTF(2, 3);
static int lex_error(const lexer *lx, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return ckpt__error(CKPT_ECORRUPT, "%s:%zu:%zu: %s", lx->filename, lx->line,
                       lx->pos - lx->line_start + 1, msg);
}

static int at_end(const lexer *lx)
{
    return lx->pos >= lx->len;
}

static char peek(const lexer *lx)
{
    return at_end(lx) ? '\0' : lx->text[lx->pos];
}

static void advance(lexer *lx)
{
    if (lx->text[lx->pos] == '\n') {
        lx->line++;
        lx->line_start = lx->pos + 1;
    }
    lx->pos++;
}

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' ||
           c == '\f';
}

static int is_alpha(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static int is_octal(char c)
{
    return c >= '0' && c <= '7';
}

static int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Skip whitespace and '#' comments (to the end of the line). */
static void skip_space(lexer *lx)
{
    while (!at_end(lx)) {
        char c = peek(lx);
        if (is_space(c)) {
            advance(lx);
        } else if (c == '#') {
            while (!at_end(lx) && peek(lx) != '\n')
                advance(lx);
        } else {
            break;
        }
    }
}

/* A printable rendering of the byte at the cursor for messages. */
static const char *describe_char(const lexer *lx, char tmp[8])
{
    unsigned char c;
    if (at_end(lx))
        return "end of file";
    c = (unsigned char)peek(lx);
    if (c > 32 && c < 127)
        snprintf(tmp, 8, "'%c'", c);
    else
        snprintf(tmp, 8, "0x%02x", c);
    return tmp;
}

/* The byte a one-letter escape stands for (n: newline, t: tab, ...), or 0
 * when `c` is not one. */
static unsigned char simple_escape(char c)
{
    static const char letters[] = "abfnrtv\\'\"?";
    static const char bytes[] = "\a\b\f\n\r\t\v\\'\"?";
    const char *p = c ? strchr(letters, c) : NULL;
    return p ? (unsigned char)bytes[p - letters] : 0;
}

/* Up to three octal digits (cursor on the first). */
static int lex_octal_escape(lexer *lx, ckpt_buf *out)
{
    unsigned int v = 0;
    unsigned char byte;
    for (int digits = 0; digits < 3 && is_octal(peek(lx)); digits++) {
        v = v * 8 + (unsigned int)(peek(lx) - '0');
        advance(lx);
    }
    if (v > 0xff)
        return lex_error(lx, "octal escape out of range");
    byte = (unsigned char)v;
    return ckpt__buf_put(out, &byte, 1);
}

/* "x" and up to two hex digits (cursor on the x). */
static int lex_hex_escape(lexer *lx, ckpt_buf *out)
{
    unsigned int v = 0;
    unsigned char byte;
    int digits;
    advance(lx);
    for (digits = 0; digits < 2 && hex_value(peek(lx)) >= 0; digits++) {
        v = v * 16 + (unsigned int)hex_value(peek(lx));
        advance(lx);
    }
    if (digits == 0)
        return lex_error(lx, "\\x escape without hex digits");
    byte = (unsigned char)v;
    return ckpt__buf_put(out, &byte, 1);
}

/* "u" and four hex digits or "U" and eight (cursor on the letter): a
 * Unicode code point, appended as UTF-8, as protobuf's text format reads
 * it (a path written by hand in a non-ASCII directory). */
static int lex_unicode_escape(lexer *lx, ckpt_buf *out)
{
    int want = peek(lx) == 'u' ? 4 : 8;
    uint32_t cp = 0;
    unsigned char utf8[4];
    size_t n;
    advance(lx);
    for (int digits = 0; digits < want; digits++) {
        if (hex_value(peek(lx)) < 0)
            return lex_error(lx, "\\%c escape needs %d hex digits",
                             want == 4 ? 'u' : 'U', want);
        cp = cp * 16 + (uint32_t)hex_value(peek(lx));
        advance(lx);
    }
    if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return lex_error(lx, "\\%c escape U+%04X is not a character",
                         want == 4 ? 'u' : 'U', (unsigned)cp);
    if (cp < 0x80) {
        utf8[0] = (unsigned char)cp;
        n = 1;
    } else if (cp < 0x800) {
        utf8[0] = (unsigned char)(0xc0 | (cp >> 6));
        utf8[1] = (unsigned char)(0x80 | (cp & 0x3f));
        n = 2;
    } else if (cp < 0x10000) {
        utf8[0] = (unsigned char)(0xe0 | (cp >> 12));
        utf8[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
        utf8[2] = (unsigned char)(0x80 | (cp & 0x3f));
        n = 3;
    } else {
        utf8[0] = (unsigned char)(0xf0 | (cp >> 18));
        utf8[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
        utf8[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
        utf8[3] = (unsigned char)(0x80 | (cp & 0x3f));
        n = 4;
    }
    return ckpt__buf_put(out, utf8, n);
}

/* One escape sequence after the backslash (cursor on the letter). */
static int lex_escape(lexer *lx, ckpt_buf *out)
{
    char c = peek(lx);
    unsigned char byte = simple_escape(c);
    char tmp[8];
    if (byte != 0) {
        advance(lx);
        return ckpt__buf_put(out, &byte, 1);
    }
    if (is_octal(c))
        return lex_octal_escape(lx, out);
    if (c == 'x')
        return lex_hex_escape(lx, out);
    if (c == 'u' || c == 'U')
        return lex_unicode_escape(lx, out);
    if (at_end(lx) || c == '\n')
        return lex_error(lx, "unterminated string");
    return lex_error(lx, "invalid escape '\\' followed by %s",
                     describe_char(lx, tmp));
}

/* One quoted literal (cursor on the quote), unescaped and appended. */
static int lex_one_string(lexer *lx, ckpt_buf *out)
{
    char quote = peek(lx);
    int err;
    advance(lx);
    for (;;) {
        char c;
        if (at_end(lx))
            return lex_error(lx, "unterminated string");
        c = peek(lx);
        if (c == quote) {
            advance(lx);
            return 0;
        }
        if (c == '\n')
            return lex_error(lx, "unterminated string (newline inside)");
        if (c == '\\') {
            advance(lx);
            err = lex_escape(lx, out);
        } else {
            err = ckpt__buf_put(out, &c, 1);
            advance(lx);
        }
        if (err < 0)
            return err;
    }
}

/* A string value: one or more adjacent literals, concatenated. */
static int lex_string(lexer *lx, const char *field, char **out)
{
    ckpt_buf s = CKPT_BUF_INIT;
    size_t start_line = lx->line;
    int err = 0;
    char c = peek(lx);
    if (c != '"' && c != '\'') {
        char tmp[8];
        err = lex_error(lx, "expected a string for field \"%s\", got %s", field,
                        describe_char(lx, tmp));
        goto done;
    }
    while (c == '"' || c == '\'') {
        err = lex_one_string(lx, &s);
        if (err < 0)
            goto done;
        skip_space(lx);
        c = peek(lx);
    }
    if (ckpt__buf_grow(&s, 0) < 0) {
        err = CKPT_ENOMEM;
        goto done;
    }
    if (memchr(s.ptr, '\0', s.size)) {
        err = ckpt__error(CKPT_ECORRUPT,
                          "%s:%zu: field \"%s\": string contains a NUL byte",
                          lx->filename, start_line, field);
        goto done;
    }
    *out = ckpt__buf_detach(&s);
    if (!*out)
        err = ckpt__error_oom();
done:
    ckpt_buf_dispose(&s);
    return err;
}

static int is_number_char(char c)
{
    return is_alpha(c) || is_digit(c) || c == '.' || c == '+' || c == '-';
}

/* A double value: one number token converted with strtod ("C" locale). */
static int lex_double(lexer *lx, const char *field, double *out)
{
    char tok[80];
    size_t n = 0;
    char *end = NULL;
    char c = peek(lx);
    if (!(is_number_char(c))) {
        char tmp[8];
        return lex_error(lx, "expected a number for field \"%s\", got %s",
                         field, describe_char(lx, tmp));
    }
    while (!at_end(lx) && is_number_char(peek(lx))) {
        if (n + 1 >= sizeof(tok))
            return lex_error(lx, "number too long for field \"%s\"", field);
        tok[n++] = peek(lx);
        advance(lx);
    }
    tok[n] = '\0';
    *out = strtod_l(tok, &end, lx->c_locale);
    if (end != tok && (*end == 'f' || *end == 'F') && end[1] == '\0')
        end++;
    if (end == tok || *end != '\0')
        return ckpt__error(CKPT_ECORRUPT,
                           "%s:%zu: field \"%s\": bad number \"%s\"",
                           lx->filename, lx->line, field, tok);
    return 0;
}

/* The field named at the cursor (cursor moves past the name). */
static int lex_field_name(lexer *lx, int *field_out)
{
    size_t start = lx->pos;
    size_t col = lx->pos - lx->line_start + 1;
    size_t n;
    if (!is_alpha(peek(lx))) {
        char tmp[8];
        return lex_error(lx, "expected a field name, got %s",
                         describe_char(lx, tmp));
    }
    while (!at_end(lx) && (is_alpha(peek(lx)) || is_digit(peek(lx))))
        advance(lx);
    n = lx->pos - start;
    for (int i = 1; i < (int)CKPT__ARRAY_SIZE(ckpt__state_field_names); i++) {
        if (strlen(ckpt__state_field_names[i]) == n &&
            memcmp(ckpt__state_field_names[i], lx->text + start, n) == 0) {
            *field_out = i;
            return 0;
        }
    }
    return ckpt__error(CKPT_ECORRUPT,
                       "%s:%zu:%zu: unknown field \"%.*s\" in CheckpointState",
                       lx->filename, lx->line, col, (int)(n > 200 ? 200 : n),
                       lx->text + start);
}

/* One value of `field` (cursor on it), stored into `ps`. */
static int parse_value(lexer *lx, int field, parsed_state *ps)
{
    const char *name = ckpt__state_field_names[field];
    char *s = NULL;
    double d = 0.0;
    int err;
    if (field == CKPT__STATE_MODEL_PATH || field == CKPT__STATE_ALL_PATHS) {
        err = lex_string(lx, name, &s);
        if (err < 0)
            return err;
        if (field == CKPT__STATE_MODEL_PATH) {
            ckpt__free(ps->model_path);
            ps->model_path = s;
            return 0;
        }
        err = push_path(ps, s);
        if (err < 0)
            ckpt__free(s);
        return err;
    }
    err = lex_double(lx, name, &d);
    if (err < 0)
        return err;
    if (field == CKPT__STATE_LAST_PRESERVED) {
        ps->last_preserved = d;
        return 0;
    }
    return push_stamp(ps, d);
}

/* "[v, v, ...]" for a repeated field (cursor on '['). */
static int parse_list(lexer *lx, int field, parsed_state *ps)
{
    int err;
    advance(lx);
    skip_space(lx);
    if (peek(lx) == ']') {
        advance(lx);
        return 0;
    }
    for (;;) {
        char tmp[8];
        err = parse_value(lx, field, ps);
        if (err < 0)
            return err;
        skip_space(lx);
        if (peek(lx) == ']') {
            advance(lx);
            return 0;
        }
        if (peek(lx) != ',')
            return lex_error(lx,
                             "expected ',' or ']' in the list of \"%s\", "
                             "got %s",
                             ckpt__state_field_names[field],
                             describe_char(lx, tmp));
        advance(lx);
        skip_space(lx);
    }
}

/* One "name: value" field (cursor on the name). */
static int parse_field(lexer *lx, parsed_state *ps)
{
    int field = 0;
    int err = lex_field_name(lx, &field);
    if (err < 0)
        return err;
    skip_space(lx);
    if (peek(lx) != ':') {
        char tmp[8];
        return lex_error(lx, "expected ':' after field \"%s\", got %s",
                         ckpt__state_field_names[field],
                         describe_char(lx, tmp));
    }
    advance(lx);
    skip_space(lx);
    if (peek(lx) == '[' &&
        (field == CKPT__STATE_ALL_PATHS || field == CKPT__STATE_TIMESTAMPS))
        err = parse_list(lx, field, ps);
    else
        err = parse_value(lx, field, ps);
    if (err < 0)
        return err;
    skip_space(lx);
    if (peek(lx) == ',' || peek(lx) == ';')
        advance(lx);
    return 0;
}

int ckpt_state_parse(ckpt_state *out, const char *text, size_t len,
                     const char *filename)
{
    parsed_state ps;
    lexer lx;
    int err = 0;
    memset(&ps, 0, sizeof(ps));
    memset(&lx, 0, sizeof(lx));
    CKPT__CHECK_ARG(out);
    if (len > 0)
        CKPT__CHECK_ARG(text);
    lx.text = text;
    lx.len = len;
    lx.line = 1;
    lx.filename = filename ? filename : "<checkpoint state>";
    lx.c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    if (lx.c_locale == (locale_t)0)
        return ckpt__error_oom();
    for (;;) {
        skip_space(&lx);
        if (at_end(&lx))
            break;
        err = parse_field(&lx, &ps);
        if (err < 0)
            goto done;
    }
    if (!ps.model_path || ps.model_path[0] == '\0') {
        /* proto3: "" is the default, as good as absent to TensorFlow; the
         * message says which of the two the file holds */
        err = ckpt__error(CKPT_ECORRUPT, "%s: invalid checkpoint state: %s",
                          lx.filename,
                          ps.model_path ? "model_checkpoint_path is empty"
                                        : "no model_checkpoint_path");
        goto done;
    }
    if (ps.num_stamps != 0 && ps.num_stamps != ps.num_paths) {
        /* TensorFlow's parser takes such a file (a path line deleted by
         * hand, say), and so do we: timestamps that do not pair one to
         * one with the paths are dropped, as if absent. */
        ckpt__free(ps.stamps);
        ps.stamps = NULL;
        ps.num_stamps = 0;
    }
    out->model_checkpoint_path = ps.model_path;
    out->all_paths = ps.paths;
    out->num_paths = ps.num_paths;
    out->timestamps = ps.stamps;
    out->num_timestamps = ps.num_stamps;
    out->last_preserved_timestamp = ps.last_preserved;
    memset(&ps, 0, sizeof(ps));
done:
    parsed_dispose(&ps);
    freelocale(lx.c_locale);
    return err;
}
