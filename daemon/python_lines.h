/* SPDX-License-Identifier: GPL-2.0-only */
/* The interned Python lines (python_lines.c), as python.c adds to them: append-only, readable
 * from any thread through python__line (python.h). */
#ifndef TAILPROF_PYTHON_LINES_H
#define TAILPROF_PYTHON_LINES_H

#include <stdint.h>

/* The id of (function, file, start_line, line), interned now if new; UINT32_MAX when full. Any
 * thread. */
uint32_t python_line_intern(const char *function, const char *file, uint32_t start_line,
			    uint32_t line);
/* Lines interned so far. */
uint32_t python_nr_lines(void);

#endif
