// SPDX-License-Identifier: GPL-2.0-only
/* Known answer for GC pauses without a real runtime (the kernel matrix's guests hold no CPython).
 * Built two ways:
 * - tp_gc_standin: CPython's USDT probes python:gc__start and python:gc__done around a 4 ms
 *   burn, every 40 ms. GC discovery takes it for a CPython (an executable with those probes).
 *   After SECONDS, one line per collection: "START_UNIX_NS PAUSE_NS" (CLOCK_REALTIME at
 *   gc__start, and the time between the probes).
 * - tp_gc_standin_uprobe (GC_STANDIN_UPROBE): no USDT probes, but a function gc_collect_main
 *   with CPython 3.11's arguments and return value (generation second; collected +
 *   uncollectable returned) burning 6 ms, every 40 ms; every fourth call makes a nested call of
 *   its own (4 ms, generation 0) in its middle, which the uprobe way must pair with its own
 *   return. Named python3.11* it is taken for a CPython 3.11 without USDT. After SECONDS, one
 *   line per call in the order they began: "START_UNIX_NS PAUSE_NS GENERATION COLLECTED DEPTH
 *   BODY_NS" (CLOCK_REALTIME before the call, its time seen from the caller, what it returned,
 *   0 outer or 1 nested, and the time its body measured itself: CLOCK_MONOTONIC, as BPF's, so a
 *   pause timed by the probes lies between BODY_NS and PAUSE_NS).
 * Both print their pid first. Usage: tp_gc_standin[_uprobe] [SECONDS] */
#include <stdio.h>
#include <unistd.h>
#ifndef GC_STANDIN_UPROBE
#include <sys/sdt.h>
#endif

#include "workload.h"

#define MAX_COLLECTIONS 4096

static uint64_t starts[MAX_COLLECTIONS], pauses[MAX_COLLECTIONS];

static uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

#ifndef GC_STANDIN_UPROBE
__attribute__((noinline)) void collect(int generation, int i)
{
	uint64_t t0;

	starts[i] = realtime_ns();
	t0 = now_ns();
	DTRACE_PROBE1(python, gc__start, generation);
	BURN_NS(4000000);
	DTRACE_PROBE1(python, gc__done, (long)i);
	pauses[i] = now_ns() - t0;
}

static int run(uint64_t end)
{
	int n = 0;

	while (now_ns() < end && n < MAX_COLLECTIONS) {
		collect(n % 3, n);
		n++;
		usleep(40000);
	}
	for (int i = 0; i < n; i++)
		printf("%llu %llu\n", (unsigned long long)starts[i], (unsigned long long)pauses[i]);
	return 0;
}
#else
static int generations[MAX_COLLECTIONS], depths[MAX_COLLECTIONS], calls;
static long results[MAX_COLLECTIONS];
static uint64_t bodies[MAX_COLLECTIONS];

long gc_collect_main(void *tstate, int generation, long *n_collected, long *n_uncollectable,
		     int nofail);

/* One call timed from its caller, as CPython's gc.callbacks time a collection: the probes' own
 * cost (the first hit maps the kernel's XOL page: slow under emulation) is inside. */
static long timed_collect(void *tstate, int generation, int depth)
{
	long collected, uncollectable;
	int i = calls++;
	uint64_t t0;

	starts[i] = realtime_ns();
	t0 = now_ns();
	results[i] = gc_collect_main(tstate, generation, &collected, &uncollectable, depth);
	pauses[i] = now_ns() - t0;
	generations[i] = generation;
	depths[i] = depth;
	return results[i];
}

/* CPython 3.11's signature; tstate non-NULL asks for a nested call, nofail is the depth. Returns
 * the call's own number (1000 per call, plus the generation). noclone: a clone would be named
 * gc_collect_main.constprop.0 and taken as unsupported. */
__attribute__((noinline, noclone)) long gc_collect_main(void *tstate, int generation,
							long *n_collected, long *n_uncollectable,
							int nofail)
{
	long id = calls - 1;
	uint64_t t0 = now_ns();

	if (tstate) {
		BURN_NS(1000000);
		timed_collect(NULL, 0, 1);
		BURN_NS(1000000);
	} else {
		BURN_NS(nofail ? 4000000 : 6000000);
	}
	bodies[id] = now_ns() - t0;
	return 1000L * id + generation;
}

static int run(uint64_t end)
{
	int n = 0;

	while (now_ns() < end && calls < MAX_COLLECTIONS - 1) {
		timed_collect(n % 4 == 3 ? &n : NULL, n % 3, 0);
		n++;
		usleep(40000);
	}
	for (int i = 0; i < calls; i++)
		printf("%llu %llu %d %ld %d %llu\n", (unsigned long long)starts[i],
		       (unsigned long long)pauses[i], generations[i], results[i], depths[i],
		       (unsigned long long)bodies[i]);
	return 0;
}
#endif

int main(int argc, char **argv)
{
	printf("%d\n", getpid());
	fflush(stdout);
	return run(now_ns() + (uint64_t)(arg_seconds(argc, argv, 1, 5) * 1e9));
}
