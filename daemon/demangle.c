// SPDX-License-Identifier: GPL-2.0-only
/* Demangling through libiberty. */
#include "demangle.h"

#include <stddef.h>
#include <string.h>

#include <libiberty/demangle.h>

char *demangle(const char *name)
{
	/* Itanium C++ and Rust legacy names start with _Z, Rust v0 names with _R; anything else
	 * is a C name, which the demangler would only waste time on. */
	if (!name || name[0] != '_' || (name[1] != 'Z' && name[1] != 'R'))
		return NULL;
	/* The auto style tells Rust's legacy scheme from C++ by the trailing hash. */
	return cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI | DMGL_AUTO);
}
