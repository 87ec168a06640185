// SPDX-License-Identifier: GPL-2.0-only
/* A shared library with one stage function, loaded with dlopen by tp_dlopen. */
#include <time.h>

__attribute__((noinline)) void lib_stage(void)
{
	struct timespec ts = {0, 1000000};

	nanosleep(&ts, NULL);
}
