/* SPDX-License-Identifier: GPL-2.0-only */
/* What the collector's files share (collector.c: the drain loop, BPF counters, captures and the
 * lock; collector_events.c: event decoding and the process tracking it drives). Not a contract
 * for other modules: collector.h is. */
#ifndef TAILPROF_COLLECTOR_INTERNAL_H
#define TAILPROF_COLLECTOR_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collector.h"
#include "intern.h"
#include "pid_set.h"
#include "repeats.h"
#include "tailprof.h"
#include "timeparse.h"
#include "unwind_queue.h"
#include "window.h"

struct capture {
	struct window *w;
	struct capture *next;
};

/* A new image's maps read within its first milliseconds (a CPU sample in its dynamic loader
 * made it known) lack its libraries, and nothing reads them again before its first long block's
 * stacks are taken on its way back, nor before it exits: so every process that exec'd is read
 * once more PROC_MAPS_EXEC_RECHECK_NS after the drain that read its exec, when it is known by
 * then (GC discovery looks again in that same drain: one maps read for both). */
#define RECHECK_MAX    1024
#define PY_PENDING_MAX 1024
/* exited processes remembered (direct-mapped by pid): their samples drained after the exit event
 * come within a drain or two, a few per process */
#define COLLECTOR_EXITED 1024

struct collector {
	struct collector_opts opts;
	/* what loader__set_young() was last given (young_set 0: off), and the records lost by
	 * then */
	uint64_t young_set, young_lost;
	pthread_rwlock_t lock;
	struct intern_table *stacks, *tasks;
	struct window_ring *ring;
	struct capture *captures;
	struct ring_buffer *rb;
	uint32_t nr_cpus;
	uint32_t self_pid;
	uint64_t period_ns;

	/* BPF counters are taken per drain period; per CPU, since when it is sampled (0: not) */
	uint64_t next_period; /* first drain period whose BPF counts are not taken yet */
	uint64_t *sampled_since;
	uint64_t *cpu_received_total;
	uint64_t *cpu_sampled_ns_total;
	uint64_t last_tick_ns;
	uint64_t drain_ns; /* when the current (or last) drain began: CLOCK_MONOTONIC */
	int64_t wall_offset_ns;

	struct pid_set known;
	uint64_t known_evicted; /* processes forgotten for opts.max_known */
	/* processes whose exit event was read, by pid modulo: their last samples come after it and
	 * must not make them known again (each would stay in `known` until evicted) */
	struct exited_process {
		uint32_t pid;
		uint64_t start_ns;
	} exited[COLLECTOR_EXITED];
	struct collector_status st;
	struct window *stage_window; /* the current window at the last tick (stages) */

	/* drain notifications for capture waiters */
	pthread_mutex_t drain_mu;
	pthread_cond_t drain_cond;
	uint64_t drained_up_to_ns;
	bool stopping;

	uint64_t runq_buckets[TP_HIST_BUCKETS]; /* since start, for /metrics */
	/* unwinder work of the current drain (queue_unwind) */
	struct unwind_queue unwind_work;

	struct repeats repeats;
	/* processes that exec'd lately: their maps are read again RECHECK_NS after the exec
	 * (recheck_due), a ring of RECHECK_MAX; the oldest is overwritten when it is full */
	struct recheck {
		uint32_t pid;
		/* a forked child that has not exec'd (its fork link tells its parent): in rechecks,
		 * its own maps, tables and CPython are due (know_process); in py_pending, its
		 * parent's CPython is walked in it */
		bool forked;
		uint64_t start_ns, due_ns;
	} rechecks[RECHECK_MAX];
	size_t recheck_head, nr_rechecks;
	/* processes to look at for a CPython after this drain (py_queue) */
	struct recheck py_pending[PY_PENDING_MAX];
	size_t nr_py_pending;

	/* scratch for one stack key */
	struct stack *key;
	struct frame *frames;
};

/* ---- collector_events.c ---- */

/* ring_buffer_sample_fn of the events ring buffer (ctx: the collector): samples, off-CPU samples
 * and process events. */
int collector_on_event(void *ctx, void *data, size_t size);
/* ring_buffer_sample_fn of the GC programs' ring buffer. */
int collector_on_gc_event(void *ctx, void *data, size_t size);
/* ring_buffer_sample_fn of the stage probes' spans ring buffer. */
int collector_on_span(void *ctx, void *data, size_t size);
/* Under the lock, after the events of a drain: the rechecks due at now (RECHECK_NS). */
void collector_recheck_due(struct collector *c, uint64_t now);
/* After the lock is released: the processes queued for Python discovery. */
void collector_py_run_queue(struct collector *c);

#endif
