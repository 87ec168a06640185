// SPDX-License-Identifier: GPL-2.0-only
/* Reading CPython objects out of a live process's memory (python_mem.h). */
#include <string.h>
#include <sys/uio.h>

#include "python_mem.h"

/* Reads len bytes at addr of process pid; returns the bytes read (may be short), or -1. */
ssize_t py_read_mem(uint32_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = {buf, len}, remote = {(void *)(uintptr_t)addr, len};

	return process_vm_readv((pid_t)pid, &local, 1, &remote, 1, 0);
}

static void put_utf8(char *out, size_t *o, size_t cap, uint32_t c)
{
	char b[4];
	size_t n;

	/* a lone surrogate (an undecodable byte of a file name, PEP 383) or past U+10FFFF: not
	 * UTF-8, U+FFFD instead */
	if ((c >= 0xd800 && c <= 0xdfff) || c > 0x10ffff)
		c = 0xfffd;
	if (c < 0x80) {
		b[0] = (char)c;
		n = 1;
	} else if (c < 0x800) {
		b[0] = (char)(0xc0 | c >> 6);
		b[1] = (char)(0x80 | (c & 63));
		n = 2;
	} else if (c < 0x10000) {
		b[0] = (char)(0xe0 | c >> 12);
		b[1] = (char)(0x80 | ((c >> 6) & 63));
		b[2] = (char)(0x80 | (c & 63));
		n = 3;
	} else {
		b[0] = (char)(0xf0 | (c >> 18 & 7));
		b[1] = (char)(0x80 | ((c >> 12) & 63));
		b[2] = (char)(0x80 | ((c >> 6) & 63));
		b[3] = (char)(0x80 | (c & 63));
		n = 4;
	}
	if (*o + n < cap) {
		memcpy(out + *o, b, n);
		*o += n;
	}
}

void py_prefetch(uint32_t pid, const uint64_t *addrs, struct py_prefetch *pre, size_t n)
{
	struct iovec local[3] = {{0}}, remote[3] = {{0}};
	ssize_t got;

	if (n > 3)
		n = 3;
	for (size_t i = 0; i < n; i++) {
		local[i] = (struct iovec){pre[i].buf, PY_PREFETCH_BYTES};
		remote[i] = (struct iovec){(void *)(uintptr_t)addrs[i], PY_PREFETCH_BYTES};
		pre[i].len = 0;
	}
	got = process_vm_readv((pid_t)pid, local, n, remote, n, 0);
	for (size_t i = 0; i < n && got > 0; i++) {
		pre[i].len = (size_t)got < PY_PREFETCH_BYTES ? (size_t)got : PY_PREFETCH_BYTES;
		got -= (ssize_t)pre[i].len;
	}
}

int py_read_str(uint32_t pid, const struct py_user_offsets *u, uint64_t addr,
		const struct py_prefetch *pre, char *out, size_t cap)
{
	uint8_t hdr[128];
	uint8_t data[4096]; /* a name of 256 bytes of 4-byte characters, with room */
	const uint8_t *src = data;
	uint64_t length;
	uint32_t state, kind;
	size_t o = 0, chars, width, base;
	ssize_t n;

	if (!addr)
		return -1;
	if (pre->len >= u->compact_size)
		memcpy(hdr, pre->buf, u->compact_size);
	else if (py_read_mem(pid, addr, hdr, u->compact_size) != u->compact_size)
		return -1;
	memcpy(&length, hdr + u->str_length, 8);
	memcpy(&state, hdr + u->str_state, 4);
	/* state bits (3.11 to 3.13, tests/tools/py_offsets.c): interned 0-1, kind 2-4, compact 5,
	 * ascii 6 */
	kind = (state >> 2) & 7;
	if (!(state & (1u << 5)) || (kind != 1 && kind != 2 && kind != 4))
		return -1;
	base = state & (1u << 6) ? u->ascii_size : u->compact_size;
	width = kind;
	chars = length < cap - 1 ? length : cap - 1;
	if (chars * width > sizeof(data))
		chars = sizeof(data) / width;
	if (base + chars * width <= pre->len) {
		src = pre->buf + base;
	} else {
		n = py_read_mem(pid, addr + base, data, chars * width);
		if (n < 0 || (size_t)n != chars * width)
			return -1;
	}
	for (size_t i = 0; i < chars; i++) {
		uint32_t c;

		if (width == 1)
			c = src[i];
		else if (width == 2)
			c = src[2 * i] | (uint32_t)src[2 * i + 1] << 8;
		else
			c = src[4 * i] | (uint32_t)src[4 * i + 1] << 8 |
			    (uint32_t)src[4 * i + 2] << 16 | (uint32_t)src[4 * i + 3] << 24;
		put_utf8(out, &o, cap, c);
	}
	out[o] = 0;
	return 0;
}

#define OB_TYPE_OFFSET 8 /* PyObject.ob_type, after ob_refcnt (every version, non-debug builds) */

/* Reads the fields of the code object at addr of process pid. Returns 0, or -1 when they cannot
 * be read. */
int py_read_code_fields(uint32_t pid, const struct py_user_offsets *u, uint64_t addr,
			struct py_code_fields *cf)
{
	/* one read covering every field: they all lie within 8 .. 192 (3.11 to 3.13) */
	const uint16_t ptrs[] = {u->co_filename, u->co_qualname, u->co_linetable};
	const uint16_t ints[] = {u->co_firstlineno, u->co_firsttraceable};
	uint16_t lo = OB_TYPE_OFFSET, hi = OB_TYPE_OFFSET + 8;
	uint8_t buf[256];

	for (size_t i = 0; i < sizeof(ptrs) / sizeof(ptrs[0]); i++) {
		if (ptrs[i] < lo)
			return -1;
		if (ptrs[i] + 8 > hi)
			hi = ptrs[i] + 8;
	}
	for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
		if (ints[i] < lo)
			return -1;
		if (ints[i] + 4 > hi)
			hi = ints[i] + 4;
	}
	if (hi - lo > (int)sizeof(buf))
		return -1;
	if (py_read_mem(pid, addr + lo, buf, hi - lo) != hi - lo)
		return -1;
	memcpy(&cf->type, buf, 8);
	memcpy(&cf->firstlineno, buf + u->co_firstlineno - lo, 4);
	memcpy(&cf->firsttraceable, buf + u->co_firsttraceable - lo, 4);
	memcpy(&cf->filename, buf + u->co_filename - lo, 8);
	memcpy(&cf->qualname, buf + u->co_qualname - lo, 8);
	memcpy(&cf->linetable, buf + u->co_linetable - lo, 8);
	return 0;
}
