/* SPDX-License-Identifier: GPL-2.0-only */
/* Reading one ELF object as the symbolizer does, for the benchmarks (symbolize.c, lines.c). */
#ifndef TAILPROF_BENCH_OBJECT_H
#define TAILPROF_BENCH_OBJECT_H

#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf_object.h"

/* A new object for the ELF file at path with its symbols, or NULL. Its build-ID debug file under
 * /usr/lib/debug (when there is one) gives the symbols of an object without .symtab
 * (*with_debug) and the DWARF of one without: the object's DWARF location is set to the file
 * that has it, if either does. */
static inline struct object *bench_object(const char *path, bool *with_debug)
{
	struct elf_file ef, dbg = {};
	struct elf_file *extra[1] = {};
	char dpath[512] = "";
	struct object *obj;
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC), dfd = -1;
	const char *dwarf = NULL;

	if (fd < 0 || elf_file__open(&ef, fd)) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	if ((!ef.has_symtab || !ef.has_dwarf) && ef.build_id[0]) {
		snprintf(dpath, sizeof(dpath), "/usr/lib/debug/.build-id/%.2s/%s.debug",
			 ef.build_id, ef.build_id + 2);
		dfd = open(dpath, O_RDONLY | O_CLOEXEC);
		if (dfd >= 0 && elf_file__open(&dbg, dfd))
			dbg.elf = NULL;
		if (dbg.elf && !ef.has_symtab)
			extra[0] = &dbg;
	}
	*with_debug = extra[0] != NULL;
	dwarf = ef.has_dwarf ? path : dbg.elf && dbg.has_dwarf ? dpath : NULL;
	obj = object__new(path);
	if (elf_file__load(&ef, extra, 1, obj) < 0) {
		object__put(obj);
		obj = NULL;
	} else if (dwarf && !stat(dwarf, &st)) {
		obj->dwarf.paths[0] = strdup(dwarf);
		obj->dwarf.dev = st.st_dev;
		obj->dwarf.inode = st.st_ino;
		obj->dwarf.mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
		obj->dwarf.size_bytes = st.st_size;
	}
	elf_file__close(&ef);
	elf_file__close(&dbg);
	if (dfd >= 0)
		close(dfd);
	close(fd);
	return obj;
}

#endif
