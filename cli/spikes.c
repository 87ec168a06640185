// SPDX-License-Identifier: GPL-2.0-only
/* tailprof spikes, explain and mark: the table of p95 spikes, the evidence behind one (causes,
 * figures, slowest requests), and marks posted by people or scripts. */
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common.h"
#include "format.h"
#include "spikes.h"
#include "timeparse.h"

/* Requests explain prints at most (--json has them all). */
#define MAX_REQUEST_ROWS 20

#define SPIKE_ID_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-"
#define SPIKE_ID_RULE  "1-64 characters of A-Z, a-z, 0-9, '.', '_', '-'"

bool spike_id_valid(const char *id)
{
	size_t n = strlen(id);

	return n >= 1 && n <= SPIKE_ID_MAX && strspn(id, SPIKE_ID_CHARS) == n;
}

int spike_id_check(const char *cmd, const char *flag, const char *id)
{
	if (!strcmp(id, "latest") || spike_id_valid(id))
		return 0;
	return usage_err(cmd, "%s%s'%s' is not a spike id (%s; or latest; see tailprof spikes)",
			 flag, *flag ? ": " : "", id, SPIKE_ID_RULE);
}

/* ---- spike fields ---- */

/* o[key] as a number (integer or real), or -1 when it is not one. */
static double j_num(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	return json_is_number(v) ? json_number_value(v) : -1;
}

/* The spike's stage; "-" for a mark of no stage (or none given). */
static const char *spike_stage(const json_t *s)
{
	const char *stage = json_string_value(json_object_get(s, "stage"));

	return stage && *stage ? stage : "-";
}

/* The p95 against the baseline: "41.2ms vs 10.1ms (4.1x)". */
static char *f_p95(const json_t *s, char *buf, size_t size)
{
	long long p95, base;
	char a[32], b[32];

	if (!j_int(s, "p95_ns", &p95)) {
		snprintf(buf, size, "-");
	} else if (!j_int(s, "baseline_p95_ns", &base) || base <= 0) {
		snprintf(buf, size, "%s", fmt_latency(p95, a, sizeof(a)));
	} else {
		snprintf(buf, size, "%s vs %s (%.1fx)", fmt_latency(p95, a, sizeof(a)),
			 fmt_latency(base, b, sizeof(b)), (double)p95 / (double)base);
	}
	return buf;
}

/* The pattern, with its period when periodic: "periodic 8s ±200ms". */
static char *f_pattern(const json_t *s, char *buf, size_t size)
{
	const char *pattern = j_str(s, "pattern");
	char a[32], b[32];
	long long period, spread;

	if (!strcmp(pattern, "periodic") && j_int(s, "period_ns", &period)) {
		if (j_int(s, "period_spread_ns", &spread))
			snprintf(buf, size, "periodic %s ±%s", fmt_latency(period, a, sizeof(a)),
				 fmt_latency(spread, b, sizeof(b)));
		else
			snprintf(buf, size, "periodic %s", fmt_latency(period, a, sizeof(a)));
	} else {
		snprintf(buf, size, "%s", pattern);
	}
	return buf;
}

/* The cause with the largest share (the API sorts them): "runq 62%"; "-" when none. */
static char *f_top_cause(const json_t *s, char *buf, size_t size)
{
	const json_t *c = json_array_get(json_object_get(s, "causes"), 0);
	double share = j_num(c, "share");

	if (!json_is_object(c))
		snprintf(buf, size, "-");
	else if (share >= 0)
		snprintf(buf, size, "%s %.0f%%", j_str(c, "kind"), share * 100);
	else
		snprintf(buf, size, "%s", j_str(c, "kind"));
	return buf;
}

/* The start as the API wrote it, or from start_unix_ns. */
static char *f_start(const json_t *s, char *buf, size_t size)
{
	long long ns;

	if (json_is_string(json_object_get(s, "start")))
		snprintf(buf, size, "%s", j_str(s, "start"));
	else if (j_int(s, "start_unix_ns", &ns) && size >= 32)
		tp_format_rfc3339(ns, buf, size);
	else
		snprintf(buf, size, "-");
	return buf;
}

static bool is_level_shift(const json_t *s)
{
	return !strcmp(j_str(s, "kind"), "level_shift");
}

/* ---- spikes ---- */

enum spike_col {
	SC_MARK,
	SC_ID,
	SC_STAGE,
	SC_START,
	SC_WINDOWS,
	SC_P95,
	SC_PATTERN,
	SC_CAUSE,
	SC_SOURCE,
	SC__COUNT,
};

static const char *const spike_headers[SC__COUNT] = {
    "", "ID", "STAGE", "START", "WINDOWS", "P95 VS BASELINE", "PATTERN", "TOP CAUSE", "SOURCE",
};

static int print_spikes(const json_t *doc)
{
	const json_t *list = json_object_get(doc, "spikes"), *s;
	struct table t = {.cols = SC__COUNT, .headers = spike_headers};
	bool any_open = false, any_shift = false;
	char b[32];
	size_t i;

	if (!json_is_array(list)) {
		p_err("tailprofd's answer to /api/v1/spikes has no \"spikes\" array");
		return 1;
	}
	if (!json_array_size(list)) {
		printf(
		    "no spikes in this range\n"
		    "tailprofd flags a stage's p95 that rises well above its baseline ([spikes] in "
		    "its configuration; stages are [stage NAME] sections).\n"
		    "See each stage's p95 per window with: tailprof stages; mark a moment "
		    "yourself with: tailprof mark\n");
		return 0;
	}
	t.rows = json_array_size(list);
	t.left = ~(1u << SC_WINDOWS);
	if (table__alloc(&t))
		return 1;
	json_array_foreach(list, i, s)
	{
		bool open = json_is_true(json_object_get(s, "open")), shift = is_level_shift(s);

		snprintf(table__cell(&t, i, SC_MARK), TABLE_CELL_SIZE, "%s%s", open ? "*" : "",
			 shift ? "L" : "");
		any_open |= open;
		any_shift |= shift;
		snprintf(table__cell(&t, i, SC_ID), TABLE_CELL_SIZE, "%s", j_str(s, "id"));
		snprintf(table__cell(&t, i, SC_STAGE), TABLE_CELL_SIZE, "%s", spike_stage(s));
		f_start(s, table__cell(&t, i, SC_START), TABLE_CELL_SIZE);
		snprintf(table__cell(&t, i, SC_WINDOWS), TABLE_CELL_SIZE, "%s",
			 f_int(s, "windows", b, sizeof(b)));
		f_p95(s, table__cell(&t, i, SC_P95), TABLE_CELL_SIZE);
		f_pattern(s, table__cell(&t, i, SC_PATTERN), TABLE_CELL_SIZE);
		f_top_cause(s, table__cell(&t, i, SC_CAUSE), TABLE_CELL_SIZE);
		snprintf(table__cell(&t, i, SC_SOURCE), TABLE_CELL_SIZE, "%s", j_str(s, "source"));
	}
	table__print(&t, "");
	if (any_open)
		printf("* open: still going\n");
	if (any_shift)
		printf("L level shift: the p95 moved to a new level and stayed there\n");
	printf("explain one with: tailprof explain ID (or latest)\n");
	return 0;
}

/* A query of GET /api/v1/spikes: stage= and the range; the caller frees it. */
static char *spikes_query(const char *stage, const struct time_range *range)
{
	size_t size = 0;
	char *query = NULL;
	FILE *q = query_begin(&query, &size);

	query_add(q, "stage", stage);
	if (range)
		range_query(q, range);
	query_end(q);
	return query;
}

/* Whether s is valid UTF-8 (what JSON strings take). */
static bool utf8_valid(const char *s)
{
	json_t *j = json_string(s);

	json_decref(j);
	return j != NULL;
}

int spike_resolve(const char *id, const char *stage, char *out)
{
	const json_t *list, *s, *best = NULL;
	long long best_ns = INT64_MIN, ns;
	struct timespec ts;
	long long now;
	char *query;
	json_t *doc;
	size_t i;
	int ret;

	if (strcmp(id, "latest")) {
		snprintf(out, SPIKE_ID_SIZE, "%s", id);
		return 0;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	now = (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
	query = spikes_query(stage, NULL);
	ret = fetch_json("/api/v1/spikes", query, false, &doc);
	free(query);
	if (ret)
		return ret;
	list = json_object_get(doc, "spikes");
	/* oldest first, so the last of the newest start wins a tie; one that has not begun (a mark
	 * of a time to come) is not the latest: tailprofd resolves "latest" the same way */
	json_array_foreach(list, i, s)
	{
		if (!j_int(s, "start_unix_ns", &ns))
			ns = INT64_MIN;
		if (ns > now)
			continue;
		if (!best || ns >= best_ns) {
			best = s;
			best_ns = ns;
		}
	}
	ret = 1;
	if (!json_is_array(list))
		p_err("tailprofd's answer to /api/v1/spikes has no \"spikes\" array");
	else if (!best)
		p_err("no spikes held%s%s, so there is no latest (see tailprof spikes%s%s)",
		      stage ? " of stage " : "", stage ? stage : "", stage ? " --stage " : "",
		      stage ? stage : "");
	else if (!spike_id_valid(j_str(best, "id")))
		p_err("tailprofd's newest spike has no valid id: '%s'", j_str(best, "id"));
	else
		ret = 0;
	if (!ret)
		snprintf(out, SPIKE_ID_SIZE, "%s", j_str(best, "id"));
	json_decref(doc);
	return ret;
}

int cmd_spikes(int argc, char **argv)
{
	static const struct opt opts[] = {
	    {"stage", 0, OPT_STAGE, "a stage name"},
	    {"last", 0, OPT_LAST, DURATION_VALUE},
	    {"from", 0, OPT_FROM, TIME_VALUE},
	    {"to", 0, OPT_TO, TIME_VALUE},
	    {"json", 0, OPT_JSON, NULL},
	    {},
	};
	struct opt_iter it = {.cmd = "spikes", .opts = opts, .argc = argc, .argv = argv, .i = 1};
	struct time_range range = {};
	const char *val, *stage = NULL;
	bool json = false;
	char *query;
	json_t *doc;
	int id, ret;

	while ((id = opt_next(&it, &val)) != OPT_END) {
		if ((ret = opt_common(&it, id, val, usage_spikes, NULL)) >= 0)
			return ret;
		if (range_opt(&range, id, val))
			continue;
		if (id == OPT_JSON)
			json = true;
		else if (id == OPT_STAGE)
			stage = val;
	}
	if ((ret = range_check(it.cmd, &range)) || (ret = server_resolve(it.cmd)))
		return ret;
	query = spikes_query(stage, &range);
	ret = fetch_json("/api/v1/spikes", query, json, &doc);
	free(query);
	if (ret || json)
		return ret;
	ret = print_spikes(doc);
	json_decref(doc);
	return ret;
}

/* ---- explain ---- */

static void print_explain_header(const json_t *s)
{
	const char *summary = json_string_value(json_object_get(s, "summary")),
		   *reason = json_string_value(json_object_get(s, "reason"));
	long long start, end, p95, base, peak, count;
	char b[4][TABLE_CELL_SIZE];

	printf("%s %s: %s%s%s\n", is_level_shift(s) ? "level shift" : "spike", j_str(s, "id"),
	       strcmp(spike_stage(s), "-") ? "stage " : "no stage",
	       strcmp(spike_stage(s), "-") ? spike_stage(s) : "",
	       json_is_true(json_object_get(s, "open")) ? ", still open" : "");
	/* an open episode may have no end yet */
	printf("  %-9s %s to %s", "when:", f_start(s, b[0], TABLE_CELL_SIZE),
	       json_is_string(json_object_get(s, "end"))  ? j_str(s, "end")
	       : json_is_true(json_object_get(s, "open")) ? "now"
							  : "-");
	if (j_int(s, "start_unix_ns", &start) && j_int(s, "end_unix_ns", &end) && end >= start)
		printf(" (%s", tp_format_duration((uint64_t)(end - start), b[1], TABLE_CELL_SIZE));
	else
		printf(" (-");
	printf(", %s windows)\n", f_int(s, "windows", b[2], TABLE_CELL_SIZE));
	printf("  %-9s %s", "p95:", j_int(s, "p95_ns", &p95) ? fmt_latency(p95, b[0], 32) : "-");
	if (j_int(s, "baseline_p95_ns", &base) && base > 0)
		printf(" vs baseline %s", fmt_latency(base, b[1], 32));
	if (j_int(s, "p95_ns", &p95) && j_int(s, "baseline_p95_ns", &base) && base > 0)
		printf(" (%.1fx)", (double)p95 / (double)base);
	if (j_int(s, "peak_p95_ns", &peak))
		printf(", peak %s", fmt_latency(peak, b[1], TABLE_CELL_SIZE));
	if (j_int(s, "request_count", &count))
		printf(", %lld requests", count);
	putchar('\n');
	printf("  %-9s %s\n", "pattern:", f_pattern(s, b[0], TABLE_CELL_SIZE));
	printf("  %-9s %s%s\n", "source:", j_str(s, "source"),
	       json_is_true(json_object_get(s, "pinned")) ? ", pinned (its windows are kept)" : "");
	if (reason && *reason)
		printf("  %-9s %s\n", "reason:", reason);
	if (summary && *summary)
		printf("  %-9s %s\n", "summary:", summary);
}

/* One line a cause: kind, share, its sentence, then its other figures. */
static void print_causes(const json_t *causes)
{
	static const char *const skip[] = {"kind", "share", "summary", NULL};
	const json_t *c;
	size_t i;

	if (!json_array_size(causes)) {
		printf("causes: none found\n");
		return;
	}
	printf("causes, by share:\n");
	json_array_foreach(causes, i, c)
	{
		const char *summary = json_string_value(json_object_get(c, "summary"));
		double share = j_num(c, "share");
		bool figures = json_object_size(c) > 3;

		printf("  %-6s ", j_str(c, "kind"));
		if (share >= 0)
			printf("%3.0f%%", share * 100);
		else
			printf("%4s", "-");
		if (summary && *summary)
			printf("  %s", summary);
		if (figures) {
			printf(summary && *summary ? " (" : "  (");
			figures_put(stdout, c, skip, 1);
			putchar(')');
		}
		putchar('\n');
	}
}

enum req_col {
	RC_ID,
	RC_PID_TID,
	RC_START,
	RC_DURATION,
	RC_CPU,
	RC_RUNQ,
	RC_OFFCPU,
	RC_ACCOUNTING,
	RC_REQUEST_ID,
	RC__COUNT,
};

static const char *const req_headers[RC__COUNT] = {
    "ID", "PID/TID", "START", "DURATION", "CPU", "RUNQ", "OFFCPU", "ACCOUNTING", "REQUEST_ID",
};

static const char *const req_ns_keys[] = {"duration_ns", "cpu_ns", "runq_ns", "offcpu_ns"};

/* The slowest requests, one row each, at most MAX_REQUEST_ROWS, of total slow spans in the
 * spike's windows. Returns 0 or 1. */
static int print_requests(const json_t *reqs, size_t total)
{
	struct table t = {.cols = RC__COUNT, .headers = req_headers};
	size_t i, n = json_array_size(reqs);
	const json_t *r;
	char b[2][32];

	if (!n) {
		printf("slowest requests: none recorded in these windows\n");
		return 0;
	}
	t.rows = n < MAX_REQUEST_ROWS ? n : MAX_REQUEST_ROWS;
	t.left = 1u << RC_ID | 1u << RC_START | 1u << RC_ACCOUNTING | 1u << RC_REQUEST_ID;
	if (table__alloc(&t))
		return 1;
	json_array_foreach(reqs, i, r)
	{
		if (i == t.rows)
			break;
		snprintf(table__cell(&t, i, RC_ID), TABLE_CELL_SIZE, "%s", j_str(r, "id"));
		snprintf(table__cell(&t, i, RC_PID_TID), TABLE_CELL_SIZE, "%s/%s",
			 f_int(r, "pid", b[0], 32), f_int(r, "tid", b[1], 32));
		f_start(r, table__cell(&t, i, RC_START), TABLE_CELL_SIZE);
		for (int c = RC_DURATION; c <= RC_OFFCPU; c++)
			snprintf(table__cell(&t, i, c), TABLE_CELL_SIZE, "%s",
				 f_latency(r, req_ns_keys[c - RC_DURATION], b[0], 32));
		snprintf(table__cell(&t, i, RC_ACCOUNTING), TABLE_CELL_SIZE, "%s",
			 j_str(r, "accounting"));
		snprintf(table__cell(&t, i, RC_REQUEST_ID), TABLE_CELL_SIZE, "%s",
			 *j_str(r, "request_id") ? j_str(r, "request_id") : "-");
	}
	/* spans are the requests slower than the previous window's p95, not every request:
	 * total, the evidence's spike_requests, counts them all (the list stops at 50) */
	printf("slowest requests (%zu of %zu slow spans, over the previous window's p95):\n",
	       t.rows, total > n ? total : n);
	table__print(&t, "  ");
	printf("  accounting: exact, the thread's own scheduler accounting over the request; "
	       "sampled, estimated from samples\n");
	return 0;
}

static int print_explain(const json_t *s)
{
	const json_t *evidence = json_object_get(s, "evidence"),
		     *reqs = json_object_get(s, "requests");
	const char *id = j_str(s, "id"), *req = j_str(json_array_get(reqs, 0), "id");

	print_explain_header(s);
	print_causes(json_object_get(s, "causes"));
	if (json_is_object(evidence) && json_object_size(evidence)) {
		printf("evidence:\n");
		figures_print(evidence, 2);
		if (json_object_get(evidence, "spike_requests"))
			printf(
			    "  (the *_requests figures count the slow requests kept, each window's "
			    "10 slowest\n   over the previous window's p95, not every request)\n");
	}
	if (print_requests(reqs,
			   (size_t)json_integer_value(json_object_get(evidence, "spike_requests"))))
		return 1;
	printf("profiles: tailprof pull --spike %s -o spike.pb.gz --baseline base.pb.gz\n", id);
	if (json_array_size(reqs))
		printf("a request's own: tailprof pull --request %s -o request.pb.gz\n", req);
	return 0;
}

int cmd_explain(int argc, char **argv)
{
	static const struct opt opts[] = {
	    {"stage", 0, OPT_STAGE, "a stage name"},
	    {"json", 0, OPT_JSON, NULL},
	    {},
	};
	struct opt_iter it = {.cmd = "explain", .opts = opts, .argc = argc, .argv = argv, .i = 1};
	const char *val, *stage = NULL, *spike = NULL;
	char sid[SPIKE_ID_SIZE], *path;
	bool json = false;
	json_t *doc;
	int id, ret;

	while ((id = opt_next(&it, &val)) != OPT_END) {
		if ((ret = opt_common(&it, id, val, usage_explain, &spike)) >= 0)
			return ret;
		if (id == OPT_JSON)
			json = true;
		else if (id == OPT_STAGE)
			stage = val;
	}
	if (!spike)
		return usage_err(it.cmd, "explain needs a spike: an id (see tailprof spikes) or "
					 "latest");
	if ((ret = spike_id_check(it.cmd, "", spike)))
		return ret;
	if (stage && strcmp(spike, "latest"))
		return usage_err(it.cmd,
				 "--stage goes with latest (the newest spike of that "
				 "stage); spike %s is one spike already",
				 spike);
	if ((ret = server_resolve(it.cmd)) || (ret = spike_resolve(spike, stage, sid)))
		return ret;
	path = xasprintf("/api/v1/spikes/%s", sid);
	ret = fetch_json(path, NULL, json, &doc);
	free(path);
	if (ret || json)
		return ret;
	ret = print_explain(doc);
	json_decref(doc);
	return ret;
}

/* ---- mark ---- */

/* The body of POST /api/v1/marks; the caller frees it. */
static char *mark_body(int64_t time_ns, const char *stage, const char *reason, const char *before,
		       const char *after)
{
	json_t *o = json_object();
	char t[32], *body;

	if (!o)
		OOM_ABORT();
	json_object_set_new(o, "time", json_string(tp_format_rfc3339(time_ns, t, sizeof(t))));
	json_object_set_new(o, "reason", json_string(reason ? reason : ""));
	if (stage)
		json_object_set_new(o, "stage", json_string(stage));
	if (before)
		json_object_set_new(o, "before", json_string(before));
	if (after)
		json_object_set_new(o, "after", json_string(after));
	body = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (!body)
		OOM_ABORT();
	return body;
}

/* Checks a --before/--after duration (zero allowed: no window on that side). Returns 0 or 2. */
static int mark_duration_check(const char *flag, const char *val)
{
	uint64_t ns;

	if (val && tp_parse_duration(val, &ns))
		return usage_err("mark", "%s: '%s' is not a duration (use e.g. %s)", flag, val,
				 DURATION_FORMS);
	return 0;
}

int cmd_mark(int argc, char **argv)
{
	static const struct opt opts[] = {
	    {"stage", 0, OPT_STAGE, "a stage name"},
	    {"reason", 0, OPT_REASON, "a text saying why"},
	    {"time", 0, OPT_TIME, TIME_VALUE},
	    {"before", 0, OPT_BEFORE, DURATION_VALUE},
	    {"after", 0, OPT_AFTER, DURATION_VALUE},
	    {"json", 0, OPT_JSON, NULL},
	    {},
	};
	struct opt_iter it = {.cmd = "mark", .opts = opts, .argc = argc, .argv = argv, .i = 1};
	const char *val, *stage = NULL, *reason = NULL, *time_s = NULL, *before = NULL,
			 *after = NULL, *mid;
	struct http_resp r = {};
	struct timespec now;
	bool json = false;
	int64_t time_ns;
	json_t *doc;
	char *body;
	int id, ret;

	while ((id = opt_next(&it, &val)) != OPT_END) {
		if ((ret = opt_common(&it, id, val, usage_mark, NULL)) >= 0)
			return ret;
		switch (id) {
		case OPT_STAGE:
			stage = val;
			break;
		case OPT_REASON:
			if (!utf8_valid(val))
				return usage_err(
				    it.cmd, "--reason: not valid UTF-8; give the text in UTF-8");
			reason = val;
			break;
		case OPT_TIME:
			time_s = val;
			break;
		case OPT_BEFORE:
			before = val;
			break;
		case OPT_AFTER:
			after = val;
			break;
		case OPT_JSON:
			json = true;
			break;
		}
	}
	if (time_s && tp_parse_time(time_s, &time_ns))
		return usage_err(it.cmd, "--time: '%s' is not a time (use %s)", time_s, TIME_FORMS);
	if ((ret = mark_duration_check("--before", before)) ||
	    (ret = mark_duration_check("--after", after)) || (ret = server_resolve(it.cmd)))
		return ret;
	if (!time_s) {
		clock_gettime(CLOCK_REALTIME, &now);
		time_ns = (int64_t)now.tv_sec * (int64_t)NSEC_PER_SEC + now.tv_nsec;
	}
	body = mark_body(time_ns, stage, reason, before, after);
	ret = http_post_json("/api/v1/marks", body, &r);
	free(body);
	if (ret || check_status(&r)) {
		if (!ret && r.status == 503)
			p_err(
			    "tailprofd takes marks at a limited rate; try again in a few seconds");
		http_resp__free(&r);
		return 1;
	}
	if (json) {
		if (r.len && fwrite(r.body, 1, r.len, stdout) != r.len)
			ret = 1; /* reported once, by the final flush in main() */
		http_resp__free(&r);
		return ret;
	}
	doc = json_loadb(r.body ? r.body : "", r.len, 0, NULL);
	mid = json_string_value(json_object_get(doc, "id"));
	if (mid) {
		printf("%s\n", mid);
		fprintf(stderr,
			"marked; once its windows have closed: tailprof explain %s, "
			"tailprof pull --spike %s -o spike.pb.gz --baseline base.pb.gz\n",
			mid, mid);
	} else {
		p_err("tailprofd accepted the mark but sent no \"id\"");
		ret = 1;
	}
	json_decref(doc);
	http_resp__free(&r);
	return ret;
}

/* ---- usage ---- */

void usage_spikes(FILE *f)
{
	fprintf(f,
		"Usage: tailprof spikes [--stage NAME] [--last DUR | --from TIME [--to TIME]] "
		"[--json]\n"
		"\n"
		"Lists the p95 spikes tailprofd holds (all of them without a range), oldest\n"
		"first: id, stage, start, windows, p95 against the baseline, pattern (periodic\n"
		"with its period and spread, random, unknown), the cause with the largest\n"
		"share, and where it came from (detected, mark, alertmanager). '*' marks an\n"
		"open episode, 'L' a level shift.\n"
		"\n"
		"Options:\n"
		"  --stage NAME   only the spikes of stage NAME\n"
		"  --last DUR     the spikes of the last DUR: 500ms, 2s, 10m, 1h\n"
		"  --from TIME    from TIME: RFC 3339 (2026-11-29T21:00:00Z) or Unix seconds\n"
		"  --to TIME      up to TIME (default now)\n"
		"  --json         print the API's JSON (GET /api/v1/spikes) unchanged\n"
		"%s",
		common_help);
}

void usage_explain(FILE *f)
{
	fprintf(f,
		"Usage: tailprof explain ID|latest [--stage NAME] [--json]\n"
		"\n"
		"Shows why a spike happened: when, its windows, p95 against the baseline, the\n"
		"pattern and source; one line per cause (run-queue waits, off-CPU time, CPU,\n"
		"GC) with its share and figures; the evidence; and the slowest requests with\n"
		"their CPU, run-queue and off-CPU time and how they were accounted.\n"
		"\n"
		"Arguments:\n"
		"  ID             a spike id from tailprof spikes (" SPIKE_ID_RULE ")\n"
		"  latest         the newest spike\n"
		"\n"
		"Options:\n"
		"  --stage NAME   with latest: the newest spike of stage NAME\n"
		"  --json         print the API's JSON (GET /api/v1/spikes/ID) unchanged\n"
		"%s",
		common_help);
}

void usage_mark(FILE *f)
{
	fprintf(f,
		"Usage: tailprof mark [--stage NAME] [--reason TEXT] [--time TIME]\n"
		"                     [--before DUR] [--after DUR] [--json]\n"
		"\n"
		"Marks a moment as a spike (POST /api/v1/marks): tailprofd keeps the windows\n"
		"around it and explains them as it does a detected spike. Prints the spike's id.\n"
		"\n"
		"Options:\n"
		"  --stage NAME   the stage it concerns (default: none)\n"
		"  --reason TEXT  why, for whoever reads it later\n"
		"  --time TIME    when: RFC 3339 (2026-11-29T21:00:00Z) or Unix seconds\n"
		"                 (default now)\n"
		"  --before DUR   keep DUR before it: 500ms, 2s, 10m, 1h (default one window)\n"
		"  --after DUR    keep DUR after it (default one window)\n"
		"  --json         print the API's JSON answer unchanged\n"
		"%s",
		common_help);
}
