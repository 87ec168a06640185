// SPDX-License-Identifier: GPL-2.0-only
/* Threads that exit while blocked: THREADS threads block reading a pipe nobody writes, each long
 * enough to pass the off-CPU threshold, then the process exits under them. Run it many times.
 * Usage: tp_blocked_threads [THREADS] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int pipefd[2];

static void *blocker(void *arg)
{
	char c;

	return read(pipefd[0], &c, 1) == 1 ? arg : NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 100;
	pthread_t t;

	if (pipe(pipefd))
		return 1;
	for (int i = 0; i < n; i++)
		if (pthread_create(&t, NULL, blocker, NULL))
			return 1;
	usleep(20000); /* all blocked for a while: their blocks pass 1 ms */
	_exit(0);      /* exit_group: every thread dies in its read */
}
