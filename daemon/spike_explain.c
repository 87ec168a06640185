// SPDX-License-Identifier: GPL-2.0-only
/* The evidence behind a spike: the slow requests' accounting against the baseline's, GC pauses
 * that overlapped them, the processes that ran beside them, and the stacks and functions whose
 * share grew. Rules: docs/spikes.md. */
#include "spike_explain.h"

#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc.h"
#include "python.h"
#include "stages.h"
#include "symbolizer.h"
#include "timeparse.h"
#include "window.h"

#define TOP_ITEMS 5 /* neighbours, stacks, functions listed per cause */

/* One request and where its time went (ns). gc: pause time of its process that overlapped it,
 * taken out of whichever of cpu and offcpu was larger (the pause was spent there). */
struct req {
	const struct tp_span *sp;
	int64_t wall_offset_ns;
	uint64_t cpu, runq, off, gc;
	bool exact;
};

struct side {
	struct req *v;
	size_t n, cap;
	uint64_t gc_count, gc_total_ns, gc_max_ns; /* pauses that overlapped its requests */
};

enum part { P_DUR, P_CPU, P_RUNQ, P_OFF, P_GC, P_NR };

static uint64_t req_part(const struct req *r, enum part p)
{
	switch (p) {
	case P_DUR:
		return r->sp->duration_ns;
	case P_CPU:
		return r->cpu;
	case P_RUNQ:
		return r->runq;
	case P_OFF:
		return r->off;
	default:
		return r->gc;
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The median of part p over side's requests (0 when none). */
static uint64_t side_median(const struct side *s, enum part p)
{
	uint64_t *v, m;

	if (!s->n || !(v = malloc(s->n * sizeof(*v))))
		return 0;
	for (size_t i = 0; i < s->n; i++)
		v[i] = req_part(&s->v[i], p);
	qsort(v, s->n, sizeof(*v), cmp_u64);
	m = s->n % 2 ? v[s->n / 2] : (v[s->n / 2 - 1] + v[s->n / 2]) / 2;
	free(v);
	return m;
}

/* Pause time of pid's GC overlapping [start, end), from the GC events of windows. */
static uint64_t gc_overlap(struct window *const *ws, size_t n, uint32_t pid, uint64_t start,
			   uint64_t end, struct side *side)
{
	uint64_t total = 0;

	for (size_t i = 0; i < n; i++) {
		const struct gc_window *g = ws[i]->gc;

		for (size_t j = 0; g && j < g->nr; j++) {
			const struct gc_event *e = &g->v[j];
			uint64_t lo = e->start_ns > start ? e->start_ns : start;
			uint64_t hi =
			    e->start_ns + e->duration_ns < end ? e->start_ns + e->duration_ns : end;

			if (e->pid != pid || e->kind != TP_GC_PAUSE || hi <= lo)
				continue;
			total += hi - lo;
			side->gc_count++;
			side->gc_total_ns += hi - lo;
			if (e->duration_ns > side->gc_max_ns)
				side->gc_max_ns = e->duration_ns;
		}
	}
	return total;
}

/* The requests of stage in windows ws[0..n) with their accounting. gc_ws: the windows whose GC
 * events may overlap them (ws and the one before each). */
static void collect(struct side *side, struct window *const *ws, size_t n, uint32_t stage)
{
	for (size_t i = 0; i < n; i++) {
		struct stage_stats *st = ws[i]->stages ? ws[i]->stages->by_id[stage] : NULL;

		for (uint32_t j = 0; st && j < st->nr_spans; j++) {
			const struct tp_span *sp = &st->spans[j];
			struct span_accounting acc;
			struct req *r;

			if (side->n == side->cap) {
				size_t cap = side->cap ? 2 * side->cap : 64;
				struct req *v = realloc(side->v, cap * sizeof(*v));

				if (!v)
					return;
				side->v = v;
				side->cap = cap;
			}
			r = &side->v[side->n++];
			stages__span_accounting(sp, ws, n, &acc);
			*r = (struct req){.sp = sp,
					  .wall_offset_ns = ws[i]->wall_offset_ns,
					  .cpu = acc.cpu_ns,
					  .runq = acc.runq_ns,
					  .off = acc.offcpu_ns,
					  .exact = acc.exact};
			r->gc = gc_overlap(ws, n, sp->pid, sp->start_ns,
					   sp->start_ns + sp->duration_ns, side);
			if (r->cpu >= r->off)
				r->cpu -= r->gc < r->cpu ? r->gc : r->cpu;
			else
				r->off -= r->gc < r->off ? r->gc : r->off;
		}
	}
}

/* ---- stacks and functions whose share grew ---- */

struct item {
	const void *key; /* an interned stack, or a function name */
	const struct stack *stack;
	uint64_t spike, base;
};

struct items {
	struct item *v;
	size_t n, cap;
	uint64_t spike_total, base_total;
};

static void items_add(struct items *it, const void *key, const struct stack *stack, uint64_t v,
		      bool spike)
{
	if (it->n == it->cap) {
		size_t cap = it->cap ? 2 * it->cap : 256;
		struct item *n = realloc(it->v, cap * sizeof(*n));

		if (!n)
			return;
		it->v = n;
		it->cap = cap;
	}
	it->v[it->n++] = (struct item){key, stack, spike ? v : 0, spike ? 0 : v};
}

static int cmp_key(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)((const struct item *)a)->key;
	uintptr_t y = (uintptr_t)((const struct item *)b)->key;

	return x < y ? -1 : x > y;
}

static double growth(const struct items *it, const struct item *x)
{
	double s = it->spike_total ? (double)x->spike / (double)it->spike_total : 0;
	double b = it->base_total ? (double)x->base / (double)it->base_total : 0;

	return s - b;
}

static const struct items *sort_items;

static int cmp_growth(const void *a, const void *b)
{
	double x = growth(sort_items, a), y = growth(sort_items, b);

	return x > y ? -1 : x < y;
}

/* Merges equal keys, and sorts by growth of share, largest first. */
static void items_finish(struct items *it)
{
	size_t n = 0;

	qsort(it->v, it->n, sizeof(*it->v), cmp_key);
	for (size_t i = 0; i < it->n; i++) {
		if (n && it->v[n - 1].key == it->v[i].key) {
			it->v[n - 1].spike += it->v[i].spike;
			it->v[n - 1].base += it->v[i].base;
		} else {
			it->v[n++] = it->v[i];
		}
	}
	it->n = n;
	sort_items = it;
	qsort(it->v, it->n, sizeof(*it->v), cmp_growth);
	sort_items = NULL;
}

/* The function name of frame i of st (NULL when unknown). */
static const char *frame_name(const struct stack *st, uint32_t i)
{
	const struct frame *f = &st->frames[i];
	uint64_t at = i == 0 || i == st->nr_kernel ? f->addr : f->addr - 1;
	struct python_line pl;

	if (python__is_object(f->obj))
		return python__line(f->addr, &pl) ? pl.function : NULL;
	return f->obj ? object__lookup(f->obj, at, NULL) : NULL;
}

/* "leaf <- caller <- ..." of st's user frames (its kernel frames when it has none). */
static void describe_stack(const struct stack *st, char *buf, size_t len)
{
	uint32_t from = st->nr_user ? st->nr_kernel : 0;
	uint32_t to = st->nr_user ? st->nr_kernel + st->nr_user : st->nr_kernel;
	size_t off = 0;

	buf[0] = 0;
	for (uint32_t i = from, k = 0; i < to && k < 6 && off < len; i++, k++) {
		const char *name = frame_name(st, i);
		int n = snprintf(buf + off, len - off, "%s%s", k ? " <- " : "",
				 name ? name : "[unknown]");

		if (n < 0)
			break;
		off += (size_t)n;
	}
}

static void add_stacks(struct items *it, struct window *const *ws, size_t n, uint32_t stage,
		       bool spike, bool offcpu)
{
	for (size_t i = 0; i < n; i++) {
		for (size_t j = 0; j < ws[i]->nr_entries; j++) {
			const struct window_entry *e = &ws[i]->entries[j];
			uint64_t v = offcpu ? e->offcpu_ns : e->count;

			if (e->task->stage != stage || !v)
				continue;
			/* the shares are of the stage's samples (or off-CPU time) on each side */
			if (spike)
				it->spike_total += v;
			else
				it->base_total += v;
			if (offcpu) {
				items_add(it, e->stack, e->stack, v, spike);
				continue;
			}
			/* functions: each once per stack (a recursive one is not counted twice);
			 * each frame's name looked up once */
			{
				uint32_t nf = (uint32_t)e->stack->nr_kernel + e->stack->nr_user;
				const char *names[2 * TP_MAX_STACK_DEPTH];

				for (uint32_t f = 0; f < nf; f++) {
					bool dup = false;

					names[f] = frame_name(e->stack, f);
					for (uint32_t g = 0; names[f] && g < f && !dup; g++)
						dup = names[g] == names[f];
					if (names[f] && !dup)
						items_add(it, names[f], NULL, v, spike);
				}
			}
		}
	}
}

/* ---- neighbours: who else ran while the stage's requests waited ---- */

struct proc_share {
	uint32_t pid;
	const char *name; /* see share_add() */
	uint64_t samples;
	uint64_t name_samples; /* of the task that gave the name */
};

static int cmp_samples(const void *a, const void *b)
{
	const struct proc_share *x = a, *y = b;

	return x->samples > y->samples ? -1 : x->samples < y->samples;
}

static const char *policy_name(uint32_t pid)
{
	switch (sched_getscheduler((pid_t)pid)) {
	case SCHED_OTHER:
		return "SCHED_OTHER";
	case SCHED_BATCH:
		return "SCHED_BATCH";
	case SCHED_IDLE:
		return "SCHED_IDLE";
	case SCHED_FIFO:
		return "SCHED_FIFO";
	case SCHED_RR:
		return "SCHED_RR";
	default:
		return "unknown (exited)";
	}
}

/* Adds count samples of task t to the shares v (nv of cap), unless t is a requests' process or
 * tailprofd itself. A process is named by its latest sample where they come in time order
 * (latest: the records), else by its task with the most samples: a forked child's samples before
 * its exec carry its parent's name, and it is what it exec'd that ran. */
static void share_add(struct proc_share **v, size_t *nv, size_t *cap, const struct task *t,
		      uint64_t count, const struct side *reqs, bool latest)
{
	const char *name = t->process[0] ? t->process : t->comm;
	size_t k;

	for (size_t r = 0; r < reqs->n; r++)
		if (reqs->v[r].sp->pid == t->pid)
			return;
	if (t->flags & TASK_SELF)
		return;
	for (k = 0; k < *nv && (*v)[k].pid != t->pid; k++)
		;
	if (k == *nv) {
		if (*nv == *cap) {
			size_t c = *cap ? 2 * *cap : 32;
			struct proc_share *p = realloc(*v, c * sizeof(*p));

			if (!p)
				return;
			*v = p;
			*cap = c;
		}
		(*v)[(*nv)++] = (struct proc_share){t->pid, name, 0, 0};
	}
	if (latest || count > (*v)[k].name_samples) {
		(*v)[k].name = name;
		(*v)[k].name_samples = count;
	}
	(*v)[k].samples += count;
}

/* Whether record r falls inside one of the requests, and (thread) on a request's own thread. */
static bool in_request(const struct window_record *r, const struct side *reqs, bool thread)
{
	for (size_t i = 0; i < reqs->n; i++) {
		const struct tp_span *sp = reqs->v[i].sp;

		if (r->ts_ns >= sp->start_ns && r->ts_ns < sp->start_ns + sp->duration_ns &&
		    (!thread || r->tid == sp->tid))
			return true;
	}
	return false;
}

/* The processes that ran beside the requests: from the per-sample records of the spike windows
 * (pinned, so they keep them), the CPU samples of other processes on the CPUs the requests ran
 * on, taken while a request was going on; without records, every CPU sample of the windows.
 * *cpus receives how many CPUs were looked at (0: all, no records). */
static json_t *neighbours(struct window *const *ws, size_t n, const struct side *reqs,
			  uint32_t *cpus)
{
	struct proc_share *v = NULL;
	size_t nv = 0, cap = 0;
	uint64_t total = 0, mask[4] = {0};
	json_t *arr = json_array();
	bool records = n > 0;

	for (size_t i = 0; i < n; i++)
		records &= ws[i]->nr_records > 0 && !ws[i]->records_dropped;
	*cpus = 0;
	if (records) {
		/* the requests' CPUs (the first 256) */
		for (size_t i = 0; i < n; i++)
			for (size_t j = 0; j < ws[i]->nr_records; j++) {
				const struct window_record *r = &ws[i]->records[j];

				if (!r->blocked_ns && r->cpu < 256 && in_request(r, reqs, true))
					mask[r->cpu / 64] |= 1ULL << (r->cpu % 64);
			}
		for (int w = 0; w < 4; w++)
			*cpus += (uint32_t)__builtin_popcountll(mask[w]);
		records = *cpus > 0;
	}
	for (size_t i = 0; i < n; i++) {
		if (records) {
			for (size_t j = 0; j < ws[i]->nr_records; j++) {
				const struct window_record *r = &ws[i]->records[j];

				if (r->blocked_ns || r->cpu >= 256 ||
				    !(mask[r->cpu / 64] & (1ULL << (r->cpu % 64))) ||
				    !in_request(r, reqs, false))
					continue;
				total++;
				share_add(&v, &nv, &cap, ws[i]->entries[r->entry].task, 1, reqs,
					  true);
			}
			continue;
		}
		for (size_t j = 0; j < ws[i]->nr_entries; j++) {
			const struct window_entry *e = &ws[i]->entries[j];

			if (!e->count)
				continue;
			total += e->count;
			share_add(&v, &nv, &cap, e->task, e->count, reqs, false);
		}
	}
	if (!records)
		*cpus = 0;
	qsort(v, nv, sizeof(*v), cmp_samples);
	for (size_t i = 0; i < nv && i < TOP_ITEMS; i++) {
		json_t *o = json_object();

		json_object_set_new(o, "pid", json_integer(v[i].pid));
		json_object_set_new(o, "process", json_string(v[i].name));
		json_object_set_new(o, "share", json_real((double)v[i].samples / (double)total));
		json_object_set_new(o, "policy", json_string(policy_name(v[i].pid)));
		json_array_append_new(arr, o);
	}
	free(v);
	return arr;
}

/* ---- the causes ---- */

static const char *const kind_names[] = {
    [P_RUNQ] = "runq", [P_OFF] = "offcpu", [P_CPU] = "cpu", [P_GC] = "gc"};
static const char *const kind_words[] = {[P_RUNQ] = "waiting for a CPU",
					 [P_OFF] = "blocked off-CPU",
					 [P_CPU] = "on-CPU",
					 [P_GC] = "in GC pauses"};

static json_t *medians_json(const struct side *s)
{
	json_t *o = json_object();
	static const char *const keys[P_NR] = {"duration_ns", "cpu_ns", "runq_ns", "offcpu_ns",
					       "gc_ns"};

	for (int p = 0; p < P_NR; p++)
		json_object_set_new(o, keys[p], json_integer((json_int_t)side_median(s, p)));
	return o;
}

static json_t *top_items_json(struct items *it, bool stacks)
{
	json_t *arr = json_array();
	char desc[512];

	for (size_t i = 0; i < it->n && json_array_size(arr) < TOP_ITEMS; i++) {
		const struct item *x = &it->v[i];
		json_t *o;

		if (growth(it, x) <= 0)
			break;
		o = json_object();
		if (stacks) {
			describe_stack(x->stack, desc, sizeof(desc));
			json_object_set_new(o, "stack", json_string(desc));
			json_object_set_new(o, "spike_offcpu_ns",
					    json_integer((json_int_t)x->spike));
			json_object_set_new(o, "baseline_offcpu_ns",
					    json_integer((json_int_t)x->base));
		} else {
			json_object_set_new(o, "function", json_string(x->key));
			json_object_set_new(o, "spike_samples", json_integer((json_int_t)x->spike));
			json_object_set_new(o, "baseline_samples",
					    json_integer((json_int_t)x->base));
		}
		json_object_set_new(
		    o, "spike_share",
		    json_real(it->spike_total ? (double)x->spike / (double)it->spike_total : 0));
		json_object_set_new(
		    o, "baseline_share",
		    json_real(it->base_total ? (double)x->base / (double)it->base_total : 0));
		json_array_append_new(arr, o);
	}
	return arr;
}

static int cmp_share(const void *a, const void *b)
{
	double x = json_real_value(json_object_get(*(json_t *const *)a, "share"));
	double y = json_real_value(json_object_get(*(json_t *const *)b, "share"));

	return x > y ? -1 : x < y;
}

static json_t *windows_json(struct window *const *ws, size_t n)
{
	json_t *arr = json_array();
	char buf[40];

	for (size_t i = 0; i < n; i++)
		json_array_append_new(
		    arr, json_string(tp_format_rfc3339(
			     (int64_t)ws[i]->start_ns + ws[i]->wall_offset_ns, buf, sizeof(buf))));
	return arr;
}

static json_t *request_json(const struct req *r, struct stages *stages)
{
	json_t *o = json_object();
	char id[SPAN_ID_LEN], t[40];

	stages__span_id(r->sp, id, sizeof(id));
	json_object_set_new(o, "id", json_string(id));
	json_object_set_new(o, "stage", json_string(stages__name(stages, r->sp->stage) ?: ""));
	json_object_set_new(o, "pid", json_integer(r->sp->pid));
	json_object_set_new(o, "tid", json_integer(r->sp->tid));
	json_object_set_new(o, "start",
			    json_string(tp_format_rfc3339(
				(int64_t)r->sp->start_ns + r->wall_offset_ns, t, sizeof(t))));
	json_object_set_new(o, "start_unix_ns",
			    json_integer((json_int_t)r->sp->start_ns + r->wall_offset_ns));
	json_object_set_new(o, "duration_ns", json_integer((json_int_t)r->sp->duration_ns));
	json_object_set_new(o, "request_id", json_integer((json_int_t)r->sp->request_id));
	/* the accounting as measured: GC time is part of cpu or off-CPU here */
	json_object_set_new(o, "cpu_ns",
			    json_integer((json_int_t)(r->cpu + (r->cpu >= r->off ? r->gc : 0))));
	json_object_set_new(o, "runq_ns", json_integer((json_int_t)r->runq));
	json_object_set_new(o, "offcpu_ns",
			    json_integer((json_int_t)(r->off + (r->cpu >= r->off ? 0 : r->gc))));
	json_object_set_new(o, "gc_ns", json_integer((json_int_t)r->gc));
	json_object_set_new(o, "accounting", json_string(r->exact ? "exact" : "sampled"));
	return o;
}

static int cmp_req_duration(const void *a, const void *b)
{
	const struct req *x = a, *y = b;

	return x->sp->duration_ns > y->sp->duration_ns ? -1
						       : x->sp->duration_ns < y->sp->duration_ns;
}

json_t *spike_explain(const struct spike_explain_in *in)
{
	json_t *root = json_object(), *causes = json_array(), *ev = json_object(),
	       *reqs = json_array(), *c;
	struct side sp = {0}, bs = {0};
	struct items stacks = {0}, funcs = {0};
	uint64_t rise = in->p95_ns > in->baseline_p95_ns ? in->p95_ns - in->baseline_p95_ns : 0;
	char a[32], b[32], d[32], r[32], msg[600];

	if (!root || !causes || !ev || !reqs) {
		json_decref(root);
		json_decref(causes);
		json_decref(ev);
		json_decref(reqs);
		return NULL;
	}
	json_object_set_new(ev, "spike_windows", windows_json(in->spike, in->nr_spike));
	json_object_set_new(ev, "baseline_windows", windows_json(in->base, in->nr_base));
	json_object_set_new(ev, "rise_ns", json_integer((json_int_t)rise));
	if (!in->stage)
		goto out;
	collect(&sp, in->spike, in->nr_spike, in->stage);
	collect(&bs, in->base, in->nr_base, in->stage);
	json_object_set_new(ev, "spike_requests", json_integer((json_int_t)sp.n));
	json_object_set_new(ev, "baseline_requests", json_integer((json_int_t)bs.n));
	json_object_set_new(ev, "median_spike", medians_json(&sp));
	json_object_set_new(ev, "median_baseline", medians_json(&bs));
	add_stacks(&stacks, in->spike, in->nr_spike, in->stage, true, true);
	add_stacks(&stacks, in->base, in->nr_base, in->stage, false, true);
	items_finish(&stacks);
	add_stacks(&funcs, in->spike, in->nr_spike, in->stage, true, false);
	add_stacks(&funcs, in->base, in->nr_base, in->stage, false, false);
	items_finish(&funcs);
	if (!sp.n)
		goto out;
	for (enum part p = P_CPU; p < P_NR; p++) {
		uint64_t ms = side_median(&sp, p), mb = side_median(&bs, p);
		int64_t delta = (int64_t)ms - (int64_t)mb;
		double share = rise && delta > 0 ? (double)delta / (double)rise : 0;

		if (share > 1)
			share = 1;
		c = json_object();
		json_object_set_new(c, "kind", json_string(kind_names[p]));
		json_object_set_new(c, "share", json_real(share));
		json_object_set_new(c, "spike_median_ns", json_integer((json_int_t)ms));
		json_object_set_new(c, "baseline_median_ns", json_integer((json_int_t)mb));
		json_object_set_new(c, "delta_ns", json_integer(delta));
		snprintf(msg, sizeof(msg),
			 "%s %s a slow request (median) against %s, %s%s: %.0f%% of the %s rise",
			 kind_words[p], tp_format_duration(ms, a, sizeof(a)),
			 tp_format_duration(mb, b, sizeof(b)), delta >= 0 ? "+" : "-",
			 tp_format_duration((uint64_t)(delta >= 0 ? delta : -delta), d, sizeof(d)),
			 share * 100, tp_format_duration(rise, r, sizeof(r)));
		switch (p) {
		case P_RUNQ: {
			uint32_t cpus;

			json_object_set_new(c, "neighbours",
					    neighbours(in->spike, in->nr_spike, &sp, &cpus));
			/* 0: every CPU (the windows' per-sample records were gone) */
			json_object_set_new(c, "neighbour_cpus", json_integer(cpus));
			break;
		}
		case P_OFF:
			json_object_set_new(c, "stacks", top_items_json(&stacks, true));
			break;
		case P_CPU:
			json_object_set_new(c, "functions", top_items_json(&funcs, false));
			break;
		case P_GC:
			json_object_set_new(c, "pauses", json_integer((json_int_t)sp.gc_count));
			json_object_set_new(c, "pause_total_ns",
					    json_integer((json_int_t)sp.gc_total_ns));
			json_object_set_new(c, "pause_max_ns",
					    json_integer((json_int_t)sp.gc_max_ns));
			json_object_set_new(c, "baseline_pauses",
					    json_integer((json_int_t)bs.gc_count));
			json_object_set_new(c, "baseline_pause_total_ns",
					    json_integer((json_int_t)bs.gc_total_ns));
			break;
		default:
			break;
		}
		json_object_set_new(c, "summary", json_string(msg));
		json_array_append_new(causes, c);
	}
	qsort(sp.v, sp.n, sizeof(*sp.v), cmp_req_duration);
	for (size_t i = 0; i < sp.n && i < SPIKE_EXPLAIN_MAX_REQUESTS; i++)
		json_array_append_new(reqs, request_json(&sp.v[i], in->stages));
out:
	/* sort the causes by share: jansson arrays have no sort, so through a C array */
	{
		size_t n = json_array_size(causes);
		json_t **v = calloc(n ? n : 1, sizeof(*v)), *sorted = json_array();

		for (size_t i = 0; i < n; i++)
			v[i] = json_array_get(causes, i);
		qsort(v, n, sizeof(*v), cmp_share);
		for (size_t i = 0; i < n; i++)
			json_array_append(sorted, v[i]);
		free(v);
		json_decref(causes);
		causes = sorted;
	}
	free(sp.v);
	free(bs.v);
	free(stacks.v);
	free(funcs.v);
	json_object_set_new(root, "causes", causes);
	json_object_set_new(root, "evidence", ev);
	json_object_set_new(root, "requests", reqs);
	return root;
}
