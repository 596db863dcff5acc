/* tests/support/fake_clock.h - a ckpt_clock the test drives, so timers,
 * timestamps and retention are tested without sleeping. Part of the
 * testing library (ckpt_testing).
 *
 * monotonic() returns `now`; wall() returns `now + wall_offset`, so moving
 * `now` moves both clocks together, as real time would. Hand `&fc.clock`
 * to the library and assign or add to `now` between calls. `now` is
 * atomic (plain `=` and `+=` on it are atomic), since a saver's writer
 * thread reads its clock during an async save; moving it while a save
 * runs changes what that save measures, not whether the test is sound. */
#ifndef CKPT_TESTS_SUPPORT_FAKE_CLOCK_H
#define CKPT_TESTS_SUPPORT_FAKE_CLOCK_H

#include "ckpt/clock.h"

typedef struct fake_clock {
    ckpt_clock clock;   /* hand &clock to the library */
    _Atomic double now; /* monotonic seconds (atomic: a saver's writer
                           thread reads the clock while the test moves it) */
    double wall_offset; /* wall seconds minus monotonic seconds */
} fake_clock;

/* Start at monotonic `now` and wall-clock `wall` (seconds since the epoch;
 * pass `now` again for a clock whose two readings agree). */
void fake_clock_init(fake_clock *fc, double now, double wall);

#endif
