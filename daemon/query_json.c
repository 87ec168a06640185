// SPDX-License-Identifier: GPL-2.0-only
/* The JSON views of the windows: /api/v1/windows (with each window's scheduler and GC figures),
 * /api/v1/status and /api/v1/gc. */
#include "query_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cgroups.h"
#include "collector.h"
#include "feature_table.h"
#include "json_util.h"
#include "gc.h"
#include "hashmap.h"
#include "histogram.h"
#include "resource_limits.h"
#include "loader.h"
#include "spikes.h"
#include "stages.h"
#include "sysinfo.h"
#include "tailprof_config.h"
#include "timeparse.h"
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

/* ---- GC ---- */

void gc_totals__add(struct gc_totals *t, const struct gc_event *e)
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
	tp_json_set_time(o, "start", (int64_t)e->start_ns + offset);
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

		tp_json_set_time(o, "start", window_start_unix(w, st.started_mono_ns));
		tp_json_set_time(o, "end", window_end_unix(w, st.last_drain_mono_ns));
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
	return tp_json_dump(root);
}

struct container_total {
	uint32_t cgroup;
	uint64_t samples, offcpu_ns;
};

static int container_total_cmp(const void *a, const void *b)
{
	const struct container_total *x = a, *y = b;

	if (x->samples != y->samples)
		return x->samples < y->samples ? 1 : -1;
	if (x->offcpu_ns != y->offcpu_ns)
		return x->offcpu_ns < y->offcpu_ns ? 1 : -1;
	return x->cgroup < y->cgroup ? -1 : x->cgroup > y->cgroup;
}

static bool container_total_eq(const void *ctx, uint32_t i)
{
	const struct container_total *const *t = ctx;

	return (*t)[i].cgroup == t[1]->cgroup;
}

json_t *query__containers_json(struct window *const *windows, size_t n)
{
	struct container_total *t = NULL, want;
	const struct container_total *key[2] = {NULL, &want};
	struct hashmap idx = {0};
	size_t nr = 0, cap = 0;
	json_t *arr = json_array();

	for (size_t i = 0; i < n; i++) {
		for (size_t j = 0; j < windows[i]->nr_entries; j++) {
			const struct window_entry *e = &windows[i]->entries[j];
			uint64_t h = hashmap__mix64(e->task->cgroup);
			uint32_t k;

			if (!e->task->cgroup)
				continue;
			want.cgroup = e->task->cgroup;
			key[0] = t;
			if (!hashmap__find(&idx, h, container_total_eq, key, &k)) {
				if (nr == cap) {
					struct container_total *nt;

					nt = realloc(t, (cap ? 2 * cap : 16) * sizeof(*t));
					if (!nt)
						continue;
					t = nt;
					cap = cap ? 2 * cap : 16;
				}
				if (hashmap__insert(&idx, h, nr))
					continue;
				k = nr;
				t[nr++] = (struct container_total){.cgroup = e->task->cgroup};
			}
			t[k].samples += e->count;
			t[k].offcpu_ns += e->offcpu_ns;
		}
	}
	hashmap__clear(&idx);
	if (nr)
		qsort(t, nr, sizeof(*t), container_total_cmp);
	for (size_t k = 0; k < nr && k < QUERY_CONTAINERS_MAX; k++) {
		const struct cgroup_entry *cg = cgroups__get(t[k].cgroup);
		json_t *o;

		if (!cg)
			continue;
		o = json_pack("{s:s,s:I,s:I}", "cgroup", cg->path, "samples",
			      (json_int_t)t[k].samples, "offcpu_ns", (json_int_t)t[k].offcpu_ns);
		if (cg->container_id[0])
			json_object_set_new(o, "container_id", json_string(cg->container_id));
		if (cg->pod_uid[0])
			json_object_set_new(o, "pod_uid", json_string(cg->pod_uid));
		json_array_append_new(arr, o);
	}
	free(t);
	return arr;
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
		tp_json_set_time(o, "start", window_start_unix(w, st.started_mono_ns));
		tp_json_set_time(o, "end", window_end_unix(w, st.last_drain_mono_ns));
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
		json_object_set_new(o, "containers", query__containers_json(&windows[i], 1));
		sched_json(o, w);
		/* the timeline's figures at the top level too (issue 22) */
		json_object_set(o, "runq_p99_ns",
				json_object_get(json_object_get(o, "runq"), "p99_ns"));
		json_object_set(o, "gc_pause_ns",
				json_object_get(json_object_get(o, "gc"), "pause_ns"));
		json_object_set_new(o, "offcpu_ns", json_integer(w->offcpu_ns));
		json_array_append_new(arr, o);
	}
	json_object_set_new(root, "windows", arr);
	return tp_json_dump(root);
}

char *query__heatmap_json(const struct query_ctx *ctx, struct window *const *windows, size_t n,
			  bool offcpu)
{
	json_t *root = json_object(), *arr = json_array();
	struct window_ring *ring = collector__ring(ctx->collector);
	uint64_t window_ns = window_ring__window_ns(ring), max = 0;
	struct collector_status st;

	collector__status(ctx->collector, &st);

	json_object_set_new(root, "type", json_string(offcpu ? "offcpu" : "cpu"));
	json_object_set_new(root, "window_ns", json_integer((json_int_t)window_ns));
	json_object_set_new(root, "rows", json_integer(TP_HEAT_ROWS));
	json_object_set_new(root, "row_ns", json_integer((json_int_t)(window_ns / TP_HEAT_ROWS)));
	for (size_t i = 0; i < n; i++) {
		const uint32_t *rows = offcpu ? windows[i]->heat_offcpu : windows[i]->heat_cpu;
		json_t *o = json_object(), *counts = json_array();
		/* "start" as /api/v1/windows has it (the first window starts with the daemon) */
		int64_t start = window_start_unix(windows[i], st.started_mono_ns);

		for (int r = 0; r < TP_HEAT_ROWS; r++) {
			json_array_append_new(counts, json_integer(rows[r]));
			max = rows[r] > max ? rows[r] : max;
		}
		tp_json_set_time(o, "start", start);
		json_object_set_new(o, "start_ns", json_integer((json_int_t)windows[i]->start_ns));
		json_object_set_new(o, "counts", counts);
		json_array_append_new(arr, o);
	}
	json_object_set_new(root, "max", json_integer((json_int_t)max));
	json_object_set_new(root, "windows", arr);
	return tp_json_dump(root);
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
	tp_json_set_time(o, "started", st.started_unix_ns);
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
	json_object_set_new(o, "limits", limits__status_json(ctx));
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
	return tp_json_dump(o);
}
