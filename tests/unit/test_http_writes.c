// SPDX-License-Identifier: GPL-2.0-only
/* Unit tests of the write endpoints' HTTP side (POST /api/v1/marks, /api/v1/alertmanager): body
 * upload and its cap, methods, Content-Type, the rate limit, answers and counters, through a real
 * libmicrohttpd server on a loopback port and libcurl. The spike module is a recording stub. */
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "http_api.h"
#include "marks.h"
#include "query.h"
#include "spikes.h"

/* ---- the spike module's stand-in: the link wraps spikes__mark and spikes__alerts (ld --wrap), so
 * the HTTP layer calls these, and the test sets what they answer ---- */

static struct {
	int rc; /* what the next call returns */
	int marks, deliveries;
	struct spike_mark mark;
	struct spike_alert alerts[4];
	size_t n;
} stub;

int __wrap_spikes__mark(struct spikes *s, const struct spike_mark *m, char *id, char *err,
			size_t errlen);
int __wrap_spikes__alerts(struct spikes *s, const struct spike_alert *a, size_t n);

int __wrap_spikes__mark(struct spikes *s, const struct spike_mark *m, char *id, char *err,
			size_t errlen)
{
	stub.marks++;
	stub.mark = *m;
	if (stub.rc == -EINVAL)
		snprintf(err, errlen, "stage: 'nope' is not a known stage; known: db_query");
	if (!stub.rc)
		snprintf(id, SPIKE_ID_LEN, "mark-%d", stub.marks);
	return stub.rc;
}

int __wrap_spikes__alerts(struct spikes *s, const struct spike_alert *a, size_t n)
{
	stub.deliveries++;
	stub.n = n;
	memcpy(stub.alerts, a, (n < 4 ? n : 4) * sizeof(*a));
	return stub.rc;
}

/* ---- a server and a client ---- */

static struct query_ctx ctx;
static char fake_spikes; /* only its address is used */

struct server {
	struct http_api *h;
	int port;
};

static void start(struct server *s, struct spikes *spikes, uint32_t rate, uint32_t burst)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sa);
	struct http_api_opts opts = {.write_rate_per_min = rate, .write_burst = burst};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 16), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	s->port = ntohs(sa.sin_port);
	ctx.spikes = spikes;
	s->h = http_api__start(fd, &ctx, &opts);
	assert_non_null(s->h);
	memset(&stub, 0, sizeof(stub));
}

struct reply {
	long status;
	char body[4096];
	size_t len;
	char retry_after[16], allow[32];
};

struct upload_src {
	size_t left;
};

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	struct reply *r = arg;
	size_t k = size * n, room = sizeof(r->body) - 1 - r->len;

	memcpy(r->body + r->len, p, k < room ? k : room);
	r->len += k < room ? k : room;
	r->body[r->len] = 0;
	return k;
}

static void header_value(const char *line, size_t len, const char *name, char *out, size_t max)
{
	size_t n = strlen(name), v;

	if (len <= n + 1 || strncasecmp(line, name, n) || line[n] != ':')
		return;
	v = len - n - 1;
	line += n + 1;
	while (v && (*line == ' '))
		line++, v--;
	while (v && (line[v - 1] == '\r' || line[v - 1] == '\n'))
		v--;
	snprintf(out, max, "%.*s", (int)v, line);
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
	struct reply *r = arg;

	header_value(p, size * n, "Retry-After", r->retry_after, sizeof(r->retry_after));
	header_value(p, size * n, "Allow", r->allow, sizeof(r->allow));
	return size * n;
}

static size_t on_read(char *p, size_t size, size_t n, void *arg)
{
	struct upload_src *src = arg;
	size_t k = size * n < src->left ? size * n : src->left;

	memset(p, ' ', k);
	src->left -= k;
	return k;
}

/* Sends method path with body (len bytes; NULL: chunked_bytes of spaces, chunked) and, when not
 * NULL, Content-Type type ("" keeps curl's default). */
static void request(const struct server *s, const char *method, const char *path, const char *type,
		    const char *body, size_t len, size_t chunked_bytes, struct reply *r)
{
	struct upload_src src = {.left = chunked_bytes};
	struct curl_slist *hdrs = NULL;
	char url[256], ct[128];
	CURL *c = curl_easy_init();

	assert_non_null(c);
	memset(r, 0, sizeof(*r));
	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", s->port, path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
	if (type && *type) {
		snprintf(ct, sizeof(ct), "Content-Type: %s", type);
		hdrs = curl_slist_append(hdrs, ct);
	}
	if (body) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	} else if (chunked_bytes) {
		curl_easy_setopt(c, CURLOPT_POST, 1L);
		curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
		curl_easy_setopt(c, CURLOPT_READDATA, &src);
		hdrs = curl_slist_append(hdrs, "Transfer-Encoding: chunked");
	}
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
	assert_int_equal(curl_easy_perform(c), CURLE_OK);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
	curl_slist_free_all(hdrs);
	curl_easy_cleanup(c);
}

static void post(const struct server *s, const char *path, const char *body, struct reply *r)
{
	request(s, "POST", path, "", body, strlen(body), 0, r);
}

static uint64_t count(const struct server *s, enum http_write_endpoint e,
		      enum http_write_result res)
{
	struct http_write_counts c;

	http_api__write_counts(s->h, &c);
	return c.n[e][res];
}

static char *read_fixture(const char *name)
{
	const char *dir = getenv("TAILPROF_FIXTURES_SRC");
	char path[512], *buf;
	FILE *f;

	if (!dir)
		fail_msg("TAILPROF_FIXTURES_SRC is not set: run through meson test");
	buf = calloc(1, 1 << 16);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "rb");
	assert_non_null(f);
	assert_non_null(buf);
	assert_true(fread(buf, 1, (1 << 16) - 1, f) > 0);
	fclose(f);
	return buf;
}

/* ---- tests ---- */

static void test_mark(void **state)
{
	struct server s;
	struct reply r;

	start(&s, (struct spikes *)&fake_spikes, 0, 1000);
	post(
	    &s, "/api/v1/marks",
	    "{\"time\":\"2026-11-29T21:04:05.25Z\",\"reason\":\"deploy 42\",\"stage\":\"db_query\","
	    "\"before\":\"30s\"}",
	    &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, "{\"id\":\"mark-1\",\"time\":\"2026-11-29T21:04:05.250Z\","
				    "\"time_unix_ns\":1795986245250000000}");
	assert_int_equal(stub.mark.time_unix_ns, 1795986245250000000LL);
	assert_string_equal(stub.mark.reason, "deploy 42");
	assert_string_equal(stub.mark.stage, "db_query");
	assert_true(stub.mark.has_before);
	assert_int_equal(stub.mark.before_ns, 30 * 1000000000ULL);
	assert_false(stub.mark.has_after);

	/* curl -d '{}' (x-www-form-urlencoded) and an explicit application/json */
	request(&s, "POST", "/api/v1/marks", "application/json; charset=utf-8", "{}", 2, 0, &r);
	assert_int_equal(r.status, 200);
	assert_int_equal(stub.marks, 2);
	assert_true(stub.mark.time_unix_ns > 1700000000LL * 1000000000LL);
	request(&s, "POST", "/api/v1/marks", NULL, "{}", 2, 0, &r);
	assert_int_equal(r.status, 200);
	/* no body at all: a mark now */
	request(&s, "POST", "/api/v1/marks", NULL, "", 0, 0, &r);
	assert_int_equal(r.status, 200);
	assert_int_equal(stub.marks, 4);
	assert_int_equal(count(&s, HTTP_WRITE_MARKS, HTTP_WRITE_ACCEPTED), 4);

	/* malformed: 400 naming the field, the spike module not called */
	post(&s, "/api/v1/marks", "{\"before\":\"soon\"}", &r);
	assert_int_equal(r.status, 400);
	assert_string_equal(r.body,
			    "{\"error\":\"before: 'soon' is not a duration; use e.g. 500ms, "
			    "2s, 10m, 1h\"}");
	post(&s, "/api/v1/marks", "{\"stgae\":\"db_query\"}", &r);
	assert_int_equal(r.status, 400);
	assert_non_null(strstr(r.body, "stgae: unknown key"));
	post(&s, "/api/v1/marks", "{\"reason\":\"\xff\"}", &r);
	assert_int_equal(r.status, 400);
	assert_non_null(strstr(r.body, "body: not UTF-8"));
	assert_int_equal(stub.marks, 4);
	/* the spike module's own refusal, and its full queue */
	stub.rc = -EINVAL;
	post(&s, "/api/v1/marks", "{\"stage\":\"nope\"}", &r);
	assert_int_equal(r.status, 400);
	assert_non_null(strstr(r.body, "stage: 'nope' is not a known stage"));
	stub.rc = -EAGAIN;
	post(&s, "/api/v1/marks", "{}", &r);
	assert_int_equal(r.status, 503);
	assert_string_equal(r.retry_after, "1");
	assert_int_equal(count(&s, HTTP_WRITE_MARKS, HTTP_WRITE_INVALID), 4);
	assert_int_equal(count(&s, HTTP_WRITE_MARKS, HTTP_WRITE_UNAVAILABLE), 1);
	http_api__stop(s.h);
}

static void test_alertmanager(void **state)
{
	char *body = read_fixture("alertmanager_v4.json");
	struct server s;
	struct reply r;

	start(&s, (struct spikes *)&fake_spikes, 0, 1000);
	request(&s, "POST", "/api/v1/alertmanager", "application/json", body, strlen(body), 0, &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, "{\"alerts\":2}");
	assert_int_equal(stub.deliveries, 1);
	assert_int_equal(stub.n, 2);
	assert_true(stub.alerts[0].firing);
	assert_string_equal(stub.alerts[0].stage, "db_query");
	assert_false(stub.alerts[1].firing);
	assert_string_equal(stub.alerts[1].fingerprint, "a81f3c0d96e24b17");

	/* one bad alert: nothing is handed over */
	post(&s, "/api/v1/alertmanager",
	     "{\"version\":\"4\",\"alerts\":[{\"status\":\"firing\",\"fingerprint\":\"f\","
	     "\"startsAt\":\"2026-11-29T21:04:05Z\"},{\"status\":\"firing\",\"fingerprint\":\"g\","
	     "\"startsAt\":\"noon\"}]}",
	     &r);
	assert_int_equal(r.status, 400);
	assert_non_null(strstr(r.body, "alerts[1].startsAt: 'noon' is not an RFC 3339 time"));
	post(&s, "/api/v1/alertmanager", "{\"version\":\"3\",\"alerts\":[]}", &r);
	assert_int_equal(r.status, 400);
	assert_int_equal(stub.deliveries, 1);
	/* a full queue: 503, which Alertmanager retries */
	stub.rc = -EAGAIN;
	request(&s, "POST", "/api/v1/alertmanager", "application/json", body, strlen(body), 0, &r);
	assert_int_equal(r.status, 503);
	assert_string_equal(r.retry_after, "1");
	assert_int_equal(count(&s, HTTP_WRITE_ALERTMANAGER, HTTP_WRITE_ACCEPTED), 1);
	assert_int_equal(count(&s, HTTP_WRITE_ALERTMANAGER, HTTP_WRITE_INVALID), 2);
	assert_int_equal(count(&s, HTTP_WRITE_ALERTMANAGER, HTTP_WRITE_UNAVAILABLE), 1);
	http_api__stop(s.h);
	free(body);
}

static void test_methods_types_sizes(void **state)
{
	size_t big = MARKS_MAX_BODY_BYTES + 1;
	char *body = malloc(big);
	struct server s;
	struct reply r;

	assert_non_null(body);
	start(&s, (struct spikes *)&fake_spikes, 0, 1000);
	request(&s, "GET", "/api/v1/marks", NULL, NULL, 0, 0, &r);
	assert_int_equal(r.status, 405);
	assert_string_equal(r.allow, "POST");
	request(&s, "PUT", "/api/v1/alertmanager", NULL, "{}", 2, 0, &r);
	assert_int_equal(r.status, 405);
	assert_string_equal(r.allow, "POST");
	assert_non_null(strstr(r.body, "PUT: /api/v1/alertmanager takes POST only"));
	request(&s, "POST", "/api/v1/windows", NULL, "{}", 2, 0, &r);
	assert_int_equal(r.status, 405);
	assert_string_equal(r.allow, "GET, HEAD");
	request(&s, "POST", "/api/v1/marks", "multipart/form-data; boundary=x", "{}", 2, 0, &r);
	assert_int_equal(r.status, 415);
	assert_non_null(strstr(r.body, "Content-Type: 'multipart/form-data; boundary=x'"));

	/* over the cap: at once by Content-Length, or after a chunked upload */
	memset(body, ' ', big);
	request(&s, "POST", "/api/v1/marks", "application/json", body, big, 0, &r);
	assert_int_equal(r.status, 413);
	assert_non_null(strstr(r.body, "at most 1048576"));
	request(&s, "POST", "/api/v1/alertmanager", "application/json", NULL, 0, 2 * big, &r);
	assert_int_equal(r.status, 413);
	/* at the cap: taken (white space is an empty mark) */
	request(&s, "POST", "/api/v1/marks", "application/json", body, big - 1, 0, &r);
	assert_int_equal(r.status, 200);
	request(&s, "POST", "/api/v1/marks", "application/json", NULL, 0, big - 1, &r);
	assert_int_equal(r.status, 200);
	assert_int_equal(stub.marks, 2);
	assert_int_equal(count(&s, HTTP_WRITE_MARKS, HTTP_WRITE_INVALID), 2);
	assert_int_equal(count(&s, HTTP_WRITE_ALERTMANAGER, HTTP_WRITE_INVALID), 1);
	http_api__stop(s.h);
	free(body);

	/* no spike module: 503 */
	start(&s, NULL, 0, 0);
	post(&s, "/api/v1/marks", "{}", &r);
	assert_int_equal(r.status, 503);
	assert_int_equal(count(&s, HTTP_WRITE_MARKS, HTTP_WRITE_UNAVAILABLE), 1);
	http_api__stop(s.h);
}

/* The snapshot endpoints without a state directory, and names: %00 in a path never names a
 * shorter one ("a%00b" is not "a"), bad names are 400 before the 409. */
static void test_snapshot_paths(void **state)
{
	struct server s;
	struct reply r;

	(void)state;
	start(&s, NULL, 0, 0);
	request(&s, "DELETE", "/api/v1/snapshots/withbody%00x", NULL, NULL, 0, 0, &r);
	assert_int_equal(r.status, 400);
	assert_non_null(strstr(r.body, "withbody%00x"));
	request(&s, "DELETE", "/api/v1/snapshots/ok", NULL, NULL, 0, 0, &r);
	assert_int_equal(r.status, 409);
	assert_non_null(strstr(r.body, "--state-dir"));
	request(&s, "GET", "/api/v1/snapshots", NULL, NULL, 0, 0, &r);
	assert_int_equal(r.status, 409);
	post(&s, "/api/v1/snapshots?name=a%00b&last=1m", "", &r);
	assert_int_equal(r.status, 400);
	post(&s, "/api/v1/snapshots?name=ok&last=1m", "", &r);
	assert_int_equal(r.status, 409);
	request(&s, "PUT", "/api/v1/snapshots", NULL, NULL, 0, 0, &r);
	assert_int_equal(r.status, 405);
	/* a %00 in a query value is named as such; a value that is no UTF-8 is echoed escaped */
	request(&s, "GET", "/api/v1/compare?stage=a%00b", NULL, NULL, 0, 0, &r);
	assert_int_equal(r.status, 400);
	assert_non_null(strstr(r.body, "NUL"));
	request(&s, "GET", "/api/v1/compare?min_effect=0x10", NULL, NULL, 0, 0, &r);
	assert_int_equal(r.status, 400);
	request(&s, "GET", "/api/v1/compare?stage=", NULL, NULL, 0, 0, &r);
	assert_int_equal(r.status, 400);
	request(&s, "GET", "/api/v1/compare?before_snapshot=%ff&after_snapshot=x", NULL, NULL, 0, 0,
		&r);
	assert_int_equal(r.status, 400);
	assert_non_null(strstr(r.body, "\\xff"));
	http_api__stop(s.h);
}

static void test_rate_limit(void **state)
{
	struct server s;
	struct reply r;
	char *text = NULL;
	struct http_write_counts c;

	start(&s, (struct spikes *)&fake_spikes, 1, 3); /* one a minute, three at once, each */
	for (int i = 0; i < 5; i++) {
		post(&s, i % 2 ? "/api/v1/alertmanager" : "/api/v1/marks",
		     i % 2 ? "{\"version\":\"4\",\"alerts\":[]}" : "{}", &r);
		assert_int_equal(r.status, 200);
	}
	/* marks took three, Alertmanager two: its own bucket has one more */
	post(&s, "/api/v1/alertmanager", "{\"version\":\"4\",\"alerts\":[]}", &r);
	assert_int_equal(r.status, 200);
	post(&s, "/api/v1/alertmanager", "{\"version\":\"4\",\"alerts\":[]}", &r);
	assert_int_equal(r.status, 503);
	assert_true(atoi(r.retry_after) >= 59 && atoi(r.retry_after) <= 60);
	assert_non_null(strstr(r.body, "too many write requests"));
	/* a mark past the rate: 429 (Alertmanager's 503 above: it retries 5xx only) */
	post(&s, "/api/v1/marks", "not even JSON", &r);
	assert_int_equal(r.status, 429);
	assert_true(atoi(r.retry_after) >= 59 && atoi(r.retry_after) <= 60);
	assert_non_null(strstr(r.body, "\"error\""));
	assert_int_equal(stub.marks, 3);

	http_api__write_counts(s.h, &c);
	assert_int_equal(c.n[HTTP_WRITE_MARKS][HTTP_WRITE_ACCEPTED], 3);
	assert_int_equal(c.n[HTTP_WRITE_ALERTMANAGER][HTTP_WRITE_ACCEPTED], 3);
	assert_int_equal(c.n[HTTP_WRITE_MARKS][HTTP_WRITE_RATE_LIMITED], 1);
	assert_int_equal(c.n[HTTP_WRITE_ALERTMANAGER][HTTP_WRITE_RATE_LIMITED], 1);
	assert_int_equal(http_api__write_metrics_text(&c, &text), 0);
	assert_non_null(strstr(text, "# TYPE tailprof_api_writes_total counter\n"));
	assert_non_null(
	    strstr(text, "tailprof_api_writes_total{endpoint=\"marks\",result=\"accepted\"} 3\n"));
	assert_non_null(strstr(
	    text,
	    "tailprof_api_writes_total{endpoint=\"alertmanager\",result=\"rate_limited\"} 1\n"));
	assert_non_null(strstr(
	    text,
	    "tailprof_api_writes_total{endpoint=\"alertmanager\",result=\"unavailable\"} 0\n"));
	assert_non_null(strstr(text, "# TYPE tailprof_http_rejected_total counter\n"));
	assert_non_null(strstr(
	    text, "tailprof_http_rejected_total{route=\"/api/v1/marks\",reason=\"rate\"} 1\n"));
	assert_non_null(strstr(
	    text,
	    "tailprof_http_rejected_total{route=\"/api/v1/alertmanager\",reason=\"rate\"} 1\n"));
	free(text);
	http_api__stop(s.h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_mark),
	    cmocka_unit_test(test_alertmanager),
	    cmocka_unit_test(test_methods_types_sizes),
	    cmocka_unit_test(test_rate_limit),
	    cmocka_unit_test(test_snapshot_paths),
	};
	int rc;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
