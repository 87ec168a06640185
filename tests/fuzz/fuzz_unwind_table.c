// SPDX-License-Identifier: GPL-2.0-only
/* libFuzzer target: the CFI table builder (unwind_table.h). The input is one ELF file: its
 * .eh_frame (or .debug_frame) turned into unwind rows from a file, as the unwinder does for each
 * object a process maps, and its FDE extents listed, as the symbolizer does for code no symbol
 * covers. The rows must be what the BPF walker's binary search needs: sorted by pc, distinct. */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "unwind_table.h"

static void check_table(const struct unwind_table *t)
{
	uint64_t bias;

	FUZZ_CHECK(t->nr_segs <= UNWIND_MAX_SEGMENTS);
	FUZZ_CHECK(t->nr_unsupported <= t->nr_rows);
	for (size_t i = 0; i < t->nr_rows; i++) {
		if (i)
			FUZZ_CHECK(t->rows[i - 1].pc < t->rows[i].pc);
		FUZZ_CHECK(unwind_table__find(t, t->rows[i].pc) == &t->rows[i]);
	}
	for (size_t i = 0; i < t->nr_segs; i++)
		unwind_table__bias(t, 0x7f0000000000ull, t->segs[i].offset, &bias);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct unwind_table t;
	struct unwind_fde *fdes;
	size_t nr;
	void *copy;
	Elf *elf;
	int fd = fuzz_file(0, data, size), err;

	err = unwind_table__build_fd(fd, &t);
	FUZZ_CHECK(err == 0 || err == -ENOENT || err == -ENOEXEC || err == -E2BIG ||
		   err == -ENOMEM);
	if (err)
		FUZZ_CHECK(t.nr_rows == 0 && t.rows == NULL);
	check_table(&t);
	unwind_table__clear(&t);

	/* the FDE extents, from an ELF in memory (the symbolizer's elf_file) */
	copy = fuzz_copy(data, size);
	elf_version(EV_CURRENT);
	elf = elf_memory(copy, size);
	if (elf && elf_kind(elf) == ELF_K_ELF && !unwind_table__fdes(elf, &fdes, &nr)) {
		for (size_t i = 0; i < nr; i++) {
			FUZZ_CHECK(fdes[i].start < fdes[i].end);
			if (i)
				FUZZ_CHECK(fdes[i - 1].start <= fdes[i].start);
		}
		free(fdes);
	}
	if (elf)
		elf_end(elf);
	free(copy);
	return 0;
}
