// SPDX-License-Identifier: GPL-2.0-only
/* Parsing of the write endpoints' bodies (marks, Alertmanager webhooks) and their rate limit. */
#include "marks.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "config.h"
#include "timeparse.h"
#include "utf8.h"

#define ECHO_BUF (MARKS_ERR_ECHO_BYTES + 8)

static int __attribute__((format(printf, 3, 4)))
fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* Quotes s for an error message: printable ASCII kept, any other byte '?' (the error goes into
 * JSON and logs; jansson's own messages may quote the raw, non-UTF-8 input), at most
 * MARKS_ERR_ECHO_BYTES bytes and "..." when cut. buf needs ECHO_BUF bytes. */
static const char *echo(const char *s, char *buf)
{
	size_t n = 0;

	for (; *s && n < MARKS_ERR_ECHO_BYTES; s++)
		buf[n++] = *s >= 0x20 && *s < 0x7f ? *s : '?';
	if (*s)
		strcpy(buf + n, "...");
	else
		buf[n] = 0;
	return buf;
}

/* Appends src to dst (size bytes, *used of them taken, NUL-terminated) as far as it fits, cut
 * before a UTF-8 continuation byte so that a character is never split; control characters
 * become spaces. */
static void append_cut(char *dst, size_t size, size_t *used, const char *src)
{
	size_t room = size - 1 - *used, n = strlen(src);

	n = utf8_cut(src, n, room);
	/* control characters (a terminal's escapes, CR/LF) become spaces: reasons are printed */
	for (size_t i = 0; i < n; i++)
		dst[*used + i] = (unsigned char)src[i] < 0x20 || src[i] == 0x7f ? ' ' : src[i];
	*used += n;
	dst[*used] = 0;
}

static void copy_cut(char *dst, size_t size, const char *src)
{
	size_t used = 0;

	append_cut(dst, size, &used, src);
}

static const char *type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
	case JSON_REAL:
		return "a number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "a boolean";
	default:
		return "null";
	}
}

/* Decodes len bytes of JSON that must be an object. Returns it (a new reference), or NULL after
 * writing the error (*rc: -EINVAL or -ENOMEM). */
static json_t *load_object(const char *body, size_t len, int *rc, char *err, size_t errlen)
{
	char e[ECHO_BUF];
	json_error_t jerr;
	json_t *root;

	root = json_loadb(body, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
	if (!root) {
		if (json_error_code(&jerr) == json_error_out_of_memory) {
			*rc = -ENOMEM;
			snprintf(err, errlen, "out of memory");
		} else if (json_error_code(&jerr) == json_error_invalid_utf8) {
			*rc = fail(err, errlen, "body: not UTF-8 at byte %d; JSON text is UTF-8",
				   jerr.position);
		} else {
			*rc = fail(err, errlen,
				   "body: not JSON (%s, line %d column %d); send one "
				   "JSON object",
				   echo(jerr.text, e), jerr.line, jerr.column);
		}
		return NULL;
	}
	if (!json_is_object(root)) {
		*rc = fail(err, errlen, "body: %s; send one JSON object", type_name(root));
		json_decref(root);
		return NULL;
	}
	return root;
}

/* ---- POST /api/v1/marks ---- */

static const char *const mark_keys[] = {"time", "reason", "stage", "before", "after", NULL};

static int mark_time(const json_t *v, int64_t *ns, char *err, size_t errlen)
{
	static const char forms[] = "use RFC 3339 (2026-12-01T21:04:05Z) or Unix seconds "
				    "(1795986245 or 1795986245.25), from 1970 to 2262";
	char e[ECHO_BUF];
	double d, secs;
	int rc;

	if (json_is_string(v)) {
		rc = tp_parse_time(json_string_value(v), ns);
		if (rc)
			return fail(err, errlen, "time: '%s' is %s; %s",
				    echo(json_string_value(v), e),
				    rc == -ERANGE ? "out of range" : "not a time", forms);
		return 0;
	}
	if (json_is_integer(v)) {
		json_int_t i = json_integer_value(v);

		if (i < 0 || i >= TP_MAX_UNIX_SECONDS)
			return fail(err, errlen, "time: %lld is out of range; %s", (long long)i,
				    forms);
		*ns = (int64_t)i * (int64_t)NSEC_PER_SEC;
		return 0;
	}
	if (json_is_real(v)) {
		d = json_real_value(v);
		if (!(d >= 0 && d < (double)TP_MAX_UNIX_SECONDS))
			return fail(err, errlen, "time: %g is out of range; %s", d, forms);
		/* d - secs is exact; a double near 2^31 s holds about 0.24 us: round to 1 us */
		secs = (double)(int64_t)d;
		*ns = (int64_t)secs * (int64_t)NSEC_PER_SEC +
		      (int64_t)((d - secs) * 1e6 + 0.5) * (int64_t)NSEC_PER_USEC;
		return 0;
	}
	return fail(err, errlen, "time: %s; %s", type_name(v), forms);
}

static int mark_span(const char *key, const json_t *v, uint64_t *ns, char *err, size_t errlen)
{
	char e[ECHO_BUF];
	int rc;

	if (!json_is_string(v))
		return fail(err, errlen,
			    "%s: %s; give a duration string such as \"500ms\", \"2s\", \"10m\", "
			    "\"1h\"",
			    key, type_name(v));
	/* "0" is a duration too here (no window that side); tp_parse_duration wants a unit */
	*ns = 0;
	rc = strcmp(json_string_value(v), "0") ? tp_parse_duration(json_string_value(v), ns) : 0;
	if (rc == -EINVAL)
		return fail(err, errlen, "%s: '%s' is not a duration; use e.g. 500ms, 2s, 10m, 1h",
			    key, echo(json_string_value(v), e));
	if (rc || *ns > MARKS_MAX_SPAN_NS)
		return fail(err, errlen, "%s: '%s' is too long; at most 24h", key,
			    echo(json_string_value(v), e));
	return 0;
}

static int mark_stage(const char *where, const char *name, char *out, char *err, size_t errlen)
{
	char e[ECHO_BUF];

	if (!config__valid_stage_name(name))
		return fail(err, errlen,
			    "%s: '%s' is not a stage name; give 1 to %d letters, digits, '_', '.' "
			    "or '-'",
			    where, echo(name, e), TP_STAGE_NAME_LEN - 1);
	strcpy(out, name);
	return 0;
}

/* Checks the keys of a mark body against mark_keys. */
static int mark_keys_known(json_t *root, char *err, size_t errlen)
{
	const char *key;
	json_t *v;
	char e[ECHO_BUF];

	json_object_foreach(root, key, v)
	{
		bool known = false;

		for (int i = 0; mark_keys[i]; i++)
			known |= !strcmp(key, mark_keys[i]);
		if (!known)
			return fail(err, errlen,
				    "%s: unknown key; allowed: time, reason, stage, before, after",
				    *key ? echo(key, e) : "(empty key)");
	}
	return 0;
}

static bool all_space(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n')
			return false;
	return true;
}

/* The value of key in obj, NULL when it is absent or null. */
static json_t *get(json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);

	return json_is_null(v) ? NULL : v;
}

int marks__parse_mark(const char *body, size_t len, int64_t now_unix_ns, struct spike_mark *m,
		      char *err, size_t errlen)
{
	struct spike_mark out = {.time_unix_ns = now_unix_ns};
	json_t *root, *v;
	int rc = 0;

	if (all_space(body, len)) {
		*m = out;
		return 0;
	}
	root = load_object(body, len, &rc, err, errlen);
	if (!root)
		return rc;
	rc = mark_keys_known(root, err, errlen);
	if (!rc && (v = get(root, "time")))
		rc = mark_time(v, &out.time_unix_ns, err, errlen);
	if (!rc && (v = get(root, "reason"))) {
		if (json_is_string(v))
			copy_cut(out.reason, sizeof(out.reason), json_string_value(v));
		else
			rc = fail(err, errlen, "reason: %s; give a string", type_name(v));
	}
	if (!rc && (v = get(root, "stage"))) {
		if (!json_is_string(v))
			rc = fail(err, errlen, "stage: %s; give a stage name as a string",
				  type_name(v));
		else
			rc = mark_stage("stage", json_string_value(v), out.stage, err, errlen);
	}
	if (!rc && (v = get(root, "before"))) {
		out.has_before = true;
		rc = mark_span("before", v, &out.before_ns, err, errlen);
	}
	if (!rc && (v = get(root, "after"))) {
		out.has_after = true;
		rc = mark_span("after", v, &out.after_ns, err, errlen);
	}
	json_decref(root);
	if (!rc)
		*m = out;
	return rc;
}

/* ---- POST /api/v1/alertmanager ---- */

/* The string value of obj.key into *s (NULL when absent or null). path names obj in errors. */
static int get_string(json_t *obj, const char *path, const char *key, const char **s, char *err,
		      size_t errlen)
{
	json_t *v = get(obj, key);

	*s = NULL;
	if (!v)
		return 0;
	if (!json_is_string(v))
		return fail(err, errlen, "%s%s: %s; must be a string", path, key, type_name(v));
	*s = json_string_value(v);
	return 0;
}

/* The object value of obj.key into *o (NULL when absent or null). */
static int get_object(json_t *obj, const char *path, const char *key, json_t **o, char *err,
		      size_t errlen)
{
	json_t *v = get(obj, key);

	*o = NULL;
	if (v && !json_is_object(v))
		return fail(err, errlen, "%s%s: %s; must be an object of strings", path, key,
			    type_name(v));
	*o = v;
	return 0;
}

/* An alert time: RFC 3339, or Go's zero time (0) when zero_ok. */
static int alert_time(const char *path, const char *key, const char *s, bool zero_ok, int64_t *ns,
		      char *err, size_t errlen)
{
	char e[ECHO_BUF];
	int rc;

	if (!strcmp(s, MARKS_ZERO_TIME) && zero_ok) {
		*ns = 0;
		return 0;
	}
	rc = s[0] && strlen(s) >= 10 && s[4] == '-' ? tp_parse_time(s, ns) : -EINVAL;
	if (rc == -ERANGE)
		return fail(err, errlen, "%s%s: '%s' is out of range; from 1970 to 2262", path, key,
			    echo(s, e));
	if (rc)
		return fail(err, errlen,
			    "%s%s: '%s' is not an RFC 3339 time; e.g. 2026-12-01T21:04:05.123Z%s",
			    path, key, echo(s, e), zero_ok ? ", or " MARKS_ZERO_TIME : "");
	return 0;
}

static bool valid_fingerprint(const char *s)
{
	size_t n = strlen(s);

	if (!n || n >= SPIKE_FINGERPRINT_LEN)
		return false;
	return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == n;
}

/* The stage and reason of alert a from its labels and annotations. */
static int alert_labels(json_t *alert, const char *path, struct spike_alert *a, char *err,
			size_t errlen)
{
	const char *stage, *service, *name, *summary;
	json_t *labels, *annotations;
	char where[64];
	size_t used = 0;

	if (get_object(alert, path, "labels", &labels, err, errlen) ||
	    get_object(alert, path, "annotations", &annotations, err, errlen))
		return -EINVAL;
	snprintf(where, sizeof(where), "%slabels.", path);
	if (labels && (get_string(labels, where, "stage", &stage, err, errlen) ||
		       get_string(labels, where, "service", &service, err, errlen) ||
		       get_string(labels, where, "alertname", &name, err, errlen)))
		return -EINVAL;
	if (!labels)
		stage = service = name = NULL;
	snprintf(where, sizeof(where), "%sannotations.", path);
	summary = NULL;
	if (annotations && get_string(annotations, where, "summary", &summary, err, errlen))
		return -EINVAL;
	/* Prometheus: an empty label is no label */
	if (stage && *stage) {
		snprintf(where, sizeof(where), "%slabels.stage", path);
		if (mark_stage(where, stage, a->stage, err, errlen))
			return -EINVAL;
	} else if (service && config__valid_stage_name(service)) {
		strcpy(a->stage, service);
	}
	if (name && *name)
		append_cut(a->reason, sizeof(a->reason), &used, name);
	if (summary && *summary) {
		if (used)
			append_cut(a->reason, sizeof(a->reason), &used, ": ");
		append_cut(a->reason, sizeof(a->reason), &used, summary);
	}
	return 0;
}

static int parse_alert(json_t *alert, size_t i, const char *group_key, struct spike_alert *a,
		       char *err, size_t errlen)
{
	const char *status, *fp, *starts, *ends;
	char path[32], e[ECHO_BUF];

	snprintf(path, sizeof(path), "alerts[%zu].", i);
	if (!json_is_object(alert))
		return fail(err, errlen, "alerts[%zu]: %s; each alert is an object", i,
			    type_name(alert));
	if (get_string(alert, path, "status", &status, err, errlen) ||
	    get_string(alert, path, "fingerprint", &fp, err, errlen) ||
	    get_string(alert, path, "startsAt", &starts, err, errlen) ||
	    get_string(alert, path, "endsAt", &ends, err, errlen))
		return -EINVAL;
	if (!status)
		return fail(err, errlen, "%sstatus: missing; give \"firing\" or \"resolved\"",
			    path);
	if (strcmp(status, "firing") && strcmp(status, "resolved"))
		return fail(err, errlen, "%sstatus: '%s' is not \"firing\" or \"resolved\"", path,
			    echo(status, e));
	a->firing = !strcmp(status, "firing");
	if (!fp)
		return fail(err, errlen, "%sfingerprint: missing; Alertmanager sends one per alert",
			    path);
	if (!valid_fingerprint(fp))
		return fail(err, errlen,
			    "%sfingerprint: '%s' is not 1 to %d letters, digits, '.', '_' or '-'",
			    path, echo(fp, e), SPIKE_FINGERPRINT_LEN - 1);
	strcpy(a->fingerprint, fp);
	if (!starts)
		return fail(err, errlen, "%sstartsAt: missing; give the RFC 3339 time it started",
			    path);
	if (alert_time(path, "startsAt", starts, false, &a->starts_unix_ns, err, errlen) ||
	    (ends && alert_time(path, "endsAt", ends, true, &a->ends_unix_ns, err, errlen)))
		return -EINVAL;
	if (!a->firing && !a->ends_unix_ns)
		return fail(err, errlen,
			    "%sendsAt: %s; a resolved alert needs the RFC 3339 time it ended", path,
			    ends ? "the zero time" : "missing");
	copy_cut(a->group_key, sizeof(a->group_key), group_key);
	return alert_labels(alert, path, a, err, errlen);
}

/* Checks the top level of a delivery; *group_key and *list on success. */
static int parse_delivery(json_t *root, const char **group_key, json_t **list, char *err,
			  size_t errlen)
{
	const char *version;
	json_t *v;
	char e[ECHO_BUF];

	if (get_string(root, "", "version", &version, err, errlen))
		return fail(err, errlen,
			    "version: %s; this receiver takes Alertmanager's webhook payload "
			    "version \"4\"",
			    type_name(get(root, "version")));
	if (!version)
		return fail(err, errlen,
			    "version: missing; this receiver takes Alertmanager's webhook payload "
			    "version \"4\"");
	if (strcmp(version, "4"))
		return fail(err, errlen,
			    "version: '%s' is not supported; this receiver takes Alertmanager's "
			    "webhook payload version \"4\"",
			    echo(version, e));
	if (get_string(root, "", "groupKey", group_key, err, errlen))
		return -EINVAL;
	if (!*group_key)
		*group_key = "";
	v = get(root, "truncatedAlerts");
	if (v && (!json_is_integer(v) || json_integer_value(v) < 0))
		return fail(err, errlen, "truncatedAlerts: %s; must be a count (0 or more)",
			    type_name(v));
	*list = get(root, "alerts");
	if (!*list)
		return fail(err, errlen, "alerts: missing; a delivery carries an array of alerts");
	if (!json_is_array(*list))
		return fail(err, errlen, "alerts: %s; must be an array of alerts",
			    type_name(*list));
	if (json_array_size(*list) > MARKS_MAX_ALERTS)
		return fail(err, errlen,
			    "alerts: %zu in one delivery; at most %d (set max_alerts: %d in "
			    "Alertmanager's webhook_config)",
			    json_array_size(*list), MARKS_MAX_ALERTS, MARKS_MAX_ALERTS);
	return 0;
}

int marks__parse_alerts(const char *body, size_t len, struct spike_alert **alerts, size_t *n,
			char *err, size_t errlen)
{
	struct spike_alert *a = NULL;
	const char *group_key;
	json_t *root, *list, *alert;
	size_t i, count = 0;
	int rc = 0;

	root = load_object(body, len, &rc, err, errlen);
	if (!root)
		return rc;
	rc = parse_delivery(root, &group_key, &list, err, errlen);
	if (!rc)
		count = json_array_size(list);
	if (!rc && count) {
		a = calloc(count, sizeof(*a));
		if (!a) {
			rc = -ENOMEM;
			snprintf(err, errlen, "out of memory");
		}
	}
	if (!rc) {
		json_array_foreach(list, i, alert)
		{
			rc = parse_alert(alert, i, group_key, &a[i], err, errlen);
			if (rc)
				break;
		}
	}
	json_decref(root);
	if (rc) {
		free(a);
		return rc;
	}
	*alerts = a;
	*n = count;
	return 0;
}

/* ---- rate limit ---- */

void marks__bucket_init(struct marks_bucket *b, uint32_t rate_per_min, uint32_t burst)
{
	if (!rate_per_min)
		rate_per_min = MARKS_DEFAULT_RATE;
	if (!burst)
		burst = MARKS_DEFAULT_BURST;
	b->interval_ns = 60 * NSEC_PER_SEC / rate_per_min;
	b->tolerance_ns = (uint64_t)(burst - 1) * b->interval_ns;
	b->tat_ns = 0;
}

uint32_t marks__bucket_take(struct marks_bucket *b, uint64_t now_ns)
{
	uint64_t tat = b->tat_ns > now_ns ? b->tat_ns : now_ns, wait;

	if (tat - now_ns > b->tolerance_ns) {
		wait = tat - now_ns - b->tolerance_ns;
		return (uint32_t)((wait + NSEC_PER_SEC - 1) / NSEC_PER_SEC);
	}
	b->tat_ns = tat + b->interval_ns;
	return 0;
}
