/* SPDX-License-Identifier: GPL-2.0-only */
/* Spikes: per stage and closed window, whether its p95 spiked (an absolute threshold, or k times
 * the median p95 of the stage's recent ordinary windows); consecutive spike windows as one
 * episode (a spike, or a level shift when it lasts); external marks and Alertmanager alerts as
 * episodes too; the pins that keep their windows past the ring; the evidence that explains
 * them; and the JSON and Prometheus views. docs/spikes.md gives the rules and their reasons.
 *
 * Memory is bounded: per stage a ring of baseline_windows p95 values, at most SPIKES_MAX_HELD
 * episodes, at most pin_budget pinned windows. Not thread-safe: callers hold the collector's
 * lock (the drain thread writes, queries read); spikes__mark and spikes__alerts only queue, under
 * the module's own mutex, and may be called from any thread. */
#ifndef TAILPROF_SPIKES_H
#define TAILPROF_SPIKES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tailprof.h"

struct stages;
struct window;
struct window_ring;

#define SPIKES_MAX_HELD	      256 /* episodes held in memory; the oldest unpinned go first */
#define SPIKE_ID_LEN	      65  /* 1-64 characters of [A-Za-z0-9._-], NUL included */
#define SPIKE_REASON_LEN      256
#define SPIKE_FINGERPRINT_LEN 65

struct spikes_opts {
	double k;		   /* a spike: p95 > k x the baseline median; > 1 */
	uint32_t baseline_windows; /* ordinary windows the baseline median takes, >= 5 */
	uint32_t min_requests;	   /* windows with fewer requests of the stage are not judged */
	uint64_t min_rise_ns;	   /* and p95 - baseline >= this */
	uint32_t pin_budget;	   /* windows pinned at most; the oldest pins go first */
	const char *state_dir;	   /* NULL: spikes are not written to disk */
	uint32_t alert_lookback;   /* windows before an alert's startsAt that it marks (2) */
	uint64_t window_ns;	   /* the ring's window length */
};

/* POST /api/v1/marks: mark the windows around time as a spike. */
struct spike_mark {
	int64_t time_unix_ns;
	char reason[SPIKE_REASON_LEN]; /* "" when none given */
	char stage[TP_STAGE_NAME_LEN]; /* "" when none given: a mark of no stage */
	bool has_before, has_after;    /* without them: one window each side */
	uint64_t before_ns, after_ns;
};

/* One alert of an Alertmanager webhook (payload version 4). */
struct spike_alert {
	bool firing;		/* status "firing" (else "resolved") */
	int64_t starts_unix_ns; /* startsAt */
	int64_t ends_unix_ns;	/* endsAt; 0: the zero time (a firing alert) */
	char fingerprint[SPIKE_FINGERPRINT_LEN];
	char group_key[SPIKE_REASON_LEN]; /* the payload's groupKey (cut to fit) */
	char stage[TP_STAGE_NAME_LEN];	  /* labels.stage, else labels.service; "" when neither */
	char reason[SPIKE_REASON_LEN];	  /* labels.alertname, and annotations.summary if any */
};

struct spikes;

/* Queues a mark, applied at the next window close (or when its windows close); id (SPIKE_ID_LEN
 * bytes) receives the id its episode will have. Any thread. Returns 0, -EINVAL (err, errlen:
 * what is wrong and what is allowed, e.g. a stage that is not known), or -EAGAIN (the queue is
 * full: try later). */
int spikes__mark(struct spikes *s, const struct spike_mark *m, char *id, char *err, size_t errlen);
/* Queues the alerts of one webhook delivery a[0..n), applied at the next drain: a firing alert
 * opens (or keeps) its episode, a resolved one closes it at ends_unix_ns; a delivery seen before
 * (same group key, fingerprint and startsAt) changes nothing. Any thread. Returns 0 or -EAGAIN
 * (the queue is full: answer 503 so that Alertmanager retries). */
int spikes__alerts(struct spikes *s, const struct spike_alert *a, size_t n);

#endif
