/* SPDX-License-Identifier: GPL-2.0-only */
/* Readable output of the CLI: tables whose columns fit their widest cell, and JSON figures
 * (the API's open-ended objects) printed as "key value" with units humanized. */
#ifndef TAILPROF_CLI_FORMAT_H
#define TAILPROF_CLI_FORMAT_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

#define TABLE_CELL_SIZE 128
#define TABLE_MAX_COLS	16

/* A table of rows x cols cells (cols <= TABLE_MAX_COLS), each column as wide as its widest
 * cell; the caller sets rows, cols, headers and left, then calls table__alloc. */
struct table {
	size_t rows, cols;
	const char *const *headers;	/* cols of them */
	unsigned left;			/* bit c: column c is left-aligned (else right: numbers) */
	char (*cells)[TABLE_CELL_SIZE]; /* rows * cols, "" each */
};

/* Allocates t's cells, all "". Returns 0, or 1 after printing why not (rows come from the
 * server, so this is checked, not aborted). */
int table__alloc(struct table *t);

/* The cell at row, col (TABLE_CELL_SIZE bytes to write into). */
char *table__cell(struct table *t, size_t row, size_t col);

/* Prints t to stdout, each line after indent, columns two blanks apart, and frees its cells.
 * Widths count UTF-8 characters; a column whose header and cells are all "" takes no room; a row
 * of "" cells is an empty line (a gap between groups of rows); no line ends in blanks. */
void table__print(struct table *t, const char *indent);

/* Function names longer than this are cut in tables (--json has them whole). */
#define MAX_NAME_CHARS 96

/* s into buf (size bytes), cut to max bytes at a UTF-8 character's start with "..." after when
 * it is longer. Returns buf. */
char *text_cut(const char *s, size_t max, char *buf, size_t size);

/*
 * Writes o's fields to f as "key value, key value", but those named in skip (NULL-terminated;
 * NULL: none). Keys ending _unix_ns are RFC 3339 times and _ns durations (fmt_latency), the
 * suffix dropped from the key; "share", *_share and *_fraction (0..1) are percent; booleans
 * yes/no; arrays comma-separated (at most 10 items); nested objects "(key value, ...)" and,
 * past depth 3, compact JSON. depth: 0 at the top.
 */
void figures_put(FILE *f, const json_t *o, const char *const *skip, int depth);

/* Prints the object o to stdout, one line a key ("key: value") after indent blanks: objects
 * of scalars on their key's line, deeper ones indented below it, arrays of objects one item a
 * line ("- key value, ...", at most 10). Values as figures_put writes them. */
void figures_print(const json_t *o, int indent);

#endif
