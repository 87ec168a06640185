// SPDX-License-Identifier: GPL-2.0-only
/* Unit tests of compare's statistics (daemon/compare_stats.c) with known answers: windows drawn
 * from known distributions, seeded, so every run sees the same numbers. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "compare_stats.h"
#include "tp_hist.h"

#define Z95 1.6448536269514722 /* the standard normal's 0.95 quantile */

static double normal(struct cmp_rng *r)
{
	return sqrt(-2 * log(cmp_rng__uniform(r))) * cos(2 * M_PI * cmp_rng__uniform(r));
}

/* A window of requests drawn from a log-normal: dense buckets to sparse cells. */
struct win {
	struct hist_cell cells[TP_HIST_BUCKETS];
	uint32_t nr_cells;
	uint64_t count, sum_ns, max_ns;
};

/* Draws count latencies exp(mu + shift + sigma Z) ns (shift: log of a factor on all of them). */
static void draw_window(struct win *w, struct cmp_rng *r, uint32_t count, double mu, double sigma)
{
	static uint32_t dense[TP_HIST_BUCKETS];

	memset(dense, 0, sizeof(dense));
	memset(w, 0, sizeof(*w));
	for (uint32_t i = 0; i < count; i++) {
		uint64_t v = (uint64_t)exp(mu + sigma * normal(r));

		dense[tp_hist_bucket(v)]++;
		w->sum_ns += v;
		w->max_ns = v > w->max_ns ? v : w->max_ns;
	}
	w->count = count;
	for (uint32_t b = 0; b < TP_HIST_BUCKETS; b++)
		if (dense[b])
			w->cells[w->nr_cells++] = (struct hist_cell){b, dense[b]};
}

/* A side of n windows. Each window's latencies share a factor exp(tau Z) (its load), so the
 * requests of a window are not independent; the side's true distribution is log-normal with
 * sigma sqrt(sigma^2 + tau^2). Counts vary around per_window (+-25%). */
static void draw_side(struct win *w, struct cmp_hist_win *hw, uint32_t n, struct cmp_rng *r,
		      uint32_t per_window, double mu, double sigma, double tau)
{
	for (uint32_t i = 0; i < n; i++) {
		uint32_t count = per_window * 3 / 4 + cmp_rng__below(r, per_window / 2 + 1);

		draw_window(&w[i], r, count, mu + tau * normal(r), sigma);
		hw[i] = (struct cmp_hist_win){w[i].cells, w[i].nr_cells, w[i].count, w[i].max_ns};
	}
}

static const uint32_t qs[] = {500, 950, 990};

/* Compares p50, p95, p99 and the mean of two sides; results into res[4] (decided). */
static void compare_latency(const struct cmp_hist_win *b, const struct win *bw, uint32_t nb,
			    const struct cmp_hist_win *a, const struct win *aw, uint32_t na,
			    uint64_t seed, struct cmp_result *res, uint32_t nres)
{
	struct cmp_plan pb, pa;
	struct cmp_est eb[4], ea[4];
	struct cmp_result *refs[8];
	struct cmp_rng rng;
	double num[2][64], den[2][64];

	cmp_rng__seed(&rng, seed);
	assert_int_equal(cmp_plan__init(&pb, nb, CMP_RESAMPLES, cmp_block_len(nb), &rng), 0);
	assert_int_equal(cmp_plan__init(&pa, na, CMP_RESAMPLES, cmp_block_len(na), &rng), 0);
	assert_int_equal(cmp_est__quantiles(eb, &pb, b, qs, 3), 0);
	assert_int_equal(cmp_est__quantiles(ea, &pa, a, qs, 3), 0);
	for (uint32_t i = 0; i < nb; i++)
		num[0][i] = (double)bw[i].sum_ns, den[0][i] = (double)bw[i].count;
	for (uint32_t i = 0; i < na; i++)
		num[1][i] = (double)aw[i].sum_ns, den[1][i] = (double)aw[i].count;
	assert_int_equal(cmp_est__ratio(&eb[3], &pb, num[0], den[0]), 0);
	assert_int_equal(cmp_est__ratio(&ea[3], &pa, num[1], den[1]), 0);
	for (uint32_t j = 0; j < nres; j++) {
		assert_int_equal(cmp_diff(&eb[j], &ea[j], &res[j]), 0);
		refs[j] = &res[j];
	}
	cmp_fdr(refs, nres, CMP_ALPHA);
	for (uint32_t j = 0; j < nres; j++)
		cmp_decide(&res[j], CMP_WORSE_UP, CMP_MIN_EFFECT, j < 3 ? eb[j].widen : 0);
	for (uint32_t j = 0; j < 4; j++) {
		cmp_est__free(&eb[j]);
		cmp_est__free(&ea[j]);
	}
	cmp_plan__free(&pb);
	cmp_plan__free(&pa);
}

static struct win wb[64], wa[64];
static struct cmp_hist_win hb[64], ha[64];

/* Coverage: after = before with every latency 10% longer (p95 exactly 10% up). In 500 seeded
 * trials the p95 interval contains the true shift at least 92% of the time
 * (nominal 95%). With 60 windows of 300 requests a narrow log-normal's shift is called
 * regressed in 95% of trials; a heavy-tailed one (sigma 1: p99/p50 ~ 10) with 30 windows in
 * half, its interval as honest. */
static void coverage(double sigma, uint32_t n, uint32_t per_window, uint32_t min_detected)
{
	const double mu = log(5e6), tau = 0.05, s = sqrt(sigma * sigma + tau * tau);
	const double true_diff = exp(mu + s * Z95) * 0.10;
	uint32_t covered = 0, detected = 0, trials = 500;
	struct cmp_rng r;

	cmp_rng__seed(&r, 42 + (uint64_t)(sigma * 100));
	for (uint32_t t = 0; t < trials; t++) {
		struct cmp_result res[4];

		draw_side(wb, hb, n, &r, per_window, mu, sigma, tau);
		draw_side(wa, ha, n, &r, per_window, mu + log(1.10), sigma, tau);
		compare_latency(hb, wb, n, ha, wa, n, t + 1, res, 2);
		covered += res[1].ci_low <= true_diff && true_diff <= res[1].ci_high;
		detected += res[1].verdict == CMP_REGRESSED;
	}
	printf("sigma %.1f, %u windows a side: the interval held the true p95 shift in %u of %u "
	       "trials; regressed in %u\n",
	       sigma, n, covered, trials, detected);
	assert_true(covered >= trials * 92 / 100);
	assert_true(detected >= min_detected);
}

static void test_coverage_narrow(void **state)
{
	(void)state;
	coverage(0.3, 60, 300, 475);
}

static void test_coverage_heavy_tail(void **state)
{
	(void)state;
	coverage(1.0, 30, 300, 250);
}

/* Two samples of one distribution: over p50, p95, p99 and the mean, with the false discovery
 * rate controlled, no trial in more than 5% calls anything improved or regressed. */
static void test_no_false_alarm(void **state)
{
	uint32_t alarms = 0, unchanged = 0, trials = 500;
	struct cmp_rng r;

	(void)state;
	cmp_rng__seed(&r, 7);
	for (uint32_t t = 0; t < trials; t++) {
		struct cmp_result res[4];
		bool alarm = false;

		draw_side(wb, hb, 30, &r, 300, log(3e6), 0.5, 0.05);
		draw_side(wa, ha, 30, &r, 300, log(3e6), 0.5, 0.05);
		compare_latency(hb, wb, 30, ha, wa, 30, t + 1, res, 4);
		for (int j = 0; j < 4; j++) {
			alarm |= res[j].verdict == CMP_IMPROVED || res[j].verdict == CMP_REGRESSED;
			unchanged += res[j].verdict == CMP_UNCHANGED;
		}
		alarms += alarm;
	}
	printf("same distribution: %u of %u trials called something changed; %u of %u metrics "
	       "unchanged\n",
	       alarms, trials, unchanged, 4 * trials);
	assert_true(alarms <= trials * 5 / 100);
}

/* A report is the same for the same seed. */
static void test_reproducible(void **state)
{
	struct cmp_result r1[4], r2[4];
	struct cmp_rng r;

	(void)state;
	cmp_rng__seed(&r, 3);
	draw_side(wb, hb, 20, &r, 200, log(1e6), 0.4, 0.05);
	draw_side(wa, ha, 20, &r, 200, log(1.05e6), 0.4, 0.05);
	compare_latency(hb, wb, 20, ha, wa, 20, 99, r1, 4);
	compare_latency(hb, wb, 20, ha, wa, 20, 99, r2, 4);
	for (int j = 0; j < 4; j++) {
		assert_true(r1[j].ci_low == r2[j].ci_low && r1[j].ci_high == r2[j].ci_high);
		assert_true(r1[j].p_value == r2[j].p_value);
	}
}

/* Fewer than 6 windows a side: inconclusive, said so, even for a large change. */
static void test_few_windows(void **state)
{
	struct cmp_result res[4];
	struct cmp_rng r;

	(void)state;
	cmp_rng__seed(&r, 5);
	draw_side(wb, hb, 4, &r, 500, log(1e6), 0.2, 0.01);
	draw_side(wa, ha, 30, &r, 500, log(2e6), 0.2, 0.01);
	compare_latency(hb, wb, 4, ha, wa, 30, 1, res, 4);
	for (int j = 0; j < 4; j++) {
		assert_int_equal(res[j].verdict, CMP_INCONCLUSIVE);
		assert_non_null(res[j].reason);
		assert_int_equal(res[j].n_before, 4);
	}
	/* with 8 windows the doubling is found */
	draw_side(wb, hb, 8, &r, 500, log(1e6), 0.2, 0.01);
	compare_latency(hb, wb, 8, ha, wa, 30, 1, res, 4);
	assert_int_equal(res[1].verdict, CMP_REGRESSED);
	assert_true(res[1].ci_low > 0.8e6 * exp(0.2 * Z95));
}

/* The rank test: known exact values, ties, and the normal approximation's agreement. */
static void test_mann_whitney(void **state)
{
	double x[40], y[40];

	(void)state;
	/* complete separation: 2 of C(6, 3) = 20 arrangements are as extreme */
	assert_float_equal(cmp_mann_whitney((double[]){1, 2, 3}, 3, (double[]){4, 5, 6}, 3), 0.1,
			   1e-12);
	assert_float_equal(cmp_mann_whitney((double[]){1, 2, 3, 4}, 4, (double[]){5, 6, 7, 8}, 4),
			   2.0 / 70, 1e-12);
	/* every value ties: p = 1 */
	for (int i = 0; i < 30; i++)
		x[i] = y[i] = 1500000;
	assert_float_equal(cmp_mann_whitney(x, 30, y, 30), 1, 0);
	assert_float_equal(cmp_mann_whitney(x, 10, y, 10), 1, 0);
	/* ties, exact: x = {1,1,2}, y = {2,3,3}; doubled mid-ranks 3,3,7,7,11,11 (x has 3,3,7 =
	 * 13, mean 21); arrangements as far from 21: sums 13 and 29, 1 + 2 + ... counted by hand:
	 * picks of 3 from {3,3,7,7,11,11} with sum <= 13: {3,3,7} x2 = 2; >= 29: {7,11,11} x2 =
	 * 2; of 20: p = 0.2 */
	assert_float_equal(cmp_mann_whitney((double[]){1, 1, 2}, 3, (double[]){2, 3, 3}, 3), 0.2,
			   1e-12);
	/* symmetric in its sides */
	for (int i = 0; i < 12; i++) {
		x[i] = i % 5;
		y[i] = i % 7 + 0.5 * (i % 2);
	}
	assert_float_equal(cmp_mann_whitney(x, 12, y, 9), cmp_mann_whitney(y, 9, x, 12), 1e-12);
	/* beyond CMP_EXACT_MAX the normal approximation: shifted by half a spread, clearly
	 * significant; the same values, clearly not */
	for (int i = 0; i < 40; i++) {
		x[i] = i;
		y[i] = i + 20;
	}
	assert_true(cmp_mann_whitney(x, 40, y, 40) < 1e-3);
	assert_true(cmp_mann_whitney(x, 40, x, 40) > 0.9);
	/* exact and normal agree roughly at the boundary: 20 + 20 exact vs 21 + 21 normal */
	assert_float_equal(cmp_mann_whitney(x, 20, y, 20), cmp_mann_whitney(x, 21, y, 21), 0.01);
}

/* Benjamini-Hochberg: p = 0.01, 0.02, 0.03, 0.5 at 0.05: the first three are discoveries
 * (0.03 <= 3/4 * 0.05); with one more at 0.9 the threshold for the third is 3/5 * 0.05 = 0.03. */
static void test_fdr(void **state)
{
	struct cmp_result r[5] = {{.p_value = 0.02},
				  {.p_value = 0.5},
				  {.p_value = 0.01},
				  {.p_value = 0.03},
				  {.p_value = NAN}};
	struct cmp_result *refs[5] = {&r[0], &r[1], &r[2], &r[3], &r[4]};

	(void)state;
	cmp_fdr(refs, 5, 0.05);
	assert_true(r[0].significant && r[2].significant && r[3].significant);
	assert_false(r[1].significant || r[4].significant);
	r[4].p_value = 0.04;
	cmp_fdr(refs, 5, 0.05);
	assert_true(r[3].significant && r[4].significant); /* 0.04 <= 4/5 * 0.05 */
	r[4].p_value = 0.9;
	r[3].p_value = 0.031;
	cmp_fdr(refs, 5, 0.05);
	assert_true(r[0].significant && r[2].significant);
	assert_false(r[3].significant);
}

/* The verdict rule on made-up results, directions included. */
static void test_decide(void **state)
{
	struct cmp_result r = {.before = 100,
			       .after = 90,
			       .diff = -10,
			       .ci_low = -14,
			       .ci_high = -6,
			       .n_before = 10,
			       .n_after = 10,
			       .p_value = 0.001,
			       .significant = true};

	(void)state;
	cmp_decide(&r, CMP_WORSE_UP, 0.02, 0);
	assert_int_equal(r.verdict, CMP_IMPROVED);
	cmp_decide(&r, CMP_WORSE_DOWN, 0.02, 0);
	assert_int_equal(r.verdict, CMP_REGRESSED);
	r.significant = false;
	cmp_decide(&r, CMP_WORSE_UP, 0.02, 0);
	assert_int_equal(r.verdict, CMP_INCONCLUSIVE);
	assert_true(r.windows_needed > 10);
	/* within +-2% of 100: unchanged */
	r = (struct cmp_result){.before = 100,
				.after = 100.5,
				.diff = 0.5,
				.ci_low = -1.5,
				.ci_high = 1.9,
				.n_before = 10,
				.n_after = 10,
				.p_value = 0.8};
	cmp_decide(&r, CMP_WORSE_UP, 0.02, 0);
	assert_int_equal(r.verdict, CMP_UNCHANGED);
	/* a bucket's width floors the minimum effect of a percentile: 3 is below it */
	r = (struct cmp_result){.before = 100,
				.after = 103,
				.diff = 3,
				.ci_low = 2.5,
				.ci_high = 3.5,
				.n_before = 10,
				.n_after = 10,
				.p_value = 0.001,
				.significant = true};
	cmp_decide(&r, CMP_WORSE_UP, 0.02, 4);
	assert_int_equal(r.verdict, CMP_UNCHANGED);
	cmp_decide(&r, CMP_WORSE_UP, 0.02, 0);
	assert_int_equal(r.verdict, CMP_REGRESSED);
	/* 0 before and after: unchanged; a side without values: inconclusive with a reason */
	r = (struct cmp_result){.n_before = 10, .n_after = 10, .p_value = 1};
	cmp_decide(&r, CMP_WORSE_UP, 0.02, 0);
	assert_int_equal(r.verdict, CMP_UNCHANGED);
	r.n_after = 0;
	cmp_decide(&r, CMP_WORSE_UP, 0.02, 0);
	assert_int_equal(r.verdict, CMP_INCONCLUSIVE);
	assert_string_equal(r.reason, "no values after");
}

/* The plan: every resample picks exactly n windows in runs of block; the same seed, the same
 * plan; ratios and maxima over it are those of the picked windows. */
static void test_plan(void **state)
{
	struct cmp_plan p, q;
	struct cmp_est e;
	struct cmp_rng r1, r2;
	double num[10], den[10];

	(void)state;
	assert_int_equal(cmp_block_len(1), 1);
	assert_int_equal(cmp_block_len(8), 2);
	assert_int_equal(cmp_block_len(30), 4);
	assert_int_equal(cmp_block_len(360), 8);
	cmp_rng__seed(&r1, 11);
	cmp_rng__seed(&r2, 11);
	assert_int_equal(cmp_plan__init(&p, 10, 100, 3, &r1), 0);
	assert_int_equal(cmp_plan__init(&q, 10, 100, 3, &r2), 0);
	for (uint32_t b = 0; b < 100; b++) {
		uint32_t sum = 0;

		for (uint32_t k = p.off[b]; k < p.off[b + 1]; k++)
			sum += p.wt[k];
		assert_int_equal(sum, 10);
	}
	assert_memory_equal(p.idx, q.idx, p.off[100] * sizeof(*p.idx));
	for (int i = 0; i < 10; i++)
		num[i] = i, den[i] = 1;
	assert_int_equal(cmp_est__ratio(&e, &p, num, den), 0);
	assert_float_equal(e.value, 4.5, 1e-12);
	assert_int_equal(e.n_values, 10);
	for (uint32_t b = 0; b < 100; b++)
		assert_true(e.boot[b] >= 0 && e.boot[b] <= 9);
	cmp_est__free(&e);
	assert_int_equal(cmp_est__max(&e, &p, num), 0);
	assert_float_equal(e.value, 9, 0);
	cmp_est__free(&e);
	cmp_plan__free(&p);
	cmp_plan__free(&q);
	/* no windows: nothing is defined */
	assert_int_equal(cmp_plan__init(&p, 0, 10, 1, &r1), 0);
	assert_int_equal(cmp_est__ratio(&e, &p, num, den), 0);
	assert_true(isnan(e.value) && isnan(e.boot[0]));
	cmp_est__free(&e);
	cmp_plan__free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_plan),
	    cmocka_unit_test(test_mann_whitney),
	    cmocka_unit_test(test_fdr),
	    cmocka_unit_test(test_decide),
	    cmocka_unit_test(test_reproducible),
	    cmocka_unit_test(test_few_windows),
	    cmocka_unit_test(test_coverage_narrow),
	    cmocka_unit_test(test_coverage_heavy_tail),
	    cmocka_unit_test(test_no_false_alarm),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
