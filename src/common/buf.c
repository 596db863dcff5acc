/* common/buf.c - growable byte buffers (ckpt_buf), always NUL-terminated. */
#include "internal.h"

#include <stdio.h>
#include <string.h>

void ckpt_buf_dispose(ckpt_buf *buf)
{
    if (!buf)
        return;
    ckpt__free(buf->ptr);
    buf->ptr = NULL;
    buf->size = 0;
    buf->asize = 0;
}

/* Room for `extra` more bytes and the NUL. A buffer that holds no memory
 * yet gets exactly that (at least 64 bytes), so that a record read whole
 * into a fresh buffer takes its own size, not up to twice it; one that
 * grows doubles, so that appends cost amortized O(1). */
int ckpt__buf_grow(ckpt_buf *b, size_t extra)
{
    size_t need, cap;
    char *p;
    if (__builtin_add_overflow(b->size, extra, &need) ||
        __builtin_add_overflow(need, (size_t)1, &need))
        return ckpt__error_oom();
    if (need <= b->asize)
        return 0;
    cap = b->asize < 64 ? 64 : b->asize;
    if (b->asize == 0 && need > cap)
        cap = need;
    while (cap < need) {
        if (cap > SIZE_MAX / 2) {
            cap = need;
            break;
        }
        cap *= 2;
    }
    p = ckpt__realloc(b->ptr, cap);
    if (!p)
        return ckpt__error_oom();
    if (!b->ptr)
        p[0] = '\0';
    b->ptr = p;
    b->asize = cap;
    return 0;
}

int ckpt__buf_put(ckpt_buf *b, const void *data, size_t n)
{
    int err = ckpt__buf_grow(b, n);
    if (err < 0)
        return err;
    if (n)
        memcpy(b->ptr + b->size, data, n);
    b->size += n;
    b->ptr[b->size] = '\0';
    return 0;
}

int ckpt__buf_puts(ckpt_buf *b, const char *s)
{
    return ckpt__buf_put(b, s, strlen(s));
}

int ckpt__buf_printf(ckpt_buf *b, const char *fmt, ...)
{
    va_list ap;
    int n;
    int err;
    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return ckpt__error(CKPT_EINVAL, "bad format string");
    err = ckpt__buf_grow(b, (size_t)n);
    if (err < 0)
        return err;
    va_start(ap, fmt);
    vsnprintf(b->ptr + b->size, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->size += (size_t)n;
    return 0;
}

int ckpt__buf_set(ckpt_buf *b, const char *s)
{
    ckpt__buf_clear(b);
    return ckpt__buf_puts(b, s);
}

void ckpt__buf_clear(ckpt_buf *b)
{
    b->size = 0;
    if (b->ptr)
        b->ptr[0] = '\0';
}

char *ckpt__buf_detach(ckpt_buf *b)
{
    char *p = b->ptr;
    if (!p)
        p = ckpt__strdup("");
    b->ptr = NULL;
    b->size = 0;
    b->asize = 0;
    return p;
}
