// SPDX-License-Identifier: GPL-2.0-only
/* Bounded resources: the [limits] keys, the HTTP server's connection count, and the one view of
 * every bounded table for /metrics and the status (resource_limits.h). */
#include "resource_limits.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "collector.h"
#include "push.h"
#include "query.h"
#include "snapshots.h"
#include "source_lines.h"
#include "spikes.h"
#include "textbuf.h"
#include "timeparse.h"

/* The range of each key; the lower bounds are 1 so that tests can fill a table with a handful */
static const uint32_t key_max[LIMITS_NR_KEYS] = {
    [LIMIT_STACKS] = 100000000,
    [LIMIT_TASKS] = 100000000,
    [LIMIT_KNOWN_PROCESSES] = LIMITS_DEFAULT_KNOWN_PROCESSES,
    [LIMIT_PROCESSES] = 1000000,
    [LIMIT_OBJECTS] = 1000000,
    [LIMIT_HTTP_CONNECTIONS] = 1024, /* a thread each */
};

bool limits__is_key(const char *key)
{
	for (int i = 0; i < LIMITS_NR_KEYS; i++)
		if (!strcmp(key, limits_keys[i]))
			return true;
	return false;
}

int limits_opts__set(struct limits_opts *o, const char *key, const char *value, char *msg,
		     size_t msglen)
{
	uint64_t v;

	for (int i = 0; i < LIMITS_NR_KEYS; i++) {
		if (strcmp(key, limits_keys[i]))
			continue;
		if (tp_parse_uint(value, 1, key_max[i], &v)) {
			snprintf(msg, msglen, "'%s': give an integer from 1 to %" PRIu32, value,
				 key_max[i]);
			return -EINVAL;
		}
		o->v[i] = v;
		return 0;
	}
	snprintf(msg, msglen,
		 "unknown key '%s'; allowed: stacks, tasks, known_processes, processes, objects, "
		 "http_connections",
		 key);
	return -ENOENT;
}

/* ---- HTTP connections ---- */

struct limits_http limits_http, limits_http_unix;

enum MHD_Result limits_http_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
	struct limits_http *l = cls;
	uint32_t max = l->max ? l->max : LIMITS_DEFAULT_HTTP_CONNECTIONS;

	(void)addr;
	(void)addrlen;
	/* the listener's thread alone accepts for it: open only grows here, so the check holds */
	if (__atomic_load_n(&l->open, __ATOMIC_RELAXED) >= max) {
		__atomic_add_fetch(&l->refused, 1, __ATOMIC_RELAXED);
		return MHD_NO;
	}
	return MHD_YES;
}

void limits_http_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
			enum MHD_ConnectionNotificationCode code)
{
	struct limits_http *l = cls;

	(void)conn;
	(void)socket_context;
	if (code == MHD_CONNECTION_NOTIFY_STARTED)
		__atomic_add_fetch(&l->open, 1, __ATOMIC_RELAXED);
	else if (code == MHD_CONNECTION_NOTIFY_CLOSED)
		__atomic_sub_fetch(&l->open, 1, __ATOMIC_RELAXED);
}

/* ---- the view ---- */

size_t limits__rows(const struct query_ctx *ctx, struct limit_row *rows)
{
	struct source_lines_stats sl;
	struct collector_status st;
	size_t n = 0;

	collector__status(ctx->collector, &st);
	rows[n++] = (struct limit_row){
	    "stacks", "refuse_new", st.stacks, st.max_stacks, 0, st.drops[DROP_STACK_TABLE_FULL]};
	rows[n++] = (struct limit_row){
	    "tasks", "refuse_new", st.tasks, st.max_tasks, 0, st.drops[DROP_TASK_TABLE_FULL]};
	rows[n++] = (struct limit_row){"known_processes", "evict_oldest",   st.known,
				       st.max_known,	  st.known_evicted, 0};
	rows[n++] = (struct limit_row){"processes",
				       "evict_lru",
				       st.sym.processes_held,
				       st.sym.max_processes,
				       st.sym.evicted_processes,
				       0};
	rows[n++] = (struct limit_row){
	    "objects", "evict_lru", st.sym.objects, st.sym.max_objects, st.sym.evicted_objects, 0};
	source_lines__stats(&sl);
	rows[n++] = (struct limit_row){"source_lines_bytes", "evict_lru",	 sl.bytes,
				       sl.budget_bytes,	     sl.evicted_objects, 0};
	if (st.unwind.max_processes) {
		rows[n++] = (struct limit_row){"unwind_processes",
					       "refuse_new",
					       st.unwind.processes,
					       st.unwind.max_processes,
					       0,
					       st.unwind.procs_dropped};
		rows[n++] = (struct limit_row){"unwind_rows",	       "evict_idle_then_refuse",
					       st.unwind.table_rows,   st.unwind.capacity_rows,
					       st.unwind.idle_evicted, st.unwind.over_budget};
	}
	if (ctx->spikes) {
		struct limit_row r = {.table = "pinned_windows", .rule = "evict_oldest"};

		spikes__pin_counts(ctx->spikes, &r.entries, &r.cap, &r.evicted, &r.refused);
		rows[n++] = r;
	}
	if (ctx->snapshots) {
		struct snapshots_counts c;

		snapshots__counts(ctx->snapshots, &c);
		rows[n++] = (struct limit_row){"snapshots", "refuse_new",  c.count, c.max_count,
					       0,	    c.refused_full};
		rows[n++] =
		    (struct limit_row){"snapshot_bytes", "refuse_new", c.bytes, c.max_bytes, 0, 0};
	}
	if (ctx->push) {
		struct limit_row r = {.table = "push_queue", .rule = "evict_oldest"};

		push__queue_counts(ctx->push, &r.entries, &r.cap, &r.evicted);
		rows[n++] = r;
	}
	/* both listeners: the cap is each one's */
	rows[n++] =
	    (struct limit_row){"http_connections",
			       "refuse_new",
			       __atomic_load_n(&limits_http.open, __ATOMIC_RELAXED) +
				   __atomic_load_n(&limits_http_unix.open, __ATOMIC_RELAXED),
			       limits_http.max ? limits_http.max : LIMITS_DEFAULT_HTTP_CONNECTIONS,
			       0,
			       __atomic_load_n(&limits_http.refused, __ATOMIC_RELAXED) +
				   __atomic_load_n(&limits_http_unix.refused, __ATOMIC_RELAXED)};
	return n;
}

char *limits__metrics_text(const struct query_ctx *ctx)
{
	static const struct {
		const char *name, *type, *help;
	} m[] = {
	    {"tailprof_table_entries", "gauge",
	     "Entries of each bounded table now (unwind_rows: rows; snapshot_bytes: bytes)."},
	    {"tailprof_table_capacity", "gauge", "The cap of each bounded table ([limits] etc.)."},
	    {"tailprof_table_evictions_total", "counter",
	     "Entries a bounded table dropped to make room (its rule: oldest or least recently "
	     "used first)."},
	    {"tailprof_table_refused_total", "counter",
	     "New entries a full table did not take (stacks, tasks: the samples were dropped)."},
	};
	struct limit_row rows[LIMITS_MAX_ROWS];
	size_t n = limits__rows(ctx, rows);
	struct text t = {0};

	for (size_t k = 0; k < sizeof(m) / sizeof(m[0]); k++) {
		text_metric(&t, m[k].name, m[k].type, m[k].help);
		for (size_t i = 0; i < n; i++) {
			const uint64_t v[] = {rows[i].entries, rows[i].cap, rows[i].evicted,
					      rows[i].refused};

			text_put(&t, "%s{table=\"%s\"} %" PRIu64 "\n", m[k].name, rows[i].table,
				 v[k]);
		}
	}
	return text_finish(&t);
}

json_t *limits__status_json(const struct query_ctx *ctx)
{
	struct limit_row rows[LIMITS_MAX_ROWS];
	size_t n = limits__rows(ctx, rows);
	json_t *o = json_object();

	for (size_t i = 0; o && i < n; i++)
		json_object_set_new(o, rows[i].table,
				    json_pack("{s:I, s:I, s:I, s:I, s:s}", "entries",
					      (json_int_t)rows[i].entries, "cap",
					      (json_int_t)rows[i].cap, "evicted",
					      (json_int_t)rows[i].evicted, "refused",
					      (json_int_t)rows[i].refused, "rule", rows[i].rule));
	return o;
}
