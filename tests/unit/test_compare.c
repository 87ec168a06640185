// SPDX-License-Identifier: GPL-2.0-only
/* Unit tests of compare's report (daemon/compare.c) on sides built by hand with known answers:
 * a run against itself calls nothing changed, a 20% slower stage and a function whose share
 * doubled are regressed and listed, the JSON has the documented keys, and a stage in neither
 * side is an error. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cmp_side.h"
#include "compare.h"
#include "compare_stats.h"
#include "tp_hist.h"

#define SEC 1000000000LL

static double normal(struct cmp_rng *r)
{
	return sqrt(-2 * log(cmp_rng__uniform(r))) * cos(2 * M_PI * cmp_rng__uniform(r));
}

/* Sparse cells of count log-normal latencies around median_ns (sigma 0.3). */
static struct hist_cell *draw_cells(struct cmp_rng *r, uint32_t count, double median_ns,
				    uint32_t *nr, uint64_t *sum, uint64_t *max)
{
	static uint32_t dense[TP_HIST_BUCKETS];
	struct hist_cell *c;

	memset(dense, 0, sizeof(dense));
	*sum = *max = 0;
	for (uint32_t i = 0; i < count; i++) {
		uint64_t v = (uint64_t)(median_ns * exp(0.3 * normal(r)));

		dense[tp_hist_bucket(v)]++;
		*sum += v;
		*max = v > *max ? v : *max;
	}
	c = calloc(TP_HIST_BUCKETS, sizeof(*c));
	assert_non_null(c);
	*nr = 0;
	for (uint32_t b = 0; b < TP_HIST_BUCKETS; b++)
		if (dense[b])
			c[(*nr)++] = (struct hist_cell){b, dense[b]};
	return c;
}

/* A side of n 1 s windows from t0: stage "compute" (200 requests a window, median compute_ns)
 * and "io" (100 a window, 1 ms), CPU stacks main <- hot (hot_share of 1000 samples) and main <-
 * cold (the rest), run-queue waits around 50 us, a GC pause of 5 ms every other window. */
static struct cmp_side *make_side(uint64_t seed, uint32_t n, int64_t t0, double compute_ns,
				  double hot_share)
{
	struct cmp_side *s = calloc(1, sizeof(*s));
	struct cmp_rng r;
	int64_t compute, io, hot, cold, main_fn;

	assert_non_null(s);
	cmp_rng__seed(&r, seed);
	snprintf(s->cond.host, sizeof(s->cond.host), "host-a");
	snprintf(s->cond.kernel, sizeof(s->cond.kernel), "6.1.0");
	snprintf(s->cond.version, sizeof(s->cond.version), "0.1.0");
	s->cond.frequency_hz = 99;
	s->cond.sample_period_ns = SEC / 99;
	s->cond.window_ns = SEC;
	s->cond.from_unix_ns = t0;
	s->cond.to_unix_ns = t0 + (int64_t)n * SEC;
	compute = cmp_side__intern(s, "compute");
	io = cmp_side__intern(s, "io");
	hot = cmp_side__intern(s, "hot");
	cold = cmp_side__intern(s, "cold");
	main_fn = cmp_side__intern(s, "main");
	assert_true(compute >= 0 && io >= 0 && hot >= 0 && cold >= 0 && main_fn >= 0);
	s->nr_stacks = 2;
	s->stacks = calloc(2, sizeof(*s->stacks));
	for (int k = 0; k < 2; k++) {
		s->stacks[k].nr_frames = 2;
		s->stacks[k].frames = calloc(2, sizeof(uint32_t));
		s->stacks[k].frames[0] = (uint32_t)(k ? cold : hot);
		s->stacks[k].frames[1] = (uint32_t)main_fn;
	}
	s->nr_windows = n;
	s->windows = calloc(n, sizeof(*s->windows));
	for (uint32_t i = 0; i < n; i++) {
		struct cmp_window *w = &s->windows[i];
		uint64_t hot_n = (uint64_t)(1000 * hot_share + 20 * normal(&r));

		w->start_unix_ns = t0 + (int64_t)i * SEC;
		w->end_unix_ns = w->start_unix_ns + SEC;
		w->nr_stages = 2;
		w->stages = calloc(2, sizeof(*w->stages));
		w->stages[0].name = (uint32_t)compute;
		w->stages[0].count = 200;
		w->stages[0].cells = draw_cells(&r, 200, compute_ns, &w->stages[0].nr_cells,
						&w->stages[0].sum_ns, &w->stages[0].max_ns);
		w->stages[0].cpu_samples = 600;
		w->stages[1].name = (uint32_t)io;
		w->stages[1].count = 100;
		w->stages[1].cells = draw_cells(&r, 100, 1e6, &w->stages[1].nr_cells,
						&w->stages[1].sum_ns, &w->stages[1].max_ns);
		w->nr_stacks = 2;
		w->stacks = calloc(2, sizeof(*w->stacks));
		w->stacks[0] = (struct cmp_stack_count){.stack = 0, .count = hot_n};
		w->stacks[1] = (struct cmp_stack_count){.stack = 1, .count = 1000 - hot_n};
		w->cpu_samples = 1000;
		w->offcpu_ns = 300000000 + (uint64_t)(1e6 * normal(&r));
		w->runq_count = 500;
		w->runq_cells =
		    draw_cells(&r, 500, 50000, &w->nr_runq_cells, &w->runq_sum_ns, &w->runq_max_ns);
		if (i % 2 == 0) {
			w->gc_count = 1;
			w->gc_pause_ns = w->gc_max_ns = 5000000;
		}
	}
	return s;
}

static const struct compare_opts opts = {.min_effect = 0.02, .alpha = 0.05, .seed = 1};

static const json_t *stage_of(const json_t *report, const char *name)
{
	size_t i;
	json_t *s;

	json_array_foreach(
	    json_object_get(report, "stages"), i,
	    s) if (!strcmp(json_string_value(json_object_get(s, "stage")), name)) return s;
	return NULL;
}

static const char *verdict(const json_t *metric)
{
	return json_string_value(json_object_get(metric, "verdict"));
}

/* Every metric object of the report (stages', totals, functions) through fn. */
static void each_metric(const json_t *r, void (*fn)(const char *path, const json_t *m, void *),
			void *arg)
{
	static const char *const keys[] = {"p50", "p95", "p99", "mean", "rate", "cpu"};
	static const char *const totals[] = {"cpu", "offcpu", "runq", "drops"};
	const json_t *s;
	size_t i;

	json_array_foreach(json_object_get(r, "stages"), i, s) for (int k = 0; k < 6; k++)
	    fn(keys[k], json_object_get(s, keys[k]), arg);
	for (int k = 0; k < 4; k++)
		fn(totals[k], json_object_get(r, totals[k]), arg);
	fn("gc.total", json_object_get(json_object_get(r, "gc"), "total"), arg);
	fn("gc.max", json_object_get(json_object_get(r, "gc"), "max"), arg);
	json_array_foreach(json_object_get(r, "functions"), i, s) fn("function", s, arg);
}

static void count_alarm(const char *path, const json_t *m, void *arg)
{
	const char *v = verdict(m);

	assert_non_null(v);
	(void)path;
	*(int *)arg += !strcmp(v, "improved") || !strcmp(v, "regressed");
}

/* Two sides drawn from the same distributions (a run against itself): nothing is called
 * improved or regressed anywhere, no regression listed, the same load. Over 20 seeds. */
static void test_self_no_alarm(void **state)
{
	(void)state;
	for (uint64_t seed = 1; seed <= 20; seed++) {
		struct cmp_side *a = make_side(seed, 30, 1000 * SEC, 3e6, 0.3);
		struct cmp_side *b = make_side(seed + 1000, 30, 2000 * SEC, 3e6, 0.3);
		char err[256];
		json_t *r = compare__report(a, b, &opts, err, sizeof(err));
		int alarms = 0;

		assert_non_null(r);
		each_metric(r, count_alarm, &alarms);
		assert_int_equal(alarms, 0);
		assert_int_equal(json_array_size(json_object_get(r, "regressions")), 0);
		assert_false(json_is_true(
		    json_object_get(json_object_get(r, "conditions"), "load_differs")));
		json_decref(r);
		cmp_side__free(a);
		cmp_side__free(b);
	}
}

/* compute 20% slower and hot's share from 30% to 45%: both regressed and named in
 * regressions; io untouched is not called changed; the documented keys are there. */
static void test_regression_found(void **state)
{
	struct cmp_side *a = make_side(1, 30, 1000 * SEC, 3e6, 0.3);
	struct cmp_side *b = make_side(2, 30, 2000 * SEC, 3.6e6, 0.45);
	const json_t *c, *p95, *fns, *cond;
	char err[256];
	json_t *r = compare__report(a, b, &opts, err, sizeof(err));
	double diff;

	(void)state;
	assert_non_null(r);
	c = stage_of(r, "compute");
	assert_non_null(c);
	p95 = json_object_get(c, "p95");
	assert_string_equal(verdict(p95), "regressed");
	/* the true p95 shift: 0.6 ms times exp(0.3 * 1.645) */
	diff = 0.6e6 * exp(0.3 * 1.6448536);
	assert_true(json_integer_value(json_object_get(p95, "ci_low_ns")) <= diff);
	assert_true(json_integer_value(json_object_get(p95, "ci_high_ns")) >= diff);
	for (const char *const *k =
		 (const char *const[]){"before_ns", "after_ns", "diff_ns", "ci_low_ns",
				       "ci_high_ns", "p_value", "n_before", "n_after", NULL};
	     *k; k++)
		assert_non_null(json_object_get(p95, *k));
	assert_string_equal(json_string_value(json_object_get(json_object_get(c, "rate"), "unit")),
			    "1/s");
	assert_string_equal(verdict(json_object_get(c, "rate")), "unchanged");
	assert_string_equal(verdict(json_object_get(stage_of(r, "compute"), "mean")), "regressed");
	p95 = json_object_get(stage_of(r, "io"), "p95");
	assert_true(!strcmp(verdict(p95), "unchanged") || !strcmp(verdict(p95), "inconclusive"));
	fns = json_object_get(r, "functions");
	assert_string_equal(json_string_value(json_object_get(json_array_get(fns, 0), "function")),
			    "hot");
	assert_string_equal(verdict(json_array_get(fns, 0)), "regressed");
	assert_true(json_is_string(json_array_get(json_object_get(r, "regressions"), 0)));
	cond = json_object_get(r, "conditions");
	assert_int_equal(
	    json_integer_value(json_object_get(json_object_get(cond, "before"), "windows")), 30);
	assert_int_equal(
	    json_integer_value(json_object_get(json_object_get(cond, "after"), "requests")),
	    30 * 300);
	json_decref(r);
	cmp_side__free(a);
	cmp_side__free(b);
}

/* The same seed, the same report, byte for byte; only stage= filters the stages. */
static void test_reproducible_and_stage(void **state)
{
	struct cmp_side *a = make_side(1, 12, 1000 * SEC, 3e6, 0.3);
	struct cmp_side *b = make_side(2, 12, 2000 * SEC, 3.3e6, 0.3);
	struct compare_opts o = opts;
	char err[256], *t1, *t2;
	json_t *r1 = compare__report(a, b, &opts, err, sizeof(err));
	json_t *r2 = compare__report(a, b, &opts, err, sizeof(err));

	(void)state;
	t1 = json_dumps(r1, JSON_COMPACT);
	t2 = json_dumps(r2, JSON_COMPACT);
	assert_string_equal(t1, t2);
	free(t1);
	free(t2);
	json_decref(r1);
	json_decref(r2);
	o.stage = "io";
	r1 = compare__report(a, b, &o, err, sizeof(err));
	assert_int_equal(json_array_size(json_object_get(r1, "stages")), 1);
	assert_non_null(stage_of(r1, "io"));
	json_decref(r1);
	o.stage = "nope";
	assert_null(compare__report(a, b, &o, err, sizeof(err)));
	assert_int_equal(errno, ENOENT);
	assert_non_null(strstr(err, "nope"));
	cmp_side__free(a);
	cmp_side__free(b);
}

/* Few windows: every metric inconclusive with its reason; an empty side too, no crash. */
static void test_few_and_empty(void **state)
{
	struct cmp_side *a = make_side(1, 4, 1000 * SEC, 3e6, 0.3);
	struct cmp_side *b = make_side(2, 30, 2000 * SEC, 6e6, 0.3);
	struct cmp_side *e = make_side(3, 0, 3000 * SEC, 3e6, 0.3);
	char err[256];
	json_t *r = compare__report(a, b, &opts, err, sizeof(err));
	const json_t *p95 = json_object_get(stage_of(r, "compute"), "p95");

	(void)state;
	assert_string_equal(verdict(p95), "inconclusive");
	assert_true(json_is_string(json_object_get(p95, "reason")));
	json_decref(r);
	r = compare__report(e, b, &opts, err, sizeof(err));
	assert_non_null(r);
	p95 = json_object_get(stage_of(r, "compute"), "p95");
	assert_string_equal(verdict(p95), "inconclusive");
	assert_true(json_is_null(json_object_get(p95, "before_ns")));
	json_decref(r);
	cmp_side__free(a);
	cmp_side__free(b);
	cmp_side__free(e);
}

/* A side longer than COMPARE_MAX_WINDOWS: its windows are merged in runs, the report says so,
 * the conditions keep the real count, and the findings stand. */
static void test_long_side_coarsened(void **state)
{
	uint32_t n = 2 * COMPARE_MAX_WINDOWS + 100;
	struct cmp_side *a = make_side(1, n, 1000 * SEC, 3e6, 0.3);
	struct cmp_side *b = make_side(2, 30, 1000 * SEC + (int64_t)n * SEC, 3.6e6, 0.3);
	char err[256];
	json_t *r = compare__report(a, b, &opts, err, sizeof(err));
	const json_t *cond, *merged, *p95;

	(void)state;
	assert_non_null(r);
	cond = json_object_get(r, "conditions");
	merged = json_object_get(json_object_get(cond, "method"), "windows_merged");
	assert_int_equal(json_integer_value(json_object_get(merged, "before")), 3);
	assert_int_equal(json_integer_value(json_object_get(merged, "after")), 1);
	assert_int_equal(
	    json_integer_value(json_object_get(json_object_get(cond, "before"), "windows")), n);
	assert_int_equal(
	    json_integer_value(json_object_get(json_object_get(cond, "before"), "requests")),
	    (json_int_t)n * 300);
	p95 = json_object_get(stage_of(r, "compute"), "p95");
	assert_int_equal(json_integer_value(json_object_get(p95, "n_before")), (n + 2) / 3);
	assert_string_equal(verdict(p95), "regressed");
	assert_string_equal(verdict(json_object_get(stage_of(r, "compute"), "rate")), "unchanged");
	json_decref(r);
	cmp_side__free(a);
	cmp_side__free(b);
}

/* Sides that share windows (a snapshot against a range that reaches back into it) are noted
 * with the time they share; sides apart are not. */
static void test_overlap_noted(void **state)
{
	struct cmp_side *a = make_side(1, 20, 1000 * SEC, 3e6, 0.3);
	struct cmp_side *b = make_side(2, 20, 1005 * SEC, 3e6, 0.3);
	struct cmp_side *c = make_side(3, 20, 1020 * SEC, 3e6, 0.3);
	const json_t *notes;
	char err[256];
	json_t *r = compare__report(a, b, &opts, err, sizeof(err));

	(void)state;
	assert_non_null(r);
	notes = json_object_get(json_object_get(r, "conditions"), "notes");
	assert_int_equal(json_array_size(notes), 1);
	assert_non_null(strstr(json_string_value(json_array_get(notes, 0)), "overlap by 15s"));
	json_decref(r);
	/* end to end, sharing nothing */
	r = compare__report(a, c, &opts, err, sizeof(err));
	assert_non_null(r);
	notes = json_object_get(json_object_get(r, "conditions"), "notes");
	assert_int_equal(json_array_size(notes), 0);
	json_decref(r);
	cmp_side__free(a);
	cmp_side__free(b);
	cmp_side__free(c);
	/* a crafted snapshot's windows from before 1970 (times are signed): against itself */
	a = make_side(1, 9, -3 * (int64_t)SEC, 3e6, 0.3);
	r = compare__report(a, a, &opts, err, sizeof(err));
	assert_non_null(r);
	notes = json_object_get(json_object_get(r, "conditions"), "notes");
	assert_int_equal(json_array_size(notes), 1);
	assert_non_null(strstr(json_string_value(json_array_get(notes, 0)), "overlap by 9s"));
	json_decref(r);
	cmp_side__free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_self_no_alarm),	   cmocka_unit_test(test_regression_found),
	    cmocka_unit_test(test_reproducible_and_stage), cmocka_unit_test(test_few_and_empty),
	    cmocka_unit_test(test_long_side_coarsened),	   cmocka_unit_test(test_overlap_noted),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
