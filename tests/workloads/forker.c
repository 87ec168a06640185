// SPDX-License-Identifier: GPL-2.0-only
/* Known answer: a parent that forks short-lived children which never exec: each child spends
 * its few milliseconds in child_work and exits, usually before its maps could be read. The
 * parent sleeps while a child runs. Usage: tp_forker [CHILDREN] [MS_PER_CHILD] */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "workload.h"

__attribute__((noinline)) void child_work(double ms)
{
	BURN_NS((uint64_t)(ms * 1e6));
}

int main(int argc, char **argv)
{
	int children = argc > 1 ? atoi(argv[1]) : 200;
	double ms = arg_seconds(argc, argv, 2, 5);

	printf("%d\n", getpid());
	fflush(stdout);
	for (int i = 0; i < children; i++) {
		pid_t pid = fork();

		if (pid == 0) {
			child_work(ms);
			_exit(0);
		}
		if (pid > 0)
			waitpid(pid, NULL, 0);
	}
	return 0;
}
