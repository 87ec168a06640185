/* SPDX-License-Identifier: GPL-2.0-only */
/* Shared bits of the workload programs: a monotonic clock and a CPU burner whose work between
 * clock reads is long enough that nearly every sample lands in the caller's own code. */
#ifndef TAILPROF_WORKLOAD_H
#define TAILPROF_WORKLOAD_H

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static inline double arg_seconds(int argc, char **argv, int i, double def)
{
	return argc > i ? atof(argv[i]) : def;
}

/* Spins for ns nanoseconds; inline so the samples fall in the calling function. */
#define BURN_NS(ns)                                                                     \
	do {                                                                            \
		uint64_t deadline__ = now_ns() + (ns);                                  \
		volatile uint64_t x__ = 0;                                              \
		do {                                                                    \
			for (int i__ = 0; i__ < 20000; i__++)                           \
				x__ += (uint64_t)i__ * i__;                             \
		} while (now_ns() < deadline__);                                        \
	} while (0)

#endif
