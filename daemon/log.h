/* SPDX-License-Identifier: GPL-2.0-only */
/* Logging to stderr: one line per message, lowercase, naming the object (see STYLE.md). */
#ifndef TAILPROF_LOG_H
#define TAILPROF_LOG_H

#include <stdbool.h>

enum log_level { LOG_ERROR, LOG_WARN, LOG_INFO, LOG_DEBUG };

/* Messages above this level are dropped; default LOG_INFO, LOG_DEBUG with -v. */
void log_set_level(enum log_level level);
enum log_level log_get_level(void);
/* Prefix of every line, e.g. "tailprofd" (default "tailprof"). */
void log_set_prefix(const char *prefix);
void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define pr_err(...)   log_msg(LOG_ERROR, __VA_ARGS__)
#define pr_warn(...)  log_msg(LOG_WARN, __VA_ARGS__)
#define pr_info(...)  log_msg(LOG_INFO, __VA_ARGS__)
#define pr_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

#endif
