/* SPDX-License-Identifier: GPL-2.0-only */
/* Growing malloc'd arrays: header-only. */
#ifndef TAILPROF_ARRAY_H
#define TAILPROF_ARRAY_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

/* Makes room for need elements of elem bytes in *arr, whose capacity is *cap elements: doubling
 * it (from 16). Returns 0, or -ENOMEM with *arr and *cap unchanged. */
static inline int array__grow(void **arr, size_t *cap, size_t need, size_t elem)
{
	size_t n = *cap ? *cap : 16;
	void *p;

	if (need <= *cap)
		return 0;
	while (n < need) {
		if (n > SIZE_MAX / 2)
			return -ENOMEM;
		n *= 2;
	}
	if (n > SIZE_MAX / elem)
		return -ENOMEM;
	p = realloc(*arr, n * elem);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = n;
	return 0;
}

/* array__grow() for an array variable (arr) and its capacity variable (cap). */
#define ARRAY_GROW(arr, cap, need) array__grow((void **)&(arr), &(cap), (need), sizeof(*(arr)))

#endif
