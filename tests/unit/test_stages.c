// SPDX-License-Identifier: GPL-2.0-only
/* Unit tests of the per-window stage data that needs no BPF: slow spans kept per window and
 * stage (the slowest STAGE_SPANS_KEPT), their JSON, and freeing with the window; span ids and
 * lookup, and each span's accounting, exact or estimated from the window's records. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <errno.h>
#include <jansson.h>

#include "intern.h"
#include "stages.h"
#include "window.h"

static void test_slowest_spans_kept(void **state)
{
	struct stages *s = stages__new(NULL);
	struct window *w = window__new(1000000000, 2000000000, 2);
	struct tp_span sp = {.pid = 7, .tid = 8, .stage = 3};
	json_t *doc, *spans;
	char *text;

	assert_non_null(s);
	assert_non_null(w);
	/* 100 spans of 1..100 ms, in a scrambled order; the 10 slowest are 91..100 ms */
	for (int i = 0; i < 100; i++) {
		sp.duration_ns = (uint64_t)((i * 37) % 100 + 1) * 1000000;
		sp.start_ns = 1000000000 + (uint64_t)i * 1000;
		sp.request_id = i;
		stages__add_span(s, &sp, w);
	}
	/* another stage's span, and spans without a window or a stage, change nothing here */
	sp.stage = 4;
	sp.duration_ns = 1;
	stages__add_span(s, &sp, w);
	sp.stage = 0;
	stages__add_span(s, &sp, w);
	stages__add_span(s, &sp, NULL);
	assert_non_null(w->stages);
	assert_int_equal(w->stages->by_id[3]->nr_spans, STAGE_SPANS_KEPT);
	assert_int_equal(w->stages->by_id[4]->nr_spans, 1);
	assert_null(w->stages->by_id[0]);
	/* the 90 that did not fit are counted against their stage */
	assert_int_equal(stages__spans_not_kept(s, 3), 100 - STAGE_SPANS_KEPT);
	assert_int_equal(stages__spans_not_kept(s, 4), 0);
	assert_int_equal(stages__spans_not_kept(s, TP_MAX_STAGES), 0);

	text = stages__spans_json(s, &w, 1, 1ULL << 3);
	assert_non_null(text);
	doc = json_loads(text, 0, NULL);
	assert_non_null(doc);
	spans = json_object_get(doc, "spans");
	assert_int_equal(json_array_size(spans), STAGE_SPANS_KEPT);
	for (size_t i = 0; i < json_array_size(spans); i++) {
		json_t *o = json_array_get(spans, i);

		/* slowest first: 100 ms, 99 ms, ... */
		assert_int_equal(json_integer_value(json_object_get(o, "duration_ns")),
				 (100 - (int64_t)i) * 1000000);
		assert_int_equal(json_integer_value(json_object_get(o, "pid")), 7);
		assert_string_equal(json_string_value(json_object_get(o, "stage")), "[unknown]");
	}
	json_decref(doc);
	free(text);
	/* every stage */
	text = stages__spans_json(s, &w, 1, ~0ULL);
	doc = json_loads(text, 0, NULL);
	assert_int_equal(json_array_size(json_object_get(doc, "spans")), STAGE_SPANS_KEPT + 1);
	json_decref(doc);
	free(text);
	/* no windows */
	text = stages__spans_json(s, NULL, 0, ~0ULL);
	assert_string_equal(text, "{\"spans\":[]}");
	free(text);
	window__free(w, NULL, NULL); /* frees the stage data too */
	stages__free(s);
}

#define MS 1000000ULL

/* Ids read back to their span; anything else is not an id or finds nothing. */
static void test_span_ids(void **state)
{
	struct stages *s = stages__new(NULL);
	struct window *w = window__new(0, 1000 * MS, 2), *where = NULL;
	struct tp_span a = {
	    .pid = 7, .tid = 8, .stage = 3, .start_ns = 123456789, .duration_ns = 5};
	struct tp_span b = {
	    .pid = 7, .tid = 9, .stage = 4, .start_ns = 123456789, .duration_ns = 6};
	const char *bad[] = {"",
			     "8",
			     "8-",
			     "-1",
			     "08-123456789",
			     "8-0123",
			     "8-1-2",
			     "a-1",
			     " 8-1",
			     "8-99999999999999999999",
			     "4294967296-1",
			     NULL};
	const struct tp_span *found;
	char id[SPAN_ID_LEN];

	stages__add_span(s, &a, w);
	stages__add_span(s, &b, w);
	stages__span_id(&a, id, sizeof(id));
	assert_string_equal(id, "8-123456789");
	assert_true(stages__span_id_valid(id));
	found = stages__find_span(&w, 1, id, &where);
	assert_non_null(found);
	assert_int_equal(found->tid, 8);
	assert_int_equal(found->stage, 3);
	assert_ptr_equal(where, w);
	found = stages__find_span(&w, 1, "9-123456789", NULL);
	assert_non_null(found);
	assert_int_equal(found->stage, 4);
	assert_null(stages__find_span(&w, 1, "8-123456788", NULL));
	assert_int_equal(errno, ENOENT);
	for (int i = 0; bad[i]; i++) {
		assert_false(stages__span_id_valid(bad[i]));
		assert_null(stages__find_span(&w, 1, bad[i], NULL));
		assert_int_equal(errno, EINVAL);
	}
	assert_false(stages__span_id_valid(NULL));
	window__free(w, NULL, NULL);
	stages__free(s);
}

/* n CPU samples of task tk in w, from ts_ns every step_ns. */
static void add_every(struct window *w, struct intern_table *stacks, struct intern_table *tasks,
		      const struct task *tk, uint64_t ts_ns, uint64_t step_ns, int n)
{
	struct stack st = {0};

	for (int i = 0; i < n; i++)
		assert_int_equal(
		    window__add_recorded(w, intern_table__get(stacks, &st, sizeof(st), NULL),
					 intern_table__get(tasks, tk, sizeof(*tk), NULL),
					 ts_ns + i * step_ns, 0, 0, stacks, tasks),
		    0);
}

/* A block of task tk in w that ended at end_ns after blocked_ns. */
static void add_block(struct window *w, struct intern_table *stacks, struct intern_table *tasks,
		      const struct task *tk, uint64_t end_ns, uint64_t blocked_ns)
{
	struct stack st = {0};

	assert_int_equal(window__add_recorded(w, intern_table__get(stacks, &st, sizeof(st), NULL),
					      intern_table__get(tasks, tk, sizeof(*tk), NULL),
					      end_ns, blocked_ns, 1, stacks, tasks),
			 0);
}

/* Exact accounting as BPF measured it (clamped to the duration); without it, an estimate from
 * the thread's records: CPU samples in the span x period, blocks clipped to it, the rest run
 * queue; settled into the span once its window closes. The parts always sum to the duration. */
static void test_span_accounting(void **state)
{
	struct intern_table *stacks = intern_table__new(NULL), *tasks = intern_table__new(NULL);
	struct window_ring *r = window_ring__new(&(struct window_ring_opts){
	    .window_ns = 1000 * MS,
	    .nr_windows = 4,
	    .nr_cpus = 2,
	    .sample_period_ns = 1 * MS,
	    .stacks = stacks,
	    .tasks = tasks,
	});
	struct tp_span exact = {.pid = 7,
				.tid = 8,
				.start_ns = 100 * MS,
				.duration_ns = 50 * MS,
				.accounting = TP_ACCT_EXACT,
				.cpu_ns = 20 * MS,
				.runq_ns = 1 * MS};
	struct tp_span sp = {
	    .pid = 7, .tid = 8, .stage = 3, .start_ns = 900 * MS, .duration_ns = 200 * MS};
	struct task tk = {.pid = 7, .tid = 8}, other = {.pid = 7, .tid = 9};
	struct span_accounting acct;
	struct window *w0, *w1, *ws[2];

	assert_non_null(r);
	stages__span_accounting(&exact, NULL, 0, &acct);
	assert_true(acct.exact);
	assert_int_equal(acct.cpu_ns, 20 * MS);
	assert_int_equal(acct.runq_ns, 1 * MS);
	assert_int_equal(acct.offcpu_ns, 29 * MS);
	exact.runq_ns = 40 * MS; /* more than there is: clamped */
	stages__span_accounting(&exact, NULL, 0, &acct);
	assert_int_equal(acct.cpu_ns + acct.runq_ns + acct.offcpu_ns, 50 * MS);
	assert_int_equal(acct.runq_ns, 30 * MS);

	/* the span [900, 1100) ms over two windows: 30 CPU samples in it, 2 before it, 5 of
	 * another thread; a block [850, 950) (50 ms in it) and [1000, 1040) (40 ms) */
	window_ring__advance(r, 0);
	w0 = window_ring__current(r);
	add_every(w0, stacks, tasks, &tk, 890 * MS, 5 * MS, 20);
	add_every(w0, stacks, tasks, &other, 950 * MS, 1 * MS, 5);
	add_block(w0, stacks, tasks, &tk, 950 * MS, 100 * MS);
	window_ring__advance(r, 1000 * MS);
	w1 = window_ring__current(r);
	add_every(w1, stacks, tasks, &tk, 1050 * MS, 1 * MS, 12);
	add_block(w1, stacks, tasks, &tk, 1040 * MS, 40 * MS);
	ws[0] = w0;
	ws[1] = w1;
	/* 18 of w0's 20 samples are at 900 ms or later, and all 12 of w1's */
	stages__span_accounting(&sp, ws, 2, &acct);
	assert_false(acct.exact);
	assert_int_equal(acct.cpu_ns, 30 * MS);
	assert_int_equal(acct.offcpu_ns, 90 * MS);
	assert_int_equal(acct.runq_ns, 80 * MS);
	/* only the windows given count */
	stages__span_accounting(&sp, ws + 1, 1, &acct);
	assert_int_equal(acct.cpu_ns, 12 * MS);
	assert_int_equal(acct.offcpu_ns, 40 * MS);
	/* more samples than time: the blocks first, then the samples that fit */
	sp.duration_ns = 60 * MS;
	stages__span_accounting(&sp, ws, 2, &acct);
	assert_int_equal(acct.offcpu_ns, 50 * MS);
	assert_int_equal(acct.cpu_ns, 10 * MS);
	assert_int_equal(acct.runq_ns, 0);
	sp.duration_ns = 200 * MS;

	/* settled when its window closed: the estimate stays after the records go */
	{
		struct stages *s = stages__new(NULL);

		stages__add_span(s, &sp, w1);
		stages__add_span(s, &exact, w1);
		stages__settle_spans(w1, ws, 2);
		assert_int_equal(w1->stages->by_id[3]->spans[0].accounting, TP_ACCT_SAMPLED);
		assert_int_equal(w1->stages->by_id[0] ? 1 : 0, 0);
		stages__span_accounting(&w1->stages->by_id[3]->spans[0], NULL, 0, &acct);
		assert_false(acct.exact);
		assert_int_equal(acct.cpu_ns, 30 * MS);
		assert_int_equal(acct.offcpu_ns, 90 * MS);
		stages__free(s);
	}
	window_ring__free(r);
	intern_table__free(stacks);
	intern_table__free(tasks);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_slowest_spans_kept),
	    cmocka_unit_test(test_span_ids),
	    cmocka_unit_test(test_span_accounting),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
