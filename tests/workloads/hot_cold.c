// SPDX-License-Identifier: GPL-2.0-only
/* Known answer: each round spends 3 parts of its time in hot_function and 1 in cold_function
 * (time-based, so the split is 75/25 whatever the code generation). A round lasts 2-6 ms, its
 * length drawn at random: rounds of one fixed length can lock in step with a 99 Hz sampling
 * timer (an emulated guest's is coarse) and put most samples in one function. Usage:
 * tp_hotcold [SECONDS] */
#include <stdio.h>
#include <unistd.h>

#include "workload.h"

__attribute__((noinline)) void hot_function(uint64_t ns)
{
	BURN_NS(ns);
}

__attribute__((noinline)) void cold_function(uint64_t ns)
{
	BURN_NS(ns);
}

__attribute__((noinline)) void run_rounds(double seconds)
{
	uint64_t end = now_ns() + (uint64_t)(seconds * 1e9);
	uint64_t r = now_ns() ^ ((uint64_t)getpid() << 32);

	while (now_ns() < end) {
		/* a round of 4 ms scaled by 0.5-1.5 (xorshift64) */
		uint64_t part;

		r ^= r << 13;
		r ^= r >> 7;
		r ^= r << 17;
		part = 500000 + (r >> 11) % 1000000;
		hot_function(3 * part);
		cold_function(part);
	}
}

int main(int argc, char **argv)
{
	printf("%d\n", getpid());
	fflush(stdout);
	run_rounds(arg_seconds(argc, argv, 1, 3));
	return 0;
}
