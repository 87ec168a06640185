// SPDX-License-Identifier: GPL-2.0-only
/* The views of spikes: periodic patterns, the JSON of /api/v1/spikes, and /metrics. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "json_util.h"
#include "spike_store.h"
#include "spikes_internal.h"

#include "query.h"
#include "stages.h"
#include "textbuf.h"
#include "timeparse.h"
#include "window.h"

/* ---- pattern ---- */

struct pattern {
	bool periodic;
	uint64_t period_ns, spread_ns;
};

/* Over the starts of one stage's episodes (ascending, n of them): the longest chain of 3 or more
 * starts, each within 15% of a period P after the previous one, P taken from each pair of
 * starts; its members are periodic with the median of its intervals as the period and the
 * largest distance of an interval from it as the spread. out[i] for each start. */
static void find_period(const uint64_t *starts, size_t n, struct pattern *out)
{
	size_t best_len = 0, chain[SPIKES_MAX_HELD], best[SPIKES_MAX_HELD];

	for (size_t i = 0; i < n; i++)
		out[i] = (struct pattern){0};
	for (size_t i = 0; i + 2 < n; i++) {
		for (size_t j = i + 1; j < n; j++) {
			uint64_t p = starts[j] - starts[i], lo, hi;
			size_t len = 0, k = j;

			if (!p)
				continue;
			lo = p - p * 15 / 100;
			hi = p + p * 15 / 100;
			chain[len++] = i;
			chain[len++] = j;
			for (size_t m = k + 1; m < n; m++) {
				uint64_t d = starts[m] - starts[chain[len - 1]];

				if (d > hi)
					break;
				if (d >= lo)
					chain[len++] = m;
			}
			if (len > best_len) {
				best_len = len;
				memcpy(best, chain, len * sizeof(*chain));
			}
		}
	}
	if (best_len < 3)
		return;
	{
		uint64_t d[SPIKES_MAX_HELD], period, spread = 0;
		size_t nd = best_len - 1;

		for (size_t i = 0; i < nd; i++)
			d[i] = starts[best[i + 1]] - starts[best[i]];
		for (size_t i = 1; i < nd; i++)
			for (size_t j = i; j && d[j - 1] > d[j]; j--) {
				uint64_t t = d[j];

				d[j] = d[j - 1];
				d[j - 1] = t;
			}
		period = nd % 2 ? d[nd / 2] : (d[nd / 2 - 1] + d[nd / 2]) / 2;
		for (size_t i = 0; i < nd; i++) {
			uint64_t dev = d[i] > period ? d[i] - period : period - d[i];

			spread = dev > spread ? dev : spread;
		}
		for (size_t i = 0; i < best_len; i++)
			out[best[i]] = (struct pattern){true, period, spread};
	}
}

/* The pattern of every held episode, by index: over each stage's detected and marked spikes. */
static void patterns(const struct spikes *s, struct pattern *out)
{
	uint64_t starts[SPIKES_MAX_HELD];
	size_t idx[SPIKES_MAX_HELD];
	struct pattern p[SPIKES_MAX_HELD];
	bool done[SPIKES_MAX_HELD] = {0};

	for (size_t i = 0; i < s->nr_eps; i++) {
		size_t n = 0;

		if (done[i])
			continue;
		for (size_t j = i; j < s->nr_eps; j++) {
			const struct episode *e = s->eps[j];

			if (done[j] || strcmp(e->stage_name, s->eps[i]->stage_name) ||
			    e->kind == KIND_LEVEL_SHIFT)
				continue;
			done[j] = true;
			idx[n] = j;
			starts[n++] = e->start_ns;
		}
		/* held in order of creation: sort by start (marks may name the past) */
		for (size_t a = 1; a < n; a++)
			for (size_t b = a; b && starts[b - 1] > starts[b]; b--) {
				uint64_t t = starts[b];
				size_t ti = idx[b];

				starts[b] = starts[b - 1];
				idx[b] = idx[b - 1];
				starts[b - 1] = t;
				idx[b - 1] = ti;
			}
		find_period(starts, n, p);
		for (size_t a = 0; a < n; a++)
			out[idx[a]] = p[a];
		out[i] = s->eps[i]->kind == KIND_LEVEL_SHIFT ? (struct pattern){0} : out[i];
	}
}

/* ---- JSON ---- */

static json_t *episode_json(struct spikes *s, struct window_ring *ring, const struct episode *e,
			    const struct pattern *pat, bool full)
{
	json_t *o = json_object(), *ex = e->explained, *causes;
	int64_t off = e->wall_offset_ns;
	uint64_t p95 = e->p95_ns, count = e->request_count;
	char a[32], b[32];

	if (!o)
		return NULL;
	if (e->stored) {
		/* read back from the state directory: as written, with today's pattern */
		json_decref(o);
		o = json_deep_copy(e->stored);
		if (!o)
			return NULL;
		if (!full) {
			json_object_del(o, "evidence");
			json_object_del(o, "requests");
		}
		json_object_set_new(o, "pattern",
				    json_string(pat->periodic ? "periodic" : "random"));
		json_object_del(o, "period_ns");
		json_object_del(o, "period_spread_ns");
		if (pat->periodic) {
			json_object_set_new(o, "period_ns",
					    json_integer((json_int_t)pat->period_ns));
			json_object_set_new(o, "period_spread_ns",
					    json_integer((json_int_t)pat->spread_ns));
		}
		json_object_set_new(o, "pinned", json_false());
		json_object_set_new(o, "stored", json_true());
		return o;
	}
	if (e->open) {
		spikes_merged_p95(e, ring, &p95, &count);
		ex = NULL;
	}
	if (!ex) {
		struct episode tmp = *e;

		tmp.p95_ns = p95;
		ex = spikes_explain(s, ring, &tmp);
	} else {
		json_incref(ex);
	}
	json_object_set_new(o, "id", json_string(e->id));
	json_object_set_new(o, "stage", json_string(e->stage_name));
	json_object_set_new(o, "kind",
			    json_string(e->kind == KIND_LEVEL_SHIFT ? "level_shift" : "spike"));
	tp_json_set_time(o, "start", (int64_t)e->start_ns + off);
	tp_json_set_time(o, "end", (int64_t)e->end_ns + off);
	json_object_set_new(o, "open", json_boolean(e->open));
	json_object_set_new(o, "windows", json_integer(e->nr_windows));
	json_object_set_new(o, "p95_ns", json_integer((json_int_t)p95));
	json_object_set_new(o, "baseline_p95_ns", json_integer((json_int_t)e->baseline_p95_ns));
	json_object_set_new(o, "peak_p95_ns", json_integer((json_int_t)e->peak_p95_ns));
	if (e->peak_p95_ns)
		tp_json_set_time(o, "peak_window_start", (int64_t)e->peak_start_ns + off);
	json_object_set_new(o, "request_count", json_integer((json_int_t)count));
	json_object_set_new(o, "pattern", json_string(pat->periodic ? "periodic" : "random"));
	if (pat->periodic) {
		json_object_set_new(o, "period_ns", json_integer((json_int_t)pat->period_ns));
		json_object_set_new(o, "period_spread_ns",
				    json_integer((json_int_t)pat->spread_ns));
	}
	json_object_set_new(o, "source", json_string(spikes_source_names[e->source]));
	json_object_set_new(o, "pinned", json_boolean(e->nr_pins > 0));
	if (e->unpinned)
		json_object_set_new(o, "unpinned_windows", json_integer((json_int_t)e->unpinned));
	if (e->reason[0])
		json_object_set_new(o, "reason", json_string(e->reason));
	if (e->source == SRC_ALERTMANAGER) {
		tp_json_set_time(o, "alert_starts", e->alert_starts_unix_ns);
		json_object_set_new(o, "fingerprint", json_string(e->fingerprint));
	}
	if (e->kind == KIND_LEVEL_SHIFT) {
		char t[40], msg[200];

		json_object_set_new(o, "level_after_ns",
				    json_integer((json_int_t)e->level_after_ns));
		snprintf(msg, sizeof(msg), "%s p95 went from %s to %s at %s and stayed",
			 e->stage_name, tp_format_duration(e->baseline_p95_ns, a, sizeof(a)),
			 tp_format_duration(e->level_after_ns, b, sizeof(b)),
			 tp_format_rfc3339((int64_t)e->start_ns + off, t, sizeof(t)));
		json_object_set_new(o, "summary", json_string(msg));
	}
	causes = ex ? json_object_get(ex, "causes") : NULL;
	json_object_set(o, "causes", causes ? causes : json_array());
	if (e->nr_windows) {
		struct window **ws = calloc(e->nr_windows, sizeof(*ws));
		size_t nw = ws ? spikes_spike_windows(e, ring, ws, e->nr_windows) : 0;

		json_object_set_new(o, "containers", query__containers_json(ws, nw));
		free(ws);
	}
	if (full && ex) {
		json_object_set(o, "evidence", json_object_get(ex, "evidence"));
		json_object_set(o, "requests", json_object_get(ex, "requests"));
	}
	json_decref(ex);
	return o;
}

json_t *spikes_episode_json(struct spikes *s, struct window_ring *ring, const struct episode *e,
			    bool full)
{
	struct pattern *pat = calloc(SPIKES_MAX_HELD, sizeof(*pat));
	json_t *o = NULL;

	if (!pat)
		return NULL;
	patterns(s, pat);
	for (size_t i = 0; i < s->nr_eps; i++)
		if (s->eps[i] == e)
			o = episode_json(s, ring, e, &pat[i], full);
	free(pat);
	return o;
}

char *spikes__list_json(struct spikes *s, struct window_ring *ring, const struct spike_filter *f)
{
	json_t *root = json_object(), *arr = json_array();
	struct pattern *pat = calloc(SPIKES_MAX_HELD, sizeof(*pat));

	if (!root || !arr || !pat) {
		json_decref(root);
		json_decref(arr);
		free(pat);
		return NULL;
	}
	patterns(s, pat);
	for (size_t i = 0; i < s->nr_eps; i++) {
		const struct episode *e = s->eps[i];
		int64_t start = (int64_t)e->start_ns + e->wall_offset_ns;
		int64_t end = (int64_t)e->end_ns + e->wall_offset_ns;

		if (f && f->stage && strcmp(f->stage, e->stage_name))
			continue;
		if (f && (end < f->from_unix_ns || start > f->to_unix_ns))
			continue;
		json_array_append_new(arr, episode_json(s, ring, e, &pat[i], false));
	}
	free(pat);
	json_object_set_new(root, "spikes", arr);
	return tp_json_dump(root);
}

struct episode *spikes_find(const struct spikes *s, const char *id)
{
	for (size_t i = 0; i < s->nr_eps; i++)
		if (!strcmp(s->eps[i]->id, id))
			return s->eps[i];
	return NULL;
}

char *spikes__get_json(struct spikes *s, struct window_ring *ring, const char *id, bool *found)
{
	struct pattern *pat;
	char *out;

	*found = false;
	for (size_t i = 0; i < s->nr_eps; i++) {
		if (strcmp(s->eps[i]->id, id))
			continue;
		*found = true;
		pat = calloc(SPIKES_MAX_HELD, sizeof(*pat));
		if (!pat)
			return NULL;
		patterns(s, pat);
		out = tp_json_dump(episode_json(s, ring, s->eps[i], &pat[i], true));
		free(pat);
		return out;
	}
	return NULL;
}

int spikes__windows(struct spikes *s, struct window_ring *ring, const char *id, bool baseline,
		    struct window **out, size_t max, size_t *n)
{
	struct episode *e = spikes_find(s, id);

	*n = 0;
	if (!e)
		return -ENOENT;
	if (e->stored)
		return -ESTALE;
	*n = baseline ? spikes_baseline_windows(s, e, ring, out, max)
		      : spikes_spike_windows(e, ring, out, max);
	return 0;
}

void *spikes__status_json(struct spikes *s)
{
	json_t *o = json_object();
	size_t open = 0;

	if (!o)
		return NULL;
	for (size_t i = 0; i < s->nr_eps; i++)
		open += s->eps[i]->open;
	json_object_set_new(o, "k", json_real(s->o.k));
	json_object_set_new(o, "baseline_windows", json_integer(s->o.baseline_windows));
	json_object_set_new(o, "min_requests", json_integer(s->o.min_requests));
	json_object_set_new(o, "min_rise_ns", json_integer((json_int_t)s->o.min_rise_ns));
	json_object_set_new(o, "pin_budget", json_integer(s->o.pin_budget));
	json_object_set_new(o, "state_dir",
			    s->o.state_dir ? json_string(s->o.state_dir) : json_null());
	json_object_set_new(o, "write_rate", json_integer(s->o.write_rate));
	json_object_set_new(o, "spikes", json_integer((json_int_t)s->nr_eps));
	json_object_set_new(o, "open", json_integer((json_int_t)open));
	json_object_set_new(o, "pinned_windows", json_integer(s->total_pins));
	/* the state directory: spikes waiting to be written, failed writes, the disk's refusal */
	json_object_set_new(o, "saves_pending", json_integer((json_int_t)spikes__saves_pending(s)));
	json_object_set_new(o, "saves_failed", json_integer((json_int_t)s->saves_failed));
	json_object_set_new(o, "save_error",
			    s->save_err ? json_string(strerror(-s->save_err)) : json_null());
	return o;
}

void spikes__pin_counts(struct spikes *s, uint64_t *pinned, uint64_t *budget, uint64_t *released,
			uint64_t *unpinned)
{
	*pinned = s->total_pins;
	*budget = s->o.pin_budget;
	*released = s->pins_released;
	*unpinned = s->windows_unpinned;
}

bool spikes__stage_held(struct spikes *s, const char *name)
{
	for (size_t i = 0; i < s->nr_eps; i++)
		if (!strcmp(s->eps[i]->stage_name, name))
			return true;
	return false;
}

const char *spikes__stage(struct spikes *s, const char *id)
{
	struct episode *e = spikes_find(s, id);

	return e ? e->stage_name : NULL;
}

bool spikes__window_spike(struct spikes *s, uint64_t start_ns, char *id)
{
	for (size_t i = s->nr_eps; i-- > 0;) {
		const struct episode *e = s->eps[i];

		if (!e->stored && e->nr_windows && start_ns >= e->start_ns &&
		    start_ns < e->end_ns) {
			snprintf(id, SPIKE_ID_LEN, "%s", e->id);
			return true;
		}
	}
	return false;
}

int spikes__resolve(struct spikes *s, const char *name, const char *stage, char *id)
{
	if (strcmp(name, "latest")) {
		if (!spikes_find(s, name))
			return -ENOENT;
		snprintf(id, SPIKE_ID_LEN, "%s", name);
		return 0;
	}
	/* the newest start among those that began (a mark may name a time to come) */
	{
		const struct episode *best = NULL;

		for (size_t i = 0; i < s->nr_eps; i++) {
			const struct episode *e = s->eps[i];

			if ((stage && strcmp(stage, e->stage_name)) ||
			    (s->last_closed_end_ns && e->start_ns > s->last_closed_end_ns))
				continue;
			if (!best || e->start_ns >= best->start_ns)
				best = e;
		}
		if (!best)
			return -ENOENT;
		snprintf(id, SPIKE_ID_LEN, "%s", best->id);
		return 0;
	}
}

/* ---- metrics ---- */

char *spikes__metrics_text(struct spikes *s, struct window_ring *ring)
{
	struct text t = {0};
	bool active[TP_MAX_STAGES] = {0};

	(void)ring;
	for (size_t i = 0; i < s->nr_eps; i++)
		if (s->eps[i]->open && s->eps[i]->stage)
			active[s->eps[i]->stage] = true;
	text_metric(&t, "tailprof_stage_p95_seconds", "gauge",
		    "p95 latency of the stage in the last window judged (enough requests).");
	for (uint32_t id = 1; id < TP_MAX_STAGES; id++)
		if (s->det[id].judged && stages__name(s->stages, id))
			text_put(&t, "tailprof_stage_p95_seconds{stage=\"%s\"} %.9f\n",
				 stages__name(s->stages, id), s->det[id].last_p95_ns / 1e9);
	text_metric(&t, "tailprof_stage_baseline_p95_seconds", "gauge",
		    "Median p95 of the stage's recent ordinary windows (the spike baseline).");
	for (uint32_t id = 1; id < TP_MAX_STAGES; id++)
		if (s->det[id].judged && stages__name(s->stages, id))
			text_put(&t, "tailprof_stage_baseline_p95_seconds{stage=\"%s\"} %.9f\n",
				 stages__name(s->stages, id), s->det[id].median_ns / 1e9);
	text_metric(&t, "tailprof_spike_active", "gauge",
		    "1 while a spike episode of the stage goes on, else 0.");
	for (uint32_t id = 1; id < TP_MAX_STAGES; id++)
		if ((s->det[id].judged || active[id]) && stages__name(s->stages, id))
			text_put(&t, "tailprof_spike_active{stage=\"%s\"} %d\n",
				 stages__name(s->stages, id), active[id]);
	text_metric(&t, "tailprof_spikes_total", "counter",
		    "Spike episodes begun, by stage (\"\" for marks of no stage) and source.");
	for (uint32_t id = 0; id < TP_MAX_STAGES; id++) {
		const uint64_t *tot = id ? s->det[id].totals : s->totals_nostage;
		const char *name = id ? stages__name(s->stages, id) : "";

		for (int src = 0; name && src < SRC_NR; src++)
			if (tot[src] || (id && s->det[id].judged))
				text_put(
				    &t,
				    "tailprof_spikes_total{stage=\"%s\",source=\"%s\"} %" PRIu64
				    "\n",
				    name, spikes_source_names[src], tot[src]);
	}
	text_metric(&t, "tailprof_spike_pinned_windows", "gauge",
		    "Windows pinned by spikes (pin_budget bounds them).");
	text_put(&t, "tailprof_spike_pinned_windows %u\n", s->total_pins);
	text_metric(&t, "tailprof_spike_pins_released_total", "counter",
		    "Pins released early to keep within pin_budget, oldest first.");
	text_put(&t, "tailprof_spike_pins_released_total %" PRIu64 "\n", s->pins_released);
	text_metric(&t, "tailprof_spike_windows_unpinned_total", "counter",
		    "Spike windows counted but not pinned: past an episode's cap (an alert left "
		    "open, a spike over its threshold for long).");
	text_put(&t, "tailprof_spike_windows_unpinned_total %" PRIu64 "\n", s->windows_unpinned);
	text_metric(&t, "tailprof_spikes_dropped_total", "counter",
		    "Episodes dropped from memory, the oldest first, past the episodes held.");
	text_put(&t, "tailprof_spikes_dropped_total %" PRIu64 "\n", s->episodes_dropped);
	if (s->store) {
		struct spike_store_stats st;

		spike_store__stats(s->store, &st);
		text_metric(&t, "tailprof_spike_store_spikes", "gauge",
			    "Spikes in the state directory (--state-dir).");
		text_put(&t, "tailprof_spike_store_spikes %u\n", st.spikes);
		text_metric(&t, "tailprof_spike_store_bytes", "gauge",
			    "Bytes of spike files in the state directory (bounded).");
		text_put(&t, "tailprof_spike_store_bytes %" PRIu64 "\n", st.bytes);
		text_metric(&t, "tailprof_spike_store_files_total", "counter",
			    "State directory files: spikes written, writes failed, removed to "
			    "stay within the bounds (oldest first), found corrupt.");
		text_put(&t, "tailprof_spike_store_files_total{event=\"saved\"} %" PRIu64 "\n",
			 st.saved);
		text_put(&t, "tailprof_spike_store_files_total{event=\"failed\"} %" PRIu64 "\n",
			 s->saves_failed);
		text_put(&t, "tailprof_spike_store_files_total{event=\"evicted\"} %" PRIu64 "\n",
			 st.evicted);
		text_put(&t, "tailprof_spike_store_files_total{event=\"corrupt\"} %" PRIu64 "\n",
			 st.corrupt);
		text_put(&t,
			 "tailprof_spike_store_files_total{event=\"temp_removed\"} %" PRIu64 "\n",
			 st.temp_removed);
		text_metric(
		    &t, "tailprof_spike_store_pending", "gauge",
		    "Closed spikes not yet written to the state directory: their turn, or a "
		    "disk that refused a write (full, read-only), tried again.");
		text_put(&t, "tailprof_spike_store_pending %zu\n", spikes__saves_pending(s));
		text_metric(&t, "tailprof_spike_store_write_failing", "gauge",
			    "1 while the state directory refuses the spikes' writes (the log names "
			    "the error), else 0.");
		text_put(&t, "tailprof_spike_store_write_failing %d\n", s->save_err != 0);
		text_metric(&t, "tailprof_spike_store_unknown_format", "gauge",
			    "Files of a newer format in the state directory: kept, not read.");
		text_put(&t, "tailprof_spike_store_unknown_format %" PRIu64 "\n",
			 st.unknown_format);
	}
	pthread_mutex_lock(&s->mu);
	text_metric(&t, "tailprof_spike_external_dropped_total", "counter",
		    "Marks and alerts not kept: 32 marks and alerts were going on already.");
	text_put(&t, "tailprof_spike_external_dropped_total %" PRIu64 "\n", s->external_dropped);
	text_metric(&t, "tailprof_spike_marks_total", "counter",
		    "Marks received (POST /api/v1/marks).");
	text_put(&t, "tailprof_spike_marks_total %" PRIu64 "\n", s->marks_total);
	text_metric(&t, "tailprof_spike_alerts_total", "counter",
		    "Alertmanager alerts received, and those that repeated a delivery.");
	text_put(&t, "tailprof_spike_alerts_total{result=\"applied\"} %" PRIu64 "\n",
		 s->alerts_total - s->alert_repeats - s->alerts_outside);
	text_put(&t, "tailprof_spike_alerts_total{result=\"outside_ring\"} %" PRIu64 "\n",
		 s->alerts_outside);
	text_put(&t, "tailprof_spike_alerts_total{result=\"repeat\"} %" PRIu64 "\n",
		 s->alert_repeats);
	pthread_mutex_unlock(&s->mu);
	return text_finish(&t);
}
