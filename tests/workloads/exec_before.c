// SPDX-License-Identifier: GPL-2.0-only
/* Known answer: spins in before_exec_spin, then execs another program under the same pid.
 * Usage: tp_exec_a SECONDS PROGRAM [ARGS...] */
#include <stdio.h>
#include <unistd.h>

#include "workload.h"

__attribute__((noinline)) void before_exec_spin(double seconds)
{
	BURN_NS((uint64_t)(seconds * 1e9));
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: tp_exec_a SECONDS PROGRAM [ARGS...]\n");
		return 2;
	}
	printf("%d\n", getpid());
	fflush(stdout);
	before_exec_spin(arg_seconds(argc, argv, 1, 1));
	execv(argv[2], argv + 2);
	perror("execv");
	return 1;
}
