// SPDX-License-Identifier: GPL-2.0-only
/* libbpf's print function and the tail of what it said of failed loads. */
#include "libbpf_log.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

/* What libbpf said of the loads since libbpf_log__reset(): the last verifier log (its last
 * lines) and libbpf's last warnings, each with the program they named. Written by the print
 * function, which any thread may call (a GC attachment on the drain thread): under the lock. */
#define LOG_LINE_BYTES 512

struct log_tail {
	char program[64];
	char lines[LIBBPF_LOG_LINES][LOG_LINE_BYTES];
	unsigned nr; /* lines added; the last LIBBPF_LOG_LINES are kept */
};

static struct {
	pthread_mutex_t lock;
	struct log_tail verifier, warnings;
} load_log = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void log_tail_add(struct log_tail *t, const char *line)
{
	snprintf(t->lines[t->nr++ % LIBBPF_LOG_LINES], LOG_LINE_BYTES, "%s", line);
}

/* The program a libbpf message names ("prog 'NAME': ..."), into t->program. */
static void log_tail_program(struct log_tail *t, const char *msg)
{
	const char *p = strstr(msg, "prog '"), *end;

	if (p && (end = strchr(p + 6, '\'')))
		snprintf(t->program, sizeof(t->program), "%.*s", (int)(end - p - 6), p + 6);
}

void libbpf_log__capture(enum libbpf_print_level level, const char *text)
{
	char *msg, *line, *save = NULL;
	struct log_tail *t;
	bool in_log = false;

	if (level != LIBBPF_WARN)
		return;
	msg = strdup(text);
	if (!msg)
		return; /* a verifier log is sized by the kernel: lose it, not the daemon */
	pthread_mutex_lock(&load_log.lock);
	t = strstr(msg, "-- BEGIN PROG LOAD LOG --") ? &load_log.verifier : &load_log.warnings;
	if (t == &load_log.verifier) {
		t->nr = 0;
		t->program[0] = 0;
	}
	log_tail_program(t, msg);
	for (line = strtok_r(msg, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (t == &load_log.warnings) {
			log_tail_add(t, strncmp(line, "libbpf: ", 8) ? line : line + 8);
		} else if (strstr(line, "-- BEGIN PROG LOAD LOG --")) {
			in_log = true;
		} else if (strstr(line, "-- END PROG LOAD LOG --")) {
			in_log = false;
		} else if (in_log) {
			log_tail_add(t, line);
		}
	}
	pthread_mutex_unlock(&load_log.lock);
	free(msg);
}

/* libbpf's messages, one level quieter than ours (its warnings are our debug output). A message
 * may be a whole verifier log (megabytes, many lines): it is formatted whole and logged a line at
 * a time, so nothing is cut. What it says of a failed load is kept (libbpf_log__capture). */
static int print_libbpf(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char *buf, *line, *save = NULL;

	if (level != LIBBPF_WARN && log_get_level() < LOG_DEBUG)
		return 0;
	if (vasprintf(&buf, fmt, ap) < 0)
		return 0;
	libbpf_log__capture(level, buf);
	for (line = strtok_r(buf, "\n", &save); line && log_get_level() >= LOG_DEBUG;
	     line = strtok_r(NULL, "\n", &save))
		pr_debug(strncmp(line, "libbpf: ", 8) ? "libbpf: %s" : "%s", line);
	free(buf);
	return 0;
}

void libbpf_log__reset(void)
{
	pthread_mutex_lock(&load_log.lock);
	load_log.verifier.nr = load_log.warnings.nr = 0;
	load_log.verifier.program[0] = load_log.warnings.program[0] = 0;
	pthread_mutex_unlock(&load_log.lock);
}

/* Lines of a verifier log that say how much it did, not what went wrong, or that wrap the line
 * before ("kfunc X failed callback verification" after the callback's own reason). */
static bool log_stat_line(const char *line)
{
	return !*line || !strncmp(line, "processed ", 10) ||
	       !strncmp(line, "verification time", 17) || !strncmp(line, "stack depth", 11) ||
	       strstr(line, " failed callback verification");
}

/* libbpf's own closing lines of a failed load, which name no cause. */
static bool log_generic_line(const char *line)
{
	return strstr(line, "failed to load object") ||
	       strstr(line, "failed to load BPF skeleton") || strstr(line, ": failed to load: ");
}

/* What to do about a load that failed with err for a reason of this machine's, not the
 * program's; "" when there is nothing to say. */
static const char *load_fix(int err)
{
	switch (-err) {
	case EMFILE:
	case ENFILE:
		return "; raise the open-file limit (ulimit -n, LimitNOFILE= in a unit)";
	case ENOMEM:
		return "; the kernel (or the cgroup) has no memory for the BPF maps: give a "
		       "smaller "
		       "--unwind-memory or --ringbuf-size, or raise the memory limit";
	case EPERM:
		return "; run tailprofd as root (or with CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE and "
		       "CAP_DAC_READ_SEARCH)";
	}
	return "";
}

void libbpf_log__load_failed(struct features *f, enum feature_id id, const char *variant,
			     const char *object, int err)
{
	struct log_tail *t;
	const char *cause = NULL;
	char *text;
	size_t len = 0, n;
	FILE *m;

	pthread_mutex_lock(&load_log.lock);
	/* The verifier said no (EACCES, EINVAL, E2BIG, or EPERM: 6.18.44-fc-v1272's "sleepable
	 * callback in a program that is not sleepable"): its log says why. Without privilege the
	 * kernel refuses before verifying, with no log. A log with another error is of a program
	 * that verified and then could not be made (no file descriptor left, no memory): libbpf's
	 * own warnings say why. */
	t = load_log.verifier.nr &&
		    (err == -EACCES || err == -EINVAL || err == -E2BIG || err == -EPERM)
		? &load_log.verifier
		: &load_log.warnings;
	n = t->nr < LIBBPF_LOG_LINES ? t->nr : LIBBPF_LOG_LINES;
	m = open_memstream(&text, &len);
	if (!m)
		abort();
	for (size_t i = 0; i < n; i++) {
		const char *line = t->lines[(t->nr - n + i) % LIBBPF_LOG_LINES];

		fprintf(m, "%s%s", i ? "\n" : "", line);
		if (t == &load_log.verifier ? !log_stat_line(line) : !log_generic_line(line))
			cause = line;
	}
	fclose(m);
	if (t == &load_log.verifier)
		features__set(f, id, false, variant,
			      "the verifier rejected %s: %s" FEATURE_CHECK_MORE, t->program,
			      cause ? cause : "(its log says nothing more)");
	else
		features__set(f, id, false, variant,
			      "libbpf could not load %s: %s%s" FEATURE_CHECK_MORE, object,
			      cause ? cause : strerror(-err), load_fix(err));
	features__set_load_failure(f, id, object, t->program, t == &load_log.verifier,
				   n ? text : NULL);
	pthread_mutex_unlock(&load_log.lock);
	free(text);
}

void libbpf_log__install(void)
{
	libbpf_set_print(print_libbpf);
}
