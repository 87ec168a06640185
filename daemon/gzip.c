// SPDX-License-Identifier: GPL-2.0-only
/* gzip in memory through zlib: one-call compression, and inflation that never outgrows its cap. */
#include "gzip.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <zlib.h>

#define GZIP_WINDOW_BITS (15 + 16) /* zlib: a gzip wrapper, not zlib's own */

int gzip__compress(const uint8_t *in, size_t len, int level, uint8_t **out, size_t *out_len)
{
	z_stream zs = {0};
	uint8_t *buf;
	uLong bound;
	int ret;

	if (len > UINT_MAX)
		return -ENOMEM; /* one deflate call takes at most UINT_MAX bytes */
	ret = deflateInit2(&zs, level, Z_DEFLATED, GZIP_WINDOW_BITS, 8, Z_DEFAULT_STRATEGY);
	if (ret == Z_MEM_ERROR)
		return -ENOMEM;
	if (ret != Z_OK)
		return -EIO;
	bound = deflateBound(&zs, len);
	buf = bound <= UINT_MAX ? malloc(bound) : NULL;
	if (!buf) {
		deflateEnd(&zs);
		return -ENOMEM;
	}
	zs.next_in = (Bytef *)in;
	zs.avail_in = len;
	zs.next_out = buf;
	zs.avail_out = bound;
	ret = deflate(&zs, Z_FINISH);
	deflateEnd(&zs);
	if (ret != Z_STREAM_END) {
		free(buf);
		return -EIO;
	}
	*out = buf;
	*out_len = zs.total_out;
	return 0;
}

/* The first buffer: the trailer's ISIZE (the size modulo 2^32, RFC 1952) when it is within the
 * cap and within what deflate can reach from len bytes (1032:1 at most, zlib's FAQ), else a
 * guess; growth doubles from there. */
static size_t first_cap(const uint8_t *in, size_t len, size_t max)
{
	size_t hint = len >= 4 ? (size_t)in[len - 4] | (size_t)in[len - 3] << 8 |
				     (size_t)in[len - 2] << 16 | (size_t)in[len - 1] << 24
			       : 0;

	if (!hint || hint > max || hint / 1032 > len)
		hint = len < max / 4 ? 4 * len : max;
	return (hint < 4096 ? 4096 : hint) + 1;
}

int gzip__inflate(const uint8_t *in, size_t len, size_t max, uint8_t **out, size_t *out_len,
		  char *why, size_t whylen)
{
	size_t cap = first_cap(in, len, max), limit = max < SIZE_MAX - 1 ? max + 1 : max;
	z_stream zs = {0};
	uint8_t *buf = NULL;
	int ret, err = 0;

	*out = NULL;
	*out_len = 0;
	if (len > UINT_MAX) {
		snprintf(why, whylen,
			 "compressed data of %zu bytes, more than one inflate call takes", len);
		return -EBADMSG;
	}
	ret = inflateInit2(&zs, GZIP_WINDOW_BITS);
	if (ret != Z_OK)
		return ret == Z_MEM_ERROR ? -ENOMEM : -EIO;
	zs.next_in = (Bytef *)in;
	zs.avail_in = len;
	if (cap > limit)
		cap = limit;
	for (;;) {
		uint8_t *n = realloc(buf, cap + 1); /* and the NUL */
		size_t room;

		if (!n) {
			err = -ENOMEM;
			break;
		}
		buf = n;
		room = cap - zs.total_out;
		zs.next_out = buf + zs.total_out;
		zs.avail_out = room > UINT_MAX ? UINT_MAX : room;
		ret = inflate(&zs, Z_NO_FLUSH);
		if (ret == Z_STREAM_END)
			break;
		if (ret == Z_MEM_ERROR) {
			err = -ENOMEM;
			break;
		}
		if (ret != Z_OK && ret != Z_BUF_ERROR) {
			/* Z_DATA_ERROR, Z_NEED_DICT: not what gzip__compress wrote */
			snprintf(why, whylen, "corrupt gzip data (%s)",
				 zs.msg ? zs.msg : "unexpected");
			err = -EBADMSG;
			break;
		}
		if (ret == Z_BUF_ERROR && zs.avail_in == 0 && zs.avail_out > 0) {
			snprintf(why, whylen, "gzip data cut short");
			err = -EBADMSG;
			break;
		}
		if (zs.total_out >= limit) {
			snprintf(why, whylen, "inflates to more than %zu bytes", max);
			err = -EFBIG;
			break;
		}
		if (zs.total_out == cap)
			cap = cap > limit / 2 ? limit : 2 * cap;
	}
	if (!err && zs.total_out > max) {
		snprintf(why, whylen, "inflates to more than %zu bytes", max);
		err = -EFBIG;
	}
	if (!err && zs.avail_in) {
		snprintf(why, whylen, "%u bytes after the gzip data", zs.avail_in);
		err = -EBADMSG;
	}
	if (err) {
		inflateEnd(&zs);
		free(buf);
		return err;
	}
	buf[zs.total_out] = '\0';
	*out = buf;
	*out_len = zs.total_out;
	inflateEnd(&zs);
	return 0;
}
