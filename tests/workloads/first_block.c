// SPDX-License-Identifier: GPL-2.0-only
/* A new process whose very first block is long: main -> first_wait -> nanosleep(SECONDS), once.
 * No CPU sample can tell tailprofd of it before it blocks: its off-CPU sample must still have
 * the whole user stack (tailprofd loads the process's unwind tables while it waits).
 * Prints its pid, then, at the end, the nanoseconds it slept. With "exec", it first blocks in a
 * syscall (20 ms) and then execs itself: the new image's first block must get its whole user
 * stack too, though the thread (and the process's start time) stay.
 * Usage: tp_first_block [SECONDS [exec]] */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "workload.h"

__attribute__((noinline)) void first_wait(double seconds)
{
	struct timespec ts = {(time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9)};

	nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
	double seconds = arg_seconds(argc, argv, 1, 1);
	uint64_t t0;

	if (argc > 2 && !strcmp(argv[2], "exec")) {
		poll(NULL, 0, 20); /* not a nanosleep: the test counts those */
		execl("/proc/self/exe", argv[0], argv[1], (char *)NULL);
		return 1;
	}
	printf("%d\n", getpid());
	fflush(stdout);
	t0 = now_ns();
	first_wait(seconds);
	printf("%llu\n", (unsigned long long)(now_ns() - t0));
	return 0;
}
