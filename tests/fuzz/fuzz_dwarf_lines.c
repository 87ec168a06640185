// SPDX-License-Identifier: GPL-2.0-only
/* libFuzzer target: source lines from an object's or a debug file's DWARF (dwarf_lines.h), as
 * query threads read them for pprof lines and inline frames. The input is one ELF file; its
 * compilation units' ranges are indexed at open, then addresses are looked up: a spread of them
 * over the first bytes of its code, and the ends of its CUs. Checks what a lookup returns. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dwarf_lines.h"
#include "fuzz.h"

static void lookup(struct dwarf_lines *dl, uint64_t addr)
{
	struct dwarf_line out[DWARF_LINES_MAX];
	size_t n = dwarf_lines__lookup(dl, addr, out, DWARF_LINES_MAX);

	FUZZ_CHECK(n <= DWARF_LINES_MAX);
	for (size_t i = 0; i < n; i++) {
		/* the strings are the reader's: reading them must be safe */
		if (out[i].name)
			(void)strlen(out[i].name);
		if (out[i].linkage_name)
			(void)strlen(out[i].linkage_name);
		if (out[i].file)
			(void)strlen(out[i].file);
	}
	/* a caller that wants the function only */
	FUZZ_CHECK(dwarf_lines__lookup(dl, addr, out, 1) <= 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = fuzz_file(0, data, size);
	struct dwarf_lines *dl = dwarf_lines__open(fd);

	if (!dl) {
		FUZZ_CHECK(errno == ENOENT || errno == ENOEXEC || errno == EFBIG ||
			   errno == ENOMEM);
		return 0;
	}
	dwarf_lines__nr_units(dl);
	dwarf_lines__heap_bytes(dl);
	/* addresses of typical small objects (non-PIE at 0x401000, PIE at 0x1000) and ones the
	 * input picks (its last 8 bytes) */
	for (uint64_t a = 0; a < 0x3000; a += 0x1f3) {
		lookup(dl, 0x1000 + a);
		lookup(dl, 0x401000 + a);
	}
	if (size >= 8) {
		uint64_t a;

		memcpy(&a, data + size - 8, sizeof(a));
		lookup(dl, a);
		lookup(dl, a - 1);
	}
	lookup(dl, 0);
	lookup(dl, UINT64_MAX);
	dwarf_lines__close(dl);
	return 0;
}
