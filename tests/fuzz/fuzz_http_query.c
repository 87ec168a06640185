// SPDX-License-Identifier: GPL-2.0-only
/* libFuzzer target: the HTTP query parser (http_util.h). The input is a request's query string
 * ("type=cpu&last=5m&pid=1"), split and %-decoded the way libmicrohttpd does before it calls
 * collect_param, with http_unescape as the unescape callback the daemon installs; then read with
 * the parameters of GET /api/v1/profile and GET /api/v1/compare, the time range parsed, and
 * the values echoed the way error messages echo them.
 *
 * libmicrohttpd's MHD_get_connection_values_n is replaced here (this executable's definition
 * wins over the shared library's): no socket, no daemon, the query string is the connection. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "http_util.h"
#include "timeparse.h"

/* The fake connection: the query string of this input (NUL-terminated, modified in place). */
struct MHD_Connection {
	char *query;
};

int MHD_get_connection_values_n(struct MHD_Connection *conn, enum MHD_ValueKind kind,
				MHD_KeyValueIteratorN iterator, void *iterator_cls)
{
	char *p = conn->query;
	int n = 0;

	if (kind != MHD_GET_ARGUMENT_KIND)
		return 0;
	/* as libmicrohttpd's MHD_parse_arguments_: "&"-separated, "key" alone has no value, '+'
	 * is a space (MHD_unescape_plus), then the unescape callback */
	while (p && *p) {
		char *amp = strchr(p, '&'), *eq, *value = NULL;
		size_t key_size, value_size = 0;

		if (amp)
			*amp = 0;
		for (char *c = p; *c; c++)
			if (*c == '+')
				*c = ' ';
		eq = strchr(p, '=');
		if (eq) {
			*eq = 0;
			value = eq + 1;
			value_size = http_unescape(NULL, conn, value);
		}
		key_size = http_unescape(NULL, conn, p);
		n++;
		if (iterator && iterator(iterator_cls, MHD_GET_ARGUMENT_KIND, p, key_size, value,
					 value_size) != MHD_YES)
			break;
		p = amp ? amp + 1 : NULL;
	}
	return n;
}

/* GET /api/v1/profile's and GET /api/v1/compare's parameters (http_api.c, http_compare.c). */
static const char *const profile_params[] = {"type",  "last",  "from",	   "to",      "pid", "comm",
					     "stage", "spike", "baseline", "request", NULL};
static const char *const compare_params[] = {
    "before_from",     "before_to",	 "after_from", "after_to",
    "before_snapshot", "after_snapshot", "stage",      "min_effect",
    "alpha",	       "seed",		 NULL};
static const char *const no_params[] = {NULL};

static void check_printable(const char *s)
{
	char buf[ECHO_MAX * 4 + 8], tiny[8];

	http_printable(s, buf, sizeof(buf), ECHO_MAX);
	FUZZ_CHECK(strlen(buf) < sizeof(buf));
	for (const char *c = buf; *c; c++)
		FUZZ_CHECK(*c >= 0x20 && *c < 0x7f);
	http_printable(s, tiny, sizeof(tiny), 3);
	FUZZ_CHECK(strlen(tiny) < sizeof(tiny));
}

static void read_query(const uint8_t *data, size_t size, const char *const *allowed)
{
	struct MHD_Connection conn = {.query = fuzz_string(data, size)};
	struct params p = {.allowed = allowed};
	struct query_range r;
	char err[512];
	uint64_t v;

	if (!http_get_params(&conn, &p)) {
		for (int i = 0; allowed[i]; i++) {
			const char *value = http_param(&p, allowed[i]);

			FUZZ_CHECK(value == p.value[i]);
			if (!value)
				continue;
			check_printable(value);
			tp_parse_uint(value, 0, UINT32_MAX, &v);
		}
		if (!http_parse_range(&p, &r, err, sizeof(err))) {
			FUZZ_CHECK(!(r.last_ns && (r.has_from || r.has_to)));
			FUZZ_CHECK(!(r.has_from && r.has_to) || r.from_unix_ns < r.to_unix_ns);
		} else {
			FUZZ_CHECK(strlen(err) < sizeof(err) && err[0]);
		}
	} else {
		FUZZ_CHECK(p.err[0] && strlen(p.err) < sizeof(p.err));
	}
	free(conn.query);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s;

	read_query(data, size, profile_params);
	read_query(data, size, compare_params);
	read_query(data, size, no_params);

	/* the raw text as a path's or a value's echo, and decoded in place */
	s = fuzz_string(data, size);
	check_printable(s);
	FUZZ_CHECK(http_unescape(NULL, NULL, s) == strlen(s));
	free(s);
	return 0;
}
