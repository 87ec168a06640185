// SPDX-License-Identifier: GPL-2.0-only
/* For tests/bench/unwind.py: builds the unwind table of each ELF file named and prints one line
 * per file: rows, BPF bytes, FDEs, unsupported rows, build time in ms, path (or the error).
 * Usage: tp_unwind_rows FILE... */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "unwind_table.h"

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		struct unwind_table t;
		int fd = open(argv[i], O_RDONLY | O_CLOEXEC), err;
		double t0 = now_ms();

		if (fd < 0) {
			perror(argv[i]);
			continue;
		}
		err = unwind_table__build_fd(fd, &t);
		close(fd);
		if (err) {
			printf("error %s %s\n", strerror(-err), argv[i]);
			continue;
		}
		printf("%zu %zu %zu %zu %.1f %s\n", t.nr_rows, t.nr_rows * sizeof(*t.rows),
		       t.nr_fdes, t.nr_unsupported, now_ms() - t0, argv[i]);
		unwind_table__clear(&t);
	}
	return 0;
}
