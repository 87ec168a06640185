/* SPDX-License-Identifier: GPL-2.0-only */
/* What the query files share (query.c: window selection and profiles; query_json.c: the JSON
 * views; metrics.c: the Prometheus text of /metrics). Not a contract for other modules: query.h
 * is. */
#ifndef TAILPROF_QUERY_INTERNAL_H
#define TAILPROF_QUERY_INTERNAL_H

#include <stdint.h>

#include "gc.h"
#include "query.h"
#include "window.h"
/* The start of a window as far as data goes: the first window starts when the daemon did. */
static inline int64_t window_start_unix(const struct window *w, uint64_t started_mono)
{
	return (int64_t)(w->start_ns > started_mono ? w->start_ns : started_mono) +
	       w->wall_offset_ns;
}

/* The end of a window as far as data goes: the current window ends at the last drain. */
static inline int64_t window_end_unix(const struct window *w, uint64_t last_drain)
{
	uint64_t end = w->closed || last_drain >= w->end_ns ? w->end_ns : last_drain;

	if (end < w->start_ns)
		end = w->start_ns;
	return (int64_t)end + w->wall_offset_ns;
}

/* Whether window entry e goes into a profile of filter f (NULL: every CPU sample): it holds
 * values of f's type and its task passes f's pid, comm, container and stage (query.c). */
bool query__entry_passes(const struct profile_filter *f, const struct window_entry *e);
/* The wall-clock span (Unix ns) of windows[0..n) as far as data goes: from the first one's start
 * to the last one's end (the last drain for the current window); with no window, the span range
 * (may be NULL) asked for, ending now at the latest (query.c). */
void query__span(const struct query_ctx *ctx, struct window *const *windows, size_t n,
		 const struct query_range *range, int64_t *start, int64_t *end);

/* Pauses stop the mutator: JVM and CPython collections, Go stop-the-world. */
struct gc_totals {
	uint64_t events, pauses, pause_ns, max_pause_ns;
	uint64_t collections, collection_ns, safepoints, safepoint_ns;
};

/* Counts event e into t (query_json.c). */
void gc_totals__add(struct gc_totals *t, const struct gc_event *e);

#endif
