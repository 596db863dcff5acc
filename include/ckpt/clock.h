/* ckpt/clock.h - the injectable clock every timer, timestamp and duration
 * of the library goes through, so tests drive time instead of sleeping. */
#ifndef CKPT_CLOCK_H
#define CKPT_CLOCK_H

#include "common.h"
#include "errors.h" /* CKPT_EVERSION, refused clock versions */

CKPT_BEGIN_DECL

#define CKPT_CLOCK_VERSION 1

/** A clock. NULL members fall back to the system clock's. Every call
 *  that takes one (in options or as an argument) refuses a clock whose
 *  `version` is not 1 .. CKPT_CLOCK_VERSION with CKPT_EVERSION (a clock
 *  left zero-initialised, or built against a newer header), before any of
 *  its members is called. */
typedef struct ckpt_clock {
    int version; /**< CKPT_CLOCK_VERSION */
    void *payload;
    /** Seconds on a monotonic clock (intervals, timers, durations). */
    double (*monotonic)(void *payload);
    /** Seconds since the Unix epoch (checkpoint timestamps, retention). */
    double (*wall)(void *payload);
} ckpt_clock;

/** The system clock (CLOCK_MONOTONIC and CLOCK_REALTIME). */
CKPT_EXTERN(const ckpt_clock *) ckpt_clock_system(void);

/** Monotonic seconds from `clock` (NULL: the system clock). */
CKPT_EXTERN(double) ckpt_clock_monotonic(const ckpt_clock *clock);

/** Wall-clock seconds since the epoch from `clock` (NULL: the system). */
CKPT_EXTERN(double) ckpt_clock_wall(const ckpt_clock *clock);

CKPT_END_DECL

#endif
