// SPDX-License-Identifier: GPL-2.0-only
/* Pprof locations of interned stacks: mappings, names, source lines. */
#include "profile_frames.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "demangle.h"
#include "hashmap.h"
#include "python.h"
#include "source_lines.h"
#include "tailprof.h"

/* object -> pprof mapping, per query. The builder keys locations by mapping pointer, so each
 * mapping is allocated once and never moves while the builder lives. */
struct mapping_table {
	struct {
		const struct object *obj;
		struct pprof_mapping *map;
	} * v;
	size_t n, cap;
	struct hashmap index;
};

static bool mapping_eq(const void *ctx, uint32_t i)
{
	const struct object *obj = ((const void *const *)ctx)[0];
	const struct mapping_table *t = ((const void *const *)ctx)[1];

	return t->v[i].obj == obj;
}

static const struct pprof_mapping *mapping_for(struct mapping_table *t, const struct object *obj)
{
	const void *ctx[2] = {obj, t};
	uint64_t h = hashmap__hash_ptr(obj);
	struct pprof_mapping *m;
	uint32_t i;

	if (hashmap__find(&t->index, h, mapping_eq, ctx, &i))
		return t->v[i].map;
	if (ARRAY_GROW(t->v, t->cap, t->n + 1))
		return NULL;
	m = calloc(1, sizeof(*m));
	if (!m || hashmap__insert(&t->index, h, t->n)) {
		free(m);
		return NULL;
	}
	object__range(obj, &m->start, &m->limit, &m->file_offset);
	m->file = object__path(obj);
	m->build_id = object__build_id(obj);
	m->has_functions = true;
	t->v[t->n].obj = obj;
	t->v[t->n++].map = m;
	return m;
}

static void mapping_table__free(struct mapping_table *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->v[i].map);
	free(t->v);
	hashmap__clear(&t->index);
}

#define MAX_LOCS (2 * TP_MAX_STACK_DEPTH + 3)
#define NAME_LEN 96

/* One stack's locations as the builder takes them, and what their strings point into. */
struct stack_names {
	struct pprof_location locs[MAX_LOCS];
	char names[MAX_LOCS][NAME_LEN];
	struct source_line lines[MAX_LOCS][SOURCE_LINES_MAX];
	struct pprof_line inlined[MAX_LOCS][SOURCE_LINES_MAX - 1];
};

/* Symbol name -> its demangled form, per query: symbol names live in their objects' tables, so
 * the pointer is the key, and each distinct function is demangled once per profile. */
struct demangle_cache {
	struct {
		const char *key;
		char *val; /* NULL: not mangled */
	} * v;
	size_t n, cap;
	struct hashmap index;
};

static bool demangled_eq(const void *ctx, uint32_t i)
{
	const char *key = ((const void *const *)ctx)[0];
	const struct demangle_cache *c = ((const void *const *)ctx)[1];

	return c->v[i].key == key;
}

/* The readable name of symbol name (name itself when it is not mangled, or on ENOMEM). */
static const char *demangled(struct demangle_cache *c, const char *name)
{
	const void *ctx[2] = {name, c};
	uint64_t h = hashmap__hash_ptr(name);
	uint32_t i;
	char *d;

	if (hashmap__find(&c->index, h, demangled_eq, ctx, &i))
		return c->v[i].val ? c->v[i].val : name;
	if (ARRAY_GROW(c->v, c->cap, c->n + 1))
		return name;
	d = demangle(name);
	if (hashmap__insert(&c->index, h, c->n)) {
		free(d);
		return name;
	}
	c->v[c->n].key = name;
	c->v[c->n++].val = d;
	return d ? d : name;
}

static void demangle_cache__free(struct demangle_cache *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->v[i].val);
	free(c->v);
	hashmap__clear(&c->index);
}

struct frame_namer {
	struct mapping_table maps;
	struct demangle_cache dc;
	struct line_reader *lines;
	const struct pprof_builder *b;
	struct stack_names sn;
};

/* Gives user location l (of obj at address at, whose function is named already) the source
 * lines DWARF has for it: its function's file and line, and the functions inlined there, from
 * sn->lines[n] into sn->inlined[n]. */
static void add_source_lines(struct frame_namer *nm, struct object *obj, uint64_t at,
			     struct stack_names *sn, size_t n, struct pprof_location *l)
{
	struct source_line *sl = sn->lines[n];
	size_t nl = line_reader__lookup(nm->lines, obj, at, sl, SOURCE_LINES_MAX), k = 0;

	if (!nl)
		return;
	/* the outermost is the function the symbol names (or the FDE, for want of one) */
	if (sl[nl - 1].file) {
		l->file = sl[nl - 1].file;
		l->line = sl[nl - 1].line;
		l->start_line = sl[nl - 1].start_line;
	}
	for (size_t i = 0; i + 1 < nl; i++) {
		if (!sl[i].function)
			continue;
		sn->inlined[n][k++] = (struct pprof_line){
		    .function = sl[i].function,
		    .system_name = sl[i].system_name,
		    .file = sl[i].file,
		    .line = sl[i].line,
		    .start_line = sl[i].start_line,
		};
	}
	l->inlined = sn->inlined[n];
	l->nr_inlined = k;
}

static int stack_locations(struct frame_namer *nm, const struct stack *s, struct stack_names *sn,
			   size_t *nr)
{
	size_t n = 0;

	for (uint32_t i = 0; i < (uint32_t)s->nr_kernel + s->nr_user; i++) {
		const struct frame *f = &s->frames[i];
		struct pprof_location *l;
		/* A caller is at the byte before its return address (as addr2line and perf name
		 * it, and as the location's address says): after a call that never returns, the
		 * return address is past the caller's end. The first frame of each part (kernel,
		 * user) is where the thread was. */
		uint64_t at = i == 0 || i == s->nr_kernel ? f->addr : f->addr - 1;

		if (i == s->nr_kernel && (s->flags & STACK_TRUNCATED_KERNEL))
			sn->locs[n++] = (struct pprof_location){.function = "[truncated]"};
		l = &sn->locs[n];
		*l = (struct pprof_location){.address = at};
		if (!f->obj) {
			l->function = "[unknown]";
			n++;
			continue;
		}
		if (python__is_object(f->obj)) {
			/* a Python frame: its address is a line id (python.h) */
			struct python_line pl;

			l->address = f->addr;
			l->mapping = mapping_for(&nm->maps, f->obj);
			if (!l->mapping)
				return -ENOMEM;
			if (python__line(f->addr, &pl)) {
				l->function = pl.function;
				/* no system name: pprof's default demangling takes a name equal to
				 * its system name that has '<' in it for demangled C++ and drops
				 * what is between '<' and '>', and <module>, <listcomp> and
				 * <lambda> then come out empty (named after the mapping) */
				l->system_name = "";
				l->file = pl.file;
				l->start_line = pl.start_line;
				l->line = pl.line;
			} else {
				l->function = "[python]";
			}
			n++;
			continue;
		}
		l->mapping = mapping_for(&nm->maps, f->obj);
		if (!l->mapping)
			return -ENOMEM;
		/* named by an earlier sample: mapping and address are all the builder needs */
		if (pprof_builder__has_location(nm->b, l->mapping, at)) {
			n++;
			continue;
		}
		l->file = object__path(f->obj);
		l->system_name = object__lookup(f->obj, at, NULL);
		if (l->system_name)
			l->function = object__is_kernel(f->obj)
					  ? l->system_name
					  : demangled(&nm->dc, l->system_name);
		else
			l->function = object__anon_name(f->obj, at, sn->names[n], NAME_LEN);
		if (!object__is_kernel(f->obj))
			add_source_lines(nm, f->obj, at, sn, n, l);
		n++;
	}
	if (s->flags & (STACK_TRUNCATED_USER | (s->nr_user ? 0 : STACK_TRUNCATED_KERNEL)))
		sn->locs[n++] = (struct pprof_location){.function = "[truncated]"};
	if (s->flags & STACK_NO_USER)
		sn->locs[n++] = (struct pprof_location){.function = "[user stack unknown]"};
	*nr = n;
	return 0;
}

struct object *stack_executable(const struct task *tk, const struct stack *s)
{
	/* from the outermost frame in: main and _start are in the executable */
	for (uint32_t i = (uint32_t)s->nr_kernel + s->nr_user; i-- > s->nr_kernel;) {
		struct object *obj = s->frames[i].obj;

		if (obj && !object__is_kernel(obj) &&
		    !strncmp(object__name(obj), tk->process, PROCESS_NAME_LEN - 1))
			return obj;
	}
	return NULL;
}

struct frame_namer *frame_namer__new(const struct pprof_builder *b)
{
	struct frame_namer *nm = calloc(1, sizeof(*nm));

	if (!nm)
		return NULL;
	nm->b = b;
	nm->lines = line_reader__new(0);
	if (!nm->lines) {
		free(nm);
		return NULL;
	}
	return nm;
}

void frame_namer__free(struct frame_namer *nm)
{
	if (!nm)
		return;
	line_reader__free(nm->lines);
	mapping_table__free(&nm->maps);
	demangle_cache__free(&nm->dc);
	free(nm);
}

const char *frame_namer__name(struct frame_namer *nm, const struct stack *s, uint32_t i, char *buf,
			      size_t len)
{
	const struct frame *f = &s->frames[i];
	uint64_t at = i == 0 || i == s->nr_kernel ? f->addr : f->addr - 1;
	struct python_line pl;
	const char *sym;

	if (!f->obj)
		return "[unknown]";
	if (python__is_object(f->obj))
		return python__line(f->addr, &pl) ? pl.function : "[python]";
	sym = object__lookup(f->obj, at, NULL);
	if (!sym)
		return object__anon_name(f->obj, at, buf, len);
	return object__is_kernel(f->obj) ? sym : demangled(&nm->dc, sym);
}

const struct pprof_mapping *frame_namer__mapping(struct frame_namer *nm, const struct object *obj)
{
	return mapping_for(&nm->maps, obj);
}

int frame_namer__stack(struct frame_namer *nm, const struct stack *s,
		       const struct pprof_location **locs, size_t *nr)
{
	int err = stack_locations(nm, s, &nm->sn, nr);

	*locs = nm->sn.locs;
	return err;
}
