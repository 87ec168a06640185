// SPDX-License-Identifier: GPL-2.0-only
/* tailprof pull: a pprof profile of a time range, of a spike's windows (and of its baseline
 * windows, for go tool pprof -diff_base) or of one request, each file written whole or not at
 * all (common.c's profile_file). */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "pull.h"
#include "spikes.h"
#include "timeparse.h"

struct pull_args {
	const char *type; /* NULL: not given */
	struct time_range range;
	const char *pid, *comm, *container, *stage, *out;
	const char *spike, *request, *baseline;
};

/* name as one shell word, for a command line to copy: quoted when it has to be. The caller
 * frees it. */
static char *shell_word(const char *name)
{
	size_t size = 0;
	char *s = NULL;
	FILE *f;

	if (*name && strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
				  "._/+-=:,@%") == strlen(name))
		return xasprintf("%s", name);
	f = open_memstream(&s, &size);
	if (!f)
		OOM_ABORT();
	fputc('\'', f);
	for (const char *p = name; *p; p++)
		fputs(*p == '\'' ? "'\\''" : (char[2]){*p, 0}, f);
	fputc('\'', f);
	if (fclose(f))
		OOM_ABORT();
	return s;
}

/* Fetches query into out and, when base_query is set, base_query into base_out; puts both in
 * place only once both are whole, so a failure leaves neither. *samples (NULL: not wanted) gets
 * the first file's samples (-1: not said). Returns 0 or 1. */
static int pull_files(const char *query, const char *out, const char *what, const char *base_query,
		      const char *base_out, const char *base_what, long long *samples)
{
	struct profile_file pf[2] = {};
	int n = base_query ? 2 : 1, ret = 1;

	if (profile_file__open(&pf[0], out, what) ||
	    (n == 2 && profile_file__open(&pf[1], base_out, base_what)))
		goto out;
	if (profile_file__fetch(&pf[0], query) ||
	    (n == 2 && profile_file__fetch(&pf[1], base_query)))
		goto out;
	for (int i = 0; i < n; i++)
		if (profile_file__commit(&pf[i]))
			goto out;
	for (int i = 0; i < n; i++)
		profile_file__summary(&pf[i]);
	if (samples)
		*samples = profile_file__samples(&pf[0]);
	ret = 0;
out:
	for (int i = 0; i < n; i++)
		profile_file__close(&pf[i]);
	return ret;
}

/* Prints " FLAG VALUE" on stderr, the value as one shell word with control characters shown as
 * '?' (it is echoed to a terminal). */
static void put_arg(const char *flag, const char *value)
{
	char *w = shell_word(value);

	for (char *c = w; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	fprintf(stderr, " %s %s", flag, w);
	free(w);
}

/* After a filtered range profile came back empty: what to check. A hint, not an error: no
 * sample in a range is an answer (an idle process, say). */
static void empty_hint(const struct pull_args *a)
{
	const char *flags[] = {"--pid", "--comm", "--container", "--stage"},
		   *values[] = {a->pid, a->comm, a->container, a->stage};

	fprintf(stderr, "tailprof pull: no sample in that range matched");
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		if (values[i])
			put_arg(flags[i], values[i]);
	if (a->comm || a->pid)
		fprintf(stderr,
			". Check the %s with `ps -eo pid,comm`, or widen the range (this one:",
			a->comm ? "name" : "pid");
	else
		fprintf(stderr, ". Try a wider range (this one:");
	if (a->range.last)
		put_arg("--last", a->range.last);
	if (a->range.from)
		put_arg("--from", a->range.from);
	if (a->range.to)
		put_arg("--to", a->range.to);
	fprintf(stderr, ").\n");
}

/* The profile of a time range, as pull has always written it. */
static int pull_range(struct pull_args *a)
{
	long long samples = -1;
	size_t qsize = 0;
	char *query = NULL;
	FILE *q;
	int ret;

	if (!range_given(&a->range))
		a->range.last = "5m";
	q = query_begin(&query, &qsize);
	query_add(q, "type", a->type ? a->type : "cpu");
	range_query(q, &a->range);
	query_add(q, "pid", a->pid);
	query_add(q, "comm", a->comm);
	query_add(q, "container", a->container);
	query_add(q, "stage", a->stage);
	query_end(q);
	ret = pull_files(query, a->out, NULL, NULL, NULL, NULL, &samples);
	free(query);
	if (!ret && !samples && (a->pid || a->comm || a->container || a->stage))
		empty_hint(a);
	return ret;
}

/* The profile of a spike's windows, and with --baseline of its baseline windows; then how to
 * look at them. */
static int pull_spike(const struct pull_args *a)
{
	char id[SPIKE_ID_SIZE], *query = NULL, *base_query = NULL, *what, *base_what;
	size_t qsize = 0, bsize = 0;
	FILE *q;
	int ret;

	if (spike_resolve(a->spike, a->stage, id))
		return 1;
	q = query_begin(&query, &qsize);
	query_add(q, "spike", id);
	query_add(q, "type", a->type ? a->type : "cpu");
	query_add(q, "stage", a->stage);
	query_end(q);
	if (a->baseline) {
		q = query_begin(&base_query, &bsize);
		fprintf(q, "%s&baseline=1", query);
		query_end(q);
	}
	what = xasprintf("spike %s", id);
	base_what = xasprintf("baseline of spike %s", id);
	ret = pull_files(query, a->out, what, base_query, a->baseline, base_what, NULL);
	if (!ret && strcmp(a->out, "-")) {
		char *spike_w = shell_word(a->out),
		     *base_w = a->baseline ? shell_word(a->baseline) : NULL;

		if (base_w)
			fprintf(stderr, "compare: go tool pprof -top -diff_base %s %s\n", base_w,
				spike_w);
		else
			fprintf(
			    stderr,
			    "look: go tool pprof -top %s (add --baseline FILE to compare with the "
			    "ordinary windows)\n",
			    spike_w);
		free(spike_w);
		free(base_w);
	}
	free(what);
	free(base_what);
	free(query);
	free(base_query);
	return ret;
}

/* The profile of one request (span). */
static int pull_request(const struct pull_args *a)
{
	size_t qsize = 0;
	char *query = NULL, *what;
	FILE *q;
	int ret;

	q = query_begin(&query, &qsize);
	query_add(q, "request", a->request);
	query_add(q, "type", a->type); /* not given: the server's default */
	query_end(q);
	what = xasprintf("request %s", a->request);
	ret = pull_files(query, a->out, what, NULL, NULL, NULL, NULL);
	free(what);
	free(query);
	return ret;
}

/* The checks of flags that only go with some others. Returns 0 or 2. */
static int pull_check(const char *cmd, const struct pull_args *a)
{
	const char *which = a->spike ? "--spike" : "--request";
	uint64_t pid_v;
	int ret;

	if (a->type && (ret = profile_type_check(cmd, a->type)))
		return ret;
	if (a->pid && tp_parse_uint(a->pid, 1, INT32_MAX, &pid_v))
		return usage_err(cmd, "--pid: '%s' is not a process ID (a positive integer)",
				 a->pid);
	if (a->spike && a->request)
		return usage_err(cmd, "--spike and --request cannot be combined (pull one profile "
				      "at a time)");
	if ((a->spike || a->request) && range_given(&a->range))
		return usage_err(cmd,
				 "%s cannot be combined with --last/--from/--to (the %s has "
				 "its own time span)",
				 which, a->spike ? "spike" : "request");
	if ((a->spike || a->request) && (a->pid || a->comm || a->container))
		return usage_err(
		    cmd,
		    "%s cannot be combined with --pid/--comm/--container (they filter a "
		    "time range)",
		    which);
	if (a->request && a->stage)
		return usage_err(cmd, "--request cannot be combined with --stage (a request's "
				      "profile is its own)");
	if (a->baseline && !a->spike)
		return usage_err(cmd, "--baseline goes with --spike (it pulls the spike's "
				      "baseline windows)");
	if (!a->out)
		return usage_err(cmd, "pull needs -o FILE (use -o - for stdout)");
	if (a->spike && (ret = spike_id_check(cmd, "--spike", a->spike)))
		return ret;
	if (a->request && !spike_id_valid(a->request))
		return usage_err(cmd,
				 "--request: '%s' is not a request id (1-64 characters of "
				 "A-Z, a-z, 0-9, '.', '_', '-'; see tailprof explain)",
				 a->request);
	if (a->baseline && !strcmp(a->baseline, "-"))
		return usage_err(cmd, "--baseline needs a file name, not - (only -o can be "
				      "stdout)");
	if (a->baseline && !strcmp(a->baseline, a->out))
		return usage_err(cmd, "--baseline and -o name the same file '%s'; give two",
				 a->out);
	return range_check(cmd, &a->range);
}

int cmd_pull(int argc, char **argv)
{
	static const struct opt opts[] = {
	    {"type", 0, OPT_TYPE, "a profile type: cpu, offcpu or wall"},
	    {"last", 0, OPT_LAST, DURATION_VALUE},
	    {"from", 0, OPT_FROM, TIME_VALUE},
	    {"to", 0, OPT_TO, TIME_VALUE},
	    {"pid", 0, OPT_PID, "a process ID"},
	    {"comm", 0, OPT_COMM, "a command name"},
	    {"container", 0, OPT_CONTAINER, "a container ID (64 hex digits, or its first 12+)"},
	    {"stage", 0, OPT_STAGE, "a stage name"},
	    {"output", 'o', OPT_OUTPUT, "a file name, or - for stdout"},
	    {"spike", 0, OPT_SPIKE, "a spike id, or latest"},
	    {"request", 0, OPT_REQUEST, "a request (span) id"},
	    {"baseline", 0, OPT_BASELINE, "a file name for the baseline profile"},
	    {},
	};
	struct opt_iter it = {.cmd = "pull", .opts = opts, .argc = argc, .argv = argv, .i = 1};
	struct pull_args a = {};
	const char *val;
	int id, ret;

	while ((id = opt_next(&it, &val)) != OPT_END) {
		if ((ret = opt_common(&it, id, val, usage_pull, NULL)) >= 0)
			return ret;
		if (range_opt(&a.range, id, val))
			continue;
		switch (id) {
		case OPT_TYPE:
			a.type = val;
			break;
		case OPT_PID:
			a.pid = val;
			break;
		case OPT_COMM:
			a.comm = val;
			break;
		case OPT_CONTAINER:
			a.container = val;
			break;
		case OPT_STAGE:
			a.stage = val;
			break;
		case OPT_OUTPUT:
			a.out = val;
			break;
		case OPT_SPIKE:
			a.spike = val;
			break;
		case OPT_REQUEST:
			a.request = val;
			break;
		case OPT_BASELINE:
			a.baseline = val;
			break;
		}
	}
	if ((ret = pull_check(it.cmd, &a)) || (ret = server_resolve(it.cmd)))
		return ret;
	if (a.spike)
		return pull_spike(&a);
	if (a.request)
		return pull_request(&a);
	return pull_range(&a);
}

void usage_pull(FILE *f)
{
	fprintf(f,
		"Usage: tailprof pull [--type TYPE] [--last DUR | --from TIME [--to TIME]]\n"
		"                     [--pid PID] [--comm NAME] [--container ID] [--stage NAME]\n"
		"                     -o FILE\n"
		"       tailprof pull --spike ID|latest [--stage NAME] [--type TYPE] -o FILE\n"
		"                     [--baseline FILE]\n"
		"       tailprof pull --request ID [--type TYPE] -o FILE\n"
		"\n"
		"Writes a gzip-compressed pprof profile of a time range, of a spike's windows or\n"
		"of one request, for go tool pprof, speedscope, Pyroscope or Parca. Files are\n"
		"written whole or not at all; a summary line per file goes to stderr, and a hint\n"
		"when --pid, --comm, --container or --stage matched no sample (exit status 0).\n"
		"\n"
		"Options:\n"
		"  --type TYPE    cpu (the default: where CPU time went), offcpu (where threads\n"
		"                 blocked, and for how long) or wall (both, per thread)\n"
		"  --last DUR     the last DUR: 500ms, 2s, 10m, 1h (default 5m)\n"
		"  --from TIME    from TIME: RFC 3339 (2026-11-29T21:00:00Z) or Unix seconds\n"
		"  --to TIME      up to TIME (default now)\n"
		"  --pid PID      only this process\n"
		"  --comm NAME    only processes with this name (comm: the kernel's, at most 15\n"
		"                 bytes, as ps -o comm shows it)\n"
		"  --container ID only processes of this container (its ID or first 12+ hex\n"
		"                 digits, as docker ps or crictl ps show it)\n"
		"  --stage NAME   only samples taken while the thread was in stage NAME; with\n"
		"                 --spike latest, also the newest spike of that stage\n"
		"  -o, --output FILE\n"
		"                 where to write the profile; - for stdout\n"
		"  --spike ID     the windows of spike ID (see tailprof spikes), or of the newest\n"
		"                 spike: latest; not with --last/--from/--to, --pid, --comm,\n"
		"                 --container\n"
		"  --baseline FILE\n"
		"                 with --spike: also write the spike's baseline windows to FILE,\n"
		"                 for go tool pprof -top -diff_base FILE SPIKEFILE\n"
		"  --request ID   one request's own profile (ids: tailprof explain SPIKE)\n"
		"%s",
		common_help);
}
