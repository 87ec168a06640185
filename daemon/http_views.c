// SPDX-License-Identifier: GPL-2.0-only
/* The endpoints of the web page (issue 22): GET /api/v1/heatmap (per-window sub-window counts),
 * GET /api/v1/flamegraph (a tree pre-aggregated here), and the page itself (http_ui.c). */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"
#include "http_api_internal.h"
#include "http_util.h"
#include "query.h"
#include "spikes.h"
#include "timeparse.h"

#define FLAME_MIN_SHARE 0.0005 /* nodes below 0.05% of both totals merge into "(other)" */

bool http_views__serves(const char *url)
{
	return !strcmp(url, "/api/v1/heatmap") || !strcmp(url, "/api/v1/flamegraph") ||
	       !strcmp(url, "/") || !strncmp(url, "/ui/", 4);
}

static enum MHD_Result handle_heatmap(struct MHD_Connection *conn, struct http_api *h)
{
	static const char *const allowed[] = {"type", "last",  "from",	    "to", "pid",
					      "comm", "stage", "container", NULL};
	static const char *const filters[] = {"pid", "comm", "stage", "container"};
	struct params p = {.allowed = allowed};
	const char *type;
	struct query_range range;
	struct window **ws;
	char err[512], v[ECHO_MAX * 4 + 8], *body;
	size_t n = 0;

	if (http_get_params(conn, &p))
		return http_send_error(conn, 400, "%s", p.err);
	for (size_t i = 0; i < sizeof(filters) / sizeof(filters[0]); i++)
		if (http_param(&p, filters[i]))
			return http_send_error(
			    conn, 400,
			    "%s: the heat map counts every process (its counts are kept per "
			    "window, not per stack); drop %s=, or filter the flame graph of a "
			    "range (/api/v1/flamegraph)",
			    filters[i], filters[i]);
	type = http_param(&p, "type");
	if (type && strcmp(type, "cpu") && strcmp(type, "offcpu"))
		return http_send_error(conn, 400,
				       "type: '%s' is not a heat map type; allowed: cpu, "
				       "offcpu",
				       http_printable(type, v, sizeof(v), ECHO_MAX));
	if (http_parse_range(&p, &range, err, sizeof(err)))
		return http_send_error(conn, 400, "%s", err);
	collector__rdlock(h->ctx->collector);
	ws = select_windows(h->ctx, &range, &n);
	body = ws ? query__heatmap_json(h->ctx, ws, n, type && !strcmp(type, "offcpu")) : NULL;
	collector__unlock(h->ctx->collector);
	free(ws);
	return http_send_json(conn, 200, body);
}

/* The flame graph's parameters beyond a profile's. */
struct flame_params {
	struct query_range range, base_range;
	bool spike_base, range_base; /* baseline=1; baseline_from= or baseline_to= */
	double min_share;
};

/* Checks the parameters of /api/v1/flamegraph that need no lock. 0, or -1 with err written. */
static int parse_flame(const struct params *p, struct profile_filter *f, struct flame_params *fp,
		       char *err, size_t len)
{
	const char *spike = http_param(p, "spike"), *baseline = http_param(p, "baseline");
	const char *bfrom = http_param(p, "baseline_from"), *bto = http_param(p, "baseline_to");
	const char *share = http_param(p, "min_share");
	char v[ECHO_MAX * 4 + 8];

	memset(fp, 0, sizeof(*fp));
	fp->min_share = FLAME_MIN_SHARE;
	if (parse_filter(p, f, err, len) || http_parse_range(p, &fp->range, err, len) ||
	    parse_type(p, &f->type, err, len))
		return -1;
	if (spike && (http_param(p, "last") || http_param(p, "from") || http_param(p, "to"))) {
		snprintf(err, len,
			 "spike: a spike names its own windows; drop last=, from= and to=");
		return -1;
	}
	if (spike && !valid_spike_id(spike)) {
		snprintf(err, len,
			 "spike: '%s' is not a spike id (1-64 characters of A-Z a-z 0-9 . _ -) or "
			 "latest",
			 http_printable(spike, v, sizeof(v), ECHO_MAX));
		return -1;
	}
	if (baseline && strcmp(baseline, "0") && strcmp(baseline, "1")) {
		snprintf(err, len, "baseline: '%s' is not 0 or 1",
			 http_printable(baseline, v, sizeof(v), ECHO_MAX));
		return -1;
	}
	fp->spike_base = baseline && !strcmp(baseline, "1");
	fp->range_base = bfrom || bto;
	if (fp->spike_base && !spike) {
		snprintf(err, len,
			 "baseline: baseline=1 takes the baseline of spike=ID; for a range, give "
			 "baseline_from= and baseline_to=");
		return -1;
	}
	if (fp->spike_base && fp->range_base) {
		snprintf(err, len,
			 "baseline: give baseline=1 (the spike's) or baseline_from=/baseline_to=, "
			 "not both");
		return -1;
	}
	if ((bfrom && http_parse_time_param("baseline_from", bfrom, &fp->base_range.from_unix_ns,
					    err, len)) ||
	    (bto &&
	     http_parse_time_param("baseline_to", bto, &fp->base_range.to_unix_ns, err, len)))
		return -1;
	fp->base_range.has_from = bfrom != NULL;
	fp->base_range.has_to = bto != NULL;
	if (bfrom && bto && fp->base_range.to_unix_ns <= fp->base_range.from_unix_ns) {
		snprintf(err, len, "baseline_to: must be after baseline_from");
		return -1;
	}
	if (share) {
		if (tp_parse_decimal(share, &fp->min_share) ||
		    !(fp->min_share >= 0 && fp->min_share < 1)) {
			snprintf(err, len,
				 "min_share: '%s' is not a share; give a number from 0 (keep every "
				 "node) to below 1, e.g. 0.0005",
				 http_printable(share, v, sizeof(v), ECHO_MAX));
			return -1;
		}
	}
	return 0;
}

/* The windows of spike name (baseline: its baseline's) into *ws (calloc'd) and *n. Returns 0,
 * or answers conn (*ret) and returns -1 (never -ENOMEM). Read lock held. */
static int spike_windows(struct MHD_Connection *conn, struct http_api *h, const char *name,
			 bool baseline, struct window ***ws, size_t *n, enum MHD_Result *ret)
{
	struct window_ring *ring = collector__ring(h->ctx->collector);
	size_t max = window_ring__count(ring) + window_ring__nr_pinned(ring) + 1;
	char id[SPIKE_ID_LEN], v[ECHO_MAX * 4 + 8];
	int rc = h->ctx->spikes ? spikes__resolve(h->ctx->spikes, name, NULL, id) : -ENOENT;

	*ws = NULL;
	*n = 0;
	if (!rc) {
		*ws = calloc(max, sizeof(**ws));
		rc = *ws ? spikes__windows(h->ctx->spikes, ring, id, baseline, *ws, max, n)
			 : -ENOMEM;
	}
	/* a spike near the daemon's start may have no baseline: an empty side */
	if (!rc && (*n || baseline))
		return 0;
	free(*ws);
	*ws = NULL;
	if (rc == -ENOMEM)
		*ret = http_send_error(conn, 500, "out of memory");
	else if (rc == -ESTALE)
		*ret = http_send_error(conn, 404,
				       "spike '%s' was read back from the state directory: its "
				       "windows are gone, only its stored profiles are kept "
				       "(GET /api/v1/profile?spike=%s)",
				       id, id);
	else if (rc)
		*ret = http_send_error(
		    conn, 404, "spike: no spike '%s' is held; GET /api/v1/spikes lists them",
		    http_printable(name, v, sizeof(v), ECHO_MAX));
	else
		*ret = http_send_error(conn, 404,
				       "spike '%s': none of its %s windows is held any more", id,
				       baseline ? "baseline" : "spike");
	return -1;
}

static enum MHD_Result handle_flamegraph(struct MHD_Connection *conn, struct http_api *h)
{
	static const char *const allowed[] = {
	    "type",	     "last",	    "from",	 "to",	  "pid",
	    "comm",	     "container",   "stage",	 "spike", "baseline",
	    "baseline_from", "baseline_to", "min_share", NULL};
	struct params p = {.allowed = allowed};
	struct profile_filter filter;
	struct flame_params fp;
	struct window **ws = NULL, **bs = NULL;
	size_t n = 0, nb = 0;
	enum MHD_Result ret = MHD_NO;
	char err[1024], *body = NULL;
	const char *spike;
	int rc;

	if (http_get_params(conn, &p))
		return http_send_error(conn, 400, "%s", p.err);
	if (parse_flame(&p, &filter, &fp, err, sizeof(err)))
		return http_send_error(conn, 400, "%s", err);
	spike = http_param(&p, "spike");
	encoder_enter(h);
	collector__rdlock(h->ctx->collector);
	if (parse_stage(&p, h->ctx, &filter, err, sizeof(err))) {
		ret = http_send_error(conn, 400, "%s", err);
		goto out;
	}
	/* the selection: a spike's windows or a range's; the baseline: the spike's or a range's */
	if (spike)
		rc = spike_windows(conn, h, spike, false, &ws, &n, &ret);
	else
		rc = (ws = select_windows(h->ctx, &fp.range, &n)) ? 0 : -ENOMEM;
	if (!rc && fp.spike_base)
		rc = spike_windows(conn, h, spike, true, &bs, &nb, &ret);
	else if (!rc && fp.range_base)
		rc = (bs = select_windows(h->ctx, &fp.base_range, &nb)) ? 0 : -ENOMEM;
	if (rc == -ENOMEM)
		ret = http_send_error(conn, 500, "out of memory");
	if (rc)
		goto out;
	rc = query__flamegraph(h->ctx,
			       &(struct flame_query){
				   .windows = ws,
				   .n = n,
				   .baseline = bs,
				   .nr_baseline = nb,
				   .with_baseline = fp.spike_base || fp.range_base,
				   .filter = &filter,
				   .range = spike ? NULL : &fp.range,
				   .min_share = fp.min_share,
			       },
			       &body);
	collector__unlock(h->ctx->collector);
	encoder_leave(h);
	free(ws);
	free(bs);
	/* a tree over a full ring frees MBs of temporary tables: give them back */
	malloc_trim(0);
	if (rc)
		return http_send_error(conn, 500, "cannot build the flame graph: %s",
				       strerror(-rc));
	return http_send_json(conn, 200, body);
out:
	collector__unlock(h->ctx->collector);
	encoder_leave(h);
	free(ws);
	free(bs);
	return ret;
}

enum MHD_Result http_views__handle(struct MHD_Connection *conn, struct http_api *h, const char *url)
{
	if (!strcmp(url, "/api/v1/heatmap"))
		return handle_heatmap(conn, h);
	if (!strcmp(url, "/api/v1/flamegraph"))
		return handle_flamegraph(conn, h);
	return http_ui__handle(conn, url);
}
