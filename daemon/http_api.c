// SPDX-License-Identifier: GPL-2.0-only
/* HTTP endpoints: /api/v1/{status,windows,profile,gc,stages,spans,spikes}, /debug/pprof/profile,
 * /healthz, /metrics, and the routing of every request; the write endpoints POST /api/v1/marks
 * and /api/v1/alertmanager are http_write.c's, compare and snapshots http_compare.c's. */
#include "http_api_internal.h"

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

#include "access.h"
#include "collector.h"
#include "config.h"
#include "gc_discovery.h"
#include "http_compare.h"
#include "http_util.h"
#include "log.h"
#include "marks.h"
#include "query.h"
#include "spike_file.h"
#include "spikes.h"
#include "stages.h"
#include "sysinfo.h"
#include "tailprof.h"
#include "timeparse.h"
#include "utf8.h"

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

/* Parses pid=, comm= and container= into f. Returns 0, or -1 after writing the error into err. */
int parse_filter(const struct params *p, struct profile_filter *f, char *err, size_t len)
{
	const char *pid = http_param(p, "pid");
	char v[ECHO_MAX * 4 + 8];

	memset(f, 0, sizeof(*f));
	f->comm = http_param(p, "comm");
	f->container = http_param(p, "container");
	if (f->container) {
		size_t n = strlen(f->container);

		if (n < 12 || n > 64 || strspn(f->container, "0123456789abcdef") != n) {
			snprintf(err, len,
				 "container: '%s' is not a container ID; give its 64 hex digits or "
				 "at least their first 12, lower case",
				 http_printable(f->container, v, sizeof(v), ECHO_MAX));
			return -1;
		}
	}
	if (pid) {
		uint64_t n;

		if (tp_parse_uint(pid, 1, INT32_MAX, &n)) {
			snprintf(err, len, "pid: '%s' is not a process id (a positive integer)",
				 http_printable(pid, v, sizeof(v), ECHO_MAX));
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
		/* the kernel keeps its first 15 bytes, and a character that cut splits is dropped
		 * from the names tailprofd shows (task__sanitize_name): those are what match */
		int keep = (int)utf8_cut(f->comm, strlen(f->comm), TP_COMM_LEN - 1);

		snprintf(err, len,
			 "comm: '%s' is longer than the kernel keeps (%d bytes); use what it "
			 "keeps: '%.*s'",
			 http_printable(f->comm, v, sizeof(v), ECHO_MAX), TP_COMM_LEN - 1, keep,
			 f->comm);
		return -1;
	}
	return 0;
}

/* Parses type= into *t (left as it is when not given). Returns 0, or -1 after writing the error
 * into err. */
int parse_type(const struct params *p, enum profile_type *t, char *err, size_t len)
{
	const char *type = http_param(p, "type");
	char v[ECHO_MAX * 4 + 8];

	if (!type || !query__parse_type(type, t))
		return 0;
	snprintf(err, len, "type: '%s' is not a profile type; allowed: cpu, offcpu, wall",
		 http_printable(type, v, sizeof(v), ECHO_MAX));
	return -1;
}

/* Resolves stage=NAME into f (under the read lock: the registry changes on reload). Returns 0,
 * or -1 after writing the error into err. */
int parse_stage(const struct params *p, const struct query_ctx *ctx, struct profile_filter *f,
		char *err, size_t len)
{
	const char *stage = http_param(p, "stage");
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
		 http_printable(stage, v, sizeof(v), ECHO_MAX), known);
	return -1;
}

/* ---- handlers ---- */

/* A response of gzip pprof buf[0..len) (taken over, freed on failure), or NULL. */
static struct MHD_Response *pprof_response(uint8_t *buf, size_t len)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, buf, MHD_RESPMEM_MUST_FREE);

	if (!r) {
		free(buf);
		return NULL;
	}
	MHD_add_response_header(r, "Content-Type", "application/octet-stream");
	MHD_add_response_header(r, "Content-Disposition", "attachment; filename=\"profile.pb.gz\"");
	return r;
}

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
		return http_send_error(conn, 500, "cannot encode the profile: %s", strerror(-err));
	r = pprof_response(buf, len);
	if (!r)
		return MHD_NO;
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
#define MAX_CAPTURES 16

void encoder_enter(struct http_api *h)
{
	pthread_mutex_lock(&h->mu);
	while (h->encoders >= MAX_ENCODERS)
		pthread_cond_wait(&h->encoder_free, &h->mu);
	h->encoders++;
	pthread_mutex_unlock(&h->mu);
}

void encoder_leave(struct http_api *h)
{
	pthread_mutex_lock(&h->mu);
	h->encoders--;
	pthread_cond_signal(&h->encoder_free);
	pthread_mutex_unlock(&h->mu);
}

struct window **select_windows(const struct query_ctx *ctx, const struct query_range *range,
			       size_t *n)
{
	struct window_ring *ring = collector__ring(ctx->collector);
	struct window **ws = calloc(window_ring__count(ring) + 1, sizeof(*ws));

	if (ws)
		*n = query__select(ring, range, sysinfo__mono_ns(), ws, window_ring__count(ring));
	return ws;
}

/* Whether s is a spike id as the API takes it: the rule of the store's file names, 1-64
 * characters of [A-Za-z0-9._-] and not "." or "..". */
bool valid_spike_id(const char *s)
{
	return spike_file__valid_name(s, SPIKE_ID_LEN - 1);
}

/* A spike read back from the state directory: its stored profile. */
static enum MHD_Result stored_spike_profile(struct MHD_Connection *conn, struct http_api *h,
					    const char *id, const struct profile_filter *filter,
					    bool baseline)
{
	static const char *const types[] = {"cpu", "offcpu", "wall"};
	struct MHD_Response *r;
	enum MHD_Result ret;
	uint8_t *buf = NULL;
	size_t len = 0;
	int rc;

	if (filter->has_pid || filter->comm)
		return http_send_error(
		    conn, 400,
		    "spike '%s' was read back from the state directory: its profiles "
		    "are stored whole; drop pid= and comm=",
		    id);
	rc = spikes__stored_profile(h->ctx->spikes, id, types[filter->type], filter->has_stage,
				    baseline, &buf, &len);
	if (rc == -ENOENT)
		return http_send_error(
		    conn, 404, "spike '%s' (from the state directory) has no stored %s%s profile%s",
		    id, types[filter->type], baseline ? " baseline" : "",
		    filter->has_stage ? " of its stage" : "");
	if (rc)
		return http_send_error(conn, 500,
				       "spike '%s': its stored profile cannot be read (%s)", id,
				       strerror(-rc));
	r = pprof_response(buf, len);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, "X-Tailprof-Stored", "1");
	ret = MHD_queue_response(conn, 200, r);
	MHD_destroy_response(r);
	return ret;
}

/* GET /api/v1/profile?spike=ID[&baseline=1]: the windows of a spike or of its baseline. Called
 * under the read lock and the encoder slot, which it releases. */
static enum MHD_Result spike_profile(struct MHD_Connection *conn, struct http_api *h,
				     const struct params *p, struct profile_filter *filter)
{
	const char *name = http_param(p, "spike"), *baseline = http_param(p, "baseline");
	struct window_ring *ring = collector__ring(h->ctx->collector);
	struct window **ws = NULL;
	char id[SPIKE_ID_LEN], v[ECHO_MAX * 4 + 8];
	size_t n = 0, max = window_ring__count(ring) + window_ring__nr_pinned(ring) + 1;
	bool base = baseline && !strcmp(baseline, "1");
	int rc;

	if (baseline && strcmp(baseline, "1") && strcmp(baseline, "0")) {
		collector__unlock(h->ctx->collector);
		encoder_leave(h);
		return http_send_error(conn, 400, "baseline: '%s' is not 0 or 1",
				       http_printable(baseline, v, sizeof(v), ECHO_MAX));
	}
	rc = spikes__resolve(h->ctx->spikes, name, NULL, id);
	if (!rc && (ws = calloc(max, sizeof(*ws))))
		rc = spikes__windows(h->ctx->spikes, ring, id, base, ws, max, &n);
	if (rc == -ESTALE && filter->has_stage) {
		const char *stage = spikes__stage(h->ctx->spikes, id);

		/* stored profiles are of every process, or of the spike's own stage */
		if (!stage || !*stage ||
		    stages__mask(h->ctx->stages, stage) != filter->stage_mask) {
			collector__unlock(h->ctx->collector);
			encoder_leave(h);
			free(ws);
			return http_send_error(
			    conn, 400,
			    "stage: spike '%s' was read back from the state directory "
			    "with profiles of every process%s%s; drop stage=%s%s",
			    id, stage && *stage ? " and of its stage " : "", stage ? stage : "",
			    stage && *stage ? " or give stage=" : "", stage ? stage : "");
		}
	}
	if (rc == -ESTALE) {
		collector__unlock(h->ctx->collector);
		encoder_leave(h);
		free(ws);
		return stored_spike_profile(conn, h, id, filter, base);
	}
	if (rc || !ws) {
		collector__unlock(h->ctx->collector);
		encoder_leave(h);
		free(ws);
		if (!ws && !rc)
			return http_send_error(conn, 500, "out of memory");
		return http_send_error(
		    conn, 404, "spike: no spike '%s' is held; GET /api/v1/spikes lists them",
		    http_printable(name, v, sizeof(v), ECHO_MAX));
	}
	if (!n) {
		collector__unlock(h->ctx->collector);
		encoder_leave(h);
		free(ws);
		return http_send_error(
		    conn, 404,
		    "spike '%s': none of its %s windows is held any more (the ring "
		    "moved on and its pins were released)",
		    id, base ? "baseline" : "spike");
	}
	{
		enum MHD_Result ret = send_profile(conn, h, ws, n, filter, NULL);

		encoder_leave(h);
		free(ws);
		return ret;
	}
}

/* GET /api/v1/profile?request=SPAN_ID[&type=]: the profile of one span of the windows that keep
 * their per-sample records (type: PROFILE_WALL unless given). */
static enum MHD_Result handle_request_profile(struct MHD_Connection *conn, struct http_api *h,
					      const struct params *p)
{
	static const char *const alone[] = {"last", "from",	 "to",	 "pid",
					    "comm", "container", "stage"};
	const char *id = http_param(p, "request");
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
		if (http_param(p, alone[i]))
			return http_send_error(
			    conn, 400,
			    "%s: not with request= (a span is one thread over its own "
			    "time); give request= alone, or with type=",
			    alone[i]);
	if (parse_type(p, &t, msg, sizeof(msg)))
		return http_send_error(conn, 400, "%s", msg);
	if (!stages__span_id_valid(id))
		return http_send_error(
		    conn, 400,
		    "request: '%s' is not a span id; give the id of a span as "
		    "/api/v1/spans lists it (TID-START_NS, e.g. 4242-1234567890)",
		    http_printable(id, v, sizeof(v), ECHO_MAX));
	encoder_enter(h);
	collector__rdlock(h->ctx->collector);
	ring = collector__ring(h->ctx->collector);
	n = window_ring__count(ring) + window_ring__nr_pinned(ring);
	ws = calloc(n + 1, sizeof(*ws));
	if (!ws) {
		collector__unlock(h->ctx->collector);
		encoder_leave(h);
		return http_send_error(conn, 500, "out of memory");
	}
	n = window_ring__with_records(ring, ws, n);
	sp = stages__find_span(ws, n, id, &where);
	if (!sp) {
		collector__unlock(h->ctx->collector);
		encoder_leave(h);
		free(ws);
		return http_send_error(
		    conn, 404,
		    "request: no span '%s' here; spans are kept for request profiles "
		    "in the current and the previous window and in pinned (spike) "
		    "windows: list them with /api/v1/spans",
		    http_printable(id, v, sizeof(v), ECHO_MAX));
	}
	err = query__request_profile(h->ctx, sp, where->wall_offset_ns, ws, n, t, &buf, &len, &sum);
	collector__unlock(h->ctx->collector);
	encoder_leave(h);
	free(ws);
	return send_pprof(conn, err, buf, len, &sum);
}

static enum MHD_Result handle_profile(struct MHD_Connection *conn, struct http_api *h)
{
	static const char *const allowed[] = {"type",  "last",	   "from",	"to",
					      "pid",   "comm",	   "container", "stage",
					      "spike", "baseline", "request",	NULL};
	struct params p = {.allowed = allowed};
	struct profile_filter filter;
	struct query_range range;
	struct window **ws;
	enum MHD_Result ret;
	char err[512], v[ECHO_MAX * 4 + 8];
	size_t n = 0;

	if (http_get_params(conn, &p))
		return http_send_error(conn, 400, "%s", p.err);
	if (http_param(&p, "request")) {
		if (http_param(&p, "spike") || http_param(&p, "baseline"))
			return http_send_error(
			    conn, 400, "request: not with spike= or baseline=; give one of them");
		return handle_request_profile(conn, h, &p);
	}
	if (parse_filter(&p, &filter, err, sizeof(err)) ||
	    http_parse_range(&p, &range, err, sizeof(err)) ||
	    parse_type(&p, &filter.type, err, sizeof(err)))
		return http_send_error(conn, 400, "%s", err);
	if (http_param(&p, "spike") &&
	    (http_param(&p, "last") || http_param(&p, "from") || http_param(&p, "to")))
		return http_send_error(
		    conn, 400, "spike: a spike names its own windows; drop last=, from= and to=");
	if (http_param(&p, "baseline") && !http_param(&p, "spike"))
		return http_send_error(conn, 400, "baseline: only with spike=ID");
	if (http_param(&p, "spike") && !valid_spike_id(http_param(&p, "spike")))
		return http_send_error(
		    conn, 400,
		    "spike: '%s' is not a spike id (1-64 characters of "
		    "A-Z a-z 0-9 . _ -) or latest",
		    http_printable(http_param(&p, "spike"), v, sizeof(v), ECHO_MAX));
	encoder_enter(h);
	collector__rdlock(h->ctx->collector);
	if (parse_stage(&p, h->ctx, &filter, err, sizeof(err))) {
		collector__unlock(h->ctx->collector);
		encoder_leave(h);
		return http_send_error(conn, 400, "%s", err);
	}
	if (http_param(&p, "spike"))
		return spike_profile(conn, h, &p, &filter);
	ws = select_windows(h->ctx, &range, &n);
	if (!ws) {
		collector__unlock(h->ctx->collector);
		encoder_leave(h);
		return http_send_error(conn, 500, "out of memory");
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
	static const char *const allowed[] = {"seconds", "pid", "comm", "container", "stage", NULL};
	struct params p = {.allowed = allowed};
	struct profile_filter filter;
	const char *seconds;
	uint64_t secs = 30;
	struct window *w;
	enum MHD_Result ret;
	char err[512], v[ECHO_MAX * 4 + 8];
	bool busy;
	int rc;

	if (http_get_params(conn, &p))
		return http_send_error(conn, 400, "%s", p.err);
	seconds = http_param(&p, "seconds");
	if (seconds && tp_parse_uint(seconds, 1, MAX_PROFILE_SECONDS, &secs))
		return http_send_error(conn, 400,
				       "seconds: '%s' is not allowed; give whole seconds from 1 "
				       "to %d",
				       http_printable(seconds, v, sizeof(v), ECHO_MAX),
				       MAX_PROFILE_SECONDS);
	if (parse_filter(&p, &filter, err, sizeof(err)))
		return http_send_error(conn, 400, "%s", err);
	collector__rdlock(h->ctx->collector);
	rc = parse_stage(&p, h->ctx, &filter, err, sizeof(err));
	collector__unlock(h->ctx->collector);
	if (rc)
		return http_send_error(conn, 400, "%s", err);
	pthread_mutex_lock(&h->mu);
	busy = h->captures >= MAX_CAPTURES;
	if (!busy)
		h->captures++;
	pthread_mutex_unlock(&h->mu);
	if (busy)
		return http_send_error(
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
		ret = http_send_error(conn, 500, "out of memory");
	} else if (rc == -ECONNRESET) {
		ret = MHD_NO; /* the client hung up: nobody to answer */
	} else {
		ret = http_send_error(conn, 503, "tailprofd is shutting down");
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

	if (http_get_params(conn, &p))
		return http_send_error(conn, 400, "%s", p.err);
	if (http_parse_range(&p, &range, err, sizeof(err)))
		return http_send_error(conn, 400, "%s", err);
	collector__rdlock(h->ctx->collector);
	ws = select_windows(h->ctx, &range, &n);
	body = ws ? query__windows_json(h->ctx, ws, n) : NULL;
	collector__unlock(h->ctx->collector);
	free(ws);
	return http_send_json(conn, 200, body);
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

	if (http_get_params(conn, &p))
		return http_send_error(conn, 400, "%s", p.err);
	if (http_parse_range(&p, &range, err, sizeof(err)))
		return http_send_error(conn, 400, "%s", err);
	pid = http_param(&p, "pid");
	if (pid) {
		uint64_t x;

		if (tp_parse_uint(pid, 1, INT32_MAX, &x))
			return http_send_error(conn, 400,
					       "pid: '%s' is not a process id (a positive integer)",
					       http_printable(pid, v, sizeof(v), ECHO_MAX));
		f.has_pid = true;
		f.pid = x;
	}
	rt = http_param(&p, "runtime");
	if (rt) {
		for (unsigned r = 1; r < TP_GC_RUNTIME_NR; r++)
			if (!strcmp(rt, gc_runtime_name(r)))
				f.runtime = r;
		if (!f.runtime)
			return http_send_error(conn, 400,
					       "runtime: '%s' is not one of jvm, python, go",
					       http_printable(rt, v, sizeof(v), ECHO_MAX));
	}
	collector__rdlock(h->ctx->collector);
	ws = select_windows(h->ctx, &range, &n);
	body = ws ? query__gc_json(h->ctx, ws, n, &f) : NULL;
	collector__unlock(h->ctx->collector);
	free(ws);
	return http_send_json(conn, 200, body);
}

/* GET /api/v1/spikes and /api/v1/spikes/ID. */
static enum MHD_Result handle_spikes(struct MHD_Connection *conn, struct http_api *h,
				     const char *id)
{
	static const char *const allowed[] = {"stage", "last", "from", "to", NULL};
	static const char *const none[] = {NULL};
	struct params p = {.allowed = id ? none : allowed};
	struct spike_filter f = {.from_unix_ns = INT64_MIN, .to_unix_ns = INT64_MAX};
	struct query_range range;
	struct window_ring *ring;
	char err[512], v[ECHO_MAX * 4 + 8], rid[SPIKE_ID_LEN];
	char *body;
	bool found;

	if (http_get_params(conn, &p))
		return http_send_error(conn, 400, "%s", p.err);
	if (id && !valid_spike_id(id))
		return http_send_error(
		    conn, 400,
		    "'%s' is not a spike id (1-64 characters of A-Z a-z 0-9 . _ -) "
		    "or latest",
		    http_printable(id, v, sizeof(v), ECHO_MAX));
	if (!id) {
		if (http_parse_range(&p, &range, err, sizeof(err)))
			return http_send_error(conn, 400, "%s", err);
		if (range.last_ns)
			f.from_unix_ns = sysinfo__real_ns() - (int64_t)range.last_ns;
		if (range.has_from)
			f.from_unix_ns = range.from_unix_ns;
		if (range.has_to)
			f.to_unix_ns = range.to_unix_ns;
		f.stage = http_param(&p, "stage");
	}
	collector__rdlock(h->ctx->collector);
	ring = collector__ring(h->ctx->collector);
	if (f.stage && (!config__valid_stage_name(f.stage) ||
			(!stages__id(h->ctx->stages, f.stage) &&
			 !spikes__stage_held(h->ctx->spikes, f.stage)))) {
		char known[512];

		stages__names_list(h->ctx->stages, known, sizeof(known));
		collector__unlock(h->ctx->collector);
		return http_send_error(
		    conn, 400,
		    "stage: '%s' is neither a known stage nor the stage of a spike "
		    "held; known: %s",
		    http_printable(f.stage, v, sizeof(v), ECHO_MAX), known);
	}
	if (!id) {
		body = spikes__list_json(h->ctx->spikes, ring, &f);
		collector__unlock(h->ctx->collector);
		return http_send_json(conn, 200, body);
	}
	if (spikes__resolve(h->ctx->spikes, id, NULL, rid)) {
		collector__unlock(h->ctx->collector);
		return http_send_error(conn, 404,
				       "no spike '%s' is held; GET /api/v1/spikes lists them", id);
	}
	body = spikes__get_json(h->ctx->spikes, ring, rid, &found);
	collector__unlock(h->ctx->collector);
	return http_send_json(conn, 200, body);
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

	if (http_get_params(conn, &p))
		return http_send_error(conn, 400, "%s", p.err);
	if (http_parse_range(&p, &range, err, sizeof(err)))
		return http_send_error(conn, 400, "%s", err);
	collector__rdlock(h->ctx->collector);
	if (spans && parse_stage(&p, h->ctx, &filter, err, sizeof(err))) {
		collector__unlock(h->ctx->collector);
		return http_send_error(conn, 400, "%s", err);
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
	return http_send_json(conn, 200, body);
}

/* Whether url is served without a token: /healthz (it says ready or not, nothing more: probes
 * need no token), and the page's static files / and /ui/FILE (the same bytes for everyone, built
 * into the binary: they carry no data; the page asks for the token when its first API call gets
 * 401). Everything else, /api/, /metrics and /debug/ included, needs it. */
static bool public_path(const char *url)
{
	return !strcmp(url, "/healthz") || !strcmp(url, "/") ||
	       (!strncmp(url, "/ui/", 4) && url[4] && !strchr(url + 4, '/'));
}

/* Whether conn may have url: always on the unix socket (its mode and group guard it) and without
 * a token; else a public_path or a request with the token. Every path goes through here, the
 * write endpoints and pages included. */
static bool authorized(const struct http_api *h, struct MHD_Connection *conn, const char *url)
{
	const union MHD_ConnectionInfo *ci;

	if (!h->token || public_path(url))
		return true;
	/* by the connection's own socket: no state shared with the threads that start servers */
	ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (ci && access__fd_is_unix(ci->connect_fd))
		return true;
	return access__bearer_ok(
	    MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION),
	    h->token);
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

	if (!authorized(h, conn, url))
		return http_send_error_hdr(
		    conn, 401, (struct header){"WWW-Authenticate", "Bearer"},
		    "this listener needs the header Authorization: Bearer TOKEN, the token of "
		    "tailprofd's --auth-token-file (tailprof --token-file FILE); only /healthz and "
		    "the "
		    "page's files are served without it");
	for (int e = 0; e < HTTP_WRITE_ENDPOINTS; e++)
		if (!strcmp(url, http_write_paths[e]))
			return http_api_handle_write(conn, h, e, method, upload_data, upload_size,
						     con_cls);
	if (http_compare__serves(url))
		return http_compare__handle(conn, ctx, url, method);
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return http_send_error_hdr(conn, 405, (struct header){"Allow", "GET, HEAD"},
					   "%s: only GET is served here",
					   http_printable(method, u, sizeof(u), ECHO_MAX));
	if (http_views__serves(url))
		return http_views__handle(conn, h, url);
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
	if (!strcmp(url, "/api/v1/spikes") && ctx->spikes)
		return handle_spikes(conn, h, NULL);
	if (!strncmp(url, "/api/v1/spikes/", 15) && ctx->spikes)
		return handle_spikes(conn, h, url + 15);
	if (!strcmp(url, "/debug/pprof/profile"))
		return handle_debug_profile(conn, h);
	if (!strcmp(url, "/healthz")) {
		collector__rdlock(ctx->collector);
		collector__status(ctx->collector, &st);
		collector__unlock(ctx->collector);
		if (st.healthy)
			return http_send_buf(conn, 200, "text/plain", "ok\n", 3, false);
		/* drains began and stopped: a thread is stuck (the log says more) */
		return st.drains ? http_send_buf(conn, 503, "text/plain", "stalled\n", 8, false)
				 : http_send_buf(conn, 503, "text/plain", "starting\n", 9, false);
	}
	if (!strcmp(url, "/metrics")) {
		struct http_write_counts writes;

		collector__rdlock(ctx->collector);
		body = query__metrics_text(ctx);
		collector__unlock(ctx->collector);
		http_api__write_counts(h, &writes);
		if (body && http_api__write_metrics_text(&writes, &body)) {
			free(body);
			body = NULL;
		}
		if (!body)
			return http_send_error(conn, 500, "out of memory");
		return http_send_buf(conn, 200, "text/plain; version=0.0.4", body, strlen(body),
				     true);
	}
	if (!strcmp(url, "/api/v1/status")) {
		if (http_get_params(conn, &p))
			return http_send_error(conn, 400, "%s", p.err);
		collector__rdlock(ctx->collector);
		body = query__status_json(ctx);
		collector__unlock(ctx->collector);
		return http_send_json(conn, 200, body);
	}
	return http_send_error(
	    conn, 404,
	    "%s: no such path; see /api/v1/status, /api/v1/windows, "
	    "/api/v1/profile, /api/v1/stages, /api/v1/spans, /api/v1/spikes, "
	    "/api/v1/gc, /api/v1/compare, /api/v1/snapshots, /debug/pprof/profile, "
	    "/metrics, /healthz; POST /api/v1/marks, /api/v1/alertmanager "
	    "(docs/api.md)",
	    http_printable(url, u, sizeof(u), ECHO_MAX));
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char buf[256];

	vsnprintf(buf, sizeof(buf), fmt, ap);
	buf[strcspn(buf, "\n")] = 0;
	pr_debug("http: %s", buf);
}

/* One libmicrohttpd daemon serving listen_fd (taken over) for h, its connections counted in lim.
 * NULL on failure. */
static struct MHD_Daemon *start_mhd(struct http_api *h, int listen_fd, struct limits_http *lim)
{
	return MHD_start_daemon(
	    MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0,
	    /* the counted cap (resource_limits.h); libmicrohttpd's limit above it is a backstop */
	    limits_http_accept, lim, handle, h,
	    /* the logger first, so that no message goes to MHD's own */
	    MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, MHD_OPTION_LISTEN_SOCKET, listen_fd,
	    MHD_OPTION_CONNECTION_LIMIT, lim->max + 8, MHD_OPTION_NOTIFY_CONNECTION,
	    limits_http_notify, lim, MHD_OPTION_NOTIFY_COMPLETED, http_api_request_completed, NULL,
	    /* a connection that sends nothing for 10 s is closed: idle clients cannot hold the
	     * slots for long */
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)10,
	    /* %00 stays %00: a path or value must not end early at a decoded NUL */
	    MHD_OPTION_UNESCAPE_CALLBACK, http_unescape, NULL, MHD_OPTION_END);
}

/* Stops accepting on d, waits up to 2 s for its requests in flight (e.g. a
 * /debug/pprof/profile that just got its 503), stops it and closes its socket. NULL allowed. */
static void stop_mhd(struct MHD_Daemon *d)
{
	const union MHD_DaemonInfo *info;
	MHD_socket fd;

	if (!d)
		return;
	fd = MHD_quiesce_daemon(d);
	for (int i = 0; i < 200; i++) {
		info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
		if (!info || !info->num_connections)
			break;
		usleep(10000);
	}
	MHD_stop_daemon(d);
	/* quiesced, the socket is ours to close, once its threads are gone */
	if (fd != MHD_INVALID_SOCKET)
		close(fd);
}

struct http_api *http_api__start(int listen_fd, const struct query_ctx *ctx,
				 const struct http_api_opts *opts)
{
	struct http_api *h = calloc(1, sizeof(*h));
	struct http_api_opts o = opts ? *opts : (struct http_api_opts){0};

	if (!h || (o.token && !(h->token = strdup(o.token)))) {
		free(h);
		if (o.serve_unix)
			close(o.unix_fd);
		errno = ENOMEM;
		return NULL;
	}
	h->ctx = ctx;
	for (int e = 0; e < HTTP_WRITE_ENDPOINTS; e++)
		marks__bucket_init(&h->buckets[e], o.write_rate_per_min, o.write_burst);
	pthread_mutex_init(&h->mu, NULL);
	pthread_cond_init(&h->encoder_free, NULL);
	limits_http.max = o.max_connections ? o.max_connections : LIMITS_DEFAULT_HTTP_CONNECTIONS;
	limits_http_unix.max = limits_http.max;
	if (o.serve_unix && !(h->mhd_unix = start_mhd(h, o.unix_fd, &limits_http_unix)))
		close(o.unix_fd);
	h->mhd = (!o.serve_unix || h->mhd_unix) ? start_mhd(h, listen_fd, &limits_http) : NULL;
	if (!h->mhd) {
		stop_mhd(h->mhd_unix);
		if (h->token)
			explicit_bzero(h->token, strlen(h->token));
		free(h->token);
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
	stop_mhd(h->mhd);
	stop_mhd(h->mhd_unix);
	pthread_mutex_destroy(&h->mu);
	pthread_cond_destroy(&h->encoder_free);
	if (h->token)
		explicit_bzero(h->token, strlen(h->token));
	free(h->token);
	free(h);
}
