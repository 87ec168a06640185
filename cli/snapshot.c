// SPDX-License-Identifier: GPL-2.0-only
/* tailprof snapshot save, list and rm: a time range's windows kept in tailprofd's state
 * directory under a name, to compare with later (tailprof compare --before snap:NAME). */
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "format.h"
#include "snapshot.h"
#include "spikes.h"
#include "timeparse.h"

bool snapshot_name_valid(const char *name)
{
	/* the characters and length of a spike id; the store also refuses the directory names */
	return spike_id_valid(name) && strcmp(name, ".") && strcmp(name, "..");
}

int snapshot_name_check(const char *cmd, const char *what, const char *name)
{
	if (snapshot_name_valid(name))
		return 0;
	return usage_err(cmd, "%s'%s' is not a snapshot name (%s)", what, name, SNAPSHOT_NAME_RULE);
}

/* v bytes in KiB, MiB or GiB with one decimal: "812 B", "1.5 MiB". Returns buf. */
static const char *fmt_bytes(long long v, char *buf, size_t size)
{
	static const char *const units[] = {"KiB", "MiB", "GiB", "TiB"};
	double x = v / 1024.0;
	size_t u = 0;

	if (v < 1024) {
		snprintf(buf, size, "%lld B", v);
		return buf;
	}
	for (; x >= 1024 && u + 1 < ARRAY_SIZE(units); u++)
		x /= 1024;
	snprintf(buf, size, "%.1f %s", x, units[u]);
	return buf;
}

/* o[key] as fmt_bytes writes it; "-" when it is no integer. */
static const char *f_bytes(const json_t *o, const char *key, char *buf, size_t size)
{
	long long v;

	if (!j_int(o, key, &v) || v < 0)
		return "-";
	return fmt_bytes(v, buf, size);
}

/* o[key], Unix nanoseconds, as RFC 3339 in buf (32 bytes or more); "-" when absent. */
static const char *f_time(const json_t *o, const char *key, char *buf, size_t size)
{
	long long ns;

	if (!j_int(o, key, &ns) || ns < 0 || size < 32)
		return "-";
	return tp_format_rfc3339(ns, buf, size);
}

/* A snapshot's range: "2026-11-29T21:00:00.000Z, 30m0s". */
static char *f_range(const json_t *s, char *buf, size_t size)
{
	long long from, to;
	char a[32], b[32];

	if (!j_int(s, "from_unix_ns", &from) || !j_int(s, "to_unix_ns", &to) || from < 0 ||
	    to < from)
		snprintf(buf, size, "-");
	else
		snprintf(buf, size, "%s, %s", tp_format_rfc3339(from, a, sizeof(a)),
			 tp_format_duration((uint64_t)(to - from), b, sizeof(b)));
	return buf;
}

/* ---- list ---- */

enum snap_col {
	NC_NAME,
	NC_SAVED,
	NC_RANGE,
	NC_WINDOWS,
	NC_BYTES,
	NC__COUNT,
};

static const char *const snap_headers[NC__COUNT] = {"NAME", "SAVED", "RANGE", "WINDOWS", "BYTES"};

static int print_snapshots(const json_t *doc)
{
	const json_t *list = json_object_get(doc, "snapshots"), *s;
	struct table t = {.rows = json_array_size(list),
			  .cols = NC__COUNT,
			  .headers = snap_headers,
			  .left = 1u << NC_NAME | 1u << NC_SAVED | 1u << NC_RANGE};
	long long total = 0;
	char b[3][32];
	size_t i;

	if (!json_is_array(list)) {
		p_err("tailprofd's answer to /api/v1/snapshots has no \"snapshots\" array");
		return 1;
	}
	if (!t.rows) {
		printf("no snapshots (save one with: tailprof snapshot save NAME --last 30m)\n");
		return 0;
	}
	if (table__alloc(&t))
		return 1;
	json_array_foreach(list, i, s)
	{
		const char *saved = json_string_value(json_object_get(s, "saved"));

		snprintf(table__cell(&t, i, NC_NAME), TABLE_CELL_SIZE, "%s", j_str(s, "name"));
		snprintf(table__cell(&t, i, NC_SAVED), TABLE_CELL_SIZE, "%s",
			 saved ? saved : f_time(s, "saved_unix_ns", b[0], sizeof(b[0])));
		f_range(s, table__cell(&t, i, NC_RANGE), TABLE_CELL_SIZE);
		snprintf(table__cell(&t, i, NC_WINDOWS), TABLE_CELL_SIZE, "%s",
			 f_int(s, "windows", b[0], sizeof(b[0])));
		snprintf(table__cell(&t, i, NC_BYTES), TABLE_CELL_SIZE, "%s",
			 f_bytes(s, "bytes", b[1], sizeof(b[1])));
	}
	table__print(&t, "");
	json_array_foreach(list, i, s)
	{
		long long v;

		if (j_int(s, "bytes", &v) && v > 0)
			total += v;
	}
	printf("snapshots: %zu of at most %s, %s of at most %s\n", json_array_size(list),
	       f_int(doc, "max_count", b[0], sizeof(b[0])), fmt_bytes(total, b[1], sizeof(b[1])),
	       f_bytes(doc, "max_bytes", b[2], sizeof(b[2])));
	return 0;
}

/* ---- actions ---- */

/* What a snapshot action was given. */
struct snapshot_args {
	const char *name; /* NULL: not given */
	struct time_range range;
	bool json;
	bool replace; /* save: over a snapshot of the same name */
};

/*
 * Parses the options of action cmd ("snapshot save", ...) into a: NAME when named, --last,
 * --from and --to when ranged, --json always; then checks them and settles the server. Returns
 * -1 to go on, else the exit status (0 after --help, 2 after a usage error).
 */
static int snapshot_args(const char *cmd, int argc, char **argv, bool named, bool ranged,
			 struct snapshot_args *a)
{
	static const struct opt opts[] = {
	    {"json", 0, OPT_JSON, NULL},       {"last", 0, OPT_LAST, DURATION_VALUE},
	    {"from", 0, OPT_FROM, TIME_VALUE}, {"to", 0, OPT_TO, TIME_VALUE},
	    {"replace", 0, OPT_REPLACE, NULL}, {},
	};
	static const struct opt json_only[] = {
	    {"json", 0, OPT_JSON, NULL},
	    {},
	};
	struct opt_iter it = {
	    .cmd = cmd, .opts = ranged ? opts : json_only, .argc = argc, .argv = argv, .i = 1};
	const char *val;
	int id, ret;

	while ((id = opt_next(&it, &val)) != OPT_END) {
		if ((ret = opt_common(&it, id, val, usage_snapshot, named ? &a->name : NULL)) >= 0)
			return ret;
		if (!range_opt(&a->range, id, val) && id == OPT_JSON)
			a->json = true;
		else if (id == OPT_REPLACE)
			a->replace = true;
	}
	if (named && !a->name)
		return usage_err(cmd, "%s needs the NAME of a snapshot (%s)", cmd,
				 SNAPSHOT_NAME_RULE);
	if ((named && (ret = snapshot_name_check(cmd, "", a->name))) ||
	    (ret = range_check(cmd, &a->range)) || (ret = server_resolve(cmd)))
		return ret;
	return -1;
}

static int snapshot_list(int argc, char **argv)
{
	struct snapshot_args a = {};
	json_t *doc;
	int ret;

	if ((ret = snapshot_args("snapshot list", argc, argv, false, false, &a)) >= 0)
		return ret;
	ret = fetch_json("/api/v1/snapshots", NULL, a.json, &doc);
	if (ret || a.json)
		return ret;
	ret = print_snapshots(doc);
	json_decref(doc);
	return ret;
}

static int snapshot_save(int argc, char **argv)
{
	struct snapshot_args a = {};
	char b[3][TABLE_CELL_SIZE], *query = NULL;
	size_t qsize = 0;
	json_t *doc;
	FILE *q;
	int ret;

	if ((ret = snapshot_args("snapshot save", argc, argv, true, true, &a)) >= 0)
		return ret;
	q = query_begin(&query, &qsize);
	query_add(q, "name", a.name);
	if (a.replace)
		query_add(q, "replace", "1");
	range_query(q, &a.range);
	query_end(q);
	ret = request_json("POST", "/api/v1/snapshots", query, a.json ? JSON_PRINT : JSON_PARSE,
			   &doc);
	free(query);
	if (ret || a.json)
		return ret;
	printf("saved snapshot %s: %s windows, %s, %s\n", a.name,
	       f_int(doc, "windows", b[0], sizeof(b[0])), f_range(doc, b[1], sizeof(b[1])),
	       f_bytes(doc, "bytes", b[2], sizeof(b[2])));
	fprintf(stderr, "compare with it: tailprof compare --before snap:%s --after FROM..TO\n",
		a.name);
	json_decref(doc);
	return 0;
}

static int snapshot_rm(int argc, char **argv)
{
	struct snapshot_args a = {};
	json_t *doc;
	char *path;
	int ret;

	if ((ret = snapshot_args("snapshot rm", argc, argv, true, false, &a)) >= 0)
		return ret;
	/* a valid name needs no escaping in a path */
	path = xasprintf("/api/v1/snapshots/%s", a.name);
	ret = request_json("DELETE", path, NULL, a.json ? JSON_PRINT : JSON_PARSE, &doc);
	free(path);
	if (ret || a.json)
		return ret;
	printf("removed snapshot %s\n", a.name);
	json_decref(doc);
	return 0;
}

int cmd_snapshot(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(int argc, char **argv);
	} actions[] = {
	    {"save", snapshot_save},
	    {"list", snapshot_list},
	    {"rm", snapshot_rm},
	};
	const char *a = argc > 1 ? argv[1] : NULL;

	if (a && (!strcmp(a, "--help") || !strcmp(a, "-h") || !strcmp(a, "help"))) {
		usage_snapshot(stdout);
		return 0;
	}
	if (!a)
		return usage_err("snapshot", "snapshot needs an action: save, list or rm");
	for (size_t i = 0; i < ARRAY_SIZE(actions); i++)
		if (!strcmp(a, actions[i].name))
			return actions[i].fn(argc - 1, argv + 1);
	return usage_err("snapshot",
			 "unknown action '%s' for snapshot (allowed: save, list, rm; "
			 "it comes first: tailprof snapshot list --json)",
			 a);
}

void usage_snapshot(FILE *f)
{
	fprintf(f,
		"Usage: tailprof snapshot save NAME [--last DUR | --from TIME [--to TIME]]\n"
		"                              [--replace] [--json]\n"
		"       tailprof snapshot list [--json]\n"
		"       tailprof snapshot rm NAME [--json]\n"
		"\n"
		"Keeps a time range's windows (stage histograms, counters, CPU stacks by\n"
		"function) in tailprofd's state directory under NAME, to compare with after the\n"
		"ring has moved on or the daemon restarted: tailprof compare --before snap:NAME.\n"
		"Needs tailprofd --state-dir; bounded by [snapshots] max_count and max_bytes (a\n"
		"save past them is refused, nothing is evicted).\n"
		"\n"
		"Actions:\n"
		"  save NAME      save the windows of a range as NAME; without --last, --from\n"
		"                 or --to, every closed window the daemon holds\n"
		"  list           name, when saved, range, windows and size of each snapshot\n"
		"  rm NAME        remove snapshot NAME\n"
		"  NAME           " SNAPSHOT_NAME_RULE "\n"
		"\n"
		"Options:\n"
		"  --last DUR     save the last DUR: 500ms, 2s, 10m, 1h\n"
		"  --from TIME    from TIME: RFC 3339 (2026-11-29T21:00:00Z) or Unix seconds\n"
		"  --to TIME      up to TIME (default now)\n"
		"  --replace      save over a snapshot of the same name (else that is refused)\n"
		"  --json         print the API's JSON answer unchanged\n"
		"%s",
		common_help);
}
