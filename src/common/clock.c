/* common/clock.c - the system clock and the NULL-tolerant accessors of
 * ckpt_clock; log level names and the helper that formats a log line for
 * a ckpt_log_fn. */
#include "ckpt/clock.h"
#include "ckpt/log.h"
#include "internal.h"

#include <stdio.h>

#include <time.h>

static double system_monotonic(void *payload)
{
    struct timespec ts;
    (void)payload;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double system_wall(void *payload)
{
    struct timespec ts;
    (void)payload;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const ckpt_clock system_clock = {CKPT_CLOCK_VERSION, NULL,
                                        system_monotonic, system_wall};

const ckpt_clock *ckpt_clock_system(void)
{
    return &system_clock;
}

double ckpt_clock_monotonic(const ckpt_clock *clock)
{
    if (clock && clock->monotonic)
        return clock->monotonic(clock->payload);
    return system_monotonic(NULL);
}

double ckpt_clock_wall(const ckpt_clock *clock)
{
    if (clock && clock->wall)
        return clock->wall(clock->payload);
    return system_wall(NULL);
}

void ckpt__logv(ckpt_log_fn fn, void *payload, int min_level, int level,
                const char *fmt, va_list ap)
{
    char line[1024];
    if (!fn || level < min_level)
        return;
    vsnprintf(line, sizeof(line), fmt, ap);
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
    default:
        return "error";
    }
}
