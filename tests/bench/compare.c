// SPDX-License-Identifier: GPL-2.0-only
/* Benchmark of tailprof compare on synthetic sides of W windows each (default 360: an hour of
 * 10 s windows, the default ring): 8 stages of ~1,000 requests a window over ~60 buckets each,
 * 2,000 distinct stacks over 400 functions with 1,000 CPU samples a window, run-queue and GC.
 * Prints the median of RUNS of: compare__report (the whole report, every metric bootstrapped
 * 2,000 times, BH and JSON), a side's JSON and its gzip (a snapshot's body: sizes and times),
 * and reading it back (inflate, parse, check). Asserts nothing.
 * Usage: tp_bench_compare [WINDOWS] [RUNS] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "bench_stats.h"
#include "cmp_side.h"
#include "cmp_side_json.h"
#include "compare.h"
#include "compare_stats.h"
#include "gzip.h"
#include "tp_hist.h"

#define SEC	   1000000000LL
#define STAGES	   8
#define FUNCTIONS  400
#define STACKS	   2000
#define PER_WINDOW 1000

static double normal(struct cmp_rng *r)
{
	return sqrt(-2 * log(cmp_rng__uniform(r))) * cos(2 * M_PI * cmp_rng__uniform(r));
}

static struct hist_cell *cells(struct cmp_rng *r, uint32_t count, double median_ns, uint32_t *nr,
			       uint64_t *sum, uint64_t *max)
{
	static uint32_t dense[TP_HIST_BUCKETS];
	struct hist_cell *c = malloc(TP_HIST_BUCKETS * sizeof(*c));

	memset(dense, 0, sizeof(dense));
	*sum = *max = 0;
	for (uint32_t i = 0; i < count; i++) {
		uint64_t v = (uint64_t)(median_ns * exp(0.5 * normal(r)));

		dense[tp_hist_bucket(v)]++;
		*sum += v;
		*max = v > *max ? v : *max;
	}
	*nr = 0;
	for (uint32_t b = 0; b < TP_HIST_BUCKETS; b++)
		if (dense[b])
			c[(*nr)++] = (struct hist_cell){b, dense[b]};
	return c;
}

static struct cmp_side *make_side(uint64_t seed, uint32_t n, double slow)
{
	struct cmp_side *s = calloc(1, sizeof(*s));
	int64_t stage_name[STAGES], fn[FUNCTIONS];
	char name[64];
	struct cmp_rng r;

	cmp_rng__seed(&r, seed);
	snprintf(s->cond.host, sizeof(s->cond.host), "bench");
	s->cond.frequency_hz = 99;
	s->cond.sample_period_ns = SEC / 99;
	s->cond.window_ns = 10 * SEC;
	for (int i = 0; i < STAGES; i++) {
		snprintf(name, sizeof(name), "stage_%d", i);
		stage_name[i] = cmp_side__intern(s, name);
	}
	for (int i = 0; i < FUNCTIONS; i++) {
		snprintf(name, sizeof(name),
			 "namespace::module::function_number_%d(int, char const*)", i);
		fn[i] = cmp_side__intern(s, name);
	}
	s->nr_stacks = STACKS;
	s->stacks = calloc(STACKS, sizeof(*s->stacks));
	for (int k = 0; k < STACKS; k++) {
		s->stacks[k].nr_frames = 12;
		s->stacks[k].frames = malloc(12 * sizeof(uint32_t));
		for (int f = 0; f < 12; f++)
			s->stacks[k].frames[f] = (uint32_t)fn[cmp_rng__below(&r, FUNCTIONS)];
	}
	s->nr_windows = n;
	s->windows = calloc(n, sizeof(*s->windows));
	for (uint32_t i = 0; i < n; i++) {
		struct cmp_window *w = &s->windows[i];

		w->start_unix_ns = 1000 * SEC + (int64_t)i * 10 * SEC;
		w->end_unix_ns = w->start_unix_ns + 10 * SEC;
		w->nr_stages = STAGES;
		w->stages = calloc(STAGES, sizeof(*w->stages));
		for (int k = 0; k < STAGES; k++) {
			struct cmp_stage_win *st = &w->stages[k];

			st->name = (uint32_t)stage_name[k];
			st->count = PER_WINDOW;
			st->cells = cells(&r, PER_WINDOW, (k ? 1e6 : 1e6 * slow) * (k + 1),
					  &st->nr_cells, &st->sum_ns, &st->max_ns);
			st->cpu_samples = 100;
		}
		w->nr_stacks = 200;
		w->stacks = calloc(200, sizeof(*w->stacks));
		for (int k = 0; k < 200; k++)
			w->stacks[k] = (struct cmp_stack_count){.stack = cmp_rng__below(&r, STACKS),
								.count = 1 + cmp_rng__below(&r, 9)};
		for (int k = 0; k < 200; k++)
			w->cpu_samples += w->stacks[k].count;
		w->runq_count = 5000;
		w->runq_cells =
		    cells(&r, 5000, 40000, &w->nr_runq_cells, &w->runq_sum_ns, &w->runq_max_ns);
		w->gc_count = 3;
		w->gc_pause_ns = 15000000;
		w->gc_max_ns = 8000000;
	}
	return s;
}

int main(int argc, char **argv)
{
	uint32_t n = argc > 1 ? (uint32_t)atoi(argv[1]) : 360;
	int runs = argc > 2 ? atoi(argv[2]) : 5;
	struct cmp_side *a = make_side(1, n, 1.0), *b = make_side(2, n, 1.1);
	struct compare_opts o = {.min_effect = CMP_MIN_EFFECT, .alpha = CMP_ALPHA, .seed = 1};
	double t_report[32], t_json[32], t_gzip[32], t_read[32];
	size_t json_len = 0, gz_len = 0, metrics = 0;
	char err[256];

	if (n < 1 || runs < 1 || runs > 32) {
		fprintf(stderr, "usage: tp_bench_compare [WINDOWS >= 1] [RUNS 1-32]\n");
		return 2;
	}
	for (int i = 0; i < runs; i++) {
		double t0 = bench_seconds(CLOCK_MONOTONIC), t1, t2, t3;
		json_t *r = compare__report(a, b, &o, err, sizeof(err));
		char *json = NULL;
		uint8_t *gz = NULL, *back = NULL;
		size_t back_len;
		struct cmp_side *again = NULL;

		t1 = bench_seconds(CLOCK_MONOTONIC);
		if (!r || cmp_side__to_json(a, &json, err, sizeof(err))) {
			fprintf(stderr, "tp_bench_compare: %s\n", err);
			return 1;
		}
		metrics = json_array_size(json_object_get(r, "stages")) * 6 + 6 +
			  json_array_size(json_object_get(r, "functions"));
		json_decref(r);
		t2 = bench_seconds(CLOCK_MONOTONIC);
		json_len = strlen(json);
		if (gzip__compress((const uint8_t *)json, json_len, 6, &gz, &gz_len))
			return 1;
		t3 = bench_seconds(CLOCK_MONOTONIC);
		if (gzip__inflate(gz, gz_len, 1u << 30, &back, &back_len, err, sizeof(err)) ||
		    cmp_side__from_json((const char *)back, back_len, &again, err, sizeof(err))) {
			fprintf(stderr, "tp_bench_compare: %s\n", err);
			return 1;
		}
		t_report[i] = t1 - t0;
		t_json[i] = t2 - t1;
		t_gzip[i] = t3 - t2;
		t_read[i] = bench_seconds(CLOCK_MONOTONIC) - t3;
		free(json);
		free(gz);
		free(back);
		cmp_side__free(again);
	}
	printf("compare, %u windows a side, %d stages, %d functions, %d stacks (medians of %d "
	       "runs):\n",
	       n, STAGES, FUNCTIONS, STACKS, runs);
	printf("  compare__report      %8.1f ms  (%zu metrics shown, 2,000 resamples each)\n",
	       1e3 * bench_median(t_report, runs), metrics);
	printf("  side to JSON         %8.1f ms  %8.2f MB\n", 1e3 * bench_median(t_json, runs),
	       json_len / 1e6);
	printf("  gzip                 %8.1f ms  %8.2f MB (the snapshot's blob)\n",
	       1e3 * bench_median(t_gzip, runs), gz_len / 1e6);
	printf("  inflate, parse, check%8.1f ms\n", 1e3 * bench_median(t_read, runs));
	cmp_side__free(a);
	cmp_side__free(b);
	return 0;
}
