/* common/printable.c - text made safe to show on a terminal: the library's
 * messages (errors and log lines quote paths from state files and names
 * from checkpoints, which are data) and ckpt_text_printable(_n), which
 * the ckpt tool's text output uses too. Printable
 * ASCII and valid UTF-8 of printable characters stay; every other byte
 * (C0 controls such as ESC, newline and NUL, DEL, C1 controls, line
 * separators and direction marks, bytes that are not UTF-8) becomes \xHH;
 * and ckpt__message_find, whether such a message shows a given path. */
#include "ckpt/log.h"
#include "internal.h"

#include <string.h>

/* Length of the UTF-8 sequence at p[0..n) and its code point, or 0 when
 * it is not a valid, shortest-form sequence. */
static size_t utf8_sequence(const unsigned char *p, size_t n, uint32_t *cp)
{
    size_t len;
    uint32_t c;
    if (p[0] < 0x80) {
        *cp = p[0];
        return 1;
    }
    if (p[0] >= 0xc2 && p[0] <= 0xdf) {
        len = 2;
        c = p[0] & 0x1f;
    } else if (p[0] >= 0xe0 && p[0] <= 0xef) {
        len = 3;
        c = p[0] & 0x0f;
    } else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
        len = 4;
        c = p[0] & 0x07;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        c = (c << 6) | (p[i] & 0x3f);
    }
    if ((len == 3 && c < 0x800) ||
        (len == 4 && (c < 0x10000 || c > 0x10ffff)) ||
        (c >= 0xd800 && c <= 0xdfff))
        return 0;
    *cp = c;
    return len;
}

/* Code points a terminal acts on rather than shows. */
static int acts_on_terminal(uint32_t cp)
{
    return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp == 0x200e ||
           cp == 0x200f || (cp >= 0x2028 && cp <= 0x202e) ||
           (cp >= 0x2066 && cp <= 0x2069);
}

size_t ckpt_text_printable(char *out, size_t cap, const char *text)
{
    return ckpt_text_printable_n(out, cap, text, text ? strlen(text) : 0);
}

size_t ckpt_text_printable_n(char *out, size_t cap, const void *bytes, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = bytes;
    size_t i = 0, o = 0;
    if (!out || cap == 0)
        return 0;
    while (i < n) {
        uint32_t cp = 0;
        size_t len = utf8_sequence(p + i, n - i, &cp);
        size_t take = len ? len : 1;
        int escape = len == 0 || acts_on_terminal(cp);
        size_t need = escape ? 4 * take : take;
        if (o + need >= cap)
            break; /* a sequence is never cut */
        for (size_t k = 0; k < take; k++) {
            if (escape) {
                out[o++] = '\\';
                out[o++] = 'x';
                out[o++] = hex[p[i + k] >> 4];
                out[o++] = hex[p[i + k] & 15];
            } else {
                out[o++] = (char)p[i + k];
            }
        }
        i += take;
    }
    out[o] = '\0';
    return o;
}

void ckpt__make_printable(char *s, size_t cap)
{
    char copy[CKPT__ERROR_MESSAGE_MAX];
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strnlen(s, cap), i = 0;
    /* most messages need nothing: leave them untouched */
    while (i < n) {
        uint32_t cp = 0;
        size_t len = utf8_sequence(p + i, n - i, &cp);
        if (len == 0 || acts_on_terminal(cp))
            break;
        i += len;
    }
    if (i == n)
        return;
    if (n >= sizeof(copy))
        n = sizeof(copy) - 1;
    memcpy(copy, s, n);
    copy[n] = '\0';
    ckpt_text_printable(s, cap, copy);
}

/* The length of the start of `msg` that shows t[0..n) by the rule above,
 * or 0 when msg does not start with it. */
static size_t shown_at(const char *msg, const unsigned char *t, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    size_t i = 0, o = 0;
    while (i < n) {
        uint32_t cp = 0;
        size_t len = utf8_sequence(t + i, n - i, &cp);
        size_t take = len ? len : 1;
        int escape = len == 0 || acts_on_terminal(cp);
        for (size_t k = 0; k < take; k++) {
            unsigned char c = t[i + k];
            /* msg ends in '\0', which matches no byte of t: every
             * comparison stops there */
            if (!escape && (unsigned char)msg[o] != c)
                return 0;
            if (escape &&
                (msg[o] != '\\' || msg[o + 1] != 'x' ||
                 msg[o + 2] != hex[c >> 4] || msg[o + 3] != hex[c & 15]))
                return 0;
            o += escape ? 4 : 1;
        }
        i += take;
    }
    return o;
}

const char *ckpt__message_find(const char *msg, const char *text,
                               size_t *shown_len)
{
    size_t n = text ? strlen(text) : 0, len = 0;
    const char *p = msg;
    if (!msg || !text)
        return NULL;
    if (n > 0)
        for (; *p; p++)
            if ((len = shown_at(p, (const unsigned char *)text, n)) > 0)
                break;
    if (n > 0 && !*p)
        return NULL;
    if (shown_len)
        *shown_len = len;
    return p;
}

int ckpt__message_names(const char *msg, const char *text)
{
    return ckpt__message_find(msg, text, NULL) != NULL;
}
