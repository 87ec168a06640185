// SPDX-License-Identifier: GPL-2.0-only
/* The client layer of the tailprof subcommands: errors, options, the server, HTTP (libcurl),
 * JSON fields (jansson), and profiles written to files whole or not at all. */
#include <curl/curl.h>
#include <errno.h>
#include <grp.h>
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

#include "access.h"
#include "common.h"
#include "tailprof_config.h"
#include "timeparse.h"

#define CONNECT_TIMEOUT_S 5L
/* status and windows are cheap to answer; a profile may take a while, so pull has no total
 * timeout and fails only when the transfer stalls below 1 byte/s for LOW_SPEED_TIME_S. */
#define QUERY_TIMEOUT_S	 60L
#define LOW_SPEED_TIME_S 120L
/* Bodies kept in memory (JSON, error answers) are sized by the server: bound them. */
#define MAX_BODY_BYTES	 (256UL << 20)
#define MAX_DETAIL_CHARS 200

static const char *server_flag;	    /* --server, wherever it was given */
static const char *token_file_flag; /* --token-file, wherever it was given */
/* the API token, sent as Authorization: Bearer (never printed); NULL: none */
static char *api_token;
/* where the token came from, for messages: "--token-file FILE" or "TAILPROF_TOKEN_FILE=FILE" */
static char *token_source;
char *server;
/* unix:PATH servers: the socket's path (server is then http://localhost), else NULL */
static char *server_socket;
/* the server as messages name it: server, or unix:PATH */
static char *server_shown;
/* server_socket is DEFAULT_SOCKET, taken because it was there: DEFAULT_SERVER if it refuses */
static bool server_socket_default;
/* The temporary files of pulls in progress, removed if a signal ends us. */
static const char *volatile tmp_paths[2];

/* ---- errors ---- */

/* The one error printer: "tailprof: <message>" on stderr. */
static void vp_err(const char *fmt, va_list ap)
{
	fputs("tailprof: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void p_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vp_err(fmt, ap);
	va_end(ap);
}

int usage_err(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vp_err(fmt, ap);
	va_end(ap);
	fprintf(stderr, "Try 'tailprof %s%s--help'.\n", cmd ? cmd : "", cmd ? " " : "");
	return EXIT_USAGE;
}

char *xasprintf(const char *fmt, ...)
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

const char common_help[] =
    "  --server URL   tailprofd's address: http://HOST:PORT or unix:PATH (default\n"
    "                 $TAILPROF_SERVER, else the socket " DEFAULT_SOCKET " when\n"
    "                 it is there, else " DEFAULT_SERVER ")\n"
    "  --token-file FILE\n"
    "                 the API token of a listener that needs one (tailprofd\n"
    "                 --auth-token-file): FILE's first line, sent as Authorization:\n"
    "                 Bearer; FILE readable by its owner only, chmod 600 (default\n"
    "                 $TAILPROF_TOKEN_FILE; the unix socket needs none)\n"
    "  -h, --help     show this help\n";

_Static_assert(OPT__COUNT <= 32, "opt_iter.seen has one bit an option");

/* Accepted by every subcommand and at the top level. */
static const struct opt common_opts[] = {
    {"server", 0, OPT_SERVER, "a URL such as " DEFAULT_SERVER " or unix:" DEFAULT_SOCKET},
    {"token-file", 0, OPT_TOKEN_FILE, "a file holding the API token (mode 0600)"},
    {"help", 'h', OPT_HELP, NULL},
    {},
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

int opt_next(struct opt_iter *it, const char **val)
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
		if (o->id == OPT_SERVER)
			server_flag = *val;
		else if (o->id == OPT_TOKEN_FILE)
			token_file_flag = *val;
		else
			return o->id;
	}
}

/* Reads the token of --token-file, else of $TAILPROF_TOKEN_FILE, into api_token. Returns 0 (no
 * file given: no token), or 2 after saying what is wrong with the file. */
static int token_resolve(const char *cmd)
{
	const char *path = token_file_flag, *from = "--token-file";
	char err[512];

	if (!path) {
		path = getenv("TAILPROF_TOKEN_FILE");
		from = "TAILPROF_TOKEN_FILE";
		if (!path || !*path)
			return 0;
	}
	api_token = access__read_token(path, err, sizeof(err));
	if (!api_token)
		return usage_err(cmd, "%s: %s", from, err);
	token_source = xasprintf("%s%s%s", from, from[0] == '-' ? " " : "=", path);
	return 0;
}

int server_resolve(const char *cmd)
{
	const char *from = "--server", *url = server_flag;
	size_t len;

	if (!url) {
		from = "TAILPROF_SERVER";
		url = getenv("TAILPROF_SERVER");
		/* the local daemon's socket when we may use it: no port to know, no token */
		if ((!url || !*url) && !access(DEFAULT_SOCKET, W_OK)) {
			url = "unix:" DEFAULT_SOCKET;
			server_socket_default = true;
		}
		if (!url || !*url)
			url = DEFAULT_SERVER;
	}
	if (!strncmp(url, "unix:", 5)) {
		if (url[5] != '/')
			return usage_err(cmd, "%s: '%s': give unix:/absolute/path/of/the.sock",
					 from, url);
		server_socket = xasprintf("%s", url + 5);
		server_shown = xasprintf("%s", url);
		server = xasprintf("http://localhost");
		return token_resolve(cmd);
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
	server_shown = xasprintf("%s", server);
	return token_resolve(cmd);
}

void server_free(void)
{
	free(server);
	free(server_socket);
	free(server_shown);
	server = server_socket = server_shown = NULL;
	if (api_token)
		explicit_bzero(api_token, strlen(api_token));
	free(api_token);
	free(token_source);
	api_token = token_source = NULL;
}

int opt_common(const struct opt_iter *it, int id, const char *val, void (*usage)(FILE *f),
	       const char **positional)
{
	if (id == OPT_HELP) {
		usage(stdout);
		return 0;
	}
	if (id == OPT_ARG && (!positional || *positional))
		return usage_err(it->cmd, "unexpected argument '%s'", val);
	if (id == OPT_ARG)
		*positional = val;
	return id < 0 ? EXIT_USAGE : -1;
}

/* ---- time ranges (--last | --from/--to) ---- */

bool range_opt(struct time_range *r, int id, const char *val)
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

int range_check(const char *cmd, const struct time_range *r)
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

bool range_given(const struct time_range *r)
{
	return r->last || r->from || r->to;
}

/* ---- queries and HTTP ---- */

void query_add(FILE *q, const char *key, const char *val)
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

void range_query(FILE *q, const struct time_range *r)
{
	query_add(q, "last", r->last);
	query_add(q, "from", r->from);
	query_add(q, "to", r->to);
}

FILE *query_begin(char **query, size_t *size)
{
	FILE *q = open_memstream(query, size);

	if (!q)
		OOM_ABORT();
	return q;
}

void query_end(FILE *q)
{
	if (fclose(q))
		OOM_ABORT();
}

static const char *const tp_header_names[HDR__COUNT] = {
    [HDR_SAMPLES] = "X-Tailprof-Samples",
    [HDR_START_NS] = "X-Tailprof-Start-Unix-Ns",
    [HDR_END_NS] = "X-Tailprof-End-Unix-Ns",
    [HDR_WINDOWS] = "X-Tailprof-Windows",
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

void http_resp__free(struct http_resp *r)
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
		if (server_socket && (os_errno == EACCES || os_errno == EPERM) &&
		    !getgrnam("tailprof"))
			p_err("cannot reach tailprofd at %s: %s (the socket is root's: there is no "
			      "group tailprof; sudo groupadd --system tailprof, restart tailprofd "
			      "(it gives the socket to the group), sudo usermod -aG tailprof $USER "
			      "and log in again; or use sudo)",
			      server_shown, strerror((int)os_errno));
		else if (server_socket && (os_errno == EACCES || os_errno == EPERM))
			p_err("cannot reach tailprofd at %s: %s (the socket is for root and "
			      "group tailprof: sudo usermod -aG tailprof $USER, then log in again; "
			      "or use sudo)",
			      server_shown, strerror((int)os_errno));
		else
			p_err(
			    "cannot reach tailprofd at %s: %s "
			    "(is tailprofd running? start it with: sudo packaging/setup.sh run in "
			    "the source tree, sudo systemctl start tailprofd where the package is "
			    "installed, or sudo build/daemon/tailprofd)",
			    server_shown, os_errno ? strerror((int)os_errno) : why);
		break;
	case CURLE_COULDNT_RESOLVE_HOST:
		p_err("cannot reach tailprofd at %s: %s", server_shown, why);
		break;
	case CURLE_OPERATION_TIMEDOUT:
		curl_easy_getinfo(c, CURLINFO_CONNECT_TIME, &connect_s);
		if (connect_s <= 0)
			p_err("cannot reach tailprofd at %s: no connection within %lds",
			      server_shown, CONNECT_TIMEOUT_S);
		else
			p_err("tailprofd at %s stopped answering %s: %s", server_shown, url, why);
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

/* Frees the request's header list and its Authorization line, wiped first (it holds the token).
 */
static void free_headers(struct curl_slist *hdrs, char *auth)
{
	for (struct curl_slist *h = hdrs; h; h = h->next)
		explicit_bzero(h->data, strlen(h->data));
	curl_slist_free_all(hdrs);
	if (auth)
		explicit_bzero(auth, strlen(auth));
	free(auth);
}

/* The default socket refused us (a tailprofd that is gone left it): DEFAULT_SERVER from now on,
 * the token kept. */
static void server_fallback(void)
{
	free(server);
	free(server_socket);
	free(server_shown);
	server_socket = NULL;
	server_socket_default = false;
	server = xasprintf("%s", DEFAULT_SERVER);
	server_shown = xasprintf("%s", DEFAULT_SERVER);
}

/* Sends method to path?query, with post_body (JSON) when not NULL (an empty POST: ""). As
 * http_get. */
static int http_request(const char *method, const char *path, const char *query,
			const char *post_body, bool long_running, struct http_resp *r)
{
	char errbuf[CURL_ERROR_SIZE] = "";
	char *url =
	    xasprintf("%s%s%s%s", server, path, query && *query ? "?" : "", query ? query : "");
	char *auth = NULL;
	struct curl_slist *hdrs = NULL;
	CURL *c = curl_easy_init();
	CURLcode rc;

	if (!c) {
		p_err("cannot initialize libcurl");
		free(url);
		return -1;
	}
	curl_easy_setopt(c, CURLOPT_URL, url);
	if (server_socket)
		curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, server_socket);
	if (post_body && *post_body &&
	    !(hdrs = curl_slist_append(hdrs, "Content-Type: "
					     "application/json")))
		OOM_ABORT();
	/* on every request: a TCP listener with --auth-token-file needs it, the socket ignores it
	 */
	if (api_token) {
		auth = xasprintf("Authorization: Bearer %s", api_token);
		if (!(hdrs = curl_slist_append(hdrs, auth)))
			OOM_ABORT();
	}
	if (hdrs)
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
	if (post_body)
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, post_body);
	if (strcmp(method, "GET") && strcmp(method, "POST"))
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
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
	if (rc == CURLE_COULDNT_CONNECT && server_socket_default) {
		/* a socket left by a tailprofd that is gone, while one serves TCP only: try there
		 */
		curl_easy_cleanup(c);
		free_headers(hdrs, auth);
		free(url);
		server_fallback();
		return http_request(method, path, query, post_body, long_running, r);
	}
	if (rc != CURLE_OK)
		report_curl_error(c, rc, errbuf, url, r);
	curl_easy_cleanup(c);
	free_headers(hdrs, auth);
	free(url);
	return rc == CURLE_OK ? 0 : -1;
}

int http_get(const char *path, const char *query, bool long_running, struct http_resp *r)
{
	return http_request("GET", path, query, NULL, long_running, r);
}

int http_post_json(const char *path, const char *body, struct http_resp *r)
{
	return http_request("POST", path, NULL, body, false, r);
}

int http_post(const char *path, const char *query, struct http_resp *r)
{
	return http_request("POST", path, query, "", false, r);
}

int http_delete(const char *path, struct http_resp *r)
{
	return http_request("DELETE", path, NULL, NULL, false, r);
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

int check_status(const struct http_resp *r)
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
	if (r->status == 401 && api_token)
		p_err("tailprofd at %s refused the token of %s: give the file holding the token "
		      "of tailprofd's --auth-token-file (--token-file FILE or TAILPROF_TOKEN_FILE)",
		      server_shown, token_source);
	else if (r->status == 401)
		p_err("tailprofd at %s needs a token: give --token-file FILE (or set "
		      "TAILPROF_TOKEN_FILE=FILE), FILE holding the token of tailprofd's "
		      "--auth-token-file, readable by you only (chmod 600)",
		      server_shown);
	return 1;
}

int request_json(const char *method, const char *path, const char *query, enum json_use use,
		 json_t **out)
{
	struct http_resp r = {};
	json_error_t jerr;
	int err;

	*out = NULL;
	if (http_request(method, path, query, strcmp(method, "POST") ? NULL : "", false, &r)) {
		http_resp__free(&r);
		return 1;
	}
	err = check_status(&r);
	if (!err && use != JSON_PARSE && r.len && fwrite(r.body, 1, r.len, stdout) != r.len)
		err = 1; /* reported once, by the final flush in main() */
	if (!err && use != JSON_PRINT) {
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

int fetch_json(const char *path, const char *query, bool raw, json_t **out)
{
	return request_json("GET", path, query, raw ? JSON_PRINT : JSON_PARSE, out);
}

/* ---- JSON fields (unknown keys are ignored, missing ones print as "-") ---- */

bool j_int(const json_t *o, const char *key, long long *v)
{
	const json_t *x = json_object_get(o, key);

	if (!json_is_integer(x))
		return false;
	*v = json_integer_value(x);
	return true;
}

const char *j_str(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : "-";
}

const char *f_int(const json_t *o, const char *key, char *buf, size_t size)
{
	long long v;

	if (!j_int(o, key, &v))
		return "-";
	snprintf(buf, size, "%lld", v);
	return buf;
}

const char *f_dur(const json_t *o, const char *key, char *buf, size_t size)
{
	long long v;

	if (!j_int(o, key, &v) || v < 0)
		return "-";
	return tp_format_duration((uint64_t)v, buf, size);
}

const char *fmt_latency(long long v, char *buf, size_t size)
{
	if (v < 0)
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

const char *f_latency(const json_t *o, const char *key, char *buf, size_t size)
{
	long long v;

	if (!j_int(o, key, &v))
		return "-";
	return fmt_latency(v, buf, size);
}

/* ---- profiles pulled into files ---- */

const char *const profile_types[] = {"cpu", "offcpu", "wall", NULL};

int profile_type_check(const char *cmd, const char *type)
{
	for (size_t i = 0; profile_types[i]; i++)
		if (!strcmp(type, profile_types[i]))
			return 0;
	return usage_err(cmd, "--type: '%s' is not a profile type (allowed: cpu, offcpu, wall)",
			 type);
}

static void on_fatal_signal(int sig)
{
	for (size_t i = 0; i < ARRAY_SIZE(tmp_paths); i++) {
		const char *path = tmp_paths[i];

		if (path)
			unlink(path);
	}
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

/* Hands path to the signal handler (the first one turns it on). */
static void tmp_register(const char *path)
{
	bool first = true;
	size_t free_slot = ARRAY_SIZE(tmp_paths);

	for (size_t i = 0; i < ARRAY_SIZE(tmp_paths); i++) {
		if (tmp_paths[i])
			first = false;
		else if (free_slot == ARRAY_SIZE(tmp_paths))
			free_slot = i;
	}
	if (free_slot == ARRAY_SIZE(tmp_paths))
		abort(); /* more than two pulls at a time: a bug, not an input */
	if (first)
		catch_signals(true);
	tmp_paths[free_slot] = path;
}

/* Takes path back from the signal handler (the last one turns it off). */
static void tmp_unregister(const char *path)
{
	bool any = false;

	for (size_t i = 0; i < ARRAY_SIZE(tmp_paths); i++) {
		if (tmp_paths[i] == path)
			tmp_paths[i] = NULL;
		any |= tmp_paths[i] != NULL;
	}
	if (!any)
		catch_signals(false);
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

int profile_file__open(struct profile_file *pf, const char *out, const char *what)
{
	char *tmp;
	int fd;

	pf->out = out;
	pf->what = what;
	if (!strcmp(out, "-") || write_through(out)) {
		pf->f = tmpfile();
		if (!pf->f) {
			p_err("cannot create a temporary file: %s", strerror(errno));
			return 1;
		}
		return 0;
	}
	tmp = xasprintf("%s.tmp.XXXXXX", out);
	fd = mkstemp(tmp);
	if (fd < 0) {
		p_err("cannot create %s: %s", tmp, strerror(errno));
		free(tmp);
		return 1;
	}
	pf->tmp = tmp;
	tmp_register(tmp);
	pf->f = fdopen(fd, "w");
	if (!pf->f) {
		p_err("cannot open %s: %s", tmp, strerror(errno));
		close(fd);
		return 1;
	}
	return 0;
}

int profile_file__fetch(struct profile_file *pf, const char *query)
{
	pf->r.sink = pf->f;
	pf->r.sink_name = pf->tmp ? pf->tmp : "the temporary file";
	return http_get("/api/v1/profile", query, true, &pf->r) || check_status(&pf->r);
}

int profile_file__commit(struct profile_file *pf)
{
	int ret;

	if (!pf->tmp)
		return strcmp(pf->out, "-") ? copy_to_path(pf->f, pf->out)
					    : copy_to(pf->f, stdout, "stdout");
	ret = commit_file(pf->f, pf->tmp, pf->out);
	pf->f = NULL;
	if (!ret) {
		/* renamed: nothing left to remove */
		tmp_unregister(pf->tmp);
		free(pf->tmp);
		pf->tmp = NULL;
	}
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

void profile_file__summary(const struct profile_file *pf)
{
	const struct http_resp *r = &pf->r;
	char line[512], t0[32], t1[32], d[32];
	long long samples, start, end, windows;
	int n;

	n = snprintf(line, sizeof(line),
		     "wrote %s%s%s%s: ", strcmp(pf->out, "-") ? pf->out : "stdout",
		     pf->what ? " (" : "", pf->what ? pf->what : "", pf->what ? ")" : "");
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

long long profile_file__samples(const struct profile_file *pf)
{
	long long v;

	return hdr_int(pf->r.hdr[HDR_SAMPLES], &v) && v >= 0 ? v : -1;
}

void profile_file__close(struct profile_file *pf)
{
	if (pf->f)
		fclose(pf->f);
	pf->f = NULL;
	if (pf->tmp) {
		unlink(pf->tmp);
		tmp_unregister(pf->tmp);
		free(pf->tmp);
		pf->tmp = NULL;
	}
	http_resp__free(&pf->r);
}
