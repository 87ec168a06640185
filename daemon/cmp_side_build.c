// SPDX-License-Identifier: GPL-2.0-only
/* A comparison side built from the live ring's windows (cmp_side.h): ids become names, stacks
 * become function names, so the copy depends on nothing the daemon may free or reuse. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmp_side.h"
#include "demangle.h"
#include "gc.h"
#include "hashmap.h"
#include "python.h"
#include "query.h"
#include "stages.h"
#include "symbolizer.h"
#include "sysinfo.h"
#include "tailprof_config.h"
#include "window.h"

#define NAME_LEN 160

struct builder {
	struct cmp_side *side;
	uint32_t cap_strings, cap_stacks;
	struct hashmap strings; /* string -> strings index */
	struct hashmap stacks;	/* frames -> stacks index */
	struct hashmap symbols; /* an object's symbol name (pointer) -> strings index */
	const char **symbol_keys;
	uint32_t *symbol_vals;
	uint32_t nr_symbols, cap_symbols;
	uint32_t *seen_gen, *seen_pos, cap_seen; /* window_stacks' scratch, by stack index */
	uint32_t frames[2 * TP_MAX_STACK_DEPTH];
};

static bool string_eq(const void *ctx, uint32_t i)
{
	const struct builder *b = ((const void *const *)ctx)[1];

	return !strcmp(b->side->strings[i], ((const void *const *)ctx)[0]);
}

/* The index of s in the side's strings, added when missing; -ENOMEM. */
static int64_t intern(struct builder *b, const char *s)
{
	const void *ctx[2] = {s, b};
	uint64_t h = hashmap__hash_str(s);
	struct cmp_side *side = b->side;
	uint32_t i;

	if (hashmap__find(&b->strings, h, string_eq, ctx, &i))
		return i;
	if (side->nr_strings == b->cap_strings) {
		uint32_t cap = b->cap_strings ? 2 * b->cap_strings : 256;
		char **v = realloc(side->strings, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		side->strings = v;
		b->cap_strings = cap;
	}
	side->strings[side->nr_strings] = strdup(s);
	if (!side->strings[side->nr_strings])
		return -ENOMEM;
	if (hashmap__insert(&b->strings, h, side->nr_strings)) {
		free(side->strings[side->nr_strings]);
		return -ENOMEM;
	}
	return side->nr_strings++;
}

static bool symbol_eq(const void *ctx, uint32_t i)
{
	const struct builder *b = ((const void *const *)ctx)[1];

	return b->symbol_keys[i] == ((const void *const *)ctx)[0];
}

/* The string of a user symbol as pprof shows it (demangled), looked up once per symbol. */
static int64_t intern_user_symbol(struct builder *b, const char *sym)
{
	const void *ctx[2] = {sym, b};
	uint64_t h = hashmap__hash_ptr(sym);
	uint32_t i;
	int64_t s;
	char *d;

	if (hashmap__find(&b->symbols, h, symbol_eq, ctx, &i))
		return b->symbol_vals[i];
	d = demangle(sym);
	s = intern(b, d ? d : sym);
	free(d);
	if (s < 0)
		return s;
	if (b->nr_symbols == b->cap_symbols) {
		uint32_t cap = b->cap_symbols ? 2 * b->cap_symbols : 256;
		const char **k = realloc(b->symbol_keys, cap * sizeof(*k));
		uint32_t *v;

		if (!k)
			return s; /* not cached: looked up again next time */
		b->symbol_keys = k;
		v = realloc(b->symbol_vals, cap * sizeof(*v));
		if (!v)
			return s;
		b->symbol_vals = v;
		b->cap_symbols = cap;
	}
	if (!hashmap__insert(&b->symbols, h, b->nr_symbols)) {
		b->symbol_keys[b->nr_symbols] = sym;
		b->symbol_vals[b->nr_symbols++] = (uint32_t)s;
	}
	return s;
}

/* Frame i's function name, as query.c's pprof locations name it. */
static int64_t frame_string(struct builder *b, const struct stack *st, uint32_t i)
{
	const struct frame *f = &st->frames[i];
	uint64_t at = i == 0 || i == st->nr_kernel ? f->addr : f->addr - 1;
	char buf[NAME_LEN];
	const char *sym;

	if (!f->obj)
		return intern(b, "[unknown]");
	if (python__is_object(f->obj)) {
		struct python_line pl;

		return intern(b, python__line(f->addr, &pl) ? pl.function : "[python]");
	}
	sym = object__lookup(f->obj, at, NULL);
	if (sym)
		return object__is_kernel(f->obj) ? intern(b, sym) : intern_user_symbol(b, sym);
	return intern(b, object__anon_name(f->obj, at, buf, sizeof(buf)));
}

static bool stack_eq(const void *ctx, uint32_t i)
{
	const struct builder *b = ((const void *const *)ctx)[0];
	uint32_t n = *(const uint32_t *)((const void *const *)ctx)[1];
	const struct cmp_stack *s = &b->side->stacks[i];

	return s->nr_frames == n && !memcmp(s->frames, b->frames, n * sizeof(*b->frames));
}

/* The index of st in the side's stacks (by names), added when missing; -ENOMEM. */
static int64_t intern_stack(struct builder *b, const struct stack *st)
{
	uint32_t n = 0, i;
	const void *ctx[2] = {b, &n};
	struct cmp_side *side = b->side;
	struct cmp_stack *s;
	uint64_t h;

	for (uint32_t f = 0; f < (uint32_t)st->nr_kernel + st->nr_user &&
			     n < sizeof(b->frames) / sizeof(b->frames[0]);
	     f++) {
		int64_t v = frame_string(b, st, f);

		if (v < 0)
			return v;
		b->frames[n++] = (uint32_t)v;
	}
	h = hashmap__hash_bytes(b->frames, n * sizeof(*b->frames));
	if (hashmap__find(&b->stacks, h, stack_eq, ctx, &i))
		return i;
	if (side->nr_stacks == b->cap_stacks) {
		uint32_t cap = b->cap_stacks ? 2 * b->cap_stacks : 256;
		struct cmp_stack *v = realloc(side->stacks, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		side->stacks = v;
		b->cap_stacks = cap;
	}
	s = &side->stacks[side->nr_stacks];
	s->nr_frames = n;
	s->frames = malloc((n ? n : 1) * sizeof(*s->frames));
	if (!s->frames)
		return -ENOMEM;
	memcpy(s->frames, b->frames, n * sizeof(*s->frames));
	if (hashmap__insert(&b->stacks, h, side->nr_stacks)) {
		free(s->frames);
		return -ENOMEM;
	}
	return side->nr_stacks++;
}

static int stage_cells(const struct stage_stats *st, struct cmp_stage_win *sw)
{
	uint64_t *dense;
	int err;

	if (st->cells || !st->dense) {
		sw->nr_cells = st->nr_cells;
		sw->cells = malloc((st->nr_cells ? st->nr_cells : 1) * sizeof(*sw->cells));
		if (!sw->cells)
			return -ENOMEM;
		memcpy(sw->cells, st->cells, st->nr_cells * sizeof(*sw->cells));
		return 0;
	}
	dense = calloc(TP_HIST_BUCKETS, sizeof(*dense));
	if (!dense)
		return -ENOMEM;
	for (uint32_t k = 0; k < TP_HIST_BUCKETS; k++)
		dense[k] = st->dense[k];
	err = cmp_side__cells(dense, &sw->cells, &sw->nr_cells);
	free(dense);
	return err;
}

/* The window's stage record of stage id (slot[] maps ids to it), added when missing. */
static struct cmp_stage_win *stage_slot(struct builder *b, const struct query_ctx *ctx,
					struct cmp_window *cw, int32_t *slot, uint32_t id)
{
	const char *name;
	int64_t s;

	if (id >= TP_MAX_STAGES)
		return NULL;
	if (slot[id] >= 0)
		return &cw->stages[slot[id]];
	name = ctx->stages ? stages__name(ctx->stages, id) : NULL;
	if (!name)
		return NULL; /* an id nobody named: its samples count in the totals only */
	s = intern(b, name);
	if (s < 0)
		return NULL;
	slot[id] = (int32_t)cw->nr_stages;
	cw->stages[cw->nr_stages] = (struct cmp_stage_win){.name = (uint32_t)s};
	return &cw->stages[cw->nr_stages++];
}

/* Where stack i sits in the current window's stacks[]: pos[i] when gen[i] is the window's. */
static int seen_reserve(struct builder *b, uint32_t n)
{
	uint32_t cap = b->cap_seen ? 2 * b->cap_seen : 1024, *g, *p;

	if (n <= b->cap_seen)
		return 0;
	while (cap < n)
		cap *= 2;
	g = realloc(b->seen_gen, cap * sizeof(*g));
	if (!g)
		return -ENOMEM;
	b->seen_gen = g;
	p = realloc(b->seen_pos, cap * sizeof(*p));
	if (!p)
		return -ENOMEM;
	b->seen_pos = p;
	memset(b->seen_gen + b->cap_seen, 0, (cap - b->cap_seen) * sizeof(*g));
	b->cap_seen = cap;
	return 0;
}

/* The window's CPU samples by named stack, and each stage's CPU samples and off-CPU time. */
static int window_stacks(struct builder *b, const struct window *w, struct cmp_window *cw,
			 const struct query_ctx *ctx, int32_t *slot, uint32_t gen)
{
	cw->stacks = malloc((w->nr_entries ? w->nr_entries : 1) * sizeof(*cw->stacks));
	if (!cw->stacks)
		return -ENOMEM;
	for (size_t i = 0; i < w->nr_entries; i++) {
		const struct window_entry *e = &w->entries[i];
		struct cmp_stage_win *sw =
		    e->task->stage ? stage_slot(b, ctx, cw, slot, e->task->stage) : NULL;
		int64_t s;

		if (sw) {
			sw->cpu_samples += e->count;
			sw->offcpu_ns += e->offcpu_ns;
		}
		if (!e->count)
			continue;
		s = intern_stack(b, e->stack);
		if (s < 0 || seen_reserve(b, b->side->nr_stacks))
			return -ENOMEM;
		if (b->seen_gen[s] == gen) {
			cw->stacks[b->seen_pos[s]].count += e->count;
			continue;
		}
		b->seen_gen[s] = gen;
		b->seen_pos[s] = cw->nr_stacks;
		cw->stacks[cw->nr_stacks++] =
		    (struct cmp_stack_count){.stack = (uint32_t)s, .count = e->count};
	}
	return 0;
}

static int build_window(struct builder *b, const struct query_ctx *ctx, struct window *w,
			struct cmp_window *cw, uint32_t gen)
{
	int32_t slot[TP_MAX_STAGES];

	memset(slot, 0xff, sizeof(slot));
	cw->start_unix_ns = (int64_t)w->start_ns + w->wall_offset_ns;
	cw->end_unix_ns = (int64_t)w->end_ns + w->wall_offset_ns;
	cw->cpu_samples = w->samples;
	cw->offcpu_ns = w->offcpu_ns;
	cw->offcpu_samples = w->offcpu_samples;
	cw->drops = window__drops(w);
	if (w->sched) {
		cw->runq_count = w->sched->runq_count;
		cw->runq_sum_ns = w->sched->runq_sum_ns;
		cw->runq_max_ns = w->sched->runq_max_ns;
		if (cmp_side__cells(w->sched->runq_buckets, &cw->runq_cells, &cw->nr_runq_cells))
			return -ENOMEM;
	}
	if (w->gc) {
		for (size_t i = 0; i < w->gc->nr; i++) {
			const struct gc_event *ev = &w->gc->v[i];

			if (ev->kind != TP_GC_PAUSE)
				continue;
			cw->gc_count++;
			cw->gc_pause_ns += ev->duration_ns;
			if (ev->duration_ns > cw->gc_max_ns)
				cw->gc_max_ns = ev->duration_ns;
		}
	}
	/* every stage id with data or samples has a slot: at most TP_MAX_STAGES records */
	cw->stages = calloc(TP_MAX_STAGES, sizeof(*cw->stages));
	if (!cw->stages)
		return -ENOMEM;
	for (uint32_t id = 0; w->stages && id < TP_MAX_STAGES; id++) {
		const struct stage_stats *st = w->stages->by_id[id];
		struct cmp_stage_win *sw;
		uint64_t most;

		if (!st || !st->count)
			continue;
		sw = stage_slot(b, ctx, cw, slot, id);
		if (!sw)
			continue;
		sw->count = st->count;
		sw->sum_ns = st->sum_ns;
		sw->max_ns = st->max_ns;
		/* the collector takes count, sum and max one after another while the probes add:
		 * a request's latency may land in this window's sum and the next one's count, and a
		 * side must stay consistent (cmp_side__valid) */
		if (!__builtin_mul_overflow(sw->count, sw->max_ns, &most) && sw->sum_ns > most)
			sw->sum_ns = most;
		if (stage_cells(st, sw))
			return -ENOMEM;
	}
	return window_stacks(b, w, cw, ctx, slot, gen);
}

int cmp_side__from_windows(const struct query_ctx *ctx, struct window *const *windows, size_t n,
			   int64_t from_unix_ns, int64_t to_unix_ns, struct cmp_side **out)
{
	struct builder b = {0};
	struct cmp_side *side = calloc(1, sizeof(*side));
	struct cmp_conditions *c;
	int err = -ENOMEM;

	*out = NULL;
	if (!side || n > UINT32_MAX)
		goto fail;
	b.side = side;
	c = &side->cond;
	snprintf(c->host, sizeof(c->host), "%s", sysinfo__hostname());
	snprintf(c->kernel, sizeof(c->kernel), "%s", sysinfo__kernel_release());
	snprintf(c->version, sizeof(c->version), "%s", TAILPROF_VERSION);
	c->frequency_hz = ctx->frequency_hz;
	c->sample_period_ns = n ? windows[0]->sample_period_ns : 0;
	c->window_ns = n ? windows[0]->end_ns - windows[0]->start_ns : 0;
	c->from_unix_ns = from_unix_ns;
	c->to_unix_ns = to_unix_ns;
	side->windows = calloc(n ? n : 1, sizeof(*side->windows));
	if (!side->windows)
		goto fail;
	for (size_t i = 0; i < n; i++) {
		struct cmp_window *cw = &side->windows[side->nr_windows];

		/* a window whose wall-clock span overlaps the one before (the clock stepped back
		 * between them) is left out: a side's windows never overlap (cmp_side__valid) */
		if (cw > side->windows &&
		    (int64_t)windows[i]->start_ns + windows[i]->wall_offset_ns < cw[-1].end_unix_ns)
			continue;
		side->nr_windows++;
		err = build_window(&b, ctx, windows[i], cw, side->nr_windows);
		if (err)
			goto fail;
	}
	err = 0;
	*out = side;
	side = NULL;
fail:
	hashmap__clear(&b.strings);
	hashmap__clear(&b.stacks);
	hashmap__clear(&b.symbols);
	free(b.symbol_keys);
	free(b.symbol_vals);
	free(b.seen_gen);
	free(b.seen_pos);
	cmp_side__free(side);
	return err;
}
