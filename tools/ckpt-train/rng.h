/* tools/ckpt-train/rng.h - xoshiro256** pseudo-random numbers: small,
 * fast, and with a state of four words that fits in a checkpoint. */
#ifndef CKPT_TRAIN_RNG_H
#define CKPT_TRAIN_RNG_H

#include <stdint.h>

typedef struct rng {
    uint64_t s[4];
} rng;

/* Seed through splitmix64, so any seed gives a good state. */
void rng_seed(rng *r, uint64_t seed);
uint64_t rng_next(rng *r);
/* Uniform in [0, 1). */
float rng_uniform(rng *r);
/* Standard normal (Box-Muller). */
float rng_normal(rng *r);
/* Uniform integer in [0, n). */
uint32_t rng_below(rng *r, uint32_t n);

#endif
