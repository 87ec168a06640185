// SPDX-License-Identifier: GPL-2.0-only
/* Known answer: a parent that forks short-lived children which never exec: each child spends
 * its few milliseconds in child_work and exits, usually before its maps could be read. The
 * parent sleeps while a child runs. The CPU time the children spent in child_work is the
 * answer (the kernel's fork and exit around it cost what they cost on that kernel): printed
 * last, as "child_work_cpu_ns N". Usage: tp_forker [CHILDREN] [MS_PER_CHILD] */
#include <stdio.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "workload.h"

__attribute__((noinline)) void child_work(double ms)
{
	BURN_NS((uint64_t)(ms * 1e6));
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	int children = argc > 1 ? atoi(argv[1]) : 200;
	double ms = arg_seconds(argc, argv, 2, 5);
	/* shared with the children, which add to it one at a time (the parent waits for each) */
	uint64_t *work_ns = mmap(NULL, sizeof(*work_ns), PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (work_ns == MAP_FAILED)
		return 1;
	printf("%d\n", getpid());
	fflush(stdout);
	for (int i = 0; i < children; i++) {
		pid_t pid = fork();

		if (pid == 0) {
			uint64_t t0 = thread_cpu_ns();

			child_work(ms);
			*work_ns += thread_cpu_ns() - t0;
			_exit(0);
		}
		if (pid > 0)
			waitpid(pid, NULL, 0);
	}
	printf("child_work_cpu_ns %llu\n", (unsigned long long)*work_ns);
	return 0;
}
