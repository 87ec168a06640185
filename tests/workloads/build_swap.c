// SPDX-License-Identifier: GPL-2.0-only
/* Known answer for executables replaced while they run: built twice, as tp_build_old (spins in
 * old_build_spin) and tp_build_new (new_build_spin). It sleeps first, so the test can delete and
 * replace its file before the first sample. Usage: tp_build_old SLEEP_SECONDS SPIN_SECONDS */
#include <stdio.h>
#include <unistd.h>

#include "workload.h"

#ifdef BUILD_NEW
#define SPIN new_build_spin
#else
#define SPIN old_build_spin
#endif

__attribute__((noinline)) void SPIN(double seconds)
{
	BURN_NS((uint64_t)(seconds * 1e9));
}

int main(int argc, char **argv)
{
	printf("%d\n", getpid());
	fflush(stdout);
	usleep((useconds_t)(arg_seconds(argc, argv, 1, 0.5) * 1e6));
	SPIN(arg_seconds(argc, argv, 2, 2));
	return 0;
}
