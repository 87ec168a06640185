// SPDX-License-Identifier: GPL-2.0-only
/* A library that tp_dlopen loads at run time, built without frame pointers: its frames are
 * walked only once the unwinder has rescanned the process's maps. */
#include "workload.h"

__attribute__((noinline)) void plugin_spin(double seconds)
{
	BURN_NS((uint64_t)(seconds * 1e9));
}
