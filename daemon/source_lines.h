/* SPDX-License-Identifier: GPL-2.0-only */
/* Source lines of user frames for profiles: for each object, the file, line and inlined
 * functions of the addresses that profiles asked about, read lazily from the object's DWARF (its
 * own file, or the separate debug file the symbolizer found with its symbols: see struct
 * dwarf_location) and cached within one memory budget shared by all objects, least recently used
 * objects' caches dropped first.
 *
 * Threading: query threads look lines up concurrently with each other and with the drain thread
 * (which frees objects). One lock guards the caches; DWARF is read outside it, by each query's
 * own reader, and what a lookup returns belongs to that reader (copied out of the cache), so a
 * cache can be dropped at any time. */
#ifndef TAILPROF_SOURCE_LINES_H
#define TAILPROF_SOURCE_LINES_H

#include <stddef.h>
#include <stdint.h>

#include "dwarf_lines.h"

struct object;

/* Most lines one address gives: its function and the functions inlined there. */
#define SOURCE_LINES_MAX DWARF_LINES_MAX
/* Default budget of all the caches together. */
#define SOURCE_LINES_BUDGET_BYTES (32u << 20)

/* One function's line at an address. Strings belong to the reader that returned them. */
struct source_line {
	const char *function;	 /* readable (demangled) name; NULL when DWARF names none */
	const char *system_name; /* the mangled linkage name; NULL when it is function's own */
	const char *file;	 /* source file; NULL when unknown */
	uint32_t line;		 /* 0: unknown */
	uint32_t start_line; /* the function's first line (its declaration) in file; 0: unknown */
};

/* Default time one reader may spend reading DWARF. A profile is encoded under the windows' read
 * lock, which the drain waits for: past this, the addresses not cached yet get no lines in that
 * profile (later profiles read on where it stopped). */
#define SOURCE_LINES_READ_NS (500ull * 1000 * 1000)

/* One query's reader: the DWARF files it opened (kept open until it is freed) and the strings it
 * returned; read_ns: the time it may spend reading DWARF (0: SOURCE_LINES_READ_NS). Used by one
 * thread. Returns NULL on ENOMEM. */
struct line_reader *line_reader__new(uint64_t read_ns);

/* The source lines of address addr of obj (a frame's link-time address; a caller's: the byte
 * before its return address), innermost first as pprof's Location.line wants them: out[0] the
 * line of addr in the function inlined deepest there, out[n - 1] the line in the out-of-line
 * function that holds them all (dwarf_lines__lookup; past max, the innermost max - 1 and the
 * outermost). Strings live until
 * line_reader__free(r). Returns n; 0 when the object has no DWARF (or it cannot be read any
 * more: the file is gone or was replaced), DWARF has no line for addr, or addr is not cached and
 * r has spent its time. */
size_t line_reader__lookup(struct line_reader *r, struct object *obj, uint64_t addr,
			   struct source_line *out, size_t max);

/* Closes the reader's files and frees the strings it returned. NULL allowed. */
void line_reader__free(struct line_reader *r);

struct source_lines_stats {
	uint64_t bytes;		  /* heap bytes of the caches now */
	uint64_t objects;	  /* objects with a cache now */
	uint64_t dwarf_reads;	  /* DWARF files opened by readers */
	uint64_t dwarf_failures;  /* objects whose DWARF could not be opened (then not retried) */
	uint64_t evicted_objects; /* caches dropped for the budget */
	uint64_t deferred;	  /* lookups left without lines: their reader's time was spent */
	uint64_t budget_bytes;	  /* the budget in force */
};

/* Totals since start. Any thread. */
void source_lines__stats(struct source_lines_stats *st);

/* Sets the budget of the caches together (0: SOURCE_LINES_BUDGET_BYTES) and drops the least
 * recently used caches while they are over it. Any thread. */
void source_lines__set_budget(size_t bytes);

/* Drops obj's cache: called when the object is freed (object__put). */
void source_lines__forget(struct object *obj);

#endif
