// SPDX-License-Identifier: GPL-2.0-only
/* Known answer for request accounting: requests through handle_request, a stage for a uprobe.
 * Every SLOW_EVERY-th request is slow: 30 ms blocked in nanosleep under wait_backend, then 20 ms
 * of the thread's own CPU time (CLOCK_THREAD_CPUTIME_ID: however long it waits for a CPU) under
 * compute_answer; the others spin about 0.3 ms (so that the previous window's p95, the slow-span
 * threshold, is a fast request's and the slow ones are sent as spans). After each request it
 * sleeps 1 ms. Logs "REQUEST SLOW DURATION_NS CPU_NS START_UNIX_NS" lines to LOG when LOG is
 * given: the request's duration and thread CPU time, measured around handle_request, and the
 * wall-clock time it started.
 * Usage: tp_request SECONDS [LOG] — prints its pid, then serves requests for SECONDS. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "workload.h"

#define SLOW_EVERY 25
#define SLEEP_NS   30000000
#define SPIN_NS	   20000000
#define FAST_NS	   300000

__attribute__((noinline)) void wait_backend(void)
{
	struct timespec ts = {0, SLEEP_NS};

	nanosleep(&ts, NULL);
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

__attribute__((noinline)) void compute_answer(void)
{
	uint64_t deadline = thread_cpu_ns() + SPIN_NS;
	volatile uint64_t x = 0;

	do {
		for (int i = 0; i < 20000; i++)
			x += (uint64_t)i * i;
	} while (thread_cpu_ns() < deadline);
}

__attribute__((noinline)) void quick_answer(void)
{
	BURN_NS(FAST_NS);
}

__attribute__((noinline)) void handle_request(unsigned long req)
{
	if (req % SLOW_EVERY == SLOW_EVERY - 1) {
		wait_backend();
		compute_answer();
	} else {
		quick_answer();
	}
}

int main(int argc, char **argv)
{
	double seconds = arg_seconds(argc, argv, 1, 10);
	FILE *log = argc > 2 ? fopen(argv[2], "w") : NULL;
	struct timespec gap = {0, 1000000};
	uint64_t end;

	printf("%d\n", getpid());
	fflush(stdout);
	end = now_ns() + (uint64_t)(seconds * 1e9);
	for (unsigned long req = 0; now_ns() < end; req++) {
		struct timespec wall;
		uint64_t t0, c0;

		clock_gettime(CLOCK_REALTIME, &wall);
		t0 = now_ns();
		c0 = thread_cpu_ns();
		handle_request(req);
		if (log)
			fprintf(log, "%lu %d %llu %llu %llu\n", req,
				req % SLOW_EVERY == SLOW_EVERY - 1,
				(unsigned long long)(now_ns() - t0),
				(unsigned long long)(thread_cpu_ns() - c0),
				(unsigned long long)wall.tv_sec * 1000000000ULL + wall.tv_nsec);
		nanosleep(&gap, NULL);
	}
	if (log)
		fclose(log);
	return 0;
}
