/* SPDX-License-Identifier: GPL-2.0-only */
/* The client layer the tailprof subcommands share: errors, options, the server, time ranges,
 * HTTP (libcurl), JSON fields (jansson), and profiles written to files whole or not at all. */
#ifndef TAILPROF_CLI_COMMON_H
#define TAILPROF_CLI_COMMON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define DEFAULT_SERVER "http://127.0.0.1:7077"
/* tailprofd's default --socket: the CLI uses it when it is there and we may connect */
#define DEFAULT_SOCKET "/run/tailprof/tailprofd.sock"
#define EXIT_USAGE     2

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Small allocations abort on failure (STYLE.md's allocation policy); bodies are checked. */
#define OOM_ABORT()                                                                                \
	do {                                                                                       \
		fputs("tailprof: out of memory\n", stderr);                                        \
		abort();                                                                           \
	} while (0)

#define DURATION_FORMS "500ms, 2s, 10m, 1h"
#define TIME_FORMS     "RFC 3339 such as 2026-11-29T21:00:00Z, or Unix seconds"
#define DURATION_VALUE "a duration such as " DURATION_FORMS
#define TIME_VALUE     "a time, " TIME_FORMS

/* The server's URL, resolved by server_resolve(): scheme included, no trailing slash
 * (http://localhost for a unix:PATH server). */
extern char *server;

/* The help lines of the options every subcommand takes (--server, --token-file, --help). */
extern const char common_help[];

/* ---- errors ---- */

/* The one error printer: "tailprof: <message>" on stderr. */
void p_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Prints a usage error and where to read the usage of cmd (NULL: the top level). Returns 2. */
int usage_err(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* asprintf that aborts when out of memory. The caller frees the result. */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- options ---- */

/* Every option of every subcommand; at most 32 (opt_iter.seen is a bit mask of them). */
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
	OPT_CONTAINER,
	OPT_OUTPUT,
	OPT_STAGE,
	OPT_SPIKE,
	OPT_REQUEST,
	OPT_BASELINE,
	OPT_REASON,
	OPT_TIME,
	OPT_BEFORE,
	OPT_AFTER,
	OPT_FAIL_ON_REGRESSION,
	OPT_MIN_EFFECT,
	OPT_GATE_FUNCTIONS,
	OPT_ALPHA,
	OPT_SEED,
	OPT_BEFORE_PROFILE,
	OPT_AFTER_PROFILE,
	OPT_TOP,
	OPT_REPLACE,
	OPT_TOKEN_FILE,
	OPT__COUNT, /* at most 32: opt_iter.seen has a bit each */
};

struct opt {
	const char *name; /* long form, without "--" */
	char short_name;  /* 0: none */
	enum opt_id id;
	const char *value; /* what its value is, for messages; NULL: takes no value */
};

struct opt_iter {
	const char *cmd;	/* subcommand for messages; NULL at the top level */
	const struct opt *opts; /* the subcommand's own, {}-terminated; --server, --token-file and
				 * --help added */
	int argc, i;
	char **argv;
	unsigned seen; /* 1 << opt_id of the options with values given so far */
};

/*
 * Returns the id of the next option and its value in *val (OPT_ARG: the argument itself),
 * OPT_END when none is left, or -1 after printing a usage error. Takes "--name value",
 * "--name=value", "-x value" and "-xvalue"; --server and --token-file are consumed here,
 * wherever they come. An
 * option with a value given twice is a usage error.
 */
int opt_next(struct opt_iter *it, const char **val);

/*
 * Handles what every subcommand's option loop shares: --help prints usage and ends with 0; a
 * positional argument (when positional is NULL; else it is stored there, once) or a bad option
 * ends with 2. Returns -1 to go on, else an exit code.
 */
int opt_common(const struct opt_iter *it, int id, const char *val, void (*usage)(FILE *f),
	       const char **positional);

/* Settles the server from --server, $TAILPROF_SERVER, the default socket when it is there (we
 * may write to it; a request it refuses goes to DEFAULT_SERVER) or DEFAULT_SERVER, into
 * `server`: an http(s) URL, or unix:PATH (then server is http://localhost and requests go
 * through the socket). Then reads the API token from --token-file, else $TAILPROF_TOKEN_FILE
 * (access__read_token's rules: mode 0600 or 0400), sent as Authorization: Bearer on every
 * request. Returns 0, or 2 after a usage error naming cmd (or the token file's problem). */
int server_resolve(const char *cmd);
/* Frees what server_resolve made. */
void server_free(void);

/* ---- time ranges (--last | --from/--to) ---- */

struct time_range {
	const char *last, *from, *to; /* as given; NULL when not */
};

/* Takes --last, --from or --to into r. Returns true when id was one of them. */
bool range_opt(struct time_range *r, int id, const char *val);

/* Validates r locally (the original strings go to the server). Returns 0 or 2. */
int range_check(const char *cmd, const struct time_range *r);

/* Whether any of --last, --from, --to was given. */
bool range_given(const struct time_range *r);

/* ---- queries ---- */

/* Appends "&key=value" (the first without '&') to q, value percent-encoded (RFC 3986); nothing
 * when val is NULL. */
void query_add(FILE *q, const char *key, const char *val);

/* Appends the range's last=, from=, to= to q. */
void range_query(FILE *q, const struct time_range *r);

/* Opens a query being built: a memstream into *query (the caller frees it after query_end). */
FILE *query_begin(char **query, size_t *size);

/* Closes a query opened by query_begin; *query then holds it. */
void query_end(FILE *q);

/* ---- HTTP ---- */

enum tp_header {
	HDR_SAMPLES,
	HDR_START_NS,
	HDR_END_NS,
	HDR_WINDOWS,
	HDR__COUNT,
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

/* Frees r's body (r itself is the caller's). */
void http_resp__free(struct http_resp *r);

/*
 * GETs path?query from the server into r (zeroed by the caller, sink optional). long_running:
 * no total timeout, only a stall limit (profiles). Returns 0 when an answer came, whatever its
 * status, or -1 after printing why none came (connection refused: which server, how to start
 * tailprofd).
 */
int http_get(const char *path, const char *query, bool long_running, struct http_resp *r);

/* POSTs the JSON text body to path, as http_get does otherwise. */
int http_post_json(const char *path, const char *body, struct http_resp *r);

/* POSTs an empty body to path?query (the query says it all), as http_get does otherwise. */
int http_post(const char *path, const char *query, struct http_resp *r);

/* DELETEs path, as http_get does otherwise. */
int http_delete(const char *path, struct http_resp *r);

/* Returns 0 for a 2xx answer, else 1 after printing the server's "error" (or its body's first
 * line, or the status alone). */
int check_status(const struct http_resp *r);

/*
 * GETs a JSON resource. With raw, prints the body unchanged to stdout and sets *out to NULL;
 * otherwise parses it into *out, which must be an object (caller decrefs). Returns 0 or 1 after
 * printing the failure.
 */
int fetch_json(const char *path, const char *query, bool raw, json_t **out);

/* What request_json does with a 2xx answer's body. */
enum json_use {
	JSON_PARSE, /* parse it into *out */
	JSON_PRINT, /* print it unchanged to stdout; *out is NULL */
	JSON_BOTH,  /* print it unchanged and parse it into *out */
};

/*
 * Sends method ("GET", "POST" with an empty body, or "DELETE") to path?query (query may be NULL)
 * and uses the JSON answer as use says; a parsed answer must be an object (caller decrefs *out).
 * Returns 0, or 1 after printing the failure (daemon down, the server's "error", invalid JSON).
 */
int request_json(const char *method, const char *path, const char *query, enum json_use use,
		 json_t **out);

/* ---- JSON fields (unknown keys are ignored, missing ones print as "-") ---- */

/* Whether o[key] is an integer; its value in *v. */
bool j_int(const json_t *o, const char *key, long long *v);

/* o[key] as a string; "-" when it is not one. */
const char *j_str(const json_t *o, const char *key);

/* o[key] as a decimal integer in buf; "-" when it is not an integer. */
const char *f_int(const json_t *o, const char *key, char *buf, size_t size);

/* o[key], integer nanoseconds, as a Go duration (tp_format_duration) in buf; "-" when absent. */
const char *f_dur(const json_t *o, const char *key, char *buf, size_t size);

/* ns with 4 significant digits and its unit in buf: 812ns, 315.4us, 2.982ms, 1.204s. buf needs
 * 32 bytes. Returns buf, or "-" for a negative value. */
const char *fmt_latency(long long ns, char *buf, size_t size);

/* o[key], integer nanoseconds, as fmt_latency writes it; "-" when absent or negative. */
const char *f_latency(const json_t *o, const char *key, char *buf, size_t size);

/* ---- profiles pulled into files ---- */

/* The profile types of /api/v1/profile's type=, NULL-terminated. */
extern const char *const profile_types[];

/* Returns 0 when type is one of profile_types, else 2 after a usage error naming --type. */
int profile_type_check(const char *cmd, const char *type);

/*
 * One profile being pulled: the body goes to a temporary file beside out (mode 0600, removed on
 * failure or when SIGINT, SIGTERM or SIGHUP ends us), renamed over out once whole; or, for "-"
 * and for an existing device, FIFO or symlink, to an anonymous temporary file copied there once
 * whole. So out is never left partial. At most two are open at a time.
 */
struct profile_file {
	const char *out;  /* as given: a path, or "-" for stdout */
	const char *what; /* for the summary, e.g. "spike s-12"; NULL: none */
	char *tmp;	  /* the temporary file beside out; NULL when written through */
	FILE *f;
	struct http_resp r; /* the answer: status, X-Tailprof-* headers, byte count */
};

/* Creates pf's temporary file for out (pf zeroed by the caller; what may be NULL). Returns 0,
 * or 1 after printing why not; profile_file__close is needed either way. */
int profile_file__open(struct profile_file *pf, const char *out, const char *what);

/* GETs /api/v1/profile?query into pf's temporary file. Returns 0, or 1 after printing the
 * failure (server error, daemon down, write error). */
int profile_file__fetch(struct profile_file *pf, const char *query);

/* Puts the fetched profile in place: renamed over out, or copied to stdout or through to out.
 * Returns 0, or 1 after printing why not. */
int profile_file__commit(struct profile_file *pf);

/* Prints the one summary line of a committed pf on stderr (so that "-o -" pipes cleanly):
 * "wrote FILE (WHAT): N samples, START to END (SPAN, N windows)". */
void profile_file__summary(const struct profile_file *pf);

/* The samples a fetched pf holds (its X-Tailprof-Samples header), or -1 when the server did not
 * say. */
long long profile_file__samples(const struct profile_file *pf);

/* Removes pf's temporary file if it is still there and frees pf's resources. */
void profile_file__close(struct profile_file *pf);

#endif
