/* SPDX-License-Identifier: GPL-2.0-only */
/* Internal to the symbolizer: JIT symbol maps in perf's /tmp/perf-PID.map format, and opening
 * them safely from a root daemon. */
#ifndef TAILPROF_PERF_MAP_H
#define TAILPROF_PERF_MAP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "elf_object.h"

/* Largest perf map read, in bytes: Node with --perf-basic-prof writes a few MB an hour. */
#define PERF_MAP_MAX_BYTES (64u << 20)
/* Entries kept from one map: its last lines (about 10 MB of table at most). */
#define PERF_MAP_MAX_ENTRIES (256u << 10)

/* Parses len bytes of perf map text into t. Each line is "START SIZE NAME" with START and SIZE in
 * hex (optionally 0x-prefixed) and NAME the rest of the line (spaces allowed), as perf's
 * tools/perf/Documentation/jit-interface.txt defines it. Where entries overlap, the later line
 * wins: a JIT that reuses code memory appends the new owner. Only the last PERF_MAP_MAX_ENTRIES
 * lines are read. Malformed lines, entries of size 0 and lines before the last
 * PERF_MAP_MAX_ENTRIES are skipped (counted in *skipped, may be NULL). Returns the number of
 * entries kept, or -ENOMEM (t empty). */
int perf_map__parse(const char *text, size_t len, struct symtab *t, size_t *skipped);

/* Opens root/tmp/perf-NSPID.map for reading, where root is a process's /proc/PID/root, resolving
 * the path inside that root without following any symbolic link (openat2 RESOLVE_IN_ROOT |
 * RESOLVE_NO_SYMLINKS; O_NOFOLLOW on kernels without openat2), so a process cannot make a root
 * daemon read another file. The file must be a regular file owned by uid_a or uid_b (the
 * process's real and effective uid) and at most PERF_MAP_MAX_BYTES. Returns an fd (st filled),
 * -ENOENT when there is no map, -EPERM for a file that fails these checks, -EFBIG, or another
 * negative errno. */
int perf_map__open(const char *root, uint32_t ns_pid, uint32_t uid_a, uint32_t uid_b,
		   struct stat *st);

#endif
