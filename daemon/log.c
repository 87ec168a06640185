// SPDX-License-Identifier: GPL-2.0-only
/* Logging to stderr with a level filter; safe from several threads (one write per line). */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

static enum log_level cur_level = LOG_INFO;
static const char *cur_prefix = "tailprof";

void log_set_level(enum log_level level)
{
	cur_level = level;
}

enum log_level log_get_level(void)
{
	return cur_level;
}

void log_set_prefix(const char *prefix)
{
	cur_prefix = prefix;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	static const char *const names[] = {"error", "warning", "info", "debug"};
	char line[1024];
	va_list ap;
	int n;

	if (level > cur_level)
		return;
	n = snprintf(line, sizeof(line), "%s: %s%s", cur_prefix,
		     level <= LOG_WARN ? names[level] : "", level <= LOG_WARN ? ": " : "");
	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < sizeof(line))
		n += vsnprintf(line + n, sizeof(line) - n, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(line) - 1)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	(void)!write(STDERR_FILENO, line, n);
}
