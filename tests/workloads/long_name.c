// SPDX-License-Identifier: GPL-2.0-only
/* Known answer for process and thread names: built with a name longer than the kernel's 15
 * characters, it runs two named worker threads that spin. Usage: PROGRAM [SECONDS] */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "workload.h"

static double seconds;

__attribute__((noinline)) static void *worker(void *name)
{
	pthread_setname_np(pthread_self(), name);
	BURN_NS((uint64_t)(seconds * 1e9));
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t a, b;

	seconds = arg_seconds(argc, argv, 1, 2);
	printf("%d\n", getpid());
	fflush(stdout);
	pthread_create(&a, NULL, worker, "worker-one");
	pthread_create(&b, NULL, worker, "worker-two");
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	return 0;
}
