// SPDX-License-Identifier: GPL-2.0-only
/* Spikes and the state directory: each closed spike is written there (its JSON with evidence and
 * requests, and its profiles: cpu, offcpu and wall, of the spike windows and of the baseline, of
 * every process and of its stage's samples), and what is there is read back at start-up. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "collector.h"
#include "log.h"
#include "query.h"
#include "spike_store.h"
#include "spikes_internal.h"
#include "stages.h"
#include "sysinfo.h"
#include "timeparse.h"
#include "window.h"

#define MAX_PROFILE_WINDOWS 128
#define SAVES_PER_DRAIN	    4 /* spikes written per drain at most: a burst waits its turn */
/* the waits between tries of a disk that refused a write: doubling from MIN to MAX */
#define SAVE_RETRY_MIN_NS (2 * NSEC_PER_SEC)
#define SAVE_RETRY_MAX_NS (30 * NSEC_PER_SEC)

static const char *const type_names[] = {"cpu", "offcpu", "wall"};

void spikes__blob_name(const char *type, bool stage, bool baseline, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s", type, stage ? ".stage" : "", baseline ? ".baseline" : "");
}

/* Reads one stored spike back as a held episode (closed, no windows). */
static int load_one(void *arg, const char *id, int64_t start_unix_ns, const char *json)
{
	struct spikes *s = arg;
	int64_t offset = sysinfo__wall_offset_ns();
	json_t *o = json_loads(json, 0, NULL);
	const char *kind, *source, *stage;
	struct episode *e;
	int src = SRC_DETECTED;

	if (!o || !json_is_object(o)) {
		pr_warn("state directory: spike %s: its JSON does not parse; skipped", id);
		json_decref(o);
		return 0;
	}
	source = json_string_value(json_object_get(o, "source"));
	for (int i = 0; source && i < SRC_NR; i++)
		if (!strcmp(source, spikes_source_names[i]))
			src = i;
	e = spikes_episode_new(s, NULL, 0, src, spikes_to_mono(start_unix_ns, offset), 1);
	if (!e) {
		json_decref(o);
		return 0;
	}
	/* spikes_episode_new counted it: it was counted when it began, before the restart */
	if (src < SRC_NR)
		s->totals_nostage[src]--;
	snprintf(e->id, sizeof(e->id), "%s", id);
	stage = json_string_value(json_object_get(o, "stage"));
	snprintf(e->stage_name, sizeof(e->stage_name), "%s", stage ? stage : "");
	kind = json_string_value(json_object_get(o, "kind"));
	e->kind = kind && !strcmp(kind, "level_shift") ? KIND_LEVEL_SHIFT : KIND_SPIKE;
	e->open = false;
	e->wall_offset_ns = offset;
	e->end_ns = spikes_to_mono(json_integer_value(json_object_get(o, "end_unix_ns")), offset);
	e->nr_windows = (uint32_t)json_integer_value(json_object_get(o, "windows"));
	e->stored = o;
	s->loaded++;
	return 0;
}

int spikes__attach_store(struct spikes *s, struct spike_store *store, const struct query_ctx *ctx)
{
	s->store = store;
	s->ctx = ctx;
	return spike_store__each(store, load_one, s);
}

/* The profile of e's windows (baseline: its baseline windows) of type, of every process or of its
 * stage's samples, into *out. Takes the read lock. 0, -ENOENT (no windows), or -errno. */
static int encode(struct spikes *s, const char *id, bool baseline, enum profile_type type,
		  bool stage, uint8_t **out, size_t *len)
{
	struct window_ring *ring = collector__ring(s->ctx->collector);
	struct window *ws[MAX_PROFILE_WINDOWS];
	struct profile_filter f = {.type = type};
	struct profile_summary sum;
	struct episode *e;
	size_t n = 0;
	int rc = -ENOENT;

	collector__rdlock(s->ctx->collector);
	e = spikes_find(s, id);
	if (e && (!stage || e->stage)) {
		n = baseline ? spikes_baseline_windows(s, e, ring, ws, MAX_PROFILE_WINDOWS)
			     : spikes_spike_windows(e, ring, ws, MAX_PROFILE_WINDOWS);
		f.has_stage = stage;
		f.stage_mask = stage ? 1ULL << e->stage : 0;
	}
	if (n)
		rc = query__cpu_profile(s->ctx, ws, n, &f, NULL, out, len, &sum);
	collector__unlock(s->ctx->collector);
	return rc;
}

/* Whether a failed save (rc) may go through later: the disk's refusals (full, read-only, I/O
 * errors, permissions) may; the store's own refusals (a bad id, a file it keeps, a spike past
 * its bounds) will not. */
static bool retryable(int rc)
{
	return rc && rc != -EINVAL && rc != -EFBIG && rc != -EEXIST && rc != -E2BIG &&
	       rc != -EMLINK && rc != -ENAMETOOLONG;
}

/* Writes spike id: its JSON, then up to 12 profiles, each encoded under the read lock on its own
 * so that the drain waits for one encoding at most. Returns 0 (also for a spike no longer held)
 * or the store's -errno. */
static int save_one(struct spikes *s, const char *id)
{
	struct spike_blob blobs[12];
	char names[12][32], *json = NULL;
	size_t n = 0;
	int64_t start = 0;
	json_t *o = NULL;
	struct episode *e;
	int rc;

	collector__rdlock(s->ctx->collector);
	e = spikes_find(s, id);
	if (e) {
		o = spikes_episode_json(s, collector__ring(s->ctx->collector), e, true);
		start = (int64_t)e->start_ns + e->wall_offset_ns;
	}
	collector__unlock(s->ctx->collector);
	if (!o)
		return 0;
	if (json_is_true(json_object_get(o, "open"))) {
		/* written at shutdown while it went on: after the restart it is over */
		json_object_set_new(o, "open", json_false());
		json_object_set_new(o, "cut_short", json_true());
	}
	json = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	for (int t = 0; t < 3 && json; t++)
		for (int stage = 0; stage < 2; stage++)
			for (int base = 0; base < 2; base++) {
				uint8_t *buf = NULL;
				size_t len = 0;

				if (encode(s, id, base, (enum profile_type)t, stage, &buf, &len))
					continue;
				spikes__blob_name(type_names[t], stage, base, names[n],
						  sizeof(names[n]));
				blobs[n] = (struct spike_blob){names[n], buf, len};
				n++;
			}
	rc = json ? spike_store__save(s->store, id, start, json, blobs, n) : -ENOMEM;
	/* the store reported a failed write itself (once); the rest (-EINVAL, -EFBIG, -EEXIST,
	 * -ENOMEM) it does not */
	if (rc) {
		s->saves_failed++;
		if (rc == -EINVAL || rc == -EFBIG || rc == -EEXIST || rc == -ENOMEM)
			pr_warn("state directory: spike %s not written: %s", id, strerror(-rc));
	}
	for (size_t i = 0; i < n; i++)
		free((void *)blobs[i].data);
	free(json);
	return rc;
}

/* Marks ids[0..n) to be saved again (those still held). */
static void requeue(struct spikes *s, char (*ids)[SPIKE_ID_LEN], size_t n)
{
	collector__rdlock(s->ctx->collector);
	for (size_t i = 0; i < n; i++) {
		struct episode *e = spikes_find(s, ids[i]);

		if (e)
			e->to_save = true;
	}
	collector__unlock(s->ctx->collector);
}

/* Saves up to SAVES_PER_DRAIN pending spikes, oldest first. At a refusal the disk may lift
 * (full, read-only) the rest wait: the next try comes after the backoff. Returns the number
 * saved, or -errno of the refusal. */
static int save_some(struct spikes *s, uint64_t now_ns)
{
	char ids[SAVES_PER_DRAIN][SPIKE_ID_LEN];
	size_t n = 0;
	int saved = 0;

	/* the drain thread (here) is the only one that writes episodes and to_save; readers never
	 * look at to_save, so clearing it under the read lock races with nobody */
	collector__rdlock(s->ctx->collector);
	for (size_t i = 0; i < s->nr_eps && n < SAVES_PER_DRAIN; i++)
		if (s->eps[i]->to_save) {
			snprintf(ids[n++], SPIKE_ID_LEN, "%s", s->eps[i]->id);
			s->eps[i]->to_save = false;
		}
	collector__unlock(s->ctx->collector);
	for (size_t i = 0; i < n; i++) {
		int rc = save_one(s, ids[i]);

		if (retryable(rc)) {
			requeue(s, ids + i, n - i);
			if (!s->save_backoff_ns)
				pr_warn(
				    "state directory: %s; spikes not written stay in memory and "
				    "are written when it works again (tried every %llu s at most)",
				    strerror(-rc), SAVE_RETRY_MAX_NS / NSEC_PER_SEC);
			s->save_backoff_ns =
			    s->save_backoff_ns ? s->save_backoff_ns * 2 : SAVE_RETRY_MIN_NS;
			if (s->save_backoff_ns > SAVE_RETRY_MAX_NS)
				s->save_backoff_ns = SAVE_RETRY_MAX_NS;
			s->save_retry_at_ns = now_ns + s->save_backoff_ns;
			s->save_err = rc;
			return rc;
		}
		if (!rc) {
			saved++;
			s->save_backoff_ns = 0;
			s->save_retry_at_ns = 0;
			s->save_err = 0;
		}
	}
	return saved;
}

void spikes__save_pending(struct spikes *s)
{
	uint64_t now = sysinfo__mono_ns();

	if (!s->store || now < s->save_retry_at_ns)
		return;
	save_some(s, now);
}

size_t spikes__saves_pending(struct spikes *s)
{
	size_t n = 0;

	for (size_t i = 0; i < s->nr_eps; i++)
		n += s->eps[i]->to_save;
	return n;
}

int spikes__stored_profile(struct spikes *s, const char *id, const char *type, bool stage,
			   bool baseline, uint8_t **out, size_t *len)
{
	char name[32];

	if (!s->store)
		return -ENOENT;
	spikes__blob_name(type, stage, baseline, name, sizeof(name));
	return spike_store__read_blob(s->store, id, name, out, len);
}

void spikes__save_all(struct spikes *s)
{
	bool more = true;

	if (!s || !s->store)
		return;
	/* the drain has stopped: nothing changes the episodes meanwhile */
	for (size_t i = 0; i < s->nr_eps; i++)
		if (s->eps[i]->open && !s->eps[i]->stored)
			s->eps[i]->to_save = true;
	/* one more try of a disk that refused writes, then no waiting: the daemon is stopping */
	while (more) {
		int rc = save_some(s, sysinfo__mono_ns());

		more = rc >= 0 && spikes__saves_pending(s);
		if (rc < 0)
			pr_warn("state directory: %zu spikes not written at exit: %s",
				spikes__saves_pending(s), strerror(-rc));
	}
}
