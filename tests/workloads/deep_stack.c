// SPDX-License-Identifier: GPL-2.0-only
/* Known answer: spins at the bottom of a recursion DEPTH calls deep (recurse <- recurse <- ...
 * <- main), deeper than the 127 frames a stack holds, so profiles must end it in an explicit
 * truncation frame. Built twice: with and without frame pointers. Usage: tp_deep[_fp] SECONDS
 * DEPTH */
#include <stdio.h>
#include <unistd.h>

#include "workload.h"

__attribute__((noinline)) void deep_spin(double seconds)
{
	BURN_NS((uint64_t)(seconds * 1e9));
}

__attribute__((noinline)) int recurse(int depth, double seconds)
{
	volatile int keep = depth;

	if (depth <= 1)
		deep_spin(seconds);
	else
		recurse(depth - 1, seconds);
	return keep; /* work after the call: no tail call */
}

int main(int argc, char **argv)
{
	printf("%d\n", getpid());
	fflush(stdout);
	recurse(argc > 2 ? atoi(argv[2]) : 200, arg_seconds(argc, argv, 1, 2));
	return 0;
}
