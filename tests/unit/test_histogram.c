// SPDX-License-Identifier: GPL-2.0-only
/* Unit tests of the log-linear bucket scheme (bpf/tp_hist.h) and of percentiles over it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "histogram.h"

/* Every value from 0 to 2^43 (sampled densely at each power of two and its neighbours, and at
 * pseudo-random points) lands in a bucket that contains it, whose reported value is within
 * 1/64 of it; buckets are contiguous and monotonic. */
static void test_error_bound(void **state)
{
	uint64_t x = 88172645463325252ULL;

	for (uint32_t b = 0; b + 1 < TP_HIST_OVERFLOW; b++)
		assert_int_equal(tp_hist_lower(b) + tp_hist_width(b), tp_hist_lower(b + 1));
	assert_int_equal(tp_hist_lower(TP_HIST_OVERFLOW - 1) + tp_hist_width(TP_HIST_OVERFLOW - 1),
			 1ULL << (TP_HIST_MAX_LOG2 + 1));
	for (int i = 0; i < 2000000; i++) {
		uint64_t v;
		uint32_t b;
		double err;

		if (i < 64 * 44) {
			/* around each power of two */
			v = (1ULL << (i / 64 % 44)) + (uint64_t)(i % 64) - 32;
			if ((int64_t)v < 0)
				continue;
		} else {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			v = x >> (21 + x % 40); /* spread over every magnitude */
		}
		if (v >= 1ULL << (TP_HIST_MAX_LOG2 + 1))
			continue;
		b = tp_hist_bucket(v);
		assert_true(b < TP_HIST_OVERFLOW);
		assert_true(tp_hist_lower(b) <= v && v < tp_hist_lower(b) + tp_hist_width(b));
		err = v ? (double)(tp_hist_value(b) > v ? tp_hist_value(b) - v
							: v - tp_hist_value(b)) /
			      (double)v
			: 0;
		assert_true(err <= 1.0 / 64 + 1e-12);
	}
}

static void test_zero_and_over_an_hour(void **state)
{
	uint64_t *acc = calloc(TP_HIST_BUCKETS, sizeof(*acc));
	const uint64_t two_hours = 7200ULL * 1000000000ULL,
		       five_hours = 5 * 3600ULL * 1000000000ULL;
	struct hist_summary h;

	assert_int_equal(tp_hist_bucket(0), 0);
	assert_int_equal(tp_hist_value(0), 0);
	/* 2 h is still bucketed; 5 h goes to the overflow bucket and reads as the max */
	assert_true(tp_hist_bucket(two_hours) < TP_HIST_OVERFLOW);
	assert_int_equal(tp_hist_bucket(five_hours), TP_HIST_OVERFLOW);
	assert_int_equal(tp_hist_bucket(UINT64_MAX), TP_HIST_OVERFLOW);

	acc[0] = 50; /* zero durations */
	histogram__summarize(acc, 0, 0, &h);
	assert_int_equal(h.count, 50);
	assert_int_equal(h.p50_ns, 0);
	assert_int_equal(h.p99_ns, 0);
	assert_int_equal(h.max_ns, 0);
	assert_false(h.low_sample);

	acc[tp_hist_bucket(two_hours)] += 40;
	acc[TP_HIST_OVERFLOW] += 10;
	histogram__summarize(acc, 0, five_hours, &h);
	assert_int_equal(h.count, 100);
	assert_int_equal(h.p50_ns, 0);
	assert_true(h.p90_ns > two_hours * 63 / 64 && h.p90_ns < two_hours * 65 / 64);
	assert_int_equal(h.p95_ns, five_hours);
	assert_int_equal(h.max_ns, five_hours);
	free(acc);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Percentiles of a known distribution agree with exact nearest-rank ones within 1/64. */
static void test_percentiles_against_exact(void **state)
{
	enum { N = 10007 };
	uint64_t *v = malloc(N * sizeof(*v)), *acc = calloc(TP_HIST_BUCKETS, sizeof(*acc));
	static const uint32_t qs[] = {500, 900, 950, 990};
	uint64_t x = 42, max = 0;
	struct hist_summary h;

	for (int i = 0; i < N; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		/* 2 ms +- 1 ms, and every 20th 30 ms */
		v[i] = i % 20 == 19 ? 30000000 + x % 1000000 : 1000000 + x % 2000000;
		acc[tp_hist_bucket(v[i])]++;
		if (v[i] > max)
			max = v[i];
	}
	qsort(v, N, sizeof(*v), cmp_u64);
	for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
		uint64_t rank = (N * (uint64_t)qs[i] + 999) / 1000;
		uint64_t exact = v[rank - 1], got = histogram__percentile(acc, N, max, qs[i]);
		uint64_t diff = got > exact ? got - exact : exact - got;

		assert_true(diff * 64 <= exact);
	}
	histogram__summarize(acc, 0, max, &h);
	assert_int_equal(h.count, N);
	assert_int_equal(h.max_ns, max);
	assert_true(h.p99_ns <= max);
	free(v);
	free(acc);
}

static void test_low_sample(void **state)
{
	uint64_t *acc = calloc(TP_HIST_BUCKETS, sizeof(*acc));
	struct hist_summary h;

	histogram__summarize(acc, 0, 0, &h);
	assert_int_equal(h.count, 0);
	assert_int_equal(h.p50_ns, 0);
	assert_true(h.low_sample);
	acc[tp_hist_bucket(1000)] = HIST_LOW_SAMPLE - 1;
	histogram__summarize(acc, 0, 1000, &h);
	assert_true(h.low_sample);
	assert_int_equal(h.p99_ns, 1000); /* clamped to the max */
	acc[tp_hist_bucket(1000)]++;
	histogram__summarize(acc, 0, 1000, &h);
	assert_false(h.low_sample);
	/* one value: every percentile is it */
	memset(acc, 0, TP_HIST_BUCKETS * sizeof(*acc));
	acc[tp_hist_bucket(123456)] = 1;
	histogram__summarize(acc, 0, 123456, &h);
	assert_int_equal(h.p50_ns, h.p99_ns);
	assert_true(h.p50_ns * 64 >= 123456 * 63 && h.p50_ns <= 123456);
	free(acc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_error_bound),
	    cmocka_unit_test(test_zero_and_over_an_hour),
	    cmocka_unit_test(test_percentiles_against_exact),
	    cmocka_unit_test(test_low_sample),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
