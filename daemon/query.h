/* SPDX-License-Identifier: GPL-2.0-only */
/* Queries over the windows: which windows a time range selects, the merged pprof profile of
 * them (query.c), and the JSON (query_json.c) and Prometheus (metrics.c) views. Callers hold the
 * collector's read lock. */
#ifndef TAILPROF_QUERY_H
#define TAILPROF_QUERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tailprof.h"
#include "window.h"

struct collector;
struct features;
struct flamegraph;
struct gc;
struct gc_probes;
struct loader;
struct push;
struct snapshots;
struct spikes;
struct stages;

/* A time range as the API takes it: last=DURATION, or from=/to= (Unix ns; either may be open). */
struct query_range {
	uint64_t last_ns; /* 0: use from/to */
	bool has_from, has_to;
	int64_t from_unix_ns, to_unix_ns;
};

/* What a profile measures. */
enum profile_type {
	PROFILE_CPU = 0, /* samples/count, cpu/nanoseconds: CPU samples */
	PROFILE_OFFCPU,	 /* events/count, off_cpu/nanoseconds: captured blocks */
	PROFILE_WALL,	 /* cpu/nanoseconds, off_cpu/nanoseconds, wall/nanoseconds (their sum): each
			  * thread's time on and off the CPU */
};

/* Which samples a profile takes, and of which type. */
struct profile_filter {
	bool has_pid;
	uint32_t pid;
	const char *comm;      /* exact process name, NULL for any */
	const char *container; /* a container ID or its first 12+ characters, NULL for any */
	bool has_stage;
	uint64_t stage_mask; /* bit i: stage id i (stages__mask) */
	enum profile_type type;
};

/* Parses a profile type name ("cpu", "offcpu", "wall"). Returns 0 or -EINVAL. */
int query__parse_type(const char *name, enum profile_type *type);

struct profile_summary {
	uint64_t samples;
	uint32_t windows;
	int64_t start_unix_ns, end_unix_ns;
};

/* Facts the profile's comments carry. */
struct query_ctx {
	struct collector *collector;
	struct loader *loader; /* for BPF run time in /metrics; may be NULL */
	const char *listen;
	uint32_t frequency_hz;
	uint64_t retention_ns;
	uint64_t offcpu_min_ns;		 /* blocks at least this long have stacks */
	struct stages *stages;		 /* stage names, status and metrics; may be NULL */
	struct spikes *spikes;		 /* spike detection; may be NULL */
	struct gc *gc;			 /* GC tracking; NULL: --gc=off */
	struct gc_probes *gc_probes;	 /* with gc */
	const struct features *features; /* what runs, for the status and /metrics; may be NULL */
	struct snapshots *snapshots;	 /* NULL: no state directory */
	struct push *push;		 /* NULL: no push (push.h) */
};

/* Selects the windows of range, oldest first, into out[0..max). now_mono_ns bounds last=;
 * wall-clock bounds compare with each window's own label. Returns the number selected. */
size_t query__select(struct window_ring *r, const struct query_range *range, uint64_t now_mono_ns,
		     struct window **out, size_t max);

/* Encodes the profile of windows[0..n) of filter->type (NULL filter: all samples, CPU) from the
 * samples that pass filter: gzip pprof in a malloc'd *out of *len bytes, and a summary (samples:
 * CPU samples, off-CPU samples, or both for wall). range (may be NULL) gives the profile's time
 * when no window was selected. Returns 0 or -ENOMEM/-EIO. */
int query__cpu_profile(const struct query_ctx *ctx, struct window *const *windows, size_t n,
		       const struct profile_filter *filter, const struct query_range *range,
		       uint8_t **out, size_t *len, struct profile_summary *sum);

/* Encodes the profile of one span sp (stages.h; kept in a window whose wall-clock offset is
 * wall_offset_ns): its thread's CPU samples within it and its captured blocks clipped to it, from
 * the per-sample records (window.h) of windows[0..n) (window_ring__with_records), of type `type`
 * (PROFILE_WALL: both), with the encoder and labels of query__cpu_profile. gzip pprof in a
 * malloc'd *out of *len bytes; sum: samples and blocks taken, windows that held some, and the
 * span's start and end (Unix ns). Returns 0 or -ENOMEM/-EIO. */
int query__request_profile(const struct query_ctx *ctx, const struct tp_span *sp,
			   int64_t wall_offset_ns, struct window *const *windows, size_t n,
			   enum profile_type type, uint8_t **out, size_t *len,
			   struct profile_summary *sum);

/* A flame graph's sides: the windows selected, and the baseline's (none: nr_baseline 0). */
struct flame_query {
	struct window *const *windows;
	size_t n;
	struct window *const *baseline;
	size_t nr_baseline;
	bool with_baseline;		     /* a baseline was asked for (baseline_total written) */
	const struct profile_filter *filter; /* NULL: every CPU sample */
	const struct query_range *range;     /* the range asked for, for the span; may be NULL */
	double min_share;		     /* in [0, 1): flamegraph.h's trimming */
};

/* The flame graph of q (docs/api.md's /api/v1/flamegraph): the samples a profile of q->filter
 * over q->windows takes, named as that profile names its frames (inlined functions aside), on
 * the selection side, and those of q->baseline on the baseline side. Values: CPU samples (cpu),
 * off-CPU ns (offcpu), CPU time at the sampling period plus off-CPU ns (wall). *json: malloc'd
 * JSON text. Returns 0 or -ENOMEM. */
int query__flamegraph(const struct query_ctx *ctx, const struct flame_query *q, char **json);
/* The tree part of query__flamegraph: adds the samples of q's windows (and baseline) to fg, a CPU
 * sample standing for period_ns in wall profiles. Returns 0 or -ENOMEM (fg partly filled). */
int query__flame_add(struct flamegraph *fg, const struct flame_query *q, uint64_t period_ns);
/* The unit of a flame graph's values: "samples" (cpu) or "nanoseconds" (offcpu, wall). */
const char *query__flame_unit(enum profile_type type);

/* The heat map of windows[0..n) (docs/api.md's /api/v1/heatmap): per window its TP_HEAT_ROWS
 * sub-window counts of CPU samples (offcpu false) or of captured off-CPU blocks (offcpu true),
 * oldest first. Malloc'd JSON text, NULL on ENOMEM. */
char *query__heatmap_json(const struct query_ctx *ctx, struct window *const *windows, size_t n,
			  bool offcpu);

/* Which GC events /api/v1/gc returns. */
struct gc_filter {
	bool has_pid;
	uint32_t pid;
	unsigned runtime; /* enum tp_gc_runtime, 0: any */
};

/* The cgroups (containers, pods) of the samples of windows[0..n): an array, most samples first,
 * at most QUERY_CONTAINERS_MAX, of {"cgroup", "container_id"?, "pod_uid"?, "samples",
 * "offcpu_ns"}; processes in the root cgroup are left out. A new reference. */
#define QUERY_CONTAINERS_MAX 32
struct json_t *query__containers_json(struct window *const *windows, size_t n);

/* JSON bodies (malloc'd, NUL-terminated; NULL on ENOMEM). docs/api.md gives the keys. */
char *query__windows_json(const struct query_ctx *ctx, struct window *const *windows, size_t n);
char *query__status_json(const struct query_ctx *ctx);
/* The GC events of windows[0..n) that pass filter (NULL: all), by start time, and per window
 * the count, total and longest pause of each process. */
char *query__gc_json(const struct query_ctx *ctx, struct window *const *windows, size_t n,
		     const struct gc_filter *filter);
/* Prometheus text exposition format 0.0.4 (malloc'd; NULL on ENOMEM). */
char *query__metrics_text(const struct query_ctx *ctx);

#endif
