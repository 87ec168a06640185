// SPDX-License-Identifier: GPL-2.0-only
/* Spike detection, episodes, marks and alerts, and the pins that keep their windows. The rules
 * and their reasons: docs/spikes.md. */
#include "spikes.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "hashmap.h"
#include "histogram.h"
#include "log.h"
#include "spike_explain.h"
#include "stages.h"
#include "textbuf.h"
#include "timeparse.h"
#include "window.h"

#define MARK_QUEUE	 64  /* marks waiting for the next window close */
#define ALERT_QUEUE	 256 /* alerts waiting for the next window close */
#define ALERT_SEEN	 512 /* deliveries remembered, to drop repeats */
#define ALERT_EXTRA_PINS 10  /* an open alert pins at most lookback + this many windows */
#define MARK_MAX_SIDE	 32  /* a mark's before/after, in windows, at most */
#define SHIFT_PINNED	 2   /* a level shift keeps its first windows pinned, and the one before */

enum spike_kind { KIND_SPIKE, KIND_LEVEL_SHIFT };
enum spike_source { SRC_DETECTED, SRC_MARK, SRC_ALERTMANAGER, SRC_NR };
static const char *const source_names[SRC_NR] = {"detected", "mark", "alertmanager"};

struct episode {
	char id[SPIKE_ID_LEN];
	uint32_t stage; /* 0: none */
	char stage_name[TP_STAGE_NAME_LEN];
	enum spike_kind kind;
	enum spike_source source;
	bool open;
	uint64_t start_ns, end_ns; /* CLOCK_MONOTONIC, window bounds: [start, end) so far */
	uint64_t planned_end_ns;   /* marks and resolved alerts: where it ends; 0: open-ended */
	int64_t wall_offset_ns;	   /* realtime - monotonic when it was last extended */
	uint32_t nr_windows;	   /* spike windows so far */
	uint64_t peak_p95_ns;	   /* the highest window p95 of the stage, and that window */
	uint64_t peak_start_ns;
	uint64_t baseline_p95_ns;   /* the stage's baseline median when it began */
	uint64_t level_after_ns;    /* level shifts: the median p95 of the new level */
	uint64_t p95_ns;	    /* of the spike windows merged (cached when closed) */
	uint64_t request_count;	    /* requests of the stage in the spike windows (when closed) */
	uint64_t *pins;		    /* starts of the windows it pins, in order */
	uint32_t nr_pins, cap_pins; /* cap_pins bounds them */
	uint64_t unpinned;	    /* windows beyond cap_pins: counted, not kept */
	char reason[SPIKE_REASON_LEN];
	char fingerprint[SPIKE_FINGERPRINT_LEN]; /* alerts */
	int64_t alert_starts_unix_ns;
	json_t *explained; /* causes, evidence, requests: cached when closed */
};

struct stage_det {
	uint64_t *base; /* ring of the last baseline_windows ordinary p95 values */
	uint32_t nr_base, head;
	uint64_t *run; /* p95 of each window of the open detected episode (level-shift seed) */
	uint32_t nr_run;
	struct episode *open; /* the detected episode going on */
	uint64_t last_p95_ns; /* of the last judged window */
	bool judged;	      /* a window was judged */
	uint64_t median_ns;   /* baseline median as of the last judged window */
	uint64_t totals[SRC_NR];
};

struct alert_seen {
	uint64_t key;
};

struct spikes {
	struct spikes_opts o;
	struct stages *stages;
	uint64_t window_ns;
	struct stage_det det[TP_MAX_STAGES];
	uint64_t *scratch; /* baseline_windows values for the median */
	struct episode *eps[SPIKES_MAX_HELD];
	size_t nr_eps;
	uint64_t totals_nostage[SRC_NR];
	uint32_t total_pins;
	uint64_t pins_released, episodes_dropped, alerts_counted_windows, last_closed_end_ns;
	/* queued by other threads: under mu */
	pthread_mutex_t mu;
	struct spike_mark marks[MARK_QUEUE];
	char mark_ids[MARK_QUEUE][SPIKE_ID_LEN];
	size_t nr_marks;
	struct spike_alert alerts[ALERT_QUEUE];
	size_t nr_alerts;
	uint64_t seen[ALERT_SEEN];
	size_t seen_next;
	uint64_t mark_seq;
	int64_t oldest_unix_ns, newest_unix_ns; /* what marks may name: the ring's span */
	uint64_t marks_total, alerts_total, alert_repeats, alerts_outside;
};

/* ---- options ---- */

int spikes_opts__set(struct spikes_opts *o, const char *key, const char *value, char *msg,
		     size_t msglen)
{
	uint64_t v;

	if (!strcmp(key, "k")) {
		char *end;
		double k;

		errno = 0;
		k = strtod(value, &end);
		if (errno || end == value || *end || !(k > 1.0) || k > 1000.0) {
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
		s->alerts_counted_windows += e->source == SRC_ALERTMANAGER;
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

static struct episode *episode_new(struct spikes *s, struct window_ring *ring, uint32_t stage,
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
static size_t spike_windows(const struct episode *e, struct window_ring *ring, struct window **out,
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
static void merged_p95(const struct episode *e, struct window_ring *ring, uint64_t *p95,
		       uint64_t *count)
{
	struct window *ws[64];
	size_t n = spike_windows(e, ring, ws, 64);
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

		if ((e->stage == stage || !e->stage) && start_ns >= lo &&
		    start_ns < e->end_ns + s->window_ns)
			return true;
	}
	return false;
}

/* The baseline of e: as many ordinary windows as it has spike windows, nearest before it (after
 * it only when too few are held), none in or next to an episode of its stage, and with requests
 * of its stage when it has one. Into out[0..max), oldest first. */
static size_t baseline_windows(const struct spikes *s, const struct episode *e,
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

static json_t *explain(struct spikes *s, struct window_ring *ring, const struct episode *e)
{
	struct window *sw[64], *bw[64];
	struct spike_explain_in in = {
	    .stage = e->stage,
	    .stages = s->stages,
	    .p95_ns = e->p95_ns,
	    .baseline_p95_ns = e->baseline_p95_ns,
	};

	in.nr_spike = spike_windows(e, ring, sw, 64);
	in.nr_base = baseline_windows(s, e, ring, bw, 64);
	in.spike = sw;
	in.base = bw;
	return spike_explain(&in);
}

static void episode_close(struct spikes *s, struct window_ring *ring, struct episode *e)
{
	e->open = false;
	merged_p95(e, ring, &e->p95_ns, &e->request_count);
	json_decref(e->explained);
	e->explained = explain(s, ring, e);
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
		e = episode_new(s, ring, id, SRC_DETECTED, w->start_ns, shift_after + 3);
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

static uint64_t to_mono(int64_t unix_ns, int64_t offset)
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

static void apply_mark(struct spikes *s, struct window_ring *ring, const struct spike_mark *m,
		       const char *id, int64_t offset)
{
	uint64_t t = to_mono(m->time_unix_ns, offset), before, after;
	uint32_t stage = m->stage[0] ? stages__id(s->stages, m->stage) : 0;
	struct episode *e;

	before = m->has_before ? m->before_ns : s->window_ns;
	after = m->has_after ? m->after_ns : s->window_ns;
	if (before > MARK_MAX_SIDE * s->window_ns)
		before = MARK_MAX_SIDE * s->window_ns;
	if (after > MARK_MAX_SIDE * s->window_ns)
		after = MARK_MAX_SIDE * s->window_ns;
	e = episode_new(s, ring, stage, SRC_MARK, align_down(s, t > before ? t - before : 0),
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
	    to_mono(a->ends_unix_ns, offset) < window_ring__get(ring, 0)->start_ns) {
		s->alerts_outside++; /* resolved before anything held: nothing to keep */
		return;
	}
	if (!e) {
		char prefix[40];

		start = to_mono(a->starts_unix_ns, offset);
		start = align_down(s, start > lookback ? start - lookback : 0);
		/* an alert older than the ring: its episode starts with what is held */
		if (window_ring__count(ring) && start < window_ring__get(ring, 0)->start_ns)
			start = window_ring__get(ring, 0)->start_ns;
		e = episode_new(s, ring, stage, SRC_ALERTMANAGER, start,
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
		uint64_t end = align_down(s, to_mono(a->ends_unix_ns, offset)) + s->window_ns;

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

static void set_time(json_t *o, const char *key, int64_t unix_ns)
{
	char buf[40], k[48];

	json_object_set_new(o, key, json_string(tp_format_rfc3339(unix_ns, buf, sizeof(buf))));
	snprintf(k, sizeof(k), "%s_unix_ns", key);
	json_object_set_new(o, k, json_integer(unix_ns));
}

static json_t *episode_json(struct spikes *s, struct window_ring *ring, const struct episode *e,
			    const struct pattern *pat, bool full)
{
	json_t *o = json_object(), *ex = e->explained, *causes;
	int64_t off = e->wall_offset_ns;
	uint64_t p95 = e->p95_ns, count = e->request_count;
	char a[32], b[32];

	if (!o)
		return NULL;
	if (e->open) {
		merged_p95(e, ring, &p95, &count);
		ex = NULL;
	}
	if (!ex) {
		struct episode tmp = *e;

		tmp.p95_ns = p95;
		ex = explain(s, ring, &tmp);
	} else {
		json_incref(ex);
	}
	json_object_set_new(o, "id", json_string(e->id));
	json_object_set_new(o, "stage", json_string(e->stage_name));
	json_object_set_new(o, "kind",
			    json_string(e->kind == KIND_LEVEL_SHIFT ? "level_shift" : "spike"));
	set_time(o, "start", (int64_t)e->start_ns + off);
	set_time(o, "end", (int64_t)e->end_ns + off);
	json_object_set_new(o, "open", json_boolean(e->open));
	json_object_set_new(o, "windows", json_integer(e->nr_windows));
	json_object_set_new(o, "p95_ns", json_integer((json_int_t)p95));
	json_object_set_new(o, "baseline_p95_ns", json_integer((json_int_t)e->baseline_p95_ns));
	json_object_set_new(o, "peak_p95_ns", json_integer((json_int_t)e->peak_p95_ns));
	if (e->peak_p95_ns)
		set_time(o, "peak_window_start", (int64_t)e->peak_start_ns + off);
	json_object_set_new(o, "request_count", json_integer((json_int_t)count));
	json_object_set_new(o, "pattern", json_string(pat->periodic ? "periodic" : "random"));
	if (pat->periodic) {
		json_object_set_new(o, "period_ns", json_integer((json_int_t)pat->period_ns));
		json_object_set_new(o, "period_spread_ns",
				    json_integer((json_int_t)pat->spread_ns));
	}
	json_object_set_new(o, "source", json_string(source_names[e->source]));
	json_object_set_new(o, "pinned", json_boolean(e->nr_pins > 0));
	if (e->unpinned)
		json_object_set_new(o, "unpinned_windows", json_integer((json_int_t)e->unpinned));
	if (e->reason[0])
		json_object_set_new(o, "reason", json_string(e->reason));
	if (e->source == SRC_ALERTMANAGER) {
		set_time(o, "alert_starts", e->alert_starts_unix_ns);
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
	if (full && ex) {
		json_object_set(o, "evidence", json_object_get(ex, "evidence"));
		json_object_set(o, "requests", json_object_get(ex, "requests"));
	}
	json_decref(ex);
	return o;
}

static char *dump(json_t *root)
{
	char *str = root ? json_dumps(root, JSON_COMPACT) : NULL;

	json_decref(root);
	return str;
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
	return dump(root);
}

static struct episode *find(const struct spikes *s, const char *id)
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
		out = dump(episode_json(s, ring, s->eps[i], &pat[i], true));
		free(pat);
		return out;
	}
	return NULL;
}

int spikes__windows(struct spikes *s, struct window_ring *ring, const char *id, bool baseline,
		    struct window **out, size_t max, size_t *n)
{
	struct episode *e = find(s, id);

	*n = 0;
	if (!e)
		return -ENOENT;
	*n = baseline ? baseline_windows(s, e, ring, out, max) : spike_windows(e, ring, out, max);
	return 0;
}

int spikes__resolve(struct spikes *s, const char *name, const char *stage, char *id)
{
	if (strcmp(name, "latest")) {
		if (!find(s, name))
			return -ENOENT;
		snprintf(id, SPIKE_ID_LEN, "%s", name);
		return 0;
	}
	for (size_t i = s->nr_eps; i-- > 0;) {
		if (stage && strcmp(stage, s->eps[i]->stage_name))
			continue;
		snprintf(id, SPIKE_ID_LEN, "%s", s->eps[i]->id);
		return 0;
	}
	return -ENOENT;
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
				    name, source_names[src], tot[src]);
	}
	text_metric(&t, "tailprof_spike_pinned_windows", "gauge",
		    "Windows pinned by spikes (pin_budget bounds them).");
	text_put(&t, "tailprof_spike_pinned_windows %u\n", s->total_pins);
	text_metric(&t, "tailprof_spike_pins_released_total", "counter",
		    "Pins released early to keep within pin_budget, oldest first.");
	text_put(&t, "tailprof_spike_pins_released_total %" PRIu64 "\n", s->pins_released);
	text_metric(&t, "tailprof_spike_windows_unpinned_total", "counter",
		    "Windows of long-open marks and alerts counted but not pinned (their cap).");
	text_put(&t, "tailprof_spike_windows_unpinned_total %" PRIu64 "\n",
		 s->alerts_counted_windows);
	text_metric(&t, "tailprof_spikes_dropped_total", "counter",
		    "Episodes dropped from memory, the oldest first, past the episodes held.");
	text_put(&t, "tailprof_spikes_dropped_total %" PRIu64 "\n", s->episodes_dropped);
	pthread_mutex_lock(&s->mu);
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
