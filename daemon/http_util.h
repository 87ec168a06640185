/* SPDX-License-Identifier: GPL-2.0-only */
/* What the HTTP handlers (http_api.c, http_compare.c) share: responses, {"error": ...} answers
 * (docs/api.md's conventions), the query parameters of a request, and time ranges. */
#ifndef TAILPROF_HTTP_UTIL_H
#define TAILPROF_HTTP_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <microhttpd.h>

#include "query.h"

#define MAX_PARAMS 16
#define ECHO_MAX   64 /* bytes of a bad value echoed in an error */

struct header {
	const char *name, *value;
};

/* The query parameters of one request: each allowed one at most once and with a value. */
struct params {
	const char *const *allowed; /* NULL-terminated */
	const char *value[MAX_PARAMS];
	char err[512];
};

/* Queues buf[0..len) of Content-Type type with status and the extra header hdr (name NULL:
 * none); free_buf: the response takes buf over. Returns MHD's result. */
enum MHD_Result http_send_buf_hdr(struct MHD_Connection *conn, unsigned int status,
				  const char *type, void *buf, size_t len, bool free_buf,
				  struct header hdr);
enum MHD_Result http_send_buf(struct MHD_Connection *conn, unsigned int status, const char *type,
			      void *buf, size_t len, bool free_buf);
/* Queues the JSON text body (malloc'd, taken over; NULL: a 500 "out of memory"). */
enum MHD_Result http_send_json_hdr(struct MHD_Connection *conn, unsigned int status, char *body,
				   struct header hdr);
enum MHD_Result http_send_json(struct MHD_Connection *conn, unsigned int status, char *body);

/* Makes text safe to echo in JSON: bytes outside printable ASCII become \xNN (the input may
 * not be UTF-8), and it is cut at max bytes. Returns buf. */
const char *http_printable(const char *text, char *buf, size_t len, size_t max);

/* MHD's unescape callback: decodes %XX in place, except %00, which stays as the three
 * characters (a decoded NUL would end a C string early: "snapshots/a%00b" must not name "a").
 * Returns the new length. */
size_t http_unescape(void *cls, struct MHD_Connection *conn, char *s);

/* Queues {"error": msg} with status and hdr (name NULL for none); a message that is not valid
 * UTF-8 (a request's bytes echoed) is sent with those bytes as \xNN. */
enum MHD_Result __attribute__((format(printf, 4, 5)))
http_send_error_hdr(struct MHD_Connection *conn, unsigned int status, struct header hdr,
		    const char *fmt, ...);
#define http_send_error(conn, status, ...)                                                         \
	http_send_error_hdr(conn, status, (struct header){0}, __VA_ARGS__)

/* Reads the query into p (p->allowed set by the caller). Returns 0, or -1 with p->err set. */
int http_get_params(struct MHD_Connection *conn, struct params *p);
/* The value of parameter key (one of p->allowed), NULL when not given. */
const char *http_param(const struct params *p, const char *key);
/* Parses the time value of parameter name into *ns (Unix ns). Returns 0, or -1 with err
 * written. */
int http_parse_time_param(const char *name, const char *value, int64_t *ns, char *err, size_t len);
/* Parses last= / from= / to= into r. Returns 0, or -1 after writing the error into err. */
int http_parse_range(const struct params *p, struct query_range *r, char *err, size_t len);

#endif
