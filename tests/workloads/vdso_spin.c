// SPDX-License-Identifier: GPL-2.0-only
/* Known answer for the vDSO: calls clock_gettime back to back, so most samples have their leaf
 * in the vDSO. Usage: tp_vdso [SECONDS] */
#include <stdio.h>
#include <unistd.h>

#include "workload.h"

__attribute__((noinline)) void read_clocks(double seconds)
{
	uint64_t end = now_ns() + (uint64_t)(seconds * 1e9);

	while (now_ns() < end)
		;
}

int main(int argc, char **argv)
{
	printf("%d\n", getpid());
	fflush(stdout);
	read_clocks(arg_seconds(argc, argv, 1, 2));
	return 0;
}
