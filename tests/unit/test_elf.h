/* SPDX-License-Identifier: GPL-2.0-only */
/* Symbols of fixture objects as the tests read them (libelf), independently of the code under
 * test. Include after <cmocka.h>. */
#ifndef TAILPROF_TEST_ELF_H
#define TAILPROF_TEST_ELF_H

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

/* Value and size of a symbol of the first section of type sh_type (SHT_SYMTAB: like nm;
 * SHT_DYNSYM: like nm -D). */
static inline void test_elf_symbol_in(const char *path, uint32_t sh_type, const char *name,
				      uint64_t *value, uint64_t *size)
{
	int fd = open(path, O_RDONLY);
	Elf_Scn *scn = NULL;
	bool found = false;
	Elf *elf;

	assert_true(fd >= 0);
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(elf);
	while (!found && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != sh_type)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *n;

			gelf_getsym(d, i, &sym);
			n = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (n && !strcmp(n, name) && sym.st_size) {
				*value = sym.st_value;
				*size = sym.st_size;
				found = true;
				break;
			}
		}
	}
	elf_end(elf);
	close(fd);
	if (!found)
		fail_msg("no symbol %s in %s", name, path);
}

static inline void test_elf_symbol(const char *path, const char *name, uint64_t *value,
				   uint64_t *size)
{
	test_elf_symbol_in(path, SHT_SYMTAB, name, value, size);
}

#endif
