/* SPDX-License-Identifier: GPL-2.0-only */
/* One side of a comparison (tailprof compare): the windows of a time range, or of a saved
 * snapshot, reduced to what the comparison reads: per window its stage histograms, counters and
 * CPU stacks by function name. A side owns all its memory and refers to nothing of the daemon,
 * so it outlives the ring, the daemon's stage ids and its symbol caches: compare works on a copy
 * taken under the collector's lock and released before the statistics run, and a snapshot is a
 * side written to disk (snapshots.h) and read back.
 *
 * Strings (stage names, function names) live once in the side's table and are referred to by
 * index. Histograms use the buckets of bpf/tp_hist.h as sparse cells sorted by bucket. */
#ifndef TAILPROF_CMP_SIDE_H
#define TAILPROF_CMP_SIDE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stages.h" /* struct hist_cell */

struct window;
struct query_ctx;

/* A stage in one window. */
struct cmp_stage_win {
	uint32_t name;			/* index in strings */
	uint64_t count, sum_ns, max_ns; /* requests; their latency's sum and maximum */
	uint32_t nr_cells;
	struct hist_cell *cells; /* their latencies, sorted by bucket, counts summing to count */
	uint64_t cpu_samples;	 /* CPU samples of threads inside the stage */
	uint64_t offcpu_ns;	 /* captured off-CPU time of threads inside the stage */
};

/* CPU samples of one stack in one window. */
struct cmp_stack_count {
	uint32_t stack; /* index in stacks */
	uint32_t pad;
	uint64_t count;
};

/* A stack by function names (strings indices), leaf first: kernel frames, then user frames. */
struct cmp_stack {
	uint32_t nr_frames;
	uint32_t *frames;
};

/* One window. */
struct cmp_window {
	int64_t start_unix_ns, end_unix_ns;	       /* its wall-clock span */
	uint64_t cpu_samples;			       /* CPU samples with stacks, every process */
	uint64_t offcpu_ns, offcpu_samples;	       /* captured off-CPU time and its blocks */
	uint64_t runq_count, runq_sum_ns, runq_max_ns; /* run-queue waits, the whole machine */
	uint32_t nr_runq_cells;
	struct hist_cell *runq_cells;		   /* their latencies, sorted by bucket */
	uint64_t gc_count, gc_pause_ns, gc_max_ns; /* GC pauses that started in the window */
	uint64_t drops;				   /* samples and events lost, every reason */
	uint32_t nr_stages;
	struct cmp_stage_win *stages; /* stages with requests or samples there, any order */
	uint32_t nr_stacks;
	struct cmp_stack_count *stacks; /* CPU samples by stack, any order */
};

#define CMP_SIDE_HOST_LEN    256
#define CMP_SIDE_KERNEL_LEN  128
#define CMP_SIDE_VERSION_LEN 64
#define CMP_SIDE_NAME_LEN    65 /* a snapshot name: 1-64 of [A-Za-z0-9._-] and NUL */

/* The conditions a side was recorded under, and where it came from. */
struct cmp_conditions {
	char host[CMP_SIDE_HOST_LEN];	    /* hostname */
	char kernel[CMP_SIDE_KERNEL_LEN];   /* uname release */
	char version[CMP_SIDE_VERSION_LEN]; /* tailprofd's version */
	char snapshot[CMP_SIDE_NAME_LEN];   /* "" for a range of the live daemon */
	uint32_t frequency_hz;		    /* CPU sampling frequency */
	uint64_t sample_period_ns;	    /* CPU time one sample stands for */
	uint64_t window_ns;		    /* window length */
	int64_t from_unix_ns, to_unix_ns;   /* the range asked for (the snapshot's range) */
	int64_t saved_unix_ns;		    /* when the snapshot was saved; 0 for a range */
};

struct cmp_side {
	struct cmp_conditions cond;
	uint32_t nr_strings;
	char **strings; /* NUL-terminated, each malloc'd */
	uint32_t nr_stacks;
	struct cmp_stack *stacks;
	uint32_t nr_windows;
	struct cmp_window *windows; /* oldest first */
};

/* Builds a side from windows[0..n) of the live ring (the caller holds the collector's read lock;
 * the windows are closed), with the conditions of ctx (the host, kernel and version are filled
 * here): stage ids become names (stages__name), stacks become function names as pprof names them
 * (demangled; "object+0xADDR" where no symbol is known), drops summed over every reason. from/to
 * are the range asked for. Returns 0 and *out (free with cmp_side__free) or -ENOMEM. */
int cmp_side__from_windows(const struct query_ctx *ctx, struct window *const *windows, size_t n,
			   int64_t from_unix_ns, int64_t to_unix_ns, struct cmp_side **out);

/* The index of string s in side's table, added when missing. Returns it, or -ENOMEM. A linear
 * search: builders that add many strings keep their own index. */
int64_t cmp_side__intern(struct cmp_side *side, const char *s);

/* The sparse cells of dense[TP_HIST_BUCKETS] (bucket counts; a count past UINT32_MAX is kept as
 * UINT32_MAX), sorted by bucket, malloc'd into *out with *nr of them. Returns 0 or -ENOMEM. */
int cmp_side__cells(const uint64_t *dense, struct hist_cell **out, uint32_t *nr);

/* Frees side and everything it holds. NULL allowed. */
void cmp_side__free(struct cmp_side *side);

/* Checks what a reader must be able to trust: the conditions' strings NUL-terminated; every
 * array present when its count is not 0; no NULL string; every string index (stage names,
 * frames) and stack index in bounds; every cell bucket below TP_HIST_BUCKETS, the cells of a
 * histogram strictly ascending by bucket and their counts summing to its count (a stage's count,
 * a window's runq_count); a stage's sum_ns at most count * max_ns; windows with end > start,
 * oldest first and not overlapping (none starts before the previous one ends), inside
 * [from_unix_ns, to_unix_ns] of the conditions; with windows, from before to and window_ns,
 * frequency_hz and sample_period_ns not 0. Not checked: duplicate strings or stage names. NULL
 * side allowed (not valid). Returns true when side is consistent, else false with why (whylen
 * bytes) naming the first problem ("window 3 stage 1 cell 4: bucket 9 not after ..."). */
bool cmp_side__valid(const struct cmp_side *side, char *why, size_t whylen);

#endif
