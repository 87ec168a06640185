/* SPDX-License-Identifier: GPL-2.0-only */
/* GC discovery: which mapped objects of a process can hold a garbage-collected runtime, and
 * what an ELF object is (HotSpot's libjvm.so, a CPython interpreter or libpython, a Go program),
 * whether tailprofd can probe it, and with which probes. Pure file reading: no BPF, no /proc. */
#ifndef TAILPROF_GC_DISCOVERY_H
#define TAILPROF_GC_DISCOVERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tailprof.h"

/* Go runtime functions that the Go probes need (entry uprobes only). */
#define GC_GO_RESET	  "runtime.gcResetMarkState"
#define GC_GO_STOP_WORLD  "runtime.stopTheWorldWithSema"
#define GC_GO_MARK_TERM	  "runtime.gcMarkTermination"
#define GC_GO_START_WORLD "runtime.startTheWorldWithSema"
/* CPython's collector, for a CPython without USDT probes: an entry uprobe and a uretprobe. */
#define GC_PY_COLLECT  "gc_collect_main"
#define GC_REASON_LEN  256
#define GC_VERSION_LEN 32

/* How an object's collector is probed. */
enum gc_probe_method {
	GC_METHOD_NONE = 0, /* not at all (no runtime, or unsupported) */
	GC_METHOD_USDT,	    /* its USDT probes (HotSpot, CPython built with --with-dtrace) */
	GC_METHOD_UPROBE,   /* uprobes on functions of its symbol table (Go, other CPythons) */
};

struct gc_object_info {
	enum tp_gc_runtime runtime;   /* 0: not a runtime tailprofd knows */
	bool supported;		      /* the probes it needs are there */
	bool safepoints;	      /* JVM: hs_private:safepoint__begin/end are there too */
	enum gc_probe_method method;  /* supported: how; else GC_METHOD_NONE */
	uint64_t collect_offset;      /* CPython by uprobe: file offset of GC_PY_COLLECT */
	char version[GC_VERSION_LEN]; /* Go: the toolchain ("go1.19.8") from .go.buildinfo;
				       * CPython: "3.11" from the file name; else "" */
	char reason[GC_REASON_LEN];   /* !supported: why, for people */
};

/* Whether the mapping of path is worth classifying: the process's executable (CPython, Go), or
 * a library named libjvm.so or libpython3*.so*. */
bool gc_discovery__candidate(const char *path, bool is_exe);

/* Classifies the ELF object at path (name is the file name to judge by, NULL: path's own; it
 * differs when path is a /proc/PID/root/... alias). Reads the section headers, the
 * .note.stapsdt notes, .go.buildinfo, and for Go and for a CPython without the notes .symtab.
 * A CPython is probed by USDT when it has python:gc__start/gc__done; otherwise by uprobes on
 * GC_PY_COLLECT when its symbols define that function uncloned (a .cold part or an LTO-private
 * rename is the same function; a .constprop/.isra/.part clone may take other arguments: then
 * unsupported) and the file name says 3.11, the version whose arguments are known. Returns 0
 * with *out filled (runtime 0 for any other object), or -errno when the file cannot be opened
 * or is not ELF. */
int gc_discovery__classify(const char *path, const char *name, struct gc_object_info *out);

/* The file offset of function name in the ELF object at path (.dynsym, then .symtab), for an
 * uprobe. Symbol versions are not told apart: versions of one name that share an address (glibc's
 * dlopen@GLIBC_2.2.5 and dlopen@@GLIBC_2.34) are one function; the default version wins when they
 * differ. Returns 0 with *offset set, -ENOENT, or -errno when the file cannot be read. */
int gc_discovery__func_offset(const char *path, const char *name, uint64_t *offset);

/* Name of a runtime for JSON and labels: "jvm", "python", "go"; "unknown" otherwise. */
const char *gc_runtime_name(unsigned runtime);
/* Name of a kind: "pause", "collection", "safepoint"; "unknown" otherwise. */
const char *gc_kind_name(unsigned kind);
/* Name of a method (enum gc_probe_method): "usdt", "uprobe"; "none" otherwise. */
const char *gc_method_name(unsigned method);

#endif
