// SPDX-License-Identifier: GPL-2.0-only
/* Known answer: each round spends 3 ms in hot_function and 1 ms in cold_function (time-based,
 * so the split is 75/25 whatever the code generation). Usage: tp_hotcold [SECONDS] */
#include <stdio.h>
#include <unistd.h>

#include "workload.h"

__attribute__((noinline)) void hot_function(void)
{
	BURN_NS(3000000);
}

__attribute__((noinline)) void cold_function(void)
{
	BURN_NS(1000000);
}

__attribute__((noinline)) void run_rounds(double seconds)
{
	uint64_t end = now_ns() + (uint64_t)(seconds * 1e9);

	while (now_ns() < end) {
		hot_function();
		cold_function();
	}
}

int main(int argc, char **argv)
{
	printf("%d\n", getpid());
	fflush(stdout);
	run_rounds(arg_seconds(argc, argv, 1, 3));
	return 0;
}
