/* format/bundle_text.c - tensor names for messages and the byte-order swap
 * of records (see bundle_text.h). */
#include "format/bundle_text.h"

#include "ckpt/bundle.h"
#include "ckpt/tensor.h"
#include "common/internal.h"
#include "format/bundle_slices.h"

#include <stdio.h>
#include <string.h>

/* A piece's slice key (a 0 byte, the tensor's name, its extents) as
 * "<name> (piece <spec>)" in `s`; 0 when `key` does not decode as one. */
static int show_slice_key(ckpt__shown_name *s, const char *key, size_t n)
{
    ckpt__saved_error saved;
    ckpt_buf name = CKPT_BUF_INIT, spec = CKPT_BUF_INIT;
    ckpt__tensor_slice sl;
    int ok;
    ckpt__error_save(&saved); /* shown in a message being made */
    ok = ckpt__slice_key_decode(&name, &sl, key, n) == 0 &&
         ckpt__tensor_slice_format(&spec, &sl) == 0 && name.size > 0 &&
         name.ptr[0] != '\0';
    if (ok) {
        ckpt__shown_name plain;
        ckpt__show_name(&plain, name.ptr, name.size);
        /* a long spec is cut: the text is for a message */
        if (snprintf(s->text, sizeof(s->text), "%s (piece %s)", plain.text,
                     spec.ptr) < 0)
            ok = 0;
    }
    ckpt_buf_dispose(&name);
    ckpt_buf_dispose(&spec);
    ckpt__error_restore(&saved);
    return ok;
}

const char *ckpt__show_name(ckpt__shown_name *s, const char *name, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    if (n > 1 && name[0] == '\0' && show_slice_key(s, name, n))
        return s->text;
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

const char *ckpt_tensor_entry_shown_name(char *out, size_t cap,
                                         const ckpt_tensor_entry *e)
{
    ckpt__shown_name s;
    if (!out || cap == 0)
        return out;
    out[0] = '\0';
    if (e && e->name)
        snprintf(out, cap, "%s", ckpt__show_name(&s, e->name, e->name_len));
    return out;
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
