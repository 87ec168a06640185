// SPDX-License-Identifier: GPL-2.0-only
/* Unit tests of the snapshot store (snapshots.c): round trips across a reopen, the listing,
 * removal, bounds that refuse instead of evicting, newer formats, files cut short or with flipped
 * bytes, blobs whose gzip or JSON is damaged behind right checksums, sides refused, options. The
 * side's own checks and JSON: test_cmp_side.c; gzip: test_gzip.c. */
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
#include "cmp_side_sample.h"
#include "gzip.h"
#include "log.h"
#include "snapshots.h"
#include "spike_store.h"
#include "test_files.h"
#include "timeparse.h"
#include "tp_hist.h"

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
	snapshots__describe_op(s, SNAPSHOTS_ANY, "b", -ENOENT, err, sizeof(err));
	assert_non_null(strstr(err, "no snapshot b"));
	assert_int_equal(snapshots__remove(s, "../b"), -EINVAL);
	assert_load_fails(s, "../b", -EINVAL, "not a snapshot name");
	assert_load_fails(s, "..", -EINVAL, "not a snapshot name");
	snapshots__describe_op(s, SNAPSHOTS_ANY, "caf\xc3\xa9\xff\n", -EINVAL, err, sizeof(err));
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
	struct snapshots_counts c;
	char err[512];
	json_t *l;
	uint64_t bytes;

	assert_int_equal(save_variant(s, "a", 0), 0);
	assert_int_equal(save_variant(s, "b", 1), 0);
	/* past max_count: refused, nothing written, the others kept */
	assert_int_equal(save_variant(s, "c", 2), -EMLINK);
	assert_load_fails(s, "c", -ENOENT, NULL);
	snapshots__counts(s, &c);
	assert_int_equal(c.count, 2);
	assert_int_equal(c.max_count, 2);
	assert_int_equal(c.max_bytes, SNAPSHOTS_DEFAULT_MAX_BYTES);
	assert_int_equal(c.refused_full, 1);
	assert_true(c.bytes > 0);
	snapshots__describe_op(s, SNAPSHOTS_ANY, "c", -EMLINK, err, sizeof(err));
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
	snapshots__counts(s, &c);
	assert_int_equal(c.refused_full, 1);
	assert_int_equal(c.max_bytes, bytes + 64);
	snapshots__describe_op(s, SNAPSHOTS_ANY, "c", -EFBIG, err, sizeof(err));
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
	assert_int_equal(snapshots__remove(s, "v2"), -EPROTONOSUPPORT);
	snapshots__describe_op(s, SNAPSHOTS_REMOVE, "v2", -EPROTONOSUPPORT, why, sizeof(why));
	snprintf(p, sizeof(p), "%s", snap_file(f, "v2"));
	assert_non_null(strstr(why, p));
	assert_non_null(strstr(why, "not removed"));
	assert_non_null(strstr(why, "newer tailprofd"));
	snapshots__describe_op(s, SNAPSHOTS_SAVE, "v2", -EEXIST, why, sizeof(why));
	assert_non_null(strstr(why, "not saved"));
	assert_non_null(strstr(why, "newer tailprofd"));
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
	assert_load_fails(s, "bad", -EBADMSG, "cut short");
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
	    {"not json", "not JSON"},
	    {"{\"format\": 1, \"conditions\": ", "cut short"},
	    {"[1, 2]", "not a JSON object"},
	    {"{\"conditions\": {}}", "format"},
	    {"{\"format\": \"1\"}", "format"},
	    {"{\"format\": 0}", "format"},
	    {"{\"format\": 1}", "conditions"},
	    /* jansson's kinds of error, said in words (a re-packed file's edits) */
	    {"{\"format\": 99999999999999999999}", "a number too large at byte"},
	    {"{\"format\": 1, \"format\": 1}", "a key given twice at byte"},
	    {"{\"format\": \"\xff\"}", "not UTF-8"},
	    {"{\"format\" 1}", "a syntax error at byte"},
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

/* Writes a copy of the file of snapshot from as to, with byte off (when >= 0) flipped. */
static void copy_flipped(struct fx *f, const char *from, const char *to, long off)
{
	size_t len;
	uint8_t *buf = test_slurp(snap_file(f, from), &len);
	char p[256];

	if (off >= 0)
		buf[off] ^= 0x41;
	snprintf(p, sizeof(p), "%s", snap_file(f, to));
	test_spew(p, buf, len);
	free(buf);
}

/* Corrupt files are never deleted by the store (at open or to make room): reported once with
 * the fix, counted, loaded as corrupt, removed when asked; a symlink is not even removed. */
static void test_corrupt_kept(void **state)
{
	static const char *const bad[] = {"f10", "f11", "f12", "f13", "big"};
	struct fx *f = *state;
	struct snapshots *s = open_snaps(f, 0, 0);
	char err[512], p[256], target[256], line[128];
	const char *log;
	json_int_t bytes;
	json_t *l;

	assert_int_equal(save_variant(s, "a", 0), 0);
	assert_int_equal(save_variant(s, "b", 1), 0);
	snapshots__free(s);
	copy_flipped(f, "a", "f10", 9);	 /* the prelude's checksum */
	copy_flipped(f, "a", "f11", 40); /* the header's checksum */
	copy_flipped(f, "a", "f12", 0);	 /* the magic */
	copy_flipped(f, "a", "f13", -1); /* its header names a */
	snprintf(p, sizeof(p), "%s", snap_file(f, "big"));
	{
		int fd = open(p, O_WRONLY | O_CREAT, 0600);

		assert_true(fd >= 0);
		assert_int_equal(ftruncate(fd, 300ll << 20), 0); /* sparse, past max_bytes */
		close(fd);
	}
	snprintf(target, sizeof(target), "%s", snap_file(f, "a"));
	snprintf(p, sizeof(p), "%s", snap_file(f, "ln"));
	assert_int_equal(symlink(target, p), 0);

	test_capture_start();
	s = open_snaps(f, 0, 0);
	log = test_capture_end();
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(line, sizeof(line), "/snapshots/%s.snap", bad[i]);
		if (test_count_of(log, line) != 1)
			fail_msg("%s: not reported once: %s", bad[i], log);
		snprintf(line, sizeof(line), "remove it with tailprof snapshot rm %s", bad[i]);
		if (!strstr(log, line))
			fail_msg("%s: no fix given: %s", bad[i], log);
		assert_true(access(snap_file(f, bad[i]), F_OK) == 0);
		assert_load_fails(s, bad[i], -EBADMSG, line + strlen("remove it with "));
		/* and the file, with what is wrong with it, not only "the log says how" */
		snprintf(line, sizeof(line), "/snapshots/%s.snap: ", bad[i]);
		assert_load_fails(s, bad[i], -EBADMSG, line);
	}
	assert_int_equal(test_count_of(log, "/snapshots/ln.snap"), 1);
	assert_null(strstr(log, "removed"));
	assert_load_fails(s, "ln", -EBADMSG, "symlink");
	assert_load_fails(s, "big", -EBADMSG, "big.snap: bad magic");
	check_load(s, "a", 0);
	check_load(s, "b", 1);

	/* counted: the listing's bytes, and a save that needs the room is refused */
	l = snapshots__list(s);
	assert_int_equal(json_array_size(json_object_get(l, "snapshots")), 2);
	assert_true(json_integer_value(json_object_get(l, "bytes")) > (300ll << 20));
	json_decref(l);
	assert_int_equal(save_variant(s, "c", 2), -EFBIG);
	snapshots__describe_op(s, SNAPSHOTS_SAVE, "c", -EFBIG, err, sizeof(err));
	assert_non_null(strstr(err, "max_bytes"));
	/* not overwritten by a save either: the link and a file without the magic */
	assert_int_equal(save_variant(s, "ln", 2), -EEXIST);
	snapshots__describe_op(s, SNAPSHOTS_SAVE, "ln", -EEXIST, err, sizeof(err));
	assert_non_null(strstr(err, "not a snapshot file"));
	assert_null(strstr(err, "newer"));
	assert_int_equal(save_variant(s, "f12", 2), -EEXIST);

	/* removed when asked, all but the symlink */
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(snapshots__remove(s, bad[i]), 0);
		assert_false(access(snap_file(f, bad[i]), F_OK) == 0);
	}
	assert_int_equal(snapshots__remove(s, "ln"), -ELOOP);
	snapshots__describe_op(s, SNAPSHOTS_REMOVE, "ln", -ELOOP, err, sizeof(err));
	assert_non_null(strstr(err, p));
	assert_non_null(strstr(err, "symlink"));
	assert_int_equal(save_variant(s, "c", 2), 0);

	/* a corrupt file put there while the daemon runs: seen, reported, counted, removable */
	l = snapshots__list(s);
	bytes = json_integer_value(json_object_get(l, "bytes"));
	json_decref(l);
	copy_flipped(f, "a", "f14", 9);
	assert_load_fails(s, "f14", -EBADMSG, "tailprof snapshot rm f14");
	l = snapshots__list(s);
	{
		struct stat sb;

		assert_int_equal(stat(snap_file(f, "f14"), &sb), 0);
		assert_int_equal(json_integer_value(json_object_get(l, "bytes")),
				 bytes + sb.st_size);
	}
	json_decref(l);
	assert_int_equal(snapshots__remove(s, "f14"), 0);
	/* a directory put where a snapshot was: named, and the fix is by hand (never removed) */
	assert_int_equal(unlink(snap_file(f, "c")), 0);
	assert_int_equal(mkdir(snap_file(f, "c"), 0700), 0);
	log_set_level(LOG_ERROR);
	assert_load_fails(s, "c", -EBADMSG, "delete it by hand");
	log_set_level(LOG_INFO);
	assert_int_equal(snapshots__remove(s, "c"), -ELOOP);
	assert_int_equal(rmdir(snap_file(f, "c")), 0);
	snapshots__free(s);
}

/* The messages of refusals: the bound named with its value, the disk's errors as such. */
static void test_describe(void **state)
{
	struct fx *f = *state;
	struct snapshots *s = open_snaps(f, 4, 0);
	char err[512], p[256];

	for (int i = 0; i < 4; i++) {
		char name[8];

		snprintf(name, sizeof(name), "s%d", i);
		assert_int_equal(save_variant(s, name, i % 3), 0);
	}
	snapshots__free(s);
	s = open_snaps(f, 2, 0);
	assert_int_equal(save_variant(s, "x", 0), -EMLINK);
	snapshots__describe_op(s, SNAPSHOTS_SAVE, "x", -EMLINK, err, sizeof(err));
	assert_non_null(strstr(err, "snapshot x not saved: 2 snapshots are the most [snapshots] "
				    "max_count (--snapshot-max-count) allows; 4 are stored"));

	snprintf(p, sizeof(p), "%s/snapshots", f->dir);
	snapshots__describe_op(s, SNAPSHOTS_SAVE, "ro", -EPERM, err, sizeof(err));
	if (!strstr(err, "cannot write snapshot ro in ") || !strstr(err, p) ||
	    !strstr(err, "Operation not permitted") || strstr(err, "newer"))
		fail_msg("save, EPERM: %s", err);
	snapshots__describe_op(s, SNAPSHOTS_REMOVE, "ro", -EPERM, err, sizeof(err));
	if (!strstr(err, "cannot remove snapshot ro") || !strstr(err, "Operation not permitted") ||
	    strstr(err, "newer"))
		fail_msg("remove, EPERM: %s", err);
	snapshots__describe_op(s, SNAPSHOTS_REMOVE, "ro", -EACCES, err, sizeof(err));
	assert_non_null(strstr(err, "Permission denied"));
	snapshots__describe_op(s, SNAPSHOTS_ANY, "ro", -EPERM, err, sizeof(err));
	assert_null(strstr(err, "newer"));
	assert_non_null(strstr(err, "Operation not permitted"));
	snapshots__free(s);
}

/* Sides a reader could not trust are refused, nothing written. */
static void test_invalid_sides(void **state)
{
	struct fx *f = *state;
	struct snapshots *s = open_snaps(f, 0, 0);
	struct cmp_side *side = make_side(0);
	char err[256];
	json_t *l;

	side->windows[3].end_unix_ns = side->windows[3].start_unix_ns;
	log_set_level(LOG_ERROR);
	assert_int_equal(snapshots__save(s, "spoiled", side), -EINVAL);
	log_set_level(LOG_INFO);
	snapshots__describe_op(s, SNAPSHOTS_ANY, "spoiled", -EINVAL, err, sizeof(err));
	assert_non_null(strstr(err, "not consistent"));
	cmp_side__free(side);
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
	assert_false(access(snap_file(f, "spoiled"), F_OK) == 0);
	snapshots__free(s);
}

/* -- options -- */

/* The save rate: a bucket of SNAPSHOTS_SAVE_BURST refilled at save_rate a minute. */
static void test_save_rate(void **state)
{
	struct fx *f = *state;
	struct snapshots_opts o = {.save_rate = 2};
	struct snapshots_counts c;
	char err[256] = "";
	struct snapshots *s = snapshots__open(f->dir, &o, err, sizeof(err));
	uint64_t t = 1000 * NSEC_PER_SEC;

	assert_non_null(s);
	for (int i = 0; i < SNAPSHOTS_SAVE_BURST; i++)
		assert_int_equal(snapshots__take_save(s, t), 0);
	/* empty: the next token in 30 s (two a minute) */
	assert_int_equal(snapshots__take_save(s, t), 30);
	assert_int_equal(snapshots__take_save(s, t + 29 * NSEC_PER_SEC), 1);
	assert_int_equal(snapshots__take_save(s, t + 30 * NSEC_PER_SEC), 0);
	assert_int_equal(snapshots__take_save(s, t + 30 * NSEC_PER_SEC), 30);
	snapshots__counts(s, &c);
	assert_int_equal(c.refused_rate, 3);
	assert_int_equal(c.refused_full, 0);
	snapshots__free(s);
}

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
	assert_non_null(strstr(msg, "allowed: max_count, max_bytes, save_rate"));
	assert_int_equal(snapshots_opts__set(&o, "save_rate", "6000", msg, sizeof(msg)), 0);
	assert_int_equal(o.save_rate, 6000);
	assert_int_equal(snapshots_opts__set(&o, "save_rate", "0", msg, sizeof(msg)), -EINVAL);
	assert_non_null(strstr(msg, "'0': give saves a minute, an integer from 1 to 6000"));
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
	    cmocka_unit_test_setup_teardown(test_corrupt_kept, setup, test_teardown_dir),
	    cmocka_unit_test_setup_teardown(test_describe, setup, test_teardown_dir),
	    cmocka_unit_test_setup_teardown(test_save_rate, setup, test_teardown_dir),
	    cmocka_unit_test(test_opts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
