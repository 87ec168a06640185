/* SPDX-License-Identifier: GPL-2.0-only */
/* A comparison side for tests (test_cmp_side.c, test_snapshots.c): non-trivial, built the way a
 * builder would, and compared field by field. Include after <cmocka.h>. */
#ifndef TAILPROF_CMP_SIDE_SAMPLE_H
#define TAILPROF_CMP_SIDE_SAMPLE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cmp_side.h"
#include "timeparse.h"
#include "tp_hist.h"

#define NR_WINDOWS 6
#define T0	   (1700000000 * (int64_t)NSEC_PER_SEC)
#define WINDOW_NS  (10 * (int64_t)NSEC_PER_SEC)

static inline struct hist_cell *cells_of(const uint32_t *buckets, const uint32_t *counts,
					 uint32_t n)
{
	struct hist_cell *c = calloc(n, sizeof(*c));

	for (uint32_t i = 0; i < n; i++)
		c[i] = (struct hist_cell){.bucket = buckets[i], .count = counts[i]};
	return c;
}

static inline uint32_t intern(struct cmp_side *s, const char *str)
{
	int64_t i = cmp_side__intern(s, str);

	assert_true(i >= 0);
	return (uint32_t)i;
}

/* A side of NR_WINDOWS windows with stages (with and without cells, none in some windows),
 * stacks, run-queue cells, and values at the edges of what JSON integers hold. variant changes
 * the host and the counts. */
static inline struct cmp_side *make_side(int variant)
{
	static const uint32_t stack_frames[3][3] = {{3, 2, 0}, {4, 3, 2}, {2, 0, 0}};
	static const uint32_t stack_len[3] = {2, 3, 1};
	struct cmp_side *s = calloc(1, sizeof(*s));
	uint32_t compute, parse;

	snprintf(s->cond.host, sizeof(s->cond.host), "host-%d", variant);
	snprintf(s->cond.kernel, sizeof(s->cond.kernel), "6.1.0-18-amd64");
	snprintf(s->cond.version, sizeof(s->cond.version), "0.9.0");
	s->cond.frequency_hz = 99;
	s->cond.sample_period_ns = 10101010;
	s->cond.window_ns = WINDOW_NS;
	s->cond.from_unix_ns = T0;
	s->cond.to_unix_ns = T0 + NR_WINDOWS * WINDOW_NS;
	compute = intern(s, "compute");
	parse = intern(s, "parse");
	assert_int_equal(intern(s, "main"), 2);
	assert_int_equal(intern(s, "json_dumps"), 3);
	assert_int_equal(intern(s, "caf\xc3\xa9::schedule<\"x\">\t"), 4);
	assert_int_equal(intern(s, "compute"), compute); /* found, not added */
	assert_int_equal(s->nr_strings, 5);

	s->nr_stacks = 3;
	s->stacks = calloc(3, sizeof(*s->stacks));
	for (int i = 0; i < 3; i++) {
		s->stacks[i].nr_frames = stack_len[i];
		s->stacks[i].frames = calloc(3, sizeof(uint32_t));
		memcpy(s->stacks[i].frames, stack_frames[i], sizeof(stack_frames[i]));
	}

	s->nr_windows = NR_WINDOWS;
	s->windows = calloc(NR_WINDOWS, sizeof(*s->windows));
	for (uint32_t i = 0; i < NR_WINDOWS; i++) {
		struct cmp_window *w = &s->windows[i];
		const uint32_t rb[] = {5, 70 + i, TP_HIST_BUCKETS - 1}, rc[] = {1, 2, 3 + variant};
		const uint32_t sb[] = {100 + i, 200}, sc[] = {4, 6 + variant};

		w->start_unix_ns = T0 + i * WINDOW_NS;
		w->end_unix_ns = w->start_unix_ns + WINDOW_NS;
		w->cpu_samples = 1000 + i;
		w->offcpu_ns = 5000000ull * i;
		w->offcpu_samples = 7 * i;
		w->nr_runq_cells = 3;
		w->runq_cells = cells_of(rb, rc, 3);
		w->runq_count = 6 + variant;
		w->runq_sum_ns = i == 0 ? INT64_MAX : 12345;
		w->runq_max_ns = 999;
		w->gc_count = i % 2;
		w->gc_pause_ns = 100000 * (i % 2);
		w->gc_max_ns = 100000 * (i % 2);
		w->drops = i;
		if (i % 3 != 2) {
			w->nr_stages = 2;
			w->stages = calloc(2, sizeof(*w->stages));
			w->stages[0] = (struct cmp_stage_win){.name = compute,
							      .count = 10 + variant,
							      .sum_ns = 55555,
							      .max_ns = 9999,
							      .nr_cells = 2,
							      .cells = cells_of(sb, sc, 2),
							      .cpu_samples = 40,
							      .offcpu_ns = 7};
			/* samples but no requests: no cells */
			w->stages[1] = (struct cmp_stage_win){.name = parse, .cpu_samples = 5};
		}
		w->nr_stacks = 2;
		w->stacks = calloc(2, sizeof(*w->stacks));
		w->stacks[0] = (struct cmp_stack_count){.stack = 2, .count = 600 + i};
		w->stacks[1] = (struct cmp_stack_count){.stack = i % 2, .count = 400};
	}
	return s;
}

static inline void assert_cells_equal(const struct hist_cell *a, uint32_t na,
				      const struct hist_cell *b, uint32_t nb)
{
	assert_int_equal(na, nb);
	for (uint32_t i = 0; i < na; i++) {
		assert_int_equal(a[i].bucket, b[i].bucket);
		assert_int_equal(a[i].count, b[i].count);
	}
}

/* Field by field; the conditions' snapshot and saved time are the caller's to check. */
static inline void assert_sides_equal(const struct cmp_side *a, const struct cmp_side *b)
{
	assert_string_equal(a->cond.host, b->cond.host);
	assert_string_equal(a->cond.kernel, b->cond.kernel);
	assert_string_equal(a->cond.version, b->cond.version);
	assert_int_equal(a->cond.frequency_hz, b->cond.frequency_hz);
	assert_int_equal(a->cond.sample_period_ns, b->cond.sample_period_ns);
	assert_int_equal(a->cond.window_ns, b->cond.window_ns);
	assert_int_equal(a->cond.from_unix_ns, b->cond.from_unix_ns);
	assert_int_equal(a->cond.to_unix_ns, b->cond.to_unix_ns);
	assert_int_equal(a->nr_strings, b->nr_strings);
	for (uint32_t i = 0; i < a->nr_strings; i++)
		assert_string_equal(a->strings[i], b->strings[i]);
	assert_int_equal(a->nr_stacks, b->nr_stacks);
	for (uint32_t i = 0; i < a->nr_stacks; i++) {
		assert_int_equal(a->stacks[i].nr_frames, b->stacks[i].nr_frames);
		assert_memory_equal(a->stacks[i].frames, b->stacks[i].frames,
				    a->stacks[i].nr_frames * sizeof(uint32_t));
	}
	assert_int_equal(a->nr_windows, b->nr_windows);
	for (uint32_t i = 0; i < a->nr_windows; i++) {
		const struct cmp_window *x = &a->windows[i], *y = &b->windows[i];

		assert_int_equal(x->start_unix_ns, y->start_unix_ns);
		assert_int_equal(x->end_unix_ns, y->end_unix_ns);
		assert_int_equal(x->cpu_samples, y->cpu_samples);
		assert_int_equal(x->offcpu_ns, y->offcpu_ns);
		assert_int_equal(x->offcpu_samples, y->offcpu_samples);
		assert_int_equal(x->runq_count, y->runq_count);
		assert_int_equal(x->runq_sum_ns, y->runq_sum_ns);
		assert_int_equal(x->runq_max_ns, y->runq_max_ns);
		assert_cells_equal(x->runq_cells, x->nr_runq_cells, y->runq_cells,
				   y->nr_runq_cells);
		assert_int_equal(x->gc_count, y->gc_count);
		assert_int_equal(x->gc_pause_ns, y->gc_pause_ns);
		assert_int_equal(x->gc_max_ns, y->gc_max_ns);
		assert_int_equal(x->drops, y->drops);
		assert_int_equal(x->nr_stages, y->nr_stages);
		for (uint32_t j = 0; j < x->nr_stages; j++) {
			const struct cmp_stage_win *p = &x->stages[j], *q = &y->stages[j];

			assert_int_equal(p->name, q->name);
			assert_int_equal(p->count, q->count);
			assert_int_equal(p->sum_ns, q->sum_ns);
			assert_int_equal(p->max_ns, q->max_ns);
			assert_int_equal(p->cpu_samples, q->cpu_samples);
			assert_int_equal(p->offcpu_ns, q->offcpu_ns);
			assert_cells_equal(p->cells, p->nr_cells, q->cells, q->nr_cells);
		}
		assert_int_equal(x->nr_stacks, y->nr_stacks);
		for (uint32_t j = 0; j < x->nr_stacks; j++) {
			assert_int_equal(x->stacks[j].stack, y->stacks[j].stack);
			assert_int_equal(x->stacks[j].count, y->stacks[j].count);
		}
	}
}

#endif
