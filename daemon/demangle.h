/* SPDX-License-Identifier: GPL-2.0-only */
/* Symbol names as people write them: C++ (Itanium ABI) and Rust (legacy and v0) demangling
 * through libiberty's demangler, the one binutils and GDB use. */
#ifndef TAILPROF_DEMANGLE_H
#define TAILPROF_DEMANGLE_H

/* The readable form of a mangled name, malloc'd (the caller frees it), or NULL when name is not
 * mangled (a C name) or does not demangle. C++ names keep their parameter list
 * ("(anonymous namespace)::f(int)", "ns::Box<long>::churn(long)"); Rust names lose the hash
 * ("crate::module::function"). Thread-safe: libiberty's demangler keeps no state. */
char *demangle(const char *name);

#endif
