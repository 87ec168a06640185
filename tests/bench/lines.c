// SPDX-License-Identifier: GPL-2.0-only
/* Benchmark of source lines: for each ELF object given (with DWARF, or a build-ID debug file
 * under /usr/lib/debug that has it), the lines of two addresses in every function (its start and
 * its middle), as a profile that touched every function would ask: the cold cost (opening the
 * DWARF and reading the CUs of those addresses), the heap libdw and the reader take meanwhile,
 * the cost from the per-object cache afterwards (another query), and what the cache holds.
 * Prints one line per object. Usage: tp_bench_lines OBJECT... */
#include <fcntl.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench_object.h"
#include "elf_object.h"
#include "source_lines.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static size_t heap_bytes(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

/* Looks up every address of addrs[0..n) through a new reader; returns seconds, *lines the
 * Line entries found, *heap the heap growth before the reader is freed. */
static double pass(struct object *obj, const uint64_t *addrs, size_t n, size_t *lines, size_t *heap)
{
	struct source_line out[SOURCE_LINES_MAX];
	size_t before = heap_bytes();
	struct line_reader *r = line_reader__new(UINT64_MAX);
	double t0 = now_s(), t;

	*lines = 0;
	for (size_t i = 0; i < n; i++)
		*lines += line_reader__lookup(r, obj, addrs[i], out, SOURCE_LINES_MAX);
	t = now_s() - t0;
	*heap = heap_bytes() - before;
	line_reader__free(r);
	return t;
}

int main(int argc, char **argv)
{
	printf("%-56s %7s %8s %9s %8s %9s %8s %8s\n", "object", "addrs", "lines", "cold ms",
	       "heap MB", "cached ms", "cache MB", "B/addr");
	for (int a = 1; a < argc; a++) {
		struct source_lines_stats before, after;
		bool with_debug;
		struct object *obj = bench_object(argv[a], &with_debug);
		size_t n = 0, lines, lines2, heap, heap2;
		double cold, warm;
		uint64_t *addrs;

		if (!obj || !obj->dwarf.paths[0]) {
			printf("%-56s %s\n", argv[a], obj ? "has no DWARF" : "cannot be read");
			object__put(obj);
			continue;
		}
		addrs = calloc(2 * obj->symtab.nr_spans + 1, sizeof(*addrs));
		for (size_t i = 0; i < obj->symtab.nr_spans; i++) {
			addrs[n++] = obj->symtab.spans[i].start;
			addrs[n++] = obj->symtab.spans[i].start + obj->symtab.spans[i].len / 2;
		}
		source_lines__set_budget(1u << 30);
		source_lines__stats(&before);
		cold = pass(obj, addrs, n, &lines, &heap);
		source_lines__stats(&after);
		warm = pass(obj, addrs, n, &lines2, &heap2);
		printf("%-56s %7zu %8zu %9.1f %8.1f %9.1f %8.2f %8.0f%s\n", argv[a], n, lines,
		       cold * 1e3, heap / 1048576.0, warm * 1e3,
		       (after.bytes - before.bytes) / 1048576.0,
		       n ? (double)(after.bytes - before.bytes) / n : 0.0,
		       strcmp(obj->dwarf.paths[0], argv[a]) ? "  (debug file)" : "");
		if (lines2 != lines)
			printf("  the cache gave %zu lines, DWARF %zu\n", lines2, lines);
		free(addrs);
		object__put(obj);
	}
	return 0;
}
