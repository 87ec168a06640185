/* SPDX-License-Identifier: GPL-2.0-only */
/* The HTTP API (libmicrohttpd, one thread per connection so a long request never blocks the
 * others): paths and bytes; the data comes from query.c under the collector's read lock, and the
 * two write endpoints (POST /api/v1/marks, /api/v1/alertmanager; docs/spike-marks.md) hand what
 * marks.c parsed to the spike module. */
#ifndef TAILPROF_HTTP_API_H
#define TAILPROF_HTTP_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct query_ctx;

/* Parses HOST:PORT ("127.0.0.1:7077", "[::1]:7077", ":7077" for every address; numeric
 * address, port 1-65535), binds and listens. Returns the socket; -2 for a malformed address, or
 * -1 when it cannot listen (address in use, permission), after writing a sentence for people
 * into err (errlen bytes) that names the problem and the fix. */
int http_api__listen(const char *listen, char *err, size_t errlen);
/* The same check of the address's form, with no socket made (tailprofd --check: a running
 * tailprofd may hold the port). Returns 0, or -2 after writing into err what is wrong. */
int http_api__check_listen(const char *listen, char *err, size_t errlen);

/* The write endpoints' rate limit; zero means default. Marks and alerts go to ctx->spikes
 * (spikes__mark, spikes__alerts); with ctx->spikes NULL those endpoints answer 503. */
struct http_api_opts {
	uint32_t write_rate_per_min; /* write requests a minute, each endpoint, beyond which a mark
				      * gets 429 and a delivery 503, with Retry-After; config
				      * [spikes] write_rate; 0: 60 */
	uint32_t write_burst;	     /* requests taken at once after a quiet time, each; 0: 20 */
	uint32_t max_connections;    /* open at once on both listeners together ([limits]
				      * http_connections, resource_limits.h); a connection past it is
				      * closed at accept; 0: 256 */
	/* access (docs/security.md) */
	const char *token; /* NULL: none; else every request on listen_fd but GET /healthz needs
			    * Authorization: Bearer token (401 otherwise); copied */
	bool serve_unix;   /* serve unix_fd as well, with no token asked there */
	int unix_fd;	   /* a listening unix socket (taken over) when serve_unix */
};

/* Serves on listen_fd (taken over), and on opts->unix_fd, until http_api__stop. ctx must outlive
 * the server; opts is copied, NULL for the defaults. Returns NULL with errno set. */
struct http_api *http_api__start(int listen_fd, const struct query_ctx *ctx,
				 const struct http_api_opts *opts);
/* Stops accepting, waits for requests in flight, closes the sockets. NULL allowed. */
void http_api__stop(struct http_api *h);

/* The write endpoints and what became of their requests, for /metrics
 * (tailprof_api_writes_total{endpoint,result}). */
enum http_write_endpoint {
	HTTP_WRITE_MARKS,	 /* "marks" */
	HTTP_WRITE_ALERTMANAGER, /* "alertmanager" */
	HTTP_WRITE_ENDPOINTS,
};
enum http_write_result {
	HTTP_WRITE_ACCEPTED,	 /* "accepted": 200, handed to the spike module */
	HTTP_WRITE_INVALID,	 /* "invalid": 400 (body), 413 (too large), 415 (Content-Type) */
	HTTP_WRITE_RATE_LIMITED, /* "rate_limited": 503, beyond write_rate */
	HTTP_WRITE_UNAVAILABLE,	 /* "unavailable": 503, the spike module's queue is full or it is
				  * not running */
	HTTP_WRITE_RESULTS,
};
struct http_write_counts {
	uint64_t n[HTTP_WRITE_ENDPOINTS][HTTP_WRITE_RESULTS]; /* since start */
	uint64_t snapshot_saves_rate_limited; /* POST /api/v1/snapshots: 429, past save_rate */
};

/* Copies the counters of the write endpoints into *out. Any thread. */
void http_api__write_counts(struct http_api *h, struct http_write_counts *out);
/* Their Prometheus text (format 0.0.4, # HELP and # TYPE included; tailprof_api_writes_total, and
 * tailprof_http_rejected_total{route,reason="rate"} of the write routes, the snapshots' saves
 * included) appended to *text, a malloc'd NUL-terminated string (NULL: a new one). Returns 0 or
 * -ENOMEM (*text left as it was). */
int http_api__write_metrics_text(const struct http_write_counts *c, char **text);

#endif
