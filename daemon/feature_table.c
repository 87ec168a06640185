// SPDX-License-Identifier: GPL-2.0-only
/* The features table, the test switch that forces capabilities off, and its JSON, Prometheus,
 * log and --check views. */
#include "feature_table.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "utf8.h"

struct features {
	struct feature v[FEATURE_NR];
	unsigned forced;      /* bit id: forced off by a test switch */
	bool by_sched_return; /* task_work forced by TAILPROF_SCHED_RETURN=sys_exit */
};

static const char *const names[FEATURE_NR] = {
    [FEATURE_CPU_SAMPLING] = "cpu_sampling",
    [FEATURE_EH_FRAME] = "eh_frame_unwinding",
    [FEATURE_OFFCPU] = "offcpu",
    [FEATURE_RUNQ] = "runq_latency",
    [FEATURE_TASK_WORK] = "task_work",
    [FEATURE_STAGES] = "stages",
    [FEATURE_USDT_SEMAPHORES] = "usdt_semaphores",
    [FEATURE_GC] = "gc",
    [FEATURE_BPF_STATS] = "bpf_stats",
    [FEATURE_REQUEST_ACCT] = "request_accounting",
    [FEATURE_PYTHON_FRAMES] = "python_frames",
    [FEATURE_MMAP_RECORDS] = "mmap_records",
};

/* What the test switch may force off: the rest have no fallback to test (cpu_sampling is
 * required; usdt_semaphores is the kernel's own, nothing here to turn off). */
#define FORCEABLE                                                                                  \
	((1u << FEATURE_EH_FRAME) | (1u << FEATURE_OFFCPU) | (1u << FEATURE_RUNQ) |                \
	 (1u << FEATURE_TASK_WORK) | (1u << FEATURE_STAGES) | (1u << FEATURE_GC) |                 \
	 (1u << FEATURE_BPF_STATS) | (1u << FEATURE_REQUEST_ACCT) |                                \
	 (1u << FEATURE_PYTHON_FRAMES) | (1u << FEATURE_MMAP_RECORDS))

struct features *features__new(void)
{
	struct features *f = calloc(1, sizeof(*f));

	if (!f)
		abort();
	for (int i = 0; i < FEATURE_NR; i++) {
		f->v[i].name = names[i];
		strcpy(f->v[i].reason, "not probed");
	}
	return f;
}

void features__free(struct features *f)
{
	if (!f)
		return;
	for (int i = 0; i < FEATURE_NR; i++)
		free(f->v[i].log);
	free(f);
}

int features__parse_off(struct features *f, const char *off, const char *sched_return, char *err,
			size_t len)
{
	const char *p = off ? off : "";

	while (*p) {
		size_t n = strcspn(p, ",");
		int id = -1;

		for (int i = 0; n && i < FEATURE_NR; i++)
			if ((FORCEABLE & (1u << i)) && strlen(names[i]) == n &&
			    !strncmp(p, names[i], n))
				id = i;
		if (n && id < 0) {
			snprintf(
			    err, len,
			    "TAILPROF_FEATURES_OFF: '%.*s%s' cannot be forced off; give a "
			    "comma-separated list of eh_frame_unwinding, offcpu, runq_latency, "
			    "task_work, stages, gc, bpf_stats, request_accounting, python_frames, "
			    "mmap_records",
			    (int)utf8_cut(p, n, 64), p, n > 64 ? "..." : "");
			return -EINVAL;
		}
		if (id >= 0)
			f->forced |= 1u << id;
		p += n + (p[n] == ',');
	}
	/* one object serves both: neither loads without the other */
	if (f->forced & ((1u << FEATURE_OFFCPU) | (1u << FEATURE_RUNQ)))
		f->forced |= (1u << FEATURE_OFFCPU) | (1u << FEATURE_RUNQ);
	if (sched_return && *sched_return) {
		if (strcmp(sched_return, "sys_exit")) {
			snprintf(
			    err, len,
			    "TAILPROF_SCHED_RETURN: '%.*s%s' is not allowed; the only value is "
			    "sys_exit (tests; the same as TAILPROF_FEATURES_OFF=task_work)",
			    (int)utf8_cut(sched_return, strlen(sched_return), 64), sched_return,
			    strlen(sched_return) > 64 ? "..." : "");
			return -EINVAL;
		}
		if (!(f->forced & (1u << FEATURE_TASK_WORK)))
			f->by_sched_return = true;
		f->forced |= 1u << FEATURE_TASK_WORK;
	}
	return 0;
}

bool features__forced_off(const struct features *f, enum feature_id id)
{
	return f && (f->forced & (1u << id));
}

const char *features__forced_reason(const struct features *f, enum feature_id id)
{
	if (id == FEATURE_TASK_WORK && f && f->by_sched_return)
		return "forced off by TAILPROF_SCHED_RETURN=sys_exit (tests)";
	return FEATURE_FORCED_OFF;
}

void features__set(struct features *f, enum feature_id id, bool enabled, const char *variant,
		   const char *reason, ...)
{
	struct feature *ft;
	va_list ap;

	if (!f)
		return;
	ft = &f->v[id];
	ft->enabled = enabled;
	ft->quiet = false;
	snprintf(ft->variant, sizeof(ft->variant), "%s", variant ? variant : "");
	ft->reason[0] = 0;
	if (reason) {
		va_start(ap, reason);
		vsnprintf(ft->reason, sizeof(ft->reason), reason, ap);
		va_end(ap);
	}
}

void features__set_quiet(struct features *f, enum feature_id id)
{
	if (f)
		f->v[id].quiet = true;
}

/* Appends src to the n bytes of dst (size bytes) as far as it fits, NUL-terminated. Returns the
 * new length. */
static size_t append(char *dst, size_t size, size_t n, const char *src)
{
	size_t m = strlen(src);

	if (m > size - 1 - n)
		m = size - 1 - n;
	memcpy(dst + n, src, m);
	dst[n + m] = '\0';
	return n + m;
}

/* How a load failure's program is named in a joined record. */
static const char *program_label(const char *program)
{
	return *program ? program : "no program named";
}

void features__set_load_failure(struct features *f, enum feature_id id, const char *object,
				const char *program, bool verifier, const char *log)
{
	struct feature *ft;

	if (!f)
		return;
	ft = &f->v[id];
	object = object ? object : "";
	program = program ? program : "";
	/* another program of the same object (its name compared as far as the field keeps it) */
	if (ft->failures && !strcmp(ft->object, object) &&
	    strncmp(ft->last_program, program, sizeof(ft->last_program) - 1)) {
		size_t n = strlen(ft->program);
		char *joined = NULL;

		/* each log under its program's name, "(no log)" for one without; the first one's
		 * name goes in front of its log now that a second comes */
		if (asprintf(&joined, "%s%s%s%s%s\n[%s]%s%s", ft->failures == 1 ? "[" : "",
			     ft->failures == 1 ? program_label(ft->last_program) : "",
			     ft->failures == 1 ? "]" : "",
			     ft->failures == 1 ? (ft->log ? "\n" : " (no log)") : "",
			     ft->log ? ft->log : "", program_label(program),
			     log ? "\n" : " (no log)", log ? log : "") < 0)
			abort();
		free(ft->log);
		ft->log = joined;
		ft->verifier = ft->verifier && verifier;
		/* "FIRST, then SECOND", cut to fit */
		if (ft->failures == 1)
			n = append(ft->program, sizeof(ft->program), 0,
				   program_label(ft->last_program));
		n = append(ft->program, sizeof(ft->program), n, ", then ");
		append(ft->program, sizeof(ft->program), n, program_label(program));
		snprintf(ft->last_program, sizeof(ft->last_program), "%s", program);
		ft->failures++;
		return;
	}
	ft->load_failed = true;
	ft->failures = 1;
	ft->verifier = verifier;
	snprintf(ft->object, sizeof(ft->object), "%s", object);
	snprintf(ft->program, sizeof(ft->program), "%s", program);
	snprintf(ft->last_program, sizeof(ft->last_program), "%s", program);
	free(ft->log);
	ft->log = NULL;
	if (log && !(ft->log = strdup(log)))
		abort();
}

const struct feature *features__get(const struct features *f, enum feature_id id)
{
	return &f->v[id];
}

bool features__any_load_failed(const struct features *f)
{
	for (int i = 0; i < FEATURE_NR; i++)
		if (f->v[i].load_failed && !f->v[i].enabled)
			return true;
	return false;
}

json_t *features__json(const struct features *f)
{
	json_t *o = json_object();

	if (!o)
		return NULL;
	for (int i = 0; i < FEATURE_NR; i++) {
		const struct feature *ft = &f->v[i];

		if (json_object_set_new(o, ft->name,
					json_pack("{s:b, s:s, s:s}", "enabled", ft->enabled,
						  "variant", ft->variant, "reason", ft->reason))) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

char *features__metrics_text(const struct features *f)
{
	static const char head[] =
	    "# HELP tailprof_feature_enabled 1 when a capability runs (its preferred variant or a "
	    "fallback; GET /api/v1/status says which and why), by capability.\n"
	    "# TYPE tailprof_feature_enabled gauge\n";
	size_t cap = sizeof(head) + FEATURE_NR * 64, n;
	char *s = malloc(cap);

	if (!s)
		return NULL;
	n = snprintf(s, cap, "%s", head);
	for (int i = 0; i < FEATURE_NR; i++)
		n += snprintf(s + n, cap - n, "tailprof_feature_enabled{feature=\"%s\"} %d\n",
			      f->v[i].name, f->v[i].enabled);
	return s;
}

void features__log(const struct features *f)
{
	for (int i = 0; i < FEATURE_NR; i++) {
		const struct feature *ft = &f->v[i];

		log_msg(ft->enabled || ft->quiet ? LOG_INFO : LOG_WARN, "feature %s: %s%s%s%s%s",
			ft->name, ft->enabled ? "on" : "off", *ft->variant ? ", " : "", ft->variant,
			*ft->reason ? ": " : "", ft->reason);
	}
}

/* Whether an earlier capability recorded the same failure (one object load, two capabilities). */
static bool failure_seen(const struct features *f, int upto)
{
	const struct feature *ft = &f->v[upto];

	for (int i = 0; i < upto; i++)
		if (f->v[i].load_failed && !strcmp(f->v[i].object, ft->object) &&
		    !strcmp(f->v[i].program, ft->program) &&
		    !strcmp(f->v[i].log ? f->v[i].log : "", ft->log ? ft->log : ""))
			return true;
	return false;
}

size_t features__without_check_more(const char *reason, bool *more)
{
	size_t n = strlen(reason), m = strlen(FEATURE_CHECK_MORE);

	*more = n >= m && !strcmp(reason + n - m, FEATURE_CHECK_MORE);
	return *more ? n - m : n;
}

void features__print(const struct features *f, FILE *out)
{
	fprintf(out, "%-20s %-5s %-22s %s\n", "FEATURE", "STATE", "VARIANT", "REASON");
	for (int i = 0; i < FEATURE_NR; i++) {
		const struct feature *ft = &f->v[i];
		bool cut;
		/* this is --check: what the reason points to follows the table */
		int n = (int)features__without_check_more(ft->reason, &cut);

		fprintf(out, "%-20s %-5s %-22s %.*s%s\n", ft->name, ft->enabled ? "on" : "off",
			*ft->variant ? ft->variant : "-", n ? n : 1, n ? ft->reason : "-",
			cut ? "; more below" : "");
	}
	for (int i = 0; i < FEATURE_NR; i++) {
		const struct feature *ft = &f->v[i];
		const char *line, *end;
		bool cut;
		int n;

		if (!ft->load_failed || failure_seen(f, i))
			continue;
		/* a reason printed here (no log) needs no pointer to --check either */
		n = (int)features__without_check_more(ft->reason, &cut);
		fprintf(out, "\n%s%s%s (%s): %.*s\n", ft->object,
			ft->failures > 1 ? ", programs "
			: *ft->program	 ? ", program "
					 : "",
			ft->program, ft->name, ft->failures > 1 || ft->log ? -1 : n,
			ft->failures > 1
			    ? (ft->verifier
				   ? "the verifier rejected each; the last lines of each log:"
				   : "none loaded; the last messages of each:")
			: !ft->log     ? ft->reason
			: ft->verifier ? "the verifier rejected it; the last lines of its log:"
				       : "libbpf failed to load it; its last messages:");
		for (line = ft->log; line && *line; line = *end ? end + 1 : end) {
			end = strchrnul(line, '\n');
			fprintf(out, "  %.*s\n", (int)(end - line), line);
		}
	}
}
