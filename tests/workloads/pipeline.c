// SPDX-License-Identifier: GPL-2.0-only
/* Known answer for stages: requests through fetch (sleeps 2 ms), compute (3 ms of CPU; every
 * 20th request also 30 ms in compute_slow_path), io (a small write + fsync) and serialize
 * (about 0.3 ms of CPU). Logs each stage's exact latency three times, as "REQUEST STAGE INSIDE_NS
 * AROUND_NS MARKED_NS" lines to LOG: from the first to the last statement of the stage function,
 * around its call, and from the return of its begin marker to its end marker (the logging itself
 * outside all). Built twice: plain (uprobes time the functions; MARKED is INSIDE) and with
 * -DUSE_USDT (the functions mark themselves with include/tailprof/stage.h). A probe's measurement
 * lies between MARKED and AROUND: a function's uprobes add the time from the entry trap to the
 * first statement and from the last one to the return trap, markers the time in their own traps;
 * a preemption at a trap's exit is inside the probes' measurement at the begin trap, outside it
 * at the end trap (where only INSIDE and AROUND see it).
 * Usage: tp_pipeline SECONDS LOG [DELAY_SECONDS] — prints its pid, waits DELAY, then serves
 * requests for SECONDS.
 * Spike modes (environment; each turns the every-20th slow path off, and logs "# start UNIX_NS"
 * first, CLOCK_REALTIME when serving began):
 *   TP_BURST_EVERY=S  in the last second of every S seconds of serving (TP_BURST_LEN=L: the
 *                     last L seconds), compute also spends 15 ms in compute_burst_path, or,
 *                     built with -DWITH_GC_PROBES (tp_pipeline_gc), 15 ms in a GC pause between
 *                     CPython's USDT probes python:gc__start and gc__done (gc_pause);
 *   TP_SHIFT_AT=S     from S seconds of serving on, compute spins 9 ms instead of 3 (for good).
 * Before-and-after modes (tailprof compare; the same, and the "# start" line):
 *   TP_COMPUTE_US=U   compute spins U us instead of 3000;
 *   TP_SERIALIZE_US=U serialize spins U us instead of 300. */
#ifdef WITH_GC_PROBES
#include <sys/sdt.h>
#endif
#ifdef USE_USDT
#define TAILPROF_STAGE_DEFINE
#include <tailprof/stage.h>
#define BEGIN(name, req)                                                                           \
	do {                                                                                       \
		TAILPROF_STAGE_BEGIN(name, req);                                                   \
		m0__ = now_ns();                                                                   \
	} while (0)
#define END(name, req)                                                                             \
	do {                                                                                       \
		m1__ = now_ns();                                                                   \
		TAILPROF_STAGE_END(name, req);                                                     \
	} while (0)
#else
#define BEGIN(name, req)
#define END(name, req)
#endif

#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "workload.h"

static FILE *logf;
static int io_fd = -1;

/* the duration of the last stage, set by the stage itself: from its first to its last statement,
 * and between its markers (the same without markers) */
static uint64_t stage_ns, marked_ns;

#define STAGE_START() uint64_t t0__ = now_ns(), m0__ = t0__, m1__ = 0
#define STAGE_DONE()  (stage_ns = now_ns() - t0__, marked_ns = m1__ ? m1__ - m0__ : stage_ns)

/* Calls stage(req) and logs how long it took. */
static void timed(void (*stage)(unsigned long), const char *name, unsigned long req)
{
	uint64_t t0 = now_ns(), t1;

	stage(req);
	t1 = now_ns();
	fprintf(logf, "%lu %s %llu %llu %llu\n", req, name, (unsigned long long)stage_ns,
		(unsigned long long)(t1 - t0), (unsigned long long)marked_ns);
}

__attribute__((noinline)) void fetch(unsigned long req)
{
	struct timespec ts = {0, 2000000};
	STAGE_START();

	BEGIN("fetch", req);
	nanosleep(&ts, NULL);
	END("fetch", req);
	STAGE_DONE();
}

__attribute__((noinline)) void compute_slow_path(void)
{
	BURN_NS(30000000);
}

/* spike modes (see the top) */
static uint64_t serve_start_ns, burst_every_ns, burst_len_ns, shift_at_ns;
/* before-and-after modes (see the top); 0: unset */
static uint64_t compute_ns, serialize_ns;

__attribute__((noinline)) void compute_burst_path(void)
{
	BURN_NS(15000000);
}

#ifdef WITH_GC_PROBES
__attribute__((noinline)) void gc_pause(void)
{
	DTRACE_PROBE1(python, gc__start, 2);
	BURN_NS(15000000);
	DTRACE_PROBE1(python, gc__done, 0L);
}
#endif

static bool in_burst(void)
{
	uint64_t t;

	if (!burst_every_ns)
		return false;
	t = (now_ns() - serve_start_ns) % burst_every_ns;
	return t >= burst_every_ns - burst_len_ns;
}

__attribute__((noinline)) void compute(unsigned long req)
{
	bool spike_modes = burst_every_ns || shift_at_ns || compute_ns || serialize_ns;
	STAGE_START();

	BEGIN("compute", req);
	BURN_NS(shift_at_ns && now_ns() - serve_start_ns >= shift_at_ns ? 9000000
		: compute_ns						  ? compute_ns
									  : 3000000);
	if (in_burst()) {
#ifdef WITH_GC_PROBES
		gc_pause();
#else
		compute_burst_path();
#endif
	}
	if (!spike_modes && req % 20 == 19)
		compute_slow_path();
	END("compute", req);
	STAGE_DONE();
}

__attribute__((noinline)) void io(unsigned long req)
{
	char buf[64];
	int n;
	STAGE_START();

	BEGIN("io", req);
	n = snprintf(buf, sizeof(buf), "request %lu\n", req);
	if (write(io_fd, buf, n) != n || fsync(io_fd))
		perror("io");
	END("io", req);
	STAGE_DONE();
}

__attribute__((noinline)) void serialize(unsigned long req)
{
	STAGE_START();

	BEGIN("serialize", req);
	BURN_NS(serialize_ns ? serialize_ns : 300000);
	END("serialize", req);
	STAGE_DONE();
}

/* Seconds from the environment variable name (0 when unset). */
static uint64_t env_ns(const char *name, double def)
{
	const char *v = getenv(name);

	return (uint64_t)((v ? atof(v) : def) * 1e9);
}

__attribute__((noinline)) void serve(double seconds)
{
	uint64_t end = now_ns() + (uint64_t)(seconds * 1e9);
	struct timespec rt;

	serve_start_ns = now_ns();
	burst_every_ns = env_ns("TP_BURST_EVERY", 0);
	burst_len_ns = env_ns("TP_BURST_LEN", 1);
	shift_at_ns = env_ns("TP_SHIFT_AT", 0);
	compute_ns = env_ns("TP_COMPUTE_US", 0) / 1000000;
	serialize_ns = env_ns("TP_SERIALIZE_US", 0) / 1000000;
	if (burst_every_ns || shift_at_ns || compute_ns || serialize_ns) {
		clock_gettime(CLOCK_REALTIME, &rt);
		fprintf(logf, "# start %llu\n",
			(unsigned long long)rt.tv_sec * 1000000000ULL +
			    (unsigned long long)rt.tv_nsec);
	}

	for (unsigned long req = 0; now_ns() < end; req++) {
		timed(fetch, "fetch", req);
		timed(compute, "compute", req);
		timed(io, "io", req);
		timed(serialize, "serialize", req);
	}
}

int main(int argc, char **argv)
{
	char path[] = "/var/tmp/tp_pipeline.XXXXXX";
	double delay = arg_seconds(argc, argv, 3, 0);

	if (argc < 3) {
		fprintf(stderr, "usage: tp_pipeline SECONDS LOG [DELAY_SECONDS]\n");
		return 2;
	}
	logf = fopen(argv[2], "w");
	io_fd = mkstemp(path);
	if (!logf || io_fd < 0) {
		perror("tp_pipeline");
		return 1;
	}
	unlink(path);
	printf("%d\n", getpid());
	fflush(stdout);
	if (delay > 0)
		usleep((useconds_t)(delay * 1e6));
	serve(arg_seconds(argc, argv, 1, 3));
	fclose(logf);
	return 0;
}
