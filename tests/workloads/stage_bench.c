// SPDX-License-Identifier: GPL-2.0-only
/* Stage probe benchmark: calls bench_stage (a few hundred ns of work) in a loop for SECONDS and
 * prints the calls made and the ns per call; with "busy", calls busy_stage (10 ms of CPU) so
 * that the thread is nearly always inside a stage (for the cost of labelling samples); with
 * "spin", calls spin_here, the same work under another name (not a stage).
 * Usage: tp_stage_bench SECONDS [busy|spin] */
#include <stdio.h>
#include <string.h>

#include "workload.h"

__attribute__((noinline)) void bench_stage(void)
{
	volatile uint64_t x = 0;

	for (int i = 0; i < 100; i++)
		x += (uint64_t)i * i;
}

__attribute__((noinline)) void busy_stage(void)
{
	BURN_NS(10000000);
}

__attribute__((noinline)) void spin_here(void)
{
	BURN_NS(10000000);
}

int main(int argc, char **argv)
{
	double seconds = arg_seconds(argc, argv, 1, 3);
	int busy = argc > 2 && !strcmp(argv[2], "busy"), spin = argc > 2 && !strcmp(argv[2], "spin");
	uint64_t start = now_ns(), end = start + (uint64_t)(seconds * 1e9), calls = 0, t;

	do {
		for (int i = 0; i < 100; i++) {
			if (busy)
				busy_stage();
			else if (spin)
				spin_here();
			else
				bench_stage();
		}
		calls += 100;
	} while ((t = now_ns()) < end);
	printf("%llu %.1f\n", (unsigned long long)calls, (double)(t - start) / calls);
	return 0;
}
