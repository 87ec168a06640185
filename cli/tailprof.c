// SPDX-License-Identifier: GPL-2.0-only
/* tailprof: the command-line client of tailprofd, a thin HTTP client (libcurl + jansson): the
 * status, windows, gc and stages subcommands, help, and the table of subcommands. The shared
 * client layer is common.c; pull is pull.c; spikes, explain and mark are spikes.c; compare is
 * compare.c (and profile_diff.c); snapshot is snapshot.c. */
#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "compare.h"
#include "pull.h"
#include "snapshot.h"
#include "spikes.h"
#include "tailprof_config.h"
#include "timeparse.h"

/* ---- subcommands ---- */

static void usage_top(FILE *f);
static void usage_status(FILE *f);
static void usage_windows(FILE *f);
static void usage_gc(FILE *f);
static void usage_stages(FILE *f);

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

/* "probe" or "probes", as o's probes_attached counts them. */
static const char *probes(const json_t *o)
{
	long long n;

	return j_int(o, "probes_attached", &n) && n == 1 ? "probe" : "probes";
}

/* The GC lines of the status: on or off, runtimes seen, each object's state and how it is
 * probed (usdt, uprobe; "-" when not, or from a daemon that does not say), and each unsupported
 * object's reason. */
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
	printf("  %-11s %s %s attached\n", "gc:", f_int(gc, "probes_attached", b, sizeof(b)),
	       probes(gc));
	json_array_foreach(objs, i, o)
	{
		const char *reason = json_string_value(json_object_get(o, "reason")),
			   *method = j_str(o, "method");

		if (!strcmp(method, "none"))
			method = "-";
		printf("  %-11s %-6s %-11s %-6s %s processes  %s%s%s\n", "", j_str(o, "runtime"),
		       j_str(o, "state"), method, f_int(o, "processes", b, sizeof(b)),
		       j_str(o, "path"), reason ? ": " : "", reason ? reason : "");
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
		if ((ret = opt_common(&it, id, val, usage_status, NULL)) >= 0)
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
	printf("  %-11s %s Hz on %s CPUs, %s %s attached\n",
	       "sampling:", f_int(st, "frequency_hz", b[0], 32), f_int(st, "cpus_online", b[1], 32),
	       f_int(st, "probes_attached", b[2], 32), probes(st));
	printf("  %-11s %s of %s (%s each, %s retention)\n",
	       "windows:", f_int(st, "windows", b[0], 32), f_int(st, "max_windows", b[1], 32),
	       f_dur(st, "window_ns", b[2], 32), f_dur(st, "retention_ns", b[3], 32));
	printf("  %-11s %s (idle %s, expected %s)\n", "samples:", f_int(st, "samples", b[0], 32),
	       f_int(st, "idle_samples", b[1], 32), f_int(st, "expected_samples", b[2], 32));
	printf("  %-11s %s\n", "drops:", f_int(st, "drops", b[0], 32));
	printf("  %-11s %s\n", "objects:", f_int(st, "objects", b[0], 32));
	printf("  %-11s %s\n", "processes:", f_int(st, "processes", b[0], 32));
	if (json_is_true(json_object_get(st, "sched")))
		printf("  %-11s %s blocks of %s or more with their stacks, %s run-queue waits\n"
		       "  %-11s (blocks timed by the %s clock, user stacks taken via %s)\n",
		       "off-CPU:", f_int(st, "offcpu_samples", b[0], 32),
		       f_dur(st, "offcpu_min_ns", b[1], 32), f_int(st, "runq_count", b[2], 32), "",
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
		if ((ret = opt_common(&it, id, val, usage_windows, NULL)) >= 0)
			return ret;
		if (range_opt(&range, id, val))
			continue;
		if (id == OPT_JSON)
			json = true;
	}
	if ((ret = range_check(it.cmd, &range)) || (ret = server_resolve(it.cmd)))
		return ret;
	q = query_begin(&query, &qsize);
	range_query(q, &range);
	query_end(q);
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
		if ((ret = opt_common(&it, id, val, usage_gc, NULL)) >= 0)
			return ret;
		if (range_opt(&range, id, val))
			continue;
		if (id == OPT_JSON)
			json = true;
	}
	if ((ret = range_check(it.cmd, &range)) || (ret = server_resolve(it.cmd)))
		return ret;
	q = query_begin(&query, &qsize);
	range_query(q, &range);
	query_end(q);
	ret = fetch_json("/api/v1/gc", query, json, &doc);
	free(query);
	if (ret || json)
		return ret;
	ret = print_gc(doc);
	json_decref(doc);
	return ret;
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
	printf("percentiles from log-linear buckets, within 1.6%%; a row of under 20 requests is "
	       "marked (low sample)\n");
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
		if ((ret = opt_common(&it, id, val, usage_stages, NULL)) >= 0)
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
	q = query_begin(&query, &qsize);
	range_query(q, &range);
	query_end(q);
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
    {"pull", cmd_pull, usage_pull,
     "write a pprof profile of a time range, a spike or a request to a file"},
    {"gc", cmd_gc, usage_gc, "list the GC pauses of a time range (JVM, CPython, Go)"},
    {"stages", cmd_stages, usage_stages, "show per-stage latency percentiles per window"},
    {"spikes", cmd_spikes, usage_spikes, "list the p95 spikes and level shifts of the stages"},
    {"explain", cmd_explain, usage_explain, "show why a spike happened: causes and requests"},
    {"mark", cmd_mark, usage_mark, "mark a moment as a spike, to keep and explain its windows"},
    {"compare", cmd_compare, usage_compare,
     "compare two ranges or snapshots: what moved, by how much, what regressed"},
    {"snapshot", cmd_snapshot, usage_snapshot,
     "save, list or remove named snapshots of windows, to compare with later"},
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

static void usage_top(FILE *f)
{
	fprintf(f, "Usage: tailprof [--server URL|unix:PATH] SUBCOMMAND [OPTIONS]\n"
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
		"the current one, still filling, is marked with '*'.\n"
		"\n"
		"Columns:\n"
		"  SAMPLES    CPU samples of running threads\n"
		"  IDLE       samples that found a CPU idle\n"
		"  EXPECTED   what the frequency gives over the CPUs' sampled time: SAMPLES +\n"
		"             IDLE well below it means samples were lost\n"
		"  DROPS      losses and failures counted (a full ring buffer, a failed stack\n"
		"             read: the sample kept); --json names each\n"
		"  STACKS     distinct stacks\n"
		"  PROCS      distinct processes\n"
		"  OFFCPU     blocked time captured with stacks\n"
		"  RUNQ_P99   the run-queue latency's p99 ('-': no scheduler programs)\n"
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
	server_free();
	return ret;
}
