// SPDX-License-Identifier: GPL-2.0-only
/* Window selection, merged pprof profiles, and the JSON and Prometheus views of the windows. */
#include "query.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "collector.h"
#include "gc.h"
#include "feature_table.h"
#include "gc_probes.h"
#include "hashmap.h"
#include "histogram.h"
#include "loader.h"
#include "pprof.h"
#include "proc_maps.h"
#include "profile_frames.h"
#include "push.h"
#include "python.h"
#include "source_lines.h"
#include "spikes.h"
#include "stages.h"
#include "sysinfo.h"
#include "tailprof_config.h"
#include "textbuf.h"
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

/* The start of a window as far as data goes: the first window starts when the daemon did. */
static int64_t window_start_unix(const struct window *w, uint64_t started_mono)
{
	return (int64_t)(w->start_ns > started_mono ? w->start_ns : started_mono) +
	       w->wall_offset_ns;
}

/* The end of a window as far as data goes: the current window ends at the last drain. */
static int64_t window_end_unix(const struct window *w, uint64_t last_drain)
{
	uint64_t end = w->closed || last_drain >= w->end_ns ? w->end_ns : last_drain;

	if (end < w->start_ns)
		end = w->start_ns;
	return (int64_t)end + w->wall_offset_ns;
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
	if (f->has_stage && (t->stage >= 64 || !((f->stage_mask >> t->stage) & 1)))
		return false;
	return true;
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
		struct pprof_label labels[8] = {
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
	struct collector_status st;
	struct merge_table mt = {};
	char what[160], t0[32], t1[32], dur[32];
	int64_t start, end;
	int err = -ENOMEM;

	collector__status(ctx->collector, &st);
	memset(sum, 0, sizeof(*sum));
	if (n) {
		start = window_start_unix(windows[0], st.started_mono_ns);
		end = window_end_unix(windows[n - 1], st.last_drain_mono_ns);
	} else {
		/* nothing selected: the profile still says which span it is about */
		end = sysinfo__real_ns();
		if (range && range->has_to && range->to_unix_ns < end)
			end = range->to_unix_ns;
		start = end;
		if (range && range->last_ns)
			start = end - (int64_t)range->last_ns;
		else if (range && range->has_from && range->from_unix_ns < end)
			start = range->from_unix_ns;
	}
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < windows[i]->nr_entries; j++)
			if (entry_has(&windows[i]->entries[j], type) &&
			    filter_match(filter, windows[i]->entries[j].task) &&
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

/* ---- JSON ---- */

static int cmp_runq_ns(const void *a, const void *b)
{
	const struct window_sched_proc *x = *(const struct window_sched_proc *const *)a;
	const struct window_sched_proc *y = *(const struct window_sched_proc *const *)b;

	if (x->runq_ns != y->runq_ns)
		return x->runq_ns > y->runq_ns ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

#define RUNQ_TOP 5

/* The window's scheduler view: "runq" (machine-wide run-queue latency and the processes that
 * waited longest) and "offcpu" (captured blocks, and the short ones per process). */
static void sched_json(json_t *o, const struct window *w)
{
	const struct window_sched *ws = w->sched;
	json_t *runq = json_object(), *top = json_array(), *off = json_object(), *shorts;
	const struct window_sched_proc *order[RUNQ_TOP];
	struct hist_summary h = {};
	uint64_t short_count = 0, short_ns = 0;
	size_t nr = 0;

	if (ws) {
		histogram__summarize(ws->runq_buckets, ws->runq_sum_ns, ws->runq_max_ns, &h);
		for (size_t i = 0; i < ws->nr_procs; i++) {
			const struct window_sched_proc *p = &ws->procs[i];

			short_count += p->short_count;
			short_ns += p->short_ns;
			if (!p->runq_count)
				continue;
			/* keep the RUNQ_TOP longest waits: insertion into a short sorted list */
			if (nr < RUNQ_TOP)
				order[nr++] = p;
			else if (cmp_runq_ns(&p, &order[RUNQ_TOP - 1]) < 0)
				order[RUNQ_TOP - 1] = p;
			else
				continue;
			qsort(order, nr, sizeof(order[0]), cmp_runq_ns);
		}
	}
	json_object_set_new(runq, "count", json_integer(h.count));
	json_object_set_new(runq, "p50_ns", json_integer(h.p50_ns));
	json_object_set_new(runq, "p95_ns", json_integer(h.p95_ns));
	json_object_set_new(runq, "p99_ns", json_integer(h.p99_ns));
	json_object_set_new(runq, "max_ns", json_integer(h.max_ns));
	json_object_set_new(runq, "total_ns", json_integer(h.sum_ns));
	json_object_set_new(runq, "low_sample", json_boolean(h.low_sample));
	for (size_t i = 0; i < nr; i++)
		json_array_append_new(top, json_pack("{s:i,s:I,s:I,s:I}", "pid", (int)order[i]->pid,
						     "count", (json_int_t)order[i]->runq_count,
						     "total_ns", (json_int_t)order[i]->runq_ns,
						     "max_ns", (json_int_t)order[i]->runq_max_ns));
	json_object_set_new(runq, "top", top);
	json_object_set_new(o, "runq", runq);
	json_object_set_new(off, "samples", json_integer(w->offcpu_samples));
	json_object_set_new(off, "blocked_ns", json_integer(w->offcpu_ns));
	json_object_set_new(off, "short_blocks", json_integer(short_count));
	json_object_set_new(off, "short_blocked_ns", json_integer(short_ns));
	shorts = json_array();
	for (size_t i = 0; ws && i < ws->nr_procs; i++)
		if (ws->procs[i].short_count)
			json_array_append_new(
			    shorts, json_pack("{s:i,s:I,s:I}", "pid", (int)ws->procs[i].pid,
					      "count", (json_int_t)ws->procs[i].short_count,
					      "blocked_ns", (json_int_t)ws->procs[i].short_ns));
	json_object_set_new(off, "short_by_process", shorts);
	json_object_set_new(o, "offcpu", off);
}

static void set_time(json_t *o, const char *key, int64_t unix_ns)
{
	char buf[32], k[48];

	json_object_set_new(o, key, json_string(tp_format_rfc3339(unix_ns, buf, sizeof(buf))));
	snprintf(k, sizeof(k), "%s_unix_ns", key);
	json_object_set_new(o, k, json_integer(unix_ns));
}

static char *dump(json_t *root)
{
	char *s = root ? json_dumps(root, JSON_COMPACT) : NULL;

	json_decref(root);
	return s;
}

/* ---- GC ---- */

/* Pauses stop the mutator: JVM and CPython collections, Go stop-the-world. */
struct gc_totals {
	uint64_t events, pauses, pause_ns, max_pause_ns;
	uint64_t collections, collection_ns, safepoints, safepoint_ns;
};

static void gc_totals__add(struct gc_totals *t, const struct gc_event *e)
{
	t->events++;
	switch (e->kind) {
	case TP_GC_PAUSE:
		t->pauses++;
		t->pause_ns += e->duration_ns;
		if (e->duration_ns > t->max_pause_ns)
			t->max_pause_ns = e->duration_ns;
		break;
	case TP_GC_COLLECTION:
		t->collections++;
		t->collection_ns += e->duration_ns;
		break;
	case TP_GC_SAFEPOINT:
		t->safepoints++;
		t->safepoint_ns += e->duration_ns;
		break;
	}
}

static void gc_totals__json(json_t *o, const struct gc_totals *t)
{
	json_object_set_new(o, "events", json_integer(t->events));
	json_object_set_new(o, "pauses", json_integer(t->pauses));
	json_object_set_new(o, "pause_ns", json_integer(t->pause_ns));
	json_object_set_new(o, "max_pause_ns", json_integer(t->max_pause_ns));
	json_object_set_new(o, "collections", json_integer(t->collections));
	json_object_set_new(o, "collection_ns", json_integer(t->collection_ns));
	json_object_set_new(o, "safepoints", json_integer(t->safepoints));
	json_object_set_new(o, "safepoint_ns", json_integer(t->safepoint_ns));
}

static json_t *gc_window_json(const struct window *w)
{
	struct gc_totals t = {0};
	json_t *o = json_object();

	if (w->gc)
		for (size_t i = 0; i < w->gc->nr; i++)
			gc_totals__add(&t, &w->gc->v[i]);
	gc_totals__json(o, &t);
	json_object_set_new(o, "dropped", json_integer(w->gc ? w->gc->dropped : 0));
	return o;
}

static bool gc_filter_match(const struct gc_filter *f, const struct gc_event *e)
{
	return !f ||
	       ((!f->has_pid || f->pid == e->pid) && (!f->runtime || f->runtime == e->runtime));
}

static void gc_event_json(json_t *arr, const struct gc_event *e, int64_t offset)
{
	static const char *const causes[] = {[TP_GC_GO_OTHER] = "other",
					     [TP_GC_GO_SWEEP_TERM] = "sweep_termination",
					     [TP_GC_GO_MARK_TERM] = "mark_termination"};
	json_t *o = json_object();

	json_object_set_new(o, "pid", json_integer(e->pid));
	json_object_set_new(o, "tid", json_integer(e->tid));
	json_object_set_new(o, "comm", json_string(e->comm));
	json_object_set_new(o, "runtime", json_string(gc_runtime_name(e->runtime)));
	json_object_set_new(o, "kind", json_string(gc_kind_name(e->kind)));
	set_time(o, "start", (int64_t)e->start_ns + offset);
	json_object_set_new(o, "duration_ns", json_integer(e->duration_ns));
	if (e->runtime == TP_GC_PYTHON) {
		json_object_set_new(o, "generation", json_integer(e->arg));
		json_object_set_new(o, "collected", json_integer(e->arg2));
	} else if (e->runtime == TP_GC_JVM && e->kind == TP_GC_PAUSE) {
		json_object_set_new(o, "full", json_boolean(e->arg == 1));
	} else if (e->runtime == TP_GC_GO && e->kind == TP_GC_PAUSE && e->arg >= 0 && e->arg <= 2) {
		json_object_set_new(o, "cause", json_string(causes[e->arg]));
	}
	json_array_append_new(arr, o);
}

struct gc_ref {
	const struct gc_event *e;
	int64_t offset;
};

static int gc_ref_cmp(const void *a, const void *b)
{
	const struct gc_ref *x = a, *y = b;

	return x->e->start_ns < y->e->start_ns ? -1 : x->e->start_ns > y->e->start_ns;
}

struct gc_proc_totals {
	uint32_t pid;
	uint16_t runtime;
	char comm[16];
	struct gc_totals t;
};

char *query__gc_json(const struct query_ctx *ctx, struct window *const *windows, size_t n,
		     const struct gc_filter *filter)
{
	json_t *root = json_object(), *events = json_array(), *wins = json_array(), *tot;
	struct gc_totals all = {0};
	struct collector_status st;
	struct gc_ref *refs = NULL;
	size_t nr = 0, cap = 0;
	uint64_t dropped = 0;

	collector__status(ctx->collector, &st);
	for (size_t i = 0; i < n; i++) {
		struct window *w = windows[i];
		struct gc_proc_totals *procs = NULL;
		size_t nr_procs = 0;
		struct gc_totals wt = {0};
		json_t *o = json_object(), *pa = json_array();

		set_time(o, "start", window_start_unix(w, st.started_mono_ns));
		set_time(o, "end", window_end_unix(w, st.last_drain_mono_ns));
		for (size_t k = 0; w->gc && k < w->gc->nr; k++) {
			const struct gc_event *e = &w->gc->v[k];
			size_t p;

			if (!gc_filter_match(filter, e))
				continue;
			if (nr == cap) {
				cap = cap ? cap * 2 : 256;
				refs = realloc(refs, cap * sizeof(*refs));
				if (!refs)
					abort();
			}
			refs[nr++] = (struct gc_ref){e, w->wall_offset_ns};
			gc_totals__add(&wt, e);
			gc_totals__add(&all, e);
			for (p = 0; p < nr_procs; p++)
				if (procs[p].pid == e->pid && procs[p].runtime == e->runtime)
					break;
			if (p == nr_procs) {
				procs = realloc(procs, (nr_procs + 1) * sizeof(*procs));
				if (!procs)
					abort();
				procs[p] =
				    (struct gc_proc_totals){.pid = e->pid, .runtime = e->runtime};
				memcpy(procs[p].comm, e->comm, sizeof(procs[p].comm));
				nr_procs++;
			}
			gc_totals__add(&procs[p].t, e);
		}
		dropped += w->gc ? w->gc->dropped : 0;
		gc_totals__json(o, &wt);
		json_object_set_new(o, "dropped", json_integer(w->gc ? w->gc->dropped : 0));
		for (size_t p = 0; p < nr_procs; p++) {
			json_t *po = json_object();

			json_object_set_new(po, "pid", json_integer(procs[p].pid));
			json_object_set_new(po, "comm", json_string(procs[p].comm));
			json_object_set_new(po, "runtime",
					    json_string(gc_runtime_name(procs[p].runtime)));
			gc_totals__json(po, &procs[p].t);
			json_array_append_new(pa, po);
		}
		free(procs);
		json_object_set_new(o, "processes", pa);
		json_array_append_new(wins, o);
	}
	if (nr)
		qsort(refs, nr, sizeof(*refs), gc_ref_cmp);
	for (size_t i = 0; i < nr; i++)
		gc_event_json(events, refs[i].e, refs[i].offset);
	free(refs);
	json_object_set_new(root, "events", events);
	json_object_set_new(root, "windows", wins);
	tot = json_object();
	gc_totals__json(tot, &all);
	json_object_set_new(tot, "dropped", json_integer(dropped));
	json_object_set_new(root, "totals", tot);
	json_object_set_new(root, "enabled", json_boolean(ctx->gc != NULL));
	return dump(root);
}

char *query__windows_json(const struct query_ctx *ctx, struct window *const *windows, size_t n)
{
	json_t *root = json_object(), *arr = json_array();
	uint64_t period = collector__period_ns(ctx->collector);
	struct collector_status st;

	collector__status(ctx->collector, &st);
	for (size_t i = 0; i < n; i++) {
		struct window *w = windows[i];
		json_t *o = json_object(), *drops = json_object(), *cpus = json_array();
		uint32_t nr_stacks, nr_procs;

		window__counts(w, &nr_stacks, &nr_procs);
		set_time(o, "start", window_start_unix(w, st.started_mono_ns));
		set_time(o, "end", window_end_unix(w, st.last_drain_mono_ns));
		json_object_set_new(o, "current", json_boolean(!w->closed));
		json_object_set_new(o, "samples", json_integer(w->samples));
		json_object_set_new(o, "idle_samples", json_integer(w->idle_samples));
		json_object_set_new(o, "expected_samples",
				    json_integer(window__expected(w, period)));
		json_object_set_new(o, "received_samples", json_integer(window__received(w)));
		json_object_set_new(drops, "total", json_integer(window__drops(w)));
		for (int d = 0; d < DROP_NR; d++)
			json_object_set_new(drops, window_drop_names[d], json_integer(w->drops[d]));
		json_object_set_new(o, "drops", drops);
		json_object_set_new(o, "distinct_stacks", json_integer(nr_stacks));
		json_object_set_new(o, "processes", json_integer(nr_procs));
		for (uint32_t c = 0; c < w->nr_cpus; c++) {
			if (!w->cpu_sampled_ns[c] && !w->cpu_received[c])
				continue;
			json_array_append_new(
			    cpus, json_pack("{s:i,s:I,s:I}", "cpu", (int)c, "expected_samples",
					    (json_int_t)(w->cpu_sampled_ns[c] / period),
					    "received_samples", (json_int_t)w->cpu_received[c]));
		}
		json_object_set_new(o, "cpus", cpus);
		json_object_set_new(o, "gc", gc_window_json(w));
		sched_json(o, w);
		json_array_append_new(arr, o);
	}
	json_object_set_new(root, "windows", arr);
	return dump(root);
}

/* Runtimes seen: each object with its state; unsupported ones say why. */
static json_t *gc_status_json(const struct query_ctx *ctx)
{
	json_t *o = json_object(), *objs = json_array(), *seen = json_array(),
	       *unsup = json_array();
	struct gc_object_status *v = NULL;
	struct gc_stats gs;
	size_t n, cap = 64;
	bool rt_seen[TP_GC_RUNTIME_NR] = {0};

	json_object_set_new(o, "enabled", json_boolean(ctx->gc != NULL));
	if (!ctx->gc) {
		json_decref(objs);
		json_decref(seen);
		json_decref(unsup);
		return o;
	}
	for (;;) {
		v = realloc(v, cap * sizeof(*v));
		if (!v)
			abort();
		n = gc__objects(ctx->gc, v, cap);
		if (n <= cap)
			break;
		cap = n;
	}
	gc__stats(ctx->gc, &gs);
	json_object_set_new(o, "jvm", json_boolean(gc__opts(ctx->gc)->jvm));
	json_object_set_new(o, "python", json_boolean(gc__opts(ctx->gc)->python));
	json_object_set_new(o, "go", json_boolean(gc__opts(ctx->gc)->go));
	json_object_set_new(o, "probes_attached", json_integer(gs.probes_attached));
	for (size_t i = 0; i < n; i++) {
		json_t *e = json_object();

		json_object_set_new(e, "runtime", json_string(gc_runtime_name(v[i].info.runtime)));
		json_object_set_new(e, "path", json_string(v[i].path));
		json_object_set_new(e, "dev", json_integer(v[i].dev));
		json_object_set_new(e, "inode", json_integer(v[i].ino));
		json_object_set_new(e, "state", json_string(gc_object_state_name(v[i].state)));
		json_object_set_new(e, "processes", json_integer(v[i].processes));
		json_object_set_new(e, "probes", json_integer(v[i].probes));
		json_object_set_new(e, "method", json_string(gc_method_name(v[i].info.method)));
		if (v[i].info.version[0])
			json_object_set_new(e, "version", json_string(v[i].info.version));
		if (v[i].info.reason[0])
			json_object_set_new(e, "reason", json_string(v[i].info.reason));
		if (v[i].info.runtime < TP_GC_RUNTIME_NR && v[i].processes &&
		    !rt_seen[v[i].info.runtime]) {
			rt_seen[v[i].info.runtime] = true;
			json_array_append_new(seen,
					      json_string(gc_runtime_name(v[i].info.runtime)));
		}
		if (v[i].state == GC_OBJ_UNSUPPORTED && v[i].processes)
			json_array_append_new(unsup,
					      json_pack("{s:s,s:s,s:s}", "runtime",
							gc_runtime_name(v[i].info.runtime), "path",
							v[i].path, "reason", v[i].info.reason));
		json_array_append_new(objs, e);
	}
	free(v);
	json_object_set_new(o, "runtimes", seen);
	json_object_set_new(o, "unsupported", unsup);
	json_object_set_new(o, "objects", objs);
	return o;
}

char *query__status_json(const struct query_ctx *ctx)
{
	struct collector_status st;
	json_t *o = json_object();
	uint64_t drops = 0;

	collector__status(ctx->collector, &st);
	for (int d = 0; d < DROP_NR; d++)
		drops += st.drops[d];
	json_object_set_new(o, "version", json_string(TAILPROF_VERSION));
	json_object_set_new(o, "hostname", json_string(sysinfo__hostname()));
	json_object_set_new(o, "kernel", json_string(sysinfo__kernel_release()));
	json_object_set_new(o, "pid", json_integer(getpid()));
	set_time(o, "started", st.started_unix_ns);
	json_object_set_new(o, "uptime_ns", json_integer(sysinfo__mono_ns() - st.started_mono_ns));
	json_object_set_new(o, "listen", json_string(ctx->listen ? ctx->listen : ""));
	json_object_set_new(o, "frequency_hz", json_integer(ctx->frequency_hz));
	json_object_set_new(o, "window_ns",
			    json_integer(window_ring__window_ns(collector__ring(ctx->collector))));
	json_object_set_new(o, "retention_ns", json_integer(ctx->retention_ns));
	json_object_set_new(o, "windows", json_integer(st.windows));
	json_object_set_new(o, "max_windows", json_integer(st.max_windows));
	json_object_set_new(o, "cpus_online", json_integer(st.cpus_sampled));
	json_object_set_new(o, "healthy", json_boolean(st.healthy));
	json_object_set_new(o, "probes_attached", json_integer(st.probes_attached));
	json_object_set_new(o, "samples", json_integer(st.samples));
	json_object_set_new(o, "idle_samples", json_integer(st.idle_samples));
	json_object_set_new(o, "received_samples", json_integer(st.received_samples));
	json_object_set_new(o, "expected_samples", json_integer(st.expected_samples));
	json_object_set_new(o, "drops", json_integer(drops));
	json_object_set_new(o, "objects", json_integer(st.sym.objects));
	json_object_set_new(o, "processes", json_integer(st.sym.processes));
	json_object_set_new(o, "stacks", json_integer(st.stacks));
	json_object_set_new(o, "gc", gc_status_json(ctx));
	json_object_set_new(o, "sched", json_boolean(st.sched));
	json_object_set_new(o, "offcpu_min_ns", json_integer(ctx->offcpu_min_ns));
	json_object_set_new(o, "offcpu_clock",
			    json_string(ctx->loader ? loader__block_clock(ctx->loader) : "none"));
	json_object_set_new(o, "offcpu_return",
			    json_string(ctx->loader ? loader__return_path(ctx->loader) : "none"));
	json_object_set_new(o, "offcpu_samples", json_integer(st.offcpu_samples));
	json_object_set_new(o, "runq_count", json_integer(st.runq_count));
	if (ctx->stages)
		json_object_set_new(o, "stages", stages__status_json(ctx->stages));
	if (ctx->features)
		json_object_set_new(o, "features", features__json(ctx->features));
	if (ctx->spikes)
		json_object_set_new(o, "spikes", spikes__status_json(ctx->spikes));
	return dump(o);
}

/* ---- Prometheus ---- */

/* One line per CPU that was ever sampled: its received or its expected samples. */
static void put_per_cpu(struct text *t, struct collector *c, const char *name, bool expected)
{
	for (uint32_t cpu = 0; cpu < collector__nr_cpus(c); cpu++) {
		uint64_t r, e;

		if (collector__cpu_totals(c, cpu, &r, &e))
			text_put(t, "%s{cpu=\"%u\"} %" PRIu64 "\n", name, cpu, expected ? e : r);
	}
}

/* GC totals over the windows held (per runtime), and the GC probes' own figures. */
static void put_gc_metrics(struct text *t, const struct query_ctx *ctx)
{
	struct window_ring *r = collector__ring(ctx->collector);
	struct gc_totals tot[TP_GC_RUNTIME_NR] = {0};
	struct loader_prog_stats progs[16];
	struct gc_stats gs;
	size_t np;
	static const char *const metric_names[TP_GCM_NR] = {
	    [TP_GCM_HITS] = "hits",	      [TP_GCM_EVENTS_LOST] = "events_lost",
	    [TP_GCM_UNMATCHED] = "unmatched", [TP_GCM_OPEN_FULL] = "open_full",
	    [TP_GCM_ABANDONED] = "abandoned",
	};

	for (size_t i = 0; i < window_ring__count(r); i++) {
		const struct window *w = window_ring__get(r, i);

		for (size_t k = 0; w->gc && k < w->gc->nr; k++)
			if (w->gc->v[k].runtime < TP_GC_RUNTIME_NR)
				gc_totals__add(&tot[w->gc->v[k].runtime], &w->gc->v[k]);
	}
	gc__stats(ctx->gc, &gs);
	text_metric(t, "tailprof_gc_pauses_total", "counter",
		    "GC pauses (JVM and CPython collections, Go stop-the-world), by runtime.");
	for (unsigned rt = 1; rt < TP_GC_RUNTIME_NR; rt++)
		text_put(t, "tailprof_gc_pauses_total{runtime=\"%s\"} %" PRIu64 "\n",
			 gc_runtime_name(rt), gs.pauses[rt]);
	text_metric(t, "tailprof_gc_pause_seconds_total", "counter",
		    "Time in GC pauses, by runtime.");
	for (unsigned rt = 1; rt < TP_GC_RUNTIME_NR; rt++)
		text_put(t, "tailprof_gc_pause_seconds_total{runtime=\"%s\"} %.9f\n",
			 gc_runtime_name(rt), gs.pause_ns[rt] / 1e9);
	text_metric(t, "tailprof_gc_max_pause_seconds", "gauge",
		    "Longest GC pause in the windows held, by runtime.");
	for (unsigned rt = 1; rt < TP_GC_RUNTIME_NR; rt++)
		text_put(t, "tailprof_gc_max_pause_seconds{runtime=\"%s\"} %.9f\n",
			 gc_runtime_name(rt), tot[rt].max_pause_ns / 1e9);
	text_metric(t, "tailprof_gc_probes_attached", "gauge",
		    "GC probes attached now (USDT and uprobes, the dlopen uretprobe included).");
	text_put(t, "tailprof_gc_probes_attached %d\n", gs.probes_attached);
	text_metric(t, "tailprof_gc_attaches_total", "counter",
		    "Objects GC probes were attached to.");
	text_put(t, "tailprof_gc_attaches_total %" PRIu64 "\n", gs.attaches);
	text_metric(t, "tailprof_gc_detaches_total", "counter",
		    "Objects GC probes were detached from (no process used them any more).");
	text_put(t, "tailprof_gc_detaches_total %" PRIu64 "\n", gs.detaches);
	text_metric(t, "tailprof_gc_scans_total", "counter", "Process maps read for GC discovery.");
	text_put(t, "tailprof_gc_scans_total %" PRIu64 "\n", gs.scans);
	text_metric(t, "tailprof_gc_exec_scans_skipped_total", "counter",
		    "Execs whose maps were not read at once: the executable is known not to be a "
		    "runtime (its libraries are looked at 250 ms later).");
	text_put(t, "tailprof_gc_exec_scans_skipped_total %" PRIu64 "\n", gs.exec_scans_skipped);
	text_metric(t, "tailprof_gc_bpf_total", "counter",
		    "GC program counters: probe hits, events lost (ring buffer full), ends without "
		    "a begin, phases not timed (map full), begins whose end was missed.");
	for (int m = 0; m < TP_GCM_NR; m++)
		text_put(t, "tailprof_gc_bpf_total{counter=\"%s\"} %" PRIu64 "\n", metric_names[m],
			 gs.metrics[m]);
	text_metric(t, "tailprof_gc_late_total", "counter",
		    "GC events older than every window held (not kept).");
	text_put(t, "tailprof_gc_late_total %" PRIu64 "\n", gs.late);
	np = ctx->gc_probes ? gc_probes__prog_stats(ctx->gc_probes, progs, 16) : 0;
	text_metric(t, "tailprof_gc_bpf_run_time_seconds_total", "counter",
		    "Run time of each GC BPF program (BPF_ENABLE_STATS).");
	for (size_t i = 0; i < np; i++)
		text_put(t, "tailprof_gc_bpf_run_time_seconds_total{program=\"%s\"} %.9f\n",
			 progs[i].name, progs[i].run_time_ns / 1e9);
	text_metric(t, "tailprof_gc_bpf_run_count_total", "counter",
		    "Runs of each GC BPF program.");
	for (size_t i = 0; i < np; i++)
		text_put(t, "tailprof_gc_bpf_run_count_total{program=\"%s\"} %" PRIu64 "\n",
			 progs[i].name, progs[i].run_cnt);
}

/* The table unwinder: what BPF counted, and what user space holds. */
static void put_unwind_metrics(struct text *t, const struct collector_status *st)
{
	static const struct {
		enum tp_metric m;
		const char *name, *help;
	} bpf[] = {
	    {TP_M_UNWIND_STACKS, "tailprof_unwind_stacks_total",
	     "User stacks walked with unwind tables."},
	    {TP_M_UNWIND_FP_STACKS, "tailprof_unwind_fp_stacks_total",
	     "Of those, stacks with frame-pointer steps (code without unwind information)."},
	};
	static const struct {
		enum tp_metric m;
		const char *reason;
	} stops[] = {
	    {TP_M_UNWIND_UNSUPPORTED, "unsupported_rule"},
	    {TP_M_UNWIND_NO_MAPPING, "no_mapping"},
	    {TP_M_UNWIND_READ_FAILED, "read_failed"},
	    {TP_M_UNWIND_BAD_FRAME, "bad_frame"},
	};
	const struct unwinder_stats *u = &st->unwind;

	for (size_t i = 0; i < sizeof(bpf) / sizeof(bpf[0]); i++) {
		text_metric(t, bpf[i].name, "counter", bpf[i].help);
		text_put(t, "%s %" PRIu64 "\n", bpf[i].name,
			 st->unwind_bpf[bpf[i].m - TP_M_UNWIND_STACKS]);
	}
	text_metric(
	    t, "tailprof_unwind_stops_total", "counter",
	    "Table walks that ended early, by reason (the rest reached the outermost frame or "
	    "were truncated).");
	for (size_t i = 0; i < sizeof(stops) / sizeof(stops[0]); i++)
		text_put(t, "tailprof_unwind_stops_total{reason=\"%s\"} %" PRIu64 "\n",
			 stops[i].reason, st->unwind_bpf[stops[i].m - TP_M_UNWIND_STACKS]);
	text_metric(t, "tailprof_unwind_processes", "gauge",
		    "Processes with unwind mappings in BPF.");
	text_put(t, "tailprof_unwind_processes %" PRIu64 "\n", u->processes);
	text_metric(t, "tailprof_unwind_tables", "gauge",
		    "Unwind tables (one per object) in BPF, idle objects' included.");
	text_put(t, "tailprof_unwind_tables %" PRIu64 "\n", u->tables);
	text_metric(t, "tailprof_unwind_table_rows", "gauge", "Rows of those tables.");
	text_put(t, "tailprof_unwind_table_rows %" PRIu64 "\n", u->table_rows);
	text_metric(t, "tailprof_unwind_table_bytes", "gauge",
		    "BPF memory those rows use (8 bytes a row).");
	text_put(t, "tailprof_unwind_table_bytes %" PRIu64 "\n",
		 u->table_rows * sizeof(struct tp_unwind_row));
	text_metric(t, "tailprof_unwind_capacity_bytes", "gauge",
		    "BPF memory reserved for unwind tables (--unwind-memory).");
	text_put(t, "tailprof_unwind_capacity_bytes %" PRIu64 "\n",
		 u->capacity_rows * sizeof(struct tp_unwind_row));
	text_metric(t, "tailprof_unwind_objects_without_table_total", "counter",
		    "Objects walked by frame pointers instead, by reason.");
	text_put(
	    t, "tailprof_unwind_objects_without_table_total{reason=\"over_budget\"} %" PRIu64 "\n",
	    u->over_budget);
	text_put(t, "tailprof_unwind_objects_without_table_total{reason=\"no_cfi\"} %" PRIu64 "\n",
		 u->no_cfi);
	text_put(t,
		 "tailprof_unwind_objects_without_table_total{reason=\"unreadable\"} %" PRIu64 "\n",
		 u->failed);
	text_metric(t, "tailprof_unwind_rescans_total", "counter",
		    "Maps re-read because BPF met a PC in no known mapping (dlopen, JIT).");
	text_put(t, "tailprof_unwind_rescans_total %" PRIu64 "\n", u->rescans);
	text_metric(t, "tailprof_unwind_processes_dropped_total", "counter",
		    "Processes left to frame pointers: --unwind-max-processes reached.");
	text_put(t, "tailprof_unwind_processes_dropped_total %" PRIu64 "\n", u->procs_dropped);
	text_metric(t, "tailprof_unwind_build_seconds_total", "counter",
		    "Time spent building unwind tables.");
	text_put(t, "tailprof_unwind_build_seconds_total %.6f\n", u->build_ns / 1e9);
	text_metric(t, "tailprof_unwind_table_builds_total", "counter",
		    "Unwind tables built (once per object while it stays known).");
	text_put(t, "tailprof_unwind_table_builds_total %" PRIu64 "\n", u->builds);
	text_metric(t, "tailprof_unwind_idle_objects", "gauge",
		    "Objects no known process maps, kept with their tables for the next one.");
	text_put(t, "tailprof_unwind_idle_objects %" PRIu64 "\n", u->idle_objects);
	text_metric(t, "tailprof_unwind_idle_evicted_total", "counter",
		    "Idle objects freed for a new table's room or past the cap of 1024.");
	text_put(t, "tailprof_unwind_idle_evicted_total %" PRIu64 "\n", u->idle_evicted);
}

/* Prometheus le bounds of the run-queue histogram: 2^k microseconds, k = 0 .. 22 (1 us to 4.2 s),
 * the power-of-two buckets runqlat prints (there in integer microseconds, [2^k, 2^(k+1))). */
#define RUNQ_LE_MAX_LOG2_US 22

/* A counter with one label: n values, each the count of scheduler metric metrics[i] (TP_SCH_*)
 * under label="labels[i]". */
static void put_sched_counter(struct text *t, const struct collector_status *st, const char *name,
			      const char *help, const char *label, size_t n,
			      const char *const labels[], const int metrics[])
{
	text_metric(t, name, "counter", help);
	for (size_t i = 0; i < n; i++)
		text_put(t, "%s{%s=\"%s\"} %" PRIu64 "\n", name, label, labels[i],
			 st->sched_metrics[metrics[i]]);
}

static void put_sched_metrics(struct text *t, const struct query_ctx *ctx,
			      const struct collector_status *st)
{
	static const char *const reasons[TP_SCH_NR] = {
	    [TP_SCH_NO_STORAGE] = "no_storage",		  [TP_SCH_PENDING_FULL] = "pending_full",
	    [TP_SCH_SYSCALL_CHANGED] = "syscall_changed", [TP_SCH_RINGBUF_FULL] = "ringbuf_full",
	    [TP_SCH_PROCS_FULL] = "procs_full",		  [TP_SCH_STALE_BLOCK] = "stale_block",
	};
	static const char *const sources[] = {"cache", "switch_out", "walk"};
	const uint64_t *b = collector__runq_buckets(ctx->collector);
	struct loader_prog_stats progs[16];
	size_t nr = ctx->loader ? loader__prog_stats(ctx->loader, progs, 16) : 0;

	text_metric(t, "tailprof_context_switches_total", "counter",
		    "Context switches seen (runs of the sched_switch program).");
	for (size_t p = 0; p < nr; p++)
		if (!strcmp(progs[p].name, "sched_switch"))
			text_put(t, "tailprof_context_switches_total %" PRIu64 "\n",
				 progs[p].run_cnt);
	uint64_t cum = 0;
	uint32_t i = 0;

	text_metric(t, "tailprof_offcpu_samples_total", "counter",
		    "Blocks at least --offcpu-min long, stored with their stacks.");
	text_put(t, "tailprof_offcpu_samples_total %" PRIu64 "\n", st->offcpu_samples);
	text_metric(t, "tailprof_offcpu_seconds_total", "counter", "Blocked time of those blocks.");
	text_put(t, "tailprof_offcpu_seconds_total %.9f\n", st->offcpu_ns / 1e9);
	text_metric(t, "tailprof_short_blocks_total", "counter",
		    "Blocks shorter than --offcpu-min (counted per process, no stacks).");
	text_put(t, "tailprof_short_blocks_total %" PRIu64 "\n", st->short_blocks);
	text_metric(t, "tailprof_short_blocks_seconds_total", "counter",
		    "Blocked time of those blocks.");
	text_put(t, "tailprof_short_blocks_seconds_total %.9f\n", st->short_blocked_ns / 1e9);
	text_metric(t, "tailprof_sched_drops_total", "counter",
		    "Scheduler events not recorded in full, by reason.");
	for (int r = 0; r < TP_SCH_NR; r++)
		if (reasons[r])
			text_put(t, "tailprof_sched_drops_total{reason=\"%s\"} %" PRIu64 "\n",
				 reasons[r], st->sched_metrics[r]);
	put_sched_counter(
	    t, st, "tailprof_offcpu_kernel_stacks_total",
	    "Kernel stacks of captured blocks, by source: cache (return addresses "
	    "verified in place at switch-in), switch_out (the thread's own last one, "
	    "verified where it blocked) or walk (bpf_get_task_stack).",
	    "source", 3, sources,
	    (const int[]){TP_SCH_KSTACK_CACHED, TP_SCH_KSTACK_EARLY, TP_SCH_KSTACK_WALKED});
	put_sched_counter(
	    t, st, "tailprof_offcpu_user_stacks_total",
	    "User stacks of captured blocks walked with unwind tables, by source: cache "
	    "(every word the walk read reads the same), switch_out (the thread's own "
	    "last one, verified so where it blocked) or walk.",
	    "source", 3, sources,
	    (const int[]){TP_SCH_USTACK_CACHED, TP_SCH_USTACK_EARLY, TP_SCH_USTACK_WALKED});
	put_sched_counter(
	    t, st, "tailprof_offcpu_user_stack_path_total",
	    "Captured blocks of user threads, by where their user stack was taken: at switch-out "
	    "(predicted: the thread's last captured block had the same registers), by a task work "
	    "or by sys_exit on the thread's way back to user space.",
	    "path", 3, (const char *const[]){"switch_out", "task_work", "sys_exit"},
	    (const int[]){TP_SCH_EARLY_USTACK, TP_SCH_TASK_WORK, TP_SCH_SYS_EXIT});
	text_metric(t, "tailprof_offcpu_early_stacks_wasted_total", "counter",
		    "User stacks taken at switch-out for blocks that turned out shorter than "
		    "--offcpu-min (mispredicted).");
	text_put(t, "tailprof_offcpu_early_stacks_wasted_total %" PRIu64 "\n",
		 st->sched_metrics[TP_SCH_EARLY_WASTED]);
	text_metric(
	    t, "tailprof_offcpu_repeats_total", "counter",
	    "Captured blocks sent without frames: both stacks verified where the thread blocked "
	    "as those of its last sample, which tailprofd kept.");
	text_put(t, "tailprof_offcpu_repeats_total %" PRIu64 "\n",
		 st->sched_metrics[TP_SCH_REPEAT]);
	put_sched_counter(
	    t, st, "tailprof_offcpu_blocked_again_total",
	    "Blocks in a syscall whose earlier captured block still waits for its user "
	    "stack, by kernel path: same (one wait: added to that sample) or other (a "
	    "page fault in the copy out, say: a sample of its own, without user stack).",
	    "kernel_path", 2, (const char *const[]){"same", "other"},
	    (const int[]){TP_SCH_AGAIN_SAME, TP_SCH_AGAIN_OTHER});
	text_metric(
	    t, "tailprof_offcpu_switch_sp_mispredicted_total", "counter",
	    "Kernel stacks verified at switch-out and not used: the switch saved another stack "
	    "pointer than foreseen (the kernel stack is then taken at switch-in).");
	text_put(t, "tailprof_offcpu_switch_sp_mispredicted_total %" PRIu64 "\n",
		 st->sched_metrics[TP_SCH_KSTACK_EARLY_MISSED]);
	text_metric(t, "tailprof_runq_latency_seconds", "histogram",
		    "Time runnable threads waited for a CPU (wake-up or preemption to running).");
	for (int k = 0; k <= RUNQ_LE_MAX_LOG2_US; k++) {
		uint64_t le_ns = 1000ull << k;

		/* a log-linear bucket counts as its midpoint (within 1.6%, tp_hist.h) */
		for (; i < TP_HIST_OVERFLOW && tp_hist_value(i) <= le_ns; i++)
			cum += b[i];
		text_put(t, "tailprof_runq_latency_seconds_bucket{le=\"%.9g\"} %" PRIu64 "\n",
			 le_ns / 1e9, cum);
	}
	text_put(t, "tailprof_runq_latency_seconds_bucket{le=\"+Inf\"} %" PRIu64 "\n",
		 st->runq_count);
	text_put(t, "tailprof_runq_latency_seconds_sum %.9f\n", st->runq_sum_ns / 1e9);
	text_put(t, "tailprof_runq_latency_seconds_count %" PRIu64 "\n", st->runq_count);
}

static void put_source_lines_metrics(struct text *t)
{
	struct source_lines_stats sl;

	source_lines__stats(&sl);
	const struct {
		const char *name, *type, *help;
		uint64_t value;
	} m[] = {
	    {"tailprof_source_lines_bytes", "gauge",
	     "Heap bytes of the source lines cached for profiles (DWARF, all objects).", sl.bytes},
	    {"tailprof_source_lines_objects", "gauge", "Objects with source lines cached.",
	     sl.objects},
	    {"tailprof_dwarf_reads_total", "counter",
	     "DWARF files opened by profile queries to read source lines.", sl.dwarf_reads},
	    {"tailprof_dwarf_read_failures_total", "counter",
	     "Objects whose DWARF could not be read any more (file gone or replaced): no source "
	     "lines.",
	     sl.dwarf_failures},
	    {"tailprof_source_lines_evictions_total", "counter",
	     "Objects' source line caches dropped for the memory budget.", sl.evicted_objects},
	    {"tailprof_source_lines_deferred_total", "counter",
	     "Frames a profile left without source lines: its time for reading DWARF was spent "
	     "(later profiles read on).",
	     sl.deferred},
	};

	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
		text_metric(t, m[i].name, m[i].type, m[i].help);
		text_put(t, "%s %" PRIu64 "\n", m[i].name, m[i].value);
	}
}

char *query__metrics_text(const struct query_ctx *ctx)
{
	struct text t = {.cap = 8192};
	struct collector_status st;
	struct loader_prog_stats progs[32];
	size_t nr_progs = 0;

	t.buf = malloc(t.cap);
	if (!t.buf)
		return NULL;
	t.buf[0] = 0;
	collector__status(ctx->collector, &st);

	text_metric(&t, "tailprof_up", "gauge",
		    "1 once probes are attached and the first drain is done.");
	text_put(&t, "tailprof_up %d\n", st.healthy);
	text_metric(&t, "tailprof_samples_total", "counter",
		    "Samples with stacks stored in windows.");
	text_put(&t, "tailprof_samples_total %" PRIu64 "\n", st.samples);
	text_metric(&t, "tailprof_idle_samples_total", "counter",
		    "Samples of idle CPUs (no stack).");
	text_put(&t, "tailprof_idle_samples_total %" PRIu64 "\n", st.idle_samples);
	text_metric(&t, "tailprof_received_samples_total", "counter",
		    "Samples the BPF program saw, per CPU.");
	put_per_cpu(&t, ctx->collector, "tailprof_received_samples_total", false);
	text_metric(
	    &t, "tailprof_expected_samples_total", "counter",
	    "Samples expected from the frequency and the time each CPU was sampled, per CPU.");
	put_per_cpu(&t, ctx->collector, "tailprof_expected_samples_total", true);
	text_metric(&t, "tailprof_drops_total", "counter", "Samples or stacks lost, by reason.");
	for (int d = 0; d < DROP_NR; d++)
		text_put(&t, "tailprof_drops_total{reason=\"%s\"} %" PRIu64 "\n",
			 window_drop_names[d], st.drops[d]);
	text_metric(&t, "tailprof_windows", "gauge", "Windows held in the ring.");
	text_put(&t, "tailprof_windows %u\n", st.windows);
	text_metric(&t, "tailprof_windows_max", "gauge",
		    "Capacity of the ring (retention / window).");
	text_put(&t, "tailprof_windows_max %u\n", st.max_windows);
	text_metric(&t, "tailprof_cpus_sampled", "gauge", "CPUs with an attached cpu-clock event.");
	text_put(&t, "tailprof_cpus_sampled %d\n", st.cpus_sampled);
	text_metric(&t, "tailprof_stacks", "gauge", "Distinct stacks interned.");
	text_put(&t, "tailprof_stacks %" PRIu64 "\n", st.stacks);
	text_metric(&t, "tailprof_objects", "gauge", "ELF objects with cached symbol tables.");
	text_put(&t, "tailprof_objects %" PRIu64 "\n", st.sym.objects);
	text_metric(&t, "tailprof_processes", "gauge", "Processes with cached memory maps.");
	text_put(&t, "tailprof_processes %" PRIu64 "\n", st.sym.processes);
	{
		uint64_t shared, read;

		proc_maps__read_stats(&shared, &read);
		text_metric(&t, "tailprof_maps_reads_total", "counter",
			    "/proc/PID/maps reads of a drain, from the file or shared with another "
			    "module's read of the same drain.");
		text_put(&t,
			 "tailprof_maps_reads_total{source=\"file\"} %" PRIu64 "\n"
			 "tailprof_maps_reads_total{source=\"shared\"} %" PRIu64 "\n",
			 read, shared);
	}
	text_metric(&t, "tailprof_unresolved_frames_total", "counter",
		    "User frames in no known mapping.");
	text_put(&t, "tailprof_unresolved_frames_total %" PRIu64 "\n", st.sym.unresolved);
	if (st.python) {
		text_metric(&t, "tailprof_python_unsupported_total", "counter",
			    "Processes with a CPython whose frames are not walked, by reason.");
		for (int i = 0; i < PY_UNSUP_NR; i++)
			text_put(&t,
				 "tailprof_python_unsupported_total{reason=\"%s\"} %" PRIu64 "\n",
				 python_unsupported_names[i], st.py.unsupported[i]);
		text_metric(&t, "tailprof_python_processes", "gauge",
			    "Processes whose Python frames are walked.");
		text_put(&t, "tailprof_python_processes %" PRIu64 "\n", st.py.processes);
		text_metric(&t, "tailprof_python_frames_total", "counter",
			    "Python frames resolved to a function, file and line.");
		text_put(&t, "tailprof_python_frames_total %" PRIu64 "\n", st.py.frames);
		text_metric(&t, "tailprof_python_dropped_frames_total", "counter",
			    "Python frames dropped: still in their prologue (incomplete), or read "
			    "while their frame changed (not_code).");
		text_put(&t,
			 "tailprof_python_dropped_frames_total{reason=\"incomplete\"} %" PRIu64 "\n"
			 "tailprof_python_dropped_frames_total{reason=\"not_code\"} %" PRIu64 "\n",
			 st.py.incomplete, st.py.not_code);
		text_metric(
		    &t, "tailprof_python_code_read_failures_total", "counter",
		    "Code objects that could not be read (process gone): named by address.");
		text_put(&t, "tailprof_python_code_read_failures_total %" PRIu64 "\n",
			 st.py.code_read_failed);
		text_metric(&t, "tailprof_python_stack_failures_total", "counter",
			    "Samples of a Python process whose thread state or frames could not be "
			    "read.");
		text_put(&t, "tailprof_python_stack_failures_total %" PRIu64 "\n", st.py_failed);
		text_metric(&t, "tailprof_python_truncated_stacks_total", "counter",
			    "Samples whose Python stack went past its depth limit.");
		text_put(&t, "tailprof_python_truncated_stacks_total %" PRIu64 "\n",
			 st.py_truncated);
	}
	text_metric(
	    &t, "tailprof_cut_stacks_total", "counter",
	    "User stacks ended at a return address in no executable mapping (broken frame chain).");
	text_put(&t, "tailprof_cut_stacks_total %" PRIu64 "\n", st.cut_stacks);
	text_metric(
	    &t, "tailprof_fork_fallbacks_total", "counter",
	    "Samples of a child gone before its maps were read, resolved with its parent's.");
	text_put(&t, "tailprof_fork_fallbacks_total %" PRIu64 "\n", st.sym.fork_fallbacks);
	text_metric(&t, "tailprof_maps_read_failures_total", "counter",
		    "Processes whose /proc/PID/maps could not be read (gone, pid reused).");
	text_put(&t, "tailprof_maps_read_failures_total %" PRIu64 "\n", st.sym.maps_failed);
	put_unwind_metrics(&t, &st);
	text_metric(&t, "tailprof_debug_files_total", "counter",
		    "Objects named from a separate debug file (build ID or .gnu_debuglink).");
	text_put(&t, "tailprof_debug_files_total %" PRIu64 "\n", st.sym.debug_files);
	text_metric(&t, "tailprof_minidebuginfo_total", "counter",
		    "Objects named from their MiniDebugInfo (.gnu_debugdata).");
	text_put(&t, "tailprof_minidebuginfo_total %" PRIu64 "\n", st.sym.minidebuginfo);
	text_metric(&t, "tailprof_perf_map_reads_total", "counter",
		    "JIT perf maps (/tmp/perf-PID.map) read, re-reads after growth included.");
	text_put(&t, "tailprof_perf_map_reads_total %" PRIu64 "\n", st.sym.perf_map_reads);
	text_metric(
	    &t, "tailprof_perf_map_rejected_total", "counter",
	    "JIT perf maps refused: a symbolic link, not the process's user, not a regular file, "
	    "or too large.");
	text_put(&t, "tailprof_perf_map_rejected_total %" PRIu64 "\n", st.sym.perf_map_rejected);
	text_metric(&t, "tailprof_symbol_cache_evictions_total", "counter",
		    "Entries dropped from the symbolizer's caches for their caps, by cache.");
	text_put(&t, "tailprof_symbol_cache_evictions_total{cache=\"processes\"} %" PRIu64 "\n",
		 st.sym.evicted_processes);
	text_put(&t, "tailprof_symbol_cache_evictions_total{cache=\"objects\"} %" PRIu64 "\n",
		 st.sym.evicted_objects);
	put_source_lines_metrics(&t);
	put_sched_metrics(&t, ctx, &st);
	text_metric(&t, "tailprof_window_bytes", "gauge",
		    "Heap bytes of the windows' sample tables.");
	text_put(&t, "tailprof_window_bytes %" PRIu64 "\n", st.window_bytes);
	text_metric(
	    &t, "tailprof_record_bytes", "gauge",
	    "Heap bytes of the per-sample records request profiles take (within window_bytes).");
	text_put(&t, "tailprof_record_bytes %" PRIu64 "\n", st.record_bytes);
	text_metric(&t, "tailprof_records", "gauge",
		    "Per-sample records held (current and previous window, pinned windows).");
	text_put(&t, "tailprof_records %" PRIu64 "\n", st.records);
	text_metric(&t, "tailprof_interned_bytes", "gauge",
		    "Heap bytes of interned stacks and tasks.");
	text_put(&t, "tailprof_interned_bytes %" PRIu64 "\n", st.interned_bytes);
	text_metric(&t, "tailprof_resident_memory_bytes", "gauge",
		    "Resident set size of tailprofd.");
	text_put(&t, "tailprof_resident_memory_bytes %" PRIu64 "\n", sysinfo__rss_bytes());
	text_metric(&t, "tailprof_cpu_seconds_total", "counter",
		    "User and system CPU time of tailprofd.");
	text_put(&t, "tailprof_cpu_seconds_total %.6f\n", sysinfo__cpu_ns() / 1e9);
	if (ctx->loader)
		nr_progs = loader__prog_stats(ctx->loader, progs, 32);
	text_metric(
	    &t, "tailprof_bpf_run_time_seconds_total", "counter",
	    "Run time of each BPF program (BPF_ENABLE_STATS): the in-kernel self-overhead.");
	for (size_t i = 0; i < nr_progs; i++)
		text_put(&t, "tailprof_bpf_run_time_seconds_total{program=\"%s\"} %.9f\n",
			 progs[i].name, progs[i].run_time_ns / 1e9);
	text_metric(&t, "tailprof_bpf_run_count_total", "counter", "Runs of each BPF program.");
	for (size_t i = 0; i < nr_progs; i++)
		text_put(&t, "tailprof_bpf_run_count_total{program=\"%s\"} %" PRIu64 "\n",
			 progs[i].name, progs[i].run_cnt);
	if (ctx->gc)
		put_gc_metrics(&t, ctx);
	if (ctx->loader && getenv("TAILPROF_BENCH_PID")) {
		uint64_t v[4];

		loader__bench_cost(ctx->loader, v);
		text_metric(
		    &t, "tailprof_bench_pid_ns_total", "counter",
		    "Benchmark (TAILPROF_BENCH_PID): ns perf_sample spent on that process's "
		    "samples (part=sample), of which in the Python walk (part=python).");
		text_put(&t,
			 "tailprof_bench_pid_ns_total{part=\"sample\"} %" PRIu64 "\n"
			 "tailprof_bench_pid_ns_total{part=\"python\"} %" PRIu64 "\n",
			 v[0], v[2]);
		text_metric(
		    &t, "tailprof_bench_pid_samples_total", "counter",
		    "Benchmark (TAILPROF_BENCH_PID): that process's samples, and their Python "
		    "frames (part=python_frames).");
		text_put(&t,
			 "tailprof_bench_pid_samples_total{part=\"samples\"} %" PRIu64 "\n"
			 "tailprof_bench_pid_samples_total{part=\"python_frames\"} %" PRIu64 "\n",
			 v[1], v[3]);
	}
	if (ctx->loader && getenv("TAILPROF_BENCH_LABEL_COST")) {
		uint64_t ns, clock_ns, samples;

		loader__label_cost(ctx->loader, &ns, &clock_ns, &samples);
		text_metric(
		    &t, "tailprof_bench_stage_label_ns_total", "counter",
		    "Benchmark (TAILPROF_BENCH_LABEL_COST): ns in the sampler's stage lookup "
		    "(part=lookup) and in the clock reads that timed it (part=clock).");
		text_put(&t,
			 "tailprof_bench_stage_label_ns_total{part=\"lookup\"} %" PRIu64 "\n"
			 "tailprof_bench_stage_label_ns_total{part=\"clock\"} %" PRIu64 "\n",
			 ns, clock_ns);
		text_metric(
		    &t, "tailprof_bench_stage_label_samples_total", "counter",
		    "Benchmark (TAILPROF_BENCH_LABEL_COST): samples whose stage lookup was timed.");
		text_put(&t, "tailprof_bench_stage_label_samples_total %" PRIu64 "\n", samples);
	}
	if (ctx->stages)
		text_put_owned(&t, stages__metrics_text(ctx->stages));
	if (ctx->spikes)
		text_put_owned(&t,
			       spikes__metrics_text(ctx->spikes, collector__ring(ctx->collector)));
	if (ctx->features)
		text_put_owned(&t, features__metrics_text(ctx->features));
	if (ctx->push)
		text_put_owned(&t, push__metrics_text(ctx->push));
	return text_finish(&t);
}
