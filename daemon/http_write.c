// SPDX-License-Identifier: GPL-2.0-only
/* The write endpoints: POST /api/v1/marks and /api/v1/alertmanager (the body read in pieces,
 * checked, rate-limited and handed to spikes), and their counts on /metrics. */
#include "http_api_internal.h"

#include <errno.h>
#include <pthread.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <microhttpd.h>

#include "http_util.h"
#include "log.h"
#include "marks.h"
#include "snapshots.h"
#include "spikes.h"
#include "sysinfo.h"
#include "timeparse.h"

const char *const http_write_paths[HTTP_WRITE_ENDPOINTS] = {
    [HTTP_WRITE_MARKS] = "/api/v1/marks",
    [HTTP_WRITE_ALERTMANAGER] = "/api/v1/alertmanager",
};
static const char *const write_endpoint_names[HTTP_WRITE_ENDPOINTS] = {
    [HTTP_WRITE_MARKS] = "marks",
    [HTTP_WRITE_ALERTMANAGER] = "alertmanager",
};
static const char *const write_result_names[HTTP_WRITE_RESULTS] = {
    [HTTP_WRITE_ACCEPTED] = "accepted",
    [HTTP_WRITE_INVALID] = "invalid",
    [HTTP_WRITE_RATE_LIMITED] = "rate_limited",
    [HTTP_WRITE_UNAVAILABLE] = "unavailable",
};

/* The body of a write request as it arrives (con_cls); freed when the request completes. */
struct upload {
	char *buf; /* malloc'd, len bytes of cap */
	size_t len, cap;
	bool too_large; /* past MARKS_MAX_BODY_BYTES: the rest is read and dropped, then 413 */
	bool oom;
};

static void count_write(struct http_api *h, enum http_write_endpoint e, enum http_write_result r)
{
	pthread_mutex_lock(&h->mu);
	h->writes.n[e][r]++;
	pthread_mutex_unlock(&h->mu);
}

void http_api__write_counts(struct http_api *h, struct http_write_counts *out)
{
	struct snapshots_counts sc = {0};

	pthread_mutex_lock(&h->mu);
	*out = h->writes;
	pthread_mutex_unlock(&h->mu);
	if (h->ctx->snapshots)
		snapshots__counts(h->ctx->snapshots, &sc);
	out->snapshot_saves_rate_limited = sc.refused_rate;
}

int http_api__write_metrics_text(const struct http_write_counts *c, char **text)
{
	size_t old = *text ? strlen(*text) : 0, cap = old + 4096, n = old;
	char *t = realloc(*text, cap);

	if (!t)
		return -ENOMEM;
	n += snprintf(
	    t + n, cap - n,
	    "# HELP tailprof_api_writes_total Requests to the write endpoints (POST "
	    "/api/v1/marks, /api/v1/alertmanager) by result: accepted, invalid (400, 413, "
	    "415), rate_limited (429, Alertmanager 503: beyond write_rate), unavailable (503, "
	    "spike queue full or spikes off).\n# TYPE tailprof_api_writes_total counter\n");
	for (int e = 0; e < HTTP_WRITE_ENDPOINTS; e++)
		for (int r = 0; r < HTTP_WRITE_RESULTS; r++)
			n += snprintf(t + n, cap - n,
				      "tailprof_api_writes_total{endpoint=\"%s\",result=\"%s\"} "
				      "%" PRIu64 "\n",
				      write_endpoint_names[e], write_result_names[r], c->n[e][r]);
	n += snprintf(
	    t + n, cap - n,
	    "# HELP tailprof_http_rejected_total Write requests refused before any work, by "
	    "route and reason (rate: past the route's token bucket; 429, or 503 for "
	    "Alertmanager).\n# TYPE tailprof_http_rejected_total counter\n");
	for (int e = 0; e < HTTP_WRITE_ENDPOINTS; e++)
		n += snprintf(t + n, cap - n,
			      "tailprof_http_rejected_total{route=\"%s\",reason=\"rate\"} %" PRIu64
			      "\n",
			      http_write_paths[e], c->n[e][HTTP_WRITE_RATE_LIMITED]);
	n += snprintf(t + n, cap - n,
		      "tailprof_http_rejected_total{route=\"/api/v1/snapshots\",reason=\"rate\"} "
		      "%" PRIu64 "\n",
		      c->snapshot_saves_rate_limited);
	*text = t;
	return 0;
}

void http_api_request_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
				enum MHD_RequestTerminationCode toe)
{
	struct upload *u = *con_cls;

	if (u)
		free(u->buf);
	free(u);
	*con_cls = NULL;
}

/* Whether a Content-Type is one a JSON body may come with: none, application/json, and what
 * curl -d sends by default (application/x-www-form-urlencoded) or text/plain. */
static bool json_content_type(const char *type)
{
	static const char *const ok[] = {"application/json", "application/x-www-form-urlencoded",
					 "text/plain", NULL};
	size_t n;

	if (!type)
		return true;
	n = strcspn(type, "; \t");
	for (int i = 0; ok[i]; i++)
		if (strlen(ok[i]) == n && !strncasecmp(type, ok[i], n))
			return true;
	return false;
}

/* The first call of a write request, headers read and no body yet: the checks that need no
 * body. Returns MHD_YES with *con_cls set to carry on, else the answer's result. */
static enum MHD_Result write_begin(struct MHD_Connection *conn, struct http_api *h,
				   enum http_write_endpoint e, const char *method, void **con_cls)
{
	const char *type = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Type");
	const char *clen = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");
	char v[ECHO_MAX * 4 + 8], after[16];
	struct upload *u;
	uint64_t len;
	uint32_t wait;

	if (strcmp(method, "POST"))
		return http_send_error_hdr(conn, 405, (struct header){"Allow", "POST"},
					   "%s: %s takes POST only (see docs/spike-marks.md)",
					   http_printable(method, v, sizeof(v), ECHO_MAX),
					   http_write_paths[e]);
	{
		static const char *const none[] = {NULL};
		struct params p = {.allowed = none};

		if (http_get_params(conn, &p)) {
			count_write(h, e, HTTP_WRITE_INVALID);
			return http_send_error(conn, 400, "%s; %s takes its fields in a JSON body",
					       p.err, http_write_paths[e]);
		}
	}
	if (!json_content_type(type)) {
		count_write(h, e, HTTP_WRITE_INVALID);
		return http_send_error(conn, 415,
				       "Content-Type: '%s' is not taken; send the JSON body as "
				       "application/json (curl -d's default is taken too)",
				       http_printable(type, v, sizeof(v), ECHO_MAX));
	}
	if (clen && !tp_parse_uint(clen, 0, UINT64_MAX, &len) && len > MARKS_MAX_BODY_BYTES) {
		count_write(h, e, HTTP_WRITE_INVALID);
		return http_send_error(conn, 413, "body: %" PRIu64 " bytes; at most %d (1 MiB)",
				       len, MARKS_MAX_BODY_BYTES);
	}
	if (!h->ctx->spikes) {
		count_write(h, e, HTTP_WRITE_UNAVAILABLE);
		return http_send_error(conn, 503,
				       "%s: spike tracking is not running in this tailprofd",
				       http_write_paths[e]);
	}
	pthread_mutex_lock(&h->mu);
	wait = marks__bucket_take(&h->buckets[e], sysinfo__mono_ns());
	if (wait)
		h->writes.n[e][HTTP_WRITE_RATE_LIMITED]++;
	pthread_mutex_unlock(&h->mu);
	if (wait) {
		snprintf(after, sizeof(after), "%u", wait);
		/* 429 says what happened; Alertmanager retries 5xx only, so its deliveries get 503
		 * and are sent again rather than lost */
		return http_send_error_hdr(
		    conn, e == HTTP_WRITE_ALERTMANAGER ? 503 : 429,
		    (struct header){"Retry-After", after},
		    "%s: too many write requests; try again in %u s (the limit "
		    "is [spikes] write_rate a minute)",
		    http_write_paths[e], wait);
	}
	u = calloc(1, sizeof(*u));
	if (!u)
		return http_send_error(conn, 500, "out of memory");
	*con_cls = u;
	return MHD_YES;
}

/* Appends a piece of the body to u (checked: the size comes from outside). */
static void write_append(struct upload *u, const char *data, size_t len)
{
	size_t cap;
	char *b;

	if (u->too_large || u->oom)
		return;
	if (len > MARKS_MAX_BODY_BYTES - u->len) {
		u->too_large = true;
		return;
	}
	if (u->len + len > u->cap) {
		cap = u->cap ? u->cap : 4096;
		while (cap < u->len + len)
			cap *= 2;
		b = realloc(u->buf, cap);
		if (!b) {
			u->oom = true;
			return;
		}
		u->buf = b;
		u->cap = cap;
	}
	memcpy(u->buf + u->len, data, len);
	u->len += len;
}

/* 200 with o (taken over; NULL: out of memory). */
static enum MHD_Result send_object(struct MHD_Connection *conn, json_t *o)
{
	char *body = o ? json_dumps(o, JSON_COMPACT) : NULL;

	json_decref(o);
	return http_send_json(conn, 200, body);
}

/* The answer to a write whose parsing or spike call failed with rc (err: the message of
 * -EINVAL). */
static enum MHD_Result write_refused(struct MHD_Connection *conn, struct http_api *h,
				     enum http_write_endpoint e, int rc, const char *err)
{
	if (rc == -EINVAL) {
		count_write(h, e, HTTP_WRITE_INVALID);
		/* Alertmanager does not retry a 400 and shows it only in its own log: -v shows it
		 * here */
		pr_debug("http: POST %s refused: %s", http_write_paths[e], err);
		return http_send_error(conn, 400, "%s", err);
	}
	if (rc == -EAGAIN) {
		count_write(h, e, HTTP_WRITE_UNAVAILABLE);
		return http_send_error_hdr(conn, 503, (struct header){"Retry-After", "1"},
					   "%s: the spike queue is full; try again in a second",
					   http_write_paths[e]);
	}
	return http_send_error(conn, 500, "%s: %s", http_write_paths[e], strerror(-rc));
}

static enum MHD_Result write_mark(struct MHD_Connection *conn, struct http_api *h,
				  const struct upload *u)
{
	struct spike_mark m;
	char err[512], id[SPIKE_ID_LEN] = "", t[32];
	int rc;

	rc = marks__parse_mark(u->buf ? u->buf : "", u->len, sysinfo__real_ns(), &m, err,
			       sizeof(err));
	if (!rc)
		rc = spikes__mark(h->ctx->spikes, &m, id, err, sizeof(err));
	if (rc)
		return write_refused(conn, h, HTTP_WRITE_MARKS, rc, err);
	count_write(h, HTTP_WRITE_MARKS, HTTP_WRITE_ACCEPTED);
	return send_object(conn, json_pack("{s:s, s:s, s:I}", "id", id, "time",
					   tp_format_rfc3339(m.time_unix_ns, t, sizeof(t)),
					   "time_unix_ns", (json_int_t)m.time_unix_ns));
}

static enum MHD_Result write_alerts(struct MHD_Connection *conn, struct http_api *h,
				    const struct upload *u)
{
	struct spike_alert *a = NULL;
	char err[512];
	size_t n = 0;
	int rc;

	rc = marks__parse_alerts(u->buf ? u->buf : "", u->len, &a, &n, err, sizeof(err));
	if (!rc && n)
		rc = spikes__alerts(h->ctx->spikes, a, n);
	free(a);
	if (rc)
		return write_refused(conn, h, HTTP_WRITE_ALERTMANAGER, rc, err);
	count_write(h, HTTP_WRITE_ALERTMANAGER, HTTP_WRITE_ACCEPTED);
	return send_object(conn, json_pack("{s:I}", "alerts", (json_int_t)n));
}

/* POST /api/v1/marks and /api/v1/alertmanager: libmicrohttpd calls once with the headers, then
 * once per piece of the body (*upload_size > 0), then once more with none. */
enum MHD_Result http_api_handle_write(struct MHD_Connection *conn, struct http_api *h,
				      enum http_write_endpoint e, const char *method,
				      const char *upload_data, size_t *upload_size, void **con_cls)
{
	struct upload *u = *con_cls;

	if (!u)
		return write_begin(conn, h, e, method, con_cls);
	if (*upload_size) {
		write_append(u, upload_data, *upload_size);
		*upload_size = 0;
		return MHD_YES;
	}
	if (u->too_large) {
		count_write(h, e, HTTP_WRITE_INVALID);
		return http_send_error(conn, 413, "body: more than %d bytes (1 MiB); send less",
				       MARKS_MAX_BODY_BYTES);
	}
	if (u->oom)
		return http_send_error(conn, 500, "out of memory");
	return e == HTTP_WRITE_MARKS ? write_mark(conn, h, u) : write_alerts(conn, h, u);
}
