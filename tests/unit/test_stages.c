// SPDX-License-Identifier: GPL-2.0-only
/* Unit tests of the per-window stage data that needs no BPF: slow spans kept per window and
 * stage (the slowest STAGE_SPANS_KEPT), their JSON, and freeing with the window. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_slowest_spans_kept),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
