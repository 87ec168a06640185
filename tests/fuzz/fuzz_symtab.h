/* SPDX-License-Identifier: GPL-2.0-only */
/* The invariants of a symbol table (elf_object.h's struct symtab) that the symbolizer's binary
 * search relies on, checked after each parse of an ELF file, a perf map or kallsyms. */
#ifndef TAILPROF_FUZZ_SYMTAB_H
#define TAILPROF_FUZZ_SYMTAB_H

#include "elf_object.h"
#include "fuzz.h"

/* Spans sorted by start, disjoint, not empty, and each naming a NUL-terminated name inside the
 * names blob (tag_bytes after it: 2 for a kernel table); lookups find each span's start and
 * last byte. */
static inline void fuzz_check_symtab(const struct symtab *t, size_t tag_bytes)
{
	for (size_t i = 0; i < t->nr_spans; i++) {
		const struct sym_span *s = &t->spans[i];
		const char *name;

		FUZZ_CHECK(s->len > 0);
		FUZZ_CHECK(s->sym_start <= s->start);
		FUZZ_CHECK(s->start + s->len - 1 >= s->start);
		if (i)
			FUZZ_CHECK(t->spans[i - 1].start + t->spans[i - 1].len <= s->start);
		FUZZ_CHECK(s->name < t->names_bytes);
		name = t->names + s->name;
		FUZZ_CHECK(memchr(name, 0, t->names_bytes - s->name) != NULL);
		FUZZ_CHECK(s->name + strlen(name) + 1 + tag_bytes <= t->names_bytes);
		FUZZ_CHECK(strlen(name) <= SYMBOL_NAME_MAX);
		FUZZ_CHECK(symtab__find(t, s->start) == s);
		FUZZ_CHECK(symtab__find(t, s->start + s->len - 1) == s);
	}
}

#endif
