/* SPDX-License-Identifier: GPL-2.0-only */
/* Bounded resources: the [limits] caps of the tables that grow with the outside world, the
 * connection count of the HTTP server, and one view of every bounded table (entries, cap, and
 * what its rule took: evicted or refused) for /metrics and /api/v1/status. docs/configuration.md
 * lists each table with its default and memory cost. */
#ifndef TAILPROF_RESOURCE_LIMITS_H
#define TAILPROF_RESOURCE_LIMITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <microhttpd.h>

/* Defaults: far above what a normal host reaches in an hour of retention, so that they only
 * stop a runaway (docs/configuration.md gives the memory at each). */
#define LIMITS_DEFAULT_STACKS		(1u << 19)
#define LIMITS_DEFAULT_TASKS		(1u << 20)
#define LIMITS_DEFAULT_KNOWN_PROCESSES	32768 /* the BPF known_procs map's size */
#define LIMITS_DEFAULT_HTTP_CONNECTIONS 256

/* The [limits] keys, in the order of struct limits_opts' values. */
enum limits_key {
	LIMIT_STACKS,		/* interned stacks */
	LIMIT_TASKS,		/* interned tasks (pid, tid, stage, names) */
	LIMIT_KNOWN_PROCESSES,	/* processes marked known (maps read) in BPF */
	LIMIT_PROCESSES,	/* processes whose maps the symbolizer caches */
	LIMIT_OBJECTS,		/* ELF objects with cached symbol tables */
	LIMIT_HTTP_CONNECTIONS, /* HTTP connections open at once */
	LIMITS_NR_KEYS,
};
extern const char *const limits_keys[LIMITS_NR_KEYS];

/* [limits] as applied: v[key], 0 for the default. */
struct limits_opts {
	uint32_t v[LIMITS_NR_KEYS];
};

/* Sets [limits] key from its text (an integer in the key's range, given in the message).
 * Returns 0, -EINVAL with msg (msglen bytes) saying what is allowed, or -ENOENT for an unknown
 * key (msg lists the known ones). */
int limits_opts__set(struct limits_opts *o, const char *key, const char *value, char *msg,
		     size_t msglen);
/* Whether key is a [limits] key. */
bool limits__is_key(const char *key);

/* ---- HTTP connections ---- */

/* The open connections of one HTTP listener, against max (0: LIMITS_DEFAULT_HTTP_CONNECTIONS),
 * through libmicrohttpd's accept policy and connection notification (both take the listener's
 * counter as their cls). A connection past max is closed at accept and counted. The TCP
 * listener counts in limits_http, the unix socket in limits_http_unix, each against the same
 * max: clients that fill TCP's slots (slow ones: anyone who can reach the port) do not lock
 * root and group tailprof out of the socket. */
struct limits_http {
	uint32_t max;
	uint32_t open;	  /* atomic */
	uint64_t refused; /* atomic; since start */
};
extern struct limits_http limits_http, limits_http_unix;
/* MHD_AcceptPolicyCallback: MHD_NO (counted) when max connections are open. */
enum MHD_Result limits_http_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen);
/* MHD_NotifyConnectionCallback: counts connections opening and closing. */
void limits_http_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
			enum MHD_ConnectionNotificationCode code);

/* ---- one view of the bounded tables ---- */

struct query_ctx;

/* One bounded table: entries now (of unit: entries, rows or bytes), its cap, and what its rule
 * did since start: evicted (entries dropped to make room) and refused (new entries not taken). */
struct limit_row {
	const char *table;
	const char *rule; /* "evict_oldest", "evict_lru", "refuse_new", "evict_idle_then_refuse" */
	uint64_t entries, cap, evicted, refused;
};
#define LIMITS_MAX_ROWS 16

/* Fills rows[0..LIMITS_MAX_ROWS) with the tables ctx has; call under the collector's read lock.
 * Returns the number filled. */
size_t limits__rows(const struct query_ctx *ctx, struct limit_row *rows);
/* The Prometheus text of the rows (tailprof_table_entries, tailprof_table_capacity,
 * tailprof_table_evictions_total, tailprof_table_refused_total, by table): malloc'd, NULL on
 * ENOMEM. */
char *limits__metrics_text(const struct query_ctx *ctx);
/* The "limits" object of /api/v1/status: {TABLE: {entries, cap, evicted, refused, rule}}; a new
 * reference, NULL on ENOMEM. */
struct json_t *limits__status_json(const struct query_ctx *ctx);

#endif
