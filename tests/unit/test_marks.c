// SPDX-License-Identifier: GPL-2.0-only
/* Unit tests of the write endpoints' parsing (marks, Alertmanager webhooks) and rate limit. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "marks.h"
#include "timeparse.h"

#define SEC   1000000000LL
#define NOW   (1796159045LL * SEC) /* 2026-12-01T21:04:05Z */
#define T_SEC 1795986245LL	   /* 2026-11-29T21:04:05Z */

static char err[512];

/* Fails unless err begins with prefix. */
#define assert_err(prefix)                                                                         \
	do {                                                                                       \
		if (strncmp(err, prefix, strlen(prefix)))                                          \
			fail_msg("error '%s' does not begin with '%s'", err, prefix);              \
	} while (0)

static int mark(const char *body, struct spike_mark *m)
{
	err[0] = 0;
	return marks__parse_mark(body, strlen(body), NOW, m, err, sizeof(err));
}

static int alerts(const char *body, struct spike_alert **a, size_t *n)
{
	err[0] = 0;
	return marks__parse_alerts(body, strlen(body), a, n, err, sizeof(err));
}

static int utf8_valid(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		int more = *p < 0x80		 ? 0
			   : (*p & 0xe0) == 0xc0 ? 1
			   : (*p & 0xf0) == 0xe0 ? 2
			   : (*p & 0xf8) == 0xf0 ? 3
						 : -1;

		if (more < 0)
			return 0;
		p++;
		for (; more; more--, p++)
			if ((*p & 0xc0) != 0x80)
				return 0;
	}
	return 1;
}

static char *read_fixture(const char *name)
{
	const char *dir = getenv("TAILPROF_FIXTURES_SRC");
	char path[512];
	char *buf;
	FILE *f;
	long len;

	if (!dir)
		fail_msg("TAILPROF_FIXTURES_SRC is not set: run through meson test");
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	buf = calloc(1, len + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, len, f), len);
	fclose(f);
	return buf;
}

/* ---- marks ---- */

static void test_mark_times(void **state)
{
	struct spike_mark m;

	assert_int_equal(mark("{\"time\": \"2026-11-29T21:04:05Z\", \"reason\": \"deploy\"}", &m),
			 0);
	assert_int_equal(m.time_unix_ns, T_SEC * SEC);
	assert_string_equal(m.reason, "deploy");
	assert_string_equal(m.stage, "");
	assert_false(m.has_before);
	assert_false(m.has_after);
	assert_int_equal(mark("{\"time\": \"2026-11-29T22:04:05.123456789+01:00\"}", &m), 0);
	assert_int_equal(m.time_unix_ns, T_SEC * SEC + 123456789);
	assert_int_equal(mark("{\"time\": 1795986245}", &m), 0);
	assert_int_equal(m.time_unix_ns, T_SEC * SEC);
	/* a fractional number: to the microsecond */
	assert_int_equal(mark("{\"time\": 1795986245.25}", &m), 0);
	assert_int_equal(m.time_unix_ns, T_SEC * SEC + 250000000);
	assert_int_equal(mark("{\"time\": 1795986245.123}", &m), 0);
	assert_int_equal(m.time_unix_ns, T_SEC * SEC + 123000000);
	assert_int_equal(mark("{\"time\": 1795986245.9999999}", &m), 0);
	assert_int_equal(m.time_unix_ns, (T_SEC + 1) * SEC);
	/* numeric strings keep nanoseconds */
	assert_int_equal(mark("{\"time\": \"1795986245\"}", &m), 0);
	assert_int_equal(m.time_unix_ns, T_SEC * SEC);
	assert_int_equal(mark("{\"time\": \"1795986245.123456789\"}", &m), 0);
	assert_int_equal(m.time_unix_ns, T_SEC * SEC + 123456789);
	/* no time: now */
	assert_int_equal(mark("{}", &m), 0);
	assert_int_equal(m.time_unix_ns, NOW);
	assert_int_equal(mark("{\"time\": null, \"reason\": \"x\"}", &m), 0);
	assert_int_equal(m.time_unix_ns, NOW);
	assert_int_equal(mark("", &m), 0);
	assert_int_equal(m.time_unix_ns, NOW);
	assert_int_equal(mark(" \r\n\t", &m), 0);
	assert_int_equal(m.time_unix_ns, NOW);
}

static void test_mark_bad_times(void **state)
{
	struct spike_mark m = {.time_unix_ns = 42};

	assert_int_equal(mark("{\"time\": \"yesterday\"}", &m), -EINVAL);
	assert_err("time: 'yesterday' is not a time; use RFC 3339");
	assert_int_equal(mark("{\"time\": \"2026-11-29T21:04:05\"}", &m), -EINVAL);
	assert_err("time: '2026-11-29T21:04:05' is not a time");
	assert_int_equal(mark("{\"time\": \"1969-12-31T23:59:59Z\"}", &m), -EINVAL);
	assert_err("time: '1969-12-31T23:59:59Z' is out of range");
	assert_int_equal(mark("{\"time\": -1}", &m), -EINVAL);
	assert_err("time: -1 is out of range");
	assert_int_equal(mark("{\"time\": 9223372036}", &m), -EINVAL);
	assert_err("time: 9223372036 is out of range");
	assert_int_equal(mark("{\"time\": 1e300}", &m), -EINVAL);
	assert_err("time: 1e+300 is out of range");
	assert_int_equal(mark("{\"time\": -0.5}", &m), -EINVAL);
	assert_err("time: -0.5 is out of range");
	assert_int_equal(mark("{\"time\": true}", &m), -EINVAL);
	assert_err("time: a boolean; use RFC 3339");
	assert_int_equal(mark("{\"time\": [1]}", &m), -EINVAL);
	assert_err("time: an array;");
	/* nothing written on error */
	assert_int_equal(m.time_unix_ns, 42);
}

static void test_mark_spans_and_stage(void **state)
{
	struct spike_mark m;

	assert_int_equal(
	    mark("{\"stage\": \"db_query\", \"before\": \"500ms\", \"after\": \"1h30m\"}", &m), 0);
	assert_string_equal(m.stage, "db_query");
	assert_true(m.has_before);
	assert_int_equal(m.before_ns, 500 * NSEC_PER_MSEC);
	assert_true(m.has_after);
	assert_int_equal(m.after_ns, 5400 * NSEC_PER_SEC);
	assert_int_equal(mark("{\"before\": \"0s\", \"after\": \"24h\"}", &m), 0);
	assert_true(m.has_before);
	assert_int_equal(m.before_ns, 0);
	assert_int_equal(m.after_ns, 24 * 3600 * NSEC_PER_SEC);
	assert_int_equal(mark("{\"before\": \"0\", \"after\": \"0\"}", &m), 0);
	assert_true(m.has_before && m.has_after);
	assert_int_equal(m.before_ns + m.after_ns, 0);
	assert_int_equal(mark("{\"before\": null, \"stage\": null}", &m), 0);
	assert_false(m.has_before);
	assert_string_equal(m.stage, "");

	assert_int_equal(mark("{\"before\": \"5 min\"}", &m), -EINVAL);
	assert_err("before: '5 min' is not a duration; use e.g. 500ms, 2s, 10m, 1h");
	assert_int_equal(mark("{\"after\": \"10\"}", &m), -EINVAL);
	assert_err("after: '10' is not a duration");
	assert_int_equal(mark("{\"after\": \"1.5s\"}", &m), -EINVAL);
	assert_err("after: '1.5s' is not a duration");
	assert_int_equal(mark("{\"after\": \"\"}", &m), -EINVAL);
	assert_err("after: '' is not a duration");
	assert_int_equal(mark("{\"before\": 5}", &m), -EINVAL);
	assert_err("before: a number; give a duration string such as \"500ms\"");
	assert_int_equal(mark("{\"before\": \"25h\"}", &m), -EINVAL);
	assert_err("before: '25h' is too long; at most 24h");
	assert_int_equal(mark("{\"before\": \"99999999999999999999h\"}", &m), -EINVAL);
	assert_err("before: '99999999999999999999h' is too long");

	assert_int_equal(mark("{\"stage\": \"db query\"}", &m), -EINVAL);
	assert_err("stage: 'db query' is not a stage name; give 1 to 31 letters, digits");
	assert_int_equal(mark("{\"stage\": \"\"}", &m), -EINVAL);
	assert_err("stage: '' is not a stage name");
	assert_int_equal(mark("{\"stage\": \"abcdefghijklmnopqrstuvwxyz012345\"}", &m), -EINVAL);
	assert_err("stage: 'abcdefghijklmnopqrstuvwxyz012345' is not a stage name");
	assert_int_equal(mark("{\"stage\": \"abcdefghijklmnopqrstuvwxyz01234\"}", &m), 0);
	assert_string_equal(m.stage, "abcdefghijklmnopqrstuvwxyz01234");
	assert_int_equal(mark("{\"stage\": 7}", &m), -EINVAL);
	assert_err("stage: a number; give a stage name as a string");
}

static void test_mark_reason_cut(void **state)
{
	char body[2048], want[SPIKE_REASON_LEN];
	struct spike_mark m;
	size_t n = 0;

	/* 300 two-byte characters: 254 bytes fit, 255 would split one */
	n += snprintf(body + n, sizeof(body) - n, "{\"reason\": \"");
	for (int i = 0; i < 300; i++)
		n += snprintf(body + n, sizeof(body) - n, "\xc3\xa9");
	snprintf(body + n, sizeof(body) - n, "\"}");
	assert_int_equal(mark(body, &m), 0);
	assert_int_equal(strlen(m.reason), 254);
	assert_true(utf8_valid(m.reason));
	/* ASCII: exactly SPIKE_REASON_LEN - 1 bytes */
	n = snprintf(body, sizeof(body), "{\"reason\": \"");
	memset(body + n, 'r', 400);
	snprintf(body + n + 400, sizeof(body) - n - 400, "\"}");
	assert_int_equal(mark(body, &m), 0);
	memset(want, 'r', SPIKE_REASON_LEN - 1);
	want[SPIKE_REASON_LEN - 1] = 0;
	assert_string_equal(m.reason, want);
	/* a three-byte character straddling the cut: 253 bytes of 'a' then U+20AC */
	n = snprintf(body, sizeof(body), "{\"reason\": \"");
	memset(body + n, 'a', 253);
	snprintf(body + n + 253, sizeof(body) - n - 253, "\xe2\x82\xac tail\"}");
	assert_int_equal(mark(body, &m), 0);
	assert_int_equal(strlen(m.reason), 253);
	/* escapes are decoded */
	assert_int_equal(mark("{\"reason\": \"caf\\u00e9 \\\"deploy\\\"\"}", &m), 0);
	assert_string_equal(m.reason, "caf\xc3\xa9 \"deploy\"");
	assert_int_equal(mark("{\"reason\": 12}", &m), -EINVAL);
	assert_err("reason: a number; give a string");
}

static void test_mark_malformed(void **state)
{
	struct spike_mark m;

	assert_int_equal(mark("{\"stgae\": \"db\"}", &m), -EINVAL);
	assert_err("stgae: unknown key; allowed: time, reason, stage, before, after");
	assert_int_equal(mark("{\"\": 1}", &m), -EINVAL);
	assert_err("(empty key): unknown key");
	assert_int_equal(mark("{\"time\": 1795986245, \"time\": 1}", &m), -EINVAL);
	assert_err("body: not JSON (duplicate object key");
	assert_int_equal(mark("{\"time\": ", &m), -EINVAL);
	assert_err("body: not JSON (");
	assert_int_equal(mark("{\"reason\": \"x\"} trailing", &m), -EINVAL);
	assert_err("body: not JSON (");
	assert_int_equal(mark("[]", &m), -EINVAL);
	assert_err("body: an array; send one JSON object");
	assert_int_equal(mark("\"now\"", &m), -EINVAL);
	assert_err("body: a string; send one JSON object");
	assert_int_equal(mark("time=now", &m), -EINVAL);
	assert_err("body: not JSON (");
	assert_int_equal(mark("{\"reason\": \"\xff\xfe\"}", &m), -EINVAL);
	assert_err("body: not UTF-8 at byte ");
	assert_int_equal(mark("{\"reason\": \"a\\u0000b\"}", &m), -EINVAL);
	assert_err("body: not JSON (");
	assert_true(utf8_valid(err));
}

/* Errors quote at most MARKS_ERR_ECHO_BYTES bytes, printable ASCII only. */
static void test_mark_echo_cut(void **state)
{
	char body[4096];
	struct spike_mark m;
	size_t n;

	n = snprintf(body, sizeof(body), "{\"stage\": \"");
	memset(body + n, 's', 3000);
	snprintf(body + n + 3000, sizeof(body) - n - 3000, "\"}");
	assert_int_equal(mark(body, &m), -EINVAL);
	assert_true(strlen(err) < 200);
	assert_non_null(strstr(err, "sss...'"));
	assert_int_equal(mark("{\"stage\": \"\xc3\xa9t\xc3\xa9\\n\"}", &m), -EINVAL);
	assert_err("stage: '?\?t?\?\?' is not a stage name");
}

/* ---- Alertmanager ---- */

static void test_alerts_fixture(void **state)
{
	char *body = read_fixture("alertmanager_v4.json");
	struct spike_alert *a = NULL;
	size_t n = 0;

	assert_int_equal(marks__parse_alerts(body, strlen(body), &a, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 2);
	assert_true(a[0].firing);
	assert_int_equal(a[0].starts_unix_ns, 1796159045LL * SEC + 123456789);
	assert_int_equal(a[0].ends_unix_ns, 0);
	assert_string_equal(a[0].fingerprint, "5c2f0e5a3b1d9e7f");
	assert_string_equal(a[0].group_key,
			    "{}/{severity=\"page\"}:{alertname=\"CheckoutP95High\"}");
	assert_string_equal(a[0].stage, "db_query");
	assert_string_equal(a[0].reason, "CheckoutP95High: checkout db_query p95 above 250ms");
	assert_false(a[1].firing);
	assert_int_equal(a[1].starts_unix_ns, 1796158295LL * SEC + 500000000);
	assert_int_equal(a[1].ends_unix_ns, 1796158970LL * SEC + 250000000);
	assert_string_equal(a[1].fingerprint, "a81f3c0d96e24b17");
	assert_string_equal(a[1].group_key, a[0].group_key);
	assert_string_equal(a[1].stage, "checkout"); /* labels.service */
	assert_string_equal(a[1].reason, "CheckoutP95High: checkout p95 above 250ms");
	free(a);

	/* cut anywhere, it is not JSON */
	for (size_t cut = 0; cut < strlen(body); cut += 97) {
		a = (struct spike_alert *)&n;
		assert_int_equal(marks__parse_alerts(body, cut, &a, &n, err, sizeof(err)), -EINVAL);
		assert_err("body: not JSON (");
		assert_ptr_equal(a, &n);
	}
	free(body);
}

/* A delivery with one alert whose fields are given by the caller. */
static int one_alert(const char *alert_fields, struct spike_alert **a, size_t *n)
{
	char body[4096];

	snprintf(
	    body, sizeof(body),
	    "{\"version\":\"4\",\"groupKey\":\"{}:{}\",\"status\":\"firing\",\"alerts\":[{%s}]}",
	    alert_fields);
	return alerts(body, a, n);
}

#define FIRING "\"status\":\"firing\",\"fingerprint\":\"f1\",\"startsAt\":\"2026-11-29T21:04:05Z\""

static void test_alerts_fields(void **state)
{
	struct spike_alert *a;
	size_t n;

	/* the minimum: no endsAt, labels or annotations */
	assert_int_equal(one_alert(FIRING, &a, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(a[0].starts_unix_ns, T_SEC * SEC);
	assert_int_equal(a[0].ends_unix_ns, 0);
	assert_string_equal(a[0].stage, "");
	assert_string_equal(a[0].reason, "");
	assert_string_equal(a[0].group_key, "{}:{}");
	free(a);
	/* summary alone; a service that cannot be a stage name is no stage; empty stage = none */
	assert_int_equal(one_alert(FIRING ",\"labels\":{\"service\":\"check out\",\"stage\":\"\"},"
					  "\"annotations\":{\"summary\":\"slow\"}",
				   &a, &n),
			 0);
	assert_string_equal(a[0].stage, "");
	assert_string_equal(a[0].reason, "slow");
	free(a);
	/* alertname alone; offsets; a firing alert with a real endsAt (other senders) */
	assert_int_equal(one_alert(FIRING ",\"labels\":{\"alertname\":\"A\"},"
					  "\"endsAt\":\"2026-11-29T22:04:05.5+01:00\"",
				   &a, &n),
			 0);
	assert_string_equal(a[0].reason, "A");
	assert_int_equal(a[0].ends_unix_ns, T_SEC * SEC + 500000000);
	free(a);
	/* extra keys (Grafana's orgId, silenceURL, values...) are ignored; no alerts is fine */
	a = (struct spike_alert *)&n;
	assert_int_equal(alerts("{\"version\":\"4\",\"orgId\":1,\"alerts\":[]}", &a, &n), 0);
	assert_int_equal(n, 0);
	assert_null(a);
	assert_int_equal(one_alert(FIRING ",\"silenceURL\":\"x\",\"values\":{\"B\":1.5}", &a, &n),
			 0);
	free(a);
}

static void test_alerts_malformed(void **state)
{
	static const struct {
		const char *body, *err;
	} cases[] = {
	    {"{\"version\":\"4\",\"alerts\":", "body: not JSON ("},
	    {"[{\"version\":\"4\"}]", "body: an array; send one JSON object"},
	    {"{\"alerts\":[]}", "version: missing; this receiver takes Alertmanager's webhook "
				"payload version \"4\""},
	    {"{\"version\":\"3\",\"alerts\":[]}", "version: '3' is not supported"},
	    {"{\"version\":4,\"alerts\":[]}", "version: a number; this receiver takes"},
	    {"{\"version\":\"4\"}", "alerts: missing"},
	    {"{\"version\":\"4\",\"alerts\":{}}", "alerts: an object; must be an array of alerts"},
	    {"{\"version\":\"4\",\"alerts\":[\"x\"]}",
	     "alerts[0]: a string; each alert is an object"},
	    {"{\"version\":\"4\",\"groupKey\":7,\"alerts\":[]}",
	     "groupKey: a number; must be a string"},
	    {"{\"version\":\"4\",\"truncatedAlerts\":-1,\"alerts\":[]}",
	     "truncatedAlerts: a number; must be a count"},
	    {"{\"version\":\"4\",\"alerts\":[{" FIRING "},{" FIRING "},{\"status\":\"firing\","
	     "\"fingerprint\":\"f3\"}]}",
	     "alerts[2].startsAt: missing; give the RFC 3339 time it started"},
	    {"{\"version\":\"4\",\"alerts\":[{" FIRING
	     "},{\"status\":\"firing\",\"fingerprint\":\"f\","
	     "\"startsAt\":\"yesterday\"}]}",
	     "alerts[1].startsAt: 'yesterday' is not an RFC 3339 time; e.g. "
	     "2026-12-01T21:04:05.123Z"},
	    {"{\"version\":\"4\",\"alerts\":[{\"status\":\"firing\",\"fingerprint\":\"f\","
	     "\"startsAt\":\"1795986245\"}]}",
	     "alerts[0].startsAt: '1795986245' is not an RFC 3339 time"},
	    {"{\"version\":\"4\",\"alerts\":[{\"status\":\"firing\",\"fingerprint\":\"f\","
	     "\"startsAt\":\"0001-01-01T00:00:00Z\"}]}",
	     "alerts[0].startsAt: '0001-01-01T00:00:00Z' is out of range"},
	    {"{\"version\":\"4\",\"alerts\":[{\"status\":\"firing\",\"fingerprint\":\"f\","
	     "\"startsAt\":1795986245}]}",
	     "alerts[0].startsAt: a number; must be a string"},
	    {"{\"version\":\"4\",\"alerts\":[{" FIRING ",\"endsAt\":\"2026-02-30T25:00:00Z\"}]}",
	     "alerts[0].endsAt: '2026-02-30T25:00:00Z' is not an RFC 3339 time; e.g. "
	     "2026-12-01T21:04:05.123Z, or 0001-01-01T00:00:00Z"},
	    {"{\"version\":\"4\",\"alerts\":[{\"fingerprint\":\"f\",\"startsAt\":"
	     "\"2026-11-29T21:04:05Z\"}]}",
	     "alerts[0].status: missing; give \"firing\" or \"resolved\""},
	    {"{\"version\":\"4\",\"alerts\":[{\"status\":\"pending\",\"fingerprint\":\"f\","
	     "\"startsAt\":\"2026-11-29T21:04:05Z\"}]}",
	     "alerts[0].status: 'pending' is not \"firing\" or \"resolved\""},
	    {"{\"version\":\"4\",\"alerts\":[{\"status\":\"firing\",\"startsAt\":"
	     "\"2026-11-29T21:04:05Z\"}]}",
	     "alerts[0].fingerprint: missing"},
	    {"{\"version\":\"4\",\"alerts\":[{\"status\":\"firing\",\"fingerprint\":\"a/b\","
	     "\"startsAt\":\"2026-11-29T21:04:05Z\"}]}",
	     "alerts[0].fingerprint: 'a/b' is not 1 to 64 letters, digits"},
	    {"{\"version\":\"4\",\"alerts\":[{\"status\":\"firing\",\"fingerprint\":\"\","
	     "\"startsAt\":\"2026-11-29T21:04:05Z\"}]}",
	     "alerts[0].fingerprint: '' is not 1 to 64"},
	    {"{\"version\":\"4\",\"alerts\":[{\"status\":\"resolved\",\"fingerprint\":\"f\","
	     "\"startsAt\":\"2026-11-29T21:04:05Z\",\"endsAt\":\"0001-01-01T00:00:00Z\"}]}",
	     "alerts[0].endsAt: the zero time; a resolved alert needs the RFC 3339 time it ended"},
	    {"{\"version\":\"4\",\"alerts\":[{\"status\":\"resolved\",\"fingerprint\":\"f\","
	     "\"startsAt\":\"2026-11-29T21:04:05Z\"}]}",
	     "alerts[0].endsAt: missing; a resolved alert needs"},
	    {"{\"version\":\"4\",\"alerts\":[{" FIRING ",\"labels\":[]}]}",
	     "alerts[0].labels: an array; must be an object of strings"},
	    {"{\"version\":\"4\",\"alerts\":[{" FIRING ",\"annotations\":\"x\"}]}",
	     "alerts[0].annotations: a string; must be an object of strings"},
	    {"{\"version\":\"4\",\"alerts\":[{" FIRING ",\"labels\":{\"stage\":\"db query\"}}]}",
	     "alerts[0].labels.stage: 'db query' is not a stage name"},
	    {"{\"version\":\"4\",\"alerts\":[{" FIRING ",\"labels\":{\"alertname\":1}}]}",
	     "alerts[0].labels.alertname: a number; must be a string"},
	    {"{\"version\":\"4\",\"alerts\":[{" FIRING ",\"annotations\":{\"summary\":false}}]}",
	     "alerts[0].annotations.summary: a boolean; must be a string"},
	    {"{\"version\":\"4\",\"alerts\":[{" FIRING
	     ",\"labels\":{\"alertname\":\"\xc0\xaf\"}}]}",
	     "body: not UTF-8 at byte "},
	};
	struct spike_alert *a;
	size_t n;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		a = (struct spike_alert *)&n;
		n = 77;
		if (alerts(cases[i].body, &a, &n) != -EINVAL)
			fail_msg("case %zu was taken: %s", i, cases[i].body);
		if (strncmp(err, cases[i].err, strlen(cases[i].err)))
			fail_msg("case %zu: error '%s' does not begin with '%s'", i, err,
				 cases[i].err);
		assert_true(utf8_valid(err));
		/* nothing returned */
		assert_ptr_equal(a, &n);
		assert_int_equal(n, 77);
	}
}

static void test_alerts_limits(void **state)
{
	size_t cap = 64 * 1024 + (MARKS_MAX_ALERTS + 1) * 80, len = 0;
	char *body = malloc(cap);
	struct spike_alert *a;
	size_t n;

	assert_non_null(body);
	/* huge strings are cut at a character boundary */
	len = snprintf(body, cap, "{\"version\":\"4\",\"groupKey\":\"");
	for (int i = 0; i < 10000; i++)
		len += snprintf(body + len, cap - len, "\xe2\x82\xac");
	len += snprintf(body + len, cap - len,
			"\",\"alerts\":[{" FIRING ",\"labels\":{\"alertname\":\"Bigg\"},"
			"\"annotations\":{\"summary\":\"");
	for (int i = 0; i < 10000; i++)
		len += snprintf(body + len, cap - len, "\xc3\xa9");
	snprintf(body + len, cap - len, "\"}}]}");
	assert_int_equal(alerts(body, &a, &n), 0);
	assert_int_equal(strlen(a[0].group_key), 255); /* 85 three-byte characters */
	assert_true(utf8_valid(a[0].group_key));
	assert_int_equal(strlen(a[0].reason), 254); /* "Bigg: " + 124 two-byte characters */
	assert_true(utf8_valid(a[0].reason));
	assert_memory_equal(a[0].reason, "Bigg: \xc3\xa9", 8);
	free(a);

	/* MARKS_MAX_ALERTS alerts are taken, one more is not */
	for (int extra = 0; extra < 2; extra++) {
		len = snprintf(body, cap, "{\"version\":\"4\",\"alerts\":[");
		for (int i = 0; i < MARKS_MAX_ALERTS + extra; i++)
			len += snprintf(body + len, cap - len, "%s{" FIRING "}", i ? "," : "");
		snprintf(body + len, cap - len, "]}");
		if (!extra) {
			assert_int_equal(alerts(body, &a, &n), 0);
			assert_int_equal(n, MARKS_MAX_ALERTS);
			free(a);
		} else {
			assert_int_equal(alerts(body, &a, &n), -EINVAL);
			assert_err("alerts: 257 in one delivery; at most 256 (set max_alerts: 256");
		}
	}
	free(body);
}

/* ---- rate limit ---- */

static void test_bucket(void **state)
{
	struct marks_bucket b;
	uint64_t t = 1000 * SEC;

	marks__bucket_init(&b, 0, 0); /* 60 a minute, burst 20 */
	for (int i = 0; i < MARKS_DEFAULT_BURST; i++)
		assert_int_equal(marks__bucket_take(&b, t), 0);
	assert_int_equal(marks__bucket_take(&b, t), 1);
	assert_int_equal(marks__bucket_take(&b, t + SEC / 2), 1);
	/* refused requests take nothing: one token a second */
	assert_int_equal(marks__bucket_take(&b, t + SEC), 0);
	assert_int_equal(marks__bucket_take(&b, t + SEC), 1);
	/* a quiet time refills up to the burst, no more */
	t += 3600 * SEC;
	for (int i = 0; i < MARKS_DEFAULT_BURST; i++)
		assert_int_equal(marks__bucket_take(&b, t), 0);
	assert_int_equal(marks__bucket_take(&b, t), 1);

	marks__bucket_init(&b, 1, 1); /* one a minute */
	assert_int_equal(marks__bucket_take(&b, t), 0);
	assert_int_equal(marks__bucket_take(&b, t), 60);
	assert_int_equal(marks__bucket_take(&b, t + 59 * SEC + 1), 1);
	assert_int_equal(marks__bucket_take(&b, t + 60 * SEC), 0);

	marks__bucket_init(&b, 600, 2); /* ten a second */
	assert_int_equal(marks__bucket_take(&b, t), 0);
	assert_int_equal(marks__bucket_take(&b, t), 0);
	assert_int_equal(marks__bucket_take(&b, t), 1);
	assert_int_equal(marks__bucket_take(&b, t + SEC / 10), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_mark_times),
	    cmocka_unit_test(test_mark_bad_times),
	    cmocka_unit_test(test_mark_spans_and_stage),
	    cmocka_unit_test(test_mark_reason_cut),
	    cmocka_unit_test(test_mark_malformed),
	    cmocka_unit_test(test_mark_echo_cut),
	    cmocka_unit_test(test_alerts_fixture),
	    cmocka_unit_test(test_alerts_fields),
	    cmocka_unit_test(test_alerts_malformed),
	    cmocka_unit_test(test_alerts_limits),
	    cmocka_unit_test(test_bucket),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
