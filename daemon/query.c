// SPDX-License-Identifier: GPL-2.0-only
/* Window selection and merged pprof profiles: of windows, and of one request (a span). The JSON
 * views are query_json.c, the /metrics text metrics.c. */
#include "query_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgroups.h"
#include "collector.h"
#include "hashmap.h"
#include "pprof.h"
#include "profile_frames.h"
#include "stages.h"
#include "sysinfo.h"
#include "tailprof_config.h"
#include "timeparse.h"

size_t query__select(struct window_ring *r, const struct query_range *range, uint64_t now_mono_ns,
		     struct window **out, size_t max)
{
	size_t n = 0, count = window_ring__count(r);

	for (size_t i = 0; i < count && n < max; i++) {
		struct window *w = window_ring__get(r, i);
		int64_t ws = (int64_t)w->start_ns + w->wall_offset_ns;
		int64_t we = (int64_t)w->end_ns + w->wall_offset_ns;

		if (range->last_ns) {
			if (w->end_ns + range->last_ns <= now_mono_ns)
				continue;
		} else {
			if (range->has_from && we <= range->from_unix_ns)
				continue;
			if (range->has_to && ws >= range->to_unix_ns)
				continue;
		}
		out[n++] = w;
	}
	return n;
}

/* ---- profile ---- */

struct merged {
	const struct stack *stack;
	const struct task *task;
	uint64_t count, offcpu_ns, offcpu_samples;
};

/* (stack, task) -> count over the selected windows. No references are taken: the windows keep
 * everything alive while the caller holds the read lock (refcounts are the drain thread's). */
struct merge_table {
	struct merged *v;
	size_t n, cap;
	struct hashmap index;
};

static bool merged_eq(const void *ctx, uint32_t i)
{
	const struct merged *key = ((const struct merged *const *)ctx)[0];
	const struct merge_table *t = ((const void *const *)ctx)[1];

	return t->v[i].stack == key->stack && t->v[i].task == key->task;
}

static int merge_add(struct merge_table *t, const struct window_entry *e)
{
	struct merged key = {e->stack, e->task, e->count, e->offcpu_ns, e->offcpu_samples};
	const void *ctx[2] = {&key, t};
	uint64_t h = hashmap__combine(hashmap__hash_ptr(e->stack), (uintptr_t)e->task);
	uint32_t i;

	if (hashmap__find(&t->index, h, merged_eq, ctx, &i)) {
		t->v[i].count += e->count;
		t->v[i].offcpu_ns += e->offcpu_ns;
		t->v[i].offcpu_samples += e->offcpu_samples;
		return 0;
	}
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 1024;
		struct merged *v = realloc(t->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		t->v = v;
		t->cap = cap;
	}
	if (hashmap__insert(&t->index, h, t->n))
		return -ENOMEM;
	t->v[t->n++] = key;
	return 0;
}

int query__parse_type(const char *name, enum profile_type *type)
{
	static const char *const names[] = {"cpu", "offcpu", "wall"};

	for (int i = 0; i < 3; i++) {
		if (!strcmp(name, names[i])) {
			*type = (enum profile_type)i;
			return 0;
		}
	}
	return -EINVAL;
}

/* Whether entry e holds values of the profile type. */
static bool entry_has(const struct window_entry *e, enum profile_type type)
{
	switch (type) {
	case PROFILE_CPU:
		return e->count;
	case PROFILE_OFFCPU:
		return e->offcpu_samples;
	default:
		return e->count || e->offcpu_samples;
	}
}

static bool filter_match(const struct profile_filter *f, const struct task *t)
{
	if (!f)
		return true;
	if (f->has_pid && t->pid != f->pid)
		return false;
	if (f->comm && strcmp(f->comm, t->comm))
		return false;
	if (f->container && !cgroups__container_is(t->cgroup, f->container))
		return false;
	if (f->has_stage && (t->stage >= 64 || !((f->stage_mask >> t->stage) & 1)))
		return false;
	return true;
}

bool query__entry_passes(const struct profile_filter *f, const struct window_entry *e)
{
	return entry_has(e, f ? f->type : PROFILE_CPU) && filter_match(f, e->task);
}

void query__span(const struct query_ctx *ctx, struct window *const *windows, size_t n,
		 const struct query_range *range, int64_t *start, int64_t *end)
{
	struct collector_status st;

	collector__status(ctx->collector, &st);
	if (n) {
		*start = window_start_unix(windows[0], st.started_mono_ns);
		*end = window_end_unix(windows[n - 1], st.last_drain_mono_ns);
		return;
	}
	/* nothing selected: the profile still says which span it is about */
	*end = sysinfo__real_ns();
	if (range && range->has_to && range->to_unix_ns < *end)
		*end = range->to_unix_ns;
	*start = *end;
	if (range && range->last_ns)
		*start = *end - (int64_t)range->last_ns;
	else if (range && range->has_from && range->from_unix_ns < *end)
		*start = range->from_unix_ns;
}

/* Samples of merged entry m in a profile of type `type` (CPU samples, off-CPU blocks, both). */
static uint64_t merged_samples(const struct merged *m, enum profile_type type)
{
	switch (type) {
	case PROFILE_CPU:
		return m->count;
	case PROFILE_OFFCPU:
		return m->offcpu_samples;
	default:
		return m->count + m->offcpu_samples;
	}
}

struct proc_weight {
	uint32_t pid;
	uint64_t samples;
	struct object *exe;
};

static bool proc_weight_eq(const void *ctx, uint32_t i)
{
	const struct proc_weight *v = ((const void *const *)ctx)[0];

	return v[i].pid == *(const uint32_t *)((const void *const *)ctx)[1];
}

/* The main executable of the profile of mt: that of the process with the most samples among
 * those whose executable appears in their stacks (ties: the lowest pid). NULL when none does
 * (kernel threads only, say) or on ENOMEM. */
static struct object *main_executable(const struct merge_table *mt, enum profile_type type)
{
	struct proc_weight *v = NULL, *best = NULL;
	struct object *exe = NULL;
	struct hashmap index = {};
	size_t n = 0, cap = 0;

	for (size_t i = 0; i < mt->n; i++) {
		const struct task *tk = mt->v[i].task;
		const void *ctx[2] = {NULL, &tk->pid};
		uint64_t h = hashmap__mix64(tk->pid);
		uint32_t k;

		if (!tk->process[0])
			continue;
		ctx[0] = v;
		if (!hashmap__find(&index, h, proc_weight_eq, ctx, &k)) {
			if (n == cap) {
				size_t ncap = cap ? 2 * cap : 64;
				struct proc_weight *nv = realloc(v, ncap * sizeof(*nv));

				if (!nv)
					goto out;
				v = nv;
				cap = ncap;
			}
			if (hashmap__insert(&index, h, n))
				goto out;
			k = n;
			v[n++] = (struct proc_weight){.pid = tk->pid};
		}
		v[k].samples += merged_samples(&mt->v[i], type);
		if (!v[k].exe)
			v[k].exe = stack_executable(tk, mt->v[i].stack);
	}
	for (size_t i = 0; i < n; i++)
		if (v[i].exe && (!best || v[i].samples > best->samples ||
				 (v[i].samples == best->samples && v[i].pid < best->pid)))
			best = &v[i];
	exe = best ? best->exe : NULL;
out:
	free(v);
	hashmap__clear(&index);
	return exe;
}

/* The profile of the merged entries mt of type `type` over [start, end) (Unix ns): gzip pprof in
 * a malloc'd *out of *len bytes; what: the comment that says what it covers. Fills sum->samples.
 * Returns 0 or -ENOMEM/-EIO. */
static int encode_profile(const struct query_ctx *ctx, const struct merge_table *mt,
			  enum profile_type type, int64_t start, int64_t end, const char *what,
			  uint8_t **out, size_t *len, struct profile_summary *sum)
{
	/* sample types per profile type; the last is pprof's default (-sample_index) */
	static const struct pprof_value_type types[3][3] = {
	    [PROFILE_CPU] = {{"samples", "count"}, {"cpu", "nanoseconds"}},
	    [PROFILE_OFFCPU] = {{"events", "count"}, {"off_cpu", "nanoseconds"}},
	    [PROFILE_WALL] = {{"cpu", "nanoseconds"},
			      {"off_cpu", "nanoseconds"},
			      {"wall", "nanoseconds"}},
	};
	static const size_t nr_types[3] = {2, 2, 3};
	struct frame_namer *nm = NULL;
	const struct pprof_location *locs;
	struct object *exe;
	struct pprof_builder *b = NULL;
	char comments[6][160], min[32];
	const char *comment_ptrs[6];
	uint64_t period = collector__period_ns(ctx->collector);
	size_t nr_comments;
	int err = -ENOMEM;

	snprintf(comments[0], sizeof(comments[0]), "host: %s", sysinfo__hostname());
	snprintf(comments[1], sizeof(comments[1]), "kernel: %s", sysinfo__kernel_release());
	snprintf(comments[2], sizeof(comments[2]), "tailprofd: %s", TAILPROF_VERSION);
	snprintf(comments[3], sizeof(comments[3]), "sampling: cpu-clock at %u Hz, all CPUs",
		 ctx->frequency_hz);
	snprintf(comments[4], sizeof(comments[4]), "%s", what);
	for (int i = 0; i < 6; i++)
		comment_ptrs[i] = comments[i];
	nr_comments = 5;
	if (type != PROFILE_CPU)
		snprintf(comments[nr_comments++], sizeof(comments[0]),
			 "off-CPU: blocks of at least %s with stacks (shorter ones are counted per "
			 "process in /api/v1/windows)",
			 tp_format_duration((int64_t)ctx->offcpu_min_ns, min, sizeof(min)));
	b = pprof_builder__new(&(struct pprof_opts){
	    .sample_types = types[type],
	    .nr_sample_types = nr_types[type],
	    .period_type = types[type][nr_types[type] - 1],
	    /* CPU samples stand for one sampling period each; off-CPU values are measured */
	    .period = type == PROFILE_CPU ? (int64_t)period : 1,
	    .time_ns = start,
	    .duration_ns = end - start,
	    .comments = comment_ptrs,
	    .nr_comments = nr_comments,
	    .default_sample_type = types[type][nr_types[type] - 1].type,
	});
	nm = b ? frame_namer__new(b) : NULL;
	if (!nm)
		goto out;
	/* pprof takes the first mapping for the profile's main binary */
	exe = main_executable(mt, type);
	if (exe) {
		const struct pprof_mapping *m = frame_namer__mapping(nm, exe);

		if (!m || pprof_builder__add_mapping(b, m))
			goto out;
	}
	for (size_t i = 0; i < mt->n; i++) {
		const struct merged *m = &mt->v[i];
		const struct task *tk = m->task;
		char pid[16], tid[16], ns_pid[16];
		const struct cgroup_entry *cg = cgroups__get(tk->cgroup);
		struct pprof_label labels[12] = {
		    {"pid", pid},
		    {"tid", tid},
		    {"comm", tk->comm},
		    {"thread", tk->thread},
		    {"process", tk->process[0] ? tk->process : tk->comm},
		};
		const char *stage = ctx->stages ? stages__name(ctx->stages, tk->stage) : NULL;
		size_t nr_labels = 5;
		int64_t values[3];
		size_t nr;

		snprintf(pid, sizeof(pid), "%u", tk->pid);
		snprintf(tid, sizeof(tid), "%u", tk->tid);
		if (tk->ns_pid) {
			snprintf(ns_pid, sizeof(ns_pid), "%u", tk->ns_pid);
			labels[nr_labels++] = (struct pprof_label){"ns_pid", ns_pid};
		}
		if (stage)
			labels[nr_labels++] = (struct pprof_label){"stage", stage};
		if (cg) {
			labels[nr_labels++] = (struct pprof_label){"cgroup", cg->path};
			if (cg->container_id[0])
				labels[nr_labels++] =
				    (struct pprof_label){"container_id", cg->container_id};
			if (cg->pod_uid[0])
				labels[nr_labels++] = (struct pprof_label){"pod_uid", cg->pod_uid};
		}
		if (tk->flags & TASK_SELF)
			labels[nr_labels++] = (struct pprof_label){"tailprofd", "self"};
		if (tk->flags & TASK_IN_GC)
			labels[nr_labels++] = (struct pprof_label){"gc", "1"};
		err = frame_namer__stack(nm, m->stack, &locs, &nr);
		if (err)
			goto out;
		switch (type) {
		case PROFILE_CPU:
			values[0] = (int64_t)m->count;
			values[1] = (int64_t)(m->count * period);
			break;
		case PROFILE_OFFCPU:
			values[0] = (int64_t)m->offcpu_samples;
			values[1] = (int64_t)m->offcpu_ns;
			break;
		default:
			values[0] = (int64_t)(m->count * period);
			values[1] = (int64_t)m->offcpu_ns;
			values[2] = values[0] + values[1];
			break;
		}
		sum->samples += merged_samples(m, type);
		err = pprof_builder__add_sample(b, locs, nr, values, labels, nr_labels);
		if (err)
			goto out;
	}
	err = pprof_builder__finish(b, out, len);
out:
	pprof_builder__free(b);
	frame_namer__free(nm);
	return err;
}

int query__cpu_profile(const struct query_ctx *ctx, struct window *const *windows, size_t n,
		       const struct profile_filter *filter, const struct query_range *range,
		       uint8_t **out, size_t *len, struct profile_summary *sum)
{
	enum profile_type type = filter ? filter->type : PROFILE_CPU;
	struct merge_table mt = {};
	char what[160], t0[32], t1[32], dur[32];
	int64_t start, end;
	int err = -ENOMEM;

	memset(sum, 0, sizeof(*sum));
	query__span(ctx, windows, n, range, &start, &end);
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < windows[i]->nr_entries; j++)
			if (query__entry_passes(filter, &windows[i]->entries[j]) &&
			    merge_add(&mt, &windows[i]->entries[j]))
				goto out;
	snprintf(what, sizeof(what), "windows: %zu, %s to %s (%s)", n,
		 tp_format_rfc3339(start, t0, sizeof(t0)), tp_format_rfc3339(end, t1, sizeof(t1)),
		 tp_format_duration(end - start, dur, sizeof(dur)));
	err = encode_profile(ctx, &mt, type, start, end, what, out, len, sum);
	if (!err) {
		sum->windows = n;
		sum->start_unix_ns = start;
		sum->end_unix_ns = end;
	}
out:
	free(mt.v);
	hashmap__clear(&mt.index);
	return err;
}

int query__request_profile(const struct query_ctx *ctx, const struct tp_span *sp,
			   int64_t wall_offset_ns, struct window *const *windows, size_t n,
			   enum profile_type type, uint8_t **out, size_t *len,
			   struct profile_summary *sum)
{
	uint64_t start = sp->start_ns, end = sp->start_ns + sp->duration_ns;
	struct merge_table mt = {};
	char what[200], id[SPAN_ID_LEN], dur[32];
	const char *stage = ctx->stages ? stages__name(ctx->stages, sp->stage) : NULL;
	int err = 0;

	memset(sum, 0, sizeof(*sum));
	for (size_t i = 0; i < n && !err; i++) {
		const struct window *w = windows[i];
		bool used = false;

		for (size_t k = 0; k < w->nr_records && !err; k++) {
			const struct window_record *r = &w->records[k];
			const struct window_entry *e = &w->entries[r->entry];
			struct window_entry one = {.stack = e->stack, .task = e->task};
			uint64_t a, b;

			if (r->tid != sp->tid || r->pid != sp->pid)
				continue;
			if (!r->blocked_ns) {
				if (type == PROFILE_OFFCPU || r->ts_ns < start || r->ts_ns >= end)
					continue;
				one.count = 1;
			} else {
				/* the part of the block within the span */
				a = r->ts_ns > start ? r->ts_ns : start;
				b = r->ts_ns + r->blocked_ns < end ? r->ts_ns + r->blocked_ns : end;
				if (type == PROFILE_CPU || b <= a)
					continue;
				one.offcpu_ns = b - a;
				one.offcpu_samples = 1;
			}
			used = true;
			err = merge_add(&mt, &one);
		}
		sum->windows += used;
	}
	if (err)
		goto out;
	stages__span_id(sp, id, sizeof(id));
	snprintf(what, sizeof(what), "request: span %s of stage %s, thread %u of process %u, %s",
		 id, stage ? stage : "[unknown]", sp->tid, sp->pid,
		 tp_format_duration((int64_t)sp->duration_ns, dur, sizeof(dur)));
	sum->start_unix_ns = (int64_t)start + wall_offset_ns;
	sum->end_unix_ns = (int64_t)end + wall_offset_ns;
	err = encode_profile(ctx, &mt, type, sum->start_unix_ns, sum->end_unix_ns, what, out, len,
			     sum);
out:
	free(mt.v);
	hashmap__clear(&mt.index);
	return err;
}
