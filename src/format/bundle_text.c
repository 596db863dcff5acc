/* format/bundle_text.c - tensor names for messages and the byte-order swap
 * of records (see bundle_text.h). */
#include "format/bundle_text.h"

#include "ckpt/tensor.h"

#include <string.h>

const char *ckpt__show_name(ckpt__shown_name *s, const char *name, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        uint8_t c = (uint8_t)name[i];
        if (i == CKPT__NAME_SHOWN) {
            memcpy(s->text + o, "...", 3);
            o += 3;
            break;
        }
        if (c >= 0x20 && c < 0x7f && c != '\\') {
            s->text[o++] = (char)c;
        } else {
            s->text[o++] = '\\';
            s->text[o++] = 'x';
            s->text[o++] = hex[c >> 4];
            s->text[o++] = hex[c & 15];
        }
    }
    s->text[o] = '\0';
    return s->text;
}

const char *ckpt__show_shape(ckpt__shown_shape *s, const ckpt_shape *shape)
{
    ckpt_shape_format(s->text, sizeof(s->text), shape);
    return s->text;
}

size_t ckpt__record_word_width(int dtype)
{
    if (dtype == CKPT_DT_COMPLEX64)
        return 4;
    if (dtype == CKPT_DT_COMPLEX128)
        return 8;
    return ckpt_dtype_size(dtype);
}

void ckpt__record_swap_words(uint8_t *p, size_t n, size_t width)
{
    for (size_t i = 0; i + width <= n; i += width) {
        for (size_t a = 0, b = width - 1; a < b; a++, b--) {
            uint8_t t = p[i + a];
            p[i + a] = p[i + b];
            p[i + b] = t;
        }
    }
}

void ckpt__record_bools_to_host(uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = p[i] != 0;
}
