/* tests/tools/cli_json.c - see cli_json.h. */
#include "cli_json.h"

#include <string.h>

int cli_valid_utf8(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n;) {
        size_t len = p[i] < 0x80             ? 1
                     : (p[i] & 0xe0) == 0xc0 ? 2
                     : (p[i] & 0xf0) == 0xe0 ? 3
                     : (p[i] & 0xf8) == 0xf0 ? 4
                                             : 0;
        if (len == 0 || i + len > n)
            return 0;
        for (size_t k = 1; k < len; k++)
            if ((p[i + k] & 0xc0) != 0x80)
                return 0;
        i += len;
    }
    return 1;
}

/* The output as one JSON document: valid UTF-8, nothing after it but
 * white space. */
json_object *parse_json(const char *text)
{
    json_tokener *tok = json_tokener_new();
    size_t n = strlen(text), end;
    json_object *o;
    if (!cli_valid_utf8((const unsigned char *)text, n))
        fail_msg("JSON output is not UTF-8:\n%s", text);
    /* nothing a terminal acts on, raw: DEL, C1 controls (U+0080..U+009F),
     * line separators and direction marks (U+200E/F, U+2028..U+202E,
     * U+2066..U+2069) are \u-escaped */
    for (size_t i = 0; i < n; i++) {
        const unsigned char *p = (const unsigned char *)text + i;
        if (*p == 0x7f || (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) ||
            (p[0] == 0xe2 && p[1] == 0x80 &&
             ((p[2] >= 0x8e && p[2] <= 0x8f) ||
              (p[2] >= 0xa8 && p[2] <= 0xae))) ||
            (p[0] == 0xe2 && p[1] == 0x81 && p[2] >= 0xa6 && p[2] <= 0xa9))
            fail_msg("JSON output holds a raw terminal control at %zu:\n%s", i,
                     text);
    }
    assert_non_null(tok);
    o = json_tokener_parse_ex(tok, text, (int)n);
    end = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    if (!o)
        fail_msg("not JSON:\n%s", text);
    while (end < n && strchr(" \n\t\r", text[end]))
        end++;
    if (end != n)
        fail_msg("more than one JSON document:\n%s", text);
    return o;
}

json_object *jget(json_object *o, const char *key)
{
    json_object *v = NULL;
    if (!json_object_object_get_ex(o, key, &v))
        fail_msg("no \"%s\" in %s", key, json_object_to_json_string(o));
    return v;
}
