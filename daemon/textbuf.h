/* SPDX-License-Identifier: GPL-2.0-only */
/* A growing text buffer for the Prometheus exposition and other rendered text: printf-style
 * appends that remember an allocation failure instead of reporting each one. */
#ifndef TAILPROF_TEXTBUF_H
#define TAILPROF_TEXTBUF_H

#include <stdbool.h>
#include <stddef.h>

/* Zero-initialize ({0}); text_finish hands the buffer over. */
struct text {
	char *buf; /* NUL-terminated once anything was appended */
	size_t len, cap;
	bool failed; /* an allocation failed: later appends do nothing */
};

/* Appends the formatted text. */
void text_put(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends text another module rendered (malloc'd; NULL means it ran out of memory) and frees
 * it. */
void text_put_owned(struct text *t, char *text);
/* The "# HELP" and "# TYPE" lines of a Prometheus metric (text format 0.0.4). */
void text_metric(struct text *t, const char *name, const char *type, const char *help);
/* The text (malloc'd, "" when nothing was appended), or NULL after a failed allocation (then
 * freed). */
char *text_finish(struct text *t);

#endif
