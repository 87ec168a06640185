// SPDX-License-Identifier: GPL-2.0-only
/* The cost of one system call as a program sees it, tracepoints and BPF programs on its way in
 * and out included: COUNT getppid() calls (the cheapest there is: no argument, no lock) through
 * syscall(2), timed with CLOCK_MONOTONIC. Prints the mean ns per call. tests/bench/syscall_tax.py
 * runs it with and without tailprofd. Usage: tp_bench_syscalls [COUNT] (default 1,000,000). */
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	long count = argc > 1 ? atol(argv[1]) : 1000000;
	double t0;

	if (count <= 0) {
		fprintf(stderr, "tp_bench_syscalls: COUNT must be a positive number, not '%s'\n",
			argv[1]);
		return 2;
	}
	t0 = now_ns();
	for (long i = 0; i < count; i++)
		syscall(SYS_getppid);
	printf("%.1f\n", (now_ns() - t0) / count);
	return 0;
}
