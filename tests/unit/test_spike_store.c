// SPDX-License-Identifier: GPL-2.0-only
/* Unit tests of the on-disk spike store: round trips across a reopen, order, eviction by count
 * and bytes, files cut short or with flipped bits, files of a newer format, ids that would escape
 * the directory, temp files a crash left, files that vanish or are cut while read, and a fuzz
 * loop over one file. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
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

#include "log.h"
#include "spike_file.h"
#include "spike_store.h"
#include "test_files.h"

#define NR_BLOBS 6
static const char *const blob_names[NR_BLOBS] = {
    "cpu", "cpu.baseline", "offcpu", "offcpu.baseline", "wall", "wall.baseline"};

/* The test's state: a fresh directory, removed with what it holds. */
struct fx {
	char dir[64]; /* first: test_teardown_dir removes it */
	char spikes[96];
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	snprintf(f->dir, sizeof(f->dir), "/tmp/tp-spike-store-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	/* the store creates DIR itself: start from a missing one */
	assert_int_equal(rmdir(f->dir), 0);
	snprintf(f->spikes, sizeof(f->spikes), "%s/spikes", f->dir);
	*state = f;
	return 0;
}

static struct spike_store *open_store(struct fx *f, uint64_t max_bytes, uint32_t max_spikes)
{
	struct spike_store_opts o = {
	    .dir = f->dir, .max_bytes = max_bytes, .max_spikes = max_spikes};
	char err[256] = "";
	struct spike_store *s = spike_store__open(&o, err, sizeof(err));

	if (!s)
		fail_msg("open: %s", err);
	return s;
}

static void path_of(struct fx *f, const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", f->spikes, name);
}

static bool exists(struct fx *f, const char *name)
{
	char p[256];

	path_of(f, name, p, sizeof(p));
	return access(p, F_OK) == 0;
}

/* Blob i of spike k: len bytes of a pattern; blob 2 is empty. */
static size_t blob_len(int k, int i)
{
	return i == 2 ? 0 : 100 + 37 * i + 11 * k;
}

static uint8_t *blob_data(int k, int i)
{
	size_t len = blob_len(k, i);
	uint8_t *p = malloc(len + 1);

	for (size_t j = 0; j < len; j++)
		p[j] = (uint8_t)(j * 31 + k * 7 + i);
	return p;
}

static char *json_of(int k)
{
	char *j;

	assert_true(asprintf(&j, "{\"id\": \"s%d\", \"stage\": \"compute\", \"p95_ns\": %d}", k,
			     1000 * k) > 0);
	return j;
}

/* Saves spike k as "s<k>" starting at start, with the six blobs. */
static int save_k(struct spike_store *s, int k, int64_t start)
{
	struct spike_blob b[NR_BLOBS];
	uint8_t *data[NR_BLOBS];
	char id[16], *json = json_of(k);
	int err;

	snprintf(id, sizeof(id), "s%d", k);
	for (int i = 0; i < NR_BLOBS; i++) {
		data[i] = blob_data(k, i);
		b[i] = (struct spike_blob){
		    .name = blob_names[i], .data = data[i], .len = blob_len(k, i)};
	}
	err = spike_store__save(s, id, start, json, b, NR_BLOBS);
	for (int i = 0; i < NR_BLOBS; i++)
		free(data[i]);
	free(json);
	return err;
}

/* Checks that every blob of spike k reads back byte for byte. */
static void check_blobs(struct spike_store *s, int k)
{
	char id[16];

	snprintf(id, sizeof(id), "s%d", k);
	for (int i = 0; i < NR_BLOBS; i++) {
		uint8_t *want = blob_data(k, i), *got;
		size_t len;

		assert_int_equal(spike_store__read_blob(s, id, blob_names[i], &got, &len), 0);
		assert_int_equal(len, blob_len(k, i));
		if (len)
			assert_memory_equal(got, want, len);
		else
			assert_null(got);
		free(got);
		free(want);
	}
}

struct listing {
	int nr;
	char ids[64][72];
	int64_t starts[64];
	char *json[64];
};

static int collect(void *arg, const char *id, int64_t start, const char *json)
{
	struct listing *l = arg;

	assert_true(l->nr < 64);
	snprintf(l->ids[l->nr], sizeof(l->ids[0]), "%s", id);
	l->starts[l->nr] = start;
	l->json[l->nr] = strdup(json);
	l->nr++;
	return 0;
}

static void list(struct spike_store *s, struct listing *l)
{
	memset(l, 0, sizeof(*l));
	assert_int_equal(spike_store__each(s, collect, l), 0);
}

static void list_free(struct listing *l)
{
	for (int i = 0; i < l->nr; i++)
		free(l->json[i]);
	l->nr = 0;
}

/* Checks that the listing is the spikes ks[0..n), in that order, with their JSON. */
static void check_listing(struct spike_store *s, const int *ks, int n)
{
	struct listing l;

	list(s, &l);
	assert_int_equal(l.nr, n);
	for (int i = 0; i < n; i++) {
		char id[16], *json = json_of(ks[i]);

		snprintf(id, sizeof(id), "s%d", ks[i]);
		assert_string_equal(l.ids[i], id);
		assert_string_equal(l.json[i], json);
		free(json);
	}
	list_free(&l);
}

static uint8_t *slurp(struct fx *f, const char *name, size_t *len)
{
	char p[256];

	path_of(f, name, p, sizeof(p));
	return test_slurp(p, len);
}

static void spew(struct fx *f, const char *name, const uint8_t *buf, size_t len)
{
	char p[256];

	path_of(f, name, p, sizeof(p));
	test_spew(p, buf, len);
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = v >> (8 * i);
}

static uint64_t file_size(struct fx *f, const char *name)
{
	char p[256];
	struct stat sb;

	path_of(f, name, p, sizeof(p));
	assert_int_equal(stat(p, &sb), 0);
	return sb.st_size;
}

static void test_round_trip(void **state)
{
	struct fx *f = *state;
	struct spike_store_stats st;
	struct spike_store *s = open_store(f, 0, 0);
	const int order[] = {2, 0, 1};
	uint64_t bytes = 0;
	struct stat sb;
	char p[256];
	uint8_t *out;
	size_t len;

	assert_int_equal(stat(f->dir, &sb), 0);
	assert_int_equal(sb.st_mode & 07777, 0700);
	assert_int_equal(stat(f->spikes, &sb), 0);
	assert_int_equal(sb.st_mode & 07777, 0700);

	/* saved out of order: listed by start time */
	assert_int_equal(save_k(s, 0, 2000), 0);
	assert_int_equal(save_k(s, 1, 3000), 0);
	assert_int_equal(save_k(s, 2, -5), 0);
	check_listing(s, order, 3);
	spike_store__free(s);

	s = open_store(f, 0, 0);
	check_listing(s, order, 3);
	for (int k = 0; k < 3; k++)
		check_blobs(s, k);
	path_of(f, "s0.spike", p, sizeof(p));
	assert_int_equal(stat(p, &sb), 0);
	assert_int_equal(sb.st_mode & 07777, 0600);
	for (int k = 0; k < 3; k++) {
		char name[32];

		snprintf(name, sizeof(name), "s%d.spike", k);
		bytes += file_size(f, name);
	}
	spike_store__stats(s, &st);
	assert_int_equal(st.spikes, 3);
	assert_int_equal(st.bytes, bytes);
	assert_int_equal(st.saved, 0); /* counters count since open */
	assert_int_equal(st.corrupt + st.unknown_format + st.evicted, 0);

	/* what is not there */
	assert_int_equal(spike_store__read_blob(s, "s0", "heap", &out, &len), -ENOENT);
	assert_null(out);
	assert_int_equal(spike_store__read_blob(s, "s9", "cpu", &out, &len), -ENOENT);
	assert_int_equal(spike_store__remove(s, "s9"), -ENOENT);

	/* the same id again replaces it */
	assert_int_equal(spike_store__save(s, "s1", 3000, "{\"v\": 2}", NULL, 0), 0);
	assert_int_equal(spike_store__read_blob(s, "s1", "cpu", &out, &len), -ENOENT);
	spike_store__stats(s, &st);
	assert_int_equal(st.spikes, 3);
	assert_int_equal(st.saved, 1);

	assert_int_equal(spike_store__remove(s, "s2"), 0);
	assert_false(exists(f, "s2.spike"));
	spike_store__free(s);

	s = open_store(f, 0, 0);
	{
		struct listing l;

		list(s, &l);
		assert_int_equal(l.nr, 2);
		assert_string_equal(l.ids[0], "s0");
		assert_int_equal(l.starts[0], 2000);
		assert_string_equal(l.ids[1], "s1");
		assert_string_equal(l.json[1], "{\"v\": 2}");
		list_free(&l);
	}
	spike_store__free(s);
}

static void test_bad_names(void **state)
{
	static const char *const bad[] = {
	    "", ".", "..", "a/b", "../x", "/etc/passwd", "a b", "caf\xc3\xa9", "x\n",
	    /* 65 characters */
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"};
	static const char id64[] =
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
	struct fx *f = *state;
	struct spike_store *s = open_store(f, 0, 0);
	struct spike_blob b[SPIKE_STORE_MAX_BLOBS + 1];
	uint8_t byte = 1, *out;
	size_t len;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(spike_store__save(s, bad[i], 0, "{}", NULL, 0), -EINVAL);
		assert_int_equal(spike_store__read_blob(s, bad[i], "cpu", &out, &len), -EINVAL);
		assert_int_equal(spike_store__remove(s, bad[i]), -EINVAL);
		b[0] = (struct spike_blob){.name = bad[i], .data = &byte, .len = 1};
		assert_int_equal(spike_store__save(s, "ok", 0, "{}", b, 1), -EINVAL);
	}
	assert_int_equal(spike_store__save(s, NULL, 0, "{}", NULL, 0), -EINVAL);
	assert_int_equal(spike_store__save(s, "ok", 0, NULL, NULL, 0), -EINVAL);
	/* blob names: 31 characters at most, distinct, at most SPIKE_STORE_MAX_BLOBS */
	b[0] = (struct spike_blob){
	    .name = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", .data = &byte, .len = 1};
	assert_int_equal(spike_store__save(s, "ok", 0, "{}", b, 1), -EINVAL);
	b[0] = (struct spike_blob){.name = "cpu", .data = &byte, .len = 1};
	b[1] = b[0];
	assert_int_equal(spike_store__save(s, "ok", 0, "{}", b, 2), -EINVAL);
	for (int i = 0; i <= SPIKE_STORE_MAX_BLOBS; i++) {
		static char names[SPIKE_STORE_MAX_BLOBS + 1][8];

		snprintf(names[i], sizeof(names[i]), "b%d", i);
		b[i] = (struct spike_blob){.name = names[i], .data = &byte, .len = 1};
	}
	assert_int_equal(spike_store__save(s, "ok", 0, "{}", b, SPIKE_STORE_MAX_BLOBS + 1),
			 -EINVAL);
	assert_int_equal(spike_store__save(s, "ok", 0, "{}", b, SPIKE_STORE_MAX_BLOBS), 0);

	/* the longest id, and ids that only look odd */
	assert_int_equal(spike_store__save(s, id64, 0, "{}", NULL, 0), 0);
	assert_int_equal(spike_store__save(s, "...", 0, "{}", NULL, 0), 0);
	assert_int_equal(spike_store__save(s, ".hidden_-9", 0, "{}", NULL, 0), 0);
	spike_store__free(s);
	s = open_store(f, 0, 0);
	{
		struct spike_store_stats st;

		spike_store__stats(s, &st);
		assert_int_equal(st.spikes, 4);
		assert_int_equal(st.save_failed, 0);
	}
	spike_store__free(s);
}

static void test_evict_by_count(void **state)
{
	struct fx *f = *state;
	struct spike_store *s = open_store(f, 0, 3);
	struct spike_store_stats st;

	for (int k = 0; k < 5; k++)
		assert_int_equal(save_k(s, k, 1000 * k), 0);
	check_listing(s, (const int[]){2, 3, 4}, 3);
	spike_store__stats(s, &st);
	assert_int_equal(st.evicted, 2);
	assert_int_equal(st.spikes, 3);
	assert_false(exists(f, "s0.spike"));
	assert_false(exists(f, "s1.spike"));

	/* a spike older than all: the oldest other goes, not the one just saved */
	assert_int_equal(save_k(s, 9, 1), 0);
	check_listing(s, (const int[]){9, 3, 4}, 3);
	spike_store__free(s);

	/* a lower bound at the next start evicts then, counted */
	s = open_store(f, 0, 2);
	check_listing(s, (const int[]){3, 4}, 2);
	spike_store__stats(s, &st);
	assert_int_equal(st.evicted, 1);
	check_blobs(s, 4);
	spike_store__free(s);
}

static void test_evict_by_bytes(void **state)
{
	struct fx *f = *state;
	struct spike_store *s = open_store(f, 0, 0);
	struct spike_store_stats st;
	uint64_t one, bound;
	uint8_t *big;

	assert_int_equal(save_k(s, 0, 0), 0);
	one = file_size(f, "s0.spike");
	assert_int_equal(spike_store__remove(s, "s0"), 0);
	spike_store__free(s);

	/* room for two and a half spikes of about the same size */
	bound = 2 * one + one / 2;
	s = open_store(f, bound, 100);
	for (int k = 0; k < 4; k++)
		assert_int_equal(save_k(s, k, k), 0);
	check_listing(s, (const int[]){2, 3}, 2);
	spike_store__stats(s, &st);
	assert_int_equal(st.evicted, 2);
	assert_true(st.bytes <= bound);
	assert_int_equal(st.bytes, file_size(f, "s2.spike") + file_size(f, "s3.spike"));

	/* one spike larger than the bound: refused, nothing evicted */
	big = calloc(1, bound);
	assert_int_equal(
	    spike_store__save(s, "big", 9, "{}",
			      &(struct spike_blob){.name = "cpu", .data = big, .len = bound}, 1),
	    -EFBIG);
	free(big);
	spike_store__stats(s, &st);
	assert_int_equal(st.save_failed, 1);
	assert_int_equal(st.evicted, 2);
	check_listing(s, (const int[]){2, 3}, 2);
	spike_store__free(s);
}

/* Damages: what is done to a copy of a valid file, and whether the scan should catch it (a
 * flipped bit in a blob is caught when the blob is read). */
struct damage {
	const char *what;
	long cut;  /* >= 0: cut the file to this many bytes; < 0: to its size + cut */
	long flip; /* >= 0: flip a bit of this byte; < 0: at its size + flip */
	bool at_scan;
	bool foreign; /* no magic left: nothing says the store wrote it, so it never deletes it */
};

/* Layout of spike k's file (see docs/spike-store.md): a 96-byte header, 7 x 48 bytes of table
 * (ends at 432), the JSON, the blobs. */
static const struct damage damages[] = {
    {"cut in the prelude", 10, 0, true},      {"cut in the header", 60, 0, true},
    {"cut in the table", 200, 0, true},	      {"cut in the JSON", 440, 0, true},
    {"cut in the last blob", -5, 0, true},    {"empty", 0, 0, true, true},
    {"flip in the magic", -1, 1, true, true}, {"flip in the version", -1, 8, true},
    {"flip in the start time", -1, 27, true}, {"flip in the id", -1, 33, true},
    {"flip in the table", -1, 150, true},     {"flip in the JSON", -1, 450, true},
    {"flip in the last blob", -1, -3, false},
};
#define NR_DAMAGES (int)(sizeof(damages) / sizeof(damages[0]))

static void damage_file(struct fx *f, const char *name, const struct damage *d)
{
	size_t len;
	uint8_t *buf = slurp(f, name, &len);

	if (d->cut != -1)
		len = d->cut >= 0 ? (size_t)d->cut : len + d->cut;
	else
		buf[d->flip >= 0 ? (size_t)d->flip : len + d->flip] ^= 0x10;
	spew(f, name, buf, len);
	free(buf);
}

static void test_corrupt_files(void **state)
{
	struct fx *f = *state;
	struct spike_store *s = open_store(f, 0, 0);
	struct spike_store_stats st;
	int healthy[2] = {NR_DAMAGES, NR_DAMAGES + 1}, listed[3], nr_listed = 0;
	int nr_at_scan = 0, blob_flip = -1, nr_ours = 0;
	uint64_t bound;
	const char *log;
	uint8_t *out;
	size_t len;

	for (int k = 0; k < NR_DAMAGES + 2; k++)
		assert_int_equal(save_k(s, k, 100 * k), 0);
	spike_store__free(s);
	for (int k = 0; k < NR_DAMAGES; k++) {
		char name[32];

		snprintf(name, sizeof(name), "s%d.spike", k);
		damage_file(f, name, &damages[k]);
		if (damages[k].at_scan)
			nr_at_scan++;
		else
			listed[nr_listed++] = blob_flip = k;
	}
	listed[nr_listed++] = healthy[0];
	listed[nr_listed++] = healthy[1];

	test_capture_start();
	s = open_store(f, 0, 0);
	log = test_capture_end();
	for (int k = 0; k < NR_DAMAGES; k++) {
		char name[32];

		snprintf(name, sizeof(name),
			 damages[k].foreign ? "/s%d.spike: " : "/s%d.spike is corrupt", k);
		if (test_count_of(log, name) != (damages[k].at_scan ? 1 : 0))
			fail_msg("%s: reported %d times: %s", damages[k].what,
				 test_count_of(log, name), log);
	}
	spike_store__stats(s, &st);
	assert_int_equal(st.corrupt, nr_at_scan);
	assert_int_equal(st.spikes, nr_listed);
	assert_int_equal(st.unknown_format, 0);
	check_listing(s, listed, nr_listed);
	check_blobs(s, healthy[0]);
	check_blobs(s, healthy[1]);

	/* corrupt files are kept, not listed, and read as such */
	assert_true(exists(f, "s0.spike"));
	assert_int_equal(spike_store__read_blob(s, "s3", "cpu", &out, &len), -EBADMSG);

	/* the flipped blob: reported once, the other blobs of its spike whole */
	test_capture_start();
	for (int i = 0; i < 3; i++)
		assert_int_equal(spike_store__read_blob(s, "s12", "wall.baseline", &out, &len),
				 -EBADMSG);
	log = test_capture_end();
	assert_int_equal(test_count_of(log, "s12.spike is corrupt"), 1);
	assert_non_null(strstr(log, "wall.baseline"));
	assert_int_equal(blob_flip, 12);
	assert_int_equal(spike_store__read_blob(s, "s12", "cpu", &out, &len), 0);
	free(out);
	spike_store__stats(s, &st);
	assert_int_equal(st.corrupt, nr_at_scan + 1);
	check_listing(s, listed, nr_listed);

	/* a corrupt file is replaced by a save of its id; a foreign one is not */
	assert_int_equal(save_k(s, 4, 500), 0);
	check_blobs(s, 4);
	log_set_level(LOG_ERROR);
	assert_int_equal(save_k(s, 6, 600), -EEXIST);
	log_set_level(LOG_INFO);
	spike_store__free(s);

	/* when room is needed, corrupt files go first, each logged and counted; foreign files
	 * (no magic) are never deleted, nor counted against the bounds */
	bound = file_size(f, "s4.spike") + file_size(f, "s12.spike") + file_size(f, "s13.spike") +
		file_size(f, "s14.spike");
	test_capture_start();
	s = open_store(f, bound, 0);
	log = test_capture_end();
	spike_store__stats(s, &st);
	assert_int_equal(st.bytes, bound);
	check_listing(s, (const int[]){4, 12, 13, 14}, 4);
	for (int k = 0; k < NR_DAMAGES; k++) {
		char name[32];

		snprintf(name, sizeof(name), "s%d.spike", k);
		assert_int_equal(exists(f, name), k == 4 || k == 12 || damages[k].foreign);
		if (k != 4 && k != 12 && !damages[k].foreign) {
			char line[160];

			snprintf(line, sizeof(line), "removed %s/s%d.spike, corrupt (", f->spikes,
				 k);
			if (test_count_of(log, line) != 1)
				fail_msg("s%d: not logged once as removed: %s", k, log);
			nr_ours++;
		}
	}
	assert_int_equal(st.evicted, nr_ours);
	spike_store__free(s);
}

/* Rewrites the version of the file name, with or without a matching prelude checksum. */
static void set_version(struct fx *f, const char *name, uint32_t version, bool fix_crc)
{
	size_t len;
	uint8_t *buf = slurp(f, name, &len);

	put32(buf + 8, version);
	if (fix_crc)
		put32(buf + 12, crc32(0, buf, 12));
	spew(f, name, buf, len);
	free(buf);
}

static void test_newer_format(void **state)
{
	struct fx *f = *state;
	struct spike_store *s = open_store(f, 0, 2);
	struct spike_store_stats st;
	const char *log;
	uint8_t *out;
	size_t len;

	for (int k = 0; k < 3; k++)
		assert_int_equal(save_k(s, k, k), 0);
	check_listing(s, (const int[]){1, 2}, 2);
	spike_store__free(s);
	set_version(f, "s1.spike", SPIKE_STORE_FORMAT_VERSION + 1, true);
	/* a bit flipped in the version is corruption, not a newer format */
	set_version(f, "s2.spike", SPIKE_STORE_FORMAT_VERSION + 4, false);

	test_capture_start();
	s = open_store(f, 0, 2);
	log = test_capture_end();
	assert_non_null(strstr(log, "s1.spike: format version 2, newer"));
	assert_non_null(strstr(log, "s2.spike is corrupt"));
	spike_store__stats(s, &st);
	assert_int_equal(st.unknown_format, 1);
	assert_int_equal(st.corrupt, 1);
	assert_int_equal(st.spikes, 0);
	check_listing(s, NULL, 0);
	assert_int_equal(spike_store__read_blob(s, "s1", "cpu", &out, &len), -ENOENT);
	/* kept: not overwritten, not removed, not evicted, not counted against the bounds */
	log_set_level(LOG_ERROR);
	assert_int_equal(save_k(s, 1, 5), -EEXIST);
	log_set_level(LOG_INFO);
	assert_int_equal(spike_store__remove(s, "s1"), -EPROTONOSUPPORT);
	for (int k = 3; k < 8; k++)
		assert_int_equal(save_k(s, k, k), 0);
	check_listing(s, (const int[]){6, 7}, 2);
	assert_true(exists(f, "s1.spike"));
	/* the corrupt file stays until bytes are short: a bound of count evicts spikes only */
	assert_true(exists(f, "s2.spike"));
	spike_store__stats(s, &st);
	assert_int_equal(st.unknown_format, 1);
	assert_int_equal(st.bytes, file_size(f, "s2.spike") + file_size(f, "s6.spike") +
				       file_size(f, "s7.spike"));
	spike_store__free(s);

	s = open_store(f, 1, 1); /* the smallest bounds: all go but the newer format */
	assert_true(exists(f, "s1.spike"));
	assert_false(exists(f, "s2.spike"));
	assert_false(exists(f, "s7.spike"));
	spike_store__stats(s, &st);
	assert_int_equal(st.evicted, 3);
	assert_int_equal(st.unknown_format, 1);
	assert_int_equal(st.bytes, 0);
	spike_store__free(s);
}

/* Files whose checksums are right but whose header lies: the checks behind the CRCs. */
enum lie {
	LIE_NR_SECTIONS,
	LIE_HUGE_LEN,
	LIE_LONG_LEN,
	LIE_NAME_NO_NUL,
	LIE_SAME_NAMES,
	LIE_JSON_NAMED,
	LIE_FLAGS,
	LIE_OTHER_ID,
	NR_LIES
};

static void lie(struct fx *f, int k, enum lie what)
{
	char name[32];
	size_t len;
	uint8_t *buf, *t;

	snprintf(name, sizeof(name), "s%d.spike", k);
	buf = slurp(f, name, &len);
	t = buf + 96 + 48; /* section 1, blob "cpu" */
	switch (what) {
	case LIE_NR_SECTIONS:
		put32(buf + 16, 1000);
		break;
	case LIE_HUGE_LEN:
		memset(t + 32, 0xff, 8);
		break;
	case LIE_LONG_LEN:
		put32(t + 32, 60u << 20); /* under the cap, past the file's end */
		break;
	case LIE_NAME_NO_NUL:
		memset(t, 'a', 32);
		break;
	case LIE_SAME_NAMES:
		memcpy(t + 48, t, 32);
		break;
	case LIE_JSON_NAMED:
		memcpy(buf + 96, "json", 4);
		break;
	case LIE_FLAGS:
		put32(t + 44, 1);
		break;
	case LIE_OTHER_ID:
		buf[33] = '9'; /* "s9" in the file of another spike */
		break;
	default:
		break;
	}
	put32(buf + 20, 0);
	put32(buf + 20, crc32(0, buf, 96 + (1 + NR_BLOBS) * 48));
	spew(f, name, buf, len);
	free(buf);
}

static void test_lying_headers(void **state)
{
	static const char *const said[] = {
	    "1000 sections",	      "section 1 of 18446744073709551615 bytes",
	    "cut short in section 1", "section 1 is malformed",
	    "two sections named cpu", "section 0 has a bad name",
	    "names another entry",
	};
	struct fx *f = *state;
	struct spike_store *s = open_store(f, 0, 0);
	struct spike_store_stats st;
	const char *log;

	for (int k = 0; k <= NR_LIES; k++)
		assert_int_equal(save_k(s, k, k), 0);
	spike_store__free(s);
	for (int k = 0; k < NR_LIES; k++)
		lie(f, k, k);
	test_capture_start();
	s = open_store(f, 0, 0);
	log = test_capture_end();
	spike_store__stats(s, &st);
	assert_int_equal(st.corrupt, NR_LIES);
	check_listing(s, (const int[]){NR_LIES}, 1);
	check_blobs(s, NR_LIES);
	for (size_t i = 0; i < sizeof(said) / sizeof(said[0]); i++)
		if (!strstr(log, said[i]))
			fail_msg("not said: %s: %s", said[i], log);
	spike_store__free(s);
}

/* A file cut after its fstat (another writer, a disk full at a copy): every read of it says
 * where it ended, as -EBADMSG with its why. tests/fuzz/fuzz_spike_file.c found the why left empty
 * (corpus/spike_file/cut-while-read). */
static void test_cut_while_read(void **state)
{
	struct fx *f = *state;
	struct spike_store *s = open_store(f, 0, 0);
	struct spike_file_head h;
	char path[256], why[128];
	struct stat sb;
	uint8_t *data;
	int fd;

	assert_int_equal(save_k(s, 0, 0), 0);
	spike_store__free(s);
	path_of(f, "s0.spike", path, sizeof(path));
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &sb), 0);
	/* cut inside the last blob: the header reads, the blob does not */
	assert_int_equal(ftruncate(fd, sb.st_size - 10), 0);
	assert_int_equal(spike_file__read_head(fd, sb.st_size, "s0", &h, why, sizeof(why)), 0);
	why[0] = 0;
	assert_int_equal(
	    spike_file__read_section(fd, &h, h.nr_sections - 1, &data, why, sizeof(why)), -EBADMSG);
	assert_null(data);
	assert_non_null(strstr(why, "cut short while read"));
	/* cut inside the table: the header does not read */
	assert_int_equal(ftruncate(fd, 100), 0);
	why[0] = 0;
	assert_int_equal(spike_file__read_head(fd, sb.st_size, "s0", &h, why, sizeof(why)),
			 -EBADMSG);
	assert_non_null(strstr(why, "cut short while read: it ends at byte 100"));
	close(fd);
}

static void touch(struct fx *f, const char *name)
{
	spew(f, name, (const uint8_t *)"x", 1);
}

static void test_leftovers_and_odd_files(void **state)
{
	struct fx *f = *state;
	struct spike_store *s = open_store(f, 0, 0);
	struct spike_store_stats st;
	char target[256], p[256];

	assert_int_equal(save_k(s, 0, 0), 0);
	assert_int_equal(save_k(s, 1, 1), 0);
	spike_store__free(s);

	/* what a crash between write and rename leaves */
	touch(f, "s2.spike.7.tmp");
	touch(f, "s0.spike.0.tmp");
	touch(f, "README");
	/* a symlink is not followed; a FIFO is not opened (it would block) */
	path_of(f, "s0.spike", target, sizeof(target));
	path_of(f, "link.spike", p, sizeof(p));
	assert_int_equal(symlink(target, p), 0);
	path_of(f, "fifo.spike", p, sizeof(p));
	assert_int_equal(mkfifo(p, 0600), 0);
	path_of(f, "dir.spike", p, sizeof(p));
	assert_int_equal(mkdir(p, 0700), 0);

	log_set_level(LOG_ERROR);
	s = open_store(f, 0, 0);
	log_set_level(LOG_INFO);
	assert_false(exists(f, "s2.spike.7.tmp"));
	assert_false(exists(f, "s0.spike.0.tmp"));
	assert_true(exists(f, "README"));
	check_listing(s, (const int[]){0, 1}, 2);
	spike_store__stats(s, &st);
	assert_int_equal(st.corrupt, 1); /* the symlink */
	/* neither removed nor overwritten, and not counted against the bounds */
	assert_int_equal(st.bytes, file_size(f, "s0.spike") + file_size(f, "s1.spike"));
	assert_int_equal(spike_store__remove(s, "link"), -ELOOP);
	assert_int_equal(spike_store__entry(s, "link", NULL), -ELOOP);
	log_set_level(LOG_ERROR);
	assert_int_equal(spike_store__save(s, "link", 5, "{}", NULL, 0), -EEXIST);
	log_set_level(LOG_INFO);
	assert_true(exists(f, "link.spike"));
	assert_true(exists(f, "s0.spike"));
	{
		struct stat lsb;

		path_of(f, "link.spike", p, sizeof(p));
		assert_int_equal(lstat(p, &lsb), 0);
		assert_true(S_ISLNK(lsb.st_mode));
	}
	check_blobs(s, 0);

	/* a file removed by hand meanwhile */
	path_of(f, "s0.spike", p, sizeof(p));
	assert_int_equal(unlink(p), 0);
	{
		uint8_t *out;
		size_t len;

		assert_int_equal(spike_store__read_blob(s, "s0", "cpu", &out, &len), -ENOENT);
	}
	check_listing(s, (const int[]){1}, 1);
	spike_store__stats(s, &st);
	assert_int_equal(st.spikes, 1);
	assert_int_equal(st.bytes, file_size(f, "s1.spike"));
	spike_store__free(s);
}

static void test_open_errors(void **state)
{
	struct fx *f = *state;
	struct spike_store_opts o = {.dir = f->dir};
	struct spike_store *s, *s2;
	char err[256], p[256];

	/* one daemon a directory */
	s = open_store(f, 0, 0);
	assert_null(spike_store__open(&o, err, sizeof(err)));
	assert_int_equal(errno, EBUSY);
	assert_non_null(strstr(err, "in use by another tailprofd"));
	spike_store__free(s);
	s2 = open_store(f, 0, 0);
	spike_store__free(s2);

	assert_null(spike_store__open(&(struct spike_store_opts){0}, err, sizeof(err)));
	assert_int_equal(errno, EINVAL);

	o.dir = "/nonexistent-tailprof/state";
	assert_null(spike_store__open(&o, err, sizeof(err)));
	assert_int_equal(errno, ENOENT);
	assert_non_null(strstr(err, "/nonexistent-tailprof/state"));

	/* DIR is a file */
	snprintf(p, sizeof(p), "%s/file", f->dir);
	assert_int_equal(close(open(p, O_WRONLY | O_CREAT, 0600)), 0);
	o.dir = p;
	assert_null(spike_store__open(&o, err, sizeof(err)));
	assert_int_equal(errno, ENOTDIR);
	assert_non_null(strstr(err, "not a directory"));

	/* DIR/spikes is a symlink */
	snprintf(p, sizeof(p), "%s/other", f->dir);
	assert_int_equal(mkdir(p, 0700), 0);
	snprintf(p, sizeof(p), "%s/other/spikes", f->dir);
	assert_int_equal(symlink(f->spikes, p), 0);
	snprintf(p, sizeof(p), "%s/other", f->dir);
	o.dir = p;
	assert_null(spike_store__open(&o, err, sizeof(err)));
	assert_int_equal(errno, ELOOP);
	assert_non_null(strstr(err, "spikes is a symlink"));
}

/* Saves on one thread while another lists and reads, the way the drain and HTTP threads do. */
struct race {
	struct spike_store *s;
	pthread_mutex_t lock; /* of done (a mutex, so that helgrind sees the order) */
	bool done;
};

static bool race_done(struct race *r)
{
	bool done;

	pthread_mutex_lock(&r->lock);
	done = r->done;
	pthread_mutex_unlock(&r->lock);
	return done;
}

static int read_all(void *arg, const char *id, int64_t start, const char *json)
{
	struct spike_store *s = arg;
	uint8_t *out;
	size_t len;
	int err = spike_store__read_blob(s, id, "cpu", &out, &len);

	/* evicted meanwhile, or whole */
	assert_true(err == 0 || err == -ENOENT);
	free(out);
	return 0;
}

static void *reader(void *arg)
{
	struct race *r = arg;

	while (!race_done(r))
		assert_int_equal(spike_store__each(r->s, read_all, r->s), 0);
	return NULL;
}

static void test_threads(void **state)
{
	struct fx *f = *state;
	struct race r = {.s = open_store(f, 0, 4), .lock = PTHREAD_MUTEX_INITIALIZER};
	struct spike_store_stats st;
	pthread_t t;

	assert_int_equal(pthread_create(&t, NULL, reader, &r), 0);
	for (int k = 0; k < 60; k++)
		assert_int_equal(save_k(r.s, k % 20, k), 0);
	pthread_mutex_lock(&r.lock);
	r.done = true;
	pthread_mutex_unlock(&r.lock);
	pthread_join(t, NULL);
	spike_store__stats(r.s, &st);
	assert_int_equal(st.spikes, 4);
	assert_int_equal(st.corrupt, 0);
	check_listing(r.s, (const int[]){16, 17, 18, 19}, 4);
	spike_store__free(r.s);
}

/* Cuts and bit flips of one valid file at random (a fixed seed): the reader never crashes, and
 * what it returns is the original or nothing. */
static void test_fuzz(void **state)
{
	struct fx *f = *state;
	struct spike_store *s = open_store(f, 0, 0);
	uint8_t *orig, *buf;
	size_t len;
	unsigned int seed = 16;

	assert_int_equal(save_k(s, 1, 42), 0);
	spike_store__free(s);
	orig = slurp(f, "s1.spike", &len);
	buf = malloc(len);
	log_set_level(LOG_ERROR);
	for (int iter = 0; iter < 400; iter++) {
		size_t n = len;
		int kind = rand_r(&seed) % 4;

		memcpy(buf, orig, len);
		if (kind == 0) {
			n = rand_r(&seed) % len;
		} else if (kind == 3) {
			/* one byte of header or table, its CRC made right again: the checks behind
			 * the CRC (not the start time: that would be a valid other spike) */
			size_t pos = 16 + rand_r(&seed) % (96 + 7 * 48 - 16);

			buf[pos >= 20 && pos < 32 ? 40 : pos] = rand_r(&seed);
			put32(buf + 20, 0);
			put32(buf + 20, crc32(0, buf, 96 + (1 + NR_BLOBS) * 48));
		} else {
			for (int i = 0, flips = 1 + rand_r(&seed) % 3; i < flips; i++)
				buf[rand_r(&seed) % len] ^= 1u << (rand_r(&seed) % 8);
			if (kind == 2) /* and a random byte, about the header's integers */
				buf[rand_r(&seed) % 448] = rand_r(&seed);
		}
		spew(f, "s1.spike", buf, n);
		s = open_store(f, 0, 0);
		{
			struct listing l;

			list(s, &l);
			assert_true(l.nr <= 1);
			if (l.nr) {
				char *json = json_of(1);

				assert_string_equal(l.json[0], json);
				assert_int_equal(l.starts[0], 42);
				free(json);
			}
			list_free(&l);
		}
		for (int i = 0; i < NR_BLOBS; i++) {
			uint8_t *want = blob_data(1, i), *out;
			size_t got;
			int err = spike_store__read_blob(s, "s1", blob_names[i], &out, &got);

			if (!err) {
				assert_int_equal(got, blob_len(1, i));
				if (got)
					assert_memory_equal(out, want, got);
			} else {
				assert_true(err == -EBADMSG || err == -ENOENT);
			}
			free(out);
			free(want);
		}
		spike_store__free(s);
	}
	log_set_level(LOG_INFO);
	free(buf);
	free(orig);
}

/* Another kind of entry (subdir, suffix, noun) in a store that refuses instead of evicting. */
static struct spike_store *open_things(struct fx *f, uint64_t max_bytes, uint32_t max_spikes)
{
	struct spike_store_opts o = {.dir = f->dir,
				     .subdir = "things",
				     .suffix = ".thing",
				     .what = "thing",
				     .max_bytes = max_bytes,
				     .max_spikes = max_spikes,
				     .no_evict = true};
	char err[256] = "";
	struct spike_store *s = spike_store__open(&o, err, sizeof(err));

	if (!s)
		fail_msg("open: %s", err);
	return s;
}

static bool thing_exists(struct fx *f, const char *name)
{
	char p[256];

	snprintf(p, sizeof(p), "%s/things/%s", f->dir, name);
	return access(p, F_OK) == 0;
}

static void test_no_evict(void **state)
{
	static const char *const bad_suffix[] = {"",	 ".",	 "thing",	    ".a.b",
						 ".tmp", ".a/b", ".aaaaaaaaaaaaaaa"};
	struct fx *f = *state;
	struct spike_store *s = open_things(f, 0, 2);
	struct spike_store_stats st;
	char p[256], log[16384];
	uint64_t bytes, one;
	uint8_t *big;

	assert_int_equal(spike_store__save(s, "a", 1, "{\"k\": 1}", NULL, 0), 0);
	assert_int_equal(spike_store__save(s, "b", 2, "{\"k\": 2}", NULL, 0), 0);
	assert_true(thing_exists(f, "a.thing"));
	assert_false(exists(f, "a.spike"));
	assert_int_equal(spike_store__entry(s, "a", &one), 0);
	assert_int_equal(spike_store__entry(s, "q", NULL), -ENOENT);
	assert_int_equal(spike_store__entry(s, "../a", NULL), -EINVAL);

	/* past the count: refused, nothing written, nothing evicted; a replacement is net */
	assert_int_equal(spike_store__save(s, "c", 3, "{}", NULL, 0), -EMLINK);
	assert_false(thing_exists(f, "c.thing"));
	assert_int_equal(spike_store__save(s, "a", 4, "{\"k\": 3}", NULL, 0), 0);
	spike_store__stats(s, &st);
	assert_int_equal(st.spikes, 2);
	assert_int_equal(st.evicted, 0);
	assert_int_equal(st.save_failed, 1);
	bytes = st.bytes;
	spike_store__free(s);

	/* past the bytes: the same */
	s = open_things(f, bytes + 160, 10);
	big = calloc(1, 200);
	assert_int_equal(
	    spike_store__save(s, "c", 5, "{}",
			      &(struct spike_blob){.name = "x", .data = big, .len = 200}, 1),
	    -EFBIG);
	assert_false(thing_exists(f, "c.thing"));
	assert_int_equal(spike_store__save(s, "c", 5, "{}", NULL, 0), 0);
	assert_int_equal(spike_store__entry(s, "c", &one), 0);
	spike_store__free(s);
	snprintf(p, sizeof(p), "%s/things/z.thing", f->dir);
	{
		FILE *z = fopen(p, "w");

		assert_non_null(z);
		fwrite(big, 1, 150, z);
		fclose(z);
	}
	/* and temp files of this suffix (an id may hold it) are removed at open */
	snprintf(p, sizeof(p), "%s/things/x.thing.y.thing.12.tmp", f->dir);
	fclose(fopen(p, "w"));
	bytes += 2 * one + 10; /* room for c and d, not for the corrupt file too */
	test_capture_start();
	s = open_things(f, bytes, 10);
	snprintf(log, sizeof(log), "%s", test_capture_end());
	assert_non_null(strstr(log, "thing store: "));
	/* the directory is tp-spike-store-*: the messages themselves name no spike */
	assert_null(strstr(log, "spike store"));
	assert_null(strstr(log, "spike file"));
	assert_false(thing_exists(f, "x.thing.y.thing.12.tmp"));
	assert_non_null(strstr(log, "/things/z.thing: bad magic"));
	assert_int_equal(spike_store__entry(s, "z", &one), -EBADMSG);
	assert_int_equal(one, 150);
	/* a corrupt file is kept and counted: the save that needs its room is refused; a remove
	 * asked for makes the room */
	assert_int_equal(spike_store__save(s, "d", 6, "{}", NULL, 0), -EFBIG);
	assert_true(thing_exists(f, "z.thing"));
	assert_int_equal(spike_store__remove(s, "z"), 0);
	assert_int_equal(spike_store__save(s, "d", 6, "{}", NULL, 0), 0);
	assert_false(thing_exists(f, "z.thing"));
	spike_store__stats(s, &st);
	assert_int_equal(st.spikes, 4);
	assert_int_equal(st.evicted, 0);
	spike_store__free(s);

	/* over max_bytes at open with corrupt files the store wrote: nothing deleted, each
	 * reported once with the fix */
	{
		uint8_t head[8] = "TPSPIKE";

		snprintf(p, sizeof(p), "%s/things/cut.thing", f->dir);
		test_spew(p, head, sizeof(head));
	}
	test_capture_start();
	s = open_things(f, SPIKE_STORE_DEFAULT_BYTES, 0);
	spike_store__free(s);
	s = open_things(f, 1, 10);
	snprintf(log, sizeof(log), "%s", test_capture_end());
	assert_true(thing_exists(f, "cut.thing"));
	assert_int_equal(test_count_of(log, "/things/cut.thing is corrupt (cut short"), 2);
	assert_non_null(strstr(log, "kept, counted against max_bytes"));
	assert_null(strstr(log, "removed"));
	spike_store__stats(s, &st);
	assert_int_equal(st.evicted, 0);
	assert_int_equal(st.spikes, 4);
	assert_int_equal(spike_store__remove(s, "cut"), 0);
	spike_store__free(s);

	/* a bound lowered below what is stored: everything kept, saves refused */
	s = open_things(f, 0, 1);
	spike_store__stats(s, &st);
	assert_int_equal(st.spikes, 4);
	assert_int_equal(spike_store__save(s, "a", 7, "{}", NULL, 0), -EMLINK);
	assert_int_equal(spike_store__remove(s, "a"), 0);
	spike_store__free(s);
	free(big);

	for (size_t i = 0; i < sizeof(bad_suffix) / sizeof(bad_suffix[0]); i++) {
		struct spike_store_opts o = {.dir = f->dir, .suffix = bad_suffix[i]};
		char err[256];

		errno = 0;
		assert_null(spike_store__open(&o, err, sizeof(err)));
		assert_int_equal(errno, EINVAL);
	}
	{
		struct spike_store_opts o = {.dir = f->dir, .subdir = "../x"};
		char err[256];

		assert_null(spike_store__open(&o, err, sizeof(err)));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_round_trip, setup, test_teardown_dir),
	    cmocka_unit_test_setup_teardown(test_bad_names, setup, test_teardown_dir),
	    cmocka_unit_test_setup_teardown(test_evict_by_count, setup, test_teardown_dir),
	    cmocka_unit_test_setup_teardown(test_evict_by_bytes, setup, test_teardown_dir),
	    cmocka_unit_test_setup_teardown(test_corrupt_files, setup, test_teardown_dir),
	    cmocka_unit_test_setup_teardown(test_newer_format, setup, test_teardown_dir),
	    cmocka_unit_test_setup_teardown(test_lying_headers, setup, test_teardown_dir),
	    cmocka_unit_test_setup_teardown(test_cut_while_read, setup, test_teardown_dir),
	    cmocka_unit_test_setup_teardown(test_leftovers_and_odd_files, setup, test_teardown_dir),
	    cmocka_unit_test_setup_teardown(test_open_errors, setup, test_teardown_dir),
	    cmocka_unit_test_setup_teardown(test_threads, setup, test_teardown_dir),
	    cmocka_unit_test_setup_teardown(test_fuzz, setup, test_teardown_dir),
	    cmocka_unit_test_setup_teardown(test_no_evict, setup, test_teardown_dir),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
