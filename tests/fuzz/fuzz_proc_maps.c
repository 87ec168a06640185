// SPDX-License-Identifier: GPL-2.0-only
/* libFuzzer target: /proc/PID/maps text (proc_maps__parse), as the symbolizer, the unwinder,
 * Python and GC discovery read it. Checks that the mappings kept are executable ones, sorted,
 * not empty, and that lookups find them. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "proc_maps.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* the text is not NUL-terminated: a copy of exactly size bytes, so reads past it trip */
	char *text = fuzz_copy(data, size);
	struct proc_maps m;
	int n;

	n = proc_maps__parse(text, size, &m);
	FUZZ_CHECK(n >= 0);
	FUZZ_CHECK((size_t)n == m.nr);
	for (size_t i = 0; i < m.nr; i++) {
		const struct proc_mapping *p = &m.v[i];

		FUZZ_CHECK(p->start < p->end);
		FUZZ_CHECK(p->path != NULL);
		if (i)
			FUZZ_CHECK(m.v[i - 1].start <= p->start);
		/* mappings may overlap here (never in the kernel's text): a lookup finds the last
		 * one that starts at or below the address */
		FUZZ_CHECK(proc_maps__find(&m, p->start) != NULL);
		FUZZ_CHECK(proc_maps__find(&m, p->start)->start == p->start);
		proc_mapping__is_file(p);
	}
	proc_maps__clear(&m);
	FUZZ_CHECK(m.nr == 0 && m.v == NULL);
	free(text);
	return 0;
}
