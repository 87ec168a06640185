/* SPDX-License-Identifier: GPL-2.0-only */
/* gzip (RFC 1952) in memory through zlib: one-call compression for pprof profiles and snapshots,
 * and inflation capped in what it will produce, for bytes read back from disk. */
#ifndef TAILPROF_GZIP_H
#define TAILPROF_GZIP_H

#include <stddef.h>
#include <stdint.h>

/* Compresses in[0..len) at zlib level (Z_BEST_SPEED .. Z_BEST_COMPRESSION, or
 * Z_DEFAULT_COMPRESSION) into one gzip member: *out malloc'd (the caller frees) of *out_len bytes.
 * One deflate call into a buffer of deflateBound() bytes. Returns 0, -ENOMEM (also len over
 * UINT_MAX, which one deflate call cannot take) or -EIO (zlib refused). */
int gzip__compress(const uint8_t *in, size_t len, int level, uint8_t **out, size_t *out_len);

/* Inflates the one gzip member in[0..len) into *out (malloc'd with a NUL after its *out_len bytes,
 * the caller frees; NULL on failure), never producing more than max bytes: a stream that would is
 * refused once max + 1 bytes came out, so at most max + 1 bytes are ever allocated. The gzip
 * trailer's size is only a hint for the first allocation. Returns 0, -EFBIG (more than max
 * bytes), -EBADMSG (not gzip, corrupt, a wrong CRC, cut short, or bytes after the member; why,
 * whylen bytes, says which) or -ENOMEM. */
int gzip__inflate(const uint8_t *in, size_t len, size_t max, uint8_t **out, size_t *out_len,
		  char *why, size_t whylen);

#endif
