/* SPDX-License-Identifier: GPL-2.0-only */
/* Timing and medians for the C benchmarks (compare.c, flamegraph.c). */
#ifndef TAILPROF_BENCH_STATS_H
#define TAILPROF_BENCH_STATS_H

#include <stdlib.h>
#include <time.h>

/* Seconds on clock (CLOCK_MONOTONIC: wall time; CLOCK_THREAD_CPUTIME_ID: this thread's CPU). */
static inline double bench_seconds(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The median of v[0..n) (n >= 1; sorts v). */
static inline double bench_median(double *v, int n)
{
	qsort(v, n, sizeof(*v), bench_cmp_double);
	return v[n / 2];
}

#endif
