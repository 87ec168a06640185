/* SPDX-License-Identifier: GPL-2.0-only */
/* Symbol names as people write them: C++ (Itanium ABI) and Rust (legacy and v0) demangling
 * through libiberty's demangler, the one binutils and GDB use. */
#ifndef TAILPROF_DEMANGLE_H
#define TAILPROF_DEMANGLE_H

#include <stdbool.h>

/* Longest demangled name kept, in bytes; longer ones are cut and end in "...". */
#define DEMANGLE_MAX_BYTES 4096

/* The readable form of a mangled name, malloc'd (the caller frees it), or NULL when name is not
 * mangled (a C name), does not demangle, or on ENOMEM. C++ names keep their parameter list
 * ("(anonymous namespace)::f(int)", "ns::Box<long>::churn(long)"); Rust names, legacy and v0,
 * lose the hash ("crate::module::function"). Bounded: the demangling stops after
 * DEMANGLE_MAX_BYTES of output. Thread-safe: libiberty's callback demanglers keep no state. */
char *demangle(const char *name);

#endif
