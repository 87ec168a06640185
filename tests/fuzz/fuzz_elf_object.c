// SPDX-License-Identifier: GPL-2.0-only
/* libFuzzer target: ELF objects and their debug files as the symbolizer reads them
 * (elf_object.h). The input is one ELF file: opened from a file (elf_file__open, as objects that
 * processes map are read) and from memory (elf_file__open_mem, as a vDSO is); its build ID, its
 * .gnu_debuglink, its MiniDebugInfo, and its segments and symbols loaded with the file itself as
 * its separate debug file and with its MiniDebugInfo, as symbolizer.c's open_object does. Then
 * the symbol table's invariants and a few lookups. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "elf_object.h"
#include "fuzz.h"
#include "fuzz_symtab.h"
#include "symbolizer.h"

/* Smaller than the daemon's 256 MiB: the same code path, without minutes per xz bomb. */
#define FUZZ_MINIDEBUGINFO_MAX (8u << 20)

static void check_object(const struct object *obj)
{
	char buf[64];
	uint64_t start;

	fuzz_check_symtab(&obj->symtab, 0);
	FUZZ_CHECK(strlen(obj->build_id) < sizeof(obj->build_id));
	for (size_t i = 0; i < obj->nr_fdes; i++) {
		if (i)
			FUZZ_CHECK(obj->fdes[i - 1].start <= obj->fdes[i].start);
		object__anon_name(obj, obj->fdes[i].start, buf, sizeof(buf));
	}
	for (size_t i = 0; i < obj->nr_segs; i++) {
		const struct elf_segment *g = &obj->segs[i];

		object__file_to_vaddr(obj, g->offset);
		object__file_to_vaddr(obj, g->offset + g->filesz);
		object__lookup(obj, g->vaddr, &start);
	}
	object__lookup(obj, obj->range_start, &start);
	object__file_to_vaddr(obj, 0);
}

/* The symbolizer's reading of one object: ef and its extras. */
static void load(struct elf_file *ef, struct elf_file *const *extra, size_t nr_extra)
{
	struct object *obj = object__new("/fuzz/object");
	int err = elf_file__load(ef, extra, nr_extra, obj);

	/* > 0: extras left out, the object still named */
	FUZZ_CHECK((err >= 0 && err <= (int)nr_extra) || err == -ENOEXEC || err == -ENOMEM);
	if (err < 0)
		FUZZ_CHECK(obj->symtab.nr_spans == 0);
	check_object(obj);
	object__put(obj);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct elf_file ef, mem, mini;
	struct elf_file *extra[2] = {NULL, NULL};
	char name[256];
	uint32_t crc;
	void *copy;
	int fd = fuzz_file(0, data, size), err;

	/* from a file, as objects are read */
	if (!elf_file__open(&ef, fd)) {
		FUZZ_CHECK(strlen(ef.build_id) < sizeof(ef.build_id));
		err = elf_file__debuglink(&ef, name, sizeof(name), &crc);
		if (!err)
			FUZZ_CHECK(strlen(name) < sizeof(name) && !strchr(name, '/') && name[0]);
		err = elf_file__minidebuginfo(&ef, &mini, FUZZ_MINIDEBUGINFO_MAX);
		FUZZ_CHECK(!err || !mini.elf);
		if (!err)
			extra[1] = &mini;
		load(&ef, NULL, 0);
		/* the file as its own debug file, and its MiniDebugInfo */
		extra[0] = &ef;
		load(&ef, extra, 2);
		elf_file__close(&mini);
		elf_file__close(&ef);
	}

	/* from memory, as a vDSO is: the buffer is taken over */
	copy = fuzz_copy(data, size);
	if (!elf_file__open_mem(&mem, copy, size, true)) {
		load(&mem, NULL, 0);
		elf_file__close(&mem);
	}
	return 0;
}
