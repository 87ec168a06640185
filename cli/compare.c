// SPDX-License-Identifier: GPL-2.0-only
/* tailprof compare: two sides (a range of windows or a snapshot each) compared by tailprofd (GET
 * /api/v1/compare, docs/compare.md) and printed as benchstat prints benchmarks: the conditions,
 * what regressed, then per stage, the totals and the functions, each metric as before ± spread,
 * after ± spread, change [interval], verdict; and the regression gate for CI. With
 * --before-profile/--after-profile, two pprof files instead (profile_diff.c). */
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "compare.h"
#include "format.h"
#include "profile_diff.h"
#include "snapshot.h"
#include "timeparse.h"

#define DEFAULT_TOP 20
#define MAX_TOP	    100000

struct compare_args {
	const char *before, *after; /* sides as given: FROM..TO or snap:NAME */
	const char *stage, *min_effect, *alpha, *seed;
	const char *fail_on; /* --fail-on-regression PCT as given */
	const char *before_profile, *after_profile, *top;
	bool json, gate_functions;
};

/* A side of the comparison, parsed. */
struct side {
	const char *snapshot; /* snap:NAME: NAME; else NULL */
	char *from, *to;      /* FROM..TO: the two times as given */
};

/* A stage's metrics in the order the table shows them; the gate reads the first four. */
static const char *const stage_metrics[] = {"p50", "p95", "p99", "mean", "rate", "cpu"};
#define GATED_STAGE_METRICS 4

/* The report's totals: the key of the metric, or of the object holding it and its key there. */
static const struct total {
	const char *label, *key, *sub;
} totals[] = {
    {"cpu", "cpu", NULL},	 {"offcpu", "offcpu", NULL}, {"runq", "runq", NULL},
    {"gc total", "gc", "total"}, {"gc max", "gc", "max"},    {"drops", "drops", NULL},
};

/* ---- metrics ---- */

enum mkey {
	MK_BEFORE,
	MK_AFTER,
	MK_DIFF,
	MK_LOW,
	MK_HIGH,
	MK_BEFORE_SPREAD,
	MK_AFTER_SPREAD,
	MK__COUNT,
};

static const char *const mkey_names[MK__COUNT] = {
    "before", "after", "diff", "ci_low", "ci_high", "before_spread", "after_spread",
};

/* A metric object of the report: durations with _ns keys, other quantities with a unit. */
struct metric {
	const json_t *j; /* NULL: the report has none */
	bool ns;
	const char *unit; /* "" for durations or when missing */
	bool has[MK__COUNT];
	double v[MK__COUNT];
	const char *verdict; /* "-" when missing */
};

static void metric_read(const json_t *j, struct metric *m)
{
	char key[32];

	memset(m, 0, sizeof(*m));
	m->j = json_is_object(j) ? j : NULL;
	m->ns = json_object_get(j, "before_ns") || json_object_get(j, "after_ns") ||
		json_object_get(j, "diff_ns");
	for (int k = 0; k < MK__COUNT; k++) {
		const json_t *x;

		snprintf(key, sizeof(key), "%s%s", mkey_names[k], m->ns ? "_ns" : "");
		x = json_object_get(j, key);
		m->has[k] = json_is_number(x);
		m->v[k] = m->has[k] ? json_number_value(x) : 0;
	}
	m->unit = json_string_value(json_object_get(j, "unit"));
	if (!m->unit || m->ns)
		m->unit = "";
	m->verdict = j_str(j, "verdict");
}

static bool is_share(const struct metric *m)
{
	return !strcmp(m->unit, "share");
}

static double absd(double x)
{
	return x < 0 ? -x : x;
}

/* x with 3 significant digits (more before the point when it takes them), then suffix; sign: a
 * '+' before positive values. Returns buf. */
static const char *fmt_sig3(double x, bool sign, const char *suffix, char *buf, size_t size)
{
	double a = absd(x);
	int decimals = a < 9.995 ? 2 : a < 99.95 ? 1 : 0;

	if (x == 0)
		decimals = 0;
	snprintf(buf, size, sign ? "%+.*f%s" : "%.*f%s", decimals, x, suffix);
	return buf;
}

/* ns as a duration with 3 significant digits: 812ns, 31.5µs, 4.16ms, 1.20s; then suffix. */
static const char *fmt_dur3(double ns, bool sign, const char *suffix, char *buf, size_t size)
{
	static const struct {
		double ns;
		const char *unit;
	} units[] = {{1, "ns"}, {1e3, "µs"}, {1e6, "ms"}, {1e9, "s"}};
	char unit[16];
	size_t u = 0;

	while (u + 1 < ARRAY_SIZE(units) && absd(ns) / units[u].ns >= 999.5)
		u++;
	snprintf(unit, sizeof(unit), "%s%s", units[u].unit, suffix);
	if (!u) {
		snprintf(buf, size, sign ? "%+.0f%s" : "%.0f%s", ns, unit);
		return buf;
	}
	return fmt_sig3(ns / units[u].ns, sign, unit, buf, size);
}

/* v, a value of m, in m's unit: durations, time per second, shares in percent, rates. */
static const char *fmt_value(const struct metric *m, double v, bool sign, char *buf, size_t size)
{
	char suffix[40];

	if (m->ns)
		return fmt_dur3(v, sign, "", buf, size);
	if (!strcmp(m->unit, "ns/s"))
		return fmt_dur3(v, sign, "/s", buf, size);
	if (is_share(m))
		return fmt_sig3(v * 100, sign, sign ? "pp" : "%", buf, size);
	if (!strcmp(m->unit, "1/s") || !strcmp(m->unit, "samples/s"))
		return fmt_sig3(v, sign, "/s", buf, size);
	snprintf(suffix, sizeof(suffix), "%s%s", *m->unit ? " " : "", m->unit);
	return fmt_sig3(v, sign, suffix, buf, size);
}

/* A side's cell: "4.16ms ± 2%" (the spread relative to the value; absolute when it is 0). */
static void cell_side(const struct metric *m, int which, char *cell, size_t size)
{
	int spread = which == MK_BEFORE ? MK_BEFORE_SPREAD : MK_AFTER_SPREAD;
	double v = m->v[which], s = m->v[spread];
	char a[40], b[40];

	if (!m->has[which]) {
		snprintf(cell, size, "-");
	} else if (!m->has[spread] || is_share(m)) {
		snprintf(cell, size, "%s", fmt_value(m, v, false, a, sizeof(a)));
	} else if (v != 0 || s == 0) {
		s = v != 0 ? absd(s / v) * 100 : 0;
		snprintf(cell, size, "%s ± %.*f%%", fmt_value(m, v, false, a, sizeof(a)),
			 s < 1 && s > 0 ? 1 : 0, s);
	} else {
		snprintf(cell, size, "%s ± %s", fmt_value(m, v, false, a, sizeof(a)),
			 fmt_value(m, s, false, b, sizeof(b)));
	}
}

/* The change: "+8.0% [+5.1%, +11.0%]" of the before value; in points for shares, absolute when
 * before is 0; "~" when inconclusive (benchstat's mark), "-" when missing. */
static void cell_change(const struct metric *m, char *cell, size_t size)
{
	double base = absd(m->v[MK_BEFORE]);
	bool pct = !is_share(m) && m->has[MK_BEFORE] && base != 0;
	char d[3][40];

	if (!m->j || !strcmp(m->verdict, "inconclusive")) {
		snprintf(cell, size, "%s", m->j ? "~" : "-");
		return;
	}
	for (int k = MK_DIFF; k <= MK_HIGH; k++) {
		if (!m->has[k])
			snprintf(d[k - MK_DIFF], sizeof(d[0]), "-");
		else if (pct)
			snprintf(d[k - MK_DIFF], sizeof(d[0]), "%+.1f%%", m->v[k] / base * 100);
		else
			fmt_value(m, m->v[k], true, d[k - MK_DIFF], sizeof(d[0]));
	}
	if (m->has[MK_LOW] || m->has[MK_HIGH])
		snprintf(cell, size, "%s [%s, %s]", d[0], d[1], d[2]);
	else
		snprintf(cell, size, "%s", d[0]);
}

/* The verdict and what backs it: "regressed (p=0.003 n=30+30)", "inconclusive (needs 40
 * windows a side; p=0.210 n=12+12)", "inconclusive (fewer than 6 windows on a side; p=... n=...)"
 * (a reason, when there is one, stands for the windows needed). */
static void cell_verdict(const struct metric *m, char *cell, size_t size)
{
	const char *reason = json_string_value(json_object_get(m->j, "reason"));
	const json_t *p = json_object_get(m->j, "p_value");
	long long needed, nb, na;
	size_t n;

	if (!m->j) {
		snprintf(cell, size, "-");
		return;
	}
	n = snprintf(cell, size, "%s (", m->verdict);
	if (reason && *reason && n < size)
		n += snprintf(cell + n, size - n, "%s; ", reason);
	/* a reason says what is missing already ("fewer than 6 windows with values on a side") */
	if (!(reason && *reason) && j_int(m->j, "windows_needed", &needed) && n < size)
		n += snprintf(cell + n, size - n, "needs %lld windows a side; ", needed);
	if (json_is_number(p) && n < size)
		n += snprintf(cell + n, size - n,
			      json_number_value(p) < 0.001 ? "p<0.001 " : "p=%.3f ",
			      json_number_value(p));
	if (j_int(m->j, "n_before", &nb) && j_int(m->j, "n_after", &na) && n < size)
		n += snprintf(cell + n, size - n, "n=%lld+%lld ", nb, na);
	if (n >= size)
		return; /* cut: the table shows what fits */
	/* close the parentheses over the last separator, or drop them when nothing came */
	while (n && (cell[n - 1] == ' ' || cell[n - 1] == ';'))
		cell[--n] = '\0';
	if (cell[n - 1] == '(')
		cell[n - 2] = '\0';
	else
		snprintf(cell + n, size - n, ")");
}

/* ---- the report as tables ---- */

enum metric_col {
	MC_GROUP, /* the stage, on its first row */
	MC_NAME,
	MC_BEFORE,
	MC_AFTER,
	MC_CHANGE,
	MC_VERDICT,
	MC__COUNT,
};

/* Fills row of t with the metric j (NULL: every cell "-"), under group and name. */
static void metric_row(struct table *t, size_t row, const char *group, const char *name,
		       const json_t *j)
{
	struct metric m;

	metric_read(j, &m);
	snprintf(table__cell(t, row, MC_GROUP), TABLE_CELL_SIZE, "%s", group);
	snprintf(table__cell(t, row, MC_NAME), TABLE_CELL_SIZE, "%s", name);
	cell_side(&m, MK_BEFORE, table__cell(t, row, MC_BEFORE), TABLE_CELL_SIZE);
	cell_side(&m, MK_AFTER, table__cell(t, row, MC_AFTER), TABLE_CELL_SIZE);
	cell_change(&m, table__cell(t, row, MC_CHANGE), TABLE_CELL_SIZE);
	cell_verdict(&m, table__cell(t, row, MC_VERDICT), TABLE_CELL_SIZE);
}

/* A metric table of rows rows, with headers (MC__COUNT of them). Returns 0 or 1. */
static int metric_table(struct table *t, size_t rows, const char *const *headers)
{
	*t = (struct table){.rows = rows, .cols = MC__COUNT, .headers = headers};
	t->left = 1u << MC_GROUP | 1u << MC_NAME | 1u << MC_CHANGE | 1u << MC_VERDICT;
	return table__alloc(t);
}

/* The total tot of the report; NULL when it has none. */
static const json_t *total_get(const json_t *doc, const struct total *tot)
{
	const json_t *j = json_object_get(doc, tot->key);

	return tot->sub ? json_object_get(j, tot->sub) : j;
}

/*
 * The metric a path of "regressions" names ("stages.NAME.METRIC", "functions.NAME", "cpu",
 * "gc.total", ...), and its label in label; NULL when the report holds no such metric. Stage and
 * function names may hold dots: a stage's metric is after the last one.
 */
static const json_t *regression_get(const json_t *doc, const char *path, char *label, size_t size)
{
	const json_t *list, *x;
	const char *rest, *dot;
	char name[TABLE_CELL_SIZE];
	size_t i;

	snprintf(label, size, "%s", path);
	if (!strncmp(path, "stages.", strlen("stages."))) {
		rest = path + strlen("stages.");
		dot = strrchr(rest, '.');
		list = json_object_get(doc, "stages");
		json_array_foreach(list, i, x)
		{
			const char *stage = j_str(x, "stage");

			if (!dot || strlen(stage) != (size_t)(dot - rest) ||
			    strncmp(stage, rest, dot - rest))
				continue;
			snprintf(label, size, "%s %s", stage, dot + 1);
			return json_object_get(x, dot + 1);
		}
		return NULL;
	}
	if (!strncmp(path, "functions.", strlen("functions."))) {
		rest = path + strlen("functions.");
		list = json_object_get(doc, "functions");
		json_array_foreach(list, i, x)
		{
			if (strcmp(j_str(x, "function"), rest))
				continue;
			snprintf(label, size, "function %s",
				 text_cut(rest, MAX_NAME_CHARS, name, sizeof(name)));
			return x;
		}
		return NULL;
	}
	for (i = 0; i < ARRAY_SIZE(totals); i++) {
		char key[32];

		snprintf(key, sizeof(key), "%s%s%s", totals[i].key, totals[i].sub ? "." : "",
			 totals[i].sub ? totals[i].sub : "");
		if (strcmp(key, path))
			continue;
		snprintf(label, size, "%s", totals[i].label);
		return total_get(doc, &totals[i]);
	}
	return NULL;
}

/* What regressed, resolved to rows, before anything else: a regression is news even when the
 * target improved. Nothing when the report names none. */
static int print_regressions(const json_t *doc)
{
	static const char *const headers[MC__COUNT] = {"",	"REGRESSED", "BEFORE",
						       "AFTER", "CHANGE",    "VERDICT"};
	const json_t *list = json_object_get(doc, "regressions"), *x;
	char label[TABLE_CELL_SIZE];
	struct table t;
	size_t i, row = 0;

	if (!json_array_size(list))
		return 0;
	if (metric_table(&t, json_array_size(list), headers))
		return 1;
	json_array_foreach(list, i, x)
	{
		const json_t *m;

		if (!json_is_string(x))
			continue;
		m = regression_get(doc, json_string_value(x), label, sizeof(label));
		metric_row(&t, row++, "", label, m);
	}
	t.rows = row;
	printf("regressions (%zu):\n", row);
	table__print(&t, "  ");
	putchar('\n');
	return 0;
}

static int print_stages(const json_t *doc)
{
	static const char *const headers[MC__COUNT] = {"STAGE", "METRIC", "BEFORE",
						       "AFTER", "CHANGE", "VERDICT"};
	const json_t *list = json_object_get(doc, "stages"), *s;
	size_t i, n = json_array_size(list), row = 0;
	struct table t;

	if (!n) {
		printf("no stages in the report (stages are [stage NAME] sections in tailprofd's "
		       "configuration)\n\n");
		return 0;
	}
	/* the stages' rows with an empty one between two stages */
	if (metric_table(&t, n * (ARRAY_SIZE(stage_metrics) + 1) - 1, headers))
		return 1;
	json_array_foreach(list, i, s)
	{
		if (i)
			row++;
		for (size_t k = 0; k < ARRAY_SIZE(stage_metrics); k++)
			metric_row(&t, row++, k ? "" : j_str(s, "stage"), stage_metrics[k],
				   json_object_get(s, stage_metrics[k]));
	}
	table__print(&t, "");
	putchar('\n');
	return 0;
}

static int print_totals(const json_t *doc)
{
	static const char *const headers[MC__COUNT] = {"",	"TOTAL",  "BEFORE",
						       "AFTER", "CHANGE", "VERDICT"};
	struct table t;

	if (metric_table(&t, ARRAY_SIZE(totals), headers))
		return 1;
	for (size_t i = 0; i < ARRAY_SIZE(totals); i++)
		metric_row(&t, i, "", totals[i].label, total_get(doc, &totals[i]));
	table__print(&t, "");
	printf(
	    "cpu: CPU samples per second, every process; offcpu: off-CPU time captured per "
	    "second;\nrunq: run-queue latency p99; gc: pause time per second, the longest pause; "
	    "drops: lost per second\n\n");
	return 0;
}

enum function_col {
	FC_NAME,
	FC_SHARE,
	FC_CHANGE,
	FC_VERDICT,
	FC__COUNT,
};

static int print_functions(const json_t *doc)
{
	static const char *const headers[FC__COUNT] = {"FUNCTION", "SHARE BEFORE → AFTER", "CHANGE",
						       "VERDICT"};
	const json_t *list = json_object_get(doc, "functions"), *f;
	struct table t = {.rows = json_array_size(list),
			  .cols = FC__COUNT,
			  .headers = headers,
			  .left = 1u << FC_NAME | 1u << FC_CHANGE | 1u << FC_VERDICT};
	char a[40], b[40];
	size_t i;

	if (!t.rows)
		return 0;
	if (table__alloc(&t))
		return 1;
	json_array_foreach(list, i, f)
	{
		struct metric m;

		metric_read(f, &m);
		text_cut(j_str(f, "function"), MAX_NAME_CHARS, table__cell(&t, i, FC_NAME),
			 TABLE_CELL_SIZE);
		cell_side(&m, MK_BEFORE, a, sizeof(a));
		cell_side(&m, MK_AFTER, b, sizeof(b));
		snprintf(table__cell(&t, i, FC_SHARE), TABLE_CELL_SIZE, "%s → %s", a, b);
		cell_change(&m, table__cell(&t, i, FC_CHANGE), TABLE_CELL_SIZE);
		cell_verdict(&m, table__cell(&t, i, FC_VERDICT), TABLE_CELL_SIZE);
	}
	table__print(&t, "");
	printf("functions by leaf frame (pprof's flat): share of CPU samples; change in percentage "
	       "points (pp)\n\n");
	return 0;
}

/* ---- conditions ---- */

/* o[key], a number, as %g in buf; "-" when it is none. */
static const char *f_num(const json_t *o, const char *key, double scale, char *buf, size_t size)
{
	const json_t *x = json_object_get(o, key);

	if (!json_is_number(x))
		return "-";
	snprintf(buf, size, "%g", json_number_value(x) * scale);
	return buf;
}

/* A side's end: s[key] as the server wrote it, or s[key_unix_ns] as RFC 3339; "-" when absent.
 * buf needs 32 bytes. */
static const char *side_time(const json_t *s, const char *key, char *buf, size_t size)
{
	char k[32];
	long long ns;

	if (json_is_string(json_object_get(s, key)))
		return j_str(s, key);
	snprintf(k, sizeof(k), "%s_unix_ns", key);
	if (!j_int(s, k, &ns) || ns < 0)
		return "-";
	return tp_format_rfc3339(ns, buf, size);
}

static void print_side(const char *label, const json_t *s)
{
	const char *snap = json_string_value(json_object_get(s, "snapshot"));
	char from[32], to[32], b[4][32];
	bool is_snap = snap && *snap;

	printf("%-8s %s%s%s%s to %s: %s windows of %s, %s requests\n", label,
	       is_snap ? "snapshot " : "", is_snap ? snap : "", is_snap ? ", " : "",
	       side_time(s, "from", from, sizeof(from)), side_time(s, "to", to, sizeof(to)),
	       f_int(s, "windows", b[0], 32), f_dur(s, "window_ns", b[1], 32),
	       f_int(s, "requests", b[2], 32));
	printf("%-8s %s Hz, host %s, kernel %s, tailprofd %s\n", "",
	       f_int(s, "frequency_hz", b[3], 32), j_str(s, "host"), j_str(s, "kernel"),
	       j_str(s, "version"));
}

static void print_conditions(const json_t *c)
{
	const json_t *method = json_object_get(c, "method"), *notes = json_object_get(c, "notes"),
		     *note, *blocks;
	const char *load = json_string_value(json_object_get(c, "load_note")),
		   *test = json_string_value(json_object_get(method, "test"));
	char b[8][32];
	size_t i;

	print_side("before:", json_object_get(c, "before"));
	print_side("after:", json_object_get(c, "after"));
	if (load && *load)
		printf("%-8s %s\n", "load:", load);
	else if (json_is_true(json_object_get(c, "load_differs")))
		printf("%-8s the request rates of the sides differ by more than 10%%\n", "load:");
	json_array_foreach(notes, i, note) if (json_is_string(note))
	    printf("%-8s %s\n", "note:", json_string_value(note));
	/* block_windows: one length, or one a side ({"before", "after"}) */
	blocks = json_object_get(method, "block_windows");
	if (json_is_object(blocks))
		snprintf(b[1], 32, "%s+%s", f_int(blocks, "before", b[6], 16),
			 f_int(blocks, "after", b[7], 16));
	else
		f_int(method, "block_windows", b[1], 32);
	printf("%-8s %s cluster-bootstrap resamples of windows in blocks of %s, seed %s%s%s\n",
	       "method:", f_int(method, "resamples", b[0], 32), b[1],
	       f_int(method, "seed", b[2], 32), test ? "; " : "", test ? test : "");
	printf("%-8s %s%% intervals, alpha %s (false discovery rate), minimum effect %s%%\n", "",
	       f_num(method, "confidence", 100, b[3], 32), f_num(method, "alpha", 1, b[4], 32),
	       f_num(method, "min_effect_pct", 1, b[5], 32));
	putchar('\n');
}

/* The whole report: conditions, regressions first, stages, totals, functions. Returns 0 or 1. */
static int print_report(const json_t *doc)
{
	print_conditions(json_object_get(doc, "conditions"));
	if (print_regressions(doc) || print_stages(doc) || print_totals(doc) ||
	    print_functions(doc))
		return 1;
	printf("±: the half-width of each side's own interval, relative to its value; change: "
	       "after against\nbefore, with its interval; ~: inconclusive, so no change is "
	       "shown\n");
	return 0;
}

/* ---- the gate ---- */

/* Whether the metric j (labelled label) trips --fail-on-regression pct: regressed by more than
 * pct percent of its before value (any regression when that is 0 or missing); says so on stderr. */
static bool gate_metric(const char *label, const json_t *j, double pct)
{
	char change[TABLE_CELL_SIZE], a[TABLE_CELL_SIZE], b[TABLE_CELL_SIZE];
	struct metric m;

	metric_read(j, &m);
	if (strcmp(m.verdict, "regressed"))
		return false;
	if (m.has[MK_BEFORE] && m.has[MK_DIFF] && m.v[MK_BEFORE] != 0 &&
	    absd(m.v[MK_DIFF]) <= pct / 100 * absd(m.v[MK_BEFORE]))
		return false;
	cell_change(&m, change, sizeof(change));
	cell_side(&m, MK_BEFORE, a, sizeof(a));
	cell_side(&m, MK_AFTER, b, sizeof(b));
	p_err("regression gate: %s regressed by %s (%s → %s), over --fail-on-regression %g%%",
	      label, change, a, b, pct);
	return true;
}

/* Returns 1 when a stage's p50, p95, p99 or mean, a total or (with functions) a function's
 * share trips the gate, after naming each on stderr; else 0. */
static int gate(const json_t *doc, double pct, bool functions)
{
	const json_t *list = json_object_get(doc, "stages"), *x;
	char label[TABLE_CELL_SIZE];
	bool tripped = false;
	size_t i;

	json_array_foreach(list, i, x)
	{
		for (size_t k = 0; k < GATED_STAGE_METRICS; k++) {
			snprintf(label, sizeof(label), "stage %s %s", j_str(x, "stage"),
				 stage_metrics[k]);
			tripped |= gate_metric(label, json_object_get(x, stage_metrics[k]), pct);
		}
	}
	for (i = 0; i < ARRAY_SIZE(totals); i++)
		tripped |= gate_metric(totals[i].label, total_get(doc, &totals[i]), pct);
	list = json_object_get(doc, "functions");
	json_array_foreach(list, i, x)
	{
		if (!functions)
			break;
		snprintf(label, sizeof(label), "function %s", j_str(x, "function"));
		tripped |= gate_metric(label, x, pct);
	}
	return tripped ? 1 : 0;
}

/* ---- options ---- */

/* Parses a side given to flag (--before, --after): FROM..TO (times as --from/--to take them) or
 * snap:NAME. Returns 0, or 2 after a usage error. */
static int side_parse(const char *flag, const char *val, struct side *s)
{
	const char *dots = strstr(val, "..");
	int64_t from_ns, to_ns;
	char what[32];

	if (!strncmp(val, "snap:", strlen("snap:"))) {
		s->snapshot = val + strlen("snap:");
		snprintf(what, sizeof(what), "%s: ", flag);
		return snapshot_name_check("compare", what, s->snapshot);
	}
	if (!dots)
		return usage_err("compare",
				 "%s: '%s' is neither a range FROM..TO nor snap:NAME (times: %s)",
				 flag, val, TIME_FORMS);
	s->from = strndup(val, dots - val);
	s->to = strdup(dots + 2);
	if (!s->from || !s->to)
		OOM_ABORT();
	if (!*s->from || !*s->to)
		return usage_err("compare", "%s: '%s' needs both ends: FROM..TO", flag, val);
	if (tp_parse_time(s->from, &from_ns))
		return usage_err("compare", "%s: FROM '%s' is not a time (use %s)", flag, s->from,
				 TIME_FORMS);
	if (tp_parse_time(s->to, &to_ns))
		return usage_err("compare", "%s: TO '%s' is not a time (use %s)", flag, s->to,
				 TIME_FORMS);
	if (from_ns >= to_ns)
		return usage_err("compare", "%s: FROM (%s) must be before TO (%s)", flag, s->from,
				 s->to);
	return 0;
}

/* Whether s is a plain decimal number >= 0: digits with at most one '.' (no sign, exponent,
 * inf or nan), its value in *v. */
static bool decimal_parse(const char *s, double *v)
{
	size_t digits = strspn(s, "0123456789."), dots = 0;

	for (const char *p = s; *p; p++)
		dots += *p == '.';
	if (!*s || digits != strlen(s) || dots > 1 || !strcmp(s, "."))
		return false;
	*v = strtod(s, NULL);
	return true;
}

/* Checks the options that go together and the values the server would refuse. Returns 0 or 2. */
static int compare_check(const struct compare_args *a, double *fail_pct, size_t *top)
{
	bool profiles = a->before_profile || a->after_profile;
	uint64_t u;
	double v;

	if (profiles && (a->before || a->after))
		return usage_err("compare", "--before-profile/--after-profile cannot be combined "
					    "with --before/--after (compare files or windows)");
	if (profiles && (!a->before_profile || !a->after_profile))
		return usage_err("compare", "--%s-profile needs --%s-profile too",
				 a->before_profile ? "before" : "after",
				 a->before_profile ? "after" : "before");
	if (profiles &&
	    (a->stage || a->min_effect || a->alpha || a->seed || a->fail_on || a->gate_functions))
		return usage_err("compare",
				 "--stage, --min-effect, --alpha, --seed, "
				 "--fail-on-regression and --gate-functions need windows "
				 "(--before/--after), not profiles: one profile a side has "
				 "no spread");
	if (!profiles && (!a->before || !a->after))
		return usage_err("compare", "compare needs --before and --after (FROM..TO or "
					    "snap:NAME), or --before-profile and --after-profile");
	if (!profiles && a->top)
		return usage_err("compare", "--top goes with --before-profile/--after-profile "
					    "(tailprofd picks the functions of a report)");
	if (a->gate_functions && !a->fail_on)
		return usage_err("compare", "--gate-functions goes with --fail-on-regression PCT");
	if (a->fail_on && !decimal_parse(a->fail_on, fail_pct))
		return usage_err("compare",
				 "--fail-on-regression: '%s' is not a percentage (a number >= "
				 "0, such as 5 or 2.5)",
				 a->fail_on);
	/* the ranges tailprofd takes (http_compare.c) */
	if (a->min_effect && (!decimal_parse(a->min_effect, &v) || v > 100))
		return usage_err("compare",
				 "--min-effect: '%s' is not a percentage from 0 to 100 (such as 2 "
				 "or 0.5)",
				 a->min_effect);
	if (a->alpha && (!decimal_parse(a->alpha, &v) || v <= 0 || v > 0.5))
		return usage_err("compare",
				 "--alpha: '%s' is not a false discovery rate (a number above 0 "
				 "and at most 0.5, such as 0.05)",
				 a->alpha);
	if (a->seed && tp_parse_uint(a->seed, 0, INT64_MAX, &u))
		return usage_err("compare",
				 "--seed: '%s' is not a seed (an integer from 0 to "
				 "9223372036854775807)",
				 a->seed);
	*top = DEFAULT_TOP;
	if (a->top && tp_parse_uint(a->top, 1, MAX_TOP, &u))
		return usage_err("compare", "--top: '%s' is not a count of functions (1 to %d)",
				 a->top, MAX_TOP);
	if (a->top)
		*top = u;
	return 0;
}

/* The query of GET /api/v1/compare; the caller frees it. */
static char *compare_query(const struct compare_args *a, const struct side *before,
			   const struct side *after)
{
	const struct side *sides[2] = {before, after};
	static const char *const keys[2][3] = {
	    {"before_snapshot", "before_from", "before_to"},
	    {"after_snapshot", "after_from", "after_to"},
	};
	size_t size = 0;
	char *query = NULL;
	FILE *q = query_begin(&query, &size);

	/* the times as given: tailprofd parses them as it parses from= and to= */
	for (int i = 0; i < 2; i++) {
		query_add(q, keys[i][0], sides[i]->snapshot);
		query_add(q, keys[i][1], sides[i]->from);
		query_add(q, keys[i][2], sides[i]->to);
	}
	query_add(q, "stage", a->stage);
	query_add(q, "min_effect", a->min_effect);
	query_add(q, "alpha", a->alpha);
	query_add(q, "seed", a->seed);
	query_end(q);
	return query;
}

/* Asks tailprofd for the report and prints it (or its JSON), then applies the gate. */
static int compare_windows(const struct compare_args *a, double fail_pct)
{
	struct side before = {}, after = {};
	enum json_use use = JSON_PARSE;
	char *query = NULL;
	json_t *doc = NULL;
	int ret;

	if ((ret = side_parse("--before", a->before, &before)) ||
	    (ret = side_parse("--after", a->after, &after)) || (ret = server_resolve("compare")))
		goto out;
	query = compare_query(a, &before, &after);
	if (a->json)
		use = a->fail_on ? JSON_BOTH : JSON_PRINT;
	ret = request_json("GET", "/api/v1/compare", query, use, &doc);
	if (ret || use == JSON_PRINT)
		goto out;
	if (!a->json)
		ret = print_report(doc);
	/* stdout first: the gate's lines on stderr come after the report they refer to */
	fflush(stdout);
	if (!ret && a->fail_on)
		ret = gate(doc, fail_pct, a->gate_functions);
out:
	json_decref(doc);
	free(query);
	free(before.from);
	free(before.to);
	free(after.from);
	free(after.to);
	return ret;
}

int cmd_compare(int argc, char **argv)
{
	static const struct opt opts[] = {
	    {"before", 0, OPT_BEFORE, "a range FROM..TO or snap:NAME"},
	    {"after", 0, OPT_AFTER, "a range FROM..TO or snap:NAME"},
	    {"stage", 0, OPT_STAGE, "a stage name"},
	    {"json", 0, OPT_JSON, NULL},
	    {"fail-on-regression", 0, OPT_FAIL_ON_REGRESSION, "a percentage such as 5"},
	    {"min-effect", 0, OPT_MIN_EFFECT, "a percentage such as 2"},
	    {"gate-functions", 0, OPT_GATE_FUNCTIONS, NULL},
	    {"alpha", 0, OPT_ALPHA, "a false discovery rate such as 0.05"},
	    {"seed", 0, OPT_SEED, "an integer"},
	    {"before-profile", 0, OPT_BEFORE_PROFILE, "a pprof file"},
	    {"after-profile", 0, OPT_AFTER_PROFILE, "a pprof file"},
	    {"top", 0, OPT_TOP, "a count of functions"},
	    {},
	};
	struct opt_iter it = {.cmd = "compare", .opts = opts, .argc = argc, .argv = argv, .i = 1};
	struct compare_args a = {};
	const char **slot[OPT__COUNT] = {
	    [OPT_BEFORE] = &a.before,
	    [OPT_AFTER] = &a.after,
	    [OPT_STAGE] = &a.stage,
	    [OPT_FAIL_ON_REGRESSION] = &a.fail_on,
	    [OPT_MIN_EFFECT] = &a.min_effect,
	    [OPT_ALPHA] = &a.alpha,
	    [OPT_SEED] = &a.seed,
	    [OPT_BEFORE_PROFILE] = &a.before_profile,
	    [OPT_AFTER_PROFILE] = &a.after_profile,
	    [OPT_TOP] = &a.top,
	};
	double fail_pct = 0;
	const char *val;
	size_t top = DEFAULT_TOP;
	int id, ret;

	while ((id = opt_next(&it, &val)) != OPT_END) {
		if ((ret = opt_common(&it, id, val, usage_compare, NULL)) >= 0)
			return ret;
		if (id == OPT_JSON)
			a.json = true;
		else if (id == OPT_GATE_FUNCTIONS)
			a.gate_functions = true;
		else if (id > 0 && id < OPT__COUNT && slot[id])
			*slot[id] = val;
	}
	if ((ret = compare_check(&a, &fail_pct, &top)))
		return ret;
	if (a.before_profile)
		return profile_diff(a.before_profile, a.after_profile, top, a.json);
	return compare_windows(&a, fail_pct);
}

void usage_compare(FILE *f)
{
	fprintf(f,
		"Usage: tailprof compare --before FROM..TO|snap:NAME --after FROM..TO|snap:NAME\n"
		"                        [--stage NAME] [--json] [--fail-on-regression PCT\n"
		"                        [--gate-functions]] [--min-effect PCT] [--alpha A]\n"
		"                        [--seed N]\n"
		"       tailprof compare --before-profile FILE --after-profile FILE [--top N]\n"
		"                        [--json]\n"
		"\n"
		"Did a change move p95, by how much, with what uncertainty, and did anything else\n"
		"get worse? tailprofd compares two sides window by window (a block bootstrap) and\n"
		"this prints the conditions of both, what regressed first, then per stage p50,\n"
		"p95, p99, mean, request rate and CPU per request, the totals (CPU, off-CPU,\n"
		"run-queue p99, GC, drops) and the functions whose share of CPU changed most:\n"
		"before ± spread, after ± spread, the change with its interval, and a verdict\n"
		"(improved, regressed, unchanged; inconclusive, marked ~, with the windows a side\n"
		"that would likely settle it). See docs/compare.md.\n"
		"\n"
		"Options:\n"
		"  --before FROM..TO|snap:NAME\n"
		"                 the windows wholly inside FROM..TO (RFC 3339 such as\n"
		"                 2026-11-29T21:00:00Z, or Unix seconds), or a snapshot (see\n"
		"                 tailprof snapshot)\n"
		"  --after FROM..TO|snap:NAME\n"
		"                 the other side, the same way\n"
		"  --stage NAME   only stage NAME (the totals and functions stay)\n"
		"  --json         print the API's JSON (GET /api/v1/compare) unchanged\n"
		"  --fail-on-regression PCT\n"
		"                 exit 1 when a stage's p50, p95, p99 or mean, or a total,\n"
		"                 regressed by more than PCT%% of its before value (any\n"
		"                 regression when that is 0), naming each on stderr; for CI\n"
		"  --gate-functions\n"
		"                 with --fail-on-regression: function shares count too\n"
		"  --min-effect PCT\n"
		"                 changes smaller than PCT%% are unchanged (default 2)\n"
		"  --alpha A      the false discovery rate over all metrics (default 0.05)\n"
		"  --seed N       the bootstrap's seed (default 1: the same report every time)\n"
		"  --before-profile FILE, --after-profile FILE\n"
		"                 compare two pprof files (gzip'd or not) here, without\n"
		"                 tailprofd: each leaf function's share of the first sample\n"
		"                 type; one profile a side has no spread, so no intervals and\n"
		"                 no verdicts\n"
		"  --top N        with profiles: the N functions that changed most (default %d)\n"
		"%s"
		"\n"
		"Exit status: 0; 1 when --fail-on-regression trips, the daemon cannot be reached\n"
		"or refuses, or a profile cannot be read; 2 for usage errors.\n",
		DEFAULT_TOP, common_help);
}
