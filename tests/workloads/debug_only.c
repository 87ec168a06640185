// SPDX-License-Identifier: GPL-2.0-only
/* Known answer for separate debug files: all the work is in a static function, which a copy
 * stripped to .dynsym cannot name; its debug file (placed under a --debug-dir) can.
 * Usage: tp_debug_only [SECONDS] */
#include <stdio.h>
#include <unistd.h>

#include "workload.h"

__attribute__((noinline)) static void only_in_debug_file(double seconds)
{
	BURN_NS((uint64_t)(seconds * 1e9));
}

int main(int argc, char **argv)
{
	printf("%d\n", getpid());
	fflush(stdout);
	only_in_debug_file(arg_seconds(argc, argv, 1, 3));
	return 0;
}
