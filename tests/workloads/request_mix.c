// SPDX-License-Identifier: GPL-2.0-only
/* Known answer for request accounting: requests through handle_request, a stage for a uprobe.
 * Every SLOW_EVERY-th request is slow: 30 ms blocked in nanosleep under wait_backend, then 20 ms
 * of the thread's own CPU time (CLOCK_THREAD_CPUTIME_ID: however long it waits for a CPU) under
 * compute_answer; the others spin about 0.3 ms (so that the previous window's p95, the slow-span
 * threshold, is a fast request's and the slow ones are sent as spans). After each request it
 * sleeps 1 ms. Logs "REQUEST SLOW DURATION_NS CPU_NS START_UNIX_NS RUNQ_NS" lines to LOG when
 * LOG is given: the request's duration, thread CPU time and run-queue wait (the kernel's
 * sched_info.run_delay from /proc/thread-self/schedstat; -1 where that file is missing),
 * measured around handle_request, and the wall-clock time it started. Off-CPU by the thread's
 * own account is DURATION - CPU - RUNQ: more than the sleep where a timer fired late, or a
 * hypervisor stole the CPU while the thread ran (the kernel's task clock leaves steal out).
 * Usage: tp_request SECONDS [LOG] — prints its pid, then serves requests for SECONDS. */
#include <fcntl.h>
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

/* The thread's sched_info.run_delay in ns (the second field of its schedstat), or -1. */
static long long thread_runq_ns(int fd)
{
	char buf[128];
	unsigned long long run, delay;
	ssize_t n = fd < 0 ? -1 : pread(fd, buf, sizeof(buf) - 1, 0);

	if (n <= 0)
		return -1;
	buf[n] = 0;
	return sscanf(buf, "%llu %llu", &run, &delay) == 2 ? (long long)delay : -1;
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
	int schedstat = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
	uint64_t end;

	printf("%d\n", getpid());
	fflush(stdout);
	end = now_ns() + (uint64_t)(seconds * 1e9);
	for (unsigned long req = 0; now_ns() < end; req++) {
		struct timespec wall;
		uint64_t t0, c0, t1, c1;
		long long q0 = thread_runq_ns(schedstat), q1;

		clock_gettime(CLOCK_REALTIME, &wall);
		t0 = now_ns();
		c0 = thread_cpu_ns();
		handle_request(req);
		t1 = now_ns();
		c1 = thread_cpu_ns();
		q1 = thread_runq_ns(schedstat);
		if (log)
			fprintf(log, "%lu %d %llu %llu %llu %lld\n", req,
				req % SLOW_EVERY == SLOW_EVERY - 1, (unsigned long long)(t1 - t0),
				(unsigned long long)(c1 - c0),
				(unsigned long long)wall.tv_sec * 1000000000ULL + wall.tv_nsec,
				q0 < 0 || q1 < 0 ? -1LL : q1 - q0);
		nanosleep(&gap, NULL);
	}
	if (log)
		fclose(log);
	return 0;
}
