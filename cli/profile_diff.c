// SPDX-License-Identifier: GPL-2.0-only
/* tailprof compare --before-profile/--after-profile: two pprof files read here (gzip'd or plain
 * profile.proto, read and inflated to at most MAX_PROFILE_BYTES) and compared by each leaf
 * function's share of the first sample type. One profile a side has no spread, so there are no
 * intervals and no verdicts, and the output says so. */
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "common.h"
#include "format.h"
#include "profile.pb-c.h"
#include "profile_diff.h"

#define READ_CHUNK (64UL << 10)

#define NO_VERDICT_NOTE                                                                            \
	"one profile a side gives no spread, so there are no intervals and no verdicts here; "     \
	"compare windows for those: tailprof compare --before FROM..TO --after FROM..TO"

/* A leaf function's total in one profile. */
struct leaf {
	char *name; /* printable and valid UTF-8; owned */
	double value;
};

/* One profile reduced to its leaves: the sums of the first sample type by leaf name. */
struct profile_sum {
	const char *path;
	char *sample_type; /* "TYPE/UNIT" */
	double total;
	size_t n;
	struct leaf *leaves; /* sorted by name, each name once */
};

/* A function of either profile, with its shares (0..1). */
struct share {
	const char *name;
	double before, after;
};

/* ---- reading ---- */

/* Reads path whole into *buf (*len bytes; the caller frees it). Returns 0, or -1 after printing
 * why not (missing, unreadable, over MAX_PROFILE_BYTES). */
static int read_whole(const char *path, uint8_t **buf, size_t *len)
{
	FILE *f = fopen(path, "rb");
	size_t n = 0, cap = 0, got;
	uint8_t *b = NULL, *p;

	*buf = NULL;
	if (!f) {
		p_err("cannot open %s: %s", path, strerror(errno));
		return -1;
	}
	for (;;) {
		if (n == cap) {
			/* one byte past the limit tells a file that is over it */
			cap = cap ? cap * 2 : READ_CHUNK;
			if (cap > MAX_PROFILE_BYTES + 1)
				cap = MAX_PROFILE_BYTES + 1;
			p = realloc(b, cap);
			if (!p) {
				p_err("cannot read %s: %s", path, strerror(ENOMEM));
				goto fail;
			}
			b = p;
		}
		got = fread(b + n, 1, cap - n, f);
		n += got;
		if (n > MAX_PROFILE_BYTES) {
			p_err("%s: over %llu MiB, more than a profile this reads", path,
			      MAX_PROFILE_BYTES >> 20);
			goto fail;
		}
		if (!got)
			break;
	}
	if (ferror(f)) {
		p_err("cannot read %s: %s", path, strerror(errno));
		goto fail;
	}
	fclose(f);
	*buf = b;
	*len = n;
	return 0;
fail:
	fclose(f);
	free(b);
	return -1;
}

/* Inflates the gzip data in[0..len) (one member or several in a row) into *out (*out_len bytes;
 * the caller frees it), at most MAX_PROFILE_BYTES: more is a gzip bomb, not a profile. Returns 0,
 * or -1 after printing what is wrong with path. */
static int gunzip(const char *path, const uint8_t *in, size_t len, uint8_t **out, size_t *out_len)
{
	size_t cap = len < READ_CHUNK / 4 ? READ_CHUNK : len * 4, n = 0;
	z_stream zs = {.next_in = (uint8_t *)in, .avail_in = (uInt)len};
	uint8_t *b = NULL, *p;
	int rc;

	*out = NULL;
	if (inflateInit2(&zs, 15 + 16) != Z_OK) {
		p_err("cannot inflate %s: %s", path, zs.msg ? zs.msg : "zlib failed to start");
		return -1;
	}
	for (;;) {
		if (n == cap || !b) {
			if (b && cap >= MAX_PROFILE_BYTES) {
				p_err(
				    "%s: inflates to more than %llu MiB; not a profile this reads "
				    "(a gzip bomb?)",
				    path, MAX_PROFILE_BYTES >> 20);
				goto fail;
			}
			cap = b ? cap * 2 : cap;
			if (cap > MAX_PROFILE_BYTES)
				cap = MAX_PROFILE_BYTES;
			p = realloc(b, cap);
			if (!p) {
				p_err("cannot inflate %s: %s", path, strerror(ENOMEM));
				goto fail;
			}
			b = p;
		}
		zs.next_out = b + n;
		zs.avail_out = (uInt)(cap - n);
		rc = inflate(&zs, Z_NO_FLUSH);
		n = cap - zs.avail_out;
		if (rc == Z_STREAM_END && !zs.avail_in)
			break;
		if (rc == Z_STREAM_END) {
			/* another gzip member follows, as in concatenated files */
			inflateReset(&zs);
			continue;
		}
		if (rc == Z_OK || (rc == Z_BUF_ERROR && !zs.avail_out))
			continue;
		if (rc == Z_BUF_ERROR)
			p_err("%s: truncated: its gzip data ends before the end of the stream",
			      path);
		else
			p_err("%s: not valid gzip data (%s)", path,
			      zs.msg		  ? zs.msg
			      : rc == Z_MEM_ERROR ? "out of memory"
						  : "zlib error");
		goto fail;
	}
	inflateEnd(&zs);
	*out = b;
	*out_len = n;
	return 0;
fail:
	inflateEnd(&zs);
	free(b);
	return -1;
}

/* Reads and decodes the pprof file path. Returns the profile (free with
 * perftools__profiles__profile__free_unpacked), or NULL after printing why not. */
static Perftools__Profiles__Profile *profile_load(const char *path)
{
	Perftools__Profiles__Profile *p;
	uint8_t *raw, *data;
	size_t len, data_len;
	bool gz;

	if (read_whole(path, &raw, &len))
		return NULL;
	gz = len >= 2 && raw[0] == 0x1f && raw[1] == 0x8b;
	if (gz && gunzip(path, raw, len, &data, &data_len)) {
		free(raw);
		return NULL;
	}
	if (!gz) {
		data = raw;
		data_len = len;
		raw = NULL;
	}
	p = perftools__profiles__profile__unpack(NULL, data_len, data);
	if (!p && gz)
		p_err("%s: its gzip data is not a pprof profile (profile.proto does not decode: "
		      "truncated or another format)",
		      path);
	else if (!p)
		p_err("%s: not a pprof profile: neither gzip data nor a profile.proto message "
		      "(truncated or another format)",
		      path);
	free(raw);
	free(data);
	return p;
}

/* ---- leaves ---- */

/* An id of the profile's locations, functions or mappings, and its index there. */
struct id_index {
	uint64_t id;
	size_t idx;
};

static int id_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct id_index *)a)->id, y = ((const struct id_index *)b)->id;

	return x < y ? -1 : x > y;
}

/* The ids of items[0..n), each a message with a uint64_t id at id_offset, sorted. Returns them
 * (the caller frees them), or NULL when out of memory. */
static struct id_index *index_ids(void *const *items, size_t n, size_t id_offset)
{
	struct id_index *ix = calloc(n ? n : 1, sizeof(*ix));

	if (!ix)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		ix[i].id = *(const uint64_t *)((const char *)items[i] + id_offset);
		ix[i].idx = i;
	}
	qsort(ix, n, sizeof(*ix), id_cmp);
	return ix;
}

/* The index of the item with id; -1 when there is none. */
static ptrdiff_t index_find(const struct id_index *ix, size_t n, uint64_t id)
{
	struct id_index key = {.id = id};
	const struct id_index *hit = bsearch(&key, ix, n, sizeof(*ix), id_cmp);

	return hit ? (ptrdiff_t)hit->idx : -1;
}

/* s as a name to print and to put in JSON: control characters become '?', and when s is not
 * UTF-8 every byte past ASCII does too. Returns a copy (the caller frees it), or NULL. */
static char *clean_name(const char *s)
{
	char *c = strdup(s);
	json_t *j;

	if (!c)
		return NULL;
	for (char *p = c; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	j = json_string(c);
	for (char *p = c; !j && *p; p++)
		if ((unsigned char)*p >= 0x80)
			*p = '?';
	json_decref(j);
	return c;
}

/* The string at index i of p's table into *s. Returns 0, or -1 after printing what of path
 * (named what) points past the table. */
static int string_at(const char *path, const Perftools__Profiles__Profile *p, int64_t i,
		     const char *what, const char **s)
{
	if (i >= 0 && (uint64_t)i < p->n_string_table && p->string_table[i]) {
		*s = p->string_table[i];
		return 0;
	}
	p_err("%s: malformed profile: %s names string %lld, past the string table's %zu", path,
	      what, (long long)i, p->n_string_table);
	return -1;
}

static int leaf_cmp(const void *a, const void *b)
{
	return strcmp(((const struct leaf *)a)->name, ((const struct leaf *)b)->name);
}

/* Appends a leaf of value under name (copied clean) to sum. Returns 0 or -1 (out of memory). */
static int leaf_add(struct profile_sum *sum, const char *name, double value)
{
	if (value == 0)
		return 0;
	sum->leaves[sum->n].name = clean_name(name);
	sum->leaves[sum->n].value = value;
	return sum->leaves[sum->n++].name ? 0 : -1;
}

/* The name of a location without lines (not symbolized): "object+0xOFFSET" where its mapping
 * has a file name, else "0xADDRESS", into buf. */
static const char *location_name(const Perftools__Profiles__Profile *p,
				 const Perftools__Profiles__Location *loc,
				 const struct id_index *maps, char *buf, size_t size)
{
	ptrdiff_t m = loc->mapping_id ? index_find(maps, p->n_mapping, loc->mapping_id) : -1;
	const Perftools__Profiles__Mapping *map = m >= 0 ? p->mapping[m] : NULL;
	const char *file = NULL, *base;

	if (map && map->filename > 0 && (uint64_t)map->filename < p->n_string_table)
		file = p->string_table[map->filename];
	if (!file || !*file) {
		snprintf(buf, size, "0x%llx", (unsigned long long)loc->address);
		return buf;
	}
	base = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
	snprintf(buf, size, "%s+0x%llx", base,
		 (unsigned long long)(loc->address - map->memory_start + map->file_offset));
	return buf;
}

/* Turns the sums by function and by location (without lines) into sum's leaves, sorted by
 * name, each name once. Returns 0 or -1 after printing why not. */
static int leaves_build(const Perftools__Profiles__Profile *p, const double *fn_sum,
			const double *loc_sum, double nostack, const struct id_index *maps,
			struct profile_sum *sum)
{
	char buf[64];
	size_t i, w;

	sum->leaves = calloc(p->n_function + p->n_location + 1, sizeof(*sum->leaves));
	if (!sum->leaves)
		goto oom;
	for (i = 0; i < p->n_function; i++) {
		const Perftools__Profiles__Function *fn = p->function[i];
		const char *name;

		if (fn_sum[i] == 0)
			continue;
		if (string_at(sum->path, p, fn->name, "a function", &name))
			return -1;
		if (!*name && fn->system_name &&
		    string_at(sum->path, p, fn->system_name, "a function", &name))
			return -1;
		if (!*name) {
			snprintf(buf, sizeof(buf), "[function %llu]", (unsigned long long)fn->id);
			name = buf;
		}
		if (leaf_add(sum, name, fn_sum[i]))
			goto oom;
	}
	for (i = 0; i < p->n_location; i++)
		if (loc_sum[i] != 0 &&
		    leaf_add(sum, location_name(p, p->location[i], maps, buf, sizeof(buf)),
			     loc_sum[i]))
			goto oom;
	if (leaf_add(sum, "[no stack]", nostack))
		goto oom;
	/* functions of one name (other files, other ids) are one leaf */
	qsort(sum->leaves, sum->n, sizeof(*sum->leaves), leaf_cmp);
	for (i = 0, w = 0; i < sum->n; i++) {
		if (w && !strcmp(sum->leaves[w - 1].name, sum->leaves[i].name)) {
			sum->leaves[w - 1].value += sum->leaves[i].value;
			free(sum->leaves[i].name);
			continue;
		}
		sum->leaves[w++] = sum->leaves[i];
	}
	sum->n = w;
	return 0;
oom:
	p_err("cannot read %s: %s", sum->path, strerror(ENOMEM));
	return -1;
}

/* Sums p's first sample type by leaf function into sum (its path set by the caller). Returns 0,
 * or -1 after printing what is wrong (no sample types, a dangling id, no samples). */
static int profile_sum(const Perftools__Profiles__Profile *p, struct profile_sum *sum)
{
	struct id_index *locs = NULL, *fns = NULL, *maps = NULL;
	double *fn_sum = NULL, *loc_sum = NULL, nostack = 0;
	const char *path = sum->path, *type, *unit;
	char what[128];
	int ret = -1;

	if (!p->n_sample_type || !p->sample_type[0]) {
		p_err("%s: malformed profile: no sample types (is it a pprof profile?)", path);
		return -1;
	}
	if (string_at(path, p, p->sample_type[0]->type, "the first sample type", &type) ||
	    string_at(path, p, p->sample_type[0]->unit, "the first sample type", &unit))
		return -1;
	snprintf(what, sizeof(what), "%s/%s", type, unit);
	sum->sample_type = clean_name(what);
	locs = index_ids((void *const *)p->location, p->n_location,
			 offsetof(Perftools__Profiles__Location, id));
	fns = index_ids((void *const *)p->function, p->n_function,
			offsetof(Perftools__Profiles__Function, id));
	maps = index_ids((void *const *)p->mapping, p->n_mapping,
			 offsetof(Perftools__Profiles__Mapping, id));
	fn_sum = calloc(p->n_function + 1, sizeof(*fn_sum));
	loc_sum = calloc(p->n_location + 1, sizeof(*loc_sum));
	if (!sum->sample_type || !locs || !fns || !maps || !fn_sum || !loc_sum) {
		p_err("cannot read %s: %s", path, strerror(ENOMEM));
		goto out;
	}
	for (size_t i = 0; i < p->n_sample; i++) {
		const Perftools__Profiles__Sample *s = p->sample[i];
		const Perftools__Profiles__Location *loc;
		ptrdiff_t l, f;
		double v;

		if (!s->n_value) {
			p_err("%s: malformed profile: sample %zu has no values", path, i);
			goto out;
		}
		if (s->value[0] < 0) {
			/* a diff profile (pprof -diff_base): its values are changes, not shares */
			p_err("%s: sample %zu has a negative value (%lld): a diff profile? compare "
			      "the "
			      "two original profiles instead",
			      path, i, (long long)s->value[0]);
			goto out;
		}
		v = (double)s->value[0];
		sum->total += v;
		if (!s->n_location_id) {
			nostack += v;
			continue;
		}
		/* the leaf: the first location's first line, the innermost inlined function */
		l = index_find(locs, p->n_location, s->location_id[0]);
		if (l < 0) {
			p_err("%s: malformed profile: sample %zu refers to location %llu, which it "
			      "does not have",
			      path, i, (unsigned long long)s->location_id[0]);
			goto out;
		}
		loc = p->location[l];
		if (!loc->n_line) {
			loc_sum[l] += v;
			continue;
		}
		f = index_find(fns, p->n_function, loc->line[0]->function_id);
		if (f < 0) {
			p_err("%s: malformed profile: location %llu refers to function %llu, which "
			      "it does not have",
			      path, (unsigned long long)loc->id,
			      (unsigned long long)loc->line[0]->function_id);
			goto out;
		}
		fn_sum[f] += v;
	}
	if (!(sum->total > 0)) {
		snprintf(what, sizeof(what), "%g", sum->total);
		p_err("%s: its %s values sum to %s; there are no shares to compare", path,
		      sum->sample_type, what);
		goto out;
	}
	ret = leaves_build(p, fn_sum, loc_sum, nostack, maps, sum);
out:
	free(locs);
	free(fns);
	free(maps);
	free(fn_sum);
	free(loc_sum);
	return ret;
}

static void profile_sum_free(struct profile_sum *sum)
{
	for (size_t i = 0; i < sum->n; i++)
		free(sum->leaves[i].name);
	free(sum->leaves);
	free(sum->sample_type);
}

/* ---- the comparison ---- */

static double absd(double x)
{
	return x < 0 ? -x : x;
}

/* Larger changes first, then by name. */
static int share_cmp(const void *a, const void *b)
{
	const struct share *x = a, *y = b;
	double dx = absd(x->after - x->before), dy = absd(y->after - y->before);

	if (dx != dy)
		return dx > dy ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* The functions of both profiles with their shares, larger changes first, into *out (*n of
 * them; the caller frees the array, the names are the sums'). Returns 0 or -1 (out of memory). */
static int shares_build(const struct profile_sum *b, const struct profile_sum *a,
			struct share **out, size_t *n)
{
	struct share *s = calloc(b->n + a->n + 1, sizeof(*s));
	size_t i = 0, j = 0, k = 0;

	if (!s)
		return -1;
	/* both lists are sorted by name: merge them */
	while (i < b->n || j < a->n) {
		int c = i == b->n   ? 1
			: j == a->n ? -1
				    : strcmp(b->leaves[i].name, a->leaves[j].name);

		s[k].name = c <= 0 ? b->leaves[i].name : a->leaves[j].name;
		if (c <= 0)
			s[k].before = b->leaves[i++].value / b->total;
		if (c >= 0)
			s[k].after = a->leaves[j++].value / a->total;
		k++;
	}
	qsort(s, k, sizeof(*s), share_cmp);
	*out = s;
	*n = k;
	return 0;
}

static int print_json(const struct profile_sum *b, const struct profile_sum *a,
		      const struct share *s, size_t n, const char *note)
{
	json_t *doc = json_object(), *fns = json_array();
	char *path[2] = {clean_name(b->path), clean_name(a->path)};
	int ret = 0;

	if (!doc || !fns || !path[0] || !path[1])
		OOM_ABORT();
	json_object_set_new(doc, "before_profile", json_string(path[0]));
	json_object_set_new(doc, "after_profile", json_string(path[1]));
	json_object_set_new(doc, "sample_type", json_string(b->sample_type));
	for (size_t i = 0; i < n; i++) {
		json_t *f = json_pack("{s:s, s:f, s:f, s:f}", "function", s[i].name, "before_share",
				      s[i].before, "after_share", s[i].after, "diff",
				      s[i].after - s[i].before);

		if (!f || json_array_append_new(fns, f))
			OOM_ABORT();
	}
	json_object_set_new(doc, "functions", fns);
	json_object_set_new(doc, "note", json_string(note));
	if (json_dumpf(doc, stdout, JSON_INDENT(2)) || putchar('\n') == EOF)
		ret = 1; /* reported once, by the final flush in main() */
	json_decref(doc);
	free(path[0]);
	free(path[1]);
	return ret;
}

enum diff_col {
	DC_NAME,
	DC_BEFORE,
	DC_AFTER,
	DC_CHANGE,
	DC__COUNT,
};

static int print_text(const struct profile_sum *b, const struct profile_sum *a,
		      const struct share *s, size_t n, size_t all, const char *note)
{
	static const char *const headers[DC__COUNT] = {"FUNCTION", "BEFORE", "AFTER", "CHANGE"};
	struct table t = {.rows = n, .cols = DC__COUNT, .headers = headers, .left = 1u << DC_NAME};
	const struct profile_sum *sides[2] = {b, a};
	char *path;

	for (int i = 0; i < 2; i++) {
		path = clean_name(sides[i]->path);
		if (!path)
			OOM_ABORT();
		printf("%-7s %s: %s, total %.15g\n", i ? "after:" : "before:", path,
		       sides[i]->sample_type, sides[i]->total);
		free(path);
	}
	putchar('\n');
	if (table__alloc(&t))
		return 1;
	for (size_t i = 0; i < n; i++) {
		text_cut(s[i].name, MAX_NAME_CHARS, table__cell(&t, i, DC_NAME), TABLE_CELL_SIZE);
		snprintf(table__cell(&t, i, DC_BEFORE), TABLE_CELL_SIZE, "%.2f%%",
			 s[i].before * 100);
		snprintf(table__cell(&t, i, DC_AFTER), TABLE_CELL_SIZE, "%.2f%%", s[i].after * 100);
		snprintf(table__cell(&t, i, DC_CHANGE), TABLE_CELL_SIZE, "%+.2fpp",
			 (s[i].after - s[i].before) * 100);
	}
	table__print(&t, "");
	printf("\nthe %zu of %zu functions whose share of %s changed most, by leaf frame (pprof's "
	       "flat); change in percentage points (pp)\n%s\n",
	       n, all, b->sample_type, note);
	return 0;
}

int profile_diff(const char *before, const char *after, size_t top, bool json)
{
	struct profile_sum sums[2] = {{.path = before}, {.path = after}};
	Perftools__Profiles__Profile *p;
	struct share *shares = NULL;
	char *note = NULL;
	size_t n = 0;
	int ret = 1;

	for (int i = 0; i < 2; i++) {
		int err;

		p = profile_load(sums[i].path);
		if (!p)
			goto out;
		err = profile_sum(p, &sums[i]);
		perftools__profiles__profile__free_unpacked(p, NULL);
		if (err)
			goto out;
	}
	if (shares_build(&sums[0], &sums[1], &shares, &n)) {
		p_err("cannot compare %s and %s: %s", before, after, strerror(ENOMEM));
		goto out;
	}
	if (strcmp(sums[0].sample_type, sums[1].sample_type))
		note = xasprintf("the first sample types differ: %s before, %s after; %s",
				 sums[0].sample_type, sums[1].sample_type, NO_VERDICT_NOTE);
	else
		note = xasprintf("%s", NO_VERDICT_NOTE);
	if (json)
		ret = print_json(&sums[0], &sums[1], shares, n < top ? n : top, note);
	else
		ret = print_text(&sums[0], &sums[1], shares, n < top ? n : top, n, note);
out:
	free(note);
	free(shares);
	profile_sum_free(&sums[0]);
	profile_sum_free(&sums[1]);
	return ret;
}
