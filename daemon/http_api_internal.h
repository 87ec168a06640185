/* SPDX-License-Identifier: GPL-2.0-only */
/* What the HTTP API's files share (http_api.c: the server, the read endpoints and the routing;
 * http_write.c: the write endpoints). Not a contract for other modules: http_api.h is. */
#ifndef TAILPROF_HTTP_API_INTERNAL_H
#define TAILPROF_HTTP_API_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include <microhttpd.h>

#include "http_api.h"
#include "marks.h"

struct query_ctx;

struct http_api {
	struct MHD_Daemon *mhd;
	struct MHD_Daemon *mhd_unix; /* on the unix socket, or NULL */
	char *token;		     /* the bearer token the TCP listener asks, or NULL */
	const struct query_ctx *ctx;
	pthread_mutex_t mu;
	unsigned int captures; /* /debug/pprof/profile requests waiting now */
	unsigned int encoders; /* profiles being encoded now */
	pthread_cond_t encoder_free;
	/* the write endpoints' rate limits, one each (a flood of marks does not starve
	 * Alertmanager), under mu */
	struct marks_bucket buckets[HTTP_WRITE_ENDPOINTS];
	struct http_write_counts writes; /* under mu */
};

/* ---- http_api.c: what the read endpoints of other files share ---- */

struct params;
struct profile_filter;
struct query_range;
struct window;
enum profile_type;

/* Parses pid=, comm= and container= into f. Returns 0, or -1 after writing the error into err. */
int parse_filter(const struct params *p, struct profile_filter *f, char *err, size_t len);
/* Parses type= into *t (left as it is when not given). 0, or -1 with the error in err. */
int parse_type(const struct params *p, enum profile_type *t, char *err, size_t len);
/* Resolves stage=NAME into f (under the read lock). 0, or -1 with the error in err. */
int parse_stage(const struct params *p, const struct query_ctx *ctx, struct profile_filter *f,
		char *err, size_t len);
/* Takes one of the profile encoders' slots (bounded memory), waiting for one; encoder_leave gives
 * it back. */
void encoder_enter(struct http_api *h);
void encoder_leave(struct http_api *h);
/* The windows of range, oldest first (calloc'd, *n of them; NULL on ENOMEM). Read lock held. */
struct window **select_windows(const struct query_ctx *ctx, const struct query_range *range,
			       size_t *n);
/* Whether s is a spike id as the API takes it. */
bool valid_spike_id(const char *s);

/* ---- http_views.c: the page's endpoints (issue 22) ---- */

/* Whether url is one of /api/v1/heatmap, /api/v1/flamegraph, / and /ui/... */
bool http_views__serves(const char *url);
/* Answers a GET or HEAD of such a url. */
enum MHD_Result http_views__handle(struct MHD_Connection *conn, struct http_api *h,
				   const char *url);

/* ---- http_ui.c: the page's static files ---- */

/* Answers GET / (ui/dist/index.html) and /ui/FILE (a file of ui/dist, embedded at build time):
 * 404 for a file not there. */
enum MHD_Result http_ui__handle(struct MHD_Connection *conn, const char *url);

/* ---- http_write.c ---- */

/* The paths of the write endpoints, by enum http_write_endpoint. */
extern const char *const http_write_paths[HTTP_WRITE_ENDPOINTS];
/* POST /api/v1/marks and /api/v1/alertmanager (endpoint e): libmicrohttpd's access handler for
 * them, called once with the headers, then once per piece of the body, then once more with none.
 */
enum MHD_Result http_api_handle_write(struct MHD_Connection *conn, struct http_api *h,
				      enum http_write_endpoint e, const char *method,
				      const char *upload_data, size_t *upload_size, void **con_cls);
/* MHD_OPTION_NOTIFY_COMPLETED: frees a write request's body. */
void http_api_request_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
				enum MHD_RequestTerminationCode toe);

#endif
