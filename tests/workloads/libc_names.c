// SPDX-License-Identifier: GPL-2.0-only
/* Known answer for libc's names: sorts with qsort, so most samples are inside libc's local
 * msort_with_tmp (named only by libc6-dbg's debug file) and the comparator it calls.
 * Usage: tp_libc_names [SECONDS] */
#include <stdio.h>
#include <unistd.h>

#include "workload.h"

#define N 20000

static int by_value(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;

	return (x > y) - (x < y);
}

__attribute__((noinline)) void sort_rounds(double seconds)
{
	static unsigned v[N];
	uint64_t end = now_ns() + (uint64_t)(seconds * 1e9);
	unsigned seed = 1;

	while (now_ns() < end) {
		for (int i = 0; i < N; i++)
			v[i] = seed = seed * 1103515245u + 12345u;
		qsort(v, N, sizeof(v[0]), by_value);
	}
}

int main(int argc, char **argv)
{
	printf("%d\n", getpid());
	fflush(stdout);
	sort_rounds(arg_seconds(argc, argv, 1, 3));
	return 0;
}
