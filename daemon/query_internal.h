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

/* Pauses stop the mutator: JVM and CPython collections, Go stop-the-world. */
struct gc_totals {
	uint64_t events, pauses, pause_ns, max_pause_ns;
	uint64_t collections, collection_ns, safepoints, safepoint_ns;
};

/* Counts event e into t (query_json.c). */
void gc_totals__add(struct gc_totals *t, const struct gc_event *e);

#endif
