// SPDX-License-Identifier: GPL-2.0-only
/* Unit tests of a comparison side: its checks (cmp_side.c, one case per rule) and its JSON
 * (cmp_side_json.c): round trips, strings that are not UTF-8, counters JSON cannot hold, texts
 * over the caps, and a fuzz loop over cut and mutated texts. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cmp_side.h"
#include "cmp_side_json.h"
#include "cmp_side_sample.h"

/* One case per rule of cmp_side__valid: a sample side spoiled one way, and what why must say. */
struct bad_case {
	const char *said; /* in why */
	void (*spoil)(struct cmp_side *s);
};

static void spoil_host(struct cmp_side *s)
{
	memset(s->cond.host, 'h', sizeof(s->cond.host));
}

static void spoil_strings(struct cmp_side *s)
{
	for (uint32_t i = 0; i < s->nr_strings; i++)
		free(s->strings[i]);
	free(s->strings);
	s->strings = NULL;
}

static void spoil_string(struct cmp_side *s)
{
	free(s->strings[3]);
	s->strings[3] = NULL;
}

static void spoil_stacks(struct cmp_side *s)
{
	for (uint32_t i = 0; i < s->nr_stacks; i++)
		free(s->stacks[i].frames);
	free(s->stacks);
	s->stacks = NULL;
}

static void spoil_frames(struct cmp_side *s)
{
	free(s->stacks[1].frames);
	s->stacks[1].frames = NULL;
}

static void spoil_frame(struct cmp_side *s)
{
	s->stacks[1].frames[2] = s->nr_strings;
}

static void spoil_windows(struct cmp_side *s)
{
	uint32_t n = s->nr_windows;

	for (uint32_t i = 0; i < n; i++) {
		struct cmp_window *w = &s->windows[i];

		for (uint32_t j = 0; j < w->nr_stages; j++)
			free(w->stages[j].cells);
		free(w->stages);
		free(w->runq_cells);
		free(w->stacks);
	}
	free(s->windows);
	s->windows = NULL;
	s->nr_windows = n;
}

static void spoil_end(struct cmp_side *s)
{
	s->windows[3].end_unix_ns = s->windows[3].start_unix_ns - 1;
}

static void spoil_order(struct cmp_side *s)
{
	s->windows[4].start_unix_ns = s->windows[3].start_unix_ns - 1;
}

static void spoil_runq_cells(struct cmp_side *s)
{
	free(s->windows[1].runq_cells);
	s->windows[1].runq_cells = NULL;
}

static void spoil_runq_bucket(struct cmp_side *s)
{
	s->windows[1].runq_cells[2].bucket = TP_HIST_BUCKETS;
}

static void spoil_runq_sorted(struct cmp_side *s)
{
	s->windows[1].runq_cells[1].bucket = s->windows[1].runq_cells[0].bucket;
}

static void spoil_runq_sum(struct cmp_side *s)
{
	s->windows[1].runq_count++;
}

static void spoil_stages(struct cmp_side *s)
{
	for (uint32_t j = 0; j < s->windows[0].nr_stages; j++)
		free(s->windows[0].stages[j].cells);
	free(s->windows[0].stages);
	s->windows[0].stages = NULL;
}

static void spoil_stage_name(struct cmp_side *s)
{
	s->windows[0].stages[1].name = 77;
}

static void spoil_stage_bucket(struct cmp_side *s)
{
	s->windows[0].stages[0].cells[1].bucket = UINT32_MAX;
}

static void spoil_stage_sorted(struct cmp_side *s)
{
	s->windows[0].stages[0].cells[0].bucket = 300;
}

static void spoil_stage_sum(struct cmp_side *s)
{
	s->windows[0].stages[0].count = 0;
}

static void spoil_stage_cells(struct cmp_side *s)
{
	s->windows[0].stages[1].nr_cells = 1; /* its cells are NULL */
}

static void spoil_window_stacks(struct cmp_side *s)
{
	free(s->windows[5].stacks);
	s->windows[5].stacks = NULL;
}

static void spoil_window_stack(struct cmp_side *s)
{
	s->windows[5].stacks[1].stack = 3;
}

static void spoil_range(struct cmp_side *s)
{
	s->cond.to_unix_ns = s->cond.from_unix_ns;
}

static void spoil_before_from(struct cmp_side *s)
{
	s->cond.from_unix_ns += 1;
}

static void spoil_after_to(struct cmp_side *s)
{
	s->windows[5].end_unix_ns = s->cond.to_unix_ns + 1;
}

static void spoil_overlap(struct cmp_side *s)
{
	s->windows[2].start_unix_ns = s->windows[1].end_unix_ns - 1;
}

static void spoil_window_ns(struct cmp_side *s)
{
	s->cond.window_ns = 0;
}

static void spoil_frequency(struct cmp_side *s)
{
	s->cond.frequency_hz = 0;
}

static void spoil_period(struct cmp_side *s)
{
	s->cond.sample_period_ns = 0;
}

static void spoil_stage_latency(struct cmp_side *s)
{
	s->windows[4].stages[0].sum_ns = s->windows[4].stages[0].count * 9999 + 1;
}

static const struct bad_case bad_cases[] = {
    {"conditions: from 1700000000000000000 is not before to", spoil_range},
    {"window 0: [1700000000000000000, 1700000010000000000) is outside the side's range",
     spoil_before_from},
    {"window 5: [1700000050000000000, 1700000060000000001) is outside", spoil_after_to},
    {"window 2 starts before window 1 ends", spoil_overlap},
    {"conditions: window_ns is 0", spoil_window_ns},
    {"conditions: frequency_hz is 0", spoil_frequency},
    {"conditions: sample_period_ns is 0", spoil_period},
    {"window 4 stage 0: latency sum 99991 ns is more than its 10 requests of at most 9999 ns",
     spoil_stage_latency},
    {"conditions: host is not NUL-terminated", spoil_host},
    {"5 strings but no table", spoil_strings},
    {"string 3 is NULL", spoil_string},
    {"3 stacks but no array", spoil_stacks},
    {"stack 1: 3 frames but no array", spoil_frames},
    {"stack 1 frame 2: string 5 out of bounds", spoil_frame},
    {"6 windows but no array", spoil_windows},
    {"window 3: end", spoil_end},
    {"window 4 starts before window 3", spoil_order},
    {"window 1 runq: 3 cells but no array", spoil_runq_cells},
    {"window 1 runq cell 2: bucket", spoil_runq_bucket},
    {"window 1 runq cell 1: bucket 5 not after", spoil_runq_sorted},
    {"window 1 runq: cells sum to", spoil_runq_sum},
    {"window 0: 2 stages but no array", spoil_stages},
    {"window 0 stage 1: name 77 out of bounds", spoil_stage_name},
    {"window 0 stage 0 cell 1: bucket 4294967295 out of range", spoil_stage_bucket},
    {"window 0 stage 0 cell 1: bucket 200 not after", spoil_stage_sorted},
    {"window 0 stage 0: cells sum to 10, not its count 0", spoil_stage_sum},
    {"window 0 stage 1: 1 cells but no array", spoil_stage_cells},
    {"window 5: 2 stack counts but no array", spoil_window_stacks},
    {"window 5 stack count 1: stack 3 out of bounds", spoil_window_stack},
};

static void test_valid(void **state)
{
	struct cmp_side *side = make_side(0);
	char why[256] = "";

	(void)state;
	assert_true(cmp_side__valid(side, why, sizeof(why)));
	cmp_side__free(side);
	assert_false(cmp_side__valid(NULL, why, sizeof(why)));
	cmp_side__free(NULL);
	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		char *json = NULL;

		side = make_side(0);
		bad_cases[i].spoil(side);
		why[0] = '\0';
		assert_false(cmp_side__valid(side, why, sizeof(why)));
		if (!strstr(why, bad_cases[i].said))
			fail_msg("case %zu: '%s', not '%s'", i, why, bad_cases[i].said);
		/* not written as JSON either */
		assert_int_equal(cmp_side__to_json(side, &json, why, sizeof(why)), -EINVAL);
		assert_null(json);
		cmp_side__free(side);
	}
}

static void test_json(void **state)
{
	struct cmp_side *side = make_side(3), *back;
	char *json, why[256];

	(void)state;
	assert_int_equal(cmp_side__to_json(side, &json, why, sizeof(why)), 0);
	assert_int_equal(cmp_side__from_json(json, strlen(json), &back, why, sizeof(why)), 0);
	assert_sides_equal(side, back);
	cmp_side__free(back);
	free(json);

	/* not UTF-8: written with '?' */
	free(side->strings[2]);
	side->strings[2] = strdup("bad\xff\xfe name");
	assert_int_equal(cmp_side__to_json(side, &json, why, sizeof(why)), 0);
	assert_int_equal(cmp_side__from_json(json, strlen(json), &back, why, sizeof(why)), 0);
	assert_string_equal(back->strings[2], "bad?? name");
	cmp_side__free(back);
	free(json);

	/* a counter JSON integers cannot hold */
	side->windows[1].drops = (uint64_t)INT64_MAX + 1;
	assert_int_equal(cmp_side__to_json(side, &json, why, sizeof(why)), -ERANGE);
	assert_null(json);
	assert_non_null(strstr(why, "windows[1].drops"));
	cmp_side__free(side);
}

/* Texts over the caps are refused before they cost memory. */
static void test_json_caps(void **state)
{
	static const struct {
		const char *key, *elem, *said;
		size_t n;
	} caps[] = {
	    {"windows", "0", "windows: 100001 elements, more than 100000", 100001},
	    {"strings", "\"\"", "strings: 1000001 elements, more than 1000000", 1000001},
	    {"stacks", "[]", "stacks: 1000001 elements, more than 1000000", 1000001},
	};
	static const char head[] =
	    "{\"format\": 1, \"conditions\": {\"host\": \"h\", "
	    "\"kernel\": \"k\", \"version\": \"v\", \"snapshot\": \"\", "
	    "\"frequency_hz\": 99, \"sample_period_ns\": 1, \"window_ns\": 1, "
	    "\"from_unix_ns\": 0, \"to_unix_ns\": 1, \"saved_unix_ns\": 0}";
	struct cmp_side *side;
	char why[256];

	(void)state;
	for (size_t c = 0; c < sizeof(caps) / sizeof(caps[0]); c++) {
		static const char *const keys[] = {"strings", "stacks", "windows"};
		size_t elen = strlen(caps[c].elem), len;
		char *t = malloc(sizeof(head) + 64 + caps[c].n * (elen + 1));

		len = sprintf(t, "%s", head);
		for (size_t k = 0; k < 3; k++) {
			len += sprintf(t + len, ", \"%s\": [", keys[k]);
			for (size_t i = 0; !strcmp(keys[k], caps[c].key) && i < caps[c].n; i++) {
				memcpy(t + len, caps[c].elem, elen);
				len += elen;
				t[len++] = ',';
			}
			if (t[len - 1] == ',')
				len--;
			t[len++] = ']';
		}
		t[len++] = '}';
		assert_int_equal(cmp_side__from_json(t, len, &side, why, sizeof(why)), -EBADMSG);
		assert_null(side);
		if (!strstr(why, caps[c].said))
			fail_msg("cap %s: '%s'", caps[c].key, why);
		free(t);
	}
	/* a stack of 4097 frames, a window with a stage index past the table, a bucket past the
	 * last one, a negative count, a real for an integer */
	{
		static const char *const bodies[][2] = {
		    {"\"strings\": [\"a\"], \"stacks\": [[%s]], \"windows\": []",
		     "stacks[0]: 4097 frames"},
		    {"\"strings\": [], \"stacks\": [], \"windows\": [{\"start_unix_ns\": 0}]",
		     "windows[0]: no \"end_unix_ns\""},
		};
		char *frames = malloc(4097 * 2 + 1), *t;
		size_t n = 0;

		for (int i = 0; i < 4097; i++)
			n += sprintf(frames + n, i ? ",0" : "0");
		for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
			char *body;

			assert_true(asprintf(&body, bodies[i][0], frames) > 0);
			assert_true(asprintf(&t, "%s, %s}", head, body) > 0);
			assert_int_equal(cmp_side__from_json(t, strlen(t), &side, why, sizeof(why)),
					 -EBADMSG);
			if (!strstr(why, bodies[i][1]))
				fail_msg("'%s', not '%s'", why, bodies[i][1]);
			free(body);
			free(t);
		}
		free(frames);
	}
}

/* Texts cut at every 97th byte and mutated at random bytes (fixed seed): an error with a message,
 * or a side that passes its checks; never a crash (run it under valgrind or ASan to see more). */
static void test_json_fuzz(void **state)
{
	static const char alphabet[] = "0123456789-,:[]{}\"ae \\";
	struct cmp_side *side = make_side(1), *back;
	char *json, *t, why[256];
	uint64_t rng = 0x9e3779b97f4a7c15ull;
	unsigned int parsed = 0, refused = 0;
	size_t len;

	(void)state;
	assert_int_equal(cmp_side__to_json(side, &json, why, sizeof(why)), 0);
	len = strlen(json);
	t = malloc(len + 1);
	for (size_t cut = 0; cut < len; cut += 97) {
		memcpy(t, json, cut);
		why[0] = '\0';
		assert_int_equal(cmp_side__from_json(t, cut, &back, why, sizeof(why)), -EBADMSG);
		assert_null(back);
		assert_true(why[0]);
	}
	for (int round = 0; round < 3000; round++) {
		int n = 1 + round % 4, err;

		memcpy(t, json, len);
		for (int i = 0; i < n; i++) {
			size_t off;

			rng = rng * 6364136223846793005ull + 1442695040888963407ull;
			off = (rng >> 33) % len;
			/* half the time a byte of the JSON's own alphabet, else any byte */
			t[off] = (rng >> 8) & 1 ? alphabet[(rng >> 16) % (sizeof(alphabet) - 1)]
						: (char)(rng >> 24);
		}
		why[0] = '\0';
		err = cmp_side__from_json(t, len, &back, why, sizeof(why));
		if (err) {
			assert_true(err == -EBADMSG || err == -EPROTONOSUPPORT);
			assert_null(back);
			assert_true(why[0]);
			refused++;
		} else {
			assert_true(cmp_side__valid(back, why, sizeof(why)));
			cmp_side__free(back);
			parsed++;
		}
	}
	/* both outcomes happen: the loop reaches past the JSON parser */
	assert_true(parsed > 10);
	assert_true(refused > 10);
	free(t);
	free(json);
	cmp_side__free(side);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_valid),
	    cmocka_unit_test(test_json),
	    cmocka_unit_test(test_json_caps),
	    cmocka_unit_test(test_json_fuzz),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
