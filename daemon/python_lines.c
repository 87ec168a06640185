// SPDX-License-Identifier: GPL-2.0-only
/* The Python lines: the interned (function, file, line) table that Python frames name, and
 * CPython's location table read for the line of an instruction (python.h: python__line,
 * python__linetable_line; python_lines.h). */
#include "python_lines.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "elf_object.h"
#include "hashmap.h"
#include "python.h"

#define LINE_CHUNK	4096 /* interned lines per chunk */
#define MAX_LINE_CHUNKS 1024 /* at most 4M interned lines */

/* ---- the interned lines: append-only, readable from any thread ---- */

struct line_entry {
	char *function;
	char *file;
	uint32_t start_line;
	uint32_t line;
};

static struct line_entry *line_chunks[MAX_LINE_CHUNKS];
static uint32_t nr_lines; /* published with release stores; read with acquire loads */
static struct hashmap line_index;
static pthread_mutex_t line_lock = PTHREAD_MUTEX_INITIALIZER;

static struct line_entry *line_at(uint32_t i)
{
	return &line_chunks[i / LINE_CHUNK][i % LINE_CHUNK];
}

static bool line_eq(const void *ctx, uint32_t val)
{
	const struct line_entry *k = ctx, *e = line_at(val);

	return e->start_line == k->start_line && e->line == k->line &&
	       !strcmp(e->function, k->function) && !strcmp(e->file, k->file);
}

uint32_t python_line_intern(const char *function, const char *file, uint32_t start_line,
			    uint32_t line)
{
	struct line_entry k = {(char *)function, (char *)file, start_line, line};
	uint64_t h =
	    hashmap__combine(hashmap__combine(hashmap__hash_str(function), hashmap__hash_str(file)),
			     ((uint64_t)start_line << 32) | line);
	uint32_t i = UINT32_MAX;

	pthread_mutex_lock(&line_lock);
	if (hashmap__find(&line_index, h, line_eq, &k, &i))
		goto out;
	i = nr_lines;
	if (i / LINE_CHUNK >= MAX_LINE_CHUNKS) {
		i = UINT32_MAX;
		goto out;
	}
	if (!line_chunks[i / LINE_CHUNK])
		line_chunks[i / LINE_CHUNK] = sym_xcalloc(LINE_CHUNK, sizeof(struct line_entry));
	if (hashmap__insert(&line_index, h, i)) {
		i = UINT32_MAX;
		goto out;
	}
	*line_at(i) =
	    (struct line_entry){sym_xstrdup(function), sym_xstrdup(file), start_line, line};
	__atomic_store_n(&nr_lines, i + 1, __ATOMIC_RELEASE);
out:
	pthread_mutex_unlock(&line_lock);
	return i;
}

uint32_t python_nr_lines(void)
{
	return __atomic_load_n(&nr_lines, __ATOMIC_ACQUIRE);
}

bool python__line(uint64_t id, struct python_line *out)
{
	const struct line_entry *e;

	if (id >= __atomic_load_n(&nr_lines, __ATOMIC_ACQUIRE))
		return false;
	e = line_at(id);
	*out = (struct python_line){e->function, e->file, e->start_line, e->line};
	return true;
}

/* ---- the location table (CPython 3.11 Objects/locations.md) ---- */

/* Reads a varint of 6-bit groups, low first, 0x40 meaning "more". */
static uint32_t lt_varint(const uint8_t *t, size_t len, size_t *pos)
{
	uint32_t v = 0;
	unsigned shift = 0;

	while (*pos < len && shift < 32) {
		uint8_t b = t[(*pos)++];

		v |= (uint32_t)(b & 63) << shift;
		shift += 6;
		if (!(b & 64))
			break;
	}
	return v;
}

static int32_t lt_svarint(const uint8_t *t, size_t len, size_t *pos)
{
	uint32_t u = lt_varint(t, len, pos);

	return u & 1 ? -(int32_t)(u >> 1) : (int32_t)(u >> 1);
}

uint32_t python__linetable_line(const uint8_t *table, size_t len, int32_t first_line, int32_t units)
{
	int32_t line = first_line, addr = 0;
	size_t pos = 0;

	if (units < 0)
		return first_line > 0 ? (uint32_t)first_line : 0;
	while (pos < len) {
		uint8_t first = table[pos++];
		int code = (first >> 3) & 15, n = (first & 7) + 1;
		bool has_line = true;

		if (!(first & 0x80))
			return 0; /* lost sync: not an entry's first byte */
		switch (code) {
		case 15: /* no location */
			has_line = false;
			break;
		case 14: /* long form: line delta, end line delta, columns */
			line += lt_svarint(table, len, &pos);
			lt_varint(table, len, &pos);
			lt_varint(table, len, &pos);
			lt_varint(table, len, &pos);
			break;
		case 13: /* no columns */
			line += lt_svarint(table, len, &pos);
			break;
		case 10:
		case 11:
		case 12: /* one line form: delta code - 10, two column bytes */
			line += code - 10;
			pos += 2;
			break;
		default: /* short form, same line, one column byte */
			pos += 1;
			break;
		}
		if (units < addr + n)
			return has_line && line > 0 ? (uint32_t)line : 0;
		addr += n;
	}
	return 0;
}
