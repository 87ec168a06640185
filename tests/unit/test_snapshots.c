// SPDX-License-Identifier: GPL-2.0-only
/* Unit tests of snapshots and what they are made of: a comparison side's checks (cmp_side.c),
 * its JSON (cmp_side_json.c, with a fuzz loop over cut and mutated texts), capped gzip
 * inflation, and the snapshot store: round trips across a reopen, the listing, removal, bounds
 * that refuse instead of evicting, newer formats, and files cut short or with flipped bytes. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cmocka.h>

#include "cmp_side.h"
#include "cmp_side_json.h"
#include "gzip.h"
#include "log.h"
#include "snapshots.h"
#include "spike_store.h"
#include "test_files.h"
#include "timeparse.h"
#include "tp_hist.h"

#define NR_WINDOWS 6
#define T0	   (1700000000 * (int64_t)NSEC_PER_SEC)
#define WINDOW_NS  (10 * (int64_t)NSEC_PER_SEC)

/* -- a side to save -- */

static struct hist_cell *cells_of(const uint32_t *buckets, const uint32_t *counts, uint32_t n)
{
	struct hist_cell *c = calloc(n, sizeof(*c));

	for (uint32_t i = 0; i < n; i++)
		c[i] = (struct hist_cell){.bucket = buckets[i], .count = counts[i]};
	return c;
}

static uint32_t intern(struct cmp_side *s, const char *str)
{
	int64_t i = cmp_side__intern(s, str);

	assert_true(i >= 0);
	return (uint32_t)i;
}

/* A side of NR_WINDOWS windows with stages (with and without cells, none in some windows),
 * stacks, run-queue cells, and values at the edges of what JSON integers hold. variant changes
 * the host and the counts. */
static struct cmp_side *make_side(int variant)
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

static void assert_cells_equal(const struct hist_cell *a, uint32_t na, const struct hist_cell *b,
			       uint32_t nb)
{
	assert_int_equal(na, nb);
	for (uint32_t i = 0; i < na; i++) {
		assert_int_equal(a[i].bucket, b[i].bucket);
		assert_int_equal(a[i].count, b[i].count);
	}
}

/* Field by field; the conditions' snapshot and saved time are the caller's to check. */
static void assert_sides_equal(const struct cmp_side *a, const struct cmp_side *b)
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

/* -- the fixture: a fresh state directory -- */

struct fx {
	char dir[64]; /* first: test_teardown_dir removes it */
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	snprintf(f->dir, sizeof(f->dir), "/tmp/tp-snapshots-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	*state = f;
	return 0;
}

static struct snapshots *open_snaps(struct fx *f, uint32_t max_count, uint64_t max_bytes)
{
	struct snapshots_opts o = {.max_count = max_count, .max_bytes = max_bytes};
	char err[256] = "";
	struct snapshots *s = snapshots__open(f->dir, &o, err, sizeof(err));

	if (!s)
		fail_msg("open: %s", err);
	return s;
}

/* DIR/snapshots/NAME.snap, in a buffer the next call reuses */
static const char *snap_file(struct fx *f, const char *name)
{
	static char p[256];

	snprintf(p, sizeof(p), "%s/snapshots/%s.snap", f->dir, name);
	return p;
}

/* Loads name, which must fail with want; the message names the snapshot and, when given, says
 * fix. */
static void assert_load_fails(struct snapshots *s, const char *name, int want, const char *fix)
{
	struct cmp_side *side = (struct cmp_side *)1;
	char err[512] = "";

	assert_int_equal(snapshots__load(s, name, &side, err, sizeof(err)), want);
	assert_null(side);
	if (!strstr(err, name) || (fix && !strstr(err, fix)))
		fail_msg("load %s: '%s' (wanted it to name the snapshot and say '%s')", name, err,
			 fix ? fix : "");
}

static void check_load(struct snapshots *s, const char *name, int variant)
{
	struct cmp_side *want = make_side(variant), *got;
	char err[512] = "";

	if (snapshots__load(s, name, &got, err, sizeof(err)))
		fail_msg("load %s: %s", name, err);
	assert_sides_equal(want, got);
	assert_string_equal(got->cond.snapshot, name);
	assert_true(got->cond.saved_unix_ns > T0);
	cmp_side__free(want);
	cmp_side__free(got);
}

static int save_variant(struct snapshots *s, const char *name, int variant)
{
	struct cmp_side *side = make_side(variant);
	int err = snapshots__save(s, name, side);

	/* the caller's side is not changed */
	assert_string_equal(side->cond.snapshot, "");
	assert_int_equal(side->cond.saved_unix_ns, 0);
	cmp_side__free(side);
	return err;
}

/* -- the snapshot store -- */

static void test_round_trip(void **state)
{
	struct fx *f = *state;
	struct snapshots *s = open_snaps(f, 0, 0);
	struct stat sb;
	char p[256];

	assert_int_equal(save_variant(s, "base", 0), 0);
	assert_int_equal(save_variant(s, "after-fix.v2", 1), 0);
	check_load(s, "base", 0);
	check_load(s, "after-fix.v2", 1);
	snapshots__free(s);

	/* after a restart, byte for byte the same sides */
	s = open_snaps(f, 0, 0);
	check_load(s, "base", 0);
	check_load(s, "after-fix.v2", 1);
	snprintf(p, sizeof(p), "%s", snap_file(f, "base"));
	assert_int_equal(stat(p, &sb), 0);
	assert_int_equal(sb.st_mode & 07777, 0600);

	/* a replacement by name */
	assert_int_equal(save_variant(s, "base", 2), 0);
	check_load(s, "base", 2);
	snapshots__free(s);
}

static void test_list_and_remove(void **state)
{
	static const char *const names[] = {"a", "b", "c"};
	struct fx *f = *state;
	struct snapshots *s = open_snaps(f, 0, 0);
	uint64_t total = 0, prev = 0;
	char err[512];
	json_t *l, *arr;

	for (int i = 0; i < 3; i++)
		assert_int_equal(save_variant(s, names[i], i), 0);
	l = snapshots__list(s);
	assert_non_null(l);
	arr = json_object_get(l, "snapshots");
	assert_int_equal(json_array_size(arr), 3);
	for (int i = 0; i < 3; i++) {
		json_t *e = json_array_get(arr, i);
		char host[16], saved[32];
		size_t len;
		uint8_t *file = test_slurp(snap_file(f, names[i]), &len);

		free(file);
		snprintf(host, sizeof(host), "host-%d", i);
		assert_string_equal(json_string_value(json_object_get(e, "name")), names[i]);
		assert_string_equal(json_string_value(json_object_get(e, "host")), host);
		assert_string_equal(json_string_value(json_object_get(e, "kernel")),
				    "6.1.0-18-amd64");
		assert_string_equal(json_string_value(json_object_get(e, "version")), "0.9.0");
		assert_int_equal(json_integer_value(json_object_get(e, "windows")), NR_WINDOWS);
		assert_int_equal(json_integer_value(json_object_get(e, "from_unix_ns")), T0);
		assert_int_equal(json_integer_value(json_object_get(e, "to_unix_ns")),
				 T0 + NR_WINDOWS * WINDOW_NS);
		assert_int_equal(json_integer_value(json_object_get(e, "frequency_hz")), 99);
		assert_int_equal(json_integer_value(json_object_get(e, "window_ns")), WINDOW_NS);
		assert_int_equal(json_integer_value(json_object_get(e, "bytes")), len);
		/* oldest saved first */
		assert_true((uint64_t)json_integer_value(json_object_get(e, "saved_unix_ns")) >=
			    prev);
		prev = json_integer_value(json_object_get(e, "saved_unix_ns"));
		tp_format_rfc3339(prev, saved, sizeof(saved));
		assert_string_equal(json_string_value(json_object_get(e, "saved")), saved);
		total += len;
	}
	assert_int_equal(json_integer_value(json_object_get(l, "max_count")),
			 SNAPSHOTS_DEFAULT_MAX_COUNT);
	assert_int_equal(json_integer_value(json_object_get(l, "max_bytes")),
			 SNAPSHOTS_DEFAULT_MAX_BYTES);
	assert_int_equal(json_integer_value(json_object_get(l, "bytes")), total);
	json_decref(l);

	assert_int_equal(snapshots__remove(s, "b"), 0);
	assert_load_fails(s, "b", -ENOENT, "tailprof snapshot list");
	assert_int_equal(snapshots__remove(s, "b"), -ENOENT);
	snapshots__describe(s, "b", -ENOENT, err, sizeof(err));
	assert_non_null(strstr(err, "no snapshot b"));
	assert_int_equal(snapshots__remove(s, "../b"), -EINVAL);
	assert_load_fails(s, "../b", -EINVAL, "not a snapshot name");
	assert_load_fails(s, "..", -EINVAL, "not a snapshot name");
	snapshots__describe(s, "caf\xc3\xa9\xff\n", -EINVAL, err, sizeof(err));
	assert_string_equal(err, "'caf\xc3\xa9?"
				 "?' is not a snapshot name: give 1 to 64 letters, "
				 "digits, '.', '_' or '-'");
	assert_int_equal(save_variant(s, "a/b", 0), -EINVAL);
	assert_int_equal(save_variant(s, "", 0), -EINVAL);
	snapshots__free(s);

	s = open_snaps(f, 0, 0);
	l = snapshots__list(s);
	arr = json_object_get(l, "snapshots");
	assert_int_equal(json_array_size(arr), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(arr, 1), "name")),
			    "c");
	json_decref(l);
	check_load(s, "c", 2);
	snapshots__free(s);
}

static void test_bounds(void **state)
{
	struct fx *f = *state;
	struct snapshots *s = open_snaps(f, 2, 0);
	char err[512];
	json_t *l;
	uint64_t bytes;

	assert_int_equal(save_variant(s, "a", 0), 0);
	assert_int_equal(save_variant(s, "b", 1), 0);
	/* past max_count: refused, nothing written, the others kept */
	assert_int_equal(save_variant(s, "c", 2), -EMLINK);
	assert_load_fails(s, "c", -ENOENT, NULL);
	snapshots__describe(s, "c", -EMLINK, err, sizeof(err));
	assert_non_null(strstr(err, "max_count"));
	assert_non_null(strstr(err, "snapshot c"));
	check_load(s, "a", 0);
	check_load(s, "b", 1);
	/* a replacement is counted net */
	assert_int_equal(save_variant(s, "a", 1), 0);
	check_load(s, "a", 1);
	l = snapshots__list(s);
	bytes = json_integer_value(json_object_get(l, "bytes"));
	json_decref(l);
	snapshots__free(s);

	/* past max_bytes: the same */
	s = open_snaps(f, 100, bytes + 64);
	assert_int_equal(save_variant(s, "c", 2), -EFBIG);
	assert_load_fails(s, "c", -ENOENT, NULL);
	snapshots__describe(s, "c", -EFBIG, err, sizeof(err));
	assert_non_null(strstr(err, "max_bytes"));
	assert_int_equal(save_variant(s, "b", 1), 0); /* the same size again */
	check_load(s, "a", 1);
	check_load(s, "b", 1);
	snapshots__free(s);

	/* bounds lowered below what is stored: everything kept, saves refused */
	s = open_snaps(f, 1, 0);
	check_load(s, "a", 1);
	check_load(s, "b", 1);
	assert_int_equal(save_variant(s, "c", 2), -EMLINK);
	assert_int_equal(snapshots__remove(s, "a"), 0);
	assert_int_equal(snapshots__remove(s, "b"), 0);
	assert_int_equal(save_variant(s, "c", 2), 0);
	snapshots__free(s);
}

/* Writes an entry the way snapshots__save would, but with any metadata and blob. */
static void put_raw(struct fx *f, const char *name, const char *meta, const uint8_t *blob,
		    size_t len)
{
	struct spike_store_opts o = {.dir = f->dir,
				     .subdir = "snapshots",
				     .suffix = ".snap",
				     .what = "snapshot",
				     .max_spikes = 100,
				     .no_evict = true};
	char err[256];
	struct spike_store *st = spike_store__open(&o, err, sizeof(err));

	assert_non_null(st);
	assert_int_equal(spike_store__save(
			     st, name, 1, meta ? meta : "{\"name\": \"x\"}",
			     &(struct spike_blob){.name = SNAPSHOTS_BLOB, .data = blob, .len = len},
			     1),
			 0);
	spike_store__free(st);
}

static void put_raw_json(struct fx *f, const char *name, const char *json)
{
	uint8_t *gz;
	size_t len;

	assert_int_equal(gzip__compress((const uint8_t *)json, strlen(json), 6, &gz, &len), 0);
	put_raw(f, name, NULL, gz, len);
	free(gz);
}

static void test_newer_format(void **state)
{
	struct fx *f = *state;
	struct snapshots *s;
	char *json, why[256], p[256];
	struct cmp_side *side = make_side(0);
	uint8_t *file;
	size_t len;
	json_t *l;

	/* a side of format 2 in a file this daemon reads */
	assert_int_equal(cmp_side__to_json(side, &json, why, sizeof(why)), 0);
	assert_non_null(strstr(json, "\"format\":1,"));
	memcpy(strstr(json, "\"format\":1,"), "\"format\":2,", 11);
	put_raw_json(f, "next", json);
	free(json);
	cmp_side__free(side);
	s = open_snaps(f, 0, 0);
	assert_load_fails(s, "next", -EPROTONOSUPPORT, "format 2, newer");
	assert_load_fails(s, "next", -EPROTONOSUPPORT, "tailprof snapshot rm next");
	assert_int_equal(snapshots__remove(s, "next"), 0);

	/* a file of a newer format version: kept, not listed, not replaced, not removed */
	assert_int_equal(save_variant(s, "v2", 0), 0);
	snapshots__free(s);
	file = test_slurp(snap_file(f, "v2"), &len);
	file[8] = 2; /* the version, and the prelude's CRC made right again */
	{
		uint32_t c = crc32(0, file, 12);

		for (int i = 0; i < 4; i++)
			file[12 + i] = c >> (8 * i);
	}
	test_spew(snap_file(f, "v2"), file, len);
	free(file);
	log_set_level(LOG_ERROR);
	s = open_snaps(f, 0, 0);
	log_set_level(LOG_INFO);
	assert_load_fails(s, "v2", -EPROTONOSUPPORT, "newer tailprofd");
	log_set_level(LOG_ERROR);
	assert_int_equal(save_variant(s, "v2", 0), -EEXIST);
	log_set_level(LOG_INFO);
	assert_int_equal(snapshots__remove(s, "v2"), -EPERM);
	snapshots__describe(s, "v2", -EPERM, why, sizeof(why));
	snprintf(p, sizeof(p), "%s", snap_file(f, "v2"));
	assert_non_null(strstr(why, p));
	l = snapshots__list(s);
	assert_int_equal(json_array_size(json_object_get(l, "snapshots")), 0);
	json_decref(l);
	snapshots__free(s);
}

/* Every reopen and load of a damaged file: an error naming it, the listing still whole. */
static void check_damaged(struct fx *f, const char *fix)
{
	struct snapshots *s;
	json_t *l;
	size_t n;

	log_set_level(LOG_ERROR);
	s = open_snaps(f, 0, 0);
	assert_load_fails(s, "bad", -EBADMSG, fix);
	/* the listing still works; "bad" is in it when only its blob is damaged (the store checks
	 * a blob when it is read), so that it can be seen and removed */
	l = snapshots__list(s);
	assert_non_null(l);
	n = json_array_size(json_object_get(l, "snapshots"));
	assert_true(n == 1 || n == 2);
	assert_string_equal(json_string_value(json_object_get(
				json_array_get(json_object_get(l, "snapshots"), n - 1), "name")),
			    "good");
	json_decref(l);
	check_load(s, "good", 1);
	snapshots__free(s);
	log_set_level(LOG_INFO);
}

static void test_damaged_files(void **state)
{
	struct fx *f = *state;
	struct snapshots *s = open_snaps(f, 0, 0);
	uint8_t *orig, *buf;
	size_t len;

	assert_int_equal(save_variant(s, "bad", 0), 0);
	assert_int_equal(save_variant(s, "good", 1), 0);
	snapshots__free(s);
	orig = test_slurp(snap_file(f, "bad"), &len);
	buf = malloc(len);

	/* cut short: in the prelude, header, table, metadata, blob, its last byte */
	for (size_t cut = 0; cut < len; cut += cut < 200 ? 37 : len / 7) {
		test_spew(snap_file(f, "bad"), orig, cut);
		check_damaged(f, "tailprof snapshot rm bad");
	}
	test_spew(snap_file(f, "bad"), orig, len - 1);
	check_damaged(f, "tailprof snapshot rm bad");

	/* one byte flipped, anywhere */
	for (size_t off = 0; off < len; off += 1 + len / 23) {
		memcpy(buf, orig, len);
		buf[off] ^= 0x41;
		test_spew(snap_file(f, "bad"), buf, len);
		check_damaged(f, "tailprof snapshot rm bad");
	}

	/* cut while the store has it listed: found at the load */
	test_spew(snap_file(f, "bad"), orig, len);
	s = open_snaps(f, 0, 0);
	check_load(s, "bad", 0);
	test_spew(snap_file(f, "bad"), orig, len - 100);
	log_set_level(LOG_ERROR);
	assert_load_fails(s, "bad", -EBADMSG, "tailprof snapshot rm bad");
	assert_load_fails(s, "bad", -EBADMSG, "tailprof snapshot rm bad");
	log_set_level(LOG_INFO);
	assert_int_equal(snapshots__remove(s, "bad"), 0);
	snapshots__free(s);
	free(buf);
	free(orig);
}

/* Files whole to the store whose blob is damaged inside its checksum: gzip and JSON problems. */
static void test_damaged_blobs(void **state)
{
	static const struct {
		const char *json, *said;
	} texts[] = {
	    {"not json", "not JSON"},	       {"{\"format\": 1, \"conditions\": ", "cut short"},
	    {"[1, 2]", "not a JSON object"},   {"{\"conditions\": {}}", "format"},
	    {"{\"format\": \"1\"}", "format"}, {"{\"format\": 0}", "format"},
	    {"{\"format\": 1}", "conditions"},
	};
	struct fx *f = *state;
	struct snapshots *s = open_snaps(f, 0, 0);
	struct cmp_side *side = make_side(0);
	char *json, why[256];
	uint8_t *gz, *junk;
	size_t gz_len;

	assert_int_equal(save_variant(s, "good", 1), 0);
	snapshots__free(s);
	assert_int_equal(cmp_side__to_json(side, &json, why, sizeof(why)), 0);
	assert_int_equal(gzip__compress((const uint8_t *)json, strlen(json), 6, &gz, &gz_len), 0);
	junk = malloc(gz_len + 8);

	/* the gzip stream cut short, with bytes after it, not gzip at all, empty */
	for (size_t cut = 0; cut < gz_len; cut += 1 + gz_len / 9) {
		put_raw(f, "bad", NULL, gz, cut);
		check_damaged(f, "tailprof snapshot rm bad");
	}
	memcpy(junk, gz, gz_len);
	memcpy(junk + gz_len, "trailing", 8);
	put_raw(f, "bad", NULL, junk, gz_len + 8);
	check_damaged(f, "after the gzip data");
	put_raw(f, "bad", NULL, (const uint8_t *)"hello, world", 12);
	check_damaged(f, "corrupt gzip data");
	/* a flipped byte inside the deflate stream: zlib's own CRC-32 of the data says so */
	memcpy(junk, gz, gz_len);
	junk[gz_len / 2] ^= 0x10;
	put_raw(f, "bad", NULL, junk, gz_len);
	check_damaged(f, "corrupt");

	/* JSON that is not a side */
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		put_raw_json(f, "bad", texts[i].json);
		check_damaged(f, texts[i].said);
	}
	/* a side that is JSON-wise right but inconsistent */
	side->windows[2].end_unix_ns = side->windows[2].start_unix_ns;
	free(json);
	assert_int_equal(cmp_side__to_json(side, &json, why, sizeof(why)), -EINVAL);
	side->windows[2].end_unix_ns = side->windows[2].start_unix_ns + 1;
	assert_int_equal(cmp_side__to_json(side, &json, why, sizeof(why)), 0);
	{
		static const char end[] = "\"end_unix_ns\":1700000020000000001";
		char *p = strstr(json, end);

		assert_non_null(p);
		p[sizeof(end) - 2] = '0'; /* end == start, written behind the writer's back */
	}
	put_raw_json(f, "bad", json);
	check_damaged(f, "window 2: end");

	/* metadata that is not an object: not listed, still loadable */
	put_raw(f, "odd", "[]", gz, gz_len);
	s = open_snaps(f, 0, 0);
	{
		json_t *l = snapshots__list(s);

		assert_int_equal(json_array_size(json_object_get(l, "snapshots")), 2);
		json_decref(l);
	}
	{
		struct cmp_side *got, *want = make_side(0);

		assert_int_equal(snapshots__load(s, "odd", &got, why, sizeof(why)), 0);
		assert_sides_equal(want, got);
		cmp_side__free(want);
		assert_string_equal(got->cond.snapshot, "odd");
		cmp_side__free(got);
	}
	snapshots__free(s);
	free(junk);
	free(gz);
	free(json);
	cmp_side__free(side);
}

/* -- a side's checks, one case per rule -- */

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

static const struct bad_case bad_cases[] = {
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

static void test_invalid_sides(void **state)
{
	struct fx *f = *state;
	struct snapshots *s = open_snaps(f, 0, 0);
	struct cmp_side *side = make_side(0);
	char why[256] = "";
	json_t *l;

	assert_true(cmp_side__valid(side, why, sizeof(why)));
	cmp_side__free(side);
	assert_false(cmp_side__valid(NULL, why, sizeof(why)));
	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		char *json = NULL;

		side = make_side(0);
		bad_cases[i].spoil(side);
		why[0] = '\0';
		assert_false(cmp_side__valid(side, why, sizeof(why)));
		if (!strstr(why, bad_cases[i].said))
			fail_msg("case %zu: '%s', not '%s'", i, why, bad_cases[i].said);
		/* neither written as JSON nor saved */
		assert_int_equal(cmp_side__to_json(side, &json, why, sizeof(why)), -EINVAL);
		assert_null(json);
		log_set_level(LOG_ERROR);
		assert_int_equal(snapshots__save(s, "spoiled", side), -EINVAL);
		log_set_level(LOG_INFO);
		cmp_side__free(side);
	}
	/* and a counter the JSON cannot hold */
	side = make_side(0);
	side->windows[0].cpu_samples = UINT64_MAX;
	log_set_level(LOG_ERROR);
	assert_int_equal(snapshots__save(s, "spoiled", side), -EINVAL);
	log_set_level(LOG_INFO);
	cmp_side__free(side);
	l = snapshots__list(s);
	assert_int_equal(json_array_size(json_object_get(l, "snapshots")), 0);
	json_decref(l);
	snapshots__free(s);
}

/* -- the JSON -- */

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

/* -- gzip -- */

static void test_gzip(void **state)
{
	static const char text[] = "snapshots are sides written to disk";
	size_t zlen, blen, len;
	uint8_t *z, *bomb, *zeros = calloc(1, 8 << 20), *out;
	char why[128];

	(void)state;
	assert_int_equal(gzip__compress((const uint8_t *)text, sizeof(text) - 1, 6, &z, &zlen), 0);
	assert_int_equal(gzip__inflate(z, zlen, 1 << 20, &out, &len, why, sizeof(why)), 0);
	assert_int_equal(len, sizeof(text) - 1);
	assert_string_equal((char *)out, text); /* NUL-terminated */
	free(out);
	/* exactly the cap is allowed, one byte less of it is not */
	assert_int_equal(gzip__inflate(z, zlen, sizeof(text) - 1, &out, &len, why, sizeof(why)), 0);
	free(out);
	assert_int_equal(gzip__inflate(z, zlen, sizeof(text) - 2, &out, &len, why, sizeof(why)),
			 -EFBIG);
	assert_null(out);
	for (size_t cut = 0; cut < zlen; cut++)
		assert_int_equal(gzip__inflate(z, cut, 1 << 20, &out, &len, why, sizeof(why)),
				 -EBADMSG);
	free(z);

	/* 8 MiB of zeros in a few kB, and a trailer that lies about the size: refused at the cap */
	assert_int_equal(gzip__compress(zeros, 8 << 20, 9, &bomb, &blen), 0);
	assert_true(blen < 64 << 10);
	bomb[blen - 4] = 10;
	bomb[blen - 3] = bomb[blen - 2] = bomb[blen - 1] = 0;
	assert_int_equal(gzip__inflate(bomb, blen, 1 << 20, &out, &len, why, sizeof(why)), -EFBIG);
	assert_non_null(strstr(why, "more than 1048576 bytes"));
	free(bomb);
	free(zeros);
}

/* -- options -- */

static void test_opts(void **state)
{
	struct snapshots_opts o = {0};
	char msg[256];

	(void)state;
	assert_int_equal(snapshots_opts__set(&o, "max_count", "10000", msg, sizeof(msg)), 0);
	assert_int_equal(o.max_count, 10000);
	assert_int_equal(snapshots_opts__set(&o, "max_count", "10001", msg, sizeof(msg)), -EINVAL);
	assert_non_null(strstr(msg, "from 1 to 10000"));
	assert_int_equal(snapshots_opts__set(&o, "max_count", "0", msg, sizeof(msg)), -EINVAL);
	assert_int_equal(snapshots_opts__set(&o, "max_bytes", "1G", msg, sizeof(msg)), 0);
	assert_int_equal(o.max_bytes, 1ull << 30);
	assert_int_equal(snapshots_opts__set(&o, "max_bytes", "1048576", msg, sizeof(msg)), 0);
	assert_int_equal(o.max_bytes, 1 << 20);
	assert_int_equal(snapshots_opts__set(&o, "max_bytes", "512K", msg, sizeof(msg)), -EINVAL);
	assert_non_null(strstr(msg, "'512K': give a size from 1M to 1024G"));
	assert_int_equal(snapshots_opts__set(&o, "max_bytes", "1T", msg, sizeof(msg)), -EINVAL);
	assert_int_equal(snapshots_opts__set(&o, "max_files", "1", msg, sizeof(msg)), -ENOENT);
	assert_non_null(strstr(msg, "allowed: max_count, max_bytes"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_round_trip, setup, test_teardown_dir),
	    cmocka_unit_test_setup_teardown(test_list_and_remove, setup, test_teardown_dir),
	    cmocka_unit_test_setup_teardown(test_bounds, setup, test_teardown_dir),
	    cmocka_unit_test_setup_teardown(test_newer_format, setup, test_teardown_dir),
	    cmocka_unit_test_setup_teardown(test_damaged_files, setup, test_teardown_dir),
	    cmocka_unit_test_setup_teardown(test_damaged_blobs, setup, test_teardown_dir),
	    cmocka_unit_test_setup_teardown(test_invalid_sides, setup, test_teardown_dir),
	    cmocka_unit_test(test_json),
	    cmocka_unit_test(test_json_caps),
	    cmocka_unit_test(test_json_fuzz),
	    cmocka_unit_test(test_gzip),
	    cmocka_unit_test(test_opts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
