// SPDX-License-Identifier: GPL-2.0-only
/* Spike detection, episodes, marks and alerts, and the pins that keep their windows. The rules
 * and their reasons: docs/spikes.md. */
#include "spikes.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "hashmap.h"
#include "histogram.h"
#include "spike_explain.h"
#include "spikes_internal.h"
#include "stages.h"
#include "timeparse.h"
#include "window.h"

const char *const spikes_source_names[SRC_NR] = {"detected", "mark", "alertmanager"};

/* ---- options ---- */

int spikes_opts__set(struct spikes_opts *o, const char *key, const char *value, char *msg,
		     size_t msglen)
{
	uint64_t v;

	if (!strcmp(key, "k")) {
		double k;

		if (tp_parse_decimal(value, &k) || !(k > 1.0) || k > 1000.0) {
			snprintf(msg, msglen,
				 "'%s': give a number above 1 and at most 1000, e.g. 2 or 2.5",
				 value);
			return -EINVAL;
		}
		o->k = k;
		return 0;
	}
	if (!strcmp(key, "baseline_windows")) {
		if (tp_parse_uint(value, 10, SPIKES_MAX_BASELINE, &v)) {
			snprintf(msg, msglen, "'%s': give an integer from 10 to %d, e.g. 30", value,
				 SPIKES_MAX_BASELINE);
			return -EINVAL;
		}
		o->baseline_windows = v;
		return 0;
	}
	if (!strcmp(key, "min_requests")) {
		if (tp_parse_uint(value, 1, 1000000, &v)) {
			snprintf(msg, msglen, "'%s': give an integer from 1 to 1000000, e.g. 20",
				 value);
			return -EINVAL;
		}
		o->min_requests = v;
		return 0;
	}
	if (!strcmp(key, "min_rise")) {
		if (tp_parse_duration(value, &v) && strcmp(value, "0")) {
			snprintf(msg, msglen, "'%s': give a duration, e.g. 0, 500us, 5ms", value);
			return -EINVAL;
		}
		o->min_rise_ns = strcmp(value, "0") ? v : 0;
		return 0;
	}
	if (!strcmp(key, "pin_budget")) {
		if (tp_parse_uint(value, 0, 100000, &v)) {
			snprintf(msg, msglen,
				 "'%s': give an integer from 0 (pin nothing) to 100000, e.g. 64",
				 value);
			return -EINVAL;
		}
		o->pin_budget = v;
		return 0;
	}
	if (!strcmp(key, "state_dir")) {
		if (!*value || *value != '/') {
			snprintf(msg, msglen,
				 "'%s': give an absolute directory, e.g. /var/lib/tailprof", value);
			return -EINVAL;
		}
		o->state_dir = value;
		return 0;
	}
	if (!strcmp(key, "write_rate")) {
		if (tp_parse_uint(value, 1, 100000, &v)) {
			snprintf(msg, msglen,
				 "'%s': give write requests a minute, an integer from 1 to 100000, "
				 "e.g. 60",
				 value);
			return -EINVAL;
		}
		o->write_rate = v;
		return 0;
	}
	snprintf(msg, msglen,
		 "unknown key '%s'; allowed: k, baseline_windows, min_requests, min_rise, "
		 "pin_budget, state_dir, write_rate",
		 key);
	return -ENOENT;
}

/* ---- life cycle ---- */

struct spikes *spikes__new(const struct spikes_opts *o, struct stages *stages, uint64_t window_ns)
{
	struct spikes *s;

	if (!(o->k > 1.0) || o->baseline_windows < SPIKES_MIN_BASELINE ||
	    o->baseline_windows > SPIKES_MAX_BASELINE || !window_ns) {
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->o = *o;
	s->stages = stages;
	s->window_ns = window_ns;
	pthread_mutex_init(&s->mu, NULL);
	s->scratch = calloc(o->baseline_windows, sizeof(*s->scratch));
	if (!s->scratch)
		goto fail;
	for (uint32_t id = 0; id < TP_MAX_STAGES; id++) {
		s->det[id].base = calloc(o->baseline_windows, sizeof(uint64_t));
		s->det[id].run = calloc(o->baseline_windows / 2 + 1, sizeof(uint64_t));
		if (!s->det[id].base || !s->det[id].run)
			goto fail;
	}
	return s;
fail:
	spikes__free(s, NULL);
	errno = ENOMEM;
	return NULL;
}

static void episode_free(struct episode *e)
{
	if (!e)
		return;
	free(e->pins);
	json_decref(e->explained);
	json_decref(e->stored);
	free(e);
}

void spikes__free(struct spikes *s, struct window_ring *ring)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nr_eps; i++) {
		struct episode *e = s->eps[i];

		for (uint32_t j = 0; ring && j < e->nr_pins; j++) {
			struct window *w = window_ring__find(ring, e->pins[j]);

			if (w)
				window_ring__unpin(ring, w);
		}
		episode_free(e);
	}
	for (uint32_t id = 0; id < TP_MAX_STAGES; id++) {
		free(s->det[id].base);
		free(s->det[id].run);
	}
	free(s->scratch);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

const struct spikes_opts *spikes__opts(const struct spikes *s)
{
	return &s->o;
}

/* ---- pins ---- */

static void pin(struct spikes *s, struct window_ring *ring, struct episode *e, uint64_t start_ns);

/* Releases the oldest pins until the budget holds: by episode age, each one's first window first
 * (the middle of the oldest episode goes before a newer episode's start). */
static void enforce_budget(struct spikes *s, struct window_ring *ring)
{
	while (s->total_pins > s->o.pin_budget) {
		struct episode *e = NULL;
		struct window *w;

		for (size_t i = 0; i < s->nr_eps && !e; i++)
			if (s->eps[i]->nr_pins)
				e = s->eps[i];
		if (!e)
			return;
		w = window_ring__find(ring, e->pins[0]);
		if (w)
			window_ring__unpin(ring, w);
		memmove(e->pins, e->pins + 1, (e->nr_pins - 1) * sizeof(*e->pins));
		e->nr_pins--;
		s->total_pins--;
		s->pins_released++;
	}
}

static void pin(struct spikes *s, struct window_ring *ring, struct episode *e, uint64_t start_ns)
{
	struct window *w;

	for (uint32_t i = 0; i < e->nr_pins; i++)
		if (e->pins[i] == start_ns)
			return;
	if (e->nr_pins == e->cap_pins) {
		e->unpinned++;
		s->windows_unpinned++;
		return;
	}
	w = window_ring__find(ring, start_ns);
	if (!w)
		return;
	window_ring__pin(ring, w);
	e->pins[e->nr_pins++] = start_ns;
	s->total_pins++;
	enforce_budget(s, ring);
}

/* Unpins e's windows from index keep on. */
static void unpin_from(struct spikes *s, struct window_ring *ring, struct episode *e, uint32_t keep)
{
	while (e->nr_pins > keep) {
		struct window *w = window_ring__find(ring, e->pins[--e->nr_pins]);

		if (w)
			window_ring__unpin(ring, w);
		s->total_pins--;
	}
}

/* ---- episodes ---- */

static bool id_taken(const struct spikes *s, const char *id)
{
	for (size_t i = 0; i < s->nr_eps; i++)
		if (!strcmp(s->eps[i]->id, id))
			return true;
	return false;
}

/* "<prefix>-YYYYmmddTHHMMSSZ", with -2, -3 ... when taken. */
static void make_id(const struct spikes *s, const char *prefix, int64_t unix_ns, char *id)
{
	char t[32], buf[SPIKE_ID_LEN + 16];
	time_t sec = (time_t)(unix_ns / 1000000000);
	struct tm tm;

	/* at most 40 + 1 + 16 + 4 characters */
	gmtime_r(&sec, &tm);
	strftime(t, sizeof(t), "%Y%m%dT%H%M%SZ", &tm);
	snprintf(buf, sizeof(buf), "%.40s-%.16s", prefix, t);
	for (int n = 2; id_taken(s, buf) && n < 1000; n++)
		snprintf(buf, sizeof(buf), "%.40s-%.16s-%d", prefix, t, n);
	buf[SPIKE_ID_LEN - 1] = 0;
	memcpy(id, buf, SPIKE_ID_LEN);
}

/* Drops the oldest closed episode (its pins released) to make room; false when every held one
 * is open. */
static bool make_room(struct spikes *s, struct window_ring *ring)
{
	for (size_t i = 0; i < s->nr_eps; i++) {
		struct episode *e = s->eps[i];

		if (e->open)
			continue;
		unpin_from(s, ring, e, 0);
		episode_free(e);
		memmove(&s->eps[i], &s->eps[i + 1], (s->nr_eps - i - 1) * sizeof(*s->eps));
		s->nr_eps--;
		s->episodes_dropped++;
		return true;
	}
	return false;
}

struct episode *spikes_episode_new(struct spikes *s, struct window_ring *ring, uint32_t stage,
				   enum spike_source src, uint64_t start_ns, uint32_t cap_pins)
{
	struct episode *e;

	if (s->nr_eps == SPIKES_MAX_HELD && !make_room(s, ring)) {
		s->episodes_dropped++;
		return NULL;
	}
	e = calloc(1, sizeof(*e));
	if (!e || !(e->pins = calloc(cap_pins, sizeof(*e->pins)))) {
		free(e);
		return NULL;
	}
	e->cap_pins = cap_pins;
	e->stage = stage;
	if (stage && stages__name(s->stages, stage))
		snprintf(e->stage_name, sizeof(e->stage_name), "%s",
			 stages__name(s->stages, stage));
	e->source = src;
	e->open = true;
	e->start_ns = e->end_ns = start_ns;
	e->baseline_p95_ns = stage ? s->det[stage].median_ns : 0;
	s->eps[s->nr_eps++] = e;
	if (stage)
		s->det[stage].totals[src]++;
	else
		s->totals_nostage[src]++;
	return e;
}

/* The baseline median of det (scratch: baseline_windows values). */
static uint64_t median(struct spikes *s, const struct stage_det *d)
{
	uint32_t n = d->nr_base;

	memcpy(s->scratch, d->base, n * sizeof(*s->scratch));
	/* insertion sort: n <= baseline_windows, and the ring is nearly sorted most of the time */
	for (uint32_t i = 1; i < n; i++) {
		uint64_t v = s->scratch[i];
		uint32_t j = i;

		for (; j && s->scratch[j - 1] > v; j--)
			s->scratch[j] = s->scratch[j - 1];
		s->scratch[j] = v;
	}
	if (!n)
		return 0;
	return n % 2 ? s->scratch[n / 2] : (s->scratch[n / 2 - 1] + s->scratch[n / 2]) / 2;
}

static void base_push(struct spikes *s, struct stage_det *d, uint64_t p95)
{
	d->base[d->head] = p95;
	d->head = (d->head + 1) % s->o.baseline_windows;
	if (d->nr_base < s->o.baseline_windows)
		d->nr_base++;
}

/* The spike windows of e held in ring, oldest first, into out[0..max). */
size_t spikes_spike_windows(const struct episode *e, struct window_ring *ring, struct window **out,
			    size_t max)
{
	size_t n = 0;

	for (uint32_t i = 0; i < e->nr_pins && n < max; i++) {
		struct window *w;

		if (e->pins[i] < e->start_ns || e->pins[i] >= e->end_ns)
			continue; /* the window before or after */
		w = window_ring__find(ring, e->pins[i]);
		if (w)
			out[n++] = w;
	}
	return n;
}

/* p95 and request count of e's stage over its spike windows merged. */
void spikes_merged_p95(const struct episode *e, struct window_ring *ring, uint64_t *p95,
		       uint64_t *count)
{
	struct window *ws[64];
	size_t n = spikes_spike_windows(e, ring, ws, 64);
	uint64_t *acc, total = 0, max = 0;

	*p95 = 0;
	*count = 0;
	if (!e->stage || !n || !(acc = calloc(TP_HIST_BUCKETS, sizeof(*acc))))
		return;
	for (size_t i = 0; i < n; i++) {
		struct stage_stats *st = ws[i]->stages ? ws[i]->stages->by_id[e->stage] : NULL;

		if (!st)
			continue;
		stage_stats__accumulate(st, acc);
		*count += st->count;
		if (st->max_ns > max)
			max = st->max_ns;
	}
	for (uint32_t b = 0; b < TP_HIST_BUCKETS; b++)
		total += acc[b];
	*p95 = histogram__percentile(acc, total, max, 950);
	free(acc);
}

/* Whether window start_ns lies in or next to an episode of stage (its edges). */
static bool near_episode(const struct spikes *s, uint32_t stage, uint64_t start_ns)
{
	for (size_t i = 0; i < s->nr_eps; i++) {
		const struct episode *e = s->eps[i];
		uint64_t lo = e->start_ns >= s->window_ns ? e->start_ns - s->window_ns : 0;

		uint64_t end = e->end_ns;

		/* a mark's or an alert's range as far as it pins windows (an alert left open grows
		 * without bound); a mark or alert of no stage is no stage's edge */
		if (e->source != SRC_DETECTED && end > e->start_ns + e->cap_pins * s->window_ns)
			end = e->start_ns + e->cap_pins * s->window_ns;
		if (e->stage == stage && stage && start_ns >= lo && start_ns < end + s->window_ns)
			return true;
	}
	return false;
}

/* The baseline of e: as many ordinary windows as it has spike windows, nearest before it (after
 * it only when too few are held), none in or next to an episode of its stage, and with requests
 * of its stage when it has one. Into out[0..max), oldest first. */
size_t spikes_baseline_windows(const struct spikes *s, const struct episode *e,
			       struct window_ring *ring, struct window **out, size_t max)
{
	size_t want = e->nr_windows ? e->nr_windows : 1, n = 0, count = window_ring__count(ring);

	if (want > max)
		want = max;
	for (size_t i = count; i-- > 0 && n < want;) {
		struct window *w = window_ring__get(ring, i);

		if (!w->closed || w->start_ns >= e->start_ns ||
		    near_episode(s, e->stage, w->start_ns))
			continue;
		if (e->stage && (!w->stages || !w->stages->by_id[e->stage]))
			continue;
		out[n++] = w;
	}
	for (size_t i = 0; i < count && n < want; i++) {
		struct window *w = window_ring__get(ring, i);

		if (!w->closed || w->start_ns < e->end_ns || near_episode(s, e->stage, w->start_ns))
			continue;
		if (e->stage && (!w->stages || !w->stages->by_id[e->stage]))
			continue;
		out[n++] = w;
	}
	/* oldest first */
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j && out[j - 1]->start_ns > out[j]->start_ns; j--) {
			struct window *t = out[j];

			out[j] = out[j - 1];
			out[j - 1] = t;
		}
	return n;
}

json_t *spikes_explain(struct spikes *s, struct window_ring *ring, const struct episode *e)
{
	struct window *sw[64], *bw[64];
	struct spike_explain_in in = {
	    .stage = e->stage,
	    .stages = s->stages,
	    .p95_ns = e->p95_ns,
	    .baseline_p95_ns = e->baseline_p95_ns,
	};

	in.nr_spike = spikes_spike_windows(e, ring, sw, 64);
	in.nr_base = spikes_baseline_windows(s, e, ring, bw, 64);
	in.spike = sw;
	in.base = bw;
	return spike_explain(&in);
}

static void episode_close(struct spikes *s, struct window_ring *ring, struct episode *e)
{
	e->open = false;
	spikes_merged_p95(e, ring, &e->p95_ns, &e->request_count);
	json_decref(e->explained);
	e->explained = spikes_explain(s, ring, e);
	e->to_save = s->store != NULL;
}

/* ---- detection ---- */

static void judge(struct spikes *s, struct window_ring *ring, struct window *w, uint32_t id)
{
	struct stage_det *d = &s->det[id];
	struct stage_stats *st = w->stages ? w->stages->by_id[id] : NULL;
	uint64_t threshold = stages__threshold_ns(s->stages, id), p95, med = 0;
	uint32_t shift_after = s->o.baseline_windows / 2;
	struct episode *e = d->open;
	bool spike;

	if (!st || st->count < s->o.min_requests) {
		/* not judged: a window without enough requests ends an episode */
		if (e) {
			episode_close(s, ring, e);
			d->open = NULL;
		}
		return;
	}
	p95 = stage_stats__percentile(st, 950);
	if (d->nr_base)
		med = median(s, d);
	d->last_p95_ns = p95;
	d->judged = true;
	d->median_ns = med;
	spike = (threshold && p95 > threshold) ||
		(d->nr_base >= SPIKES_MIN_BASELINE && (double)p95 > s->o.k * (double)med &&
		 p95 - med >= s->o.min_rise_ns);
	if (!spike) {
		base_push(s, d, p95);
		if (e) {
			pin(s, ring, e, w->start_ns); /* the window after */
			episode_close(s, ring, e);
			d->open = NULL;
		}
		return;
	}
	if (!e) {
		e = spikes_episode_new(s, ring, id, SRC_DETECTED, w->start_ns, shift_after + 3);
		if (!e)
			return;
		make_id(s, e->stage_name[0] ? e->stage_name : "stage",
			w->start_ns + w->wall_offset_ns, e->id);
		d->open = e;
		d->nr_run = 0;
		pin(s, ring, e, w->start_ns - s->window_ns); /* the window before */
	}
	pin(s, ring, e, w->start_ns);
	e->end_ns = w->end_ns;
	e->wall_offset_ns = w->wall_offset_ns;
	e->nr_windows++;
	if (p95 > e->peak_p95_ns) {
		e->peak_p95_ns = p95;
		e->peak_start_ns = w->start_ns;
	}
	if (d->nr_run <= shift_after)
		d->run[d->nr_run++] = p95;
	if (e->nr_windows < shift_after || threshold)
		return;
	/* It lasted: a level shift. It closes, keeps its first windows pinned, and the baseline
	 * starts again from the new level (the shift's own windows). */
	e->kind = KIND_LEVEL_SHIFT;
	episode_close(s, ring, e);
	unpin_from(s, ring, e, SHIFT_PINNED + 1);
	d->nr_base = d->head = 0;
	for (uint32_t i = 0; i < d->nr_run; i++)
		base_push(s, d, d->run[i]);
	e->level_after_ns = median(s, d);
	d->median_ns = e->level_after_ns;
	d->open = NULL;
}

/* ---- marks and alerts ---- */

static uint64_t align_down(const struct spikes *s, uint64_t t)
{
	return t - t % s->window_ns;
}

uint64_t spikes_to_mono(int64_t unix_ns, int64_t offset)
{
	int64_t m = unix_ns - offset;

	return m > 0 ? (uint64_t)m : 0;
}

/* Pins the closed windows of e's range held now, and closes e when its planned end is reached. */
static void cover_held(struct spikes *s, struct window_ring *ring, struct episode *e)
{
	for (size_t i = 0; i < window_ring__count(ring); i++) {
		struct window *w = window_ring__get(ring, i);

		/* windows it took already end at e->end_ns */
		if (!w->closed || w->start_ns < e->end_ns ||
		    (e->planned_end_ns && w->start_ns >= e->planned_end_ns))
			continue;
		pin(s, ring, e, w->start_ns);
		e->end_ns = w->end_ns;
		e->wall_offset_ns = w->wall_offset_ns;
		e->nr_windows = (uint32_t)((e->end_ns - e->start_ns) / s->window_ns);
	}
	/* its planned end passed (windows without data, or before the ring, included) */
	if (e->planned_end_ns &&
	    (e->end_ns >= e->planned_end_ns || s->last_closed_end_ns >= e->planned_end_ns))
		episode_close(s, ring, e);
}

/* Marks and alerts going on. */
static size_t open_external(const struct spikes *s)
{
	size_t n = 0;

	for (size_t i = 0; i < s->nr_eps; i++)
		n += s->eps[i]->open && s->eps[i]->source != SRC_DETECTED;
	return n;
}

static void apply_mark(struct spikes *s, struct window_ring *ring, const struct spike_mark *m,
		       const char *id, int64_t offset)
{
	uint64_t t = spikes_to_mono(m->time_unix_ns, offset), before, after;
	uint32_t stage = m->stage[0] ? stages__id(s->stages, m->stage) : 0;
	struct episode *e;

	if (open_external(s) >= MAX_OPEN_EXTERNAL) {
		s->external_dropped++;
		return;
	}
	before = m->has_before ? m->before_ns : s->window_ns;
	after = m->has_after ? m->after_ns : s->window_ns;
	if (before > MARK_MAX_SIDE * s->window_ns)
		before = MARK_MAX_SIDE * s->window_ns;
	if (after > MARK_MAX_SIDE * s->window_ns)
		after = MARK_MAX_SIDE * s->window_ns;
	e = spikes_episode_new(s, ring, stage, SRC_MARK, align_down(s, t > before ? t - before : 0),
			       2 * MARK_MAX_SIDE + 2);
	if (!e)
		return;
	snprintf(e->id, sizeof(e->id), "%s", id);
	if (m->stage[0] && !stage)
		snprintf(e->stage_name, sizeof(e->stage_name), "%s", m->stage);
	snprintf(e->reason, sizeof(e->reason), "%s", m->reason);
	e->planned_end_ns = align_down(s, t + after) + s->window_ns;
	e->end_ns = e->start_ns;
	e->wall_offset_ns = offset;
	cover_held(s, ring, e);
}

static struct episode *find_alert(struct spikes *s, const struct spike_alert *a)
{
	for (size_t i = s->nr_eps; i-- > 0;) {
		struct episode *e = s->eps[i];

		if (e->source == SRC_ALERTMANAGER && !strcmp(e->fingerprint, a->fingerprint) &&
		    e->alert_starts_unix_ns == a->starts_unix_ns)
			return e;
	}
	return NULL;
}

static void apply_alert(struct spikes *s, struct window_ring *ring, const struct spike_alert *a,
			int64_t offset)
{
	struct episode *e = find_alert(s, a);
	uint64_t start, lookback = (uint64_t)s->o.alert_lookback * s->window_ns;
	uint32_t stage = a->stage[0] ? stages__id(s->stages, a->stage) : 0;

	if (!e && !a->firing && a->ends_unix_ns && window_ring__count(ring) &&
	    spikes_to_mono(a->ends_unix_ns, offset) < window_ring__get(ring, 0)->start_ns) {
		s->alerts_outside++; /* resolved before anything held: nothing to keep */
		return;
	}
	if (!e && open_external(s) >= MAX_OPEN_EXTERNAL) {
		s->external_dropped++;
		return;
	}
	if (!e) {
		char prefix[40];

		start = spikes_to_mono(a->starts_unix_ns, offset);
		start = align_down(s, start > lookback ? start - lookback : 0);
		/* an alert older than the ring: its episode starts with what is held */
		if (window_ring__count(ring) && start < window_ring__get(ring, 0)->start_ns)
			start = window_ring__get(ring, 0)->start_ns;
		/* one from the future (a skewed clock): it starts with the window going on now */
		if (start > s->last_closed_end_ns)
			start = s->last_closed_end_ns;
		e = spikes_episode_new(s, ring, stage, SRC_ALERTMANAGER, start,
				       s->o.alert_lookback + ALERT_EXTRA_PINS);
		if (!e)
			return;
		snprintf(prefix, sizeof(prefix), "alert-%.16s", a->fingerprint);
		make_id(s, prefix, a->starts_unix_ns, e->id);
		snprintf(e->fingerprint, sizeof(e->fingerprint), "%s", a->fingerprint);
		snprintf(e->reason, sizeof(e->reason), "%s", a->reason);
		if (a->stage[0] && !stage)
			snprintf(e->stage_name, sizeof(e->stage_name), "%s", a->stage);
		e->alert_starts_unix_ns = a->starts_unix_ns;
		e->wall_offset_ns = offset;
	}
	if (!e->open)
		return;
	if (!a->firing && a->ends_unix_ns) {
		uint64_t end =
		    align_down(s, spikes_to_mono(a->ends_unix_ns, offset)) + s->window_ns;

		e->planned_end_ns = end > e->start_ns ? end : e->start_ns + s->window_ns;
	}
	cover_held(s, ring, e);
}

/* A repeat of a delivery seen before (group key, fingerprint, startsAt and status)? */
static bool seen_before(struct spikes *s, const struct spike_alert *a)
{
	uint64_t k =
	    hashmap__fold(hashmap__hash_str(a->group_key), hashmap__hash_str(a->fingerprint));

	k = hashmap__fold(k, (uint64_t)a->starts_unix_ns * 2 + a->firing);
	for (size_t i = 0; i < ALERT_SEEN; i++)
		if (s->seen[i] == k)
			return true;
	s->seen[s->seen_next] = k;
	s->seen_next = (s->seen_next + 1) % ALERT_SEEN;
	return false;
}

int spikes__mark(struct spikes *s, const struct spike_mark *m, char *id, char *err, size_t errlen)
{
	char t[40], t2[40];
	time_t sec;
	struct tm tm;
	int rc = 0;

	if (m->stage[0] && !stages__id(s->stages, m->stage)) {
		char names[512];

		snprintf(err, errlen, "stage: '%s' is not a known stage; known: %s", m->stage,
			 stages__names_list(s->stages, names, sizeof(names)));
		return -EINVAL;
	}
	pthread_mutex_lock(&s->mu);
	if (s->oldest_unix_ns && m->time_unix_ns < s->oldest_unix_ns) {
		snprintf(err, errlen,
			 "time: %s is before the oldest window held (%s); give a later time",
			 tp_format_rfc3339(m->time_unix_ns, t, sizeof(t)),
			 tp_format_rfc3339(s->oldest_unix_ns, t2, sizeof(t2)));
		rc = -EINVAL;
	} else if (s->newest_unix_ns &&
		   m->time_unix_ns > s->newest_unix_ns + (int64_t)(3600 * NSEC_PER_SEC)) {
		snprintf(err, errlen, "time: more than an hour in the future; give a time held");
		rc = -EINVAL;
	} else if (s->nr_marks == MARK_QUEUE) {
		snprintf(err, errlen, "too many marks waiting; try again in a window");
		rc = -EAGAIN;
	}
	if (rc) {
		pthread_mutex_unlock(&s->mu);
		return rc;
	}
	sec = (time_t)(m->time_unix_ns / 1000000000);
	gmtime_r(&sec, &tm);
	strftime(t, 17, "%Y%m%dT%H%M%SZ", &tm);
	/* at most 31 + 1 + 5 + 16 + 1 + 6 characters */
	snprintf(id, SPIKE_ID_LEN, "%.31s%smark-%.16s-%u", m->stage, m->stage[0] ? "-" : "", t,
		 (unsigned)(++s->mark_seq % 1000000));
	s->marks[s->nr_marks] = *m;
	snprintf(s->mark_ids[s->nr_marks], SPIKE_ID_LEN, "%s", id);
	s->nr_marks++;
	s->marks_total++;
	pthread_mutex_unlock(&s->mu);
	return 0;
}

int spikes__alerts(struct spikes *s, const struct spike_alert *a, size_t n)
{
	pthread_mutex_lock(&s->mu);
	if (s->nr_alerts + n > ALERT_QUEUE) {
		pthread_mutex_unlock(&s->mu);
		return -EAGAIN;
	}
	memcpy(&s->alerts[s->nr_alerts], a, n * sizeof(*a));
	s->nr_alerts += n;
	s->alerts_total += n;
	pthread_mutex_unlock(&s->mu);
	return 0;
}

static void apply_queued(struct spikes *s, struct window_ring *ring, int64_t offset)
{
	struct spike_mark marks[MARK_QUEUE];
	char ids[MARK_QUEUE][SPIKE_ID_LEN];
	struct spike_alert *alerts;
	size_t nm, na;

	pthread_mutex_lock(&s->mu);
	nm = s->nr_marks;
	na = s->nr_alerts;
	memcpy(marks, s->marks, nm * sizeof(*marks));
	memcpy(ids, s->mark_ids, sizeof(ids[0]) * nm);
	alerts = na ? malloc(na * sizeof(*alerts)) : NULL;
	if (alerts)
		memcpy(alerts, s->alerts, na * sizeof(*alerts));
	else
		na = 0;
	s->nr_marks = 0;
	s->nr_alerts = 0;
	pthread_mutex_unlock(&s->mu);
	for (size_t i = 0; i < nm; i++)
		apply_mark(s, ring, &marks[i], ids[i], offset);
	for (size_t i = 0; i < na; i++) {
		if (seen_before(s, &alerts[i])) {
			s->alert_repeats++;
			continue;
		}
		apply_alert(s, ring, &alerts[i], offset);
	}
	free(alerts);
}

/* ---- the window close ---- */

void spikes__window_closed(struct spikes *s, struct window_ring *ring, struct window *w)
{
	struct window *oldest = window_ring__get(ring, 0);

	s->last_closed_end_ns = w->end_ns;
	for (uint32_t id = 1; id < TP_MAX_STAGES; id++)
		if ((w->stages && w->stages->by_id[id]) || s->det[id].open)
			judge(s, ring, w, id);
	/* marks and alerts: open ones take this window; queued ones begin */
	for (size_t i = 0; i < s->nr_eps; i++) {
		struct episode *e = s->eps[i];

		if (!e->open || e->source == SRC_DETECTED || w->start_ns < e->start_ns)
			continue;
		cover_held(s, ring, e);
	}
	apply_queued(s, ring, w->wall_offset_ns);
	pthread_mutex_lock(&s->mu);
	s->oldest_unix_ns = (int64_t)oldest->start_ns + oldest->wall_offset_ns;
	s->newest_unix_ns = (int64_t)w->end_ns + w->wall_offset_ns;
	pthread_mutex_unlock(&s->mu);
}
