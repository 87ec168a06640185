/* SPDX-License-Identifier: GPL-2.0-only */
/* The collector: drains the BPF ring buffer and counters into the ring of windows (and into
 * exact-interval captures), on one thread, and owns the lock that query threads read under.
 *
 * Data flow: BPF events -> resolve frames (symbolizer) -> intern stack and task -> window by the
 * sample's timestamp. BPF counts (samples seen per CPU, idle, drops) per CPU and drain period,
 * also by timestamp; each ended period's counts are taken into the window of that period. Ticks
 * fall on multiples of the drain period, and windows are multiples of it, so a period never
 * straddles a window boundary. */
#ifndef TAILPROF_COLLECTOR_H
#define TAILPROF_COLLECTOR_H

#include <stdbool.h>
#include <stdint.h>

#include "python.h"
#include "symbolizer.h"
#include "tailprof.h"
#include "unwinder.h"
#include "window.h"

struct gc;
struct loader;
struct mmap_records;
struct probes;
struct spikes;
struct stages;
struct symbolizer;
struct unwinder;

struct collector_opts {
	struct loader *loader;	       /* not owned */
	struct symbolizer *symbolizer; /* not owned */
	struct unwinder *unwinder;     /* not owned; NULL: user stacks by frame pointers only */
	uint32_t frequency_hz;
	uint64_t window_ns;    /* a multiple of drain_ns */
	uint32_t nr_windows;   /* retention / window */
	uint64_t drain_ns;     /* <= 1 s */
	struct probes *probes; /* stage probes (not owned); NULL: no stages */
	struct stages *stages; /* the stage registry (not owned); with probes */
	struct spikes *spikes; /* spike detection (not owned); NULL: none */
	struct gc *gc;	       /* GC tracking (not owned); NULL: --gc=off */
	int gc_events_fd;      /* with gc: the GC programs' ring buffer (gc_probes.h) */
	struct python *python; /* Python frames (not owned); NULL: none */

	/* new processes' maps (not owned; mmap_records.h); NULL: all from /proc */
	struct mmap_records *mmap_records;
	/* with mmap_records: a new process is young (its CPU samples do not wake the drain) while
	 * its sampled thread has run less than this (ns, loader__set_young); 0: every new
	 * process's first sample wakes it */
	uint64_t young_ns;
	/* Caps ([limits], resource_limits.h; 0: the default). Interned stacks and tasks: past the
	 * cap a sample with a new one is dropped (stack_table_full, task_table_full), since windows
	 * hold the stored ones. Known processes (marked in BPF): past the cap the one that started
	 * first is forgotten (its next sample makes it known again). */
	uint32_t max_stacks, max_tasks, max_known;
};

/* Drains run every 100 ms to 1 s. One this late (CLOCK_MONOTONIC ns since the last) starves
 * the systemd watchdog; one STALLED late means collection stopped: no longer healthy (a long
 * query or a loaded host delays drains by seconds: health does not flap for that). */
#define COLLECTOR_DRAIN_LATE_NS	   (5 * NSEC_PER_SEC)
#define COLLECTOR_DRAIN_STALLED_NS (30 * NSEC_PER_SEC)

struct collector_status {
	int64_t started_unix_ns;
	uint64_t started_mono_ns;
	bool healthy; /* probes attached, the first drain done, and the last one less than
		       * COLLECTOR_DRAIN_STALLED_NS ago (collector__status) */
	int probes_attached;
	int cpus_sampled;
	uint64_t samples, idle_samples, received_samples, expected_samples;
	uint64_t drops[DROP_NR];
	uint64_t stacks, tasks;		/* interned now */
	uint64_t max_stacks, max_tasks; /* their caps */
	uint64_t known, max_known;	/* processes marked known now, and the cap */
	uint64_t known_evicted;		/* forgotten for the cap (total) */
	uint64_t folded_stacks;		/* samples stored by function: the stacks were full */
	uint64_t interned_bytes;
	uint64_t window_bytes;
	uint64_t record_bytes; /* of those, the per-sample records (window.h) */
	uint64_t records;      /* records held now */
	uint32_t windows, max_windows;
	uint64_t drains, last_drain_mono_ns;
	uint64_t wakeups; /* drains between ticks: BPF woke the loop (a new process, new Python
			   * code, a rescan, the ring buffer filling) */
	uint64_t young_samples;	 /* samples of a young process (TP_SAMPLE_YOUNG): woke nobody */
	uint64_t cut_stacks;	 /* user stacks ended at an address in no executable mapping */
	uint64_t forks_deferred; /* forked children named from their parent's maps, read later */
	/* exec'd processes still running at their recheck (PROC_MAPS_EXEC_RECHECK_NS): maps read
	 * again [0], or not, read after their dynamic loader's work (symbolizer__loaded) [1] */
	uint64_t exec_rechecks[2];
	uint64_t unwind_queue_full;  /* unwinder requests lost: no memory */
	uint64_t layout_tables_used; /* exec records whose unwind tables BPF set from their static
				      * layout's (TP_EXEC_TABLES_SET) */
	uint64_t rescans_saved;	     /* unwinder rescans not asked for: the walk ended at an
				      * address in a mapped object's data */
	bool sched;		     /* the scheduler programs are loaded */
	uint64_t offcpu_samples;     /* captured blocks (with stacks) */
	uint64_t offcpu_ns;	     /* their blocked time */
	uint64_t short_blocks;	     /* blocks below the threshold (counted, no stacks) */
	uint64_t short_blocked_ns;
	uint64_t runq_count, runq_sum_ns, runq_max_ns; /* run-queue waits, since start */
	uint64_t sched_metrics[TP_SCH_NR];	       /* the BPF side's counters */
	struct symbolizer_stats sym;		       /* as of the last drain */
	struct unwinder_stats unwind; /* as of the last drain (zero without an unwinder) */
	/* BPF counts of the table unwinder since start, indexed by enum tp_metric from
	 * TP_M_UNWIND_STACKS (tailprof.h) */
	uint64_t unwind_bpf[TP_M_NR - TP_M_UNWIND_STACKS];
	bool python;		/* Python frames are on */
	struct python_stats py; /* as of the last drain */
	uint64_t py_failed;	/* samples of Python processes without their Python stack */
	uint64_t py_truncated;	/* samples whose Python stack went past TP_PY_MAX_FRAMES */
};

/* Returns a collector with an empty ring, or NULL with errno set. */
struct collector *collector__new(const struct collector_opts *opts);
/* Frees the ring, captures and interned values. NULL allowed. */
void collector__free(struct collector *c);

/* Runs the drain loop until stop_fd becomes readable (the caller reads it; it may run the loop
 * again, e.g. after a configuration reload). Returns 0, or a negative errno when the loop itself
 * failed (then as collector__stop). Drains once more before returning. */
int collector__run(struct collector *c, int stop_fd);
/* The daemon is stopping: capture waiters return -EINTR. Any thread. */
void collector__stop(struct collector *c);

/* Readers (query threads): hold the read lock while looking at windows and their stacks. */
void collector__rdlock(struct collector *c);
/* Writers other than the drain loop (a configuration reload changing the stage registry). */
void collector__wrlock(struct collector *c);
void collector__unlock(struct collector *c);
/* Under the read lock: the ring, and the status figures. */
struct window_ring *collector__ring(struct collector *c);
void collector__status(struct collector *c, struct collector_status *st);
uint64_t collector__period_ns(const struct collector *c);
uint32_t collector__nr_cpus(const struct collector *c);
/* Under the read lock: samples the BPF program saw on cpu, and those expected, since start.
 * Returns whether the CPU is or was sampled at all. */
bool collector__cpu_totals(struct collector *c, uint32_t cpu, uint64_t *received,
			   uint64_t *expected);
/* Under the read lock: the run-queue latencies since start, TP_HIST_BUCKETS counts (tp_hist.h).
 */
const uint64_t *collector__runq_buckets(const struct collector *c);
/* realtime - monotonic, as measured at the last drain. Any thread. */
int64_t collector__wall_offset_ns(struct collector *c);

/* Exact-interval capture for /debug/pprof/profile: begin registers a detached window over
 * [now, now + duration_ns) that receives every sample in that interval; wait blocks until a
 * drain past its end (returns 0, -EINTR when the daemon is stopping, or -ECONNRESET as soon as
 * wanted(arg), asked every 200 ms, says the result is no longer wanted); end unregisters and
 * frees it. begin returns NULL on ENOMEM. Any thread (they take the lock themselves); read the
 * window between wait and end under the read lock. */
struct window *collector__capture_begin(struct collector *c, uint64_t duration_ns);
int collector__capture_wait(struct collector *c, struct window *w, bool (*wanted)(void *arg),
			    void *arg);
void collector__capture_end(struct collector *c, struct window *w);

#endif
