// SPDX-License-Identifier: GPL-2.0-only
/* A comparison side as JSON text and back (the format is in cmp_side_json.h): the writer builds
 * a jansson tree, the reader walks one, checking each value before it sizes anything by it. */
#include "cmp_side_json.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_hist.h"
#include "window.h" /* task__sanitize_name */

#define WHERE_LEN 64 /* "windows[99999].stages[4095]" */

/* -- writing -- */

struct writer {
	int err; /* the first error; later values are written as 0 and dropped */
	char *why;
	size_t whylen;
};

static void __attribute__((format(printf, 3, 4)))
w_fail(struct writer *w, int err, const char *fmt, ...)
{
	va_list ap;

	if (w->err)
		return;
	w->err = err;
	va_start(ap, fmt);
	vsnprintf(w->why, w->whylen, fmt, ap);
	va_end(ap);
}

/* A counter as a JSON integer (jansson's are int64_t). */
static json_int_t w_u64(struct writer *w, uint64_t v, const char *where, const char *key)
{
	if (v <= INT64_MAX)
		return (json_int_t)v;
	w_fail(w, -ERANGE, "%s.%s: %" PRIu64 " is above what JSON integers hold here", where, key,
	       v);
	return 0;
}

/* NULL (then w->err is set) when out of memory. */
static json_t *w_new(struct writer *w, json_t *j)
{
	if (!j)
		w_fail(w, -ENOMEM, "out of memory");
	return j;
}

/* Appends a new value to array a; the value is consumed. */
static void w_append(struct writer *w, json_t *a, json_t *v)
{
	if (json_array_append_new(a, v))
		w_fail(w, -ENOMEM, "out of memory");
}

/* s as a JSON string: jansson takes UTF-8 only, so anything else is written with '?' for its
 * invalid bytes (task__sanitize_name, which also turns control characters into '?'). */
static json_t *w_string(struct writer *w, const char *s)
{
	json_t *j = json_string(s);
	char *copy;

	if (j)
		return j;
	copy = strdup(s);
	if (copy) {
		task__sanitize_name(copy);
		j = json_string(copy);
		free(copy);
	}
	return w_new(w, j);
}

/* Histogram cells as [bucket, count, ...]. */
static json_t *w_cells(struct writer *w, const struct hist_cell *cells, uint32_t nr)
{
	json_t *a = w_new(w, json_array());

	for (uint32_t i = 0; a && i < nr; i++) {
		w_append(w, a, json_integer(cells[i].bucket));
		w_append(w, a, json_integer(cells[i].count));
	}
	return a;
}

static json_t *w_conditions(struct writer *w, const struct cmp_conditions *c)
{
	return w_new(w, json_pack("{s:o, s:o, s:o, s:o, s:I, s:I, s:I, s:I, s:I, s:I}", "host",
				  w_string(w, c->host), "kernel", w_string(w, c->kernel), "version",
				  w_string(w, c->version), "snapshot", w_string(w, c->snapshot),
				  "frequency_hz", (json_int_t)c->frequency_hz, "sample_period_ns",
				  w_u64(w, c->sample_period_ns, "conditions", "sample_period_ns"),
				  "window_ns", w_u64(w, c->window_ns, "conditions", "window_ns"),
				  "from_unix_ns", (json_int_t)c->from_unix_ns, "to_unix_ns",
				  (json_int_t)c->to_unix_ns, "saved_unix_ns",
				  (json_int_t)c->saved_unix_ns));
}

static json_t *w_stage(struct writer *w, const struct cmp_stage_win *st, const char *where)
{
	return w_new(w,
		     json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:o}", "name", (json_int_t)st->name,
			       "count", w_u64(w, st->count, where, "count"), "sum_ns",
			       w_u64(w, st->sum_ns, where, "sum_ns"), "max_ns",
			       w_u64(w, st->max_ns, where, "max_ns"), "cpu_samples",
			       w_u64(w, st->cpu_samples, where, "cpu_samples"), "offcpu_ns",
			       w_u64(w, st->offcpu_ns, where, "offcpu_ns"), "cells",
			       w_cells(w, st->cells, st->nr_cells)));
}

static json_t *w_window(struct writer *w, const struct cmp_window *win, uint32_t i)
{
	json_t *stages = w_new(w, json_array()), *stacks = w_new(w, json_array());
	char where[WHERE_LEN];

	for (uint32_t j = 0; stages && j < win->nr_stages; j++) {
		snprintf(where, sizeof(where), "windows[%" PRIu32 "].stages[%" PRIu32 "]", i, j);
		w_append(w, stages, w_stage(w, &win->stages[j], where));
	}
	snprintf(where, sizeof(where), "windows[%" PRIu32 "]", i);
	for (uint32_t j = 0; stacks && j < win->nr_stacks; j++) {
		w_append(w, stacks, json_integer(win->stacks[j].stack));
		w_append(w, stacks, json_integer(w_u64(w, win->stacks[j].count, where, "stacks")));
	}
#define U(field) #field, w_u64(w, win->field, where, #field)
	return w_new(w, json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, "
				  "s:o, s:o, s:o}",
				  "start_unix_ns", (json_int_t)win->start_unix_ns, "end_unix_ns",
				  (json_int_t)win->end_unix_ns, U(cpu_samples), U(offcpu_ns),
				  U(offcpu_samples), U(runq_count), U(runq_sum_ns), U(runq_max_ns),
				  U(gc_count), U(gc_pause_ns), U(gc_max_ns), U(drops), "runq_cells",
				  w_cells(w, win->runq_cells, win->nr_runq_cells), "stages", stages,
				  "stacks", stacks));
#undef U
}

/* Sizes a reader would refuse, refused here so that nothing is written that cannot be read. */
static bool w_within_caps(struct writer *w, const struct cmp_side *side)
{
	if (side->nr_windows > CMP_SIDE_JSON_MAX_WINDOWS)
		w_fail(w, -E2BIG, "%" PRIu32 " windows, more than %d", side->nr_windows,
		       CMP_SIDE_JSON_MAX_WINDOWS);
	if (side->nr_strings > CMP_SIDE_JSON_MAX_STRINGS)
		w_fail(w, -E2BIG, "%" PRIu32 " strings, more than %d", side->nr_strings,
		       CMP_SIDE_JSON_MAX_STRINGS);
	if (side->nr_stacks > CMP_SIDE_JSON_MAX_STACKS)
		w_fail(w, -E2BIG, "%" PRIu32 " stacks, more than %d", side->nr_stacks,
		       CMP_SIDE_JSON_MAX_STACKS);
	for (uint32_t i = 0; i < side->nr_stacks; i++)
		if (side->stacks[i].nr_frames > CMP_SIDE_JSON_MAX_FRAMES)
			w_fail(w, -E2BIG, "stacks[%" PRIu32 "]: %" PRIu32 " frames, more than %d",
			       i, side->stacks[i].nr_frames, CMP_SIDE_JSON_MAX_FRAMES);
	for (uint32_t i = 0; i < side->nr_windows; i++) {
		if (side->windows[i].nr_stages > CMP_SIDE_JSON_MAX_STAGES)
			w_fail(w, -E2BIG, "windows[%" PRIu32 "]: %" PRIu32 " stages, more than %d",
			       i, side->windows[i].nr_stages, CMP_SIDE_JSON_MAX_STAGES);
		if (side->windows[i].nr_stacks > CMP_SIDE_JSON_MAX_STACKS)
			w_fail(w, -E2BIG,
			       "windows[%" PRIu32 "]: %" PRIu32 " stack counts, more than %d", i,
			       side->windows[i].nr_stacks, CMP_SIDE_JSON_MAX_STACKS);
	}
	return !w->err;
}

int cmp_side__to_json(const struct cmp_side *side, char **out, char *why, size_t whylen)
{
	struct writer w = {.why = why, .whylen = whylen};
	json_t *root = NULL, *strings, *stacks, *windows;

	*out = NULL;
	if (!cmp_side__valid(side, why, whylen))
		return -EINVAL;
	if (!w_within_caps(&w, side))
		return w.err;
	strings = w_new(&w, json_array());
	stacks = w_new(&w, json_array());
	windows = w_new(&w, json_array());
	for (uint32_t i = 0; strings && i < side->nr_strings && !w.err; i++)
		w_append(&w, strings, w_string(&w, side->strings[i]));
	for (uint32_t i = 0; stacks && i < side->nr_stacks && !w.err; i++) {
		json_t *frames = w_new(&w, json_array());

		for (uint32_t j = 0; frames && j < side->stacks[i].nr_frames; j++)
			w_append(&w, frames, json_integer(side->stacks[i].frames[j]));
		w_append(&w, stacks, frames);
	}
	for (uint32_t i = 0; windows && i < side->nr_windows && !w.err; i++)
		w_append(&w, windows, w_window(&w, &side->windows[i], i));
	/* json_pack takes the arrays' references, also when it fails */
	root = w_new(&w, json_pack("{s:i, s:o, s:o*, s:o*, s:o*}", "format", CMP_SIDE_JSON_FORMAT,
				   "conditions", w_conditions(&w, &side->cond), "strings", strings,
				   "stacks", stacks, "windows", windows));
	if (!w.err) {
		*out = json_dumps(root, JSON_COMPACT);
		if (!*out)
			w_fail(&w, -ENOMEM, "out of memory");
	}
	json_decref(root);
	return w.err;
}

/* -- reading -- */

struct reader {
	char *why;
	size_t whylen;
};

/* Writes why; the value is -EBADMSG. */
#define R_BAD(r, ...) (snprintf((r)->why, (r)->whylen, __VA_ARGS__), -EBADMSG)

static int r_int(struct reader *r, const json_t *v, const char *where, const char *key, int64_t min,
		 int64_t max, int64_t *out)
{
	if (!v)
		return R_BAD(r, "%s: no \"%s\"", where, key);
	if (!json_is_integer(v))
		return R_BAD(r, "%s.%s: not an integer", where, key);
	*out = json_integer_value(v);
	if (*out < min || *out > max)
		return R_BAD(r, "%s.%s: %" PRId64 " out of range (%" PRId64 " to %" PRId64 ")",
			     where, key, *out, min, max);
	return 0;
}

static int r_i64(struct reader *r, const json_t *obj, const char *where, const char *key,
		 int64_t *out)
{
	return r_int(r, json_object_get(obj, key), where, key, INT64_MIN, INT64_MAX, out);
}

static int r_u64(struct reader *r, const json_t *obj, const char *where, const char *key,
		 uint64_t *out)
{
	int64_t v = 0;
	int err = r_int(r, json_object_get(obj, key), where, key, 0, INT64_MAX, &v);

	*out = v;
	return err;
}

static int r_u32(struct reader *r, const json_t *obj, const char *where, const char *key,
		 int64_t max, uint32_t *out)
{
	int64_t v = 0;
	int err = r_int(r, json_object_get(obj, key), where, key, 0, max, &v);

	*out = v;
	return err;
}

/* obj[key], an array of at most max elements. */
static int r_array(struct reader *r, const json_t *obj, const char *where, const char *key,
		   size_t max, const json_t **out)
{
	*out = json_object_get(obj, key);
	if (!*out)
		return R_BAD(r, "%s: no \"%s\"", where, key);
	if (!json_is_array(*out))
		return R_BAD(r, "%s.%s: not an array", where, key);
	if (json_array_size(*out) > max)
		return R_BAD(r, "%s.%s: %zu elements, more than %zu", where, key,
			     json_array_size(*out), max);
	return 0;
}

/* An array of n elements of size each, zeroed; NULL for none. */
static int r_alloc(size_t n, size_t size, void *out)
{
	void *p = n ? calloc(n, size) : NULL;

	*(void **)out = p;
	return n && !p ? -ENOMEM : 0;
}

/* obj[key], an array of at most max elements, into *arr, with zeroed room for its elements in
 * *out (size bytes each; NULL for none) and their count in *nr. */
static int r_table(struct reader *r, const json_t *obj, const char *where, const char *key,
		   size_t max, size_t size, const json_t **arr, void *out, uint32_t *nr)
{
	int err = r_array(r, obj, where, key, max, arr);

	if (!err)
		err = r_alloc(json_array_size(*arr), size, out);
	if (!err)
		*nr = json_array_size(*arr);
	return err;
}

static int r_string(struct reader *r, const json_t *obj, const char *where, const char *key,
		    char *buf, size_t len)
{
	const json_t *v = json_object_get(obj, key);

	if (!v)
		return R_BAD(r, "%s: no \"%s\"", where, key);
	if (!json_is_string(v))
		return R_BAD(r, "%s.%s: not a string", where, key);
	if (json_string_length(v) >= len || strlen(json_string_value(v)) != json_string_length(v))
		return R_BAD(r, "%s.%s: longer than %zu bytes or holds a NUL", where, key, len - 1);
	memcpy(buf, json_string_value(v), json_string_length(v) + 1);
	return 0;
}

/* obj[key], an array of pairs [a, b, a, b, ...] of at most max pairs, each a in [0, a_max] and b
 * in [0, b_max]: *pairs (malloc'd, a then b, NULL for none) and *nr pairs. */
static int r_pairs(struct reader *r, const json_t *obj, const char *where, const char *key,
		   size_t max, int64_t a_max, int64_t b_max, int64_t **pairs, uint32_t *nr)
{
	const json_t *arr;
	size_t n;
	int err;

	*pairs = NULL;
	err = r_array(r, obj, where, key, 2 * max, &arr);
	if (err)
		return err;
	n = json_array_size(arr);
	if (n % 2)
		return R_BAD(r, "%s.%s: an odd number of elements, not pairs", where, key);
	err = r_alloc(n, sizeof(**pairs), pairs);
	for (size_t i = 0; !err && i < n; i++)
		err = r_int(r, json_array_get(arr, i), where, key, 0, i % 2 ? b_max : a_max,
			    &(*pairs)[i]);
	if (err) {
		free(*pairs);
		*pairs = NULL;
		return err;
	}
	*nr = n / 2;
	return 0;
}

/* obj[key]: [bucket, count, ...] into *cells and *nr. */
static int r_cells(struct reader *r, const json_t *obj, const char *where, const char *key,
		   struct hist_cell **cells, uint32_t *nr)
{
	int64_t *pairs;
	uint32_t n = 0;
	int err;

	err = r_pairs(r, obj, where, key, TP_HIST_BUCKETS, TP_HIST_BUCKETS - 1, UINT32_MAX, &pairs,
		      &n);
	if (!err)
		err = r_alloc(n, sizeof(**cells), cells);
	for (uint32_t i = 0; !err && i < n; i++)
		(*cells)[i] = (struct hist_cell){.bucket = pairs[2 * i], .count = pairs[2 * i + 1]};
	if (!err)
		*nr = n;
	free(pairs);
	return err;
}

static int r_conditions(struct reader *r, const json_t *root, struct cmp_conditions *c)
{
	const json_t *o = json_object_get(root, "conditions");
	const char *w = "conditions";
	int err;

	if (!json_is_object(o))
		return R_BAD(r, "no \"conditions\" object");
	err = r_string(r, o, w, "host", c->host, sizeof(c->host));
	if (!err)
		err = r_string(r, o, w, "kernel", c->kernel, sizeof(c->kernel));
	if (!err)
		err = r_string(r, o, w, "version", c->version, sizeof(c->version));
	if (!err)
		err = r_string(r, o, w, "snapshot", c->snapshot, sizeof(c->snapshot));
	if (!err)
		err = r_u32(r, o, w, "frequency_hz", UINT32_MAX, &c->frequency_hz);
	if (!err)
		err = r_u64(r, o, w, "sample_period_ns", &c->sample_period_ns);
	if (!err)
		err = r_u64(r, o, w, "window_ns", &c->window_ns);
	if (!err)
		err = r_i64(r, o, w, "from_unix_ns", &c->from_unix_ns);
	if (!err)
		err = r_i64(r, o, w, "to_unix_ns", &c->to_unix_ns);
	if (!err)
		err = r_i64(r, o, w, "saved_unix_ns", &c->saved_unix_ns);
	return err;
}

static int r_strings(struct reader *r, const json_t *root, struct cmp_side *side)
{
	const json_t *a;
	int err;

	err = r_table(r, root, "side", "strings", CMP_SIDE_JSON_MAX_STRINGS, sizeof(*side->strings),
		      &a, &side->strings, &side->nr_strings);
	if (err)
		return err;
	for (uint32_t i = 0; i < side->nr_strings; i++) {
		const json_t *v = json_array_get(a, i);

		if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
			return R_BAD(r, "strings[%" PRIu32 "]: not a string without NUL", i);
		side->strings[i] = strdup(json_string_value(v));
		if (!side->strings[i])
			return -ENOMEM;
	}
	return 0;
}

static int r_stacks(struct reader *r, const json_t *root, struct cmp_side *side)
{
	const json_t *a;
	int err;

	err = r_table(r, root, "side", "stacks", CMP_SIDE_JSON_MAX_STACKS, sizeof(*side->stacks),
		      &a, &side->stacks, &side->nr_stacks);
	if (err)
		return err;
	for (uint32_t i = 0; i < side->nr_stacks; i++) {
		const json_t *frames = json_array_get(a, i);
		struct cmp_stack *st = &side->stacks[i];
		char where[WHERE_LEN];

		snprintf(where, sizeof(where), "stacks[%" PRIu32 "]", i);
		if (!json_is_array(frames))
			return R_BAD(r, "%s: not an array", where);
		if (json_array_size(frames) > CMP_SIDE_JSON_MAX_FRAMES)
			return R_BAD(r, "%s: %zu frames, more than %d", where,
				     json_array_size(frames), CMP_SIDE_JSON_MAX_FRAMES);
		err = r_alloc(json_array_size(frames), sizeof(*st->frames), &st->frames);
		if (err)
			return err;
		st->nr_frames = json_array_size(frames);
		for (uint32_t j = 0; j < st->nr_frames; j++) {
			int64_t v;

			err = r_int(r, json_array_get(frames, j), where, "frame", 0,
				    (int64_t)side->nr_strings - 1, &v);
			if (err)
				return err;
			st->frames[j] = v;
		}
	}
	return 0;
}

static int r_stage(struct reader *r, const json_t *o, const char *where,
		   const struct cmp_side *side, struct cmp_stage_win *st)
{
	int err;

	if (!json_is_object(o))
		return R_BAD(r, "%s: not an object", where);
	err = r_u32(r, o, where, "name", (int64_t)side->nr_strings - 1, &st->name);
	if (!err)
		err = r_u64(r, o, where, "count", &st->count);
	if (!err)
		err = r_u64(r, o, where, "sum_ns", &st->sum_ns);
	if (!err)
		err = r_u64(r, o, where, "max_ns", &st->max_ns);
	if (!err)
		err = r_u64(r, o, where, "cpu_samples", &st->cpu_samples);
	if (!err)
		err = r_u64(r, o, where, "offcpu_ns", &st->offcpu_ns);
	if (!err)
		err = r_cells(r, o, where, "cells", &st->cells, &st->nr_cells);
	return err;
}

static int r_window_stacks(struct reader *r, const json_t *o, const char *where,
			   const struct cmp_side *side, struct cmp_window *win)
{
	int64_t *pairs;
	uint32_t n = 0;
	int err;

	err = r_pairs(r, o, where, "stacks", CMP_SIDE_JSON_MAX_STACKS, (int64_t)side->nr_stacks - 1,
		      INT64_MAX, &pairs, &n);
	if (!err)
		err = r_alloc(n, sizeof(*win->stacks), &win->stacks);
	for (uint32_t i = 0; !err && i < n; i++)
		win->stacks[i] =
		    (struct cmp_stack_count){.stack = pairs[2 * i], .count = pairs[2 * i + 1]};
	if (!err)
		win->nr_stacks = n;
	free(pairs);
	return err;
}

static int r_window(struct reader *r, const json_t *o, uint32_t i, const struct cmp_side *side,
		    struct cmp_window *win)
{
	static const struct {
		const char *key;
		size_t off;
	} counters[] = {
#define C(field) {#field, offsetof(struct cmp_window, field)}
	    C(cpu_samples), C(offcpu_ns), C(offcpu_samples), C(runq_count), C(runq_sum_ns),
	    C(runq_max_ns), C(gc_count),  C(gc_pause_ns),    C(gc_max_ns),  C(drops),
#undef C
	};
	char where[WHERE_LEN];
	const json_t *stages;
	int err;

	snprintf(where, sizeof(where), "windows[%" PRIu32 "]", i);
	if (!json_is_object(o))
		return R_BAD(r, "%s: not an object", where);
	err = r_i64(r, o, where, "start_unix_ns", &win->start_unix_ns);
	if (!err)
		err = r_i64(r, o, where, "end_unix_ns", &win->end_unix_ns);
	for (size_t k = 0; !err && k < sizeof(counters) / sizeof(counters[0]); k++)
		err = r_u64(r, o, where, counters[k].key,
			    (uint64_t *)((char *)win + counters[k].off));
	if (!err)
		err = r_cells(r, o, where, "runq_cells", &win->runq_cells, &win->nr_runq_cells);
	if (!err)
		err = r_window_stacks(r, o, where, side, win);
	if (!err)
		err = r_table(r, o, where, "stages", CMP_SIDE_JSON_MAX_STAGES, sizeof(*win->stages),
			      &stages, &win->stages, &win->nr_stages);
	if (err)
		return err;
	for (uint32_t j = 0; j < win->nr_stages; j++) {
		snprintf(where, sizeof(where), "windows[%" PRIu32 "].stages[%" PRIu32 "]", i, j);
		err = r_stage(r, json_array_get(stages, j), where, side, &win->stages[j]);
		if (err)
			return err;
	}
	return 0;
}

static int r_side(struct reader *r, const json_t *root, struct cmp_side *side)
{
	const json_t *windows;
	int64_t format;
	int err;

	if (!json_is_object(root))
		return R_BAD(r, "not a JSON object");
	err = r_int(r, json_object_get(root, "format"), "side", "format", 1, INT64_MAX, &format);
	if (err)
		return err;
	if (format > CMP_SIDE_JSON_FORMAT) {
		snprintf(r->why, r->whylen,
			 "format %" PRId64 ", newer than this tailprofd reads (%d)", format,
			 CMP_SIDE_JSON_FORMAT);
		return -EPROTONOSUPPORT;
	}
	err = r_conditions(r, root, &side->cond);
	if (!err)
		err = r_strings(r, root, side);
	if (!err)
		err = r_stacks(r, root, side);
	if (!err)
		err = r_table(r, root, "side", "windows", CMP_SIDE_JSON_MAX_WINDOWS,
			      sizeof(*side->windows), &windows, &side->windows, &side->nr_windows);
	if (err)
		return err;
	for (uint32_t i = 0; i < side->nr_windows; i++) {
		err = r_window(r, json_array_get(windows, i), i, side, &side->windows[i]);
		if (err)
			return err;
	}
	return cmp_side__valid(side, r->why, r->whylen) ? 0 : -EBADMSG;
}

/* What jansson's error code says, in words that quote nothing of the input. */
static const char *json_problem(enum json_error_code code)
{
	switch (code) {
	case json_error_premature_end_of_input:
		return "cut short";
	case json_error_numeric_overflow:
		return "a number too large";
	case json_error_duplicate_key:
		return "a key given twice";
	case json_error_invalid_utf8:
		return "text that is not UTF-8";
	case json_error_null_character:
		return "a NUL character";
	default:
		return "a syntax error";
	}
}

int cmp_side__from_json(const char *text, size_t len, struct cmp_side **out, char *why,
			size_t whylen)
{
	struct reader r = {.why = why, .whylen = whylen};
	struct cmp_side *side;
	json_error_t jerr;
	json_t *root;
	int err;

	*out = NULL;
	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		if (json_error_code(&jerr) == json_error_out_of_memory)
			return -ENOMEM;
		/* jerr.text may quote the input: give the place and the kind, not the bytes */
		return R_BAD(&r, "not JSON: %s at byte %d", json_problem(json_error_code(&jerr)),
			     jerr.position);
	}
	side = calloc(1, sizeof(*side));
	err = side ? r_side(&r, root, side) : -ENOMEM;
	json_decref(root);
	if (err) {
		cmp_side__free(side);
		return err;
	}
	*out = side;
	return 0;
}
