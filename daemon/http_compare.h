/* SPDX-License-Identifier: GPL-2.0-only */
/* The comparison endpoints (docs/compare.md): GET /api/v1/compare, GET and POST
 * /api/v1/snapshots, DELETE /api/v1/snapshots/NAME. A range side is copied from the ring under the
 * collector's read lock and compared after it is released; comparisons run one at a time. */
#ifndef TAILPROF_HTTP_COMPARE_H
#define TAILPROF_HTTP_COMPARE_H

#include <stdbool.h>

#include <microhttpd.h>

struct query_ctx;

/* Whether url is one of these endpoints' paths. */
bool http_compare__serves(const char *url);

/* Answers a request for one of them (any method: each path says which it takes, 405 else). The
 * snapshot endpoints answer 409 naming --state-dir when ctx->snapshots is NULL. */
enum MHD_Result http_compare__handle(struct MHD_Connection *conn, const struct query_ctx *ctx,
				     const char *url, const char *method);

#endif
