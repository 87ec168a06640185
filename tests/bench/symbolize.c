// SPDX-License-Identifier: GPL-2.0-only
/* Benchmark of the symbolizer's object cache: for each ELF object given, the cold cost of reading
 * its symbols (libelf + the flattened table; with its separate debug file when one is found
 * under /usr/lib/debug/.build-id; and the FDEs its symbols leave uncovered, when it has no
 * .symtab), the memory the cached table takes (those FDEs included), and cached lookups per
 * second at random addresses of its code. Prints one line per object; medians of 5 cold loads.
 * Usage: tp_bench_symbolize OBJECT... */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_object.h"
#include "elf_object.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	printf("%-58s %8s %9s %7s %10s %9s %12s\n", "object", "MB", "functions", "FDEs", "cold ms",
	       "table MB", "lookups/s");
	for (int a = 1; a < argc; a++) {
		double cold[5], t0, per_s;
		struct object *obj = NULL;
		uint64_t start, limit, found = 0, x = 88172645463325252ull;
		bool with_debug = false;
		size_t n = 2000000, bytes;
		int fd = open(argv[a], O_RDONLY);
		off_t size = fd >= 0 ? lseek(fd, 0, SEEK_END) : 0;

		if (fd >= 0)
			close(fd);
		for (int i = 0; i < 5; i++) {
			object__put(obj);
			t0 = now_s();
			obj = bench_object(argv[a], &with_debug);
			cold[i] = now_s() - t0;
			if (!obj)
				break;
		}
		if (!obj) {
			printf("%-58s cannot read\n", argv[a]);
			continue;
		}
		qsort(cold, 5, sizeof(cold[0]), cmp_double);
		object__range(obj, &start, &limit, NULL);
		t0 = now_s();
		for (size_t i = 0; i < n && limit > start; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			found += object__lookup(obj, start + x % (limit - start), NULL) != NULL;
		}
		per_s = n / (now_s() - t0);
		bytes = obj->symtab.nr_spans * sizeof(struct sym_span) + obj->symtab.names_bytes +
			obj->nr_segs * sizeof(struct elf_segment) + sizeof(*obj) +
			obj->nr_fdes * sizeof(*obj->fdes);
		printf("%-58s %8.1f %9zu %7zu %10.1f %9.2f %12.3g%s\n", argv[a], size / 1e6,
		       obj->symtab.nr_spans, obj->nr_fdes, cold[2] * 1e3, bytes / 1e6, per_s,
		       with_debug ? "  (with debug file)" : "");
		fflush(stdout);
		(void)found;
		object__put(obj);
	}
	return 0;
}
