// SPDX-License-Identifier: GPL-2.0-only
/* A library that tp_dlopen loads at run time, built without frame pointers: its frames are
 * walked only once the unwinder has rescanned the process's maps. */
#include <unistd.h>

#include "workload.h"

__attribute__((noinline)) void plugin_spin(double seconds)
{
	BURN_NS((uint64_t)(seconds * 1e9));
}

/* Blocks in 20 ms sleeps for seconds: off-CPU only, so no CPU sample meets its frames. */
__attribute__((noinline)) void plugin_nap(double seconds)
{
	uint64_t end = now_ns() + (uint64_t)(seconds * 1e9);

	while (now_ns() < end)
		usleep(20000);
}
