/*
 * A repeatable xorshift64 sequence for unit tests that want varied input
 * (random-looking but the same in every run, so a failure reproduces).
 */
#ifndef TEST_RNG_H
#define TEST_RNG_H

#include <stdint.h>

static uint64_t test_rng_state = 0x9e3779b97f4a7c15ull;

static inline uint64_t
test_rng(void)
{
	test_rng_state ^= test_rng_state << 13;
	test_rng_state ^= test_rng_state >> 7;
	test_rng_state ^= test_rng_state << 17;
	return test_rng_state;
}

#endif
