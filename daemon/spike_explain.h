/* SPDX-License-Identifier: GPL-2.0-only */
/* The evidence of one spike: its slow requests' accounting against the baseline's requests, and
 * the four causes (runq, offcpu, cpu, gc) with their share of the p95 rise. docs/spikes.md gives
 * the rules. Pure over the windows given; the caller holds the collector's lock. */
#ifndef TAILPROF_SPIKE_EXPLAIN_H
#define TAILPROF_SPIKE_EXPLAIN_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

struct stages;
struct window;

struct spike_explain_in {
	uint32_t stage; /* 0: a mark of no stage (no requests to explain) */
	struct stages *stages;
	uint64_t p95_ns, baseline_p95_ns; /* the rise is their difference */
	struct window *const *spike;	  /* the spike windows, oldest first */
	size_t nr_spike;
	struct window *const *base; /* the baseline windows */
	size_t nr_base;
};

/* Requests listed at most, slowest first. */
#define SPIKE_EXPLAIN_MAX_REQUESTS 50

/* Returns a new JSON object {"causes": [...], "evidence": {...}, "requests": [...]}, NULL on
 * ENOMEM. Causes: {"kind", "share" (0..1), "summary", "spike_median_ns", "baseline_median_ns",
 * "delta_ns", and per kind its top items}, sorted by share, highest first. */
json_t *spike_explain(const struct spike_explain_in *in);

#endif
