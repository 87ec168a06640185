// SPDX-License-Identifier: GPL-2.0-only
/* The pure pprof encoder: interns samples' strings, mappings, functions and locations, then packs
 * profile.proto with protobuf-c and gzips it with zlib. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "array.h"
#include "gzip.h"
#include "hashmap.h"
#include "pprof.h"
#include "profile.pb-c.h"

#define PPROF_MAX_SAMPLE_TYPES 8

/* Interned entries are indexes into the arrays below; ids in the proto are index + 1. */
struct pprof_mapping_entry {
	const struct pprof_mapping *key;
	uint64_t start, limit, file_offset;
	uint32_t filename, build_id; /* string indexes */
	bool has_functions, has_filenames, has_line_numbers;
};

struct pprof_function_entry {
	uint32_t name, system_name, filename; /* string indexes; filename 0 when unknown */
	int64_t start_line;
};

/* A Line of a location: lines[line_off .. line_off + nr_lines) of the builder. */
struct pprof_line_entry {
	uint32_t function_id;
	int64_t line;
};

struct pprof_location_entry {
	const struct pprof_mapping *mapping; /* the key, so that a hit needs no mapping lookup */
	uint64_t address;
	uint32_t mapping_id;  /* 0: no mapping */
	uint32_t function_id; /* the outermost function (part of the key without a mapping); 0: no
			       * Line */
	size_t line_off;
	uint32_t nr_lines;
};

struct pprof_sample_entry {
	size_t loc_off;	  /* first of nr_locs in loc_ids */
	size_t label_off; /* first of nr_labels in labels */
	uint32_t nr_locs, nr_labels;
};

struct pprof_label_entry {
	uint32_t key, str; /* string indexes */
};

struct pprof_builder {
	char **strs; /* the string table; strs[0] is "" */
	size_t nr_strs, cap_strs;
	struct hashmap str_index;

	struct pprof_mapping_entry *mappings;
	size_t nr_mappings, cap_mappings;
	struct hashmap mapping_index;

	struct pprof_function_entry *functions;
	size_t nr_functions, cap_functions;
	struct hashmap function_index;

	struct pprof_location_entry *locations;
	size_t nr_locations, cap_locations;
	struct hashmap location_index;
	struct pprof_line_entry *lines; /* of all locations, back to back */
	size_t nr_lines, cap_lines;

	/* Samples live in flat arrays so that adding one allocates nothing in the common case. */
	struct pprof_sample_entry *samples;
	size_t nr_samples, cap_samples;
	uint64_t *loc_ids; /* location ids, leaf first, all samples back to back */
	size_t nr_loc_ids, cap_loc_ids;
	int64_t *values; /* nr_sample_types per sample */
	size_t cap_values;
	struct pprof_label_entry *labels;
	size_t nr_labels, cap_labels;
	int64_t total;

	size_t nr_sample_types;
	uint32_t sample_type[PPROF_MAX_SAMPLE_TYPES], sample_unit[PPROF_MAX_SAMPLE_TYPES];
	uint32_t period_type, period_unit, default_sample_type;
	int64_t period, time_ns, duration_ns;
	uint32_t *comments;
	size_t nr_comments;
};

struct str_key {
	const struct pprof_builder *b;
	const char *s;
};

static bool str_eq(const void *ctx, uint32_t val)
{
	const struct str_key *k = ctx;

	return strcmp(k->b->strs[val], k->s) == 0;
}

/* Interns s (NULL means ""). Returns 0 and *idx, or -ENOMEM. */
static int intern_str(struct pprof_builder *b, const char *s, uint32_t *idx)
{
	struct str_key k = {.b = b, .s = s ? s : ""};
	uint64_t h = hashmap__hash_str(k.s);
	char *copy;
	int err;

	if (hashmap__find(&b->str_index, h, str_eq, &k, idx))
		return 0;
	if (b->nr_strs >= UINT32_MAX - 1)
		return -ENOMEM;
	err = ARRAY_GROW(b->strs, b->cap_strs, b->nr_strs + 1);
	if (err)
		return err;
	copy = strdup(k.s);
	if (!copy)
		return -ENOMEM;
	*idx = b->nr_strs;
	err = hashmap__insert(&b->str_index, h, *idx);
	if (err) {
		free(copy);
		return -ENOMEM;
	}
	b->strs[b->nr_strs++] = copy;
	return 0;
}

struct mapping_key {
	const struct pprof_builder *b;
	const struct pprof_mapping *m;
};

static bool mapping_eq(const void *ctx, uint32_t val)
{
	const struct mapping_key *k = ctx;

	return k->b->mappings[val].key == k->m;
}

/* Interns a mapping by pointer; its fields are copied the first time it is seen. */
static int intern_mapping(struct pprof_builder *b, const struct pprof_mapping *m, uint32_t *idx)
{
	struct mapping_key k = {.b = b, .m = m};
	uint64_t h = hashmap__hash_ptr(m);
	struct pprof_mapping_entry e = {
	    .key = m,
	    .start = m->start,
	    .limit = m->limit,
	    .file_offset = m->file_offset,
	    .has_functions = m->has_functions,
	};
	int err;

	if (hashmap__find(&b->mapping_index, h, mapping_eq, &k, idx))
		return 0;
	err = intern_str(b, m->file, &e.filename);
	if (!err)
		err = intern_str(b, m->build_id, &e.build_id);
	if (!err)
		err = ARRAY_GROW(b->mappings, b->cap_mappings, b->nr_mappings + 1);
	if (!err)
		err = hashmap__insert(&b->mapping_index, h, b->nr_mappings);
	if (err)
		return -ENOMEM;
	*idx = b->nr_mappings;
	b->mappings[b->nr_mappings++] = e;
	return 0;
}

struct function_key {
	const struct pprof_builder *b;
	struct pprof_function_entry f;
};

static bool function_eq(const void *ctx, uint32_t val)
{
	const struct function_key *k = ctx;
	const struct pprof_function_entry *f = &k->b->functions[val];

	return f->name == k->f.name && f->system_name == k->f.system_name &&
	       f->filename == k->f.filename && f->start_line == k->f.start_line;
}

/* Interns a function by (name, system name, file, start line); system_name NULL means name.
 * Returns 0 and its id (index + 1), or -ENOMEM. */
static int intern_function(struct pprof_builder *b, const char *name, const char *system_name,
			   const char *file, int64_t start_line, uint32_t *id)
{
	struct function_key k = {.b = b, .f.start_line = start_line};
	uint32_t idx;
	uint64_t h;
	int err;

	err = intern_str(b, name, &k.f.name);
	if (!err)
		err = intern_str(b, system_name ? system_name : name, &k.f.system_name);
	if (!err)
		err = intern_str(b, file, &k.f.filename);
	if (err)
		return err;
	h = hashmap__combine(hashmap__combine(k.f.name, k.f.system_name),
			     hashmap__combine(k.f.filename, (uint64_t)start_line));
	if (!hashmap__find(&b->function_index, h, function_eq, &k, &idx)) {
		err = ARRAY_GROW(b->functions, b->cap_functions, b->nr_functions + 1);
		if (!err)
			err = hashmap__insert(&b->function_index, h, b->nr_functions);
		if (err)
			return -ENOMEM;
		idx = b->nr_functions;
		b->functions[b->nr_functions++] = k.f;
	}
	*id = idx + 1;
	return 0;
}

struct location_key {
	const struct pprof_builder *b;
	struct pprof_location_entry l;
};

static bool location_eq(const void *ctx, uint32_t val)
{
	const struct location_key *k = ctx;
	const struct pprof_location_entry *l = &k->b->locations[val];

	return l->address == k->l.address && l->mapping == k->l.mapping &&
	       (l->mapping || l->function_id == k->l.function_id);
}

static uint64_t location_hash(const struct pprof_mapping *m, uint64_t address, uint32_t function_id)
{
	return hashmap__mix64(
	    address ^ (m ? (uintptr_t)m * 0x9e3779b97f4a7c15ULL : (uint64_t)function_id << 40));
}

/* Appends the Lines of new location l (at index b->nr_locations): loc's inlined functions, then
 * its function (interned already when function_id is set). Returns 0 or -ENOMEM (nothing then
 * appended). */
static int add_lines(struct pprof_builder *b, const struct pprof_location *loc,
		     struct pprof_location_entry *l)
{
	size_t n = 0, need = loc->nr_inlined + 1;
	bool file = false, line = false;
	int err;

	if (!loc->function)
		return 0;
	err = ARRAY_GROW(b->lines, b->cap_lines, b->nr_lines + need);
	if (err)
		return err;
	for (size_t i = 0; i < loc->nr_inlined; i++) {
		const struct pprof_line *in = &loc->inlined[i];
		uint32_t fid;

		if (!in->function)
			continue;
		err = intern_function(b, in->function, in->system_name, in->file, in->start_line,
				      &fid);
		if (err)
			return err;
		b->lines[b->nr_lines + n++] = (struct pprof_line_entry){fid, in->line};
		file = file || (in->file && in->file[0]);
		line = line || in->line > 0;
	}
	if (!l->function_id) {
		err = intern_function(b, loc->function, loc->system_name, loc->file,
				      loc->start_line, &l->function_id);
		if (err)
			return err;
	}
	b->lines[b->nr_lines + n++] = (struct pprof_line_entry){l->function_id, loc->line};
	file = file || (loc->file && loc->file[0]);
	line = line || loc->line > 0;
	l->line_off = b->nr_lines;
	l->nr_lines = n;
	b->nr_lines += n;
	if (l->mapping_id) {
		struct pprof_mapping_entry *m = &b->mappings[l->mapping_id - 1];

		m->has_filenames = m->has_filenames || file;
		m->has_line_numbers = m->has_line_numbers || line;
	}
	return 0;
}

/* Interns a location by (mapping, address), or by (address, function) without a mapping; with a
 * mapping the first names seen at an address win. Returns 0 and its id, or -ENOMEM. */
static int intern_location(struct pprof_builder *b, const struct pprof_location *loc, uint64_t *id)
{
	struct location_key k = {.b = b, .l.mapping = loc->mapping, .l.address = loc->address};
	uint32_t idx;
	uint64_t h;
	int err;

	/* Without a mapping the function is part of the key; with one, look up first, so that a
	 * repeated frame (most of them) touches no strings. */
	if (!loc->mapping && loc->function) {
		err = intern_function(b, loc->function, loc->system_name, loc->file,
				      loc->start_line, &k.l.function_id);
		if (err)
			return err;
	}
	h = location_hash(loc->mapping, loc->address, k.l.function_id);
	if (hashmap__find(&b->location_index, h, location_eq, &k, &idx)) {
		*id = idx + 1;
		return 0;
	}
	if (loc->mapping) {
		err = intern_mapping(b, loc->mapping, &idx);
		if (err)
			return err;
		k.l.mapping_id = idx + 1;
	}
	err = ARRAY_GROW(b->locations, b->cap_locations, b->nr_locations + 1);
	if (!err)
		err = add_lines(b, loc, &k.l);
	if (!err)
		err = hashmap__insert(&b->location_index, h, b->nr_locations);
	if (err)
		return -ENOMEM;
	idx = b->nr_locations;
	b->locations[b->nr_locations++] = k.l;
	*id = idx + 1;
	return 0;
}

int pprof_builder__add_mapping(struct pprof_builder *b, const struct pprof_mapping *m)
{
	uint32_t idx;

	return intern_mapping(b, m, &idx);
}

bool pprof_builder__has_location(const struct pprof_builder *b, const struct pprof_mapping *m,
				 uint64_t address)
{
	struct location_key k = {.b = b, .l.mapping = m, .l.address = address};
	uint32_t idx;

	return m && hashmap__find(&b->location_index, location_hash(m, address, 0), location_eq, &k,
				  &idx);
}

struct pprof_builder *pprof_builder__new(const struct pprof_opts *opts)
{
	struct pprof_builder *b;
	uint32_t empty;
	size_t i;
	int err;

	if (!opts || !opts->sample_types || opts->nr_sample_types < 1 ||
	    opts->nr_sample_types > PPROF_MAX_SAMPLE_TYPES ||
	    (opts->nr_comments && !opts->comments)) {
		errno = EINVAL;
		return NULL;
	}
	b = calloc(1, sizeof(*b));
	if (!b)
		goto enomem;
	b->nr_sample_types = opts->nr_sample_types;
	b->period = opts->period;
	b->time_ns = opts->time_ns;
	b->duration_ns = opts->duration_ns;
	/* "" first, so that it is index 0 and unset fields read as empty. */
	err = intern_str(b, "", &empty);
	for (i = 0; !err && i < opts->nr_sample_types; i++) {
		err = intern_str(b, opts->sample_types[i].type, &b->sample_type[i]);
		if (!err)
			err = intern_str(b, opts->sample_types[i].unit, &b->sample_unit[i]);
	}
	if (!err)
		err = intern_str(b, opts->period_type.type, &b->period_type);
	if (!err)
		err = intern_str(b, opts->period_type.unit, &b->period_unit);
	if (!err)
		err = intern_str(b, opts->default_sample_type, &b->default_sample_type);
	if (!err && opts->nr_comments) {
		b->comments = calloc(opts->nr_comments, sizeof(*b->comments));
		if (!b->comments)
			err = -ENOMEM;
	}
	for (i = 0; !err && i < opts->nr_comments; i++)
		err = intern_str(b, opts->comments[i], &b->comments[i]);
	if (err)
		goto enomem;
	b->nr_comments = opts->nr_comments;
	return b;
enomem:
	pprof_builder__free(b);
	errno = ENOMEM;
	return NULL;
}

int pprof_builder__add_sample(struct pprof_builder *b, const struct pprof_location *locs,
			      size_t nr_locs, const int64_t *values,
			      const struct pprof_label *labels, size_t nr_labels)
{
	struct pprof_sample_entry *s;
	size_t i, n = b->nr_sample_types;
	bool zero = true;
	int err;

	for (i = 0; i < n; i++)
		zero = zero && values[i] == 0;
	if (zero)
		return 0;
	if (nr_locs > UINT32_MAX || nr_labels > UINT32_MAX || b->nr_samples > SIZE_MAX / n - 1)
		return -ENOMEM;
	/* Reserve everything first: on failure the sample is not added, and interned entries
	 * that no sample references are harmless. */
	err = ARRAY_GROW(b->samples, b->cap_samples, b->nr_samples + 1);
	if (!err)
		err = ARRAY_GROW(b->values, b->cap_values, (b->nr_samples + 1) * n);
	if (!err && nr_locs)
		err = ARRAY_GROW(b->loc_ids, b->cap_loc_ids, b->nr_loc_ids + nr_locs);
	if (!err && nr_labels)
		err = ARRAY_GROW(b->labels, b->cap_labels, b->nr_labels + nr_labels);
	if (err)
		return err;
	for (i = 0; i < nr_locs; i++) {
		err = intern_location(b, &locs[i], &b->loc_ids[b->nr_loc_ids + i]);
		if (err)
			return err;
	}
	for (i = 0; i < nr_labels; i++) {
		struct pprof_label_entry *l = &b->labels[b->nr_labels + i];

		err = intern_str(b, labels[i].key, &l->key);
		if (!err)
			err = intern_str(b, labels[i].str, &l->str);
		if (err)
			return err;
	}
	s = &b->samples[b->nr_samples];
	s->loc_off = b->nr_loc_ids;
	s->nr_locs = nr_locs;
	s->label_off = b->nr_labels;
	s->nr_labels = nr_labels;
	memcpy(&b->values[b->nr_samples * n], values, n * sizeof(*values));
	b->nr_loc_ids += nr_locs;
	b->nr_labels += nr_labels;
	b->nr_samples++;
	b->total += values[0];
	return 0;
}

size_t pprof_builder__nr_samples(const struct pprof_builder *b)
{
	return b->nr_samples;
}

int64_t pprof_builder__total(const struct pprof_builder *b)
{
	return b->total;
}

/* Every protobuf-c message the profile points to, each kind in one allocation. */
struct pprof_msgs {
	Perftools__Profiles__ValueType *vts, **vt_ptrs;
	Perftools__Profiles__Mapping *maps, **map_ptrs;
	Perftools__Profiles__Function *funcs, **func_ptrs;
	Perftools__Profiles__Location *locs, **loc_ptrs;
	Perftools__Profiles__Line *lines, **line_ptrs;
	Perftools__Profiles__Sample *samples, **sample_ptrs;
	Perftools__Profiles__Label *labels, **label_ptrs;
	int64_t *comments;
};

static void pprof_msgs__free(struct pprof_msgs *m)
{
	free(m->vts);
	free(m->vt_ptrs);
	free(m->maps);
	free(m->map_ptrs);
	free(m->funcs);
	free(m->func_ptrs);
	free(m->locs);
	free(m->loc_ptrs);
	free(m->lines);
	free(m->line_ptrs);
	free(m->samples);
	free(m->sample_ptrs);
	free(m->labels);
	free(m->label_ptrs);
	free(m->comments);
}

/* calloc that never returns NULL for n == 0, so that NULL always means ENOMEM. */
static void *alloc_n(size_t n, size_t size)
{
	return calloc(n ? n : 1, size);
}

static int build_msgs(const struct pprof_builder *b, struct pprof_msgs *m,
		      Perftools__Profiles__Profile *p)
{
	size_t nr_vts = b->nr_sample_types + 1, i, j;

	m->vts = alloc_n(nr_vts, sizeof(*m->vts));
	m->vt_ptrs = alloc_n(nr_vts, sizeof(*m->vt_ptrs));
	m->maps = alloc_n(b->nr_mappings, sizeof(*m->maps));
	m->map_ptrs = alloc_n(b->nr_mappings, sizeof(*m->map_ptrs));
	m->funcs = alloc_n(b->nr_functions, sizeof(*m->funcs));
	m->func_ptrs = alloc_n(b->nr_functions, sizeof(*m->func_ptrs));
	m->locs = alloc_n(b->nr_locations, sizeof(*m->locs));
	m->loc_ptrs = alloc_n(b->nr_locations, sizeof(*m->loc_ptrs));
	m->lines = alloc_n(b->nr_lines, sizeof(*m->lines));
	m->line_ptrs = alloc_n(b->nr_lines, sizeof(*m->line_ptrs));
	m->samples = alloc_n(b->nr_samples, sizeof(*m->samples));
	m->sample_ptrs = alloc_n(b->nr_samples, sizeof(*m->sample_ptrs));
	m->labels = alloc_n(b->nr_labels, sizeof(*m->labels));
	m->label_ptrs = alloc_n(b->nr_labels, sizeof(*m->label_ptrs));
	m->comments = alloc_n(b->nr_comments, sizeof(*m->comments));
	if (!m->vts || !m->vt_ptrs || !m->maps || !m->map_ptrs || !m->funcs || !m->func_ptrs ||
	    !m->locs || !m->loc_ptrs || !m->lines || !m->line_ptrs || !m->samples ||
	    !m->sample_ptrs || !m->labels || !m->label_ptrs || !m->comments)
		return -ENOMEM;

	for (i = 0; i < nr_vts; i++) {
		perftools__profiles__value_type__init(&m->vts[i]);
		m->vt_ptrs[i] = &m->vts[i];
	}
	for (i = 0; i < b->nr_sample_types; i++) {
		m->vts[i].type = b->sample_type[i];
		m->vts[i].unit = b->sample_unit[i];
	}
	m->vts[b->nr_sample_types].type = b->period_type;
	m->vts[b->nr_sample_types].unit = b->period_unit;

	for (i = 0; i < b->nr_mappings; i++) {
		const struct pprof_mapping_entry *e = &b->mappings[i];
		Perftools__Profiles__Mapping *pm = &m->maps[i];

		perftools__profiles__mapping__init(pm);
		pm->id = i + 1;
		pm->memory_start = e->start;
		pm->memory_limit = e->limit;
		pm->file_offset = e->file_offset;
		pm->filename = e->filename;
		pm->build_id = e->build_id;
		pm->has_functions = e->has_functions;
		pm->has_filenames = e->has_functions && e->has_filenames;
		/* source lines come with their inline chains (source_lines.h) */
		pm->has_line_numbers = e->has_functions && e->has_line_numbers;
		pm->has_inline_frames = pm->has_line_numbers;
		m->map_ptrs[i] = pm;
	}
	for (i = 0; i < b->nr_functions; i++) {
		Perftools__Profiles__Function *pf = &m->funcs[i];

		perftools__profiles__function__init(pf);
		pf->id = i + 1;
		pf->name = b->functions[i].name;
		pf->system_name = b->functions[i].system_name;
		pf->filename = b->functions[i].filename;
		pf->start_line = b->functions[i].start_line;
		m->func_ptrs[i] = pf;
	}
	for (i = 0; i < b->nr_locations; i++) {
		const struct pprof_location_entry *e = &b->locations[i];
		Perftools__Profiles__Location *pl = &m->locs[i];

		perftools__profiles__location__init(pl);
		pl->id = i + 1;
		pl->mapping_id = e->mapping_id;
		pl->address = e->address;
		for (j = e->line_off; j < e->line_off + e->nr_lines; j++) {
			perftools__profiles__line__init(&m->lines[j]);
			m->lines[j].function_id = b->lines[j].function_id;
			m->lines[j].line = b->lines[j].line;
			m->line_ptrs[j] = &m->lines[j];
		}
		pl->n_line = e->nr_lines;
		pl->line = e->nr_lines ? &m->line_ptrs[e->line_off] : NULL;
		m->loc_ptrs[i] = pl;
	}
	for (i = 0; i < b->nr_labels; i++) {
		perftools__profiles__label__init(&m->labels[i]);
		m->labels[i].key = b->labels[i].key;
		m->labels[i].str = b->labels[i].str;
		m->label_ptrs[i] = &m->labels[i];
	}
	for (i = 0; i < b->nr_samples; i++) {
		const struct pprof_sample_entry *e = &b->samples[i];
		Perftools__Profiles__Sample *ps = &m->samples[i];

		perftools__profiles__sample__init(ps);
		ps->n_location_id = e->nr_locs;
		ps->location_id = e->nr_locs ? &b->loc_ids[e->loc_off] : NULL;
		ps->n_value = b->nr_sample_types;
		ps->value = &b->values[i * b->nr_sample_types];
		ps->n_label = e->nr_labels;
		ps->label = e->nr_labels ? &m->label_ptrs[e->label_off] : NULL;
		m->sample_ptrs[i] = ps;
	}
	for (j = 0; j < b->nr_comments; j++)
		m->comments[j] = b->comments[j];

	p->n_sample_type = b->nr_sample_types;
	p->sample_type = m->vt_ptrs;
	p->n_sample = b->nr_samples;
	p->sample = m->sample_ptrs;
	p->n_mapping = b->nr_mappings;
	p->mapping = m->map_ptrs;
	p->n_location = b->nr_locations;
	p->location = m->loc_ptrs;
	p->n_function = b->nr_functions;
	p->function = m->func_ptrs;
	p->n_string_table = b->nr_strs;
	p->string_table = b->strs;
	p->time_nanos = b->time_ns;
	p->duration_nanos = b->duration_ns;
	p->period_type = m->vt_ptrs[b->nr_sample_types];
	p->period = b->period;
	p->n_comment = b->nr_comments;
	p->comment = m->comments;
	p->default_sample_type = b->default_sample_type;
	return 0;
}

int pprof_builder__finish(struct pprof_builder *b, uint8_t **out, size_t *len)
{
	Perftools__Profiles__Profile p = PERFTOOLS__PROFILES__PROFILE__INIT;
	struct pprof_msgs m = {0};
	uint8_t *packed = NULL;
	size_t size;
	int err;

	err = build_msgs(b, &m, &p);
	if (err)
		goto out;
	size = perftools__profiles__profile__get_packed_size(&p);
	packed = malloc(size ? size : 1);
	if (!packed) {
		err = -ENOMEM;
		goto out;
	}
	if (perftools__profiles__profile__pack(&p, packed) != size) {
		err = -EIO;
		goto out;
	}
	err = gzip__compress(packed, size, Z_BEST_SPEED, out, len);
out:
	free(packed);
	pprof_msgs__free(&m);
	return err;
}

void pprof_builder__free(struct pprof_builder *b)
{
	size_t i;

	if (!b)
		return;
	for (i = 0; i < b->nr_strs; i++)
		free(b->strs[i]);
	free(b->strs);
	hashmap__clear(&b->str_index);
	free(b->mappings);
	hashmap__clear(&b->mapping_index);
	free(b->functions);
	hashmap__clear(&b->function_index);
	free(b->locations);
	hashmap__clear(&b->location_index);
	free(b->lines);
	free(b->samples);
	free(b->loc_ids);
	free(b->values);
	free(b->labels);
	free(b->comments);
	free(b);
}
