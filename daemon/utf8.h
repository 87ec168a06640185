/* SPDX-License-Identifier: GPL-2.0-only */
/* UTF-8 helpers for text cut to a byte limit (names and values echoed in messages). */
#ifndef TAILPROF_UTF8_H
#define TAILPROF_UTF8_H

#include <stddef.h>

/* How many of the len bytes at s to keep for at most max of them (len when len <= max): cut
 * before a character that byte max would split, going back at most 3 bytes to its lead byte
 * (a UTF-8 character is at most 4 bytes, RFC 3629); text that is not UTF-8 there is cut at max. */
static inline size_t utf8_cut(const char *s, size_t len, size_t max)
{
	const unsigned char *u = (const unsigned char *)s;

	if (len <= max)
		return len;
	for (size_t k = max; k > 0 && max - k < 3 && (u[k] & 0xc0) == 0x80; k--)
		if (u[k - 1] >= 0xc0)
			return k - 1;
	return max;
}

#endif
