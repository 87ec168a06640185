// SPDX-License-Identifier: GPL-2.0-only
/* Readable output of the CLI: tables whose columns fit their widest cell, and the API's
 * open-ended JSON objects (evidence, a cause's figures) as "key value" with units humanized. */
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "format.h"
#include "timeparse.h"

/* Items of an array printed at most (--json has them all). */
#define MAX_ARRAY_ITEMS 10
/* How deep objects are unfolded before they are printed as JSON. */
#define MAX_FIGURE_DEPTH 3

/* ---- tables ---- */

int table__alloc(struct table *t)
{
	if (t->cols > TABLE_MAX_COLS)
		abort(); /* a table of ours, not an input */
	t->cells = calloc(t->rows ? t->rows * t->cols : 1, sizeof(*t->cells));
	if (!t->cells) {
		p_err("cannot allocate a table of %zu rows: out of memory", t->rows);
		return 1;
	}
	return 0;
}

/* The columns s takes on a terminal: its UTF-8 characters (± is two bytes, one column). */
static size_t display_width(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

char *table__cell(struct table *t, size_t row, size_t col)
{
	return t->cells[row * t->cols + col];
}

void table__print(struct table *t, const char *indent)
{
	size_t width[TABLE_MAX_COLS] = {}, last = 0;

	for (size_t c = 0; c < t->cols; c++) {
		width[c] = display_width(t->headers[c]);
		for (size_t r = 0; r < t->rows; r++)
			if (display_width(table__cell(t, r, c)) > width[c])
				width[c] = display_width(table__cell(t, r, c));
	}
	for (size_t c = 0; c < t->cols; c++)
		if (width[c])
			last = c;
	for (size_t r = 0; r <= t->rows; r++) {
		bool blank = r > 0;

		for (size_t c = 0; blank && c < t->cols; c++)
			blank = !*table__cell(t, r - 1, c);
		if (blank) {
			putchar('\n');
			continue;
		}
		fputs(indent, stdout);
		for (size_t c = 0, sep = 0; c < t->cols; c++) {
			const char *s = r ? table__cell(t, r - 1, c) : t->headers[c];
			bool left = t->left & (1u << c);
			int pad = (int)(width[c] - display_width(s));

			if (!width[c])
				continue;
			/* no trailing blanks after a last, left-aligned column */
			if (c == last && left)
				pad = 0;
			printf("%s%*s%s%*s", sep ? "  " : "", left ? 0 : pad, "", s, left ? pad : 0,
			       "");
			sep = 1;
		}
		putchar('\n');
	}
	free(t->cells);
	t->cells = NULL;
}

char *text_cut(const char *s, size_t max, char *buf, size_t size)
{
	size_t n = strlen(s);

	if (n <= max) {
		snprintf(buf, size, "%s", s);
		return buf;
	}
	n = max;
	while (n && ((unsigned char)s[n] & 0xc0) == 0x80)
		n--;
	snprintf(buf, size, "%.*s...", (int)n, s);
	return buf;
}

/* ---- JSON values, readably ---- */

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

/* A figure's name as printed: the key without the unit its value now shows (_ns, _unix_ns). */
static void put_key(FILE *f, const char *key)
{
	size_t n = strlen(key);

	if (ends_with(key, "_unix_ns"))
		n -= strlen("_unix_ns");
	else if (ends_with(key, "_ns"))
		n -= strlen("_ns");
	fprintf(f, "%.*s", (int)n, key);
}

/*
 * Writes v, the value of key, readably: integers in keys ending _unix_ns as RFC 3339 times, in
 * keys ending _ns as durations (fmt_latency); "share", *_share and *_fraction (0..1) as percent;
 * booleans as yes/no; arrays comma-separated (at most MAX_ARRAY_ITEMS); objects as "(key value,
 * ...)"; past MAX_FIGURE_DEPTH as compact JSON.
 */
static void put_value(FILE *f, const char *key, const json_t *v, int depth)
{
	char b[40];

	if (json_is_integer(v) && ends_with(key, "_unix_ns")) {
		fputs(tp_format_rfc3339(json_integer_value(v), b, sizeof(b)), f);
	} else if (json_is_number(v) && ends_with(key, "_ns")) {
		fputs(fmt_latency((long long)json_number_value(v), b, sizeof(b)), f);
	} else if (json_is_number(v) && (!strcmp(key, "share") || ends_with(key, "_share") ||
					 ends_with(key, "_fraction"))) {
		fprintf(f, "%.0f%%", json_number_value(v) * 100);
	} else if (json_is_integer(v)) {
		fprintf(f, "%lld", (long long)json_integer_value(v));
	} else if (json_is_real(v)) {
		fprintf(f, "%.4g", json_real_value(v));
	} else if (json_is_string(v)) {
		fputs(*json_string_value(v) ? json_string_value(v) : "\"\"", f);
	} else if (json_is_boolean(v)) {
		fputs(json_is_true(v) ? "yes" : "no", f);
	} else if (depth >= MAX_FIGURE_DEPTH) {
		char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);

		fputs(s ? s : "-", f);
		free(s);
	} else if (json_is_array(v)) {
		size_t i, n = json_array_size(v);
		const json_t *x;

		if (!n)
			fputs("none", f);
		json_array_foreach(v, i, x)
		{
			if (i == MAX_ARRAY_ITEMS) {
				fprintf(f, ", and %zu more", n - i);
				break;
			}
			if (i)
				fputs(", ", f);
			put_value(f, key, x, depth + 1);
		}
	} else if (json_is_object(v)) {
		fputc('(', f);
		figures_put(f, v, NULL, depth + 1);
		fputc(')', f);
	} else {
		fputc('-', f);
	}
}

void figures_put(FILE *f, const json_t *o, const char *const *skip, int depth)
{
	const char *key;
	json_t *v;
	bool first = true;

	json_object_foreach((json_t *)o, key, v)
	{
		bool skipped = false;

		for (const char *const *s = skip; s && *s; s++)
			skipped |= !strcmp(*s, key);
		if (skipped)
			continue;
		fputs(first ? "" : ", ", f);
		put_key(f, key);
		fputc(' ', f);
		put_value(f, key, v, depth);
		first = false;
	}
}

/* Whether v is a scalar or an array of scalars: one that fits after "key: " on its line. */
static bool is_flat(const json_t *v)
{
	size_t i;
	const json_t *x;

	if (json_is_object(v))
		return false;
	json_array_foreach(v, i, x) if (json_is_object(x) || json_is_array(x)) return false;
	return true;
}

void figures_print(const json_t *o, int indent)
{
	const char *key;
	json_t *v;

	json_object_foreach((json_t *)o, key, v)
	{
		printf("%*s%s:", indent, "", key);
		if (is_flat(v)) {
			putchar(' ');
			put_value(stdout, key, v, 0);
			putchar('\n');
		} else if (json_is_object(v)) {
			bool flat = true;
			const char *k;
			json_t *x;

			json_object_foreach(v, k, x) flat &= is_flat(x);
			if (flat && json_object_size(v)) {
				putchar(' ');
				figures_put(stdout, v, NULL, 1);
				putchar('\n');
			} else {
				putchar('\n');
				figures_print(v, indent + 2);
			}
		} else {
			size_t i, n = json_array_size(v);
			json_t *x;

			putchar('\n');
			json_array_foreach(v, i, x)
			{
				if (i == MAX_ARRAY_ITEMS) {
					printf("%*s... and %zu more (--json has them all)\n",
					       indent + 2, "", n - i);
					break;
				}
				printf("%*s- ", indent + 2, "");
				if (json_is_object(x))
					figures_put(stdout, x, NULL, 1);
				else
					put_value(stdout, key, x, 1);
				putchar('\n');
			}
		}
	}
}
