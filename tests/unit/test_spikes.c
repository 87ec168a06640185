// SPDX-License-Identifier: GPL-2.0-only
/* Unit tests of spike detection over synthetic windows: the k rule against the baseline median,
 * min_requests, episodes and their pins, level shifts, the pin budget, periodic patterns, marks
 * and Alertmanager alerts. */
#include <errno.h>
#include <stdbool.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "spikes.h"
#include "stages.h"
#include "tp_hist.h"
#include "window.h"

#define SEC    1000000000ULL
#define MS     1000000ULL
#define STAGE  3
#define OFFSET (1796000000 * SEC) /* realtime - monotonic of every window */

struct fixture {
	struct intern_table *stacks, *tasks;
	struct window_ring *ring;
	struct stages *stages;
	struct spikes *spikes;
	uint64_t t; /* start of the current window */
};

static struct fixture *make(struct spikes_opts o)
{
	struct fixture *f = calloc(1, sizeof(*f));

	f->stacks = intern_table__new(NULL);
	f->tasks = intern_table__new(NULL);
	f->ring = window_ring__new(&(struct window_ring_opts){.window_ns = SEC,
							      .nr_windows = 120,
							      .nr_cpus = 2,
							      .stacks = f->stacks,
							      .tasks = f->tasks});
	f->stages = stages__new(NULL);
	f->spikes = spikes__new(&o, f->stages, SEC);
	assert_non_null(f->spikes);
	f->t = 100 * SEC;
	window_ring__advance(f->ring, f->t);
	window_ring__current(f->ring)->wall_offset_ns = OFFSET;
	return f;
}

static void destroy(struct fixture *f)
{
	spikes__free(f->spikes, f->ring);
	window_ring__free(f->ring);
	stages__free(f->stages);
	intern_table__free(f->stacks);
	intern_table__free(f->tasks);
	free(f);
}

/* Gives the current window `count` requests of stage id, all taking v_ns. */
static void requests(struct fixture *f, uint32_t id, uint32_t count, uint64_t v_ns)
{
	struct window *w = window_ring__current(f->ring);
	struct stage_stats *st;

	if (!w->stages)
		w->stages = calloc(1, sizeof(*w->stages));
	st = calloc(1, sizeof(*st));
	st->cells = calloc(1, sizeof(*st->cells));
	st->cells[0] = (struct hist_cell){tp_hist_bucket(v_ns), count};
	st->nr_cells = 1;
	st->count = count;
	st->sum_ns = count * v_ns;
	st->max_ns = v_ns;
	w->stages->by_id[id] = st;
}

/* Closes the current window (the drain does the same) and judges it. */
static void next(struct fixture *f)
{
	struct window *w = window_ring__current(f->ring);

	f->t += SEC;
	window_ring__advance(f->ring, f->t);
	window_ring__current(f->ring)->wall_offset_ns = OFFSET;
	spikes__window_closed(f->spikes, f->ring, w);
}

/* n windows of 100 requests of STAGE at v_ns each. */
static void windows(struct fixture *f, int n, uint64_t v_ns)
{
	for (int i = 0; i < n; i++) {
		requests(f, STAGE, 100, v_ns);
		next(f);
	}
}

static json_t *list(struct fixture *f)
{
	char *text = spikes__list_json(f->spikes, f->ring, NULL);
	json_t *doc = json_loads(text, 0, NULL), *arr;

	free(text);
	assert_non_null(doc);
	arr = json_incref(json_object_get(doc, "spikes"));
	json_decref(doc);
	return arr;
}

static int64_t geti(json_t *o, const char *key)
{
	return json_integer_value(json_object_get(o, key));
}

static const char *gets(json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

static void test_spike_episode_and_pins(void **state)
{
	struct fixture *f = make(SPIKES_OPTS_DEFAULT);
	json_t *arr, *e;

	(void)state;
	/* four ordinary windows: not judged yet by k (needs 5) */
	windows(f, 4, 10 * MS);
	windows(f, 1, 50 * MS);
	arr = list(f);
	assert_int_equal(json_array_size(arr), 0);
	json_decref(arr);
	/* that window joined the baseline (it was not judged a spike): 5 now */
	windows(f, 5, 10 * MS);
	/* 21 ms is not above 2 x the median 10 ms + bucket error? 25 ms is */
	windows(f, 1, 19 * MS);
	windows(f, 2, 25 * MS);
	arr = list(f);
	assert_int_equal(json_array_size(arr), 1);
	e = json_array_get(arr, 0);
	assert_true(json_is_true(json_object_get(e, "open")));
	assert_int_equal(geti(e, "windows"), 2);
	json_decref(arr);
	windows(f, 1, 10 * MS);
	arr = list(f);
	e = json_array_get(arr, 0);
	assert_true(json_is_false(json_object_get(e, "open")));
	assert_string_equal(gets(e, "kind"), "spike");
	assert_string_equal(gets(e, "source"), "detected");
	assert_int_equal(geti(e, "windows"), 2);
	assert_int_equal(geti(e, "request_count"), 200);
	/* bucket midpoints: within 1.6% */
	assert_in_range(geti(e, "p95_ns"), 24600000, 25400000);
	assert_in_range(geti(e, "baseline_p95_ns"), 9800000, 10200000);
	assert_int_equal(geti(e, "end_unix_ns") - geti(e, "start_unix_ns"), 2 * SEC);
	/* 113 s: the window after 11 windows from 100 s plus the one of 19 ms */
	assert_int_equal(geti(e, "start_unix_ns"), (int64_t)(OFFSET + 111 * SEC));
	assert_true(json_is_true(json_object_get(e, "pinned")));
	json_decref(arr);
	/* before, two spike windows, after */
	assert_non_null(window_ring__find(f->ring, 110 * SEC));
	assert_int_equal(window_ring__find(f->ring, 110 * SEC)->pins, 1);
	assert_int_equal(window_ring__find(f->ring, 111 * SEC)->pins, 1);
	assert_int_equal(window_ring__find(f->ring, 112 * SEC)->pins, 1);
	assert_int_equal(window_ring__find(f->ring, 113 * SEC)->pins, 1);
	assert_int_equal(window_ring__find(f->ring, 114 * SEC)->pins, 0);
	/* pinned windows outlive the ring (120 windows) */
	windows(f, 130, 10 * MS);
	assert_non_null(window_ring__find(f->ring, 111 * SEC));
	assert_int_equal(window_ring__nr_pinned(f->ring), 4);
	destroy(f);
}

static void test_min_requests_and_threshold_rise(void **state)
{
	struct spikes_opts o = SPIKES_OPTS_DEFAULT;
	struct fixture *f;
	json_t *arr;

	(void)state;
	o.min_rise_ns = 20 * MS;
	f = make(o);
	windows(f, 10, 10 * MS);
	/* too few requests: not judged */
	requests(f, STAGE, 19, 500 * MS);
	next(f);
	/* 3x but a rise under min_rise */
	windows(f, 1, 29 * MS);
	arr = list(f);
	assert_int_equal(json_array_size(arr), 0);
	json_decref(arr);
	windows(f, 1, 31 * MS);
	arr = list(f);
	assert_int_equal(json_array_size(arr), 1);
	json_decref(arr);
	destroy(f);
}

static void test_level_shift(void **state)
{
	struct fixture *f = make(SPIKES_OPTS_DEFAULT); /* baseline_windows 30: a shift after 15 */
	json_t *arr, *e;

	(void)state;
	windows(f, 20, 10 * MS);
	windows(f, 40, 30 * MS);
	arr = list(f);
	assert_int_equal(json_array_size(arr), 1);
	e = json_array_get(arr, 0);
	assert_string_equal(gets(e, "kind"), "level_shift");
	assert_true(json_is_false(json_object_get(e, "open")));
	assert_int_equal(geti(e, "windows"), 15);
	assert_in_range(geti(e, "level_after_ns"), 29500000, 30500000);
	assert_non_null(strstr(gets(e, "summary"), "and stayed"));
	/* only the window before and the shift's first two stay pinned */
	assert_int_equal(window_ring__find(f->ring, 119 * SEC)->pins, 1);
	assert_int_equal(window_ring__find(f->ring, 121 * SEC)->pins, 1);
	assert_int_equal(window_ring__find(f->ring, 122 * SEC)->pins, 0);
	json_decref(arr);
	/* detection goes on from the new level: 30 ms is ordinary, 90 ms a spike */
	windows(f, 1, 90 * MS);
	windows(f, 1, 30 * MS);
	arr = list(f);
	assert_int_equal(json_array_size(arr), 2);
	e = json_array_get(arr, 1);
	assert_string_equal(gets(e, "kind"), "spike");
	assert_in_range(geti(e, "baseline_p95_ns"), 29500000, 30500000);
	json_decref(arr);
	destroy(f);
}

static void test_periodic_and_pin_budget(void **state)
{
	struct spikes_opts o = SPIKES_OPTS_DEFAULT;
	struct fixture *f;
	json_t *arr;
	char *metrics;

	(void)state;
	o.pin_budget = 8;
	f = make(o);
	windows(f, 10, 10 * MS);
	/* a spike every 8 windows (one a window late, within 15%), and one at random (28) */
	for (int i = 10; i < 62; i++) {
		bool spike =
		    i == 17 || i == 25 || i == 28 || i == 33 || i == 42 || i == 50 || i == 58;

		windows(f, 1, spike ? 40 * MS : 10 * MS);
	}
	arr = list(f);
	assert_int_equal(json_array_size(arr), 7);
	for (size_t i = 0; i < json_array_size(arr); i++) {
		json_t *e = json_array_get(arr, i);

		if (i == 2) { /* the random one */
			assert_string_equal(gets(e, "pattern"), "random");
			continue;
		}
		assert_string_equal(gets(e, "pattern"), "periodic");
		assert_in_range(geti(e, "period_ns"), 8 * SEC, 9 * SEC);
		assert_true(geti(e, "period_spread_ns") <= (int64_t)(2 * SEC));
	}
	/* the budget held: the oldest pins went first */
	assert_true(json_is_false(json_object_get(json_array_get(arr, 0), "pinned")));
	assert_true(json_is_true(json_object_get(json_array_get(arr, 6), "pinned")));
	json_decref(arr);
	metrics = spikes__metrics_text(f->spikes, f->ring);
	assert_non_null(strstr(metrics, "tailprof_spike_pinned_windows 8\n"));
	/* 7 spikes of 3 pins each (before, spike, after) */
	assert_non_null(strstr(metrics, "tailprof_spike_pins_released_total 13\n"));
	free(metrics);
	destroy(f);
}

static void test_marks(void **state)
{
	struct fixture *f = make(SPIKES_OPTS_DEFAULT);
	struct spike_mark m = {.time_unix_ns = (int64_t)(OFFSET + 105 * SEC + SEC / 2)};
	char id[SPIKE_ID_LEN], err[256];
	json_t *arr, *e;

	(void)state;
	windows(f, 10, 10 * MS);
	snprintf(m.reason, sizeof(m.reason), "deploy");
	assert_int_equal(spikes__mark(f->spikes, &m, id, err, sizeof(err)), 0);
	assert_non_null(strstr(id, "mark-"));
	/* a stage nobody knows */
	snprintf(m.stage, sizeof(m.stage), "nosuch");
	assert_int_equal(spikes__mark(f->spikes, &m, id, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "stage"));
	m.stage[0] = 0;
	windows(f, 1, 10 * MS);
	arr = list(f);
	assert_int_equal(json_array_size(arr), 1);
	e = json_array_get(arr, 0);
	assert_string_equal(gets(e, "source"), "mark");
	assert_string_equal(gets(e, "reason"), "deploy");
	/* one window each side of 105 s: 104, 105, 106 */
	assert_int_equal(geti(e, "start_unix_ns"), (int64_t)(OFFSET + 104 * SEC));
	assert_int_equal(geti(e, "end_unix_ns"), (int64_t)(OFFSET + 107 * SEC));
	assert_true(json_is_false(json_object_get(e, "open")));
	json_decref(arr);
	assert_int_equal(window_ring__find(f->ring, 104 * SEC)->pins, 1);
	assert_int_equal(window_ring__find(f->ring, 106 * SEC)->pins, 1);
	/* before everything held */
	windows(f, 150, 10 * MS);
	m.time_unix_ns = (int64_t)(OFFSET + 50 * SEC);
	assert_int_equal(spikes__mark(f->spikes, &m, id, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "before the oldest window"));
	destroy(f);
}

static void test_alerts(void **state)
{
	struct fixture *f = make(SPIKES_OPTS_DEFAULT);
	struct spike_alert a = {.firing = true, .starts_unix_ns = (int64_t)(OFFSET + 108 * SEC)};
	json_t *arr, *e;
	char *metrics;

	(void)state;
	snprintf(a.fingerprint, sizeof(a.fingerprint), "c5b1d2e3f4a59687");
	snprintf(a.group_key, sizeof(a.group_key), "{}:{alertname=\"HighLatency\"}");
	snprintf(a.reason, sizeof(a.reason), "HighLatency");
	windows(f, 10, 10 * MS);
	assert_int_equal(spikes__alerts(f->spikes, &a, 1), 0);
	assert_int_equal(spikes__alerts(f->spikes, &a, 1), 0); /* a repeated delivery */
	windows(f, 1, 10 * MS);
	/* it stays open: the lookback (2) plus 10 windows pinned, the rest counted */
	windows(f, 20, 10 * MS);
	arr = list(f);
	assert_int_equal(json_array_size(arr), 1);
	e = json_array_get(arr, 0);
	assert_string_equal(gets(e, "source"), "alertmanager");
	assert_true(json_is_true(json_object_get(e, "open")));
	assert_int_equal(geti(e, "start_unix_ns"), (int64_t)(OFFSET + 106 * SEC));
	assert_int_equal(geti(e, "unpinned_windows"), 25 - 12);
	json_decref(arr);
	/* resolved: closes at endsAt */
	a.firing = false;
	a.ends_unix_ns = (int64_t)(OFFSET + 125 * SEC + 1);
	assert_int_equal(spikes__alerts(f->spikes, &a, 1), 0);
	windows(f, 1, 10 * MS);
	arr = list(f);
	e = json_array_get(arr, 0);
	assert_true(json_is_false(json_object_get(e, "open")));
	json_decref(arr);
	metrics = spikes__metrics_text(f->spikes, f->ring);
	assert_non_null(strstr(metrics, "tailprof_spike_alerts_total{result=\"repeat\"} 1\n"));
	assert_non_null(
	    strstr(metrics, "tailprof_spikes_total{stage=\"\",source=\"alertmanager\"} 1\n"));
	free(metrics);
	destroy(f);
}

/* At most 32 marks and alerts go on at once; "latest" is the newest that began. */
static void test_open_external_capped_and_latest(void **state)
{
	struct fixture *f = make(SPIKES_OPTS_DEFAULT);
	struct spike_alert a = {.firing = true};
	struct spike_mark m = {0};
	char id[SPIKE_ID_LEN], err[256], latest[SPIKE_ID_LEN];
	char *metrics;

	(void)state;
	windows(f, 10, 10 * MS);
	for (int i = 0; i < 40; i++) {
		a.starts_unix_ns = (int64_t)(OFFSET + 50 * SEC); /* older than the ring */
		snprintf(a.fingerprint, sizeof(a.fingerprint), "fp%02d", i);
		assert_int_equal(spikes__alerts(f->spikes, &a, 1), 0);
	}
	windows(f, 1, 10 * MS);
	metrics = spikes__metrics_text(f->spikes, f->ring);
	assert_non_null(strstr(metrics, "tailprof_spike_external_dropped_total 8\n"));
	free(metrics);
	/* a spike still finds its baseline beside alerts of no stage going on */
	windows(f, 1, 40 * MS);
	windows(f, 1, 10 * MS);
	assert_int_equal(spikes__resolve(f->spikes, "latest", NULL, latest), 0);
	assert_non_null(strstr(latest, "stage-")); /* stages have no names here */
	{
		char *text = spikes__get_json(f->spikes, f->ring, latest, &(bool){0});
		json_t *doc = json_loads(text, 0, NULL);

		assert_true(json_array_size(json_object_get(json_object_get(doc, "evidence"),
							    "baseline_windows")) > 0);
		json_decref(doc);
		free(text);
	}
	destroy(f);
	/* a mark of a time to come is not the latest */
	f = make(SPIKES_OPTS_DEFAULT);
	windows(f, 10, 10 * MS);
	m.time_unix_ns = (int64_t)(OFFSET + f->t + 1800 * SEC);
	assert_int_equal(spikes__mark(f->spikes, &m, id, err, sizeof(err)), 0);
	windows(f, 1, 40 * MS);
	windows(f, 1, 10 * MS);
	assert_int_equal(spikes__resolve(f->spikes, "latest", NULL, latest), 0);
	assert_string_not_equal(latest, id);
	assert_null(strstr(latest, "mark"));
	destroy(f);
}

static void test_options(void **state)
{
	struct spikes_opts o = SPIKES_OPTS_DEFAULT;
	char msg[256];

	(void)state;
	assert_int_equal(spikes_opts__set(&o, "k", "2.5", msg, sizeof(msg)), 0);
	assert_true(o.k == 2.5);
	assert_int_equal(spikes_opts__set(&o, "k", "1", msg, sizeof(msg)), -EINVAL);
	assert_non_null(strstr(msg, "above 1"));
	assert_int_equal(spikes_opts__set(&o, "k", "nan", msg, sizeof(msg)), -EINVAL);
	assert_int_equal(spikes_opts__set(&o, "k", "0x2p0", msg, sizeof(msg)), -EINVAL);
	assert_int_equal(spikes_opts__set(&o, "baseline_windows", "9", msg, sizeof(msg)), -EINVAL);
	assert_int_equal(spikes_opts__set(&o, "min_rise", "5ms", msg, sizeof(msg)), 0);
	assert_int_equal(o.min_rise_ns, 5 * MS);
	assert_int_equal(spikes_opts__set(&o, "min_rise", "0", msg, sizeof(msg)), 0);
	assert_int_equal(o.min_rise_ns, 0);
	assert_int_equal(spikes_opts__set(&o, "state_dir", "rel/dir", msg, sizeof(msg)), -EINVAL);
	assert_int_equal(spikes_opts__set(&o, "nope", "1", msg, sizeof(msg)), -ENOENT);
	assert_non_null(strstr(msg, "allowed"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_spike_episode_and_pins),
	    cmocka_unit_test(test_min_requests_and_threshold_rise),
	    cmocka_unit_test(test_level_shift),
	    cmocka_unit_test(test_periodic_and_pin_budget),
	    cmocka_unit_test(test_marks),
	    cmocka_unit_test(test_alerts),
	    cmocka_unit_test(test_open_external_capped_and_latest),
	    cmocka_unit_test(test_options),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
