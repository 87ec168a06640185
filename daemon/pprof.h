/* SPDX-License-Identifier: GPL-2.0-only */
/* A pure pprof encoder: samples with locations and labels in, gzip-compressed profile.proto out.
 * No I/O, no knowledge of BPF, windows or ELF. Format: github.com/google/pprof proto/profile.proto.
 *
 * The builder interns strings, mappings, functions and locations: string_table[0] is "" and every
 * string appears once; mapping, location and function ids start at 1 and are unique. */
#ifndef TAILPROF_PPROF_H
#define TAILPROF_PPROF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A binary or library. Identity is the pointer: pass the same struct for the same object. Its
 * fields are copied the first time a sample uses it, so it need only live during that call, but
 * its address must not be reused for another mapping while the builder lives. */
struct pprof_mapping {
	uint64_t start, limit, file_offset;
	const char *file;     /* may be NULL */
	const char *build_id; /* may be NULL or "" */
	bool has_functions;   /* we named its locations: pprof must not symbolize again */
};

/* A function and a line in it: one of pprof's Line entries. */
struct pprof_line {
	const char *function;	 /* must not be NULL */
	const char *system_name; /* the name as the object has it (mangled); NULL: function */
	const char *file;	 /* source file (else the object's); may be NULL */
	int64_t line;		 /* 0: unknown */
	int64_t start_line;	 /* the function's first line; 0: unknown */
};

/* One frame. Locations are interned by (mapping, address), or by (address, function) when
 * mapping is NULL; with a mapping, the first names given for an address are kept. Functions are
 * interned by (name, system name, file, start line). */
struct pprof_location {
	const struct pprof_mapping *mapping; /* may be NULL */
	uint64_t address;
	const char *function;	 /* NULL: no Line, pprof shows the address */
	const char *system_name; /* the symbol as the object names it (mangled); NULL: function */
	const char *file;	 /* source or object file of the function; may be NULL */
	int64_t line;		 /* the line of address in function; 0: unknown */
	int64_t start_line;	 /* function's first line; 0: unknown */
	/* Functions inlined at address, innermost first, each at its line there; the last was
	 * inlined into `function` (at `line`). pprof's Location.line is these, then function.
	 * Ignored without a function. */
	const struct pprof_line *inlined;
	size_t nr_inlined;
};

struct pprof_label {
	const char *key;
	const char *str; /* string labels only: pprof's -tagfocus matches them by regexp */
};

struct pprof_value_type {
	const char *type; /* e.g. "samples", "cpu" */
	const char *unit; /* e.g. "count", "nanoseconds" */
};

struct pprof_opts {
	const struct pprof_value_type *sample_types; /* copied; 1..8 entries */
	size_t nr_sample_types;
	struct pprof_value_type period_type;
	int64_t period;	 /* e.g. 10101010 ns at 99 Hz */
	int64_t time_ns; /* start, Unix ns */
	int64_t duration_ns;
	const char *const *comments; /* copied */
	size_t nr_comments;
	const char *default_sample_type; /* may be NULL */
};

/* Returns a builder or NULL (errno EINVAL for bad opts, ENOMEM). */
struct pprof_builder *pprof_builder__new(const struct pprof_opts *opts);
/* Adds one sample: locs leaf first (nr_locs may be 0), values[nr_sample_types], labels copied.
 * A sample whose values are all zero is skipped (returns 0). Returns 0 or -ENOMEM; on -ENOMEM the
 * sample is not added and the builder stays usable. */
int pprof_builder__add_sample(struct pprof_builder *b, const struct pprof_location *locs,
			      size_t nr_locs, const int64_t *values,
			      const struct pprof_label *labels, size_t nr_labels);
/* Interns mapping m now (see pprof_builder__add_sample): mapping ids follow first use, and pprof
 * takes the first mapping for the main binary ("File:" in its reports). Returns 0 or -ENOMEM. */
int pprof_builder__add_mapping(struct pprof_builder *b, const struct pprof_mapping *m);
/* Whether the builder has a location for (m, address) already (m not NULL): a sample can then
 * give that location by mapping and address alone, its names are not looked at. */
bool pprof_builder__has_location(const struct pprof_builder *b, const struct pprof_mapping *m,
				 uint64_t address);
/* Number of samples added so far and the sum of values[0] over them. */
size_t pprof_builder__nr_samples(const struct pprof_builder *b);
int64_t pprof_builder__total(const struct pprof_builder *b);
/* Encodes and gzips the profile into a malloc'd buffer (*out, *len; the caller frees *out).
 * Compression is zlib's fastest level, as Go's runtime/pprof writes. The builder stays usable.
 * Returns 0, -ENOMEM, or -EIO when compression fails. */
int pprof_builder__finish(struct pprof_builder *b, uint8_t **out, size_t *len);
void pprof_builder__free(struct pprof_builder *b);

#endif
