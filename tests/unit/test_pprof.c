// SPDX-License-Identifier: GPL-2.0-only
/* Unit tests of the pprof encoder: decode what it writes (zlib, protobuf-c) and check structure and
 * values, then let `go tool pprof` judge. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include <cmocka.h>

#include "pprof.h"
#include "profile.pb-c.h"

/* Fault injection: the process's malloc, calloc and realloc go to glibc's, except that when armed
 * the nth call from now fails once with ENOMEM. */
void *__libc_malloc(size_t n);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t n);

static long alloc_countdown = -1; /* -1: disarmed */
static bool alloc_failed;

static bool alloc_should_fail(void)
{
	if (alloc_countdown < 0 || alloc_countdown-- > 0)
		return false;
	alloc_failed = true;
	errno = ENOMEM;
	return true;
}

void *malloc(size_t n)
{
	return alloc_should_fail() ? NULL : __libc_malloc(n);
}

void *calloc(size_t n, size_t size)
{
	return alloc_should_fail() ? NULL : __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
	return alloc_should_fail() ? NULL : __libc_realloc(p, n);
}

/* The compiler knows what malloc does, so that it could move a direct call past alloc_disarm(). */
static void *(*volatile opaque_malloc)(size_t n) = malloc;

static void alloc_arm(long n)
{
	alloc_failed = false;
	alloc_countdown = n;
}

/* Disarms; returns whether an allocation failed. */
static bool alloc_disarm(void)
{
	alloc_countdown = -1;
	return alloc_failed;
}

static const struct pprof_value_type two_types[] = {
    {.type = "samples", .unit = "count"},
    {.type = "cpu", .unit = "nanoseconds"},
};

static const struct pprof_opts cpu_opts = {
    .sample_types = two_types,
    .nr_sample_types = 2,
    .period_type = {.type = "cpu", .unit = "nanoseconds"},
    .period = 10101010,
    .time_ns = 1764450245000000000LL,
    .duration_ns = 10000000000LL,
    .default_sample_type = "samples",
};

/* Gunzips and unpacks; fails the test on any error. Free with
 * perftools__profiles__profile__free_unpacked. */
static Perftools__Profiles__Profile *decode(const uint8_t *buf, size_t len)
{
	z_stream zs = {0};
	size_t cap = len * 4 + 1024, n = 0;
	uint8_t *raw = malloc(cap);
	Perftools__Profiles__Profile *p;
	int ret;

	assert_non_null(raw);
	assert_int_equal(inflateInit2(&zs, 15 + 16), Z_OK);
	zs.next_in = (Bytef *)buf;
	zs.avail_in = len;
	do {
		if (n == cap) {
			cap *= 2;
			raw = realloc(raw, cap);
			assert_non_null(raw);
		}
		zs.next_out = raw + n;
		zs.avail_out = cap - n;
		ret = inflate(&zs, Z_NO_FLUSH);
		assert_true(ret == Z_OK || ret == Z_STREAM_END);
		n = cap - zs.avail_out;
	} while (ret != Z_STREAM_END);
	assert_int_equal(zs.avail_in, 0);
	inflateEnd(&zs);
	p = perftools__profiles__profile__unpack(NULL, n, raw);
	free(raw);
	assert_non_null(p);
	return p;
}

static Perftools__Profiles__Profile *finish_decode(struct pprof_builder *b)
{
	uint8_t *buf = NULL;
	size_t len = 0;
	Perftools__Profiles__Profile *p;

	assert_int_equal(pprof_builder__finish(b, &buf, &len), 0);
	assert_non_null(buf);
	assert_true(len > 18); /* gzip header and trailer at least */
	assert_int_equal(buf[0], 0x1f);
	assert_int_equal(buf[1], 0x8b);
	p = decode(buf, len);
	free(buf);
	return p;
}

static const char *str(const Perftools__Profiles__Profile *p, int64_t idx)
{
	assert_true(idx >= 0 && (size_t)idx < p->n_string_table);
	return p->string_table[idx];
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* ids must be exactly 1..n in some order. */
static void check_ids(uint64_t *ids, size_t n)
{
	size_t i;

	qsort(ids, n, sizeof(*ids), cmp_u64);
	for (i = 0; i < n; i++)
		assert_int_equal(ids[i], i + 1);
}

static bool has_id(uint64_t id, uint64_t n)
{
	return id >= 1 && id <= n; /* valid once check_ids() passed */
}

/* The invariants every profile we write must hold, whatever went in. */
static void check_profile(const Perftools__Profiles__Profile *p, size_t nr_sample_types)
{
	char **strs;
	uint64_t *ids;
	size_t i, j, n;

	/* string_table[0] == "" exactly once, and every string once */
	assert_true(p->n_string_table >= 1);
	assert_string_equal(p->string_table[0], "");
	strs = malloc(p->n_string_table * sizeof(*strs));
	assert_non_null(strs);
	memcpy(strs, p->string_table, p->n_string_table * sizeof(*strs));
	qsort(strs, p->n_string_table, sizeof(*strs), cmp_str);
	for (i = 1; i < p->n_string_table; i++)
		assert_true(strcmp(strs[i - 1], strs[i]) != 0);
	free(strs);

	n = p->n_mapping + p->n_location + p->n_function + 1;
	ids = malloc(n * sizeof(*ids));
	assert_non_null(ids);
	for (i = 0; i < p->n_mapping; i++)
		ids[i] = p->mapping[i]->id;
	check_ids(ids, p->n_mapping);
	for (i = 0; i < p->n_location; i++)
		ids[i] = p->location[i]->id;
	check_ids(ids, p->n_location);
	for (i = 0; i < p->n_function; i++)
		ids[i] = p->function[i]->id;
	check_ids(ids, p->n_function);
	free(ids);

	for (i = 0; i < p->n_mapping; i++) {
		str(p, p->mapping[i]->filename);
		str(p, p->mapping[i]->build_id);
	}
	for (i = 0; i < p->n_function; i++) {
		str(p, p->function[i]->name);
		str(p, p->function[i]->system_name);
		str(p, p->function[i]->filename);
	}
	for (i = 0; i < p->n_location; i++) {
		const Perftools__Profiles__Location *l = p->location[i];

		assert_true(l->mapping_id == 0 || has_id(l->mapping_id, p->n_mapping));
		for (j = 0; j < l->n_line; j++)
			assert_true(has_id(l->line[j]->function_id, p->n_function));
	}
	assert_int_equal(p->n_sample_type, nr_sample_types);
	for (i = 0; i < p->n_sample; i++) {
		const Perftools__Profiles__Sample *s = p->sample[i];
		bool zero = true;

		assert_int_equal(s->n_value, nr_sample_types);
		for (j = 0; j < s->n_value; j++)
			zero = zero && s->value[j] == 0;
		assert_false(zero);
		for (j = 0; j < s->n_location_id; j++)
			assert_true(has_id(s->location_id[j], p->n_location));
		for (j = 0; j < s->n_label; j++) {
			str(p, s->label[j]->key);
			str(p, s->label[j]->str);
		}
	}
}

static const Perftools__Profiles__Location *loc_by_id(const Perftools__Profiles__Profile *p,
						      uint64_t id)
{
	size_t i;

	for (i = 0; i < p->n_location; i++)
		if (p->location[i]->id == id)
			return p->location[i];
	fail_msg("no location %llu", (unsigned long long)id);
	return NULL;
}

static const Perftools__Profiles__Function *func_by_id(const Perftools__Profiles__Profile *p,
						       uint64_t id)
{
	size_t i;

	for (i = 0; i < p->n_function; i++)
		if (p->function[i]->id == id)
			return p->function[i];
	fail_msg("no function %llu", (unsigned long long)id);
	return NULL;
}

static const Perftools__Profiles__Mapping *map_by_id(const Perftools__Profiles__Profile *p,
						     uint64_t id)
{
	size_t i;

	for (i = 0; i < p->n_mapping; i++)
		if (p->mapping[i]->id == id)
			return p->mapping[i];
	fail_msg("no mapping %llu", (unsigned long long)id);
	return NULL;
}

/* The function name of a location with one line, or NULL without lines. */
static const char *loc_func(const Perftools__Profiles__Profile *p,
			    const Perftools__Profiles__Location *l)
{
	if (!l->n_line)
		return NULL;
	assert_int_equal(l->n_line, 1);
	return str(p, func_by_id(p, l->line[0]->function_id)->name);
}

static void test_bad_opts(void **state)
{
	struct pprof_value_type nine[9] = {0};
	struct pprof_opts o = cpu_opts;

	errno = 0;
	assert_null(pprof_builder__new(NULL));
	assert_int_equal(errno, EINVAL);
	o.nr_sample_types = 0;
	errno = 0;
	assert_null(pprof_builder__new(&o));
	assert_int_equal(errno, EINVAL);
	o.sample_types = nine;
	o.nr_sample_types = 9;
	errno = 0;
	assert_null(pprof_builder__new(&o));
	assert_int_equal(errno, EINVAL);
	pprof_builder__free(NULL);
}

static void test_header_roundtrip(void **state)
{
	const char *comments[] = {"window 2026-11-29T21:04:05Z", "samples", "tailprof"};
	struct pprof_opts o = cpu_opts;
	struct pprof_builder *b;
	Perftools__Profiles__Profile *p;
	size_t i;

	o.comments = comments;
	o.nr_comments = 3;
	b = pprof_builder__new(&o);
	assert_non_null(b);
	p = finish_decode(b);
	check_profile(p, 2);
	assert_int_equal(p->n_sample, 0);
	assert_string_equal(str(p, p->sample_type[0]->type), "samples");
	assert_string_equal(str(p, p->sample_type[0]->unit), "count");
	assert_string_equal(str(p, p->sample_type[1]->type), "cpu");
	assert_string_equal(str(p, p->sample_type[1]->unit), "nanoseconds");
	assert_non_null(p->period_type);
	assert_string_equal(str(p, p->period_type->type), "cpu");
	assert_string_equal(str(p, p->period_type->unit), "nanoseconds");
	assert_int_equal(p->period, 10101010);
	assert_int_equal(p->time_nanos, 1764450245000000000LL);
	assert_int_equal(p->duration_nanos, 10000000000LL);
	assert_int_equal(p->n_comment, 3);
	for (i = 0; i < 3; i++)
		assert_string_equal(str(p, p->comment[i]), comments[i]);
	assert_string_equal(str(p, p->default_sample_type), "samples");
	perftools__profiles__profile__free_unpacked(p, NULL);
	pprof_builder__free(b);

	/* No default sample type: index 0, "" */
	o.default_sample_type = NULL;
	o.nr_comments = 0;
	b = pprof_builder__new(&o);
	assert_non_null(b);
	p = finish_decode(b);
	check_profile(p, 2);
	assert_int_equal(p->default_sample_type, 0);
	assert_int_equal(p->n_comment, 0);
	perftools__profiles__profile__free_unpacked(p, NULL);
	pprof_builder__free(b);
}

static void test_dedupe(void **state)
{
	struct pprof_mapping exe = {.start = 0x400000,
				    .limit = 0x500000,
				    .file = "/srv/app",
				    .build_id = "abcdef0123",
				    .has_functions = true};
	/* Same contents, different object: a different mapping (identity is the pointer). */
	struct pprof_mapping exe2 = exe;
	struct pprof_location stack1[] = {
	    {.mapping = &exe, .address = 0x401000, .function = "leaf", .file = "app.c"},
	    {.mapping = &exe, .address = 0x402000, .function = "main", .file = "app.c"},
	};
	struct pprof_location stack2[] = {
	    /* same function (name, file) at another address: one Function, two Locations */
	    {.mapping = &exe, .address = 0x401010, .function = "leaf", .file = "app.c"},
	    {.mapping = &exe, .address = 0x402000, .function = "main", .file = "app.c"},
	    {.mapping = &exe2, .address = 0x402000, .function = "main", .file = "app.c"},
	    /* same name, other file: another Function */
	    {.mapping = &exe, .address = 0x403000, .function = "leaf", .file = "other.c"},
	};
	int64_t v[] = {1, 100};
	struct pprof_builder *b = pprof_builder__new(&cpu_opts);
	const Perftools__Profiles__Location *l0, *l1;
	Perftools__Profiles__Profile *p;
	size_t i, nr_app_c = 0;

	assert_non_null(b);
	assert_int_equal(pprof_builder__add_sample(b, stack1, 2, v, NULL, 0), 0);
	assert_int_equal(pprof_builder__add_sample(b, stack1, 2, v, NULL, 0), 0);
	assert_int_equal(pprof_builder__add_sample(b, stack2, 4, v, NULL, 0), 0);
	p = finish_decode(b);
	check_profile(p, 2);
	assert_int_equal(p->n_sample, 3);
	assert_int_equal(p->n_mapping, 2);
	/* 0x401000, 0x402000, 0x401010, exe2:0x402000, 0x403000 */
	assert_int_equal(p->n_location, 5);
	assert_int_equal(p->n_function, 3); /* leaf@app.c, main@app.c, leaf@other.c */
	/* the same stack twice gives the same location ids */
	assert_int_equal(p->sample[0]->n_location_id, 2);
	assert_memory_equal(p->sample[0]->location_id, p->sample[1]->location_id,
			    2 * sizeof(uint64_t));
	/* main in exe and main in exe2: distinct locations, one function */
	l0 = loc_by_id(p, p->sample[2]->location_id[1]);
	l1 = loc_by_id(p, p->sample[2]->location_id[2]);
	assert_int_not_equal(l0->id, l1->id);
	assert_int_not_equal(l0->mapping_id, l1->mapping_id);
	assert_int_equal(l0->line[0]->function_id, l1->line[0]->function_id);
	assert_int_equal(l0->id, p->sample[0]->location_id[1]);
	/* leaf at two addresses: one function */
	l0 = loc_by_id(p, p->sample[0]->location_id[0]);
	l1 = loc_by_id(p, p->sample[2]->location_id[0]);
	assert_int_not_equal(l0->id, l1->id);
	assert_int_equal(l0->line[0]->function_id, l1->line[0]->function_id);
	assert_int_equal(l0->address, 0x401000);
	assert_int_equal(l1->address, 0x401010);
	/* leaf in other.c is another function */
	l1 = loc_by_id(p, p->sample[2]->location_id[3]);
	assert_int_not_equal(l0->line[0]->function_id, l1->line[0]->function_id);
	assert_string_equal(loc_func(p, l1), "leaf");
	assert_string_equal(str(p, func_by_id(p, l1->line[0]->function_id)->filename), "other.c");
	/* strings once: "app.c" once in the table though used by two functions */
	for (i = 0; i < p->n_string_table; i++)
		nr_app_c += strcmp(p->string_table[i], "app.c") == 0;
	assert_int_equal(nr_app_c, 1);
	perftools__profiles__profile__free_unpacked(p, NULL);
	pprof_builder__free(b);
}

static void test_mapping_fields(void **state)
{
	struct pprof_mapping exe = {.start = 0x400000,
				    .limit = 0x4a0000,
				    .file_offset = 0x1000,
				    .file = "/srv/app",
				    .build_id = "0123456789abcdef",
				    .has_functions = true};
	struct pprof_mapping anon = {.start = 0x7f0000000000, .limit = 0x7f0000100000};
	struct pprof_mapping nofile = {.start = 0x1000,
				       .limit = 0x2000,
				       .file = "/lib/x.so",
				       .build_id = "",
				       .has_functions = true};
	struct pprof_location locs[] = {
	    {.mapping = &exe, .address = 0x401234, .function = "work", .file = "/src/app.c"},
	    {.mapping = &anon, .address = 0x7f0000000010},
	    {.mapping = &nofile, .address = 0x1010, .function = "x_fn"},
	};
	int64_t v[] = {3, 0};
	struct pprof_builder *b = pprof_builder__new(&cpu_opts);
	const Perftools__Profiles__Mapping *m;
	const Perftools__Profiles__Location *l;
	Perftools__Profiles__Profile *p;

	assert_non_null(b);
	assert_int_equal(pprof_builder__add_sample(b, locs, 3, v, NULL, 0), 0);
	p = finish_decode(b);
	check_profile(p, 2);
	assert_int_equal(p->n_mapping, 3);

	l = loc_by_id(p, p->sample[0]->location_id[0]);
	assert_int_equal(l->address, 0x401234);
	assert_string_equal(loc_func(p, l), "work");
	m = map_by_id(p, l->mapping_id);
	assert_int_equal(m->memory_start, 0x400000);
	assert_int_equal(m->memory_limit, 0x4a0000);
	assert_int_equal(m->file_offset, 0x1000);
	assert_string_equal(str(p, m->filename), "/srv/app");
	assert_string_equal(str(p, m->build_id), "0123456789abcdef");
	assert_true(m->has_functions);
	assert_true(m->has_filenames);
	assert_string_equal(str(p, func_by_id(p, l->line[0]->function_id)->filename), "/src/app.c");
	assert_string_equal(str(p, func_by_id(p, l->line[0]->function_id)->system_name), "work");

	l = loc_by_id(p, p->sample[0]->location_id[1]);
	assert_int_equal(l->n_line, 0);
	m = map_by_id(p, l->mapping_id);
	assert_int_equal(m->filename, 0);
	assert_int_equal(m->build_id, 0);
	assert_false(m->has_functions);
	assert_false(m->has_filenames);

	/* functions without files: has_functions but not has_filenames */
	l = loc_by_id(p, p->sample[0]->location_id[2]);
	m = map_by_id(p, l->mapping_id);
	assert_string_equal(str(p, m->filename), "/lib/x.so");
	assert_int_equal(m->build_id, 0);
	assert_true(m->has_functions);
	assert_false(m->has_filenames);
	assert_int_equal(func_by_id(p, l->line[0]->function_id)->filename, 0);
	perftools__profiles__profile__free_unpacked(p, NULL);
	pprof_builder__free(b);
}

static void test_null_mapping_and_function(void **state)
{
	struct pprof_location locs[] = {
	    {.address = 0xffffffff81000010, .function = "do_syscall_64"},
	    {.address = 0xffffffff81000010, .function = "do_syscall_64"}, /* same */
	    {.address = 0xffffffff81000010, .function = "other_fn"},	  /* other fn */
	    {.address = 0xdead},					  /* no function */
	    {.address = 0xdead},					  /* same */
	    {.address = 0xbeef},
	};
	int64_t v[] = {1, 1};
	struct pprof_builder *b = pprof_builder__new(&cpu_opts);
	const Perftools__Profiles__Sample *s;
	const Perftools__Profiles__Location *l;
	Perftools__Profiles__Profile *p;
	size_t i;

	assert_non_null(b);
	assert_int_equal(pprof_builder__add_sample(b, locs, 6, v, NULL, 0), 0);
	p = finish_decode(b);
	check_profile(p, 2);
	assert_int_equal(p->n_mapping, 0);
	assert_int_equal(p->n_location, 4);
	assert_int_equal(p->n_function, 2);
	s = p->sample[0];
	assert_int_equal(s->n_location_id, 6);
	assert_int_equal(s->location_id[0], s->location_id[1]);
	assert_int_not_equal(s->location_id[0], s->location_id[2]);
	assert_int_equal(s->location_id[3], s->location_id[4]);
	assert_int_not_equal(s->location_id[3], s->location_id[5]);
	for (i = 0; i < 6; i++) {
		l = loc_by_id(p, s->location_id[i]);
		assert_int_equal(l->mapping_id, 0);
		assert_int_equal(l->address, locs[i].address);
		if (locs[i].function)
			assert_string_equal(loc_func(p, l), locs[i].function);
		else
			assert_null(loc_func(p, l));
	}
	perftools__profiles__profile__free_unpacked(p, NULL);
	pprof_builder__free(b);
}

static void test_samples_and_labels(void **state)
{
	struct pprof_mapping exe = {
	    .start = 0x400000, .limit = 0x500000, .file = "/srv/app", .has_functions = true};
	struct pprof_location locs[] = {
	    {.mapping = &exe, .address = 0x401000, .function = "leaf"},
	    {.mapping = &exe, .address = 0x402000, .function = "mid"},
	    {.mapping = &exe, .address = 0x403000, .function = "main"},
	};
	struct pprof_label labels[] = {
	    {.key = "pid", .str = "4242"},
	    {.key = "comm", .str = "app"},
	    {.key = "stage", .str = "compute"},
	    {.key = "gc", .str = "true"},
	};
	int64_t v1[] = {7, 70000}, v2[] = {0, 5}, zero[] = {0, 0};
	struct pprof_builder *b = pprof_builder__new(&cpu_opts);
	const Perftools__Profiles__Sample *s;
	Perftools__Profiles__Profile *p;
	size_t i;

	assert_non_null(b);
	assert_int_equal(pprof_builder__add_sample(b, locs, 3, v1, labels, 3), 0);
	/* all-zero: skipped, not counted */
	assert_int_equal(pprof_builder__add_sample(b, locs, 3, zero, labels, 4), 0);
	/* zero first value but not all zero: kept; no locations allowed */
	assert_int_equal(pprof_builder__add_sample(b, NULL, 0, v2, &labels[3], 1), 0);
	assert_int_equal(pprof_builder__nr_samples(b), 2);
	assert_int_equal(pprof_builder__total(b), 7);
	p = finish_decode(b);
	check_profile(p, 2);
	assert_int_equal(p->n_sample, 2);

	s = p->sample[0];
	assert_int_equal(s->n_location_id, 3);
	for (i = 0; i < 3; i++) /* leaf first, order kept */
		assert_string_equal(loc_func(p, loc_by_id(p, s->location_id[i])), locs[i].function);
	assert_int_equal(s->n_value, 2);
	assert_int_equal(s->value[0], 7);
	assert_int_equal(s->value[1], 70000);
	assert_int_equal(s->n_label, 3);
	for (i = 0; i < 3; i++) {
		assert_string_equal(str(p, s->label[i]->key), labels[i].key);
		assert_string_equal(str(p, s->label[i]->str), labels[i].str);
		assert_int_equal(s->label[i]->num, 0);
	}

	s = p->sample[1];
	assert_int_equal(s->n_location_id, 0);
	assert_int_equal(s->value[0], 0);
	assert_int_equal(s->value[1], 5);
	assert_int_equal(s->n_label, 1);
	assert_string_equal(str(p, s->label[0]->key), "gc");
	assert_string_equal(str(p, s->label[0]->str), "true");
	perftools__profiles__profile__free_unpacked(p, NULL);

	/* The builder stays usable after finish */
	assert_int_equal(pprof_builder__add_sample(b, locs, 1, v1, NULL, 0), 0);
	p = finish_decode(b);
	check_profile(p, 2);
	assert_int_equal(p->n_sample, 3);
	assert_int_equal(p->n_location, 3);
	perftools__profiles__profile__free_unpacked(p, NULL);
	pprof_builder__free(b);
}

/* Source lines: a location's inlined functions come first in Location.line, innermost first, its
 * own function last; functions keep their files and first lines; mappings say they have lines. */
static void test_inline_lines(void **state)
{
	struct pprof_mapping exe = {
	    .start = 0x400000, .limit = 0x500000, .file = "/srv/app", .has_functions = true};
	struct pprof_mapping lib = {.start = 0x7f0000000000,
				    .limit = 0x7f0000100000,
				    .file = "/lib/x.so",
				    .has_functions = true};
	struct pprof_line inl[] = {
	    {.function = "leaf_helper", .file = "/src/util.h", .line = 12, .start_line = 10},
	    {.function = "ns::mid(int)",
	     .system_name = "_ZN2ns3midEi",
	     .file = "/src/app.cc",
	     .line = 40,
	     .start_line = 38},
	};
	struct pprof_location locs[] = {
	    {.mapping = &exe,
	     .address = 0x401000,
	     .function = "outer",
	     .file = "/src/app.cc",
	     .line = 77,
	     .start_line = 70,
	     .inlined = inl,
	     .nr_inlined = 2},
	    {.mapping = &lib, .address = 0x7f0000000100, .function = "x_fn", .file = "/lib/x.so"},
	    {.mapping = &exe,
	     .address = 0x402000,
	     .function = "main",
	     .file = "/src/app.cc",
	     .line = 90,
	     .start_line = 88},
	};
	/* the same address again, named otherwise: the first names stay */
	struct pprof_location again = {.mapping = &exe, .address = 0x401000, .function = "other"};
	int64_t v[] = {1, 10};
	struct pprof_builder *b = pprof_builder__new(&cpu_opts);
	const Perftools__Profiles__Function *f;
	const Perftools__Profiles__Location *l;
	const Perftools__Profiles__Mapping *m;
	Perftools__Profiles__Profile *p;
	static const char *const names[] = {"leaf_helper", "ns::mid(int)", "outer"};
	static const char *const files[] = {"/src/util.h", "/src/app.cc", "/src/app.cc"};
	static const int64_t lines[] = {12, 40, 77}, starts[] = {10, 38, 70};

	assert_non_null(b);
	/* the library's mapping first, whatever the samples meet first */
	assert_int_equal(pprof_builder__add_mapping(b, &lib), 0);
	assert_false(pprof_builder__has_location(b, &exe, 0x401000));
	assert_int_equal(pprof_builder__add_sample(b, locs, 3, v, NULL, 0), 0);
	assert_true(pprof_builder__has_location(b, &exe, 0x401000));
	assert_false(pprof_builder__has_location(b, &exe, 0x401001));
	assert_false(pprof_builder__has_location(b, NULL, 0x401000));
	assert_int_equal(pprof_builder__add_sample(b, &again, 1, v, NULL, 0), 0);
	p = finish_decode(b);
	check_profile(p, 2);
	assert_int_equal(p->n_mapping, 2);
	assert_string_equal(str(p, p->mapping[0]->filename), "/lib/x.so");
	assert_int_equal(p->mapping[0]->id, 1);
	assert_int_equal(p->n_location, 3);

	l = loc_by_id(p, p->sample[0]->location_id[0]);
	assert_int_equal(l->n_line, 3);
	for (int i = 0; i < 3; i++) {
		f = func_by_id(p, l->line[i]->function_id);
		assert_string_equal(str(p, f->name), names[i]);
		assert_string_equal(str(p, f->filename), files[i]);
		assert_int_equal(f->start_line, starts[i]);
		assert_int_equal(l->line[i]->line, lines[i]);
	}
	f = func_by_id(p, l->line[1]->function_id);
	assert_string_equal(str(p, f->system_name), "_ZN2ns3midEi");
	assert_int_equal(p->sample[1]->location_id[0], l->id);
	m = map_by_id(p, l->mapping_id);
	assert_true(m->has_filenames && m->has_line_numbers && m->has_inline_frames);

	/* the library: a file but no lines */
	l = loc_by_id(p, p->sample[0]->location_id[1]);
	assert_int_equal(l->n_line, 1);
	assert_int_equal(l->line[0]->line, 0);
	m = map_by_id(p, l->mapping_id);
	assert_true(m->has_filenames);
	assert_false(m->has_line_numbers || m->has_inline_frames);
	perftools__profiles__profile__free_unpacked(p, NULL);
	pprof_builder__free(b);
}

/* Every allocation in turn fails once: each call reports ENOMEM or succeeds, and the builder stays
 * consistent (a failed sample is not in the profile, later ones are). */
static void test_enomem(void **state)
{
	const char *comments[] = {"one", "two"};
	struct pprof_mapping exe = {.start = 0x400000,
				    .limit = 0x500000,
				    .file = "/srv/app",
				    .build_id = "beef",
				    .has_functions = true};
	struct pprof_location s1[] = {
	    {.mapping = &exe, .address = 0x401000, .function = "leaf", .file = "app.c"},
	    {.address = 0xffffffff81000000, .function = "kfn"},
	    {.mapping = &exe, .address = 0x402000, .function = "main", .file = "app.c"},
	};
	struct pprof_location s2[] = {
	    {.mapping = &exe, .address = 0x403000, .function = "other", .file = "b.c"},
	    {.address = 0x1234},
	    {.mapping = &exe, .address = 0x402000, .function = "main", .file = "app.c"},
	};
	struct pprof_label labels[] = {{"pid", "1"}, {"comm", "app"}};
	int64_t v1[] = {1, 10}, v2[] = {2, 20}, v3[] = {4, 40};
	struct pprof_opts o = cpu_opts;
	uint8_t *buf;
	long k;

	/* Under valgrind, its allocator replaces ours unless run with
	 * --soname-synonyms=somalloc=nouserintercepts */
	alloc_arm(0);
	buf = opaque_malloc(1);
	alloc_disarm();
	if (buf) {
		free(buf);
		skip();
	}
	o.comments = comments;
	o.nr_comments = 2;
	for (k = 0;; k++) {
		Perftools__Profiles__Profile *p;
		struct pprof_builder *b;
		int r1, r2, rf;
		size_t len, want = 1;
		int64_t total = 4;
		bool failed;

		alloc_arm(k);
		b = pprof_builder__new(&o);
		if (!b) {
			int e = errno;

			assert_true(alloc_disarm());
			assert_int_equal(e, ENOMEM);
			continue;
		}
		r1 = pprof_builder__add_sample(b, s1, 3, v1, labels, 2);
		r2 = pprof_builder__add_sample(b, s2, 3, v2, labels, 1);
		rf = pprof_builder__finish(b, &buf, &len);
		failed = alloc_disarm();
		assert_true(r1 == 0 || r1 == -ENOMEM);
		assert_true(r2 == 0 || r2 == -ENOMEM);
		assert_true(rf == 0 || rf == -ENOMEM);
		assert_int_equal(failed, r1 || r2 || rf);
		if (rf == 0) {
			p = decode(buf, len);
			check_profile(p, 2);
			perftools__profiles__profile__free_unpacked(p, NULL);
			free(buf);
		}
		want += !r1 + !r2;
		total += (r1 ? 0 : 1) + (r2 ? 0 : 2);
		assert_int_equal(pprof_builder__add_sample(b, s1, 3, v3, labels, 2), 0);
		assert_int_equal(pprof_builder__nr_samples(b), want);
		assert_int_equal(pprof_builder__total(b), total);
		p = finish_decode(b);
		check_profile(p, 2);
		assert_int_equal(p->n_sample, want);
		assert_int_equal(p->sample[want - 1]->value[0], 4);
		assert_int_equal(p->n_comment, 2);
		perftools__profiles__profile__free_unpacked(p, NULL);
		pprof_builder__free(b);
		if (!failed)
			break; /* k is past the last allocation */
	}
	print_message("%ld allocations, each failed in turn\n", k);
	assert_true(k > 20);
}

/* A synthetic workload: nr_stacks distinct stacks of depth frames over a pool of functions in a
 * few mappings, samples spread over the stacks; values are (count, count * period). Stacks are
 * either paths in a call tree (as real ones: shared frames near the root, distinct near the leaf)
 * or each frame drawn at random (the worst case for gzip). */
struct workload {
	struct pprof_mapping maps[4];
	char **names;
	size_t nr_names, nr_stacks, depth;
	bool random;
	struct pprof_location *stacks; /* nr_stacks x depth, leaf first */
	char (*pids)[16], (*tids)[16]; /* per stack */
};

/* Frame f (leaf first) of stack s; the address names the function, so that (mapping, address)
 * and function agree. */
static void workload_frame(const struct workload *w, size_t s, size_t f, struct pprof_location *l)
{
	size_t k = w->depth - 1 - f, bits = 0, node, fn;
	const struct pprof_mapping *m;

	while (((size_t)1 << bits) < w->nr_stacks)
		bits++;
	/* tree: the frame at distance k from the root is a node shared by the stacks alike in their
	 * top k bits */
	node = k < bits ? s >> (bits - k) : s;
	fn = w->random ? (s * 31 + f * 7 + (s >> 3) * f) : (node * 131 + k * 7919);
	fn %= w->nr_names;
	m = &w->maps[fn % 4];
	*l = (struct pprof_location){.mapping = m,
				     .address = m->start + 0x1000 + fn * 16,
				     .function = w->names[fn],
				     .file = "src.c"};
}

static void workload_init(struct workload *w, size_t nr_names, size_t nr_stacks, size_t depth,
			  bool random)
{
	static const char *files[] = {"/srv/app", "/usr/lib/libc.so.6", "/usr/lib/libssl.so.3",
				      "[kernel.kallsyms]"};
	size_t i, f;

	for (i = 0; i < 4; i++)
		w->maps[i] = (struct pprof_mapping){.start = (i + 1) << 32,
						    .limit = ((i + 1) << 32) + (1 << 30),
						    .file = files[i],
						    .build_id = i == 3 ? NULL : "feedface",
						    .has_functions = true};
	w->names = calloc(nr_names, sizeof(*w->names));
	assert_non_null(w->names);
	for (i = 0; i < nr_names; i++)
		assert_true(asprintf(&w->names[i], "pkg%zu.function_number_%zu", i % 17, i) > 0);
	w->nr_names = nr_names;
	w->nr_stacks = nr_stacks;
	w->depth = depth;
	w->random = random;
	w->stacks = calloc(nr_stacks * depth, sizeof(*w->stacks));
	w->pids = calloc(nr_stacks, sizeof(*w->pids));
	w->tids = calloc(nr_stacks, sizeof(*w->tids));
	assert_true(w->stacks && w->pids && w->tids);
	for (i = 0; i < nr_stacks; i++) {
		for (f = 0; f < depth; f++)
			workload_frame(w, i, f, &w->stacks[i * depth + f]);
		snprintf(w->pids[i], sizeof(w->pids[i]), "%zu", 1000 + i % 50);
		snprintf(w->tids[i], sizeof(w->tids[i]), "%zu", 1000 + i % 200);
	}
}

static void workload_free(struct workload *w)
{
	size_t i;

	for (i = 0; i < w->nr_names; i++)
		free(w->names[i]);
	free(w->names);
	free(w->stacks);
	free(w->pids);
	free(w->tids);
}

/* Adds nr_samples samples spread over the stacks; returns the sum of values[0]. */
static int64_t workload_run(struct pprof_builder *b, const struct workload *w, size_t nr_samples)
{
	int64_t total = 0;
	size_t i, s;

	for (i = 0; i < nr_samples; i++) {
		int64_t v[2] = {(int64_t)(i % 5) + 1, ((int64_t)(i % 5) + 1) * 10101010};
		struct pprof_label labels[3] = {{"pid", NULL}, {"tid", NULL}, {"comm", "app"}};

		s = (i * 2654435761u) % w->nr_stacks;
		labels[0].str = w->pids[s];
		labels[1].str = w->tids[s];
		assert_int_equal(
		    pprof_builder__add_sample(b, &w->stacks[s * w->depth], w->depth, v, labels, 3),
		    0);
		total += v[0];
	}
	return total;
}

static void test_totals_big(void **state)
{
	struct pprof_builder *b = pprof_builder__new(&cpu_opts);
	int64_t total, sum0 = 0, sum1 = 0;
	struct workload w;
	Perftools__Profiles__Profile *p;
	size_t i;

	assert_non_null(b);
	workload_init(&w, 3000, 2000, 20, true);
	total = workload_run(b, &w, 50000);
	assert_int_equal(pprof_builder__nr_samples(b), 50000);
	assert_int_equal(pprof_builder__total(b), total);
	p = finish_decode(b);
	check_profile(p, 2);
	assert_int_equal(p->n_sample, 50000);
	for (i = 0; i < p->n_sample; i++) {
		assert_int_equal(p->sample[i]->n_location_id, 20);
		assert_int_equal(p->sample[i]->n_label, 3);
		sum0 += p->sample[i]->value[0];
		sum1 += p->sample[i]->value[1];
	}
	assert_int_equal(sum0, total);
	assert_int_equal(sum1, total * 10101010);
	assert_int_equal(p->n_mapping, 4);
	assert_true(p->n_function <= 3000);
	assert_int_equal(p->n_location, p->n_function); /* one address per function here */
	perftools__profiles__profile__free_unpacked(p, NULL);
	pprof_builder__free(b);
	workload_free(&w);
}

static double now_ms(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static bool under_valgrind(void)
{
	const char *p = getenv("LD_PRELOAD");

	return p && strstr(p, "vgpreload");
}

/* 100k samples x 30 frames over 20k stacks, build and finish; guards against quadratic
 * behaviour and reports the time. */
static void encode_speed(bool random)
{
	struct pprof_builder *b = pprof_builder__new(&cpu_opts);
	double t0, t1, t2, c0, c2;
	struct workload w;
	uint8_t *buf;
	size_t len;

	assert_non_null(b);
	workload_init(&w, 5000, 20000, 30, random);
	t0 = now_ms(CLOCK_MONOTONIC);
	c0 = now_ms(CLOCK_PROCESS_CPUTIME_ID);
	workload_run(b, &w, 100000);
	t1 = now_ms(CLOCK_MONOTONIC);
	assert_int_equal(pprof_builder__finish(b, &buf, &len), 0);
	t2 = now_ms(CLOCK_MONOTONIC);
	c2 = now_ms(CLOCK_PROCESS_CPUTIME_ID);
	print_message("encode 100k samples x 30 frames, %s stacks: add %.1f ms + finish %.1f ms "
		      "wall, %.1f ms CPU, %zu bytes\n",
		      random ? "random" : "tree", t1 - t0, t2 - t1, c2 - c0, len);
	/* Loose bound (machines vary): quadratic work would take minutes. */
	if (!under_valgrind())
		assert_true(t2 - t0 < 3000);
	free(buf);
	pprof_builder__free(b);
	workload_free(&w);
}

static void test_encode_speed(void **state)
{
	encode_speed(false);
	encode_speed(true);
}

/* go tool pprof as judge */

static char *find_in_path(const char *name)
{
	const char *path = getenv("PATH");
	char *copy, *dir, *save = NULL, *found = NULL;

	if (!path)
		return NULL;
	copy = strdup(path);
	assert_non_null(copy);
	for (dir = strtok_r(copy, ":", &save); dir && !found; dir = strtok_r(NULL, ":", &save)) {
		char *cand;

		assert_true(asprintf(&cand, "%s/%s", *dir ? dir : ".", name) > 0);
		if (access(cand, X_OK) == 0)
			found = cand;
		else
			free(cand);
	}
	free(copy);
	return found;
}

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t len = 0;
	FILE *m;

	assert_non_null(f);
	m = open_memstream(&buf, &len);
	assert_non_null(m);
	for (int c; (c = fgetc(f)) != EOF;)
		fputc(c, m);
	fclose(f);
	fclose(m);
	return buf;
}

/* Runs go with args (NULL-terminated) in dir, HOME and PPROF_TMPDIR set to dir; returns the exit
 * status and the output in *out and *err (caller frees). */
static int run_go(const char *go, const char *dir, const char *const *args, char **out, char **err)
{
	char out_path[PATH_MAX], err_path[PATH_MAX];
	const char *argv[16] = {"go"};
	int status, i;
	pid_t pid;

	for (i = 0; args[i]; i++)
		argv[i + 1] = args[i];
	snprintf(out_path, sizeof(out_path), "%s/stdout", dir);
	snprintf(err_path, sizeof(err_path), "%s/stderr", dir);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int fo = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int fe = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		if (fo < 0 || fe < 0 || dup2(fo, 1) < 0 || dup2(fe, 2) < 0 || chdir(dir))
			_exit(126);
		setenv("HOME", dir, 1);
		setenv("PPROF_TMPDIR", dir, 1);
		setenv("GOCACHE", dir, 1);
		setenv("XDG_CONFIG_HOME", dir, 1);
		unsetenv("PPROF_BINARY_PATH");
		execv(go, (char *const *)argv);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	*out = read_file(out_path);
	*err = read_file(err_path);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static void write_file(const char *path, const uint8_t *buf, size_t len)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

/* The flat value -top prints on the line of function name, or -1. */
static long long top_flat(const char *top, const char *name)
{
	const char *line = top;

	while (line && *line) {
		const char *end = strchr(line, '\n');
		size_t n = end ? (size_t)(end - line) : strlen(line), nl = strlen(name);
		long long flat;

		if (n > nl && line[n - nl - 1] == ' ' && !strncmp(line + n - nl, name, nl) &&
		    sscanf(line, "%lld", &flat) == 1)
			return flat;
		line = end ? end + 1 : NULL;
	}
	return -1;
}

static void assert_quiet(const char *err, const char *what)
{
	if (strstr(err, "Warning") || strstr(err, "warning") || strstr(err, "unsymbolizable") ||
	    strstr(err, "symbolization failed") || strstr(err, "not available"))
		fail_msg("go tool pprof %s wrote to stderr:\n%s", what, err);
}

struct go_env {
	char *go;	    /* NULL: not in PATH */
	char dir[PATH_MAX]; /* temp dir: the profiles, HOME and PPROF_TMPDIR */
};

static int go_setup(void **state)
{
	const char *tmp = getenv("TMPDIR");
	struct go_env *g = calloc(1, sizeof(*g));

	if (!g)
		return -1;
	g->go = find_in_path("go");
	snprintf(g->dir, sizeof(g->dir), "%s/test_pprof.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(g->dir)) {
		free(g->go);
		free(g);
		return -1;
	}
	*state = g;
	return 0;
}

static int go_teardown(void **state)
{
	struct go_env *g = *state;
	int err = nftw(g->dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);

	free(g->go);
	free(g);
	return err;
}

/* A small CPU profile in dir/name: tp_main calls tp_hot_leaf (nr_hot samples, under a kernel
 * frame without mapping) and tp_cold_leaf (nr_cold samples). */
static void write_go_profile(const struct go_env *g, const char *name, bool has_functions,
			     int nr_hot, int nr_cold)
{
	struct pprof_mapping exe = {.start = 0x400000,
				    .limit = 0x500000,
				    .file_offset = 0,
				    .file = "/nonexistent/tailprof-test/app",
				    .build_id = "0123456789abcdef0123",
				    .has_functions = has_functions};
	struct pprof_line inlined = {
	    .function = "tp_inlined_helper", .file = "app.c", .line = 12, .start_line = 10};
	struct pprof_location hot[] = {
	    {.mapping = &exe,
	     .address = 0x401000,
	     .function = "tp_hot_leaf",
	     .file = "app.c",
	     .line = 31,
	     .start_line = 30,
	     .inlined = &inlined,
	     .nr_inlined = 1},
	    {.mapping = &exe, .address = 0x402000, .function = "tp_main", .file = "app.c"},
	    {.address = 0xffffffff81000010, .function = "kernel_entry"},
	};
	struct pprof_location cold[] = {
	    {.mapping = &exe, .address = 0x401800, .function = "tp_cold_leaf", .file = "app.c"},
	    {.mapping = &exe, .address = 0x402000, .function = "tp_main", .file = "app.c"},
	};
	struct pprof_label labels[] = {{"pid", "4242"}, {"comm", "app"}};
	struct pprof_builder *b = pprof_builder__new(&cpu_opts);
	int64_t v[] = {1, 10101010};
	char path[PATH_MAX + 64];
	uint8_t *buf;
	size_t len;
	int i;

	assert_non_null(b);
	for (i = 0; i < nr_hot; i++)
		assert_int_equal(pprof_builder__add_sample(b, hot, 3, v, labels, 2), 0);
	for (i = 0; i < nr_cold; i++)
		assert_int_equal(pprof_builder__add_sample(b, cold, 2, v, labels, 1), 0);
	assert_int_equal(pprof_builder__finish(b, &buf, &len), 0);
	snprintf(path, sizeof(path), "%s/%s", g->dir, name);
	write_file(path, buf, len);
	free(buf);
	pprof_builder__free(b);
}

/* The output of go with args in g's directory, which must succeed without a word on stderr
 * (malloc'd: the caller frees it). */
static char *go_quiet(const struct go_env *g, const char *const *args)
{
	char *out, *err;

	assert_int_equal(run_go(g->go, g->dir, args, &out, &err), 0);
	assert_quiet(err, args[2]);
	free(err);
	return out;
}

static void test_go_pprof(void **state)
{
	const char *raw[] = {"tool", "pprof", "-raw", "-symbolize=none", "p.pb.gz", NULL};
	const char *top_none[] = {"tool", "pprof", "-top", "-symbolize=none", "p.pb.gz", NULL};
	const char *top_local[] = {"tool", "pprof", "-top", "p.pb.gz", NULL};
	const char *traces[] = {"tool", "pprof", "-traces", "p.pb.gz", NULL};
	const char *diff[] = {"tool", "pprof", "-top", "-diff_base=base.pb.gz", "p.pb.gz", NULL};
	const char *lines[] = {"tool", "pprof", "-top", "-lines", "p.pb.gz", NULL};
	const char *control[] = {"tool", "pprof", "-top", "unsym.pb.gz", NULL};
	struct go_env *g = *state;
	char *out, *err;

	if (!g->go) {
		const char *ci = getenv("CI");

		if (ci && !strcmp(ci, "true"))
			fail_msg("go not in PATH and CI=true: go tool pprof is the judge");
		skip();
	}
	write_go_profile(g, "p.pb.gz", true, 200, 100);
	write_go_profile(g, "base.pb.gz", true, 50, 100);
	write_go_profile(g, "unsym.pb.gz", false, 200, 100);

	out = go_quiet(g, raw);
	assert_non_null(strstr(out, "PeriodType: cpu nanoseconds"));
	assert_non_null(strstr(out, "Samples:"));
	assert_non_null(strstr(out, "tp_hot_leaf"));
	assert_non_null(strstr(out, "0123456789abcdef0123"));
	free(out);

	/* default_sample_type "samples": -top shows counts */
	out = go_quiet(g, top_none);
	/* the hot leaf's time is in the function inlined into it */
	assert_int_equal(top_flat(out, "tp_inlined_helper (inline)"), 200);
	assert_int_equal(top_flat(out, "tp_hot_leaf"), 0);
	assert_int_equal(top_flat(out, "tp_cold_leaf"), 100);
	assert_int_equal(top_flat(out, "tp_main"), 0);
	assert_non_null(strstr(out, "of 300 total"));
	free(out);

	/* With local symbolization on, has_functions must keep pprof from touching the binary. */
	out = go_quiet(g, top_local);
	assert_int_equal(top_flat(out, "tp_inlined_helper (inline)"), 200);
	free(out);

	/* -lines: file and line of each, the inlined function's and its caller's */
	out = go_quiet(g, lines);
	assert_int_equal(top_flat(out, "tp_inlined_helper app.c:12 (inline)"), 200);
	assert_int_equal(top_flat(out, "tp_hot_leaf app.c:31"), 0);
	free(out);

	out = go_quiet(g, traces);
	assert_non_null(strstr(out, "tp_inlined_helper"));
	assert_non_null(strstr(out, "tp_hot_leaf"));
	assert_non_null(strstr(out, "kernel_entry"));
	assert_non_null(strstr(out, "pid:  4242"));
	free(out);

	/* 200 - 50 hot samples more than the base, cold unchanged */
	out = go_quiet(g, diff);
	assert_int_equal(top_flat(out, "tp_inlined_helper (inline)"), 150);
	free(out);

	/* Control: without has_functions pprof tries the missing binary and says so, so the
	 * checks above would have seen it. */
	assert_int_equal(run_go(g->go, g->dir, control, &out, &err), 0);
	assert_non_null(strstr(err, "symbolization failed"));
	free(out);
	free(err);
}

/* An optional argument runs only the tests whose names match it (cmocka pattern). */
int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_bad_opts),
	    cmocka_unit_test(test_header_roundtrip),
	    cmocka_unit_test(test_dedupe),
	    cmocka_unit_test(test_mapping_fields),
	    cmocka_unit_test(test_null_mapping_and_function),
	    cmocka_unit_test(test_samples_and_labels),
	    cmocka_unit_test(test_inline_lines),
	    cmocka_unit_test(test_enomem),
	    cmocka_unit_test(test_totals_big),
	    cmocka_unit_test(test_encode_speed),
	    cmocka_unit_test_setup_teardown(test_go_pprof, go_setup, go_teardown),
	};

	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
