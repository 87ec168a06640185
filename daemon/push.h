/* SPDX-License-Identifier: GPL-2.0-only */
/* Push to a central profile store: each closed window's CPU and off-CPU profiles are POSTed to a
 * Pyroscope-compatible ingest endpoint (URL/ingest?name=APP.cpu{host=HOST,...}&from=&until=
 * &format=pprof, the gzip pprof as the body) by a thread of their own, through a bounded queue
 * with exponential back-off. At stop the queue is flushed for at most 2 s and what is left is
 * written to the state directory, to be sent after the restart (docs/push.md). */
#ifndef TAILPROF_PUSH_H
#define TAILPROF_PUSH_H

#include <stddef.h>
#include <stdint.h>

struct query_ctx;

#define PUSH_MAX_NAMES 32 /* keep_labels, drop_labels: names at most */

/* [push] and --push-url, as given (strings owned). */
struct push_opts {
	char *url;		/* NULL: no push */
	char *app;		/* default "tailprof" */
	char *token_file;	/* a bearer token's file; NULL: none */
	uint32_t queue_windows; /* windows queued at most (two profiles each), default 60 */
	char *labels;		/* "k=v,k=v" added to every series name; NULL: none */
	char *keep_labels;	/* "a,b": the sample labels kept (the others dropped); NULL: all */
	char *drop_labels;	/* "a,b": the sample labels dropped; NULL: none */
};

/* Sets key of [push] (url, app, token_file, queue_windows, labels, keep_labels, drop_labels)
 * from a flag's or the config's value. Returns 0, or -EINVAL with msg saying what is allowed. */
int push_opts__set(struct push_opts *o, const char *key, const char *value, char *msg, size_t len);
/* Checks the options together (keep_labels and drop_labels exclude each other; keys without a
 * url). Returns 0, or -EINVAL with msg. */
int push_opts__check(const struct push_opts *o, char *msg, size_t len);
void push_opts__free(struct push_opts *o);

struct push;

/* Starts pushing the windows that close from now on (and what a previous run left in
 * state_dir/push; state_dir may be NULL) with ctx's encoder. The
 * token file is read here. Returns the pusher, or NULL with err (errlen bytes) set. */
struct push *push__start(const struct push_opts *o, const struct query_ctx *ctx,
			 const char *state_dir, char *err, size_t errlen);
/* The drain has stopped: queues the windows that closed, sends for at most 2 s, writes what is
 * left to the state directory (else counts it dropped), stops the thread and frees p. Takes the
 * collector's read lock. NULL allowed. */
void push__stop(struct push *p);

/* Prometheus text of the tailprof_push_* metrics (malloc'd; NULL on ENOMEM). Any thread. */
char *push__metrics_text(struct push *p);
/* The queue against its cap (resource_limits.h): profiles queued now, the cap, and those dropped
 * since start because it was full (the oldest go). Any thread. */
void push__queue_counts(struct push *p, uint64_t *queued, uint64_t *cap, uint64_t *dropped);

#endif
