// SPDX-License-Identifier: GPL-2.0-only
/* The flame graph of windows (GET /api/v1/flamegraph): the entries that a profile of the same
 * filter takes (query__entry_passes), their stacks as frame names (frame_namer__name, the names
 * of the pprof profile), summed into a flamegraph.h tree on the selection and the baseline side.
 * The entries are summed by (stack, process) first; each distinct (object, address) is named
 * once; the stacks, sorted by their names, make the tree without a lookup per frame (each shares
 * its common prefix with the one before). */
#include "query_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "collector.h"
#include "flamegraph.h"
#include "hashmap.h"
#include "profile_frames.h"
#include "python.h"
#include "timeparse.h"

/* A cache from a key of three words to a value: the builder's lookups. */
struct memo_entry {
	uint64_t key[3];
	uint32_t val;
};

struct memo {
	struct memo_entry *v;
	size_t n, cap;
	struct hashmap index;
};

static bool memo_eq(const void *ctx, uint32_t i)
{
	const struct memo *m = ((const void *const *)ctx)[0];

	return !memcmp(m->v[i].key, ((const void *const *)ctx)[1], sizeof(m->v[i].key));
}

static uint64_t memo_hash(const uint64_t *key)
{
	return hashmap__combine(hashmap__combine(hashmap__mix64(key[0]), key[1]), key[2]);
}

/* The value of key, or NULL. */
static const uint32_t *memo_find(const struct memo *m, const uint64_t *key, uint64_t h)
{
	const void *ctx[2] = {m, key};
	uint32_t i;

	return hashmap__find(&m->index, h, memo_eq, ctx, &i) ? &m->v[i].val : NULL;
}

/* Adds key (absent) with value val. Returns 0 or -ENOMEM. */
static int memo_add(struct memo *m, const uint64_t *key, uint64_t h, uint32_t val)
{
	if (ARRAY_GROW(m->v, m->cap, m->n + 1) || hashmap__insert(&m->index, h, (uint32_t)m->n))
		return -ENOMEM;
	memcpy(m->v[m->n].key, key, sizeof(m->v[m->n].key));
	m->v[m->n++].val = val;
	return 0;
}

static void memo_free(struct memo *m)
{
	free(m->v);
	hashmap__clear(&m->index);
}

/* A (stack, process) of the selection or the baseline, its values summed over the windows, and
 * its frames as the tree takes them: seq[0..nr) in the builder's pool, outermost first. */
struct leaf {
	const struct stack *stack;
	uint32_t proc; /* the process node */
	uint32_t nr;
	size_t seq;
	uint64_t value, base;
};

/* A frame in a leaf's sequence: its name id and kind in one word (FRAME_WORD). */
#define FRAME_WORD(name, kind) ((uint32_t)(name) << 3 | (kind))
_Static_assert(FLAME_KIND_NR <= 8, "kinds fit in 3 bits");

struct flame_build {
	struct flamegraph *fg;
	struct frame_namer *nm;
	enum profile_type type;
	uint64_t period_ns;
	struct memo names;     /* (obj, addr) -> its frame word */
	struct memo leaf_of;   /* (stack, process node) -> index in leaves */
	struct memo processes; /* task -> its process node */
	struct leaf *leaves;
	size_t nr_leaves, cap_leaves;
	uint32_t *pool; /* the leaves' frame words */
	size_t nr_pool, cap_pool;
	uint32_t pseudo[3]; /* frame words of "[unknown]", "[truncated]", "[user stack unknown]" */
};

enum { PSEUDO_UNKNOWN, PSEUDO_TRUNCATED, PSEUDO_NO_USER };

/* Where JIT code comes from: the perf map (/tmp/perf-PID.map) the symbolizer reads. */
static bool jit_object(const struct object *obj)
{
	const char *name = object__name(obj);
	size_t n = strlen(name);

	return !strncmp(name, "perf-", 5) && n > 4 && !strcmp(name + n - 4, ".map");
}

/* The frame word of frame i of s, named once per (object, address). 0 or -ENOMEM. */
static int frame_word(struct flame_build *b, const struct stack *s, uint32_t i, uint32_t *word)
{
	const struct frame *f = &s->frames[i];
	uint64_t key[3] = {(uintptr_t)f->obj, f->addr, 0}, h;
	const uint32_t *v;
	char buf[128];
	int64_t id;
	int kind;

	if (!f->obj) {
		*word = b->pseudo[PSEUDO_UNKNOWN];
		return 0;
	}
	/* callers are named at the byte before their return address (Python: line ids) */
	if (i != 0 && i != s->nr_kernel && !python__is_object(f->obj))
		key[1]--;
	h = memo_hash(key);
	v = memo_find(&b->names, key, h);
	if (v) {
		*word = *v;
		return 0;
	}
	id = flamegraph__name(b->fg, frame_namer__name(b->nm, s, i, buf, sizeof(buf)));
	if (id < 0 || id >= 1 << 29)
		return -ENOMEM;
	kind = python__is_object(f->obj)   ? FLAME_PYTHON
	       : object__is_kernel(f->obj) ? FLAME_KERNEL
	       : jit_object(f->obj)	   ? FLAME_JIT
					   : FLAME_USER;
	*word = FRAME_WORD(id, kind);
	return memo_add(&b->names, key, h, *word);
}

/* Fills leaf l's sequence: the frames of its stack outermost first, with the pseudo-frames where
 * its pprof locations have them (profile_frames.c). Returns 0 or -ENOMEM. */
static int leaf_sequence(struct flame_build *b, struct leaf *l)
{
	const struct stack *s = l->stack;
	uint32_t nr = (uint32_t)s->nr_kernel + s->nr_user, n = 0;
	uint32_t *seq;
	int err;

	if (ARRAY_GROW(b->pool, b->cap_pool, b->nr_pool + nr + 3))
		return -ENOMEM;
	/* leaf first, as the locations go, then reversed */
	seq = b->pool + b->nr_pool;
	for (uint32_t i = 0; i < nr; i++) {
		if (i == s->nr_kernel && (s->flags & STACK_TRUNCATED_KERNEL))
			seq[n++] = b->pseudo[PSEUDO_TRUNCATED];
		err = frame_word(b, s, i, &seq[n++]);
		if (err)
			return err;
	}
	if (s->flags & (STACK_TRUNCATED_USER | (s->nr_user ? 0 : STACK_TRUNCATED_KERNEL)))
		seq[n++] = b->pseudo[PSEUDO_TRUNCATED];
	if (s->flags & STACK_NO_USER)
		seq[n++] = b->pseudo[PSEUDO_NO_USER];
	for (uint32_t i = 0; i < n / 2; i++) {
		uint32_t t = seq[i];

		seq[i] = seq[n - 1 - i];
		seq[n - 1 - i] = t;
	}
	l->seq = b->nr_pool;
	l->nr = n;
	b->nr_pool += n;
	return 0;
}

/* The node of task tk's process (its comm) under the root. Returns it or -ENOMEM. */
static int64_t process_node(struct flame_build *b, const struct task *tk)
{
	uint64_t key[3] = {(uintptr_t)tk, 0, 0}, h = memo_hash(key);
	const uint32_t *v = memo_find(&b->processes, key, h);
	int64_t name, node;

	if (v)
		return *v;
	name = flamegraph__name(b->fg, tk->comm);
	node =
	    name < 0 ? name : flamegraph__child(b->fg, FLAME_ROOT, (uint32_t)name, FLAME_PROCESS);
	if (node >= 0 && memo_add(&b->processes, key, h, (uint32_t)node))
		return -ENOMEM;
	return node;
}

/* The value of e in the profile type's unit: CPU samples, off-CPU ns, or both in ns (wall). */
static uint64_t entry_value(const struct flame_build *b, const struct window_entry *e)
{
	switch (b->type) {
	case PROFILE_CPU:
		return e->count;
	case PROFILE_OFFCPU:
		return e->offcpu_ns;
	default:
		return e->count * b->period_ns + e->offcpu_ns;
	}
}

/* Sums the entries of windows[0..n) that pass filter into the leaves, on the side `baseline`.
 * Returns 0 or -ENOMEM. */
static int add_windows(struct flame_build *b, struct window *const *windows, size_t n,
		       const struct profile_filter *filter, bool baseline)
{
	for (size_t i = 0; i < n; i++) {
		for (size_t j = 0; j < windows[i]->nr_entries; j++) {
			const struct window_entry *e = &windows[i]->entries[j];
			uint64_t key[3], h;
			const uint32_t *v;
			struct leaf *l;
			int64_t proc;

			if (!query__entry_passes(filter, e))
				continue;
			proc = process_node(b, e->task);
			if (proc < 0)
				return (int)proc;
			key[0] = (uintptr_t)e->stack;
			key[1] = (uint64_t)proc;
			key[2] = 0;
			h = memo_hash(key);
			v = memo_find(&b->leaf_of, key, h);
			if (!v) {
				if (ARRAY_GROW(b->leaves, b->cap_leaves, b->nr_leaves + 1) ||
				    memo_add(&b->leaf_of, key, h, (uint32_t)b->nr_leaves))
					return -ENOMEM;
				b->leaves[b->nr_leaves] = (struct leaf){e->stack, (uint32_t)proc};
				v = &b->leaf_of.v[b->leaf_of.n - 1].val;
				b->nr_leaves++;
			}
			l = &b->leaves[*v];
			if (baseline)
				l->base += entry_value(b, e);
			else
				l->value += entry_value(b, e);
		}
	}
	return 0;
}

/* Leaves by process, then by their sequences (a prefix before what extends it). */
static int cmp_leaf(const void *a, const void *c, void *arg)
{
	const struct leaf *x = a, *y = c;
	const uint32_t *pool = arg;
	uint32_t n = x->nr < y->nr ? x->nr : y->nr;

	if (x->proc != y->proc)
		return x->proc < y->proc ? -1 : 1;
	for (uint32_t i = 0; i < n; i++)
		if (pool[x->seq + i] != pool[y->seq + i])
			return pool[x->seq + i] < pool[y->seq + i] ? -1 : 1;
	return x->nr < y->nr ? -1 : x->nr > y->nr;
}

/* Builds the tree of the sorted leaves: each leaf shares the nodes of its common prefix with the
 * one before it and appends the rest (sorted, no two leaves append the same node). */
static int build_tree(struct flame_build *b)
{
	const struct leaf *prev = NULL;
	uint32_t *path = NULL;
	size_t cap = 0;
	int err = 0;

	if (b->nr_leaves) /* leaves is NULL then: qsort's array must not be */
		qsort_r(b->leaves, b->nr_leaves, sizeof(*b->leaves), cmp_leaf, b->pool);
	for (size_t k = 0; k < b->nr_leaves && !err; k++) {
		const struct leaf *l = &b->leaves[k];
		const uint32_t *seq = b->pool + l->seq;
		uint32_t common = 0;
		int64_t node;

		if (prev && prev->proc == l->proc)
			while (common < prev->nr && common < l->nr &&
			       b->pool[prev->seq + common] == seq[common])
				common++;
		if (ARRAY_GROW(path, cap, (size_t)l->nr + 1)) {
			err = -ENOMEM;
			break;
		}
		node = common ? path[common - 1] : l->proc;
		for (uint32_t d = common; d < l->nr && node >= 0; d++) {
			node = flamegraph__append(b->fg, (uint32_t)node, (uint32_t)(seq[d] >> 3),
						  (enum flame_kind)(seq[d] & 7));
			path[d] = (uint32_t)node;
		}
		if (node < 0) {
			err = (int)node;
			break;
		}
		flamegraph__add(b->fg, (uint32_t)node, l->value, false);
		flamegraph__add(b->fg, (uint32_t)node, l->base, true);
		prev = l;
	}
	free(path);
	return err;
}

int query__flame_add(struct flamegraph *fg, const struct flame_query *q, uint64_t period_ns)
{
	static const char *const pseudo[3] = {"[unknown]", "[truncated]", "[user stack unknown]"};
	struct flame_build b = {
	    .fg = fg,
	    .type = q->filter ? q->filter->type : PROFILE_CPU,
	    .period_ns = period_ns,
	};
	int err = -ENOMEM;

	b.nm = frame_namer__new(NULL);
	if (!b.nm)
		goto out;
	for (int i = 0; i < 3; i++) {
		int64_t id = flamegraph__name(fg, pseudo[i]);

		if (id < 0)
			goto out;
		b.pseudo[i] = FRAME_WORD(id, FLAME_OTHER);
	}
	err = add_windows(&b, q->windows, q->n, q->filter, false);
	if (!err)
		err = add_windows(&b, q->baseline, q->nr_baseline, q->filter, true);
	/* the tree takes each distinct (stack, process) once, whatever the windows */
	for (size_t k = 0; k < b.nr_leaves && !err; k++)
		err = leaf_sequence(&b, &b.leaves[k]);
	if (!err)
		err = build_tree(&b);
out:
	frame_namer__free(b.nm);
	memo_free(&b.names);
	memo_free(&b.leaf_of);
	memo_free(&b.processes);
	free(b.leaves);
	free(b.pool);
	return err;
}

const char *query__flame_unit(enum profile_type type)
{
	return type == PROFILE_CPU ? "samples" : "nanoseconds";
}

int query__flamegraph(const struct query_ctx *ctx, const struct flame_query *q, char **json)
{
	static const char *const types[] = {"cpu", "offcpu", "wall"};
	enum profile_type type = q->filter ? q->filter->type : PROFILE_CPU;
	struct flamegraph *fg = flamegraph__new();
	char from[32], to[32];
	int64_t start, end;
	int err = fg ? query__flame_add(fg, q, collector__period_ns(ctx->collector)) : -ENOMEM;

	*json = NULL;
	if (!err) {
		query__span(ctx, q->windows, q->n, q->range, &start, &end);
		*json =
		    flamegraph__json(fg, &(struct flamegraph_json_opts){
					     .type = types[type],
					     .unit = query__flame_unit(type),
					     .from = tp_format_rfc3339(start, from, sizeof(from)),
					     .to = tp_format_rfc3339(end, to, sizeof(to)),
					     .from_unix_ns = start,
					     .to_unix_ns = end,
					     .min_share = q->min_share,
					     .with_baseline = q->with_baseline,
					 });
		err = *json ? 0 : -ENOMEM;
	}
	flamegraph__free(fg);
	return err;
}
