// SPDX-License-Identifier: GPL-2.0-only
/* Known answer for the web page's browser test: one thread spends 10 ms of every 100 in
 * ui_hot_function (a steady tenth of a CPU), and two threads each spin BURST_MS in
 * ui_burst_function every PERIOD_MS (the first burst 1 s after the start), so CPU samples
 * have a steady hot function and periodic bursts of two CPUs. All three are pthreads, so their
 * stacks share start_thread and part under it: hot_thread and burst_thread.
 * Usage: tp_ui_workload SECONDS PERIOD_MS BURST_MS — prints "# start UNIX_NS" (CLOCK_REALTIME
 * at the start; burst k runs from start + 1 s + k * PERIOD_MS for BURST_MS) and its pid. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "workload.h"

static uint64_t start_mono_ns, end_mono_ns, period_ns, burst_ns;

__attribute__((noinline)) void ui_hot_function(void)
{
	BURN_NS(10000000);
}

__attribute__((noinline)) void ui_burst_function(uint64_t until_ns)
{
	while (now_ns() < until_ns)
		BURN_NS(1000000);
}

static void sleep_until(uint64_t mono_ns)
{
	struct timespec ts = {(time_t)(mono_ns / 1000000000ULL), (long)(mono_ns % 1000000000ULL)};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0)
		;
}

static void *hot_thread(void *arg)
{
	(void)arg;
	for (uint64_t t = start_mono_ns; t < end_mono_ns; t += 100000000ULL) {
		ui_hot_function();
		sleep_until(t + 100000000ULL);
	}
	return NULL;
}

static void *burst_thread(void *arg)
{
	(void)arg;
	for (uint64_t t = start_mono_ns + 1000000000ULL; t + burst_ns <= end_mono_ns;
	     t += period_ns) {
		sleep_until(t);
		ui_burst_function(t + burst_ns);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct timespec rt;
	pthread_t hot, burst[2];

	if (argc < 4) {
		fprintf(stderr, "usage: tp_ui_workload SECONDS PERIOD_MS BURST_MS\n");
		return 2;
	}
	period_ns = strtoull(argv[2], NULL, 10) * 1000000ULL;
	burst_ns = strtoull(argv[3], NULL, 10) * 1000000ULL;
	clock_gettime(CLOCK_REALTIME, &rt);
	start_mono_ns = now_ns();
	end_mono_ns = start_mono_ns + (uint64_t)(atof(argv[1]) * 1e9);
	printf("# start %llu\n%d\n", (unsigned long long)rt.tv_sec * 1000000000ULL + rt.tv_nsec,
	       getpid());
	fflush(stdout);
	pthread_create(&hot, NULL, hot_thread, NULL);
	for (int i = 0; i < 2; i++)
		pthread_create(&burst[i], NULL, burst_thread, NULL);
	for (int i = 0; i < 2; i++)
		pthread_join(burst[i], NULL);
	pthread_join(hot, NULL);
	return 0;
}
