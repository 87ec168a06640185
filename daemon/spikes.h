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

struct collector;
struct query_ctx;
struct stages;
struct window;
struct window_ring;

#define SPIKES_MAX_HELD	      256 /* episodes held in memory; the oldest closed ones go first */
#define SPIKE_ID_LEN	      65  /* 1-64 characters of [A-Za-z0-9._-], NUL included */
#define SPIKE_REASON_LEN      256
#define SPIKE_FINGERPRINT_LEN 65
#define SPIKES_MIN_BASELINE   5	   /* ordinary windows before the k rule judges */
#define SPIKES_MAX_BASELINE   1000 /* baseline_windows at most */

struct spikes_opts {
	double k;		   /* a spike: p95 > k x the baseline median; > 1 */
	uint32_t baseline_windows; /* ordinary windows the baseline median takes, 10..1000 */
	uint32_t min_requests;	   /* windows with fewer requests of the stage are not judged */
	uint64_t min_rise_ns;	   /* and p95 - baseline >= this */
	uint32_t pin_budget;	   /* windows pinned at most; the oldest pins go first */
	const char *state_dir;	   /* NULL: spikes are not written to disk */
	uint32_t write_rate;	   /* write requests (marks, alerts) a minute */
	uint32_t alert_lookback;   /* windows before an alert's startsAt that it marks */
};

/* The defaults: k 2, baseline_windows 30, min_requests 20, min_rise 0, pin_budget 64, no state
 * directory, write_rate 60, alert_lookback 2. */
#define SPIKES_OPTS_DEFAULT                                                                        \
	((struct spikes_opts){.k = 2.0,                                                            \
			      .baseline_windows = 30,                                              \
			      .min_requests = 20,                                                  \
			      .pin_budget = 64,                                                    \
			      .write_rate = 60,                                                    \
			      .alert_lookback = 2})

/* Sets the option named key ([spikes] key: k, baseline_windows, min_requests, min_rise,
 * pin_budget, state_dir, write_rate) from its text. Returns 0, or -EINVAL with msg (msglen
 * bytes) saying what is allowed ("give a number above 1, e.g. 2 or 2.5"); -ENOENT for an unknown
 * key. The value is referenced, not copied, for state_dir. */
int spikes_opts__set(struct spikes_opts *o, const char *key, const char *value, char *msg,
		     size_t msglen);

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

/* Returns the detector over the ring of windows of window_ns each (neither owned), or NULL with
 * errno set (ENOMEM; EINVAL for options out of range). */
struct spikes *spikes__new(const struct spikes_opts *o, struct stages *stages, uint64_t window_ns);
/* Releases every pin and frees s. ring: the ring the pins are in (NULL: it is already freed).
 * NULL s allowed. */
void spikes__free(struct spikes *s, struct window_ring *ring);
const struct spikes_opts *spikes__opts(const struct spikes *s);

/* Window w of ring was just closed (its stage histograms compacted): judges each stage's p95
 * there, opens, extends and closes episodes, applies queued marks and alerts, and pins and
 * unpins windows. Costs O(stages x baseline_windows) and allocates nothing that grows with
 * history. Under the collector's write lock. */
void spikes__window_closed(struct spikes *s, struct window_ring *ring, struct window *w);

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

/* Which spikes a listing takes: of one stage (NULL: all), and overlapping [from, to] (Unix ns). */
struct spike_filter {
	const char *stage;
	int64_t from_unix_ns, to_unix_ns;
};

/* JSON (malloc'd, NUL-terminated; NULL on ENOMEM) under the collector's read lock:
 * GET /api/v1/spikes: {"spikes": [...]} oldest first (docs/api.md gives the keys);
 * GET /api/v1/spikes/ID: that spike with "evidence" and "requests", or NULL with *found false. */
char *spikes__list_json(struct spikes *s, struct window_ring *ring, const struct spike_filter *f);
char *spikes__get_json(struct spikes *s, struct window_ring *ring, const char *id, bool *found);

/* The windows of spike id (baseline: its baseline windows instead), oldest first, into
 * out[0..max); *n their number. Returns 0, -ENOENT (no such spike) or -ESTALE (a spike read
 * back from the state directory: its windows are gone; spikes__stored_profile has its profiles).
 * Under the collector's read lock. */
int spikes__windows(struct spikes *s, struct window_ring *ring, const char *id, bool baseline,
		    struct window **out, size_t max, size_t *n);
/* Whether id is the newest spike ("latest"): resolves "latest" (of stage, NULL: any) into id
 * (SPIKE_ID_LEN bytes). Returns 0 or -ENOENT. */
int spikes__resolve(struct spikes *s, const char *name, const char *stage, char *id);

struct spike_store;
struct query_ctx;

/* Writes each spike that closes from now on to store (spikes_saver.c: its JSON with evidence and
 * requests, and its profiles), and reads back the spikes store holds as closed episodes without
 * windows (listed with "stored": true; their profiles through spikes__stored_profile). ctx: how
 * profiles are encoded (query.h). Neither is owned. Call once, before the drain runs. Returns 0
 * or -ENOMEM. */
int spikes__attach_store(struct spikes *s, struct spike_store *store, const struct query_ctx *ctx);
/* Writes the spikes closed since the last call (a few a call; the rest wait for the next). The
 * drain thread calls it, holding no lock: it takes the read lock per profile. */
void spikes__save_pending(struct spikes *s);
/* At shutdown, once the drain stopped: writes every spike not written yet, those going on
 * included (stored as over, with "cut_short": true). */
void spikes__save_all(struct spikes *s);
/* Closed spikes not yet written to the state directory (waiting their turn, or for a disk that
 * refused a write). The drain thread's count: others read it without a lock, as a gauge. */
size_t spikes__saves_pending(struct spikes *s);
/* Whether a held spike has stage name (a stage no longer configured, or a mark's or alert's). */
bool spikes__stage_held(struct spikes *s, const char *name);
/* The blob name of a stored profile: TYPE[.stage][.baseline], e.g. "cpu.stage.baseline". */
void spikes__blob_name(const char *type, bool stage, bool baseline, char *buf, size_t len);
/* A stored spike's profile (type "cpu", "offcpu" or "wall"; stage: its stage's samples only;
 * baseline: its baseline's) into *out (malloc'd), *len bytes. Returns 0, -ENOENT (no state
 * directory, no such spike or profile), -EBADMSG (corrupt: reported), or another -errno. */
int spikes__stored_profile(struct spikes *s, const char *id, const char *type, bool stage,
			   bool baseline, uint8_t **out, size_t *len);

/* The stage name of spike id ("" for a mark of no stage), or NULL when no such spike is held.
 * Under the collector's read lock; valid while it is held. */
const char *spikes__stage(struct spikes *s, const char *id);

/* Whether the window that starts at start_ns (CLOCK_MONOTONIC) is one of a held spike's windows
 * (the push's spike=ID label): its id into id (SPIKE_ID_LEN bytes). Under the collector's read
 * lock. */
bool spikes__window_spike(struct spikes *s, uint64_t start_ns, char *id);

/* The "spikes" object of the status: the settings in force (k, baseline_windows, min_requests,
 * min_rise_ns, pin_budget, state_dir, write_rate) and what is held (spikes, open, pinned_windows).
 * A new json_t * reference, NULL on ENOMEM. Under the collector's read lock. */
void *spikes__status_json(struct spikes *s);
/* The pins against the budget (resource_limits.h): pinned now, pin_budget, and since start the pins
 * released for the budget (oldest first) and the windows an episode could not pin (its own
 * cap). Under the collector's read lock, like spikes__status_json. */
void spikes__pin_counts(struct spikes *s, uint64_t *pinned, uint64_t *budget, uint64_t *released,
			uint64_t *unpinned);

/* Prometheus text of the spike metrics (malloc'd; NULL on ENOMEM), under the read lock. */
char *spikes__metrics_text(struct spikes *s, struct window_ring *ring);

#endif
