/* common/errors.c - error code descriptions, the thread-local last error,
 * and saving and restoring it around cleanup. Messages are formatted into a
 * fixed per-thread buffer, so recording an error never allocates and never
 * fails. */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define MESSAGE_MAX CKPT__ERROR_MESSAGE_MAX

static _Thread_local char last_message[MESSAGE_MAX];
/* The context being put in front of last_message. */
static _Thread_local char context[MESSAGE_MAX];
static _Thread_local ckpt_error last_error;

struct code_info {
    int code;
    const char *name;
    const char *text;
};

static const struct code_info code_table[] = {
    {CKPT_OK, "CKPT_OK", "no error"},
    {CKPT_ERROR, "CKPT_ERROR", "error"},
    {CKPT_ENOMEM, "CKPT_ENOMEM", "out of memory"},
    {CKPT_EINVAL, "CKPT_EINVAL", "invalid argument"},
    {CKPT_EIO, "CKPT_EIO", "input/output error"},
    {CKPT_ENOSPC, "CKPT_ENOSPC", "no space left on device"},
    {CKPT_ENOTFOUND, "CKPT_ENOTFOUND", "not found"},
    {CKPT_EEXISTS, "CKPT_EEXISTS", "already exists"},
    {CKPT_ECORRUPT, "CKPT_ECORRUPT", "data is corrupt"},
    {CKPT_EVERSION, "CKPT_EVERSION", "unsupported version"},
    {CKPT_EBUSY, "CKPT_EBUSY", "busy (a save in flight, or held elsewhere)"},
    {CKPT_ECANCELED, "CKPT_ECANCELED", "canceled"},
    {CKPT_EUSER, "CKPT_EUSER", "a user callback failed"},
    {CKPT_ENOTSUP, "CKPT_ENOTSUP", "not supported"},
    {CKPT_ESTATE, "CKPT_ESTATE", "call made in the wrong state"},
    {CKPT_EOUT_OF_RANGE, "CKPT_EOUT_OF_RANGE", "out of range"},
    {CKPT_EABORTED, "CKPT_EABORTED", "aborted"},
    {CKPT_EUNAVAILABLE, "CKPT_EUNAVAILABLE", "unavailable"},
    {CKPT_EACCES, "CKPT_EACCES", "permission denied"},
    {CKPT_ETIMEDOUT, "CKPT_ETIMEDOUT", "timed out"},
    {CKPT_ESTOPITER, "CKPT_ESTOPITER", "stop requested by the step"},
};

static const struct code_info *find_code(int code)
{
    for (size_t i = 0; i < CKPT__ARRAY_SIZE(code_table); i++)
        if (code_table[i].code == code)
            return &code_table[i];
    return NULL;
}

const char *ckpt_strerror(int code)
{
    const struct code_info *info = find_code(code);
    return info ? info->text : "unknown error code";
}

const char *ckpt_error_name(int code)
{
    const struct code_info *info = find_code(code);
    return info ? info->name : "CKPT_UNKNOWN";
}

const ckpt_error *ckpt_error_last(void)
{
    if (last_error.code == 0) {
        last_error.message = "no error";
        return &last_error;
    }
    last_error.message = last_message;
    return &last_error;
}

void ckpt_error_clear(void)
{
    last_error.code = 0;
    last_message[0] = '\0';
}

/* Keep the start and the end of the `len` bytes of `full` in
 * last_message around "... (N bytes cut) ...": a message longer than the
 * room (long paths in it) still ends with what happened. */
static void keep_both_ends(const char *full, size_t len)
{
    const size_t room = MESSAGE_MAX - 1, tail = room / 4;
    const size_t head = room - tail - 48; /* 48: the mark's room */
    char mark[48];
    size_t m = (size_t)snprintf(mark, sizeof(mark), "... (%zu bytes cut) ...",
                                len - head - tail);
    memcpy(last_message, full, head);
    memcpy(last_message + head, mark, m);
    memcpy(last_message + head + m, full + len - tail, tail);
    last_message[head + m + tail] = '\0';
}

int ckpt__error_v(int code, const char *fmt, va_list ap)
{
    va_list again;
    int n;
    va_copy(again, ap);
    n = vsnprintf(last_message, sizeof(last_message), fmt, ap);
    if (n >= (int)sizeof(last_message)) {
        /* cut in the middle, not at the end (without the memory for the
         * whole message: at the end, as vsnprintf left it) */
        char *full = ckpt__malloc((size_t)n + 1);
        if (full) {
            vsnprintf(full, (size_t)n + 1, fmt, again);
            keep_both_ends(full, (size_t)n);
            ckpt__free(full);
        }
    }
    va_end(again);
    ckpt__make_printable(last_message, sizeof(last_message));
    last_error.code = code;
    return code;
}

int ckpt_error_set(int code, const char *fmt, ...)
{
    va_list ap;
    if (code >= 0)
        code = CKPT_EUSER;
    if (!fmt)
        return ckpt__error(code, "%s", ckpt_strerror(code));
    va_start(ap, fmt);
    ckpt__error_v(code, fmt, ap);
    va_end(ap);
    return code;
}

int ckpt__error(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ckpt__error_v(code, fmt, ap);
    va_end(ap);
    return code;
}

int ckpt__code_from_errno(int err)
{
    switch (err) {
    case ENOENT:
    case ENOTDIR:
        return CKPT_ENOTFOUND;
    case ENOSPC:
#ifdef EDQUOT
    case EDQUOT:
#endif
        return CKPT_ENOSPC;
    case EACCES:
    case EPERM:
    case EROFS:
        return CKPT_EACCES;
    case EEXIST:
        return CKPT_EEXISTS;
    case ENOMEM:
    case EMFILE: /* out of file descriptors: a resource, not the disk */
    case ENFILE:
        return CKPT_ENOMEM;
    case EINVAL:
        return CKPT_EINVAL;
    default:
        return CKPT_EIO;
    }
}

/* Make last_message "<head>: <last_message>". The message after the
 * separator is kept whole unless it alone takes more than three quarters
 * of the room (then its start gives way, marked "..."); a head that does
 * not fit in the rest keeps its start and end around a "...". */
static void prepend(const char *head, size_t hlen)
{
    static const char dots[] = "...";
    const size_t room = MESSAGE_MAX - 1, sep = 2, ndots = 3;
    size_t tlen = strnlen(last_message, room);
    size_t tkeep = tlen, tdots = 0, hroom, hfirst = hlen, hlast = 0, o;
    if (tkeep > room / 4 * 3) {
        tkeep = room / 4 * 3 - ndots;
        tdots = ndots;
    }
    hroom = room - sep - tdots - tkeep;
    if (hlen > hroom) {
        hfirst = (hroom - ndots) / 2;
        hlast = hroom - ndots - hfirst;
    }
    o = hfirst + (hlast ? ndots + hlast : 0) + sep + tdots;
    memmove(last_message + o, last_message + (tlen - tkeep), tkeep);
    last_message[o + tkeep] = '\0';
    memcpy(last_message, head, hfirst);
    o = hfirst;
    if (hlast) {
        memcpy(last_message + o, dots, ndots);
        memcpy(last_message + o + ndots, head + hlen - hlast, hlast);
        o += ndots + hlast;
    }
    memcpy(last_message + o, ": ", sep);
    if (tdots)
        memcpy(last_message + o + sep, dots, ndots);
}

/* Format the context into `context`; returns its length. */
static size_t format_context(const char *fmt, va_list ap)
{
    int n = vsnprintf(context, sizeof(context), fmt, ap);
    if (n < 0)
        n = 0;
    return (size_t)n < sizeof(context) ? (size_t)n : sizeof(context) - 1;
}

int ckpt__error_errno(int err, const char *fmt, ...)
{
    va_list ap;
    int code = ckpt__code_from_errno(err);
    size_t hlen;
    va_start(ap, fmt);
    hlen = format_context(fmt, ap);
    va_end(ap);
    snprintf(last_message, sizeof(last_message), "%s", strerror(err));
    prepend(context, hlen);
    ckpt__make_printable(last_message, sizeof(last_message));
    last_error.code = code;
    return code;
}

int ckpt__error_prefix(int code, const char *fmt, ...)
{
    va_list ap;
    size_t hlen;
    va_start(ap, fmt);
    hlen = format_context(fmt, ap);
    va_end(ap);
    if (last_error.code == 0)
        snprintf(last_message, sizeof(last_message), "%s", ckpt_strerror(code));
    prepend(context, hlen);
    ckpt__make_printable(last_message, sizeof(last_message));
    last_error.code = code;
    return code;
}

int ckpt__error_recode(int code)
{
    last_error.code = code;
    return code;
}

int ckpt__error_callback(int rc, const char *fmt, ...)
{
    char what[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    if (rc < 0 && last_error.code == rc) /* the callback's own message */
        return ckpt__error_prefix(CKPT_EUSER, "%s", what);
    return ckpt__error(CKPT_EUSER, "%s (%d)", what, rc);
}

int ckpt__error_oom(void)
{
    return ckpt__error(CKPT_ENOMEM, "out of memory");
}

int ckpt__error_null_arg(const char *function, const char *argument)
{
    return ckpt__error(CKPT_EINVAL, "%s: %s is NULL", function, argument);
}

void ckpt__error_save(ckpt__saved_error *saved)
{
    saved->code = last_error.code;
    if (last_error.code == 0)
        saved->message[0] = '\0';
    else
        snprintf(saved->message, sizeof(saved->message), "%s", last_message);
}

int ckpt__error_restore(const ckpt__saved_error *saved)
{
    if (saved->code == 0) {
        ckpt_error_clear();
        return 0;
    }
    snprintf(last_message, sizeof(last_message), "%s", saved->message);
    last_error.code = saved->code;
    return saved->code;
}
