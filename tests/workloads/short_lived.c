// SPDX-License-Identifier: GPL-2.0-only
/* Known answer: a process that lives about 200 ms, all of it in short_lived_spin.
 * Usage: tp_short [SECONDS] */
#include <stdio.h>
#include <unistd.h>

#include "workload.h"

__attribute__((noinline)) void short_lived_spin(double seconds)
{
	BURN_NS((uint64_t)(seconds * 1e9));
}

int main(int argc, char **argv)
{
	printf("%d\n", getpid());
	fflush(stdout);
	short_lived_spin(arg_seconds(argc, argv, 1, 0.2));
	return 0;
}
