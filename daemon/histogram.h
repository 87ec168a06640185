/* SPDX-License-Identifier: GPL-2.0-only */
/* Latency histograms over the log-linear buckets of bpf/tp_hist.h: percentiles and summaries.
 * Pure functions, no allocation. */
#ifndef TAILPROF_HISTOGRAM_H
#define TAILPROF_HISTOGRAM_H

#include <stdbool.h>
#include <stdint.h>

#include "tp_hist.h"

/* Below this many values a percentile is flagged low_sample: the tail of 19 requests is one
 * request, not a distribution. */
#define HIST_LOW_SAMPLE 20

struct hist_summary {
	uint64_t count;
	uint64_t sum_ns;
	uint64_t p50_ns, p90_ns, p95_ns, p99_ns, max_ns;
	bool low_sample; /* count < HIST_LOW_SAMPLE */
};

/* The q-th per-mille (500 = p50, 990 = p99) by nearest rank: the value of rank
 * ceil(count * q / 1000) (at least 1) in ascending order, reported as its bucket's midpoint
 * (tp_hist.h: within 1.6%), and never above max_ns (the exact maximum; also the value of the
 * overflow bucket). buckets has TP_HIST_BUCKETS entries summing to count. 0 when count is 0. */
uint64_t histogram__percentile(const uint64_t *buckets, uint64_t count, uint64_t max_ns,
			       uint32_t q_permille);

/* The nearest rank of the q-th per-mille of count values: ceil(count * q / 1000), within
 * [1, count] (0 when count is 0). */
uint64_t histogram__rank(uint64_t count, uint32_t q_permille);

/* Fills out (count, percentiles, max, low_sample) from TP_HIST_BUCKETS buckets. */
void histogram__summarize(const uint64_t *buckets, uint64_t sum_ns, uint64_t max_ns,
			  struct hist_summary *out);

#endif
