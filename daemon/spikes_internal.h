/* SPDX-License-Identifier: GPL-2.0-only */
/* What the spike module's files share (spikes.c: detection, episodes, marks and alerts;
 * spikes_json.c: patterns, JSON, metrics; spikes_saver.c: the state directory). Not a contract
 * for other modules: spikes.h is. */
#ifndef TAILPROF_SPIKES_INTERNAL_H
#define TAILPROF_SPIKES_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "spikes.h"

struct query_ctx;
struct spike_store;
struct window;
struct window_ring;

#define MARK_QUEUE	  64   /* marks waiting for the next window close */
#define ALERT_QUEUE	  1024 /* alerts waiting for the next window close: 4 deliveries */
#define ALERT_SEEN	  512  /* deliveries remembered, to drop repeats */
#define ALERT_EXTRA_PINS  10   /* an open alert pins at most lookback + this many windows */
#define MARK_MAX_SIDE	  32   /* a mark's before/after, in windows, at most */
#define MAX_OPEN_EXTERNAL 32   /* marks and alerts going on at once; more are dropped, counted */
#define SHIFT_PINNED	  2 /* a level shift keeps its first windows pinned, and the one before */

enum spike_kind { KIND_SPIKE, KIND_LEVEL_SHIFT };
enum spike_source { SRC_DETECTED, SRC_MARK, SRC_ALERTMANAGER, SRC_NR };
extern const char *const spikes_source_names[SRC_NR];

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
	json_t *stored;	   /* read back from the state directory: its whole JSON (no windows) */
	bool to_save;	   /* closed, not yet written to the state directory */
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
	uint64_t pins_released, episodes_dropped, windows_unpinned, last_closed_end_ns;
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
	uint64_t external_dropped; /* marks and alerts dropped: MAX_OPEN_EXTERNAL were going on */
	/* the state directory (spikes_saver.c): NULL when none */
	struct spike_store *store;
	const struct query_ctx *ctx;
	uint64_t saves_failed, loaded;
	/* a write the disk refused (full, read-only) is tried again, the spike kept in memory
	 * meanwhile: not before save_retry_at_ns (monotonic), after a wait that doubles from 2 s
	 * to 30 s while writes fail (save_backoff_ns, 0 while they go through) */
	uint64_t save_retry_at_ns, save_backoff_ns;
	int save_err; /* -errno of the last refused write while writes fail, else 0 */
};

/* The spike windows of e held in ring, oldest first, into out[0..max). */
size_t spikes_spike_windows(const struct episode *e, struct window_ring *ring, struct window **out,
			    size_t max);
/* e's baseline windows (docs/spikes.md), oldest first, into out[0..max). */
size_t spikes_baseline_windows(const struct spikes *s, const struct episode *e,
			       struct window_ring *ring, struct window **out, size_t max);
/* p95 (ns) and request count of e's stage over its spike windows merged. */
void spikes_merged_p95(const struct episode *e, struct window_ring *ring, uint64_t *p95,
		       uint64_t *count);
/* The causes, evidence and requests of e (spike_explain.h), a new reference or NULL. */
json_t *spikes_explain(struct spikes *s, struct window_ring *ring, const struct episode *e);
/* The JSON of e: the listing's keys, and with full its evidence and requests. A new reference or
 * NULL on ENOMEM. */
json_t *spikes_episode_json(struct spikes *s, struct window_ring *ring, const struct episode *e,
			    bool full);
/* Appends a new episode (the oldest closed one goes when SPIKES_MAX_HELD are held); NULL when
 * none can go or on ENOMEM. */
struct episode *spikes_episode_new(struct spikes *s, struct window_ring *ring, uint32_t stage,
				   enum spike_source src, uint64_t start_ns, uint32_t cap_pins);
/* The held episode of id, or NULL. */
struct episode *spikes_find(const struct spikes *s, const char *id);
/* realtime - monotonic to label e with, and its monotonic time of a Unix time. */
uint64_t spikes_to_mono(int64_t unix_ns, int64_t offset);

#endif
