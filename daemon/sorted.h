/* SPDX-License-Identifier: GPL-2.0-only */
/* Binary search in arrays sorted by a uint64_t key (addresses): header-only. */
#ifndef TAILPROF_SORTED_H
#define TAILPROF_SORTED_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The index of the first element of base[0..n) whose key is greater than key (n when none is):
 * elements are size bytes, sorted by the uint64_t at byte offset off of each. The element that
 * holds an address, in an array of ranges sorted by start, is the one before it (if any). */
static inline size_t sorted__upper_bound(const void *base, size_t n, size_t size, size_t off,
					 uint64_t key)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t k;

		memcpy(&k, (const char *)base + mid * size + off, sizeof(k));
		if (k <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

#endif
