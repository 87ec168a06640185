// SPDX-License-Identifier: GPL-2.0-only
/* Threads that exit while blocked: THREADS threads block reading a pipe nobody writes, each long
 * enough to pass the off-CPU threshold, then the process exits under them. One more thread keeps
 * changing the protection of a populated 64 MiB mapping, which holds the address space's lock
 * for writing, so that dying threads also block in their exit (exit_mm() takes it for reading)
 * while their address space is still theirs. Run it many times.
 * Usage: tp_blocked_threads [THREADS] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define MPROTECT_BYTES (64UL << 20)

static int pipefd[2];

static void *blocker(void *arg)
{
	char c;

	return read(pipefd[0], &c, 1) == 1 ? arg : NULL;
}

static void *protector(void *arg)
{
	char *p = mmap(NULL, MPROTECT_BYTES, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	for (;;) {
		mprotect(p, MPROTECT_BYTES, PROT_READ);
		mprotect(p, MPROTECT_BYTES, PROT_READ | PROT_WRITE);
	}
	return arg;
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
	if (pthread_create(&t, NULL, protector, NULL))
		return 1;
	usleep(20000); /* all blocked for a while: their blocks pass 1 ms */
	_exit(0);      /* exit_group: every thread dies in its read */
}
