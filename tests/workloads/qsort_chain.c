// SPDX-License-Identifier: GPL-2.0-only
/* Known answer for the table unwinder: built -O2 -fomit-frame-pointer, its comparator runs
 * inside libc's qsort (built without frame pointers too), so only .eh_frame can walk
 * by_key <- [libc qsort frames] <- sort_all <- run_rounds <- main. sort_all works after qsort
 * returns, so its call is not a tail call. Usage: tp_qsort [SECONDS] */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "workload.h"

#define N 2048

struct item {
	uint32_t key;
	uint32_t pad;
};

/* A deliberately slow comparator: nearly every sample lands here, deep inside qsort. */
__attribute__((noinline)) int by_key(const void *a, const void *b)
{
	uint32_t x = ((const struct item *)a)->key, y = ((const struct item *)b)->key;
	volatile uint32_t mix = 0;

	for (int i = 0; i < 64; i++)
		mix += (x ^ (uint32_t)i) * 2654435761u;
	return x < y ? -1 : x > y;
}

__attribute__((noinline)) uint64_t sort_all(struct item *v, size_t n)
{
	uint64_t sum = 0;

	qsort(v, n, sizeof(*v), by_key);
	for (size_t i = 0; i < n; i++)
		sum = sum * 31 + v[i].key;
	return sum;
}

__attribute__((noinline)) uint64_t run_rounds(double seconds)
{
	static struct item v[N];
	uint64_t end = now_ns() + (uint64_t)(seconds * 1e9), sum = 0;
	uint32_t seed = 1;

	while (now_ns() < end) {
		for (size_t i = 0; i < N; i++) {
			seed = seed * 1103515245u + 12345u;
			v[i].key = seed >> 8;
		}
		sum += sort_all(v, N);
	}
	return sum;
}

int main(int argc, char **argv)
{
	uint64_t sum;

	printf("%d\n", getpid());
	fflush(stdout);
	sum = run_rounds(arg_seconds(argc, argv, 1, 3));
	return sum == 42; /* use the result */
}
