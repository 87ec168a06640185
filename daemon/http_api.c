// SPDX-License-Identifier: GPL-2.0-only
/* HTTP endpoints: /api/v1/{status,windows,profile}, /debug/pprof/profile, /healthz, /metrics. */
#include "http_api.h"

#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <jansson.h>
#include <microhttpd.h>

#include "collector.h"
#include "log.h"
#include "query.h"
#include "sysinfo.h"
#include "timeparse.h"

#define MAX_WINDOWS_PER_QUERY 100000
#define MAX_PROFILE_SECONDS   3600

struct http_api {
	struct MHD_Daemon *mhd;
	const struct query_ctx *ctx;
};

int http_api__listen(const char *addr, char *err, size_t errlen)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_PASSIVE | AI_NUMERICHOST | AI_NUMERICSERV};
	struct addrinfo *ai = NULL;
	char host[256];
	const char *colon, *port;
	size_t hlen;
	int fd = -1, one = 1, rc;

	colon = strrchr(addr, ':');
	if (!colon || !colon[1]) {
		snprintf(err, errlen,
			 "--listen '%s': expected HOST:PORT, e.g. 127.0.0.1:7077 or "
			 "[::1]:7077 (or :7077 for every address)",
			 addr);
		return -1;
	}
	port = colon + 1;
	hlen = colon - addr;
	if (hlen >= 2 && addr[0] == '[' && addr[hlen - 1] == ']') {
		addr++;
		hlen -= 2;
	}
	if (hlen >= sizeof(host)) {
		snprintf(err, errlen, "--listen: host part too long");
		return -1;
	}
	memcpy(host, addr, hlen);
	host[hlen] = 0;
	rc = getaddrinfo(hlen ? host : NULL, port, &hints, &ai);
	if (rc) {
		snprintf(err, errlen,
			 "--listen '%s:%s': %s (expected a numeric IP address and a "
			 "port 1-65535, e.g. 127.0.0.1:7077)",
			 host, port, gai_strerror(rc));
		return -1;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(err, errlen, "cannot create a socket: %s", strerror(errno));
		goto fail;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 64)) {
		int e = errno;

		snprintf(err, errlen, "cannot listen on %s:%s: %s%s", hlen ? host : "*", port,
			 strerror(e),
			 e == EADDRINUSE ? " (is another tailprofd running? pick a free port with "
					   "--listen HOST:PORT)"
			 : e == EADDRNOTAVAIL ? " (no such address on this host)"
					      : "");
		goto fail;
	}
	freeaddrinfo(ai);
	return fd;
fail:
	if (fd >= 0)
		close(fd);
	freeaddrinfo(ai);
	return -1;
}

/* ---- responses ---- */

static enum MHD_Result send_buf(struct MHD_Connection *conn, unsigned int status, const char *type,
				void *buf, size_t len, bool free_buf)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(
	    len, buf, free_buf ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, "Content-Type", type);
	ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result send_json(struct MHD_Connection *conn, unsigned int status, char *body)
{
	if (!body)
		return send_buf(conn, 500, "application/json", "{\"error\":\"out of memory\"}\n",
				26, false);
	return send_buf(conn, status, "application/json", body, strlen(body), true);
}

static enum MHD_Result __attribute__((format(printf, 3, 4)))
send_error(struct MHD_Connection *conn, unsigned int status, const char *fmt, ...)
{
	char msg[512];
	json_t *o;
	va_list ap;
	char *body;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	o = json_pack("{s:s}", "error", msg);
	body = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	return send_json(conn, status, body);
}

/* ---- query parameters ---- */

struct params {
	const char *allowed[8];
	const char *unknown;
};

static enum MHD_Result check_param(void *cls, enum MHD_ValueKind kind, const char *key,
				   const char *value)
{
	struct params *p = cls;

	for (int i = 0; p->allowed[i]; i++)
		if (!strcmp(key, p->allowed[i]))
			return MHD_YES;
	p->unknown = key;
	return MHD_NO;
}

/* Rejects parameters not in allowed (NULL-terminated). Returns the unknown key or NULL. */
static const char *unknown_param(struct MHD_Connection *conn, const char *const *allowed)
{
	struct params p = {};

	for (int i = 0; allowed[i] && i < 7; i++)
		p.allowed[i] = allowed[i];
	MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, check_param, &p);
	return p.unknown;
}

static const char *arg(struct MHD_Connection *conn, const char *key)
{
	return MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, key);
}

/* Parses last= / from= / to= into r. Returns 0, or -1 after writing the error into err. */
static int parse_range(struct MHD_Connection *conn, struct query_range *r, char *err, size_t len)
{
	const char *last = arg(conn, "last"), *from = arg(conn, "from"), *to = arg(conn, "to");

	memset(r, 0, sizeof(*r));
	if (last && (from || to)) {
		snprintf(err, len, "last: use either last=DURATION or from=/to=, not both");
		return -1;
	}
	if (last && (tp_parse_duration(last, &r->last_ns) || !r->last_ns)) {
		snprintf(err, len, "last: '%s' is not a duration; use e.g. 90s, 5m, 1h", last);
		return -1;
	}
	if (from) {
		if (tp_parse_time(from, &r->from_unix_ns)) {
			snprintf(err, len,
				 "from: '%s' is not a time; use RFC 3339 "
				 "(2026-11-29T21:04:05Z) or Unix seconds",
				 from);
			return -1;
		}
		r->has_from = true;
	}
	if (to) {
		if (tp_parse_time(to, &r->to_unix_ns)) {
			snprintf(err, len,
				 "to: '%s' is not a time; use RFC 3339 "
				 "(2026-11-29T21:04:05Z) or Unix seconds",
				 to);
			return -1;
		}
		r->has_to = true;
	}
	if (r->has_from && r->has_to && r->to_unix_ns <= r->from_unix_ns) {
		snprintf(err, len, "to: must be after from");
		return -1;
	}
	return 0;
}

/* ---- handlers ---- */

static enum MHD_Result send_profile(struct MHD_Connection *conn, const struct query_ctx *ctx,
				    struct window *const *ws, size_t n,
				    const struct profile_filter *filter)
{
	struct profile_summary sum;
	struct MHD_Response *r;
	enum MHD_Result ret;
	uint8_t *buf = NULL;
	size_t len = 0;
	char v[32];
	int err;

	err = query__cpu_profile(ctx, ws, n, filter, &buf, &len, &sum);
	collector__unlock(ctx->collector);
	/* a profile over a full ring frees tens of MB of temporary tables: give them back */
	malloc_trim(0);
	if (err)
		return send_error(conn, 500, "cannot encode the profile: %s", strerror(-err));
	r = MHD_create_response_from_buffer(len, buf, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(buf);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", "application/octet-stream");
	MHD_add_response_header(r, "Content-Disposition", "attachment; filename=\"profile.pb.gz\"");
	snprintf(v, sizeof(v), "%" PRIu64, sum.samples);
	MHD_add_response_header(r, "X-Tailprof-Samples", v);
	snprintf(v, sizeof(v), "%u", sum.windows);
	MHD_add_response_header(r, "X-Tailprof-Windows", v);
	snprintf(v, sizeof(v), "%" PRId64, sum.start_unix_ns);
	MHD_add_response_header(r, "X-Tailprof-Start-Unix-Ns", v);
	snprintf(v, sizeof(v), "%" PRId64, sum.end_unix_ns);
	MHD_add_response_header(r, "X-Tailprof-End-Unix-Ns", v);
	ret = MHD_queue_response(conn, 200, r);
	MHD_destroy_response(r);
	return ret;
}

static struct window **select_windows(const struct query_ctx *ctx, const struct query_range *range,
				      size_t *n)
{
	struct window_ring *ring = collector__ring(ctx->collector);
	struct window **ws = calloc(window_ring__count(ring) + 1, sizeof(*ws));

	if (ws)
		*n = query__select(ring, range, sysinfo__mono_ns(), ws, window_ring__count(ring));
	return ws;
}

static enum MHD_Result handle_profile(struct MHD_Connection *conn, const struct query_ctx *ctx)
{
	static const char *const allowed[] = {"type", "last", "from", "to", "pid", "comm", NULL};
	const char *type = arg(conn, "type"), *pid = arg(conn, "pid"), *bad;
	struct profile_filter filter = {.comm = arg(conn, "comm")};
	struct query_range range;
	struct window **ws;
	enum MHD_Result ret;
	char err[256];
	size_t n = 0;

	bad = unknown_param(conn, allowed);
	if (bad)
		return send_error(conn, 400,
				  "%s: unknown parameter; allowed: type, last, from, to, "
				  "pid, comm",
				  bad);
	if (type && strcmp(type, "cpu"))
		return send_error(conn, 400, "type: '%s' is not available; allowed: cpu", type);
	if (pid) {
		char *end;
		unsigned long v = strtoul(pid, &end, 10);

		if (!*pid || *end || v == 0 || v > UINT32_MAX)
			return send_error(conn, 400,
					  "pid: '%s' is not a process id (a positive "
					  "integer)",
					  pid);
		filter.has_pid = true;
		filter.pid = v;
	}
	if (filter.comm && !*filter.comm)
		return send_error(conn, 400, "comm: empty; give a process name");
	if (parse_range(conn, &range, err, sizeof(err)))
		return send_error(conn, 400, "%s", err);
	collector__rdlock(ctx->collector);
	ws = select_windows(ctx, &range, &n);
	if (!ws) {
		collector__unlock(ctx->collector);
		return send_error(conn, 500, "out of memory");
	}
	ret = send_profile(conn, ctx, ws, n, &filter);
	free(ws);
	return ret;
}

static enum MHD_Result handle_debug_profile(struct MHD_Connection *conn,
					    const struct query_ctx *ctx)
{
	const char *seconds = arg(conn, "seconds");
	unsigned long secs = 30;
	struct window *w;
	enum MHD_Result ret;

	if (seconds) {
		char *end;

		secs = strtoul(seconds, &end, 10);
		if (!*seconds || *end || secs < 1 || secs > MAX_PROFILE_SECONDS)
			return send_error(conn, 400,
					  "seconds: '%s' is not allowed; give whole "
					  "seconds from 1 to %d",
					  seconds, MAX_PROFILE_SECONDS);
	}
	w = collector__capture_begin(ctx->collector, secs * NSEC_PER_SEC);
	if (!w)
		return send_error(conn, 500, "out of memory");
	if (collector__capture_wait(ctx->collector, w)) {
		collector__capture_end(ctx->collector, w);
		return send_error(conn, 503, "tailprofd is shutting down");
	}
	w->wall_offset_ns = collector__wall_offset_ns(ctx->collector);
	w->closed = true;
	collector__rdlock(ctx->collector);
	ret = send_profile(conn, ctx, &w, 1, NULL);
	collector__capture_end(ctx->collector, w);
	return ret;
}

static enum MHD_Result handle_windows(struct MHD_Connection *conn, const struct query_ctx *ctx)
{
	static const char *const allowed[] = {"last", "from", "to", NULL};
	struct query_range range;
	struct window **ws;
	const char *bad;
	char err[256], *body;
	size_t n = 0;

	bad = unknown_param(conn, allowed);
	if (bad)
		return send_error(conn, 400, "%s: unknown parameter; allowed: last, from, to", bad);
	if (parse_range(conn, &range, err, sizeof(err)))
		return send_error(conn, 400, "%s", err);
	collector__rdlock(ctx->collector);
	ws = select_windows(ctx, &range, &n);
	body = ws ? query__windows_json(ctx, ws, n) : NULL;
	collector__unlock(ctx->collector);
	free(ws);
	return send_json(conn, 200, body);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
			      const char *method, const char *version, const char *upload_data,
			      size_t *upload_size, void **con_cls)
{
	const struct query_ctx *ctx = cls;
	struct collector_status st;
	char *body;

	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return send_error(conn, 405, "%s: only GET is served", method);
	if (!strcmp(url, "/healthz")) {
		collector__rdlock(ctx->collector);
		collector__status(ctx->collector, &st);
		collector__unlock(ctx->collector);
		return st.healthy ? send_buf(conn, 200, "text/plain", "ok\n", 3, false)
				  : send_buf(conn, 503, "text/plain", "starting\n", 9, false);
	}
	if (!strcmp(url, "/metrics")) {
		collector__rdlock(ctx->collector);
		body = query__metrics_text(ctx);
		collector__unlock(ctx->collector);
		if (!body)
			return send_error(conn, 500, "out of memory");
		return send_buf(conn, 200, "text/plain; version=0.0.4", body, strlen(body), true);
	}
	if (!strcmp(url, "/api/v1/status")) {
		if (unknown_param(conn, (const char *const[]){NULL}))
			return send_error(conn, 400, "%s: unknown parameter; status takes none",
					  unknown_param(conn, (const char *const[]){NULL}));
		collector__rdlock(ctx->collector);
		body = query__status_json(ctx);
		collector__unlock(ctx->collector);
		return send_json(conn, 200, body);
	}
	if (!strcmp(url, "/api/v1/windows"))
		return handle_windows(conn, ctx);
	if (!strcmp(url, "/api/v1/profile"))
		return handle_profile(conn, ctx);
	if (!strcmp(url, "/debug/pprof/profile"))
		return handle_debug_profile(conn, ctx);
	return send_error(conn, 404,
			  "%s: no such path; see /api/v1/status, /api/v1/windows, "
			  "/api/v1/profile, /debug/pprof/profile, /metrics, /healthz",
			  url);
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char buf[256];

	vsnprintf(buf, sizeof(buf), fmt, ap);
	buf[strcspn(buf, "\n")] = 0;
	pr_debug("http: %s", buf);
}

struct http_api *http_api__start(int listen_fd, const struct query_ctx *ctx)
{
	struct http_api *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	h->ctx = ctx;
	h->mhd = MHD_start_daemon(
	    MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0,
	    NULL, NULL, handle, (void *)ctx,
	    /* the logger first, so that no message goes to MHD's own */
	    MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, MHD_OPTION_LISTEN_SOCKET, listen_fd,
	    MHD_OPTION_CONNECTION_LIMIT, (unsigned int)64, MHD_OPTION_CONNECTION_TIMEOUT,
	    (unsigned int)30, MHD_OPTION_END);
	if (!h->mhd) {
		free(h);
		errno = EIO;
		return NULL;
	}
	return h;
}

void http_api__stop(struct http_api *h)
{
	if (!h)
		return;
	MHD_stop_daemon(h->mhd);
	free(h);
}
