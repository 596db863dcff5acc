/* common/clock.c - the system clock, the NULL-tolerant accessors of
 * ckpt_clock, the check of a caller's clock, and the monotonic seconds
 * the library's own measurements time with (ckpt__seconds_now), and the
 * calling thread's CPU seconds (ckpt__thread_seconds_now). */
#include "ckpt/clock.h"
#include "internal.h"

#include <time.h>

static double system_monotonic(void *payload)
{
    struct timespec ts;
    (void)payload;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double ckpt__seconds_now(void)
{
    return system_monotonic(NULL);
}

double ckpt__thread_seconds_now(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
        return ckpt__seconds_now();
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

int ckpt__clock_check(const ckpt_clock *clock, const char *what)
{
    if (!clock || (clock->version >= 1 && clock->version <= CKPT_CLOCK_VERSION))
        return 0;
    return ckpt__error(CKPT_EVERSION,
                       "%s: ckpt_clock version %d is not one this library "
                       "knows (1 to %d; set it to CKPT_CLOCK_VERSION)",
                       what, clock->version, CKPT_CLOCK_VERSION);
}
