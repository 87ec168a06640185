// SPDX-License-Identifier: GPL-2.0-only
/* Demangling through libiberty's callback demanglers, bounded in output and so in time. */
#include "demangle.h"

#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include <libiberty/demangle.h>

struct out {
	char buf[DEMANGLE_MAX_BYTES + 1];
	size_t len;
	bool full;
	jmp_buf stop;
};

/* Appends a piece of the demangled name; past DEMANGLE_MAX_BYTES it ends the demangling. The
 * callback demanglers allocate nothing on the heap (their state lives on the stack), so jumping
 * out of them leaks nothing: that bounds the time a name that demangles into megabytes (nested
 * template substitutions) can take. */
static void append(const char *s, size_t n, void *opaque)
{
	struct out *o = opaque;
	size_t room = DEMANGLE_MAX_BYTES - o->len;

	if (n > room) {
		memcpy(o->buf + o->len, s, room);
		o->len = DEMANGLE_MAX_BYTES;
		o->full = true;
		longjmp(o->stop, 1);
	}
	memcpy(o->buf + o->len, s, n);
	o->len += n;
}

char *demangle(const char *name)
{
	struct out *o;
	char *r = NULL;
	int ok;

	/* Itanium C++ and Rust legacy names start with _Z, Rust v0 names with _R; anything else
	 * is a C name, which the demangler would only waste time on. */
	if (!name || name[0] != '_' || (name[1] != 'Z' && name[1] != 'R'))
		return NULL;
	o = malloc(sizeof(*o));
	if (!o)
		return NULL;
	o->len = 0;
	o->full = false;
	if (setjmp(o->stop)) {
		ok = o->full;
	} else {
		/* Rust first: its legacy names are also valid Itanium names, with the hash */
		ok = rust_demangle_callback(name, DMGL_PARAMS | DMGL_ANSI, append, o);
		if (!ok) {
			o->len = 0;
			ok = cplus_demangle_v3_callback(name, DMGL_PARAMS | DMGL_ANSI, append, o);
		}
	}
	if (ok && o->len) {
		if (o->full)
			memcpy(o->buf + DEMANGLE_MAX_BYTES - 3, "...", 3);
		o->buf[o->len] = 0;
		r = strdup(o->buf);
	}
	free(o);
	return r;
}
