/* SPDX-License-Identifier: GPL-2.0-only */
/* A walk over the defined functions of an ELF symbol table (libelf), for the modules that look
 * functions up by name: GC discovery (gc_discovery.c), the unwind tables (unwind_table.c) and
 * the stage probes' Go test (probes.c). */
#ifndef TAILPROF_ELF_SYMBOLS_H
#define TAILPROF_ELF_SYMBOLS_H

#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stddef.h>

/* Calls fn for each defined function (STT_FUNC, a nonzero value) of the symbol table section scn
 * (SHT_SYMTAB or SHT_DYNSYM; NULL: none) until it returns true. Returns whether one did. The
 * walk is bounded by the bytes libelf holds, not by the section header's claim (a crafted
 * sh_size would otherwise make it spin). */
static inline bool elf_each_function(Elf *elf, Elf_Scn *scn,
				     bool (*fn)(const char *name, const GElf_Sym *sym, void *ctx),
				     void *ctx)
{
	Elf_Data *data = scn ? elf_getdata(scn, NULL) : NULL;
	GElf_Shdr sh;

	if (!data || !gelf_getshdr(scn, &sh) || !sh.sh_entsize)
		return false;
	for (size_t i = 0; i < data->d_size / sh.sh_entsize; i++) {
		GElf_Sym sym;
		const char *name;

		if (!gelf_getsym(data, (int)i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
		    !sym.st_value)
			continue;
		name = elf_strptr(elf, sh.sh_link, sym.st_name);
		if (name && fn(name, &sym, ctx))
			return true;
	}
	return false;
}

#endif
