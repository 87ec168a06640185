// SPDX-License-Identifier: GPL-2.0-only
/* Percentiles of log-linear histograms (bucket scheme and error bound in bpf/tp_hist.h). */
#include "histogram.h"

#include <string.h>

uint64_t histogram__rank(uint64_t count, uint32_t q_permille)
{
	/* ceil(count * q / 1000) without overflow for any realistic count */
	uint64_t rank = count / 1000 * q_permille + ((count % 1000) * q_permille + 999) / 1000;

	if (!count)
		return 0;
	return rank < 1 ? 1 : rank > count ? count : rank;
}

uint64_t histogram__percentile(const uint64_t *buckets, uint64_t count, uint64_t max_ns,
			       uint32_t q_permille)
{
	uint64_t rank, cum = 0;

	if (!count)
		return 0;
	rank = histogram__rank(count, q_permille);
	for (uint32_t b = 0; b < TP_HIST_BUCKETS; b++) {
		cum += buckets[b];
		if (cum >= rank) {
			uint64_t v = b == TP_HIST_OVERFLOW ? max_ns : tp_hist_value(b);

			return v < max_ns || !max_ns ? v : max_ns;
		}
	}
	return max_ns;
}

void histogram__summarize(const uint64_t *buckets, uint64_t sum_ns, uint64_t max_ns,
			  struct hist_summary *out)
{
	uint64_t count = 0;

	for (uint32_t b = 0; b < TP_HIST_BUCKETS; b++)
		count += buckets[b];
	memset(out, 0, sizeof(*out));
	out->count = count;
	out->sum_ns = sum_ns;
	out->max_ns = count ? max_ns : 0;
	out->p50_ns = histogram__percentile(buckets, count, max_ns, 500);
	out->p90_ns = histogram__percentile(buckets, count, max_ns, 900);
	out->p95_ns = histogram__percentile(buckets, count, max_ns, 950);
	out->p99_ns = histogram__percentile(buckets, count, max_ns, 990);
	out->low_sample = count < HIST_LOW_SAMPLE;
}
