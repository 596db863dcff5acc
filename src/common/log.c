/* common/log.c - formatting a log line for a ckpt_log_fn (levels below the
 * minimum dropped, 0 meaning the default INFO), level names, and the
 * stderr logger used when a hook or session is given no callback. */
#include "ckpt/log.h"
#include "internal.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

int ckpt__log_min_level(int level)
{
    return level == CKPT_LOG_DEFAULT ? CKPT_LOG_INFO : level;
}

void ckpt__logv(ckpt_log_fn fn, void *payload, int min_level, int level,
                const char *fmt, va_list ap)
{
    char line[1024];
    if (!fn || level < ckpt__log_min_level(min_level) || level >= CKPT_LOG_OFF)
        return;
    vsnprintf(line, sizeof(line), fmt, ap);
    ckpt__make_printable(line, sizeof(line));
    fn(level, line, payload);
}

void ckpt__log(ckpt_log_fn fn, void *payload, int min_level, int level,
               const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ckpt__logv(fn, payload, min_level, level, fmt, ap);
    va_end(ap);
}

const char *ckpt_log_level_name(int level)
{
    switch (level) {
    case CKPT_LOG_DEBUG:
        return "debug";
    case CKPT_LOG_INFO:
        return "info";
    case CKPT_LOG_WARN:
        return "warn";
    case CKPT_LOG_ERROR:
        return "error";
    case CKPT_LOG_DEFAULT:
        return "default";
    case CKPT_LOG_OFF:
        return "off";
    default:
        return "unknown";
    }
}

void ckpt_log_stderr(int level, const char *message, void *payload)
{
    char line[1200];
    int n;
    (void)payload;
    n = snprintf(line, sizeof(line), "ckpt: %s: %s\n",
                 ckpt_log_level_name(level), message ? message : "");
    if (n < 0)
        return;
    if ((size_t)n >= sizeof(line)) {
        n = (int)sizeof(line) - 1;
        line[n - 1] = '\n';
    }
    /* One write per line; a failed write to stderr has nowhere to go. A
     * stderr pipe whose reader went away (| tee killed) fails with EPIPE
     * rather than SIGPIPE ending the application from a log line. */
    if (ckpt__write_no_signal(STDERR_FILENO, line, (size_t)n, SIGPIPE, EPIPE) <
        0)
        return;
}
