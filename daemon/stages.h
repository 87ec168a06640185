/* SPDX-License-Identifier: GPL-2.0-only */
/* Stages: the registry of stages (configured ones and those applications name), their probes,
 * and what each window keeps of them (a latency histogram and the slowest spans per stage),
 * with the JSON and Prometheus views.
 *
 * Stage ids are never reused while the daemon runs: a stage removed by a reload keeps its id
 * and its name, so windows that hold its data still name it; configured again, it gets the same
 * id back. Memory per window: a pointer table, plus per active stage its histogram (dense, 5 KB,
 * while the window is open; sparse, 8 bytes per used bucket, once it is closed) and at most
 * STAGE_SPANS_KEPT spans.
 *
 * Not thread-safe: the collector's lock serializes the drain thread (writer) and queries. */
#ifndef TAILPROF_STAGES_H
#define TAILPROF_STAGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tailprof.h"

struct config;
struct probes;
struct window;

#define STAGE_SPANS_KEPT 10 /* slowest spans kept per window and stage */

struct hist_cell {
	uint32_t bucket;
	uint32_t count;
};

/* One stage in one window. */
struct stage_stats {
	uint64_t count, sum_ns, max_ns;
	uint32_t *dense;	 /* TP_HIST_BUCKETS counts while the window is open, else NULL */
	struct hist_cell *cells; /* the used buckets once the window is closed */
	uint32_t nr_cells;
	uint32_t nr_spans;
	struct tp_span spans[STAGE_SPANS_KEPT]; /* the slowest, unordered */
};

/* What a window keeps of stages: by stage id, NULL for stages without data there. */
struct stage_window {
	struct stage_stats *by_id[TP_MAX_STAGES];
};

/* The q-th per-mille latency of st (histogram__percentile's rule), dense or compacted; 0 when
 * st is NULL or empty. */
uint64_t stage_stats__percentile(const struct stage_stats *st, uint32_t q_permille);

/* Adds st's histogram (dense or compacted) to acc[TP_HIST_BUCKETS]. */
void stage_stats__accumulate(const struct stage_stats *st, uint64_t *acc);

/* Frees a window's stage data. NULL allowed. */
void stage_window__free(struct stage_window *sw);

/* Returns an empty registry over probes (not owned), or NULL with errno set. */
struct stages *stages__new(struct probes *probes);
/* Detaches every probe. NULL allowed. */
void stages__free(struct stages *s);

/* Makes the configured stages and applications those of cfg (NULL: none): keeps those that did
 * not change, detaches those removed (their data stays in the windows), attaches new ones. An
 * attach failure is logged and shown in the status; it does not stop the others. Returns the
 * number of stages and applications that failed to attach. */
int stages__apply_config(struct stages *s, const struct config *cfg);
/* Learns the stage names applications gave since the last call (BPF name table). */
void stages__sync_names(struct stages *s);

/* The name of stage id, or NULL when no stage has that id. */
const char *stages__name(const struct stages *s, uint32_t id);
/* The configured absolute p95 limit of stage id ([stage] threshold), 0: none. */
uint64_t stages__threshold_ns(const struct stages *s, uint32_t id);
/* The id of the stage named name, 0 when none. */
uint32_t stages__id(const struct stages *s, const char *name);
/* Bit i set for every stage id i named name (0: no such stage). */
uint64_t stages__mask(const struct stages *s, const char *name);
/* Comma-separated known stage names into buf (for error messages). */
const char *stages__names_list(const struct stages *s, char *buf, size_t len);

/* Takes the BPF histograms of drain period `period` (its slot) into window w (NULL: too old,
 * only the totals count them), with atomic exchanges. */
void stages__take_period(struct stages *s, uint64_t period, struct window *w);
/* Keeps a slow span in w if it is among its stage's STAGE_SPANS_KEPT slowest there. */
void stages__add_span(struct stages *s, const struct tp_span *span, struct window *w);
/* Slow spans of stage id that a window could not keep since start (past STAGE_SPANS_KEPT, the
 * fastest goes: the one that came or one kept); 0 for an id out of range. The metric
 * tailprof_stage_slow_spans_not_kept_total. */
uint64_t stages__spans_not_kept(const struct stages *s, uint32_t id);
/* w was just closed: compacts its histograms and makes its p95 of each stage the stage's
 * slow-span threshold for the next window (stages with no data there keep theirs). */
void stages__window_closed(struct stages *s, struct window *w);

/* ---- slow spans one by one (stage_spans.c) ---- */

/* A span's id, unique within the daemon: "<tid>-<start ns>" (CLOCK_MONOTONIC start; 1-64
 * characters of [0-9-]). buf: SPAN_ID_LEN bytes is enough. */
#define SPAN_ID_LEN 48
void stages__span_id(const struct tp_span *sp, char *buf, size_t len);
/* Whether id has the form stages__span_id() gives (1-64 characters of [A-Za-z0-9._-] and that
 * form); false for NULL. */
bool stages__span_id_valid(const char *id);
/* The span of id kept in windows ws[0..n) (their stage data), or NULL (errno EINVAL: not an id;
 * ENOENT: no such span there). *where (may be NULL) receives the window that keeps it. The
 * span lives as long as its window. */
const struct tp_span *stages__find_span(struct window *const *ws, size_t n, const char *id,
					struct window **where);

/* Where a span's time went (ns): cpu + runq + offcpu == duration. exact: from the thread's own
 * scheduler accounting (tp_span.accounting TP_ACCT_EXACT: sum_exec_runtime and
 * sched_info.run_delay, bpf/stage.bpf.c); else estimated ("sampled"): cpu_ns is the thread's CPU
 * samples within the span times the sampling period, offcpu_ns its captured blocks clipped to the
 * span, runq_ns the rest (so it also holds blocks shorter than the off-CPU threshold), each
 * clamped so that the three sum to the duration. */
struct span_accounting {
	uint64_t cpu_ns, runq_ns, offcpu_ns;
	bool exact;
};
/* The accounting of span sp. An estimate takes the per-sample records (window.h) that windows
 * ws[0..n) still hold (the windows of the span's time: the ring's current and previous ones and
 * pinned ones keep theirs; window_ring__with_records lists them); a span whose window closed
 * carries the estimate made then (TP_ACCT_SAMPLED) and needs none (ws may be NULL, n 0). The
 * spike module calls it for the spans of a window (stage_stats.spans). */
void stages__span_accounting(const struct tp_span *sp, struct window *const *ws, size_t n,
			     struct span_accounting *out);
/* w just closed (the tick after its end: every sample of its spans was drained): its spans
 * without exact accounting get their estimate from the records of ws[0..n) and keep it
 * (TP_ACCT_SAMPLED), before those records are freed. */
void stages__settle_spans(struct window *w, struct window *const *ws, size_t n);

/* JSON (malloc'd, NUL-terminated; NULL on ENOMEM): GET /api/v1/stages over windows[0..n) (see
 * docs/api.md for the keys), GET /api/v1/spans (mask: stages to list, ~0 for all; a span not
 * settled yet is estimated from the records of windows[0..n)), and the "stages" array of the
 * status. */
char *stages__stages_json(struct stages *s, struct window *const *windows, size_t n);
char *stages__spans_json(struct stages *s, struct window *const *windows, size_t n, uint64_t mask);
void *stages__status_json(struct stages *s); /* a json_t * array, new reference */
/* Prometheus text of the stage metrics (malloc'd; NULL on ENOMEM). */
char *stages__metrics_text(struct stages *s);

#endif
