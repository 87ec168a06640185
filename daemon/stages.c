// SPDX-License-Identifier: GPL-2.0-only
/* The stage registry, per-window stage data, and their JSON and Prometheus views. */
#include "stages.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "config.h"
#include "histogram.h"
#include "json_util.h"
#include "log.h"
#include "probes.h"
#include "sysinfo.h"
#include "textbuf.h"
#include "timeparse.h"
#include "window.h"

/* Upper bounds of the Prometheus histogram buckets, in ns (then +Inf). */
static const uint64_t prom_le_ns[] = {
    10000,     25000,	   50000,      100000,	   250000,	500000,	   1000000,
    2500000,   5000000,	   10000000,   25000000,   50000000,	100000000, 250000000,
    500000000, 1000000000, 2500000000, 5000000000, 10000000000,
};
#define PROM_BUCKETS (sizeof(prom_le_ns) / sizeof(prom_le_ns[0]) + 1)

/* A file as uprobes see it: probes are on the inode, not the path. */
struct file_id {
	uint64_t dev, ino;
};

/* The file at path now ({0, 0} when there is none). */
static struct file_id file_id_of(const char *path)
{
	struct stat st;

	if (!path || stat(path, &st))
		return (struct file_id){0, 0};
	return (struct file_id){st.st_dev, st.st_ino};
}

static bool same_file(const char *path, struct file_id id)
{
	struct file_id now = file_id_of(path);

	return now.dev == id.dev && now.ino == id.ino;
}

struct stage {
	char name[TP_STAGE_NAME_LEN]; /* "" for unused ids */
	bool configured;	      /* a [stage] section names it now */
	bool app;		      /* named by an application (stage.h) */
	char where[320];	      /* what it probes, for the status */
	char error[400];	      /* why it is not attached; "" when it is */
	struct probe *probe;
	/* the configuration it was attached with, to tell changes on reload */
	char *binary, *function, *usdt_begin, *usdt_end;
	struct file_id file; /* the binary attached to: a new file at its path re-attaches */
	int32_t pid;
	uint64_t threshold_ns;
	uint64_t attached_mono_ns;
	/* since the daemon started */
	uint64_t total_count, total_sum_ns;
	uint64_t prom[PROM_BUCKETS];
	/* slow spans a window could not keep past its STAGE_SPANS_KEPT: the fastest went */
	uint64_t spans_not_kept;
};

struct app {
	char name[TP_STAGE_NAME_LEN];
	char *binary;
	struct file_id file;
	int32_t pid;
	char error[400];
	struct probe *probe;
	uint64_t attached_mono_ns;
};

struct stages {
	struct probes *probes;
	struct stage stages[TP_MAX_STAGES]; /* by id; 0 unused */
	struct app apps[CONFIG_MAX_APPS];
	size_t nr_apps;
	uint64_t attach_failures; /* since start */
	uint8_t prom_of_bucket[TP_HIST_BUCKETS];
};

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);

	if (!p)
		abort(); /* fixed-size allocations: abort on failure (STYLE.md) */
	return p;
}

static char *xstrdup_or_null(const char *s)
{
	char *p;

	if (!s)
		return NULL;
	p = strdup(s);
	if (!p)
		abort();
	return p;
}

static bool same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

/* ---- per-window data ---- */

void stage_window__free(struct stage_window *sw)
{
	if (!sw)
		return;
	for (int i = 0; i < TP_MAX_STAGES; i++) {
		if (!sw->by_id[i])
			continue;
		free(sw->by_id[i]->dense);
		free(sw->by_id[i]->cells);
		free(sw->by_id[i]);
	}
	free(sw);
}

static struct stage_stats *stats_of(struct window *w, uint32_t id)
{
	if (!w->stages)
		w->stages = xcalloc(1, sizeof(*w->stages));
	if (!w->stages->by_id[id])
		w->stages->by_id[id] = xcalloc(1, sizeof(struct stage_stats));
	return w->stages->by_id[id];
}

/* Makes st's histogram dense again (a straggler reached a closed window). */
static void expand(struct stage_stats *st)
{
	if (st->dense)
		return;
	st->dense = xcalloc(TP_HIST_BUCKETS, sizeof(uint32_t));
	for (uint32_t i = 0; i < st->nr_cells; i++)
		st->dense[st->cells[i].bucket] = st->cells[i].count;
	free(st->cells);
	st->cells = NULL;
	st->nr_cells = 0;
}

static void compact(struct stage_stats *st)
{
	uint32_t n = 0, j = 0;

	if (!st->dense)
		return;
	for (uint32_t b = 0; b < TP_HIST_BUCKETS; b++)
		n += st->dense[b] != 0;
	st->cells = xcalloc(n, sizeof(*st->cells));
	for (uint32_t b = 0; b < TP_HIST_BUCKETS; b++)
		if (st->dense[b])
			st->cells[j++] = (struct hist_cell){b, st->dense[b]};
	st->nr_cells = n;
	free(st->dense);
	st->dense = NULL;
}

void stage_stats__accumulate(const struct stage_stats *st, uint64_t *acc)
{
	if (st->dense) {
		for (uint32_t b = 0; b < TP_HIST_BUCKETS; b++)
			acc[b] += st->dense[b];
	} else {
		for (uint32_t i = 0; i < st->nr_cells; i++)
			acc[st->cells[i].bucket] += st->cells[i].count;
	}
}

uint64_t stage_stats__percentile(const struct stage_stats *st, uint32_t q_permille)
{
	uint64_t total = 0, rank, cum = 0, v;
	uint32_t b;

	if (!st)
		return 0;
	if (st->dense) {
		uint64_t *acc = xcalloc(TP_HIST_BUCKETS, sizeof(*acc));

		stage_stats__accumulate(st, acc);
		for (b = 0; b < TP_HIST_BUCKETS; b++)
			total += acc[b];
		v = histogram__percentile(acc, total, st->max_ns, q_permille);
		free(acc);
		return v;
	}
	/* cells are in bucket order (compact): the same nearest-rank walk without a dense copy */
	for (uint32_t i = 0; i < st->nr_cells; i++)
		total += st->cells[i].count;
	if (!total)
		return 0;
	rank = histogram__rank(total, q_permille);
	for (uint32_t i = 0; i < st->nr_cells; i++) {
		cum += st->cells[i].count;
		if (cum < rank)
			continue;
		b = st->cells[i].bucket;
		v = b == TP_HIST_OVERFLOW ? st->max_ns : tp_hist_value(b);
		return v < st->max_ns || !st->max_ns ? v : st->max_ns;
	}
	return st->max_ns;
}

/* ---- registry ---- */

struct stages *stages__new(struct probes *probes)
{
	struct stages *s = xcalloc(1, sizeof(*s));

	s->probes = probes;
	for (uint32_t b = 0; b < TP_HIST_BUCKETS; b++) {
		uint64_t v = b == TP_HIST_OVERFLOW ? UINT64_MAX : tp_hist_value(b);
		uint8_t i = 0;

		while (i < PROM_BUCKETS - 1 && v > prom_le_ns[i])
			i++;
		s->prom_of_bucket[b] = i;
	}
	return s;
}

static void stage_clear_config(struct stage *st)
{
	free(st->binary);
	free(st->function);
	free(st->usdt_begin);
	free(st->usdt_end);
	st->binary = st->function = st->usdt_begin = st->usdt_end = NULL;
}

void stages__free(struct stages *s)
{
	if (!s)
		return;
	for (int i = 0; i < TP_MAX_STAGES; i++) {
		probe__detach(s->stages[i].probe);
		stage_clear_config(&s->stages[i]);
	}
	for (size_t i = 0; i < s->nr_apps; i++) {
		probe__detach(s->apps[i].probe);
		free(s->apps[i].binary);
	}
	free(s);
}

static uint32_t find_id(const struct stages *s, const char *name, uint32_t from, uint32_t to)
{
	for (uint32_t id = from; id < to; id++)
		if (!strcmp(s->stages[id].name, name))
			return id;
	return 0;
}

/* The id of configured stage name: its old one, else the first free configured id. */
static uint32_t config_id(struct stages *s, const char *name)
{
	uint32_t id = find_id(s, name, 1, TP_FIRST_DYN_STAGE);

	if (id)
		return id;
	for (id = 1; id < TP_FIRST_DYN_STAGE; id++)
		if (!s->stages[id].name[0])
			return id;
	return 0;
}

static void attach_stage(struct stages *s, uint32_t id, const struct config_stage *cs)
{
	struct stage *st = &s->stages[id];
	struct probe_spec spec = {
	    .kind = cs->function ? PROBE_FUNCTION : PROBE_USDT,
	    .binary = cs->binary,
	    .function = cs->function,
	    .usdt_begin = cs->usdt_begin,
	    .usdt_end = cs->usdt_end,
	    .pid = cs->pid,
	    .stage = id,
	};
	char pid[32] = "";

	snprintf(st->name, sizeof(st->name), "%s", cs->name);
	st->configured = true;
	stage_clear_config(st);
	st->binary = xstrdup_or_null(cs->binary);
	st->function = xstrdup_or_null(cs->function);
	st->usdt_begin = xstrdup_or_null(cs->usdt_begin);
	st->usdt_end = xstrdup_or_null(cs->usdt_end);
	st->pid = cs->pid;
	st->threshold_ns = cs->threshold_ns;
	st->file = file_id_of(cs->binary);
	if (cs->pid > 0)
		snprintf(pid, sizeof(pid), ", pid %d", cs->pid);
	if (cs->function)
		snprintf(st->where, sizeof(st->where), "function %s in %s%s", cs->function,
			 cs->binary, pid);
	else
		snprintf(st->where, sizeof(st->where), "usdt %s .. %s in %s%s", cs->usdt_begin,
			 cs->usdt_end, cs->binary, pid);
	/* one stage whatever names it: an application's stage.h marks of this name too */
	probes__name_stage(s->probes, st->name, id);
	st->error[0] = 0;
	st->probe = probes__attach(s->probes, &spec, st->error, sizeof(st->error));
	if (!st->probe) {
		s->attach_failures++;
		pr_warn("stage %s: %s", st->name, st->error);
	} else {
		st->attached_mono_ns = sysinfo__mono_ns();
		pr_info("stage %s: timing %s", st->name, st->where);
	}
}

static void attach_app(struct stages *s, struct app *a, const struct config_app *ca)
{
	struct probe_spec spec = {.kind = PROBE_APP, .binary = ca->binary, .pid = ca->pid};

	snprintf(a->name, sizeof(a->name), "%s", ca->name);
	a->binary = xstrdup_or_null(ca->binary);
	a->file = file_id_of(ca->binary);
	a->pid = ca->pid;
	a->error[0] = 0;
	a->probe = probes__attach(s->probes, &spec, a->error, sizeof(a->error));
	if (!a->probe) {
		s->attach_failures++;
		pr_warn("usdt-app %s: %s", a->name, a->error);
	} else {
		a->attached_mono_ns = sysinfo__mono_ns();
		pr_info("usdt-app %s: timing the stages it marks in %s", a->name, a->binary);
	}
}

int stages__apply_config(struct stages *s, const struct config *cfg)
{
	size_t nr_stages = cfg ? cfg->nr_stages : 0, nr_apps = cfg ? cfg->nr_apps : 0;
	struct app old[CONFIG_MAX_APPS];
	size_t nr_old = s->nr_apps;
	int failed = 0;

	/* stages removed or changed: detach (the id, the name and the data stay) */
	for (uint32_t id = 1; id < TP_FIRST_DYN_STAGE; id++) {
		struct stage *st = &s->stages[id];
		const struct config_stage *cs = NULL;

		if (!st->configured)
			continue;
		for (size_t i = 0; i < nr_stages; i++)
			if (!strcmp(cfg->stages[i].name, st->name))
				cs = &cfg->stages[i];
		if (cs && same_str(cs->binary, st->binary) &&
		    same_str(cs->function, st->function) &&
		    same_str(cs->usdt_begin, st->usdt_begin) &&
		    same_str(cs->usdt_end, st->usdt_end) && cs->pid == st->pid && st->probe &&
		    same_file(st->binary, st->file)) {
			st->threshold_ns = cs->threshold_ns;
			continue;
		}
		probe__detach(st->probe);
		st->probe = NULL;
		st->configured = false;
		st->error[0] = 0;
		if (!cs)
			pr_info("stage %s: removed from the configuration, detached", st->name);
		else if (st->binary && !same_file(st->binary, st->file))
			pr_info("stage %s: %s was replaced, attaching to the new file", st->name,
				st->binary);
	}
	for (size_t i = 0; i < nr_stages; i++) {
		const struct config_stage *cs = &cfg->stages[i];
		uint32_t id = config_id(s, cs->name);

		if (!id) {
			pr_warn("stage %s: no stage id left (%d configured names since start)",
				cs->name, TP_FIRST_DYN_STAGE - 1);
			failed++;
			continue;
		}
		if (s->stages[id].configured)
			continue; /* unchanged */
		attach_stage(s, id, cs);
		failed += !s->stages[id].probe;
	}

	/* applications: keep the unchanged ones, attach the others anew */
	memcpy(old, s->apps, sizeof(old));
	memset(s->apps, 0, sizeof(s->apps));
	s->nr_apps = 0;
	for (size_t i = 0; i < nr_apps; i++) {
		const struct config_app *ca = &cfg->apps[i];
		struct app *a = &s->apps[s->nr_apps++];
		bool kept = false;

		for (size_t j = 0; j < nr_old; j++) {
			if (!old[j].binary || strcmp(old[j].name, ca->name) ||
			    strcmp(old[j].binary, ca->binary) || old[j].pid != ca->pid ||
			    !old[j].probe)
				continue;
			if (!same_file(old[j].binary, old[j].file)) {
				pr_info("usdt-app %s: %s was replaced, attaching to the new file",
					ca->name, ca->binary);
				probe__detach(old[j].probe);
				free(old[j].binary);
				old[j].binary = NULL;
				old[j].probe = NULL;
				break;
			}
			*a = old[j];
			old[j].binary = NULL;
			old[j].probe = NULL;
			kept = true;
			break;
		}
		if (!kept) {
			attach_app(s, a, ca);
			failed += !a->probe;
		}
	}
	for (size_t j = 0; j < nr_old; j++) {
		if (old[j].probe)
			pr_info("usdt-app %s: removed from the configuration, detached",
				old[j].name);
		probe__detach(old[j].probe);
		free(old[j].binary);
	}
	return failed;
}

static void learn_name(void *arg, const char *name, uint32_t id)
{
	struct stages *s = arg;

	if (id == 0 || id >= TP_MAX_STAGES || s->stages[id].name[0])
		return;
	snprintf(s->stages[id].name, sizeof(s->stages[id].name), "%s", name);
	s->stages[id].app = true;
	snprintf(s->stages[id].where, sizeof(s->stages[id].where), "tailprof:stage__begin/end");
	pr_debug("stage %s: first marked by an application (id %u)", name, id);
}

void stages__sync_names(struct stages *s)
{
	if (s->nr_apps)
		probes__for_each_name(s->probes, learn_name, s);
}

const char *stages__name(const struct stages *s, uint32_t id)
{
	if (id == 0 || id >= TP_MAX_STAGES || !s->stages[id].name[0])
		return NULL;
	return s->stages[id].name;
}

uint64_t stages__threshold_ns(const struct stages *s, uint32_t id)
{
	return id && id < TP_MAX_STAGES ? s->stages[id].threshold_ns : 0;
}

uint32_t stages__id(const struct stages *s, const char *name)
{
	for (uint32_t id = 1; id < TP_MAX_STAGES; id++)
		if (s->stages[id].name[0] && !strcmp(s->stages[id].name, name))
			return id;
	return 0;
}

uint64_t stages__mask(const struct stages *s, const char *name)
{
	uint64_t m = 0;

	for (uint32_t id = 1; id < TP_MAX_STAGES; id++)
		if (s->stages[id].name[0] && !strcmp(s->stages[id].name, name))
			m |= 1ULL << id;
	return m;
}

const char *stages__names_list(const struct stages *s, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = 0;
	for (uint32_t id = 1; id < TP_MAX_STAGES && n + 1 < len; id++) {
		if (!s->stages[id].name[0] || stages__mask(s, s->stages[id].name) >> id > 1)
			continue; /* a name given twice is listed once (at its last id) */
		n += snprintf(buf + n, len - n, "%s%s", n ? ", " : "", s->stages[id].name);
	}
	if (!n)
		snprintf(buf, len, "(none yet)");
	return buf;
}

/* ---- drain ---- */

void stages__take_period(struct stages *s, uint64_t period, struct window *w)
{
	struct tp_stage_hist *base = probes__hist(s->probes);
	uint32_t slot = period % TP_STAGE_SLOTS;

	/* The collector takes only the last TP_STAGE_SLOTS periods: after a longer stall, an older
	 * period's slot holds a newer period's latencies too, and they go to the newer window. */
	for (uint32_t id = 1; id < TP_MAX_STAGES; id++) {
		struct tp_stage_hist *h = &base[slot * TP_MAX_STAGES + id];
		struct stage_stats *st = NULL;
		uint64_t count, sum, max;

		if (!__atomic_load_n(&h->count, __ATOMIC_RELAXED))
			continue;
		count = __atomic_exchange_n(&h->count, 0, __ATOMIC_RELAXED);
		sum = __atomic_exchange_n(&h->sum_ns, 0, __ATOMIC_RELAXED);
		max = __atomic_exchange_n(&h->max_ns, 0, __ATOMIC_RELAXED);
		if (w) {
			st = stats_of(w, id);
			expand(st);
			st->count += count;
			st->sum_ns += sum;
			if (max > st->max_ns)
				st->max_ns = max;
		}
		s->stages[id].total_count += count;
		s->stages[id].total_sum_ns += sum;
		for (uint32_t b = 0; b < TP_HIST_BUCKETS; b++) {
			uint32_t n;

			if (!__atomic_load_n(&h->buckets[b], __ATOMIC_RELAXED))
				continue;
			n = __atomic_exchange_n(&h->buckets[b], 0, __ATOMIC_RELAXED);
			if (st)
				st->dense[b] += n;
			s->stages[id].prom[s->prom_of_bucket[b]] += n;
		}
		if (w && w->closed)
			compact(st);
	}
}

void stages__add_span(struct stages *s, const struct tp_span *span, struct window *w)
{
	struct stage_stats *st;
	uint32_t min = 0;

	if (!w || span->stage == 0 || span->stage >= TP_MAX_STAGES)
		return;
	st = stats_of(w, span->stage);
	if (st->nr_spans < STAGE_SPANS_KEPT) {
		st->spans[st->nr_spans++] = *span;
		return;
	}
	s->stages[span->stage].spans_not_kept++;
	for (uint32_t i = 1; i < st->nr_spans; i++)
		if (st->spans[i].duration_ns < st->spans[min].duration_ns)
			min = i;
	if (span->duration_ns > st->spans[min].duration_ns)
		st->spans[min] = *span;
}

uint64_t stages__spans_not_kept(const struct stages *s, uint32_t id)
{
	return id && id < TP_MAX_STAGES ? s->stages[id].spans_not_kept : 0;
}

void stages__window_closed(struct stages *s, struct window *w)
{
	uint64_t *acc, total;

	if (!w->stages)
		return;
	acc = xcalloc(TP_HIST_BUCKETS, sizeof(*acc));
	for (uint32_t id = 1; id < TP_MAX_STAGES; id++) {
		struct stage_stats *st = w->stages->by_id[id];

		if (!st || !st->count) {
			if (st)
				compact(st);
			continue;
		}
		memset(acc, 0, TP_HIST_BUCKETS * sizeof(*acc));
		stage_stats__accumulate(st, acc);
		compact(st);
		/* the buckets' own total: count was taken a moment before them */
		total = 0;
		for (uint32_t b = 0; b < TP_HIST_BUCKETS; b++)
			total += acc[b];
		probes__set_slow_ns(s->probes, id,
				    histogram__percentile(acc, total, st->max_ns, 950));
	}
	free(acc);
}

/* ---- JSON ---- */

static json_t *summary_json(const char *name, const uint64_t *acc, uint64_t sum, uint64_t max)
{
	struct hist_summary h;

	histogram__summarize(acc, sum, max, &h);
	return json_pack("{s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:b}", "stage", name, "count",
			 (json_int_t)h.count, "p50_ns", (json_int_t)h.p50_ns, "p90_ns",
			 (json_int_t)h.p90_ns, "p95_ns", (json_int_t)h.p95_ns, "p99_ns",
			 (json_int_t)h.p99_ns, "max_ns", (json_int_t)h.max_ns, "sum_ns",
			 (json_int_t)h.sum_ns, "low_sample", h.low_sample);
}

char *stages__stages_json(struct stages *s, struct window *const *windows, size_t n)
{
	json_t *root = json_object(), *total = json_array(), *wins = json_array();
	uint64_t *acc = xcalloc((size_t)TP_MAX_STAGES * TP_HIST_BUCKETS, sizeof(*acc));
	uint64_t sums[TP_MAX_STAGES] = {}, maxs[TP_MAX_STAGES] = {}, counts[TP_MAX_STAGES] = {};
	uint64_t *one = xcalloc(TP_HIST_BUCKETS, sizeof(*one));

	for (size_t i = 0; i < n; i++) {
		struct window *w = windows[i];
		json_t *o, *arr, *sj;

		if (!w->stages)
			continue;
		o = json_object();
		arr = json_array();
		tp_json_set_time(o, "start", (int64_t)w->start_ns + w->wall_offset_ns);
		tp_json_set_time(o, "end", (int64_t)w->end_ns + w->wall_offset_ns);
		json_object_set_new(o, "current", json_boolean(!w->closed));
		for (uint32_t id = 1; id < TP_MAX_STAGES; id++) {
			struct stage_stats *st = w->stages->by_id[id];
			const char *name = stages__name(s, id);

			if (!st || !st->count || !name)
				continue;
			memset(one, 0, TP_HIST_BUCKETS * sizeof(*one));
			stage_stats__accumulate(st, one);
			stage_stats__accumulate(st, acc + (size_t)id * TP_HIST_BUCKETS);
			sums[id] += st->sum_ns;
			counts[id] += st->count;
			if (st->max_ns > maxs[id])
				maxs[id] = st->max_ns;
			sj = summary_json(name, one, st->sum_ns, st->max_ns);
			/* the timeline draws it beside the window's p95 (issue 22) */
			if (s->stages[id].threshold_ns)
				json_object_set_new(sj, "threshold_ns",
						    json_integer(s->stages[id].threshold_ns));
			json_array_append_new(arr, sj);
		}
		json_object_set_new(o, "stages", arr);
		json_array_append_new(wins, o);
	}
	for (uint32_t id = 1; id < TP_MAX_STAGES; id++) {
		const char *name = stages__name(s, id);

		if (!name || (!counts[id] && !s->stages[id].configured))
			continue;
		json_array_append_new(total, summary_json(name, acc + (size_t)id * TP_HIST_BUCKETS,
							  sums[id], maxs[id]));
	}
	json_object_set_new(root, "stages", total);
	json_object_set_new(root, "windows", wins);
	free(acc);
	free(one);
	return tp_json_dump(root);
}

static int cmp_span(const void *a, const void *b)
{
	const struct tp_span *x = *(const struct tp_span *const *)a;
	const struct tp_span *y = *(const struct tp_span *const *)b;

	return x->duration_ns < y->duration_ns ? 1 : x->duration_ns > y->duration_ns ? -1 : 0;
}

/* Calls fn for every kept span of the stages in mask in windows[0..n). */
static void for_each_span(struct window *const *windows, size_t n, uint64_t mask,
			  void (*fn)(void *arg, const struct tp_span *sp), void *arg)
{
	for (size_t i = 0; i < n; i++) {
		if (!windows[i]->stages)
			continue;
		for (uint32_t id = 1; id < TP_MAX_STAGES; id++) {
			struct stage_stats *st = windows[i]->stages->by_id[id];

			if (!st || !(mask & (1ULL << id)))
				continue;
			for (uint32_t k = 0; k < st->nr_spans; k++)
				fn(arg, &st->spans[k]);
		}
	}
}

struct span_list {
	const struct tp_span **v;
	size_t n;
};

static void count_span(void *arg, const struct tp_span *sp)
{
	((struct span_list *)arg)->n++;
}

static void list_span(void *arg, const struct tp_span *sp)
{
	struct span_list *l = arg;

	l->v[l->n++] = sp;
}

char *stages__spans_json(struct stages *s, struct window *const *windows, size_t n, uint64_t mask)
{
	json_t *root = json_object(), *arr = json_array();
	struct span_list all = {};
	struct span_accounting acct;
	char id[SPAN_ID_LEN];
	size_t nr;

	/* sized by what the windows hold, which the ring bounds */
	for_each_span(windows, n, mask, count_span, &all);
	nr = all.n;
	all.v = calloc(nr ? nr : 1, sizeof(*all.v));
	if (!all.v) {
		json_decref(root);
		json_decref(arr);
		return NULL;
	}
	all.n = 0;
	for_each_span(windows, n, mask, list_span, &all);
	qsort(all.v, nr, sizeof(*all.v), cmp_span);
	for (size_t i = 0; i < nr; i++) {
		const struct tp_span *sp = all.v[i];
		uint64_t end = sp->start_ns + sp->duration_ns;
		int64_t offset = windows[0]->wall_offset_ns;
		json_t *o = json_object();

		/* the wall-clock label of the window the span ended in (windows are oldest first):
		 * the last one starting at or before its end */
		size_t lo = 0, hi = n;

		while (hi - lo > 1) {
			size_t mid = lo + (hi - lo) / 2;

			if (windows[mid]->start_ns <= end)
				lo = mid;
			else
				hi = mid;
		}
		if (n)
			offset = windows[lo]->wall_offset_ns;
		json_object_set_new(o, "stage",
				    json_string(stages__name(s, sp->stage) ?: "[unknown]"));
		json_object_set_new(o, "pid", json_integer(sp->pid));
		json_object_set_new(o, "tid", json_integer(sp->tid));
		tp_json_set_time(o, "start", (int64_t)sp->start_ns + offset);
		json_object_set_new(o, "duration_ns", json_integer(sp->duration_ns));
		json_object_set_new(o, "request_id", json_integer((json_int_t)sp->request_id));
		stages__span_id(sp, id, sizeof(id));
		json_object_set_new(o, "id", json_string(id));
		stages__span_accounting(sp, windows, n, &acct);
		json_object_set_new(o, "cpu_ns", json_integer((json_int_t)acct.cpu_ns));
		json_object_set_new(o, "runq_ns", json_integer((json_int_t)acct.runq_ns));
		json_object_set_new(o, "offcpu_ns", json_integer((json_int_t)acct.offcpu_ns));
		json_object_set_new(o, "accounting", json_string(acct.exact ? "exact" : "sampled"));
		json_array_append_new(arr, o);
	}
	free(all.v);
	json_object_set_new(root, "spans", arr);
	return tp_json_dump(root);
}

/* A probe's hits and BPF cost since it was attached attached_ns ago, into status object o. */
static void put_probe_stats(json_t *o, struct probe *probe, uint64_t attached_ns)
{
	struct probe_stats ps = {};
	double secs = attached_ns / 1e9;

	probe__stats(probe, &ps);
	json_object_set_new(o, "hits", json_integer(ps.enter_cnt));
	json_object_set_new(o, "hits_per_second", json_real(secs > 0 ? ps.enter_cnt / secs : 0));
	json_object_set_new(o, "ns_per_hit",
			    json_integer(ps.enter_cnt ? ps.run_time_ns / ps.enter_cnt : 0));
	json_object_set_new(o, "bpf_run_time_ns", json_integer(ps.run_time_ns));
	json_object_set_new(o, "cpu_percent",
			    json_real(secs > 0 ? 100.0 * ps.run_time_ns / 1e9 / secs : 0));
}

void *stages__status_json(struct stages *s)
{
	json_t *arr = json_array();
	uint64_t now = sysinfo__mono_ns();

	for (uint32_t id = 1; id < TP_MAX_STAGES; id++) {
		struct stage *st = &s->stages[id];
		json_t *o;

		if (!st->name[0] || (!st->configured && !st->app))
			continue;
		o = json_object();
		json_object_set_new(o, "stage", json_string(st->name));
		json_object_set_new(o, "probe", json_string(st->where));
		json_object_set_new(o, "attached", json_boolean(st->probe != NULL || st->app));
		if (st->error[0])
			json_object_set_new(o, "error", json_string(st->error));
		json_object_set_new(o, "count", json_integer(st->total_count));
		if (st->threshold_ns)
			json_object_set_new(o, "threshold_ns", json_integer(st->threshold_ns));
		if (st->probe)
			put_probe_stats(o, st->probe, now - st->attached_mono_ns);
		json_array_append_new(arr, o);
	}
	for (size_t i = 0; i < s->nr_apps; i++) {
		struct app *a = &s->apps[i];
		json_t *o = json_object();
		char where[400];

		snprintf(where, sizeof(where), "usdt-app %s: tailprof:stage__begin/end in %s",
			 a->name, a->binary);
		json_object_set_new(o, "stage", json_string(a->name));
		json_object_set_new(o, "probe", json_string(where));
		json_object_set_new(o, "attached", json_boolean(a->probe != NULL));
		if (a->error[0])
			json_object_set_new(o, "error", json_string(a->error));
		if (a->probe)
			put_probe_stats(o, a->probe, now - a->attached_mono_ns);
		json_array_append_new(arr, o);
	}
	return arr;
}

/* ---- Prometheus ---- */

static void probe_lines(struct text *t, const char *label, const char *name, const struct probe *pr)
{
	struct probe_stats ps;

	if (!pr)
		return;
	probe__stats(pr, &ps);
	text_put(t, "tailprof_stage_probe_hits_total{%s=\"%s\"} %" PRIu64 "\n", label, name,
		 ps.enter_cnt);
	text_put(t, "tailprof_stage_probe_run_time_seconds_total{%s=\"%s\"} %.9f\n", label, name,
		 ps.run_time_ns / 1e9);
}

/* Whether /metrics shows st: configured, or with requests counted since start. */
static bool in_metrics(const struct stage *st)
{
	return st->name[0] && (st->configured || st->total_count);
}

char *stages__metrics_text(struct stages *s)
{
	struct text t = {.cap = 4096};
	uint64_t m[TP_SM_NR];
	static const char *const sm_names[TP_SM_NR] = {
	    [TP_SM_NO_STORAGE] = "no_storage", [TP_SM_TOO_DEEP] = "too_deep",
	    [TP_SM_UNMATCHED] = "unmatched",   [TP_SM_SPANS_LOST] = "spans_lost",
	    [TP_SM_NAMES_FULL] = "names_full", [TP_SM_NAME_UNREADABLE] = "name_unreadable",
	};

	t.buf = malloc(t.cap);
	if (!t.buf)
		return NULL;
	t.buf[0] = 0;
	text_put(&t,
		 "# HELP tailprof_stage_latency_seconds Latency of each stage (bucket midpoints "
		 "within 1.6%%).\n# TYPE tailprof_stage_latency_seconds histogram\n");
	for (uint32_t id = 1; id < TP_MAX_STAGES; id++) {
		struct stage *st = &s->stages[id];
		uint64_t cum = 0;

		if (!in_metrics(st))
			continue;
		for (size_t i = 0; i < PROM_BUCKETS; i++) {
			cum += st->prom[i];
			if (i < PROM_BUCKETS - 1)
				text_put(
				    &t,
				    "tailprof_stage_latency_seconds_bucket{stage=\"%s\",le=\"%g\"} "
				    "%" PRIu64 "\n",
				    st->name, prom_le_ns[i] / 1e9, cum);
			else
				text_put(&t,
					 "tailprof_stage_latency_seconds_bucket{stage=\"%s\",le=\"+"
					 "Inf\"} "
					 "%" PRIu64 "\n",
					 st->name, cum);
		}
		text_put(&t, "tailprof_stage_latency_seconds_sum{stage=\"%s\"} %.9f\n", st->name,
			 st->total_sum_ns / 1e9);
		text_put(&t, "tailprof_stage_latency_seconds_count{stage=\"%s\"} %" PRIu64 "\n",
			 st->name, st->total_count);
	}
	text_put(&t, "# HELP tailprof_stage_slow_spans_not_kept_total Slow spans of a window past "
		     "the 10 it keeps a stage: the fastest of them is let go.\n"
		     "# TYPE tailprof_stage_slow_spans_not_kept_total counter\n");
	for (uint32_t id = 1; id < TP_MAX_STAGES; id++)
		if (in_metrics(&s->stages[id]))
			text_put(&t,
				 "tailprof_stage_slow_spans_not_kept_total{stage=\"%s\"} %" PRIu64
				 "\n",
				 s->stages[id].name, s->stages[id].spans_not_kept);
	text_put(&t, "# HELP tailprof_stage_probe_hits_total Entries of each stage probe (BPF run "
		     "count).\n# TYPE tailprof_stage_probe_hits_total counter\n");
	text_put(&t,
		 "# HELP tailprof_stage_probe_run_time_seconds_total BPF run time of each stage "
		 "probe, entry and exit (BPF_ENABLE_STATS).\n"
		 "# TYPE tailprof_stage_probe_run_time_seconds_total counter\n");
	for (uint32_t id = 1; id < TP_MAX_STAGES; id++)
		if (s->stages[id].probe)
			probe_lines(&t, "stage", s->stages[id].name, s->stages[id].probe);
	for (size_t i = 0; i < s->nr_apps; i++)
		probe_lines(&t, "usdt_app", s->apps[i].name, s->apps[i].probe);
	text_put(&t,
		 "# HELP tailprof_stage_attach_failures_total Stages and applications that failed "
		 "to attach.\n# TYPE tailprof_stage_attach_failures_total counter\n");
	text_put(&t, "tailprof_stage_attach_failures_total %" PRIu64 "\n", s->attach_failures);
	probes__metrics(s->probes, m);
	text_put(&t, "# HELP tailprof_stage_errors_total Stage probe events not timed, by reason.\n"
		     "# TYPE tailprof_stage_errors_total counter\n");
	for (int i = 0; i < TP_SM_NR; i++)
		text_put(&t, "tailprof_stage_errors_total{reason=\"%s\"} %" PRIu64 "\n",
			 sm_names[i], m[i]);
	return text_finish(&t);
}
