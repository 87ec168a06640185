/* SPDX-License-Identifier: GPL-2.0-only */
/* Reading CPython objects out of a live process's memory (process_vm_readv): bytes, compact str
 * objects as UTF-8, the fields of a code object. Each read may fail (the process is gone, the
 * address is stale): the callers treat that as "unread", never as fatal. */
#ifndef TAILPROF_PYTHON_MEM_H
#define TAILPROF_PYTHON_MEM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "python_versions.h"

/* Reads len bytes at addr of process pid into buf; returns the bytes read (may be short), or
 * -1 with errno set (ESRCH: gone; EFAULT: nothing mapped there). */
ssize_t py_read_mem(uint32_t pid, uint64_t addr, void *buf, size_t len);

/* The first bytes of an object, read ahead with others in one process_vm_readv: len of them are
 * valid (0: none; the reader then reads what it needs itself). */
#define PY_PREFETCH_BYTES 512

struct py_prefetch {
	uint8_t buf[PY_PREFETCH_BYTES];
	size_t len;
};

/* Reads the first PY_PREFETCH_BYTES of the objects at addrs[0..n) (n <= 3) of process pid into
 * pre[], in one system call. An object near the end of its mapping is read in part, and those
 * after it not at all (process_vm_readv stops at the first fault): their readers read what they
 * need. */
void py_prefetch(uint32_t pid, const uint64_t *addrs, struct py_prefetch *pre, size_t n);

/* Reads the str object at addr of process pid as UTF-8 into out (cap bytes, NUL-terminated, cut
 * at a character boundary; lone surrogates and code points past U+10FFFF become U+FFFD), from
 * pre (its first bytes, read ahead) where they hold it. Compact strings only (every code
 * object's strings are). Returns 0, or -1: unreadable or not a compact str. */
int py_read_str(uint32_t pid, const struct py_user_offsets *u, uint64_t addr,
		const struct py_prefetch *pre, char *out, size_t cap);

/* The fields of a code object that identify it and name it: firstlineno, the qualname pointer,
 * and the others, from one read. */
struct py_code_fields {
	uint64_t type; /* ob_type */
	int32_t firstlineno, firsttraceable;
	uint64_t filename, qualname, linetable;
};

/* Reads the fields of the code object at addr of process pid (offsets u) in one read. Returns 0,
 * or -1 when they cannot be read. */
int py_read_code_fields(uint32_t pid, const struct py_user_offsets *u, uint64_t addr,
			struct py_code_fields *cf);

#endif
