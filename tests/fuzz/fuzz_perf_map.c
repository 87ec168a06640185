// SPDX-License-Identifier: GPL-2.0-only
/* libFuzzer target: JIT perf maps (/tmp/perf-PID.map, perf_map__parse), which any process that
 * is profiled writes: later lines win where entries overlap, and the symbol table built must
 * hold the symbolizer's invariants. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "fuzz_symtab.h"
#include "perf_map.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_copy(data, size);
	struct symtab t;
	size_t skipped = 0;
	int n;

	n = perf_map__parse(text, size, &t, &skipped);
	FUZZ_CHECK(n >= 0 || n == -ENOMEM);
	if (n >= 0) {
		fuzz_check_symtab(&t, 0);
		symtab__clear(&t);
	}
	free(text);
	return 0;
}
