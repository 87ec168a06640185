// SPDX-License-Identifier: GPL-2.0-only
/* A growing text buffer. */
#include "textbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void text_put(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	while (!t->failed) {
		va_start(ap, fmt);
		n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
		va_end(ap);
		if (n >= 0 && (size_t)n < t->cap - t->len) {
			t->len += (size_t)n;
			return;
		}
		char *b = n < 0 ? NULL : realloc(t->buf, t->cap * 2 + (size_t)n + 1);

		if (!b) {
			t->failed = true;
			return;
		}
		t->buf = b;
		t->cap = t->cap * 2 + (size_t)n + 1;
	}
}

void text_put_owned(struct text *t, char *text)
{
	if (!text)
		t->failed = true;
	else
		text_put(t, "%s", text);
	free(text);
}

void text_metric(struct text *t, const char *name, const char *type, const char *help)
{
	text_put(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

char *text_finish(struct text *t)
{
	if (t->failed) {
		free(t->buf);
		return NULL;
	}
	return t->buf ? t->buf : strdup("");
}
