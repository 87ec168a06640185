// SPDX-License-Identifier: GPL-2.0-only
/* The flame graph tree: nodes in one array (children after their parents), a hash index from
 * (parent, name) to node, and the JSON writer that sums, trims and sorts. */
#include "flamegraph.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "hashmap.h"
#include "textbuf.h"
#include "window.h" /* task__sanitize_name */

struct flame_node {
	uint32_t parent, name;
	uint32_t kind;
	uint32_t subtree; /* nodes in its subtree, itself included (flamegraph__json) */
	uint64_t self, self_base;
	uint64_t value, base; /* self plus the children's (flamegraph__json) */
};

struct flamegraph {
	struct flame_node *nodes;
	size_t n, cap;
	struct hashmap children; /* (parent, name) -> node */
	char **names;		 /* sanitized, malloc'd */
	size_t nr_names, cap_names;
	struct hashmap name_index; /* name -> index in names */
};

static const char *const kind_names[FLAME_KIND_NR] = {
    [FLAME_PROCESS] = "process", [FLAME_USER] = "user", [FLAME_KERNEL] = "kernel",
    [FLAME_PYTHON] = "python",	 [FLAME_JIT] = "jit",	[FLAME_OTHER] = "other",
};

struct flamegraph *flamegraph__new(void)
{
	struct flamegraph *fg = calloc(1, sizeof(*fg));
	int64_t all;

	if (!fg)
		return NULL;
	all = flamegraph__name(fg, "all");
	if (all < 0 || ARRAY_GROW(fg->nodes, fg->cap, 1)) {
		flamegraph__free(fg);
		return NULL;
	}
	fg->nodes[fg->n++] =
	    (struct flame_node){.parent = UINT32_MAX, .name = (uint32_t)all, .kind = FLAME_OTHER};
	return fg;
}

void flamegraph__free(struct flamegraph *fg)
{
	if (!fg)
		return;
	for (size_t i = 0; i < fg->nr_names; i++)
		free(fg->names[i]);
	free(fg->names);
	free(fg->nodes);
	hashmap__clear(&fg->children);
	hashmap__clear(&fg->name_index);
	free(fg);
}

static bool name_eq(const void *ctx, uint32_t i)
{
	const struct flamegraph *fg = ((const void *const *)ctx)[0];

	return !strcmp(fg->names[i], ((const void *const *)ctx)[1]);
}

int64_t flamegraph__name(struct flamegraph *fg, const char *name)
{
	char *s = strdup(name);
	const void *ctx[2] = {fg, s};
	uint64_t h;
	uint32_t i;

	if (!s)
		return -ENOMEM;
	task__sanitize_name(s);
	h = hashmap__hash_str(s);
	if (hashmap__find(&fg->name_index, h, name_eq, ctx, &i)) {
		free(s);
		return i;
	}
	if (fg->nr_names >= UINT32_MAX - 1 ||
	    ARRAY_GROW(fg->names, fg->cap_names, fg->nr_names + 1) ||
	    hashmap__insert(&fg->name_index, h, (uint32_t)fg->nr_names)) {
		free(s);
		return -ENOMEM;
	}
	fg->names[fg->nr_names] = s;
	return (int64_t)fg->nr_names++;
}

static bool child_eq(const void *ctx, uint32_t i)
{
	const struct flamegraph *fg = ((const void *const *)ctx)[0];
	const uint32_t *key = ((const void *const *)ctx)[1];

	return fg->nodes[i].parent == key[0] && fg->nodes[i].name == key[1];
}

/* Appends node (parent, name, kind), indexed by (parent, name) under hash h when index. */
static int64_t add_node(struct flamegraph *fg, uint32_t parent, uint32_t name, enum flame_kind kind,
			bool index, uint64_t h)
{
	if (fg->n >= UINT32_MAX - 1 || ARRAY_GROW(fg->nodes, fg->cap, fg->n + 1) ||
	    (index && hashmap__insert(&fg->children, h, (uint32_t)fg->n)))
		return -ENOMEM;
	fg->nodes[fg->n] = (struct flame_node){.parent = parent, .name = name, .kind = kind};
	return (int64_t)fg->n++;
}

int64_t flamegraph__child(struct flamegraph *fg, uint32_t parent, uint32_t name,
			  enum flame_kind kind)
{
	uint32_t key[2] = {parent, name}, i;
	const void *ctx[2] = {fg, key};
	uint64_t h = hashmap__combine(hashmap__mix64(parent), name);

	if (parent >= fg->n || name >= fg->nr_names || (unsigned)kind >= FLAME_KIND_NR)
		return -EINVAL;
	if (hashmap__find(&fg->children, h, child_eq, ctx, &i))
		return i;
	return add_node(fg, parent, name, kind, true, h);
}

int64_t flamegraph__append(struct flamegraph *fg, uint32_t parent, uint32_t name,
			   enum flame_kind kind)
{
	if (parent >= fg->n || name >= fg->nr_names || (unsigned)kind >= FLAME_KIND_NR)
		return -EINVAL;
	return add_node(fg, parent, name, kind, false, 0);
}

int flamegraph__add(struct flamegraph *fg, uint32_t node, uint64_t value, bool baseline)
{
	if (node >= fg->n)
		return -EINVAL;
	if (baseline)
		fg->nodes[node].self_base += value;
	else
		fg->nodes[node].self += value;
	return 0;
}

size_t flamegraph__nodes(const struct flamegraph *fg)
{
	return fg->n;
}

/* ---- JSON ---- */

/* One child as written: a node, or the "(other)" of its parent (id UINT32_MAX). */
struct shown {
	uint64_t value, base;
	uint32_t id;
	const char *name;
};

static int cmp_shown(const void *a, const void *b)
{
	const struct shown *x = a, *y = b;

	if (x->value != y->value)
		return x->value < y->value ? 1 : -1;
	if (x->base != y->base)
		return x->base < y->base ? 1 : -1;
	return strcmp(x->name, y->name);
}

struct writer {
	struct flamegraph *fg;
	struct text t;
	uint32_t *first; /* [n + 1]: node i's children are kids[first[i] .. first[i + 1]) */
	uint32_t *kids;
	struct shown *scratch; /* room for every node's children, taken depth by depth */
	double min_value, min_base;
	double rv, rb; /* the root's value and baseline (share_of) */
	double cut;    /* with more than FLAME_MAX_NODES to show: nodes whose share_of is at or
			* below it merge into "(other)" too (else -1) */
	uint64_t truncated;
};

/* A node's larger share of its side's total: a node's is never above its parent's (a value is
 * its self plus its children's, on each side). */
static double share_of(const struct writer *w, const struct flame_node *c)
{
	double v = w->rv > 0 ? (double)c->value / w->rv : 0,
	       b = w->rb > 0 ? (double)c->base / w->rb : 0;

	return v > b ? v : b;
}

/* The k-th largest (0-based) of s[0..n), k < n; s is reordered. Hoare's selection. */
static double kth_largest(double *s, size_t n, size_t k)
{
	size_t lo = 0, hi = n - 1;

	while (lo < hi) {
		double pivot = s[lo + (hi - lo) / 2];
		size_t i = lo, j = hi;

		while (i <= j) {
			while (s[i] > pivot)
				i++;
			while (s[j] < pivot)
				j--;
			if (i <= j) {
				double t = s[i];

				s[i] = s[j];
				s[j] = t;
				i++;
				if (j == 0)
					break;
				j--;
			}
		}
		if (k <= j)
			hi = j;
		else if (k >= i)
			lo = i;
		else
			break;
	}
	return s[k];
}

/* Appends s as a JSON string (s is sanitized: only quotes and backslashes need escapes). */
static void put_string(struct text *t, const char *s)
{
	size_t n = strcspn(s, "\"\\");

	if (!s[n]) {
		text_put(t, "\"%s\"", s);
		return;
	}
	text_put(t, "\"");
	while (*s) {
		n = strcspn(s, "\"\\");
		text_put(t, "%.*s", (int)n, s);
		s += n;
		if (*s)
			text_put(t, "\\%c", *s++);
	}
	text_put(t, "\"");
}

/* Whether v is below the share of its side's total (a zero always is). */
static bool small(uint64_t v, double min)
{
	return !v || (double)v < min;
}

static void put_node(struct writer *w, const char *name, uint32_t kind, uint64_t value,
		     uint64_t self, uint64_t base)
{
	text_put(&w->t, "{\"name\":");
	put_string(&w->t, name);
	text_put(&w->t,
		 ",\"kind\":\"%s\",\"value\":%" PRIu64 ",\"self\":%" PRIu64 ",\"baseline\":%" PRIu64
		 ",\"children\":[",
		 kind_names[kind], value, self, base);
}

/* Writes node id and its subtree; sh: free scratch for its children. */
static void write_node(struct writer *w, uint32_t id, struct shown *sh)
{
	const struct flame_node *nd = &w->fg->nodes[id];
	struct shown other = {.id = UINT32_MAX, .name = "(other)"};
	size_t nr = 0;

	put_node(w, w->fg->names[nd->name], nd->kind, nd->value, nd->self, nd->base);
	for (uint32_t k = w->first[id]; k < w->first[id + 1]; k++) {
		const struct flame_node *c = &w->fg->nodes[w->kids[k]];

		if ((small(c->value, w->min_value) && small(c->base, w->min_base)) ||
		    share_of(w, c) <= w->cut) {
			other.value += c->value;
			other.base += c->base;
			w->truncated += c->subtree;
			continue;
		}
		sh[nr++] = (struct shown){c->value, c->base, w->kids[k], w->fg->names[c->name]};
	}
	if (other.value || other.base)
		sh[nr++] = other;
	qsort(sh, nr, sizeof(*sh), cmp_shown);
	for (size_t i = 0; i < nr; i++) {
		if (i)
			text_put(&w->t, ",");
		if (sh[i].id == UINT32_MAX) {
			put_node(w, sh[i].name, FLAME_OTHER, sh[i].value, sh[i].value, sh[i].base);
			text_put(&w->t, "]}");
		} else {
			write_node(w, sh[i].id, sh + nr);
		}
	}
	text_put(&w->t, "]}");
}

char *flamegraph__json(struct flamegraph *fg, const struct flamegraph_json_opts *o)
{
	struct writer w = {.fg = fg};
	struct flame_node *root = &fg->nodes[FLAME_ROOT];
	char *out = NULL;

	/* children come after their parents: one backward pass sums every subtree */
	for (size_t i = 0; i < fg->n; i++) {
		fg->nodes[i].value = fg->nodes[i].self;
		fg->nodes[i].base = fg->nodes[i].self_base;
		fg->nodes[i].subtree = 1;
	}
	for (size_t i = fg->n; i-- > 1;) {
		struct flame_node *p = &fg->nodes[fg->nodes[i].parent];

		p->value += fg->nodes[i].value;
		p->base += fg->nodes[i].base;
		p->subtree += fg->nodes[i].subtree;
	}
	w.first = calloc(fg->n + 1, sizeof(*w.first));
	w.kids = malloc(fg->n * sizeof(*w.kids));
	/* a path's children lists hold fewer than n nodes together, plus an "(other)" each */
	w.scratch = malloc(2 * fg->n * sizeof(*w.scratch));
	if (!w.first || !w.kids || !w.scratch)
		goto out;
	/* children lists by counting sort on the parent, in id order */
	for (size_t i = 1; i < fg->n; i++)
		w.first[fg->nodes[i].parent + 1]++;
	for (size_t i = 0; i < fg->n; i++)
		w.first[i + 1] += w.first[i];
	for (size_t i = 1; i < fg->n; i++)
		w.kids[w.first[fg->nodes[i].parent]++] = (uint32_t)i;
	/* the fill moved each start to the next list's: shift back */
	for (size_t i = fg->n; i > 0; i--)
		w.first[i] = w.first[i - 1];
	w.first[0] = 0;
	w.min_value = o->min_share * (double)root->value;
	w.min_base = o->min_share * (double)root->base;
	w.rv = (double)root->value;
	w.rb = (double)root->base;
	w.cut = -1;
	if (fg->n - 1 > FLAME_MAX_NODES) {
		/* More nodes than a browser (or our memory) wants: keep the FLAME_MAX_NODES largest
		 * by share, which, shares shrinking down every path, are whole upper parts of the
		 * tree. (the scratch holds 2n entries: borrowed for the shares) */
		double *s = (double *)w.scratch;
		size_t m = 0;

		for (size_t i = 1; i < fg->n; i++)
			s[m++] = share_of(&w, &fg->nodes[i]);
		w.cut = kth_largest(s, m, FLAME_MAX_NODES);
	}
	text_put(&w.t, "{\"type\":\"%s\",\"unit\":\"%s\",\"from\":", o->type, o->unit);
	put_string(&w.t, o->from);
	text_put(&w.t, ",\"from_unix_ns\":%" PRId64 ",\"to\":", o->from_unix_ns);
	put_string(&w.t, o->to);
	text_put(&w.t, ",\"to_unix_ns\":%" PRId64, o->to_unix_ns);
	text_put(&w.t, ",\"total\":%" PRIu64, root->value);
	if (o->with_baseline)
		text_put(&w.t, ",\"baseline_total\":%" PRIu64, root->base);
	text_put(&w.t, ",\"root\":");
	write_node(&w, FLAME_ROOT, w.scratch);
	text_put(&w.t, ",\"truncated_nodes\":%" PRIu64 ",\"max_nodes\":%u}", w.truncated,
		 (unsigned)FLAME_MAX_NODES);
	out = text_finish(&w.t);
	w.t.buf = NULL;
out:
	free(w.t.buf);
	free(w.first);
	free(w.kids);
	free(w.scratch);
	return out;
}
