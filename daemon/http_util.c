// SPDX-License-Identifier: GPL-2.0-only
/* What the HTTP handlers share: responses, JSON errors, and query parameters (http_util.h). */
#include "http_util.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "timeparse.h"

enum MHD_Result http_send_buf_hdr(struct MHD_Connection *conn, unsigned int status,
				  const char *type, void *buf, size_t len, bool free_buf,
				  struct header hdr)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(
	    len, buf, free_buf ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, "Content-Type", type);
	if (hdr.name)
		MHD_add_response_header(r, hdr.name, hdr.value);
	ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

enum MHD_Result http_send_buf(struct MHD_Connection *conn, unsigned int status, const char *type,
			      void *buf, size_t len, bool free_buf)
{
	return http_send_buf_hdr(conn, status, type, buf, len, free_buf, (struct header){0});
}

enum MHD_Result http_send_json_hdr(struct MHD_Connection *conn, unsigned int status, char *body,
				   struct header hdr)
{
	if (!body)
		return http_send_buf(conn, 500, "application/json",
				     "{\"error\":\"out of memory\"}\n", 26, false);
	return http_send_buf_hdr(conn, status, "application/json", body, strlen(body), true, hdr);
}

enum MHD_Result http_send_json(struct MHD_Connection *conn, unsigned int status, char *body)
{
	return http_send_json_hdr(conn, status, body, (struct header){0});
}

/* Makes text safe to echo in JSON: bytes outside printable ASCII become \xNN (the input may
 * not be UTF-8), and it is cut at max bytes. */
const char *http_printable(const char *text, char *buf, size_t len, size_t max)
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

static int hex_digit(char c)
{
	return c >= '0' && c <= '9'   ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
				      : -1;
}

size_t http_unescape(void *cls, struct MHD_Connection *conn, char *s)
{
	char *out = s;

	(void)cls;
	(void)conn;
	for (const char *in = s; *in;) {
		int hi = in[0] == '%' ? hex_digit(in[1]) : -1, lo = hi >= 0 ? hex_digit(in[2]) : -1;

		if (lo >= 0 && (hi || lo)) {
			*out++ = (char)(hi << 4 | lo);
			in += 3;
		} else {
			*out++ = *in++; /* not an escape, or %00: kept as it is */
		}
	}
	*out = 0;
	return (size_t)(out - s);
}

/* Whether jansson takes s as a string (valid UTF-8). */
static bool utf8_ok(const char *s)
{
	json_t *j = json_string(s);

	json_decref(j);
	return j != NULL;
}

/* {"error": msg} with status and hdr (name NULL for none). */
enum MHD_Result http_send_error_hdr(struct MHD_Connection *conn, unsigned int status,
				    struct header hdr, const char *fmt, ...)
{
	char msg[1024];
	json_t *o;
	va_list ap;
	char *body;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!utf8_ok(msg)) {
		/* a name echoed from the request was not UTF-8, or was cut inside a character */
		char safe[sizeof(msg)];

		http_printable(msg, safe, sizeof(safe), sizeof(msg));
		memcpy(msg, safe, sizeof(msg));
	}
	o = json_pack("{s:s}", "error", msg);
	body = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	return http_send_json_hdr(conn, status, body, hdr);
}

static enum MHD_Result collect_param(void *cls, enum MHD_ValueKind kind, const char *key,
				     size_t key_size, const char *value, size_t value_size)
{
	struct params *p = cls;
	char k[ECHO_MAX * 4 + 8], list[160] = "";
	size_t n = 0;

	/* %00 in a query (http_unescape keeps it as text): C strings would silently end at a
	 * decoded NUL ("type=cpu%00x" read as cpu) */
	if (strlen(key) != key_size || (value && strlen(value) != value_size) ||
	    strstr(key, "%00") || (value && strstr(value, "%00"))) {
		http_printable(key, k, sizeof(k), ECHO_MAX);
		snprintf(p->err, sizeof(p->err), "%s: contains a NUL byte (%%00)", k);
		return MHD_NO;
	}

	for (int i = 0; p->allowed[i]; i++) {
		if (strcmp(key, p->allowed[i]))
			continue;
		if (i >= MAX_PARAMS)
			abort(); /* a handler's allowed list outgrew MAX_PARAMS: a bug, caught by
				    tests */
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
		http_printable(key, k, sizeof(k), ECHO_MAX);
	else
		strcpy(k, "(empty name)");
	snprintf(p->err, sizeof(p->err), "%s: unknown parameter; %s%s", k,
		 n ? "allowed: " : "this path takes none", list);
	return MHD_NO;
}

/* Reads the query into p (p->allowed set by the caller). Returns 0, or -1 with p->err set. */
int http_get_params(struct MHD_Connection *conn, struct params *p)
{
	p->err[0] = 0;
	MHD_get_connection_values_n(conn, MHD_GET_ARGUMENT_KIND, collect_param, p);
	return p->err[0] ? -1 : 0;
}

const char *http_param(const struct params *p, const char *key)
{
	for (int i = 0; p->allowed[i]; i++)
		if (!strcmp(key, p->allowed[i]))
			return p->value[i];
	return NULL;
}

/* Parses the time value of parameter name into *ns. Returns 0, or -1 with err written. */
int http_parse_time_param(const char *name, const char *value, int64_t *ns, char *err, size_t len)
{
	char v[ECHO_MAX * 4 + 8];
	int rc = tp_parse_time(value, ns);

	if (!rc)
		return 0;
	snprintf(err, len,
		 "%s: '%s' is %s; use RFC 3339 (2026-11-29T21:04:05Z) or Unix seconds, from 1970 "
		 "to 2262",
		 name, http_printable(value, v, sizeof(v), ECHO_MAX),
		 rc == -ERANGE ? "out of range" : "not a time");
	return -1;
}

/* Parses last= / from= / to= into r. Returns 0, or -1 after writing the error into err. */
int http_parse_range(const struct params *p, struct query_range *r, char *err, size_t len)
{
	const char *last = http_param(p, "last"), *from = http_param(p, "from"),
		   *to = http_param(p, "to");
	char v[ECHO_MAX * 4 + 8];

	memset(r, 0, sizeof(*r));
	if (last && (from || to)) {
		snprintf(err, len, "last: use either last=DURATION or from=/to=, not both");
		return -1;
	}
	if (last && (tp_parse_duration(last, &r->last_ns) || !r->last_ns)) {
		snprintf(err, len, "last: '%s' is not a positive duration; use e.g. 90s, 5m, 1h",
			 http_printable(last, v, sizeof(v), ECHO_MAX));
		return -1;
	}
	if ((from && http_parse_time_param("from", from, &r->from_unix_ns, err, len)) ||
	    (to && http_parse_time_param("to", to, &r->to_unix_ns, err, len)))
		return -1;
	r->has_from = from != NULL;
	r->has_to = to != NULL;
	if (r->has_from && r->has_to && r->to_unix_ns <= r->from_unix_ns) {
		snprintf(err, len, "to: must be after from");
		return -1;
	}
	return 0;
}
