// SPDX-License-Identifier: GPL-2.0-only
/* tailprof: the command-line client of tailprofd, a thin HTTP client (libcurl + jansson). */
#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tailprof_config.h"
#include "timeparse.h"

#define DEFAULT_SERVER	  "http://127.0.0.1:7077"
#define CONNECT_TIMEOUT_S 5L
/* status and windows are cheap to answer; a profile may take a while, so pull has no total
 * timeout and fails only when the transfer stalls below 1 byte/s for LOW_SPEED_TIME_S. */
#define QUERY_TIMEOUT_S	 60L
#define LOW_SPEED_TIME_S 120L
/* Bodies kept in memory (JSON, error answers) are sized by the server: bound them. */
#define MAX_BODY_BYTES	 (256UL << 20)
#define MAX_DETAIL_CHARS 200

#define EXIT_USAGE 2

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Small allocations abort on failure (STYLE.md's allocation policy); bodies are checked. */
#define OOM_ABORT()                                                                                \
	do {                                                                                       \
		fputs("tailprof: out of memory\n", stderr);                                        \
		abort();                                                                           \
	} while (0)

static const char *server_flag; /* --server, wherever it was given */
static char *server;		/* resolved: scheme included, no trailing slash */
/* The temporary file of a pull in progress, removed if a signal ends us. */
static const char *volatile tmp_path;

/* ---- errors ---- */

/* The one error printer: "tailprof: <message>" on stderr. */
static void vp_err(const char *fmt, va_list ap)
{
	fputs("tailprof: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

static void __attribute__((format(printf, 1, 2))) p_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vp_err(fmt, ap);
	va_end(ap);
}

/* Prints a usage error and where to read the usage of cmd (NULL: the top level). Returns 2. */
static int __attribute__((format(printf, 2, 3))) usage_err(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vp_err(fmt, ap);
	va_end(ap);
	fprintf(stderr, "Try 'tailprof %s%s--help'.\n", cmd ? cmd : "", cmd ? " " : "");
	return EXIT_USAGE;
}

static char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		OOM_ABORT();
	return s;
}

/* ---- options ---- */

enum opt_id {
	OPT_END = 0,
	OPT_ARG, /* a positional argument */
	OPT_HELP,
	OPT_SERVER,
	OPT_VERSION,
	OPT_JSON,
	OPT_LAST,
	OPT_FROM,
	OPT_TO,
	OPT_TYPE,
	OPT_PID,
	OPT_COMM,
	OPT_OUTPUT,
	OPT_STAGE,
};

struct opt {
	const char *name; /* long form, without "--" */
	char short_name;  /* 0: none */
	enum opt_id id;
	const char *value; /* what its value is, for messages; NULL: takes no value */
};

#define DURATION_FORMS "500ms, 2s, 10m, 1h"
#define TIME_FORMS     "RFC 3339 such as 2026-11-29T21:00:00Z, or Unix seconds"
#define DURATION_VALUE "a duration such as " DURATION_FORMS
#define TIME_VALUE     "a time, " TIME_FORMS

/* Accepted by every subcommand and at the top level. */
static const struct opt common_opts[] = {
    {"server", 0, OPT_SERVER, "a URL such as " DEFAULT_SERVER},
    {"help", 'h', OPT_HELP, NULL},
    {},
};

struct opt_iter {
	const char *cmd;	/* subcommand for messages; NULL at the top level */
	const struct opt *opts; /* the subcommand's own; common_opts are always added */
	int argc, i;
	char **argv;
	unsigned seen; /* 1 << opt_id of the options with values given so far */
};

static const struct opt *opt_find(const struct opt *opts, const char *name, size_t len, char c)
{
	for (int t = 0; t < 2; t++) {
		for (const struct opt *o = t ? common_opts : opts; o->name; o++) {
			if (c ? o->short_name == c
			      : strlen(o->name) == len && !strncmp(o->name, name, len))
				return o;
		}
	}
	return NULL;
}

static char *opt_list(const struct opt *opts)
{
	size_t size = 0;
	char *s = NULL;
	FILE *f = open_memstream(&s, &size);

	if (!f)
		OOM_ABORT();
	for (int t = 0; t < 2; t++) {
		for (const struct opt *o = t ? common_opts : opts; o->name; o++) {
			if (ftell(f))
				fputs(", ", f);
			if (o->short_name)
				fprintf(f, "-%c/", o->short_name);
			fprintf(f, "--%s", o->name);
		}
	}
	if (fclose(f))
		OOM_ABORT();
	return s;
}

/*
 * Returns the id of the next option and its value in *val (OPT_ARG: the argument itself),
 * OPT_END when none is left, or -1 after printing a usage error. Takes "--name value",
 * "--name=value", "-x value" and "-xvalue"; --server is consumed here, wherever it comes.
 */
static int opt_next(struct opt_iter *it, const char **val)
{
	const struct opt *o;
	const char *a, *name, *inl = NULL;
	size_t len;

	for (;;) {
		*val = NULL;
		if (it->i >= it->argc)
			return OPT_END;
		a = it->argv[it->i++];
		if (a[0] != '-' || !a[1]) {
			*val = a;
			return OPT_ARG;
		}
		if (a[1] == '-') {
			name = a + 2;
			inl = strchr(name, '=');
			len = inl ? (size_t)(inl - name) : strlen(name);
			if (inl)
				inl++;
			o = len ? opt_find(it->opts, name, len, 0) : NULL;
		} else {
			name = a + 1;
			len = 1;
			o = opt_find(it->opts, NULL, 0, a[1]);
			if (a[2])
				inl = a + 2;
		}
		if (!o) {
			char *all = opt_list(it->opts);

			usage_err(it->cmd, "unknown option '%s'%s%s (allowed: %s)", a,
				  it->cmd ? " for " : "", it->cmd ? it->cmd : "", all);
			free(all);
			return -1;
		}
		if (!o->value) {
			if (inl) {
				usage_err(it->cmd, "%.*s takes no value", (int)(name - a + len), a);
				return -1;
			}
			return o->id;
		}
		if (inl) {
			*val = inl;
		} else if (it->i < it->argc && strncmp(it->argv[it->i], "--", 2)) {
			*val = it->argv[it->i++];
		}
		if (!*val || !**val) {
			usage_err(it->cmd, "%.*s needs a value: %s", (int)(name - a + len), a,
				  o->value);
			return -1;
		}
		/* as the HTTP API: a value given twice is a mistake, not "the last one wins" */
		if (it->seen & (1u << o->id)) {
			usage_err(it->cmd, "--%s given twice; give it once", o->name);
			return -1;
		}
		it->seen |= 1u << o->id;
		if (o->id != OPT_SERVER)
			return o->id;
		server_flag = *val;
	}
}

/* Settles the server URL from --server, $TAILPROF_SERVER or the default. Returns 0 or 2. */
static int server_resolve(const char *cmd)
{
	const char *from = "--server", *url = server_flag;
	size_t len;

	if (!url) {
		from = "TAILPROF_SERVER";
		url = getenv("TAILPROF_SERVER");
		if (!url || !*url)
			url = DEFAULT_SERVER;
	}
	if (strstr(url, "://"))
		server = xasprintf("%s", url);
	else
		server = xasprintf("http://%s", url);
	if (strncasecmp(server, "http://", 7) && strncasecmp(server, "https://", 8))
		return usage_err(cmd, "%s: '%s' is not an http:// or https:// URL", from, url);
	len = strlen(server);
	while (len && server[len - 1] == '/')
		server[--len] = '\0';
	return 0;
}

/* ---- time ranges (--last | --from/--to), shared by windows and pull ---- */

struct time_range {
	const char *last, *from, *to;
};

/* Takes --last, --from or --to into r. Returns true when id was one of them. */
static bool range_opt(struct time_range *r, int id, const char *val)
{
	switch (id) {
	case OPT_LAST:
		r->last = val;
		return true;
	case OPT_FROM:
		r->from = val;
		return true;
	case OPT_TO:
		r->to = val;
		return true;
	}
	return false;
}

/* Validates the flags locally; the original strings go to the server. Returns 0 or 2. */
static int range_check(const char *cmd, const struct time_range *r)
{
	int64_t from_ns = 0, to_ns = 0;
	uint64_t ns;

	if (r->last && (r->from || r->to))
		return usage_err(cmd, "--last cannot be combined with --from/--to (use one or "
				      "the other)");
	if (r->last && (tp_parse_duration(r->last, &ns) || !ns))
		return usage_err(cmd, "--last: '%s' is not a positive duration (use e.g. %s)",
				 r->last, DURATION_FORMS);
	if (r->from && tp_parse_time(r->from, &from_ns))
		return usage_err(cmd, "--from: '%s' is not a time (use %s)", r->from, TIME_FORMS);
	if (r->to && tp_parse_time(r->to, &to_ns))
		return usage_err(cmd, "--to: '%s' is not a time (use %s)", r->to, TIME_FORMS);
	if (r->from && r->to && from_ns >= to_ns)
		return usage_err(cmd, "--from (%s) must be before --to (%s)", r->from, r->to);
	return 0;
}

/* ---- queries and HTTP ---- */

/* Appends "&key=value" (the first without '&'), value percent-encoded (RFC 3986). */
static void query_add(FILE *q, const char *key, const char *val)
{
	if (!val)
		return;
	fprintf(q, "%s%s=", ftell(q) ? "&" : "", key);
	for (const unsigned char *p = (const unsigned char *)val; *p; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || strchr("-._~", *p))
			fputc(*p, q);
		else
			fprintf(q, "%%%02X", *p);
	}
}

static void range_query(FILE *q, const struct time_range *r)
{
	query_add(q, "last", r->last);
	query_add(q, "from", r->from);
	query_add(q, "to", r->to);
}

enum tp_header {
	HDR_SAMPLES,
	HDR_START_NS,
	HDR_END_NS,
	HDR_WINDOWS,
	HDR__COUNT,
};

static const char *const tp_header_names[HDR__COUNT] = {
    [HDR_SAMPLES] = "X-Tailprof-Samples",
    [HDR_START_NS] = "X-Tailprof-Start-Unix-Ns",
    [HDR_END_NS] = "X-Tailprof-End-Unix-Ns",
    [HDR_WINDOWS] = "X-Tailprof-Windows",
};

struct http_resp {
	long status;
	/* The body of error answers, and of every answer when there is no sink. */
	char *body;
	size_t len, cap;
	bool too_big;
	/* 2xx bodies are streamed here when set. */
	FILE *sink;
	const char *sink_name;
	size_t sink_bytes;
	int sink_errno;
	char hdr[HDR__COUNT][32]; /* X-Tailprof-* values, "" when absent */
};

static size_t on_header(char *data, size_t size, size_t n, void *ctx)
{
	struct http_resp *r = ctx;
	size_t len = size * n;
	char line[256];

	if (len >= sizeof(line))
		return len; /* none of ours is that long */
	memcpy(line, data, len);
	line[len] = '\0';
	while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
		line[--len] = '\0';
	/* A status line starts a new header block (after "100 Continue", say). */
	if (!strncmp(line, "HTTP/", 5)) {
		const char *sp = strchr(line, ' ');

		r->status = sp ? strtol(sp + 1, NULL, 10) : 0;
		memset(r->hdr, 0, sizeof(r->hdr));
		return size * n;
	}
	for (int h = 0; h < HDR__COUNT; h++) {
		size_t nl = strlen(tp_header_names[h]);
		const char *v = line + nl + 1;

		if (strncasecmp(line, tp_header_names[h], nl) || line[nl] != ':')
			continue;
		while (*v == ' ' || *v == '\t')
			v++;
		snprintf(r->hdr[h], sizeof(r->hdr[h]), "%s", v);
	}
	return size * n;
}

static size_t on_body(char *data, size_t size, size_t n, void *ctx)
{
	struct http_resp *r = ctx;
	size_t len = size * n;

	if (r->sink && r->status >= 200 && r->status < 300) {
		if (fwrite(data, 1, len, r->sink) != len) {
			r->sink_errno = errno ? errno : EIO;
			return 0;
		}
		r->sink_bytes += len;
		return len;
	}
	if (len > MAX_BODY_BYTES - r->len) {
		r->too_big = true;
		return 0;
	}
	if (r->len + len + 1 > r->cap) {
		size_t cap = r->cap ? r->cap : 4096;
		char *p;

		while (cap < r->len + len + 1)
			cap *= 2;
		p = realloc(r->body, cap);
		if (!p) {
			r->too_big = true;
			return 0;
		}
		r->body = p;
		r->cap = cap;
	}
	memcpy(r->body + r->len, data, len);
	r->len += len;
	r->body[r->len] = '\0';
	return len;
}

static void http_resp__free(struct http_resp *r)
{
	free(r->body);
	r->body = NULL;
}

static void report_curl_error(CURL *c, CURLcode rc, const char *errbuf, const char *url,
			      const struct http_resp *r)
{
	const char *why = *errbuf ? errbuf : curl_easy_strerror(rc);
	long os_errno = 0;
	double connect_s = 0;

	switch (rc) {
	case CURLE_COULDNT_CONNECT:
		curl_easy_getinfo(c, CURLINFO_OS_ERRNO, &os_errno);
		p_err("cannot reach tailprofd at %s: %s "
		      "(is tailprofd running? start it with: sudo tailprofd, or packaging/setup.sh "
		      "run in the source tree)",
		      server, os_errno ? strerror((int)os_errno) : why);
		break;
	case CURLE_COULDNT_RESOLVE_HOST:
		p_err("cannot reach tailprofd at %s: %s", server, why);
		break;
	case CURLE_OPERATION_TIMEDOUT:
		curl_easy_getinfo(c, CURLINFO_CONNECT_TIME, &connect_s);
		if (connect_s <= 0)
			p_err("cannot reach tailprofd at %s: no connection within %lds", server,
			      CONNECT_TIMEOUT_S);
		else
			p_err("tailprofd at %s stopped answering %s: %s", server, url, why);
		break;
	case CURLE_WRITE_ERROR:
		if (r->too_big) {
			p_err("the answer of tailprofd to %s is over %lu MiB; giving up", url,
			      MAX_BODY_BYTES >> 20);
			break;
		}
		if (r->sink_errno) {
			p_err("cannot write %s: %s", r->sink_name, strerror(r->sink_errno));
			break;
		}
		/* fall through */
	default:
		p_err("request to tailprofd failed: %s: %s", url, why);
	}
}

/*
 * GETs path?query from the server into r (zeroed by the caller, sink optional). Returns 0 when
 * an answer came, whatever its status, or -1 after printing why none came.
 */
static int http_get(const char *path, const char *query, bool long_running, struct http_resp *r)
{
	char errbuf[CURL_ERROR_SIZE] = "";
	char *url =
	    xasprintf("%s%s%s%s", server, path, query && *query ? "?" : "", query ? query : "");
	CURL *c = curl_easy_init();
	CURLcode rc;

	if (!c) {
		p_err("cannot initialize libcurl");
		free(url);
		return -1;
	}
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "tailprof/" TAILPROF_VERSION);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, CONNECT_TIMEOUT_S);
	if (long_running) {
		curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
		curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, LOW_SPEED_TIME_S);
	} else {
		curl_easy_setopt(c, CURLOPT_TIMEOUT, QUERY_TIMEOUT_S);
	}
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
	rc = curl_easy_perform(c);
	if (rc != CURLE_OK)
		report_curl_error(c, rc, errbuf, url, r);
	curl_easy_cleanup(c);
	free(url);
	return rc == CURLE_OK ? 0 : -1;
}

/* Copies the first line of s, printable characters only, into out. */
static const char *snippet(const char *s, size_t len, char *out, size_t size)
{
	size_t n = 0;

	for (size_t i = 0; i < len && n + 1 < size && s[i] != '\n' && s[i] != '\r'; i++)
		out[n++] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
	out[n] = '\0';
	return out;
}

/* Returns 0 for a 2xx answer; otherwise prints the server's {"error": ...} and returns 1. */
static int check_status(const struct http_resp *r)
{
	char detail[MAX_DETAIL_CHARS + 1];
	json_t *j, *e;

	if (r->status >= 200 && r->status < 300)
		return 0;
	j = r->len ? json_loadb(r->body, r->len, 0, NULL) : NULL;
	e = json_object_get(j, "error");
	if (json_is_string(e))
		p_err("server error (%ld): %s", r->status, json_string_value(e));
	else if (r->len)
		p_err("server error (%ld): %s", r->status,
		      snippet(r->body, r->len, detail, sizeof(detail)));
	else
		p_err("server error (%ld)", r->status);
	json_decref(j);
	return 1;
}

/*
 * GETs a JSON resource. With raw, prints the body unchanged to stdout and sets *out to NULL;
 * otherwise parses it into *out (caller decrefs). Returns 0 or 1 after printing the failure.
 */
static int fetch_json(const char *path, const char *query, bool raw, json_t **out)
{
	struct http_resp r = {};
	json_error_t jerr;
	int err;

	*out = NULL;
	if (http_get(path, query, false, &r)) {
		http_resp__free(&r);
		return 1;
	}
	err = check_status(&r);
	if (!err && raw && r.len && fwrite(r.body, 1, r.len, stdout) != r.len)
		err = 1; /* reported once, by the final flush in main() */
	if (!err && !raw) {
		*out = json_loadb(r.body ? r.body : "", r.len, 0, &jerr);
		if (!*out || !json_is_object(*out)) {
			p_err("tailprofd sent invalid JSON for %s: %s (line %d)", path,
			      *out ? "not an object" : jerr.text, *out ? 1 : jerr.line);
			json_decref(*out);
			*out = NULL;
			err = 1;
		}
	}
	http_resp__free(&r);
	return err;
}

/* ---- JSON fields (unknown keys are ignored, missing ones print as "-") ---- */

static bool j_int(const json_t *o, const char *key, long long *v)
{
	const json_t *x = json_object_get(o, key);

	if (!json_is_integer(x))
		return false;
	*v = json_integer_value(x);
	return true;
}

static const char *j_str(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : "-";
}

static const char *f_int(const json_t *o, const char *key, char *buf, size_t size)
{
	long long v;

	if (!j_int(o, key, &v))
		return "-";
	snprintf(buf, size, "%lld", v);
	return buf;
}

static const char *f_dur(const json_t *o, const char *key, char *buf, size_t size)
{
	long long v;

	if (!j_int(o, key, &v) || v < 0)
		return "-";
	return tp_format_duration((uint64_t)v, buf, size);
}

/* ---- subcommands ---- */

static void usage_top(FILE *f);
static void usage_status(FILE *f);
static void usage_windows(FILE *f);
static void usage_pull(FILE *f);
static void usage_gc(FILE *f);
static void usage_stages(FILE *f);

/*
 * Handles what every subcommand's option loop shares: --help prints usage and ends with 0, a
 * positional argument or a bad option ends with 2. Returns -1 to go on, else an exit code.
 */
static int opt_common(const struct opt_iter *it, int id, const char *val, void (*usage)(FILE *f))
{
	if (id == OPT_HELP) {
		usage(stdout);
		return 0;
	}
	if (id == OPT_ARG)
		return usage_err(it->cmd, "unexpected argument '%s'", val);
	return id < 0 ? EXIT_USAGE : -1;
}

/* The stages of the status: hit rate and cost of each probe, a warning above 1% of a CPU. */
static void print_status_stages(const json_t *stages)
{
	size_t n = json_array_size(stages);

	if (!n)
		return;
	printf("  %-11s\n", "stages:");
	for (size_t i = 0; i < n; i++) {
		const json_t *s = json_array_get(stages, i);
		const json_t *cpu = json_object_get(s, "cpu_percent");
		const json_t *rate = json_object_get(s, "hits_per_second");
		char b[2][32];

		if (json_is_string(json_object_get(s, "error"))) {
			printf("    %-12s NOT ATTACHED: %s\n", j_str(s, "stage"),
			       j_str(s, "error"));
			continue;
		}
		printf("    %-12s %s\n", j_str(s, "stage"), j_str(s, "probe"));
		if (!json_is_number(cpu))
			continue;
		printf("    %-12s %.1f hits/s, %s ns per hit, %.3f%% of a CPU (%s hits)\n", "",
		       json_number_value(rate), f_int(s, "ns_per_hit", b[0], 32),
		       json_number_value(cpu), f_int(s, "hits", b[1], 32));
		if (json_number_value(cpu) > 1.0)
			printf(
			    "    %-12s WARNING: this stage's instrumentation costs more than 1%% "
			    "of a CPU; time a less frequent function\n",
			    "");
	}
}

/* The GC lines of the status: on or off, runtimes seen, and each unsupported object's reason. */
static void print_gc_status(const json_t *gc)
{
	const json_t *objs = json_object_get(gc, "objects"), *o;
	char b[32];
	size_t i;

	if (!json_is_object(gc))
		return;
	if (!json_is_true(json_object_get(gc, "enabled"))) {
		printf("  %-11s off\n", "gc:");
		return;
	}
	printf("  %-11s %s probes attached\n", "gc:", f_int(gc, "probes_attached", b, sizeof(b)));
	json_array_foreach(objs, i, o)
	{
		const char *reason = json_string_value(json_object_get(o, "reason"));

		printf("  %-11s %-6s %-11s %s processes  %s%s%s\n", "", j_str(o, "runtime"),
		       j_str(o, "state"), f_int(o, "processes", b, sizeof(b)), j_str(o, "path"),
		       reason ? ": " : "", reason ? reason : "");
	}
}

/* The features table of the status: each capability on or off, its variant and why (a daemon
 * before the features report has none: nothing printed). */
static void print_status_features(json_t *features)
{
	const char *name;
	json_t *ft;

	if (!json_is_object(features) || !json_object_size(features))
		return;
	printf("  features:\n    %-20s %-5s %-22s %s\n", "NAME", "STATE", "VARIANT", "REASON");
	json_object_foreach(features, name, ft)
	{
		const char *variant = j_str(ft, "variant"), *reason = j_str(ft, "reason");

		printf("    %-20s %-5s %-22s %s\n", name,
		       json_is_true(json_object_get(ft, "enabled")) ? "on" : "off",
		       *variant ? variant : "-", *reason ? reason : "-");
	}
}

static int cmd_status(int argc, char **argv)
{
	static const struct opt opts[] = {
	    {"json", 0, OPT_JSON, NULL},
	    {},
	};
	struct opt_iter it = {.cmd = "status", .opts = opts, .argc = argc, .argv = argv, .i = 1};
	char b[8][32];
	const char *val;
	bool json = false;
	json_t *st, *healthy;
	const char *offcpu_off;
	int id, ret;

	while ((id = opt_next(&it, &val)) != OPT_END) {
		if ((ret = opt_common(&it, id, val, usage_status)) >= 0)
			return ret;
		if (id == OPT_JSON)
			json = true;
	}
	if ((ret = server_resolve(it.cmd)))
		return ret;
	if ((ret = fetch_json("/api/v1/status", NULL, json, &st)) || json)
		return ret;

	/* why off-CPU is off, from the features report (older daemons have none) */
	offcpu_off = json_string_value(
	    json_object_get(json_object_get(json_object_get(st, "features"), "offcpu"), "reason"));
	printf("tailprofd %s on %s (kernel %s), pid %s, up %s\n", j_str(st, "version"),
	       j_str(st, "hostname"), j_str(st, "kernel"), f_int(st, "pid", b[0], 32),
	       f_dur(st, "uptime_ns", b[1], 32));
	printf("  %-11s %s\n", "listen:", j_str(st, "listen"));
	printf("  %-11s %s\n", "started:", j_str(st, "started"));
	printf("  %-11s %s Hz on %s CPUs, %s probes attached\n",
	       "sampling:", f_int(st, "frequency_hz", b[0], 32), f_int(st, "cpus_online", b[1], 32),
	       f_int(st, "probes_attached", b[2], 32));
	printf("  %-11s %s of %s (%s each, %s retention)\n",
	       "windows:", f_int(st, "windows", b[0], 32), f_int(st, "max_windows", b[1], 32),
	       f_dur(st, "window_ns", b[2], 32), f_dur(st, "retention_ns", b[3], 32));
	printf("  %-11s %s (idle %s, expected %s)\n", "samples:", f_int(st, "samples", b[0], 32),
	       f_int(st, "idle_samples", b[1], 32), f_int(st, "expected_samples", b[2], 32));
	printf("  %-11s %s\n", "drops:", f_int(st, "drops", b[0], 32));
	printf("  %-11s %s\n", "objects:", f_int(st, "objects", b[0], 32));
	printf("  %-11s %s\n", "processes:", f_int(st, "processes", b[0], 32));
	if (json_is_true(json_object_get(st, "sched")))
		printf("  %-11s %s samples of blocks of %s or more, %s run-queue waits (clock %s, "
		       "return %s)\n",
		       "off-CPU:", f_int(st, "offcpu_samples", b[0], 32),
		       f_dur(st, "offcpu_min_ns", b[1], 32), f_int(st, "runq_count", b[2], 32),
		       j_str(st, "offcpu_clock"), j_str(st, "offcpu_return"));
	else
		printf("  %-11s off (%s)\n",
		       "off-CPU:", offcpu_off ? offcpu_off : "the scheduler programs did not load");
	print_gc_status(json_object_get(st, "gc"));
	healthy = json_object_get(st, "healthy");
	printf("  %-11s %s\n", "health:",
	       !json_is_boolean(healthy) ? "-"
	       : json_is_true(healthy)	 ? "healthy"
					 : "UNHEALTHY");
	print_status_features(json_object_get(st, "features"));
	print_status_stages(json_object_get(st, "stages"));
	json_decref(st);
	return 0;
}

enum win_col {
	COL_MARK,
	COL_START,
	COL_DURATION,
	COL_SAMPLES,
	COL_IDLE,
	COL_EXPECTED,
	COL_DROPS,
	COL_STACKS,
	COL_PROCS,
	COL_OFFCPU,
	COL_RUNQ_P99,
	COL__COUNT,
};

#define CELL_SIZE 40

static const char *const win_headers[COL__COUNT] = {
    "",	     "START",  "DURATION", "SAMPLES", "IDLE",	  "EXPECTED",
    "DROPS", "STACKS", "PROCS",	   "OFFCPU",  "RUNQ_P99",
};

static void window_row(const json_t *w, char (*row)[CELL_SIZE])
{
	const json_t *drops = json_object_get(w, "drops");
	long long start = 0, end = 0;

	for (int c = 0; c < COL__COUNT; c++)
		strcpy(row[c], "-");
	strcpy(row[COL_MARK], json_is_true(json_object_get(w, "current")) ? "*" : "");
	if (json_is_string(json_object_get(w, "start")))
		snprintf(row[COL_START], CELL_SIZE, "%s", j_str(w, "start"));
	else if (j_int(w, "start_unix_ns", &start))
		tp_format_rfc3339(start, row[COL_START], CELL_SIZE);
	if (j_int(w, "start_unix_ns", &start) && j_int(w, "end_unix_ns", &end) && end >= start)
		tp_format_duration((uint64_t)(end - start), row[COL_DURATION], CELL_SIZE);
	f_int(w, "samples", row[COL_SAMPLES], CELL_SIZE);
	f_int(w, "idle_samples", row[COL_IDLE], CELL_SIZE);
	f_int(w, "expected_samples", row[COL_EXPECTED], CELL_SIZE);
	/* "drops" is an object with a total; accept a plain count too. */
	if (json_is_object(drops))
		f_int(drops, "total", row[COL_DROPS], CELL_SIZE);
	else
		f_int(w, "drops", row[COL_DROPS], CELL_SIZE);
	f_int(w, "distinct_stacks", row[COL_STACKS], CELL_SIZE);
	f_int(w, "processes", row[COL_PROCS], CELL_SIZE);
	/* the scheduler's view, where tailprofd has it: blocked time captured with stacks, and
	 * the run-queue latency's p99 */
	f_dur(json_object_get(w, "offcpu"), "blocked_ns", row[COL_OFFCPU], CELL_SIZE);
	f_dur(json_object_get(w, "runq"), "p99_ns", row[COL_RUNQ_P99], CELL_SIZE);
}

static int print_windows(const json_t *doc)
{
	const json_t *list = json_object_get(doc, "windows");
	size_t n = json_array_size(list), width[COL__COUNT];
	char(*cells)[COL__COUNT][CELL_SIZE];
	bool any_current = false;

	if (!json_is_array(list)) {
		p_err("tailprofd's answer to /api/v1/windows has no \"windows\" array");
		return 1;
	}
	if (!n) {
		printf("no windows in this range\n");
		return 0;
	}
	cells = calloc(n, sizeof(*cells));
	if (!cells) {
		p_err("cannot allocate a table of %zu windows: %s", n, strerror(ENOMEM));
		return 1;
	}
	for (int c = 0; c < COL__COUNT; c++)
		width[c] = strlen(win_headers[c]);
	width[COL_MARK] = 1;
	for (size_t i = 0; i < n; i++) {
		window_row(json_array_get(list, i), cells[i]);
		any_current |= cells[i][COL_MARK][0] == '*';
		for (int c = 0; c < COL__COUNT; c++)
			if (strlen(cells[i][c]) > width[c])
				width[c] = strlen(cells[i][c]);
	}
	/* The mark and START are left-aligned, the numbers right-aligned. */
	for (size_t i = 0; i <= n; i++) {
		for (int c = 0; c < COL__COUNT; c++) {
			const char *s = i ? cells[i - 1][c] : win_headers[c];

			int w = c <= COL_START ? -(int)width[c] : (int)width[c];

			printf("%s%*s", c == COL_START ? " " : c ? "  " : "", w, s);
		}
		putchar('\n');
	}
	if (any_current)
		printf("* the current window, still filling\n");
	free(cells);
	return 0;
}

static int cmd_windows(int argc, char **argv)
{
	static const struct opt opts[] = {
	    {"last", 0, OPT_LAST, DURATION_VALUE},
	    {"from", 0, OPT_FROM, TIME_VALUE},
	    {"to", 0, OPT_TO, TIME_VALUE},
	    {"json", 0, OPT_JSON, NULL},
	    {},
	};
	struct opt_iter it = {.cmd = "windows", .opts = opts, .argc = argc, .argv = argv, .i = 1};
	struct time_range range = {};
	size_t qsize = 0;
	char *query = NULL;
	const char *val;
	bool json = false;
	json_t *doc;
	FILE *q;
	int id, ret;

	while ((id = opt_next(&it, &val)) != OPT_END) {
		if ((ret = opt_common(&it, id, val, usage_windows)) >= 0)
			return ret;
		if (range_opt(&range, id, val))
			continue;
		if (id == OPT_JSON)
			json = true;
	}
	if ((ret = range_check(it.cmd, &range)) || (ret = server_resolve(it.cmd)))
		return ret;
	q = open_memstream(&query, &qsize);
	if (!q)
		OOM_ABORT();
	range_query(q, &range);
	if (fclose(q))
		OOM_ABORT();
	ret = fetch_json("/api/v1/windows", query, json, &doc);
	free(query);
	if (ret || json)
		return ret;
	ret = print_windows(doc);
	json_decref(doc);
	return ret;
}

/* A pause's length, to the microsecond: 850us, 1.500ms, 2.250s; "-" when missing. */
static const char *f_pause(const json_t *o, const char *key, char *buf, size_t size)
{
	long long v;

	if (!j_int(o, key, &v) || v < 0)
		return "-";
	if (v < 1000000)
		snprintf(buf, size, "%lldus", v / 1000);
	else if (v < 1000000000)
		snprintf(buf, size, "%.3fms", v / 1e6);
	else
		snprintf(buf, size, "%.3fs", v / 1e9);
	return buf;
}

/* One line per GC event, oldest first, then the totals. */
static int print_gc(const json_t *doc)
{
	const json_t *events = json_object_get(doc, "events"), *e, *tot;
	char b[4][40];
	size_t i;

	if (!json_is_array(events)) {
		p_err("tailprofd's answer to /api/v1/gc has no \"events\" array");
		return 1;
	}
	if (json_is_false(json_object_get(doc, "enabled")))
		printf("GC tracking is off (tailprofd --gc=off)\n");
	if (!json_array_size(events)) {
		printf("no GC events in this range\n");
		return 0;
	}
	printf("%-24s  %7s  %-15s  %-6s  %-10s  %12s  %s\n", "START", "PID", "COMM", "RUNTIME",
	       "KIND", "DURATION", "DETAIL");
	json_array_foreach(events, i, e)
	{
		const json_t *gen = json_object_get(e, "generation"),
			     *full = json_object_get(e, "full");
		const char *cause = json_string_value(json_object_get(e, "cause"));

		b[1][0] = 0;
		if (json_is_integer(gen))
			snprintf(b[1], sizeof(b[1]), "generation %lld", json_integer_value(gen));
		else if (json_is_boolean(full))
			snprintf(b[1], sizeof(b[1]), "%s", json_is_true(full) ? "full" : "young");
		else if (cause)
			snprintf(b[1], sizeof(b[1]), "%s", cause);
		printf("%-24s  %7s  %-15s  %-6s  %-10s  %12s  %s\n", j_str(e, "start"),
		       f_int(e, "pid", b[0], sizeof(b[0])), j_str(e, "comm"), j_str(e, "runtime"),
		       j_str(e, "kind"), f_pause(e, "duration_ns", b[2], sizeof(b[2])), b[1]);
	}
	tot = json_object_get(doc, "totals");
	printf("%s pauses, %s in all, longest %s\n", f_int(tot, "pauses", b[0], sizeof(b[0])),
	       f_pause(tot, "pause_ns", b[1], sizeof(b[1])),
	       f_pause(tot, "max_pause_ns", b[2], sizeof(b[2])));
	return 0;
}

static int cmd_gc(int argc, char **argv)
{
	static const struct opt opts[] = {
	    {"last", 0, OPT_LAST, DURATION_VALUE},
	    {"from", 0, OPT_FROM, TIME_VALUE},
	    {"to", 0, OPT_TO, TIME_VALUE},
	    {"json", 0, OPT_JSON, NULL},
	    {},
	};
	struct opt_iter it = {.cmd = "gc", .opts = opts, .argc = argc, .argv = argv, .i = 1};
	struct time_range range = {};
	size_t qsize = 0;
	char *query = NULL;
	const char *val;
	bool json = false;
	json_t *doc;
	FILE *q;
	int id, ret;

	while ((id = opt_next(&it, &val)) != OPT_END) {
		if ((ret = opt_common(&it, id, val, usage_gc)) >= 0)
			return ret;
		if (range_opt(&range, id, val))
			continue;
		if (id == OPT_JSON)
			json = true;
	}
	if ((ret = range_check(it.cmd, &range)) || (ret = server_resolve(it.cmd)))
		return ret;
	q = open_memstream(&query, &qsize);
	if (!q)
		OOM_ABORT();
	range_query(q, &range);
	if (fclose(q))
		OOM_ABORT();
	ret = fetch_json("/api/v1/gc", query, json, &doc);
	free(query);
	if (ret || json)
		return ret;
	ret = print_gc(doc);
	json_decref(doc);
	return ret;
}

/* Parses a decimal header value; false when absent or malformed. */
static bool hdr_int(const char *s, long long *v)
{
	char *end;

	if (!*s)
		return false;
	errno = 0;
	*v = strtoll(s, &end, 10);
	return !errno && !*end;
}

/* The one summary line of a pull, on stderr so that "-o -" pipes cleanly. */
static void pull_summary(const char *name, const struct http_resp *r)
{
	char line[512], t0[32], t1[32], d[32];
	long long samples, start, end, windows;
	int n;

	n = snprintf(line, sizeof(line), "wrote %s: ", name);
	if (hdr_int(r->hdr[HDR_SAMPLES], &samples))
		n += snprintf(line + n, sizeof(line) - n, "%lld samples", samples);
	else
		n += snprintf(line + n, sizeof(line) - n, "%zu bytes", r->sink_bytes);
	if (hdr_int(r->hdr[HDR_START_NS], &start) && hdr_int(r->hdr[HDR_END_NS], &end) &&
	    end >= start) {
		n += snprintf(line + n, sizeof(line) - n, ", %s to %s (%s",
			      tp_format_rfc3339(start, t0, sizeof(t0)),
			      tp_format_rfc3339(end, t1, sizeof(t1)),
			      tp_format_duration((uint64_t)(end - start), d, sizeof(d)));
		if (hdr_int(r->hdr[HDR_WINDOWS], &windows))
			n += snprintf(line + n, sizeof(line) - n, ", %lld window%s", windows,
				      windows == 1 ? "" : "s");
		snprintf(line + n, sizeof(line) - n, ")");
	} else if (hdr_int(r->hdr[HDR_WINDOWS], &windows)) {
		snprintf(line + n, sizeof(line) - n, " (%lld window%s)", windows,
			 windows == 1 ? "" : "s");
	}
	fprintf(stderr, "%s\n", line);
}

static void on_fatal_signal(int sig)
{
	const char *path = tmp_path;

	if (path)
		unlink(path);
	signal(sig, SIG_DFL);
	raise(sig);
}

static void catch_signals(bool on)
{
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
	struct sigaction sa = {.sa_handler = on ? on_fatal_signal : SIG_DFL};

	for (size_t i = 0; i < ARRAY_SIZE(sigs); i++)
		sigaction(sigs[i], &sa, NULL);
}

/* Copies the finished temporary file f to dst, named name in messages. Returns 0 or 1 after
 * printing why not. */
static int copy_to(FILE *f, FILE *dst, const char *name)
{
	char buf[65536];
	size_t n;

	if (fflush(f) || fseek(f, 0, SEEK_SET)) {
		p_err("cannot read back the profile: %s", strerror(errno));
		return 1;
	}
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0) {
		if (fwrite(buf, 1, n, dst) != n)
			break;
	}
	if (ferror(f) || ferror(dst) || fflush(dst)) {
		p_err("cannot write the profile to %s: %s", name, strerror(errno));
		return 1;
	}
	return 0;
}

/* Whether out must be written through rather than replaced: an existing path that is not a
 * regular file (a device such as /dev/null, a FIFO) or a symlink. Renaming a temporary file over
 * it would replace the device or the link itself. */
static bool write_through(const char *out)
{
	struct stat st;

	return !lstat(out, &st) && !S_ISREG(st.st_mode);
}

/* Copies f to the existing non-regular file out. Returns 0 or 1 after saying why not. */
static int copy_to_path(FILE *f, const char *out)
{
	FILE *dst = fopen(out, "we");
	int ret;

	if (!dst) {
		p_err("cannot open %s: %s", out, strerror(errno));
		return 1;
	}
	ret = copy_to(f, dst, out);
	if (fclose(dst) && !ret) {
		p_err("cannot write the profile to %s: %s", out, strerror(errno));
		ret = 1;
	}
	return ret;
}

/* Closes f, the temporary file tmp, and renames it to out. Returns 0, or 1 after saying why. */
static int commit_file(FILE *f, const char *tmp, const char *out)
{
	mode_t mask = umask(0);
	int err;

	umask(mask);
	/* mkstemp made it 0600; a profile is an ordinary file. */
	err = fchmod(fileno(f), 0666 & ~mask) || fflush(f) || fsync(fileno(f));
	if (fclose(f))
		err = 1;
	if (err) {
		p_err("cannot write %s: %s", tmp, strerror(errno));
		return 1;
	}
	if (rename(tmp, out)) {
		p_err("cannot rename %s to %s: %s", tmp, out, strerror(errno));
		return 1;
	}
	return 0;
}

static const char *const profile_types[] = {"cpu", "offcpu", "wall"};

static int cmd_pull(int argc, char **argv)
{
	static const struct opt opts[] = {
	    {"type", 0, OPT_TYPE, "a profile type: cpu, offcpu or wall"},
	    {"last", 0, OPT_LAST, DURATION_VALUE},
	    {"from", 0, OPT_FROM, TIME_VALUE},
	    {"to", 0, OPT_TO, TIME_VALUE},
	    {"pid", 0, OPT_PID, "a process ID"},
	    {"comm", 0, OPT_COMM, "a command name"},
	    {"stage", 0, OPT_STAGE, "a stage name"},
	    {"output", 'o', OPT_OUTPUT, "a file name, or - for stdout"},
	    {},
	};
	struct opt_iter it = {.cmd = "pull", .opts = opts, .argc = argc, .argv = argv, .i = 1};
	const char *val, *type = "cpu", *pid = NULL, *comm = NULL, *out = NULL, *stage = NULL;
	struct time_range range = {};
	struct http_resp r = {};
	char *query = NULL, *tmp = NULL;
	size_t qsize = 0, i;
	int id, ret, fd;
	FILE *q, *f = NULL;
	bool through;
	uint64_t pid_v;

	while ((id = opt_next(&it, &val)) != OPT_END) {
		if ((ret = opt_common(&it, id, val, usage_pull)) >= 0)
			return ret;
		if (range_opt(&range, id, val))
			continue;
		switch (id) {
		case OPT_TYPE:
			type = val;
			break;
		case OPT_PID:
			pid = val;
			break;
		case OPT_COMM:
			comm = val;
			break;
		case OPT_STAGE:
			stage = val;
			break;
		case OPT_OUTPUT:
			out = val;
			break;
		}
	}
	for (i = 0; i < ARRAY_SIZE(profile_types); i++)
		if (!strcmp(type, profile_types[i]))
			break;
	if (i == ARRAY_SIZE(profile_types))
		return usage_err(it.cmd,
				 "--type: '%s' is not a profile type (allowed: cpu, offcpu, wall)",
				 type);
	if (pid && tp_parse_uint(pid, 1, INT32_MAX, &pid_v))
		return usage_err(it.cmd,
				 "--pid: '%s' is not a process ID (a positive "
				 "integer)",
				 pid);
	if (!out)
		return usage_err(it.cmd, "pull needs -o FILE (use -o - for stdout)");
	if ((ret = range_check(it.cmd, &range)) || (ret = server_resolve(it.cmd)))
		return ret;
	if (!range.last && !range.from && !range.to)
		range.last = "5m";

	q = open_memstream(&query, &qsize);
	if (!q)
		OOM_ABORT();
	query_add(q, "type", type);
	range_query(q, &range);
	query_add(q, "pid", pid);
	query_add(q, "comm", comm);
	query_add(q, "stage", stage);
	if (fclose(q))
		OOM_ABORT();

	/* The body goes to a temporary file: renamed over out, or copied to stdout (or through to
	 * a device, FIFO or symlink), once whole. */
	through = !strcmp(out, "-") || write_through(out);
	if (through) {
		f = tmpfile();
		if (!f) {
			p_err("cannot create a temporary file: %s", strerror(errno));
			free(query);
			return 1;
		}
	} else {
		tmp = xasprintf("%s.tmp.XXXXXX", out);
		catch_signals(true);
		fd = mkstemp(tmp);
		if (fd < 0) {
			p_err("cannot create %s: %s", tmp, strerror(errno));
			ret = 1;
			goto out;
		}
		tmp_path = tmp;
		f = fdopen(fd, "w");
		if (!f) {
			p_err("cannot open %s: %s", tmp, strerror(errno));
			close(fd);
			ret = 1;
			goto out;
		}
	}
	r.sink = f;
	r.sink_name = tmp ? tmp : "the temporary file";
	ret = 1;
	if (http_get("/api/v1/profile", query, true, &r) || check_status(&r))
		goto out;
	if (tmp) {
		ret = commit_file(f, tmp, out);
		f = NULL;
		if (!ret)
			tmp_path = NULL; /* renamed: nothing left to remove */
	} else if (!strcmp(out, "-")) {
		ret = copy_to(f, stdout, "stdout");
	} else {
		ret = copy_to_path(f, out);
	}
	if (!ret)
		pull_summary(strcmp(out, "-") ? out : "stdout", &r);
out:
	if (f)
		fclose(f);
	if (tmp_path)
		unlink(tmp_path);
	tmp_path = NULL;
	if (tmp)
		catch_signals(false);
	free(tmp);
	free(query);
	http_resp__free(&r);
	return ret;
}

/* A latency with 4 significant digits and its unit: 812ns, 315.4us, 2.982ms, 1.204s. */
static const char *f_latency(const json_t *o, const char *key, char *buf, size_t size)
{
	long long v;

	if (!j_int(o, key, &v) || v < 0)
		return "-";
	if (v < 1000)
		snprintf(buf, size, "%lldns", v);
	else if (v < 1000000)
		snprintf(buf, size, "%.4gus", v / 1e3);
	else if (v < 1000000000)
		snprintf(buf, size, "%.4gms", v / 1e6);
	else
		snprintf(buf, size, "%.4gs", v / 1e9);
	return buf;
}

/* One row of `tailprof stages`: a stage object of /api/v1/stages. */
static void stage_row(const json_t *s, const char *start)
{
	static const char *const keys[] = {"p50_ns", "p90_ns", "p95_ns", "p99_ns", "max_ns"};
	char b[6][32];

	for (int i = 0; i < 5; i++)
		f_latency(s, keys[i], b[i], 32);
	printf("%-24s  %-16s %8s %10s %10s %10s %10s %10s%s\n", start, j_str(s, "stage"),
	       f_int(s, "count", b[5], 32), b[0], b[1], b[2], b[3], b[4],
	       json_is_true(json_object_get(s, "low_sample")) ? "  (low sample)" : "");
}

static int print_stages(const json_t *doc)
{
	const json_t *total = json_object_get(doc, "stages"),
		     *wins = json_object_get(doc, "windows");

	if (!json_is_array(total) || !json_is_array(wins)) {
		p_err("tailprofd's answer to /api/v1/stages has no \"stages\" and \"windows\" "
		      "arrays");
		return 1;
	}
	if (!json_array_size(total)) {
		printf("no stages (configure them with [stage NAME] sections in tailprofd's "
		       "configuration)\n");
		return 0;
	}
	printf("%-24s  %-16s %8s %10s %10s %10s %10s %10s\n", "WINDOW", "STAGE", "COUNT", "P50",
	       "P90", "P95", "P99", "MAX");
	for (size_t i = 0; i < json_array_size(wins); i++) {
		const json_t *w = json_array_get(wins, i), *st = json_object_get(w, "stages");

		for (size_t j = 0; j < json_array_size(st); j++)
			stage_row(json_array_get(st, j), j ? "" : j_str(w, "start"));
	}
	for (size_t j = 0; j < json_array_size(total); j++)
		stage_row(json_array_get(total, j), j ? "" : "whole range");
	printf(
	    "percentiles from log-linear buckets, within 1.6%%; low sample: under 20 requests\n");
	return 0;
}

static int cmd_stages(int argc, char **argv)
{
	static const struct opt opts[] = {
	    {"last", 0, OPT_LAST, DURATION_VALUE},
	    {"from", 0, OPT_FROM, TIME_VALUE},
	    {"to", 0, OPT_TO, TIME_VALUE},
	    {"json", 0, OPT_JSON, NULL},
	    {},
	};
	struct opt_iter it = {.cmd = "stages", .opts = opts, .argc = argc, .argv = argv, .i = 1};
	struct time_range range = {};
	size_t qsize = 0;
	char *query = NULL;
	const char *val;
	bool json = false;
	json_t *doc;
	FILE *q;
	int id, ret;

	while ((id = opt_next(&it, &val)) != OPT_END) {
		if ((ret = opt_common(&it, id, val, usage_stages)) >= 0)
			return ret;
		if (range_opt(&range, id, val))
			continue;
		if (id == OPT_JSON)
			json = true;
	}
	if ((ret = range_check(it.cmd, &range)) || (ret = server_resolve(it.cmd)))
		return ret;
	if (!range.last && !range.from && !range.to)
		range.last = "10m";
	q = open_memstream(&query, &qsize);
	if (!q)
		OOM_ABORT();
	range_query(q, &range);
	if (fclose(q))
		OOM_ABORT();
	ret = fetch_json("/api/v1/stages", query, json, &doc);
	free(query);
	if (ret || json)
		return ret;
	ret = print_stages(doc);
	json_decref(doc);
	return ret;
}

static int cmd_help(int argc, char **argv);

/* The subcommands, in the order usage lists them. */
static const struct cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	void (*usage)(FILE *f);
	const char *summary;
} cmds[] = {
    {"status", cmd_status, usage_status, "show the daemon: version, sampling, health"},
    {"windows", cmd_windows, usage_windows, "list the time windows the daemon holds"},
    {"pull", cmd_pull, usage_pull, "write a pprof profile of a time range to a file"},
    {"gc", cmd_gc, usage_gc, "list the GC pauses of a time range (JVM, CPython, Go)"},
    {"stages", cmd_stages, usage_stages, "show per-stage latency percentiles per window"},
    {"help", cmd_help, NULL, "show the usage of tailprof or of a subcommand"},
};

static const struct cmd *cmd_find(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(cmds); i++)
		if (!strcmp(cmds[i].name, name))
			return &cmds[i];
	return NULL;
}

static int unknown_cmd(const char *name)
{
	char all[128] = "";

	for (size_t i = 0; i < ARRAY_SIZE(cmds); i++)
		snprintf(all + strlen(all), sizeof(all) - strlen(all), "%s%s", i ? ", " : "",
			 cmds[i].name);
	return usage_err(NULL, "unknown subcommand '%s' (allowed: %s)", name, all);
}

static int cmd_help(int argc, char **argv)
{
	const struct cmd *c;

	if (argc > 2)
		return usage_err("help", "help takes at most one subcommand");
	if (argc < 2 || !strcmp(argv[1], "help") || !strcmp(argv[1], "--help") ||
	    !strcmp(argv[1], "-h")) {
		usage_top(stdout);
		return 0;
	}
	c = cmd_find(argv[1]);
	if (!c)
		return unknown_cmd(argv[1]);
	c->usage(stdout);
	return 0;
}

static const char common_help[] =
    "  --server URL   tailprofd's address (default " DEFAULT_SERVER ", or $TAILPROF_SERVER)\n"
    "  -h, --help     show this help\n";

static void usage_top(FILE *f)
{
	fprintf(f, "Usage: tailprof [--server URL] SUBCOMMAND [OPTIONS]\n"
		   "\n"
		   "The command-line client of tailprofd, the always-on eBPF profiler.\n"
		   "\n"
		   "Subcommands:\n");
	for (size_t i = 0; i < ARRAY_SIZE(cmds); i++)
		fprintf(f, "  %-9s %s\n", cmds[i].name, cmds[i].summary);
	fprintf(f,
		"\nGlobal options (before or after the subcommand):\n"
		"%s"
		"  --version      show the version\n"
		"\n"
		"Exit status: 0 success, 1 failure (daemon down, server error), 2 usage.\n"
		"Run 'tailprof SUBCOMMAND --help' for the options of a subcommand.\n",
		common_help);
}

static void usage_status(FILE *f)
{
	fprintf(f,
		"Usage: tailprof status [--json]\n"
		"\n"
		"Shows the daemon: version, host, sampling, windows, samples, drops, health, and\n"
		"the features this kernel runs (each on or off, its variant, why).\n"
		"\n"
		"Options:\n"
		"  --json         print the API's JSON (GET /api/v1/status) unchanged\n"
		"%s",
		common_help);
}

static void usage_windows(FILE *f)
{
	fprintf(f,
		"Usage: tailprof windows [--last DUR | --from TIME [--to TIME]] [--json]\n"
		"\n"
		"Lists the time windows the daemon holds (all of them without a range);\n"
		"the current one, still filling, is marked with '*'. OFFCPU is the blocked\n"
		"time captured with stacks, RUNQ_P99 the run-queue latency's p99 ('-': the\n"
		"daemon has no scheduler programs).\n"
		"\n"
		"Options:\n"
		"  --last DUR     the windows of the last DUR: 500ms, 2s, 10m, 1h\n"
		"  --from TIME    from TIME: RFC 3339 (2026-11-29T21:00:00Z) or Unix seconds\n"
		"  --to TIME      up to TIME (default now)\n"
		"  --json         print the API's JSON (GET /api/v1/windows) unchanged\n"
		"%s",
		common_help);
}

static void usage_gc(FILE *f)
{
	fprintf(f,
		"Usage: tailprof gc [--last DUR | --from TIME [--to TIME]] [--json]\n"
		"\n"
		"Lists the GC events of the JVM, CPython and Go processes in a time range (every\n"
		"window held without one): start, process, runtime, kind (pause, collection,\n"
		"safepoint), duration, and the generation or cause; then the pause totals.\n"
		"\n"
		"Options:\n"
		"  --last DUR     the events of the last DUR: 500ms, 2s, 10m, 1h\n"
		"  --from TIME    from TIME: RFC 3339 (2026-11-29T21:00:00Z) or Unix seconds\n"
		"  --to TIME      up to TIME (default now)\n"
		"  --json         print the API's JSON (GET /api/v1/gc) unchanged\n"
		"%s",
		common_help);
}

static void usage_pull(FILE *f)
{
	fprintf(f,
		"Usage: tailprof pull [--type TYPE] [--last DUR | --from TIME [--to TIME]]\n"
		"                     [--pid PID] [--comm NAME] [--stage NAME] -o FILE\n"
		"\n"
		"Writes a gzip-compressed pprof profile of a time range, for go tool pprof,\n"
		"speedscope, Pyroscope or Parca. The file is written whole or not at all; a\n"
		"summary line goes to stderr.\n"
		"\n"
		"Options:\n"
		"  --type TYPE    cpu (the default: where CPU time went), offcpu (where threads\n"
		"                 blocked, and for how long) or wall (both, per thread)\n"
		"  --last DUR     the last DUR: 500ms, 2s, 10m, 1h (default 5m)\n"
		"  --from TIME    from TIME: RFC 3339 (2026-11-29T21:00:00Z) or Unix seconds\n"
		"  --to TIME      up to TIME (default now)\n"
		"  --pid PID      only this process\n"
		"  --comm NAME    only processes with this name (comm)\n"
		"  --stage NAME   only samples taken while the thread was in stage NAME\n"
		"  -o, --output FILE\n"
		"                 where to write the profile; - for stdout\n"
		"%s",
		common_help);
}

static void usage_stages(FILE *f)
{
	fprintf(f,
		"Usage: tailprof stages [--last DUR | --from TIME [--to TIME]] [--json]\n"
		"\n"
		"Shows each stage's request count and latency percentiles (p50, p90, p95, p99,\n"
		"max) per window and over the whole range. Percentiles of fewer than 20\n"
		"requests are marked low sample.\n"
		"\n"
		"Options:\n"
		"  --last DUR     the last DUR: 500ms, 2s, 10m, 1h (default 10m)\n"
		"  --from TIME    from TIME: RFC 3339 (2026-11-29T21:00:00Z) or Unix seconds\n"
		"  --to TIME      up to TIME (default now)\n"
		"  --json         print the API's JSON (GET /api/v1/stages) unchanged\n"
		"%s",
		common_help);
}

int main(int argc, char **argv)
{
	static const struct opt opts[] = {
	    {"version", 0, OPT_VERSION, NULL},
	    {},
	};
	struct opt_iter it = {.cmd = NULL, .opts = opts, .argc = argc, .argv = argv, .i = 1};
	const struct cmd *c = NULL;
	const char *val;
	int id, ret;

	while (!c && (id = opt_next(&it, &val)) != OPT_END) {
		switch (id) {
		case OPT_HELP:
			usage_top(stdout);
			return 0;
		case OPT_VERSION:
			printf("tailprof %s\n", TAILPROF_VERSION);
			return 0;
		case OPT_ARG:
			c = cmd_find(val);
			if (!c)
				return unknown_cmd(val);
			break;
		default:
			return EXIT_USAGE;
		}
	}
	if (!c) {
		usage_top(stderr);
		return EXIT_USAGE;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
		p_err("cannot initialize libcurl");
		return 1;
	}
	ret = c->fn(argc - it.i + 1, argv + it.i - 1);
	curl_global_cleanup();
	if (fflush(stdout) || ferror(stdout)) {
		p_err("cannot write to stdout: %s", strerror(errno));
		return 1;
	}
	free(server);
	return ret;
}
