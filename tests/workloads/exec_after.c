// SPDX-License-Identifier: GPL-2.0-only
/* Known answer: the program exec'd by tp_exec_a; spins in after_exec_spin.
 * Usage: tp_exec_b [SECONDS] */
#include "workload.h"

__attribute__((noinline)) void after_exec_spin(double seconds)
{
	BURN_NS((uint64_t)(seconds * 1e9));
}

int main(int argc, char **argv)
{
	after_exec_spin(arg_seconds(argc, argv, 1, 1));
	return 0;
}
