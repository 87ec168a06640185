// SPDX-License-Identifier: GPL-2.0-only
/* Nested stages: recurse(DEPTH) calls itself down to depth 1, which sleeps 1 ms; a stage on
 * recurse is entered DEPTH times per call, nested. Usage: tp_recurse DEPTH CALLS */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

__attribute__((noinline)) int recurse(int depth)
{
	struct timespec ts = {0, 1000000};

	if (depth <= 1) {
		nanosleep(&ts, NULL);
		return 1;
	}
	return recurse(depth - 1) + 1; /* not a tail call: every level returns through here */
}

int main(int argc, char **argv)
{
	int depth = argc > 1 ? atoi(argv[1]) : 4, calls = argc > 2 ? atoi(argv[2]) : 10, sum = 0;

	printf("%d\n", getpid());
	fflush(stdout);
	for (int i = 0; i < calls; i++)
		sum += recurse(depth);
	return sum == depth * calls ? 0 : 1;
}
