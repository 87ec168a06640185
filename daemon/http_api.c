// SPDX-License-Identifier: GPL-2.0-only
/* HTTP endpoints: /api/v1/{status,windows,profile,gc}, /debug/pprof/profile, /healthz, /metrics. */
#include "http_api.h"

#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <inttypes.h>
#include <malloc.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <jansson.h>
#include <microhttpd.h>

#include "collector.h"
#include "gc_discovery.h"
#include "log.h"
#include "query.h"
#include "stages.h"
#include "sysinfo.h"
#include "tailprof.h"
#include "timeparse.h"

#define MAX_PROFILE_SECONDS 3600

static int listen_on(const char *addr, bool parse_only, char *err, size_t errlen);

int http_api__listen(const char *addr, char *err, size_t errlen)
{
	return listen_on(addr, false, err, errlen);
}

int http_api__check_listen(const char *addr, char *err, size_t errlen)
{
	return listen_on(addr, true, err, errlen);
}

/* http_api__listen(); parse_only: the address is checked (its form, getaddrinfo) but no socket
 * is made, 0 when it is good. */
static int listen_on(const char *addr, bool parse_only, char *err, size_t errlen)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_PASSIVE | AI_NUMERICHOST | AI_NUMERICSERV};
	static const char forms[] = "expected HOST:PORT with a numeric address and a port from 1 "
				    "to 65535, e.g. 127.0.0.1:7077, [::1]:7077, or :7077 for every "
				    "address";
	struct addrinfo *ai = NULL;
	const char *colon, *port, *host_start = addr;
	char host[256];
	size_t hlen;
	unsigned long pnum = 0;
	int fd = -1, one = 1, rc;

	colon = strrchr(addr, ':');
	/* "[::1]" alone ends in ']' after its last colon: that is a missing port too */
	if (!colon || strchr(colon, ']'))
		goto usage;
	port = colon + 1;
	for (const char *p = port; *p; p++) {
		if (!isdigit((unsigned char)*p) || pnum > 65535)
			goto usage;
		pnum = pnum * 10 + (unsigned long)(*p - '0');
	}
	if (!*port || pnum < 1 || pnum > 65535)
		goto usage;
	hlen = colon - addr;
	if (hlen >= 2 && addr[0] == '[' && addr[hlen - 1] == ']') {
		host_start++;
		hlen -= 2;
	}
	if (hlen >= sizeof(host))
		goto usage;
	memcpy(host, host_start, hlen);
	host[hlen] = 0;
	rc = getaddrinfo(hlen ? host : NULL, port, &hints, &ai);
	if (rc)
		goto usage;
	if (parse_only) {
		freeaddrinfo(ai);
		return 0;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(err, errlen, "cannot create a socket: %s", strerror(errno));
		goto fail;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 64)) {
		int e = errno;

		snprintf(err, errlen, "cannot listen on %s: %s%s", addr, strerror(e),
			 e == EADDRINUSE ? " (is another tailprofd running? pick a free port with "
					   "--listen HOST:PORT)"
			 : e == EADDRNOTAVAIL ? " (no such address on this host)"
					      : "");
		goto fail;
	}
	freeaddrinfo(ai);
	return fd;
usage:
	snprintf(err, errlen, "--listen '%s': %s", addr, forms);
	return -2;
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

/* Makes text safe to echo in JSON: bytes outside printable ASCII become \xNN (the input may
 * not be UTF-8), and it is cut at max bytes. */
static const char *printable(const char *text, char *buf, size_t len, size_t max)
{
	size_t n = 0;

	for (const unsigned char *p = (const unsigned char *)text; *p && n + 5 < len; p++) {
		if (p - (const unsigned char *)text >= (ptrdiff_t)max) {
			n += snprintf(buf + n, len - n, "...");
			break;
		}
		if (*p >= 0x20 && *p < 0x7f)
			buf[n++] = *p;
		else
			n += snprintf(buf + n, len - n, "\\x%02x", *p);
	}
	buf[n < len ? n : len - 1] = 0;
	return buf;
}

static enum MHD_Result __attribute__((format(printf, 3, 4)))
send_error(struct MHD_Connection *conn, unsigned int status, const char *fmt, ...)
{
	char msg[1024];
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

#define MAX_PARAMS 8
#define ECHO_MAX   64 /* bytes of a bad value echoed in an error */

/* The query parameters of one request: each allowed one at most once and with a value. */
struct params {
	const char *const *allowed; /* NULL-terminated */
	const char *value[MAX_PARAMS];
	char err[512];
};

static enum MHD_Result collect_param(void *cls, enum MHD_ValueKind kind, const char *key,
				     size_t key_size, const char *value, size_t value_size)
{
	struct params *p = cls;
	char k[ECHO_MAX * 4 + 8], list[160] = "";
	size_t n = 0;

	/* %00 in a query: C strings would silently end there ("type=cpu%00x" read as cpu) */
	if (strlen(key) != key_size || (value && strlen(value) != value_size)) {
		printable(key, k, sizeof(k), ECHO_MAX);
		snprintf(p->err, sizeof(p->err), "%s: contains a NUL byte (%%00)", k);
		return MHD_NO;
	}

	for (int i = 0; p->allowed[i]; i++) {
		if (strcmp(key, p->allowed[i]))
			continue;
		if (!value) {
			snprintf(p->err, sizeof(p->err), "%s: needs a value (%s=...)", key, key);
			return MHD_NO;
		}
		if (p->value[i]) {
			snprintf(p->err, sizeof(p->err), "%s: given twice; give it once", key);
			return MHD_NO;
		}
		p->value[i] = value;
		return MHD_YES;
	}
	for (int i = 0; p->allowed[i]; i++)
		n += snprintf(list + n, sizeof(list) - n, "%s%s", i ? ", " : "", p->allowed[i]);
	if (*key)
		printable(key, k, sizeof(k), ECHO_MAX);
	else
		strcpy(k, "(empty name)");
	snprintf(p->err, sizeof(p->err), "%s: unknown parameter; %s%s", k,
		 n ? "allowed: " : "this path takes none", list);
	return MHD_NO;
}

/* Reads the query into p (p->allowed set by the caller). Returns 0, or -1 with p->err set. */
static int get_params(struct MHD_Connection *conn, struct params *p)
{
	p->err[0] = 0;
	MHD_get_connection_values_n(conn, MHD_GET_ARGUMENT_KIND, collect_param, p);
	return p->err[0] ? -1 : 0;
}

static const char *param(const struct params *p, const char *key)
{
	for (int i = 0; p->allowed[i]; i++)
		if (!strcmp(key, p->allowed[i]))
			return p->value[i];
	return NULL;
}

/* Parses the time value of parameter name into *ns. Returns 0, or -1 with err written. */
static int parse_time_param(const char *name, const char *value, int64_t *ns, char *err, size_t len)
{
	char v[ECHO_MAX * 4 + 8];
	int rc = tp_parse_time(value, ns);

	if (!rc)
		return 0;
	snprintf(err, len,
		 "%s: '%s' is %s; use RFC 3339 (2026-11-29T21:04:05Z) or Unix seconds, from 1970 "
		 "to 2262",
		 name, printable(value, v, sizeof(v), ECHO_MAX),
		 rc == -ERANGE ? "out of range" : "not a time");
	return -1;
}

/* Parses last= / from= / to= into r. Returns 0, or -1 after writing the error into err. */
static int parse_range(const struct params *p, struct query_range *r, char *err, size_t len)
{
	const char *last = param(p, "last"), *from = param(p, "from"), *to = param(p, "to");
	char v[ECHO_MAX * 4 + 8];

	memset(r, 0, sizeof(*r));
	if (last && (from || to)) {
		snprintf(err, len, "last: use either last=DURATION or from=/to=, not both");
		return -1;
	}
	if (last && (tp_parse_duration(last, &r->last_ns) || !r->last_ns)) {
		snprintf(err, len, "last: '%s' is not a positive duration; use e.g. 90s, 5m, 1h",
			 printable(last, v, sizeof(v), ECHO_MAX));
		return -1;
	}
	if ((from && parse_time_param("from", from, &r->from_unix_ns, err, len)) ||
	    (to && parse_time_param("to", to, &r->to_unix_ns, err, len)))
		return -1;
	r->has_from = from != NULL;
	r->has_to = to != NULL;
	if (r->has_from && r->has_to && r->to_unix_ns <= r->from_unix_ns) {
		snprintf(err, len, "to: must be after from");
		return -1;
	}
	return 0;
}

/* Parses pid= and comm= into f. Returns 0, or -1 after writing the error into err. */
static int parse_filter(const struct params *p, struct profile_filter *f, char *err, size_t len)
{
	const char *pid = param(p, "pid");
	char v[ECHO_MAX * 4 + 8];

	memset(f, 0, sizeof(*f));
	f->comm = param(p, "comm");
	if (pid) {
		uint64_t n;

		if (tp_parse_uint(pid, 1, INT32_MAX, &n)) {
			snprintf(err, len, "pid: '%s' is not a process id (a positive integer)",
				 printable(pid, v, sizeof(v), ECHO_MAX));
			return -1;
		}
		f->has_pid = true;
		f->pid = n;
	}
	if (f->comm && !*f->comm) {
		snprintf(err, len, "comm: empty; give a process name");
		return -1;
	}
	if (f->comm && strlen(f->comm) >= TP_COMM_LEN) {
		snprintf(err, len,
			 "comm: '%s' is longer than the kernel keeps (%d characters); "
			 "use its first %d: '%.*s'",
			 printable(f->comm, v, sizeof(v), ECHO_MAX), TP_COMM_LEN - 1,
			 TP_COMM_LEN - 1, TP_COMM_LEN - 1, f->comm);
		return -1;
	}
	return 0;
}

/* Parses type= into *t (left as it is when not given). Returns 0, or -1 after writing the error
 * into err. */
static int parse_type(const struct params *p, enum profile_type *t, char *err, size_t len)
{
	const char *type = param(p, "type");
	char v[ECHO_MAX * 4 + 8];

	if (!type || !query__parse_type(type, t))
		return 0;
	snprintf(err, len, "type: '%s' is not a profile type; allowed: cpu, offcpu, wall",
		 printable(type, v, sizeof(v), ECHO_MAX));
	return -1;
}

/* Resolves stage=NAME into f (under the read lock: the registry changes on reload). Returns 0,
 * or -1 after writing the error into err. */
static int parse_stage(const struct params *p, const struct query_ctx *ctx,
		       struct profile_filter *f, char *err, size_t len)
{
	const char *stage = param(p, "stage");
	char v[ECHO_MAX * 4 + 8], known[512];

	if (!stage)
		return 0;
	f->has_stage = true;
	f->stage_mask = ctx->stages ? stages__mask(ctx->stages, stage) : 0;
	if (f->stage_mask)
		return 0;
	if (ctx->stages)
		stages__names_list(ctx->stages, known, sizeof(known));
	else
		snprintf(known, sizeof(known), "(none)");
	snprintf(err, len, "stage: '%s' is not a known stage; known: %s",
		 printable(stage, v, sizeof(v), ECHO_MAX), known);
	return -1;
}

/* ---- handlers ---- */

struct http_api {
	struct MHD_Daemon *mhd;
	const struct query_ctx *ctx;
	pthread_mutex_t mu;
	unsigned int captures; /* /debug/pprof/profile requests waiting now */
	unsigned int encoders; /* profiles being encoded now */
	pthread_cond_t encoder_free;
};

static enum MHD_Result send_pprof(struct MHD_Connection *conn, int err, uint8_t *buf, size_t len,
				  const struct profile_summary *sum);

static enum MHD_Result send_profile(struct MHD_Connection *conn, struct http_api *h,
				    struct window *const *ws, size_t n,
				    const struct profile_filter *filter,
				    const struct query_range *range)
{
	struct profile_summary sum;
	uint8_t *buf = NULL;
	size_t len = 0;
	int err;

	err = query__cpu_profile(h->ctx, ws, n, filter, range, &buf, &len, &sum);
	collector__unlock(h->ctx->collector);
	/* a profile over a full ring frees tens of MB of temporary tables: give them back */
	malloc_trim(0);
	return send_pprof(conn, err, buf, len, &sum);
}

/* Answers with the profile buf (len bytes, taken over) that an encoder made with result err, and
 * its summary in the X-Tailprof-* headers. */
static enum MHD_Result send_pprof(struct MHD_Connection *conn, int err, uint8_t *buf, size_t len,
				  const struct profile_summary *sum)
{
	struct MHD_Response *r;
	enum MHD_Result ret;
	char v[32];

	if (err)
		return send_error(conn, 500, "cannot encode the profile: %s", strerror(-err));
	r = MHD_create_response_from_buffer(len, buf, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(buf);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", "application/octet-stream");
	MHD_add_response_header(r, "Content-Disposition", "attachment; filename=\"profile.pb.gz\"");
	snprintf(v, sizeof(v), "%" PRIu64, sum->samples);
	MHD_add_response_header(r, "X-Tailprof-Samples", v);
	snprintf(v, sizeof(v), "%u", sum->windows);
	MHD_add_response_header(r, "X-Tailprof-Windows", v);
	snprintf(v, sizeof(v), "%" PRId64, sum->start_unix_ns);
	MHD_add_response_header(r, "X-Tailprof-Start-Unix-Ns", v);
	snprintf(v, sizeof(v), "%" PRId64, sum->end_unix_ns);
	MHD_add_response_header(r, "X-Tailprof-End-Unix-Ns", v);
	ret = MHD_queue_response(conn, 200, r);
	MHD_destroy_response(r);
	return ret;
}

/* Encoding a profile over a full ring takes tens of MB for a moment: at most MAX_ENCODERS at
 * once, the others wait their turn, so memory stays bounded however many clients ask. */
#define MAX_ENCODERS 2
/* Waiting /debug/pprof/profile requests hold a connection each: keep most connections free. */
#define MAX_CAPTURES	16
#define MAX_CONNECTIONS 256

static void encoder_enter(struct http_api *h)
{
	pthread_mutex_lock(&h->mu);
	while (h->encoders >= MAX_ENCODERS)
		pthread_cond_wait(&h->encoder_free, &h->mu);
	h->encoders++;
	pthread_mutex_unlock(&h->mu);
}

static void encoder_leave(struct http_api *h)
{
	pthread_mutex_lock(&h->mu);
	h->encoders--;
	pthread_cond_signal(&h->encoder_free);
	pthread_mutex_unlock(&h->mu);
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

/* GET /api/v1/profile?request=SPAN_ID[&type=]: the profile of one span of the windows that keep
 * their per-sample records (type: PROFILE_WALL unless given). */
static enum MHD_Result handle_request_profile(struct MHD_Connection *conn, struct http_api *h,
					      const struct params *p)
{
	static const char *const alone[] = {"last", "from", "to", "pid", "comm", "stage"};
	const char *id = param(p, "request");
	enum profile_type t = PROFILE_WALL;
	char msg[512];
	struct window_ring *ring;
	struct window **ws, *where = NULL;
	const struct tp_span *sp;
	struct profile_summary sum;
	char v[ECHO_MAX * 4 + 8];
	uint8_t *buf = NULL;
	size_t n, len = 0;
	int err;

	for (size_t i = 0; i < sizeof(alone) / sizeof(alone[0]); i++)
		if (param(p, alone[i]))
			return send_error(
			    conn, 400,
			    "%s: not with request= (a span is one thread over its own "
			    "time); give request= alone, or with type=",
			    alone[i]);
	if (parse_type(p, &t, msg, sizeof(msg)))
		return send_error(conn, 400, "%s", msg);
	if (!stages__span_id_valid(id))
		return send_error(conn, 400,
				  "request: '%s' is not a span id; give the id of a span as "
				  "/api/v1/spans lists it (TID-START_NS, e.g. 4242-1234567890)",
				  printable(id, v, sizeof(v), ECHO_MAX));
	encoder_enter(h);
	collector__rdlock(h->ctx->collector);
	ring = collector__ring(h->ctx->collector);
	n = window_ring__count(ring) + window_ring__nr_pinned(ring);
	ws = calloc(n + 1, sizeof(*ws));
	if (!ws) {
		collector__unlock(h->ctx->collector);
		encoder_leave(h);
		return send_error(conn, 500, "out of memory");
	}
	n = window_ring__with_records(ring, ws, n);
	sp = stages__find_span(ws, n, id, &where);
	if (!sp) {
		collector__unlock(h->ctx->collector);
		encoder_leave(h);
		free(ws);
		return send_error(conn, 404,
				  "request: no span '%s' here; spans are kept for request profiles "
				  "in the current and the previous window and in pinned (spike) "
				  "windows: list them with /api/v1/spans",
				  printable(id, v, sizeof(v), ECHO_MAX));
	}
	err = query__request_profile(h->ctx, sp, where->wall_offset_ns, ws, n, t, &buf, &len, &sum);
	collector__unlock(h->ctx->collector);
	encoder_leave(h);
	free(ws);
	return send_pprof(conn, err, buf, len, &sum);
}

static enum MHD_Result handle_profile(struct MHD_Connection *conn, struct http_api *h)
{
	static const char *const allowed[] = {"type", "last",  "from",	  "to", "pid",
					      "comm", "stage", "request", NULL};
	struct params p = {.allowed = allowed};
	struct profile_filter filter;
	struct query_range range;
	struct window **ws;
	enum MHD_Result ret;
	char err[512];
	size_t n = 0;

	if (get_params(conn, &p))
		return send_error(conn, 400, "%s", p.err);
	if (param(&p, "request"))
		return handle_request_profile(conn, h, &p);
	if (parse_filter(&p, &filter, err, sizeof(err)) ||
	    parse_range(&p, &range, err, sizeof(err)) ||
	    parse_type(&p, &filter.type, err, sizeof(err)))
		return send_error(conn, 400, "%s", err);
	encoder_enter(h);
	collector__rdlock(h->ctx->collector);
	if (parse_stage(&p, h->ctx, &filter, err, sizeof(err))) {
		collector__unlock(h->ctx->collector);
		encoder_leave(h);
		return send_error(conn, 400, "%s", err);
	}
	ws = select_windows(h->ctx, &range, &n);
	if (!ws) {
		collector__unlock(h->ctx->collector);
		encoder_leave(h);
		return send_error(conn, 500, "out of memory");
	}
	ret = send_profile(conn, h, ws, n, &filter, &range);
	encoder_leave(h);
	free(ws);
	return ret;
}

/* Whether the client of conn is still there (it may hang up while we wait for a capture). */
static bool client_connected(void *arg)
{
	struct MHD_Connection *conn = arg;
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	struct pollfd pfd;

	if (!ci)
		return true;
	pfd = (struct pollfd){.fd = ci->connect_fd, .events = POLLIN | POLLRDHUP};
	if (poll(&pfd, 1, 0) <= 0)
		return true;
	return !(pfd.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

static enum MHD_Result handle_debug_profile(struct MHD_Connection *conn, struct http_api *h)
{
	static const char *const allowed[] = {"seconds", "pid", "comm", "stage", NULL};
	struct params p = {.allowed = allowed};
	struct profile_filter filter;
	const char *seconds;
	uint64_t secs = 30;
	struct window *w;
	enum MHD_Result ret;
	char err[512], v[ECHO_MAX * 4 + 8];
	bool busy;
	int rc;

	if (get_params(conn, &p))
		return send_error(conn, 400, "%s", p.err);
	seconds = param(&p, "seconds");
	if (seconds && tp_parse_uint(seconds, 1, MAX_PROFILE_SECONDS, &secs))
		return send_error(conn, 400,
				  "seconds: '%s' is not allowed; give whole seconds from 1 "
				  "to %d",
				  printable(seconds, v, sizeof(v), ECHO_MAX), MAX_PROFILE_SECONDS);
	if (parse_filter(&p, &filter, err, sizeof(err)))
		return send_error(conn, 400, "%s", err);
	collector__rdlock(h->ctx->collector);
	rc = parse_stage(&p, h->ctx, &filter, err, sizeof(err));
	collector__unlock(h->ctx->collector);
	if (rc)
		return send_error(conn, 400, "%s", err);
	pthread_mutex_lock(&h->mu);
	busy = h->captures >= MAX_CAPTURES;
	if (!busy)
		h->captures++;
	pthread_mutex_unlock(&h->mu);
	if (busy)
		return send_error(
		    conn, 503,
		    "seconds: %d profiles are being taken already; try again when one "
		    "is done, or use /api/v1/profile?last=... on the stored windows",
		    MAX_CAPTURES);
	w = collector__capture_begin(h->ctx->collector, secs * NSEC_PER_SEC);
	rc = w ? collector__capture_wait(h->ctx->collector, w, client_connected, conn) : -ENOMEM;
	if (!rc) {
		w->wall_offset_ns = collector__wall_offset_ns(h->ctx->collector);
		w->closed = true;
		encoder_enter(h);
		collector__rdlock(h->ctx->collector);
		ret = send_profile(conn, h, &w, 1, &filter, NULL);
		encoder_leave(h);
	} else if (rc == -ENOMEM) {
		ret = send_error(conn, 500, "out of memory");
	} else if (rc == -ECONNRESET) {
		ret = MHD_NO; /* the client hung up: nobody to answer */
	} else {
		ret = send_error(conn, 503, "tailprofd is shutting down");
	}
	if (w)
		collector__capture_end(h->ctx->collector, w);
	pthread_mutex_lock(&h->mu);
	h->captures--;
	pthread_mutex_unlock(&h->mu);
	return ret;
}

static enum MHD_Result handle_windows(struct MHD_Connection *conn, struct http_api *h)
{
	static const char *const allowed[] = {"last", "from", "to", NULL};
	struct params p = {.allowed = allowed};
	struct query_range range;
	struct window **ws;
	char err[512], *body;
	size_t n = 0;

	if (get_params(conn, &p))
		return send_error(conn, 400, "%s", p.err);
	if (parse_range(&p, &range, err, sizeof(err)))
		return send_error(conn, 400, "%s", err);
	collector__rdlock(h->ctx->collector);
	ws = select_windows(h->ctx, &range, &n);
	body = ws ? query__windows_json(h->ctx, ws, n) : NULL;
	collector__unlock(h->ctx->collector);
	free(ws);
	return send_json(conn, 200, body);
}

static enum MHD_Result handle_gc(struct MHD_Connection *conn, struct http_api *h)
{
	static const char *const allowed[] = {"last", "from", "to", "pid", "runtime", NULL};
	struct params p = {.allowed = allowed};
	struct gc_filter f = {0};
	struct query_range range;
	struct window **ws;
	const char *pid, *rt;
	char err[512], v[ECHO_MAX * 4 + 8], *body;
	size_t n = 0;

	if (get_params(conn, &p))
		return send_error(conn, 400, "%s", p.err);
	if (parse_range(&p, &range, err, sizeof(err)))
		return send_error(conn, 400, "%s", err);
	pid = param(&p, "pid");
	if (pid) {
		uint64_t x;

		if (tp_parse_uint(pid, 1, INT32_MAX, &x))
			return send_error(conn, 400,
					  "pid: '%s' is not a process id (a positive integer)",
					  printable(pid, v, sizeof(v), ECHO_MAX));
		f.has_pid = true;
		f.pid = x;
	}
	rt = param(&p, "runtime");
	if (rt) {
		for (unsigned r = 1; r < TP_GC_RUNTIME_NR; r++)
			if (!strcmp(rt, gc_runtime_name(r)))
				f.runtime = r;
		if (!f.runtime)
			return send_error(conn, 400, "runtime: '%s' is not one of jvm, python, go",
					  printable(rt, v, sizeof(v), ECHO_MAX));
	}
	collector__rdlock(h->ctx->collector);
	ws = select_windows(h->ctx, &range, &n);
	body = ws ? query__gc_json(h->ctx, ws, n, &f) : NULL;
	collector__unlock(h->ctx->collector);
	free(ws);
	return send_json(conn, 200, body);
}

/* GET /api/v1/stages and /api/v1/spans. */
static enum MHD_Result handle_stages(struct MHD_Connection *conn, struct http_api *h, bool spans)
{
	static const char *const allowed_stages[] = {"last", "from", "to", NULL};
	static const char *const allowed_spans[] = {"last", "from", "to", "stage", NULL};
	struct params p = {.allowed = spans ? allowed_spans : allowed_stages};
	struct profile_filter filter = {};
	struct query_range range;
	struct window **ws;
	char err[1024], *body = NULL;
	size_t n = 0;

	if (get_params(conn, &p))
		return send_error(conn, 400, "%s", p.err);
	if (parse_range(&p, &range, err, sizeof(err)))
		return send_error(conn, 400, "%s", err);
	collector__rdlock(h->ctx->collector);
	if (spans && parse_stage(&p, h->ctx, &filter, err, sizeof(err))) {
		collector__unlock(h->ctx->collector);
		return send_error(conn, 400, "%s", err);
	}
	ws = select_windows(h->ctx, &range, &n);
	if (ws && h->ctx->stages)
		body = spans ? stages__spans_json(h->ctx->stages, ws, n,
						  filter.has_stage ? filter.stage_mask : ~0ULL)
			     : stages__stages_json(h->ctx->stages, ws, n);
	else if (ws)
		body = strdup(spans ? "{\"spans\":[]}" : "{\"stages\":[],\"windows\":[]}");
	collector__unlock(h->ctx->collector);
	free(ws);
	return send_json(conn, 200, body);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
			      const char *method, const char *version, const char *upload_data,
			      size_t *upload_size, void **con_cls)
{
	static const char *const none[] = {NULL};
	struct http_api *h = cls;
	const struct query_ctx *ctx = h->ctx;
	struct params p = {.allowed = none};
	struct collector_status st;
	char *body, u[ECHO_MAX * 4 + 8];

	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return send_error(conn, 405, "%s: only GET is served",
				  printable(method, u, sizeof(u), ECHO_MAX));
	if (!strcmp(url, "/api/v1/windows"))
		return handle_windows(conn, h);
	if (!strcmp(url, "/api/v1/profile"))
		return handle_profile(conn, h);
	if (!strcmp(url, "/api/v1/gc"))
		return handle_gc(conn, h);
	if (!strcmp(url, "/api/v1/stages"))
		return handle_stages(conn, h, false);
	if (!strcmp(url, "/api/v1/spans"))
		return handle_stages(conn, h, true);
	if (!strcmp(url, "/debug/pprof/profile"))
		return handle_debug_profile(conn, h);
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
		if (get_params(conn, &p))
			return send_error(conn, 400, "%s", p.err);
		collector__rdlock(ctx->collector);
		body = query__status_json(ctx);
		collector__unlock(ctx->collector);
		return send_json(conn, 200, body);
	}
	return send_error(conn, 404,
			  "%s: no such path; see /api/v1/status, /api/v1/windows, "
			  "/api/v1/profile, /api/v1/stages, /api/v1/spans, /api/v1/gc, "
			  "/debug/pprof/profile, /metrics, /healthz",
			  printable(url, u, sizeof(u), ECHO_MAX));
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
	pthread_mutex_init(&h->mu, NULL);
	pthread_cond_init(&h->encoder_free, NULL);
	h->mhd = MHD_start_daemon(
	    MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0,
	    NULL, NULL, handle, h,
	    /* the logger first, so that no message goes to MHD's own */
	    MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, MHD_OPTION_LISTEN_SOCKET, listen_fd,
	    MHD_OPTION_CONNECTION_LIMIT, (unsigned int)MAX_CONNECTIONS,
	    /* a connection that sends nothing for 10 s is closed: idle clients cannot hold the
	     * slots for long */
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)10, MHD_OPTION_END);
	if (!h->mhd) {
		free(h);
		errno = EIO;
		return NULL;
	}
	return h;
}

void http_api__stop(struct http_api *h)
{
	const union MHD_DaemonInfo *info;

	if (!h)
		return;
	/* stop accepting, then let requests in flight (e.g. a /debug/pprof/profile that just got
	 * its 503) finish sending for up to 2 s */
	MHD_quiesce_daemon(h->mhd);
	for (int i = 0; i < 200; i++) {
		info = MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
		if (!info || !info->num_connections)
			break;
		usleep(10000);
	}
	MHD_stop_daemon(h->mhd);
	pthread_mutex_destroy(&h->mu);
	pthread_cond_destroy(&h->encoder_free);
	free(h);
}
