/* SPDX-License-Identifier: GPL-2.0-only */
/* What the HTTP API's files share (http_api.c: the server, the read endpoints and the routing;
 * http_write.c: the write endpoints). Not a contract for other modules: http_api.h is. */
#ifndef TAILPROF_HTTP_API_INTERNAL_H
#define TAILPROF_HTTP_API_INTERNAL_H

#include <pthread.h>
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
