// SPDX-License-Identifier: GPL-2.0-only
/* Known answer for the heat map: THREADS threads sleep until the start of each PERIOD (a multiple
 * of it on CLOCK_MONOTONIC, the clock tailprofd cuts its windows on); then the first SPINNERS of
 * them spin in burst_function for BURST of wall time, the others only wake (their blocks end
 * there), and all sleep again. With 1 s windows and a 2 s period the CPU samples fall in the first
 * BURST of every other window, and the wake-ups at its very start. (Were all of them spinning,
 * most would get a CPU only when the first ones stopped: their blocks would end then.)
 * Usage: tp_burst [SECONDS] [THREADS] [PERIOD_MS] [BURST_MS] [SPINNERS]; prints the pid. */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <unistd.h>

#include "workload.h"

static uint64_t end_ns, period_ns, burst_ns;

__attribute__((noinline)) void burst_function(uint64_t until)
{
	while (now_ns() < until)
		BURN_NS(1000000);
}

static void *burster(void *arg)
{
	bool spin = arg != NULL;

	for (;;) {
		uint64_t next = (now_ns() / period_ns + 1) * period_ns;
		struct timespec ts = {.tv_sec = next / 1000000000ULL,
				      .tv_nsec = next % 1000000000ULL};

		if (next >= end_ns)
			return NULL;
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
		if (spin)
			burst_function(next + burst_ns);
	}
}

int main(int argc, char **argv)
{
	int threads = argc > 2 ? atoi(argv[2]) : 2;
	int spinners = argc > 5 ? atoi(argv[5]) : 2;
	pthread_t t[64];

	period_ns = (uint64_t)(arg_seconds(argc, argv, 3, 2000) * 1e6);
	burst_ns = (uint64_t)(arg_seconds(argc, argv, 4, 200) * 1e6);
	end_ns = now_ns() + (uint64_t)(arg_seconds(argc, argv, 1, 10) * 1e9);
	if (threads < 1 || threads > 64 || !period_ns || burst_ns >= period_ns) {
		fprintf(stderr,
			"usage: tp_burst [SECONDS] [THREADS 1-64] [PERIOD_MS] [BURST_MS]\n");
		return 2;
	}
	printf("%d\n", getpid());
	fflush(stdout);
	for (int i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, burster, i < spinners ? &t[i] : NULL);
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	return 0;
}
