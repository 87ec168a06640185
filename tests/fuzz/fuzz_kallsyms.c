// SPDX-License-Identifier: GPL-2.0-only
/* libFuzzer target: the kernel's symbols (kallsyms__load: /proc/kallsyms and the build ID note
 * of /sys/kernel/notes) and its BPF trampolines (kallsyms__trampolines, and both from one read:
 * kallsyms__load_with_trampolines). The input is the kallsyms text, then optionally a line "--"
 * and the notes' bytes. Checks the kernel table's invariants (each name followed by its module
 * tag), that each span's module is one of those read, that the trampolines are each non-empty
 * and at most a page, in order and disjoint, and that one read gives what the two give. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "elf_object.h"
#include "fuzz.h"
#include "fuzz_symtab.h"
#include "kallsyms.h"
#include "symbolizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *syms, *notes;
	size_t syms_len, notes_len;
	char syms_path[64], notes_path[64];
	struct object *obj;

	fuzz_split(data, size, &syms, &syms_len, &notes, &notes_len);
	fuzz_fd_path(fuzz_file(0, syms, syms_len), syms_path, sizeof(syms_path));
	fuzz_fd_path(fuzz_file(1, notes, notes_len), notes_path, sizeof(notes_path));
	struct kernel_range *r, *r1;
	int n, n1;

	obj = kallsyms__load_with_trampolines(syms_path, notes ? notes_path : NULL, &r1, &n1);
	FUZZ_CHECK(obj != NULL);
	FUZZ_CHECK(strlen(obj->build_id) < sizeof(obj->build_id));
	fuzz_check_symtab(&obj->symtab, 2); /* kernel names carry a module tag */
	for (size_t i = 0; i < obj->symtab.nr_spans; i++) {
		const char *m = object__kernel_module(obj, obj->symtab.spans[i].start);

		if (m) {
			bool known = false;

			for (size_t j = 0; j < obj->nr_modules; j++)
				known = known || m == obj->modules[j];
			FUZZ_CHECK(known);
		}
	}
	object__put(obj);

	n = kallsyms__trampolines(syms_path, &r);
	FUZZ_CHECK(n >= 0 && n <= KALLSYMS_TRAMPOLINES_MAX);
	FUZZ_CHECK(n1 == n && (!n || !memcmp(r1, r, n * sizeof(*r))));
	free(r1);
	for (int i = 0; i < n; i++) {
		FUZZ_CHECK(r[i].start && r[i].start < r[i].end && r[i].end - r[i].start <= 4096);
		FUZZ_CHECK(i == 0 || r[i - 1].end <= r[i].start);
	}
	free(r);
	return 0;
}
