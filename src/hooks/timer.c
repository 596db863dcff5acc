/* hooks/timer.c - TensorFlow's SecondOrStepTimer and NeverTriggerTimer
 * (docs/behaviour.md B1-B13): triggers every N steps or S seconds, relative
 * to the last recorded trigger, never twice for the same step, with no
 * catch-up after a jump; a clock that goes back triggers once and
 * re-anchors. Time comes from the injectable monotonic clock. */
#include "ckpt/hooks.h"
#include "common/internal.h"
#include "hooks/basic_hooks_internal.h"

#include <string.h>

int ckpt__timer_init_named(ckpt_timer *t, double every_secs,
                           int64_t every_steps, const ckpt_clock *clock,
                           const char *who, const char *secs_name,
                           const char *steps_name)
{
    memset(t, 0, sizeof(*t));
    t->clock = clock;
    if (ckpt__clock_check(clock, who) < 0)
        return ckpt_error_last()->code;
    /* 0 means unset; a negative or NaN interval is rejected (B3, a
     * deliberate deviation: TF accepts 0 and negative values). */
    if (every_secs < 0 || every_secs != every_secs || every_steps < 0)
        return ckpt__error(CKPT_EINVAL,
                           "%s: intervals must be positive (%s %g, %s %lld; "
                           "0 leaves one unset)",
                           who, secs_name, every_secs, steps_name,
                           (long long)every_steps);
    if (every_secs > 0 && every_steps > 0)
        return ckpt__error(CKPT_EINVAL,
                           "%s: both %s (%g) and %s (%lld) are set; give "
                           "exactly one",
                           who, secs_name, every_secs, steps_name,
                           (long long)every_steps);
    if (every_secs == 0 && every_steps == 0)
        return ckpt__error(CKPT_EINVAL, "%s: neither %s nor %s is set", who,
                           secs_name, steps_name);
    t->every_secs = every_secs;
    t->every_steps = every_steps;
    return 0;
}

int ckpt_timer_init(ckpt_timer *t, double every_secs, int64_t every_steps,
                    const ckpt_clock *clock)
{
    CKPT__CHECK_ARG(t);
    return ckpt__timer_init_named(t, every_secs, every_steps, clock, "timer",
                                  "every_secs", "every_steps");
}

void ckpt_timer_init_never(ckpt_timer *t)
{
    if (!t)
        return;
    memset(t, 0, sizeof(*t));
    t->never = 1;
}

int ckpt_timer_should_trigger(const ckpt_timer *t, int64_t step)
{
    if (!t || t->never)
        return 0;
    if (!t->has_last)
        return 1;
    if (step == t->last_step)
        return 0;
    if (t->every_secs > 0) {
        double now = ckpt_clock_monotonic(t->clock);
        /* A clock gone back before the last update (a caller's clock that
         * is not monotonic) triggers once; the update re-anchors there
         * (B8), rather than waiting for the clock to come back. */
        return now < t->last_time || now >= t->last_time + t->every_secs;
    }
    /* step >= last_step + every_steps, without overflowing */
    if (step < t->last_step)
        return 0;
    return (uint64_t)step - (uint64_t)t->last_step >= (uint64_t)t->every_steps;
}

int ckpt_timer_update(ckpt_timer *t, int64_t step, double *elapsed_secs,
                      int64_t *elapsed_steps)
{
    double now;
    int had_last;
    if (elapsed_secs)
        *elapsed_secs = 0.0;
    if (elapsed_steps)
        *elapsed_steps = 0;
    if (!t || t->never)
        return 0;
    now = ckpt_clock_monotonic(t->clock);
    had_last = t->has_last;
    if (had_last) {
        if (elapsed_secs)
            *elapsed_secs = now - t->last_time;
        if (elapsed_steps)
            *elapsed_steps = (int64_t)((uint64_t)step - (uint64_t)t->last_step);
    }
    t->has_last = 1;
    t->last_step = step;
    t->last_time = now;
    return had_last;
}

int ckpt_timer_last_step(const ckpt_timer *t, int64_t *out)
{
    if (!t || !t->has_last)
        return 0;
    if (out)
        *out = t->last_step;
    return 1;
}

void ckpt_timer_reset(ckpt_timer *t)
{
    if (!t)
        return;
    t->has_last = 0;
    t->last_step = 0;
    t->last_time = 0.0;
}
