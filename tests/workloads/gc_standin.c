// SPDX-License-Identifier: GPL-2.0-only
/* Known answer for GC pauses without a real runtime (the kernel matrix's guests hold no CPython):
 * CPython's USDT probes python:gc__start and python:gc__done around a 4 ms burn, every 40 ms.
 * GC discovery takes it for a CPython (an executable with those probes). Prints its pid, then
 * after SECONDS one line per collection: "START_UNIX_NS PAUSE_NS" (CLOCK_REALTIME at gc__start,
 * and the time between the probes). Usage: tp_gc_standin [SECONDS] */
#include <stdio.h>
#include <sys/sdt.h>
#include <unistd.h>

#include "workload.h"

#define MAX_COLLECTIONS 4096

static uint64_t starts[MAX_COLLECTIONS], pauses[MAX_COLLECTIONS];

static uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

__attribute__((noinline)) void collect(int generation, int i)
{
	uint64_t t0;

	starts[i] = realtime_ns();
	t0 = now_ns();
	DTRACE_PROBE1(python, gc__start, generation);
	BURN_NS(4000000);
	DTRACE_PROBE1(python, gc__done, (long)i);
	pauses[i] = now_ns() - t0;
}

int main(int argc, char **argv)
{
	uint64_t end;
	int n = 0;

	printf("%d\n", getpid());
	fflush(stdout);
	end = now_ns() + (uint64_t)(arg_seconds(argc, argv, 1, 5) * 1e9);
	while (now_ns() < end && n < MAX_COLLECTIONS) {
		collect(n % 3, n);
		n++;
		usleep(40000);
	}
	for (int i = 0; i < n; i++)
		printf("%llu %llu\n", (unsigned long long)starts[i], (unsigned long long)pauses[i]);
	return 0;
}
