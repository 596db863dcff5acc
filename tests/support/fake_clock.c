/* tests/support/fake_clock.c - the test-driven clock of fake_clock.h. */
#include "support/fake_clock.h"

#include <string.h>

static double fake_monotonic(void *payload)
{
    return ((const fake_clock *)payload)->now;
}

static double fake_wall(void *payload)
{
    const fake_clock *fc = payload;
    return fc->now + fc->wall_offset;
}

void fake_clock_init(fake_clock *fc, double now, double wall)
{
    memset(fc, 0, sizeof(*fc));
    fc->clock.version = CKPT_CLOCK_VERSION;
    fc->clock.payload = fc;
    fc->clock.monotonic = fake_monotonic;
    fc->clock.wall = fake_wall;
    fc->now = now;
    fc->wall_offset = wall - now;
}
