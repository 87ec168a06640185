/* SPDX-License-Identifier: GPL-2.0-only */
/* calloc for fixed-size allocations, which abort on failure (STYLE.md): header-only. */
#ifndef TAILPROF_XALLOC_H
#define TAILPROF_XALLOC_H

#include <stdlib.h>

static inline void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);

	if (!p)
		abort(); /* fixed-size allocations: abort on failure (STYLE.md) */
	return p;
}

#endif
