/* tools/ckpt/cli_text.c - how untrusted text (tensor names, state-file
 * paths, file names, the library's messages that quote them) reaches the
 * terminal and JSON. One rule for every command:
 *
 *   text:  the library's rule (ckpt_text_printable_n, which its own
 *          messages follow too): printable ASCII and valid UTF-8 of
 *          printable characters as is; every other byte (control bytes such
 *          as ESC, TAB, newline and NUL, DEL, C1 controls, Unicode
 *          direction overrides, bytes that are not UTF-8) as \xHH;
 *   JSON:  a string that is valid UTF-8 as is (json-c \u-escapes its
 *          control characters); one that is not maps each byte to one code
 *          point U+0000..U+00FF (Latin-1), so the output is always JSON;
 *          the printed document then \u-escapes the code points json-c
 *          leaves raw that a terminal acts on (DEL, C1 controls, line
 *          separators, direction marks: cli_json_write_safe).
 *
 * Escaped copies live until cli_text_release() (called once by main). */
#include "cli.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Every escaped copy handed out, freed by cli_text_release(). The tool is
 * single-threaded. */
static char **kept;
static size_t num_kept, cap_kept;

static char *keep(char *s)
{
    if (num_kept == cap_kept) {
        size_t cap = cap_kept ? cap_kept * 2 : 16;
        kept = cli_xrealloc(kept, cap * sizeof(*kept));
        cap_kept = cap;
    }
    kept[num_kept++] = s;
    return s;
}

void cli_text_release(void)
{
    for (size_t i = 0; i < num_kept; i++)
        free(kept[i]);
    free(kept);
    kept = NULL;
    num_kept = cap_kept = 0;
}

/* ---- UTF-8 --------------------------------------------------------------- */

size_t cli_utf8_sequence(const unsigned char *p, size_t n, uint32_t *cp_out)
{
    size_t len;
    uint32_t cp;
    if (p[0] < 0x80) {
        *cp_out = p[0];
        return 1;
    }
    if (p[0] >= 0xc2 && p[0] <= 0xdf)
        len = 2, cp = p[0] & 0x1f;
    else if (p[0] >= 0xe0 && p[0] <= 0xef)
        len = 3, cp = p[0] & 0x0f;
    else if (p[0] >= 0xf0 && p[0] <= 0xf4)
        len = 4, cp = p[0] & 0x07;
    else
        return 0;
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[i] & 0x3f);
    }
    if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
        (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
        return 0;
    *cp_out = cp;
    return len;
}

static int is_utf8(const unsigned char *p, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint32_t cp;
        size_t len = cli_utf8_sequence(p + i, n - i, &cp);
        if (len == 0)
            return 0;
        i += len;
    }
    return 1;
}

/* Whether the code point of the valid UTF-8 sequence p[0..len) is one a
 * terminal acts on rather than shows (C0 and C1 controls, DEL, line and
 * paragraph separators, direction marks and overrides): the library's
 * list, asked through ckpt_text_printable_n, which escapes exactly those
 * (4 bytes out for each byte in). */
static int is_control(const unsigned char *p, size_t len)
{
    char shown[4 * 4 + 1];
    return ckpt_text_printable_n(shown, sizeof(shown), p, len) != len;
}

/* Write the serialized JSON document `doc` to `out`, each code point
 * is_control() names (outside ASCII's C0 range, which json-c escapes)
 * written as \uXXXX. Such code points can only occur inside JSON strings,
 * so the document means the same. */
void cli_json_write_safe(const char *doc, FILE *out)
{
    const unsigned char *p = (const unsigned char *)doc;
    size_t n = strlen(doc), i = 0, run = 0;
    while (i < n) {
        uint32_t cp = 0;
        size_t len = cli_utf8_sequence(p + i, n - i, &cp);
        if (len > 0 && cp >= 0x7f && is_control(p + i, len)) {
            fwrite(p + run, 1, i - run, out);
            fprintf(out, "\\u%04x", (unsigned)cp);
            i += len;
            run = i;
        } else {
            i += len ? len : 1;
        }
    }
    fwrite(p + run, 1, n - run, out);
}

/* ---- text ---------------------------------------------------------------- */

/* The library's rule (ckpt_text_printable_n); the bytes themselves when
 * nothing needed escaping. */
const char *cli_safe_n(const void *bytes, size_t n)
{
    char *s = cli_xmalloc(4 * n + 1);
    size_t len = ckpt_text_printable_n(s, 4 * n + 1, bytes, n);
    if (len == n && (n == 0 || memcmp(s, bytes, n) == 0)) {
        free(s);
        return bytes; /* fit to print; a NUL inside would need escaping */
    }
    return keep(s);
}

size_t cli_put_safe_n(FILE *out, const void *bytes, size_t n)
{
    char *s = cli_xmalloc(4 * n + 1);
    size_t len = ckpt_text_printable_n(s, 4 * n + 1, bytes, n);
    size_t columns = cli_text_columns(s, len);
    if (out)
        fwrite(s, 1, len, out);
    free(s);
    return columns;
}

/* Whether code point `c` takes two columns (East Asian wide and fullwidth
 * blocks, emoji): a fixed table, not the locale's, so output is the same
 * everywhere. */
static int is_wide(unsigned long c)
{
    static const unsigned long wide[][2] = {
        {0x1100, 0x115F},   {0x2E80, 0x303E},   {0x3041, 0x33FF},
        {0x3400, 0x4DBF},   {0x4E00, 0x9FFF},   {0xA000, 0xA4CF},
        {0xAC00, 0xD7A3},   {0xF900, 0xFAFF},   {0xFE30, 0xFE4F},
        {0xFF00, 0xFF60},   {0xFFE0, 0xFFE6},   {0x1F300, 0x1F64F},
        {0x1F900, 0x1F9FF}, {0x20000, 0x2FFFD}, {0x30000, 0x3FFFD},
    };
    for (size_t i = 0; i < sizeof(wide) / sizeof(wide[0]); i++)
        if (c >= wide[i][0] && c <= wide[i][1])
            return 1;
    return 0;
}

size_t cli_text_columns(const char *text, size_t n)
{
    const unsigned char *p = (const unsigned char *)text;
    size_t columns = 0, i = 0;
    while (i < n) {
        unsigned long c = p[i];
        size_t len = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
        if (len > n - i)
            len = n - i;
        if (len > 1) {
            c &= 0x3Fu >> (len - 1);
            for (size_t k = 1; k < len; k++)
                c = (c << 6) | (p[i + k] & 0x3Fu);
        }
        columns += is_wide(c) ? 2 : 1;
        i += len;
    }
    return columns;
}

void cli_print_padded(const char *text, int width)
{
    size_t columns = cli_text_columns(text, strlen(text));
    fputs(text, stdout);
    if (columns < (size_t)width)
        printf("%*s", width - (int)columns, "");
}

const char *cli_plural(size_t n)
{
    return n == 1 ? "" : "s";
}

const char *cli_safe(const char *s)
{
    return cli_safe_n(s, strlen(s));
}

const char *cli_safe_name(const ckpt_tensor_entry *e)
{
    return cli_safe_n(e->name, e->name_len);
}

char *cli_vformat(size_t *len, const char *fmt, va_list ap)
{
    char *text = NULL;
    size_t n = 0;
    FILE *mem = open_memstream(&text, &n);
    if (!mem)
        cli_out_of_memory();
    vfprintf(mem, fmt, ap);
    if (fclose(mem) != 0 || !text)
        cli_out_of_memory();
    if (len)
        *len = n;
    return text;
}

void cli_vprint_safe(FILE *out, const char *fmt, va_list ap)
{
    size_t len = 0;
    char *text = cli_vformat(&len, fmt, ap);
    fputs(cli_safe_n(text, len), out);
    free(text);
}

/* ---- JSON ---------------------------------------------------------------- */

json_object *cli_json_bytes(const void *bytes, size_t n)
{
    const unsigned char *p = bytes;
    unsigned char *latin;
    size_t k = 0;
    json_object *s;
    if (n > (size_t)INT32_MAX / 2)
        n = (size_t)INT32_MAX / 2;
    if (is_utf8(p, n))
        return json_object_new_string_len((const char *)p, (int)n);
    latin = cli_xmalloc(2 * n + 1);
    for (size_t i = 0; i < n; i++) {
        if (p[i] < 0x80) {
            latin[k++] = p[i];
        } else {
            latin[k++] = (unsigned char)(0xc0 | (p[i] >> 6));
            latin[k++] = (unsigned char)(0x80 | (p[i] & 0x3f));
        }
    }
    s = json_object_new_string_len((const char *)latin, (int)k);
    free(latin);
    return s;
}

json_object *cli_json_string(const char *s)
{
    return cli_json_bytes(s, strlen(s));
}

json_object *cli_json_name(const ckpt_tensor_entry *e)
{
    return cli_json_bytes(e->name, e->name_len);
}
