// SPDX-License-Identifier: GPL-2.0-only
/* GET /api/v1/compare, and the snapshots: GET and POST /api/v1/snapshots, DELETE
 * /api/v1/snapshots/NAME (docs/compare.md). */
#include "http_compare.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cmp_side.h"
#include "collector.h"
#include "compare.h"
#include "compare_stats.h"
#include "http_util.h"
#include "query.h"
#include "snapshots.h"
#include "spike_file.h"
#include "spike_store.h"
#include "sysinfo.h"
#include "timeparse.h"
#include "window.h"

#define NO_STATE_DIR                                                                               \
	"no state directory: snapshots live in it; start tailprofd with --state-dir DIR (or "      \
	"[spikes] state_dir in its config)"

/* One comparison at a time, its sides built under it: each takes up to a second of CPU and
 * tens of MB, and the daemon is always on. */
static pthread_mutex_t compare_mu = PTHREAD_MUTEX_INITIALIZER, slots_mu = PTHREAD_MUTEX_INITIALIZER;

/* A side of the live ring: the closed windows whose whole span lies inside [from, to). Returns
 * 0 and *out, or -ENOMEM. */
static int range_side(const struct query_ctx *ctx, int64_t from, int64_t to, struct cmp_side **out)
{
	struct window_ring *ring;
	struct window **ws;
	size_t n = 0, count;
	int err;

	collector__rdlock(ctx->collector);
	ring = collector__ring(ctx->collector);
	count = window_ring__count(ring);
	ws = calloc(count + 1, sizeof(*ws));
	if (!ws) {
		collector__unlock(ctx->collector);
		return -ENOMEM;
	}
	for (size_t i = 0; i < count; i++) {
		struct window *w = window_ring__get(ring, i);
		int64_t start = (int64_t)w->start_ns + w->wall_offset_ns;
		int64_t end = (int64_t)w->end_ns + w->wall_offset_ns;

		if (w->closed && start >= from && end <= to)
			ws[n++] = w;
	}
	err = cmp_side__from_windows(ctx, ws, n, from, to, out);
	collector__unlock(ctx->collector);
	free(ws);
	return err;
}

/* Parses FROM and TO of one side (names for messages). Returns 0, or -1 with err written. */
static int parse_side_range(const struct params *p, const char *kfrom, const char *kto,
			    int64_t *from, int64_t *to, char *err, size_t len)
{
	const char *f = http_param(p, kfrom), *t = http_param(p, kto);

	if (!f || !t) {
		snprintf(err, len, "%s: give both %s= and %s= (RFC 3339 or Unix seconds)",
			 f ? kto : kfrom, kfrom, kto);
		return -1;
	}
	if (http_parse_time_param(kfrom, f, from, err, len) ||
	    http_parse_time_param(kto, t, to, err, len))
		return -1;
	if (*to <= *from) {
		snprintf(err, len, "%s: must be after %s", kto, kfrom);
		return -1;
	}
	return 0;
}

/* One side of a comparison from the query: a snapshot or a range. Returns 0 and *out, else an
 * HTTP status with err written. */
static unsigned int get_side(const struct query_ctx *ctx, const struct params *p, const char *which,
			     struct cmp_side **out, char *err, size_t len)
{
	char kfrom[32], kto[32], ksnap[32], v[ECHO_MAX * 4 + 8];
	const char *snap;
	int64_t from, to;
	int rc;

	snprintf(kfrom, sizeof(kfrom), "%s_from", which);
	snprintf(kto, sizeof(kto), "%s_to", which);
	snprintf(ksnap, sizeof(ksnap), "%s_snapshot", which);
	snap = http_param(p, ksnap);
	if (snap && (http_param(p, kfrom) || http_param(p, kto))) {
		snprintf(err, len, "%s: give either %s= or %s=/%s=, not both", ksnap, ksnap, kfrom,
			 kto);
		return 400;
	}
	if (snap) {
		if (!spike_file__valid_name(snap, SPIKE_STORE_ID_MAX)) {
			snprintf(err, len,
				 "%s: '%s' is not a snapshot name (1-64 of A-Z a-z 0-9 . _ -)",
				 ksnap, http_printable(snap, v, sizeof(v), ECHO_MAX));
			return 400;
		}
		if (!ctx->snapshots) {
			snprintf(err, len, "%s: %s", ksnap, NO_STATE_DIR);
			return 409;
		}
		rc = snapshots__load(ctx->snapshots, snap, out, err, len);
		return !rc ? 0 : rc == -ENOENT ? 404 : rc == -ENOMEM ? 500 : 422;
	}
	if (parse_side_range(p, kfrom, kto, &from, &to, err, len))
		return 400;
	if (range_side(ctx, from, to, out)) {
		snprintf(err, len, "out of memory");
		return 500;
	}
	return 0;
}

/* A number parameter within [lo, hi] (lo_open: (lo, hi]), decimal digits, a point and an
 * exponent only. Returns 0 (def when absent), or -1 with err written. */
static int parse_number(const struct params *p, const char *key, double lo, bool lo_open, double hi,
			double def, double *out, char *err, size_t len)
{
	const char *s = http_param(p, key);
	char v[ECHO_MAX * 4 + 8];

	*out = def;
	if (!s)
		return 0;
	if (tp_parse_decimal(s, out) || *out < lo || (lo_open && *out == lo) || *out > hi) {
		snprintf(err, len, "%s: '%s' is not a number in %s%g, %g]", key,
			 http_printable(s, v, sizeof(v), ECHO_MAX), lo_open ? "(" : "[", lo, hi);
		return -1;
	}
	return 0;
}

/* Comparisons waiting or running: beyond MAX_COMPARES a request is refused (503) rather than
 * holding its sides' memory while it waits. */
#define MAX_COMPARES 4
static unsigned int compares;

/* Takes a comparison slot (then the lock: one runs at a time). Returns false when all are
 * taken. */
static bool compare_enter(void)
{
	bool ok;

	pthread_mutex_lock(&slots_mu);
	ok = compares < MAX_COMPARES;
	compares += ok;
	pthread_mutex_unlock(&slots_mu);
	if (ok)
		pthread_mutex_lock(&compare_mu);
	return ok;
}

static void compare_leave(void)
{
	pthread_mutex_unlock(&compare_mu);
	pthread_mutex_lock(&slots_mu);
	compares--;
	pthread_mutex_unlock(&slots_mu);
}

static enum MHD_Result handle_compare(struct MHD_Connection *conn, const struct query_ctx *ctx)
{
	static const char *const allowed[] = {
	    "before_from",     "before_to",	 "after_from", "after_to",
	    "before_snapshot", "after_snapshot", "stage",      "min_effect",
	    "alpha",	       "seed",		 NULL};
	struct params p = {.allowed = allowed};
	struct cmp_side *side[2] = {NULL, NULL};
	struct compare_opts o = {0};
	char err[1024] = "", v[ECHO_MAX * 4 + 8];
	unsigned int status = 0;
	uint64_t seed = 1;
	json_t *report = NULL;
	char *body;

	if (http_get_params(conn, &p))
		return http_send_error(conn, 400, "%s", p.err);
	if (parse_number(&p, "min_effect", 0, false, 100, 100 * CMP_MIN_EFFECT, &o.min_effect, err,
			 sizeof(err)) ||
	    parse_number(&p, "alpha", 0, true, 0.5, CMP_ALPHA, &o.alpha, err, sizeof(err)))
		return http_send_error(conn, 400, "%s", err);
	if (http_param(&p, "seed") && tp_parse_uint(http_param(&p, "seed"), 0, INT64_MAX, &seed))
		return http_send_error(
		    conn, 400, "seed: '%s' is not an integer from 0 to %lld",
		    http_printable(http_param(&p, "seed"), v, sizeof(v), ECHO_MAX),
		    (long long)INT64_MAX);
	if (http_param(&p, "stage") && !*http_param(&p, "stage"))
		return http_send_error(conn, 400, "stage: give a stage name, or leave stage= out");
	o.min_effect /= 100;
	o.seed = seed;
	o.stage = http_param(&p, "stage");
	if (!compare_enter())
		return http_send_error_hdr(
		    conn, 503, (struct header){"Retry-After", "5"},
		    "%d comparisons are waiting or running, the most at once; "
		    "retry in a few seconds",
		    MAX_COMPARES);
	status = get_side(ctx, &p, "before", &side[0], err, sizeof(err));
	if (!status)
		status = get_side(ctx, &p, "after", &side[1], err, sizeof(err));
	for (int k = 0; !status && k < 2; k++) {
		if (!side[k]->nr_windows) {
			snprintf(err, sizeof(err),
				 "%s: the %s side holds no closed window; see tailprof windows for "
				 "what the daemon holds",
				 k ? "after" : "before", k ? "after" : "before");
			status = 422;
		}
	}
	if (!status) {
		report = compare__report(side[0], side[1], &o, err, sizeof(err));
		if (!report)
			status = errno == ENOENT ? 404 : 500;
	}
	compare_leave();
	cmp_side__free(side[0]);
	cmp_side__free(side[1]);
	if (status)
		return http_send_error(conn, status, "%s", err);
	body = json_dumps(report, JSON_COMPACT | JSON_REAL_PRECISION(10));
	json_decref(report);
	return http_send_json(conn, 200, body);
}

/* ---- snapshots ---- */

/* Queues o (taken over; NULL: out of memory) as JSON. */
static enum MHD_Result send_object(struct MHD_Connection *conn, unsigned int status, json_t *o)
{
	char *body = o ? json_dumps(o, JSON_COMPACT) : NULL;

	json_decref(o);
	return http_send_json(conn, status, body);
}

/* The listing's entry of snapshot name (a new reference), NULL when there is none or out of
 * memory. */
static json_t *listed(struct snapshots *s, const char *name)
{
	json_t *all = snapshots__list(s), *e, *found = NULL;
	size_t i;

	json_array_foreach(json_object_get(all, "snapshots"), i, e)
	{
		if (!strcmp(json_string_value(json_object_get(e, "name")) ?: "", name)) {
			found = json_incref(e);
			break;
		}
	}
	json_decref(all);
	return found;
}

static enum MHD_Result save_snapshot(struct MHD_Connection *conn, const struct query_ctx *ctx)
{
	static const char *const allowed[] = {"name", "last", "from", "to", "replace", NULL};
	struct params p = {.allowed = allowed};
	struct query_range r;
	struct cmp_side *side = NULL;
	char err[1024], v[ECHO_MAX * 4 + 8];
	const char *name, *replace;
	int64_t from, to, now = sysinfo__real_ns();
	json_t *old;
	uint32_t wait;
	int rc;

	if (http_get_params(conn, &p))
		return http_send_error(conn, 400, "%s", p.err);
	name = http_param(&p, "name");
	if (!name)
		return http_send_error(conn, 400, "name: give the snapshot a name (name=NAME)");
	if (!spike_file__valid_name(name, SPIKE_STORE_ID_MAX))
		return http_send_error(conn, 400,
				       "name: '%s' is not a snapshot name: 1-64 characters of A-Z "
				       "a-z 0-9 . _ -, not . or ..",
				       http_printable(name, v, sizeof(v), ECHO_MAX));
	if (!ctx->snapshots)
		return http_send_error(conn, 409, "%s", NO_STATE_DIR);
	if ((wait = snapshots__take_save(ctx->snapshots, sysinfo__mono_ns()))) {
		char after[16];

		snprintf(after, sizeof(after), "%u", wait);
		return http_send_error_hdr(
		    conn, 429, (struct header){"Retry-After", after},
		    "POST /api/v1/snapshots: too many saves; try again in %u "
		    "s (the limit is [snapshots] save_rate a minute)",
		    wait);
	}
	replace = http_param(&p, "replace");
	if (replace && strcmp(replace, "1") && strcmp(replace, "0"))
		return http_send_error(conn, 400, "replace: '%s' is not 1 or 0",
				       http_printable(replace, v, sizeof(v), ECHO_MAX));
	if (http_parse_range(&p, &r, err, sizeof(err)))
		return http_send_error(conn, 400, "%s", err);
	old = listed(ctx->snapshots, name);
	if (old && !(replace && !strcmp(replace, "1"))) {
		json_decref(old);
		return http_send_error(
		    conn, 409,
		    "snapshot %s exists; remove it first (tailprof snapshot rm %s) "
		    "or replace it (tailprof snapshot save --replace; over HTTP, replace=1)",
		    name, name);
	}
	json_decref(old);
	/* no range: every closed window the ring holds */
	from = r.last_ns ? now - (int64_t)r.last_ns : r.has_from ? r.from_unix_ns : 0;
	to = r.has_to ? r.to_unix_ns : now;
	if (range_side(ctx, from, to, &side))
		return http_send_error(conn, 500, "out of memory");
	if (!side->nr_windows) {
		cmp_side__free(side);
		return http_send_error(
		    conn, 422,
		    "the range holds no closed window of the daemon; see tailprof "
		    "windows for what it holds");
	}
	rc = snapshots__save(ctx->snapshots, name, side);
	cmp_side__free(side);
	if (rc) {
		snapshots__describe_op(ctx->snapshots, SNAPSHOTS_SAVE, name, rc, err, sizeof(err));
		return http_send_error(conn,
				       rc == -EMLINK || rc == -EFBIG || rc == -E2BIG ? 507
				       : rc == -EEXIST				     ? 409
				       : rc == -EINVAL				     ? 400
										     : 500,
				       "%s", err);
	}
	old = listed(ctx->snapshots, name);
	return send_object(conn, 201, old ? old : json_pack("{s:s}", "name", name));
}

static enum MHD_Result handle_snapshots(struct MHD_Connection *conn, const struct query_ctx *ctx,
					const char *name, const char *method)
{
	static const char *const none[] = {NULL};
	struct params p = {.allowed = none};
	char v[ECHO_MAX * 4 + 8], err[512];
	int rc;

	if (!strcmp(method, "POST") && !name)
		return save_snapshot(conn, ctx);
	if (!name && strcmp(method, "GET") && strcmp(method, "HEAD"))
		return http_send_error_hdr(conn, 405, (struct header){"Allow", "GET, HEAD, POST"},
					   "%s: /api/v1/snapshots takes GET (list) and POST (save)",
					   http_printable(method, v, sizeof(v), ECHO_MAX));
	if (name && strcmp(method, "DELETE"))
		return http_send_error_hdr(conn, 405, (struct header){"Allow", "DELETE"},
					   "%s: /api/v1/snapshots/NAME takes DELETE (remove)",
					   http_printable(method, v, sizeof(v), ECHO_MAX));
	if (http_get_params(conn, &p))
		return http_send_error(conn, 400, "%s", p.err);
	if (name && !spike_file__valid_name(name, SPIKE_STORE_ID_MAX))
		return http_send_error(
		    conn, 400,
		    "'%s' is not a snapshot name: 1-64 characters of A-Z a-z 0-9 "
		    ". _ -, not . or ..",
		    http_printable(name, v, sizeof(v), ECHO_MAX));
	if (!ctx->snapshots)
		return http_send_error(conn, 409, "%s", NO_STATE_DIR);
	if (!name)
		return send_object(conn, 200, snapshots__list(ctx->snapshots));
	rc = snapshots__remove(ctx->snapshots, name);
	if (rc) {
		snapshots__describe_op(ctx->snapshots, SNAPSHOTS_REMOVE, name, rc, err,
				       sizeof(err));
		return http_send_error(conn,
				       rc == -ENOENT				? 404
				       : rc == -EPROTONOSUPPORT || rc == -ELOOP ? 409
										: 500,
				       "%s", err);
	}
	return send_object(conn, 200, json_pack("{s:s}", "removed", name));
}

enum MHD_Result http_compare__handle(struct MHD_Connection *conn, const struct query_ctx *ctx,
				     const char *url, const char *method)
{
	char v[ECHO_MAX * 4 + 8];

	if (!strcmp(url, "/api/v1/snapshots"))
		return handle_snapshots(conn, ctx, NULL, method);
	if (!strncmp(url, "/api/v1/snapshots/", 18))
		return handle_snapshots(conn, ctx, url + 18, method);
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return http_send_error_hdr(conn, 405, (struct header){"Allow", "GET, HEAD"},
					   "%s: only GET is served here",
					   http_printable(method, v, sizeof(v), ECHO_MAX));
	return handle_compare(conn, ctx);
}

bool http_compare__serves(const char *url)
{
	return !strcmp(url, "/api/v1/compare") || !strcmp(url, "/api/v1/snapshots") ||
	       !strncmp(url, "/api/v1/snapshots/", 18);
}
